/* exec_control.c -- the kernels of the ops that own blocks or reorganise a minibatch for them:
 *   conditional_block  runs its sub-block once in a new scope it keeps (Scope output), when its
 *                      condition holds (a scalar Cond), or when every Input has rows (a per-row
 *                      if: split_lod_tensor gave each branch its rows);
 *   while              reruns its sub-block, one kept step scope per iteration, while Condition;
 *   recurrent          the for-rnn over a batch of sequences, or of sequences of sequences
 *                      for a loop inside the loop (see pd_kernel_recurrent);
 *   split_lod_tensor / merge_lod_tensor  the row split and the order-preserving merge of a per-row
 *                      if/else; whole sequences move together when X has LoD.
 * The kept scopes are what the backward pass reads; they go with the run scope. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ops/opkernels.h"

/* ---------------------------------------------------------------- helpers */

/* name = var + suffix ("h" + "@GRAD"), cut to fit in VAR_NAME bytes. No snprintf: the loop
 * kernels make these names several times an iteration, and formatting them took ~1% of an RNN
 * training step. */
#define VAR_NAME 512
static void suffixed(char name[VAR_NAME], const char *var, const char *suffix) {
  size_t n = strlen(var), m = strlen(suffix);
  if (n > VAR_NAME - 1) n = VAR_NAME - 1;
  if (m > VAR_NAME - 1 - n) m = VAR_NAME - 1 - n;
  memcpy(name, var, n);
  memcpy(name + n, suffix, m);
  name[n + m] = '\0';
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

/* ---------------------------------------------------------------- recurrent */

/* The for-rnn. `inputs` are batches of sequences with the same LoD; step k of the loop sees
 * element k of every sequence of the top LoD level that is still running. Sequences are
 * ordered by length, longest first (stable), as Fluid's rank table orders them, so the
 * sequences alive at step k are a prefix of that order: every step-input, memory and output of
 * step k has one unit per sequence of that prefix, in that order. With one LoD level an element
 * is a row; with more (a loop inside the loop) an element is itself a sequence (of sequences):
 * the step input is then those elements' rows with the LoD levels below the top, rebased, so
 * its top level has one sequence per running sequence of x. Each step runs the sub-block in its
 * own scope, kept in `step_scopes`:
 *   - the step input: a var of the step block named like the outer input (units sliced in);
 *   - memories: ex_states[i] (the previous value) is the initial_states[i] value at step 0 (a
 *     value with one row per sequence, or one value shared by all, broadcast), then the first
 *     rows of states[i] of the step before; states[i] is what the body computed. A memory has
 *     one row per running sequence, whatever the depth of x;
 *   - outputs: each var of `outputs` is computed in every step under its own name and stacked,
 *     after the loop, into a batch of sequences with x's top level: a step value with one row
 *     per running sequence gives one row per element (LoD: x's top level); when x has more
 *     levels, a step value with LoD whose top level has one sequence per running sequence (an
 *     inner loop's emitted sequences, the step input itself) gives one such sequence per element
 *     (LoD: x's top level, then the step values' levels stitched together).
 * `reverse` runs each sequence from its last element to its first (the LoD stays the same). */

typedef struct rnn_plan {
  int64_t nseq, maxlen;
  const int64_t *off;        /* x's top level: sequence s is elements off[s] .. off[s + 1] - 1 */
  int64_t *order;            /* sequence indices by length, longest first */
  bool reverse;
  int nsub;                  /* x's LoD levels below the top (0: an element is one row) */
  const pd_lod_level *sub;   /* those levels */
  pd_tensor lod;             /* owns a copy of x's LoD, which off and sub point into: x may be
                                an output too (a memory set to the step input), and resizing an
                                output clears its LoD */
} rnn_plan;

static void rnn_plan_free(rnn_plan *p) {
  pd_free(p->order);
  p->order = NULL;
  pd_tensor_release(&p->lod);
}

static int64_t seq_len(const rnn_plan *p, int64_t s) { return p->off[s + 1] - p->off[s]; }
/* The element of x that sequence s reads at step k (a row of x when x has one LoD level). */
static int64_t step_elem(const rnn_plan *p, int64_t s, int64_t k) {
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

bool pd_seq_by_length(const int64_t *off, int64_t nseq, int64_t *order) {
  len_idx *keys = pd_malloc(sizeof *keys * (size_t)(nseq + 1));
  if (!keys) return false;
  for (int64_t q = 0; q < nseq; q++) keys[q] = (len_idx){off[q + 1] - off[q], q};
  qsort(keys, (size_t)nseq, sizeof *keys, by_len_desc);
  for (int64_t q = 0; q < nseq; q++) order[q] = keys[q].idx;
  pd_free(keys);
  return true;
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

/* ---- Units with sub-sequences. A unit is a sequence of the top one of some LoD levels
 * lv[0..nl) (with nl == 0, a row); its rows, and the lengths of its sub-sequences at each level,
 * are found by following the offsets down. The levels have been validated. */

/* LoD levels under construction: level i holds n[i] offsets, room for cap[i] (one allocation,
 * sized beforehand: nothing grows). */
typedef struct lod_build {
  int nl;
  int64_t *off[PD_TENSOR_MAX_DIMS];
  int64_t n[PD_TENSOR_MAX_DIMS], cap[PD_TENSOR_MAX_DIMS];
  int64_t *mem;
} lod_build;

/* Checked before sizing arrays of LoD levels: at most PD_TENSOR_MAX_DIMS levels. */
static pd_status check_levels(const pd_exec_ctx *ctx, int nl) {
  if (nl <= PD_TENSOR_MAX_DIMS) return PD_OK;
  return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%d LoD levels are too many (at most %d)", nl,
                     PD_TENSOR_MAX_DIMS);
}

static pd_status lod_build_init(const pd_exec_ctx *ctx, lod_build *b, int nl, const int64_t *cap) {
  memset(b, 0, sizeof *b);
  pd_status st = check_levels(ctx, nl);
  if (st) return st;
  size_t total = 0;
  for (int i = 0; i < nl; i++) total += (size_t)cap[i];
  if (!(b->mem = pd_malloc(sizeof *b->mem * (total + 1))))
    return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  b->nl = nl;
  int64_t *at = b->mem;
  for (int i = 0; i < nl; i++) {
    b->off[i] = at;
    b->cap[i] = cap[i];
    b->n[i] = 1;
    at[0] = 0;
    at += cap[i];
  }
  return PD_OK;
}

static void lod_build_free(lod_build *b) { pd_free(b->mem); }

/* Unit u of lv[0..nl): its rows [*rb, *re), and, with b, its sub-sequences' lengths appended to
 * b's levels first..first + nl - 1 (as offsets continuing from each level's last one). */
static pd_status unit_span(const pd_exec_ctx *ctx, const pd_lod_level *lv, int nl, int64_t u,
                           lod_build *b, int first, int64_t *rb, int64_t *re) {
  int64_t lo = u, hi = u + 1;
  for (int i = 0; i < nl; i++) {
    if (b) {
      int64_t *o = b->off[first + i];
      if (b->n[first + i] + (hi - lo) > b->cap[first + i])
        return pd_ctx_fail(ctx, PD_ERUNTIME, "LoD level %d outgrew its %lld offsets", first + i,
                           (long long)b->cap[first + i]);
      for (int64_t v = lo; v < hi; v++, b->n[first + i]++)
        o[b->n[first + i]] = o[b->n[first + i] - 1] + lv[i].offsets[v + 1] - lv[i].offsets[v];
    }
    int64_t nlo = lv[i].offsets[lo], nhi = lv[i].offsets[hi];
    lo = nlo;
    hi = nhi;
  }
  *rb = lo;
  *re = hi;
  return PD_OK;
}

/* Set t's LoD: `top` (ntop offsets, or none when NULL) above b's levels. */
static pd_status set_built_lod(const pd_exec_ctx *ctx, pd_tensor *t, const int64_t *top,
                               int64_t ntop, const lod_build *b) {
  const int64_t *offs[PD_TENSOR_MAX_DIMS + 1];
  int64_t lens[PD_TENSOR_MAX_DIMS + 1];
  int nl = 0;
  if (top) {
    offs[nl] = top;
    lens[nl++] = ntop;
  }
  for (int i = 0; i < b->nl; i++) {
    offs[nl] = b->off[i];
    lens[nl++] = b->n[i];
  }
  pd_status st = pd_tensor_set_lod(t, nl, offs, lens);
  return st ? pd_ctx_fail(ctx, st, "out of memory") : PD_OK;
}

/* dst = the elements elems[0..n) of x, in that order: one row each when x has one LoD level,
 * else each element's rows with the levels below the top, rebased (p->nsub levels). */
static pd_status gather_elems(const pd_exec_ctx *ctx, const rnn_plan *p, const pd_tensor *x,
                              const int64_t *elems, int64_t n, pd_tensor *dst) {
  if (p->nsub == 0) return gather_rows(ctx, x, elems, n, false, dst);
  const pd_lod_level *lv = x->lod + 1;
  int64_t cap[PD_TENSOR_MAX_DIMS];
  for (int i = 0; i < p->nsub; i++) cap[i] = lv[i].n;
  lod_build b;
  pd_status st = lod_build_init(ctx, &b, p->nsub, cap);
  if (st) return st;
  int64_t rows = 0;
  for (int64_t r = 0; r < n && !st; r++) {
    int64_t rb, re;
    st = unit_span(ctx, lv, p->nsub, elems[r], &b, 0, &rb, &re);
    rows += re - rb;
  }
  int64_t dims[PD_TENSOR_MAX_DIMS];
  memcpy(dims, x->dims, sizeof *dims * (size_t)x->ndims);
  dims[0] = rows;
  if (!st) st = pd_ctx_resize(ctx, dst, x->dtype, x->ndims, dims);
  if (!st) {
    size_t rb_bytes = x->dims[0] ? pd_tensor_nbytes(x) / (size_t)x->dims[0] : 0;
    char *d = pd_tensor_data(dst);
    const char *s = pd_tensor_data(x);
    int64_t at = 0;
    for (int64_t r = 0; r < n && !st; r++) {
      int64_t rb, re;
      st = unit_span(ctx, lv, p->nsub, elems[r], NULL, 0, &rb, &re);
      if (!st && re > rb)
        memcpy(d + (size_t)at * rb_bytes, s + (size_t)rb * rb_bytes, (size_t)(re - rb) * rb_bytes);
      at += re - rb;
    }
  }
  if (!st) st = set_built_lod(ctx, dst, NULL, 0, &b);
  lod_build_free(&b);
  return st;
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
    for (int64_t r = 0; r < n; r++) rows[r] = step_elem(p, p->order[r], k);
    pd_tensor *t = step_tensor(scope, pd_ctx_in_name(ctx, "inputs", j));
    if (!t) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    if ((st = gather_elems(ctx, p, pd_ctx_in_at(ctx, "inputs", j), rows, n, t))) return st;
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
      /* The running sequences come first, so the previous value is the first n rows of what
       * the step before computed: shared, not copied (no kernel writes a shared tensor in
       * place; the backward pass reads it where it is). */
      if (pd_tensor_share(pre, last)) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
      pre->dims[0] = n;
      pd_tensor_clear_lod(pre);
    }
  }
  return pd_ctx_run_sub_block(ctx, scope);
}

/* The STRINGS attribute `name` (NULL and 0 when absent). */
static const char *const *str_list(const pd_exec_ctx *ctx, const char *name, int *n) {
  const pd_attr *a = pd_ctx_attr_raw(ctx, name);
  *n = a && a->type == PD_ATTR_STRINGS ? a->n : 0;
  return *n ? (const char *const *)a->strings : NULL;
}

/* Is `name` one of the memories' states (stacked one row per element, never by sequence)? */
static bool is_state(const pd_exec_ctx *ctx, const char *name) {
  int n;
  const char *const *states = str_list(ctx, "states", &n);
  for (int i = 0; i < n; i++)
    if (strcmp(states[i], name) == 0) return true;
  return false;
}

/* Step k's value of output `name` (NULL when the step has none). */
static const pd_tensor *step_value(pd_variable *steps, int64_t k, const char *name) {
  pd_variable *v = pd_scope_find_local_var(pd_var_step_scope(steps, (size_t)k), name);
  return v && v->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&v->u.tensor) ? &v->u.tensor
                                                                                   : NULL;
}

/* Stack output `name` by sequence (x has levels below the top and the step values have LoD):
 * element e of the result is unit r of step k's value, where sequence order[r] read element e
 * at step k. */
static pd_status rnn_stack_nested(pd_exec_ctx *ctx, const rnn_plan *p, pd_variable *steps,
                                  const char *name, const pd_tensor *first, pd_tensor *out) {
  int m = first->nlod;
  int64_t total = p->off[p->nseq], rows = 0, cap[PD_TENSOR_MAX_DIMS];
  pd_status st = check_levels(ctx, m);
  if (st) return st;
  for (int i = 0; i < m; i++) cap[i] = 1;
  for (int64_t k = 0; k < p->maxlen; k++) {
    const pd_tensor *t = step_value(steps, k, name);
    int64_t n = alive(p, k);
    char sh[96];
    if (t->nlod != m || t->lod[0].n - 1 != n)
      return pd_ctx_fail(ctx, PD_ESHAPE, "output '%s' of step %lld must have %d LoD level%s with "
                                         "one sequence per running sequence (%lld), it has %d "
                                         "level%s (shape %s)",
                         name, (long long)k, m, m == 1 ? "" : "s", (long long)n, t->nlod,
                         t->nlod == 1 ? "" : "s", pd_ctx_shape_str(t, sh, sizeof sh));
    if ((st = pd_tensor_validate_lod(t, ctx->err)))
      return pd_ctx_fail(ctx, st, "output '%s' of step %lld: %s", name, (long long)k,
                         ctx->err && ctx->err->msg ? ctx->err->msg : "bad LoD");
    for (int i = 0; i < m; i++) cap[i] += t->lod[i].n - 1;
    rows += t->dims[0];
  }
  /* Where each element comes from. */
  int64_t *src = pd_malloc(sizeof *src * (size_t)(2 * total + 1));
  if (!src) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  for (int64_t k = 0; k < p->maxlen; k++)
    for (int64_t r = 0, n = alive(p, k); r < n; r++) {
      int64_t e = step_elem(p, p->order[r], k);
      src[2 * e] = k;
      src[2 * e + 1] = r;
    }
  lod_build b;
  st = lod_build_init(ctx, &b, m, cap);
  int64_t dims[PD_TENSOR_MAX_DIMS];
  memcpy(dims, first->dims, sizeof *dims * (size_t)first->ndims);
  dims[0] = rows;
  if (!st) st = pd_ctx_resize(ctx, out, first->dtype, first->ndims, dims);
  if (!st) {
    size_t row_bytes = first->dims[0] ? pd_tensor_nbytes(first) / (size_t)first->dims[0]
                                      : pd_dtype_size(first->dtype);
    for (int d = 1; !first->dims[0] && d < first->ndims; d++) row_bytes *= (size_t)first->dims[d];
    char *d = pd_tensor_data(out);
    int64_t at = 0;
    for (int64_t e = 0; e < total && !st; e++) {
      const pd_tensor *t = step_value(steps, src[2 * e], name);
      int64_t rb, re;
      st = unit_span(ctx, t->lod, m, src[2 * e + 1], &b, 0, &rb, &re);
      if (!st && re > rb)
        memcpy(d + (size_t)at * row_bytes, (const char *)pd_tensor_data(t) + (size_t)rb * row_bytes,
               (size_t)(re - rb) * row_bytes);
      at += re - rb;
    }
  }
  if (!st) st = set_built_lod(ctx, out, p->off, p->nseq + 1, &b);
  lod_build_free(&b);
  pd_free(src);
  return st;
}

/* Stack output `name` of every step into the outer tensor out, sequences in the inputs' order. */
static pd_status rnn_stack(pd_exec_ctx *ctx, const rnn_plan *p, pd_variable *steps,
                           const char *name, pd_tensor *out) {
  const pd_tensor *first = NULL;
  bool nested = false;
  for (int64_t k = 0; k < p->maxlen; k++) {
    const pd_tensor *t = step_value(steps, k, name);
    int64_t n = alive(p, k);
    if (k == 0 && t && t->ndims > 0 && p->nsub > 0 && t->nlod > 0 && !is_state(ctx, name))
      nested = true;
    if (!t || t->ndims == 0 || (!nested && t->dims[0] != n)) {
      char sh[96];
      return pd_ctx_fail(ctx, PD_ESHAPE, "output '%s' of step %lld must have one row per running "
                                         "sequence (%lld), it is %s",
                         name, (long long)k, (long long)n,
                         t ? pd_ctx_shape_str(t, sh, sizeof sh) : "missing");
    }
    if (!first) first = t;
    else if (t->dtype != first->dtype || t->ndims != first->ndims ||
             memcmp(t->dims + 1, first->dims + 1, sizeof *t->dims * (size_t)(t->ndims - 1)))
      return pd_ctx_fail(ctx, PD_ESHAPE, "output '%s' changes shape between steps", name);
  }
  if (nested) return rnn_stack_nested(ctx, p, steps, name, first, out);
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
    const char *s = pd_tensor_data(step_value(steps, k, name));
    int64_t n = alive(p, k);
    for (int64_t r = 0; r < n; r++)
      memcpy(d + (size_t)step_elem(p, p->order[r], k) * row_bytes, s + (size_t)r * row_bytes,
             row_bytes);
  }
  const int64_t *lv = p->off;
  int64_t len = p->nseq + 1;
  if ((st = pd_tensor_set_lod(out, 1, &lv, &len))) return pd_ctx_fail(ctx, st, "out of memory");
  return PD_OK;
}

/* x's LoD as "[[0, 2, 3], [0, 3, 5, 9]]" into buf (cut short with "..." when long). */
static const char *lod_str(const pd_tensor *x, char *buf, size_t cap) {
  size_t at = 0;
  buf[0] = 0;
#define PUT(...)                                                            \
  do {                                                                      \
    if (at < cap) at += (size_t)snprintf(buf + at, cap - at, __VA_ARGS__); \
  } while (0)
  PUT("[");
  for (int l = 0; l < x->nlod; l++) {
    PUT("%s[", l ? ", " : "");
    for (int64_t i = 0; i < x->lod[l].n; i++)
      PUT("%s%lld", i ? ", " : "", (long long)x->lod[l].offsets[i]);
    PUT("]");
  }
  PUT("]");
#undef PUT
  if (at >= cap && cap > 4) memcpy(buf + cap - 4, "...", 4);
  return buf;
}

/* Check the op's sequences and memories and sort the sequences by length (p->order, heap,
 * freed with pd_free). With `declared`, x must have as many LoD levels as its var declares (the
 * compiler gave the loop's body one level fewer: a loop inside the loop needs two). */
static pd_status rnn_plan_make(pd_exec_ctx *ctx, rnn_plan *p, bool declared) {
  memset(p, 0, sizeof *p);
  pd_tensor_init(&p->lod);
  int nin = pd_ctx_nin(ctx, "inputs");
  if (nin < 1) return pd_ctx_fail(ctx, PD_EINVAL, "no sequence to loop over");
  const pd_tensor *x = pd_ctx_in_at(ctx, "inputs", 0);
  const char *xname = pd_ctx_in_name(ctx, "inputs", 0);
  char sh[96];
  if (!x || x->nlod < 1 || x->ndims == 0)
    return pd_ctx_fail(ctx, PD_EINVAL,
                       "for (t in x) needs x to be a batch of sequences (a tensor with LoD); "
                       "'%s' has %d LoD levels and shape %s",
                       xname, x ? x->nlod : 0, x ? pd_ctx_shape_str(x, sh, sizeof sh) : "?");
  const pd_block *sub = pd_ctx_sub_block(ctx);
  const pd_block *blk = sub ? pd_program_block(sub->program, sub->parent_idx) : NULL;
  const pd_var_desc *xd = declared && blk ? pd_block_find_var_visible(blk, xname, NULL) : NULL;
  int want = xd && xd->lod_level > 0 ? xd->lod_level : x->nlod; /* 0: not declared, any depth */
  if (x->nlod != want) {
    char lod[160];
    lod_str(x, lod, sizeof lod);
    if (x->nlod < want)
      return pd_ctx_fail(ctx, PD_ESHAPE,
                         "the sequence it loops over has %d LoD level%s (lod %s), but it was "
                         "declared with lod_level = %d (each step a batch of sequences, for a loop "
                         "inside the loop)",
                         x->nlod, x->nlod == 1 ? "" : "s", lod, want);
    return pd_ctx_fail(ctx, PD_ESHAPE,
                       "the sequence it loops over has %d LoD levels (lod %s), but it was declared "
                       "with lod_level = %d (each step one element of each sequence); declare it "
                       "with lod_level = %d to loop over its sequences of sequences",
                       x->nlod, lod, want, x->nlod);
  }
  pd_status st = pd_tensor_validate_lod(x, ctx->err);
  if (st) return pd_ctx_fail(ctx, st, "input '%s': %s", xname,
                             ctx->err && ctx->err->msg ? ctx->err->msg : "bad LoD");
  if ((st = check_levels(ctx, x->nlod))) return st;
  p->nseq = x->lod[0].n - 1;
  p->nsub = x->nlod - 1;
  p->reverse = pd_ctx_attr_bool(ctx, "reverse");
  for (int j = 1; j < nin; j++) {
    const pd_tensor *y = pd_ctx_in_at(ctx, "inputs", j);
    bool same = y && y->nlod == x->nlod;
    for (int l = 0; same && l < x->nlod; l++)
      same = y->lod[l].n == x->lod[l].n &&
             !memcmp(y->lod[l].offsets, x->lod[l].offsets, sizeof *p->off * (size_t)x->lod[l].n);
    if (same && x->nlod > 1) same = y->ndims > 0 && y->dims[0] == x->dims[0];
    if (!same)
      return pd_ctx_fail(ctx, PD_ESHAPE, "inputs '%s' and '%s' have different sequence lengths",
                         xname, pd_ctx_in_name(ctx, "inputs", j));
  }
  if (pd_tensor_copy_lod(&p->lod, x)) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  p->off = p->lod.lod[0].offsets;
  p->sub = p->lod.lod + 1;
  p->order = pd_malloc(sizeof *p->order * (size_t)(p->nseq + 1));
  if (!p->order || !pd_seq_by_length(p->off, p->nseq, p->order)) {
    rnn_plan_free(p);
    return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  }
  for (int64_t q = 0; q < p->nseq; q++)
    if (seq_len(p, q) > p->maxlen) p->maxlen = seq_len(p, q);
  return PD_OK;
}

pd_status pd_kernel_recurrent(pd_exec_ctx *ctx) {
  rnn_plan p;
  pd_status st = rnn_plan_make(ctx, &p, true);
  if (st) return st;
  int64_t *rows = NULL;
  int nex, nstates;
  const char *const *ex = str_list(ctx, "ex_states", &nex);
  const char *const *states = str_list(ctx, "states", &nstates);
  pd_variable *steps = pd_ctx_out_var(ctx, "step_scopes", 0);
  if (nex != nstates || nex != pd_ctx_nin(ctx, "initial_states")) {
    st = pd_ctx_fail(ctx, PD_EINVAL, "ex_states (%d), states (%d) and initial_states (%d) "
                                     "must name as many memories",
                     nex, nstates, pd_ctx_nin(ctx, "initial_states"));
    goto out;
  }
  if (!steps) {
    st = pd_ctx_fail(ctx, PD_EINVAL, "output step_scopes is not bound");
    goto out;
  }
  if (steps->type == PD_VAR_STEP_SCOPES) pd_var_clear_step_scopes(steps);
  rows = pd_malloc(sizeof *rows * (size_t)(p.off[p.nseq] + p.nseq + 1));
  if (!rows) {
    st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    goto out;
  }
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
  rnn_plan_free(&p);
  pd_free(rows);
  return st;
}



/* ================================================================ gradients
 * The gradient block of conditional_block_grad and recurrent_grad (vm/passes/backward.c) computes the
 * gradients of the forward op's inputs as vars of its own scope, named <var>@GRAD (or
 * <var>@GRAD@LOCAL when the block also writes <var>); the kernels run it in a child of each
 * scope the forward run kept and move those gradients out to the vars bound to their @GRAD
 * outputs. A gradient nothing computed is zero. */

/* The gradient of `var` computed in grad scope g (NULL when none). */
static const pd_tensor *inner_grad(pd_scope *g, const char *var) {
  char name[VAR_NAME];
  const char *suffix[2] = {"@GRAD@LOCAL", "@GRAD"};
  for (int i = 0; i < 2; i++) {
    suffixed(name, var, suffix[i]);
    pd_variable *v = pd_scope_find_local_var(g, name);
    if (v && v->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&v->u.tensor))
      return &v->u.tensor;
  }
  return NULL;
}

/* Can the gradient block `blk` leave a gradient of `var` in its scope (inner_grad's names): does
 * it declare <var>@GRAD@LOCAL or <var>@GRAD, or have an op that writes one? A loop's parameter
 * whose gradient it takes as one product after the steps (param_products) has neither. */
static bool block_leaves_grad(const pd_block *blk, const char *var) {
  if (!blk) return true;
  char names[2][VAR_NAME];
  suffixed(names[0], var, "@GRAD@LOCAL");
  suffixed(names[1], var, "@GRAD");
  for (int k = 0; k < 2; k++) {
    if (pd_block_find_var_local(blk, names[k])) return true;
    for (int i = 0; i < blk->nops; i++) {
      const pd_op_desc *op = blk->ops[i];
      for (int s = 0; s < op->noutputs; s++)
        for (int a = 0; a < op->outputs[s].nargs; a++)
          if (strcmp(op->outputs[s].args[a], names[k]) == 0) return true;
    }
  }
  return false;
}

/* out shaped like `like` (with its LoD); its values are unset. */
static pd_status shape_like(const pd_exec_ctx *ctx, pd_tensor *out, const pd_tensor *like) {
  if (!like || !pd_tensor_initialized(like)) return PD_OK;
  pd_status st = pd_ctx_resize(ctx, out, like->dtype, like->ndims, like->dims);
  if (!st && like->nlod) st = pd_ctx_check(ctx, pd_tensor_copy_lod(out, like), "lod");
  return st;
}

/* out = zeros shaped like `like` (with its LoD). */
static pd_status zeros_like(const pd_exec_ctx *ctx, pd_tensor *out, const pd_tensor *like) {
  if (!like || !pd_tensor_initialized(like)) return PD_OK;
  pd_status st = shape_like(ctx, out, like);
  if (!st) st = pd_ctx_check(ctx, pd_tensor_fill(out, 0), "zero fill");
  return st;
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

/* dst = the rows of src (a gradient of the output `like`, stacked by sequence: its top level
 * x's, its elements sequences) that the elements elems[0..n) cover, in that order. */
static pd_status gather_spans(const pd_exec_ctx *ctx, const pd_tensor *src, const pd_tensor *like,
                              const int64_t *elems, int64_t n, pd_tensor *dst) {
  if (src->dtype != like->dtype || pd_tensor_nbytes(src) != pd_tensor_nbytes(like) ||
      like->ndims == 0) {
    char a[96], b[96];
    return pd_ctx_fail(ctx, PD_ESHAPE, "an output's gradient is %s %s, its value %s %s",
                       pd_dtype_name(src->dtype), pd_ctx_shape_str(src, a, sizeof a),
                       pd_dtype_name(like->dtype), pd_ctx_shape_str(like, b, sizeof b));
  }
  size_t row_bytes = like->dims[0] ? pd_tensor_nbytes(like) / (size_t)like->dims[0] : 0;
  int64_t rows = 0, rb, re;
  pd_status st = PD_OK;
  for (int64_t r = 0; r < n && !st; r++) {
    st = unit_span(ctx, like->lod + 1, like->nlod - 1, elems[r], NULL, 0, &rb, &re);
    rows += re - rb;
  }
  int64_t dims[PD_TENSOR_MAX_DIMS];
  memcpy(dims, like->dims, sizeof *dims * (size_t)like->ndims);
  dims[0] = rows;
  if (!st) st = pd_ctx_resize(ctx, dst, like->dtype, like->ndims, dims);
  int64_t at = 0;
  for (int64_t r = 0; r < n && !st; r++) {
    st = unit_span(ctx, like->lod + 1, like->nlod - 1, elems[r], NULL, 0, &rb, &re);
    if (!st && re > rb)
      memcpy((char *)pd_tensor_data(dst) + (size_t)at * row_bytes,
             (const char *)pd_tensor_data(src) + (size_t)rb * row_bytes,
             (size_t)(re - rb) * row_bytes);
    at += re - rb;
  }
  return st;
}

/* The gradient gi of a step input (the elements elems[0..n) of x, gathered by gather_elems)
 * written back to those elements' rows of d (shaped like x); zeros there when gi is NULL (the
 * step computed no gradient for the input). Every element is some step's, once, and x's LoD
 * covers its rows, so the steps write all of d. */
static pd_status scatter_elems(const pd_exec_ctx *ctx, const rnn_plan *p, const char *name,
                               const int64_t *elems, int64_t n, const pd_tensor *gi, pd_tensor *d) {
  size_t row_bytes = d->dims[0] ? pd_tensor_nbytes(d) / (size_t)d->dims[0] : 0;
  int64_t rows = 0, rb, re;
  pd_status st = PD_OK;
  for (int64_t r = 0; r < n && !st; r++) {
    st = unit_span(ctx, p->sub, p->nsub, elems[r], NULL, 0, &rb, &re);
    rows += re - rb;
  }
  if (st) return st;
  if (gi && (gi->dtype != d->dtype || pd_tensor_nbytes(gi) != row_bytes * (size_t)rows))
    return pd_ctx_fail(ctx, PD_ESHAPE, "the gradient of step input '%s' has the wrong size", name);
  char *dd = pd_tensor_data(d);
  const char *gd = gi ? pd_tensor_data(gi) : NULL;
  int64_t at = 0;
  for (int64_t r = 0; r < n && !st; r++) {
    if ((st = unit_span(ctx, p->sub, p->nsub, elems[r], NULL, 0, &rb, &re))) break;
    size_t bytes = (size_t)(re - rb) * row_bytes;
    if (gd) memcpy(dd + (size_t)rb * row_bytes, gd + (size_t)at * row_bytes, bytes);
    else memset(dd + (size_t)rb * row_bytes, 0, bytes);
    at += re - rb;
  }
  return st;
}

/* Backward through time. For each step k from the last to the first, in a child of step k's
 * kept scope: the gradients of the step's outputs are the rows of outputs@GRAD for that step
 * (zero when an output has no gradient; for an output stacked by sequence, the rows of the
 * step's elements, found through the forward output's LoD), and a memory's new value also gets
 * the gradient of the previous value as step k + 1 used it (rows of the sequences still
 * running there: a prefix). The gradient block then gives the step inputs', memories' and
 * parameters' gradients: step inputs' rows go back to the rows of their elements in
 * inputs@GRAD, parameters' add up over the steps, and the memories' at step 0 are the initial
 * states' (summed over the sequences when the initial value was one shared value). A loop
 * inside the loop has its own recurrent_grad in the gradient block, run at every step. */
/* A parameter gradient made one product over all steps (the "param_products" attr, triples
 * P, X, Out@GRAD, set by vm/passes/backward.c): the step gradient block no longer computes
 * P@GRAD = X^T Out@GRAD; each step's rows of X ([rows, k]) and of Out@GRAD ([rows, n]) are
 * stacked here instead, and P@GRAD gets the sum of all steps' products in one GEMM at the end.
 * (The loop runs on the host: exec_place.h.) */
typedef struct param_product {
  const char *p;          /* the parameter */
  pd_tensor *d;           /* its gradient output ([k, n]) */
  const char *x, *dout;   /* the names in the step scopes */
  int64_t k, n;
  int64_t rows, cap;      /* rows stacked so far, rows allocated */
  char *xs, *ds;          /* the stacked rows (pd_k_host_alloc: counted by pd_k_host_stats) */
} param_product;

static void products_free(param_product *pp, int npp) {
  for (int i = 0; i < npp; i++) {
    pd_k_host_free(pp[i].xs);
    pd_k_host_free(pp[i].ds);
  }
  pd_free(pp);
}

/* Room for cap rows in q's buffers, keeping the rows stacked so far. */
static bool products_reserve(param_product *q, int64_t cap, size_t es) {
  char *xs = pd_k_host_alloc((size_t)(cap * q->k) * es);
  char *ds = xs ? pd_k_host_alloc((size_t)(cap * q->n) * es) : NULL;
  if (!ds) {
    pd_k_host_free(xs);
    return false;
  }
  if (q->rows) {
    memcpy(xs, q->xs, (size_t)(q->rows * q->k) * es);
    memcpy(ds, q->ds, (size_t)(q->rows * q->n) * es);
  }
  pd_k_host_free(q->xs);
  pd_k_host_free(q->ds);
  q->xs = xs;
  q->ds = ds;
  q->cap = cap;
  return true;
}

/* The products to stack for this op (*pp NULL and *npp 0 when none), each with room for
 * `rows` rows (every element of the batch once: exact when an element is one row). */
static pd_status products_make(const pd_exec_ctx *ctx, int64_t rows, param_product **pp,
                               int *npp) {
  const pd_attr *a = pd_ctx_attr_raw(ctx, "param_products");
  int nt = a && a->type == PD_ATTR_STRINGS ? a->n : 0, nparam = pd_ctx_nin(ctx, "parameters");
  *pp = NULL;
  *npp = 0;
  if (nt == 0) return PD_OK;
  if (nt % 3) return pd_ctx_fail(ctx, PD_EINVAL, "param_products must hold triples (P, X, dOut)");
  param_product *v = pd_calloc((size_t)nt / 3, sizeof *v);
  if (!v) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  int n = 0;
  for (int t = 0; t < nt; t += 3) {
    int j = 0;
    while (j < nparam && strcmp(pd_ctx_in_name(ctx, "parameters", j), a->strings[t]) != 0) j++;
    if (j == nparam) {
      pd_free(v);
      return pd_ctx_fail(ctx, PD_EINVAL, "param_products names '%s', which is not a parameter",
                         a->strings[t]);
    }
    pd_tensor *d = pd_ctx_out_at(ctx, "parameters@GRAD", j);
    const pd_tensor *w = pd_ctx_in_at(ctx, "parameters", j);
    if (!d || !w || !pd_tensor_initialized(w) || w->ndims < 1 || w->dims[0] < 1)
      continue; /* its gradient is not wanted */
    v[n] = (param_product){.p = a->strings[t], .d = d, .x = a->strings[t + 1],
                           .dout = a->strings[t + 2], .k = w->dims[0],
                           .n = pd_tensor_numel(w) / w->dims[0]};
    if (rows > 0 && !products_reserve(&v[n], rows, pd_dtype_size(w->dtype))) {
      products_free(v, n);
      return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    }
    n++;
  }
  *pp = v;
  *npp = n;
  return PD_OK;
}

/* Append step k's rows of X and Out@GRAD, found from the step's gradient scope g. */
static pd_status products_stack(const pd_exec_ctx *ctx, param_product *pp, int npp,
                                pd_scope *g, int64_t k) {
  for (int i = 0; i < npp; i++) {
    param_product *q = &pp[i];
    pd_variable *xv = pd_scope_find_var(g, q->x), *dv = pd_scope_find_var(g, q->dout);
    const pd_tensor *x = xv ? pd_var_tensor(xv) : NULL, *d = dv ? pd_var_tensor(dv) : NULL;
    int64_t r = x && pd_tensor_initialized(x) ? pd_tensor_numel(x) / q->k : -1;
    if (r < 0 || !d || !pd_tensor_initialized(d) || x->dtype != q->d->dtype ||
        d->dtype != q->d->dtype || pd_tensor_numel(x) != r * q->k ||
        pd_tensor_numel(d) != r * q->n || pd_tensor_on_gpu(x) || pd_tensor_on_gpu(d)) {
      char a[96] = "missing", b[96] = "missing";
      if (x) pd_ctx_shape_str(x, a, sizeof a);
      if (d) pd_ctx_shape_str(d, b, sizeof b);
      return pd_ctx_fail(ctx, PD_ESHAPE, "the gradient of parameter '%s' [%lld, %lld] at step "
                                         "%lld: '%s' is %s and '%s' is %s",
                         q->p, (long long)q->k, (long long)q->n, (long long)k, q->x, a, q->dout, b);
    }
    size_t es = pd_dtype_size(x->dtype);
    if (q->rows + r > q->cap) { /* steps of sequences of sequences: more rows than elements */
      int64_t cap = q->cap ? q->cap : 64;
      while (cap < q->rows + r) cap *= 2;
      if (!products_reserve(q, cap, es)) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    }
    memcpy(q->xs + (size_t)(q->rows * q->k) * es, pd_tensor_data(x), (size_t)(r * q->k) * es);
    memcpy(q->ds + (size_t)(q->rows * q->n) * es, pd_tensor_data(d), (size_t)(r * q->n) * es);
    q->rows += r;
  }
  return PD_OK;
}

/* P@GRAD += X_all^T Out@GRAD_all, for each product. */
static pd_status products_finish(const pd_exec_ctx *ctx, const param_product *pp, int npp) {
  pd_status st = PD_OK;
  for (int i = 0; i < npp && !st; i++) {
    const param_product *q = &pp[i];
    if (q->rows == 0) continue;
    st = pd_ctx_check(ctx, ctx->k->gemm(q->d->dtype, true, false, q->k, q->n, q->rows, 1.0,
                                        q->xs, q->k, q->ds, q->n, 1.0, pd_tensor_data(q->d),
                                        q->n),
                      "gemm");
  }
  return st;
}

pd_status pd_kernel_recurrent_grad(pd_exec_ctx *ctx) {
  rnn_plan p;
  pd_status st = rnn_plan_make(ctx, &p, false);
  if (st) return st;
  int nex, nstates;
  const char *const *ex = str_list(ctx, "ex_states", &nex);
  const char *const *states = str_list(ctx, "states", &nstates);
  pd_variable *steps = pd_ctx_in_var(ctx, "step_scopes", 0);
  int nin = pd_ctx_nin(ctx, "inputs"), nout = pd_ctx_nin(ctx, "outputs");
  int nparam = pd_ctx_nin(ctx, "parameters");
  int64_t *rows = pd_malloc(sizeof *rows * (size_t)(p.off[p.nseq] + p.nseq + 1));
  pd_scope *next = NULL; /* step k + 1's gradient scope */
  param_product *pp = NULL;
  int npp = 0;
  /* The parameters whose gradients the steps leave, found once: the others (param_products)
   * would cost two failed lookups at every step. */
  bool *par_grad = pd_calloc((size_t)nparam + 1, sizeof *par_grad);
  if (!rows || !par_grad) {
    st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    goto out;
  }
  for (int j = 0; j < nparam; j++)
    par_grad[j] = block_leaves_grad(pd_ctx_sub_block(ctx), pd_ctx_in_name(ctx, "parameters", j));
  if (nex != nstates || !steps || pd_var_num_step_scopes(steps) != (size_t)p.maxlen) {
    st = pd_ctx_fail(ctx, PD_ERUNTIME, "the forward loop's step scopes are missing (%zu kept, "
                                       "%lld steps)",
                     steps ? pd_var_num_step_scopes(steps) : 0, (long long)p.maxlen);
    goto out;
  }
  /* The gradient outputs start at zero; the step inputs' are written whole by the steps
   * (scatter_elems), so they are only shaped here. */
  for (int j = 0; j < nin && !st; j++) {
    pd_tensor *d = pd_ctx_out_at(ctx, "inputs@GRAD", j);
    if (d) st = shape_like(ctx, d, pd_ctx_in_at(ctx, "inputs", j));
  }
  for (int j = 0; j < nparam && !st; j++) {
    pd_tensor *d = pd_ctx_out_at(ctx, "parameters@GRAD", j);
    if (d) st = zeros_like(ctx, d, pd_ctx_in_at(ctx, "parameters", j));
  }
  for (int i = 0; i < nex && !st; i++) {
    pd_tensor *d = pd_ctx_out_at(ctx, "initial_states@GRAD", i);
    if (d) st = zeros_like(ctx, d, pd_ctx_in_at(ctx, "initial_states", i));
  }
  if (!st) st = products_make(ctx, p.off[p.nseq], &pp, &npp);
  for (int64_t k = p.maxlen - 1; k >= 0 && !st; k--) {
    int64_t n = alive(&p, k);
    pd_scope *fs = pd_var_step_scope(steps, (size_t)k);
    pd_scope *g = pd_scope_new(fs);
    if (!g) {
      st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
      break;
    }
    for (int64_t r = 0; r < n; r++) rows[r] = step_elem(&p, p.order[r], k);
    /* Seeds: the outputs' gradients for this step. */
    for (int o = 0; o < nout && !st; o++) {
      const char *name = pd_ctx_in_name(ctx, "outputs", o);
      pd_variable *fv = pd_scope_find_local_var(fs, name);
      const pd_tensor *val = fv && fv->type == PD_VAR_LOD_TENSOR ? &fv->u.tensor : NULL;
      char gname[VAR_NAME];
      suffixed(gname, name, "@GRAD");
      pd_tensor *seed = step_tensor(g, gname);
      if (!seed || !val) {
        st = pd_ctx_fail(ctx, seed ? PD_ERUNTIME : PD_ENOMEM, "step %lld has no value of '%s'",
                         (long long)k, name);
        break;
      }
      const pd_tensor *dout = pd_ctx_in_at(ctx, "outputs@GRAD", o);
      const pd_tensor *fo = pd_ctx_in_at(ctx, "outputs", o);
      bool nested = fo && fo->nlod > 1; /* stacked by sequence (rnn_stack_nested) */
      if (dout && pd_tensor_initialized(dout) && nested) {
        st = gather_spans(ctx, dout, fo, rows, n, seed);
        if (!st && pd_tensor_numel(seed) != pd_tensor_numel(val)) {
          char a[96], b[96];
          st = pd_ctx_fail(ctx, PD_ESHAPE, "the gradient of output '%s' at step %lld is %s, its "
                                           "value %s",
                           name, (long long)k, pd_ctx_shape_str(seed, a, sizeof a),
                           pd_ctx_shape_str(val, b, sizeof b));
        }
      } else if (dout && pd_tensor_initialized(dout)) {
        st = gather_rows(ctx, dout, rows, n, false, seed);
      } else {
        st = zeros_like(ctx, seed, val);
      }
      if (!st && seed->ndims != val->ndims)
        st = pd_ctx_check(ctx, pd_tensor_reshape(seed, val->ndims, val->dims), "reshape");
      if (!st && nested) st = pd_ctx_check(ctx, pd_tensor_copy_lod(seed, val), "lod");
    }
    /* A memory's new value: plus the gradient its next step sent back. */
    for (int i = 0; i < nex && next && !st; i++) {
      const pd_tensor *back = inner_grad(next, ex[i]);
      if (!back) continue;
      char gname[VAR_NAME];
      suffixed(gname, states[i], "@GRAD");
      pd_variable *sv = pd_scope_find_local_var(g, gname);
      pd_tensor *seed = sv ? pd_var_tensor(sv) : NULL;
      if (!seed) {
        pd_variable *fv = pd_scope_find_local_var(fs, states[i]);
        seed = step_tensor(g, gname);
        if (!seed || !fv || (st = zeros_like(ctx, seed, &fv->u.tensor))) {
          if (!st) st = pd_ctx_fail(ctx, PD_ERUNTIME, "memory '%s' is missing", states[i]);
          break;
        }
      }
      int64_t m = back->ndims ? back->dims[0] : 0;
      if (seed->dtype != back->dtype || back->ndims != seed->ndims || m > seed->dims[0]) {
        char a[96], b[96];
        st = pd_ctx_fail(ctx, PD_ESHAPE, "memory '%s': the gradient from step %lld is %s, this "
                                         "step's value is %s",
                         states[i], (long long)k + 1, pd_ctx_shape_str(back, a, sizeof a),
                         pd_ctx_shape_str(seed, b, sizeof b));
        break;
      }
      /* seed[0, cnt) += back: the rows of the sequences still running at step k + 1 come
       * first in both (the kernel's vector loop: a scalar one took ~8 us a step at [32, 256]). */
      int64_t cnt = pd_tensor_numel(back);
      if (cnt > 0 && (seed->dtype == PD_FP32 || seed->dtype == PD_FP64))
        st = pd_ctx_check(ctx, ctx->k->binary(PD_K_ADD, seed->dtype, 1, &cnt,
                                              pd_tensor_data(seed), 1, &cnt,
                                              pd_tensor_data(back), -1, pd_tensor_data(seed)),
                          "add");
    }
    if (!st) st = pd_ctx_run_sub_block(ctx, g);
    if (!st) st = products_stack(ctx, pp, npp, g, k);
    /* Step inputs' rows, parameters' sums. */
    for (int j = 0; j < nin && !st; j++) {
      pd_tensor *d = pd_ctx_out_at(ctx, "inputs@GRAD", j);
      if (!d || !pd_tensor_initialized(d)) continue;
      const pd_tensor *gi = inner_grad(g, pd_ctx_in_name(ctx, "inputs", j));
      st = scatter_elems(ctx, &p, pd_ctx_in_name(ctx, "inputs", j), rows, n, gi, d);
    }
    for (int j = 0; j < nparam && !st; j++) {
      if (!par_grad[j]) continue;
      pd_tensor *d = pd_ctx_out_at(ctx, "parameters@GRAD", j);
      const pd_tensor *gp = d ? inner_grad(g, pd_ctx_in_name(ctx, "parameters", j)) : NULL;
      if (!gp) continue;
      if (gp->dtype != d->dtype || pd_tensor_numel(gp) != pd_tensor_numel(d)) {
        st = pd_ctx_fail(ctx, PD_ESHAPE, "the gradient of parameter '%s' has the wrong size",
                         pd_ctx_in_name(ctx, "parameters", j));
        break;
      }
      st = pd_ctx_check(ctx, ctx->k->binary(PD_K_ADD, d->dtype, d->ndims, d->dims,
                                            pd_tensor_data(d), d->ndims, d->dims,
                                            pd_tensor_data(gp), -1, pd_tensor_data(d)),
                        "add");
    }
    pd_scope_free(next);
    next = g;
  }
  if (!st) st = products_finish(ctx, pp, npp);
  /* The initial states: step 0's memories' gradients, back in sequence order. */
  for (int i = 0; i < nex && next && !st; i++) {
    pd_tensor *d = pd_ctx_out_at(ctx, "initial_states@GRAD", i);
    const pd_tensor *back = d ? inner_grad(next, ex[i]) : NULL;
    const pd_tensor *init = pd_ctx_in_at(ctx, "initial_states", i);
    if (!back || !init) continue;
    int64_t m = back->ndims ? back->dims[0] : 0;
    size_t rb = m ? pd_tensor_nbytes(back) / (size_t)m : 0;
    bool shared = init->ndims + 1 == back->ndims;
    if (shared) { /* one value broadcast to every sequence: the sum of the rows */
      if (rb != pd_tensor_nbytes(init)) {
        st = pd_ctx_fail(ctx, PD_ESHAPE, "initial state '%s' does not match its gradient",
                         pd_ctx_in_name(ctx, "initial_states", i));
        break;
      }
      int64_t w = pd_tensor_numel(init);
      for (int64_t r = 0; r < m; r++)
        for (int64_t e = 0; e < w; e++) {
          if (d->dtype == PD_FP32) PD_TENSOR_F32(d)[e] += PD_TENSOR_F32(back)[r * w + e];
          else if (d->dtype == PD_FP64) PD_TENSOR_F64(d)[e] += PD_TENSOR_F64(back)[r * w + e];
        }
    } else {
      for (int64_t r = 0; r < m; r++)
        memcpy((char *)pd_tensor_data(d) + (size_t)p.order[r] * rb,
               (const char *)pd_tensor_data(back) + (size_t)r * rb, rb);
    }
  }
out:
  products_free(pp, npp);
  pd_scope_free(next);
  pd_free(par_grad);
  pd_free(rows);
  rnn_plan_free(&p);
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
    if (!val || (val->dtype != PD_FP32 && val->dtype != PD_FP64)) continue;
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
