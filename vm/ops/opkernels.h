/* opkernels.h -- the prototypes of every op's kernel, pd_kernel_<type>, and of the gradient kernel
 * pd_kernel_<type>_grad of every op marked DIFF, generated from the op list (vm/oplist.h).
 * vm/ops/ops.c and vm/ops/ops_grad.c bind them into the registry; they are defined by family in
 * vm/ops/kern_math.c (arithmetic, reductions, losses, comparisons), vm/ops/kern_tensor.c (creation,
 * copying, shapes, random numbers, embeddings, sequences, convolution, pooling, optimizers),
 * vm/ops/kern_rnn.c (elman_rnn, the fused loop of vm/passes/fuse_rnn.h) and vm/ops/exec_control.c
 * (conditional_block, while, recurrent, and the row split/merge of if/else).
 * Internal to the VM: nothing outside vm/ calls a kernel directly (go through the executor). */
#ifndef PD_OPKERNELS_H
#define PD_OPKERNELS_H

#include "vm/run/exec.h"

#define PD_OP(name, flags, infer, inputs, outputs, attrs) \
  pd_status pd_kernel_##name(pd_exec_ctx *ctx);           \
  PD_IF_DIFF(flags, pd_status pd_kernel_##name##_grad(pd_exec_ctx *ctx);)
#include "vm/oplist.h"
#undef PD_OP

/* The order in which the loop kernels (recurrent, elman_rnn: exec_control.c, kern_rnn.c) run a
 * batch of sequences, sequence s being offsets off[s] .. off[s + 1]: by length, longest first,
 * then by index. order receives nseq indices; false when out of memory. */
bool pd_seq_by_length(const int64_t *off, int64_t nseq, int64_t *order);

#endif /* PD_OPKERNELS_H */
