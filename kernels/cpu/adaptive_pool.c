/* adaptive_pool.c -- the CPU backend's adaptive pooling and its gradient (kernels.h:
 * adaptive_pool2d, adaptive_pool2d_grad), the loops pool2d's op ran on the host before
 * (adaptive_pool_t.h); planes split across the pool's threads, each plane's windows in order, so
 * the results do not depend on the thread count. Global average pooling in fp32 on AVX-512,
 * four planes at a time (conv_avx512.c's pd_kcpu_plane_means16_f32, the same bits). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels_int.h"

#include <string.h>

typedef struct apool_job {
  const pd_k_pool2d *p;
  const void *x, *dy;
  void *y, *dx;  /* one of them */
} apool_job;

/* Planes the forward loops interleave (adaptive_pool_t.h). */
enum { APOOL_K = 8 };

#define PD_KCPU_TEMPLATE "kernels/cpu/adaptive_pool_t.h"
#include "kernels/cpu/each_float.h"

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
/* Planes [b, e) of fp32 global average pooling on AVX-512 (conv_avx512.c). */
static void means16_range(void *ctx, int64_t b, int64_t e) {
  const apool_job *j = ctx;
  int64_t n = j->p->h * j->p->w;
  pd_kcpu_plane_means16_f32((const float *)j->x + b * n, n, e - b, (float *)j->y + b);
}
#endif

static pd_status run(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y, const void *dy,
                     void *dx) {
  pd_status st = y ? pd_k_adaptive_pool_check(dt, p, x, y, y)
                   : pd_k_adaptive_pool_check(dt, p, x, dy, dx);
  if (st || p->n * p->c == 0) return st;
  apool_job j = {p, x, dy, y, dx};
  /* A plane reads each of its h w elements about once. */
  int64_t per = p->h * p->w, grain = per < PD_KCPU_GRAIN ? PD_KCPU_GRAIN / per : 1;
  pd_kcpu_range_fn *fn = dt == PD_FP32 ? apool_range_f32 : apool_range_f64;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (dt == PD_FP32 && y && p->type == PD_K_POOL_AVG && p->oh == 1 && p->ow == 1 &&
      pd_kcpu_simd() == PD_KCPU_SIMD_AVX512)
    fn = means16_range;
#endif
  pd_kcpu_parallel(p->n * p->c, grain, fn, &j);
  return PD_OK;
}

pd_status pd_kcpu_adaptive_pool2d(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y) {
  return y ? run(dt, p, x, y, NULL, NULL) : pd_k_adaptive_pool_check(dt, p, x, y, y);
}

pd_status pd_kcpu_adaptive_pool2d_grad(pd_dtype dt, const pd_k_pool2d *p, const void *x,
                                       const void *y, const void *dy, void *dx) {
  (void)y;
  return run(dt, p, x, NULL, dy, dx);
}
