/* opkernels.h -- the prototypes of every op's kernel, pd_kernel_<type>, and of the gradient kernel
 * pd_kernel_<type>_grad of every op marked DIFF, generated from the op list (vm/oplist.h).
 * vm/ops/ops.c and vm/ops/ops_grad.c bind them into the registry; each is defined in the file of
 * its family (vm/ops/elementwise.c, matmul.c, reduce.c, loss.c, create.c, shape.c, nn.c,
 * sequence.c, control.c, recurrent.c, optim.c).
 * Internal to the VM: nothing outside vm/ calls a kernel directly (go through the executor). */
#ifndef PD_OPKERNELS_H
#define PD_OPKERNELS_H

#include "vm/run/exec.h"

#define PD_OP(name, flags, infer, inputs, outputs, attrs) \
  pd_status pd_kernel_##name(pd_exec_ctx *ctx);           \
  PD_IF_DIFF(flags, pd_status pd_kernel_##name##_grad(pd_exec_ctx *ctx);)
#include "vm/oplist.h"
#undef PD_OP

#endif /* PD_OPKERNELS_H */
