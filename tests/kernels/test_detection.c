/* test_detection.c -- the backends' box_coder and yolo_box (kernels.h): the CPU's against a
 * reference written here from kernels.h's definitions, in double (encode; decode along axis 0
 * and 1; variances from a tensor, the attribute or none; normalized boxes or not; yolo_box with
 * and without iou_aware, clipping, scale_x_y, int32 and int64 image sizes, boxes under the
 * threshold), fp32 and fp64, empty grids; the GPU's against the CPU's where a GPU opens; the
 * argument checks on both. The ops' rows (tests/vm/ops/optest_detection.c) check the ops. */
#include "config.h"

#include <math.h>

#include "tests/kernels/cuda_cmp.h"

static bool have_gpu;
static char what[200];

static double sig(double v) { return 1 / (1 + exp(-v)); }

/* ---- box_coder ---- */

static void bc_case(pd_dtype dt, int64_t n, int64_t j, bool decode, bool axis1, int var,
                    bool normalized) {
  pd_k_box_coder p = {n, j, decode, axis1, normalized ? 0.0 : 1.0, var == 1, {0.1, 0.2, 0.3, 0.4}};
  int64_t np = decode && axis1 ? n : j, nt = decode ? n * j * 4 : n * 4, no = n * j * 4;
  /* priors and targets as corners x1 < x2, y1 < y2 (decode's targets: codes in [-1, 1)) */
  void *prior = kt_alloc((size_t)np * 4 * pd_dtype_size(dt));
  for (int64_t q = 0; q < np; q++) {
    double x1 = kt_uniform(0, 5), y1 = kt_uniform(0, 5);
    kt_set(dt, prior, q * 4, x1), kt_set(dt, prior, q * 4 + 1, y1);
    kt_set(dt, prior, q * 4 + 2, x1 + kt_uniform(0.5, 4));
    kt_set(dt, prior, q * 4 + 3, y1 + kt_uniform(0.5, 4));
  }
  void *target = decode ? kt_random(dt, nt, -1, 1) : kt_alloc((size_t)nt * pd_dtype_size(dt));
  for (int64_t i = 0; !decode && i < n; i++) {
    double x1 = kt_uniform(0, 5), y1 = kt_uniform(0, 5);
    kt_set(dt, target, i * 4, x1), kt_set(dt, target, i * 4 + 1, y1);
    kt_set(dt, target, i * 4 + 2, x1 + kt_uniform(0.5, 4));
    kt_set(dt, target, i * 4 + 3, y1 + kt_uniform(0.5, 4));
  }
  void *pvar = var == 2 ? kt_random(dt, np * 4, 0.1, 1) : NULL;
  void *out = kt_alloc((size_t)no * pd_dtype_size(dt));
  double *want = kt_alloc((size_t)no * sizeof *want);
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = 0; k < j; k++) {
      int64_t q = decode && axis1 ? i : k;
      double *r = want + (i * j + k) * 4, v[4];
      double pw = kt_get(dt, prior, q * 4 + 2) - kt_get(dt, prior, q * 4) + p.one;
      double ph = kt_get(dt, prior, q * 4 + 3) - kt_get(dt, prior, q * 4 + 1) + p.one;
      double pcx = kt_get(dt, prior, q * 4) + pw / 2, pcy = kt_get(dt, prior, q * 4 + 1) + ph / 2;
      for (int c = 0; c < 4; c++)
        v[c] = var == 2 ? kt_get(dt, pvar, q * 4 + c) : var == 1 ? p.var[c] : 1;
      if (decode) {
        const int64_t t = (i * j + k) * 4;
        double cx = v[0] * kt_get(dt, target, t) * pw + pcx;
        double cy = v[1] * kt_get(dt, target, t + 1) * ph + pcy;
        double w = exp(v[2] * kt_get(dt, target, t + 2)) * pw;
        double h = exp(v[3] * kt_get(dt, target, t + 3)) * ph;
        r[0] = cx - w / 2, r[1] = cy - h / 2, r[2] = cx + w / 2 - p.one, r[3] = cy + h / 2 - p.one;
      } else {
        double x1 = kt_get(dt, target, i * 4), y1 = kt_get(dt, target, i * 4 + 1);
        double x2 = kt_get(dt, target, i * 4 + 2), y2 = kt_get(dt, target, i * 4 + 3);
        r[0] = ((x1 + x2) / 2 - pcx) / pw / v[0];
        r[1] = ((y1 + y2) / 2 - pcy) / ph / v[1];
        r[2] = log(fabs((x2 - x1 + p.one) / pw)) / v[2];
        r[3] = log(fabs((y2 - y1 + p.one) / ph)) / v[3];
      }
    }
  snprintf(what, sizeof what, "%s %s%s [%lld, %lld] variances %s%s", dn(dt),
           decode ? "decode" : "encode", decode && axis1 ? " axis 1" : "", (long long)n,
           (long long)j, var == 2 ? "tensor" : var ? "attribute" : "none",
           normalized ? "" : ", not normalized");
  is_int(C->box_coder(dt, &p, prior, pvar, target, out), PD_OK, "box_coder %s: runs", what);
  ok(kt_err(dt, out, want, no) <= kt_tol(dt), "box_coder %s: values", what);
  if (have_gpu) {
    size_t sz = pd_dtype_size(dt);
    buf bp = B_copy(prior, (size_t)np * 4 * sz), bt = B_copy(target, (size_t)nt * sz);
    buf bv = B_copy(pvar ? pvar : prior, (size_t)np * 4 * sz), bo = B_out((size_t)no * sz);
    memcpy(bo.h, out, bo.bytes);
    same_status(G->box_coder(dt, &p, bp.d, pvar ? bv.d : NULL, bt.d, bo.d), PD_OK,
                "box_coder %s: status on the GPU", what);
    same(dt, &bo, no, "box_coder %s: the GPU's", what);
    B_free(&bp), B_free(&bt), B_free(&bv), B_free(&bo);
  }
  free(prior), free(target), free(pvar), free(out), free(want);
}

/* ---- yolo_box ---- */

static void yolo_case(pd_dtype dt, int64_t n, int64_t h, int64_t w, int64_t na, int64_t cls,
                      bool iou, bool clip, float scale, pd_dtype im_dt) {
  pd_k_yolo_box p = {.n = n, .h = h, .w = w, .na = na, .classes = cls, .ratio = 8,
                     .iou_aware = iou, .clip = clip, .scale = scale, .thresh = 0.4,
                     .factor = 0.3, .im_dt = im_dt};
  for (int64_t a = 0; a < 2 * na; a++) p.anchors[a] = 4 + 3 * a;
  int64_t chans = na * (5 + cls) + (iou ? na : 0), hw = h * w, nb = n * na * hw;
  void *x = kt_random(dt, n * chans * hw, -2, 2);
  int64_t img64[8];
  int32_t img32[8];
  for (int64_t i = 0; i < 2 * n; i++) img64[i] = img32[i] = (int32_t)(20 + 7 * i);
  const void *img = im_dt == PD_INT32 ? (const void *)img32 : (const void *)img64;
  void *boxes = kt_random(dt, nb * 4, 5, 6), *scores = kt_random(dt, nb * cls, 5, 6);
  double *wb = kt_alloc((size_t)(nb * 4 + 1) * sizeof *wb);
  double *ws = kt_alloc((size_t)(nb * cls + 1) * sizeof *ws);
  int under = 0;
  for (int64_t b = 0; b < n; b++)
    for (int64_t a = 0; a < na; a++)
      for (int64_t k = 0; k < h; k++)
        for (int64_t l = 0; l < w; l++) {
          int64_t e = ((b * na + a) * h + k) * w + l;
          /* channel c of anchor a at this cell */
#define XA(c) kt_get(dt, x, ((b * chans + (iou ? na : 0) + a * (5 + cls) + (c)) * h + k) * w + l)
          double conf = sig(XA(4));
          if (iou)
            conf = pow(conf, 1 - p.factor) *
                   pow(sig(kt_get(dt, x, ((b * chans + a) * h + k) * w + l)), p.factor);
          double ih = (double)img64[2 * b], iw = (double)img64[2 * b + 1];
          double bias = (double)(-0.5f * (scale - 1.f));
          double cx = ((double)l + sig(XA(0)) * (double)scale + bias) * iw / (double)w;
          double cy = ((double)k + sig(XA(1)) * (double)scale + bias) * ih / (double)h;
          double bw = exp(XA(2)) * (double)p.anchors[2 * a] * iw / (double)(8 * w);
          double bh = exp(XA(3)) * (double)p.anchors[2 * a + 1] * ih / (double)(8 * h);
          double r[4] = {cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2};
          if (clip) {
            r[0] = fmax(r[0], 0), r[1] = fmax(r[1], 0);
            r[2] = fmin(r[2], iw - 1), r[3] = fmin(r[3], ih - 1);
          }
          bool keep = conf >= p.thresh;
          under += !keep;
          for (int c = 0; c < 4; c++) wb[e * 4 + c] = keep ? r[c] : 0;
          for (int64_t c = 0; c < cls; c++) ws[e * cls + c] = keep ? conf * sig(XA(5 + c)) : 0;
#undef XA
        }
  snprintf(what, sizeof what, "%s [%lld, %lld, %lld, %lld] %lld anchors %lld classes%s%s "
           "scale %g %s (%d under the threshold)", dn(dt), (long long)n, (long long)chans,
           (long long)h, (long long)w, (long long)na, (long long)cls, iou ? " iou_aware" : "",
           clip ? " clip" : "", (double)scale, dn(im_dt), under);
  is_int(C->yolo_box(dt, &p, x, img, boxes, scores), PD_OK, "yolo_box %s: runs", what);
  ok(kt_err(dt, boxes, wb, nb * 4) <= kt_tol(dt), "yolo_box %s: boxes", what);
  ok(kt_err(dt, scores, ws, nb * cls) <= kt_tol(dt), "yolo_box %s: scores", what);
  if (have_gpu) {
    size_t sz = pd_dtype_size(dt);
    buf bx = B_copy(x, (size_t)(n * chans * hw) * sz);
    buf bi = B_copy(img, (size_t)(2 * n) * pd_dtype_size(im_dt));
    buf bb = B_out((size_t)(nb * 4) * sz), bs = B_out((size_t)(nb * cls) * sz);
    memcpy(bb.h, boxes, bb.bytes);
    memcpy(bs.h, scores, bs.bytes);
    same_status(G->yolo_box(dt, &p, bx.d, bi.d, bb.d, bs.d), PD_OK,
                "yolo_box %s: status on the GPU", what);
    same(dt, &bb, nb * 4, "yolo_box %s: the GPU's boxes", what);
    same(dt, &bs, nb * cls, "yolo_box %s: the GPU's scores", what);
    B_free(&bx), B_free(&bi), B_free(&bb), B_free(&bs);
  }
  free(x), free(boxes), free(scores), free(wb), free(ws);
}

static void test_checks(void) {
  double b[64] = {0};
  pd_k_box_coder p = {2, 3, false, false, 0, false, {0}};
  CMP_BOTH(PD_EUNSUPPORTED, box_coder(PD_INT32, &p, b, NULL, b, b), "box_coder int32");
  CMP_BOTH(PD_EINVAL, box_coder(PD_FP32, &p, b, NULL, NULL, b), "box_coder without a target");
  p.j = -1;
  CMP_BOTH(PD_EINVAL, box_coder(PD_FP32, &p, b, NULL, b, b), "box_coder j -1");
  p.j = 0;
  CMP_BOTH(PD_OK, box_coder(PD_FP32, &p, NULL, NULL, NULL, NULL), "box_coder of no boxes");
  p.n = INT64_MAX, p.j = 3;
  CMP_BOTH(PD_EINVAL, box_coder(PD_FP32, &p, b, NULL, b, b), "box_coder n j 4 overflows");
  pd_k_yolo_box y = {.n = 1, .h = 1, .w = 1, .na = 1, .classes = 1, .ratio = 1, .scale = 1,
                     .im_dt = PD_INT32};
  CMP_BOTH(PD_EUNSUPPORTED, yolo_box(PD_INT64, &y, b, b, b, b), "yolo_box int64");
  CMP_BOTH(PD_EINVAL, yolo_box(PD_FP32, &y, b, b, NULL, b), "yolo_box without boxes");
  y.im_dt = PD_FP32;
  CMP_BOTH(PD_EINVAL, yolo_box(PD_FP32, &y, b, b, b, b), "yolo_box float image sizes");
  y.im_dt = PD_INT64, y.na = PD_K_YOLO_MAX_ANCHORS + 1;
  CMP_BOTH(PD_EINVAL, yolo_box(PD_FP32, &y, b, b, b, b), "yolo_box too many anchors");
  y.na = 1, y.classes = 0;
  CMP_BOTH(PD_EINVAL, yolo_box(PD_FP32, &y, b, b, b, b), "yolo_box no classes");
  y.classes = 1, y.ratio = 0;
  CMP_BOTH(PD_EINVAL, yolo_box(PD_FP32, &y, b, b, b, b), "yolo_box ratio 0");
  y.ratio = 1, y.n = 0;
  CMP_BOTH(PD_OK, yolo_box(PD_FP32, &y, NULL, NULL, NULL, NULL), "yolo_box of an empty batch");
}

int main(int argc, char **argv) {
  (void)argc;
  kt_begin(argv);
  pd_error err = {0};
  have_gpu = cmp_open(&err);
  pd_error_clear(&err);
  test_checks();
  for (int t = 0; t < 2; t++) {
    pd_dtype dt = floats[t];
    bc_case(dt, 5, 7, false, false, 2, true);
    bc_case(dt, 4, 6, false, false, 1, false);
    bc_case(dt, 3, 8, true, false, 0, true);
    bc_case(dt, 6, 4, true, true, 2, false);
    bc_case(dt, 6, 4, true, true, 1, true);
    bc_case(dt, 0, 4, true, false, 0, true);
    yolo_case(dt, 2, 3, 4, 3, 5, false, true, 1.0f, PD_INT32);
    yolo_case(dt, 1, 5, 2, 2, 3, true, false, 1.05f, PD_INT64);
    yolo_case(dt, 3, 2, 3, 1, 1, false, false, 1.2f, PD_INT64);
    yolo_case(dt, 0, 2, 3, 1, 1, false, false, 1.0f, PD_INT32);
  }
  if (!have_gpu) tap_skip("the GPU against the CPU: no GPU opens here");
  return tap_done();
}
