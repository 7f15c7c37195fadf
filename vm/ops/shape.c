/* shape.c -- the ops that rearrange a tensor without computing: concat, split, stack, reshape2,
 * transpose2, flatten_contiguous_range, flatten2, squeeze2 and unsqueeze2 (with Fluid's XShape)
 * and their Fluid 1.x versions without it (reshape, transpose, flatten, squeeze, unsqueeze: the
 * same shape functions and kernels, which leave an unbound XShape alone), the channel shuffles
 * (pixel_shuffle, shuffle_channel, channel_shuffle: transposes of X seen in more dims), and
 * shape: their shape functions, kernels and gradient kernels. */
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

/* concat: the inputs agree in dtype, rank, and every dim but `axis`, along which Out is their
 * sum. With AxisTensor the axis is only known at run time, and so are Out's dims. Out takes
 * X[0]'s LoD. */
pd_status pd_infer_concat(pd_infer_ctx *c) {
  const pd_var_desc *first;
  pd_infer_dims out, d0;
  char s0[PD_DIMS_BUF], si[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &first, &d0);
  if (st) return st;
  bool axis_known = pd_infer_nin(c, "AxisTensor") == 0;
  int axis = 0;
  if (d0.n >= 0 && axis_known &&
      (st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X[0]", &d0, &axis)))
    return st;
  out = axis_known ? d0 : pd_infer_dims_unknown(d0.n);
  for (int i = 1; i < pd_infer_nin(c, "X"); i++) {
    const pd_var_desc *v;
    pd_infer_dims d;
    if ((st = pd_infer_in(c, "X", i, &v, &d))) return st;
    if (v->dtype != first->dtype)
      return pd_infer_fail(c, PD_ETYPE, "X[%d] has dtype %s but X[0] has dtype %s", i,
                           pd_dtype_name(v->dtype), pd_dtype_name(first->dtype));
    if (d0.n < 0) continue;
    if (d.n < 0) {
      if (axis_known) out.d[axis] = -1;
      continue;
    }
    if (d.n != d0.n)
      return pd_infer_fail(c, PD_ESHAPE, "cannot concatenate %s and %s: X[%d] has %d dims but X[0] "
                           "has %d", pd_infer_dims_str(&d0, s0), pd_infer_dims_str(&d, si), i, d.n,
                           d0.n);
    if (!axis_known) continue;
    for (int k = 0; k < d.n; k++) {
      if (k == axis) {
        out.d[k] = pd_infer_dim_add(out.d[k], d.d[k]);
      } else if (!pd_infer_dim_compatible(out.d[k], d.d[k])) {
        return pd_infer_fail(c, PD_ESHAPE, "cannot concatenate %s and %s along axis %d: they differ "
                             "in dim %d", pd_infer_dims_str(&d0, s0), pd_infer_dims_str(&d, si),
                             axis, k);
      } else {
        out.d[k] = pd_infer_dim_merge(out.d[k], d.d[k]);
      }
    }
  }
  return pd_infer_set_out(c, "Out", 0, &out, first->dtype, first->lod_level);
}

/* split: X cut along `axis` into `num` equal parts or into parts of the sizes in `sections`
 * (one of which may be -1: the rest), one per Out var. The LoD survives unless axis is 0. */
pd_status pd_infer_split(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF], list[PD_LIST_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int nout = pd_infer_nout(c, "Out");
  int64_t num = pd_infer_attr_int(c, "num");
  int nsec = pd_infer_attr_len(c, "sections");
  if (num < 0) return pd_infer_fail(c, PD_EINVAL, "num must not be negative, got %" PRId64, num);
  if (num > 0 && nsec > 0) return pd_infer_fail(c, PD_EINVAL, "give num or sections, not both");
  if (num == 0 && nsec == 0) return pd_infer_fail(c, PD_EINVAL, "give num or sections");
  int64_t parts = num > 0 ? num : nsec;
  if (parts != nout)
    return pd_infer_fail(c, PD_EINVAL, "%" PRId64 " %s but %d output%s", parts,
                         num > 0 ? "parts (num)" : "sections", nout, nout == 1 ? "" : "s");
  bool axis_known = pd_infer_nin(c, "AxisTensor") == 0;
  int axis = 0;
  if (d.n >= 0 && axis_known &&
      (st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X", &d, &axis)))
    return st;
  int64_t dim = d.n >= 0 && axis_known ? d.d[axis] : -1;
  /* The sections: their known total and where the -1 is. */
  int rest = -1;
  int64_t known = 0;
  for (int i = 0; i < nsec; i++) {
    int64_t v = pd_infer_attr_ints_at(c, "sections", i);
    if (v == -1 && rest >= 0)
      return pd_infer_fail(c, PD_EINVAL, "sections %s have more than one -1",
                           pd_infer_attr_ints_str(c, "sections", list));
    if (v < -1)
      return pd_infer_fail(c, PD_EINVAL, "sections %s have a negative size",
                           pd_infer_attr_ints_str(c, "sections", list));
    if (v == -1) rest = i;
    else known = pd_infer_dim_add(known, v);
  }
  bool runtime_sections = pd_infer_nin(c, "SectionsTensorList") > 0;
  if (num > 0 && dim >= 0 && dim % num != 0)
    return pd_infer_fail(c, PD_ESHAPE, "dim %d of X %s (%" PRId64 ") does not split into %" PRId64
                         " equal parts", axis, pd_infer_dims_str(&d, s), dim, num);
  if (nsec > 0 && dim >= 0 && !runtime_sections && known >= 0) {
    if (rest < 0 && known != dim)
      return pd_infer_fail(c, PD_ESHAPE, "sections %s add up to %" PRId64 " but dim %d of X %s is %"
                           PRId64, pd_infer_attr_ints_str(c, "sections", list), known, axis,
                           pd_infer_dims_str(&d, s), dim);
    if (rest >= 0 && known > dim)
      return pd_infer_fail(c, PD_ESHAPE, "sections %s add up to more than dim %d of X %s (%" PRId64
                           ")", pd_infer_attr_ints_str(c, "sections", list), axis,
                           pd_infer_dims_str(&d, s), dim);
  }
  for (int i = 0; i < nout; i++) {
    pd_infer_dims o = d.n >= 0 && !axis_known ? pd_infer_dims_unknown(d.n) : d;
    if (d.n >= 0 && axis_known) {
      int64_t size = -1;
      if (num > 0) size = dim >= 0 ? dim / num : -1;
      else if (!runtime_sections && i != rest) size = pd_infer_attr_ints_at(c, "sections", i);
      else if (!runtime_sections && dim >= 0 && known >= 0) size = dim - known;
      o.d[axis] = size;
    }
    int lod = d.n >= 0 && axis_known && axis != 0 ? x->lod_level : 0;
    if ((st = pd_infer_set_out(c, "Out", i, &o, x->dtype, lod))) return st;
  }
  return PD_OK;
}

/* XShape of reshape2 and transpose2: [0] + X's dims, so that the backward pass knows X's shape
 * without keeping X alive (Fluid's convention). */
static pd_status set_xshape(pd_infer_ctx *c, const pd_var_desc *x, const pd_infer_dims *d) {
  pd_infer_dims xs = {.n = d->n < 0 ? -1 : d->n + 1, .d = {0}};
  if (d->n >= PD_MAX_RANK) xs = pd_infer_dims_unknown(-1);
  for (int i = 0; d->n >= 0 && d->n < PD_MAX_RANK && i < d->n; i++) xs.d[i + 1] = d->d[i];
  return pd_infer_set_out(c, "XShape", 0, &xs, x->dtype, 0);
}

/* reshape2: X's elements in `shape`, where 0 copies X's dim at that position and one -1 takes
 * what is left. A Shape or ShapeTensor input gives the shape at run time instead. */
pd_status pd_infer_reshape2(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, want, out;
  char sx[PD_DIMS_BUF], sw[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  want.n = pd_infer_attr_ints(c, "shape", want.d, PD_MAX_RANK);
  if (want.n > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "shape has %d dims; at most %d are supported", want.n,
                         PD_MAX_RANK);
  int nlist = pd_infer_nin(c, "ShapeTensor");
  if (nlist > 0 || pd_infer_nin(c, "Shape") > 0) {
    int rank = nlist > 0 ? nlist : want.n > 0 ? want.n : -1;
    if (nlist == 0) {
      pd_infer_dims sd;
      if ((st = pd_infer_in(c, "Shape", 0, NULL, &sd))) return st;
      if (sd.n == 1 && sd.d[0] >= 0) rank = (int)sd.d[0];
    }
    if (rank > PD_MAX_RANK)
      return pd_infer_fail(c, PD_EUNSUPPORTED, "the shape has %d dims; at most %d are supported",
                           rank, PD_MAX_RANK);
    out = pd_infer_dims_unknown(rank);
  } else {
    if (want.n == 0) return pd_infer_fail(c, PD_EINVAL, "shape is empty");
    int unk = -1;
    int64_t known = 1;
    bool all_known = true;
    out.n = want.n;
    for (int i = 0; i < want.n; i++) {
      int64_t w = want.d[i];
      if (w == -1) {
        if (unk >= 0)
          return pd_infer_fail(c, PD_EINVAL, "shape %s has more than one -1",
                               pd_infer_dims_str(&want, sw));
        unk = i;
        out.d[i] = -1;
        continue;
      }
      if (w < -1)
        return pd_infer_fail(c, PD_EINVAL, "shape %s has a negative dim other than -1",
                             pd_infer_dims_str(&want, sw));
      if (w == 0) {
        if (d.n < 0) {
          out.d[i] = -1;
          all_known = false;
          continue;
        }
        if (i >= d.n)
          return pd_infer_fail(c, PD_EINVAL, "shape %s copies dim %d (a 0) but X %s has only %d dims",
                               pd_infer_dims_str(&want, sw), i, pd_infer_dims_str(&d, sx), d.n);
        w = d.d[i];
      }
      out.d[i] = w;
      known = pd_infer_dim_mul(known, w);
      if (w < 0) all_known = false;
    }
    int64_t numel = pd_infer_dims_numel(&d);
    if (numel >= 0 && all_known && known >= 0) {
      if (unk >= 0) {
        if (known == 0 || numel % known != 0)
          return pd_infer_fail(c, PD_ESHAPE, "cannot reshape X %s (%" PRId64 " elements) to %s",
                               pd_infer_dims_str(&d, sx), numel, pd_infer_dims_str(&want, sw));
        out.d[unk] = numel / known;
      } else if (known != numel) {
        return pd_infer_fail(c, PD_ESHAPE, "cannot reshape X %s (%" PRId64 " elements) to %s (%" PRId64
                             " elements)", pd_infer_dims_str(&d, sx), numel,
                             pd_infer_dims_str(&want, sw), known);
      }
    }
  }
  bool same_rows = d.n > 0 && out.n > 0 && d.d[0] == out.d[0];
  if ((st = pd_infer_set_out(c, "Out", 0, &out, x->dtype, same_rows ? x->lod_level : 0))) return st;
  return set_xshape(c, x, &d);
}

/* transpose2: Out.dims[i] = X.dims[axis[i]]; axis must be a permutation of X's dims. */
pd_status pd_infer_transpose2(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out, axis;
  char sx[PD_DIMS_BUF], sa[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  axis.n = pd_infer_attr_ints(c, "axis", axis.d, PD_MAX_RANK);
  if (axis.n > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "axis has %d entries; at most %d are supported", axis.n,
                         PD_MAX_RANK);
  if (d.n < 0) {
    out = pd_infer_dims_unknown(axis.n);
  } else {
    bool seen[PD_MAX_RANK] = {false}, perm = axis.n == d.n;
    for (int i = 0; perm && i < axis.n; i++) {
      perm = axis.d[i] >= 0 && axis.d[i] < d.n && !seen[axis.d[i]];
      if (perm) seen[axis.d[i]] = true;
    }
    if (!perm)
      return pd_infer_fail(c, PD_EINVAL, "axis %s is not a permutation of the %d dims of X %s",
                           pd_infer_dims_str(&axis, sa), d.n, pd_infer_dims_str(&d, sx));
    out.n = d.n;
    for (int i = 0; i < d.n; i++) out.d[i] = d.d[axis.d[i]];
  }
  if ((st = pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0))) return st;
  return set_xshape(c, x, &d);
}

/* The axis of concat/split: AxisTensor when given, else the attribute. */
static pd_status op_axis(const pd_exec_ctx *ctx, const pd_tensor *x, const char *slot,
                         int *axis) {
  int64_t a = pd_ctx_attr_int(ctx, "axis");
  const pd_tensor *at = in_if_set(ctx, "AxisTensor", 0);
  if (at) {
    pd_status st = int_scalar_in(ctx, "AxisTensor", at, &a);
    if (st) return st;
  }
  return norm_axis(ctx, "axis", a, slot, x, axis);
}

/* Copy between a dense [pre, len, post] block and the slab [off, off + len) of the middle axis
 * of a [pre, total, post] tensor, through the backend's strided_copy (a run of len * post
 * elements a row, at the op's place): to_slab false reads the slab into dense. */
static pd_status slab_copy(const pd_exec_ctx *ctx, pd_dtype dt, void *dense, void *whole,
                           int64_t pre, int64_t total, int64_t off, int64_t len, int64_t post,
                           bool to_slab) {
  if (!pre || !len || !post) return PD_OK;
  int64_t od[2] = {pre, len * post}, str[2] = {total * post, 1};
  return k_check(ctx,
                 ctx->k->strided_copy(dt, 2, od, od, str, off * post, to_slab ? dense : whole,
                                      to_slab ? whole : dense, to_slab),
                 dt);
}

/* ================================================================ concat, split */

/* concat: the X tensors joined along axis (AxisTensor, else the attribute); they agree in dtype,
 * rank and every other dim. Out takes X[0]'s LoD (Fluid). */
pd_status pd_kernel_concat(pd_exec_ctx *ctx) {
  int n = pd_ctx_nin(ctx, "X");
  if (n < 1) return pd_ctx_fail(ctx, PD_EINVAL, "input X is not given");
  local_buf sp, ss, sd;
  const pd_tensor **xs = local_get(&sp, (size_t)n * sizeof *xs);
  int64_t *sizes = local_get(&ss, (size_t)n * sizeof *sizes);
  const void **ptrs = local_get(&sd, (size_t)n * sizeof *ptrs);
  pd_tensor tmp;
  pd_tensor_init(&tmp);
  pd_status st = PD_OK;
  char s0[DIMS_BUF], si[DIMS_BUF];
  if (!xs || !sizes || !ptrs) {
    st = nomem(ctx);
    goto out;
  }
  for (int i = 0; i < n && !st; i++) st = in_at(ctx, "X", i, true, &xs[i]);
  int axis = 0;
  if (st || (st = op_axis(ctx, xs[0], "X[0]", &axis))) goto out;
  int64_t dims[MAXD];
  int nd = xs[0]->ndims;
  memcpy(dims, xs[0]->dims, sizeof(int64_t) * (size_t)nd);
  dims[axis] = 0;
  for (int i = 0; i < n; i++) {
    const pd_tensor *x = xs[i];
    if (x->dtype != xs[0]->dtype) {
      st = pd_ctx_fail(ctx, PD_ETYPE, "X[%d] holds %s but X[0] holds %s", i,
                       pd_dtype_name(x->dtype), pd_dtype_name(xs[0]->dtype));
      goto out;
    }
    bool ok = x->ndims == nd;
    for (int k = 0; ok && k < nd; k++) ok = k == axis || x->dims[k] == xs[0]->dims[k];
    if (!ok) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "cannot concatenate X[0] %s and X[%d] %s along axis %d",
                       shape_str(xs[0], s0), i, shape_str(x, si), axis);
      goto out;
    }
    sizes[i] = x->dims[axis];
    dims[axis] += sizes[i];
  }
  pd_tensor *o;
  if ((st = out_at(ctx, "Out", 0, true, &o))) goto out;
  /* An X that is Out itself is read from a copy (every X bound to that var is one tensor). */
  for (int i = 0; i < n && !st; i++)
    if (xs[i] == o) {
      if (!pd_tensor_initialized(&tmp) && pd_tensor_copy(&tmp, xs[i])) st = nomem(ctx);
      xs[i] = &tmp;
    }
  if (st) goto out;
  pd_dtype dt = xs[0]->dtype;
  if ((st = resize(ctx, o, dt, nd, dims, xs[0]))) goto out;
  for (int i = 0; i < n; i++) ptrs[i] = pd_tensor_data(xs[i]);
  st = pd_ctx_check(ctx, ctx->k->concat(dt, n, (const void *const *)ptrs, sizes,
                                        prod(dims, 0, axis), prod(dims, axis + 1, nd),
                                        pd_tensor_data(o)),
                    "concat");
out:
  pd_tensor_release(&tmp);
  local_free(&sp);
  local_free(&ss);
  local_free(&sd);
  return st;
}

/* concat_grad: X@GRAD[i] = the slab of Out@GRAD that X[i] filled. */
pd_status pd_kernel_concat_grad(pd_exec_ctx *ctx) {
  int n = pd_ctx_nin(ctx, "X");
  const pd_tensor *dy, *x0;
  pd_status st;
  if (n < 1) return pd_ctx_fail(ctx, PD_EINVAL, "input X is not given");
  if ((st = in_at(ctx, "Out@GRAD", 0, true, &dy)) || (st = in_at(ctx, "X", 0, true, &x0))) return st;
  int axis;
  if ((st = op_axis(ctx, x0, "X[0]", &axis))) return st;
  int64_t dims[MAXD], total = 0;
  int nd = x0->ndims;
  memcpy(dims, x0->dims, sizeof(int64_t) * (size_t)nd);
  for (int i = 0; i < n; i++) {
    const pd_tensor *x;
    if ((st = in_at(ctx, "X", i, true, &x))) return st;
    if (x->ndims != nd) return pd_ctx_fail(ctx, PD_ESHAPE, "X[%d] and X[0] differ in rank", i);
    total += x->dims[axis];
  }
  dims[axis] = total;
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, nd, dims, x0->dtype))) return st;
  hold h;
  hold_init(&h);
  int64_t pre = prod(dims, 0, axis), post = prod(dims, axis + 1, nd), off = 0;
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *x = pd_ctx_in_at(ctx, "X", i);
    pd_tensor *dx;
    st = out_at(ctx, "X@GRAD", i, false, &dx);
    if (!st && dx) st = unalias(ctx, &h, dx, &dy);
    if (!st && dx) st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x);
    if (!st && dx)
      st = slab_copy(ctx, dy->dtype, pd_tensor_data(dx), pd_tensor_data(dy), pre, total, off,
                     x->dims[axis], post, false);
    off += x->dims[axis];
  }
  hold_free(&h);
  return st;
}

/* The part sizes of split along axis: num equal parts, or sections (SectionsTensorList when
 * given; one entry may be -1 for the rest). nout entries to sizes. */
static pd_status split_sizes(const pd_exec_ctx *ctx, const pd_tensor *x, int axis, int nout,
                             int64_t *sizes) {
  char s[DIMS_BUF], sl[LIST_BUF];
  int64_t dim = x->dims[axis], num = pd_ctx_attr_int(ctx, "num");
  if (num > 0) {
    if (num != nout)
      return pd_ctx_fail(ctx, PD_EINVAL, "num is %" PRId64 " but there are %d outputs", num,
                         nout);
    if (dim % num)
      return pd_ctx_fail(ctx, PD_ESHAPE, "dim %d of X %s (%" PRId64 ") does not split into %"
                         PRId64 " equal parts", axis, shape_str(x, s), dim, num);
    for (int i = 0; i < nout; i++) sizes[i] = dim / num;
    return PD_OK;
  }
  int nl = pd_ctx_nin(ctx, "SectionsTensorList"), ns;
  if (nl > 0) {
    ns = nl;
    for (int i = 0; i < nl && i < nout; i++) {
      const pd_tensor *t;
      pd_status st = in_at(ctx, "SectionsTensorList", i, true, &t);
      if (!st) st = int_scalar_in(ctx, "SectionsTensorList", t, &sizes[i]);
      if (st) return st;
    }
  } else {
    ns = pd_ctx_attr_ints(ctx, "sections", sizes, nout);
  }
  if (ns != nout)
    return pd_ctx_fail(ctx, PD_EINVAL, "%d sections but %d outputs", ns < 0 ? 0 : ns, nout);
  int rest = -1;
  int64_t known = 0;
  for (int i = 0; i < nout; i++) {
    if (sizes[i] == -1 && rest < 0) {
      rest = i;
      continue;
    }
    if (sizes[i] < 0)
      return pd_ctx_fail(ctx, PD_EINVAL, "sections %s have a negative size or more than one -1",
                         dims_str(nout < 32 ? nout : 32, sizes, sl, sizeof sl));
    known += sizes[i];
  }
  if (rest >= 0 && known <= dim) sizes[rest] = dim - known;
  else if (rest >= 0 || known != dim)
    return pd_ctx_fail(ctx, PD_ESHAPE, "sections %s do not add up to dim %d of X %s (%" PRId64 ")",
                       dims_str(nout < 32 ? nout : 32, sizes, sl, sizeof sl), axis, shape_str(x, s), dim);
  return PD_OK;
}

/* split: X cut along axis into the Out tensors. They keep X's LoD unless axis is 0 (Fluid). */
pd_status pd_kernel_split(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int axis, nout = pd_ctx_nout(ctx, "Out");
  if ((st = op_axis(ctx, x, "X", &axis))) return st;
  if (nout < 1) return pd_ctx_fail(ctx, PD_EINVAL, "output Out is not given");
  local_buf ss;
  int64_t *sizes = local_get(&ss, (size_t)nout * sizeof *sizes);
  if (!sizes) return nomem(ctx);
  hold h;
  hold_init(&h);
  if ((st = split_sizes(ctx, x, axis, nout, sizes))) goto out;
  for (int i = 0; i < nout && !st; i++) {
    pd_tensor *o;
    st = out_at(ctx, "Out", i, false, &o);
    if (!st && o) st = unalias(ctx, &h, o, &x);
  }
  int64_t pre = prod(x->dims, 0, axis), post = prod(x->dims, axis + 1, x->ndims), off = 0;
  for (int i = 0; i < nout && !st; i++) {
    pd_tensor *o;
    int64_t d[MAXD];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->ndims);
    d[axis] = sizes[i];
    if (!(st = out_at(ctx, "Out", i, false, &o)) && o &&
        !(st = resize(ctx, o, x->dtype, x->ndims, d, axis != 0 ? x : NULL)))
      st = slab_copy(ctx, x->dtype, pd_tensor_data(o), pd_tensor_data(x), pre, x->dims[axis], off,
                     sizes[i], post, false);
    off += sizes[i];
  }
out:
  hold_free(&h);
  local_free(&ss);
  return st;
}

/* split_grad: X@GRAD = the Out@GRAD parts joined along axis; a part without a gradient is 0. */
pd_status pd_kernel_split_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "X", 0, true, &x))) return st;
  int axis, nout = pd_ctx_nin(ctx, "Out@GRAD");
  if (nout < 1) nout = pd_ctx_nin(ctx, "Out");
  if ((st = op_axis(ctx, x, "X", &axis))) return st;
  if (nout < 1) return pd_ctx_fail(ctx, PD_EINVAL, "input Out@GRAD is not given");
  local_buf ss;
  int64_t *sizes = local_get(&ss, (size_t)nout * sizeof *sizes);
  if (!sizes) return nomem(ctx);
  /* X, or a gradient part, that is X@GRAD itself is read from a copy. */
  hold h;
  pd_tensor tg;
  hold_init(&h);
  pd_tensor_init(&tg);
  st = unalias(ctx, &h, dx, &x);
  for (int i = 0; i < nout && !st; i++)
    if (in_if_set(ctx, "Out@GRAD", i) == dx && !pd_tensor_initialized(&tg) && pd_tensor_copy(&tg, dx))
      st = nomem(ctx);
  if (!st) st = split_sizes(ctx, x, axis, nout, sizes);
  int64_t pre = prod(x->dims, 0, axis), post = prod(x->dims, axis + 1, x->ndims), off = 0;
  if (!st) st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x);
  /* A part without a gradient is 0: all of X@GRAD zeroed first, as bytes (bool's fill writes
   * zero bytes; 0 is all zero bytes in every dtype). */
  bool missing = false;
  for (int i = 0; i < nout; i++) missing = missing || !in_if_set(ctx, "Out@GRAD", i);
  if (!st && missing && pd_tensor_nbytes(dx))
    st = k_check(ctx, ctx->k->fill(PD_BOOL, (int64_t)pd_tensor_nbytes(dx), pd_tensor_data(dx), 0),
                 PD_BOOL);
  for (int i = 0; i < nout && !st; i++) {
    const pd_tensor *g = in_if_set(ctx, "Out@GRAD", i);
    if (g == dx) g = &tg;
    int64_t d[MAXD];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->ndims);
    d[axis] = sizes[i];
    if (g && (st = want_grad_shape(ctx, "Out@GRAD", g, x->ndims, d, x->dtype))) break;
    if (g)
      st = slab_copy(ctx, x->dtype, pd_tensor_data(g), pd_tensor_data(dx), pre, x->dims[axis],
                     off, sizes[i], post, true);
    off += sizes[i];
  }
  hold_free(&h);
  pd_tensor_release(&tg);
  local_free(&ss);
  return st;
}

/* ================================================================ reshape2, transpose2 */

/* XShape of reshape2/transpose2: [0] + X's dims, no data (Fluid's convention: the backward
 * pass reads X's shape from it). Left alone when X has the most dims a tensor may have. */
static pd_status write_xshape(const pd_exec_ctx *ctx, int nd, const int64_t *dims,
                              pd_dtype dt) {
  pd_tensor *xs;
  pd_status st = out_at(ctx, "XShape", 0, false, &xs);
  if (st || !xs || nd >= MAXD) return st;
  int64_t d[MAXD];
  d[0] = 0;
  memcpy(d + 1, dims, sizeof(int64_t) * (size_t)nd);
  return resize(ctx, xs, dt, nd + 1, d, NULL);
}

/* The forward X's shape in a gradient op: X when bound, else XShape without its leading 0. */
static pd_status fwd_x_shape(const pd_exec_ctx *ctx, int *nd, int64_t *dims, pd_dtype *dt,
                             const pd_tensor **x) {
  *x = in_if_set(ctx, "X", 0);
  if (*x) {
    *nd = (*x)->ndims;
    memcpy(dims, (*x)->dims, sizeof(int64_t) * (size_t)*nd);
    *dt = (*x)->dtype;
    return PD_OK;
  }
  const pd_tensor *xs = in_if_set(ctx, "XShape", 0);
  if (!xs || xs->ndims < 1)
    return pd_ctx_fail(ctx, PD_EINVAL, "needs X or XShape to know the shape of X");
  *nd = xs->ndims - 1;
  memcpy(dims, xs->dims + 1, sizeof(int64_t) * (size_t)*nd);
  *dt = xs->dtype;
  return PD_OK;
}

/* Out = X's elements in the shape d (as many elements), then XShape: the common end of
 * reshape2, flatten_contiguous_range, squeeze2 and unsqueeze2. Out is a copy (Fluid's
 * TensorCopy); it keeps X's LoD when its first dim is X's. Where X dies with this op (a
 * temporary of an inference run that nothing reads after it) and no other tensor shares its
 * storage, Out takes the storage instead of a copy: ERNIE's sixteen reshapes a run copied
 * 14 us each at one sequence of 128 tokens. */
static pd_status copy_reshaped(const pd_exec_ctx *ctx, const pd_tensor *x, int nd,
                               const int64_t *d) {
  int xnd = x->ndims;
  int64_t xdims[MAXD];
  pd_status st;
  memcpy(xdims, x->dims, sizeof(int64_t) * (size_t)xnd);
  bool keep_lod = nd > 0 && xnd > 0 && d[0] == xdims[0];
  pd_tensor *out;
  if ((st = out_at(ctx, "Out", 0, true, &out))) return st;
  if (out == x) {
    pd_tensor_reshape(out, nd, d);  /* same element count: cannot fail */
    if (!keep_lod) pd_tensor_clear_lod(out);
  } else if (x->storage && x->storage->refs == 1 && !x->storage->prep &&
             x->place == out->place && pd_ctx_in_dies(ctx, "X", 0)) {
    if ((st = pd_tensor_share(out, x))) return st;
    pd_tensor_reshape(out, nd, d);
    if (!keep_lod) pd_tensor_clear_lod(out);
  } else {
    if ((st = resize(ctx, out, x->dtype, nd, d, keep_lod ? x : NULL))) return st;
    if (pd_tensor_nbytes(x) &&
        (st = pd_ctx_copy(ctx, pd_tensor_data(out), pd_tensor_data(x), pd_tensor_nbytes(x))))
      return st;
  }
  return write_xshape(ctx, xnd, xdims, out->dtype);
}

/* reshape2: X's elements in a new shape: ShapeTensor (one tensor per dim), else Shape (a 1-D
 * tensor), else the attribute; 0 copies X's dim at that position, one -1 takes what is left.
 * Out is a copy (Fluid's TensorCopy); it keeps X's LoD when its first dim is X's. */
pd_status pd_kernel_reshape2(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int64_t want[MAXD], d[MAXD];
  int nd = 0;
  bool given;
  char sx[DIMS_BUF], sw[DIMS_BUF];
  if ((st = shape_from(ctx, "ShapeTensor", "Shape", "shape", want, &nd, &given))) return st;
  if (nd == 0 && !given) return pd_ctx_fail(ctx, PD_EINVAL, "shape is empty");
  int unk = -1;
  int64_t known = 1, n = pd_tensor_numel(x);
  for (int i = 0; i < nd; i++) {
    d[i] = want[i];
    if (want[i] == -1 && unk < 0) {
      unk = i;
      continue;
    }
    if (want[i] < 0)
      return pd_ctx_fail(ctx, PD_EINVAL, "shape %s may hold one -1 and no other negative dim",
                         dims_str(nd, want, sw, sizeof sw));
    if (want[i] == 0) {
      if (i >= x->ndims)
        return pd_ctx_fail(ctx, PD_EINVAL, "shape %s copies dim %d (a 0) but X %s has only %d "
                           "dims", dims_str(nd, want, sw, sizeof sw), i, shape_str(x, sx), x->ndims);
      d[i] = x->dims[i];
    }
    known *= d[i];
  }
  if (unk >= 0) {
    if (known == 0 || n % known)
      return pd_ctx_fail(ctx, PD_ESHAPE, "cannot reshape X %s (%" PRId64 " elements) to %s",
                         shape_str(x, sx), n, dims_str(nd, want, sw, sizeof sw));
    d[unk] = n / known;
  } else if (known != n) {
    return pd_ctx_fail(ctx, PD_ESHAPE, "cannot reshape X %s (%" PRId64 " elements) to %s (%"
                       PRId64 " elements)", shape_str(x, sx), n, dims_str(nd, want, sw, sizeof sw),
                       known);
  }
  return copy_reshaped(ctx, x, nd, d);
}

/* reshape2_grad (and that of flatten_contiguous_range, squeeze2, unsqueeze2): X@GRAD =
 * Out@GRAD in X's shape (and with X's LoD). */
pd_status pd_kernel_xshape_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *dy, *x;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  int nd;
  int64_t dims[MAXD];
  pd_dtype dt;
  char s1[DIMS_BUF], s2[DIMS_BUF];
  if ((st = in_at(ctx, "Out@GRAD", 0, true, &dy)) || (st = fwd_x_shape(ctx, &nd, dims, &dt, &x)))
    return st;
  if (pd_tensor_numel(dy) != pd_k_numel(nd, dims))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Out@GRAD %s has %" PRId64 " elements but X %s has %"
                       PRId64, shape_str(dy, s1), pd_tensor_numel(dy), dims_str(nd, dims, s2, sizeof s2),
                       pd_k_numel(nd, dims));
  if (dx == dy) {
    pd_tensor_reshape(dx, nd, dims);
    if (x && pd_tensor_copy_lod(dx, x)) return nomem(ctx);
    return PD_OK;
  }
  if ((st = resize(ctx, dx, dy->dtype, nd, dims, x))) return st;
  if (pd_tensor_nbytes(dy))
    return pd_ctx_copy(ctx, pd_tensor_data(dx), pd_tensor_data(dy), pd_tensor_nbytes(dy));
  return PD_OK;
}

/* The permutation of transpose2 (attribute axis) for a tensor of rank nd. */
static pd_status transpose_perm(const pd_exec_ctx *ctx, int nd, const int64_t *dims, int *perm) {
  int64_t a[MAXD];
  char sa[DIMS_BUF], sx[DIMS_BUF];
  int n = pd_ctx_attr_ints(ctx, "axis", a, MAXD);
  bool seen[MAXD] = {false}, ok = n == nd;
  for (int i = 0; ok && i < n; i++) {
    ok = a[i] >= 0 && a[i] < nd && !seen[a[i]];
    if (ok) {
      seen[a[i]] = true;
      perm[i] = (int)a[i];
    }
  }
  if (!ok)
    return pd_ctx_fail(ctx, PD_EINVAL, "axis %s is not a permutation of the %d dims of X %s",
                       dims_str(n < 0 ? 0 : n > MAXD ? MAXD : n, a, sa, sizeof sa), nd,
                       dims_str(nd, dims, sx, sizeof sx));
  return PD_OK;
}

/* transpose2: Out dim i is X dim axis[i]. */
pd_status pd_kernel_transpose2(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int perm[MAXD], nd = x->ndims;
  int64_t xdims[MAXD], od[MAXD];
  memcpy(xdims, x->dims, sizeof(int64_t) * (size_t)nd);
  if ((st = transpose_perm(ctx, nd, xdims, perm)) || (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  for (int i = 0; i < nd; i++) od[i] = xdims[perm[i]];
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) &&
      !(st = resize(ctx, out, x->dtype, nd, od, NULL)))
    st = pd_ctx_check(ctx, ctx->k->transpose(x->dtype, nd, xdims, perm, pd_tensor_data(x),
                                             pd_tensor_data(out)),
                      "transpose");
  hold_free(&h);
  if (st) return st;
  return write_xshape(ctx, nd, xdims, out->dtype);
}

/* transpose2_grad: X@GRAD = Out@GRAD transposed back. */
pd_status pd_kernel_transpose2_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *dy, *x;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  int nd, perm[MAXD], inv[MAXD];
  int64_t dims[MAXD], od[MAXD];
  pd_dtype dt;
  if ((st = in_at(ctx, "Out@GRAD", 0, true, &dy)) || (st = fwd_x_shape(ctx, &nd, dims, &dt, &x)) ||
      (st = transpose_perm(ctx, nd, dims, perm)))
    return st;
  for (int i = 0; i < nd; i++) {
    od[i] = dims[perm[i]];
    inv[perm[i]] = i;
  }
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, nd, od, dy->dtype))) return st;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, dx, &dy)) &&
      !(st = resize(ctx, dx, dy->dtype, nd, dims, x)))
    st = pd_ctx_check(ctx, ctx->k->transpose(dy->dtype, nd, od, inv, pd_tensor_data(dy),
                                             pd_tensor_data(dx)),
                      "transpose");
  hold_free(&h);
  return st;
}

/* ================================================================ flatten_contiguous_range,
 * squeeze2, unsqueeze2: reshapes whose new shape follows from X's and the axes */

/* Out's dims of flatten_contiguous_range: dims start..stop (normalised, start <= stop) become
 * their product; mul multiplies two dims (pd_infer_dim_mul at compile time, where -1 is
 * unknown). A scalar becomes [1] (Fluid). Returns the rank of out. */
static int flatten_dims(int nd, const int64_t *dims, int start, int stop, int64_t *out,
                        int64_t (*mul)(int64_t, int64_t)) {
  if (nd == 0) {
    out[0] = 1;
    return 1;
  }
  int n = 0;
  for (int i = 0; i < start; i++) out[n++] = dims[i];
  int64_t p = 1;
  for (int i = start; i <= stop; i++) p = mul(p, dims[i]);
  out[n++] = p;
  for (int i = stop + 1; i < nd; i++) out[n++] = dims[i];
  return n;
}

static int64_t mul_known(int64_t a, int64_t b) { return a * b; }

/* Which dims squeeze2 removes: the listed axes (each -nd..nd-1) whose dim is 1 (or unknown, -1,
 * at compile time), a listed dim of another size staying (Paddle 1.8 on), or with no axes every
 * dim of size 1. Returns the rank of out, or -1 with *bad the index in axes of an axis out of
 * range. */
static int squeeze_dims(int nd, const int64_t *dims, int na, const int64_t *axes, int64_t *out,
                        int *bad) {
  bool drop[MAXD] = {false};
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i];
    *bad = i;
    if (a < -nd || a >= nd) return -1;
    if (a < 0) a += nd;
    drop[a] = drop[a] || dims[a] == 1 || dims[a] == -1;
  }
  for (int i = 0; na == 0 && i < nd; i++) drop[i] = dims[i] == 1;
  int n = 0;
  for (int i = 0; i < nd; i++)
    if (!drop[i]) out[n++] = dims[i];
  return n;
}

/* Out's dims of unsqueeze2, as Fluid inserts them: each axis in turn, against the rank so far
 * (-rank-1..rank; a negative one counts from the end), puts a 1 there and moves the later dims
 * along. Returns the rank of out, -1 with *bad the index in axes of an axis out of range, or -3
 * when out would have more than MAXD dims. */
static int unsqueeze_dims(int nd, const int64_t *dims, int na, const int64_t *axes, int64_t *out,
                          int *bad) {
  int total = nd + na, cur = nd;
  if (total > MAXD) return -3;
  bool ins[MAXD + 1] = {false};
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + cur + 1 : axes[i];
    *bad = i;
    if (a < 0 || a > cur) return -1;
    for (int k = cur; k >= a; k--)
      if (ins[k]) {
        ins[k + 1] = true;
        ins[k] = false;
      }
    ins[a] = true;
    cur++;
  }
  for (int i = 0, k = 0; i < total; i++) out[i] = ins[i] ? 1 : dims[k++];
  return total;
}

pd_status pd_infer_flatten_contiguous_range(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  if (d.n < 0) {
    out = pd_infer_dims_unknown(-1);
  } else {
    int start = 0, stop = 0;
    char s[PD_DIMS_BUF];
    if (d.n > 0 &&
        ((st = pd_infer_axis(c, "start_axis", pd_infer_attr_int(c, "start_axis"), "X", &d, &start)) ||
         (st = pd_infer_axis(c, "stop_axis", pd_infer_attr_int(c, "stop_axis"), "X", &d, &stop))))
      return st;
    if (stop < start)
      return pd_infer_fail(c, PD_EINVAL, "stop_axis %d comes before start_axis %d of X %s", stop,
                           start, pd_infer_dims_str(&d, s));
    out.n = flatten_dims(d.n, d.d, start, stop, out.d, pd_infer_dim_mul);
  }
  bool same_rows = d.n > 0 && out.n > 0 && d.d[0] == out.d[0];
  if ((st = pd_infer_set_out(c, "Out", 0, &out, x->dtype, same_rows ? x->lod_level : 0))) return st;
  return set_xshape(c, x, &d);
}

/* flatten2 (and flatten): X as a matrix, dims before axis (0..rank) its rows, the rest its
 * columns; mul multiplies two dims as flatten_dims's does. */
static void flatten2_dims(int nd, const int64_t *dims, int axis, int64_t *out,
                          int64_t (*mul)(int64_t, int64_t)) {
  out[0] = out[1] = 1;
  for (int i = 0; i < nd; i++) out[i >= axis] = mul(out[i >= axis], dims[i]);
}

pd_status pd_infer_flatten2(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out = {.n = 2, .d = {-1, -1}};
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int64_t axis = pd_infer_attr_int(c, "axis");
  if (d.n >= 0 && (axis < 0 || axis > d.n))
    return pd_infer_fail(c, PD_EINVAL, "axis %" PRId64 " is out of range for X %s (expected 0 to "
                         "%d)", axis, pd_infer_dims_str(&d, s), d.n);
  if (d.n >= 0) flatten2_dims(d.n, d.d, (int)axis, out.d, pd_infer_dim_mul);
  bool same_rows = d.n > 0 && d.d[0] == out.d[0];
  if ((st = pd_infer_set_out(c, "Out", 0, &out, x->dtype, same_rows ? x->lod_level : 0))) return st;
  return set_xshape(c, x, &d);
}

pd_status pd_infer_squeeze2(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out, axes;
  char s[PD_DIMS_BUF], sa[PD_LIST_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  axes.n = pd_infer_attr_ints(c, "axes", axes.d, PD_MAX_RANK);
  if (axes.n > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EINVAL, "axes %s has more entries than a tensor has dims",
                         pd_infer_attr_ints_str(c, "axes", sa));
  if (d.n < 0) {
    out = pd_infer_dims_unknown(-1);
  } else {
    int bad = 0;
    out.n = squeeze_dims(d.n, d.d, axes.n, axes.d, out.d, &bad);
    if (out.n == -1)
      return pd_infer_fail(c, PD_EINVAL, "axis %" PRId64 " of axes %s is out of range for X %s "
                           "(expected %d to %d)", axes.d[bad], pd_infer_attr_ints_str(c, "axes", sa),
                           pd_infer_dims_str(&d, s), -d.n, d.n - 1);
  }
  bool same_rows = d.n > 0 && out.n > 0 && d.d[0] == out.d[0];
  if ((st = pd_infer_set_out(c, "Out", 0, &out, x->dtype, same_rows ? x->lod_level : 0))) return st;
  return set_xshape(c, x, &d);
}

pd_status pd_infer_unsqueeze2(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  int64_t axes[PD_MAX_RANK + 1];
  char s[PD_DIMS_BUF], sa[PD_LIST_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int na = pd_infer_attr_ints(c, "axes", axes, PD_MAX_RANK + 1);
  int nlist = pd_infer_nin(c, "AxesTensorList");
  if (nlist > 0 || pd_infer_nin(c, "AxesTensor") > 0) {
    /* The axes come at run time: only how many, at best. */
    pd_infer_dims ad;
    if (nlist == 0 && (st = pd_infer_in(c, "AxesTensor", 0, NULL, &ad))) return st;
    na = nlist > 0 ? nlist : ad.n == 1 ? (int)ad.d[0] : -1;
    out = pd_infer_dims_unknown(d.n < 0 || na < 0 || d.n + na > PD_MAX_RANK ? -1 : d.n + na);
  } else if (d.n < 0) {
    out = pd_infer_dims_unknown(-1);
  } else {
    int bad = 0;
    out.n = na > PD_MAX_RANK ? -3 : unsqueeze_dims(d.n, d.d, na, axes, out.d, &bad);
    if (out.n == -3)
      return pd_infer_fail(c, PD_EUNSUPPORTED, "unsqueezing X %s at axes %s gives %d dims; at "
                           "most %d are supported", pd_infer_dims_str(&d, s),
                           pd_infer_attr_ints_str(c, "axes", sa), d.n + na, PD_MAX_RANK);
    if (out.n == -1)
      return pd_infer_fail(c, PD_EINVAL, "axis %" PRId64 " of axes %s is out of range for X %s "
                           "with %d dims inserted before it (expected %d to %d)", axes[bad],
                           pd_infer_attr_ints_str(c, "axes", sa), pd_infer_dims_str(&d, s), bad,
                           -(d.n + bad) - 1, d.n + bad);
  }
  bool same_rows = d.n > 0 && out.n > 0 && d.d[0] == out.d[0];
  if ((st = pd_infer_set_out(c, "Out", 0, &out, x->dtype, same_rows ? x->lod_level : 0))) return st;
  return set_xshape(c, x, &d);
}

/* flatten_contiguous_range: dims start_axis..stop_axis of X become one. */
pd_status pd_kernel_flatten_contiguous_range(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int start = 0, stop = 0;
  char s[DIMS_BUF];
  if (x->ndims > 0 &&
      ((st = norm_axis(ctx, "start_axis", pd_ctx_attr_int(ctx, "start_axis"), "X", x, &start)) ||
       (st = norm_axis(ctx, "stop_axis", pd_ctx_attr_int(ctx, "stop_axis"), "X", x, &stop))))
    return st;
  if (stop < start)
    return pd_ctx_fail(ctx, PD_EINVAL, "stop_axis %d comes before start_axis %d of X %s", stop,
                       start, shape_str(x, s));
  int64_t d[MAXD];
  int nd = flatten_dims(x->ndims, x->dims, start, stop, d, mul_known);
  return copy_reshaped(ctx, x, nd, d);
}

/* flatten2: X as a matrix, its dims before axis the rows. */
pd_status pd_kernel_flatten2(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int64_t axis = pd_ctx_attr_int(ctx, "axis"), d[2];
  char s[DIMS_BUF];
  if (axis < 0 || axis > x->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "axis %" PRId64 " is out of range for X %s (expected 0 to "
                       "%d)", axis, shape_str(x, s), x->ndims);
  flatten2_dims(x->ndims, x->dims, (int)axis, d, mul_known);
  return copy_reshaped(ctx, x, 2, d);
}

/* squeeze2: X without the listed dims of size 1 (no axes: without all of them). */
pd_status pd_kernel_squeeze2(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int64_t axes[MAXD], d[MAXD];
  char s[DIMS_BUF], sa[LIST_BUF];
  int na = pd_ctx_attr_ints(ctx, "axes", axes, MAXD), bad = 0;
  if (na > MAXD)
    return pd_ctx_fail(ctx, PD_EINVAL, "axes has %d entries, more than a tensor has dims", na);
  int nd = squeeze_dims(x->ndims, x->dims, na, axes, d, &bad);
  if (nd == -1)
    return pd_ctx_fail(ctx, PD_EINVAL, "axis %" PRId64 " of axes %s is out of range for X %s "
                       "(expected %d to %d)", axes[bad], dims_str(na, axes, sa, sizeof sa),
                       shape_str(x, s), -x->ndims, x->ndims - 1);
  return copy_reshaped(ctx, x, nd, d);
}

/* unsqueeze2: X with a size-1 dim inserted at each of axes (AxesTensorList, AxesTensor, else
 * the attribute), in turn. */
pd_status pd_kernel_unsqueeze2(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int64_t axes[MAXD + 1], d[MAXD];
  char s[DIMS_BUF], sa[LIST_BUF];
  int na = 0, bad = 0;
  bool given;
  if (pd_ctx_nin(ctx, "AxesTensorList") > 0 || in_if_set(ctx, "AxesTensor", 0)) {
    if ((st = shape_from(ctx, "AxesTensorList", "AxesTensor", "axes", axes, &na, &given)))
      return st;
  } else {
    na = pd_ctx_attr_ints(ctx, "axes", axes, MAXD + 1);
  }
  int nd = na > MAXD ? -3 : unsqueeze_dims(x->ndims, x->dims, na, axes, d, &bad);
  if (nd == -3)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "unsqueezing X %s at %d axes gives %d dims; at most "
                       "%d are supported", shape_str(x, s), na, x->ndims + na, MAXD);
  if (nd == -1)
    return pd_ctx_fail(ctx, PD_EINVAL, "axis %" PRId64 " of axes %s is out of range for X %s "
                       "with %d dims inserted before it (expected %d to %d)", axes[bad],
                       dims_str(na, axes, sa, sizeof sa), shape_str(x, s), bad,
                       -(x->ndims + bad) - 1, x->ndims + bad);
  return copy_reshaped(ctx, x, nd, d);
}

/* ================================================================ the channel shuffles */

/* pixel_shuffle (upscale factor r): X [N, C r r, H, W] -> [N, C, H r, W r], Out[n, c, h r + i,
 * w r + j] = X[n, c r r + i r + j, h, w]; NHWC likewise with C last. shuffle_channel and
 * channel_shuffle (g groups): the channels, seen as [g, C / g], transposed to [C / g, g]. Each
 * is a transpose of X viewed in more dims. */
typedef struct shuffle_geom {
  bool pixel, nhwc;
  int64_t k;      /* r, or g */
  const char *attr;
} shuffle_geom;

static shuffle_geom shuffle_of(pd_op_kind kind, int64_t (*attr_int)(const void *, const char *),
                               const char *(*attr_str)(const void *, const char *),
                               const void *c) {
  shuffle_geom g = {.pixel = kind == PD_OP_pixel_shuffle};
  g.attr = g.pixel ? "upscale_factor" : kind == PD_OP_channel_shuffle ? "groups" : "group";
  g.k = attr_int(c, g.attr);
  g.nhwc = kind != PD_OP_shuffle_channel && strcmp(attr_str(c, "data_format"), "NHWC") == 0;
  return g;
}

static int64_t infer_int(const void *c, const char *n) { return pd_infer_attr_int(c, n); }
static const char *infer_str(const void *c, const char *n) { return pd_infer_attr_str(c, n); }
static int64_t ctx_int(const void *c, const char *n) { return pd_ctx_attr_int(c, n); }
static const char *ctx_str(const void *c, const char *n) { return pd_ctx_attr_str(c, n); }

/* The channels X [4 dims] must divide into (r r, or g): NULL when they do (or are unknown),
 * else the message, in msg. */
static const char *shuffle_bad(const shuffle_geom *g, int nd, const int64_t *xd, char *msg,
                               size_t cap) {
  char s[DIMS_BUF];
  int64_t parts = g->pixel ? g->k * g->k : g->k, ch = nd == 4 ? xd[g->nhwc ? 3 : 1] : -1;
  if (nd != 4) snprintf(msg, cap, "X must have 4 dims (%s), got %s", g->nhwc ? "NHWC" : "NCHW",
                        dims_str(nd, xd, s, sizeof s));
  else if (g->k < 1 || g->k > INT32_MAX)
    snprintf(msg, cap, "%s must be at least 1, got %" PRId64, g->attr, g->k);
  else if (ch >= 0 && ch % parts)
    snprintf(msg, cap, "the %" PRId64 " channels of X %s do not divide by %s%s %" PRId64, ch,
             dims_str(nd, xd, s, sizeof s), g->attr, g->pixel ? " squared," : "", parts);
  else return NULL;
  return msg;
}

/* Out's dims for X's (known: -1 stays unknown through pd_infer_dim_mul). */
static void shuffle_out_dims(const shuffle_geom *g, const int64_t *xd, int64_t *od) {
  memcpy(od, xd, 4 * sizeof *od);
  if (!g->pixel) return;
  int cd = g->nhwc ? 3 : 1, hd = g->nhwc ? 1 : 2;
  od[cd] = xd[cd] < 0 ? -1 : xd[cd] / (g->k * g->k);
  od[hd] = pd_infer_dim_mul(xd[hd], g->k);
  od[hd + 1] = pd_infer_dim_mul(xd[hd + 1], g->k);
}

/* X [4 dims, known] as the view vd that the transpose perm turns into Out; returns its rank. */
static int shuffle_view(const shuffle_geom *g, const int64_t *xd, int64_t *vd, int *perm) {
  int64_t k = g->k, n = xd[0];
  if (g->pixel) {
    static const int p6[6] = {0, 1, 4, 2, 5, 3};
    int64_t c = xd[g->nhwc ? 3 : 1] / (k * k);
    const int64_t nchw[6] = {n, c, k, k, xd[2], xd[3]}, nhwc[6] = {n, xd[1], xd[2], c, k, k};
    memcpy(vd, g->nhwc ? nhwc : nchw, sizeof nchw);
    memcpy(perm, p6, sizeof p6);
    return 6;
  }
  if (g->nhwc) {
    const int64_t v[3] = {n * xd[1] * xd[2], k, xd[3] / k};
    memcpy(vd, v, sizeof v);
    memcpy(perm, (const int[3]){0, 2, 1}, 3 * sizeof *perm);
    return 3;
  }
  const int64_t v[4] = {n, k, xd[1] / k, xd[2] * xd[3]};
  memcpy(vd, v, sizeof v);
  memcpy(perm, (const int[4]){0, 2, 1, 3}, 4 * sizeof *perm);
  return 4;
}

pd_status pd_infer_shuffle(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  char msg[LIST_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  shuffle_geom g = shuffle_of(c->def->kind, infer_int, infer_str, c);
  if (d.n < 0) {
    out = pd_infer_dims_unknown(4);
  } else {
    if (shuffle_bad(&g, d.n, d.d, msg, sizeof msg)) return pd_infer_fail(c, PD_ESHAPE, "%s", msg);
    out.n = 4;
    shuffle_out_dims(&g, d.d, out.d);
  }
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* The transpose of a shuffle (grad false) or of its inverse, from src to dst of dims dd. */
static pd_status shuffle_move(const pd_exec_ctx *ctx, const shuffle_geom *g, const int64_t *xd,
                              bool grad, const pd_tensor *src, pd_tensor *dst, const int64_t *dd) {
  int64_t vd[6], pd[6];
  int perm[6], inv[6];
  int vn = shuffle_view(g, xd, vd, perm);
  for (int i = 0; i < vn; i++) {
    pd[i] = vd[perm[i]];
    inv[perm[i]] = i;
  }
  hold h;
  hold_init(&h);
  pd_status st = unalias(ctx, &h, dst, &src);
  if (!st) st = resize(ctx, dst, src->dtype, 4, dd, NULL);
  if (!st)
    st = pd_ctx_check(ctx, ctx->k->transpose(src->dtype, vn, grad ? pd : vd, grad ? inv : perm,
                                             pd_tensor_data(src), pd_tensor_data(dst)),
                      "transpose");
  hold_free(&h);
  return st;
}

pd_status pd_kernel_shuffle(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  char msg[LIST_BUF];
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st || (st = out_at(ctx, "Out", 0, true, &out))) return st;
  shuffle_geom g = shuffle_of(ctx->def->kind, ctx_int, ctx_str, ctx);
  if (shuffle_bad(&g, x->ndims, x->dims, msg, sizeof msg))
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s", msg);
  int64_t xd[4], od[4];
  memcpy(xd, x->dims, sizeof xd);
  shuffle_out_dims(&g, xd, od);
  return shuffle_move(ctx, &g, xd, false, x, out, od);
}

/* X@GRAD = Out@GRAD moved back by the inverse transpose. */
pd_status pd_kernel_shuffle_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dy;
  pd_tensor *dx;
  char msg[LIST_BUF];
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)))
    return st;
  shuffle_geom g = shuffle_of(ctx->def->kind, ctx_int, ctx_str, ctx);
  if (shuffle_bad(&g, x->ndims, x->dims, msg, sizeof msg))
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s", msg);
  int64_t xd[4], od[4];
  memcpy(xd, x->dims, sizeof xd);
  shuffle_out_dims(&g, xd, od);
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, 4, od, x->dtype))) return st;
  return shuffle_move(ctx, &g, xd, true, dy, dx, xd);
}

/* ================================================================ stack, shape */

/* stack: the X tensors (one dtype, one shape) joined along a new axis (-(rank+1)..rank) of
 * size len(X). */
pd_status pd_infer_stack(pd_infer_ctx *c) {
  const pd_var_desc *first;
  pd_infer_dims d0, out;
  char s0[PD_DIMS_BUF], si[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &first, &d0);
  if (st) return st;
  int n = pd_infer_nin(c, "X");
  pd_infer_dims merged = d0;
  for (int i = 1; i < n; i++) {
    const pd_var_desc *v;
    pd_infer_dims d;
    if ((st = pd_infer_in(c, "X", i, &v, &d))) return st;
    if (v->dtype != first->dtype)
      return pd_infer_fail(c, PD_ETYPE, "X[%d] has dtype %s but X[0] has dtype %s", i,
                           pd_dtype_name(v->dtype), pd_dtype_name(first->dtype));
    if (merged.n < 0) merged = d;
    if (d.n < 0) continue;
    bool same = d.n == merged.n;
    for (int k = 0; same && k < d.n; k++) same = pd_infer_dim_compatible(merged.d[k], d.d[k]);
    if (!same)
      return pd_infer_fail(c, PD_ESHAPE, "cannot stack X[0] %s and X[%d] %s: their shapes differ",
                           pd_infer_dims_str(&d0, s0), i, pd_infer_dims_str(&d, si));
    for (int k = 0; k < d.n; k++) merged.d[k] = pd_infer_dim_merge(merged.d[k], d.d[k]);
  }
  if (merged.n < 0) {
    out = pd_infer_dims_unknown(-1);
  } else {
    if (merged.n >= PD_MAX_RANK)
      return pd_infer_fail(c, PD_EUNSUPPORTED, "stacking X %s gives %d dims; at most %d are "
                           "supported", pd_infer_dims_str(&merged, s0), merged.n + 1, PD_MAX_RANK);
    pd_infer_dims r1 = pd_infer_dims_unknown(merged.n + 1);
    int axis;
    if ((st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "Y", &r1, &axis))) return st;
    out.n = merged.n + 1;
    for (int k = 0, j = 0; k < out.n; k++) out.d[k] = k == axis ? n : merged.d[j++];
  }
  return pd_infer_set_out(c, "Y", 0, &out, first->dtype, 0);
}

/* The axis of stack for inputs of rank nd: -(nd+1)..nd. */
static pd_status stack_axis(const pd_exec_ctx *ctx, int nd, int *axis) {
  int64_t a = pd_ctx_attr_int(ctx, "axis");
  if (a < -(nd + 1) || a > nd)
    return pd_ctx_fail(ctx, PD_EINVAL, "axis %" PRId64 " is out of range for stacking tensors of "
                       "%d dims (expected %d to %d)", a, nd, -(nd + 1), nd);
  *axis = (int)(a < 0 ? a + nd + 1 : a);
  return PD_OK;
}

pd_status pd_kernel_stack(pd_exec_ctx *ctx) {
  int n = pd_ctx_nin(ctx, "X");
  if (n < 1) return pd_ctx_fail(ctx, PD_EINVAL, "input X is not given");
  local_buf sp, ss, sd;
  const pd_tensor **xs = local_get(&sp, (size_t)n * sizeof *xs);
  int64_t *sizes = local_get(&ss, (size_t)n * sizeof *sizes);
  const void **ptrs = local_get(&sd, (size_t)n * sizeof *ptrs);
  hold h;
  hold_init(&h);
  pd_status st = PD_OK;
  char s0[DIMS_BUF], si[DIMS_BUF];
  if (!xs || !sizes || !ptrs) {
    st = nomem(ctx);
    goto out;
  }
  for (int i = 0; i < n && !st; i++) st = in_at(ctx, "X", i, true, &xs[i]);
  int axis = 0, nd = st ? 0 : xs[0]->ndims;
  if (st || (st = stack_axis(ctx, nd, &axis))) goto out;
  if (nd >= MAXD) {
    st = pd_ctx_fail(ctx, PD_EUNSUPPORTED, "stacking X[0] %s gives %d dims; at most %d are "
                     "supported", shape_str(xs[0], s0), nd + 1, MAXD);
    goto out;
  }
  for (int i = 0; i < n; i++) {
    if (xs[i]->dtype != xs[0]->dtype) {
      st = pd_ctx_fail(ctx, PD_ETYPE, "X[%d] holds %s but X[0] holds %s", i,
                       pd_dtype_name(xs[i]->dtype), pd_dtype_name(xs[0]->dtype));
      goto out;
    }
    if (!same_dims(xs[i]->ndims, xs[i]->dims, nd, xs[0]->dims)) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "cannot stack X[0] %s and X[%d] %s: their shapes differ",
                       shape_str(xs[0], s0), i, shape_str(xs[i], si));
      goto out;
    }
    sizes[i] = 1;
  }
  int64_t dims[MAXD];
  for (int k = 0, j = 0; k <= nd; k++) dims[k] = k == axis ? n : xs[0]->dims[j++];
  pd_tensor *o;
  if ((st = out_at(ctx, "Y", 0, true, &o))) goto out;
  /* An X that is Y itself is read through a second reference to its storage (one for all). */
  const pd_tensor *held = NULL;
  for (int i = 0; i < n && !st; i++)
    if (xs[i] == o) {
      if (!held && !(st = unalias(ctx, &h, o, &xs[i]))) held = xs[i];
      xs[i] = held;
    }
  if (st) goto out;
  pd_dtype dt = xs[0]->dtype;
  if ((st = resize(ctx, o, dt, nd + 1, dims, NULL))) goto out;
  for (int i = 0; i < n; i++) ptrs[i] = pd_tensor_data(xs[i]);
  st = pd_ctx_check(ctx, ctx->k->concat(dt, n, (const void *const *)ptrs, sizes,
                                        prod(dims, 0, axis), prod(dims, axis + 1, nd + 1),
                                        pd_tensor_data(o)),
                    "concat");
out:
  hold_free(&h);
  local_free(&sp);
  local_free(&ss);
  local_free(&sd);
  return st;
}

/* stack_grad: X@GRAD[i] = slice i of Y@GRAD along axis. */
pd_status pd_kernel_stack_grad(pd_exec_ctx *ctx) {
  int n = pd_ctx_nin(ctx, "X");
  const pd_tensor *dy, *x0;
  pd_status st;
  if (n < 1) return pd_ctx_fail(ctx, PD_EINVAL, "input X is not given");
  if ((st = in_at(ctx, "Y@GRAD", 0, true, &dy)) || (st = in_at(ctx, "X", 0, true, &x0))) return st;
  int axis, nd = x0->ndims;
  if ((st = stack_axis(ctx, nd, &axis))) return st;
  if (nd >= MAXD) return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "X[0] has too many dims to stack");
  int64_t dims[MAXD];
  for (int k = 0, j = 0; k <= nd; k++) dims[k] = k == axis ? n : x0->dims[j++];
  if ((st = want_grad_shape(ctx, "Y@GRAD", dy, nd + 1, dims, x0->dtype))) return st;
  hold h;
  hold_init(&h);
  int64_t pre = prod(dims, 0, axis), post = prod(dims, axis + 1, nd + 1);
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *x;
    pd_tensor *dx;
    st = in_at(ctx, "X", i, true, &x);
    if (!st) st = out_at(ctx, "X@GRAD", i, false, &dx);
    if (!st && dx) st = unalias(ctx, &h, dx, &dy);
    if (!st && dx) st = resize(ctx, dx, dy->dtype, x->ndims, x->dims, x);
    if (!st && dx)
      st = pd_ctx_check(ctx, ctx->k->strided_copy(dy->dtype, 2, (int64_t[]){pre, post},
                                                  (int64_t[]){pre, post},
                                                  (int64_t[]){n * post, 1}, i * post,
                                                  pd_tensor_data(dy), pd_tensor_data(dx), false),
                        "strided_copy");
  }
  hold_free(&h);
  return st;
}

/* shape: Out (int32, [rank]) = the dims of Input. */
pd_status pd_infer_shape(pd_infer_ctx *c) {
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "Input", 0, NULL, &d);
  if (st) return st;
  pd_infer_dims out = {.n = 1, .d = {d.n}};
  return pd_infer_set_out(c, "Out", 0, &out, PD_INT32, 0);
}

pd_status pd_kernel_shape(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *o;
  pd_status st = in_at(ctx, "Input", 0, true, &x);
  if (st || (st = out_at(ctx, "Out", 0, true, &o))) return st;
  int nd = x->ndims;
  int32_t v[MAXD];
  char s[DIMS_BUF];
  for (int i = 0; i < nd; i++) {
    if (x->dims[i] > INT32_MAX)
      return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "dim %d of Input %s does not fit in int32", i,
                         shape_str(x, s));
    v[i] = (int32_t)x->dims[i];
  }
  int64_t od = nd;
  if ((st = resize(ctx, o, PD_INT32, 1, &od, NULL))) return st;
  if (nd) memcpy(pd_tensor_data(o), v, sizeof(int32_t) * (size_t)nd);
  return PD_OK;
}
