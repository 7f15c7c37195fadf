/* dropout.cu -- the CUDA backend's dropout and dropout_grad (kernels.h): grid-stride kernels, a
 * thread per element, the expressions of the CPU backend's (kernels/cpu/dropout_t.h). The draws
 * come from the caller's uniform call, whose numbers are the CPU's bit for bit, so both
 * backends drop the same elements; the products are in double, rounded once (no FMA: a
 * product alone), so the outputs are the CPU's bit for bit too. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

template <typename T>
__global__ void drop_kernel(int64_t n, const T *x, const float *u, double p, double scale, T *out,
                            uint8_t *mask) {
  PD_KCU_LOOP(i, n) {
    bool keep = u ? u[i] >= p : true;
    out[i] = keep ? (T)((double)x[i] * scale) : (T)0;
    if (mask) mask[i] = u ? keep : p < 1;
  }
}

template <typename T>
__global__ void drop_grad_kernel(int64_t n, const T *dy, const uint8_t *mask, double scale,
                                 T *dx) {
  PD_KCU_LOOP(i, n) dx[i] = (mask && !mask[i]) ? (T)0 : (T)((double)dy[i] * scale);
}

pd_status pd_kcu_dropout(pd_dtype dt, int64_t n, const void *x, const float *u, double p,
                         double scale, void *out, uint8_t *mask) {
  PD_KCU_TRY(pd_k_dropout_check(dt, n, p, scale, x, out));
  if (n == 0) return PD_OK;
  if (dt == PD_FP32)
    drop_kernel<float><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, (const float *)x, u, p, scale, (float *)out, mask);
  else
    drop_kernel<double><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, (const double *)x, u, p, scale, (double *)out, mask);
  PD_KCU_LAUNCHED("dropout kernel");
  return PD_OK;
}

pd_status pd_kcu_dropout_grad(pd_dtype dt, int64_t n, const void *dy, const uint8_t *mask,
                              double scale, void *dx) {
  PD_KCU_TRY(pd_k_dropout_check(dt, n, 0, scale, dy, dx));
  if (n == 0) return PD_OK;
  if (dt == PD_FP32)
    drop_grad_kernel<float><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, (const float *)dy, mask, scale, (float *)dx);
  else
    drop_grad_kernel<double><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, (const double *)dy, mask, scale, (double *)dx);
  PD_KCU_LAUNCHED("dropout_grad kernel");
  return PD_OK;
}
