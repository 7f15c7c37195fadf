/* softmax_t.h -- template of softmax.c for one float type T (suffix TN): softmax, log-softmax,
 * cross entropy and the fused softmax-with-cross-entropy, forward and backward. Each range
 * function handles slices [b, e) of a softmax_job (see softmax.c). The fp32 instance takes the
 * max and e^x of contiguous softmax slices from fastmath.h. */

/* The largest x[j * st], j < n, as a scalar loop from x[0] finds it (NaN past x[0] skipped). */
static T TF(slice_max)(const T *x, int64_t n, int64_t st) {
#if TF(PD_KCPU_FASTMATH)
  if (st == 1) return pd_kcpu_max_f32(x, n);
#endif
  T mx = x[0];
  for (int64_t j = 1; j < n; j++)
    if (x[j * st] > mx) mx = x[j * st];
  return mx;
}

/* out[j * st] = exp(x[j * st] - mx) for j < n, mx their max (so the exponents are <= 0);
 * returns their sum, in double. */
static double TF(exp_shifted)(const T *x, T *out, int64_t n, int64_t st, T mx) {
#if TF(PD_KCPU_FASTMATH)
  if (st == 1) return pd_kcpu_fastmath_f32(PD_KCPU_FM_EXP_NONPOS, x, mx, out, n);
#endif
  double sum = 0;
  for (int64_t j = 0; j < n; j++) {
    T v = exp(x[j * st] - mx);
    out[j * st] = v;
    sum += v;
  }
  return sum;
}

/* One slice of n elements at stride st: out = softmax(x) or log_softmax(x), max-shifted (out
 * may be x). Returns the slice's log-sum-exp. */
static T TF(softmax_slice)(const T *x, T *out, int64_t n, int64_t st, bool log_out) {
  T mx = TF(slice_max)(x, n, st);
  if (log_out) {
    double sum = 0;
    for (int64_t j = 0; j < n; j++) sum += exp(x[j * st] - mx);
    T lse = mx + (T)log(sum);
    for (int64_t j = 0; j < n; j++) out[j * st] = x[j * st] - lse;
    return lse;
  }
  double sum = TF(exp_shifted)(x, out, n, st, mx);
  T inv = (T)(1.0 / sum);
#if TF(PD_KCPU_FASTMATH)
  if (st == 1) {
    pd_kcpu_scale_f32(out, inv, n);
    return mx + (T)log(sum);
  }
#endif
  for (int64_t j = 0; j < n; j++) out[j * st] *= inv;
  return mx + (T)log(sum);
}

/* Slices are numbered i * post + k for x viewed as [pre, n, post]. */
static void TF(softmax_range)(void *vjob, int64_t b, int64_t e) {
  const softmax_job *job = vjob;
  for (int64_t s = b; s < e; s++) {
    int64_t off = s / job->post * job->n * job->post + s % job->post;
    TF(softmax_slice)((const T *)job->x + off, (T *)job->out + off, job->n, job->post,
                      job->log);
  }
}

static void TF(softmax_grad_range)(void *vjob, int64_t b, int64_t e) {
  const softmax_job *job = vjob;
  int64_t n = job->n, st = job->post;
  for (int64_t s = b; s < e; s++) {
    int64_t off = s / st * n * st + s % st;
    const T *y = (const T *)job->x + off, *d = (const T *)job->dout + off;
    T *dx = (T *)job->out + off;
    double dot = 0;
    if (job->log) {  /* dx = dout - exp(y) * sum(dout) */
      for (int64_t j = 0; j < n; j++) dot += d[j * st];
      for (int64_t j = 0; j < n; j++) dx[j * st] = d[j * st] - exp(y[j * st]) * (T)dot;
    } else {  /* dx = y * (dout - sum(dout * y)) */
      for (int64_t j = 0; j < n; j++) dot += (double)d[j * st] * y[j * st];
      for (int64_t j = 0; j < n; j++) dx[j * st] = y[j * st] * (d[j * st] - (T)dot);
    }
  }
}

/* log with Fluid's TolerableValue: -inf becomes -1e20, so 0 * log(0) is 0 and losses stay
 * finite. */
static T TF(safe_log)(T p) {
  T l = log(p);
  return isinf(l) ? (l < 0 ? (T)-1e20 : (T)1e20) : l;
}

/* Cross entropy of probabilities, rows [b, e). */
static void TF(xent_range)(void *vjob, int64_t b, int64_t e) {
  const softmax_job *job = vjob;
  int64_t c = job->n;
  for (int64_t r = b; r < e; r++) {
    const T *p = (const T *)job->x + r * c;
    T *loss = (T *)job->loss + r;
    if (job->soft) {
      const T *lab = (const T *)job->label + r * c;
      double s = 0;
      for (int64_t j = 0; j < c; j++) s += (double)lab[j] * TF(safe_log)(p[j]);
      *loss = (T)-s;
    } else {
      int64_t l = ((const int64_t *)job->label)[r];
      *loss = l == job->ignore ? (T)0 : -TF(safe_log)(p[l]);
    }
  }
}

static void TF(xent_grad_range)(void *vjob, int64_t b, int64_t e) {
  const softmax_job *job = vjob;
  int64_t c = job->n;
  for (int64_t r = b; r < e; r++) {
    const T *p = (const T *)job->x + r * c;
    T *dp = (T *)job->out + r * c, d = ((const T *)job->dout)[r];
    if (job->soft) {
      const T *lab = (const T *)job->label + r * c;
      for (int64_t j = 0; j < c; j++) dp[j] = -d * lab[j] / p[j];
    } else {
      int64_t l = ((const int64_t *)job->label)[r];
      for (int64_t j = 0; j < c; j++) dp[j] = 0;
      if (l != job->ignore) dp[l] = -d / p[l];
    }
  }
}

/* Fused: softmax into job->out, loss = logsumexp - logit (hard) or -sum(label * log_softmax). */
static void TF(softmax_xent_range)(void *vjob, int64_t b, int64_t e) {
  const softmax_job *job = vjob;
  int64_t c = job->n;
  for (int64_t r = b; r < e; r++) {
    const T *x = (const T *)job->x + r * c;
    T *sm = (T *)job->out + r * c, *loss = (T *)job->loss + r;
    T lse = TF(softmax_slice)(x, sm, c, 1, false);
    if (job->soft) {
      const T *lab = (const T *)job->label + r * c;
      double s = 0;
      for (int64_t j = 0; j < c; j++) s += (double)lab[j] * (lse - x[j]);
      *loss = (T)s;
    } else {
      int64_t l = ((const int64_t *)job->label)[r];
      *loss = l == job->ignore ? (T)0 : lse - x[l];
    }
  }
}

/* dlogits = dloss * (softmax * sum(label) - label): the exact gradient for any soft label (the
 * sum is 1 for a distribution), and softmax - onehot for a hard one. */
static void TF(softmax_xent_grad_range)(void *vjob, int64_t b, int64_t e) {
  const softmax_job *job = vjob;
  int64_t c = job->n;
  for (int64_t r = b; r < e; r++) {
    const T *sm = (const T *)job->x + r * c;
    T *dx = (T *)job->out + r * c, d = ((const T *)job->dout)[r];
    if (job->soft) {
      const T *lab = (const T *)job->label + r * c;
      double s = 0;
      for (int64_t j = 0; j < c; j++) s += lab[j];
      for (int64_t j = 0; j < c; j++) dx[j] = d * (sm[j] * (T)s - lab[j]);
    } else {
      int64_t l = ((const int64_t *)job->label)[r];
      if (l == job->ignore) {
        for (int64_t j = 0; j < c; j++) dx[j] = 0;
      } else {
        PD_SIMD for (int64_t j = 0; j < c; j++) dx[j] = d * sm[j];
        dx[l] -= d;
      }
    }
  }
}

#undef T
#undef TN
