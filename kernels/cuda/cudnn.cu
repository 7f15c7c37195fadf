/* cudnn.cu -- the CUDA backend's convolutions through cuDNN (configure's PD_HAVE_CUDNN): conv2d
 * and its data and filter gradients (kernels.h), and with them the depthwise and transposed
 * convolutions, which the ops (vm/ops/nn.c) build of these three entries. conv.cu asks here
 * first and runs im2col + cuBLAS for what cuDNN does not take (PD_EUNSUPPORTED: asymmetric
 * padding, a size past int, no algorithm within the workspace bound, or a build without cuDNN).
 *
 * Each shape's algorithm is chosen once, by cuDNN's heuristics (cudnnGet*Algorithm_v7: ranked by
 * expected speed, nothing run), the first deterministic one whose workspace is at most
 * CONV_WORKSPACE bytes (so a training step gives the same bits every time, and a resume is bit
 * for bit), and kept in a small cache keyed by the direction, dtype and every size of the
 * convolution. fp32 convolutions use cuDNN's FMA math (no TF32 tensor cores), as the cuBLAS
 * handle does (device.cu): the results agree with the CPU's to fp32's rounding. The handle is
 * made on first use on the backend's stream and lives as long as the process, as the cuBLAS
 * one. Not run in this project's sessions so far (no GPU lent): it compiles and links in the
 * --with-cuda build; tests/kernels/test_cuda_backend compares it with the CPU where a GPU opens. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#if PD_HAVE_CUDNN
#include <cudnn.h>

#include <limits.h>
#include <mutex>
#include <string.h>

namespace {

enum conv_dir { DIR_FWD, DIR_BWD_DATA, DIR_BWD_FILTER };

/* What identifies a convolution to cuDNN: the direction, the dtype and every size. */
enum { KEY_LEN = 20, CACHE_SIZE = 64 };
struct conv_key {
  int64_t v[KEY_LEN];
};
struct cache_entry {
  bool used;
  conv_key key;
  int algo;
  size_t workspace;
};

std::mutex mu;              /* the handle's creation and the cache */
cudnnHandle_t handle;
cache_entry cache[CACHE_SIZE];
int cache_next;             /* the entry a new shape replaces (round robin) */

conv_key key_of(conv_dir dir, pd_dtype dt, const pd_k_conv2d *p) {
  conv_key k;
  const int64_t v[KEY_LEN] = {dir, dt, p->n, p->c, p->h, p->w, p->oc, p->kh, p->kw, p->groups,
                              p->stride_h, p->stride_w, p->pad_top, p->pad_bottom, p->pad_left,
                              p->pad_right, p->dil_h, p->dil_w, p->oh, p->ow};
  memcpy(k.v, v, sizeof v);
  return k;
}

pd_status cudnn_fail(const char *what, cudnnStatus_t s) {
  return pd_kcu_fail(s == CUDNN_STATUS_ALLOC_FAILED ? PD_ENOMEM : PD_ERUNTIME, "%s: %s", what,
                     cudnnGetErrorString(s));
}

#define PD_KCU_DNN(what, call)                                          \
  do {                                                                  \
    cudnnStatus_t s_ = (call);                                          \
    if (s_ != CUDNN_STATUS_SUCCESS) return cudnn_fail(what, s_);        \
  } while (0)

/* The descriptors of one convolution, destroyed with it. */
struct descs {
  cudnnTensorDescriptor_t x = NULL, y = NULL;
  cudnnFilterDescriptor_t w = NULL;
  cudnnConvolutionDescriptor_t conv = NULL;
  ~descs() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
};

bool fits_int(const pd_k_conv2d *p) {
  const int64_t v[] = {p->n, p->c, p->h, p->w, p->oc, p->kh, p->kw, p->groups, p->stride_h,
                       p->stride_w, p->pad_top, p->pad_left, p->dil_h, p->dil_w, p->oh, p->ow};
  for (int64_t x : v)
    if (x > INT_MAX) return false;
  /* cuDNN's tensors hold fewer than 2^31 elements */
  return p->n * p->c * p->h * p->w < INT_MAX && p->n * p->oc * p->oh * p->ow < INT_MAX &&
         p->oc * (p->c / p->groups) * p->kh * p->kw < INT_MAX;
}

/* Describe p to cuDNN; PD_EUNSUPPORTED for what it does not take. */
pd_status describe(pd_dtype dt, const pd_k_conv2d *p, descs *d) {
  if (p->pad_top != p->pad_bottom || p->pad_left != p->pad_right || !fits_int(p))
    return PD_EUNSUPPORTED;
  cudnnDataType_t t = dt == PD_FP32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
  PD_KCU_DNN("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&d->x));
  PD_KCU_DNN("cudnnCreateTensorDescriptor", cudnnCreateTensorDescriptor(&d->y));
  PD_KCU_DNN("cudnnCreateFilterDescriptor", cudnnCreateFilterDescriptor(&d->w));
  PD_KCU_DNN("cudnnCreateConvolutionDescriptor", cudnnCreateConvolutionDescriptor(&d->conv));
  PD_KCU_DNN("cudnnSetTensor4dDescriptor",
             cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, t, (int)p->n, (int)p->c,
                                        (int)p->h, (int)p->w));
  PD_KCU_DNN("cudnnSetTensor4dDescriptor",
             cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, t, (int)p->n, (int)p->oc,
                                        (int)p->oh, (int)p->ow));
  PD_KCU_DNN("cudnnSetFilter4dDescriptor",
             cudnnSetFilter4dDescriptor(d->w, t, CUDNN_TENSOR_NCHW, (int)p->oc,
                                        (int)(p->c / p->groups), (int)p->kh, (int)p->kw));
  if (cudnnSetConvolution2dDescriptor(d->conv, (int)p->pad_top, (int)p->pad_left,
                                      (int)p->stride_h, (int)p->stride_w, (int)p->dil_h,
                                      (int)p->dil_w, CUDNN_CROSS_CORRELATION,
                                      t) != CUDNN_STATUS_SUCCESS ||
      cudnnSetConvolutionGroupCount(d->conv, (int)p->groups) != CUDNN_STATUS_SUCCESS)
    return PD_EUNSUPPORTED;
  PD_KCU_DNN("cudnnSetConvolutionMathType",
             cudnnSetConvolutionMathType(d->conv, CUDNN_FMA_MATH));
  int n, c, h, w;
  if (cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->w, &n, &c, &h, &w) !=
          CUDNN_STATUS_SUCCESS ||
      n != p->n || c != p->oc || h != p->oh || w != p->ow)
    return PD_EUNSUPPORTED;
  return PD_OK;
}

/* The first of cuDNN's ranked algorithms that succeeds, is deterministic and fits the bound. */
template <typename Perf>
bool pick(const Perf *perf, int n, int *algo, size_t *ws) {
  for (int i = 0; i < n; i++)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC &&
        perf[i].memory <= CONV_WORKSPACE) {
      *algo = (int)perf[i].algo;
      *ws = perf[i].memory;
      return true;
    }
  return false;
}

/* The algorithm of this convolution: the cache's, or cuDNN's heuristics' (then cached). */
pd_status choose(conv_dir dir, pd_dtype dt, const pd_k_conv2d *p, const descs *d, int *algo,
                 size_t *ws) {
  conv_key k = key_of(dir, dt, p);
  for (const cache_entry &e : cache)
    if (e.used && memcmp(&e.key, &k, sizeof k) == 0) {
      *algo = e.algo;
      *ws = e.workspace;
      return PD_OK;
    }
  bool found = false;
  int n = 0;
  if (dir == DIR_FWD) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    PD_KCU_DNN("cudnnGetConvolutionForwardAlgorithm_v7",
               cudnnGetConvolutionForwardAlgorithm_v7(handle, d->x, d->w, d->conv, d->y,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                                      perf));
    found = pick(perf, n, algo, ws);
  } else if (dir == DIR_BWD_DATA) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    PD_KCU_DNN("cudnnGetConvolutionBackwardDataAlgorithm_v7",
               cudnnGetConvolutionBackwardDataAlgorithm_v7(
                   handle, d->w, d->y, d->conv, d->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
                   perf));
    found = pick(perf, n, algo, ws);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    PD_KCU_DNN("cudnnGetConvolutionBackwardFilterAlgorithm_v7",
               cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                   handle, d->x, d->y, d->conv, d->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                   &n, perf));
    found = pick(perf, n, algo, ws);
  }
  if (!found) return PD_EUNSUPPORTED;
  cache_entry &e = cache[cache_next];
  cache_next = (cache_next + 1) % CACHE_SIZE;
  e.used = true;
  e.key = k;
  e.algo = *algo;
  e.workspace = *ws;
  return PD_OK;
}

pd_status run(conv_dir dir, pd_dtype dt, const pd_k_conv2d *p, const void *a, const void *b,
              void *out) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  std::lock_guard<std::mutex> lock(mu);
  if (!handle) {
    PD_KCU_DNN("cudnnCreate", cudnnCreate(&handle));
    cudnnStatus_t s = cudnnSetStream(handle, pd_kcu_stream);
    if (s != CUDNN_STATUS_SUCCESS) {
      cudnnDestroy(handle);
      handle = NULL;
      return cudnn_fail("cudnnSetStream", s);
    }
  }
  descs d;
  pd_status st = describe(dt, p, &d);
  int algo = 0;
  size_t ws = 0;
  if (!st) st = choose(dir, dt, p, &d, &algo, &ws);
  if (st) return st;
  void *work = ws ? pd_kcu_scratch(ws) : NULL;
  if (ws && !work) return PD_ENOMEM;
  /* alpha and beta are host values of the compute type (double for fp64, float for fp32) */
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const void *one = dt == PD_FP32 ? (const void *)&one_f : (const void *)&one_d;
  const void *zero = dt == PD_FP32 ? (const void *)&zero_f : (const void *)&zero_d;
  cudnnStatus_t s;
  const char *what;
  if (dir == DIR_FWD) { /* a = x, b = w, out = y */
    what = "cudnnConvolutionForward";
    s = cudnnConvolutionForward(handle, one, d.x, a, d.w, b, d.conv,
                                (cudnnConvolutionFwdAlgo_t)algo, work, ws, zero, d.y, out);
  } else if (dir == DIR_BWD_DATA) { /* a = w, b = dy, out = dx */
    what = "cudnnConvolutionBackwardData";
    s = cudnnConvolutionBackwardData(handle, one, d.w, a, d.y, b, d.conv,
                                     (cudnnConvolutionBwdDataAlgo_t)algo, work, ws, zero, d.x,
                                     out);
  } else { /* a = x, b = dy, out = dw */
    what = "cudnnConvolutionBackwardFilter";
    s = cudnnConvolutionBackwardFilter(handle, one, d.x, a, d.y, b, d.conv,
                                       (cudnnConvolutionBwdFilterAlgo_t)algo, work, ws, zero,
                                       d.w, out);
  }
  pd_k_dev_free(work); /* the caching allocator reuses it in stream order */
  if (s != CUDNN_STATUS_SUCCESS) return cudnn_fail(what, s);
  return PD_OK;
}

}  // namespace

pd_status pd_kcu_cudnn_conv2d(pd_dtype dt, const pd_k_conv2d *p, const void *x, const void *w,
                              void *y) {
  return run(DIR_FWD, dt, p, x, w, y);
}

pd_status pd_kcu_cudnn_conv2d_bwd_data(pd_dtype dt, const pd_k_conv2d *p, const void *w,
                                       const void *dy, void *dx) {
  return run(DIR_BWD_DATA, dt, p, w, dy, dx);
}

pd_status pd_kcu_cudnn_conv2d_bwd_filter(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                         const void *dy, void *dw) {
  return run(DIR_BWD_FILTER, dt, p, x, dy, dw);
}

#else /* without cuDNN: im2col + cuBLAS for every convolution */

pd_status pd_kcu_cudnn_conv2d(pd_dtype, const pd_k_conv2d *, const void *, const void *, void *) {
  return PD_EUNSUPPORTED;
}
pd_status pd_kcu_cudnn_conv2d_bwd_data(pd_dtype, const pd_k_conv2d *, const void *,
                                       const void *, void *) {
  return PD_EUNSUPPORTED;
}
pd_status pd_kcu_cudnn_conv2d_bwd_filter(pd_dtype, const pd_k_conv2d *, const void *,
                                         const void *, void *) {
  return PD_EUNSUPPORTED;
}

#endif
