/* interp_t.h -- template of interp.c's loops for one float type; included by interp.c (which
 * defines interp_job and strides_of) with T (float or double), TN (its suffix) and T_FLOAT.
 * Each range function covers planes [b, e) of the n c planes. */

/* Forward: every output of the planes from its taps (kernels.h's sum, left to right). */
static void TF(interp_fwd)(void *ctx, int64_t b, int64_t e) {
  const interp_job *j = ctx;
  const pd_k_interp2d *p = j->p;
  interp_strides si = strides_of(p, p->h, p->w), so = strides_of(p, p->oh, p->ow);
  const int64_t *iy0 = p->idx, *iy1 = iy0 + p->oh, *ix0 = iy1 + p->oh, *ix1 = ix0 + p->ow;
  const double *ly0 = p->lam, *ly1 = ly0 + p->oh, *lx0 = ly1 + p->oh, *lx1 = lx0 + p->ow;
  for (int64_t pl = b; pl < e; pl++) {
    const T *x = (const T *)j->src + pl / p->c * si.n + pl % p->c * si.c;
    T *y = (T *)j->dst + pl / p->c * so.n + pl % p->c * so.c;
    for (int64_t k = 0; k < p->oh; k++) {
      const T *r0 = x + iy0[k] * si.y, *r1 = x + iy1[k] * si.y;
      T wy0 = (T)ly0[k], wy1 = (T)ly1[k];
      for (int64_t l = 0; l < p->ow; l++) {
        T *o = y + k * so.y + l * so.x;
        int64_t a = ix0[l] * si.x, c = ix1[l] * si.x;
        if (p->nearest) {
          *o = r0[a];
          continue;
        }
        T wx0 = (T)lx0[l], wx1 = (T)lx1[l];
        *o = r0[a] * wy0 * wx0 + r1[a] * wy1 * wx0 + r0[c] * wy0 * wx1 + r1[c] * wy1 * wx1;
      }
    }
  }
}

/* Gradient: the planes of dx zeroed, then every dy element added to its taps, in output order. */
static void TF(interp_bwd)(void *ctx, int64_t b, int64_t e) {
  const interp_job *j = ctx;
  const pd_k_interp2d *p = j->p;
  interp_strides si = strides_of(p, p->h, p->w), so = strides_of(p, p->oh, p->ow);
  const int64_t *iy0 = p->idx, *iy1 = iy0 + p->oh, *ix0 = iy1 + p->oh, *ix1 = ix0 + p->ow;
  const double *ly0 = p->lam, *ly1 = ly0 + p->oh, *lx0 = ly1 + p->oh, *lx1 = lx0 + p->ow;
  for (int64_t pl = b; pl < e; pl++) {
    T *dx = (T *)j->dst + pl / p->c * si.n + pl % p->c * si.c;
    const T *dy = (const T *)j->src + pl / p->c * so.n + pl % p->c * so.c;
    for (int64_t r = 0; r < p->h; r++)
      for (int64_t q = 0; q < p->w; q++) dx[r * si.y + q * si.x] = 0;
    for (int64_t k = 0; k < p->oh; k++) {
      T *r0 = dx + iy0[k] * si.y, *r1 = dx + iy1[k] * si.y;
      T wy0 = (T)ly0[k], wy1 = (T)ly1[k];
      for (int64_t l = 0; l < p->ow; l++) {
        T g = dy[k * so.y + l * so.x];
        int64_t a = ix0[l] * si.x, c = ix1[l] * si.x;
        if (p->nearest) {
          r0[a] += g;
          continue;
        }
        T wx0 = (T)lx0[l], wx1 = (T)lx1[l];
        r0[a] += g * wy0 * wx0;
        r1[a] += g * wy1 * wx0;
        r0[c] += g * wy0 * wx1;
        r1[c] += g * wy1 * wx1;
      }
    }
  }
}

#undef T
#undef TN
#undef T_FLOAT
