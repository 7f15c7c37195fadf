/* activation.c -- the activations with parameters (vm/oplist.h's PD_ACT_ rows: elu, leaky_relu,
 * swish, hard_sigmoid, ...; and gelu, exact or `approximate`): their kernels and gradient
 * kernels, through the backend's act/act_grad entries (kernels/kernels.h gives the formulas).
 * Their shape function is the unary family's (pd_infer_unary: X's shape, dtype and LoD). Every
 * gradient reads X. */
#include "config.h"

#include "vm/ops/kern.h"

/* The attributes the backend divides by must not be 0. */
static pd_status check_params(const pd_exec_ctx *ctx, pd_k_act op, const double *p) {
  if (op == PD_K_SOFTPLUS && p[0] == 0)
    return pd_ctx_fail(ctx, PD_EINVAL, "beta must not be 0 (the op divides by it)");
  if (op == PD_K_HARD_SWISH && p[1] == 0)
    return pd_ctx_fail(ctx, PD_EINVAL, "scale must not be 0 (the op divides by it)");
  return PD_OK;
}

/* Out = f(X), in place when Out is X. */
static pd_status act(pd_exec_ctx *ctx, pd_k_act op, const double *p) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out))) return st;
  if ((st = want_float(ctx, "X", x)) || (st = check_params(ctx, op, p))) return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if (!in_place(out, x, dt, x->ndims, x->dims) && (st = unalias(ctx, &h, out, &x))) goto done;
  if ((st = resize_like(ctx, out, x, x))) goto done;
  st = k_check(ctx,
               ctx->k->act(op, dt, pd_tensor_numel(x), p, pd_tensor_data(x), pd_tensor_data(out)),
               dt);
done:
  hold_free(&h);
  return st;
}

/* X@GRAD = Out@GRAD * f'(X); X@GRAD may be Out@GRAD (the gradient of an in-place op). */
static pd_status act_grad(pd_exec_ctx *ctx, pd_k_act op, const double *p) {
  const pd_tensor *x, *dout;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dout))) return st;
  if ((st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "Out@GRAD", dout, "X", x)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X")) ||
      (st = check_params(ctx, op, p)))
    return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &x))) goto done;
  if (!in_place(dx, dout, dt, x->ndims, x->dims) && (st = unalias(ctx, &h, dx, &dout))) goto done;
  if ((st = resize(ctx, dx, dt, x->ndims, x->dims, x))) goto done;
  st = k_check(ctx,
               ctx->k->act_grad(op, dt, pd_tensor_numel(x), p, pd_tensor_data(x),
                                pd_tensor_data(dout), pd_tensor_data(dx)),
               dt);
done:
  hold_free(&h);
  return st;
}

/* The parameters of the backend's activation: the op's FLOAT attributes, in the order vm/oplist.h
 * declares them (hard_swish: threshold, scale, offset), as many as the activation takes. */
static pd_status params(const pd_exec_ctx *ctx, pd_k_act op, double p[3]) {
  int k = 0;
  p[0] = p[1] = p[2] = 0;
  for (int i = 0; i < ctx->def->nattrs; i++)
    if (ctx->def->attrs[i].type == PD_ATTR_FLOAT && k < 3)
      p[k++] = pd_ctx_attr_float(ctx, ctx->def->attrs[i].name);
  if (k != pd_k_act_nparams(op))
    return pd_ctx_fail(ctx, PD_EINVAL, "%s has %d float attributes, but the activation %s takes "
                       "%d parameters (vm/oplist.h)", ctx->def->type, k, pd_k_act_name(op),
                       pd_k_act_nparams(op));
  return PD_OK;
}

/* The family's kernels: the backend's activation is the op's constant (vm/oplist.h's
 * KERNEL(act, PD_K_ELU)). */
pd_status pd_kernel_act(pd_exec_ctx *ctx) {
  const pd_k_act op = (pd_k_act)ctx->def->karg;
  double p[3];
  pd_status st = params(ctx, op, p);
  return st ? st : act(ctx, op, p);
}

pd_status pd_kernel_act_grad(pd_exec_ctx *ctx) {
  const pd_k_act op = (pd_k_act)ctx->def->karg;
  double p[3];
  pd_status st = params(ctx, op, p);
  return st ? st : act_grad(ctx, op, p);
}

/* gelu: the exact form, or tanh's when `approximate` is set. */
static pd_k_act gelu_form(const pd_exec_ctx *ctx) {
  return pd_ctx_attr_bool(ctx, "approximate") ? PD_K_GELU_TANH : PD_K_GELU;
}

pd_status pd_kernel_gelu(pd_exec_ctx *ctx) {
  const double p[3] = {0, 0, 0};
  return act(ctx, gelu_form(ctx), p);
}

pd_status pd_kernel_gelu_grad(pd_exec_ctx *ctx) {
  const double p[3] = {0, 0, 0};
  return act_grad(ctx, gelu_form(ctx), p);
}
