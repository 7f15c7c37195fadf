/* cuda_cmp.h -- what the tests that compare the CUDA backend with the CPU backend share
 * (tests/kernels/test_cuda_backend.c, test_cuda_loss.c): buffers with a host and a device copy,
 * the comparisons (fp32 within 1e-5 and fp64 within 1e-12 of the largest magnitude of the
 * CPU's result, integers and bools exactly, bit for bit), the statuses, and the opening of the
 * GPU. Header-only (static functions), like kt.h; C and G are set by cmp_open. */
#ifndef PD_TESTS_CUDA_CMP_H
#define PD_TESTS_CUDA_CMP_H

#include <stdarg.h>

#include "kernels/kernels.h"
#include "tests/kernels/kt.h"

static const pd_k_backend *C, *G;  /* the CPU and CUDA backends */

static KT_UNUSED const pd_dtype floats[] = {PD_FP32, PD_FP64};
static KT_UNUSED const pd_dtype nums[] = {PD_FP32, PD_FP64, PD_INT32, PD_INT64};

/* ---- Buffers: a host copy (what the CPU kernel gets) and a device copy (the GPU's), with the
 * same contents before a kernel runs. ---- */
typedef struct buf {
  void *h, *d;
  size_t bytes;
} buf;

static KT_UNUSED void bail(const char *what) {
  printf("Bail out! %s: %s\n", what, pd_k_cuda_error());
  exit(1);
}

static KT_UNUSED buf B_copy(const void *host, size_t bytes) {
  buf b = {kt_alloc(bytes), pd_k_dev_alloc(bytes), bytes};
  if (!b.d) bail("pd_k_dev_alloc");
  if (bytes) memcpy(b.h, host, bytes);
  if (pd_k_dev_upload(b.d, b.h, bytes)) bail("pd_k_dev_upload");
  return b;
}

/* n random elements: floats uniform in [lo, hi), integers truncated, bools 0, 1 or 2 (any
 * non-zero byte is true). */
static KT_UNUSED buf B_rand(pd_dtype dt, int64_t n, double lo, double hi) {
  size_t bytes = (size_t)n * pd_dtype_size(dt);
  void *h = kt_alloc(bytes);
  for (int64_t i = 0; i < n; i++) {
    if (dt == PD_BOOL) ((uint8_t *)h)[i] = (uint8_t)(kt_rand() * 3);
    else kt_set(dt, h, i, kt_uniform(lo, hi));
  }
  buf b = B_copy(h, bytes);
  free(h);
  return b;
}

/* An output: both copies filled with the same junk (0x5A bytes), so that an element one
 * backend leaves unwritten shows up. */
static KT_UNUSED buf B_out(size_t bytes) {
  void *h = kt_alloc(bytes);
  memset(h, 0x5A, bytes);
  buf b = B_copy(h, bytes);
  free(h);
  return b;
}

static KT_UNUSED void B_free(buf *b) {
  free(b->h);
  pd_k_dev_free(b->d);
  b->h = b->d = NULL;
}

/* Put the host copy's contents on the device again (after the CPU changed it in place). */
static KT_UNUSED void B_sync_up(const buf *b, const void *host) {
  if (pd_k_dev_upload(b->d, host, b->bytes)) bail("pd_k_dev_upload");
}

static KT_UNUSED void *download(const buf *b) {
  void *h = kt_alloc(b->bytes);
  if (pd_k_dev_download(h, b->d, b->bytes)) bail("pd_k_dev_download");
  return h;
}

static KT_UNUSED double tol_of(pd_dtype dt) {
  return dt == PD_FP32 ? 1e-5 : dt == PD_FP64 ? 1e-12 : 0;
}

/* The GPU's copy of b against the CPU's, n elements of dt: floats within tol of the largest
 * finite magnitude of the CPU's values (NaN and inf where the CPU has them), others exactly. */
static KT_UNUSED void same_tol(pd_dtype dt, const buf *b, int64_t n, double tol,
                               const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static KT_UNUSED void same_tol(pd_dtype dt, const buf *b, int64_t n, double tol,
                               const char *fmt, ...) {
  char name[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  void *g = download(b);
  double scale = 0, worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < n; i++) {
    double w = kt_get(dt, b->h, i);
    if (isfinite(w) && fabs(w) > scale) scale = fabs(w);
  }
  if (scale == 0) scale = 1;
  for (int64_t i = 0; i < n; i++) {
    double w = kt_get(dt, b->h, i), v = kt_get(dt, g, i), e;
    if (dt == PD_BOOL) e = (w != 0) != (v != 0);
    else if (!isfinite(w) || !isfinite(v)) e = (isnan(w) && isnan(v)) || w == v ? 0 : INFINITY;
    else if (dt == PD_INT64) e = ((const int64_t *)b->h)[i] != ((const int64_t *)g)[i];
    else e = fabs(v - w) / scale;
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  if (!ok(worst <= tol, "%s", name))
    printf("#   worst normalised error %g at %lld: cpu %.17g, cuda %.17g\n", worst, (long long)at,
           kt_get(dt, b->h, at), kt_get(dt, g, at));
  free(g);
}

#define same(dt, b, n, ...) same_tol((dt), (b), (n), tol_of(dt), __VA_ARGS__)

/* Bit for bit. */
static KT_UNUSED void same_bits(const buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static KT_UNUSED void same_bits(const buf *b, const char *fmt, ...) {
  char name[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  void *g = download(b);
  size_t i = 0;
  while (i < b->bytes && ((const uint8_t *)g)[i] == ((const uint8_t *)b->h)[i]) i++;
  if (!ok(i == b->bytes, "%s: bit for bit", name)) printf("#   first difference at byte %zu\n", i);
  free(g);
}

#define same_status(got, want, ...)                                                       \
  do {                                                                                    \
    pd_status g_ = (got), w_ = (want);                                                    \
    if (!ok(g_ == w_, __VA_ARGS__))                                                       \
      printf("#   cuda %s, cpu %s (%s)\n", pd_status_str(g_), pd_status_str(w_),           \
             pd_k_cuda_error());                                                          \
  } while (0)

/* An entry's call must return want on the CPU backend and, where the including test's
 * have_gpu says a GPU opened, on the CUDA backend too (argument checks). */
#define CMP_BOTH(want, call, ...)                                             \
  do {                                                                        \
    is_int(C->call, (want), __VA_ARGS__);                                     \
    if (have_gpu) same_status(G->call, (want), __VA_ARGS__);                  \
  } while (0)

static KT_UNUSED const char *dn(pd_dtype dt) { return pd_dtype_name(dt); }

/* "[2, 3, 4]" */
static KT_UNUSED const char *shape_str(int nd, const int64_t *dims, char *out,
                                       size_t size) {
  return pd_dims_str(nd, dims, out, size);
}

/* Set up the CPU backend (C, and kt.h's K) and open the GPU (G): true when it opened; else the
 * error is in *err (the caller clears it). */
static KT_UNUSED bool cmp_open(pd_error *err) {
  pd_k_init();
  C = K = pd_k_cpu();
  if (pd_k_cuda_open(0, err) != PD_OK) return false;
  G = pd_k_cuda();
  return true;
}

#endif /* PD_TESTS_CUDA_CMP_H */
