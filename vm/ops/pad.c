/* pad.c -- the padding ops: pad (every dim, a constant), pad2d (H and W of an NCHW or NHWC
 * tensor: constant, reflect, edge) and pad3d (D, H and W of an NCDHW or NDHWC tensor: constant,
 * reflect, replicate, circular), their shape function, kernel and gradient kernel, one each
 * for the three (they tell each other apart by the op's kind), over the backend's pad and
 * pad_grad entries. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

enum { MAXP = 2 * MAXD };

/* An op's padding as its attributes (or its Paddings input) give it. */
typedef struct pad_spec {
  pd_op_kind kind;
  int np;                 /* entries of p */
  int64_t p[MAXP];        /* pad: before and after of each dim; pad2d: top, bottom, left, right;
                             pad3d: left, right, top, bottom, front, back */
  bool channel_last;      /* NHWC, NDHWC */
  pd_k_pad_mode mode;
} pad_spec;

static pd_k_pad_mode mode_of(const char *s) {
  if (strcmp(s, "reflect") == 0) return PD_K_PAD_REFLECT;
  if (strcmp(s, "edge") == 0 || strcmp(s, "replicate") == 0) return PD_K_PAD_EDGE;
  if (strcmp(s, "circular") == 0) return PD_K_PAD_CIRCULAR;
  return PD_K_PAD_CONSTANT;
}

static const char *mode_name(pd_k_pad_mode m) {
  static const char *const names[] = {"constant", "reflect", "edge", "circular"};
  return names[m];
}

/* The spec's fields but p and np, from the op's kind, mode and data_format. */
static void spec_init(pad_spec *sp, pd_op_kind kind, const char *mode, const char *format) {
  sp->kind = kind;
  sp->mode = kind == PD_OP_pad ? PD_K_PAD_CONSTANT : mode_of(mode);
  sp->channel_last = kind != PD_OP_pad && (strcmp(format, "NHWC") == 0 ||
                                           strcmp(format, "NDHWC") == 0);
  sp->np = 0;
}

/* The paddings of sp for X (rank nd, dims xd; -1 unknown) as before[k], after[k] per dim.
 * NULL when they fit X, else the message, in msg. */
static const char *pad_layout(const pad_spec *sp, int nd, const int64_t *xd, int64_t *before,
                              int64_t *after, char *msg, size_t cap) {
  char sx[DIMS_BUF], spad[LIST_BUF];
  const int64_t *p = sp->p;
  int want = sp->kind == PD_OP_pad ? 2 * nd : sp->kind == PD_OP_pad2d ? 4 : 6;
  int rank = sp->kind == PD_OP_pad2d ? 4 : 5;
  dims_str(nd, xd, sx, sizeof sx);
  dims_str(sp->np, p, spad, sizeof spad);
  if (sp->kind != PD_OP_pad && nd != rank) {
    snprintf(msg, cap, "X must have %d dims (%s), got %s", rank,
             sp->kind == PD_OP_pad2d ? (sp->channel_last ? "NHWC" : "NCHW")
                                     : (sp->channel_last ? "NDHWC" : "NCDHW"),
             sx);
    return msg;
  }
  if (sp->np != want) {
    snprintf(msg, cap, "paddings %s has %d entries but X %s needs %d", spad, sp->np, sx, want);
    return msg;
  }
  for (int i = 0; i < sp->np; i++)
    if (p[i] < 0) {
      snprintf(msg, cap, "paddings %s must not be negative", spad);
      return msg;
    }
  memset(before, 0, sizeof(int64_t) * (size_t)nd);
  memset(after, 0, sizeof(int64_t) * (size_t)nd);
  if (sp->kind == PD_OP_pad) {
    for (int k = 0; k < nd; k++) {
      before[k] = p[2 * k];
      after[k] = p[2 * k + 1];
    }
  } else {
    /* The spatial dims, first to last, and where in p each one's pair is. */
    int first = sp->channel_last ? 1 : 2, ns = rank - 2;
    static const int at2[2] = {0, 2}, at3[3] = {4, 2, 0};
    for (int s = 0; s < ns; s++) {
      int pi = ns == 2 ? at2[s] : at3[s];
      before[first + s] = p[pi];
      after[first + s] = p[pi + 1];
    }
  }
  for (int k = 0; k < nd; k++) {
    bool padded = before[k] || after[k];
    if (xd[k] < 0 || !padded || sp->mode == PD_K_PAD_CONSTANT) continue;
    if (xd[k] == 0 || (sp->mode == PD_K_PAD_REFLECT && (before[k] >= xd[k] || after[k] >= xd[k]))) {
      snprintf(msg, cap, "%s padding of dim %d of X %s by %" PRId64 " and %" PRId64 " needs "
               "%s", mode_name(sp->mode), k, sx, before[k], after[k],
               sp->mode == PD_K_PAD_REFLECT ? "each smaller than the dim" : "a dim not empty");
      return msg;
    }
  }
  return NULL;
}

/* The paddings given at run time by a Paddings input: an int32/int64 tensor of one dim. */
static bool spec_from_tensor(pad_spec *sp, const pd_tensor *t, char *msg, size_t cap) {
  char s[DIMS_BUF];
  if (!is_int(t->dtype) || t->ndims != 1 || t->dims[0] > MAXP) {
    snprintf(msg, cap, "Paddings must be an int32 or int64 tensor of one dim of at most %d "
             "entries, got %s %s", MAXP, pd_dtype_name(t->dtype), shape_str(t, s));
    return false;
  }
  sp->np = (int)t->dims[0];
  for (int i = 0; i < sp->np; i++) sp->p[i] = elem_i(t, i);
  return true;
}

/* ================================================================ shape function */

pd_status pd_infer_pad(pd_infer_ctx *c) {
  const pd_var_desc *x;
  pd_infer_dims d, out;
  pad_spec sp;
  char msg[LIST_BUF + 2 * DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  pd_op_kind kind = c->def->kind;
  bool runtime = kind != PD_OP_pad && pd_infer_nin(c, "Paddings") > 0;
  spec_init(&sp, kind, kind == PD_OP_pad ? "" : pd_infer_attr_str(c, "mode"),
            kind == PD_OP_pad ? "" : pd_infer_attr_str(c, "data_format"));
  sp.np = pd_infer_attr_ints(c, "paddings", sp.p, MAXP);
  if (sp.np > MAXP)
    return pd_infer_fail(c, PD_EINVAL, "paddings has %d entries; at most %d are supported",
                         sp.np, MAXP);
  if (d.n < 0) {
    out = pd_infer_dims_unknown(kind == PD_OP_pad ? -1 : kind == PD_OP_pad2d ? 4 : 5);
    return pd_infer_set_out(c, "Out", 0, &out, x->dtype, 0);
  }
  int64_t before[MAXD], after[MAXD];
  if (runtime) {
    /* Only the rank, N and C are known: the rest come with Paddings. */
    sp.np = kind == PD_OP_pad2d ? 4 : 6;
    memset(sp.p, 0, sizeof sp.p);
  }
  if (pad_layout(&sp, d.n, d.d, before, after, msg, sizeof msg))
    return pd_infer_fail(c, PD_ESHAPE, "%s", msg);
  out = d;
  for (int k = 0; k < d.n; k++) {
    bool spatial = runtime && k > 0 && k != (sp.channel_last ? d.n - 1 : 1);
    out.d[k] = spatial || d.d[k] < 0 ? -1 : d.d[k] + before[k] + after[k];
  }
  bool same_rows = d.n > 0 && before[0] == 0 && after[0] == 0;
  return pd_infer_set_out(c, "Out", 0, &out, x->dtype, same_rows ? x->lod_level : 0);
}

/* ================================================================ kernels */

/* The op's paddings for x at run time: the Paddings input when given, else the attribute. */
static pd_status run_layout(const pd_exec_ctx *ctx, const pd_tensor *x, pad_spec *sp,
                            int64_t *before, int64_t *after) {
  char msg[LIST_BUF + 2 * DIMS_BUF];
  pd_op_kind kind = ctx->def->kind;
  spec_init(sp, kind, kind == PD_OP_pad ? "" : pd_ctx_attr_str(ctx, "mode"),
            kind == PD_OP_pad ? "" : pd_ctx_attr_str(ctx, "data_format"));
  const pd_tensor *t = kind == PD_OP_pad ? NULL : in_if_set(ctx, "Paddings", 0);
  if (t && !spec_from_tensor(sp, t, msg, sizeof msg))
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s", msg);
  if (!t && (sp->np = pd_ctx_attr_ints(ctx, "paddings", sp->p, MAXP)) > MAXP)
    return pd_ctx_fail(ctx, PD_EINVAL, "paddings has %d entries; at most %d are supported",
                       sp->np, MAXP);
  if (sp->np < 0) sp->np = 0;
  if (pad_layout(sp, x->ndims, x->dims, before, after, msg, sizeof msg))
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s", msg);
  return PD_OK;
}

/* Out = X padded. Out keeps X's LoD when its first dim is not padded. */
pd_status pd_kernel_pad(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  pad_spec sp;
  int64_t before[MAXD], after[MAXD], od[MAXD];
  pd_status st = in_at(ctx, "X", 0, true, &x);
  if (st || (st = out_at(ctx, "Out", 0, true, &out)) ||
      (st = run_layout(ctx, x, &sp, before, after)))
    return st;
  int nd = x->ndims;
  int64_t xd[MAXD];
  memcpy(xd, x->dims, sizeof(int64_t) * (size_t)nd);
  for (int k = 0; k < nd; k++) od[k] = xd[k] + before[k] + after[k];
  double value = pd_ctx_attr_float(ctx, sp.kind == PD_OP_pad3d ? "value" : "pad_value");
  bool same_rows = nd > 0 && before[0] == 0 && after[0] == 0;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, out, &x)) &&
      !(st = resize(ctx, out, x->dtype, nd, od, same_rows ? x : NULL)))
    st = k_check(ctx, ctx->k->pad(x->dtype, nd, xd, before, after, sp.mode, value,
                                  pd_tensor_data(x), pd_tensor_data(out)),
                 x->dtype);
  hold_free(&h);
  return st;
}

/* X@GRAD = the sum of Out@GRAD over the elements of Out that read each element of X. */
pd_status pd_kernel_pad_grad(pd_exec_ctx *ctx) {
  const pd_tensor *x, *dy;
  pd_tensor *dx;
  pad_spec sp;
  int64_t before[MAXD], after[MAXD], od[MAXD];
  pd_status st = out_at(ctx, "X@GRAD", 0, false, &dx);
  if (st || !dx) return st;
  if ((st = in_at(ctx, "X", 0, true, &x)) || (st = in_at(ctx, "Out@GRAD", 0, true, &dy)) ||
      (st = run_layout(ctx, x, &sp, before, after)))
    return st;
  int nd = x->ndims;
  int64_t xd[MAXD];
  memcpy(xd, x->dims, sizeof(int64_t) * (size_t)nd);
  for (int k = 0; k < nd; k++) od[k] = xd[k] + before[k] + after[k];
  if ((st = want_grad_shape(ctx, "Out@GRAD", dy, nd, od, x->dtype))) return st;
  hold h;
  hold_init(&h);
  if (!(st = unalias(ctx, &h, dx, &dy)) && !(st = unalias(ctx, &h, dx, &x)) &&
      !(st = resize(ctx, dx, x->dtype, nd, xd, x)))
    st = k_check(ctx, ctx->k->pad_grad(x->dtype, nd, xd, before, after, sp.mode,
                                       pd_tensor_data(dy), pd_tensor_data(dx)),
                 x->dtype);
  hold_free(&h);
  return st;
}
