/* rnn_cell.cu -- the CUDA backend's gate arithmetic of the fused LSTM and GRU steps (kernels.h:
 * lstm_cell, gru_cell and their gradients): one grid-stride kernel each, a thread per (row,
 * unit), the expressions of the CPU backend's (kernels/cpu/rnn_cell.c). */
#include "config.h"
#include "kernels/cuda/cuda_int.h"
#include "kernels/kernels_int.h"

#include <math.h>

__device__ __forceinline__ float c_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double c_tanh(double v) { return tanh(v); }

template <typename T>
__device__ __forceinline__ T c_sigmoid(T v) {
  return (T)1 / ((T)1 + pd_kcu_exp(-v));
}

template <typename T>
__global__ void lstm_cell_kernel(int64_t n, int64_t H, T *g, const T *pc, T *c, T *h) {
  PD_KCU_LOOP(k, n * H) {
    int64_t r = k / H, j = k % H;
    T *gr = g + r * 4 * H;
    T i = c_sigmoid(gr[j]), f = c_sigmoid(gr[H + j]), gg = c_tanh(gr[2 * H + j]);
    T o = c_sigmoid(gr[3 * H + j]);
    gr[j] = i, gr[H + j] = f, gr[2 * H + j] = gg, gr[3 * H + j] = o;
    T cv = f * pc[k] + i * gg;
    c[k] = cv;
    h[k] = o * c_tanh(cv);
  }
}

template <typename T>
__global__ void lstm_cell_grad_kernel(int64_t n, int64_t H, const T *g, const T *pc, const T *c,
                                      const T *dh, T *dc, T *dg) {
  PD_KCU_LOOP(k, n * H) {
    int64_t r = k / H, j = k % H;
    const T *gr = g + r * 4 * H;
    T *dgr = dg + r * 4 * H;
    T i = gr[j], f = gr[H + j], gg = gr[2 * H + j], o = gr[3 * H + j], t = c_tanh(c[k]);
    T dcj = dc[k] + dh[k] * o * ((T)1 - t * t);
    dgr[j] = dcj * gg * i * ((T)1 - i);
    dgr[H + j] = dcj * pc[k] * f * ((T)1 - f);
    dgr[2 * H + j] = dcj * i * ((T)1 - gg * gg);
    dgr[3 * H + j] = dh[k] * t * o * ((T)1 - o);
    dc[k] = dcj * f;
  }
}

template <typename T>
__global__ void gru_cell_kernel(int64_t n, int64_t H, const T *u, const T *hp, const T *b,
                                const T *ph, T *s, T *h) {
  PD_KCU_LOOP(k, n * H) {
    int64_t r = k / H, j = k % H;
    const T *ur = u + r * 3 * H, *pr = hp + r * 3 * H;
    T *sr = s + r * 4 * H;
    T rg = c_sigmoid(ur[j] + pr[j] + b[j]), z = c_sigmoid(ur[H + j] + pr[H + j] + b[H + j]);
    T hn = pr[2 * H + j] + b[2 * H + j], ng = c_tanh(ur[2 * H + j] + rg * hn);
    sr[j] = rg, sr[H + j] = z, sr[2 * H + j] = ng, sr[3 * H + j] = hn;
    h[k] = ((T)1 - z) * ng + z * ph[k];
  }
}

template <typename T>
__global__ void gru_cell_grad_kernel(int64_t n, int64_t H, const T *s, const T *ph, T *dh, T *du,
                                     T *dhp) {
  PD_KCU_LOOP(k, n * H) {
    int64_t r = k / H, j = k % H;
    const T *sr = s + r * 4 * H;
    T *dur = du + r * 3 * H, *dpr = dhp + r * 3 * H;
    T rg = sr[j], z = sr[H + j], ng = sr[2 * H + j], hn = sr[3 * H + j], d = dh[k];
    T dn = d * ((T)1 - z) * ((T)1 - ng * ng);
    T dr = dn * hn * rg * ((T)1 - rg), dz = d * (ph[k] - ng) * z * ((T)1 - z);
    dur[j] = dpr[j] = dr;
    dur[H + j] = dpr[H + j] = dz;
    dur[2 * H + j] = dn;
    dpr[2 * H + j] = dn * rg;
    dh[k] = d * z;
  }
}

pd_status pd_kcu_lstm_cell(pd_dtype dt, int64_t n, int64_t h, void *g,
                                      const void *pc, void *c, void *hout) {
  pd_status st = pd_k_rnn_cell_check(dt, n, h);
  if (st || n == 0 || h == 0) return st;
  unsigned nb = pd_kcu_blocks(n * h);
  if (dt == PD_FP32)
    lstm_cell_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, h, (float *)g, (const float *)pc, (float *)c, (float *)hout);
  else
    lstm_cell_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, h, (double *)g, (const double *)pc, (double *)c, (double *)hout);
  PD_KCU_LAUNCHED("lstm_cell kernel");
  return PD_OK;
}

pd_status pd_kcu_lstm_cell_grad(pd_dtype dt, int64_t n, int64_t h, const void *g,
                                           const void *pc, const void *c, const void *dh,
                                           void *dc, void *dg) {
  pd_status st = pd_k_rnn_cell_check(dt, n, h);
  if (st || n == 0 || h == 0) return st;
  unsigned nb = pd_kcu_blocks(n * h);
  if (dt == PD_FP32)
    lstm_cell_grad_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, h, (const float *)g, (const float *)pc, (const float *)c, (const float *)dh,
        (float *)dc, (float *)dg);
  else
    lstm_cell_grad_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, h, (const double *)g, (const double *)pc, (const double *)c, (const double *)dh,
        (double *)dc, (double *)dg);
  PD_KCU_LAUNCHED("lstm_cell_grad kernel");
  return PD_OK;
}

pd_status pd_kcu_gru_cell(pd_dtype dt, int64_t n, int64_t h, const void *u,
                                     const void *hp, const void *b, const void *ph, void *s,
                                     void *hout) {
  pd_status st = pd_k_rnn_cell_check(dt, n, h);
  if (st || n == 0 || h == 0) return st;
  unsigned nb = pd_kcu_blocks(n * h);
  if (dt == PD_FP32)
    gru_cell_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, h, (const float *)u, (const float *)hp, (const float *)b, (const float *)ph,
        (float *)s, (float *)hout);
  else
    gru_cell_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, h, (const double *)u, (const double *)hp, (const double *)b, (const double *)ph,
        (double *)s, (double *)hout);
  PD_KCU_LAUNCHED("gru_cell kernel");
  return PD_OK;
}

pd_status pd_kcu_gru_cell_grad(pd_dtype dt, int64_t n, int64_t h, const void *s,
                                          const void *ph, void *dh, void *du, void *dhp) {
  pd_status st = pd_k_rnn_cell_check(dt, n, h);
  if (st || n == 0 || h == 0) return st;
  unsigned nb = pd_kcu_blocks(n * h);
  if (dt == PD_FP32)
    gru_cell_grad_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, h, (const float *)s, (const float *)ph, (float *)dh, (float *)du, (float *)dhp);
  else
    gru_cell_grad_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, h, (const double *)s, (const double *)ph, (double *)dh, (double *)du, (double *)dhp);
  PD_KCU_LAUNCHED("gru_cell_grad kernel");
  return PD_OK;
}
