/* test_optimizer_more.c -- the optimizer pass (vm/passes/optimizer.h) with adamw, rmsprop and
 * adagrad: the ops it appends update parameters as computed by hand here (adamw's decay decoupled
 * from the gradient, not L2; rmsprop plain, with momentum and centered; adagrad from an initial
 * accumulator), and the state vars carry Fluid's names, persistable, initialised by `init`. */
#include <math.h>
#include <string.h>

#include "tests/vm/passes/opt_fixture.h"

/* The state vars the pass makes for p: persistable in main, set by a fill_constant of init. */
static void expect_state(const pd_optimizer *o, const char *const *names, const char *what) {
  pd_program *main = pd_program_new(), *init = pd_program_new();
  pd_block *b = main->blocks[0];
  int64_t two = 2;
  const char *vars[2] = {"p", "p@GRAD"};
  for (int i = 0; i < 2; i++) {
    pd_var_desc *v = pd_block_var(b, vars[i]);
    pd_var_set_shape(v, 1, &two);
    v->dtype = PD_FP32;
    v->persistable = i == 0;
  }
  pd_param_grad pairs[1] = {{"p", "p@GRAD"}};
  pd_backward pg = {1, pairs};
  pd_error err = {0};
  bool pass = pd_append_optimizer(main, init, &pg, o, (pd_loc){"t.pd", 1, 1}, &err) == PD_OK;
  for (int i = 0; pass && names[i]; i++) {
    const pd_var_desc *v = pd_block_find_var_local(b, names[i]);
    bool filled = false;
    for (int k = 0; k < init->blocks[0]->nops; k++) {
      const char *out = pd_op_output1(init->blocks[0]->ops[k], "Out");
      filled = filled || (out && strcmp(out, names[i]) == 0);
    }
    pass = v && v->persistable && v->ndims == 1 && v->dims[0] == (strstr(names[i], "_pow_") ? 1 : 2) && filled;
    if (!pass) printf("#   %s: %s\n", names[i], v ? "not persistable, shaped or initialised" : "missing");
  }
  ok(pass, "%s", what);
  pd_program_free(main);
  pd_program_free(init);
  pd_error_clear(&err);
}

int main(void) {
  double p[2], q[1], want[3];
  const double g3[3] = {0.5, -1, 2}, x3[3] = {1, 2, 3};
  const double f09 = (float)0.9, f0999 = (float)0.999, f1e8 = (float)1e-8;
  pd_optimizer o;

  /* adamw: p -= lr * coeff * p, then Adam's bias-corrected step; weight_decay 0.01 by default. */
  pd_optimizer_defaults(&o, PD_OPT_ADAMW, 0.01);
  is_close(o.weight_decay, 0.01, 0, "adamw: weight_decay 0.01 by default");
  o.weight_decay = 0.5;
  ok(run_opt(&o, 2, p, q), "adamw runs");
  for (int i = 0; i < 3; i++) {
    double m = 0, v = 0, x = x3[i];
    for (int t = 1; t <= 2; t++) {
      m = f09 * m + (1 - f09) * g3[i];
      v = f0999 * v + (1 - f0999) * g3[i] * g3[i];
      double mhat = m / (1 - pow(f09, t)), vhat = v / (1 - pow(f0999, t));
      x = x - 0.01 * 0.5 * x - 0.01 * mhat / (sqrt(vhat) + f1e8);
    }
    want[i] = x;
  }
  expect3(p, q, want, "adamw: two steps with the decay decoupled from the gradient");

  /* rmsprop: rho 0.95, epsilon 1e-6, momentum 0 by default. */
  for (int variant = 0; variant < 3; variant++) {
    pd_optimizer_defaults(&o, PD_OPT_RMSPROP, 0.01);
    if (variant) o.mu = 0.5;
    o.centered = variant == 2;
    ok(run_opt(&o, 2, p, q), "rmsprop runs");
    double rho = (float)0.95, eps = (float)1e-6, mu = variant ? 0.5 : 0;
    for (int i = 0; i < 3; i++) {
      double s = 0, a = 0, m = 0, x = x3[i];
      for (int t = 1; t <= 2; t++) {
        s = rho * s + (1 - rho) * g3[i] * g3[i];
        a = rho * a + (1 - rho) * g3[i];
        m = mu * m + 0.01 * g3[i] / sqrt((o.centered ? s - a * a : s) + eps);
        x -= m;
      }
      want[i] = x;
    }
    expect3(p, q, want, variant == 0 ? "rmsprop: two steps" : variant == 1
                        ? "rmsprop: two steps with momentum" : "rmsprop: two steps, centered");
  }

  /* adagrad from an initial accumulator of 0.1: m += g^2, p -= lr g / (sqrt(m) + 1e-6). */
  pd_optimizer_defaults(&o, PD_OPT_ADAGRAD, 0.1);
  o.init_acc = 0.1;
  ok(run_opt(&o, 2, p, q), "adagrad runs");
  for (int i = 0; i < 3; i++) {
    double m = (float)0.1, x = x3[i];
    for (int t = 1; t <= 2; t++) {
      m += g3[i] * g3[i];
      x -= 0.1 * g3[i] / (sqrt(m) + (float)1e-6);
    }
    want[i] = x;
  }
  expect3(p, q, want, "adagrad: two steps from the initial accumulator");

  pd_optimizer_defaults(&o, PD_OPT_ADAMW, 0.01);
  expect_state(&o, (const char *[]){"p_moment1_0", "p_moment2_0", "p_beta1_pow_acc_0",
                                    "p_beta2_pow_acc_0", NULL}, "adamw: Fluid's state vars");
  pd_optimizer_defaults(&o, PD_OPT_RMSPROP, 0.01);
  o.centered = true;
  expect_state(&o, (const char *[]){"p_mean_square_0", "p_momentum_0", "p_mean_grad_0", NULL},
               "rmsprop centered: Fluid's state vars");
  pd_optimizer_defaults(&o, PD_OPT_ADAGRAD, 0.01);
  expect_state(&o, (const char *[]){"p_moment_0", NULL}, "adagrad: Fluid's state vars");
  return tap_done();
}
