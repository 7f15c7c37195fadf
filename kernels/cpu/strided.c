/* strided.c -- the CPU backend's strided_copy (elements moved between a dense tensor and a
 * strided, possibly repeating view of another buffer: slice, expand_v2, tile, stack's parts)
 * and where (a choice between two strided operands by a strided condition). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels_int.h"

#include <string.h>

pd_status pd_kcpu_strided_copy(pd_dtype dt, int nd, const int64_t *od, const int64_t *sd,
                               const int64_t *sstr, int64_t off, const void *src, void *dst,
                               bool scatter) {
  pd_status st = pd_k_strided_check(dt, nd, od, sd, sstr, off);
  if (st) return st;
  int64_t n = pd_k_numel(nd, od), idx[PD_K_MAX_DIMS] = {0};
  if (n == 0) return PD_OK;
  size_t esz = pd_dtype_size(dt);
  /* The last dim read straight with stride 1 moves as one run per row. */
  int64_t row = nd > 0 && sd[nd - 1] >= od[nd - 1] && sstr[nd - 1] == 1 ? od[nd - 1] : 1;
  const char *s = src;
  char *d = dst;
  for (int64_t j = 0; j < n; j += row) {
    int64_t v = off;
    for (int k = 0; k < nd; k++) v += (sd[k] >= od[k] ? idx[k] : idx[k] % sd[k]) * sstr[k];
    if (scatter) memcpy(d + (size_t)v * esz, s + (size_t)j * esz, (size_t)row * esz);
    else memcpy(d + (size_t)j * esz, s + (size_t)v * esz, (size_t)row * esz);
    /* Next row: from the row's last element, one step in row-major order. */
    if (row > 1) idx[nd - 1] = od[nd - 1] - 1;
    for (int k = nd - 1; k >= 0; k--) {
      if (++idx[k] < od[k]) break;
      idx[k] = 0;
    }
  }
  return PD_OK;
}

pd_status pd_kcpu_where(pd_dtype dt, int nd, const int64_t *od, const int64_t *cstr,
                        const uint8_t *cond, const int64_t *xstr, const void *x,
                        const int64_t *ystr, const void *y, void *out) {
  pd_status st = pd_k_where_check(dt, nd, od, cstr, xstr, ystr);
  if (st) return st;
  int64_t n = pd_k_numel(nd, od), idx[PD_K_MAX_DIMS] = {0};
  size_t esz = pd_dtype_size(dt);
  const char *xs = x, *ys = y;
  char *o = out;
  for (int64_t j = 0; j < n; j++) {
    int64_t c = 0, a = 0, b = 0;
    for (int k = 0; k < nd; k++) {
      c += idx[k] * cstr[k];
      a += idx[k] * xstr[k];
      b += idx[k] * ystr[k];
    }
    memcpy(o + (size_t)j * esz, cond[c] ? xs + (size_t)a * esz : ys + (size_t)b * esz, esz);
    for (int k = nd - 1; k >= 0; k--) {
      if (++idx[k] < od[k]) break;
      idx[k] = 0;
    }
  }
  return PD_OK;
}
