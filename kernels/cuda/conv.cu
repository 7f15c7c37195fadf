/* conv.cu -- the CUDA backend's 2-d convolution (NCHW) as im2col + cuBLAS GEMMs over chunks of
 * images, its data gradient (GEMM + col2im) and filter gradient (im2col + one GEMM per group
 * over a whole chunk), and max/avg pooling with its gradient. The semantics are the CPU's
 * (groups, dilation, asymmetric padding; pooling's ceil mode, exclusive averages, the first
 * maximum of a window taking the gradient). col2im and the pooling gradient gather: each
 * image element sums its contributions itself, in the order the CPU adds them, so no atomics
 * and the same results. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <limits.h>


/* ---- im2col / col2im over a batch of nb images. Image b starts at img + b * img_stride; its
 * column matrix row r (= (ci * kh + i) * kw + j), column q (= oy * ow + ox) is at
 * col[r * ld + b * col_img + q]. ---- */

template <typename T>
__global__ void im2col_kernel(pd_k_conv2d p, int64_t nb, const T *img, int64_t img_stride, T *col,
                              int64_t ld, int64_t col_img) {
  int64_t ohw = p.oh * p.ow, rows = p.c * p.kh * p.kw;
  PD_KCU_LOOP(t, nb * rows * ohw) {
    int64_t q = t % ohw, rest = t / ohw, r = rest % rows, b = rest / rows;
    int64_t j = r % p.kw, i = r / p.kw % p.kh, ci = r / (p.kw * p.kh);
    int64_t oy = q / p.ow, ox = q % p.ow;
    int64_t iy = oy * p.stride_h - p.pad_top + i * p.dil_h;
    int64_t ix = ox * p.stride_w - p.pad_left + j * p.dil_w;
    T v = (T)0;
    if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w)
      v = img[b * img_stride + (ci * p.h + iy) * p.w + ix];
    col[r * ld + b * col_img + q] = v;
  }
}

/* img (+)= col2im(col): each image element adds the column entries that came from it, in
 * (i, j) order (the CPU's order), starting from its old value when accumulating, else 0. */
template <typename T>
__global__ void col2im_kernel(pd_k_conv2d p, int64_t nb, const T *col, int64_t ld,
                              int64_t col_img, T *img, int64_t img_stride, bool accumulate) {
  int64_t hw = p.h * p.w, chw = p.c * hw;
  PD_KCU_LOOP(t, nb * chw) {
    int64_t b = t / chw, e = t % chw, ci = e / hw, iy = e % hw / p.w, ix = e % p.w;
    T *dst = img + b * img_stride + e;
    T acc = accumulate ? *dst : (T)0;
    for (int64_t i = 0; i < p.kh; i++) {
      int64_t ty = iy + p.pad_top - i * p.dil_h;
      if (ty < 0 || ty % p.stride_h) continue;
      int64_t oy = ty / p.stride_h;
      if (oy >= p.oh) continue;
      for (int64_t j = 0; j < p.kw; j++) {
        int64_t tx = ix + p.pad_left - j * p.dil_w;
        if (tx < 0 || tx % p.stride_w) continue;
        int64_t ox = tx / p.stride_w;
        if (ox >= p.ow) continue;
        int64_t r = (ci * p.kh + i) * p.kw + j;
        acc += col[r * ld + b * col_img + oy * p.ow + ox];
      }
    }
    *dst = acc;
  }
}

template <typename T>
static pd_status launch_im2col(const pd_k_conv2d *p, int64_t nb, const void *img,
                               int64_t img_stride, void *col, int64_t ld, int64_t col_img) {
  int64_t total = nb * p->c * p->kh * p->kw * p->oh * p->ow;
  if (total == 0) return PD_OK;
  im2col_kernel<T><<<pd_kcu_blocks(total), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      *p, nb, (const T *)img, img_stride, (T *)col, ld, col_img);
  PD_KCU_LAUNCHED("im2col kernel");
  return PD_OK;
}

template <typename T>
static pd_status launch_col2im(const pd_k_conv2d *p, int64_t nb, const void *col, int64_t ld,
                               int64_t col_img, void *img, int64_t img_stride, bool accumulate) {
  int64_t total = nb * p->c * p->h * p->w;
  if (total == 0) return PD_OK;
  col2im_kernel<T><<<pd_kcu_blocks(total), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      *p, nb, (const T *)col, ld, col_img, (T *)img, img_stride, accumulate);
  PD_KCU_LAUNCHED("col2im kernel");
  return PD_OK;
}

pd_status pd_kcu_im2col(pd_dtype dt, const pd_k_conv2d *p, const void *img, void *col) {
  PD_KCU_TRY(pd_k_conv2d_check(p));
  int64_t ohw = p->oh * p->ow;
  switch (dt) {
    case PD_FP32: return launch_im2col<float>(p, 1, img, 0, col, ohw, 0);
    case PD_FP64: return launch_im2col<double>(p, 1, img, 0, col, ohw, 0);
    default: return PD_EUNSUPPORTED;
  }
}

pd_status pd_kcu_col2im(pd_dtype dt, const pd_k_conv2d *p, const void *col, void *img) {
  PD_KCU_TRY(pd_k_conv2d_check(p));
  int64_t ohw = p->oh * p->ow;
  switch (dt) {
    case PD_FP32: return launch_col2im<float>(p, 1, col, ohw, 0, img, 0, true);
    case PD_FP64: return launch_col2im<double>(p, 1, col, ohw, 0, img, 0, true);
    default: return PD_EUNSUPPORTED;
  }
}

/* ---- Convolutions ---- */

/* The sizes of one image's GEMMs, checked and planned by pd_k_conv_begin (kernels_int.h) as on
 * the CPU. */
typedef pd_k_conv_plan conv_plan;

/* Images per chunk when each needs `per_image` bytes of scratch (at least 1, at most n, and
 * at most `most`). */
static int64_t chunk_images(int64_t n, size_t per_image, int64_t most) {
  int64_t nb = per_image ? (int64_t)(CONV_WORKSPACE / per_image) : n;
  if (nb > n) nb = n;
  if (nb > most) nb = most;
  return nb < 1 ? 1 : nb;
}

#define AT(ptr, i, sz) ((char *)(ptr) + (int64_t)(i) * (int64_t)(sz))

/* The GEMMs of nb images x g groups, product (b, gi) on a + b * sa_b + gi * sa_g (elements),
 * and likewise b and c: batched over images (one call per group) or over groups (one call per
 * image), whichever makes fewer calls. */
typedef struct grid_gemm {
  const void *a, *b;
  void *c;
  int64_t sa_b, sa_g, sb_b, sb_g, sc_b, sc_g;
} grid_gemm;

static pd_status gemm_grid(const conv_plan *cp, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                           int64_t lda, int64_t ldb, int64_t ldc, int64_t nb, double beta,
                           const grid_gemm *q) {
  size_t sz = cp->sz;
  if (nb >= cp->g) {
    for (int64_t gi = 0; gi < cp->g; gi++)
      PD_KCU_TRY(pd_kcu_gemm_strided(cp->dt, ta, tb, nb, m, n, k, 1.0, AT(q->a, gi * q->sa_g, sz),
                                     lda, q->sa_b, AT(q->b, gi * q->sb_g, sz), ldb, q->sb_b, beta,
                                     AT(q->c, gi * q->sc_g, sz), ldc, q->sc_b));
  } else {
    for (int64_t b = 0; b < nb; b++)
      PD_KCU_TRY(pd_kcu_gemm_strided(cp->dt, ta, tb, cp->g, m, n, k, 1.0, AT(q->a, b * q->sa_b, sz),
                                     lda, q->sa_g, AT(q->b, b * q->sb_b, sz), ldb, q->sb_g, beta,
                                     AT(q->c, b * q->sc_b, sz), ldc, q->sc_g));
  }
  return PD_OK;
}

static pd_status im2col_chunk(const conv_plan *cp, const pd_k_conv2d *p, int64_t nb,
                              const void *img, void *col, int64_t ld, int64_t col_img) {
  if (cp->dt == PD_FP32) return launch_im2col<float>(p, nb, img, cp->in_img, col, ld, col_img);
  return launch_im2col<double>(p, nb, img, cp->in_img, col, ld, col_img);
}

pd_status pd_kcu_conv2d(pd_dtype dt, const pd_k_conv2d *p, const void *x, const void *w,
                        void *y) {
  conv_plan cp;
  PD_KCU_TRY(pd_k_conv_begin(&cp, dt, p));
  if (p->n == 0) return PD_OK;
  pd_status st = pd_kcu_cudnn_conv2d(dt, p, x, w, y);
  if (st != PD_EUNSUPPORTED) return st; /* else im2col + cuBLAS */
  st = PD_OK;
  size_t col_bytes = cp.direct ? 0 : (size_t)(cp.rows * cp.ohw) * cp.sz;
  int64_t nb_max = chunk_images(p->n, col_bytes, p->n);
  void *col = NULL;
  if (!cp.direct && !(col = pd_kcu_scratch(col_bytes * (size_t)nb_max))) return PD_ENOMEM;
  for (int64_t n0 = 0; n0 < p->n && !st; n0 += nb_max) {
    int64_t nb = p->n - n0 < nb_max ? p->n - n0 : nb_max;
    const void *xb = AT(x, n0 * cp.in_img, cp.sz);
    /* y[b, g] (ocg x ohw) = w[g] (ocg x kdim) @ col[b, g] (kdim x ohw) */
    grid_gemm q = {w, cp.direct ? xb : col, AT(y, n0 * cp.out_img, cp.sz),
                   0, cp.ocg * cp.kdim,
                   cp.direct ? cp.in_img : cp.rows * cp.ohw, cp.kdim * cp.ohw,
                   cp.out_img, cp.ocg * cp.ohw};
    if (!cp.direct) st = im2col_chunk(&cp, p, nb, xb, col, cp.ohw, cp.rows * cp.ohw);
    if (!st)
      st = gemm_grid(&cp, false, false, cp.ocg, cp.ohw, cp.kdim, cp.kdim, cp.ohw, cp.ohw, nb, 0.0,
                     &q);
  }
  pd_k_dev_free(col);
  return st;
}

pd_status pd_kcu_conv2d_bwd_data(pd_dtype dt, const pd_k_conv2d *p, const void *w,
                                 const void *dy, void *dx) {
  conv_plan cp;
  PD_KCU_TRY(pd_k_conv_begin(&cp, dt, p));
  if (p->n == 0) return PD_OK;
  pd_status st = pd_kcu_cudnn_conv2d_bwd_data(dt, p, w, dy, dx);
  if (st != PD_EUNSUPPORTED) return st; /* else cuBLAS + col2im */
  st = PD_OK;
  size_t col_bytes = cp.direct ? 0 : (size_t)(cp.rows * cp.ohw) * cp.sz;
  int64_t nb_max = chunk_images(p->n, col_bytes, p->n);
  void *col = NULL;
  if (!cp.direct && !(col = pd_kcu_scratch(col_bytes * (size_t)nb_max))) return PD_ENOMEM;
  for (int64_t n0 = 0; n0 < p->n && !st; n0 += nb_max) {
    int64_t nb = p->n - n0 < nb_max ? p->n - n0 : nb_max;
    void *dxb = AT(dx, n0 * cp.in_img, cp.sz);
    /* col[b, g] (kdim x ohw) = w[g]^T (kdim x ocg) @ dy[b, g] (ocg x ohw); a 1x1 convolution
     * writes dx directly (kdim = cg, ohw = h * w). */
    grid_gemm q = {w, AT(dy, n0 * cp.out_img, cp.sz), cp.direct ? dxb : col,
                   0, cp.ocg * cp.kdim,
                   cp.out_img, cp.ocg * cp.ohw,
                   cp.direct ? cp.in_img : cp.rows * cp.ohw, cp.kdim * cp.ohw};
    st = gemm_grid(&cp, true, false, cp.kdim, cp.ohw, cp.ocg, cp.kdim, cp.ohw, cp.ohw, nb, 0.0,
                   &q);
    if (!st && !cp.direct) {
      if (dt == PD_FP32)
        st = launch_col2im<float>(p, nb, col, cp.ohw, cp.rows * cp.ohw, dxb, cp.in_img, false);
      else
        st = launch_col2im<double>(p, nb, col, cp.ohw, cp.rows * cp.ohw, dxb, cp.in_img, false);
    }
  }
  pd_k_dev_free(col);
  return st;
}

pd_status pd_kcu_conv2d_bwd_filter(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                   const void *dy, void *dw) {
  conv_plan cp;
  PD_KCU_TRY(pd_k_conv_begin(&cp, dt, p));
  size_t wbytes = (size_t)(p->oc * cp.kdim) * cp.sz;
  if (p->n == 0) {
    PD_KCU_CUDA(cudaMemsetAsync(dw, 0, wbytes, pd_kcu_stream));
    return PD_OK;
  }
  pd_status st = pd_kcu_cudnn_conv2d_bwd_filter(dt, p, x, dy, dw);
  if (st != PD_EUNSUPPORTED) return st; /* else im2col + cuBLAS */
  st = PD_OK;
  /* A chunk of nb images: col [rows, nb * ohw] (image b's columns at b * ohw) and dy
   * transposed to [oc, nb * ohw]; then dw[g] (+)= dyT[g] (ocg x nb*ohw) @ col[g]^T, one GEMM
   * per group with the whole chunk as its inner dimension. */
  size_t per_image = (size_t)((cp.rows + p->oc) * cp.ohw) * cp.sz;
  int64_t nb_max = chunk_images(p->n, per_image, INT_MAX / cp.ohw);
  size_t col_bytes = pd_kcu_align((size_t)(cp.rows * cp.ohw * nb_max) * cp.sz);
  size_t dyt_bytes = nb_max > 1 ? (size_t)(p->oc * cp.ohw * nb_max) * cp.sz : 0;
  char *scratch = (char *)pd_kcu_scratch(col_bytes + dyt_bytes);
  if (!scratch) return PD_ENOMEM;
  void *col = scratch, *dyt = scratch + col_bytes;
  for (int64_t n0 = 0; n0 < p->n && !st; n0 += nb_max) {
    int64_t nb = p->n - n0 < nb_max ? p->n - n0 : nb_max, ld = nb * cp.ohw;
    const void *dyb = AT(dy, n0 * cp.out_img, cp.sz);
    st = im2col_chunk(&cp, p, nb, AT(x, n0 * cp.in_img, cp.sz), col, ld, cp.ohw);
    if (!st && nb > 1) {
      int64_t dims[3] = {nb, p->oc, cp.ohw};
      int perm[3] = {1, 0, 2};
      st = pd_kcu_permute(cp.sz, 3, dims, perm, dyb, dyt);
      dyb = dyt;
    }
    if (!st)
      st = pd_kcu_gemm_strided(dt, false, true, cp.g, cp.ocg, cp.kdim, ld, 1.0, dyb, ld,
                               cp.ocg * ld, col, ld, cp.kdim * ld, n0 == 0 ? 0.0 : 1.0, dw,
                               cp.kdim, cp.ocg * cp.kdim);
  }
  pd_k_dev_free(scratch);
  return st;
}

/* ---- Pooling ---- */

/* One thread per output element; the window's valid part in row-major order, as the CPU. */
template <typename T>
__global__ void pool_kernel(pd_k_pool2d p, const T *x, T *y) {
  int64_t ohw = p.oh * p.ow;
  PD_KCU_LOOP(t, p.n * p.c * ohw) {
    int64_t pl = t / ohw, q = t % ohw, oy = q / p.ow, ox = q % p.ow;
    const T *xp = x + pl * p.h * p.w;
    int64_t y0 = oy * p.stride_h - p.pad_top, y1 = y0 + p.kh;
    int64_t ys = y0 < 0 ? 0 : y0, ye = y1 > p.h ? p.h : y1;
    int64_t x0 = ox * p.stride_w - p.pad_left, x1 = x0 + p.kw;
    int64_t xs = x0 < 0 ? 0 : x0, xe = x1 > p.w ? p.w : x1;
    T acc;
    if (p.type == PD_K_POOL_MAX) {
      acc = xp[ys * p.w + xs];
      for (int64_t iy = ys; iy < ye; iy++)
        for (int64_t ix = xs; ix < xe; ix++)
          if (xp[iy * p.w + ix] > acc) acc = xp[iy * p.w + ix];
    } else {
      double s = 0;
      for (int64_t iy = ys; iy < ye; iy++)
        for (int64_t ix = xs; ix < xe; ix++) s += xp[iy * p.w + ix];
      int64_t count = p.exclusive ? (ye - ys) * (xe - xs) : p.kh * p.kw;
      acc = (T)(s / (double)count);
    }
    y[t] = acc;
  }
}

/* Floor division for a possibly negative numerator (d > 0). */
__device__ __forceinline__ int64_t floor_div(int64_t a, int64_t d) {
  return a >= 0 ? a / d : -((-a + d - 1) / d);
}

/* One thread per input element: it visits the windows that contain it in the CPU's order
 * (oy, then ox) and adds their share: avg, dy / count; max, dy when it is the window's first
 * element (row-major) equal to the window's max. */
template <typename T>
__global__ void pool_grad_kernel(pd_k_pool2d p, const T *x, const T *y, const T *dy, T *dx) {
  int64_t hw = p.h * p.w, ohw = p.oh * p.ow;
  PD_KCU_LOOP(t, p.n * p.c * hw) {
    int64_t pl = t / hw, e = t % hw, iy = e / p.w, ix = e % p.w;
    const T *xp = x + pl * hw, *yp = y + pl * ohw, *gp = dy + pl * ohw;
    /* Windows oy with oy * sh - pt <= iy < oy * sh - pt + kh. */
    int64_t oy0 = floor_div(iy + p.pad_top - p.kh, p.stride_h) + 1;
    int64_t oy1 = floor_div(iy + p.pad_top, p.stride_h);
    int64_t ox0 = floor_div(ix + p.pad_left - p.kw, p.stride_w) + 1;
    int64_t ox1 = floor_div(ix + p.pad_left, p.stride_w);
    if (oy0 < 0) oy0 = 0;
    if (ox0 < 0) ox0 = 0;
    if (oy1 > p.oh - 1) oy1 = p.oh - 1;
    if (ox1 > p.ow - 1) ox1 = p.ow - 1;
    T acc = (T)0;
    for (int64_t oy = oy0; oy <= oy1; oy++) {
      int64_t y0 = oy * p.stride_h - p.pad_top, y1 = y0 + p.kh;
      int64_t ys = y0 < 0 ? 0 : y0, ye = y1 > p.h ? p.h : y1;
      for (int64_t ox = ox0; ox <= ox1; ox++) {
        int64_t x0 = ox * p.stride_w - p.pad_left, x1 = x0 + p.kw;
        int64_t xs = x0 < 0 ? 0 : x0, xe = x1 > p.w ? p.w : x1;
        T g = gp[oy * p.ow + ox];
        if (p.type == PD_K_POOL_MAX) {
          T m = yp[oy * p.ow + ox];
          if (!(xp[e] == m)) continue;
          bool earlier = false;  /* an element before this one in the window equals m */
          for (int64_t py = ys; py <= iy && !earlier; py++) {
            int64_t pe = py == iy ? ix : xe;
            for (int64_t px = xs; px < pe; px++)
              if (xp[py * p.w + px] == m) {
                earlier = true;
                break;
              }
          }
          if (!earlier) acc += g;
        } else {
          int64_t count = p.exclusive ? (ye - ys) * (xe - xs) : p.kh * p.kw;
          acc += g / (T)count;
        }
      }
    }
    dx[t] = acc;
  }
}

pd_status pd_kcu_pool2d(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y) {
  PD_KCU_TRY(pd_k_pool2d_check(dt, p));
  int64_t total = p->n * p->c * p->oh * p->ow;
  if (total == 0) return PD_OK;
  unsigned nb = pd_kcu_blocks(total);
  if (dt == PD_FP32)
    pool_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(*p, (const float *)x, (float *)y);
  else
    pool_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(*p, (const double *)x,
                                                                 (double *)y);
  PD_KCU_LAUNCHED("pool2d kernel");
  return PD_OK;
}

pd_status pd_kcu_pool2d_grad(pd_dtype dt, const pd_k_pool2d *p, const void *x, const void *y,
                             const void *dy, void *dx) {
  PD_KCU_TRY(pd_k_pool2d_check(dt, p));
  int64_t total = p->n * p->c * p->h * p->w;
  if (total == 0) return PD_OK;
  unsigned nb = pd_kcu_blocks(total);
  if (dt == PD_FP32)
    pool_grad_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const float *)x, (const float *)y, (const float *)dy, (float *)dx);
  else
    pool_grad_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        *p, (const double *)x, (const double *)y, (const double *)dy, (double *)dx);
  PD_KCU_LAUNCHED("pool2d_grad kernel");
  return PD_OK;
}
