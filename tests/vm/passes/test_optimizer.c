/* test_optimizer.c -- the optimizer pass (vm/passes/optimizer.h): the ops it appends update parameters
 * as computed by hand here -- sgd, momentum, adam with bias correction, L2 weight decay, and
 * clipping by global norm -- and the learning-rate schedules give the values of their formulas. */
#include <math.h>
#include <string.h>

#include "tests/vm/passes/opt_fixture.h"

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
  /* Warmup (Paddle's LinearWarmup from 0): lr * step / N, then the schedule from its step 0;
   * a cosine without decay_steps spans the steps after the warmup. */
  o.warmup_steps = 20;
  is_close(pd_optimizer_lr(&o, 0, 120), 0.0, 1e-15, "warmup: starts at 0");
  is_close(pd_optimizer_lr(&o, 5, 120), 0.025, 1e-15, "warmup: a quarter of the way");
  is_close(pd_optimizer_lr(&o, 20, 120), 0.1, 1e-15, "warmup then cosine: its start");
  is_close(pd_optimizer_lr(&o, 70, 120), 0.05, 1e-15, "warmup then cosine: half of the rest");
  is_close(pd_optimizer_lr(&o, 120, 120), 0.0, 1e-15, "warmup then cosine: ends at 0");
  o.schedule = PD_LR_STEP;
  o.decay_steps = 10;
  is_close(pd_optimizer_lr(&o, 29, 100), 0.1, 1e-15, "warmup then step: unchanged");
  is_close(pd_optimizer_lr(&o, 30, 100), 0.05, 1e-15, "warmup then step: halved 10 after");
  o.schedule = PD_LR_CONSTANT;
  is_close(pd_optimizer_lr(&o, 19, 100), 0.095, 1e-15, "warmup then constant: last warmup step");
  is_close(pd_optimizer_lr(&o, 1000, 100), 0.1, 1e-15, "warmup then constant");
  return tap_done();
}
