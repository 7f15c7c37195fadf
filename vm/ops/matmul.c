/* matmul.c -- the matrix products: mul (X and Y flattened to matrices), fc (mul plus a bias, in
 * one GEMM; made by the fuse_fc pass or loaded), matmul_v2 (NumPy's matmul with batch
 * broadcasting) and Fluid's matmul (scaled by alpha, batches as one count): their shape
 * functions, kernels and gradient kernels, all on the backend's GEMMs; and
 * memory_efficient_attention, the products of an attention layer's heads around their softmax,
 * on the backend's attention entry. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

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

/* The batch count of the dims before d's last two (0: d has no more than two), -1 unknown. */
static int64_t fluid_batch(const pd_infer_dims *d) {
  return d->n > 2 ? dims_product(d, 0, d->n - 2) : 0;
}

/* matmul (karg PD_OPV_MATMUL, Fluid's) and matmul_v2 (NumPy's): vm/oplist.h says the two.
 * Matrices [..., M, K] and [..., K, N] after the 1-D operands become a row (X) or a column (Y)
 * and the transposes; Out is the batch dims, then M unless X was 1-D (v1: and M is 1), then N
 * unless Y was 1-D (v1: and N is 1); [1] when nothing is left. */
pd_status pd_infer_matmul(pd_infer_ctx *c) {
  const pd_var_desc *x, *y;
  pd_infer_dims dx, dy, mx, my, out;
  char sx[PD_DIMS_BUF], sy[PD_DIMS_BUF];
  pd_status st;
  bool v1 = c->def->karg == PD_OPV_MATMUL;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = pd_infer_in(c, "Y", 0, &y, &dy)) ||
      (st = pd_infer_same_dtype(c, "X", x->dtype, "Y", y->dtype)))
    return st;
  int lod = v1 ? x->lod_level : 0;  /* Fluid's matmul keeps X's LoD */
  if (dx.n < 0 || dy.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, x->dtype, lod);
  }
  if (dx.n == 0 || dy.n == 0)
    return pd_infer_fail(c, PD_ESHAPE, "cannot multiply %s by %s: both need at least 1 dim",
                         pd_infer_dims_str(&dx, sx), pd_infer_dims_str(&dy, sy));
  bool tx = pd_infer_attr_bool(c, v1 ? "transpose_X" : "trans_x") && (v1 || dx.n > 1);
  bool ty = pd_infer_attr_bool(c, v1 ? "transpose_Y" : "trans_y") && (v1 || dy.n > 1);
  /* Matrices: [..., M, K] and [..., K, N]. */
  mx = dx;
  my = dy;
  if (dx.n == 1) mx = (pd_infer_dims){.n = 2, .d = {1, dx.d[0]}};
  if (dy.n == 1) my = (pd_infer_dims){.n = 2, .d = {dy.d[0], 1}};
  int64_t m = mx.d[mx.n - (tx ? 1 : 2)], kx = mx.d[mx.n - (tx ? 2 : 1)];
  int64_t ky = my.d[my.n - (ty ? 1 : 2)], n = my.d[my.n - (ty ? 2 : 1)];
  if (kx >= 0 && ky >= 0 && kx != ky)
    return pd_infer_fail(c, PD_ESHAPE,
                         "X%s has %" PRId64 " columns but Y%s has %" PRId64 " rows (%s x %s)",
                         tx ? "^T" : "", kx, ty ? "^T" : "", ky, pd_infer_dims_str(&dx, sx),
                         pd_infer_dims_str(&dy, sy));
  /* Batch dims. */
  if (v1) {
    /* Counted as one: equal, or one operand a single matrix; Out takes the batched one's. */
    int64_t bx = fluid_batch(&mx), by = fluid_batch(&my);
    if (bx > 0 && by > 0 && bx != by)
      return pd_infer_fail(c, PD_ESHAPE, "X's %" PRId64 " matrices and Y's %" PRId64 " differ "
                           "(%s x %s): matmul multiplies equal batches, or one by a matrix",
                           bx, by, pd_infer_dims_str(&dx, sx), pd_infer_dims_str(&dy, sy));
    const pd_infer_dims *bd = mx.n > 2 ? &mx : &my;
    out.n = bd->n > 2 ? bd->n - 2 : 0;
    for (int i = 0; i < out.n; i++) out.d[i] = bd->d[i];
    if (dx.n > 1 || m != 1) out.d[out.n++] = m;
    if (dy.n > 1 || n != 1) out.d[out.n++] = n;
  } else {
    pd_infer_dims bx = {.n = mx.n - 2}, by = {.n = my.n - 2};
    for (int i = 0; i < bx.n; i++) bx.d[i] = mx.d[i];
    for (int i = 0; i < by.n; i++) by.d[i] = my.d[i];
    if (!pd_infer_broadcast_dims(&bx, &by, &out))
      return pd_infer_fail(c, PD_ESHAPE, "cannot broadcast the batch dims of %s and %s",
                           pd_infer_dims_str(&dx, sx), pd_infer_dims_str(&dy, sy));
    if (dx.n > 1) out.d[out.n++] = m;
    if (dy.n > 1) out.d[out.n++] = n;
  }
  if (out.n == 0) out = (pd_infer_dims){.n = 1, .d = {1}};  /* vector . vector */
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, lod);
}

/* memory_efficient_attention: query [B, Sq, H, D], key [B, Sk, H, D], value [B, Sk, H, Dv] ->
 * output [B, Sq, H, Dv], logsumexp [B, H, Sq], seed_and_offset [2] int64; the bias broadcasts
 * to [B, H, Sq, Sk]. */
pd_status pd_infer_memory_efficient_attention(pd_infer_ctx *c) {
  const pd_var_desc *q, *k, *v, *b;
  pd_infer_dims dq, dk, dv, db, scores;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF], s3[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "query", 0, &q, &dq)) || (st = pd_infer_in(c, "key", 0, &k, &dk)) ||
      (st = pd_infer_in(c, "value", 0, &v, &dv)) ||
      (st = pd_infer_same_dtype(c, "query", q->dtype, "key", k->dtype)) ||
      (st = pd_infer_same_dtype(c, "query", q->dtype, "value", v->dtype)))
    return st;
  pd_infer_dims out = pd_infer_dims_unknown(4), lse = pd_infer_dims_unknown(3);
  if (dq.n >= 0 && dk.n >= 0 && dv.n >= 0) {
    if (dq.n != 4 || dk.n != 4 || dv.n != 4)
      return pd_infer_fail(c, PD_ESHAPE, "query %s, key %s and value %s must be 4-D: [batch, "
                           "length, heads, head size]", pd_infer_dims_str(&dq, s1),
                           pd_infer_dims_str(&dk, s2), pd_infer_dims_str(&dv, s3));
    bool ok = true;
    for (int i = 0; i < 3; i += 2) /* batch and heads */
      ok &= pd_infer_dim_compatible(dq.d[i], dk.d[i]) && pd_infer_dim_compatible(dk.d[i], dv.d[i]);
    ok &= pd_infer_dim_compatible(dk.d[1], dv.d[1]) && pd_infer_dim_compatible(dq.d[3], dk.d[3]);
    if (!ok)
      return pd_infer_fail(c, PD_ESHAPE, "query %s, key %s and value %s do not fit: the batch "
                           "and heads must agree, key and value be one length, query and key of "
                           "one head size", pd_infer_dims_str(&dq, s1),
                           pd_infer_dims_str(&dk, s2), pd_infer_dims_str(&dv, s3));
    int64_t bt = pd_infer_dim_merge(dq.d[0], pd_infer_dim_merge(dk.d[0], dv.d[0]));
    int64_t h = pd_infer_dim_merge(dq.d[2], pd_infer_dim_merge(dk.d[2], dv.d[2]));
    out = (pd_infer_dims){.n = 4, .d = {bt, dq.d[1], h, dv.d[3]}};
    lse = (pd_infer_dims){.n = 3, .d = {bt, h, dq.d[1]}};
    scores = (pd_infer_dims){.n = 4, .d = {bt, h, dq.d[1], pd_infer_dim_merge(dk.d[1], dv.d[1])}};
    if (pd_infer_nin(c, "bias") && !(st = pd_infer_in(c, "bias", 0, &b, &db)) && db.n >= 0) {
      pd_infer_dims bc;
      if (db.n > 4 || !pd_infer_broadcast_dims(&db, &scores, &bc) || bc.n != 4 ||
          !pd_infer_dim_compatible(bc.d[0], bt) || !pd_infer_dim_compatible(bc.d[1], h) ||
          !pd_infer_dim_compatible(bc.d[2], scores.d[2]) ||
          !pd_infer_dim_compatible(bc.d[3], scores.d[3]))
        return pd_infer_fail(c, PD_ESHAPE, "bias %s does not broadcast to the scores [batch, "
                             "heads, query length, key length] %s", pd_infer_dims_str(&db, s1),
                             pd_infer_dims_str(&scores, s2));
    }
    if (st) return st;
  }
  pd_infer_dims two = {.n = 1, .d = {2}};
  if ((st = pd_infer_set_out(c, "output", 0, &out, q->dtype, 0)) ||
      (st = pd_infer_set_out(c, "logsumexp", 0, &lse, q->dtype, 0)))
    return st;
  return pd_infer_set_out(c, "seed_and_offset", 0, &two, PD_INT64, 0);
}

/* ================================================================ matrix products */

/* ---- Mixed precision: an op flagged AMP (vm/oplist.h) whose mkldnn_data_type is "bfloat16"
 * (what Paddle's oneDNN bf16 passes set, and what train(..., amp = "bf16") sets through
 * vm/passes/amp.h; the gradient op copies it) or "float16" (amp = "fp16") multiplies its fp32
 * operands in that precision through the backend's gemm_lp, fp32 tensors in and out. Without
 * gemm_lp (the CUDA backend, for now) it computes in fp32. ---- */
static pd_dtype op_lp(const pd_exec_ctx *ctx, pd_dtype dt) {
  return ctx->k->gemm_lp ? amp_precision(ctx, dt) : PD_FP32;
}

/* The backend's gemm, gemm_batched and gemm_bias, or gemm_lp in the op's low precision. */
static pd_status op_gemm_batched(const pd_exec_ctx *ctx, pd_dtype dt, bool ta, bool tb,
                                 int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
                                 const void *a, int64_t lda, int64_t sa, const void *b,
                                 int64_t ldb, int64_t sb, double beta, void *c, int64_t ldc,
                                 int64_t sc) {
  pd_dtype lp = op_lp(ctx, dt);
  if (lp != PD_FP32)
    return ctx->k->gemm_lp(lp, ta, tb, batch, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                           ldc, sc, NULL);
  return ctx->k->gemm_batched(dt, ta, tb, batch, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                              ldc, sc);
}

static pd_status op_gemm(const pd_exec_ctx *ctx, pd_dtype dt, bool ta, bool tb, int64_t m,
                         int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                         const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
  if (op_lp(ctx, dt) != PD_FP32)
    return op_gemm_batched(ctx, dt, ta, tb, 1, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c,
                           ldc, 0);
  return ctx->k->gemm(dt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static pd_status op_gemm_bias(const pd_exec_ctx *ctx, pd_dtype dt, bool ta, bool tb, int64_t m,
                              int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                              int64_t ldb, const void *bias, void *c, int64_t ldc) {
  pd_dtype lp = op_lp(ctx, dt);
  if (lp != PD_FP32)
    return ctx->k->gemm_lp(lp, ta, tb, 1, m, n, k, 1.0, a, lda, 0, b, ldb, 0, 0.0, c, ldc, 0,
                           bias);
  return ctx->k->gemm_bias(dt, ta, tb, m, n, k, a, lda, b, ldb, bias, c, ldc);
}

/* ---- mul: X flattened to [M, K] at x_num_col_dims times Y flattened to [K, N] at
 * y_num_col_dims; Out = X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:], with X's LoD. One
 * GEMM straight on the tensors' data. ---- */
typedef struct mul_plan {
  int64_t m, k, n;
  int ond;
  int64_t od[PD_K_MAX_DIMS];
} mul_plan;

static pd_status mul_plan_make(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *y,
                               mul_plan *p) {
  char sx[DIMS_BUF], sy[DIMS_BUF];
  int64_t xn = pd_ctx_attr_int(ctx, "x_num_col_dims"), yn = pd_ctx_attr_int(ctx, "y_num_col_dims");
  if (xn < 1 || xn >= x->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "x_num_col_dims %" PRId64 " does not split X %s in two "
                       "(expected 1 to %d)", xn, shape_str(x, sx), x->ndims - 1);
  if (yn < 1 || yn >= y->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "y_num_col_dims %" PRId64 " does not split Y %s in two "
                       "(expected 1 to %d)", yn, shape_str(y, sy), y->ndims - 1);
  p->m = prod(x->dims, 0, (int)xn);
  p->k = prod(x->dims, (int)xn, x->ndims);
  int64_t rows = prod(y->dims, 0, (int)yn);
  p->n = prod(y->dims, (int)yn, y->ndims);
  if (p->k != rows)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X has %" PRId64 " columns but Y has %" PRId64
                       " rows (%s x %s)", p->k, rows, shape_str(x, sx), shape_str(y, sy));
  p->ond = (int)xn + y->ndims - (int)yn;
  if (p->ond > PD_K_MAX_DIMS)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "Out would have %d dims; at most %d are supported",
                       p->ond, PD_K_MAX_DIMS);
  for (int i = 0; i < xn; i++) p->od[i] = x->dims[i];
  for (int i = (int)yn; i < y->ndims; i++) p->od[xn + i - yn] = y->dims[i];
  return PD_OK;
}

pd_status pd_kernel_mul(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  mul_plan p;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "X", x, "Y", y)) ||
      (st = mul_plan_make(ctx, x, y, &p)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y)) ||
      (st = resize(ctx, out, x->dtype, p.ond, p.od, x)))
    goto done;
  st = k_check(ctx,
               op_gemm(ctx, x->dtype, false, false, p.m, p.n, p.k, 1.0, pd_tensor_data(x), ld(p.k),
                            pd_tensor_data(y), ld(p.n), 0.0, pd_tensor_data(out), ld(p.n)),
               x->dtype);
done:
  hold_free(&h);
  return st;
}

/* The gradients of Out [M, N] = X [M, K] Y [K, N] (mul, fc), each when wanted (non-NULL):
 * dX = dOut Y^T, dY = X^T dOut, shaped like X and Y. */
static pd_status product_grads(const pd_exec_ctx *ctx, int64_t m, int64_t k, int64_t n,
                               const pd_tensor *x, const pd_tensor *y, const pd_tensor *dout,
                               pd_tensor *dx, pd_tensor *dy) {
  pd_dtype dt = x->dtype;
  pd_status st = PD_OK;
  if (dx && !(st = resize_like(ctx, dx, x, x)))
    st = k_check(ctx,
                 op_gemm(ctx, dt, false, true, m, k, n, 1.0, pd_tensor_data(dout), ld(n),
                              pd_tensor_data(y), ld(n), 0.0, pd_tensor_data(dx), ld(k)),
                 dt);
  if (!st && dy && !(st = resize_like(ctx, dy, y, y)))
    st = k_check(ctx,
                 op_gemm(ctx, dt, true, false, k, n, m, 1.0, pd_tensor_data(x), ld(k),
                              pd_tensor_data(dout), ld(n), 0.0, pd_tensor_data(dy), ld(n)),
                 dt);
  return st;
}

/* dX [M, K] = dOut [M, N] Y^T; dY [K, N] = X^T dOut. */
pd_status pd_kernel_mul_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y, *dout;
  pd_tensor *dx, *dy;
  bool none;
  mul_plan p;
  pd_status st = grad2_begin(ctx, &x, &y, &dout, &dx, &dy, &none);
  if (st || none) return st;
  if ((st = mul_plan_make(ctx, x, y, &p)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, p.ond, p.od, "Out")))
    return st;
  hold h;
  hold_init(&h);
  if ((st = grad2_unalias(ctx, &h, dx, dy, &x, &y, &dout))) goto done;
  st = product_grads(ctx, p.m, p.k, p.n, x, y, dout, dx, dy);
done:
  hold_free(&h);
  return st;
}

/* ---- fc: Input flattened to [M, K] at in_num_col_dims times W [K, N], plus Bias ([N] or
 * [1, N]) on every row; Out = Input.dims[:in_num_col_dims] + [N], with Input's LoD. What the
 * fuse_fc pass (vm/passes/fuse_fc.h) makes of mul + elementwise_add: one gemm_bias (kernels.h), the
 * product accumulated onto the bias rows, where the two ops wrote a second [M, N] tensor and
 * passed over the first three times (clear, product, add: an output layer's logits are 1.6 MB a
 * step). A W that no op of the program writes (an inference model's) goes to the backend's
 * gemm_const_b, which keeps its prepared copy with W's storage. ---- */
typedef struct fc_plan {
  int64_t m, k, n;
  int ond;
  int64_t od[PD_K_MAX_DIMS];
} fc_plan;

static pd_status fc_plan_make(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *w,
                              const pd_tensor *b, fc_plan *p) {
  char sx[DIMS_BUF], sw[DIMS_BUF], sb[DIMS_BUF];
  int64_t xn = pd_ctx_attr_int(ctx, "in_num_col_dims");
  if (*pd_ctx_attr_str(ctx, "activation_type") || pd_ctx_attr_bool(ctx, "padding_weights"))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "activation_type and padding_weights are not "
                       "supported (expected \"\" and false)");
  if (xn < 1 || xn >= x->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "in_num_col_dims %" PRId64 " does not split Input %s in "
                       "two (expected 1 to %d)", xn, shape_str(x, sx), x->ndims - 1);
  if (w->ndims != 2)
    return pd_ctx_fail(ctx, PD_ESHAPE, "W must be a matrix [K, N], not %s", shape_str(w, sw));
  p->m = prod(x->dims, 0, (int)xn);
  p->k = prod(x->dims, (int)xn, x->ndims);
  p->n = w->dims[1];
  if (p->k != w->dims[0])
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input has %" PRId64 " columns but W has %" PRId64
                       " rows (%s x %s)", p->k, w->dims[0], shape_str(x, sx), shape_str(w, sw));
  if (b && !((b->ndims == 1 && b->dims[0] == p->n) ||
             (b->ndims == 2 && b->dims[0] == 1 && b->dims[1] == p->n)))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Bias %s must be [%" PRId64 "] or [1, %" PRId64 "] for W %s",
                       shape_str(b, sb), p->n, p->n, shape_str(w, sw));
  p->ond = (int)xn + 1;
  for (int i = 0; i < xn; i++) p->od[i] = x->dims[i];
  p->od[xn] = p->n;
  return PD_OK;
}

pd_status pd_kernel_fc(pd_exec_ctx *ctx) {
  const pd_tensor *x, *w, *b;
  pd_tensor *out;
  pd_status st;
  fc_plan p;
  if ((st = in1(ctx, "Input", &x)) || (st = in1(ctx, "W", &w)) || (st = in_opt(ctx, "Bias", &b)) ||
      (st = out1(ctx, "Out", &out)) || (st = want_float(ctx, "Input", x)) ||
      (st = want_same_dtype(ctx, "Input", x, "W", w)) ||
      (b && (st = want_same_dtype(ctx, "Input", x, "Bias", b))) ||
      (st = fc_plan_make(ctx, x, w, b, &p)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &w)) ||
      (b && (st = unalias(ctx, &h, out, &b))) ||
      (st = resize(ctx, out, x->dtype, p.ond, p.od, x)))
    goto done;
  pd_dtype dt = x->dtype;
  pd_k_prepared **prep =
      ctx->k->gemm_const_b && op_lp(ctx, dt) == PD_FP32 && pd_ctx_in_const(ctx, "W", 0)
          ? pd_tensor_prepared(w)
          : NULL;
  if (prep)  /* an inference model's weights: the backend's copy of W, made once */
    st = k_check(ctx,
                 ctx->k->gemm_const_b(dt, p.m, p.n, p.k, pd_tensor_data(x), pd_tensor_data(w),
                                      b ? pd_tensor_data(b) : NULL, pd_tensor_data(out), prep),
                 dt);
  else if (b)
    st = k_check(ctx,
                 op_gemm_bias(ctx, dt, false, false, p.m, p.n, p.k, pd_tensor_data(x), ld(p.k),
                                   pd_tensor_data(w), ld(p.n), pd_tensor_data(b),
                                   pd_tensor_data(out), ld(p.n)),
                 dt);
  else
    st = k_check(ctx,
                 op_gemm(ctx, dt, false, false, p.m, p.n, p.k, 1.0, pd_tensor_data(x), ld(p.k),
                              pd_tensor_data(w), ld(p.n), 0.0, pd_tensor_data(out), ld(p.n)),
                 dt);
done:
  hold_free(&h);
  return st;
}

/* dInput [M, K] = dOut W^T; dW [K, N] = Input^T dOut; dBias = dOut's column sums. */
pd_status pd_kernel_fc_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *w, *b, *dout;
  pd_tensor *dx, *dw, *db;
  pd_status st;
  fc_plan p;
  if ((st = out_opt(ctx, "Input@GRAD", &dx)) || (st = out_opt(ctx, "W@GRAD", &dw)) ||
      (st = out_opt(ctx, "Bias@GRAD", &db)))
    return st;
  if (!dx && !dw && !db) return PD_OK;
  if ((st = in1(ctx, "Input", &x)) || (st = in1(ctx, "W", &w)) || (st = in_opt(ctx, "Bias", &b)) ||
      (st = in1(ctx, "Out@GRAD", &dout)) || (st = want_float(ctx, "Input", x)) ||
      (st = want_same_dtype(ctx, "Input", x, "W", w)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, "Input", x)) ||
      (st = fc_plan_make(ctx, x, w, b, &p)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, p.ond, p.od, "Out")))
    return st;
  if (db && !b) return pd_ctx_fail(ctx, PD_EINVAL, "Bias@GRAD is wanted but Bias is not bound");
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {dx, dw, db};
  const pd_tensor **ins[4] = {&x, &w, &b, &dout};
  for (int i = 0; i < 3 && !st; i++)
    for (int j = 0; j < 4 && !st; j++)
      if (*ins[j]) st = unalias(ctx, &h, outs[i], ins[j]);
  if (st) goto done;
  st = product_grads(ctx, p.m, p.k, p.n, x, w, dout, dx, dw);
  if (!st && db && !(st = resize_like(ctx, db, b, b))) {
    int64_t od[2] = {p.m, p.n}, pad[2] = {1, p.n};
    st = sum_to(ctx, x->dtype, 2, od, pad, pd_tensor_data(dout), pd_tensor_data(db), 1.0);
  }
done:
  hold_free(&h);
  return st;
}

/* ---- matmul and matmul_v2 (vm/oplist.h): X [..., M, K] (stored [..., K, M] when transposed)
 * times Y [..., K, N] ([..., N, K] when transposed), times alpha (matmul; 1 for matmul_v2); a 1-D
 * X is a row [1, K], a 1-D Y a column [K, 1] (matmul_v2 ignores their transposes), the added dim
 * dropped from Out again (matmul: where it is still 1). matmul_v2's batch dims (all but the last
 * two) broadcast; matmul's are one count, equal or absent on one side. ---- */
typedef struct mm_plan {
  bool tx, ty;
  double alpha;
  int64_t m, n, k;
  int nb;                                  /* batch rank (of Out; matmul: 1, the count) */
  int64_t bd[PD_K_MAX_DIMS];               /* Out's batch dims */
  int64_t xb[PD_K_MAX_DIMS], yb[PD_K_MAX_DIMS];  /* X's and Y's, padded to nb with 1s */
  int64_t batch, xbatch, ybatch;           /* batch element counts */
  int64_t xmat, ymat, omat;                /* elements per matrix */
  int64_t ldx, ldy;                        /* row strides of X's and Y's stored matrices */
  int ond;
  int64_t od[PD_K_MAX_DIMS];
} mm_plan;

/* Fluid's matmul: the batch as one count (X's or Y's matrices, or 1 for a single matrix) and
 * Out's dims (the batched operand's leading dims, M and N but a 1-D operand's dim of 1). */
static pd_status mm_plan_fluid(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *y,
                               mm_plan *p) {
  char sx[DIMS_BUF], sy[DIMS_BUF];
  int xnd = x->ndims, ynd = y->ndims;
  int64_t bx = 1, by = 1;
  for (int i = 0; i + 2 < xnd; i++) bx *= x->dims[i];
  for (int i = 0; i + 2 < ynd; i++) by *= y->dims[i];
  if (xnd > 2 && ynd > 2 && bx != by)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X's %" PRId64 " matrices and Y's %" PRId64 " differ "
                       "(%s x %s): matmul multiplies equal batches, or one by a matrix", bx, by,
                       shape_str(x, sx), shape_str(y, sy));
  p->nb = 1;
  p->xb[0] = p->xbatch = bx;
  p->yb[0] = p->ybatch = by;
  p->bd[0] = p->batch = xnd > 2 ? bx : by;  /* equal where both are batched */
  const pd_tensor *lead = xnd > 2 ? x : y;
  p->ond = 0;
  for (int i = 0; i + 2 < lead->ndims; i++) p->od[p->ond++] = lead->dims[i];
  if (xnd > 1 || p->m != 1) p->od[p->ond++] = p->m;
  if (ynd > 1 || p->n != 1) p->od[p->ond++] = p->n;
  return PD_OK;
}

/* NumPy's: the batch dims aligned from the right, those of 1 repeated. */
static pd_status mm_plan_numpy(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *y,
                               mm_plan *p) {
  char sx[DIMS_BUF], sy[DIMS_BUF];
  int xnd = x->ndims, ynd = y->ndims;
  int xbn = xnd > 2 ? xnd - 2 : 0, ybn = ynd > 2 ? ynd - 2 : 0;
  p->nb = xbn > ybn ? xbn : ybn;
  p->batch = p->xbatch = p->ybatch = 1;
  for (int i = 0; i < p->nb; i++) {
    int xi = i - (p->nb - xbn), yi = i - (p->nb - ybn);
    p->xb[i] = xi >= 0 ? x->dims[xi] : 1;
    p->yb[i] = yi >= 0 ? y->dims[yi] : 1;
    if (p->xb[i] != p->yb[i] && p->xb[i] != 1 && p->yb[i] != 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "cannot broadcast the batch dims of %s and %s",
                         shape_str(x, sx), shape_str(y, sy));
    p->bd[i] = p->xb[i] == 1 ? p->yb[i] : p->xb[i];
    p->batch *= p->bd[i];
    p->xbatch *= p->xb[i];
    p->ybatch *= p->yb[i];
  }
  p->ond = 0;
  for (int i = 0; i < p->nb; i++) p->od[p->ond++] = p->bd[i];
  if (xnd > 1) p->od[p->ond++] = p->m;
  if (ynd > 1) p->od[p->ond++] = p->n;
  return PD_OK;
}

static pd_status mm_plan_make(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *y,
                              mm_plan *p) {
  char sx[DIMS_BUF], sy[DIMS_BUF];
  int xnd = x->ndims, ynd = y->ndims;
  bool v1 = ctx->def->karg == PD_OPV_MATMUL;
  if (xnd == 0 || ynd == 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "cannot multiply %s by %s: both need at least 1 dim",
                       shape_str(x, sx), shape_str(y, sy));
  p->tx = pd_ctx_attr_bool(ctx, v1 ? "transpose_X" : "trans_x") && (v1 || xnd > 1);
  p->ty = pd_ctx_attr_bool(ctx, v1 ? "transpose_Y" : "trans_y") && (v1 || ynd > 1);
  p->alpha = v1 ? pd_ctx_attr_float(ctx, "alpha") : 1.0;
  int64_t xr = xnd == 1 ? 1 : x->dims[xnd - 2], xc = x->dims[xnd - 1];
  int64_t yr = ynd == 1 ? y->dims[0] : y->dims[ynd - 2], yc = ynd == 1 ? 1 : y->dims[ynd - 1];
  p->m = p->tx ? xc : xr;
  p->k = p->tx ? xr : xc;
  int64_t ky = p->ty ? yc : yr;
  p->n = p->ty ? yr : yc;
  if (p->k != ky)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X%s has %" PRId64 " columns but Y%s has %" PRId64
                       " rows (%s x %s)", p->tx ? "^T" : "", p->k, p->ty ? "^T" : "", ky,
                       shape_str(x, sx), shape_str(y, sy));
  p->ldx = xc;
  p->ldy = yc;
  pd_status st = v1 ? mm_plan_fluid(ctx, x, y, p) : mm_plan_numpy(ctx, x, y, p);
  if (st) return st;
  p->xmat = p->m * p->k;
  p->ymat = p->k * p->n;
  p->omat = p->m * p->n;
  if (p->ond == 0) p->od[p->ond++] = 1;  /* vector . vector: [1], as the shape function says */
  return PD_OK;
}

/* The matrices of X and Y that Out's batch element b multiplies. */
static void mm_batch_index(const mm_plan *p, int64_t b, int64_t *xi, int64_t *yi) {
  int64_t x = 0, y = 0, xs = 1, ys = 1;
  for (int d = p->nb - 1; d >= 0; d--) {
    int64_t idx = b % p->bd[d];
    b /= p->bd[d];
    if (p->xb[d] != 1) x += idx * xs;
    if (p->yb[d] != 1) y += idx * ys;
    xs *= p->xb[d];
    ys *= p->yb[d];
  }
  *xi = x;
  *yi = y;
}

pd_status pd_kernel_matmul(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  mm_plan p;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "X", x, "Y", y)) ||
      (st = mm_plan_make(ctx, x, y, &p)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y)) ||
      (st = resize(ctx, out, x->dtype, p.ond, p.od, ctx->def->karg == PD_OPV_MATMUL ? x : NULL)))
    goto done;
  pd_dtype dt = x->dtype;
  size_t sz = pd_dtype_size(dt);
  const char *xd = pd_tensor_data(x), *yd = pd_tensor_data(y);
  char *od = pd_tensor_data(out);
  int64_t ldo = ld(p.n);
  if (p.batch == 0) goto done;
  if (!p.tx && p.ybatch == 1 && p.xbatch == p.batch) {
    /* One matrix Y for every batch element (an fc layer over a sequence): fold the batch into
     * X's rows, one GEMM; a Y that no op of the program writes (a model's weight without a bias
     * add) through the backend's prepared copy, as fc's W. */
    pd_k_prepared **prep =
        !p.ty && p.alpha == 1.0 && p.ldx == p.k && p.ldy == p.n && ctx->k->gemm_const_b &&
                op_lp(ctx, dt) == PD_FP32 && pd_ctx_in_const(ctx, "Y", 0)
            ? pd_tensor_prepared(y)
            : NULL;
    if (prep)
      st = ctx->k->gemm_const_b(dt, p.batch * p.m, p.n, p.k, xd, yd, NULL, od, prep);
    else
      st = op_gemm(ctx, dt, false, p.ty, p.batch * p.m, p.n, p.k, p.alpha, xd, ld(p.ldx), yd,
                   ld(p.ldy), 0.0, od, ldo);
  } else if ((p.xbatch == p.batch || p.xbatch == 1) && (p.ybatch == p.batch || p.ybatch == 1)) {
    st = op_gemm_batched(ctx, dt, p.tx, p.ty, p.batch, p.m, p.n, p.k, p.alpha, xd, ld(p.ldx),
                              p.xbatch == 1 ? 0 : p.xmat, yd, ld(p.ldy),
                              p.ybatch == 1 ? 0 : p.ymat, 0.0, od, ldo, p.omat);
  } else {
    for (int64_t b = 0; b < p.batch && !st; b++) {
      int64_t xi, yi;
      mm_batch_index(&p, b, &xi, &yi);
      st = op_gemm(ctx, dt, p.tx, p.ty, p.m, p.n, p.k, p.alpha, xd + (size_t)(xi * p.xmat) * sz,
                        ld(p.ldx), yd + (size_t)(yi * p.ymat) * sz, ld(p.ldy), 0.0,
                        od + (size_t)(b * p.omat) * sz, ldo);
    }
  }
  st = k_check(ctx, st, dt);
done:
  hold_free(&h);
  return st;
}

/* Per batch element b (X's matrix xi, Y's yi), with op() the stored matrix or its transpose:
 *   dX_xi += alpha dOut_b op(Y)^T      (stored transposed when trans_x: op(Y) dOut_b^T)
 *   dY_yi += alpha op(X)^T dOut_b      (stored transposed when trans_y: dOut_b^T op(X))
 * Where X (or Y) was broadcast along the batch, its gradient sums over the batch elements that
 * used it: it is cleared first and every product adds in. */
pd_status pd_kernel_matmul_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y, *dout;
  pd_tensor *dx, *dy;
  bool none;
  mm_plan p;
  pd_status st = grad2_begin(ctx, &x, &y, &dout, &dx, &dy, &none);
  if (st || none) return st;
  if ((st = mm_plan_make(ctx, x, y, &p)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, p.ond, p.od, "Out")))
    return st;
  hold h;
  hold_init(&h);
  if ((st = grad2_unalias(ctx, &h, dx, dy, &x, &y, &dout))) goto done;
  if ((dx && (st = resize_like(ctx, dx, x, x))) || (dy && (st = resize_like(ctx, dy, y, y))))
    goto done;
  pd_dtype dt = x->dtype;
  size_t sz = pd_dtype_size(dt);
  const char *xd = pd_tensor_data(x), *yd = pd_tensor_data(y), *gd = pd_tensor_data(dout);
  char *dxd = dx ? pd_tensor_data(dx) : NULL, *dyd = dy ? pd_tensor_data(dy) : NULL;
  int64_t ldo = ld(p.n), ldx = ld(p.ldx), ldy = ld(p.ldy);
  if (p.batch == 0 || p.m * p.n * p.k == 0) {
    /* Nothing multiplies: the gradients are zero (an empty K makes Out zero). */
    if (dx) st = ctx->k->fill(dt, pd_tensor_numel(dx), dxd, 0.0);
    if (!st && dy) st = ctx->k->fill(dt, pd_tensor_numel(dy), dyd, 0.0);
    st = k_check(ctx, st, dt);
    goto done;
  }
  if (!p.tx && p.ybatch == 1 && p.xbatch == p.batch) {
    /* The folded forward (see pd_kernel_matmul): X's rows [B * M, K]. dY's product sums over
     * the batch by itself. */
    int64_t rows = p.batch * p.m;
    if (dx)
      st = op_gemm(ctx, dt, false, !p.ty, rows, p.k, p.n, p.alpha, gd, ldo, yd, ldy, 0.0, dxd,
                   ld(p.k));
    if (!st && dy) {
      if (!p.ty)
        st =
            op_gemm(ctx, dt, true, false, p.k, p.n, rows, p.alpha, xd, ldx, gd, ldo, 0.0, dyd, ldo);
      else
        st = op_gemm(ctx, dt, true, false, p.n, p.k, rows, p.alpha, gd, ldo, xd, ldx, 0.0, dyd,
                     ld(p.k));
    }
    st = k_check(ctx, st, dt);
    goto done;
  }
  bool xsum = p.xbatch != p.batch, ysum = p.ybatch != p.batch;
  if ((p.xbatch == p.batch || p.xbatch == 1) && (p.ybatch == p.batch || p.ybatch == 1)) {
    /* Strided operands (a broadcast one has stride 0): a gradient that needs no sum over the
     * batch is one batched GEMM (on the GPU one launch, not two per batch element); one that
     * sums (X or Y broadcast) takes the loop below. */
    int64_t sx = p.xbatch == 1 ? 0 : p.xmat, sy = p.ybatch == 1 ? 0 : p.ymat;
    if (dx && !xsum) {
      if (!p.tx)
        st = op_gemm_batched(ctx, dt, false, !p.ty, p.batch, p.m, p.k, p.n, p.alpha, gd, ldo,
                             p.omat, yd, ldy, sy, 0.0, dxd, ld(p.k), p.xmat);
      else
        st = op_gemm_batched(ctx, dt, p.ty, true, p.batch, p.k, p.m, p.n, p.alpha, yd, ldy, sy, gd,
                             ldo, p.omat, 0.0, dxd, ld(p.m), p.xmat);
      dx = NULL;
    }
    if (!st && dy && !ysum) {
      if (!p.ty)
        st = op_gemm_batched(ctx, dt, !p.tx, false, p.batch, p.k, p.n, p.m, p.alpha, xd, ldx, sx,
                             gd, ldo, p.omat, 0.0, dyd, ldo, p.ymat);
      else
        st = op_gemm_batched(ctx, dt, true, p.tx, p.batch, p.n, p.k, p.m, p.alpha, gd, ldo, p.omat,
                             xd, ldx, sx, 0.0, dyd, ld(p.k), p.ymat);
      dy = NULL;
    }
  }
  if (!st && dx && xsum) st = ctx->k->fill(dt, pd_tensor_numel(dx), dxd, 0.0);
  if (!st && dy && ysum) st = ctx->k->fill(dt, pd_tensor_numel(dy), dyd, 0.0);
  for (int64_t b = 0; b < p.batch && !st && (dx || dy); b++) {
    int64_t xi, yi;
    mm_batch_index(&p, b, &xi, &yi);
    const char *xm = xd + (size_t)(xi * p.xmat) * sz, *ym = yd + (size_t)(yi * p.ymat) * sz;
    const char *gm = gd + (size_t)(b * p.omat) * sz;
    if (dx) {
      char *o = dxd + (size_t)(xi * p.xmat) * sz;
      double beta = xsum ? 1.0 : 0.0;
      if (!p.tx)
        st = op_gemm(ctx, dt, false, !p.ty, p.m, p.k, p.n, p.alpha, gm, ldo, ym, ldy, beta, o,
                     ld(p.k));
      else
        st = op_gemm(ctx, dt, p.ty, true, p.k, p.m, p.n, p.alpha, ym, ldy, gm, ldo, beta, o,
                     ld(p.m));
    }
    if (!st && dy) {
      char *o = dyd + (size_t)(yi * p.ymat) * sz;
      double beta = ysum ? 1.0 : 0.0;
      if (!p.ty)
        st = op_gemm(ctx, dt, !p.tx, false, p.k, p.n, p.m, p.alpha, xm, ldx, gm, ldo, beta, o, ldo);
      else
        st = op_gemm(ctx, dt, true, p.tx, p.n, p.k, p.m, p.alpha, gm, ldo, xm, ldx, beta, o,
                     ld(p.k));
    }
  }
  st = k_check(ctx, st, dt);
done:
  hold_free(&h);
  return st;
}

/* ---- memory_efficient_attention (vm/oplist.h): the backend's attention entry ---- */

/* The bias's strides along [batch, heads, sq, sk] (0 where it is broadcast), its dims aligned at
 * the end; false where it does not broadcast to those of a. */
static bool bias_strides(const pd_tensor *b, const pd_k_attention *a, int64_t st[4]) {
  const int64_t want[4] = {a->batch, a->heads, a->sq, a->sk};
  if (b->ndims > 4) return false;
  int64_t stride = 1;
  for (int i = 3; i >= 0; i--) {
    int j = i - (4 - b->ndims); /* the bias's dim, if any */
    int64_t n = j >= 0 ? b->dims[j] : 1;
    if (n != want[i] && n != 1) return false;
    st[i] = n == 1 ? 0 : stride;
    stride *= n;
  }
  return true;
}

pd_status pd_kernel_memory_efficient_attention(pd_exec_ctx *ctx) {
  static const char *const varlen[] = {"cu_seqlens_q", "cu_seqlens_k", "causal_diagonal",
                                       "seqlen_k"};
  const pd_tensor *q, *k, *v, *bias = NULL;
  pd_tensor *out, *lse, *seed;
  char s1[DIMS_BUF], s2[DIMS_BUF], s3[DIMS_BUF];
  pd_status st;
  if ((st = in1(ctx, "query", &q)) || (st = in1(ctx, "key", &k)) || (st = in1(ctx, "value", &v)) ||
      (st = in_opt(ctx, "bias", &bias)) || (st = want_float(ctx, "query", q)) ||
      (st = want_same_dtype(ctx, "key", k, "query", q)) ||
      (st = want_same_dtype(ctx, "value", v, "query", q)) ||
      (bias && (st = want_same_dtype(ctx, "bias", bias, "query", q))) ||
      (st = out1(ctx, "output", &out)) || (st = out_opt(ctx, "logsumexp", &lse)) ||
      (st = out_opt(ctx, "seed_and_offset", &seed)))
    return st;
  for (size_t i = 0; i < sizeof varlen / sizeof *varlen; i++)
    if (in_if_set(ctx, varlen[i], 0))
      return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s is set: batches of sequences of several "
                         "lengths are not supported (pad them to one length and mask the "
                         "padding through bias)", varlen[i]);
  double p = pd_ctx_attr_float(ctx, "dropout_p");
  if (p != 0 && !pd_ctx_attr_bool(ctx, "is_test"))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "dropout_p %g outside is_test: pdlang runs "
                       "memory_efficient_attention for inference only", p);
  if (q->ndims != 4 || k->ndims != 4 || v->ndims != 4 || k->dims[0] != q->dims[0] ||
      v->dims[0] != q->dims[0] || k->dims[2] != q->dims[2] || v->dims[2] != q->dims[2] ||
      v->dims[1] != k->dims[1] || k->dims[3] != q->dims[3] || k->dims[1] < 1 ||
      q->dims[2] < 1 || q->dims[3] < 1 || v->dims[3] < 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "query %s, key %s and value %s do not fit: [batch, "
                       "length, heads, head size] each, key and value of one length (at least "
                       "1), query and key of one head size", shape_str(q, s1), shape_str(k, s2),
                       shape_str(v, s3));
  double scale = pd_ctx_attr_float(ctx, "scale");
  pd_k_attention a = {.batch = q->dims[0], .sq = q->dims[1], .sk = k->dims[1],
                      .heads = q->dims[2], .d = q->dims[3], .dv = v->dims[3],
                      .scale = scale < 0 ? 1 / sqrt((double)q->dims[3]) : scale,
                      .causal = pd_ctx_attr_bool(ctx, "causal")};
  if (bias && !bias_strides(bias, &a, a.bias_strides))
    return pd_ctx_fail(ctx, PD_ESHAPE, "bias %s does not broadcast to the scores [batch, heads, "
                       "query length, key length] %s", shape_str(bias, s1),
                       dims_str(4, (int64_t[]){a.batch, a.heads, a.sq, a.sk}, s2, sizeof s2));
  if (!ctx->k->attention)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "the backend has no attention kernel");
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &q)) || (st = unalias(ctx, &h, out, &k)) ||
      (st = unalias(ctx, &h, out, &v)) || (bias && (st = unalias(ctx, &h, out, &bias))) ||
      (st = resize(ctx, out, q->dtype, 4, (int64_t[]){a.batch, a.sq, a.heads, a.dv}, NULL)) ||
      (lse && (st = resize(ctx, lse, q->dtype, 3, (int64_t[]){a.batch, a.heads, a.sq}, NULL))) ||
      (seed && (st = resize(ctx, seed, PD_INT64, 1, (int64_t[]){2}, NULL))))
    goto done;
  if (seed) memset(pd_tensor_data(seed), 0, 2 * sizeof(int64_t));
  st = k_check(ctx, ctx->k->attention(q->dtype, &a, pd_tensor_data(q), pd_tensor_data(k),
                                      pd_tensor_data(v), bias ? pd_tensor_data(bias) : NULL,
                                      pd_tensor_data(out), lse ? pd_tensor_data(lse) : NULL),
               q->dtype);
done:
  hold_free(&h);
  return st;
}
