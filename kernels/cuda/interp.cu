/* interp.cu -- the CUDA backend's image resampling by separable tables and its gradient
 * (kernels.h: interp2d, interp2d_grad: nearest, linear and cubic taps), the CPU's arithmetic
 * (kernels/cpu/interp_t.h): the forward pass a thread per output, its taps summed in the CPU's
 * order; the gradient a zeroed dx and a thread per dy element adding to its taps with atomics
 * (in no fixed order, so within rounding of the CPU's). */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

/* Output o's image, channel, row and column, and the element offsets of x's planes. */
struct interp_at {
  int64_t n, c, k, l;
};

__device__ __forceinline__ interp_at interp_split(const pd_k_interp2d &p, int64_t o) {
  if (p.nhwc) return {o / (p.oh * p.ow * p.c), o % p.c, o / (p.ow * p.c) % p.oh, o / p.c % p.ow};
  return {o / (p.c * p.oh * p.ow), o / (p.oh * p.ow) % p.c, o / p.ow % p.oh, o % p.ow};
}

/* Offset of x[n, c, r, q] (either layout). */
__device__ __forceinline__ int64_t interp_off(const pd_k_interp2d &p, int64_t n, int64_t c,
                                              int64_t r, int64_t q) {
  return p.nhwc ? ((n * p.h + r) * p.w + q) * p.c + c : ((n * p.c + c) * p.h + r) * p.w + q;
}

template <typename T>
__global__ void interp_fwd_kernel(const pd_k_interp2d p, const T *x, T *y) {
  const int64_t *iy = p.idx, *ix = iy + p.th * p.oh;
  const double *ly = p.lam, *lx = ly + p.th * p.oh;
  PD_KCU_LOOP(o, p.n * p.c * p.oh * p.ow) {
    interp_at a = interp_split(p, o);
    if (p.th == 1 && p.tw == 1) {
      y[o] = x[interp_off(p, a.n, a.c, iy[a.k], ix[a.l])];
      continue;
    }
    T s = 0;
    if (p.th == 4) {
      for (int i = 0; i < 4; i++) {
        int64_t r = iy[i * p.oh + a.k];
        T row = x[interp_off(p, a.n, a.c, r, ix[a.l])] * (T)lx[a.l];
        for (int t = 1; t < 4; t++)
          row = row + x[interp_off(p, a.n, a.c, r, ix[t * p.ow + a.l])] * (T)lx[t * p.ow + a.l];
        T term = row * (T)ly[i * p.oh + a.k];
        s = i ? s + term : term;
      }
    } else {
      for (int t = 0; t < p.tw; t++)
        for (int i = 0; i < p.th; i++) {
          T term = x[interp_off(p, a.n, a.c, iy[i * p.oh + a.k], ix[t * p.ow + a.l])] *
                   (T)ly[i * p.oh + a.k] * (T)lx[t * p.ow + a.l];
          s = t || i ? s + term : term;
        }
    }
    y[o] = s;
  }
}

template <typename T>
__global__ void interp_bwd_kernel(const pd_k_interp2d p, const T *dy, T *dx) {
  const int64_t *iy = p.idx, *ix = iy + p.th * p.oh;
  const double *ly = p.lam, *lx = ly + p.th * p.oh;
  PD_KCU_LOOP(o, p.n * p.c * p.oh * p.ow) {
    interp_at a = interp_split(p, o);
    T g = dy[o];
    if (p.th == 1 && p.tw == 1) {
      atomicAdd(dx + interp_off(p, a.n, a.c, iy[a.k], ix[a.l]), g);
      continue;
    }
    for (int t = 0; t < p.tw; t++)
      for (int i = 0; i < p.th; i++)
        atomicAdd(dx + interp_off(p, a.n, a.c, iy[i * p.oh + a.k], ix[t * p.ow + a.l]),
                  g * (T)ly[i * p.oh + a.k] * (T)lx[t * p.ow + a.l]);
  }
}

pd_status pd_kcu_interp2d(pd_dtype dt, const pd_k_interp2d *p, const void *x, void *y) {
  PD_KCU_TRY(pd_k_interp2d_check(dt, p, x, y));
  int64_t n = p->n * p->c * p->oh * p->ow;
  if (n == 0) return PD_OK;
  if (dt == PD_FP32)
    interp_fwd_kernel<float><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const float *)x, (float *)y);
  else
    interp_fwd_kernel<double><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const double *)x, (double *)y);
  PD_KCU_LAUNCHED("interp2d kernel");
  return PD_OK;
}

pd_status pd_kcu_interp2d_grad(pd_dtype dt, const pd_k_interp2d *p, const void *dy, void *dx) {
  PD_KCU_TRY(pd_k_interp2d_check(dt, p, dy, dx));
  int64_t n = p->n * p->c * p->oh * p->ow, nin = p->n * p->c * p->h * p->w;
  if (nin == 0) return PD_OK;
  PD_KCU_CUDA(cudaMemsetAsync(dx, 0, (size_t)nin * pd_dtype_size(dt), pd_kcu_stream));
  if (dt == PD_FP32)
    interp_bwd_kernel<float><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const float *)dy, (float *)dx);
  else
    interp_bwd_kernel<double><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const double *)dy, (double *)dx);
  PD_KCU_LAUNCHED("interp2d_grad kernel");
  return PD_OK;
}
