/* conv.c -- 2-d convolution (NCHW) as im2col + GEMM per image and group, its data and filter
 * gradients (GEMM + col2im), and max/avg pooling with its gradient (2x2 max pooling's fp32
 * gradient eight windows at a time on AVX2 CPUs). A 1x1 convolution with unit stride and no
 * padding skips im2col: the image already is the column matrix. Images are split across the
 * thread pool (cpu.h); a forward pass of fewer images than threads splits each image's output
 * columns instead; a depthwise forward pass (a filter per channel) is computed directly, its
 * output planes split across the pool (in fp32 on AVX-512 CPUs by conv_avx512.c). The fused
 * forward pass (conv2d_fused) adds the bias and residual and applies the activation to each
 * block of the output right after the thread computing it wrote it. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels_int.h"

#include <string.h>
#if PD_KCPU_HAVE_AVX2
#include <immintrin.h>
#endif

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
  pd_status st = pd_k_conv2d_check(p);
  if (st) return st;
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

/* ---- Convolutions: per image, im2col into a column matrix then one GEMM per group (col2im
 * after the GEMM for the data gradient). The images are split across the
 * pool's threads (cpu.h), each with its own column buffer and one-thread GEMMs: LeNet's GEMMs
 * ([6 x 25] x [25 x 784] per image) are far too small to split inside. The filter gradient sums
 * over images: the images are cut into a fixed number of chunks (CONV_CHUNKS at most), each
 * summed into its own buffer, and the chunks are added in order, so the result does not depend
 * on the number of threads. ---- */
#define CONV_CHUNKS 8
#define CONV_MIN_WORK ((int64_t)1 << 18)  /* multiply-adds below which one thread does it all */

/* The sizes of one image's GEMMs (kernels_int.h), and how the CPU splits the images. */
typedef struct conv_plan {
  pd_k_conv_plan k;
  size_t col_bytes;               /* one column matrix; 0 for a 1x1 convolution */
  int nt;                         /* threads */
} conv_plan;

static pd_status conv_begin(conv_plan *cp, pd_dtype dt, const pd_k_conv2d *p) {
  pd_status st = pd_k_conv_begin(&cp->k, dt, p);
  if (st) return st;
  cp->col_bytes = cp->k.direct ? 0 : (size_t)(cp->k.rows * cp->k.ohw) * cp->k.sz;
  cp->nt = pd_kcpu_blas_team();
  if (cp->nt > p->n) cp->nt = (int)p->n;
  if (p->n * cp->k.out_img * cp->k.kdim < CONV_MIN_WORK) cp->nt = 1;
  if (cp->nt < 1) cp->nt = 1;
  return PD_OK;
}

/* The smallest of an image's product sizes (filters per group, terms, output pixels) that
 * mixed precision multiplies in low precision: below a tile's 16 rows AMX's packing does not
 * pay (LeNet's first layer, 6 filters of 25 terms, batch 64, 2 threads: forward 0.33 ms in fp32
 * against 0.37 in bf16, filter gradient 0.29 against 0.45; its second, 16 filters of 150
 * terms: 0.70 against 0.65, 1.01 against 0.71), and LeNet trained 0.83 times as fast. */
#define CONV_LP_MIN 16

/* The convolution's products: the fp32/fp64 GEMM, or under mixed precision (p->lp) gemm_lp
 * when every size of the image's product is at least CONV_LP_MIN (each call one thread's: it
 * splits nothing inside a part). */
static void conv_gemm(const pd_k_conv2d *p, const pd_k_conv_plan *kp, pd_dtype dt, bool ta,
                      bool tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                      const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
  if (dt == PD_FP32 && (p->lp == PD_BF16 || p->lp == PD_FP16) && kp->ocg >= CONV_LP_MIN &&
      kp->kdim >= CONV_LP_MIN && kp->ohw >= CONV_LP_MIN)
    pd_kcpu_gemm_lp(p->lp, ta, tb, 1, m, n, k, 1.0, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, NULL);
  else
    pd_kcpu_gemm(dt, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

/* Byte offset of element i. */
#define AT(ptr, i, sz) ((char *)(ptr) + (i) * (int64_t)(sz))

typedef struct conv_job {
  pd_dtype dt;
  const pd_k_conv2d *p;
  const conv_plan *cp;
  const pd_k_conv_epilogue *ep; /* forward: what follows the product (NULL: nothing) */
  const void *x, *w, *dy;
  void *y, *dx, *dw;
  char *cols;              /* one column matrix per thread */
  void *part[CONV_CHUNKS]; /* filter gradient: each chunk's sum (part[0] = dw) */
  int64_t nchunks;
} conv_job;

/* Images [*b, *e) of thread t among nt. */
static void image_range(int64_t n, int t, int nt, int64_t *b, int64_t *e) {
  *b = n * t / nt;
  *e = n * (t + 1) / nt;
}

/* The epilogue (kernels.h) on channels [c0, c1) of image n of y, columns [j0, j1) of each
 * plane: bias and residual added a row at a time, then the activation over the block in one
 * call where its rows are whole planes (they are then contiguous), else a call a row. It runs on
 * the thread that just wrote the block, while it is in its cache. */
/* The piecewise-linear activations in the loop that adds the bias and the residual, fp32: one
 * pass over the block instead of two. The same formulas as act_t.h's and elementwise_t.h's
 * (the same bits). */
enum { EPI_NONE, EPI_RELU, EPI_RELU6, EPI_LEAKY, EPI_HSWISH, EPI_HSIGMOID, EPI_OTHER };

static int epi_inline(const pd_k_conv_epilogue *ep) {
  if (ep->kind == PD_K_EPI_NONE) return EPI_NONE;
  if (ep->kind == PD_K_EPI_UNOP) return ep->unop == PD_K_RELU ? EPI_RELU : EPI_OTHER;
  switch (ep->act) {
    case PD_K_RELU6: return EPI_RELU6;
    case PD_K_LEAKY_RELU: return EPI_LEAKY;
    case PD_K_HARD_SWISH: return EPI_HSWISH;
    case PD_K_HARD_SIGMOID: return EPI_HSIGMOID;
    default: return EPI_OTHER;
  }
}

#define EPI_LOOP(F)                                                           \
  do {                                                                       \
    if (q) {                                                                 \
      PD_SIMD for (int64_t j = 0; j < len; j++) {                            \
        float x = r[j] + b + q[j];                                           \
        r[j] = (F);                                                          \
      }                                                                      \
    } else {                                                                 \
      PD_SIMD for (int64_t j = 0; j < len; j++) {                            \
        float x = r[j] + b;                                                  \
        r[j] = (F);                                                          \
      }                                                                      \
    }                                                                        \
  } while (0)

static void epi_row_f32(int code, const float pp[3], float *restrict r, float b,
                        const float *restrict q, int64_t len) {
  const float p0 = pp[0], p1 = pp[1], p2 = pp[2];
  switch (code) {
    case EPI_RELU: EPI_LOOP(x < 0 ? 0.0f : x); break;
    case EPI_RELU6: EPI_LOOP(x < 0 ? 0.0f : x > p0 ? p0 : x); break;
    case EPI_LEAKY: EPI_LOOP(x > 0 ? x : p0 * x); break;
    case EPI_HSWISH: EPI_LOOP(x * (x + p2 < 0 ? 0.0f : x + p2 > p0 ? p0 : x + p2) / p1); break;
    case EPI_HSIGMOID:
      EPI_LOOP(p0 * x + p1 < 0 ? 0.0f : p0 * x + p1 > 1 ? 1.0f : p0 * x + p1);
      break;
    default: EPI_LOOP(x); break;
  }
}
#undef EPI_LOOP

static void epilogue(pd_dtype dt, const pd_k_conv2d *p, const pd_k_conv_epilogue *ep, void *y,
                     int64_t n, int64_t c0, int64_t c1, int64_t j0, int64_t j1) {
  if (!ep || c1 <= c0 || j1 <= j0) return;
  int64_t ohw = p->oh * p->ow, len = j1 - j0;
  size_t sz = pd_dtype_size(dt);
  int code = epi_inline(ep);
  if (dt == PD_FP32 && code != EPI_OTHER) {
    const float pp[3] = {(float)ep->p[0], (float)ep->p[1], (float)ep->p[2]};
    for (int64_t c = c0; c < c1; c++) {
      int64_t at = (n * p->oc + c) * ohw + j0;
      epi_row_f32(code, pp, (float *)y + at, ep->bias ? ((const float *)ep->bias)[c] : 0.0f,
                  ep->residual ? (const float *)ep->residual + at : NULL, len);
    }
    return;
  }
  for (int64_t c = c0; c < c1; c++) {
    int64_t at = (n * p->oc + c) * ohw + j0;
    if (dt == PD_FP32) {
      float *r = (float *)y + at;
      if (ep->bias) {
        float b = ((const float *)ep->bias)[c];
        PD_SIMD for (int64_t j = 0; j < len; j++) r[j] += b;
      }
      if (ep->residual) {
        const float *q = (const float *)ep->residual + at;
        PD_SIMD for (int64_t j = 0; j < len; j++) r[j] += q[j];
      }
    } else {
      double *r = (double *)y + at;
      if (ep->bias) {
        double b = ((const double *)ep->bias)[c];
        PD_SIMD for (int64_t j = 0; j < len; j++) r[j] += b;
      }
      if (ep->residual) {
        const double *q = (const double *)ep->residual + at;
        PD_SIMD for (int64_t j = 0; j < len; j++) r[j] += q[j];
      }
    }
  }
  if (ep->kind == PD_K_EPI_NONE) return;
  bool whole = len == ohw;
  for (int64_t c = c0; c < c1; c += whole ? c1 - c0 : 1) {
    void *r = (char *)y + (size_t)((n * p->oc + c) * ohw + j0) * sz;
    int64_t cnt = whole ? (c1 - c0) * ohw : len;
    /* checked by pd_k_conv_epilogue_check: these cannot fail */
    if (ep->kind == PD_K_EPI_UNOP) (void)pd_kcpu_unary(ep->unop, dt, cnt, r, r);
    else (void)pd_kcpu_act(ep->act, dt, cnt, ep->p, r, r);
  }
}

/* y[n] = w @ im2col(x[n]), per group. */
static void conv_fwd_part(void *vjob, int t, int nt) {
  const conv_job *j = vjob;
  const pd_k_conv2d *p = j->p;
  const conv_plan *cp = j->cp;
  const pd_k_conv_plan *kp = &cp->k;
  void *colbuf = j->cols + (size_t)t * cp->col_bytes;
  int64_t b, e;
  image_range(p->n, t, nt, &b, &e);
  for (int64_t n = b; n < e; n++) {
    const void *xn = AT(j->x, n * kp->in_img, kp->sz), *col = xn;
    if (!kp->direct) {
      pd_kcpu_im2col(j->dt, p, xn, colbuf);
      col = colbuf;
    }
    for (int64_t g = 0; g < kp->g; g++)  /* y[g] = w[g] (ocg x kdim) @ col[g] */
      conv_gemm(p, kp, j->dt, false, false, kp->ocg, kp->ohw, kp->kdim,
                   AT(j->w, g * kp->ocg * kp->kdim, kp->sz), kp->kdim,
                   AT(col, g * kp->kdim * kp->ohw, kp->sz), kp->ohw, 0.0,
                   AT(j->y, n * kp->out_img + g * kp->ocg * kp->ohw, kp->sz), kp->ohw);
    epilogue(j->dt, p, j->ep, j->y, n, 0, p->oc, 0, kp->ohw);
  }
}

/* dx[n] = col2im(w^T @ dy[n]), per group. */
static void conv_bwd_data_part(void *vjob, int t, int nt) {
  const conv_job *j = vjob;
  const pd_k_conv2d *p = j->p;
  const conv_plan *cp = j->cp;
  const pd_k_conv_plan *kp = &cp->k;
  void *colbuf = j->cols + (size_t)t * cp->col_bytes;
  int64_t b, e;
  image_range(p->n, t, nt, &b, &e);
  for (int64_t n = b; n < e; n++) {
    void *dxn = AT(j->dx, n * kp->in_img, kp->sz);
    void *col = kp->direct ? dxn : colbuf;
    for (int64_t g = 0; g < kp->g; g++)  /* col[g] = w[g]^T @ dy[g] */
      conv_gemm(p, kp, j->dt, true, false, kp->kdim, kp->ohw, kp->ocg,
                   AT(j->w, g * kp->ocg * kp->kdim, kp->sz), kp->kdim,
                   AT(j->dy, n * kp->out_img + g * kp->ocg * kp->ohw, kp->sz), kp->ohw, 0.0,
                   AT(col, g * kp->kdim * kp->ohw, kp->sz), kp->ohw);
    if (!kp->direct) {
      memset(dxn, 0, (size_t)kp->in_img * kp->sz);
      pd_kcpu_col2im(j->dt, p, colbuf, dxn);
    }
  }
}

/* part[c] = sum over the images of chunk c of dy[n] @ im2col(x[n])^T, per group; the chunks
 * are dealt to the threads in contiguous runs. */
static void conv_bwd_filter_part(void *vjob, int t, int nt) {
  const conv_job *j = vjob;
  const pd_k_conv2d *p = j->p;
  const conv_plan *cp = j->cp;
  const pd_k_conv_plan *kp = &cp->k;
  void *colbuf = j->cols + (size_t)t * cp->col_bytes;
  int64_t cb, ce;
  image_range(j->nchunks, t, nt, &cb, &ce);
  for (int64_t c = cb; c < ce; c++) {
    int64_t b, e;
    image_range(p->n, (int)c, (int)j->nchunks, &b, &e);
    for (int64_t n = b; n < e; n++) {
      const void *xn = AT(j->x, n * kp->in_img, kp->sz), *col = xn;
      if (!kp->direct) {
        pd_kcpu_im2col(j->dt, p, xn, colbuf);
        col = colbuf;
      }
      for (int64_t g = 0; g < kp->g; g++)  /* part[g] (+)= dy[g] @ col[g]^T */
        conv_gemm(p, kp, j->dt, false, true, kp->ocg, kp->kdim, kp->ohw,
                     AT(j->dy, n * kp->out_img + g * kp->ocg * kp->ohw, kp->sz), kp->ohw,
                     AT(col, g * kp->kdim * kp->ohw, kp->sz), kp->ohw, n == b ? 0.0 : 1.0,
                     AT(j->part[c], g * kp->ocg * kp->kdim, kp->sz), kp->kdim);
    }
  }
}

/* Run one of the parts above with a column buffer per thread. */
static pd_status conv_run(conv_job *j, pd_kcpu_team_fn *fn) {
  const conv_plan *cp = j->cp;
  j->cols = NULL;
  if (cp->col_bytes && !(j->cols = pd_k_host_alloc(cp->col_bytes * (size_t)cp->nt)))
    return PD_ENOMEM;
  pd_kcpu_team(cp->nt, fn, j);
  pd_k_host_free(j->cols);
  return PD_OK;
}

/* y = w @ col for one image (col: its column matrix, or the image of a direct convolution),
 * the output columns cut into one range per part: a batch smaller than the pool still uses
 * every thread. */
typedef struct cols_job {
  const conv_job *j;
  const void *col;
  int64_t n;
} cols_job;

static void conv_cols_part(void *vjob, int t, int nt) {
  const cols_job *c = vjob;
  const pd_k_conv_plan *kp = &c->j->cp->k;
  int64_t b, e;
  image_range(kp->ohw, t, nt, &b, &e);
  for (int64_t g = 0; g < kp->g && e > b; g++)
    conv_gemm(c->j->p, kp, c->j->dt, false, false, kp->ocg, e - b, kp->kdim,
                 AT(c->j->w, g * kp->ocg * kp->kdim, kp->sz), kp->kdim,
                 AT(c->col, g * kp->kdim * kp->ohw + b, kp->sz), kp->ohw, 0.0,
                 AT(c->j->y, c->n * kp->out_img + g * kp->ocg * kp->ohw + b, kp->sz), kp->ohw);
  epilogue(c->j->dt, c->j->p, c->j->ep, c->j->y, c->n, 0, c->j->p->oc, b, e);
}

typedef struct dw_job {
  pd_dtype dt;
  const pd_k_conv2d *p;
  const pd_k_conv_epilogue *ep;
  const void *x, *w;
  void *y;
  bool avx512;          /* pd_kcpu_depthwise16_f32 computes the planes */
  size_t scratch;       /* its padded plane, in floats */
} dw_job;

/* Planes [b, e) of the n * oc, each with its epilogue (whose channel is the plane's). */
static void depthwise_range(void *vjob, int64_t b, int64_t e) {
  const dw_job *j = vjob;
  const pd_k_conv2d *p = j->p;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  float *pad = j->avx512 ? pd_k_host_alloc(j->scratch * sizeof(float)) : NULL;
  if (pad) {
    for (int64_t pl = b; pl < e; pl++) {
      pd_kcpu_depthwise16_f32(p, j->x, j->w, pl, pad, j->y);
      epilogue(j->dt, p, j->ep, j->y, pl / p->oc, pl % p->oc, pl % p->oc + 1, 0, p->oh * p->ow);
    }
    pd_k_host_free(pad);
    return;
  }
#endif
  for (int64_t pl = b; pl < e; pl++) {
    if (j->dt == PD_FP32) depthwise_planes_f32(p, j->x, j->w, j->y, pl, pl + 1);
    else depthwise_planes_f64(p, j->x, j->w, j->y, pl, pl + 1);
    epilogue(j->dt, p, j->ep, j->y, pl / p->oc, pl % p->oc, pl % p->oc + 1, 0, p->oh * p->ow);
  }
}

pd_status pd_kcpu_conv2d(pd_dtype dt, const pd_k_conv2d *p, const void *x, const void *w,
                         void *y) {
  return pd_kcpu_conv2d_fused(dt, p, x, w, NULL, y);
}

pd_status pd_kcpu_conv2d_fused(pd_dtype dt, const pd_k_conv2d *p, const void *x, const void *w,
                               const pd_k_conv_epilogue *ep, void *y) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p);
  if (!st) st = pd_k_conv_epilogue_check(dt, ep);
  if (st || p->n == 0) return st;
  if (ep && !ep->bias && !ep->residual && ep->kind == PD_K_EPI_NONE) ep = NULL;
  if (p->groups == p->c && p->groups > 1) { /* depthwise: direct, plane by plane */
    dw_job d = {.dt = dt, .p = p, .ep = ep, .x = x, .w = w, .y = y};
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
    d.avx512 = dt == PD_FP32 && pd_kcpu_simd() == PD_KCPU_SIMD_AVX512 &&
               pd_kcpu_depthwise16_scratch(p, &d.scratch);
#endif
    int64_t per = p->oh * p->ow * p->kh * p->kw;
    pd_kcpu_parallel(p->n * p->oc, per > 0 ? ((int64_t)1 << 15) / per + 1 : 1, depthwise_range,
                     &d);
    return PD_OK;
  }
  conv_job j = {.dt = dt, .p = p, .cp = &cp, .ep = ep, .x = x, .w = w, .y = y};
  int nt = pd_kcpu_blas_team();
  if (p->n >= nt || nt < 2 || p->n * cp.k.out_img * cp.k.kdim < CONV_MIN_WORK)
    return conv_run(&j, conv_fwd_part);
  /* fewer images than threads: each image's columns split across the threads */
  void *col = cp.col_bytes ? pd_k_host_alloc(cp.col_bytes) : NULL;
  if (cp.col_bytes && !col) return PD_ENOMEM;
  for (int64_t n = 0; n < p->n; n++) {
    const void *xn = AT(x, n * cp.k.in_img, cp.k.sz);
    if (col) pd_kcpu_im2col(dt, p, xn, col);
    cols_job c = {.j = &j, .col = col ? col : xn, .n = n};
    pd_kcpu_team(nt, conv_cols_part, &c);
  }
  pd_k_host_free(col);
  return PD_OK;
}

pd_status pd_kcpu_conv2d_bwd_data(pd_dtype dt, const pd_k_conv2d *p, const void *w,
                                  const void *dy, void *dx) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p);
  if (st || p->n == 0) return st;
  conv_job j = {.dt = dt, .p = p, .cp = &cp, .w = w, .dy = dy, .dx = dx};
  return conv_run(&j, conv_bwd_data_part);
}

pd_status pd_kcpu_conv2d_bwd_filter(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                    const void *dy, void *dw) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p);
  if (st) return st;
  size_t wbytes = (size_t)(p->oc * cp.k.kdim) * cp.k.sz;
  if (p->n == 0) {
    memset(dw, 0, wbytes);
    return PD_OK;
  }
  conv_job j = {.dt = dt, .p = p, .cp = &cp, .x = x, .dy = dy, .dw = dw};
  j.nchunks = p->n < CONV_CHUNKS ? p->n : CONV_CHUNKS;
  if (cp.nt > j.nchunks) cp.nt = (int)j.nchunks;
  char *parts = NULL;
  if (j.nchunks > 1 && !(parts = pd_k_host_alloc(wbytes * (size_t)(j.nchunks - 1))))
    return PD_ENOMEM;
  j.part[0] = dw;
  for (int64_t c = 1; c < j.nchunks; c++) j.part[c] = parts + (size_t)(c - 1) * wbytes;
  st = conv_run(&j, conv_bwd_filter_part);
  if (!st) {  /* dw = part[0] + part[1] + ... in chunk order */
    int64_t nw = p->oc * cp.k.kdim;
    for (int64_t c = 1; c < j.nchunks; c++) {
      if (dt == PD_FP32) {
        float *d = dw;
        const float *s = j.part[c];
        PD_SIMD for (int64_t i = 0; i < nw; i++) d[i] += s[i];
      } else {
        double *d = dw;
        const double *s = j.part[c];
        PD_SIMD for (int64_t i = 0; i < nw; i++) d[i] += s[i];
      }
    }
  }
  pd_k_host_free(parts);
  return st;
}

/* Planes per thread so that each gets about a grain of window reads. */
static int64_t pool_grain(const pd_k_pool2d *p) {
  int64_t cost = p->oh * p->ow * p->kh * p->kw;
  return cost >= PD_KCPU_GRAIN ? 1 : PD_KCPU_GRAIN / (cost > 0 ? cost : 1);
}

pd_status pd_kcpu_pool2d(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y) {
  pd_status st = pd_k_pool2d_check(dt, p);
  if (st) return st;
  pool_job job = {.p = p, .x = x, .y = y};
  pd_kcpu_parallel(p->n * p->c, pool_grain(p), dt == PD_FP32 ? pool_range_f32 : pool_range_f64,
                   &job);
  return PD_OK;
}

#if PD_KCPU_HAVE_AVX2
#define AVX2 __attribute__((target("avx2")))

/* The even and the odd elements of a, b (16 consecutive floats) in order: shuffle_ps works
 * within 128-bit lanes ([a0 a2 b0 b2 | a4 a6 b4 b6]), then the 64-bit quarters are reordered
 * ([a0 a2 a4 a6 b0 b2 b4 b6]). */
static inline __attribute__((always_inline)) AVX2 __m256 pool_evens(__m256 a, __m256 b) {
  __m256d v = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(v, 0xd8));
}

static inline __attribute__((always_inline)) AVX2 __m256 pool_odds(__m256 a, __m256 b) {
  __m256d v = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(v, 0xd8));
}

/* Eight windows' values of row pair r0, r1 from their first columns: each window's four
 * elements in four vectors (top-left, top-right, bottom-left, bottom-right). */
static inline __attribute__((always_inline)) AVX2 void pool_windows8(const float *r0,
                                                                      const float *r1,
                                                                      __m256 q[4]) {
  __m256 a = _mm256_loadu_ps(r0), b = _mm256_loadu_ps(r0 + 8);
  __m256 c = _mm256_loadu_ps(r1), d = _mm256_loadu_ps(r1 + 8);
  q[0] = pool_evens(a, b);
  q[1] = pool_odds(a, b);
  q[2] = pool_evens(c, d);
  q[3] = pool_odds(c, d);
}

/* Sixteen columns of a row from the left and right elements of eight windows. */
static inline __attribute__((always_inline)) AVX2 void pool_store16(float *d, __m256 l,
                                                                     __m256 r) {
  __m256 lo = _mm256_unpacklo_ps(l, r), hi = _mm256_unpackhi_ps(l, r);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(lo, hi, 0x20));
  _mm256_storeu_ps(d + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* conv_t.h's pool_grad_2x2 for fp32, eight windows at a time (the same comparisons: each
 * window's gradient to its first element equal to its max, in the order top-left, top-right,
 * bottom-left, bottom-right; every other element 0), the last windows of a row as there. */
static AVX2 void pool_grad_2x2_avx2(const pd_k_pool2d *p, const float *x, const float *y,
                                    const float *dy, float *dx) {
  int64_t w = p->w;
  for (int64_t oy = 0; oy < p->oh; oy++) {
    const float *r0 = x + 2 * oy * w, *r1 = r0 + w;
    float *d0 = dx + 2 * oy * w, *d1 = d0 + w;
    const float *m = y + oy * p->ow, *g = dy + oy * p->ow;
    int64_t ox = 0;
    for (; ox + 8 <= p->ow; ox += 8) {
      __m256 q[4], mx = _mm256_loadu_ps(m + ox), gx = _mm256_loadu_ps(g + ox);
      pool_windows8(r0 + 2 * ox, r1 + 2 * ox, q);
      __m256 a = _mm256_cmp_ps(q[0], mx, _CMP_EQ_OQ);
      __m256 taken = a;
      __m256 b = _mm256_andnot_ps(taken, _mm256_cmp_ps(q[1], mx, _CMP_EQ_OQ));
      taken = _mm256_or_ps(taken, b);
      __m256 c = _mm256_andnot_ps(taken, _mm256_cmp_ps(q[2], mx, _CMP_EQ_OQ));
      taken = _mm256_or_ps(taken, c);
      __m256 d = _mm256_andnot_ps(taken, _mm256_cmp_ps(q[3], mx, _CMP_EQ_OQ));
      pool_store16(d0 + 2 * ox, _mm256_and_ps(a, gx), _mm256_and_ps(b, gx));
      pool_store16(d1 + 2 * ox, _mm256_and_ps(c, gx), _mm256_and_ps(d, gx));
    }
    for (; ox < p->ow; ox++) {
      float mx = m[ox], gx = g[ox];
      int a = r0[2 * ox] == mx, b = (r0[2 * ox + 1] == mx) & !a;
      int c = (r1[2 * ox] == mx) & !(a | b), d = (r1[2 * ox + 1] == mx) & !(a | b | c);
      d0[2 * ox] = a ? gx : 0.0f;
      d0[2 * ox + 1] = b ? gx : 0.0f;
      d1[2 * ox] = c ? gx : 0.0f;
      d1[2 * ox + 1] = d ? gx : 0.0f;
    }
    for (int64_t ix = 2 * p->ow; ix < w; ix++) d0[ix] = d1[ix] = 0;
  }
  for (int64_t iy = 2 * p->oh; iy < p->h; iy++)
    for (int64_t ix = 0; ix < w; ix++) dx[iy * w + ix] = 0;
}

static void pool_grad_range_f32_avx2(void *vjob, int64_t b, int64_t e) {
  const pool_job *job = vjob;
  const pd_k_pool2d *p = job->p;
  for (int64_t pl = b; pl < e; pl++)
    pool_grad_2x2_avx2(p, (const float *)job->x + pl * p->h * p->w,
                       (const float *)job->y + pl * p->oh * p->ow,
                       (const float *)job->dy + pl * p->oh * p->ow,
                       (float *)job->dx + pl * p->h * p->w);
}
#undef AVX2
#endif

pd_status pd_kcpu_pool2d_grad(pd_dtype dt, const pd_k_pool2d *p, const void *x, const void *y,
                              const void *dy, void *dx) {
  pd_status st = pd_k_pool2d_check(dt, p);
  if (st) return st;
  pool_job job = {.p = p, .x = x, .y = y, .dy = dy, .dx = dx};
  pd_kcpu_range_fn *fn = dt == PD_FP32 ? pool_grad_range_f32 : pool_grad_range_f64;
#if PD_KCPU_HAVE_AVX2
  /* LeNet's and VGG's 2x2 max pooling: 8 windows a step where the CPU has AVX2 (the scalar
   * loop's stores interleave two outputs a row, which compilers do not vectorise). */
  if (dt == PD_FP32 && pool_is_2x2_f32(p) && pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2)
    fn = pool_grad_range_f32_avx2;
#endif
  pd_kcpu_parallel(p->n * p->c, pool_grain(p), fn, &job);
  return PD_OK;
}
