/* optimizer.h -- append the parameter updates of an optimizer to a program that already holds
 * its backward pass (vm/passes/backward.h): optional gradient transforms, then one update op per
 * parameter (Fluid's sgd, momentum, adam, adamw, rmsprop, adagrad ops, updating in place: ParamOut is Param).
 *
 * What is appended to block 0 of `main`, in order:
 *   - weight decay (L2) when weight_decay > 0: g' = g + weight_decay * param (scale +
 *     elementwise_add), before clipping;
 *   - clipping by global norm when clip_norm > 0: norm = sqrt(sum of every gradient's squared
 *     elements); each gradient is multiplied by clip_norm / max(norm, clip_norm);
 *   - the update op of each parameter, reading the learning-rate var and the optimizer state.
 * The state vars are persistable vars of block 0 with Fluid's names: "learning_rate_0", and per
 * parameter P "P_velocity_0" (momentum), "P_moment1_0", "P_moment2_0", "P_beta1_pow_acc_0",
 * "P_beta2_pow_acc_0" (adam, adamw), "P_mean_square_0", "P_momentum_0" and, centered,
 * "P_mean_grad_0" (rmsprop), "P_moment_0" (adagrad). adamw's weight decay is the op's
 * decoupled decay (coeff, with_decay), not the L2 transform above. Their initial values are fill_constant ops appended to `init`
 * (block 0), which the trainer runs once for the vars that have no value yet (so a second train
 * or a restored checkpoint keeps its state). Learning-rate schedules are applied by the trainer,
 * which writes the learning-rate var before each step (pd_optimizer_lr).
 *
 * Ownership: main and init are changed in place; nothing is kept. */
#ifndef PD_OPTIMIZER_H
#define PD_OPTIMIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "vm/passes/backward.h"
#include "vm/ir/program.h"

typedef enum pd_opt_kind {
  PD_OPT_SGD,
  PD_OPT_MOMENTUM,
  PD_OPT_ADAM,
  PD_OPT_ADAMW,
  PD_OPT_RMSPROP,
  PD_OPT_ADAGRAD
} pd_opt_kind;
typedef enum pd_lr_schedule { PD_LR_CONSTANT, PD_LR_STEP, PD_LR_COSINE } pd_lr_schedule;

typedef struct pd_optimizer {
  pd_opt_kind kind;
  double lr;
  double mu;                 /* momentum; rmsprop's momentum */
  bool nesterov;             /* momentum */
  double beta1, beta2, epsilon;  /* adam, adamw; epsilon also rmsprop's and adagrad's */
  double rho;                /* rmsprop: the decay of the mean square */
  bool centered;             /* rmsprop */
  double init_acc;           /* adagrad: the moment's initial value */
  double weight_decay;       /* 0: none; adamw: the decoupled decay's coeff (not L2) */
  double clip_norm;          /* 0: none */
  pd_lr_schedule schedule;
  int64_t decay_steps;       /* step: every decay_steps steps; cosine: the length of the cosine
                                (0 means the whole run, set by the trainer) */
  double decay_rate;         /* step: multiply by this */
  int64_t warmup_steps;      /* 0: none; else the learning rate rises linearly from 0 over the
                                first warmup_steps steps (Paddle's LinearWarmup: lr * step / N),
                                then the schedule runs, counting its steps from there */
} pd_optimizer;

/* Defaults as Fluid's (paddle.optimizer): momentum mu 0.9; adam and adamw 0.9, 0.999, 1e-8,
 * adamw weight_decay 0.01; rmsprop rho 0.95, epsilon 1e-6, momentum 0; adagrad epsilon 1e-6,
 * initial accumulator 0; step decay rate 0.1. */
void pd_optimizer_defaults(pd_optimizer *o, pd_opt_kind kind, double lr);

/* The name of the learning-rate var the appended ops read. */
#define PD_LR_VAR "learning_rate_0"

/* Append the updates for the pairs of pg. Ops get location loc (the train call). */
pd_status pd_append_optimizer(pd_program *main, pd_program *init, const pd_backward *pg,
                              const pd_optimizer *o, pd_loc loc, pd_error *err);

/* The learning rate at step `step` (0-based) of a run of total_steps steps: the warmup's
 * lr * step / warmup_steps for step < warmup_steps, then the schedule at step - warmup_steps
 * (a cosine without decay_steps spans the total_steps - warmup_steps steps left). */
double pd_optimizer_lr(const pd_optimizer *o, int64_t step, int64_t total_steps);

#endif /* PD_OPTIMIZER_H */
