/* index.c -- the ops that pick, repeat or bound elements: slice, gather, expand_v2, tile,
 * meshgrid, where, clip and one_hot (v1 and v2): their shape functions, kernels and gradient
 * kernels. slice, expand_v2, tile and meshgrid move elements through the backend's strided_copy
 * (meshgrid's gradient is a broadcast's sum), where through its where, clip through its compare
 * and binary kernels (so these run on the GPU too); gather, tile's gradient and one_hot are host
 * loops. Any dtype moves as bytes forward; gradients are fp32/fp64. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ helpers */

/* Row-major strides (in elements) of dims. */
static void strides_of(int nd, const int64_t *dims, int64_t *str) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    str[i] = s;
    s *= dims[i];
  }
}

/* dims (rank n) padded with leading 1s to rank nd. */
static void pad_dims(int n, const int64_t *dims, int nd, int64_t *out) {
  for (int i = 0; i < nd; i++) out[i] = i < nd - n ? 1 : dims[i - (nd - n)];
}

/* tile's gradient, on the op's place: dx (dims xd, padded to rank nd) = the sum of the dout
 * elements (dims od = xd times the repeats) that read each x element. One tiled dim at a time,
 * dout viewed as [pre, r, x_i post] with the repeats r outermost along the dim (tile's layout)
 * and summed over r (the backend's reduce); dt is fp32 or fp64. */
static pd_status tile_sum(const pd_exec_ctx *ctx, pd_dtype dt, int nd, const int64_t *od,
                          const int64_t *xd, const void *dout, void *dx) {
  int64_t cur[MAXD], nx = pd_k_numel(nd, xd);
  size_t es = pd_dtype_size(dt);
  int last = -1;
  for (int i = 0; i < nd; i++) {
    cur[i] = od[i];
    if (od[i] != xd[i]) last = i;
  }
  if (nx == 0 || pd_k_numel(nd, od) == 0) return nx ? ctx->k->fill(dt, nx, dx, 0.0) : PD_OK;
  if (last < 0) return pd_ctx_copy(ctx, dx, dout, (size_t)nx * es);
  const void *src = dout;
  void *held = NULL; /* src, when a scratch buffer of an earlier pass */
  pd_status st = PD_OK;
  for (int i = 0; i <= last && !st; i++) {
    if (od[i] == xd[i]) continue;
    int64_t pre = pd_k_numel(i, cur), post = pd_k_numel(nd - i - 1, cur + i + 1);
    int64_t dims[3] = {pre, od[i] / xd[i], xd[i] * post};
    int axis = 1;
    cur[i] = xd[i];
    void *dst = i == last ? dx : pd_ctx_scratch(ctx, (size_t)pd_k_numel(nd, cur) * es + 1, &st);
    if (!dst) break;
    st = ctx->k->reduce(PD_K_RSUM, dt, 3, dims, src, 1, &axis, dst);
    pd_ctx_scratch_free(ctx, held);
    held = dst == dx ? NULL : dst;
    src = dst;
  }
  pd_ctx_scratch_free(ctx, held);
  return st;
}

/* ================================================================ slice */

/* The slice of one axis: [start, end) of a dim of size dim, from the attributes s and e as
 * Fluid clamps them (negative counts from the end; past the dim stops at it). 0, or 1 when the
 * start is past the end of the dim, 2 when the end comes before the start. */
static int slice_range(int64_t dim, int64_t s, int64_t e, int64_t *start, int64_t *end) {
  s = s < 0 ? s + dim : s;
  e = e < 0 ? e + dim : e;
  if (s < 0) s = 0;
  if (e > dim) e = dim;
  if (e < 0) e = 0;
  *start = s;
  *end = e;
  if (s >= dim && dim > 0) return 1;
  if (e < s) return 2;
  return 0;
}

/* The axes, starts, ends and decrease_axis of slice, checked against a rank nd: axes in range
 * (-nd..nd-1, normalised) and distinct, starts and ends as many as axes, decrease_axis among
 * the axes. Errors go to fail with a message in msg. */
typedef struct slice_spec {
  int n, ndec;
  int64_t axes[MAXD], starts[MAXD], ends[MAXD], dec[MAXD], flags[MAXD];
  int nflags;
} slice_spec;

static pd_status slice_read(slice_spec *sp, int nd, int64_t (*get)(const void *, const char *, int64_t *, int),
                            const void *src, char *msg, size_t cap) {
  int nstarts, nends;
  sp->n = (int)get(src, "axes", sp->axes, MAXD);
  nstarts = (int)get(src, "starts", sp->starts, MAXD);
  nends = (int)get(src, "ends", sp->ends, MAXD);
  sp->ndec = (int)get(src, "decrease_axis", sp->dec, MAXD);
  sp->nflags = (int)get(src, "infer_flags", sp->flags, MAXD);
  if (sp->n > nd || sp->n > MAXD) {
    snprintf(msg, cap, "axes has %d entries but Input has %d dims", sp->n, nd);
    return PD_EINVAL;
  }
  if (nstarts != sp->n || nends != sp->n) {
    snprintf(msg, cap, "axes has %d entries but starts has %d and ends %d", sp->n, nstarts, nends);
    return PD_EINVAL;
  }
  bool seen[MAXD] = {false};
  for (int i = 0; i < sp->n; i++) {
    int64_t a = sp->axes[i];
    if (a < -nd || a >= nd) {
      snprintf(msg, cap, "axis %" PRId64 " is out of range for Input with %d dims (expected %d to "
               "%d)", a, nd, -nd, nd - 1);
      return PD_EINVAL;
    }
    if (a < 0) a += nd;
    if (seen[a]) {
      snprintf(msg, cap, "axis %" PRId64 " appears twice in axes", a);
      return PD_EINVAL;
    }
    seen[a] = true;
    sp->axes[i] = a;
  }
  if (sp->ndec > sp->n) {
    snprintf(msg, cap, "decrease_axis has %d entries but axes only %d", sp->ndec, sp->n);
    return PD_EINVAL;
  }
  for (int i = 0; i < sp->ndec; i++) {
    int64_t a = sp->dec[i] < 0 ? sp->dec[i] + nd : sp->dec[i];
    if (a < 0 || a >= nd || !seen[a]) {
      snprintf(msg, cap, "decrease_axis %" PRId64 " is not one of the sliced axes", sp->dec[i]);
      return PD_EINVAL;
    }
    sp->dec[i] = a;
  }
  return PD_OK;
}

static int64_t infer_get(const void *src, const char *name, int64_t *out, int cap) {
  return pd_infer_attr_ints((const pd_infer_ctx *)src, name, out, cap);
}
static int64_t ctx_get(const void *src, const char *name, int64_t *out, int cap) {
  int n = pd_ctx_attr_ints((const pd_exec_ctx *)src, name, out, cap);
  return n < 0 ? 0 : n;
}

/* Out's dims without decrease_axis's: when every dim goes, [1] (Fluid). */
static int slice_decrease(const slice_spec *sp, int nd, const int64_t *full, int64_t *out) {
  bool drop[MAXD] = {false};
  for (int i = 0; i < sp->ndec; i++) drop[sp->dec[i]] = true;
  int n = 0;
  for (int k = 0; k < nd; k++)
    if (!drop[k]) out[n++] = full[k];
  if (n == 0 && nd > 0) out[n++] = 1;
  return n;
}

/* slice: Input's elements [starts[i], ends[i]) along axes[i]; decrease_axis drops sliced axes
 * of size 1. A dim unknown here (or with infer_flags -1) stays unknown in Out. */
pd_status pd_infer_slice(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  char s[PD_DIMS_BUF], msg[160];
  pd_status st = pd_infer_in(c, "Input", 0, &x, &d);
  if (st) return st;
  if (d.n < 0) return pd_infer_set_out(c, "Out", 0, &d, x->dtype, 0);
  slice_spec sp;
  if ((st = slice_read(&sp, d.n, infer_get, c, msg, sizeof msg)))
    return pd_infer_fail(c, st, "%s", msg);
  int64_t full[MAXD];
  memcpy(full, d.d, sizeof(int64_t) * (size_t)d.n);
  for (int i = 0; i < sp.n; i++) {
    int64_t a = sp.axes[i], dim = d.d[a], b, e;
    if (dim < 0 || (i < sp.nflags && sp.flags[i] == -1)) {
      full[a] = -1;
      continue;
    }
    int r = slice_range(dim, sp.starts[i], sp.ends[i], &b, &e);
    if (r == 1)
      return pd_infer_fail(c, PD_ESHAPE, "start %" PRId64 " of axis %" PRId64 " is past the end of "
                           "Input %s (dim %" PRId64 ")", sp.starts[i], a, pd_infer_dims_str(&d, s),
                           dim);
    if (r == 2)
      return pd_infer_fail(c, PD_ESHAPE, "end %" PRId64 " of axis %" PRId64 " comes before start %"
                           PRId64 " in Input %s", sp.ends[i], a, sp.starts[i],
                           pd_infer_dims_str(&d, s));
    full[a] = e - b;
  }
  for (int i = 0; i < sp.ndec; i++)
    if (full[sp.dec[i]] != 1 && full[sp.dec[i]] != -1)
      return pd_infer_fail(c, PD_ESHAPE, "decrease_axis %" PRId64 " has size %" PRId64 " after "
                           "slicing Input %s; it must be 1", sp.dec[i], full[sp.dec[i]],
                           pd_infer_dims_str(&d, s));
  out.n = slice_decrease(&sp, d.n, full, out.d);
  bool same_rows = d.n > 0 && out.n > 0 && d.d[0] == out.d[0] && sp.ndec == 0;
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, same_rows ? x->lod_level : 0);
}

/* The slice of Input x: its full (undecreased) dims and the offset of each axis' start. */
static pd_status slice_plan(const pd_exec_ctx *ctx, const pd_tensor *x, slice_spec *sp,
                            int64_t *full, int64_t *begin) {
  char s[DIMS_BUF], msg[160];
  pd_status st = slice_read(sp, x->ndims, ctx_get, ctx, msg, sizeof msg);
  if (st) return pd_ctx_fail(ctx, st, "%s", msg);
  memcpy(full, x->dims, sizeof(int64_t) * (size_t)x->ndims);
  for (int k = 0; k < x->ndims; k++) begin[k] = 0;
  for (int i = 0; i < sp->n; i++) {
    int64_t a = sp->axes[i], b, e;
    int r = slice_range(x->dims[a], sp->starts[i], sp->ends[i], &b, &e);
    if (r == 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "start %" PRId64 " of axis %" PRId64 " is past the end of "
                         "Input %s (dim %" PRId64 ")", sp->starts[i], a, shape_str(x, s),
                         x->dims[a]);
    if (r == 2)
      return pd_ctx_fail(ctx, PD_ESHAPE, "end %" PRId64 " of axis %" PRId64 " comes before start %"
                         PRId64 " in Input %s", sp->ends[i], a, sp->starts[i], shape_str(x, s));
    full[a] = e - b;
    begin[a] = b;
  }
  for (int i = 0; i < sp->ndec; i++)
    if (full[sp->dec[i]] != 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "decrease_axis %" PRId64 " has size %" PRId64 " after "
                         "slicing Input %s; it must be 1", sp->dec[i], full[sp->dec[i]],
                         shape_str(x, s));
  return PD_OK;
}

/* Copy between the dense block of dims od and the window of x (dims xd) that starts at begin:
 * to_x false reads the window into dense, true writes dense into the window. */
static pd_status window_copy(const pd_exec_ctx *ctx, pd_dtype dt, int nd, const int64_t *xd,
                             const int64_t *od, const int64_t *begin, void *x, void *dense,
                             bool to_x) {
  int64_t xstr[MAXD], off = 0;
  strides_of(nd, xd, xstr);
  for (int k = 0; k < nd; k++) off += begin[k] * xstr[k];
  pd_status st = to_x ? ctx->k->strided_copy(dt, nd, od, od, xstr, off, dense, x, true)
                      : ctx->k->strided_copy(dt, nd, od, od, xstr, off, x, dense, false);
  return pd_ctx_check(ctx, st, "strided_copy");
}

pd_status pd_kernel_slice(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st = in_at(ctx, "Input", 0, true, &x);
  if (st) return st;
  slice_spec sp;
  int64_t full[MAXD], begin[MAXD], od[MAXD];
  if ((st = slice_plan(ctx, x, &sp, full, begin)) || (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  int nd = x->ndims, ond = slice_decrease(&sp, nd, full, od);
  bool keep_lod = nd > 0 && full[0] == x->dims[0] && sp.ndec == 0;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) &&
      !(st = resize(ctx, out, x->dtype, ond, od, keep_lod ? x : NULL)))
    st = window_copy(ctx, x->dtype, nd, x->dims, full, begin, pd_tensor_data(x),
                     pd_tensor_data(out), false);
  hold_free(&h);
  return st;
}

/* slice_grad: Input@GRAD is 0 but for the window, which takes Out@GRAD. */
pd_status pd_kernel_slice_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x, *dy;
  pd_status st = out_at(ctx, "Input@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "Input", 0, true, &x)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = want_float(ctx, "Out@GRAD", dy)))
    return st;
  slice_spec sp;
  int64_t full[MAXD], begin[MAXD], od[MAXD];
  if ((st = slice_plan(ctx, x, &sp, full, begin))) return st;
  int nd = x->ndims, ond = slice_decrease(&sp, nd, full, od);
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, ond, od, dy->dtype))) return st;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, dx, &dy)) && !(st = unalias(ctx, &h, dx, &x)) &&
      !(st = resize(ctx, dx, dy->dtype, nd, x->dims, x)) &&
      !(st = k_check(ctx, ctx->k->fill(dy->dtype, pd_tensor_numel(dx), pd_tensor_data(dx), 0.0),
                     dy->dtype)))
    st = window_copy(ctx, dy->dtype, nd, x->dims, full, begin, pd_tensor_data(dx),
                     pd_tensor_data(dy), true);
  hold_free(&h);
  return st;
}

/* ================================================================ expand_v2, tile */

/* Out's dims of expand_v2: shape lines up with X's dims at the end; -1 keeps X's dim, and every
 * other entry must equal X's dim or X's dim must be 1. New leading dims must be positive.
 * Returns the rank of out, or -1 with *bad the offending index of shape. At compile time
 * (unknown = true) an X dim of -1 gives the shape's entry. */
static int expand_dims(int xn, const int64_t *xd, int sn, const int64_t *shape, int64_t *out,
                       int *bad, bool unknown) {
  if (sn < xn) {
    *bad = -1;
    return -1;
  }
  for (int i = 0; i < sn; i++) {
    int k = i - (sn - xn);
    int64_t s = shape[i], x = k >= 0 ? xd[k] : 1;
    *bad = i;
    if (s == -1) {
      if (k < 0) return -1;
      out[i] = x;
    } else if (s <= 0) {
      return -1;
    } else if (x == s || x == 1 || (unknown && x == -1)) {
      out[i] = s;
    } else {
      return -1;
    }
  }
  return sn;
}

/* expand_v2: X broadcast to `shape` (the Shape input, else the expand_shapes_tensor list, else
 * the attribute, as PaddlePaddle picks them). With a shape given at run time the rank is the
 * list's length, Shape's size or the attribute's length, and a dim is known where the attribute
 * has a positive entry (Paddle writes -1 where a tensor gives it). */
pd_status pd_infer_expand_v2(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  int64_t shape[MAXD + 1];
  char s[PD_DIMS_BUF], sl[PD_LIST_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int sn = pd_infer_attr_ints(c, "shape", shape, MAXD + 1);
  if (sn > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "shape %s has more than %d dims",
                         pd_infer_attr_ints_str(c, "shape", sl), PD_MAX_RANK);
  int nlist = pd_infer_nin(c, "expand_shapes_tensor");
  if (pd_infer_nin(c, "Shape") > 0 || nlist > 0) {
    int rank = nlist > 0 ? nlist : sn > 0 ? sn : -1;
    if (pd_infer_nin(c, "Shape") > 0) {
      pd_infer_dims sd;
      if ((st = pd_infer_in(c, "Shape", 0, NULL, &sd))) return st;
      rank = sd.n == 1 && sd.d[0] >= 0 ? (int)sd.d[0] : sn > 0 ? sn : -1;
    }
    if (rank > PD_MAX_RANK)
      return pd_infer_fail(c, PD_EUNSUPPORTED, "the shape has %d dims; at most %d are supported",
                           rank, PD_MAX_RANK);
    out = pd_infer_dims_unknown(rank);
    for (int i = 0; rank == sn && i < sn; i++)
      if (shape[i] > 0) out.d[i] = shape[i];
    return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
  }
  if (d.n < 0) {
    out.n = sn;
    for (int i = 0; i < sn; i++) out.d[i] = shape[i] > 0 ? shape[i] : -1;
  } else {
    int bad;
    out.n = expand_dims(d.n, d.d, sn, shape, out.d, &bad, true);
    if (out.n < 0 && bad < 0)
      return pd_infer_fail(c, PD_ESHAPE, "shape %s has fewer dims than X %s",
                           pd_infer_attr_ints_str(c, "shape", sl), pd_infer_dims_str(&d, s));
    if (out.n < 0)
      return pd_infer_fail(c, PD_ESHAPE, "cannot expand X %s to shape %s (entry %d, %" PRId64 ")",
                           pd_infer_dims_str(&d, s), pd_infer_attr_ints_str(c, "shape", sl), bad,
                           shape[bad]);
  }
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* Out's dims of tile: X's dims and repeat_times lined up at the end (the shorter padded with
 * leading 1s), multiplied. Returns the rank, or -1 with *bad the index of a repeat below 1. */
static int tile_dims(int xn, const int64_t *xd, int rn, const int64_t *rep, int64_t *out,
                     int *bad, int64_t (*mul)(int64_t, int64_t)) {
  int n = xn > rn ? xn : rn;
  for (int i = 0; i < rn; i++)
    if (rep[i] < 1) {
      *bad = i;
      return -1;
    }
  for (int i = 0; i < n; i++) {
    int kx = i - (n - xn), kr = i - (n - rn);
    out[i] = mul(kx >= 0 ? xd[kx] : 1, kr >= 0 ? rep[kr] : 1);
  }
  return n;
}

static int64_t mul_known(int64_t a, int64_t b) { return a * b; }

pd_status pd_infer_tile(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  int64_t rep[MAXD + 1];
  char sl[PD_LIST_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int rn = pd_infer_attr_ints(c, "repeat_times", rep, MAXD + 1);
  if (rn > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "repeat_times %s has more than %d entries",
                         pd_infer_attr_ints_str(c, "repeat_times", sl), PD_MAX_RANK);
  if (d.n < 0) {
    out = pd_infer_dims_unknown(-1);
  } else {
    int bad;
    out.n = tile_dims(d.n, d.d, rn, rep, out.d, &bad, pd_infer_dim_mul);
    if (out.n < 0)
      return pd_infer_fail(c, PD_EINVAL, "repeat_times %s has %" PRId64 " at %d; each must be at "
                           "least 1", pd_infer_attr_ints_str(c, "repeat_times", sl), rep[bad], bad);
  }
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* The out dims of expand_v2 or tile (is_tile) for x at run time. expand_v2's shape: the Shape
 * input, else the expand_shapes_tensor list, else the attribute. */
static pd_status repeat_plan(const pd_exec_ctx *ctx, const pd_tensor *x, bool is_tile, int *nd,
                             int64_t *od) {
  const char *attr = is_tile ? "repeat_times" : "shape";
  int64_t v[MAXD + 1];
  char s[DIMS_BUF], sl[LIST_BUF];
  int n = 0, bad = 0;
  bool given;
  pd_status st;
  const pd_tensor *sh = is_tile ? NULL : in_if_set(ctx, "Shape", 0);
  if (sh) {
    if (!is_int(sh->dtype) || sh->ndims != 1)
      return pd_ctx_fail(ctx, PD_ETYPE, "Shape must be a 1-D int32 or int64 tensor, got %s %s",
                         pd_dtype_name(sh->dtype), shape_str(sh, s));
    if (sh->dims[0] > MAXD)
      return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "Shape gives %" PRId64 " dims; at most %d are "
                         "supported", sh->dims[0], MAXD);
    n = (int)sh->dims[0];
    for (int i = 0; i < n; i++) v[i] = elem_i(sh, i);
  } else if (!is_tile) {
    /* Shape is unbound here: the list, else the attribute. */
    if ((st = shape_from(ctx, "expand_shapes_tensor", "Shape", attr, v, &n, &given))) return st;
  } else {
    n = pd_ctx_attr_ints(ctx, attr, v, MAXD + 1);
  }
  if (n < 0) n = 0;
  if (n > MAXD)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s has %d entries; at most %d are supported", attr,
                       n, MAXD);
  if (is_tile) {
    *nd = tile_dims(x->ndims, x->dims, n, v, od, &bad, mul_known);
    if (*nd < 0)
      return pd_ctx_fail(ctx, PD_EINVAL, "repeat_times %s has %" PRId64 " at %d; each must be at "
                         "least 1", dims_str(n, v, sl, sizeof sl), v[bad], bad);
    return PD_OK;
  }
  *nd = expand_dims(x->ndims, x->dims, n, v, od, &bad, false);
  if (*nd < 0 && bad < 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "shape %s has fewer dims than X %s",
                       dims_str(n, v, sl, sizeof sl), shape_str(x, s));
  if (*nd < 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "cannot expand X %s to shape %s (entry %d, %" PRId64 ")",
                       shape_str(x, s), dims_str(n, v, sl, sizeof sl), bad, v[bad]);
  return PD_OK;
}

/* expand_v2 (X broadcast to shape; -1 keeps X's dim) and tile (X repeated repeat_times[i]
 * times along dim i). */
pd_status pd_kernel_repeat(pd_exec_ctx *ctx) {
  const bool is_tile = ctx->def->karg == PD_OPV_TILE;
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int nd;
  int64_t od[MAXD], xd[MAXD];
  if ((st = repeat_plan(ctx, x, is_tile, &nd, od)) || (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  pad_dims(x->ndims, x->dims, nd, xd);
  hold h;
  hold_init(&h);
  int64_t xstr[MAXD];
  strides_of(nd, xd, xstr);
  if (!(st = unalias(ctx, &h, out, &x)) && !(st = resize(ctx, out, x->dtype, nd, od, NULL)))
    st = pd_ctx_check(ctx, ctx->k->strided_copy(x->dtype, nd, od, xd, xstr, 0, pd_tensor_data(x),
                                                pd_tensor_data(out), false),
                      "strided_copy");
  hold_free(&h);
  return st;
}

/* X@GRAD = Out@GRAD summed over the copies of each X element. */
pd_status pd_kernel_repeat_grad(pd_exec_ctx *ctx) {
  const bool is_tile = ctx->def->karg == PD_OPV_TILE;
  pd_tensor *dx;
  const pd_tensor *x, *dy;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = want_float(ctx, "Out@GRAD", dy)))
    return st;
  int nd;
  int64_t od[MAXD], xd[MAXD];
  if ((st = repeat_plan(ctx, x, is_tile, &nd, od)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, nd, od, dy->dtype)))
    return st;
  pad_dims(x->ndims, x->dims, nd, xd);
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, dx, &dy)) && !(st = unalias(ctx, &h, dx, &x)) &&
      !(st = resize(ctx, dx, dy->dtype, x->ndims, x->dims, x))) {
    /* expand_v2's dims of X are 1 or Out's: a broadcast's gradient, on the op's place. */
    if (!is_tile) st = sum_to(ctx, dy->dtype, nd, od, xd, pd_tensor_data(dy), pd_tensor_data(dx), 1.0);
    else st = k_check(ctx, tile_sum(ctx, dy->dtype, nd, od, xd, pd_tensor_data(dy),
                                    pd_tensor_data(dx)),
                      dy->dtype);
  }
  hold_free(&h);
  return st;
}

/* ================================================================ meshgrid */

/* meshgrid: N tensors of rank 0 or 1 (n_i elements; rank 0 is one) -> N outputs of dims
 * [n_0, ..., n_{N-1}], Out[i] holding X[i] along dim i ("ij" indexing), of X[i]'s dtype. */
pd_status pd_infer_meshgrid(pd_infer_ctx *c) {
  int n = pd_infer_nin(c, "X");
  char s[PD_DIMS_BUF];
  if (n < 1) return pd_infer_fail(c, PD_EINVAL, "input X is not given");
  if (n > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "X has %d tensors (at most %d)", n, PD_MAX_RANK);
  if (pd_infer_nout(c, "Out") != n)
    return pd_infer_fail(c, PD_EINVAL, "Out has %d vars but X has %d tensors",
                         pd_infer_nout(c, "Out"), n);
  pd_infer_dims out;
  const pd_var_desc *x[PD_MAX_RANK];
  out.n = n;
  for (int i = 0; i < n; i++) {
    pd_infer_dims d;
    pd_status st = pd_infer_in(c, "X", i, &x[i], &d);
    if (st) return st;
    if (d.n > 1)
      return pd_infer_fail(c, PD_ESHAPE, "X[%d] must have rank 0 or 1, got %s", i,
                           pd_infer_dims_str(&d, s));
    out.d[i] = d.n == 1 ? d.d[0] : d.n == 0 ? 1 : -1;
  }
  for (int i = 0; i < n; i++) {
    pd_status st = pd_infer_set_out(c, "Out", i, &out, x[i]->dtype, 0);
    if (st) return st;
  }
  return PD_OK;
}

/* The inputs of meshgrid (or of its gradient) at run time: *n of them, od the outputs' dims. */
static pd_status meshgrid_dims(const pd_exec_ctx *ctx, const pd_tensor **x, int *n, int64_t *od) {
  char s[DIMS_BUF];
  *n = pd_ctx_nin(ctx, "X");
  if (*n < 1) return pd_ctx_fail(ctx, PD_EINVAL, "input X is not given");
  if (*n > MAXD)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "X has %d tensors; at most %d are supported", *n,
                       MAXD);
  for (int i = 0; i < *n; i++) {
    pd_status st = in_at(ctx, "X", i, true, &x[i]);
    if (st) return st;
    if (x[i]->ndims > 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "X[%d] must have rank 0 or 1, got %s", i,
                         shape_str(x[i], s));
    od[i] = pd_tensor_numel(x[i]);
  }
  return PD_OK;
}

/* The dims of X[i] in Out[i]: 1 but n_i at dim i. */
static void meshgrid_in_dims(int n, const int64_t *od, int i, int64_t *xd) {
  for (int k = 0; k < n; k++) xd[k] = k == i ? od[i] : 1;
}

/* Out[i] = X[i] broadcast along the other dims. */
pd_status pd_kernel_meshgrid(pd_exec_ctx *ctx) {
  const pd_tensor *x[MAXD];
  int n;
  int64_t od[MAXD];
  pd_status st = meshgrid_dims(ctx, x, &n, od);
  if (st) return st;
  if (pd_ctx_nout(ctx, "Out") != n)
    return pd_ctx_fail(ctx, PD_EINVAL, "Out has %d vars but X has %d tensors",
                       pd_ctx_nout(ctx, "Out"), n);
  hold h;
  hold_init(&h);
  for (int i = 0; i < n && !st; i++) {
    pd_tensor *o;
    st = out_at(ctx, "Out", i, false, &o);
    for (int j = 0; j < n && !st && o; j++) st = unalias(ctx, &h, o, &x[j]);
  }
  for (int i = 0; i < n && !st; i++) {
    pd_tensor *o;
    int64_t xd[MAXD], xstr[MAXD];
    if ((st = out_at(ctx, "Out", i, false, &o)) || !o) continue;
    meshgrid_in_dims(n, od, i, xd);
    strides_of(n, xd, xstr);
    if (!(st = resize(ctx, o, x[i]->dtype, n, od, NULL)) && pd_k_numel(n, od))
      st = pd_ctx_check(ctx, ctx->k->strided_copy(x[i]->dtype, n, od, xd, xstr, 0,
                                                  pd_tensor_data(x[i]), pd_tensor_data(o), false),
                        "strided_copy");
  }
  hold_free(&h);
  return st;
}

/* X[i]@GRAD = Out[i]@GRAD summed over every dim but i; 0 where Out[i] has no gradient. */
pd_status pd_kernel_meshgrid_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x[MAXD];
  int n;
  int64_t od[MAXD];
  pd_status st = meshgrid_dims(ctx, x, &n, od);
  if (st) return st;
  hold h;
  hold_init(&h);
  for (int i = 0; i < n && !st; i++) {
    pd_tensor *dx;
    const pd_tensor *g = in_if_set(ctx, "Out@GRAD", i);
    int64_t xd[MAXD];
    if ((st = out_at(ctx, "X@GRAD", i, false, &dx)) || !dx) continue;
    if ((st = want_float(ctx, "X", x[i])) || (st = unalias(ctx, &h, dx, &x[i]))) break;
    if (g && ((st = want_grad_shape(ctx, "Out@GRAD", g, n, od, x[i]->dtype)) ||
              (st = unalias(ctx, &h, dx, &g))))
      break;
    if ((st = resize(ctx, dx, x[i]->dtype, x[i]->ndims, x[i]->dims, x[i]))) break;
    meshgrid_in_dims(n, od, i, xd);
    if (!g) st = k_check(ctx, ctx->k->fill(dx->dtype, od[i], pd_tensor_data(dx), 0.0), dx->dtype);
    else if (od[i]) st = sum_to(ctx, dx->dtype, n, od, xd, pd_tensor_data(g), pd_tensor_data(dx),
                               1.0);
  }
  hold_free(&h);
  return st;
}

/* ================================================================ gather */

/* gather: Out = X's slices Index[i] along axis (the Axis tensor, else the attribute); Index is
 * int32 or int64 with 1 dim (or [n, 1]). */
pd_status pd_infer_gather(pd_infer_ctx *c) {
  const pd_var_desc *x, *ix;
  pd_infer_dims d, di, out;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st || (st = pd_infer_in(c, "Index", 0, &ix, &di))) return st;
  if (ix->dtype != PD_INT32 && ix->dtype != PD_INT64)
    return pd_infer_fail(c, PD_ETYPE, "Index must hold int32 or int64 values, got %s",
                         pd_dtype_name(ix->dtype));
  if (di.n >= 0 && di.n != 1 && !(di.n == 2 && (di.d[1] == 1 || di.d[1] == -1)))
    return pd_infer_fail(c, PD_ESHAPE, "Index %s must have 1 dim (or be [n, 1])",
                         pd_infer_dims_str(&di, s));
  if (d.n < 0) return pd_infer_set_out(c, "Out", 0, &d, x->dtype, 0);
  if (pd_infer_nin(c, "Axis") > 0) {
    out = pd_infer_dims_unknown(d.n);
  } else {
    int axis;
    if ((st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X", &d, &axis))) return st;
    out = d;
    out.d[axis] = di.n < 0 ? -1 : di.d[0];
  }
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* X viewed as [pre, n, post] around the gather axis; the indices, checked against n. */
static pd_status gather_plan(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *ix,
                             int *axis, int64_t *pre, int64_t *n, int64_t *post, int64_t *m) {
  char s[DIMS_BUF], si[DIMS_BUF];
  int64_t a = pd_ctx_attr_int(ctx, "axis");
  const pd_tensor *at = in_if_set(ctx, "Axis", 0);
  pd_status st;
  if (at && (st = int_scalar_in(ctx, "Axis", at, &a))) return st;
  if ((st = norm_axis(ctx, "axis", a, "X", x, axis))) return st;
  if (!is_int(ix->dtype))
    return pd_ctx_fail(ctx, PD_ETYPE, "Index must hold int32 or int64 values, got %s",
                       pd_dtype_name(ix->dtype));
  if (ix->ndims != 1 && !(ix->ndims == 2 && ix->dims[1] == 1))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Index %s must have 1 dim (or be [n, 1])",
                       shape_str(ix, si));
  split_at(x, *axis, pre, n, post);
  *m = ix->dims[0];
  for (int64_t i = 0; i < *m; i++) {
    int64_t v = elem_i(ix, i);
    if (v < 0 || v >= *n)
      return pd_ctx_fail(ctx, PD_EINVAL, "Index[%" PRId64 "] = %" PRId64 " is out of range for "
                         "dim %d of X %s (expected 0 to %" PRId64 ")", i, v, *axis,
                         shape_str(x, s), *n - 1);
  }
  return PD_OK;
}

/* The rows Out takes of X viewed as [pre n, post]: p n + Index[i] for row p m + i, made in
 * *host (to pd_free) and returned at the op's place (*tmp: a scratch copy there, to free;
 * NULL on failure, with *st). */
static const int64_t *gather_ids(const pd_exec_ctx *ctx, const pd_tensor *ix, int64_t pre,
                                 int64_t n, int64_t m, int64_t **host, void **tmp,
                                 pd_status *st) {
  *tmp = NULL;
  size_t bytes = sizeof **host * (size_t)(pre * m + 1);
  if (!(*host = pd_malloc(bytes))) {
    *st = nomem(ctx);
    return NULL;
  }
  for (int64_t p = 0; p < pre; p++)
    for (int64_t i = 0; i < m; i++) (*host)[p * m + i] = p * n + elem_i(ix, i);
  return pd_ctx_at_place(ctx, *host, bytes, tmp, st);
}

pd_status pd_kernel_gather(pd_exec_ctx *ctx) {
  const pd_tensor *x, *ix;
  pd_tensor *out;
  pd_status st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = in_at(ctx, "Index", 0, true, &ix))) return st;
  int axis;
  int64_t pre, n, post, m;
  if ((st = gather_plan(ctx, x, ix, &axis, &pre, &n, &post, &m)) ||
      (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  int64_t od[MAXD];
  memcpy(od, x->dims, sizeof(int64_t) * (size_t)x->ndims);
  od[axis] = m;
  hold h;
  hold_init(&h);
  void *tmp = NULL;
  int64_t *host = NULL;
  const int64_t *ids = NULL;
  if (!(st = unalias(ctx, &h, out, &x)) && !(st = unalias(ctx, &h, out, &ix)) &&
      !(st = resize(ctx, out, x->dtype, x->ndims, od, NULL)) &&
      (ids = gather_ids(ctx, ix, pre, n, m, &host, &tmp, &st)))
    st = k_check(ctx, ctx->k->copy_rows(x->dtype, pre * m, post, pd_tensor_data(x), ids,
                                        pd_tensor_data(out), NULL),
                 x->dtype);
  pd_ctx_scratch_free(ctx, tmp);
  pd_free(host);
  hold_free(&h);
  return st;
}

/* gather_grad: X@GRAD = 0 plus each Out@GRAD slice added at its index (repeats add up). */
pd_status pd_kernel_gather_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x, *ix, *dy;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = in_at(ctx, "Index", 0, true, &ix)) ||
      (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) || (st = want_float(ctx, "Out@GRAD", dy)))
    return st;
  int axis;
  int64_t pre, n, post, m, od[MAXD];
  if ((st = gather_plan(ctx, x, ix, &axis, &pre, &n, &post, &m))) return st;
  memcpy(od, x->dims, sizeof(int64_t) * (size_t)x->ndims);
  od[axis] = m;
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, od, dy->dtype))) return st;
  hold h;
  hold_init(&h);
  void *tmp = NULL;
  int64_t *host = NULL;
  const int64_t *ids = NULL;
  if (!(st = unalias(ctx, &h, dx, &dy)) && !(st = unalias(ctx, &h, dx, &ix)) &&
      !(st = unalias(ctx, &h, dx, &x)) && !(st = resize(ctx, dx, dy->dtype, x->ndims, x->dims, x)) &&
      (ids = gather_ids(ctx, ix, pre, n, m, &host, &tmp, &st))) {
    pd_dtype dt = dy->dtype;
    st = ctx->k->fill(dt, pd_tensor_numel(dx), pd_tensor_data(dx), 0.0);
    if (!st && pre * m > 0 && post > 0)
      st = ctx->k->scatter_add_rows(dt, pre * n, post, pd_tensor_data(dx), pre * m, ids, -1,
                                    pd_tensor_data(dy));
    st = k_check(ctx, st, dt);
  }
  pd_ctx_scratch_free(ctx, tmp);
  pd_free(host);
  hold_free(&h);
  return st;
}

/* ================================================================ where */

/* where: Out = X where Condition, else Y; the three broadcast against each other as numpy does
 * (Fluid's where takes equal shapes, which is the case of no broadcasting). */
pd_status pd_infer_where(pd_infer_ctx *c) {
  const pd_var_desc *cv, *x, *y;
  pd_infer_dims dc, dx, dy, xy, out;
  char sc[PD_DIMS_BUF], sx[PD_DIMS_BUF], sy[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "Condition", 0, &cv, &dc)) || (st = pd_infer_in(c, "X", 0, &x, &dx)) ||
      (st = pd_infer_in(c, "Y", 0, &y, &dy)))
    return st;
  if (cv->dtype != PD_BOOL)
    return pd_infer_fail(c, PD_ETYPE, "Condition must hold bool values, got %s",
                         pd_dtype_name(cv->dtype));
  if ((st = pd_infer_same_dtype(c, "X", x->dtype, "Y", y->dtype))) return st;
  if (dc.n < 0 || dx.n < 0 || dy.n < 0) {
    out = pd_infer_dims_unknown(-1);
  } else if (!pd_infer_broadcast_dims(&dx, &dy, &xy) || !pd_infer_broadcast_dims(&xy, &dc, &out)) {
    return pd_infer_fail(c, PD_ESHAPE, "Condition %s, X %s and Y %s do not broadcast together",
                         pd_infer_dims_str(&dc, sc), pd_infer_dims_str(&dx, sx),
                         pd_infer_dims_str(&dy, sy));
  }
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* The broadcast dims of the three operands (numpy's rule), each padded to the out rank. */
static pd_status where_plan(const pd_exec_ctx *ctx, const pd_tensor *const *ts, int *nd,
                            int64_t *od, int64_t pads[3][MAXD]) {
  static const char *const names[3] = {"Condition", "X", "Y"};
  char s[3][DIMS_BUF];
  int n = 0;
  for (int i = 0; i < 3; i++)
    if (ts[i]->ndims > n) n = ts[i]->ndims;
  for (int i = 0; i < 3; i++) pad_dims(ts[i]->ndims, ts[i]->dims, n, pads[i]);
  for (int k = 0; k < n; k++) {
    int64_t d = 1;
    for (int i = 0; i < 3; i++) {
      int64_t v = pads[i][k];
      if (v == d || v == 1) continue;
      if (d != 1)
        return pd_ctx_fail(ctx, PD_ESHAPE, "%s %s, %s %s and %s %s do not broadcast together",
                           names[0], shape_str(ts[0], s[0]), names[1], shape_str(ts[1], s[1]),
                           names[2], shape_str(ts[2], s[2]));
      d = v;
    }
    od[k] = d;
  }
  *nd = n;
  return PD_OK;
}

static pd_status where_inputs(const pd_exec_ctx *ctx, const pd_tensor **ts) {
  pd_status st;
  if ((st = in_at(ctx, "Condition", 0, true, &ts[0])) || (st = in_at(ctx, "X", 0, true, &ts[1])) ||
      (st = in_at(ctx, "Y", 0, true, &ts[2])) || (st = want_same_dtype(ctx, "X", ts[1], "Y", ts[2])))
    return st;
  if (ts[0]->dtype != PD_BOOL)
    return pd_ctx_fail(ctx, PD_ETYPE, "Condition must hold bool values, got %s",
                       pd_dtype_name(ts[0]->dtype));
  return PD_OK;
}

/* Strides of an operand of dims pad (padded to rank nd) read over out's dims: 0 along its dims
 * of size 1 (broadcast). */
static void bcast_strides(int nd, const int64_t *pad, int64_t *str) {
  strides_of(nd, pad, str);
  for (int k = 0; k < nd; k++)
    if (pad[k] == 1) str[k] = 0;
}

pd_status pd_kernel_where(pd_exec_ctx *ctx) {
  const pd_tensor *ts[3];
  pd_tensor *out;
  pd_status st = where_inputs(ctx, ts);
  int nd;
  int64_t od[MAXD], pads[3][MAXD], str[3][MAXD];
  if (st || (st = where_plan(ctx, ts, &nd, od, pads)) || (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  hold h;
  hold_init(&h);
  for (int i = 0; i < 3 && !st; i++) st = unalias(ctx, &h, out, &ts[i]);
  if (!st) st = resize(ctx, out, ts[1]->dtype, nd, od, NULL);
  if (!st) {
    for (int i = 0; i < 3; i++) bcast_strides(nd, pads[i], str[i]);
    st = pd_ctx_check(ctx, ctx->k->where(ts[1]->dtype, nd, od, str[0], pd_tensor_data(ts[0]),
                                         str[1], pd_tensor_data(ts[1]), str[2],
                                         pd_tensor_data(ts[2]), pd_tensor_data(out)),
                      "where");
  }
  hold_free(&h);
  return st;
}

/* where_grad: X@GRAD = Out@GRAD where Condition (else 0), Y@GRAD = Out@GRAD where not, each
 * summed over the dims it was broadcast along. */
pd_status pd_kernel_where_grad(pd_exec_ctx *ctx) {
  pd_tensor *g[3] = {NULL, NULL, NULL};
  const pd_tensor *ts[3], *dy;
  pd_status st;
  if ((st = out_at(ctx, "X@GRAD", 0, false, &g[1])) || (st = out_at(ctx, "Y@GRAD", 0, false, &g[2])))
    return st;
  if (!g[1] && !g[2]) return PD_OK;
  int nd;
  int64_t od[MAXD], pads[3][MAXD], cstr[MAXD], gstr[MAXD], zstr[MAXD] = {0};
  if ((st = where_inputs(ctx, ts)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = want_float(ctx, "Out@GRAD", dy)) || (st = where_plan(ctx, ts, &nd, od, pads)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, nd, od, ts[1]->dtype)))
    return st;
  pd_dtype dt = dy->dtype;
  int64_t n = pd_k_numel(nd, od);
  hold h;
  hold_init(&h);
  for (int i = 1; i < 3 && !st; i++)
    for (int k = 0; k < 3 && g[i] && !st; k++) st = unalias(ctx, &h, g[i], &ts[k]);
  for (int i = 1; i < 3 && !st; i++)
    if (g[i]) st = unalias(ctx, &h, g[i], &dy);
  scalar zero = make_scalar(dt, 0.0);
  void *ztmp = NULL, *masked = NULL;
  const void *zp = NULL;
  if (st || !(zp = pd_ctx_at_place(ctx, &zero, sizeof zero, &ztmp, &st)) ||
      !(masked = pd_ctx_scratch(ctx, (size_t)n * pd_dtype_size(dt), &st)))
    goto done;
  bcast_strides(nd, pads[0], cstr);
  strides_of(nd, od, gstr);
  for (int i = 1; i < 3 && !st; i++) {
    if (!g[i] || (st = resize(ctx, g[i], dt, ts[i]->ndims, ts[i]->dims, ts[i]))) continue;
    /* dOut where the condition picks this operand, 0 elsewhere; then summed to its shape. */
    const void *cx = i == 1 ? pd_tensor_data(dy) : zp, *cy = i == 1 ? zp : pd_tensor_data(dy);
    st = pd_ctx_check(ctx, ctx->k->where(dt, nd, od, cstr, pd_tensor_data(ts[0]),
                                         i == 1 ? gstr : zstr, cx, i == 1 ? zstr : gstr, cy,
                                         masked),
                      "where");
    if (!st) st = sum_to(ctx, dt, nd, od, pads[i], masked, pd_tensor_data(g[i]), 1.0);
  }
done:
  pd_ctx_scratch_free(ctx, masked);
  pd_ctx_scratch_free(ctx, ztmp);
  hold_free(&h);
  return st;
}

/* ================================================================ clip */

/* clip: Out = min(max(X, min), max), with the Min and Max tensors in place of the attributes
 * when given. */
pd_status pd_infer_clip(pd_infer_ctx *c) {
  if (pd_infer_nin(c, "Min") == 0 && pd_infer_nin(c, "Max") == 0) {
    double lo = pd_infer_attr_float(c, "min"), hi = pd_infer_attr_float(c, "max");
    if (!(lo <= hi))
      return pd_infer_fail(c, PD_EINVAL, "min %g is greater than max %g", lo, hi);
  }
  return pd_infer_same_as_x(c, -1);
}

static pd_status clip_bounds(const pd_exec_ctx *ctx, double *lo, double *hi) {
  const pd_tensor *t;
  pd_status st;
  *lo = pd_ctx_attr_float(ctx, "min");
  *hi = pd_ctx_attr_float(ctx, "max");
  if ((t = in_if_set(ctx, "Min", 0)) && (st = scalar_in(ctx, "Min", t, lo))) return st;
  if ((t = in_if_set(ctx, "Max", 0)) && (st = scalar_in(ctx, "Max", t, hi))) return st;
  if (!(*lo <= *hi)) return pd_ctx_fail(ctx, PD_EINVAL, "min %g is greater than max %g", *lo, *hi);
  return PD_OK;
}

pd_status pd_kernel_clip(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  double lo, hi;
  pd_status st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = want_float(ctx, "X", x)) ||
      (st = clip_bounds(ctx, &lo, &hi)) || (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if ((!in_place(out, x, dt, x->ndims, x->dims) && (st = unalias(ctx, &h, out, &x))) ||
      (st = resize_like(ctx, out, x, x))) {
    hold_free(&h);
    return st;
  }
  /* max(x, min), then min(that, max), with both bounds where the op computes. */
  scalar b[2] = {make_scalar(dt, lo), make_scalar(dt, hi)};
  void *tmp = NULL, *o = pd_tensor_data(out);
  const char *bp = pd_ctx_at_place(ctx, b, sizeof b, &tmp, &st);
  if (bp) {
    st = ctx->k->binary(PD_K_MAX, dt, x->ndims, x->dims, pd_tensor_data(x), 0, NULL, bp, -1, o);
    if (!st)
      st = ctx->k->binary(PD_K_MIN, dt, x->ndims, x->dims, o, 0, NULL, bp + sizeof b[0], -1, o);
    pd_ctx_scratch_free(ctx, tmp);
    st = k_check(ctx, st, dt);
  }
  hold_free(&h);
  return st;
}

/* clip_grad: X@GRAD = Out@GRAD where min <= X <= max, else 0: the mask (two compares and an
 * and) cast to X's dtype, times Out@GRAD. */
pd_status pd_kernel_clip_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x, *dy;
  double lo, hi;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "Out@GRAD", dy, "X", x)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, x->dims, x->dtype)) ||
      (st = clip_bounds(ctx, &lo, &hi)))
    return st;
  pd_dtype dt = x->dtype;
  int64_t n = pd_tensor_numel(x);
  int nd = x->ndims;
  const int64_t *d = x->dims;
  scalar b[2] = {make_scalar(dt, lo), make_scalar(dt, hi)};
  void *tmp = NULL;
  uint8_t *mask = NULL;
  hold h;
  hold_init(&h);
  const char *bp = NULL;
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &dy)) ||
      (st = resize_like(ctx, dx, x, x)) || !(bp = pd_ctx_at_place(ctx, b, sizeof b, &tmp, &st)) ||
      !(mask = pd_ctx_scratch(ctx, (size_t)(3 * n + 1), &st)))
    goto done;
  const void *xd = pd_tensor_data(x);
  void *g = pd_tensor_data(dx);
  st = ctx->k->compare(PD_K_GE, dt, nd, d, xd, 0, NULL, bp, -1, mask);
  if (!st) st = ctx->k->compare(PD_K_LE, dt, nd, d, xd, 0, NULL, bp + sizeof b[0], -1, mask + n);
  if (!st) st = ctx->k->logical(PD_K_AND, nd, d, mask, nd, d, mask + n, -1, mask + 2 * n);
  if (!st) st = ctx->k->cast(PD_BOOL, mask + 2 * n, dt, g, n);
  if (!st) st = ctx->k->binary(PD_K_MUL, dt, nd, d, g, nd, d, pd_tensor_data(dy), -1, g);
  st = k_check(ctx, st, dt);
done:
  pd_ctx_scratch_free(ctx, mask);
  pd_ctx_scratch_free(ctx, tmp);
  hold_free(&h);
  return st;
}

/* ================================================================ one_hot, one_hot_v2 */

/* The dtype attribute of one_hot: one the kernel writes. */
static bool one_hot_dtype(int64_t t) {
  return t == PD_FP32 || t == PD_FP64 || t == PD_INT32 || t == PD_INT64;
}

/* Out: one_hot: X [..., 1] (rank 2 or more) with its last dim depth; one_hot_v2: X's dims and
 * depth; depth unknown (-1) when the depth_tensor input gives it. Type `dtype`, X's LoD. */
pd_status pd_infer_one_hot(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  if (x->dtype != PD_INT32 && x->dtype != PD_INT64)
    return pd_infer_fail(c, PD_ETYPE, "X must hold int32 or int64 ids, got %s",
                         pd_dtype_name(x->dtype));
  int64_t t = pd_infer_attr_int(c, "dtype"), depth = pd_infer_attr_int(c, "depth");
  if (!one_hot_dtype(t))
    return pd_infer_fail(c, PD_EINVAL, "dtype %" PRId64 " is not one of float32 (%d), float64 "
                         "(%d), int32 (%d), int64 (%d)", t, PD_FP32, PD_FP64, PD_INT32, PD_INT64);
  if (pd_infer_nin(c, "depth_tensor") > 0) {
    depth = -1;
  } else if (depth < 1) {
    return pd_infer_fail(c, PD_EINVAL, "depth must be at least 1 when no depth_tensor gives it, "
                         "got %" PRId64, depth);
  }
  if (d.n < 0) {
    d = pd_infer_dims_unknown(-1);
  } else if (c->def->karg == PD_OPV_ONE_HOT) {
    if (d.n < 2 || d.d[d.n - 1] > 1 || d.d[d.n - 1] == 0)
      return pd_infer_fail(c, PD_ESHAPE, "X must be [..., 1] with at least 2 dims, got %s",
                           pd_infer_dims_str(&d, s));
    d.d[d.n - 1] = depth;
  } else {
    if (d.n >= PD_MAX_RANK)
      return pd_infer_fail(c, PD_ESHAPE, "X %s has too many dims for one more",
                           pd_infer_dims_str(&d, s));
    d.d[d.n++] = depth;
  }
  return pd_infer_set_out(c, "Out", 0, &d, (pd_dtype)t, x->lod_level);
}

/* one_hot, one_hot_v2: each id i of X (row-major) becomes a row of depth zeros with a one at i
 * (Out as the shape function says). An id outside [0, depth) is an error, or, with
 * allow_out_of_range, a row of zeros. depth is the depth_tensor input's (one int) when bound. */
pd_status pd_kernel_one_hot(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dt_in;
  pd_tensor *out;
  pd_status st;
  char s[DIMS_BUF];
  if ((st = in1(ctx, "X", &x)) || (st = in_opt(ctx, "depth_tensor", &dt_in)) ||
      (st = out1(ctx, "Out", &out)))
    return st;
  if (!is_int(x->dtype))
    return pd_ctx_fail(ctx, PD_ETYPE, "X must hold int32 or int64 ids, got %s",
                       pd_dtype_name(x->dtype));
  int64_t t = pd_ctx_attr_int(ctx, "dtype"), depth = pd_ctx_attr_int(ctx, "depth");
  if (!one_hot_dtype(t))
    return pd_ctx_fail(ctx, PD_EINVAL, "dtype %" PRId64 " is not one of float32, float64, int32, "
                       "int64", t);
  if (dt_in && (st = int_scalar_in(ctx, "depth_tensor", dt_in, &depth))) return st;
  if (depth < 1)
    return pd_ctx_fail(ctx, PD_EINVAL, "depth must be at least 1, got %" PRId64, depth);
  int64_t od[MAXD];
  int ond = x->ndims;
  memcpy(od, x->dims, sizeof(int64_t) * (size_t)x->ndims);
  if (ctx->def->karg == PD_OPV_ONE_HOT) {
    if (x->ndims < 2 || x->dims[x->ndims - 1] != 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "X must be [..., 1] with at least 2 dims, got %s",
                         shape_str(x, s));
    od[ond - 1] = depth;
  } else {
    if (ond >= MAXD)
      return pd_ctx_fail(ctx, PD_ESHAPE, "X %s has too many dims for one more", shape_str(x, s));
    od[ond++] = depth;
  }
  int64_t n = pd_tensor_numel(x);
  if (n > 0 && depth > INT64_MAX / n)
    return pd_ctx_fail(ctx, PD_EINVAL, "X %s with depth %" PRId64 " is too large",
                       shape_str(x, s), depth);
  bool lenient = pd_ctx_attr_bool(ctx, "allow_out_of_range");
  for (int64_t i = 0; i < n && !lenient; i++) {
    int64_t id = elem_i(x, i);
    if (id < 0 || id >= depth)
      return pd_ctx_fail(ctx, PD_EINVAL, "id %" PRId64 " (element %" PRId64 " of X %s) is "
                         "outside [0, %" PRId64 ")", id, i, shape_str(x, s), depth);
  }
  hold h;
  hold_init(&h);
  pd_dtype odt = (pd_dtype)t;
  if ((st = unalias(ctx, &h, out, &x)) || (st = resize(ctx, out, odt, ond, od, x)) ||
      (st = k_check(ctx, ctx->k->fill(odt, n * depth, pd_tensor_data(out), 0.0), odt)))
    goto done;
  void *o = pd_tensor_data(out);
  for (int64_t i = 0; i < n; i++) {
    int64_t id = elem_i(x, i), at = i * depth + id;
    if (id < 0 || id >= depth) continue;
    switch (odt) {
      case PD_FP32: ((float *)o)[at] = 1.0f; break;
      case PD_FP64: ((double *)o)[at] = 1.0; break;
      case PD_INT32: ((int32_t *)o)[at] = 1; break;
      default: ((int64_t *)o)[at] = 1; break;
    }
  }
done:
  hold_free(&h);
  return st;
}
