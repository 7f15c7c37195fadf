/* infer_opt.h -- the load-time passes of an inference model (what `pdlang exec` and the C
 * library run on a loaded model before its first run; `pdlang dump --optimized` lists the
 * result). Each gives the program's outputs to float rounding (the tests check 1e-5 relative
 * against the unoptimised program):
 *
 *   - batch norm folded into the convolution or matrix product before it: a batch_norm in
 *     test mode whose input is conv2d / depthwise_conv2d (channels first) or mul / matmul_v2
 *     (a 2-D weight, no transposes) of a parameter, possibly through an elementwise_add of a
 *     per-channel bias parameter, becomes a scaled copy of that weight (W' = W s, s = scale /
 *     sqrt(variance + epsilon) per output channel) and one elementwise_add of the folded bias
 *     (b' = (b - mean) s + bias), the batch_norm removed;
 *   - dropout in test mode removed (upscale_in_train: the identity) or made a scale
 *     (downgrade_in_infer: times 1 - p); scale by 1 with bias 0 removed;
 *   - then mul + elementwise_add as one fc (pd_program_fuse_fc).
 * An op is removed only when its output is read by ops of block 0 alone, is not fetched and is
 * written by no other op; its readers then read its input.
 *
 * The folded weights are new persistable vars ("W.bnfold.K") of block 0, made in scope; the
 * original ones stay (another op may share them).
 *
 * Ownership: p and scope are changed in place; on failure (PD_ENOMEM) p may be half changed. */
#ifndef PD_INFER_OPT_H
#define PD_INFER_OPT_H

#include "base/base.h"
#include "vm/ir/program.h"
#include "vm/run/scope.h"

typedef struct pd_infer_opt_stats {
  int bn_folded;      /* batch_norm ops folded into a convolution or product */
  int removed;        /* dropout and scale ops removed (or dropout made a scale) */
  int fc_fused;       /* mul + elementwise_add made fc */
} pd_infer_opt_stats;

/* Optimise the inference program p whose parameters are in scope. stats may be NULL. */
pd_status pd_program_infer_opt(pd_program *p, pd_scope *scope, pd_infer_opt_stats *stats,
                               pd_error *err);

#endif /* PD_INFER_OPT_H */
