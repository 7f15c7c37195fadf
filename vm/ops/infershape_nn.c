/* infershape_nn.c -- shape functions of network layers and losses: conv2d and pool2d (sliding
 * windows), cross_entropy and softmax_with_cross_entropy (labels against scores), accuracy. */
#include "config.h"
#include "vm/ops/infershape.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- Sliding windows ---- */

/* A 4-D image tensor's layout: where its channels and its two spatial dims are. */
typedef struct layout {
  int c, h, w;
} layout;

static layout image_layout(pd_infer_ctx *c) {
  bool nhwc = strcmp(pd_infer_attr_str(c, "data_format"), "NHWC") == 0;
  return nhwc ? (layout){3, 1, 2} : (layout){1, 2, 3};
}

/* Read an INTS attribute of exactly 2 entries, each >= min. */
static pd_status read_pair(pd_infer_ctx *c, const char *name, int64_t min, int64_t v[2]) {
  int64_t buf[2];
  char s[PD_LIST_BUF];
  int n = pd_infer_attr_ints(c, name, buf, 2);
  if (n != 2)
    return pd_infer_fail(c, PD_EINVAL, "%s must have 2 entries (height, width), got %s", name,
                         pd_infer_attr_ints_str(c, name, s));
  if (buf[0] < min || buf[1] < min)
    return pd_infer_fail(c, PD_EINVAL, "%s %s must be %s", name, pd_infer_attr_ints_str(c, name, s),
                         min > 0 ? "positive" : "non-negative");
  v[0] = buf[0];
  v[1] = buf[1];
  return PD_OK;
}

/* The window of a conv2d or pool2d over the spatial dims in[2] ("Input [...]" in messages):
 * kernel k, dilation dil (1 for pooling); strides and paddings from the attributes, paddings as
 * 2 entries (symmetric) or 4 (top, bottom, left, right). Computes the output size out[2], -1
 * where the input is unknown, and fails when the window does not fit. */
static pd_status slide(pd_infer_ctx *c, const int64_t in[2], const int64_t k[2],
                       const int64_t dil[2], bool ceil_mode, const char *what, int64_t out[2]) {
  int64_t stride[2], pad[4], p[4];
  char s[PD_LIST_BUF];
  pd_status st = read_pair(c, "strides", 1, stride);
  if (st) return st;
  int np = pd_infer_attr_ints(c, "paddings", p, 4);
  if (np != 2 && np != 4)
    return pd_infer_fail(c, PD_EINVAL, "paddings must have 2 or 4 entries, got %s",
                         pd_infer_attr_ints_str(c, "paddings", s));
  for (int i = 0; i < np; i++)
    if (p[i] < 0)
      return pd_infer_fail(c, PD_EINVAL, "paddings %s must be non-negative",
                           pd_infer_attr_ints_str(c, "paddings", s));
  for (int i = 0; i < 4; i++) pad[i] = np == 4 ? p[i] : p[i / 2];
  const char *algo = pd_infer_attr_str(c, "padding_algorithm");
  static const char *const dim_name[2] = {"height", "width"};
  for (int i = 0; i < 2; i++) {
    if (in[i] < 0 || k[i] < 0) {
      out[i] = -1;
      continue;
    }
    if (strcmp(algo, "SAME") == 0) { /* pad so that out = ceil(in / stride) */
      out[i] = (in[i] + stride[i] - 1) / stride[i];
      continue;
    }
    int64_t p0 = strcmp(algo, "VALID") == 0 ? 0 : pad[2 * i];
    int64_t p1 = strcmp(algo, "VALID") == 0 ? 0 : pad[2 * i + 1];
    /* span = in + p0 + p1 - extent (+ stride - 1 when rounding up), with care for overflow:
     * a size too large for int64 stays unknown here. */
    int64_t total = pd_infer_dim_add(pd_infer_dim_add(in[i], p0), p1);
    int64_t extent = pd_infer_dim_add(pd_infer_dim_mul(dil[i], k[i] - 1), 1);
    if (total < 0 || extent < 0) {
      out[i] = -1;
      continue;
    }
    int64_t span = total - extent;
    if (ceil_mode && span < 0) {
      span += stride[i] - 1;
    } else if (ceil_mode && (span = pd_infer_dim_add(span, stride[i] - 1)) < 0) {
      out[i] = -1;
      continue;
    }
    out[i] = (span >= 0 ? span / stride[i] : -((-span + stride[i] - 1) / stride[i])) + 1;
    if (out[i] <= 0)
      return pd_infer_fail(c, PD_ESHAPE, "%s (output %s would be %" PRId64 ")", what, dim_name[i],
                           out[i]);
  }
  return PD_OK;
}

/* conv2d: Input [N, C, H, W] (or NHWC) convolved with Filter [M, C / groups, KH, KW] gives
 * Output [N, M, OH, OW]. */
pd_status pd_infer_conv2d(pd_infer_ctx *c) {
  const pd_var_desc *in, *f;
  pd_infer_dims di, df, out;
  char si[PD_DIMS_BUF], sf[PD_DIMS_BUF], what[2 * PD_DIMS_BUF + 64];
  pd_status st;
  if ((st = pd_infer_in(c, "Input", 0, &in, &di)) || (st = pd_infer_in(c, "Filter", 0, &f, &df)) ||
      (st = pd_infer_same_dtype(c, "Input", in->dtype, "Filter", f->dtype)))
    return st;
  layout L = image_layout(c);
  if (di.n >= 0 && di.n != 4)
    return pd_infer_fail(c, PD_ESHAPE, "Input must have 4 dims (%s), got %s",
                         L.c == 1 ? "NCHW" : "NHWC", pd_infer_dims_str(&di, si));
  if (df.n >= 0 && df.n != 4)
    return pd_infer_fail(c, PD_ESHAPE, "Filter must have 4 dims [out channels, in channels / "
                         "groups, height, width], got %s", pd_infer_dims_str(&df, sf));
  int64_t groups = pd_infer_attr_int(c, "groups");
  if (groups < 1) return pd_infer_fail(c, PD_EINVAL, "groups must be at least 1, got %" PRId64, groups);
  if (di.n < 0) di = pd_infer_dims_unknown(4);
  if (df.n < 0) df = pd_infer_dims_unknown(4);
  int64_t ch = di.d[L.c], fch = df.d[1], m = df.d[0];
  if (ch >= 0 && fch >= 0 && ch != fch * groups)
    return pd_infer_fail(c, PD_ESHAPE, "Input %s has %" PRId64 " channels but Filter %s with groups %"
                         PRId64 " takes %" PRId64, pd_infer_dims_str(&di, si), ch,
                         pd_infer_dims_str(&df, sf), groups, fch * groups);
  if (m >= 0 && m % groups != 0)
    return pd_infer_fail(c, PD_ESHAPE, "Filter %s has %" PRId64 " output channels, which groups %"
                         PRId64 " does not divide", pd_infer_dims_str(&df, sf), m, groups);
  int64_t dil[2], k[2] = {df.d[2], df.d[3]}, sp[2] = {di.d[L.h], di.d[L.w]}, o[2];
  if (k[0] == 0 || k[1] == 0)
    return pd_infer_fail(c, PD_ESHAPE, "Filter %s has an empty window", pd_infer_dims_str(&df, sf));
  if ((st = read_pair(c, "dilations", 1, dil))) return st;
  snprintf(what, sizeof what, "Input %s is smaller than Filter %s", pd_infer_dims_str(&di, si),
           pd_infer_dims_str(&df, sf));
  if ((st = slide(c, sp, k, dil, false, what, o))) return st;
  out.n = 4;
  out.d[0] = di.d[0];
  out.d[L.c] = m;
  out.d[L.h] = o[0];
  out.d[L.w] = o[1];
  return pd_infer_set_out(c, "Output", 0, &out, in->dtype, 0);
}

/* pool2d: X [N, C, H, W] (or NHWC) pooled by ksize windows; global_pooling gives [N, C, 1, 1],
 * adaptive pooling [N, C, ksize...]. */
pd_status pd_infer_pool2d(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  char s[PD_DIMS_BUF], sk[PD_LIST_BUF], what[PD_DIMS_BUF + PD_LIST_BUF + 64];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  layout L = image_layout(c);
  if (d.n >= 0 && d.n != 4)
    return pd_infer_fail(c, PD_ESHAPE, "X must have 4 dims (%s), got %s", L.c == 1 ? "NCHW" : "NHWC",
                         pd_infer_dims_str(&d, s));
  if (d.n < 0) d = pd_infer_dims_unknown(4);
  int64_t k[2], o[2], one[2] = {1, 1}, sp[2] = {d.d[L.h], d.d[L.w]};
  if ((st = read_pair(c, "ksize", 1, k))) return st;
  if (pd_infer_attr_bool(c, "global_pooling")) {
    o[0] = o[1] = 1;
  } else if (pd_infer_attr_bool(c, "adaptive")) {
    o[0] = k[0];
    o[1] = k[1];
  } else {
    snprintf(what, sizeof what, "X %s is smaller than ksize %s", pd_infer_dims_str(&d, s),
             pd_infer_ints_str(k, 2, sk));
    if ((st = slide(c, sp, k, one, pd_infer_attr_bool(c, "ceil_mode"), what, o))) return st;
  }
  out = d;
  out.d[L.h] = o[0];
  out.d[L.w] = o[1];
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* ---- Losses ---- */

/* Label against scores X (named xname) for a loss along `axis`: the same rank, the same dims
 * except along axis, where a hard label (int64/int32 class index) has 1 and a soft one (a
 * distribution, X's dtype) has X's dim. */
static pd_status check_label(pd_infer_ctx *c, const char *xname, const pd_var_desc *x,
                             const pd_infer_dims *dx, const pd_var_desc *label,
                             const pd_infer_dims *dl, int axis, bool soft) {
  char sx[PD_DIMS_BUF], sl[PD_DIMS_BUF];
  pd_status st;
  if (soft) {
    if ((st = pd_infer_same_dtype(c, "Label", label->dtype, xname, x->dtype))) return st;
  } else if (label->dtype != PD_INT64 && label->dtype != PD_INT32) {
    return pd_infer_fail(c, PD_ETYPE, "hard Label must be int64 or int32, got %s",
                         pd_dtype_name(label->dtype));
  }
  if (dx->n < 0 || dl->n < 0) return PD_OK;
  if (dx->n != dl->n)
    return pd_infer_fail(c, PD_ESHAPE, "%s %s and Label %s must have the same number of dims", xname,
                         pd_infer_dims_str(dx, sx), pd_infer_dims_str(dl, sl));
  for (int i = 0; i < dx->n; i++) {
    if (i == axis) {
      if (soft && !pd_infer_dim_compatible(dx->d[i], dl->d[i]))
        return pd_infer_fail(c, PD_ESHAPE, "soft Label %s must match %s %s in dim %d",
                             pd_infer_dims_str(dl, sl), xname, pd_infer_dims_str(dx, sx), i);
      if (!soft && dl->d[i] >= 0 && dl->d[i] != 1)
        return pd_infer_fail(c, PD_ESHAPE, "hard Label %s must have 1 in dim %d (%s %s)",
                             pd_infer_dims_str(dl, sl), i, xname, pd_infer_dims_str(dx, sx));
    } else if (!pd_infer_dim_compatible(dx->d[i], dl->d[i])) {
      return pd_infer_fail(c, PD_ESHAPE, "%s %s and Label %s differ in dim %d", xname,
                           pd_infer_dims_str(dx, sx), pd_infer_dims_str(dl, sl), i);
    }
  }
  return PD_OK;
}

/* cross_entropy: X holds probabilities over its last dim; Y = X's dims with 1 there. */
pd_status pd_infer_cross_entropy(pd_infer_ctx *c) {
  const pd_var_desc *x, *label;
  pd_infer_dims dx, dl;
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = pd_infer_in(c, "Label", 0, &label, &dl)))
    return st;
  if (dx.n == 0) return pd_infer_fail(c, PD_ESHAPE, "X must have at least 1 dim, got []");
  if ((st = check_label(c, "X", x, &dx, label, &dl, dx.n - 1, pd_infer_attr_bool(c, "soft_label"))))
    return st;
  if (dx.n > 0) dx.d[dx.n - 1] = 1;
  return pd_infer_set_out(c, "Y", 0, &dx, x->dtype, x->lod_level);
}

/* softmax_with_cross_entropy: Softmax is the softmax of Logits along `axis`; Loss has Logits'
 * dims with 1 along axis. */
pd_status pd_infer_softmax_with_cross_entropy(pd_infer_ctx *c) {
  const pd_var_desc *x, *label;
  pd_infer_dims dx, dl;
  pd_status st;
  if ((st = pd_infer_in(c, "Logits", 0, &x, &dx)) || (st = pd_infer_in(c, "Label", 0, &label, &dl)))
    return st;
  int axis = -1;
  if (dx.n >= 0 &&
      (st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "Logits", &dx, &axis)))
    return st;
  if ((st = check_label(c, "Logits", x, &dx, label, &dl, axis, pd_infer_attr_bool(c, "soft_label"))))
    return st;
  if ((st = pd_infer_set_out(c, "Softmax", 0, &dx, x->dtype, x->lod_level))) return st;
  if (axis >= 0) dx.d[axis] = 1;
  return pd_infer_set_out(c, "Loss", 0, &dx, x->dtype, x->lod_level);
}

/* accuracy: the top-k predictions (Out values, Indices [batch, k]) against Label [batch, 1];
 * Accuracy [1] float32, Correct and Total [1] int32. */
pd_status pd_infer_accuracy(pd_infer_ctx *c) {
  const pd_var_desc *out, *idx, *label;
  pd_infer_dims dout, di, dl;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "Out", 0, &out, &dout)) || (st = pd_infer_in(c, "Indices", 0, &idx, &di)) ||
      (st = pd_infer_in(c, "Label", 0, &label, &dl)))
    return st;
  if (idx->dtype != PD_INT64 && idx->dtype != PD_INT32)
    return pd_infer_fail(c, PD_ETYPE, "Indices must be int64 or int32, got %s", pd_dtype_name(idx->dtype));
  if (label->dtype != PD_INT64 && label->dtype != PD_INT32)
    return pd_infer_fail(c, PD_ETYPE, "Label must be int64 or int32, got %s",
                         pd_dtype_name(label->dtype));
  if (di.n >= 0 && di.n != 2)
    return pd_infer_fail(c, PD_ESHAPE, "Indices must have 2 dims [batch, k], got %s",
                         pd_infer_dims_str(&di, s1));
  if (dl.n >= 0 && (dl.n != 2 || (dl.d[1] >= 0 && dl.d[1] != 1)))
    return pd_infer_fail(c, PD_ESHAPE, "Label must be [batch, 1], got %s", pd_infer_dims_str(&dl, s1));
  if (di.n == 2 && dl.n == 2 && !pd_infer_dim_compatible(di.d[0], dl.d[0]))
    return pd_infer_fail(c, PD_ESHAPE, "Indices %s and Label %s disagree on the batch size",
                         pd_infer_dims_str(&di, s1), pd_infer_dims_str(&dl, s2));
  if (dout.n >= 0 && di.n >= 0) {
    bool same = dout.n == di.n;
    for (int i = 0; same && i < di.n; i++) same = pd_infer_dim_compatible(dout.d[i], di.d[i]);
    if (!same)
      return pd_infer_fail(c, PD_ESHAPE, "Out %s and Indices %s must have the same shape",
                           pd_infer_dims_str(&dout, s1), pd_infer_dims_str(&di, s2));
  }
  pd_infer_dims one = {.n = 1, .d = {1}};
  if ((st = pd_infer_set_out(c, "Accuracy", 0, &one, PD_FP32, 0)) ||
      (st = pd_infer_set_out(c, "Correct", 0, &one, PD_INT32, 0)))
    return st;
  return pd_infer_set_out(c, "Total", 0, &one, PD_INT32, 0);
}
