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

/* The update itself, on the backend (ctx->k->opt, which kernels.h describes): Param and Grad, the
 * kind's state inputs s[] and the outputs ParamOut and so[] (already sized), pointers read
 * before the outputs were resized (an output may be its own input). */
static pd_status opt_run(const pd_exec_ctx *ctx, const pd_k_opt *o, pd_dtype dt, int64_t n,
                         const void *p, const void *g, const void *const *s, pd_tensor *pout,
                         pd_tensor *const *so) {
  void *sod[3] = {NULL, NULL, NULL};
  for (int i = 0; i < pd_k_opt_nstates(o); i++) sod[i] = pd_tensor_data(so[i]);
  return pd_ctx_check(ctx, ctx->k->opt(dt, n, o, p, g, s, pd_tensor_data(pout), sod),
                      "the update");
}

/* The states of an optimizer: input slot in[i] (shaped like Param) and its output out[i],
 * resized like it; the outputs must be distinct vars. */
typedef struct opt_states {
  int n;
  const pd_tensor *in[3];
  pd_tensor *out[3];
  const void *data[3];
} opt_states;

static pd_status states_begin(const pd_exec_ctx *ctx, const pd_tensor *param,
                              const char *const *ins, opt_states *st) {
  pd_status r;
  for (int i = 0; i < st->n; i++) {
    if ((r = like_param(ctx, ins[i], param, &st->in[i]))) return r;
    st->data[i] = pd_tensor_data(st->in[i]);
  }
  return PD_OK;
}

static pd_status states_out(const pd_exec_ctx *ctx, const pd_tensor *param, pd_tensor **pout,
                            const char *const *outs, opt_states *st) {
  pd_status r;
  if ((r = update_out(ctx, "ParamOut", param, pout))) return r;
  for (int i = 0; i < st->n; i++)
    if ((r = update_out(ctx, outs[i], st->in[i], &st->out[i]))) return r;
  for (int i = 0; i < st->n; i++)
    for (int k = -1; k < i; k++)
      if (st->out[i] == (k < 0 ? *pout : st->out[k]))
        return pd_ctx_fail(ctx, PD_EINVAL, "%s and %s must be distinct vars",
                           k < 0 ? "ParamOut" : outs[k], outs[i]);
  return PD_OK;
}

/* One optimizer with nstates states named ins/outs: read, size, update. */
static pd_status opt_simple(pd_exec_ctx *ctx, pd_k_opt *o, const char *const *ins,
                            const char *const *outs) {
  const pd_tensor *param, *grad;
  pd_tensor *pout;
  opt_states sts = {.n = pd_k_opt_nstates(o)};
  pd_status st;
  if ((st = opt_begin(ctx, &param, &grad, &o->lr)) ||
      (st = states_begin(ctx, param, ins, &sts)))
    return st;
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad);
  int64_t n = pd_tensor_numel(param);
  pd_dtype dt = param->dtype;
  if ((st = states_out(ctx, param, &pout, outs, &sts))) return st;
  return opt_run(ctx, o, dt, n, pd, gd, sts.data, pout, sts.out);
}

/* sgd: ParamOut = Param - LearningRate * Grad. */
pd_status pd_kernel_sgd(pd_exec_ctx *ctx) {
  pd_k_opt o = {.kind = PD_K_OPT_SGD};
  return opt_simple(ctx, &o, NULL, NULL);
}

/* momentum (Fluid): g = Grad * rescale_grad (+ regularization_coeff * Param with l2_decay);
 * VelocityOut = mu * Velocity + g; ParamOut = Param - lr * VelocityOut, or with use_nesterov
 * Param - lr * (g + mu * VelocityOut). */
pd_status pd_kernel_momentum(pd_exec_ctx *ctx) {
  static const char *const ins[] = {"Velocity"}, *const outs[] = {"VelocityOut"};
  pd_k_opt o = {.kind = PD_K_OPT_MOMENTUM,
                .mu = pd_ctx_attr_float(ctx, "mu"),
                .rescale = pd_ctx_attr_float(ctx, "rescale_grad"),
                .nesterov = pd_ctx_attr_bool(ctx, "use_nesterov")};
  if (strcmp(pd_ctx_attr_str(ctx, "regularization_method"), "l2_decay") == 0)
    o.l2 = pd_ctx_attr_float(ctx, "regularization_coeff");
  return opt_simple(ctx, &o, ins, outs);
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

/* adam and adamw (Fluid): lr_t = lr' * sqrt(1 - beta2_pow) / (1 - beta1_pow); m1 = b1 m1 +
 * (1 - b1) g; m2 = b2 m2 + (1 - b2) g^2; p -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 -
 * beta2_pow)); Beta1PowOut = beta1_pow * b1, Beta2PowOut likewise (unless use_global_beta_pow).
 * Beta1Tensor, Beta2Tensor, EpsilonTensor override the attributes; a true SkipUpdate copies the
 * inputs to the outputs unchanged. adamw first decays the parameter, decoupled from the
 * gradient's moments: with lr' = lr * lr_ratio and c = coeff when with_decay (else 0),
 * p -= lr' * c * p; adam has lr' = lr and c = 0. */
pd_status pd_kernel_adam(pd_exec_ctx *ctx) {
  const bool adamw = ctx->def->karg == PD_OPV_ADAMW;
  static const char *const ins[] = {"Moment1", "Moment2"},
                           *const outs[] = {"Moment1Out", "Moment2Out"};
  const pd_tensor *param, *grad, *b1p, *b2p, *t;
  pd_tensor *pout;
  opt_states sts = {.n = 2};
  double lr, beta1 = pd_ctx_attr_float(ctx, "beta1"), beta2 = pd_ctx_attr_float(ctx, "beta2"),
             eps = pd_ctx_attr_float(ctx, "epsilon"), bp1, bp2, skip = 0;
  pd_status st;
  if ((st = opt_begin(ctx, &param, &grad, &lr)) ||
      (st = states_begin(ctx, param, ins, &sts)) ||
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
  double coeff = 0;
  if (adamw) {
    lr *= pd_ctx_attr_float(ctx, "lr_ratio");
    if (pd_ctx_attr_bool(ctx, "with_decay")) coeff = pd_ctx_attr_float(ctx, "coeff");
  }
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad);
  int64_t n = pd_tensor_numel(param);
  pd_dtype dt = param->dtype, b1dt = b1p->dtype, b2dt = b2p->dtype;
  int b1nd = b1p->ndims, b2nd = b2p->ndims;
  int64_t b1dims[MAXD], b2dims[MAXD];
  memcpy(b1dims, b1p->dims, sizeof(int64_t) * (size_t)b1nd);
  memcpy(b2dims, b2p->dims, sizeof(int64_t) * (size_t)b2nd);
  if ((st = states_out(ctx, param, &pout, outs, &sts))) return st;
  pd_k_opt o = {.kind = PD_K_OPT_ADAM,
                .lr = lr * sqrt(1 - bp2) / (1 - bp1),
                .beta1 = beta1,
                .beta2 = beta2,
                .eps = eps * sqrt(1 - bp2),
                .decay = lr * coeff};
  if ((st = opt_run(ctx, &o, dt, n, pd, gd, sts.data, pout, sts.out))) return st;
  if (pd_ctx_attr_bool(ctx, "use_global_beta_pow")) return PD_OK;
  if ((st = next_pow(ctx, "Beta1PowOut", b1dt, b1nd, b1dims, bp1 * beta1))) return st;
  return next_pow(ctx, "Beta2PowOut", b2dt, b2nd, b2dims, bp2 * beta2);
}

/* rmsprop (Fluid): ms = decay * ms + (1 - decay) * g^2; centered: mg = decay * mg +
 * (1 - decay) * g and mom = momentum * mom + lr * g / sqrt(ms - mg^2 + epsilon), else
 * mom = momentum * mom + lr * g / sqrt(ms + epsilon); p -= mom. */
pd_status pd_kernel_rmsprop(pd_exec_ctx *ctx) {
  static const char *const ins[] = {"MeanSquare", "Moment", "MeanGrad"},
                           *const outs[] = {"MeanSquareOut", "MomentOut", "MeanGradOut"};
  pd_k_opt o = {.kind = PD_K_OPT_RMSPROP,
                .eps = pd_ctx_attr_float(ctx, "epsilon"),
                .rho = pd_ctx_attr_float(ctx, "decay"),
                .mu = pd_ctx_attr_float(ctx, "momentum"),
                .centered = pd_ctx_attr_bool(ctx, "centered")};
  return opt_simple(ctx, &o, ins, outs);
}

/* adagrad (Fluid): moment += g^2; p -= lr * g / (sqrt(moment) + epsilon). */
pd_status pd_kernel_adagrad(pd_exec_ctx *ctx) {
  static const char *const ins[] = {"Moment"}, *const outs[] = {"MomentOut"};
  pd_k_opt o = {.kind = PD_K_OPT_ADAGRAD, .eps = pd_ctx_attr_float(ctx, "epsilon")};
  return opt_simple(ctx, &o, ins, outs);
}
