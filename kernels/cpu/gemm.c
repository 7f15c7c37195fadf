/* gemm.c -- matrix products through OpenBLAS's cblas_sgemm/cblas_dgemm (row-major), or for
 * fp32 on AVX-512 CPUs the layer-sized ones through gemm_avx512.c's: single, strided-batched,
 * followed by an activation (gemm_act, and a recurrence of those: gemm_act_chain), onto a
 * bias (gemm_bias), and with a B prepared once (gemm_const_b). A large product is split across
 * the kernels' thread pool (pool.c), each part a one-thread call. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>

/* C = beta * C, for a product with an empty inner dimension (k == 0), which BLAS libraries
 * treat unevenly, or alpha 0; beta == 0 clears C without reading it. */
static void scale_rows(pd_dtype dt, int64_t m, int64_t n, double beta, void *c, int64_t ldc) {
  size_t sz = pd_dtype_size(dt);
  for (int64_t i = 0; i < m; i++) {
    char *row = (char *)c + i * ldc * (int64_t)sz;
    if (beta == 0) {
      memset(row, 0, (size_t)n * sz);
    } else if (dt == PD_FP32) {
      for (int64_t j = 0; j < n; j++) ((float *)row)[j] *= (float)beta;
    } else {
      for (int64_t j = 0; j < n; j++) ((double *)row)[j] *= beta;
    }
  }
}

/* gemm_avx512.c's product takes the fp32 products on AVX-512 CPUs, those whose op(A) is past
 * L2 in blocks of it. With B transposed it copies B^T first, which pays only over enough rows:
 * a LeNet filter gradient ([6, 784] by [784, 25]^T a sample) took 1122 us a step with the copy
 * against 457 through OpenBLAS. The products of an fc layer of 1600 rows, 32 inputs and 256
 * outputs on two threads (forward, dInput, dW): 138, 147 and 155 us through OpenBLAS's AVX2
 * kernels, 89, 77 and 106 us here (bench_kernels has them). OpenBLAS took the large ones until
 * a Sapphire Rapids VM (its CPU model hidden) made Debian's OpenBLAS 0.3.21 choose its SSE3
 * kernels: ResNet50-vd at batch 1 ran 85 ms, 48 on its AVX-512 kernels, 49 here. */
#define GEMM16_MAX_A ((int64_t)1 << 18) /* AVX2: m * k, floats */
#define GEMM16_MAX_K 4096
#define GEMM16_MIN_M_TB 48

static bool use_gemm16(pd_dtype dt, bool trans_b, int64_t m) {
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  return dt == PD_FP32 && (!trans_b || m >= GEMM16_MIN_M_TB) &&
         pd_kcpu_simd() == PD_KCPU_SIMD_AVX512;
#else
  (void)dt, (void)trans_b, (void)m;
  return false;
#endif
}

/* On AVX2 CPUs the same layer-sized fp32 products without transposes, alpha 1 and beta 0 (or
 * onto gemm_bias's bias) go through gemm_avx2.c's product, whose tiles also multiply
 * gemm_const_b's panels: an fc layer fused at load (exec) then gives the bits of the same
 * model's mul and elementwise_add (predict), as gemm16 gives them on AVX-512. With B
 * transposed over as many rows as gemm16 takes them, B^T's rows are copied into the panels:
 * through OpenBLAS the rnn op's input projections (x W_ih^T, [80, 288] by [192, 288]^T) and
 * ERNIE's attention scores (Q K^T a head) paid its copies and calls on small products. */
static bool use_gemm8(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t k,
                      double alpha, double beta, bool bias) {
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  return dt == PD_FP32 && !trans_a && (!trans_b || m >= GEMM16_MIN_M_TB) && alpha == 1.0 &&
         (beta == 0.0 || bias) && k <= GEMM16_MAX_K && m * k <= GEMM16_MAX_A &&
         pd_kcpu_simd() == PD_KCPU_SIMD_AVX2;
#else
  (void)dt, (void)trans_a, (void)trans_b, (void)m, (void)k, (void)alpha, (void)beta, (void)bias;
  return false;
#endif
}

/* gemm_bias's bias (kernels.h) added to C's rows after the product (beta 0). Copied into C
 * first for OpenBLAS to accumulate onto (beta 1), a row's sums differed in the last bit from the
 * product plus the bias (a Zen CPU's kernel rounds the two differently: 890 of 1000 random
 * [1, 768] x [768, 3] products), so a model whose fc was fused at load (exec) gave other bits
 * than the same model's mul and elementwise_add (predict). gemm_avx512.c's product adds the
 * bias to the finished sums as it stores C, as here. */
static void add_bias_rows(pd_dtype dt, const char *bias, int64_t m, int64_t n, char *c,
                          int64_t ldc) {
  for (int64_t i = 0; i < m; i++) {
    if (dt == PD_FP32) {
      float *r = (float *)c + i * ldc;
      const float *b = (const float *)bias;
      PD_SIMD for (int64_t j = 0; j < n; j++) r[j] += b[j];
    } else {
      double *r = (double *)c + i * ldc;
      const double *b = (const double *)bias;
      PD_SIMD for (int64_t j = 0; j < n; j++) r[j] += b[j];
    }
  }
}

/* cpu.h */
pd_status pd_kcpu_gemm_one(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                           int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                           int64_t ldb, double beta, void *c, int64_t ldc, const void *bias) {
  if (m == 0 || n == 0) return PD_OK;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (k > 0 && alpha != 0 && use_gemm16(dt, trans_b, m) &&
      pd_kcpu_gemm16_f32(trans_a, trans_b, m, n, k, (float)alpha, a, lda, b, ldb,
                         bias ? 0.0f : (float)beta, bias, c, ldc))
    return PD_OK;
  if (k > 0 && use_gemm8(dt, trans_a, trans_b, m, k, alpha, beta, bias != NULL)) {
    pd_kcpu_epi16 e = {.cbias = bias, .act = PD_KCPU_EPI_NONE};
    if ((trans_b ? pd_kcpu_gemm8t_epi_f32 : pd_kcpu_gemm8_epi_f32)(m, n, k, a, lda, b, ldb, c, ldc,
                                                                  bias ? &e : NULL))
      return PD_OK;
  }
#endif
  if (bias) beta = 0;
  enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  if (k == 0 || alpha == 0) { /* as BLAS does: A and B are not read (a NaN there stays out) */
    scale_rows(dt, m, n, beta, c, ldc);
  } else if (dt == PD_FP32) {
    cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, (float)alpha, a, (int)lda, b,
                (int)ldb, (float)beta, c, (int)ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
                (int)ldb, beta, c, (int)ldc);
  }
  if (bias) add_bias_rows(dt, bias, m, n, c, ldc);
  return PD_OK;
}

/* ---- gemm_act's activation (kernels.h), applied to a block of C right after the product
 * that wrote it: C = act(C), or C *= act'(H). One call over the block when its rows are
 * contiguous (in C and H), else one a row. act and dt were checked, so the calls cannot fail. */
typedef struct epilogue {
  pd_k_unop act;
  bool grad;
  const char *h;
  int64_t ldh;
} epilogue;

static void act_block(const epilogue *ep, pd_dtype dt, int64_t r0, int64_t r1, int64_t c0,
                      int64_t c1, char *c, int64_t ldc) {
  int64_t sz = (int64_t)pd_dtype_size(dt), n = c1 - c0;
  bool whole = ldc == n && (!ep->grad || ep->ldh == n);
  for (int64_t i = r0; i < r1; i += whole ? r1 - r0 : 1) {
    int64_t cnt = whole ? (r1 - r0) * n : n;
    char *ci = c + (i * ldc + c0) * sz;
    if (ep->grad)
      (void)pd_kcpu_unary_grad(ep->act, dt, cnt, NULL, ep->h + (i * ep->ldh + c0) * sz, ci, ci);
    else
      (void)pd_kcpu_unary(ep->act, dt, cnt, ci, ci);
  }
}

/* ---- Splitting one product across the thread pool (pool.c): each part
 * computes a block of C's columns (or rows, when C is tall) with a one-thread BLAS call. The
 * blocks are multiples of SPLIT_ALIGN so that each thread's part keeps whole register tiles.
 * The split is a function of the sizes and the number of threads, so results are reproducible
 * for a given thread count; they may differ in the last bits between thread counts (with
 * OpenBLAS's Haswell kernels a block's edge tiles round differently), as they did when
 * OpenBLAS split the product on its own pool. ---- */
#define SPLIT_MIN_WORK ((int64_t)1 << 20)  /* m * n * k below this: one thread */
#define SPLIT_ALIGN 16

typedef struct split_job {
  pd_dtype dt;
  bool ta, tb, by_cols;
  int64_t m, n, k, lda, ldb, ldc;
  double alpha, beta;
  const char *a, *b;
  char *c;
  const epilogue *ep;  /* gemm_act's, or NULL */
  const char *bias;    /* gemm_bias's (beta is then ignored), or NULL */
} split_job;

/* [*b, *e) of `total` for thread t of nt, in multiples of SPLIT_ALIGN. */
static void split_range(int64_t total, int t, int nt, int64_t *b, int64_t *e) {
  int64_t blocks = (total + SPLIT_ALIGN - 1) / SPLIT_ALIGN;
  int64_t bb = blocks * t / nt, be = blocks * (t + 1) / nt;
  *b = bb * SPLIT_ALIGN < total ? bb * SPLIT_ALIGN : total;
  *e = be * SPLIT_ALIGN < total ? be * SPLIT_ALIGN : total;
}

static void split_part(void *vjob, int t, int nt) {
  const split_job *j = vjob;
  int64_t sz = (int64_t)pd_dtype_size(j->dt), lo, hi;
  if (j->by_cols) {  /* C[:, lo:hi] = op(A) op(B)[:, lo:hi] */
    split_range(j->n, t, nt, &lo, &hi);
    if (lo >= hi) return;
    pd_kcpu_gemm_one(j->dt, j->ta, j->tb, j->m, hi - lo, j->k, j->alpha, j->a, j->lda,
                     j->b + (j->tb ? lo * j->ldb : lo) * sz, j->ldb, j->beta, j->c + lo * sz,
                     j->ldc, j->bias ? j->bias + lo * sz : NULL);
    if (j->ep) act_block(j->ep, j->dt, 0, j->m, lo, hi, j->c, j->ldc);
  } else {  /* C[lo:hi, :] = op(A)[lo:hi, :] op(B) */
    split_range(j->m, t, nt, &lo, &hi);
    if (lo >= hi) return;
    pd_kcpu_gemm_one(j->dt, j->ta, j->tb, hi - lo, j->n, j->k, j->alpha,
                     j->a + (j->ta ? lo : lo * j->lda) * sz, j->lda, j->b, j->ldb, j->beta,
                     j->c + lo * j->ldc * sz, j->ldc, j->bias);
    if (j->ep) act_block(j->ep, j->dt, lo, hi, 0, j->n, j->c, j->ldc);
  }
}

/* ---- Splitting the inner dimension: a product with a small C and a long K (a weight's
 * gradient, X^T dOut: [in, rows] by [rows, out]) is cut along K, each part multiplying its own
 * run of K into a C of its own, and the parts are added in order. Cutting C instead would make
 * every thread read every row of both operands; cut along K, thread t reads the rows that the
 * kernels before it wrote on the same thread (they split rows the same way: pool.c's
 * pd_kcpu_parallel), still in its core's cache (on [1600, 32]^T by [1600, 256] right after the
 * softmax gradient, on two threads: 204 us with C cut, 169 us with K cut). ---- */
#define KSPLIT_RATIO 4  /* K at least this many times C's larger side */

typedef struct ksplit_job {
  pd_dtype dt;
  bool ta, tb;
  int64_t m, n, k, lda, ldb;
  double alpha;
  const char *a, *b;
  char *part;  /* nt products of m * n, packed */
} ksplit_job;

static void ksplit_part(void *vjob, int t, int nt) {
  const ksplit_job *j = vjob;
  int64_t sz = (int64_t)pd_dtype_size(j->dt), lo, hi;
  char *c = j->part + (int64_t)t * j->m * j->n * sz;
  split_range(j->k, t, nt, &lo, &hi);
  pd_kcpu_gemm_one(j->dt, j->ta, j->tb, j->m, j->n, hi - lo, j->alpha,
                   j->a + (j->ta ? lo * j->lda : lo) * sz, j->lda,
                   j->b + (j->tb ? lo : lo * j->ldb) * sz, j->ldb, 0.0, c, j->n, NULL);
}

/* C = beta C + the sum of the nt parts, in part order (in double, then rounded once). */
static void ksplit_sum(pd_dtype dt, int nt, int64_t m, int64_t n, const char *part, double beta,
                       char *c, int64_t ldc) {
  bool f32 = dt == PD_FP32;
  for (int64_t i = 0; i < m; i++)
    for (int64_t q = 0; q < n; q++) {
      int64_t at = i * ldc + q;
      double v = beta == 0 ? 0 : beta * (f32 ? ((float *)c)[at] : ((double *)c)[at]);
      for (int t = 0; t < nt; t++) {
        int64_t p = ((int64_t)t * m + i) * n + q;
        v += f32 ? ((const float *)part)[p] : ((const double *)part)[p];
      }
      if (f32) ((float *)c)[at] = (float)v;
      else ((double *)c)[at] = v;
    }
}

/* false: no memory for the parts (the caller splits C instead). */
static bool gemm_ksplit(int nt, pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                        int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                        int64_t ldb, double beta, void *c, int64_t ldc) {
  char *part = pd_k_host_alloc((size_t)nt * (size_t)(m * n) * pd_dtype_size(dt));
  if (!part) return false;
  ksplit_job j = {dt, trans_a, trans_b, m, n, k, lda, ldb, alpha, a, b, part};
  pd_kcpu_team(nt, ksplit_part, &j);
  ksplit_sum(dt, nt, m, n, part, beta, c, ldc);
  pd_k_host_free(part);
  return true;
}

/* A checked product, with gemm_act's activation when ep, and gemm_bias's bias rows under it
 * when bias (beta must then be 1: the product accumulates onto the bias). */
static pd_status gemm_run(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                          int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                          int64_t ldb, double beta, void *c, int64_t ldc, const epilogue *ep,
                          const void *bias) {
  int nt = pd_kcpu_blas_team();
  if (nt > 1 && k > 0 && m * n >= SPLIT_MIN_WORK / k) {
    int64_t kblocks = (k + SPLIT_ALIGN - 1) / SPLIT_ALIGN;
    if (!ep && !bias && k >= KSPLIT_RATIO * (m > n ? m : n) && kblocks >= nt &&
        gemm_ksplit(nt, dt, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
      return PD_OK;
    split_job j = {dt, trans_a, trans_b, n >= m, m, n, k, lda, ldb, ldc, alpha, beta, a, b, c,
                   ep, bias};
    int64_t blocks = ((j.by_cols ? n : m) + SPLIT_ALIGN - 1) / SPLIT_ALIGN;
    if (nt > blocks) nt = (int)blocks;
    if (nt > 1) {
      pd_kcpu_team(nt, split_part, &j);
      return PD_OK;
    }
  }
  pd_kcpu_gemm_one(dt, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
  if (ep) act_block(ep, dt, 0, m, 0, n, c, ldc);
  return PD_OK;
}

pd_status pd_kcpu_gemm(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                       double alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                       double beta, void *c, int64_t ldc) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  pd_status st = pd_k_gemm_check(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (st) return st;
  return gemm_run(dt, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL, NULL);
}

pd_status pd_kcpu_gemm_act(pd_k_unop act, bool grad, pd_dtype dt, bool trans_a, bool trans_b,
                           int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                           const void *b, int64_t ldb, double beta, void *c, int64_t ldc,
                           const void *h, int64_t ldh) {
  pd_status st = pd_k_gemm_act_check(act, grad, dt, trans_a, trans_b, m, n, k, lda, ldb, ldc, h,
                                     ldh);
  if (st) return st;
  epilogue ep = {act, grad, h, ldh};
  return gemm_run(dt, trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc, &ep, NULL);
}

/* ---- gemm_act_chain: the rows split across the pool once, each part running every step on
 * its rows: the product (a one-thread BLAS call, or gemm_avx512.c's small product for fp32 up
 * to 64 columns on AVX-512 CPUs), then the activation. ---- */
typedef struct chain_job {
  const epilogue *ep;
  pd_dtype dt;
  bool tb, small;
  int64_t m, n, steps, ldfirst, ldc, step;
  const char *first, *b;
  char *c;
} chain_job;

static void chain_part(void *vjob, int t, int nt) {
  const chain_job *j = vjob;
  int64_t sz = (int64_t)pd_dtype_size(j->dt), lo, hi, n = j->n;
  split_range(j->m, t, nt, &lo, &hi);
  if (lo >= hi) return;
  epilogue ep = *j->ep;
  const char *a = j->first + lo * j->ldfirst * sz;
  int64_t lda = j->ldfirst;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  float bt[PD_KCPU_SMALL16_MAX_N * PD_KCPU_SMALL16_MAX_N];
  const float *bs = (const float *)j->b;
  if (j->small && j->tb) { /* the small product takes B as it is: transpose it once */
    for (int64_t q = 0; q < n; q++)
      for (int64_t i = 0; i < n; i++) bt[q * n + i] = bs[i * n + q];
    bs = bt;
  }
#endif
  for (int64_t s = 0; s < j->steps; s++) {
    char *c = j->c + (s * j->step + lo * j->ldc) * sz;
    if (ep.grad) ep.h = j->ep->h + (s * j->step + lo * j->ep->ldh) * sz;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
    if (j->small)
      pd_kcpu_gemm_small16_f32(hi - lo, n, n, (const float *)a, lda, bs, n, (float *)c, j->ldc);
    else
#endif
      pd_kcpu_gemm_one(j->dt, false, j->tb, hi - lo, n, n, 1.0, a, lda, j->b, n, 1.0, c, j->ldc,
                       NULL);
    act_block(&ep, j->dt, 0, hi - lo, 0, n, c, j->ldc);
    a = c;
    lda = j->ldc;
  }
}

/* Rows per part at least this: fewer make each step's product mostly call overhead. Through
 * OpenBLAS, a part's product a step must also be at least CHAIN_BLAS_MIN_WORK multiply-adds:
 * two threads making small calls at once queue on OpenBLAS's buffer lock (futex waits). */
#define CHAIN_MIN_ROWS 8
#define CHAIN_BLAS_MIN_WORK ((int64_t)1 << 18)

pd_status pd_kcpu_gemm_act_chain(pd_k_unop act, bool grad, pd_dtype dt, bool trans_b, int64_t m,
                                 int64_t n, int64_t steps, const void *first, int64_t ldfirst,
                                 const void *b, void *c, int64_t ldc, int64_t step, const void *h,
                                 int64_t ldh) {
  pd_status st = pd_k_gemm_act_check(act, grad, dt, false, trans_b, m, n, n, ldfirst, n, ldc, h,
                                     ldh);
  if (st) return st;
  if (steps < 0) return PD_EINVAL;
  if (m == 0 || n == 0 || steps == 0) return PD_OK;
  epilogue ep = {act, grad, h, ldh};
  bool small = false;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  small = dt == PD_FP32 && n <= PD_KCPU_SMALL16_MAX_N && pd_kcpu_simd() == PD_KCPU_SIMD_AVX512;
#endif
  chain_job j = {&ep, dt, trans_b, small, m, n, steps, ldfirst, ldc, step, first, b, c};
  int nt = pd_kcpu_blas_team();
  if (nt > m / CHAIN_MIN_ROWS) nt = (int)(m / CHAIN_MIN_ROWS);
  double step_work = (double)n * (double)n; /* multiply-adds a row a step (no int overflow) */
  bool split = nt > 1 && (double)steps * (double)m * step_work >= (double)SPLIT_MIN_WORK &&
               (small || (double)(m / nt) * step_work >= (double)CHAIN_BLAS_MIN_WORK);
  if (split) pd_kcpu_team(nt, chain_part, &j);
  else chain_part(&j, 0, 1);
  return PD_OK;
}

pd_status pd_kcpu_gemm_bias(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                            int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb,
                            const void *bias, void *c, int64_t ldc) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  pd_status st = pd_k_gemm_check(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (st) return st;
  if (!bias) return PD_EINVAL;
  return gemm_run(dt, trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 1.0, c, ldc, NULL, bias);
}

/* ---- gemm_const_b (kernels.h): B copied once into gemm_avx512.c's panels of 32 columns
 * (pd_kcpu_gemm16_pack_f32), each then read contiguously, where the product read rows of B
 * n floats apart (6 KB for an fc of 1536 outputs: a page and a TLB entry a row). The threads
 * split the panels; each takes C's rows in blocks of CONST_B_ROWS, so that its partial sums stay
 * on the stack and a block of A in L2 while it passes over its panels. On AVX2 CPUs the same
 * with gemm_avx2.c's panels of 16 columns (pd_kcpu_gemm8_pack_f32), the bias added as C is
 * stored: through OpenBLAS (a copy of A's block for every call, then a pass adding the bias)
 * ERNIE 3.0 tiny's fc layers ran at ~58 GFLOP/s on a Zen 3 core. ---- */
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#define CONST_B_ROWS 128

typedef struct panels {
  pd_k_prepared base;
  int level;   /* pd_kcpu_simd's level the panels are made for: AVX-512's or AVX2's */
  float *pack; /* the packed B, after the header */
} panels;

/* Floats of B's panels at SIMD level `level`. */
static int64_t panels_size(int level, int64_t k, int64_t n) {
  return level == PD_KCPU_SIMD_AVX512 ? pd_kcpu_gemm16_packed_size(k, n)
                                      : (n + PD_KCPU_GEMM8_NR - 1) / PD_KCPU_GEMM8_NR *
                                            PD_KCPU_GEMM8_NR * k;
}

#define PANELS_HEADER (((sizeof(panels) + PD_K_ALIGN - 1) / PD_K_ALIGN) * PD_K_ALIGN)

static void panels_release(pd_k_prepared *p) { pd_k_host_free(p); }

/* B's panels for this product, made (or made again) in *prep; NULL when gemm16's product
 * does not take it or there is no memory (the caller then computes from B itself). */
static const panels *prepared_panels(pd_dtype dt, int64_t n, int64_t k, const void *b,
                                     pd_k_prepared **prep) {
  int level = pd_kcpu_simd();
  if (dt != PD_FP32 || (level == PD_KCPU_SIMD_AVX2 && k > GEMM16_MAX_K) ||
      (level != PD_KCPU_SIMD_AVX512 && level != PD_KCPU_SIMD_AVX2))
    return NULL;
  panels *p = (panels *)*prep;
  if (p && p->base.release == panels_release && p->base.dt == dt && p->base.rows == k &&
      p->base.cols == n && p->level == level)
    return p;
  if (*prep) (*prep)->release(*prep);
  *prep = NULL;
  size_t bytes = (size_t)panels_size(level, k, n) * sizeof(float);
  char *mem = pd_k_host_alloc(PANELS_HEADER + bytes);
  if (!mem) return NULL;
  p = (panels *)mem;
  p->base = (pd_k_prepared){panels_release, dt, k, n};
  p->level = level;
  p->pack = (float *)(mem + PANELS_HEADER);
  if (level == PD_KCPU_SIMD_AVX512) pd_kcpu_gemm16_pack_f32(k, n, b, n, p->pack);
  else pd_kcpu_gemm8_pack_f32(k, n, b, n, p->pack);
  *prep = &p->base;
  return p;
}

typedef struct const_b_job {
  int64_t m, n, k;
  int nr; /* the panels' columns */
  const float *a, *pack, *bias;
  float *c;
} const_b_job;

static void const_b_part(void *vjob, int t, int nt) {
  const const_b_job *j = vjob;
  int64_t np = (j->n + j->nr - 1) / j->nr;
  int64_t c0 = np * t / nt * j->nr, c1 = np * (t + 1) / nt * j->nr;
  if (c1 > j->n) c1 = j->n;
  if (c0 >= c1) return;
  pd_kcpu_epi16 epi = {.cbias = j->bias ? j->bias + c0 : NULL, .act = PD_KCPU_EPI_NONE};
  if (j->nr == PD_KCPU_GEMM8_NR) {
    pd_kcpu_gemm8p_rows_epi_f32(j->m, c1 - c0, j->k, j->a, j->k, j->pack + c0 * j->k,
                                j->c + c0, j->n, j->bias ? &epi : NULL);
    return;
  }
  for (int64_t i = 0; i < j->m; i += CONST_B_ROWS) {
    int64_t rows = j->m - i < CONST_B_ROWS ? j->m - i : CONST_B_ROWS;
    /* With at most CONST_B_ROWS rows the partial sums are on the stack: it cannot fail. */
    (void)pd_kcpu_gemm16p_epi_f32(false, rows, c1 - c0, j->k, j->a + i * j->k, j->k,
                                  j->pack + c0 * j->k, 0.0f, j->c + i * j->n + c0, j->n,
                                  j->bias ? &epi : NULL);
  }
}
#endif

pd_status pd_kcpu_gemm_const_b(pd_dtype dt, int64_t m, int64_t n, int64_t k, const void *a,
                               const void *b, const void *bias, void *c, pd_k_prepared **prep) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  int64_t lda = k > 1 ? k : 1;
  pd_status st = pd_k_gemm_check(false, false, m, n, k, lda, n, n);
  if (st) return st;
  if (!prep) return PD_EINVAL;
  if (m == 0 || n == 0) return PD_OK;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  const panels *p = k > 0 ? prepared_panels(dt, n, k, b, prep) : NULL;
  if (p) {
    int nr = p->level == PD_KCPU_SIMD_AVX512 ? PD_KCPU_GEMM16_NR : PD_KCPU_GEMM8_NR;
    const_b_job j = {m, n, k, nr, a, p->pack, bias, c};
    int nt = pd_kcpu_blas_team();
    int64_t np = (n + nr - 1) / nr;
    if (nt > np) nt = (int)np;
    if (nt > 1 && m * n >= SPLIT_MIN_WORK / k) pd_kcpu_team(nt, const_b_part, &j);
    else const_b_part(&j, 0, 1);
    return PD_OK;
  }
#endif
  return gemm_run(dt, false, false, m, n, k, 1.0, a, lda, b, n, bias ? 1.0 : 0.0, c, n, NULL,
                  bias);
}

/* ---- gemm_batched: the products dealt to the pool's threads in contiguous runs, each made
 * on one thread as pd_kcpu_gemm_one makes it (so the bits do not depend on the thread count): an
 * attention layer's heads (ERNIE 3.0 tiny's 12 products of [128, 32] by [32, 128] a layer) ran
 * on the calling thread alone, 11% of the model's time on two threads. ---- */
typedef struct batched_job {
  pd_dtype dt;
  bool ta, tb;
  int64_t m, n, k, lda, sa, ldb, sb, ldc, sc;
  double alpha, beta;
  const char *a, *b;
  char *c;
} batched_job;

static void batched_range(void *vjob, int64_t i0, int64_t i1) {
  const batched_job *j = vjob;
  int64_t sz = (int64_t)pd_dtype_size(j->dt);
  for (int64_t i = i0; i < i1; i++)
    pd_kcpu_gemm_one(j->dt, j->ta, j->tb, j->m, j->n, j->k, j->alpha, j->a + i * j->sa * sz,
                     j->lda, j->b + i * j->sb * sz, j->ldb, j->beta, j->c + i * j->sc * sz, j->ldc,
                     NULL);
}

pd_status pd_kcpu_gemm_batched(pd_dtype dt, bool trans_a, bool trans_b, int64_t batch,
                               int64_t m, int64_t n, int64_t k, double alpha, const void *a,
                               int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
                               int64_t stride_b, double beta, void *c, int64_t ldc,
                               int64_t stride_c) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  pd_status st = pd_k_gemm_check(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (st) return st;
  if (batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0) return PD_EINVAL;
  batched_job j = {.dt = dt, .ta = trans_a, .tb = trans_b, .m = m, .n = n, .k = k,
                   .lda = lda, .sa = stride_a, .ldb = ldb, .sb = stride_b, .ldc = ldc,
                   .sc = stride_c, .alpha = alpha, .beta = beta, .a = a, .b = b, .c = c};
  int64_t work = m * n * k, grain = work > 0 && work < SPLIT_MIN_WORK ? SPLIT_MIN_WORK / work : 1;
  pd_kcpu_parallel(batch, grain, batched_range, &j);
  return PD_OK;
}
