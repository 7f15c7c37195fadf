/* amp.c -- the mixed-precision pass (vm/passes/amp.h): the AMP ops marked for bf16 or fp16, and
 * fp16's loss scaling (the scaled cost, the unscaling and the scale's update, the updates run only
 * on finite gradients). */
#include "config.h"
#include "vm/passes/amp.h"

#include <stdio.h>

#include "vm/ops/ops.h"

pd_status pd_program_amp(pd_program *p, pd_dtype lp, int *count, pd_error *err) {
  if (count) *count = 0;
  if (lp != PD_BF16 && lp != PD_FP16)
    return pd_error_set(err, PD_EINVAL, (pd_loc){0}, "mixed precision is bf16 or fp16, not %s",
                        pd_dtype_name(lp));
  const char *name = lp == PD_BF16 ? "bfloat16" : "float16";
  for (int b = 0; b < p->nblocks; b++) {
    pd_block *blk = p->blocks[b];
    for (int i = 0; i < blk->nops; i++) {
      pd_op_desc *op = blk->ops[i];
      const pd_opdef *d = pd_opdef_of(op);
      if (!d || !(d->flags & PD_OPF_AMP)) continue;
      if (pd_op_set_attr_string(op, "mkldnn_data_type", name))
        return pd_error_set(err, PD_ENOMEM, op->loc, "out of memory");
      if (count) (*count)++;
    }
  }
  return PD_OK;
}

void pd_amp_scaling_defaults(pd_amp_scaling *s) {
  *s = (pd_amp_scaling){.loss_scale = 32768, .dynamic = true, .incr_every_n_steps = 1000,
                        .decr_every_n_nan_or_inf = 2, .incr_ratio = 2.0, .decr_ratio = 0.8};
}

static pd_status oom(pd_error *err, pd_loc loc) {
  return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
}

/* Finish an op appended by this pass: its location, Fluid's op_role, the checks and shapes. */
static pd_status finish(pd_op_desc *op, pd_block *b, int role, pd_loc loc, pd_error *err) {
  if (!op || pd_op_set_loc(op, loc) || pd_op_set_attr_int(op, "op_role", role))
    return oom(err, loc);
  return pd_opdef_prepare(op, b, err);
}

/* A new var of block b; PD_EINVAL when the program already has one of that name. */
static pd_status new_var(pd_block *b, const char *name, pd_dtype dt, bool persistable,
                         pd_loc loc, pd_var_desc **out, pd_error *err) {
  if (pd_program_has_var_name(b->program, name))
    return pd_error_set(err, PD_EINVAL, loc, "fp16 loss scaling adds a var '%s', and the "
                        "program already has one: rename it", name);
  int64_t one = 1;
  pd_var_desc *v = pd_block_var(b, name);
  if (!v || pd_var_set_shape(v, 1, &one)) return oom(err, loc);
  v->dtype = dt;
  v->persistable = persistable;
  v->stop_gradient = true;
  *out = v;
  return PD_OK;
}

/* A persistable state var [1] of p's block 0 and init's, which a fill_constant of init sets. */
static pd_status state(pd_program *p, pd_program *init, const char *name, pd_dtype dt,
                       double value, pd_loc loc, pd_error *err) {
  pd_var_desc *v;
  pd_status st;
  if ((st = new_var(p->blocks[0], name, dt, true, loc, &v, err)) ||
      (st = new_var(init->blocks[0], name, dt, true, loc, &v, err)))
    return st;
  int64_t one = 1;
  pd_op_desc *op = pd_block_add_op(init->blocks[0], "fill_constant", -1);
  if (!op || pd_op_set_output(op, "Out", 1, &name) || pd_op_set_attr_longs(op, "shape", 1, &one) ||
      pd_op_set_attr_float(op, "value", (float)value) || pd_op_set_attr_int(op, "dtype", (int)dt))
    return oom(err, loc);
  return finish(op, init->blocks[0], PD_OP_ROLE_OPTIMIZE, loc, err);
}

pd_status pd_amp_scale_loss(pd_program *p, pd_program *init, const char *cost,
                            const pd_amp_scaling *s, pd_loc loc, const char **scaled_cost,
                            pd_error *err) {
  *scaled_cost = NULL;
  pd_block *b0 = p->blocks[0];
  const pd_var_desc *cv = pd_block_find_var_local(b0, cost);
  if (!cv) return pd_error_set(err, PD_ENOTFOUND, loc, "no var '%s' to scale", cost);
  pd_dtype dt = cv->dtype;
  pd_status st;
  if ((st = state(p, init, PD_AMP_SCALE_VAR, dt, s->loss_scale, loc, err))) return st;
  if (s->dynamic && ((st = state(p, init, PD_AMP_GOOD_VAR, PD_INT32, 0, loc, err)) ||
                     (st = state(p, init, PD_AMP_BAD_VAR, PD_INT32, 0, loc, err))))
    return st;
  char name[300];
  snprintf(name, sizeof name, "%s.scaled", cost);
  pd_var_desc *v;
  if ((st = new_var(b0, name, dt, false, loc, &v, err))) return st;
  v->stop_gradient = false;
  const char *sv = PD_AMP_SCALE_VAR, *out = v->name;
  pd_op_desc *op = pd_block_add_op(b0, "elementwise_mul", -1);
  if (!op || pd_op_set_input(op, "X", 1, &cost) || pd_op_set_input(op, "Y", 1, &sv) ||
      pd_op_set_output(op, "Out", 1, &out))
    return oom(err, loc);
  if ((st = finish(op, b0, PD_OP_ROLE_FORWARD | PD_OP_ROLE_LOSS, loc, err))) return st;
  *scaled_cost = out;
  return PD_OK;
}

pd_status pd_amp_unscale(pd_program *p, const pd_backward *bwd, const pd_amp_scaling *s,
                         pd_loc loc, pd_error *err) {
  pd_block *b0 = p->blocks[0];
  const char **grads = pd_calloc((size_t)(bwd->n ? bwd->n : 1), sizeof *grads);
  if (!grads) return oom(err, loc);
  for (int i = 0; i < bwd->n; i++) grads[i] = bwd->pairs[i].grad;
  pd_var_desc *fv;
  const char *found = PD_AMP_FOUND_VAR, *sv = PD_AMP_SCALE_VAR, *good = PD_AMP_GOOD_VAR,
             *bad = PD_AMP_BAD_VAR;
  pd_status st = new_var(b0, found, PD_BOOL, false, loc, &fv, err);
  pd_op_desc *op = NULL;
  if (!st) {
    op = pd_block_add_op(b0, "check_finite_and_unscale", -1);
    if (!op || pd_op_set_input(op, "X", bwd->n, grads) || pd_op_set_input(op, "Scale", 1, &sv) ||
        pd_op_set_output(op, "Out", bwd->n, grads) ||
        pd_op_set_output(op, "FoundInfinite", 1, &found))
      st = oom(err, loc);
    else st = finish(op, b0, PD_OP_ROLE_OPTIMIZE, loc, err);
  }
  if (!st && s->dynamic) {
    op = pd_block_add_op(b0, "update_loss_scaling", -1);
    if (!op || pd_op_set_input(op, "X", bwd->n, grads) ||
        pd_op_set_input(op, "FoundInfinite", 1, &found) ||
        pd_op_set_input(op, "PrevLossScaling", 1, &sv) ||
        pd_op_set_input(op, "InGoodSteps", 1, &good) || pd_op_set_input(op, "InBadSteps", 1, &bad) ||
        pd_op_set_output(op, "Out", bwd->n, grads) || pd_op_set_output(op, "LossScaling", 1, &sv) ||
        pd_op_set_output(op, "OutGoodSteps", 1, &good) ||
        pd_op_set_output(op, "OutBadSteps", 1, &bad) ||
        pd_op_set_attr_int(op, "incr_every_n_steps", s->incr_every_n_steps) ||
        pd_op_set_attr_int(op, "decr_every_n_nan_or_inf", s->decr_every_n_nan_or_inf) ||
        pd_op_set_attr_float(op, "incr_ratio", (float)s->incr_ratio) ||
        pd_op_set_attr_float(op, "decr_ratio", (float)s->decr_ratio))
      st = oom(err, loc);
    else st = finish(op, b0, PD_OP_ROLE_OPTIMIZE, loc, err);
  }
  pd_free(grads);
  return st;
}

pd_status pd_amp_guard_updates(pd_program *p, int first, pd_loc loc, pd_error *err) {
  pd_block *b0 = p->blocks[0];
  pd_var_desc *ok, *scope;
  pd_status st;
  if ((st = new_var(b0, "find_infinite_scale.not_0", PD_BOOL, false, loc, &ok, err)) ||
      (st = new_var(b0, "find_infinite_scale.scope_0", PD_FP32, false, loc, &scope, err)))
    return st;
  scope->type = PD_VAR_STEP_SCOPES;
  const char *found = PD_AMP_FOUND_VAR, *okn = ok->name, *sn = scope->name;
  pd_op_desc *op = pd_block_add_op(b0, "logical_not", first);
  if (!op || pd_op_set_input(op, "X", 1, &found) || pd_op_set_output(op, "Out", 1, &okn))
    return oom(err, loc);
  if ((st = finish(op, b0, PD_OP_ROLE_OPTIMIZE, loc, err))) return st;
  first++;
  pd_block *sub = pd_program_add_block(p, 0);
  if (!sub) return oom(err, loc);
  b0 = p->blocks[0]; /* adding a block may move the array, not the blocks */
  while (b0->nops > first) {
    if (!pd_block_copy_op(sub, -1, b0->ops[first])) return oom(err, loc);
    pd_block_remove_op(b0, first);
  }
  op = pd_block_add_op(b0, "conditional_block", -1);
  if (!op || pd_op_set_input(op, "Cond", 1, &okn) || pd_op_set_input(op, "Input", 0, NULL) ||
      pd_op_set_output(op, "Out", 0, NULL) || pd_op_set_output(op, "Scope", 1, &sn) ||
      pd_op_set_attr_block(op, "sub_block", sub->idx) ||
      pd_op_set_attr_bool(op, "is_scalar_condition", true))
    return oom(err, loc);
  return finish(op, b0, PD_OP_ROLE_OPTIMIZE, loc, err);
}
