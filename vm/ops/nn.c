/* nn.c -- the layers' own ops: conv2d and pool2d (NCHW and NHWC, paddings, dilations, groups,
 * adaptive and global pooling), conv2d_transpose (and its depthwise name: output_padding,
 * output_size, NCHW and NHWC, an optional Bias; conv2d_transpose_bias, with the activation)
 * through conv2d's backend entries, dropout
 * (both of Fluid's implementations) and the embedding lookups lookup_table and
 * lookup_table_v2 (padding_idx): their shape functions, kernels and gradient kernels. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* dropout: Out like X; Mask (uint8) like X; dropout_prob in [0, 1]. */
pd_status pd_infer_dropout(pd_infer_ctx *c) {
  double p = pd_infer_attr_float(c, "dropout_prob");
  if (!(p >= 0.0 && p <= 1.0))
    return pd_infer_fail(c, PD_EINVAL, "dropout_prob must be in [0, 1], got %g", p);
  const pd_var_desc *x;
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st || (st = pd_infer_set_out(c, "Out", 0, &d, x->dtype, x->lod_level))) return st;
  return pd_infer_set_out(c, "Mask", 0, &d, PD_UINT8, x->lod_level);
}

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

/* The operands of conv2d and conv2d_transpose: Input and Filter of one dtype, both 4-D (an
 * unknown rank becomes 4 unknown dims), groups >= 1. filter_dims names Filter's dims for the
 * message. */
static pd_status conv_operands(pd_infer_ctx *c, const char *filter_dims, const pd_var_desc **in,
                               pd_infer_dims *di, pd_infer_dims *df, layout *L, int64_t *groups) {
  const pd_var_desc *f;
  char s[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "Input", 0, in, di)) || (st = pd_infer_in(c, "Filter", 0, &f, df)) ||
      (st = pd_infer_same_dtype(c, "Input", (*in)->dtype, "Filter", f->dtype)))
    return st;
  *L = image_layout(c);
  if (di->n >= 0 && di->n != 4)
    return pd_infer_fail(c, PD_ESHAPE, "Input must have 4 dims (%s), got %s",
                         L->c == 1 ? "NCHW" : "NHWC", pd_infer_dims_str(di, s));
  if (df->n >= 0 && df->n != 4)
    return pd_infer_fail(c, PD_ESHAPE, "Filter must have 4 dims %s, got %s", filter_dims,
                         pd_infer_dims_str(df, s));
  *groups = pd_infer_attr_int(c, "groups");
  if (*groups < 1)
    return pd_infer_fail(c, PD_EINVAL, "groups must be at least 1, got %" PRId64, *groups);
  if (di->n < 0) *di = pd_infer_dims_unknown(4);
  if (df->n < 0) *df = pd_infer_dims_unknown(4);
  return PD_OK;
}

/* conv2d: Input [N, C, H, W] (or NHWC) convolved with Filter [M, C / groups, KH, KW] gives
 * Output [N, M, OH, OW]. */
pd_status pd_infer_conv2d(pd_infer_ctx *c) {
  const pd_var_desc *in;
  pd_infer_dims di, df, out;
  char si[PD_DIMS_BUF], sf[PD_DIMS_BUF], what[2 * PD_DIMS_BUF + 64];
  layout L;
  int64_t groups;
  pd_status st = conv_operands(c, "[out channels, in channels / groups, height, width]", &in, &di,
                               &df, &L, &groups);
  if (st) return st;
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

/* fused_conv2d: conv2d's shape, with Bias [out channels] and ResidualData shaped as Output. */
pd_status pd_infer_fused_conv2d(pd_infer_ctx *c) {
  pd_status st = pd_infer_conv2d(c);
  const pd_var_desc *f, *out = NULL, *v;
  pd_infer_dims df, dv;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  if (st || (st = pd_infer_in(c, "Filter", 0, &f, &df))) return st;
  if (pd_infer_nin(c, "Bias")) {
    if ((st = pd_infer_in(c, "Bias", 0, &v, &dv)) ||
        (st = pd_infer_same_dtype(c, "Bias", v->dtype, "Filter", f->dtype)))
      return st;
    int64_t n = 1;
    for (int i = 0; i < dv.n; i++) n = dv.d[i] < 0 || n < 0 ? -1 : n * dv.d[i];
    if (dv.n >= 0 && (n >= 0 && df.n == 4 && !pd_infer_dim_compatible(n, df.d[0])))
      return pd_infer_fail(c, PD_ESHAPE, "Bias %s must hold one value per output channel "
                           "(Filter %s)", pd_infer_dims_str(&dv, s1), pd_infer_dims_str(&df, s2));
  }
  if (pd_infer_nin(c, "ResidualData")) {
    pd_infer_dims dout;
    if ((st = pd_infer_in(c, "ResidualData", 0, &v, &dv))) return st;
    out = pd_block_find_var_visible(c->block, pd_op_output1(c->op, "Output"), NULL);
    if ((st = pd_infer_same_dtype(c, "ResidualData", v->dtype, "Filter", f->dtype))) return st;
    if (out && dv.n >= 0 && out->ndims >= 0) {
      dout.n = out->ndims;
      for (int i = 0; i < out->ndims; i++) dout.d[i] = out->dims[i];
      bool same = dv.n == dout.n;
      for (int i = 0; same && i < dv.n; i++) same = pd_infer_dim_compatible(dv.d[i], dout.d[i]);
      if (!same)
        return pd_infer_fail(c, PD_ESHAPE, "ResidualData %s must be shaped as Output %s",
                             pd_infer_dims_str(&dv, s1), pd_infer_dims_str(&dout, s2));
    }
  }
  return PD_OK;
}

/* Fluid's SAME padding of one spatial dim: out = ceil(in / stride), the total padding split
 * with the extra one at the end. */
static void same_pads(int64_t in, int64_t k, int64_t stride, int64_t *p0, int64_t *p1) {
  int64_t out = (in + stride - 1) / stride, sum = (out - 1) * stride + k - in;
  if (sum < 0) sum = 0;
  *p0 = sum / 2;
  *p1 = sum - *p0;
}

/* ---- conv2d_transpose: the geometry both its shape function and its kernels use ---- */

/* Its attributes as read (the counts are the lists' lengths). */
typedef struct tconv_attrs {
  int64_t stride[4], dil[4], pad[4], opad[4], osize[4];
  int nstride, ndil, npad, nopad, nosize;
  const char *algo;
} tconv_attrs;

/* The geometry: the output's spatial size (-1 where the input's is unknown), the paddings (top,
 * bottom, left, right) and dilations padding_algorithm leaves. */
typedef struct tconv_geom {
  int64_t out[2], pad[4], dil[2];
  int64_t grow[2]; /* what output_padding or output_size added to out */
} tconv_geom;

static int list_len(int n) { return n < 0 ? 0 : n > 4 ? 4 : n; }

/* Checks a's lists and works out the output of the input's spatial dims in[2] (-1: unknown)
 * and window k[2] (Fluid's ConvTransposeInferMeta): out = (in - 1) * stride - paddings +
 * dilation * (k - 1) + 1, then output_size (in [out, out + stride)) if given, else plus
 * output_padding (less than max(stride, dilation)). SAME pads as conv2d's SAME over the input
 * (and resets the dilations), VALID pads nothing. Fails with a message in why. */
static pd_status tconv_geometry(const tconv_attrs *a, const int64_t in[2], const int64_t k[2],
                                tconv_geom *g, char *why, size_t n) {
  static const char *const dim_name[2] = {"height", "width"};
  char s[5][64];
  bool ok = a->nstride == 2 && a->ndil == 2 && (a->npad == 2 || a->npad == 4) &&
            (a->nopad == 0 || a->nopad == 2) && (a->nosize == 0 || a->nosize == 2);
  for (int i = 0; ok && i < 2; i++)
    ok = a->stride[i] >= 1 && a->dil[i] >= 1 && (a->nopad == 0 || a->opad[i] >= 0);
  for (int i = 0; ok && i < a->npad; i++) ok = a->pad[i] >= 0;
  if (!ok) {
    snprintf(why, n, "strides %s and dilations %s must be 2 positive numbers, paddings %s 2 or "
             "4 non-negative ones, output_padding %s none or 2 non-negative ones, output_size %s "
             "none or 2", pd_dims_str(list_len(a->nstride), a->stride, s[0], 64),
             pd_dims_str(list_len(a->ndil), a->dil, s[1], 64),
             pd_dims_str(list_len(a->npad), a->pad, s[2], 64),
             pd_dims_str(list_len(a->nopad), a->opad, s[3], 64),
             pd_dims_str(list_len(a->nosize), a->osize, s[4], 64));
    return PD_EINVAL;
  }
  bool same = strcmp(a->algo, "SAME") == 0, valid = strcmp(a->algo, "VALID") == 0;
  for (int i = 0; i < 2; i++) {
    int64_t *p0 = &g->pad[2 * i], *p1 = &g->pad[2 * i + 1], st = a->stride[i];
    *p0 = valid ? 0 : a->npad == 4 ? a->pad[2 * i] : a->pad[i];
    *p1 = valid ? 0 : a->npad == 4 ? a->pad[2 * i + 1] : a->pad[i];
    g->dil[i] = same ? 1 : a->dil[i];
    g->out[i] = -1;
    g->grow[i] = 0;
    if (in[i] < 0 || k[i] < 0) continue;
    if (same) same_pads(in[i], k[i], st, p0, p1);
    int64_t o = (in[i] - 1) * st - *p0 - *p1 + g->dil[i] * (k[i] - 1) + 1;
    if (o < 1) {
      snprintf(why, n, "the output %s would be %" PRId64 " (input %" PRId64 ", window %" PRId64
               ", stride %" PRId64 ", paddings %" PRId64 " and %" PRId64 ")", dim_name[i], o,
               in[i], k[i], st, *p0, *p1);
      return PD_ESHAPE;
    }
    if (a->nosize == 2) {
      if (a->osize[i] < o || a->osize[i] >= o + st) {
        snprintf(why, n, "output_size %s: its %s %" PRId64 " must be in [%" PRId64 ", %" PRId64
                 "), the sizes this input and stride give", pd_dims_str(2, a->osize, s[0], 64),
                 dim_name[i], a->osize[i], o, o + st);
        return PD_EINVAL;
      }
      o = a->osize[i];
    } else if (a->nopad == 2) {
      int64_t most = st > g->dil[i] ? st : g->dil[i];
      if (a->opad[i] >= most) {
        snprintf(why, n, "output_padding %s: its %s %" PRId64 " must be less than the stride "
                 "%" PRId64 " or the dilation %" PRId64, pd_dims_str(2, a->opad, s[0], 64),
                 dim_name[i], a->opad[i], st, g->dil[i]);
        return PD_EINVAL;
      }
      o += a->opad[i];
    }
    g->grow[i] = o - ((in[i] - 1) * st - *p0 - *p1 + g->dil[i] * (k[i] - 1) + 1);
    g->out[i] = o;
  }
  return PD_OK;
}

/* conv2d_transpose, depthwise_conv2d_transpose: Input [N, C, H, W] (or NHWC) and Filter
 * [C, M / groups, KH, KW] give Output [N, M, OH, OW]; an optional Bias [M]. */
pd_status pd_infer_conv2d_transpose(pd_infer_ctx *c) {
  const pd_var_desc *in, *b;
  pd_infer_dims di, df, db, out;
  char si[PD_DIMS_BUF], sf[PD_DIMS_BUF], why[512];
  layout L;
  int64_t groups;
  pd_status st = conv_operands(c, "[in channels, out channels / groups, height, width]", &in, &di,
                               &df, &L, &groups);
  if (st) return st;
  int64_t ch = di.d[L.c], fch = df.d[0];
  if (ch >= 0 && fch >= 0 && ch != fch)
    return pd_infer_fail(c, PD_ESHAPE, "Input %s has %" PRId64 " channels but Filter %s takes %"
                         PRId64, pd_infer_dims_str(&di, si), ch, pd_infer_dims_str(&df, sf), fch);
  if (fch >= 0 && fch % groups != 0)
    return pd_infer_fail(c, PD_ESHAPE, "Filter %s has %" PRId64 " input channels, which groups %"
                         PRId64 " does not divide", pd_infer_dims_str(&df, sf), fch, groups);
  if (df.d[2] == 0 || df.d[3] == 0)
    return pd_infer_fail(c, PD_ESHAPE, "Filter %s has an empty window", pd_infer_dims_str(&df, sf));
  int64_t m = df.d[1] < 0 ? -1 : pd_infer_dim_mul(df.d[1], groups);
  if (pd_infer_nin(c, "Bias")) {
    if ((st = pd_infer_in(c, "Bias", 0, &b, &db)) ||
        (st = pd_infer_same_dtype(c, "Input", in->dtype, "Bias", b->dtype)))
      return st;
    if (db.n >= 0 && (db.n != 1 || (db.d[0] >= 0 && m >= 0 && db.d[0] != m)))
      return pd_infer_fail(c, PD_ESHAPE, "Bias %s must be [%" PRId64 "] (the output channels of "
                           "Filter %s with groups %" PRId64 ")", pd_infer_dims_str(&db, si), m,
                           pd_infer_dims_str(&df, sf), groups);
  }
  tconv_attrs a = {.algo = pd_infer_attr_str(c, "padding_algorithm")};
  a.nstride = pd_infer_attr_ints(c, "strides", a.stride, 4);
  a.ndil = pd_infer_attr_ints(c, "dilations", a.dil, 4);
  a.npad = pd_infer_attr_ints(c, "paddings", a.pad, 4);
  a.nopad = pd_infer_attr_ints(c, "output_padding", a.opad, 4);
  a.nosize = pd_infer_attr_ints(c, "output_size", a.osize, 4);
  tconv_geom g;
  int64_t sp[2] = {di.d[L.h], di.d[L.w]}, k[2] = {df.d[2], df.d[3]};
  if ((st = tconv_geometry(&a, sp, k, &g, why, sizeof why)))
    return pd_infer_fail(c, st, "Input %s, Filter %s: %s", pd_infer_dims_str(&di, si),
                         pd_infer_dims_str(&df, sf), why);
  out.n = 4;
  out.d[0] = di.d[0];
  out.d[L.c] = m;
  out.d[L.h] = g.out[0];
  out.d[L.w] = g.out[1];
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

/* lookup_table, lookup_table_v2: rows of the table W [vocabulary, width] picked by the int64 Ids;
 * Out = Ids.dims + [width], where lookup_table's Ids end in a dim of 1 that Out drops. */
pd_status pd_infer_lookup_table(pd_infer_ctx *c) {
  const pd_var_desc *w, *ids;
  pd_infer_dims dw, di, out;
  char s[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "W", 0, &w, &dw)) || (st = pd_infer_in(c, "Ids", 0, &ids, &di)))
    return st;
  if (dw.n >= 0 && dw.n != 2)
    return pd_infer_fail(c, PD_ESHAPE, "W must have 2 dims [vocabulary, width], got %s",
                         pd_infer_dims_str(&dw, s));
  if (ids->dtype != PD_INT64 && ids->dtype != PD_INT32)
    return pd_infer_fail(c, PD_ETYPE, "Ids must be int64 or int32, got %s", pd_dtype_name(ids->dtype));
  bool v1 = c->def->kind == PD_OP_lookup_table;
  if (di.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, w->dtype, ids->lod_level);
  }
  out = di;
  if (v1) {
    if (di.n == 0 || (di.d[di.n - 1] >= 0 && di.d[di.n - 1] != 1))
      return pd_infer_fail(c, PD_ESHAPE, "Ids %s must end in a dim of 1 (lookup_table_v2 takes any "
                           "shape)", pd_infer_dims_str(&di, s));
    out.n--;
  }
  if (out.n >= PD_MAX_RANK)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "Out would have %d dims; at most %d are supported",
                         out.n + 1, PD_MAX_RANK);
  out.d[out.n++] = dw.n == 2 ? dw.d[1] : -1;
  return pd_infer_set_out(c, "Out", 0, &out, w->dtype, ids->lod_level);
}

/* ================================================================ embeddings */

/* Ids as int64 (a view of the tensor, or a converted copy in sc) after checking every id is a
 * row of W [nrows, ...] or padding_idx (-1: none). */
static pd_status read_ids(const pd_exec_ctx *ctx, const pd_tensor *ids, const pd_tensor *w,
                          int64_t padding_idx, local_buf *sc, const int64_t **out) {
  char s[DIMS_BUF];
  int64_t n = pd_tensor_numel(ids), nrows = w->dims[0];
  if (!is_int(ids->dtype))
    return pd_ctx_fail(ctx, PD_ETYPE, "Ids must hold int64 or int32 values, got %s",
                       pd_dtype_name(ids->dtype));
  const int64_t *p = PD_TENSOR_I64(ids);
  if (ids->dtype == PD_INT32) {
    int64_t *q = local_get(sc, (size_t)n * sizeof *q);
    if (!q) return nomem(ctx);
    for (int64_t i = 0; i < n; i++) q[i] = PD_TENSOR_I32(ids)[i];
    p = q;
  }
  for (int64_t i = 0; i < n; i++) {
    if (padding_idx != -1 && p[i] == padding_idx) continue;
    if (p[i] < 0 || p[i] >= nrows)
      return pd_ctx_fail(ctx, PD_EINVAL, "id %" PRId64 " (Ids element %" PRId64 ") is out of "
                         "range for a table of %" PRId64 " rows (W %s)", p[i], i, nrows,
                         shape_str(w, s));
  }
  *out = p;
  return PD_OK;
}

/* Shared checks of lookup_table(_v2) and its gradient: W [rows, width] float; lookup_table's
 * Ids end in a dim of 1. Gives Out's shape. */
static pd_status lookup_shape(const pd_exec_ctx *ctx, const pd_tensor *w, const pd_tensor *ids,
                              int *nd, int64_t *dims) {
  char s[DIMS_BUF];
  pd_status st = want_float(ctx, "W", w);
  if (st) return st;
  if (w->ndims != 2)
    return pd_ctx_fail(ctx, PD_ESHAPE, "W must have 2 dims [vocabulary, width], got %s",
                       shape_str(w, s));
  *nd = ids->ndims;
  memcpy(dims, ids->dims, sizeof(int64_t) * (size_t)*nd);
  if (ctx->def->kind == PD_OP_lookup_table) {
    if (ids->ndims == 0 || ids->dims[ids->ndims - 1] != 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "Ids %s must end in a dim of 1 (lookup_table_v2 takes "
                         "any shape)", shape_str(ids, s));
    (*nd)--;
  }
  if (*nd >= MAXD)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "Out would have %d dims; at most %d are supported",
                       *nd + 1, MAXD);
  dims[(*nd)++] = w->dims[1];
  return PD_OK;
}

/* The checked ids (*p, on the host: Ids are read there, vm/run/exec_place.c) where the op
 * computes: a copy in scratch (*tmp, for pd_ctx_scratch_free) on a GPU. */
static pd_status ids_at_place(const pd_exec_ctx *ctx, const pd_tensor *ids, const int64_t **p,
                              void **tmp) {
  pd_status st;
  size_t n = (size_t)pd_tensor_numel(ids) * sizeof **p;
  const void *at = pd_ctx_at_place(ctx, *p, n ? n : 1, tmp, &st);
  if (at) *p = at;
  return st;
}

/* lookup_table, lookup_table_v2: Out = the rows of W picked by Ids (a zero row for padding_idx);
 * Out takes Ids' LoD. An id outside the table is an error naming it. */
pd_status pd_kernel_lookup(pd_exec_ctx *ctx) {
  const pd_tensor *w, *ids;
  pd_tensor *out;
  pd_status st;
  int nd;
  int64_t dims[MAXD];
  if ((st = in_at(ctx, "W", 0, true, &w)) || (st = in_at(ctx, "Ids", 0, true, &ids)) ||
      (st = lookup_shape(ctx, w, ids, &nd, dims)) || (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  int64_t pad = pd_ctx_attr_int(ctx, "padding_idx");
  local_buf sc = {0};
  hold h;
  hold_init(&h);
  const int64_t *p = NULL;
  void *tmp = NULL;
  if (!(st = unalias(ctx, &h, out, &w)) && !(st = unalias(ctx, &h, out, &ids)) &&
      !(st = read_ids(ctx, ids, w, pad, &sc, &p)) && !(st = ids_at_place(ctx, ids, &p, &tmp)) &&
      !(st = resize(ctx, out, w->dtype, nd, dims, ids)))
    st = pd_ctx_check(ctx, ctx->k->gather_rows(w->dtype, w->dims[0], w->dims[1],
                                               pd_tensor_data(w), pd_tensor_numel(ids), p, pad,
                                               pd_tensor_data(out)),
                      "gather_rows");
  pd_ctx_scratch_free(ctx, tmp);
  local_free(&sc);
  hold_free(&h);
  return st;
}

/* lookup_table(_v2)_grad: a dense W@GRAD [rows, width]: zeros, plus each Out@GRAD row added to
 * the row of its id (repeated ids add up; padding_idx gets nothing). is_sparse is not honoured
 * (pdlang has no SelectedRows). */
pd_status pd_kernel_lookup_grad(pd_exec_ctx *ctx) {
  pd_tensor *dw;
  const pd_tensor *w, *ids, *dy;
  pd_status st = out_at(ctx, "W@GRAD", 0, false, &dw);
  if (st || !dw) return st;
  int nd;
  int64_t dims[MAXD];
  if ((st = in_at(ctx, "W", 0, true, &w)) || (st = in_at(ctx, "Ids", 0, true, &ids)) ||
      (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) || (st = lookup_shape(ctx, w, ids, &nd, dims)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, nd, dims, w->dtype)))
    return st;
  int64_t pad = pd_ctx_attr_int(ctx, "padding_idx"), rows = w->dims[0], width = w->dims[1];
  pd_dtype dt = w->dtype;
  local_buf sc = {0};
  hold h;
  hold_init(&h);
  const int64_t *p = NULL;
  void *tmp = NULL;
  if (!(st = unalias(ctx, &h, dw, &dy)) && !(st = unalias(ctx, &h, dw, &ids)) &&
      !(st = read_ids(ctx, ids, w, pad, &sc, &p)) && !(st = ids_at_place(ctx, ids, &p, &tmp)) &&
      !(st = resize(ctx, dw, dt, 2, (int64_t[]){rows, width}, w)) &&
      !(st = k_check(ctx, ctx->k->fill(dt, rows * width, pd_tensor_data(dw), 0), dt)))
    st = pd_ctx_check(ctx, ctx->k->scatter_add_rows(dt, rows, width, pd_tensor_data(dw),
                                                    pd_tensor_numel(ids), p, pad, pd_tensor_data(dy)),
                      "scatter_add_rows");
  pd_ctx_scratch_free(ctx, tmp);
  local_free(&sc);
  hold_free(&h);
  return st;
}

/* ================================================================ dropout */

typedef struct dropout_cfg {
  double p;
  bool is_test, upscale;
} dropout_cfg;

static pd_status dropout_config(const pd_exec_ctx *ctx, dropout_cfg *c) {
  c->p = pd_ctx_attr_float(ctx, "dropout_prob");
  c->is_test = pd_ctx_attr_bool(ctx, "is_test");
  c->upscale = strcmp(pd_ctx_attr_str(ctx, "dropout_implementation"), "upscale_in_train") == 0;
  if (!(c->p >= 0 && c->p <= 1))
    return pd_ctx_fail(ctx, PD_EINVAL, "dropout_prob must be in [0, 1], got %g", c->p);
  return PD_OK;
}

/* dropout: in training each element is dropped with probability dropout_prob (Mask 0) and kept
 * otherwise (Mask 1, and scaled by 1 / (1 - p) with upscale_in_train); at test time Out = X
 * (upscale_in_train) or X * (1 - p) (downgrade_in_infer), and Mask is all ones. The random
 * numbers come from the Seed input when given, else seed when fix_seed, else (or for seed 0) from
 * the executor's generator. */
pd_status pd_kernel_dropout(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out, *mask;
  dropout_cfg c;
  pd_status st;
  if ((st = dropout_config(ctx, &c)) || (st = in_at(ctx, "X", 0, true, &x)) ||
      (st = want_float(ctx, "X", x)) || (st = out_at(ctx, "Out", 0, true, &out)) ||
      (st = out_at(ctx, "Mask", 0, false, &mask)))
    return st;
  if (mask == out) return pd_ctx_fail(ctx, PD_EINVAL, "Out and Mask are the same var");
  int64_t seed = pd_ctx_attr_bool(ctx, "fix_seed") ? pd_ctx_attr_int(ctx, "seed") : 0;
  const pd_tensor *seed_t = in_if_set(ctx, "Seed", 0);
  if (seed_t && (st = int_scalar_in(ctx, "Seed", seed_t, &seed))) return st;
  hold h;
  hold_init(&h);
  if (mask && (st = unalias(ctx, &h, mask, &x))) return st;
  pd_dtype dt = x->dtype;
  int64_t n = pd_tensor_numel(x);
  const void *xd = pd_tensor_data(x);  /* stays valid: see the top of the file */
  if ((st = resize(ctx, out, dt, x->ndims, x->dims, x)) ||
      (mask && (st = resize(ctx, mask, PD_UINT8, x->ndims, x->dims, x)))) {
    hold_free(&h);
    return st;
  }
  uint8_t *m = mask ? PD_TENSOR_BOOL(mask) : NULL;
  if (c.is_test || c.p == 0 || c.p == 1) { /* no random numbers needed */
    double scale = c.is_test ? (c.upscale ? 1.0 : 1.0 - c.p) : c.p == 1 ? 0.0 : 1.0;
    st = k_check(ctx,
                 ctx->k->dropout(dt, n, xd, NULL, c.is_test ? 0.0 : c.p, scale,
                                 pd_tensor_data(out), m),
                 dt);
    hold_free(&h);
    return st;
  }
  pd_k_rng local, *rng = ctx->rng;
  if (seed != 0) {
    pd_k_rng_init(&local, (uint64_t)seed);
    rng = &local;
  }
  double scale = c.upscale ? 1.0 / (1.0 - c.p) : 1.0;
  /* The draws of the whole tensor in one call where the op computes, which the backend splits
   * across its threads (the same numbers as any chunking: element i comes from counter
   * offset + i / 4; the GPU's are the CPU's bit for bit). In chunks of 1024, each too small to
   * split, they took a third of a transformer's step. */
  float *u = n ? pd_ctx_scratch(ctx, (size_t)n * sizeof *u, &st) : NULL;
  if (!st && n) st = pd_ctx_check(ctx, ctx->k->uniform(PD_FP32, n, u, 0.0, 1.0, rng), "uniform");
  if (!st) st = k_check(ctx, ctx->k->dropout(dt, n, xd, u, c.p, scale, pd_tensor_data(out), m), dt);
  if (u) pd_ctx_scratch_free(ctx, u);
  hold_free(&h);
  return st;
}

/* dropout_grad: X@GRAD = Out@GRAD * Mask (/ (1 - p) with upscale_in_train); at test time the
 * forward's constant factor. */
pd_status pd_kernel_dropout_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *dy, *mask = NULL;
  dropout_cfg c;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = dropout_config(ctx, &c)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = want_float(ctx, "Out@GRAD", dy)))
    return st;
  const pd_tensor *x = in_if_set(ctx, "X", 0);
  if (x && (st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, x->dims, x->dtype))) return st;
  bool use_mask = !c.is_test && c.p > 0 && c.p < 1;
  if (use_mask) {
    char s1[DIMS_BUF], s2[DIMS_BUF];
    if ((st = in_at(ctx, "Mask", 0, true, &mask))) return st;
    if (mask->dtype != PD_UINT8 || pd_tensor_numel(mask) != pd_tensor_numel(dy))
      return pd_ctx_fail(ctx, PD_ESHAPE, "Mask %s (%s) does not match Out@GRAD %s",
                         shape_str(mask, s1), pd_dtype_name(mask->dtype), shape_str(dy, s2));
  }
  double scale = c.is_test ? (c.upscale ? 1.0 : 1.0 - c.p)
                 : c.p == 1 ? 0.0
                 : c.upscale ? 1.0 / (1.0 - c.p)
                             : 1.0;
  const void *dyd = pd_tensor_data(dy);
  const uint8_t *m = mask ? PD_TENSOR_BOOL(mask) : NULL;
  hold h;
  hold_init(&h);
  if (mask == dx && (st = unalias(ctx, &h, dx, &mask))) return st;
  if (mask) m = PD_TENSOR_BOOL(mask);
  int64_t n = pd_tensor_numel(dy);
  if (!(st = resize(ctx, dx, dy->dtype, dy->ndims, dy->dims, x ? x : dy)))
    st = k_check(ctx, ctx->k->dropout_grad(dy->dtype, n, dyd, m, scale, pd_tensor_data(dx)),
                 dy->dtype);
  hold_free(&h);
  return st;
}

/* ================================================================ conv2d, pool2d */

/* An INTS attribute of exactly 2 entries, each >= min. */
static pd_status attr_pair(const pd_exec_ctx *ctx, const char *name, int64_t min, int64_t v[2]) {
  int64_t buf[4];
  char s[LIST_BUF];
  int n = pd_ctx_attr_ints(ctx, name, buf, 4);
  if (n != 2 || buf[0] < min || buf[1] < min)
    return pd_ctx_fail(ctx, PD_EINVAL, "%s must be 2 %s numbers (height, width), got %s", name,
                       min > 0 ? "positive" : "non-negative",
                       dims_str(n < 0 ? 0 : n > 4 ? 4 : n, buf, s, sizeof s));
  v[0] = buf[0];
  v[1] = buf[1];
  return PD_OK;
}

/* paddings as (top, bottom, left, right), from 2 (symmetric) or 4 entries. */
static pd_status attr_pads(const pd_exec_ctx *ctx, int64_t pad[4]) {
  int64_t p[4];
  char s[LIST_BUF];
  int n = pd_ctx_attr_ints(ctx, "paddings", p, 4);
  bool ok = n == 2 || n == 4;
  for (int i = 0; ok && i < n; i++) ok = p[i] >= 0;
  if (!ok)
    return pd_ctx_fail(ctx, PD_EINVAL, "paddings must be 2 or 4 non-negative numbers, got %s",
                       dims_str(n < 0 ? 0 : n > 4 ? 4 : n, p, s, sizeof s));
  for (int i = 0; i < 4; i++) pad[i] = n == 4 ? p[i] : p[i / 2];
  return PD_OK;
}

static pd_status need_nchw(const pd_exec_ctx *ctx) {
  if (strcmp(pd_ctx_attr_str(ctx, "data_format"), "NHWC") == 0)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "data_format NHWC is not supported (use NCHW)");
  return PD_OK;
}

/* The convolution of Input by Filter as the op's attributes say (Fluid: SAME padding also
 * resets the dilations to 1). */
static pd_status conv_setup(const pd_exec_ctx *ctx, const pd_tensor *in, const pd_tensor *f,
                            pd_k_conv2d *p) {
  char si[DIMS_BUF], sf[DIMS_BUF];
  int64_t stride[2] = {0}, dil[2] = {0}, pad[4] = {0};
  pd_status st;
  if ((st = need_nchw(ctx)) || (st = want_float(ctx, "Input", in))) return st;
  if (f->dtype != in->dtype)
    return pd_ctx_fail(ctx, PD_ETYPE, "Filter holds %s but Input holds %s",
                       pd_dtype_name(f->dtype), pd_dtype_name(in->dtype));
  if (in->ndims != 4)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input must have 4 dims [N, C, H, W], got %s",
                       shape_str(in, si));
  if (f->ndims != 4)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Filter must have 4 dims [out channels, in channels / "
                       "groups, height, width], got %s", shape_str(f, sf));
  int64_t groups = pd_ctx_attr_int(ctx, "groups");
  if (groups < 1) return pd_ctx_fail(ctx, PD_EINVAL, "groups must be at least 1, got %" PRId64,
                                     groups);
  if (in->dims[1] != f->dims[1] * groups)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input %s has %" PRId64 " channels but Filter %s with "
                       "groups %" PRId64 " takes %" PRId64, shape_str(in, si), in->dims[1],
                       shape_str(f, sf), groups, f->dims[1] * groups);
  if (f->dims[0] % groups)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Filter %s has %" PRId64 " output channels, which groups %"
                       PRId64 " does not divide", shape_str(f, sf), f->dims[0], groups);
  if ((st = attr_pair(ctx, "strides", 1, stride)) || (st = attr_pair(ctx, "dilations", 1, dil)) ||
      (st = attr_pads(ctx, pad)))
    return st;
  const char *algo = pd_ctx_attr_str(ctx, "padding_algorithm");
  *p = (pd_k_conv2d){.n = in->dims[0], .c = in->dims[1], .h = in->dims[2], .w = in->dims[3],
                     .oc = f->dims[0], .kh = f->dims[2], .kw = f->dims[3], .groups = groups,
                     .stride_h = stride[0], .stride_w = stride[1], .pad_top = pad[0],
                     .pad_bottom = pad[1], .pad_left = pad[2], .pad_right = pad[3],
                     .dil_h = dil[0], .dil_w = dil[1], .lp = amp_precision(ctx, in->dtype)};
  if (strcmp(algo, "SAME") == 0) {
    same_pads(p->h, p->kh, p->stride_h, &p->pad_top, &p->pad_bottom);
    same_pads(p->w, p->kw, p->stride_w, &p->pad_left, &p->pad_right);
    p->dil_h = p->dil_w = 1;
  } else if (strcmp(algo, "VALID") == 0) {
    p->pad_top = p->pad_bottom = p->pad_left = p->pad_right = 0;
  }
  if (pd_k_conv2d_setup(p))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input %s is smaller than Filter %s (strides [%" PRId64
                       ", %" PRId64 "], paddings [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                       "], dilations [%" PRId64 ", %" PRId64 "])", shape_str(in, si), shape_str(f, sf),
                       p->stride_h, p->stride_w, p->pad_top, p->pad_bottom, p->pad_left,
                       p->pad_right, p->dil_h, p->dil_w);
  return PD_OK;
}

/* conv2d: Output [N, M, OH, OW] = Input [N, C, H, W] cross-correlated with Filter
 * [M, C / groups, KH, KW] (NCHW only). */
pd_status pd_kernel_conv2d(pd_exec_ctx *ctx) {
  const pd_tensor *in, *f;
  pd_tensor *out;
  pd_k_conv2d p;
  pd_status st;
  if ((st = in_at(ctx, "Input", 0, true, &in)) || (st = in_at(ctx, "Filter", 0, true, &f)) ||
      (st = conv_setup(ctx, in, f, &p)) || (st = out_at(ctx, "Output", 0, true, &out)))
    return st;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &in)) && !(st = unalias(ctx, &h, out, &f)) &&
      !(st = resize(ctx, out, in->dtype, 4, (int64_t[]){p.n, p.oc, p.oh, p.ow}, NULL))) {
    /* an inference model's filters: through conv2d_fused without an epilogue, which may keep
     * the backend's transformed copy of them (a conv2d that infer_opt could not fuse) */
    pd_k_prepared **prep = ctx->k->conv2d_fused && pd_ctx_in_const(ctx, "Filter", 0)
                               ? pd_tensor_prepared(f)
                               : NULL;
    if (prep)
      st = pd_ctx_check(ctx, ctx->k->conv2d_fused(in->dtype, &p, pd_tensor_data(in),
                                                  pd_tensor_data(f), NULL,
                                                  pd_tensor_data(out), prep),
                        "conv2d");
    else
      st = pd_ctx_check(ctx, ctx->k->conv2d(in->dtype, &p, pd_tensor_data(in),
                                            pd_tensor_data(f), pd_tensor_data(out)),
                        "conv2d");
  }
  hold_free(&h);
  return st;
}

/* fused_conv2d's epilogue from its attributes (oplist.h); NULL, or what is wrong with them. */
static const char *fused_epilogue(const pd_exec_ctx *ctx, pd_k_conv_epilogue *ep) {
  const char *act = pd_ctx_attr_str(ctx, "fuse_activation");
  double a = pd_ctx_attr_float(ctx, "fuse_alpha"), b = pd_ctx_attr_float(ctx, "fuse_beta");
  static const struct { const char *name; pd_k_epi_kind kind; int op; } acts[] = {
      {"relu", PD_K_EPI_UNOP, PD_K_RELU},          {"sigmoid", PD_K_EPI_UNOP, PD_K_SIGMOID},
      {"tanh", PD_K_EPI_UNOP, PD_K_TANH},          {"relu6", PD_K_EPI_ACT, PD_K_RELU6},
      {"leaky_relu", PD_K_EPI_ACT, PD_K_LEAKY_RELU}, {"swish", PD_K_EPI_ACT, PD_K_SWISH},
      {"hard_sigmoid", PD_K_EPI_ACT, PD_K_HARD_SIGMOID},
      {"hard_swish", PD_K_EPI_ACT, PD_K_HARD_SWISH}, {"gelu", PD_K_EPI_ACT, PD_K_GELU},
      {"gelu_erf", PD_K_EPI_ACT, PD_K_GELU},       {"gelu_tanh", PD_K_EPI_ACT, PD_K_GELU_TANH}};
  ep->kind = PD_K_EPI_NONE;
  if (!*act) return NULL;
  for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
    if (strcmp(act, acts[i].name) != 0) continue;
    ep->kind = acts[i].kind;
    if (ep->kind == PD_K_EPI_UNOP) {
      ep->unop = (pd_k_unop)acts[i].op;
      return NULL;
    }
    ep->act = (pd_k_act)acts[i].op;
    switch (ep->act) {
      case PD_K_RELU6: ep->p[0] = b; break;
      case PD_K_LEAKY_RELU: case PD_K_SWISH: ep->p[0] = a; break;
      case PD_K_HARD_SIGMOID: ep->p[0] = a, ep->p[1] = b; break;
      case PD_K_HARD_SWISH:  /* x min(max(a x + b, 0), 1) = x min(max(x + b/a, 0), 1/a) / (1/a) */
        if (a <= 0) return "hard_swish needs a positive fuse_alpha (1 / its scale)";
        ep->p[0] = ep->p[1] = 1 / a, ep->p[2] = b / a;
        break;
      default: break;
    }
    return NULL;
  }
  return "it is not relu, sigmoid, tanh, relu6, leaky_relu, swish, hard_sigmoid, hard_swish, "
         "gelu, gelu_erf or gelu_tanh";
}

/* The activation of a fused op's epilogue ep over the n elements of y, in place, through the
 * backend's unary or act entry (where it has no fused kernel). */
static pd_status epilogue_act(const pd_exec_ctx *ctx, pd_dtype dt, const pd_k_conv_epilogue *ep,
                              int64_t n, void *y) {
  if (ep->kind == PD_K_EPI_UNOP) return k_check(ctx, ctx->k->unary(ep->unop, dt, n, y, y), dt);
  if (ep->kind == PD_K_EPI_ACT) return k_check(ctx, ctx->k->act(ep->act, dt, n, ep->p, y, y), dt);
  return PD_OK;
}

/* fused_conv2d: conv2d, then Bias, ResidualData and the activation, in one pass over the output
 * where the backend has conv2d_fused (the CPU), else through its conv2d, binary and activation
 * entries. */
pd_status pd_kernel_fused_conv2d(pd_exec_ctx *ctx) {
  const pd_tensor *in, *f, *bias = NULL, *res = NULL;
  pd_tensor *out;
  pd_k_conv2d p;
  pd_k_conv_epilogue ep = {0};
  char sb[DIMS_BUF], so[DIMS_BUF];
  pd_status st;
  if ((st = in_at(ctx, "Input", 0, true, &in)) || (st = in_at(ctx, "Filter", 0, true, &f)) ||
      (st = in_opt(ctx, "Bias", &bias)) || (st = in_opt(ctx, "ResidualData", &res)) ||
      (st = conv_setup(ctx, in, f, &p)) || (st = out_at(ctx, "Output", 0, true, &out)))
    return st;
  const char *why = fused_epilogue(ctx, &ep);
  if (why)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "fuse_activation '%s': %s",
                       pd_ctx_attr_str(ctx, "fuse_activation"), why);
  int64_t odims[4] = {p.n, p.oc, p.oh, p.ow};
  if (bias && ((st = want_same_dtype(ctx, "Bias", bias, "Input", in)) ||
               (pd_tensor_numel(bias) != p.oc &&
                (st = pd_ctx_fail(ctx, PD_ESHAPE, "Bias %s must hold %" PRId64 " values (one per "
                                  "output channel)", shape_str(bias, sb), p.oc)))))
    return st;
  if (res && ((st = want_same_dtype(ctx, "ResidualData", res, "Input", in)) ||
              (!same_dims(res->ndims, res->dims, 4, odims) &&
               (st = pd_ctx_fail(ctx, PD_ESHAPE, "ResidualData %s must be shaped as Output %s",
                                 shape_str(res, sb), dims_str(4, odims, so, sizeof so))))))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &in)) || (st = unalias(ctx, &h, out, &f)) ||
      (bias && (st = unalias(ctx, &h, out, &bias))) || (res && (st = unalias(ctx, &h, out, &res))) ||
      (st = resize(ctx, out, in->dtype, 4, odims, NULL)))
    goto done;
  pd_dtype dt = in->dtype;
  void *y = pd_tensor_data(out);
  ep.bias = bias ? pd_tensor_data(bias) : NULL;
  ep.residual = res ? pd_tensor_data(res) : NULL;
  if (ctx->k->conv2d_fused) {
    /* an inference model's filters: the backend may keep its transformed copy with them */
    pd_k_prepared **prep = pd_ctx_in_const(ctx, "Filter", 0) ? pd_tensor_prepared(f) : NULL;
    st = pd_ctx_check(ctx, ctx->k->conv2d_fused(dt, &p, pd_tensor_data(in), pd_tensor_data(f),
                                                &ep, y, prep),
                      "conv2d_fused");
    goto done;
  }
  st = pd_ctx_check(ctx, ctx->k->conv2d(dt, &p, pd_tensor_data(in), pd_tensor_data(f), y),
                    "conv2d");
  if (!st && bias)
    st = k_check(ctx, ctx->k->binary(PD_K_ADD, dt, 4, odims, y, 1, (int64_t[]){p.oc}, ep.bias, 1, y),
                 dt);
  if (!st && res)
    st = k_check(ctx, ctx->k->binary(PD_K_ADD, dt, 4, odims, y, 4, odims, ep.residual, 0, y), dt);
  if (!st) st = epilogue_act(ctx, dt, &ep, pd_tensor_numel(out), y);
done:
  hold_free(&h);
  return st;
}

/* conv2d_grad: Input@GRAD (backward data) and Filter@GRAD (backward filter) from Output@GRAD. */
pd_status pd_kernel_conv2d_grad(pd_exec_ctx *ctx) {
  const pd_tensor *in, *f, *dy;
  pd_tensor *dx, *dw;
  pd_k_conv2d p;
  pd_status st;
  if ((st = out_at(ctx, "Input@GRAD", 0, false, &dx)) || (st = out_at(ctx, "Filter@GRAD", 0, false, &dw)))
    return st;
  if (!dx && !dw) return PD_OK;
  if (dx && dx == dw) return pd_ctx_fail(ctx, PD_EINVAL, "Input@GRAD and Filter@GRAD are one var");
  if ((st = in_at(ctx, "Input", 0, true, &in)) || (st = in_at(ctx, "Filter", 0, true, &f)) ||
      (st = in_at(ctx, "Output@GRAD", 0, true, &dy)) || (st = conv_setup(ctx, in, f, &p)) ||
      (st = want_grad_shape(ctx, "Output@GRAD", dy, 4, (int64_t[]){p.n, p.oc, p.oh, p.ow},
                             in->dtype)))
    return st;
  hold h;
  hold_init(&h);
  pd_tensor *outs[2] = {dx, dw};
  for (int i = 0; i < 2 && !st; i++)
    if (outs[i] && !(st = unalias(ctx, &h, outs[i], &in)) && !(st = unalias(ctx, &h, outs[i], &f)))
      st = unalias(ctx, &h, outs[i], &dy);
  if (!st && dx && !(st = resize(ctx, dx, in->dtype, 4, in->dims, in)))
    st = pd_ctx_check(ctx, ctx->k->conv2d_bwd_data(in->dtype, &p, pd_tensor_data(f),
                                                   pd_tensor_data(dy), pd_tensor_data(dx)),
                      "conv2d_bwd_data");
  if (!st && dw && !(st = resize(ctx, dw, f->dtype, 4, f->dims, f)))
    st = pd_ctx_check(ctx, ctx->k->conv2d_bwd_filter(in->dtype, &p, pd_tensor_data(in),
                                                     pd_tensor_data(dy), pd_tensor_data(dw)),
                      "conv2d_bwd_filter");
  hold_free(&h);
  return st;
}

/* ---- conv2d_transpose ---- */

/* A transposed convolution is the adjoint of the conv2d that maps an image of Output's size
 * [N, M, OH, OW] to one of Input's [N, C, H, W] through the same Filter [C, M / groups, KH, KW]
 * (that conv's [out channels, in channels / groups, ...]) with the same strides, paddings and
 * dilations: Output is that conv's backward data of Input, Input@GRAD its forward of
 * Output@GRAD, Filter@GRAD its backward filter. The rows output_padding or output_size add at
 * the bottom (and the columns at the right) lie where the conv's windows read its bottom
 * padding, which shrinks by as much: they get no contributions but the bias. NHWC is computed
 * in NCHW copies. */
typedef struct tconv {
  pd_k_conv2d p;
  bool nhwc;
  int64_t in_nchw[4], out_nchw[4]; /* Input's and Output's dims, NCHW */
  int64_t out_dims[4];             /* Output's dims in the op's layout */
} tconv;

static const int to_nchw[4] = {0, 3, 1, 2}, to_nhwc[4] = {0, 2, 3, 1};

static pd_status tconv_setup(const pd_exec_ctx *ctx, const pd_tensor *in, const pd_tensor *f,
                             const pd_tensor *bias, tconv *t) {
  char si[DIMS_BUF], sf[DIMS_BUF], sb[DIMS_BUF], why[512];
  pd_status st;
  if ((st = want_float(ctx, "Input", in)) ||
      (st = want_same_dtype(ctx, "Filter", f, "Input", in)) ||
      (bias && (st = want_same_dtype(ctx, "Bias", bias, "Input", in))))
    return st;
  t->nhwc = strcmp(pd_ctx_attr_str(ctx, "data_format"), "NHWC") == 0;
  if (in->ndims != 4)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input must have 4 dims (%s), got %s",
                       t->nhwc ? "NHWC" : "NCHW", shape_str(in, si));
  if (f->ndims != 4)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Filter must have 4 dims [in channels, out channels / "
                       "groups, height, width], got %s", shape_str(f, sf));
  int64_t groups = pd_ctx_attr_int(ctx, "groups");
  if (groups < 1) return pd_ctx_fail(ctx, PD_EINVAL, "groups must be at least 1, got %" PRId64,
                                     groups);
  int64_t n = in->dims[0], ch = in->dims[t->nhwc ? 3 : 1];
  int64_t h = in->dims[t->nhwc ? 1 : 2], w = in->dims[t->nhwc ? 2 : 3];
  if (ch != f->dims[0])
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input %s has %" PRId64 " channels but Filter %s takes %"
                       PRId64, shape_str(in, si), ch, shape_str(f, sf), f->dims[0]);
  if (ch % groups || f->dims[1] > INT64_MAX / groups)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Filter %s does not fit groups %" PRId64 " (its %" PRId64
                       " input channels must be a multiple)", shape_str(f, sf), groups, ch);
  int64_t m = f->dims[1] * groups;
  if (bias && (bias->ndims != 1 || bias->dims[0] != m))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Bias %s must be [%" PRId64 "] (the output channels of "
                       "Filter %s with groups %" PRId64 ")", shape_str(bias, sb), m,
                       shape_str(f, sf), groups);
  tconv_attrs a = {.algo = pd_ctx_attr_str(ctx, "padding_algorithm")};
  a.nstride = pd_ctx_attr_ints(ctx, "strides", a.stride, 4);
  a.ndil = pd_ctx_attr_ints(ctx, "dilations", a.dil, 4);
  a.npad = pd_ctx_attr_ints(ctx, "paddings", a.pad, 4);
  a.nopad = pd_ctx_attr_ints(ctx, "output_padding", a.opad, 4);
  a.nosize = pd_ctx_attr_ints(ctx, "output_size", a.osize, 4);
  tconv_geom g;
  if ((st = tconv_geometry(&a, (int64_t[]){h, w}, f->dims + 2, &g, why, sizeof why)))
    return pd_ctx_fail(ctx, st, "Input %s, Filter %s: %s", shape_str(in, si), shape_str(f, sf),
                       why);
  int64_t pb = g.pad[1] - g.grow[0], pr = g.pad[3] - g.grow[1];
  t->p = (pd_k_conv2d){.n = n, .c = m, .h = g.out[0], .w = g.out[1], .oc = ch,
                       .kh = f->dims[2], .kw = f->dims[3], .groups = groups,
                       .stride_h = a.stride[0], .stride_w = a.stride[1], .pad_top = g.pad[0],
                       .pad_bottom = pb > 0 ? pb : 0, .pad_left = g.pad[2],
                       .pad_right = pr > 0 ? pr : 0, .dil_h = g.dil[0], .dil_w = g.dil[1]};
  if (pd_k_conv2d_setup(&t->p) || t->p.oh != h || t->p.ow != w)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "Input %s, Filter %s: an output [%" PRId64 ", %"
                       PRId64 "] grown past the stride beyond the paddings (output_padding "
                       "with a dilation larger than the stride) is not supported",
                       shape_str(in, si), shape_str(f, sf), g.out[0], g.out[1]);
  int64_t nchw_in[4] = {n, ch, h, w}, nchw_out[4] = {n, m, g.out[0], g.out[1]};
  memcpy(t->in_nchw, nchw_in, sizeof nchw_in);
  memcpy(t->out_nchw, nchw_out, sizeof nchw_out);
  for (int i = 0; i < 4; i++) t->out_dims[i] = nchw_out[t->nhwc ? to_nhwc[i] : i];
  return PD_OK;
}

/* Scratch for the NCHW copies of an NHWC op: bufs[i] holds dims[i] (NCHW) and gets src[i]'s
 * data transposed, unless src[i] is NULL. */
static pd_status tconv_scratch(const pd_exec_ctx *ctx, pd_dtype dt, int n,
                               const pd_tensor *const *src, const int64_t (*dims)[4],
                               char **bufs) {
  size_t sizes[3];
  for (int i = 0; i < n; i++) {
    int64_t k = prod(dims[i], 0, 4);
    sizes[i] = (size_t)(k > 0 ? k : 1) * pd_dtype_size(dt);
  }
  pd_status st = pd_ctx_scratch_n(ctx, n, bufs, sizes);
  for (int i = 0; i < n && !st; i++)
    if (src[i])
      st = pd_ctx_check(ctx, ctx->k->transpose(dt, 4, src[i]->dims, to_nchw,
                                               pd_tensor_data(src[i]), bufs[i]),
                        "transpose");
  return st;
}

/* conv2d_transpose, depthwise_conv2d_transpose: Output = the transposed convolution of Input
 * by Filter, plus Bias per output channel when given. */
pd_status pd_kernel_conv2d_transpose(pd_exec_ctx *ctx) {
  const pd_tensor *in, *f, *b;
  pd_tensor *out;
  tconv t;
  pd_status st;
  if ((st = in_at(ctx, "Input", 0, true, &in)) || (st = in_at(ctx, "Filter", 0, true, &f)) ||
      (st = in_opt(ctx, "Bias", &b)) || (st = tconv_setup(ctx, in, f, b, &t)) ||
      (st = out_at(ctx, "Output", 0, true, &out)))
    return st;
  pd_dtype dt = in->dtype;
  char *bufs[2] = {NULL, NULL};
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &in)) || (st = unalias(ctx, &h, out, &f)) ||
      (st = unalias(ctx, &h, out, &b)) || (st = resize(ctx, out, dt, 4, t.out_dims, NULL)))
    goto done;
  const void *x = pd_tensor_data(in);
  void *y = pd_tensor_data(out);
  if (t.nhwc) {
    const pd_tensor *src[2] = {in, NULL};
    const int64_t dims[2][4] = {{t.in_nchw[0], t.in_nchw[1], t.in_nchw[2], t.in_nchw[3]},
                                {t.out_nchw[0], t.out_nchw[1], t.out_nchw[2], t.out_nchw[3]}};
    if ((st = tconv_scratch(ctx, dt, 2, src, dims, bufs))) goto done;
    x = bufs[0];
    y = bufs[1];
  }
  st = pd_ctx_check(ctx, ctx->k->conv2d_bwd_data(dt, &t.p, pd_tensor_data(f), x, y),
                    "conv2d_bwd_data");
  if (!st && t.nhwc)
    st = pd_ctx_check(ctx, ctx->k->transpose(dt, 4, t.out_nchw, to_nhwc, y, pd_tensor_data(out)),
                      "transpose");
  if (!st && b)
    st = k_check(ctx, ctx->k->binary(PD_K_ADD, dt, 4, t.out_dims, pd_tensor_data(out), 1,
                                      b->dims, pd_tensor_data(b), t.nhwc ? 3 : 1,
                                      pd_tensor_data(out)),
                 dt);
done:
  if (bufs[0]) pd_ctx_scratch_free_n(ctx, 2, bufs);
  hold_free(&h);
  return st;
}

/* conv2d_transpose_bias: conv2d_transpose, then Bias and the activation, in one pass over each
 * row of the output where the backend has conv2d_transpose_fused (the CPU), else through its
 * conv2d_bwd_data, binary and activation entries. */
pd_status pd_kernel_conv2d_transpose_bias(pd_exec_ctx *ctx) {
  const pd_tensor *in, *f, *b;
  pd_tensor *out;
  pd_k_conv_epilogue ep = {0};
  tconv t;
  pd_status st;
  if ((st = in_at(ctx, "Input", 0, true, &in)) || (st = in_at(ctx, "Filter", 0, true, &f)) ||
      (st = in_at(ctx, "Bias", 0, true, &b)) || (st = tconv_setup(ctx, in, f, b, &t)) ||
      (st = out_at(ctx, "Output", 0, true, &out)))
    return st;
  const char *why = fused_epilogue(ctx, &ep);
  if (why)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "fuse_activation '%s': %s",
                       pd_ctx_attr_str(ctx, "fuse_activation"), why);
  pd_dtype dt = in->dtype;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &in)) || (st = unalias(ctx, &h, out, &f)) ||
      (st = unalias(ctx, &h, out, &b)) || (st = resize(ctx, out, dt, 4, t.out_dims, NULL)))
    goto done;
  void *y = pd_tensor_data(out);
  ep.bias = pd_tensor_data(b);
  if (ctx->k->conv2d_transpose_fused) {
    st = pd_ctx_check(ctx, ctx->k->conv2d_transpose_fused(dt, &t.p, pd_tensor_data(f),
                                                          pd_tensor_data(in), &ep, y),
                      "conv2d_transpose_fused");
    goto done;
  }
  st = pd_ctx_check(ctx, ctx->k->conv2d_bwd_data(dt, &t.p, pd_tensor_data(f), pd_tensor_data(in),
                                                 y),
                    "conv2d_bwd_data");
  if (!st)
    st = k_check(ctx, ctx->k->binary(PD_K_ADD, dt, 4, t.out_dims, y, 1, b->dims, ep.bias, 1, y),
                 dt);
  if (!st) st = epilogue_act(ctx, dt, &ep, pd_tensor_numel(out), y);
done:
  hold_free(&h);
  return st;
}

/* Its gradient: Input@GRAD = conv2d(Output@GRAD, Filter), Filter@GRAD = conv2d's backward
 * filter of Output@GRAD and Input, Bias@GRAD = Output@GRAD summed per channel. */
pd_status pd_kernel_conv2d_transpose_grad(pd_exec_ctx *ctx) {
  const pd_tensor *in, *f, *b, *dy;
  pd_tensor *dx, *dw, *db;
  tconv t;
  pd_status st;
  if ((st = out_opt(ctx, "Input@GRAD", &dx)) || (st = out_opt(ctx, "Filter@GRAD", &dw)) ||
      (st = out_opt(ctx, "Bias@GRAD", &db)))
    return st;
  if (!dx && !dw && !db) return PD_OK;
  if ((dx && (dx == dw || dx == db)) || (dw && dw == db))
    return pd_ctx_fail(ctx, PD_EINVAL, "two of Input@GRAD, Filter@GRAD and Bias@GRAD are one var");
  if ((st = in_at(ctx, "Input", 0, true, &in)) || (st = in_at(ctx, "Filter", 0, true, &f)) ||
      (st = in_opt(ctx, "Bias", &b)) || (st = in_at(ctx, "Output@GRAD", 0, true, &dy)) ||
      (st = tconv_setup(ctx, in, f, b, &t)) ||
      (st = want_grad_shape(ctx, "Output@GRAD", dy, 4, t.out_dims, in->dtype)))
    return st;
  if (db && !b) return pd_ctx_fail(ctx, PD_EINVAL, "Bias@GRAD is wanted but Bias is not bound");
  pd_dtype dt = in->dtype;
  char *bufs[3] = {NULL, NULL, NULL};
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {dx, dw, db};
  const pd_tensor **ins[4] = {&in, &f, &b, &dy};
  for (int o = 0; o < 3 && !st; o++)
    for (int i = 0; i < 4 && !st; i++) st = unalias(ctx, &h, outs[o], ins[i]);
  if (st) goto done;
  const void *x = pd_tensor_data(in), *g = pd_tensor_data(dy);
  if (t.nhwc) {
    const pd_tensor *src[3] = {dy, in, NULL};
    const int64_t dims[3][4] = {{t.out_nchw[0], t.out_nchw[1], t.out_nchw[2], t.out_nchw[3]},
                                {t.in_nchw[0], t.in_nchw[1], t.in_nchw[2], t.in_nchw[3]},
                                {t.in_nchw[0], t.in_nchw[1], t.in_nchw[2], t.in_nchw[3]}};
    if ((st = tconv_scratch(ctx, dt, 3, src, dims, bufs))) goto done;
    g = bufs[0];
    x = bufs[1];
  }
  if (dx && !(st = resize_like(ctx, dx, in, in))) {
    void *gx = t.nhwc ? bufs[2] : pd_tensor_data(dx);
    st = pd_ctx_check(ctx, ctx->k->conv2d(dt, &t.p, g, pd_tensor_data(f), gx), "conv2d");
    if (!st && t.nhwc)
      st = pd_ctx_check(ctx, ctx->k->transpose(dt, 4, t.in_nchw, to_nhwc, gx, pd_tensor_data(dx)),
                        "transpose");
  }
  if (!st && dw && !(st = resize_like(ctx, dw, f, f)))
    st = pd_ctx_check(ctx, ctx->k->conv2d_bwd_filter(dt, &t.p, g, x, pd_tensor_data(dw)),
                      "conv2d_bwd_filter");
  if (!st && db && !(st = resize_like(ctx, db, b, b)))
    st = k_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, 4, t.out_nchw, g, 3, (int[]){0, 2, 3},
                                     pd_tensor_data(db)),
                 dt);
done:
  if (bufs[0]) pd_ctx_scratch_free_n(ctx, 3, bufs);
  hold_free(&h);
  return st;
}

/* The pooling of X as the attributes say. Adaptive pooling (ksize = the output size, windows
 * [floor(i * H / OH), ceil((i + 1) * H / OH))) is the backend's adaptive_pool2d, not pool2d:
 * *adaptive says so, and p then holds only the sizes. */
static pd_status pool_setup(const pd_exec_ctx *ctx, const pd_tensor *x, pd_k_pool2d *p,
                            bool *adaptive) {
  char sx[DIMS_BUF];
  int64_t k[2] = {0}, stride[2] = {0}, pad[4] = {0};
  pd_status st;
  if ((st = need_nchw(ctx)) || (st = want_float(ctx, "X", x))) return st;
  if (x->ndims != 4)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have 4 dims [N, C, H, W], got %s", shape_str(x, sx));
  const char *type = pd_ctx_attr_str(ctx, "pooling_type");
  if (strcmp(type, "max") != 0 && strcmp(type, "avg") != 0)
    return pd_ctx_fail(ctx, PD_EINVAL, "pooling_type must be max or avg, got '%s'", type);
  if ((st = attr_pair(ctx, "ksize", 1, k)) || (st = attr_pair(ctx, "strides", 1, stride)) ||
      (st = attr_pads(ctx, pad)))
    return st;
  *p = (pd_k_pool2d){.type = strcmp(type, "max") == 0 ? PD_K_POOL_MAX : PD_K_POOL_AVG,
                     .n = x->dims[0], .c = x->dims[1], .h = x->dims[2], .w = x->dims[3],
                     .kh = k[0], .kw = k[1], .stride_h = stride[0], .stride_w = stride[1],
                     .pad_top = pad[0], .pad_bottom = pad[1], .pad_left = pad[2],
                     .pad_right = pad[3], .ceil_mode = pd_ctx_attr_bool(ctx, "ceil_mode"),
                     .exclusive = pd_ctx_attr_bool(ctx, "exclusive")};
  *adaptive = false;
  if (p->h < 1 || p->w < 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X %s has an empty image", shape_str(x, sx));
  const char *algo = pd_ctx_attr_str(ctx, "padding_algorithm");
  if (pd_ctx_attr_bool(ctx, "global_pooling")) {
    p->kh = p->h;
    p->kw = p->w;
    p->pad_top = p->pad_bottom = p->pad_left = p->pad_right = 0;
  } else if (pd_ctx_attr_bool(ctx, "adaptive")) {
    *adaptive = true;
    p->oh = k[0];
    p->ow = k[1];
    return PD_OK;
  } else if (strcmp(algo, "SAME") == 0) {
    same_pads(p->h, p->kh, p->stride_h, &p->pad_top, &p->pad_bottom);
    same_pads(p->w, p->kw, p->stride_w, &p->pad_left, &p->pad_right);
    p->ceil_mode = false;
  } else if (strcmp(algo, "VALID") == 0) {
    p->pad_top = p->pad_bottom = p->pad_left = p->pad_right = 0;
  }
  char what[256];
  snprintf(what, sizeof what, "ksize [%" PRId64 ", %" PRId64 "], strides [%" PRId64 ", %" PRId64
           "], paddings [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]", p->kh, p->kw,
           p->stride_h, p->stride_w, p->pad_top, p->pad_bottom, p->pad_left, p->pad_right);
  if (p->pad_top >= p->kh || p->pad_left >= p->kw || p->pad_bottom >= p->kh ||
      p->pad_right >= p->kw)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "paddings must be smaller than the window (%s)",
                       what);
  if (pd_k_pool2d_setup(p))
    return pd_ctx_fail(ctx, PD_ESHAPE, "X %s is smaller than the window (%s)", shape_str(x, sx), what);
  /* Fluid's size: (in + pads - k (+ stride - 1 in ceil mode)) / stride + 1. The backend drops
   * a last window that would start past the input in ceil mode; Fluid does not. */
  int64_t fh = (p->h + p->pad_top + p->pad_bottom - p->kh + (p->ceil_mode ? p->stride_h - 1 : 0)) /
                   p->stride_h + 1,
          fw = (p->w + p->pad_left + p->pad_right - p->kw + (p->ceil_mode ? p->stride_w - 1 : 0)) /
                   p->stride_w + 1;
  if (fh != p->oh || fw != p->ow)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "with ceil_mode the last window of X %s would lie "
                       "in the padding (%s); Fluid's output for it is not supported", shape_str(x, sx),
                       what);
  return PD_OK;
}

/* pool2d: max or avg pooling of X [N, C, H, W] (NCHW only): ksize windows moved by strides over
 * the padded input (paddings, or SAME / VALID), global_pooling (one window over the image),
 * ceil_mode, exclusive (avg divides by the in-bounds count), adaptive (ksize is the output). */
pd_status pd_kernel_pool2d(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_k_pool2d p;
  bool adaptive;
  pd_status st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = pool_setup(ctx, x, &p, &adaptive)) ||
      (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) &&
      !(st = resize(ctx, out, x->dtype, 4, (int64_t[]){p.n, p.c, p.oh, p.ow}, NULL))) {
    st = pd_ctx_check(ctx, (adaptive ? ctx->k->adaptive_pool2d : ctx->k->pool2d)(
                               x->dtype, &p, pd_tensor_data(x), pd_tensor_data(out)),
                      "pool2d");
  }
  hold_free(&h);
  return st;
}

/* pool2d_grad: X@GRAD from Out@GRAD (max: to each window's first maximum; avg: spread over the
 * window). Out is recomputed when the op does not bind it. */
pd_status pd_kernel_pool2d_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dy, *y;
  pd_tensor *dx;
  pd_k_pool2d p;
  bool adaptive;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  int64_t od[4];
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = pool_setup(ctx, x, &p, &adaptive)))
    return st;
  od[0] = p.n;
  od[1] = p.c;
  od[2] = p.oh;
  od[3] = p.ow;
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, 4, od, x->dtype))) return st;
  y = in_if_set(ctx, "Out", 0);
  if (y && !same_dims(y->ndims, y->dims, 4, od)) y = NULL;
  hold h;
  pd_tensor ty; /* Out recomputed, for max pooling when it is not given */
  hold_init(&h);
  pd_tensor_init(&ty);
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &dy)) ||
      (st = unalias(ctx, &h, dx, &y)))
    goto out;
  if (!adaptive && !y && p.type == PD_K_POOL_MAX) {
    ty.place = pd_ctx_place(ctx); /* made where the op computes */
    if (pd_tensor_resize(&ty, x->dtype, 4, od)) {
      st = nomem(ctx);
      goto out;
    }
    if ((st = pd_ctx_check(ctx, ctx->k->pool2d(x->dtype, &p, pd_tensor_data(x),
                                               pd_tensor_data(&ty)),
                           "pool2d")))
      goto out;
    y = &ty;
  }
  if ((st = resize(ctx, dx, x->dtype, 4, x->dims, x))) goto out;
  /* avg does not read y, nor does adaptive pooling: dy stands in for it */
  st = pd_ctx_check(ctx, (adaptive ? ctx->k->adaptive_pool2d_grad : ctx->k->pool2d_grad)(
                             x->dtype, &p, pd_tensor_data(x), pd_tensor_data(y ? y : dy),
                             pd_tensor_data(dy), pd_tensor_data(dx)),
                    "pool2d_grad");
out:
  hold_free(&h);
  pd_tensor_release(&ty);
  return st;
}
