/* detection.c -- the CPU backend's box_coder and yolo_box (kernels.h): a loop over the output
 * boxes, each computed by kernels/detect_t.h's arithmetic, which the CUDA kernels share. */
#include "config.h"

#include "kernels/cpu/cpu.h"
#include "kernels/detect_t.h"

pd_status pd_kcpu_box_coder(pd_dtype dt, const pd_k_box_coder *p, const void *prior,
                            const void *prior_var, const void *target, void *out) {
  pd_status st = pd_k_box_coder_check(dt, p, prior, target, out);
  if (st) return st;
  for (int64_t e = 0; e < p->n * p->j; e++)
    pd_k_box_coder_at(p, dt == PD_FP32, prior, prior_var, target, out, e);
  return PD_OK;
}

pd_status pd_kcpu_yolo_box(pd_dtype dt, const pd_k_yolo_box *p, const void *x, const void *img,
                           void *boxes, void *scores) {
  pd_status st = pd_k_yolo_box_check(dt, p, x, img, boxes, scores);
  if (st) return st;
  for (int64_t e = 0; e < p->n * p->na * p->h * p->w; e++)
    pd_k_yolo_box_at(p, dt == PD_FP32, x, img, boxes, scores, e);
  return PD_OK;
}
