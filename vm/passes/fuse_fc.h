/* fuse_fc.h -- a program pass that replaces a matrix product followed by a bias add,
 *
 *     a = mul(X, W)          x_num_col_dims = n, y_num_col_dims = 1, W a matrix [K, N]
 *     c = a + b              elementwise_add(X = a, Y = b), b [N] or [1, N], axis -1 or n
 *
 * by one fc op (vm/ops/matmul.c),
 *
 *     c = fc(Input = X, W = W, Bias = b, in_num_col_dims = n)
 *
 * at the add's place and source location, and drops a. fc adds the bias in place to the rows
 * its GEMM has just written, where the two ops wrote a second tensor of the product's size (the
 * logits of an output layer: [1600, 256], 1.6 MB a step, written to memory that no cache held);
 * its gradient op reads Out@GRAD directly. Values and gradients are the same bits as the two
 * ops' (the same GEMMs, the same column sum for the bias).
 *
 * Fused only when the add directly follows the mul in the global block (block 0), a is a var of
 * that block that no other op of the program reads or writes, and c is neither X, W, b nor a.
 * Loop bodies are left alone: their products are what the loop passes read (pd_program_hoist's
 * param_products, fuse_rnn's cell).
 *
 * When: after pd_program_hoist and pd_program_fuse_rnn (the hoisted input projection is then in
 * block 0), before pd_append_backward (fc then gets fc_grad). Programs that already have a
 * backward pass are left as they are.
 *
 * Ownership: p is changed in place. On failure (PD_ENOMEM) p may be half changed; callers that
 * must keep it work on a copy. */
#ifndef PD_FUSE_FC_H
#define PD_FUSE_FC_H

#include "base/base.h"
#include "vm/ir/program.h"

/* Fuse every mul + elementwise_add of p's global block that has the shape above; *fused (may be
 * NULL) receives how many were. */
pd_status pd_program_fuse_fc(pd_program *p, int *fused, pd_error *err);
/* The same, and with `matmul` also matmul_v2 or Fluid's matmul (X [..., K] of known rank,
 * W [K, N], neither transposed, alpha 1) + elementwise_add, as PaddlePaddle 3 (and 1.8, with
 * matmul) saves a Linear layer: fc with
 * in_num_col_dims = rank(X) - 1. The load-time passes of an inference model use it; training
 * programs keep their matmul_v2 (its gradient's GEMMs are not fc_grad's). */
pd_status pd_program_fuse_fc_ex(pd_program *p, bool matmul, int *fused, pd_error *err);

#endif /* PD_FUSE_FC_H */
