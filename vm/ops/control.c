/* control.c -- control flow: conditional_block (a whole-block or per-row if), while, and
 * split_lod_tensor / merge_lod_tensor (the rows of a minibatch split between an if's branches
 * and merged back): their shape functions, kernels and gradient kernels. The blocks they run get
 * scopes that are kept for the backward pass (vm/ops/subblock.h). */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"
#include "vm/ops/subblock.h"

/* ================================================================ shape functions */

/* A condition var: bool, and, when `one`, one element. */
static pd_status check_cond(pd_infer_ctx *c, const char *slot, int i, bool one) {
  const pd_var_desc *v;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, slot, i, &v, &d);
  if (st) return st;
  if (v->dtype != PD_BOOL)
    return pd_infer_fail(c, PD_ETYPE, "%s must be bool, got %s", slot, pd_dtype_name(v->dtype));
  int64_t n = pd_infer_dims_numel(&d);
  if (one && n >= 0 && n != 1)
    return pd_infer_fail(c, PD_ESHAPE, "%s must hold one element, got %s", slot,
                         pd_infer_dims_str(&d, s));
  return PD_OK;
}

/* conditional_block: runs sub_block when Cond holds (a one-element Cond with
 * is_scalar_condition; otherwise a per-row mask the compiler splits the rows by). */
pd_status pd_infer_conditional_block(pd_infer_ctx *c) {
  pd_status st = pd_infer_check_sub_block(c);
  if (st) return st;
  bool one = pd_infer_attr_bool(c, "is_scalar_condition");
  for (int i = 0; i < pd_infer_nin(c, "Cond"); i++)
    if ((st = check_cond(c, "Cond", i, one))) return st;
  return PD_OK;
}

/* while: runs sub_block while Condition (one bool) holds; the block updates Condition. */
pd_status pd_infer_while(pd_infer_ctx *c) {
  pd_status st = pd_infer_check_sub_block(c);
  if (st) return st;
  int n = pd_infer_nin(c, "Condition");
  if (n != 1) return pd_infer_fail(c, PD_EINVAL, "Condition takes one var, got %d", n);
  return check_cond(c, "Condition", 0, true);
}

/* The mask of a row split: bool, [N, 1] or [N]. */
static pd_status row_mask(pd_infer_ctx *c, pd_infer_dims *m) {
  const pd_var_desc *mv;
  pd_status st = pd_infer_in(c, "Mask", 0, &mv, m);
  if (st) return st;
  if (mv->dtype != PD_BOOL || (m->n != 1 && m->n != 2) || (m->n == 2 && !pd_infer_dim_compatible(m->d[1], 1))) {
    char buf[PD_DIMS_BUF];
    return pd_infer_fail(c, PD_ETYPE, "Mask must be a bool tensor of shape [N, 1], got %s %s",
                         pd_dtype_name(mv->dtype), pd_infer_dims_str(m, buf));
  }
  return PD_OK;
}

/* split_lod_tensor: the rows of X where Mask is true, and the others; each has X's shape with an
 * unknown number of rows. */
pd_status pd_infer_split_lod_tensor(pd_infer_ctx *c) {
  const pd_var_desc *xv;
  pd_infer_dims x, m;
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &xv, &x)) || (st = row_mask(c, &m))) return st;
  if (x.n >= 1 && !pd_infer_dim_compatible(x.d[0], m.d[0])) {
    char a[PD_DIMS_BUF], b[PD_DIMS_BUF];
    return pd_infer_fail(c, PD_ESHAPE, "X has %lld rows but Mask has %lld (%s and %s)",
                         (long long)x.d[0], (long long)m.d[0], pd_infer_dims_str(&x, a),
                         pd_infer_dims_str(&m, b));
  }
  if (x.n >= 1) x.d[0] = -1;
  if ((st = pd_infer_set_out(c, "OutTrue", 0, &x, xv->dtype, xv->lod_level))) return st;
  return pd_infer_set_out(c, "OutFalse", 0, &x, xv->dtype, xv->lod_level);
}

/* merge_lod_tensor: InTrue's and InFalse's rows interleaved back by Mask: their dims agree but the
 * first, and Out has as many rows as Mask. */
pd_status pd_infer_merge_lod_tensor(pd_infer_ctx *c) {
  const pd_var_desc *tv, *fv;
  pd_infer_dims t, f, m;
  pd_status st;
  if ((st = row_mask(c, &m)) || (st = pd_infer_in(c, "InTrue", 0, &tv, &t)) ||
      (st = pd_infer_in(c, "InFalse", 0, &fv, &f)))
    return st;
  if ((st = pd_infer_same_dtype(c, "InTrue", tv->dtype, "InFalse", fv->dtype))) return st;
  bool same = t.n < 0 || f.n < 0 || t.n == f.n;
  for (int i = 1; same && t.n > 0 && i < t.n && i < f.n; i++) same = pd_infer_dim_compatible(t.d[i], f.d[i]);
  if (!same) {
    char a[PD_DIMS_BUF], b[PD_DIMS_BUF];
    return pd_infer_fail(c, PD_ESHAPE, "InTrue %s and InFalse %s differ beyond the first dim",
                         pd_infer_dims_str(&t, a), pd_infer_dims_str(&f, b));
  }
  pd_infer_dims out = t.n >= 0 ? t : f;
  for (int i = 1; t.n > 0 && f.n > 0 && i < out.n; i++) out.d[i] = pd_infer_dim_merge(t.d[i], f.d[i]);
  if (out.n >= 1) out.d[0] = m.d[0];
  return pd_infer_set_out(c, "Out", 0, &out, tv->dtype, tv->lod_level);
}

/* The bool value of a one-element condition tensor (any numeric dtype: non-zero is true). */
static pd_status scalar_cond(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *t,
                             bool *out) {
  if (pd_tensor_numel(t) != 1) {
    char sh[96];
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s must have one element to decide, it has shape %s",
                       slot, pd_ctx_shape_str(t, sh, sizeof sh));
  }
  uint8_t b = 0;
  pd_status st = ctx->k->cast(t->dtype, pd_tensor_data(t), PD_BOOL, &b, 1);
  if (st) return pd_ctx_check(ctx, st, slot);
  *out = b != 0;
  return PD_OK;
}

/* Give each var of output slot `slot` an empty value ([0, dims...] from its desc) when it has
 * none: a skipped branch still leaves well-formed outputs for the merge. */
static pd_status empty_outputs(const pd_exec_ctx *ctx, const char *slot) {
  const pd_block *sub = pd_ctx_sub_block(ctx);
  for (int i = 0; i < pd_ctx_nout(ctx, slot); i++) {
    pd_variable *v = pd_ctx_out_var(ctx, slot, i);
    if (!v || (v->type != PD_VAR_UNSET && v->type != PD_VAR_LOD_TENSOR)) continue;
    pd_tensor *t = pd_var_tensor(v);
    if (pd_tensor_initialized(t)) continue; /* an outer value the branch would have replaced */
    const pd_var_desc *d = sub ? pd_block_find_var_visible(sub, pd_var_name(v), NULL) : NULL;
    int64_t dims[PD_TENSOR_MAX_DIMS] = {0};
    int nd = 1;
    pd_dtype dt = PD_FP32;
    if (d) {
      dt = d->dtype;
      if (d->ndims >= 1) {
        nd = d->ndims;
        for (int k = 1; k < nd; k++) dims[k] = d->dims[k] < 0 ? 1 : d->dims[k];
      }
    }
    dims[0] = 0;
    pd_status st = pd_ctx_resize(ctx, t, dt, nd, dims);
    if (st) return st;
  }
  return PD_OK;
}

/* ---------------------------------------------------------------- conditional_block */

pd_status pd_kernel_conditional_block(pd_exec_ctx *ctx) {
  bool run = true;
  pd_status st;
  if (pd_ctx_attr_bool(ctx, "is_scalar_condition")) {
    const pd_tensor *c = pd_ctx_in(ctx, "Cond");
    if (!c) return pd_ctx_fail(ctx, PD_EINVAL, "no Cond input");
    if ((st = scalar_cond(ctx, "Cond", c, &run))) return st;
  } else {
    /* A per-row branch: it runs when every input has rows (Fluid's rule). */
    for (int i = 0; run && i < pd_ctx_nin(ctx, "Input"); i++) {
      const pd_tensor *t = pd_ctx_in_at(ctx, "Input", i);
      if (t && pd_tensor_numel(t) == 0) run = false;
    }
  }
  pd_scope *scope;
  if ((st = new_kept_scope(ctx, "Scope", true, &scope))) return st;
  if (!run) return empty_outputs(ctx, "Out");
  return pd_ctx_run_sub_block(ctx, scope);
}

/* ---------------------------------------------------------------- while */

/* The name under which a step scope keeps an Out var's value from the start of its iteration:
 * the loop writes the var itself in place, and the backward pass needs every iteration's. */
#define WHILE_PRE "@WHILE_PRE"

/* Keep the start-of-iteration value of every Out tensor in the step scope. */
static pd_status while_snapshot(const pd_exec_ctx *ctx, pd_scope *scope) {
  for (int i = 0; i < pd_ctx_nout(ctx, "Out"); i++) {
    pd_variable *v = pd_ctx_out_var(ctx, "Out", i);
    if (!v || v->type != PD_VAR_LOD_TENSOR || !pd_tensor_initialized(&v->u.tensor)) continue;
    char name[VAR_NAME];
    suffixed(name, pd_var_name(v), WHILE_PRE);
    pd_variable *keep = pd_scope_var(scope, name);
    pd_tensor *t = keep ? pd_var_tensor(keep) : NULL;
    if (!t || pd_tensor_copy(t, &v->u.tensor)) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  }
  return PD_OK;
}

pd_status pd_kernel_while(pd_exec_ctx *ctx) {
  pd_variable *cv = pd_ctx_in_var(ctx, "Condition", 0);
  if (!cv || cv->type != PD_VAR_LOD_TENSOR)
    return pd_ctx_fail(ctx, PD_EINVAL, "Condition is not a tensor");
  pd_variable *sv = pd_ctx_out_var(ctx, "StepScopes", 0);
  if (sv && sv->type == PD_VAR_STEP_SCOPES) pd_var_clear_step_scopes(sv);
  bool is_test = pd_ctx_attr_bool(ctx, "is_test");
  int64_t cap = pd_ctx_attr_int(ctx, "max_iterations");
  for (int64_t it = 0;; it++) {
    bool go;
    pd_status st = scalar_cond(ctx, "Condition", &cv->u.tensor, &go);
    if (st) return st;
    if (!go) return PD_OK;
    if (cap > 0 && it >= cap)
      return pd_ctx_fail(ctx, PD_ERUNTIME,
                         "the loop ran %lld iterations and its condition is still true: a "
                         "runaway loop? (raise the op's max_iterations if it is meant to)",
                         (long long)it);
    pd_scope *scope;
    /* At inference nothing reads the steps' scopes later: keep only the current one. */
    if ((st = new_kept_scope(ctx, "StepScopes", is_test, &scope))) return st;
    if (!is_test && (st = while_snapshot(ctx, scope))) return st;
    if ((st = pd_ctx_run_sub_block(ctx, scope))) return st;
  }
}

/* ---------------------------------------------------------------- split / merge */

/* The row ranges a mask selects: with LoD on X (level `level`), mask entry i covers sequence i's
 * rows; without, row i. Fills starts/ends of nunits units. */
typedef struct units {
  int64_t n;              /* units (rows or sequences) */
  const int64_t *offsets; /* n + 1 row offsets when by sequence; NULL when by row */
} units;

static int64_t unit_begin(const units *u, int64_t i) { return u->offsets ? u->offsets[i] : i; }

static int64_t unit_end(const units *u, int64_t i) { return u->offsets ? u->offsets[i + 1] : i + 1; }

/* The units of x for a mask: sequences of LoD level `level` mapped down to rows, or rows. The
 * row offsets are written to *rows (heap, caller frees) when x has LoD. */
static pd_status get_units(const pd_exec_ctx *ctx, const pd_tensor *x, int64_t level, units *u,
                           int64_t **rows) {
  *rows = NULL;
  if (x->nlod == 0 || level >= x->nlod) {
    u->n = x->ndims ? x->dims[0] : 1;
    u->offsets = NULL;
    return PD_OK;
  }
  const pd_lod_level *l = &x->lod[level];
  int64_t n = l->n - 1;
  int64_t *r = pd_malloc(sizeof *r * (size_t)(n + 1));
  if (!r) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  for (int64_t i = 0; i <= n; i++) {
    int64_t o = l->offsets[i];
    for (int lv = (int)level + 1; lv < x->nlod; lv++) o = x->lod[lv].offsets[o];
    r[i] = o;
  }
  u->n = n;
  u->offsets = r;
  *rows = r;
  return PD_OK;
}

static pd_status check_mask(const pd_exec_ctx *ctx, const pd_tensor *mask, int64_t n,
                            const char *what) {
  if (mask->dtype != PD_BOOL || pd_tensor_numel(mask) != n) {
    char sh[96];
    return pd_ctx_fail(ctx, PD_ESHAPE, "Mask must be a bool tensor with one entry per %s (%lld), "
                                       "it is %s %s",
                       what, (long long)n, pd_dtype_name(mask->dtype),
                       pd_ctx_shape_str(mask, sh, sizeof sh));
  }
  return PD_OK;
}

/* Copy the units where mask == want from x into out, with a LoD of the copied sequences when x
 * is split by sequence. */
static pd_status gather_units(const pd_exec_ctx *ctx, const pd_tensor *x, const units *u,
                              const uint8_t *mask, bool want, pd_tensor *out) {
  int64_t rows = 0, nsel = 0;
  for (int64_t i = 0; i < u->n; i++)
    if ((mask[i] != 0) == want) {
      rows += unit_end(u, i) - unit_begin(u, i);
      nsel++;
    }
  int64_t dims[PD_TENSOR_MAX_DIMS];
  memcpy(dims, x->dims, sizeof dims);
  dims[0] = rows;
  pd_status st = pd_ctx_resize(ctx, out, x->dtype, x->ndims ? x->ndims : 1, dims);
  if (st) return st;
  size_t row_bytes = x->dims[0] ? pd_tensor_nbytes(x) / (size_t)x->dims[0] : 0;
  char *dst = pd_tensor_data(out);
  const char *src = pd_tensor_data(x);
  int64_t *lod = NULL;
  if (u->offsets) {
    lod = pd_malloc(sizeof *lod * (size_t)(nsel + 1));
    if (!lod) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    lod[0] = 0;
  }
  int64_t at = 0, k = 0;
  for (int64_t i = 0; i < u->n; i++) {
    if ((mask[i] != 0) != want) continue;
    int64_t b = unit_begin(u, i), e = unit_end(u, i);
    memcpy(dst + (size_t)at * row_bytes, src + (size_t)b * row_bytes, (size_t)(e - b) * row_bytes);
    at += e - b;
    if (lod) lod[++k] = at;
  }
  if (lod) {
    const int64_t *lv = lod;
    int64_t len = nsel + 1;
    st = pd_tensor_set_lod(out, 1, &lv, &len);
    pd_free(lod);
    if (st) return pd_ctx_fail(ctx, st, "out of memory");
  }
  return PD_OK;
}

pd_status pd_kernel_split_lod_tensor(pd_exec_ctx *ctx) {
  const pd_tensor *x = pd_ctx_in(ctx, "X"), *mask = pd_ctx_in(ctx, "Mask");
  int64_t *rows;
  units u = {0};
  pd_status st = get_units(ctx, x, pd_ctx_attr_int(ctx, "level"), &u, &rows);
  if (st) return st;
  if (!(st = check_mask(ctx, mask, u.n, u.offsets ? "sequence of X" : "row of X"))) {
    pd_tensor *t = pd_ctx_out(ctx, "OutTrue"), *f = pd_ctx_out(ctx, "OutFalse");
    if (t) st = gather_units(ctx, x, &u, PD_TENSOR_BOOL(mask), true, t);
    if (!st && f) st = gather_units(ctx, x, &u, PD_TENSOR_BOOL(mask), false, f);
  }
  pd_free(rows);
  return st;
}

/* The units of a branch's part: its sequences (LoD level 0) or its rows. */
static int64_t part_units(const pd_tensor *t) {
  if (!pd_tensor_initialized(t) || t->ndims == 0) return 0;
  return t->nlod ? t->lod[0].n - 1 : t->dims[0];
}

pd_status pd_kernel_merge_lod_tensor(pd_exec_ctx *ctx) {
  const pd_tensor *mask = pd_ctx_in(ctx, "Mask");
  const pd_tensor *in[2] = {pd_ctx_in(ctx, "InFalse"), pd_ctx_in(ctx, "InTrue")};
  int64_t n = pd_tensor_numel(mask);
  pd_status st = check_mask(ctx, mask, n, "row or sequence of the merged result");
  if (st) return st;
  const uint8_t *m = PD_TENSOR_BOOL(mask);
  int64_t want[2] = {0, 0};
  for (int64_t i = 0; i < n; i++) want[m[i] != 0]++;
  const char *slot[2] = {"InFalse", "InTrue"};
  const pd_tensor *ref = NULL;
  for (int b = 0; b < 2; b++) {
    int64_t have = in[b] ? part_units(in[b]) : 0;
    if (have != want[b])
      return pd_ctx_fail(ctx, PD_ESHAPE, "%s has %lld rows or sequences but Mask selects %lld",
                         slot[b], (long long)have, (long long)want[b]);
    if (have && !ref) ref = in[b];
  }
  pd_tensor *out = pd_ctx_out(ctx, "Out");
  if (!ref) { /* no rows at all: an empty result shaped like the parts */
    ref = in[1] && pd_tensor_initialized(in[1]) ? in[1] : in[0];
    if (!ref || !pd_tensor_initialized(ref)) return pd_ctx_fail(ctx, PD_ERUNTIME, "no branch has a value");
  }
  for (int b = 0; b < 2; b++) {
    if (!want[b] || in[b] == ref) continue;
    bool same = in[b]->dtype == ref->dtype && in[b]->ndims == ref->ndims;
    for (int k = 1; same && k < ref->ndims; k++) same = in[b]->dims[k] == ref->dims[k];
    if (!same) {
      char a[96], c[96];
      return pd_ctx_fail(ctx, PD_ESHAPE, "the branches disagree: InTrue is %s %s, InFalse is %s %s",
                         pd_dtype_name(in[1]->dtype), pd_ctx_shape_str(in[1], a, sizeof a),
                         pd_dtype_name(in[0]->dtype), pd_ctx_shape_str(in[0], c, sizeof c));
    }
  }
  bool by_seq = ref->nlod > 0;
  int64_t rows = (want[0] ? in[0]->dims[0] : 0) + (want[1] ? in[1]->dims[0] : 0);
  int64_t dims[PD_TENSOR_MAX_DIMS];
  memcpy(dims, ref->dims, sizeof dims);
  dims[0] = rows;
  /* Out may be one of the inputs' vars only if the compiler made it so; it never does. */
  if (out == in[0] || out == in[1])
    return pd_ctx_fail(ctx, PD_EINVAL, "Out must not be one of the branches' vars");
  if ((st = pd_ctx_resize(ctx, out, ref->dtype, ref->ndims, dims))) return st;
  size_t row_bytes = ref->dims[0] ? pd_tensor_nbytes(ref) / (size_t)ref->dims[0] : 0;
  int64_t *lod = NULL;
  if (by_seq && !(lod = pd_malloc(sizeof *lod * (size_t)(n + 1))))
    return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  int64_t next[2] = {0, 0}, at = 0;
  char *dst = pd_tensor_data(out);
  if (lod) lod[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    int b = m[i] != 0;
    int64_t u = next[b]++, r0 = u, r1 = u + 1;
    if (by_seq) {
      r0 = in[b]->lod[0].offsets[u];
      r1 = in[b]->lod[0].offsets[u + 1];
    }
    memcpy(dst + (size_t)at * row_bytes, (const char *)pd_tensor_data(in[b]) + (size_t)r0 * row_bytes,
           (size_t)(r1 - r0) * row_bytes);
    at += r1 - r0;
    if (lod) lod[i + 1] = at;
  }
  if (lod) {
    const int64_t *lv = lod;
    int64_t len = n + 1;
    st = pd_tensor_set_lod(out, 1, &lv, &len);
    pd_free(lod);
    if (st) return pd_ctx_fail(ctx, st, "out of memory");
  }
  return PD_OK;
}

/* dst (already shaped like the forward value) = src, checking the element count. */
static pd_status move_grad(const pd_exec_ctx *ctx, pd_tensor *dst, const pd_tensor *src,
                           const pd_tensor *like, const char *var) {
  if (like && pd_tensor_numel(src) != pd_tensor_numel(like)) {
    char a[96], b[96];
    return pd_ctx_fail(ctx, PD_ESHAPE, "the gradient of '%s' is %s but the value is %s", var,
                       pd_ctx_shape_str(src, a, sizeof a), pd_ctx_shape_str(like, b, sizeof b));
  }
  if (dst == src) return PD_OK;
  pd_status st = pd_tensor_copy(dst, src);
  if (st) return pd_ctx_fail(ctx, st, "out of memory");
  if (like && like->ndims != src->ndims) st = pd_tensor_reshape(dst, like->ndims, like->dims);
  return pd_ctx_check(ctx, st, "reshape");
}

/* Did the forward conditional_block run its block? (The same rule as the forward kernel, on the
 * same, unchanged, inputs.) */
static pd_status cond_ran(const pd_exec_ctx *ctx, bool *ran) {
  *ran = true;
  if (pd_ctx_attr_bool(ctx, "is_scalar_condition")) {
    const pd_tensor *c = pd_ctx_in(ctx, "Cond");
    if (!c) return pd_ctx_fail(ctx, PD_EINVAL, "no Cond input");
    return scalar_cond(ctx, "Cond", c, ran);
  }
  for (int i = 0; i < pd_ctx_nin(ctx, "Input"); i++) {
    const pd_tensor *t = pd_ctx_in_at(ctx, "Input", i);
    if (t && pd_tensor_numel(t) == 0) *ran = false;
  }
  return PD_OK;
}

pd_status pd_kernel_conditional_block_grad(pd_exec_ctx *ctx) {
  bool ran;
  pd_status st = cond_ran(ctx, &ran);
  if (st) return st;
  pd_variable *sv = pd_ctx_in_var(ctx, "Scope", 0);
  pd_scope *fwd = sv ? pd_var_step_scope(sv, 0) : NULL;
  if (ran && !fwd)
    return pd_ctx_fail(ctx, PD_ERUNTIME, "the forward block's scope is gone (Scope is empty)");
  pd_scope *g = NULL;
  if (ran) {
    if (!(g = pd_scope_new(fwd))) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    /* g sees the forward values through fwd; the outputs' gradients live where this op runs,
     * which need not be an ancestor of fwd (an if inside a loop's gradient): share them in. */
    for (int i = 0; i < pd_ctx_nin(ctx, "Out@GRAD") && !st; i++) {
      pd_variable *v = pd_ctx_in_var(ctx, "Out@GRAD", i);
      if (!v || v->type != PD_VAR_LOD_TENSOR || !pd_tensor_initialized(&v->u.tensor)) continue;
      pd_variable *local = pd_scope_var(g, pd_var_name(v));
      pd_tensor *t = local ? pd_var_tensor(local) : NULL;
      st = t ? pd_ctx_check(ctx, pd_tensor_share(t, &v->u.tensor), "share")
             : pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    }
    if (st || (st = pd_ctx_run_sub_block(ctx, g))) goto out;
  }
  for (int i = 0; i < pd_ctx_nin(ctx, "Input") && !st; i++) {
    pd_tensor *dst = pd_ctx_out_at(ctx, "Input@GRAD", i);
    if (!dst) continue;
    const pd_tensor *x = pd_ctx_in_at(ctx, "Input", i);
    const pd_tensor *gi = g ? inner_grad(g, pd_ctx_in_name(ctx, "Input", i)) : NULL;
    st = gi ? move_grad(ctx, dst, gi, x, pd_ctx_in_name(ctx, "Input", i)) : zeros_like(ctx, dst, x);
  }
out:
  pd_scope_free(g);
  return st;
}

/* dst (zeros shaped like x) gets src's units at the units of x where mask == want. */
static pd_status scatter_units(const pd_exec_ctx *ctx, const pd_tensor *x, const units *u,
                               const uint8_t *mask, bool want, const pd_tensor *src,
                               pd_tensor *dst) {
  size_t row_bytes = x->dims[0] ? pd_tensor_nbytes(x) / (size_t)x->dims[0] : 0;
  int64_t at = 0;
  for (int64_t i = 0; i < u->n; i++)
    if ((mask[i] != 0) == want) at += unit_end(u, i) - unit_begin(u, i);
  if (!src || !pd_tensor_initialized(src)) return PD_OK; /* no gradient: those rows stay 0 */
  if (src->dtype != x->dtype || pd_tensor_numel(src) * (int64_t)pd_dtype_size(x->dtype) !=
                                    at * (int64_t)row_bytes) {
    char a[96], b[96];
    return pd_ctx_fail(ctx, PD_ESHAPE, "a branch's gradient is %s %s, expected %lld rows of %s",
                       pd_dtype_name(src->dtype), pd_ctx_shape_str(src, a, sizeof a),
                       (long long)at, pd_ctx_shape_str(x, b, sizeof b));
  }
  char *d = pd_tensor_data(dst);
  const char *s = pd_tensor_data(src);
  at = 0;
  for (int64_t i = 0; i < u->n; i++) {
    if ((mask[i] != 0) != want) continue;
    int64_t b0 = unit_begin(u, i), e = unit_end(u, i);
    memcpy(d + (size_t)b0 * row_bytes, s + (size_t)at * row_bytes, (size_t)(e - b0) * row_bytes);
    at += e - b0;
  }
  return PD_OK;
}

/* X@GRAD: the branches' gradients put back in X's row order; rows of a branch without one are
 * zero. */
pd_status pd_kernel_split_lod_tensor_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx = pd_ctx_out(ctx, "X@GRAD");
  if (!dx) return PD_OK;
  const pd_tensor *x = pd_ctx_in(ctx, "X"), *mask = pd_ctx_in(ctx, "Mask");
  int64_t *rows;
  units u = {0};
  pd_status st = get_units(ctx, x, pd_ctx_attr_int(ctx, "level"), &u, &rows);
  if (st) return st;
  if (!(st = check_mask(ctx, mask, u.n, u.offsets ? "sequence of X" : "row of X")) &&
      !(st = zeros_like(ctx, dx, x))) {
    st = scatter_units(ctx, x, &u, PD_TENSOR_BOOL(mask), true, pd_ctx_in(ctx, "OutTrue@GRAD"), dx);
    if (!st)
      st = scatter_units(ctx, x, &u, PD_TENSOR_BOOL(mask), false, pd_ctx_in(ctx, "OutFalse@GRAD"),
                         dx);
  }
  pd_free(rows);
  return st;
}

/* InTrue@GRAD / InFalse@GRAD: Out@GRAD's rows split by Mask (as split_lod_tensor splits). */
pd_status pd_kernel_merge_lod_tensor_grad(pd_exec_ctx *ctx) {
  const pd_tensor *out = pd_ctx_in(ctx, "Out"), *dout = pd_ctx_in(ctx, "Out@GRAD");
  const pd_tensor *mask = pd_ctx_in(ctx, "Mask");
  pd_tensor *dt = pd_ctx_out(ctx, "InTrue@GRAD"), *df = pd_ctx_out(ctx, "InFalse@GRAD");
  if (!dt && !df) return PD_OK;
  if (!out || !dout) return pd_ctx_fail(ctx, PD_EINVAL, "needs Out and Out@GRAD");
  if (pd_tensor_numel(dout) != pd_tensor_numel(out) || dout->dtype != out->dtype) {
    char a[96], b[96];
    return pd_ctx_fail(ctx, PD_ESHAPE, "Out@GRAD is %s but Out is %s",
                       pd_ctx_shape_str(dout, a, sizeof a), pd_ctx_shape_str(out, b, sizeof b));
  }
  int64_t *rows;
  units u = {0};
  pd_status st = get_units(ctx, out, 0, &u, &rows);
  if (st) return st;
  /* dout may lack Out's LoD: view its rows through Out's units. */
  pd_tensor view;
  pd_tensor_init(&view);
  if (!(st = check_mask(ctx, mask, u.n, "row or sequence of Out")) &&
      !(st = pd_ctx_check(ctx, pd_tensor_share(&view, dout), "share")) &&
      !(st = pd_ctx_check(ctx, pd_tensor_reshape(&view, out->ndims, out->dims), "reshape"))) {
    if (dt) st = gather_units(ctx, &view, &u, PD_TENSOR_BOOL(mask), true, dt);
    if (!st && df) st = gather_units(ctx, &view, &u, PD_TENSOR_BOOL(mask), false, df);
  }
  pd_tensor_release(&view);
  pd_free(rows);
  return st;
}

/* Backward through a while loop, iteration by iteration from the last. The loop-carried vars
 * (the Out vars, written in place by each iteration) carry a gradient from one iteration back
 * to the one before: it starts as Out@GRAD, seeds each iteration's gradient block as <var>@GRAD,
 * and becomes what the block computed for the var's start-of-iteration value (<var>@GRAD@LOCAL:
 * the block's own assignment used up the seed). In the block's scope the carried vars are
 * shown with their start-of-iteration values (kept by the forward kernel), so the gradient ops
 * read what the forward ops read. Other inputs' gradients add up over the iterations; a carried
 * input's is the carried gradient after the first iteration (its value before the loop). */
pd_status pd_kernel_while_grad(pd_exec_ctx *ctx) {
  pd_variable *steps = pd_ctx_in_var(ctx, "StepScopes", 0);
  size_t nsteps = steps ? pd_var_num_step_scopes(steps) : 0;
  int nout = pd_ctx_nin(ctx, "Out"), nx = pd_ctx_nin(ctx, "X");
  pd_tensor *carry = pd_calloc((size_t)nout + 1, sizeof *carry);
  pd_status st = carry ? PD_OK : pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  for (int o = 0; o < nout && !st; o++) {
    pd_tensor_init(&carry[o]);
    const pd_tensor *val = pd_ctx_in_at(ctx, "Out", o);
    const pd_tensor *dout = pd_ctx_in_at(ctx, "Out@GRAD", o);
    if (!val || !is_float(val->dtype)) continue;
    if (dout && pd_tensor_initialized(dout))
      st = pd_ctx_check(ctx, pd_tensor_copy(&carry[o], dout), "copy");
    else st = zeros_like(ctx, &carry[o], val);
  }
  /* The gradient outputs start at zero (after Out@GRAD was read: they may be the same vars). */
  for (int j = 0; j < nx && !st; j++) {
    pd_tensor *d = pd_ctx_out_at(ctx, "X@GRAD", j);
    if (d) st = zeros_like(ctx, d, pd_ctx_in_at(ctx, "X", j));
  }
  for (size_t k = nsteps; k-- > 0 && !st;) {
    pd_scope *fs = pd_var_step_scope(steps, k);
    pd_scope *g = pd_scope_new(fs);
    if (!g) {
      st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
      break;
    }
    for (int o = 0; o < nout && !st; o++) {
      const char *name = pd_ctx_in_name(ctx, "Out", o);
      char buf[VAR_NAME];
      suffixed(buf, name, WHILE_PRE);
      pd_variable *pre = pd_scope_find_local_var(fs, buf);
      if (pre && pre->type == PD_VAR_LOD_TENSOR) { /* the start-of-iteration value */
        pd_tensor *t = step_tensor(g, name);
        st = t ? pd_ctx_check(ctx, pd_tensor_share(t, &pre->u.tensor), "share")
               : pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
      }
      if (!st && pd_tensor_initialized(&carry[o])) {
        suffixed(buf, name, "@GRAD");
        pd_tensor *seed = step_tensor(g, buf);
        st = seed ? pd_ctx_check(ctx, pd_tensor_copy(seed, &carry[o]), "copy")
                  : pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
      }
    }
    if (!st) st = pd_ctx_run_sub_block(ctx, g);
    for (int o = 0; o < nout && !st; o++) {
      if (!pd_tensor_initialized(&carry[o])) continue;
      char buf[VAR_NAME];
      suffixed(buf, pd_ctx_in_name(ctx, "Out", o), "@GRAD@LOCAL");
      pd_variable *gv = pd_scope_find_local_var(g, buf);
      if (gv && gv->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&gv->u.tensor))
        st = move_grad(ctx, &carry[o], &gv->u.tensor, &carry[o], pd_ctx_in_name(ctx, "Out", o));
      else st = pd_ctx_check(ctx, pd_tensor_fill(&carry[o], 0), "zero");
    }
    for (int j = 0; j < nx && !st; j++) {
      pd_tensor *d = pd_ctx_out_at(ctx, "X@GRAD", j);
      const char *name = pd_ctx_in_name(ctx, "X", j);
      bool carried = false;
      for (int o = 0; o < nout; o++) carried = carried || strcmp(pd_ctx_in_name(ctx, "Out", o), name) == 0;
      const pd_tensor *gi = d && !carried ? inner_grad(g, name) : NULL;
      if (!gi || !pd_tensor_initialized(d)) continue;
      if (gi->dtype != d->dtype || pd_tensor_numel(gi) != pd_tensor_numel(d)) {
        st = pd_ctx_fail(ctx, PD_ESHAPE, "the gradient of '%s' has the wrong size", name);
        break;
      }
      st = pd_ctx_check(ctx, ctx->k->binary(PD_K_ADD, d->dtype, d->ndims, d->dims,
                                            pd_tensor_data(d), d->ndims, d->dims,
                                            pd_tensor_data(gi), -1, pd_tensor_data(d)),
                        "add");
    }
    pd_scope_free(g);
  }
  /* Carried inputs: the gradient of their value before the loop. */
  for (int j = 0; j < nx && !st; j++) {
    pd_tensor *d = pd_ctx_out_at(ctx, "X@GRAD", j);
    const char *name = pd_ctx_in_name(ctx, "X", j);
    for (int o = 0; d && o < nout && !st; o++)
      if (strcmp(pd_ctx_in_name(ctx, "Out", o), name) == 0 && pd_tensor_initialized(&carry[o]))
        st = move_grad(ctx, d, &carry[o], pd_ctx_in_at(ctx, "X", j), name);
  }
  for (int o = 0; carry && o < nout; o++) pd_tensor_release(&carry[o]);
  pd_free(carry);
  return st;
}
