/* reduce.c -- reductions: mean, reduce_sum/mean/max/min/prod over any set of dims (keep_dim,
 * reduce_all), arg_max / arg_min and top_k / top_k_v2 along an axis: their shape functions,
 * kernels and gradient kernels. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* reduce_sum/mean/max/min/prod: reduce X over `dim` (all dims when reduce_all or dim is empty),
 * keeping reduced dims as 1 when keep_dim. A full reduction without keep_dim gives [1]. The LoD
 * survives when dim 0 is kept. */
pd_status pd_infer_reduce(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  pd_dtype dtype = x->dtype;
  if (pd_infer_attr_int(c, "out_dtype") >= 0 && (st = pd_infer_attr_dtype(c, "out_dtype", &dtype)))
    return st;
  if (d.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
  }
  bool reduced[PD_MAX_RANK] = {false};
  int64_t dims[PD_MAX_RANK];
  int nd = pd_infer_attr_ints(c, "dim", dims, PD_MAX_RANK);
  if (nd > PD_MAX_RANK)
    return pd_infer_fail(c, PD_EINVAL, "dim lists %d dims; at most %d are supported", nd, PD_MAX_RANK);
  bool all = pd_infer_attr_bool(c, "reduce_all") || nd == 0;
  for (int i = 0; i < d.n; i++) reduced[i] = all;
  if (!all) {
    for (int i = 0; i < nd; i++) {
      int axis;
      if ((st = pd_infer_axis(c, "dim", dims[i], "X", &d, &axis))) return st;
      reduced[axis] = true;
    }
  }
  bool keep = pd_infer_attr_bool(c, "keep_dim");
  out.n = 0;
  for (int i = 0; i < d.n; i++)
    if (!reduced[i] || keep) out.d[out.n++] = reduced[i] ? 1 : d.d[i];
  if (out.n == 0) out = (pd_infer_dims){.n = 1, .d = {1}};
  return pd_infer_set_out(c, "Out", 0, &out, dtype, d.n > 0 && !reduced[0] ? x->lod_level : 0);
}

/* mean: the mean of all of X, shape [1]. */
pd_status pd_infer_mean(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_status st = pd_infer_in(c, "X", 0, &x, NULL);
  if (st) return st;
  pd_infer_dims out = {.n = 1, .d = {1}};
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
}

/* arg_max, arg_min: the index of the largest / smallest element along `axis` (of all of X when
 * flatten), as int64 or int32 (`dtype`). */
pd_status pd_infer_arg_max(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int64_t t = pd_infer_attr_int(c, "dtype");
  if (t != -1 && t != PD_INT32 && t != PD_INT64)
    return pd_infer_fail(c, PD_EINVAL, "dtype must be int32 (%d) or int64 (%d), got %" PRId64,
                         PD_INT32, PD_INT64, t);
  pd_dtype dtype = t == PD_INT32 ? PD_INT32 : PD_INT64;
  if (pd_infer_attr_bool(c, "flatten")) {
    out = (pd_infer_dims){.n = 1, .d = {1}};
    return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
  }
  if (d.n < 0) {
    out = pd_infer_dims_unknown(-1);
    return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
  }
  int axis;
  if ((st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X", &d, &axis))) return st;
  bool keep = pd_infer_attr_bool(c, "keepdims");
  out.n = 0;
  for (int i = 0; i < d.n; i++)
    if (i != axis || keep) out.d[out.n++] = i == axis ? 1 : d.d[i];
  if (out.n == 0) out = (pd_infer_dims){.n = 1, .d = {1}};
  return pd_infer_set_out(c, "Out", 0, &out, dtype, 0);
}

/* top_k, top_k_v2: the k largest (v2: or smallest) entries along the last dim (v2: `axis`) (Out,
 * X's dtype) and their indices (Indices, int64). With the K input, k is only known at run
 * time. */
pd_status pd_infer_top_k(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  int64_t k = pd_infer_nin(c, "K") > 0 ? -1 : pd_infer_attr_int(c, "k");
  if (pd_infer_nin(c, "K") == 0 && k < 1)
    return pd_infer_fail(c, PD_EINVAL, "k must be at least 1, got %" PRId64, k);
  if (d.n == 0) return pd_infer_fail(c, PD_ESHAPE, "X must have at least 1 dim, got []");
  if (d.n > 0) {
    int axis = d.n - 1;
    if (c->def->karg == PD_OPV_TOP_K_V2 &&
        (st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X", &d, &axis)))
      return st;
    int64_t n = d.d[axis];
    if (k > 0 && n >= 0 && k > n && c->def->karg != PD_OPV_TOP_K_V2)
      return pd_infer_fail(c, PD_ESHAPE, "k %" PRId64 " is larger than the last dim of X %s", k,
                           pd_infer_dims_str(&d, s));
    if (k > 0 && n >= 0 && k > n)
      return pd_infer_fail(c, PD_ESHAPE, "k %" PRId64 " is larger than dim %d of X %s", k, axis,
                           pd_infer_dims_str(&d, s));
    d.d[axis] = k;
  }
  if ((st = pd_infer_set_out(c, "Out", 0, &d, x->dtype, x->lod_level))) return st;
  return pd_infer_set_out(c, "Indices", 0, &d, PD_INT64, x->lod_level);
}

/* mean: Out [1] = the mean of all of X. */
pd_status pd_kernel_mean(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) || (st = want_float(ctx, "X", x)))
    return st;
  hold h;
  hold_init(&h);
  int64_t one = 1;
  if (!(st = unalias(ctx, &h, out, &x)) && !(st = resize(ctx, out, x->dtype, 1, &one, NULL)))
    st = k_check(ctx, ctx->k->reduce(PD_K_RMEAN, x->dtype, x->ndims, x->dims, pd_tensor_data(x), 0,
                                     NULL, pd_tensor_data(out)),
                 x->dtype);
  hold_free(&h);
  return st;
}

/* dX = dOut / numel(X) everywhere. */
pd_status pd_kernel_mean_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dout;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dout)) ||
      (st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "Out@GRAD", dout, "X", x)))
    return st;
  char s[DIMS_BUF];
  if (pd_tensor_numel(dout) != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Out@GRAD (var '%s') must hold one value, got %s",
                       in_name(ctx, "Out@GRAD", 0), shape_str(dout, s));
  void *gtmp = NULL;
  const void *gv = pd_ctx_host_data(ctx, dout, &gtmp, &st);
  if (!gv) return st;
  double g = x->dtype == PD_FP32 ? *(const float *)gv : *(const double *)gv;
  pd_k_host_free(gtmp);
  int64_t n = pd_tensor_numel(x);
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, dx, &x)) && !(st = resize_like(ctx, dx, x, x)))
    st = k_check(ctx, ctx->k->fill(x->dtype, n, pd_tensor_data(dx), n ? g / (double)n : 0.0),
                 x->dtype);
  hold_free(&h);
  return st;
}

/* ================================================================ reductions */

/* Which dims of X a reduce_* op reduces and the shape of Out (as pd_infer_reduce: reduced dims
 * kept as 1s with keep_dim; a full reduction without keep_dim is [1]). */
typedef struct red_plan {
  bool red[PD_K_MAX_DIMS];
  int naxes;
  int axes[PD_K_MAX_DIMS];
  int ond;
  int64_t od[PD_K_MAX_DIMS];
  bool keeps_rows;  /* dim 0 is not reduced: Out keeps X's LoD */
} red_plan;

static pd_status red_plan_make(const pd_exec_ctx *ctx, const pd_tensor *x, red_plan *p) {
  int nd = x->ndims;
  int64_t dim[PD_K_MAX_DIMS + 1];
  int n = pd_ctx_attr_ints(ctx, "dim", dim, PD_K_MAX_DIMS + 1);
  if (n > PD_K_MAX_DIMS)
    return pd_ctx_fail(ctx, PD_EINVAL, "dim lists %d dims; at most %d are supported", n,
                       PD_K_MAX_DIMS);
  bool all = pd_ctx_attr_bool(ctx, "reduce_all") || n <= 0;
  for (int d = 0; d < nd; d++) p->red[d] = all;
  for (int i = 0; !all && i < n; i++) {
    int a = 0;
    pd_status st = norm_axis(ctx, "dim", dim[i], "X", x, &a);
    if (st) return st;
    p->red[a] = true;
  }
  bool keep = pd_ctx_attr_bool(ctx, "keep_dim");
  p->naxes = p->ond = 0;
  for (int d = 0; d < nd; d++) {
    if (p->red[d]) p->axes[p->naxes++] = d;
    if (!p->red[d] || keep) p->od[p->ond++] = p->red[d] ? 1 : x->dims[d];
  }
  if (p->ond == 0) p->od[p->ond++] = 1;
  p->keeps_rows = nd > 0 && !p->red[0];
  return PD_OK;
}

/* Out-element offset of every X element, walked in X's order: ostr are the strides of Out's
 * layout over X's dims (0 along the reduced ones). */
static void red_ostrides(int nd, const int64_t *dims, const bool *red, int64_t *ostr) {
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    ostr[d] = red[d] ? 0 : s;
    if (!red[d]) s *= dims[d];
  }
}

/* Advance the odometer idx over dims by one element, keeping o (the Out offset) in step. */
static inline void red_step(int nd, const int64_t *dims, const int64_t *ostr, int64_t *idx,
                            int64_t *o) {
  for (int d = nd - 1; d >= 0; d--) {
    *o += ostr[d];
    if (++idx[d] < dims[d]) return;
    *o -= ostr[d] * dims[d];
    idx[d] = 0;
  }
}

/* reduce_prod (the backend has no product): floats multiply in double, integers wrap. */
#define PROD_LOOP(T, ACC, MUL)                                                   \
  do {                                                                           \
    const T *xv = (const T *)x;                                                  \
    T *ov = (T *)out;                                                            \
    ACC *acc = (ACC *)buf;                                                       \
    for (int64_t j = 0; j < on; j++) acc[j] = 1;                                 \
    for (int64_t i = 0; i < n; i++) {                                            \
      acc[o] = MUL(acc[o], xv[i]);                                               \
      red_step(nd, dims, ostr, idx, &o);                                         \
    }                                                                            \
    for (int64_t j = 0; j < on; j++) ov[j] = (T)acc[j];                          \
  } while (0)
#define MUL_F(a, b) ((a) * (double)(b))

#define MUL_I(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(int64_t)(b)))

static pd_status reduce_prod(const pd_exec_ctx *ctx, pd_dtype dt, int nd, const int64_t *dims,
                             const bool *red, const void *x, void *out) {
  int64_t ostr[PD_K_MAX_DIMS], idx[PD_K_MAX_DIMS] = {0}, o = 0, n = pd_k_numel(nd, dims);
  int64_t on = 1;
  for (int d = 0; d < nd; d++)
    if (!red[d]) on *= dims[d];
  red_ostrides(nd, dims, red, ostr);
  pd_status st;
  void *buf = pd_ctx_scratch(ctx, (size_t)on * 8, &st);
  if (!buf) return st;
  switch (dt) {
    case PD_FP32: PROD_LOOP(float, double, MUL_F); break;
    case PD_FP64: PROD_LOOP(double, double, MUL_F); break;
    case PD_INT32: PROD_LOOP(int32_t, int64_t, MUL_I); break;
    case PD_INT64: PROD_LOOP(int64_t, int64_t, MUL_I); break;
    default: st = k_check(ctx, PD_EUNSUPPORTED, dt); break;
  }
  pd_ctx_scratch_free(ctx, buf);
  return st;
}

/* Its gradient: dX = dOut * (the product of the other elements of X's group), exact with zeros
 * in the group: none: prod / x; one: prod of the rest at the zero, 0 elsewhere; more: 0. */
#define PROD_GRAD_LOOP(T)                                                          \
  do {                                                                             \
    const T *xv = (const T *)x, *gv = (const T *)dout;                             \
    T *dv = (T *)dx;                                                               \
    for (int64_t j = 0; j < on; j++) {                                             \
      pnz[j] = 1;                                                                  \
      zeros[j] = 0;                                                                \
    }                                                                              \
    for (int64_t i = 0; i < n; i++) {                                              \
      if (xv[i] == 0) zeros[o]++;                                                  \
      else pnz[o] *= xv[i];                                                        \
      red_step(nd, dims, ostr, idx, &o);                                           \
    }                                                                              \
    for (int64_t i = 0; i < n; i++) {                                              \
      double others = zeros[o] == 0 ? pnz[o] / xv[i]                               \
                      : zeros[o] == 1 && xv[i] == 0 ? pnz[o] : 0.0;                \
      dv[i] = (T)(gv[o] * others);                                                 \
      red_step(nd, dims, ostr, idx, &o);                                           \
    }                                                                              \
  } while (0)

static pd_status reduce_prod_grad(const pd_exec_ctx *ctx, pd_dtype dt, int nd,
                                  const int64_t *dims, const bool *red, const void *x,
                                  const void *dout, void *dx) {
  int64_t ostr[PD_K_MAX_DIMS], idx[PD_K_MAX_DIMS] = {0}, o = 0, n = pd_k_numel(nd, dims);
  int64_t on = 1;
  for (int d = 0; d < nd; d++)
    if (!red[d]) on *= dims[d];
  red_ostrides(nd, dims, red, ostr);
  pd_status st;
  double *pnz = pd_ctx_scratch(ctx, (size_t)on * (sizeof(double) + sizeof(int64_t)), &st);
  if (!pnz) return st;
  int64_t *zeros = (int64_t *)(pnz + on);
  if (dt == PD_FP32) PROD_GRAD_LOOP(float);
  else PROD_GRAD_LOOP(double);
  pd_ctx_scratch_free(ctx, pnz);
  return PD_OK;
}

/* reduce_sum, reduce_mean, reduce_max, reduce_min (the backend's reduce entry) and reduce_prod. */
pd_status pd_kernel_reduce(pd_exec_ctx *ctx) {
  const int op = ctx->def->karg; /* a pd_k_redop, or PD_OPV_REDUCE_PROD */
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  red_plan p;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) ||
      (st = red_plan_make(ctx, x, &p)))
    return st;
  /* out_dtype: reduce X converted to that dtype (Fluid's reduce_sum of bools into int64). */
  pd_dtype dt = x->dtype;
  if (pd_ctx_attr_int(ctx, "out_dtype") >= 0 && (st = dtype_attr(ctx, "out_dtype", &dt))) return st;
  if (!(op == PD_K_RMEAN ? is_float(dt) : is_float(dt) || is_int(dt)))
    return pd_ctx_fail(ctx, PD_ETYPE, "cannot reduce X (var '%s') in dtype %s; expected %s",
                       in_name(ctx, "X", 0), pd_dtype_name(dt),
                       op == PD_K_RMEAN ? "float32 or float64" : "float32, float64, int32 or int64");
  hold h;
  hold_init(&h);
  void *conv = NULL;
  if ((st = unalias(ctx, &h, out, &x))) goto done;
  const void *xd = pd_tensor_data(x);
  int64_t n = pd_tensor_numel(x);
  if (dt != x->dtype) {
    if (!(conv = pd_ctx_scratch(ctx, (size_t)n * pd_dtype_size(dt), &st))) goto done;
    if ((st = k_check(ctx, ctx->k->cast(x->dtype, xd, dt, conv, n), x->dtype))) goto done;
    xd = conv;
  }
  if ((st = resize(ctx, out, dt, p.ond, p.od, p.keeps_rows ? x : NULL))) goto done;
  if (op == PD_OPV_REDUCE_PROD) {
    st = reduce_prod(ctx, dt, x->ndims, x->dims, p.red, xd, pd_tensor_data(out));
  } else {
    st = ctx->k->reduce((pd_k_redop)op, dt, x->ndims, x->dims, xd, p.naxes, p.axes,
                        pd_tensor_data(out));
    if (st == PD_EINVAL && n == 0) {
      char s[DIMS_BUF];
      st = pd_ctx_fail(ctx, PD_EINVAL, "cannot reduce an empty X (var '%s') %s",
                       in_name(ctx, "X", 0), shape_str(x, s));
    } else {
      st = k_check(ctx, st, dt);
    }
  }
done:
  pd_ctx_scratch_free(ctx, conv);
  hold_free(&h);
  return st;
}

/* sum: dOut copied along the reduced dims; mean: divided by their size; max/min: dOut to every
 * element equal to the result (as Fluid); prod: see reduce_prod_grad. */
pd_status pd_kernel_reduce_grad(pd_exec_ctx *ctx) {
  const int op = ctx->def->karg;
  const pd_tensor *x, *o = NULL, *dout;
  pd_tensor *dx;
  pd_status st;
  red_plan p;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  bool extreme = op == PD_K_RMAX || op == PD_K_RMIN;
  if ((st = in1(ctx, "X", &x)) || (extreme && (st = in1(ctx, "Out", &o))) ||
      (st = in1(ctx, "Out@GRAD", &dout)) || (st = want_float(ctx, "X", x)) ||
      (st = red_plan_make(ctx, x, &p)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, p.ond, p.od, "Out")))
    return st;
  if (extreme && ((st = want_same_dtype(ctx, "Out", o, "X", x)) ||
                  (st = want_numel(ctx, "Out", o, p.ond, p.od, "the reduction of X"))))
    return st;
  hold h;
  hold_init(&h);
  void *conv = NULL;
  pd_dtype dt = x->dtype;
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &o)) ||
      (st = unalias(ctx, &h, dx, &dout)))
    goto done;
  const void *gd = pd_tensor_data(dout);
  if (dout->dtype != dt) {  /* an out_dtype reduction: the gradient comes in Out's dtype */
    int64_t gn = pd_tensor_numel(dout);
    if (!(conv = pd_ctx_scratch(ctx, (size_t)gn * pd_dtype_size(dt), &st))) goto done;
    if ((st = k_check(ctx, ctx->k->cast(dout->dtype, gd, dt, conv, gn), dout->dtype))) goto done;
    gd = conv;
  }
  if ((st = resize_like(ctx, dx, x, x))) goto done;
  if (op == PD_OPV_REDUCE_PROD)
    st = reduce_prod_grad(ctx, dt, x->ndims, x->dims, p.red, pd_tensor_data(x), gd,
                          pd_tensor_data(dx));
  else
    st = k_check(ctx,
                 ctx->k->reduce_grad((pd_k_redop)op, dt, x->ndims, x->dims, pd_tensor_data(x),
                                     o ? pd_tensor_data(o) : NULL, gd, p.naxes, p.axes,
                                     pd_tensor_data(dx)),
                 dt);
done:
  pd_ctx_scratch_free(ctx, conv);
  hold_free(&h);
  return st;
}

/* ================================================================ cumsum */

/* cumsum: Out has X's shape (flatten: [numel]) and dtype. */
pd_status pd_infer_cumsum(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  if (pd_infer_attr_bool(c, "flatten")) {
    pd_infer_dims out = {.n = 1, .d = {-1}};
    if (d.n >= 0) {
      out.d[0] = 1;
      for (int i = 0; i < d.n && out.d[0] >= 0; i++) out.d[0] = d.d[i] < 0 ? -1 : out.d[0] * d.d[i];
    }
    return pd_infer_set_out(c, "Out", 0, &out, (int)x->dtype, 0);
  }
  if (d.n >= 0) {
    int axis;
    if ((st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X", &d, &axis))) return st;
  }
  return pd_infer_same_as_x(c, -1);
}

/* X as [pre, n, post] around the axis (flatten: [1, numel, 1]). */
static pd_status cumsum_split(pd_exec_ctx *ctx, const pd_tensor *x, int64_t *pre, int64_t *n,
                              int64_t *post) {
  if (pd_ctx_attr_bool(ctx, "flatten")) {
    *pre = *post = 1;
    *n = pd_tensor_numel(x);
    return PD_OK;
  }
  int axis = 0;
  pd_status st = norm_axis(ctx, "axis", pd_ctx_attr_int(ctx, "axis"), "X", x, &axis);
  if (!st) split_at(x, axis, pre, n, post);
  return st;
}

/* Out = the running sums of X along the axis (exclusive, reverse as the attributes say). */
pd_status pd_kernel_cumsum(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  int64_t pre = 1, n = 1, post = 1;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_number(ctx, "X", x)) || (st = cumsum_split(ctx, x, &pre, &n, &post)))
    return st;
  bool flat = pd_ctx_attr_bool(ctx, "flatten");
  int64_t numel = pd_tensor_numel(x);
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) ||
      (st = flat ? resize(ctx, out, x->dtype, 1, &numel, NULL) : resize_like(ctx, out, x, x)))
    goto done;
  if (numel > 0)
    st = k_check(ctx, ctx->k->cumsum(x->dtype, pre, n, post, pd_ctx_attr_bool(ctx, "exclusive"),
                                     pd_ctx_attr_bool(ctx, "reverse"), pd_tensor_data(x),
                                     pd_tensor_data(out)),
                 x->dtype);
done:
  hold_free(&h);
  return st;
}

/* X@GRAD = the running sums of Out@GRAD in the other direction (same exclusiveness). */
pd_status pd_kernel_cumsum_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dout;
  pd_tensor *dx;
  pd_status st;
  int64_t pre = 1, n = 1, post = 1;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dout)) ||
      (st = want_float(ctx, "X", x)) || (st = cumsum_split(ctx, x, &pre, &n, &post)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X")) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, "X", x)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &dout)) || (st = resize_like(ctx, dx, x, x))) goto done;
  if (pd_tensor_numel(x) > 0)
    st = k_check(ctx, ctx->k->cumsum(x->dtype, pre, n, post, pd_ctx_attr_bool(ctx, "exclusive"),
                                     !pd_ctx_attr_bool(ctx, "reverse"), pd_tensor_data(dout),
                                     pd_tensor_data(dx)),
                 x->dtype);
done:
  hold_free(&h);
  return st;
}

/* ======================================================= arg_max, arg_min, top_k, top_k_v2 */

/* arg_max, arg_min: the index of the largest (smallest) element along `axis` (of all of X when
 * flatten; the first of equal ones; NaN the largest, as kernels.h's argmax says), as int64 or
 * int32 (`dtype`); Out drops the axis (keepdims: keeps it as 1), and a rank-0 result is [1]. */
pd_status pd_kernel_arg_max(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) || (st = want_number(ctx, "X", x)))
    return st;
  int64_t t = pd_ctx_attr_int(ctx, "dtype");
  if (t != -1 && t != PD_INT32 && t != PD_INT64)
    return pd_ctx_fail(ctx, PD_EINVAL, "dtype must be int32 (%d) or int64 (%d), got %" PRId64,
                       PD_INT32, PD_INT64, t);
  pd_dtype dt = t == PD_INT32 ? PD_INT32 : PD_INT64;
  int64_t pre, n, post, od[PD_K_MAX_DIMS];
  int ond = 0;
  if (pd_ctx_attr_bool(ctx, "flatten")) {
    pre = post = 1;
    n = pd_tensor_numel(x);
  } else {
    int axis = 0;
    if ((st = norm_axis(ctx, "axis", pd_ctx_attr_int(ctx, "axis"), "X", x, &axis))) return st;
    split_at(x, axis, &pre, &n, &post);
    bool keep = pd_ctx_attr_bool(ctx, "keepdims");
    for (int d = 0; d < x->ndims; d++)
      if (d != axis || keep) od[ond++] = d == axis ? 1 : x->dims[d];
  }
  if (ond == 0) od[ond++] = 1;
  char s[DIMS_BUF];
  if (n == 0 && pre * post > 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "cannot take the %s of an empty axis of X %s",
                       ctx->def->type, shape_str(x, s));
  hold h;
  hold_init(&h);
  int64_t *idx = NULL;
  if ((st = unalias(ctx, &h, out, &x)) || (st = resize(ctx, out, dt, ond, od, NULL))) goto done;
  if (pre * post == 0) goto done;
  idx = dt == PD_INT64 ? PD_TENSOR_I64(out) : pd_ctx_scratch(ctx, (size_t)(pre * post) * sizeof *idx, &st);
  if (!idx) goto done;
  st = k_check(ctx, ctx->k->argmax(x->dtype, pre, n, post, ctx->def->karg == PD_OPV_ARG_MIN,
                                     pd_tensor_data(x), idx),
               x->dtype);
  if (!st && dt == PD_INT32)
    st = k_check(ctx, ctx->k->cast(PD_INT64, idx, PD_INT32, pd_tensor_data(out), pre * post),
                 PD_INT64);
done:
  if (idx && dt == PD_INT32) pd_ctx_scratch_free(ctx, idx);
  hold_free(&h);
  return st;
}

/* k from the K input (one integer) when bound, else the k attribute. */
static pd_status top_k_k(const pd_exec_ctx *ctx, int64_t *k) {
  const pd_tensor *kt;
  pd_status st = in_opt(ctx, "K", &kt);
  if (st) return st;
  *k = pd_ctx_attr_int(ctx, "k");
  if (!kt) return PD_OK;
  char s[DIMS_BUF];
  if (pd_tensor_numel(kt) != 1 || !is_int(kt->dtype))
    return pd_ctx_fail(ctx, PD_EINVAL, "K (var '%s') must hold one int32 or int64, got %s %s",
                       in_name(ctx, "K", 0), pd_dtype_name(kt->dtype), shape_str(kt, s));
  *k = kt->dtype == PD_INT64 ? PD_TENSOR_I64(kt)[0] : PD_TENSOR_I32(kt)[0];
  return PD_OK;
}

/* The axis top_k works along: the last (top_k), or `axis` (top_k_v2). */
static pd_status top_k_axis(const pd_exec_ctx *ctx, const pd_tensor *x, int *axis) {
  char s[DIMS_BUF];
  if (x->ndims == 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have at least 1 dim, got %s", shape_str(x, s));
  *axis = x->ndims - 1;
  if (ctx->def->karg != PD_OPV_TOP_K_V2) return PD_OK;
  return norm_axis(ctx, "axis", pd_ctx_attr_int(ctx, "axis"), "X", x, axis);
}

/* src [pre, a, b] -> dst [pre, b, a] (elements of dt). */
static pd_status swap_last2(const pd_exec_ctx *ctx, pd_dtype dt, int64_t pre, int64_t a,
                            int64_t b, const void *src, void *dst) {
  int64_t d[3] = {pre, a, b};
  return k_check(ctx, ctx->k->transpose(dt, 3, d, (int[]){0, 2, 1}, src, dst), dt);
}

/* top_k, top_k_v2: the k largest entries of each row along the axis (top_k_v2 with largest
 * false: the k smallest), in descending (ascending) order, equal values by index, NaN the
 * largest; and their indices (int64); both with X's LoD. sorted false leaves the order to the
 * kernel in PaddlePaddle: here it is the sorted one. Along an inner axis, X is transposed to
 * put it last, and the results back. */
pd_status pd_kernel_top_k(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out, *ind;
  pd_status st;
  int64_t k;
  int axis;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) ||
      (st = out1(ctx, "Indices", &ind)) || (st = want_number(ctx, "X", x)) ||
      (st = top_k_k(ctx, &k)) || (st = top_k_axis(ctx, x, &axis)))
    return st;
  bool smallest = ctx->def->karg == PD_OPV_TOP_K_V2 && !pd_ctx_attr_bool(ctx, "largest");
  char s[DIMS_BUF];
  int64_t pre, n, post;
  split_at(x, axis, &pre, &n, &post);
  if ((k < 1 || k > n) && ctx->def->karg != PD_OPV_TOP_K_V2)
    return pd_ctx_fail(ctx, PD_EINVAL, "k %" PRId64 " is out of range for X %s (expected 1 to %"
                       PRId64 ")", k, shape_str(x, s), n);
  if (k < 1 || k > n)
    return pd_ctx_fail(ctx, PD_EINVAL, "k %" PRId64 " is out of range for X %s along axis %d "
                       "(expected 1 to %" PRId64 ")", k, shape_str(x, s), axis, n);
  int64_t od[PD_K_MAX_DIMS];
  memcpy(od, x->dims, sizeof od);
  od[axis] = k;
  pd_dtype dt = x->dtype;
  size_t sz = pd_dtype_size(dt);
  hold h;
  hold_init(&h);
  char *buf[3] = {NULL, NULL, NULL};
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, ind, &x)) ||
      (st = resize(ctx, out, dt, x->ndims, od, x)) ||
      (st = resize(ctx, ind, PD_INT64, x->ndims, od, x)) || pre * post == 0)
    goto done;
  if (post == 1) {
    st = k_check(ctx, ctx->k->top_k(dt, pre, n, k, smallest, pd_tensor_data(x),
                                    pd_tensor_data(out), PD_TENSOR_I64(ind)),
                 dt);
    goto done;
  }
  /* X [pre, n, post] -> [pre, post, n]; the results [pre, post, k] -> [pre, k, post]. */
  size_t sizes[3] = {(size_t)(pre * n * post) * sz, (size_t)(pre * post * k) * sz,
                     (size_t)(pre * post * k) * sizeof(int64_t)};
  if ((st = pd_ctx_scratch_n(ctx, 3, buf, sizes)) ||
      (st = swap_last2(ctx, dt, pre, n, post, pd_tensor_data(x), buf[0])) ||
      (st = k_check(ctx, ctx->k->top_k(dt, pre * post, n, k, smallest, buf[0], buf[1],
                                       (int64_t *)buf[2]),
                    dt)) ||
      (st = swap_last2(ctx, dt, pre, post, k, buf[1], pd_tensor_data(out))))
    goto done;
  st = swap_last2(ctx, PD_INT64, pre, post, k, buf[2], PD_TENSOR_I64(ind));
done:
  if (buf[0]) pd_ctx_scratch_free_n(ctx, 3, buf);
  hold_free(&h);
  return st;
}

/* Each of rows rows of dx [rows, n] (zeroed first) gets its dout [rows, k] entries added
 * where ind [rows, k] says they came from. */
static pd_status top_k_scatter(const pd_exec_ctx *ctx, pd_dtype dt, int64_t rows, int64_t n,
                               int64_t k, const int64_t *ind, const void *dout, void *dx) {
  size_t sz = pd_dtype_size(dt);
  pd_status st = k_check(ctx, ctx->k->fill(dt, rows * n, dx, 0.0), dt);
  for (int64_t r = 0; r < rows && !st; r++) {
    st = ctx->k->scatter_add_rows(dt, n, 1, (char *)dx + (size_t)(r * n) * sz, k, ind + r * k, -1,
                                  (const char *)dout + (size_t)(r * k) * sz);
    if (st == PD_EINVAL)
      st = pd_ctx_fail(ctx, PD_EINVAL, "Indices row %" PRId64 " has an index outside [0, %" PRId64
                       ")", r, n);
    else
      st = k_check(ctx, st, dt);
  }
  return st;
}

/* dX: zeros, with each row's dOut entries (along the op's axis) put back where Indices says
 * they came from. */
pd_status pd_kernel_top_k_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *ind, *dout;
  pd_tensor *dx;
  pd_status st;
  int axis;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Indices", &ind)) ||
      (st = in1(ctx, "Out@GRAD", &dout)) || (st = want_float(ctx, "X", x)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, "X", x)) || (st = top_k_axis(ctx, x, &axis)))
    return st;
  char s1[DIMS_BUF], s2[DIMS_BUF];
  bool fits = ind->dtype == PD_INT64 && ind->ndims == x->ndims;
  for (int d = 0; fits && d < x->ndims; d++) fits = d == axis || ind->dims[d] == x->dims[d];
  if (!fits)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Indices %s %s does not fit X %s along axis %d",
                       pd_dtype_name(ind->dtype), shape_str(ind, s1), shape_str(x, s2), axis);
  int64_t pre, n, post, k = ind->dims[axis];
  split_at(x, axis, &pre, &n, &post);
  if ((st = want_numel(ctx, "Out@GRAD", dout, ind->ndims, ind->dims, "Indices"))) return st;
  hold h;
  hold_init(&h);
  pd_dtype dt = x->dtype;
  size_t sz = pd_dtype_size(dt);
  char *buf[3] = {NULL, NULL, NULL};
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &ind)) ||
      (st = unalias(ctx, &h, dx, &dout)) || (st = resize_like(ctx, dx, x, x)) ||
      pre * n * post == 0)
    goto done;
  if (post == 1) {
    st = top_k_scatter(ctx, dt, pre, n, k, PD_TENSOR_I64(ind), pd_tensor_data(dout),
                       pd_tensor_data(dx));
    goto done;
  }
  /* Indices and dOut [pre, k, post] -> [pre, post, k]; dX made as [pre, post, n]. */
  size_t sizes[3] = {(size_t)(pre * post * k) * sizeof(int64_t), (size_t)(pre * post * k) * sz,
                     (size_t)(pre * post * n) * sz};
  if (k == 0) {
    st = k_check(ctx, ctx->k->fill(dt, pd_tensor_numel(dx), pd_tensor_data(dx), 0.0), dt);
    goto done;
  }
  if ((st = pd_ctx_scratch_n(ctx, 3, buf, sizes)) ||
      (st = swap_last2(ctx, PD_INT64, pre, k, post, PD_TENSOR_I64(ind), buf[0])) ||
      (st = swap_last2(ctx, dt, pre, k, post, pd_tensor_data(dout), buf[1])) ||
      (st = top_k_scatter(ctx, dt, pre * post, n, k, (const int64_t *)buf[0], buf[1], buf[2])))
    goto done;
  st = swap_last2(ctx, dt, pre, post, n, buf[2], pd_tensor_data(dx));
done:
  if (buf[0]) pd_ctx_scratch_free_n(ctx, 3, buf);
  hold_free(&h);
  return st;
}
