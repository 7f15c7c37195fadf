/* conv.c -- 2-d convolution (NCHW) as im2col + GEMM per image and group, and its data and
 * filter gradients (GEMM + col2im; pooling is pool2d.c's). A 1x1 convolution with unit stride
 * and no padding skips im2col: the image already is the column matrix. Images are split across the
 * thread pool (cpu.h); a forward pass of fewer images than threads splits each image's output
 * columns instead (its filters where it has few columns); a depthwise forward pass (a filter
 * per channel) is computed directly, its output planes split across the pool (in fp32 by
 * conv_avx512.c or conv_avx2.c); other fp32 forward passes make their column matrix a block of
 * panels at a time for gemm_avx512.c's or gemm_avx2.c's packed product (on small maps the
 * product transposed: pixels by filters); 3x3 ones at stride 1 go to conv_wino.c's Winograd
 * products where it takes them. The fused forward pass
 * (conv2d_fused) adds the bias and residual and applies the activation to each block of the
 * output right after the thread computing it wrote it (pd_kcpu_conv_epilogue). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels_int.h"

#include <stdatomic.h>
#include <string.h>

/* d[u] = s[u sw] for u < n: conv_t.h's im2col rows at a stride other than 1. At stride 2 in
 * fp32 on AVX-512 CPUs vectorised (the scalar loop took 17% of ResNet50's 256 -> 256 3x3 layer
 * at stride 2 on 28x28, through its plain columns). */
static inline void copy_strided_f32(float *d, const float *s, int64_t n, int64_t sw) {
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (sw == 2 && pd_kcpu_simd() == PD_KCPU_SIMD_AVX512) {
    pd_kcpu_copy_evens_f32(d, s, n);
    return;
  }
#endif
  for (int64_t u = 0; u < n; u++) d[u] = s[u * sw];
}

static inline void copy_strided_f64(double *d, const double *s, int64_t n, int64_t sw) {
  for (int64_t u = 0; u < n; u++) d[u] = s[u * sw];
}

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
  size_t col_bytes;               /* one column matrix (a group's panels when `panels`); 0 for
                                     a 1x1 convolution */
  bool panels;                    /* forward: the column matrix of a group made in panels
                                     (im2col_panels) for gemm16p (AVX-512) or gemm8p (AVX2) */
  int64_t pw;                     /* the panels' width: PD_KCPU_GEMM16_NR or PD_KCPU_GEMM8_NR */
  int nt;                         /* threads */
} conv_plan;

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
/* The forward pass's column matrix in panels of pw columns (fp32 on AVX-512 and AVX2 CPUs, where
 * the layer's filters fit gemm16's bounds): each panel's K rows of pw floats are contiguous, so
 * that the product reads them in order. Read in place from the plain column matrix, a term of a
 * panel a row apart, a DB detector's 3x3 convolution (24 filters, K = 864, 160x160 outputs) ran at
 * 27 GFLOP/s, waiting on memory. */
#define PANEL_MAX_A ((int64_t)1 << 18) /* AVX2: the filters of a group (ocg x kdim), as gemm.c's
                                        * bound; gemm16p blocks larger ones itself */
#define PANEL_MAX_K 4096
#define PANEL_MAX_KW 16 /* filter widths im2col_panels takes */
#define PANEL_BLOCK ((int64_t)1 << 16) /* floats of panels made at a time (256 KB) */
/* ... or, where the filters are past PANEL_MAX_A (gemm16p then reads them once for all the
 * panels of a call, from L3), up to this many (4 MB): ResNet50's 3x3 layers of 256 and 512
 * filters take all of a 14x14 or 7x7 image's columns (2.1 and 1.2 MB) in one call. */
#define PANEL_BLOCK_BIG ((int64_t)1 << 20)

/* Whether the forward product of a group takes its columns in panels at this SIMD level. */
static bool panels_take(int level, const pd_k_conv_plan *k, int64_t kw) {
  return kw <= PANEL_MAX_KW &&
         (level == PD_KCPU_SIMD_AVX512 ||
          (level == PD_KCPU_SIMD_AVX2 && k->ocg * k->kdim <= PANEL_MAX_A &&
           k->kdim <= PANEL_MAX_K));
}

/* Output pixels a block of panels of width pw holds: a multiple of pw. */
static int64_t panel_step(const pd_k_conv_plan *k, int64_t pw) {
  int64_t n = (k->ocg * k->kdim > PANEL_MAX_A ? PANEL_BLOCK_BIG : PANEL_BLOCK) / (pw * k->kdim);
  return (n > 1 ? n : 1) * pw;
}

/* The last columns of a convolution's product that gemm_avx2.c's 16-column tiles would
 * compute as a whole panel, mostly masked off, taken as dot products instead (gemm_nt8: each
 * filter against each pixel's column) where they are at most DOT_TAIL and K is long enough for
 * the dot products to run well: on 7x7 maps (49 pixels, 3 panels and 1 column) the masked
 * panel cost a quarter of MobileNetV3's and ResNet50's last layers; 14x14 maps leave 4
 * columns. */
#define DOT_TAIL 4
#define DOT_TAIL_STACK 1024 /* K up to which the copied columns are on the stack */
/* Bytes of filters up to which the tail is taken: the dot products read the filters again,
 * which past L2 come from L3 a second time (ResNet50's 512 -> 512 3x3 layers on 7x7, 4.7 MB a
 * thread, gained nothing). */
#define DOT_TAIL_MAX_A ((int64_t)512 << 10)

static int64_t dot_tail(int64_t m, int64_t cols, int64_t k) {
  int64_t t = cols % PD_KCPU_GEMM8_NR;
  return cols > PD_KCPU_GEMM8_NR && t <= DOT_TAIL && k >= 32 && k <= PANEL_MAX_K &&
                 m * k * (int64_t)sizeof(float) <= DOT_TAIL_MAX_A
             ? t
             : 0;
}

/* The t tail columns as rows of k (bt [t, k]): from B [k, cols] read in place (ldb), or from
 * the last of gemm_avx2.c's panels (ldb 0: b is the panel, the columns its first t). */
static void tail_rows(int64_t t, int64_t k, const float *b, int64_t ldb, int64_t c0,
                      float *bt) {
  for (int64_t q = 0; q < k; q++)
    for (int64_t jj = 0; jj < t; jj++)
      bt[jj * k + q] = ldb ? b[q * ldb + c0 + jj] : b[q * PD_KCPU_GEMM8_NR + jj];
}

/* C's columns [c0, c0 + t) = A (m rows of k) times the columns in bt, through the epilogue e
 * (NULL: none; its rows and residual from C's first column). */
static void dots_tail(int64_t m, int64_t t, int64_t k, const float *a, const float *bt,
                      float *c, int64_t ldc, int64_t c0, const pd_kcpu_epi16 *e) {
  pd_kcpu_gemm_nt8_f32(m, t, k, a, k, bt, k, c + c0, ldc);
  if (!e) return;
  for (int64_t i = 0; i < m; i++)
    pd_kcpu_epi_row8_f32(e->act, e->p, c + i * ldc + c0, e->rbias ? e->rbias[i] : 0.0f,
                         e->res ? e->res + i * e->ldres + c0 : NULL, t);
}

/* Room for the tail's columns: *t set to 0 where there is none. */
static float *tail_buf(int64_t *t, int64_t k, float *stack) {
  if (!*t || k <= DOT_TAIL_STACK) return stack;
  float *h = pd_k_host_alloc((size_t)(*t * k) * sizeof(float));
  if (!h) *t = 0;
  return h;
}

/* Rows [0, m) of C (ldc) = A (m x kdim) times n columns in panels at pack, the epilogue e
 * (NULL: none) as they are stored; false where gemm16p found no memory for its partial sums. */
static bool panels_product(const conv_plan *cp, int64_t m, int64_t n, const float *a,
                           const float *pack, float *c, int64_t ldc, const pd_kcpu_epi16 *e) {
  if (cp->pw == PD_KCPU_GEMM8_NR) {
    int64_t k = cp->k.kdim, t = dot_tail(m, n, k);
    float stack[DOT_TAIL * DOT_TAIL_STACK], *bt = tail_buf(&t, k, stack);
    pd_kcpu_gemm8p_epi_f32(m, n - t, k, a, k, pack, c, ldc, e);
    if (t) {
      tail_rows(t, k, pack + (n - t) * k, 0, 0, bt);
      dots_tail(m, t, k, a, bt, c, ldc, n - t, e);
    }
    if (bt != stack) pd_k_host_free(bt);
    return true;
  }
  return pd_kcpu_gemm16p_epi_f32(false, m, n, cp->k.kdim, a, cp->k.kdim, pack, 0.0f, c, ldc, e);
}
#endif

/* The smallest of an image's product sizes (filters per group, terms, output pixels) that
 * mixed precision multiplies in low precision: below a tile's 16 rows AMX's packing does not
 * pay (LeNet's first layer, 6 filters of 25 terms, batch 64, 2 threads: forward 0.33 ms in fp32
 * against 0.37 in bf16, filter gradient 0.29 against 0.45; its second, 16 filters of 150
 * terms: 0.70 against 0.65, 1.01 against 0.71), and LeNet trained 0.83 times as fast. */
#define CONV_LP_MIN 16

/* Whether the image's products are gemm_lp's (mixed precision and every size at least
 * CONV_LP_MIN); the others are fp32's, the same bits as without mixed precision. */
static bool lp_products(pd_dtype dt, const pd_k_conv2d *p, const pd_k_conv_plan *kp) {
  return dt == PD_FP32 && (p->lp == PD_BF16 || p->lp == PD_FP16) && kp->ocg >= CONV_LP_MIN &&
         kp->kdim >= CONV_LP_MIN && kp->ohw >= CONV_LP_MIN;
}

/* forward: the plan of a forward pass (which may make its columns in panels). */
static pd_status conv_begin(conv_plan *cp, pd_dtype dt, const pd_k_conv2d *p, bool forward) {
  pd_status st = pd_k_conv_begin(&cp->k, dt, p);
  if (st) return st;
  cp->col_bytes = cp->k.direct ? 0 : (size_t)(cp->k.rows * cp->k.ohw) * cp->k.sz;
  cp->panels = false;
  cp->pw = 0;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  int level = pd_kcpu_simd();
  if (forward && !cp->k.direct && dt == PD_FP32 && !lp_products(dt, p, &cp->k) &&
      panels_take(level, &cp->k, p->kw)) {
    cp->panels = true;
    cp->pw = level == PD_KCPU_SIMD_AVX512 ? PD_KCPU_GEMM16_NR : PD_KCPU_GEMM8_NR;
    int64_t pw = cp->pw, step = panel_step(&cp->k, pw), ohw = (cp->k.ohw + pw - 1) / pw * pw;
    cp->col_bytes = (size_t)((ohw < step ? ohw : step) * cp->k.kdim) * sizeof(float);
  }
#endif
  cp->nt = pd_kcpu_blas_team();
  if (cp->nt > p->n) cp->nt = (int)p->n;
  if (p->n * cp->k.out_img * cp->k.kdim < CONV_MIN_WORK) cp->nt = 1;
  if (cp->nt < 1) cp->nt = 1;
  return PD_OK;
}

/* The convolution's products: the fp32/fp64 GEMM, or under mixed precision (p->lp) gemm_lp
 * when every size of the image's product is at least CONV_LP_MIN (each call one thread's: it
 * splits nothing inside a part). */
static void conv_gemm(const pd_k_conv2d *p, const pd_k_conv_plan *kp, pd_dtype dt, bool ta,
                      bool tb, int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                      const void *b, int64_t ldb, double beta, void *c, int64_t ldc) {
  if (lp_products(dt, p, kp))
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
  bool *failed;            /* set by a part that found no memory (conv_run's) */
  const float *wt;         /* forward: the filters transposed in panels (tposed); NULL: not so */
} conv_job;

/* Images [*b, *e) of thread t among nt. */
static void image_range(int64_t n, int t, int nt, int64_t *b, int64_t *e) {
  *b = n * t / nt;
  *e = n * (t + 1) / nt;
}

/* The piecewise-linear activations in the loop that adds the bias and the residual, fp32: one
 * pass over the block instead of two. The formulas of act_t.h's and elementwise_t.h's, but
 * hard_swish's division a multiplication by the reciprocal (as gemm16p's epilogue, whose codes
 * these are where it is built: fastmath.h's PD_KCPU_EPI_*). */
enum { EPI_NONE, EPI_RELU, EPI_RELU6, EPI_LEAKY, EPI_HSWISH, EPI_HSIGMOID, EPI_OTHER };
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
_Static_assert((int)EPI_NONE == (int)PD_KCPU_EPI_NONE && (int)EPI_RELU == (int)PD_KCPU_EPI_RELU &&
                   (int)EPI_RELU6 == (int)PD_KCPU_EPI_RELU6 &&
                   (int)EPI_LEAKY == (int)PD_KCPU_EPI_LEAKY &&
                   (int)EPI_HSWISH == (int)PD_KCPU_EPI_HSWISH &&
                   (int)EPI_HSIGMOID == (int)PD_KCPU_EPI_HSIGMOID,
               "conv.c's epilogue codes are gemm16p's");
#endif

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

static void epi_row_f32(int code, const float pp[4], float *restrict r, float b,
                        const float *restrict q, int64_t len) {
  const float p0 = pp[0], p1 = pp[1], p2 = pp[2], p3 = pp[3];
  switch (code) {
    case EPI_RELU: EPI_LOOP(x < 0 ? 0.0f : x); break;
    case EPI_RELU6: EPI_LOOP(x < 0 ? 0.0f : x > p0 ? p0 : x); break;
    case EPI_LEAKY: EPI_LOOP(x > 0 ? x : p0 * x); break;
    case EPI_HSWISH: EPI_LOOP(x * (x + p2 < 0 ? 0.0f : x + p2 > p0 ? p0 : x + p2) * p3); break;
    case EPI_HSIGMOID:
      EPI_LOOP(p0 * x + p1 < 0 ? 0.0f : p0 * x + p1 > 1 ? 1.0f : p0 * x + p1);
      break;
    default: EPI_LOOP(x); break;
  }
}
#undef EPI_LOOP

/* The fp32 parameters of an inlined activation (hard_swish's reciprocal of its scale last). */
static void epi_params(const pd_k_conv_epilogue *ep, float pp[4]) {
  pp[0] = (float)ep->p[0], pp[1] = (float)ep->p[1], pp[2] = (float)ep->p[2];
  pp[3] = ep->kind == PD_K_EPI_ACT && ep->act == PD_K_HARD_SWISH ? (float)(1 / ep->p[1]) : 0.0f;
}

/* The epilogue (kernels.h) on channels [c0, c1) of image n of y, columns [j0, j1) of each
 * plane: bias and residual added a row at a time (in fp32, a piecewise-linear activation in the
 * same loop), then the activation over the block in one call where its rows are whole planes
 * (they are then contiguous), else a call a row. It runs on the thread that just wrote the
 * block, while it is in its cache. */
void pd_kcpu_conv_epilogue(pd_dtype dt, const pd_k_conv2d *p, const pd_k_conv_epilogue *ep,
                           void *y, int64_t n, int64_t c0, int64_t c1, int64_t j0, int64_t j1) {
  if (!ep || c1 <= c0 || j1 <= j0) return;
  int64_t ohw = p->oh * p->ow, len = j1 - j0;
  size_t sz = pd_dtype_size(dt);
  int code = epi_inline(ep);
  if (dt == PD_FP32 && code != EPI_OTHER) {
    float pp[4];
    epi_params(ep, pp);
#if PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32
    /* AVX-512 CPUs fuse the epilogue into their kernels and come here rarely: AVX2 serves both */
    bool avx2 = pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2;
#endif
    for (int64_t c = c0; c < c1; c++) {
      int64_t at = (n * p->oc + c) * ohw + j0;
      float *r = (float *)y + at, b = ep->bias ? ((const float *)ep->bias)[c] : 0.0f;
      const float *q = ep->residual ? (const float *)ep->residual + at : NULL;
#if PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32
      if (avx2) {
        pd_kcpu_epi_row8_f32(code, pp, r, b, q, len);
        continue;
      }
#endif
      epi_row_f32(code, pp, r, b, q, len);
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

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
/* A panel of PW pixels of one output row whose every filter column reads inside the image, at
 * horizontal stride S (1 or 2: the first layer of most of the field's models): each row of the
 * panel PW floats from src (the image's group at the panel's first tap) on, S apart; a row out
 * of the image 0. */
static inline __attribute__((always_inline)) void whole_panel(const pd_k_conv2d *p, int64_t PW,
                                                              int64_t S, const float *src,
                                                              int64_t oy, int64_t ahead,
                                                              float *panel) {
  int64_t cg = p->c / p->groups, kh = p->kh, kw = p->kw, plane = p->h * p->w;
  for (int64_t i = 0; i < kh; i++) {
    int64_t iy = oy * p->stride_h - p->pad_top + i * p->dil_h;
    float *d = panel + i * kw * PW;
    if (iy < 0 || iy >= p->h) {
      for (int64_t ci = 0; ci < cg; ci++, d += kh * kw * PW)
        memset(d, 0, (size_t)(kw * PW) * sizeof(float));
      continue;
    }
    const float *s = src + iy * p->w;
    for (int64_t ci = 0; ci < cg; ci++, s += plane, d += kh * kw * PW) {
      /* the same panel of the next block, into L2: a row of each channel is far too many
       * streams for the hardware's prefetcher (a DB detector's 96 channels x 3 rows) */
      __builtin_prefetch(s + ahead, 0, 2);
      __builtin_prefetch(s + ahead + S * PW - 1, 0, 2);
      for (int64_t j = 0; j < kw; j++) {
        const float *sj = s + j * p->dil_w;
        if (S == 1) memcpy(d + j * PW, sj, (size_t)PW * sizeof(float));
        else if (PW == PD_KCPU_GEMM16_NR) pd_kcpu_copy_evens_f32(d + j * PW, sj, PW);
        else
          for (int64_t u = 0; u < PW; u++) d[j * PW + u] = sj[S * u];
      }
    }
  }
}

/* The column matrix of group g of image img (fp32) for output pixels [j0, j1), in panels of
 * pw columns from pack on (the last one's missing columns 0): row r = (ci, i, j) of the panel
 * of pixels q..q + pw holds img[g cg + ci][oy sh - pt + i dh][ox sw - pl + j dw] for each
 * pixel (oy, ox), 0 in the padding. A panel's pixels are taken by runs within an output row,
 * each row of a run one contiguous copy at unit stride. */
static void im2col_panels(const pd_k_conv2d *p, int64_t pw, const float *img, int64_t g,
                          int64_t j0, int64_t j1, float *pack) {
  int64_t cg = p->c / p->groups, kdim = cg * p->kh * p->kw, ow = p->ow, sw = p->stride_w;
  int64_t kh = p->kh, kw = p->kw, plane = p->h * p->w;
  const float *src0 = img + g * cg * plane;
  if (pw == PD_KCPU_GEMM16_NR && sw <= 2 && ow < 2 * pw) { /* rows narrower than two panels */
    pd_kcpu_im2col_small_f32(p, src0, j0, j1, pack);
    return;
  }
  int64_t lo[PANEL_MAX_KW], hi[PANEL_MAX_KW], ix0[PANEL_MAX_KW], ahead = (j1 - j0) * sw;
  for (int64_t q = j0; q < j1; q += pw) {
    int64_t width = j1 - q < pw ? j1 - q : pw;
    float *panel = pack + (q - j0) * kdim;
    for (int64_t t = 0; t < width;) {
      int64_t pix = q + t, oy = pix / ow, ox = pix % ow;
      int64_t len = width - t < ow - ox ? width - t : ow - ox;
      /* each filter column's valid part of the run (the same for every channel and row) */
      bool inside = true;
      for (int64_t j = 0; j < kw; j++) {
        int64_t x0 = ox * sw - p->pad_left + j * p->dil_w, a, b;
        valid_cols_f32(len, p->w, sw, x0, &a, &b);
        ix0[j] = x0, lo[j] = a, hi[j] = b;
        inside = inside && a == 0 && b == pw;
      }
      if (inside && len == pw && (sw == 1 || sw == 2)) { /* most panels: each row one copy */
        if (pw == PD_KCPU_GEMM8_NR && sw == 1)
          whole_panel(p, PD_KCPU_GEMM8_NR, 1, src0 + ix0[0], oy, ahead, panel);
        else if (pw == PD_KCPU_GEMM8_NR)
          whole_panel(p, PD_KCPU_GEMM8_NR, 2, src0 + ix0[0], oy, ahead, panel);
        else if (sw == 1)
          whole_panel(p, PD_KCPU_GEMM16_NR, 1, src0 + ix0[0], oy, ahead, panel);
        else
          whole_panel(p, PD_KCPU_GEMM16_NR, 2, src0 + ix0[0], oy, ahead, panel);
        break;
      }
      for (int64_t i = 0; i < kh; i++) {
        int64_t iy = oy * p->stride_h - p->pad_top + i * p->dil_h;
        bool out = iy < 0 || iy >= p->h;
        for (int64_t ci = 0; ci < cg; ci++) {
          const float *srow = src0 + ci * plane + iy * p->w;
          float *d0 = panel + (ci * kh + i) * kw * pw + t;
          for (int64_t j = 0; j < kw; j++) {
            float *d = d0 + j * pw;
            if (out) {
              memset(d, 0, (size_t)len * sizeof(float));
              continue;
            }
            int64_t a = lo[j], b = hi[j];
            const float *sr = srow + ix0[j];
            for (int64_t u = 0; u < a; u++) d[u] = 0;
            if (sw == 1) {
              PD_SIMD for (int64_t u = a; u < b; u++) d[u] = sr[u];
            } else if (sw == 2 && pw == PD_KCPU_GEMM16_NR)
              pd_kcpu_copy_evens_f32(d + a, sr + 2 * a, b - a);
            else
              for (int64_t u = a; u < b; u++) d[u] = sr[u * sw];
            for (int64_t u = b; u < len; u++) d[u] = 0;
          }
        }
      }
      t += len;
    }
    if (width < pw)
      for (int64_t r = 0; r < kdim; r++)
        memset(panel + r * pw + width, 0, (size_t)(pw - width) * sizeof(float));
  }
}

/* A convolution's output of at least this many bytes is stored past the caches (fastmath.h's
 * `stream`): ResNet50's 64 -> 256 1x1 shortcut on 56x56 at batch 16 (51 MB) wrote each line
 * after reading it from memory; streamed, it took 0.72x the time. Smaller outputs stay in the
 * cache for the next layer; so do those with a residual, whose lines are read anyway (often the
 * output's own: ResNet50's 1x1 layers that add the shortcut took 1.39x the time streamed). */
#define CONV_STREAM_MIN ((int64_t)16 << 20)

static bool conv_streams(const pd_k_conv2d *p, const pd_k_conv_plan *kp,
                         const pd_k_conv_epilogue *ep) {
  return p->n * kp->out_img * (int64_t)sizeof(float) >= CONV_STREAM_MIN &&
         !(ep && ep->residual);
}

/* Output pixels [j0, j1) (j0 a multiple of the panels' width) of image n, every group, a few
 * panels at a time (PANEL_BLOCK floats of them, at least one panel): their columns into pack and
 * their product, so that the panels are still in the cache when the product reads them (made for
 * the whole image first, a DB detector's 88 MB column matrix went to memory and back); the
 * epilogue over them. */
static void conv_panels(const conv_job *j, int64_t n, int64_t j0, int64_t j1, float *pack) {
  const pd_k_conv2d *p = j->p;
  const pd_k_conv_plan *kp = &j->cp->k;
  const float *xn = (const float *)j->x + n * kp->in_img;
  int64_t step = panel_step(kp, j->cp->pw);
  /* the epilogue in the product's stores where it can be */
  const pd_k_conv_epilogue *ep = j->ep;
  int code = ep ? epi_inline(ep) : EPI_NONE;
  pd_kcpu_epi16 e = {.ldres = kp->ohw, .act = code, .stream = conv_streams(p, kp, ep)};
  if (ep) epi_params(ep, e.p);
  bool inl = ep && code != EPI_OTHER;
  for (int64_t q = j0; q < j1; q += step) {
    int64_t q1 = j1 - q < step ? j1 : q + step;
    for (int64_t g = 0; g < kp->g; g++) {
      int64_t at = n * kp->out_img + g * kp->ocg * kp->ohw + q;
      e.rbias = inl && ep->bias ? (const float *)ep->bias + g * kp->ocg : NULL;
      e.res = inl && ep->residual ? (const float *)ep->residual + at : NULL;
      im2col_panels(p, j->cp->pw, xn, g, q, q1, pack);
      if (!panels_product(j->cp, kp->ocg, q1 - q, (const float *)j->w + g * kp->ocg * kp->kdim,
                          pack, (float *)j->y + at, kp->ohw, inl || (!ep && e.stream) ? &e : NULL))
        *j->failed = true;  /* no memory for its partial sums */
    }
    if (!inl) pd_kcpu_conv_epilogue(j->dt, p, ep, j->y, n, 0, p->oc, q, q1);
  }
}
#endif

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
/* ---- 1x1 and 3x3 convolutions of small maps: the product transposed ----
 * The output pixels the rows of the product and the filters its columns, T = X^T W^T (a 3x3
 * layer's plain column matrix in X's place), with the filters packed transposed into gemm16's
 * panels once (kept in the prepared slot), then T turned into the output's rows through the
 * epilogue (pd_kcpu_untranspose16_f32); the same sums. With the pixels as the columns, a 7x7 map
 * filled panels of 32 and 17 (a third of the work masked off) and a 14x14 one six and a
 * sixteenth: one thread, [512, 512] x [512, 49] took 220 us, transposed 166; [256, 1024] x
 * [1024, 196] 784 and 624 (28x28 174 and 180: no gain there). ResNet50's 3x3 layers of 256
 * filters on 14x14, two threads: 1.00 -> 0.82 ms, at stride 2 onto 14x14 1.03 -> 0.90 (the
 * columns made by both threads, a stride-2 row by copy_strided_f32). */
#define TPOSE_BELOW 400 /* output pixels an image below which the product is transposed, */
#define TPOSE_MIN_K 256 /* terms from which (below, the turning back cost more than it saved:
                         * MobileNetV3's 80 -> 200 on 14x14 25 -> 33 us, 240 -> 80 33 -> 38), */
#define TPOSE_MAX_W ((int64_t)1 << 18) /* a 1x1 layer's filters' floats up to which: the packed
                                        * copy stays beside them, and for all of ResNet50's 7x7
                                        * and 14x14 1x1 layers (0.99x its time) it took 47 MB; */
#define TPOSE_MAX_W3 ((int64_t)1 << 20) /* a 3x3 layer's: ResNet50-vd's six of 256 filters took
                                         * 14 MB more (its peak 222 -> 243 MiB at batch 1,
                                         * ONNX Runtime's 329); its three of 512 on 7x7 would
                                         * take 28 MB more for 0.94-0.98x their time alone,
                                         * none in the model */
#define TPOSE_COLS 256  /* filters a pass: T (pixels by these) stays in L2 */

typedef struct tpacked {
  pd_k_prepared base; /* rows oc, cols c */
  float *pack;
} tpacked;

#define TPACKED_HEADER (((sizeof(tpacked) + PD_K_ALIGN - 1) / PD_K_ALIGN) * PD_K_ALIGN)

static void tpacked_release(pd_k_prepared *p) { pd_k_host_free(p); }

static bool tposed_takes(pd_dtype dt, const pd_k_conv2d *p, const conv_plan *cp,
                         const pd_k_conv_epilogue *ep) {
  return dt == PD_FP32 && cp->k.g == 1 && cp->k.ohw < TPOSE_BELOW &&
         cp->k.kdim >= TPOSE_MIN_K &&
         p->oc * cp->k.kdim <= (cp->k.direct ? TPOSE_MAX_W : TPOSE_MAX_W3) &&
         p->oc >= PD_KCPU_GEMM16_NR && !lp_products(dt, p, &cp->k) &&
         pd_kcpu_simd() == PD_KCPU_SIMD_AVX512 && (!ep || epi_inline(ep) != EPI_OTHER);
}

/* W^T in panels: from *prep where it holds this shape's, else made into a new copy that goes
 * there (the old one released). NULL: no memory. */
static const float *tposed_filters(const pd_k_conv2d *p, const conv_plan *cp, const float *w,
                                   pd_k_prepared **prep) {
  tpacked *t = (tpacked *)*prep;
  int64_t k = cp->k.kdim;
  if (t && t->base.release == tpacked_release && t->base.dt == PD_FP32 &&
      t->base.rows == p->oc && t->base.cols == k)
    return t->pack;
  char *mem = pd_k_host_alloc(TPACKED_HEADER +
                              (size_t)pd_kcpu_gemm16_packed_size(k, p->oc) * sizeof(float));
  if (!mem) return NULL;
  t = (tpacked *)mem;
  *t = (tpacked){{tpacked_release, PD_FP32, p->oc, k}, (float *)(mem + TPACKED_HEADER)};
  pd_kcpu_gemm16_pack_t_f32(k, p->oc, w, k, t->pack);
  if (*prep) (*prep)->release(*prep);
  *prep = &t->base;
  return t->pack;
}

/* Filters [r0, r1) (r0 a multiple of the panels' width) of image n over all its pixels, through
 * e (its rbias and res at filter r0; NULL: none); false (no memory) where not done. */
static bool tposed(const conv_job *j, int64_t n, const float *x, int64_t r0, int64_t r1,
                   const pd_kcpu_epi16 *e) {
  const pd_k_conv_plan *kp = &j->cp->k;
  int64_t m = kp->ohw, k = kp->kdim, cols = r1 - r0 < TPOSE_COLS ? r1 - r0 : TPOSE_COLS;
  float *t = pd_k_host_alloc((size_t)(m * cols) * sizeof(float));
  if (!t) return false;
  float *y = (float *)j->y + n * kp->out_img;
  bool ok = true;
  for (int64_t f0 = r0; f0 < r1 && ok; f0 += TPOSE_COLS) {
    int64_t nf = r1 - f0 < TPOSE_COLS ? r1 - f0 : TPOSE_COLS;
    pd_kcpu_epi16 ef = e ? *e : (pd_kcpu_epi16){0};
    if (e && e->rbias) ef.rbias = e->rbias + (f0 - r0);
    if (e && e->res) ef.res = e->res + (f0 - r0) * e->ldres;
    ok = pd_kcpu_gemm16p_epi_f32(true, m, nf, k, x, m, j->wt + f0 * k, 0.0f, t, nf, NULL);
    if (ok) pd_kcpu_untranspose16_f32(m, nf, t, nf, y + f0 * kp->ohw, kp->ohw, e ? &ef : NULL);
  }
  pd_k_host_free(t);
  return ok;
}
#endif

/* A 1x1 convolution (direct, one group) in fp32 on AVX-512 or AVX2, or one whose product is
 * transposed (j->wt): filters [r0, r1) over output pixels [c0, c1) of image n, its column matrix
 * col (the image where direct), with the epilogue in the product's stores; false (nothing done)
 * where that does not apply (conv_gemm and pd_kcpu_conv_epilogue() then). */
static bool direct_fused(const conv_job *j, int64_t n, const void *col, int64_t r0, int64_t r1,
                         int64_t c0, int64_t c1) {
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  const pd_k_conv2d *p = j->p;
  const pd_k_conv_plan *kp = &j->cp->k;
  const pd_k_conv_epilogue *ep = j->ep;
  int code = ep ? epi_inline(ep) : EPI_NONE, level = pd_kcpu_simd();
  if (!(kp->direct || j->wt) || kp->g != 1 || j->dt != PD_FP32 || lp_products(j->dt, p, kp) ||
      code == EPI_OTHER || level == PD_KCPU_SIMD_BASE ||
      (level == PD_KCPU_SIMD_AVX2 &&
       ((r1 - r0) * kp->kdim > PANEL_MAX_A || kp->kdim > PANEL_MAX_K)))
    return false;
  if (r1 <= r0 || c1 <= c0) return true;
  int64_t at = n * kp->out_img + r0 * kp->ohw + c0;
  pd_kcpu_epi16 e = {.ldres = kp->ohw, .act = code, .stream = conv_streams(p, kp, ep)};
  const pd_kcpu_epi16 *pe = ep || e.stream ? &e : NULL;
  if (ep) {
    epi_params(ep, e.p);
    e.rbias = ep->bias ? (const float *)ep->bias + r0 : NULL;
    e.res = ep->residual ? (const float *)ep->residual + at : NULL;
  }
  if (j->wt && c0 == 0 && c1 == kp->ohw && r0 % PD_KCPU_GEMM16_NR == 0 &&
      tposed(j, n, col, r0, r1, pe))
    return true;
  if (level == PD_KCPU_SIMD_AVX2) {
    const float *a = (const float *)j->w + r0 * kp->kdim;
    const float *b = (const float *)col + c0;
    float *c = (float *)j->y + at;
    int64_t m = r1 - r0, cols = c1 - c0, k = kp->kdim, t = dot_tail(m, cols, k);
    float stack[DOT_TAIL * DOT_TAIL_STACK], *bt = tail_buf(&t, k, stack);
    bool ok = pd_kcpu_gemm8_epi_f32(m, cols - t, k, a, k, b, kp->ohw, c, kp->ohw, pe);
    if (ok && t) {
      tail_rows(t, k, b, kp->ohw, cols - t, bt);
      dots_tail(m, t, k, a, bt, c, kp->ohw, cols - t, pe);
    }
    if (bt != stack) pd_k_host_free(bt);
    return ok;
  }
  return pd_kcpu_gemm16_epi_f32(r1 - r0, c1 - c0, kp->kdim, (const float *)j->w + r0 * kp->kdim,
                                kp->kdim, (const float *)col + c0, kp->ohw,
                                (float *)j->y + at, kp->ohw, pe);
#else
  (void)j, (void)n, (void)col, (void)r0, (void)r1, (void)c0, (void)c1;
  return false;
#endif
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
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (cp->panels) {
    for (int64_t n = b; n < e; n++) conv_panels(j, n, 0, kp->ohw, colbuf);
    return;
  }
#endif
  for (int64_t n = b; n < e; n++) {
    const void *xn = AT(j->x, n * kp->in_img, kp->sz), *col = xn;
    if (!kp->direct) {
      pd_kcpu_im2col(j->dt, p, xn, colbuf);
      col = colbuf;
    }
    if (direct_fused(j, n, col, 0, p->oc, 0, kp->ohw)) continue;
    for (int64_t g = 0; g < kp->g; g++)  /* y[g] = w[g] (ocg x kdim) @ col[g] */
      conv_gemm(p, kp, j->dt, false, false, kp->ocg, kp->ohw, kp->kdim,
                   AT(j->w, g * kp->ocg * kp->kdim, kp->sz), kp->kdim,
                   AT(col, g * kp->kdim * kp->ohw, kp->sz), kp->ohw, 0.0,
                   AT(j->y, n * kp->out_img + g * kp->ocg * kp->ohw, kp->sz), kp->ohw);
    pd_kcpu_conv_epilogue(j->dt, p, j->ep, j->y, n, 0, p->oc, 0, kp->ohw);
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
  bool failed = false;
  j->cols = NULL;
  j->failed = &failed;
  if (cp->col_bytes && !(j->cols = pd_k_host_alloc(cp->col_bytes * (size_t)cp->nt)))
    return PD_ENOMEM;
  pd_kcpu_team(cp->nt, fn, j);
  pd_k_host_free(j->cols);
  return failed ? PD_ENOMEM : PD_OK;
}

/* y = w @ col for one image (col: its column matrix, or the image of a direct convolution),
 * the output columns cut into one range per part: a batch smaller than the pool still uses
 * every thread. */
typedef struct cols_job {
  const conv_job *j;
  const void *col;
  int64_t n;
  bool by_rows;  /* the filters (rows of the product) split instead: groups 1 */
  bool make;     /* by_rows with panels: this pass makes the image's panels, split by panels */
  bool *failed;  /* set by a part that found no memory */
} cols_job;

/* An image of fewer output pixels than this a thread (4 of the GEMM's 32-column panels) is
 * split by filters: split by columns, MobileNetV3's last 1x1 convolutions (960 filters on 7x7)
 * gave each thread 25 columns in two 16-wide vectors, the second mostly masked off, and a
 * squeeze-excitation's (one pixel) left one thread all of it. */
#define CONV_ROWS_BELOW 128

static void conv_cols_part(void *vjob, int t, int nt) {
  const cols_job *c = vjob;
  const pd_k_conv_plan *kp = &c->j->cp->k;
  int64_t b, e;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (c->j->cp->panels && !c->by_rows) { /* whole panels a thread, each its own */
    int64_t pw = c->j->cp->pw, np = (kp->ohw + pw - 1) / pw;
    image_range(np, t, nt, &b, &e);
    b *= pw;
    e = e * pw < kp->ohw ? e * pw : kp->ohw;
    float *pack = e > b ? pd_k_host_alloc(c->j->cp->col_bytes) : NULL;
    if (pack) conv_panels(c->j, c->n, b, e, pack);
    else if (e > b) *c->failed = true;  /* conv_panels' failure lands in j->failed, the same */
    pd_k_host_free(pack);
    return;
  }
  if (c->j->cp->panels && c->make) { /* the image's panels [b, e), for every thread */
    int64_t pw = c->j->cp->pw, np = (kp->ohw + pw - 1) / pw;
    image_range(np, t, nt, &b, &e);
    if (e > b)
      im2col_panels(c->j->p, pw, (const float *)c->j->x + c->n * kp->in_img, 0, b * pw,
                    e * pw < kp->ohw ? e * pw : kp->ohw, (float *)c->col + b * pw * kp->kdim);
    return;
  }
  if (c->j->cp->panels) { /* by rows, over the panels made, the epilogue in the stores */
    image_range(kp->ocg, t, nt, &b, &e);
    const pd_k_conv_epilogue *ep = c->j->ep;
    int code = ep ? epi_inline(ep) : EPI_NONE;
    bool inl = ep && code != EPI_OTHER;
    int64_t at = c->n * kp->out_img + b * kp->ohw;
    pd_kcpu_epi16 ei = {.ldres = kp->ohw, .act = code};
    if (inl) {
      epi_params(ep, ei.p);
      ei.rbias = ep->bias ? (const float *)ep->bias + b : NULL;
      ei.res = ep->residual ? (const float *)ep->residual + at : NULL;
    }
    if (e > b && !panels_product(c->j->cp, e - b, kp->ohw, (const float *)c->j->w + b * kp->kdim,
                                 c->col, (float *)c->j->y + at, kp->ohw, inl ? &ei : NULL))
      *c->failed = true;
    if (!inl) pd_kcpu_conv_epilogue(c->j->dt, c->j->p, ep, c->j->y, c->n, b, e, 0, kp->ohw);
    return;
  }
  if (c->make) { /* the image's plain columns, split by input channels */
    image_range(c->j->p->c, t, nt, &b, &e);
    pd_k_conv2d q = *c->j->p;
    q.c = e - b;
    q.groups = 1;
    if (e > b)
      pd_kcpu_im2col(c->j->dt, &q,
                     (const float *)c->j->x + (c->n * c->j->p->c + b) * q.h * q.w,
                     (float *)c->col + b * q.kh * q.kw * kp->ohw);
    return;
  }
#endif
  if (c->by_rows) { /* in whole panels where the product is transposed */
    int64_t unit = c->j->wt ? PD_KCPU_GEMM16_NR : 1;
    image_range((kp->ocg + unit - 1) / unit, t, nt, &b, &e);
    b *= unit;
    e = e * unit < kp->ocg ? e * unit : kp->ocg;
    if (direct_fused(c->j, c->n, c->col, b, e, 0, kp->ohw)) return;
    if (e > b)
      conv_gemm(c->j->p, kp, c->j->dt, false, false, e - b, kp->ohw, kp->kdim,
                AT(c->j->w, b * kp->kdim, kp->sz), kp->kdim, c->col, kp->ohw, 0.0,
                AT(c->j->y, c->n * kp->out_img + b * kp->ohw, kp->sz), kp->ohw);
    pd_kcpu_conv_epilogue(c->j->dt, c->j->p, c->j->ep, c->j->y, c->n, b, e, 0, kp->ohw);
    return;
  }
  image_range(kp->ohw, t, nt, &b, &e);
  if (direct_fused(c->j, c->n, c->col, 0, c->j->p->oc, b, e)) return;
  for (int64_t g = 0; g < kp->g && e > b; g++)
    conv_gemm(c->j->p, kp, c->j->dt, false, false, kp->ocg, e - b, kp->kdim,
                 AT(c->j->w, g * kp->ocg * kp->kdim, kp->sz), kp->kdim,
                 AT(c->col, g * kp->kdim * kp->ohw + b, kp->sz), kp->ohw, 0.0,
                 AT(c->j->y, c->n * kp->out_img + g * kp->ocg * kp->ohw + b, kp->sz), kp->ohw);
  pd_kcpu_conv_epilogue(c->j->dt, c->j->p, c->j->ep, c->j->y, c->n, 0, c->j->p->oc, b, e);
}

pd_kcpu_dw_plane pd_kcpu_dw_plane_of(const pd_k_conv2d *p, const float *x, const float *w,
                                     int64_t plane, float *y, const pd_kcpu_epi16 *e) {
  int64_t ocg = p->oc / p->groups, n = plane / p->oc, oc = plane % p->oc, ic = oc / ocg;
  int64_t ohw = p->oh * p->ow;
  return (pd_kcpu_dw_plane){
      .x = x + (n * p->c + ic) * p->h * p->w,
      .w = w + oc * p->kh * p->kw,
      .res = e && e->res ? e->res + plane * ohw : NULL,
      .y = y + plane * ohw,
      .bias = e && e->rbias ? e->rbias[oc] : 0.0f,
      .kw = p->dil_w == 1 && (p->kw == 3 || p->kw == 5) ? (int)p->kw : 0,
  };
}

typedef struct dw_job {
  pd_dtype dt;
  const pd_k_conv2d *p;
  const pd_k_conv_epilogue *ep;
  const void *x, *w;
  void *y;
  int simd;             /* PD_KCPU_SIMD_AVX512: pd_kcpu_depthwise16_f32 computes the planes;
                         * PD_KCPU_SIMD_AVX2: pd_kcpu_depthwise8_f32; else conv_t.h's loops */
  int lanes;            /* 8: AVX2, pd_kcpu_depthwise8_lanes_takes; 16: AVX-512,
                         * pd_kcpu_depthwise16_lanes_takes: the range counts units of that many
                         * channels of an image (the last of fewer where oc is not a multiple),
                         * not planes; 0: planes */
} dw_job;

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
/* Units [b, e) of dw_job.lanes channels of an image, the epilogue inline (ei) or after; a unit
 * of fewer channels, or all of them if there is no memory for the scratch, plane by plane. */
static void lanes_range(const dw_job *j, const pd_kcpu_epi16 *ei, int64_t b, int64_t e) {
  const pd_k_conv2d *p = j->p;
  int64_t lu = j->lanes, units = (p->oc + lu - 1) / lu, ohw = p->oh * p->ow;
  float *scratch = pd_k_host_alloc((lu == 16 ? pd_kcpu_depthwise16_lanes_floats(p)
                                              : pd_kcpu_depthwise8_lanes_floats(p)) *
                                   sizeof(float));
  for (int64_t u = b; u < e; u++) {
    int64_t n = u / units, c0 = u % units * lu, nc = p->oc - c0 < lu ? p->oc - c0 : lu;
    int64_t pl = n * p->oc + c0;
    if (scratch && nc == 16)
      pd_kcpu_depthwise16_lanes_f32(p, j->x, j->w, pl, j->y, ei, scratch);
    else if (scratch && nc == 8)
      pd_kcpu_depthwise8_lanes_f32(p, j->x, j->w, pl, j->y, ei, scratch);
    else if (j->simd == PD_KCPU_SIMD_AVX512)
      for (int64_t k = 0; k < nc; k++) pd_kcpu_depthwise16_f32(p, j->x, j->w, pl + k, j->y, ei);
    else
      for (int64_t k = 0; k < nc; k++) pd_kcpu_depthwise8_f32(p, j->x, j->w, pl + k, j->y, ei);
    if (!ei && j->ep) pd_kcpu_conv_epilogue(j->dt, p, j->ep, j->y, n, c0, c0 + nc, 0, ohw);
  }
  pd_k_host_free(scratch);
}
#endif

/* The depthwise kernels' form of the epilogue ep in ei (bias and residual of the whole output,
 * the activation's code and parameters); false where they cannot apply it as they store (ep
 * NULL, or an activation not piecewise linear): conv.c's epilogue then follows. */
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
static bool dw_epi(const pd_k_conv_epilogue *ep, pd_kcpu_epi16 *ei) {
  int code = ep ? epi_inline(ep) : EPI_NONE;
  *ei = (pd_kcpu_epi16){.act = code};
  if (!ep || code == EPI_OTHER) return false;
  epi_params(ep, ei->p);
  ei->rbias = ep->bias, ei->res = ep->residual;
  return true;
}
#endif

/* Planes [b, e) of the n * oc, each with its epilogue (whose channel is the plane's); units of
 * dw_job.lanes channels where it is set. */
static void depthwise_range(void *vjob, int64_t b, int64_t e) {
  const dw_job *j = vjob;
  const pd_k_conv2d *p = j->p;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (j->simd != PD_KCPU_SIMD_BASE) {
    const pd_k_conv_epilogue *ep = j->ep;
    pd_kcpu_epi16 ei;
    bool inl = dw_epi(ep, &ei);
    if (j->lanes) {
      lanes_range(j, inl ? &ei : NULL, b, e);
      return;
    }
    for (int64_t pl = b; pl < e; pl++) {
      if (j->simd == PD_KCPU_SIMD_AVX512)
        pd_kcpu_depthwise16_f32(p, j->x, j->w, pl, j->y, inl ? &ei : NULL);
      else
        pd_kcpu_depthwise8_f32(p, j->x, j->w, pl, j->y, inl ? &ei : NULL);
      if (!inl)
        pd_kcpu_conv_epilogue(j->dt, p, ep, j->y, pl / p->oc, pl % p->oc, pl % p->oc + 1, 0,
                              p->oh * p->ow);
    }
    return;
  }
#endif
  for (int64_t pl = b; pl < e; pl++) {
    if (j->dt == PD_FP32) depthwise_planes_f32(p, j->x, j->w, j->y, pl, pl + 1);
    else
      depthwise_planes_f64(p, j->x, j->w, j->y, pl, pl + 1);
    pd_kcpu_conv_epilogue(j->dt, p, j->ep, j->y, pl / p->oc, pl % p->oc, pl % p->oc + 1, 0,
                          p->oh * p->ow);
  }
}

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
/* Fewer images than threads (an inference request): thread t of nt takes band t of every output
 * plane's rows, not a share of the planes. The 1x1 convolution before a depthwise one splits
 * its output's pixels (conv_cols_part), and the one after it its input's: split by rows, each
 * thread reads the rows that it wrote itself and writes those that it will read, in its own
 * cache. Split by planes, half of each thread's input came from the other core's (MobileNetV3's
 * 64-channel 3x3 at stride 2 on 112x112: 143 us where ONNX Runtime takes 79; by rows 120). */
static void depthwise_rows_part(void *vjob, int t, int nt) {
  const dw_job *j = vjob;
  const pd_k_conv2d *p = j->p;
  int64_t y0 = p->oh * t / nt, y1 = p->oh * (t + 1) / nt;
  if (y1 <= y0) return;
  const pd_k_conv_epilogue *ep = j->ep;
  pd_kcpu_epi16 ei;
  bool inl = dw_epi(ep, &ei);
  for (int64_t pl = 0; pl < p->n * p->oc; pl++) {
    pd_kcpu_depthwise16_rows_f32(p, j->x, j->w, pl, j->y, inl ? &ei : NULL, y0, y1);
    if (!inl)
      pd_kcpu_conv_epilogue(j->dt, p, ep, j->y, pl / p->oc, pl % p->oc, pl % p->oc + 1, y0 * p->ow,
               y1 * p->ow);
  }
}
#endif

/* ---- An image's first layer (at most 4 input channels and 16 filters: conv_avx512.c's fewc16,
 * which says how and what it saves) in fp32 on AVX-512, its epilogue in the stores: the output
 * rows of all the images split across the pool. ---- */
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
typedef struct fewc_job {
  const pd_k_conv2d *p;
  const float *x, *packed;
  float *y;
  const pd_kcpu_epi16 *e;
} fewc_job;

static bool fewc_takes(pd_dtype dt, const pd_k_conv2d *p, const conv_plan *cp,
                       const pd_k_conv_epilogue *ep) {
  return dt == PD_FP32 && pd_kcpu_simd() == PD_KCPU_SIMD_AVX512 && !lp_products(dt, p, &cp->k) &&
         pd_kcpu_conv_fewc16_takes(p) && (!ep || epi_inline(ep) != EPI_OTHER);
}

static void fewc_range(void *vjob, int64_t b, int64_t e) {
  const fewc_job *j = vjob;
  for (int64_t r = b; r < e; r++)
    pd_kcpu_conv_fewc16_row_f32(j->p, j->x, j->packed, r / j->p->oh, r % j->p->oh, j->y, j->e);
}

static pd_status fewc(const pd_k_conv2d *p, const pd_k_conv_epilogue *ep, const float *x,
                      const float *w, float *y) {
  float *packed = pd_k_host_alloc((size_t)pd_kcpu_conv_fewc16_packed_floats(p) * sizeof(float));
  if (!packed) return PD_ENOMEM;
  pd_kcpu_conv_fewc16_pack(p, w, packed);
  pd_kcpu_epi16 ei;
  bool inl = dw_epi(ep, &ei);
  fewc_job j = {.p = p, .x = x, .packed = packed, .y = y, .e = inl ? &ei : NULL};
  int64_t row = p->ow * p->oc * p->c * p->kh * p->kw; /* multiply-adds an output row */
  pd_kcpu_parallel(p->n * p->oh, CONV_MIN_WORK / (row > 0 ? row : 1) + 1, fewc_range, &j);
  pd_k_host_free(packed);
  return PD_OK;
}
#endif

/* ---- A convolution of one or two filters (a detection head's 96 -> 1 5x5 layer): each
 * output plane the sum over the input channels of that channel convolved with its slice of the
 * filter, each a plane of the depthwise kernel (conv_avx512.c, conv_avx2.c). Through im2col
 * the column matrix was kh kw times the image to be read once per filter: PicoDet's four such
 * layers spent 10% of its time making columns. fp32 on AVX-512 or AVX2; the images split
 * across the pool. ---- */
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#define FEW_FILTERS 2

static bool few_filters_take(pd_dtype dt, const pd_k_conv2d *p) {
  if (dt != PD_FP32 || p->groups != 1 || p->oc > FEW_FILTERS || p->c < 2 ||
      (p->kh == 1 && p->kw == 1))
    return false;
  pd_k_conv2d q = *p;
  q.c = q.oc = q.groups = 1;
  int level = pd_kcpu_simd();
  return (level == PD_KCPU_SIMD_AVX512 && pd_kcpu_depthwise16_takes(&q)) ||
         (level == PD_KCPU_SIMD_AVX2 && pd_kcpu_depthwise8_takes(&q));
}

typedef struct few_job {
  const pd_k_conv2d *p;
  const pd_k_conv_epilogue *ep;
  const float *x, *w;
  float *y;
  atomic_bool failed;
} few_job;

static void few_range(void *vjob, int64_t b, int64_t e) {
  few_job *j = vjob;
  const pd_k_conv2d *p = j->p;
  int64_t ohw = p->oh * p->ow, plane = p->h * p->w, taps = p->kh * p->kw;
  pd_k_conv2d q = *p; /* one channel through one filter slice */
  q.n = q.c = q.oc = q.groups = 1;
  bool wide = pd_kcpu_simd() == PD_KCPU_SIMD_AVX512;
  float *tmp = pd_k_host_alloc((size_t)ohw * sizeof(float));
  if (!tmp) {
    atomic_store(&j->failed, true);
    return;
  }
  for (int64_t n = b; n < e; n++)
    for (int64_t o = 0; o < p->oc; o++) {
      float *yo = j->y + (n * p->oc + o) * ohw;
      for (int64_t ci = 0; ci < p->c; ci++) {
        const float *xc = j->x + (n * p->c + ci) * plane, *wc = j->w + (o * p->c + ci) * taps;
        float *dst = ci ? tmp : yo;
        if (wide) pd_kcpu_depthwise16_f32(&q, xc, wc, 0, dst, NULL);
        else pd_kcpu_depthwise8_f32(&q, xc, wc, 0, dst, NULL);
        if (ci) PD_SIMD for (int64_t i = 0; i < ohw; i++) yo[i] += tmp[i];
      }
      pd_kcpu_conv_epilogue(PD_FP32, p, j->ep, j->y, n, o, o + 1, 0, ohw);
    }
  pd_k_host_free(tmp);
}
#endif

/* ---- A 1x1 convolution of one-pixel maps (a squeeze-excitation's two, a classifier head's
 * after global pooling), fp32 on AVX-512 or AVX2: Y [n, oc] = X [n, c] W^T, each output a dot
 * product of an image with a filter, each filter read once for the whole batch (gemm_nt16,
 * gemm_nt8); the threads split the filters; the epilogue after each thread's part. Image by
 * image the product had one column: MobileNetV3's 960 -> 1280 head took 1.06 ms at batch 2,
 * OpenBLAS packing the 4.9 MB of filters again for each image, where reading them once is the
 * bound. ---- */
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#define PIXEL_STEP 16 /* filters: the threads' parts are multiples of this */

typedef struct pixel_job {
  const pd_k_conv2d *p;
  const pd_k_conv_epilogue *ep;
  const float *x, *w;
  float *y;
} pixel_job;

/* One output pixel: never gemm_lp's product (lp_products), fp32 under mixed precision too. */
static bool pixel_rows_take(pd_dtype dt, const pd_k_conv2d *p) {
  return dt == PD_FP32 && p->groups == 1 &&
         p->kh == 1 && p->kw == 1 && p->h == 1 && p->w == 1 && p->oh == 1 && p->ow == 1 &&
         pd_kcpu_simd() != PD_KCPU_SIMD_BASE;
}

static void pixel_part(void *vjob, int t, int nt) {
  const pixel_job *j = vjob;
  const pd_k_conv2d *p = j->p;
  int64_t steps = (p->oc + PIXEL_STEP - 1) / PIXEL_STEP, b, e;
  image_range(steps, t, nt, &b, &e);
  b *= PIXEL_STEP;
  e = e * PIXEL_STEP < p->oc ? e * PIXEL_STEP : p->oc;
  if (e <= b) return;
  if (pd_kcpu_simd() == PD_KCPU_SIMD_AVX512)
    pd_kcpu_gemm_nt16_f32(p->n, e - b, p->c, j->x, p->c, j->w + b * p->c, p->c, j->y + b, p->oc);
  else
    pd_kcpu_gemm_nt8_f32(p->n, e - b, p->c, j->x, p->c, j->w + b * p->c, p->c, j->y + b, p->oc);
  for (int64_t n = 0; n < p->n; n++) pd_kcpu_conv_epilogue(PD_FP32, p, j->ep, j->y, n, b, e, 0, 1);
}

static void pixel_rows(const pd_k_conv2d *p, const pd_k_conv_epilogue *ep, const float *x,
                       const float *w, float *y) {
  pixel_job j = {p, ep, x, w, y};
  int nt = pd_kcpu_blas_team();
  int64_t steps = (p->oc + PIXEL_STEP - 1) / PIXEL_STEP;
  if (nt > steps) nt = (int)steps;
  if (nt < 1 || p->n * p->oc * p->c < CONV_MIN_WORK) nt = 1;
  pd_kcpu_team(nt, pixel_part, &j);
}
#endif

pd_status pd_kcpu_conv2d(pd_dtype dt, const pd_k_conv2d *p, const void *x, const void *w,
                         void *y) {
  return pd_kcpu_conv2d_fused(dt, p, x, w, NULL, y, NULL);
}

/* ---- Filter rows and columns that only ever meet the padding ----
 * A 3x3 convolution with padding 1 over a map one row high (PP-OCRv3's and v4's SVTR neck: 1024
 * -> 64 channels on 1x40, 7% of the recogniser's time) multiplies its filters' first and last
 * rows by zeros for every output: such taps are dropped, the convolution computed with the live
 * rows and columns of the filters (copied, and for a filter that stays the same kept in the
 * prepared slot) and the padding less by as much. The sums lose only terms that are 0. */
typedef struct trimmed {
  pd_k_prepared base; /* rows oc, cols c / groups kh kw: the untrimmed filters' */
  int64_t i0, nh, j0, nw;
  void *w;
} trimmed;

#define TRIMMED_HEADER (((sizeof(trimmed) + PD_K_ALIGN - 1) / PD_K_ALIGN) * PD_K_ALIGN)

static void trimmed_release(pd_k_prepared *p) { pd_k_host_free(p); }

/* The taps [*lo, *lo + *n) of k that meet the input (in wide) for some output (out of them):
 * tap i reads o s - pad + i d for o < out. */
static void live_taps(int64_t k, int64_t in, int64_t out, int64_t s, int64_t pad, int64_t d,
                      int64_t *lo, int64_t *n) {
  int64_t a = pad - (out - 1) * s, i0 = a <= 0 ? 0 : (a + d - 1) / d;
  int64_t i1 = (in - 1 + pad) / d + 1;
  *lo = i0;
  *n = (i1 < k ? i1 : k) - i0;
}

/* The trimmed problem of p in *q and its filters, from *prep when they are there; false where
 * nothing is to be trimmed (or all is: the outputs are then the epilogue's of 0s) or there is no
 * memory (the convolution is then computed whole). *own: a copy to free (no prep). */
static bool trim(pd_dtype dt, const pd_k_conv2d *p, const void *w, pd_k_prepared **prep,
                 pd_k_conv2d *q, const void **wq, void **own) {
  int64_t i0, nh, j0, nw;
  live_taps(p->kh, p->h, p->oh, p->stride_h, p->pad_top, p->dil_h, &i0, &nh);
  live_taps(p->kw, p->w, p->ow, p->stride_w, p->pad_left, p->dil_w, &j0, &nw);
  if ((nh == p->kh && nw == p->kw) || nh <= 0 || nw <= 0) return false;
  *q = *p;
  q->kh = nh, q->kw = nw;
  q->pad_top -= i0 * p->dil_h, q->pad_bottom -= (p->kh - i0 - nh) * p->dil_h;
  q->pad_left -= j0 * p->dil_w, q->pad_right -= (p->kw - j0 - nw) * p->dil_w;
  if (q->pad_bottom < 0 || q->pad_right < 0) return false;
  int64_t cg = p->c / p->groups, cols = cg * p->kh * p->kw;
  trimmed *t = prep ? (trimmed *)*prep : NULL;
  if (t && t->base.release == trimmed_release && t->base.dt == dt && t->base.rows == p->oc &&
      t->base.cols == cols && t->i0 == i0 && t->nh == nh && t->j0 == j0 && t->nw == nw) {
    *wq = t->w;
    return true;
  }
  size_t sz = pd_dtype_size(dt);
  char *mem = pd_k_host_alloc(TRIMMED_HEADER + (size_t)(p->oc * cg * nh * nw) * sz);
  if (!mem) return false;
  t = (trimmed *)mem;
  *t = (trimmed){{trimmed_release, dt, p->oc, cols}, i0, nh, j0, nw, mem + TRIMMED_HEADER};
  for (int64_t f = 0; f < p->oc * cg; f++)
    for (int64_t i = 0; i < nh; i++)
      memcpy((char *)t->w + ((f * nh + i) * nw) * (int64_t)sz,
             (const char *)w + ((f * p->kh + i0 + i) * p->kw + j0) * (int64_t)sz,
             (size_t)nw * sz);
  if (prep) {
    if (*prep) (*prep)->release(*prep);
    *prep = &t->base;
  } else {
    *own = mem;
  }
  *wq = t->w;
  return true;
}

pd_status pd_kcpu_conv2d_fused(pd_dtype dt, const pd_k_conv2d *p, const void *x, const void *w,
                               const pd_k_conv_epilogue *ep, void *y, pd_k_prepared **prep) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p, true);
  if (!st) st = pd_k_conv_epilogue_check(dt, ep);
  if (st || p->n == 0) return st;
  if (ep && !ep->bias && !ep->residual && ep->kind == PD_K_EPI_NONE) ep = NULL;
  pd_k_conv2d q;
  const void *wq;
  void *copy = NULL;
  if (trim(dt, p, w, prep, &q, &wq, &copy)) {
    st = pd_kcpu_conv2d_fused(dt, &q, x, wq, ep, y, NULL);
    pd_k_host_free(copy);
    return st;
  }
  if (p->groups == p->c && p->groups > 1) { /* depthwise: direct, plane by plane */
    dw_job d = {.dt = dt, .p = p, .ep = ep, .x = x, .w = w, .y = y};
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
    int level = dt == PD_FP32 ? pd_kcpu_simd() : PD_KCPU_SIMD_BASE;
    if (level == PD_KCPU_SIMD_AVX512 && pd_kcpu_depthwise16_takes(p)) d.simd = level;
    if (level == PD_KCPU_SIMD_AVX2 && pd_kcpu_depthwise8_takes(p)) d.simd = level;
    /* on AVX-512, with the channels in the lanes: 5x5 filters at stride 1 across (sixteen
     * lanes took 0.57-0.77x the time of the planes on MobileNetV3's, PP-LCNet's, PicoDet's and
     * PP-OCRv3's, eight 0.53-1.03x) and at stride 2 (0.69x eight's on a DB detector's 96
     * channels of 80x80, 0.84-0.9x on PP-OCRv3's 512 of 3x160, 0.85-0.94x on 20x20 and 28x28),
     * and 3x3 ones at stride 1 on rows narrower than a vector (7x7 0.50x, 14x14 0.85-1.0x) in
     * sixteen; the planes for the other 3x3 ones (sixteen lanes 1.0-2.1x their time; at
     * stride 2, 1.4-2.1x) */
    if (d.simd == PD_KCPU_SIMD_AVX2 && pd_kcpu_depthwise8_lanes_takes(p)) d.lanes = 8;
    if (d.simd == PD_KCPU_SIMD_AVX512) {
      bool narrow3 = p->kw == 3 && p->ow < 16 && p->stride_w == 1;
      if ((p->kw == 5 || narrow3) && pd_kcpu_depthwise16_lanes_takes(p)) d.lanes = 16;
      else if (p->kw == 5 && pd_kcpu_depthwise8_lanes_takes(p)) d.lanes = 8;
    }
    int nt = pd_kcpu_blas_team();
    /* by bands of rows where the 1x1 convolution before it split its columns (conv.c's
     * CONV_ROWS_BELOW), each band at least eight rows */
    if (d.simd == PD_KCPU_SIMD_AVX512 && !d.lanes && nt > 1 && p->n < nt &&
        p->h * p->w >= CONV_ROWS_BELOW * nt && p->oh >= 8 * nt &&
        p->n * p->oc * p->oh * p->ow * p->kh * p->kw >= CONV_MIN_WORK) {
      pd_kcpu_team(nt, depthwise_rows_part, &d);
      return PD_OK;
    }
#endif
    int64_t per = p->oh * p->ow * p->kh * p->kw, unit = d.lanes ? d.lanes : 1;
    pd_kcpu_parallel(p->n * ((p->oc + unit - 1) / unit),
                     per > 0 ? ((int64_t)1 << 15) / (per * unit) + 1 : 1, depthwise_range, &d);
    return PD_OK;
  }
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (pixel_rows_take(dt, p)) {
    pixel_rows(p, ep, x, w, y);
    return PD_OK;
  }
  if (few_filters_take(dt, p)) {
    few_job f = {.p = p, .ep = ep, .x = x, .w = w, .y = y};
    atomic_init(&f.failed, false);
    pd_kcpu_parallel(p->n, 1, few_range, &f);
    return atomic_load(&f.failed) ? PD_ENOMEM : PD_OK;
  }
  if (fewc_takes(dt, p, &cp, ep)) return fewc(p, ep, x, w, y);
  int tile = pd_kcpu_wino_tile(dt, p);
  if (tile) return pd_kcpu_wino_conv(p, tile, ep, x, w, y, prep);
#endif
  conv_job j = {.dt = dt, .p = p, .cp = &cp, .ep = ep, .x = x, .w = w, .y = y};
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (prep && tposed_takes(dt, p, &cp, ep)) j.wt = tposed_filters(p, &cp, w, prep);
  if (j.wt && !cp.k.direct) { /* plain columns: the product's A^T */
    cp.panels = false;
    cp.col_bytes = (size_t)(cp.k.rows * cp.k.ohw) * cp.k.sz;
  }
#endif
  int nt = pd_kcpu_blas_team();
  if (p->n >= nt || nt < 2 || p->n * cp.k.out_img * cp.k.kdim < CONV_MIN_WORK)
    return conv_run(&j, conv_fwd_part);
  /* fewer images than threads: each image's columns split across the threads, or its filters
   * where it has few columns */
  bool by_rows = cp.k.g == 1 && (j.wt || cp.k.ohw < CONV_ROWS_BELOW * nt) && cp.k.ocg >= 8 * nt;
  /* the parts make their own panels, but for a split by filters */
  bool own = cp.panels && !by_rows, failed = false;
  j.failed = &failed;
  size_t col_bytes = cp.col_bytes;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (cp.panels) /* every panel of the image at once: few of them */
    col_bytes = (size_t)((cp.k.ohw + cp.pw - 1) / cp.pw * cp.pw * cp.k.kdim) * sizeof(float);
#endif
  void *col = col_bytes && !own ? pd_k_host_alloc(col_bytes) : NULL;
  if (col_bytes && !own && !col) return PD_ENOMEM;
  for (int64_t n = 0; n < p->n && !failed; n++) {
    const void *xn = AT(x, n * cp.k.in_img, cp.k.sz);
    cols_job c = {.j = &j, .col = col ? col : xn, .n = n, .by_rows = by_rows, .failed = &failed};
    if (col && cp.panels) { /* the panels made by all the threads first (one was 10-20% of a
                             * ResNet50 layer on 14x14 while the other waited) */
      c.make = true;
      pd_kcpu_team(nt, conv_cols_part, &c);
      c.make = false;
    } else if (col && j.wt) {
      c.make = true;
      pd_kcpu_team(nt, conv_cols_part, &c);
      c.make = false;
    } else if (col) {
      pd_kcpu_im2col(dt, p, xn, col);
    }
    pd_kcpu_team(nt, conv_cols_part, &c);
  }
  pd_k_host_free(col);
  return failed ? PD_ENOMEM : PD_OK;
}

/* The data gradient dx [n, c, h, w] of p seen as a convolution's output, for
 * pd_kcpu_conv_epilogue(): its channels p's c, its pixels p's h x w. */
static pd_k_conv2d tconv_out(const pd_k_conv2d *p) {
  pd_k_conv2d o = *p;
  o.oc = p->c, o.oh = p->h, o.ow = p->w;
  return o;
}

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
typedef struct unstride_job {
  const pd_k_conv2d *p;
  const float *w, *dy;
  float *dx;
  const pd_k_conv_epilogue *ep; /* NULL: none; else on each row of dx as it is made */
  pd_k_conv2d out;              /* dx as a convolution's output (tconv_out) */
  atomic_bool failed;
} unstride_job;

/* Rows [b, e) of the n * h of dx (row y of image n, every channel): row i of dy's every channel
 * copied side by side first, then rows 2i and 2i + 1 made from it. Read where it lies, a plane
 * apart, the channels' rows fell in one set of the L1 cache when a plane is a multiple of 4 KiB
 * (DB's 160 x 160), and the row took 10 ms an image instead of 1.7. */
static void unstride_range(void *vjob, int64_t b, int64_t e) {
  unstride_job *j = vjob;
  const pd_k_conv2d *p = j->p;
  float *rows = pd_k_host_alloc((size_t)(p->oc * p->ow) * sizeof(float));
  if (!rows) {
    atomic_store(&j->failed, true);
    return;
  }
  bool wide = pd_kcpu_simd() == PD_KCPU_SIMD_AVX512;
  int64_t plane = p->oh * p->ow, held = -1;
  for (int64_t r = b; r < e; r++) {
    int64_t y = r % p->h, n = r / p->h;
    if (r / 2 != held) { /* rows 2i and 2i + 1 of dx read row i of dy */
      const float *src = j->dy + n * p->oc * plane + (y / 2) * p->ow;
      for (int64_t o = 0; o < p->oc; o++)
        memcpy(rows + o * p->ow, src + o * plane, (size_t)p->ow * sizeof(float));
      held = r / 2;
    }
    float *dxn = j->dx + n * p->c * p->h * p->w;
    if (wide) pd_kcpu_unstride2_row16_f32(p, j->w, rows, dxn, y);
    else pd_kcpu_unstride2_row8_f32(p, j->w, rows, dxn, y);
    /* the row of every channel, still in the cache */
    pd_kcpu_conv_epilogue(PD_FP32, &j->out, j->ep, j->dx, n, 0, p->c, y * p->w, (y + 1) * p->w);
  }
  pd_k_host_free(rows);
}
#endif

/* The data gradient dx of a convolution, then ep (NULL: none) on it as tconv_out sees it. */
static pd_status bwd_data(pd_dtype dt, const pd_k_conv2d *p, const void *w, const void *dy,
                          void *dx, const pd_k_conv_epilogue *ep) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p, false);
  if (st || p->n == 0) return st;
  pd_k_conv2d out = tconv_out(p);
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  /* a 2x2 kernel of stride 2 (an upsampling head's transposed convolution): each row of dx
   * written once, directly (conv_avx512.c, conv_avx2.c), the epilogue on it as it is made */
  if (dt == PD_FP32 && p->lp != PD_BF16 && p->lp != PD_FP16 && pd_kcpu_unstride2_takes(p) &&
      pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2) {
    unstride_job u = {p, w, dy, dx, ep, out, false};
    int64_t per_row = p->c * p->oc * p->ow * 2; /* multiply-adds of a row of every channel */
    pd_kcpu_parallel(p->n * p->h, ((int64_t)1 << 16) / (per_row > 0 ? per_row : 1) + 1,
                     unstride_range, &u);
    return atomic_load(&u.failed) ? PD_ENOMEM : PD_OK;
  }
#endif
  conv_job j = {.dt = dt, .p = p, .cp = &cp, .w = w, .dy = dy, .dx = dx};
  st = conv_run(&j, conv_bwd_data_part);
  for (int64_t n = 0; !st && ep && n < p->n; n++)
    pd_kcpu_conv_epilogue(dt, &out, ep, dx, n, 0, p->c, 0, p->h * p->w);
  return st;
}

pd_status pd_kcpu_conv2d_bwd_data(pd_dtype dt, const pd_k_conv2d *p, const void *w,
                                  const void *dy, void *dx) {
  return bwd_data(dt, p, w, dy, dx, NULL);
}

pd_status pd_kcpu_conv2d_transpose_fused(pd_dtype dt, const pd_k_conv2d *p, const void *w,
                                         const void *x, const pd_k_conv_epilogue *ep, void *y) {
  pd_status st = pd_k_conv_epilogue_check(dt, ep);
  if (st) return st;
  if (ep && !ep->bias && !ep->residual && ep->kind == PD_K_EPI_NONE) ep = NULL;
  return bwd_data(dt, p, w, x, y, ep);
}

pd_status pd_kcpu_conv2d_bwd_filter(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                    const void *dy, void *dw) {
  conv_plan cp;
  pd_status st = conv_begin(&cp, dt, p, false);
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
