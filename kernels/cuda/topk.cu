/* topk.cu -- the CUDA backend's top_k: every row is sorted by a stable segmented sort
 * (cub::DeviceSegmentedSort::StableSortPairs) on keys that order values the CPU's way (larger
 * first, or smaller first for the k smallest; NaN the largest, -0 equal to +0), with the
 * element's index as the payload; equal
 * keys keep their index order, so the first k of each row are exactly the CPU's values and
 * indices. Kept apart from index.cu because CUB's templates are slow to compile. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <cub/device/device_segmented_sort.cuh>
#include <limits.h>

/* Keys sorting ascending in top_k order: the value's bits mapped to an unsigned integer that
 * grows with the value (every NaN the all-ones key, above +inf's), complemented unless
 * smallest (larger values first, NaN before any number; smallest: NaN after any number). */
__device__ __forceinline__ uint32_t topk_key(float v, bool smallest) {
  uint32_t u = 0xFFFFFFFFu;
  if (v == v) {
    if (v == 0.0f) v = 0.0f;  /* -0 == +0: one key */
    uint32_t b = __float_as_uint(v);
    u = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  }
  return smallest ? u : ~u;
}
__device__ __forceinline__ uint64_t topk_key(double v, bool smallest) {
  uint64_t u = 0xFFFFFFFFFFFFFFFFull;
  if (v == v) {
    if (v == 0.0) v = 0.0;
    uint64_t b = (uint64_t)__double_as_longlong(v);
    u = (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
  }
  return smallest ? u : ~u;
}
__device__ __forceinline__ uint32_t topk_key(int32_t v, bool smallest) {
  uint32_t u = (uint32_t)v ^ 0x80000000u;
  return smallest ? u : ~u;
}
__device__ __forceinline__ uint64_t topk_key(int64_t v, bool smallest) {
  uint64_t u = (uint64_t)v ^ 0x8000000000000000ull;
  return smallest ? u : ~u;
}

/* keys[i], idx[i] (index within the row) for every element; offsets[r] = r * n. */
template <typename T, typename K>
__global__ void topk_prepare_kernel(int64_t rows, int64_t n, bool smallest, const T *x, K *keys,
                                    int32_t *idx, int64_t *offsets) {
  PD_KCU_LOOP(i, rows * n) {
    keys[i] = topk_key(x[i], smallest);
    idx[i] = (int32_t)(i % n);
  }
  PD_KCU_LOOP(r, rows + 1) offsets[r] = r * n;
}

/* The first k of each sorted row. */
template <typename T>
__global__ void topk_gather_kernel(int64_t rows, int64_t n, int64_t k, const T *x,
                                   const int32_t *sorted, T *values, int64_t *indices) {
  PD_KCU_LOOP(t, rows * k) {
    int64_t r = t / k, j = t % k, at = sorted[r * n + j];
    values[t] = x[r * n + at];
    indices[t] = at;
  }
}

template <typename T, typename K>
static pd_status top_k(int64_t rows, int64_t n, int64_t k, bool smallest, const void *x,
                       void *values, int64_t *indices) {
  int64_t items = rows * n;
  size_t temp_bytes = 0;
  const int64_t *no_offsets = NULL;  /* the size query reads no data */
  cudaError_t e = cub::DeviceSegmentedSort::StableSortPairs(
      NULL, temp_bytes, (const K *)NULL, (K *)NULL, (const int32_t *)NULL, (int32_t *)NULL, items,
      rows, no_offsets, no_offsets, pd_kcu_stream);
  if (e != cudaSuccess) return pd_kcu_cuda_fail("cub::DeviceSegmentedSort (size query)", e);
  /* One scratch block: keys in/out, indices in/out, row offsets, CUB's temporary storage. */
  size_t kb = pd_kcu_align((size_t)items * sizeof(K)), ib = pd_kcu_align((size_t)items * 4);
  size_t ob = pd_kcu_align((size_t)(rows + 1) * sizeof(int64_t));
  char *s = (char *)pd_kcu_scratch(2 * kb + 2 * ib + ob + temp_bytes);
  if (!s) return PD_ENOMEM;
  K *keys_in = (K *)s, *keys_out = (K *)(s + kb);
  int32_t *idx_in = (int32_t *)(s + 2 * kb), *idx_out = (int32_t *)(s + 2 * kb + ib);
  int64_t *offsets = (int64_t *)(s + 2 * kb + 2 * ib);
  void *temp = s + 2 * kb + 2 * ib + ob;
  topk_prepare_kernel<T, K><<<pd_kcu_blocks(items), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      rows, n, smallest, (const T *)x, keys_in, idx_in, offsets);
  e = cudaGetLastError();
  if (e == cudaSuccess)
    e = cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, keys_in, keys_out, idx_in,
                                                  idx_out, items, rows, offsets, offsets + 1,
                                                  pd_kcu_stream);
  if (e == cudaSuccess) {
    topk_gather_kernel<T><<<pd_kcu_blocks(rows * k), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        rows, n, k, (const T *)x, idx_out, (T *)values, indices);
    e = cudaGetLastError();
  }
  pd_k_dev_free(s);  /* stream order: reused only by later work */
  if (e != cudaSuccess) return pd_kcu_cuda_fail("top_k", e);
  return PD_OK;
}

pd_status pd_kcu_top_k(pd_dtype dt, int64_t rows, int64_t n, int64_t k, bool smallest,
                       const void *x, void *values, int64_t *indices) {
  int64_t sizes[] = {rows, n};
  if (rows < 0 || k < 1 || k > n || pd_k_numel(2, sizes) < 0) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64) return PD_EUNSUPPORTED;
  if (rows == 0) return PD_OK;
  if (n > INT_MAX)  /* the index payload is an int32 */
    return pd_kcu_fail(PD_EUNSUPPORTED, "top_k: rows of %lld elements (the CUDA top_k takes "
                       "rows of up to 2^31 - 1)", (long long)n);
  switch (dt) {
    case PD_FP32: return top_k<float, uint32_t>(rows, n, k, smallest, x, values, indices);
    case PD_FP64: return top_k<double, uint64_t>(rows, n, k, smallest, x, values, indices);
    case PD_INT32: return top_k<int32_t, uint32_t>(rows, n, k, smallest, x, values, indices);
    default: return top_k<int64_t, uint64_t>(rows, n, k, smallest, x, values, indices);
  }
}
