/* activation.c -- the activations with parameters (vm/oplist.h's PD_ACT_ rows: elu, leaky_relu,
 * swish, hard_sigmoid, ...; and gelu, exact or `approximate`): their kernels and gradient
 * kernels, through the backend's act/act_grad entries (kernels/kernels.h gives the formulas).
 * Their shape function is the unary family's (pd_infer_unary: X's shape, dtype and LoD). Every
 * gradient reads X. Also prelu, whose slope is a tensor Alpha (one value, one per channel or
 * one per element of an instance): its shape function, kernel and gradient kernel, through the
 * backend's compare, binary, where and reduce. */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* The attributes the backend divides by must not be 0. */
static pd_status check_params(const pd_exec_ctx *ctx, pd_k_act op, const double *p) {
  if (op == PD_K_SOFTPLUS && p[0] == 0)
    return pd_ctx_fail(ctx, PD_EINVAL, "beta must not be 0 (the op divides by it)");
  if (op == PD_K_HARD_SWISH && p[1] == 0)
    return pd_ctx_fail(ctx, PD_EINVAL, "scale must not be 0 (the op divides by it)");
  return PD_OK;
}

/* Out = f(X), in place when Out is X. */
static pd_status act(pd_exec_ctx *ctx, pd_k_act op, const double *p) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out))) return st;
  if ((st = want_float(ctx, "X", x)) || (st = check_params(ctx, op, p))) return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if (!in_place(out, x, dt, x->ndims, x->dims) && (st = unalias(ctx, &h, out, &x))) goto done;
  if ((st = resize_like(ctx, out, x, x))) goto done;
  st = k_check(ctx,
               ctx->k->act(op, dt, pd_tensor_numel(x), p, pd_tensor_data(x), pd_tensor_data(out)),
               dt);
done:
  hold_free(&h);
  return st;
}

/* X@GRAD = Out@GRAD * f'(X); X@GRAD may be Out@GRAD (the gradient of an in-place op). */
static pd_status act_grad(pd_exec_ctx *ctx, pd_k_act op, const double *p) {
  const pd_tensor *x, *dout;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dout))) return st;
  if ((st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "Out@GRAD", dout, "X", x)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X")) ||
      (st = check_params(ctx, op, p)))
    return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &x))) goto done;
  if (!in_place(dx, dout, dt, x->ndims, x->dims) && (st = unalias(ctx, &h, dx, &dout))) goto done;
  if ((st = resize(ctx, dx, dt, x->ndims, x->dims, x))) goto done;
  st = k_check(ctx,
               ctx->k->act_grad(op, dt, pd_tensor_numel(x), p, pd_tensor_data(x),
                                pd_tensor_data(dout), pd_tensor_data(dx)),
               dt);
done:
  hold_free(&h);
  return st;
}

/* The parameters of the backend's activation: the op's FLOAT attributes, in the order vm/oplist.h
 * declares them (hard_swish: threshold, scale, offset), as many as the activation takes. */
static pd_status params(const pd_exec_ctx *ctx, pd_k_act op, double p[3]) {
  int k = 0;
  p[0] = p[1] = p[2] = 0;
  for (int i = 0; i < ctx->def->nattrs; i++)
    if (ctx->def->attrs[i].type == PD_ATTR_FLOAT && k < 3)
      p[k++] = pd_ctx_attr_float(ctx, ctx->def->attrs[i].name);
  if (k != pd_k_act_nparams(op))
    return pd_ctx_fail(ctx, PD_EINVAL, "%s has %d float attributes, but the activation %s takes "
                       "%d parameters (vm/oplist.h)", ctx->def->type, k, pd_k_act_name(op),
                       pd_k_act_nparams(op));
  return PD_OK;
}

/* The family's kernels: the backend's activation is the op's constant (vm/oplist.h's
 * KERNEL(act, PD_K_ELU)). */
pd_status pd_kernel_act(pd_exec_ctx *ctx) {
  const pd_k_act op = (pd_k_act)ctx->def->karg;
  double p[3];
  pd_status st = params(ctx, op, p);
  return st ? st : act(ctx, op, p);
}

pd_status pd_kernel_act_grad(pd_exec_ctx *ctx) {
  const pd_k_act op = (pd_k_act)ctx->def->karg;
  double p[3];
  pd_status st = params(ctx, op, p);
  return st ? st : act_grad(ctx, op, p);
}

/* gelu: the exact form, or tanh's when `approximate` is set. */
static pd_k_act gelu_form(const pd_exec_ctx *ctx) {
  return pd_ctx_attr_bool(ctx, "approximate") ? PD_K_GELU_TANH : PD_K_GELU;
}

pd_status pd_kernel_gelu(pd_exec_ctx *ctx) {
  const double p[3] = {0, 0, 0};
  return act(ctx, gelu_form(ctx), p);
}

pd_status pd_kernel_gelu_grad(pd_exec_ctx *ctx) {
  const double p[3] = {0, 0, 0};
  return act_grad(ctx, gelu_form(ctx), p);
}

/* ---- prelu ---- */

typedef enum prelu_mode { PRELU_ALL, PRELU_CHANNEL, PRELU_ELEMENT } prelu_mode;

static prelu_mode prelu_mode_of(const char *mode) {
  return strcmp(mode, "channel") == 0   ? PRELU_CHANNEL
         : strcmp(mode, "element") == 0 ? PRELU_ELEMENT
                                        : PRELU_ALL;
}

/* How many slopes Alpha must hold for X of rank nd and dims d in a mode (-1: unknown); in the
 * element mode, the product of dims after the first (what Alpha's dims after its first give). */
static int64_t prelu_count(prelu_mode m, bool nhwc, int nd, const int64_t *d) {
  if (m == PRELU_ALL) return 1;
  if (m == PRELU_CHANNEL) return d[nhwc ? nd - 1 : 1];
  int64_t k = 1;
  for (int i = 1; i < nd; i++) k = d[i] < 0 || k < 0 ? -1 : pd_infer_dim_mul(k, d[i]);
  return k;
}

/* prelu: Out like X. Alpha holds one slope (mode all), one per channel (channel: dim 1, or the
 * last with data_format NHWC; X of 2 dims or more), or one per element of an instance
 * (element: Alpha of X's rank, its dims after the first X's). */
pd_status pd_infer_prelu(pd_infer_ctx *c) {
  const pd_var_desc *x, *a;
  pd_infer_dims dx, da;
  char sx[PD_DIMS_BUF], sa[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = pd_infer_in(c, "Alpha", 0, &a, &da)) ||
      (st = pd_infer_same_dtype(c, "X", x->dtype, "Alpha", a->dtype)))
    return st;
  const char *mode = pd_infer_attr_str(c, "mode");
  prelu_mode m = prelu_mode_of(mode);
  bool nhwc = strcmp(pd_infer_attr_str(c, "data_format"), "NHWC") == 0;
  if (dx.n >= 0 && m == PRELU_CHANNEL && dx.n < 2)
    return pd_infer_fail(c, PD_ESHAPE, "mode channel needs X of 2 dims or more, got %s",
                         pd_infer_dims_str(&dx, sx));
  if (dx.n >= 0 && da.n >= 0 && m == PRELU_ELEMENT && da.n != dx.n)
    return pd_infer_fail(c, PD_ESHAPE, "mode element needs Alpha of X's rank: X %s, Alpha %s",
                         pd_infer_dims_str(&dx, sx), pd_infer_dims_str(&da, sa));
  int64_t want = dx.n < 0 ? -1 : prelu_count(m, nhwc, dx.n, dx.d);
  int64_t have = da.n < 0 ? -1 : m == PRELU_ELEMENT ? prelu_count(m, nhwc, da.n, da.d) : 1;
  for (int i = 0; m != PRELU_ELEMENT && i < da.n; i++)
    have = da.d[i] < 0 || have < 0 ? -1 : pd_infer_dim_mul(have, da.d[i]);
  if (want >= 0 && have >= 0 && want != have)
    return pd_infer_fail(c, PD_ESHAPE, "mode %s (data_format %s) needs %" PRId64 " slopes for "
                         "X %s, but Alpha %s holds %" PRId64, mode, nhwc ? "NHWC" : "NCHW", want,
                         pd_infer_dims_str(&dx, sx), pd_infer_dims_str(&da, sa), have);
  return pd_infer_set_out(c, "Out", 0, &dx, x->dtype, x->lod_level);
}

/* X as [pre, n, post] with slope Alpha[j] for the elements [., j, .]: all [1, 1, numel];
 * channel [N, C, rest] (NHWC [rest, C, 1]); element [N, rest, 1]. */
static pd_status prelu_view(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *a,
                            int64_t d3[3]) {
  char sx[DIMS_BUF], sa[DIMS_BUF];
  pd_status st;
  if ((st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "Alpha", a, "X", x)))
    return st;
  const char *mode = pd_ctx_attr_str(ctx, "mode");
  prelu_mode m = prelu_mode_of(mode);
  bool nhwc = strcmp(pd_ctx_attr_str(ctx, "data_format"), "NHWC") == 0;
  int nd = x->ndims;
  if ((m == PRELU_CHANNEL && nd < 2) || (m == PRELU_ELEMENT && (nd < 1 || a->ndims != nd)))
    return pd_ctx_fail(ctx, PD_ESHAPE, "mode %s needs X of %s, got X %s and Alpha %s", mode,
                       m == PRELU_CHANNEL ? "2 dims or more" : "Alpha's rank", shape_str(x, sx),
                       shape_str(a, sa));
  int64_t numel = pd_tensor_numel(x);
  if (m == PRELU_ALL) {
    d3[0] = d3[1] = 1;
    d3[2] = numel;
  } else if (m == PRELU_CHANNEL && !nhwc) {
    d3[0] = x->dims[0];
    d3[1] = x->dims[1];
    d3[2] = prod(x->dims, 2, nd);
  } else {
    int split = m == PRELU_CHANNEL ? nd - 1 : 1;
    d3[0] = prod(x->dims, 0, split);
    d3[1] = prod(x->dims, split, nd);
    d3[2] = 1;
  }
  int64_t have = m == PRELU_ELEMENT ? prod(a->dims, 1, nd) : pd_tensor_numel(a);
  if (have != d3[1] || pd_tensor_numel(a) < d3[1])
    return pd_ctx_fail(ctx, PD_ESHAPE, "mode %s (data_format %s) needs %" PRId64 " slopes for X "
                       "%s, but Alpha is %s", mode, nhwc ? "NHWC" : "NCHW", d3[1],
                       shape_str(x, sx), shape_str(a, sa));
  return PD_OK;
}

/* mask = X > 0 in scratch (bytes), with room for nf float buffers of X's size after it. */
static pd_status prelu_begin(const pd_exec_ctx *ctx, const pd_tensor *x, const int64_t d3[3],
                             const void *zero, int nf, char **bufs) {
  size_t n = (size_t)(d3[0] * d3[1] * d3[2]);
  size_t sizes[3] = {n ? n : 1, (n ? n : 1) * pd_dtype_size(x->dtype),
                     (n ? n : 1) * pd_dtype_size(x->dtype)};
  pd_status st = pd_ctx_scratch_n(ctx, 1 + nf, bufs, sizes);
  if (!st)
    st = k_check(ctx, ctx->k->compare(PD_K_GT, x->dtype, 3, d3, pd_tensor_data(x), 0, NULL, zero,
                                      -1, (uint8_t *)bufs[0]),
                 x->dtype);
  return st;
}

/* prelu: Out = X where X > 0, else Alpha * X (the slope of the element's channel, or its own). */
pd_status pd_kernel_prelu(pd_exec_ctx *ctx) {
  const pd_tensor *x, *a;
  pd_tensor *out;
  pd_status st;
  int64_t d3[3];
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Alpha", &a)) ||
      (st = prelu_view(ctx, x, a, d3)) || (st = out1(ctx, "Out", &out)))
    return st;
  pd_dtype dt = x->dtype;
  scalar zero = make_scalar(dt, 0.0);
  void *ztmp = NULL;
  char *bufs[2] = {NULL, NULL};
  const int64_t str[3] = {d3[1] * d3[2], d3[2], 1};
  hold h;
  hold_init(&h);
  const void *zp = NULL;
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &a)) ||
      (st = resize_like(ctx, out, x, x)) || pd_tensor_numel(x) == 0 ||
      !(zp = pd_ctx_at_place(ctx, &zero, sizeof zero, &ztmp, &st)) ||
      (st = prelu_begin(ctx, x, d3, zp, 1, bufs)))
    goto done;
  if (!(st = k_check(ctx, ctx->k->binary(PD_K_MUL, dt, 3, d3, pd_tensor_data(x), 1, &d3[1],
                                         pd_tensor_data(a), 1, bufs[1]),
                     dt)))
    st = pd_ctx_check(ctx, ctx->k->where(dt, 3, d3, str, (const uint8_t *)bufs[0], str,
                                         pd_tensor_data(x), str, bufs[1], pd_tensor_data(out)),
                      "where");
done:
  if (bufs[0]) pd_ctx_scratch_free_n(ctx, 2, bufs);
  pd_ctx_scratch_free(ctx, ztmp);
  hold_free(&h);
  return st;
}

/* Its gradient: X@GRAD = Out@GRAD where X > 0, else Alpha * Out@GRAD; Alpha@GRAD = the sum of
 * X * Out@GRAD over the elements X <= 0 each slope served. */
pd_status pd_kernel_prelu_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *a, *dy;
  pd_tensor *dx, *da;
  pd_status st;
  int64_t d3[3];
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || (st = out_opt(ctx, "Alpha@GRAD", &da))) return st;
  if (!dx && !da) return PD_OK;
  if (dx && dx == da) return pd_ctx_fail(ctx, PD_EINVAL, "X@GRAD and Alpha@GRAD are one var");
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Alpha", &a)) ||
      (st = in1(ctx, "Out@GRAD", &dy)) || (st = prelu_view(ctx, x, a, d3)) ||
      (st = want_grad_shape(ctx, "Out@GRAD", dy, x->ndims, x->dims, x->dtype)))
    return st;
  pd_dtype dt = x->dtype;
  scalar zero = make_scalar(dt, 0.0);
  void *ztmp = NULL;
  char *bufs[3] = {NULL, NULL, NULL};
  const int64_t str[3] = {d3[1] * d3[2], d3[2], 1}, zstr[3] = {0, 0, 0};
  const int axes[2] = {0, 2};
  hold h;
  hold_init(&h);
  const void *zp = NULL;
  pd_tensor *outs[2] = {dx, da};
  const pd_tensor **ins[3] = {&x, &a, &dy};
  for (int o = 0; o < 2 && !st; o++)
    for (int i = 0; i < 3 && !st; i++) st = unalias(ctx, &h, outs[o], ins[i]);
  if (st || (dx && (st = resize_like(ctx, dx, x, x))) || (da && (st = resize_like(ctx, da, a, a))))
    goto done;
  if (pd_tensor_numel(x) == 0) {
    if (da) st = k_check(ctx, ctx->k->fill(dt, pd_tensor_numel(a), pd_tensor_data(da), 0), dt);
    goto done;
  }
  if (!(zp = pd_ctx_at_place(ctx, &zero, sizeof zero, &ztmp, &st)) ||
      (st = prelu_begin(ctx, x, d3, zp, 2, bufs)))
    goto done;
  const uint8_t *mask = (const uint8_t *)bufs[0];
  if (dx && ((st = k_check(ctx, ctx->k->binary(PD_K_MUL, dt, 3, d3, pd_tensor_data(dy), 1,
                                               &d3[1], pd_tensor_data(a), 1, bufs[1]),
                           dt)) ||
             (st = pd_ctx_check(ctx, ctx->k->where(dt, 3, d3, str, mask, str, pd_tensor_data(dy),
                                                   str, bufs[1], pd_tensor_data(dx)),
                                "where"))))
    goto done;
  if (da &&
      !(st = k_check(ctx, ctx->k->binary(PD_K_MUL, dt, 3, d3, pd_tensor_data(dy), 3, d3,
                                         pd_tensor_data(x), -1, bufs[1]),
                     dt)) &&
      !(st = pd_ctx_check(ctx, ctx->k->where(dt, 3, d3, str, mask, zstr, zp, str, bufs[1],
                                             bufs[2]),
                          "where")))
    st = k_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, 3, d3, bufs[2], 2, axes, pd_tensor_data(da)),
                 dt);
done:
  if (bufs[0]) pd_ctx_scratch_free_n(ctx, 3, bufs);
  pd_ctx_scratch_free(ctx, ztmp);
  hold_free(&h);
  return st;
}
