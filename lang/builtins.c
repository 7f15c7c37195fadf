/* builtins.c -- the functions a script can call without importing anything: the argument
 * helpers every builtin shares (lang/builtins_int.h), op wrappers (whose keyword arguments are the
 * op's Fluid attributes, typed by the op registry), tensor constructors (data, param, var,
 * minibatch, sequence, zeros/ones/fill), compile-time helpers (len, range, str, prod, fail, and
 * sqrt/exp/log/abs of a number) and the one sorted table of builtins. Reader, optimizer and
 * initializer specs and the actions are in lang/builtins_action.c; layers built from these live
 * in stdlib/ (written in pdlang). */
#include "config.h"
#include "lang/builtins_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Argument helpers ---- */

/* Positional argument i (i >= 0), or the keyword argument `name`; NULL when absent. */
value *pd_cmp_arg(call_args *a, int i, const char *name, pd_loc *loc) {
  if (i >= 0 && i < a->npos) {
    if (loc) *loc = a->pos_loc[i];
    return a->pos[i];
  }
  for (int k = 0; name && k < a->nkw; k++)
    if (strcmp(a->kw[k], name) == 0) {
      if (loc) *loc = a->kw_loc[k];
      return a->kwv[k];
    }
  if (loc) *loc = a->loc;
  return NULL;
}

static void list_names(pd_buf *b, const char *const *names) {
  for (int j = 0; names[j]; j++) pd_buf_printf(b, "%s%s", j ? ", " : "", names[j]);
}

/* At most `npos` positional arguments; keywords among `names` (NULL-terminated). The first
 * `named_pos` names are also positions, so a keyword may not repeat one given positionally. */
bool pd_cmp_check_args_kw(C *c, call_args *a, int npos, const char *const *names, int named_pos) {
  if (a->npos > npos) {
    pd_cmp_error(c, a->loc, "%s takes at most %d positional argument%s, got %d", a->fname, npos,
                 npos == 1 ? "" : "s", a->npos);
    return false;
  }
  for (int k = 0; k < a->nkw; k++) {
    int i = 0;
    while (names[i] && strcmp(names[i], a->kw[k]) != 0) i++;
    if (!names[i]) {
      const char *near = pd_cmp_suggest_kw(a->kw[k], names, i);
      if (near) {
        pd_cmp_error(c, a->kw_loc[k], "%s has no argument '%s'; did you mean '%s'?", a->fname,
                     a->kw[k], near);
        return false;
      }
      pd_buf b;
      pd_buf_init(&b);
      list_names(&b, names);
      pd_cmp_error(c, a->kw_loc[k], "%s has no argument '%s'%s%s", a->fname, a->kw[k],
                   names[0] ? " (it takes " : "", names[0] ? pd_cmp_fmt(c, "%s)", b.data) : "");
      pd_buf_free(&b);
      return false;
    }
    if (i < named_pos && i < a->npos) {
      pd_cmp_error(c, a->kw_loc[k], "argument '%s' of %s given twice", a->kw[k], a->fname);
      return false;
    }
  }
  return true;
}

bool pd_cmp_check_args(C *c, call_args *a, int npos, const char *const *names) {
  return pd_cmp_check_args_kw(c, a, npos, names, npos);
}

value *pd_cmp_need(C *c, call_args *a, int i, const char *name) {
  value *v = pd_cmp_arg(a, i, name, NULL);
  if (!v) pd_cmp_error(c, a->loc, "%s needs argument '%s'", a->fname, name);
  return v ? v : VERR;
}

bool pd_cmp_want_tensor_arg(C *c, value *v, pd_loc loc, const char *fname, const char *what) {
  if (v->k == V_TENSOR) return true;
  if (v->k != V_ERROR)
    pd_cmp_error(c, loc, "%s: '%s' must be a tensor, got %s", fname, what, pd_cmp_vkind_phrase(v));
  return false;
}

bool pd_cmp_in_global_block(C *c) { return c->block == c->unit->main->blocks[0]; }

bool pd_cmp_value_to_dims(C *c, value *v, pd_loc loc, const char *what, int64_t *dims, int *n,
                                 bool allow_unknown) {
  if (v->k != V_LIST) {
    if (v->k != V_ERROR)
      pd_cmp_error(c, loc, "%s must be a list of integers, got %s", what, pd_cmp_vkind_phrase(v));
    return false;
  }
  if (v->list.n > PD_MAX_RANK) {
    pd_cmp_error(c, loc, "%s has %d dimensions; at most %d are supported", what, v->list.n,
                 PD_MAX_RANK);
    return false;
  }
  for (int i = 0; i < v->list.n; i++) {
    value *d = v->list.items[i];
    if (d->k != V_INT || d->i == 0 || d->i < (allow_unknown ? -1 : 1)) {
      pd_cmp_error(c, loc, "%s must be a list of %s integers (dimension %d is %s)", what,
                   allow_unknown ? "positive (or -1)" : "positive", i,
                   d->k == V_INT ? pd_cmp_fmt(c, "%lld", (long long)d->i) : pd_cmp_vkind_phrase(d));
      return false;
    }
    dims[i] = d->i;
  }
  *n = v->list.n;
  return true;
}

static value *list_of(C *c, int n, pd_loc loc) {
  if (!pd_cmp_spend(c, n, loc)) return VERR;
  value *l = pd_cmp_vnew(c, V_LIST);
  if (l == VERR) return l;
  l->list.n = n;
  l->list.items = pd_cmp_calloc(c, sizeof(value *) * (size_t)(n ? n : 1));
  return l->list.items ? l : VERR;
}

static bool set_attr_named(C *c, pd_op_desc *op, const char *name, value *v, pd_loc loc) {
  const pd_attrdef *ad = pd_opdef_attr(pd_opdef_lookup(op->type), name);
  if (!ad) {
    pd_cmp_error(c, loc, "internal: %s has no attribute '%s'", op->type, name);
    return false;
  }
  return pd_cmp_set_attr(c, op, ad, v, loc);
}

/* The keyword arguments of a call as attributes of op (those named in `skip`, a NULL-terminated
 * list or NULL, are the caller's). */
static bool kw_attrs(C *c, call_args *a, const pd_opdef *def, pd_op_desc *op,
                     const char *const *skip) {
  for (int k = 0; k < a->nkw; k++) {
    bool skipped = false;
    for (int j = 0; skip && skip[j]; j++) skipped = skipped || strcmp(skip[j], a->kw[k]) == 0;
    if (skipped) continue;
    const pd_attrdef *ad = pd_opdef_attr(def, a->kw[k]);
    if (!ad || ad->type == PD_ATTR_BLOCK) {
      const char *names[64];
      int nn = 0;
      for (int j = 0; skip && skip[j] && nn < 64; j++) names[nn++] = skip[j];
      for (int j = 0; j < def->nattrs && nn < 64; j++)
        if (def->attrs[j].type != PD_ATTR_BLOCK) names[nn++] = def->attrs[j].name;
      const char *near = pd_cmp_suggest_kw(a->kw[k], names, nn);
      if (near) {
        pd_cmp_error(c, a->kw_loc[k], "%s has no argument '%s'; did you mean '%s'?", a->fname,
                     a->kw[k], near);
        return false;
      }
      pd_buf b;
      pd_buf_init(&b);
      for (int j = 0; skip && skip[j]; j++) pd_buf_printf(&b, "%s%s", b.len ? ", " : "", skip[j]);
      for (int j = 0; j < def->nattrs; j++)
        if (def->attrs[j].type != PD_ATTR_BLOCK)
          pd_buf_printf(&b, "%s%s", b.len ? ", " : "", def->attrs[j].name);
      pd_cmp_error(c, a->kw_loc[k], "%s has no argument '%s'%s", a->fname, a->kw[k],
                   b.len ? pd_cmp_fmt(c, " (its %s are %s)", skip ? "arguments" : "attributes",
                                      b.data)
                         : "");
      pd_buf_free(&b);
      return false;
    }
    if (!pd_cmp_set_attr(c, op, ad, a->kwv[k], a->kw_loc[k])) return false;
  }
  return true;
}

/* sqrt, exp, log and abs of a compile-time number: a number (a float; abs keeps an integer), as
 * Python's math functions, so that a layer can compute a constant such as 1 / sqrt(d). NULL
 * for the other ops (they need a tensor). */
static value *fold_math(C *c, const builtin *self, call_args *a) {
  double x = pd_cmp_num(a->pos[0]);
  if (strcmp(self->op, "abs") == 0)
    return a->pos[0]->k == V_INT ? pd_cmp_vint(c, a->pos[0]->i < 0 ? -a->pos[0]->i : a->pos[0]->i)
                                 : pd_cmp_vfloat(c, fabs(x));
  if (strcmp(self->op, "exp") == 0) return pd_cmp_vfloat(c, exp(x));
  bool is_sqrt = strcmp(self->op, "sqrt") == 0;
  if (!is_sqrt && strcmp(self->op, "log") != 0) return NULL;
  if (is_sqrt ? x < 0 : x <= 0) {
    pd_cmp_error(c, a->pos_loc[0], "%s of %g: the argument must be %s", self->name, x,
                 is_sqrt ? "0 or more" : "more than 0");
    return VERR;
  }
  return pd_cmp_vfloat(c, is_sqrt ? sqrt(x) : log(x));
}

/* ---- Generic op wrappers: inputs positionally, then `pattr` positionally, attrs by keyword ---- */

static value *b_op(C *c, const builtin *self, call_args *a) {
  const pd_opdef *def = pd_opdef_lookup(self->op);
  if (!def) {
    pd_cmp_error(c, a->loc, "internal: op '%s' is not registered", self->op);
    return VERR;
  }
  int nin = 0, npattr = 0;
  while (nin < 3 && self->in[nin]) nin++;
  while (npattr < 3 && self->pattr[npattr]) npattr++;
  if (a->npos < nin || a->npos > nin + npattr) {
    pd_cmp_error(c, a->loc, "%s takes %d tensor argument%s%s, got %d argument%s", a->fname, nin,
                 nin == 1 ? "" : "s",
                 npattr ? pd_cmp_fmt(c, " and optionally %s", self->pattr[0]) : "", a->npos,
                 a->npos == 1 ? "" : "s");
    return VERR;
  }
  if (nin == 1 && a->npos == 1 && a->nkw == 0 && pd_cmp_is_number(a->pos[0])) {
    value *f = fold_math(c, self, a);
    if (f) return f;
  }
  pd_op_desc *op = pd_cmp_op_new(c, self->op, a->loc);
  if (!op) return VERR;
  for (int i = 0; i < nin; i++)
    if (!pd_cmp_want_tensor_arg(c, a->pos[i], a->pos_loc[i], a->fname, self->in[i]) ||
        !pd_cmp_op_in(c, op, self->in[i], a->pos[i], a->pos_loc[i]))
      return VERR;
  for (int i = nin; i < a->npos; i++)
    if (!set_attr_named(c, op, self->pattr[i - nin], a->pos[i], a->pos_loc[i])) return VERR;
  if (!kw_attrs(c, a, def, op, NULL)) return VERR;
  /* reduce_sum(x) with no dims reduces everything, as Fluid's layers do (the op's own default,
   * dim = [0], would reduce the first dim only). */
  if (strncmp(self->op, "reduce_", 7) == 0 && !pd_op_attr(op, "dim") &&
      pd_op_set_attr_bool(op, "reduce_all", true)) {
    c->oom = true;
    return VERR;
  }
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, self->out, self->name));
}

static value *b_cast(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"x", "dtype", NULL};
  if (!pd_cmp_check_args(c, a, 2, names)) return VERR;
  value *x = pd_cmp_need(c, a, 0, "x"), *dt = pd_cmp_need(c, a, 1, "dtype");
  if (!pd_cmp_want_tensor_arg(c, x, a->loc, a->fname, "x")) return VERR;
  if (dt->k != V_DTYPE) {
    if (dt->k != V_ERROR)
      pd_cmp_error(c, a->loc, "cast: 'dtype' must be a dtype such as float32 or int64");
    return VERR;
  }
  pd_op_desc *op = pd_cmp_op_new(c, "cast", a->loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, a->loc)) return VERR;
  if (pd_op_set_attr_int(op, "in_dtype", (int)x->var->dtype) ||
      pd_op_set_attr_int(op, "out_dtype", (int)dt->dtype)) {
    c->oom = true;
    return VERR;
  }
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Out", self->name));
}

/* concat(xs, axis = 0) and stack(xs, axis = 0): a list of tensors into op X, one output. */
static value *b_concat(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"xs", "axis", NULL};
  if (!pd_cmp_check_args(c, a, 2, names)) return VERR;
  pd_loc loc;
  value *xs = pd_cmp_need(c, a, 0, "xs"), *axis = pd_cmp_arg(a, 1, "axis", &loc);
  if (xs->k != V_LIST || xs->list.n == 0) {
    if (xs->k != V_ERROR) pd_cmp_error(c, a->loc, "%s needs a non-empty list of tensors", self->name);
    return VERR;
  }
  pd_op_desc *op = pd_cmp_op_new(c, self->op, a->loc);
  if (!op || !pd_cmp_op_in_list(c, op, "X", xs->list.items, xs->list.n, a->loc)) return VERR;
  if (axis && !set_attr_named(c, op, "axis", axis, loc)) return VERR;
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, self->out, self->name));
}

/* An op with several outputs, returned as a list (slots[i] gets one new var each). */
static value *multi_out(C *c, pd_op_desc *op, const char *const *slots, int n, const char *hint) {
  value *l = list_of(c, n, op->loc);
  if (l == VERR) return VERR;
  for (int i = 0; i < n; i++) {
    pd_var_desc *v = pd_cmp_op_out(c, op, slots[i], hint);
    if (!v) return VERR;
    l->list.items[i] = pd_cmp_vtensor(c, v);
  }
  return pd_cmp_op_finish(c, op, l->list.items[0]->var)->k == V_ERROR ? VERR : l;
}

static value *b_split(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"x", "num_or_sections", "axis", NULL};
  if (!pd_cmp_check_args(c, a, 3, names)) return VERR;
  pd_loc loc, aloc;
  value *x = pd_cmp_need(c, a, 0, "x"), *ns = pd_cmp_arg(a, 1, "num_or_sections", &loc);
  value *axis = pd_cmp_arg(a, 2, "axis", &aloc);
  if (!pd_cmp_want_tensor_arg(c, x, a->loc, a->fname, "x")) return VERR;
  if (!ns || (ns->k != V_INT && ns->k != V_LIST) ||
      (ns->k == V_INT && (ns->i < 1 || ns->i > 4096)) ||
      (ns->k == V_LIST && (ns->list.n < 1 || ns->list.n > 4096))) {
    pd_cmp_error(c, ns ? loc : a->loc,
                 "split needs 'num_or_sections': a count (1 to 4096) or a list of sizes");
    return VERR;
  }
  int n = ns->k == V_INT ? (int)ns->i : ns->list.n;
  pd_op_desc *op = pd_cmp_op_new(c, "split", a->loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, a->loc)) return VERR;
  if (ns->k == V_INT) {
    if (pd_op_set_attr_int(op, "num", (int32_t)n)) {
      c->oom = true;
      return VERR;
    }
  } else if (!set_attr_named(c, op, "sections", ns, loc)) {
    return VERR;
  }
  if (axis && !set_attr_named(c, op, "axis", axis, aloc)) return VERR;
  value *l = list_of(c, n, a->loc);
  const char **outs = pd_cmp_calloc(c, sizeof *outs * (size_t)n);
  if (l == VERR || !outs) return VERR;
  for (int i = 0; i < n; i++) {
    pd_var_desc *v = pd_cmp_var_new(c, c->block, pd_cmp_fmt(c, "%s.tmp", self->name), false);
    if (!v) return VERR;
    outs[i] = v->name;
    l->list.items[i] = pd_cmp_vtensor(c, v);
  }
  if (pd_op_set_output(op, "Out", n, outs)) {
    c->oom = true;
    return VERR;
  }
  return pd_cmp_op_finish(c, op, l->list.items[0]->var)->k == V_ERROR ? VERR : l;
}

static value *top_k(C *c, value *x, value *k, pd_loc loc, pd_loc kloc) {
  pd_op_desc *op = pd_cmp_op_new(c, "top_k", loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, loc)) return VERR;
  if (k && !set_attr_named(c, op, "k", k, kloc)) return VERR;
  static const char *const slots[] = {"Out", "Indices"};
  return multi_out(c, op, slots, 2, "top_k");
}

static value *b_top_k(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"x", "k", NULL};
  if (!pd_cmp_check_args(c, a, 2, names)) return VERR;
  pd_loc kloc;
  value *x = pd_cmp_need(c, a, 0, "x"), *k = pd_cmp_arg(a, 1, "k", &kloc);
  (void)self;
  if (!pd_cmp_want_tensor_arg(c, x, a->loc, a->fname, "x")) return VERR;
  return top_k(c, x, k, a->loc, kloc);
}

/* accuracy(input, label, k = 1): top_k, then accuracy, as Fluid's layer builds it. */
static value *b_accuracy(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"input", "label", "k", NULL};
  if (!pd_cmp_check_args(c, a, 3, names)) return VERR;
  pd_loc kloc;
  value *x = pd_cmp_need(c, a, 0, "input"), *label = pd_cmp_need(c, a, 1, "label"), *k = pd_cmp_arg(a, 2, "k", &kloc);
  if (!pd_cmp_want_tensor_arg(c, x, a->loc, a->fname, "input") ||
      !pd_cmp_want_tensor_arg(c, label, a->loc, a->fname, "label"))
    return VERR;
  value *top = top_k(c, x, k, a->loc, kloc);
  if (top == VERR) return VERR;
  pd_op_desc *op = pd_cmp_op_new(c, "accuracy", a->loc);
  if (!op || !pd_cmp_op_in(c, op, "Out", top->list.items[0], a->loc) ||
      !pd_cmp_op_in(c, op, "Indices", top->list.items[1], a->loc) ||
      !pd_cmp_op_in(c, op, "Label", label, a->loc))
    return VERR;
  static const char *const slots[] = {"Accuracy", "Correct", "Total"};
  value *r = multi_out(c, op, slots, 3, self->name);
  return r == VERR ? VERR : r->list.items[0];
}

/* batch_norm_op(x, scale, bias, mean, variance, momentum = 0.9, ...): Fluid's batch_norm op,
 * its attributes by keyword. MeanOut and VarianceOut are mean and variance themselves, updated
 * in place by a training run, as Fluid's layer binds them. Returns Y. */
static value *b_batch_norm(C *c, const builtin *self, call_args *a) {
  static const char *const slots[] = {"X", "Scale", "Bias", "Mean", "Variance"};
  static const char *const names[] = {"x", "scale", "bias", "mean", "variance", NULL};
  const pd_opdef *def = pd_opdef_lookup("batch_norm");
  if (a->npos > 5) {
    pd_cmp_error(c, a->loc, "%s takes at most 5 positional arguments, got %d", a->fname, a->npos);
    return VERR;
  }
  value *v[5];
  pd_loc loc[5];
  for (int i = 0; i < 5; i++) {
    v[i] = pd_cmp_arg(a, i, names[i], &loc[i]);
    if (!v[i]) {
      pd_cmp_error(c, a->loc, "%s needs argument '%s'", a->fname, names[i]);
      return VERR;
    }
    if (!pd_cmp_want_tensor_arg(c, v[i], loc[i], a->fname, names[i])) return VERR;
  }
  pd_op_desc *op = pd_cmp_op_new(c, "batch_norm", a->loc);
  if (!op) return VERR;
  for (int i = 0; i < 5; i++)
    if (!pd_cmp_op_in(c, op, slots[i], v[i], loc[i])) return VERR;
  if (!kw_attrs(c, a, def, op, names)) return VERR;
  const char *mo = v[3]->var->name, *vo = v[4]->var->name;
  if (pd_op_set_output(op, "MeanOut", 1, &mo) || pd_op_set_output(op, "VarianceOut", 1, &vo)) {
    c->oom = true;
    return VERR;
  }
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Y", self->name));
}

/* layer_norm_op(x, scale = none, bias = none, begin_norm_axis = 1, epsilon = 1e-5): Fluid's
 * layer_norm op. Returns Y. */
static value *b_layer_norm(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"x", "scale", "bias", "begin_norm_axis", "epsilon", NULL};
  static const char *const skip[] = {"x", "scale", "bias", NULL};
  if (!pd_cmp_check_args_kw(c, a, 3, names, 3)) return VERR;
  pd_loc xloc, sloc, bloc;
  value *x = pd_cmp_need(c, a, 0, "x"), *sc = pd_cmp_arg(a, 1, "scale", &sloc), *b = pd_cmp_arg(a, 2, "bias", &bloc);
  pd_cmp_arg(a, 0, "x", &xloc);
  if (!pd_cmp_want_tensor_arg(c, x, xloc, a->fname, "x")) return VERR;
  pd_op_desc *op = pd_cmp_op_new(c, "layer_norm", a->loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, xloc)) return VERR;
  if (sc && sc->k != V_NONE &&
      (!pd_cmp_want_tensor_arg(c, sc, sloc, a->fname, "scale") || !pd_cmp_op_in(c, op, "Scale", sc, sloc)))
    return VERR;
  if (b && b->k != V_NONE &&
      (!pd_cmp_want_tensor_arg(c, b, bloc, a->fname, "bias") || !pd_cmp_op_in(c, op, "Bias", b, bloc)))
    return VERR;
  if (!kw_attrs(c, a, pd_opdef_lookup("layer_norm"), op, skip)) return VERR;
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Y", self->name));
}

/* ---- Tensors from the script ---- */

static value *b_data(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"name", "shape", "dtype", "lod_level", NULL};
  if (!pd_cmp_check_args(c, a, 4, names)) return VERR;
  pd_loc nloc, sloc, dloc, lloc;
  value *name = pd_cmp_arg(a, 0, "name", &nloc), *shape = pd_cmp_arg(a, 1, "shape", &sloc);
  value *dt = pd_cmp_arg(a, 2, "dtype", &dloc), *lod = pd_cmp_arg(a, 3, "lod_level", &lloc);
  (void)self;
  if (!name || name->k != V_STR || !*name->s) {
    pd_cmp_error(c, nloc, "data needs a name (a non-empty string) first");
    return VERR;
  }
  if (!shape) {
    pd_cmp_error(c, a->loc, "data needs a shape, such as [-1, 784]");
    return VERR;
  }
  int64_t dims[PD_MAX_RANK];
  int nd;
  if (!pd_cmp_value_to_dims(c, shape, sloc, "the shape of data", dims, &nd, true)) return VERR;
  if (dt && dt->k != V_DTYPE) {
    pd_cmp_error(c, dloc, "data: 'dtype' must be a dtype such as float32 or int64");
    return VERR;
  }
  if (lod && (lod->k != V_INT || lod->i < 0 || lod->i > 2)) {
    pd_cmp_error(c, lloc, "data: 'lod_level' must be 0, 1 or 2");
    return VERR;
  }
  if (!pd_cmp_in_global_block(c)) {
    pd_cmp_error(c, a->loc,
                 "data() declares an input of the program, so it must be at the top level");
    return VERR;
  }
  pd_block *b0 = c->unit->main->blocks[0];
  if (pd_block_find_var_local(b0, name->s)) {
    pd_cmp_error(c, nloc, "there is already a variable named '%s'", name->s);
    return VERR;
  }
  pd_var_desc *v = pd_block_var(b0, name->s);
  if (!v || pd_var_set_shape(v, nd, dims)) {
    c->oom = true;
    return VERR;
  }
  v->dtype = dt ? dt->dtype : PD_FP32;
  v->lod_level = lod ? (int)lod->i : 0;
  v->stop_gradient = true;
  if (!pd_cmp_check_size(c, v, sloc, pd_cmp_fmt(c, "data '%s'", name->s))) return VERR;
  return pd_cmp_vtensor(c, v);
}

/* declare(shape = none, dtype = float32, lod_level = 0): a var of the current block that no op has
 * written yet, for an op in a block below it to write (op("assign", X = t, Out = v) in the body
 * of op("conditional_block", ...) { ... }); what `pdlang decompile` writes for such a var. */
static value *b_declare(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"shape", "dtype", "lod_level", NULL};
  (void)self;
  if (!pd_cmp_check_args(c, a, 3, names)) return VERR;
  pd_loc sloc, lloc;
  value *shape = pd_cmp_arg(a, 0, "shape", &sloc), *lod = pd_cmp_arg(a, 2, "lod_level", &lloc);
  int64_t dims[PD_MAX_RANK];
  int nd = -1;  /* no shape: unknown until an op writes it */
  pd_dtype dt;
  if ((shape && !pd_cmp_value_to_dims(c, shape, sloc, "the shape of declare", dims, &nd, true)) ||
      !pd_cmp_dtype_arg(c, a, 1, &dt))
    return VERR;
  if (lod && (lod->k != V_INT || lod->i < 0 || lod->i > 2)) {
    pd_cmp_error(c, lloc, "declare: 'lod_level' must be 0, 1 or 2");
    return VERR;
  }
  pd_var_desc *v = pd_cmp_var_new(c, c->block, "declare", false);
  if (!v || (nd >= 0 && pd_var_set_shape(v, nd, dims))) {
    c->oom = true;
    return VERR;
  }
  v->dtype = dt;
  v->lod_level = lod ? (int)lod->i : 0;
  v->stop_gradient = !pd_dtype_is_float(dt);
  if (!pd_cmp_check_size(c, v, sloc, "declare")) return VERR;
  if (!c->call) c->last_decl = v;
  return pd_cmp_vtensor(c, v);
}

/* kaiming(uniform = true, fan_in = none): Fluid's MSRA initializer with the gain of relu,
 * sqrt(2): uniform in [-sqrt(6 / fan_in), sqrt(6 / fan_in)], or normal with std
 * sqrt(2 / fan_in); fan_in (the parameter's, unless given) as xavier's. Sets the random op and
 * its second attribute's value (the first is -limit or mean 0). */
static bool kaiming_init(C *c, const value *init, double fan_in, pd_loc loc, const char **type,
                         const char **k1, const char **k2, double *x2) {
  bool uniform = true;
  for (int i = 0; init->k == V_RECORD && i < init->rec.n; i++) {
    const value *f = init->rec.vals[i];
    pd_loc floc = init->rec.locs[i];
    if (strcmp(init->rec.keys[i], "uniform") == 0) {  /* true or false (its type) or none */
      uniform = f->k == V_BOOL ? f->b : uniform;
    } else if (f->k != V_NONE) {  /* fan_in: a number (its type) */
      if (!(pd_cmp_num(f) > 0)) {
        pd_cmp_error(c, floc, "kaiming: 'fan_in' must be a positive number or none");
        return false;
      }
      fan_in = pd_cmp_num(f);
    }
  }
  if (!(fan_in > 0)) {
    pd_cmp_error(c, loc, "kaiming: the parameter has no inputs (fan_in %g)", fan_in);
    return false;
  }
  if (uniform) {
    *x2 = sqrt(6.0 / fan_in);
  } else {
    *type = "gaussian_random", *k1 = "mean", *k2 = "std";
    *x2 = sqrt(2.0 / fan_in);
  }
  return true;
}

/* Append the initialiser of parameter v to the startup program: none for state of a dtype that
 * fill_constant does not make (a uint8 dropout state of a saved RNN), which load() fills. */
static bool init_param(C *c, pd_var_desc *v, value *init, pd_loc loc) {
  pd_block *sb = c->unit->startup->blocks[0];
  pd_var_desc *sv = pd_block_var(sb, v->name);
  if (!sv || pd_var_set_shape(sv, v->ndims, v->dims)) {
    c->oom = true;
    return false;
  }
  sv->dtype = v->dtype;
  sv->persistable = true;
  if (!init && v->dtype != PD_FP32 && v->dtype != PD_FP64 && v->dtype != PD_INT32 &&
      v->dtype != PD_INT64 && v->dtype != PD_BOOL)
    return true;
  const char *type = "fill_constant";
  const char *k1 = "value", *k2 = NULL;
  double x1 = 0, x2 = 0;
  bool xavier = init ? (init->k == V_RECORD && strcmp(init->rec.name, "xavier") == 0) ||
                           (init->k == V_BUILTIN && strcmp(init->bi->name, "xavier") == 0)
                     : v->ndims >= 2;
  bool kaiming = init && ((init->k == V_RECORD && strcmp(init->rec.name, "kaiming") == 0) ||
                          (init->k == V_BUILTIN && strcmp(init->bi->name, "kaiming") == 0));
  if (init && pd_cmp_is_number(init)) {
    x1 = pd_cmp_num(init);
  } else if (xavier || kaiming) {
    int64_t fan_in = v->ndims ? v->dims[0] : 1, fan_out = v->ndims >= 2 ? v->dims[1] : 1;
    if (v->ndims == 4) { /* a conv filter [out, in, kh, kw] */
      int64_t rf = v->dims[2] * v->dims[3];
      fan_in = v->dims[1] * rf;
      fan_out = v->dims[0] * rf;
    }
    type = "uniform_random", k1 = "min", k2 = "max";
    x2 = sqrt(6.0 / (double)(fan_in + fan_out));
    if (kaiming && !kaiming_init(c, init, (double)fan_in, loc, &type, &k1, &k2, &x2)) return false;
    x1 = kaiming && strcmp(type, "gaussian_random") == 0 ? 0 : -x2;
  } else if (init && init->k == V_RECORD && strcmp(init->rec.name, "uniform") == 0) {
    type = "uniform_random", k1 = "min", k2 = "max";
    x1 = pd_cmp_num(init->rec.vals[0]);
    x2 = pd_cmp_num(init->rec.vals[1]);
  } else if (init && init->k == V_RECORD && strcmp(init->rec.name, "normal") == 0) {
    type = "gaussian_random", k1 = "mean", k2 = "std";
    x1 = pd_cmp_num(init->rec.vals[0]);
    x2 = pd_cmp_num(init->rec.vals[1]);
  } else if (init) {
    pd_buf b;
    pd_buf_init(&b);
    pd_cmp_describe(c, init, &b);
    pd_cmp_error(c, loc, "param: 'init' must be a number, uniform(low, high), normal(mean, std), "
                 "xavier() or kaiming(); got %s", b.data ? b.data : "?");
    pd_buf_free(&b);
    return false;
  }
  pd_op_desc *op = pd_block_add_op(sb, type, -1);
  const char *out = v->name;
  if (!op || !pd_cmp_op_set_loc(c, op, loc) || pd_op_set_output(op, "Out", 1, &out) ||
      pd_op_set_attr_longs(op, "shape", v->ndims, v->dims) ||
      pd_op_set_attr_int(op, "dtype", (int)v->dtype) || pd_op_set_attr_float(op, k1, (float)x1) ||
      (k2 && pd_op_set_attr_float(op, k2, (float)x2))) {
    c->oom = true;
    return false;
  }
  pd_error e = {0};
  pd_status st = pd_opdef_prepare(op, sb, &e);
  if (st == PD_ENOMEM) c->oom = true;
  else if (st) pd_cmp_error(c, loc, "%s", e.msg ? e.msg : pd_status_str(st));
  if (st) {
    pd_error_clear(&e);
    return false;
  }
  return true;
}

/* param(shape, init = ..., name = ..., dtype = float32, kind = "w", trainable = true), or
 * param("name", shape, ...): a parameter of the global block, trainable unless trainable = false
 * (then it is persistable state no gradient reaches: batch_norm's running statistics). Inside a function call it is named after the call
 * ("fc_0.w_0"). A named parameter that exists already is returned when its shape matches: that
 * is how blocks share parameters. */
static value *b_param(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"shape", "init", "name", "dtype", "kind", "trainable", NULL};
  int first = a->npos > 0 && a->pos[0]->k == V_STR ? 1 : 0;
  call_args sub = *a;
  sub.npos -= first;
  sub.pos += first;
  sub.pos_loc += first;
  if (sub.pos_start) sub.pos_start += first;
  (void)self;
  if (!pd_cmp_check_args(c, &sub, 2, names)) return VERR;
  pd_loc sloc, iloc, nloc, dloc, kloc, tloc;
  value *shape = pd_cmp_arg(&sub, 0, "shape", &sloc), *init = pd_cmp_arg(&sub, 1, "init", &iloc);
  value *name = first ? a->pos[0] : pd_cmp_arg(&sub, -1, "name", &nloc);
  value *dt = pd_cmp_arg(&sub, -1, "dtype", &dloc), *kind = pd_cmp_arg(&sub, -1, "kind", &kloc);
  value *trainable = pd_cmp_arg(&sub, -1, "trainable", &tloc);
  if (first) nloc = a->pos_loc[0];
  if (!shape) {
    pd_cmp_error(c, a->loc, "param needs a shape, such as [784, 256]");
    return VERR;
  }
  int64_t dims[PD_MAX_RANK];
  int nd;
  if (!pd_cmp_value_to_dims(c, shape, sloc, "the shape of a parameter", dims, &nd, false))
    return VERR;
  bool state = trainable && trainable->k == V_BOOL && !trainable->b;
  if (nd == 0 && !state) {
    pd_cmp_error(c, sloc, "a parameter needs at least one dimension (a state of rank 0 needs "
                 "trainable = false)");
    return VERR;
  }
  if (name && name->k != V_STR && name->k != V_NONE) {
    pd_cmp_error(c, nloc, "param: 'name' must be a string");
    return VERR;
  }
  if (dt && dt->k != V_DTYPE) {
    pd_cmp_error(c, dloc, "param: 'dtype' must be a dtype, such as float32");
    return VERR;
  }
  if (dt && dt->dtype != PD_FP32 && dt->dtype != PD_FP64 && !state) {
    pd_cmp_error(c, dloc, "param: 'dtype' must be float32 or float64 for a trained parameter "
                 "(%s is for state that no gradient reaches: trainable = false)",
                 pd_dtype_name(dt->dtype));
    return VERR;
  }
  if (kind && kind->k != V_STR) {
    pd_cmp_error(c, kloc, "param: 'kind' must be a string such as \"w\" or \"b\"");
    return VERR;
  }
  if (trainable && trainable->k != V_BOOL) {
    pd_cmp_error(c, tloc, "param: 'trainable' must be true or false");
    return VERR;
  }
  bool frozen = trainable && !trainable->b;
  pd_block *b0 = c->unit->main->blocks[0];
  const char *pname;
  if (name && name->k == V_STR) {
    pname = name->s;
    pd_var_desc *old = pd_block_find_var_local(b0, pname);
    if (old) {
      bool same = old->persistable && old->ndims == nd;
      for (int i = 0; same && i < nd; i++) same = old->dims[i] == dims[i];
      if (!same) {
        pd_var_desc probe = {.ndims = nd, .dims = dims};
        pd_cmp_error(c, nloc, "'%s' exists with shape %s; it cannot be reused with shape %s", pname,
                     pd_cmp_dims_str(c, old), pd_cmp_dims_str(c, &probe));
        return VERR;
      }
      if (old->stop_gradient != frozen) {
        pd_cmp_error(c, nloc, "'%s' exists as a %s parameter; it cannot be reused as a %s one",
                     pname, frozen ? "trainable" : "non-trainable",
                     frozen ? "non-trainable" : "trainable");
        return VERR;
      }
      return pd_cmp_vtensor(c, old);
    }
  } else {
    const char *pre = pd_cmp_name_prefix(c);
    pname = pre ? pd_cmp_unique_name(c, pd_cmp_fmt(c, "%s.%s", pre, kind ? kind->s : "w"))
                : pd_cmp_unique_name(c, "param");
  }
  pd_var_desc *v = pd_cmp_var_new(c, b0, pname, true);
  if (!v || pd_var_set_shape(v, nd, dims)) {
    c->oom = true;
    return VERR;
  }
  v->dtype = dt ? dt->dtype : PD_FP32;
  v->persistable = true;
  v->stop_gradient = frozen;
  if (!pd_cmp_check_size(c, v, sloc, pd_cmp_fmt(c, "parameter '%s'", pname))) return VERR;
  if (!init_param(c, v, init, iloc)) return VERR;
  if (!c->call && !(name && name->k == V_STR)) c->last_param = v;
  return pd_cmp_vtensor(c, v);
}

static value *b_get_variable(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"name", NULL};
  (void)self;
  if (!pd_cmp_check_args(c, a, 1, names)) return VERR;
  value *name = pd_cmp_need(c, a, 0, "name");
  if (name->k != V_STR) {
    if (name->k != V_ERROR)
      pd_cmp_error(c, a->loc, "get_variable needs a parameter name (a string)");
    return VERR;
  }
  pd_var_desc *v = pd_block_find_var_local(c->unit->main->blocks[0], name->s);
  if (!v || !v->persistable) {
    pd_cmp_error(c, a->pos_loc[0],
                 "there is no parameter named '%s' (create it with param(\"%s\", shape))", name->s,
                 name->s);
    return VERR;
  }
  return pd_cmp_vtensor(c, v);
}

/* Flatten nested lists of numbers, checking that they are rectangular. */
static bool flatten(C *c, value *v, pd_loc loc, double **vals, size_t *n, size_t *cap,
                    int64_t *dims, int depth, int *ndims) {
  if (pd_cmp_is_number(v)) {
    if (*ndims >= 0 && *ndims != depth) {
      pd_cmp_error(c, loc, "the nested lists are not rectangular");
      return false;
    }
    *ndims = depth;
    if (PD_GROW(*vals, *cap, *n + 1)) {
      c->oom = true;
      return false;
    }
    (*vals)[(*n)++] = pd_cmp_num(v);
    return true;
  }
  if (v->k != V_LIST || depth >= PD_MAX_RANK) {
    if (v->k != V_ERROR)
      pd_cmp_error(c, loc, "expected numbers or lists of numbers, got %s", pd_cmp_vkind_phrase(v));
    return false;
  }
  if (v->list.n == 0) {
    pd_cmp_error(c, loc, "a tensor literal cannot contain an empty list");
    return false;
  }
  if (*ndims >= 0 && (depth >= *ndims || dims[depth] != v->list.n)) {
    pd_cmp_error(c, loc, "the nested lists are not rectangular");
    return false;
  }
  dims[depth] = v->list.n;
  for (int i = 0; i < v->list.n; i++)
    if (!flatten(c, v->list.items[i], loc, vals, n, cap, dims, depth + 1, ndims)) return false;
  return true;
}

/* An assign_value op holding vals with the given shape. */
static value *const_tensor(C *c, const double *vals, size_t n, const int64_t *dims, int nd,
                           pd_dtype dt, pd_loc loc) {
  if (n > INT32_MAX) {
    pd_cmp_error(c, loc, "tensor literal too large");
    return VERR;
  }
  pd_op_desc *op = pd_cmp_op_new(c, "assign_value", loc);
  int32_t shape32[PD_MAX_RANK];
  for (int i = 0; i < nd; i++) shape32[i] = (int32_t)dims[i];
  int r = !op || pd_op_set_attr_ints(op, "shape", nd, shape32) ||
          pd_op_set_attr_int(op, "dtype", (int)dt);
  if (!r && (dt == PD_FP32 || dt == PD_FP64)) {
    float *fs = pd_malloc(sizeof *fs * (n ? n : 1));
    for (size_t i = 0; fs && i < n; i++) fs[i] = (float)vals[i];
    r = !fs || pd_op_set_attr_floats(op, "fp32_values", (int)n, fs);
    pd_free(fs);
  } else if (!r && dt == PD_INT64) {
    int64_t *ls = pd_malloc(sizeof *ls * (n ? n : 1));
    for (size_t i = 0; ls && i < n; i++) ls[i] = (int64_t)vals[i];
    r = !ls || pd_op_set_attr_longs(op, "int64_values", (int)n, ls);
    pd_free(ls);
  } else if (!r) {
    int32_t *is = pd_malloc(sizeof *is * (n ? n : 1));
    for (size_t i = 0; is && i < n; i++) is[i] = (int32_t)vals[i];
    r = !is || pd_op_set_attr_ints(op, dt == PD_BOOL ? "bool_values" : "int32_values", (int)n, is);
    pd_free(is);
  }
  if (r) {
    c->oom = true;
    return VERR;
  }
  pd_var_desc *out = pd_cmp_op_out(c, op, "Out", "assign_value");
  if (out) out->stop_gradient = true;
  return pd_cmp_op_finish(c, op, out);
}

bool pd_cmp_dtype_arg(C *c, call_args *a, int i, pd_dtype *dt) {
  pd_loc loc;
  value *v = pd_cmp_arg(a, i, "dtype", &loc);
  *dt = PD_FP32;
  if (!v) return true;
  if (v->k != V_DTYPE) {
    pd_cmp_error(c, loc, "%s: 'dtype' must be a dtype such as float32 or int64", a->fname);
    return false;
  }
  *dt = v->dtype;
  return true;
}

/* var(1), var([1, 2]): a constant tensor. minibatch([10, 20, 30]): rows of a batch ([3, 1]). */
static value *literal(C *c, call_args *a, bool rows) {
  static const char *const names[] = {"value", "dtype", NULL};
  if (!pd_cmp_check_args(c, a, 2, names)) return VERR;
  pd_loc loc;
  value *v = pd_cmp_arg(a, 0, "value", &loc);
  pd_dtype dt;
  if (!v) {
    pd_cmp_error(c, a->loc, "%s needs a value", a->fname);
    return VERR;
  }
  if (!pd_cmp_dtype_arg(c, a, 1, &dt)) return VERR;
  if (!rows && pd_cmp_is_number(v)) return pd_cmp_tensor_const(c, pd_cmp_num(v), dt, loc);
  double *vals = NULL;
  size_t n = 0, cap = 0;
  int64_t dims[PD_MAX_RANK];
  int nd = -1;
  if (!flatten(c, v, loc, &vals, &n, &cap, dims, 0, &nd)) {
    pd_free(vals);
    return VERR;
  }
  if (rows && nd == 0) dims[nd++] = 1;
  if (rows && nd == 1) dims[nd++] = 1;
  value *r = const_tensor(c, vals, n, dims, nd, dt, loc);
  pd_free(vals);
  return r;
}

static value *b_var(C *c, const builtin *self, call_args *a) {
  (void)self;
  return literal(c, a, false);
}

static value *b_minibatch(C *c, const builtin *self, call_args *a) {
  (void)self;
  return literal(c, a, true);
}

/* lod_reset(x, target_lod = lod[0..n)), appending the offsets as a new innermost level when
 * `append` (the sequence literals' LoD). */
static value *set_lod(C *c, value *x, const int32_t *lod, int n, bool append, const char *name,
                      pd_loc loc) {
  pd_op_desc *op = pd_cmp_op_new(c, "lod_reset", loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, loc)) return VERR;
  if (pd_op_set_attr_ints(op, "target_lod", n, lod) ||
      (append && pd_op_set_attr_bool(op, "append", true))) {
    c->oom = true;
    return VERR;
  }
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Out", name));
}

/* sequence([[10, 20, 30], [5, 6]]): a batch of sequences, one row per element, with LoD. With
 * lod_level = 2, a batch of sequences of sequences: sequence([[[1, 2], [3]], [[4, 5, 6]]]) has
 * the LoD [[0, 2, 3], [0, 2, 3, 6]]. */
static value *b_sequence(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"value", "dtype", "lod_level", NULL};
  if (!pd_cmp_check_args(c, a, 3, names)) return VERR;
  pd_loc loc, lloc;
  value *v = pd_cmp_arg(a, 0, "value", &loc), *lv = pd_cmp_arg(a, 2, "lod_level", &lloc);
  pd_dtype dt;
  if (!pd_cmp_dtype_arg(c, a, 1, &dt)) return VERR;
  if (lv && (lv->k != V_INT || lv->i < 1 || lv->i > 2)) {
    pd_cmp_error(c, lloc, "sequence: 'lod_level' must be 1 or 2");
    return VERR;
  }
  int levels = lv ? (int)lv->i : 1;
  if (!v || v->k != V_LIST || v->list.n == 0) {
    pd_cmp_error(c, loc,
                 levels == 1 ? "sequence needs a non-empty list of sequences, such as [[1, 2, 3], "
                               "[4, 5]]"
                             : "sequence(..., lod_level = 2) needs a non-empty list of non-empty "
                               "lists of sequences, such as [[[1, 2], [3]], [[4, 5, 6]]]");
    return VERR;
  }
  /* The sequences, and with two levels the offsets of the groups they form (top). */
  value **seqs = v->list.items;
  int nseqs = v->list.n;
  int32_t *top = NULL;
  if (levels == 2) {
    if (!(top = pd_cmp_calloc(c, sizeof *top * (size_t)(v->list.n + 1)))) return VERR;
    for (int g = 0; g < v->list.n; g++) {
      value *grp = v->list.items[g];
      if (grp->k != V_LIST || grp->list.n == 0) {
        pd_cmp_error(c, loc, "sequence %d must be a non-empty list of sequences (lod_level = 2)",
                     g);
        return VERR;
      }
      if (top[g] > INT32_MAX - grp->list.n) {
        pd_cmp_error(c, loc, "sequence literal too long");
        return VERR;
      }
      top[g + 1] = top[g] + grp->list.n;
    }
    nseqs = top[v->list.n];
    if (!(seqs = pd_cmp_calloc(c, sizeof *seqs * (size_t)nseqs))) return VERR;
    for (int g = 0, k = 0; g < v->list.n; g++)
      for (int i = 0; i < v->list.items[g]->list.n; i++)
        seqs[k++] = v->list.items[g]->list.items[i];
  }
  double *vals = NULL;
  size_t n = 0, cap = 0;
  int64_t width = -1;
  int32_t *lod = pd_cmp_calloc(c, sizeof *lod * (size_t)(nseqs + 1));
  if (!lod) return VERR;
  for (int s = 0; s < nseqs; s++) {
    value *sq = seqs[s];
    if (sq->k != V_LIST || sq->list.n == 0) {
      pd_cmp_error(c, loc, "sequence %d must be a non-empty list", s);
      pd_free(vals);
      return VERR;
    }
    for (int t = 0; t < sq->list.n; t++) {
      int64_t dims[PD_MAX_RANK];
      int nd = -1;
      size_t before = n;
      if (!flatten(c, sq->list.items[t], loc, &vals, &n, &cap, dims, 0, &nd)) {
        pd_free(vals);
        return VERR;
      }
      int64_t w = (int64_t)(n - before);
      if (width >= 0 && w != width) {
        pd_cmp_error(c, loc,
                     "every element of every sequence must have the same size (%lld and %lld)",
                     (long long)width, (long long)w);
        pd_free(vals);
        return VERR;
      }
      width = w;
    }
    if (lod[s] > INT32_MAX - sq->list.n) {
      pd_cmp_error(c, loc, "sequence literal too long");
      pd_free(vals);
      return VERR;
    }
    lod[s + 1] = lod[s] + sq->list.n;
  }
  int64_t dims[2] = {lod[nseqs], width};
  value *r = const_tensor(c, vals, n, dims, 2, dt, loc);
  pd_free(vals);
  if (r->k != V_TENSOR) return VERR;
  if (levels == 1) {
    r = set_lod(c, r, lod, nseqs + 1, false, self->name, a->loc);
  } else if (lod[nseqs] != nseqs) {
    /* The sequences' offsets, then the groups' on top (lod_reset groups X's sequences). */
    r = set_lod(c, r, lod, nseqs + 1, false, self->name, a->loc);
    if (r->k == V_TENSOR) r = set_lod(c, r, top, v->list.n + 1, false, self->name, a->loc);
  } else {
    /* One element per sequence: as many rows as sequences, so the groups' offsets first (they
     * end at the rows), then the sequences' appended under them. */
    r = set_lod(c, r, top, v->list.n + 1, false, self->name, a->loc);
    if (r->k == V_TENSOR) r = set_lod(c, r, lod, nseqs + 1, true, self->name, a->loc);
  }
  if (r->k == V_TENSOR) r->var->lod_level = levels;
  return r;
}

/* zeros(shape, dtype), ones(shape, dtype), fill(shape, value, dtype). */
static value *b_fill(C *c, const builtin *self, call_args *a) {
  bool general = strcmp(self->name, "fill") == 0;
  static const char *const gnames[] = {"shape", "value", "dtype", NULL};
  static const char *const snames[] = {"shape", "dtype", NULL};
  if (!pd_cmp_check_args(c, a, general ? 3 : 2, general ? gnames : snames)) return VERR;
  pd_loc sloc, vloc;
  value *shape = pd_cmp_arg(a, 0, "shape", &sloc);
  value *val = general ? pd_cmp_arg(a, 1, "value", &vloc) : NULL;
  pd_dtype dt;
  if (!shape || (general && !val)) {
    pd_cmp_error(c, a->loc, "%s needs a shape%s", a->fname, general ? " and a value" : "");
    return VERR;
  }
  if (!pd_cmp_dtype_arg(c, a, general ? 2 : 1, &dt)) return VERR;
  if (val && !pd_cmp_is_number(val)) {
    pd_cmp_error(c, vloc, "fill: 'value' must be a number");
    return VERR;
  }
  int64_t dims[PD_MAX_RANK];
  int nd;
  if (!pd_cmp_value_to_dims(c, shape, sloc, "the shape", dims, &nd, false)) return VERR;
  double v = general ? pd_cmp_num(val) : strcmp(self->name, "ones") == 0 ? 1 : 0;
  pd_op_desc *op = pd_cmp_op_new(c, "fill_constant", a->loc);
  if (!op || pd_op_set_attr_longs(op, "shape", nd, dims) ||
      pd_op_set_attr_float(op, "value", (float)v) || pd_op_set_attr_int(op, "dtype", (int)dt) ||
      pd_cmp_set_exact_value(op, v, dt)) {
    c->oom = true;
    return VERR;
  }
  pd_var_desc *out = pd_cmp_op_out(c, op, "Out", self->name);
  if (out) out->stop_gradient = true;
  return pd_cmp_op_finish(c, op, out);
}

/* ---- Compile-time helpers ---- */

static value *b_len(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"x", NULL};
  (void)self;
  if (!pd_cmp_check_args(c, a, 1, names)) return VERR;
  value *x = pd_cmp_need(c, a, 0, "x");
  if (x->k == V_LIST) return pd_cmp_vint(c, x->list.n);
  if (x->k == V_STR) return pd_cmp_vint(c, (int64_t)strlen(x->s));
  if (x->k != V_ERROR)
    pd_cmp_error(c, a->loc, "len needs a list or a string, got %s", pd_cmp_vkind_phrase(x));
  return VERR;
}

/* str(x): a compile-time number, boolean or string as text ("model_" + str(e)); a float in the
 * fewest digits that read back as the same double. */
static value *b_str(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"x", NULL};
  (void)self;
  if (!pd_cmp_check_args(c, a, 1, names)) return VERR;
  value *x = pd_cmp_need(c, a, 0, "x");
  switch (x->k) {
  case V_STR: return x;
  case V_BOOL: return pd_cmp_vstr(c, x->b ? "true" : "false");
  case V_INT: return pd_cmp_vstr(c, pd_cmp_fmt(c, "%lld", (long long)x->i));
  case V_FLOAT: {
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(buf, sizeof buf, "%.*g", prec, x->f);
      if (strtod(buf, NULL) == x->f || x->f != x->f) break;
    }
    return pd_cmp_vstr(c, buf);
  }
  case V_ERROR: return VERR;
  default:
    pd_cmp_error(c, a->loc, "str needs a number, a boolean or a string known when compiling, "
                 "got %s", pd_cmp_vkind_phrase(x));
    return VERR;
  }
}

static value *b_range(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"start", "stop", NULL};
  (void)self;
  if (!pd_cmp_check_args(c, a, 2, names)) return VERR;
  value *x = pd_cmp_need(c, a, 0, "start"), *y = pd_cmp_arg(a, 1, "stop", NULL);
  if (x->k != V_INT || (y && y->k != V_INT)) {
    if (x->k != V_ERROR) pd_cmp_error(c, a->loc, "range needs integers");
    return VERR;
  }
  int64_t lo = y ? x->i : 0, hi = y ? y->i : x->i;
  if (hi > lo && (uint64_t)hi - (uint64_t)lo > 1000000) {
    pd_cmp_error(c, a->loc, "range is too long for a compile-time list (at most 1000000 items)");
    return VERR;
  }
  value *l = list_of(c, hi > lo ? (int)(hi - lo) : 0, a->loc);
  for (int64_t i = lo; l != VERR && i < hi; i++) l->list.items[i - lo] = pd_cmp_vint(c, i);
  return l;
}

static value *b_prod(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"xs", NULL};
  (void)self;
  if (!pd_cmp_check_args(c, a, 1, names)) return VERR;
  value *x = pd_cmp_need(c, a, 0, "xs");
  if (x->k != V_LIST) {
    if (x->k != V_ERROR) pd_cmp_error(c, a->loc, "prod needs a list of numbers");
    return VERR;
  }
  bool ints = true;
  double p = 1;
  int64_t ip = 1;
  for (int i = 0; i < x->list.n; i++) {
    value *v = x->list.items[i];
    if (!pd_cmp_is_number(v)) {
      pd_cmp_error(c, a->loc, "prod needs a list of numbers (item %d is %s)", i,
                   pd_cmp_vkind_phrase(v));
      return VERR;
    }
    if (v->k == V_INT && v->i < 0) {
      pd_cmp_error(c, a->loc, "prod: item %d is %lld (an unknown dimension?)", i, (long long)v->i);
      return VERR;
    }
    ints &= v->k != V_FLOAT;
    p *= pd_cmp_num(v);
    if (v->k != V_FLOAT && __builtin_mul_overflow(ip, (int64_t)pd_cmp_num(v), &ip)) {
      pd_cmp_error(c, a->loc, "prod overflows a 64-bit integer");
      return VERR;
    }
  }
  return ints ? pd_cmp_vint(c, ip) : pd_cmp_vfloat(c, p);
}

/* fail(parts...): stops the compilation with an error at the call (in a layer: at the line that
 * called it, with a note), its message the arguments joined: strings as they are, other values
 * as messages show them. How a stdlib layer reports an argument it cannot take. */
static value *b_fail(C *c, const builtin *self, call_args *a) {
  (void)self;
  if (a->nkw) {
    pd_cmp_error(c, a->kw_loc[0], "fail has no argument '%s' (it joins its positional ones)",
                 a->kw[0]);
    return VERR;
  }
  pd_buf b;
  pd_buf_init(&b);
  for (int i = 0; i < a->npos; i++) {
    if (a->pos[i]->k == V_STR) pd_buf_puts(&b, a->pos[i]->s);
    else pd_cmp_describe(c, a->pos[i], &b);
  }
  if (b.oom) c->oom = true;
  else pd_cmp_error_at_caller(c, a->loc, "%s", b.len ? b.data : "fail() called");
  pd_buf_free(&b);
  return VERR;
}

/* ---- The table, sorted by name (binary search; tests check the order) ---- */

#define OP1(n, op, out) {n, b_op, op, {"X", NULL, NULL}, out, {NULL, NULL}}
#define OP1A(n, op, out, a1) {n, b_op, op, {"X", NULL, NULL}, out, {a1, NULL}}
#define OP1AA(n, op, out, a1, a2) {n, b_op, op, {"X", NULL, NULL}, out, {a1, a2}}
#define OP2(n, op, x, y, out) {n, b_op, op, {x, y, NULL}, out, {NULL, NULL}}
#define OP1A2(n, op, out, a1, a2) {n, b_op, op, {"X", NULL, NULL}, out, {a1, a2, NULL}}
#define FN(n, f) {n, f, NULL, {NULL, NULL, NULL}, NULL, {NULL, NULL}}

static const builtin builtins[] = {
    OP1("abs", "abs", "Out"),
    FN("accuracy", b_accuracy),
    FN("adagrad", pd_cmp_b_record),
    FN("adam", pd_cmp_b_record),
    FN("adamw", pd_cmp_b_record),
    OP1A("argmax", "arg_max", "Out", "axis"),
    FN("assert_close", pd_cmp_b_action),
    FN("batch_norm_op", b_batch_norm),
    FN("cast", b_cast),
    OP1A2("clip", "clip", "Out", "min", "max"),
    {"concat", b_concat, "concat", {NULL, NULL, NULL}, "Out", {NULL, NULL}},
    OP2("conv2d", "conv2d", "Input", "Filter", "Output"),
    OP2("cross_entropy", "cross_entropy", "X", "Label", "Y"),
    FN("csv", pd_cmp_b_record),
    OP1A("cumsum", "cumsum", "Out", "axis"),
    FN("data", b_data),
    FN("declare", b_declare),
    OP1A("dropout", "dropout", "Out", "dropout_prob"),
    OP2("elementwise_add", "elementwise_add", "X", "Y", "Out"),
    OP2("elementwise_div", "elementwise_div", "X", "Y", "Out"),
    OP2("elementwise_mul", "elementwise_mul", "X", "Y", "Out"),
    OP2("elementwise_sub", "elementwise_sub", "X", "Y", "Out"),
    OP1A("elu", "elu", "Out", "alpha"),
    FN("eval", pd_cmp_b_action),
    OP1("exp", "exp", "Out"),
    OP1A("expand", "expand_v2", "Out", "shape"),
    FN("fail", b_fail),
    FN("fashion_mnist", pd_cmp_b_record),
    FN("fill", b_fill),
    OP1A2("flatten", "flatten_contiguous_range", "Out", "start_axis", "stop_axis"),
    {"gather", b_op, "gather", {"X", "Index", NULL}, "Out", {"axis", NULL}},
    FN("gaussian_random", pd_cmp_b_random_fill),
    OP1A("gelu", "gelu", "Out", "approximate"),
    FN("get_variable", b_get_variable),
    OP1("hard_sigmoid", "hard_sigmoid", "Out"),
    OP1("hard_swish", "hard_swish", "Out"),
    FN("host", pd_cmp_b_record),
    OP2("huber_loss", "huber_loss", "X", "Y", "Out"),
    FN("images", pd_cmp_b_record),
    FN("import_model", pd_cmp_b_import_model),
    FN("kaiming", pd_cmp_b_record),
    OP2("kldiv_loss", "kldiv_loss", "X", "Target", "Loss"),
    FN("layer_norm_op", b_layer_norm),
    OP1A("leaky_relu", "leaky_relu", "Out", "alpha"),
    FN("len", b_len),
    FN("lines", pd_cmp_b_record),
    FN("load", pd_cmp_b_action),
    OP1("log", "log", "Out"),
    OP1("log_sigmoid", "logsigmoid", "Out"),
    OP1A("log_softmax", "log_softmax", "Out", "axis"),
    OP2("lookup_table", "lookup_table", "W", "Ids", "Out"),
    OP2("matmul", "matmul_v2", "X", "Y", "Out"),
    OP2("maximum", "elementwise_max", "X", "Y", "Out"),
    OP1("mean", "mean", "Out"),
    FN("minibatch", b_minibatch),
    OP2("minimum", "elementwise_min", "X", "Y", "Out"),
    FN("mnist", pd_cmp_b_record),
    FN("momentum", pd_cmp_b_record),
    OP2("mul", "mul", "X", "Y", "Out"),
    FN("normal", pd_cmp_b_record),
    FN("npy", pd_cmp_b_record),
    FN("ones", b_fill),
    FN("op", pd_cmp_b_op),
    FN("param", b_param),
    OP1("pool2d", "pool2d", "Out"),
    OP2("pow", "elementwise_pow", "X", "Y", "Out"),
    FN("predict", pd_cmp_b_action),
    FN("print", pd_cmp_b_action),
    FN("prod", b_prod),
    FN("range", b_range),
    OP1A("reduce_max", "reduce_max", "Out", "dim"),
    OP1A("reduce_mean", "reduce_mean", "Out", "dim"),
    OP1A("reduce_min", "reduce_min", "Out", "dim"),
    OP1A("reduce_sum", "reduce_sum", "Out", "dim"),
    OP1("relu", "relu", "Out"),
    OP1A("relu6", "relu6", "Out", "threshold"),
    OP1A("reshape", "reshape2", "Out", "shape"),
    FN("rmsprop", pd_cmp_b_record),
    FN("sample", pd_cmp_b_sample),
    FN("save", pd_cmp_b_action),
    OP1A("scale", "scale", "Out", "scale"),
    FN("sequence", b_sequence),
    OP1A("sequence_pool", "sequence_pool", "Out", "pooltype"),
    OP1("sequence_softmax", "sequence_softmax", "Out"),
    FN("sgd", pd_cmp_b_record),
    {"shape", b_op, "shape", {"Input", NULL, NULL}, "Out", {NULL, NULL}},
    OP1("sigmoid", "sigmoid", "Out"),
    OP2("sigmoid_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits", "X", "Label",
        "Out"),
    OP1("silu", "silu", "Out"),
    {"slice", b_op, "slice", {"Input", NULL, NULL}, "Out", {"axes", "starts", "ends"}},
    OP2("smooth_l1_loss", "smooth_l1_loss", "X", "Y", "Out"),
    OP1A("softmax", "softmax", "Out", "axis"),
    OP2("softmax_with_cross_entropy", "softmax_with_cross_entropy", "Logits", "Label", "Loss"),
    OP1AA("softplus", "softplus", "Out", "beta", "threshold"),
    FN("split", b_split),
    OP1("sqrt", "sqrt", "Out"),
    OP1("square", "square", "Out"),
    OP1A("squeeze", "squeeze2", "Out", "axes"),
    {"stack", b_concat, "stack", {NULL, NULL, NULL}, "Y", {NULL, NULL}},
    FN("str", b_str),
    OP1A("swish", "swish", "Out", "beta"),
    OP1("tanh", "tanh", "Out"),
    FN("text", pd_cmp_b_record),
    OP1A("tile", "tile", "Out", "repeat_times"),
    FN("top_k", b_top_k),
    FN("train", pd_cmp_b_action),
    OP1A("transpose", "transpose2", "Out", "axis"),
    FN("uniform", pd_cmp_b_record),
    FN("uniform_random", pd_cmp_b_random_fill),
    OP1A("unsqueeze", "unsqueeze2", "Out", "axes"),
    FN("var", b_var),
    {"where", b_op, "where", {"Condition", "X", "Y"}, "Out", {NULL, NULL}},
    FN("xavier", pd_cmp_b_record),
    FN("zeros", b_fill),
};

const builtin *pd_cmp_builtin_lookup(const char *name) {
  size_t lo = 0, hi = PD_ARRAY_LEN(builtins);
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int r = strcmp(name, builtins[mid].name);
    if (r == 0) return &builtins[mid];
    if (r < 0) hi = mid;
    else lo = mid + 1;
  }
  return NULL;
}

const builtin *pd_cmp_builtin_at(int i) {
  return i >= 0 && (size_t)i < PD_ARRAY_LEN(builtins) ? &builtins[i] : NULL;
}

bool pd_cmp_builtin_is_action(const builtin *b) { return b->fn == pd_cmp_b_action; }

int pd_builtin_names(const char *prefix, const char **out, int cap) {
  size_t plen = strlen(prefix);
  int n = 0;
  for (size_t i = 0; i < PD_ARRAY_LEN(builtins); i++) {
    if (strncmp(builtins[i].name, prefix, plen) != 0) continue;
    if (n < cap) out[n] = builtins[i].name;
    n++;
  }
  return n;
}

/* ---- Help text ---- */

static void put_default(pd_buf *b, const pd_attrdef *ad) {
  const pd_attrval *v = &ad->def;
  switch (ad->type) {
    case PD_ATTR_INT: case PD_ATTR_LONG: pd_buf_printf(b, "%lld", (long long)v->i); break;
    case PD_ATTR_BOOLEAN: pd_buf_puts(b, v->i ? "true" : "false"); break;
    case PD_ATTR_FLOAT: case PD_ATTR_FLOAT64: pd_buf_printf(b, "%g", v->f); break;
    case PD_ATTR_STRING: pd_buf_printf(b, "\"%s\"", v->s ? v->s : ""); break;
    case PD_ATTR_INTS: case PD_ATTR_LONGS: case PD_ATTR_FLOATS: case PD_ATTR_STRINGS:
      pd_buf_puts(b, "[");
      for (int i = 0; i < v->n; i++) {
        if (i) pd_buf_puts(b, ", ");
        if (ad->type == PD_ATTR_INTS) pd_buf_printf(b, "%d", (int)v->l.ints[i]);
        else if (ad->type == PD_ATTR_LONGS) pd_buf_printf(b, "%lld", (long long)v->l.longs[i]);
        else if (ad->type == PD_ATTR_FLOATS) pd_buf_printf(b, "%g", (double)v->l.floats[i]);
        else pd_buf_printf(b, "\"%s\"", v->l.strings[i]);
      }
      pd_buf_puts(b, "]");
      break;
    default: pd_buf_puts(b, "?"); break;
  }
}

bool pd_builtin_describe(const char *name, pd_buf *out) {
  const builtin *bi = pd_cmp_builtin_lookup(name);
  if (!bi) return pd_cmp_spec_describe(name, out);  /* a learning-rate schedule */
  if (bi->op) {  /* an op wrapper: inputs, then attributes (some positional), with defaults */
    const pd_opdef *def = pd_opdef_lookup(bi->op);
    pd_buf_printf(out, "%s(", name);
    int k = 0;
    for (int i = 0; i < 3 && bi->in[i]; i++) pd_buf_printf(out, "%s%s", k++ ? ", " : "", bi->in[i]);
    if (!bi->in[0]) pd_buf_printf(out, "%s[tensors]", k++ ? ", " : "");
    for (int i = 0; def && i < def->nattrs; i++) {
      const pd_attrdef *ad = &def->attrs[i];
      if (ad->type == PD_ATTR_BLOCK || ad->type == PD_ATTR_BLOCKS) continue;
      pd_buf_printf(out, "%s%s", k++ ? ", " : "", ad->name);
      if (!ad->required) {
        pd_buf_puts(out, " = ");
        put_default(out, ad);
      }
    }
    pd_buf_printf(out, ")\n  Fluid's op '%s'; returns its output '%s'. Inputs in order, then %s",
                  bi->op, bi->out ? bi->out : "?", bi->pattr[0] ? "" : "attributes by keyword");
    for (int i = 0; i < 3 && bi->pattr[i]; i++)
      pd_buf_printf(out, "%s%s", i ? ", " : "", bi->pattr[i]);
    pd_buf_puts(out, bi->pattr[0] ? " by position or keyword, the other attributes by keyword\n"
                                  : "\n");
  } else if (pd_cmp_spec_describe(name, out)) {
    /* a reader, optimizer, initializer or action */  } else {
    pd_buf_printf(out, "%s(...)\n  a built-in function (doc/language.md, 'Built-in "
                       "functions')\n", name);
  }
  return true;
}