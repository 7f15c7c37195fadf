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
 * may be x); the slice's log-sum-exp into *lse where lse is not NULL (a log a slice: a fifth of
 * the softmax of PP-OCRv3's [16, 8, 40, 40] attention scores, where no one read it). */
static void TF(softmax_slice)(const T *x, T *out, int64_t n, int64_t st, bool log_out, T *lse) {
  T mx = TF(slice_max)(x, n, st);
  if (log_out) {
    double sum = 0;
    for (int64_t j = 0; j < n; j++) sum += exp(x[j * st] - mx);
    T l = mx + (T)log(sum);
    for (int64_t j = 0; j < n; j++) out[j * st] = x[j * st] - l;
    if (lse) *lse = l;
    return;
  }
  double sum = TF(exp_shifted)(x, out, n, st, mx);
  T inv = (T)(1.0 / sum);
  if (lse) *lse = mx + (T)log(sum);
#if TF(PD_KCPU_FASTMATH)
  if (st == 1) {
    pd_kcpu_scale_f32(out, inv, n);
    return;
  }
#endif
  for (int64_t j = 0; j < n; j++) out[j * st] *= inv;
}

/* Slices are numbered i * post + k for x viewed as [pre, n, post]. */
static void TF(softmax_range)(void *vjob, int64_t b, int64_t e) {
  const softmax_job *job = vjob;
  for (int64_t s = b; s < e; s++) {
    int64_t off = s / job->post * job->n * job->post + s % job->post;
    TF(softmax_slice)((const T *)job->x + off, (T *)job->out + off, job->n, job->post,
                      job->log, NULL);
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
    T lse;
    TF(softmax_slice)(x, sm, c, 1, false, &lse);
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

/* The softmax of a block's r score rows (row stride sk, live columns made) in place, its bias
 * (row i at bias + i bq, elements bk apart; NULL: none) added first; causal: row i (the
 * query i0 + i) over keys [0, i0 + i] alone, the rest of its live columns 0. Each row's
 * log-sum-exp into lse[i] (NULL: not wanted). */
static void TF(attention_softmax)(T *s, int64_t r, int64_t i0, int64_t live, int64_t sk,
                                  bool causal, const T *bias, int64_t bq, int64_t bk, T *lse) {
#if TF(PD_KCPU_FASTMATH) && PD_KCPU_HAVE_AVX512
  if (pd_kcpu_simd() == PD_KCPU_SIMD_AVX512 && (!bias || bk == 1)) {
    if (!causal) {
      pd_kcpu_softmax_rows16_f32(s, r, live, sk, bias, bq, lse);
      return;
    }
    for (int64_t i = 0; i < r; i++) {
      int64_t n = i0 + i + 1 < live ? i0 + i + 1 : live;
      pd_kcpu_softmax_rows16_f32(s + i * sk, 1, n, sk, bias ? bias + i * bq : NULL, 0,
                                 lse ? lse + i : NULL);
      for (int64_t u = n; u < live; u++) s[i * sk + u] = 0;
    }
    return;
  }
#endif
  for (int64_t i = 0; i < r; i++) {
    T *row = s + i * sk;
    int64_t n = causal && i0 + i + 1 < live ? i0 + i + 1 : live;
    if (bias) {
      const T *br = bias + i * bq;
      if (bk == 1) {
        PD_SIMD for (int64_t u = 0; u < n; u++) row[u] += br[u];
      } else {
        for (int64_t u = 0; u < n; u++) row[u] += br[u * bk];
      }
    }
    TF(softmax_slice)(row, row, n, 1, false, lse ? &lse[i] : NULL);
    for (int64_t u = n; u < live; u++) row[u] = 0;
  }
}

/* Attention items [b, e): item it is (batch, head, block of rows) = (it / (heads nb), it / nb %
 * heads, it % nb). The head's keys are copied transposed (kt, [d, sk]) once a run of items of one
 * head, so that both products read their B in rows; a block's scores s [rows, sk] are made,
 * biased, masked and normalised in place, then multiply the head's values into the output. */
static void TF(attention_range)(void *vjob, int64_t b, int64_t e) {
  attention_job *j = vjob; /* its failed flag is set */
  const pd_k_attention *a = j->a;
  const pd_dtype dt = sizeof(T) == sizeof(float) ? PD_FP32 : PD_FP64;
  const int64_t H = a->heads, d = a->d, dv = a->dv, sq = a->sq, sk = a->sk, nb = j->nb;
  const int64_t *bs = a->bias_strides;
  T *kt = pd_k_host_alloc(sizeof(T) * (size_t)((d + j->rows) * sk));
  if (!kt) {
    atomic_store(&j->failed, true);
    return;
  }
  T *s = kt + d * sk;
  int64_t have = -1; /* the (batch, head) whose keys kt holds */
  for (int64_t it = b; it < e; it++) {
    int64_t bh = it / nb, bi = bh / H, h = bh % H, i0 = it % nb * j->rows;
    int64_t r = sq - i0 < j->rows ? sq - i0 : j->rows;
    if (bh != have) {
      const T *kh = (const T *)j->k + (bi * sk * H + h) * d;
      for (int64_t u = 0; u < sk; u++)
        for (int64_t c = 0; c < d; c++) kt[c * sk + u] = kh[u * H * d + c];
      have = bh;
    }
    /* causal: row i keeps keys [0, i]; the block's rows none past i0 + r - 1 */
    int64_t live = a->causal && i0 + r < sk ? i0 + r : sk;
    pd_kcpu_gemm_one(dt, false, false, r, live, d, a->scale,
                     (const T *)j->q + ((bi * sq + i0) * H + h) * d, H * d, kt, sk, 0.0, s, sk,
                     NULL);
    const T *bias = j->bias ? (const T *)j->bias + bi * bs[0] + h * bs[1] + i0 * bs[2] : NULL;
    T *lse = j->lse ? (T *)j->lse + bh * sq + i0 : NULL;
    TF(attention_softmax)(s, r, i0, live, sk, a->causal, bias, bs[2], bs[3], lse);
    pd_kcpu_gemm_one(dt, false, false, r, dv, live, 1.0, s, sk,
                     (const T *)j->v + (bi * sk * H + h) * dv, H * dv, 0.0,
                     (T *)j->out + ((bi * sq + i0) * H + h) * dv, H * dv, NULL);
  }
  pd_k_host_free(kt);
}

#undef T
#undef TN
