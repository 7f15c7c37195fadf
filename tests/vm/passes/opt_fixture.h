/* opt_fixture.h -- what the optimizer tests (test_optimizer.c, test_optimizer_more.c) share: two
 * fp64 parameters with fixed gradients run through the optimizer pass's ops, and a check of the
 * three values they end with against values computed by hand. */
#ifndef PD_TESTS_VM_OPT_FIXTURE_H
#define PD_TESTS_VM_OPT_FIXTURE_H

#include <math.h>
#include <stdio.h>

#include "tests/tap.h"
#include "vm/ir/program.h"
#include "vm/passes/optimizer.h"
#include "vm/run/exec.h"

/* Two parameters p = [1, 2] and q = [3] with given gradients gp = [0.5, -1], gq = [2]. The
 * program holds just the update; the gradients are set in the scope as the backward pass would
 * leave them. Runs `steps` updates and leaves p, q in the returned values. */
static bool run_opt(const pd_optimizer *o, int steps, double *p_out, double *q_out) {
  pd_program *main = pd_program_new(), *init = pd_program_new();
  pd_block *b = main->blocks[0];
  const char *names[4] = {"p", "q", "p@GRAD", "q@GRAD"};
  int64_t dims[4] = {2, 1, 2, 1};
  for (int i = 0; i < 4; i++) {
    pd_var_desc *v = pd_block_var(b, names[i]);
    pd_var_set_shape(v, 1, &dims[i]);
    v->dtype = PD_FP64;
    v->persistable = i < 2;
  }
  pd_param_grad pairs[2] = {{"p", "p@GRAD"}, {"q", "q@GRAD"}};
  pd_backward pg = {2, pairs};
  pd_error err = {0};
  pd_status st = pd_append_optimizer(main, init, &pg, o, (pd_loc){"t.pd", 1, 1}, &err);
  pd_scope *g = pd_scope_new(NULL);
  double pv[2] = {1, 2}, qv[1] = {3}, gpv[2] = {0.5, -1}, gqv[1] = {2};
  pd_tensor_set_data(pd_var_tensor(pd_scope_var(g, "p")), PD_FP64, 1, &dims[0], pv);
  pd_tensor_set_data(pd_var_tensor(pd_scope_var(g, "q")), PD_FP64, 1, &dims[1], qv);
  pd_tensor_set_data(pd_var_tensor(pd_scope_var(g, "p@GRAD")), PD_FP64, 1, &dims[0], gpv);
  pd_tensor_set_data(pd_var_tensor(pd_scope_var(g, "q@GRAD")), PD_FP64, 1, &dims[1], gqv);
  pd_exec *ex = NULL;
  if (!st) st = pd_exec_new(init, NULL, &ex, &err);
  if (!st) st = pd_exec_run_block(ex, 0, g, &err);
  pd_exec_free(ex);
  ex = NULL;
  if (!st) st = pd_exec_new(main, NULL, &ex, &err);
  for (int i = 0; i < steps && !st; i++) st = pd_exec_run_block(ex, 0, g, &err);
  if (st) printf("# %s\n", err.msg ? err.msg : pd_status_str(st));
  else {
    const pd_tensor *p = &pd_scope_find_var(g, "p")->u.tensor;
    const pd_tensor *q = &pd_scope_find_var(g, "q")->u.tensor;
    p_out[0] = PD_TENSOR_F64(p)[0];
    p_out[1] = PD_TENSOR_F64(p)[1];
    q_out[0] = PD_TENSOR_F64(q)[0];
  }
  pd_exec_free(ex);
  pd_scope_free(g);
  pd_program_free(main);
  pd_program_free(init);
  pd_error_clear(&err);
  return st == PD_OK;
}

static void expect3(const double *got_p, const double *got_q, const double *want, const char *what) {
  bool pass = true;
  double got[3] = {got_p[0], got_p[1], got_q[0]};
  for (int i = 0; i < 3; i++) pass = pass && fabs(got[i] - want[i]) <= 1e-6 * (1 + fabs(want[i]));
  if (!ok(pass, "%s", what))
    printf("#   got [%.9g, %.9g, %.9g], want [%.9g, %.9g, %.9g]\n", got[0], got[1], got[2], want[0],
           want[1], want[2]);
}

#endif /* PD_TESTS_VM_OPT_FIXTURE_H */
