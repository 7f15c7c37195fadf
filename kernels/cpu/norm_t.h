/* norm_t.h -- the typed loops of norm.c (batch_norm, layer_norm and their gradients), included
 * once per element type with T and TN defined (see cpu.h). Statistics end in double.
 *
 * Every loop over elements is one the compiler vectorises: sums are OpenMP simd reductions
 * (partial sums per vector lane, added at the end: a fixed order, whatever the thread count),
 * and the choices (scale given or not, global statistics or not) are made outside the loops.
 * batch_norm over [n, c, 1] (the NC layout) has no run of one channel to vectorise along, so it
 * goes row by row over a block of channels with one accumulator per channel (NORM_BLOCK).
 * Elsewhere the arithmetic is T's: sums in T over short runs added into double (sum_of), the
 * statistics of each plane or row from two passes over it while it is in cache (run_stats),
 * joined across planes by Chan's update; y and dx computed in T.
 * NORM_ATTR is empty, or the target attribute of norm.c's AVX2 instance. */

/* Sums over a run of T: partial sums in T over at most NORM_FOLD elements (each vector lane
 * adds NORM_FOLD / lanes of them), added into a double total. In fp32 this is as fast as the
 * loads (a double sum converts every element and adds half as many lanes per instruction) and
 * loses nothing that matters: a lane's partial sum of 32 to 128 terms is within a few units in
 * the last place of float. */
NORM_ATTR static inline double TF(sum_of)(const T *p, int64_t len) {
  double sum = 0;
  for (int64_t k0 = 0; k0 < len; k0 += NORM_FOLD) {
    int64_t e = len - k0 < NORM_FOLD ? len : k0 + NORM_FOLD;
    T u = 0;
    PD_SIMD_WITH(reduction(+ : u)) for (int64_t k = k0; k < e; k++) u += p[k];
    sum += (double)u;
  }
  return sum;
}

/* The mean of p[0..len) and the sum of squared deviations from it (len >= 1): the plain mean
 * first, then the deviations from it rounded to T (d = p - mean is exact or nearly, and small)
 * with their sum, which corrects both. The second pass reads what the first just brought into
 * the cache: a plane of an image or a row of a layer norm. */
NORM_ATTR static inline void TF(run_stats)(const T *p, int64_t len, double *mean, double *m2) {
  T m0 = (T)(TF(sum_of)(p, len) / (double)len);
  double s1 = 0, s2 = 0;
  for (int64_t k0 = 0; k0 < len; k0 += NORM_FOLD) {
    int64_t e = len - k0 < NORM_FOLD ? len : k0 + NORM_FOLD;
    T u = 0, v = 0;
    PD_SIMD_WITH(reduction(+ : u, v)) for (int64_t k = k0; k < e; k++) {
      T d = p[k] - m0;
      u += d;
      v += d * d;
    }
    s1 += (double)u;
    s2 += (double)v;
  }
  *mean = (double)m0 + s1 / (double)len;
  double q = s2 - s1 * s1 / (double)len;
  *m2 = q > 0 ? q : 0;
}

/* Chan et al.'s update: the statistics (count, mean, m2) of a set joined with those of a run
 * of len elements (mean mb, squared deviations m2b). Stable however far apart the means. */
static inline void TF(stats_join)(double *count, double *mean, double *m2, double len, double mb,
                                  double m2b) {
  double total = *count + len, delta = mb - *mean;
  *mean += delta * (len / total);
  *m2 += m2b + delta * delta * (*count * len / total);
  *count = total;
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
  for (int64_t ch = begin; ch < end; ch++) {
    double mu, v;
    if (j->global) {
      mu = (double)mean[ch];
      v = (double)var[ch];
    } else {  /* one plane at a time (two passes over it, the second in cache), then joined */
      double count = 0, m2 = 0;
      mu = 0;
      for (int64_t i = 0; i < n; i++) {
        double pm, pm2;
        TF(run_stats)(x + (i * c + ch) * s, s, &pm, &pm2);
        TF(stats_join)(&count, &mu, &m2, (double)s, pm, pm2);
      }
      v = m2 / count;
    }
    double r = 1.0 / sqrt(v + j->eps);
    T a = (T)(r * (double)scale[ch]), b = bias[ch], m = (T)mu;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s;
      T *q = y + (i * c + ch) * s;
      PD_SIMD for (int64_t k = 0; k < s; k++) q[k] = (p[k] - m) * a + b;
    }
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
    T m = mean[ch];
    double r = (double)rr[ch], sb = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s, *g = dy + (i * c + ch) * s;
      for (int64_t k0 = 0; k0 < s; k0 += NORM_FOLD) {
        int64_t e = s - k0 < NORM_FOLD ? s : k0 + NORM_FOLD;
        T b1 = 0, s1 = 0;
        PD_SIMD_WITH(reduction(+ : b1, s1)) for (int64_t k = k0; k < e; k++) {
          b1 += g[k];
          s1 += g[k] * (p[k] - m);
        }
        sb += (double)b1;
        ss += (double)s1;
      }
    }
    ss *= r;
    if (dbias) dbias[ch] = (T)sb;
    if (dscale) dscale[ch] = (T)ss;
    if (!dx) continue;
    T a = (T)((double)scale[ch] * r), rt = (T)r, mb = (T)(sb / cnt), ms = (T)(ss / cnt);
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s, *g = dy + (i * c + ch) * s;
      T *q = dx + (i * c + ch) * s;
      if (j->global) {
        PD_SIMD for (int64_t k = 0; k < s; k++) q[k] = a * g[k];
      } else {
        PD_SIMD for (int64_t k = 0; k < s; k++) q[k] = a * (g[k] - (mb + (p[k] - m) * rt * ms));
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
    double mu = 0, m2 = 0;
    if (cols) TF(run_stats)(p, cols, &mu, &m2);
    double v = cols ? m2 / (double)cols : 0;
    T m = (T)mu, r = (T)(1.0 / sqrt(v + j->eps));
    if (scale && bias) {
      PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = (p[k] - m) * r * scale[k] + bias[k];
    } else if (scale) {
      PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = (p[k] - m) * r * scale[k];
    } else if (bias) {
      PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = (p[k] - m) * r + bias[k];
    } else {
      PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = (p[k] - m) * r;
    }
    if (mean) mean[i] = (T)mu;
    if (var) var[i] = (T)v;
  }
}

/* Chunks [begin, end) of a layer_norm backward run (chunk b: rows [b * NORM_ROWS, ...)), one
 * pass over x and dy: each row's two sums and its dx (which may be dy: a row is read before it
 * is written), and, when dscale or dbias is wanted, the chunk's column sums of dy * xhat and dy
 * into its own slice of j->part (T: [2, cols] a chunk), which norm.c adds up chunk after chunk.
 * The chunks do not depend on the thread count, nor do the sums. */
NORM_ATTR static void TF(ln_bwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *mean = j->mean, *var = j->var, *dy = j->dy;
  T *dx = j->y;
  int64_t rows = j->n, cols = j->c;
  for (int64_t b = begin; b < end; b++) {
    T *ps = j->part ? (T *)j->part + b * 2 * cols : NULL, *pb = ps ? ps + cols : NULL;
    if (ps)
      for (int64_t k = 0; k < 2 * cols; k++) ps[k] = 0;
    int64_t r1 = (b + 1) * NORM_ROWS < rows ? (b + 1) * NORM_ROWS : rows;
    for (int64_t i = b * NORM_ROWS; i < r1; i++) {
      const T *p = x + i * cols, *g = dy + i * cols;
      T m = mean[i], r = (T)(1.0 / sqrt((double)var[i] + j->eps));
      if (ps) {
        PD_SIMD for (int64_t k = 0; k < cols; k++) {
          pb[k] += g[k];
          ps[k] += g[k] * ((p[k] - m) * r);
        }
      }
      if (!dx) continue;
      double sg = 0, sgx = 0;
      for (int64_t k0 = 0; k0 < cols; k0 += NORM_FOLD) {
        int64_t e = cols - k0 < NORM_FOLD ? cols : k0 + NORM_FOLD;
        T u = 0, w = 0;
        if (scale) {
          PD_SIMD_WITH(reduction(+ : u, w)) for (int64_t k = k0; k < e; k++) {
            T gk = g[k] * scale[k];
            u += gk;
            w += gk * (p[k] - m);
          }
        } else {
          PD_SIMD_WITH(reduction(+ : u, w)) for (int64_t k = k0; k < e; k++) {
            u += g[k];
            w += g[k] * (p[k] - m);
          }
        }
        sg += (double)u;
        sgx += (double)w;
      }
      T mg = (T)(sg / (double)cols), mx = (T)(sgx * (double)r / (double)cols);
      T *q = dx + i * cols;
      if (scale) {
        PD_SIMD for (int64_t k = 0; k < cols; k++)
          q[k] = r * (g[k] * scale[k] - mg - (p[k] - m) * r * mx);
      } else {
        PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = r * (g[k] - mg - (p[k] - m) * r * mx);
      }
    }
  }
}

/* Columns [begin, end) of layer_norm's dscale and dbias: the chunks' sums added in order. */
NORM_ATTR static void TF(ln_dparam_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *part = j->part;
  T *dscale = j->dscale, *dbias = j->dbias;
  int64_t cols = j->c, chunks = (j->n + NORM_ROWS - 1) / NORM_ROWS;
  for (int64_t k = begin; k < end; k++) {
    double ss = 0, sb = 0;
    for (int64_t b = 0; b < chunks; b++) {
      ss += (double)part[b * 2 * cols + k];
      sb += (double)part[b * 2 * cols + cols + k];
    }
    if (dscale) dscale[k] = (T)ss;
    if (dbias) dbias[k] = (T)sb;
  }
}

#undef T
#undef TN
