/* detect_t.h -- the per-box arithmetic of box_coder and yolo_box (kernels.h) that the CPU's
 * loops (kernels/cpu/detection.c) and the CUDA kernels (kernels/cuda/detection.cu) share: one
 * output box (element e of the box grid) from its inputs, in double, the loads and stores by
 * the element type. Functions are PD_K_HOST_DEVICE (kernels_int.h): __host__ __device__ under
 * nvcc. The caller has checked the arguments (pd_k_box_coder_check, pd_k_yolo_box_check). */
#ifndef PD_KERNELS_DETECT_T_H
#define PD_KERNELS_DETECT_T_H

#include <math.h>

#include "kernels/kernels_int.h"

/* Element i of a fp32 (f32) or fp64 buffer, and the store. */
PD_K_HOST_DEVICE static inline double pd_k_det_ld(const void *b, bool f32, int64_t i) {
  return f32 ? (double)((const float *)b)[i] : ((const double *)b)[i];
}
PD_K_HOST_DEVICE static inline void pd_k_det_st(void *b, bool f32, int64_t i, double v) {
  if (f32)
    ((float *)b)[i] = (float)v;
  else
    ((double *)b)[i] = v;
}

/* box_coder's box e (row i = e / j, column k = e % j) of out. */
PD_K_HOST_DEVICE static inline void pd_k_box_coder_at(const pd_k_box_coder *p, bool f32,
                                                      const void *prior, const void *pvar,
                                                      const void *target, void *out, int64_t e) {
  int64_t i = e / p->j, k = e % p->j, q = p->decode && p->axis1 ? i : k, o = e * 4;
  double one = p->one, v[4], r[4];
  double px1 = pd_k_det_ld(prior, f32, q * 4), py1 = pd_k_det_ld(prior, f32, q * 4 + 1);
  double pw = pd_k_det_ld(prior, f32, q * 4 + 2) - px1 + one;
  double ph = pd_k_det_ld(prior, f32, q * 4 + 3) - py1 + one;
  double pcx = px1 + pw / 2, pcy = py1 + ph / 2;
  for (int c = 0; c < 4; c++)
    v[c] = pvar ? pd_k_det_ld(pvar, f32, q * 4 + c) : p->attr_var ? p->var[c] : 1.0;
  if (!p->decode) {
    double x1 = pd_k_det_ld(target, f32, i * 4), y1 = pd_k_det_ld(target, f32, i * 4 + 1);
    double x2 = pd_k_det_ld(target, f32, i * 4 + 2), y2 = pd_k_det_ld(target, f32, i * 4 + 3);
    r[0] = ((x1 + x2) / 2 - pcx) / pw / v[0];
    r[1] = ((y1 + y2) / 2 - pcy) / ph / v[1];
    r[2] = log(fabs((x2 - x1 + one) / pw)) / v[2];
    r[3] = log(fabs((y2 - y1 + one) / ph)) / v[3];
  } else {
    double cx = v[0] * pd_k_det_ld(target, f32, o) * pw + pcx;
    double cy = v[1] * pd_k_det_ld(target, f32, o + 1) * ph + pcy;
    double w = exp(v[2] * pd_k_det_ld(target, f32, o + 2)) * pw;
    double h = exp(v[3] * pd_k_det_ld(target, f32, o + 3)) * ph;
    r[0] = cx - w / 2;
    r[1] = cy - h / 2;
    r[2] = cx + w / 2 - one;
    r[3] = cy + h / 2 - one;
  }
  for (int c = 0; c < 4; c++) pd_k_det_st(out, f32, o + c, r[c]);
}

PD_K_HOST_DEVICE static inline double pd_k_det_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

/* yolo_box's box e (image b, anchor a, cell (k, l): e = b na h w + a h w + k w + l): its 4
 * corners in boxes and its classes' scores, zeros below the threshold. */
PD_K_HOST_DEVICE static inline void pd_k_yolo_box_at(const pd_k_yolo_box *p, bool f32,
                                                     const void *x, const void *img, void *boxes,
                                                     void *scores, int64_t e) {
  int64_t hw = p->h * p->w, nb = p->na * hw, b = e / nb, a = e % nb / hw, cell = e % hw;
  int64_t k = cell / p->w, l = cell % p->w, per = 5 + p->classes;
  int64_t chans = p->na * per + (p->iou_aware ? p->na : 0);
  int64_t base = b * chans * hw, e0 = base + ((p->iou_aware ? p->na : 0) + a * per) * hw + cell;
  double conf = pd_k_det_sigmoid(pd_k_det_ld(x, f32, e0 + 4 * hw));
  if (p->iou_aware)
    conf = pow(conf, 1.0 - p->factor) *
           pow(pd_k_det_sigmoid(pd_k_det_ld(x, f32, base + a * hw + cell)), p->factor);
  if (conf < p->thresh) {
    for (int c = 0; c < 4; c++) pd_k_det_st(boxes, f32, e * 4 + c, 0.0);
    for (int64_t c = 0; c < p->classes; c++) pd_k_det_st(scores, f32, e * p->classes + c, 0.0);
    return;
  }
  double ih = p->im_dt == PD_INT32 ? (double)((const int32_t *)img)[2 * b]
                                   : (double)((const int64_t *)img)[2 * b];
  double iw = p->im_dt == PD_INT32 ? (double)((const int32_t *)img)[2 * b + 1]
                                   : (double)((const int64_t *)img)[2 * b + 1];
  float scale = p->scale, bias = -0.5f * (scale - 1.f);
  double W = (double)p->w, H = (double)p->h;
  double cx = ((double)l + pd_k_det_sigmoid(pd_k_det_ld(x, f32, e0)) * scale + bias) * iw / W;
  double cy = ((double)k + pd_k_det_sigmoid(pd_k_det_ld(x, f32, e0 + hw)) * scale + bias) * ih / H;
  double w = exp(pd_k_det_ld(x, f32, e0 + 2 * hw)) * (double)p->anchors[2 * a] * iw /
             (double)(p->ratio * p->w);
  double h = exp(pd_k_det_ld(x, f32, e0 + 3 * hw)) * (double)p->anchors[2 * a + 1] * ih /
             (double)(p->ratio * p->h);
  double box[4] = {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
  if (p->clip) {
    box[0] = box[0] > 0 ? box[0] : 0;
    box[1] = box[1] > 0 ? box[1] : 0;
    box[2] = box[2] < iw - 1 ? box[2] : iw - 1;
    box[3] = box[3] < ih - 1 ? box[3] : ih - 1;
  }
  for (int c = 0; c < 4; c++) pd_k_det_st(boxes, f32, e * 4 + c, box[c]);
  for (int64_t c = 0; c < p->classes; c++)
    pd_k_det_st(scores, f32, e * p->classes + c,
                conf * pd_k_det_sigmoid(pd_k_det_ld(x, f32, e0 + (5 + c) * hw)));
}

#endif /* PD_KERNELS_DETECT_T_H */
