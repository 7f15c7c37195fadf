/* fuse_rnn.h -- a program pass that replaces a for-rnn whose body is one Elman cell by one
 * elman_rnn op (vm/ops/recurrent.c), which runs the whole recurrence and its gradient without a step
 * scope, a block run or a name lookup per step. The generic loop costs ~10 us a step around a
 * cell whose arithmetic takes ~2 us at hidden 32; the fused op does the same arithmetic.
 *
 * A recurrent op is fused when, after pd_program_hoist has moved the input projection out, its
 * step block is exactly
 *
 *     a = mul(m, W)          m the memory's previous value (ex_states), W read from outside
 *     b = a + u  (or u + a)  u the loop's one step input (elementwise_add, axis -1)
 *     s = act(b)             s the memory's new value (states); act tanh, relu or sigmoid
 *
 * with x_num_col_dims = y_num_col_dims = 1, one memory, one sequence input with one LoD level,
 * the memory stacked as the loop's only output (emit), a and b vars of the step block read
 * nowhere else, and no block nested in it. The op becomes
 *
 *     Hidden = elman_rnn(Input = u, H0 = the memory's initial value, Weight = W,
 *                        activation = act, is_reverse = the loop's reverse)
 *
 * writing the stacked output, at the loop's place and source location; the loop's step_scopes
 * var goes, and the step block stays in the program unused. Anything else (more memories, other
 * ops in the body, a bias added in the loop, nesting) is left to the generic loop, which
 * computes the same values. The fused op's results equal the loop's up to the order of
 * floating-point sums (its weight gradient is one GEMM over all steps, as the loop's
 * param_products is).
 *
 * Gated loops. The step blocks of stdlib/layers.pd's lstm and gru, once pd_program_hoist has
 * moved x W_ih + b out (u below, the loop's one step input, [T, 4 H] or [T, 3 H]), with any
 * order of the operands of each add and multiply, are
 *
 *     LSTM (memories h, c):  i, f, g, o = split(u + mul(h, W), 4, axis 1)
 *                            c' = sigmoid(f) * c + sigmoid(i) * tanh(g); h' = sigmoid(o) * tanh(c')
 *     GRU (memory h):        xr, xz, xn = split(u, 3); hr, hz, hn = split(mul(h, W) + b, 3)
 *                            r = sigmoid(xr + hr); z = sigmoid(xz + hz); n = tanh(xn + r * hn)
 *                            h' = scale(z, -1, bias 1) * n + z * h
 *
 * with nothing else in the block, the loop's outputs among h (required) and c. They become
 *
 *     Hidden, Cell, BatchGate = fused_lstm(Input = u, H0, C0 = the initial values, Weight = W)
 *     Hidden, BatchGate = fused_gru(Input = u, H0, Weight = W, Bias = b)
 *
 * (vm/ops/rnn_fused.c; is_reverse = the loop's reverse), Hidden and Cell writing the stacked
 * outputs (Cell a new var when c is not emitted), BatchGate a new var NAME.gate beside h's.
 *
 * When: after pd_program_hoist and before pd_append_backward (the op then gets its own gradient
 * op, elman_rnn_grad). Programs that already have a backward pass are left as they are.
 *
 * Ownership: p is changed in place. On failure (PD_ENOMEM) p may be half changed; callers that
 * must keep it work on a copy. */
#ifndef PD_FUSE_RNN_H
#define PD_FUSE_RNN_H

#include "base/base.h"
#include "vm/ir/program.h"

/* Fuse every recurrent op of p that has the shape above; *fused (may be NULL) receives how
 * many were. */
pd_status pd_program_fuse_rnn(pd_program *p, int *fused, pd_error *err);

/* Internal to the pass (fuse_rnn.c, fuse_gated.c). Is block idx owned by exactly one op of p,
 * with no block nested in it? */
bool pd_fuse_rnn_leaf_block(const pd_program *p, int idx);
/* The recurrent op at index at of outer becomes one fused_lstm or fused_gru op when its step
 * block is the lstm or gru layer's (above); *done tells whether it did. Fails on out of memory
 * only. */
pd_status pd_fuse_gated_loop(pd_program *p, pd_block *outer, int at, bool *done, pd_error *err);

#endif /* PD_FUSE_RNN_H */
