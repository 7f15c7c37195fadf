/* epi_avx512.h -- the activation of the fused epilogues (fastmath.h's pd_kcpu_epi16) on a
 * vector of sixteen floats, for the AVX-512 files (gemm_avx512.c's products, conv_avx512.c's
 * depthwise convolution); include it after <immintrin.h>. */
#ifndef PD_KCPU_EPI_AVX512_H
#define PD_KCPU_EPI_AVX512_H

/* epi's activation of x (fastmath.h: the formulas of act_t.h, but hard_swish's division a
 * multiplication by the reciprocal). relu keeps NaN: max(0, x) returns x when unordered. */
static inline __attribute__((always_inline, target("avx512f,fma"))) __m512
pd_kcpu_epi_act(const pd_kcpu_epi16 *e, __m512 x) {
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
  switch (e->act) {
    case PD_KCPU_EPI_RELU: return _mm512_max_ps(zero, x);
    case PD_KCPU_EPI_RELU6: return _mm512_min_ps(_mm512_set1_ps(e->p[0]), _mm512_max_ps(zero, x));
    case PD_KCPU_EPI_LEAKY:
      return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LE_OQ), x,
                                _mm512_set1_ps(e->p[0]));
    case PD_KCPU_EPI_HSWISH: {
      __m512 v = _mm512_add_ps(x, _mm512_set1_ps(e->p[2]));
      v = _mm512_min_ps(_mm512_set1_ps(e->p[0]), _mm512_max_ps(zero, v));
      return _mm512_mul_ps(_mm512_mul_ps(x, v), _mm512_set1_ps(e->p[3]));
    }
    case PD_KCPU_EPI_HSIGMOID: {
      __m512 v = _mm512_fmadd_ps(_mm512_set1_ps(e->p[0]), x, _mm512_set1_ps(e->p[1]));
      return _mm512_min_ps(one, _mm512_max_ps(zero, v));
    }
    default: return x;
  }
}

#endif /* PD_KCPU_EPI_AVX512_H */
