/* fastmath.h -- e^x, tanh and the logistic function over fp32 arrays, and the vector max of the
 * fp32 softmax, without libm calls or branches. For the fp32 kernels of elementwise.c and
 * softmax.c: glibc's tanhf is a scalar call of ~9 ns an element; this tanh takes ~2.6 ns in
 * four lanes (GCC/Clang vector extensions, SSE2 on x86-64), ~1.0 ns in eight (AVX2 + FMA,
 * fastmath_avx2.c) and ~0.6 ns in sixteen (AVX-512F, fastmath_avx512.c), the widest the CPU has
 * being used (pd_kcpu_simd); e^x ~1.7, ~0.65 and ~0.35 ns (measured through the unary kernel
 * on [8192] and [1024], one thread, on this project's Xeon).
 *
 * Only on x86-64 (SSE2) and AArch64 (NEON), where 16-byte vectors are native and float
 * arithmetic has no excess precision: elsewhere (i386's x87, targets without such vectors) the
 * code would be scalar, and GCC rejects it under -Werror (-Wpsabi, excess precision); this
 * header then defines only PD_KCPU_FASTMATH_f32 as 0 and the kernels call libm.
 *
 * Error against libm in double, at worst over all 2^32 floats (checked when written, x86-64,
 * with and without FTZ/DAZ): e^x 0.99 ulp, tanh 2.08 ulp, the logistic function 2.41 ulp (the
 * eight-lane instance: 0.98, 2.08, 2.41); tests/kernels/test_fastmath.c checks 1, 2.5 and 2.5
 * on 2^24 of them, for each instance. NaN
 * gives NaN, +-inf the limits, -0 stays -0 (tanh). Results below FLT_MIN are the denormals
 * libm gives (within an ulp of 2^-149), which the flush-to-zero mode of pd_k_init makes 0 as
 * it does libm's. The two instances may differ in the last bit (the eight-lane one fuses its
 * multiply-adds), so a result can depend on the CPU, as with any BLAS. All names start with
 * pd_kcpu_ as cpu.h's. */
#ifndef PD_KCPU_FASTMATH_H
#define PD_KCPU_FASTMATH_H

/* The instances of the typed templates (cpu.h) that use these functions, as
 * `#if TF(PD_KCPU_FASTMATH)`: fp32 where the vector code is built. */
#if defined(__x86_64__) || defined(__aarch64__)
#define PD_KCPU_FASTMATH_f32 1
#else
#define PD_KCPU_FASTMATH_f32 0
#endif
#define PD_KCPU_FASTMATH_f64 0

/* The instruction sets the kernels choose between at run time (pd_kcpu_simd), in order: each
 * level's CPUs have the ones below it. */
enum { PD_KCPU_SIMD_BASE, PD_KCPU_SIMD_AVX2, PD_KCPU_SIMD_AVX512 };

#if defined(__x86_64__) && defined(__GNUC__)
#define PD_KCPU_HAVE_AVX2 1
#define PD_KCPU_HAVE_AVX512 1
#else
#define PD_KCPU_HAVE_AVX2 0
#define PD_KCPU_HAVE_AVX512 0
#endif

#if PD_KCPU_FASTMATH_f32
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if PD_KCPU_HAVE_AVX2
/* The best level this CPU has (AVX2 needs FMA too; AVX512 is AVX-512F, with FMA), detected
 * on the first call (thread-safe, cheap after). */
int pd_kcpu_simd(void);
/* For tests: use at most `level` from now on; returns the level in force. */
int pd_kcpu_simd_force(int level);
/* fastmath_avx2.c's instances of pd_kcpu_fastmath_f32 (with sum: the sum is computed and
 * returned; else 0) and pd_kcpu_max_f32, and x[j] *= s; call them only when pd_kcpu_simd() is
 * PD_KCPU_SIMD_AVX2. */
double pd_kcpu_fastmath8_f32(int f, bool sum, const float *x, float shift, float *out,
                             int64_t n);
float pd_kcpu_max8_f32(const float *x, int64_t n);
void pd_kcpu_scale8_f32(float *x, float s, int64_t n);
/* fastmath_avx512.c's sixteen-lane instances of the three above, each element the same bits as
 * the eight-lane one gives; call them only when pd_kcpu_simd() is PD_KCPU_SIMD_AVX512. */
double pd_kcpu_fastmath16_f32(int f, bool sum, const float *x, float shift, float *out,
                              int64_t n);
float pd_kcpu_max16_f32(const float *x, int64_t n);
void pd_kcpu_scale16_f32(float *x, float s, int64_t n);
/* The softmax of each of `rows` rows of n scores (row stride ld) in place, bias (row i at
 * bias + i ldb, n of them; NULL: none) added first, as softmax.c's attention takes its blocks:
 * a row's max, e^(x - max) (fastmath.h's e^x for x <= 0) and their sum in one pass, the scaling
 * in another, rather than three calls a row. lse (NULL: not wanted): each row's log-sum-exp.
 * The sum is of floats in sixteen lanes. Under the same condition. */
void pd_kcpu_softmax_rows16_f32(float *s, int64_t rows, int64_t n, int64_t ld, const float *bias,
                                int64_t ldb, float *lse);
/* dst[j] = pd_fp16_round(src[j]) for j < n, bit for bit (NaNs stay NaNs), by AVX-512F's float16
 * conversions; under the same condition. */
void pd_kcpu_round16_f16(const float *src, float *dst, int64_t n);
/* gemm_avx512.c: C [m, n] += A [m, k] B [k, n] (row strides lda, ldb, ldc) for n <= 64 (a
 * larger n is not handled: the caller checks), under the same condition. */
#define PD_KCPU_SMALL16_MAX_N 64
void pd_kcpu_gemm_small16_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                              const float *b, int64_t ldb, float *c, int64_t ldc);
/* gemm_avx512.c: C [m, n] = A [m, k] B [n, k]^T (row strides lda, ldb, ldc), each element a
 * dot product along K in sixteen lanes, then added across them; rows of B four at a time
 * against every row of A, so that B is read once. Under the same condition. */
void pd_kcpu_gemm_nt16_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float *c, int64_t ldc);
/* gemm_avx512.c: C [m, n] = alpha op(A) op(B) + beta C (op: transposed when ta, tb; beta 0
 * does not read C), plus bias [n] on every row when bias, for m, n, k > 0, under the same
 * condition; an op(A) past L2 in blocks of it. false, with C untouched, when there is no memory
 * for its copies of B or partial sums. */
bool pd_kcpu_gemm16_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                        const float *bias, float *c, int64_t ldc);
/* gemm_avx512.c, for a B that many products share (an RNN's weights, multiplied at every
 * step): pd_kcpu_gemm16_pack_f32 copies B [k, n] (row stride ldb) into panels of
 * PD_KCPU_GEMM16_NR columns, each k rows of PD_KCPU_GEMM16_NR floats in a row (the last panel
 * padded with zeros): pd_kcpu_gemm16_packed_size(k, n) floats, each panel then read
 * contiguously (rnn_seq.c packs each thread's columns of the weights, by that thread). On the
 * project's CPU a [32, 256] x [256, 512] product took the same time either way (~82 us, one
 * thread, the weights in L2), and so did LSTM steps with and without it: rows 4 KB apart did
 * not cost here. pd_kcpu_gemm16p_f32: C [m,
 * n] = op(A) B + beta C with B so packed (beta 0 does not read C), the same sums in the same
 * order as pd_kcpu_gemm16_f32; false, with C untouched, when there is no memory for the
 * partial sums (m past 128 with k past 192). Under the same condition. */
#define PD_KCPU_GEMM16_NR 32
/* pd_kcpu_gemm16p_epi_f32: the same, then on each element of C, as it is stored: plus
 * cbias[column] (NULL: none; an fc layer's), plus rbias[row] (NULL: none; a convolution's),
 * plus res[row * ldres + column] (NULL: none), through the activation
 * act (p its parameters: relu6 {threshold}, leaky_relu {alpha}, hard_swish {threshold, scale,
 * offset, 1 / scale}, hard_sigmoid {slope, offset}); with `stream`, C's whole aligned vectors
 * stored past the caches (non-temporal stores, fenced before the call returns: a layer's output
 * too large to be in the cache when the next layer reads it, whose lines would otherwise be read
 * from memory before they are written; gemm_avx2.c's products, and those whose A is past L2,
 * store as usual). epi NULL: pd_kcpu_gemm16p_f32.
 * pd_kcpu_gemm16_epi_f32: pd_kcpu_gemm16_f32's C = A B (no transposes, alpha 1, beta 0) with
 * that epilogue (a 1x1 convolution's). */
enum { PD_KCPU_EPI_NONE, PD_KCPU_EPI_RELU, PD_KCPU_EPI_RELU6, PD_KCPU_EPI_LEAKY,
       PD_KCPU_EPI_HSWISH, PD_KCPU_EPI_HSIGMOID };
typedef struct pd_kcpu_epi16 {
  const float *cbias, *rbias, *res;
  int64_t ldres;
  int act;
  float p[4];
  bool stream;
} pd_kcpu_epi16;
int64_t pd_kcpu_gemm16_packed_size(int64_t k, int64_t n);
void pd_kcpu_gemm16_pack_f32(int64_t k, int64_t n, const float *b, int64_t ldb, float *pack);
/* The same panels of B given transposed: B^T [n, k] at b, row stride ldb. */
void pd_kcpu_gemm16_pack_t_f32(int64_t k, int64_t n, const float *b, int64_t ldb, float *pack);
bool pd_kcpu_gemm16p_f32(bool ta, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         const float *pack, float beta, float *c, int64_t ldc);
bool pd_kcpu_gemm16_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                            const float *b, int64_t ldb, float *c, int64_t ldc,
                            const pd_kcpu_epi16 *epi);
bool pd_kcpu_gemm16p_epi_f32(bool ta, int64_t m, int64_t n, int64_t k, const float *a,
                             int64_t lda, const float *pack, float beta, float *c, int64_t ldc,
                             const pd_kcpu_epi16 *epi);
/* acc[j] += x[q * ld + j] for rows q = 0 .. rows - 1 in order, j < w: reduce.c's column sums
 * (the bias gradient of an fc layer), each column's additions in the scalar loop's order, in
 * double, so the sums are the same bits. */
void pd_kcpu_colsum8_f32(const float *x, int64_t rows, int64_t ld, int64_t w, double *acc);
#else
static inline int pd_kcpu_simd(void) { return PD_KCPU_SIMD_BASE; }
static inline int pd_kcpu_simd_force(int level) { (void)level; return PD_KCPU_SIMD_BASE; }
#endif

/* Casts between these reinterpret the bits; a comparison gives a pd_kcpu_v4i of all ones (true)
 * or zeros per lane. */
typedef float pd_kcpu_v4f __attribute__((vector_size(16)));
typedef int32_t pd_kcpu_v4i __attribute__((vector_size(16)));
typedef double pd_kcpu_v2d __attribute__((vector_size(16)));

/* m ? a : b, lane by lane. */
static inline pd_kcpu_v4f pd_kcpu_v4_sel(pd_kcpu_v4i m, pd_kcpu_v4f a, pd_kcpu_v4f b) {
  return (pd_kcpu_v4f)(((pd_kcpu_v4i)a & m) | ((pd_kcpu_v4i)b & ~m));
}

/* e^(x - n ln2) for n = x / ln2 rounded to an integer: r = x - n ln2 (Cody-Waite: ln2 in two
 * parts), |r| <= ln2 / 2, and e^r by Cephes' expf polynomial. */
static inline pd_kcpu_v4f pd_kcpu_v4_exp_reduced(pd_kcpu_v4f x, pd_kcpu_v4f n) {
  pd_kcpu_v4f r = x - n * 0.693359375f;
  r -= n * -2.12194440e-4f;
  pd_kcpu_v4f p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * (r * r) + r + 1.0f;
}

/* e^x = e^r 2^n (pd_kcpu_v4_exp_reduced), 2^n as two exponent-field factors, each a normal float (n
 * runs from -150, where the results round to 0, to 128, where they overflow), so that p 2^n is
 * rounded once. */
static inline pd_kcpu_v4f pd_kcpu_v4_exp(pd_kcpu_v4f x) {
  const float hi = 88.72283935546875f;   /* ln(FLT_MAX) < hi: e^x above it rounds to +inf */
  const float lo = -103.97208404541016f; /* < ln(2^-150): e^x below it rounds to 0 */
  pd_kcpu_v4f zero = {0}, xc = pd_kcpu_v4_sel(x >= lo, x, zero + lo); /* NaN: lo */
  xc = pd_kcpu_v4_sel(xc <= hi, xc, zero + hi);
  pd_kcpu_v4f n = xc * 1.44269504088896341f + 12582912.0f; /* 1.5 2^23: rounds to an integer */
  n -= 12582912.0f;
  pd_kcpu_v4f p = pd_kcpu_v4_exp_reduced(xc, n);
  pd_kcpu_v4i ni = __builtin_convertvector(n, pd_kcpu_v4i), n1 = ni / 2, n2 = ni - n1;
  pd_kcpu_v4f y = p * (pd_kcpu_v4f)((n1 + 127) << 23) * (pd_kcpu_v4f)((n2 + 127) << 23);
  y = pd_kcpu_v4_sel(x > hi, zero + __builtin_inff(), y);
  y = pd_kcpu_v4_sel(x < lo, zero, y);
  return pd_kcpu_v4_sel(x != x, x, y);
}

/* e^x for x <= 0, the numerators of a softmax (x = logit - the row's max): pd_kcpu_v4_exp's
 * e^r (pd_kcpu_v4_exp_reduced), with x clamped to [lo, 0], lo = ln(FLT_MIN) rounded up, so that 2^n
 * (n from -126 to 0) is one exponent-field factor; results below FLT_MIN (x < lo) are 0 (a
 * softmax's denominator is at least 1, so they are far below its rounding). NaN gives NaN, -inf
 * 0; a positive x gives 1. About 1.8 times as fast as pd_kcpu_v4_exp (eight lanes: 0.46 ns an
 * element against 0.82, one thread, this project's Xeon); the same error bound. */
static inline pd_kcpu_v4f pd_kcpu_v4_exp_nonpos(pd_kcpu_v4f x) {
  const float lo = -87.33654022216796875f; /* e^x < FLT_MIN exactly for x < lo */
  pd_kcpu_v4f zero = {0}, xc = pd_kcpu_v4_sel(x >= lo, x, zero + lo); /* NaN: lo */
  xc = pd_kcpu_v4_sel(xc <= 0.0f, xc, zero);
  pd_kcpu_v4f t = xc * 1.44269504088896341f + 12582912.0f; /* 1.5 2^23 + n: n in the low bits */
  pd_kcpu_v4f n = t - 12582912.0f;
  pd_kcpu_v4f p = pd_kcpu_v4_exp_reduced(xc, n);
  pd_kcpu_v4f y = p * (pd_kcpu_v4f)(((pd_kcpu_v4i)t - (0x4B400000 - 127)) << 23);
  y = pd_kcpu_v4_sel(x < lo, zero, y);
  return pd_kcpu_v4_sel(x != x, x, y);
}

/* e^x for the exponent of pd_kcpu_v4_phi (x in [-112, 1e-7]): pd_kcpu_v4_exp's steps without
 * its overflow and NaN cases (Phi's other factor makes a NaN x NaN), n rounded by the 1.5 2^23
 * constant as pd_kcpu_v4_exp_nonpos, 2^n in two factors for the denormal results; 0 below lo.
 * In Phi, pd_kcpu_v4_exp's clamps and selects were a third of gelu's time. */
static inline pd_kcpu_v4f pd_kcpu_v4_exp_phi(pd_kcpu_v4f x) {
  const float lo = -103.97208404541016f; /* < ln(2^-150): e^x below it rounds to 0 */
  pd_kcpu_v4f zero = {0}, xc = pd_kcpu_v4_sel(x >= lo, x, zero + lo);
  pd_kcpu_v4f t = xc * 1.44269504088896341f + 12582912.0f; /* 1.5 2^23 + n: n in the low bits */
  pd_kcpu_v4f n = t - 12582912.0f;
  pd_kcpu_v4f p = pd_kcpu_v4_exp_reduced(xc, n);
  pd_kcpu_v4i ni = (pd_kcpu_v4i)t - 0x4B400000, n1 = ni >> 1, n2 = ni - n1;
  pd_kcpu_v4f y = p * (pd_kcpu_v4f)((n1 + 127) << 23) * (pd_kcpu_v4f)((n2 + 127) << 23);
  return pd_kcpu_v4_sel(x < lo, zero, y);
}

/* tanh x = sign(x) tanh |x|: an odd Taylor polynomial below |x| = 0.35 (the first dropped term
 * is under 2^-30 of the value there), else (1 - t) / (1 + t) with t = e^(-2|x|) in (0, 0.5). */
static inline pd_kcpu_v4f pd_kcpu_v4_tanh(pd_kcpu_v4f x) {
  pd_kcpu_v4i sign = (pd_kcpu_v4i)x & INT32_MIN;
  pd_kcpu_v4f a = (pd_kcpu_v4f)((pd_kcpu_v4i)x ^ sign), z = a * a;
  pd_kcpu_v4f s = z * (21844.0f / 6081075.0f) - 1382.0f / 155925.0f;
  s = s * z + 62.0f / 2835.0f;
  s = s * z - 17.0f / 315.0f;
  s = s * z + 2.0f / 15.0f;
  s = s * z - 1.0f / 3.0f;
  pd_kcpu_v4f small = a + a * z * s;
  pd_kcpu_v4f t = pd_kcpu_v4_exp(a * -2.0f);
  pd_kcpu_v4f big = (1.0f - t) / (1.0f + t); /* NaN for NaN */
  return (pd_kcpu_v4f)((pd_kcpu_v4i)pd_kcpu_v4_sel(a < 0.35f, small, big) | sign);
}

/* 1 / (1 + e^-x) = t / (1 + t) for x < 0, with t = e^-|x| in (0, 1]: no overflow, and the
 * denormal results of libm for x below -87.3. */
static inline pd_kcpu_v4f pd_kcpu_v4_sigmoid(pd_kcpu_v4f x) {
  pd_kcpu_v4f t = pd_kcpu_v4_exp((pd_kcpu_v4f)((pd_kcpu_v4i)x | INT32_MIN)), one = {1, 1, 1, 1};
  return pd_kcpu_v4_sel(x < 0.0f, t, one) / (1.0f + t);
}

/* Phi(x), the normal distribution function (1 + erf(x / sqrt 2)) / 2 (gelu's): from erfc(z) = k
 * e^(-z^2 + P(k)), k = 1 / (1 + z / 2), z = |x| / sqrt 2 (Numerical Recipes' Chebyshev fit,
 * relative error under 1.2e-7) over the vector e^x: Phi(x) = erfc(z) / 2 below 0, 1 - erfc(z) / 2
 * above, so that the small values of the negative side keep their digits (1 + erf would lose them).
 * P's coefficients innermost first. The exponent -z^2 + P(k) is carried as a sum s + lo (z^2's
 * rounding error and the sum's, TwoSum) and e^(s + lo) = e^s (1 + lo): rounded to one float (and z
 * = |x| / sqrt 2 itself rounded), -z^2 near -85 was off by up to 1e-5, 190 ulp of Phi(-12.8) (and
 * so was gelu's scalar code). |x| is taken at most PD_KCPU_PHI_AMAX, where Phi(-|x|) rounds to 0,
 * so that x^2 stays finite (inf - inf in the sums would give NaN). Written out per element (the
 * compiler's four lanes of the baseline target, e^x apart), gelu took 1.3 ns an element on two
 * AVX-512 cores, 9% of ERNIE 3.0 tiny's time. */
#define PD_KCPU_PHI_P                                                                         \
  0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, \
      0.37409196f, 1.00002368f, -1.26551223f
#define PD_KCPU_PHI_AMAX 14.85f
static inline pd_kcpu_v4f pd_kcpu_v4_phi(pd_kcpu_v4f x) {
  static const float c[] = {PD_KCPU_PHI_P};
  pd_kcpu_v4f a = (pd_kcpu_v4f)((pd_kcpu_v4i)x & INT32_MAX);
  a = pd_kcpu_v4_sel(a > PD_KCPU_PHI_AMAX, (pd_kcpu_v4f){0} + PD_KCPU_PHI_AMAX, a); /* NaN stays */
  pd_kcpu_v4f z = a * 0.70710678f, k = 1.0f / (1.0f + 0.5f * z), q = (pd_kcpu_v4f){0} + c[0];
  for (int i = 1; i < 10; i++) q = q * k + c[i];
  /* z^2 = a^2 / 2 = zz + ze exactly (Dekker's product, a split into 12-bit halves), then
   * s + lo = q - zz - ze (TwoSum) */
  pd_kcpu_v4f ah = (pd_kcpu_v4f)((pd_kcpu_v4i)a & -4096), al = a - ah, aa = a * a;
  pd_kcpu_v4f zz = 0.5f * aa, ze = 0.5f * (((ah * ah - aa) + 2.0f * ah * al) + al * al);
  pd_kcpu_v4f s = q - zz, bb = s - q, lo = ((q - (s - bb)) - (zz + bb)) - ze;
  pd_kcpu_v4f e = pd_kcpu_v4_exp_phi(s);
  pd_kcpu_v4f h = 0.5f * k * (e * (1.0f + lo)); /* e lo would be denormal (flushed) near 1e-33 */
  return pd_kcpu_v4_sel(x < 0.0f, h, 1.0f - h); /* NaN: 1 - NaN */
}

/* The functions; PD_KCPU_FM_EXP_NONPOS is e^x for x <= 0 only (pd_kcpu_v4_exp_nonpos),
 * PD_KCPU_FM_PHI the normal distribution function (pd_kcpu_v4_phi). */
enum { PD_KCPU_FM_EXP, PD_KCPU_FM_TANH, PD_KCPU_FM_SIGMOID, PD_KCPU_FM_EXP_NONPOS, PD_KCPU_FM_PHI };

static inline pd_kcpu_v4f pd_kcpu_v4_fm(int f, pd_kcpu_v4f v) {
  return f == PD_KCPU_FM_EXP          ? pd_kcpu_v4_exp(v)
         : f == PD_KCPU_FM_TANH       ? pd_kcpu_v4_tanh(v)
         : f == PD_KCPU_FM_SIGMOID    ? pd_kcpu_v4_sigmoid(v)
         : f == PD_KCPU_FM_PHI        ? pd_kcpu_v4_phi(v)
                                      : pd_kcpu_v4_exp_nonpos(v);
}

/* out[j] = f(x[j] - shift) for j < n, f one of PD_KCPU_FM_*; out may be x. Returns the sum of
 * the out[j], in double (the softmax's denominator; a caller that ignores it does not pay for
 * it once this is inlined). */
static inline double pd_kcpu_fastmath4_f32(int f, const float *x, float shift, float *out,
                                           int64_t n) {
  pd_kcpu_v2d s0 = {0}, s1 = {0};
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    pd_kcpu_v4f v;
    memcpy(&v, x + j, sizeof v);
    v = pd_kcpu_v4_fm(f, v - shift);
    memcpy(out + j, &v, sizeof v);
    s0 += (pd_kcpu_v2d){v[0], v[1]};
    s1 += (pd_kcpu_v2d){v[2], v[3]};
  }
  double sum = (s0[0] + s1[0]) + (s0[1] + s1[1]);
  if (j < n) { /* the last 1..3: the unused lanes compute f(-shift), unread */
    size_t k = (size_t)(n - j);
    pd_kcpu_v4f v = {0};
    memcpy(&v, x + j, k * sizeof(float));
    v = pd_kcpu_v4_fm(f, v - shift);
    memcpy(out + j, &v, k * sizeof(float));
    for (size_t i = 0; i < k; i++) sum += v[i];
  }
  return sum;
}

/* The largest of x[0..n) (n >= 1) as `if (x[j] > m) m = x[j]` from m = x[0] finds it (NaN past
 * x[0] skipped, NaN at x[0] kept), eight lanes at a time: the scalar loop is a chain of
 * dependent compares. */
static inline float pd_kcpu_max4_f32(const float *x, int64_t n) {
  pd_kcpu_v4f m0 = (pd_kcpu_v4f){0} + x[0], m1 = m0;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    pd_kcpu_v4f a, b;
    memcpy(&a, x + j, sizeof a);
    memcpy(&b, x + j + 4, sizeof b);
    m0 = pd_kcpu_v4_sel(a > m0, a, m0);
    m1 = pd_kcpu_v4_sel(b > m1, b, m1);
  }
  m0 = pd_kcpu_v4_sel(m1 > m0, m1, m0);
  float m = x[0];
  for (int k = 0; k < 4; k++) m = m0[k] > m ? m0[k] : m;
  for (; j < n; j++) m = x[j] > m ? x[j] : m;
  return m;
}

/* The kernels' entry points: the sixteen-lane instance where the CPU has AVX-512F, else the
 * eight-lane one where it has AVX2 and FMA. */
static inline double pd_kcpu_fastmath_f32(int f, const float *x, float shift, float *out,
                                          int64_t n) {
#if PD_KCPU_HAVE_AVX2
  int l = pd_kcpu_simd();
  if (l == PD_KCPU_SIMD_AVX512) return pd_kcpu_fastmath16_f32(f, true, x, shift, out, n);
  if (l == PD_KCPU_SIMD_AVX2) return pd_kcpu_fastmath8_f32(f, true, x, shift, out, n);
#endif
  return pd_kcpu_fastmath4_f32(f, x, shift, out, n);
}

/* out[j] = f(x[j]) for j < n, without the sum (the elementwise kernels); out may be x. */
static inline void pd_kcpu_map_f32(int f, const float *x, float *out, int64_t n) {
#if PD_KCPU_HAVE_AVX2
  int l = pd_kcpu_simd();
  if (l == PD_KCPU_SIMD_AVX512) {
    pd_kcpu_fastmath16_f32(f, false, x, 0.0f, out, n);
    return;
  }
  if (l == PD_KCPU_SIMD_AVX2) {
    pd_kcpu_fastmath8_f32(f, false, x, 0.0f, out, n);
    return;
  }
#endif
  pd_kcpu_fastmath4_f32(f, x, 0.0f, out, n); /* inlined: the unused sum is not computed */
}

static inline float pd_kcpu_max_f32(const float *x, int64_t n) {
#if PD_KCPU_HAVE_AVX2
  int l = pd_kcpu_simd();
  if (l == PD_KCPU_SIMD_AVX512) return pd_kcpu_max16_f32(x, n);
  if (l == PD_KCPU_SIMD_AVX2) return pd_kcpu_max8_f32(x, n);
#endif
  return pd_kcpu_max4_f32(x, n);
}

/* x[j] *= s for j < n. */
static inline void pd_kcpu_scale_f32(float *x, float s, int64_t n) {
#if PD_KCPU_HAVE_AVX2
  int l = pd_kcpu_simd();
  if (l == PD_KCPU_SIMD_AVX512) {
    pd_kcpu_scale16_f32(x, s, n);
    return;
  }
  if (l == PD_KCPU_SIMD_AVX2) {
    pd_kcpu_scale8_f32(x, s, n);
    return;
  }
#endif
  for (int64_t j = 0; j < n; j++) x[j] *= s;
}

#endif /* PD_KCPU_FASTMATH_f32 */
#endif /* PD_KCPU_FASTMATH_H */
