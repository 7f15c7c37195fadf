/* test_optimizer.c -- the optimizer pass (vm/passes/optimizer.h): the ops it appends update parameters
 * as computed by hand here -- sgd, momentum, adam with bias correction, L2 weight decay, and
 * clipping by global norm -- and the learning-rate schedules give the values of their formulas. */
#include <math.h>
#include <string.h>

#include "tests/tap.h"
#include "vm/run/exec.h"
#include "vm/passes/optimizer.h"
#include "vm/ir/program.h"

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

int main(void) {
  double p[2], q[1];
  pd_optimizer o;

  pd_optimizer_defaults(&o, PD_OPT_SGD, 0.1);
  ok(run_opt(&o, 2, p, q), "sgd runs");
  expect3(p, q, (double[]){1 - 2 * 0.05, 2 + 2 * 0.1, 3 - 2 * 0.2}, "sgd: two steps of p -= lr g");

  pd_optimizer_defaults(&o, PD_OPT_SGD, 0.1);
  o.weight_decay = 0.5;
  ok(run_opt(&o, 1, p, q), "sgd with weight decay runs");
  /* g' = g + 0.5 p: [1, 0], [3.5] */
  expect3(p, q, (double[]){1 - 0.1, 2, 3 - 0.35}, "weight decay: g + wd * p");

  pd_optimizer_defaults(&o, PD_OPT_SGD, 1.0);
  o.clip_norm = 1.0;
  ok(run_opt(&o, 1, p, q), "sgd with clipping runs");
  /* global norm sqrt(0.25 + 1 + 4) = sqrt(5.25); every gradient scaled by 1 / that */
  double s = 1 / sqrt(5.25);
  expect3(p, q, (double[]){1 - 0.5 * s, 2 + s, 3 - 2 * s}, "clip_norm: scaled to global norm 1");
  o.clip_norm = 10;
  run_opt(&o, 1, p, q);
  expect3(p, q, (double[]){0.5, 3, 1}, "clip_norm above the norm changes nothing");

  pd_optimizer_defaults(&o, PD_OPT_MOMENTUM, 0.1);
  o.mu = 0.9;
  ok(run_opt(&o, 2, p, q), "momentum runs");
  /* v1 = g, p1 = p - lr g; v2 = 0.9 g + g = 1.9 g, p2 = p1 - lr 1.9 g: p - 2.9 lr g */
  expect3(p, q, (double[]){1 - 0.29 * 0.5, 2 + 0.29, 3 - 0.29 * 2}, "momentum: two steps");

  pd_optimizer_defaults(&o, PD_OPT_ADAM, 0.01);
  ok(run_opt(&o, 2, p, q), "adam runs");
  /* Fluid's update, computed here step by step (beta1, beta2, epsilon are float attributes). */
  double want[3];
  double g3[3] = {0.5, -1, 2}, x3[3] = {1, 2, 3};
  for (int i = 0; i < 3; i++) {
    double m = 0, v = 0, x = x3[i];
    for (int t = 1; t <= 2; t++) {
      double b1 = (double)(float)0.9, b2 = (double)(float)0.999, eps = (double)(float)1e-8;
      m = b1 * m + (1 - b1) * g3[i];
      v = b2 * v + (1 - b2) * g3[i] * g3[i];
      double b1p = pow(b1, t), b2p = pow(b2, t);
      double lr_t = 0.01 * sqrt(1 - b2p) / (1 - b1p);
      x -= lr_t * m / (sqrt(v) + eps * sqrt(1 - b2p));
    }
    want[i] = x;
  }
  expect3(p, q, want, "adam: two bias-corrected steps (Fluid's formula)");

  /* Schedules. */
  pd_optimizer_defaults(&o, PD_OPT_SGD, 0.1);
  o.schedule = PD_LR_STEP;
  o.decay_steps = 10;
  o.decay_rate = 0.5;
  is_close(pd_optimizer_lr(&o, 9, 100), 0.1, 1e-15, "step schedule: unchanged before decay_steps");
  is_close(pd_optimizer_lr(&o, 10, 100), 0.05, 1e-15, "step schedule: halved at decay_steps");
  is_close(pd_optimizer_lr(&o, 25, 100), 0.025, 1e-15, "step schedule: twice at 2 decay_steps");
  o.schedule = PD_LR_COSINE;
  o.decay_steps = 0;
  is_close(pd_optimizer_lr(&o, 0, 100), 0.1, 1e-15, "cosine: starts at lr");
  is_close(pd_optimizer_lr(&o, 50, 100), 0.05, 1e-15, "cosine: half way, half lr");
  is_close(pd_optimizer_lr(&o, 100, 100), 0.0, 1e-15, "cosine: ends at 0");
  return tap_done();
}
