/* infer_opt.c -- the load-time passes of an inference model (vm/passes/infer_opt.h): batch
 * norm folded into the convolution or product before it, test-mode dropout and identity scales
 * removed, then mul + bias add fused into fc, the convolutions with their bias, residual and
 * activation, and the attention layers' heads into memory_efficient_attention. */
#include "config.h"
#include "vm/passes/infer_opt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/passes/fuse_fc.h"
#include "vm/run/tensor.h"

static const pd_loc nowhere = {0};

static pd_status oom(pd_error *err) { return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory"); }

/* Who reads and writes a var in the whole program. */
typedef struct uses {
  int readers, writers;
  bool outside;   /* read or written in a block other than 0 */
  bool fetched;   /* read by a fetch op */
  int reader;     /* the last reader's index in block 0 */
  int writer;     /* the last writer's index in block 0 */
} uses;

static uses uses_of(const pd_program *p, const char *name) {
  uses u = {.reader = -1, .writer = -1};
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      const pd_op_desc *op = p->blocks[b]->ops[i];
      for (int s = 0; s < op->ninputs; s++)
        for (int k = 0; k < op->inputs[s].nargs; k++)
          if (strcmp(op->inputs[s].args[k], name) == 0) {
            u.readers++;
            u.outside |= b != 0;
            u.fetched |= strcmp(op->type, "fetch") == 0;
            if (b == 0) u.reader = i;
          }
      for (int s = 0; s < op->noutputs; s++)
        for (int k = 0; k < op->outputs[s].nargs; k++)
          if (strcmp(op->outputs[s].args[k], name) == 0) {
            u.writers++;
            u.outside |= b != 0;
            if (b == 0) u.writer = i;
          }
    }
  return u;
}

static bool attr_true(const pd_op_desc *op, const char *name) {
  const pd_attr *a = pd_op_attr(op, name);
  return a && ((a->type == PD_ATTR_BOOLEAN && a->v.b) || (a->type == PD_ATTR_INT && a->v.i));
}

static double attr_num(const pd_op_desc *op, const char *name, double def) {
  const pd_attr *a = pd_op_attr(op, name);
  if (!a) return def;
  switch (a->type) {
    case PD_ATTR_FLOAT: return a->v.f;
    case PD_ATTR_FLOAT64: return a->v.d;
    case PD_ATTR_INT: return a->v.i;
    case PD_ATTR_LONG: return (double)a->v.l;
    case PD_ATTR_BOOLEAN: return a->v.b;
    default: return def;
  }
}

static const char *attr_str(const pd_op_desc *op, const char *name, const char *def) {
  const pd_attr *a = pd_op_attr(op, name);
  return a && a->type == PD_ATTR_STRING ? a->v.s : def;
}

/* The float tensor of parameter name in scope, of n elements (n < 0: any); NULL otherwise. */
static pd_tensor *param(const pd_program *p, pd_scope *scope, const char *name, int64_t n) {
  const pd_var_desc *v = name ? pd_block_find_var_local(p->blocks[0], name) : NULL;
  pd_variable *sv = v && v->persistable ? pd_scope_find_var(scope, name) : NULL;
  pd_tensor *t = sv ? pd_var_tensor(sv) : NULL;
  if (!t || !pd_tensor_initialized(t) || (t->dtype != PD_FP32 && t->dtype != PD_FP64) ||
      (n >= 0 && pd_tensor_numel(t) != n))
    return NULL;
  return t;
}

static double get(const pd_tensor *t, int64_t i) {
  return t->dtype == PD_FP32 ? PD_TENSOR_F32(t)[i] : PD_TENSOR_F64(t)[i];
}
static void put(pd_tensor *t, int64_t i, double v) {
  if (t->dtype == PD_FP32) PD_TENSOR_F32(t)[i] = (float)v;
  else PD_TENSOR_F64(t)[i] = v;
}

/* A new persistable var of block 0 named hint.bnfold.K shaped like t, and its tensor in scope
 * (uninitialised values); NULL on out of memory. */
static pd_tensor *new_param(pd_program *p, pd_scope *scope, const char *hint, const pd_tensor *t,
                            const char **name) {
  char base[256], nm[300];
  snprintf(base, sizeof base, "%s.bnfold", hint);
  int64_t k = pd_program_free_suffix(p, base);
  if (k < 0) return NULL;
  snprintf(nm, sizeof nm, "%s.%lld", base, (long long)k);
  pd_var_desc *v = pd_block_var(p->blocks[0], nm);
  if (!v || pd_var_set_shape(v, t->ndims, t->dims)) return NULL;
  v->dtype = t->dtype, v->persistable = true, v->stop_gradient = true;
  pd_variable *sv = pd_scope_var(scope, v->name);
  pd_tensor *nt = sv ? pd_var_tensor(sv) : NULL;
  if (!nt || pd_tensor_resize(nt, t->dtype, t->ndims, t->dims)) return NULL;
  *name = v->name;
  return nt;
}

/* In the ops of block 0, read `to` where they read `from`. */
static pd_status rename_reads(pd_block *b, const char *from, const char *to) {
  for (int i = 0; i < b->nops; i++) {
    pd_op_desc *op = b->ops[i];
    for (int s = 0; s < op->ninputs; s++)
      for (int k = 0; k < op->inputs[s].nargs; k++)
        if (strcmp(op->inputs[s].args[k], from) == 0) {
          char *c = pd_strdup(to);
          if (!c) return PD_ENOMEM;
          pd_free(op->inputs[s].args[k]);
          op->inputs[s].args[k] = c;
        }
  }
  return PD_OK;
}

/* An op's output that may go away: read in block 0 only, not fetched, written by it alone. */
static bool removable(const pd_program *p, const char *out) {
  uses u = uses_of(p, out);
  return out && !u.outside && !u.fetched && u.writers == 1;
}

/* Fold the batch_norm at index i of block 0 into the product before it; false when it does
 * not have that shape (nothing changed). */
static pd_status fold_bn(pd_program *p, pd_scope *scope, int i, bool *done) {
  *done = false;
  pd_block *b0 = p->blocks[0];
  pd_op_desc *bn = b0->ops[i];
  if (!attr_true(bn, "is_test") && !attr_true(bn, "use_global_stats")) return PD_OK;
  const char *x = pd_op_input1(bn, "X"), *y = pd_op_output1(bn, "Y");
  if (!x || !y || strcmp(attr_str(bn, "data_layout", "NCHW"), "NCHW") != 0) return PD_OK;
  uses ux = uses_of(p, x);
  if (ux.readers != 1 || ux.writers != 1 || ux.outside || ux.writer < 0 || ux.writer >= i)
    return PD_OK;
  /* the other outputs: the running statistics themselves, or read by nobody */
  static const char *const rest[][2] = {{"MeanOut", "Mean"},       {"VarianceOut", "Variance"},
                                        {"SavedMean", NULL},       {"SavedVariance", NULL},
                                        {"ReserveSpace", NULL}};
  for (size_t r = 0; r < sizeof rest / sizeof *rest; r++) {
    const char *o = pd_op_output1(bn, rest[r][0]);
    const char *same = rest[r][1] ? pd_op_input1(bn, rest[r][1]) : NULL;
    if (o && !(same && strcmp(o, same) == 0) && uses_of(p, o).readers > 0) return PD_OK;
  }
  pd_op_desc *add = NULL, *prod = b0->ops[ux.writer];
  const char *prod_out = x;
  if (strcmp(prod->type, "elementwise_add") == 0) {
    add = prod;
    prod_out = pd_op_input1(add, "X");
    uses uo = prod_out ? uses_of(p, prod_out) : (uses){0};
    if (!prod_out || uo.readers != 1 || uo.writers != 1 || uo.outside || uo.writer < 0 ||
        uo.writer >= ux.writer)
      return PD_OK;
    prod = b0->ops[uo.writer];
  }
  bool tconv = strcmp(prod->type, "conv2d_transpose") == 0;
  bool conv = tconv || strcmp(prod->type, "conv2d") == 0 ||
              strcmp(prod->type, "depthwise_conv2d") == 0;
  bool mm = strcmp(prod->type, "mul") == 0 || strcmp(prod->type, "matmul_v2") == 0;
  const char *wslot = conv ? "Filter" : "Y", *wname = pd_op_input1(prod, wslot);
  pd_tensor *w = (conv || mm) ? param(p, scope, wname, -1) : NULL;
  if (!w) return PD_OK;
  const pd_var_desc *ov = pd_block_find_var_local(b0, prod_out);
  int64_t c, groups = 1;
  if (conv) {
    const char *df = attr_str(prod, "data_format", "NCHW");
    if ((strcmp(df, "NCHW") != 0 && strcmp(df, "AnyLayout") != 0) || w->ndims != 4) return PD_OK;
    /* conv2d's filter is [C_out, C_in / groups, kh, kw]; conv2d_transpose's [C_in, C_out /
     * groups, kh, kw], output channel (i / (C_in / groups)) * (C_out / groups) + j of row i,
     * column j */
    groups = tconv ? (int64_t)attr_num(prod, "groups", 1) : 1;
    if (groups < 1 || w->dims[0] % groups) return PD_OK;
    c = tconv ? w->dims[1] * groups : w->dims[0];
  } else {
    if (w->ndims != 2 || !ov || ov->ndims != 2 || attr_true(prod, "trans_x") ||
        attr_true(prod, "trans_y") || (strcmp(prod->type, "mul") == 0 &&
                                       attr_num(prod, "y_num_col_dims", 1) != 1))
      return PD_OK;
    c = w->dims[1];
  }
  pd_tensor *mean = param(p, scope, pd_op_input1(bn, "Mean"), c);
  pd_tensor *var = param(p, scope, pd_op_input1(bn, "Variance"), c);
  pd_tensor *gamma = param(p, scope, pd_op_input1(bn, "Scale"), c);
  pd_tensor *beta = param(p, scope, pd_op_input1(bn, "Bias"), c);
  pd_tensor *bias = NULL;
  if (add) { /* a bias per channel: [C] at axis 1 for a convolution (or [1, C, 1, 1] at -1, as
                Paddle 3 adds it), [C] at -1 or 1 for a product */
    bias = param(p, scope, pd_op_input1(add, "Y"), c);
    double axis = attr_num(add, "axis", -1);
    bool chan4 = bias && bias->ndims == 4 && bias->dims[0] == 1 && bias->dims[1] == c &&
                 bias->dims[2] == 1 && bias->dims[3] == 1;
    if (!bias || (conv && !(axis == 1 || (axis == -1 && chan4))) ||
        (mm && axis != -1 && axis != 1))
      return PD_OK;
  }
  if (!mean || !var || !gamma || !beta) return PD_OK;
  double eps = attr_num(bn, "epsilon", 1e-5);
  /* the folded weight and bias */
  const char *wn = NULL, *bname = NULL;
  pd_tensor *nw = new_param(p, scope, wname, w, &wn);
  int64_t bd[1] = {c};
  pd_tensor bt = {.dtype = w->dtype, .ndims = 1};
  bt.dims[0] = bd[0];
  pd_tensor *nb = nw ? new_param(p, scope, wname, &bt, &bname) : NULL;
  if (!nb) return PD_ENOMEM;
  int64_t n = pd_tensor_numel(w), per = conv ? n / w->dims[0] : 1;
  for (int64_t ch = 0; ch < c; ch++) {
    double s = get(gamma, ch) / sqrt(get(var, ch) + eps);
    put(nb, ch, ((bias ? get(bias, ch) : 0.0) - get(mean, ch)) * s + get(beta, ch));
    if (tconv) { /* column j of the rows of ch's group */
      int64_t cog = c / groups, cig = w->dims[0] / groups, g = ch / cog, j = ch % cog;
      int64_t khw = per / cog;
      for (int64_t r = g * cig; r < (g + 1) * cig; r++)
        for (int64_t e = 0; e < khw; e++) {
          int64_t at = (r * cog + j) * khw + e;
          put(nw, at, get(w, at) * s);
        }
    } else if (conv) {
      for (int64_t e = 0; e < per; e++) put(nw, ch * per + e, get(w, ch * per + e) * s);
    } else {
      for (int64_t r = 0; r < w->dims[0]; r++) put(nw, r * c + ch, get(w, r * c + ch) * s);
    }
  }
  /* the product takes the folded weight; one add of the folded bias writes the norm's output */
  char *yk = pd_strdup(y);
  if (!yk || pd_op_set_input(prod, wslot, 1, &wn)) {
    pd_free(yk);
    return PD_ENOMEM;
  }
  pd_op_desc *a = add;
  if (!a) {
    a = pd_block_add_op(b0, "elementwise_add", i);
    if (!a || pd_op_copy_loc(a, bn) || pd_op_set_input(a, "X", 1, &prod_out) ||
        pd_op_set_attr_int(a, "axis", conv ? 1 : -1)) {
      pd_free(yk);
      return PD_ENOMEM;
    }
    i++;
  }
  const char *yc = yk;
  if (pd_op_set_input(a, "Y", 1, &bname) || pd_op_set_output(a, "Out", 1, &yc) ||
      (conv && pd_op_set_attr_int(a, "axis", 1))) { /* the folded bias is [C] */
    pd_free(yk);
    return PD_ENOMEM;
  }
  pd_free(yk);
  pd_block_remove_op(b0, i);
  *done = true;
  return PD_OK;
}

/* Remove the dropout, scale or assign at index i of block 0 (or make a dropout a scale); *done
 * says whether it changed. */
static pd_status drop_identity(pd_program *p, int i, bool *done) {
  *done = false;
  pd_block *b0 = p->blocks[0];
  pd_op_desc *op = b0->ops[i];
  const char *x = pd_op_input1(op, "X"), *out = pd_op_output1(op, "Out");
  if (!x || !out || strcmp(x, out) == 0 || !removable(p, out)) return PD_OK;
  double factor = 1;
  if (strcmp(op->type, "dropout") == 0) {
    if (!attr_true(op, "is_test")) return PD_OK;
    const char *mode = attr_str(op, "dropout_implementation", "downgrade_in_infer");
    const char *mask = pd_op_output1(op, "Mask");
    if ((mask && uses_of(p, mask).readers > 0) || pd_op_input1(op, "Seed")) return PD_OK;
    if (strcmp(mode, "downgrade_in_infer") == 0) factor = 1 - attr_num(op, "dropout_prob", 0.5);
    else if (strcmp(mode, "upscale_in_train") != 0) return PD_OK;
  } else if (strcmp(op->type, "scale") == 0) {
    if (pd_op_input1(op, "ScaleTensor") || attr_num(op, "scale", 1) != 1 ||
        attr_num(op, "bias", 0) != 0)
      return PD_OK;
  } /* assign: a copy (x.clone() in Paddle's code) */
  uses ux = uses_of(p, x);
  if (ux.writer > i || ux.outside) return PD_OK; /* x is written again later */
  if (factor != 1) { /* downgrade_in_infer: x (1 - p) */
    pd_op_desc *s = pd_block_add_op(b0, "scale", i);
    if (!s || pd_op_copy_loc(s, op) || pd_op_set_input(s, "X", 1, &x) ||
        pd_op_set_output(s, "Out", 1, &out) || pd_op_set_attr_float(s, "scale", (float)factor) ||
        pd_op_set_attr_float(s, "bias", 0.0f) || pd_op_set_attr_bool(s, "bias_after_scale", true))
      return PD_ENOMEM;
    pd_block_remove_op(b0, i + 1);
    *done = true;
    return PD_OK;
  }
  char *xs = pd_strdup(x), *os = pd_strdup(out);
  pd_status st = xs && os ? rename_reads(b0, os, xs) : PD_ENOMEM;
  if (!st) pd_block_remove_op(b0, i);
  pd_free(xs), pd_free(os);
  *done = !st;
  return st;
}

/* Fold the reshape2 / squeeze2 / unsqueeze2 at index i of block 0 whose input is a parameter
 * (Paddle 3 reshapes a convolution's bias to [1, C, 1, 1] at every run) into a parameter of the
 * output's shape: the output becomes persistable, holding the values, and the op goes. Only
 * where the output's dims are all known and hold as many elements. */
static pd_status fold_reshape(pd_program *p, pd_scope *scope, int i, bool *done) {
  *done = false;
  pd_block *b0 = p->blocks[0];
  pd_op_desc *op = b0->ops[i];
  const char *x = pd_op_input1(op, "X"), *out = pd_op_output1(op, "Out");
  const char *xshape = pd_op_output1(op, "XShape");
  pd_tensor *t = param(p, scope, x, -1);
  pd_var_desc *ov = out ? pd_block_find_var_local(b0, out) : NULL;
  if (!t || !ov || ov->persistable || pd_op_input1(op, "Shape") ||
      pd_op_input1(op, "ShapeTensor") || pd_op_input1(op, "AxesTensor") || !removable(p, out) ||
      (xshape && uses_of(p, xshape).readers > 0) || ov->ndims < 0)
    return PD_OK;
  int64_t n = 1;
  for (int d = 0; d < ov->ndims; d++) {
    if (ov->dims[d] < 0) return PD_OK;
    n *= ov->dims[d];
  }
  if (n != pd_tensor_numel(t)) return PD_OK;
  pd_variable *sv = pd_scope_var(scope, out);
  pd_tensor *nt = sv ? pd_var_tensor(sv) : NULL;
  if (!nt || pd_tensor_resize(nt, t->dtype, ov->ndims, ov->dims)) return PD_ENOMEM;
  memcpy(pd_tensor_data(nt), pd_tensor_data(t), pd_tensor_nbytes(t));
  ov->persistable = true;
  ov->stop_gradient = true;
  pd_block_remove_op(b0, i);
  *done = true;
  return PD_OK;
}

/* ---- conv2d + bias + residual + activation as one fused_conv2d ---- */

/* A var that only the next op of the chain reads: one writer, one reader, both in block 0, not
 * fetched; its reader's index in *reader. */
static bool chain_var(const pd_program *p, const char *v, int after, int *reader) {
  uses u = v ? uses_of(p, v) : (uses){0};
  if (!v || u.outside || u.fetched || u.writers != 1 || u.readers != 1 || u.reader <= after)
    return false;
  const pd_var_desc *d = pd_block_find_var_local(p->blocks[0], v);
  if (!d || d->persistable) return false;
  *reader = u.reader;
  return true;
}

/* Whether vars a and b have the same known rank and dims (-1 matching -1 only). */
static bool same_shape(const pd_block *b, const char *x, const char *y) {
  const pd_var_desc *a = pd_block_find_var_local(b, x), *c = pd_block_find_var_local(b, y);
  if (!a || !c || a->ndims != c->ndims || a->ndims != 4 || a->dtype != c->dtype) return false;
  for (int i = 0; i < a->ndims; i++)
    if (a->dims[i] != c->dims[i]) return false;
  return true;
}

/* The activation op `op` as fused_conv2d's fuse_activation, fuse_alpha and fuse_beta
 * (oplist.h); NULL for one it does not take. */
static const char *fused_act(const pd_op_desc *op, double *alpha, double *beta) {
  const char *t = op->type;
  *alpha = *beta = 0;
  if (!strcmp(t, "relu") || !strcmp(t, "sigmoid") || !strcmp(t, "tanh")) return t;
  if (!strcmp(t, "relu6")) {
    *beta = attr_num(op, "threshold", 6);
    return t;
  }
  if (!strcmp(t, "leaky_relu")) {
    *alpha = attr_num(op, "alpha", 0.02);
    return t;
  }
  if (!strcmp(t, "swish")) {
    *alpha = attr_num(op, "beta", 1);
    return t;
  }
  if (!strcmp(t, "hard_sigmoid")) {
    *alpha = attr_num(op, "slope", 0.2);
    *beta = attr_num(op, "offset", 0.5);
    return t;
  }
  if (!strcmp(t, "hard_swish")) { /* oneDNN's form needs threshold == scale */
    double th = attr_num(op, "threshold", 6), sc = attr_num(op, "scale", 6);
    if (th != sc || sc <= 0) return NULL;
    *alpha = 1 / sc;
    *beta = attr_num(op, "offset", 3) / sc;
    return t;
  }
  if (!strcmp(t, "gelu")) return attr_true(op, "approximate") ? "gelu_tanh" : "gelu";
  return NULL;
}

/* Bind the fused op's output slot to var name, a copy of it (name is a string of an op the
 * caller removes next). Non-zero: no memory. */
static int set_output(pd_op_desc *op, const char *slot, const char *name) {
  char *c = pd_strdup(name);
  if (!c) return PD_ENOMEM;
  const char *n = c;
  int bad = pd_op_set_output(op, slot, 1, &n);
  pd_free(c);
  return bad;
}

/* A var none of ops (from, to] of block 0 writes. */
static bool unchanged(const pd_block *b, const char *v, int from, int to) {
  for (int i = from + 1; i <= to; i++) {
    const pd_op_desc *op = b->ops[i];
    for (int s = 0; s < op->noutputs; s++)
      for (int k = 0; k < op->outputs[s].nargs; k++)
        if (strcmp(op->outputs[s].args[k], v) == 0) return false;
  }
  return true;
}

/* Fuse the conv2d or depthwise_conv2d at index i of block 0 with the per-channel bias add,
 * the residual add and the activation that read its output in turn (each optional, in that
 * order; at least one) into a fused_conv2d at the last one's place; or the conv2d_transpose
 * (or depthwise_conv2d_transpose) there with the bias add and the activation (the bias needed)
 * into a conv2d_transpose_bias. */
static pd_status fuse_conv(pd_program *p, pd_scope *scope, int i, bool *done) {
  *done = false;
  pd_block *b0 = p->blocks[0];
  pd_op_desc *conv = b0->ops[i];
  bool tconv = strstr(conv->type, "conv2d_transpose") != NULL;
  const char *df = attr_str(conv, "data_format", "NCHW");
  const char *x = pd_op_input1(conv, "Input"), *w = pd_op_input1(conv, "Filter");
  const char *cur = pd_op_output1(conv, "Output");
  pd_tensor *wt = param(p, scope, w, -1);
  if ((strcmp(df, "NCHW") && strcmp(df, "AnyLayout")) || !x || !cur || !wt || wt->ndims != 4 ||
      (tconv && pd_op_input1(conv, "Bias")))
    return PD_OK;
  /* the output channels: conv2d's filter is [M, C / groups, kh, kw], conv2d_transpose's [C,
   * M / groups, kh, kw] */
  int64_t groups = (int64_t)attr_num(conv, "groups", 1);
  if (tconv && (groups < 1 || wt->dims[0] % groups)) return PD_OK;
  int64_t oc = tconv ? wt->dims[1] * groups : wt->dims[0];
  const char *bias = NULL, *res = NULL, *act = NULL;
  double alpha = 0, beta = 0;
  int last = i, next, absorbed[3], nabs = 0;
  /* the bias: elementwise_add(X = output, Y = [out channels] parameter, axis 1) */
  if (chain_var(p, cur, i, &next) && !strcmp(b0->ops[next]->type, "elementwise_add")) {
    pd_op_desc *a = b0->ops[next];
    const char *y = pd_op_input1(a, "Y");
    pd_tensor *bt = param(p, scope, y, oc);
    int64_t axis = (int64_t)attr_num(a, "axis", -1);
    /* [C] at axis 1, or [1, C, 1, 1] / [C, 1, 1] aligned at the end */
    bool per_channel =
        bt && ((bt->ndims == 1 && axis == 1) ||
               (bt->ndims == 4 && bt->dims[0] == 1 && bt->dims[1] == oc && bt->dims[2] == 1 &&
                bt->dims[3] == 1 && (axis == -1 || axis == 0)) ||
               (bt->ndims == 3 && bt->dims[0] == oc && bt->dims[1] == 1 && bt->dims[2] == 1 &&
                (axis == -1 || axis == 1)));
    if (per_channel && bt->dtype == wt->dtype && pd_op_input1(a, "X") &&
        !strcmp(pd_op_input1(a, "X"), cur) && !*attr_str(a, "act", "") &&
        same_shape(b0, pd_op_output1(a, "Out"), cur)) {
      bias = y;
      cur = pd_op_output1(a, "Out");
      absorbed[nabs++] = last = next;
    }
  }
  if (tconv && !bias) return PD_OK;
  /* the residual: elementwise_add of the output and another var of its shape, made before
   * the convolution (where an op between writes it, as the other branch of ResNet50-vd's first
   * block, the convolution keeps its bias and the other branch's takes the add) */
  if (!tconv && cur && chain_var(p, cur, last, &next) &&
      !strcmp(b0->ops[next]->type, "elementwise_add")) {
    pd_op_desc *a = b0->ops[next];
    const char *ax = pd_op_input1(a, "X"), *ay = pd_op_input1(a, "Y");
    const char *other = ax && !strcmp(ax, cur) ? ay : ax;
    int64_t axis = (int64_t)attr_num(a, "axis", -1);
    if (ax && ay && strcmp(ax, ay) && other && (axis == -1 || axis == 0) &&
        unchanged(b0, other, i, next) &&
        !*attr_str(a, "act", "") && same_shape(b0, other, cur) && pd_op_output1(a, "Out") &&
        same_shape(b0, pd_op_output1(a, "Out"), cur)) {
      res = other;
      cur = pd_op_output1(a, "Out");
      absorbed[nabs++] = last = next;
    }
  }
  /* the activation */
  if (cur && chain_var(p, cur, last, &next)) {
    pd_op_desc *a = b0->ops[next];
    const char *in = pd_op_input1(a, "X"), *name = fused_act(a, &alpha, &beta);
    if (name && in && !strcmp(in, cur) && pd_op_output1(a, "Out")) {
      act = name;
      cur = pd_op_output1(a, "Out");
      absorbed[nabs++] = last = next;
    }
  }
  if (!nabs || !cur) return PD_OK;
  /* the fused op reads its operands at the last op's place: none may change before then */
  if (!unchanged(b0, x, i, last) || !unchanged(b0, w, i, last) ||
      (bias && !unchanged(b0, bias, i, last)) || (res && !unchanged(b0, res, i, last)) ||
      !strcmp(cur, x) || (res && !strcmp(cur, res)))
    return PD_OK;
  if (tconv) { /* conv2d_transpose_bias's Bias is [M]: a [1, M, 1, 1] one as a copy */
    pd_tensor *bt = param(p, scope, bias, oc);
    if (bt->ndims != 1) {
      pd_tensor flat = {.dtype = bt->dtype, .ndims = 1};
      flat.dims[0] = oc;
      pd_tensor *nb = new_param(p, scope, bias, &flat, &bias);
      if (!nb) return PD_ENOMEM;
      memcpy(pd_tensor_data(nb), pd_tensor_data(bt), (size_t)oc * pd_dtype_size(bt->dtype));
    }
  }
  pd_op_desc *f =
      pd_block_add_op(b0, tconv ? "conv2d_transpose_bias" : "fused_conv2d", last + 1);
  if (!f || pd_op_copy_loc(f, b0->ops[last])) return PD_ENOMEM;
  static const char *const keep[] = {"strides",   "paddings",    "padding_algorithm",
                                     "groups",    "dilations",   "data_format",
                                     "output_padding", "output_size"};
  for (size_t k = 0; k < sizeof keep / sizeof *keep - (tconv ? 0 : 2); k++) {
    const pd_attr *a = pd_op_attr(conv, keep[k]);
    if (a && pd_op_set_attr(f, a)) return PD_ENOMEM;
  }
  if (pd_op_set_input(f, "Input", 1, &x) || pd_op_set_input(f, "Filter", 1, &w) ||
      (bias && pd_op_set_input(f, "Bias", 1, &bias)) ||
      (res && pd_op_set_input(f, "ResidualData", 1, &res)) ||
      (!tconv && pd_op_set_attr_bool(f, "fuse_residual_connection", res != NULL)) ||
      pd_op_set_attr_string(f, "fuse_activation", act ? act : "") ||
      pd_op_set_attr_float(f, "fuse_alpha", (float)alpha) ||
      pd_op_set_attr_float(f, "fuse_beta", (float)beta))
    return PD_ENOMEM;
  if (set_output(f, "Output", cur)) return PD_ENOMEM;
  for (int k = nabs - 1; k >= 0; k--) pd_block_remove_op(b0, absorbed[k]);
  pd_block_remove_op(b0, i);
  *done = true;
  return PD_OK;
}

/* ---- an attention layer's heads as one memory_efficient_attention ---- */

/* The index of the one op of block 0 that writes v; -1 where none or several do, or an op of
 * another block does. */
static int sole_writer(const pd_program *p, const char *v) {
  uses u = v ? uses_of(p, v) : (uses){0};
  return v && u.writers == 1 && !u.outside ? u.writer : -1;
}

/* An INTS or LONGS attribute's element i. */
static int64_t attr_list_at(const pd_attr *a, int i) {
  return a->type == PD_ATTR_LONGS ? a->longs[i] : a->ints[i];
}

/* Whether op is a transpose2 (or transpose) of a 4-D var swapping dims 1 and 2: heads split off
 * ([B, S, H, D] -> [B, H, S, D]) or joined again. */
static bool heads_transpose(const pd_op_desc *op) {
  if (strcmp(op->type, "transpose2") && strcmp(op->type, "transpose")) return false;
  const pd_attr *a = pd_op_attr(op, "axis");
  if (!a || (a->type != PD_ATTR_INTS && a->type != PD_ATTR_LONGS) || a->n != 4) return false;
  return attr_list_at(a, 0) == 0 && attr_list_at(a, 1) == 2 && attr_list_at(a, 2) == 1 &&
         attr_list_at(a, 3) == 3;
}

/* The one float value of var v: a one-element parameter, or the output of a fill_constant of
 * one element (its value or str_value; no tensor inputs). */
static bool scalar_value(const pd_program *p, pd_scope *scope, const char *v, double *val) {
  pd_tensor *t = param(p, scope, v, 1);
  if (t) {
    *val = get(t, 0);
    return true;
  }
  int w = sole_writer(p, v);
  const pd_op_desc *f = w >= 0 ? p->blocks[0]->ops[w] : NULL;
  if (!f || strcmp(f->type, "fill_constant") || pd_op_input1(f, "ValueTensor") ||
      pd_op_input1(f, "ShapeTensor") || pd_op_input1(f, "ShapeTensorList"))
    return false;
  const pd_attr *shape = pd_op_attr(f, "shape");
  int64_t n = 1;
  for (int i = 0; shape && (shape->type == PD_ATTR_INTS || shape->type == PD_ATTR_LONGS) &&
                  i < shape->n; i++)
    n *= attr_list_at(shape, i);
  int64_t dt = (int64_t)attr_num(f, "dtype", PD_FP32);
  if (n != 1 || (dt != PD_FP32 && dt != PD_FP64)) return false;
  const char *sv = attr_str(f, "str_value", "");
  char *end = NULL;
  *val = *sv ? strtod(sv, &end) : attr_num(f, "value", 0);
  return !*sv || (end && !*end);
}

/* The op at index w scaling one var by a constant (scale with bias 0, or elementwise_mul by a
 * one-element constant): its factor in *f and the other var in *in. */
static bool const_scale(const pd_program *p, pd_scope *scope, int w, double *f, const char **in) {
  const pd_op_desc *op = w >= 0 ? p->blocks[0]->ops[w] : NULL;
  if (!op) return false;
  if (!strcmp(op->type, "scale") && !pd_op_input1(op, "ScaleTensor") &&
      attr_num(op, "bias", 0) == 0) {
    *f = attr_num(op, "scale", 1);
    *in = pd_op_input1(op, "X");
    return *in != NULL;
  }
  if (strcmp(op->type, "elementwise_mul") || attr_num(op, "axis", -1) != -1) return false;
  const char *x = pd_op_input1(op, "X"), *y = pd_op_input1(op, "Y");
  if (x && y && scalar_value(p, scope, y, f)) *in = x;
  else if (x && y && scalar_value(p, scope, x, f)) *in = y;
  else return false;
  return true;
}

/* Whether op is a matmul_v2, or Fluid's matmul, with Y transposed as asked (trans_y) and X not;
 * the product's scale (matmul's alpha, else 1) in *alpha. */
static bool plain_matmul(const pd_op_desc *op, bool trans_y, double *alpha) {
  bool v1 = !strcmp(op->type, "matmul");
  if (!v1 && strcmp(op->type, "matmul_v2")) return false;
  *alpha = v1 ? attr_num(op, "alpha", 1) : 1;
  return !attr_true(op, v1 ? "transpose_X" : "trans_x") &&
         attr_true(op, v1 ? "transpose_Y" : "trans_y") == trans_y;
}

/* The var of 4 dims (or dims not known) that the heads transpose writing v reads; its index in
 * *at. NULL where v is not written so. */
static const char *heads_source(const pd_program *p, const char *v, int *at) {
  int w = sole_writer(p, v);
  if (w < 0 || !heads_transpose(p->blocks[0]->ops[w])) return NULL;
  const char *x = pd_op_input1(p->blocks[0]->ops[w], "X");
  const pd_var_desc *d = x ? pd_block_find_var_local(p->blocks[0], x) : NULL;
  *at = w;
  return d && (d->ndims == 4 || d->ndims < 0) ? x : NULL;
}

/* Fuse the attention whose softmax is op i of block 0: heads transposes of the queries, keys and
 * values ([B, S, H, D] -> [B, H, S, D]), the scores Q K^T (matmul_v2 with trans_y, or Fluid's
 * matmul with transpose_Y and its alpha) scaled by constants before or after it (scale, or elementwise_mul
 * by a one-element constant), an elementwise_add of a mask (optional, axis -1, at most 4-D),
 * the softmax along the last dim, the product with V and the transpose joining the heads: one
 * memory_efficient_attention at the last one's place, reading the untransposed Q, K, V and the
 * mask. Every var between them read by the next op alone. */
static pd_status fuse_attention(pd_program *p, pd_scope *scope, int i, bool *done) {
  *done = false;
  pd_block *b0 = p->blocks[0];
  const pd_op_desc *sm = b0->ops[i];
  int64_t axis = (int64_t)attr_num(sm, "axis", -1);
  const char *x = pd_op_input1(sm, "X"), *probs = pd_op_output1(sm, "Out");
  const pd_var_desc *xd = x ? pd_block_find_var_local(b0, x) : NULL;
  int absorbed[12], nabs = 0, next, w, at[3], mask_at = -1;
  if (!xd || !probs || xd->ndims != 4 || (axis != -1 && axis != 3) ||
      !chain_var(p, x, -1, &next) || next != i)
    return PD_OK;
  double scale = 1, f;
  const char *mask = NULL, *in, *src[3]; /* Q, K, V before their transposes */
  absorbed[nabs++] = i;
  /* backwards: the mask add, a scale of the scores, the product */
  w = sole_writer(p, x);
  if (w >= 0 && !strcmp(b0->ops[w]->type, "elementwise_add")) {
    const pd_op_desc *a = b0->ops[w];
    const pd_var_desc *md = (mask = pd_op_input1(a, "Y")) ? pd_block_find_var_local(b0, mask)
                                                           : NULL;
    if (attr_num(a, "axis", -1) != -1 || !md || md->ndims > 4 || !(x = pd_op_input1(a, "X")) ||
        !chain_var(p, x, -1, &next) || next != w)
      return PD_OK;
    absorbed[nabs++] = mask_at = w;
    w = sole_writer(p, x);
  }
  if (const_scale(p, scope, w, &f, &in)) {
    if (!chain_var(p, in, -1, &next) || next != w) return PD_OK;
    scale *= f;
    absorbed[nabs++] = w;
    w = sole_writer(p, in);
  }
  if (w < 0 || !plain_matmul(b0->ops[w], true, &f)) return PD_OK;
  scale *= f;
  const pd_op_desc *qk = b0->ops[w];
  const char *q = pd_op_input1(qk, "X"), *k = pd_op_input1(qk, "Y");
  int qw = sole_writer(p, q);
  absorbed[nabs++] = w;
  if (!chain_var(p, q, -1, &next) || next != w || !chain_var(p, k, -1, &next) || next != w)
    return PD_OK;
  if (const_scale(p, scope, qw, &f, &in)) { /* the queries scaled */
    if (!chain_var(p, in, -1, &next) || next != qw) return PD_OK;
    scale *= f;
    absorbed[nabs++] = qw;
    q = in;
  }
  /* forwards: the product with V, the transpose joining the heads */
  const pd_op_desc *pv;
  if (!chain_var(p, probs, i, &next) || !plain_matmul(pv = b0->ops[next], false, &f) || f != 1 ||
      !pd_op_input1(pv, "X") || strcmp(pd_op_input1(pv, "X"), probs))
    return PD_OK;
  absorbed[nabs++] = next;
  const char *v = pd_op_input1(pv, "Y"), *o = pd_op_output1(pv, "Out"), *out;
  if (!v || !chain_var(p, v, -1, &w) || w != next || !o || !chain_var(p, o, next, &next) ||
      !heads_transpose(b0->ops[next]) || !(out = pd_op_output1(b0->ops[next], "Out")))
    return PD_OK;
  int last = next;
  absorbed[nabs++] = last;
  const char *through[3] = {q, k, v};
  for (int t = 0; t < 3; t++) {
    if (!(src[t] = heads_source(p, through[t], &at[t]))) return PD_OK;
    absorbed[nabs++] = at[t];
  }
  /* the products broadcast no batch or head dim (where the dims are known): the fused op does
   * not; and it reads its operands at the last op's place: none may change before then */
  for (int t = 0; t < 3; t++) {
    const pd_var_desc *d = pd_block_find_var_local(b0, src[t]);
    const pd_var_desc *d0 = pd_block_find_var_local(b0, src[0]);
    if (d->ndims == 4 && d0->ndims == 4 &&
        (d->dims[0] != d0->dims[0] || d->dims[2] != d0->dims[2]))
      return PD_OK;
    if (!unchanged(b0, src[t], at[t], last) || !strcmp(src[t], out)) return PD_OK;
  }
  if (mask && (!unchanged(b0, mask, mask_at, last) || !strcmp(mask, out))) return PD_OK;
  if (!(scale == scale) || isinf(scale) || scale < 0) return PD_OK; /* < 0 means 1 / sqrt(D) */
  pd_op_desc *fa = pd_block_add_op(b0, "memory_efficient_attention", last + 1);
  if (!fa || pd_op_copy_loc(fa, b0->ops[last]) ||
      pd_op_set_input(fa, "query", 1, &src[0]) || pd_op_set_input(fa, "key", 1, &src[1]) ||
      pd_op_set_input(fa, "value", 1, &src[2]) ||
      (mask && pd_op_set_input(fa, "bias", 1, &mask)) ||
      pd_op_set_attr_bool(fa, "causal", false) || pd_op_set_attr_float(fa, "dropout_p", 0) ||
      pd_op_set_attr_float(fa, "scale", (float)scale) || pd_op_set_attr_bool(fa, "is_test", true))
    return PD_ENOMEM;
  if (set_output(fa, "output", out)) return PD_ENOMEM;
  /* the absorbed ops, from the last (each index below last + 1, where the new op went) */
  for (int a = 1; a < nabs; a++)
    for (int c = a; c > 0 && absorbed[c] > absorbed[c - 1]; c--) {
      int t = absorbed[c];
      absorbed[c] = absorbed[c - 1];
      absorbed[c - 1] = t;
    }
  for (int a = 0; a < nabs; a++) pd_block_remove_op(b0, absorbed[a]);
  *done = true;
  return PD_OK;
}

pd_status pd_program_infer_opt(pd_program *p, pd_scope *scope, pd_k_place place,
                               pd_infer_opt_stats *stats, pd_error *err) {
  pd_infer_opt_stats s = {0};
  pd_block *b0 = p->blocks[0];
  for (int i = 0; i < b0->nops; i++) {
    bool done = false;
    const char *t = b0->ops[i]->type;
    int before = b0->nops;
    pd_status st = PD_OK;
    if (strcmp(t, "batch_norm") == 0) {
      st = fold_bn(p, scope, i, &done);
      s.bn_folded += done;
    } else if (strcmp(t, "dropout") == 0 || strcmp(t, "scale") == 0 ||
               strcmp(t, "assign") == 0) {
      st = drop_identity(p, i, &done);
      s.removed += done;
    } else if (strcmp(t, "reshape2") == 0 || strcmp(t, "squeeze2") == 0 ||
               strcmp(t, "unsqueeze2") == 0) {
      st = fold_reshape(p, scope, i, &done);
      s.folded += done;
    }
    if (st) return oom(err);
    if (done) i -= before - b0->nops; /* an op gone: the next one is at i now */
  }
  pd_status st = pd_program_fuse_fc_ex(p, true, &s.fc_fused, err);
  /* then each convolution with the ops after it (its folded batch norm's bias add among them) */
  for (int i = 0; !st && i < b0->nops; i++) {
    const char *t = b0->ops[i]->type;
    bool done = false;
    if (strcmp(t, "conv2d") == 0 || strcmp(t, "depthwise_conv2d") == 0 ||
        strcmp(t, "conv2d_transpose") == 0 || strcmp(t, "depthwise_conv2d_transpose") == 0) {
      if ((st = fuse_conv(p, scope, i, &done))) return oom(err);
      s.conv_fused += done;
    }
  }
  /* then the attention layers, whose fused op computes on the host alone */
  for (int i = 0; !st && place == PD_K_HOST && i < b0->nops; i++) {
    bool done = false;
    if (strcmp(b0->ops[i]->type, "softmax") == 0) {
      int before = b0->nops;
      if ((st = fuse_attention(p, scope, i, &done))) return oom(err);
      s.attention_fused += done;
      if (done) i -= before - b0->nops;
    }
  }
  if (stats) *stats = s;
  return st;
}

void pd_infer_opt_describe(const pd_infer_opt_stats *s, char *buf, size_t n) {
  snprintf(buf, n, "%d batch norm%s folded, %d dropout or scale op%s removed, %d reshape%s of "
           "parameters folded, %d fc fused, %d convolution%s fused, %d attention layer%s "
           "fused", s->bn_folded, s->bn_folded == 1 ? "" : "s", s->removed,
           s->removed == 1 ? "" : "s", s->folded, s->folded == 1 ? "" : "s", s->fc_fused,
           s->conv_fused, s->conv_fused == 1 ? "" : "s", s->attention_fused,
           s->attention_fused == 1 ? "" : "s");
}
