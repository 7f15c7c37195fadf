/* loss_elem.c -- the losses computed element by element, with Fluid's slots and attributes:
 * sigmoid_cross_entropy_with_logits, smooth_l1_loss, huber_loss and kldiv_loss: their shape
 * functions, kernels and gradient kernels (the gradients of every input, weights and labels
 * included). The arithmetic is the backend's (sigmoid_xent, smooth_l1, huber, kldiv and their
 * gradients: kernels/cpu/loss.c, kernels/cuda/loss.cu), in double, stored in X's dtype; the
 * kernels here check the operands, read the attributes and size the outputs, so the ops run on
 * the GPU too. */
#include "config.h"

#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* Slot ys (when bound) must have xs's dtype and shape. */
static pd_status infer_like(pd_infer_ctx *c, const char *xs, const pd_var_desc *x,
                            const pd_infer_dims *dx, const char *ys) {
  if (pd_infer_nin(c, ys) == 0) return PD_OK;
  const pd_var_desc *y;
  pd_infer_dims dy;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, ys, 0, &y, &dy)) ||
      (st = pd_infer_same_dtype(c, ys, y->dtype, xs, x->dtype)))
    return st;
  if (dx->n < 0 || dy.n < 0) return PD_OK;
  bool same = dx->n == dy.n;
  for (int i = 0; same && i < dx->n; i++) same = pd_infer_dim_compatible(dx->d[i], dy.d[i]);
  if (!same)
    return pd_infer_fail(c, PD_ESHAPE, "%s %s and %s %s must have the same shape", xs,
                         pd_infer_dims_str(dx, s1), ys, pd_infer_dims_str(&dy, s2));
  return PD_OK;
}

/* sigmoid_cross_entropy_with_logits: Label like X; Out like X. */
pd_status pd_infer_sigmoid_cross_entropy_with_logits(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims dx;
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = infer_like(c, "X", x, &dx, "Label")))
    return st;
  return pd_infer_set_out(c, "Out", 0, &dx, x->dtype, x->lod_level);
}

/* smooth_l1_loss: X [N, ...] (at least 2 dims), Y and the weights like it; Diff like X, Out
 * [N, 1]. */
pd_status pd_infer_smooth_l1_loss(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims dx;
  char s[PD_DIMS_BUF];
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = infer_like(c, "X", x, &dx, "Y")) ||
      (st = infer_like(c, "X", x, &dx, "InsideWeight")) ||
      (st = infer_like(c, "X", x, &dx, "OutsideWeight")))
    return st;
  if (dx.n >= 0 && dx.n < 2)
    return pd_infer_fail(c, PD_ESHAPE, "X must have at least 2 dims [batch, ...], got %s",
                         pd_infer_dims_str(&dx, s));
  if (pd_infer_nout(c, "Diff") && (st = pd_infer_set_out(c, "Diff", 0, &dx, x->dtype, 0)))
    return st;
  pd_infer_dims o = {.n = 2, .d = {dx.n >= 1 ? dx.d[0] : -1, 1}};
  return pd_infer_set_out(c, "Out", 0, &o, x->dtype, 0);
}

/* huber_loss: Y like X; Out and Residual like X. */
pd_status pd_infer_huber_loss(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims dx;
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = infer_like(c, "X", x, &dx, "Y")))
    return st;
  if (pd_infer_nout(c, "Residual") &&
      (st = pd_infer_set_out(c, "Residual", 0, &dx, x->dtype, x->lod_level)))
    return st;
  return pd_infer_set_out(c, "Out", 0, &dx, x->dtype, x->lod_level);
}

/* kldiv_loss: Target like X; Loss like X for reduction "none", else [1]. */
pd_status pd_infer_kldiv_loss(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims dx;
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &x, &dx)) || (st = infer_like(c, "X", x, &dx, "Target")))
    return st;
  if (strcmp(pd_infer_attr_str(c, "reduction"), "none") == 0)
    return pd_infer_set_out(c, "Loss", 0, &dx, x->dtype, x->lod_level);
  pd_infer_dims one = {.n = 1, .d = {1}};
  return pd_infer_set_out(c, "Loss", 0, &one, x->dtype, 0);
}

/* ================================================================ helpers */

/* Input t (slot ys) must have x's dtype and shape. */
static pd_status want_like(const pd_exec_ctx *ctx, const char *xs, const pd_tensor *x,
                           const char *ys, const pd_tensor *t) {
  pd_status st = want_same_dtype(ctx, ys, t, xs, x);
  if (st || same_dims(x->ndims, x->dims, t->ndims, t->dims)) return st;
  char s1[DIMS_BUF], s2[DIMS_BUF];
  return pd_ctx_fail(ctx, PD_ESHAPE, "%s (var '%s') %s and %s (var '%s') %s must have the same "
                     "shape", xs, in_name(ctx, xs, 0), shape_str(x, s1), ys, in_name(ctx, ys, 0),
                     shape_str(t, s2));
}

/* The data of an optional tensor (NULL when it is absent). */
static inline void *data_of(const pd_tensor *t) { return t ? pd_tensor_data(t) : NULL; }

/* The gradient outputs of a kernel: each resized like its forward input. Inputs an output
 * aliases are read through h. */
typedef struct gouts {
  int n;
  pd_tensor *out[4];
} gouts;

static pd_status grads_begin(const pd_exec_ctx *ctx, hold *h, gouts *g, const char *const *slots,
                             const pd_tensor **const *ins, int nin) {
  pd_status st;
  g->n = 0;
  for (int i = 0; slots[i]; i++) {
    pd_tensor *o;
    if ((st = out_opt(ctx, slots[i], &o))) return st;
    g->out[g->n++] = o;
  }
  for (int k = 0; k < g->n; k++)
    for (int i = 0; i < nin; i++)
      if ((st = unalias(ctx, h, g->out[k], ins[i]))) return st;
  return PD_OK;
}

/* ================================================================ sigmoid_cross_entropy_with_logits */

/* Out = (max(x, 0) - x * z + log(1 + exp(-|x|))) / norm; 0 where the label is ignored. */
pd_status pd_kernel_sigmoid_cross_entropy_with_logits(pd_exec_ctx *ctx) {
  const pd_tensor *x, *label;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Label", &label)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_float(ctx, "X", x)) || (st = want_like(ctx, "X", x, "Label", label)))
    return st;
  int64_t ignore = pd_ctx_attr_int(ctx, "ignore_index");
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &label)) ||
      (st = resize_like(ctx, out, x, x)))
    goto done;
  st = k_check(ctx,
               ctx->k->sigmoid_xent(x->dtype, pd_tensor_numel(x), pd_tensor_data(x),
                                    pd_tensor_data(label), ignore,
                                    pd_ctx_attr_bool(ctx, "normalize"), pd_tensor_data(out)),
               x->dtype);
done:
  hold_free(&h);
  return st;
}

/* dX = (sigmoid(x) - z) * dOut / norm, dLabel = -x * dOut / norm; 0 where ignored. */
pd_status pd_kernel_sigmoid_cross_entropy_with_logits_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *label, *dout;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Label", &label)) ||
      (st = in1(ctx, "Out@GRAD", &dout)) || (st = want_float(ctx, "X", x)) ||
      (st = want_like(ctx, "X", x, "Label", label)) ||
      (st = want_like(ctx, "X", x, "Out@GRAD", dout)))
    return st;
  int64_t ignore = pd_ctx_attr_int(ctx, "ignore_index");
  hold h;
  hold_init(&h);
  gouts g;
  if ((st = grads_begin(ctx, &h, &g, (const char *[]){"X@GRAD", "Label@GRAD", NULL},
                        (const pd_tensor **const[]){&x, &label, &dout}, 3)))
    goto done;
  for (int k = 0; k < g.n; k++)
    if (g.out[k] && (st = resize_like(ctx, g.out[k], x, x))) goto done;
  st = k_check(ctx,
               ctx->k->sigmoid_xent_grad(x->dtype, pd_tensor_numel(x), pd_tensor_data(x),
                                         pd_tensor_data(label), pd_tensor_data(dout), ignore,
                                         pd_ctx_attr_bool(ctx, "normalize"), data_of(g.out[0]),
                                         data_of(g.out[1])),
               x->dtype);
done:
  hold_free(&h);
  return st;
}

/* ================================================================ smooth_l1_loss */

typedef struct sl1 {
  const pd_tensor *x, *y, *iw, *ow;
  double s2;          /* sigma^2 */
  int64_t rows, cols;
} sl1;

static pd_status sl1_begin(const pd_exec_ctx *ctx, sl1 *p) {
  pd_status st;
  if ((st = in1(ctx, "X", &p->x)) || (st = in1(ctx, "Y", &p->y)) ||
      (st = in_opt(ctx, "InsideWeight", &p->iw)) || (st = in_opt(ctx, "OutsideWeight", &p->ow)) ||
      (st = want_float(ctx, "X", p->x)) || (st = want_like(ctx, "X", p->x, "Y", p->y)) ||
      (p->iw && (st = want_like(ctx, "X", p->x, "InsideWeight", p->iw))) ||
      (p->ow && (st = want_like(ctx, "X", p->x, "OutsideWeight", p->ow))))
    return st;
  char s[DIMS_BUF];
  if (p->x->ndims < 2)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X (var '%s') must have at least 2 dims [batch, ...], "
                       "got %s", in_name(ctx, "X", 0), shape_str(p->x, s));
  double sigma = pd_ctx_attr_float(ctx, "sigma");
  p->s2 = sigma * sigma;
  if (!(p->s2 > 0))
    return pd_ctx_fail(ctx, PD_EINVAL, "sigma must not be 0, got %g", sigma);
  p->rows = p->x->dims[0];
  p->cols = prod(p->x->dims, 1, p->x->ndims);
  return PD_OK;
}

/* diff = (x - y) * inside; loss = 0.5 * s2 * diff^2 where |diff| < 1 / s2, else
 * |diff| - 0.5 / s2; Out[row] = sum over the row of outside * loss. */
pd_status pd_kernel_smooth_l1_loss(pd_exec_ctx *ctx) {
  sl1 p;
  pd_tensor *diff, *out;
  pd_status st;
  if ((st = sl1_begin(ctx, &p)) || (st = out_opt(ctx, "Diff", &diff)) ||
      (st = out1(ctx, "Out", &out)))
    return st;
  hold h;
  hold_init(&h);
  const pd_tensor **ins[4] = {&p.x, &p.y, &p.iw, &p.ow};
  for (int i = 0; i < 4 && !st; i++)
    if (!(st = unalias(ctx, &h, diff, ins[i]))) st = unalias(ctx, &h, out, ins[i]);
  int64_t od[2] = {p.rows, 1};
  if (st || (diff && (st = resize_like(ctx, diff, p.x, NULL))) ||
      (st = resize(ctx, out, p.x->dtype, 2, od, NULL)))
    goto done;
  st = k_check(ctx,
               ctx->k->smooth_l1(p.x->dtype, p.rows, p.cols, pd_tensor_data(p.x),
                                 pd_tensor_data(p.y), data_of(p.iw), data_of(p.ow), p.s2,
                                 data_of(diff), pd_tensor_data(out)),
               p.x->dtype);
done:
  hold_free(&h);
  return st;
}

/* g = dOut[row] * outside * (s2 * diff where |diff| < 1 / s2, else sign(diff)):
 * dX = g * inside, dY = -dX, dInsideWeight = g * (x - y), dOutsideWeight = dOut[row] * loss. */
pd_status pd_kernel_smooth_l1_loss_grad(pd_exec_ctx *ctx) {
  sl1 p;
  const pd_tensor *dout;
  pd_status st;
  if ((st = sl1_begin(ctx, &p)) || (st = in1(ctx, "Out@GRAD", &dout)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, "X", p.x)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, 2, (int64_t[]){p.rows, 1}, "Out")))
    return st;
  hold h;
  hold_init(&h);
  gouts g;
  if ((st = grads_begin(ctx, &h, &g,
                        (const char *[]){"X@GRAD", "Y@GRAD", "InsideWeight@GRAD",
                                         "OutsideWeight@GRAD", NULL},
                        (const pd_tensor **const[]){&p.x, &p.y, &p.iw, &p.ow, &dout}, 5)))
    goto done;
  for (int k = 0; k < g.n; k++)
    if (g.out[k] && (st = resize_like(ctx, g.out[k], p.x, NULL))) goto done;
  st = k_check(ctx,
               ctx->k->smooth_l1_grad(p.x->dtype, p.rows, p.cols, pd_tensor_data(p.x),
                                      pd_tensor_data(p.y), data_of(p.iw), data_of(p.ow), p.s2,
                                      pd_tensor_data(dout), data_of(g.out[0]), data_of(g.out[1]),
                                      data_of(g.out[2]), data_of(g.out[3])),
               p.x->dtype);
done:
  hold_free(&h);
  return st;
}

/* ================================================================ huber_loss */

static pd_status huber_begin(const pd_exec_ctx *ctx, const pd_tensor **x, const pd_tensor **y,
                             double *delta) {
  pd_status st;
  if ((st = in1(ctx, "X", x)) || (st = in1(ctx, "Y", y)) || (st = want_float(ctx, "X", *x)) ||
      (st = want_like(ctx, "X", *x, "Y", *y)))
    return st;
  *delta = pd_ctx_attr_float(ctx, "delta");
  if (!(*delta > 0))
    return pd_ctx_fail(ctx, PD_EINVAL, "delta must be positive, got %g", *delta);
  return PD_OK;
}

/* Residual = y - x; Out = 0.5 r^2 where |r| <= delta, else delta * (|r| - 0.5 delta). */
pd_status pd_kernel_huber_loss(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y;
  pd_tensor *res, *out;
  double delta;
  pd_status st;
  if ((st = huber_begin(ctx, &x, &y, &delta)) || (st = out_opt(ctx, "Residual", &res)) ||
      (st = out1(ctx, "Out", &out)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y)) ||
      (st = unalias(ctx, &h, res, &x)) || (st = unalias(ctx, &h, res, &y)) ||
      (st = resize_like(ctx, out, x, x)) || (res && (st = resize_like(ctx, res, x, x))))
    goto done;
  st = k_check(ctx,
               ctx->k->huber(x->dtype, pd_tensor_numel(x), pd_tensor_data(x), pd_tensor_data(y),
                             delta, data_of(res), pd_tensor_data(out)),
               x->dtype);
done:
  hold_free(&h);
  return st;
}

/* dY = dOut * (r where |r| <= delta, else delta * sign(r)), dX = -dY. */
pd_status pd_kernel_huber_loss_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y, *dout;
  double delta;
  pd_status st;
  if ((st = huber_begin(ctx, &x, &y, &delta)) || (st = in1(ctx, "Out@GRAD", &dout)) ||
      (st = want_like(ctx, "X", x, "Out@GRAD", dout)))
    return st;
  hold h;
  hold_init(&h);
  gouts g;
  if ((st = grads_begin(ctx, &h, &g, (const char *[]){"X@GRAD", "Y@GRAD", NULL},
                        (const pd_tensor **const[]){&x, &y, &dout}, 3)))
    goto done;
  for (int k = 0; k < g.n; k++)
    if (g.out[k] && (st = resize_like(ctx, g.out[k], x, x))) goto done;
  st = k_check(ctx,
               ctx->k->huber_grad(x->dtype, pd_tensor_numel(x), pd_tensor_data(x),
                                  pd_tensor_data(y), pd_tensor_data(dout), delta,
                                  data_of(g.out[0]), data_of(g.out[1])),
               x->dtype);
done:
  hold_free(&h);
  return st;
}

/* ================================================================ kldiv_loss */

/* The reduction's factor on the sum (0: "none", no reduction). */
static double kl_scale(const pd_exec_ctx *ctx, const pd_tensor *x) {
  const char *r = pd_ctx_attr_str(ctx, "reduction");
  int64_t n = pd_tensor_numel(x);
  if (strcmp(r, "none") == 0) return 0;
  if (strcmp(r, "sum") == 0) return 1;
  if (strcmp(r, "batchmean") == 0) return x->ndims && x->dims[0] ? 1.0 / (double)x->dims[0] : 1;
  return n ? 1.0 / (double)n : 1;  /* mean */
}

/* l = t * (log(t) - x) where t > 0, else 0; Loss = l ("none"), or its sum times 1 ("sum"),
 * 1 / numel ("mean"), 1 / batch ("batchmean"). */
pd_status pd_kernel_kldiv_loss(pd_exec_ctx *ctx) {
  const pd_tensor *x, *t;
  pd_tensor *loss;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Target", &t)) || (st = out1(ctx, "Loss", &loss)) ||
      (st = want_float(ctx, "X", x)) || (st = want_like(ctx, "X", x, "Target", t)))
    return st;
  double scale = kl_scale(ctx, x);
  hold h;
  hold_init(&h);
  int64_t n = pd_tensor_numel(x), one = 1;
  if ((st = unalias(ctx, &h, loss, &x)) || (st = unalias(ctx, &h, loss, &t)) ||
      (st = scale == 0 ? resize_like(ctx, loss, x, x) : resize(ctx, loss, x->dtype, 1, &one, NULL)))
    goto done;
  st = k_check(ctx,
               ctx->k->kldiv(x->dtype, n, pd_tensor_data(x), pd_tensor_data(t), scale != 0,
                             scale, pd_tensor_data(loss)),
               x->dtype);
done:
  hold_free(&h);
  return st;
}

/* Where t > 0: dX = -t * g, dTarget = (log(t) + 1 - x) * g, with g = dLoss (per element for
 * "none", else dLoss[0] times the reduction's factor); 0 elsewhere. */
pd_status pd_kernel_kldiv_loss_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *t, *dl;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Target", &t)) ||
      (st = in1(ctx, "Loss@GRAD", &dl)) || (st = want_float(ctx, "X", x)) ||
      (st = want_like(ctx, "X", x, "Target", t)) ||
      (st = want_same_dtype(ctx, "Loss@GRAD", dl, "X", x)))
    return st;
  double scale = kl_scale(ctx, x);
  if ((st = scale == 0 ? want_numel(ctx, "Loss@GRAD", dl, x->ndims, x->dims, "Loss")
                       : want_numel(ctx, "Loss@GRAD", dl, 1, (int64_t[]){1}, "Loss")))
    return st;
  hold h;
  hold_init(&h);
  gouts g;
  if ((st = grads_begin(ctx, &h, &g, (const char *[]){"X@GRAD", "Target@GRAD", NULL},
                        (const pd_tensor **const[]){&x, &t, &dl}, 3)))
    goto done;
  for (int k = 0; k < g.n; k++)
    if (g.out[k] && (st = resize_like(ctx, g.out[k], x, x))) goto done;
  st = k_check(ctx,
               ctx->k->kldiv_grad(x->dtype, pd_tensor_numel(x), pd_tensor_data(x),
                                  pd_tensor_data(t), pd_tensor_data(dl), scale != 0, scale,
                                  data_of(g.out[0]), data_of(g.out[1])),
               x->dtype);
done:
  hold_free(&h);
  return st;
}
