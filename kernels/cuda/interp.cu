/* interp.cu -- the CUDA backend's image resampling by separable tables and its gradient
 * (kernels.h: interp2d, interp2d_grad), the CPU's arithmetic (kernels/cpu/interp_t.h): the
 * forward pass a thread per output, its taps summed in the CPU's order; the gradient a zeroed
 * dx and a thread per dy element adding to its taps with atomics (in no fixed order, so within
 * rounding of the CPU's). */
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
  const int64_t *iy0 = p.idx, *iy1 = iy0 + p.oh, *ix0 = iy1 + p.oh, *ix1 = ix0 + p.ow;
  const double *ly0 = p.lam, *ly1 = ly0 + p.oh, *lx0 = ly1 + p.oh, *lx1 = lx0 + p.ow;
  PD_KCU_LOOP(o, p.n * p.c * p.oh * p.ow) {
    interp_at a = interp_split(p, o);
    T v00 = x[interp_off(p, a.n, a.c, iy0[a.k], ix0[a.l])];
    if (p.nearest) {
      y[o] = v00;
      continue;
    }
    T v10 = x[interp_off(p, a.n, a.c, iy1[a.k], ix0[a.l])];
    T v01 = x[interp_off(p, a.n, a.c, iy0[a.k], ix1[a.l])];
    T v11 = x[interp_off(p, a.n, a.c, iy1[a.k], ix1[a.l])];
    T wy0 = (T)ly0[a.k], wy1 = (T)ly1[a.k], wx0 = (T)lx0[a.l], wx1 = (T)lx1[a.l];
    y[o] = v00 * wy0 * wx0 + v10 * wy1 * wx0 + v01 * wy0 * wx1 + v11 * wy1 * wx1;
  }
}

template <typename T>
__global__ void interp_bwd_kernel(const pd_k_interp2d p, const T *dy, T *dx) {
  const int64_t *iy0 = p.idx, *iy1 = iy0 + p.oh, *ix0 = iy1 + p.oh, *ix1 = ix0 + p.ow;
  const double *ly0 = p.lam, *ly1 = ly0 + p.oh, *lx0 = ly1 + p.oh, *lx1 = lx0 + p.ow;
  PD_KCU_LOOP(o, p.n * p.c * p.oh * p.ow) {
    interp_at a = interp_split(p, o);
    T g = dy[o];
    if (p.nearest) {
      atomicAdd(dx + interp_off(p, a.n, a.c, iy0[a.k], ix0[a.l]), g);
      continue;
    }
    T wy0 = (T)ly0[a.k], wy1 = (T)ly1[a.k], wx0 = (T)lx0[a.l], wx1 = (T)lx1[a.l];
    atomicAdd(dx + interp_off(p, a.n, a.c, iy0[a.k], ix0[a.l]), g * wy0 * wx0);
    atomicAdd(dx + interp_off(p, a.n, a.c, iy1[a.k], ix0[a.l]), g * wy1 * wx0);
    atomicAdd(dx + interp_off(p, a.n, a.c, iy0[a.k], ix1[a.l]), g * wy0 * wx1);
    atomicAdd(dx + interp_off(p, a.n, a.c, iy1[a.k], ix1[a.l]), g * wy1 * wx1);
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
