/* detection.cu -- the CUDA backend's box_coder and yolo_box (kernels.h): a thread per output
 * box, computed by kernels/detect_t.h's arithmetic, the CPU's (kernels/cpu/detection.c). */
#include "config.h"
#include "kernels/cuda/cuda_int.h"
#include "kernels/detect_t.h"

static __global__ void box_coder_kernel(const pd_k_box_coder p, bool f32, const void *prior,
                                        const void *pvar, const void *target, void *out) {
  PD_KCU_LOOP(e, p.n * p.j) pd_k_box_coder_at(&p, f32, prior, pvar, target, out, e);
}

static __global__ void yolo_box_kernel(const pd_k_yolo_box p, bool f32, const void *x,
                                       const void *img, void *boxes, void *scores) {
  PD_KCU_LOOP(e, p.n * p.na * p.h * p.w) pd_k_yolo_box_at(&p, f32, x, img, boxes, scores, e);
}

pd_status pd_kcu_box_coder(pd_dtype dt, const pd_k_box_coder *p, const void *prior,
                           const void *prior_var, const void *target, void *out) {
  PD_KCU_TRY(pd_k_box_coder_check(dt, p, prior, target, out));
  int64_t n = p->n * p->j;
  if (n == 0) return PD_OK;
  box_coder_kernel<<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      *p, dt == PD_FP32, prior, prior_var, target, out);
  PD_KCU_LAUNCHED("box_coder kernel");
  return PD_OK;
}

pd_status pd_kcu_yolo_box(pd_dtype dt, const pd_k_yolo_box *p, const void *x, const void *img,
                          void *boxes, void *scores) {
  PD_KCU_TRY(pd_k_yolo_box_check(dt, p, x, img, boxes, scores));
  int64_t n = p->n * p->na * p->h * p->w;
  if (n == 0) return PD_OK;
  yolo_box_kernel<<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      *p, dt == PD_FP32, x, img, boxes, scores);
  PD_KCU_LAUNCHED("yolo_box kernel");
  return PD_OK;
}
