/* index.cu -- the CUDA backend's kernels that move or select elements: argmax, transpose (any
 * permutation; also used by the convolution's filter gradient), concat/split, and the
 * embedding gather with its scatter-add gradient. Ids are checked on the device (the error
 * flag, read back: a synchronization) so that an id out of range gives PD_EINVAL as on the
 * CPU; scatter_add_rows checks them all before it adds anything. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <string.h>

/* ---- argmax: the first maximum; NaN counts as the maximum (smallest: the first minimum, NaN
 * the largest). ---- */

/* Strict "comes before" (the CPU's top_k/argmax order): larger value first (smallest: smaller
 * first), NaN the largest, equal values by index. A total order, so any reduction tree finds
 * the CPU's answer. */
template <typename T>
__device__ __forceinline__ bool before(T va, int64_t ia, T vb, int64_t ib, bool smallest) {
  bool na = pd_kcu_isnan(va), nb = pd_kcu_isnan(vb);
  if (na || nb) return na && nb ? ia < ib : smallest ? nb : na;
  if (va != vb) return smallest ? va < vb : va > vb;
  return ia < ib;
}

template <typename T>
struct cand {
  T v;
  int64_t i;  /* -1: no candidate */
};

struct fold_best {
  bool smallest;
  template <typename T>
  __device__ cand<T> operator()(cand<T> a, cand<T> b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    return before(b.v, b.i, a.v, a.i, smallest) ? b : a;
  }
};

/* One block per slice (blocks loop over slices; the bound is uniform within a block). */
template <typename T>
__global__ void argmax_block_kernel(int64_t pre, int64_t n, int64_t post, bool smallest,
                                    const T *x, int64_t *out) {
  for (int64_t s = blockIdx.x; s < pre * post; s += gridDim.x) {
    const T *xs = x + s / post * n * post + s % post;
    cand<T> best = {(T)0, -1};
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      best = fold_best{smallest}(best, cand<T>{xs[j * post], j});
    best = pd_kcu_block_reduce(best, fold_best{smallest});
    if (threadIdx.x == 0) out[s] = best.i;
  }
}

/* One thread per slice, in index order as the CPU. */
template <typename T>
__global__ void argmax_thread_kernel(int64_t pre, int64_t n, int64_t post, bool smallest,
                                     const T *x, int64_t *out) {
  PD_KCU_LOOP(s, pre * post) {
    const T *xs = x + s / post * n * post + s % post;
    int64_t best = 0;
    for (int64_t j = 1; j < n; j++)
      if (before(xs[j * post], j, xs[best * post], best, smallest)) best = j;
    out[s] = best;
  }
}

template <typename T>
static pd_status launch_argmax(int64_t pre, int64_t n, int64_t post, bool smallest,
                               const void *x, int64_t *out) {
  int64_t count = pre * post;
  if (post == 1 || count < 2048) {
    unsigned nb = (unsigned)(count < 65535 ? count : 65535);
    argmax_block_kernel<T><<<nb, pd_kcu_row_threads(n), 0, pd_kcu_stream>>>(
        pre, n, post, smallest, (const T *)x, out);
  } else {
    argmax_thread_kernel<T><<<pd_kcu_blocks(count), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        pre, n, post, smallest, (const T *)x, out);
  }
  PD_KCU_LAUNCHED("argmax kernel");
  return PD_OK;
}

pd_status pd_kcu_argmax(pd_dtype dt, int64_t pre, int64_t n, int64_t post, bool smallest,
                        const void *x, int64_t *out) {
  int64_t sizes[] = {pre, n, post};
  if (pre < 0 || n < 1 || post < 0 || pd_k_numel(3, sizes) < 0) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64) return PD_EUNSUPPORTED;
  if (pre * post == 0) return PD_OK;
  switch (dt) {
    case PD_FP32: return launch_argmax<float>(pre, n, post, smallest, x, out);
    case PD_FP64: return launch_argmax<double>(pre, n, post, smallest, x, out);
    case PD_INT32: return launch_argmax<int32_t>(pre, n, post, smallest, x, out);
    default: return launch_argmax<int64_t>(pre, n, post, smallest, x, out);
  }
}

/* ---- transpose: walks the output in order and gathers from x through the permuted strides
 * (operands [out, x]; merged dims make a no-op permutation one flat copy). ---- */

template <typename W>
__global__ void permute_kernel(const __grid_constant__ pd_kcu_shape s, const W *x, W *out) {
  PD_KCU_LOOP(i, s.numel) {
    int64_t off[2];
    pd_kcu_offsets<2>(s, i, off);
    out[off[0]] = x[off[1]];
  }
}

pd_status pd_kcu_permute(size_t esize, int nd, const int64_t *dims, const int *perm,
                         const void *x, void *out) {
  int64_t xs[PD_K_MAX_DIMS], od[PD_K_MAX_DIMS], str[2][PD_K_MAX_DIMS];
  pd_k_contig_strides(nd, dims, xs);
  for (int i = 0; i < nd; i++) {
    od[i] = dims[perm[i]];
    str[1][i] = xs[perm[i]];
  }
  pd_k_contig_strides(nd, od, str[0]);
  pd_kcu_shape s;
  pd_kcu_shape_init(&s, nd, od, 2, (const int64_t(*)[PD_K_MAX_DIMS])str);
  if (s.numel == 0) return PD_OK;
  unsigned nb = pd_kcu_blocks(s.numel);
  cudaStream_t q = pd_kcu_stream;
  switch (esize) {
    case 1:
      permute_kernel<uint8_t><<<nb, PD_KCU_THREADS, 0, q>>>(s, (const uint8_t *)x, (uint8_t *)out);
      break;
    case 2:
      permute_kernel<uint16_t><<<nb, PD_KCU_THREADS, 0, q>>>(s, (const uint16_t *)x,
                                                             (uint16_t *)out);
      break;
    case 4:
      permute_kernel<uint32_t><<<nb, PD_KCU_THREADS, 0, q>>>(s, (const uint32_t *)x,
                                                             (uint32_t *)out);
      break;
    default:
      permute_kernel<uint64_t><<<nb, PD_KCU_THREADS, 0, q>>>(s, (const uint64_t *)x,
                                                             (uint64_t *)out);
      break;
  }
  PD_KCU_LAUNCHED("transpose kernel");
  return PD_OK;
}

pd_status pd_kcu_transpose(pd_dtype dt, int nd, const int64_t *dims, const int *perm,
                           const void *x, void *out) {
  size_t sz = pd_dtype_size(dt);
  if (sz != 1 && sz != 2 && sz != 4 && sz != 8) return PD_EUNSUPPORTED;
  if (nd < 0 || nd > PD_K_MAX_DIMS || pd_k_numel(nd, dims) < 0) return PD_EINVAL;
  bool seen[PD_K_MAX_DIMS] = {false};
  for (int i = 0; i < nd; i++) {
    if (perm[i] < 0 || perm[i] >= nd || seen[perm[i]]) return PD_EINVAL;
    seen[perm[i]] = true;
  }
  return pd_kcu_permute(sz, nd, dims, perm, x, out);
}

/* ---- concat / split: one strided copy per part, [pre rows] x [part elements]. ---- */

template <typename W>
__global__ void copy_rows_kernel(int64_t rows, int64_t cols, const W *src, int64_t spitch, W *dst,
                                 int64_t dpitch) {
  PD_KCU_LOOP(t, rows * cols) {
    int64_t r = t / cols, c = t % cols;
    dst[r * dpitch + c] = src[r * spitch + c];
  }
}

/* dst[r * dpitch + c] = src[r * spitch + c] for r < rows, c < cols (elements of esize). */
static pd_status copy_rows(size_t esize, int64_t rows, int64_t cols, const void *src,
                           int64_t spitch, void *dst, int64_t dpitch) {
  if (rows == 0 || cols == 0) return PD_OK;
  if (rows == 1 || (spitch == cols && dpitch == cols)) {
    PD_KCU_CUDA(cudaMemcpyAsync(dst, src, (size_t)(rows * cols) * esize,
                                cudaMemcpyDeviceToDevice, pd_kcu_stream));
    return PD_OK;
  }
  unsigned nb = pd_kcu_blocks(rows * cols);
  cudaStream_t q = pd_kcu_stream;
  switch (esize) {
    case 1:
      copy_rows_kernel<uint8_t><<<nb, PD_KCU_THREADS, 0, q>>>(rows, cols, (const uint8_t *)src,
                                                              spitch, (uint8_t *)dst, dpitch);
      break;
    case 2:
      copy_rows_kernel<uint16_t><<<nb, PD_KCU_THREADS, 0, q>>>(rows, cols, (const uint16_t *)src,
                                                               spitch, (uint16_t *)dst, dpitch);
      break;
    case 4:
      copy_rows_kernel<uint32_t><<<nb, PD_KCU_THREADS, 0, q>>>(rows, cols, (const uint32_t *)src,
                                                               spitch, (uint32_t *)dst, dpitch);
      break;
    default:
      copy_rows_kernel<uint64_t><<<nb, PD_KCU_THREADS, 0, q>>>(rows, cols, (const uint64_t *)src,
                                                               spitch, (uint64_t *)dst, dpitch);
      break;
  }
  PD_KCU_LAUNCHED("concat/split kernel");
  return PD_OK;
}

pd_status pd_kcu_concat(pd_dtype dt, int ninputs, const void *const *xs, const int64_t *sizes,
                        int64_t pre, int64_t post, void *out) {
  int64_t total;
  PD_KCU_TRY(pd_k_parts_check(dt, ninputs, sizes, pre, post, &total));
  size_t sz = pd_dtype_size(dt);
  int64_t at = 0;  /* column of part k in out's rows */
  for (int k = 0; k < ninputs; k++) {
    int64_t part = sizes[k] * post;
    PD_KCU_TRY(copy_rows(sz, pre, part, xs[k], part, (char *)out + at * (int64_t)sz,
                         total * post));
    at += part;
  }
  return PD_OK;
}

pd_status pd_kcu_split(pd_dtype dt, const void *x, int64_t pre, int64_t post, int noutputs,
                       const int64_t *sizes, void *const *outs) {
  int64_t total;
  PD_KCU_TRY(pd_k_parts_check(dt, noutputs, sizes, pre, post, &total));
  size_t sz = pd_dtype_size(dt);
  int64_t at = 0;
  for (int k = 0; k < noutputs; k++) {
    int64_t part = sizes[k] * post;
    PD_KCU_TRY(copy_rows(sz, pre, part, (const char *)x + at * (int64_t)sz, total * post, outs[k],
                         part));
    at += part;
  }
  return PD_OK;
}

/* ---- Embedding rows ---- */

__global__ void ids_check_kernel(int64_t nids, const int64_t *ids, int64_t nrows, int64_t pad,
                                 int *flag) {
  PD_KCU_LOOP(i, nids) {
    int64_t id = ids[i];
    if ((id < 0 || id >= nrows) && id != pad) *flag = 1;
  }
}

/* A bad id (reported through the flag) reads nothing and writes a zero row. */
template <typename T>
__global__ void gather_kernel(int64_t nrows, int64_t width, const T *table, int64_t nids,
                              const int64_t *ids, int64_t pad, T *out) {
  PD_KCU_LOOP(t, nids * width) {
    int64_t i = t / width, j = t % width, id = ids[i];
    out[t] = id != pad && id >= 0 && id < nrows ? table[id * width + j] : (T)0;
  }
}

__device__ __forceinline__ float atomic_add(float *a, float v) { return atomicAdd(a, v); }
__device__ __forceinline__ double atomic_add(double *a, double v) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600
  return atomicAdd(a, v);
#else
  unsigned long long *p = (unsigned long long *)a, old = *p, seen;
  do {
    seen = old;
    old = atomicCAS(p, seen, __double_as_longlong(__longlong_as_double(seen) + v));
  } while (seen != old);
  return __longlong_as_double(old);
#endif
}

/* Ids were checked: all in range or padding. */
template <typename T>
__global__ void scatter_add_kernel(int64_t width, T *dst, int64_t nids, const int64_t *ids,
                                   int64_t pad, const T *src) {
  PD_KCU_LOOP(t, nids * width) {
    int64_t i = t / width, j = t % width, id = ids[i];
    if (id != pad) atomic_add(&dst[id * width + j], src[t]);
  }
}

/* Queue the ids check (flag reset first). */
static pd_status queue_ids_check(int64_t nids, const int64_t *ids, int64_t nrows, int64_t pad) {
  PD_KCU_TRY(pd_kcu_flag_reset());
  ids_check_kernel<<<pd_kcu_blocks(nids), PD_KCU_THREADS, 0, pd_kcu_stream>>>(nids, ids, nrows,
                                                                              pad, pd_kcu_flag);
  PD_KCU_LAUNCHED("ids check kernel");
  return PD_OK;
}

static pd_status ids_verdict(const char *what, int64_t nrows) {
  int bad = 0;
  PD_KCU_TRY(pd_kcu_flag_read(&bad));
  if (bad)
    return pd_kcu_fail(PD_EINVAL, "%s: an id outside [0, %lld) that is not padding_idx", what,
                       (long long)nrows);
  return PD_OK;
}

pd_status pd_kcu_gather_rows(pd_dtype dt, int64_t nrows, int64_t width, const void *table,
                             int64_t nids, const int64_t *ids, int64_t padding_idx, void *out) {
  PD_KCU_TRY(pd_k_rows_check(dt, nrows, width, nids));
  if (nids == 0) return PD_OK;
  PD_KCU_TRY(queue_ids_check(nids, ids, nrows, padding_idx));
  if (width > 0) {
    unsigned nb = pd_kcu_blocks(nids * width);
    if (dt == PD_FP32)
      gather_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          nrows, width, (const float *)table, nids, ids, padding_idx, (float *)out);
    else
      gather_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          nrows, width, (const double *)table, nids, ids, padding_idx, (double *)out);
    PD_KCU_LAUNCHED("gather_rows kernel");
  }
  return ids_verdict("lookup_table", nrows);
}

pd_status pd_kcu_scatter_add_rows(pd_dtype dt, int64_t nrows, int64_t width, void *dst,
                                  int64_t nids, const int64_t *ids, int64_t padding_idx,
                                  const void *src) {
  PD_KCU_TRY(pd_k_rows_check(dt, nrows, width, nids));
  if (nids == 0) return PD_OK;
  PD_KCU_TRY(queue_ids_check(nids, ids, nrows, padding_idx));
  PD_KCU_TRY(ids_verdict("lookup_table_grad", nrows));  /* before touching dst */
  if (width == 0) return PD_OK;
  unsigned nb = pd_kcu_blocks(nids * width);
  if (dt == PD_FP32)
    scatter_add_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        width, (float *)dst, nids, ids, padding_idx, (const float *)src);
  else
    scatter_add_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        width, (double *)dst, nids, ids, padding_idx, (const double *)src);
  PD_KCU_LAUNCHED("scatter_add_rows kernel");
  return PD_OK;
}
