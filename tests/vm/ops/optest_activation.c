/* optest_activation.c -- the op-test table's rows of vm/ops/activation.c (optest.h): gelu (exact
 * and approximate), elu, hard_sigmoid, hard_swish, leaky_relu, log_sigmoid, relu6, silu,
 * softplus and swish, each at its default attributes and at others; prelu in each mode. The
 * references are Fluid's formulas in long double, where e^800 does not overflow, so they may be
 * written naively; the ops must give the same without a wider type. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* f(x) for the row's op, its FLOAT attributes read by name (they are fp32: ot_float gives the
 * value the op holds). */
static long double act(ot_ref *r, long double x) {
  const char *op = ot_op(r);
  if (!strcmp(op, "gelu")) {
    if (ot_bool(r, "approximate"))
      return 0.5L * x *
             (1 + tanhl(sqrtl(2 / 3.14159265358979323846264338327950288L) *
                        (x + 0.044715L * x * x * x)));
    return 0.5L * x * (1 + erfl(x / sqrtl(2)));
  }
  if (!strcmp(op, "elu")) return x > 0 ? x : ot_float(r, "alpha") * (expl(x) - 1);
  if (!strcmp(op, "leaky_relu")) return x > 0 ? x : ot_float(r, "alpha") * x;
  if (!strcmp(op, "relu6")) {
    long double t = ot_float(r, "threshold");
    return x < 0 ? 0 : x > t ? t : x;
  }
  if (!strcmp(op, "hard_swish")) {
    long double t = ot_float(r, "threshold"), v = x + ot_float(r, "offset");
    return x * (v < 0 ? 0 : v > t ? t : v) / ot_float(r, "scale");
  }
  if (!strcmp(op, "hard_sigmoid")) {
    long double v = ot_float(r, "slope") * x + ot_float(r, "offset");
    return v < 0 ? 0 : v > 1 ? 1 : v;
  }
  if (!strcmp(op, "silu")) return x / (1 + expl(-x));
  if (!strcmp(op, "swish")) return x / (1 + expl(-ot_float(r, "beta") * x));
  if (!strcmp(op, "softplus")) {
    long double b = ot_float(r, "beta");
    return b * x > ot_float(r, "threshold") ? x : logl(1 + expl(b * x)) / b;
  }
  if (!strcmp(op, "logsigmoid")) return logl(1 / (1 + expl(-x)));
  return NAN;
}

static void ref_act(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  double *o = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++) o[i] = (double)act(r, x->v[i]);
}

/* 24 points: on both sides of every kink the rows put there, 0.01 to 0.02 off it (0; relu6's 2
 * and 6; hard_swish's -3 and 3, and -1 and 3 with offset 1, threshold 4; softplus's threshold
 * 6 = 3 / 0.5 and 20), beyond any kink, and at +-800, where e^|x| overflows a double: there
 * log(1 + e^x), 1 / (1 + e^-x) and the like must be computed another way. */
static const double pts[] = {-800,  -40,  -7.5, -3.01, -2.99, -1.02, -0.98, -0.5,
                             -0.3,  -0.01, 0.01, 0.4,   1.3,   1.99,  2.01,  2.98,
                             3.02,  5.98,  6.02, 8.5,   19.5,  20.5,  40,    800};
#define PTS {"X", "[3, 8]", .v = pts}

/* prelu: Out = X where X > 0, else slope * X, the slope Alpha[0] (mode all), Alpha[the
 * element's channel] (channel: dim 1, the last with NHWC) or Alpha[the element's index within
 * its instance] (element). */
static void ref_prelu(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *a = ot_in(r, "Alpha");
  const char *mode = ot_str(r, "mode");
  bool nhwc = strcmp(ot_str(r, "data_format"), "NHWC") == 0;
  double *out = ot_out_like(r, "Out", x);
  int64_t c = x->nd > 1 ? x->dims[nhwc ? x->nd - 1 : 1] : 1, per = x->n / x->dims[0];
  int64_t inner = nhwc ? 1 : per / c;
  for (int64_t i = 0; i < x->n; i++) {
    int64_t k = !strcmp(mode, "channel") ? i / inner % c : !strcmp(mode, "element") ? i % per : 0;
    out[i] = x->v[i] > 0 ? x->v[i] : a->v[k] * x->v[i];
  }
}

const ot_row ot_rows_activation[] = {
    {.op = "gelu", .in = {PTS}, .ref = ref_act},
    {.op = "gelu", .what = "approximate", .attrs = "approximate=true", .in = {PTS},
     .ref = ref_act},
    {.op = "gelu", .what = "random [2, 3, 4]", .in = {{"X", "[2, 3, 4]", .lo = -4, .hi = 4}},
     .ref = ref_act},
    {.op = "elu", .in = {PTS}, .ref = ref_act},
    {.op = "elu", .what = "alpha 0.5", .attrs = "alpha=0.5", .in = {PTS}, .ref = ref_act},
    {.op = "elu", .what = "alpha 2.5", .attrs = "alpha=2.5",
     .in = {{"X", "[2, 5]", .lo = -3, .hi = 3}}, .ref = ref_act},
    /* hard_sigmoid's kinks: -2.5 and 2.5 by default, -3 and 3 at paddle.nn's slope 1/6. */
    {.op = "hard_sigmoid", .in = {PTS}, .ref = ref_act},
    {.op = "hard_sigmoid", .what = "slope 1/6", .attrs = "slope=0.1666667", .in = {PTS},
     .ref = ref_act},
    {.op = "hard_swish", .in = {PTS}, .ref = ref_act},
    {.op = "hard_swish", .what = "threshold 4 scale 5 offset 1",
     .attrs = "threshold=4 scale=5 offset=1", .in = {PTS}, .ref = ref_act},
    {.op = "leaky_relu", .in = {PTS}, .ref = ref_act},
    {.op = "leaky_relu", .what = "alpha 0.3", .attrs = "alpha=0.3", .in = {PTS}, .ref = ref_act},
    {.op = "leaky_relu", .what = "alpha -1.5", .attrs = "alpha=-1.5", .in = {PTS},
     .ref = ref_act},
    {.op = "logsigmoid", .in = {PTS}, .ref = ref_act},
    {.op = "relu6", .in = {PTS}, .ref = ref_act},
    {.op = "relu6", .what = "threshold 2", .attrs = "threshold=2", .in = {PTS}, .ref = ref_act},
    {.op = "silu", .in = {PTS}, .ref = ref_act},
    {.op = "softplus", .in = {PTS}, .ref = ref_act},
    {.op = "softplus", .what = "beta 0.5 threshold 3", .attrs = "beta=0.5 threshold=3",
     .in = {PTS}, .ref = ref_act},
    /* No threshold in reach: log(1 + e^(2 x)) / 2 at x = 800 must not overflow. */
    {.op = "softplus", .what = "beta 2 threshold 1e30", .attrs = "beta=2 threshold=1e30",
     .in = {PTS}, .ref = ref_act},
    {.op = "swish", .in = {PTS}, .ref = ref_act},
    {.op = "swish", .what = "beta 1.7", .attrs = "beta=1.7", .in = {PTS}, .ref = ref_act},
    {.op = "swish", .what = "beta -0.6", .attrs = "beta=-0.6", .in = {PTS}, .ref = ref_act},
    /* prelu, every mode. */
    {.op = "prelu", .what = "all", .in = {{"X", "[2, 3, 2]"}, {"Alpha", "[1]"}}, .ref = ref_prelu},
    {.op = "prelu", .what = "channel", .attrs = "mode=channel",
     .in = {{"X", "[2, 3, 2, 2]"}, {"Alpha", "[3]"}}, .ref = ref_prelu},
    {.op = "prelu", .what = "channel NHWC", .attrs = "mode=channel data_format=NHWC",
     .in = {{"X", "[2, 2, 2, 3]"}, {"Alpha", "[3]"}}, .ref = ref_prelu},
    {.op = "prelu", .what = "channel [N, C]", .attrs = "mode=channel",
     .in = {{"X", "[3, 4]"}, {"Alpha", "[4]"}}, .ref = ref_prelu},
    {.op = "prelu", .what = "element", .attrs = "mode=element",
     .in = {{"X", "[2, 3, 2]"}, {"Alpha", "[1, 3, 2]"}}, .ref = ref_prelu},
    {.op = "prelu", .what = "element NHWC", .attrs = "mode=element data_format=NHWC",
     .in = {{"X", "[2, 2, 3]"}, {"Alpha", "[1, 2, 3]"}}, .ref = ref_prelu},
    {0},
};
