/* infershape_math.c -- shape functions of matrix products (mul, fc, matmul_v2) and reductions
 * (reduce_*, mean, arg_max, top_k). */
#include "config.h"
#include "vm/ops/infershape.h"

#include <inttypes.h>

/* The product of d[from..to), or -1 when any of them is unknown. */
static int64_t dims_product(const pd_infer_dims *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p = pd_infer_dim_mul(p, d->d[i]);
  return p;
}

/* mul: X flattened to a matrix at x_num_col_dims times Y flattened at y_num_col_dims;
 * Out = X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:], with X's LoD. */
pd_status pd_infer_mul(pd_infer_ctx *c) {
  const pd_var_desc *x, *y;
  pd_infer_dims dx, dy, out;
  char sx[PD_DIMS_BUF], sy[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = pd_infer_in(c, "Y", 0, &y, &dy)) ||
      (st = pd_infer_same_dtype(c, "X", x->dtype, "Y", y->dtype)))
    return st;
  if (dx.n < 0 || dy.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, x->dtype, x->lod_level);
  }
  int64_t xn = pd_infer_attr_int(c, "x_num_col_dims"), yn = pd_infer_attr_int(c, "y_num_col_dims");
  if (xn < 1 || xn >= dx.n)
    return pd_infer_fail(c, PD_EINVAL, "x_num_col_dims %" PRId64 " does not split X %s in two "
                         "(expected 1 to %d)", xn, pd_infer_dims_str(&dx, sx), dx.n - 1);
  if (yn < 1 || yn >= dy.n)
    return pd_infer_fail(c, PD_EINVAL, "y_num_col_dims %" PRId64 " does not split Y %s in two "
                         "(expected 1 to %d)", yn, pd_infer_dims_str(&dy, sy), dy.n - 1);
  int64_t cols = dims_product(&dx, (int)xn, dx.n), rows = dims_product(&dy, 0, (int)yn);
  if (cols >= 0 && rows >= 0 && cols != rows)
    return pd_infer_fail(c, PD_ESHAPE, "X has %" PRId64 " columns but Y has %" PRId64 " rows (%s x %s)",
                         cols, rows, pd_infer_dims_str(&dx, sx), pd_infer_dims_str(&dy, sy));
  out.n = (int)xn + dy.n - (int)yn;
  if (out.n > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "Out would have %d dims; at most %d are supported",
                         out.n, PD_MAX_RANK);
  for (int i = 0; i < xn; i++) out.d[i] = dx.d[i];
  for (int i = (int)yn; i < dy.n; i++) out.d[xn + i - yn] = dy.d[i];
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, x->lod_level);
}

/* fc (Fluid's, as the fuse_fc pass makes it from mul + elementwise_add): Input flattened to a
 * matrix at in_num_col_dims times W [K, N], plus Bias ([N] or [1, N]) on every row;
 * Out = Input.dims[:in_num_col_dims] + [N], with Input's LoD. No activation_type, no
 * padding_weights. */
pd_status pd_infer_fc(pd_infer_ctx *c) {
  const pd_var_desc *x, *w, *b;
  pd_infer_dims dx, dw, db, out;
  char sx[PD_DIMS_BUF], sw[PD_DIMS_BUF], sb[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "Input", 0, &x, &dx)) || (st = pd_infer_in(c, "W", 0, &w, &dw)) ||
      (st = pd_infer_same_dtype(c, "Input", x->dtype, "W", w->dtype)))
    return st;
  if (*pd_infer_attr_str(c, "activation_type"))
    return pd_infer_fail(c, PD_EUNSUPPORTED, "activation_type \"%s\" is not supported (expected "
                         "\"\": apply the activation as an op of its own)",
                         pd_infer_attr_str(c, "activation_type"));
  if (pd_infer_attr_bool(c, "padding_weights"))
    return pd_infer_fail(c, PD_EUNSUPPORTED, "padding_weights is not supported");
  if (dw.n >= 0 && dw.n != 2)
    return pd_infer_fail(c, PD_ESHAPE, "W must be a matrix [K, N], not %s",
                         pd_infer_dims_str(&dw, sw));
  int64_t n = dw.n == 2 ? dw.d[1] : -1;
  if (pd_infer_nin(c, "Bias") > 0) {
    if ((st = pd_infer_in(c, "Bias", 0, &b, &db)) ||
        (st = pd_infer_same_dtype(c, "Input", x->dtype, "Bias", b->dtype)))
      return st;
    int64_t bn = db.n == 1 ? db.d[0] : db.n == 2 && db.d[0] == 1 ? db.d[1] : -2;
    if (db.n >= 0 && (bn == -2 || (bn >= 0 && n >= 0 && bn != n)))
      return pd_infer_fail(c, PD_ESHAPE, "Bias %s must be [N] or [1, N] for W %s",
                           pd_infer_dims_str(&db, sb), pd_infer_dims_str(&dw, sw));
  }
  if (dx.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, x->dtype, x->lod_level);
  }
  int64_t xn = pd_infer_attr_int(c, "in_num_col_dims");
  if (xn < 1 || xn >= dx.n)
    return pd_infer_fail(c, PD_EINVAL, "in_num_col_dims %" PRId64 " does not split Input %s in "
                         "two (expected 1 to %d)", xn, pd_infer_dims_str(&dx, sx), dx.n - 1);
  int64_t cols = dims_product(&dx, (int)xn, dx.n), rows = dw.n == 2 ? dw.d[0] : -1;
  if (cols >= 0 && rows >= 0 && cols != rows)
    return pd_infer_fail(c, PD_ESHAPE, "Input has %" PRId64 " columns but W has %" PRId64
                         " rows (%s x %s)", cols, rows, pd_infer_dims_str(&dx, sx),
                         pd_infer_dims_str(&dw, sw));
  out.n = (int)xn + 1;
  for (int i = 0; i < xn; i++) out.d[i] = dx.d[i];
  out.d[xn] = n;
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, x->lod_level);
}

/* matmul_v2: numpy's matmul. A 1-D X is a row vector and a 1-D Y a column vector (the added dim
 * is dropped again); trans_x / trans_y swap the last two dims; the batch dims (all but the last
 * two) broadcast. */
pd_status pd_infer_matmul_v2(pd_infer_ctx *c) {
  const pd_var_desc *x, *y;
  pd_infer_dims dx, dy, mx, my, out;
  char sx[PD_DIMS_BUF], sy[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = pd_infer_in(c, "Y", 0, &y, &dy)) ||
      (st = pd_infer_same_dtype(c, "X", x->dtype, "Y", y->dtype)))
    return st;
  if (dx.n < 0 || dy.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
  }
  if (dx.n == 0 || dy.n == 0)
    return pd_infer_fail(c, PD_ESHAPE, "cannot multiply %s by %s: both need at least 1 dim",
                         pd_infer_dims_str(&dx, sx), pd_infer_dims_str(&dy, sy));
  bool tx = pd_infer_attr_bool(c, "trans_x") && dx.n > 1;
  bool ty = pd_infer_attr_bool(c, "trans_y") && dy.n > 1;
  /* Matrices: [..., M, K] and [..., K, N]. */
  mx = dx;
  my = dy;
  if (dx.n == 1) mx = (pd_infer_dims){.n = 2, .d = {1, dx.d[0]}};
  if (dy.n == 1) my = (pd_infer_dims){.n = 2, .d = {dy.d[0], 1}};
  int64_t m = mx.d[mx.n - (tx ? 1 : 2)], kx = mx.d[mx.n - (tx ? 2 : 1)];
  int64_t ky = my.d[my.n - (ty ? 1 : 2)], n = my.d[my.n - (ty ? 2 : 1)];
  if (kx >= 0 && ky >= 0 && kx != ky)
    return pd_infer_fail(c, PD_ESHAPE, "X%s has %" PRId64 " columns but Y%s has %" PRId64 " rows (%s x %s)",
                         tx ? "^T" : "", kx, ty ? "^T" : "", ky, pd_infer_dims_str(&dx, sx),
                         pd_infer_dims_str(&dy, sy));
  /* Batch dims. */
  pd_infer_dims bx = {.n = mx.n - 2}, by = {.n = my.n - 2};
  for (int i = 0; i < bx.n; i++) bx.d[i] = mx.d[i];
  for (int i = 0; i < by.n; i++) by.d[i] = my.d[i];
  if (!pd_infer_broadcast_dims(&bx, &by, &out))
    return pd_infer_fail(c, PD_ESHAPE, "cannot broadcast the batch dims of %s and %s",
                         pd_infer_dims_str(&dx, sx), pd_infer_dims_str(&dy, sy));
  if (dx.n > 1) out.d[out.n++] = m;
  if (dy.n > 1) out.d[out.n++] = n;
  if (out.n == 0) out = (pd_infer_dims){.n = 1, .d = {1}};  /* vector . vector */
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* reduce_sum/mean/max/min/prod: reduce X over `dim` (all dims when reduce_all or dim is empty),
 * keeping reduced dims as 1 when keep_dim. A full reduction without keep_dim gives [1]. The LoD
 * survives when dim 0 is kept. */
pd_status pd_infer_reduce(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  pd_dtype dtype = x->dtype;
  if (pd_infer_attr_int(c, "out_dtype") >= 0 && (st = pd_infer_attr_dtype(c, "out_dtype", &dtype)))
    return st;
  if (d.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
  }
  bool reduced[PD_MAX_RANK] = {false};
  int64_t dims[PD_MAX_RANK];
  int nd = pd_infer_attr_ints(c, "dim", dims, PD_MAX_RANK);
  if (nd > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EINVAL, "dim lists %d dims; at most %d are supported", nd, PD_MAX_RANK);
  bool all = pd_infer_attr_bool(c, "reduce_all") || nd == 0;
  for (int i = 0; i < d.n; i++) reduced[i] = all;
  if (!all) {
    for (int i = 0; i < nd; i++) {
      int axis;
      if ((st = pd_infer_axis(c, "dim", dims[i], "X", &d, &axis))) return st;
      reduced[axis] = true;
    }
  }
  bool keep = pd_infer_attr_bool(c, "keep_dim");
  out.n = 0;
  for (int i = 0; i < d.n; i++)
    if (!reduced[i] || keep) out.d[out.n++] = reduced[i] ? 1 : d.d[i];
  if (out.n == 0) out = (pd_infer_dims){.n = 1, .d = {1}};
  return pd_infer_set_out(c, "Out", 0, &out, dtype, d.n > 0 && !reduced[0] ? x->lod_level : 0);
}

/* mean: the mean of all of X, shape [1]. */
pd_status pd_infer_mean(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_status st = pd_infer_in(c, "X", 0, &x, NULL);
  if (st) return st;
  pd_infer_dims out = {.n = 1, .d = {1}};
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* arg_max: the index of the largest element along `axis` (of all of X when flatten), as int64
 * or int32 (`dtype`). */
pd_status pd_infer_arg_max(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int64_t t = pd_infer_attr_int(c, "dtype");
  if (t != -1 && t != PD_INT32 && t != PD_INT64)
    return pd_infer_fail(c, PD_EINVAL, "dtype must be int32 (%d) or int64 (%d), got %" PRId64,
                         PD_INT32, PD_INT64, t);
  pd_dtype dtype = t == PD_INT32 ? PD_INT32 : PD_INT64;
  if (pd_infer_attr_bool(c, "flatten")) {
    out = (pd_infer_dims){.n = 1, .d = {1}};
    return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
  }
  if (d.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
  }
  int axis;
  if ((st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X", &d, &axis))) return st;
  bool keep = pd_infer_attr_bool(c, "keepdims");
  out.n = 0;
  for (int i = 0; i < d.n; i++)
    if (i != axis || keep) out.d[out.n++] = i == axis ? 1 : d.d[i];
  if (out.n == 0) out = (pd_infer_dims){.n = 1, .d = {1}};
  return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
}

/* top_k: the k largest entries along the last dim (Out, X's dtype) and their indices (Indices,
 * int64). With the K input, k is only known at run time. */
pd_status pd_infer_top_k(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int64_t k = pd_infer_nin(c, "K") > 0 ? -1 : pd_infer_attr_int(c, "k");
  if (pd_infer_nin(c, "K") == 0 && k < 1)
    return pd_infer_fail(c, PD_EINVAL, "k must be at least 1, got %" PRId64, k);
  if (d.n == 0) return pd_infer_fail(c, PD_ESHAPE, "X must have at least 1 dim, got []");
  if (d.n > 0) {
    int64_t last = d.d[d.n - 1];
    if (k > 0 && last >= 0 && k > last)
      return pd_infer_fail(c, PD_ESHAPE, "k %" PRId64 " is larger than the last dim of X %s", k,
                           pd_infer_dims_str(&d, s));
    d.d[d.n - 1] = k;
  }
  if ((st = pd_infer_set_out(c, "Out", 0, &d, x->dtype, x->lod_level))) return st;
  return pd_infer_set_out(c, "Indices", 0, &d, PD_INT64, x->lod_level);
}
