/* conv_t.h -- template of conv.c for one float type T (suffix TN): im2col/col2im and pooling.
 * The GEMM half of the convolution is dtype-generic and lives in conv.c. */

/* The output columns ox whose input column ox * stride + off lies in [0, w): [*lo, *hi). */
static void TF(valid_cols)(int64_t ow, int64_t w, int64_t stride, int64_t off, int64_t *lo,
                           int64_t *hi) {
  int64_t a = off >= 0 ? 0 : (-off + stride - 1) / stride;
  int64_t b = w - 1 - off < 0 ? 0 : (w - 1 - off) / stride + 1;
  if (a > ow) a = ow;
  if (b > ow) b = ow;
  if (b < a) b = a;
  *lo = a;
  *hi = b;
}

/* col[(ci * kh + i) * kw + j][oy * ow + ox] =
 *     img[ci][oy * sh - pt + i * dh][ox * sw - pl + j * dw], 0 in the padding.
 * to_col false runs the adjoint: img[...] += col[...]. */
static void TF(im2col_dir)(const pd_k_conv2d *p, T *img, T *col, bool to_col) {
  int64_t ohw = p->oh * p->ow;
  for (int64_t ci = 0; ci < p->c; ci++) {
    for (int64_t i = 0; i < p->kh; i++) {
      for (int64_t j = 0; j < p->kw; j++) {
        T *row = col + ((ci * p->kh + i) * p->kw + j) * ohw;
        int64_t xoff = j * p->dil_w - p->pad_left, lo, hi;
        TF(valid_cols)(p->ow, p->w, p->stride_w, xoff, &lo, &hi);
        for (int64_t oy = 0; oy < p->oh; oy++) {
          T *r = row + oy * p->ow;
          int64_t iy = oy * p->stride_h - p->pad_top + i * p->dil_h;
          if (iy < 0 || iy >= p->h) {
            if (to_col) memset(r, 0, (size_t)p->ow * sizeof(T));
            continue;
          }
          /* Input element of output column ox: base + ox * stride_w (in bounds for lo..hi). */
          int64_t base = (ci * p->h + iy) * p->w + xoff;
          if (to_col) {
            for (int64_t ox = 0; ox < lo; ox++) r[ox] = 0;
            if (p->stride_w == 1) {
              if (hi > lo) memcpy(r + lo, img + base + lo, (size_t)(hi - lo) * sizeof(T));
            } else {
              for (int64_t ox = lo; ox < hi; ox++) r[ox] = img[base + ox * p->stride_w];
            }
            for (int64_t ox = hi; ox < p->ow; ox++) r[ox] = 0;
          } else {
            for (int64_t ox = lo; ox < hi; ox++) img[base + ox * p->stride_w] += r[ox];
          }
        }
      }
    }
  }
}

/* Pooling of planes [b, e) (plane = one (n, c) pair). */
static void TF(pool_range)(void *vjob, int64_t b, int64_t e) {
  const pool_job *job = vjob;
  const pd_k_pool2d *p = job->p;
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
