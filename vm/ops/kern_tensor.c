/* kern_tensor.c -- op kernels of the ops that make, copy and rearrange tensors and of the layers
 * built on them: feed/fetch, fill_constant, fill_zeros_like, assign, assign_value, the random
 * initialisers, concat, split, reshape2, transpose2, the embedding lookups, dropout, increment,
 * the LoD ops (lod_reset, sequence_pool, sequence_softmax), conv2d and pool2d, the optimizers
 * (sgd, momentum, adam), and the gradient kernels of the differentiable ones among them.
 *
 * Semantics are Fluid's (each kernel says where it had to choose). Numbers go through the
 * backend (ctx->k) where kernels/kernels.h has a kernel for the job; moves of whole rows and the
 * small per-sequence loops are written here. Every kernel reads its inputs' data before it
 * resizes an output, and copies an input that is the very tensor of an output whose shape
 * changes, so an op may write over one of its inputs (x = reshape2(x), optimizers in place). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ops/kern.h"

/* ================================================================ helpers */

enum { LIST_BUF = 256 };

/* A shape given at run time: one int tensor per dim in list_slot, or one 1-D int tensor in
 * tensor_slot; otherwise the attribute attr. *given says whether an input gave it. */
static pd_status shape_from(const pd_exec_ctx *ctx, const char *list_slot,
                            const char *tensor_slot, const char *attr, int64_t *dims, int *nd,
                            bool *given) {
  char s[DIMS_BUF];
  int nl = pd_ctx_nin(ctx, list_slot);
  *given = true;
  if (nl > 0) {
    if (nl > MAXD)
      return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s gives %d dims; at most %d are supported",
                         list_slot, nl, MAXD);
    for (int i = 0; i < nl; i++) {
      const pd_tensor *t;
      pd_status st = in_at(ctx, list_slot, i, true, &t);
      if (!st) st = int_scalar_in(ctx, list_slot, t, &dims[i]);
      if (st) return st;
    }
    *nd = nl;
    return PD_OK;
  }
  const pd_tensor *t = in_if_set(ctx, tensor_slot, 0);
  if (t) {
    if (!is_int(t->dtype))
      return pd_ctx_fail(ctx, PD_ETYPE, "%s must hold int32 or int64 values, got %s",
                         tensor_slot, pd_dtype_name(t->dtype));
    if (t->ndims != 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "%s must have 1 dim, got %s", tensor_slot, shape_str(t, s));
    if (t->dims[0] > MAXD)
      return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s gives %" PRId64 " dims; at most %d are "
                         "supported", tensor_slot, t->dims[0], MAXD);
    *nd = (int)t->dims[0];
    for (int i = 0; i < *nd; i++) dims[i] = elem_i(t, i);
    return PD_OK;
  }
  *given = false;
  int n = pd_ctx_attr_ints(ctx, attr, dims, MAXD);
  if (n > MAXD)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s has %d dims; at most %d are supported", attr,
                       n, MAXD);
  *nd = n < 0 ? 0 : n;
  return PD_OK;
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
 * of a [pre, total, post] tensor: to_slab false reads the slab into dense. */
static void slab_copy(void *dense, void *whole, int64_t pre, int64_t total, int64_t off,
                      int64_t len, int64_t post, size_t esz, bool to_slab) {
  size_t part = (size_t)(len * post) * esz;
  if (!part) return;
  for (int64_t i = 0; i < pre; i++) {
    char *d = (char *)dense + (size_t)i * part;
    char *w = (char *)whole + ((size_t)(i * total + off) * (size_t)post) * esz;
    if (to_slab) memcpy(w, d, part);
    else memcpy(d, w, part);
  }
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

/* ================================================================ constants and copies */

/* fill_constant: Out [shape] of dtype, every element value. The value comes from ValueTensor,
 * else str_value when set (parsed; "inf", "-inf", "nan" too), else value; the shape from
 * ShapeTensorList / ShapeTensor, else the attribute. int64 values from str_value or ValueTensor
 * are exact beyond 2^53. */
pd_status pd_kernel_fill_constant(pd_exec_ctx *ctx) {
  int64_t dims[MAXD];
  int nd;
  pd_status st = fill_shape(ctx, dims, &nd);
  if (st) return st;
  int64_t t = pd_ctx_attr_int(ctx, "dtype");
  if (t != (int)t || !pd_dtype_valid((int)t))
    return pd_ctx_fail(ctx, PD_EINVAL, "dtype %" PRId64 " is not a data type", t);
  pd_dtype dt = (pd_dtype)t;
  if (dt != PD_FP32 && dt != PD_FP64 && dt != PD_INT32 && dt != PD_INT64 && dt != PD_BOOL)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "dtype %s is not supported (float32, float64, "
                       "int32, int64 and bool are)", pd_dtype_name(dt));
  double v = pd_ctx_attr_float(ctx, "value");
  int64_t iv = 0;
  bool exact = false;
  const pd_tensor *vt = in_if_set(ctx, "ValueTensor", 0);
  const char *sv = pd_ctx_attr_str(ctx, "str_value");
  if (vt) {
    if ((st = scalar_in(ctx, "ValueTensor", vt, &v))) return st;
    if (is_int(vt->dtype)) {
      iv = elem_i(vt, 0);
      exact = true;
    }
  } else if (*sv) {
    char *end;
    errno = 0;
    long long ll = strtoll(sv, &end, 10);
    if (*end == '\0' && errno == 0) {
      iv = ll;
      exact = true;
      v = (double)ll;
    } else {
      v = strtod(sv, &end);
      if (end == sv || *end != '\0')
        return pd_ctx_fail(ctx, PD_EINVAL, "str_value '%s' is not a number", sv);
    }
  }
  pd_tensor *out;
  if ((st = out_at(ctx, "Out", 0, true, &out)) || (st = resize(ctx, out, dt, nd, dims, NULL)))
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

/* Deep copy of the value of var xv (a tensor or a tensor array) into var ov, given its slot
 * names for messages. The same var is left alone. */
static pd_status copy_var(const pd_exec_ctx *ctx, pd_variable *xv, const char *xslot,
                          pd_variable *ov, const char *oslot) {
  if (!xv) return pd_ctx_fail(ctx, PD_EINVAL, "input %s is not given", xslot);
  if (!ov) return PD_OK;
  if (xv == ov) return PD_OK;
  if (xv->type == PD_VAR_LOD_TENSOR) {
    if (ov->type != PD_VAR_LOD_TENSOR && ov->type != PD_VAR_UNSET) pd_var_reset(ov);
    pd_tensor *o = pd_var_tensor(ov);
    if (!o) return pd_ctx_fail(ctx, PD_ETYPE, "output %s does not hold a tensor", oslot);
    if (pd_tensor_copy(o, &xv->u.tensor)) return nomem(ctx);
    return PD_OK;
  }
  if (xv->type == PD_VAR_LOD_TENSOR_ARRAY) {
    if (ov->type != PD_VAR_LOD_TENSOR_ARRAY && ov->type != PD_VAR_UNSET) pd_var_reset(ov);
    pd_tensor_array *o = pd_var_tensor_array(ov);
    const pd_tensor_array *a = &xv->u.array;
    if (!o) return pd_ctx_fail(ctx, PD_ETYPE, "output %s does not hold a tensor array", oslot);
    pd_tensor_array_truncate(o, (int64_t)a->n);
    if (pd_tensor_array_reserve(o, (int64_t)a->n)) return nomem(ctx);
    for (size_t i = 0; i < a->n; i++)
      if (pd_tensor_copy(o->items[i], a->items[i])) return nomem(ctx);
    return PD_OK;
  }
  return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s (var '%s') holds a %s; assign copies tensors and "
                     "tensor arrays", xslot, pd_var_name(xv), pd_var_type_name(xv->type));
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
  const char *list = dt == PD_FP32 || dt == PD_FP64 ? "fp32_values"
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
static pd_status random_fill(pd_exec_ctx *ctx, bool normal) {
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
    FLOAT_SWITCH(dt, {
      T *o = (T *)pd_tensor_data(out);
      for (int64_t i = 0; i < diag; i++) o[i * step + i] = (T)dv;
    });
  }
  return PD_OK;
}

pd_status pd_kernel_uniform_random(pd_exec_ctx *ctx) { return random_fill(ctx, false); }
pd_status pd_kernel_gaussian_random(pd_exec_ctx *ctx) { return random_fill(ctx, true); }

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
  size_t esz = pd_dtype_size(dy->dtype);
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *x = pd_ctx_in_at(ctx, "X", i);
    pd_tensor *dx;
    st = out_at(ctx, "X@GRAD", i, false, &dx);
    if (!st && dx) st = unalias(ctx, &h, dx, &dy);
    if (!st && dx) st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x);
    if (!st && dx)
      slab_copy(pd_tensor_data(dx), pd_tensor_data(dy), pre, total, off, x->dims[axis], post,
                esz, false);
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
      slab_copy(pd_tensor_data(o), pd_tensor_data(x), pre, x->dims[axis], off, sizes[i], post,
                pd_dtype_size(x->dtype), false);
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
  size_t esz = pd_dtype_size(x->dtype);
  if (!st) st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x);
  for (int i = 0; i < nout && !st; i++) {
    const pd_tensor *g = in_if_set(ctx, "Out@GRAD", i);
    if (g == dx) g = &tg;
    int64_t d[MAXD];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->ndims);
    d[axis] = sizes[i];
    if (g && (st = want_grad_shape(ctx, "Out@GRAD", g, x->ndims, d, x->dtype))) break;
    if (g) {
      slab_copy(pd_tensor_data(g), pd_tensor_data(dx), pre, x->dims[axis], off, sizes[i], post,
                esz, true);
    } else {
      size_t part = (size_t)(sizes[i] * post) * esz;
      char *base = pd_tensor_data(dx);
      for (int64_t k = 0; k < pre && part; k++)
        memset(base + ((size_t)(k * x->dims[axis] + off) * (size_t)post) * esz, 0, part);
    }
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

/* reshape2: X's elements in a new shape: ShapeTensor (one tensor per dim), else Shape (a 1-D
 * tensor), else the attribute; 0 copies X's dim at that position, one -1 takes what is left.
 * Out is a copy (Fluid's TensorCopy); it keeps X's LoD when its first dim is X's. */
pd_status pd_kernel_reshape2(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st) return st;
  int64_t want[MAXD], d[MAXD];
  int nd;
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
  int xnd = x->ndims;
  int64_t xdims[MAXD];
  memcpy(xdims, x->dims, sizeof(int64_t) * (size_t)xnd);
  bool keep_lod = nd > 0 && xnd > 0 && d[0] == xdims[0];
  pd_tensor *out;
  if ((st = out_at(ctx, "Out", 0, true, &out))) return st;
  if (out == x) {
    pd_tensor_reshape(out, nd, d);  /* same element count: cannot fail */
    if (!keep_lod) pd_tensor_clear_lod(out);
  } else {
    if ((st = resize(ctx, out, x->dtype, nd, d, keep_lod ? x : NULL))) return st;
    if (pd_tensor_nbytes(x)) memcpy(pd_tensor_data(out), pd_tensor_data(x), pd_tensor_nbytes(x));
  }
  return write_xshape(ctx, xnd, xdims, out->dtype);
}

/* reshape2_grad: X@GRAD = Out@GRAD in X's shape (and with X's LoD). */
pd_status pd_kernel_reshape2_grad(pd_exec_ctx *ctx) {
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
  if (pd_tensor_nbytes(dy)) memcpy(pd_tensor_data(dx), pd_tensor_data(dy), pd_tensor_nbytes(dy));
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

/* lookup_table, lookup_table_v2: Out = the rows of W picked by Ids (a zero row for padding_idx);
 * Out takes Ids' LoD. An id outside the table is an error naming it. */
static pd_status lookup(pd_exec_ctx *ctx) {
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
  if (!(st = unalias(ctx, &h, out, &w)) && !(st = unalias(ctx, &h, out, &ids)) &&
      !(st = read_ids(ctx, ids, w, pad, &sc, &p)) &&
      !(st = resize(ctx, out, w->dtype, nd, dims, ids)))
    st = pd_ctx_check(ctx, ctx->k->gather_rows(w->dtype, w->dims[0], w->dims[1],
                                               pd_tensor_data(w), pd_tensor_numel(ids), p, pad,
                                               pd_tensor_data(out)),
                      "gather_rows");
  local_free(&sc);
  hold_free(&h);
  return st;
}

/* lookup_table(_v2)_grad: a dense W@GRAD [rows, width]: zeros, plus each Out@GRAD row added to
 * the row of its id (repeated ids add up; padding_idx gets nothing). is_sparse is not honoured
 * (pdlang has no SelectedRows). */
static pd_status lookup_grad(pd_exec_ctx *ctx) {
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
  if (!(st = unalias(ctx, &h, dw, &dy)) && !(st = unalias(ctx, &h, dw, &ids)) &&
      !(st = read_ids(ctx, ids, w, pad, &sc, &p)) &&
      !(st = resize(ctx, dw, dt, 2, (int64_t[]){rows, width}, w))) {
    if (pd_tensor_nbytes(dw)) memset(pd_tensor_data(dw), 0, pd_tensor_nbytes(dw));
    st = pd_ctx_check(ctx, ctx->k->scatter_add_rows(dt, rows, width, pd_tensor_data(dw),
                                                    pd_tensor_numel(ids), p, pad, pd_tensor_data(dy)),
                      "scatter_add_rows");
  }
  local_free(&sc);
  hold_free(&h);
  return st;
}

pd_status pd_kernel_lookup_table(pd_exec_ctx *ctx) { return lookup(ctx); }
pd_status pd_kernel_lookup_table_v2(pd_exec_ctx *ctx) { return lookup(ctx); }
pd_status pd_kernel_lookup_table_grad(pd_exec_ctx *ctx) { return lookup_grad(ctx); }
pd_status pd_kernel_lookup_table_v2_grad(pd_exec_ctx *ctx) { return lookup_grad(ctx); }

/* ================================================================ dropout, increment */

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
    if (m && n) memset(m, c.is_test || c.p == 0 ? 1 : 0, (size_t)n);
    FLOAT_SWITCH(dt, {
      const T *xs = xd;
      T *o = (T *)pd_tensor_data(out);
      for (int64_t i = 0; i < n; i++) o[i] = (T)(xs[i] * scale);
    });
    hold_free(&h);
    return PD_OK;
  }
  pd_k_rng local, *rng = ctx->rng;
  if (seed != 0) {
    pd_k_rng_init(&local, (uint64_t)seed);
    rng = &local;
  }
  double scale = c.upscale ? 1.0 / (1.0 - c.p) : 1.0;
  float u[1024];  /* a multiple of 4: chunked draws continue the stream exactly */
  for (int64_t b = 0; b < n && !st; b += 1024) {
    int64_t e = n - b < 1024 ? n - b : 1024;
    if ((st = pd_ctx_check(ctx, ctx->k->uniform(PD_FP32, e, u, 0.0, 1.0, rng), "uniform")))
      break;
    FLOAT_SWITCH(dt, {
      const T *xs = (const T *)xd + b;
      T *o = (T *)pd_tensor_data(out) + b;
      for (int64_t i = 0; i < e; i++) {
        bool keep = u[i] >= c.p;
        o[i] = keep ? (T)(xs[i] * scale) : (T)0;
        if (m) m[b + i] = keep;
      }
    });
  }
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
  if (!(st = resize(ctx, dx, dy->dtype, dy->ndims, dy->dims, x ? x : dy))) {
    FLOAT_SWITCH(dy->dtype, {
      const T *g = dyd;
      T *o = (T *)pd_tensor_data(dx);
      for (int64_t i = 0; i < n; i++) o[i] = (m && !m[i]) ? (T)0 : (T)(g[i] * scale);
    });
  }
  hold_free(&h);
  return st;
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

/* ================================================================ LoD ops */

/* The innermost LoD level of x (sequence ops work on it), checked against x's rows. */
static pd_status last_level(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *x,
                            const pd_lod_level **lv) {
  char s[DIMS_BUF];
  if (x->nlod < 1 || x->ndims < 1)
    return pd_ctx_fail(ctx, PD_EINVAL, "%s %s has no LoD: %s works on a batch of sequences",
                       slot, shape_str(x, s), ctx->def->forward ? ctx->def->forward->type : ctx->op->type);
  const pd_lod_level *l = &x->lod[x->nlod - 1];
  bool ok = l->n >= 1 && l->offsets[0] == 0;
  for (int64_t i = 1; ok && i < l->n; i++) ok = l->offsets[i] >= l->offsets[i - 1];
  if (!ok)
    return pd_ctx_fail(ctx, PD_EINVAL, "the LoD of %s must start at 0 and never decrease", slot);
  if (l->offsets[l->n - 1] != x->dims[0])
    return pd_ctx_fail(ctx, PD_ESHAPE, "the LoD of %s ends at %" PRId64 " but %s %s has %" PRId64
                       " rows", slot, l->offsets[l->n - 1], slot, shape_str(x, s), x->dims[0]);
  *lv = l;
  return PD_OK;
}

/* lod_reset: Out = X's data with new sequence boundaries: Y's LoD when Y has one, else Y's data
 * (int offsets), else target_lod. With append the offsets become a new innermost level under
 * X's LoD (Y's whole LoD replaces X's, as Fluid, append or not). Beyond Fluid: without append,
 * offsets that end at the number of X's top-level sequences rather than at its rows (an error
 * in Fluid) group those sequences: a new top level above X's LoD. That is how
 * sequence(..., lod_level = 2) makes sequences of sequences. */
pd_status pd_kernel_lod_reset(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y = in_if_set(ctx, "Y", 0);
  pd_tensor *out;
  pd_status st;
  char s[DIMS_BUF], sl[LIST_BUF];
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = out_at(ctx, "Out", 0, true, &out))) return st;
  if (x->ndims < 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have at least 1 dim, got %s", shape_str(x, s));
  int64_t rows = x->dims[0];
  hold h;
  hold_init(&h);
  local_buf sc = {0};
  int64_t *level = NULL, nlev = 0;
  bool group = false; /* target_lod groups X's top-level sequences (see above) */
  if ((st = unalias(ctx, &h, out, &y))) goto out;
  if (y && y->nlod > 0) {
    const pd_lod_level *yl = &y->lod[y->nlod - 1];
    if (yl->n < 1 || yl->offsets[yl->n - 1] != rows) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "the LoD of Y ends at %" PRId64 " but X %s has %" PRId64
                       " rows", yl->n ? yl->offsets[yl->n - 1] : 0, shape_str(x, s), rows);
      goto out;
    }
  } else {
    if (y) {
      if (!is_int(y->dtype)) {
        st = pd_ctx_fail(ctx, PD_ETYPE, "Y must hold int32 or int64 offsets, got %s",
                         pd_dtype_name(y->dtype));
        goto out;
      }
      nlev = pd_tensor_numel(y);
    } else {
      nlev = pd_ctx_attr_ints(ctx, "target_lod", NULL, 0);
      if (nlev < 0) nlev = 0;
    }
    if (!(level = local_get(&sc, (size_t)(nlev ? nlev : 1) * sizeof *level))) {
      st = nomem(ctx);
      goto out;
    }
    if (y) {
      for (int64_t i = 0; i < nlev; i++) level[i] = elem_i(y, i);
    } else {
      pd_ctx_attr_ints(ctx, "target_lod", level, (int)nlev);
    }
    bool ok = nlev >= 2 && level[0] == 0;
    for (int64_t i = 1; ok && i < nlev; i++) ok = level[i] >= level[i - 1];
    const char *what = y ? "Y" : "target_lod";
    if (!ok) {
      st = pd_ctx_fail(ctx, PD_EINVAL, "%s %s must hold at least 2 offsets, start at 0 and never "
                       "decrease", what, dims_str(nlev < 32 ? (int)nlev : 32, level, sl, sizeof sl));
      goto out;
    }
    group = !pd_ctx_attr_bool(ctx, "append") && x->nlod > 0 && level[nlev - 1] != rows &&
            level[nlev - 1] == x->lod[0].n - 1;
    if (level[nlev - 1] != rows && !group) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "%s %s ends at %" PRId64 " but X %s has %" PRId64 " rows",
                       what, dims_str(nlev < 32 ? (int)nlev : 32, level, sl, sizeof sl),
                       level[nlev - 1], shape_str(x, s), rows);
      goto out;
    }
  }
  bool append = pd_ctx_attr_bool(ctx, "append") && !(y && y->nlod > 0);
  if ((append || group) && (st = unalias(ctx, &h, out, &x))) goto out;
  if (out != x) {
    if ((st = resize(ctx, out, x->dtype, x->ndims, x->dims, NULL))) goto out;
    if (pd_tensor_nbytes(x)) memcpy(pd_tensor_data(out), pd_tensor_data(x), pd_tensor_nbytes(x));
  }
  if (y && y->nlod > 0) {
    if (pd_tensor_copy_lod(out, y)) st = nomem(ctx);
  } else if (append) {
    const int64_t *offs[MAXD + 1];
    int64_t lens[MAXD + 1];
    if (x->nlod >= MAXD) {
      st = pd_ctx_fail(ctx, PD_EUNSUPPORTED, "X already has %d LoD levels", x->nlod);
      goto out;
    }
    for (int l = 0; l < x->nlod; l++) {
      offs[l] = x->lod[l].offsets;
      lens[l] = x->lod[l].n;
    }
    offs[x->nlod] = level;
    lens[x->nlod] = nlev;
    if (pd_tensor_set_lod(out, x->nlod + 1, offs, lens)) st = nomem(ctx);
  } else if (group) {
    const int64_t *offs[MAXD + 1];
    int64_t lens[MAXD + 1];
    if (x->nlod >= MAXD) {
      st = pd_ctx_fail(ctx, PD_EUNSUPPORTED, "X already has %d LoD levels", x->nlod);
      goto out;
    }
    offs[0] = level;
    lens[0] = nlev;
    for (int l = 0; l < x->nlod; l++) {
      offs[l + 1] = x->lod[l].offsets;
      lens[l + 1] = x->lod[l].n;
    }
    if (pd_tensor_set_lod(out, x->nlod + 1, offs, lens)) st = nomem(ctx);
  } else {
    const int64_t *offs[1] = {level};
    if (pd_tensor_set_lod(out, 1, offs, &nlev)) st = nomem(ctx);
  }
out:
  local_free(&sc);
  hold_free(&h);
  return st;
}

/* lod_reset_grad: X@GRAD = Out@GRAD's data with X's LoD. */
pd_status pd_kernel_lod_reset_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *dy, *x;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "Out@GRAD", 0, true, &dy)) || (st = in_at(ctx, "X", 0, true, &x)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  if (dx != dy) {
    if ((st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x))) return st;
    if (pd_tensor_nbytes(dy)) memcpy(pd_tensor_data(dx), pd_tensor_data(dy), pd_tensor_nbytes(dy));
  } else if (pd_tensor_copy_lod(dx, x)) {
    return nomem(ctx);
  }
  return PD_OK;
}

typedef enum seqpool { SP_AVERAGE, SP_SUM, SP_SQRT, SP_LAST, SP_FIRST, SP_MAX } seqpool;

static pd_status seqpool_type(const pd_exec_ctx *ctx, seqpool *t) {
  static const char *const names[] = {"AVERAGE", "SUM", "SQRT", "LAST", "FIRST", "MAX"};
  const char *s = pd_ctx_attr_str(ctx, "pooltype");
  for (int i = 0; i < (int)PD_ARRAY_LEN(names); i++)
    if (strcmp(s, names[i]) == 0) {
      *t = (seqpool)i;
      return PD_OK;
    }
  return pd_ctx_fail(ctx, PD_EINVAL, "unknown pooltype '%s' (AVERAGE, SUM, SQRT, LAST, FIRST or "
                     "MAX)", s);
}

/* sequence_pool: one row per sequence of X's innermost LoD level: Out [sequences] + X.dims[1:],
 * with X's outer LoD levels. AVERAGE, SUM, SQRT (sum / sqrt(length)), LAST, FIRST, MAX (MaxIndex
 * records the row of each maximum, the first on ties). An empty sequence gives pad_value (and
 * MaxIndex -1). MaxIndex, int32 shaped like Out, is written for every pooltype (-1 unless MAX)
 * so that a gradient op can always bind it. */
pd_status pd_kernel_sequence_pool(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  const pd_lod_level *lv;
  pd_tensor *out, *mi;
  seqpool pt = SP_SUM;
  pd_status st;
  if ((st = seqpool_type(ctx, &pt)) || (st = in_at(ctx, "X", 0, true, &x)) ||
      (st = want_float(ctx, "X", x)) || (st = last_level(ctx, "X", x, &lv)) ||
      (st = out_at(ctx, "Out", 0, true, &out)) || (st = out_at(ctx, "MaxIndex", 0, false, &mi)))
    return st;
  if (mi == out) return pd_ctx_fail(ctx, PD_EINVAL, "Out and MaxIndex are the same var");
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (mi && (st = unalias(ctx, &h, mi, &x)))) {
    hold_free(&h);
    return st;
  }
  lv = &x->lod[x->nlod - 1];
  int64_t nseq = lv->n - 1, w = prod(x->dims, 1, x->ndims), dims[MAXD];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->ndims);
  dims[0] = nseq;
  double pad = pd_ctx_attr_float(ctx, "pad_value");
  pd_dtype dt = x->dtype;
  if ((st = resize(ctx, out, dt, x->ndims, dims, NULL)) ||
      (mi && (st = resize(ctx, mi, PD_INT32, x->ndims, dims, NULL)))) {
    hold_free(&h);
    return st;
  }
  if (x->nlod > 1) { /* the outer levels stay */
    const int64_t *offs[MAXD];
    int64_t lens[MAXD];
    int nl = x->nlod - 1 < MAXD ? x->nlod - 1 : MAXD;
    for (int l = 0; l < nl; l++) {
      offs[l] = x->lod[l].offsets;
      lens[l] = x->lod[l].n;
    }
    if (pd_tensor_set_lod(out, nl, offs, lens) ||
        (mi && pd_tensor_set_lod(mi, nl, offs, lens))) {
      hold_free(&h);
      return nomem(ctx);
    }
  }
  int32_t *mid = mi ? PD_TENSOR_I32(mi) : NULL;
  if (mid && pt != SP_MAX)
    for (int64_t i = 0; i < nseq * w; i++) mid[i] = -1;
  FLOAT_SWITCH(dt, {
    const T *xd = (const T *)pd_tensor_data(x);
    T *od = (T *)pd_tensor_data(out);
    for (int64_t s = 0; s < nseq; s++) {
      int64_t b = lv->offsets[s], e = lv->offsets[s + 1], len = e - b;
      T *o = od + s * w;
      int32_t *m = mid ? mid + s * w : NULL;
      if (len == 0) {
        for (int64_t k = 0; k < w; k++) {
          o[k] = (T)pad;
          if (m) m[k] = -1;
        }
        continue;
      }
      switch (pt) {
        case SP_LAST:
        case SP_FIRST:
          memcpy(o, xd + (pt == SP_LAST ? e - 1 : b) * w, (size_t)w * sizeof(T));
          break;
        case SP_MAX:
          for (int64_t k = 0; k < w; k++) {
            T best = xd[b * w + k];
            int64_t at = b;
            for (int64_t r = b + 1; r < e; r++)
              if (xd[r * w + k] > best) {
                best = xd[r * w + k];
                at = r;
              }
            o[k] = best;
            if (m) m[k] = (int32_t)at;
          }
          break;
        default: {
          double div = pt == SP_SUM ? 1.0 : pt == SP_SQRT ? sqrt((double)len) : (double)len;
          for (int64_t k = 0; k < w; k++) o[k] = 0;
          for (int64_t r = b; r < e; r++)
            for (int64_t k = 0; k < w; k++) o[k] += xd[r * w + k];
          if (div != 1.0)
            for (int64_t k = 0; k < w; k++) o[k] = (T)(o[k] / div);
          break;
        }
      }
    }
  });
  hold_free(&h);
  return PD_OK;
}

/* sequence_pool_grad: Out@GRAD of each sequence spread back over its rows: SUM copies it,
 * AVERAGE divides by the length, SQRT by its square root, LAST/FIRST/MAX send it to one row
 * (MAX: the one MaxIndex recorded, or the first maximum of X when MaxIndex is not given);
 * other rows get 0. */
pd_status pd_kernel_sequence_pool_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x, *dy;
  const pd_lod_level *lv;
  seqpool pt = SP_SUM;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = seqpool_type(ctx, &pt)) || (st = in_at(ctx, "X", 0, true, &x)) ||
      (st = want_float(ctx, "X", x)) || (st = last_level(ctx, "X", x, &lv)) ||
      (st = in_at(ctx, "Out@GRAD", 0, true, &dy)))
    return st;
  int64_t nseq = lv->n - 1, w = prod(x->dims, 1, x->ndims), dims[MAXD];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->ndims);
  dims[0] = nseq;
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, dims, x->dtype))) return st;
  const pd_tensor *mi = pt == SP_MAX ? in_if_set(ctx, "MaxIndex", 0) : NULL;
  if (mi && (mi->dtype != PD_INT32 || pd_tensor_numel(mi) != nseq * w)) mi = NULL;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &dy)) ||
      (st = unalias(ctx, &h, dx, &mi)))
    goto out;
  lv = &x->lod[x->nlod - 1];
  if ((st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x))) goto out;
  if (pd_tensor_nbytes(dx)) memset(pd_tensor_data(dx), 0, pd_tensor_nbytes(dx));
  const int32_t *mid = mi ? PD_TENSOR_I32(mi) : NULL;
  FLOAT_SWITCH(x->dtype, {
    const T *xd = (const T *)pd_tensor_data(x), *g = (const T *)pd_tensor_data(dy);
    T *d = (T *)pd_tensor_data(dx);
    for (int64_t s = 0; s < nseq && !st; s++) {
      int64_t b = lv->offsets[s], e = lv->offsets[s + 1], len = e - b;
      const T *gs = g + s * w;
      if (len == 0) continue;
      switch (pt) {
        case SP_LAST:
        case SP_FIRST:
          memcpy(d + (pt == SP_LAST ? e - 1 : b) * w, gs, (size_t)w * sizeof(T));
          break;
        case SP_MAX:
          for (int64_t k = 0; k < w; k++) {
            int64_t at = b;
            if (mid) {
              at = mid[s * w + k];
              if (at < b || at >= e) {
                st = pd_ctx_fail(ctx, PD_EINVAL, "MaxIndex holds row %" PRId64 ", outside "
                                 "sequence %" PRId64 " (rows %" PRId64 " to %" PRId64 ")", at, s,
                                 b, e - 1);
                break;
              }
            } else {
              for (int64_t r = b + 1; r < e; r++)
                if (xd[r * w + k] > xd[at * w + k]) at = r;
            }
            d[at * w + k] = gs[k];
          }
          break;
        default: {
          double div = pt == SP_SUM ? 1.0 : pt == SP_SQRT ? sqrt((double)len) : (double)len;
          for (int64_t r = b; r < e; r++)
            for (int64_t k = 0; k < w; k++) d[r * w + k] = (T)(gs[k] / div);
          break;
        }
      }
    }
  });
out:
  hold_free(&h);
  return st;
}

/* X of sequence_softmax: one value per row ([N] or [N, 1]), grouped by the innermost LoD. */
static pd_status seq_softmax_in(const pd_exec_ctx *ctx, const pd_tensor *x,
                                const pd_lod_level **lv) {
  char s[DIMS_BUF];
  pd_status st = want_float(ctx, "X", x);
  if (st || (st = last_level(ctx, "X", x, lv))) return st;
  if (pd_tensor_numel(x) != x->dims[0])
    return pd_ctx_fail(ctx, PD_ESHAPE, "X %s must hold one value per row ([N] or [N, 1])",
                       shape_str(x, s));
  return PD_OK;
}

/* sequence_softmax: a softmax within each sequence; Out has X's shape and LoD. */
pd_status pd_kernel_sequence_softmax(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  const pd_lod_level *lv;
  pd_tensor *out;
  pd_status st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = seq_softmax_in(ctx, x, &lv)) ||
      (st = out_at(ctx, "Out", 0, true, &out)))
    return st;
  const char *xd = pd_tensor_data(x);  /* softmax may write over its input */
  if ((st = resize(ctx, out, x->dtype, x->ndims, x->dims, x))) return st;
  lv = &out->lod[out->nlod - 1];
  size_t esz = pd_dtype_size(out->dtype);
  for (int64_t s = 0; s + 1 < lv->n && !st; s++) {
    int64_t b = lv->offsets[s], len = lv->offsets[s + 1] - b;
    if (len > 0)
      st = pd_ctx_check(ctx, ctx->k->softmax(out->dtype, 1, len, 1, xd + (size_t)b * esz,
                                             (char *)pd_tensor_data(out) + (size_t)b * esz),
                        "softmax");
  }
  return st;
}

/* sequence_softmax_grad: per sequence, dX = Out * (dOut - sum(dOut * Out)). */
pd_status pd_kernel_sequence_softmax_grad(pd_exec_ctx *ctx) {
  pd_tensor *dx;
  const pd_tensor *x, *y, *dy;
  const pd_lod_level *lv;
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = seq_softmax_in(ctx, x, &lv)) ||
      (st = in_at(ctx, "Out", 0, true, &y)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = want_grad_shape(ctx, "Out", y, x->ndims, x->dims, x->dtype)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &y))) goto out;
  const char *dyd = pd_tensor_data(dy);  /* softmax_grad may write over dOut */
  if ((st = resize(ctx, dx, x->dtype, x->ndims, x->dims, x))) goto out;
  lv = &x->lod[x->nlod - 1];
  size_t esz = pd_dtype_size(x->dtype);
  for (int64_t s = 0; s + 1 < lv->n && !st; s++) {
    int64_t b = lv->offsets[s], len = lv->offsets[s + 1] - b;
    size_t o = (size_t)b * esz;
    if (len > 0)
      st = pd_ctx_check(ctx, ctx->k->softmax_grad(x->dtype, 1, len, 1,
                                                  (const char *)pd_tensor_data(y) + o, dyd + o,
                                                  (char *)pd_tensor_data(dx) + o),
                        "softmax_grad");
  }
out:
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

/* Fluid's SAME padding of one spatial dim: out = ceil(in / stride), the total padding split
 * with the extra one at the end. */
static void same_pads(int64_t in, int64_t k, int64_t stride, int64_t *p0, int64_t *p1) {
  int64_t out = (in + stride - 1) / stride, sum = (out - 1) * stride + k - in;
  if (sum < 0) sum = 0;
  *p0 = sum / 2;
  *p1 = sum - *p0;
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
                     .dil_h = dil[0], .dil_w = dil[1]};
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
      !(st = resize(ctx, out, in->dtype, 4, (int64_t[]){p.n, p.oc, p.oh, p.ow}, NULL)))
    st = pd_ctx_check(ctx, ctx->k->conv2d(in->dtype, &p, pd_tensor_data(in), pd_tensor_data(f),
                                          pd_tensor_data(out)),
                      "conv2d");
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

/* The pooling of X as the attributes say. Adaptive pooling (ksize = the output size, windows
 * [floor(i * H / OH), ceil((i + 1) * H / OH))) is done here, not by the backend: *adaptive
 * says so, and p then holds only the sizes. */
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

/* Adaptive pooling (and its gradient when dy != NULL: dx overwritten; max sends each window's
 * gradient to its first maximum, as Fluid). */
static void adaptive_pool(const pd_k_pool2d *p, pd_dtype dt, const void *xv, void *yv,
                          const void *dyv, void *dxv) {
  FLOAT_SWITCH(dt, {
    for (int64_t pl = 0; pl < p->n * p->c; pl++) {
      const T *x = (const T *)xv + pl * p->h * p->w;
      T *y = yv ? (T *)yv + pl * p->oh * p->ow : NULL;
      const T *dy = dyv ? (const T *)dyv + pl * p->oh * p->ow : NULL;
      T *dx = dxv ? (T *)dxv + pl * p->h * p->w : NULL;
      if (dx) memset(dx, 0, (size_t)(p->h * p->w) * sizeof(T));
      for (int64_t oy = 0; oy < p->oh; oy++) {
        int64_t hs = oy * p->h / p->oh, he = ((oy + 1) * p->h + p->oh - 1) / p->oh;
        for (int64_t ox = 0; ox < p->ow; ox++) {
          int64_t ws = ox * p->w / p->ow, we = ((ox + 1) * p->w + p->ow - 1) / p->ow;
          int64_t count = (he - hs) * (we - ws), at = hs * p->w + ws;
          double sum = 0;
          for (int64_t iy = hs; iy < he; iy++)
            for (int64_t ix = ws; ix < we; ix++) {
              sum += x[iy * p->w + ix];
              if (x[iy * p->w + ix] > x[at]) at = iy * p->w + ix;
            }
          bool mx = p->type == PD_K_POOL_MAX;
          if (y) y[oy * p->ow + ox] = mx ? x[at] : (T)(sum / (double)count);
          if (!dx) continue;
          T g = dy[oy * p->ow + ox];
          if (mx) {
            dx[at] += g;
          } else {
            for (int64_t iy = hs; iy < he; iy++)
              for (int64_t ix = ws; ix < we; ix++) dx[iy * p->w + ix] += (T)(g / (double)count);
          }
        }
      }
    }
  });
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
    if (adaptive) adaptive_pool(&p, x->dtype, pd_tensor_data(x), pd_tensor_data(out), NULL, NULL);
    else
      st = pd_ctx_check(ctx, ctx->k->pool2d(x->dtype, &p, pd_tensor_data(x), pd_tensor_data(out)),
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
  if (adaptive)
    adaptive_pool(&p, x->dtype, pd_tensor_data(x), NULL, pd_tensor_data(dy), pd_tensor_data(dx));
  else /* avg does not read y: dy stands in for it */
    st = pd_ctx_check(ctx, ctx->k->pool2d_grad(x->dtype, &p, pd_tensor_data(x),
                                               pd_tensor_data(y ? y : dy), pd_tensor_data(dy),
                                               pd_tensor_data(dx)),
                      "pool2d_grad");
out:
  hold_free(&h);
  pd_tensor_release(&ty);
  return st;
}

/* ================================================================ optimizers */

/* An optimizer input shaped like Param, of Param's dtype. */
static pd_status like_param(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *param,
                            const pd_tensor **t) {
  char s1[DIMS_BUF], s2[DIMS_BUF];
  pd_status st = in_at(ctx, slot, 0, true, t);
  if (st) return st;
  if ((*t)->dtype != param->dtype)
    return pd_ctx_fail(ctx, PD_ETYPE, "%s holds %s but Param holds %s", slot,
                       pd_dtype_name((*t)->dtype), pd_dtype_name(param->dtype));
  if (pd_tensor_numel(*t) != pd_tensor_numel(param))
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s %s must have the shape of Param %s", slot,
                       shape_str(*t, s1), shape_str(param, s2));
  return PD_OK;
}

/* The output FooOut for input foo: resized to foo's shape (in place when it is foo's var). */
static pd_status update_out(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *like,
                            pd_tensor **out) {
  pd_status st = out_at(ctx, slot, 0, true, out);
  if (st) return st;
  return resize(ctx, *out, like->dtype, like->ndims, like->dims, like);
}

static pd_status no_multi_precision(const pd_exec_ctx *ctx) {
  if (pd_ctx_attr_bool(ctx, "multi_precision"))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "multi_precision (float16 parameters with float32 "
                       "master weights) is not supported");
  return PD_OK;
}

/* sgd: ParamOut = Param - LearningRate * Grad. */
pd_status pd_kernel_sgd(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad, *lrt;
  pd_tensor *pout;
  double lr;
  pd_status st;
  if ((st = no_multi_precision(ctx)) || (st = in_at(ctx, "Param", 0, true, &param)) ||
      (st = want_float(ctx, "Param", param)) || (st = like_param(ctx, "Grad", param, &grad)) ||
      (st = in_at(ctx, "LearningRate", 0, true, &lrt)) ||
      (st = scalar_in(ctx, "LearningRate", lrt, &lr)))
    return st;
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad);
  int64_t n = pd_tensor_numel(param);
  if ((st = update_out(ctx, "ParamOut", param, &pout))) return st;
  FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd;
    T *o = (T *)pd_tensor_data(pout);
    for (int64_t i = 0; i < n; i++) o[i] = (T)(p[i] - lr * g[i]);
  });
  return PD_OK;
}

/* momentum (Fluid): g = Grad * rescale_grad (+ regularization_coeff * Param with l2_decay);
 * VelocityOut = mu * Velocity + g; ParamOut = Param - lr * VelocityOut, or with use_nesterov
 * Param - lr * (g + mu * VelocityOut). */
pd_status pd_kernel_momentum(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad, *vel, *lrt;
  pd_tensor *pout, *vout;
  double lr;
  pd_status st;
  if ((st = no_multi_precision(ctx)) || (st = in_at(ctx, "Param", 0, true, &param)) ||
      (st = want_float(ctx, "Param", param)) || (st = like_param(ctx, "Grad", param, &grad)) ||
      (st = like_param(ctx, "Velocity", param, &vel)) ||
      (st = in_at(ctx, "LearningRate", 0, true, &lrt)) ||
      (st = scalar_in(ctx, "LearningRate", lrt, &lr)))
    return st;
  double mu = pd_ctx_attr_float(ctx, "mu"), rescale = pd_ctx_attr_float(ctx, "rescale_grad");
  double l2 = strcmp(pd_ctx_attr_str(ctx, "regularization_method"), "l2_decay") == 0
                  ? pd_ctx_attr_float(ctx, "regularization_coeff")
                  : 0.0;
  bool nesterov = pd_ctx_attr_bool(ctx, "use_nesterov");
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad), *vd = pd_tensor_data(vel);
  int64_t n = pd_tensor_numel(param);
  if ((st = update_out(ctx, "ParamOut", param, &pout)) ||
      (st = update_out(ctx, "VelocityOut", vel, &vout)))
    return st;
  if (pout == vout) return pd_ctx_fail(ctx, PD_EINVAL, "ParamOut and VelocityOut are one var");
  FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd, *v = vd;
    T *po = (T *)pd_tensor_data(pout), *vo = (T *)pd_tensor_data(vout);
    for (int64_t i = 0; i < n; i++) {
      double pi = p[i], gi = (double)g[i] * rescale + l2 * pi;
      double vn = (double)v[i] * mu + gi;
      vo[i] = (T)vn;
      po[i] = (T)(pi - lr * (nesterov ? gi + vn * mu : vn));
    }
  });
  return PD_OK;
}

/* adam (Fluid): lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow); m1 = b1 m1 + (1 - b1) g;
 * m2 = b2 m2 + (1 - b2) g^2; p -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 - beta2_pow));
 * Beta1PowOut = beta1_pow * b1, Beta2PowOut likewise (unless use_global_beta_pow). Beta1Tensor,
 * Beta2Tensor, EpsilonTensor override the attributes; a true SkipUpdate copies the inputs to
 * the outputs unchanged. */
pd_status pd_kernel_adam(pd_exec_ctx *ctx) {
  const pd_tensor *param, *grad, *m1, *m2, *lrt, *b1p, *b2p, *t;
  pd_tensor *pout, *m1o, *m2o, *b1o = NULL, *b2o = NULL;
  double lr, beta1 = pd_ctx_attr_float(ctx, "beta1"), beta2 = pd_ctx_attr_float(ctx, "beta2"),
             eps = pd_ctx_attr_float(ctx, "epsilon"), bp1, bp2;
  pd_status st;
  if ((st = no_multi_precision(ctx)) || (st = in_at(ctx, "Param", 0, true, &param)) ||
      (st = want_float(ctx, "Param", param)) || (st = like_param(ctx, "Grad", param, &grad)) ||
      (st = like_param(ctx, "Moment1", param, &m1)) ||
      (st = like_param(ctx, "Moment2", param, &m2)) ||
      (st = in_at(ctx, "LearningRate", 0, true, &lrt)) ||
      (st = scalar_in(ctx, "LearningRate", lrt, &lr)) || (st = in_at(ctx, "Beta1Pow", 0, true, &b1p)) ||
      (st = scalar_in(ctx, "Beta1Pow", b1p, &bp1)) || (st = in_at(ctx, "Beta2Pow", 0, true, &b2p)) ||
      (st = scalar_in(ctx, "Beta2Pow", b2p, &bp2)) || (st = want_float(ctx, "Beta1Pow", b1p)) ||
      (st = want_float(ctx, "Beta2Pow", b2p)))
    return st;
  if ((t = in_if_set(ctx, "Beta1Tensor", 0)) && (st = scalar_in(ctx, "Beta1Tensor", t, &beta1)))
    return st;
  if ((t = in_if_set(ctx, "Beta2Tensor", 0)) && (st = scalar_in(ctx, "Beta2Tensor", t, &beta2)))
    return st;
  if ((t = in_if_set(ctx, "EpsilonTensor", 0)) && (st = scalar_in(ctx, "EpsilonTensor", t, &eps)))
    return st;
  double skip = 0;
  if ((t = in_if_set(ctx, "SkipUpdate", 0)) && (st = scalar_in(ctx, "SkipUpdate", t, &skip)))
    return st;
  bool global_pow = pd_ctx_attr_bool(ctx, "use_global_beta_pow");
  if (skip != 0) {
    static const char *const pairs[][2] = {{"Param", "ParamOut"}, {"Moment1", "Moment1Out"},
                                           {"Moment2", "Moment2Out"}, {"Beta1Pow", "Beta1PowOut"},
                                           {"Beta2Pow", "Beta2PowOut"}};
    for (size_t i = 0; i < PD_ARRAY_LEN(pairs) && !st; i++)
      st = copy_var(ctx, pd_ctx_in_var(ctx, pairs[i][0], 0), pairs[i][0],
                    pd_ctx_out_var(ctx, pairs[i][1], 0), pairs[i][1]);
    return st;
  }
  const void *pd = pd_tensor_data(param), *gd = pd_tensor_data(grad), *m1d = pd_tensor_data(m1),
             *m2d = pd_tensor_data(m2);
  int64_t n = pd_tensor_numel(param);
  pd_dtype b1dt = b1p->dtype, b2dt = b2p->dtype;
  int b1nd = b1p->ndims, b2nd = b2p->ndims;
  int64_t b1dims[MAXD], b2dims[MAXD];
  memcpy(b1dims, b1p->dims, sizeof(int64_t) * (size_t)b1nd);
  memcpy(b2dims, b2p->dims, sizeof(int64_t) * (size_t)b2nd);
  if ((st = update_out(ctx, "ParamOut", param, &pout)) ||
      (st = update_out(ctx, "Moment1Out", m1, &m1o)) ||
      (st = update_out(ctx, "Moment2Out", m2, &m2o)))
    return st;
  if (pout == m1o || pout == m2o || m1o == m2o)
    return pd_ctx_fail(ctx, PD_EINVAL, "ParamOut, Moment1Out and Moment2Out must be distinct vars");
  if (!global_pow && ((st = out_at(ctx, "Beta1PowOut", 0, true, &b1o)) ||
                      (st = out_at(ctx, "Beta2PowOut", 0, true, &b2o))))
    return st;
  double lr_t = lr * sqrt(1 - bp2) / (1 - bp1), eps_t = eps * sqrt(1 - bp2);
  if (ctx->k->adam) {  /* the backend's: split across threads */
    if ((st = pd_ctx_check(ctx, ctx->k->adam(param->dtype, n, pd, gd, m1d, m2d, beta1, beta2,
                                             lr_t, eps_t, pd_tensor_data(pout),
                                             pd_tensor_data(m1o), pd_tensor_data(m2o)),
                           "adam")))
      return st;
  } else FLOAT_SWITCH(param->dtype, {
    const T *p = pd, *g = gd, *a = m1d, *b = m2d;
    T *po = (T *)pd_tensor_data(pout), *ao = (T *)pd_tensor_data(m1o),
      *bo = (T *)pd_tensor_data(m2o);
    for (int64_t i = 0; i < n; i++) {
      double gi = g[i], mom1 = beta1 * a[i] + (1 - beta1) * gi,
             mom2 = beta2 * b[i] + (1 - beta2) * gi * gi;
      ao[i] = (T)mom1;
      bo[i] = (T)mom2;
      po[i] = (T)(p[i] - lr_t * (mom1 / (sqrt(mom2) + eps_t)));
    }
  });
  if (global_pow) return PD_OK;
  if ((st = resize(ctx, b1o, b1dt, b1nd, b1dims, NULL)) ||
      (st = resize(ctx, b2o, b2dt, b2nd, b2dims, NULL)))
    return st;
  if (b1dt == PD_FP32) PD_TENSOR_F32(b1o)[0] = (float)(bp1 * beta1);
  else PD_TENSOR_F64(b1o)[0] = bp1 * beta1;
  if (b2dt == PD_FP32) PD_TENSOR_F32(b2o)[0] = (float)(bp2 * beta2);
  else PD_TENSOR_F64(b2o)[0] = bp2 * beta2;
  return PD_OK;
}
