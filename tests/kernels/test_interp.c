/* test_interp.c -- the backends' interp2d and interp2d_grad (kernels.h) on random tables
 * (indices anywhere in the input, so taps repeat and skip; weights in [0, 1)), nearest (1, 1
 * taps), linear (1, 2), bilinear (2, 2) and cubic (4, 4), NCHW and NHWC, fp32 and fp64, an
 * empty batch: the CPU's against a naive reference of kernels.h's sum, its gradient against the
 * adjoint written out; the GPU's against the CPU's where a GPU opens (within rounding: its
 * gradient adds with atomics); the argument checks on both. The ops' rows
 * (tests/vm/ops/optest_interp.c) check the tables the ops build. */
#include "config.h"
#include "tests/kernels/cuda_cmp.h"

static bool have_gpu;

/* Offset of element (b, ch, r, q) of an image [n, c, h, w] (nhwc: [n, h, w, c]). */
static int64_t off(bool nhwc, int64_t c, int64_t h, int64_t w, int64_t b, int64_t ch, int64_t r,
                   int64_t q) {
  return nhwc ? ((b * h + r) * w + q) * c + ch : ((b * c + ch) * h + r) * w + q;
}

static const char *const tap_names[] = {"nearest", "linear", "bilinear", "cubic"};
static const int taps_of[][2] = {{1, 1}, {1, 2}, {2, 2}, {4, 4}};

static void one_case(pd_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
                     int64_t ow, bool nhwc, int kind) {
  int th = taps_of[kind][0], tw = taps_of[kind][1];
  int64_t m = th * oh + tw * ow, nin = n * c * h * w, nout = n * c * oh * ow;
  int64_t *idx = kt_alloc((size_t)m * sizeof *idx);
  double *lam = kt_alloc((size_t)m * sizeof *lam);
  for (int64_t i = 0; i < m; i++) {
    idx[i] = (int64_t)(kt_rand() * (double)(i < th * oh ? h : w)); /* rows, then columns */
    lam[i] = (float)kt_rand();
  }
  pd_k_interp2d p = {n, c, h, w, oh, ow, nhwc, th, tw, idx, lam};
  const int64_t *iy = idx, *ix = idx + th * oh;
  const double *ly = lam, *lx = lam + th * oh;
  void *x = kt_random(dt, nin, -1, 1), *dy = kt_random(dt, nout, -1, 1);
  void *y = kt_alloc((size_t)nout * pd_dtype_size(dt)), *dx = kt_random(dt, nin, 5, 6);
  double *want = kt_alloc((size_t)nout * sizeof *want);
  double *gwant = kt_alloc((size_t)nin * sizeof *gwant);
  bool nearest = kind == 0;
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t k = 0; k < oh; k++)
        for (int64_t l = 0; l < ow; l++) {
          double s = 0, g = kt_get(dt, dy, off(nhwc, c, oh, ow, b, ch, k, l));
          for (int j = 0; j < tw; j++)
            for (int i = 0; i < th; i++) {
              double wt = nearest ? 1 : ly[i * oh + k] * lx[j * ow + l];
              int64_t at = off(nhwc, c, h, w, b, ch, iy[i * oh + k], ix[j * ow + l]);
              s += kt_get(dt, x, at) * wt;
              gwant[at] += g * wt;
            }
          want[off(nhwc, c, oh, ow, b, ch, k, l)] = s;
        }
  char what[128];
  snprintf(what, sizeof what, "%s %s %s [%lld, %lld, %lld, %lld] -> [%lld, %lld]", dn(dt),
           tap_names[kind], nhwc ? "NHWC" : "NCHW", (long long)n, (long long)c,
           (long long)h, (long long)w, (long long)oh, (long long)ow);
  is_int(C->interp2d(dt, &p, x, y), PD_OK, "interp2d %s: runs", what);
  ok(kt_err(dt, y, want, nout) <= kt_tol(dt), "interp2d %s: values", what);
  is_int(C->interp2d_grad(dt, &p, dy, dx), PD_OK, "interp2d_grad %s: runs", what);
  ok(kt_err(dt, dx, gwant, nin) <= kt_tol(dt), "interp2d_grad %s: values", what);
  if (have_gpu) {
    buf bi = B_copy(idx, (size_t)m * sizeof *idx), bl = B_copy(lam, (size_t)m * sizeof *lam);
    buf bx = B_copy(x, (size_t)nin * pd_dtype_size(dt));
    buf bdy = B_copy(dy, (size_t)nout * pd_dtype_size(dt));
    buf by = B_out((size_t)nout * pd_dtype_size(dt)), bdx = B_out((size_t)nin * pd_dtype_size(dt));
    pd_k_interp2d q = p;
    q.idx = bi.d;
    q.lam = bl.d;
    memcpy(by.h, y, by.bytes);
    memcpy(bdx.h, dx, bdx.bytes);
    same_status(G->interp2d(dt, &q, bx.d, by.d), PD_OK, "interp2d %s: status on the GPU", what);
    same(dt, &by, nout, "interp2d %s: the GPU's", what);
    same_status(G->interp2d_grad(dt, &q, bdy.d, bdx.d), PD_OK, "interp2d_grad %s: status on the "
                "GPU", what);
    same(dt, &bdx, nin, "interp2d_grad %s: the GPU's", what);
    B_free(&bi), B_free(&bl), B_free(&bx), B_free(&bdy), B_free(&by), B_free(&bdx);
  }
  free(idx), free(lam), free(x), free(dy), free(y), free(dx), free(want), free(gwant);
}

#define BOTH(want, call, ...)                                                 \
  do {                                                                        \
    is_int(C->call, (want), __VA_ARGS__);                                     \
    if (have_gpu) same_status(G->call, (want), __VA_ARGS__);                  \
  } while (0)

static void test_checks(void) {
  int64_t idx[8] = {0};
  double lam[8] = {0}, b[8] = {0};
  pd_k_interp2d p = {1, 1, 1, 1, 2, 2, false, 2, 2, idx, lam};
  BOTH(PD_EUNSUPPORTED, interp2d(PD_INT32, &p, b, b), "interp2d int32");
  p.th = 2, p.tw = 1;
  BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d taps (2, 1)");
  p.th = 4, p.tw = 2;
  BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d taps (4, 2)");
  p.th = p.tw = 2;
  BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, NULL), "interp2d without y");
  BOTH(PD_EINVAL, interp2d_grad(PD_FP64, &p, NULL, b), "interp2d_grad without dy");
  p.oh = 0;
  BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d oh 0");
  p.oh = 2, p.idx = NULL;
  BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d without tables");
  p.n = 0;
  BOTH(PD_OK, interp2d(PD_FP32, &p, NULL, NULL), "interp2d of an empty batch");
  p.n = INT64_MAX, p.c = 2, p.idx = idx;
  BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d n c overflows");
}

int main(int argc, char **argv) {
  (void)argc;
  kt_begin(argv);
  pd_error err = {0};
  have_gpu = cmp_open(&err);
  pd_error_clear(&err);
  test_checks();
  for (int t = 0; t < 2; t++)
    for (int lay = 0; lay < 2; lay++)
      for (int kind = 0; kind < 4; kind++) {
        one_case(floats[t], 2, 3, 4, 5, 7, 3, lay, kind);
        one_case(floats[t], 1, 2, 1, 6, 3, 1, lay, kind);
        one_case(floats[t], 3, 40, 9, 11, 17, 23, lay, kind); /* planes split across threads */
      }
  one_case(PD_FP32, 0, 3, 2, 2, 3, 3, false, 2);
  if (!have_gpu) tap_skip("the GPU against the CPU: no GPU opens here");
  return tap_done();
}
