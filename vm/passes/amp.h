/* amp.h -- automatic mixed precision of a training program (train(..., amp = "bf16" | "fp16")),
 * after PaddlePaddle's AMP O1: the matrix products (the ops flagged AMP in vm/oplist.h: mul, fc,
 * matmul_v2, conv2d, Paddle's white list) multiply in bf16 or fp16; everything else (softmax, norms,
 * losses, reductions, the optimizer's updates and their fp32 master weights) stays fp32. The
 * pass marks each such op, in every block, with mkldnn_data_type = "bfloat16" or "float16" (the
 * attribute Paddle's oneDNN bf16 passes set), which its kernels read (vm/ops/matmul.c: the
 * backend's gemm_lp rounds the fp32 operands as it multiplies; vm/ops/nn.c: the convolution's
 * pd_k_conv2d.lp; tensors stay fp32, so no cast ops are needed) and which `pdlang dump --train` shows.
 *
 * When: before pd_append_backward, so that each gradient op copies the attribute (its products
 * then run in low precision too, as under Paddle's AMP), and after the fusions (fuse_fc's fc
 * is marked).
 *
 * fp16 also gets Paddle's loss scaling (static.amp.decorate), in three steps that
 * vm/passes/pipeline.c places around the backward pass and the optimizer:
 *   pd_amp_scale_loss      before the backward pass: the cost multiplied by the persistable
 *                          "loss_scaling_0" (elementwise_mul); the gradients are taken of that;
 *   pd_amp_unscale         after it (and after data parallelism's sums, so that every rank sees
 *                          the same gradients): check_finite_and_unscale divides every gradient
 *                          by the scale in place and sets "find_infinite_scale.tmp_0"; with a
 *                          dynamic scale update_loss_scaling then zeroes the gradients of a bad
 *                          step and updates the scale and the persistable step counts
 *                          "num_good_steps_0" / "num_bad_steps_0" (int32);
 *   pd_amp_guard_updates   after the optimizer pass: its ops (weight decay, clipping, every
 *                          update) move into a conditional_block that runs when every gradient
 *                          was finite, so a bad step changes no parameter and no optimizer state
 *                          (Paddle passes FoundInfinite to adam's SkipUpdate and relies on the
 *                          zeroed gradients elsewhere, which still moves momentum's velocity,
 *                          rmsprop's mean square and L2 decay: the block skips all of them).
 * The scale and counts are persistable, so checkpoints carry them; their initial values are
 * fill_constant ops of the init program (run for vars that have no value yet).
 *
 * Ownership: the programs are changed in place; the names returned point into them. */
#ifndef PD_AMP_H
#define PD_AMP_H

#include <stdbool.h>

#include "base/base.h"
#include "vm/ir/program.h"
#include "vm/passes/backward.h"

/* lp PD_BF16 or PD_FP16 (else PD_EINVAL). Returns how many ops were marked in *count (may be
 * NULL). PD_ENOMEM. */
pd_status pd_program_amp(pd_program *p, pd_dtype lp, int *count, pd_error *err);

/* fp16 loss scaling, with Paddle's defaults (pd_amp_scaling_defaults): initial scale 2^15; with
 * dynamic, the scale times incr_ratio (2) after incr_every_n_steps (1000) good steps in a row,
 * times decr_ratio (0.8, never below 1) after decr_every_n_nan_or_inf (2) bad steps. */
typedef struct pd_amp_scaling {
  double loss_scale;
  bool dynamic;
  int incr_every_n_steps, decr_every_n_nan_or_inf;
  double incr_ratio, decr_ratio;
} pd_amp_scaling;

void pd_amp_scaling_defaults(pd_amp_scaling *s);

/* The names of the vars loss scaling adds. */
#define PD_AMP_SCALE_VAR "loss_scaling_0"
#define PD_AMP_GOOD_VAR "num_good_steps_0"
#define PD_AMP_BAD_VAR "num_bad_steps_0"
#define PD_AMP_FOUND_VAR "find_infinite_scale.tmp_0"

/* Multiply `cost` (block 0 of p, one element) by the loss scale, declared with its initial
 * value in init (and the step counts with 0 when s->dynamic); *scaled_cost names the product,
 * the var whose gradients pd_append_backward is to take. PD_EINVAL when the script already has
 * a var of one of these names; PD_ENOMEM. Ops are placed at loc. */
pd_status pd_amp_scale_loss(pd_program *p, pd_program *init, const char *cost,
                            const pd_amp_scaling *s, pd_loc loc, const char **scaled_cost,
                            pd_error *err);

/* Append the unscaling of the gradients of bwd (and the scale's update when s->dynamic). */
pd_status pd_amp_unscale(pd_program *p, const pd_backward *bwd, const pd_amp_scaling *s,
                         pd_loc loc, pd_error *err);

/* Move ops first..end of block 0 into a new block under a conditional_block that runs it when
 * PD_AMP_FOUND_VAR is false. PD_ENOMEM. */
pd_status pd_amp_guard_updates(pd_program *p, int first, pd_loc loc, pd_error *err);

#endif /* PD_AMP_H */
