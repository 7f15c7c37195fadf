/* kern_math.c -- op kernels of the arithmetic family: elementwise binary ops (with Fluid's
 * broadcasting and `axis`), activations, scale, cast, mul and matmul_v2, sum, mean, reduce_*,
 * softmax and log_softmax, cross_entropy and softmax_with_cross_entropy, comparisons and logical
 * ops, arg_max, top_k and accuracy; and the gradient kernels of the differentiable ones.
 *
 * The numbers come from the backend (ctx->k, kernels/kernels.h). What this file adds: it checks
 * dtypes and shapes at run time (feeds may disagree with the declarations), shapes every output
 * exactly as the op's shape function promised (vm/infershape*.c), carries LoD where Fluid does
 * (ops that keep X's rows give Out X's LoD), and copes with aliasing.
 *
 * Gradient kernels (<op>_grad, vm/ops/ops_grad.c) read the forward inputs, the forward outputs and
 * Out@GRAD, and write each X@GRAD that is bound, overwriting it, with X's shape and X's LoD.
 *
 * Aliasing: an output may be the very variable of an input (x = relu(x); sum(X=[a, b], Out=a);
 * the gradient of an in-place op, whose X@GRAD is its Out@GRAD). Elementwise kernels then compute
 * in place when the storage belongs to that variable alone. Anywhere else the kernel first takes
 * a second reference to the input's storage (unalias): resizing the output then gives the output
 * fresh storage and the input stays readable; storage shared with other tensors (a feed) is
 * never written through. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/kern.h"

/* ================================================================ helpers */

/* ---- Aliasing ---- */

/* The start every X, Y -> Out gradient kernel shares: the bound gradient outputs dX, dY (both
 * NULL: nothing to do, *none set), the inputs X, Y, Out@GRAD, all floating point of one dtype. */
static pd_status grad2_begin(const pd_exec_ctx *ctx, const pd_tensor **x, const pd_tensor **y,
                             const pd_tensor **dout, pd_tensor **dx, pd_tensor **dy, bool *none) {
  pd_status st;
  *none = false;
  if ((st = out_opt(ctx, "X@GRAD", dx)) || (st = out_opt(ctx, "Y@GRAD", dy))) return st;
  if (!*dx && !*dy) {
    *none = true;
    return PD_OK;
  }
  if ((st = in1(ctx, "X", x)) || (st = in1(ctx, "Y", y)) || (st = in1(ctx, "Out@GRAD", dout)) ||
      (st = want_float(ctx, "X", *x)) || (st = want_same_dtype(ctx, "X", *x, "Y", *y)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", *dout, "X", *x)))
    return st;
  return PD_OK;
}

/* Read X, Y and Out@GRAD through second references wherever dX or dY is one of them. */
static pd_status grad2_unalias(const pd_exec_ctx *ctx, hold *h, pd_tensor *dx, pd_tensor *dy,
                               const pd_tensor **x, const pd_tensor **y,
                               const pd_tensor **dout) {
  const pd_tensor **ins[3] = {x, y, dout};
  pd_status st = PD_OK;
  for (int i = 0; i < 3 && !st; i++) {
    st = unalias(ctx, h, dx, ins[i]);
    if (!st) st = unalias(ctx, h, dy, ins[i]);
  }
  return st;
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

/* ================================================================ elementwise binary ops */

/* What each op does to X and Y, for messages: "cannot add a [64, 10] and b [64, 20]". */
static const char *binop_verb(pd_k_binop op) {
  switch (op) {
    case PD_K_ADD: return "add";
    case PD_K_SUB: return "subtract";
    case PD_K_MUL: return "multiply";
    case PD_K_DIV: return "divide";
    case PD_K_MAX: return "take the maximum of";
    case PD_K_MIN: return "take the minimum of";
    case PD_K_POW: return "raise to a power";
    default: return "combine";
  }
}

/* The broadcast shape of X and Y (Fluid's rules with `axis`; vm/ops/infershape.c says the same at
 * compile time), with each operand's dims padded to its rank. */
static pd_status broadcast(const pd_exec_ctx *ctx, const char *verb, const pd_tensor *x,
                           const pd_tensor *y, int axis, int *nd, int64_t *od, int64_t *xp,
                           int64_t *yp) {
  pd_status st = pd_k_broadcast_dims(x->ndims, x->dims, y->ndims, y->dims, axis, nd, od, xp, yp);
  if (!st) return PD_OK;
  char sx[DIMS_BUF], sy[DIMS_BUF], sa[32] = "";
  if (axis != -1) snprintf(sa, sizeof sa, " (axis %d)", axis);
  return pd_ctx_fail(ctx, st == PD_ESHAPE ? PD_ESHAPE : PD_EINVAL, "cannot %s %s %s and %s %s%s",
                     verb, in_name(ctx, "X", 0), shape_str(x, sx), in_name(ctx, "Y", 0),
                     shape_str(y, sy), sa);
}

static pd_status elementwise(pd_exec_ctx *ctx, pd_k_binop op) {
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)))
    return st;
  if ((st = want_same_dtype(ctx, "X", x, "Y", y))) return st;
  if ((st = op == PD_K_POW ? want_float(ctx, "X", x) : want_number(ctx, "X", x))) return st;
  int axis = (int)pd_ctx_attr_int(ctx, "axis"), nd;
  int64_t od[PD_K_MAX_DIMS];
  if ((st = broadcast(ctx, binop_verb(op), x, y, axis, &nd, od, NULL, NULL))) return st;
  hold h;
  hold_init(&h);
  pd_dtype dt = x->dtype;
  /* The backend writes out over x or y when that operand already has out's shape. */
  if (!in_place(out, x, dt, nd, od) && !in_place(out, y, dt, nd, od) &&
      ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y))))
    goto done;
  if ((st = resize(ctx, out, dt, nd, od, x))) goto done;
  st = k_check(ctx,
               ctx->k->binary(op, dt, x->ndims, x->dims, pd_tensor_data(x), y->ndims, y->dims,
                              pd_tensor_data(y), axis, pd_tensor_data(out)),
               dt);
done:
  hold_free(&h);
  return st;
}

pd_status pd_kernel_elementwise_add(pd_exec_ctx *ctx) { return elementwise(ctx, PD_K_ADD); }
pd_status pd_kernel_elementwise_sub(pd_exec_ctx *ctx) { return elementwise(ctx, PD_K_SUB); }
pd_status pd_kernel_elementwise_mul(pd_exec_ctx *ctx) { return elementwise(ctx, PD_K_MUL); }
pd_status pd_kernel_elementwise_div(pd_exec_ctx *ctx) { return elementwise(ctx, PD_K_DIV); }
pd_status pd_kernel_elementwise_max(pd_exec_ctx *ctx) { return elementwise(ctx, PD_K_MAX); }
pd_status pd_kernel_elementwise_min(pd_exec_ctx *ctx) { return elementwise(ctx, PD_K_MIN); }
pd_status pd_kernel_elementwise_pow(pd_exec_ctx *ctx) { return elementwise(ctx, PD_K_POW); }

/* d = sign * dout summed over the dims along which the operand (pad: its dims padded to out's
 * rank) was broadcast: the gradient of an add or subtract. A plain copy when nothing was. The
 * bias of an fc layer, [rows, n] -> [n] (broadcast along leading dims only), is a column sum:
 * on the GPU one GEMM of a row of ones by dout, which runs at memory speed where the generic
 * strided reduction does not; the CPU's reduction has a loop for this layout (reading dout in
 * order: 33 us on [1600, 256] on two threads, where OpenBLAS took 96 us for the one-row GEMM). */
static pd_status sum_to(const pd_exec_ctx *ctx, pd_dtype dt, int nd, const int64_t *od,
                        const int64_t *pad, const void *dout, void *d, double sign) {
  int axes[PD_K_MAX_DIMS], na = 0;
  bool prefix = true, kept = false;  /* prefix: the summed dims all come before the kept ones */
  int64_t rows = 1;
  for (int i = 0; i < nd; i++) {
    if (pad[i] == 1 && od[i] != 1) {
      prefix = prefix && !kept;
      rows *= od[i];
      axes[na++] = i;
    } else if (od[i] != 1) {
      kept = true;
    }
  }
  int64_t n = pd_k_numel(nd, pad);
  pd_status st;
  if (na == 0) {
    if (sign == 1.0) {
      if (n && d != dout) return pd_ctx_copy(ctx, d, dout, (size_t)n * pd_dtype_size(dt));
      return PD_OK;
    }
    return k_check(ctx, ctx->k->scale(dt, n, dout, sign, 0.0, d), dt);
  }
  if (prefix && n > 1 && pd_ctx_place(ctx) == PD_K_CUDA) {
    void *ones = pd_ctx_scratch(ctx, (size_t)rows * pd_dtype_size(dt), &st);
    if (!ones) return st;
    st = ctx->k->fill(dt, rows, ones, 1.0);
    if (!st)
      st = ctx->k->gemm(dt, false, false, 1, n, rows, sign, ones, ld(rows), dout, n, 0.0, d, n);
    pd_ctx_scratch_free(ctx, ones);
    return k_check(ctx, st, dt);
  }
  if ((st = k_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, nd, od, dout, na, axes, d), dt)))
    return st;
  return sign == 1.0 ? PD_OK : k_check(ctx, ctx->k->scale(dt, n, d, sign, 0.0, d), dt);
}

static pd_status elementwise_grad(pd_exec_ctx *ctx, pd_k_binop op) {
  const pd_tensor *x, *y, *dout;
  pd_tensor *dx, *dy;
  bool none;
  pd_status st = grad2_begin(ctx, &x, &y, &dout, &dx, &dy, &none);
  if (st || none) return st;
  int axis = (int)pd_ctx_attr_int(ctx, "axis"), nd;
  int64_t od[PD_K_MAX_DIMS], xp[PD_K_MAX_DIMS], yp[PD_K_MAX_DIMS];
  if ((st = broadcast(ctx, binop_verb(op), x, y, axis, &nd, od, xp, yp)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, nd, od, "the broadcast of X and Y")))
    return st;
  hold h;
  hold_init(&h);
  pd_dtype dt = x->dtype;
  if ((st = grad2_unalias(ctx, &h, dx, dy, &x, &y, &dout))) goto done;
  /* dX of an add (or sub) whose X is not broadcast is Out@GRAD itself: share its storage rather
   * than copy it (a [1600, 256] output layer's logits: 1.6 MB a step). Kernels never write a
   * shared tensor in place (they resize it onto storage of its own first). */
  bool share_dx = (op == PD_K_ADD || op == PD_K_SUB) && dx &&
                  same_dims(x->ndims, x->dims, dout->ndims, dout->dims);
  if (share_dx && ((st = pd_ctx_check(ctx, pd_tensor_share(dx, dout), "share")) ||
                   (st = pd_ctx_check(ctx, pd_tensor_copy_lod(dx, x), "lod"))))
    goto done;
  if ((dx && !share_dx && (st = resize_like(ctx, dx, x, x))) ||
      (dy && (st = resize_like(ctx, dy, y, y))))
    goto done;
  if (op == PD_K_ADD || op == PD_K_SUB) {
    /* No need for the general loop: the shared storage, or a sum over the broadcast dims (the
     * bias of an fc layer: a column sum). */
    if (dx && !share_dx)
      st = sum_to(ctx, dt, nd, od, xp, pd_tensor_data(dout), pd_tensor_data(dx), 1.0);
    if (!st && dy)
      st = sum_to(ctx, dt, nd, od, yp, pd_tensor_data(dout), pd_tensor_data(dy),
                  op == PD_K_SUB ? -1.0 : 1.0);
  } else {
    st = k_check(ctx,
                 ctx->k->binary_grad(op, dt, x->ndims, x->dims, pd_tensor_data(x), y->ndims,
                                     y->dims, pd_tensor_data(y), axis, pd_tensor_data(dout),
                                     dx ? pd_tensor_data(dx) : NULL,
                                     dy ? pd_tensor_data(dy) : NULL),
                 dt);
  }
done:
  hold_free(&h);
  return st;
}

pd_status pd_kernel_elementwise_add_grad(pd_exec_ctx *ctx) { return elementwise_grad(ctx, PD_K_ADD); }
pd_status pd_kernel_elementwise_sub_grad(pd_exec_ctx *ctx) { return elementwise_grad(ctx, PD_K_SUB); }
pd_status pd_kernel_elementwise_mul_grad(pd_exec_ctx *ctx) { return elementwise_grad(ctx, PD_K_MUL); }
pd_status pd_kernel_elementwise_div_grad(pd_exec_ctx *ctx) { return elementwise_grad(ctx, PD_K_DIV); }
pd_status pd_kernel_elementwise_max_grad(pd_exec_ctx *ctx) { return elementwise_grad(ctx, PD_K_MAX); }
pd_status pd_kernel_elementwise_min_grad(pd_exec_ctx *ctx) { return elementwise_grad(ctx, PD_K_MIN); }
pd_status pd_kernel_elementwise_pow_grad(pd_exec_ctx *ctx) { return elementwise_grad(ctx, PD_K_POW); }

/* ================================================================ unary ops */

/* relu, square and abs of int32/int64 through the broadcast binary kernels (the unary ones are
 * float only): max(x, 0), x * x, max(x, 0 - x). out is not x (the caller unaliased). */
static pd_status unary_int_with(const pd_exec_ctx *ctx, pd_k_unop op, const pd_tensor *x,
                                pd_tensor *out, const void *zero);
static pd_status unary_int(const pd_exec_ctx *ctx, pd_k_unop op, const pd_tensor *x,
                           pd_tensor *out) {
  static const int64_t zero_host = 0;  /* a 0 of either width */
  pd_status st;
  void *ztmp = NULL;
  const void *zp = pd_ctx_at_place(ctx, &zero_host, sizeof zero_host, &ztmp, &st);
  if (!zp) return st;
  st = unary_int_with(ctx, op, x, out, zp);
  pd_ctx_scratch_free(ctx, ztmp);
  return st;
}

static pd_status unary_int_with(const pd_exec_ctx *ctx, pd_k_unop op, const pd_tensor *x,
                                pd_tensor *out, const void *zero) {
  pd_dtype dt = x->dtype;
  const void *xd = pd_tensor_data(x);
  void *od = pd_tensor_data(out);
  int nd = x->ndims;
  const int64_t *dims = x->dims;
  switch (op) {
    case PD_K_RELU:
      return k_check(ctx, ctx->k->binary(PD_K_MAX, dt, nd, dims, xd, 0, NULL, zero, -1, od), dt);
    case PD_K_SQUARE:
      return k_check(ctx, ctx->k->binary(PD_K_MUL, dt, nd, dims, xd, nd, dims, xd, -1, od), dt);
    default: {
      pd_status st = ctx->k->binary(PD_K_SUB, dt, 0, NULL, zero, nd, dims, xd, -1, od);
      if (!st) st = ctx->k->binary(PD_K_MAX, dt, nd, dims, xd, nd, dims, od, -1, od);
      return k_check(ctx, st, dt);
    }
  }
}

static pd_status unary(pd_exec_ctx *ctx, pd_k_unop op) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out))) return st;
  bool ints = op == PD_K_RELU || op == PD_K_SQUARE || op == PD_K_ABS;
  if ((st = ints ? want_number(ctx, "X", x) : want_float(ctx, "X", x))) return st;
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  bool floats = is_float(dt);
  if (!(floats && in_place(out, x, dt, x->ndims, x->dims)) && (st = unalias(ctx, &h, out, &x)))
    goto done;
  if ((st = resize_like(ctx, out, x, x))) goto done;
  if (floats)
    st = k_check(ctx, ctx->k->unary(op, dt, pd_tensor_numel(x), pd_tensor_data(x),
                                    pd_tensor_data(out)),
                 dt);
  else
    st = unary_int(ctx, op, x, out);
done:
  hold_free(&h);
  return st;
}

pd_status pd_kernel_abs(pd_exec_ctx *ctx) { return unary(ctx, PD_K_ABS); }
pd_status pd_kernel_exp(pd_exec_ctx *ctx) { return unary(ctx, PD_K_EXP); }
pd_status pd_kernel_log(pd_exec_ctx *ctx) { return unary(ctx, PD_K_LOG); }
pd_status pd_kernel_relu(pd_exec_ctx *ctx) { return unary(ctx, PD_K_RELU); }
pd_status pd_kernel_sigmoid(pd_exec_ctx *ctx) { return unary(ctx, PD_K_SIGMOID); }
pd_status pd_kernel_sqrt(pd_exec_ctx *ctx) { return unary(ctx, PD_K_SQRT); }
pd_status pd_kernel_square(pd_exec_ctx *ctx) { return unary(ctx, PD_K_SQUARE); }
pd_status pd_kernel_tanh(pd_exec_ctx *ctx) { return unary(ctx, PD_K_TANH); }

/* dX = dOut * f'(X), from X (log, square, abs) or from Out (the others), as the backend
 * prefers. */
static pd_status unary_grad(pd_exec_ctx *ctx, pd_k_unop op) {
  const pd_tensor *x, *o, *dout;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  bool reads_x = op == PD_K_LOG || op == PD_K_SQUARE || op == PD_K_ABS;
  if ((st = in_opt(ctx, "X", &x)) || (st = in_opt(ctx, "Out", &o)) ||
      (st = in1(ctx, "Out@GRAD", &dout)))
    return st;
  const pd_tensor *src = reads_x ? x : o;
  if (!src)
    return pd_ctx_fail(ctx, PD_EINVAL, "input %s is missing (the gradient reads it)",
                       reads_x ? "X" : "Out");
  const pd_tensor *like = x ? x : o;  /* X@GRAD's shape and LoD */
  if ((st = want_float(ctx, reads_x ? "X" : "Out", src)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, reads_x ? "X" : "Out", src)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, src->ndims, src->dims, reads_x ? "X" : "Out")))
    return st;
  pd_dtype dt = src->dtype;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &src)) || (st = unalias(ctx, &h, dx, &like))) goto done;
  /* dx may be dout (the backend allows it): the gradient of an in-place op. */
  if (!in_place(dx, dout, dt, like->ndims, like->dims) && (st = unalias(ctx, &h, dx, &dout)))
    goto done;
  if ((st = resize(ctx, dx, dt, like->ndims, like->dims, like))) goto done;
  st = k_check(ctx,
               ctx->k->unary_grad(op, dt, pd_tensor_numel(dx), reads_x ? pd_tensor_data(src) : NULL,
                                  reads_x ? NULL : pd_tensor_data(src), pd_tensor_data(dout),
                                  pd_tensor_data(dx)),
               dt);
done:
  hold_free(&h);
  return st;
}

pd_status pd_kernel_abs_grad(pd_exec_ctx *ctx) { return unary_grad(ctx, PD_K_ABS); }
pd_status pd_kernel_exp_grad(pd_exec_ctx *ctx) { return unary_grad(ctx, PD_K_EXP); }
pd_status pd_kernel_log_grad(pd_exec_ctx *ctx) { return unary_grad(ctx, PD_K_LOG); }
pd_status pd_kernel_relu_grad(pd_exec_ctx *ctx) { return unary_grad(ctx, PD_K_RELU); }
pd_status pd_kernel_sigmoid_grad(pd_exec_ctx *ctx) { return unary_grad(ctx, PD_K_SIGMOID); }
pd_status pd_kernel_sqrt_grad(pd_exec_ctx *ctx) { return unary_grad(ctx, PD_K_SQRT); }
pd_status pd_kernel_square_grad(pd_exec_ctx *ctx) { return unary_grad(ctx, PD_K_SQUARE); }
pd_status pd_kernel_tanh_grad(pd_exec_ctx *ctx) { return unary_grad(ctx, PD_K_TANH); }

/* ---- scale: Out = scale * X + bias (bias_after_scale), else scale * (X + bias). The scale
 * comes from the ScaleTensor input when one is bound. ---- */
static pd_status scale_factor(const pd_exec_ctx *ctx, double *a) {
  const pd_tensor *s;
  pd_status st = in_opt(ctx, "ScaleTensor", &s);
  if (st) return st;
  *a = pd_ctx_attr_float(ctx, "scale");
  if (!s) return PD_OK;
  char buf[DIMS_BUF];
  if (pd_tensor_numel(s) != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "ScaleTensor (var '%s') must hold one value, got %s",
                       in_name(ctx, "ScaleTensor", 0), shape_str(s, buf));
  if ((st = want_number(ctx, "ScaleTensor", s))) return st;
  /* ScaleTensor stays on the host (vm/run/exec_place.c): the CPU's cast reads it. */
  return k_check(ctx, pd_k_cpu()->cast(s->dtype, pd_tensor_data(s), PD_FP64, a, 1), s->dtype);
}

pd_status pd_kernel_scale(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  double a;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) || (st = scale_factor(ctx, &a)) ||
      (st = want_number(ctx, "X", x)))
    return st;
  double b = pd_ctx_attr_float(ctx, "bias");
  bool after = pd_ctx_attr_bool(ctx, "bias_after_scale");
  pd_dtype dt = x->dtype;
  hold h;
  hold_init(&h);
  if (!in_place(out, x, dt, x->ndims, x->dims) && (st = unalias(ctx, &h, out, &x))) goto done;
  if ((st = resize_like(ctx, out, x, x))) goto done;
  int64_t n = pd_tensor_numel(x);
  if (is_float(dt)) {
    st = ctx->k->scale(dt, n, pd_tensor_data(x), a, after ? b : a * b, pd_tensor_data(out));
  } else {
    /* Integers as Fluid does them: scale and bias converted to the dtype first. */
    scalar sab[2] = {make_scalar(dt, a), make_scalar(dt, b)};
    int nd = x->ndims;
    const int64_t *d = x->dims;
    void *o = pd_tensor_data(out), *tmp = NULL;
    /* Both scalars where the op computes (one upload on the GPU). */
    const char *ab = pd_ctx_at_place(ctx, sab, sizeof sab, &tmp, &st);
    if (!ab) goto done;
    const void *sa = ab, *sb = ab + sizeof sab[0];
    if (after) {
      st = ctx->k->binary(PD_K_MUL, dt, nd, d, pd_tensor_data(x), 0, NULL, sa, -1, o);
      if (!st) st = ctx->k->binary(PD_K_ADD, dt, nd, d, o, 0, NULL, sb, -1, o);
    } else {
      st = ctx->k->binary(PD_K_ADD, dt, nd, d, pd_tensor_data(x), 0, NULL, sb, -1, o);
      if (!st) st = ctx->k->binary(PD_K_MUL, dt, nd, d, o, 0, NULL, sa, -1, o);
    }
    pd_ctx_scratch_free(ctx, tmp);
  }
  st = k_check(ctx, st, dt);
done:
  hold_free(&h);
  return st;
}

/* dX = scale * dOut (the bias drops out). */
pd_status pd_kernel_scale_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dout;
  pd_tensor *dx;
  double a;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in_opt(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dout)) ||
      (st = scale_factor(ctx, &a)) || (st = want_float(ctx, "Out@GRAD", dout)))
    return st;
  const pd_tensor *like = x ? x : dout;
  if (x && ((st = want_same_dtype(ctx, "Out@GRAD", dout, "X", x)) ||
            (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X"))))
    return st;
  pd_dtype dt = dout->dtype;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &like))) goto done;
  if (!in_place(dx, dout, dt, like->ndims, like->dims) && (st = unalias(ctx, &h, dx, &dout)))
    goto done;
  if ((st = resize(ctx, dx, dt, like->ndims, like->dims, like))) goto done;
  st = k_check(ctx, ctx->k->scale(dt, pd_tensor_numel(dx), pd_tensor_data(dout), a, 0.0,
                                  pd_tensor_data(dx)),
               dt);
done:
  hold_free(&h);
  return st;
}

/* ---- cast: Out = X converted to out_dtype (in_dtype only documents X's dtype). ---- */
static pd_status cast_to(const pd_exec_ctx *ctx, const pd_tensor *x, pd_tensor *out, pd_dtype to,
                         const pd_tensor *lod) {
  pd_status st;
  if (out == x && x->dtype == to) return PD_OK;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x))) goto done;
  if (lod == out) lod = x;
  if ((st = resize(ctx, out, to, x->ndims, x->dims, lod))) goto done;
  st = ctx->k->cast(x->dtype, pd_tensor_data(x), to, pd_tensor_data(out), pd_tensor_numel(x));
  if (st == PD_EUNSUPPORTED)
    st = pd_ctx_fail(ctx, PD_ETYPE, "cannot cast %s to %s", pd_dtype_name(x->dtype),
                     pd_dtype_name(to));
  else
    st = k_check(ctx, st, x->dtype);
done:
  hold_free(&h);
  return st;
}

static pd_status dtype_attr(const pd_exec_ctx *ctx, const char *name, pd_dtype *dt) {
  int64_t v = pd_ctx_attr_int(ctx, name);
  if (!pd_dtype_valid((int)v) || v != (int)v)
    return pd_ctx_fail(ctx, PD_EINVAL, "%s %" PRId64 " is not a data type", name, v);
  *dt = (pd_dtype)v;
  return PD_OK;
}

pd_status pd_kernel_cast(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_dtype to = PD_FP32;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) ||
      (st = dtype_attr(ctx, "out_dtype", &to)))
    return st;
  return cast_to(ctx, x, out, to, x);
}

/* dX = dOut converted back to X's dtype (in_dtype when X is not bound). */
pd_status pd_kernel_cast_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dout;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in_opt(ctx, "X", &x)) || (st = in1(ctx, "Out@GRAD", &dout))) return st;
  pd_dtype to = PD_FP32;
  if (x) to = x->dtype;
  else if ((st = dtype_attr(ctx, "in_dtype", &to))) return st;
  if (x && (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X"))) return st;
  return cast_to(ctx, dout, dx, to, x ? x : dout);
}

/* ================================================================ matrix products */

/* ---- mul: X flattened to [M, K] at x_num_col_dims times Y flattened to [K, N] at
 * y_num_col_dims; Out = X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:], with X's LoD. One
 * GEMM straight on the tensors' data. ---- */
typedef struct mul_plan {
  int64_t m, k, n;
  int ond;
  int64_t od[PD_K_MAX_DIMS];
} mul_plan;

static pd_status mul_plan_make(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *y,
                               mul_plan *p) {
  char sx[DIMS_BUF], sy[DIMS_BUF];
  int64_t xn = pd_ctx_attr_int(ctx, "x_num_col_dims"), yn = pd_ctx_attr_int(ctx, "y_num_col_dims");
  if (xn < 1 || xn >= x->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "x_num_col_dims %" PRId64 " does not split X %s in two "
                       "(expected 1 to %d)", xn, shape_str(x, sx), x->ndims - 1);
  if (yn < 1 || yn >= y->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "y_num_col_dims %" PRId64 " does not split Y %s in two "
                       "(expected 1 to %d)", yn, shape_str(y, sy), y->ndims - 1);
  p->m = prod(x->dims, 0, (int)xn);
  p->k = prod(x->dims, (int)xn, x->ndims);
  int64_t rows = prod(y->dims, 0, (int)yn);
  p->n = prod(y->dims, (int)yn, y->ndims);
  if (p->k != rows)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X has %" PRId64 " columns but Y has %" PRId64
                       " rows (%s x %s)", p->k, rows, shape_str(x, sx), shape_str(y, sy));
  p->ond = (int)xn + y->ndims - (int)yn;
  if (p->ond > PD_K_MAX_DIMS)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "Out would have %d dims; at most %d are supported",
                       p->ond, PD_K_MAX_DIMS);
  for (int i = 0; i < xn; i++) p->od[i] = x->dims[i];
  for (int i = (int)yn; i < y->ndims; i++) p->od[xn + i - yn] = y->dims[i];
  return PD_OK;
}

pd_status pd_kernel_mul(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  mul_plan p;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "X", x, "Y", y)) ||
      (st = mul_plan_make(ctx, x, y, &p)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y)) ||
      (st = resize(ctx, out, x->dtype, p.ond, p.od, x)))
    goto done;
  st = k_check(ctx,
               ctx->k->gemm(x->dtype, false, false, p.m, p.n, p.k, 1.0, pd_tensor_data(x), ld(p.k),
                            pd_tensor_data(y), ld(p.n), 0.0, pd_tensor_data(out), ld(p.n)),
               x->dtype);
done:
  hold_free(&h);
  return st;
}

/* The gradients of Out [M, N] = X [M, K] Y [K, N] (mul, fc), each when wanted (non-NULL):
 * dX = dOut Y^T, dY = X^T dOut, shaped like X and Y. */
static pd_status product_grads(const pd_exec_ctx *ctx, int64_t m, int64_t k, int64_t n,
                               const pd_tensor *x, const pd_tensor *y, const pd_tensor *dout,
                               pd_tensor *dx, pd_tensor *dy) {
  pd_dtype dt = x->dtype;
  pd_status st = PD_OK;
  if (dx && !(st = resize_like(ctx, dx, x, x)))
    st = k_check(ctx,
                 ctx->k->gemm(dt, false, true, m, k, n, 1.0, pd_tensor_data(dout), ld(n),
                              pd_tensor_data(y), ld(n), 0.0, pd_tensor_data(dx), ld(k)),
                 dt);
  if (!st && dy && !(st = resize_like(ctx, dy, y, y)))
    st = k_check(ctx,
                 ctx->k->gemm(dt, true, false, k, n, m, 1.0, pd_tensor_data(x), ld(k),
                              pd_tensor_data(dout), ld(n), 0.0, pd_tensor_data(dy), ld(n)),
                 dt);
  return st;
}

/* dX [M, K] = dOut [M, N] Y^T; dY [K, N] = X^T dOut. */
pd_status pd_kernel_mul_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y, *dout;
  pd_tensor *dx, *dy;
  bool none;
  mul_plan p;
  pd_status st = grad2_begin(ctx, &x, &y, &dout, &dx, &dy, &none);
  if (st || none) return st;
  if ((st = mul_plan_make(ctx, x, y, &p)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, p.ond, p.od, "Out")))
    return st;
  hold h;
  hold_init(&h);
  if ((st = grad2_unalias(ctx, &h, dx, dy, &x, &y, &dout))) goto done;
  st = product_grads(ctx, p.m, p.k, p.n, x, y, dout, dx, dy);
done:
  hold_free(&h);
  return st;
}

/* ---- fc: Input flattened to [M, K] at in_num_col_dims times W [K, N], plus Bias ([N] or
 * [1, N]) on every row; Out = Input.dims[:in_num_col_dims] + [N], with Input's LoD. What the
 * fuse_fc pass (vm/passes/fuse_fc.h) makes of mul + elementwise_add: one gemm_bias (kernels.h), the
 * product accumulated onto the bias rows, where the two ops wrote a second [M, N] tensor and
 * passed over the first three times (clear, product, add: an output layer's logits are 1.6 MB a
 * step). ---- */
typedef struct fc_plan {
  int64_t m, k, n;
  int ond;
  int64_t od[PD_K_MAX_DIMS];
} fc_plan;

static pd_status fc_plan_make(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *w,
                              const pd_tensor *b, fc_plan *p) {
  char sx[DIMS_BUF], sw[DIMS_BUF], sb[DIMS_BUF];
  int64_t xn = pd_ctx_attr_int(ctx, "in_num_col_dims");
  if (*pd_ctx_attr_str(ctx, "activation_type") || pd_ctx_attr_bool(ctx, "padding_weights"))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "activation_type and padding_weights are not "
                       "supported (expected \"\" and false)");
  if (xn < 1 || xn >= x->ndims)
    return pd_ctx_fail(ctx, PD_EINVAL, "in_num_col_dims %" PRId64 " does not split Input %s in "
                       "two (expected 1 to %d)", xn, shape_str(x, sx), x->ndims - 1);
  if (w->ndims != 2)
    return pd_ctx_fail(ctx, PD_ESHAPE, "W must be a matrix [K, N], not %s", shape_str(w, sw));
  p->m = prod(x->dims, 0, (int)xn);
  p->k = prod(x->dims, (int)xn, x->ndims);
  p->n = w->dims[1];
  if (p->k != w->dims[0])
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input has %" PRId64 " columns but W has %" PRId64
                       " rows (%s x %s)", p->k, w->dims[0], shape_str(x, sx), shape_str(w, sw));
  if (b && !((b->ndims == 1 && b->dims[0] == p->n) ||
             (b->ndims == 2 && b->dims[0] == 1 && b->dims[1] == p->n)))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Bias %s must be [%" PRId64 "] or [1, %" PRId64 "] for W %s",
                       shape_str(b, sb), p->n, p->n, shape_str(w, sw));
  p->ond = (int)xn + 1;
  for (int i = 0; i < xn; i++) p->od[i] = x->dims[i];
  p->od[xn] = p->n;
  return PD_OK;
}

pd_status pd_kernel_fc(pd_exec_ctx *ctx) {
  const pd_tensor *x, *w, *b;
  pd_tensor *out;
  pd_status st;
  fc_plan p;
  if ((st = in1(ctx, "Input", &x)) || (st = in1(ctx, "W", &w)) || (st = in_opt(ctx, "Bias", &b)) ||
      (st = out1(ctx, "Out", &out)) || (st = want_float(ctx, "Input", x)) ||
      (st = want_same_dtype(ctx, "Input", x, "W", w)) ||
      (b && (st = want_same_dtype(ctx, "Input", x, "Bias", b))) ||
      (st = fc_plan_make(ctx, x, w, b, &p)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &w)) ||
      (b && (st = unalias(ctx, &h, out, &b))) ||
      (st = resize(ctx, out, x->dtype, p.ond, p.od, x)))
    goto done;
  pd_dtype dt = x->dtype;
  if (b)
    st = k_check(ctx,
                 ctx->k->gemm_bias(dt, false, false, p.m, p.n, p.k, pd_tensor_data(x), ld(p.k),
                                   pd_tensor_data(w), ld(p.n), pd_tensor_data(b),
                                   pd_tensor_data(out), ld(p.n)),
                 dt);
  else
    st = k_check(ctx,
                 ctx->k->gemm(dt, false, false, p.m, p.n, p.k, 1.0, pd_tensor_data(x), ld(p.k),
                              pd_tensor_data(w), ld(p.n), 0.0, pd_tensor_data(out), ld(p.n)),
                 dt);
done:
  hold_free(&h);
  return st;
}

/* dInput [M, K] = dOut W^T; dW [K, N] = Input^T dOut; dBias = dOut's column sums. */
pd_status pd_kernel_fc_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *w, *b, *dout;
  pd_tensor *dx, *dw, *db;
  pd_status st;
  fc_plan p;
  if ((st = out_opt(ctx, "Input@GRAD", &dx)) || (st = out_opt(ctx, "W@GRAD", &dw)) ||
      (st = out_opt(ctx, "Bias@GRAD", &db)))
    return st;
  if (!dx && !dw && !db) return PD_OK;
  if ((st = in1(ctx, "Input", &x)) || (st = in1(ctx, "W", &w)) || (st = in_opt(ctx, "Bias", &b)) ||
      (st = in1(ctx, "Out@GRAD", &dout)) || (st = want_float(ctx, "Input", x)) ||
      (st = want_same_dtype(ctx, "Input", x, "W", w)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, "Input", x)) ||
      (st = fc_plan_make(ctx, x, w, b, &p)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, p.ond, p.od, "Out")))
    return st;
  if (db && !b) return pd_ctx_fail(ctx, PD_EINVAL, "Bias@GRAD is wanted but Bias is not bound");
  hold h;
  hold_init(&h);
  pd_tensor *outs[3] = {dx, dw, db};
  const pd_tensor **ins[4] = {&x, &w, &b, &dout};
  for (int i = 0; i < 3 && !st; i++)
    for (int j = 0; j < 4 && !st; j++)
      if (*ins[j]) st = unalias(ctx, &h, outs[i], ins[j]);
  if (st) goto done;
  st = product_grads(ctx, p.m, p.k, p.n, x, w, dout, dx, dw);
  if (!st && db && !(st = resize_like(ctx, db, b, b))) {
    int64_t od[2] = {p.m, p.n}, pad[2] = {1, p.n};
    st = sum_to(ctx, x->dtype, 2, od, pad, pd_tensor_data(dout), pd_tensor_data(db), 1.0);
  }
done:
  hold_free(&h);
  return st;
}

/* ---- matmul_v2: NumPy's matmul. X [..., M, K] (stored [..., K, M] when trans_x) times
 * Y [..., K, N] ([..., N, K] when trans_y); a 1-D X is a row [1, K], a 1-D Y a column [K, 1],
 * and the added dim is dropped from Out again (trans_* is ignored for them); the batch dims (all
 * but the last two) broadcast. ---- */
typedef struct mm_plan {
  bool tx, ty;
  int64_t m, n, k;
  int nb;                                  /* batch rank (of Out) */
  int64_t bd[PD_K_MAX_DIMS];               /* Out's batch dims */
  int64_t xb[PD_K_MAX_DIMS], yb[PD_K_MAX_DIMS];  /* X's and Y's, padded to nb with 1s */
  int64_t batch, xbatch, ybatch;           /* batch element counts */
  int64_t xmat, ymat, omat;                /* elements per matrix */
  int64_t ldx, ldy;                        /* row strides of X's and Y's stored matrices */
  int ond;
  int64_t od[PD_K_MAX_DIMS];
} mm_plan;

static pd_status mm_plan_make(const pd_exec_ctx *ctx, const pd_tensor *x, const pd_tensor *y,
                              mm_plan *p) {
  char sx[DIMS_BUF], sy[DIMS_BUF];
  int xnd = x->ndims, ynd = y->ndims;
  if (xnd == 0 || ynd == 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "cannot multiply %s by %s: both need at least 1 dim",
                       shape_str(x, sx), shape_str(y, sy));
  p->tx = pd_ctx_attr_bool(ctx, "trans_x") && xnd > 1;
  p->ty = pd_ctx_attr_bool(ctx, "trans_y") && ynd > 1;
  int64_t xr = xnd == 1 ? 1 : x->dims[xnd - 2], xc = x->dims[xnd - 1];
  int64_t yr = ynd == 1 ? y->dims[0] : y->dims[ynd - 2], yc = ynd == 1 ? 1 : y->dims[ynd - 1];
  p->m = p->tx ? xc : xr;
  p->k = p->tx ? xr : xc;
  int64_t ky = p->ty ? yc : yr;
  p->n = p->ty ? yr : yc;
  if (p->k != ky)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X%s has %" PRId64 " columns but Y%s has %" PRId64
                       " rows (%s x %s)", p->tx ? "^T" : "", p->k, p->ty ? "^T" : "", ky,
                       shape_str(x, sx), shape_str(y, sy));
  p->ldx = xc;
  p->ldy = yc;
  int xbn = xnd > 2 ? xnd - 2 : 0, ybn = ynd > 2 ? ynd - 2 : 0;
  p->nb = xbn > ybn ? xbn : ybn;
  p->batch = p->xbatch = p->ybatch = 1;
  for (int i = 0; i < p->nb; i++) {
    int xi = i - (p->nb - xbn), yi = i - (p->nb - ybn);
    p->xb[i] = xi >= 0 ? x->dims[xi] : 1;
    p->yb[i] = yi >= 0 ? y->dims[yi] : 1;
    if (p->xb[i] != p->yb[i] && p->xb[i] != 1 && p->yb[i] != 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "cannot broadcast the batch dims of %s and %s",
                         shape_str(x, sx), shape_str(y, sy));
    p->bd[i] = p->xb[i] == 1 ? p->yb[i] : p->xb[i];
    p->batch *= p->bd[i];
    p->xbatch *= p->xb[i];
    p->ybatch *= p->yb[i];
  }
  p->xmat = p->m * p->k;
  p->ymat = p->k * p->n;
  p->omat = p->m * p->n;
  p->ond = 0;
  for (int i = 0; i < p->nb; i++) p->od[p->ond++] = p->bd[i];
  if (xnd > 1) p->od[p->ond++] = p->m;
  if (ynd > 1) p->od[p->ond++] = p->n;
  if (p->ond == 0) p->od[p->ond++] = 1;  /* vector . vector: [1], as the shape function says */
  return PD_OK;
}

/* The matrices of X and Y that Out's batch element b multiplies. */
static void mm_batch_index(const mm_plan *p, int64_t b, int64_t *xi, int64_t *yi) {
  int64_t x = 0, y = 0, xs = 1, ys = 1;
  for (int d = p->nb - 1; d >= 0; d--) {
    int64_t idx = b % p->bd[d];
    b /= p->bd[d];
    if (p->xb[d] != 1) x += idx * xs;
    if (p->yb[d] != 1) y += idx * ys;
    xs *= p->xb[d];
    ys *= p->yb[d];
  }
  *xi = x;
  *yi = y;
}

pd_status pd_kernel_matmul_v2(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  mm_plan p;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_float(ctx, "X", x)) || (st = want_same_dtype(ctx, "X", x, "Y", y)) ||
      (st = mm_plan_make(ctx, x, y, &p)))
    return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y)) ||
      (st = resize(ctx, out, x->dtype, p.ond, p.od, NULL)))
    goto done;
  pd_dtype dt = x->dtype;
  size_t sz = pd_dtype_size(dt);
  const char *xd = pd_tensor_data(x), *yd = pd_tensor_data(y);
  char *od = pd_tensor_data(out);
  int64_t ldo = ld(p.n);
  if (p.batch == 0) goto done;
  if (!p.tx && p.ybatch == 1 && p.xbatch == p.batch) {
    /* One matrix Y for every batch element (an fc layer over a sequence): fold the batch into
     * X's rows, one GEMM. */
    st = ctx->k->gemm(dt, false, p.ty, p.batch * p.m, p.n, p.k, 1.0, xd, ld(p.ldx), yd,
                      ld(p.ldy), 0.0, od, ldo);
  } else if ((p.xbatch == p.batch || p.xbatch == 1) && (p.ybatch == p.batch || p.ybatch == 1)) {
    st = ctx->k->gemm_batched(dt, p.tx, p.ty, p.batch, p.m, p.n, p.k, 1.0, xd, ld(p.ldx),
                              p.xbatch == 1 ? 0 : p.xmat, yd, ld(p.ldy),
                              p.ybatch == 1 ? 0 : p.ymat, 0.0, od, ldo, p.omat);
  } else {
    for (int64_t b = 0; b < p.batch && !st; b++) {
      int64_t xi, yi;
      mm_batch_index(&p, b, &xi, &yi);
      st = ctx->k->gemm(dt, p.tx, p.ty, p.m, p.n, p.k, 1.0, xd + (size_t)(xi * p.xmat) * sz,
                        ld(p.ldx), yd + (size_t)(yi * p.ymat) * sz, ld(p.ldy), 0.0,
                        od + (size_t)(b * p.omat) * sz, ldo);
    }
  }
  st = k_check(ctx, st, dt);
done:
  hold_free(&h);
  return st;
}

/* Per batch element b (X's matrix xi, Y's yi), with op() the stored matrix or its transpose:
 *   dX_xi += dOut_b op(Y)^T      (stored transposed when trans_x: op(Y) dOut_b^T)
 *   dY_yi += op(X)^T dOut_b      (stored transposed when trans_y: dOut_b^T op(X))
 * Where X (or Y) was broadcast along the batch, its gradient sums over the batch elements that
 * used it: it is cleared first and every product adds in. */
pd_status pd_kernel_matmul_v2_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *y, *dout;
  pd_tensor *dx, *dy;
  bool none;
  mm_plan p;
  pd_status st = grad2_begin(ctx, &x, &y, &dout, &dx, &dy, &none);
  if (st || none) return st;
  if ((st = mm_plan_make(ctx, x, y, &p)) ||
      (st = want_numel(ctx, "Out@GRAD", dout, p.ond, p.od, "Out")))
    return st;
  hold h;
  hold_init(&h);
  if ((st = grad2_unalias(ctx, &h, dx, dy, &x, &y, &dout))) goto done;
  if ((dx && (st = resize_like(ctx, dx, x, x))) || (dy && (st = resize_like(ctx, dy, y, y))))
    goto done;
  pd_dtype dt = x->dtype;
  size_t sz = pd_dtype_size(dt);
  const char *xd = pd_tensor_data(x), *yd = pd_tensor_data(y), *gd = pd_tensor_data(dout);
  char *dxd = dx ? pd_tensor_data(dx) : NULL, *dyd = dy ? pd_tensor_data(dy) : NULL;
  int64_t ldo = ld(p.n), ldx = ld(p.ldx), ldy = ld(p.ldy);
  if (p.batch == 0 || p.m * p.n * p.k == 0) {
    /* Nothing multiplies: the gradients are zero (an empty K makes Out zero). */
    if (dx) st = ctx->k->fill(dt, pd_tensor_numel(dx), dxd, 0.0);
    if (!st && dy) st = ctx->k->fill(dt, pd_tensor_numel(dy), dyd, 0.0);
    st = k_check(ctx, st, dt);
    goto done;
  }
  if (!p.tx && p.ybatch == 1 && p.xbatch == p.batch) {
    /* The folded forward (see pd_kernel_matmul_v2): X's rows [B * M, K]. dY's product sums over
     * the batch by itself. */
    int64_t rows = p.batch * p.m;
    if (dx) st = ctx->k->gemm(dt, false, !p.ty, rows, p.k, p.n, 1.0, gd, ldo, yd, ldy, 0.0, dxd, ld(p.k));
    if (!st && dy) {
      if (!p.ty)
        st = ctx->k->gemm(dt, true, false, p.k, p.n, rows, 1.0, xd, ldx, gd, ldo, 0.0, dyd, ldo);
      else
        st = ctx->k->gemm(dt, true, false, p.n, p.k, rows, 1.0, gd, ldo, xd, ldx, 0.0, dyd, ld(p.k));
    }
    st = k_check(ctx, st, dt);
    goto done;
  }
  bool xsum = p.xbatch != p.batch, ysum = p.ybatch != p.batch;
  if (dx && xsum) st = ctx->k->fill(dt, pd_tensor_numel(dx), dxd, 0.0);
  if (!st && dy && ysum) st = ctx->k->fill(dt, pd_tensor_numel(dy), dyd, 0.0);
  for (int64_t b = 0; b < p.batch && !st; b++) {
    int64_t xi, yi;
    mm_batch_index(&p, b, &xi, &yi);
    const char *xm = xd + (size_t)(xi * p.xmat) * sz, *ym = yd + (size_t)(yi * p.ymat) * sz;
    const char *gm = gd + (size_t)(b * p.omat) * sz;
    if (dx) {
      char *o = dxd + (size_t)(xi * p.xmat) * sz;
      double beta = xsum ? 1.0 : 0.0;
      if (!p.tx)
        st = ctx->k->gemm(dt, false, !p.ty, p.m, p.k, p.n, 1.0, gm, ldo, ym, ldy, beta, o, ld(p.k));
      else
        st = ctx->k->gemm(dt, p.ty, true, p.k, p.m, p.n, 1.0, ym, ldy, gm, ldo, beta, o, ld(p.m));
    }
    if (!st && dy) {
      char *o = dyd + (size_t)(yi * p.ymat) * sz;
      double beta = ysum ? 1.0 : 0.0;
      if (!p.ty)
        st = ctx->k->gemm(dt, !p.tx, false, p.k, p.n, p.m, 1.0, xm, ldx, gm, ldo, beta, o, ldo);
      else
        st = ctx->k->gemm(dt, true, p.tx, p.n, p.k, p.m, 1.0, gm, ldo, xm, ldx, beta, o, ld(p.k));
    }
  }
  st = k_check(ctx, st, dt);
done:
  hold_free(&h);
  return st;
}

/* ================================================================ sum, mean */

/* sum: Out = X[0] + X[1] + ...; the inputs agree in dtype and shape; Out takes X[0]'s LoD. The
 * backward pass adds the gradients of a var used several times with it, often as
 * sum(X=[g, g'], Out=g): when Out is one of the inputs and owns its storage, the others are
 * added into it in place. */
pd_status pd_kernel_sum(pd_exec_ctx *ctx) {
  pd_tensor *out;
  const pd_tensor *x0;
  pd_status st;
  int n = pd_ctx_nin(ctx, "X");
  if ((st = out1(ctx, "Out", &out)) || (st = in1(ctx, "X", &x0)) || (st = want_number(ctx, "X", x0)))
    return st;
  const pd_tensor *xs[64], **x = xs;
  if (n > 64 && !(x = pd_k_host_alloc((size_t)n * sizeof *x)))  /* host: pointers */
    return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
  hold h;
  hold_init(&h);
  pd_dtype dt = x0->dtype;
  int nd = x0->ndims, self = -1;  /* self: an input that is Out and may be written over */
  const int64_t *dims = x0->dims;
  for (int i = 0; i < n; i++) {
    if ((st = in_at(ctx, "X", i, true, &x[i]))) goto done;
    char s1[DIMS_BUF], s2[DIMS_BUF];
    if (x[i]->dtype != dt) {
      st = pd_ctx_fail(ctx, PD_ETYPE, "X[%d] (var '%s') has dtype %s but X[0] (var '%s') has dtype %s",
                       i, in_name(ctx, "X", i), pd_dtype_name(x[i]->dtype), in_name(ctx, "X", 0),
                       pd_dtype_name(dt));
      goto done;
    }
    if (!same_dims(x[i]->ndims, x[i]->dims, nd, dims)) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "X[%d] (var '%s') has shape %s but X[0] (var '%s') has %s",
                       i, in_name(ctx, "X", i), shape_str(x[i], s1), in_name(ctx, "X", 0),
                       shape_str(x0, s2));
      goto done;
    }
    if (self < 0 && in_place(out, x[i], dt, nd, dims)) self = i;
  }
  if (self >= 0) {
    if (self != 0 && pd_tensor_copy_lod(out, x0)) {
      st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
      goto done;
    }
    /* Out listed again among the inputs counts once more each time: scale it first. */
    int again = 0;
    for (int i = 0; i < n; i++) again += i != self && x[i] == out;
    if (again) {
      scalar f = make_scalar(dt, again + 1);
      void *ftmp = NULL;
      const void *fp = pd_ctx_at_place(ctx, &f, pd_dtype_size(dt), &ftmp, &st);
      if (fp)
        st = k_check(ctx, ctx->k->binary(PD_K_MUL, dt, nd, dims, pd_tensor_data(out), 0, NULL, fp,
                                         -1, pd_tensor_data(out)),
                     dt);
      pd_ctx_scratch_free(ctx, ftmp);
    }
    for (int i = 0; i < n && !st; i++)
      if (i != self && x[i] != out)
        st = k_check(ctx, ctx->k->binary(PD_K_ADD, dt, nd, dims, pd_tensor_data(out), nd, dims,
                                         pd_tensor_data(x[i]), -1, pd_tensor_data(out)),
                     dt);
    goto done;
  }
  /* Out is not an input, or its storage is shared: a fresh result. */
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *was = x[i];
    st = unalias(ctx, &h, out, &x[i]);
    for (int j = i + 1; j < n && !st; j++)  /* the same var listed again: one reference */
      if (x[j] == was) x[j] = x[i];
  }
  if (st) goto done;
  dims = x[0]->dims;  /* x0 may be out, which the resize rewrites */
  if ((st = resize(ctx, out, dt, nd, dims, x[0]))) goto done;
  if (n == 1) {
    st = pd_ctx_copy(ctx, pd_tensor_data(out), pd_tensor_data(x[0]), pd_tensor_nbytes(out));
  } else {
    st = ctx->k->binary(PD_K_ADD, dt, nd, dims, pd_tensor_data(x[0]), nd, dims,
                        pd_tensor_data(x[1]), -1, pd_tensor_data(out));
    for (int i = 2; i < n && !st; i++)
      st = ctx->k->binary(PD_K_ADD, dt, nd, dims, pd_tensor_data(out), nd, dims,
                          pd_tensor_data(x[i]), -1, pd_tensor_data(out));
    st = k_check(ctx, st, dt);
  }
done:
  hold_free(&h);
  if (x != xs) pd_k_host_free(x);
  return st;
}

/* Every bound X@GRAD[i] is a copy of Out@GRAD, with X[i]'s LoD. */
pd_status pd_kernel_sum_grad(pd_exec_ctx *ctx) {
  const pd_tensor *dout;
  pd_status st;
  int n = pd_ctx_nout(ctx, "X@GRAD");
  if (n == 0) return PD_OK;
  if ((st = in1(ctx, "Out@GRAD", &dout))) return st;
  for (int i = 0; i < n; i++) {
    pd_tensor *dx;
    const pd_tensor *x;
    if ((st = out_at(ctx, "X@GRAD", i, false, &dx))) return st;
    if (!dx) continue;
    if ((st = in_at(ctx, "X", i, false, &x))) return st;
    if (x && (st = want_numel(ctx, "Out@GRAD", dout, x->ndims, x->dims, "X"))) return st;
    if (dx == dout) continue;
    const pd_tensor *like = x ? x : dout, *lod = x ? x : dout;
    hold h;
    hold_init(&h);
    if (!(st = unalias(ctx, &h, dx, &like)) && !(st = unalias(ctx, &h, dx, &lod)) &&
        !(st = resize(ctx, dx, dout->dtype, like->ndims, like->dims, lod))) {
      st = pd_ctx_copy(ctx, pd_tensor_data(dx), pd_tensor_data(dout), pd_tensor_nbytes(dx));
    }
    hold_free(&h);
    if (st) return st;
  }
  return PD_OK;
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

enum { RED_PROD = PD_K_REDOP_COUNT_ };  /* reduce_prod, beside the backend's pd_k_redop */

static pd_status reduce(pd_exec_ctx *ctx, int op) {
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
  if (op == RED_PROD) {
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

pd_status pd_kernel_reduce_sum(pd_exec_ctx *ctx) { return reduce(ctx, PD_K_RSUM); }
pd_status pd_kernel_reduce_mean(pd_exec_ctx *ctx) { return reduce(ctx, PD_K_RMEAN); }
pd_status pd_kernel_reduce_max(pd_exec_ctx *ctx) { return reduce(ctx, PD_K_RMAX); }
pd_status pd_kernel_reduce_min(pd_exec_ctx *ctx) { return reduce(ctx, PD_K_RMIN); }
pd_status pd_kernel_reduce_prod(pd_exec_ctx *ctx) { return reduce(ctx, RED_PROD); }

/* sum: dOut copied along the reduced dims; mean: divided by their size; max/min: dOut to every
 * element equal to the result (as Fluid); prod: see reduce_prod_grad. */
static pd_status reduce_grad(pd_exec_ctx *ctx, int op) {
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
  if (op == RED_PROD)
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

pd_status pd_kernel_reduce_sum_grad(pd_exec_ctx *ctx) { return reduce_grad(ctx, PD_K_RSUM); }
pd_status pd_kernel_reduce_mean_grad(pd_exec_ctx *ctx) { return reduce_grad(ctx, PD_K_RMEAN); }
pd_status pd_kernel_reduce_max_grad(pd_exec_ctx *ctx) { return reduce_grad(ctx, PD_K_RMAX); }
pd_status pd_kernel_reduce_min_grad(pd_exec_ctx *ctx) { return reduce_grad(ctx, PD_K_RMIN); }
pd_status pd_kernel_reduce_prod_grad(pd_exec_ctx *ctx) { return reduce_grad(ctx, RED_PROD); }

/* ================================================================ softmax and losses */

/* X viewed as [pre, n, post] around `axis`. */
static void split_at(const pd_tensor *t, int axis, int64_t *pre, int64_t *n, int64_t *post) {
  *pre = prod(t->dims, 0, axis);
  *n = t->dims[axis];
  *post = prod(t->dims, axis + 1, t->ndims);
}

static pd_status softmax_fwd(pd_exec_ctx *ctx, bool log) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  int axis;
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

pd_status pd_kernel_softmax(pd_exec_ctx *ctx) { return softmax_fwd(ctx, false); }
pd_status pd_kernel_log_softmax(pd_exec_ctx *ctx) { return softmax_fwd(ctx, true); }

/* From the forward output: softmax: dX = Out * (dOut - sum(dOut * Out)); log_softmax:
 * dX = dOut - exp(Out) * sum(dOut). */
static pd_status softmax_bwd(pd_exec_ctx *ctx, bool log) {
  const pd_tensor *x, *o, *dout;
  pd_tensor *dx;
  pd_status st;
  int axis;
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

pd_status pd_kernel_softmax_grad(pd_exec_ctx *ctx) { return softmax_bwd(ctx, false); }
pd_status pd_kernel_log_softmax_grad(pd_exec_ctx *ctx) { return softmax_bwd(ctx, true); }

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

/* ================================================================ comparisons, logic */

/* less_than, ..., not_equal: Out (bool) = X CMP Y with broadcasting; X's LoD. */
static pd_status compare(pd_exec_ctx *ctx, pd_k_cmpop op) {
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_same_dtype(ctx, "X", x, "Y", y)))
    return st;
  if (!is_float(x->dtype) && !is_int(x->dtype) && x->dtype != PD_BOOL)
    return pd_ctx_fail(ctx, PD_ETYPE, "X (var '%s') has dtype %s; expected a number or bool",
                       in_name(ctx, "X", 0), pd_dtype_name(x->dtype));
  int axis = (int)pd_ctx_attr_int(ctx, "axis"), nd;
  int64_t od[PD_K_MAX_DIMS];
  if ((st = broadcast(ctx, "compare", x, y, axis, &nd, od, NULL, NULL))) return st;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) && !(st = unalias(ctx, &h, out, &y)) &&
      !(st = resize(ctx, out, PD_BOOL, nd, od, x)))
    st = k_check(ctx,
                 ctx->k->compare(op, x->dtype, x->ndims, x->dims, pd_tensor_data(x), y->ndims,
                                 y->dims, pd_tensor_data(y), axis, PD_TENSOR_BOOL(out)),
                 x->dtype);
  hold_free(&h);
  return st;
}

pd_status pd_kernel_equal(pd_exec_ctx *ctx) { return compare(ctx, PD_K_EQ); }
pd_status pd_kernel_not_equal(pd_exec_ctx *ctx) { return compare(ctx, PD_K_NE); }
pd_status pd_kernel_less_than(pd_exec_ctx *ctx) { return compare(ctx, PD_K_LT); }
pd_status pd_kernel_less_equal(pd_exec_ctx *ctx) { return compare(ctx, PD_K_LE); }
pd_status pd_kernel_greater_than(pd_exec_ctx *ctx) { return compare(ctx, PD_K_GT); }
pd_status pd_kernel_greater_equal(pd_exec_ctx *ctx) { return compare(ctx, PD_K_GE); }

/* A logical operand as bools: a bool tensor as it is, a number converted (x != 0) into
 * scratch *buf (the caller frees it). */
static pd_status as_bools(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *t,
                          const uint8_t **out, void **buf) {
  *buf = NULL;
  if (t->dtype == PD_BOOL) {
    *out = PD_TENSOR_BOOL(t);
    return PD_OK;
  }
  pd_status st = want_number(ctx, slot, t);
  int64_t n = pd_tensor_numel(t);
  if (st || !(*buf = pd_ctx_scratch(ctx, (size_t)n, &st))) return st;
  *out = *buf;
  return k_check(ctx, ctx->k->cast(t->dtype, pd_tensor_data(t), PD_BOOL, *buf, n), t->dtype);
}

static pd_status logical(pd_exec_ctx *ctx, pd_k_logop op) {
  const pd_tensor *x, *y;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Y", &y)) || (st = out1(ctx, "Out", &out)) ||
      (st = want_same_dtype(ctx, "X", x, "Y", y)))
    return st;
  int nd;
  int64_t od[PD_K_MAX_DIMS];
  if ((st = broadcast(ctx, "combine", x, y, -1, &nd, od, NULL, NULL))) return st;
  hold h;
  hold_init(&h);
  void *bx = NULL, *by = NULL;
  const uint8_t *xb, *yb;
  if (!in_place(out, x, PD_BOOL, nd, od) && !in_place(out, y, PD_BOOL, nd, od) &&
      ((st = unalias(ctx, &h, out, &x)) || (st = unalias(ctx, &h, out, &y))))
    goto done;
  if ((st = as_bools(ctx, "X", x, &xb, &bx)) || (st = as_bools(ctx, "Y", y, &yb, &by)) ||
      (st = resize(ctx, out, PD_BOOL, nd, od, x)))
    goto done;
  st = k_check(ctx, ctx->k->logical(op, x->ndims, x->dims, xb, y->ndims, y->dims, yb, -1,
                                    PD_TENSOR_BOOL(out)),
               PD_BOOL);
done:
  pd_ctx_scratch_free(ctx, bx);
  pd_ctx_scratch_free(ctx, by);
  hold_free(&h);
  return st;
}

pd_status pd_kernel_logical_and(pd_exec_ctx *ctx) { return logical(ctx, PD_K_AND); }
pd_status pd_kernel_logical_or(pd_exec_ctx *ctx) { return logical(ctx, PD_K_OR); }

pd_status pd_kernel_logical_not(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out))) return st;
  if (x->dtype != PD_BOOL && (st = want_number(ctx, "X", x))) return st;
  hold h;
  hold_init(&h);
  int64_t n = pd_tensor_numel(x);
  if (!in_place(out, x, PD_BOOL, x->ndims, x->dims) && (st = unalias(ctx, &h, out, &x))) goto done;
  if ((st = resize(ctx, out, PD_BOOL, x->ndims, x->dims, x))) goto done;
  const uint8_t *src = PD_TENSOR_BOOL(x);
  if (x->dtype != PD_BOOL) {  /* not (x != 0) */
    if ((st = k_check(ctx, ctx->k->cast(x->dtype, pd_tensor_data(x), PD_BOOL, pd_tensor_data(out), n),
                      x->dtype)))
      goto done;
    src = PD_TENSOR_BOOL(out);
  }
  ctx->k->logical_not(n, src, PD_TENSOR_BOOL(out));
done:
  hold_free(&h);
  return st;
}

/* ================================================================ arg_max, top_k, accuracy */

/* arg_max: the index of the largest element along `axis` (of all of X when flatten; the first
 * of equal ones), as int64 or int32 (`dtype`); Out drops the axis (keepdims: keeps it as 1),
 * and a rank-0 result is [1]. */
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
    int axis;
    if ((st = norm_axis(ctx, "axis", pd_ctx_attr_int(ctx, "axis"), "X", x, &axis))) return st;
    split_at(x, axis, &pre, &n, &post);
    bool keep = pd_ctx_attr_bool(ctx, "keepdims");
    for (int d = 0; d < x->ndims; d++)
      if (d != axis || keep) od[ond++] = d == axis ? 1 : x->dims[d];
  }
  if (ond == 0) od[ond++] = 1;
  char s[DIMS_BUF];
  if (n == 0 && pre * post > 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "cannot take the arg_max of an empty axis of X %s",
                       shape_str(x, s));
  hold h;
  hold_init(&h);
  int64_t *idx = NULL;
  if ((st = unalias(ctx, &h, out, &x)) || (st = resize(ctx, out, dt, ond, od, NULL))) goto done;
  if (pre * post == 0) goto done;
  idx = dt == PD_INT64 ? PD_TENSOR_I64(out) : pd_ctx_scratch(ctx, (size_t)(pre * post) * sizeof *idx, &st);
  if (!idx) goto done;
  st = k_check(ctx, ctx->k->argmax(x->dtype, pre, n, post, pd_tensor_data(x), idx), x->dtype);
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

/* top_k: the k largest entries of each row along the last dim, in descending order (equal
 * values by index), and their indices (int64); both with X's LoD. */
pd_status pd_kernel_top_k(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out, *ind;
  pd_status st;
  int64_t k;
  if ((st = in1(ctx, "X", &x)) || (st = out1(ctx, "Out", &out)) ||
      (st = out1(ctx, "Indices", &ind)) || (st = want_number(ctx, "X", x)) ||
      (st = top_k_k(ctx, &k)))
    return st;
  char s[DIMS_BUF];
  if (x->ndims == 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must have at least 1 dim, got %s", shape_str(x, s));
  int last = x->ndims - 1;
  int64_t n = x->dims[last], rows = prod(x->dims, 0, last);
  if (k < 1 || k > n)
    return pd_ctx_fail(ctx, PD_EINVAL, "k %" PRId64 " is out of range for X %s (expected 1 to %"
                       PRId64 ")", k, shape_str(x, s), n);
  int64_t od[PD_K_MAX_DIMS];
  memcpy(od, x->dims, sizeof od);
  od[last] = k;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) && !(st = unalias(ctx, &h, ind, &x)) &&
      !(st = resize(ctx, out, x->dtype, x->ndims, od, x)) &&
      !(st = resize(ctx, ind, PD_INT64, x->ndims, od, x)) && rows > 0)
    st = k_check(ctx, ctx->k->top_k(x->dtype, rows, n, k, pd_tensor_data(x), pd_tensor_data(out),
                                    PD_TENSOR_I64(ind)),
                 x->dtype);
  hold_free(&h);
  return st;
}

/* dX: zeros, with each row's dOut entries put back where Indices says they came from. */
pd_status pd_kernel_top_k_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *ind, *dout;
  pd_tensor *dx;
  pd_status st;
  if ((st = out_opt(ctx, "X@GRAD", &dx)) || !dx) return st;
  if ((st = in1(ctx, "X", &x)) || (st = in1(ctx, "Indices", &ind)) ||
      (st = in1(ctx, "Out@GRAD", &dout)) || (st = want_float(ctx, "X", x)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", dout, "X", x)))
    return st;
  char s1[DIMS_BUF], s2[DIMS_BUF];
  if (x->ndims == 0 || ind->dtype != PD_INT64 || ind->ndims != x->ndims)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Indices %s %s does not fit X %s",
                       pd_dtype_name(ind->dtype), shape_str(ind, s1), shape_str(x, s2));
  int last = x->ndims - 1;
  int64_t n = x->dims[last], rows = prod(x->dims, 0, last), k = ind->dims[last];
  if (prod(ind->dims, 0, last) != rows)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Indices %s does not fit X %s", shape_str(ind, s1),
                       shape_str(x, s2));
  if ((st = want_numel(ctx, "Out@GRAD", dout, ind->ndims, ind->dims, "Indices"))) return st;
  hold h;
  hold_init(&h);
  if ((st = unalias(ctx, &h, dx, &x)) || (st = unalias(ctx, &h, dx, &ind)) ||
      (st = unalias(ctx, &h, dx, &dout)) || (st = resize_like(ctx, dx, x, x)))
    goto done;
  pd_dtype dt = x->dtype;
  size_t sz = pd_dtype_size(dt);
  if ((st = k_check(ctx, ctx->k->fill(dt, pd_tensor_numel(dx), pd_tensor_data(dx), 0.0), dt)))
    goto done;
  const int64_t *iv = PD_TENSOR_I64(ind);
  for (int64_t r = 0; r < rows && !st; r++) {
    st = ctx->k->scatter_add_rows(dt, n, 1, (char *)pd_tensor_data(dx) + (size_t)(r * n) * sz, k,
                                  iv + r * k, -1,
                                  (const char *)pd_tensor_data(dout) + (size_t)(r * k) * sz);
    if (st == PD_EINVAL)
      st = pd_ctx_fail(ctx, PD_EINVAL, "Indices row %" PRId64 " has an index outside [0, %" PRId64
                       ")", r, n);
    else
      st = k_check(ctx, st, dt);
  }
done:
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
