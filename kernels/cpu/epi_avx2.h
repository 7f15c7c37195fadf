/* epi_avx2.h -- the activation of the fused epilogues (fastmath.h's pd_kcpu_epi16: its act
 * and p) on a vector of eight floats, for the AVX2 files (conv_avx2.c's depthwise convolution
 * and row epilogue, gemm_avx2.c's product); include it after <immintrin.h>. */
#ifndef PD_KCPU_EPI_AVX2_H
#define PD_KCPU_EPI_AVX2_H

/* act (parameters pp) of x: the formulas of epi_avx512.h. relu keeps NaN: max(0, x) returns x
 * when unordered. */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256
pd_kcpu_epi_act8(int act, const float *pp, __m256 x) {
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  switch (act) {
    case PD_KCPU_EPI_RELU: return _mm256_max_ps(zero, x);
    case PD_KCPU_EPI_RELU6: return _mm256_min_ps(_mm256_set1_ps(pp[0]), _mm256_max_ps(zero, x));
    case PD_KCPU_EPI_LEAKY:
      return _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(pp[0])),
                              _mm256_cmp_ps(x, zero, _CMP_LE_OQ));
    case PD_KCPU_EPI_HSWISH: {
      __m256 v = _mm256_add_ps(x, _mm256_set1_ps(pp[2]));
      v = _mm256_min_ps(_mm256_set1_ps(pp[0]), _mm256_max_ps(zero, v));
      return _mm256_mul_ps(_mm256_mul_ps(x, v), _mm256_set1_ps(pp[3]));
    }
    case PD_KCPU_EPI_HSIGMOID: {
      __m256 v = _mm256_fmadd_ps(_mm256_set1_ps(pp[0]), x, _mm256_set1_ps(pp[1]));
      return _mm256_min_ps(one, _mm256_max_ps(zero, v));
    }
    default: return x;
  }
}

#endif /* PD_KCPU_EPI_AVX2_H */
