/* adaptive_pool.cu -- the CUDA backend's adaptive pooling and its gradient (kernels.h:
 * adaptive_pool2d, adaptive_pool2d_grad), with the CPU's arithmetic (kernels/cpu/
 * adaptive_pool_t.h) in the CPU's order, so the results are its bits: the forward pass a thread
 * per output, its window read in row-major order; the gradient as a gather with no atomics: the
 * first maximum of every window into scratch (max), then a thread per input element adding, in
 * the windows' row-major order, what each window holding it sends (the order the CPU's scatter
 * adds them in). */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

/* Window (oy, ox)'s rows [hs, he) and columns [ws, we). */
struct apool_win {
  int64_t hs, he, ws, we;
};

__device__ __forceinline__ apool_win ap_win(const pd_k_pool2d &p, int64_t oy, int64_t ox) {
  return {oy * p.h / p.oh, ((oy + 1) * p.h + p.oh - 1) / p.oh, ox * p.w / p.ow,
          ((ox + 1) * p.w + p.ow - 1) / p.ow};
}

/* The window's first maximum (its offset in the plane) and its sum in double. */
template <typename T>
__device__ __forceinline__ int64_t ap_scan(const pd_k_pool2d &p, const T *x, apool_win b,
                                           double *sum) {
  int64_t at = b.hs * p.w + b.ws;
  double s = 0;
  for (int64_t iy = b.hs; iy < b.he; iy++)
    for (int64_t ix = b.ws; ix < b.we; ix++) {
      s += x[iy * p.w + ix];
      if (x[iy * p.w + ix] > x[at]) at = iy * p.w + ix;
    }
  *sum = s;
  return at;
}

/* One thread per output (plane, oy, ox): y, or (y NULL) the first maximum's offset in arg. */
template <typename T>
__global__ void apool_fwd_kernel(const pd_k_pool2d p, const T *x, T *y, int64_t *arg) {
  int64_t per = p.oh * p.ow;
  PD_KCU_LOOP(o, p.n * p.c * per) {
    int64_t pl = o / per, oy = o % per / p.ow, ox = o % p.ow;
    apool_win b = ap_win(p, oy, ox);
    double sum;
    int64_t at = ap_scan(p, x + pl * p.h * p.w, b, &sum);
    if (arg) {
      arg[o] = at;
      continue;
    }
    int64_t count = (b.he - b.hs) * (b.we - b.ws);
    y[o] = p.type == PD_K_POOL_MAX ? x[pl * p.h * p.w + at] : (T)(sum / (double)count);
  }
}

/* One thread per input element (plane, iy, ix): the windows holding row iy are oy in
 * [floor(iy oh / h), ceil((iy + 1) oh / h) - 1], the columns likewise. */
template <typename T>
__global__ void apool_bwd_kernel(const pd_k_pool2d p, const T *dy, const int64_t *arg, T *dx) {
  int64_t per = p.h * p.w;
  bool mx = p.type == PD_K_POOL_MAX;
  PD_KCU_LOOP(e, p.n * p.c * per) {
    int64_t pl = e / per, iy = e % per / p.w, ix = e % p.w, self = iy * p.w + ix;
    int64_t oy0 = iy * p.oh / p.h, oy1 = ((iy + 1) * p.oh + p.h - 1) / p.h - 1;
    int64_t ox0 = ix * p.ow / p.w, ox1 = ((ix + 1) * p.ow + p.w - 1) / p.w - 1;
    if (oy1 > p.oh - 1) oy1 = p.oh - 1;
    if (ox1 > p.ow - 1) ox1 = p.ow - 1;
    T acc = 0;
    for (int64_t oy = oy0; oy <= oy1; oy++)
      for (int64_t ox = ox0; ox <= ox1; ox++) {
        apool_win b = ap_win(p, oy, ox);
        if (iy < b.hs || iy >= b.he || ix < b.ws || ix >= b.we) continue;
        int64_t o = (pl * p.oh + oy) * p.ow + ox;
        T g = dy[o];
        if (mx) {
          if (arg[o] == self) acc += g;
        } else {
          acc += (T)(g / (double)((b.he - b.hs) * (b.we - b.ws)));
        }
      }
    dx[e] = acc;
  }
}

pd_status pd_kcu_adaptive_pool2d(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y) {
  PD_KCU_TRY(pd_k_adaptive_pool_check(dt, p, x, y, y));
  int64_t n = p->n * p->c * p->oh * p->ow;
  if (n == 0) return PD_OK;
  if (dt == PD_FP32)
    apool_fwd_kernel<float><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const float *)x, (float *)y, NULL);
  else
    apool_fwd_kernel<double><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const double *)x, (double *)y, NULL);
  PD_KCU_LAUNCHED("adaptive_pool2d kernel");
  return PD_OK;
}

pd_status pd_kcu_adaptive_pool2d_grad(pd_dtype dt, const pd_k_pool2d *p, const void *x,
                                      const void *y, const void *dy, void *dx) {
  (void)y;
  PD_KCU_TRY(pd_k_adaptive_pool_check(dt, p, x, dy, dx));
  int64_t nout = p->n * p->c * p->oh * p->ow, nin = p->n * p->c * p->h * p->w;
  if (nin == 0) return PD_OK;
  int64_t *arg = NULL;
  if (p->type == PD_K_POOL_MAX) {
    if (!(arg = (int64_t *)pd_kcu_scratch((size_t)nout * sizeof *arg))) return PD_ENOMEM;
    if (dt == PD_FP32)
      apool_fwd_kernel<float><<<pd_kcu_blocks(nout), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          *p, (const float *)x, NULL, arg);
    else
      apool_fwd_kernel<double><<<pd_kcu_blocks(nout), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          *p, (const double *)x, NULL, arg);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      pd_k_dev_free(arg);
      return pd_kcu_cuda_fail("adaptive_pool2d_grad (maxima) kernel", e);
    }
  }
  if (dt == PD_FP32)
    apool_bwd_kernel<float><<<pd_kcu_blocks(nin), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const float *)dy, arg, (float *)dx);
  else
    apool_bwd_kernel<double><<<pd_kcu_blocks(nin), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const double *)dy, arg, (double *)dx);
  cudaError_t e = cudaGetLastError();
  pd_k_dev_free(arg); /* stream order: reused only by work queued after these kernels */
  if (e != cudaSuccess) return pd_kcu_cuda_fail("adaptive_pool2d_grad kernel", e);
  return PD_OK;
}
