/* activation.c -- the activations with parameters, Fluid's ops gelu (exact and `approximate`),
 * leaky_relu, elu, silu, swish, softplus, relu6, hard_swish and log_sigmoid: their kernels and
 * gradient kernels, through the backend's act/act_grad entries (kernels/kernels.h gives the
 * formulas). Their shape function is the unary family's (pd_infer_unary: X's shape, dtype and
 * LoD). Every gradient reads X. */
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

/* Each op's kernel and gradient kernel: the backend op and its parameters (kernels.h's order)
 * from the op's attributes. */
#define ACT_KERNELS(name, OP, P0, P1, P2)                                  \
  pd_status pd_kernel_##name(pd_exec_ctx *ctx) {                           \
    const double p[3] = {P0, P1, P2};                                      \
    return act(ctx, OP, p);                                                \
  }                                                                        \
  pd_status pd_kernel_##name##_grad(pd_exec_ctx *ctx) {                    \
    const double p[3] = {P0, P1, P2};                                      \
    return act_grad(ctx, OP, p);                                           \
  }
#define ATTR(n) pd_ctx_attr_float(ctx, n)

ACT_KERNELS(elu, PD_K_ELU, ATTR("alpha"), 0, 0)
ACT_KERNELS(gelu, pd_ctx_attr_bool(ctx, "approximate") ? PD_K_GELU_TANH : PD_K_GELU, 0, 0, 0)
ACT_KERNELS(hard_swish, PD_K_HARD_SWISH, ATTR("threshold"), ATTR("scale"), ATTR("offset"))
ACT_KERNELS(leaky_relu, PD_K_LEAKY_RELU, ATTR("alpha"), 0, 0)
ACT_KERNELS(log_sigmoid, PD_K_LOG_SIGMOID, 0, 0, 0)
ACT_KERNELS(relu6, PD_K_RELU6, ATTR("threshold"), 0, 0)
ACT_KERNELS(silu, PD_K_SWISH, 1, 0, 0) /* swish with beta 1 */
ACT_KERNELS(softplus, PD_K_SOFTPLUS, ATTR("beta"), ATTR("threshold"), 0)
ACT_KERNELS(swish, PD_K_SWISH, ATTR("beta"), 0, 0)

#undef ATTR
#undef ACT_KERNELS
