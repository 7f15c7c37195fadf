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
      const T *r[4];
      T wy[4];
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
        int64_t q[4];
        T wx[4];
        for (int t = 0; t < p->tw; t++) {
          q[t] = ix[t * p->ow + l] * si.x;
          wx[t] = (T)lx[t * p->ow + l];
        }
        T s;
        if (cubic) {
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

#undef T
#undef TN
#undef T_FLOAT
