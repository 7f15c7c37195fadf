/* norm_t.h -- the typed loops of norm.c (batch_norm, layer_norm and their gradients), included
 * once per element type with T and TN defined (see cpu.h). Statistics accumulate in double. */

/* Channels [begin, end) of a batch_norm forward run. */
static void TF(bn_fwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *bias = j->bias, *mean = j->mean, *var = j->var;
  T *y = j->y, *mo = j->mean_out, *vo = j->var_out, *sm = j->saved_mean, *sr = j->saved_r;
  int64_t n = j->n, c = j->c, s = j->s;
  double cnt = (double)n * (double)s;
  for (int64_t ch = begin; ch < end; ch++) {
    double mu, v;
    if (j->global) {
      mu = (double)mean[ch];
      v = (double)var[ch];
    } else {
      double sum = 0;
      for (int64_t i = 0; i < n; i++) {
        const T *p = x + (i * c + ch) * s;
        for (int64_t k = 0; k < s; k++) sum += (double)p[k];
      }
      mu = sum / cnt;
      double sq = 0;
      for (int64_t i = 0; i < n; i++) {
        const T *p = x + (i * c + ch) * s;
        for (int64_t k = 0; k < s; k++) {
          double d = (double)p[k] - mu;
          sq += d * d;
        }
      }
      v = sq / cnt;
    }
    double r = 1.0 / sqrt(v + j->eps);
    double a = r * (double)scale[ch], b = (double)bias[ch] - mu * a;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s;
      T *q = y + (i * c + ch) * s;
      for (int64_t k = 0; k < s; k++) q[k] = (T)((double)p[k] * a + b);
    }
    if (sm) sm[ch] = (T)mu;
    if (sr) sr[ch] = (T)r;
    if (!j->global) {
      double m = j->momentum;
      if (mo) mo[ch] = (T)(m * (double)mean[ch] + (1 - m) * mu);
      if (vo) vo[ch] = (T)(m * (double)var[ch] + (1 - m) * v);
    }
  }
}

/* Channels [begin, end) of a batch_norm backward run. */
static void TF(bn_bwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *mean = j->mean, *rr = j->var, *dy = j->dy;
  T *dx = j->y, *dscale = j->dscale, *dbias = j->dbias;
  int64_t n = j->n, c = j->c, s = j->s;
  double cnt = (double)n * (double)s;
  for (int64_t ch = begin; ch < end; ch++) {
    double mu = (double)mean[ch], r = (double)rr[ch], sb = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s, *g = dy + (i * c + ch) * s;
      for (int64_t k = 0; k < s; k++) {
        sb += (double)g[k];
        ss += (double)g[k] * ((double)p[k] - mu) * r;
      }
    }
    if (dbias) dbias[ch] = (T)sb;
    if (dscale) dscale[ch] = (T)ss;
    if (!dx) continue;
    double a = (double)scale[ch] * r;
    for (int64_t i = 0; i < n; i++) {
      const T *p = x + (i * c + ch) * s, *g = dy + (i * c + ch) * s;
      T *q = dx + (i * c + ch) * s;
      for (int64_t k = 0; k < s; k++) {
        double xh = ((double)p[k] - mu) * r;
        q[k] = (T)(j->global ? a * (double)g[k] : a * ((double)g[k] - (sb + xh * ss) / cnt));
      }
    }
  }
}

/* Rows [begin, end) of a layer_norm forward run. */
static void TF(ln_fwd_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *bias = j->bias;
  T *y = j->y, *mean = j->mean_out, *var = j->var_out;
  int64_t cols = j->c;
  for (int64_t i = begin; i < end; i++) {
    const T *p = x + i * cols;
    T *q = y + i * cols;
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < cols; k++) sum += (double)p[k];
    double mu = cols ? sum / (double)cols : 0;
    for (int64_t k = 0; k < cols; k++) {
      double d = (double)p[k] - mu;
      sq += d * d;
    }
    double v = cols ? sq / (double)cols : 0, r = 1.0 / sqrt(v + j->eps);
    for (int64_t k = 0; k < cols; k++) {
      double o = ((double)p[k] - mu) * r;
      if (scale) o *= (double)scale[k];
      if (bias) o += (double)bias[k];
      q[k] = (T)o;
    }
    if (mean) mean[i] = (T)mu;
    if (var) var[i] = (T)v;
  }
}

/* Rows [begin, end) of layer_norm's dx. */
static void TF(ln_dx_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *scale = j->scale, *mean = j->mean, *var = j->var, *dy = j->dy;
  T *dx = j->y;
  int64_t cols = j->c;
  for (int64_t i = begin; i < end; i++) {
    const T *p = x + i * cols, *g = dy + i * cols;
    T *q = dx + i * cols;
    double mu = (double)mean[i], r = 1.0 / sqrt((double)var[i] + j->eps), sg = 0, sgx = 0;
    for (int64_t k = 0; k < cols; k++) {
      double gk = (double)g[k] * (scale ? (double)scale[k] : 1.0);
      sg += gk;
      sgx += gk * ((double)p[k] - mu) * r;
    }
    sg /= (double)cols;
    sgx /= (double)cols;
    for (int64_t k = 0; k < cols; k++) {
      double gk = (double)g[k] * (scale ? (double)scale[k] : 1.0);
      double xh = ((double)p[k] - mu) * r;
      q[k] = (T)(r * (gk - sg - xh * sgx));
    }
  }
}

/* Columns [begin, end) of layer_norm's dscale and dbias (sums over the rows). */
static void TF(ln_dparam_range)(void *ctx, int64_t begin, int64_t end) {
  const norm_job *j = ctx;
  const T *x = j->x, *mean = j->mean, *var = j->var, *dy = j->dy;
  T *dscale = j->dscale, *dbias = j->dbias;
  int64_t rows = j->n, cols = j->c;
  for (int64_t k = begin; k < end; k++) {
    double ss = 0, sb = 0;
    for (int64_t i = 0; i < rows; i++) {
      double g = (double)dy[i * cols + k];
      double r = 1.0 / sqrt((double)var[i] + j->eps);
      sb += g;
      ss += g * ((double)x[i * cols + k] - (double)mean[i]) * r;
    }
    if (dscale) dscale[k] = (T)ss;
    if (dbias) dbias[k] = (T)sb;
  }
}

#undef T
#undef TN
