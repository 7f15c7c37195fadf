/* optim.c -- the CPU backend's optimizer updates (opt: sgd, momentum, adam/adamw, rmsprop,
 * adagrad; kernels.h says the arithmetic), split across the thread pool; the typed loops come
 * from optim_t.h; and unscale, the gradients of fp16 training divided by the loss scale. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels_int.h"

#include <math.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "kernels/cpu/fastmath.h"
#if PD_KCPU_HAVE_AVX2
#include <immintrin.h>
#endif

/* An optimizer update split by pd_kcpu_parallel. */
typedef struct opt_job {
  pd_k_opt o;
  const void *p, *g, *s[3];
  void *po, *so[3];
} opt_job;

#define PD_KCPU_TEMPLATE "kernels/cpu/optim_t.h"
#include "kernels/cpu/each_float.h"

pd_status pd_kcpu_opt(pd_dtype dt, int64_t n, const pd_k_opt *o, const void *p, const void *g,
                      const void *const *s, void *p_out, void *const *s_out) {
  pd_status st = pd_k_opt_check(dt, n, o, p, g, s, p_out, s_out);
  if (st) return st;
  opt_job job = {.o = *o, .p = p, .g = g, .po = p_out};
  for (int i = 0; i < pd_k_opt_nstates(o); i++) {
    job.s[i] = s[i];
    job.so[i] = s_out[i];
  }
  /* sgd and momentum are memory-bound; the others take a square root and a division per
   * element and split sooner. */
  int64_t grain = o->kind == PD_K_OPT_SGD || o->kind == PD_K_OPT_MOMENTUM
                      ? PD_KCPU_GRAIN
                      : PD_KCPU_GRAIN_TRANSCENDENTAL;
  pd_kcpu_parallel(n, grain, dt == PD_FP32 ? opt_range_f32 : opt_range_f64, &job);
  return PD_OK;
}

/* unscale (kernels.h): the multiply and the finiteness test in one pass; x - x is 0 for a finite
 * x and NaN for an infinity or NaN, which a sum keeps (no branch in the loop). */
pd_status pd_kcpu_unscale(pd_dtype dt, int64_t n, const void *x, double inv_scale, void *out,
                          bool *found) {
  pd_status st = pd_k_unscale_check(dt, n, x, inv_scale, out, found);
  if (st) return st;
  bool bad = false;
#define UNSCALE_LOOP(T)                  \
  do {                                   \
    const T *xs = x, inv = (T)inv_scale; \
    T *o = out, acc = 0;                 \
    for (int64_t i = 0; i < n; i++) {    \
      T v = xs[i];                       \
      acc += v - v;                      \
      o[i] = v * inv;                    \
    }                                    \
    bad = acc != 0; /* NaN too */        \
  } while (0)
  if (dt == PD_FP32) UNSCALE_LOOP(float);
  else UNSCALE_LOOP(double);
#undef UNSCALE_LOOP
  if (bad) *found = true;
  return PD_OK;
}
