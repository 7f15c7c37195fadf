/* fuse_fc.c -- mul + elementwise_add (a bias) becomes one fc op (see vm/passes/fuse_fc.h). */
#include "config.h"
#include "vm/passes/fuse_fc.h"

#include <string.h>

#include "vm/ops/ops.h"

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static int64_t int_attr(const pd_op_desc *op, const char *name, int64_t def) {
  const pd_attr *a = pd_op_attr(op, name);
  if (!a) return def;
  return a->type == PD_ATTR_INT ? a->v.i : a->type == PD_ATTR_LONG ? a->v.l : def;
}

/* The one var bound to a slot, or NULL when it has not exactly one. */
static const char *one(const pd_slot *s) {
  return s && s->nargs == 1 && strcmp(s->args[0], PD_EMPTY_VAR_NAME) != 0 ? s->args[0] : NULL;
}

/* How many times ops of p name var (as an input or an output), in any block. */
static int uses(const pd_program *p, const char *var) {
  int n = 0;
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      const pd_op_desc *op = p->blocks[b]->ops[i];
      for (int s = 0; s < op->ninputs; s++)
        for (int a = 0; a < op->inputs[s].nargs; a++) n += is(op->inputs[s].args[a], var);
      for (int s = 0; s < op->noutputs; s++)
        for (int a = 0; a < op->outputs[s].nargs; a++) n += is(op->outputs[s].args[a], var);
    }
  return n;
}

/* Do ops i (mul) and i + 1 (elementwise_add) of block 0 have the shape of fuse_fc.h? Their
 * operands in *x, *w, *b, *out, the product in *a, x_num_col_dims in *ncd. */
static bool attr_set(const pd_op_desc *op, const char *name) {
  const pd_attr *a = pd_op_attr(op, name);
  return a && a->type == PD_ATTR_BOOLEAN && a->v.b;
}

static bool fc_pair(const pd_program *p, const pd_block *blk, int i, bool matmul,
                    const char **x, const char **w, const char **b, const char **a,
                    const char **out, int64_t *ncd) {
  const pd_op_desc *m = blk->ops[i], *add = blk->ops[i + 1];
  bool v1 = matmul && pd_opdef_is(m, PD_OP_matmul);
  bool mm = v1 || (matmul && pd_opdef_is(m, PD_OP_matmul_v2));
  if ((!pd_opdef_is(m, PD_OP_mul) && !mm) || !pd_opdef_is(add, PD_OP_elementwise_add))
    return false;
  *x = one(pd_op_input(m, "X"));
  *w = one(pd_op_input(m, "Y"));
  *a = one(pd_op_output(m, "Out"));
  *b = one(pd_op_input(add, "Y"));
  *out = one(pd_op_output(add, "Out"));
  *ncd = int_attr(m, "x_num_col_dims", 1);
  if (mm) { /* X [..., K] @ W [K, N], no transposes (nor a scale): X's leading dims the rows */
    const pd_var_desc *xd = *x ? pd_block_find_var(blk, *x) : NULL;
    const pd_attr *alpha = v1 ? pd_op_attr(m, "alpha") : NULL;
    if (!xd || xd->ndims < 2 || attr_set(m, v1 ? "transpose_X" : "trans_x") ||
        attr_set(m, v1 ? "transpose_Y" : "trans_y") ||
        (alpha && (alpha->type != PD_ATTR_FLOAT || alpha->v.f != 1.0f)))
      return false;
    *ncd = xd->ndims - 1;
  }
  if (!*x || !*w || !*a || !*b || !*out || !is(one(pd_op_input(add, "X")), *a) ||
      (!mm && int_attr(m, "y_num_col_dims", 1) != 1) || is(*out, *x) || is(*out, *w) ||
      is(*out, *b) || is(*out, *a) || is(*a, *x) || is(*a, *w) || is(*a, *b))
    return false;
  const pd_var_desc *ad = pd_block_find_var_local(blk, *a), *wd = pd_block_find_var(blk, *w);
  const pd_var_desc *bd = pd_block_find_var(blk, *b);
  if (!ad || ad->persistable || !wd || wd->ndims != 2 || !bd || ad->ndims != *ncd + 1)
    return false;
  int64_t n = wd->dims[1], axis = int_attr(add, "axis", -1);
  bool bias = (bd->ndims == 1 && bd->dims[0] == n) ||
              (bd->ndims == 2 && bd->dims[0] == 1 && bd->dims[1] == n);
  /* A [1, N] bias broadcasts along the trailing dims only with axis -1. */
  if (!bias || n < 0 || !(axis == -1 || (axis == *ncd && bd->ndims == 1))) return false;
  return uses(p, *a) == 2;
}

/* Replace ops at and at + 1 of blk by one fc op; *done when it was (the checks of its def may
 * refuse it, and the pair then stays). */
static pd_status fuse_pair(pd_block *blk, int at, const char *x, const char *w, const char *b,
                           const char *a, const char *out, int64_t ncd, bool *done,
                           pd_error *err) {
  *done = false;
  pd_op_desc *f = pd_block_add_op(blk, "fc", at + 2);
  if (!f || pd_op_copy_loc(f, blk->ops[at + 1]) || pd_op_set_input(f, "Input", 1, &x) ||
      pd_op_set_input(f, "W", 1, &w) || pd_op_set_input(f, "Bias", 1, &b) ||
      pd_op_set_output(f, "Out", 1, &out) ||
      pd_op_set_attr_int(f, "in_num_col_dims", (int32_t)ncd))
    goto nomem;
  pd_error e = {0};
  pd_status st = pd_opdef_prepare(f, blk, &e);
  pd_error_clear(&e);
  if (st == PD_ENOMEM) goto nomem;
  if (st) {
    pd_block_remove_op(blk, at + 2);
    return PD_OK;
  }
  char *keep = pd_strdup(a);
  if (!keep) goto nomem;
  pd_block_remove_op(blk, at + 1);
  pd_block_remove_op(blk, at);
  pd_block_remove_var(blk, keep);
  pd_free(keep);
  *done = true;
  return PD_OK;
nomem:
  return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
}

pd_status pd_program_fuse_fc(pd_program *p, int *fused, pd_error *err) {
  return pd_program_fuse_fc_ex(p, false, fused, err);
}

pd_status pd_program_fuse_fc_ex(pd_program *p, bool matmul, int *fused, pd_error *err) {
  if (fused) *fused = 0;
  if (p->nblocks == 0) return PD_OK;
  for (int b = 0; b < p->nblocks; b++)
    if (p->blocks[b]->forward_block_idx >= 0) return PD_OK;
  pd_block *blk = p->blocks[0];
  for (int i = 0; i + 1 < blk->nops; i++) {
    const char *x, *w, *b, *a, *out;
    int64_t ncd;
    if (!fc_pair(p, blk, i, matmul, &x, &w, &b, &a, &out, &ncd)) continue;
    bool done;
    pd_status st = fuse_pair(blk, i, x, w, b, a, out, ncd, &done, err);
    if (st) return st;
    if (done && fused) (*fused)++;
  }
  return PD_OK;
}
