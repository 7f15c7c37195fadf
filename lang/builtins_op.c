/* builtins_op.c -- op(type, ...): any op of the registry (vm/oplist.h) by its Fluid name, its
 * slots and attributes by keyword: `y = op("conv2d", Input = x, Filter = w, strides = [2, 2])`.
 * A keyword that names an input slot takes a tensor (a list of tensors for a list slot), one
 * that names an output slot binds an existing var to it (batch norm's MeanOut = mean: an op
 * that writes a var in place), any other an attribute. Outputs not bound get new vars; the op
 * returns its first output slot's var, or with `outputs = ["Y", ...]` a list of those slots'
 * vars in order (["State", 2] gives a list slot two new vars), with `outputs = "Y"` that slot's
 * one var. An op that runs a block (its
 * sub_block attribute: conditional_block, while, recurrent) takes it as a body after the call,
 * `op("while", X = [...], Condition = c, Out = [...]) { ... }`, compiled into a new block under the
 * current one (pd_cmp_compile_op_body): its statements read outer vars as they are and write them
 * only through output slots bound to them. What `pdlang decompile` writes for an op no layer
 * covers. */
#include "config.h"

#include <string.h>

#include "lang/builtins_int.h"

static const pd_slotdef *find_slot(const pd_slotdef *slots, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(slots[i].name, name) == 0) return &slots[i];
  return NULL;
}

/* The vars of a keyword's value: one tensor, or a list of them. */
static bool tensor_args(C *c, value *v, pd_loc loc, const char *slot, value ***vs, int *n) {
  if (v->k == V_LIST) {
    *vs = v->list.items;
    *n = v->list.n;
  } else {
    *vs = pd_cmp_calloc(c, sizeof **vs);
    if (!*vs) return false;
    (*vs)[0] = v;
    *n = 1;
  }
  for (int i = 0; i < *n; i++)
    if (!pd_cmp_want_tensor_arg(c, (*vs)[i], loc, "op", slot)) return false;
  return true;
}

value *pd_cmp_b_op(C *c, const builtin *self, call_args *a) {
  (void)self;
  if (a->npos != 1 || a->pos[0]->k != V_STR) {
    if (a->npos < 1 || a->pos[0]->k != V_ERROR)
      pd_cmp_error(c, a->npos ? a->pos_loc[0] : a->loc, "op takes the op's Fluid name, a string "
                   "(op(\"conv2d\", Input = x, Filter = w, strides = [2, 2])), then keywords");
    return VERR;
  }
  const char *type = a->pos[0]->s;
  const pd_opdef *def = pd_opdef_lookup(type);
  if (!def) {
    pd_cmp_error(c, a->pos_loc[0], "op: pdlang has no op '%s' (doc/paddle.md lists them)", type);
    return VERR;
  }
  const pd_attrdef *blk = NULL;  /* the sub_block attribute of an op that runs a block */
  for (int i = 0; i < def->nattrs && !blk; i++)
    if (def->attrs[i].type == PD_ATTR_BLOCK) blk = &def->attrs[i];
  if (a->body && !blk) {
    pd_cmp_error(c, a->body->loc, "op '%s' runs no block, so it takes no '{ ... }' (the ops that "
                 "do: conditional_block, recurrent, while)", type);
    return VERR;
  }
  if (!a->body && blk) {
    pd_cmp_error(c, a->loc, "op '%s' runs a block: give it one after the call, op(\"%s\", ...) "
                 "{ ... }", type, type);
    return VERR;
  }
  pd_op_desc *op = pd_cmp_op_new(c, type, a->loc);
  if (!op) return VERR;
  value *outputs = NULL;
  pd_loc oloc = a->loc;
  for (int k = 0; k < a->nkw; k++) {
    const char *kw = a->kw[k];
    value *v = a->kwv[k], **vs;
    int n;
    if (strcmp(kw, "outputs") == 0) {
      outputs = v, oloc = a->kw_loc[k];
      continue;
    }
    const pd_slotdef *in = find_slot(def->inputs, def->ninputs, kw);
    const pd_slotdef *out = in ? NULL : find_slot(def->outputs, def->noutputs, kw);
    if (in || out) {
      if (!tensor_args(c, v, a->kw_loc[k], kw, &vs, &n)) return VERR;
      if (in && !pd_cmp_op_in_list(c, op, kw, vs, n, a->kw_loc[k])) return VERR;
      if (out) {
        const char **names = pd_cmp_calloc(c, sizeof *names * (size_t)(n + 1));
        if (!names) return VERR;
        for (int i = 0; i < n; i++) names[i] = vs[i]->var->name;
        if (pd_op_set_output(op, kw, n, names)) {
          c->oom = true;
          return VERR;
        }
      }
      continue;
    }
    const pd_attrdef *ad = pd_opdef_attr(def, kw);
    if (!ad) {
      const char **names = pd_cmp_calloc(c, sizeof *names *
                                                (size_t)(def->ninputs + def->noutputs + def->nattrs + 1));
      int nn = 0;
      if (!names) return VERR;
      for (int i = 0; i < def->ninputs; i++) names[nn++] = def->inputs[i].name;
      for (int i = 0; i < def->noutputs; i++) names[nn++] = def->outputs[i].name;
      for (int i = 0; i < def->nattrs; i++) names[nn++] = def->attrs[i].name;
      const char *near = pd_cmp_suggest_kw(kw, names, nn);
      pd_cmp_error(c, a->kw_loc[k], "op '%s' has no slot or attribute '%s'%s%s%s", type, kw,
                   near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
      return VERR;
    }
    if (!pd_cmp_set_attr(c, op, ad, v, a->kw_loc[k])) return VERR;
  }
  if (blk) {
    int sub;
    if (!pd_cmp_compile_op_body(c, a->body, &sub)) return VERR;
    if (pd_op_set_attr_block(op, blk->name, sub)) {
      c->oom = true;
      return VERR;
    }
  }
  int nwant = 0;
  const char **want = NULL;
  int *count = NULL;
  /* outputs = "Scope": that one slot's var, returned alone (not in a list) */
  bool one_slot = outputs && outputs->k == V_STR;
  if (one_slot) {
    value *l = pd_cmp_vnew(c, V_LIST);
    if (l == VERR || !(l->list.items = pd_cmp_calloc(c, sizeof *l->list.items))) return VERR;
    l->list.n = 1;
    l->list.items[0] = outputs;
    outputs = l;
  }
  if (outputs) {
    if (outputs->k != V_LIST) {
      pd_cmp_error(c, oloc, "op: 'outputs' must be an output slot's name or a list of them");
      return VERR;
    }
    nwant = outputs->list.n;
    if (!(want = pd_cmp_calloc(c, sizeof *want * (size_t)(nwant + 1))) ||
        !(count = pd_cmp_calloc(c, sizeof *count * (size_t)(nwant + 1))))
      return VERR;
    for (int i = 0; i < nwant; i++) {
      value *s = outputs->list.items[i];
      count[i] = 1;
      /* ["State", 2]: a list slot given that many new vars */
      if (s->k == V_LIST && s->list.n == 2 && s->list.items[1]->k == V_INT &&
          s->list.items[1]->i >= 1 && s->list.items[1]->i <= 1024)
        count[i] = (int)s->list.items[1]->i, s = s->list.items[0];
      const pd_slotdef *sd = s->k == V_STR ? find_slot(def->outputs, def->noutputs, s->s) : NULL;
      if (!sd || (count[i] > 1 && !(sd->flags & PD_SLOT_DUPLICABLE))) {
        pd_cmp_error(c, oloc, "op: output %d is not %s of '%s' (a slot's name, or [name, "
                     "count] for a list slot)", i, sd ? "a list slot" : "an output slot", type);
        return VERR;
      }
      want[i] = s->s;
    }
  } else if (def->noutputs) {
    nwant = 1;
    if (!(want = pd_cmp_calloc(c, sizeof *want))) return VERR;
    want[0] = def->outputs[0].name;
  }
  /* every output slot the op must have (and those asked for) gets a var when none is bound */
  for (int i = 0; i < def->noutputs; i++) {
    const pd_slotdef *s = &def->outputs[i];
    int n = 1;
    bool asked = false;
    for (int j = 0; j < nwant; j++)
      if (strcmp(want[j], s->name) == 0) asked = true, n = count ? count[j] : 1;
    if (pd_op_output(op, s->name) || (!asked && (s->flags & PD_SLOT_DISPENSABLE))) continue;
    if (n == 1) {
      pd_var_desc *v = pd_cmp_op_out(c, op, s->name, type);
      if (!v) return VERR;
      if (s->flags & PD_SLOT_SCOPES) v->type = PD_VAR_STEP_SCOPES;
      continue;
    }
    const char **names = pd_cmp_calloc(c, sizeof *names * (size_t)n);
    if (!names) return VERR;
    for (int k = 0; k < n; k++) {
      pd_var_desc *v = pd_cmp_var_new(c, c->block, type, false);
      if (!v) return VERR;
      names[k] = v->name;
    }
    if (pd_op_set_output(op, s->name, n, names)) {
      c->oom = true;
      return VERR;
    }
  }
  value **vals = pd_cmp_calloc(c, sizeof *vals * (size_t)(nwant + 1));
  if (!vals) return VERR;
  pd_var_desc *first = NULL;
  int nvals = 0, capvals = nwant;
  for (int j = 0; j < nwant; j++) {
    const pd_slot *s = pd_op_output(op, want[j]);
    for (int k = 0; s && k < s->nargs; k++) {
      pd_var_desc *v = pd_block_find_var(c->block, s->args[k]);
      if (!v) {
        c->oom = true;
        return VERR;
      }
      if (!first) first = v;
      if (nvals == capvals) {
        value **more = pd_cmp_calloc(c, sizeof *more * (size_t)(nvals + s->nargs + 1));
        if (!more) return VERR;
        memcpy(more, vals, sizeof *vals * (size_t)nvals);
        vals = more;
        capvals += s->nargs;
      }
      vals[nvals++] = pd_cmp_vtensor(c, v);
    }
  }
  if (!first) {
    pd_cmp_error(c, a->loc, "op '%s' has no output to return", type);
    return VERR;
  }
  value *r = pd_cmp_op_finish(c, op, first);
  if (r == VERR || !outputs || (one_slot && nvals == 1)) return r;
  value *l = pd_cmp_vnew(c, V_LIST);
  if (l == VERR) return VERR;
  l->list.n = nvals;
  l->list.items = vals;
  return l;
}
