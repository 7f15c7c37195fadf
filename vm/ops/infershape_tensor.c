/* infershape_tensor.c -- shape functions of ops that create or rearrange tensors: feed/fetch,
 * fill_constant and the random initialisers, concat, split, reshape2, transpose2, and the
 * embedding lookups. */
#include "config.h"
#include "vm/ops/infershape.h"

#include <inttypes.h>
#include <string.h>

/* feed, fetch: the output's shape is the one declared for it (a data() var, the fetch list), so
 * there is nothing to infer; only check that every output var exists. */
pd_status pd_infer_declared(pd_infer_ctx *c) {
  char name[64];
  for (int i = 0; i < c->def->noutputs; i++) {
    const pd_slot *s = pd_op_output(c->op, c->def->outputs[i].name);
    for (int k = 0; s && k < s->nargs; k++)
      if (strcmp(s->args[k], PD_EMPTY_VAR_NAME) != 0 &&
          !pd_block_find_var_visible(c->block, s->args[k], NULL))
        return pd_infer_fail(c, PD_ENOTFOUND, "output %s names '%s', which is not declared",
                             c->def->outputs[i].name,
                             pd_program_excerpt(s->args[k], name, sizeof name));
  }
  return PD_OK;
}

/* The shape a filling op (fill_constant, uniform_random, gaussian_random) gives its Out: the
 * `shape` attribute, unless a ShapeTensorList (one dim per var) or a ShapeTensor (a 1-D int
 * tensor) gives it at run time, in which case only the rank is known. */
static pd_status fill_shape(pd_infer_ctx *c, pd_infer_dims *out) {
  char s[PD_DIMS_BUF];
  int nlist = pd_infer_nin(c, "ShapeTensorList");
  if (nlist > 0) {
    if (nlist > PD_MAX_RANK)
      return pd_infer_fail(c, PD_EUNSUPPORTED, "ShapeTensorList gives %d dims; at most %d are "
                           "supported", nlist, PD_MAX_RANK);
    *out = pd_infer_dims_unknown(nlist);
    return PD_OK;
  }
  if (pd_infer_nin(c, "ShapeTensor") > 0) {
    pd_infer_dims sd;
    pd_status st = pd_infer_in(c, "ShapeTensor", 0, NULL, &sd);
    if (st) return st;
    if (sd.n >= 0 && sd.n != 1)
      return pd_infer_fail(c, PD_ESHAPE, "ShapeTensor must have 1 dim, got %s",
                           pd_infer_dims_str(&sd, s));
    if (sd.n == 1 && sd.d[0] > PD_MAX_RANK)
      return pd_infer_fail(c, PD_EUNSUPPORTED, "ShapeTensor gives %" PRId64 " dims; at most %d are "
                           "supported", sd.d[0], PD_MAX_RANK);
    *out = pd_infer_dims_unknown(sd.n == 1 && sd.d[0] >= 0 ? (int)sd.d[0] : -1);
    return PD_OK;
  }
  out->n = pd_infer_attr_ints(c, "shape", out->d, PD_MAX_RANK);
  if (out->n > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EUNSUPPORTED, "shape has %d dims; at most %d are supported", out->n,
                         PD_MAX_RANK);
  for (int i = 0; i < out->n; i++)
    if (out->d[i] < 0)
      return pd_infer_fail(c, PD_EINVAL, "shape %s has a negative dim", pd_infer_dims_str(out, s));
  return PD_OK;
}

/* fill_constant: Out has `shape` and `dtype`. */
pd_status pd_infer_fill_constant(pd_infer_ctx *c) {
  pd_infer_dims d;
  pd_dtype dtype;
  pd_status st;
  if ((st = pd_infer_attr_dtype(c, "dtype", &dtype)) || (st = fill_shape(c, &d))) return st;
  return pd_infer_set_out(c, "Out", 0, &d, dtype, 0);
}

/* uniform_random, gaussian_random: like fill_constant, but the dtype must be floating point and
 * the shape given; uniform_random's range must not be empty. */
pd_status pd_infer_random(pd_infer_ctx *c) {
  pd_infer_dims d;
  pd_dtype dtype;
  pd_status st;
  if ((st = pd_infer_attr_dtype(c, "dtype", &dtype)) || (st = fill_shape(c, &d))) return st;
  if (!pd_infer_is_float(dtype))
    return pd_infer_fail(c, PD_ETYPE, "dtype must be float16, float32 or float64, got %s",
                         pd_dtype_name(dtype));
  if (d.n == 0) return pd_infer_fail(c, PD_EINVAL, "shape is empty");
  if (pd_opdef_attr(c->def, "min")) {
    double lo = pd_infer_attr_float(c, "min"), hi = pd_infer_attr_float(c, "max");
    if (!(lo < hi))
      return pd_infer_fail(c, PD_EINVAL, "min (%g) must be less than max (%g)", lo, hi);
  }
  return pd_infer_set_out(c, "Out", 0, &d, dtype, 0);
}

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

/* assign_value: a constant given in the attributes; Out has `shape` and `dtype`, and the list of
 * values matching the dtype must hold exactly as many elements as the shape. */
pd_status pd_infer_assign_value(pd_infer_ctx *c) {
  pd_dtype dtype;
  pd_status st = pd_infer_attr_dtype(c, "dtype", &dtype);
  if (st) return st;
  pd_infer_dims d;
  d.n = pd_infer_attr_len(c, "shape");
  if (d.n > PD_MAX_RANK) return pd_infer_fail(c, PD_EINVAL, "shape has %d dims (at most %d)", d.n, PD_MAX_RANK);
  pd_infer_attr_ints(c, "shape", d.d, PD_MAX_RANK);
  for (int i = 0; i < d.n; i++)
    if (d.d[i] < 1) return pd_infer_fail(c, PD_EINVAL, "shape must be positive");
  const char *list = dtype == PD_FP32 || dtype == PD_FP64 ? "fp32_values"
                   : dtype == PD_INT64                    ? "int64_values"
                   : dtype == PD_BOOL                     ? "bool_values"
                                                          : "int32_values";
  const pd_attr *a = pd_op_attr(c->op, list);
  int64_t n = pd_infer_dims_numel(&d);
  if (!a || a->n != n)
    return pd_infer_fail(c, PD_EINVAL, "%s holds %d values but the shape has %lld elements", list,
                         a ? a->n : 0, (long long)n);
  return pd_infer_set_out(c, "Out", 0, &d, dtype, 0);
}
