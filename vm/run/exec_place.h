/* exec_place.h -- private to the executor: which ops have kernels that run on the GPU, and where
 * the values of each of their slots must be when the kernel runs (vm/run/exec_place.c). */
#ifndef PD_EXEC_PLACE_H
#define PD_EXEC_PLACE_H

#include <stdbool.h>
#include <stddef.h>

#include "vm/ops/ops.h"

/* Where a slot's values must be. */
enum {
  PD_WHERE_OP = 0,   /* where the op computes (the default) */
  PD_WHERE_HOST,     /* always on the host: scalars the kernel reads there (a learning rate) */
  PD_WHERE_ANY       /* left where they are: vars a control-flow op only passes to its block */
};

/* Does the op of def (a forward or a gradient op; NULL: no) have a kernel that computes on the
 * GPU? The flags of vm/oplist.h say: GPU for a forward op, its forward op's GPU_GRAD for a
 * gradient op. */
bool pd_exec_gpu_op(const pd_opdef *def);
/* Where the values of a slot of an op's def must be: PD_WHERE_HOST for a slot vm/oplist.h marks
 * HOST, PD_WHERE_ANY for one marked ANY, else PD_WHERE_OP. */
int pd_exec_slot_where(const pd_slotdef *slot);
/* Ops that run their sub-block themselves, step by step, reading the step scopes' values on
 * the host (recurrent, while and their gradients): every op of such a block runs on the host. */
bool pd_exec_host_sub_block(const pd_opdef *def);

#endif /* PD_EXEC_PLACE_H */
