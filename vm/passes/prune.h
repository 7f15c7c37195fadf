/* prune.h -- Prune(program, targets): the smallest program whose ops still compute the given
 * vars of the global block, following dependencies into and out of sub-blocks (Fluid's prune).
 * What actions (print, eval, save) and the REPL run before executing a program.
 *
 * Rules, in the order the pass applies them (ops are visited last to first in each block):
 *   - An op is kept when it writes a var that is needed; its inputs become needed. A write to a
 *     persistable var that the op also reads (an update of state in place: batch_norm's
 *     MeanOut/VarianceOut) does not count: that var's value is the one in the global scope.
 *   - An op that owns sub-blocks (a BLOCK or BLOCKS attribute: conditional_block's, while's and
 *     recurrent's "sub_block") is kept whole -- every slot, every attribute -- when it is kept at
 *     all. Its sub-block is pruned in turn, relative to what the op reads and writes (its input
 *     and output vars, and for recurrent the names in its "states" and "ex_states" attributes):
 *     an op of the sub-block is kept when it writes one of those, or a var a kept op of the
 *     sub-block reads, or (in a conditional block) an outer var that is needed after the op.
 *     The outer vars that the kept ops of the sub-block read (directly or in deeper blocks)
 *     become needed where the owning op is.
 *   - Loops (any owner other than conditional_block*: while, recurrent, ...) are pruned
 *     conservatively: every op of the body that writes a var declared outside the body is kept
 *     (loop-carried state, the loop condition), and the body is rescanned until nothing changes,
 *     so that a value read by an earlier op in the next iteration is kept too.
 *   - A gradient block that is kept (forward_block_idx >= 0) keeps its forward block, and the
 *     blocks inside that, whole: the gradient ops read the forward values by name.
 *
 * The result keeps every block at its index (BLOCK attributes need no renumbering): a block
 * whose owning op was pruned stays in the program, empty (no ops; vars only where a kept op
 * still names them). Vars of the global block that no kept op names are dropped (targets are
 * always kept); the vars of kept sub-blocks are kept as they are, since an executor may bind a
 * loop's step inputs to them. Every kept op keeps its order, slots and attributes.
 *
 * Ownership: the input program is not changed. On success *out is a new program that the caller
 * frees with pd_program_free; on failure *out is NULL. */
#ifndef PD_PRUNE_H
#define PD_PRUNE_H

#include "base/base.h"
#include "vm/ir/program.h"

/* Prune p to what the ntargets vars named in targets need. Every target must be a var of block 0
 * (declared there; it may be computed by an op of any block, through the op that owns it).
 * Errors: PD_EINVAL for no targets or an empty name; PD_ENOTFOUND for a name that block 0 does
 * not declare ("prune target 'd' is not a var of the global block (it is local to block 1)");
 * PD_EFORMAT when p fails pd_program_validate (its message); PD_ENOMEM. */
pd_status pd_program_prune(const pd_program *p, int ntargets, const char *const *targets,
                           pd_program **out, pd_error *err);

#endif /* PD_PRUNE_H */
