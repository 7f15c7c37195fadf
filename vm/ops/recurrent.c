/* recurrent.c -- recurrent networks: the recurrent op (a `for` over a batch of sequences, one kept
 * scope per step, memories carried between steps, outputs stacked into sequences) and elman_rnn
 * (the fused Elman loop the fuse_rnn pass makes: one GEMM a step on the backend's
 * gemm_act_chain): their shape functions, kernels and gradient kernels. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"
#include "vm/ops/subblock.h"

/* ================================================================ shape functions */

/* recurrent: runs sub_block once per step of its `inputs` (split along dim 0, which must agree);
 * ex_states[i] holds states[i] of the previous step, initial_states[i] at the first step. */
pd_status pd_infer_recurrent(pd_infer_ctx *c) {
  pd_status st = pd_infer_check_sub_block(c);
  if (st) return st;
  int nex = pd_infer_attr_len(c, "ex_states"), nstates = pd_infer_attr_len(c, "states");
  int ninit = pd_infer_nin(c, "initial_states");
  if (nex != nstates)
    return pd_infer_fail(c, PD_EINVAL, "%d ex_states but %d states", nex, nstates);
  if (ninit != nex)
    return pd_infer_fail(c, PD_EINVAL, "%d ex_states but %d initial_states", nex, ninit);
  pd_infer_dims d0;
  char s0[PD_DIMS_BUF], si[PD_DIMS_BUF];
  if ((st = pd_infer_in(c, "inputs", 0, NULL, &d0))) return st;
  for (int i = 0; i < pd_infer_nin(c, "inputs"); i++) {
    pd_infer_dims d;
    if ((st = pd_infer_in(c, "inputs", i, NULL, &d))) return st;
    if (d.n == 0)
      return pd_infer_fail(c, PD_ESHAPE, "inputs[%d] has no dim to step along, got []", i);
    if (i > 0 && d.n > 0 && d0.n > 0 && !pd_infer_dim_compatible(d.d[0], d0.d[0]))
      return pd_infer_fail(c, PD_ESHAPE, "inputs[%d] %s has %" PRId64 " steps but inputs[0] %s has %"
                           PRId64, i, pd_infer_dims_str(&d, si), d.d[0],
                           pd_infer_dims_str(&d0, s0), d0.d[0]);
  }
  return PD_OK;
}

/* elman_rnn: Input [T, H] with one LoD level, Weight [H, H], H0 [H] or [sequences, H] (the
 * number of sequences is known at run time only); Hidden is Input's shape and LoD. */
pd_status pd_infer_elman_rnn(pd_infer_ctx *c) {
  const pd_var_desc *x, *w, *h0 = NULL;
  pd_infer_dims d, wd, hd;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "Input", 0, &x, &d);
  if (!st) st = pd_infer_in(c, "Weight", 0, &w, &wd);
  if (!st && pd_infer_nin(c, "H0") > 0) st = pd_infer_in(c, "H0", 0, &h0, &hd);
  if (st) return st;
  if (x->lod_level != 1 || (d.n >= 0 && d.n != 2))
    return pd_infer_fail(c, PD_ESHAPE, "Input must be a batch of sequences of rows ([T, H], one "
                         "LoD level); it is %s with %d LoD levels", pd_infer_dims_str(&d, s1),
                         x->lod_level);
  int64_t hid = d.n == 2 ? d.d[1] : -1;
  if (w->dtype != x->dtype || (wd.n >= 0 && (wd.n != 2 || !pd_infer_dim_compatible(wd.d[0], hid) ||
                                             !pd_infer_dim_compatible(wd.d[1], hid))))
    return pd_infer_fail(c, PD_ESHAPE, "Weight must be [H, H] with Input's H and dtype (Input "
                         "is %s); it is %s", pd_infer_dims_str(&d, s1),
                         pd_infer_dims_str(&wd, s2));
  if (h0 && (h0->dtype != x->dtype ||
             (hd.n >= 0 && (hd.n < 1 || hd.n > 2 || !pd_infer_dim_compatible(hd.d[hd.n - 1], hid)))))
    return pd_infer_fail(c, PD_ESHAPE, "H0 must be [H] or [sequences, H] with Input's H and "
                         "dtype (Input is %s); it is %s", pd_infer_dims_str(&d, s1),
                         pd_infer_dims_str(&hd, s2));
  return pd_infer_set_out(c, "Hidden", 0, &d, x->dtype, 1);
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

/* vm/ops/kern.h: the order in which the recurrent ops run a batch of sequences. */
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
      if (cnt > 0 && is_float(seed->dtype))
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

typedef struct elman {
  pd_dtype dt;
  size_t es;               /* element size */
  int64_t nseq, total, hid, maxlen;
  pd_k_unop act;
  pd_tensor lod;           /* a copy of Input's LoD (an output bound to Input's var would clear it) */
  const int64_t *off;      /* sequence s is rows off[s] .. off[s + 1] - 1 of Input */
  int64_t *order;          /* sequences by length, longest first, then by index */
  int64_t *koff;           /* step k is time-major rows koff[k] .. koff[k + 1] - 1 */
  int64_t *row;            /* time-major row i is row row[i] of Input */
  bool shared;             /* H0 is one row for every sequence */
  bool uniform;            /* every sequence has maxlen > 0 elements (and hid > 0): strided */
  bool rev;                /* is_reverse */
} elman;

static void elman_free(elman *e) {
  pd_free(e->order);
  pd_free(e->koff);
  pd_free(e->row);
  pd_tensor_release(&e->lod);
}

static int64_t len_of(const elman *e, int64_t s) { return e->off[s + 1] - e->off[s]; }

/* Check the op's inputs and make the time-major plan; for the gradient (grad), also the forward
 * values Hidden. e is ready for elman_free whatever the result. */
static pd_status elman_make(pd_exec_ctx *ctx, elman *e, bool grad) {
  memset(e, 0, sizeof *e);
  pd_tensor_init(&e->lod);
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight");
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0"), *h = grad ? pd_ctx_in(ctx, "Hidden") : NULL;
  char a[96], b[96];
  if (!x || !w) return pd_ctx_fail(ctx, PD_EINVAL, "Input and Weight must be given");
  if (grad && !h) return pd_ctx_fail(ctx, PD_EINVAL, "Hidden (the forward values) must be given");
  if (x->ndims != 2 || x->nlod != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input must be a batch of sequences of rows ([T, H], one "
                                       "LoD level); it is %s with %d LoD levels",
                       pd_ctx_shape_str(x, a, sizeof a), x->nlod);
  e->dt = x->dtype;
  if (!is_float(e->dt))
    return pd_ctx_fail(ctx, PD_ETYPE, "Input must be float32 or float64, it is %s",
                       pd_dtype_name(e->dt));
  e->es = pd_dtype_size(e->dt);
  e->total = x->dims[0];
  e->hid = x->dims[1];
  if (w->dtype != e->dt || w->ndims != 2 || w->dims[0] != e->hid || w->dims[1] != e->hid)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Weight must be [%lld, %lld] %s (Input is %s); it is %s %s",
                       (long long)e->hid, (long long)e->hid, pd_dtype_name(e->dt),
                       pd_ctx_shape_str(x, a, sizeof a), pd_ctx_shape_str(w, b, sizeof b),
                       pd_dtype_name(w->dtype));
  pd_status st = pd_tensor_validate_lod(x, ctx->err);
  if (st) return pd_ctx_fail(ctx, st, "Input: %s", ctx->err && ctx->err->msg ? ctx->err->msg
                                                                              : "bad LoD");
  e->nseq = x->lod[0].n - 1;
  if (h0) {
    e->shared = h0->ndims == 1;
    bool fits = h0->dtype == e->dt &&
                (e->shared ? h0->dims[0] == e->hid
                           : h0->ndims == 2 && h0->dims[0] == e->nseq && h0->dims[1] == e->hid);
    if (!fits)
      return pd_ctx_fail(ctx, PD_ESHAPE, "H0 must be [%lld] (one state for every sequence) or "
                                         "[%lld, %lld] (one per sequence) %s; it is %s %s",
                         (long long)e->hid, (long long)e->nseq, (long long)e->hid,
                         pd_dtype_name(e->dt), pd_ctx_shape_str(h0, a, sizeof a),
                         pd_dtype_name(h0->dtype));
  }
  if (h && (h->dtype != e->dt || h->ndims != 2 || h->dims[0] != e->total || h->dims[1] != e->hid))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Hidden is %s %s, Input %s %s",
                       pd_ctx_shape_str(h, a, sizeof a), pd_dtype_name(h->dtype),
                       pd_ctx_shape_str(x, b, sizeof b), pd_dtype_name(e->dt));
  const char *act = pd_ctx_attr_str(ctx, "activation");
  if (!strcmp(act, "tanh")) e->act = PD_K_TANH;
  else if (!strcmp(act, "relu")) e->act = PD_K_RELU;
  else if (!strcmp(act, "sigmoid")) e->act = PD_K_SIGMOID;
  else return pd_ctx_fail(ctx, PD_EINVAL, "activation '%s' is none of tanh, relu, sigmoid", act);
  if (pd_tensor_copy_lod(&e->lod, x)) return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  e->off = e->lod.lod[0].offsets;
  for (int64_t s = 0; s < e->nseq; s++)
    if (len_of(e, s) > e->maxlen) e->maxlen = len_of(e, s);
  e->order = pd_malloc(sizeof *e->order * (size_t)(e->nseq + 1));
  e->koff = pd_malloc(sizeof *e->koff * (size_t)(e->maxlen + 1));
  e->row = pd_malloc(sizeof *e->row * (size_t)(e->total + 1));
  if (!e->order || !e->koff || !e->row || !pd_seq_by_length(e->off, e->nseq, e->order))
    return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  bool rev = e->rev = pd_ctx_attr_bool(ctx, "is_reverse");
  e->uniform = e->nseq > 0 && e->maxlen > 0 && e->hid > 0 && e->total == e->nseq * e->maxlen;
  int64_t i = 0, n = e->nseq;
  for (int64_t k = 0; k < e->maxlen; k++) {
    while (n > 0 && len_of(e, e->order[n - 1]) <= k) n--;
    e->koff[k] = i;
    for (int64_t r = 0; r < n; r++) {
      int64_t s = e->order[r];
      e->row[i++] = e->off[s] + (rev ? len_of(e, s) - 1 - k : k);
    }
  }
  e->koff[e->maxlen] = i;
  return PD_OK;
}

static int64_t running(const elman *e, int64_t k) { return e->koff[k + 1] - e->koff[k]; }

/* Row i of time-major dst = row row[i] of src, for every i (or the reverse, scatter). */
static void to_time_major(const elman *e, char *dst, const char *src) {
  size_t rb = (size_t)e->hid * e->es;
  for (int64_t i = 0; i < e->total; i++)
    memcpy(dst + (size_t)i * rb, src + (size_t)e->row[i] * rb, rb);
}

static void from_time_major(const elman *e, char *dst, const char *src) {
  size_t rb = (size_t)e->hid * e->es;
  for (int64_t i = 0; i < e->total; i++)
    memcpy(dst + (size_t)e->row[i] * rb, src + (size_t)i * rb, rb);
}

/* The initial states in the sequences' order, [nseq, H] (zeros without H0). */
static void initial_rows(const elman *e, const pd_tensor *h0, char *dst) {
  size_t rb = (size_t)e->hid * e->es;
  if (!h0) {
    memset(dst, 0, rb * (size_t)e->nseq);
    return;
  }
  const char *src = pd_tensor_data(h0);
  for (int64_t r = 0; r < e->nseq; r++)
    memcpy(dst + (size_t)r * rb, src + (e->shared ? 0 : (size_t)e->order[r] * rb), rb);
}

static pd_status gemm_ld(const pd_exec_ctx *ctx, const elman *e, bool ta, bool tb, int64_t m,
                         int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                         double beta, void *c, int64_t ldc) {
  return pd_ctx_check(ctx, ctx->k->gemm(e->dt, ta, tb, m, n, k, 1.0, a, lda, b, tb ? k : n, beta,
                                        c, ldc),
                      "gemm");
}

/* C = act(A W + C) (grad false), or C = (A W^T + C) * act'(H) (grad true): a step's product
 * and its activation in one kernel call (kernels.h: gemm_act). */
static pd_status gemm_act(const pd_exec_ctx *ctx, const elman *e, bool grad, int64_t m,
                          const void *a, int64_t lda, const void *w, void *c, int64_t ldc,
                          const void *h, int64_t ldh) {
  return pd_ctx_check(ctx, ctx->k->gemm_act(e->act, grad, e->dt, false, grad, m, e->hid,
                                            e->hid, a, lda, w, e->hid, 1.0, c, ldc, h, ldh),
                      grad ? "gemm and activation gradient" : "gemm and activation");
}

static pd_status gemm(const pd_exec_ctx *ctx, const elman *e, bool ta, bool tb, int64_t m,
                      int64_t n, int64_t k, const void *a, const void *b, double beta, void *c) {
  return gemm_ld(ctx, e, ta, tb, m, n, k, a, ta ? m : k, b, beta, c, n);
}

/* ---- Sequences of one length L (a text cut into equal pieces, a padded batch): step k's rows,
 * element t of every sequence (t = k, or L - 1 - k reversed), are every L-th row from row t,
 * so the GEMMs read and write them in place with a row stride of L rows: no time-major copies.
 * The sorted order is the LoD's (pd_seq_by_length breaks ties by index), as H0's rows are. ---- */
static int64_t elem_at(const elman *e, int64_t k) { return e->rev ? e->maxlen - 1 - k : k; }

/* d *= act' (read from the states h) on step k's rows. */
static pd_status act_grad_rows(const pd_exec_ctx *ctx, const elman *e, int64_t k, const char *h,
                               char *d) {
  size_t rb = (size_t)e->hid * e->es, stride = rb * (size_t)e->maxlen;
  size_t off = (size_t)elem_at(e, k) * rb;
  pd_status st = PD_OK;
  for (int64_t s = 0; s < e->nseq && !st; s++, off += stride)
    st = ctx->k->unary_grad(e->act, e->dt, e->hid, NULL, h + off, d + off, d + off);
  return pd_ctx_check(ctx, st, "activation gradient");
}

/* Hidden (already holding Input) becomes the states, step by step: a GEMM with its activation
 * a step, the whole recurrence one kernel call (kernels.h: gemm_act_chain, which runs the
 * sequences on different threads without a barrier between steps). */
static pd_status forward_uniform(const pd_exec_ctx *ctx, const elman *e, const void *w,
                                 const char *init, char *hid) {
  int64_t ld = e->hid * e->maxlen, step = e->rev ? -e->hid : e->hid;
  return pd_ctx_check(ctx, ctx->k->gemm_act_chain(e->act, false, e->dt, false, e->nseq, e->hid,
                                                  e->maxlen, init, e->hid, w,
                                                  hid + (size_t)elem_at(e, 0) * e->hid * e->es,
                                                  ld, step, NULL, 0),
                      "gemm and activation");
}

/* d (holding Hidden@GRAD) becomes the pre-activation gradients, from the last step back: the
 * last step's rows get act'; then step k - 1's rows become (their own + step k's times W^T)
 * * act', a GEMM with its activation gradient a step, in one gemm_act_chain. Step 0's product
 * goes to carry (for H0's gradient) when want_carry. */
static pd_status backward_uniform(const pd_exec_ctx *ctx, const elman *e, const void *w,
                                  const char *h, char *d, char *carry, bool want_carry) {
  size_t rb = (size_t)e->hid * e->es;
  int64_t ld = e->hid * e->maxlen, step = e->rev ? e->hid : -e->hid;
  pd_status st = act_grad_rows(ctx, e, e->maxlen - 1, h, d);
  if (!st && e->maxlen > 1) {
    size_t at = (size_t)elem_at(e, e->maxlen - 2) * rb;
    st = pd_ctx_check(ctx, ctx->k->gemm_act_chain(e->act, true, e->dt, true, e->nseq, e->hid,
                                                  e->maxlen - 1,
                                                  d + (size_t)elem_at(e, e->maxlen - 1) * rb, ld,
                                                  w, d + at, ld, step, h + at, ld),
                      "gemm and activation gradient");
  }
  if (!st && want_carry)
    st = gemm_ld(ctx, e, false, true, e->nseq, e->hid, e->hid, d + (size_t)elem_at(e, 0) * rb,
                 ld, w, 0.0, carry, e->hid);
  return st;
}

/* prev = each row's previous state (H0's row at a sequence's first step), in Input's order. */
static void prev_uniform(const elman *e, const char *h, const char *init, char *prev) {
  size_t rb = (size_t)e->hid * e->es, seq = rb * (size_t)e->maxlen;
  size_t first = (size_t)elem_at(e, 0) * rb;
  for (int64_t s = 0; s < e->nseq; s++) {
    char *p = prev + (size_t)s * seq;
    const char *q = h + (size_t)s * seq;
    if (e->rev) memcpy(p, q + rb, seq - rb);
    else memcpy(p + rb, q, seq - rb);
    memcpy(p + first, init + (size_t)s * rb, rb);
  }
}

pd_status pd_kernel_elman_rnn(pd_exec_ctx *ctx) {
  elman e;
  pd_status st = elman_make(ctx, &e, false);
  pd_tensor *out = pd_ctx_out(ctx, "Hidden");
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight");
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0");
  char *tm = NULL, *init = NULL;
  if (!st && (!out || out == x || out == w || out == h0))
    st = pd_ctx_fail(ctx, PD_EINVAL, "Hidden must be a var of its own");
  if (st) goto out;
  size_t rb = (size_t)e.hid * e.es;
  if (!e.uniform) tm = pd_k_host_alloc(rb * (size_t)e.total + 1);
  init = pd_k_host_alloc(rb * (size_t)e.nseq + 1);
  if ((!e.uniform && !tm) || !init) {
    st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    goto out;
  }
  initial_rows(&e, h0, init);
  if (e.uniform) {
    if (!(st = pd_ctx_resize(ctx, out, e.dt, 2, x->dims)) &&
        !(st = pd_ctx_check(ctx, pd_tensor_copy_lod(out, &e.lod), "lod"))) {
      memcpy(pd_tensor_data(out), pd_tensor_data(x), rb * (size_t)e.total);
      st = forward_uniform(ctx, &e, pd_tensor_data(w), init, pd_tensor_data(out));
    }
    goto out;
  }
  to_time_major(&e, tm, pd_tensor_data(x));
  for (int64_t k = 0; k < e.maxlen && !st; k++) {
    int64_t n = running(&e, k);
    char *cur = tm + (size_t)e.koff[k] * rb;
    const char *prev = k ? tm + (size_t)e.koff[k - 1] * rb : init;
    if (e.hid > 0)
      st = gemm_act(ctx, &e, false, n, prev, e.hid, pd_tensor_data(w), cur, e.hid, NULL, 0);
  }
  if (!st) st = pd_ctx_resize(ctx, out, e.dt, 2, x->dims);
  if (!st) st = pd_ctx_check(ctx, pd_tensor_copy_lod(out, &e.lod), "lod");
  if (!st) from_time_major(&e, pd_tensor_data(out), tm);
out:
  pd_k_host_free(tm);
  pd_k_host_free(init);
  elman_free(&e);
  return st;
}

/* H0's gradient from carry, step 0's rows times W^T (in the sorted order): scattered back to
 * H0's rows, or summed when H0 is one shared row. */
static pd_status h0_grad(const pd_exec_ctx *ctx, const elman *e, const pd_tensor *h0,
                         pd_tensor *dh0, const char *carry) {
  if (!dh0) return PD_OK;
  pd_status st = pd_ctx_resize(ctx, dh0, e->dt, h0->ndims, h0->dims);
  if (st) return st;
  size_t rb = (size_t)e->hid * e->es;
  memset(pd_tensor_data(dh0), 0, pd_tensor_nbytes(dh0));
  int64_t n0 = e->maxlen ? running(e, 0) : 0;
  for (int64_t r = 0; r < n0; r++) {
    const char *src = carry + (size_t)r * rb;
    if (!e->shared) {
      memcpy((char *)pd_tensor_data(dh0) + (size_t)e->order[r] * rb, src, rb);
      continue;
    }
    for (int64_t j = 0; j < e->hid; j++) {
      if (e->dt == PD_FP32) PD_TENSOR_F32(dh0)[j] += ((const float *)src)[j];
      else PD_TENSOR_F64(dh0)[j] += ((const double *)src)[j];
    }
  }
  return PD_OK;
}

/* Weight's gradient: prev^T d over all rows (both in the same row order). */
static pd_status weight_grad(const pd_exec_ctx *ctx, const elman *e, const pd_tensor *w,
                             pd_tensor *dw, const char *prev, const char *d) {
  pd_status st = pd_ctx_resize(ctx, dw, e->dt, 2, w->dims);
  if (st) return st;
  if (e->total > 0 && e->hid > 0)
    return gemm(ctx, e, true, false, e->hid, e->hid, e->total, prev, d, 0.0, pd_tensor_data(dw));
  memset(pd_tensor_data(dw), 0, pd_tensor_nbytes(dw));
  return PD_OK;
}

/* dH = Hidden@GRAD (zero where absent); going back from the last step, the gradient d of step
 * k's pre-activation is (dH_k + d_k+1 W^T on the rows still running at k + 1) * act'(h_k); it
 * is Input's gradient, d_0 W^T is H0's (summed over the sequences when H0 is shared), and
 * Weight's is the sum over the steps of h_k-1^T d_k: one GEMM of the previous states, stacked
 * time-major, by all the d's. */
pd_status pd_kernel_elman_rnn_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight");
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0"), *h = pd_ctx_in(ctx, "Hidden");
  const pd_tensor *dh = pd_ctx_in(ctx, "Hidden@GRAD");
  pd_tensor *dx = pd_ctx_out(ctx, "Input@GRAD"), *dw = pd_ctx_out(ctx, "Weight@GRAD");
  pd_tensor *dh0 = h0 ? pd_ctx_out(ctx, "H0@GRAD") : NULL;
  elman e;
  pd_status st = elman_make(ctx, &e, true);
  char *hs = NULL, *d = NULL, *carry = NULL, *prev = NULL;
  const pd_tensor *ins[] = {x, w, h0, h, dh};
  for (size_t i = 0; i < sizeof ins / sizeof ins[0] && !st; i++)
    if (ins[i] && (ins[i] == dx || ins[i] == dw || ins[i] == dh0))
      st = pd_ctx_fail(ctx, PD_EINVAL, "a gradient output is bound to one of the inputs");
  if (!st && dh && (dh->dtype != e.dt || pd_tensor_numel(dh) != e.total * e.hid)) {
    char a[96], b[96];
    st = pd_ctx_fail(ctx, PD_ESHAPE, "Hidden@GRAD is %s, Hidden %s",
                     pd_ctx_shape_str(dh, a, sizeof a), pd_ctx_shape_str(h, b, sizeof b));
  }
  if (st) goto out;
  size_t rb = (size_t)e.hid * e.es;
  /* uniform: the gradients are worked out in dx's storage (d only when dx is not wanted), and
   * hs is not needed (Hidden is read in place) */
  if (e.uniform && dx) {
    if ((st = pd_ctx_resize(ctx, dx, e.dt, 2, x->dims)) ||
        (st = pd_ctx_check(ctx, pd_tensor_copy_lod(dx, &e.lod), "lod")))
      goto out;
  } else {
    d = pd_k_host_alloc(rb * (size_t)e.total + 1);
  }
  if (!e.uniform) hs = pd_k_host_alloc(rb * (size_t)e.total + 1);
  carry = pd_k_host_alloc(rb * (size_t)e.nseq + 1);
  /* prev (for Weight's gradient): H0's rows (all sequences', before step 1's overwrite the
   * unused ones), then the steps' */
  if (dw) prev = pd_k_host_alloc(rb * (size_t)(e.total > e.nseq ? e.total : e.nseq) + 1);
  if ((!e.uniform && !hs) || (!d && !(e.uniform && dx)) || !carry || (dw && !prev)) {
    st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    goto out;
  }
  if (e.uniform) {
    char *dd = d ? d : pd_tensor_data(dx);
    if (dh) memcpy(dd, pd_tensor_data(dh), rb * (size_t)e.total);
    else memset(dd, 0, rb * (size_t)e.total);
    st = backward_uniform(ctx, &e, pd_tensor_data(w), pd_tensor_data(h), dd, carry,
                          dh0 != NULL);
    if (st || (st = h0_grad(ctx, &e, h0, dh0, carry))) goto out;
    if (dw) {  /* carry, used up, now holds H0's rows */
      initial_rows(&e, h0, carry);
      prev_uniform(&e, pd_tensor_data(h), carry, prev);
      st = weight_grad(ctx, &e, w, dw, prev, dd);
    }
    goto out;
  }
  to_time_major(&e, hs, pd_tensor_data(h));
  if (dh) to_time_major(&e, d, pd_tensor_data(dh));
  else memset(d, 0, rb * (size_t)e.total);
  /* Step k's first rows (those still running at k + 1) add step k + 1's times W^T and take act'
   * in one gemm_act; the rest (sequences that end at k) take act' alone. */
  for (int64_t k = e.maxlen - 1; k >= 0 && e.hid > 0 && !st; k--) {
    int64_t n = running(&e, k), m = k + 1 < e.maxlen ? running(&e, k + 1) : 0;
    char *dk = d + (size_t)e.koff[k] * rb;
    const char *hk = hs + (size_t)e.koff[k] * rb;
    if (m > 0)
      st = gemm_act(ctx, &e, true, m, d + (size_t)e.koff[k + 1] * rb, e.hid, pd_tensor_data(w),
                    dk, e.hid, hk, e.hid);
    if (!st && n > m)
      st = pd_ctx_check(ctx, ctx->k->unary_grad(e.act, e.dt, (n - m) * e.hid, NULL,
                                                hk + (size_t)m * rb, dk + (size_t)m * rb,
                                                dk + (size_t)m * rb),
                        "activation gradient");
  }
  if (!st && e.hid > 0 && e.maxlen > 0 && dh0)
    st = gemm(ctx, &e, false, true, running(&e, 0), e.hid, e.hid, d, pd_tensor_data(w), 0.0,
              carry);
  if (st) goto out;
  if (dx) {
    if ((st = pd_ctx_resize(ctx, dx, e.dt, 2, x->dims)) ||
        (st = pd_ctx_check(ctx, pd_tensor_copy_lod(dx, &e.lod), "lod")))
      goto out;
    from_time_major(&e, pd_tensor_data(dx), d);
  }
  if ((st = h0_grad(ctx, &e, h0, dh0, carry))) goto out;
  if (dw) {
    /* The previous states, time-major: step k's first rows of step k - 1, H0's at step 0. */
    if (e.maxlen) initial_rows(&e, h0, prev);
    for (int64_t k = 1; k < e.maxlen; k++)
      memcpy(prev + (size_t)e.koff[k] * rb, hs + (size_t)e.koff[k - 1] * rb,
             (size_t)running(&e, k) * rb);
    st = weight_grad(ctx, &e, w, dw, prev, d);
  }
out:
  pd_k_host_free(hs);
  pd_k_host_free(d);
  pd_k_host_free(carry);
  pd_k_host_free(prev);
  elman_free(&e);
  return st;
}
