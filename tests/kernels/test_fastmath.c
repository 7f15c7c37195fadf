/* test_fastmath.c -- the vector e^x, tanh and logistic function of kernels/cpu/fastmath.h against
 * libm in double, through pd_kcpu_map_f32 (the elementwise kernels' entry): the worst error in
 * ulp over 2^24 floats spread over the whole range (every 256th bit pattern) and the edges (0,
 * -0, the ends of e^x's range, tanh's switch at 0.35, denormals, huge values, +-inf, NaN), with
 * the bounds fastmath.h states, once without and once with flush-to-zero; then the special
 * values exactly; the softmax's e^x for x <= 0 the same way (1 ulp, 0 below FLT_MIN), and the
 * normal distribution function Phi (gelu's) against erfc; then,
 * through pd_kcpu_fastmath_f32 (softmax's), the shift argument, every tail length in place and
 * the returned sum; and the vector max (pd_kcpu_max_f32) against the scalar loop. All of it for
 * each instance this CPU can run: the four-lane one, the eight-lane one of fastmath_avx2.c where
 * the CPU has AVX2 and FMA, and the sixteen-lane one of fastmath_avx512.c where it has AVX-512F
 * (pd_kcpu_simd_force picks); the wider instances also give the eight-lane one's bits.
 * Skipped where fastmath.h builds no vector code (the kernels call libm there). */
#include "config.h"

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"
#include "tests/tap.h"

#if PD_KCPU_FASTMATH_f32
/* |got - want| in units of the last place of a float at want (2^-149 below FLT_MIN), so that a
 * correctly rounded result is within 0.5. Where want rounds to +-inf, got must be that inf;
 * with flush-to-zero, 0 is exact for results below FLT_MIN. */
static double ulps(float got, double want, bool ftz) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : INFINITY;
  if (isinf((float)want)) return got == (float)want ? 0 : INFINITY;
  if (fabs(want) < FLT_MIN) return ftz && got == 0 ? 0 : fabs((double)got - want) / 0x1p-149;
  int e;
  frexp(want, &e); /* |want| in [2^(e-1), 2^e): an ulp there is 2^(e-24) */
  return fabs((double)got - want) / ldexp(1, e - 24);
}

static double ref(int f, double x) {
  return f == PD_KCPU_FM_EXP ? exp(x) : f == PD_KCPU_FM_TANH ? tanh(x) : 1 / (1 + exp(-x));
}

static const char *const names[] = {"e^x", "tanh", "the logistic function"};
static const char *inst = "";  /* the instance under test, for the messages */
/* fastmath.h's bounds (each the exhaustive worst case, rounded up). */
static const double bound[] = {1.0, 2.5, 2.5};

static void check_ulps(const float *x, float *y, int n, bool ftz) {
  for (int f = PD_KCPU_FM_EXP; f <= PD_KCPU_FM_SIGMOID; f++) {
    pd_kcpu_map_f32(f, x, y, n);
    double worst = 0;
    float at = 0;
    for (int i = 0; i < n; i++) {
      double u = ulps(y[i], ref(f, (double)x[i]), ftz);
      if (!(u <= worst)) {
        worst = u;
        at = x[i];
      }
    }
    ok(worst < bound[f], "%s%s within %g ulp of libm%s (worst %.3f at %a)", inst, names[f],
       bound[f], ftz ? " with flush-to-zero" : "", worst, (double)at);
  }
}

/* e^x for x <= 0 (the softmax's): within 1 ulp where e^x >= FLT_MIN, exactly 0 below; NaN for
 * NaN. Positive inputs are outside its domain and not looked at. */
static void check_nonpos(const float *x, float *y, int n, bool ftz) {
  pd_kcpu_map_f32(PD_KCPU_FM_EXP_NONPOS, x, y, n);
  double worst = 0;
  float at = 0;
  int zeros = 0, bad_zeros = 0;
  for (int i = 0; i < n; i++) {
    if (x[i] > 0) continue;
    double want = exp((double)x[i]), u;
    if (x[i] != x[i]) {
      u = y[i] != y[i] ? 0 : INFINITY;
    } else if (want < FLT_MIN) {
      zeros++;
      bad_zeros += y[i] != 0.0f;
      continue;
    } else {
      u = ulps(y[i], want, ftz);
    }
    if (!(u <= worst)) {
      worst = u;
      at = x[i];
    }
  }
  ok(worst < bound[PD_KCPU_FM_EXP], "%se^x for x <= 0 within %g ulp of libm%s (worst %.3f at %a)",
     inst, bound[PD_KCPU_FM_EXP], ftz ? " with flush-to-zero" : "", worst, (double)at);
  ok(zeros > 0 && bad_zeros == 0, "%se^x for x <= 0 is 0 where libm's is below FLT_MIN (%d of %d)",
     inst, zeros - bad_zeros, zeros);
}

/* The normal distribution function (gelu's) against 0.5 erfc(-x / sqrt 2) in double: within
 * PHI_BOUND ulp (Numerical Recipes' fit, its e^x and the steps between; the worst over the 2^24
 * inputs, rounded up), 0 or a denormal within PHI_BOUND units of 2^-149 on the far negative side;
 * then NaN, +-inf and +-0 exactly. */
#define PHI_BOUND 8.0
static void check_phi(const float *x, float *y, int n, bool ftz) {
  pd_kcpu_map_f32(PD_KCPU_FM_PHI, x, y, n);
  double worst = 0;
  float at = 0;
  for (int i = 0; i < n; i++) {
    double u = ulps(y[i], 0.5 * erfc(-(double)x[i] / sqrt(2.0)), ftz);
    if (!(u <= worst)) {
      worst = u;
      at = x[i];
    }
  }
  ok(worst < PHI_BOUND, "%sPhi within %g ulp of libm's erfc%s (worst %.3f at %a)", inst,
     PHI_BOUND, ftz ? " with flush-to-zero" : "", worst, (double)at);
  static const float in[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  float out[5];
  pd_kcpu_map_f32(PD_KCPU_FM_PHI, in, out, 5);
  ok(out[0] != out[0] && out[1] == 1 && out[2] == 0 && out[3] == 0.5f && out[4] == 0.5f,
     "%sPhi of NaN, inf, -inf, 0, -0 is NaN, 1, 0, 0.5, 0.5", inst);
}

static bool same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }

static void check_specials(void) {
  static const float in[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  static const float want[3][5] = {
      {NAN, INFINITY, 0.0f, 1.0f, 1.0f},
      {NAN, 1.0f, -1.0f, 0.0f, -0.0f},
      {NAN, 1.0f, 0.0f, 0.5f, 0.5f},
  };
  for (int f = PD_KCPU_FM_EXP; f <= PD_KCPU_FM_SIGMOID; f++) {
    float out[5];
    pd_kcpu_map_f32(f, in, out, 5);
    bool all = true;
    for (int i = 0; i < 5; i++) all = all && same(out[i], want[f][i]);
    ok(all, "%s%s of NaN, inf, -inf, 0, -0 is NaN, %g, %g, %g, %g%s", inst, names[f],
       (double)want[f][1], (double)want[f][2], (double)want[f][3], (double)want[f][4],
       f == PD_KCPU_FM_TANH ? " (signed)" : "");
  }
  static const float neg[] = {NAN, -INFINITY, 0.0f, -0.0f, -87.33654022216796875f,
                              -87.3365478515625f, -1e30f, -FLT_MAX};
  float out[8];
  pd_kcpu_map_f32(PD_KCPU_FM_EXP_NONPOS, neg, out, 8);
  ok(out[0] != out[0] && out[1] == 0 && out[2] == 1 && out[3] == 1 && out[4] >= FLT_MIN &&
     out[5] == 0 && out[6] == 0 && out[7] == 0,
     "%se^x for x <= 0 of NaN, -inf, 0, -0 is NaN, 0, 1, 1; FLT_MIN at ln(FLT_MIN) rounded up, "
     "0 a float below and for huge x", inst);
}

static void check_arrays(void) {
  /* The shift (the softmax's: the max), every tail length, in place; the sum of the outputs. */
  bool tails = true, sums = true;
  for (int n = 0; n <= 40; n++) {
    float a[40], b[40], mx = (float)(n - 1) * 0.37f - 2.0f;
    for (int i = 0; i < n; i++) a[i] = b[i] = (float)i * 0.37f - 2.0f;
    double sum = pd_kcpu_fastmath_f32(PD_KCPU_FM_EXP_NONPOS, a, mx, a, n), want = 0;
    for (int i = 0; i < n; i++) {
      tails = tails && ulps(a[i], exp((double)(b[i] - mx)), false) < bound[PD_KCPU_FM_EXP];
      want += a[i];
    }
    sums = sums && fabs(sum - want) <= 1e-15 * want;
  }
  ok(tails, "%se^(x - shift) on arrays of 0..40 elements, in place", inst);
  ok(sums, "%sthe returned sum is the outputs' sum", inst);
  /* The largest element, NaN where a scalar loop from x[0] keeps or skips it. */
  bool maxes = true;
  for (int n = 1; n <= 40; n++) {
    float a[40];
    for (int i = 0; i < n; i++) a[i] = (float)((i * 37 + n * 11) % 29) - 14.5f;
    for (int nan_at = -1; nan_at < n; nan_at += 7) {
      if (nan_at >= 0) a[nan_at] = NAN;
      float m = a[0];
      for (int i = 1; i < n; i++)
        if (a[i] > m) m = a[i];
      maxes = maxes && same(pd_kcpu_max_f32(a, n), m);
    }
  }
  ok(maxes, "%sthe largest of 1..40 elements, with NaNs, as the scalar loop finds it", inst);
  bool scaled = true;
  for (int n = 0; n <= 40; n++) {
    float a[40];
    for (int i = 0; i < n; i++) a[i] = (float)i - 3.25f;
    pd_kcpu_scale_f32(a, 0.5f, n);
    for (int i = 0; i < n; i++) scaled = scaled && a[i] == ((float)i - 3.25f) * 0.5f;
  }
  ok(scaled, "%sx * s on arrays of 0..40 elements", inst);
}

/* The sixteen-lane instance gives the eight-lane one's bits for every input and function (the
 * same steps and fused multiply-adds), so results do not depend on which of the two a CPU has. */
static void check_wide_same(const float *x, float *y, int n) {
  static const char *const fname[] = {"e^x", "tanh", "the logistic function", "e^x for x <= 0",
                                      "Phi"};
  float *y8 = malloc(sizeof *y8 * (size_t)n);
  if (!y8) {
    printf("Bail out! out of memory\n");
    exit(1);
  }
  for (int f = PD_KCPU_FM_EXP; f <= PD_KCPU_FM_PHI; f++) {
    pd_kcpu_simd_force(PD_KCPU_SIMD_AVX512);
    pd_kcpu_map_f32(f, x, y, n);
    pd_kcpu_simd_force(PD_KCPU_SIMD_AVX2);
    pd_kcpu_map_f32(f, x, y8, n);
    int differ = 0;
    for (int i = 0; i < n; i++) differ += memcmp(&y[i], &y8[i], sizeof y[i]) != 0;
    ok(differ == 0, "sixteen lanes: %s is bit for bit the eight lanes' (%d of %d differ)",
       fname[f], differ, n);
  }
  pd_kcpu_simd_force(PD_KCPU_SIMD_AVX512);
  free(y8);
}

int main(void) {
  enum { N = 1 << 24 };
  float *x = malloc(sizeof *x * N), *y = malloc(sizeof *y * N);
  if (!x || !y) return 1;
  for (uint32_t i = 0; i < N; i++) {
    uint32_t b = i * 256u + 97u;
    memcpy(&x[i], &b, sizeof b);
  }
  static const float edges[] = {
      0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, -1e-40f, FLT_MIN, -FLT_MIN, 1e-30f, -1e-30f, 1e-7f,
      0.34999999f, 0.35f, 0.35000002f, -0.35f, 1.0f, -1.0f, 9.0f, -9.0f, 20.0f, -20.0f,
      88.7228317f, 88.72283935546875f, 88.7228470f, 89.0f, -87.3365479f, -87.3365402f,
      -88.7228394f, -103.972076f, -103.972084f, -103.972092f, -104.0f, 1e30f, -1e30f, FLT_MAX,
      -FLT_MAX, INFINITY, -INFINITY, NAN};
  memcpy(x, edges, sizeof edges);
  fenv_t plain; /* the floating-point environment without flush-to-zero */
  fegetenv(&plain);
  static const char *const label[] = {"four lanes: ", "eight lanes (AVX2): ",
                                       "sixteen lanes (AVX-512): "};
  static const char *const needs[] = {"", "AVX2 and FMA", "AVX-512F"};
  for (int level = PD_KCPU_SIMD_AVX512; level >= PD_KCPU_SIMD_BASE; level--) {
    inst = label[level];
    if (pd_kcpu_simd_force(level) != level) {
      printf("ok %d # SKIP %sthis CPU (or target) has no %s\n", ++tap_count_, inst, needs[level]);
      continue;
    }
    fesetenv(&plain);
    check_ulps(x, y, N, false);
    check_nonpos(x, y, N, false);
    check_phi(x, y, N, false);
    if (pd_k_set_ftz_daz()) {
      check_ulps(x, y, N, true);
      check_nonpos(x, y, N, true);
      check_phi(x, y, N, true);
    } else {
      printf("ok %d # SKIP no flush-to-zero mode on this CPU\n", ++tap_count_);
    }
    fesetenv(&plain);
    check_specials();
    check_arrays();
    if (level == PD_KCPU_SIMD_AVX512) check_wide_same(x, y, N);
  }
  free(x);
  free(y);
  return tap_done();
}
#else
int main(void) {
  printf("1..0 # SKIP fastmath.h has no vector code for this target\n");
  return 0;
}
#endif
