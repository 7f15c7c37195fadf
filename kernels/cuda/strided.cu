/* strided.cu -- the CUDA backend's strided_copy (elements moved between a dense tensor and a
 * strided, possibly repeating view of another buffer: slice, expand_v2, tile, stack's parts)
 * and where (a choice between two strided operands by a strided condition); one thread per
 * dense element, walking the dims from the last. */
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

/* ---- where ---- */

struct where_geom {
  int nd;
  int64_t numel;
  int64_t od[PD_K_MAX_DIMS], str[3][PD_K_MAX_DIMS];  /* cond, x, y */
};

template <typename W>
__global__ void where_kernel(const __grid_constant__ where_geom g, const uint8_t *cond,
                             const W *x, const W *y, W *out) {
  PD_KCU_LOOP(j, g.numel) {
    int64_t c = 0, a = 0, b = 0, rest = j;
    for (int k = g.nd - 1; k >= 0; k--) {
      int64_t idx = rest % g.od[k];
      rest /= g.od[k];
      c += idx * g.str[0][k];
      a += idx * g.str[1][k];
      b += idx * g.str[2][k];
    }
    out[j] = cond[c] ? x[a] : y[b];
  }
}

template <typename W>
static void launch_where(const where_geom &g, const uint8_t *cond, const void *x, const void *y,
                         void *out) {
  where_kernel<W><<<pd_kcu_blocks(g.numel), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      g, cond, (const W *)x, (const W *)y, (W *)out);
}

pd_status pd_kcu_where(pd_dtype dt, int nd, const int64_t *od, const int64_t *cstr,
                       const uint8_t *cond, const int64_t *xstr, const void *x,
                       const int64_t *ystr, const void *y, void *out) {
  pd_status st = pd_k_where_check(dt, nd, od, cstr, xstr, ystr);
  if (st) return st;
  where_geom g;
  g.nd = nd;
  g.numel = pd_k_numel(nd, od);
  for (int k = 0; k < nd; k++) {
    g.od[k] = od[k];
    g.str[0][k] = cstr[k];
    g.str[1][k] = xstr[k];
    g.str[2][k] = ystr[k];
  }
  if (g.numel == 0) return PD_OK;
  switch (pd_dtype_size(dt)) {
    case 1: launch_where<uint8_t>(g, cond, x, y, out); break;
    case 2: launch_where<uint16_t>(g, cond, x, y, out); break;
    case 4: launch_where<uint32_t>(g, cond, x, y, out); break;
    default: launch_where<uint64_t>(g, cond, x, y, out); break;
  }
  PD_KCU_LAUNCHED("where kernel");
  return PD_OK;
}
