/* adaptive_pool_t.h -- template of adaptive_pool.c's loops for one float type; included by
 * adaptive_pool.c (which defines apool_job) with T (float or double), TN (its suffix) and
 * T_FLOAT. Each range function covers planes [b, e) of [n c, h, w]. */

/* The forward pass of planes [b, e), APOOL_K planes at a time (one output a plane: plane_mean):
 * each plane's window is read in the same order with the same comparisons and additions as the loop
 * below (so the results are its bits), the planes' chains interleaved, so that the additions of a
 * window (a dependent chain: an SE block's global pooling over a 28x28 plane) overlap instead of
 * waiting for each other. */
/* The mean of a plane of n (global average pooling: a squeeze-excitation's): the sum in double
 * over eight lanes, element i in lane i % 8, the lanes added in a fixed tree; the compiler's
 * vectors take it. One chain of n dependent additions a plane (eight planes interleaved) took
 * 7% of a CRNN recogniser's time. */
static T TF(plane_mean)(const T *x, int64_t n) {
  double a[8] = {0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    PD_SIMD for (int l = 0; l < 8; l++) a[l] += (double)x[i + l];
  for (int l = 0; i + l < n; l++) a[l] += (double)x[i + l];
  return (T)((((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))) / (double)n);
}

static void TF(apool_fwd)(const pd_k_pool2d *p, const T *x, T *y, int64_t b, int64_t e) {
  bool mx = p->type == PD_K_POOL_MAX;
  int64_t plane = p->h * p->w;
  if (!mx && p->oh == 1 && p->ow == 1) {
    for (int64_t pl = b; pl < e; pl++) y[pl] = TF(plane_mean)(x + pl * plane, plane);
    return;
  }
  for (int64_t pl = b; pl < e; pl += APOOL_K) {
    int64_t k = e - pl < APOOL_K ? e - pl : APOOL_K;
    const T *xs = x + pl * plane;
    for (int64_t oy = 0; oy < p->oh; oy++) {
      int64_t hs = oy * p->h / p->oh, he = ((oy + 1) * p->h + p->oh - 1) / p->oh;
      for (int64_t ox = 0; ox < p->ow; ox++) {
        int64_t ws = ox * p->w / p->ow, we = ((ox + 1) * p->w + p->ow - 1) / p->ow;
        int64_t count = (he - hs) * (we - ws), at = hs * p->w + ws;
        double sum[APOOL_K] = {0};
        T m[APOOL_K];
        for (int64_t q = 0; q < k; q++) m[q] = xs[q * plane + at];
        for (int64_t iy = hs; iy < he; iy++)
          for (int64_t ix = ws; ix < we; ix++) {
            const T *v = xs + iy * p->w + ix;
            if (mx) {
              for (int64_t q = 0; q < k; q++)
                if (v[q * plane] > m[q]) m[q] = v[q * plane];
            } else if (k == APOOL_K) {
              for (int q = 0; q < APOOL_K; q++) sum[q] += v[q * plane];
            } else {
              for (int64_t q = 0; q < k; q++) sum[q] += v[q * plane];
            }
          }
        for (int64_t q = 0; q < k; q++)
          y[(pl + q) * p->oh * p->ow + oy * p->ow + ox] = mx ? m[q] : (T)(sum[q] / (double)count);
      }
    }
  }
}

static void TF(apool_range)(void *ctx, int64_t b, int64_t e) {
  const apool_job *j = ctx;
  const pd_k_pool2d *p = j->p;
  bool mx = p->type == PD_K_POOL_MAX;
  if (j->y && !j->dx) {
    TF(apool_fwd)(p, j->x, j->y, b, e);
    return;
  }
  for (int64_t pl = b; pl < e; pl++) {
    const T *x = (const T *)j->x + pl * p->h * p->w;
    T *y = j->y ? (T *)j->y + pl * p->oh * p->ow : NULL;
    const T *dy = j->dy ? (const T *)j->dy + pl * p->oh * p->ow : NULL;
    T *dx = j->dx ? (T *)j->dx + pl * p->h * p->w : NULL;
    if (dx) memset(dx, 0, (size_t)(p->h * p->w) * sizeof(T));
    for (int64_t oy = 0; oy < p->oh; oy++) {
      int64_t hs = oy * p->h / p->oh, he = ((oy + 1) * p->h + p->oh - 1) / p->oh;
      for (int64_t ox = 0; ox < p->ow; ox++) {
        int64_t ws = ox * p->w / p->ow, we = ((ox + 1) * p->w + p->ow - 1) / p->ow;
        int64_t count = (he - hs) * (we - ws), at = hs * p->w + ws;
        double sum = 0;
        for (int64_t iy = hs; iy < he; iy++)
          for (int64_t ix = ws; ix < we; ix++) {
            sum += x[iy * p->w + ix];
            if (x[iy * p->w + ix] > x[at]) at = iy * p->w + ix;
          }
        if (y) y[oy * p->ow + ox] = mx ? x[at] : (T)(sum / (double)count);
        if (!dx) continue;
        T g = dy[oy * p->ow + ox];
        if (mx) {
          dx[at] += g;
        } else {
          for (int64_t iy = hs; iy < he; iy++)
            for (int64_t ix = ws; ix < we; ix++) dx[iy * p->w + ix] += (T)(g / (double)count);
        }
      }
    }
  }
}

#undef T
#undef TN
#undef T_FLOAT
