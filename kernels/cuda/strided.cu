/* strided.cu -- the CUDA backend's strided_copy: elements moved between a dense tensor and a
 * strided, possibly repeating view of another buffer (slice, expand_v2, tile, stack's parts),
 * one thread per dense element walking the dims from the last. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

/* The copy's geometry, passed by value. */
struct strided_geom {
  int nd;
  int64_t numel, off;
  int64_t od[PD_K_MAX_DIMS], sd[PD_K_MAX_DIMS], sstr[PD_K_MAX_DIMS];
};

template <typename W>
__global__ void strided_copy_kernel(const __grid_constant__ strided_geom g, const W *src, W *dst,
                                    bool scatter) {
  PD_KCU_LOOP(j, g.numel) {
    int64_t v = g.off, rest = j;
    for (int k = g.nd - 1; k >= 0; k--) {
      int64_t idx = rest % g.od[k];
      rest /= g.od[k];
      v += (g.sd[k] >= g.od[k] ? idx : idx % g.sd[k]) * g.sstr[k];
    }
    if (scatter) dst[v] = src[j];
    else dst[j] = src[v];
  }
}

template <typename W>
static void launch(const strided_geom &g, const void *src, void *dst, bool scatter) {
  strided_copy_kernel<W><<<pd_kcu_blocks(g.numel), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      g, (const W *)src, (W *)dst, scatter);
}

pd_status pd_kcu_strided_copy(pd_dtype dt, int nd, const int64_t *od, const int64_t *sd,
                              const int64_t *sstr, int64_t off, const void *src, void *dst,
                              bool scatter) {
  pd_status st = pd_k_strided_check(dt, nd, od, sd, sstr, off);
  if (st) return st;
  strided_geom g;
  g.nd = nd;
  g.off = off;
  g.numel = pd_k_numel(nd, od);
  for (int k = 0; k < nd; k++) {
    g.od[k] = od[k];
    g.sd[k] = sd[k];
    g.sstr[k] = sstr[k];
  }
  if (g.numel == 0) return PD_OK;
  switch (pd_dtype_size(dt)) {
    case 1: launch<uint8_t>(g, src, dst, scatter); break;
    case 2: launch<uint16_t>(g, src, dst, scatter); break;
    case 4: launch<uint32_t>(g, src, dst, scatter); break;
    default: launch<uint64_t>(g, src, dst, scatter); break;
  }
  PD_KCU_LAUNCHED("strided_copy kernel");
  return PD_OK;
}
