/* interp_t.h -- template of interp.c's loops for one float type; included by interp.c (which
 * defines interp_job and strides_of) with T (float or double), TN (its suffix) and T_FLOAT.
 * Each range function covers planes [b, e) of the n c planes. */

/* Forward: every output of the planes from its taps (kernels.h's sums, left to right). */
static void TF(interp_fwd)(void *ctx, int64_t b, int64_t e) {
  const interp_job *j = ctx;
  const pd_k_interp2d *p = j->p;
  interp_strides si = strides_of(p, p->h, p->w), so = strides_of(p, p->oh, p->ow);
  const int64_t *iy = p->idx, *ix = iy + p->th * p->oh;
  const double *ly = p->lam, *lx = ly + p->th * p->oh;
  bool nearest = p->th == 1 && p->tw == 1, cubic = p->th == 4;
  for (int64_t pl = b; pl < e; pl++) {
    const T *x = (const T *)j->src + pl / p->c * si.n + pl % p->c * si.c;
    T *y = (T *)j->dst + pl / p->c * so.n + pl % p->c * so.c;
    for (int64_t k = 0; k < p->oh; k++) {
      const T *r[4] = {x, x, x, x};
      T wy[4] = {0, 0, 0, 0};
      for (int i = 0; i < p->th; i++) {
        r[i] = x + iy[i * p->oh + k] * si.y;
        wy[i] = (T)ly[i * p->oh + k];
      }
      if (nearest) {
        T *o = y + k * so.y;
        if (k > 0 && iy[k] == iy[k - 1] && so.x == 1) {
          /* the row above read the same input row: an upsampling's repeated rows are copies */
          memcpy(o, o - so.y, (size_t)p->ow * sizeof(T));
          continue;
        }
        for (int64_t l = 0; l < p->ow; l++) o[l * so.x] = r[0][ix[l] * si.x];
        continue;
      }
      for (int64_t l = 0; l < p->ow; l++) {
        T *o = y + k * so.y + l * so.x;
        int64_t q[4] = {0, 0, 0, 0};
        T wx[4] = {0, 0, 0, 0};
        for (int t = 0; t < p->tw; t++) {
          q[t] = ix[t * p->ow + l] * si.x;
          wx[t] = (T)lx[t * p->ow + l];
        }
        T s;
        if (p->th == 2 && p->tw == 2) {  /* bilinear, written out: the common case */
          s = r[0][q[0]] * wy[0] * wx[0] + r[1][q[0]] * wy[1] * wx[0] + r[0][q[1]] * wy[0] * wx[1] +
              r[1][q[1]] * wy[1] * wx[1];
        } else if (cubic) {
          s = 0;
          for (int i = 0; i < 4; i++) {
            T row = r[i][q[0]] * wx[0] + r[i][q[1]] * wx[1] + r[i][q[2]] * wx[2] +
                    r[i][q[3]] * wx[3];
            s = i ? s + row * wy[i] : row * wy[i];
          }
        } else {
          s = r[0][q[0]] * wy[0] * wx[0];
          for (int t = 0; t < p->tw; t++)
            for (int i = t ? 0 : 1; i < p->th; i++) s = s + r[i][q[t]] * wy[i] * wx[t];
        }
        *o = s;
      }
    }
  }
}

/* Gradient: the planes of dx zeroed, then every dy element added to its taps, in output order. */
static void TF(interp_bwd)(void *ctx, int64_t b, int64_t e) {
  const interp_job *j = ctx;
  const pd_k_interp2d *p = j->p;
  interp_strides si = strides_of(p, p->h, p->w), so = strides_of(p, p->oh, p->ow);
  const int64_t *iy = p->idx, *ix = iy + p->th * p->oh;
  const double *ly = p->lam, *lx = ly + p->th * p->oh;
  bool nearest = p->th == 1 && p->tw == 1;
  for (int64_t pl = b; pl < e; pl++) {
    T *dx = (T *)j->dst + pl / p->c * si.n + pl % p->c * si.c;
    const T *dy = (const T *)j->src + pl / p->c * so.n + pl % p->c * so.c;
    for (int64_t r = 0; r < p->h; r++)
      for (int64_t q = 0; q < p->w; q++) dx[r * si.y + q * si.x] = 0;
    for (int64_t k = 0; k < p->oh; k++) {
      T *r[4];
      T wy[4];
      for (int i = 0; i < p->th; i++) {
        r[i] = dx + iy[i * p->oh + k] * si.y;
        wy[i] = (T)ly[i * p->oh + k];
      }
      for (int64_t l = 0; l < p->ow; l++) {
        T g = dy[k * so.y + l * so.x];
        if (nearest) {
          r[0][ix[l] * si.x] += g;
          continue;
        }
        for (int t = 0; t < p->tw; t++) {
          int64_t q = ix[t * p->ow + l] * si.x;
          T wx = (T)lx[t * p->ow + l];
          for (int i = 0; i < p->th; i++) r[i][q] += g * wy[i] * wx;
        }
      }
    }
  }
}

/* ---- grid_sample (kernels.h) ---- */

/* The coordinates and corners (kernels/grid_sample_t.h, shared with the CUDA kernels). */
#define PD_K_GS(name) TF(name)
#define PD_K_GS_HD
#include "kernels/grid_sample_t.h"
#undef PD_K_GS
#undef PD_K_GS_HD

/* Sample points [b, e) of the n oh ow (image-major): every channel's output. */
static void TF(gs_fwd)(void *ctx, int64_t b, int64_t e) {
  const gs_job *j = ctx;
  const pd_k_grid_sample *p = j->p;
  const T *x = j->x, *grid = j->grid;
  T *y = j->out;
  int64_t plane = p->h * p->w, oplane = p->oh * p->ow;
  for (int64_t pt = b; pt < e; pt++) {
    int64_t img = pt / oplane, at = pt % oplane;
    T du, dv;
    T u = TF(gs_coord)(grid[2 * pt], p->w, p->align_corners, p->padding, &du);
    T v = TF(gs_coord)(grid[2 * pt + 1], p->h, p->align_corners, p->padding, &dv);
    const T *xi = x + img * p->c * plane;
    T *yi = y + img * p->c * oplane + at;
    if (p->nearest) {
      int64_t off;
      bool in = TF(gs_nearest)(p->h, p->w, u, v, &off);
      for (int64_t ch = 0; ch < p->c; ch++) yi[ch * oplane] = in ? xi[ch * plane + off] : (T)0;
      continue;
    }
    T f[4];
    bool in[4];
    int64_t off[4];
    TF(gs_corners)(p->h, p->w, u, v, f, in, off);
    for (int64_t ch = 0; ch < p->c; ch++) {
      const T *xc = xi + ch * plane;
      T v00 = in[0] ? xc[off[0]] : 0, v01 = in[1] ? xc[off[1]] : 0;
      T v10 = in[2] ? xc[off[2]] : 0, v11 = in[3] ? xc[off[3]] : 0;
      yi[ch * oplane] = v00 * f[1] * f[3] + v01 * f[0] * f[3] + v10 * f[1] * f[2] +
                        v11 * f[0] * f[2];
    }
  }
}

/* Images [b, e): dx's planes zeroed, then every sample point's dy added to its corners (in
 * point order), and its grid gradient. */
static void TF(gs_bwd)(void *ctx, int64_t b, int64_t e) {
  const gs_job *j = ctx;
  const pd_k_grid_sample *p = j->p;
  const T *x = j->x, *grid = j->grid, *dy = j->dy;
  T *dx = j->out, *dgrid = j->out2;
  int64_t plane = p->h * p->w, oplane = p->oh * p->ow;
  for (int64_t img = b; img < e; img++) {
    const T *xi = x + img * p->c * plane;
    T *dxi = dx ? dx + img * p->c * plane : NULL;
    if (dxi)
      for (int64_t i = 0; i < p->c * plane; i++) dxi[i] = 0;
    for (int64_t at = 0; at < oplane; at++) {
      int64_t pt = img * oplane + at;
      T du, dv;
      T u = TF(gs_coord)(grid[2 * pt], p->w, p->align_corners, p->padding, &du);
      T v = TF(gs_coord)(grid[2 * pt + 1], p->h, p->align_corners, p->padding, &dv);
      const T *dyi = dy + img * p->c * oplane + at;
      if (p->nearest) {
        int64_t off;
        if (TF(gs_nearest)(p->h, p->w, u, v, &off) && dxi)
          for (int64_t ch = 0; ch < p->c; ch++) dxi[ch * plane + off] += dyi[ch * oplane];
        if (dgrid) dgrid[2 * pt] = dgrid[2 * pt + 1] = 0;
        continue;
      }
      T f[4];
      bool in[4];
      int64_t off[4];
      TF(gs_corners)(p->h, p->w, u, v, f, in, off);
      T gu = 0, gv = 0;
      for (int64_t ch = 0; ch < p->c; ch++) {
        const T *xc = xi + ch * plane;
        T g = dyi[ch * oplane];
        T v00 = in[0] ? xc[off[0]] : 0, v01 = in[1] ? xc[off[1]] : 0;
        T v10 = in[2] ? xc[off[2]] : 0, v11 = in[3] ? xc[off[3]] : 0;
        gu += g * ((v01 - v00) * f[3] + (v11 - v10) * f[2]);
        gv += g * ((v10 - v00) * f[1] + (v11 - v01) * f[0]);
        if (!dxi) continue;
        T *dc = dxi + ch * plane, wt[4] = {f[1] * f[3], f[0] * f[3], f[1] * f[2], f[0] * f[2]};
        for (int q = 0; q < 4; q++)
          if (in[q]) dc[off[q]] += g * wt[q];
      }
      if (dgrid) {
        dgrid[2 * pt] = gu * du;
        dgrid[2 * pt + 1] = gv * dv;
      }
    }
  }
}

#undef T
#undef TN
#undef T_FLOAT
