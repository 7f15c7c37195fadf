/* norm_t.h -- the typed loops of norm.c (batch_norm, layer_norm and their gradients), included
 * once per element type with T and TN defined (see cpu.h). Statistics accumulate in double.
 *
 * Every loop over elements is one the compiler vectorises: sums are OpenMP simd reductions
 * (partial sums per vector lane, added at the end: a fixed order, whatever the thread count),
 * and the choices (scale given or not, global statistics or not) are made outside the loops.
 * batch_norm over [n, c, 1] (the NC layout) has no run of one channel to vectorise along, so it
 * goes row by row over a block of channels with one accumulator per channel (NORM_BLOCK).
 * NORM_ATTR is empty, or the target attribute of norm.c's AVX2 instance. */

/* sum of p[0..len) and sum of (p[k] - mu)^2 */
NORM_ATTR static inline double TF(sum_of)(const T *p, int64_t len) {
  double sum = 0;
  PD_SIMD_WITH(reduction(+ : sum)) for (int64_t k = 0; k < len; k++) sum += (double)p[k];
  return sum;
}
NORM_ATTR static inline double TF(sq_dev)(const T *p, int64_t len, double mu) {
  double sq = 0;
  PD_SIMD_WITH(reduction(+ : sq)) for (int64_t k = 0; k < len; k++) {
    double d = (double)p[k] - mu;
    sq += d * d;
  }
  return sq;
}
/* q[k] = p[k] * a + b */
NORM_ATTR static inline void TF(affine)(const T *p, T *q, int64_t len, double a, double b) {
  PD_SIMD for (int64_t k = 0; k < len; k++) q[k] = (T)((double)p[k] * a + b);
}

/* The end of a channel's forward run: saved and running statistics. */
NORM_ATTR static inline void TF(bn_fwd_stats)(const norm_job *j, int64_t ch, double mu, double v,
                                    double r) {
  const T *mean = j->mean, *var = j->var;
  T *mo = j->mean_out, *vo = j->var_out, *sm = j->saved_mean, *sr = j->saved_r;
  if (sm) sm[ch] = (T)mu;
  if (sr) sr[ch] = (T)r;
  if (!j->global) {
    double m = j->momentum;
    if (mo) mo[ch] = (T)(m * (double)mean[ch] + (1 - m) * mu);
    if (vo) vo[ch] = (T)(m * (double)var[ch] + (1 - m) * v);
  }
}

/* Channels [begin, end) of a batch_norm forward run, s == 1 (NC): NORM_BLOCK channels at a
 * time, row by row. */
NORM_ATTR static void TF(bn_fwd_nc)(const norm_job *j, int64_t begin, int64_t end) {
  const T *x = j->x, *scale = j->scale, *bias = j->bias, *mean = j->mean, *var = j->var;
  T *y = j->y;
  int64_t n = j->n, c = j->c;
  double acc[NORM_BLOCK], mu[NORM_BLOCK], a[NORM_BLOCK], b[NORM_BLOCK];
  for (int64_t c0 = begin; c0 < end; c0 += NORM_BLOCK) {
    int64_t w = end - c0 < NORM_BLOCK ? end - c0 : NORM_BLOCK;
    double v[NORM_BLOCK];
    if (j->global) {
      for (int64_t k = 0; k < w; k++) mu[k] = (double)mean[c0 + k], v[k] = (double)var[c0 + k];
    } else {
      for (int64_t k = 0; k < w; k++) acc[k] = 0;
      for (int64_t i = 0; i < n; i++) {
        const T *p = x + i * c + c0;
        PD_SIMD for (int64_t k = 0; k < w; k++) acc[k] += (double)p[k];
      }
      for (int64_t k = 0; k < w; k++) mu[k] = acc[k] / (double)n, acc[k] = 0;
      for (int64_t i = 0; i < n; i++) {
        const T *p = x + i * c + c0;
        PD_SIMD for (int64_t k = 0; k < w; k++) {
          double d = (double)p[k] - mu[k];
          acc[k] += d * d;
        }
      }
      for (int64_t k = 0; k < w; k++) v[k] = acc[k] / (double)n;
    }
    for (int64_t k = 0; k < w; k++) {
      double r = 1.0 / sqrt(v[k] + j->eps);
      a[k] = r * (double)scale[c0 + k];
      b[k] = (double)bias[c0 + k] - mu[k] * a[k];
      TF(bn_fwd_stats)(j, c0 + k, mu[k], v[k], r);
    }
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + i * c + c0;
      T *q = y + i * c + c0;
      PD_SIMD for (int64_t k = 0; k < w; k++) q[k] = (T)((double)p[k] * a[k] + b[k]);
    }
  }
}

/* Channels [begin, end) of a batch_norm forward run. */
NORM_ATTR static void TF(bn_fwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  if (j->s == 1) {
    TF(bn_fwd_nc)(j, begin, end);
    return;
  }
  const T *x = j->x, *scale = j->scale, *bias = j->bias, *mean = j->mean, *var = j->var;
  T *y = j->y;
  int64_t n = j->n, c = j->c, s = j->s;
  double cnt = (double)n * (double)s;
  for (int64_t ch = begin; ch < end; ch++) {
    double mu, v;
    if (j->global) {
      mu = (double)mean[ch];
      v = (double)var[ch];
    } else {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < n; i++) sum += TF(sum_of)(x + (i * c + ch) * s, s);
      mu = sum / cnt;
      for (int64_t i = 0; i < n; i++) sq += TF(sq_dev)(x + (i * c + ch) * s, s, mu);
      v = sq / cnt;
    }
    double r = 1.0 / sqrt(v + j->eps);
    double a = r * (double)scale[ch], b = (double)bias[ch] - mu * a;
    for (int64_t i = 0; i < n; i++) TF(affine)(x + (i * c + ch) * s, y + (i * c + ch) * s, s, a, b);
    TF(bn_fwd_stats)(j, ch, mu, v, r);
  }
}

/* Channels [begin, end) of a batch_norm backward run, s == 1 (NC). */
NORM_ATTR static void TF(bn_bwd_nc)(const norm_job *j, int64_t begin, int64_t end) {
  const T *x = j->x, *scale = j->scale, *mean = j->mean, *rr = j->var, *dy = j->dy;
  T *dx = j->y, *dscale = j->dscale, *dbias = j->dbias;
  int64_t n = j->n, c = j->c;
  double sb[NORM_BLOCK], ss[NORM_BLOCK], mu[NORM_BLOCK], r[NORM_BLOCK], a[NORM_BLOCK];
  for (int64_t c0 = begin; c0 < end; c0 += NORM_BLOCK) {
    int64_t w = end - c0 < NORM_BLOCK ? end - c0 : NORM_BLOCK;
    for (int64_t k = 0; k < w; k++) {
      sb[k] = ss[k] = 0;
      mu[k] = (double)mean[c0 + k];
      r[k] = (double)rr[c0 + k];
      a[k] = (double)scale[c0 + k] * r[k];
    }
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + i * c + c0, *g = dy + i * c + c0;
      PD_SIMD for (int64_t k = 0; k < w; k++) {
        sb[k] += (double)g[k];
        ss[k] += (double)g[k] * ((double)p[k] - mu[k]) * r[k];
      }
    }
    for (int64_t k = 0; k < w; k++) {
      if (dbias) dbias[c0 + k] = (T)sb[k];
      if (dscale) dscale[c0 + k] = (T)ss[k];
      sb[k] /= (double)n, ss[k] /= (double)n;
    }
    if (!dx) continue;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + i * c + c0, *g = dy + i * c + c0;
      T *q = dx + i * c + c0;
      if (j->global) {
        PD_SIMD for (int64_t k = 0; k < w; k++) q[k] = (T)(a[k] * (double)g[k]);
      } else {
        PD_SIMD for (int64_t k = 0; k < w; k++) {
          double xh = ((double)p[k] - mu[k]) * r[k];
          q[k] = (T)(a[k] * ((double)g[k] - (sb[k] + xh * ss[k])));
        }
      }
    }
  }
}

/* Channels [begin, end) of a batch_norm backward run. */
NORM_ATTR static void TF(bn_bwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  if (j->s == 1) {
    TF(bn_bwd_nc)(j, begin, end);
    return;
  }
  const T *x = j->x, *scale = j->scale, *mean = j->mean, *rr = j->var, *dy = j->dy;
  T *dx = j->y, *dscale = j->dscale, *dbias = j->dbias;
  int64_t n = j->n, c = j->c, s = j->s;
  double cnt = (double)n * (double)s;
  for (int64_t ch = begin; ch < end; ch++) {
    double mu = (double)mean[ch], r = (double)rr[ch], sb = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s, *g = dy + (i * c + ch) * s;
      double b1 = 0, s1 = 0;
      PD_SIMD_WITH(reduction(+ : b1, s1)) for (int64_t k = 0; k < s; k++) {
        b1 += (double)g[k];
        s1 += (double)g[k] * ((double)p[k] - mu);
      }
      sb += b1;
      ss += s1 * r;
    }
    if (dbias) dbias[ch] = (T)sb;
    if (dscale) dscale[ch] = (T)ss;
    if (!dx) continue;
    double a = (double)scale[ch] * r, mb = sb / cnt, ms = ss / cnt;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s, *g = dy + (i * c + ch) * s;
      T *q = dx + (i * c + ch) * s;
      if (j->global) {
        PD_SIMD for (int64_t k = 0; k < s; k++) q[k] = (T)(a * (double)g[k]);
      } else {
        PD_SIMD for (int64_t k = 0; k < s; k++) {
          double xh = ((double)p[k] - mu) * r;
          q[k] = (T)(a * ((double)g[k] - (mb + xh * ms)));
        }
      }
    }
  }
}

/* Rows [begin, end) of a layer_norm forward run. */
NORM_ATTR static void TF(ln_fwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *bias = j->bias;
  T *y = j->y, *mean = j->mean_out, *var = j->var_out;
  int64_t cols = j->c;
  for (int64_t i = begin; i < end; i++) {
    const T *p = x + i * cols;
    T *q = y + i * cols;
    double mu = cols ? TF(sum_of)(p, cols) / (double)cols : 0;
    double v = cols ? TF(sq_dev)(p, cols, mu) / (double)cols : 0, r = 1.0 / sqrt(v + j->eps);
    if (scale && bias) {
      PD_SIMD for (int64_t k = 0; k < cols; k++)
        q[k] = (T)(((double)p[k] - mu) * r * (double)scale[k] + (double)bias[k]);
    } else if (scale) {
      PD_SIMD for (int64_t k = 0; k < cols; k++)
        q[k] = (T)(((double)p[k] - mu) * r * (double)scale[k]);
    } else if (bias) {
      PD_SIMD for (int64_t k = 0; k < cols; k++)
        q[k] = (T)(((double)p[k] - mu) * r + (double)bias[k]);
    } else {
      TF(affine)(p, q, cols, r, -mu * r);
    }
    if (mean) mean[i] = (T)mu;
    if (var) var[i] = (T)v;
  }
}

/* Rows [begin, end) of layer_norm's dx. */
NORM_ATTR static void TF(ln_dx_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *mean = j->mean, *var = j->var, *dy = j->dy;
  T *dx = j->y;
  int64_t cols = j->c;
  for (int64_t i = begin; i < end; i++) {
    const T *p = x + i * cols, *g = dy + i * cols;
    T *q = dx + i * cols;
    double mu = (double)mean[i], r = 1.0 / sqrt((double)var[i] + j->eps), sg = 0, sgx = 0;
    if (scale) {
      PD_SIMD_WITH(reduction(+ : sg, sgx)) for (int64_t k = 0; k < cols; k++) {
        double gk = (double)g[k] * (double)scale[k];
        sg += gk;
        sgx += gk * ((double)p[k] - mu);
      }
    } else {
      PD_SIMD_WITH(reduction(+ : sg, sgx)) for (int64_t k = 0; k < cols; k++) {
        sg += (double)g[k];
        sgx += (double)g[k] * ((double)p[k] - mu);
      }
    }
    sg /= (double)cols;
    sgx = sgx * r / (double)cols;
    if (scale) {
      PD_SIMD for (int64_t k = 0; k < cols; k++) {
        double xh = ((double)p[k] - mu) * r;
        q[k] = (T)(r * ((double)g[k] * (double)scale[k] - sg - xh * sgx));
      }
    } else {
      PD_SIMD for (int64_t k = 0; k < cols; k++) {
        double xh = ((double)p[k] - mu) * r;
        q[k] = (T)(r * ((double)g[k] - sg - xh * sgx));
      }
    }
  }
}

/* Columns [begin, end) of layer_norm's dscale and dbias (sums over the rows), NORM_BLOCK
 * columns at a time, row by row (contiguous), one accumulator per column. */
NORM_ATTR static void TF(ln_dparam_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *mean = j->mean, *var = j->var, *dy = j->dy;
  T *dscale = j->dscale, *dbias = j->dbias;
  int64_t rows = j->n, cols = j->c;
  double ss[NORM_BLOCK], sb[NORM_BLOCK];
  for (int64_t c0 = begin; c0 < end; c0 += NORM_BLOCK) {
    int64_t w = end - c0 < NORM_BLOCK ? end - c0 : NORM_BLOCK;
    for (int64_t k = 0; k < w; k++) ss[k] = sb[k] = 0;
    for (int64_t i = 0; i < rows; i++) {
      const T *p = x + i * cols + c0, *g = dy + i * cols + c0;
      double mu = (double)mean[i], r = 1.0 / sqrt((double)var[i] + j->eps);
      PD_SIMD for (int64_t k = 0; k < w; k++) {
        sb[k] += (double)g[k];
        ss[k] += (double)g[k] * ((double)p[k] - mu) * r;
      }
    }
    for (int64_t k = 0; k < w; k++) {
      if (dscale) dscale[c0 + k] = (T)ss[k];
      if (dbias) dbias[c0 + k] = (T)sb[k];
    }
  }
}

#undef T
#undef TN
