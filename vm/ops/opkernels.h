/* opkernels.h -- the prototypes of every op's kernel and of the gradient kernel of every op
 * marked DIFF, generated from the op list (vm/oplist.h): pd_kernel_<name> and
 * pd_kernel_<name>_grad for an op with kernels of its own, pd_kernel_<family> and
 * pd_kernel_<family>_grad for one that names a family kernel (KERNEL(family, constant): several
 * ops share it, each with its constant, ctx->def->karg). vm/ops/ops.c and vm/ops/ops_grad.c bind
 * them into the registry; each is defined in the file of its family (vm/ops/elementwise.c,
 * matmul.c, reduce.c, loss.c, create.c, shape.c, nn.c, sequence.c, control.c, recurrent.c,
 * optim.c, ...).
 * Internal to the VM: nothing outside vm/ calls a kernel directly (go through the executor). */
#ifndef PD_OPKERNELS_H
#define PD_OPKERNELS_H

#include "vm/run/exec.h"

#define KERNELS(fwd, grad, arg) fwd, grad, arg
#define KERNEL(family, arg) family, family##_grad, arg
#define PD_OPK(name, flags, infer, inputs, outputs, attrs, kernel) \
  pd_status PD_KERNEL_FWD_(kernel)(pd_exec_ctx *ctx);              \
  PD_IF_DIFF(flags, pd_status PD_KERNEL_GRAD_(kernel)(pd_exec_ctx *ctx);)
#include "vm/oplist.h"
#undef PD_OPK
#undef KERNEL
#undef KERNELS

#endif /* PD_OPKERNELS_H */
