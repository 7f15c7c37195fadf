/* loss.c -- softmax and the losses and metrics built on it: softmax, log_softmax, cross_entropy,
 * softmax_with_cross_entropy (hard and soft labels, ignore_index, any axis) and accuracy: their
 * shape functions, kernels and gradient kernels. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* softmax, log_softmax: X's shape; `axis` must name one of X's dims. */
pd_status pd_infer_softmax(pd_infer_ctx *c) {
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, NULL, &d);
  if (st) return st;
  int axis = 0;
  if (d.n >= 0 && (st = pd_infer_axis(c, "axis", pd_infer_attr_int(c, "axis"), "X", &d, &axis)))
    return st;
  return pd_infer_same_as_x(c, -1);
}

/* ---- Losses ---- */

/* Label against scores X (named xname) for a loss along `axis`: the same rank, the same dims
 * except along axis, where a hard label (int64/int32 class index) has 1 and a soft one (a
 * distribution, X's dtype) has X's dim. */
static pd_status infer_label(pd_infer_ctx *c, const char *xname, const pd_var_desc *x,
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
  if ((st = infer_label(c, "X", x, &dx, label, &dl, dx.n - 1, pd_infer_attr_bool(c, "soft_label"))))
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
  if ((st = infer_label(c, "Logits", x, &dx, label, &dl, axis, pd_infer_attr_bool(c, "soft_label"))))
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

/* Hard labels as int64 where the op computes, each checked (on the host) to be in
 * [0, classes) or ignore_index. int32 labels, and labels checked on the host for a GPU op, are
 * converted or uploaded into scratch *buf (pd_ctx_scratch_free it; NULL when none was made). */
static pd_status hard_labels(const pd_exec_ctx *ctx, const pd_tensor *label, int64_t rows,
                             int64_t classes, int64_t ignore, const int64_t **out, void **buf) {
  pd_status st = PD_OK;
  *buf = NULL;
  if (label->dtype != PD_INT64 && label->dtype != PD_INT32)
    return pd_ctx_fail(ctx, PD_ETYPE, "hard Label (var '%s') must be int64 or int32, got %s",
                       in_name(ctx, "Label", 0), pd_dtype_name(label->dtype));
  void *htmp = NULL;
  const void *hv = pd_ctx_host_data(ctx, label, &htmp, &st);
  if (!hv) return st;
  const int64_t *l64 = hv;
  int64_t *conv = NULL;
  if (label->dtype == PD_INT32) {
    if (!(conv = pd_k_host_alloc((size_t)rows * sizeof *conv + 1))) {
      pd_k_host_free(htmp);
      return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
    }
    const int32_t *s = hv;
    for (int64_t r = 0; r < rows; r++) conv[r] = s[r];
    l64 = conv;
  }
  for (int64_t r = 0; r < rows && !st; r++) {
    int64_t l = l64[r];
    if ((l < 0 || l >= classes) && l != ignore)
      st = pd_ctx_fail(ctx, PD_EINVAL, "label %" PRId64 " out of range [0, %" PRId64
                       ") in row %" PRId64, l, classes, r);
  }
  if (!st) {
    if (!conv && pd_ctx_place(ctx) == PD_K_CUDA) {
      *out = PD_TENSOR_I64(label);   /* int64 on the GPU already */
    } else if (!conv) {
      *out = l64;
    } else {
      void *placed = NULL;
      *out = pd_ctx_at_place(ctx, conv, (size_t)rows * sizeof *conv, &placed, &st);
      if (!st && !placed) {  /* on the host: hand over the converted copy */
        *buf = conv;
        conv = NULL;
      } else {
        *buf = placed;
      }
    }
  }
  pd_k_host_free(conv);
  pd_k_host_free(htmp);
  return st;
}

pd_status pd_kernel_softmax(pd_exec_ctx *ctx) {
  const bool log = ctx->def->karg == PD_OPV_LOG_SOFTMAX;
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  int axis = 0;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) || (st = want_float(ctx, "X", x)) ||
      (st = norm_axis(ctx, "axis", pd_ctx_attr_int(ctx, "axis"), "X", x, &axis)))
    return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if (!in_place(out, x, dt, x->ndims, x->dims) && (st = unalias(ctx, &h, out, &x))) goto done;
  if ((st = resize_like(ctx, out, x, x))) goto done;
  int64_t pre, n, post;
  split_at(x, axis, &pre, &n, &post);
  if (pd_tensor_numel(x) > 0)
    st = k_check(ctx, (log ? ctx->k->log_softmax : ctx->k->softmax)(dt, pre, n, post,
                                                                    pd_tensor_data(x),
                                                                    pd_tensor_data(out)),
                 dt);
done:
  hold_free(&h);
  return st;
}

/* From the forward output: softmax: dX = Out * (dOut - sum(dOut * Out)); log_softmax:
 * dX = dOut - exp(Out) * sum(dOut). */
pd_status pd_kernel_softmax_grad(pd_exec_ctx *ctx) {
  const bool log = ctx->def->karg == PD_OPV_LOG_SOFTMAX;
  const pd_tensor *x, *o, *dout;
  pd_tensor *dx;
  pd_status st;
  int axis = 0;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in_opt(ctx, "X", &x)) || (st = in1(ctx, "Out", &o)) ||
      (st = in1(ctx, "Out@GRAD", &dout)) || (st = want_float(ctx, "Out", o)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, "Out", o)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, o->ndims, o->dims, "Out")) ||
      (st = norm_axis(ctx, "axis", pd_ctx_attr_int(ctx, "axis"), "Out", o, &axis)))
    return st;
  const pd_tensor *lod = x ? x : o;
  pd_dtype dt = o->dtype;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &o)) || (st = unalias(ctx, &h, dx, &lod))) goto done;
  if (!in_place(dx, dout, dt, o->ndims, o->dims) && (st = unalias(ctx, &h, dx, &dout))) goto done;
  if ((st = resize(ctx, dx, dt, o->ndims, o->dims, lod))) goto done;
  int64_t pre, n, post;
  split_at(o, axis, &pre, &n, &post);
  if (pd_tensor_numel(o) > 0)
    st = k_check(ctx, (log ? ctx->k->log_softmax_grad : ctx->k->softmax_grad)(
                          dt, pre, n, post, pd_tensor_data(o), pd_tensor_data(dout),
                          pd_tensor_data(dx)),
                 dt);
done:
  hold_free(&h);
  return st;
}

/* The label of a loss over classes along `axis` of scores x ([pre, classes, post]): hard labels
 * (int64/int32) hold one class per slice (shape: x's with 1 at axis), soft ones a distribution
 * (x's dtype and shape). */
static pd_status check_label(const pd_exec_ctx *ctx, const char *xslot, const pd_tensor *x,
                             const pd_tensor *label, int axis, bool soft) {
  char sx[DIMS_BUF], sl[DIMS_BUF];
  if (soft && label->dtype != x->dtype)
    return pd_ctx_fail(ctx, PD_ETYPE, "soft Label (var '%s') has dtype %s but %s has dtype %s",
                       in_name(ctx, "Label", 0), pd_dtype_name(label->dtype), xslot,
                       pd_dtype_name(x->dtype));
  if (!soft && !is_int(label->dtype))
    return pd_ctx_fail(ctx, PD_ETYPE, "hard Label (var '%s') must be int64 or int32, got %s",
                       in_name(ctx, "Label", 0), pd_dtype_name(label->dtype));
  bool ok = label->ndims == x->ndims;
  for (int d = 0; ok && d < x->ndims; d++)
    ok = label->dims[d] == (d == axis && !soft ? 1 : x->dims[d]);
  if (!ok)
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s Label (var '%s') %s does not fit %s %s (%s)",
                       soft ? "soft" : "hard", in_name(ctx, "Label", 0), shape_str(label, sl),
                       xslot, shape_str(x, sx),
                       soft ? "expected the same shape" : "expected 1 along the class axis");
  return PD_OK;
}

/* ---- cross_entropy: X holds probabilities over its last dim; Y = -log(X[label]) (hard) or
 * -sum(label * log(X)) (soft), shaped like X with 1 in the last dim; rows whose label is
 * ignore_index get 0. ---- */
pd_status pd_kernel_cross_entropy(pd_exec_ctx *ctx) {
  const pd_tensor *x, *label;
  pd_tensor *y;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Label", &label)) || (st = out1(ctx, "Y", &y)) ||
      (st = want_float(ctx, "X", x)))
    return st;
  char s[DIMS_BUF];
  if (x->ndims == 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have at least 1 dim, got %s", shape_str(x, s));
  bool soft = pd_ctx_attr_bool(ctx, "soft_label");
  int64_t ignore = pd_ctx_attr_int(ctx, "ignore_index");
  int last = x->ndims - 1;
  if ((st = check_label(ctx, "X", x, label, last, soft))) return st;
  int64_t classes = x->dims[last], rows = prod(x->dims, 0, last);
  if (classes == 0 && rows > 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X %s has no classes", shape_str(x, s));
  const int64_t *lab = NULL;
  void *buf = NULL;
  if (!soft && (st = hard_labels(ctx, label, rows, classes, ignore, &lab, &buf))) return st;
  hold h;
  hold_init(&h);
  int64_t od[PD_K_MAX_DIMS];
  memcpy(od, x->dims, sizeof od);
  od[last] = 1;
  if ((st = unalias(ctx, &h, y, &x)) || (st = unalias(ctx, &h, y, &label)) ||
      (st = resize(ctx, y, x->dtype, x->ndims, od, x)))
    goto done;
  if (rows > 0)
    st = k_check(ctx,
               ctx->k->cross_entropy(x->dtype, rows, classes, pd_tensor_data(x), soft,
                                     soft ? pd_tensor_data(label) : (const void *)lab, ignore,
                                     pd_tensor_data(y)),
               x->dtype);
done:
  pd_ctx_scratch_free(ctx, buf);
  hold_free(&h);
  return st;
}

/* dX = -dY / X at the label (0 elsewhere, and on ignored rows); soft: -dY * label / X. */
pd_status pd_kernel_cross_entropy_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *label, *dy;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Label", &label)) ||
      (st = in1(ctx, "Y@GRAD", &dy)) || (st = want_float(ctx, "X", x)) ||
      (st = want_same_dtype(ctx, "Y@GRAD", dy, "X", x)))
    return st;
  char s[DIMS_BUF];
  if (x->ndims == 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have at least 1 dim, got %s", shape_str(x, s));
  bool soft = pd_ctx_attr_bool(ctx, "soft_label");
  int64_t ignore = pd_ctx_attr_int(ctx, "ignore_index");
  int last = x->ndims - 1;
  int64_t classes = x->dims[last], rows = prod(x->dims, 0, last);
  int64_t yd[PD_K_MAX_DIMS];
  memcpy(yd, x->dims, sizeof yd);
  yd[last] = 1;
  if ((st = check_label(ctx, "X", x, label, last, soft)) ||
      (st = want_numel(ctx, "Y@GRAD", dy, x->ndims, yd, "Y")))
    return st;
  const int64_t *lab = NULL;
  void *buf = NULL;
  if (!soft && (st = hard_labels(ctx, label, rows, classes, ignore, &lab, &buf))) return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &label)) ||
      (st = unalias(ctx, &h, dx, &dy)) || (st = resize_like(ctx, dx, x, x)))
    goto done;
  if (rows > 0)
    st = k_check(ctx,
                 ctx->k->cross_entropy_grad(x->dtype, rows, classes, pd_tensor_data(x), soft,
                                            soft ? pd_tensor_data(label) : (const void *)lab,
                                            ignore, pd_tensor_data(dy), pd_tensor_data(dx)),
                 x->dtype);
done:
  pd_ctx_scratch_free(ctx, buf);
  hold_free(&h);
  return st;
}

/* ---- softmax_with_cross_entropy: Softmax = softmax(Logits) along axis, Loss = the cross
 * entropy of it against Label, computed stably as logsumexp - logit. The backend's fused
 * kernel wants the classes last: for another axis the logits (and soft labels) are transposed
 * [pre, C, post] -> [pre, post, C] into scratch and the softmax back (a hard label has 1 along
 * the axis, so its order is already the rows'). ---- */
typedef struct xent_plan {
  int axis;
  int64_t pre, classes, post, rows;
  bool soft;
  int64_t ignore;
  int64_t ld[PD_K_MAX_DIMS];  /* Loss's dims */
} xent_plan;

static pd_status xent_plan_make(const pd_exec_ctx *ctx, const pd_tensor *logits,
                                const pd_tensor *label, xent_plan *p) {
  pd_status st;
  if ((st = want_float(ctx, "Logits", logits)) ||
      (st = norm_axis(ctx, "axis", pd_ctx_attr_int(ctx, "axis"), "Logits", logits, &p->axis)))
    return st;
  p->soft = pd_ctx_attr_bool(ctx, "soft_label");
  p->ignore = pd_ctx_attr_int(ctx, "ignore_index");
  if ((st = check_label(ctx, "Logits", logits, label, p->axis, p->soft))) return st;
  split_at(logits, p->axis, &p->pre, &p->classes, &p->post);
  p->rows = p->pre * p->post;
  char s[DIMS_BUF];
  if (p->classes == 0 && p->rows > 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Logits %s has no classes", shape_str(logits, s));
  memcpy(p->ld, logits->dims, sizeof p->ld);
  p->ld[p->axis] = 1;
  return PD_OK;
}

/* [a, b, c] -> [a, c, b]. */
static pd_status swap_last2(const pd_exec_ctx *ctx, pd_dtype dt, int64_t a, int64_t b, int64_t c,
                            const void *x, void *out) {
  static const int perm[3] = {0, 2, 1};
  int64_t dims[3] = {a, b, c};
  return k_check(ctx, ctx->k->transpose(dt, 3, dims, perm, x, out), dt);
}

pd_status pd_kernel_softmax_with_cross_entropy(pd_exec_ctx *ctx) {
  const pd_tensor *logits, *label;
  pd_tensor *sm, *loss;
  pd_status st;
  xent_plan p;
  if ((st = in1(ctx, "Logits", &logits)) || (st = in1(ctx, "Label", &label)) ||
      (st = out_opt(ctx, "Softmax", &sm)) || (st = out1(ctx, "Loss", &loss)) ||
      (st = xent_plan_make(ctx, logits, label, &p)))
    return st;
  const int64_t *lab = NULL;
  void *labbuf = NULL, *work = NULL;
  if (!p.soft && (st = hard_labels(ctx, label, p.rows, p.classes, p.ignore, &lab, &labbuf)))
    return st;
  hold h;
  hold_init(&h);
  pd_dtype dt = logits->dtype;
  size_t sz = pd_dtype_size(dt);
  int64_t n = pd_tensor_numel(logits);
  const pd_tensor *ins[2] = {logits, label};
  for (int i = 0; i < 2 && !st; i++) {
    st = unalias(ctx, &h, sm, &ins[i]);
    if (!st) st = unalias(ctx, &h, loss, &ins[i]);
  }
  if (st) goto done;
  logits = ins[0];
  label = ins[1];
  if ((sm && (st = resize_like(ctx, sm, logits, logits))) ||
      (st = resize(ctx, loss, dt, logits->ndims, p.ld, logits)))
    goto done;
  if (p.rows == 0) goto done;
  /* Scratch: the transposed logits, softmax and soft labels when the classes are not last, and
   * the softmax when the op does not bind it. */
  bool moved = p.post > 1;
  size_t need = (size_t)n * sz * (moved ? (p.soft ? 3 : 2) : (sm ? 0 : 1));
  char *w = NULL;
  if (need && !(work = w = pd_ctx_scratch(ctx, need, &st))) goto done;
  const void *lg = pd_tensor_data(logits);
  const void *lb = p.soft ? pd_tensor_data(label) : (const void *)lab;
  void *smo = sm ? pd_tensor_data(sm) : w;
  if (moved) {
    void *lt = w, *smt = w + (size_t)n * sz;
    if ((st = swap_last2(ctx, dt, p.pre, p.classes, p.post, lg, lt))) goto done;
    if (p.soft) {
      void *labt = w + 2 * (size_t)n * sz;
      if ((st = swap_last2(ctx, dt, p.pre, p.classes, p.post, lb, labt))) goto done;
      lb = labt;
    }
    if ((st = k_check(ctx, ctx->k->softmax_xent(dt, p.rows, p.classes, lt, p.soft, lb, p.ignore,
                                                smt, pd_tensor_data(loss)),
                      dt)))
      goto done;
    if (sm) st = swap_last2(ctx, dt, p.pre, p.post, p.classes, smt, smo);
  } else {
    st = k_check(ctx, ctx->k->softmax_xent(dt, p.rows, p.classes, lg, p.soft, lb, p.ignore, smo,
                                           pd_tensor_data(loss)),
                 dt);
  }
done:
  pd_ctx_scratch_free(ctx, work);
  pd_ctx_scratch_free(ctx, labbuf);
  hold_free(&h);
  return st;
}

/* dLogits = (Softmax - onehot(label)) * dLoss (soft: Softmax * sum(label) - label); 0 on
 * ignored rows. */
pd_status pd_kernel_softmax_with_cross_entropy_grad(pd_exec_ctx *ctx) {
  const pd_tensor *logits, *sm, *label, *dloss;
  pd_tensor *dx;
  pd_status st;
  xent_plan p;
  if ((st = out_opt(ctx, "Logits@GRAD", &dx)) || !dx) return st;
  if ((st = in_opt(ctx, "Logits", &logits)) || (st = in1(ctx, "Softmax", &sm)) ||
      (st = in1(ctx, "Label", &label)) || (st = in1(ctx, "Loss@GRAD", &dloss)))
    return st;
  if (logits && !same_dims(logits->ndims, logits->dims, sm->ndims, sm->dims)) {
    char s1[DIMS_BUF], s2[DIMS_BUF];
    return pd_ctx_fail(ctx, PD_ESHAPE, "Softmax %s and Logits %s differ", shape_str(sm, s1),
                       shape_str(logits, s2));
  }
  if ((st = xent_plan_make(ctx, sm, label, &p)) ||
      (st = want_same_dtype(ctx, "Loss@GRAD", dloss, "Softmax", sm)) ||
      (st = want_numel(ctx, "Loss@GRAD", dloss, sm->ndims, p.ld, "Loss")))
    return st;
  const int64_t *lab = NULL;
  void *labbuf = NULL, *work = NULL;
  if (!p.soft && (st = hard_labels(ctx, label, p.rows, p.classes, p.ignore, &lab, &labbuf)))
    return st;
  const pd_tensor *like = logits ? logits : sm;
  hold h;
  hold_init(&h);
  pd_dtype dt = sm->dtype;
  size_t sz = pd_dtype_size(dt);
  int64_t n = pd_tensor_numel(sm);
  if ((st = unalias(ctx, &h, dx, &like)) || (st = unalias(ctx, &h, dx, &label)) ||
      (st = unalias(ctx, &h, dx, &dloss)))
    goto done;
  /* dLogits may be written over Softmax (the backend allows it) when the classes are last. */
  bool moved = p.post > 1;
  if ((moved || !in_place(dx, sm, dt, sm->ndims, sm->dims)) && (st = unalias(ctx, &h, dx, &sm)))
    goto done;
  if ((st = resize(ctx, dx, dt, sm->ndims, sm->dims, like))) goto done;
  if (p.rows == 0) goto done;
  const void *lb = p.soft ? pd_tensor_data(label) : (const void *)lab;
  if (!moved) {
    st = k_check(ctx, ctx->k->softmax_xent_grad(dt, p.rows, p.classes, pd_tensor_data(sm), p.soft,
                                                lb, p.ignore, pd_tensor_data(dloss),
                                                pd_tensor_data(dx)),
                 dt);
    goto done;
  }
  char *w = pd_ctx_scratch(ctx, (size_t)n * sz * (p.soft ? 2 : 1), &st);
  if (!(work = w)) goto done;
  if ((st = swap_last2(ctx, dt, p.pre, p.classes, p.post, pd_tensor_data(sm), w))) goto done;
  if (p.soft) {
    void *labt = w + (size_t)n * sz;
    if ((st = swap_last2(ctx, dt, p.pre, p.classes, p.post, lb, labt))) goto done;
    lb = labt;
  }
  if ((st = k_check(ctx, ctx->k->softmax_xent_grad(dt, p.rows, p.classes, w, p.soft, lb, p.ignore,
                                                   pd_tensor_data(dloss), w),
                    dt)))
    goto done;
  st = swap_last2(ctx, dt, p.pre, p.post, p.classes, w, pd_tensor_data(dx));
done:
  pd_ctx_scratch_free(ctx, work);
  pd_ctx_scratch_free(ctx, labbuf);
  hold_free(&h);
  return st;
}

/* accuracy (Fluid's): Out and Indices [N, k] are the top-k predictions, Label [N, 1]; a row is
 * correct when one of its k indices is its label. Accuracy [1] float32 = Correct / Total,
 * Correct and Total [1] int32; an empty batch gives 0. */
pd_status pd_kernel_accuracy(pd_exec_ctx *ctx) {
  const pd_tensor *pred, *ind, *label;
  pd_tensor *acc, *correct, *total;
  pd_status st;
  if ((st = in1(ctx, "Out", &pred)) || (st = in1(ctx, "Indices", &ind)) ||
      (st = in1(ctx, "Label", &label)) || (st = out1(ctx, "Accuracy", &acc)) ||
      (st = out_opt(ctx, "Correct", &correct)) || (st = out_opt(ctx, "Total", &total)))
    return st;
  char s1[DIMS_BUF], s2[DIMS_BUF];
  if (!is_int(ind->dtype) || !is_int(label->dtype))
    return pd_ctx_fail(ctx, PD_ETYPE, "Indices (%s) and Label (%s) must be int64 or int32",
                       pd_dtype_name(ind->dtype), pd_dtype_name(label->dtype));
  if (ind->ndims != 2 || !same_dims(pred->ndims, pred->dims, 2, ind->dims))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Out %s and Indices %s must both be [batch, k]",
                       shape_str(pred, s1), shape_str(ind, s2));
  int64_t rows = ind->dims[0], k = ind->dims[1];
  if (label->ndims != 2 || label->dims[0] != rows || label->dims[1] != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Label %s must be [%" PRId64 ", 1] for Indices %s",
                       shape_str(label, s1), rows, shape_str(ind, s2));
  int64_t hits = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t l = label->dtype == PD_INT64 ? PD_TENSOR_I64(label)[r] : PD_TENSOR_I32(label)[r];
    if (l < 0)
      return pd_ctx_fail(ctx, PD_EINVAL, "label %" PRId64 " in row %" PRId64 " is negative", l, r);
    for (int64_t j = 0; j < k; j++) {
      int64_t i = ind->dtype == PD_INT64 ? PD_TENSOR_I64(ind)[r * k + j]
                                         : PD_TENSOR_I32(ind)[r * k + j];
      if (i == l) {
        hits++;
        break;
      }
    }
  }
  int64_t one = 1;
  if ((st = resize(ctx, acc, PD_FP32, 1, &one, NULL)) ||
      (correct && (st = resize(ctx, correct, PD_INT32, 1, &one, NULL))) ||
      (total && (st = resize(ctx, total, PD_INT32, 1, &one, NULL))))
    return st;
  PD_TENSOR_F32(acc)[0] = rows ? (float)hits / (float)rows : 0.0f;
  if (correct) PD_TENSOR_I32(correct)[0] = (int32_t)hits;
  if (total) PD_TENSOR_I32(total)[0] = (int32_t)rows;
  return PD_OK;
}
