/* pad.c -- the CPU backend's pad and pad_grad (pad, pad2d, pad3d: a tensor padded in every dim
 * by a constant, its mirror image, its edge or its periodic repetition; the gradient adds up
 * what each element of x gave to the padded tensor). A row of out (its last dim) at a time. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels_int.h"

#include <string.h>

/* The offset in x of the row of out at index idx (its last dim left out), or -1 when that row
 * lies in a constant border. */
static int64_t row_src(int nd, const int64_t *idx, const int64_t *xd, const int64_t *before,
                       pd_k_pad_mode mode) {
  int64_t off = 0;
  for (int k = 0; k < nd - 1; k++) {
    int64_t i = pd_k_pad_src(idx[k], xd[k], before[k], mode);
    if (i < 0) return -1;
    off = off * xd[k] + i;
  }
  return off * (nd > 0 ? xd[nd - 1] : 1);
}

/* One step of the row index over the dims of out but the last; false after the last row. */
static bool next_row(int nd, int64_t *idx, const int64_t *od) {
  for (int k = nd - 2; k >= 0; k--) {
    if (++idx[k] < od[k]) return true;
    idx[k] = 0;
  }
  return false;
}

pd_status pd_kcpu_pad(pd_dtype dt, int nd, const int64_t *xd, const int64_t *before,
                      const int64_t *after, pd_k_pad_mode mode, double value, const void *x,
                      void *out) {
  int64_t od[PD_K_MAX_DIMS], idx[PD_K_MAX_DIMS] = {0};
  pd_status st = pd_k_pad_check(dt, nd, xd, before, after, mode, false, od);
  if (st || pd_k_numel(nd, od) == 0) return st;
  /* The value's bytes in dt (an integer outside int32's range, or NaN, pads with 0); elements
   * move as bytes. */
  union {
    float f;
    double d;
    int32_t i;
    int64_t l;
  } v;
  bool fits = value > -2147483648.0 && value < 2147483648.0;  /* NaN does not */
  switch (dt) {
    case PD_FP32: v.f = (float)value; break;
    case PD_FP64: v.d = value; break;
    case PD_INT32: v.i = fits ? (int32_t)value : 0; break;
    default: v.l = fits ? (int64_t)value : 0; break;
  }
  size_t esz = pd_dtype_size(dt);
  int64_t w = nd > 0 ? od[nd - 1] : 1, n = nd > 0 ? xd[nd - 1] : 1, b = nd > 0 ? before[nd - 1] : 0;
  const char *xs = x;
  char *o = out;
  do {
    int64_t src = row_src(nd, idx, xd, before, mode);
    for (int64_t j = 0; j < w; j++, o += esz) {
      int64_t i = src < 0 ? -1 : pd_k_pad_src(j, n, b, mode);
      memcpy(o, i < 0 ? (const char *)&v : xs + (size_t)(src + i) * esz, esz);
    }
  } while (next_row(nd, idx, od));
  return PD_OK;
}

#define PAD_GRAD_T(T)                                                                     \
  static void pad_grad_##T(int nd, const int64_t *xd, const int64_t *od,                  \
                           const int64_t *before, pd_k_pad_mode mode, const T *dout,       \
                           T *dx) {                                                        \
    int64_t idx[PD_K_MAX_DIMS] = {0}, w = nd > 0 ? od[nd - 1] : 1;                         \
    int64_t n = nd > 0 ? xd[nd - 1] : 1, b = nd > 0 ? before[nd - 1] : 0;                  \
    do {                                                                                   \
      int64_t src = row_src(nd, idx, xd, before, mode);                                    \
      for (int64_t j = 0; j < w; j++, dout++) {                                            \
        int64_t i = src < 0 ? -1 : pd_k_pad_src(j, n, b, mode);                            \
        if (i >= 0) dx[src + i] += *dout;                                                  \
      }                                                                                    \
    } while (next_row(nd, idx, od));                                                       \
  }
PAD_GRAD_T(float)
PAD_GRAD_T(double)
#undef PAD_GRAD_T

pd_status pd_kcpu_pad_grad(pd_dtype dt, int nd, const int64_t *xd, const int64_t *before,
                           const int64_t *after, pd_k_pad_mode mode, const void *dout,
                           void *dx) {
  int64_t od[PD_K_MAX_DIMS];
  pd_status st = pd_k_pad_check(dt, nd, xd, before, after, mode, true, od);
  int64_t nx = st ? 0 : pd_k_numel(nd, xd);
  if (st || nx == 0) return st;
  memset(dx, 0, (size_t)nx * pd_dtype_size(dt));
  if (dt == PD_FP32) pad_grad_float(nd, xd, od, before, mode, dout, dx);
  else pad_grad_double(nd, xd, od, before, mode, dout, dx);
  return PD_OK;
}
