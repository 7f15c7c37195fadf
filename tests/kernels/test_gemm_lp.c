/* test_gemm_lp.c -- the low-precision products of mixed precision (gemm_lp, kernels/cpu/gemm_lp.c
 * and gemm_amx.c) and the 16-bit float conversions under them (base/dtype.h):
 * - the backend's cast and fill to and from fp16 and bf16;
 * - bf16 and fp16 rounding against the CPU's own conversion instructions (vcvtneps2bf16,
 *   vcvtps2ph) over 2^24 floats spread across the whole range, where the CPU has them, and
 *   against values worked out by hand (ties, overflow, denormals, NaN); the vector fp16
 *   rounding of gemm_lp's operands against the scalar one;
 * - gemm_lp against a double-precision product of the operands rounded by the test (so every
 *   product is exact and only the fp32 sums differ: bounded by k 2^-23 of the sum of the
 *   terms' magnitudes), and against the fp32 GEMM within bf16's / fp16's rounding of the
 *   operands; on many shapes (odd sizes, every transpose, alpha, beta, bias, batches with
 *   broadcast strides), on AMX where the CPU has it and through the fallback (AVX2 forced),
 *   on three threads; the argument checks. */
#include "config.h"

#include "kernels/cpu/fastmath.h"
#include "kernels/cpu/gemm_amx.h"
#include "tests/kernels/kt.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define X86 0
#endif

/* ---- conversions ---- */

static float f_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#if X86
static bool cpu_has_bf16(void) {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) &&
         pd_kcpu_simd() == PD_KCPU_SIMD_AVX512;
}
static bool cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}

__attribute__((target("avx512f,avx512bf16,avx512vl"))) static uint16_t hw_bf16(float f) {
  __m128bh h = _mm_cvtneps_pbh(_mm_set1_ps(f));
  uint16_t out[8];
  memcpy(out, &h, sizeof out);
  return out[0];
}
__attribute__((target("f16c"))) static uint16_t hw_fp16(float f) {
  return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set1_ps(f), _MM_FROUND_TO_NEAREST_INT), 0);
}
__attribute__((target("f16c"))) static float hw_fp16_back(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_set1_epi16((short)h)));
}
#else
static bool cpu_has_bf16(void) { return false; }
static bool cpu_has_f16c(void) { return false; }
static uint16_t hw_bf16(float f) { return pd_bf16_from_f32(f); }
static uint16_t hw_fp16(float f) { return pd_fp16_from_f32(f); }
static float hw_fp16_back(uint16_t h) { return pd_fp16_to_f32(h); }
#endif

static void test_conversions(void) {
  /* by hand */
  is_int(pd_bf16_from_f32(1.0f), 0x3f80, "bf16(1)");
  is_int(pd_bf16_from_f32(f_of(0x3f808000)), 0x3f80, "bf16: a tie rounds to even (down)");
  is_int(pd_bf16_from_f32(f_of(0x3f818000)), 0x3f82, "bf16: a tie rounds to even (up)");
  is_int(pd_bf16_from_f32(f_of(0x3f808001)), 0x3f81, "bf16: past the tie rounds up");
  is_int(pd_bf16_from_f32(f_of(0x7f7fffff)), 0x7f80, "bf16: FLT_MAX rounds to inf");
  is_int(pd_bf16_from_f32(-__builtin_inff()), 0xff80, "bf16(-inf)");
  ok((pd_bf16_from_f32(f_of(0x7f800001)) & 0x7fff) > 0x7f80, "bf16: a NaN whose payload is "
     "in the low half stays NaN");
  is_close(pd_bf16_to_f32(0x4049), 3.140625, 0, "bf16 0x4049 is 3.140625");
  is_int(pd_fp16_from_f32(65504.0f), 0x7bff, "fp16(65504), the largest");
  is_int(pd_fp16_from_f32(65519.99f), 0x7bff, "fp16: just under the tie with 65536");
  is_int(pd_fp16_from_f32(65520.0f), 0x7c00, "fp16: 65520 rounds to inf");
  is_int(pd_fp16_from_f32(-1e9f), 0xfc00, "fp16: -1e9 is -inf");
  is_int(pd_fp16_from_f32(0x1p-24f), 0x0001, "fp16: 2^-24, the smallest denormal");
  is_int(pd_fp16_from_f32(0x1p-25f), 0x0000, "fp16: 2^-25 (a tie) rounds to 0");
  is_int(pd_fp16_from_f32(0x1.8p-25f), 0x0001, "fp16: 1.5 2^-25 rounds to 2^-24");
  is_int(pd_fp16_from_f32(0x1.ffcp-15f), 0x0400, "fp16: rounding up into the normals");
  is_int(pd_fp16_from_f32(1.0f + 0x1p-11f), 0x3c00, "fp16: 1 + 2^-11 (a tie) rounds to 1");
  is_int(pd_fp16_from_f32(-2.0f), 0xc000, "fp16(-2)");
  ok(pd_fp16_to_f32(pd_fp16_from_f32(__builtin_nanf(""))) != pd_fp16_to_f32(0x7e00) ||
         isnan(pd_fp16_to_f32(pd_fp16_from_f32(__builtin_nanf("")))), "fp16: NaN stays NaN");
  is_close(pd_fp16_to_f32(0x0001), 0x1p-24, 0, "fp16 0x0001 back");
  is_close(pd_fp16_to_f32(0x83ff), -0x3ffp-24, 0, "fp16 0x83ff back (a negative denormal)");

  /* against the hardware, every 256th float (NaNs: both NaN) */
  bool hb = cpu_has_bf16(), hf = cpu_has_f16c();
  int64_t bad_b = 0, bad_f = 0, bad_back = 0;
  for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 256) {
    float f = f_of((uint32_t)u + (uint32_t)(u >> 8 & 0xff)); /* vary the low bits too */
    bool nan = isnan(f);
    uint32_t bits = (uint32_t)u + (uint32_t)(u >> 8 & 0xff);
    bool denormal = (bits & 0x7f800000u) == 0 && (bits & 0x7fffffu) != 0;
    if (hb && !denormal) { /* the instruction flushes denormals (bits: DAZ makes them == 0) */
      uint16_t want = hw_bf16(f), got = pd_bf16_from_f32(f);
      if (nan ? !isnan(pd_bf16_to_f32(got)) : got != want) bad_b++;
    }
    if (hf) {
      uint16_t want = hw_fp16(f), got = pd_fp16_from_f32(f);
      if (nan ? !isnan(pd_fp16_to_f32(got)) : got != want) bad_f++;
      if ((u & 0xffff00) == 0) {
        uint16_t h = (uint16_t)(u >> 24 | (u >> 16 & 0xff) << 8);
        float back = pd_fp16_to_f32(h), hw = hw_fp16_back(h);
        if (!(back == hw || (isnan(back) && isnan(hw)))) bad_back++;
      }
    }
  }
  if (hb) is_int(bad_b, 0, "bf16 rounding: the same bits as vcvtneps2bf16 on 2^24 floats (denormals aside, which it "
                        "flushes to 0)");
  else tap_skip("no AVX512-BF16 to compare bf16 rounding with");
  if (hf) {
    is_int(bad_f, 0, "fp16 rounding: the same bits as vcvtps2ph on 2^24 floats");
    is_int(bad_back, 0, "fp16 to fp32: the same as vcvtph2ps");
  } else {
    tap_skip("no F16C to compare fp16 rounding with");
  }
}

/* gemm_lp's fp16 rounding of its operands by AVX-512F's conversions (fastmath.h) against
 * pd_fp16_round, bit for bit (NaNs both NaN), on 2^22 floats across the range in runs of odd
 * lengths (the masked tail), in the default floating-point mode and under FTZ/DAZ (as kernels
 * run inside the library: pd_k_fp_enter). */
static void test_round16(void) {
#if PD_KCPU_HAVE_AVX512
  if (pd_kcpu_simd() != PD_KCPU_SIMD_AVX512) {
    tap_skip("no AVX-512F: gemm_lp rounds fp16 in C");
    return;
  }
  enum { N = 1 << 12 };
  float *src = malloc(N * sizeof *src), *dst = malloc(N * sizeof *dst);
  int64_t bad[2] = {0, 0};
  for (int mode = 0; mode < 2; mode++) {
    pd_k_fpmode fm;
    memset(&fm, 0, sizeof fm);
    if (mode) fm = pd_k_fp_enter();
    for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += (uint64_t)N * 1024) {
      for (int i = 0; i < N; i++) src[i] = f_of((uint32_t)(base + (uint64_t)i * 1021));
      int64_t len = N - (int64_t)(base >> 22 & 15); /* tails of 1 to 15 elements too */
      pd_kcpu_round16_f16(src, dst, len);
      for (int64_t i = 0; i < len; i++) {
        float want = pd_fp16_round(src[i]);
        if (isnan(want) ? !isnan(dst[i]) : memcmp(&want, &dst[i], sizeof want) != 0) bad[mode]++;
      }
    }
    if (mode) pd_k_fp_leave(fm);
  }
  free(src);
  free(dst);
  is_int(bad[0], 0, "fp16 rounding by AVX-512F: pd_fp16_round's bits on 2^22 floats");
  is_int(bad[1], 0, "and under FTZ/DAZ");
#else
  tap_skip("no AVX-512 build: gemm_lp rounds fp16 in C");
#endif
}

/* The backend's cast and fill to and from the 16-bit floats. */
static void test_cast(void) {
  const float f[5] = {1.0f, -2.5f, 65520.0f, 0x1.0101p0f, -0.0f};
  uint16_t h[5], b[5];
  float back[5];
  int32_t i32[5];
  uint8_t bl[5];
  bool good = !K->cast(PD_FP32, f, PD_FP16, h, 5) && !K->cast(PD_FP32, f, PD_BF16, b, 5);
  for (int i = 0; good && i < 5; i++)
    good = h[i] == pd_fp16_from_f32(f[i]) && b[i] == pd_bf16_from_f32(f[i]);
  ok(good, "cast fp32 -> fp16, bf16: the rounding of base/dtype.h");
  ok(!K->cast(PD_BF16, b, PD_FP32, back, 5) && back[0] == 1.0f && back[1] == -2.5f &&
         back[2] == 65536.0f && back[3] == 0x1.02p0f,
     "cast bf16 -> fp32 (65520 is 65536 in bf16; 1 + 2^-8 + 2^-16 rounds up to 1 + 2^-7)");
  ok(!K->cast(PD_FP16, h, PD_FP32, back, 5) && back[2] == __builtin_inff() &&
         back[3] == 0x1.01p0f,
     "cast fp16 -> fp32 (65520 overflowed to inf; 1 + 2^-8 + 2^-16 to 1 + 2^-8)");
  ok(!K->cast(PD_FP16, h, PD_INT32, i32, 2) && i32[0] == 1 && i32[1] == -2,
     "cast fp16 -> int32 truncates");
  ok(!K->cast(PD_BF16, b, PD_BOOL, bl, 5) && bl[0] == 1 && bl[4] == 0,
     "cast bf16 -> bool: -0 is false");
  uint16_t fill[3] = {0, 0, 0x7777}, want = pd_bf16_from_f32(0.1f);
  ok(!K->fill(PD_BF16, 2, fill, 0.1) && fill[0] == want && fill[1] == want && fill[2] == 0x7777,
     "fill bf16: two elements of 2 bytes");
}

/* ---- gemm_lp ---- */

static double rnd(pd_dtype lp, float f) {
  return lp == PD_BF16 ? (double)pd_bf16_round(f) : (double)pd_fp16_round(f);
}

typedef struct shape {
  bool ta, tb;
  int64_t batch, m, n, k;
  double alpha, beta;
  bool bias, bcast_b;
} shape;

/* One case: returns whether both checks hold (reported by the caller once per mode). */
static bool check_case(pd_dtype lp, const shape *s, const char *mode, double *worst) {
  int64_t lda = (s->ta ? s->m : s->k) + 3, ldb = (s->tb ? s->k : s->n) + 1, ldc = s->n + 2;
  int64_t sa = (s->ta ? s->k : s->m) * lda, sb = s->bcast_b ? 0 : (s->tb ? s->n : s->k) * ldb;
  int64_t sc = s->m * ldc;
  int64_t na = sa * s->batch + 1, nb = (s->bcast_b ? (s->tb ? s->n : s->k) * ldb : sb * s->batch) + 1;
  float *a = kt_random(PD_FP32, na, -2, 2), *b = kt_random(PD_FP32, nb, -2, 2);
  float *c = kt_random(PD_FP32, sc * s->batch + 1, -1, 1), *bias = kt_random(PD_FP32, s->n + 1, -1, 1);
  float *c0 = kt_alloc((size_t)(sc * s->batch + 1) * sizeof(float));
  float *cf = kt_alloc((size_t)(sc * s->batch + 1) * sizeof(float));
  memcpy(c0, c, (size_t)(sc * s->batch + 1) * sizeof(float));
  memcpy(cf, c, (size_t)(sc * s->batch + 1) * sizeof(float));
  pd_status st = K->gemm_lp(lp, s->ta, s->tb, s->batch, s->m, s->n, s->k, s->alpha, a, lda, sa,
                            b, ldb, sb, s->beta, c, ldc, sc, s->bias ? bias : NULL);
  bool good = st == PD_OK;
  if (!good) printf("# %s: status %d\n", mode, (int)st);
  for (int64_t p = 0; good && p < s->batch; p++) {
    const float *ap = a + p * sa, *bp = b + p * sb;
    /* the fp32 product, for the bound against unrounded operands */
    K->gemm(PD_FP32, s->ta, s->tb, s->m, s->n, s->k, s->alpha, ap, lda, bp, ldb, s->beta,
            cf + p * sc, ldc);
    for (int64_t i = 0; i < s->m; i++)
      for (int64_t j = 0; j < s->n; j++) {
        double sum = 0, mag = 0, mag_raw = 0;
        for (int64_t q = 0; q < s->k; q++) {
          float x = s->ta ? ap[q * lda + i] : ap[i * lda + q];
          float y = s->tb ? bp[j * ldb + q] : bp[q * ldb + j];
          double t = rnd(lp, x) * rnd(lp, y);
          sum += t;
          mag += fabs(t);
          mag_raw += fabs((double)x * y);
        }
        double old = c0[p * sc + i * ldc + j], bi = s->bias ? bias[j] : 0;
        double want = s->alpha * sum + (s->beta != 0 ? s->beta * old : 0) + bi;
        double got = c[p * sc + i * ldc + j];
        double scale = fabs(s->alpha) * mag + fabs(s->beta * old) + fabs(bi);
        double tol = (double)(s->k + 3) * 0x1p-23 * scale + 1e-30;
        double err = fabs(got - want) / (scale > 0 ? scale : 1);
        if (err > *worst) *worst = err;
        if (!(fabs(got - want) <= tol)) {
          printf("# %s %s ta %d tb %d [%lld] (%lld, %lld): got %.9g want %.9g (tol %.3g)\n",
                 mode, pd_dtype_name(lp), s->ta, s->tb, (long long)p, (long long)i,
                 (long long)j, got, want, tol);
          good = false;
          break;
        }
        /* against fp32: each operand within half an ulp of the low precision (2^-8 bf16,
         * 2^-11 fp16), so a product within twice that */
        double u = lp == PD_BF16 ? 0x1p-8 : 0x1p-11;
        double f32 = cf[p * sc + i * ldc + j] + bi;
        double tolf = 2.01 * u * fabs(s->alpha) * mag_raw + tol;
        if (!(fabs(got - f32) <= tolf)) {
          printf("# %s: against fp32 got %.9g, fp32 %.9g (tol %.3g)\n", mode, got, f32, tolf);
          good = false;
          break;
        }
      }
  }
  /* the padding after each C is not written */
  for (int64_t p = 0; good && p < s->batch; p++)
    for (int64_t i = 0; i < s->m; i++)
      for (int64_t j = s->n; j < ldc; j++)
        if (c[p * sc + i * ldc + j] != c0[p * sc + i * ldc + j]) good = false;
  free(a), free(b), free(c), free(c0), free(cf), free(bias);
  return good;
}

static const shape shapes[] = {
    {false, false, 1, 1, 1, 1, 1, 0, false, false},
    {false, false, 1, 16, 16, 32, 1, 0, false, false},
    {false, false, 1, 17, 33, 31, 1, 0, false, false},
    {false, true, 1, 37, 29, 70, 0.5, 0, false, false},
    {true, false, 1, 45, 50, 33, 1, 1, false, false},
    {true, true, 1, 7, 5, 3, -1.5, 0.25, true, false},
    {false, false, 1, 64, 64, 64, 1, 0, true, false},
    {false, false, 1, 100, 130, 300, 1, 0, true, false},   /* split across threads */
    {false, true, 1, 256, 80, 200, 1, 0, false, false},    /* dX of a layer */
    {true, false, 1, 120, 96, 256, 1, 0, false, false},    /* dW of a layer */
    {true, true, 1, 33, 140, 129, 2, -1, true, false},
    {false, false, 3, 9, 21, 40, 1, 0.5, false, false},
    {false, true, 4, 12, 10, 48, 1, 0, false, true},       /* B broadcast */
    {false, false, 1, 5, 7, 0, 1, 0.5, true, false},       /* k 0: beta C + bias */
    {false, false, 1, 5, 7, 9, 0, 1, false, false},        /* alpha 0 */
};

static void test_products(const char *mode) {
  for (int l = 0; l < 2; l++) {
    pd_dtype lp = l ? PD_FP16 : PD_BF16;
    bool all = true;
    double worst = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
      all &= check_case(lp, &shapes[i], mode, &worst);
    ok(all, "gemm_lp %s (%s): %zu shapes against the rounded operands' product (worst %.2g of "
       "the terms' magnitude) and fp32's", pd_dtype_name(lp), mode,
       sizeof shapes / sizeof shapes[0], worst);
  }
}

static void test_checks(void) {
  float x[4] = {0};
  is_int(K->gemm_lp(PD_FP32, false, false, 1, 1, 1, 1, 1, x, 1, 0, x, 1, 0, 0, x + 2, 1, 0,
                    NULL),
         PD_EUNSUPPORTED, "gemm_lp: fp32 is not a low precision");
  is_int(K->gemm_lp(PD_BF16, false, false, -1, 1, 1, 1, 1, x, 1, 0, x, 1, 0, 0, x + 2, 1, 0,
                    NULL),
         PD_EINVAL, "gemm_lp: negative batch");
  is_int(K->gemm_lp(PD_BF16, false, false, 1, 2, 2, 2, 1, x, 1, 0, x, 2, 0, 0, x + 2, 2, 0,
                    NULL),
         PD_EINVAL, "gemm_lp: lda narrower than K");
  is_int(K->gemm_lp(PD_BF16, false, false, 1, 1, 1, 1, 1, x, 1, -1, x, 1, 0, 0, x + 2, 1, 0,
                    NULL),
         PD_EINVAL, "gemm_lp: negative stride");
}

int main(int argc, char **argv) {
  (void)argc;
  kt_begin(argv);
  test_conversions();
  test_round16();
  test_cast();
  test_checks();
  if (pd_kcpu_amx_bf16()) test_products("AMX");
  else tap_skip("this CPU (or OS) has no AMX-BF16: the fallback only");
  pd_kcpu_simd_force(PD_KCPU_SIMD_AVX2);
  ok(!pd_kcpu_amx_bf16(), "AVX2 forced: no AMX");
  test_products("fallback");
  return tap_done();
}
