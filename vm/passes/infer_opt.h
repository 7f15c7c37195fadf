/* infer_opt.h -- the load-time passes of an inference model (what `pdlang exec` and the C
 * library run on a loaded model before its first run; `pdlang dump --optimized` lists the
 * result). Each gives the program's outputs to float rounding (the tests check 1e-5 relative
 * against the unoptimised program):
 *
 *   - batch norm folded into the convolution or matrix product before it: a batch_norm in
 *     test mode whose input is conv2d / depthwise_conv2d / conv2d_transpose (channels first;
 *     the transposed one's output channels are its filter's columns, per group) or mul /
 *     matmul_v2 (a 2-D weight, no transposes) of a parameter, possibly through an
 *     elementwise_add of a per-channel bias parameter ([C] at axis 1, or [1, C, 1, 1] at -1 after
 *     a convolution), becomes a scaled copy of that weight (W' = W s, s = scale /
 *     sqrt(variance + epsilon) per output channel) and one elementwise_add of the folded bias
 *     (b' = (b - mean) s + bias, [C] at axis 1 after a convolution), the batch_norm removed;
 *   - dropout in test mode removed (upscale_in_train: the identity) or made a scale
 *     (downgrade_in_infer: times 1 - p); scale by 1 with bias 0 removed; an assign (a
 *     copy: Paddle's x.clone()) removed where its input is not written again;
 *   - a reshape2, squeeze2 or unsqueeze2 of a parameter (Paddle 3 reshapes a convolution's
 *     bias to [1, C, 1, 1] at each run) folded into a parameter of its output's (known) shape;
 *   - then mul or matmul_v2 + elementwise_add as one fc (pd_program_fuse_fc_ex);
 *   - then a conv2d or depthwise_conv2d (channels first, of a 4-D parameter) with the ops that
 *     read its output in turn, each optional, at least one: an elementwise_add of a per-channel
 *     bias parameter ([C] at axis 1, [1, C, 1, 1] or [C, 1, 1] at the end), an
 *     elementwise_add of a var of the output's shape (a residual),
 *     and an activation (relu, sigmoid, tanh, relu6, leaky_relu, swish, hard_sigmoid,
 *     hard_swish with threshold = scale, gelu) as one fused_conv2d at the last one's place
 *     (its operands unchanged until then, each intermediate read by the next op alone);
 *   - then, where the program runs on the host, an attention layer's heads: the queries, keys
 *     and values transposed to [B, H, S, D], Q K^T (matmul_v2 with trans_y, or Fluid's matmul
 *     with transpose_Y, its alpha a scale) scaled by constants before or after (scale, or
 *     elementwise_mul by a one-element constant), plus a mask (elementwise_add, axis -1;
 *     optional), the softmax along the last dim, times V (alpha 1), transposed back to
 *     [B, S, H, D]: one
 *     memory_efficient_attention (vm/oplist.h) reading Q, K, V and the mask as they were before
 *     the transposes (the scores, [B, H, S, S], never made).
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
#include "kernels/kernels.h"
#include "vm/ir/program.h"
#include "vm/run/scope.h"

typedef struct pd_infer_opt_stats {
  int bn_folded;      /* batch_norm ops folded into a convolution or product */
  int removed;        /* dropout and scale ops removed (or dropout made a scale) */
  int folded;         /* reshapes of parameters made parameters */
  int fc_fused;       /* mul + elementwise_add made fc */
  int conv_fused;     /* convolutions made fused_conv2d */
  int attention_fused; /* attention layers made memory_efficient_attention */
} pd_infer_opt_stats;

/* Optimise the inference program p whose parameters are in scope, to run at place (PD_K_HOST,
 * or PD_K_CUDA: the fusions whose ops compute on the host alone are not made). stats may be
 * NULL. */
pd_status pd_program_infer_opt(pd_program *p, pd_scope *scope, pd_k_place place,
                               pd_infer_opt_stats *stats, pd_error *err);

/* What the passes did, as "47 batch norms folded, 1 dropout or scale op removed, 0 fc fused,
 * 62 convolutions fused, 0 attention layers fused" in buf (n bytes, truncated to fit). */
void pd_infer_opt_describe(const pd_infer_opt_stats *s, char *buf, size_t n);

#endif /* PD_INFER_OPT_H */
