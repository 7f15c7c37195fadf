/* conv_t.h -- template of conv.c for one float type T (suffix TN): im2col/col2im and the
 * depthwise convolution. The GEMM half of the convolution is dtype-generic and lives in
 * conv.c. */

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

/* Runs of one row of the column matrix (n elements, input column step 1): copy the valid part
 * [lo, hi) and zero the rest, or add it back. Plain loops rather than memcpy: LeNet's rows are
 * 10 to 28 elements, where a call costs more than the copy. */
static void TF(copy_run)(T *restrict r, const T *restrict src, int64_t lo, int64_t hi,
                         int64_t n) {
  for (int64_t ox = 0; ox < lo; ox++) r[ox] = 0;
  PD_SIMD for (int64_t ox = lo; ox < hi; ox++) r[ox] = src[ox];
  for (int64_t ox = hi; ox < n; ox++) r[ox] = 0;
}

static void TF(add_run)(T *restrict dst, const T *restrict r, int64_t lo, int64_t hi) {
  PD_SIMD for (int64_t ox = lo; ox < hi; ox++) dst[ox] += r[ox];
}

/* im2col of a convolution with unit strides and dilations whose output is as wide as its
 * input ("same" padding across: 3x3 with 1, LeNet's first 5x5 with 2): a row of the column
 * matrix is then the input plane shifted by (i - pt) rows and (j - pl) columns, so each row is
 * one contiguous copy from the plane, after which the columns outside the image (read from the
 * neighbouring row, or not read at all where the copy was clipped to the plane) and the rows
 * outside it are set to 0. The copy per output row of the general loop (runs of 7 to 28
 * elements) cost 0.2 to 0.85 ns an element on ResNet-like shapes, about 40% of a forward
 * convolution's time; this takes 36-44% less (bench/README). The adjoint (col2im) keeps the
 * loop: the columns outside the image must not be added. */
static bool TF(im2col_same_width)(const pd_k_conv2d *p) {
  return p->stride_h == 1 && p->stride_w == 1 && p->dil_h == 1 && p->dil_w == 1 &&
         p->ow == p->w;
}

static void TF(im2col_shifted)(const pd_k_conv2d *p, const T *img, T *col) {
  int64_t ohw = p->oh * p->ow, ow = p->ow, plane = p->h * p->w;
  for (int64_t ci = 0; ci < p->c; ci++) {
    const T *src = img + ci * plane;
    for (int64_t i = 0; i < p->kh; i++) {
      int64_t yoff = i - p->pad_top;
      int64_t oy0 = yoff < 0 ? -yoff : 0, oy1 = p->h - yoff < p->oh ? p->h - yoff : p->oh;
      if (oy0 > p->oh) oy0 = p->oh;
      if (oy1 < oy0) oy1 = oy0;
      for (int64_t j = 0; j < p->kw; j++) {
        T *row = col + ((ci * p->kh + i) * p->kw + j) * ohw;
        int64_t xoff = j - p->pad_left, lo, hi;
        TF(valid_cols)(ow, p->w, 1, xoff, &lo, &hi);
        memset(row, 0, (size_t)(oy0 * ow) * sizeof(T));
        memset(row + oy1 * ow, 0, (size_t)((p->oh - oy1) * ow) * sizeof(T));
        /* Output element k of rows [oy0, oy1) reads plane element k + shift, clipped to the
         * plane: the elements clipped off are in columns outside [lo, hi), zeroed below. */
        int64_t b = oy0 * ow, e = oy1 * ow, shift = yoff * p->w + xoff;
        if (b + shift < 0) b = -shift;
        if (e + shift > plane) e = plane - shift;
        if (e > b) memcpy(row + b, src + b + shift, (size_t)(e - b) * sizeof(T));
        for (int64_t oy = oy0; oy < oy1; oy++) {
          T *r = row + oy * ow;
          for (int64_t ox = 0; ox < lo; ox++) r[ox] = 0;
          for (int64_t ox = hi; ox < ow; ox++) r[ox] = 0;
        }
      }
    }
  }
}

/* col[(ci * kh + i) * kw + j][oy * ow + ox] =
 *     img[ci][oy * sh - pt + i * dh][ox * sw - pl + j * dw], 0 in the padding.
 * to_col false runs the adjoint: img[...] += col[...]. */
static void TF(im2col_dir)(const pd_k_conv2d *p, T *img, T *col, bool to_col) {
  if (to_col && TF(im2col_same_width)(p)) {
    TF(im2col_shifted)(p, img, col);
    return;
  }
  int64_t ohw = p->oh * p->ow, ow = p->ow, sw = p->stride_w;
  for (int64_t ci = 0; ci < p->c; ci++) {
    for (int64_t i = 0; i < p->kh; i++) {
      for (int64_t j = 0; j < p->kw; j++) {
        T *row = col + ((ci * p->kh + i) * p->kw + j) * ohw;
        int64_t xoff = j * p->dil_w - p->pad_left, lo, hi;
        TF(valid_cols)(ow, p->w, sw, xoff, &lo, &hi);
        for (int64_t oy = 0; oy < p->oh; oy++) {
          T *r = row + oy * ow;
          int64_t iy = oy * p->stride_h - p->pad_top + i * p->dil_h;
          if (iy < 0 || iy >= p->h) {
            if (to_col)
              for (int64_t ox = 0; ox < ow; ox++) r[ox] = 0;
            continue;
          }
          /* Input element of output column ox: base + ox * stride_w (in bounds for lo..hi). */
          T *src = img + (ci * p->h + iy) * p->w + xoff;
          if (sw == 1) {
            if (to_col) TF(copy_run)(r, src, lo, hi, ow);
            else TF(add_run)(src, r, lo, hi);
          } else if (to_col) {
            for (int64_t ox = 0; ox < lo; ox++) r[ox] = 0;
            TF(copy_strided)(r + lo, src + lo * sw, hi - lo, sw);
            for (int64_t ox = hi; ox < ow; ox++) r[ox] = 0;
          } else {
            for (int64_t ox = lo; ox < hi; ox++) src[ox * sw] += r[ox];
          }
        }
      }
    }
  }
}

/* A depthwise convolution (groups = input channels; each filter reads one channel) directly,
 * output planes [b, e) of the n * oc: per filter tap, one multiply-add over each output row's
 * valid columns (a contiguous run when the stride is 1), where im2col + a GEMM per group
 * spent its time on GEMMs of one row. */
static void TF(depthwise_planes)(const pd_k_conv2d *p, const T *x, const T *w, T *y, int64_t b,
                                 int64_t e) {
  int64_t ocg = p->oc / p->groups, ohw = p->oh * p->ow;
  for (int64_t pl = b; pl < e; pl++) {
    int64_t n = pl / p->oc, oc = pl % p->oc, ic = oc / ocg;
    const T *xc = x + (n * p->c + ic) * p->h * p->w;
    const T *wc = w + oc * p->kh * p->kw;
    T *yc = y + pl * ohw;
    for (int64_t i = 0; i < ohw; i++) yc[i] = 0;
    for (int64_t i = 0; i < p->kh; i++)
      for (int64_t j = 0; j < p->kw; j++) {
        T wv = wc[i * p->kw + j];
        int64_t off = j * p->dil_w - p->pad_left, lo, hi;
        TF(valid_cols)(p->ow, p->w, p->stride_w, off, &lo, &hi);
        for (int64_t oy = 0; oy < p->oh; oy++) {
          int64_t iy = oy * p->stride_h - p->pad_top + i * p->dil_h;
          if (iy < 0 || iy >= p->h) continue;
          const T *xr = xc + iy * p->w + off;
          T *yr = yc + oy * p->ow;
          if (p->stride_w == 1) {
            PD_SIMD for (int64_t ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox];
          } else {
            for (int64_t ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox * p->stride_w];
          }
        }
      }
  }
}

#undef T
#undef TN
