/* norm.cu -- the CUDA backend's batch normalisation (one block per channel of [n, c, s]) and
 * layer normalisation (one block per row of [rows, cols]) with their gradients; layer_norm's
 * dscale and dbias sum chunks of rows per column, then the chunks' sums. Sums accumulate in
 * double, in an order fixed by the launch shape, as on the CPU (which sums in order: results
 * agree within rounding). */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <math.h>

struct fold_sum {
  __device__ double operator()(double a, double b) const { return a + b; }
};

/* Blocks loop over their items (channels or rows): the bound is the same for every thread of a
 * block, so all of them reach the folds. */
static unsigned item_blocks(int64_t count) {
  return (unsigned)(count < 65535 ? (count > 0 ? count : 1) : 65535);
}

/* ---- batch_norm ---- */

/* Element j of channel ch in [n, c, s]. */
__device__ __forceinline__ int64_t bn_at(int64_t j, int64_t ch, int64_t c, int64_t s) {
  return (j / s * c + ch) * s + j % s;
}

template <typename T>
__global__ void bn_fwd_kernel(int64_t n, int64_t c, int64_t s, const T *x, const T *scale,
                              const T *bias, const T *mean, const T *var, bool global,
                              double momentum, double eps, T *y, T *mo, T *vo, T *sm, T *sr) {
  int64_t m = n * s;
  double cnt = (double)n * (double)s;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double mu, v;
    if (global) {
      mu = (double)mean[ch];
      v = (double)var[ch];
    } else {
      double sum = 0;
      for (int64_t j = threadIdx.x; j < m; j += blockDim.x) sum += (double)x[bn_at(j, ch, c, s)];
      mu = pd_kcu_block_reduce(sum, fold_sum()) / cnt;
      double sq = 0;
      for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
        double d = (double)x[bn_at(j, ch, c, s)] - mu;
        sq += d * d;
      }
      v = pd_kcu_block_reduce(sq, fold_sum()) / cnt;
    }
    double r = 1.0 / sqrt(v + eps);
    double a = r * (double)scale[ch], b = (double)bias[ch] - mu * a;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      int64_t at = bn_at(j, ch, c, s);
      y[at] = (T)((double)x[at] * a + b);
    }
    if (threadIdx.x == 0) {
      if (sm) sm[ch] = (T)mu;
      if (sr) sr[ch] = (T)r;
      /* mean_out may be mean: this thread alone reads mean[ch] in batch mode. */
      if (!global && mo) mo[ch] = (T)(momentum * (double)mean[ch] + (1 - momentum) * mu);
      if (!global && vo) vo[ch] = (T)(momentum * (double)var[ch] + (1 - momentum) * v);
    }
  }
}

template <typename T>
__global__ void bn_bwd_kernel(int64_t n, int64_t c, int64_t s, const T *x, const T *scale,
                              const T *mean, const T *rr, bool global, const T *dy, T *dx,
                              T *dscale, T *dbias) {
  int64_t m = n * s;
  double cnt = (double)n * (double)s;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double mu = (double)mean[ch], r = (double)rr[ch], sb = 0, ss = 0;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      int64_t at = bn_at(j, ch, c, s);
      sb += (double)dy[at];
      ss += (double)dy[at] * ((double)x[at] - mu) * r;
    }
    /* The folds end with a barrier: every read of dy is done before dx (maybe dy) is written. */
    sb = pd_kcu_block_reduce(sb, fold_sum());
    ss = pd_kcu_block_reduce(ss, fold_sum());
    if (threadIdx.x == 0) {
      if (dbias) dbias[ch] = (T)sb;
      if (dscale) dscale[ch] = (T)ss;
    }
    if (!dx) continue;
    double a = (double)scale[ch] * r;
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      int64_t at = bn_at(j, ch, c, s);
      double xh = ((double)x[at] - mu) * r;
      dx[at] = (T)(global ? a * (double)dy[at] : a * ((double)dy[at] - (sb + xh * ss) / cnt));
    }
  }
}

pd_status pd_kcu_batch_norm(pd_dtype dt, int64_t n, int64_t c, int64_t s, const void *x,
                            const void *scale, const void *bias, const void *mean,
                            const void *var, bool global, double momentum, double epsilon,
                            void *y, void *mean_out, void *var_out, void *saved_mean,
                            void *saved_inv_std) {
  PD_KCU_TRY(pd_k_norm_check(dt, n, c, s, epsilon, !global));
  if (c == 0) return PD_OK;
  unsigned blocks = item_blocks(c);
  int threads = pd_kcu_row_threads(n * s);
#define BN_FWD(T)                                                                              \
  bn_fwd_kernel<T><<<blocks, threads, 0, pd_kcu_stream>>>(                                     \
      n, c, s, (const T *)x, (const T *)scale, (const T *)bias, (const T *)mean,               \
      (const T *)var, global, momentum, epsilon, (T *)y, (T *)mean_out, (T *)var_out,          \
      (T *)saved_mean, (T *)saved_inv_std)
  if (dt == PD_FP32) BN_FWD(float);
  else BN_FWD(double);
#undef BN_FWD
  PD_KCU_LAUNCHED("batch_norm kernel");
  return PD_OK;
}

pd_status pd_kcu_batch_norm_grad(pd_dtype dt, int64_t n, int64_t c, int64_t s, const void *x,
                                 const void *scale, const void *saved_mean,
                                 const void *saved_inv_std, bool global, const void *dy,
                                 void *dx, void *dscale, void *dbias) {
  PD_KCU_TRY(pd_k_norm_check(dt, n, c, s, 0, false));
  if (c == 0) return PD_OK;
  unsigned blocks = item_blocks(c);
  int threads = pd_kcu_row_threads(n * s);
#define BN_BWD(T)                                                                              \
  bn_bwd_kernel<T><<<blocks, threads, 0, pd_kcu_stream>>>(                                     \
      n, c, s, (const T *)x, (const T *)scale, (const T *)saved_mean,                          \
      (const T *)saved_inv_std, global, (const T *)dy, (T *)dx, (T *)dscale, (T *)dbias)
  if (dt == PD_FP32) BN_BWD(float);
  else BN_BWD(double);
#undef BN_BWD
  PD_KCU_LAUNCHED("batch_norm_grad kernel");
  return PD_OK;
}

/* ---- layer_norm ---- */

template <typename T>
__global__ void ln_fwd_kernel(int64_t rows, int64_t cols, const T *x, const T *scale,
                              const T *bias, double eps, T *y, T *mean, T *var) {
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    const T *p = x + i * cols;
    T *q = y + i * cols;
    double sum = 0;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) sum += (double)p[k];
    double mu = pd_kcu_block_reduce(sum, fold_sum()) / (double)cols;
    double sq = 0;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
      double d = (double)p[k] - mu;
      sq += d * d;
    }
    double v = pd_kcu_block_reduce(sq, fold_sum()) / (double)cols, r = 1.0 / sqrt(v + eps);
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
      double o = ((double)p[k] - mu) * r;
      if (scale) o *= (double)scale[k];
      if (bias) o += (double)bias[k];
      q[k] = (T)o;
    }
    if (threadIdx.x == 0) {
      if (mean) mean[i] = (T)mu;
      if (var) var[i] = (T)v;
    }
  }
}

template <typename T>
__global__ void ln_dx_kernel(int64_t rows, int64_t cols, const T *x, const T *scale,
                             const T *mean, const T *var, double eps, const T *dy, T *dx) {
  for (int64_t i = blockIdx.x; i < rows; i += gridDim.x) {
    const T *p = x + i * cols, *g = dy + i * cols;
    T *q = dx + i * cols;
    double mu = (double)mean[i], r = 1.0 / sqrt((double)var[i] + eps), sg = 0, sgx = 0;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
      double gk = (double)g[k] * (scale ? (double)scale[k] : 1.0);
      sg += gk;
      sgx += gk * ((double)p[k] - mu) * r;
    }
    /* The folds end with a barrier: the row's dy is read before dx (maybe dy) is written. */
    sg = pd_kcu_block_reduce(sg, fold_sum()) / (double)cols;
    sgx = pd_kcu_block_reduce(sgx, fold_sum()) / (double)cols;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
      double gk = (double)g[k] * (scale ? (double)scale[k] : 1.0);
      double xh = ((double)p[k] - mu) * r;
      q[k] = (T)(r * (gk - sg - xh * sgx));
    }
  }
}

/* dscale and dbias in two passes, so that a few hundred columns still fill the GPU: the rows
 * split into LN_CHUNKS_MAX chunks at most (of LN_CHUNK_ROWS rows at least); a block of
 * LN_TX x LN_TY threads sums LN_TX columns of one chunk (thread (tx, ty) its column's rows ty,
 * ty + LN_TY, ...; then the LN_TY partial sums in order) into part[chunk][col] (dscale's sums,
 * then dbias's after chunks * cols of them); the second pass adds a column's chunk sums in
 * order. Neighbouring threads read neighbouring elements; the order of every sum is fixed by
 * the shape alone. */
#define LN_TX 32
#define LN_TY 8
#define LN_CHUNK_ROWS 64
#define LN_CHUNKS_MAX 256

template <typename T>
__global__ void ln_dparam_part_kernel(int64_t rows, int64_t cols, int64_t chunk_rows,
                                      const T *x, const T *mean, const T *var, double eps,
                                      const T *dy, double *part) {
  __shared__ double ss_buf[LN_TY][LN_TX], sb_buf[LN_TY][LN_TX];
  int64_t k = (int64_t)blockIdx.x * LN_TX + threadIdx.x, c = blockIdx.y;
  int64_t i0 = c * chunk_rows, i1 = i0 + chunk_rows < rows ? i0 + chunk_rows : rows;
  double ss = 0, sb = 0;
  if (k < cols)
    for (int64_t i = i0 + threadIdx.y; i < i1; i += LN_TY) {
      double g = (double)dy[i * cols + k];
      sb += g;
      ss += g * ((double)x[i * cols + k] - (double)mean[i]) * (1.0 / sqrt((double)var[i] + eps));
    }
  ss_buf[threadIdx.y][threadIdx.x] = ss;
  sb_buf[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && k < cols) {
    for (int t = 1; t < LN_TY; t++) {
      ss += ss_buf[t][threadIdx.x];
      sb += sb_buf[t][threadIdx.x];
    }
    part[c * cols + k] = ss;
    part[(gridDim.y + c) * cols + k] = sb;
  }
}

template <typename T>
__global__ void ln_dparam_sum_kernel(int64_t chunks, int64_t cols, const double *part,
                                     T *dscale, T *dbias) {
  PD_KCU_LOOP(k, cols) {
    double ss = 0, sb = 0;
    for (int64_t c = 0; c < chunks; c++) {
      ss += part[c * cols + k];
      sb += part[(chunks + c) * cols + k];
    }
    if (dscale) dscale[k] = (T)ss;
    if (dbias) dbias[k] = (T)sb;
  }
}

template <typename T>
static pd_status ln_dparam(int64_t rows, int64_t cols, const T *x, const T *mean, const T *var,
                           double eps, const T *dy, T *dscale, T *dbias) {
  int64_t chunks = (rows + LN_CHUNK_ROWS - 1) / LN_CHUNK_ROWS;
  if (chunks > LN_CHUNKS_MAX) chunks = LN_CHUNKS_MAX;
  if (chunks < 1) chunks = 1;
  int64_t chunk_rows = (rows + chunks - 1) / chunks;
  int64_t tiles = (cols + LN_TX - 1) / LN_TX;
  if (tiles > 2147483647) return PD_EINVAL;
  double *part = (double *)pd_kcu_scratch((size_t)(2 * chunks * cols) * sizeof(double));
  if (!part) return PD_ENOMEM;
  ln_dparam_part_kernel<T><<<dim3((unsigned)tiles, (unsigned)chunks), dim3(LN_TX, LN_TY), 0,
                             pd_kcu_stream>>>(rows, cols, chunk_rows, x, mean, var, eps, dy,
                                              part);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    ln_dparam_sum_kernel<T><<<pd_kcu_blocks(cols), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        chunks, cols, part, dscale, dbias);
    e = cudaGetLastError();
  }
  pd_k_dev_free(part); /* stream order: reused only by work queued after these kernels */
  if (e != cudaSuccess) return pd_kcu_cuda_fail("layer_norm_grad (scale, bias) kernel", e);
  return PD_OK;
}

pd_status pd_kcu_layer_norm(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                            const void *scale, const void *bias, double epsilon, void *y,
                            void *mean, void *var) {
  PD_KCU_TRY(pd_k_norm_check(dt, rows, cols, 1, epsilon, false));
  if (rows == 0 || cols == 0) return PD_OK;
#define LN_FWD(T)                                                                              \
  ln_fwd_kernel<T><<<item_blocks(rows), pd_kcu_row_threads(cols), 0, pd_kcu_stream>>>(        \
      rows, cols, (const T *)x, (const T *)scale, (const T *)bias, epsilon, (T *)y,            \
      (T *)mean, (T *)var)
  if (dt == PD_FP32) LN_FWD(float);
  else LN_FWD(double);
#undef LN_FWD
  PD_KCU_LAUNCHED("layer_norm kernel");
  return PD_OK;
}

pd_status pd_kcu_layer_norm_grad(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                                 const void *scale, const void *mean, const void *var,
                                 double epsilon, const void *dy, void *dx, void *dscale,
                                 void *dbias) {
  PD_KCU_TRY(pd_k_norm_check(dt, rows, cols, 1, epsilon, false));
  if (cols == 0) return PD_OK;
  /* dscale and dbias first (stream order): dx may be dy. */
  if (dscale || dbias) {
    if (dt == PD_FP32)
      PD_KCU_TRY(ln_dparam(rows, cols, (const float *)x, (const float *)mean,
                           (const float *)var, epsilon, (const float *)dy, (float *)dscale,
                           (float *)dbias));
    else
      PD_KCU_TRY(ln_dparam(rows, cols, (const double *)x, (const double *)mean,
                           (const double *)var, epsilon, (const double *)dy, (double *)dscale,
                           (double *)dbias));
  }
  if (dx && rows > 0) {
#define LN_DX(T)                                                                               \
  ln_dx_kernel<T><<<item_blocks(rows), pd_kcu_row_threads(cols), 0, pd_kcu_stream>>>(         \
      rows, cols, (const T *)x, (const T *)scale, (const T *)mean, (const T *)var, epsilon,    \
      (const T *)dy, (T *)dx)
    if (dt == PD_FP32) LN_DX(float);
    else LN_DX(double);
#undef LN_DX
    PD_KCU_LAUNCHED("layer_norm_grad kernel");
  }
  return PD_OK;
}
