/* infershape_control.c -- shape functions of the control-flow ops (conditional_block, while,
 * recurrent). Their outputs are vars their sub-block writes, shaped by the compiler as it lowers
 * that block; what is checked here is the op itself: its sub_block is a child of the op's block,
 * and its condition or step inputs are what the VM will need at run time. */
#include "config.h"
#include "vm/ops/infershape.h"

#include <inttypes.h>

/* sub_block names a block of the program (not the global one) whose parent is the op's block. */
static pd_status check_sub_block(pd_infer_ctx *c) {
  int64_t idx = pd_infer_attr_int(c, "sub_block");
  const pd_program *p = c->block->program;
  const pd_block *sub = idx > 0 && idx < p->nblocks ? pd_program_block(p, (int)idx) : NULL;
  if (!pd_op_attr(c->op, "sub_block") || !sub)
    return pd_infer_fail(c, PD_EINVAL, "sub_block must name a block of the program other than block "
                         "0 (it has %d), got %" PRId64, p->nblocks, idx);
  if (sub->parent_idx != c->block->idx)
    return pd_infer_fail(c, PD_EINVAL, "sub_block %" PRId64 " has parent block %d, not the op's block %d",
                         idx, sub->parent_idx, c->block->idx);
  return PD_OK;
}

/* A condition var: bool, and, when `scalar`, one element. */
static pd_status check_cond(pd_infer_ctx *c, const char *slot, int i, bool scalar) {
  const pd_var_desc *v;
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, slot, i, &v, &d);
  if (st) return st;
  if (v->dtype != PD_BOOL)
    return pd_infer_fail(c, PD_ETYPE, "%s must be bool, got %s", slot, pd_dtype_name(v->dtype));
  int64_t n = pd_infer_dims_numel(&d);
  if (scalar && n >= 0 && n != 1)
    return pd_infer_fail(c, PD_ESHAPE, "%s must hold one element, got %s", slot,
                         pd_infer_dims_str(&d, s));
  return PD_OK;
}

/* conditional_block: runs sub_block when Cond holds (a one-element Cond with
 * is_scalar_condition; otherwise a per-row mask the compiler splits the rows by). */
pd_status pd_infer_conditional_block(pd_infer_ctx *c) {
  pd_status st = check_sub_block(c);
  if (st) return st;
  bool scalar = pd_infer_attr_bool(c, "is_scalar_condition");
  for (int i = 0; i < pd_infer_nin(c, "Cond"); i++)
    if ((st = check_cond(c, "Cond", i, scalar))) return st;
  return PD_OK;
}

/* while: runs sub_block while Condition (one bool) holds; the block updates Condition. */
pd_status pd_infer_while(pd_infer_ctx *c) {
  pd_status st = check_sub_block(c);
  if (st) return st;
  int n = pd_infer_nin(c, "Condition");
  if (n != 1) return pd_infer_fail(c, PD_EINVAL, "Condition takes one var, got %d", n);
  return check_cond(c, "Condition", 0, true);
}

/* recurrent: runs sub_block once per step of its `inputs` (split along dim 0, which must agree);
 * ex_states[i] holds states[i] of the previous step, initial_states[i] at the first step. */
pd_status pd_infer_recurrent(pd_infer_ctx *c) {
  pd_status st = check_sub_block(c);
  if (st) return st;
  int nex = pd_infer_attr_len(c, "ex_states"), nstates = pd_infer_attr_len(c, "states");
  int ninit = pd_infer_nin(c, "initial_states");
  if (nex != nstates)
    return pd_infer_fail(c, PD_EINVAL, "%d ex_states but %d states", nex, nstates);
  if (ninit != nex)
    return pd_infer_fail(c, PD_EINVAL, "%d ex_states but %d initial_states", nex, ninit);
  pd_infer_dims d0;
  char s0[PD_DIMS_BUF], si[PD_DIMS_BUF];
  if ((st = pd_infer_in(c, "inputs", 0, NULL, &d0))) return st;
  for (int i = 0; i < pd_infer_nin(c, "inputs"); i++) {
    pd_infer_dims d;
    if ((st = pd_infer_in(c, "inputs", i, NULL, &d))) return st;
    if (d.n == 0)
      return pd_infer_fail(c, PD_ESHAPE, "inputs[%d] has no dim to step along, got []", i);
    if (i > 0 && d.n > 0 && d0.n > 0 && !pd_infer_dim_compatible(d.d[0], d0.d[0]))
      return pd_infer_fail(c, PD_ESHAPE, "inputs[%d] %s has %" PRId64 " steps but inputs[0] %s has %"
                           PRId64, i, pd_infer_dims_str(&d, si), d.d[0],
                           pd_infer_dims_str(&d0, s0), d0.d[0]);
  }
  return PD_OK;
}

/* The mask of a row split: bool, [N, 1] or [N]. */
static pd_status row_mask(pd_infer_ctx *c, pd_infer_dims *m) {
  const pd_var_desc *mv;
  pd_status st = pd_infer_in(c, "Mask", 0, &mv, m);
  if (st) return st;
  if (mv->dtype != PD_BOOL || (m->n != 1 && m->n != 2) || (m->n == 2 && !pd_infer_dim_compatible(m->d[1], 1))) {
    char buf[PD_DIMS_BUF];
    return pd_infer_fail(c, PD_ETYPE, "Mask must be a bool tensor of shape [N, 1], got %s %s",
                         pd_dtype_name(mv->dtype), pd_infer_dims_str(m, buf));
  }
  return PD_OK;
}

/* split_lod_tensor: the rows of X where Mask is true, and the others; each has X's shape with an
 * unknown number of rows. */
pd_status pd_infer_split_lod_tensor(pd_infer_ctx *c) {
  const pd_var_desc *xv;
  pd_infer_dims x, m;
  pd_status st;
  if ((st = pd_infer_in(c, "X", 0, &xv, &x)) || (st = row_mask(c, &m))) return st;
  if (x.n >= 1 && !pd_infer_dim_compatible(x.d[0], m.d[0])) {
    char a[PD_DIMS_BUF], b[PD_DIMS_BUF];
    return pd_infer_fail(c, PD_ESHAPE, "X has %lld rows but Mask has %lld (%s and %s)",
                         (long long)x.d[0], (long long)m.d[0], pd_infer_dims_str(&x, a),
                         pd_infer_dims_str(&m, b));
  }
  if (x.n >= 1) x.d[0] = -1;
  if ((st = pd_infer_set_out(c, "OutTrue", 0, &x, xv->dtype, xv->lod_level))) return st;
  return pd_infer_set_out(c, "OutFalse", 0, &x, xv->dtype, xv->lod_level);
}

/* merge_lod_tensor: InTrue's and InFalse's rows interleaved back by Mask: their dims agree but the
 * first, and Out has as many rows as Mask. */
pd_status pd_infer_merge_lod_tensor(pd_infer_ctx *c) {
  const pd_var_desc *tv, *fv;
  pd_infer_dims t, f, m;
  pd_status st;
  if ((st = row_mask(c, &m)) || (st = pd_infer_in(c, "InTrue", 0, &tv, &t)) ||
      (st = pd_infer_in(c, "InFalse", 0, &fv, &f)))
    return st;
  if ((st = pd_infer_same_dtype(c, "InTrue", tv->dtype, "InFalse", fv->dtype))) return st;
  bool same = t.n < 0 || f.n < 0 || t.n == f.n;
  for (int i = 1; same && t.n > 0 && i < t.n && i < f.n; i++) same = pd_infer_dim_compatible(t.d[i], f.d[i]);
  if (!same) {
    char a[PD_DIMS_BUF], b[PD_DIMS_BUF];
    return pd_infer_fail(c, PD_ESHAPE, "InTrue %s and InFalse %s differ beyond the first dim",
                         pd_infer_dims_str(&t, a), pd_infer_dims_str(&f, b));
  }
  pd_infer_dims out = t.n >= 0 ? t : f;
  for (int i = 1; t.n > 0 && f.n > 0 && i < out.n; i++) out.d[i] = pd_infer_dim_merge(t.d[i], f.d[i]);
  if (out.n >= 1) out.d[0] = m.d[0];
  return pd_infer_set_out(c, "Out", 0, &out, tv->dtype, tv->lod_level);
}
