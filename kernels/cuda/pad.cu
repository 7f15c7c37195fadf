/* pad.cu -- the CUDA backend's pad and pad_grad (pad, pad2d, pad3d): one thread per element of
 * the padded tensor, walking its dims from the last; the gradient zeroes dx and adds each
 * element of dout into the element of x it read (atomically: a border repeats elements). */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

/* The padding's geometry, passed by value. */
struct pad_geom {
  int nd;
  pd_k_pad_mode mode;
  int64_t numel;  /* of out */
  int64_t xd[PD_K_MAX_DIMS], od[PD_K_MAX_DIMS], before[PD_K_MAX_DIMS];
};

/* The offset in x that element j of out reads, or -1 (the constant border). */
__device__ __forceinline__ int64_t pad_src(const pad_geom &g, int64_t j) {
  int64_t off = 0, scale = 1;
  for (int k = g.nd - 1; k >= 0; k--) {
    int64_t i = pd_k_pad_src(j % g.od[k], g.xd[k], g.before[k], g.mode);
    j /= g.od[k];
    if (i < 0) return -1;
    off += i * scale;
    scale *= g.xd[k];
  }
  return off;
}

template <typename W>
__global__ void pad_kernel(const __grid_constant__ pad_geom g, W value, const W *x, W *out) {
  PD_KCU_LOOP(j, g.numel) {
    int64_t s = pad_src(g, j);
    out[j] = s < 0 ? value : x[s];
  }
}

static __device__ __forceinline__ void pad_atomic_add(float *a, float v) { atomicAdd(a, v); }
static __device__ __forceinline__ void pad_atomic_add(double *a, double v) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600
  atomicAdd(a, v);
#else
  unsigned long long *p = (unsigned long long *)a, old = *p, seen;
  do {
    seen = old;
    old = atomicCAS(p, seen, __double_as_longlong(__longlong_as_double(seen) + v));
  } while (seen != old);
#endif
}

template <typename T>
__global__ void pad_grad_kernel(const __grid_constant__ pad_geom g, const T *dout, T *dx) {
  PD_KCU_LOOP(j, g.numel) {
    int64_t s = pad_src(g, j);
    if (s >= 0) pad_atomic_add(&dx[s], dout[j]);
  }
}

/* The geometry after the shared check; *nx the elements of x. */
static pd_status pad_begin(pad_geom *g, pd_dtype dt, int nd, const int64_t *xd,
                           const int64_t *before, const int64_t *after, pd_k_pad_mode mode,
                           bool grad, int64_t *nx) {
  pd_status st = pd_k_pad_check(dt, nd, xd, before, after, mode, grad, g->od);
  if (st) return st;
  g->nd = nd;
  g->mode = mode;
  for (int k = 0; k < nd; k++) {
    g->xd[k] = xd[k];
    g->before[k] = before[k];
  }
  g->numel = pd_k_numel(nd, g->od);
  *nx = pd_k_numel(nd, xd);
  return PD_OK;
}

template <typename W>
static void launch(const pad_geom &g, W value, const void *x, void *out) {
  pad_kernel<W><<<pd_kcu_blocks(g.numel), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      g, value, (const W *)x, (W *)out);
}

pd_status pd_kcu_pad(pd_dtype dt, int nd, const int64_t *xd, const int64_t *before,
                     const int64_t *after, pd_k_pad_mode mode, double value, const void *x,
                     void *out) {
  pad_geom g;
  int64_t nx;
  PD_KCU_TRY(pad_begin(&g, dt, nd, xd, before, after, mode, false, &nx));
  if (g.numel == 0) return PD_OK;
  /* As the CPU's: an integer value outside int32's range, or NaN, pads with 0. */
  bool fits = value > -2147483648.0 && value < 2147483648.0;
  switch (dt) {
    case PD_FP32: launch<float>(g, (float)value, x, out); break;
    case PD_FP64: launch<double>(g, value, x, out); break;
    case PD_INT32: launch<int32_t>(g, fits ? (int32_t)value : 0, x, out); break;
    default: launch<int64_t>(g, fits ? (int64_t)value : 0, x, out); break;
  }
  PD_KCU_LAUNCHED("pad kernel");
  return PD_OK;
}

pd_status pd_kcu_pad_grad(pd_dtype dt, int nd, const int64_t *xd, const int64_t *before,
                          const int64_t *after, pd_k_pad_mode mode, const void *dout, void *dx) {
  pad_geom g;
  int64_t nx;
  PD_KCU_TRY(pad_begin(&g, dt, nd, xd, before, after, mode, true, &nx));
  if (nx == 0) return PD_OK;
  PD_KCU_CUDA(cudaMemsetAsync(dx, 0, (size_t)nx * pd_dtype_size(dt), pd_kcu_stream));
  if (dt == PD_FP32)
    pad_grad_kernel<float><<<pd_kcu_blocks(g.numel), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        g, (const float *)dout, (float *)dx);
  else
    pad_grad_kernel<double><<<pd_kcu_blocks(g.numel), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        g, (const double *)dout, (double *)dx);
  PD_KCU_LAUNCHED("pad_grad kernel");
  return PD_OK;
}
