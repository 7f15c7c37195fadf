/* detection.c -- the box post-processing ops that PaddleDetection's exported models end with
 * (YOLOv3, PP-YOLOE, PicoDet, SSD, BlazeFace): yolo_box, prior_box, density_prior_box,
 * box_coder and the multi-class NMS (multiclass_nms, multiclass_nms2, multiclass_nms3), with
 * Fluid's names, slots, attributes and math; their shape functions and kernels. Inference
 * ops: none is differentiable. yolo_box and box_coder compute through the backend's entries of
 * the same names (kernels.h; the per-box math in kernels/detect_t.h), on the GPU too; the prior
 * boxes and the NMS on the host (NMS is sequential, as in Paddle, which runs it on the CPU
 * only). The kernels read fp32 or fp64 inputs and compute in double
 * (the NMS sorts and compares scores as Paddle does, as floats; its threshold shrinks in the
 * op's precision), writing results of the input's dtype. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ---------------------------------------------------------------- shared helpers */

enum { MAX_LIST = 64 }; /* the longest float or int list attribute the ops take */

static inline double fget(const void *p, pd_dtype dt, int64_t i) {
  return dt == PD_FP32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline void fput(void *p, pd_dtype dt, int64_t i, double v) {
  if (dt == PD_FP32)
    ((float *)p)[i] = (float)v;
  else
    ((double *)p)[i] = v;
}

/* A FLOATS (or FLOAT64S) attribute's values, up to cap of them; its length (0 when absent). */
static int attr_floats(const pd_attr *a, double *v, int cap) {
  if (!a) return 0;
  for (int i = 0; i < a->n && i < cap; i++)
    v[i] = a->type == PD_ATTR_FLOAT64S ? a->doubles[i]
           : a->type == PD_ATTR_FLOATS ? (double)a->floats[i]
                                       : 0;
  return a->n;
}

/* A float list attribute at compile time: its length, or -1 after an error when too long. */
static int infer_floats(pd_infer_ctx *c, const char *name, double *v) {
  int n = attr_floats(pd_op_attr(c->op, name), v, MAX_LIST);
  if (n > MAX_LIST) {
    pd_infer_fail(c, PD_EUNSUPPORTED, "%s holds %d values; at most %d are supported", name, n,
                  MAX_LIST);
    return -1;
  }
  return n;
}
static int ctx_floats(const pd_exec_ctx *ctx, const char *name, double *v) {
  int n = attr_floats(pd_ctx_attr_raw(ctx, name), v, MAX_LIST);
  if (n > MAX_LIST) {
    pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s holds %d values; at most %d are supported", name, n,
                MAX_LIST);
    return -1;
  }
  return n;
}

/* The input (Input, Image) of a prior-box op, NCHW: 4 dims, or an unknown rank. */
static pd_status infer_nchw(pd_infer_ctx *c, const char *slot, const pd_var_desc **v,
                            pd_infer_dims *d) {
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, slot, 0, v, d);
  if (st) return st;
  if (d->n >= 0 && d->n != 4)
    return pd_infer_fail(c, PD_ESHAPE, "%s must have 4 dims (NCHW), got %s", slot,
                         pd_infer_dims_str(d, s));
  if (d->n < 0) *d = pd_infer_dims_unknown(4);
  return PD_OK;
}

static pd_status want_nchw(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *t) {
  char s[DIMS_BUF];
  if (t->ndims == 4) return PD_OK;
  return pd_ctx_fail(ctx, PD_ESHAPE, "%s must have 4 dims (NCHW), got %s", slot,
                     shape_str(t, s));
}

/* ---------------------------------------------------------------- yolo_box */

/* yolo_box's attributes, checked against X's channels. */
typedef struct yolo_cfg {
  int64_t anchors[MAX_LIST];
  int na;                 /* anchors: na pairs (width, height) */
  int64_t classes, ratio; /* class_num, downsample_ratio */
  bool iou_aware;
} yolo_cfg;

/* The channels X needs: per anchor 5 + class_num (x, y, w, h, objectness, the classes), and
 * one more (the IoU prediction, all anchors' first) when iou_aware. */
static int64_t yolo_channels(const yolo_cfg *y) {
  return y->na * (5 + y->classes) + (y->iou_aware ? y->na : 0);
}

/* The attributes' own rules: anchors come in pairs, class_num > 0; message into msg. */
static bool yolo_attrs_ok(const yolo_cfg *y, int nanchors, char *msg, size_t n) {
  if (nanchors <= 0 || nanchors % 2 || nanchors > MAX_LIST) {
    snprintf(msg, n, "anchors must hold pairs (width, height), at least one and at most %d "
             "values; got %d values", MAX_LIST, nanchors);
    return false;
  }
  if (y->classes <= 0) {
    snprintf(msg, n, "class_num must be positive, got %" PRId64, y->classes);
    return false;
  }
  if (y->ratio <= 0) {
    snprintf(msg, n, "downsample_ratio must be positive, got %" PRId64, y->ratio);
    return false;
  }
  return true;
}

/* yolo_box: X [N, C, H, W] (C = yolo_channels), ImgSize int [N, 2] (height, width) -> Boxes
 * [N, anchors * H * W, 4], Scores [N, anchors * H * W, class_num]. */
pd_status pd_infer_yolo_box(pd_infer_ctx *c) {
  const pd_var_desc *x, *im;
  pd_infer_dims dx, di;
  char s[PD_DIMS_BUF], s2[PD_DIMS_BUF], msg[160];
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = pd_infer_in(c, "ImgSize", 0, &im, &di)))
    return st;
  yolo_cfg y;
  int n = pd_infer_attr_ints(c, "anchors", y.anchors, MAX_LIST);
  y.na = n / 2;
  y.classes = pd_infer_attr_int(c, "class_num");
  y.ratio = pd_infer_attr_int(c, "downsample_ratio");
  y.iou_aware = pd_infer_attr_bool(c, "iou_aware");
  if (!yolo_attrs_ok(&y, n, msg, sizeof msg)) return pd_infer_fail(c, PD_EINVAL, "%s", msg);
  if (dx.n >= 0 && dx.n != 4)
    return pd_infer_fail(c, PD_ESHAPE, "X must have 4 dims (NCHW), got %s",
                         pd_infer_dims_str(&dx, s));
  if (dx.n < 0) dx = pd_infer_dims_unknown(4);
  if (dx.d[1] >= 0 && dx.d[1] != yolo_channels(&y))
    return pd_infer_fail(c, PD_ESHAPE, "X %s must have %" PRId64 " channels: %d anchors times "
                         "(5 + class_num %" PRId64 ")%s", pd_infer_dims_str(&dx, s),
                         yolo_channels(&y), y.na, y.classes, y.iou_aware ? " plus one IoU "
                         "channel per anchor (iou_aware)" : "");
  if (di.n >= 0 && (di.n != 2 || (di.d[1] >= 0 && di.d[1] != 2) ||
                    !pd_infer_dim_compatible(di.d[0], dx.d[0])))
    return pd_infer_fail(c, PD_ESHAPE, "ImgSize must be [batch, 2] (height, width) for X %s, "
                         "got %s", pd_infer_dims_str(&dx, s), pd_infer_dims_str(&di, s2));
  if (!is_int(im->dtype))
    return pd_infer_fail(c, PD_ETYPE, "ImgSize must hold int32 or int64 values, got %s",
                         pd_dtype_name(im->dtype));
  int64_t boxes = pd_infer_dim_mul(y.na, pd_infer_dim_mul(dx.d[2], dx.d[3]));
  pd_infer_dims ob = {3, {pd_infer_dim_merge(dx.d[0], di.n == 2 ? di.d[0] : -1), boxes, 4}};
  pd_infer_dims os = ob;
  os.d[2] = y.classes;
  if ((st = pd_infer_set_out(c, "Boxes", 0, &ob, x->dtype, 0))) return st;
  return pd_infer_set_out(c, "Scores", 0, &os, x->dtype, 0);
}

/* yolo_box, Paddle's decoding of a YOLOv3 head. For image n (height ih, width iw from ImgSize),
 * anchor a (aw, ah), cell (k, l) of the H x W grid, with sigmoid s:
 *   conf = s(objectness), or s(objectness)^(1 - f) s(iou)^f when iou_aware (f its factor);
 *   below conf_thresh the box and its scores stay 0; else
 *   cx = (l + s(tx) scale + bias) iw / W, cy = (k + s(ty) scale + bias) ih / H, with
 *   bias = -(scale - 1) / 2 (scale_x_y, computed in float as Paddle does),
 *   w = e^tw aw iw / (ratio W), h = e^th ah ih / (ratio H);
 *   the box (cx - w/2, cy - h/2, cx + w/2, cy + h/2), clipped to [0, iw - 1] x [0, ih - 1]
 *   with clip_bbox; score of class j = conf s(class j).
 * Box b = a H W + k W + l. An empty X or ImgSize gives zeros. */
pd_status pd_kernel_yolo_box(pd_exec_ctx *ctx) {
  const pd_tensor *x, *im;
  pd_tensor *ob, *os;
  char s[DIMS_BUF], s2[DIMS_BUF], msg[160];
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = want_float(ctx, "X", x)) ||
      (st = in1(ctx, "ImgSize", &im)) || (st = out1(ctx, "Boxes", &ob)) ||
      (st = out1(ctx, "Scores", &os)))
    return st;
  yolo_cfg y;
  int n = pd_ctx_attr_ints(ctx, "anchors", y.anchors, MAX_LIST);
  y.na = n / 2;
  y.classes = pd_ctx_attr_int(ctx, "class_num");
  y.ratio = pd_ctx_attr_int(ctx, "downsample_ratio");
  y.iou_aware = pd_ctx_attr_bool(ctx, "iou_aware");
  if (!yolo_attrs_ok(&y, n, msg, sizeof msg)) return pd_ctx_fail(ctx, PD_EINVAL, "%s", msg);
  if (x->ndims != 4 || x->dims[1] != yolo_channels(&y))
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must be [batch, %" PRId64 ", height, width] (%d "
                       "anchors, class_num %" PRId64 "%s), got %s", yolo_channels(&y), y.na,
                       y.classes, y.iou_aware ? ", iou_aware" : "", shape_str(x, s));
  if (!is_int(im->dtype))
    return pd_ctx_fail(ctx, PD_ETYPE, "ImgSize must hold int32 or int64 values, got %s",
                       pd_dtype_name(im->dtype));
  if (im->ndims != 2 || im->dims[0] != x->dims[0] || im->dims[1] != 2)
    return pd_ctx_fail(ctx, PD_ESHAPE, "ImgSize must be [%" PRId64 ", 2] (height, width) for "
                       "X %s, got %s", x->dims[0], shape_str(x, s), shape_str(im, s2));
  hold h;
  hold_init(&h);
  int64_t N = x->dims[0], H = x->dims[2], W = x->dims[3], nb = y.na * H * W;
  int64_t db[3] = {N, nb, 4}, ds[3] = {N, nb, y.classes};
  pd_dtype dt = x->dtype;
  if ((st = unalias(ctx, &h, ob, &x)) || (st = unalias(ctx, &h, os, &x)) ||
      (st = unalias(ctx, &h, ob, &im)) || (st = unalias(ctx, &h, os, &im)) ||
      (st = resize(ctx, ob, dt, 3, db, NULL)) || (st = resize(ctx, os, dt, 3, ds, NULL))) {
    hold_free(&h);
    return st;
  }
  pd_k_yolo_box k = {.n = N, .h = H, .w = W, .na = y.na, .classes = y.classes,
                     .ratio = y.ratio, .iou_aware = y.iou_aware,
                     .clip = pd_ctx_attr_bool(ctx, "clip_bbox"),
                     .scale = (float)pd_ctx_attr_float(ctx, "scale_x_y"),
                     .thresh = (float)pd_ctx_attr_float(ctx, "conf_thresh"),
                     .factor = (float)pd_ctx_attr_float(ctx, "iou_aware_factor"),
                     .im_dt = im->dtype};
  memcpy(k.anchors, y.anchors, sizeof *k.anchors * (size_t)(2 * y.na));
  st = pd_ctx_check(ctx, ctx->k->yolo_box(dt, &k, pd_tensor_data(x), pd_tensor_data(im),
                                          pd_tensor_data(ob), pd_tensor_data(os)),
                    "yolo_box");
  hold_free(&h);
  return st;
}

/* ---------------------------------------------------------------- prior_box */

/* Paddle's expansion of aspect_ratios: 1 first, then each ratio not within 1e-6 of one already
 * there, followed by its inverse when flip (computed in float). Returns the count. */
static int expand_ratios(const double *ar, int n, bool flip, double *out) {
  int m = 0;
  out[m++] = 1.0;
  for (int i = 0; i < n; i++) {
    float r = (float)ar[i];
    bool seen = false;
    for (int j = 0; j < m && !seen; j++) seen = fabs((double)r - out[j]) < 1e-6;
    if (seen) continue;
    out[m++] = r;
    if (flip) out[m++] = 1.0f / r;
  }
  return m;
}

/* prior_box's attributes, read once by the shape function and the kernel alike. */
typedef struct prior_cfg {
  double min[MAX_LIST], max[MAX_LIST], ar[2 * MAX_LIST + 1], var[MAX_LIST];
  int nmin, nmax, nar, nvar;
  int64_t priors; /* boxes per cell: ratios x min_sizes + max_sizes */
} prior_cfg;

/* Check the lists: min_sizes positive, max_sizes none or one larger per min size, 4
 * variances. msg gets what is wrong. */
static bool prior_ok(prior_cfg *p, const double *ratios, int nratios, bool flip, char *msg,
                     size_t n) {
  if (p->nmin == 0) {
    snprintf(msg, n, "min_sizes must hold at least one size");
    return false;
  }
  for (int i = 0; i < p->nmin; i++)
    if (!(p->min[i] > 0)) {
      snprintf(msg, n, "min_sizes[%d] is %g; sizes must be positive", i, p->min[i]);
      return false;
    }
  if (p->nmax && p->nmax != p->nmin) {
    snprintf(msg, n, "max_sizes holds %d sizes but min_sizes %d; give one per min size or none",
             p->nmax, p->nmin);
    return false;
  }
  for (int i = 0; i < p->nmax; i++)
    if (!(p->max[i] > p->min[i])) {
      snprintf(msg, n, "max_sizes[%d] (%g) must be larger than min_sizes[%d] (%g)", i,
               p->max[i], i, p->min[i]);
      return false;
    }
  for (int i = 0; i < nratios; i++)
    if (!(ratios[i] > 0)) {
      snprintf(msg, n, "aspect_ratios[%d] is %g; ratios must be positive", i, ratios[i]);
      return false;
    }
  if (p->nvar != 4) {
    snprintf(msg, n, "variances must hold 4 values, got %d", p->nvar);
    return false;
  }
  p->nar = expand_ratios(ratios, nratios, flip, p->ar);
  p->priors = (int64_t)p->nar * p->nmin + p->nmax;
  return true;
}

/* prior_box: Input [N, C, H, W], Image [N, C', IH, IW] (their dims alone are read) -> Boxes and
 * Variances [H, W, priors, 4] of Input's dtype. */
pd_status pd_infer_prior_box(pd_infer_ctx *c) {
  const pd_var_desc *in, *im;
  pd_infer_dims di, dm;
  char msg[200];
  double ratios[MAX_LIST];
  pd_status st;
  if ((st = infer_nchw(c, "Input", &in, &di)) || (st = infer_nchw(c, "Image", &im, &dm)))
    return st;
  prior_cfg p;
  int nr;
  if ((p.nmin = infer_floats(c, "min_sizes", p.min)) < 0 ||
      (p.nmax = infer_floats(c, "max_sizes", p.max)) < 0 ||
      (p.nvar = infer_floats(c, "variances", p.var)) < 0 ||
      (nr = infer_floats(c, "aspect_ratios", ratios)) < 0)
    return PD_EUNSUPPORTED;
  if (!prior_ok(&p, ratios, nr, pd_infer_attr_bool(c, "flip"), msg, sizeof msg))
    return pd_infer_fail(c, PD_EINVAL, "%s", msg);
  pd_infer_dims o = {4, {di.d[2], di.d[3], p.priors, 4}};
  if ((st = pd_infer_set_out(c, "Boxes", 0, &o, in->dtype, 0))) return st;
  return pd_infer_set_out(c, "Variances", 0, &o, in->dtype, 0);
}

/* Variances: the 4 variances for each of the n boxes. */
static void fill_variances(void *v, pd_dtype dt, int64_t n, const double *var) {
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < 4; j++) fput(v, dt, i * 4 + j, var[j]);
}

/* Fetch Input, Image, Boxes, Variances of a prior-box op: Input float, both NCHW. */
static pd_status prior_io(pd_exec_ctx *ctx, const pd_tensor **in, const pd_tensor **im,
                          pd_tensor **boxes, pd_tensor **vars) {
  pd_status st;
  if ((st = in1(ctx, "Input", in)) || (st = want_float(ctx, "Input", *in)) ||
      (st = want_nchw(ctx, "Input", *in)) || (st = in1(ctx, "Image", im)) ||
      (st = want_nchw(ctx, "Image", *im)) || (st = out1(ctx, "Boxes", boxes)) ||
      (st = out1(ctx, "Variances", vars)))
    return st;
  return PD_OK;
}

/* The grid's steps: step_w and step_h, or the image's size over the feature map's when either
 * is 0. */
static void prior_steps(const pd_exec_ctx *ctx, const pd_tensor *in, const pd_tensor *im,
                        double *sw, double *sh) {
  double w = (float)pd_ctx_attr_float(ctx, "step_w"), h = (float)pd_ctx_attr_float(ctx, "step_h");
  if (w == 0 || h == 0) {
    w = (double)im->dims[3] / (double)in->dims[3];
    h = (double)im->dims[2] / (double)in->dims[2];
  }
  *sw = w;
  *sh = h;
}

/* prior_box (SSD's anchors), Paddle's order: for each cell (h, w) of the feature map, centre
 * ((w + offset) step_w, (h + offset) step_h), and each min size m: the boxes of every expanded
 * ratio r, (m sqrt(r), m / sqrt(r)) wide and high, then the square of side sqrt(m M) of its
 * max size M; with min_max_aspect_ratios_order the square of side m first, then sqrt(m M), then
 * the ratios other than 1. Corners are divided by the image's width and height, and clipped to
 * [0, 1] with clip. */
pd_status pd_kernel_prior_box(pd_exec_ctx *ctx) {
  const pd_tensor *in, *im;
  pd_tensor *boxes, *vars;
  char msg[200];
  double ratios[MAX_LIST];
  pd_status st;
  if ((st = prior_io(ctx, &in, &im, &boxes, &vars))) return st;
  prior_cfg p;
  int nr;
  if ((p.nmin = ctx_floats(ctx, "min_sizes", p.min)) < 0 ||
      (p.nmax = ctx_floats(ctx, "max_sizes", p.max)) < 0 ||
      (p.nvar = ctx_floats(ctx, "variances", p.var)) < 0 ||
      (nr = ctx_floats(ctx, "aspect_ratios", ratios)) < 0)
    return PD_EUNSUPPORTED;
  if (!prior_ok(&p, ratios, nr, pd_ctx_attr_bool(ctx, "flip"), msg, sizeof msg))
    return pd_ctx_fail(ctx, PD_EINVAL, "%s", msg);
  int64_t H = in->dims[2], W = in->dims[3], d[4] = {H, W, p.priors, 4};
  pd_dtype dt = in->dtype;
  if ((st = resize(ctx, boxes, dt, 4, d, NULL)) || (st = resize(ctx, vars, dt, 4, d, NULL)))
    return st;
  double sw, sh, iw = (double)im->dims[3], ih = (double)im->dims[2];
  prior_steps(ctx, in, im, &sw, &sh);
  double offset = (float)pd_ctx_attr_float(ctx, "offset");
  bool order = pd_ctx_attr_bool(ctx, "min_max_aspect_ratios_order");
  bool clip = pd_ctx_attr_bool(ctx, "clip");
  void *b = pd_tensor_data(boxes);
  int64_t k = 0;
  for (int64_t h = 0; h < H; h++)
    for (int64_t w = 0; w < W; w++) {
      double cx = ((double)w + offset) * sw, cy = ((double)h + offset) * sh;
      for (int s = 0; s < p.nmin; s++) {
        /* Half widths and heights of this min size's boxes, in Paddle's order. */
        double half[2 * MAX_LIST + 2][2];
        int nh = 0;
        double m = p.min[s], sq = p.nmax ? sqrt(m * p.max[s]) / 2 : 0;
        if (order) {
          half[nh][0] = half[nh][1] = m / 2, nh++;
          if (p.nmax) half[nh][0] = half[nh][1] = sq, nh++;
        }
        for (int r = 0; r < p.nar; r++) {
          if (order && fabs(p.ar[r] - 1.) < 1e-6) continue;
          half[nh][0] = m * sqrt(p.ar[r]) / 2;
          half[nh][1] = m / sqrt(p.ar[r]) / 2;
          nh++;
        }
        if (!order && p.nmax) half[nh][0] = half[nh][1] = sq, nh++;
        for (int i = 0; i < nh; i++) {
          double c[4] = {(cx - half[i][0]) / iw, (cy - half[i][1]) / ih,
                         (cx + half[i][0]) / iw, (cy + half[i][1]) / ih};
          for (int j = 0; j < 4; j++) {
            double v = clip ? fmin(fmax(c[j], 0.0), 1.0) : c[j];
            fput(b, dt, k++, v);
          }
        }
      }
    }
  fill_variances(pd_tensor_data(vars), dt, H * W * p.priors, p.var);
  return PD_OK;
}

/* ---------------------------------------------------------------- density_prior_box */

typedef struct density_cfg {
  double sizes[MAX_LIST], ratios[MAX_LIST], var[MAX_LIST];
  int64_t dens[MAX_LIST];
  int nsizes, nratios, ndens, nvar;
  int64_t priors; /* boxes per cell: the sum over sizes of ratios x density^2 */
} density_cfg;

static bool density_ok(density_cfg *p, char *msg, size_t n) {
  if (p->nsizes != p->ndens) {
    snprintf(msg, n, "fixed_sizes holds %d sizes but densities %d; give one density per size",
             p->nsizes, p->ndens);
    return false;
  }
  if (p->ndens > MAX_LIST) {
    snprintf(msg, n, "densities holds %d values; at most %d are supported", p->ndens, MAX_LIST);
    return false;
  }
  p->priors = 0;
  for (int i = 0; i < p->nsizes; i++) {
    if (!(p->sizes[i] > 0) || p->dens[i] <= 0 || p->dens[i] > 1024) {
      snprintf(msg, n, "fixed_sizes[%d] (%g) and densities[%d] (%" PRId64 ") must be positive "
               "(densities at most 1024)", i, p->sizes[i], i, p->dens[i]);
      return false;
    }
    p->priors += p->nratios * p->dens[i] * p->dens[i];
  }
  for (int i = 0; i < p->nratios; i++)
    if (!(p->ratios[i] > 0)) {
      snprintf(msg, n, "fixed_ratios[%d] is %g; ratios must be positive", i, p->ratios[i]);
      return false;
    }
  if (p->nvar != 4) {
    snprintf(msg, n, "variances must hold 4 values, got %d", p->nvar);
    return false;
  }
  return true;
}

/* The output dims: [H, W, priors, 4], or [H W priors, 4] with flatten_to_2d. */
static int density_dims(int64_t H, int64_t W, int64_t priors, bool flat, int64_t *d) {
  if (flat) {
    d[0] = pd_infer_dim_mul(pd_infer_dim_mul(H, W), priors);
    d[1] = 4;
    return 2;
  }
  d[0] = H, d[1] = W, d[2] = priors, d[3] = 4;
  return 4;
}

/* density_prior_box: Input [N, C, H, W], Image [N, C', IH, IW] -> Boxes and Variances [H, W,
 * priors, 4] (or [H W priors, 4] with flatten_to_2d) of Input's dtype. */
pd_status pd_infer_density_prior_box(pd_infer_ctx *c) {
  const pd_var_desc *in, *im;
  pd_infer_dims di, dm;
  char msg[200];
  pd_status st;
  if ((st = infer_nchw(c, "Input", &in, &di)) || (st = infer_nchw(c, "Image", &im, &dm)))
    return st;
  density_cfg p;
  if ((p.nsizes = infer_floats(c, "fixed_sizes", p.sizes)) < 0 ||
      (p.nratios = infer_floats(c, "fixed_ratios", p.ratios)) < 0 ||
      (p.nvar = infer_floats(c, "variances", p.var)) < 0)
    return PD_EUNSUPPORTED;
  p.ndens = pd_infer_attr_ints(c, "densities", p.dens, MAX_LIST);
  if (!density_ok(&p, msg, sizeof msg)) return pd_infer_fail(c, PD_EINVAL, "%s", msg);
  pd_infer_dims o;
  o.n = density_dims(di.d[2], di.d[3], p.priors, pd_infer_attr_bool(c, "flatten_to_2d"), o.d);
  if ((st = pd_infer_set_out(c, "Boxes", 0, &o, in->dtype, 0))) return st;
  return pd_infer_set_out(c, "Variances", 0, &o, in->dtype, 0);
}

/* density_prior_box (BlazeFace's anchors), Paddle's definition: s = (int)((step_w + step_h)
 * / 2) and, for fixed size z with density d, shift = s / d (integer division); in cell (h, w)
 * with centre (cx, cy) = ((w + offset) step_w, (h + offset) step_h), for each fixed ratio r
 * and each (i, j) of the d x d sub-grid: centre (cx - s/2 + shift/2 + j shift, cy - s/2 +
 * shift/2 + i shift), z sqrt(r) wide and z / sqrt(r) high, in float as Paddle computes them;
 * corners divided by the image's width and height, the low ones at least 0 and the high ones
 * at most 1 (always), then clipped to [0, 1] with clip. */
pd_status pd_kernel_density_prior_box(pd_exec_ctx *ctx) {
  const pd_tensor *in, *im;
  pd_tensor *boxes, *vars;
  char msg[200];
  pd_status st;
  if ((st = prior_io(ctx, &in, &im, &boxes, &vars))) return st;
  density_cfg p;
  if ((p.nsizes = ctx_floats(ctx, "fixed_sizes", p.sizes)) < 0 ||
      (p.nratios = ctx_floats(ctx, "fixed_ratios", p.ratios)) < 0 ||
      (p.nvar = ctx_floats(ctx, "variances", p.var)) < 0)
    return PD_EUNSUPPORTED;
  p.ndens = pd_ctx_attr_ints(ctx, "densities", p.dens, MAX_LIST);
  if (!density_ok(&p, msg, sizeof msg)) return pd_ctx_fail(ctx, PD_EINVAL, "%s", msg);
  int64_t H = in->dims[2], W = in->dims[3], d[4];
  int nd = density_dims(H, W, p.priors, pd_ctx_attr_bool(ctx, "flatten_to_2d"), d);
  pd_dtype dt = in->dtype;
  if ((st = resize(ctx, boxes, dt, nd, d, NULL)) || (st = resize(ctx, vars, dt, nd, d, NULL)))
    return st;
  double sw, sh, iw = (double)im->dims[3], ih = (double)im->dims[2];
  prior_steps(ctx, in, im, &sw, &sh);
  double offset = (float)pd_ctx_attr_float(ctx, "offset");
  bool clip = pd_ctx_attr_bool(ctx, "clip");
  int step = (int)((sw + sh) * 0.5);
  void *b = pd_tensor_data(boxes);
  int64_t k = 0;
  for (int64_t h = 0; h < H; h++)
    for (int64_t w = 0; w < W; w++) {
      double cx = ((double)w + offset) * sw, cy = ((double)h + offset) * sh;
      for (int s = 0; s < p.nsizes; s++) {
        int dens = (int)p.dens[s], shift = step / dens;
        float z = (float)p.sizes[s];
        for (int r = 0; r < p.nratios; r++) {
          float sq = sqrtf((float)p.ratios[r]), bw = z * sq, bh = z / sq;
          float dcx = (float)(cx - step / 2. + shift / 2.);
          float dcy = (float)(cy - step / 2. + shift / 2.);
          for (int i = 0; i < dens; i++)
            for (int j = 0; j < dens; j++) {
              float x = dcx + (float)(j * shift), y = dcy + (float)(i * shift);
              double c[4] = {fmax((x - bw / 2.) / iw, 0.), fmax((y - bh / 2.) / ih, 0.),
                             fmin((x + bw / 2.) / iw, 1.), fmin((y + bh / 2.) / ih, 1.)};
              for (int e = 0; e < 4; e++) {
                double v = dt == PD_FP32 ? (float)c[e] : c[e];
                fput(b, dt, k++, clip ? fmin(fmax(v, 0.0), 1.0) : v);
              }
            }
        }
      }
    }
  fill_variances(pd_tensor_data(vars), dt, H * W * p.priors, p.var);
  return PD_OK;
}

/* ---------------------------------------------------------------- box_coder */

static bool is_decode(const char *code_type) {
  return strcmp(code_type, "decode_center_size") == 0;
}

/* box_coder: PriorBox [M, 4], PriorBoxVar [M, 4] (optional, else the 4 values of variance, or
 * none); encode_center_size: TargetBox [N, 4] -> OutputBox [N, M, 4]; decode_center_size:
 * TargetBox [N, M, 4] with PriorBox [M, 4] (axis 0) or [N, 4] (axis 1) -> OutputBox of
 * TargetBox's dims. The LoD is TargetBox's, PriorBox's when decoding along axis 1. */
pd_status pd_infer_box_coder(pd_infer_ctx *c) {
  const pd_var_desc *pv, *tv, *vv;
  pd_infer_dims dp, dt, dv;
  char s[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  double var[MAX_LIST];
  pd_status st;
  if ((st = pd_infer_in(c, "PriorBox", 0, &pv, &dp)) ||
      (st = pd_infer_in(c, "TargetBox", 0, &tv, &dt)))
    return st;
  if (dp.n >= 0 && (dp.n != 2 || (dp.d[1] >= 0 && dp.d[1] != 4)))
    return pd_infer_fail(c, PD_ESHAPE, "PriorBox must be [boxes, 4], got %s",
                         pd_infer_dims_str(&dp, s));
  if (dp.n < 0) dp = pd_infer_dims_unknown(2);
  int nvar = infer_floats(c, "variance", var);
  if (nvar < 0) return PD_EUNSUPPORTED;
  if (nvar != 0 && nvar != 4)
    return pd_infer_fail(c, PD_EINVAL, "variance must hold 4 values or none, got %d", nvar);
  if (pd_infer_nin(c, "PriorBoxVar")) {
    if ((st = pd_infer_in(c, "PriorBoxVar", 0, &vv, &dv))) return st;
    if (nvar)
      return pd_infer_fail(c, PD_EINVAL, "give PriorBoxVar or the variance attribute, not both");
    if (dv.n >= 0 && (dv.n != 2 || !pd_infer_dim_compatible(dv.d[0], dp.d[0]) ||
                      !pd_infer_dim_compatible(dv.d[1], dp.d[1])))
      return pd_infer_fail(c, PD_ESHAPE, "PriorBoxVar %s must have PriorBox's dims %s",
                           pd_infer_dims_str(&dv, s), pd_infer_dims_str(&dp, s2));
    if ((st = pd_infer_same_dtype(c, "PriorBox", pv->dtype, "PriorBoxVar", vv->dtype)))
      return st;
  }
  if ((st = pd_infer_same_dtype(c, "PriorBox", pv->dtype, "TargetBox", tv->dtype))) return st;
  pd_infer_dims o;
  int lod = tv->lod_level;
  if (!is_decode(pd_infer_attr_str(c, "code_type"))) {
    if (dt.n >= 0 && (dt.n != 2 || (dt.d[1] >= 0 && dt.d[1] != 4)))
      return pd_infer_fail(c, PD_ESHAPE, "encode_center_size: TargetBox must be [boxes, 4], "
                           "got %s", pd_infer_dims_str(&dt, s));
    o = (pd_infer_dims){3, {dt.n == 2 ? dt.d[0] : -1, dp.d[0], 4}};
  } else {
    int64_t axis = pd_infer_attr_int(c, "axis");
    if (axis != 0 && axis != 1)
      return pd_infer_fail(c, PD_EINVAL, "axis must be 0 or 1, got %" PRId64, axis);
    if (dt.n >= 0 && (dt.n != 3 || !pd_infer_dim_compatible(dt.d[2], 4) ||
                      !pd_infer_dim_compatible(dt.d[axis == 0 ? 1 : 0], dp.d[0])))
      return pd_infer_fail(c, PD_ESHAPE, "decode_center_size: TargetBox must be [%s, %s, 4] "
                           "for PriorBox %s (axis %" PRId64 "), got %s", axis ? "boxes" : "n",
                           axis ? "m" : "boxes", pd_infer_dims_str(&dp, s2), axis,
                           pd_infer_dims_str(&dt, s));
    o = dt.n == 3 ? dt : pd_infer_dims_unknown(3);
    o.d[2] = 4;
    if (axis == 1) lod = pv->lod_level;
  }
  return pd_infer_set_out(c, "OutputBox", 0, &o, tv->dtype, lod);
}

/* box_coder, Paddle's center-size coding. A box's width and height are x2 - x1 and y2 - y1,
 * plus 1 when not box_normalized; its centre (x1 + w/2, y1 + h/2) for a prior, the corners'
 * midpoint for an encoded target. With variances (vx, vy, vw, vh) (PriorBoxVar's row of the
 * prior, or the attribute; else 1):
 *   encode: ((tcx - pcx) / pw / vx, (tcy - pcy) / ph / vy, log|tw / pw| / vw, log|th / ph| / vh)
 *     for target i and prior j at [i, j];
 *   decode: (cx, cy, w, h) = (vx t0 pw + pcx, vy t1 ph + pcy, e^(vw t2) pw, e^(vh t3) ph) from
 *     TargetBox[i, j] and prior j (axis 0) or i (axis 1), written as corners (cx - w/2, cy -
 *     h/2, cx + w/2 - n, cy + h/2 - n), n 1 when not box_normalized.
 * (Paddle's fp64 decode with the variance attribute reads the floats as doubles; the values
 * are used here.) */
pd_status pd_kernel_box_coder(pd_exec_ctx *ctx) {
  const pd_tensor *pb, *pvar = NULL, *tb;
  pd_tensor *out;
  char s[DIMS_BUF], s2[DIMS_BUF];
  double attr_var[MAX_LIST];
  pd_status st;
  if ((st = in1(ctx, "PriorBox", &pb)) || (st = want_float(ctx, "PriorBox", pb)) ||
      (st = in_opt(ctx, "PriorBoxVar", &pvar)) || (st = in1(ctx, "TargetBox", &tb)) ||
      (st = want_same_dtype(ctx, "TargetBox", tb, "PriorBox", pb)) ||
      (st = out1(ctx, "OutputBox", &out)))
    return st;
  if (pvar && (st = want_same_dtype(ctx, "PriorBoxVar", pvar, "PriorBox", pb))) return st;
  int nvar = ctx_floats(ctx, "variance", attr_var);
  if (nvar < 0) return PD_EUNSUPPORTED;
  if (nvar != 0 && nvar != 4)
    return pd_ctx_fail(ctx, PD_EINVAL, "variance must hold 4 values or none, got %d", nvar);
  if (pvar && nvar)
    return pd_ctx_fail(ctx, PD_EINVAL, "give PriorBoxVar or the variance attribute, not both");
  if (pb->ndims != 2 || pb->dims[1] != 4)
    return pd_ctx_fail(ctx, PD_ESHAPE, "PriorBox must be [boxes, 4], got %s", shape_str(pb, s));
  if (pvar && !same_dims(pvar->ndims, pvar->dims, pb->ndims, pb->dims))
    return pd_ctx_fail(ctx, PD_ESHAPE, "PriorBoxVar %s must have PriorBox's dims %s",
                       shape_str(pvar, s), shape_str(pb, s2));
  bool decode = is_decode(pd_ctx_attr_str(ctx, "code_type"));
  int64_t axis = pd_ctx_attr_int(ctx, "axis"), M = pb->dims[0], N, J, od[3];
  if (!decode) {
    if (tb->ndims != 2 || tb->dims[1] != 4)
      return pd_ctx_fail(ctx, PD_ESHAPE, "encode_center_size: TargetBox must be [boxes, 4], "
                         "got %s", shape_str(tb, s));
    N = tb->dims[0], J = M;
  } else {
    if (axis != 0 && axis != 1)
      return pd_ctx_fail(ctx, PD_EINVAL, "axis must be 0 or 1, got %" PRId64, axis);
    if (tb->ndims != 3 || tb->dims[2] != 4 || tb->dims[axis == 0 ? 1 : 0] != M)
      return pd_ctx_fail(ctx, PD_ESHAPE, "decode_center_size: TargetBox must be [%s, %s, 4] "
                         "for PriorBox %s (axis %" PRId64 "), got %s", axis ? "boxes" : "n",
                         axis ? "m" : "boxes", shape_str(pb, s2), axis, shape_str(tb, s));
    N = tb->dims[0], J = tb->dims[1];
  }
  od[0] = N, od[1] = J, od[2] = 4;
  const pd_tensor *lod = decode && axis == 1 ? pb : tb;
  hold h;
  hold_init(&h);
  pd_dtype dt = pb->dtype;
  if ((st = unalias(ctx, &h, out, &pb)) || (st = unalias(ctx, &h, out, &tb)) ||
      (st = unalias(ctx, &h, out, &pvar))) {
    hold_free(&h);
    return st;
  }
  if (lod == out) lod = decode && axis == 1 ? pb : tb;
  if ((st = resize(ctx, out, dt, 3, od, lod))) {
    hold_free(&h);
    return st;
  }
  pd_k_box_coder k = {.n = N, .j = J, .decode = decode, .axis1 = axis == 1,
                      .one = pd_ctx_attr_bool(ctx, "box_normalized") ? 0.0 : 1.0,
                      .attr_var = nvar != 0};
  for (int i = 0; i < 4 && nvar; i++) k.var[i] = attr_var[i];
  st = pd_ctx_check(ctx, ctx->k->box_coder(dt, &k, pd_tensor_data(pb),
                                           pvar ? pd_tensor_data(pvar) : NULL,
                                           pd_tensor_data(tb), pd_tensor_data(out)),
                    "box_coder");
  hold_free(&h);
  return st;
}

/* ---------------------------------------------------------------- multiclass_nms */

/* multiclass_nms (1), multiclass_nms2 (2, with Index), multiclass_nms3 (3, with RoisNum and
 * NmsRoisNum): BBoxes [N, M, 4] with Scores [N, C, M] (one set of boxes per image, shared by the
 * classes), or BBoxes [R, C, 4] with Scores [R, C] (a box per class of each of R rows, the rows
 * split into images by RoisNum or by BBoxes' LoD) -> Out [-1, 6] of the scores' dtype (label,
 * score, x1, y1, x2, y2; [-1, -1] without Index, whose empty result is [1, 1]), Index int32
 * [-1, 1], NmsRoisNum int32 [N]; 1 and 2 give Out (and Index) the images' LoD. */
pd_status pd_infer_multiclass_nms(pd_infer_ctx *c) {
  const pd_var_desc *bv, *sv;
  pd_infer_dims db, ds;
  char s[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "BBoxes", 0, &bv, &db)) || (st = pd_infer_in(c, "Scores", 0, &sv, &ds)))
    return st;
  if ((st = pd_infer_same_dtype(c, "BBoxes", bv->dtype, "Scores", sv->dtype))) return st;
  if (!is_float(sv->dtype))
    return pd_infer_fail(c, PD_ETYPE, "Scores must hold float32 or float64 values, got %s",
                         pd_dtype_name(sv->dtype));
  int64_t n = -1;
  if (db.n >= 0 && ds.n >= 0) {
    bool ok = db.n == 3 && pd_infer_dim_compatible(db.d[2], 4);
    if (ds.n == 3)
      ok = ok && pd_infer_dim_compatible(db.d[0], ds.d[0]) &&
           pd_infer_dim_compatible(db.d[1], ds.d[2]);
    else
      ok = ok && ds.n == 2 && pd_infer_dim_compatible(db.d[0], ds.d[0]) &&
           pd_infer_dim_compatible(db.d[1], ds.d[1]);
    if (!ok)
      return pd_infer_fail(c, PD_ESHAPE, "BBoxes %s and Scores %s must be [n, m, 4] and [n, "
                           "classes, m], or [rows, classes, 4] and [rows, classes]",
                           pd_infer_dims_str(&db, s), pd_infer_dims_str(&ds, s2));
    if (ds.n == 3) n = pd_infer_dim_merge(db.d[0], ds.d[0]);
  }
  /* Without Index, no detection is Out [1, 1] (-1): its second dim is known only with Index. */
  int v = c->def->karg;
  bool index = v >= 2 && pd_infer_nout(c, "Index") > 0;
  pd_infer_dims o = {2, {-1, index ? 6 : -1}}, oi = {2, {-1, 1}}, on = {1, {n}};
  if ((st = pd_infer_set_out(c, "Out", 0, &o, sv->dtype, v < 3))) return st;
  if (index && (st = pd_infer_set_out(c, "Index", 0, &oi, PD_INT32, v < 3))) return st;
  if (v == 3) return pd_infer_set_out(c, "NmsRoisNum", 0, &on, PD_INT32, 0);
  return PD_OK;
}

/* The boxes and scores of one image, as doubles: score(c, m) = s[c sc + m sm], box(c, m) at
 * b + c bc + m bm (for 3-D Scores bc is 0: the classes share the boxes). */
typedef struct nms_view {
  const double *s, *b;
  int64_t sc, sm, bc, bm, classes, m;
} nms_view;

typedef struct nms_cfg {
  double score_thr, nms_thr, eta;
  int64_t nms_top_k, keep_top_k, background;
  bool normalized, f32;
} nms_cfg;

/* A detection: class, box, its score; key is its rank in the order being sorted. */
typedef struct det {
  int64_t label, idx, key;
  double score;
} det;

/* Sort keys, as Paddle's stable sorts: scores compared as floats, descending, ties in the
 * order they came in (key). */
static int by_score(const void *pa, const void *pb) {
  const det *a = pa, *b = pb;
  float x = (float)a->score, y = (float)b->score;
  if (x != y) return x > y ? -1 : 1;
  return a->key < b->key ? -1 : a->key > b->key;
}
/* by_score's order as a test: a before b. */
static bool det_before(const det *a, const det *b) {
  float x = (float)a->score, y = (float)b->score;
  return x != y ? x > y : a->key < b->key;
}

/* Moves the first k (0 < k < n) of d[0..n) in by_score's order, a strict order (the keys are
 * distinct and no score is NaN: they passed score_threshold), to d[0..k), in some order
 * (Hoare's selection). Sorting all of a class's candidates for its first nms_top_k took 5% of
 * PicoDet's time (80 classes of 2125 boxes, 100 of each kept). */
static void select_first(det *d, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    det p = d[lo + (hi - lo) / 2];
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (det_before(&d[i], &p)) i++;
      while (det_before(&p, &d[j])) j--;
      if (i <= j) {
        det t = d[i];
        d[i++] = d[j];
        d[j--] = t;
      }
    }
    /* now d[lo..j] are before d[i..hi], and anything between is p */
    if (k - 1 <= j) hi = j;
    else if (k - 1 >= i) lo = i;
    else return;
  }
}

/* Label, then index (the order 2-D Scores give within a class), ascending. */
static int by_label_idx(const void *pa, const void *pb) {
  const det *a = pa, *b = pb;
  if (a->label != b->label) return a->label < b->label ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}
/* Label ascending, then key (the order before). */
static int by_label_key(const void *pa, const void *pb) {
  const det *a = pa, *b = pb;
  if (a->label != b->label) return a->label < b->label ? -1 : 1;
  return a->key < b->key ? -1 : a->key > b->key;
}

/* Paddle's IoU of two boxes (x1, y1, x2, y2): 0 when they do not overlap; areas 0 for an
 * inverted box; with +1 on every side length unless normalized. */
static double box_area(const double *b, bool normalized) {
  if (b[2] < b[0] || b[3] < b[1]) return 0;
  double w = b[2] - b[0], h = b[3] - b[1];
  return normalized ? w * h : (w + 1) * (h + 1);
}
static double iou(const double *a, const double *b, bool normalized) {
  if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0;
  double n = normalized ? 0 : 1;
  double iw = fmin(a[2], b[2]) - fmax(a[0], b[0]) + n, ih = fmin(a[3], b[3]) - fmax(a[1], b[1]) + n;
  double inter = iw * ih;
  return inter / (box_area(a, normalized) + box_area(b, normalized) - inter);
}

/* A growing list of detections. */
typedef struct det_list {
  det *d;
  int64_t n, cap;
} det_list;

static bool det_room(det_list *l, int64_t more) {
  if (l->n + more <= l->cap) return true;
  int64_t cap = l->cap ? l->cap : 64;
  while (cap < l->n + more) cap *= 2;
  det *d = pd_realloc(l->d, (size_t)cap * sizeof *d);
  if (!d) return false;
  l->d = d;
  l->cap = cap;
  return true;
}

/* The NMS of one image, appended to out: for each class but background_label, the boxes
 * scoring above score_threshold, by score (the first nms_top_k), each kept when its IoU with
 * every box kept before is at most the threshold, which then shrinks by nms_eta while above
 * 0.5; then, over all classes, the keep_top_k best scores when more were kept. The image's
 * detections end grouped by class (ascending), each class in the order of its scores (of its
 * indices for 2-D Scores). cand is scratch for m detections. false: out of memory. */
static bool nms_image(const nms_view *v, const nms_cfg *g, det *cand, det_list *out) {
  int64_t start = out->n;
  for (int64_t c = 0; c < v->classes; c++) {
    if (c == g->background) continue;
    int64_t nc = 0;
    for (int64_t m = 0; m < v->m; m++) {
      double sc = v->s[c * v->sc + m * v->sm];
      if (sc > g->score_thr) cand[nc] = (det){c, m, nc, sc}, nc++;
    }
    if (g->nms_top_k > -1 && g->nms_top_k < nc) { /* only the first nms_top_k in order */
      if (g->nms_top_k > 0) select_first(cand, nc, g->nms_top_k);
      nc = g->nms_top_k;
    }
    qsort(cand, (size_t)nc, sizeof *cand, by_score);
    double thr = g->nms_thr;
    int64_t first = out->n;
    for (int64_t i = 0; i < nc; i++) {
      const double *box = v->b + c * v->bc + cand[i].idx * v->bm;
      bool keep = true;
      for (int64_t k = first; k < out->n && keep; k++)
        keep = iou(box, v->b + c * v->bc + out->d[k].idx * v->bm, g->normalized) <= thr;
      if (!keep) continue;
      if (!det_room(out, 1)) return false;
      out->d[out->n++] = cand[i];
      if (g->eta < 1 && thr > 0.5) thr = g->f32 ? (double)(float)(thr * g->eta) : thr * g->eta;
    }
  }
  det *d = out->d + start;
  int64_t n = out->n - start;
  if (g->keep_top_k > -1 && n > g->keep_top_k) { /* the first keep_top_k by score, any order */
    for (int64_t i = 0; i < n; i++) d[i].key = i;
    if (g->keep_top_k > 0) select_first(d, n, g->keep_top_k);
    n = g->keep_top_k;
    qsort(d, (size_t)n, sizeof *d, by_label_key);
    out->n = start + n;
  }
  if (v->bc) qsort(d, (size_t)n, sizeof *d, by_label_idx);
  return true;
}

/* The images' rows of 2-D Scores: from RoisNum (counts) or BBoxes' last LoD level. */
static pd_status nms_rows(const pd_exec_ctx *ctx, const pd_tensor *bb, const pd_tensor *rn,
                          int64_t rows, int64_t **off, int64_t *n) {
  char s[DIMS_BUF];
  if (rn) {
    if (!is_int(rn->dtype) || rn->ndims != 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "RoisNum must be a 1-D int32 or int64 tensor, got %s "
                         "%s", pd_dtype_name(rn->dtype), shape_str(rn, s));
    *n = rn->dims[0];
  } else if (bb->nlod) {
    *n = bb->lod[bb->nlod - 1].n - 1;
  } else {
    return pd_ctx_fail(ctx, PD_EINVAL, "2-D Scores need RoisNum or a LoD on BBoxes to split "
                       "their rows into images");
  }
  if (!(*off = pd_malloc((size_t)(*n + 1) * sizeof **off))) return nomem(ctx);
  (*off)[0] = 0;
  for (int64_t i = 0; i < *n; i++) {
    int64_t e = rn ? (*off)[i] + elem_i(rn, i) : bb->lod[bb->nlod - 1].offsets[i + 1];
    if (e < (*off)[i] || e > rows) {
      pd_free(*off);
      return pd_ctx_fail(ctx, PD_EINVAL, "image %" PRId64 " ends at row %" PRId64 " of %" PRId64
                         " (%s)", i, e, rows, rn ? "RoisNum" : "BBoxes' LoD");
    }
    (*off)[i + 1] = e;
  }
  return PD_OK;
}

/* A float tensor's values as doubles (pd_free them). */
static double *as_doubles(const pd_tensor *t) {
  int64_t n = pd_tensor_numel(t);
  double *d = pd_malloc((size_t)(n ? n : 1) * sizeof *d);
  if (d)
    for (int64_t i = 0; i < n; i++) d[i] = fget(pd_tensor_data(t), t->dtype, i);
  return d;
}

/* Write the outputs: Out rows (label, score, box), Index (the box's place in BBoxes: image
 * offset + m for 3-D Scores, (row) C + class for 2-D), NmsRoisNum, and the LoD (1 and 2). No
 * detection: Out [0, 6] and Index [0, 1] when Index is bound, else Out [1, 1] holding -1 (and
 * one detection counted for the first image). */
static pd_status nms_write(pd_exec_ctx *ctx, const det_list *all, const int64_t *starts,
                           int64_t n, const int64_t *boff, const nms_view *views,
                           const pd_tensor *scores) {
  pd_tensor *out, *index = NULL, *num = NULL;
  pd_status st;
  int v = ctx->def->karg;
  if ((st = out1(ctx, "Out", &out)) ||
      (v >= 2 && (st = out_opt(ctx, "Index", &index))) ||
      (v == 3 && (st = out_opt(ctx, "NmsRoisNum", &num))))
    return st;
  int64_t kept = starts[n], lod[2] = {0, 1};
  pd_dtype dt = scores->dtype;
  bool none = kept == 0 && !index;
  int64_t od[2] = {none ? 1 : kept, none ? 1 : 6}, id[2] = {kept, 1}, nd[1] = {n};
  if ((st = resize(ctx, out, dt, 2, od, NULL)) ||
      (index && (st = resize(ctx, index, PD_INT32, 2, id, NULL))) ||
      (num && (st = resize(ctx, num, PD_INT32, 1, nd, NULL))))
    return st;
  void *o = pd_tensor_data(out);
  if (none) fput(o, dt, 0, -1);
  for (int64_t i = 0; i < n; i++) {
    const nms_view *w = &views[i];
    for (int64_t r = starts[i]; r < starts[i + 1]; r++) {
      const det *d = &all->d[r];
      const double *box = w->b + d->label * w->bc + d->idx * w->bm;
      fput(o, dt, r * 6, (double)d->label);
      fput(o, dt, r * 6 + 1, w->s[d->label * w->sc + d->idx * w->sm]);
      for (int k = 0; k < 4; k++) fput(o, dt, r * 6 + 2 + k, box[k]);
      if (index)
        PD_TENSOR_I32(index)[r] = (int32_t)(w->bc ? (boff[i] + d->idx) * w->classes + d->label
                                                  : boff[i] + d->idx);
    }
    if (num) PD_TENSOR_I32(num)[i] = (int32_t)(starts[i + 1] - starts[i] + (none && i == 0));
  }
  if (v < 3) {
    const int64_t *offs = none ? lod : starts;
    int64_t len = none ? 2 : n + 1;
    if (pd_tensor_set_lod(out, 1, &offs, &len) ||
        (index && pd_tensor_set_lod(index, 1, &offs, &len)))
      return nomem(ctx);
  }
  return PD_OK;
}

/* The multi-class NMS of Paddle's multiclass_nms ops (see nms_image): for each image in turn,
 * its detections grouped by class, in Out; Index says where each box came from, NmsRoisNum how
 * many each image has. The coordinates are compared in double; only 4-coordinate boxes are
 * supported (Paddle's polygons are not). */
pd_status pd_kernel_multiclass_nms(pd_exec_ctx *ctx) {
  const pd_tensor *bb, *sc, *rn = NULL;
  char s[DIMS_BUF], s2[DIMS_BUF];
  pd_status st;
  if ((st = in1(ctx, "BBoxes", &bb)) || (st = in1(ctx, "Scores", &sc)) ||
      (st = want_float(ctx, "Scores", sc)) ||
      (st = want_same_dtype(ctx, "BBoxes", bb, "Scores", sc)) ||
      (ctx->def->karg == 3 && (st = in_opt(ctx, "RoisNum", &rn))))
    return st;
  bool three = sc->ndims == 3;
  if (bb->ndims != 3 || bb->dims[2] != 4 ||
      (three ? bb->dims[0] != sc->dims[0] || bb->dims[1] != sc->dims[2]
             : sc->ndims != 2 || bb->dims[0] != sc->dims[0] || bb->dims[1] != sc->dims[1]))
    return pd_ctx_fail(ctx, PD_ESHAPE, "BBoxes %s and Scores %s must be [n, m, 4] and [n, "
                       "classes, m], or [rows, classes, 4] and [rows, classes] (boxes of 4 "
                       "coordinates only)", shape_str(bb, s), shape_str(sc, s2));
  nms_cfg g = {
      .score_thr = (float)pd_ctx_attr_float(ctx, "score_threshold"),
      .nms_thr = (float)pd_ctx_attr_float(ctx, "nms_threshold"),
      .eta = (float)pd_ctx_attr_float(ctx, "nms_eta"),
      .nms_top_k = pd_ctx_attr_int(ctx, "nms_top_k"),
      .keep_top_k = pd_ctx_attr_int(ctx, "keep_top_k"),
      .background = pd_ctx_attr_int(ctx, "background_label"),
      .normalized = pd_ctx_attr_bool(ctx, "normalized"),
      .f32 = sc->dtype == PD_FP32,
  };
  int64_t n = 0, *boff = NULL, classes = sc->dims[1];
  if (three) {
    n = sc->dims[0];
  } else if ((st = nms_rows(ctx, bb, rn, bb->dims[0], &boff, &n))) {
    return st;
  }
  double *S = as_doubles(sc), *B = as_doubles(bb);
  int64_t most = three ? sc->dims[2] : bb->dims[0];
  det *cand = pd_malloc((size_t)(most ? most : 1) * sizeof *cand);
  int64_t *starts = pd_malloc((size_t)(n + 1) * sizeof *starts);
  int64_t *offs = three ? pd_malloc((size_t)(n + 1) * sizeof *offs) : boff;
  nms_view *views = pd_malloc((size_t)(n ? n : 1) * sizeof *views);
  det_list all = {0};
  if (!S || !B || !cand || !starts || !offs || !views) {
    st = nomem(ctx);
    goto done;
  }
  starts[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    nms_view *w = &views[i];
    if (three) {
      int64_t m = sc->dims[2];
      offs[i] = i * m;
      *w = (nms_view){S + i * classes * m, B + i * m * 4, m, 1, 0, 4, classes, m};
    } else {
      *w = (nms_view){S + offs[i] * classes, B + offs[i] * classes * 4, 1, classes, 4,
                      classes * 4, classes, offs[i + 1] - offs[i]};
    }
    if (!nms_image(w, &g, cand, &all)) {
      st = nomem(ctx);
      goto done;
    }
    starts[i + 1] = all.n;
  }
  if (all.n > INT32_MAX) {
    st = pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%" PRId64 " detections do not fit Index's int32",
                     all.n);
    goto done;
  }
  st = nms_write(ctx, &all, starts, n, offs, views, sc);
done:
  pd_free(S);
  pd_free(B);
  pd_free(cand);
  pd_free(starts);
  pd_free(offs);
  pd_free(views);
  pd_free(all.d);
  return st;
}
