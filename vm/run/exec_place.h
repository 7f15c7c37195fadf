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
/* Where the values of slot `slot` (an input when `input`, else an output) of op `type` must be. */
int pd_exec_slot_where(const char *type, const char *slot, bool input);
/* Ops that run their sub-block themselves, step by step, reading the step scopes' values on
 * the host (recurrent, while and their gradients): every op of such a block runs on the host. */
bool pd_exec_host_sub_block(const pd_opdef *def);

/* The slot rules, for tests. Static; never freed. */
typedef struct pd_exec_slot_rule {
  const char *op, *slot;
  bool input;
  int where;
} pd_exec_slot_rule;
const pd_exec_slot_rule *pd_exec_slot_rules(size_t *n);

#endif /* PD_EXEC_PLACE_H */
