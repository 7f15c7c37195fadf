/* gemm_lp.c -- the CPU's gemm_lp (kernels.h): fp32 matrices multiplied in bf16 or fp16, the
 * products of mixed-precision training. bf16 on AMX tiles where pd_kcpu_amx_bf16() (gemm_amx.c:
 * op(A) and op(B) packed into bf16 tiles, each thread packing its share, then C's tiles split
 * across the pool); otherwise, and for fp16, copies of A and B rounded to the low precision
 * and back to fp32 (fp16 by AVX-512F's conversions where pd_kcpu_simd has them, fastmath.h),
 * multiplied by the fp32 GEMM (gemm.c): the same roundings of the operands, sums in another
 * order. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/cpu/gemm_amx.h"
#include "kernels/kernels_int.h"

#include <string.h>

/* Products below this many multiply-adds run on one thread. */
#define LP_SPLIT_MIN_WORK ((int64_t)1 << 20)

/* dst (rows x cols, compact) = src (row stride ld) rounded to lp. */
static void round_copy(pd_dtype lp, int64_t rows, int64_t cols, const float *src, int64_t ld,
                       float *dst) {
#if PD_KCPU_HAVE_AVX512
  bool f16c = pd_kcpu_simd() == PD_KCPU_SIMD_AVX512; /* fp16: the vector conversions */
#endif
  for (int64_t i = 0; i < rows; i++) {
    const float *s = src + i * ld;
    float *d = dst + i * cols;
    if (lp == PD_BF16) {
      for (int64_t j = 0; j < cols; j++) d[j] = pd_bf16_round(s[j]);
      continue;
    }
#if PD_KCPU_HAVE_AVX512
    if (f16c) {
      pd_kcpu_round16_f16(s, d, cols);
      continue;
    }
#endif
    for (int64_t j = 0; j < cols; j++) d[j] = pd_fp16_round(s[j]);
  }
}

static void add_bias(int64_t m, int64_t n, const float *bias, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) c[i * ldc + j] += bias[j];
}

/* One product through rounded copies and the fp32 GEMM. */
static pd_status lp_fallback(pd_dtype lp, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                             double alpha, const float *a, int64_t lda, const float *b,
                             int64_t ldb, double beta, float *c, int64_t ldc,
                             const float *bias) {
  pd_status st;
  if (k == 0 || alpha == 0) {
    st = pd_kcpu_gemm(PD_FP32, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    float *ra = pd_k_host_alloc((size_t)(ar * ac + br * bc) * sizeof(float));
    if (!ra) return PD_ENOMEM;
    float *rb = ra + ar * ac;
    round_copy(lp, ar, ac, a, lda, ra);
    round_copy(lp, br, bc, b, ldb, rb);
    st = pd_kcpu_gemm(PD_FP32, ta, tb, m, n, k, alpha, ra, ac, rb, bc, beta, c, ldc);
    pd_k_host_free(ra);
  }
  if (!st && bias) add_bias(m, n, bias, c, ldc);
  return st;
}

#if PD_KCPU_HAVE_AMX
typedef struct amx_job {
  bool ta, tb, by_cols;
  int64_t m, n, k, lda, ldb, mt, nt;
  const float *a, *b;
  uint16_t *pa, *pb;
  pd_kcpu_amx_out out;
} amx_job;

/* [*lo, *hi) of `total` tiles for part t of np, in pairs (the 2 x 2 blocks of gemm_amx.c). */
static void tile_range(int64_t total, int t, int np, int64_t *lo, int64_t *hi) {
  int64_t pairs = (total + 1) / 2;
  *lo = pairs * t / np * 2;
  *hi = pairs * (t + 1) / np * 2;
  if (*lo > total) *lo = total;
  if (*hi > total) *hi = total;
}

static void amx_pack_part(void *vjob, int t, int np) {
  const amx_job *j = vjob;
  int64_t lo, hi;
  tile_range(j->mt, t, np, &lo, &hi);
  pd_kcpu_amx_pack_a(j->ta, j->m, j->k, j->a, j->lda, lo, hi, j->pa);
  tile_range(j->nt, t, np, &lo, &hi);
  pd_kcpu_amx_pack_b(j->tb, j->k, j->n, j->b, j->ldb, lo, hi, j->pb);
}

static void amx_gemm_part(void *vjob, int t, int np) {
  const amx_job *j = vjob;
  int64_t lo, hi;
  tile_range(j->by_cols ? j->nt : j->mt, t, np, &lo, &hi);
  if (lo >= hi) return;
  if (j->by_cols) pd_kcpu_amx_gemm(j->m, j->n, j->k, j->pa, j->pb, 0, j->mt, lo, hi, &j->out);
  else pd_kcpu_amx_gemm(j->m, j->n, j->k, j->pa, j->pb, lo, hi, 0, j->nt, &j->out);
}

/* Elements of the packs of a product. */
static int64_t amx_packs(int64_t m, int64_t n, int64_t k) {
  return pd_kcpu_amx_pack_size(m, k) + pd_kcpu_amx_pack_size(n, k);
}

/* One product (m, n, k > 0, alpha != 0) on AMX tiles, packing into pa (amx_packs elements). */
static void lp_amx(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, double beta,
                   float *c, int64_t ldc, const float *bias, uint16_t *pa) {
  int64_t sa = pd_kcpu_amx_pack_size(m, k);
  amx_job j = {ta, tb, n >= m, m, n, k, lda, ldb, (m + 15) / 16, (n + 15) / 16, a, b, pa,
               pa + sa, {(float)alpha, (float)beta, bias, c, ldc}};
  int np = pd_kcpu_blas_team();
  int64_t blocks = ((j.by_cols ? j.nt : j.mt) + 1) / 2;
  if (m * n * k < LP_SPLIT_MIN_WORK) np = 1;
  if (np > blocks) np = (int)blocks;
  if (np > 1) {
    pd_kcpu_team(np, amx_pack_part, &j);
    pd_kcpu_team(np, amx_gemm_part, &j);
  } else {
    amx_pack_part(&j, 0, 1);
    amx_gemm_part(&j, 0, 1);
  }
}
#endif

pd_status pd_kcpu_gemm_lp(pd_dtype lp, bool trans_a, bool trans_b, int64_t batch, int64_t m,
                          int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                          int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                          double beta, void *c, int64_t ldc, int64_t stride_c,
                          const void *bias) {
  pd_status st = pd_k_gemm_lp_check(lp, trans_a, trans_b, batch, m, n, k, lda, stride_a, ldb,
                                    stride_b, ldc, stride_c);
  if (st || m == 0 || n == 0) return st;
#if PD_KCPU_HAVE_AMX
  uint16_t *pack = NULL; /* the packs, one allocation for the whole batch */
  if (lp == PD_BF16 && k > 0 && alpha != 0 && batch > 0 && pd_kcpu_amx_bf16() &&
      !(pack = pd_k_host_alloc((size_t)amx_packs(m, n, k) * sizeof(uint16_t))))
    return PD_ENOMEM;
#endif
  for (int64_t i = 0; i < batch && !st; i++) {
    const float *ai = (const float *)a + i * stride_a, *bi = (const float *)b + i * stride_b;
    float *ci = (float *)c + i * stride_c;
#if PD_KCPU_HAVE_AMX
    if (pack) {
      lp_amx(trans_a, trans_b, m, n, k, alpha, ai, lda, bi, ldb, beta, ci, ldc, bias, pack);
      continue;
    }
#endif
    st = lp_fallback(lp, trans_a, trans_b, m, n, k, alpha, ai, lda, bi, ldb, beta, ci, ldc,
                     bias);
  }
#if PD_KCPU_HAVE_AMX
  pd_k_host_free(pack);
#endif
  return st;
}
