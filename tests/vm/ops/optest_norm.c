/* optest_norm.c -- the op-test table's rows of vm/ops/norm.c (optest.h): batch_norm and
 * sync_batch_norm in one process (training on the batch's statistics with Fluid's update of
 * the running ones, is_test and use_global_stats on the running ones; NCHW, NHWC, [N, C] and
 * [N, C, L]; MomentumTensor),
 * layer_norm (begin_norm_axis, with and without Scale and Bias), group_norm (groups, NCHW and
 * NHWC, Scale and Bias optional), instance_norm and affine_channel. The references compute the
 * statistics in double from the definitions. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* batch_norm, X viewed as [n, c, s] (NCHW [N, C, rest...]: s = prod(rest); NHWC [..., C]:
 * n = prod(...), s = 1). Fluid normalises with the running Mean and Variance when is_test
 * (unless trainable_statistics) or use_global_stats; MeanOut and VarianceOut are then Mean and
 * Variance (one var each in Fluid's programs). Otherwise with the batch's mean m and biased
 * variance v per channel: MeanOut = momentum * Mean + (1 - momentum) * m (VarianceOut likewise
 * with v; MomentumTensor, when given, is the momentum), SavedMean = m, SavedVariance = 1 /
 * sqrt(v + epsilon) (the inverse std, as Fluid saves it). Y = (X - mean) / sqrt(var + epsilon)
 * * Scale + Bias with the statistics used. */
static void ref_batch_norm(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *scale = ot_in(r, "Scale"), *bias = ot_in(r, "Bias");
  const ot_val *mean = ot_in(r, "Mean"), *var = ot_in(r, "Variance");
  const ot_val *mt = ot_in(r, "MomentumTensor");
  bool nhwc = strcmp(ot_str(r, "data_layout"), "NHWC") == 0;
  int64_t c = x->dims[nhwc ? x->nd - 1 : 1], n = nhwc ? x->n / c : x->dims[0];
  int64_t s = x->n / (n * c);
  bool global = (ot_bool(r, "is_test") && !ot_bool(r, "trainable_statistics")) ||
                ot_bool(r, "use_global_stats");
  double eps = ot_float(r, "epsilon"), mom = mt ? mt->v[0] : ot_float(r, "momentum");
  double *y = ot_out_like(r, "Y", x);
  double *mo = ot_out_like(r, "MeanOut", mean), *vo = ot_out_like(r, "VarianceOut", var);
  double *sm = global ? NULL : ot_out_like(r, "SavedMean", mean);
  double *sv = global ? NULL : ot_out_like(r, "SavedVariance", var);
  for (int64_t ch = 0; ch < c; ch++) {
    double m = mean->v[ch], v = var->v[ch];
    if (!global) {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < s; j++) sum += x->v[(i * c + ch) * s + j];
      m = sum / (double)(n * s);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < s; j++) sq += pow(x->v[(i * c + ch) * s + j] - m, 2);
      v = sq / (double)(n * s);
      sm[ch] = m;
      sv[ch] = 1 / sqrt(v + eps);
    }
    mo[ch] = global ? m : mom * mean->v[ch] + (1 - mom) * m;
    vo[ch] = global ? v : mom * var->v[ch] + (1 - mom) * v;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < s; j++) {
        int64_t e = (i * c + ch) * s + j;
        y[e] = (x->v[e] - m) / sqrt(v + eps) * scale->v[ch] + bias->v[ch];
      }
  }
}

/* layer_norm: X as [rows, cols] split at begin_norm_axis; each row's mean and biased variance
 * (Mean, Variance [rows]); Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias (Scale 1
 * and Bias 0 when not given). */
static void ref_layer_norm(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *scale = ot_in(r, "Scale"), *bias = ot_in(r, "Bias");
  int64_t b = ot_int(r, "begin_norm_axis"), rows = ot_numel((int)b, x->dims);
  int64_t cols = x->n / rows;
  double eps = ot_float(r, "epsilon");
  double *y = ot_out_like(r, "Y", x);
  double *mean = ot_out(r, "Mean", 1, &rows), *var = ot_out(r, "Variance", 1, &rows);
  for (int64_t i = 0; i < rows; i++) {
    const double *xr = x->v + i * cols;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < cols; j++) sum += xr[j];
    mean[i] = sum / (double)cols;
    for (int64_t j = 0; j < cols; j++) sq += pow(xr[j] - mean[i], 2);
    var[i] = sq / (double)cols;
    for (int64_t j = 0; j < cols; j++)
      y[i * cols + j] = (xr[j] - mean[i]) / sqrt(var[i] + eps) * (scale ? scale->v[j] : 1) +
                        (bias ? bias->v[j] : 0);
  }
}

/* group_norm: the C channels of X (dim 1, or the last with NHWC) in `groups` groups of C /
 * groups; for each instance n and group g, the mean and biased variance of its channels'
 * values (Mean, Variance [N, groups]); Y = (X - mean) / sqrt(variance + epsilon) * Scale[ch]
 * + Bias[ch] (1 and 0 when not given). instance_norm: a group per channel, NCHW; SavedMean
 * the means and SavedVariance 1 / sqrt(variance + epsilon), [N * C]. */
static void ref_group_norm(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *scale = ot_in(r, "Scale"), *bias = ot_in(r, "Bias");
  bool inst = strcmp(ot_op(r), "instance_norm") == 0;
  bool nhwc = !inst && strcmp(ot_str(r, "data_layout"), "NHWC") == 0;
  int64_t n = x->dims[0], c = x->dims[nhwc ? x->nd - 1 : 1], s = x->n / (n * c);
  int64_t g = inst ? c : ot_int(r, "groups"), cg = c / g, sd[2] = {n, g}, nc = n * c;
  double eps = ot_float(r, "epsilon");
  double *y = ot_out_like(r, "Y", x);
  double *mean = inst ? ot_out(r, "SavedMean", 1, &nc) : ot_out(r, "Mean", 2, sd);
  double *var = inst ? ot_out(r, "SavedVariance", 1, &nc) : ot_out(r, "Variance", 2, sd);
  /* element j of channel ch of instance b */
#define AT_(b, ch, j) (nhwc ? ((b) * s + (j)) * c + (ch) : ((b) * c + (ch)) * s + (j))
  for (int64_t b = 0; b < n; b++)
    for (int64_t k = 0; k < g; k++) {
      double sum = 0, sq = 0, cnt = (double)(cg * s);
      for (int64_t ch = k * cg; ch < (k + 1) * cg; ch++)
        for (int64_t j = 0; j < s; j++) sum += x->v[AT_(b, ch, j)];
      double m = sum / cnt;
      for (int64_t ch = k * cg; ch < (k + 1) * cg; ch++)
        for (int64_t j = 0; j < s; j++) sq += pow(x->v[AT_(b, ch, j)] - m, 2);
      double v = sq / cnt;
      mean[b * g + k] = m;
      var[b * g + k] = inst ? 1 / sqrt(v + eps) : v;
      for (int64_t ch = k * cg; ch < (k + 1) * cg; ch++)
        for (int64_t j = 0; j < s; j++) {
          int64_t e = AT_(b, ch, j);
          y[e] = (x->v[e] - m) / sqrt(v + eps) * (scale ? scale->v[ch] : 1) +
                 (bias ? bias->v[ch] : 0);
        }
    }
#undef AT_
}

/* affine_channel: Out = X * Scale[ch] + Bias[ch], ch the element's channel (dim 1 with
 * data_layout NCHW; the last with any other, Fluid's default AnyLayout included). */
static void ref_affine_channel(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *scale = ot_in(r, "Scale"), *bias = ot_in(r, "Bias");
  bool nhwc = strcmp(ot_str(r, "data_layout"), "NCHW") != 0;
  int64_t c = x->dims[nhwc ? x->nd - 1 : 1], inner = nhwc ? 1 : x->n / (x->dims[0] * c);
  double *out = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++) {
    int64_t ch = i / inner % c;
    out[i] = x->v[i] * scale->v[ch] + bias->v[ch];
  }
}

/* ---------------------------------------------------------------- the rows */

/* batch_norm's per-channel inputs for C channels: the running variance positive. */
#define BN_VECS(C)                                                                             \
  {"Scale", C}, {"Bias", C}, {"Mean", C}, {"Variance", C, .lo = 0.5, .hi = 2}

/* batch_norm's gradient check weighs Y only, with respect to X, Scale and Bias (Fluid's
 * batch_norm_grad gives no gradient of the running statistics). */
#define BN_GRAD .loss = "Y", .wrt = "X Scale Bias"

const ot_row ot_rows_norm[] = {
    /* Training: the batch's statistics, every layout. */
    {.op = "batch_norm", .what = "NCHW", .in = {{"X", "[2, 3, 2, 2]"}, BN_VECS("[3]")},
     .ref = ref_batch_norm, BN_GRAD},
    {.op = "batch_norm", .what = "NHWC", .attrs = "data_layout=NHWC",
     .in = {{"X", "[2, 2, 2, 3]"}, BN_VECS("[3]")}, .ref = ref_batch_norm, BN_GRAD},
    {.op = "batch_norm", .what = "[N, C]", .in = {{"X", "[4, 3]"}, BN_VECS("[3]")},
     .ref = ref_batch_norm, BN_GRAD},
    {.op = "batch_norm", .what = "[N, C, L], momentum 0.5, epsilon 1e-3",
     .attrs = "momentum=0.5 epsilon=0.001", .in = {{"X", "[3, 2, 3]"}, BN_VECS("[2]")},
     .ref = ref_batch_norm, BN_GRAD},
    {.op = "batch_norm", .what = "MomentumTensor", .attrs = "momentum=0.9",
     .in = {{"X", "[3, 2, 2]"}, BN_VECS("[2]"),
            {"MomentumTensor", "[1]", .v = (const double[]){0.25}}},
     .ref = ref_batch_norm, BN_GRAD},
    /* The running statistics: is_test, use_global_stats (NHWC too); trainable_statistics
     * brings the batch's back at test time. */
    {.op = "batch_norm", .what = "is_test", .attrs = "is_test=true",
     .in = {{"X", "[2, 3, 2, 2]"}, BN_VECS("[3]")}, .ref = ref_batch_norm, BN_GRAD},
    {.op = "batch_norm", .what = "use_global_stats NHWC",
     .attrs = "use_global_stats=true data_layout=NHWC",
     .in = {{"X", "[2, 3, 2]"}, BN_VECS("[2]")}, .ref = ref_batch_norm, BN_GRAD},
    {.op = "batch_norm", .what = "is_test, trainable_statistics",
     .attrs = "is_test=true trainable_statistics=true",
     .in = {{"X", "[3, 2, 2]"}, BN_VECS("[2]")}, .ref = ref_batch_norm, BN_GRAD},
    /* sync_batch_norm in one process: batch_norm's values, through the path that sums the
     * statistics over the ranks of a job (tests/mpi/sync_bn.sh: two ranks). */
    {.op = "sync_batch_norm", .what = "NCHW", .in = {{"X", "[2, 3, 2, 2]"}, BN_VECS("[3]")},
     .ref = ref_batch_norm, BN_GRAD},
    {.op = "sync_batch_norm", .what = "NHWC, momentum 0.5",
     .attrs = "data_layout=NHWC momentum=0.5", .in = {{"X", "[2, 2, 2, 3]"}, BN_VECS("[3]")},
     .ref = ref_batch_norm, BN_GRAD},
    {.op = "sync_batch_norm", .what = "[N, C]", .in = {{"X", "[4, 3]"}, BN_VECS("[3]")},
     .ref = ref_batch_norm, BN_GRAD},
    {.op = "sync_batch_norm", .what = "is_test", .attrs = "is_test=true",
     .in = {{"X", "[2, 3, 2, 2]"}, BN_VECS("[3]")}, .ref = ref_batch_norm, BN_GRAD},

    /* layer_norm: begin_norm_axis 1 and 2, Scale and Bias each optional. */
    {.op = "layer_norm", .in = {{"X", "[3, 4]"}, {"Scale", "[4]"}, {"Bias", "[4]"}},
     .ref = ref_layer_norm},
    {.op = "layer_norm", .what = "begin_norm_axis 2", .attrs = "begin_norm_axis=2",
     .in = {{"X", "[2, 3, 4]"}, {"Scale", "[4]"}, {"Bias", "[4]"}}, .ref = ref_layer_norm},
    {.op = "layer_norm", .what = "begin_norm_axis 1 of 3 dims",
     .in = {{"X", "[2, 2, 3]"}, {"Scale", "[6]"}, {"Bias", "[6]"}}, .ref = ref_layer_norm},
    {.op = "layer_norm", .what = "no Scale, no Bias", .in = {{"X", "[2, 5]"}},
     .ref = ref_layer_norm},
    {.op = "layer_norm", .what = "Scale only, epsilon 1e-3", .attrs = "epsilon=0.001",
     .in = {{"X", "[3, 4]"}, {"Scale", "[4]"}}, .ref = ref_layer_norm},
    {.op = "layer_norm", .what = "Bias only", .attrs = "begin_norm_axis=2",
     .in = {{"X", "[2, 2, 3]"}, {"Bias", "[3]"}}, .ref = ref_layer_norm},
    /* group_norm: groups, NCHW and NHWC, Scale and Bias each optional; instance_norm. */
    {.op = "group_norm", .what = "2 groups", .attrs = "groups=2",
     .in = {{"X", "[2, 4, 2, 2]"}, {"Scale", "[4]"}, {"Bias", "[4]"}}, .ref = ref_group_norm},
    {.op = "group_norm", .what = "3 groups, [N, C, L], epsilon 1e-3",
     .attrs = "groups=3 epsilon=0.001",
     .in = {{"X", "[2, 6, 3]"}, {"Scale", "[6]"}, {"Bias", "[6]"}}, .ref = ref_group_norm},
    {.op = "group_norm", .what = "1 group, no Scale, no Bias", .attrs = "groups=1",
     .in = {{"X", "[2, 3, 2, 2]"}}, .ref = ref_group_norm},
    {.op = "group_norm", .what = "a group per channel, Scale only", .attrs = "groups=3",
     .in = {{"X", "[2, 3, 4]"}, {"Scale", "[3]"}}, .ref = ref_group_norm},
    {.op = "group_norm", .what = "NHWC, 2 groups", .attrs = "groups=2 data_layout=NHWC",
     .in = {{"X", "[2, 2, 3, 4]"}, {"Scale", "[4]"}, {"Bias", "[4]"}}, .ref = ref_group_norm},
    {.op = "group_norm", .what = "NHWC, Bias only, [N, C]", .attrs = "groups=2 data_layout=NHWC",
     .in = {{"X", "[3, 4]"}, {"Bias", "[4]"}}, .ref = ref_group_norm},
    {.op = "instance_norm", .in = {{"X", "[2, 3, 2, 2]"}, {"Scale", "[3]"}, {"Bias", "[3]"}},
     .ref = ref_group_norm},
    {.op = "instance_norm", .what = "no Scale, no Bias, [N, C, L]", .attrs = "epsilon=0.001",
     .in = {{"X", "[2, 2, 5]"}}, .ref = ref_group_norm},
    {.op = "instance_norm", .what = "Scale only, 5 dims",
     .in = {{"X", "[1, 2, 2, 2, 2]"}, {"Scale", "[2]"}}, .ref = ref_group_norm},
    {.op = "affine_channel", .what = "NCHW", .attrs = "data_layout=NCHW",
     .in = {{"X", "[2, 3, 2, 2]"}, {"Scale", "[3]"}, {"Bias", "[3]"}}, .ref = ref_affine_channel},
    {.op = "affine_channel", .what = "AnyLayout: channels last",
     .in = {{"X", "[2, 2, 2, 3]"}, {"Scale", "[3]"}, {"Bias", "[3]"}}, .ref = ref_affine_channel},
    {.op = "affine_channel", .what = "NHWC", .attrs = "data_layout=NHWC",
     .in = {{"X", "[2, 2, 3]"}, {"Scale", "[3]"}, {"Bias", "[3]"}}, .ref = ref_affine_channel},
    {.op = "affine_channel", .what = "[N, C]", .attrs = "data_layout=NCHW",
     .in = {{"X", "[3, 4]"}, {"Scale", "[4]"}, {"Bias", "[4]"}}, .ref = ref_affine_channel},
    {0},
};
