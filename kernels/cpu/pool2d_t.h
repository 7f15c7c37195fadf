/* pool2d_t.h -- template of pool2d.c for one float type T (suffix TN): max and average pooling
 * of planes and their gradients, the 2x2 stride-2 windows by loops of their own. */

/* Max pooling with 2x2 windows at stride 2, no padding (LeNet's, VGG's): windows do not
 * overlap and lie inside the input (windows_2x2). */
static bool TF(pool_is_2x2)(const pd_k_pool2d *p) {
  return p->type == PD_K_POOL_MAX && windows_2x2(p);
}

/* Max or average pooling of a plane with such windows: max by the comparisons of the general
 * loop below, in its order (a NaN in a window's first element is kept, later ones are not);
 * average by its sums (in double, in the same order) over its count of 4, without its bounds
 * and counts for every window (that loop took 0.7 ms of ResNet50-vd's batch-1 time for [256,
 * 56, 56] on two threads: ResNet-D's shortcuts, ceil_mode on even sizes). */
static void TF(pool_2x2)(const pd_k_pool2d *p, const T *x, T *y) {
  bool mx = p->type == PD_K_POOL_MAX;
  for (int64_t oy = 0; oy < p->oh; oy++) {
    const T *r0 = x + 2 * oy * p->w, *r1 = r0 + p->w;
    T *o = y + oy * p->ow;
    for (int64_t ox = 0; ox < p->ow; ox++) {
      T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
      if (mx) {
        T acc = a;
        if (b > acc) acc = b;
        if (c > acc) acc = c;
        if (d > acc) acc = d;
        o[ox] = acc;
      } else {
        o[ox] = (T)((((double)a + (double)b) + (double)c + (double)d) / 4.0);
      }
    }
  }
}

/* Each window's gradient goes to its first element equal to the window's max, the window's
 * other elements get 0, and so do the rows and columns no window covers. */
static void TF(pool_grad_2x2)(const pd_k_pool2d *p, const T *x, const T *y, const T *dy, T *dx) {
  int64_t w = p->w;
  for (int64_t oy = 0; oy < p->oh; oy++) {
    const T *r0 = x + 2 * oy * w, *r1 = r0 + w;
    T *d0 = dx + 2 * oy * w, *d1 = d0 + w;
    const T *m = y + oy * p->ow, *g = dy + oy * p->ow;
    for (int64_t ox = 0; ox < p->ow; ox++) {
      T mx = m[ox], gx = g[ox];
      /* Bitwise, not short-circuit: no branches to mispredict. */
      int a = r0[2 * ox] == mx, b = (r0[2 * ox + 1] == mx) & !a;
      int c = (r1[2 * ox] == mx) & !(a | b), d = (r1[2 * ox + 1] == mx) & !(a | b | c);
      d0[2 * ox] = a ? gx : (T)0;
      d0[2 * ox + 1] = b ? gx : (T)0;
      d1[2 * ox] = c ? gx : (T)0;
      d1[2 * ox + 1] = d ? gx : (T)0;
    }
    for (int64_t ix = 2 * p->ow; ix < w; ix++) d0[ix] = d1[ix] = 0;
  }
  for (int64_t iy = 2 * p->oh; iy < p->h; iy++)
    for (int64_t ix = 0; ix < w; ix++) dx[iy * w + ix] = 0;
}

/* Pooling of planes [b, e) (plane = one (n, c) pair). */
static void TF(pool_range)(void *vjob, int64_t b, int64_t e) {
  const pool_job *job = vjob;
  const pd_k_pool2d *p = job->p;
  if ((p->type == PD_K_POOL_MAX || p->type == PD_K_POOL_AVG) && windows_2x2(p)) {
    for (int64_t pl = b; pl < e; pl++)
      TF(pool_2x2)(p, (const T *)job->x + pl * p->h * p->w, (T *)job->y + pl * p->oh * p->ow);
    return;
  }
  for (int64_t pl = b; pl < e; pl++) {
    const T *x = (const T *)job->x + pl * p->h * p->w;
    T *y = (T *)job->y + pl * p->oh * p->ow;
    for (int64_t oy = 0; oy < p->oh; oy++) {
      int64_t y0 = oy * p->stride_h - p->pad_top, y1 = y0 + p->kh;
      int64_t ys = y0 < 0 ? 0 : y0, ye = y1 > p->h ? p->h : y1;
      for (int64_t ox = 0; ox < p->ow; ox++) {
        int64_t x0 = ox * p->stride_w - p->pad_left, x1 = x0 + p->kw;
        int64_t xs = x0 < 0 ? 0 : x0, xe = x1 > p->w ? p->w : x1;
        T acc;
        if (p->type == PD_K_POOL_MAX) {
          acc = x[ys * p->w + xs];
          for (int64_t iy = ys; iy < ye; iy++)
            for (int64_t ix = xs; ix < xe; ix++)
              if (x[iy * p->w + ix] > acc) acc = x[iy * p->w + ix];
        } else {
          double s = 0;
          for (int64_t iy = ys; iy < ye; iy++)
            for (int64_t ix = xs; ix < xe; ix++) s += x[iy * p->w + ix];
          int64_t count = p->exclusive ? (ye - ys) * (xe - xs) : p->kh * p->kw;
          acc = (T)(s / (double)count);
        }
        y[oy * p->ow + ox] = acc;
      }
    }
  }
}

/* dx of planes [b, e): max sends dy to the first element equal to the window's max; avg spreads
 * dy / count over the window. */
static void TF(pool_grad_range)(void *vjob, int64_t b, int64_t e) {
  const pool_job *job = vjob;
  const pd_k_pool2d *p = job->p;
  if (TF(pool_is_2x2)(p)) {
    for (int64_t pl = b; pl < e; pl++)
      TF(pool_grad_2x2)(p, (const T *)job->x + pl * p->h * p->w,
                        (const T *)job->y + pl * p->oh * p->ow,
                        (const T *)job->dy + pl * p->oh * p->ow, (T *)job->dx + pl * p->h * p->w);
    return;
  }
  for (int64_t pl = b; pl < e; pl++) {
    const T *x = (const T *)job->x + pl * p->h * p->w;
    const T *y = (const T *)job->y + pl * p->oh * p->ow;
    const T *dy = (const T *)job->dy + pl * p->oh * p->ow;
    T *dx = (T *)job->dx + pl * p->h * p->w;
    memset(dx, 0, (size_t)(p->h * p->w) * sizeof(T));
    for (int64_t oy = 0; oy < p->oh; oy++) {
      int64_t y0 = oy * p->stride_h - p->pad_top, y1 = y0 + p->kh;
      int64_t ys = y0 < 0 ? 0 : y0, ye = y1 > p->h ? p->h : y1;
      for (int64_t ox = 0; ox < p->ow; ox++) {
        int64_t x0 = ox * p->stride_w - p->pad_left, x1 = x0 + p->kw;
        int64_t xs = x0 < 0 ? 0 : x0, xe = x1 > p->w ? p->w : x1;
        T g = dy[oy * p->ow + ox];
        if (p->type == PD_K_POOL_MAX) {
          T m = y[oy * p->ow + ox];
          bool done = false;
          for (int64_t iy = ys; iy < ye && !done; iy++)
            for (int64_t ix = xs; ix < xe && !done; ix++)
              if (x[iy * p->w + ix] == m) {
                dx[iy * p->w + ix] += g;
                done = true;
              }
        } else {
          int64_t count = p->exclusive ? (ye - ys) * (xe - xs) : p->kh * p->kw;
          T share = g / (T)count;
          for (int64_t iy = ys; iy < ye; iy++)
            for (int64_t ix = xs; ix < xe; ix++) dx[iy * p->w + ix] += share;
        }
      }
    }
  }
}

#undef T
#undef TN
