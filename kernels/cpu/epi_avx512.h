/* epi_avx512.h -- the activation of the fused epilogues (fastmath.h's pd_kcpu_epi16) on a
 * vector of sixteen floats, and the masks of a vector's lanes, for the AVX-512 files
 * (gemm_avx512.c's products, conv_avx512.c's depthwise convolution, conv_wino.c's transforms);
 * include it after <immintrin.h>. */
#ifndef PD_KCPU_EPI_AVX512_H
#define PD_KCPU_EPI_AVX512_H

/* Lanes [lo, hi) of sixteen, clipped to [0, 16) (none where hi <= lo). */
static inline __mmask16 pd_kcpu_span16(int64_t lo, int64_t hi) {
  lo = lo < 0 ? 0 : lo, hi = hi > 16 ? 16 : hi;
  return hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* The first n lanes of sixteen (all where n >= 16). */
static inline __mmask16 pd_kcpu_first16(int64_t n) { return pd_kcpu_span16(0, n); }

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
