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

/* The source coordinate of grid value g on an axis of size s, and its derivative by g. */
template <typename T>
__device__ T gs_coord(T g, int64_t s, bool ac, int padding, T *d) {
  T hi = (T)(s - 1), f = (T)((double)(ac ? s - 1 : s) * 0.5);
  T u = ac ? (g + (T)1) * f : (g + (T)1) * f - (T)0.5, dd = f;
  if (padding == 2) {
    if (ac && s == 1) {
      u = 0, dd = 0;
    } else {
      T a0 = ac ? u : u + (T)0.5, range = (T)((double)(ac ? s - 1 : s) * 2);
      T a = a0 < 0 ? -a0 : a0, sg = a0 < 0 ? (T)-1 : (T)1;
      T extra = a - (T)floor((double)(a / range)) * range;
      if (extra <= range - extra) {
        u = extra, dd *= sg;
      } else {
        u = range - extra, dd *= -sg;
      }
      if (!ac) u = u - (T)0.5;
    }
  }
  if (padding >= 1 && !(ac && padding == 2)) {
    if (u < 0) u = 0, dd = 0;
    if (u > hi) u = hi, dd = 0;
  }
  *d = dd;
  return u;
}

/* A sample point's corners: the bilinear weights and which corners lie in the image. */
template <typename T>
struct gs_corners {
  T dw, de, dn, ds;
  bool in[4];      /* (y0, x0), (y0, x1), (y1, x0), (y1, x1) */
  int64_t off[4];  /* their offsets in a plane */
};

template <typename T>
__device__ gs_corners<T> gs_corners_of(const pd_k_grid_sample &p, T u, T v) {
  gs_corners<T> k;
  T x0 = (T)floor((double)u), y0 = (T)floor((double)v), x1 = x0 + 1, y1 = y0 + 1;
  k.dw = u - x0, k.de = x1 - u, k.dn = v - y0, k.ds = y1 - v;
  bool ix0 = x0 >= 0 && x0 <= (T)(p.w - 1), ix1 = x1 >= 0 && x1 <= (T)(p.w - 1);
  bool iy0 = y0 >= 0 && y0 <= (T)(p.h - 1), iy1 = y1 >= 0 && y1 <= (T)(p.h - 1);
  int64_t c0 = ix0 ? (int64_t)x0 : 0, c1 = ix1 ? (int64_t)x1 : 0;
  int64_t r0 = iy0 ? (int64_t)y0 * p.w : 0, r1 = iy1 ? (int64_t)y1 * p.w : 0;
  k.in[0] = iy0 && ix0, k.in[1] = iy0 && ix1, k.in[2] = iy1 && ix0, k.in[3] = iy1 && ix1;
  k.off[0] = r0 + c0, k.off[1] = r0 + c1, k.off[2] = r1 + c0, k.off[3] = r1 + c1;
  return k;
}

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
      T xr = (T)round((double)u), yr = (T)round((double)v);
      bool in = xr >= 0 && xr <= (T)(p.w - 1) && yr >= 0 && yr <= (T)(p.h - 1);
      int64_t off = in ? (int64_t)yr * p.w + (int64_t)xr : 0;
      for (int64_t ch = 0; ch < p.c; ch++) yi[ch * oplane] = in ? xi[ch * plane + off] : (T)0;
      continue;
    }
    gs_corners<T> k = gs_corners_of(p, u, v);
    for (int64_t ch = 0; ch < p.c; ch++) {
      const T *xc = xi + ch * plane;
      T v00 = k.in[0] ? xc[k.off[0]] : (T)0, v01 = k.in[1] ? xc[k.off[1]] : (T)0;
      T v10 = k.in[2] ? xc[k.off[2]] : (T)0, v11 = k.in[3] ? xc[k.off[3]] : (T)0;
      yi[ch * oplane] = v00 * k.de * k.ds + v01 * k.dw * k.ds + v10 * k.de * k.dn +
                        v11 * k.dw * k.dn;
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
      T xr = (T)round((double)u), yr = (T)round((double)v);
      bool in = xr >= 0 && xr <= (T)(p.w - 1) && yr >= 0 && yr <= (T)(p.h - 1);
      if (dxi && in)
        for (int64_t ch = 0; ch < p.c; ch++)
          atomicAdd(dxi + ch * plane + (int64_t)yr * p.w + (int64_t)xr, dyi[ch * oplane]);
      if (dgrid) dgrid[2 * pt] = dgrid[2 * pt + 1] = 0;
      continue;
    }
    gs_corners<T> k = gs_corners_of(p, u, v);
    T gu = 0, gv = 0;
    for (int64_t ch = 0; ch < p.c; ch++) {
      const T *xc = xi + ch * plane;
      T g = dyi[ch * oplane];
      T v00 = k.in[0] ? xc[k.off[0]] : (T)0, v01 = k.in[1] ? xc[k.off[1]] : (T)0;
      T v10 = k.in[2] ? xc[k.off[2]] : (T)0, v11 = k.in[3] ? xc[k.off[3]] : (T)0;
      gu += g * ((v01 - v00) * k.ds + (v11 - v10) * k.dn);
      gv += g * ((v10 - v00) * k.de + (v11 - v01) * k.dw);
      if (!dxi) continue;
      T *dc = dxi + ch * plane;
      T w[4] = {k.de * k.ds, k.dw * k.ds, k.de * k.dn, k.dw * k.dn};
      for (int q = 0; q < 4; q++)
        if (k.in[q]) atomicAdd(dc + k.off[q], g * w[q]);
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
