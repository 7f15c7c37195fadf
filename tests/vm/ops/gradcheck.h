/* gradcheck.h -- the finite-difference gradient test every differentiable op gets. Given an rt
 * (tests/vm/ops/runop.h) holding one forward op over fp64 inputs, it
 *   1. runs the op, and weighs its outputs with fixed pseudo-random weights w:
 *      L = sum_o sum_j w_oj * out_oj over the chosen output slots;
 *   2. runs the op's gradient op (<type>_grad, built the way the backward pass builds it:
 *      gc_add_grad_op) in a sub-block of the program, so the forward op is not rerun;
 *   3. compares each gradient element with the central difference (L(x+h) - L(x-h)) / 2h,
 *      h = 1e-6 * max(1, |x|), by relative error max(1, |numeric|) (default tolerance 1e-6).
 * One TAP line per gradient compared. Inputs must be away from kinks (relu at 0, ties of max).
 *
 *     rt r; rt_init(&r);
 *     rt_in_f64(&r, "x", "[2, 3]", xs); rt_in_f64(&r, "y", "[3, 4]", ys);
 *     rt_op(&r, "mul", "X=x Y=y", "Out=o");
 *     grad_check(&r, "X Y", "Out", "mul");
 *     rt_free(&r); */
#ifndef PD_TESTS_OPS_GRADCHECK_H
#define PD_TESTS_OPS_GRADCHECK_H

#include "tests/vm/ops/runop.h"

/* Deterministic weights in [-1, 1) (an LCG; the same for every run). */
static inline double gc_weight_(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / 9007199254740992.0 * 2 - 1;
}

/* L for the current values in r's scope after a forward run: sum over output slots `outs`
 * ("Out" or "Loss Softmax": space-separated slot names) of sum(w * out). */
static inline double gc_loss_(rt *r, const pd_op_desc *op, const char *outs) {
  double L = 0;
  uint64_t seed = 42;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", outs);
  for (char *sv = NULL, *slot = strtok_r(buf, " ", &sv); slot; slot = strtok_r(NULL, " ", &sv)) {
    const pd_slot *s = pd_op_output(op, slot);
    for (int a = 0; s && a < s->nargs; a++) {
      const pd_tensor *t = rt_get(r, s->args[a]);
      if (!t || t->dtype != PD_FP64) bail("gradcheck: an output is not an fp64 tensor");
      for (int64_t j = 0; j < pd_tensor_numel(t); j++) L += gc_weight_(&seed) * PD_TENSOR_F64(t)[j];
    }
  }
  return L;
}

/* The gradient op of r's last op, as the backward pass builds it, in a new block (a child of
 * block 0: it runs in a child scope of the forward's): every forward input and output bound,
 * Out@GRAD = fixed pseudo-random weights for the output slots `outs` (in block 0 and r's scope),
 * X@GRAD outputs (in the new block) for the input slots `wrt`. Returns the new block's index. */
static inline int gc_add_grad_op(rt *r, const char *wrt, const char *outs) {
  pd_op_desc *fwd = r->op;
  pd_block *b0 = r->f.b;
  pd_block *b1 = pd_program_add_block(r->f.p, 0);
  char gtype[96];
  snprintf(gtype, sizeof gtype, "%s_grad", fwd->type);
  pd_op_desc *g = b1 ? pd_block_add_op(b1, gtype, -1) : NULL;
  if (!g || pd_op_set_loc(g, fwd->loc)) bail("out of memory");
  for (int i = 0; i < fwd->nattrs; i++) /* as the backward pass does */
    if (pd_op_set_attr(g, &fwd->attrs[i])) bail("out of memory");
  for (int s = 0; s < fwd->ninputs; s++)
    if (pd_op_set_input(g, fwd->inputs[s].param, fwd->inputs[s].nargs,
                        (const char *const *)fwd->inputs[s].args))
      bail("out of memory");
  for (int s = 0; s < fwd->noutputs; s++)
    if (pd_op_set_input(g, fwd->outputs[s].param, fwd->outputs[s].nargs,
                        (const char *const *)fwd->outputs[s].args))
      bail("out of memory");
  char buf[256], slot[128];
  uint64_t seed = 42;
  snprintf(buf, sizeof buf, "%s", outs);
  for (char *sv = NULL, *o = strtok_r(buf, " ", &sv); o; o = strtok_r(NULL, " ", &sv)) {
    const pd_slot *s = pd_op_output(fwd, o);
    if (!s) bail("gradcheck: no such output slot");
    if (s->nargs > 16) bail("gradcheck: more than 16 vars in a slot");
    const char *gnames[16];
    char gstore[16][128];
    for (int a = 0; a < s->nargs; a++) {
      const pd_tensor *t = rt_get(r, s->args[a]);
      if (!t || (t->dtype != PD_FP64 && t->dtype != PD_FP32))
        bail("gradcheck: an output weighed has no float value");
      snprintf(gstore[a], sizeof gstore[a], "%s@GRAD", s->args[a]);
      gnames[a] = gstore[a];
      pd_var_desc *vd = pd_block_var(b0, gstore[a]);
      pd_var_desc *fv = pd_block_find_var(b0, s->args[a]);
      if (!vd || !fv || pd_var_set_shape(vd, fv->ndims, fv->dims)) bail("out of memory");
      vd->dtype = t->dtype;
      pd_tensor *w = pd_var_tensor(pd_scope_var(r->scope, gstore[a]));
      if (!w || pd_tensor_resize(w, t->dtype, t->ndims, t->dims) || pd_tensor_copy_lod(w, t))
        bail("out of memory");
      for (int64_t j = 0; j < pd_tensor_numel(w); j++) {
        double v = gc_weight_(&seed);
        if (t->dtype == PD_FP64) PD_TENSOR_F64(w)[j] = v;
        else PD_TENSOR_F32(w)[j] = (float)v;
      }
    }
    snprintf(slot, sizeof slot, "%s@GRAD", o);
    if (pd_op_set_input(g, slot, s->nargs, gnames)) bail("out of memory");
  }
  snprintf(buf, sizeof buf, "%s", wrt);
  for (char *sv = NULL, *x = strtok_r(buf, " ", &sv); x; x = strtok_r(NULL, " ", &sv)) {
    const pd_slot *s = pd_op_input(fwd, x);
    if (!s) bail("gradcheck: no such input slot");
    if (s->nargs > 16) bail("gradcheck: more than 16 vars in a slot");
    const char *gnames[16];
    char gstore[16][128];
    for (int a = 0; a < s->nargs; a++) {
      snprintf(gstore[a], sizeof gstore[a], "%s@GRAD", s->args[a]);
      gnames[a] = gstore[a];
      if (!pd_block_var(b1, gstore[a])) bail("out of memory");
    }
    snprintf(slot, sizeof slot, "%s@GRAD", x);
    if (pd_op_set_output(g, slot, s->nargs, gnames)) bail("out of memory");
  }
  return b1->idx;
}

/* Returns whether every gradient matched. */
#define grad_check(r, wrt, outs, what) grad_check_tol((r), (wrt), (outs), 1e-6, (what))
#define grad_check_tol(r, wrt, outs, tol, what) \
  grad_check_((r), (wrt), (outs), (tol), (what), __LINE__)

static inline bool grad_check_(rt *r, const char *wrt, const char *outs, double tol,
                               const char *what, int line) {
  pd_op_desc *fwd = r->op;
  /* 1. Forward. */
  pd_error_clear(&r->f.err);
  pd_status st = pd_opdef_prepare(fwd, r->f.b, &r->f.err);
  pd_exec *ex = NULL;
  if (!st) st = pd_exec_new(r->f.p, NULL, &ex, &r->f.err);
  if (!st) st = pd_exec_run_block(ex, 0, r->scope, &r->f.err);
  pd_exec_free(ex);
  ex = NULL;
  if (st) {
    tap_ok_(0, __FILE__, line, "%s: forward runs", what);
    printf("#   %s\n", r->f.err.msg ? r->f.err.msg : pd_status_str(st));
    return false;
  }
  /* 2. The gradient op in a block of its own: Out@GRAD = w for the chosen outputs. */
  int gb = gc_add_grad_op(r, wrt, outs);
  pd_op_desc *g = pd_program_block(r->f.p, gb)->ops[0];
  st = pd_opdef_prepare(g, pd_program_block(r->f.p, gb), &r->f.err);
  if (!st) st = pd_exec_new(r->f.p, NULL, &ex, &r->f.err);
  pd_scope *gscope = st ? NULL : pd_scope_new(r->scope);
  if (!st && !gscope) bail("out of memory");
  if (!st) st = pd_exec_run_block(ex, gb, gscope, &r->f.err);
  if (st) {
    tap_ok_(0, __FILE__, line, "%s: %s runs", what, g->type);
    printf("#   %s\n", r->f.err.msg ? r->f.err.msg : pd_status_str(st));
    pd_exec_free(ex);
    return false;
  }
  char buf[256], name[128];
  /* 3. Central differences, one input element at a time (rerunning block 0: the forward op). */
  bool all_passed = true;
  snprintf(buf, sizeof buf, "%s", wrt);
  for (char *sv = NULL, *x = strtok_r(buf, " ", &sv); x; x = strtok_r(NULL, " ", &sv)) {
    const pd_slot *s = pd_op_input(fwd, x);
    for (int a = 0; a < s->nargs; a++) {
      snprintf(name, sizeof name, "%s@GRAD", s->args[a]);
      pd_variable *gv = pd_scope_find_local_var(gscope, name);
      const pd_tensor *gt = gv && gv->type == PD_VAR_LOD_TENSOR ? &gv->u.tensor : NULL;
      pd_variable *xv = pd_scope_find_var(r->scope, s->args[a]);
      pd_tensor *xt = xv ? pd_var_tensor(xv) : NULL;
      if (!xt || xt->dtype != PD_FP64) bail("gradcheck: inputs must be fp64 tensors");
      int64_t n = pd_tensor_numel(xt);
      bool shaped = gt && pd_tensor_initialized(gt) && gt->dtype == PD_FP64 &&
                    gt->ndims == xt->ndims && pd_tensor_numel(gt) == n;
      for (int k = 0; shaped && k < xt->ndims; k++) shaped = gt->dims[k] == xt->dims[k];
      double worst = 0, gw = 0, nw = 0;
      int64_t at = -1;
      for (int64_t j = 0; shaped && j < n; j++) {
        double *p = &PD_TENSOR_F64(xt)[j], x0 = *p, h = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1);
        *p = x0 + h;
        st = pd_exec_run_block(ex, 0, r->scope, &r->f.err);
        double lp = st ? 0 : gc_loss_(r, fwd, outs);
        *p = x0 - h;
        if (!st) st = pd_exec_run_block(ex, 0, r->scope, &r->f.err);
        double lm = st ? 0 : gc_loss_(r, fwd, outs);
        *p = x0;
        if (st) break;
        double num = (lp - lm) / (2 * h), ana = PD_TENSOR_F64(gt)[j];
        double rel = fabs(num - ana) / (fabs(num) > 1 ? fabs(num) : 1);
        if (!(rel <= worst)) {
          worst = rel;
          at = j;
          gw = ana;
          nw = num;
        }
      }
      bool pass = shaped && !st && worst <= tol;
      all_passed = all_passed && pass;
      if (!tap_ok_(pass, __FILE__, line, "%s: d/d%s (%s) matches finite differences", what,
                   x, s->args[a])) {
        if (!shaped) printf("#   %s has no fp64 value of %s's shape\n", name, s->args[a]);
        else if (st) printf("#   rerun failed: %s\n", r->f.err.msg ? r->f.err.msg : "");
        else printf("#   element %lld: analytic %.12g, numeric %.12g (rel %.3g)\n",
                    (long long)at, gw, nw, worst);
      }
    }
  }
  pd_exec_free(ex);
  /* Restore the forward values (the last rerun used x - h). */
  if (pd_exec_new(r->f.p, NULL, &ex, &r->f.err) == PD_OK) pd_exec_run_block(ex, 0, r->scope, NULL);
  pd_exec_free(ex);
  return all_passed;
}

#endif /* PD_TESTS_OPS_GRADCHECK_H */
