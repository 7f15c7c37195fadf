/* interp.c -- the resize ops of segmentation, detection and OCR models: nearest_interp,
 * bilinear_interp (Fluid's first versions, one float scale) and nearest_interp_v2,
 * bilinear_interp_v2, bicubic_interp_v2, linear_interp_v2 (a scale per axis): their shape
 * function, kernel and gradient kernel. As PaddlePaddle's kernels do, X's rank and the
 * interp_method attribute, not the op's name, pick the method: a 4-D X (NCHW or NHWC) is
 * resized by "nearest", "bilinear" or "bicubic", a 3-D X (NCW or NWC, data_layout NCHW or NHWC)
 * by "linear". The op builds the row and column tables on the host as PaddlePaddle 3.3.1's CPU
 * kernels compute them and hands them to the backend's interp2d entries (a 3-D X is an image of
 * one row).
 *
 * The output size: SizeTensor (one one-element int tensor per resized axis) first; else the
 * Scale input (one float for every axis, or one per axis), else the scale attribute (v2: one per
 * axis, the first for a 3-D X; v1: one float, used when > 0) give floor(in * scale), and
 * OutSize (an int tensor of one entry per axis), when bound, overrides that size but not the
 * scale; else out_h and out_w (out_w alone for a 3-D X).
 *
 * The ratio of an axis (float, as Paddle): 0 for an output of 1; (in - 1) / (out - 1) with
 * align_corners; else 1 / scale when a scale was given (even with OutSize), else in / out.
 * nearest: index trunc(ratio k), or trunc(ratio k + 0.5) with align_corners. bilinear and
 * linear: source src = ratio (k + 0.5) - 0.5 when align_mode is 0 without align_corners, else
 * ratio k; clamped at 0; taps trunc(src) and the next one (the last again at the border),
 * weights 1 - frac and frac. Paddle 3.3.1 computes bilinear's height src (and linear's) in
 * double from the float ratio and rounds it to float, the width's in float arithmetic; both are
 * reproduced, so the forward pass gives its bits. Its indices are not clamped at the far border
 * (a scale with OutSize can read past the input there); here they are. bicubic (align_mode
 * unused): src = ratio k with align_corners, else ratio (k + 0.5) - 0.5 in double, both rounded
 * to X's type T; i = floor(src), t = src - i; taps i - 1 .. i + 2 clamped into the axis, weighted
 * by Keys' cubic convolution with A = -0.75 (cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t), cc1(x)
 * = ((A + 2) x - (A + 3)) x x + 1, cc2(x) = ((A x - 5 A) x + 8 A) x - 4 A), computed in T. The
 * gradient is the forward pass's adjoint: dy added to the taps each output read, times their
 * weights.
 *
 * grid_sampler (PaddlePaddle's grid_sample on a 4-D X; 5-D is refused) samples X at the points of
 * Grid through the backend's grid_sample entries, which kernels.h defines as Paddle's CPU kernel
 * computes; its gradient has X's and Grid's parts. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape function */

/* The method: 1 (linear, 3-D X) or 2 (nearest, bilinear, bicubic: 4-D X) resized axes. */
static int method_axes(const char *method) { return strcmp(method, "linear") == 0 ? 1 : 2; }

/* A scale attribute: *sh, *sw (0 when none), from v1's float or v2's list (one resized axis:
 * its first entry, for the width). */
static pd_status infer_scale(pd_infer_ctx *c, int axes, double *sh, double *sw) {
  *sh = *sw = 0;
  if (c->def->karg == 1) {
    double s = pd_infer_attr_float(c, "scale");
    if (s > 0) *sh = *sw = (float)s;
    return PD_OK;
  }
  const pd_attr *a = pd_op_attr(c->op, "scale");
  if (!a || a->n == 0) return PD_OK;
  if (a->type != PD_ATTR_FLOATS && a->type != PD_ATTR_FLOAT64S)
    return pd_infer_fail(c, PD_ETYPE, "scale must be a list of floats");
  double v[2] = {0, 0};
  for (int i = 0; i < 2 && i < a->n; i++)
    v[i] = a->type == PD_ATTR_FLOATS ? a->floats[i] : (float)a->doubles[i];
  if (axes == 1) v[1] = v[0];
  if (a->n < axes)
    return pd_infer_fail(c, PD_EINVAL, "scale must have 2 entries (height, width) for a 4-D X, "
                         "got [%g]", v[0]);
  if (!(v[0] > 0 && v[1] > 0))
    return pd_infer_fail(c, PD_EINVAL, "scale [%g, %g] must be positive", v[0], v[1]);
  *sh = v[0];
  *sw = v[1];
  return PD_OK;
}

/* Out: X with its height and width (a 3-D X: its width) resized; unknown when an input gives
 * the size. */
pd_status pd_infer_interp(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  bool nhwc = strcmp(pd_infer_attr_str(c, "data_layout"), "NHWC") == 0;
  const char *method = pd_infer_attr_str(c, "interp_method");
  int axes = method_axes(method), rank = axes + 2;
  if (d.n >= 0 && d.n != rank)
    return pd_infer_fail(c, PD_ESHAPE, "X must have %d dims (%s) for interp_method '%s', got %s "
                         "(5-D inputs are not supported)", rank,
                         axes == 1 ? (nhwc ? "NWC" : "NCW") : (nhwc ? "NHWC" : "NCHW"), method,
                         pd_infer_dims_str(&d, s));
  if (d.n < 0) d = pd_infer_dims_unknown(rank);
  /* The first resized dim; for a 3-D X the "height" is a dim of 1 that is not there. */
  int hd = nhwc ? 1 : 2;
  int64_t o[2] = {-1, -1};
  double sc[2] = {0, 0};
  bool from_inputs = pd_infer_nin(c, "SizeTensor") > 0 || pd_infer_nin(c, "OutSize") > 0 ||
                     pd_infer_nin(c, "Scale") > 0;
  if (!from_inputs && (st = infer_scale(c, axes, &sc[0], &sc[1]))) return st;
  if (!from_inputs && sc[0] > 0) {
    for (int i = 2 - axes; i < 2; i++) {
      int64_t in = d.d[hd + i - (2 - axes)];
      o[i] = in < 0 ? -1 : (int64_t)((float)in * (float)sc[i]);
      if (o[i] == 0)
        return pd_infer_fail(c, PD_ESHAPE, "X %s scaled by %g is empty",
                             pd_infer_dims_str(&d, s), sc[i]);
    }
  } else if (!from_inputs) {
    o[0] = axes == 2 ? pd_infer_attr_int(c, "out_h") : 1;
    o[1] = pd_infer_attr_int(c, "out_w");
    if (o[0] <= 0 || o[1] <= 0)
      return axes == 1
                 ? pd_infer_fail(c, PD_EINVAL, "out_w %" PRId64 " must be positive when no "
                                 "SizeTensor, OutSize, Scale or scale gives the size", o[1])
                 : pd_infer_fail(c, PD_EINVAL, "out_h %" PRId64 " and out_w %" PRId64 " must "
                                 "be positive when no SizeTensor, OutSize, Scale or scale gives "
                                 "the size", o[0], o[1]);
  }
  if (axes == 2) d.d[hd] = o[0];
  d.d[hd + axes - 1] = o[1];
  return pd_infer_set_out(c, "Out", 0, &d, x->dtype, 0);
}

/* ================================================================ sizes and tables */

typedef struct interp_cfg {
  pd_k_interp2d p;
  int axes;        /* resized axes: 1 (linear, a 3-D X as an image of one row) or 2 */
  bool bicubic;
  bool align_corners;
  int64_t align_mode;
  float scale[2];  /* the scale of each axis, -1 when none was given */
} interp_cfg;

/* One float of a scale input or attribute, which must be positive. */
static pd_status positive_scale(const pd_exec_ctx *ctx, const char *what, double v, float *s) {
  if (!(v > 0))
    return pd_ctx_fail(ctx, PD_EINVAL, "%s %g must be positive", what, v);
  *s = (float)v;
  return PD_OK;
}

/* The output size and the scales, as the top of the file says (one axis: the width's; the
 * height stays 1). */
static pd_status out_size(const pd_exec_ctx *ctx, interp_cfg *g) {
  char s[DIMS_BUF];
  pd_status st;
  int axes = g->axes, first = 2 - axes;  /* the first resized axis of o and scale */
  int64_t o[2] = {axes == 2 ? pd_ctx_attr_int(ctx, "out_h") : 1, pd_ctx_attr_int(ctx, "out_w")};
  const char *from = axes == 2 ? "out_h, out_w" : "out_w";
  g->scale[0] = g->scale[1] = -1;
  int nl = pd_ctx_nin(ctx, "SizeTensor");
  if (nl > 0) {
    from = "SizeTensor";
    if (nl != axes)
      return pd_ctx_fail(ctx, PD_EINVAL, axes == 2 ? "SizeTensor has %d tensors; a 4-D X takes "
                         "2 (height, width)" : "SizeTensor has %d tensors; a 3-D X takes 1 "
                         "(width)", nl);
    for (int i = first; i < 2; i++) {
      const pd_tensor *t;
      if ((st = in_at(ctx, "SizeTensor", i - first, true, &t)) ||
          (st = int_scalar_in(ctx, "SizeTensor", t, &o[i])))
        return st;
    }
  } else {
    const pd_tensor *t = in_if_set(ctx, "Scale", 0);
    if (t) {
      if (!is_float(t->dtype) || pd_tensor_numel(t) < 1)
        return pd_ctx_fail(ctx, PD_ETYPE, "Scale must hold 1 or 2 floats, got %s %s",
                           pd_dtype_name(t->dtype), shape_str(t, s));
      int64_t last = axes == 2 && pd_tensor_numel(t) > 1;
      if ((st = positive_scale(ctx, "Scale", (float)elem_f(t, 0), &g->scale[first])) ||
          (st = positive_scale(ctx, "Scale", (float)elem_f(t, last), &g->scale[1])))
        return st;
    } else if (ctx->def->karg == 1) {
      double v = pd_ctx_attr_float(ctx, "scale");
      if (v > 0) g->scale[0] = g->scale[1] = (float)v;
    } else {
      const pd_attr *a = pd_ctx_attr_raw(ctx, "scale");
      int n = a && (a->type == PD_ATTR_FLOATS || a->type == PD_ATTR_FLOAT64S) ? a->n : 0;
      double v[2] = {0, 0};
      for (int i = 0; i < 2 && i < n; i++)
        v[i] = a->type == PD_ATTR_FLOATS ? a->floats[i] : (float)a->doubles[i];
      if (axes == 1) v[1] = v[0];
      if (n == 1 && axes == 2)
        return pd_ctx_fail(ctx, PD_EINVAL, "scale must have 2 entries (height, width) for a "
                           "4-D X, got [%g]", v[0]);
      if (n > 0 && ((st = positive_scale(ctx, "scale", v[0], &g->scale[first])) ||
                    (st = positive_scale(ctx, "scale", v[1], &g->scale[1]))))
        return st;
    }
    if (g->scale[1] > 0) {
      from = t ? "Scale" : "scale";
      if (axes == 2) o[0] = (int64_t)((float)g->p.h * g->scale[0]);
      o[1] = (int64_t)((float)g->p.w * g->scale[1]);
    }
    const pd_tensor *os = in_if_set(ctx, "OutSize", 0);
    if (os) {
      if (!is_int(os->dtype) || pd_tensor_numel(os) != axes)
        return pd_ctx_fail(ctx, PD_EINVAL, axes == 2 ? "OutSize must hold 2 ints (height, "
                           "width), got %s %s" : "OutSize must hold 1 int (width), got %s %s",
                           pd_dtype_name(os->dtype), shape_str(os, s));
      from = "OutSize";
      for (int i = first; i < 2; i++) o[i] = elem_i(os, i - first);
    }
  }
  if (o[0] <= 0 || o[1] <= 0)
    return pd_ctx_fail(ctx, PD_EINVAL, "the output size [%" PRId64 ", %" PRId64 "] (from %s) "
                       "must be positive", o[0], o[1], from);
  g->p.oh = o[0];
  g->p.ow = o[1];
  return PD_OK;
}

/* X's sizes, the attributes and the output size. */
static pd_status interp_setup(const pd_exec_ctx *ctx, const pd_tensor *x, interp_cfg *g) {
  char s[DIMS_BUF];
  pd_status st = want_float(ctx, "X", x);
  if (st) return st;
  bool nhwc = strcmp(pd_ctx_attr_str(ctx, "data_layout"), "NHWC") == 0;
  const char *method = pd_ctx_attr_str(ctx, "interp_method");
  bool nearest = strcmp(method, "nearest") == 0, bicubic = strcmp(method, "bicubic") == 0;
  if (!nearest && !bicubic && strcmp(method, "bilinear") != 0 && strcmp(method, "linear") != 0)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "interp_method '%s' is not supported (nearest, "
                       "bilinear, bicubic, linear)", method);
  int axes = method_axes(method);
  if (x->ndims != axes + 2)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have %d dims (%s) for interp_method '%s', got %s "
                       "(5-D inputs are not supported)", axes + 2,
                       axes == 1 ? (nhwc ? "NWC" : "NCW") : (nhwc ? "NHWC" : "NCHW"), method,
                       shape_str(x, s));
  memset(g, 0, sizeof *g);
  g->axes = axes;
  g->bicubic = bicubic;
  int taps = nearest ? 1 : bicubic ? 4 : 2;
  /* A 3-D X [n, c, w] (NWC: [n, w, c]) is the image [n, c, 1, w] ([n, 1, w, c]). */
  int cd = nhwc ? x->ndims - 1 : 1, wd = nhwc ? x->ndims - 2 : x->ndims - 1;
  g->p = (pd_k_interp2d){.n = x->dims[0], .c = x->dims[cd], .h = axes == 2 ? x->dims[wd - 1] : 1,
                         .w = x->dims[wd], .nhwc = nhwc, .th = axes == 2 ? taps : 1, .tw = taps};
  if (g->p.h < 1 || g->p.w < 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X %s has an empty image", shape_str(x, s));
  g->align_corners = pd_ctx_attr_bool(ctx, "align_corners");
  g->align_mode = pd_ctx_attr_int(ctx, "align_mode");
  return out_size(ctx, g);
}

/* Out's dims: X's with the resized axes' sizes. */
static int out_dims(const interp_cfg *g, int64_t d[4]) {
  const pd_k_interp2d *p = &g->p;
  int nd = 0;
  d[nd++] = p->n;
  if (!p->nhwc) d[nd++] = p->c;
  if (g->axes == 2) d[nd++] = p->oh;
  d[nd++] = p->ow;
  if (p->nhwc) d[nd++] = p->c;
  return nd;
}

/* The float ratio of an axis of in -> out. */
static float axis_ratio(int64_t in, int64_t out, bool align_corners, float scale) {
  if (out <= 1) return 0.0f;
  if (align_corners) return (float)(in - 1) / (float)(out - 1);
  if (scale > 0) return (float)(1.0 / (double)scale);
  return (float)in / (float)out;
}

/* The taps i0, i1 and weights l0, l1 of the out positions of one axis, nearest (i0 only) or
 * linear (the top of the file); float_src: the source index in float arithmetic (Paddle's
 * bilinear width), else in double rounded to float (its height, and linear's width). */
static void axis_table(const interp_cfg *g, int64_t in, int64_t out, float r, bool float_src,
                       int64_t *i0, int64_t *i1, double *l0, double *l1) {
  bool ac = g->align_corners, half = g->align_mode == 0 && !ac;
  bool nearest = g->p.tw == 1;
  for (int64_t k = 0; k < out; k++) {
    float rk = r * (float)k;
    int64_t t;
    float frac = 0;
    if (nearest) {
      t = ac ? (int64_t)((double)rk + 0.5) : (int64_t)rk;
    } else if (float_src) {
      float src = half ? r * ((float)k + 0.5f) - 0.5f : rk;
      if (src < 0) src = 0;
      t = (int64_t)src;
      frac = src - (float)t;
    } else {
      double src = (double)r * ((double)k + 0.5) - 0.5;
      t = half ? (int64_t)src : (int64_t)rk;
      if (t < 0) t = 0;
      float fsrc = (float)src > 0 ? (float)src : 0.0f;
      frac = half ? fsrc - (float)t : rk - (float)t;
    }
    if (t > in - 1) t = in - 1;
    i0[k] = t;
    l0[k] = 1.0f - frac;
    if (i1) {
      i1[k] = t + 1 < in ? t + 1 : in - 1;
      l1[k] = frac;
    }
  }
}

/* x rounded to float when f32 (so that double arithmetic, rounded after each operation, gives
 * float arithmetic's results: +, -, * of floats are exact in double before the rounding). */
static double rnd(bool f32, double x) { return f32 ? (double)(float)x : x; }

/* Keys' cubic convolution weights of t (A = -0.75), in X's type. */
static void cubic_weights(bool f32, double t, double w[4]) {
  const double a = -0.75;
#define R_(e) rnd(f32, (e))
  /* cc1(x) = ((A + 2) x - (A + 3)) x x + 1; cc2(x) = ((A x - 5 A) x + 8 A) x - 4 A. */
#define CC1_(x) R_(R_(R_(R_(R_((a + 2) * (x)) - (a + 3)) * (x)) * (x)) + 1)
#define CC2_(x) R_(R_(R_(R_(R_(R_(a * (x)) - 5 * a) * (x)) + 8 * a) * (x)) - 4 * a)
  double x1 = t + 1, x2 = R_(1 - t), x3 = R_(x2 + 1);
  x1 = R_(x1);
  w[0] = CC2_(x1);
  w[1] = CC1_(t);
  w[2] = CC1_(x2);
  w[3] = CC2_(x3);
#undef CC1_
#undef CC2_
#undef R_
}

/* The 4 taps and weights of each out position of one axis, bicubic (the top of the file): tap
 * j of position k at i[j out + k], its weight at l[j out + k]. */
static void cubic_table(const interp_cfg *g, bool f32, int64_t in, int64_t out, float r,
                        int64_t *i, double *l) {
  for (int64_t k = 0; k < out; k++) {
    double src = g->align_corners ? (double)(r * (float)k)
                                  : rnd(f32, (double)r * ((double)k + 0.5) - 0.5);
    int64_t at = (int64_t)floorf((float)src);
    double t = rnd(f32, src - (double)at), w[4];
    cubic_weights(f32, t, w);
    for (int j = 0; j < 4; j++) {
      int64_t q = at - 1 + j;
      i[j * out + k] = q < 0 ? 0 : q > in - 1 ? in - 1 : q;
      l[j * out + k] = w[j];
    }
  }
}

/* src -> dst through the backend's interp2d (grad: its gradient), with the tables built here
 * and moved where the op computes; a copy when the size does not change (Paddle's too). */
static pd_status interp_run(const pd_exec_ctx *ctx, const interp_cfg *g, pd_dtype dt,
                            const void *src, void *dst, bool grad) {
  const pd_k_interp2d *p = &g->p;
  if (p->h == p->oh && p->w == p->ow) {
    int64_t n = p->n * p->c * p->h * p->w;
    return n ? pd_ctx_copy(ctx, dst, src, (size_t)n * pd_dtype_size(dt)) : PD_OK;
  }
  if (p->oh > INT64_MAX / 64 - p->ow)
    return pd_ctx_fail(ctx, PD_EINVAL, "the output size [%" PRId64 ", %" PRId64 "] is too large",
                       p->oh, p->ow);
  int64_t m = p->th * p->oh + p->tw * p->ow, rows = p->th * p->oh;
  local_buf sc = {0};
  int64_t *idx = local_get(&sc, (size_t)m * (sizeof(int64_t) + sizeof(double)));
  if (!idx) return nomem(ctx);
  double *lam = (double *)(idx + m);
  float rh = axis_ratio(p->h, p->oh, g->align_corners, g->scale[0]);
  float rw = axis_ratio(p->w, p->ow, g->align_corners, g->scale[1]);
  if (g->bicubic) {
    cubic_table(g, dt == PD_FP32, p->h, p->oh, rh, idx, lam);
    cubic_table(g, dt == PD_FP32, p->w, p->ow, rw, idx + rows, lam + rows);
  } else {
    if (g->axes == 2) {
      axis_table(g, p->h, p->oh, rh, false, idx, p->th > 1 ? idx + p->oh : NULL, lam,
                 lam + p->oh);
    } else {
      idx[0] = 0, lam[0] = 1;  /* the one row */
    }
    axis_table(g, p->w, p->ow, rw, g->axes == 2, idx + rows, p->tw > 1 ? idx + rows + p->ow : NULL,
               lam + rows, lam + rows + p->ow);
  }
  pd_status st;
  void *tmp = NULL;
  const int64_t *at = pd_ctx_at_place(ctx, idx, (size_t)m * (sizeof(int64_t) + sizeof(double)),
                                      &tmp, &st);
  if (at) {
    pd_k_interp2d q = *p;
    q.idx = at;
    q.lam = (const double *)(at + m);
    st = grad ? pd_ctx_check(ctx, ctx->k->interp2d_grad(dt, &q, src, dst), "interp2d_grad")
              : pd_ctx_check(ctx, ctx->k->interp2d(dt, &q, src, dst), "interp2d");
  }
  pd_ctx_scratch_free(ctx, tmp);
  local_free(&sc);
  return st;
}

/* ================================================================ kernels */

/* nearest_interp(_v2), bilinear_interp(_v2), bicubic_interp_v2, linear_interp_v2: Out = X
 * resized (the top of the file). */
pd_status pd_kernel_interp(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  interp_cfg g;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = interp_setup(ctx, x, &g)) ||
      (st = out1(ctx, "Out", &out)))
    return st;
  int64_t od[4];
  int nd = out_dims(&g, od);
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) && !(st = resize(ctx, out, x->dtype, nd, od, NULL)))
    st = interp_run(ctx, &g, x->dtype, pd_tensor_data(x), pd_tensor_data(out), false);
  hold_free(&h);
  return st;
}

/* Their gradient: X@GRAD, X's shape, gets each Out@GRAD element on the taps its output read,
 * times their weights. */
pd_status pd_kernel_interp_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x, *dy;
  interp_cfg g;
  pd_status st = out_opt(ctx, "X@GRAD", &dx);
  if (st || !dx) return st;
  int64_t od[4];
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dy)) ||
      (st = interp_setup(ctx, x, &g)))
    return st;
  int nd = out_dims(&g, od);
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, nd, od, x->dtype))) return st;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, dx, &dy)) && !(st = unalias(ctx, &h, dx, &x)) &&
      !(st = resize_like(ctx, dx, x, x)))
    st = interp_run(ctx, &g, x->dtype, pd_tensor_data(dy), pd_tensor_data(dx), true);
  hold_free(&h);
  return st;
}

/* ================================================================ grid_sampler */

/* Output: [N, C, Ho, Wo] from X [N, C, H, W] and Grid [N, Ho, Wo, 2], X's dtype. */
pd_status pd_infer_grid_sampler(pd_infer_ctx *c) {
  const pd_var_desc *x, *g;
  pd_infer_dims d, gd;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (!st) st = pd_infer_in(c, "Grid", 0, &g, &gd);
  if (st) return st;
  if (d.n >= 0 && d.n != 4)
    return pd_infer_fail(c, PD_ESHAPE, "X must have 4 dims [N, C, H, W], got %s (5-D inputs are "
                         "not supported)", pd_infer_dims_str(&d, s1));
  if (gd.n >= 0 && (gd.n != 4 || (gd.d[3] >= 0 && gd.d[3] != 2)))
    return pd_infer_fail(c, PD_ESHAPE, "Grid must be [N, Ho, Wo, 2], got %s",
                         pd_infer_dims_str(&gd, s1));
  if (g->dtype != x->dtype)
    return pd_infer_fail(c, PD_ETYPE, "Grid is %s but X is %s", pd_dtype_name(g->dtype),
                         pd_dtype_name(x->dtype));
  if (d.n < 0) d = pd_infer_dims_unknown(4);
  if (gd.n < 0) gd = pd_infer_dims_unknown(4);
  if (d.d[0] >= 0 && gd.d[0] >= 0 && d.d[0] != gd.d[0])
    return pd_infer_fail(c, PD_ESHAPE, "X %s and Grid %s have different batch sizes",
                         pd_infer_dims_str(&d, s1), pd_infer_dims_str(&gd, s2));
  pd_infer_dims out = {.n = 4, .d = {d.d[0] >= 0 ? d.d[0] : gd.d[0], d.d[1], gd.d[1], gd.d[2]}};
  return pd_infer_set_out(c, "Output", 0, &out, x->dtype, 0);
}

/* X and Grid checked against each other, and the attributes, as the backend's parameters. */
static pd_status grid_setup(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *g,
                            pd_k_grid_sample *p) {
  char s1[DIMS_BUF], s2[DIMS_BUF];
  pd_status st;
  if ((st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "Grid", g, "X", x))) return st;
  if (x->ndims != 4)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have 4 dims [N, C, H, W], got %s (5-D inputs are "
                       "not supported)", shape_str(x, s1));
  if (g->ndims != 4 || g->dims[3] != 2 || g->dims[0] != x->dims[0])
    return pd_ctx_fail(ctx, PD_ESHAPE, "Grid must be [N, Ho, Wo, 2] for X %s, got %s",
                       shape_str(x, s1), shape_str(g, s2));
  if (x->dims[2] < 1 || x->dims[3] < 1 || g->dims[1] < 1 || g->dims[2] < 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X %s or Grid %s has an empty image", shape_str(x, s1),
                       shape_str(g, s2));
  const char *pad = pd_ctx_attr_str(ctx, "padding_mode");
  *p = (pd_k_grid_sample){.n = x->dims[0], .c = x->dims[1], .h = x->dims[2], .w = x->dims[3],
                          .oh = g->dims[1], .ow = g->dims[2],
                          .nearest = strcmp(pd_ctx_attr_str(ctx, "mode"), "nearest") == 0,
                          .padding = strcmp(pad, "border") == 0       ? 1
                                     : strcmp(pad, "reflection") == 0 ? 2
                                                                      : 0,
                          .align_corners = pd_ctx_attr_bool(ctx, "align_corners")};
  return PD_OK;
}

/* grid_sampler: Output = X sampled at Grid's points (kernels.h's grid_sample). */
pd_status pd_kernel_grid_sampler(pd_exec_ctx *ctx) {
  const pd_tensor *x, *g;
  pd_tensor *out;
  pd_k_grid_sample p;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Grid", &g)) || (st = grid_setup(ctx, x, g, &p)) ||
      (st = out1(ctx, "Output", &out)))
    return st;
  int64_t od[4] = {p.n, p.c, p.oh, p.ow};
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) && !(st = unalias(ctx, &h, out, &g)) &&
      !(st = resize(ctx, out, x->dtype, 4, od, NULL)))
    st = pd_ctx_check(ctx, ctx->k->grid_sample(x->dtype, &p, pd_tensor_data(x), pd_tensor_data(g),
                                               pd_tensor_data(out)),
                      "grid_sample");
  hold_free(&h);
  return st;
}

/* Its gradient: X@GRAD gets each Output@GRAD element on the corners its output read, times
 * their weights; Grid@GRAD the derivative of the output by the grid values (kernels.h). */
pd_status pd_kernel_grid_sampler_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx, *dg;
  const pd_tensor *x, *g, *dy;
  pd_k_grid_sample p;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || (st = out_opt(ctx, "Grid@GRAD", &dg))) return st;
  if (!dx && !dg) return PD_OK;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Grid", &g)) ||
      (st = in1(ctx, "Output@GRAD", &dy)) || (st = grid_setup(ctx, x, g, &p)))
    return st;
  int64_t od[4] = {p.n, p.c, p.oh, p.ow};
  if ((st = want_grad_shape(ctx, "Output@GRAD", dy, 4, od, x->dtype))) return st;
  hold h;
  hold_init(&h);
  if (dx && ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &g)) ||
             (st = unalias(ctx, &h, dx, &dy)) || (st = resize_like(ctx, dx, x, x))))
    goto done;
  if (dg && ((st = unalias(ctx, &h, dg, &x)) || (st = unalias(ctx, &h, dg, &g)) ||
             (st = unalias(ctx, &h, dg, &dy)) || (st = resize_like(ctx, dg, g, g))))
    goto done;
  st = pd_ctx_check(ctx, ctx->k->grid_sample_grad(x->dtype, &p, pd_tensor_data(x),
                                                  pd_tensor_data(g), pd_tensor_data(dy),
                                                  dx ? pd_tensor_data(dx) : NULL,
                                                  dg ? pd_tensor_data(dg) : NULL),
                    "grid_sample_grad");
done:
  hold_free(&h);
  return st;
}
