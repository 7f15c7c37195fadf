/* rnn_steps.c -- the whole-sequence recurrences of kernels.h (lstm_seq, gru_seq and their
 * gradients) composed of a backend's other entries, one step at a time: the rows of every step
 * gathered time-major (copy_rows), per step one GEMM against the recurrent weight and the cell
 * entry (lstm_cell, gru_cell and their gradients), the results scattered back to the caller's
 * rows. What a backend without its own whole-sequence kernels computes in those entries (the
 * CUDA one: kernels/cuda/rnn_seq.cu), through an environment that gives the backend, its
 * memory and the row list where it computes. The arithmetic is that of the cell entries and
 * the backend's GEMM: results differ from the CPU's whole-sequence kernels (rnn_seq.c) only in
 * the order of a product's terms. */
#include "config.h"

#include "kernels/kernels.h"
#include "kernels/kernels_int.h"

/* The steps' layout: step k is time-major rows koff[k] .. koff[k + 1] - 1. */
typedef struct steps {
  const pd_k_steps_env *e;
  const pd_k_backend *k;
  const pd_k_rnn_seq *s;
  pd_dtype dt;
  size_t es;
  int64_t H, total;
} steps;

static int64_t running(const steps *p, int64_t k) { return p->s->koff[k + 1] - p->s->koff[k]; }

static char *at(const steps *p, char *base, int64_t row, int64_t cols) {
  return base + (size_t)(row * cols) * p->es;
}

/* n buffers of the given element counts (each at least one byte); all released on failure. */
static pd_status alloc_all(const steps *p, int n, char **bufs, const int64_t *elems) {
  bool ok = true;
  for (int i = 0; i < n; i++) bufs[i] = NULL;
  for (int i = 0; i < n && ok; i++)
    ok = (bufs[i] = p->e->alloc((size_t)elems[i] * p->es + 1)) != NULL;
  if (!ok)
    for (int i = 0; i < n; i++) {
      p->e->release(bufs[i]);
      bufs[i] = NULL;
    }
  return ok ? PD_OK : PD_ENOMEM;
}

static void release_all(const steps *p, int n, char **bufs) {
  for (int i = 0; i < n; i++) p->e->release(bufs[i]);
}

/* Time-major dst (total rows of cols) from the caller's rows of src, or zeros without src. */
static pd_status gather(const steps *p, int64_t cols, char *dst, const void *src) {
  if (!src) return p->total ? p->k->fill(p->dt, p->total * cols, dst, 0.0) : PD_OK;
  return p->k->copy_rows(p->dt, p->total, cols, src, p->e->row, dst, NULL);
}

/* The caller's rows of dst from time-major src. */
static pd_status scatter(const steps *p, int64_t cols, void *dst, const char *src) {
  return p->k->copy_rows(p->dt, p->total, cols, src, NULL, dst, p->e->row);
}

/* C [m, n] = A [m, k] op(B) + beta C, row-major and packed. */
static pd_status gemm(const steps *p, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      const void *a, const void *b, double beta, void *c) {
  if (m == 0 || n == 0) return PD_OK;
  pd_dtype lp = pd_k_rnn_seq_lp(p->s);
  if (lp && p->k->gemm_lp) /* mixed precision (a backend without gemm_lp multiplies in dt) */
    return p->k->gemm_lp(lp, ta, tb, 1, m, n, k, 1.0, a, ta ? m : k, 0, b, tb ? k : n, 0, beta,
                         c, n, 0, NULL);
  return p->k->gemm(p->dt, ta, tb, m, n, k, 1.0, a, ta ? m : k, b, tb ? k : n, beta, c, n);
}

/* dst[i] += src[i] for n elements. */
static pd_status add_to(const steps *p, int64_t n, char *dst, const char *src) {
  return n ? p->k->binary(PD_K_ADD, p->dt, 1, &n, dst, 1, &n, src, -1, dst) : PD_OK;
}

/* wt [cols, rows] = w [rows, cols] transposed. */
static pd_status transposed(const steps *p, int64_t rows, int64_t cols, const void *w, void *wt) {
  int64_t dims[2] = {rows, cols};
  int perm[2] = {1, 0};
  return p->k->transpose(p->dt, 2, dims, perm, w, wt);
}

/* The previous states of every time-major row: step k's rows take the first rows of step
 * k - 1, step 0's the initial ones (init, [nseq, H] in the sequences' order). */
static pd_status prev_rows(const steps *p, const char *init, char *states, char *prev) {
  size_t rb = (size_t)p->H * p->es;
  const int64_t *koff = p->s->koff;
  pd_status st = p->s->steps ? p->e->copy(prev, init, (size_t)running(p, 0) * rb) : PD_OK;
  for (int64_t k = 1; k < p->s->steps && !st; k++)
    st = p->e->copy(prev + (size_t)koff[k] * rb, states + (size_t)koff[k - 1] * rb,
                    (size_t)running(p, k) * rb);
  return st;
}

/* An initial state's gradient [nseq, H]: the first rows from carry (the sequences running at
 * step 0), zeros for the sequences of length 0. */
static pd_status state_grad(const steps *p, const char *carry, void *d0) {
  int64_t n0 = p->s->steps ? running(p, 0) : 0;
  pd_status st = p->s->nseq ? p->k->fill(p->dt, p->s->nseq * p->H, d0, 0.0) : PD_OK;
  if (!st && n0) st = p->e->copy(d0, carry, (size_t)(n0 * p->H) * p->es);
  return st;
}

static pd_status begin(steps *p, const pd_k_steps_env *e, const pd_k_rnn_seq *s) {
  pd_status st = pd_k_rnn_seq_check(s);
  if (st) return st;
  if (!e || !e->k || !e->alloc || !e->release || !e->copy || (s->steps && !e->row))
    return PD_EINVAL;
  *p = (steps){e, e->k, s, s->dt, pd_dtype_size(s->dt), s->hid,
               s->steps ? s->koff[s->steps] : 0};
  return PD_OK;
}

#define TRY(x)              \
  do {                      \
    if ((st = (x))) goto out; \
  } while (0)

pd_status pd_k_lstm_seq_steps(const pd_k_steps_env *e, const pd_k_rnn_seq *s, const void *x,
                              const void *w, const void *h0, const void *c0, void *hidden,
                              void *cell, void *gate) {
  steps p;
  pd_status st = begin(&p, e, s);
  if (st || p.total == 0 || p.H == 0) return st;
  if (!x || !w || !h0 || !c0 || !hidden || !cell || !gate) return PD_EINVAL;
  int64_t H = p.H, T = p.total;
  char *b[3]; /* g [T, 4H], hs and cs [T, H], time-major */
  const int64_t elems[3] = {4 * H * T, H * T, H * T};
  if ((st = alloc_all(&p, 3, b, elems))) return st;
  char *g = b[0], *hs = b[1], *cs = b[2];
  TRY(gather(&p, 4 * H, g, x));
  for (int64_t k = 0; k < s->steps; k++) {
    int64_t n = running(&p, k), r = s->koff[k], q = k ? s->koff[k - 1] : 0;
    const char *ph = k ? at(&p, hs, q, H) : h0, *pc = k ? at(&p, cs, q, H) : c0;
    TRY(gemm(&p, false, false, n, 4 * H, H, ph, w, 1.0, at(&p, g, r, 4 * H)));
    TRY(p.k->lstm_cell(p.dt, n, H, at(&p, g, r, 4 * H), pc, at(&p, cs, r, H), at(&p, hs, r, H)));
  }
  TRY(scatter(&p, H, hidden, hs));
  TRY(scatter(&p, H, cell, cs));
  TRY(scatter(&p, 4 * H, gate, g));
out:
  release_all(&p, 3, b);
  return st;
}

/* From the last step back: the gradients of h and c (their own plus what step k + 1 carried
 * back) give the gates' pre-activation gradients dG_k (dx's rows); h_k-1 gets dG_k W^T, c_k-1
 * dc f; dw is the sum over the steps of h_k-1^T dG_k, one GEMM. */
pd_status pd_k_lstm_seq_grad_steps(const pd_k_steps_env *e, const pd_k_rnn_seq *s,
                                   const void *w, const void *h0, const void *c0,
                                   const void *hidden, const void *cell, const void *gate,
                                   const void *dhidden, const void *dcell, void *dx, void *dw,
                                   void *dh0, void *dc0) {
  steps p;
  pd_status st = begin(&p, e, s);
  if (st) return st;
  int64_t H = p.H, T = p.total;
  if (H == 0) return PD_OK;
  if (!w || !h0 || !c0 || !dw || !dh0 || !dc0 || (T && (!hidden || !cell || !gate || !dx)))
    return PD_EINVAL;
  char *b[9]; /* g, dg [T, 4H]; cs, prev, dh, dc [T, H]; carried dh and dc [nseq, H]; wt */
  const int64_t elems[9] = {4 * H * T, 4 * H * T, H * T, H * T, H * T, H * T,
                            H * s->nseq,  H * s->nseq, 4 * H * H};
  if ((st = alloc_all(&p, 9, b, elems))) return st;
  char *g = b[0], *dg = b[1], *cs = b[2], *prev = b[3], *dh = b[4], *dc = b[5];
  char *carry_h = b[6], *carry_c = b[7], *wt = b[8];
  TRY(transposed(&p, H, 4 * H, w, wt));
  TRY(gather(&p, 4 * H, g, gate));
  TRY(gather(&p, H, cs, cell));
  TRY(gather(&p, H, dh, dhidden));
  TRY(gather(&p, H, dc, dcell));
  TRY(prev_rows(&p, c0, cs, prev)); /* the previous cells */
  for (int64_t k = s->steps - 1; k >= 0; k--) {
    int64_t n = running(&p, k), m = k + 1 < s->steps ? running(&p, k + 1) : 0, r = s->koff[k];
    char *dhk = at(&p, dh, r, H), *dck = at(&p, dc, r, H), *dgk = at(&p, dg, r, 4 * H);
    /* what step k + 1 carried back, to its rows (the first m of step k) */
    TRY(add_to(&p, m * H, dhk, carry_h));
    TRY(add_to(&p, m * H, dck, carry_c));
    TRY(p.k->lstm_cell_grad(p.dt, n, H, at(&p, g, r, 4 * H), at(&p, prev, r, H),
                            at(&p, cs, r, H), dhk, dck, dgk));
    TRY(p.e->copy(carry_c, dck, (size_t)(n * H) * p.es));
    TRY(gemm(&p, false, false, n, H, 4 * H, dgk, wt, 0.0, carry_h));
  }
  TRY(state_grad(&p, carry_h, dh0));
  TRY(state_grad(&p, carry_c, dc0));
  if (T) TRY(scatter(&p, 4 * H, dx, dg));
  /* the previous states h: hs into cs's buffer */
  TRY(gather(&p, H, cs, hidden));
  TRY(prev_rows(&p, h0, cs, prev));
  if (T) TRY(gemm(&p, true, false, H, 4 * H, T, prev, dg, 0.0, dw));
  else TRY(p.k->fill(p.dt, 4 * H * H, dw, 0.0));
out:
  release_all(&p, 9, b);
  return st;
}

pd_status pd_k_gru_seq_steps(const pd_k_steps_env *e, const pd_k_rnn_seq *s, const void *x,
                             const void *w, const void *bias, const void *h0, void *hidden,
                             void *gate) {
  steps p;
  pd_status st = begin(&p, e, s);
  if (st || p.total == 0 || p.H == 0) return st;
  if (!x || !w || !bias || !h0 || !hidden || !gate) return PD_EINVAL;
  int64_t H = p.H, T = p.total;
  char *b[4]; /* u [T, 3H], s [T, 4H], hs [T, H] time-major; hp [nseq, 3H] */
  const int64_t elems[4] = {3 * H * T, 4 * H * T, H * T, 3 * H * s->nseq};
  if ((st = alloc_all(&p, 4, b, elems))) return st;
  char *u = b[0], *sg = b[1], *hs = b[2], *hp = b[3];
  TRY(gather(&p, 3 * H, u, x));
  for (int64_t k = 0; k < s->steps; k++) {
    int64_t n = running(&p, k), r = s->koff[k];
    const char *ph = k ? at(&p, hs, s->koff[k - 1], H) : h0;
    TRY(gemm(&p, false, false, n, 3 * H, H, ph, w, 0.0, hp));
    TRY(p.k->gru_cell(p.dt, n, H, at(&p, u, r, 3 * H), hp, bias, ph, at(&p, sg, r, 4 * H),
                      at(&p, hs, r, H)));
  }
  TRY(scatter(&p, H, hidden, hs));
  TRY(scatter(&p, 4 * H, gate, sg));
out:
  release_all(&p, 4, b);
  return st;
}

/* From the last step back: dh (its own plus what step k + 1 carried back) gives the gradients
 * of x's row (r, z, n pre-activations) and of h_k-1 W + b; h_k-1 gets dh z plus those times
 * W^T. dw is the sum of h_k-1^T dP_k, db the column sums of dP. */
pd_status pd_k_gru_seq_grad_steps(const pd_k_steps_env *e, const pd_k_rnn_seq *s, const void *w,
                                  const void *h0, const void *hidden, const void *gate,
                                  const void *dhidden, void *dx, void *dw, void *db, void *dh0) {
  steps p;
  pd_status st = begin(&p, e, s);
  if (st) return st;
  int64_t H = p.H, T = p.total;
  if (H == 0) return PD_OK;
  if (!w || !h0 || !dw || !db || !dh0 || (T && (!hidden || !gate || !dx))) return PD_EINVAL;
  char *b[8]; /* s [T, 4H], hs, prev, dh [T, H], du, dp [T, 3H], the carried dh, wt */
  const int64_t elems[8] = {4 * H * T, H * T, H * T, H * T, 3 * H * T, 3 * H * T, H * s->nseq,
                            3 * H * H};
  if ((st = alloc_all(&p, 8, b, elems))) return st;
  char *sg = b[0], *hs = b[1], *prev = b[2], *dh = b[3], *du = b[4], *dp = b[5];
  char *carry = b[6], *wt = b[7];
  TRY(transposed(&p, H, 3 * H, w, wt));
  TRY(gather(&p, 4 * H, sg, gate));
  TRY(gather(&p, H, hs, hidden));
  TRY(gather(&p, H, dh, dhidden));
  TRY(prev_rows(&p, h0, hs, prev));
  for (int64_t k = s->steps - 1; k >= 0; k--) {
    int64_t n = running(&p, k), m = k + 1 < s->steps ? running(&p, k + 1) : 0, r = s->koff[k];
    char *dhk = at(&p, dh, r, H), *dpk = at(&p, dp, r, 3 * H);
    TRY(add_to(&p, m * H, dhk, carry));
    TRY(p.k->gru_cell_grad(p.dt, n, H, at(&p, sg, r, 4 * H), at(&p, prev, r, H), dhk,
                           at(&p, du, r, 3 * H), dpk));
    TRY(p.e->copy(carry, dhk, (size_t)(n * H) * p.es));
    TRY(gemm(&p, false, false, n, H, 3 * H, dpk, wt, 1.0, carry));
  }
  TRY(state_grad(&p, carry, dh0));
  if (T) {
    TRY(scatter(&p, 3 * H, dx, du));
    TRY(gemm(&p, true, false, H, 3 * H, T, prev, dp, 0.0, dw));
    int64_t dims[2] = {T, 3 * H};
    int axis = 0;
    TRY(p.k->reduce(PD_K_RSUM, p.dt, 2, dims, dp, 1, &axis, db));
  } else {
    TRY(p.k->fill(p.dt, 3 * H * H, dw, 0.0));
    TRY(p.k->fill(p.dt, 3 * H, db, 0.0));
  }
out:
  release_all(&p, 8, b);
  return st;
}
