/* reduce.cu -- the CUDA backend's reductions: sum/mean/max/min over any set of axes and their
 * gradient, and the gradient of broadcast binary ops (each operand's gradient summed over the
 * dims it was broadcast along). All go through the generic reduction of reduce.cuh; sums and
 * means of floats accumulate in double, integer sums in int64 (wrapping), as on the CPU; running
 * sums (cumsum). */
#include "config.h"
#include "kernels/cuda/reduce.cuh"

#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <math.h>

/* ---- Folds ---- */

template <typename A>
struct op_sum {
  __device__ A identity() const { return (A)0; }
  __device__ A operator()(A a, A b) const { return a + b; }
};

struct op_sum_i64 {  /* wraps through uint64_t, never traps */
  __device__ int64_t identity() const { return 0; }
  __device__ int64_t operator()(int64_t a, int64_t b) const {
    return (int64_t)((uint64_t)a + (uint64_t)b);
  }
};

template <typename T>
__device__ __forceinline__ T lowest() {
  if constexpr (cuda::std::is_floating_point<T>::value) return (T)-INFINITY;
  else return cuda::std::numeric_limits<T>::min();
}
template <typename T>
__device__ __forceinline__ T highest() {
  if constexpr (cuda::std::is_floating_point<T>::value) return (T)INFINITY;
  else return cuda::std::numeric_limits<T>::max();
}

/* max/min keep a NaN once seen (as the CPU's). */
template <typename T>
struct op_max {
  __device__ T identity() const { return lowest<T>(); }
  __device__ T operator()(T a, T b) const { return (pd_kcu_isnan(a) || a > b) ? a : b; }
};
template <typename T>
struct op_min {
  __device__ T identity() const { return highest<T>(); }
  __device__ T operator()(T a, T b) const { return (pd_kcu_isnan(a) || a < b) ? a : b; }
};

/* ---- Sources and finishes ---- */

template <typename T, typename A>
struct src_x {
  const T *x;
  __device__ A operator()(const int64_t *off) const { return (A)x[off[0]]; }
};

template <typename A, typename T>
struct fin_cast {
  __device__ T operator()(A a) const { return (T)a; }
};

template <typename T>
struct fin_mean {
  double count;
  __device__ T operator()(double a) const { return (T)(a / count); }
};

/* ---- reduce ---- */

template <typename T>
static pd_status reduce_float(pd_k_redop op, const pd_kcu_red &g, const void *x, void *out) {
  T *o = (T *)out;
  switch (op) {
    case PD_K_RSUM:
      return pd_kcu_red_run<1, double>(g, src_x<T, double>{(const T *)x}, op_sum<double>{},
                                       fin_cast<double, T>{}, o);
    case PD_K_RMEAN:
      return pd_kcu_red_run<1, double>(g, src_x<T, double>{(const T *)x}, op_sum<double>{},
                                       fin_mean<T>{(double)g.r}, o);
    case PD_K_RMAX:
      return pd_kcu_red_run<1, T>(g, src_x<T, T>{(const T *)x}, op_max<T>{}, fin_cast<T, T>{}, o);
    default:
      return pd_kcu_red_run<1, T>(g, src_x<T, T>{(const T *)x}, op_min<T>{}, fin_cast<T, T>{}, o);
  }
}

template <typename T>
static pd_status reduce_int(pd_k_redop op, const pd_kcu_red &g, const void *x, void *out) {
  T *o = (T *)out;
  switch (op) {
    case PD_K_RSUM:
      return pd_kcu_red_run<1, int64_t>(g, src_x<T, int64_t>{(const T *)x}, op_sum_i64{},
                                        fin_cast<int64_t, T>{}, o);
    case PD_K_RMAX:
      return pd_kcu_red_run<1, T>(g, src_x<T, T>{(const T *)x}, op_max<T>{}, fin_cast<T, T>{}, o);
    default:
      return pd_kcu_red_run<1, T>(g, src_x<T, T>{(const T *)x}, op_min<T>{}, fin_cast<T, T>{}, o);
  }
}

pd_status pd_kcu_reduce(pd_k_redop op, pd_dtype dt, int nd, const int64_t *dims, const void *x,
                        int naxes, const int *axes, void *out) {
  if ((unsigned)op >= PD_K_REDOP_COUNT_) return PD_EINVAL;
  bool is_float = pd_dtype_is_kernel_float(dt);
  if (!is_float && (op == PD_K_RMEAN || (dt != PD_INT32 && dt != PD_INT64)))
    return PD_EUNSUPPORTED;
  bool red[PD_K_MAX_DIMS];
  PD_KCU_TRY(pd_k_reduced_mask(nd, dims, naxes, axes, red));
  int64_t str[1][PD_K_MAX_DIMS];
  pd_k_contig_strides(nd, dims, str[0]);
  pd_kcu_red g;
  pd_kcu_red_init(&g, nd, dims, red, 1, (const int64_t(*)[PD_K_MAX_DIMS])str);
  if (g.k == 0) return PD_OK;  /* nothing to write */
  if (g.r == 0) {              /* reducing zero elements */
    if (op == PD_K_RMAX || op == PD_K_RMIN) return PD_EINVAL;
    return pd_kcu_fill(dt, g.k, out, op == PD_K_RMEAN ? NAN : 0.0);
  }
  switch (dt) {
    case PD_FP32: return reduce_float<float>(op, g, x, out);
    case PD_FP64: return reduce_float<double>(op, g, x, out);
    case PD_INT32: return reduce_int<int32_t>(op, g, x, out);
    default: return reduce_int<int64_t>(op, g, x, out);
  }
}

/* ---- reduce_grad: elementwise over x's shape; operands [x/dx, out/dout] (the latter with
 * zero strides along the reduced dims). ---- */

template <typename T>
__global__ void reduce_grad_kernel(const __grid_constant__ pd_kcu_shape s, bool extreme, T scale,
                                   const T *x, const T *out, const T *d, T *dx) {
  PD_KCU_LOOP(i, s.numel) {
    int64_t off[2];
    pd_kcu_offsets<2>(s, i, off);
    if (extreme) dx[off[0]] = x[off[0]] == out[off[1]] ? d[off[1]] : (T)0;
    else dx[off[0]] = d[off[1]] * scale;
  }
}

pd_status pd_kcu_reduce_grad(pd_k_redop op, pd_dtype dt, int nd, const int64_t *dims,
                             const void *x, const void *out, const void *dout, int naxes,
                             const int *axes, void *dx) {
  if ((unsigned)op >= PD_K_REDOP_COUNT_) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  bool extreme = op == PD_K_RMAX || op == PD_K_RMIN;
  bool red[PD_K_MAX_DIMS];
  PD_KCU_TRY(pd_k_reduced_mask(nd, dims, naxes, axes, red));
  if (extreme && (!x || !out)) return PD_EINVAL;
  int64_t odims[PD_K_MAX_DIMS], str[2][PD_K_MAX_DIMS], count = 1;
  for (int d = 0; d < nd; d++) {
    odims[d] = red[d] ? 1 : dims[d];
    if (red[d]) count *= dims[d];
  }
  pd_k_contig_strides(nd, dims, str[0]);
  pd_k_contig_strides(nd, odims, str[1]);
  for (int d = 0; d < nd; d++)
    if (red[d]) str[1][d] = 0;
  pd_kcu_shape s;
  pd_kcu_shape_init(&s, nd, dims, 2, (const int64_t(*)[PD_K_MAX_DIMS])str);
  if (s.numel == 0) return PD_OK;
  double inv = op == PD_K_RMEAN ? 1.0 / (double)count : 1.0;
  unsigned nb = pd_kcu_blocks(s.numel);
  if (dt == PD_FP32)
    reduce_grad_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        s, extreme, (float)inv, (const float *)x, (const float *)out, (const float *)dout,
        (float *)dx);
  else
    reduce_grad_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        s, extreme, inv, (const double *)x, (const double *)out, (const double *)dout,
        (double *)dx);
  PD_KCU_LAUNCHED("reduce_grad kernel");
  return PD_OK;
}

/* ---- binary_grad: dx (dy) = the sum, over the dims x (y) was broadcast along, of the
 * elementwise gradient; a reduction over out's index space with operands [dout, x, y]. Ties
 * as in Fluid (max: dx where x > y, dy where x <= y; min: dx where x < y, dy where x >= y).
 * Each term is computed in T as on the CPU, the sum in double. ---- */

template <typename T>
struct grad_src {
  int op;
  bool y_side;
  const T *d, *x, *y;
  __device__ double operator()(const int64_t *off) const {
    T g = d[off[0]], a = x[off[1]], b = y[off[2]], r;
    if (!y_side) {
      switch (op) {
        case PD_K_ADD:
        case PD_K_SUB: r = g; break;
        case PD_K_MUL: r = g * b; break;
        case PD_K_DIV: r = g / b; break;
        case PD_K_MAX: r = a > b ? g : (T)0; break;
        case PD_K_MIN: r = a < b ? g : (T)0; break;
        default: r = g * b * pd_kcu_pow(a, b - (T)1); break;  /* PD_K_POW */
      }
    } else {
      switch (op) {
        case PD_K_ADD: r = g; break;
        case PD_K_SUB: r = -g; break;
        case PD_K_MUL: r = g * a; break;
        case PD_K_DIV: r = -g * a / (b * b); break;
        case PD_K_MAX: r = a <= b ? g : (T)0; break;
        case PD_K_MIN: r = a >= b ? g : (T)0; break;
        default: r = g * pd_kcu_pow(a, b) * pd_kcu_log(a); break;
      }
    }
    return (double)r;
  }
};

template <typename T>
static pd_status grad_side(int op, bool y_side, int nd, const int64_t *od, const int64_t *pad,
                           const int64_t (*str)[PD_K_MAX_DIMS], const void *dout, const void *x,
                           const void *y, void *dgrad) {
  bool red[PD_K_MAX_DIMS];
  for (int d = 0; d < nd; d++) red[d] = pad[d] != od[d];  /* broadcast along d */
  pd_kcu_red g;
  pd_kcu_red_init(&g, nd, od, red, 3, str);
  grad_src<T> src = {op, y_side, (const T *)dout, (const T *)x, (const T *)y};
  return pd_kcu_red_run<3, double>(g, src, op_sum<double>{}, fin_cast<double, T>{}, (T *)dgrad);
}

pd_status pd_kcu_binary_grad(pd_k_binop op, pd_dtype dt, int xnd, const int64_t *xdims,
                             const void *x, int ynd, const int64_t *ydims, const void *y,
                             int axis, const void *dout, void *dx, void *dy) {
  if ((unsigned)op >= PD_K_BINOP_COUNT_) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  int nd;
  int64_t od[PD_K_MAX_DIMS], xp[PD_K_MAX_DIMS], yp[PD_K_MAX_DIMS], str[3][PD_K_MAX_DIMS];
  pd_status st = pd_k_broadcast_strides(xnd, xdims, ynd, ydims, axis, &nd, od, xp, yp, str);
  if (st) return st;
  const int64_t(*s)[PD_K_MAX_DIMS] = (const int64_t(*)[PD_K_MAX_DIMS])str;
  for (int side = 0; side < 2; side++) {
    void *dg = side ? dy : dx;
    if (!dg) continue;
    const int64_t *pad = side ? yp : xp;
    if (dt == PD_FP32) st = grad_side<float>(op, side, nd, od, pad, s, dout, x, y, dg);
    else st = grad_side<double>(op, side, nd, od, pad, s, dout, x, y, dg);
    if (st) return st;
  }
  return PD_OK;
}

/* ---- cumsum: one thread per lane (p, q) of [pre, n, post], the lane's elements in order
 * (floats in double, integers in uint64_t: wrapping), as the CPU. ---- */
template <typename T, typename A>
__global__ void cumsum_kernel(int64_t lanes, int64_t n, int64_t post, bool exclusive,
                              bool reverse, const T *x, T *out) {
  for (int64_t lane = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lane < lanes;
       lane += (int64_t)gridDim.x * blockDim.x) {
    int64_t base = lane / post * n * post + lane % post;
    A acc = 0;
    for (int64_t k = 0; k < n; k++) {
      int64_t i = base + (reverse ? n - 1 - k : k) * post;
      A v;
      if constexpr (cuda::std::is_floating_point<T>::value) v = (A)x[i];
      else v = (A)(int64_t)x[i];
      if (exclusive) out[i] = (T)acc;
      acc += v;
      if (!exclusive) out[i] = (T)acc;
    }
  }
}

template <typename T, typename A>
static void launch_cumsum(int64_t pre, int64_t n, int64_t post, bool exclusive, bool reverse,
                          const void *x, void *out) {
  int64_t lanes = pre * post;
  cumsum_kernel<T, A><<<pd_kcu_blocks(lanes), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      lanes, n, post, exclusive, reverse, (const T *)x, (T *)out);
}

pd_status pd_kcu_cumsum(pd_dtype dt, int64_t pre, int64_t n, int64_t post, bool exclusive,
                        bool reverse, const void *x, void *out) {
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64) return PD_EUNSUPPORTED;
  PD_KCU_TRY(pd_k_slices_check(pre, n, post));
  if (pre == 0) return PD_OK;
  switch (dt) {
    case PD_FP32: launch_cumsum<float, double>(pre, n, post, exclusive, reverse, x, out); break;
    case PD_FP64: launch_cumsum<double, double>(pre, n, post, exclusive, reverse, x, out); break;
    case PD_INT32:
      launch_cumsum<int32_t, uint64_t>(pre, n, post, exclusive, reverse, x, out);
      break;
    default: launch_cumsum<int64_t, uint64_t>(pre, n, post, exclusive, reverse, x, out); break;
  }
  PD_KCU_LAUNCHED("cumsum kernel");
  return PD_OK;
}
