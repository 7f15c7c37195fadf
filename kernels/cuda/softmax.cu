/* softmax.cu -- the CUDA backend's softmax and log-softmax over one axis (stable: each slice is
 * shifted by its max), cross entropy with hard (int64) or soft labels, the fused softmax with
 * cross entropy, and their gradients. A slice is handled by one block (contiguous rows, or few
 * slices) or by one thread (many strided slices, neighbouring threads on neighbouring
 * columns); sums accumulate in double as on the CPU. Hard labels are checked on the device
 * against [0, classes) and ignore_index; a bad one sets the error flag, which the entry reads
 * back (a synchronization) to return PD_EINVAL as the CPU does. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <math.h>

/* ---- Folding a value across the slice's threads: the whole block, or nothing (one thread per
 * slice). ---- */
struct fold_max {
  template <typename T>
  __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};
struct fold_add {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};

template <bool BLOCK, typename A, typename Op>
__device__ __forceinline__ A fold(A v, Op op) {
  if constexpr (BLOCK) return pd_kcu_block_reduce(v, op);
  else return v;
}

/* This thread's first index and step in a slice. */
#define SLICE_LOOP(BLOCK, j, n)                                                      \
  for (int64_t j = (BLOCK) ? (int64_t)threadIdx.x : 0; j < (n); j += (BLOCK) ? blockDim.x : 1)

/* The max of a slice; -inf for an all -inf slice (NaN: see softmax_slice). */
template <bool BLOCK, typename T>
__device__ T slice_max(const T *x, int64_t n, int64_t st) {
  T mx = (T)-INFINITY;
  SLICE_LOOP(BLOCK, j, n) {
    T v = x[j * st];
    if (v > mx) mx = v;
  }
  return fold<BLOCK>(mx, fold_max());
}

/* softmax or log_softmax of one slice. A NaN anywhere makes the whole slice NaN whichever
 * max is used (the sum is NaN), as on the CPU. out may be x: each element is read, then
 * written, by one thread, after the folds. */
template <bool BLOCK, typename T>
__device__ void softmax_slice(const T *x, T *out, int64_t n, int64_t st, bool log_out) {
  T mx = slice_max<BLOCK>(x, n, st);
  double sum = 0;
  SLICE_LOOP(BLOCK, j, n) sum += (double)pd_kcu_exp(x[j * st] - mx);
  sum = fold<BLOCK>(sum, fold_add());
  if (log_out) {
    T lse = mx + (T)log(sum);
    SLICE_LOOP(BLOCK, j, n) out[j * st] = x[j * st] - lse;
  } else {
    T inv = (T)(1.0 / sum);
    SLICE_LOOP(BLOCK, j, n) out[j * st] = pd_kcu_exp(x[j * st] - mx) * inv;
  }
}

template <bool BLOCK, typename T>
__device__ void softmax_grad_slice(const T *y, const T *d, T *dx, int64_t n, int64_t st,
                                   bool log_out) {
  double dot = 0;
  if (log_out) {
    SLICE_LOOP(BLOCK, j, n) dot += d[j * st];
  } else {
    SLICE_LOOP(BLOCK, j, n) dot += (double)d[j * st] * y[j * st];
  }
  dot = fold<BLOCK>(dot, fold_add());
  if (log_out) {  /* dx = dout - exp(y) * sum(dout) */
    SLICE_LOOP(BLOCK, j, n) dx[j * st] = d[j * st] - pd_kcu_exp(y[j * st]) * (T)dot;
  } else {        /* dx = y * (dout - sum(dout * y)) */
    SLICE_LOOP(BLOCK, j, n) dx[j * st] = y[j * st] * (d[j * st] - (T)dot);
  }
}

/* Slices of x viewed as [pre, n, post] are numbered s = i * post + k; slice s starts at
 * i * n * post + k with stride post. Block mode: blocks loop over slices (the loop bound is
 * the same for every thread of a block, so all reach the folds). */
template <bool BLOCK, typename T>
__global__ void softmax_kernel(int64_t pre, int64_t n, int64_t post, const T *x, T *out,
                               bool log_out) {
  int64_t count = pre * post;
  int64_t s0 = BLOCK ? (int64_t)blockIdx.x : (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t step = BLOCK ? (int64_t)gridDim.x : (int64_t)gridDim.x * blockDim.x;
  for (int64_t s = s0; s < count; s += step) {
    int64_t off = s / post * n * post + s % post;
    softmax_slice<BLOCK>(x + off, out + off, n, post, log_out);
  }
}

template <bool BLOCK, typename T>
__global__ void softmax_grad_kernel(int64_t pre, int64_t n, int64_t post, const T *y, const T *d,
                                    T *dx, bool log_out) {
  int64_t count = pre * post;
  int64_t s0 = BLOCK ? (int64_t)blockIdx.x : (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t step = BLOCK ? (int64_t)gridDim.x : (int64_t)gridDim.x * blockDim.x;
  for (int64_t s = s0; s < count; s += step) {
    int64_t off = s / post * n * post + s % post;
    softmax_grad_slice<BLOCK>(y + off, d + off, dx + off, n, post, log_out);
  }
}

/* Block mode for contiguous slices, or for too few slices to fill the GPU one per thread. */
static bool block_mode(int64_t count, int64_t post) { return post == 1 || count < 2048; }

/* Grid of block mode: one block per slice, bounded (the kernels loop). */
static unsigned slice_blocks(int64_t count) {
  return (unsigned)(count < 65535 ? (count > 0 ? count : 1) : 65535);
}

template <typename T>
static void launch_softmax(int64_t pre, int64_t n, int64_t post, const void *x, void *out,
                           bool log_out) {
  int64_t count = pre * post;
  if (block_mode(count, post))
    softmax_kernel<true, T><<<slice_blocks(count), pd_kcu_row_threads(n), 0, pd_kcu_stream>>>(
        pre, n, post, (const T *)x, (T *)out, log_out);
  else
    softmax_kernel<false, T><<<pd_kcu_blocks(count), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        pre, n, post, (const T *)x, (T *)out, log_out);
}

template <typename T>
static void launch_softmax_grad(int64_t pre, int64_t n, int64_t post, const void *y,
                                const void *d, void *dx, bool log_out) {
  int64_t count = pre * post;
  if (block_mode(count, post))
    softmax_grad_kernel<true, T><<<slice_blocks(count), pd_kcu_row_threads(n), 0,
                                   pd_kcu_stream>>>(pre, n, post, (const T *)y, (const T *)d,
                                                    (T *)dx, log_out);
  else
    softmax_grad_kernel<false, T><<<pd_kcu_blocks(count), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        pre, n, post, (const T *)y, (const T *)d, (T *)dx, log_out);
}

static pd_status softmax_any(pd_dtype dt, int64_t pre, int64_t n, int64_t post, const void *x,
                             void *out, bool log_out) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  PD_KCU_TRY(pd_k_slices_check(pre, n, post));
  if (pre == 0) return PD_OK;
  if (dt == PD_FP32) launch_softmax<float>(pre, n, post, x, out, log_out);
  else launch_softmax<double>(pre, n, post, x, out, log_out);
  PD_KCU_LAUNCHED("softmax kernel");
  return PD_OK;
}

static pd_status softmax_grad_any(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                                  const void *out, const void *dout, void *dx, bool log_out) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  PD_KCU_TRY(pd_k_slices_check(pre, n, post));
  if (pre == 0) return PD_OK;
  if (dt == PD_FP32) launch_softmax_grad<float>(pre, n, post, out, dout, dx, log_out);
  else launch_softmax_grad<double>(pre, n, post, out, dout, dx, log_out);
  PD_KCU_LAUNCHED("softmax_grad kernel");
  return PD_OK;
}

pd_status pd_kcu_softmax(pd_dtype dt, int64_t pre, int64_t n, int64_t post, const void *x,
                         void *out) {
  return softmax_any(dt, pre, n, post, x, out, false);
}

pd_status pd_kcu_log_softmax(pd_dtype dt, int64_t pre, int64_t n, int64_t post, const void *x,
                             void *out) {
  return softmax_any(dt, pre, n, post, x, out, true);
}

pd_status pd_kcu_softmax_grad(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                              const void *out, const void *dout, void *dx) {
  return softmax_grad_any(dt, pre, n, post, out, dout, dx, false);
}

pd_status pd_kcu_log_softmax_grad(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                                  const void *out, const void *dout, void *dx) {
  return softmax_grad_any(dt, pre, n, post, out, dout, dx, true);
}

/* ---- Cross entropy ---- */

/* log with Fluid's TolerableValue: -inf becomes -1e20 (so 0 * log(0) is 0). */
template <typename T>
__device__ __forceinline__ T safe_log(T p) {
  T l = pd_kcu_log(p);
  return isinf(l) ? (l < 0 ? (T)-1e20 : (T)1e20) : l;
}

/* A hard label's validity; a bad one sets the error flag. */
__device__ __forceinline__ bool label_ok(int64_t l, int64_t classes, int64_t ignore, int *flag) {
  if ((l < 0 || l >= classes) && l != ignore) {
    *flag = 1;
    return false;
  }
  return true;
}

template <typename T>
__global__ void xent_hard_kernel(int64_t rows, int64_t c, const T *p, const int64_t *label,
                                 int64_t ignore, T *loss, int *flag) {
  PD_KCU_LOOP(r, rows) {
    int64_t l = label[r];
    if (!label_ok(l, c, ignore, flag) || l == ignore) loss[r] = (T)0;
    else loss[r] = -safe_log(p[r * c + l]);
  }
}

/* Soft labels: one block per row. */
template <typename T>
__global__ void xent_soft_kernel(int64_t rows, int64_t c, const T *p, const T *lab, T *loss) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    double s = 0;
    SLICE_LOOP(true, j, c) s += (double)lab[r * c + j] * safe_log(p[r * c + j]);
    s = fold<true>(s, fold_add());
    if (threadIdx.x == 0) loss[r] = (T)-s;
  }
}

template <typename T>
__global__ void xent_grad_kernel(int64_t rows, int64_t c, const T *p, bool soft, const void *label,
                                 int64_t ignore, const T *dloss, T *dp, int *flag) {
  PD_KCU_LOOP(i, rows * c) {
    int64_t r = i / c, j = i % c;
    T d = dloss[r];
    if (soft) {
      dp[i] = -d * ((const T *)label)[i] / p[i];
    } else {
      int64_t l = ((const int64_t *)label)[r];
      bool ok = j == 0 ? label_ok(l, c, ignore, flag) : (l >= 0 && l < c) || l == ignore;
      dp[i] = ok && l != ignore && j == l ? -d / p[i] : (T)0;
    }
  }
}

/* Fused softmax + cross entropy, one block per row: softmax into sm, loss = logsumexp - logit
 * (hard) or sum(label * (logsumexp - logit)) (soft). */
template <typename T>
__global__ void softmax_xent_kernel(int64_t rows, int64_t c, const T *x, bool soft,
                                    const void *label, int64_t ignore, T *sm, T *loss,
                                    int *flag) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * c;
    T *smr = sm + r * c;
    T mx = slice_max<true>(xr, c, 1);
    double sum = 0;
    SLICE_LOOP(true, j, c) sum += (double)pd_kcu_exp(xr[j] - mx);
    sum = fold<true>(sum, fold_add());
    T inv = (T)(1.0 / sum), lse = mx + (T)log(sum);
    SLICE_LOOP(true, j, c) smr[j] = pd_kcu_exp(xr[j] - mx) * inv;
    if (soft) {
      const T *lab = (const T *)label + r * c;
      double s = 0;
      SLICE_LOOP(true, j, c) s += (double)lab[j] * (lse - xr[j]);
      s = fold<true>(s, fold_add());
      if (threadIdx.x == 0) loss[r] = (T)s;
    } else if (threadIdx.x == 0) {
      int64_t l = ((const int64_t *)label)[r];
      loss[r] = !label_ok(l, c, ignore, flag) || l == ignore ? (T)0 : lse - xr[l];
    }
  }
}

/* dlogits = dloss * (softmax * sum(label) - label) (soft; sum(label) is 1 for a distribution)
 * or dloss * (softmax - onehot(label)) (hard; 0 on ignored rows). One block per row (the soft
 * case needs the row's label sum); dx may be sm. */
template <typename T>
__global__ void softmax_xent_grad_kernel(int64_t rows, int64_t c, const T *sm, bool soft,
                                         const void *label, int64_t ignore, const T *dloss, T *dx,
                                         int *flag) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *smr = sm + r * c;
    T *dxr = dx + r * c, d = dloss[r];
    if (soft) {
      const T *lab = (const T *)label + r * c;
      double s = 0;
      SLICE_LOOP(true, j, c) s += lab[j];
      s = fold<true>(s, fold_add());
      SLICE_LOOP(true, j, c) dxr[j] = d * (smr[j] * (T)s - lab[j]);
    } else {
      int64_t l = ((const int64_t *)label)[r];
      bool ok = threadIdx.x == 0 ? label_ok(l, c, ignore, flag) : (l >= 0 && l < c) || l == ignore;
      SLICE_LOOP(true, j, c) {
        if (!ok || l == ignore) {
          dxr[j] = (T)0;
        } else {
          T v = d * smr[j];
          dxr[j] = j == l ? v - d : v;
        }
      }
    }
  }
}

/* The checks of the CPU's xent_job, but for the labels (checked on the device). */
static pd_status xent_check(pd_dtype dt, int64_t rows, int64_t classes) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  return pd_k_slices_check(rows, classes, 1);
}

/* After the kernels of a hard-label entry: PD_EINVAL when a label was out of range. */
static pd_status labels_verdict(const char *what, int64_t classes) {
  int bad = 0;
  PD_KCU_TRY(pd_kcu_flag_read(&bad));
  if (bad)
    return pd_kcu_fail(PD_EINVAL, "%s: a label outside [0, %lld) that is not ignore_index", what,
                       (long long)classes);
  return PD_OK;
}

pd_status pd_kcu_cross_entropy(pd_dtype dt, int64_t rows, int64_t classes, const void *prob,
                               bool soft_label, const void *label, int64_t ignore_index,
                               void *loss) {
  PD_KCU_TRY(xent_check(dt, rows, classes));
  if (rows == 0) return PD_OK;
  cudaStream_t q = pd_kcu_stream;
  if (soft_label) {
    unsigned nb = slice_blocks(rows);
    int nt = pd_kcu_row_threads(classes);
    if (dt == PD_FP32)
      xent_soft_kernel<float><<<nb, nt, 0, q>>>(rows, classes, (const float *)prob,
                                                (const float *)label, (float *)loss);
    else
      xent_soft_kernel<double><<<nb, nt, 0, q>>>(rows, classes, (const double *)prob,
                                                 (const double *)label, (double *)loss);
    PD_KCU_LAUNCHED("cross_entropy kernel");
    return PD_OK;
  }
  PD_KCU_TRY(pd_kcu_flag_reset());
  unsigned nb = pd_kcu_blocks(rows);
  if (dt == PD_FP32)
    xent_hard_kernel<float><<<nb, PD_KCU_THREADS, 0, q>>>(rows, classes, (const float *)prob,
                                                          (const int64_t *)label, ignore_index,
                                                          (float *)loss, pd_kcu_flag);
  else
    xent_hard_kernel<double><<<nb, PD_KCU_THREADS, 0, q>>>(rows, classes, (const double *)prob,
                                                           (const int64_t *)label, ignore_index,
                                                           (double *)loss, pd_kcu_flag);
  PD_KCU_LAUNCHED("cross_entropy kernel");
  return labels_verdict("cross_entropy", classes);
}

pd_status pd_kcu_cross_entropy_grad(pd_dtype dt, int64_t rows, int64_t classes, const void *prob,
                                    bool soft_label, const void *label, int64_t ignore_index,
                                    const void *dloss, void *dprob) {
  PD_KCU_TRY(xent_check(dt, rows, classes));
  if (rows == 0) return PD_OK;
  if (!soft_label) PD_KCU_TRY(pd_kcu_flag_reset());
  unsigned nb = pd_kcu_blocks(rows * classes);
  if (dt == PD_FP32)
    xent_grad_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        rows, classes, (const float *)prob, soft_label, label, ignore_index,
        (const float *)dloss, (float *)dprob, pd_kcu_flag);
  else
    xent_grad_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        rows, classes, (const double *)prob, soft_label, label, ignore_index,
        (const double *)dloss, (double *)dprob, pd_kcu_flag);
  PD_KCU_LAUNCHED("cross_entropy_grad kernel");
  return soft_label ? PD_OK : labels_verdict("cross_entropy_grad", classes);
}

pd_status pd_kcu_softmax_xent(pd_dtype dt, int64_t rows, int64_t classes, const void *logits,
                              bool soft_label, const void *label, int64_t ignore_index,
                              void *softmax, void *loss) {
  PD_KCU_TRY(xent_check(dt, rows, classes));
  if (rows == 0) return PD_OK;
  if (!soft_label) PD_KCU_TRY(pd_kcu_flag_reset());
  unsigned nb = slice_blocks(rows);
  int nt = pd_kcu_row_threads(classes);
  if (dt == PD_FP32)
    softmax_xent_kernel<float><<<nb, nt, 0, pd_kcu_stream>>>(
        rows, classes, (const float *)logits, soft_label, label, ignore_index, (float *)softmax,
        (float *)loss, pd_kcu_flag);
  else
    softmax_xent_kernel<double><<<nb, nt, 0, pd_kcu_stream>>>(
        rows, classes, (const double *)logits, soft_label, label, ignore_index,
        (double *)softmax, (double *)loss, pd_kcu_flag);
  PD_KCU_LAUNCHED("softmax_xent kernel");
  return soft_label ? PD_OK : labels_verdict("softmax_with_cross_entropy", classes);
}

pd_status pd_kcu_softmax_xent_grad(pd_dtype dt, int64_t rows, int64_t classes, const void *softmax,
                                   bool soft_label, const void *label, int64_t ignore_index,
                                   const void *dloss, void *dlogits) {
  PD_KCU_TRY(xent_check(dt, rows, classes));
  if (rows == 0) return PD_OK;
  if (!soft_label) PD_KCU_TRY(pd_kcu_flag_reset());
  unsigned nb = slice_blocks(rows);
  int nt = pd_kcu_row_threads(classes);
  if (dt == PD_FP32)
    softmax_xent_grad_kernel<float><<<nb, nt, 0, pd_kcu_stream>>>(
        rows, classes, (const float *)softmax, soft_label, label, ignore_index,
        (const float *)dloss, (float *)dlogits, pd_kcu_flag);
  else
    softmax_xent_grad_kernel<double><<<nb, nt, 0, pd_kcu_stream>>>(
        rows, classes, (const double *)softmax, soft_label, label, ignore_index,
        (const double *)dloss, (double *)dlogits, pd_kcu_flag);
  PD_KCU_LAUNCHED("softmax_xent_grad kernel");
  return soft_label ? PD_OK : labels_verdict("softmax_with_cross_entropy_grad", classes);
}
