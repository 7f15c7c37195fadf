/* act.cu -- the CUDA backend's activations with parameters (act, act_grad: gelu, leaky_relu,
 * elu, swish, softplus, relu6, hard_swish, log_sigmoid): one grid-stride kernel each way, the
 * arithmetic the CPU backend's (kernels/cpu/act_t.h), expression for expression (the CPU's fp32
 * expm1 of elu, a polynomial near 0 and e^x - 1 below, is expm1f here, within rounding of it). */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <math.h>

/* ---- Per-type math (the overloads glibc's <tgmath.h> picks on the CPU). ---- */
__device__ __forceinline__ float a_erf(float v) { return erff(v); }
__device__ __forceinline__ double a_erf(double v) { return erf(v); }
__device__ __forceinline__ float a_expm1(float v) { return expm1f(v); }
__device__ __forceinline__ double a_expm1(double v) { return expm1(v); }
__device__ __forceinline__ float a_log1p(float v) { return log1pf(v); }
__device__ __forceinline__ double a_log1p(double v) { return log1p(v); }
__device__ __forceinline__ float a_fabs(float v) { return fabsf(v); }
__device__ __forceinline__ double a_fabs(double v) { return fabs(v); }

/* sqrt(1/2), sqrt(2/pi), 1/sqrt(2 pi); the cubic coefficient of gelu's tanh form. */
#define ACT_SQRT1_2 0.70710678118654752440
#define ACT_SQRT_2_PI 0.79788456080286535588
#define ACT_INV_SQRT_2PI 0.39894228040143267794
#define ACT_GELU_C 0.044715

/* The logistic function without overflow: t / (1 + t) below 0, t = e^-|v|. */
template <typename T>
__device__ __forceinline__ T a_sigmoid(T v) {
  T t = pd_kcu_exp(-a_fabs(v));
  return (v < 0 ? t : (T)1) / ((T)1 + t);
}

template <typename T>
struct act_params {
  T p0, p1, p2;
};

template <typename T>
__device__ __forceinline__ T act_fwd(int op, T x, act_params<T> p) {
  switch (op) {
    case PD_K_GELU: return (T)0.5 * x * ((T)1 + a_erf(x * (T)ACT_SQRT1_2));
    case PD_K_GELU_TANH: /* x (1 + tanh u) / 2 = x sigmoid(2u), as act_t.h */
      return x * a_sigmoid((T)(2 * ACT_SQRT_2_PI) * (x + (T)ACT_GELU_C * x * x * x));
    case PD_K_LEAKY_RELU: return x > 0 ? x : p.p0 * x;
    case PD_K_ELU: return x > 0 ? x : p.p0 * a_expm1(x);
    case PD_K_SWISH: return x * a_sigmoid(p.p0 * x);
    case PD_K_SOFTPLUS: {
      T z = p.p0 * x;
      return z > p.p1 ? x : ((z > 0 ? z : (T)0) + a_log1p(pd_kcu_exp(-a_fabs(z)))) / p.p0;
    }
    case PD_K_RELU6: return x < 0 ? (T)0 : x > p.p0 ? p.p0 : x;
    case PD_K_HARD_SWISH: {
      T v = x + p.p2;
      return x * (v < 0 ? (T)0 : v > p.p0 ? p.p0 : v) / p.p1;
    }
    case PD_K_HARD_SIGMOID: {
      T v = p.p0 * x + p.p1;
      return v < 0 ? (T)0 : v > 1 ? (T)1 : v;
    }
    default: /* PD_K_LOG_SIGMOID */
      return (x < 0 ? x : (T)0) - a_log1p(pd_kcu_exp(-a_fabs(x)));
  }
}

template <typename T>
__device__ __forceinline__ T act_bwd(int op, T x, T d, act_params<T> p) {
  switch (op) {
    case PD_K_GELU:
      return d * ((T)0.5 * ((T)1 + a_erf(x * (T)ACT_SQRT1_2)) +
                  x * (T)ACT_INV_SQRT_2PI * pd_kcu_exp((T)-0.5 * x * x));
    case PD_K_GELU_TANH: { /* s + 2 x s (1 - s) u', s = sigmoid(2u), as act_t.h */
      T s = a_sigmoid((T)(2 * ACT_SQRT_2_PI) * (x + (T)ACT_GELU_C * x * x * x));
      return d * s *
             ((T)1 + (T)(2 * ACT_SQRT_2_PI) * x * ((T)1 - s) *
                         ((T)1 + (T)(3 * ACT_GELU_C) * x * x));
    }
    case PD_K_LEAKY_RELU: return x > 0 ? d : p.p0 * d;
    case PD_K_ELU: return x > 0 ? d : d * p.p0 * pd_kcu_exp(x);
    case PD_K_SWISH: {
      T s = a_sigmoid(p.p0 * x);
      return d * s * ((T)1 + p.p0 * x * ((T)1 - s));
    }
    case PD_K_SOFTPLUS: return p.p0 * x > p.p1 ? d : d * a_sigmoid(p.p0 * x);
    case PD_K_RELU6: return x > 0 && x < p.p0 ? d : (T)0;
    case PD_K_HARD_SWISH: {
      T v = x + p.p2;
      return v <= 0 ? (T)0 : d * (v < p.p0 ? ((T)2 * x + p.p2) / p.p1 : p.p0 / p.p1);
    }
    case PD_K_HARD_SIGMOID: {
      T v = p.p0 * x + p.p1;
      return v > 0 && v < 1 ? d * p.p0 : (T)0;
    }
    default: /* PD_K_LOG_SIGMOID */
      return d * a_sigmoid(-x);
  }
}

template <typename T>
__global__ void act_kernel(int op, int64_t n, act_params<T> p, const T *x, T *o) {
  PD_KCU_LOOP(j, n) { o[j] = act_fwd(op, x[j], p); }
}

template <typename T>
__global__ void act_grad_kernel(int op, int64_t n, act_params<T> p, const T *x, const T *d,
                                T *o) {
  PD_KCU_LOOP(j, n) { o[j] = act_bwd(op, x[j], d[j], p); }
}

template <typename T>
static act_params<T> params_of(const double q[3]) {
  return act_params<T>{(T)q[0], (T)q[1], (T)q[2]};
}

pd_status pd_kcu_act(pd_k_act op, pd_dtype dt, int64_t n, const double *p, const void *x,
                     void *out) {
  pd_status st = pd_k_act_check(op, dt, n, p);
  if (st) return st;
  if (n == 0) return PD_OK;
  double q[3];
  pd_k_act_canon(&op, p, q); /* silu: swish with beta 1 */
  unsigned nb = pd_kcu_blocks(n);
  if (dt == PD_FP32)
    act_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        op, n, params_of<float>(q), (const float *)x, (float *)out);
  else
    act_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        op, n, params_of<double>(q), (const double *)x, (double *)out);
  PD_KCU_LAUNCHED("act kernel");
  return PD_OK;
}

pd_status pd_kcu_act_grad(pd_k_act op, pd_dtype dt, int64_t n, const double *p, const void *x,
                          const void *dout, void *dx) {
  pd_status st = pd_k_act_check(op, dt, n, p);
  if (st) return st;
  if (n == 0) return PD_OK;
  double q[3];
  pd_k_act_canon(&op, p, q);
  unsigned nb = pd_kcu_blocks(n);
  if (dt == PD_FP32)
    act_grad_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        op, n, params_of<float>(q), (const float *)x, (const float *)dout, (float *)dx);
  else
    act_grad_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        op, n, params_of<double>(q), (const double *)x, (const double *)dout, (double *)dx);
  PD_KCU_LAUNCHED("act_grad kernel");
  return PD_OK;
}
