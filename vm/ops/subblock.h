/* subblock.h -- helpers of the ops that run sub-blocks (vm/ops/control.c, vm/ops/recurrent.c):
 * the scopes kept for the backward pass, the names of per-step values, the gradients a block
 * leaves. Internal to vm/ops; static inline. */
#ifndef PD_OPS_SUBBLOCK_H
#define PD_OPS_SUBBLOCK_H

#include "vm/ops/kern.h"

/* ---------------------------------------------------------------- helpers */

/* name = var + suffix ("h" + "@GRAD"), cut to fit in VAR_NAME bytes. No snprintf: the loop
 * kernels make these names several times an iteration, and formatting them took ~1% of an RNN
 * training step. */
#define VAR_NAME 512

static inline void suffixed(char name[VAR_NAME], const char *var, const char *suffix) {
  size_t n = strlen(var), m = strlen(suffix);
  if (n > VAR_NAME - 1) n = VAR_NAME - 1;
  if (m > VAR_NAME - 1 - n) m = VAR_NAME - 1 - n;
  memcpy(name, var, n);
  memcpy(name + n, suffix, m);
  name[n + m] = '\0';
}

/* A fresh scope for a block run, kept in the STEP_SCOPES var of output `slot`. With reset, the
 * var's earlier scopes (from an earlier run of the op in the same scope) are dropped first. */
static inline pd_status new_kept_scope(const pd_exec_ctx *ctx, const char *slot, bool reset,
                                pd_scope **out) {
  pd_variable *v = pd_ctx_out_var(ctx, slot, 0);
  if (!v) return pd_ctx_fail(ctx, PD_EINVAL, "output %s (the kept scopes) is not bound", slot);
  if (v->type != PD_VAR_UNSET && v->type != PD_VAR_STEP_SCOPES)
    return pd_ctx_fail(ctx, PD_ETYPE, "output %s (var '%s') is not a STEP_SCOPES variable", slot,
                       pd_var_name(v));
  if (reset) pd_var_clear_step_scopes(v);
  pd_status st = pd_var_new_step_scope(v, out);
  if (st) return pd_ctx_fail(ctx, st, "cannot create a scope for the block");
  return PD_OK;
}

static inline pd_tensor *step_tensor(pd_scope *scope, const char *name) {
  pd_variable *v = pd_scope_var(scope, name);
  return v ? pd_var_tensor(v) : NULL;
}

/* ---- Gradients. The gradient block of conditional_block_grad and recurrent_grad (vm/passes/backward.c) computes the
 * gradients of the forward op's inputs as vars of its own scope, named <var>@GRAD (or
 * <var>@GRAD@LOCAL when the block also writes <var>); the kernels run it in a child of each
 * scope the forward run kept and move those gradients out to the vars bound to their @GRAD
 * outputs. A gradient nothing computed is zero. */

/* The gradient of `var` computed in grad scope g (NULL when none). */
static inline const pd_tensor *inner_grad(pd_scope *g, const char *var) {
  char name[VAR_NAME];
  const char *suffix[2] = {"@GRAD@LOCAL", "@GRAD"};
  for (int i = 0; i < 2; i++) {
    suffixed(name, var, suffix[i]);
    pd_variable *v = pd_scope_find_local_var(g, name);
    if (v && v->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&v->u.tensor))
      return &v->u.tensor;
  }
  return NULL;
}

/* out shaped like `like` (with its LoD); its values are unset. */
static inline pd_status shape_like(const pd_exec_ctx *ctx, pd_tensor *out, const pd_tensor *like) {
  if (!like || !pd_tensor_initialized(like)) return PD_OK;
  pd_status st = pd_ctx_resize(ctx, out, like->dtype, like->ndims, like->dims);
  if (!st && like->nlod) st = pd_ctx_check(ctx, pd_tensor_copy_lod(out, like), "lod");
  return st;
}

/* out = zeros shaped like `like` (with its LoD). */
static inline pd_status zeros_like(const pd_exec_ctx *ctx, pd_tensor *out, const pd_tensor *like) {
  if (!like || !pd_tensor_initialized(like)) return PD_OK;
  pd_status st = shape_like(ctx, out, like);
  if (!st) st = pd_ctx_check(ctx, pd_tensor_fill(out, 0), "zero fill");
  return st;
}

#endif /* PD_OPS_SUBBLOCK_H */
