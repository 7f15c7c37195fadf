/* create.c -- the ops that make and copy values: feed and fetch (the executor's ends),
 * load_combine (a parameters file read into vars: an imported model's startup op),
 * fill_constant, fill_constant_batch_size_like, fill_zeros_like, assign, assign_value, the random
 * initialisers (uniform_random, gaussian_random), increment and range: their shape functions and
 * kernels (and assign's gradient). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ir/params.h"
#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* increment: a counter; X must hold one element. */
pd_status pd_infer_increment(pd_infer_ctx *c) {
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, NULL, &d);
  if (st) return st;
  int64_t n = pd_infer_dims_numel(&d);
  if (n >= 0 && n != 1)
    return pd_infer_fail(c, PD_ESHAPE, "X must hold one element, got %s", pd_infer_dims_str(&d, s));
  return pd_infer_same_as_x(c, -1);
}

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
static pd_status infer_fill_shape(pd_infer_ctx *c, pd_infer_dims *out) {
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
  if ((st = pd_infer_attr_dtype(c, "dtype", &dtype)) || (st = infer_fill_shape(c, &d))) return st;
  return pd_infer_set_out(c, "Out", 0, &d, dtype, 0);
}

/* fill_constant_batch_size_like: Out has `shape` and `dtype`, its dim output_dim_idx taken from
 * Input's dim input_dim_idx (unknown for dim 0 of a sequence batch: its sequence count). */
pd_status pd_infer_fill_constant_batch_size_like(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  pd_dtype dtype;
  char s[PD_DIMS_BUF], sl[PD_LIST_BUF];
  pd_status st;
  if ((st = pd_infer_attr_dtype(c, "dtype", &dtype)) || (st = pd_infer_in(c, "Input", 0, &x, &d)))
    return st;
  int64_t ii = pd_infer_attr_int(c, "input_dim_idx"), oi = pd_infer_attr_int(c, "output_dim_idx");
  out.n = pd_infer_attr_ints(c, "shape", out.d, PD_MAX_RANK);
  if (out.n < 1 || pd_infer_attr_len(c, "shape") > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EINVAL, "shape %s must have 1 to %d dims",
                         pd_infer_attr_ints_str(c, "shape", sl), PD_MAX_RANK);
  if (oi < 0 || oi >= out.n)
    return pd_infer_fail(c, PD_EINVAL, "output_dim_idx %" PRId64 " is out of range for shape %s",
                         oi, pd_infer_attr_ints_str(c, "shape", sl));
  if (d.n >= 0 && (ii < 0 || ii >= d.n))
    return pd_infer_fail(c, PD_EINVAL, "input_dim_idx %" PRId64 " is out of range for Input %s",
                         ii, pd_infer_dims_str(&d, s));
  out.d[oi] = d.n >= 0 && !(ii == 0 && x->lod_level > 0) ? d.d[ii] : -1;
  for (int i = 0; i < out.n; i++)
    if (i != oi && out.d[i] < 0)
      return pd_infer_fail(c, PD_EINVAL, "shape %s has a negative dim at %d (only "
                           "output_dim_idx's may be)", pd_infer_attr_ints_str(c, "shape", sl), i);
  return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
}

/* uniform_random, gaussian_random: like fill_constant, but the dtype must be floating point and
 * the shape given; uniform_random's range must not be empty. */
pd_status pd_infer_random(pd_infer_ctx *c) {
  pd_infer_dims d;
  pd_dtype dtype;
  pd_status st;
  if ((st = pd_infer_attr_dtype(c, "dtype", &dtype)) || (st = infer_fill_shape(c, &d))) return st;
  if (!pd_dtype_is_float(dtype))
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
  const char *list = pd_dtype_is_kernel_float(dtype) ? "fp32_values"
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

/* range: Out [ceil((End - Start) / Step)] of Start's dtype, the three one-element tensors whose
 * values come at run time (so Out's one dim is unknown here). */
pd_status pd_infer_range(pd_infer_ctx *c) {
  static const char *const slots[] = {"Start", "End", "Step"};
  const pd_var_desc *v[3];
  pd_infer_dims d[3];
  char s[PD_DIMS_BUF];
  pd_status st;
  for (int i = 0; i < 3; i++) {
    if ((st = pd_infer_in(c, slots[i], 0, &v[i], &d[i]))) return st;
    if (pd_infer_dims_numel(&d[i]) > 1)
      return pd_infer_fail(c, PD_ESHAPE, "%s must hold one element, got %s", slots[i],
                           pd_infer_dims_str(&d[i], s));
  }
  pd_dtype dt = v[0]->dtype;
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64)
    return pd_infer_fail(c, PD_ETYPE, "Start must be float32, float64, int32 or int64, got %s",
                         pd_dtype_name(dt));
  pd_infer_dims out = pd_infer_dims_unknown(1);
  return pd_infer_set_out(c, "Out", 0, &out, dt, 0);
}

/* A shape to fill: every dim non-negative. */
static pd_status fill_shape(const pd_exec_ctx *ctx, int64_t *dims, int *nd) {
  bool given;
  char s[DIMS_BUF];
  pd_status st = shape_from(ctx, "ShapeTensorList", "ShapeTensor", "shape", dims, nd, &given);
  if (st) return st;
  for (int i = 0; i < *nd; i++)
    if (dims[i] < 0)
      return pd_ctx_fail(ctx, PD_EINVAL, "shape %s has a negative dim", dims_str(*nd, dims, s,
                                                                                 sizeof s));
  return PD_OK;
}

/* ================================================================ feed, fetch */

/* feed: Out shares the tensor in column col of the feed list X (no copy of the data). */
pd_status pd_kernel_feed(pd_exec_ctx *ctx) {
  pd_variable *xv = pd_ctx_in_var(ctx, "X", 0);
  int64_t col = pd_ctx_attr_int(ctx, "col");
  if (!xv) return pd_ctx_fail(ctx, PD_EINVAL, "input X is not given");
  if (xv->type != PD_VAR_FEED_MINIBATCH && xv->type != PD_VAR_LOD_TENSOR_ARRAY)
    return pd_ctx_fail(ctx, PD_ETYPE, "X (var '%s') must be a feed list (FEED_MINIBATCH), not %s",
                       pd_var_name(xv), pd_var_type_name(xv->type));
  const pd_tensor_array *a = pd_var_tensor_array(xv);
  if (col < 0 || (uint64_t)col >= a->n)
    return pd_ctx_fail(ctx, PD_EINVAL, "col %" PRId64 " is out of range: feed list '%s' holds %zu "
                       "tensor%s", col, pd_var_name(xv), a->n, a->n == 1 ? "" : "s");
  const pd_tensor *src = a->items[col];
  if (!pd_tensor_initialized(src))
    return pd_ctx_fail(ctx, PD_ERUNTIME, "feed list '%s' has no value in col %" PRId64,
                       pd_var_name(xv), col);
  pd_tensor *out;
  pd_status st = out_at(ctx, "Out", 0, true, &out);
  if (st) return st;
  if (pd_tensor_share(out, src)) return nomem(ctx);
  return PD_OK;
}

/* fetch: a deep copy of X into column col of the fetch list Out, which grows to hold it. */
pd_status pd_kernel_fetch(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int64_t col = pd_ctx_attr_int(ctx, "col");
  pd_variable *ov = pd_ctx_out_var(ctx, "Out", 0);
  if (!ov) return pd_ctx_fail(ctx, PD_EINVAL, "output Out is not given");
  if (ov->type == PD_VAR_UNSET) pd_var_set_type(ov, PD_VAR_FETCH_LIST);
  if (ov->type != PD_VAR_FETCH_LIST && ov->type != PD_VAR_LOD_TENSOR_ARRAY)
    return pd_ctx_fail(ctx, PD_ETYPE, "Out (var '%s') must be a fetch list (FETCH_LIST), not %s",
                       pd_var_name(ov), pd_var_type_name(ov->type));
  if (col < 0) return pd_ctx_fail(ctx, PD_EINVAL, "col must not be negative, got %" PRId64, col);
  pd_tensor_array *a = pd_var_tensor_array(ov);
  if (pd_tensor_array_reserve(a, col + 1)) return nomem(ctx);
  if (pd_tensor_copy(a->items[col], x)) return nomem(ctx);
  return PD_OK;
}

/* load_combine: the tensors of the combined parameters file file_path (vm/ir/params.h), which
 * must hold exactly as many as Out names, installed in order as the values of those vars. */
pd_status pd_kernel_load_combine(pd_exec_ctx *ctx) {
  const char *path = pd_ctx_attr_str(ctx, "file_path");
  if (!*path) return pd_ctx_fail(ctx, PD_EINVAL, "file_path is empty: no file to load");
  if (pd_ctx_attr_bool(ctx, "model_from_memory"))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "model_from_memory is not supported: file_path must "
                       "name a file");
  if (pd_ctx_attr_bool(ctx, "load_as_fp16"))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "load_as_fp16 is not supported");
  int n = pd_ctx_nout(ctx, "Out");
  const char **names = pd_calloc((size_t)n + 1, sizeof *names);
  if (!names) return nomem(ctx);
  for (int i = 0; i < n; i++) names[i] = pd_ctx_out_name(ctx, "Out", i);
  pd_error e = {0};
  pd_status st = pd_params_load(path, ctx->scope, n, names, NULL, &e);
  pd_free(names);
  if (st) {
    if (st == PD_ENOMEM) st = nomem(ctx);
    else st = pd_ctx_fail(ctx, st, "%s%s%s", e.loc.file ? e.loc.file : "", e.loc.file ? ": " : "",
                          e.msg ? e.msg : pd_status_str(st));
    pd_error_clear(&e);
  }
  return st;
}

/* ================================================================ constants and copies */

/* The value of a filling op: the ValueTensor's (vt, when given), else str_value's when set
 * (parsed; "inf", "-inf", "nan" too), else value's. *iv holds it exactly when *exact (an
 * integer from str_value or an integer ValueTensor, exact beyond 2^53). */
static pd_status fill_value(const pd_exec_ctx *ctx, const pd_tensor *vt, double *v, int64_t *iv,
                            bool *exact) {
  const char *sv = pd_ctx_attr_str(ctx, "str_value");
  pd_status st;
  *v = pd_ctx_attr_float(ctx, "value");
  *iv = 0;
  *exact = false;
  if (vt) {
    if ((st = scalar_in(ctx, "ValueTensor", vt, v))) return st;
    if (is_int(vt->dtype)) {
      *iv = elem_i(vt, 0);
      *exact = true;
    }
  } else if (*sv) {
    char *end;
    errno = 0;
    long long ll = strtoll(sv, &end, 10);
    if (*end == '\0' && errno == 0) {
      *iv = ll;
      *exact = true;
      *v = (double)ll;
    } else {
      *v = strtod(sv, &end);
      if (end == sv || *end != '\0')
        return pd_ctx_fail(ctx, PD_EINVAL, "str_value '%s' is not a number", sv);
    }
  }
  return PD_OK;
}

/* Out [dims] of the dtype attribute's type (float32, float64, int32, int64 or bool), every
 * element the filling value (fill_value). */
static pd_status fill_out(pd_exec_ctx *ctx, const pd_tensor *vt, int nd, const int64_t *dims) {
  int64_t t = pd_ctx_attr_int(ctx, "dtype");
  if (t != (int)t || !pd_dtype_valid((int)t))
    return pd_ctx_fail(ctx, PD_EINVAL, "dtype %" PRId64 " is not a data type", t);
  pd_dtype dt = (pd_dtype)t;
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64 && dt != PD_BOOL)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "dtype %s is not supported (float32, float64, "
                       "int32, int64 and bool are)", pd_dtype_name(dt));
  double v;
  int64_t iv;
  bool exact;
  pd_tensor *out;
  pd_status st;
  if ((st = fill_value(ctx, vt, &v, &iv, &exact)) || (st = out_at(ctx, "Out", 0, true, &out)) ||
      (st = resize(ctx, out, dt, nd, dims, NULL)))
    return st;
  int64_t n = pd_tensor_numel(out);
  if (dt == PD_INT64 && exact && pd_ctx_place(ctx) == PD_K_HOST) {
    int64_t *o = PD_TENSOR_I64(out);
    for (int64_t i = 0; i < n; i++) o[i] = iv;
    return PD_OK;
  }
  if (dt == PD_INT64 && exact && (iv > (1ll << 53) || iv < -(1ll << 53))) {
    /* Beyond doubles' exact integers, on the GPU: the values made on the host, uploaded. */
    int64_t *o = pd_k_host_alloc((size_t)n * sizeof *o + 1);
    if (!o) return nomem(ctx);
    for (int64_t i = 0; i < n; i++) o[i] = iv;
    st = pd_mem_copy(pd_tensor_data(out), PD_K_CUDA, o, PD_K_HOST, (size_t)n * sizeof *o);
    pd_k_host_free(o);
    return pd_ctx_check(ctx, st, "upload");
  }
  if (dt == PD_INT64 && exact) v = (double)iv;
  return pd_ctx_check(ctx, ctx->k->fill(dt, n, pd_tensor_data(out), v), "fill");
}

/* fill_constant: Out [shape] of dtype, every element value (fill_value, with ValueTensor); the
 * shape from ShapeTensorList / ShapeTensor, else the attribute. */
pd_status pd_kernel_fill_constant(pd_exec_ctx *ctx) {
  int64_t dims[MAXD];
  int nd;
  pd_status st = fill_shape(ctx, dims, &nd);
  if (st) return st;
  return fill_out(ctx, in_if_set(ctx, "ValueTensor", 0), nd, dims);
}

/* fill_constant_batch_size_like: fill_constant of shape, whose dim output_dim_idx is Input's
 * dim input_dim_idx (Input's sequence count when it has LoD and input_dim_idx is 0, as Fluid);
 * only Input's dims are read. */
pd_status pd_kernel_fill_constant_batch_size_like(pd_exec_ctx *ctx) {
  const pd_tensor *in;
  int64_t dims[MAXD + 1];
  char s[DIMS_BUF], sl[LIST_BUF];
  pd_status st = in_at(ctx, "Input", 0, true, &in);
  if (st) return st;
  int nd = pd_ctx_attr_ints(ctx, "shape", dims, MAXD + 1);
  int64_t ii = pd_ctx_attr_int(ctx, "input_dim_idx"), oi = pd_ctx_attr_int(ctx, "output_dim_idx");
  if (nd < 1 || nd > MAXD)
    return pd_ctx_fail(ctx, PD_EINVAL, "shape %s must have 1 to %d dims",
                       dims_str(nd < 0 ? 0 : nd, dims, sl, sizeof sl), MAXD);
  if (oi < 0 || oi >= nd)
    return pd_ctx_fail(ctx, PD_EINVAL, "output_dim_idx %" PRId64 " is out of range for shape %s",
                       oi, dims_str(nd, dims, sl, sizeof sl));
  if (ii < 0 || ii >= in->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "input_dim_idx %" PRId64 " is out of range for Input %s",
                       ii, shape_str(in, s));
  dims[oi] = ii == 0 && in->nlod ? in->lod[in->nlod - 1].n - 1 : in->dims[ii];
  for (int i = 0; i < nd; i++)
    if (dims[i] < 0)
      return pd_ctx_fail(ctx, PD_EINVAL, "shape %s has a negative dim",
                         dims_str(nd, dims, sl, sizeof sl));
  return fill_out(ctx, NULL, nd, dims);
}

/* fill_zeros_like: zeros with X's dtype, shape and LoD. */
pd_status pd_kernel_fill_zeros_like(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = out_at(ctx, "Out", 0, true, &out)) ||
      (st = resize(ctx, out, x->dtype, x->ndims, x->dims, x)))
    return st;
  size_t nb = pd_tensor_nbytes(out);
  if (nb) memset(pd_tensor_data(out), 0, nb);  /* all-zero bytes are 0 in every dtype */
  return PD_OK;
}

/* assign: Out = a deep copy of X (data and LoD), a tensor or a tensor array. */
pd_status pd_kernel_assign(pd_exec_ctx *ctx) {
  pd_variable *ov = pd_ctx_out_var(ctx, "Out", 0);
  if (!ov) return pd_ctx_fail(ctx, PD_EINVAL, "output Out is not given");
  return copy_var(ctx, pd_ctx_in_var(ctx, "X", 0), "X", ov, "Out");
}

/* assign_grad: dX = dOut (a copy), with X's LoD when X is a tensor. */
pd_status pd_kernel_assign_grad(pd_exec_ctx *ctx) {
  pd_variable *gv = pd_ctx_out_var(ctx, "X@GRAD", 0);
  if (!gv) return PD_OK;
  pd_variable *dv = pd_ctx_in_var(ctx, "Out@GRAD", 0);
  if (!dv) return pd_ctx_fail(ctx, PD_EINVAL, "input Out@GRAD is not given");
  pd_status st = copy_var(ctx, dv, "Out@GRAD", gv, "X@GRAD");
  if (st) return st;
  const pd_tensor *x = in_if_set(ctx, "X", 0);
  if (x && gv->type == PD_VAR_LOD_TENSOR) {
    char s1[DIMS_BUF], s2[DIMS_BUF];
    if (pd_tensor_numel(&gv->u.tensor) != pd_tensor_numel(x))
      return pd_ctx_fail(ctx, PD_ESHAPE, "Out@GRAD %s does not match X %s", shape_str(&gv->u.tensor, s1),
                         shape_str(x, s2));
    if (pd_tensor_copy_lod(&gv->u.tensor, x)) return nomem(ctx);
  }
  return PD_OK;
}

/* Element i of a list attribute of any numeric type, as a double and an int64. */
static void attr_elem(const pd_attr *a, int i, double *d, int64_t *l) {
  switch (a->type) {
    case PD_ATTR_INTS: *l = a->ints[i]; *d = (double)*l; break;
    case PD_ATTR_LONGS: *l = a->longs[i]; *d = (double)*l; break;
    case PD_ATTR_BOOLEANS: *l = a->bools[i]; *d = (double)*l; break;
    case PD_ATTR_FLOATS: *d = a->floats[i]; *l = (int64_t)*d; break;
    case PD_ATTR_FLOAT64S: *d = a->doubles[i]; *l = (int64_t)*d; break;
    default: *d = 0; *l = 0; break;
  }
}

/* assign_value: a constant from the attributes: shape, dtype, and the list for the dtype
 * (fp32_values for float32 and float64, int32_values, int64_values, bool_values). */
pd_status pd_kernel_assign_value(pd_exec_ctx *ctx) {
  int64_t dims[MAXD];
  int nd = pd_ctx_attr_ints(ctx, "shape", dims, MAXD);
  if (nd > MAXD)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "shape has %d dims; at most %d are supported", nd,
                       MAXD);
  if (nd < 0) nd = 0;
  for (int i = 0; i < nd; i++)
    if (dims[i] < 0) return pd_ctx_fail(ctx, PD_EINVAL, "shape has a negative dim");
  pd_dtype dt = (pd_dtype)pd_ctx_attr_int(ctx, "dtype");
  const char *list = is_float(dt) ? "fp32_values"
                     : dt == PD_INT32               ? "int32_values"
                     : dt == PD_INT64               ? "int64_values"
                     : dt == PD_BOOL                ? "bool_values"
                                                    : NULL;
  if (!list)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "dtype %s is not supported (float32, float64, "
                       "int32, int64 and bool are)", pd_dtype_name(dt));
  const pd_attr *a = pd_ctx_attr_raw(ctx, list);
  int64_t n = pd_k_numel(nd, dims);
  int have = a ? a->n : 0;
  if (n < 0 || have != n)
    return pd_ctx_fail(ctx, PD_EINVAL, "%s holds %d values but the shape has %" PRId64
                       " elements", list, have, n);
  pd_tensor *out;
  pd_status st;
  if ((st = out_at(ctx, "Out", 0, true, &out)) || (st = resize(ctx, out, dt, nd, dims, NULL)))
    return st;
  void *o = pd_tensor_data(out);
  for (int64_t i = 0; i < n; i++) {
    double d;
    int64_t l;
    attr_elem(a, (int)i, &d, &l);
    switch (dt) {
      case PD_FP32: ((float *)o)[i] = (float)d; break;
      case PD_FP64: ((double *)o)[i] = d; break;
      case PD_INT32: ((int32_t *)o)[i] = (int32_t)l; break;
      case PD_INT64: ((int64_t *)o)[i] = l; break;
      default: ((uint8_t *)o)[i] = l != 0; break;
    }
  }
  return PD_OK;
}

/* ================================================================ random numbers */

/* uniform_random / gaussian_random: Out [shape] of a float dtype. seed 0 draws from the
 * executor's generator (reproducible from its seed, different on every call); any other seed
 * gives the same numbers on every run, as Fluid. uniform_random's diag_num > 0 then sets
 * diag_num elements i * (diag_step + 1) to diag_val (Fluid's diagonal initialiser). */
pd_status pd_kernel_random_fill(pd_exec_ctx *ctx) {
  const bool normal = ctx->def->karg == PD_OPV_GAUSSIAN;
  int64_t dims[MAXD];
  int nd;
  pd_status st = fill_shape(ctx, dims, &nd);
  if (st) return st;
  pd_dtype dt = (pd_dtype)pd_ctx_attr_int(ctx, "dtype");
  if (!is_float(dt))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "dtype %s is not supported (float32 and float64 "
                       "are)", pd_dtype_name(dt));
  double a = normal ? pd_ctx_attr_float(ctx, "mean") : pd_ctx_attr_float(ctx, "min");
  double b = normal ? pd_ctx_attr_float(ctx, "std") : pd_ctx_attr_float(ctx, "max");
  if (!normal && !(a < b))
    return pd_ctx_fail(ctx, PD_EINVAL, "min (%g) must be less than max (%g)", a, b);
  if (normal && !(b >= 0))
    return pd_ctx_fail(ctx, PD_EINVAL, "std must not be negative, got %g", b);
  int64_t seed = pd_ctx_attr_int(ctx, "seed");
  pd_k_rng local, *rng = ctx->rng;
  if (seed != 0) {
    pd_k_rng_init(&local, (uint64_t)seed);
    rng = &local;
  }
  pd_tensor *out;
  if ((st = out_at(ctx, "Out", 0, true, &out)) || (st = resize(ctx, out, dt, nd, dims, NULL)))
    return st;
  int64_t n = pd_tensor_numel(out);
  st = normal ? ctx->k->gaussian(dt, n, pd_tensor_data(out), a, b, rng)
              : ctx->k->uniform(dt, n, pd_tensor_data(out), a, b, rng);
  if (st) return pd_ctx_check(ctx, st, normal ? "gaussian" : "uniform");
  int64_t diag = normal ? 0 : pd_ctx_attr_int(ctx, "diag_num");
  if (diag > 0) {
    int64_t step = pd_ctx_attr_int(ctx, "diag_step");
    if (step < 0 || (diag - 1) * (step + 1) >= n)
      return pd_ctx_fail(ctx, PD_EINVAL, "diag_num %" PRId64 " with diag_step %" PRId64
                         " does not fit in %" PRId64 " elements", diag, step, n);
    double dv = pd_ctx_attr_float(ctx, "diag_val");
    char *o = pd_tensor_data(out);
    size_t es = pd_dtype_size(dt);
    /* one element at a time through the backend: the tensor may be on the GPU */
    for (int64_t i = 0; i < diag && !st; i++)
      st = ctx->k->fill(dt, 1, o + (size_t)(i * step + i) * es, dv);
    if (st) return pd_ctx_check(ctx, st, "fill");
  }
  return PD_OK;
}

/* increment: Out = X + step for a one-element X of any numeric dtype (a loop counter). */
pd_status pd_kernel_increment(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  char s[DIMS_BUF];
  pd_status st;
  if ((st = in_at(ctx, "X", 0, true, &x))) return st;
  if (pd_tensor_numel(x) != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must hold one element, got %s", shape_str(x, s));
  double step = pd_ctx_attr_float(ctx, "step");
  pd_dtype dt = x->dtype;
  double v = elem_f(x, 0);
  int64_t iv = elem_i(x, 0);
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64)
    return pd_ctx_fail(ctx, PD_ETYPE, "X must hold float32, float64, int32 or int64, got %s",
                       pd_dtype_name(dt));
  if ((st = out_at(ctx, "Out", 0, true, &out)) ||
      (st = resize(ctx, out, dt, x->ndims, x->dims, x)))
    return st;
  switch (dt) {
    case PD_FP32: PD_TENSOR_F32(out)[0] = (float)(v + step); break;
    case PD_FP64: PD_TENSOR_F64(out)[0] = v + step; break;
    case PD_INT32: PD_TENSOR_I32(out)[0] = (int32_t)(iv + (int64_t)step); break;
    default: PD_TENSOR_I64(out)[0] = iv + (int64_t)step; break;
  }
  return PD_OK;
}

/* range: Out[i] = Start + i * Step for i < size, where size is 0 when Step points away from End,
 * else ceil(|End - Start| / |Step|) (in integers for int32/int64; in Start's float type for
 * floats, as Paddle's arange). Start, End and Step are one-element host tensors, converted to
 * Start's dtype; the values are made on the host and uploaded when the op computes on the GPU. */
pd_status pd_kernel_range(pd_exec_ctx *ctx) {
  static const char *const slots[] = {"Start", "End", "Step"};
  const pd_tensor *t[3];
  double f[3];
  int64_t l[3];
  pd_status st;
  for (int i = 0; i < 3; i++)
    if ((st = in_at(ctx, slots[i], 0, true, &t[i])) ||
        (st = scalar_in(ctx, slots[i], t[i], &f[i])))
      return st;
  pd_dtype dt = t[0]->dtype;
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64)
    return pd_ctx_fail(ctx, PD_ETYPE, "Start must be float32, float64, int32 or int64, got %s",
                       pd_dtype_name(dt));
  bool integral = is_int(dt);
  for (int i = 0; i < 3; i++) {
    l[i] = elem_i(t[i], 0);
    if (integral) f[i] = (double)l[i];
    else if (dt == PD_FP32) f[i] = (float)f[i];
  }
  if (integral ? l[2] == 0 : f[2] == 0)
    return pd_ctx_fail(ctx, PD_EINVAL, "Step must not be 0");
  int64_t n = 0;
  if (!((f[0] < f[1] && f[2] < 0) || (f[0] > f[1] && f[2] > 0))) {
    if (integral) {
      bool up = l[1] > l[0];
      uint64_t span = (uint64_t)(up ? l[1] : l[0]) - (uint64_t)(up ? l[0] : l[1]);
      uint64_t step = l[2] < 0 ? 0 - (uint64_t)l[2] : (uint64_t)l[2];
      n = (int64_t)(span / step + (span % step != 0));
    } else {
      double q = dt == PD_FP32 ? (double)fabsf((float)((float)(f[1] - f[0]) / (float)f[2]))
                               : fabs((f[1] - f[0]) / f[2]);
      q = ceil(q);
      if (!(q < 9.2e18))
        return pd_ctx_fail(ctx, PD_EINVAL, "range from %g to %g by %g has too many elements",
                           f[0], f[1], f[2]);
      n = (int64_t)q;
    }
  }
  pd_tensor *out;
  if ((st = out_at(ctx, "Out", 0, true, &out)) || (st = resize(ctx, out, dt, 1, &n, NULL)))
    return st;
  if (n == 0) return PD_OK;
  size_t bytes = (size_t)n * pd_dtype_size(dt);
  bool host = pd_ctx_place(ctx) == PD_K_HOST;
  void *o = host ? pd_tensor_data(out) : pd_k_host_alloc(bytes);
  if (!o) return nomem(ctx);
  for (int64_t i = 0; i < n; i++) {
    switch (dt) {
      case PD_FP32: ((float *)o)[i] = (float)(f[0] + (double)i * f[2]); break;
      case PD_FP64: ((double *)o)[i] = f[0] + (double)i * f[2]; break;
      case PD_INT32: ((int32_t *)o)[i] = (int32_t)(l[0] + i * l[2]); break;
      default: ((int64_t *)o)[i] = l[0] + i * l[2]; break;
    }
  }
  if (host) return PD_OK;
  st = pd_mem_copy(pd_tensor_data(out), PD_K_CUDA, o, PD_K_HOST, bytes);
  pd_k_host_free(o);
  return pd_ctx_check(ctx, st, "upload");
}
