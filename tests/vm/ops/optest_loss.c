/* optest_loss.c -- the op-test table's rows of vm/ops/loss.c (optest.h): softmax and log_softmax
 * along any axis, cross_entropy (hard int64 / int32 and soft labels, ignore_index) and
 * softmax_with_cross_entropy (hard and soft labels, ignore_index, a class axis that is not the
 * last). The references are the definitions in long double: softmax_i = e^x_i / sum_j e^x_j
 * written naively (e^+-1000 fits a long double), the losses -log of it at the label, or summed
 * against the soft label. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* x viewed as [pre, n, post] around dim `axis` (negative: from the end); returns the dim. */
static int split3(const ot_val *x, int64_t axis, int64_t *pre, int64_t *n, int64_t *post) {
  int a = (int)(axis < 0 ? axis + x->nd : axis);
  *pre = ot_numel(a, x->dims);
  *n = x->dims[a];
  *post = ot_numel(x->nd - a - 1, x->dims + a + 1);
  return a;
}

/* log(sum_j e^x_j) over x[0], x[post], ..., x[(n - 1) post] (a slice along the axis). */
static long double log_sum_exp(const double *x, int64_t n, int64_t post) {
  long double s = 0;
  for (int64_t j = 0; j < n; j++) s += expl(x[j * post]);
  return logl(s);
}

/* softmax or log_softmax of X along `axis`. */
static void ref_softmax(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  bool log = !strcmp(ot_op(r), "log_softmax");
  int64_t pre, n, post;
  split3(x, ot_int(r, "axis"), &pre, &n, &post);
  double *o = ot_out_like(r, "Out", x);
  for (int64_t p = 0; p < pre; p++)
    for (int64_t q = 0; q < post; q++) {
      int64_t at = p * n * post + q;
      long double lse = log_sum_exp(x->v + at, n, post);
      for (int64_t j = 0; j < n; j++) {
        long double l = x->v[at + j * post] - lse;
        o[at + j * post] = (double)(log ? l : expl(l));
      }
    }
}

/* cross_entropy over X's last dim: Y = -log(X[label]) (hard; 0 where the label is
 * ignore_index), or -sum_c label_c log(X_c) (soft). A log of 0 is -1e20, as in Fluid. */
static long double log_clamped(double p) { return p == 0 ? -1e20L : logl(p); }

static void ref_cross_entropy(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *l = ot_in(r, "Label");
  int64_t c = x->dims[x->nd - 1], rows = x->n / c;
  int64_t yd[OT_MAX_DIMS];
  memcpy(yd, x->dims, sizeof yd);
  yd[x->nd - 1] = 1;
  double *y = ot_out(r, "Y", x->nd, yd);
  for (int64_t i = 0; i < rows; i++) {
    const double *p = x->v + i * c;
    long double s = 0;
    if (ot_bool(r, "soft_label")) {
      for (int64_t k = 0; k < c; k++) s -= l->v[i * c + k] * log_clamped(p[k]);
    } else if (l->v[i] != (double)ot_int(r, "ignore_index")) {
      s = -log_clamped(p[(int64_t)l->v[i]]);
    }
    y[i] = (double)s;
  }
}

/* softmax_with_cross_entropy along `axis`: Softmax as softmax's, Loss (Logits' dims with 1 at
 * axis) = -log softmax at the label, 0 where it is ignore_index (hard), or
 * -sum_c label_c log softmax_c (soft; every row counts). */
static void ref_softmax_xent(ot_ref *r) {
  const ot_val *x = ot_in(r, "Logits"), *l = ot_in(r, "Label");
  bool soft = ot_bool(r, "soft_label");
  int64_t pre, n, post, ld[OT_MAX_DIMS];
  int axis = split3(x, ot_int(r, "axis"), &pre, &n, &post);
  memcpy(ld, x->dims, sizeof ld);
  ld[axis] = 1;
  double *sm = ot_out_like(r, "Softmax", x), *loss = ot_out(r, "Loss", x->nd, ld);
  for (int64_t p = 0; p < pre; p++)
    for (int64_t q = 0; q < post; q++) {
      int64_t at = p * n * post + q, row = p * post + q;
      long double lse = log_sum_exp(x->v + at, n, post), s = 0;
      for (int64_t j = 0; j < n; j++) {
        long double ls = x->v[at + j * post] - lse;
        sm[at + j * post] = (double)expl(ls);
        if (soft) s -= l->v[at + j * post] * ls;
      }
      if (!soft && l->v[row] != (double)ot_int(r, "ignore_index"))
        s = -(x->v[at + (int64_t)l->v[row] * post] - lse);
      loss[row] = (double)s;
    }
}

/* Probabilities (rows need not sum to 1 for cross_entropy), away from 0 where the log and the
 * gradient -1 / p are steep. */
#define PROB .lo = 0.05, .hi = 1
/* Soft labels: weights in [0, 1) that need not sum to 1 (the gradient must hold for any). */
#define SOFT .lo = 0, .hi = 1
/* Hard labels in [0, k). */
#define HARD(k) .type = OT_I64, .lo = 0, .hi = (k) - 1

/* Logits near +-1000, where e^x overflows a double: a stable op subtracts each row's max. */
static const double big[] = {1000, 1001, 1002, 998.5, -1000, 0, 1000, -999, 3, -2, 2.5, -1};

const ot_row ot_rows_loss[] = {
    /* softmax, log_softmax: the last axis, a middle one, the first, one from the end; 1-d. */
    {.op = "softmax", .in = {{"X", "[4, 5]", .lo = -3, .hi = 3}}, .ref = ref_softmax},
    {.op = "softmax", .what = "axis 1 of 3", .attrs = "axis=1",
     .in = {{"X", "[2, 3, 4]", .lo = -3, .hi = 3}}, .ref = ref_softmax},
    {.op = "softmax", .what = "axis 0", .attrs = "axis=0", .in = {{"X", "[3, 2, 2]"}},
     .ref = ref_softmax},
    {.op = "softmax", .what = "axis -2", .attrs = "axis=-2", .in = {{"X", "[2, 4, 3]"}},
     .ref = ref_softmax},
    {.op = "softmax", .what = "1-d", .in = {{"X", "[6]", .lo = -4, .hi = 4}}, .ref = ref_softmax},
    {.op = "softmax", .what = "logits near +-1000", .in = {{"X", "[3, 4]", .v = big}},
     .ref = ref_softmax},
    {.op = "log_softmax", .in = {{"X", "[4, 5]", .lo = -3, .hi = 3}}, .ref = ref_softmax},
    {.op = "log_softmax", .what = "axis 1 of 3", .attrs = "axis=1",
     .in = {{"X", "[2, 3, 4]", .lo = -3, .hi = 3}}, .ref = ref_softmax},
    {.op = "log_softmax", .what = "axis 0", .attrs = "axis=0", .in = {{"X", "[3, 2, 2]"}},
     .ref = ref_softmax},
    {.op = "log_softmax", .what = "logits near +-1000", .in = {{"X", "[3, 4]", .v = big}},
     .ref = ref_softmax},

    /* cross_entropy: hard labels (every class hit), a 3-d X, int32 labels, ignore_index both
     * the default (-100, not a class) and a class; soft labels. */
    {.op = "cross_entropy", .in = {{"X", "[5, 4]", PROB}, {"Label", "[5, 1]", HARD(4)}},
     .ref = ref_cross_entropy},
    {.op = "cross_entropy", .what = "3-d",
     .in = {{"X", "[2, 3, 4]", PROB}, {"Label", "[2, 3, 1]", HARD(4)}},
     .ref = ref_cross_entropy},
    {.op = "cross_entropy", .what = "int32 labels",
     .in = {{"X", "[4, 3]", PROB}, {"Label", "[4, 1]", OT_I32, 0, 2}},
     .ref = ref_cross_entropy},
    {.op = "cross_entropy", .what = "a label -100 (ignored by default)",
     .in = {{"X", "[4, 3]", PROB},
            {"Label", "[4, 1]", OT_I64, .v = (const double[]){2, -100, 0, 1}}},
     .ref = ref_cross_entropy},
    {.op = "cross_entropy", .what = "ignore_index 1, a class", .attrs = "ignore_index=1",
     .in = {{"X", "[4, 3]", PROB},
            {"Label", "[4, 1]", OT_I64, .v = (const double[]){1, 0, 1, 2}}},
     .ref = ref_cross_entropy},
    {.op = "cross_entropy", .what = "soft labels", .attrs = "soft_label=true",
     .in = {{"X", "[3, 4]", PROB}, {"Label", "[3, 4]", SOFT}}, .ref = ref_cross_entropy,
     .wrt = "X"},
    {.op = "cross_entropy", .what = "soft labels, 3-d", .attrs = "soft_label=true",
     .in = {{"X", "[2, 2, 3]", PROB}, {"Label", "[2, 2, 3]", SOFT}}, .ref = ref_cross_entropy,
     .wrt = "X"},
    /* A probability 0 at the label: -log 0 is 1e20 (Fluid's TolerableValue), no inf; a 0
     * elsewhere is not read. No gradient (-1 / 0). */
    {.op = "cross_entropy", .what = "a probability 0",
     .in = {{"X", "[2, 3]", .v = (const double[]){0, 0.5, 0.5, 0.25, 0, 0.75}},
            {"Label", "[2, 1]", OT_I64, .v = (const double[]){0, 2}}},
     .ref = ref_cross_entropy, .no_grad = true},

    /* softmax_with_cross_entropy; the gradient check weighs Loss (its gradient op reads
     * Loss@GRAD only). */
    {.op = "softmax_with_cross_entropy",
     .in = {{"Logits", "[5, 4]", .lo = -3, .hi = 3}, {"Label", "[5, 1]", HARD(4)}},
     .ref = ref_softmax_xent, .loss = "Loss"},
    {.op = "softmax_with_cross_entropy", .what = "int32 labels, numeric_stable_mode off",
     .attrs = "numeric_stable_mode=false",
     .in = {{"Logits", "[3, 5]", .lo = -3, .hi = 3}, {"Label", "[3, 1]", OT_I32, 0, 4}},
     .ref = ref_softmax_xent, .loss = "Loss"},
    {.op = "softmax_with_cross_entropy", .what = "ignore_index 0, a class",
     .attrs = "ignore_index=0",
     .in = {{"Logits", "[4, 3]"}, {"Label", "[4, 1]", OT_I64, .v = (const double[]){0, 2, 1, 0}}},
     .ref = ref_softmax_xent, .loss = "Loss"},
    {.op = "softmax_with_cross_entropy", .what = "a label -100 (ignored by default)",
     .in = {{"Logits", "[3, 3]"},
            {"Label", "[3, 1]", OT_I64, .v = (const double[]){-100, 2, 1}}},
     .ref = ref_softmax_xent, .loss = "Loss"},
    {.op = "softmax_with_cross_entropy", .what = "axis 1 of 3", .attrs = "axis=1",
     .in = {{"Logits", "[2, 4, 3]", .lo = -3, .hi = 3}, {"Label", "[2, 1, 3]", HARD(4)}},
     .ref = ref_softmax_xent, .loss = "Loss"},
    {.op = "softmax_with_cross_entropy", .what = "axis 0, ignore_index 2",
     .attrs = "axis=0 ignore_index=2",
     .in = {{"Logits", "[3, 2, 2]"},
            {"Label", "[1, 2, 2]", OT_I64, .v = (const double[]){0, 2, 1, 2}}},
     .ref = ref_softmax_xent, .loss = "Loss"},
    {.op = "softmax_with_cross_entropy", .what = "soft labels", .attrs = "soft_label=true",
     .in = {{"Logits", "[3, 4]", .lo = -3, .hi = 3}, {"Label", "[3, 4]", SOFT}},
     .ref = ref_softmax_xent, .loss = "Loss", .wrt = "Logits"},
    {.op = "softmax_with_cross_entropy", .what = "soft labels, axis 1 of 3",
     .attrs = "soft_label=true axis=1",
     .in = {{"Logits", "[2, 3, 2]", .lo = -3, .hi = 3}, {"Label", "[2, 3, 2]", SOFT}},
     .ref = ref_softmax_xent, .loss = "Loss", .wrt = "Logits"},
    {.op = "softmax_with_cross_entropy", .what = "logits near +-1000",
     .in = {{"Logits", "[3, 4]", .v = big},
            {"Label", "[3, 1]", OT_I64, .v = (const double[]){0, 3, 1}}},
     .ref = ref_softmax_xent, .loss = "Loss"},
    {0},
};
