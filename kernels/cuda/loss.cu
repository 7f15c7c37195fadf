/* loss.cu -- the CUDA backend's element-wise losses and their gradients (kernels.h:
 * sigmoid_xent, smooth_l1, huber, kldiv): the expressions of the CPU backend's
 * (kernels/cpu/loss_t.h), in double, rounded to T once. Grid-stride kernels, a thread per
 * element; the sums are deterministic, with no atomics: a row of smooth_l1 is added by one
 * thread in column order (rows of up to SL1_SERIAL columns, the order of the CPU) or by a block
 * in a fixed tree, and kldiv's total and sigmoid_xent's count of the labels not ignored by
 * RED_BLOCKS-bounded blocks into partial sums that one block then folds in a fixed tree; every
 * order depends on the sizes only. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <math.h>

/* Rows of smooth_l1 up to this many columns are summed by one thread each. */
#define SL1_SERIAL 64
/* The most blocks of a full reduction's first pass (a power of two: the second pass folds
 * them with one block of PD_KCU_THREADS threads). */
#define RED_BLOCKS 512

struct fold_sum {
  __device__ double operator()(double a, double b) const { return a + b; }
};

/* A label is ignored when its integer part is ignore_index (Fluid casts it to int). */
__device__ __forceinline__ bool l_ignored(double l, int64_t ignore) {
  return l > -9.2e18 && l < 9.2e18 && (int64_t)l == ignore;
}

__device__ __forceinline__ double l_sigmoid(double x) {
  if (x >= 0) return 1 / (1 + exp(-x));
  double e = exp(x);
  return e / (1 + e);
}

/* ---- Full reductions in double: pass 1, block b's partial sum of f(i) over i = b * threads
 * + t + k * blocks * threads; pass 2, one block folds the partials and `fin` stores. ---- */

static unsigned red_blocks(int64_t n) {
  int64_t b = (n + PD_KCU_THREADS - 1) / PD_KCU_THREADS;
  return (unsigned)(b < 1 ? 1 : b > RED_BLOCKS ? RED_BLOCKS : b);
}

template <typename F>
__global__ void red_partial_kernel(int64_t n, F f, double *part) {
  double s = 0;
  PD_KCU_LOOP(i, n) s += f(i);
  s = pd_kcu_block_reduce(s, fold_sum());
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

template <typename Fin>
__global__ void red_final_kernel(unsigned nparts, const double *part, Fin fin) {
  double s = 0;
  for (unsigned k = threadIdx.x; k < nparts; k += blockDim.x) s += part[k];
  s = pd_kcu_block_reduce(s, fold_sum());
  if (threadIdx.x == 0) fin(s);
}

/* Sum f over [0, n) and hand the total to fin on the device; part: RED_BLOCKS doubles. */
template <typename F, typename Fin>
static pd_status red_sum(int64_t n, F f, Fin fin, double *part, const char *name) {
  unsigned blocks = red_blocks(n);
  red_partial_kernel<<<blocks, PD_KCU_THREADS, 0, pd_kcu_stream>>>(n, f, part);
  PD_KCU_LAUNCHED(name);
  red_final_kernel<<<1, PD_KCU_THREADS, 0, pd_kcu_stream>>>(blocks, part, fin);
  PD_KCU_LAUNCHED(name);
  return PD_OK;
}

/* ---- sigmoid_xent ---- */

template <typename T>
struct kept_label {
  const T *z;
  int64_t ignore;
  __device__ double operator()(int64_t i) const {
    return l_ignored((double)z[i], ignore) ? 0.0 : 1.0;
  }
};

struct store_norm {
  double *norm;
  __device__ void operator()(double cnt) const { *norm = cnt > 0 ? cnt : 1; }
};

template <typename T>
__global__ void sxent_kernel(int64_t n, const T *x, const T *z, int64_t ignore,
                             const double *norm, T *out) {
  double nm = norm ? *norm : 1;
  PD_KCU_LOOP(i, n) {
    double xi = (double)x[i], zi = (double)z[i];
    out[i] = (T)(l_ignored(zi, ignore) ? 0
                                       : (fmax(xi, 0.0) - xi * zi + log1p(exp(-fabs(xi)))) / nm);
  }
}

template <typename T>
__global__ void sxent_grad_kernel(int64_t n, const T *x, const T *z, const T *dout,
                                  int64_t ignore, const double *norm, T *dx, T *dl) {
  double nm = norm ? *norm : 1;
  PD_KCU_LOOP(i, n) {
    double xi = (double)x[i], zi = (double)z[i], d = (double)dout[i] / nm;
    bool ig = l_ignored(zi, ignore);
    if (dx) dx[i] = (T)(ig ? 0 : (l_sigmoid(xi) - zi) * d);
    if (dl) dl[i] = (T)(ig ? 0 : -xi * d);
  }
}

/* With `normalize`, the count of the labels not ignored into *norm (a scratch double followed
 * by the partial sums); *norm stays NULL without it. */
template <typename T>
static pd_status sxent_norm(int64_t n, const T *z, int64_t ignore, bool normalize, double **norm) {
  *norm = NULL;
  if (!normalize) return PD_OK;
  double *s = (double *)pd_kcu_scratch((RED_BLOCKS + 1) * sizeof(double));
  if (!s) return PD_ENOMEM;
  pd_status st = red_sum(n, kept_label<T>{z, ignore}, store_norm{s}, s + 1, "sigmoid_xent count");
  if (st) {
    pd_k_dev_free(s);
    return st;
  }
  *norm = s;
  return PD_OK;
}

template <typename T>
static pd_status sxent_run(int64_t n, const T *x, const T *z, const T *dout, int64_t ignore,
                           bool normalize, T *o1, T *o2, bool grad) {
  double *norm;
  PD_KCU_TRY(sxent_norm(n, z, ignore, normalize, &norm));
  if (grad) sxent_grad_kernel<<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      n, x, z, dout, ignore, norm, o1, o2);
  else sxent_kernel<<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(n, x, z, ignore,
                                                                           norm, o1);
  cudaError_t e = cudaGetLastError();
  pd_k_dev_free(norm); /* stream order: reused only by work queued after these kernels */
  if (e != cudaSuccess)
    return pd_kcu_cuda_fail(grad ? "sigmoid_xent_grad kernel" : "sigmoid_xent kernel", e);
  return PD_OK;
}

pd_status pd_kcu_sigmoid_xent(pd_dtype dt, int64_t n, const void *x, const void *label,
                              int64_t ignore_index, bool normalize, void *out) {
  PD_KCU_TRY(pd_k_sigmoid_xent_check(dt, n, x, label, out));
  if (n == 0) return PD_OK;
  if (dt == PD_FP32)
    return sxent_run(n, (const float *)x, (const float *)label, (const float *)NULL, ignore_index,
                     normalize, (float *)out, (float *)NULL, false);
  return sxent_run(n, (const double *)x, (const double *)label, (const double *)NULL,
                   ignore_index, normalize, (double *)out, (double *)NULL, false);
}

pd_status pd_kcu_sigmoid_xent_grad(pd_dtype dt, int64_t n, const void *x, const void *label,
                                   const void *dout, int64_t ignore_index, bool normalize,
                                   void *dx, void *dlabel) {
  PD_KCU_TRY(pd_k_sigmoid_xent_check(dt, n, x, label, dout));
  if (n == 0 || (!dx && !dlabel)) return PD_OK;
  if (dt == PD_FP32)
    return sxent_run(n, (const float *)x, (const float *)label, (const float *)dout,
                     ignore_index, normalize, (float *)dx, (float *)dlabel, true);
  return sxent_run(n, (const double *)x, (const double *)label, (const double *)dout,
                   ignore_index, normalize, (double *)dx, (double *)dlabel, true);
}

/* ---- smooth_l1 ---- */

template <typename T>
__device__ __forceinline__ double l_at(const T *p, int64_t i, double dflt) {
  return p ? (double)p[i] : dflt;
}

/* Element i's d = (x - y) iw, stored in diff, and its loss times ow. */
template <typename T>
__device__ __forceinline__ double sl1_term(int64_t i, const T *x, const T *y, const T *iw,
                                           const T *ow, double s2, T *diff) {
  double d = ((double)x[i] - (double)y[i]) * l_at(iw, i, 1), a = fabs(d);
  if (diff) diff[i] = (T)d;
  return l_at(ow, i, 1) * (a < 1 / s2 ? 0.5 * s2 * d * d : a - 0.5 / s2);
}

/* A thread per row, its columns in order (the CPU's order). */
template <typename T>
__global__ void sl1_rows_kernel(int64_t rows, int64_t cols, const T *x, const T *y, const T *iw,
                                const T *ow, double s2, T *diff, T *out) {
  PD_KCU_LOOP(r, rows) {
    double sum = 0;
    for (int64_t c = 0; c < cols; c++) sum += sl1_term(r * cols + c, x, y, iw, ow, s2, diff);
    out[r] = (T)sum;
  }
}

/* A block per row (blocks loop over rows: the bound is the same for every thread of a block,
 * so all of them reach the fold), a fixed tree over the threads' partial sums. */
template <typename T>
__global__ void sl1_block_kernel(int64_t rows, int64_t cols, const T *x, const T *y,
                                 const T *iw, const T *ow, double s2, T *diff, T *out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    double sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      sum += sl1_term(r * cols + c, x, y, iw, ow, s2, diff);
    sum = pd_kcu_block_reduce(sum, fold_sum());
    if (threadIdx.x == 0) out[r] = (T)sum;
  }
}

template <typename T>
__global__ void sl1_grad_kernel(int64_t n, int64_t cols, const T *x, const T *y, const T *iw,
                                const T *ow, double s2, const T *dout, T *dx, T *dy, T *diw,
                                T *dow) {
  PD_KCU_LOOP(i, n) {
    double dr = (double)dout[i / cols];
    double xy = (double)x[i] - (double)y[i], w = l_at(iw, i, 1), o = l_at(ow, i, 1);
    double d = xy * w, a = fabs(d);
    bool quad = a < 1 / s2;
    double gi = dr * o * (quad ? s2 * d : (double)((d > 0) - (d < 0)));
    if (dx) dx[i] = (T)(gi * w);
    if (dy) dy[i] = (T)(-gi * w);
    if (diw) diw[i] = (T)(gi * xy);
    if (dow) dow[i] = (T)(dr * (quad ? 0.5 * s2 * d * d : a - 0.5 / s2));
  }
}

pd_status pd_kcu_smooth_l1(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                           const void *y, const void *iw, const void *ow, double s2, void *diff,
                           void *out) {
  PD_KCU_TRY(pd_k_smooth_l1_check(dt, rows, cols, s2, x, y, out));
  if (rows == 0) return PD_OK;
  bool serial = cols <= SL1_SERIAL;
  unsigned blocks = serial ? pd_kcu_blocks(rows) : (unsigned)(rows < 65535 ? rows : 65535);
  int threads = serial ? PD_KCU_THREADS : pd_kcu_row_threads(cols);
#define SL1(T)                                                                                 \
  do {                                                                                         \
    if (serial)                                                                                \
      sl1_rows_kernel<T><<<blocks, threads, 0, pd_kcu_stream>>>(                               \
          rows, cols, (const T *)x, (const T *)y, (const T *)iw, (const T *)ow, s2, (T *)diff, \
          (T *)out);                                                                           \
    else                                                                                       \
      sl1_block_kernel<T><<<blocks, threads, 0, pd_kcu_stream>>>(                              \
          rows, cols, (const T *)x, (const T *)y, (const T *)iw, (const T *)ow, s2, (T *)diff, \
          (T *)out);                                                                           \
  } while (0)
  if (dt == PD_FP32) SL1(float);
  else SL1(double);
#undef SL1
  PD_KCU_LAUNCHED("smooth_l1 kernel");
  return PD_OK;
}

pd_status pd_kcu_smooth_l1_grad(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                                const void *y, const void *iw, const void *ow, double s2,
                                const void *dout, void *dx, void *dy, void *diw, void *dow) {
  PD_KCU_TRY(pd_k_smooth_l1_check(dt, rows, cols, s2, x, y, dout));
  int64_t n = rows * cols;
  if (n == 0 || (!dx && !dy && !diw && !dow)) return PD_OK;
#define SL1_GRAD(T)                                                                            \
  sl1_grad_kernel<T><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(                  \
      n, cols, (const T *)x, (const T *)y, (const T *)iw, (const T *)ow, s2, (const T *)dout,  \
      (T *)dx, (T *)dy, (T *)diw, (T *)dow)
  if (dt == PD_FP32) SL1_GRAD(float);
  else SL1_GRAD(double);
#undef SL1_GRAD
  PD_KCU_LAUNCHED("smooth_l1_grad kernel");
  return PD_OK;
}

/* ---- huber ---- */

template <typename T>
__global__ void huber_kernel(int64_t n, const T *x, const T *y, double delta, T *res, T *out) {
  PD_KCU_LOOP(i, n) {
    double r = (double)y[i] - (double)x[i], a = fabs(r);
    if (res) res[i] = (T)r;
    out[i] = (T)(a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta));
  }
}

template <typename T>
__global__ void huber_grad_kernel(int64_t n, const T *x, const T *y, const T *dout, double delta,
                                  T *dx, T *dy) {
  PD_KCU_LOOP(i, n) {
    double r = (double)y[i] - (double)x[i];
    double d = (double)dout[i] * (fabs(r) <= delta ? r : delta * (double)((r > 0) - (r < 0)));
    if (dx) dx[i] = (T)-d;
    if (dy) dy[i] = (T)d;
  }
}

pd_status pd_kcu_huber(pd_dtype dt, int64_t n, const void *x, const void *y, double delta,
                       void *res, void *out) {
  PD_KCU_TRY(pd_k_huber_check(dt, n, delta, x, y, out));
  if (n == 0) return PD_OK;
#define HUBER(T)                                                                               \
  huber_kernel<T><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(                     \
      n, (const T *)x, (const T *)y, delta, (T *)res, (T *)out)
  if (dt == PD_FP32) HUBER(float);
  else HUBER(double);
#undef HUBER
  PD_KCU_LAUNCHED("huber kernel");
  return PD_OK;
}

pd_status pd_kcu_huber_grad(pd_dtype dt, int64_t n, const void *x, const void *y,
                            const void *dout, double delta, void *dx, void *dy) {
  PD_KCU_TRY(pd_k_huber_check(dt, n, delta, x, y, dout));
  if (n == 0 || (!dx && !dy)) return PD_OK;
#define HUBER_GRAD(T)                                                                          \
  huber_grad_kernel<T><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(                \
      n, (const T *)x, (const T *)y, (const T *)dout, delta, (T *)dx, (T *)dy)
  if (dt == PD_FP32) HUBER_GRAD(float);
  else HUBER_GRAD(double);
#undef HUBER_GRAD
  PD_KCU_LAUNCHED("huber_grad kernel");
  return PD_OK;
}

/* ---- kldiv ---- */

template <typename T>
__device__ __forceinline__ double kl_elem(const T *x, const T *t, int64_t i) {
  double ti = (double)t[i];
  return ti > 0 ? ti * (log(ti) - (double)x[i]) : 0;
}

template <typename T>
struct kl_term {
  const T *x, *t;
  __device__ double operator()(int64_t i) const { return kl_elem(x, t, i); }
};

template <typename T>
struct store_scaled {
  T *loss;
  double scale;
  __device__ void operator()(double sum) const { loss[0] = (T)(sum * scale); }
};

template <typename T>
__global__ void kl_kernel(int64_t n, const T *x, const T *t, T *loss) {
  PD_KCU_LOOP(i, n) loss[i] = (T)kl_elem(x, t, i);
}

template <typename T>
__global__ void kl_grad_kernel(int64_t n, const T *x, const T *t, const T *dl, bool reduce,
                               double scale, T *dx, T *dt) {
  double g0 = reduce ? (double)dl[0] * scale : 0;
  PD_KCU_LOOP(i, n) {
    double ti = (double)t[i], gi = reduce ? g0 : (double)dl[i];
    if (dx) dx[i] = (T)(ti > 0 ? -ti * gi : 0);
    if (dt) dt[i] = (T)(ti > 0 ? (log(ti) + 1 - (double)x[i]) * gi : 0);
  }
}

template <typename T>
static pd_status kl_sum(int64_t n, const T *x, const T *t, double scale, T *loss) {
  double *part = (double *)pd_kcu_scratch(RED_BLOCKS * sizeof(double));
  if (!part) return PD_ENOMEM;
  pd_status st = red_sum(n, kl_term<T>{x, t}, store_scaled<T>{loss, scale}, part, "kldiv sum");
  pd_k_dev_free(part); /* stream order: reused only by work queued after the sum */
  return st;
}

pd_status pd_kcu_kldiv(pd_dtype dt, int64_t n, const void *x, const void *target, bool reduce,
                       double scale, void *loss) {
  PD_KCU_TRY(pd_k_kldiv_check(dt, n, reduce, scale, x, target, false, loss));
  if (reduce) {
    if (dt == PD_FP32)
      return kl_sum(n, (const float *)x, (const float *)target, scale, (float *)loss);
    return kl_sum(n, (const double *)x, (const double *)target, scale, (double *)loss);
  }
  if (n == 0) return PD_OK;
#define KL(T)                                                                                  \
  kl_kernel<T><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(                        \
      n, (const T *)x, (const T *)target, (T *)loss)
  if (dt == PD_FP32) KL(float);
  else KL(double);
#undef KL
  PD_KCU_LAUNCHED("kldiv kernel");
  return PD_OK;
}

pd_status pd_kcu_kldiv_grad(pd_dtype dt, int64_t n, const void *x, const void *target,
                            const void *dloss, bool reduce, double scale, void *dx,
                            void *dtarget) {
  PD_KCU_TRY(pd_k_kldiv_check(dt, n, reduce, scale, x, target, true, dloss));
  if (n == 0 || (!dx && !dtarget)) return PD_OK;
#define KL_GRAD(T)                                                                             \
  kl_grad_kernel<T><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(                   \
      n, (const T *)x, (const T *)target, (const T *)dloss, reduce, scale, (T *)dx, (T *)dtarget)
  if (dt == PD_FP32) KL_GRAD(float);
  else KL_GRAD(double);
#undef KL_GRAD
  PD_KCU_LAUNCHED("kldiv_grad kernel");
  return PD_OK;
}
