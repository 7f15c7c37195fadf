/* hoist.h -- a program pass that moves the row-wise, loop-invariant work out of the step block
 * of each `recurrent` op (a for-rnn), so that it runs once over the whole sequence batch (one
 * big GEMM instead of one small one per time step) before the loop.
 *
 * The recurrent op slices each of its `inputs` (a batch of sequences, [total rows, ...] with
 * LoD) into every step scope, one row per running sequence, under the input's own name. An op
 * of the step block whose every output row depends only on the same row of values that are
 * themselves such slices (or computed from them this way), and otherwise only on values from
 * outside the loop that the loop does not change, computes in step k the step-k rows of what it
 * would compute on the whole sequences. Such an op is moved to the block that owns the loop,
 * just before it, reading the whole sequences; what it writes becomes a sequence input of the
 * loop under the same name (sliced per step), and the loop's inputs and `parameters` lose what
 * the step block no longer reads. The results are those of the loop as it was: the same
 * operations on the same rows; only floating-point sums that the backward pass splits
 * differently (a parameter's gradient summed over all rows at once instead of step by step)
 * may differ in the last bits.
 *
 * Ops moved: those vm/oplist.h marks row-wise, with the step's rows in the slot named and every
 * other input loop-invariant:
 *   ROW_X (the unary maps abs, exp, tanh, ..., scale, cast; mul)   X
 *   ROW_XY (elementwise_add/sub/mul/div/max/min/pow)   X; Y is row-wise with X's rank, or
 *                                  invariant of a lower rank with axis -1 or >= 1 (it never
 *                                  spans the rows); for add and mul with an invariant X and a
 *                                  row-wise Y the operands are swapped (the kernels take the
 *                                  LoD from X)
 *   ROW_IDS (lookup_table, lookup_table_v2)   Ids (W invariant)
 * An op is moved only when its output is a var of the step block alone (declared in no other
 * block), written by no other op of the loop (nested blocks included), read by no op before it,
 * and neither a memory (states, ex_states) nor a stacked output of the loop. "Loop-invariant":
 * declared outside the step block and written by no op of it or of the blocks nested in it.
 * Step blocks owned by more than one op or holding blocks nested more than 64 deep, and
 * programs that already have a backward pass (a block with forward_block_idx >= 0), are left
 * as they are.
 *
 * When: on a pruned program, before pd_append_backward (the moved ops then get ordinary
 * gradient ops, and the loop's gradient op has fewer inputs to give gradients to).
 *
 * Ownership: p is changed in place. On failure (PD_ENOMEM) p may be half changed; callers that
 * must keep it work on a copy. */
#ifndef PD_HOIST_H
#define PD_HOIST_H

#include "base/base.h"
#include "vm/ir/program.h"

/* Hoist out of every recurrent op of p. *moved (may be NULL) receives the number of ops moved. */
pd_status pd_program_hoist(pd_program *p, int *moved, pd_error *err);

#endif /* PD_HOIST_H */
