/* infershape_elementwise.c -- shape functions of the elementwise families: unary ops whose Out
 * is shaped like X (activations, assign, scale, softmax, cast, dropout, increment, logical_not),
 * binary ops with Fluid's broadcasting (elementwise_*, comparisons, logical and/or), and sum. */
#include "config.h"
#include "vm/ops/infershape.h"

/* Out takes X's shape and LoD; its dtype is X's, or `dtype` when that is >= 0. */
static pd_status same_as_x(pd_infer_ctx *c, int dtype) {
  const pd_var_desc *x;
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  return pd_infer_set_out(c, "Out", 0, &d, dtype >= 0 ? (pd_dtype)dtype : x->dtype, x->lod_level);
}

/* abs, assign, exp, log, relu, sigmoid, sqrt, square, tanh, scale, fill_zeros_like,
 * sequence_softmax: Out is X's shape, dtype and LoD. */
pd_status pd_infer_unary(pd_infer_ctx *c) { return same_as_x(c, -1); }

/* logical_not: X's shape, bool. */
pd_status pd_infer_unary_bool(pd_infer_ctx *c) { return same_as_x(c, PD_BOOL); }

/* softmax, log_softmax: X's shape; `axis` must name one of X's dims. */
pd_status pd_infer_softmax(pd_infer_ctx *c) {
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, NULL, &d);
  if (st) return st;
  int axis;
  if (d.n >= 0 && (st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X", &d, &axis)))
    return st;
  return same_as_x(c, -1);
}

/* cast: X's shape and LoD, dtype out_dtype (in_dtype only documents X's). */
pd_status pd_infer_cast(pd_infer_ctx *c) {
  pd_dtype in, out;
  pd_status st;
  if ((st = pd_infer_attr_dtype(c, "in_dtype", &in)) ||
      (st = pd_infer_attr_dtype(c, "out_dtype", &out)))
    return st;
  return same_as_x(c, (int)out);
}

/* dropout: Out like X; Mask (uint8) like X; dropout_prob in [0, 1]. */
pd_status pd_infer_dropout(pd_infer_ctx *c) {
  double p = pd_infer_attr_float(c, "dropout_prob");
  if (!(p >= 0.0 && p <= 1.0))
    return pd_infer_fail(c, PD_EINVAL, "dropout_prob must be in [0, 1], got %g", p);
  const pd_var_desc *x;
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st || (st = pd_infer_set_out(c, "Out", 0, &d, x->dtype, x->lod_level))) return st;
  return pd_infer_set_out(c, "Mask", 0, &d, PD_UINT8, x->lod_level);
}

/* increment: a counter; X must hold one element. */
pd_status pd_infer_increment(pd_infer_ctx *c) {
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, NULL, &d);
  if (st) return st;
  int64_t n = pd_infer_dims_numel(&d);
  if (n >= 0 && n != 1)
    return pd_infer_fail(c, PD_ESHAPE, "X must hold one element, got %s", pd_infer_dims_str(&d, s));
  return same_as_x(c, -1);
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
