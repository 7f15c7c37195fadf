/* exec_control.c -- the kernels of the ops that own blocks or reorganise a minibatch for them:
 *   conditional_block  runs its sub-block once in a new scope it keeps (Scope output), when its
 *                      condition holds (a scalar Cond), or when every Input has rows (a per-row
 *                      if: split_lod_tensor gave each branch its rows);
 *   while              reruns its sub-block, one kept step scope per iteration, while Condition;
 *   recurrent          the for-rnn over a batch of sequences (see pd_kernel_recurrent);
 *   split_lod_tensor / merge_lod_tensor  the row split and the order-preserving merge of a per-row
 *                      if/else; whole sequences move together when X has LoD.
 * The kept scopes are what the backward pass reads; they go with the run scope. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "vm/opkernels.h"

/* ---------------------------------------------------------------- helpers */

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

/* A fresh scope for a block run, kept in the STEP_SCOPES var of output `slot`. With reset, the
 * var's earlier scopes (from an earlier run of the op in the same scope) are dropped first. */
static pd_status new_kept_scope(const pd_exec_ctx *ctx, const char *slot, bool reset,
                                pd_scope **out) {
  pd_variable *v = pd_ctx_out_var(ctx, slot, 0);
  if (!v) return pd_ctx_fail(ctx, PD_EINVAL, "output %s (the kept scopes) is not bound", slot);
  if (v->type != PD_VAR_UNSET && v->type != PD_VAR_STEP_SCOPES)
    return pd_ctx_fail(ctx, PD_ETYPE, "output %s (var '%s') is not a STEP_SCOPES variable", slot,
                       pd_var_name(v));
  if (reset) pd_var_clear_step_scopes(v);
  pd_status st = pd_var_new_step_scope(v, out);
  if (st) return pd_ctx_fail(ctx, st, "cannot create a scope for the block");
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

pd_status pd_kernel_while(pd_exec_ctx *ctx) {
  pd_variable *cv = pd_ctx_in_var(ctx, "Condition", 0);
  if (!cv || cv->type != PD_VAR_LOD_TENSOR)
    return pd_ctx_fail(ctx, PD_EINVAL, "Condition is not a tensor");
  pd_variable *sv = pd_ctx_out_var(ctx, "StepScopes", 0);
  if (sv && sv->type == PD_VAR_STEP_SCOPES) pd_var_clear_step_scopes(sv);
  bool is_test = pd_ctx_attr_bool(ctx, "is_test");
  for (;;) {
    bool go;
    pd_status st = scalar_cond(ctx, "Condition", &cv->u.tensor, &go);
    if (st) return st;
    if (!go) return PD_OK;
    pd_scope *scope;
    /* At inference nothing reads the steps' scopes later: keep only the current one. */
    if ((st = new_kept_scope(ctx, "StepScopes", is_test, &scope))) return st;
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

/* ---------------------------------------------------------------- recurrent */

/* The for-rnn. `inputs` are batches of sequences with the same LoD (one level); step k of the
 * loop sees element k of every sequence still running. Sequences are ordered by length, longest
 * first (stable), as Fluid's rank table orders them, so the sequences alive at step k are a
 * prefix of that order: every step-input, memory and output of step k has that prefix's rows,
 * in that order. Each step runs the sub-block in its own scope, kept in `step_scopes`:
 *   - the step input: a var of the step block named like the outer input (rows sliced in);
 *   - memories: ex_states[i] (the previous value) is the initial_states[i] value at step 0 (a
 *     value with one row per sequence, or one value shared by all, broadcast), then the first
 *     rows of states[i] of the step before; states[i] is what the body computed;
 *   - outputs: each var of `outputs` is computed in every step under its own name and stacked,
 *     after the loop, into a batch of sequences with the inputs' LoD.
 * `reverse` runs each sequence from its last element to its first (the LoD stays the same). */

typedef struct rnn_plan {
  int64_t nseq, maxlen;
  const int64_t *off;   /* the inputs' row offsets (nseq + 1) */
  int64_t *order;       /* sequence indices by length, longest first */
  bool reverse;
} rnn_plan;

static int64_t seq_len(const rnn_plan *p, int64_t s) { return p->off[s + 1] - p->off[s]; }
/* The row of the input that sequence s reads at step k. */
static int64_t step_row(const rnn_plan *p, int64_t s, int64_t k) {
  return p->off[s] + (p->reverse ? seq_len(p, s) - 1 - k : k);
}
/* How many sequences are still running at step k (a prefix of the order). */
static int64_t alive(const rnn_plan *p, int64_t k) {
  int64_t n = 0;
  while (n < p->nseq && seq_len(p, p->order[n]) > k) n++;
  return n;
}

/* Sort key: a sequence's length and index; longest first, then by index (a stable order). */
typedef struct len_idx {
  int64_t len, idx;
} len_idx;
static int by_len_desc(const void *a, const void *b) {
  const len_idx *x = a, *y = b;
  if (x->len != y->len) return x->len > y->len ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* dst (resized to [n, row dims of src]) = rows[0..n) of src. */
static pd_status gather_rows(const pd_exec_ctx *ctx, const pd_tensor *src, const int64_t *rows,
                             int64_t n, bool broadcast, pd_tensor *dst) {
  int64_t dims[PD_TENSOR_MAX_DIMS];
  int nd;
  size_t row_bytes;
  if (broadcast) { /* one shared value: every row is all of src */
    nd = src->ndims + 1;
    if (nd > PD_TENSOR_MAX_DIMS)
      return pd_ctx_fail(ctx, PD_ESHAPE, "a memory of rank %d is too deep", src->ndims);
    dims[0] = n;
    memcpy(dims + 1, src->dims, sizeof *dims * (size_t)src->ndims);
    row_bytes = pd_tensor_nbytes(src);
  } else {
    nd = src->ndims;
    memcpy(dims, src->dims, sizeof *dims * (size_t)nd);
    dims[0] = n;
    row_bytes = src->dims[0] ? pd_tensor_nbytes(src) / (size_t)src->dims[0] : 0;
  }
  pd_status st = pd_ctx_resize(ctx, dst, src->dtype, nd, dims);
  if (st) return st;
  char *d = pd_tensor_data(dst);
  const char *s = pd_tensor_data(src);
  for (int64_t r = 0; r < n; r++)
    memcpy(d + (size_t)r * row_bytes, s + (broadcast ? 0 : (size_t)rows[r] * row_bytes), row_bytes);
  return PD_OK;
}

static pd_tensor *step_tensor(pd_scope *scope, const char *name) {
  pd_variable *v = pd_scope_var(scope, name);
  return v ? pd_var_tensor(v) : NULL;
}

static pd_status rnn_step(pd_exec_ctx *ctx, const rnn_plan *p, int64_t k, pd_scope *prev,
                          pd_scope *scope, int64_t *rows, int nst, const char *const *ex,
                          const char *const *states) {
  const pd_block *sub = pd_ctx_sub_block(ctx);
  int64_t n = alive(p, k);
  pd_status st;
  for (int j = 0; j < pd_ctx_nin(ctx, "inputs"); j++) {
    for (int64_t r = 0; r < n; r++) rows[r] = step_row(p, p->order[r], k);
    pd_tensor *t = step_tensor(scope, pd_ctx_in_name(ctx, "inputs", j));
    if (!t) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    if ((st = gather_rows(ctx, pd_ctx_in_at(ctx, "inputs", j), rows, n, false, t))) return st;
  }
  for (int i = 0; i < nst; i++) {
    pd_tensor *pre = step_tensor(scope, ex[i]);
    if (!pre) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    if (k == 0) {
      const pd_tensor *init = pd_ctx_in_at(ctx, "initial_states", i);
      const pd_var_desc *d = pd_block_find_var_local(sub, ex[i]);
      bool shared = d && d->ndims == init->ndims + 1;
      if (!shared && (init->ndims == 0 || init->dims[0] != p->nseq)) {
        char sh[96];
        return pd_ctx_fail(ctx, PD_ESHAPE,
                           "the initial value of memory '%s' has shape %s: it needs one row per "
                           "sequence (%lld)",
                           ex[i], pd_ctx_shape_str(init, sh, sizeof sh), (long long)p->nseq);
      }
      for (int64_t r = 0; r < n; r++) rows[r] = p->order[r];
      if ((st = gather_rows(ctx, init, rows, n, shared, pre))) return st;
    } else {
      pd_variable *pv = pd_scope_find_local_var(prev, states[i]);
      if (!pv || pv->type != PD_VAR_LOD_TENSOR || !pd_tensor_initialized(&pv->u.tensor))
        return pd_ctx_fail(ctx, PD_ERUNTIME, "step %lld left no value in memory '%s'",
                           (long long)k, states[i]);
      const pd_tensor *last = &pv->u.tensor;
      if (last->ndims == 0 || last->dims[0] < n)
        return pd_ctx_fail(ctx, PD_ESHAPE, "memory '%s' has %lld rows after step %lld, "
                                           "expected %lld (one per running sequence)",
                           states[i], (long long)(last->ndims ? last->dims[0] : 0),
                           (long long)k, (long long)alive(p, k - 1));
      for (int64_t r = 0; r < n; r++) rows[r] = r;
      if ((st = gather_rows(ctx, last, rows, n, false, pre))) return st;
    }
  }
  return pd_ctx_run_sub_block(ctx, scope);
}

/* Stack output `name` of every step into the outer tensor out, sequences in the inputs' order. */
static pd_status rnn_stack(pd_exec_ctx *ctx, const rnn_plan *p, pd_variable *steps,
                           const char *name, pd_tensor *out) {
  const pd_tensor *first = NULL;
  for (int64_t k = 0; k < p->maxlen; k++) {
    pd_variable *v = pd_scope_find_local_var(pd_var_step_scope(steps, (size_t)k), name);
    const pd_tensor *t = v && v->type == PD_VAR_LOD_TENSOR ? &v->u.tensor : NULL;
    int64_t n = alive(p, k);
    if (!t || !pd_tensor_initialized(t) || t->ndims == 0 || t->dims[0] != n) {
      char sh[96];
      return pd_ctx_fail(ctx, PD_ESHAPE, "output '%s' of step %lld must have one row per running "
                                         "sequence (%lld), it is %s",
                         name, (long long)k, (long long)n,
                         t && pd_tensor_initialized(t) ? pd_ctx_shape_str(t, sh, sizeof sh)
                                                       : "missing");
    }
    if (!first) first = t;
    else if (t->dtype != first->dtype || t->ndims != first->ndims ||
             memcmp(t->dims + 1, first->dims + 1, sizeof *t->dims * (size_t)(t->ndims - 1)))
      return pd_ctx_fail(ctx, PD_ESHAPE, "output '%s' changes shape between steps", name);
  }
  int64_t dims[PD_TENSOR_MAX_DIMS] = {0};
  int nd = 2;
  pd_dtype dt = PD_FP32;
  if (first) {
    nd = first->ndims;
    memcpy(dims, first->dims, sizeof *dims * (size_t)nd);
    dt = first->dtype;
  } else {
    const pd_var_desc *d = pd_block_find_var_local(pd_ctx_sub_block(ctx), name);
    if (d) {
      dt = d->dtype;
      nd = d->ndims >= 1 ? d->ndims : 1;
      for (int k = 1; k < nd; k++) dims[k] = d->dims[k] < 0 ? 1 : d->dims[k];
    } else {
      dims[1] = 1;
    }
  }
  dims[0] = p->off[p->nseq];
  pd_status st = pd_ctx_resize(ctx, out, dt, nd, dims);
  if (st) return st;
  size_t row_bytes = pd_tensor_nbytes(out) / (size_t)(dims[0] ? dims[0] : 1);
  char *d = pd_tensor_data(out);
  for (int64_t k = 0; k < p->maxlen; k++) {
    pd_variable *v = pd_scope_find_local_var(pd_var_step_scope(steps, (size_t)k), name);
    const char *s = pd_tensor_data(&v->u.tensor);
    int64_t n = alive(p, k);
    for (int64_t r = 0; r < n; r++)
      memcpy(d + (size_t)step_row(p, p->order[r], k) * row_bytes, s + (size_t)r * row_bytes,
             row_bytes);
  }
  const int64_t *lv = p->off;
  int64_t len = p->nseq + 1;
  if ((st = pd_tensor_set_lod(out, 1, &lv, &len))) return pd_ctx_fail(ctx, st, "out of memory");
  return PD_OK;
}

/* The STRINGS attribute `name` (NULL and 0 when absent). */
static const char *const *str_list(const pd_exec_ctx *ctx, const char *name, int *n) {
  const pd_attr *a = pd_ctx_attr_raw(ctx, name);
  *n = a && a->type == PD_ATTR_STRINGS ? a->n : 0;
  return *n ? (const char *const *)a->strings : NULL;
}

pd_status pd_kernel_recurrent(pd_exec_ctx *ctx) {
  int nin = pd_ctx_nin(ctx, "inputs");
  if (nin < 1) return pd_ctx_fail(ctx, PD_EINVAL, "no sequence to loop over");
  const pd_tensor *x = pd_ctx_in_at(ctx, "inputs", 0);
  if (x->nlod != 1 || x->ndims == 0) {
    char sh[96];
    return pd_ctx_fail(ctx, PD_EINVAL,
                       "for (t in x) needs x to be a batch of sequences with one LoD level; "
                       "'%s' has %d levels and shape %s",
                       pd_ctx_in_name(ctx, "inputs", 0), x->nlod, pd_ctx_shape_str(x, sh, sizeof sh));
  }
  pd_status st = pd_tensor_validate_lod(x, ctx->err);
  if (st) return pd_ctx_fail(ctx, st, "input '%s': %s", pd_ctx_in_name(ctx, "inputs", 0),
                             ctx->err && ctx->err->msg ? ctx->err->msg : "bad LoD");
  rnn_plan p = {.nseq = x->lod[0].n - 1, .off = x->lod[0].offsets,
                .reverse = pd_ctx_attr_bool(ctx, "reverse")};
  for (int j = 1; j < nin; j++) {
    const pd_tensor *y = pd_ctx_in_at(ctx, "inputs", j);
    if (y->nlod != 1 || y->lod[0].n != x->lod[0].n ||
        memcmp(y->lod[0].offsets, p.off, sizeof *p.off * (size_t)x->lod[0].n))
      return pd_ctx_fail(ctx, PD_ESHAPE, "inputs '%s' and '%s' have different sequence lengths",
                         pd_ctx_in_name(ctx, "inputs", 0), pd_ctx_in_name(ctx, "inputs", j));
  }
  int nex, nstates;
  const char *const *ex = str_list(ctx, "ex_states", &nex);
  const char *const *states = str_list(ctx, "states", &nstates);
  if (nex != nstates || nex != pd_ctx_nin(ctx, "initial_states"))
    return pd_ctx_fail(ctx, PD_EINVAL, "ex_states (%d), states (%d) and initial_states (%d) "
                                       "must name as many memories",
                       nex, nstates, pd_ctx_nin(ctx, "initial_states"));
  pd_variable *steps = pd_ctx_out_var(ctx, "step_scopes", 0);
  if (!steps) return pd_ctx_fail(ctx, PD_EINVAL, "output step_scopes is not bound");
  if (steps->type == PD_VAR_STEP_SCOPES) pd_var_clear_step_scopes(steps);
  p.order = pd_malloc(sizeof *p.order * (size_t)(p.nseq + 1));
  int64_t *rows = pd_malloc(sizeof *rows * (size_t)(x->dims[0] + p.nseq + 1));
  len_idx *keys = pd_malloc(sizeof *keys * (size_t)(p.nseq + 1));
  if (!p.order || !rows || !keys) {
    pd_free(keys);
    st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    goto out;
  }
  for (int64_t s = 0; s < p.nseq; s++) {
    keys[s] = (len_idx){seq_len(&p, s), s};
    if (seq_len(&p, s) > p.maxlen) p.maxlen = seq_len(&p, s);
  }
  qsort(keys, (size_t)p.nseq, sizeof *keys, by_len_desc);
  for (int64_t s = 0; s < p.nseq; s++) p.order[s] = keys[s].idx;
  pd_free(keys);
  pd_scope *prev = NULL;
  for (int64_t k = 0; k < p.maxlen; k++) {
    pd_scope *scope;
    if ((st = new_kept_scope(ctx, "step_scopes", false, &scope))) goto out;
    if ((st = rnn_step(ctx, &p, k, prev, scope, rows, nex, ex, states))) goto out;
    prev = scope;
  }
  if (steps->type == PD_VAR_UNSET && (st = pd_var_set_type(steps, PD_VAR_STEP_SCOPES))) {
    st = pd_ctx_fail(ctx, st, "output step_scopes is not a STEP_SCOPES variable");
    goto out;
  }
  for (int o = 0; o < pd_ctx_nout(ctx, "outputs"); o++) {
    pd_tensor *out = pd_ctx_out_at(ctx, "outputs", o);
    if (!out) continue;
    if ((st = rnn_stack(ctx, &p, steps, pd_ctx_out_name(ctx, "outputs", o), out))) goto out;
  }
out:
  pd_free(p.order);
  pd_free(rows);
  return st;
}


pd_status pd_kernel_conditional_block_grad(pd_exec_ctx *ctx) { return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "PENDING kernel"); }
pd_status pd_kernel_merge_lod_tensor_grad(pd_exec_ctx *ctx) { return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "PENDING kernel"); }
pd_status pd_kernel_recurrent_grad(pd_exec_ctx *ctx) { return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "PENDING kernel"); }
pd_status pd_kernel_split_lod_tensor_grad(pd_exec_ctx *ctx) { return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "PENDING kernel"); }
pd_status pd_kernel_while_grad(pd_exec_ctx *ctx) { return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "PENDING kernel"); }
