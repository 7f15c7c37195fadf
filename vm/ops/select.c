/* select.c -- select_input, what PaddlePaddle's static.nn.cond writes after its two
 * conditional_blocks: Out is the var X[Mask] (Mask an int32/int64 one-element tensor, the
 * branch that ran), its shape function, kernel and gradient kernel. Fluid's gradient is the
 * select_output op (Out@GRAD routed to X@GRAD[Mask]); pdlang's select_input_grad does the
 * same and gives the other branches' gradients zeros where their forward value exists (the
 * branch that did not run has none, and its conditional_block_grad does not run either). */
#include "config.h"

#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* X: one or more vars of one dtype; Mask: one integer; Out: X's dtype, the dims the X agree
 * on (-1 where they differ; unknown rank where their ranks do). */
pd_status pd_infer_select_input(pd_infer_ctx *c) {
  const pd_var_desc *first, *mask;
  pd_infer_dims out, d, md;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &first, &out);
  if (st || (st = pd_infer_in(c, "Mask", 0, &mask, &md))) return st;
  if (mask->dtype != PD_INT32 && mask->dtype != PD_INT64)
    return pd_infer_fail(c, PD_ETYPE, "Mask must be int32 or int64, got %s",
                         pd_dtype_name(mask->dtype));
  int64_t n = pd_infer_dims_numel(&md);
  if (n >= 0 && n != 1)
    return pd_infer_fail(c, PD_ESHAPE, "Mask must hold one element, got %s",
                         pd_infer_dims_str(&md, s));
  for (int i = 1; i < pd_infer_nin(c, "X"); i++) {
    const pd_var_desc *v;
    if ((st = pd_infer_in(c, "X", i, &v, &d))) return st;
    if (v->dtype != first->dtype)
      return pd_infer_fail(c, PD_ETYPE, "X[%d] has dtype %s but X[0] has dtype %s", i,
                           pd_dtype_name(v->dtype), pd_dtype_name(first->dtype));
    if (out.n < 0 || d.n != out.n) {
      out = pd_infer_dims_unknown(-1);
      continue;
    }
    for (int k = 0; k < d.n; k++)
      if (d.d[k] != out.d[k]) out.d[k] = -1;
  }
  return pd_infer_set_out(c, "Out", 0, &out, first->dtype, first->lod_level);
}

/* The branch Mask names, checked against the n vars of X. */
static pd_status branch(pd_exec_ctx *ctx, int n, int *m) {
  const pd_tensor *mask;
  int64_t v = 0;
  pd_status st = in1(ctx, "Mask", &mask);
  if (st || (st = int_scalar_in(ctx, "Mask", mask, &v))) return st;
  if (v < 0 || v >= n)
    return pd_ctx_fail(ctx, PD_EINVAL, "Mask is %lld but X has %d var%s (0..%d)", (long long)v,
                       n, n == 1 ? "" : "s", n - 1);
  *m = (int)v;
  return PD_OK;
}

pd_status pd_kernel_select_input(pd_exec_ctx *ctx) {
  int n = pd_ctx_nin(ctx, "X"), m;
  pd_status st = branch(ctx, n, &m);
  if (st) return st;
  const pd_tensor *x;
  if ((st = in_at(ctx, "X", m, true, &x))) return st;  /* the branch that ran has a value */
  return copy_var(ctx, pd_ctx_in_var(ctx, "X", m), "X", pd_ctx_out_var(ctx, "Out", 0), "Out");
}

pd_status pd_kernel_select_input_grad(pd_exec_ctx *ctx) {
  int n = pd_ctx_nin(ctx, "X"), m;
  const pd_tensor *dout;
  pd_status st = branch(ctx, n, &m);
  if (st || (st = in1(ctx, "Out@GRAD", &dout))) return st;
  for (int i = 0; i < pd_ctx_nout(ctx, "X@GRAD"); i++) {
    pd_tensor *dx;
    if ((st = out_at(ctx, "X@GRAD", i, false, &dx))) return st;
    if (!dx || dx == dout) continue;
    const pd_tensor *x = in_if_set(ctx, "X", i);
    if (i == m) {
      if (x && (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X"))) return st;
      if ((st = resize_like(ctx, dx, dout, dout)) ||
          (st = pd_ctx_copy(ctx, pd_tensor_data(dx), pd_tensor_data(dout), pd_tensor_nbytes(dx))))
        return st;
    } else if (x) {
      if ((st = resize(ctx, dx, dout->dtype, x->ndims, x->dims, x)) ||
          (st = k_check(ctx, ctx->k->fill(dout->dtype, pd_tensor_numel(dx), pd_tensor_data(dx),
                                          0.0), dout->dtype)))
        return st;
    }
  }
  return PD_OK;
}
