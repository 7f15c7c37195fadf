/* optim.c -- the optimizers as ops: sgd, momentum (Nesterov, L2 regularisation), adam (with
 * Fluid's beta pow accumulators), adamw (decoupled weight decay), rmsprop and adagrad: their
 * shape function and kernels. The optimizer pass
 * (vm/passes/optimizer.h) appends them after the backward pass. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* Inputs that hold one number (a rate, a running power of beta, a flag), not one per parameter
 * element. Every other input (Grad, Velocity, Moment1, ...) is shaped like Param. */
static bool is_scalar_slot(const char *name) {
  static const char *const scalars[] = {"LearningRate", "Beta1Pow", "Beta2Pow", "Beta1Tensor",
                                        "Beta2Tensor", "EpsilonTensor", "SkipUpdate"};
  for (size_t i = 0; i < PD_ARRAY_LEN(scalars); i++)
    if (strcmp(name, scalars[i]) == 0) return true;
  return false;
}

pd_status pd_infer_optimizer(pd_infer_ctx *c) {
  const pd_var_desc *param;
  pd_infer_dims dp;
  char sp[PD_DIMS_BUF], sv[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "Param", 0, &param, &dp);
  if (st) return st;
  for (int i = 0; i < c->def->ninputs; i++) {
    const char *slot = c->def->inputs[i].name;
    if (strcmp(slot, "Param") == 0 || pd_infer_nin(c, slot) == 0) continue;
    const pd_var_desc *v;
    pd_infer_dims d;
    if ((st = pd_infer_in(c, slot, 0, &v, &d))) return st;
    if (is_scalar_slot(slot)) {
      int64_t n = pd_infer_dims_numel(&d);
      if (n >= 0 && n != 1)
        return pd_infer_fail(c, PD_ESHAPE, "%s must hold one element, got %s", slot,
                             pd_infer_dims_str(&d, sv));
      continue;
    }
    if ((st = pd_infer_same_dtype(c, slot, v->dtype, "Param", param->dtype))) return st;
    bool same = true;
    if (d.n >= 0 && dp.n >= 0) {
      same = d.n == dp.n;
      for (int k = 0; same && k < d.n; k++) same = pd_infer_dim_compatible(d.d[k], dp.d[k]);
    }
    if (!same)
      return pd_infer_fail(c, PD_ESHAPE, "%s %s must have the shape of Param %s", slot,
                           pd_infer_dims_str(&d, sv), pd_infer_dims_str(&dp, sp));
  }
  /* FooOut <- Foo. */
  for (int i = 0; i < c->def->noutputs; i++) {
    const char *out = c->def->outputs[i].name;
    size_t len = strlen(out);
    char in[64];
    if (len < 4 || len - 3 >= sizeof in || strcmp(out + len - 3, "Out") != 0) continue;
    memcpy(in, out, len - 3);
    in[len - 3] = '\0';
    if (pd_infer_nout(c, out) == 0 || pd_infer_nin(c, in) == 0) continue;
    const pd_var_desc *v;
    pd_infer_dims d;
    if ((st = pd_infer_in(c, in, 0, &v, &d)) ||
        (st = pd_infer_set_out(c, out, 0, &d, v->dtype, v->lod_level)))
      return st;
  }
  return PD_OK;
}

/* ================================================================ optimizers */

/* An optimizer input shaped like Param, of Param's dtype. */
static pd_status like_param(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *param,
                            const pd_tensor **t) {
  char s1[DIMS_BUF], s2[DIMS_BUF];
  pd_status st = in_at(ctx, slot, 0, true, t);
  if (st) return st;
  if ((*t)->dtype != param->dtype)
    return pd_ctx_fail(ctx, PD_ETYPE, "%s holds %s but Param holds %s", slot,
                       pd_dtype_name((*t)->dtype), pd_dtype_name(param->dtype));
  if (pd_tensor_numel(*t) != pd_tensor_numel(param))
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s %s must have the shape of Param %s", slot,
                       shape_str(*t, s1), shape_str(param, s2));
  return PD_OK;
}

/* The output FooOut for input foo: resized to foo's shape (in place when it is foo's var). */
static pd_status update_out(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *like,
                            pd_tensor **out) {
  pd_status st = out_at(ctx, slot, 0, true, out);
  if (st) return st;
  return resize(ctx, *out, like->dtype, like->ndims, like->dims, like);
}

static pd_status no_multi_precision(const pd_exec_ctx *ctx) {
  if (pd_ctx_attr_bool(ctx, "multi_precision"))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "multi_precision (float16 parameters with float32 "
                       "master weights) is not supported");
  return PD_OK;
}

/* What every optimizer kernel reads first: Param (floating point), Grad shaped like it, and the
 * one value of LearningRate (no multi_precision). */
static pd_status opt_begin(const pd_exec_ctx *ctx, const pd_tensor **param,
                           const pd_tensor **grad, double *lr) {
  const pd_tensor *lrt;
  pd_status st;
  if ((st = no_multi_precision(ctx)) || (st = in_at(ctx, "Param", 0, true, param)) ||
      (st = want_float(ctx, "Param", *param)) || (st = like_param(ctx, "Grad", *param, grad)) ||
      (st = in_at(ctx, "LearningRate", 0, true, &lrt)) ||
      (st = scalar_in(ctx, "LearningRate", lrt, lr)))
    return st;
  return PD_OK;
}

/* sgd: ParamOut = Param - LearningRate * Grad. */
pd_status pd_kernel_sgd(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad;
  pd_tensor *pout;
  double lr;
  pd_status st;
  if ((st = opt_begin(ctx, &param, &grad, &lr))) return st;
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad);
  int64_t n = pd_tensor_numel(param);
  if ((st = update_out(ctx, "ParamOut", param, &pout))) return st;
  FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd;
    T *o = (T *)pd_tensor_data(pout);
    for (int64_t i = 0; i < n; i++) o[i] = (T)(p[i] - lr * g[i]);
  });
  return PD_OK;
}

/* momentum (Fluid): g = Grad * rescale_grad (+ regularization_coeff * Param with l2_decay);
 * VelocityOut = mu * Velocity + g; ParamOut = Param - lr * VelocityOut, or with use_nesterov
 * Param - lr * (g + mu * VelocityOut). */
pd_status pd_kernel_momentum(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad, *vel;
  pd_tensor *pout, *vout;
  double lr;
  pd_status st;
  if ((st = opt_begin(ctx, &param, &grad, &lr)) ||
      (st = like_param(ctx, "Velocity", param, &vel)))
    return st;
  double mu = pd_ctx_attr_float(ctx, "mu"), rescale = pd_ctx_attr_float(ctx, "rescale_grad");
  double l2 = strcmp(pd_ctx_attr_str(ctx, "regularization_method"), "l2_decay") == 0
                  ? pd_ctx_attr_float(ctx, "regularization_coeff")
                  : 0.0;
  bool nesterov = pd_ctx_attr_bool(ctx, "use_nesterov");
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad), *vd = pd_tensor_data(vel);
  int64_t n = pd_tensor_numel(param);
  if ((st = update_out(ctx, "ParamOut", param, &pout)) ||
      (st = update_out(ctx, "VelocityOut", vel, &vout)))
    return st;
  if (pout == vout) return pd_ctx_fail(ctx, PD_EINVAL, "ParamOut and VelocityOut are one var");
  FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd, *v = vd;
    T *po = (T *)pd_tensor_data(pout), *vo = (T *)pd_tensor_data(vout);
    for (int64_t i = 0; i < n; i++) {
      double pi = p[i], gi = (double)g[i] * rescale + l2 * pi;
      double vn = (double)v[i] * mu + gi;
      vo[i] = (T)vn;
      po[i] = (T)(pi - lr * (nesterov ? gi + vn * mu : vn));
    }
  });
  return PD_OK;
}

/* adam (Fluid): lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow); m1 = b1 m1 + (1 - b1) g;
 * m2 = b2 m2 + (1 - b2) g^2; p -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 - beta2_pow));
 * Beta1PowOut = beta1_pow * b1, Beta2PowOut likewise (unless use_global_beta_pow). Beta1Tensor,
 * Beta2Tensor, EpsilonTensor override the attributes; a true SkipUpdate copies the inputs to
 * the outputs unchanged. */
pd_status pd_kernel_adam(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad, *m1, *m2, *b1p, *b2p, *t;
  pd_tensor *pout, *m1o, *m2o, *b1o = NULL, *b2o = NULL;
  double lr, beta1 = pd_ctx_attr_float(ctx, "beta1"), beta2 = pd_ctx_attr_float(ctx, "beta2"),
             eps = pd_ctx_attr_float(ctx, "epsilon"), bp1, bp2;
  pd_status st;
  if ((st = opt_begin(ctx, &param, &grad, &lr)) ||
      (st = like_param(ctx, "Moment1", param, &m1)) ||
      (st = like_param(ctx, "Moment2", param, &m2)) ||
      (st = in_at(ctx, "Beta1Pow", 0, true, &b1p)) ||
      (st = scalar_in(ctx, "Beta1Pow", b1p, &bp1)) ||
      (st = in_at(ctx, "Beta2Pow", 0, true, &b2p)) ||
      (st = scalar_in(ctx, "Beta2Pow", b2p, &bp2)) || (st = want_float(ctx, "Beta1Pow", b1p)) ||
      (st = want_float(ctx, "Beta2Pow", b2p)))
    return st;
  if ((t = in_if_set(ctx, "Beta1Tensor", 0)) && (st = scalar_in(ctx, "Beta1Tensor", t, &beta1)))
    return st;
  if ((t = in_if_set(ctx, "Beta2Tensor", 0)) && (st = scalar_in(ctx, "Beta2Tensor", t, &beta2)))
    return st;
  if ((t = in_if_set(ctx, "EpsilonTensor", 0)) && (st = scalar_in(ctx, "EpsilonTensor", t, &eps)))
    return st;
  double skip = 0;
  if ((t = in_if_set(ctx, "SkipUpdate", 0)) && (st = scalar_in(ctx, "SkipUpdate", t, &skip)))
    return st;
  bool global_pow = pd_ctx_attr_bool(ctx, "use_global_beta_pow");
  if (skip != 0) {
    static const char *const pairs[][2] = {{"Param", "ParamOut"}, {"Moment1", "Moment1Out"},
                                           {"Moment2", "Moment2Out"}, {"Beta1Pow", "Beta1PowOut"},
                                           {"Beta2Pow", "Beta2PowOut"}};
    for (size_t i = 0; i < PD_ARRAY_LEN(pairs) && !st; i++)
      st = copy_var(ctx, pd_ctx_in_var(ctx, pairs[i][0], 0), pairs[i][0],
                    pd_ctx_out_var(ctx, pairs[i][1], 0), pairs[i][1]);
    return st;
  }
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad), *m1d = pd_tensor_data(m1),
             *m2d = pd_tensor_data(m2);
  int64_t n = pd_tensor_numel(param);
  pd_dtype b1dt = b1p->dtype, b2dt = b2p->dtype;
  int b1nd = b1p->ndims, b2nd = b2p->ndims;
  int64_t b1dims[MAXD], b2dims[MAXD];
  memcpy(b1dims, b1p->dims, sizeof(int64_t) * (size_t)b1nd);
  memcpy(b2dims, b2p->dims, sizeof(int64_t) * (size_t)b2nd);
  if ((st = update_out(ctx, "ParamOut", param, &pout)) ||
      (st = update_out(ctx, "Moment1Out", m1, &m1o)) ||
      (st = update_out(ctx, "Moment2Out", m2, &m2o)))
    return st;
  if (pout == m1o || pout == m2o || m1o == m2o)
    return pd_ctx_fail(ctx, PD_EINVAL, "ParamOut, Moment1Out and Moment2Out must be distinct vars");
  if (!global_pow && ((st = out_at(ctx, "Beta1PowOut", 0, true, &b1o)) ||
                      (st = out_at(ctx, "Beta2PowOut", 0, true, &b2o))))
    return st;
  double lr_t = lr * sqrt(1 - bp2) / (1 - bp1), eps_t = eps * sqrt(1 - bp2);
  if (ctx->k->adam) {  /* the backend's: split across threads */
    if ((st = pd_ctx_check(ctx, ctx->k->adam(param->dtype, n, pd, gd, m1d, m2d, beta1, beta2,
                                             lr_t, eps_t, pd_tensor_data(pout),
                                             pd_tensor_data(m1o), pd_tensor_data(m2o)),
                           "adam")))
      return st;
  } else FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd, *a = m1d, *b = m2d;
    T *po = (T *)pd_tensor_data(pout), *ao = (T *)pd_tensor_data(m1o),
      *bo = (T *)pd_tensor_data(m2o);
    for (int64_t i = 0; i < n; i++) {
      double gi = g[i], mom1 = beta1 * a[i] + (1 - beta1) * gi,
             mom2 = beta2 * b[i] + (1 - beta2) * gi * gi;
      ao[i] = (T)mom1;
      bo[i] = (T)mom2;
      po[i] = (T)(p[i] - lr_t * (mom1 / (sqrt(mom2) + eps_t)));
    }
  });
  if (global_pow) return PD_OK;
  if ((st = resize(ctx, b1o, b1dt, b1nd, b1dims, NULL)) ||
      (st = resize(ctx, b2o, b2dt, b2nd, b2dims, NULL)))
    return st;
  if (b1dt == PD_FP32) PD_TENSOR_F32(b1o)[0] = (float)(bp1 * beta1);
  else PD_TENSOR_F64(b1o)[0] = bp1 * beta1;
  if (b2dt == PD_FP32) PD_TENSOR_F32(b2o)[0] = (float)(bp2 * beta2);
  else PD_TENSOR_F64(b2o)[0] = bp2 * beta2;
  return PD_OK;
}

/* The beta pow accumulators' next values, bp * beta (in their own dtype and shape). */
static pd_status next_pow(const pd_exec_ctx *ctx, const char *slot, pd_dtype dt, int nd,
                          const int64_t *dims, double v) {
  pd_tensor *o;
  pd_status st;
  if ((st = out_at(ctx, slot, 0, true, &o)) || (st = resize(ctx, o, dt, nd, dims, NULL))) return st;
  if (dt == PD_FP32) PD_TENSOR_F32(o)[0] = (float)v;
  else PD_TENSOR_F64(o)[0] = v;
  return PD_OK;
}

/* adamw (Fluid): adam's update with decoupled weight decay. With lr' = lr * lr_ratio and
 * c = coeff when with_decay (else 0): p -= lr' * c * p, then adam's step with lr' (from the
 * moments of the undecayed gradient): p -= lr' * sqrt(1 - beta2_pow) / (1 - beta1_pow) * m1 /
 * (sqrt(m2) + epsilon * sqrt(1 - beta2_pow)). Beta1Tensor, Beta2Tensor, EpsilonTensor,
 * SkipUpdate and use_global_beta_pow as adam's. */
pd_status pd_kernel_adamw(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad, *m1, *m2, *b1p, *b2p, *t;
  pd_tensor *pout, *m1o, *m2o;
  double lr, beta1 = pd_ctx_attr_float(ctx, "beta1"), beta2 = pd_ctx_attr_float(ctx, "beta2"),
             eps = pd_ctx_attr_float(ctx, "epsilon"), bp1, bp2, skip = 0;
  pd_status st;
  if ((st = opt_begin(ctx, &param, &grad, &lr)) ||
      (st = like_param(ctx, "Moment1", param, &m1)) ||
      (st = like_param(ctx, "Moment2", param, &m2)) ||
      (st = in_at(ctx, "Beta1Pow", 0, true, &b1p)) ||
      (st = scalar_in(ctx, "Beta1Pow", b1p, &bp1)) ||
      (st = in_at(ctx, "Beta2Pow", 0, true, &b2p)) ||
      (st = scalar_in(ctx, "Beta2Pow", b2p, &bp2)) || (st = want_float(ctx, "Beta1Pow", b1p)) ||
      (st = want_float(ctx, "Beta2Pow", b2p)))
    return st;
  if (((t = in_if_set(ctx, "Beta1Tensor", 0)) && (st = scalar_in(ctx, "Beta1Tensor", t, &beta1))) ||
      ((t = in_if_set(ctx, "Beta2Tensor", 0)) && (st = scalar_in(ctx, "Beta2Tensor", t, &beta2))) ||
      ((t = in_if_set(ctx, "EpsilonTensor", 0)) &&
       (st = scalar_in(ctx, "EpsilonTensor", t, &eps))) ||
      ((t = in_if_set(ctx, "SkipUpdate", 0)) && (st = scalar_in(ctx, "SkipUpdate", t, &skip))))
    return st;
  if (skip != 0) {
    static const char *const pairs[][2] = {{"Param", "ParamOut"}, {"Moment1", "Moment1Out"},
                                           {"Moment2", "Moment2Out"}, {"Beta1Pow", "Beta1PowOut"},
                                           {"Beta2Pow", "Beta2PowOut"}};
    for (size_t i = 0; i < PD_ARRAY_LEN(pairs) && !st; i++)
      st = copy_var(ctx, pd_ctx_in_var(ctx, pairs[i][0], 0), pairs[i][0],
                    pd_ctx_out_var(ctx, pairs[i][1], 0), pairs[i][1]);
    return st;
  }
  lr *= pd_ctx_attr_float(ctx, "lr_ratio");
  double coeff = pd_ctx_attr_bool(ctx, "with_decay") ? pd_ctx_attr_float(ctx, "coeff") : 0.0;
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad), *m1d = pd_tensor_data(m1),
             *m2d = pd_tensor_data(m2);
  int64_t n = pd_tensor_numel(param);
  pd_dtype b1dt = b1p->dtype, b2dt = b2p->dtype;
  int b1nd = b1p->ndims, b2nd = b2p->ndims;
  int64_t b1dims[MAXD], b2dims[MAXD];
  memcpy(b1dims, b1p->dims, sizeof(int64_t) * (size_t)b1nd);
  memcpy(b2dims, b2p->dims, sizeof(int64_t) * (size_t)b2nd);
  if ((st = update_out(ctx, "ParamOut", param, &pout)) ||
      (st = update_out(ctx, "Moment1Out", m1, &m1o)) ||
      (st = update_out(ctx, "Moment2Out", m2, &m2o)))
    return st;
  if (pout == m1o || pout == m2o || m1o == m2o)
    return pd_ctx_fail(ctx, PD_EINVAL, "ParamOut, Moment1Out and Moment2Out must be distinct vars");
  double lr_t = lr * sqrt(1 - bp2) / (1 - bp1), eps_t = eps * sqrt(1 - bp2);
  FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd, *a = m1d, *b = m2d;
    T *po = (T *)pd_tensor_data(pout), *ao = (T *)pd_tensor_data(m1o),
      *bo = (T *)pd_tensor_data(m2o);
    for (int64_t i = 0; i < n; i++) {
      double gi = g[i], pi = p[i], mom1 = beta1 * a[i] + (1 - beta1) * gi,
             mom2 = beta2 * b[i] + (1 - beta2) * gi * gi;
      ao[i] = (T)mom1;
      bo[i] = (T)mom2;
      pi -= lr * coeff * pi;
      po[i] = (T)(pi - lr_t * (mom1 / (sqrt(mom2) + eps_t)));
    }
  });
  if (pd_ctx_attr_bool(ctx, "use_global_beta_pow")) return PD_OK;
  if ((st = next_pow(ctx, "Beta1PowOut", b1dt, b1nd, b1dims, bp1 * beta1))) return st;
  return next_pow(ctx, "Beta2PowOut", b2dt, b2nd, b2dims, bp2 * beta2);
}

/* rmsprop (Fluid): ms = decay * ms + (1 - decay) * g^2; centered: mg = decay * mg +
 * (1 - decay) * g and mom = momentum * mom + lr * g / sqrt(ms - mg^2 + epsilon), else
 * mom = momentum * mom + lr * g / sqrt(ms + epsilon); p -= mom. */
pd_status pd_kernel_rmsprop(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad, *ms, *mom, *mg = NULL;
  pd_tensor *pout, *mso, *momo, *mgo = NULL;
  double lr;
  pd_status st;
  bool centered = pd_ctx_attr_bool(ctx, "centered");
  if ((st = opt_begin(ctx, &param, &grad, &lr)) ||
      (st = like_param(ctx, "MeanSquare", param, &ms)) ||
      (st = like_param(ctx, "Moment", param, &mom)) ||
      (centered && (st = like_param(ctx, "MeanGrad", param, &mg))))
    return st;
  double eps = pd_ctx_attr_float(ctx, "epsilon"), rho = pd_ctx_attr_float(ctx, "decay"),
         mu = pd_ctx_attr_float(ctx, "momentum");
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad), *msd = pd_tensor_data(ms),
             *momd = pd_tensor_data(mom), *mgd = mg ? pd_tensor_data(mg) : NULL;
  int64_t n = pd_tensor_numel(param);
  if ((st = update_out(ctx, "ParamOut", param, &pout)) ||
      (st = update_out(ctx, "MeanSquareOut", ms, &mso)) ||
      (st = update_out(ctx, "MomentOut", mom, &momo)) ||
      (centered && (st = update_out(ctx, "MeanGradOut", mg, &mgo))))
    return st;
  if (pout == mso || pout == momo || mso == momo ||
      (mgo && (mgo == pout || mgo == mso || mgo == momo)))
    return pd_ctx_fail(ctx, PD_EINVAL, "ParamOut, MeanSquareOut, MomentOut and MeanGradOut must "
                       "be distinct vars");
  FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd, *s = msd, *m = momd, *a = mgd;
    T *po = (T *)pd_tensor_data(pout), *so = (T *)pd_tensor_data(mso),
      *mo = (T *)pd_tensor_data(momo), *ao = mgo ? (T *)pd_tensor_data(mgo) : NULL;
    for (int64_t i = 0; i < n; i++) {
      double gi = g[i], s2 = rho * s[i] + (1 - rho) * gi * gi, den = s2 + eps;
      if (centered) {
        double a2 = rho * a[i] + (1 - rho) * gi;
        ao[i] = (T)a2;
        den -= a2 * a2;
      }
      double m2 = mu * m[i] + lr * gi / sqrt(den);
      so[i] = (T)s2;
      mo[i] = (T)m2;
      po[i] = (T)(p[i] - m2);
    }
  });
  return PD_OK;
}

/* adagrad (Fluid): moment += g^2; p -= lr * g / (sqrt(moment) + epsilon). */
pd_status pd_kernel_adagrad(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad, *mom;
  pd_tensor *pout, *momo;
  double lr;
  pd_status st;
  if ((st = opt_begin(ctx, &param, &grad, &lr)) ||
      (st = like_param(ctx, "Moment", param, &mom)))
    return st;
  double eps = pd_ctx_attr_float(ctx, "epsilon");
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad), *md = pd_tensor_data(mom);
  int64_t n = pd_tensor_numel(param);
  if ((st = update_out(ctx, "ParamOut", param, &pout)) ||
      (st = update_out(ctx, "MomentOut", mom, &momo)))
    return st;
  if (pout == momo) return pd_ctx_fail(ctx, PD_EINVAL, "ParamOut and MomentOut are one var");
  FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd, *m = md;
    T *po = (T *)pd_tensor_data(pout), *mo = (T *)pd_tensor_data(momo);
    for (int64_t i = 0; i < n; i++) {
      double gi = g[i], m2 = m[i] + gi * gi;
      mo[i] = (T)m2;
      po[i] = (T)(p[i] - lr * gi / (sqrt(m2) + eps));
    }
  });
  return PD_OK;
}
