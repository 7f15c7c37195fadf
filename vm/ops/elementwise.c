/* elementwise.c -- the elementwise family: the binary ops elementwise_add/sub/mul/div/max/min/pow
 * (Fluid's broadcasting with `axis`), the activations and other unary ops (abs, exp, log, relu,
 * sigmoid, sqrt, square, tanh), scale, cast, sum, the comparisons and the logical ops: their shape
 * functions, kernels and gradient kernels. The numbers come from the backend (ctx->k). */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* abs, assign, exp, log, relu, sigmoid, sqrt, square, tanh, scale, fill_zeros_like,
 * sequence_softmax: Out is X's shape, dtype and LoD. */
pd_status pd_infer_unary(pd_infer_ctx *c) { return pd_infer_same_as_x(c, -1); }

/* logical_not: X's shape, bool. */
pd_status pd_infer_unary_bool(pd_infer_ctx *c) { return pd_infer_same_as_x(c, PD_BOOL); }

/* cast: X's shape and LoD, dtype out_dtype (in_dtype only documents X's). */
pd_status pd_infer_cast(pd_infer_ctx *c) {
  pd_dtype in, out;
  pd_status st;
  if ((st = pd_infer_attr_dtype(c, "in_dtype", &in)) ||
      (st = pd_infer_attr_dtype(c, "out_dtype", &out)))
    return st;
  return pd_infer_same_as_x(c, (int)out);
}

/* X op Y with broadcasting; Out takes X's LoD and the given dtype (-1: X's). */
static pd_status binary(pd_infer_ctx *c, int dtype) {
  const pd_var_desc *x, *y;
  pd_infer_dims dx, dy, out;
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = pd_infer_in(c, "Y", 0, &y, &dy)) ||
      (st = pd_infer_same_dtype(c, "X", x->dtype, "Y", y->dtype)))
    return st;
  int axis = pd_opdef_attr(c->def, "axis") ? (int)pd_infer_attr_int(c, "axis") : -1;
  if ((st = pd_infer_broadcast(c, &dx, &dy, axis, &out))) return st;
  return pd_infer_set_out(c, "Out", 0, &out, dtype >= 0 ? (pd_dtype)dtype : x->dtype,
                          x->lod_level);
}

/* elementwise_add/sub/mul/div/max/min/pow. */
pd_status pd_infer_elementwise(pd_infer_ctx *c) { return binary(c, -1); }

/* less_than, ..., equal, not_equal, logical_and, logical_or: broadcast, bool result. */
pd_status pd_infer_compare(pd_infer_ctx *c) { return binary(c, PD_BOOL); }

/* sum: adds its inputs, which must agree in dtype and shape (the gradient of a fanned-out var). */
pd_status pd_infer_sum(pd_infer_ctx *c) {
  const pd_var_desc *first;
  pd_infer_dims out;  /* what the inputs so far tell about the shape */
  char so[PD_DIMS_BUF], si[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &first, &out);
  if (st) return st;
  for (int i = 1; i < pd_infer_nin(c, "X"); i++) {
    const pd_var_desc *v;
    pd_infer_dims d;
    if ((st = pd_infer_in(c, "X", i, &v, &d))) return st;
    if (v->dtype != first->dtype)
      return pd_infer_fail(c, PD_ETYPE, "X[%d] has dtype %s but X[0] has dtype %s", i,
                           pd_dtype_name(v->dtype), pd_dtype_name(first->dtype));
    if (d.n < 0) continue;
    if (out.n < 0) {
      out = d;
      continue;
    }
    bool same = d.n == out.n;
    for (int k = 0; same && k < d.n; k++) same = pd_infer_dim_compatible(d.d[k], out.d[k]);
    if (!same)
      return pd_infer_fail(c, PD_ESHAPE, "X[%d] has shape %s but %s shape %s", i,
                           pd_infer_dims_str(&d, si), i == 1 ? "X[0] has" : "the inputs before it have",
                           pd_infer_dims_str(&out, so));
    for (int k = 0; k < d.n; k++) out.d[k] = pd_infer_dim_merge(out.d[k], d.d[k]);
  }
  return pd_infer_set_out(c, "Out", 0, &out, first->dtype, first->lod_level);
}

/* ================================================================ elementwise binary ops */

/* What each op does to X and Y, for messages: "cannot add a [64, 10] and b [64, 20]". */
static const char *binop_verb(pd_k_binop op) {
  switch (op) {
    case PD_K_ADD: return "add";
    case PD_K_SUB: return "subtract";
    case PD_K_MUL: return "multiply";
    case PD_K_DIV: return "divide";
    case PD_K_MAX: return "take the maximum of";
    case PD_K_MIN: return "take the minimum of";
    case PD_K_POW: return "raise to a power";
    default: return "combine";
  }
}

/* The broadcast shape of X and Y (Fluid's rules with `axis`; vm/ops/infershape.c says the same at
 * compile time), with each operand's dims padded to its rank. */
static pd_status broadcast(const pd_exec_ctx *ctx, const char *verb, const pd_tensor *x,
                           const pd_tensor *y, int axis, int *nd, int64_t *od, int64_t *xp,
                           int64_t *yp) {
  pd_status st = pd_k_broadcast_dims(x->ndims, x->dims, y->ndims, y->dims, axis, nd, od, xp, yp);
  if (!st) return PD_OK;
  char sx[DIMS_BUF], sy[DIMS_BUF], sa[32] = "";
  if (axis != -1) snprintf(sa, sizeof sa, " (axis %d)", axis);
  return pd_ctx_fail(ctx, st == PD_ESHAPE ? PD_ESHAPE : PD_EINVAL, "cannot %s %s %s and %s %s%s",
                     verb, in_name(ctx, "X", 0), shape_str(x, sx), in_name(ctx, "Y", 0),
                     shape_str(y, sy), sa);
}

/* Integer division by zero is an error at the op (a float one gives inf or nan, as IEEE says):
 * Y's elements are scanned only for an integer elementwise_div, on the host (a copy from a GPU).
 * An integer element is zero when all its bytes are. */
static pd_status want_no_int_zero(const pd_exec_ctx *ctx, const pd_tensor *y) {
  size_t es = pd_dtype_size(y->dtype);
  int64_t n = pd_tensor_numel(y);
  if (n <= 0 || es == 0) return PD_OK;
  void *tmp = NULL;
  pd_status st = PD_OK;
  const unsigned char *p = pd_ctx_host_data(ctx, y, &tmp, &st);
  if (!p) return st;
  int64_t at = -1;
  for (int64_t i = 0; i < n && at < 0; i++) {
    const unsigned char *e = p + (size_t)i * es;
    bool zero = true;
    for (size_t b = 0; b < es && zero; b++) zero = e[b] == 0;
    if (zero) at = i;
  }
  if (tmp) pd_k_host_free(tmp);
  if (at < 0) return PD_OK;
  char sy[DIMS_BUF];
  return pd_ctx_fail(ctx, PD_ERUNTIME,
                     "integer division by zero: element %lld of Y (var '%s') %s is 0",
                     (long long)at, in_name(ctx, "Y", 0), shape_str(y, sy));
}

/* elementwise_add, _sub, _mul, _div, _max, _min, _pow: Out = X op Y with broadcasting (op, a
 * pd_k_binop, is the entry's constant). */
pd_status pd_kernel_elementwise(pd_exec_ctx *ctx) {
  const pd_k_binop op = (pd_k_binop)ctx->def->karg;
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)))
    return st;
  if ((st = want_same_dtype(ctx, "X", x, "Y", y))) return st;
  if ((st = op == PD_K_POW ? want_float(ctx, "X", x) : want_number(ctx, "X", x))) return st;
  if (op == PD_K_DIV && !pd_dtype_is_float(y->dtype) && (st = want_no_int_zero(ctx, y))) return st;
  int axis = (int)pd_ctx_attr_int(ctx, "axis"), nd;
  int64_t od[PD_K_MAX_DIMS];
  if ((st = broadcast(ctx, binop_verb(op), x, y, axis, &nd, od, NULL, NULL))) return st;
  hold h;
  hold_init(&h);
  pd_dtype dt = x->dtype;
  /* The backend writes out over x or y when that operand already has out's shape. */
  if (!in_place(out, x, dt, nd, od) && !in_place(out, y, dt, nd, od) &&
      ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y))))
    goto done;
  if ((st = resize(ctx, out, dt, nd, od, x))) goto done;
  st = k_check(ctx,
               ctx->k->binary(op, dt, x->ndims, x->dims, pd_tensor_data(x), y->ndims, y->dims,
                              pd_tensor_data(y), axis, pd_tensor_data(out)),
               dt);
done:
  hold_free(&h);
  return st;
}

/* Their gradients: dX and dY, each summed over the dims it was broadcast along. */
pd_status pd_kernel_elementwise_grad(pd_exec_ctx *ctx) {
  const pd_k_binop op = (pd_k_binop)ctx->def->karg;
  const pd_tensor *x, *y, *dout;
  pd_tensor *dx, *dy;
  bool none;
  pd_status st = grad2_begin(ctx, &x, &y, &dout, &dx, &dy, &none);
  if (st || none) return st;
  int axis = (int)pd_ctx_attr_int(ctx, "axis"), nd;
  int64_t od[PD_K_MAX_DIMS], xp[PD_K_MAX_DIMS], yp[PD_K_MAX_DIMS];
  if ((st = broadcast(ctx, binop_verb(op), x, y, axis, &nd, od, xp, yp)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, nd, od, "the broadcast of X and Y")))
    return st;
  hold h;
  hold_init(&h);
  pd_dtype dt = x->dtype;
  if ((st = grad2_unalias(ctx, &h, dx, dy, &x, &y, &dout))) goto done;
  /* dX of an add (or sub) whose X is not broadcast is Out@GRAD itself: share its storage rather
   * than copy it (a [1600, 256] output layer's logits: 1.6 MB a step). Kernels never write a
   * shared tensor in place (they resize it onto storage of its own first). */
  bool share_dx = (op == PD_K_ADD || op == PD_K_SUB) && dx &&
                  same_dims(x->ndims, x->dims, dout->ndims, dout->dims);
  if (share_dx && ((st = pd_ctx_check(ctx, pd_tensor_share(dx, dout), "share")) ||
                   (st = pd_ctx_check(ctx, pd_tensor_copy_lod(dx, x), "lod"))))
    goto done;
  if ((dx && !share_dx && (st = resize_like(ctx, dx, x, x))) ||
      (dy && (st = resize_like(ctx, dy, y, y))))
    goto done;
  if (op == PD_K_ADD || op == PD_K_SUB) {
    /* No need for the general loop: the shared storage, or a sum over the broadcast dims (the
     * bias of an fc layer: a column sum). */
    if (dx && !share_dx)
      st = sum_to(ctx, dt, nd, od, xp, pd_tensor_data(dout), pd_tensor_data(dx), 1.0);
    if (!st && dy)
      st = sum_to(ctx, dt, nd, od, yp, pd_tensor_data(dout), pd_tensor_data(dy),
                  op == PD_K_SUB ? -1.0 : 1.0);
  } else {
    st = k_check(ctx,
                 ctx->k->binary_grad(op, dt, x->ndims, x->dims, pd_tensor_data(x), y->ndims,
                                     y->dims, pd_tensor_data(y), axis, pd_tensor_data(dout),
                                     dx ? pd_tensor_data(dx) : NULL,
                                     dy ? pd_tensor_data(dy) : NULL),
                 dt);
  }
done:
  hold_free(&h);
  return st;
}

/* ================================================================ unary ops */

/* relu, square and abs of int32/int64 through the broadcast binary kernels (the unary ones are
 * float only): max(x, 0), x * x, max(x, 0 - x). out is not x (the caller unaliased). */
static pd_status unary_int_with(const pd_exec_ctx *ctx, pd_k_unop op, const pd_tensor *x,
                                pd_tensor *out, const void *zero);

static pd_status unary_int(const pd_exec_ctx *ctx, pd_k_unop op, const pd_tensor *x,
                           pd_tensor *out) {
  static const int64_t zero_host = 0;  /* a 0 of either width */
  pd_status st;
  void *ztmp = NULL;
  const void *zp = pd_ctx_at_place(ctx, &zero_host, sizeof zero_host, &ztmp, &st);
  if (!zp) return st;
  st = unary_int_with(ctx, op, x, out, zp);
  pd_ctx_scratch_free(ctx, ztmp);
  return st;
}

static pd_status unary_int_with(const pd_exec_ctx *ctx, pd_k_unop op, const pd_tensor *x,
                                pd_tensor *out, const void *zero) {
  pd_dtype dt = x->dtype;
  const void *xd = pd_tensor_data(x);
  void *od = pd_tensor_data(out);
  int nd = x->ndims;
  const int64_t *dims = x->dims;
  switch (op) {
    case PD_K_RELU:
      return k_check(ctx, ctx->k->binary(PD_K_MAX, dt, nd, dims, xd, 0, NULL, zero, -1, od), dt);
    case PD_K_SQUARE:
      return k_check(ctx, ctx->k->binary(PD_K_MUL, dt, nd, dims, xd, nd, dims, xd, -1, od), dt);
    default: {
      pd_status st = ctx->k->binary(PD_K_SUB, dt, 0, NULL, zero, nd, dims, xd, -1, od);
      if (!st) st = ctx->k->binary(PD_K_MAX, dt, nd, dims, xd, nd, dims, od, -1, od);
      return k_check(ctx, st, dt);
    }
  }
}

/* abs, exp, log, relu, sigmoid, sqrt, square, tanh: Out = f(X), f the entry's pd_k_unop. */
pd_status pd_kernel_unary(pd_exec_ctx *ctx) {
  const pd_k_unop op = (pd_k_unop)ctx->def->karg;
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out))) return st;
  bool ints = op == PD_K_RELU || op == PD_K_SQUARE || op == PD_K_ABS;
  if ((st = ints ? want_number(ctx, "X", x) : want_float(ctx, "X", x))) return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  bool floats = is_float(dt);
  if (!(floats && in_place(out, x, dt, x->ndims, x->dims)) && (st = unalias(ctx, &h, out, &x)))
    goto done;
  if ((st = resize_like(ctx, out, x, x))) goto done;
  if (floats)
    st = k_check(ctx, ctx->k->unary(op, dt, pd_tensor_numel(x), pd_tensor_data(x),
                                    pd_tensor_data(out)),
                 dt);
  else
    st = unary_int(ctx, op, x, out);
done:
  hold_free(&h);
  return st;
}

/* dX = dOut * f'(X), from X (log, square, abs) or from Out (the others), as the backend
 * prefers. */
pd_status pd_kernel_unary_grad(pd_exec_ctx *ctx) {
  const pd_k_unop op = (pd_k_unop)ctx->def->karg;
  const pd_tensor *x, *o, *dout;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  bool reads_x = op == PD_K_LOG || op == PD_K_SQUARE || op == PD_K_ABS;
  if ((st = in_opt(ctx, "X", &x)) || (st = in_opt(ctx, "Out", &o)) ||
      (st = in1(ctx, "Out@GRAD", &dout)))
    return st;
  const pd_tensor *src = reads_x ? x : o;
  if (!src)
    return pd_ctx_fail(ctx, PD_EINVAL, "input %s is missing (the gradient reads it)",
                       reads_x ? "X" : "Out");
  const pd_tensor *like = x ? x : o;  /* X@GRAD's shape and LoD */
  if ((st = want_float(ctx, reads_x ? "X" : "Out", src)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, reads_x ? "X" : "Out", src)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, src->ndims, src->dims, reads_x ? "X" : "Out")))
    return st;
  pd_dtype dt = src->dtype;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &src)) || (st = unalias(ctx, &h, dx, &like))) goto done;
  /* dx may be dout (the backend allows it): the gradient of an in-place op. */
  if (!in_place(dx, dout, dt, like->ndims, like->dims) && (st = unalias(ctx, &h, dx, &dout)))
    goto done;
  if ((st = resize(ctx, dx, dt, like->ndims, like->dims, like))) goto done;
  st = k_check(ctx,
               ctx->k->unary_grad(op, dt, pd_tensor_numel(dx), reads_x ? pd_tensor_data(src) : NULL,
                                  reads_x ? NULL : pd_tensor_data(src), pd_tensor_data(dout),
                                  pd_tensor_data(dx)),
               dt);
done:
  hold_free(&h);
  return st;
}

/* ---- scale: Out = scale * X + bias (bias_after_scale), else scale * (X + bias). The scale
 * comes from the ScaleTensor input when one is bound. ---- */
static pd_status scale_factor(const pd_exec_ctx *ctx, double *a) {
  const pd_tensor *s;
  pd_status st = in_opt(ctx, "ScaleTensor", &s);
  if (st) return st;
  *a = pd_ctx_attr_float(ctx, "scale");
  if (!s) return PD_OK;
  char buf[DIMS_BUF];
  if (pd_tensor_numel(s) != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "ScaleTensor (var '%s') must hold one value, got %s",
                       in_name(ctx, "ScaleTensor", 0), shape_str(s, buf));
  if ((st = want_number(ctx, "ScaleTensor", s))) return st;
  /* ScaleTensor stays on the host (vm/run/exec_place.c): the CPU's cast reads it. */
  return k_check(ctx, pd_k_cpu()->cast(s->dtype, pd_tensor_data(s), PD_FP64, a, 1), s->dtype);
}

pd_status pd_kernel_scale(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  double a;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) || (st = scale_factor(ctx, &a)) ||
      (st = want_number(ctx, "X", x)))
    return st;
  double b = pd_ctx_attr_float(ctx, "bias");
  bool after = pd_ctx_attr_bool(ctx, "bias_after_scale");
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if (!in_place(out, x, dt, x->ndims, x->dims) && (st = unalias(ctx, &h, out, &x))) goto done;
  if ((st = resize_like(ctx, out, x, x))) goto done;
  int64_t n = pd_tensor_numel(x);
  if (is_float(dt)) {
    st = ctx->k->scale(dt, n, pd_tensor_data(x), a, after ? b : a * b, pd_tensor_data(out));
  } else {
    /* Integers as Fluid does them: scale and bias converted to the dtype first. */
    scalar sab[2] = {make_scalar(dt, a), make_scalar(dt, b)};
    int nd = x->ndims;
    const int64_t *d = x->dims;
    void *o = pd_tensor_data(out), *tmp = NULL;
    /* Both scalars where the op computes (one upload on the GPU). */
    const char *ab = pd_ctx_at_place(ctx, sab, sizeof sab, &tmp, &st);
    if (!ab) goto done;
    const void *sa = ab, *sb = ab + sizeof sab[0];
    if (after) {
      st = ctx->k->binary(PD_K_MUL, dt, nd, d, pd_tensor_data(x), 0, NULL, sa, -1, o);
      if (!st) st = ctx->k->binary(PD_K_ADD, dt, nd, d, o, 0, NULL, sb, -1, o);
    } else {
      st = ctx->k->binary(PD_K_ADD, dt, nd, d, pd_tensor_data(x), 0, NULL, sb, -1, o);
      if (!st) st = ctx->k->binary(PD_K_MUL, dt, nd, d, o, 0, NULL, sa, -1, o);
    }
    pd_ctx_scratch_free(ctx, tmp);
  }
  st = k_check(ctx, st, dt);
done:
  hold_free(&h);
  return st;
}

/* dX = scale * dOut (the bias drops out). */
pd_status pd_kernel_scale_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dout;
  pd_tensor *dx;
  double a;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in_opt(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dout)) ||
      (st = scale_factor(ctx, &a)) || (st = want_float(ctx, "Out@GRAD", dout)))
    return st;
  const pd_tensor *like = x ? x : dout;
  if (x && ((st = want_same_dtype(ctx, "Out@GRAD", dout, "X", x)) ||
            (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X"))))
    return st;
  pd_dtype dt = dout->dtype;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &like))) goto done;
  if (!in_place(dx, dout, dt, like->ndims, like->dims) && (st = unalias(ctx, &h, dx, &dout)))
    goto done;
  if ((st = resize(ctx, dx, dt, like->ndims, like->dims, like))) goto done;
  st = k_check(ctx, ctx->k->scale(dt, pd_tensor_numel(dx), pd_tensor_data(dout), a, 0.0,
                                  pd_tensor_data(dx)),
               dt);
done:
  hold_free(&h);
  return st;
}

/* ---- cast: Out = X converted to out_dtype (in_dtype only documents X's dtype). ---- */
static pd_status cast_to(const pd_exec_ctx *ctx, const pd_tensor *x, pd_tensor *out, pd_dtype to,
                         const pd_tensor *lod) {
  pd_status st;
  if (out == x && x->dtype == to) return PD_OK;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x))) goto done;
  if (lod == out) lod = x;
  if ((st = resize(ctx, out, to, x->ndims, x->dims, lod))) goto done;
  st = ctx->k->cast(x->dtype, pd_tensor_data(x), to, pd_tensor_data(out), pd_tensor_numel(x));
  if (st == PD_EUNSUPPORTED)
    st = pd_ctx_fail(ctx, PD_ETYPE, "cannot cast %s to %s", pd_dtype_name(x->dtype),
                     pd_dtype_name(to));
  else
    st = k_check(ctx, st, x->dtype);
done:
  hold_free(&h);
  return st;
}

pd_status pd_kernel_cast(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_dtype to = PD_FP32;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) ||
      (st = dtype_attr(ctx, "out_dtype", &to)))
    return st;
  return cast_to(ctx, x, out, to, x);
}

/* dX = dOut converted back to X's dtype (in_dtype when X is not bound). */
pd_status pd_kernel_cast_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dout;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in_opt(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dout))) return st;
  pd_dtype to = PD_FP32;
  if (x) to = x->dtype;
  else if ((st = dtype_attr(ctx, "in_dtype", &to))) return st;
  if (x && (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X"))) return st;
  return cast_to(ctx, dout, dx, to, x ? x : dout);
}

/* ================================================================ sum */

/* sum: Out = X[0] + X[1] + ...; the inputs agree in dtype and shape; Out takes X[0]'s LoD. The
 * backward pass adds the gradients of a var used several times with it, often as
 * sum(X=[g, g'], Out=g): when Out is one of the inputs and owns its storage, the others are
 * added into it in place. */
pd_status pd_kernel_sum(pd_exec_ctx *ctx) {
  pd_tensor *out;
  const pd_tensor *x0;
  pd_status st;
  int n = pd_ctx_nin(ctx, "X");
  if ((st = out1(ctx, "Out", &out)) || (st = in1(ctx, "X", &x0)) || (st = want_number(ctx, "X", x0)))
    return st;
  const pd_tensor *xs[64], **x = xs;
  if (n > 64 && !(x = pd_k_host_alloc((size_t)n * sizeof *x)))  /* host: pointers */
    return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  hold h;
  hold_init(&h);
  pd_dtype dt = x0->dtype;
  int nd = x0->ndims, self = -1;  /* self: an input that is Out and may be written over */
  const int64_t *dims = x0->dims;
  for (int i = 0; i < n; i++) {
    if ((st = in_at(ctx, "X", i, true, &x[i]))) goto done;
    char s1[DIMS_BUF], s2[DIMS_BUF];
    if (x[i]->dtype != dt) {
      st = pd_ctx_fail(ctx, PD_ETYPE, "X[%d] (var '%s') has dtype %s but X[0] (var '%s') has dtype %s",
                       i, in_name(ctx, "X", i), pd_dtype_name(x[i]->dtype), in_name(ctx, "X", 0),
                       pd_dtype_name(dt));
      goto done;
    }
    if (!same_dims(x[i]->ndims, x[i]->dims, nd, dims)) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "X[%d] (var '%s') has shape %s but X[0] (var '%s') has %s",
                       i, in_name(ctx, "X", i), shape_str(x[i], s1), in_name(ctx, "X", 0),
                       shape_str(x0, s2));
      goto done;
    }
    if (self < 0 && in_place(out, x[i], dt, nd, dims)) self = i;
  }
  if (self >= 0) {
    if (self != 0 && pd_tensor_copy_lod(out, x0)) {
      st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
      goto done;
    }
    /* Out listed again among the inputs counts once more each time: scale it first. */
    int again = 0;
    for (int i = 0; i < n; i++) again += i != self && x[i] == out;
    if (again) {
      scalar f = make_scalar(dt, again + 1);
      void *ftmp = NULL;
      const void *fp = pd_ctx_at_place(ctx, &f, pd_dtype_size(dt), &ftmp, &st);
      if (fp)
        st = k_check(ctx, ctx->k->binary(PD_K_MUL, dt, nd, dims, pd_tensor_data(out), 0, NULL, fp,
                                         -1, pd_tensor_data(out)),
                     dt);
      pd_ctx_scratch_free(ctx, ftmp);
    }
    for (int i = 0; i < n && !st; i++)
      if (i != self && x[i] != out)
        st = k_check(ctx, ctx->k->binary(PD_K_ADD, dt, nd, dims, pd_tensor_data(out), nd, dims,
                                         pd_tensor_data(x[i]), -1, pd_tensor_data(out)),
                     dt);
    goto done;
  }
  /* Out is not an input, or its storage is shared: a fresh result. */
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *was = x[i];
    st = unalias(ctx, &h, out, &x[i]);
    for (int j = i + 1; j < n && !st; j++)  /* the same var listed again: one reference */
      if (x[j] == was) x[j] = x[i];
  }
  if (st) goto done;
  dims = x[0]->dims;  /* x0 may be out, which the resize rewrites */
  if ((st = resize(ctx, out, dt, nd, dims, x[0]))) goto done;
  if (n == 1) {
    st = pd_ctx_copy(ctx, pd_tensor_data(out), pd_tensor_data(x[0]), pd_tensor_nbytes(out));
  } else {
    st = ctx->k->binary(PD_K_ADD, dt, nd, dims, pd_tensor_data(x[0]), nd, dims,
                        pd_tensor_data(x[1]), -1, pd_tensor_data(out));
    for (int i = 2; i < n && !st; i++)
      st = ctx->k->binary(PD_K_ADD, dt, nd, dims, pd_tensor_data(out), nd, dims,
                          pd_tensor_data(x[i]), -1, pd_tensor_data(out));
    st = k_check(ctx, st, dt);
  }
done:
  hold_free(&h);
  if (x != xs) pd_k_host_free(x);
  return st;
}

/* Every bound X@GRAD[i] is a copy of Out@GRAD, with X[i]'s LoD. */
pd_status pd_kernel_sum_grad(pd_exec_ctx *ctx) {
  const pd_tensor *dout;
  pd_status st;
  int n = pd_ctx_nout(ctx, "X@GRAD");
  if (n == 0) return PD_OK;
  if ((st = in1(ctx, "Out@GRAD", &dout))) return st;
  for (int i = 0; i < n; i++) {
    pd_tensor *dx;
    const pd_tensor *x;
    if ((st = out_at(ctx, "X@GRAD", i, false, &dx))) return st;
    if (!dx) continue;
    if ((st = in_at(ctx, "X", i, false, &x))) return st;
    if (x && (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X"))) return st;
    if (dx == dout) continue;
    const pd_tensor *like = x ? x : dout, *lod = x ? x : dout;
    hold h;
    hold_init(&h);
    if (!(st = unalias(ctx, &h, dx, &like)) && !(st = unalias(ctx, &h, dx, &lod)) &&
        !(st = resize(ctx, dx, dout->dtype, like->ndims, like->dims, lod))) {
      st = pd_ctx_copy(ctx, pd_tensor_data(dx), pd_tensor_data(dout), pd_tensor_nbytes(dx));
    }
    hold_free(&h);
    if (st) return st;
  }
  return PD_OK;
}

/* ================================================================ comparisons, logic */

/* less_than, ..., not_equal: Out (bool) = X CMP Y with broadcasting; X's LoD. */
pd_status pd_kernel_compare(pd_exec_ctx *ctx) {
  const pd_k_cmpop op = (pd_k_cmpop)ctx->def->karg;
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_same_dtype(ctx, "X", x, "Y", y)))
    return st;
  if (!is_float(x->dtype) && !is_int(x->dtype) && x->dtype != PD_BOOL)
    return pd_ctx_fail(ctx, PD_ETYPE, "X (var '%s') has dtype %s; expected a number or bool",
                       in_name(ctx, "X", 0), pd_dtype_name(x->dtype));
  int axis = (int)pd_ctx_attr_int(ctx, "axis"), nd;
  int64_t od[PD_K_MAX_DIMS];
  if ((st = broadcast(ctx, "compare", x, y, axis, &nd, od, NULL, NULL))) return st;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) && !(st = unalias(ctx, &h, out, &y)) &&
      !(st = resize(ctx, out, PD_BOOL, nd, od, x)))
    st = k_check(ctx,
                 ctx->k->compare(op, x->dtype, x->ndims, x->dims, pd_tensor_data(x), y->ndims,
                                 y->dims, pd_tensor_data(y), axis, PD_TENSOR_BOOL(out)),
                 x->dtype);
  hold_free(&h);
  return st;
}

/* A logical operand as bools: a bool tensor as it is, a number converted (x != 0) into
 * scratch *buf (the caller frees it). */
static pd_status as_bools(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *t,
                          const uint8_t **out, void **buf) {
  *buf = NULL;
  if (t->dtype == PD_BOOL) {
    *out = PD_TENSOR_BOOL(t);
    return PD_OK;
  }
  pd_status st = want_number(ctx, slot, t);
  int64_t n = pd_tensor_numel(t);
  if (st || !(*buf = pd_ctx_scratch(ctx, (size_t)n, &st))) return st;
  *out = *buf;
  return k_check(ctx, ctx->k->cast(t->dtype, pd_tensor_data(t), PD_BOOL, *buf, n), t->dtype);
}

/* logical_and, logical_or: Out (bool) = X op Y with broadcasting. */
pd_status pd_kernel_logical(pd_exec_ctx *ctx) {
  const pd_k_logop op = (pd_k_logop)ctx->def->karg;
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_same_dtype(ctx, "X", x, "Y", y)))
    return st;
  int nd;
  int64_t od[PD_K_MAX_DIMS];
  if ((st = broadcast(ctx, "combine", x, y, -1, &nd, od, NULL, NULL))) return st;
  hold h;
  hold_init(&h);
  void *bx = NULL, *by = NULL;
  const uint8_t *xb, *yb;
  if (!in_place(out, x, PD_BOOL, nd, od) && !in_place(out, y, PD_BOOL, nd, od) &&
      ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y))))
    goto done;
  if ((st = as_bools(ctx, "X", x, &xb, &bx)) || (st = as_bools(ctx, "Y", y, &yb, &by)) ||
      (st = resize(ctx, out, PD_BOOL, nd, od, x)))
    goto done;
  st = k_check(ctx, ctx->k->logical(op, x->ndims, x->dims, xb, y->ndims, y->dims, yb, -1,
                                    PD_TENSOR_BOOL(out)),
               PD_BOOL);
done:
  pd_ctx_scratch_free(ctx, bx);
  pd_ctx_scratch_free(ctx, by);
  hold_free(&h);
  return st;
}

pd_status pd_kernel_logical_not(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out))) return st;
  if (x->dtype != PD_BOOL && (st = want_number(ctx, "X", x))) return st;
  hold h;
  hold_init(&h);
  int64_t n = pd_tensor_numel(x);
  if (!in_place(out, x, PD_BOOL, x->ndims, x->dims) && (st = unalias(ctx, &h, out, &x))) goto done;
  if ((st = resize(ctx, out, PD_BOOL, x->ndims, x->dims, x))) goto done;
  const uint8_t *src = PD_TENSOR_BOOL(x);
  if (x->dtype != PD_BOOL) {  /* not (x != 0) */
    if ((st = k_check(ctx, ctx->k->cast(x->dtype, pd_tensor_data(x), PD_BOOL, pd_tensor_data(out), n),
                      x->dtype)))
      goto done;
    src = PD_TENSOR_BOOL(out);
  }
  ctx->k->logical_not(n, src, PD_TENSOR_BOOL(out));
done:
  hold_free(&h);
  return st;
}
