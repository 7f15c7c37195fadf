/* sequence.c -- the ops on the LoD of sequence batches: lod_reset, sequence_conv, sequence_pool
 * (average, sum, sqrt, last, first, max) and sequence_softmax: their shape functions, kernels and
 * gradient kernels. */
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

/* sequence_pool: one row per sequence: Out = [-1] + X.dims[1:], one LoD level fewer. MaxIndex
 * (int32, for MAX pooling's backward pass) is shaped like Out. */
pd_status pd_infer_sequence_pool(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  if (d.n == 0) return pd_infer_fail(c, PD_ESHAPE, "X must have at least 1 dim, got []");
  if (d.n > 0) d.d[0] = -1;
  int lod = x->lod_level > 0 ? x->lod_level - 1 : 0;
  if ((st = pd_infer_set_out(c, "Out", 0, &d, x->dtype, lod))) return st;
  return pd_infer_set_out(c, "MaxIndex", 0, &d, PD_INT32, lod);
}

/* sequence_conv: X [T, D] (a batch of sequences), Filter [contextLength D, M], PaddingData
 * [up + down, D] with paddingTrainable (up = max(0, -contextStart), down = max(0, contextStart +
 * contextLength - 1)): Out [T, M] with X's LoD. */
pd_status pd_infer_sequence_conv(pd_infer_ctx *c) {
  const pd_var_desc *x, *f, *p;
  pd_infer_dims d, fd, pdd;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (!st) st = pd_infer_in(c, "Filter", 0, &f, &fd);
  if (st) return st;
  int64_t len = pd_infer_attr_int(c, "contextLength"), start = pd_infer_attr_int(c, "contextStart");
  if (pd_infer_attr_int(c, "contextStride") != 1)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "contextStride must be 1 (Fluid's only one), got %lld",
                         (long long)pd_infer_attr_int(c, "contextStride"));
  if (len < 1)
    return pd_infer_fail(c, PD_EINVAL, "contextLength must be at least 1, got %lld",
                         (long long)len);
  if ((d.n >= 0 && d.n != 2) || (fd.n >= 0 && fd.n != 2) || f->dtype != x->dtype)
    return pd_infer_fail(c, PD_ESHAPE, "X [T, D] and Filter [contextLength D, M] must be 2-D of "
                         "one dtype; X is %s, Filter %s", pd_infer_dims_str(&d, s1),
                         pd_infer_dims_str(&fd, s2));
  if (d.n == 2 && fd.n == 2 && d.d[1] >= 0 && !pd_infer_dim_compatible(fd.d[0], len * d.d[1]))
    return pd_infer_fail(c, PD_ESHAPE, "Filter %s must have contextLength (%lld) x D rows, X is "
                         "%s", pd_infer_dims_str(&fd, s2), (long long)len,
                         pd_infer_dims_str(&d, s1));
  if (pd_infer_attr_bool(c, "paddingTrainable")) {
    int64_t pad = (start < 0 ? -start : 0) + (start + len - 1 > 0 ? start + len - 1 : 0);
    if (pd_infer_nin(c, "PaddingData") == 0)
      return pd_infer_fail(c, PD_EINVAL, "paddingTrainable needs PaddingData [%lld, D]",
                           (long long)pad);
    if ((st = pd_infer_in(c, "PaddingData", 0, &p, &pdd))) return st;
    if (p->dtype != x->dtype || (pdd.n >= 0 && pdd.n != 2) ||
        (pdd.n == 2 && (!pd_infer_dim_compatible(pdd.d[0], pad) ||
                        (d.n == 2 && !pd_infer_dim_compatible(pdd.d[1], d.d[1])))))
      return pd_infer_fail(c, PD_ESHAPE, "PaddingData must be [%lld, D] with X's dtype (X is %s); "
                           "it is %s", (long long)pad, pd_infer_dims_str(&d, s1),
                           pd_infer_dims_str(&pdd, s2));
  }
  pd_infer_dims o = {.n = 2, .d = {d.n == 2 ? d.d[0] : -1, fd.n == 2 ? fd.d[1] : -1}};
  return pd_infer_set_out(c, "Out", 0, &o, x->dtype, x->lod_level);
}

/* lod_reset: X's data with new sequence boundaries: those of Y (its LoD, or its data when it has
 * none), or target_lod (offsets from 0 to X's first dim); with append, they are added as a new
 * innermost level. target_lod may instead end at the number of X's top-level sequences when X
 * has LoD: it groups them, a new top level (checked at run time). Out has X's shape. */
pd_status pd_infer_lod_reset(pd_infer_ctx *c) {
  const pd_var_desc *x, *y = NULL;
  pd_infer_dims d;
  char s[PD_DIMS_BUF], sl[PD_LIST_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  if (pd_infer_nin(c, "Y") > 0 && (st = pd_infer_in(c, "Y", 0, &y, NULL))) return st;
  bool group = false;
  if (!y) {
    int n = pd_infer_attr_len(c, "target_lod");
    if (n < 2)
      return pd_infer_fail(c, PD_EINVAL, "without Y, target_lod must give at least 2 offsets, got %s",
                           pd_infer_attr_ints_str(c, "target_lod", sl));
    bool ok = pd_infer_attr_ints_at(c, "target_lod", 0) == 0;
    for (int i = 1; ok && i < n; i++)
      ok = pd_infer_attr_ints_at(c, "target_lod", i) >= pd_infer_attr_ints_at(c, "target_lod", i - 1);
    if (!ok)
      return pd_infer_fail(c, PD_EINVAL, "target_lod %s must start at 0 and never decrease",
                           pd_infer_attr_ints_str(c, "target_lod", sl));
    int64_t last = pd_infer_attr_ints_at(c, "target_lod", n - 1);
    group = x->lod_level > 0 && !pd_infer_attr_bool(c, "append") && d.n > 0 && d.d[0] >= 0 &&
            last != d.d[0];
    if (d.n > 0 && d.d[0] >= 0 && last != d.d[0] && !group)
      return pd_infer_fail(c, PD_ESHAPE, "target_lod %s ends at %" PRId64 " but X %s has %" PRId64
                           " rows", pd_infer_attr_ints_str(c, "target_lod", sl), last,
                           pd_infer_dims_str(&d, s), d.d[0]);
  }
  int level = y && y->lod_level > 0 ? y->lod_level : 1;
  if (pd_infer_attr_bool(c, "append") || group) level = x->lod_level + 1;
  return pd_infer_set_out(c, "Out", 0, &d, x->dtype, level);
}

/* ================================================================ LoD ops */

/* The innermost LoD level of x (sequence ops work on it), checked against x's rows. */
static pd_status last_level(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *x,
                            const pd_lod_level **lv) {
  char s[DIMS_BUF];
  if (x->nlod < 1 || x->ndims < 1)
    return pd_ctx_fail(ctx, PD_EINVAL, "%s %s has no LoD: %s works on a batch of sequences",
                       slot, shape_str(x, s), ctx->def->forward ? ctx->def->forward->type : ctx->op->type);
  const pd_lod_level *l = &x->lod[x->nlod - 1];
  bool ok = l->n >= 1 && l->offsets[0] == 0;
  for (int64_t i = 1; ok && i < l->n; i++) ok = l->offsets[i] >= l->offsets[i - 1];
  if (!ok)
    return pd_ctx_fail(ctx, PD_EINVAL, "the LoD of %s must start at 0 and never decrease", slot);
  if (l->offsets[l->n - 1] != x->dims[0])
    return pd_ctx_fail(ctx, PD_ESHAPE, "the LoD of %s ends at %" PRId64 " but %s %s has %" PRId64
                       " rows", slot, l->offsets[l->n - 1], slot, shape_str(x, s), x->dims[0]);
  *lv = l;
  return PD_OK;
}

/* lod_reset: Out = X's data with new sequence boundaries: Y's LoD when Y has one, else Y's data
 * (int offsets), else target_lod. With append the offsets become a new innermost level under
 * X's LoD (Y's whole LoD replaces X's, as Fluid, append or not). Beyond Fluid: without append,
 * offsets that end at the number of X's top-level sequences rather than at its rows (an error
 * in Fluid) group those sequences: a new top level above X's LoD. That is how
 * sequence(..., lod_level = 2) makes sequences of sequences. */
pd_status pd_kernel_lod_reset(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y = in_if_set(ctx, "Y", 0);
  pd_tensor *out;
  pd_status st;
  char s[DIMS_BUF], sl[LIST_BUF];
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = out_at(ctx, "Out", 0, true, &out))) return st;
  if (x->ndims < 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have at least 1 dim, got %s", shape_str(x, s));
  int64_t rows = x->dims[0];
  hold h;
  hold_init(&h);
  local_buf sc = {0};
  int64_t *level = NULL, nlev = 0;
  bool group = false; /* target_lod groups X's top-level sequences (see above) */
  if ((st = unalias(ctx, &h, out, &y))) goto out;
  if (y && y->nlod > 0) {
    const pd_lod_level *yl = &y->lod[y->nlod - 1];
    if (yl->n < 1 || yl->offsets[yl->n - 1] != rows) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "the LoD of Y ends at %" PRId64 " but X %s has %" PRId64
                       " rows", yl->n ? yl->offsets[yl->n - 1] : 0, shape_str(x, s), rows);
      goto out;
    }
  } else {
    if (y) {
      if (!is_int(y->dtype)) {
        st = pd_ctx_fail(ctx, PD_ETYPE, "Y must hold int32 or int64 offsets, got %s",
                         pd_dtype_name(y->dtype));
        goto out;
      }
      nlev = pd_tensor_numel(y);
    } else {
      nlev = pd_ctx_attr_ints(ctx, "target_lod", NULL, 0);
      if (nlev < 0) nlev = 0;
    }
    if (!(level = local_get(&sc, (size_t)(nlev ? nlev : 1) * sizeof *level))) {
      st = nomem(ctx);
      goto out;
    }
    if (y) {
      for (int64_t i = 0; i < nlev; i++) level[i] = elem_i(y, i);
    } else {
      pd_ctx_attr_ints(ctx, "target_lod", level, (int)nlev);
    }
    bool ok = nlev >= 2 && level[0] == 0;
    for (int64_t i = 1; ok && i < nlev; i++) ok = level[i] >= level[i - 1];
    const char *what = y ? "Y" : "target_lod";
    if (!ok) {
      st = pd_ctx_fail(ctx, PD_EINVAL, "%s %s must hold at least 2 offsets, start at 0 and never "
                       "decrease", what, dims_str(nlev < 32 ? (int)nlev : 32, level, sl, sizeof sl));
      goto out;
    }
    group = !pd_ctx_attr_bool(ctx, "append") && x->nlod > 0 && level[nlev - 1] != rows &&
            level[nlev - 1] == x->lod[0].n - 1;
    if (level[nlev - 1] != rows && !group) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "%s %s ends at %" PRId64 " but X %s has %" PRId64 " rows",
                       what, dims_str(nlev < 32 ? (int)nlev : 32, level, sl, sizeof sl),
                       level[nlev - 1], shape_str(x, s), rows);
      goto out;
    }
  }
  bool append = pd_ctx_attr_bool(ctx, "append") && !(y && y->nlod > 0);
  if ((append || group) && (st = unalias(ctx, &h, out, &x))) goto out;
  if (out != x) {
    if ((st = resize(ctx, out, x->dtype, x->ndims, x->dims, NULL))) goto out;
    if (pd_tensor_nbytes(x)) memcpy(pd_tensor_data(out), pd_tensor_data(x), pd_tensor_nbytes(x));
  }
  if (y && y->nlod > 0) {
    if (pd_tensor_copy_lod(out, y)) st = nomem(ctx);
  } else if (append) {
    const int64_t *offs[MAXD + 1];
    int64_t lens[MAXD + 1];
    if (x->nlod >= MAXD) {
      st = pd_ctx_fail(ctx, PD_EUNSUPPORTED, "X already has %d LoD levels", x->nlod);
      goto out;
    }
    for (int l = 0; l < x->nlod; l++) {
      offs[l] = x->lod[l].offsets;
      lens[l] = x->lod[l].n;
    }
    offs[x->nlod] = level;
    lens[x->nlod] = nlev;
    if (pd_tensor_set_lod(out, x->nlod + 1, offs, lens)) st = nomem(ctx);
  } else if (group) {
    const int64_t *offs[MAXD + 1];
    int64_t lens[MAXD + 1];
    if (x->nlod >= MAXD) {
      st = pd_ctx_fail(ctx, PD_EUNSUPPORTED, "X already has %d LoD levels", x->nlod);
      goto out;
    }
    offs[0] = level;
    lens[0] = nlev;
    for (int l = 0; l < x->nlod; l++) {
      offs[l + 1] = x->lod[l].offsets;
      lens[l + 1] = x->lod[l].n;
    }
    if (pd_tensor_set_lod(out, x->nlod + 1, offs, lens)) st = nomem(ctx);
  } else {
    const int64_t *offs[1] = {level};
    if (pd_tensor_set_lod(out, 1, offs, &nlev)) st = nomem(ctx);
  }
out:
  local_free(&sc);
  hold_free(&h);
  return st;
}

/* lod_reset_grad: X@GRAD = Out@GRAD's data with X's LoD. */
pd_status pd_kernel_lod_reset_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *dy, *x;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "Out@GRAD", 0, true, &dy)) || (st = in_at(ctx, "X", 0, true, &x)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  if (dx != dy) {
    if ((st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x))) return st;
    if (pd_tensor_nbytes(dy)) memcpy(pd_tensor_data(dx), pd_tensor_data(dy), pd_tensor_nbytes(dy));
  } else if (pd_tensor_copy_lod(dx, x)) {
    return nomem(ctx);
  }
  return PD_OK;
}

/* ================================================================ sequence_conv */

/* sequence_conv's operands, checked: X [T, D] with its innermost LoD, Filter [L D, M], the
 * padding rows (NULL without paddingTrainable: zeros), the context's start and length. */
typedef struct seqconv {
  const pd_tensor *x, *filter, *pad;
  const pd_lod_level *lv;
  int64_t len, start, up, down, t, d, m;
} seqconv;

static pd_status seqconv_in(const pd_exec_ctx *ctx, seqconv *c) {
  char a[DIMS_BUF], b[DIMS_BUF];
  pd_status st;
  memset(c, 0, sizeof *c);
  if ((st = in_at(ctx, "X", 0, true, &c->x)) || (st = want_float(ctx, "X", c->x)) ||
      (st = last_level(ctx, "X", c->x, &c->lv)) || (st = in_at(ctx, "Filter", 0, true, &c->filter)))
    return st;
  c->len = pd_ctx_attr_int(ctx, "contextLength");
  c->start = pd_ctx_attr_int(ctx, "contextStart");
  c->up = c->start < 0 ? -c->start : 0;
  c->down = c->start + c->len - 1 > 0 ? c->start + c->len - 1 : 0;
  if (pd_ctx_attr_int(ctx, "contextStride") != 1 || c->len < 1)
    return pd_ctx_fail(ctx, PD_EINVAL, "contextLength must be at least 1 (it is %lld) and "
                       "contextStride 1 (it is %lld)", (long long)c->len,
                       (long long)pd_ctx_attr_int(ctx, "contextStride"));
  const pd_tensor *x = c->x, *f = c->filter;
  if (x->ndims != 2 || f->ndims != 2 || f->dtype != x->dtype || f->dims[0] != c->len * x->dims[1])
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must be [T, D] and Filter [contextLength (%lld) x D, M] "
                       "%s; X is %s, Filter %s %s", (long long)c->len, pd_dtype_name(x->dtype),
                       shape_str(x, a), shape_str(f, b), pd_dtype_name(f->dtype));
  c->t = x->dims[0];
  c->d = x->dims[1];
  c->m = f->dims[1];
  if (!pd_ctx_attr_bool(ctx, "paddingTrainable")) return PD_OK;
  if ((st = in_at(ctx, "PaddingData", 0, true, &c->pad))) return st;
  if (c->pad->dtype != x->dtype || c->pad->ndims != 2 || c->pad->dims[0] != c->up + c->down ||
      c->pad->dims[1] != c->d)
    return pd_ctx_fail(ctx, PD_ESHAPE, "PaddingData must be [%lld, %lld] %s; it is %s %s",
                       (long long)(c->up + c->down), (long long)c->d, pd_dtype_name(x->dtype),
                       shape_str(c->pad, a), pd_dtype_name(c->pad->dtype));
  return PD_OK;
}

/* Where slot j of row k of a sequence of n rows starting at row b reads: X's row (>= 0), a
 * padding row (-2 - its index), or nothing (-1): the row at k + start + j, before the sequence
 * PaddingData's row up + (k + start + j), after it row up + (k + start + j - n). */
static int64_t seqconv_src(const seqconv *c, int64_t b, int64_t n, int64_t k, int64_t j) {
  int64_t at = k + c->start + j;
  if (at >= 0 && at < n) return b + at;
  if (!c->pad) return -1;
  return -2 - (at < 0 ? c->up + at : c->up + at - n);
}

/* The context rows of every row: col [T, L D] (the projection Filter multiplies). */
static void seqconv_cols(const seqconv *c, void *col) {
  FLOAT_SWITCH(c->x->dtype, {
    const T *xd = (const T *)pd_tensor_data(c->x);
    const T *pd = c->pad ? (const T *)pd_tensor_data(c->pad) : NULL;
    T *cd = (T *)col;
    for (int64_t s = 0; s + 1 < c->lv->n; s++) {
      int64_t b = c->lv->offsets[s], n = c->lv->offsets[s + 1] - b;
      for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < c->len; j++) {
          int64_t src = seqconv_src(c, b, n, k, j);
          T *o = cd + ((b + k) * c->len + j) * c->d;
          if (src == -1) memset(o, 0, sizeof(T) * (size_t)c->d);
          else memcpy(o, src >= 0 ? xd + src * c->d : pd + (-2 - src) * c->d,
                      sizeof(T) * (size_t)c->d);
        }
    }
  });
}

/* sequence_conv: Out = col Filter, col the context rows of every row (seqconv_src). */
pd_status pd_kernel_sequence_conv(pd_exec_ctx *ctx) {
  seqconv c;
  pd_tensor *out;
  pd_status st;
  if ((st = seqconv_in(ctx, &c)) || (st = out_at(ctx, "Out", 0, true, &out))) return st;
  hold h;
  hold_init(&h);
  void *col = NULL;
  int64_t dims[2] = {c.t, c.m};
  size_t es = pd_dtype_size(c.x->dtype);
  if ((st = unalias(ctx, &h, out, &c.x)) || (st = unalias(ctx, &h, out, &c.filter)) ||
      (st = unalias(ctx, &h, out, &c.pad)))
    goto out;
  c.lv = &c.x->lod[c.x->nlod - 1];
  if (!(col = pd_ctx_scratch(ctx, (size_t)(c.t * c.len * c.d) * es + 1, &st))) goto out;
  seqconv_cols(&c, col);
  if ((st = resize(ctx, out, c.x->dtype, 2, dims, c.x))) goto out;
  st = k_check(ctx, ctx->k->gemm(c.x->dtype, false, false, c.t, c.m, c.len * c.d, 1.0, col,
                                 ld(c.len * c.d), pd_tensor_data(c.filter), ld(c.m), 0.0,
                                 pd_tensor_data(out), ld(c.m)),
               c.x->dtype);
out:
  if (col) pd_ctx_scratch_free(ctx, col);
  hold_free(&h);
  return st;
}

/* sequence_conv_grad: dcol = dOut Filter^T goes back to the rows each slot read (X's rows and,
 * with paddingTrainable, PaddingData's; zeros elsewhere), Filter's gradient is col^T dOut. */
pd_status pd_kernel_sequence_conv_grad(pd_exec_ctx *ctx) {
  seqconv c;
  const pd_tensor *dy;
  pd_tensor *dx, *df, *dp;
  pd_status st;
  if ((st = seqconv_in(ctx, &c)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = out_at(ctx, "X@GRAD", 0, false, &dx)) ||
      (st = out_at(ctx, "Filter@GRAD", 0, false, &df)) ||
      (st = out_at(ctx, "PaddingData@GRAD", 0, false, &dp)))
    return st;
  int64_t dims[2] = {c.t, c.m}, kd = c.len * c.d;
  const pd_tensor *pad_in = in_if_set(ctx, "PaddingData", 0);
  if (!pad_in) dp = NULL;
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, 2, dims, c.x->dtype))) return st;
  hold h;
  hold_init(&h);
  void *col = NULL, *dcol = NULL;
  size_t es = pd_dtype_size(c.x->dtype);
  pd_tensor *outs[3] = {dx, df, dp};
  for (int i = 0; i < 3 && !st; i++)
    if (outs[i] && !(st = unalias(ctx, &h, outs[i], &c.x)) &&
        !(st = unalias(ctx, &h, outs[i], &c.filter)) && !(st = unalias(ctx, &h, outs[i], &c.pad)))
      st = unalias(ctx, &h, outs[i], &dy);
  if (st) goto out;
  c.lv = &c.x->lod[c.x->nlod - 1];
  if (!(col = pd_ctx_scratch(ctx, (size_t)(c.t * kd) * es + 1, &st)) ||
      !(dcol = pd_ctx_scratch(ctx, (size_t)(c.t * kd) * es + 1, &st)))
    goto out;
  if (df) {
    seqconv_cols(&c, col);
    if ((st = resize_like(ctx, df, c.filter, NULL)) ||
        (st = k_check(ctx, ctx->k->gemm(c.x->dtype, true, false, kd, c.m, c.t, 1.0, col, ld(kd),
                                        pd_tensor_data(dy), ld(c.m), 0.0, pd_tensor_data(df),
                                        ld(c.m)),
                      c.x->dtype)))
      goto out;
  }
  if (!dx && !dp) goto out;
  if ((st = k_check(ctx, ctx->k->gemm(c.x->dtype, false, true, c.t, kd, c.m, 1.0,
                                      pd_tensor_data(dy), ld(c.m), pd_tensor_data(c.filter),
                                      ld(c.m), 0.0, dcol, ld(kd)),
                    c.x->dtype)) ||
      (dx && (st = resize_like(ctx, dx, c.x, c.x))) ||
      (dp && (st = resize_like(ctx, dp, pad_in, NULL))))
    goto out;
  if (dx && pd_tensor_nbytes(dx)) memset(pd_tensor_data(dx), 0, pd_tensor_nbytes(dx));
  if (dp && pd_tensor_nbytes(dp)) memset(pd_tensor_data(dp), 0, pd_tensor_nbytes(dp));
  FLOAT_SWITCH(c.x->dtype, {
    T *gx = dx ? (T *)pd_tensor_data(dx) : NULL, *gp = dp ? (T *)pd_tensor_data(dp) : NULL;
    const T *gc = (const T *)dcol;
    for (int64_t s = 0; s + 1 < c.lv->n; s++) {
      int64_t b = c.lv->offsets[s], n = c.lv->offsets[s + 1] - b;
      for (int64_t k = 0; k < n; k++)
        for (int64_t j = 0; j < c.len; j++) {
          int64_t src = seqconv_src(&c, b, n, k, j);
          T *g = src >= 0 ? gx : src < -1 ? gp : NULL;
          if (!g) continue;
          g += (src >= 0 ? src : -2 - src) * c.d;
          const T *from = gc + ((b + k) * c.len + j) * c.d;
          for (int64_t e = 0; e < c.d; e++) g[e] += from[e];
        }
    }
  });
out:
  if (col) pd_ctx_scratch_free(ctx, col);
  if (dcol) pd_ctx_scratch_free(ctx, dcol);
  hold_free(&h);
  return st;
}

typedef enum seqpool { SP_AVERAGE, SP_SUM, SP_SQRT, SP_LAST, SP_FIRST, SP_MAX } seqpool;

static pd_status seqpool_type(const pd_exec_ctx *ctx, seqpool *t) {
  static const char *const names[] = {"AVERAGE", "SUM", "SQRT", "LAST", "FIRST", "MAX"};
  const char *s = pd_ctx_attr_str(ctx, "pooltype");
  for (int i = 0; i < (int)PD_ARRAY_LEN(names); i++)
    if (strcmp(s, names[i]) == 0) {
      *t = (seqpool)i;
      return PD_OK;
    }
  return pd_ctx_fail(ctx, PD_EINVAL, "unknown pooltype '%s' (AVERAGE, SUM, SQRT, LAST, FIRST or "
                     "MAX)", s);
}

/* sequence_pool: one row per sequence of X's innermost LoD level: Out [sequences] + X.dims[1:],
 * with X's outer LoD levels. AVERAGE, SUM, SQRT (sum / sqrt(length)), LAST, FIRST, MAX (MaxIndex
 * records the row of each maximum, the first on ties). An empty sequence gives pad_value (and
 * MaxIndex -1). MaxIndex, int32 shaped like Out, is written for every pooltype (-1 unless MAX)
 * so that a gradient op can always bind it. */
pd_status pd_kernel_sequence_pool(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  const pd_lod_level *lv;
  pd_tensor *out, *mi;
  seqpool pt = SP_SUM;
  pd_status st;
  if ((st = seqpool_type(ctx, &pt)) || (st = in_at(ctx, "X", 0, true, &x)) ||
      (st = want_float(ctx, "X", x)) || (st = last_level(ctx, "X", x, &lv)) ||
      (st = out_at(ctx, "Out", 0, true, &out)) || (st = out_at(ctx, "MaxIndex", 0, false, &mi)))
    return st;
  if (mi == out) return pd_ctx_fail(ctx, PD_EINVAL, "Out and MaxIndex are the same var");
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (mi && (st = unalias(ctx, &h, mi, &x)))) {
    hold_free(&h);
    return st;
  }
  lv = &x->lod[x->nlod - 1];
  int64_t nseq = lv->n - 1, w = prod(x->dims, 1, x->ndims), dims[MAXD];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->ndims);
  dims[0] = nseq;
  double pad = pd_ctx_attr_float(ctx, "pad_value");
  pd_dtype dt = x->dtype;
  if ((st = resize(ctx, out, dt, x->ndims, dims, NULL)) ||
      (mi && (st = resize(ctx, mi, PD_INT32, x->ndims, dims, NULL)))) {
    hold_free(&h);
    return st;
  }
  if (x->nlod > 1) { /* the outer levels stay */
    const int64_t *offs[MAXD];
    int64_t lens[MAXD];
    int nl = x->nlod - 1 < MAXD ? x->nlod - 1 : MAXD;
    for (int l = 0; l < nl; l++) {
      offs[l] = x->lod[l].offsets;
      lens[l] = x->lod[l].n;
    }
    if (pd_tensor_set_lod(out, nl, offs, lens) ||
        (mi && pd_tensor_set_lod(mi, nl, offs, lens))) {
      hold_free(&h);
      return nomem(ctx);
    }
  }
  int32_t *mid = mi ? PD_TENSOR_I32(mi) : NULL;
  if (mid && pt != SP_MAX)
    for (int64_t i = 0; i < nseq * w; i++) mid[i] = -1;
  FLOAT_SWITCH(dt, {
    const T *xd = (const T *)pd_tensor_data(x);
    T *od = (T *)pd_tensor_data(out);
    for (int64_t s = 0; s < nseq; s++) {
      int64_t b = lv->offsets[s], e = lv->offsets[s + 1], len = e - b;
      T *o = od + s * w;
      int32_t *m = mid ? mid + s * w : NULL;
      if (len == 0) {
        for (int64_t k = 0; k < w; k++) {
          o[k] = (T)pad;
          if (m) m[k] = -1;
        }
        continue;
      }
      switch (pt) {
        case SP_LAST:
        case SP_FIRST:
          memcpy(o, xd + (pt == SP_LAST ? e - 1 : b) * w, (size_t)w * sizeof(T));
          break;
        case SP_MAX:
          for (int64_t k = 0; k < w; k++) {
            T best = xd[b * w + k];
            int64_t at = b;
            for (int64_t r = b + 1; r < e; r++)
              if (xd[r * w + k] > best) {
                best = xd[r * w + k];
                at = r;
              }
            o[k] = best;
            if (m) m[k] = (int32_t)at;
          }
          break;
        default: {
          double div = pt == SP_SUM ? 1.0 : pt == SP_SQRT ? sqrt((double)len) : (double)len;
          for (int64_t k = 0; k < w; k++) o[k] = 0;
          for (int64_t r = b; r < e; r++)
            for (int64_t k = 0; k < w; k++) o[k] += xd[r * w + k];
          if (div != 1.0)
            for (int64_t k = 0; k < w; k++) o[k] = (T)(o[k] / div);
          break;
        }
      }
    }
  });
  hold_free(&h);
  return PD_OK;
}

/* sequence_pool_grad: Out@GRAD of each sequence spread back over its rows: SUM copies it,
 * AVERAGE divides by the length, SQRT by its square root, LAST/FIRST/MAX send it to one row
 * (MAX: the one MaxIndex recorded, or the first maximum of X when MaxIndex is not given);
 * other rows get 0. */
pd_status pd_kernel_sequence_pool_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x, *dy;
  const pd_lod_level *lv;
  seqpool pt = SP_SUM;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = seqpool_type(ctx, &pt)) || (st = in_at(ctx, "X", 0, true, &x)) ||
      (st = want_float(ctx, "X", x)) || (st = last_level(ctx, "X", x, &lv)) ||
      (st = in_at(ctx, "Out@GRAD", 0, true, &dy)))
    return st;
  int64_t nseq = lv->n - 1, w = prod(x->dims, 1, x->ndims), dims[MAXD];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->ndims);
  dims[0] = nseq;
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, dims, x->dtype))) return st;
  const pd_tensor *mi = pt == SP_MAX ? in_if_set(ctx, "MaxIndex", 0) : NULL;
  if (mi && (mi->dtype != PD_INT32 || pd_tensor_numel(mi) != nseq * w)) mi = NULL;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &dy)) ||
      (st = unalias(ctx, &h, dx, &mi)))
    goto out;
  lv = &x->lod[x->nlod - 1];
  if ((st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x))) goto out;
  if (pd_tensor_nbytes(dx)) memset(pd_tensor_data(dx), 0, pd_tensor_nbytes(dx));
  const int32_t *mid = mi ? PD_TENSOR_I32(mi) : NULL;
  FLOAT_SWITCH(x->dtype, {
    const T *xd = (const T *)pd_tensor_data(x), *g = (const T *)pd_tensor_data(dy);
    T *d = (T *)pd_tensor_data(dx);
    for (int64_t s = 0; s < nseq && !st; s++) {
      int64_t b = lv->offsets[s], e = lv->offsets[s + 1], len = e - b;
      const T *gs = g + s * w;
      if (len == 0) continue;
      switch (pt) {
        case SP_LAST:
        case SP_FIRST:
          memcpy(d + (pt == SP_LAST ? e - 1 : b) * w, gs, (size_t)w * sizeof(T));
          break;
        case SP_MAX:
          for (int64_t k = 0; k < w; k++) {
            int64_t at = b;
            if (mid) {
              at = mid[s * w + k];
              if (at < b || at >= e) {
                st = pd_ctx_fail(ctx, PD_EINVAL, "MaxIndex holds row %" PRId64 ", outside "
                                 "sequence %" PRId64 " (rows %" PRId64 " to %" PRId64 ")", at, s,
                                 b, e - 1);
                break;
              }
            } else {
              for (int64_t r = b + 1; r < e; r++)
                if (xd[r * w + k] > xd[at * w + k]) at = r;
            }
            d[at * w + k] = gs[k];
          }
          break;
        default: {
          double div = pt == SP_SUM ? 1.0 : pt == SP_SQRT ? sqrt((double)len) : (double)len;
          for (int64_t r = b; r < e; r++)
            for (int64_t k = 0; k < w; k++) d[r * w + k] = (T)(gs[k] / div);
          break;
        }
      }
    }
  });
out:
  hold_free(&h);
  return st;
}

/* X of sequence_softmax: one value per row ([N] or [N, 1]), grouped by the innermost LoD. */
static pd_status seq_softmax_in(const pd_exec_ctx *ctx, const pd_tensor *x,
                                const pd_lod_level **lv) {
  char s[DIMS_BUF];
  pd_status st = want_float(ctx, "X", x);
  if (st || (st = last_level(ctx, "X", x, lv))) return st;
  if (pd_tensor_numel(x) != x->dims[0])
    return pd_ctx_fail(ctx, PD_ESHAPE, "X %s must hold one value per row ([N] or [N, 1])",
                       shape_str(x, s));
  return PD_OK;
}

/* sequence_softmax: a softmax within each sequence; Out has X's shape and LoD. */
pd_status pd_kernel_sequence_softmax(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  const pd_lod_level *lv;
  pd_tensor *out;
  pd_status st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = seq_softmax_in(ctx, x, &lv)) ||
      (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  const char *xd = pd_tensor_data(x);  /* softmax may write over its input */
  if ((st = resize(ctx, out, x->dtype, x->ndims, x->dims, x))) return st;
  lv = &out->lod[out->nlod - 1];
  size_t esz = pd_dtype_size(out->dtype);
  for (int64_t s = 0; s + 1 < lv->n && !st; s++) {
    int64_t b = lv->offsets[s], len = lv->offsets[s + 1] - b;
    if (len > 0)
      st = pd_ctx_check(ctx, ctx->k->softmax(out->dtype, 1, len, 1, xd + (size_t)b * esz,
                                             (char *)pd_tensor_data(out) + (size_t)b * esz),
                        "softmax");
  }
  return st;
}

/* sequence_softmax_grad: per sequence, dX = Out * (dOut - sum(dOut * Out)). */
pd_status pd_kernel_sequence_softmax_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x, *y, *dy;
  const pd_lod_level *lv;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = seq_softmax_in(ctx, x, &lv)) ||
      (st = in_at(ctx, "Out", 0, true, &y)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = want_grad_shape(ctx, "Out", y, x->ndims, x->dims, x->dtype)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &y))) goto out;
  const char *dyd = pd_tensor_data(dy);  /* softmax_grad may write over dOut */
  if ((st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x))) goto out;
  lv = &x->lod[x->nlod - 1];
  size_t esz = pd_dtype_size(x->dtype);
  for (int64_t s = 0; s + 1 < lv->n && !st; s++) {
    int64_t b = lv->offsets[s], len = lv->offsets[s + 1] - b;
    size_t o = (size_t)b * esz;
    if (len > 0)
      st = pd_ctx_check(ctx, ctx->k->softmax_grad(x->dtype, 1, len, 1,
                                                  (const char *)pd_tensor_data(y) + o, dyd + o,
                                                  (char *)pd_tensor_data(dx) + o),
                        "softmax_grad");
  }
out:
  hold_free(&h);
  return st;
}
