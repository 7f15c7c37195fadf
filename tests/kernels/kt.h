/* kt.h -- helpers shared by the kernel tests: a seeded test-data generator, dtype-generic
 * element access, array comparison against a double-precision reference, and a central
 * finite-difference gradient checker. Header-only (static functions), like tests/tap.h. */
#ifndef PD_TESTS_KT_H
#define PD_TESTS_KT_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tests/tap.h"

#define KT_UNUSED __attribute__((unused))

static const pd_k_backend *K;  /* set by kt_begin */
static const pd_dtype kt_float_types[] = {PD_FP32, PD_FP64};

/* splitmix64: test data only (the kernels' generator is tested separately). */
static uint64_t kt_state = 12345;
static KT_UNUSED double kt_rand(void) {
  uint64_t z = (kt_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1p-53;
}
static KT_UNUSED double kt_uniform(double lo, double hi) { return lo + (hi - lo) * kt_rand(); }

/* Start a kernel test: three threads unless PDLANG_THREADS says otherwise (so the parallel code
 * paths run, with uneven splits, on any machine), then set up. */
static KT_UNUSED void kt_begin(char **argv) {
  (void)argv;
  setenv("PDLANG_THREADS", "3", 0);
  pd_k_init();
  K = pd_k_cpu();
}

static KT_UNUSED void *kt_alloc(size_t bytes) {
  void *p = calloc(bytes ? bytes : 1, 1);
  if (!p) {
    printf("Bail out! out of memory\n");
    exit(1);
  }
  return p;
}

static KT_UNUSED double kt_get(pd_dtype dt, const void *b, int64_t i) {
  switch (dt) {
    case PD_FP32: return ((const float *)b)[i];
    case PD_FP64: return ((const double *)b)[i];
    case PD_INT32: return ((const int32_t *)b)[i];
    case PD_INT64: return (double)((const int64_t *)b)[i];
    case PD_BOOL: return ((const uint8_t *)b)[i];
    default: return NAN;
  }
}

static KT_UNUSED void kt_set(pd_dtype dt, void *b, int64_t i, double v) {
  switch (dt) {
    case PD_FP32: ((float *)b)[i] = (float)v; break;
    case PD_FP64: ((double *)b)[i] = v; break;
    case PD_INT32: ((int32_t *)b)[i] = (int32_t)v; break;
    case PD_INT64: ((int64_t *)b)[i] = (int64_t)v; break;
    case PD_BOOL: ((uint8_t *)b)[i] = v != 0; break;
    default: break;
  }
}

/* A new buffer of n elements, uniform in [lo, hi) (integers: truncated). */
static KT_UNUSED void *kt_random(pd_dtype dt, int64_t n, double lo, double hi) {
  void *b = kt_alloc((size_t)n * pd_dtype_size(dt));
  for (int64_t i = 0; i < n; i++) kt_set(dt, b, i, kt_uniform(lo, hi));
  return b;
}

/* Copy of a buffer as doubles. */
static KT_UNUSED double *kt_to_double(pd_dtype dt, const void *b, int64_t n) {
  double *d = kt_alloc((size_t)n * sizeof *d);
  for (int64_t i = 0; i < n; i++) d[i] = kt_get(dt, b, i);
  return d;
}

static KT_UNUSED int64_t kt_numel(int nd, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  return n;
}

/* Default tolerance of a dtype: relative to max(1, |want|). */
static KT_UNUSED double kt_tol(pd_dtype dt) { return dt == PD_FP32 ? 2e-5 : 1e-12; }

/* max over i of |got[i] - want[i]| / max(1, |want[i]|); NaN/inf must match exactly. */
static KT_UNUSED double kt_err(pd_dtype dt, const void *got, const double *want, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double g = kt_get(dt, got, i), w = want[i], e;
    if (isnan(w) || isinf(w)) e = (isnan(w) && isnan(g)) || g == w ? 0 : INFINITY;
    else e = fabs(g - w) / (fabs(w) > 1 ? fabs(w) : 1);
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

#define kt_close(dt, got, want, n, tol, ...)                               \
  do {                                                                     \
    double e_ = kt_err((dt), (got), (want), (n));                          \
    if (!ok(e_ <= (tol), __VA_ARGS__)) printf("#   max error %g\n", e_); \
  } while (0)

/* Central differences of L(x) = sum(dout * f(x)) for every x[i] (h = 1e-5 * max(1, |x|)),
 * compared with the analytic gradient: returns the largest relative error
 * |num - ana| / max(1e-2, |num| + |ana|) (an absolute 1e-8 for gradients near 0, where the
 * rounding error of L / h dominates). f writes ny outputs for nx inputs. */
typedef void kt_fwd_fn(const double *x, double *y, void *ctx);
static KT_UNUSED double kt_gradcheck(int64_t nx, double *x, int64_t ny, const double *dout,
                                     const double *ana, kt_fwd_fn *f, void *ctx) {
  double *y = kt_alloc((size_t)ny * sizeof *y), worst = 0;
  for (int64_t i = 0; i < nx; i++) {
    double save = x[i], h = 1e-5 * (fabs(save) > 1 ? fabs(save) : 1), lp = 0, lm = 0;
    x[i] = save + h;
    f(x, y, ctx);
    for (int64_t j = 0; j < ny; j++) lp += dout[j] * y[j];
    x[i] = save - h;
    f(x, y, ctx);
    for (int64_t j = 0; j < ny; j++) lm += dout[j] * y[j];
    x[i] = save;
    double num = (lp - lm) / (2 * h), d = fabs(num) + fabs(ana[i]);
    double e = fabs(num - ana[i]) / (d > 1e-2 ? d : 1e-2);
    if (!(e <= worst)) worst = e;
  }
  free(y);
  return worst;
}

#define kt_grad_ok(err, ...)                                                        \
  do {                                                                              \
    double g_ = (err);                                                              \
    if (!ok(g_ <= 1e-6, __VA_ARGS__)) printf("#   relative gradient error %g\n", g_); \
  } while (0)

#endif /* PD_TESTS_KT_H */
