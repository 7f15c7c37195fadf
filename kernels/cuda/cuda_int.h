/* cuda_int.h -- private to the CUDA backend (the .cu files of kernels/cuda/): the process-wide
 * device state (stream, cuBLAS handle, error flag), the error-reporting helpers and check
 * macros, launch helpers, the strided N-d shape the elementwise/transpose/reduction kernels
 * share, and the kernel functions that fill the pd_k_cuda() table. C++ (nvcc) only; not
 * installed.
 *
 * Conventions: every entry validates its arguments on the host, with the same checks and in the
 * same order as the CPU backend (so both return the same status), then queues its kernels on
 * pd_kcu_stream and returns. Every launch is followed by PD_KCU_LAUNCHED; every CUDA/cuBLAS
 * call goes through PD_KCU_CUDA / PD_KCU_BLAS, which record "call: error" for
 * pd_k_cuda_error() and return PD_ERUNTIME (PD_ENOMEM for an allocation). Index arithmetic is
 * int64 throughout; grid-stride loops cover any size with a bounded grid. */
#ifndef PD_KERNELS_CUDA_INT_H
#define PD_KERNELS_CUDA_INT_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "base/base.h"
#include "kernels/kernels.h"
#include "kernels/kernels_int.h"
}

/* ---- Device state, set by pd_k_cuda_open (device.cu). ---- */
extern cudaStream_t pd_kcu_stream;
extern cublasHandle_t pd_kcu_blas;
extern int pd_kcu_sm_count;

/* ---- Errors (thread-local message, read by pd_k_cuda_error). ---- */
/* Record a printf-style message; returns st. */
pd_status pd_kcu_fail(pd_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "what: cudaErrorX (text)"; PD_ENOMEM for cudaErrorMemoryAllocation, else PD_ERUNTIME. */
pd_status pd_kcu_cuda_fail(const char *what, cudaError_t e);
/* "what: CUBLAS_STATUS_X"; PD_ENOMEM for CUBLAS_STATUS_ALLOC_FAILED, else PD_ERUNTIME. */
pd_status pd_kcu_blas_fail(const char *what, cublasStatus_t s);

#define PD_KCU_CUDA(call)                                         \
  do {                                                            \
    cudaError_t e_ = (call);                                      \
    if (e_ != cudaSuccess) return pd_kcu_cuda_fail(#call, e_);    \
  } while (0)
#define PD_KCU_BLAS(what, call)                                        \
  do {                                                                 \
    cublasStatus_t s_ = (call);                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) return pd_kcu_blas_fail(what, s_); \
  } while (0)
/* After a <<<...>>> launch: a bad configuration or an earlier asynchronous failure. */
#define PD_KCU_LAUNCHED(name)                                     \
  do {                                                            \
    cudaError_t e_ = cudaGetLastError();                          \
    if (e_ != cudaSuccess) return pd_kcu_cuda_fail(name, e_);     \
  } while (0)
/* Propagate a pd_status. */
#define PD_KCU_TRY(expr)          \
  do {                            \
    pd_status st_ = (expr);       \
    if (st_ != PD_OK) return st_; \
  } while (0)

/* ---- Scratch memory (the caching allocator; freed blocks are reused in stream order). ---- */
/* A block of nbytes, or NULL with PD_ENOMEM recorded. */
static inline void *pd_kcu_scratch(size_t nbytes) { return pd_k_dev_alloc(nbytes); }
/* Offsets of sub-buffers inside one scratch block, each aligned to 256 bytes. */
static inline size_t pd_kcu_align(size_t n) { return (n + 255) & ~(size_t)255; }

/* ---- The device error flag: one int that kernels set (atomically, to 1) on a bad label or
 * id. Reset it before the kernels, then read it: reading waits for the stream. ---- */
extern int *pd_kcu_flag;
pd_status pd_kcu_flag_reset(void);
/* *set = the flag's value (waits for the stream). */
pd_status pd_kcu_flag_read(int *set);

/* ---- Launch helpers. ---- */
#define PD_KCU_THREADS 256
/* Blocks for a grid-stride loop over n items (>= 1; bounded, the loop covers the rest). */
static inline unsigned pd_kcu_blocks(int64_t n, int threads = PD_KCU_THREADS) {
  int64_t b = (n + threads - 1) / threads;
  int64_t most = (int64_t)(pd_kcu_sm_count > 0 ? pd_kcu_sm_count : 16) * 32;
  if (b > most) b = most;
  if (b < 1) b = 1;
  return (unsigned)b;
}
#define PD_KCU_LOOP(i, n)                                                       \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);     \
       i += (int64_t)blockDim.x * gridDim.x)

/* ---- A strided N-d shape over up to PD_KCU_MAX_OPS operands (the CPU iterator's layout):
 * dims[d] and, per operand, a stride per dim in elements (0 along a broadcast dim). Built on
 * the host by pd_kcu_shape_init, which drops size-1 dims and merges dims that are contiguous
 * for every operand (pd_k_merge_dims); passed to kernels by value. ---- */
#define PD_KCU_MAX_OPS 3
typedef struct pd_kcu_shape {
  int nd, nops;  /* nd >= 1 */
  int64_t numel;
  int64_t dims[PD_K_MAX_DIMS];
  int64_t str[PD_KCU_MAX_OPS][PD_K_MAX_DIMS];
} pd_kcu_shape;

void pd_kcu_shape_init(pd_kcu_shape *s, int nd, const int64_t *dims, int nops,
                       const int64_t (*strides)[PD_K_MAX_DIMS]);

/* Offsets of element i (row-major over s.dims) in each of the first NOPS operands. */
template <int NOPS>
__device__ __forceinline__ void pd_kcu_offsets(const pd_kcu_shape &s, int64_t i, int64_t *off) {
#pragma unroll
  for (int k = 0; k < NOPS; k++) off[k] = 0;
  if (s.nd == 1) {
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = i * s.str[k][0];
    return;
  }
  for (int d = s.nd - 1; d >= 0; d--) {
    int64_t idx = i % s.dims[d];
    i /= s.dims[d];
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] += idx * s.str[k][d];
  }
}

/* ---- Shared device helpers. ---- */
__device__ __forceinline__ float pd_kcu_exp(float v) { return expf(v); }
__device__ __forceinline__ double pd_kcu_exp(double v) { return exp(v); }
__device__ __forceinline__ float pd_kcu_log(float v) { return logf(v); }
__device__ __forceinline__ double pd_kcu_log(double v) { return log(v); }
__device__ __forceinline__ float pd_kcu_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double pd_kcu_pow(double a, double b) { return pow(a, b); }
template <typename T>
__device__ __forceinline__ bool pd_kcu_isnan(T v) { return v != v; }

/* Block-wide reduction of one value per thread with a binary operation; every thread gets the
 * result. blockDim.x must be a power of two <= PD_KCU_THREADS. Contains __syncthreads: call it
 * from every thread of the block. */
template <typename A, typename Op>
__device__ A pd_kcu_block_reduce(A v, Op op) {
  __shared__ A buf[PD_KCU_THREADS];
  unsigned t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] = op(buf[t], buf[t + s]);
    __syncthreads();
  }
  A r = buf[0];
  __syncthreads();  /* buf may be reused by the next call */
  return r;
}
/* A power-of-two block size for a row of n elements: 32 .. PD_KCU_THREADS. */
static inline int pd_kcu_row_threads(int64_t n) {
  int t = 32;
  while (t < PD_KCU_THREADS && t < n) t *= 2;
  return t;
}

/* ---- The CUDA kernels: pd_kcu_<name> for every entry PD_K_BACKEND_LIST (kernels.h) marks
 * CUDA; kernels.h has their contracts. ---- */
#define PD_KCU_DECL_CUDA(name, type) type pd_kcu_##name;
#define PD_KCU_DECL_NO_CUDA(name, type)
#define PD_KCU_DECL_(name, type, cuda) PD_KCU_DECL_##cuda(name, type)
PD_K_BACKEND_LIST(PD_KCU_DECL_)
#undef PD_KCU_DECL_
#undef PD_KCU_DECL_CUDA
#undef PD_KCU_DECL_NO_CUDA

/* ---- Shared between files. ---- */
/* Strided-batched GEMM on device buffers after the checks (gemm.cu): used by the convolutions.
 * Sizes must fit int (the caller checked). */
pd_status pd_kcu_gemm_strided(pd_dtype dt, bool trans_a, bool trans_b, int64_t batch, int64_t m,
                              int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                              int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                              double beta, void *c, int64_t ldc, int64_t stride_c);
/* out = x permuted (index.cu), after the checks: dims/perm as pd_k_transpose_fn, element size
 * 1, 2, 4 or 8. */
pd_status pd_kcu_permute(size_t esize, int nd, const int64_t *dims, const int *perm,
                         const void *x, void *out);

/* Scratch memory a convolution may take at once: per chunk of images of im2col's column
 * matrices (conv.cu), and cuDNN's workspace (cudnn.cu). */
#define CONV_WORKSPACE ((size_t)256 << 20)
/* The convolutions through cuDNN (cudnn.cu), after the checks (n > 0): PD_EUNSUPPORTED when
 * cuDNN does not take the shape or the build has no cuDNN (then conv.cu runs im2col + cuBLAS). */
pd_status pd_kcu_cudnn_conv2d(pd_dtype dt, const pd_k_conv2d *p, const void *x, const void *w,
                              void *y);
pd_status pd_kcu_cudnn_conv2d_bwd_data(pd_dtype dt, const pd_k_conv2d *p, const void *w,
                                       const void *dy, void *dx);
pd_status pd_kcu_cudnn_conv2d_bwd_filter(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                         const void *dy, void *dw);

#endif /* PD_KERNELS_CUDA_INT_H */
