/* data_parallel.c -- the collective ops of data-parallel training inserted into the startup and
 * training programs (see vm/passes/data_parallel.h). */
#include "config.h"
#include "vm/passes/data_parallel.h"

#include <stdlib.h>
#include <string.h>

#include "vm/ops/ops.h"

static bool writes(const pd_op_desc *op, const char *var) {
  for (int s = 0; s < op->noutputs; s++)
    for (int a = 0; a < op->outputs[s].nargs; a++)
      if (strcmp(op->outputs[s].args[a], var) == 0) return true;
  return false;
}

/* An op X -> Out in place on var, inserted before pos (-1: appended), checked and shaped. */
static pd_op_desc *add_op(pd_block *b, const char *type, const char *var, int pos, int role,
                          pd_loc loc, pd_error *err, pd_status *st) {
  pd_op_desc *op = pd_block_add_op(b, type, pos);
  if (!op || pd_op_set_input(op, "X", 1, &var) || pd_op_set_output(op, "Out", 1, &var) ||
      pd_op_set_loc(op, loc) || pd_op_set_attr_int(op, "op_role", role) ||
      (strcmp(type, "scale") != 0 && pd_op_set_attr_int(op, "ring_id", 0))) {
    *st = pd_error_set(err, PD_ENOMEM, loc, "out of memory");
    return NULL;
  }
  return op;
}

/* Whether op starts the backward pass: cost@GRAD = 1 (op_role backward | loss). */
static bool loss_grad_op(const pd_op_desc *op) {
  const pd_attr *a = pd_op_attr(op, "op_role");
  int want = PD_OP_ROLE_BACKWARD | PD_OP_ROLE_LOSS;
  return a && a->type == PD_ATTR_INT && (a->v.i & want) == want && op->noutputs > 0 &&
         op->outputs[0].nargs == 1;
}

/* The loss gradient scaled by 1 / nranks right after the op that sets it, so that the sums of
 * the gradients are their means (every gradient is linear in it). */
static pd_status scale_loss_grad(pd_block *b, int nranks, pd_loc loc, pd_error *err) {
  for (int i = b->nops - 1; i >= 0; i--) {
    if (!loss_grad_op(b->ops[i])) continue;
    pd_status st = PD_OK;
    pd_op_desc *op = add_op(b, "scale", b->ops[i]->outputs[0].args[0], i + 1,
                            PD_OP_ROLE_BACKWARD, loc, err, &st);
    if (!op || pd_op_set_attr_float(op, "scale", (float)(1.0 / nranks)))
      return st ? st : pd_error_set(err, PD_ENOMEM, loc, "out of memory");
    return pd_opdef_prepare(op, b, err);
  }
  return pd_error_set(err, PD_EINVAL, loc, "data parallel: no op sets the cost's gradient "
                      "(op_role backward | loss)");
}

typedef struct placed {
  int pos;   /* the index of the op that makes the gradient final */
  int k;     /* the pair */
} placed;

static int by_pos(const void *a, const void *b) {
  const placed *x = a, *y = b;
  return x->pos != y->pos ? (x->pos > y->pos) - (x->pos < y->pos) : (x->k > y->k) - (x->k < y->k);
}

pd_status pd_program_data_parallel(pd_program *p, const pd_backward *bwd, int nranks, pd_loc loc,
                                   pd_error *err) {
  pd_block *b = p->blocks[0];
  int n = bwd->n;
  placed *pl = pd_malloc(sizeof *pl * (size_t)(n ? n : 1));
  const char **names = pd_malloc(sizeof *names * (size_t)(n ? n : 1));
  pd_status st = PD_OK;
  if (!pl || !names) {
    st = pd_error_set(err, PD_ENOMEM, loc, "out of memory");
    goto out;
  }
  if ((st = scale_loss_grad(b, nranks, loc, err))) goto out;
  for (int k = 0; k < n; k++) {
    pl[k] = (placed){-1, k};
    for (int i = b->nops - 1; i >= 0 && pl[k].pos < 0; i--)
      if (writes(b->ops[i], bwd->pairs[k].grad)) pl[k].pos = i;
    if (pl[k].pos < 0) {
      st = pd_error_set(err, PD_EINVAL, loc, "data parallel: no op computes the gradient '%s' of "
                        "'%s'", bwd->pairs[k].grad, bwd->pairs[k].param);
      goto out;
    }
  }
  qsort(pl, (size_t)n, sizeof *pl, by_pos);
  /* From the last position back, so that the earlier positions stay valid; at one position the
   * pairs go in ascending order (each inserted before the previous one). */
  for (int j = n - 1; j >= 0; j--) {
    pd_op_desc *op = add_op(b, "c_allreduce_sum", bwd->pairs[pl[j].k].grad, pl[j].pos + 1,
                            PD_OP_ROLE_BACKWARD, loc, err, &st);
    if (!op || pd_op_set_attr_bool(op, "use_calc_stream", false)) {
      if (!st) st = pd_error_set(err, PD_ENOMEM, loc, "out of memory");
      goto out;
    }
    if ((st = pd_opdef_prepare(op, b, err))) goto out;
  }
  for (int j = 0; j < n; j++) names[j] = bwd->pairs[pl[j].k].grad;
  pd_op_desc *sync = pd_block_add_op(b, "c_sync_comm_stream", -1);
  if (!sync || pd_op_set_input(sync, "X", n, names) || pd_op_set_output(sync, "Out", n, names) ||
      pd_op_set_loc(sync, loc) || pd_op_set_attr_int(sync, "op_role", PD_OP_ROLE_BACKWARD) ||
      pd_op_set_attr_int(sync, "ring_id", 0)) {
    st = pd_error_set(err, PD_ENOMEM, loc, "out of memory");
    goto out;
  }
  st = pd_opdef_prepare(sync, b, err);
out:
  pd_free(pl);
  pd_free(names);
  return st;
}

pd_status pd_program_broadcast_params(pd_program *startup, pd_loc loc, pd_error *err) {
  pd_block *b = startup->blocks[0];
  int nops = b->nops;
  pd_status st = PD_OK;
  for (int v = 0; v < b->nvars; v++) {
    const pd_var_desc *var = b->vars[v];
    if (!var->persistable) continue;
    bool written = false;
    for (int i = 0; i < nops && !written; i++) written = writes(b->ops[i], var->name);
    if (!written) continue;
    pd_op_desc *op = add_op(b, "c_broadcast", var->name, -1, PD_OP_ROLE_FORWARD, loc, err, &st);
    if (!op || pd_op_set_attr_int(op, "root", 0) ||
        pd_op_set_attr_bool(op, "use_calc_stream", true)) {
      if (!st) st = pd_error_set(err, PD_ENOMEM, loc, "out of memory");
      return st;
    }
    if ((st = pd_opdef_prepare(op, b, err))) return st;
  }
  return PD_OK;
}
