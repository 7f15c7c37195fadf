/* interp.c -- the CPU backend's image resampling by separable tables and its gradient
 * (kernels.h: interp2d, interp2d_grad; the loops in interp_t.h): planes (an image's channel)
 * split across the pool's threads, each plane's outputs in row-major order; and its sampling at
 * grid points (grid_sample, grid_sample_grad): the sample points split across the threads
 * forward, the images backward, each image's points in order. The results do not depend on the
 * thread count. */
#include "config.h"

#include <math.h>
#include <string.h>

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

/* A grid_sample job: the forward pass (out = y) or the gradient (out = dx, out2 = dgrid, either
 * may be NULL). */
typedef struct gs_job {
  const pd_k_grid_sample *p;
  const void *x, *grid, *dy;
  void *out, *out2;
} gs_job;

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

pd_status pd_kcpu_grid_sample(pd_dtype dt, const pd_k_grid_sample *p, const void *x,
                              const void *grid, void *y) {
  pd_status st = pd_k_grid_sample_check(dt, p, x, grid, y);
  if (st || p->n * p->c == 0) return st;
  gs_job j = {p, x, grid, NULL, y, NULL};
  int64_t grain = p->c < PD_KCPU_GRAIN ? PD_KCPU_GRAIN / p->c : 1;
  pd_kcpu_parallel(p->n * p->oh * p->ow, grain, dt == PD_FP32 ? gs_fwd_f32 : gs_fwd_f64, &j);
  return PD_OK;
}

pd_status pd_kcpu_grid_sample_grad(pd_dtype dt, const pd_k_grid_sample *p, const void *x,
                                   const void *grid, const void *dy, void *dx, void *dgrid) {
  pd_status st = pd_k_grid_sample_check(dt, p, x, grid, dy);
  if (st || p->n == 0 || (!dx && !dgrid)) return st;
  if (p->c == 0) {  /* no channels: a zero grid gradient */
    if (dgrid) memset(dgrid, 0, (size_t)(p->n * p->oh * p->ow * 2) * pd_dtype_size(dt));
    return PD_OK;
  }
  gs_job j = {p, x, grid, dy, dx, dgrid};
  pd_kcpu_parallel(p->n, 1, dt == PD_FP32 ? gs_bwd_f32 : gs_bwd_f64, &j);
  return PD_OK;
}
