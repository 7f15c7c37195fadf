/* dropout.c -- the CPU backend's dropout and dropout_grad (kernels.h): the mask from draws the
 * caller made with uniform (so the CPU and the GPU drop the same elements), the products in
 * double rounded to the element type once (the typed loops: dropout_t.h, also compiled for
 * AVX-512); elements split across the pool's threads. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels_int.h"

typedef struct drop_job {
  const void *x;
  const float *u;
  const uint8_t *m;
  double p, scale;
  void *out;
  uint8_t *mask;
} drop_job;

#define DROP_ATTR
#define PD_KCPU_TEMPLATE "kernels/cpu/dropout_t.h"
#include "kernels/cpu/each_float.h"
#undef DROP_ATTR
/* An AVX-512 instance, chosen at run time (the same values: products in double rounded once,
 * no sums): the baseline's SSE2 converts two floats to double at a time. */
#if PD_KCPU_HAVE_AVX512
#define DROP_ATTR __attribute__((target("avx512f,avx512bw")))
#define PD_KCPU_TEMPLATE "kernels/cpu/dropout_t.h"
#define PD_KCPU_EACH_SUFFIX avx512
#include "kernels/cpu/each_float.h"
#undef DROP_ATTR
#define DROP_FN(dt, fn)                                                               \
  (pd_kcpu_simd() >= PD_KCPU_SIMD_AVX512 ? ((dt) == PD_FP32 ? fn##_f32_avx512 : fn##_f64_avx512) \
                                         : ((dt) == PD_FP32 ? fn##_f32 : fn##_f64))
#else
#define DROP_FN(dt, fn) ((dt) == PD_FP32 ? fn##_f32 : fn##_f64)
#endif

pd_status pd_kcpu_dropout(pd_dtype dt, int64_t n, const void *x, const float *u, double p,
                          double scale, void *out, uint8_t *mask) {
  pd_status st = pd_k_dropout_check(dt, n, p, scale, x, out);
  if (st || n == 0) return st;
  drop_job j = {.x = x, .u = u, .p = p, .scale = scale, .out = out, .mask = mask};
  pd_kcpu_parallel(n, PD_KCPU_GRAIN, DROP_FN(dt, drop_range), &j);
  return PD_OK;
}

pd_status pd_kcpu_dropout_grad(pd_dtype dt, int64_t n, const void *dy, const uint8_t *mask,
                               double scale, void *dx) {
  pd_status st = pd_k_dropout_check(dt, n, 0, scale, dy, dx);
  if (st || n == 0) return st;
  drop_job j = {.x = dy, .m = mask, .scale = scale, .out = dx};
  pd_kcpu_parallel(n, PD_KCPU_GRAIN, DROP_FN(dt, drop_grad_range), &j);
  return PD_OK;
}
