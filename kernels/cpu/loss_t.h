/* loss_t.h -- template of the element-wise losses' loops of loss.c for one float type; included
 * by loss.c (which defines loss_job, loss_ignored and loss_sigmoid) with T (float or double), TN
 * (its suffix) and T_FLOAT. Every value is computed in double from the inputs and rounded to T
 * once, as the CUDA backend does (kernels/cuda/loss.cu, expression for expression). Each range
 * function covers elements (or smooth_l1's rows) [b, e). */

/* Element i of an optional input (NULL: dflt), as double. */
static inline double TF(loss_at)(const void *p, int64_t i, double dflt) {
  return p ? (double)((const T *)p)[i] : dflt;
}

static void TF(sxent_range)(void *ctx, int64_t b, int64_t e) {
  const loss_job *j = ctx;
  const T *x = j->x, *z = j->y;
  T *out = j->o[0];
  for (int64_t i = b; i < e; i++) {
    double xi = x[i], zi = z[i];
    out[i] = (T)(loss_ignored(zi, j->ignore)
                     ? 0
                     : (fmax(xi, 0) - xi * zi + log1p(exp(-fabs(xi)))) / j->norm);
  }
}

static void TF(sxent_grad_range)(void *ctx, int64_t b, int64_t e) {
  const loss_job *j = ctx;
  const T *x = j->x, *z = j->y, *dout = j->dout;
  T *dx = j->o[0], *dl = j->o[1];
  for (int64_t i = b; i < e; i++) {
    double xi = x[i], zi = z[i], d = (double)dout[i] / j->norm;
    bool ig = loss_ignored(zi, j->ignore);
    if (dx) dx[i] = (T)(ig ? 0 : (loss_sigmoid(xi) - zi) * d);
    if (dl) dl[i] = (T)(ig ? 0 : -xi * d);
  }
}

/* The labels not ignored, counted in index order. */
static int64_t TF(sxent_count)(const loss_job *j, int64_t n) {
  const T *z = j->y;
  int64_t cnt = 0;
  for (int64_t i = 0; i < n; i++) cnt += !loss_ignored((double)z[i], j->ignore);
  return cnt;
}

/* Rows [b, e); each row's sum in double, in column order. */
static void TF(sl1_range)(void *ctx, int64_t b, int64_t e) {
  const loss_job *j = ctx;
  const T *x = j->x, *y = j->y;
  T *diff = j->o[0], *out = j->o[1];
  double s2 = j->p;
  for (int64_t r = b; r < e; r++) {
    double sum = 0;
    for (int64_t c = 0; c < j->cols; c++) {
      int64_t i = r * j->cols + c;
      double d = ((double)x[i] - (double)y[i]) * TF(loss_at)(j->w1, i, 1), a = fabs(d);
      if (diff) diff[i] = (T)d;
      sum += TF(loss_at)(j->w2, i, 1) * (a < 1 / s2 ? 0.5 * s2 * d * d : a - 0.5 / s2);
    }
    out[r] = (T)sum;
  }
}

static void TF(sl1_grad_range)(void *ctx, int64_t b, int64_t e) {
  const loss_job *j = ctx;
  const T *x = j->x, *y = j->y, *dout = j->dout;
  T *dx = j->o[0], *dy = j->o[1], *diw = j->o[2], *dow = j->o[3];
  double s2 = j->p;
  for (int64_t r = b; r < e; r++) {
    double dr = dout[r];
    for (int64_t c = 0; c < j->cols; c++) {
      int64_t i = r * j->cols + c;
      double xy = (double)x[i] - (double)y[i], iw = TF(loss_at)(j->w1, i, 1);
      double ow = TF(loss_at)(j->w2, i, 1), d = xy * iw, a = fabs(d);
      bool quad = a < 1 / s2;
      double gi = dr * ow * (quad ? s2 * d : (d > 0) - (d < 0));
      if (dx) dx[i] = (T)(gi * iw);
      if (dy) dy[i] = (T)(-gi * iw);
      if (diw) diw[i] = (T)(gi * xy);
      if (dow) dow[i] = (T)(dr * (quad ? 0.5 * s2 * d * d : a - 0.5 / s2));
    }
  }
}

static void TF(huber_range)(void *ctx, int64_t b, int64_t e) {
  const loss_job *j = ctx;
  const T *x = j->x, *y = j->y;
  T *res = j->o[0], *out = j->o[1];
  double delta = j->p;
  for (int64_t i = b; i < e; i++) {
    double r = (double)y[i] - (double)x[i], a = fabs(r);
    if (res) res[i] = (T)r;
    out[i] = (T)(a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta));
  }
}

static void TF(huber_grad_range)(void *ctx, int64_t b, int64_t e) {
  const loss_job *j = ctx;
  const T *x = j->x, *y = j->y, *dout = j->dout;
  T *dx = j->o[0], *dy = j->o[1];
  double delta = j->p;
  for (int64_t i = b; i < e; i++) {
    double r = (double)y[i] - (double)x[i];
    double d = (double)dout[i] * (fabs(r) <= delta ? r : delta * ((r > 0) - (r < 0)));
    if (dx) dx[i] = (T)-d;
    if (dy) dy[i] = (T)d;
  }
}

static inline double TF(kl_elem)(const loss_job *j, int64_t i) {
  double ti = ((const T *)j->y)[i];
  return ti > 0 ? ti * (log(ti) - (double)((const T *)j->x)[i]) : 0;
}

static void TF(kl_range)(void *ctx, int64_t b, int64_t e) {
  const loss_job *j = ctx;
  T *loss = j->o[0];
  for (int64_t i = b; i < e; i++) loss[i] = (T)TF(kl_elem)(j, i);
}

/* The reduction: one sum in double, in index order. */
static void TF(kl_sum)(const loss_job *j, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; i++) sum += TF(kl_elem)(j, i);
  ((T *)j->o[0])[0] = (T)(sum * j->p);
}

static void TF(kl_grad_range)(void *ctx, int64_t b, int64_t e) {
  const loss_job *j = ctx;
  const T *x = j->x, *t = j->y, *dl = j->dout;
  T *dx = j->o[0], *dt = j->o[1];
  double g0 = j->reduce ? (double)dl[0] * j->p : 0;
  for (int64_t i = b; i < e; i++) {
    double ti = t[i], gi = j->reduce ? g0 : (double)dl[i];
    if (dx) dx[i] = (T)(ti > 0 ? -ti * gi : 0);
    if (dt) dt[i] = (T)(ti > 0 ? (log(ti) + 1 - (double)x[i]) * gi : 0);
  }
}

#undef T
#undef TN
#undef T_FLOAT
