/* gemm_avx512.c -- a small fp32 product for AVX-512F CPUs, C += A B with B at most 64 columns:
 * the step of gemm_act_chain (gemm.c) at small hidden sizes, where an OpenBLAS call is mostly
 * overhead and two threads calling it at once queue on its buffer lock (an RNN step at hidden
 * 32 on 16 rows a thread took longer on two threads than on one). Four rows of C at a time sit
 * in up to sixteen registers while each element of A is broadcast against a row of B. Each
 * element of C is its k products added in order with fused multiply-adds, so results differ
 * from OpenBLAS's in the last bits. Compiled with a function attribute (fastmath_avx512.c);
 * nothing calls it on a CPU without AVX-512F (pd_kcpu_simd). */
#include "config.h"
#include "kernels/cpu/fastmath.h"

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,fma")))
#define INLINE inline __attribute__((always_inline))
/* The register blocks' loops unrolled, so that acc[][] and bv[] live in registers. */
#define UNROLL _Pragma("GCC unroll 4")

/* R rows (1..4) of C, NV vectors of 16 columns (1..4), the last masked by `last`. */
static INLINE AVX512 void rows(int R, int NV, int64_t k, const float *a, int64_t lda,
                               const float *b, int64_t ldb, float *c, int64_t ldc,
                               __mmask16 last) {
  __m512 acc[4][4];
  UNROLL for (int r = 0; r < R; r++)
    UNROLL for (int v = 0; v < NV; v++)
      acc[r][v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, c + r * ldc + 16 * v);
  for (int64_t q = 0; q < k; q++) {
    __m512 bv[4];
    UNROLL for (int v = 0; v < NV; v++)
      bv[v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, b + q * ldb + 16 * v);
    UNROLL for (int r = 0; r < R; r++) {
      __m512 av = _mm512_set1_ps(a[r * lda + q]);
      UNROLL for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  UNROLL for (int r = 0; r < R; r++)
    UNROLL for (int v = 0; v < NV; v++)
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, v == NV - 1 ? last : 0xffff, acc[r][v]);
}

static INLINE AVX512 void all_rows(int NV, int64_t m, int64_t k, const float *a, int64_t lda,
                                   const float *b, int64_t ldb, float *c, int64_t ldc,
                                   __mmask16 last) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) rows(4, NV, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, last);
  for (; i < m; i++) rows(1, NV, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, last);
}

AVX512 void pd_kcpu_gemm_small16_f32(int64_t m, int64_t n, int64_t k, const float *a,
                                     int64_t lda, const float *b, int64_t ldb, float *c,
                                     int64_t ldc) {
  int nv = (int)((n + 15) / 16);
  __mmask16 last = (__mmask16)(n % 16 ? (1u << (n % 16)) - 1u : 0xffffu);
  switch (nv) { /* one instance per width, so the register blocks are fixed */
    case 1: all_rows(1, m, k, a, lda, b, ldb, c, ldc, last); break;
    case 2: all_rows(2, m, k, a, lda, b, ldb, c, ldc, last); break;
    case 3: all_rows(3, m, k, a, lda, b, ldb, c, ldc, last); break;
    case 4: all_rows(4, m, k, a, lda, b, ldb, c, ldc, last); break;
    default: break; /* n == 0 */
  }
}
#endif
