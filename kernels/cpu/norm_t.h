/* norm_t.h -- the typed loops of norm.c (batch_norm, layer_norm and their gradients), included
 * once per element type with T and TN defined (see cpu.h). Statistics end in double.
 *
 * Every loop over elements is one the compiler vectorises: sums are OpenMP simd reductions
 * (partial sums per vector lane, added at the end: a fixed order, whatever the thread count),
 * and the choices (scale given or not, global statistics or not) are made outside the loops.
 * batch_norm over [n, c, 1] (the NC layout) has no run of one channel to vectorise along, so it
 * goes row by row over a block of channels with one accumulator per channel (NORM_BLOCK); so do
 * the short planes of [n, c, s <= NORM_BLOCK], one accumulator per position of the plane.
 * Elsewhere the arithmetic is T's: sums in T over short runs added into double (sum_of), the
 * statistics of each plane or row from two passes over it while it is in cache (run_stats),
 * joined across planes by Chan's update; y and dx computed in T, y from x - mean with the
 * mean as two T (x - m is exact near the mean; the second keeps what m rounded off), so that
 * data far from 0 keeps its deviations. The backward pass reads the mean the forward saved in
 * T, as Fluid's kernels do.
 * NORM_ATTR is empty, or the target attribute of norm.c's AVX2 instance. */

/* Sums over a run of T: partial sums in T over at most NORM_FOLD elements (each vector lane
 * adds NORM_FOLD / lanes of them), added into a double total. In fp32 this is as fast as the
 * loads (a double sum converts every element and adds half as many lanes per instruction) and
 * loses nothing that matters: a lane's partial sum of 32 to 128 terms is within a few units in
 * the last place of float. */
NORM_ATTR static inline double TF(sum_of)(const T *p, int64_t len) {
#ifdef NORM_SUMS16
  return norm_sum16(p, len);
#endif
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
NORM_ATTR static inline void TF(dev_sums)(const T *p, int64_t len, T m0, double *s1,
                                          double *s2) {
#ifdef NORM_SUMS16
  norm_dev16(p, len, m0, s1, s2);
  return;
#endif
  *s1 = *s2 = 0;
  for (int64_t k0 = 0; k0 < len; k0 += NORM_FOLD) {
    int64_t e = len - k0 < NORM_FOLD ? len : k0 + NORM_FOLD;
    T u = 0, v = 0;
    PD_SIMD_WITH(reduction(+ : u, v)) for (int64_t k = k0; k < e; k++) {
      T d = p[k] - m0;
      u += d;
      v += d * d;
    }
    *s1 += (double)u;
    *s2 += (double)v;
  }
}

NORM_ATTR static inline void TF(run_stats)(const T *p, int64_t len, double *mean, double *m2) {
  T m0 = (T)(TF(sum_of)(p, len) / (double)len);
  double s1, s2;
  TF(dev_sums)(p, len, m0, &s1, &s2);
  *mean = (double)m0 + s1 / (double)len;
  double q = s2 - s1 * s1 / (double)len;
  *m2 = q > 0 ? q : 0;
}

/* Planes of at most this many elements are summed across the rows as columns (one
 * accumulator per position: bn_fwd_cols, bn_bwd_cols), longer ones plane by plane with a
 * reduction each. With the AVX-512 instance's tree sums a reduction costs little: there the
 * planes of [64, 32, 14, 14] go plane by plane (forward + backward on two threads 172 -> 132
 * us, bench_norm); elsewhere planes up to NORM_BLOCK go as columns. */
#ifdef NORM_SUMS16
static const int64_t TF(short_plane) = 64;
#else
static const int64_t TF(short_plane) = NORM_BLOCK;
#endif

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

#ifdef NORM_SUMS16
/* The AVX-512 fp32 instance's channels of short planes (2 <= s <= 64: one to four vectors a
 * plane, the last masked), summed flat: every plane of the channel into one accumulator of 16
 * lanes, folded into a double every NORM_FOLD / 8 planes (bn_fwd_cols kept an accumulator per
 * position of the plane and loaded and stored it at every plane). The statistics are
 * bn_fwd_cols's (the mean, then the deviations from it). */
NORM_ATTR static void TF(bn_fwd_flat)(const norm_job *j, int64_t ch) {
  const float *x = (const float *)j->x + ch * j->s, *scale = j->scale, *bias = j->bias;
  float *y = (float *)j->y + ch * j->s;
  const int64_t n = j->n, s = j->s, stride = j->c * j->s, nv = (s + 15) / 16;
  __mmask16 mk[4];
  for (int v = 0; v < 4; v++) mk[v] = v < nv ? norm_tail(s - 16 * v) : 0;
  double mu, var;
  if (j->global) {
    mu = (double)((const float *)j->mean)[ch];
    var = (double)((const float *)j->var)[ch];
  } else {
    double cnt = (double)n * (double)s, sum = 0, s1 = 0, s2 = 0;
    for (int64_t i0 = 0; i0 < n; i0 += NORM_FOLD / 8) {
      int64_t i1 = n - i0 < NORM_FOLD / 8 ? n : i0 + NORM_FOLD / 8;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t i = i0; i < i1; i++)
        for (int64_t v = 0; v < nv; v++)
          acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mk[v], x + i * stride + 16 * v));
      sum += (double)_mm512_reduce_add_ps(acc);
    }
    const float m0 = (float)(sum / cnt);
    const __m512 vm = _mm512_set1_ps(m0);
    for (int64_t i0 = 0; i0 < n; i0 += NORM_FOLD / 8) {
      int64_t i1 = n - i0 < NORM_FOLD / 8 ? n : i0 + NORM_FOLD / 8;
      __m512 u = _mm512_setzero_ps(), q = _mm512_setzero_ps();
      for (int64_t i = i0; i < i1; i++)
        for (int64_t v = 0; v < nv; v++) {
          __m512 d = _mm512_maskz_sub_ps(mk[v], _mm512_maskz_loadu_ps(mk[v], x + i * stride + 16 * v), vm);
          u = _mm512_add_ps(u, d);
          q = _mm512_fmadd_ps(d, d, q);
        }
      s1 += (double)_mm512_reduce_add_ps(u);
      s2 += (double)_mm512_reduce_add_ps(q);
    }
    double d = s1 / cnt, qv = s2 / cnt - d * d;
    mu = (double)m0 + d;
    var = qv > 0 ? qv : 0;
  }
  double r = 1.0 / sqrt(var + j->eps);
  float m = (float)mu, ml = (float)(mu - (double)m);
  __m512 va = _mm512_set1_ps((float)(r * (double)scale[ch])), vb = _mm512_set1_ps(bias[ch]);
  __m512 vm = _mm512_set1_ps(m), vml = _mm512_set1_ps(ml);
  TF(bn_fwd_stats)(j, ch, mu, var, r);
  for (int64_t i = 0; i < n; i++)
    for (int64_t v = 0; v < nv; v++) {
      __m512 xv = _mm512_maskz_loadu_ps(mk[v], x + i * stride + 16 * v);
      __m512 yv = _mm512_fmadd_ps(_mm512_sub_ps(_mm512_sub_ps(xv, vm), vml), va, vb);
      _mm512_mask_storeu_ps(y + i * stride + 16 * v, mk[v], yv);
    }
}

/* The backward of such a channel: bn_bwd_cols's sums, flat, then dx. */
NORM_ATTR static void TF(bn_bwd_flat)(const norm_job *j, int64_t ch) {
  const float *x = (const float *)j->x + ch * j->s, *dy = (const float *)j->dy + ch * j->s;
  float *dx = j->y ? (float *)j->y + ch * j->s : NULL;
  float *dscale = j->dscale, *dbias = j->dbias;
  const int64_t n = j->n, s = j->s, stride = j->c * j->s, nv = (s + 15) / 16;
  const float m = ((const float *)j->mean)[ch], rf = ((const float *)j->var)[ch];
  __mmask16 mk[4];
  for (int v = 0; v < 4; v++) mk[v] = v < nv ? norm_tail(s - 16 * v) : 0;
  const __m512 vm = _mm512_set1_ps(m);
  double sb = 0, ss = 0, cnt = (double)n * (double)s;
  for (int64_t i0 = 0; i0 < n; i0 += NORM_FOLD / 8) {
    int64_t i1 = n - i0 < NORM_FOLD / 8 ? n : i0 + NORM_FOLD / 8;
    __m512 u = _mm512_setzero_ps(), w = _mm512_setzero_ps();
    for (int64_t i = i0; i < i1; i++)
      for (int64_t v = 0; v < nv; v++) {
        __m512 g = _mm512_maskz_loadu_ps(mk[v], dy + i * stride + 16 * v);
        __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(mk[v], x + i * stride + 16 * v), vm);
        u = _mm512_add_ps(u, g);
        w = _mm512_fmadd_ps(g, d, w);
      }
    sb += (double)_mm512_reduce_add_ps(u);
    ss += (double)_mm512_reduce_add_ps(w);
  }
  ss *= (double)rf;
  if (dbias) dbias[ch] = (float)sb;
  if (dscale) dscale[ch] = (float)ss;
  if (!dx) return;
  __m512 va = _mm512_set1_ps((float)((double)((const float *)j->scale)[ch] * (double)rf));
  __m512 vmb = _mm512_set1_ps((float)(sb / cnt)), vms = _mm512_set1_ps((float)(ss / cnt));
  __m512 vr = _mm512_set1_ps(rf);
  for (int64_t i = 0; i < n; i++)
    for (int64_t v = 0; v < nv; v++) {
      __m512 g = _mm512_maskz_loadu_ps(mk[v], dy + i * stride + 16 * v), q;
      if (j->global) {
        q = _mm512_mul_ps(va, g);
      } else {
        __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(mk[v], x + i * stride + 16 * v), vm);
        q = _mm512_mul_ps(va, _mm512_sub_ps(g, _mm512_fmadd_ps(_mm512_mul_ps(d, vr), vms, vmb)));
      }
      _mm512_mask_storeu_ps(dx + i * stride + 16 * v, mk[v], q);
    }
}
#endif

/* Column sums of a block of a batch_norm input: rows i in [0, n) at `stride`, columns [0, w)
 * from x (w <= NORM_BLOCK), in T over NORM_FOLD / 8 rows at a time, added into double. Without
 * shift: s1[k] = sum of the column; with it: s1[k] and s2[k] = the sums of (x - shift[k]) and
 * of its square. */
NORM_ATTR static void TF(col_sums)(const T *x, int64_t n, int64_t stride, int64_t w,
                                   const T *shift, double *s1, double *s2) {
  T u[NORM_BLOCK], v[NORM_BLOCK];
  for (int64_t k = 0; k < w; k++) s1[k] = s2[k] = 0;
  for (int64_t i0 = 0; i0 < n; i0 += NORM_FOLD / 8) {
    int64_t i1 = n - i0 < NORM_FOLD / 8 ? n : i0 + NORM_FOLD / 8;
    for (int64_t k = 0; k < w; k++) u[k] = v[k] = 0;
    for (int64_t i = i0; i < i1; i++) {
      const T *p = x + i * stride;
      if (shift) {
        PD_SIMD for (int64_t k = 0; k < w; k++) {
          T d = p[k] - shift[k];
          u[k] += d;
          v[k] += d * d;
        }
      } else {
        PD_SIMD for (int64_t k = 0; k < w; k++) u[k] += p[k];
      }
    }
    for (int64_t k = 0; k < w; k++) s1[k] += (double)u[k], s2[k] += (double)v[k];
  }
}

/* A batch_norm forward run over a block laid out as columns (col_sums): with one_channel false
 * each column is a channel (the NC layout: channels ch0 + k); with it true the w columns are
 * the positions of one channel's planes (s = w, short planes: summed across the rows without
 * a reduction per plane), channel ch0. */
NORM_ATTR static void TF(bn_fwd_cols)(const norm_job *j, int64_t off, int64_t stride, int64_t w,
                                      int64_t ch0, bool one_channel) {
  const T *x = (const T *)j->x + off, *scale = j->scale, *bias = j->bias, *mean = j->mean,
          *var = j->var;
  T *y = (T *)j->y + off;
  int64_t n = j->n, nch = one_channel ? 1 : w;
  double mu[NORM_BLOCK], v[NORM_BLOCK], s1[NORM_BLOCK], s2[NORM_BLOCK];
  T m[NORM_BLOCK] = {0}, a[NORM_BLOCK], b[NORM_BLOCK];
  if (j->global) {
    for (int64_t k = 0; k < nch; k++) mu[k] = (double)mean[ch0 + k], v[k] = (double)var[ch0 + k];
  } else {
    double cnt = (double)n * (one_channel ? (double)w : 1.0);
    TF(col_sums)(x, n, stride, w, NULL, s1, s2);
    if (one_channel) {
      double t = 0;
      for (int64_t k = 0; k < w; k++) t += s1[k];
      mu[0] = t / cnt;
      for (int64_t k = 0; k < w; k++) m[k] = (T)mu[0];
    } else {
      for (int64_t k = 0; k < w; k++) mu[k] = s1[k] / cnt, m[k] = (T)mu[k];
    }
    TF(col_sums)(x, n, stride, w, m, s1, s2);
    if (one_channel) {
      for (int64_t k = 1; k < w; k++) s1[0] += s1[k], s2[0] += s2[k];
    }
    for (int64_t k = 0; k < nch; k++) {
      double d = s1[k] / cnt, q = s2[k] / cnt - d * d;
      mu[k] = (double)m[k] + d;
      v[k] = q > 0 ? q : 0;
    }
  }
  T ml[NORM_BLOCK];  /* the mean is m + ml: x - m is exact near the mean, ml keeps the rest */
  for (int64_t k = 0; k < nch; k++) {
    double r = 1.0 / sqrt(v[k] + j->eps);
    a[k] = (T)(r * (double)scale[ch0 + k]);
    b[k] = bias[ch0 + k];
    m[k] = (T)mu[k];
    ml[k] = (T)(mu[k] - (double)m[k]);
    TF(bn_fwd_stats)(j, ch0 + k, mu[k], v[k], r);
  }
  if (one_channel)
    for (int64_t k = 1; k < w; k++) a[k] = a[0], b[k] = b[0], m[k] = m[0], ml[k] = ml[0];
  for (int64_t i = 0; i < n; i++) {
    const T *p = x + i * stride;
    T *q = y + i * stride;
    PD_SIMD for (int64_t k = 0; k < w; k++) q[k] = ((p[k] - m[k]) - ml[k]) * a[k] + b[k];
  }
}

/* Channels [begin, end) of a batch_norm forward run. */
NORM_ATTR static void TF(bn_fwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  if (j->s == 1) {
    for (int64_t c0 = begin; c0 < end; c0 += NORM_BLOCK)
      TF(bn_fwd_cols)(j, c0, j->c, end - c0 < NORM_BLOCK ? end - c0 : NORM_BLOCK, c0, false);
    return;
  }
#ifdef NORM_SUMS16
  if (j->s <= 64) {
    for (int64_t ch = begin; ch < end; ch++) TF(bn_fwd_flat)(j, ch);
    return;
  }
#endif
  if (j->s <= TF(short_plane)) {
    for (int64_t ch = begin; ch < end; ch++)
      TF(bn_fwd_cols)(j, ch * j->s, j->c * j->s, j->s, ch, true);
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
    T a = (T)(r * (double)scale[ch]), b = bias[ch], m = (T)mu, ml = (T)(mu - (double)m);
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s;
      T *q = y + (i * c + ch) * s;
      PD_SIMD for (int64_t k = 0; k < s; k++) q[k] = ((p[k] - m) - ml) * a + b;
    }
    TF(bn_fwd_stats)(j, ch, mu, v, r);
  }
}

/* A batch_norm backward run over a block laid out as columns, as bn_fwd_cols. */
NORM_ATTR static void TF(bn_bwd_cols)(const norm_job *j, int64_t off, int64_t stride, int64_t w,
                                      int64_t ch0, bool one_channel) {
  const T *x = (const T *)j->x + off, *dy = (const T *)j->dy + off, *scale = j->scale,
          *mean = j->mean, *rr = j->var;
  T *dx = j->y ? (T *)j->y + off : NULL, *dscale = j->dscale, *dbias = j->dbias;
  int64_t n = j->n, nch = one_channel ? 1 : w;
  double sb[NORM_BLOCK], ss[NORM_BLOCK];
  T m[NORM_BLOCK], r[NORM_BLOCK], a[NORM_BLOCK], mb[NORM_BLOCK], ms[NORM_BLOCK];
  T u[NORM_BLOCK], v[NORM_BLOCK];
  for (int64_t k = 0; k < w; k++) {
    int64_t ch = ch0 + (one_channel ? 0 : k);
    m[k] = mean[ch];
    r[k] = rr[ch];
    sb[k] = ss[k] = 0;
  }
  for (int64_t i0 = 0; i0 < n; i0 += NORM_FOLD / 8) {
    int64_t i1 = n - i0 < NORM_FOLD / 8 ? n : i0 + NORM_FOLD / 8;
    for (int64_t k = 0; k < w; k++) u[k] = v[k] = 0;
    for (int64_t i = i0; i < i1; i++) {
      const T *p = x + i * stride, *g = dy + i * stride;
      PD_SIMD for (int64_t k = 0; k < w; k++) {
        u[k] += g[k];
        v[k] += g[k] * (p[k] - m[k]);
      }
    }
    for (int64_t k = 0; k < w; k++) sb[k] += (double)u[k], ss[k] += (double)v[k];
  }
  if (one_channel)
    for (int64_t k = 1; k < w; k++) sb[0] += sb[k], ss[0] += ss[k];
  double cnt = (double)n * (one_channel ? (double)w : 1.0);
  for (int64_t k = 0; k < nch; k++) {
    ss[k] *= (double)rr[ch0 + k];
    if (dbias) dbias[ch0 + k] = (T)sb[k];
    if (dscale) dscale[ch0 + k] = (T)ss[k];
    a[k] = (T)((double)scale[ch0 + k] * (double)rr[ch0 + k]);
    mb[k] = (T)(sb[k] / cnt);
    ms[k] = (T)(ss[k] / cnt);
  }
  if (!dx) return;
  if (one_channel)
    for (int64_t k = 1; k < w; k++) a[k] = a[0], mb[k] = mb[0], ms[k] = ms[0];
  for (int64_t i = 0; i < n; i++) {
    const T *p = x + i * stride, *g = dy + i * stride;
    T *q = dx + i * stride;
    if (j->global) {
      PD_SIMD for (int64_t k = 0; k < w; k++) q[k] = a[k] * g[k];
    } else {
      PD_SIMD for (int64_t k = 0; k < w; k++)
        q[k] = a[k] * (g[k] - (mb[k] + (p[k] - m[k]) * r[k] * ms[k]));
    }
  }
}

/* Channels [begin, end) of a batch_norm backward run. */
NORM_ATTR static void TF(bn_bwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  if (j->s == 1) {
    for (int64_t c0 = begin; c0 < end; c0 += NORM_BLOCK)
      TF(bn_bwd_cols)(j, c0, j->c, end - c0 < NORM_BLOCK ? end - c0 : NORM_BLOCK, c0, false);
    return;
  }
#ifdef NORM_SUMS16
  if (j->s <= 64) {
    for (int64_t ch = begin; ch < end; ch++) TF(bn_bwd_flat)(j, ch);
    return;
  }
#endif
  if (j->s <= TF(short_plane)) {
    for (int64_t ch = begin; ch < end; ch++)
      TF(bn_bwd_cols)(j, ch * j->s, j->c * j->s, j->s, ch, true);
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

/* Rows [begin, end) of a layer_norm forward run, LN_BLOCK rows at a time, each phase over all
 * the block's rows before the next: a row's statistics are a chain of dependent steps (its sum,
 * the mean, the deviations' sums, a division, a square root) that for a row of 128 took longer
 * than the row's loads; the rows of a block run their chains side by side. The arithmetic of
 * each row is run_stats's. */
NORM_ATTR static void TF(ln_fwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *bias = j->bias;
  T *y = j->y, *mean = j->mean_out, *var = j->var_out;
  int64_t cols = j->c;
  for (int64_t i0 = begin; i0 < end; i0 += LN_BLOCK) {
    int64_t nb = end - i0 < LN_BLOCK ? end - i0 : LN_BLOCK;
    double mu[LN_BLOCK] = {0}, m2[LN_BLOCK] = {0}, s1[LN_BLOCK] = {0}, s2[LN_BLOCK] = {0};
    T m0[LN_BLOCK], m[LN_BLOCK], ml[LN_BLOCK], r[LN_BLOCK];
    if (cols) {
      for (int64_t b = 0; b < nb; b++)
        m0[b] = (T)(TF(sum_of)(x + (i0 + b) * cols, cols) / (double)cols);
      for (int64_t b = 0; b < nb; b++)
        TF(dev_sums)(x + (i0 + b) * cols, cols, m0[b], &s1[b], &s2[b]);
      for (int64_t b = 0; b < nb; b++) {
        mu[b] = (double)m0[b] + s1[b] / (double)cols;
        double q = s2[b] - s1[b] * s1[b] / (double)cols;
        m2[b] = q > 0 ? q : 0;
      }
    }
    for (int64_t b = 0; b < nb; b++) {
      double v = cols ? m2[b] / (double)cols : 0;
      m[b] = (T)mu[b];
      ml[b] = (T)(mu[b] - (double)m[b]);
      r[b] = (T)(1.0 / sqrt(v + j->eps));
      if (mean) mean[i0 + b] = (T)mu[b];
      if (var) var[i0 + b] = (T)v;
    }
    for (int64_t b = 0; b < nb; b++) {
      const T *p = x + (i0 + b) * cols;
      T *q = y + (i0 + b) * cols;
      T mb = m[b], mlb = ml[b], rb = r[b];
      if (scale && bias) {
        PD_SIMD for (int64_t k = 0; k < cols; k++)
          q[k] = ((p[k] - mb) - mlb) * rb * scale[k] + bias[k];
      } else if (scale) {
        PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = ((p[k] - mb) - mlb) * rb * scale[k];
      } else if (bias) {
        PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = ((p[k] - mb) - mlb) * rb + bias[k];
      } else {
        PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = ((p[k] - mb) - mlb) * rb;
      }
    }
  }
}

/* Chunks [begin, end) of a layer_norm backward run (chunk b: rows [b * NORM_ROWS, ...)): each
 * row's two sums, then its dx (which may be dy: a row is read before it is written) in the
 * same pass that, when dscale or dbias is wanted, adds the row into the chunk's column sums of
 * dy * xhat and dy (its own slice of j->part, T: [2, cols] a chunk, which norm.c adds up chunk
 * after chunk). As the forward, each phase runs over the chunk's rows before the next. The
 * chunks do not depend on the thread count, nor do the sums. */
NORM_ATTR static void TF(ln_bwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *mean = j->mean, *var = j->var, *dy = j->dy;
  T *dx = j->y;
  int64_t rows = j->n, cols = j->c;
  for (int64_t b = begin; b < end; b++) {
    T *ps = j->part ? (T *)j->part + b * 2 * cols : NULL, *pb = ps ? ps + cols : NULL;
    if (ps)
      for (int64_t k = 0; k < 2 * cols; k++) ps[k] = 0;
    int64_t i0 = b * NORM_ROWS, nr = (b + 1) * NORM_ROWS < rows ? NORM_ROWS : rows - i0;
    T r[NORM_ROWS], mg[NORM_ROWS], mx[NORM_ROWS];
    double sg[NORM_ROWS], sgx[NORM_ROWS];
    for (int64_t i = 0; i < nr; i++) r[i] = (T)(1.0 / sqrt((double)var[i0 + i] + j->eps));
    if (dx) {
      for (int64_t i = 0; i < nr; i++) {
        const T *p = x + (i0 + i) * cols, *g = dy + (i0 + i) * cols;
        T m = mean[i0 + i];
        sg[i] = sgx[i] = 0;
#ifdef NORM_SUMS16
        norm_grad16(g, scale, p, m, cols, &sg[i], &sgx[i]);
        continue;
#endif
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
          sg[i] += (double)u;
          sgx[i] += (double)w;
        }
      }
      for (int64_t i = 0; i < nr; i++) {
        mg[i] = (T)(sg[i] / (double)cols);
        mx[i] = (T)(sgx[i] * (double)r[i] / (double)cols);
      }
    }
    for (int64_t i = 0; i < nr; i++) {
      const T *p = x + (i0 + i) * cols, *g = dy + (i0 + i) * cols;
      T m = mean[i0 + i], ri = r[i];
      T *q = dx ? dx + (i0 + i) * cols : NULL, mgi = dx ? mg[i] : 0, mxi = dx ? mx[i] : 0;
      if (ps && q && scale) { /* one pass: each element read before its dx is written */
        PD_SIMD for (int64_t k = 0; k < cols; k++) {
          T gk = g[k], d = p[k] - m;
          pb[k] += gk;
          ps[k] += gk * (d * ri);
          q[k] = ri * (gk * scale[k] - mgi - d * ri * mxi);
        }
        continue;
      }
      if (ps) {
        PD_SIMD for (int64_t k = 0; k < cols; k++) {
          pb[k] += g[k];
          ps[k] += g[k] * ((p[k] - m) * ri);
        }
      }
      if (!q) continue;
      if (scale) {
        PD_SIMD for (int64_t k = 0; k < cols; k++)
          q[k] = ri * (g[k] * scale[k] - mgi - (p[k] - m) * ri * mxi);
      } else {
        PD_SIMD for (int64_t k = 0; k < cols; k++) q[k] = ri * (g[k] - mgi - (p[k] - m) * ri * mxi);
      }
    }
    /* A row of one element normalises to 0 whatever x is: its dx is 0 exactly (g - mean(g)
     * above can leave the rounding of g * scale, where the product fuses into a subtraction). */
    if (dx && cols == 1)
      for (int64_t i = 0; i < nr; i++) dx[i0 + i] = 0;
  }
}

/* Columns [begin, end) of layer_norm's dscale and dbias: the chunks' sums added in order, in
 * double, NORM_BLOCK columns at a time (a vector of columns a chunk, not one column down the
 * chunks). */
NORM_ATTR static void TF(ln_dparam_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *part = j->part;
  T *dscale = j->dscale, *dbias = j->dbias;
  int64_t cols = j->c, chunks = (j->n + NORM_ROWS - 1) / NORM_ROWS;
  double ss[NORM_BLOCK], sb[NORM_BLOCK];
  for (int64_t k0 = begin; k0 < end; k0 += NORM_BLOCK) {
    int64_t w = end - k0 < NORM_BLOCK ? end - k0 : NORM_BLOCK;
    for (int64_t k = 0; k < w; k++) ss[k] = sb[k] = 0;
    for (int64_t b = 0; b < chunks; b++) {
      const T *cs = part + b * 2 * cols + k0, *cb = cs + cols;
      PD_SIMD for (int64_t k = 0; k < w; k++) {
        ss[k] += (double)cs[k];
        sb[k] += (double)cb[k];
      }
    }
    for (int64_t k = 0; k < w; k++) {
      if (dscale) dscale[k0 + k] = (T)ss[k];
      if (dbias) dbias[k0 + k] = (T)sb[k];
    }
  }
}

#undef T
#undef TN
