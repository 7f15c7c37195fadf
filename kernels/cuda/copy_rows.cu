/* copy_rows.cu -- the CUDA backend's copy_rows (kernels.h): a grid-stride kernel, a thread per
 * element, each reading its row's ids (the caller's, trusted: nothing waits to check them). The
 * element moves as an unsigned integer of its size. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

template <typename W>
__global__ void copy_rows_kernel(int64_t n, int64_t width, const W *src, const int64_t *sids,
                                 W *dst, const int64_t *dids) {
  PD_KCU_LOOP(e, n * width) {
    int64_t i = e / width, j = e % width;
    int64_t s = sids ? sids[i] : i, d = dids ? dids[i] : i;
    dst[d * width + j] = src[s * width + j];
  }
}

template <typename W>
static void launch(int64_t n, int64_t width, const void *src, const int64_t *sids, void *dst,
                   const int64_t *dids) {
  copy_rows_kernel<W><<<pd_kcu_blocks(n * width), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      n, width, (const W *)src, sids, (W *)dst, dids);
}

pd_status pd_kcu_copy_rows(pd_dtype dt, int64_t n, int64_t width, const void *src,
                           const int64_t *src_ids, void *dst, const int64_t *dst_ids) {
  PD_KCU_TRY(pd_k_copy_rows_check(dt, n, width, src, dst));
  if (n == 0 || width == 0) return PD_OK;
  switch (pd_dtype_size(dt)) {
    case 1: launch<uint8_t>(n, width, src, src_ids, dst, dst_ids); break;
    case 2: launch<uint16_t>(n, width, src, src_ids, dst, dst_ids); break;
    case 4: launch<uint32_t>(n, width, src, src_ids, dst, dst_ids); break;
    default: launch<uint64_t>(n, width, src, src_ids, dst, dst_ids); break;
  }
  PD_KCU_LAUNCHED("copy_rows kernel");
  return PD_OK;
}
