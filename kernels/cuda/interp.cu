/* interp.cu -- the CUDA backend's image resampling by separable tables and its gradient
 * (kernels.h: interp2d, interp2d_grad: nearest, linear and cubic taps), the CPU's arithmetic
 * (kernels/cpu/interp_t.h): the forward pass a thread per output, its taps summed in the CPU's
 * order; the gradient a zeroed dx and a thread per dy element adding to its taps with atomics
 * (in no fixed order, so within rounding of the CPU's). Also its sampling at grid points
 * (grid_sample, grid_sample_grad), below. */
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

/* ---- grid_sample: the CPU's arithmetic (kernels/cpu/interp_t.h): a thread per sample point,
 * over the channels; the gradient adds to dx with atomics and writes the point's dgrid. ---- */

/* The coordinates and corners (kernels/grid_sample_t.h, shared with the CPU's loops), one
 * overload per float type. */
#define PD_K_GS(name) name
#define PD_K_GS_HD __device__
#define T float
#include "kernels/grid_sample_t.h"
#undef T
#define T double
#include "kernels/grid_sample_t.h"
#undef T
#undef PD_K_GS
#undef PD_K_GS_HD

template <typename T>
__global__ void gs_fwd_kernel(const pd_k_grid_sample p, const T *x, const T *grid, T *y) {
  int64_t plane = p.h * p.w, oplane = p.oh * p.ow;
  PD_KCU_LOOP(pt, p.n * oplane) {
    int64_t img = pt / oplane, at = pt % oplane;
    T du, dv;
    T u = gs_coord(grid[2 * pt], p.w, p.align_corners, p.padding, &du);
    T v = gs_coord(grid[2 * pt + 1], p.h, p.align_corners, p.padding, &dv);
    const T *xi = x + img * p.c * plane;
    T *yi = y + img * p.c * oplane + at;
    if (p.nearest) {
      int64_t off;
      bool in = gs_nearest(p.h, p.w, u, v, &off);
      for (int64_t ch = 0; ch < p.c; ch++) yi[ch * oplane] = in ? xi[ch * plane + off] : (T)0;
      continue;
    }
    T f[4];
    bool in[4];
    int64_t off[4];
    gs_corners(p.h, p.w, u, v, f, in, off);
    for (int64_t ch = 0; ch < p.c; ch++) {
      const T *xc = xi + ch * plane;
      T v00 = in[0] ? xc[off[0]] : (T)0, v01 = in[1] ? xc[off[1]] : (T)0;
      T v10 = in[2] ? xc[off[2]] : (T)0, v11 = in[3] ? xc[off[3]] : (T)0;
      yi[ch * oplane] = v00 * f[1] * f[3] + v01 * f[0] * f[3] + v10 * f[1] * f[2] +
                        v11 * f[0] * f[2];
    }
  }
}

template <typename T>
__global__ void gs_bwd_kernel(const pd_k_grid_sample p, const T *x, const T *grid, const T *dy,
                              T *dx, T *dgrid) {
  int64_t plane = p.h * p.w, oplane = p.oh * p.ow;
  PD_KCU_LOOP(pt, p.n * oplane) {
    int64_t img = pt / oplane, at = pt % oplane;
    T du, dv;
    T u = gs_coord(grid[2 * pt], p.w, p.align_corners, p.padding, &du);
    T v = gs_coord(grid[2 * pt + 1], p.h, p.align_corners, p.padding, &dv);
    const T *xi = x + img * p.c * plane, *dyi = dy + img * p.c * oplane + at;
    T *dxi = dx ? dx + img * p.c * plane : NULL;
    if (p.nearest) {
      int64_t off;
      if (gs_nearest(p.h, p.w, u, v, &off) && dxi)
        for (int64_t ch = 0; ch < p.c; ch++) atomicAdd(dxi + ch * plane + off, dyi[ch * oplane]);
      if (dgrid) dgrid[2 * pt] = dgrid[2 * pt + 1] = 0;
      continue;
    }
    T f[4];
    bool in[4];
    int64_t off[4];
    gs_corners(p.h, p.w, u, v, f, in, off);
    T gu = 0, gv = 0;
    for (int64_t ch = 0; ch < p.c; ch++) {
      const T *xc = xi + ch * plane;
      T g = dyi[ch * oplane];
      T v00 = in[0] ? xc[off[0]] : (T)0, v01 = in[1] ? xc[off[1]] : (T)0;
      T v10 = in[2] ? xc[off[2]] : (T)0, v11 = in[3] ? xc[off[3]] : (T)0;
      gu += g * ((v01 - v00) * f[3] + (v11 - v10) * f[2]);
      gv += g * ((v10 - v00) * f[1] + (v11 - v01) * f[0]);
      if (!dxi) continue;
      T *dc = dxi + ch * plane, wt[4] = {f[1] * f[3], f[0] * f[3], f[1] * f[2], f[0] * f[2]};
      for (int q = 0; q < 4; q++)
        if (in[q]) atomicAdd(dc + off[q], g * wt[q]);
    }
    if (dgrid) {
      dgrid[2 * pt] = gu * du;
      dgrid[2 * pt + 1] = gv * dv;
    }
  }
}

pd_status pd_kcu_grid_sample(pd_dtype dt, const pd_k_grid_sample *p, const void *x,
                             const void *grid, void *y) {
  PD_KCU_TRY(pd_k_grid_sample_check(dt, p, x, grid, y));
  int64_t n = p->n * p->oh * p->ow;
  if (p->n * p->c == 0) return PD_OK;
  if (dt == PD_FP32)
    gs_fwd_kernel<float><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const float *)x, (const float *)grid, (float *)y);
  else
    gs_fwd_kernel<double><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const double *)x, (const double *)grid, (double *)y);
  PD_KCU_LAUNCHED("grid_sample kernel");
  return PD_OK;
}

pd_status pd_kcu_grid_sample_grad(pd_dtype dt, const pd_k_grid_sample *p, const void *x,
                                  const void *grid, const void *dy, void *dx, void *dgrid) {
  PD_KCU_TRY(pd_k_grid_sample_check(dt, p, x, grid, dy));
  int64_t n = p->n * p->oh * p->ow, nin = p->n * p->c * p->h * p->w;
  if (p->n == 0 || (!dx && !dgrid)) return PD_OK;
  size_t sz = pd_dtype_size(dt);
  if (dx && nin) PD_KCU_CUDA(cudaMemsetAsync(dx, 0, (size_t)nin * sz, pd_kcu_stream));
  if (p->c == 0) {  /* no channels: a zero grid gradient */
    if (dgrid) PD_KCU_CUDA(cudaMemsetAsync(dgrid, 0, (size_t)(2 * n) * sz, pd_kcu_stream));
    return PD_OK;
  }
  if (dt == PD_FP32)
    gs_bwd_kernel<float><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const float *)x, (const float *)grid, (const float *)dy, (float *)dx,
        (float *)dgrid);
  else
    gs_bwd_kernel<double><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const double *)x, (const double *)grid, (const double *)dy, (double *)dx,
        (double *)dgrid);
  PD_KCU_LAUNCHED("grid_sample_grad kernel");
  return PD_OK;
}
