/* exec_place.c -- the executor's placement rules on the GPU, read from the op table: the ops
 * whose kernels run there (flags GPU and GPU_GRAD of vm/oplist.h: their kernels read and write
 * tensor data only through the backend, ctx->k, and the place-aware pd_ctx_* helpers), and the
 * slots whose values stay on the host or are left alone (HOST, ANY). */
#include "config.h"
#include "vm/run/exec_place.h"

#include "base/base.h"

bool pd_exec_gpu_op(const pd_opdef *def) {
  if (!def) return false;
  return def->forward ? (def->forward->flags & PD_OPF_GPU_GRAD) != 0
                      : (def->flags & PD_OPF_GPU) != 0;
}

int pd_exec_slot_where(const pd_slotdef *slot) {
  if (slot->flags & PD_SLOT_HOST) return PD_WHERE_HOST;
  if (slot->flags & PD_SLOT_ANY) return PD_WHERE_ANY;
  return PD_WHERE_OP;
}

bool pd_exec_host_sub_block(const pd_opdef *def) {
  /* A gradient op has its forward op's kind: recurrent_grad and while_grad are included. */
  return def && (def->kind == PD_OP_recurrent || def->kind == PD_OP_while);
}
