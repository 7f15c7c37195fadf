/* fuse_rnn.c -- a for-rnn whose body is one Elman cell becomes one elman_rnn op, one whose body
 * is the lstm or gru layer's step a fused_lstm or fused_gru op (fuse_gated.c; see
 * vm/passes/fuse_rnn.h). */
#include "config.h"
#include "vm/passes/fuse_rnn.h"

#include <string.h>

#include "vm/ops/ops.h"

/* The one name of a STRINGS attribute, or NULL when it does not hold exactly one. */
static const char *one_string(const pd_op_desc *op, const char *attr) {
  const pd_attr *a = pd_op_attr(op, attr);
  return a && a->type == PD_ATTR_STRINGS && a->n == 1 ? a->strings[0] : NULL;
}

/* The one var bound to a slot, or NULL when it has not exactly one. */
static const char *one_arg(const pd_slot *s) {
  return s && s->nargs == 1 && strcmp(s->args[0], PD_EMPTY_VAR_NAME) != 0 ? s->args[0] : NULL;
}
static const char *one_in(const pd_op_desc *op, const char *slot) {
  return one_arg(pd_op_input(op, slot));
}
static const char *one_out(const pd_op_desc *op, const char *slot) {
  return one_arg(pd_op_output(op, slot));
}

static int64_t int_attr(const pd_op_desc *op, const char *name, int64_t def) {
  const pd_attr *a = pd_op_attr(op, name);
  if (!a) return def;
  return a->type == PD_ATTR_INT ? a->v.i : a->type == PD_ATTR_LONG ? a->v.l : def;
}

static bool bool_attr(const pd_op_desc *op, const char *name) {
  const pd_attr *a = pd_op_attr(op, name);
  return a && a->type == PD_ATTR_BOOLEAN && a->v.b;
}

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* A var of the step block alone, of rank 2. */
static bool step_local(const pd_block *step, const char *name) {
  const pd_var_desc *d = name ? pd_block_find_var_local(step, name) : NULL;
  return d && d->type == PD_VAR_LOD_TENSOR && d->ndims == 2;
}

/* Is block idx owned by exactly one op of p, with no block nested in it (and no op anywhere
 * owning a list of blocks, which this does not follow)? (fuse_rnn.h) */
bool pd_fuse_rnn_leaf_block(const pd_program *p, int idx) {
  int owners = 0;
  for (int b = 0; b < p->nblocks; b++) {
    if (p->blocks[b]->parent_idx == idx && b != idx) return false;
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      const pd_attr *a = pd_op_attr(p->blocks[b]->ops[i], "sub_block");
      if (a && a->type == PD_ATTR_BLOCK && a->v.i == idx) owners++;
      if (pd_op_attr(p->blocks[b]->ops[i], "sub_blocks")) return false;
    }
  }
  return owners == 1;
}

/* The cell of the loop `op` (of block outer), when it is one: *u, *h0, *w, *act, *out. */
static bool elman_cell(const pd_program *p, const pd_block *outer, const pd_op_desc *op,
                       const char **u, const char **h0, const char **w, const char **act,
                       const char **out) {
  const pd_attr *sa = pd_op_attr(op, "sub_block");
  const pd_block *step = sa && sa->type == PD_ATTR_BLOCK ? pd_program_block(p, sa->v.i) : NULL;
  if (!step || step == outer || step->parent_idx != outer->idx || step->nops != 3 ||
      !pd_fuse_rnn_leaf_block(p, step->idx))
    return false;
  const char *mem = one_string(op, "ex_states"), *state = one_string(op, "states");
  const pd_attr *pp = pd_op_attr(op, "param_products");
  *u = one_in(op, "inputs");
  *h0 = one_in(op, "initial_states");
  *out = one_out(op, "outputs");
  if (!mem || !state || is(mem, state) || !*u || !*h0 || !is(*out, state) ||
      (pp && pp->n > 0))
    return false;
  const pd_var_desc *ud = pd_block_find_var(outer, *u), *od = pd_block_find_var(outer, *out);
  if (!ud || ud->lod_level != 1 || ud->ndims != 2 || !od || !step_local(step, *u) ||
      !step_local(step, mem) || !step_local(step, state))
    return false;
  /* a = mul(mem, W) */
  const pd_op_desc *m = step->ops[0], *add = step->ops[1], *f = step->ops[2];
  const char *a = one_out(m, "Out");
  *w = one_in(m, "Y");
  const pd_var_desc *wd = *w ? pd_block_find_var(outer, *w) : NULL;
  if (!pd_opdef_is(m, PD_OP_mul) || !is(one_in(m, "X"), mem) || !wd || wd->ndims != 2 ||
      pd_block_find_var_local(step, *w) || int_attr(m, "x_num_col_dims", 1) != 1 ||
      int_attr(m, "y_num_col_dims", 1) != 1 || !step_local(step, a) || is(a, mem))
    return false;
  /* b = a + u or u + a */
  const char *x = one_in(add, "X"), *y = one_in(add, "Y"), *b = one_out(add, "Out");
  if (!pd_opdef_is(add, PD_OP_elementwise_add) || int_attr(add, "axis", -1) != -1 ||
      !((is(x, a) && is(y, *u)) || (is(x, *u) && is(y, a))) || !step_local(step, b) ||
      is(b, a) || is(b, *u) || is(b, mem))
    return false;
  /* state = act(b) */
  *act = f->type;
  if ((!pd_opdef_is(f, PD_OP_tanh) && !pd_opdef_is(f, PD_OP_relu) &&
       !pd_opdef_is(f, PD_OP_sigmoid)) ||
      !is(one_in(f, "X"), b) || !is(one_out(f, "Out"), state))
    return false;
  return true;
}

/* Replace the loop at index at of outer by its elman_rnn op; *done when it was. */
static pd_status fuse_loop(pd_block *outer, int at, const char *u, const char *h0, const char *w,
                           const char *act, const char *out, bool *done, pd_error *err) {
  pd_op_desc *op = outer->ops[at];
  pd_op_desc *f = pd_block_add_op(outer, "elman_rnn", at);
  *done = false;
  if (!f || pd_op_copy_loc(f, op) || pd_op_set_input(f, "Input", 1, &u) ||
      pd_op_set_input(f, "H0", 1, &h0) || pd_op_set_input(f, "Weight", 1, &w) ||
      pd_op_set_output(f, "Hidden", 1, &out) || pd_op_set_attr_string(f, "activation", act) ||
      pd_op_set_attr_bool(f, "is_reverse", bool_attr(op, "reverse")))
    goto nomem;
  /* Shapes the generic loop would only reject at run time (W not [H, H]) keep the loop. */
  pd_error e = {0};
  pd_status st = pd_opdef_prepare(f, outer, &e);
  pd_error_clear(&e);
  if (st == PD_ENOMEM) goto nomem;
  if (st) {
    pd_block_remove_op(outer, at);
    return PD_OK;
  }
  /* The loop's step scopes: nothing else names them (one owner, no backward pass yet). */
  const char *scopes = one_out(op, "step_scopes");
  char *keep = scopes ? pd_strdup(scopes) : NULL;
  if (scopes && !keep) goto nomem;
  pd_block_remove_op(outer, at + 1);
  if (keep) pd_block_remove_var(outer, keep);
  pd_free(keep);
  *done = true;
  return PD_OK;
nomem:
  return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
}

pd_status pd_program_fuse_rnn(pd_program *p, int *fused, pd_error *err) {
  if (fused) *fused = 0;
  for (int b = 0; b < p->nblocks; b++)
    if (p->blocks[b]->forward_block_idx >= 0) return PD_OK;
  for (int b = 0; b < p->nblocks; b++) {
    pd_block *blk = p->blocks[b];
    for (int i = 0; i < blk->nops; i++) {
      const char *u, *h0, *w, *act, *out;
      if (!pd_opdef_is(blk->ops[i], PD_OP_recurrent)) continue;
      bool done;
      pd_status st = elman_cell(p, blk, blk->ops[i], &u, &h0, &w, &act, &out)
                         ? fuse_loop(blk, i, u, h0, w, act, out, &done, err)
                         : pd_fuse_gated_loop(p, blk, i, &done, err);
      if (st) return st;
      if (done && fused) (*fused)++;
    }
  }
  return PD_OK;
}
