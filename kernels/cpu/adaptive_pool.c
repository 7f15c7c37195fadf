/* adaptive_pool.c -- the CPU backend's adaptive pooling and its gradient (kernels.h:
 * adaptive_pool2d, adaptive_pool2d_grad), the loops pool2d's op ran on the host before
 * (adaptive_pool_t.h); planes split across the pool's threads, each plane's windows in order, so
 * the results do not depend on the thread count. */
#include "config.h"
#include "kernels/cpu/cpu.h"
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

static pd_status run(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y, const void *dy,
                     void *dx) {
  pd_status st = y ? pd_k_adaptive_pool_check(dt, p, x, y, y)
                   : pd_k_adaptive_pool_check(dt, p, x, dy, dx);
  if (st || p->n * p->c == 0) return st;
  apool_job j = {p, x, dy, y, dx};
  /* A plane reads each of its h w elements about once. */
  int64_t per = p->h * p->w, grain = per < PD_KCPU_GRAIN ? PD_KCPU_GRAIN / per : 1;
  pd_kcpu_parallel(p->n * p->c, grain, dt == PD_FP32 ? apool_range_f32 : apool_range_f64, &j);
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
