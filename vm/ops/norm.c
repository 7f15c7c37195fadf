/* norm.c -- the normalisation ops: batch_norm (NCHW, NHWC and NC; batch statistics in training
 * with Fluid's update of the running mean and variance, the running ones with is_test or
 * use_global_stats), layer_norm (begin_norm_axis, optional Scale and Bias), and group_norm
 * (NCHW and NHWC) and instance_norm (group_norm with a group per channel), each a layer_norm
 * over the groups followed by a per-channel Scale and Bias, and affine_channel (that Scale and
 * Bias alone): their shape functions, kernels and gradient kernels. The math is the backend's
 * (kernels/kernels.h: batch_norm, layer_norm and their gradients, with binary, reduce and
 * transpose for the rest), so all run on the GPU. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"
#include "vm/run/comm.h"

/* ================================================================ shape functions */

/* A per-channel (or per-column) input: one dim of size n, X's dtype. */
static pd_status infer_vec(pd_infer_ctx *c, const char *slot, int64_t n, const char *of,
                           pd_dtype dt) {
  const pd_var_desc *v;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, slot, 0, &v, &d);
  if (st || (st = pd_infer_same_dtype(c, "X", dt, slot, v->dtype))) return st;
  if (d.n >= 0 && d.n != 1)
    return pd_infer_fail(c, PD_ESHAPE, "%s must have 1 dim [%s], got %s", slot, of,
                         pd_infer_dims_str(&d, s));
  if (d.n == 1 && d.d[0] >= 0 && n >= 0 && d.d[0] != n)
    return pd_infer_fail(c, PD_ESHAPE, "%s %s must have %" PRId64 " elements (the %s)", slot,
                         pd_infer_dims_str(&d, s), n, of);
  return PD_OK;
}

static pd_status infer_epsilon(pd_infer_ctx *c) {
  double eps = pd_infer_attr_float(c, "epsilon");
  if (!(eps >= 0))
    return pd_infer_fail(c, PD_EINVAL, "epsilon must be non-negative, got %g", eps);
  return PD_OK;
}

/* batch_norm: X [N, C, ...] (NCHW) or [N, ..., C] (NHWC), rank 2 to 5; Scale, Bias, Mean and
 * Variance [C]; Y like X; MeanOut, VarianceOut, SavedMean and SavedVariance [C]. */
pd_status pd_infer_batch_norm(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st || (st = infer_epsilon(c))) return st;
  if (d.n >= 0 && (d.n < 2 || d.n > 5))
    return pd_infer_fail(c, PD_ESHAPE, "X must have 2 to 5 dims ([N, C] or [N, C, H, W]), got %s",
                         pd_infer_dims_str(&d, s));
  bool nhwc = strcmp(pd_infer_attr_str(c, "data_layout"), "NHWC") == 0;
  int64_t ch = d.n < 0 ? -1 : d.d[nhwc ? d.n - 1 : 1];
  static const char *const vecs[] = {"Scale", "Bias", "Mean", "Variance"};
  for (int i = 0; i < 4; i++)
    if ((st = infer_vec(c, vecs[i], ch, "channels of X", x->dtype))) return st;
  pd_infer_dims v = {.n = 1, .d = {ch}};
  static const char *const outs[] = {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
  if ((st = pd_infer_set_out(c, "Y", 0, &d, x->dtype, x->lod_level))) return st;
  for (int i = 0; i < 4; i++)
    if ((st = pd_infer_set_out(c, outs[i], 0, &v, x->dtype, 0))) return st;
  return PD_OK;
}

/* layer_norm: X split at begin_norm_axis into [left, right] (rows, and the values of a row);
 * Scale and Bias [right]; Y like X; Mean and Variance [left]. */
pd_status pd_infer_layer_norm(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st || (st = infer_epsilon(c))) return st;
  int64_t b = pd_infer_attr_int(c, "begin_norm_axis");
  if (d.n >= 0 && (b < 1 || b >= d.n))
    return pd_infer_fail(c, PD_EINVAL, "begin_norm_axis must be in [1, %d) for X %s, got %" PRId64,
                         d.n, pd_infer_dims_str(&d, s), b);
  if (d.n < 0 && b < 1)
    return pd_infer_fail(c, PD_EINVAL, "begin_norm_axis must be at least 1, got %" PRId64, b);
  int64_t left = -1, right = -1;
  if (d.n >= 0) {
    left = right = 1;
    for (int i = 0; i < d.n; i++) {
      int64_t *p = i < b ? &left : &right;
      *p = d.d[i] < 0 || *p < 0 ? -1 : pd_infer_dim_mul(*p, d.d[i]);
    }
  }
  static const char *const vecs[] = {"Scale", "Bias"};
  for (int i = 0; i < 2; i++)
    if (pd_infer_nin(c, vecs[i]) &&
        (st = infer_vec(c, vecs[i], right, "values normalised", x->dtype)))
      return st;
  pd_infer_dims v = {.n = 1, .d = {left}};
  if ((st = pd_infer_set_out(c, "Y", 0, &d, x->dtype, x->lod_level)) ||
      (st = pd_infer_set_out(c, "Mean", 0, &v, x->dtype, 0)))
    return st;
  return pd_infer_set_out(c, "Variance", 0, &v, x->dtype, 0);
}

/* group_norm: X [N, C, ...] (NCHW) or [N, ..., C] (NHWC), groups dividing C; Scale and Bias
 * [C]; Y like X; Mean and Variance [N, groups]. instance_norm: X [N, C, ...] of 2 to 5 dims,
 * a group per channel; SavedMean and SavedVariance [N * C]. */
pd_status pd_infer_group_norm(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  bool inst = c->def->kind == PD_OP_instance_norm;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st || (st = infer_epsilon(c))) return st;
  if (d.n >= 0 && (d.n < 2 || (inst && d.n > 5)))
    return pd_infer_fail(c, PD_ESHAPE, "X must have %s dims ([N, C, ...]), got %s",
                         inst ? "2 to 5" : "at least 2", pd_infer_dims_str(&d, s));
  bool nhwc = !inst && strcmp(pd_infer_attr_str(c, "data_layout"), "NHWC") == 0;
  int64_t n = d.n < 0 ? -1 : d.d[0], ch = d.n < 0 ? -1 : d.d[nhwc ? d.n - 1 : 1];
  int64_t groups = inst ? ch : pd_infer_attr_int(c, "groups");
  if (!inst && (groups < 1 || (ch >= 0 && (groups > ch || ch % groups))))
    return pd_infer_fail(c, PD_EINVAL, "groups %" PRId64 " must divide the %" PRId64 " channels "
                         "of X %s (data_layout %s)", groups, ch, pd_infer_dims_str(&d, s),
                         nhwc ? "NHWC" : "NCHW");
  static const char *const vecs[] = {"Scale", "Bias"};
  for (int i = 0; i < 2; i++)
    if (pd_infer_nin(c, vecs[i]) && (st = infer_vec(c, vecs[i], ch, "channels of X", x->dtype)))
      return st;
  pd_infer_dims v = {.n = 2, .d = {n, groups}};
  if (inst) v = (pd_infer_dims){.n = 1, .d = {n < 0 || ch < 0 ? -1 : pd_infer_dim_mul(n, ch)}};
  if ((st = pd_infer_set_out(c, "Y", 0, &d, x->dtype, x->lod_level)) ||
      (st = pd_infer_set_out(c, inst ? "SavedMean" : "Mean", 0, &v, x->dtype, 0)))
    return st;
  return pd_infer_set_out(c, inst ? "SavedVariance" : "Variance", 0, &v, x->dtype, 0);
}

/* affine_channel: X [N, C, ...] (data_layout NCHW) or [N, ..., C] (any other: NHWC and Fluid's
 * default AnyLayout, as Paddle reads them), Scale and Bias [C]; Out like X. */
pd_status pd_infer_affine_channel(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  if (d.n >= 0 && d.n < 2)
    return pd_infer_fail(c, PD_ESHAPE, "X must have at least 2 dims ([N, C, ...]), got %s",
                         pd_infer_dims_str(&d, s));
  bool nhwc = strcmp(pd_infer_attr_str(c, "data_layout"), "NCHW") != 0;
  int64_t ch = d.n < 0 ? -1 : d.d[nhwc ? d.n - 1 : 1];
  if ((st = infer_vec(c, "Scale", ch, "channels of X", x->dtype)) ||
      (st = infer_vec(c, "Bias", ch, "channels of X", x->dtype)))
    return st;
  return pd_infer_set_out(c, "Out", 0, &d, x->dtype, x->lod_level);
}

/* ================================================================ kernels */

/* A [n] vector input of X's dtype (slot names it in messages). */
static pd_status want_vec(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *t,
                          const pd_tensor *x, int64_t n, const char *of) {
  char s1[DIMS_BUF], s2[DIMS_BUF];
  pd_status st = want_same_dtype(ctx, slot, t, "X", x);
  if (st) return st;
  if (t->ndims != 1 || t->dims[0] != n)
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s (var '%s') is %s but X %s has %" PRId64 " %s", slot,
                       in_name(ctx, slot, 0), shape_str(t, s1), shape_str(x, s2), n, of);
  return PD_OK;
}

/* ---- batch_norm ---- */

typedef struct bn_shape {
  int64_t n, c, s;
} bn_shape;

/* X viewed as [n, c, s]: NCHW [N, C, rest...] -> [N, C, prod(rest)]; NHWC [..., C] ->
 * [prod(...), C, 1]. */
static pd_status bn_view(const pd_exec_ctx *ctx, const pd_tensor *x, bn_shape *v) {
  char s[DIMS_BUF];
  if (x->ndims < 2 || x->ndims > 5)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X (var '%s') must have 2 to 5 dims ([N, C] or "
                       "[N, C, H, W]), got %s", in_name(ctx, "X", 0), shape_str(x, s));
  if (strcmp(pd_ctx_attr_str(ctx, "data_layout"), "NHWC") == 0) {
    *v = (bn_shape){prod(x->dims, 0, x->ndims - 1), x->dims[x->ndims - 1], 1};
  } else {
    *v = (bn_shape){x->dims[0], x->dims[1], prod(x->dims, 2, x->ndims)};
  }
  return PD_OK;
}

/* Fluid's rule: the running statistics normalise with is_test (unless trainable_statistics)
 * or use_global_stats; otherwise the batch's own. */
static bool bn_global(const pd_exec_ctx *ctx) {
  return (pd_ctx_attr_bool(ctx, "is_test") && !pd_ctx_attr_bool(ctx, "trainable_statistics")) ||
         pd_ctx_attr_bool(ctx, "use_global_stats");
}

static pd_status bn_momentum(const pd_exec_ctx *ctx, double *m) {
  const pd_tensor *t;
  pd_status st = in_opt(ctx, "MomentumTensor", &t);
  *m = pd_ctx_attr_float(ctx, "momentum");
  if (st || !t) return st;
  /* MomentumTensor stays on the host (vm/run/exec_place.c). */
  return scalar_in(ctx, "MomentumTensor", t, m);
}

/* sync_batch_norm's statistics: the mean and (biased) variance of each channel over every
 * rank's batch, X viewed as v (two all-reduces: the sums and the count, then the squared
 * deviations from the mean), into mean[c] and var[c] (doubles). */
static pd_status bn_sync_stats(const pd_exec_ctx *ctx, const pd_tensor *x, bn_shape v,
                               double *mean, double *var) {
  double *sums = pd_calloc((size_t)v.c + 1, sizeof *sums);
  if (!sums) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  bool f32 = x->dtype == PD_FP32;
  const float *xf = pd_tensor_data(x);
  const double *xd = pd_tensor_data(x);
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t ch = 0; ch <= v.c; ch++) sums[ch] = 0;
    for (int64_t i = 0; i < v.n; i++)
      for (int64_t ch = 0; ch < v.c; ch++)
        for (int64_t k = 0, o = (i * v.c + ch) * v.s; k < v.s; k++) {
          double e = f32 ? (double)xf[o + k] : xd[o + k];
          sums[ch] += pass ? (e - mean[ch]) * (e - mean[ch]) : e;
        }
    sums[v.c] = (double)v.n * (double)v.s;
    pd_error e = {0};
    pd_status st = pd_comm_allreduce_f64(sums, (int)v.c + 1, &e);
    if (st) {
      st = pd_ctx_fail(ctx, st, "summing the batch statistics over the ranks: %s",
                       e.msg ? e.msg : pd_status_str(st));
      pd_error_clear(&e);
      pd_free(sums);
      return st;
    }
    if (sums[v.c] < 2) {
      pd_free(sums);
      return pd_ctx_fail(ctx, PD_EINVAL, "the ranks' batches hold %.0f value%s per channel, "
                         "which has no variance to estimate", sums[v.c],
                         sums[v.c] == 1 ? "" : "s");
    }
    for (int64_t ch = 0; ch < v.c; ch++) (pass ? var : mean)[ch] = sums[ch] / sums[v.c];
  }
  pd_free(sums);
  return PD_OK;
}

/* batch_norm's forward run; with sync (sync_batch_norm in a job of several ranks), the batch
 * statistics are every rank's (bn_sync_stats): the backend normalises with them as given and
 * the running statistics are updated from them here. */
static pd_status bn_forward(pd_exec_ctx *ctx, bool sync) {
  const pd_tensor *x, *scale, *bias, *mean, *var;
  pd_tensor *y, *mo, *vo, *sm, *sv;
  pd_status st;
  bn_shape v;
  double momentum, eps = pd_ctx_attr_float(ctx, "epsilon");
  bool global = bn_global(ctx);
  char s[DIMS_BUF];
  if ((st = in1(ctx, "X", &x)) || (st = want_float(ctx, "X", x)) || (st = bn_view(ctx, x, &v)) ||
      (st = in1(ctx, "Scale", &scale)) || (st = in1(ctx, "Bias", &bias)) ||
      (st = in1(ctx, "Mean", &mean)) || (st = in1(ctx, "Variance", &var)) ||
      (st = want_vec(ctx, "Scale", scale, x, v.c, "channels")) ||
      (st = want_vec(ctx, "Bias", bias, x, v.c, "channels")) ||
      (st = want_vec(ctx, "Mean", mean, x, v.c, "channels")) ||
      (st = want_vec(ctx, "Variance", var, x, v.c, "channels")) ||
      (st = bn_momentum(ctx, &momentum)) || (st = out1(ctx, "Y", &y)) ||
      (st = out1(ctx, "MeanOut", &mo)) || (st = out1(ctx, "VarianceOut", &vo)) ||
      (st = out_opt(ctx, "SavedMean", &sm)) || (st = out_opt(ctx, "SavedVariance", &sv)))
    return st;
  if (!(eps >= 0)) return pd_ctx_fail(ctx, PD_EINVAL, "epsilon must be non-negative, got %g", eps);
  if (!global && !sync && v.c > 0 && v.n * v.s < 2)
    return pd_ctx_fail(ctx, PD_EINVAL,
                       "training normalises each channel by the batch's own statistics, but X "
                       "(var '%s') %s has %s value per channel (N * H * W = %" PRId64 "), "
                       "which has no variance to estimate; use a batch of at least 2 rows (or "
                       "is_test / use_global_stats; train(..., drop_last = true) leaves out a "
                       "smaller last batch)", in_name(ctx, "X", 0), shape_str(x, s),
                       v.n * v.s == 1 ? "one" : "no", v.n * v.s);
  hold h;
  hold_init(&h);
  /* Inference leaves the running statistics as they are: MeanOut is Mean in Fluid's programs. */
  bool keep_m = global && mo == mean, keep_v = global && vo == var;
  pd_tensor *outs[4] = {keep_m ? NULL : mo, keep_v ? NULL : vo, sm, sv};
  const pd_tensor **ins[6] = {&x, &scale, &bias, &mean, &var, NULL};
  for (int o = 0; o < 4 && !st; o++)
    for (int i = 0; ins[i] && !st; i++) st = unalias(ctx, &h, outs[o], ins[i]);
  for (int i = 0; ins[i] && !st; i++) st = unalias(ctx, &h, y, ins[i]);
  if (st) goto done;
  int64_t vd[1] = {v.c};
  if ((st = resize_like(ctx, y, x, x))) goto done;
  for (int o = 0; o < 4 && !st; o++)
    if (outs[o]) st = resize(ctx, outs[o], x->dtype, 1, vd, NULL);
  /* ReserveSpace (what PaddlePaddle 3's programs bind; cuDNN's workspace there) holds nothing
   * here, as on Paddle's CPU, but has a value for the gradient op that reads it */
  pd_tensor *rs;
  int64_t none[1] = {0};
  if (!st && !(st = out_opt(ctx, "ReserveSpace", &rs)) && rs)
    st = resize(ctx, rs, x->dtype, 1, none, NULL);
  if (st) goto done;
  size_t vbytes = (size_t)v.c * pd_dtype_size(x->dtype);
  if (global && !keep_m &&
      (st = pd_ctx_copy(ctx, pd_tensor_data(mo), pd_tensor_data(mean), vbytes)))
    goto done;
  if (global && !keep_v &&
      (st = pd_ctx_copy(ctx, pd_tensor_data(vo), pd_tensor_data(var), vbytes)))
    goto done;
  if (sync && !global) {  /* the statistics of every rank's batch */
    double *ms = pd_calloc((size_t)v.c * 2 + 1, sizeof *ms), *vs = ms + v.c;
    void *bm = pd_malloc((size_t)v.c * 2 * pd_dtype_size(x->dtype) + 1);
    if (!ms || !bm) st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    if (!st) st = bn_sync_stats(ctx, x, v, ms, vs);
    bool f32 = x->dtype == PD_FP32;
    for (int64_t ch = 0; !st && ch < 2 * v.c; ch++) {
      if (f32) ((float *)bm)[ch] = (float)ms[ch];
      else ((double *)bm)[ch] = ms[ch];
    }
    if (!st)
      st = k_check(ctx, ctx->k->batch_norm(x->dtype, v.n, v.c, v.s, pd_tensor_data(x),
                                           pd_tensor_data(scale), pd_tensor_data(bias), bm,
                                           (char *)bm + vbytes, true, momentum, eps,
                                           pd_tensor_data(y), NULL, NULL,
                                           sm ? pd_tensor_data(sm) : NULL,
                                           sv ? pd_tensor_data(sv) : NULL),
                   x->dtype);
    /* The running statistics, as the backend updates them from one batch's. */
    for (int64_t ch = 0; !st && ch < v.c; ch++) {
      double m0 = f32 ? ((const float *)pd_tensor_data(mean))[ch]
                      : ((const double *)pd_tensor_data(mean))[ch];
      double v0 = f32 ? ((const float *)pd_tensor_data(var))[ch]
                      : ((const double *)pd_tensor_data(var))[ch];
      double m1 = momentum * m0 + (1 - momentum) * ms[ch];
      double v1 = momentum * v0 + (1 - momentum) * vs[ch];
      if (f32) {
        ((float *)pd_tensor_data(mo))[ch] = (float)m1;
        ((float *)pd_tensor_data(vo))[ch] = (float)v1;
      } else {
        ((double *)pd_tensor_data(mo))[ch] = m1;
        ((double *)pd_tensor_data(vo))[ch] = v1;
      }
    }
    pd_free(ms);
    pd_free(bm);
  } else if (pd_tensor_numel(x) > 0 || v.c > 0)
    st = k_check(ctx, ctx->k->batch_norm(x->dtype, v.n, v.c, v.s, pd_tensor_data(x),
                                         pd_tensor_data(scale), pd_tensor_data(bias),
                                         pd_tensor_data(mean), pd_tensor_data(var), global,
                                         momentum, eps, pd_tensor_data(y),
                                         global ? NULL : pd_tensor_data(mo),
                                         global ? NULL : pd_tensor_data(vo),
                                         sm ? pd_tensor_data(sm) : NULL,
                                         sv ? pd_tensor_data(sv) : NULL),
                 x->dtype);
done:
  hold_free(&h);
  return st;
}

pd_status pd_kernel_batch_norm(pd_exec_ctx *ctx) { return bn_forward(ctx, false); }

/* Paddle's sync_batch_norm: the statistics over every rank's batch (in one process, its own:
 * batch_norm's values, through the same path as in a job, which the op table checks). */
pd_status pd_kernel_sync_batch_norm(pd_exec_ctx *ctx) { return bn_forward(ctx, true); }

/* sync_batch_norm_grad's dX with batch statistics over every rank: from the sums over every
 * rank's batch of dY and dY * xhat per channel (one all-reduce) and their count:
 * dX = scale * r * (dY - (sum dY + xhat * sum dY xhat) / count). dScale and dBias are this
 * rank's sums (the data-parallel pass sums them over the ranks as it does every gradient).
 * dx, dscale and dbias may each be NULL. */
static pd_status bn_sync_grad(const pd_exec_ctx *ctx, const pd_tensor *x, bn_shape v,
                              const pd_tensor *scale, const pd_tensor *sm, const pd_tensor *sv,
                              const pd_tensor *dy, pd_tensor *dx, pd_tensor *dscale,
                              pd_tensor *dbias) {
  double *sums = pd_calloc((size_t)v.c * 2 + 1, sizeof *sums);
  if (!sums) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  bool f32 = x->dtype == PD_FP32;
#define BN_AT(t, i) (f32 ? (double)((const float *)pd_tensor_data(t))[i] \
                         : ((const double *)pd_tensor_data(t))[i])
  for (int64_t i = 0; i < v.n; i++)
    for (int64_t ch = 0; ch < v.c; ch++)
      for (int64_t k = 0, o = (i * v.c + ch) * v.s; k < v.s; k++) {
        double g = BN_AT(dy, o + k), xh = (BN_AT(x, o + k) - BN_AT(sm, ch)) * BN_AT(sv, ch);
        sums[ch] += g;
        sums[v.c + ch] += g * xh;
      }
  for (int64_t ch = 0; ch < v.c; ch++) {  /* this rank's: the parameters' gradients */
    if (dbias && f32) ((float *)pd_tensor_data(dbias))[ch] = (float)sums[ch];
    else if (dbias) ((double *)pd_tensor_data(dbias))[ch] = sums[ch];
    if (dscale && f32) ((float *)pd_tensor_data(dscale))[ch] = (float)sums[v.c + ch];
    else if (dscale) ((double *)pd_tensor_data(dscale))[ch] = sums[v.c + ch];
  }
  sums[2 * v.c] = (double)v.n * (double)v.s;
  pd_error e = {0};
  pd_status st = dx ? pd_comm_allreduce_f64(sums, (int)(2 * v.c + 1), &e) : PD_OK;
  if (st) {
    st = pd_ctx_fail(ctx, st, "summing the gradient's statistics over the ranks: %s",
                     e.msg ? e.msg : pd_status_str(st));
    pd_error_clear(&e);
  }
  for (int64_t i = 0; !st && dx && i < v.n; i++)
    for (int64_t ch = 0; ch < v.c; ch++) {
      double r = BN_AT(sv, ch), a = BN_AT(scale, ch) * r, n = sums[2 * v.c];
      for (int64_t k = 0, o = (i * v.c + ch) * v.s; k < v.s; k++) {
        double xh = (BN_AT(x, o + k) - BN_AT(sm, ch)) * r;
        double d = a * (BN_AT(dy, o + k) - (sums[ch] + xh * sums[v.c + ch]) / n);
        if (f32) ((float *)pd_tensor_data(dx))[o + k] = (float)d;
        else ((double *)pd_tensor_data(dx))[o + k] = d;
      }
    }
#undef BN_AT
  pd_free(sums);
  return st;
}

/* dX, dScale, dBias from SavedMean and SavedVariance (the inverse std) of the forward run. */
static pd_status bn_backward(pd_exec_ctx *ctx, bool sync) {
  const pd_tensor *x, *scale, *sm, *sv, *dy;
  pd_tensor *dx, *dscale, *dbias;
  pd_status st;
  bn_shape v;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || (st = out_opt(ctx, "Scale@GRAD", &dscale)) ||
      (st = out_opt(ctx, "Bias@GRAD", &dbias)))
    return st;
  if (!dx && !dscale && !dbias) return PD_OK;
  if ((st = in1(ctx, "X", &x)) || (st = want_float(ctx, "X", x)) || (st = bn_view(ctx, x, &v)) ||
      (st = in1(ctx, "Scale", &scale)) || (st = in1(ctx, "SavedMean", &sm)) ||
      (st = in1(ctx, "SavedVariance", &sv)) || (st = in1(ctx, "Y@GRAD", &dy)) ||
      (st = want_vec(ctx, "Scale", scale, x, v.c, "channels")) ||
      (st = want_vec(ctx, "SavedMean", sm, x, v.c, "channels")) ||
      (st = want_vec(ctx, "SavedVariance", sv, x, v.c, "channels")) ||
      (st = want_same_dtype(ctx, "Y@GRAD", dy, "X", x)) ||
      (st = want_grad_shape(ctx, "Y@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {dx, dscale, dbias};
  const pd_tensor **ins[6] = {&x, &scale, &sm, &sv, &dy, NULL};
  for (int o = 0; o < 3 && !st; o++)
    for (int i = 0; ins[i] && !st; i++) {
      if (o == 0 && i == 4 && in_place(dx, dy, x->dtype, x->ndims, x->dims)) continue;
      st = unalias(ctx, &h, outs[o], ins[i]);
    }
  int64_t vd[1] = {v.c};
  if (!st && dx) st = resize_like(ctx, dx, x, x);
  if (!st && dscale) st = resize(ctx, dscale, x->dtype, 1, vd, NULL);
  if (!st && dbias) st = resize(ctx, dbias, x->dtype, 1, vd, NULL);
  if (!st && sync && !bn_global(ctx))
    st = bn_sync_grad(ctx, x, v, scale, sm, sv, dy, dx, dscale, dbias);
  else if (!st && (pd_tensor_numel(x) > 0 || v.c > 0))
    st = k_check(ctx, ctx->k->batch_norm_grad(
                          x->dtype, v.n, v.c, v.s, pd_tensor_data(x), pd_tensor_data(scale),
                          pd_tensor_data(sm), pd_tensor_data(sv), bn_global(ctx),
                          pd_tensor_data(dy), dx ? pd_tensor_data(dx) : NULL,
                          dscale ? pd_tensor_data(dscale) : NULL,
                          dbias ? pd_tensor_data(dbias) : NULL),
                 x->dtype);
  hold_free(&h);
  return st;
}

pd_status pd_kernel_batch_norm_grad(pd_exec_ctx *ctx) { return bn_backward(ctx, false); }

pd_status pd_kernel_sync_batch_norm_grad(pd_exec_ctx *ctx) { return bn_backward(ctx, true); }

/* ---- layer_norm ---- */

/* X as [rows, cols], split at begin_norm_axis. */
static pd_status ln_view(const pd_exec_ctx *ctx, const pd_tensor *x, int64_t *rows,
                         int64_t *cols) {
  char s[DIMS_BUF];
  int64_t b = pd_ctx_attr_int(ctx, "begin_norm_axis");
  if (b < 1 || b >= x->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "begin_norm_axis must be in [1, %d) for X (var '%s') %s, "
                       "got %" PRId64, x->ndims, in_name(ctx, "X", 0), shape_str(x, s), b);
  *rows = prod(x->dims, 0, (int)b);
  *cols = prod(x->dims, (int)b, x->ndims);
  return PD_OK;
}

pd_status pd_kernel_layer_norm(pd_exec_ctx *ctx) {
  const pd_tensor *x, *scale, *bias;
  pd_tensor *y, *mean, *var;
  pd_status st;
  int64_t rows, cols;
  double eps = pd_ctx_attr_float(ctx, "epsilon");
  if ((st = in1(ctx, "X", &x)) || (st = want_float(ctx, "X", x)) ||
      (st = ln_view(ctx, x, &rows, &cols)) || (st = in_opt(ctx, "Scale", &scale)) ||
      (st = in_opt(ctx, "Bias", &bias)) ||
      (scale && (st = want_vec(ctx, "Scale", scale, x, cols, "values per normalised row"))) ||
      (bias && (st = want_vec(ctx, "Bias", bias, x, cols, "values per normalised row"))) ||
      (st = out1(ctx, "Y", &y)) || (st = out_opt(ctx, "Mean", &mean)) ||
      (st = out_opt(ctx, "Variance", &var)))
    return st;
  if (!(eps >= 0)) return pd_ctx_fail(ctx, PD_EINVAL, "epsilon must be non-negative, got %g", eps);
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {y, mean, var};
  const pd_tensor **ins[4] = {&x, &scale, &bias, NULL};
  for (int o = 0; o < 3 && !st; o++)
    for (int i = 0; ins[i] && !st; i++) st = unalias(ctx, &h, outs[o], ins[i]);
  int64_t vd[1] = {rows};
  if (!st) st = resize_like(ctx, y, x, x);
  if (!st && mean) st = resize(ctx, mean, x->dtype, 1, vd, NULL);
  if (!st && var) st = resize(ctx, var, x->dtype, 1, vd, NULL);
  if (!st && pd_tensor_numel(x) > 0)
    st = k_check(ctx, ctx->k->layer_norm(x->dtype, rows, cols, pd_tensor_data(x),
                                         scale ? pd_tensor_data(scale) : NULL,
                                         bias ? pd_tensor_data(bias) : NULL, eps,
                                         pd_tensor_data(y), mean ? pd_tensor_data(mean) : NULL,
                                         var ? pd_tensor_data(var) : NULL),
                 x->dtype);
  hold_free(&h);
  return st;
}

pd_status pd_kernel_layer_norm_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *scale, *mean, *var, *dy;
  pd_tensor *dx, *dscale, *dbias;
  pd_status st;
  int64_t rows, cols;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || (st = out_opt(ctx, "Scale@GRAD", &dscale)) ||
      (st = out_opt(ctx, "Bias@GRAD", &dbias)))
    return st;
  if (!dx && !dscale && !dbias) return PD_OK;
  if ((st = in1(ctx, "X", &x)) || (st = want_float(ctx, "X", x)) ||
      (st = ln_view(ctx, x, &rows, &cols)) || (st = in_opt(ctx, "Scale", &scale)) ||
      (st = in1(ctx, "Mean", &mean)) || (st = in1(ctx, "Variance", &var)) ||
      (st = in1(ctx, "Y@GRAD", &dy)) ||
      (scale && (st = want_vec(ctx, "Scale", scale, x, cols, "values per normalised row"))) ||
      (st = want_vec(ctx, "Mean", mean, x, rows, "normalised rows")) ||
      (st = want_vec(ctx, "Variance", var, x, rows, "normalised rows")) ||
      (st = want_same_dtype(ctx, "Y@GRAD", dy, "X", x)) ||
      (st = want_grad_shape(ctx, "Y@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  if (dscale && !scale)
    return pd_ctx_fail(ctx, PD_EINVAL, "Scale@GRAD is wanted but Scale is not bound");
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {dx, dscale, dbias};
  const pd_tensor **ins[6] = {&x, &scale, &mean, &var, &dy, NULL};
  for (int o = 0; o < 3 && !st; o++)
    for (int i = 0; ins[i] && !st; i++) {
      if (o == 0 && i == 4 && in_place(dx, dy, x->dtype, x->ndims, x->dims)) continue;
      st = unalias(ctx, &h, outs[o], ins[i]);
    }
  int64_t vd[1] = {cols};
  if (!st && dx) st = resize_like(ctx, dx, x, x);
  if (!st && dscale) st = resize(ctx, dscale, x->dtype, 1, vd, NULL);
  if (!st && dbias) st = resize(ctx, dbias, x->dtype, 1, vd, NULL);
  if (!st && pd_tensor_numel(x) > 0)
    st = k_check(ctx, ctx->k->layer_norm_grad(
                          x->dtype, rows, cols, pd_tensor_data(x),
                          scale ? pd_tensor_data(scale) : NULL, pd_tensor_data(mean),
                          pd_tensor_data(var), pd_ctx_attr_float(ctx, "epsilon"),
                          pd_tensor_data(dy), dx ? pd_tensor_data(dx) : NULL,
                          dscale ? pd_tensor_data(dscale) : NULL,
                          dbias ? pd_tensor_data(dbias) : NULL),
                 x->dtype);
  hold_free(&h);
  return st;
}

/* ---- group_norm, instance_norm ---- */

/* X as the backend sees it: [n, c, s] in NCHW order (an NHWC X is [n, s, c] and computes in an
 * NCHW copy), in g groups of c / g channels: rows n * g of cols (c / g) * s values, each
 * normalised as layer_norm does a row. */
typedef struct gn_view {
  int64_t n, c, s, g;
  bool nhwc, inst;
} gn_view;

static pd_status gn_setup(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *scale,
                          const pd_tensor *bias, gn_view *v) {
  char s[DIMS_BUF];
  pd_status st;
  v->inst = ctx->def->kind == PD_OP_instance_norm;
  if ((st = want_float(ctx, "X", x))) return st;
  if (x->ndims < 2 || (v->inst && x->ndims > 5))
    return pd_ctx_fail(ctx, PD_ESHAPE, "X (var '%s') must have %s dims ([N, C, ...]), got %s",
                       in_name(ctx, "X", 0), v->inst ? "2 to 5" : "at least 2", shape_str(x, s));
  v->nhwc = !v->inst && strcmp(pd_ctx_attr_str(ctx, "data_layout"), "NHWC") == 0;
  v->n = x->dims[0];
  v->c = x->dims[v->nhwc ? x->ndims - 1 : 1];
  v->s = v->nhwc ? prod(x->dims, 1, x->ndims - 1) : prod(x->dims, 2, x->ndims);
  v->g = v->inst ? v->c : pd_ctx_attr_int(ctx, "groups");
  if (v->g < 1 || v->g > v->c || v->c % v->g)
    return pd_ctx_fail(ctx, PD_EINVAL, "groups %" PRId64 " must divide the %" PRId64 " channels "
                       "of X (var '%s') %s (data_layout %s)", v->g, v->c, in_name(ctx, "X", 0),
                       shape_str(x, s), v->nhwc ? "NHWC" : "NCHW");
  if ((scale && (st = want_vec(ctx, "Scale", scale, x, v->c, "channels"))) ||
      (bias && (st = want_vec(ctx, "Bias", bias, x, v->c, "channels"))))
    return st;
  double eps = pd_ctx_attr_float(ctx, "epsilon");
  if (!(eps >= 0)) return pd_ctx_fail(ctx, PD_EINVAL, "epsilon must be non-negative, got %g", eps);
  return PD_OK;
}

/* dst [n, c, s] = src [n, s, c] (to_nchw) or the reverse. */
static pd_status gn_transpose(const pd_exec_ctx *ctx, pd_dtype dt, const gn_view *v,
                              bool to_nchw, const void *src, void *dst) {
  int64_t d[3] = {v->n, to_nchw ? v->s : v->c, to_nchw ? v->c : v->s};
  return pd_ctx_check(ctx, ctx->k->transpose(dt, 3, d, (int[]){0, 2, 1}, src, dst), "transpose");
}

/* y [n, c, s] op= p [c] per channel. */
static pd_status gn_channel(const pd_exec_ctx *ctx, pd_dtype dt, const gn_view *v, pd_k_binop op,
                            const void *y, const pd_tensor *p, void *out) {
  return k_check(ctx, ctx->k->binary(op, dt, 3, (int64_t[]){v->n, v->c, v->s}, y, 1, &v->c,
                                     pd_tensor_data(p), 1, out),
                 dt);
}

/* group_norm, instance_norm: Y = (X - mean) / sqrt(variance + epsilon) * Scale + Bias, mean
 * and (biased) variance over each group of each instance. group_norm's Mean and Variance are
 * those; instance_norm's SavedVariance is 1 / sqrt(variance + epsilon), as Paddle saves it. */
pd_status pd_kernel_group_norm(pd_exec_ctx *ctx) {
  const pd_tensor *x, *scale, *bias;
  pd_tensor *y, *mean, *var;
  pd_status st;
  gn_view v;
  bool inst = ctx->def->kind == PD_OP_instance_norm;
  if ((st = in1(ctx, "X", &x)) || (st = in_opt(ctx, "Scale", &scale)) ||
      (st = in_opt(ctx, "Bias", &bias)) || (st = gn_setup(ctx, x, scale, bias, &v)) ||
      (st = out1(ctx, "Y", &y)) || (st = out_opt(ctx, inst ? "SavedMean" : "Mean", &mean)) ||
      (st = out_opt(ctx, inst ? "SavedVariance" : "Variance", &var)))
    return st;
  pd_dtype dt = x->dtype;
  double eps = pd_ctx_attr_float(ctx, "epsilon");
  char *bufs[2] = {NULL, NULL};
  void *tmp = NULL;
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {y, mean, var};
  const pd_tensor **ins[3] = {&x, &scale, &bias};
  for (int o = 0; o < 3 && !st; o++)
    for (int i = 0; i < 3 && !st; i++) st = unalias(ctx, &h, outs[o], ins[i]);
  int64_t sd[2] = {v.n, v.g}, nc = v.n * v.c;
  if (st || (st = resize_like(ctx, y, x, x)) ||
      (mean && (st = resize(ctx, mean, dt, inst ? 1 : 2, inst ? &nc : sd, NULL))) ||
      (var && (st = resize(ctx, var, dt, inst ? 1 : 2, inst ? &nc : sd, NULL))))
    goto done;
  if (pd_tensor_numel(x) == 0) goto done;
  const void *xs = pd_tensor_data(x);
  void *ys = pd_tensor_data(y);
  if (v.nhwc) {
    size_t bytes = (size_t)pd_tensor_numel(x) * pd_dtype_size(dt);
    if ((st = pd_ctx_scratch_n(ctx, 2, bufs, (size_t[]){bytes, bytes})) ||
        (st = gn_transpose(ctx, dt, &v, true, xs, bufs[0])))
      goto done;
    xs = bufs[0];
    ys = bufs[1];
  }
  if ((st = k_check(ctx, ctx->k->layer_norm(dt, v.n * v.g, v.c / v.g * v.s, xs, NULL, NULL, eps,
                                            ys, mean ? pd_tensor_data(mean) : NULL,
                                            var ? pd_tensor_data(var) : NULL),
                    dt)) ||
      (scale && (st = gn_channel(ctx, dt, &v, PD_K_MUL, ys, scale, ys))) ||
      (bias && (st = gn_channel(ctx, dt, &v, PD_K_ADD, ys, bias, ys))) ||
      (v.nhwc && (st = gn_transpose(ctx, dt, &v, false, ys, pd_tensor_data(y)))))
    goto done;
  if (inst && var) { /* variance -> 1 / sqrt(variance + epsilon) */
    scalar half = make_scalar(dt, -0.5);
    const void *hp = pd_ctx_at_place(ctx, &half, sizeof half, &tmp, &st);
    void *vd = pd_tensor_data(var);
    if (hp && !(st = k_check(ctx, ctx->k->scale(dt, nc, vd, 1.0, eps, vd), dt)))
      st = k_check(ctx, ctx->k->binary(PD_K_POW, dt, 1, &nc, vd, 0, NULL, hp, -1, vd), dt);
  }
done:
  pd_ctx_scratch_free(ctx, tmp);
  if (bufs[0]) pd_ctx_scratch_free_n(ctx, 2, bufs);
  hold_free(&h);
  return st;
}

/* Their gradient: the statistics and the normalised X recomputed from X (instance_norm keeps
 * only the inverse std), then dBias = sum(dY), dScale = sum(dY * xhat) per channel, and dX the
 * layer_norm gradient of each group given dY * Scale. */
pd_status pd_kernel_group_norm_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *scale, *bias, *dy;
  pd_tensor *dx, *dscale, *dbias;
  pd_status st;
  gn_view v;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || (st = out_opt(ctx, "Scale@GRAD", &dscale)) ||
      (st = out_opt(ctx, "Bias@GRAD", &dbias)))
    return st;
  if (!dx && !dscale && !dbias) return PD_OK;
  if ((st = in1(ctx, "X", &x)) || (st = in_opt(ctx, "Scale", &scale)) ||
      (st = in_opt(ctx, "Bias", &bias)) || (st = in1(ctx, "Y@GRAD", &dy)) ||
      (st = gn_setup(ctx, x, scale, bias, &v)) ||
      (st = want_grad_shape(ctx, "Y@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  if (dscale && !scale)
    return pd_ctx_fail(ctx, PD_EINVAL, "Scale@GRAD is wanted but Scale is not bound");
  if (dbias && !bias)
    return pd_ctx_fail(ctx, PD_EINVAL, "Bias@GRAD is wanted but Bias is not bound");
  pd_dtype dt = x->dtype;
  double eps = pd_ctx_attr_float(ctx, "epsilon");
  int64_t rows = v.n * v.g, cols = v.c / v.g * v.s, numel = pd_tensor_numel(x);
  int64_t d3[3] = {v.n, v.c, v.s};
  size_t sz = pd_dtype_size(dt), bytes = (size_t)(numel > 0 ? numel : 1) * sz;
  /* X and dY in NCHW (NHWC only), the normalised X, a product, dX in NCHW (NHWC only), the
   * mean and variance of each group. */
  enum { XS, GS, XHAT, TMP, DXS, MEAN, VAR, NBUF };
  char *bufs[NBUF] = {NULL};
  size_t sizes[NBUF] = {v.nhwc ? bytes : 1, v.nhwc ? bytes : 1, bytes, bytes,
                        v.nhwc && dx ? bytes : 1, (size_t)(rows > 0 ? rows : 1) * sz,
                        (size_t)(rows > 0 ? rows : 1) * sz};
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {dx, dscale, dbias};
  const pd_tensor **ins[4] = {&x, &scale, &bias, &dy};
  for (int o = 0; o < 3 && !st; o++)
    for (int i = 0; i < 4 && !st; i++) {
      if (o == 0 && i == 3 && in_place(dx, dy, dt, x->ndims, x->dims) && !v.nhwc) continue;
      st = unalias(ctx, &h, outs[o], ins[i]);
    }
  if (st || (dx && (st = resize_like(ctx, dx, x, x))) ||
      (dscale && (st = resize(ctx, dscale, dt, 1, &v.c, NULL))) ||
      (dbias && (st = resize(ctx, dbias, dt, 1, &v.c, NULL))))
    goto done;
  if (numel == 0) {
    for (int o = 1; o < 3 && !st; o++)
      if (outs[o]) st = k_check(ctx, ctx->k->fill(dt, v.c, pd_tensor_data(outs[o]), 0), dt);
    goto done;
  }
  if ((st = pd_ctx_scratch_n(ctx, NBUF, bufs, sizes))) goto done;
  const void *xs = pd_tensor_data(x), *gs = pd_tensor_data(dy);
  if (v.nhwc) {
    if ((st = gn_transpose(ctx, dt, &v, true, xs, bufs[XS])) ||
        (st = gn_transpose(ctx, dt, &v, true, gs, bufs[GS])))
      goto done;
    xs = bufs[XS];
    gs = bufs[GS];
  }
  const int axes[2] = {0, 2};
  if ((st = k_check(ctx, ctx->k->layer_norm(dt, rows, cols, xs, NULL, NULL, eps, bufs[XHAT],
                                            bufs[MEAN], bufs[VAR]),
                    dt)) ||
      (dbias && (st = k_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, 3, d3, gs, 2, axes,
                                                  pd_tensor_data(dbias)),
                              dt))))
    goto done;
  if (dscale &&
      ((st = k_check(ctx, ctx->k->binary(PD_K_MUL, dt, 3, d3, gs, 3, d3, bufs[XHAT], -1,
                                         bufs[TMP]),
                     dt)) ||
       (st = k_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, 3, d3, bufs[TMP], 2, axes,
                                         pd_tensor_data(dscale)),
                     dt))))
    goto done;
  if (!dx) goto done;
  const void *g = gs;
  if (scale) {
    if ((st = gn_channel(ctx, dt, &v, PD_K_MUL, gs, scale, bufs[TMP]))) goto done;
    g = bufs[TMP];
  }
  void *dxs = v.nhwc ? bufs[DXS] : pd_tensor_data(dx);
  if (!(st = k_check(ctx, ctx->k->layer_norm_grad(dt, rows, cols, xs, NULL, bufs[MEAN],
                                                  bufs[VAR], eps, g, dxs, NULL, NULL),
                     dt)) &&
      v.nhwc)
    st = gn_transpose(ctx, dt, &v, false, dxs, pd_tensor_data(dx));
done:
  if (bufs[0]) pd_ctx_scratch_free_n(ctx, NBUF, bufs);
  hold_free(&h);
  return st;
}

/* ---- affine_channel ---- */

/* X as [n, c, s]: NCHW [N, C, rest] or otherwise (NHWC, AnyLayout) [N * rest, C, 1]; Scale and
 * Bias [c]. */
static pd_status ac_setup(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *scale,
                          const pd_tensor *bias, gn_view *v) {
  char s[DIMS_BUF];
  pd_status st;
  if ((st = want_float(ctx, "X", x))) return st;
  if (x->ndims < 2)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X (var '%s') must have at least 2 dims ([N, C, ...]), "
                       "got %s", in_name(ctx, "X", 0), shape_str(x, s));
  bool nhwc = strcmp(pd_ctx_attr_str(ctx, "data_layout"), "NCHW") != 0;
  *v = nhwc ? (gn_view){prod(x->dims, 0, x->ndims - 1), x->dims[x->ndims - 1], 1, 1, true, false}
            : (gn_view){x->dims[0], x->dims[1], prod(x->dims, 2, x->ndims), 1, false, false};
  if ((st = want_vec(ctx, "Scale", scale, x, v->c, "channels")) ||
      (st = want_vec(ctx, "Bias", bias, x, v->c, "channels")))
    return st;
  return PD_OK;
}

/* affine_channel: Out = X * Scale + Bias per channel. */
pd_status pd_kernel_affine_channel(pd_exec_ctx *ctx) {
  const pd_tensor *x, *scale, *bias;
  pd_tensor *out;
  pd_status st;
  gn_view v;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Scale", &scale)) ||
      (st = in1(ctx, "Bias", &bias)) || (st = ac_setup(ctx, x, scale, bias, &v)) ||
      (st = out1(ctx, "Out", &out)))
    return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if (!in_place(out, x, dt, x->ndims, x->dims)) st = unalias(ctx, &h, out, &x);
  if (!st && !(st = unalias(ctx, &h, out, &scale)) && !(st = unalias(ctx, &h, out, &bias)) &&
      !(st = resize_like(ctx, out, x, x)) && pd_tensor_numel(x) > 0 &&
      !(st = gn_channel(ctx, dt, &v, PD_K_MUL, pd_tensor_data(x), scale, pd_tensor_data(out))))
    st = gn_channel(ctx, dt, &v, PD_K_ADD, pd_tensor_data(out), bias, pd_tensor_data(out));
  hold_free(&h);
  return st;
}

/* Its gradient: X@GRAD = Out@GRAD * Scale, Scale@GRAD = the sum of Out@GRAD * X and
 * Bias@GRAD that of Out@GRAD, per channel. */
pd_status pd_kernel_affine_channel_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *scale, *bias, *dy;
  pd_tensor *dx, *dscale, *dbias;
  pd_status st;
  gn_view v;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || (st = out_opt(ctx, "Scale@GRAD", &dscale)) ||
      (st = out_opt(ctx, "Bias@GRAD", &dbias)))
    return st;
  if (!dx && !dscale && !dbias) return PD_OK;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Scale", &scale)) ||
      (st = in1(ctx, "Bias", &bias)) || (st = in1(ctx, "Out@GRAD", &dy)) ||
      (st = ac_setup(ctx, x, scale, bias, &v)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  pd_dtype dt = x->dtype;
  int64_t d3[3] = {v.n, v.c, v.s}, numel = pd_tensor_numel(x);
  const int axes[2] = {0, 2};
  void *tmp = NULL;
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {dx, dscale, dbias};
  const pd_tensor **ins[4] = {&x, &scale, &bias, &dy};
  for (int o = 0; o < 3 && !st; o++)
    for (int i = 0; i < 4 && !st; i++) st = unalias(ctx, &h, outs[o], ins[i]);
  if (st || (dx && (st = resize_like(ctx, dx, x, x))) ||
      (dscale && (st = resize_like(ctx, dscale, scale, scale))) ||
      (dbias && (st = resize_like(ctx, dbias, bias, bias))))
    goto done;
  if (numel == 0) {
    for (int o = 1; o < 3 && !st; o++)
      if (outs[o]) st = k_check(ctx, ctx->k->fill(dt, v.c, pd_tensor_data(outs[o]), 0), dt);
    goto done;
  }
  if (dbias && (st = k_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, 3, d3, pd_tensor_data(dy), 2,
                                                 axes, pd_tensor_data(dbias)),
                             dt)))
    goto done;
  if (dscale &&
      (!(tmp = pd_ctx_scratch(ctx, (size_t)numel * pd_dtype_size(dt), &st)) ||
       (st = k_check(ctx, ctx->k->binary(PD_K_MUL, dt, 3, d3, pd_tensor_data(dy), 3, d3,
                                         pd_tensor_data(x), -1, tmp),
                     dt)) ||
       (st = k_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, 3, d3, tmp, 2, axes,
                                         pd_tensor_data(dscale)),
                     dt))))
    goto done;
  if (dx) st = gn_channel(ctx, dt, &v, PD_K_MUL, pd_tensor_data(dy), scale, pd_tensor_data(dx));
done:
  pd_ctx_scratch_free(ctx, tmp);
  hold_free(&h);
  return st;
}
