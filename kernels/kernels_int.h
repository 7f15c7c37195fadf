/* kernels_int.h -- private to the backends (kernels/cpu/, kernels/cuda/): the argument checks
 * and shape helpers that every backend runs before it computes, written once (kernels.c) so
 * that the CPU and the GPU return the same status for the same arguments. Not for the layers
 * above, which see kernels/kernels.h only.
 *
 * Ownership: nothing here allocates; results go into caller-provided arrays and structs. */
#ifndef PD_KERNELS_INT_H
#define PD_KERNELS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

/* ---- Strides ---- */
/* Contiguous (row-major) strides of a shape, in elements. */
void pd_k_contig_strides(int nd, const int64_t *dims, int64_t *strides);
/* The broadcast of out = x OP y as strides over out's dims: pd_k_broadcast_dims (the padded
 * shapes in *nd, od, xp, yp; PD_ESHAPE / PD_EINVAL as it says), then in str the contiguous
 * strides of out (str[0]), x (str[1]) and y (str[2]), 0 along the dims x or y broadcast. */
pd_status pd_k_broadcast_strides(int xnd, const int64_t *xdims, int ynd, const int64_t *ydims,
                                 int axis, int *nd, int64_t *od, int64_t *xp, int64_t *yp,
                                 int64_t (*str)[PD_K_MAX_DIMS]);
/* Drop the size-1 dims of an nd-dim shape over nops operands (strides[k][d] for operand k)
 * and merge the dims that are contiguous for every operand, into out_dims/out_strides;
 * returns the number of dims left (>= 1: a single element is one dim of size 1 with stride 0)
 * and the element count in *numel. */
int pd_k_merge_dims(int nd, const int64_t *dims, int nops, const int64_t (*strides)[PD_K_MAX_DIMS],
                    int64_t *out_dims, int64_t (*out_strides)[PD_K_MAX_DIMS], int64_t *numel);
/* Which dims a reduction reduces (red[d]; naxes == 0: all); PD_EINVAL for a bad axis list (as
 * pd_k_reduce_shape). */
pd_status pd_k_reduced_mask(int nd, const int64_t *dims, int naxes, const int *axes, bool *red);

/* ---- Argument checks (PD_EINVAL for bad sizes, PD_EUNSUPPORTED for a dtype) ---- */
/* A row-major GEMM: sizes and row strides fit a BLAS int; each leading dim covers a row. */
pd_status pd_k_gemm_check(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          int64_t lda, int64_t ldb, int64_t ldc);
/* gemm_lp's: lp PD_BF16 or PD_FP16 (else PD_EUNSUPPORTED), then pd_k_gemm_check, then batch and
 * strides non-negative (PD_EINVAL). */
pd_status pd_k_gemm_lp_check(pd_dtype lp, bool trans_a, bool trans_b, int64_t batch, int64_t m,
                             int64_t n, int64_t k, int64_t lda, int64_t stride_a, int64_t ldb,
                             int64_t stride_b, int64_t ldc, int64_t stride_c);
/* The arguments of act/act_grad (kernels.h): PD_EINVAL for an unknown op, n < 0, p NULL where
 * the op takes parameters (pd_k_act_nparams of them), softplus's beta or hard_swish's scale 0;
 * then PD_EUNSUPPORTED for a dtype other than fp32/fp64. */
pd_status pd_k_act_check(pd_k_act op, pd_dtype dt, int64_t n, const double *p);
/* After the check: the activation a backend computes and its three parameters q (the ones the
 * op does not take 0): silu becomes swish with beta 1, the others stay. */
void pd_k_act_canon(pd_k_act *op, const double *p, double q[3]);
/* gemm_act / gemm_act_chain: fp32/fp64, a fused activation (tanh, sigmoid, relu), the GEMM's
 * check, and for the gradient a pre-activation h whose rows hold n. */
pd_status pd_k_gemm_act_check(pd_k_unop act, bool grad, pd_dtype dt, bool trans_a, bool trans_b,
                              int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                              int64_t ldc, const void *h, int64_t ldh);
/* uniform (a = low, b = high) / gaussian (normal: a = mean, b = std): fp32/fp64, n >= 0, an
 * rng, finite bounds, low <= high or std >= 0. */
pd_status pd_k_random_check(pd_dtype dt, int64_t n, const pd_k_rng *rng, double a, double b,
                            bool normal);
/* concat / split: nparts sizes along the middle axis of [pre, total, post]; *total = their sum. */
pd_status pd_k_parts_check(pd_dtype dt, int nparts, const int64_t *sizes, int64_t pre,
                           int64_t post, int64_t *total);
/* gather_rows / scatter_add_rows: fp32/fp64, [nrows, width] and [nids, width] sizes (the ids
 * themselves are the backend's to check: they may live on the device). */
pd_status pd_k_rows_check(pd_dtype dt, int64_t nrows, int64_t width, int64_t nids);
/* opt's check: a known kind, n >= 0, finite hyper-parameters, p, g, p_out and the kind's state
 * buffers set when n > 0 (PD_EINVAL), then fp32/fp64 (PD_EUNSUPPORTED). */
pd_status pd_k_opt_check(pd_dtype dt, int64_t n, const pd_k_opt *o, const void *p,
                         const void *g, const void *const *s, void *p_out, void *const *s_out);
/* unscale: n >= 0, x and out with n > 0, found, a finite inv_scale, fp32/fp64. */
pd_status pd_k_unscale_check(pd_dtype dt, int64_t n, const void *x, double inv_scale,
                             const void *out, const bool *found);
/* strided_copy: a dtype of 1, 2, 4 or 8 bytes, 0 <= nd <= PD_K_MAX_DIMS, od >= 0 that fits,
 * sd >= 1, sstr >= 0 and off >= 0. */
pd_status pd_k_strided_check(pd_dtype dt, int nd, const int64_t *od, const int64_t *sd,
                             const int64_t *sstr, int64_t off);
/* where: a dtype of 1, 2, 4 or 8 bytes, 0 <= nd <= PD_K_MAX_DIMS, od >= 0 that fits, strides
 * >= 0. */
pd_status pd_k_where_check(pd_dtype dt, int nd, const int64_t *od, const int64_t *cstr,
                           const int64_t *xstr, const int64_t *ystr);
/* pad / pad_grad (kernels.h): a known mode, 0 <= nd <= PD_K_MAX_DIMS, xd, before, after >= 0
 * whose out dims (to od) and element counts fit, a padded dim of a mode other than constant
 * not empty and, for reflect, larger than either padding (PD_EINVAL); then fp32, fp64, int32
 * or int64 (grad: fp32 or fp64; PD_EUNSUPPORTED). */
pd_status pd_k_pad_check(pd_dtype dt, int nd, const int64_t *xd, const int64_t *before,
                         const int64_t *after, pd_k_pad_mode mode, bool grad, int64_t *od);
#ifdef __CUDACC__
#define PD_K_HOST_DEVICE __host__ __device__
#else
#define PD_K_HOST_DEVICE
#endif
/* The index of x that index o of a padded dim reads (n elements, b padded before), or -1 for
 * the value of constant padding; the arguments are pd_k_pad_check's. */
PD_K_HOST_DEVICE static inline int64_t pd_k_pad_src(int64_t o, int64_t n, int64_t b,
                                                    pd_k_pad_mode mode) {
  int64_t i = o - b;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PD_K_PAD_REFLECT: return i < 0 ? -i : 2 * (n - 1) - i;
    case PD_K_PAD_EDGE: return i < 0 ? 0 : n - 1;
    case PD_K_PAD_CIRCULAR: return (i % n + n) % n;
    default: return -1;
  }
}

/* softmax-like slices [pre, n, post]: pre >= 0, n and post >= 1, the product fits. */
pd_status pd_k_slices_check(int64_t pre, int64_t n, int64_t post);
/* attention's: every size positive (batch and sq may be 0), the scale not NaN, the strides not
 * negative, the tensors' sizes fit. */
pd_status pd_k_attention_check(const pd_k_attention *a);
/* p is what pd_k_conv2d_setup accepts, with its output size. */
pd_status pd_k_conv2d_check(const pd_k_conv2d *p);
/* A fused convolution's epilogue (NULL passes): its kind, op and parameters. */
pd_status pd_k_conv_epilogue_check(pd_dtype dt, const pd_k_conv_epilogue *ep);
/* fp32/fp64, and p is what pd_k_pool2d_setup accepts, with its output size. */
pd_status pd_k_pool2d_check(pd_dtype dt, const pd_k_pool2d *p);
/* batch_norm ([n, c, s]) and layer_norm ([n rows, c cols], s = 1): fp32/fp64, sizes >= 0 whose
 * product fits, epsilon >= 0 (and not NaN); with batch statistics, n * s >= 2 per channel
 * (one value has no variance to estimate). */
static inline pd_status pd_k_norm_check(pd_dtype dt, int64_t n, int64_t c, int64_t s,
                                        double epsilon, bool batch_stats) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (n < 0 || c < 0 || s < 0 || !(epsilon >= 0)) return PD_EINVAL;
  if (n && c && s && (n > INT64_MAX / c || n * c > INT64_MAX / s)) return PD_EINVAL;
  if (batch_stats && c > 0 && n * s < 2) return PD_EINVAL;
  return PD_OK;
}

/* lstm_cell, gru_cell and their gradients (kernels.h): fp32/fp64, n, h >= 0 whose product
 * times 4 fits. */
static inline pd_status pd_k_rnn_cell_check(pd_dtype dt, int64_t n, int64_t h) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (n < 0 || h < 0 || (h && n > INT64_MAX / 4 / h)) return PD_EINVAL;
  return PD_OK;
}

/* The low precision of a recurrence's products (PD_BF16, PD_FP16), or 0 when it has none. */
static inline pd_dtype pd_k_rnn_seq_lp(const pd_k_rnn_seq *s) {
  return s->lp == PD_BF16 || s->lp == PD_FP16 ? s->lp : (pd_dtype)0;
}

/* A whole-sequence recurrence's batch (kernels.h: pd_k_rnn_seq): dtype, sizes, and koff and
 * row describing steps of non-increasing sizes, at most nseq rows each, every row in range
 * (below rows, which is 0 or at least koff[steps]). */
static inline pd_status pd_k_rnn_seq_check(const pd_k_rnn_seq *s) {
  if (!s) return PD_EINVAL;
  if (s->dt != PD_FP32 && s->dt != PD_FP64) return PD_EUNSUPPORTED;
  if (pd_k_rnn_seq_lp(s) && s->dt != PD_FP32) return PD_EUNSUPPORTED;
  if (s->hid < 0 || s->nseq < 0 || s->steps < 0 || (s->hid && s->nseq > INT64_MAX / 4 / s->hid))
    return PD_EINVAL;
  if (s->steps == 0) return PD_OK;
  if (!s->koff || !s->row || s->koff[0] != 0) return PD_EINVAL;
  for (int64_t k = 0; k < s->steps; k++) {
    int64_t n = s->koff[k + 1] - s->koff[k];
    if (n < 0 || n > s->nseq || (k && n > s->koff[k] - s->koff[k - 1])) return PD_EINVAL;
  }
  int64_t total = s->koff[s->steps], rows = s->rows ? s->rows : total;
  if (rows < total) return PD_EINVAL;
  for (int64_t i = 0; i < total; i++)
    if (s->row[i] < 0 || s->row[i] >= rows) return PD_EINVAL;
  return PD_OK;
}

/* The element-wise losses and their gradients (kernels.h; grad false: the forward, which needs
 * `out`; grad true: the gradient, which needs `dout`): fp32/fp64 (PD_EUNSUPPORTED), then
 * (PD_EINVAL) sizes >= 0 whose product fits, s2 and delta > 0, kldiv's scale finite, and the
 * buffers read or written set (`out`: the forward's output, or the gradient's dout): the inputs
 * when there are elements, smooth_l1's out or dout when there are rows, kldiv's loss always
 * when it reduces (it writes the sum of nothing). */
static inline pd_status pd_k_loss_sizes(pd_dtype dt, int64_t rows, int64_t cols) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (rows < 0 || cols < 0 || (cols && rows > INT64_MAX / cols)) return PD_EINVAL;
  return PD_OK;
}
static inline pd_status pd_k_sigmoid_xent_check(pd_dtype dt, int64_t n, const void *x,
                                                const void *label, const void *out) {
  pd_status st = pd_k_loss_sizes(dt, n, 1);
  if (st) return st;
  return n > 0 && (!x || !label || !out) ? PD_EINVAL : PD_OK;
}
static inline pd_status pd_k_smooth_l1_check(pd_dtype dt, int64_t rows, int64_t cols, double s2,
                                             const void *x, const void *y, const void *out) {
  pd_status st = pd_k_loss_sizes(dt, rows, cols);
  if (st) return st;
  if (!(s2 > 0) || (rows && cols && (!x || !y)) || (rows && !out)) return PD_EINVAL;
  return PD_OK;
}
static inline pd_status pd_k_huber_check(pd_dtype dt, int64_t n, double delta, const void *x,
                                         const void *y, const void *out) {
  pd_status st = pd_k_loss_sizes(dt, n, 1);
  if (st) return st;
  return !(delta > 0) || (n > 0 && (!x || !y || !out)) ? PD_EINVAL : PD_OK;
}
static inline pd_status pd_k_kldiv_check(pd_dtype dt, int64_t n, bool reduce, double scale,
                                         const void *x, const void *target, bool grad,
                                         const void *out) {
  pd_status st = pd_k_loss_sizes(dt, n, 1);
  if (st) return st;
  if (!(scale - scale == 0) || (n > 0 && (!x || !target))) return PD_EINVAL;
  if (!out && (n > 0 || (reduce && !grad))) return PD_EINVAL;
  return PD_OK;
}

/* dropout / dropout_grad (kernels.h): fp32/fp64 (PD_EUNSUPPORTED), then n >= 0, p in [0, 1],
 * scale finite, x and out (dy and dx) set when n > 0 (PD_EINVAL). */
static inline pd_status pd_k_dropout_check(pd_dtype dt, int64_t n, double p, double scale,
                                           const void *x, const void *out) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (n < 0 || !(p >= 0 && p <= 1) || !(scale - scale == 0)) return PD_EINVAL;
  return n > 0 && (!x || !out) ? PD_EINVAL : PD_OK;
}

/* copy_rows (kernels.h): an element of 1, 2, 4 or 8 bytes (PD_EUNSUPPORTED), n and width >= 0
 * whose product fits, src and dst set when there are elements (PD_EINVAL). */
static inline pd_status pd_k_copy_rows_check(pd_dtype dt, int64_t n, int64_t width,
                                             const void *src, const void *dst) {
  size_t es = pd_dtype_size(dt);
  if (es != 1 && es != 2 && es != 4 && es != 8) return PD_EUNSUPPORTED;
  if (n < 0 || width < 0 || (width && n > INT64_MAX / width)) return PD_EINVAL;
  return n && width && (!src || !dst) ? PD_EINVAL : PD_OK;
}

/* adaptive_pool2d / its gradient (kernels.h): fp32/fp64 (PD_EUNSUPPORTED), a known type, n,
 * c >= 0, h, w, oh, ow >= 1, n c h w, n c oh ow, oh h and ow w fitting, and with planes the
 * buffers x, a and b set (x, y, y; or x, dy, dx) (PD_EINVAL). */
static inline pd_status pd_k_adaptive_pool_check(pd_dtype dt, const pd_k_pool2d *p,
                                                 const void *x, const void *a, const void *b) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (!p || (p->type != PD_K_POOL_MAX && p->type != PD_K_POOL_AVG) || p->n < 0 || p->c < 0 ||
      p->h < 1 || p->w < 1 || p->oh < 1 || p->ow < 1)
    return PD_EINVAL;
  if (p->c && p->n > INT64_MAX / p->c) return PD_EINVAL;
  int64_t planes = p->n * p->c;
  /* the windows' bounds compute i h and (i + 1) w with i < oh, ow */
  if (p->h > INT64_MAX / p->w || p->oh > INT64_MAX / p->ow || p->oh > INT64_MAX / p->h ||
      p->ow > INT64_MAX / p->w)
    return PD_EINVAL;
  int64_t big = p->h * p->w > p->oh * p->ow ? p->h * p->w : p->oh * p->ow;
  if (planes && big > INT64_MAX / planes) return PD_EINVAL;
  return planes && (!x || !a || !b) ? PD_EINVAL : PD_OK;
}

/* interp2d / its gradient (kernels.h): fp32/fp64 (PD_EUNSUPPORTED), n, c >= 0, h, w, oh,
 * ow >= 1, taps (1, 1), (1, 2), (2, 2) or (4, 4), n c h w and n c oh ow fitting, and with
 * elements the buffers a, b and the tables set (PD_EINVAL). */
static inline pd_status pd_k_interp2d_check(pd_dtype dt, const pd_k_interp2d *p, const void *a,
                                            const void *b) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (!p || p->n < 0 || p->c < 0 || p->h < 1 || p->w < 1 || p->oh < 1 || p->ow < 1)
    return PD_EINVAL;
  if (!(p->th == 1 && (p->tw == 1 || p->tw == 2)) && !(p->th == 2 && p->tw == 2) &&
      !(p->th == 4 && p->tw == 4))
    return PD_EINVAL;
  if (p->c && p->n > INT64_MAX / p->c) return PD_EINVAL;
  int64_t planes = p->n * p->c;
  if (p->h > INT64_MAX / p->w || p->oh > INT64_MAX / p->ow || p->oh > INT64_MAX / 4 - p->ow)
    return PD_EINVAL;
  int64_t big = p->h * p->w > p->oh * p->ow ? p->h * p->w : p->oh * p->ow;
  if (planes && big > INT64_MAX / planes) return PD_EINVAL;
  return planes && (!a || !b || !p->idx || !p->lam) ? PD_EINVAL : PD_OK;
}

/* grid_sample / its gradient (kernels.h): fp32/fp64 (PD_EUNSUPPORTED), n, c >= 0, h, w, oh,
 * ow >= 1, padding 0 to 2, n c h w, n c oh ow and n oh ow 2 fitting, x and the channel-wise
 * buffer b (y, dy) set when there are channels, grid when there are images (PD_EINVAL). */
static inline pd_status pd_k_grid_sample_check(pd_dtype dt, const pd_k_grid_sample *p,
                                               const void *x, const void *grid, const void *b) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (!p || p->n < 0 || p->c < 0 || p->h < 1 || p->w < 1 || p->oh < 1 || p->ow < 1 ||
      p->padding < 0 || p->padding > 2)
    return PD_EINVAL;
  int64_t in[] = {p->n, p->c, p->h, p->w}, o[] = {p->n, p->c, p->oh, p->ow},
          g[] = {p->n, p->oh, p->ow, 2};
  if (pd_k_numel(4, in) < 0 || pd_k_numel(4, o) < 0 || pd_k_numel(4, g) < 0) return PD_EINVAL;
  if (p->n > 0 && !grid) return PD_EINVAL;
  return p->n > 0 && p->c > 0 && (!x || !b) ? PD_EINVAL : PD_OK;
}

/* box_coder (kernels.h): fp32/fp64 (PD_EUNSUPPORTED), n, j >= 0 with n j 4 fitting, prior,
 * target and out set when there are boxes (PD_EINVAL). */
static inline pd_status pd_k_box_coder_check(pd_dtype dt, const pd_k_box_coder *p,
                                             const void *prior, const void *target,
                                             const void *out) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  int64_t d[] = {p ? p->n : -1, p ? p->j : -1, 4};
  if (!p || p->n < 0 || p->j < 0 || pd_k_numel(3, d) < 0) return PD_EINVAL;
  return p->n * p->j > 0 && (!prior || !target || !out) ? PD_EINVAL : PD_OK;
}

/* yolo_box (kernels.h): fp32/fp64 (PD_EUNSUPPORTED), the sizes and img's dtype as kernels.h
 * says, the buffers set when there are boxes (PD_EINVAL). */
static inline pd_status pd_k_yolo_box_check(pd_dtype dt, const pd_k_yolo_box *p, const void *x,
                                            const void *img, const void *boxes,
                                            const void *scores) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  if (!p || p->n < 0 || p->h < 0 || p->w < 0 || p->na < 1 || p->na > PD_K_YOLO_MAX_ANCHORS ||
      p->classes < 1 || p->ratio < 1 || (p->im_dt != PD_INT32 && p->im_dt != PD_INT64))
    return PD_EINVAL;
  int64_t c = p->na * (5 + (p->classes < INT32_MAX ? p->classes : INT32_MAX) +
                       (p->iou_aware ? 1 : 0));
  int64_t in[] = {p->n, c, p->h, p->w}, sc[] = {p->n, p->na, p->h, p->w, p->classes},
          bx[] = {p->n, p->na, p->h, p->w, 4};
  if (pd_k_numel(4, in) < 0 || pd_k_numel(5, sc) < 0 || pd_k_numel(5, bx) < 0) return PD_EINVAL;
  return p->n * p->h * p->w > 0 && (!x || !img || !boxes || !scores) ? PD_EINVAL : PD_OK;
}

/* ---- A convolution's GEMM sizes, per image ---- */
typedef struct pd_k_conv_plan {
  pd_dtype dt;
  size_t sz;                      /* element size */
  int64_t g, cg, ocg, kdim, ohw;  /* groups, channels and filters per group, cg*kh*kw, oh*ow */
  int64_t rows;                   /* rows of an image's column matrix: c * kh * kw */
  int64_t in_img, out_img;        /* elements of one input / output image */
  bool direct;                    /* 1x1, stride 1, no padding: an image is its column matrix */
} pd_k_conv_plan;
/* Check a convolution (fp32/fp64, pd_k_conv2d_check, GEMM sizes and leading dims within a
 * BLAS int) and plan it. */
pd_status pd_k_conv_begin(pd_k_conv_plan *cp, pd_dtype dt, const pd_k_conv2d *p);

#endif /* PD_KERNELS_INT_H */
