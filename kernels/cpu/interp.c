/* interp.c -- the CPU backend's image resampling by separable tables and its gradient
 * (kernels.h: interp2d, interp2d_grad; the loops in interp_t.h): planes (an image's channel)
 * split across the pool's threads, each plane's outputs in row-major order, so the results do
 * not depend on the thread count. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels_int.h"

typedef struct interp_job {
  const pd_k_interp2d *p;
  const void *src; /* x, or dy */
  void *dst;       /* y, or dx */
} interp_job;

/* Strides of a plane's elements (rows, columns) and of the planes (images, channels). */
typedef struct interp_strides {
  int64_t n, c, y, x;
} interp_strides;

static interp_strides strides_of(const pd_k_interp2d *p, int64_t h, int64_t w) {
  return p->nhwc ? (interp_strides){h * w * p->c, 1, w * p->c, p->c}
                 : (interp_strides){p->c * h * w, h * w, w, 1};
}

#define PD_KCPU_TEMPLATE "kernels/cpu/interp_t.h"
#include "kernels/cpu/each_float.h"

static pd_status run(pd_dtype dt, const pd_k_interp2d *p, const void *src, void *dst, bool grad) {
  pd_status st = pd_k_interp2d_check(dt, p, src, dst);
  if (st || p->n * p->c == 0) return st;
  interp_job j = {p, src, dst};
  int64_t per = p->oh * p->ow, grain = per < PD_KCPU_GRAIN ? PD_KCPU_GRAIN / per : 1;
  pd_kcpu_range_fn *fn = dt == PD_FP32 ? (grad ? interp_bwd_f32 : interp_fwd_f32)
                                       : (grad ? interp_bwd_f64 : interp_fwd_f64);
  pd_kcpu_parallel(p->n * p->c, grain, fn, &j);
  return PD_OK;
}

pd_status pd_kcpu_interp2d(pd_dtype dt, const pd_k_interp2d *p, const void *x, void *y) {
  return run(dt, p, x, y, false);
}

pd_status pd_kcpu_interp2d_grad(pd_dtype dt, const pd_k_interp2d *p, const void *dy, void *dx) {
  return run(dt, p, dy, dx, true);
}
