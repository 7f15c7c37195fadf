/* rnn_seq.c -- the CPU backend's whole-sequence fused LSTM and GRU (kernels.h: lstm_seq,
 * gru_seq and their gradients), for vm/ops/rnn_fused.c.
 *
 * Each step is one job of the pool (pool.c) whose parts split the hidden units: part t owns
 * units lo .. hi - 1 and, for them, multiplies h_k-1 by its gate columns of the weights (which
 * it alone reads, so that on two cores each keeps half of W in its own cache), applies the gate
 * math, and writes its columns of the outputs. The step after needs all of h, so the parts
 * meet at the end of each step: one fork-join a step, as before, but the gate math is split
 * too (one thread did it while the other spun: 17% of an LSTM training step's perf samples on
 * two threads, 0.1% after), the rows are read from and written to the batch-major tensors
 * directly (no time-major copies of Input and the outputs), and the backward pass adds each step's share of the weights' gradient, h_k-1^T dg_k,
 * while that step's gate gradients are still in cache, instead of one product over all steps at
 * the end. The parts never depend on which thread runs them (pool.c may run them all on the
 * caller), only on one another's results of the step before. bench_gated.sh's LSTM (hidden
 * 256, length 50, batch 32), --profile on a quiet machine: fused_lstm 9.3 -> 6.2 ms a step, its
 * gradient 18.6 -> 11.7 ms. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <string.h>

enum {
  SEQ_ALIGN = 16,      /* units a part owns: a multiple of this (whole vectors of a gate) */
  SEQ_MAX_PARTS = 64,
  SEQ_PAD = 16,        /* elements added to the row stride of dg and dwp, so that rows are
                        * not 4 KB apart (an LSTM of hidden 256) and in the same L1 sets; as
                        * for the packed weights (fastmath.h), no difference measured here */
};
/* Multiply-adds of a step below which one part does all: the fork-join would cost more. */
#define SEQ_MIN_STEP_WORK ((int64_t)1 << 16)
/* The weights are packed for gemm_avx512.c while the product's A (rows by K) is at most this
 * many floats (where gemm_avx512.c takes A whole, not in blocks), and K at most
 * SEQ_PACK_MAX_K. */
#define SEQ_PACK_MAX_A ((int64_t)1 << 18)
#define SEQ_PACK_MAX_K 4096

typedef struct seq_job {
  const pd_k_rnn_seq *s;
  int gates;                        /* 4 (LSTM), 3 (GRU): w's gate blocks */
  int nparts;
  int64_t cut[SEQ_MAX_PARTS + 1];   /* part t's units: cut[t] .. cut[t + 1] - 1 */
  int64_t k;                        /* the step (forward) or the iteration (backward) */
  const void *x, *b, *h0, *c0;      /* inputs of the forward */
  const void *hidden_in, *cell_in, *gate_in, *dhidden, *dcell; /* of the backward */
  const void *w;                    /* the weights as given */
  const void *wp;                   /* unpacked: w permuted (forward), or that transposed */
  float *pk;                        /* packed: part t's weights at pk + pk_off[t] */
  int nr;                           /* their panels' columns: gemm_avx512.c's or gemm_avx2.c's */
  int64_t pk_off[SEQ_MAX_PARTS + 1];
  int64_t *from;                    /* packing the backward's: permuted column -> w's column */
  void *hidden, *cell, *gate, *dx;  /* outputs */
  void *dwp;                        /* w's gradient, permuted, row stride ldw */
  int64_t ldw, ldg;
  double *db;                       /* GRU: b's gradient, permuted */
  void *hbuf[2];                    /* forward: h of steps k - 1 and k, [nseq, H] */
  void *dg[2];                      /* backward: the gate gradients of steps k and k - 1 */
  void *carry_h, *carry_c;          /* backward: what step k carries back, [nseq, H] */
  char *scratch;                    /* each part's own: part_bytes each */
  size_t part_bytes;
  pd_status st[SEQ_MAX_PARTS];
} seq_job;

/* C [m, n] = A [m, k] (row stride lda) times part t's weights + beta C: the packed ones when
 * there are, else b (row stride ldb), the part's columns of wp. */
static pd_status seq_gemm_w(const seq_job *j, int t, int64_t m, int64_t n, int64_t k,
                            const void *a, int64_t lda, const void *b, int64_t ldb, double beta,
                            void *c, int64_t ldc) {
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (j->pk) {
    if (m == 0 || n == 0) return PD_OK;
    if (j->nr == PD_KCPU_GEMM8_NR) { /* AVX2: C = A B, or A B + C (C as the residual) */
      pd_kcpu_epi16 e = {.res = c, .ldres = ldc, .act = PD_KCPU_EPI_NONE};
      pd_kcpu_gemm8p_epi_f32(m, n, k, a, lda, j->pk + j->pk_off[t], c, ldc,
                             beta != 0.0 ? &e : NULL);
      return PD_OK;
    }
    return pd_kcpu_gemm16p_f32(false, m, n, k, a, lda, j->pk + j->pk_off[t], (float)beta, c,
                               ldc)
               ? PD_OK
               : PD_ENOMEM;
  }
#endif
  pd_dtype lp = pd_k_rnn_seq_lp(j->s);
  if (lp)
    return pd_kcpu_gemm_lp(lp, false, false, 1, m, n, k, 1.0, a, lda, 0, b, ldb, 0, beta, c, ldc,
                           0, NULL);
  return pd_kcpu_gemm(j->s->dt, false, false, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

/* The weights' gradient: C [m, n] += A^T B (A [k, m], B [k, n]), in the recurrence's precision. */
static pd_status seq_gemm_dw(const seq_job *j, int64_t m, int64_t n, int64_t k, const void *a,
                             int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc) {
  pd_dtype lp = pd_k_rnn_seq_lp(j->s);
  if (lp)
    return pd_kcpu_gemm_lp(lp, true, false, 1, m, n, k, 1.0, a, lda, 0, b, ldb, 0, 1.0, c, ldc,
                           0, NULL);
  return pd_kcpu_gemm(j->s->dt, true, false, m, n, k, 1.0, a, lda, b, ldb, 1.0, c, ldc);
}

#define PD_KCPU_TEMPLATE "kernels/cpu/rnn_seq_t.h"
#include "kernels/cpu/each_float.h"

/* The parts and their units: as many as the pool has threads when a step is worth splitting,
 * each owning a multiple of SEQ_ALIGN units (the last one the rest). */
static void seq_setup(seq_job *j, const pd_k_rnn_seq *s, int gates) {
  memset(j, 0, sizeof *j);
  j->s = s;
  j->gates = gates;
  int64_t H = s->hid, blocks = (H + SEQ_ALIGN - 1) / SEQ_ALIGN;
  int64_t rows = s->steps ? s->koff[1] : 0;
  int np = pd_kcpu_blas_team();
  if (np > SEQ_MAX_PARTS) np = SEQ_MAX_PARTS;
  if (np > blocks) np = (int)blocks;
  if (np < 1 || rows * H * gates * H < SEQ_MIN_STEP_WORK) np = 1;
  j->nparts = np;
  for (int t = 0; t <= np; t++) {
    int64_t c = SEQ_ALIGN * (blocks * t / np);
    j->cut[t] = c < H ? c : H;
  }
  j->cut[np] = H;
}

static int64_t seq_widest(const seq_job *j) {
  int64_t w = 0;
  for (int t = 0; t < j->nparts; t++)
    if (j->cut[t + 1] - j->cut[t] > w) w = j->cut[t + 1] - j->cut[t];
  return w;
}

/* Each part's scratch of `bytes` (rounded to a cache line, so parts do not share lines). */
static bool seq_scratch(seq_job *j, size_t bytes) {
  j->part_bytes = (bytes + 63) / 64 * 64 + 64;
  j->scratch = pd_k_host_alloc(j->part_bytes * (size_t)j->nparts);
  return j->scratch != NULL;
}

typedef pd_status part_fn(seq_job *j, int t);

typedef struct seq_run {
  seq_job *j;
  part_fn *fn;
} seq_run;

static void seq_part(void *vr, int t, int nt) {
  (void)nt;
  const seq_run *r = vr;
  r->j->st[t] = r->fn(r->j, t);
}

/* One step (or iteration) k on every part; the first part's error, if any. */
static pd_status seq_step(seq_job *j, part_fn *fn, int64_t k) {
  j->k = k;
  seq_run r = {j, fn};
  pd_kcpu_team(j->nparts, seq_part, &r);
  for (int t = 0; t < j->nparts; t++)
    if (j->st[t]) return j->st[t];
  return PD_OK;
}

static size_t es_of(const pd_k_rnn_seq *s) { return pd_dtype_size(s->dt); }

/* Every buffer in bufs[0 .. n) allocated (at least 1 byte each), or none. */
static bool seq_alloc(int n, void **bufs, const size_t *bytes) {
  bool ok = true;
  for (int i = 0; i < n; i++) ok = (bufs[i] = pd_k_host_alloc(bytes[i] + 1)) != NULL && ok;
  if (!ok)
    for (int i = 0; i < n; i++) {
      pd_k_host_free(bufs[i]);
      bufs[i] = NULL;
    }
  return ok;
}

static void seq_free(seq_job *j, int n, void **bufs) {
  for (int i = 0; i < n; i++) pd_k_host_free(bufs[i]);
  pd_k_host_free(j->scratch);
  pd_k_host_free(j->pk);
  pd_k_host_free(j->from);
  j->scratch = NULL, j->pk = NULL, j->from = NULL;
}

static void permute(const seq_job *j, const void *w, void *wp, bool trans) {
  if (j->s->dt == PD_FP32) seq_permute_f32(j, w, wp, trans);
  else seq_permute_f64(j, w, wp, trans);
}

/* ---- Packed weights (fp32 on AVX-512 and AVX2 CPUs, in the panels of gemm_avx512.c's or
 * gemm_avx2.c's products: panel after panel, K rows of nr columns each): each part packs its own
 * block, on its own thread while the pool's workers are awake, in the first job of the call.
 * On AVX2 CPUs each step's product went through OpenBLAS, which packed the weights again at every
 * step: CRNN's bidirectional LSTM (hidden 48, 80 steps, batch 1) spent 2-4 us a step. */

/* Whether the products take packed weights: K the product's inner size. */
static bool seq_packs(const seq_job *j, int64_t k) {
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  int level = pd_kcpu_simd();
  return j->s->dt == PD_FP32 && !pd_k_rnn_seq_lp(j->s) &&
         (level == PD_KCPU_SIMD_AVX512 || level == PD_KCPU_SIMD_AVX2) && k <= SEQ_PACK_MAX_K &&
         j->s->nseq * k <= SEQ_PACK_MAX_A;
#else
  (void)j, (void)k;
  return false;
#endif
}

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
/* The forward's: B [H, gates u] = the part's gate columns of w, in wp's order. */
static pd_status pack_fwd(seq_job *j, int t) {
  const int64_t H = j->s->hid, G = j->gates * H, lo = j->cut[t], u = j->cut[t + 1] - lo;
  const int64_t n = j->gates * u, NR = j->nr, panels = (n + NR - 1) / NR;
  const float *w = j->w;
  float *pk = j->pk + j->pk_off[t];
  for (int64_t i = 0; i < H; i++)
    for (int64_t pn = 0; pn < panels; pn++) {
      float *dst = pk + (pn * H + i) * NR;
      for (int64_t c = 0; c < NR; c++) {
        int64_t lc = pn * NR + c;
        dst[c] = lc < n ? w[i * G + lc / u * H + lo + lc % u] : 0.0f;
      }
    }
  return PD_OK;
}

/* The backward's: B [gates H, u] = columns lo .. hi - 1 of wp^T, row p being w's column
 * from[p]. */
static pd_status pack_bwd(seq_job *j, int t) {
  const int64_t H = j->s->hid, G = j->gates * H, lo = j->cut[t], u = j->cut[t + 1] - lo;
  const int64_t NR = j->nr, panels = (u + NR - 1) / NR;
  const float *w = j->w;
  float *pk = j->pk + j->pk_off[t];
  for (int64_t pn = 0; pn < panels; pn++)
    for (int64_t c = 0; c < NR; c++) {
      int64_t x = pn * NR + c;
      float *dst = pk + pn * G * NR + c;
      if (x >= u) {
        for (int64_t p = 0; p < G; p++) dst[p * NR] = 0.0f;
        continue;
      }
      const float *row = w + (lo + x) * G;
      for (int64_t p = 0; p < G; p++) dst[p * NR] = row[j->from[p]];
    }
  return PD_OK;
}
#endif

/* Packed weights for every part (*packed true), or none (false: the caller permutes). */
static pd_status seq_pack(seq_job *j, bool backward, bool *packed) {
  *packed = false;
  const int64_t H = j->s->hid, G = j->gates * H;
  if (!seq_packs(j, backward ? G : H)) return PD_OK;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  j->pk_off[0] = 0;
  bool wide = pd_kcpu_simd() == PD_KCPU_SIMD_AVX512;
  j->nr = wide ? PD_KCPU_GEMM16_NR : PD_KCPU_GEMM8_NR;
  for (int t = 0; t < j->nparts; t++) {
    int64_t u = j->cut[t + 1] - j->cut[t], k = backward ? G : H, n = backward ? u : j->gates * u;
    int64_t sz = wide ? pd_kcpu_gemm16_packed_size(k, n) : (n + j->nr - 1) / j->nr * j->nr * k;
    j->pk_off[t + 1] = j->pk_off[t] + (sz + 15) / 16 * 16; /* parts a cache line apart */
  }
  if (!(j->pk = pd_k_host_alloc((size_t)j->pk_off[j->nparts] * sizeof(float) + 1)))
    return PD_ENOMEM;
  if (backward) {
    if (!(j->from = pd_k_host_alloc((size_t)G * sizeof(int64_t)))) return PD_ENOMEM;
    for (int t = 0; t < j->nparts; t++) {
      int64_t lo = j->cut[t], u = j->cut[t + 1] - lo;
      for (int q = 0; q < j->gates; q++)
        for (int64_t x = 0; x < u; x++) j->from[j->gates * lo + q * u + x] = q * H + lo + x;
    }
  }
  pd_status st = seq_step(j, backward ? pack_bwd : pack_fwd, 0);
  *packed = st == PD_OK;
  return st;
#else
  return PD_OK;
#endif
}

/* The forward of `gates` gate blocks: the weights packed or permuted, the h buffers, then each
 * step. */
static pd_status seq_forward(seq_job *j, const void *w, part_fn *fn, size_t part_elems) {
  const pd_k_rnn_seq *s = j->s;
  size_t es = es_of(s), H = (size_t)s->hid, G = (size_t)j->gates * H, N = (size_t)s->nseq;
  void *bufs[3] = {0};
  size_t bytes[3] = {0, N * H * es, N * H * es};
  bool packed = false;
  j->w = w;
  pd_status st = seq_pack(j, false, &packed);
  if (!packed) bytes[0] = H * G * es;
  if (!st && !seq_alloc(3, bufs, bytes)) st = PD_ENOMEM;
  if (!st && !seq_scratch(j, part_elems * es)) st = PD_ENOMEM;
  if (!st) {
    if (!packed) permute(j, w, bufs[0], false);
    j->wp = bufs[0];
    j->hbuf[0] = bufs[1];
    j->hbuf[1] = bufs[2];
    for (int64_t k = 0; k < s->steps && !st; k++) st = seq_step(j, fn, k);
  }
  seq_free(j, 3, bufs);
  return st;
}

/* The backward: the weights packed or permuted and transposed, the carries, the two
 * gate-gradient buffers and the permuted dw (and db); each iteration from steps down to 0;
 * then dw (db) and the initial states' gradients. */
static pd_status seq_backward(seq_job *j, const void *w, part_fn *fn, void *dw, void *db,
                              void *dh0, void *dc0) {
  const pd_k_rnn_seq *s = j->s;
  size_t es = es_of(s), H = (size_t)s->hid, G = (size_t)j->gates * H, N = (size_t)s->nseq;
  j->ldg = j->ldw = (int64_t)G + SEQ_PAD;
  size_t ld = G + SEQ_PAD;
  void *bufs[7] = {0};
  size_t bytes[7] = {0, N * ld * es, N * ld * es, N * H * es, N * H * es, H * ld * es,
                     G * sizeof(double)};
  bool packed = false;
  j->w = w;
  pd_status st = seq_pack(j, true, &packed);
  if (!packed) bytes[0] = H * G * es;
  if (!st && !seq_alloc(7, bufs, bytes)) st = PD_ENOMEM;
  /* hprev [nseq, H]; tanh(c), dh and dc [u] (the GRU: dh) */
  if (!st && !seq_scratch(j, (N * H + 3 * (size_t)seq_widest(j)) * es)) st = PD_ENOMEM;
  if (st) {
    seq_free(j, 7, bufs);
    return st;
  }
  if (!packed) permute(j, w, bufs[0], true);
  j->wp = bufs[0];
  j->dg[0] = bufs[1];
  j->dg[1] = bufs[2];
  j->carry_h = bufs[3];
  j->carry_c = bufs[4];
  j->dwp = bufs[5];
  j->db = bufs[6];
  memset(bufs[3], 0, N * H * es);
  memset(bufs[4], 0, N * H * es);
  memset(bufs[5], 0, H * ld * es);
  memset(bufs[6], 0, G * sizeof(double));
  for (int64_t it = s->steps; it >= 0 && !st; it--) st = seq_step(j, fn, it);
  if (!st) {
    if (s->dt == PD_FP32) seq_unpermute_f32(j, j->dwp, dw, j->db, db);
    else seq_unpermute_f64(j, j->dwp, dw, j->db, db);
    /* the initial states' gradients: what step 0 carried back, zeros for the sequences of
     * length 0 (not running at step 0) */
    size_t n0 = s->steps ? (size_t)(s->koff[1] - s->koff[0]) : 0;
    void *outs[2] = {dh0, dc0}, *from[2] = {bufs[3], bufs[4]};
    for (int i = 0; i < 2; i++) {
      if (!outs[i]) continue;
      memcpy(outs[i], from[i], n0 * H * es);
      memset((char *)outs[i] + n0 * H * es, 0, (N - n0) * H * es);
    }
  }
  seq_free(j, 7, bufs);
  return st;
}

static pd_status lstm_fwd(seq_job *j, int t) {
  return j->s->dt == PD_FP32 ? lstm_fwd_part_f32(j, t) : lstm_fwd_part_f64(j, t);
}
static pd_status lstm_bwd(seq_job *j, int t) {
  return j->s->dt == PD_FP32 ? lstm_bwd_part_f32(j, t) : lstm_bwd_part_f64(j, t);
}
static pd_status gru_fwd(seq_job *j, int t) {
  return j->s->dt == PD_FP32 ? gru_fwd_part_f32(j, t) : gru_fwd_part_f64(j, t);
}
static pd_status gru_bwd(seq_job *j, int t) {
  return j->s->dt == PD_FP32 ? gru_bwd_part_f32(j, t) : gru_bwd_part_f64(j, t);
}

/* Nothing to compute: no rows or no units (the outputs are empty, or the gradients zeros). */
static bool seq_empty(const pd_k_rnn_seq *s) {
  return s->hid == 0 || s->steps == 0 || s->koff[s->steps] == 0;
}

pd_status pd_kcpu_lstm_seq(const pd_k_rnn_seq *s, const void *x, const void *w, const void *h0,
                           const void *c0, void *hidden, void *cell, void *gate) {
  pd_status st = pd_k_rnn_seq_check(s);
  if (st || seq_empty(s)) return st;
  if (!x || !w || !h0 || !c0 || !hidden || !cell || !gate) return PD_EINVAL;
  seq_job j;
  seq_setup(&j, s, 4);
  j.x = x;
  j.h0 = h0;
  j.c0 = c0;
  j.hidden = hidden;
  j.cell = cell;
  j.gate = gate;
  return seq_forward(&j, w, lstm_fwd, (size_t)(s->nseq * 4 * seq_widest(&j)));
}

pd_status pd_kcpu_lstm_seq_grad(const pd_k_rnn_seq *s, const void *w, const void *h0,
                                const void *c0, const void *hidden, const void *cell,
                                const void *gate, const void *dhidden, const void *dcell,
                                void *dx, void *dw, void *dh0, void *dc0) {
  pd_status st = pd_k_rnn_seq_check(s);
  if (st) return st;
  size_t es = es_of(s), H = (size_t)s->hid, N = (size_t)s->nseq;
  if (seq_empty(s)) {
    if (dw) memset(dw, 0, H * 4 * H * es);
    if (dh0) memset(dh0, 0, N * H * es);
    if (dc0) memset(dc0, 0, N * H * es);
    return PD_OK;
  }
  if (!w || !h0 || !c0 || !hidden || !cell || !gate || !dx || !dw) return PD_EINVAL;
  seq_job j;
  seq_setup(&j, s, 4);
  j.h0 = h0;
  j.c0 = c0;
  j.hidden_in = hidden;
  j.cell_in = cell;
  j.gate_in = gate;
  j.dhidden = dhidden;
  j.dcell = dcell;
  j.dx = dx;
  return seq_backward(&j, w, lstm_bwd, dw, NULL, dh0, dc0);
}

pd_status pd_kcpu_gru_seq(const pd_k_rnn_seq *s, const void *x, const void *w, const void *b,
                          const void *h0, void *hidden, void *gate) {
  pd_status st = pd_k_rnn_seq_check(s);
  if (st || seq_empty(s)) return st;
  if (!x || !w || !b || !h0 || !hidden || !gate) return PD_EINVAL;
  seq_job j;
  seq_setup(&j, s, 3);
  j.x = x;
  j.b = b;
  j.h0 = h0;
  j.hidden = hidden;
  j.gate = gate;
  return seq_forward(&j, w, gru_fwd, (size_t)(s->nseq * 3 * seq_widest(&j)));
}

pd_status pd_kcpu_gru_seq_grad(const pd_k_rnn_seq *s, const void *w, const void *h0,
                               const void *hidden, const void *gate, const void *dhidden,
                               void *dx, void *dw, void *db, void *dh0) {
  pd_status st = pd_k_rnn_seq_check(s);
  if (st) return st;
  size_t es = es_of(s), H = (size_t)s->hid, N = (size_t)s->nseq;
  if (seq_empty(s)) {
    if (dw) memset(dw, 0, H * 3 * H * es);
    if (db) memset(db, 0, 3 * H * es);
    if (dh0) memset(dh0, 0, N * H * es);
    return PD_OK;
  }
  if (!w || !h0 || !hidden || !gate || !dx || !dw || !db) return PD_EINVAL;
  seq_job j;
  seq_setup(&j, s, 3);
  j.h0 = h0;
  j.hidden_in = hidden;
  j.gate_in = gate;
  j.dhidden = dhidden;
  j.dx = dx;
  return seq_backward(&j, w, gru_bwd, dw, db, dh0, NULL);
}
