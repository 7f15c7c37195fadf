/* infer_opt.c -- the load-time passes of an inference model (vm/passes/infer_opt.h): batch
 * norm folded into the convolution or product before it, test-mode dropout and identity scales
 * removed, then mul + bias add fused into fc. */
#include "config.h"
#include "vm/passes/infer_opt.h"

#include <math.h>
#include <stdio.h>
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
  bool conv = strcmp(prod->type, "conv2d") == 0 || strcmp(prod->type, "depthwise_conv2d") == 0;
  bool mm = strcmp(prod->type, "mul") == 0 || strcmp(prod->type, "matmul_v2") == 0;
  const char *wslot = conv ? "Filter" : "Y", *wname = pd_op_input1(prod, wslot);
  pd_tensor *w = (conv || mm) ? param(p, scope, wname, -1) : NULL;
  if (!w) return PD_OK;
  const pd_var_desc *ov = pd_block_find_var_local(b0, prod_out);
  int64_t c;
  if (conv) {
    const char *df = attr_str(prod, "data_format", "NCHW");
    if ((strcmp(df, "NCHW") != 0 && strcmp(df, "AnyLayout") != 0) || w->ndims != 4) return PD_OK;
    c = w->dims[0];
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
  if (add) {
    if (attr_num(add, "axis", -1) != (conv ? 1 : -1) && !(mm && attr_num(add, "axis", -1) == 1))
      return PD_OK;
    bias = param(p, scope, pd_op_input1(add, "Y"), c);
    if (!bias) return PD_OK;
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
  int64_t n = pd_tensor_numel(w), per = conv ? n / c : 1;
  for (int64_t ch = 0; ch < c; ch++) {
    double s = get(gamma, ch) / sqrt(get(var, ch) + eps);
    put(nb, ch, ((bias ? get(bias, ch) : 0.0) - get(mean, ch)) * s + get(beta, ch));
    if (conv)
      for (int64_t e = 0; e < per; e++) put(nw, ch * per + e, get(w, ch * per + e) * s);
    else
      for (int64_t r = 0; r < w->dims[0]; r++) put(nw, r * c + ch, get(w, r * c + ch) * s);
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
  if (pd_op_set_input(a, "Y", 1, &bname) || pd_op_set_output(a, "Out", 1, &yc)) {
    pd_free(yk);
    return PD_ENOMEM;
  }
  pd_free(yk);
  pd_block_remove_op(b0, i);
  *done = true;
  return PD_OK;
}

/* Remove the dropout or scale at index i of block 0 (or make a dropout a scale); *done says
 * whether it changed. */
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
  } else {
    if (pd_op_input1(op, "ScaleTensor") || attr_num(op, "scale", 1) != 1 ||
        attr_num(op, "bias", 0) != 0)
      return PD_OK;
  }
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

pd_status pd_program_infer_opt(pd_program *p, pd_scope *scope, pd_infer_opt_stats *stats,
                               pd_error *err) {
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
    } else if (strcmp(t, "dropout") == 0 || strcmp(t, "scale") == 0) {
      st = drop_identity(p, i, &done);
      s.removed += done;
    }
    if (st) return oom(err);
    if (done) i -= before - b0->nops; /* an op gone: the next one is at i now */
  }
  pd_status st = pd_program_fuse_fc(p, &s.fc_fused, err);
  if (stats) *stats = s;
  return st;
}
