/* conv.c -- 2-d convolution (NCHW) as im2col + GEMM per image and group, its data and filter
 * gradients (GEMM + col2im), and max/avg pooling with its gradient. A 1x1 convolution with unit
 * stride and no padding skips im2col: the image already is the column matrix. */
#include "config.h"
#include "kernels/cpu/cpu.h"

#include <string.h>

typedef struct pool_job {
  const pd_k_pool2d *p;
  const void *x, *y, *dy;
  void *dx;
} pool_job;

#define T float
#define TN f32
#include "kernels/cpu/conv_t.h"
#define T double
#define TN f64
#include "kernels/cpu/conv_t.h"

static pd_status im2col_dir(pd_dtype dt, const pd_k_conv2d *p, void *img, void *col,
                            bool to_col) {
  pd_k_conv2d q = *p;
  if (pd_k_conv2d_setup(&q) || q.oh != p->oh || q.ow != p->ow) return PD_EINVAL;
  switch (dt) {
    case PD_FP32: im2col_dir_f32(p, img, col, to_col); return PD_OK;
    case PD_FP64: im2col_dir_f64(p, img, col, to_col); return PD_OK;
    default: return PD_EUNSUPPORTED;
  }
}

pd_status pd_kcpu_im2col(pd_dtype dt, const pd_k_conv2d *p, const void *img, void *col) {
  return im2col_dir(dt, p, (void *)img, col, true);  /* img is only read in this direction */
}

pd_status pd_kcpu_col2im(pd_dtype dt, const pd_k_conv2d *p, const void *col, void *img) {
  return im2col_dir(dt, p, img, (void *)col, false);  /* col is only read in this direction */
}

/* Sizes of one image's GEMMs, and the column scratch buffer (NULL for a 1x1 convolution). */
typedef struct conv_plan {
  size_t sz;                      /* element size */
  int64_t g, cg, ocg, kdim, ohw;  /* groups, channels and filters per group, c/g*kh*kw, oh*ow */
  bool direct;                    /* 1x1, stride 1, no padding: col = the image itself */
  void *col;
} conv_plan;

static pd_status conv_begin(conv_plan *cp, pd_dtype dt, const pd_k_conv2d *p) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  pd_k_conv2d q = *p;
  if (pd_k_conv2d_setup(&q) || q.oh != p->oh || q.ow != p->ow) return PD_EINVAL;
  cp->sz = pd_dtype_size(dt);
  cp->g = p->groups;
  cp->cg = p->c / p->groups;
  cp->ocg = p->oc / p->groups;
  cp->kdim = cp->cg * p->kh * p->kw;
  cp->ohw = p->oh * p->ow;
  cp->direct = p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 &&
               p->pad_top == 0 && p->pad_bottom == 0 && p->pad_left == 0 && p->pad_right == 0;
  cp->col = NULL;
  if (!cp->direct && p->n > 0) {
    int64_t dims[] = {p->c * p->kh * p->kw, cp->ohw};
    cp->col = pd_k_host_alloc((size_t)pd_k_numel(2, dims) * cp->sz);
    if (!cp->col) return PD_ENOMEM;
  }
  return PD_OK;
}

/* Byte offset of element i. */
#define AT(ptr, i, sz) ((char *)(ptr) + (i) * (int64_t)(sz))

pd_status pd_kcpu_conv2d(pd_dtype dt, const pd_k_conv2d *p, const void *x, const void *w,
                         void *y) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p);
  if (st) return st;
  for (int64_t n = 0; n < p->n && !st; n++) {
    const void *xn = AT(x, n * p->c * p->h * p->w, cp.sz);
    const void *col = xn;
    if (!cp.direct) {
      pd_kcpu_im2col(dt, p, xn, cp.col);
      col = cp.col;
    }
    for (int64_t g = 0; g < cp.g && !st; g++) {  /* y[g] = w[g] (ocg x kdim) @ col[g] */
      st = pd_kcpu_gemm(dt, false, false, cp.ocg, cp.ohw, cp.kdim, 1.0,
                        AT(w, g * cp.ocg * cp.kdim, cp.sz), cp.kdim,
                        AT(col, g * cp.kdim * cp.ohw, cp.sz), cp.ohw, 0.0,
                        AT(y, (n * p->oc + g * cp.ocg) * cp.ohw, cp.sz), cp.ohw);
    }
  }
  pd_k_host_free(cp.col);
  return st;  /* a GEMM too large for BLAS's int sizes: PD_EINVAL */
}

pd_status pd_kcpu_conv2d_bwd_data(pd_dtype dt, const pd_k_conv2d *p, const void *w,
                                  const void *dy, void *dx) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p);
  if (st) return st;
  for (int64_t n = 0; n < p->n && !st; n++) {
    void *dxn = AT(dx, n * p->c * p->h * p->w, cp.sz);
    void *col = cp.direct ? dxn : cp.col;
    for (int64_t g = 0; g < cp.g && !st; g++) {  /* col[g] = w[g]^T @ dy[g] */
      st = pd_kcpu_gemm(dt, true, false, cp.kdim, cp.ohw, cp.ocg, 1.0,
                        AT(w, g * cp.ocg * cp.kdim, cp.sz), cp.kdim,
                        AT(dy, (n * p->oc + g * cp.ocg) * cp.ohw, cp.sz), cp.ohw, 0.0,
                        AT(col, g * cp.kdim * cp.ohw, cp.sz), cp.ohw);
    }
    if (!cp.direct && !st) {
      memset(dxn, 0, (size_t)(p->c * p->h * p->w) * cp.sz);
      pd_kcpu_col2im(dt, p, cp.col, dxn);
    }
  }
  pd_k_host_free(cp.col);
  return st;  /* a GEMM too large for BLAS's int sizes: PD_EINVAL */
}

pd_status pd_kcpu_conv2d_bwd_filter(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                    const void *dy, void *dw) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p);
  if (st) return st;
  if (p->n == 0) memset(dw, 0, (size_t)(p->oc * cp.kdim) * cp.sz);
  for (int64_t n = 0; n < p->n && !st; n++) {
    const void *xn = AT(x, n * p->c * p->h * p->w, cp.sz);
    const void *col = xn;
    if (!cp.direct) {
      pd_kcpu_im2col(dt, p, xn, cp.col);
      col = cp.col;
    }
    for (int64_t g = 0; g < cp.g && !st; g++) {  /* dw[g] += dy[g] @ col[g]^T */
      st = pd_kcpu_gemm(dt, false, true, cp.ocg, cp.kdim, cp.ohw, 1.0,
                        AT(dy, (n * p->oc + g * cp.ocg) * cp.ohw, cp.sz), cp.ohw,
                        AT(col, g * cp.kdim * cp.ohw, cp.sz), cp.ohw, n == 0 ? 0.0 : 1.0,
                        AT(dw, g * cp.ocg * cp.kdim, cp.sz), cp.kdim);
    }
  }
  pd_k_host_free(cp.col);
  return st;  /* a GEMM too large for BLAS's int sizes: PD_EINVAL */
}

static pd_status pool_check(pd_dtype dt, const pd_k_pool2d *p) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  pd_k_pool2d q = *p;
  if (pd_k_pool2d_setup(&q) || q.oh != p->oh || q.ow != p->ow) return PD_EINVAL;
  return PD_OK;
}

/* Planes per thread so that each gets about a grain of window reads. */
static int64_t pool_grain(const pd_k_pool2d *p) {
  int64_t cost = p->oh * p->ow * p->kh * p->kw;
  return cost >= PD_KCPU_GRAIN ? 1 : PD_KCPU_GRAIN / (cost > 0 ? cost : 1);
}

pd_status pd_kcpu_pool2d(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y) {
  pd_status st = pool_check(dt, p);
  if (st) return st;
  pool_job job = {.p = p, .x = x, .y = y};
  pd_kcpu_parallel(p->n * p->c, pool_grain(p), dt == PD_FP32 ? pool_range_f32 : pool_range_f64,
                   &job);
  return PD_OK;
}

pd_status pd_kcpu_pool2d_grad(pd_dtype dt, const pd_k_pool2d *p, const void *x, const void *y,
                              const void *dy, void *dx) {
  pd_status st = pool_check(dt, p);
  if (st) return st;
  pool_job job = {.p = p, .x = x, .y = y, .dy = dy, .dx = dx};
  pd_kcpu_parallel(p->n * p->c, pool_grain(p),
                   dt == PD_FP32 ? pool_grad_range_f32 : pool_grad_range_f64, &job);
  return PD_OK;
}
