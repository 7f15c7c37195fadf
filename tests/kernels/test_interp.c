/* test_interp.c -- the backends' interp2d and interp2d_grad (kernels.h) on random tables
 * (indices anywhere in the input, so taps repeat and skip; weights in [0, 1)), nearest (1, 1
 * taps), linear (1, 2), bilinear (2, 2) and cubic (4, 4), NCHW and NHWC, fp32 and fp64, an
 * empty batch: the CPU's against a naive reference of kernels.h's sum, its gradient against the
 * adjoint written out; the GPU's against the CPU's where a GPU opens (within rounding: its
 * gradient adds with atomics); the argument checks on both. The ops' rows
 * (tests/vm/ops/optest_interp.c) check the tables the ops build. And grid_sample with its
 * gradient: bilinear and nearest, the three paddings, align_corners or not, grid points inside
 * and outside the image, against a reference written from kernels.h's definition in double. */
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

/* ---- grid_sample ---- */

/* The source coordinate of grid value g on an axis of size s (kernels.h), and its derivative. */
static double gs_ref_coord(double g, int64_t s, bool ac, int pad, double *d) {
  double hi = (double)(s - 1), f = (ac ? (double)(s - 1) : (double)s) / 2;
  double u = ac ? (g + 1) * f : (g + 1) * f - 0.5;
  *d = f;
  if (pad == 2 && ac) {
    if (s == 1) return *d = 0, 0;
    double range = 2 * hi, a = fabs(u), r = fmod(a, range);
    *d *= (u < 0 ? -1 : 1) * (r <= range - r ? 1 : -1);
    return fmin(r, range - r);
  }
  if (pad == 2) {
    double range = 2.0 * (double)s, a = fabs(u + 0.5), r = fmod(a, range);
    *d *= (u + 0.5 < 0 ? -1 : 1) * (r <= range - r ? 1 : -1);
    u = fmin(r, range - r) - 0.5;
  }
  if (pad >= 1 && (u < 0 || u > hi)) *d = 0, u = fmin(fmax(u, 0), hi);
  return u;
}

static void gs_case(pd_dtype dt, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
                    int64_t ow, bool nearest, int pad, bool ac) {
  pd_k_grid_sample p = {n, c, h, w, oh, ow, nearest, pad, ac};
  int64_t nin = n * c * h * w, nout = n * c * oh * ow, ng = n * oh * ow * 2;
  void *x = kt_random(dt, nin, -1, 1), *grid = kt_random(dt, ng, -1.4, 1.4);
  void *dy = kt_random(dt, nout, -1, 1), *y = kt_alloc((size_t)nout * pd_dtype_size(dt));
  void *dx = kt_random(dt, nin, 5, 6), *dg = kt_random(dt, ng, 5, 6);
  double *want = kt_alloc((size_t)nout * sizeof *want), *gx = kt_alloc((size_t)nin * 8);
  double *gg = kt_alloc((size_t)ng * sizeof *gg);
  for (int64_t b = 0; b < n; b++)
    for (int64_t k = 0; k < oh * ow; k++) {
      int64_t pt = b * oh * ow + k;
      double du, dv, u = gs_ref_coord(kt_get(dt, grid, 2 * pt), w, ac, pad, &du);
      double v = gs_ref_coord(kt_get(dt, grid, 2 * pt + 1), h, ac, pad, &dv);
      double xs[4], ys[4], wt[4], dwu[4], dwv[4];
      int m;
      if (nearest) {
        m = 1, xs[0] = round(u), ys[0] = round(v), wt[0] = 1, dwu[0] = dwv[0] = 0;
      } else {
        double x0 = floor(u), y0 = floor(v);
        m = 4;
        for (int q = 0; q < 4; q++) {
          xs[q] = x0 + (q & 1), ys[q] = y0 + (q >> 1);
          double ax = q & 1 ? u - x0 : x0 + 1 - u, ay = q >> 1 ? v - y0 : y0 + 1 - v;
          wt[q] = ax * ay, dwu[q] = (q & 1 ? 1 : -1) * ay, dwv[q] = (q >> 1 ? 1 : -1) * ax;
        }
      }
      double su = 0, sv = 0;
      for (int64_t ch = 0; ch < c; ch++) {
        double s = 0, g = kt_get(dt, dy, (b * c + ch) * oh * ow + k);
        for (int q = 0; q < m; q++) {
          if (xs[q] < 0 || xs[q] > (double)(w - 1) || ys[q] < 0 || ys[q] > (double)(h - 1))
            continue;
          int64_t at = ((b * c + ch) * h + (int64_t)ys[q]) * w + (int64_t)xs[q];
          double xv = kt_get(dt, x, at);
          s += xv * wt[q];
          gx[at] += g * wt[q];
          su += g * xv * dwu[q], sv += g * xv * dwv[q];
        }
        want[(b * c + ch) * oh * ow + k] = s;
      }
      gg[2 * pt] = su * du, gg[2 * pt + 1] = sv * dv;
    }
  char what[160];
  snprintf(what, sizeof what, "%s %s padding %d%s [%lld, %lld, %lld, %lld] -> [%lld, %lld]",
           dn(dt), nearest ? "nearest" : "bilinear", pad, ac ? " align_corners" : "",
           (long long)n, (long long)c, (long long)h, (long long)w, (long long)oh, (long long)ow);
  is_int(C->grid_sample(dt, &p, x, grid, y), PD_OK, "grid_sample %s: runs", what);
  ok(kt_err(dt, y, want, nout) <= kt_tol(dt), "grid_sample %s: values", what);
  is_int(C->grid_sample_grad(dt, &p, x, grid, dy, dx, dg), PD_OK, "grid_sample_grad %s: runs",
         what);
  ok(kt_err(dt, dx, gx, nin) <= kt_tol(dt), "grid_sample_grad %s: dx", what);
  ok(kt_err(dt, dg, gg, ng) <= 4 * kt_tol(dt), "grid_sample_grad %s: dgrid", what);
  if (have_gpu) {
    size_t sz = pd_dtype_size(dt);
    buf bx = B_copy(x, (size_t)nin * sz), bg = B_copy(grid, (size_t)ng * sz);
    buf bdy = B_copy(dy, (size_t)nout * sz), by = B_out((size_t)nout * sz);
    buf bdx = B_out((size_t)nin * sz), bdg = B_out((size_t)ng * sz);
    memcpy(by.h, y, by.bytes);
    memcpy(bdx.h, dx, bdx.bytes);
    memcpy(bdg.h, dg, bdg.bytes);
    same_status(G->grid_sample(dt, &p, bx.d, bg.d, by.d), PD_OK, "grid_sample %s: status on the "
                "GPU", what);
    same(dt, &by, nout, "grid_sample %s: the GPU's", what);
    same_status(G->grid_sample_grad(dt, &p, bx.d, bg.d, bdy.d, bdx.d, bdg.d), PD_OK,
                "grid_sample_grad %s: status on the GPU", what);
    same(dt, &bdx, nin, "grid_sample_grad %s: the GPU's dx", what);
    same(dt, &bdg, ng, "grid_sample_grad %s: the GPU's dgrid", what);
    B_free(&bx), B_free(&bg), B_free(&bdy), B_free(&by), B_free(&bdx), B_free(&bdg);
  }
  free(x), free(grid), free(dy), free(y), free(dx), free(dg), free(want), free(gx), free(gg);
}

static void test_checks(void) {
  int64_t idx[8] = {0};
  double lam[8] = {0}, b[8] = {0};
  pd_k_interp2d p = {1, 1, 1, 1, 2, 2, false, 2, 2, idx, lam};
  CMP_BOTH(PD_EUNSUPPORTED, interp2d(PD_INT32, &p, b, b), "interp2d int32");
  p.th = 2, p.tw = 1;
  CMP_BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d taps (2, 1)");
  p.th = 4, p.tw = 2;
  CMP_BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d taps (4, 2)");
  p.th = p.tw = 2;
  CMP_BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, NULL), "interp2d without y");
  CMP_BOTH(PD_EINVAL, interp2d_grad(PD_FP64, &p, NULL, b), "interp2d_grad without dy");
  p.oh = 0;
  CMP_BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d oh 0");
  p.oh = 2, p.idx = NULL;
  CMP_BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d without tables");
  p.n = 0;
  CMP_BOTH(PD_OK, interp2d(PD_FP32, &p, NULL, NULL), "interp2d of an empty batch");
  p.n = INT64_MAX, p.c = 2, p.idx = idx;
  CMP_BOTH(PD_EINVAL, interp2d(PD_FP32, &p, b, b), "interp2d n c overflows");
  pd_k_grid_sample g = {1, 1, 2, 2, 2, 2, false, 0, true};
  CMP_BOTH(PD_EUNSUPPORTED, grid_sample(PD_INT64, &g, b, b, b), "grid_sample int64");
  CMP_BOTH(PD_EINVAL, grid_sample(PD_FP32, &g, b, NULL, b), "grid_sample without a grid");
  CMP_BOTH(PD_EINVAL, grid_sample_grad(PD_FP64, &g, b, b, NULL, b, b),
           "grid_sample_grad without dy");
  g.padding = 3;
  CMP_BOTH(PD_EINVAL, grid_sample(PD_FP32, &g, b, b, b), "grid_sample padding 3");
  g.padding = 0, g.oh = 0;
  CMP_BOTH(PD_EINVAL, grid_sample(PD_FP32, &g, b, b, b), "grid_sample oh 0");
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
  for (int t = 0; t < 2; t++)
    for (int pad = 0; pad < 3; pad++)
      for (int ac = 0; ac < 2; ac++) {
        gs_case(floats[t], 2, 3, 4, 5, 3, 6, false, pad, ac);
        gs_case(floats[t], 1, 2, 5, 3, 4, 2, true, pad, ac);
      }
  gs_case(PD_FP64, 1, 1, 1, 1, 2, 3, false, 2, true);  /* a one-pixel image */
  gs_case(PD_FP32, 0, 3, 2, 2, 3, 3, false, 0, true);  /* an empty batch */
  if (!have_gpu) tap_skip("the GPU against the CPU: no GPU opens here");
  return tap_done();
}
