/* fastmath_avx2.c -- eight-lane AVX2 + FMA instances of fastmath.h's e^x (also the softmax's,
 * for x <= 0), tanh, logistic function and max over fp32 arrays, a whole softmax row, and
 * reduce.c's column sums, chosen at run time on CPUs that have both (pd_kcpu_simd). The build
 * targets baseline x86-64 (SSE2); these functions alone are compiled for AVX2 + FMA (a function
 * attribute, so no special flags), and nothing calls them on a CPU without. Same algorithms as
 * the four-lane code, step for step; the fused multiply-adds round once where that code rounds
 * twice, which only removes error: the bounds fastmath.h states hold for both
 * (tests/kernels/test_fastmath.c checks each instance). */
#include "config.h"
#include "kernels/cpu/fastmath.h"

#if PD_KCPU_HAVE_AVX2
#include <immintrin.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2,fma")))

/* Level last chosen: -1 until the first pd_kcpu_simd call detects it. */
static _Atomic int simd_level = -1;

static int best_level(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return PD_KCPU_SIMD_BASE;
  return __builtin_cpu_supports("avx512f") ? PD_KCPU_SIMD_AVX512 : PD_KCPU_SIMD_AVX2;
}

int pd_kcpu_simd(void) {
  int l = atomic_load_explicit(&simd_level, memory_order_relaxed);
  if (l < 0) {
    l = best_level();
    atomic_store_explicit(&simd_level, l, memory_order_relaxed);
  }
  return l;
}

int pd_kcpu_simd_force(int level) {
  int best = best_level(), l = level < best ? level : best;
  atomic_store_explicit(&simd_level, l, memory_order_relaxed);
  return l;
}

static inline AVX2 __m256 sel(__m256 m, __m256 a, __m256 b) { return _mm256_blendv_ps(b, a, m); }

/* pd_kcpu_v4_exp_reduced: e^(x - n ln2), n = x / ln2 rounded to an integer. */
static inline AVX2 __m256 v8_exp_reduced(__m256 x, __m256 n) {
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  /* p r^2 + r + 1 rounded as the four-lane code does: fusing the first addition makes the
   * worst error 1.01 ulp (all 2^32 floats) instead of 0.99. The empty asm keeps the compiler
   * from contracting the product and the sum into an FMA (GNU C contracts by default). */
  __m256 pr2 = _mm256_mul_ps(p, _mm256_mul_ps(r, r));
  __asm__("" : "+x"(pr2));
  return _mm256_add_ps(_mm256_add_ps(pr2, r), _mm256_set1_ps(1.0f));
}

static inline AVX2 __m256 v8_exp(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.72283935546875f), lo = _mm256_set1_ps(-103.97208404541016f);
  __m256 xc = _mm256_max_ps(x, lo); /* NaN: lo (maxps returns its second operand) */
  xc = _mm256_min_ps(xc, hi);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 p = v8_exp_reduced(xc, n);
  /* 2^n as two normal factors: n1 = n / 2 rounded toward zero, as the four-lane code. */
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(_mm256_add_epi32(ni, _mm256_srli_epi32(ni, 31)), 1);
  __m256i n2 = _mm256_sub_epi32(ni, n1), bias = _mm256_set1_epi32(127);
  __m256 y = _mm256_mul_ps(
      _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23))),
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23)));
  y = sel(_mm256_cmp_ps(x, hi, _CMP_GT_OQ), _mm256_set1_ps(__builtin_inff()), y);
  y = sel(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), _mm256_setzero_ps(), y);
  return sel(_mm256_cmp_ps(x, x, _CMP_UNORD_Q), x, y);
}

/* pd_kcpu_v4_exp_nonpos. maxps and minps return their second operand when either is NaN, so
 * a NaN x runs through as NaN. */
static inline AVX2 __m256 v8_exp_nonpos(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.33654022216796875f), magic = _mm256_set1_ps(12582912.0f);
  __m256 xc = _mm256_min_ps(_mm256_setzero_ps(), _mm256_max_ps(lo, x));
  __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), magic);
  __m256 n = _mm256_sub_ps(t, magic);
  __m256 p = v8_exp_reduced(xc, n);
  __m256i e = _mm256_slli_epi32(
      _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000 - 127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), y);
}

/* pd_kcpu_v4_exp_phi, its n by a fused multiply-add (v16_exp_phi's steps). */
static inline AVX2 __m256 v8_exp_phi(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-103.97208404541016f), magic = _mm256_set1_ps(12582912.0f);
  __m256 xc = _mm256_max_ps(x, lo);
  __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), magic);
  __m256 p = v8_exp_reduced(xc, _mm256_sub_ps(t, magic));
  __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000));
  __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  __m256i bias = _mm256_set1_epi32(127);
  __m256 y = _mm256_mul_ps(
      _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23))),
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23)));
  return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), y);
}

static inline AVX2 __m256 v8_tanh(__m256 x) {
  const __m256 signbit = _mm256_set1_ps(-0.0f);
  __m256 sign = _mm256_and_ps(x, signbit), a = _mm256_andnot_ps(signbit, x);
  __m256 z = _mm256_mul_ps(a, a);
  __m256 s = _mm256_fmadd_ps(z, _mm256_set1_ps(21844.0f / 6081075.0f),
                             _mm256_set1_ps(-1382.0f / 155925.0f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(62.0f / 2835.0f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(-17.0f / 315.0f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(2.0f / 15.0f));
  s = _mm256_fmadd_ps(s, z, _mm256_set1_ps(-1.0f / 3.0f));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(a, z), s, a);
  __m256 t = v8_exp(_mm256_mul_ps(a, _mm256_set1_ps(-2.0f)));
  __m256 one = _mm256_set1_ps(1.0f);
  __m256 big = _mm256_div_ps(_mm256_sub_ps(one, t), _mm256_add_ps(one, t)); /* NaN for NaN */
  return _mm256_or_ps(sel(_mm256_cmp_ps(a, _mm256_set1_ps(0.35f), _CMP_LT_OQ), small, big),
                      sign);
}

static inline AVX2 __m256 v8_sigmoid(__m256 x) {
  __m256 one = _mm256_set1_ps(1.0f);
  __m256 t = v8_exp(_mm256_or_ps(x, _mm256_set1_ps(-0.0f)));
  return _mm256_div_ps(sel(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ), t, one),
                       _mm256_add_ps(one, t));
}

/* fastmath.h's pd_kcpu_v4_phi, P by fused multiply-adds (v16_phi's steps). */
static inline AVX2 __m256 v8_phi(__m256 x) {
  static const float c[] = {PD_KCPU_PHI_P};
  __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
  __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
  a = _mm256_min_ps(_mm256_set1_ps(PD_KCPU_PHI_AMAX), a); /* NaN stays */
  __m256 z = _mm256_mul_ps(a, _mm256_set1_ps(0.70710678f));
  __m256 k = _mm256_div_ps(one, _mm256_fmadd_ps(half, z, one)), q = _mm256_set1_ps(c[0]);
  for (int i = 1; i < 10; i++) q = _mm256_fmadd_ps(q, k, _mm256_set1_ps(c[i]));
  /* z^2 = a^2 / 2 = zz + ze exactly, s + lo = q - zz - ze (TwoSum) */
  __m256 aa = _mm256_mul_ps(a, a), zz = _mm256_mul_ps(half, aa);
  __m256 ze = _mm256_mul_ps(half, _mm256_fmsub_ps(a, a, aa)), s = _mm256_sub_ps(q, zz);
  __m256 bb = _mm256_sub_ps(s, q);
  __m256 lo = _mm256_sub_ps(q, _mm256_sub_ps(s, bb));
  lo = _mm256_sub_ps(_mm256_sub_ps(lo, _mm256_add_ps(zz, bb)), ze);
  __m256 e = v8_exp_phi(s);
  __m256 h = _mm256_mul_ps(_mm256_mul_ps(half, k), _mm256_fmadd_ps(e, lo, e));
  return sel(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ), h, _mm256_sub_ps(one, h));
}

static inline AVX2 __m256 v8_fm(int f, __m256 v) {
  return f == PD_KCPU_FM_EXP       ? v8_exp(v)
         : f == PD_KCPU_FM_TANH    ? v8_tanh(v)
         : f == PD_KCPU_FM_SIGMOID ? v8_sigmoid(v)
         : f == PD_KCPU_FM_PHI     ? v8_phi(v)
                                   : v8_exp_nonpos(v);
}

/* The tail: lanes past k read as 0 and are not stored. */
static inline AVX2 __m256i tail_mask(int64_t k) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Sum of the eight lanes into two double accumulators (the four-lane code sums in double). */
static inline AVX2 void add_pd(__m256d *s0, __m256d *s1, __m256 v) {
  *s0 = _mm256_add_pd(*s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
  *s1 = _mm256_add_pd(*s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

static inline AVX2 double hsum_pd(__m256d s0, __m256d s1) {
  double a[4], b[4];
  _mm256_storeu_pd(a, s0);
  _mm256_storeu_pd(b, s1);
  return ((a[0] + b[0]) + (a[1] + b[1])) + ((a[2] + b[2]) + (a[3] + b[3]));
}

/* out = f(x - shift); the sum of out when `sum` (else 0: the elementwise kernels skip it). */
static inline AVX2 double fm8(int f, bool sum, const float *x, float shift, float *out,
                              int64_t n) {
  __m256 sh = _mm256_set1_ps(shift);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = v8_fm(f, _mm256_sub_ps(_mm256_loadu_ps(x + j), sh));
    _mm256_storeu_ps(out + j, v);
    if (sum) add_pd(&s0, &s1, v);
  }
  if (j < n) {
    __m256i m = tail_mask(n - j);
    __m256 v = v8_fm(f, _mm256_sub_ps(_mm256_maskload_ps(x + j, m), sh));
    v = _mm256_and_ps(v, _mm256_castsi256_ps(m)); /* unused lanes add 0 */
    _mm256_maskstore_ps(out + j, m, v);
    if (sum) add_pd(&s0, &s1, v);
  }
  return sum ? hsum_pd(s0, s1) : 0.0;
}

AVX2 double pd_kcpu_fastmath8_f32(int f, bool sum, const float *x, float shift, float *out,
                                  int64_t n) {
  /* One instance per function and flag, so that the per-element choices are made once. */
  switch (f) {
    case PD_KCPU_FM_EXP:
      return sum ? fm8(PD_KCPU_FM_EXP, true, x, shift, out, n)
                 : fm8(PD_KCPU_FM_EXP, false, x, shift, out, n);
    case PD_KCPU_FM_TANH:
      return sum ? fm8(PD_KCPU_FM_TANH, true, x, shift, out, n)
                 : fm8(PD_KCPU_FM_TANH, false, x, shift, out, n);
    case PD_KCPU_FM_SIGMOID:
      return sum ? fm8(PD_KCPU_FM_SIGMOID, true, x, shift, out, n)
                 : fm8(PD_KCPU_FM_SIGMOID, false, x, shift, out, n);
    case PD_KCPU_FM_PHI:
      return sum ? fm8(PD_KCPU_FM_PHI, true, x, shift, out, n)
                 : fm8(PD_KCPU_FM_PHI, false, x, shift, out, n);
    default:
      return sum ? fm8(PD_KCPU_FM_EXP_NONPOS, true, x, shift, out, n)
                 : fm8(PD_KCPU_FM_EXP_NONPOS, false, x, shift, out, n);
  }
}

AVX2 float pd_kcpu_max8_f32(const float *x, int64_t n) {
  /* Lanes start at x[0]; `a > m ? a : m` (maxps(a, m) keeps m for a NaN a), as the scalar loop:
   * a NaN x[0] stays, later NaNs are skipped. */
  __m256 m0 = _mm256_set1_ps(x[0]), m1 = m0;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + j), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + j + 8), m1);
  }
  m0 = _mm256_max_ps(m1, m0);
  float l[8], m = x[0];
  _mm256_storeu_ps(l, m0);
  for (int k = 0; k < 8; k++) m = l[k] > m ? l[k] : m;
  for (; j < n; j++) m = x[j] > m ? x[j] : m;
  return m;
}

AVX2 void pd_kcpu_scale8_f32(float *x, float s, int64_t n) {
  __m256 sv = _mm256_set1_ps(s);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), sv));
  for (; j < n; j++) x[j] *= s;
}

/* 32 columns at a time in eight registers of four doubles: a row adds four conversions and
 * eight additions (the scalar loop's acc[] lives in memory: a load and a store per element). */
AVX2 void pd_kcpu_colsum8_f32(const float *x, int64_t rows, int64_t ld, int64_t w,
                              double *acc) {
  int64_t j = 0;
  for (; j + 32 <= w; j += 32) {
    __m256d a[8];
    for (int v = 0; v < 8; v++) a[v] = _mm256_loadu_pd(acc + j + 4 * v);
    const float *p = x + j;
    for (int64_t q = 0; q < rows; q++, p += ld)
      for (int v = 0; v < 8; v++)
        a[v] = _mm256_add_pd(a[v], _mm256_cvtps_pd(_mm_loadu_ps(p + 4 * v)));
    for (int v = 0; v < 8; v++) _mm256_storeu_pd(acc + j + 4 * v, a[v]);
  }
  for (; j + 4 <= w; j += 4) {
    __m256d a = _mm256_loadu_pd(acc + j);
    const float *p = x + j;
    for (int64_t q = 0; q < rows; q++, p += ld)
      a = _mm256_add_pd(a, _mm256_cvtps_pd(_mm_loadu_ps(p)));
    _mm256_storeu_pd(acc + j, a);
  }
  for (; j < w; j++) {
    double a = acc[j];
    for (int64_t q = 0; q < rows; q++) a += (double)x[q * ld + j];
    acc[j] = a;
  }
}
#endif /* PD_KCPU_HAVE_AVX2 */
