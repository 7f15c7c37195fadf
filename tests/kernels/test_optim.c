/* test_optim.c -- the CPU backend's Adam / AdamW update (kernels/cpu/optim_t.h) at each
 * instruction set it has (pd_kcpu_simd: the scalar and two-lane SSE2 loop; AVX2, four lanes) on
 * random states, fp32 and fp64, lengths that leave every remainder of the four-lane loop and
 * split across threads: every instance gives exactly the bits of kernels.h's formula computed
 * here element by element in double (the vector code rounds each product and sum as the scalar
 * code does), in place and into other buffers. The ops' own tests (tests/ops/test_kern_optim.c)
 * check the update against hand-computed values. */
#include "config.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"
#include "tests/kernels/kt.h"

#include <math.h>

/* Element i of a T array as double, and a double stored as T. */
static double get(pd_dtype dt, const void *x, int64_t i) {
  return dt == PD_FP32 ? (double)((const float *)x)[i] : ((const double *)x)[i];
}
static void put(pd_dtype dt, void *x, int64_t i, double v) {
  if (dt == PD_FP32) ((float *)x)[i] = (float)v;
  else ((double *)x)[i] = v;
}

/* kernels.h's Adam, one element at a time, into p2, m2o and v2o. */
static void adam_ref(pd_dtype dt, int64_t n, const pd_k_opt *o, const void *p, const void *g,
                     const void *m, const void *v, void *p2, void *m2o, void *v2o) {
  for (int64_t i = 0; i < n; i++) {
    double gi = get(dt, g, i);
    double m1 = o->beta1 * get(dt, m, i) + (1 - o->beta1) * gi;
    double m2 = o->beta2 * get(dt, v, i) + (1 - o->beta2) * gi * gi;
    put(dt, m2o, i, m1);
    put(dt, v2o, i, m2);
    put(dt, p2, i, get(dt, p, i) * (1 - o->decay) - o->lr * (m1 / (sqrt(m2) + o->eps)));
  }
}

static void test_adam(void) {
  const int64_t lens[] = {1, 3, 4, 5, 7, 1037, 40003};
  const double decays[] = {0, 1e-4};   /* Adam; AdamW's decoupled decay lr * coeff */
#if PD_KCPU_HAVE_AVX2
  int best = pd_kcpu_simd_force(PD_KCPU_SIMD_AVX512);
#else
  int best = 0;
#endif
  for (size_t t = 0; t < PD_ARRAY_LEN(kt_float_types); t++) {
    pd_dtype dt = kt_float_types[t];
    size_t es = pd_dtype_size(dt);
    for (size_t k = 0; k < PD_ARRAY_LEN(lens); k++) {
      for (size_t d = 0; d < PD_ARRAY_LEN(decays); d++) {
        int64_t n = lens[k];
        pd_k_opt o = {.kind = PD_K_OPT_ADAM, .lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999,
                      .eps = 1e-8, .decay = decays[d]};
        void *p = kt_random(dt, n, -2, 2), *g = kt_random(dt, n, -1, 1);
        void *m = kt_random(dt, n, -0.1, 0.1), *v = kt_random(dt, n, 0, 0.01);
        void *want[3] = {kt_alloc((size_t)n * es), kt_alloc((size_t)n * es),
                         kt_alloc((size_t)n * es)};
        adam_ref(dt, n, &o, p, g, m, v, want[0], want[1], want[2]);
        bool good = true;
        for (int level = 0; level <= best; level++) {
#if PD_KCPU_HAVE_AVX2
          pd_kcpu_simd_force(level);
#endif
          /* Into other buffers, then in place (p_out == p, s_out == s) on copies. */
          void *po = kt_alloc((size_t)n * es), *so[2] = {kt_alloc((size_t)n * es),
                                                        kt_alloc((size_t)n * es)};
          const void *s[2] = {m, v};
          good = good && K->opt(dt, n, &o, p, g, s, po, so) == PD_OK &&
                 memcmp(po, want[0], (size_t)n * es) == 0 &&
                 memcmp(so[0], want[1], (size_t)n * es) == 0 &&
                 memcmp(so[1], want[2], (size_t)n * es) == 0;
          memcpy(po, p, (size_t)n * es);
          memcpy(so[0], m, (size_t)n * es);
          memcpy(so[1], v, (size_t)n * es);
          const void *si[2] = {so[0], so[1]};
          good = good && K->opt(dt, n, &o, po, g, si, po, so) == PD_OK &&
                 memcmp(po, want[0], (size_t)n * es) == 0 &&
                 memcmp(so[0], want[1], (size_t)n * es) == 0 &&
                 memcmp(so[1], want[2], (size_t)n * es) == 0;
          free(po), free(so[0]), free(so[1]);
        }
        ok(good, "adam %s n = %lld decay %g: levels 0 to %d give the formula's bits, into other "
           "buffers and in place", pd_dtype_name(dt), (long long)n, decays[d], best);
        free(p), free(g), free(m), free(v), free(want[0]), free(want[1]), free(want[2]);
      }
    }
  }
#if PD_KCPU_HAVE_AVX2
  pd_kcpu_simd_force(best);
#endif
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  kt_begin(argv);
  test_adam();
  return tap_done();
}
