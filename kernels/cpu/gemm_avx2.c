/* gemm_avx2.c -- the fp32 product of a 1x1 convolution with its fused epilogue for CPUs with AVX2
 * and FMA but not AVX-512 (pd_kcpu_simd chooses): C = A B, A the filters [m, k], B the image's
 * channels [k, n] read in place, and each element of C through fastmath.h's epilogue (a bias per
 * row, a residual, an activation) as it is stored. Through OpenBLAS these layers made three
 * passes over C: its beta pass clearing C, the product adding into it, and conv.c's epilogue;
 * on a Zen 3 core the first and the last were 12% of MobileNetV3's time at batch 1.
 *
 * A tile of 6 rows by 16 columns of C sits in 12 registers for the whole of K while each element
 * of A is broadcast against 16 columns of a row of B (two loads); a tile's rows past m are not
 * computed (instances for 6, 4, 2, 1 rows), its columns past n are masked. Each element of C is
 * its k products added in order with fused multiply-adds (as gemm_avx512.c's), so results differ
 * from OpenBLAS's in the last bits. Compiled with a function attribute; nothing calls it on a CPU
 * without AVX2 and FMA. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"

#if PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>

#include "kernels/cpu/epi_avx2.h"

#define AVX2 __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))
#define UNROLL6 _Pragma("GCC unroll 6")
#define MR 6  /* rows of C a tile */
#define NR 16 /* columns of C a tile: two vectors */
#define PACK_STACK_K 512 /* panels of B up to this many rows (32 KB) on the stack */

/* R rows (1..MR) of C from row i0, columns [j, j + 16) (`whole`, else those mk selects): the
 * tile's sums over k, then bias, residual and activation, stored. */
INLINE AVX2 void tile(int R, bool whole, int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float *c, int64_t ldc, const pd_kcpu_epi16 *e, int64_t i0,
                      int64_t j, __m256i mk0, __m256i mk1) {
  __m256 acc[MR][2];
  UNROLL6 for (int r = 0; r < R; r++) {
    acc[r][0] = _mm256_setzero_ps();
    acc[r][1] = _mm256_setzero_ps();
  }
  const float *bq = b; /* the panel: column j of B at its column 0 */
  for (int64_t q = 0; q < k; q++, bq += ldb) {
    __m256 b0 = whole ? _mm256_loadu_ps(bq) : _mm256_maskload_ps(bq, mk0);
    __m256 b1 = whole ? _mm256_loadu_ps(bq + 8) : _mm256_maskload_ps(bq + 8, mk1);
    UNROLL6 for (int r = 0; r < R; r++) {
      __m256 av = _mm256_broadcast_ss(a + r * lda + q);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  UNROLL6 for (int r = 0; r < R; r++) {
    float *cr = c + r * ldc + j;
    _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++) { /* unrolled: acc stays in registers */
      __m256 x = acc[r][v];
      __m256i mk = v ? mk1 : mk0;
      if (e) {
        if (e->rbias) x = _mm256_add_ps(x, _mm256_broadcast_ss(e->rbias + i0 + r));
        if (e->res) {
          const float *q = e->res + (i0 + r) * e->ldres + j + 8 * v;
          x = _mm256_add_ps(x, whole ? _mm256_loadu_ps(q) : _mm256_maskload_ps(q, mk));
        }
        x = pd_kcpu_epi_act8(e->act, e->p, x);
      }
      if (whole) _mm256_storeu_ps(cr + 8 * v, x);
      else _mm256_maskstore_ps(cr + 8 * v, mk, x);
    }
  }
}

/* Rows [0, m) of C against columns [j, j + 16): six rows at a time, then four, two, one. */
INLINE AVX2 void columns(bool whole, int64_t m, int64_t k, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float *c, int64_t ldc,
                         const pd_kcpu_epi16 *e, int64_t j, __m256i mk0, __m256i mk1) {
  int64_t i = 0;
  for (; i + MR <= m; i += MR)
    tile(MR, whole, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, e, i, j, mk0, mk1);
  if (i + 4 <= m) {
    tile(4, whole, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, e, i, j, mk0, mk1);
    i += 4;
  }
  if (i + 2 <= m) {
    tile(2, whole, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, e, i, j, mk0, mk1);
    i += 2;
  }
  if (i < m) tile(1, whole, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, e, i, j, mk0, mk1);
}

/* B's columns [j, j + w) (w <= 16) copied into pack, k rows of 16 (the missing columns 0). */
INLINE AVX2 void pack_panel(int64_t k, const float *b, int64_t ldb, int64_t j, int64_t w,
                            float *pack) {
  if (w == NR) {
    for (int64_t q = 0; q < k; q++) {
      _mm256_storeu_ps(pack + q * NR, _mm256_loadu_ps(b + q * ldb + j));
      _mm256_storeu_ps(pack + q * NR + 8, _mm256_loadu_ps(b + q * ldb + j + 8));
    }
    return;
  }
  for (int64_t q = 0; q < k; q++)
    for (int64_t t = 0; t < NR; t++) pack[q * NR + t] = t < w ? b[q * ldb + j + t] : 0.0f;
}

AVX2 bool pd_kcpu_gemm8_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                const float *b, int64_t ldb, float *c, int64_t ldc,
                                const pd_kcpu_epi16 *e) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i all = _mm256_set1_epi32(-1);
  float stack[PACK_STACK_K * NR], *pack = stack;
  if (k > PACK_STACK_K && !(pack = pd_k_host_alloc((size_t)k * NR * sizeof(float))))
    return false;
  for (int64_t j = 0; j < n; j += NR) {
    int64_t w = n - j < NR ? n - j : NR;
    pack_panel(k, b, ldb, j, w, pack);
    if (w == NR) {
      columns(true, m, k, a, lda, pack, NR, c, ldc, e, j, all, all);
    } else {
      __m256i mk0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w), lane);
      __m256i mk1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w - 8), lane);
      columns(false, m, k, a, lda, pack, NR, c, ldc, e, j, mk0, mk1);
    }
  }
  if (pack != stack) pd_k_host_free(pack);
  return true;
}

#endif /* PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32 */
