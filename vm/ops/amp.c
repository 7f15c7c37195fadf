/* amp.c -- the loss-scaling ops of fp16 mixed-precision training (Fluid's, as vm/passes/amp.h
 * appends them): check_finite_and_unscale (the gradients divided by the loss scale, and whether
 * any was not finite) and update_loss_scaling (the dynamic scale: backed off after bad steps,
 * grown after a run of good ones; the gradients zeroed on a bad step). Shape functions and
 * kernels. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* Out[i] is shaped like X[i]; as many of each. */
static pd_status outs_like_xs(pd_infer_ctx *c) {
  int n = pd_infer_nin(c, "X");
  if (pd_infer_nout(c, "Out") != n)
    return pd_infer_fail(c, PD_EINVAL, "Out must list as many vars as X (%d), got %d", n,
                         pd_infer_nout(c, "Out"));
  pd_status st;
  for (int i = 0; i < n; i++) {
    const pd_var_desc *v;
    pd_infer_dims d;
    if ((st = pd_infer_in(c, "X", i, &v, &d))) return st;
    if (v->dtype != PD_FP32 && v->dtype != PD_FP64)
      return pd_infer_fail(c, PD_ETYPE, "X[%d] ('%s') must be float32 or float64, got %s", i,
                           v->name, pd_dtype_name(v->dtype));
    if ((st = pd_infer_set_out(c, "Out", i, &d, v->dtype, v->lod_level))) return st;
  }
  return PD_OK;
}

/* A one-element input of one of the dtypes a..b (PD_FP32 and PD_FP64, or PD_INT32 alone, or
 * PD_BOOL alone). */
static pd_status one_elem(pd_infer_ctx *c, const char *slot, pd_dtype a, pd_dtype b,
                          const pd_var_desc **v, pd_infer_dims *d) {
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, slot, 0, v, d);
  if (st) return st;
  int64_t n = pd_infer_dims_numel(d);
  if (n >= 0 && n != 1)
    return pd_infer_fail(c, PD_ESHAPE, "%s must hold one element, got %s", slot,
                         pd_infer_dims_str(d, s));
  if ((*v)->dtype != a && (*v)->dtype != b) {
    if (a == b)
      return pd_infer_fail(c, PD_ETYPE, "%s must be %s, got %s", slot, pd_dtype_name(a),
                           pd_dtype_name((*v)->dtype));
    return pd_infer_fail(c, PD_ETYPE, "%s must be %s or %s, got %s", slot, pd_dtype_name(a),
                         pd_dtype_name(b), pd_dtype_name((*v)->dtype));
  }
  return PD_OK;
}

pd_status pd_infer_check_finite_and_unscale(pd_infer_ctx *c) {
  const pd_var_desc *v;
  pd_infer_dims d;
  pd_status st;
  if ((st = one_elem(c, "Scale", PD_FP32, PD_FP64, &v, &d)) || (st = outs_like_xs(c))) return st;
  pd_infer_dims one = {1, {1}};
  return pd_infer_set_out(c, "FoundInfinite", 0, &one, PD_BOOL, 0);
}

pd_status pd_infer_update_loss_scaling(pd_infer_ctx *c) {
  const pd_var_desc *v;
  pd_infer_dims d;
  pd_status st;
  if ((st = one_elem(c, "FoundInfinite", PD_BOOL, PD_BOOL, &v, &d)) ||
      (st = one_elem(c, "InGoodSteps", PD_INT32, PD_INT32, &v, &d)) ||
      (st = pd_infer_set_out(c, "OutGoodSteps", 0, &d, PD_INT32, 0)) ||
      (st = one_elem(c, "InBadSteps", PD_INT32, PD_INT32, &v, &d)) ||
      (st = pd_infer_set_out(c, "OutBadSteps", 0, &d, PD_INT32, 0)) ||
      (pd_infer_nin(c, "StopUpdate") &&
       (st = one_elem(c, "StopUpdate", PD_BOOL, PD_BOOL, &v, &d))) ||
      (st = one_elem(c, "PrevLossScaling", PD_FP32, PD_FP64, &v, &d)) ||
      (st = pd_infer_set_out(c, "LossScaling", 0, &d, v->dtype, 0)) || (st = outs_like_xs(c)))
    return st;
  int64_t incr = pd_infer_attr_int(c, "incr_every_n_steps"),
          decr = pd_infer_attr_int(c, "decr_every_n_nan_or_inf");
  if (incr < 1 || decr < 1)
    return pd_infer_fail(c, PD_EINVAL, "incr_every_n_steps and decr_every_n_nan_or_inf count "
                         "steps: each must be >= 1, got %lld and %lld", (long long)incr,
                         (long long)decr);
  return PD_OK;
}

/* ================================================================ kernels */

/* X[i] (floating point) and Out[i], the same var or one no other X is. */
static pd_status x_out_at(const pd_exec_ctx *ctx, int i, const pd_tensor **x, pd_tensor **out) {
  pd_status st;
  if ((st = in_at(ctx, "X", i, true, x)) || (st = want_float(ctx, "X", *x)) ||
      (st = out_at(ctx, "Out", i, true, out)))
    return st;
  for (int j = 0; j < pd_ctx_nin(ctx, "X"); j++)
    if (j != i && pd_ctx_in_at(ctx, "X", j) == *out)
      return pd_ctx_fail(ctx, PD_EINVAL, "Out[%d] ('%s') is X[%d]: each Out must be its own X "
                         "or a var of its own", i, pd_ctx_out_name(ctx, "Out", i), j);
  return PD_OK;
}

static pd_status same_count(const pd_exec_ctx *ctx) {
  int n = pd_ctx_nin(ctx, "X");
  if (pd_ctx_nout(ctx, "Out") != n)
    return pd_ctx_fail(ctx, PD_EINVAL, "Out must list as many vars as X (%d), got %d", n,
                       pd_ctx_nout(ctx, "Out"));
  return PD_OK;
}

/* check_finite_and_unscale (Fluid): Out[i] = X[i] * (1 / Scale), the inverse in X's dtype;
 * FoundInfinite = whether any element of any X is an infinity or NaN. */
pd_status pd_kernel_check_finite_and_unscale(pd_exec_ctx *ctx) {
  const pd_tensor *sc;
  pd_tensor *found;
  double scale;
  pd_status st;
  int64_t one = 1;
  if ((st = in1(ctx, "Scale", &sc)) || (st = want_float(ctx, "Scale", sc)) ||
      (st = scalar_in(ctx, "Scale", sc, &scale)) || (st = same_count(ctx)) ||
      (st = out1(ctx, "FoundInfinite", &found)) ||
      (st = resize(ctx, found, PD_BOOL, 1, &one, NULL)) ||
      (st = k_check(ctx, ctx->k->fill(PD_BOOL, 1, pd_tensor_data(found), 0), PD_BOOL)))
    return st;
  if (!(scale != 0) || !isfinite(scale))
    return pd_ctx_fail(ctx, PD_EINVAL, "Scale must be a finite number other than 0, got %g",
                       scale);
  for (int i = 0; i < pd_ctx_nin(ctx, "X"); i++) {
    const pd_tensor *x;
    pd_tensor *out;
    if ((st = x_out_at(ctx, i, &x, &out))) return st;
    const void *xd = pd_tensor_data(x);
    pd_dtype dt = x->dtype;
    int64_t n = pd_tensor_numel(x);
    if ((st = resize_like(ctx, out, x, x))) return st;
    double inv = dt == PD_FP32 ? (double)(float)(1.0 / (float)scale) : 1.0 / scale;
    if ((st = k_check(ctx, ctx->k->unscale(dt, n, xd, inv, pd_tensor_data(out),
                                            (bool *)pd_tensor_data(found)),
                      dt)))
      return st;
  }
  return PD_OK;
}

/* One one-element host input as a double (bool and int32 as their values). */
static pd_status scalar_slot(const pd_exec_ctx *ctx, const char *slot, double *v) {
  const pd_tensor *t;
  pd_status st = in1(ctx, slot, &t);
  return st ? st : scalar_in(ctx, slot, t, v);
}

/* A one-element output of dtype dt (shape [1]) set to v. */
static pd_status scalar_out(const pd_exec_ctx *ctx, const char *slot, pd_dtype dt, double v) {
  pd_tensor *o;
  int64_t one = 1;
  pd_status st;
  if ((st = out1(ctx, slot, &o)) || (st = resize(ctx, o, dt, 1, &one, NULL))) return st;
  switch (dt) {
    case PD_FP32: PD_TENSOR_F32(o)[0] = (float)v; break;
    case PD_FP64: PD_TENSOR_F64(o)[0] = v; break;
    default: ((int32_t *)pd_tensor_data(o))[0] = (int32_t)v; break;
  }
  return PD_OK;
}

/* update_loss_scaling (Fluid): on a step with FoundInfinite every Out is zeros (so an update
 * that reads them moves nothing); else Out is X. Then, unless stop_update (the attribute, or
 * the StopUpdate input when given): a bad step resets the good steps and counts a bad one, and
 * the decr_every_n_nan_or_inf-th bad step multiplies the scale by decr_ratio (never below 1)
 * and resets the count; a good step resets the bad steps, and the incr_every_n_steps-th good
 * step multiplies the scale by incr_ratio (kept when that is not finite) and resets the count.
 * The scale is computed in its own dtype. */
pd_status pd_kernel_update_loss_scaling(pd_exec_ctx *ctx) {
  double found, prev, good, bad, stop = pd_ctx_attr_bool(ctx, "stop_update");
  const pd_tensor *pt, *t;
  pd_status st;
  if ((st = scalar_slot(ctx, "FoundInfinite", &found)) ||
      (st = scalar_slot(ctx, "InGoodSteps", &good)) ||
      (st = scalar_slot(ctx, "InBadSteps", &bad)) || (st = in1(ctx, "PrevLossScaling", &pt)) ||
      (st = want_float(ctx, "PrevLossScaling", pt)) ||
      (st = scalar_in(ctx, "PrevLossScaling", pt, &prev)) || (st = same_count(ctx)))
    return st;
  if ((t = in_if_set(ctx, "StopUpdate", 0)) && (st = scalar_in(ctx, "StopUpdate", t, &stop)))
    return st;
  pd_dtype sdt = pt->dtype;
  for (int i = 0; i < pd_ctx_nin(ctx, "X"); i++) {
    const pd_tensor *x;
    pd_tensor *out;
    if ((st = x_out_at(ctx, i, &x, &out))) return st;
    if (found != 0) {
      pd_dtype dt = x->dtype;
      if ((st = resize_like(ctx, out, x, x)) ||
          (st = k_check(ctx, ctx->k->fill(dt, pd_tensor_numel(out), pd_tensor_data(out), 0),
                        dt)))
        return st;
    } else if ((st = copy_var(ctx, pd_ctx_in_var(ctx, "X", i), "X", pd_ctx_out_var(ctx, "Out", i),
                              "Out"))) {
      return st;
    }
  }
  if (stop != 0) return PD_OK;
  int64_t incr = pd_ctx_attr_int(ctx, "incr_every_n_steps"),
          decr = pd_ctx_attr_int(ctx, "decr_every_n_nan_or_inf");
  double incr_ratio = pd_ctx_attr_float(ctx, "incr_ratio"),
         decr_ratio = pd_ctx_attr_float(ctx, "decr_ratio");
  double scale = prev;
  if (found != 0) {
    good = 0;
    if (++bad == (double)decr) {
      scale = sdt == PD_FP32 ? (double)((float)prev * (float)decr_ratio) : prev * decr_ratio;
      if (scale < 1) scale = 1;
      bad = 0;
    }
  } else {
    bad = 0;
    if (++good == (double)incr) {
      double s = sdt == PD_FP32 ? (double)((float)prev * (float)incr_ratio) : prev * incr_ratio;
      if (isfinite(s)) scale = s;
      good = 0;
    }
  }
  if ((st = scalar_out(ctx, "LossScaling", sdt, scale)) ||
      (st = scalar_out(ctx, "OutGoodSteps", PD_INT32, good)))
    return st;
  return scalar_out(ctx, "OutBadSteps", PD_INT32, bad);
}
