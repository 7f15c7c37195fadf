/* elementwise.cu -- the CUDA backend's elementwise kernels: broadcast binary ops, comparisons,
 * logical ops, unary activations and their gradients, scale, fill, cast and the Adam update.
 * Broadcast operands are walked through a pd_kcu_shape (size-1 dims dropped, contiguous dims
 * merged on the host, so a same-shape op is one flat loop); the arithmetic is the CPU
 * backend's, expression for expression. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <cuda/std/type_traits>
#include <math.h>

/* ---- Per-type math (the overloads glibc's <tgmath.h> picks on the CPU). ---- */
__device__ __forceinline__ float d_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double d_tanh(double v) { return tanh(v); }
__device__ __forceinline__ float d_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double d_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ float d_fabs(float v) { return fabsf(v); }
__device__ __forceinline__ double d_fabs(double v) { return fabs(v); }

/* ---- Binary ops. Integer types wrap through the unsigned type and never trap. ---- */
template <typename T>
struct bin_float {
  int op;
  __device__ T operator()(T a, T b) const {
    switch (op) {
      case PD_K_ADD: return a + b;
      case PD_K_SUB: return a - b;
      case PD_K_MUL: return a * b;
      case PD_K_DIV: return a / b;
      case PD_K_MAX: return (pd_kcu_isnan(a) || a > b) ? a : b;  /* NaN from either side */
      case PD_K_MIN: return (pd_kcu_isnan(a) || a < b) ? a : b;
      default: return pd_kcu_pow(a, b);                           /* PD_K_POW */
    }
  }
};

template <typename T, typename U>
struct bin_int {
  int op;
  __device__ T operator()(T a, T b) const {
    switch (op) {
      case PD_K_ADD: return (T)((U)a + (U)b);
      case PD_K_SUB: return (T)((U)a - (U)b);
      case PD_K_MUL: return (T)((U)a * (U)b);
      /* x / 0 = 0 (as NumPy); MIN / -1 wraps to MIN instead of trapping. */
      case PD_K_DIV: return b == 0 ? (T)0 : b == -1 ? (T)((U)0 - (U)a) : (T)(a / b);
      case PD_K_MAX: return a > b ? a : b;
      default: return a < b ? a : b;                              /* PD_K_MIN */
    }
  }
};

/* Comparisons (bool out); bools compare as 0/1 (any non-zero byte is true). */
template <typename T>
struct cmp_op {
  int op;
  __device__ uint8_t operator()(T a, T b) const {
    switch (op) {
      case PD_K_LT: return a < b;
      case PD_K_LE: return a <= b;
      case PD_K_GT: return a > b;
      case PD_K_GE: return a >= b;
      case PD_K_EQ: return a == b;
      default: return a != b;                                     /* PD_K_NE */
    }
  }
};

struct cmp_bool {
  int op;
  __device__ uint8_t operator()(uint8_t x, uint8_t y) const {
    bool a = x != 0, b = y != 0;
    switch (op) {
      case PD_K_LT: return !a && b;
      case PD_K_LE: return !a || b;
      case PD_K_GT: return a && !b;
      case PD_K_GE: return a || !b;
      case PD_K_EQ: return a == b;
      default: return a != b;
    }
  }
};

struct log_op {
  int op;
  __device__ uint8_t operator()(uint8_t x, uint8_t y) const {
    bool a = x != 0, b = y != 0;
    switch (op) {
      case PD_K_AND: return a && b;
      case PD_K_OR: return a || b;
      default: return a != b;                                     /* PD_K_XOR */
    }
  }
};

/* out[o0] = f(x[o1], y[o2]) over a broadcast shape. out may alias an operand of its shape:
 * each element is read and written by one thread. */
template <typename T, typename OT, typename F>
__global__ void bcast_kernel(const __grid_constant__ pd_kcu_shape s, OT *out, const T *x,
                             const T *y, F f) {
  PD_KCU_LOOP(i, s.numel) {
    int64_t off[3];
    pd_kcu_offsets<3>(s, i, off);
    out[off[0]] = f(x[off[1]], y[off[2]]);
  }
}

/* The shape of out = x OP y: operands [out, x, y]. */
static pd_status bcast_shape(int xnd, const int64_t *xdims, int ynd, const int64_t *ydims,
                             int axis, pd_kcu_shape *s) {
  int nd;
  int64_t od[PD_K_MAX_DIMS], xp[PD_K_MAX_DIMS], yp[PD_K_MAX_DIMS], str[3][PD_K_MAX_DIMS];
  pd_status st = pd_k_broadcast_strides(xnd, xdims, ynd, ydims, axis, &nd, od, xp, yp, str);
  if (st) return st;
  pd_kcu_shape_init(s, nd, od, 3, (const int64_t(*)[PD_K_MAX_DIMS])str);
  return PD_OK;
}

template <typename T, typename OT, typename F>
static pd_status run_bcast(const pd_kcu_shape &s, const void *x, const void *y, void *out, F f) {
  if (s.numel == 0) return PD_OK;
  bcast_kernel<T, OT, F><<<pd_kcu_blocks(s.numel), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      s, (OT *)out, (const T *)x, (const T *)y, f);
  PD_KCU_LAUNCHED("broadcast kernel");
  return PD_OK;
}

pd_status pd_kcu_binary(pd_k_binop op, pd_dtype dt, int xnd, const int64_t *xdims, const void *x,
                        int ynd, const int64_t *ydims, const void *y, int axis, void *out) {
  if ((unsigned)op >= PD_K_BINOP_COUNT_) return PD_EINVAL;
  bool is_int = dt == PD_INT32 || dt == PD_INT64;
  if (dt != PD_FP32 && dt != PD_FP64 && !is_int) return PD_EUNSUPPORTED;
  if (is_int && op == PD_K_POW) return PD_EUNSUPPORTED;
  pd_kcu_shape s;
  PD_KCU_TRY(bcast_shape(xnd, xdims, ynd, ydims, axis, &s));
  switch (dt) {
    case PD_FP32: return run_bcast<float, float>(s, x, y, out, bin_float<float>{op});
    case PD_FP64: return run_bcast<double, double>(s, x, y, out, bin_float<double>{op});
    case PD_INT32:
      return run_bcast<int32_t, int32_t>(s, x, y, out, bin_int<int32_t, uint32_t>{op});
    default: return run_bcast<int64_t, int64_t>(s, x, y, out, bin_int<int64_t, uint64_t>{op});
  }
}

pd_status pd_kcu_compare(pd_k_cmpop op, pd_dtype dt, int xnd, const int64_t *xdims,
                         const void *x, int ynd, const int64_t *ydims, const void *y, int axis,
                         uint8_t *out) {
  if ((unsigned)op >= PD_K_CMPOP_COUNT_) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64 && dt != PD_BOOL)
    return PD_EUNSUPPORTED;
  pd_kcu_shape s;
  PD_KCU_TRY(bcast_shape(xnd, xdims, ynd, ydims, axis, &s));
  switch (dt) {
    case PD_FP32: return run_bcast<float, uint8_t>(s, x, y, out, cmp_op<float>{op});
    case PD_FP64: return run_bcast<double, uint8_t>(s, x, y, out, cmp_op<double>{op});
    case PD_INT32: return run_bcast<int32_t, uint8_t>(s, x, y, out, cmp_op<int32_t>{op});
    case PD_INT64: return run_bcast<int64_t, uint8_t>(s, x, y, out, cmp_op<int64_t>{op});
    default: return run_bcast<uint8_t, uint8_t>(s, x, y, out, cmp_bool{op});
  }
}

pd_status pd_kcu_logical(pd_k_logop op, int xnd, const int64_t *xdims, const uint8_t *x, int ynd,
                         const int64_t *ydims, const uint8_t *y, int axis, uint8_t *out) {
  if ((unsigned)op >= PD_K_LOGOP_COUNT_) return PD_EINVAL;
  pd_kcu_shape s;
  PD_KCU_TRY(bcast_shape(xnd, xdims, ynd, ydims, axis, &s));
  return run_bcast<uint8_t, uint8_t>(s, x, y, out, log_op{op});
}

__global__ void not_kernel(int64_t n, const uint8_t *x, uint8_t *out) {
  PD_KCU_LOOP(i, n) out[i] = !x[i];
}

/* No status to return: a launch failure is only recorded for pd_k_cuda_error() (and shows up
 * at the next synchronizing call). */
void pd_kcu_logical_not(int64_t n, const uint8_t *x, uint8_t *out) {
  if (n <= 0) return;
  not_kernel<<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(n, x, out);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) pd_kcu_cuda_fail("logical_not kernel", e);
}

/* ---- Unary ops ---- */

template <typename T>
__global__ void unary_kernel(int op, int64_t n, const T *x, T *o) {
  PD_KCU_LOOP(j, n) {
    T v = x[j];
    T r;
    switch (op) {
      case PD_K_RELU: r = v < 0 ? (T)0 : v; break;  /* keeps NaN */
      case PD_K_SIGMOID: r = (T)1 / ((T)1 + pd_kcu_exp(-v)); break;
      case PD_K_TANH: r = d_tanh(v); break;
      case PD_K_EXP: r = pd_kcu_exp(v); break;
      case PD_K_LOG: r = pd_kcu_log(v); break;
      case PD_K_SQRT: r = d_sqrt(v); break;
      case PD_K_SQUARE: r = v * v; break;
      default: r = d_fabs(v); break;                 /* PD_K_ABS */
    }
    o[j] = r;
  }
}

/* dx = dout * f'(x), from x (log, square, abs) or y = f(x) (the others). */
template <typename T>
__global__ void unary_grad_kernel(int op, int64_t n, const T *x, const T *y, const T *d, T *o) {
  PD_KCU_LOOP(j, n) {
    T r;
    switch (op) {
      case PD_K_RELU: r = y[j] > 0 ? d[j] : (T)0; break;
      case PD_K_SIGMOID: r = d[j] * y[j] * ((T)1 - y[j]); break;
      case PD_K_TANH: r = d[j] * ((T)1 - y[j] * y[j]); break;
      case PD_K_EXP: r = d[j] * y[j]; break;
      case PD_K_LOG: r = d[j] / x[j]; break;
      case PD_K_SQRT: r = d[j] * (T)0.5 / y[j]; break;
      case PD_K_SQUARE: r = d[j] * (T)2 * x[j]; break;
      default: r = x[j] > 0 ? d[j] : x[j] < 0 ? -d[j] : (T)0; break;  /* PD_K_ABS */
    }
    o[j] = r;
  }
}

pd_status pd_kcu_unary(pd_k_unop op, pd_dtype dt, int64_t n, const void *x, void *out) {
  if ((unsigned)op >= PD_K_UNOP_COUNT_ || n < 0) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (n == 0) return PD_OK;
  unsigned nb = pd_kcu_blocks(n);
  if (dt == PD_FP32)
    unary_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(op, n, (const float *)x,
                                                                  (float *)out);
  else
    unary_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(op, n, (const double *)x,
                                                                   (double *)out);
  PD_KCU_LAUNCHED("unary kernel");
  return PD_OK;
}

pd_status pd_kcu_unary_grad(pd_k_unop op, pd_dtype dt, int64_t n, const void *x, const void *out,
                            const void *dout, void *dx) {
  if ((unsigned)op >= PD_K_UNOP_COUNT_ || n < 0) return PD_EINVAL;
  bool reads_x = op == PD_K_LOG || op == PD_K_SQUARE || op == PD_K_ABS;
  if (n > 0 && (reads_x ? !x : !out)) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (n == 0) return PD_OK;
  const void *xr = reads_x ? x : NULL, *yr = reads_x ? NULL : out;
  unsigned nb = pd_kcu_blocks(n);
  if (dt == PD_FP32)
    unary_grad_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        op, n, (const float *)xr, (const float *)yr, (const float *)dout, (float *)dx);
  else
    unary_grad_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        op, n, (const double *)xr, (const double *)yr, (const double *)dout, (double *)dx);
  PD_KCU_LAUNCHED("unary_grad kernel");
  return PD_OK;
}

/* ---- scale ---- */

template <typename T>
__global__ void scale_kernel(int64_t n, const T *x, T a, T b, T *o) {
  PD_KCU_LOOP(j, n) o[j] = a * x[j] + b;
}

pd_status pd_kcu_scale(pd_dtype dt, int64_t n, const void *x, double a, double b, void *out) {
  if (n < 0) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (n == 0) return PD_OK;
  unsigned nb = pd_kcu_blocks(n);
  if (dt == PD_FP32)
    scale_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(n, (const float *)x, (float)a,
                                                                  (float)b, (float *)out);
  else
    scale_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(n, (const double *)x, a, b,
                                                                   (double *)out);
  PD_KCU_LAUNCHED("scale kernel");
  return PD_OK;
}

/* ---- fill: the value is converted on the host by the CPU backend's cast (the same rules),
 * then its bytes are replicated. ---- */

template <typename W>
__global__ void fill_kernel(int64_t n, W v, W *o) {
  PD_KCU_LOOP(j, n) o[j] = v;
}

pd_status pd_kcu_fill(pd_dtype dt, int64_t n, void *out, double value) {
  if (n < 0) return PD_EINVAL;
  union {
    uint8_t b;
    uint32_t w;
    uint64_t q;
  } one;
  one.q = 0;
  pd_status st = pd_k_cpu()->cast(PD_FP64, &value, dt, &one, 1);
  if (st) return st;
  if (n == 0) return PD_OK;
  switch (pd_dtype_size(dt)) {
    case 1: PD_KCU_CUDA(cudaMemsetAsync(out, one.b, (size_t)n, pd_kcu_stream)); return PD_OK;
    case 4:
      fill_kernel<uint32_t><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          n, one.w, (uint32_t *)out);
      break;
    default:
      fill_kernel<uint64_t><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          n, one.q, (uint64_t *)out);
      break;
  }
  PD_KCU_LAUNCHED("fill kernel");
  return PD_OK;
}

/* ---- cast: as the CPU's (kernels/cpu/index.c): to bool is x != 0; float to integer
 * truncates toward zero and saturates (NaN gives 0); integer to integer wraps; bools read as
 * 0/1. ---- */

__device__ __forceinline__ int32_t f_to_i32(double v) {
  if (v != v) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;
}
__device__ __forceinline__ int64_t f_to_i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;  /* the double 2^63 */
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

template <typename S, typename D>
__device__ __forceinline__ D convert(S v) {
  using cuda::std::is_same;
  if constexpr (is_same<D, uint8_t>::value) {
    return v != 0;
  } else if constexpr (is_same<S, uint8_t>::value) {
    return convert<int64_t, D>((int64_t)(v != 0));
  } else if constexpr (is_same<D, int32_t>::value) {
    if constexpr (cuda::std::is_floating_point<S>::value) return f_to_i32((double)v);
    else return (int32_t)(int64_t)v;
  } else if constexpr (is_same<D, int64_t>::value) {
    if constexpr (cuda::std::is_floating_point<S>::value) return f_to_i64((double)v);
    else return (int64_t)v;
  } else {
    return (D)v;  /* to float or double: rounded to nearest */
  }
}

template <typename S, typename D>
__global__ void cast_kernel(int64_t n, const S *s, D *d) {
  PD_KCU_LOOP(i, n) d[i] = convert<S, D>(s[i]);
}

template <typename S>
static pd_status cast_from(const void *src, pd_dtype dst_dt, void *dst, int64_t n) {
  unsigned nb = pd_kcu_blocks(n);
  cudaStream_t q = pd_kcu_stream;
  const S *s = (const S *)src;
  const int nt = PD_KCU_THREADS;
  switch (dst_dt) {
    case PD_BOOL: cast_kernel<S, uint8_t><<<nb, nt, 0, q>>>(n, s, (uint8_t *)dst); break;
    case PD_INT32: cast_kernel<S, int32_t><<<nb, nt, 0, q>>>(n, s, (int32_t *)dst); break;
    case PD_INT64: cast_kernel<S, int64_t><<<nb, nt, 0, q>>>(n, s, (int64_t *)dst); break;
    case PD_FP32: cast_kernel<S, float><<<nb, nt, 0, q>>>(n, s, (float *)dst); break;
    case PD_FP64: cast_kernel<S, double><<<nb, nt, 0, q>>>(n, s, (double *)dst); break;
    default: return PD_EUNSUPPORTED;
  }
  PD_KCU_LAUNCHED("cast kernel");
  return PD_OK;
}

static bool castable(pd_dtype dt) {
  return dt == PD_BOOL || dt == PD_INT32 || dt == PD_INT64 || dt == PD_FP32 || dt == PD_FP64;
}

pd_status pd_kcu_cast(pd_dtype src_dt, const void *src, pd_dtype dst_dt, void *dst, int64_t n) {
  if (n < 0) return PD_EINVAL;
  if (!castable(src_dt) || !castable(dst_dt)) return PD_EUNSUPPORTED;
  if (n == 0) return PD_OK;
  switch (src_dt) {
    case PD_BOOL: return cast_from<uint8_t>(src, dst_dt, dst, n);
    case PD_INT32: return cast_from<int32_t>(src, dst_dt, dst, n);
    case PD_INT64: return cast_from<int64_t>(src, dst_dt, dst, n);
    case PD_FP32: return cast_from<float>(src, dst_dt, dst, n);
    default: return cast_from<double>(src, dst_dt, dst, n);
  }
}
