/* compile_expr.c -- expressions: constant folding of compile-time values, tensor arithmetic
 * lowered to ops, names, indexing, attributes, and calls (builtins; `def` functions are inlined by
 * pd_cmp_call_def, lang/compile.c). Part of the compiler
 * (lang/compile_int.h). */
#include "config.h"
#include "lang/compile_int.h"
#include "lang/builtins_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool pd_cmp_truthy(C *c, value *v, pd_loc loc, bool *out) {
  switch (v->k) {
  case V_BOOL: *out = v->b; return true;
  case V_INT: *out = v->i != 0; return true;
  case V_FLOAT: *out = v->f != 0; return true;
  case V_NONE: *out = false; return true;
  case V_STR: *out = v->s[0] != '\0'; return true;
  case V_LIST: *out = v->list.n != 0; return true;
  case V_ERROR: return false;
  default:
    pd_cmp_error(c, loc, "%s cannot be used as a condition here", pd_cmp_vkind_phrase(v));
    return false;
  }
}

static bool values_equal(const value *a, const value *b) {
  if (pd_cmp_is_number(a) && pd_cmp_is_number(b)) return pd_cmp_num(a) == pd_cmp_num(b);
  if (a->k != b->k) return false;
  switch (a->k) {
  case V_NONE: return true;
  case V_STR: return strcmp(a->s, b->s) == 0;
  case V_DTYPE: return a->dtype == b->dtype;
  case V_FUNC: return a->fn.def == b->fn.def;
  case V_BUILTIN: return a->bi == b->bi;
  case V_TENSOR: return a->var == b->var;
  case V_LIST:
    if (a->list.n != b->list.n) return false;
    for (int i = 0; i < a->list.n; i++)
      if (!values_equal(a->list.items[i], b->list.items[i])) return false;
    return true;
  default: return a == b;
  }
}

/* Arithmetic and comparison between compile-time values. */
static value *fold_binary(C *c, pd_ast_op op, value *l, value *r, pd_loc loc) {
  if (op == PD_AST_OP_EQ || op == PD_AST_OP_NE) {
    bool eq = values_equal(l, r);
    return pd_cmp_vbool(c, op == PD_AST_OP_EQ ? eq : !eq);
  }
  if (op == PD_AST_OP_ADD && l->k == V_STR && r->k == V_STR) {
    /* a step per 16 bytes made: a string doubled in a loop grows as fast as the loop runs */
    if (!pd_cmp_spend(c, (int64_t)((strlen(l->s) + strlen(r->s)) / 16), loc)) return VERR;
    return pd_cmp_vstr(c, pd_cmp_fmt(c, "%s%s", l->s, r->s));
  }
  if (op == PD_AST_OP_ADD && l->k == V_LIST && r->k == V_LIST) {
    if (!pd_cmp_spend(c, (int64_t)l->list.n + r->list.n, loc)) return VERR;
    value *v = pd_cmp_vnew(c, V_LIST);
    if (v == VERR) return v;
    v->list.n = l->list.n + r->list.n;
    v->list.items = pd_cmp_calloc(c, sizeof(value *) * (size_t)(v->list.n ? v->list.n : 1));
    if (!v->list.items) return VERR;
    for (int i = 0; i < l->list.n; i++) v->list.items[i] = l->list.items[i];
    for (int i = 0; i < r->list.n; i++) v->list.items[l->list.n + i] = r->list.items[i];
    return v;
  }
  if (!pd_cmp_is_number(l) || !pd_cmp_is_number(r)) {
    pd_cmp_error(c, loc, "cannot apply '%s' to %s and %s", pd_ast_op_name(op),
                 pd_cmp_vkind_phrase(l), pd_cmp_vkind_phrase(r));
    return VERR;
  }
  bool ints = l->k != V_FLOAT && r->k != V_FLOAT;
  double a = pd_cmp_num(l), b = pd_cmp_num(r);
  int64_t ia = l->k == V_INT ? l->i : (int64_t)a, ib = r->k == V_INT ? r->i : (int64_t)b;
  switch (op) {
  case PD_AST_OP_ADD:
    return ints ? pd_cmp_vint(c, (int64_t)((uint64_t)ia + (uint64_t)ib)) : pd_cmp_vfloat(c, a + b);
  case PD_AST_OP_SUB:
    return ints ? pd_cmp_vint(c, (int64_t)((uint64_t)ia - (uint64_t)ib)) : pd_cmp_vfloat(c, a - b);
  case PD_AST_OP_MUL:
    return ints ? pd_cmp_vint(c, (int64_t)((uint64_t)ia * (uint64_t)ib)) : pd_cmp_vfloat(c, a * b);
  case PD_AST_OP_DIV:
    if (b == 0) {
      pd_cmp_error(c, loc, "division by zero");
      return VERR;
    }
    return pd_cmp_vfloat(c, a / b);
  case PD_AST_OP_MOD:
    if (b == 0) {
      pd_cmp_error(c, loc, "division by zero");
      return VERR;
    }
    if (ints && !(ia == INT64_MIN && ib == -1)) return pd_cmp_vint(c, ((ia % ib) + ib) % ib);
    return pd_cmp_vfloat(c, a - b * floor(a / b));
  case PD_AST_OP_LT: return pd_cmp_vbool(c, a < b);
  case PD_AST_OP_LE: return pd_cmp_vbool(c, a <= b);
  case PD_AST_OP_GT: return pd_cmp_vbool(c, a > b);
  case PD_AST_OP_GE: return pd_cmp_vbool(c, a >= b);
  default: break;
  }
  pd_cmp_error(c, loc, "cannot apply '%s' to numbers", pd_ast_op_name(op));
  return VERR;
}

/* A simple op X[,Y] -> Out with optional float attrs. */
value *pd_cmp_simple_op(C *c, const char *type, value *x, value *y, pd_loc loc) {
  pd_op_desc *op = pd_cmp_op_new(c, type, loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, loc) || (y && !pd_cmp_op_in(c, op, "Y", y, loc)))
    return VERR;
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Out", type));
}

static value *scale_op(C *c, value *x, double scale, double bias, pd_loc loc) {
  pd_op_desc *op = pd_cmp_op_new(c, "scale", loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, loc)) return VERR;
  if (pd_op_set_attr_float(op, "scale", (float)scale) ||
      pd_op_set_attr_float(op, "bias", (float)bias)) {
    c->oom = true;
    return VERR;
  }
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Out", "scale"));
}

value *pd_cmp_binary_tensor(C *c, pd_ast_op op, value *l, value *r, pd_loc loc) {
  static const struct { pd_ast_op op; const char *type; } table[] = {
      {PD_AST_OP_ADD, "elementwise_add"}, {PD_AST_OP_SUB, "elementwise_sub"},
      {PD_AST_OP_MUL, "elementwise_mul"}, {PD_AST_OP_DIV, "elementwise_div"},
      {PD_AST_OP_MATMUL, "matmul_v2"},    {PD_AST_OP_EQ, "equal"},
      {PD_AST_OP_NE, "not_equal"},        {PD_AST_OP_LT, "less_than"},
      {PD_AST_OP_LE, "less_equal"},       {PD_AST_OP_GT, "greater_than"},
      {PD_AST_OP_GE, "greater_equal"},    {PD_AST_OP_AND, "logical_and"},
      {PD_AST_OP_OR, "logical_or"},
  };
  /* tensor OP number (for + - * /): one scale op instead of a constant and a broadcast. */
  if (l->k == V_TENSOR && pd_cmp_is_number(r) && r->k != V_BOOL) {
    double k = pd_cmp_num(r);
    switch (op) {
    case PD_AST_OP_ADD: return scale_op(c, l, 1, k, loc);
    case PD_AST_OP_SUB: return scale_op(c, l, 1, -k, loc);
    case PD_AST_OP_MUL: return scale_op(c, l, k, 0, loc);
    case PD_AST_OP_DIV:
      if (k == 0) {
        pd_cmp_error(c, loc, "division by zero");
        return VERR;
      }
      return scale_op(c, l, 1 / k, 0, loc);
    default: break;
    }
  }
  if (r->k == V_TENSOR && pd_cmp_is_number(l) && l->k != V_BOOL) {
    double k = pd_cmp_num(l);
    switch (op) {
    case PD_AST_OP_ADD: return scale_op(c, r, 1, k, loc);
    case PD_AST_OP_SUB: return scale_op(c, r, -1, k, loc);
    case PD_AST_OP_MUL: return scale_op(c, r, k, 0, loc);
    default: break;
    }
  }
  for (size_t i = 0; i < PD_ARRAY_LEN(table); i++) {
    if (table[i].op != op) continue;
    value *t = l->k == V_TENSOR ? l : r;
    if (l->k != V_TENSOR)
      l = pd_cmp_is_number(l) ? pd_cmp_tensor_const(c, pd_cmp_num(l), t->var->dtype, loc) : l;
    if (r->k != V_TENSOR)
      r = pd_cmp_is_number(r) ? pd_cmp_tensor_const(c, pd_cmp_num(r), t->var->dtype, loc) : r;
    if (l->k == V_ERROR || r->k == V_ERROR) return VERR;
    if (l->k != V_TENSOR || r->k != V_TENSOR) {
      pd_cmp_error(c, loc, "cannot apply '%s' to %s and %s", pd_ast_op_name(op),
                   pd_cmp_vkind_phrase(l), pd_cmp_vkind_phrase(r));
      return VERR;
    }
    return pd_cmp_simple_op(c, table[i].type, l, r, loc);
  }
  pd_cmp_error(c, loc, "operator '%s' is not defined for tensors", pd_ast_op_name(op));
  return VERR;
}

static value *eval_binary(C *c, const pd_ast_node *e) {
  pd_ast_op op = e->binary.op;
  value *l = pd_cmp_eval(c, e->binary.lhs);
  if (l->k == V_ERROR) return VERR;
  /* `and` / `or` on compile-time values short-circuit, as in the staged `if` of a layer. */
  if ((op == PD_AST_OP_AND || op == PD_AST_OP_OR) && l->k != V_TENSOR) {
    bool t;
    if (!pd_cmp_truthy(c, l, e->binary.lhs->loc, &t)) return VERR;
    if (op == PD_AST_OP_AND ? !t : t) return pd_cmp_vbool(c, t);
    value *r = pd_cmp_eval(c, e->binary.rhs);
    if (r->k == V_TENSOR) return pd_cmp_binary_tensor(c, op, l, r, e->loc);
    if (!pd_cmp_truthy(c, r, e->binary.rhs->loc, &t)) return VERR;
    return pd_cmp_vbool(c, t);
  }
  value *r = pd_cmp_eval(c, e->binary.rhs);
  if (r->k == V_ERROR) return VERR;
  /* A tensor compared with none (an optional argument left out): a tensor is never none, so the
   * result is a compile-time bool, and `if (h0 == none)` in a layer is decided at each call. */
  if ((op == PD_AST_OP_EQ || op == PD_AST_OP_NE) &&
      ((l->k == V_TENSOR && r->k == V_NONE) || (l->k == V_NONE && r->k == V_TENSOR)))
    return pd_cmp_vbool(c, op == PD_AST_OP_NE);
  if (l->k == V_TENSOR || r->k == V_TENSOR) {
    if (op == PD_AST_OP_MOD) {
      pd_cmp_error(c, e->loc, "operator '%%' is not defined for tensors");
      return VERR;
    }
    if (op == PD_AST_OP_MATMUL && (l->k != V_TENSOR || r->k != V_TENSOR)) {
      pd_cmp_error(c, e->loc, "'@' needs two tensors, got %s and %s", pd_cmp_vkind_phrase(l),
                   pd_cmp_vkind_phrase(r));
      return VERR;
    }
    return pd_cmp_binary_tensor(c, op, l, r, e->loc);
  }
  if (op == PD_AST_OP_MATMUL) {
    pd_cmp_error(c, e->loc, "'@' needs two tensors, got %s and %s", pd_cmp_vkind_phrase(l),
                 pd_cmp_vkind_phrase(r));
    return VERR;
  }
  return fold_binary(c, op, l, r, e->loc);
}

static value *eval_unary(C *c, const pd_ast_node *e) {
  value *v = pd_cmp_eval(c, e->unary.operand);
  if (v->k == V_ERROR) return VERR;
  if (e->unary.op == PD_AST_OP_NEG) {
    if (v->k == V_TENSOR) return scale_op(c, v, -1, 0, e->loc);
    if (v->k == V_INT) return pd_cmp_vint(c, (int64_t)(0 - (uint64_t)v->i));
    if (v->k == V_FLOAT) return pd_cmp_vfloat(c, -v->f);
    pd_cmp_error(c, e->loc, "cannot negate %s", pd_cmp_vkind_phrase(v));
    return VERR;
  }
  if (v->k == V_TENSOR) return pd_cmp_simple_op(c, "logical_not", v, NULL, e->loc);
  bool t;
  if (!pd_cmp_truthy(c, v, e->unary.operand->loc, &t)) return VERR;
  return pd_cmp_vbool(c, !t);
}

static value *eval_name(C *c, const pd_ast_node *e) {
  const char *id = e->name.id;
  binding *b = pd_cmp_lookup(c->scope, id, NULL);
  if (b) {
    if (b->v->k == V_UNDEF) {
      pd_cmp_error(c, e->loc, "'%s' is not defined on every path here: %s", id, b->v->undef.why);
      return VERR;
    }
    return b->v;
  }
  const builtin *bi = pd_cmp_builtin_lookup(id);
  if (bi) {
    value *v = pd_cmp_vnew(c, V_BUILTIN);
    if (v != VERR) v->bi = bi;
    return v;
  }
  int dt = pd_dtype_from_name(id);
  if (dt >= 0) {
    value *v = pd_cmp_vnew(c, V_DTYPE);
    if (v != VERR) v->dtype = (pd_dtype)dt;
    return v;
  }
  /* A name of a block that has ended (in this file; not a function's own names). */
  for (symtab *t = c->newest_scope; t; t = t->pushed_before) {
    if (t->kind == SC_GLOBAL || t->kind == SC_FUNC) continue;
    symtab *up = c->scope;
    while (up && up != t) up = up->parent;
    binding *lb = up ? NULL : pd_cmp_lookup_local(t, id);
    if (!lb || !lb->loc.file || !e->loc.file || strcmp(lb->loc.file, e->loc.file) != 0) continue;
    pd_cmp_error(c, e->loc,
                 "'%s' is not defined here: the '%s' of line %d is local to its block, which "
                 "has ended (to use it after the block, assign it before the block)",
                 id, id, lb->loc.line);
    return VERR;
  }
  const char *near = pd_cmp_suggest_name(c, id);
  if (near) pd_cmp_error(c, e->loc, "'%s' is not defined (did you mean '%s'?)", id, near);
  else pd_cmp_error(c, e->loc, "'%s' is not defined", id);
  return VERR;
}

const char *pd_cmp_suggest_name(C *c, const char *id) {
  const char *best = NULL;
  int bestd = 1000;
  for (symtab *t = c->scope; t; t = t->parent)  /* the names visible here, innermost first */
    for (const binding *b = t->first; b; b = b->next)
      if (b->v->k != V_UNDEF && b->name[0] != '@') pd_suggest_consider(id, b->name, &best, &bestd);
  const builtin *bi;
  for (int i = 0; (bi = pd_cmp_builtin_at(i)); i++) pd_suggest_consider(id, bi->name, &best, &bestd);
  return best;
}

/* x[i, lo:hi, ...] of a tensor: one slice op. Subscript k applies to dim k: an integer i keeps
 * [i, i + 1) and drops the dim (decrease_axis), lo:hi keeps [lo, hi) (a bound left out is the
 * start or the end), a bare ':' keeps the dim whole. Negative bounds count from the end, and
 * bounds past the dim stop at it, as Fluid's slice does. */
static value *tensor_index(C *c, const pd_ast_node *e, value *obj) {
  int n = (int)e->index.subscripts.len;
  if (n > PD_MAX_RANK || (obj->var->ndims >= 0 && n > obj->var->ndims)) {
    pd_cmp_error(c, e->loc, "%d subscripts for a tensor of %d dimensions", n,
                 obj->var->ndims >= 0 ? obj->var->ndims : PD_MAX_RANK);
    return VERR;
  }
  int32_t axes[PD_MAX_RANK], starts[PD_MAX_RANK], ends[PD_MAX_RANK], dec[PD_MAX_RANK];
  int na = 0, nd = 0;
  for (int k = 0; k < n; k++) {
    const pd_ast_node *sub = e->index.subscripts.items[k];
    const pd_ast_node *bounds[2] = {sub, NULL};
    int64_t v[2] = {0, INT32_MAX};
    if (sub->kind == PD_AST_SLICE) {
      bounds[0] = sub->slice.lo;
      bounds[1] = sub->slice.hi;
      if (!bounds[0] && !bounds[1]) continue;
    }
    for (int b = 0; b < 2; b++) {
      if (!bounds[b]) continue;
      value *bv = pd_cmp_eval(c, bounds[b]);
      if (bv->k == V_ERROR) return VERR;
      if (bv->k != V_INT || bv->i < INT32_MIN || bv->i > INT32_MAX) {
        pd_cmp_error(c, bounds[b]->loc, "a tensor subscript must be an integer or a slice of "
                     "integers, got %s", pd_cmp_vkind_phrase(bv));
        return VERR;
      }
      v[b] = bv->i;
    }
    if (sub->kind != PD_AST_SLICE) {
      v[1] = v[0] == -1 ? INT32_MAX : v[0] + 1;
      dec[nd++] = k;
    }
    axes[na] = k;
    starts[na] = (int32_t)v[0];
    ends[na++] = (int32_t)v[1];
  }
  pd_op_desc *op = pd_cmp_op_new(c, "slice", e->loc);
  if (!op || !pd_cmp_op_in(c, op, "Input", obj, e->loc)) return VERR;
  if (pd_op_set_attr_ints(op, "axes", na, axes) || pd_op_set_attr_ints(op, "starts", na, starts) ||
      pd_op_set_attr_ints(op, "ends", na, ends) ||
      (nd && pd_op_set_attr_ints(op, "decrease_axis", nd, dec))) {
    c->oom = true;
    return VERR;
  }
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Out", obj->var->name));
}

static value *eval_index(C *c, const pd_ast_node *e) {
  value *obj = pd_cmp_eval(c, e->index.object);
  if (obj->k == V_ERROR) return VERR;
  if (obj->k == V_TENSOR) return tensor_index(c, e, obj);
  if (obj->k != V_LIST) {
    pd_cmp_error(c, e->loc, "only lists and tensors can be indexed; this is %s",
                 pd_cmp_vkind_phrase(obj));
    return VERR;
  }
  if (e->index.subscripts.len != 1) {
    pd_cmp_error(c, e->loc, "a list takes one subscript");
    return VERR;
  }
  const pd_ast_node *sub = e->index.subscripts.items[0];
  int64_t n = obj->list.n;
  if (sub->kind == PD_AST_SLICE) {
    int64_t lo = 0, hi = n;
    const pd_ast_node *bounds[2] = {sub->slice.lo, sub->slice.hi};
    int64_t *dst[2] = {&lo, &hi};
    for (int k = 0; k < 2; k++) {
      if (!bounds[k]) continue;
      value *bv = pd_cmp_eval(c, bounds[k]);
      if (bv->k == V_ERROR) return VERR;
      if (bv->k != V_INT) {
        pd_cmp_error(c, bounds[k]->loc, "a slice bound must be an integer, got %s",
                     pd_cmp_vkind_phrase(bv));
        return VERR;
      }
      int64_t x = bv->i < 0 ? bv->i + n : bv->i;
      *dst[k] = x < 0 ? 0 : x > n ? n : x;
    }
    value *v = pd_cmp_vnew(c, V_LIST);
    if (v == VERR) return v;
    v->list.n = hi > lo ? (int)(hi - lo) : 0;
    v->list.items = pd_cmp_calloc(c, sizeof(value *) * (size_t)(v->list.n ? v->list.n : 1));
    if (!v->list.items) return VERR;
    for (int i = 0; i < v->list.n; i++) v->list.items[i] = obj->list.items[lo + i];
    return v;
  }
  value *iv = pd_cmp_eval(c, sub);
  if (iv->k == V_ERROR) return VERR;
  if (iv->k != V_INT) {
    pd_cmp_error(c, sub->loc, "a list index must be an integer, got %s", pd_cmp_vkind_phrase(iv));
    return VERR;
  }
  int64_t i = iv->i < 0 ? iv->i + n : iv->i;
  if (i < 0 || i >= n) {
    pd_cmp_error(c, sub->loc, "index %lld is out of range for a list of %lld items",
                 (long long)iv->i, (long long)n);
    return VERR;
  }
  return obj->list.items[i];
}

static value *eval_attr(C *c, const pd_ast_node *e) {
  value *obj = pd_cmp_eval(c, e->attr.object);
  if (obj->k == V_ERROR) return VERR;
  const char *a = e->attr.name;
  if (obj->k == V_TENSOR) {
    pd_var_desc *v = obj->var;
    if (strcmp(a, "shape") == 0) {
      if (v->ndims < 0) {
        pd_cmp_error(c, e->loc, "the shape of '%s' is not known at compile time", v->name);
        return VERR;
      }
      value *l = pd_cmp_vnew(c, V_LIST);
      if (l == VERR) return l;
      l->list.n = v->ndims;
      l->list.items = pd_cmp_calloc(c, sizeof(value *) * (size_t)(v->ndims ? v->ndims : 1));
      if (!l->list.items) return VERR;
      for (int i = 0; i < v->ndims; i++) l->list.items[i] = pd_cmp_vint(c, v->dims[i]);
      return l;
    }
    if (strcmp(a, "ndim") == 0) return pd_cmp_vint(c, v->ndims);
    if (strcmp(a, "dtype") == 0) {
      value *d = pd_cmp_vnew(c, V_DTYPE);
      if (d != VERR) d->dtype = v->dtype;
      return d;
    }
    if (strcmp(a, "lod_level") == 0) return pd_cmp_vint(c, v->lod_level);
    if (strcmp(a, "name") == 0) return pd_cmp_vstr(c, v->name);
    pd_cmp_error(c, e->loc,
                 "a tensor has no attribute '%s' (it has shape, ndim, dtype, lod_level, name)", a);
    return VERR;
  }
  if (obj->k == V_LIST && strcmp(a, "len") == 0) return pd_cmp_vint(c, obj->list.n);
  if (obj->k == V_MODEL) return pd_cmp_model_attr(c, obj, a, e->loc);
  if (obj->k == V_RECORD) {
    for (int i = 0; i < obj->rec.n; i++)
      if (obj->rec.keys[i] && strcmp(obj->rec.keys[i], a) == 0) return obj->rec.vals[i];
  }
  pd_cmp_error(c, e->loc, "%s has no attribute '%s'", pd_cmp_vkind_phrase(obj), a);
  return VERR;
}

value *pd_cmp_call_value(C *c, value *fn, call_args *a) {
  if (fn->k == V_BUILTIN) return fn->bi->fn(c, fn->bi, a);
  if (fn->k == V_FUNC) return pd_cmp_call_def(c, fn, a);
  if (fn->k == V_MODEL) return pd_cmp_call_model(c, fn, a);
  if (fn->k == V_METHOD) return pd_cmp_call_method(c, fn, a);
  if (fn->k != V_ERROR) pd_cmp_error(c, a->loc, "%s is not a function", pd_cmp_vkind_phrase(fn));
  return VERR;
}

/* Where an expression's text begins: its leftmost operand's position. */
static pd_loc leftmost_loc(const pd_ast_node *e) {
  for (;;) {
    switch (e->kind) {
      case PD_AST_BINARY: e = e->binary.lhs; break;
      case PD_AST_CALL: e = e->call.callee; break;
      case PD_AST_INDEX: e = e->index.object; break;
      case PD_AST_ATTR: e = e->attr.object; break;
      default: return e->loc;
    }
  }
}

static value *eval_call(C *c, const pd_ast_node *e) {
  const pd_ast_node *callee = e->call.callee;
  value *fn = pd_cmp_eval(c, callee);
  if (fn->k == V_ERROR) return VERR;
  if (e->call.body && !(fn->k == V_BUILTIN && fn->bi->fn == pd_cmp_b_op)) {
    pd_buf b;
    pd_buf_init(&b);
    pd_cmp_describe(c, fn, &b);
    pd_cmp_error(c, e->call.body->loc, "a block '{ ... }' follows a call of op(...) only (an op "
                 "that runs a block: op(\"while\", ...) { ... }), not of %s", b.data ? b.data : "?");
    pd_buf_free(&b);
    return VERR;
  }
  size_t n = e->call.args.len;
  call_args a = {.loc = callee->loc, .body = e->call.body};
  a.fname = fn->k == V_BUILTIN ? fn->bi->name
          : fn->k == V_FUNC    ? fn->fn.def->def.name->name.id
                               : "function";
  a.pos = pd_cmp_calloc(c, sizeof *a.pos * (n ? n : 1));
  a.pos_loc = pd_cmp_calloc(c, sizeof *a.pos_loc * (n ? n : 1));
  a.pos_start = pd_cmp_calloc(c, sizeof *a.pos_start * (n ? n : 1));
  a.kw = pd_cmp_calloc(c, sizeof *a.kw * (n ? n : 1));
  a.kwv = pd_cmp_calloc(c, sizeof *a.kwv * (n ? n : 1));
  a.kw_loc = pd_cmp_calloc(c, sizeof *a.kw_loc * (n ? n : 1));
  if (c->oom) return VERR;
  bool bad = false;
  for (size_t i = 0; i < n; i++) {
    const pd_ast_node *arg = e->call.args.items[i];
    if (arg->kind == PD_AST_KWARG) {
      for (int k = 0; k < a.nkw; k++)
        if (strcmp(a.kw[k], arg->binding.name) == 0) {
          pd_cmp_error(c, arg->loc, "keyword argument '%s' given twice", arg->binding.name);
          bad = true;
        }
      a.kw[a.nkw] = arg->binding.name;
      a.kw_loc[a.nkw] = arg->loc;
      a.kwv[a.nkw] = pd_cmp_eval(c, arg->binding.value);
      bad |= a.kwv[a.nkw]->k == V_ERROR;
      a.nkw++;
    } else {
      a.pos_loc[a.npos] = arg->loc;
      a.pos_start[a.npos] = leftmost_loc(arg);
      a.pos[a.npos] = pd_cmp_eval(c, arg);
      bad |= a.pos[a.npos]->k == V_ERROR;
      a.npos++;
    }
  }
  if (bad) return VERR;
  return pd_cmp_call_value(c, fn, &a);
}

value *pd_cmp_eval(C *c, const pd_ast_node *e) {
  if (c->oom) return VERR;
  switch (e->kind) {
  case PD_AST_INT: return pd_cmp_vint(c, e->int_value);
  case PD_AST_FLOAT: return pd_cmp_vfloat(c, e->float_value);
  case PD_AST_BOOL: return pd_cmp_vbool(c, e->bool_value);
  case PD_AST_NONE: return VNONE;
  case PD_AST_STRING: {
    if (memchr(e->str.data, '\0', e->str.len)) {
      pd_cmp_error(c, e->loc, "strings with NUL bytes cannot be used here");
      return VERR;
    }
    return pd_cmp_vstr(c, e->str.data);
  }
  case PD_AST_NAME: return eval_name(c, e);
  case PD_AST_LIST: {
    value *v = pd_cmp_vnew(c, V_LIST);
    if (v == VERR) return v;
    v->list.n = (int)e->list.items.len;
    v->list.items = pd_cmp_calloc(c, sizeof(value *) * (e->list.items.len ? e->list.items.len : 1));
    if (!v->list.items) return VERR;
    for (size_t i = 0; i < e->list.items.len; i++) {
      v->list.items[i] = pd_cmp_eval(c, e->list.items.items[i]);
      if (v->list.items[i]->k == V_ERROR) return VERR;
    }
    return v;
  }
  case PD_AST_UNARY: return eval_unary(c, e);
  case PD_AST_BINARY: return eval_binary(c, e);
  case PD_AST_CALL: return eval_call(c, e);
  case PD_AST_INDEX: return eval_index(c, e);
  case PD_AST_ATTR: return eval_attr(c, e);
  default:
    pd_cmp_error(c, e->loc, "%s is not an expression", pd_ast_kind_phrase(e->kind));
    return VERR;
  }
}
