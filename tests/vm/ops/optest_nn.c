/* optest_nn.c -- the op-test table's rows of vm/ops/nn.c (optest.h): conv2d and pool2d (NCHW:
 * strides, 2 and 4 paddings, dilations, groups, SAME and VALID; max and avg pooling, global,
 * exclusive, ceil_mode, adaptive), conv2d_transpose (output_padding, output_size, NHWC, Bias)
 * and conv2d_transpose_bias, the embedding lookups (padding_idx, repeated ids) and dropout
 * (is_test in both implementations against values, training by properties of its
 * outputs). The references are Fluid's definitions written out in double, window by window. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* Distinct values in [-1, 1), i * 37 mod 101 scaled (37 is invertible mod 101: no two agree,
 * and neighbours are far apart): max pooling's inputs, so that no window holds two values a
 * finite difference could swap. */
#define P_(i) ((double)((i) * 37 % 101) / 50.5 - 1.0)
#define P4_(i) P_(i), P_(i + 1), P_(i + 2), P_(i + 3)
#define P16_(i) P4_(i), P4_(i + 4), P4_(i + 8), P4_(i + 12)
static const double distinct[96] = {P16_(0), P16_(16), P16_(32), P16_(48), P16_(64), P16_(80)};

/* ---------------------------------------------------------------- sliding windows */

/* A window sliding over an image [h, w]: its size, strides, dilations, the paddings (top,
 * bottom, left, right) and the output size. */
typedef struct window {
  int64_t k[2], s[2], d[2], pad[4], o[2];
} window;

/* The window of conv2d (dilated) or pool2d (ceil_mode) over [h, w] from the op's strides,
 * paddings (2 entries: height and width; 4: top, bottom, left, right) and padding_algorithm:
 * VALID pads nothing; SAME pads so that out = ceil(in / stride), the odd unit at the end, and
 * undoes dilation. out = (in + pads - extent (+ stride - 1 with ceil_mode)) / stride + 1. */
static void window_of(ot_ref *r, const int64_t in[2], int64_t kh, int64_t kw, const int64_t *dil,
                      bool ceil_mode, window *g) {
  int64_t p[4];
  int np = ot_ints(r, "paddings", p, 4);
  ot_ints(r, "strides", g->s, 2);
  g->k[0] = kh;
  g->k[1] = kw;
  for (int i = 0; i < 4; i++) g->pad[i] = np == 4 ? p[i] : p[i / 2];
  const char *algo = ot_str(r, "padding_algorithm");
  for (int i = 0; i < 2; i++) {
    g->d[i] = dil ? dil[i] : 1;
    if (strcmp(algo, "VALID") == 0) g->pad[2 * i] = g->pad[2 * i + 1] = 0;
    if (strcmp(algo, "SAME") == 0) {
      int64_t out = (in[i] + g->s[i] - 1) / g->s[i], sum = (out - 1) * g->s[i] + g->k[i] - in[i];
      if (sum < 0) sum = 0;
      g->pad[2 * i] = sum / 2;
      g->pad[2 * i + 1] = sum - sum / 2;
      g->d[i] = 1;
    }
    int64_t span = in[i] + g->pad[2 * i] + g->pad[2 * i + 1] - (g->d[i] * (g->k[i] - 1) + 1);
    g->o[i] = (span + (ceil_mode ? g->s[i] - 1 : 0)) / g->s[i] + 1;
  }
}

/* conv2d (NCHW): Output [N, M, OH, OW] with Output[n, m, i, j] = the sum over the C / groups
 * channels c of m's group and the filter taps (a, b) of Filter[m, c, a, b] times Input[n, group
 * * C / groups + c, i * sh - top + a * dh, j * sw - left + b * dw], zero outside the image. */
static double *conv2d_out(ot_ref *r) {
  const ot_val *x = ot_in(r, "Input"), *f = ot_in(r, "Filter");
  int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  int64_t m = f->dims[0], cg = f->dims[1], kh = f->dims[2], kw = f->dims[3];
  int64_t mg = m / ot_int(r, "groups"), dil[2];
  ot_ints(r, "dilations", dil, 2);
  window g;
  window_of(r, (int64_t[]){h, w}, kh, kw, dil, false, &g);
  double *o = ot_out(r, "Output", 4, (int64_t[]){n, m, g.o[0], g.o[1]});
  for (int64_t b = 0; b < n; b++)
    for (int64_t oc = 0; oc < m; oc++)
      for (int64_t i = 0; i < g.o[0]; i++)
        for (int64_t j = 0; j < g.o[1]; j++) {
          double s = 0;
          for (int64_t ic = 0; ic < cg; ic++)
            for (int64_t a = 0; a < kh; a++)
              for (int64_t e = 0; e < kw; e++) {
                int64_t y = i * g.s[0] - g.pad[0] + a * g.d[0];
                int64_t xx = j * g.s[1] - g.pad[2] + e * g.d[1];
                if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
                s += f->v[((oc * cg + ic) * kh + a) * kw + e] *
                     x->v[((b * c + oc / mg * cg + ic) * h + y) * w + xx];
              }
          o[((b * m + oc) * g.o[0] + i) * g.o[1] + j] = s;
        }
  return o;
}

static void ref_conv2d(ot_ref *r) { conv2d_out(r); }

/* fused_conv2d (oneDNN's post-ops, as Paddle's fused op describes them): conv2d's output, plus
 * Bias per output channel, plus ResidualData, through fuse_activation with fuse_alpha (a) and
 * fuse_beta (b): relu max(v, 0), relu6 min(max(v, 0), b), leaky_relu v or a v below 0, swish
 * v / (1 + e^(-a v)), hard_sigmoid min(max(a v + b, 0), 1), hard_swish v min(max(a v + b, 0),
 * 1), sigmoid, tanh, gelu v Phi(v), gelu_tanh. */
static double fused_act_ref(ot_ref *r, double v) {
  const char *act = ot_str(r, "fuse_activation");
  double a = ot_float(r, "fuse_alpha"), b = ot_float(r, "fuse_beta");
  if (!strcmp(act, "relu")) v = v > 0 ? v : 0;
  else if (!strcmp(act, "relu6")) v = v < 0 ? 0 : v > b ? b : v;
  else if (!strcmp(act, "leaky_relu")) v = v > 0 ? v : a * v;
  else if (!strcmp(act, "swish")) v = v / (1 + exp(-a * v));
  else if (!strcmp(act, "hard_sigmoid")) v = fmin(fmax(a * v + b, 0), 1);
  else if (!strcmp(act, "hard_swish")) v = v * fmin(fmax(a * v + b, 0), 1);
  else if (!strcmp(act, "sigmoid")) v = 1 / (1 + exp(-v));
  else if (!strcmp(act, "tanh")) v = tanh(v);
  else if (!strcmp(act, "gelu")) v = 0.5 * v * (1 + erf(v / sqrt(2.0)));
  else if (!strcmp(act, "gelu_tanh"))
    v = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  return v;
}

static void ref_fused_conv2d(ot_ref *r) {
  double *o = conv2d_out(r);
  const ot_val *bias = ot_in(r, "Bias"), *res = ot_in(r, "ResidualData");
  const ot_val *x = ot_in(r, "Input"), *f = ot_in(r, "Filter");
  window g;
  int64_t dil[2];
  ot_ints(r, "dilations", dil, 2);
  window_of(r, (int64_t[]){x->dims[2], x->dims[3]}, f->dims[2], f->dims[3], dil, false, &g);
  int64_t m = f->dims[0], plane = g.o[0] * g.o[1], n = x->dims[0] * m * plane;
  for (int64_t i = 0; i < n; i++)
    o[i] = fused_act_ref(r, o[i] + (bias ? bias->v[i / plane % m] : 0) + (res ? res->v[i] : 0));
}

/* conv2d_transpose (Paddle's ConvTransposeInferMeta and its definition): each Input element
 * [b, ic, i, j] adds Input times Filter[ic, o, a, e] to Output[b, group * M / groups + o,
 * i * sh - top + a * dh, j * sw - left + e * dw] where that lies in the output (group = ic's).
 * The output size is (in - 1) * stride - paddings + dilation * (k - 1) + 1, then output_size
 * if given, else plus output_padding. SAME pads as conv2d's SAME over the input and undoes the
 * dilation; VALID pads nothing. NHWC: the same with the channels last. Bias adds per channel. */
static double *conv2d_transpose_out(ot_ref *r, int64_t *count) {
  const ot_val *x = ot_in(r, "Input"), *f = ot_in(r, "Filter"), *bias = ot_in(r, "Bias");
  bool nhwc = strcmp(ot_str(r, "data_format"), "NHWC") == 0;
  int64_t n = x->dims[0], c = x->dims[nhwc ? 3 : 1], h = x->dims[nhwc ? 1 : 2];
  int64_t w = x->dims[nhwc ? 2 : 3], groups = ot_int(r, "groups");
  int64_t mg = f->dims[1], m = mg * groups, cg = c / groups, kh = f->dims[2], kw = f->dims[3];
  int64_t in[2] = {h, w}, k[2] = {kh, kw}, s[2], d[2], p[4], pad[4], opad[2], osize[2], o[2];
  ot_ints(r, "strides", s, 2);
  ot_ints(r, "dilations", d, 2);
  int np = ot_ints(r, "paddings", p, 4);
  int nopad = ot_ints(r, "output_padding", opad, 2), nosize = ot_ints(r, "output_size", osize, 2);
  const char *algo = ot_str(r, "padding_algorithm");
  for (int i = 0; i < 2; i++) {
    pad[2 * i] = np == 4 ? p[2 * i] : p[i];
    pad[2 * i + 1] = np == 4 ? p[2 * i + 1] : p[i];
    if (strcmp(algo, "VALID") == 0) pad[2 * i] = pad[2 * i + 1] = 0;
    if (strcmp(algo, "SAME") == 0) {
      int64_t sum = ((in[i] + s[i] - 1) / s[i] - 1) * s[i] + k[i] - in[i];
      if (sum < 0) sum = 0;
      pad[2 * i] = sum / 2;
      pad[2 * i + 1] = sum - sum / 2;
      d[i] = 1;
    }
    o[i] = (in[i] - 1) * s[i] - pad[2 * i] - pad[2 * i + 1] + d[i] * (k[i] - 1) + 1;
    if (nosize == 2) o[i] = osize[i];
    else if (nopad == 2) o[i] += opad[i];
  }
  int64_t od[4] = {n, m, o[0], o[1]};
  if (nhwc) od[1] = o[0], od[2] = o[1], od[3] = m;
  double *y = ot_out(r, "Output", 4, od);
#define AT_(b, ch, i, j, H, W, C)                       \
  (nhwc ? (((b) * (H) + (i)) * (W) + (j)) * (C) + (ch) \
        : (((b) * (C) + (ch)) * (H) + (i)) * (W) + (j))
  for (int64_t b = 0; b < n; b++)
    for (int64_t ic = 0; ic < c; ic++)
      for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < w; j++)
          for (int64_t oc = 0; oc < mg; oc++)
            for (int64_t a = 0; a < kh; a++)
              for (int64_t e = 0; e < kw; e++) {
                int64_t yy = i * s[0] - pad[0] + a * d[0], xx = j * s[1] - pad[2] + e * d[1];
                if (yy < 0 || yy >= o[0] || xx < 0 || xx >= o[1]) continue;
                y[AT_(b, ic / cg * mg + oc, yy, xx, o[0], o[1], m)] +=
                    x->v[AT_(b, ic, i, j, h, w, c)] * f->v[((ic * mg + oc) * kh + a) * kw + e];
              }
  if (bias)
    for (int64_t b = 0; b < n; b++)
      for (int64_t ch = 0; ch < m; ch++)
        for (int64_t i = 0; i < o[0]; i++)
          for (int64_t j = 0; j < o[1]; j++) y[AT_(b, ch, i, j, o[0], o[1], m)] += bias->v[ch];
#undef AT_
  *count = n * m * o[0] * o[1];
  return y;
}

static void ref_conv2d_transpose(ot_ref *r) {
  int64_t n;
  conv2d_transpose_out(r, &n);
}

/* conv2d_transpose_bias (Paddle's fused op, as oneDNN's post-ops do it): conv2d_transpose with
 * its Bias, through fuse_activation as fused_conv2d's. */
static void ref_conv2d_transpose_bias(ot_ref *r) {
  int64_t n;
  double *y = conv2d_transpose_out(r, &n);
  for (int64_t i = 0; i < n; i++) y[i] = fused_act_ref(r, y[i]);
}

/* pool2d (NCHW), Fluid's windows: rows [i * sh - top, that + kh) clipped to the image (and
 * columns likewise); global_pooling: one window over the image; adaptive: ksize is the output
 * size and window i covers rows [floor(i H / OH), ceil((i + 1) H / OH)). Max takes the largest
 * value, avg the sum over the window's count: its in-image elements (exclusive, adaptive) or
 * kh * kw. */
static void ref_pool2d(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  int64_t h = x->dims[2], w = x->dims[3], ks[2];
  ot_ints(r, "ksize", ks, 2);
  bool global = ot_bool(r, "global_pooling"), adaptive = !global && ot_bool(r, "adaptive");
  bool is_max = strcmp(ot_str(r, "pooling_type"), "max") == 0;
  window g;
  if (global) {
    ks[0] = h;
    ks[1] = w;
  }
  window_of(r, (int64_t[]){h, w}, ks[0], ks[1], NULL, ot_bool(r, "ceil_mode"), &g);
  if (global) {
    memset(g.pad, 0, sizeof g.pad);
    g.o[0] = g.o[1] = 1;
  } else if (adaptive) {
    g.o[0] = ks[0];
    g.o[1] = ks[1];
  }
  double *o = ot_out(r, "Out", 4, (int64_t[]){x->dims[0], x->dims[1], g.o[0], g.o[1]});
  for (int64_t p = 0; p < x->dims[0] * x->dims[1]; p++)
    for (int64_t i = 0; i < g.o[0]; i++)
      for (int64_t j = 0; j < g.o[1]; j++) {
        int64_t hs, he, ws, we;
        if (adaptive) {
          hs = i * h / g.o[0], he = ((i + 1) * h + g.o[0] - 1) / g.o[0];
          ws = j * w / g.o[1], we = ((j + 1) * w + g.o[1] - 1) / g.o[1];
        } else {
          hs = i * g.s[0] - g.pad[0], ws = j * g.s[1] - g.pad[2];
          he = hs + g.k[0] < h ? hs + g.k[0] : h, we = ws + g.k[1] < w ? ws + g.k[1] : w;
          hs = hs < 0 ? 0 : hs, ws = ws < 0 ? 0 : ws;
        }
        double mx = -INFINITY, s = 0;
        for (int64_t a = hs; a < he; a++)
          for (int64_t b = ws; b < we; b++) {
            double v = x->v[(p * h + a) * w + b];
            s += v;
            mx = v > mx ? v : mx;
          }
        bool area = ot_bool(r, "exclusive") || adaptive;
        double count = area ? (double)((he - hs) * (we - ws)) : (double)(g.k[0] * g.k[1]);
        o[(p * g.o[0] + i) * g.o[1] + j] = is_max ? mx : s / count;
      }
}

/* ---------------------------------------------------------------- embeddings */

/* lookup_table, lookup_table_v2: row Ids[i] of W for each id, a zero row where the id is
 * padding_idx; Out = Ids.dims + [width], lookup_table's Ids ending in a dim of 1 that Out
 * drops. */
static void ref_lookup(ot_ref *r) {
  const ot_val *wt = ot_in(r, "W"), *ids = ot_in(r, "Ids");
  int64_t width = wt->dims[1], pad = ot_int(r, "padding_idx"), od[OT_MAX_DIMS];
  int nd = ids->nd - (strcmp(ot_op(r), "lookup_table") == 0);
  for (int d = 0; d < nd; d++) od[d] = ids->dims[d];
  od[nd] = width;
  double *o = ot_out(r, "Out", nd + 1, od);
  for (int64_t i = 0; i < ids->n; i++) {
    int64_t id = (int64_t)ids->v[i];
    for (int64_t j = 0; j < width && id != pad; j++) o[i * width + j] = wt->v[id * width + j];
  }
}

/* ---------------------------------------------------------------- dropout */

/* is_test: Out = X * (1 - dropout_prob) (downgrade_in_infer) or X (upscale_in_train). */
static void ref_dropout_test(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  bool upscale = strcmp(ot_str(r, "dropout_implementation"), "upscale_in_train") == 0;
  double keep = upscale ? 1 : 1 - ot_float(r, "dropout_prob");
  double *o = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++) o[i] = x->v[i] * keep;
}

/* Training: each element is dropped (Out 0, Mask 0) or kept (Out = X, divided by 1 - p with
 * upscale_in_train; Mask 1), and about 1 - p of them are kept: the count within 4 standard
 * deviations of the binomial's mean (a fixed seed: this does not flake). Mask (uint8) is
 * compared wherever the driver reads it back (ot_got gives NULL for a dtype it cannot read). */
static void check_dropout_train(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *out = ot_got(r, "Out"), *mask = ot_got(r, "Mask");
  double p = ot_float(r, "dropout_prob");
  double scale = strcmp(ot_str(r, "dropout_implementation"), "upscale_in_train") == 0
                     ? 1 / (1 - p) : 1;
  double tol = ot_dtype(r) == PD_FP64 ? 1e-14 : 1e-6;
  if (!out || out->n != x->n) {
    ot_fail(r, "Out is missing or not X's size");
    return;
  }
  if (mask && mask->n != x->n) {
    ot_fail(r, "Mask has %lld elements, X %lld", (long long)mask->n, (long long)x->n);
    return;
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < x->n; i++) {
    double want = x->v[i] * scale, got = out->v[i];
    bool is_kept = fabs(got - want) <= tol * fmax(1, fabs(want)) && got != 0;
    if (!is_kept && got != 0) {
      ot_fail(r, "Out[%lld] = %.10g is neither 0 nor X * %g = %.10g", (long long)i, got, scale,
              want);
      return;
    }
    if (mask && mask->v[i] != is_kept) {
      ot_fail(r, "Mask[%lld] = %g but Out[%lld] = %.10g (X %.10g)", (long long)i, mask->v[i],
              (long long)i, got, x->v[i]);
      return;
    }
    kept += is_kept;
  }
  double mean = (double)x->n * (1 - p), sd = sqrt((double)x->n * p * (1 - p));
  if (fabs((double)kept - mean) > 4 * sd)
    ot_fail(r, "%lld of %lld kept; expected about %g (sd %g)", (long long)kept, (long long)x->n,
            mean, sd);
}

/* ---------------------------------------------------------------- the rows */

/* Ids with a repeat, and with padding ids among them. */
static const double ids_repeat[] = {3, 0, 3, 4, 1};
static const double ids_padded[] = {2, 0, 1, 2, 4, 2};

/* Small images: the finite-difference check costs two runs per input element. */
const ot_row ot_rows_nn[] = {
    /* conv2d. */
    {.op = "conv2d", .what = "3x3", .in = {{"Input", "[1, 2, 4, 4]"}, {"Filter", "[3, 2, 3, 3]"}},
     .ref = ref_conv2d},
    {.op = "conv2d", .what = "stride 2, paddings 1", .attrs = "strides=[2, 2] paddings=[1, 1]",
     .in = {{"Input", "[2, 1, 5, 5]"}, {"Filter", "[2, 1, 3, 3]"}}, .ref = ref_conv2d},
    {.op = "conv2d", .what = "4 paddings, strides (1, 2)",
     .attrs = "strides=[1, 2] paddings=[1, 0, 2, 1]",
     .in = {{"Input", "[1, 2, 4, 5]"}, {"Filter", "[2, 2, 2, 3]"}}, .ref = ref_conv2d},
    {.op = "conv2d", .what = "dilations 2", .attrs = "dilations=[2, 2] paddings=[1, 0]",
     .in = {{"Input", "[1, 1, 5, 5]"}, {"Filter", "[2, 1, 2, 2]"}}, .ref = ref_conv2d},
    {.op = "conv2d", .what = "groups 2", .attrs = "groups=2 paddings=[1, 0]",
     .in = {{"Input", "[1, 4, 3, 4]"}, {"Filter", "[4, 2, 3, 2]"}}, .ref = ref_conv2d},
    {.op = "conv2d", .what = "depthwise", .attrs = "groups=3 paddings=[1, 1]",
     .in = {{"Input", "[1, 3, 3, 3]"}, {"Filter", "[3, 1, 3, 3]"}}, .ref = ref_conv2d},
    {.op = "depthwise_conv2d", .what = "stride 2, 2 filters a channel",
     .attrs = "groups=3 paddings=[1, 1] strides=[2, 2]",
     .in = {{"Input", "[2, 3, 5, 4]"}, {"Filter", "[6, 1, 3, 3]"}}, .ref = ref_conv2d},
    /* SAME ignores the paddings and the dilations; VALID the paddings. */
    {.op = "conv2d", .what = "SAME stride 2",
     .attrs = "padding_algorithm=SAME strides=[2, 2] paddings=[3, 3] dilations=[2, 2]",
     .in = {{"Input", "[1, 2, 5, 6]"}, {"Filter", "[2, 2, 3, 3]"}}, .ref = ref_conv2d},
    {.op = "conv2d", .what = "VALID", .attrs = "padding_algorithm=VALID strides=[2, 1] "
                                               "paddings=[2, 2]",
     .in = {{"Input", "[1, 2, 5, 4]"}, {"Filter", "[2, 2, 2, 2]"}}, .ref = ref_conv2d},

    /* fused_conv2d: each part of the epilogue, the activations with their parameters. */
    {.op = "fused_conv2d", .what = "bias, residual, relu", .attrs = "paddings=[1, 1] "
     "fuse_activation=relu fuse_residual_connection=true",
     .in = {{"Input", "[2, 2, 4, 5]"}, {"Filter", "[3, 2, 3, 3]"}, {"Bias", "[3]"},
            {"ResidualData", "[2, 3, 4, 5]"}},
     .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "depthwise, stride 2, [1, C, 1, 1] bias, hard_swish",
     .attrs = "groups=3 strides=[2, 2] paddings=[1, 1] fuse_activation=hard_swish "
              "fuse_alpha=0.1666667 fuse_beta=0.5",
     .in = {{"Input", "[1, 3, 7, 6]", .lo = -4, .hi = 4}, {"Filter", "[3, 1, 3, 3]"},
            {"Bias", "[1, 3, 1, 1]"}},
     .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "1x1, relu6", .attrs = "fuse_activation=relu6 fuse_beta=0.5",
     .in = {{"Input", "[2, 4, 3, 3]"}, {"Filter", "[5, 4, 1, 1]"}, {"Bias", "[5]"}},
     .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "leaky_relu", .attrs = "fuse_activation=leaky_relu "
     "fuse_alpha=0.1", .in = {{"Input", "[1, 2, 4, 4]"}, {"Filter", "[2, 2, 2, 2]"}},
     .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "swish", .attrs = "fuse_activation=swish fuse_alpha=1.5",
     .in = {{"Input", "[1, 2, 4, 4]"}, {"Filter", "[2, 2, 2, 2]"}}, .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "hard_sigmoid, dilation 2", .attrs = "dilations=[2, 2] "
     "fuse_activation=hard_sigmoid fuse_alpha=0.2 fuse_beta=0.5",
     .in = {{"Input", "[1, 2, 6, 6]", .lo = -3, .hi = 3}, {"Filter", "[2, 2, 2, 2]"},
            {"Bias", "[2]"}},
     .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "sigmoid", .attrs = "fuse_activation=sigmoid",
     .in = {{"Input", "[1, 2, 4, 4]"}, {"Filter", "[2, 2, 2, 2]"}}, .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "tanh, groups 2", .attrs = "groups=2 fuse_activation=tanh",
     .in = {{"Input", "[1, 4, 4, 4]"}, {"Filter", "[2, 2, 2, 2]"}}, .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "gelu", .attrs = "fuse_activation=gelu",
     .in = {{"Input", "[1, 2, 4, 4]"}, {"Filter", "[2, 2, 2, 2]"}}, .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "gelu_tanh", .attrs = "fuse_activation=gelu_tanh",
     .in = {{"Input", "[1, 2, 4, 4]"}, {"Filter", "[2, 2, 2, 2]"}}, .ref = ref_fused_conv2d},
    {.op = "fused_conv2d", .what = "no epilogue", .attrs = "strides=[2, 1]",
     .in = {{"Input", "[1, 2, 5, 4]"}, {"Filter", "[3, 2, 2, 2]"}}, .ref = ref_fused_conv2d},

    /* conv2d_transpose: the output size from strides, paddings, dilations, output_padding,
     * output_size and padding_algorithm; groups; NHWC; a Bias. */
    {.op = "conv2d_transpose", .what = "3x3",
     .in = {{"Input", "[1, 2, 3, 3]"}, {"Filter", "[2, 3, 3, 3]"}}, .ref = ref_conv2d_transpose},
    {.op = "conv2d_transpose", .what = "stride 2, paddings 1, output_padding 1",
     .attrs = "strides=[2, 2] paddings=[1, 1] output_padding=[1, 1]",
     .in = {{"Input", "[2, 2, 3, 4]"}, {"Filter", "[2, 2, 3, 3]"}}, .ref = ref_conv2d_transpose},
    {.op = "conv2d_transpose", .what = "groups 2, stride 2, Bias",
     .attrs = "groups=2 strides=[2, 2]",
     .in = {{"Input", "[1, 4, 3, 3]"}, {"Filter", "[4, 3, 2, 2]"}, {"Bias", "[6]"}},
     .ref = ref_conv2d_transpose},
    {.op = "conv2d_transpose", .what = "dilations (2, 1), 4 paddings, strides (1, 2)",
     .attrs = "dilations=[2, 1] paddings=[1, 0, 0, 1] strides=[1, 2]",
     .in = {{"Input", "[1, 2, 4, 3]"}, {"Filter", "[2, 2, 2, 3]"}}, .ref = ref_conv2d_transpose},
    {.op = "conv2d_transpose", .what = "dilation 2 > stride, output_padding 1",
     .attrs = "dilations=[2, 2] paddings=[1, 1] output_padding=[1, 1]",
     .in = {{"Input", "[1, 1, 3, 3]"}, {"Filter", "[1, 2, 2, 2]"}}, .ref = ref_conv2d_transpose},
    {.op = "conv2d_transpose", .what = "NHWC, stride 2, output_padding 1, Bias",
     .attrs = "data_format=NHWC strides=[2, 2] paddings=[1, 1] output_padding=[1, 0]",
     .in = {{"Input", "[2, 3, 3, 2]"}, {"Filter", "[2, 3, 3, 3]"}, {"Bias", "[3]"}},
     .ref = ref_conv2d_transpose},
    {.op = "conv2d_transpose", .what = "NHWC, groups 2",
     .attrs = "data_format=NHWC groups=2 paddings=[1, 1]",
     .in = {{"Input", "[1, 3, 2, 4]"}, {"Filter", "[4, 1, 3, 3]"}}, .ref = ref_conv2d_transpose},
    {.op = "conv2d_transpose", .what = "SAME stride 2 (dilations undone)",
     .attrs = "padding_algorithm=SAME strides=[2, 2] paddings=[3, 3] dilations=[2, 2]",
     .in = {{"Input", "[1, 2, 5, 4]"}, {"Filter", "[2, 2, 3, 3]"}}, .ref = ref_conv2d_transpose},
    {.op = "conv2d_transpose", .what = "VALID", .attrs = "padding_algorithm=VALID paddings=[1, 1]",
     .in = {{"Input", "[1, 2, 3, 2]"}, {"Filter", "[2, 1, 2, 3]"}}, .ref = ref_conv2d_transpose},

    /* conv2d_transpose_bias: the 2x2 stride-2 kernel's rows through the epilogue (relu, an
     * upsampling head's; sigmoid, a DB detector's last), the general path (3x3, padded) */
    {.op = "conv2d_transpose_bias", .what = "2x2 stride 2, relu", .attrs = "strides=[2, 2] "
     "fuse_activation=relu",
     .in = {{"Input", "[2, 3, 4, 5]"}, {"Filter", "[3, 4, 2, 2]"}, {"Bias", "[4]"}},
     .ref = ref_conv2d_transpose_bias},
    {.op = "conv2d_transpose_bias", .what = "2x2 stride 2, one channel, sigmoid",
     .attrs = "strides=[2, 2] fuse_activation=sigmoid",
     .in = {{"Input", "[1, 5, 3, 9]"}, {"Filter", "[5, 1, 2, 2]"}, {"Bias", "[1]"}},
     .ref = ref_conv2d_transpose_bias},
    {.op = "conv2d_transpose_bias", .what = "3x3 paddings 1, groups 2, hard_swish",
     .attrs = "paddings=[1, 1] groups=2 fuse_activation=hard_swish fuse_alpha=0.1666667 "
              "fuse_beta=0.5",
     .in = {{"Input", "[1, 4, 3, 4]", .lo = -3, .hi = 3}, {"Filter", "[4, 2, 3, 3]"},
            {"Bias", "[4]"}},
     .ref = ref_conv2d_transpose_bias},
    {.op = "conv2d_transpose_bias", .what = "no activation", .attrs = "strides=[2, 2]",
     .in = {{"Input", "[1, 2, 3, 3]"}, {"Filter", "[2, 3, 2, 2]"}, {"Bias", "[3]"}},
     .ref = ref_conv2d_transpose_bias},
    {.op = "conv2d_transpose", .what = "output_size",
     .attrs = "strides=[2, 3] output_size=[8, 8] output_padding=[0, 0]",
     .in = {{"Input", "[1, 2, 3, 2]"}, {"Filter", "[2, 2, 3, 3]"}}, .ref = ref_conv2d_transpose},
    {.op = "depthwise_conv2d_transpose", .what = "stride 2, paddings 1, output_padding 1",
     .attrs = "groups=3 strides=[2, 2] paddings=[1, 1] output_padding=[1, 1]",
     .in = {{"Input", "[2, 3, 3, 3]"}, {"Filter", "[3, 1, 3, 3]"}, {"Bias", "[3]"}},
     .ref = ref_conv2d_transpose},

    /* pool2d: max over distinct values (no ties for a finite difference to swap). */
    {.op = "pool2d", .what = "max 2x2 stride 2",
     .attrs = "pooling_type=max ksize=[2, 2] strides=[2, 2]",
     .in = {{"X", "[2, 2, 4, 4]", .v = distinct}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "max, 4 paddings",
     .attrs = "pooling_type=max ksize=[2, 3] strides=[2, 2] paddings=[1, 0, 0, 2]",
     .in = {{"X", "[1, 2, 5, 5]", .v = distinct}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "max ceil_mode",
     .attrs = "pooling_type=max ksize=[2, 2] strides=[2, 2] ceil_mode=true",
     .in = {{"X", "[1, 2, 5, 5]", .v = distinct}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "max SAME", .attrs = "pooling_type=max ksize=[3, 3] strides=[2, 2] "
                                                 "padding_algorithm=SAME",
     .in = {{"X", "[1, 2, 5, 4]", .v = distinct}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "max global", .attrs = "pooling_type=max ksize=[1, 1] "
                                                   "global_pooling=true",
     .in = {{"X", "[2, 3, 3, 4]", .v = distinct}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "max adaptive", .attrs = "pooling_type=max ksize=[3, 2] adaptive=true",
     .in = {{"X", "[1, 2, 5, 5]", .v = distinct}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "avg paddings, exclusive",
     .attrs = "pooling_type=avg ksize=[3, 3] paddings=[1, 1]",
     .in = {{"X", "[1, 2, 4, 4]"}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "avg paddings, not exclusive",
     .attrs = "pooling_type=avg ksize=[3, 3] paddings=[1, 1] exclusive=false",
     .in = {{"X", "[1, 2, 4, 4]"}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "avg ceil_mode, not exclusive",
     .attrs = "pooling_type=avg ksize=[2, 3] strides=[2, 2] ceil_mode=true exclusive=false",
     .in = {{"X", "[1, 2, 5, 6]"}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "avg VALID", .attrs = "pooling_type=avg ksize=[2, 2] strides=[1, 2] "
                                                  "paddings=[1, 1] padding_algorithm=VALID",
     .in = {{"X", "[1, 2, 3, 5]"}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "avg global", .attrs = "pooling_type=avg ksize=[2, 2] "
                                                   "global_pooling=true",
     .in = {{"X", "[2, 2, 3, 3]"}}, .ref = ref_pool2d},
    {.op = "pool2d", .what = "avg adaptive", .attrs = "pooling_type=avg ksize=[2, 3] adaptive=true",
     .in = {{"X", "[1, 2, 5, 7]"}}, .ref = ref_pool2d},
    /* to one pixel (a squeeze-excitation's): a plane's mean in eight lanes, 3 past them */
    {.op = "pool2d", .what = "avg adaptive to 1x1",
     .attrs = "pooling_type=avg ksize=[1, 1] adaptive=true", .in = {{"X", "[2, 3, 5, 7]"}},
     .ref = ref_pool2d},

    /* The lookups: repeated ids (their gradients add up), padding_idx (a zero row, no
     * gradient), int32 ids. */
    {.op = "lookup_table", .in = {{"W", "[5, 3]"}, {"Ids", "[5, 1]", OT_I64, .v = ids_repeat}},
     .ref = ref_lookup, .wrt = "W"},
    {.op = "lookup_table", .what = "padding_idx", .attrs = "padding_idx=2",
     .in = {{"W", "[5, 2]"}, {"Ids", "[2, 3, 1]", OT_I64, .v = ids_padded}}, .ref = ref_lookup,
     .wrt = "W"},
    {.op = "lookup_table_v2", .in = {{"W", "[5, 3]"}, {"Ids", "[5]", OT_I64, .v = ids_repeat}},
     .ref = ref_lookup, .wrt = "W"},
    {.op = "lookup_table_v2", .what = "padding_idx", .attrs = "padding_idx=2",
     .in = {{"W", "[6, 2]"}, {"Ids", "[2, 3]", OT_I64, .v = ids_padded}}, .ref = ref_lookup,
     .wrt = "W"},
    {.op = "lookup_table_v2", .what = "int32 Ids", .in = {{"W", "[4, 3]"},
                                                          {"Ids", "[3, 2]", OT_I32, 0, 3}},
     .ref = ref_lookup, .wrt = "W"},

    /* dropout at test time: exact values. */
    {.op = "dropout", .what = "is_test downgrade_in_infer",
     .attrs = "dropout_prob=0.3 is_test=true",
     .in = {{"X", "[3, 4]"}}, .ref = ref_dropout_test},
    {.op = "dropout", .what = "is_test upscale_in_train",
     .attrs = "dropout_prob=0.3 is_test=true dropout_implementation=upscale_in_train",
     .in = {{"X", "[3, 4]"}}, .ref = ref_dropout_test},
    /* Training, by properties; a fixed seed fixes the mask for the finite differences. */
    {.op = "dropout", .what = "downgrade_in_infer, fix_seed",
     .attrs = "dropout_prob=0.3 fix_seed=true seed=11", .in = {{"X", "[8, 25]"}},
     .check = check_dropout_train},
    {.op = "dropout", .what = "upscale_in_train, fix_seed",
     .attrs = "dropout_prob=0.6 fix_seed=true seed=5 dropout_implementation=upscale_in_train",
     .in = {{"X", "[8, 25]"}}, .check = check_dropout_train},
    /* The Seed input instead of the attribute; the executor's seed without fix_seed. */
    {.op = "dropout", .what = "Seed input", .attrs = "dropout_prob=0.5",
     .in = {{"X", "[200]"}, {"Seed", "[1]", OT_I32, .v = (const double[]){7}}},
     .check = check_dropout_train},
    {.op = "dropout", .what = "the executor's seed", .attrs = "dropout_prob=0.2",
     .in = {{"X", "[10, 20]"}}, .check = check_dropout_train, .seed = 3, .no_grad = true},
    {0},
};
