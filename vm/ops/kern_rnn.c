/* kern_rnn.c -- elman_rnn and its gradient: a whole Elman recurrence over a batch of sequences in
 * one op, the fused form of a for-rnn whose body is h = act(u + h W) (vm/passes/fuse_rnn.h makes it).
 *
 * elman_rnn: Input [T, H] with one LoD level (u, one row per element: the loop's step input,
 * already projected), Weight [H, H], H0 (optional: zeros) [H] shared by every sequence or
 * [sequences, H]; Hidden [T, H] with Input's LoD:
 *   h_s,t = act(u_s,t + h_s,t-1 W),  h_s,-1 = H0 (row s, or the shared row),
 * t over each sequence's elements from the first (from the last with is_reverse). act is tanh,
 * relu or sigmoid (attribute `activation`).
 *
 * Layout: the sequences are ordered by length, longest first (as the recurrent op orders them),
 * and the work is done time-major: step k's rows are those of the sequences still running at
 * step k, a prefix of that order, so the previous step's values for them are the first rows of
 * the previous step's block, and each step is one GEMM of [running, H] by [H, H] into rows that
 * already hold u. The gradient walks the steps back, each one elementwise product with act' (read
 * from h) and one GEMM by W^T; the weight's gradient is one GEMM over all steps at the end.
 * When every sequence has the same length L, step k's rows are every L-th row of Input's own
 * layout, and the GEMMs work on them in place with a row stride: no time-major copies, and the
 * carried gradient is added by the GEMM itself.
 * Values and gradients equal those of the unfused loop up to the order of floating-point sums.
 *
 * The kernels run on the host (they index rows themselves); the executor moves values there. */
#include "config.h"

#include <string.h>

#include "kernels/kernels.h"
#include "vm/ops/opkernels.h"

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
  if (e->dt != PD_FP32 && e->dt != PD_FP64)
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
