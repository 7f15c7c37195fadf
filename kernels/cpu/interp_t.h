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
      for (int64_t l = 0; l < p->ow; l++) {
        T *o = y + k * so.y + l * so.x;
        if (nearest) {
          *o = r[0][ix[l] * si.x];
          continue;
        }
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

/* The source coordinate of grid value g on an axis of size s, and its derivative by g in *d. */
static T TF(gs_coord)(T g, int64_t s, bool ac, int padding, T *d) {
  T hi = (T)(s - 1), f = (T)((double)(ac ? s - 1 : s) * 0.5);
  T u = ac ? (g + (T)1) * f : (g + (T)1) * f - (T)0.5, dd = f;
  if (padding == 2) {
    if (ac && s == 1) {
      u = 0, dd = 0;
    } else {
      T a0 = ac ? u : u + (T)0.5, range = (T)((double)(ac ? s - 1 : s) * 2);
      T a = a0 < 0 ? -a0 : a0, sg = a0 < 0 ? (T)-1 : (T)1;
      T extra = a - (T)floor((double)(a / range)) * range;
      if (extra <= range - extra) {
        u = extra, dd *= sg;
      } else {
        u = range - extra, dd *= -sg;
      }
      if (!ac) u = u - (T)0.5;
    }
  }
  if (padding >= 1 && !(ac && padding == 2)) {
    if (u < 0) u = 0, dd = 0;
    if (u > hi) u = hi, dd = 0;
  }
  *d = dd;
  return u;
}

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
      T xr = (T)round((double)u), yr = (T)round((double)v);
      bool in = xr >= 0 && xr <= (T)(p->w - 1) && yr >= 0 && yr <= (T)(p->h - 1);
      int64_t off = in ? (int64_t)yr * p->w + (int64_t)xr : 0;
      for (int64_t ch = 0; ch < p->c; ch++) yi[ch * oplane] = in ? xi[ch * plane + off] : (T)0;
      continue;
    }
    T x0 = (T)floor((double)u), y0 = (T)floor((double)v), x1 = x0 + 1, y1 = y0 + 1;
    T dw = u - x0, de = x1 - u, dn = v - y0, ds = y1 - v;
    bool ix0 = x0 >= 0 && x0 <= (T)(p->w - 1), ix1 = x1 >= 0 && x1 <= (T)(p->w - 1);
    bool iy0 = y0 >= 0 && y0 <= (T)(p->h - 1), iy1 = y1 >= 0 && y1 <= (T)(p->h - 1);
    int64_t c0 = ix0 ? (int64_t)x0 : 0, c1 = ix1 ? (int64_t)x1 : 0;
    int64_t r0 = iy0 ? (int64_t)y0 * p->w : 0, r1 = iy1 ? (int64_t)y1 * p->w : 0;
    for (int64_t ch = 0; ch < p->c; ch++) {
      const T *xc = xi + ch * plane;
      T v00 = iy0 && ix0 ? xc[r0 + c0] : 0, v01 = iy0 && ix1 ? xc[r0 + c1] : 0;
      T v10 = iy1 && ix0 ? xc[r1 + c0] : 0, v11 = iy1 && ix1 ? xc[r1 + c1] : 0;
      yi[ch * oplane] = v00 * de * ds + v01 * dw * ds + v10 * de * dn + v11 * dw * dn;
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
        T xr = (T)round((double)u), yr = (T)round((double)v);
        bool in = xr >= 0 && xr <= (T)(p->w - 1) && yr >= 0 && yr <= (T)(p->h - 1);
        if (dxi && in)
          for (int64_t ch = 0; ch < p->c; ch++)
            dxi[ch * plane + (int64_t)yr * p->w + (int64_t)xr] += dyi[ch * oplane];
        if (dgrid) dgrid[2 * pt] = dgrid[2 * pt + 1] = 0;
        continue;
      }
      T x0 = (T)floor((double)u), y0 = (T)floor((double)v), x1 = x0 + 1, y1 = y0 + 1;
      T dw = u - x0, de = x1 - u, dn = v - y0, ds = y1 - v;
      bool ix0 = x0 >= 0 && x0 <= (T)(p->w - 1), ix1 = x1 >= 0 && x1 <= (T)(p->w - 1);
      bool iy0 = y0 >= 0 && y0 <= (T)(p->h - 1), iy1 = y1 >= 0 && y1 <= (T)(p->h - 1);
      int64_t c0 = ix0 ? (int64_t)x0 : 0, c1 = ix1 ? (int64_t)x1 : 0;
      int64_t r0 = iy0 ? (int64_t)y0 * p->w : 0, r1 = iy1 ? (int64_t)y1 * p->w : 0;
      T gu = 0, gv = 0;
      for (int64_t ch = 0; ch < p->c; ch++) {
        const T *xc = xi + ch * plane;
        T g = dyi[ch * oplane];
        T v00 = iy0 && ix0 ? xc[r0 + c0] : 0, v01 = iy0 && ix1 ? xc[r0 + c1] : 0;
        T v10 = iy1 && ix0 ? xc[r1 + c0] : 0, v11 = iy1 && ix1 ? xc[r1 + c1] : 0;
        gu += g * ((v01 - v00) * ds + (v11 - v10) * dn);
        gv += g * ((v10 - v00) * de + (v11 - v01) * dw);
        if (!dxi) continue;
        T *dc = dxi + ch * plane;
        if (iy0 && ix0) dc[r0 + c0] += g * de * ds;
        if (iy0 && ix1) dc[r0 + c1] += g * dw * ds;
        if (iy1 && ix0) dc[r1 + c0] += g * de * dn;
        if (iy1 && ix1) dc[r1 + c1] += g * dw * dn;
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
