/* data_parallel.h -- data parallelism as a program transformation, as PaddlePaddle's collective
 * transpiler (GradAllReduce) does it, with Fluid's ops (vm/ops/collective.c) on ring 0:
 *
 *   startup program  after the initialisers, one c_broadcast (root 0, use_calc_stream true) per
 *                    persistable var they write: every rank starts from rank 0's parameters;
 *   training program the cost's gradient (the backward pass's first op, vm/passes/backward.h)
 *                    is scaled by 1/nranks, so that every gradient, linear in it, sums to its
 *                    mean over the ranks (GradAllReduce's scale of the loss gradient: one scalar
 *                    op where a scale per gradient would read and write every gradient once
 *                    more a step); each gradient is handed to c_allreduce_sum (use_calc_stream
 *                    false) right after the op that makes it final, so the sums of the buckets
 *                    (vm/run/comm.h) run while the rest of the backward pass computes; then one
 *                    c_sync_comm_stream over every gradient, in the order they were started,
 *                    waits for them. The optimizer ops come after (the pipeline,
 *                    vm/passes/pipeline.h, runs this pass between backward and optimizer, which
 *                    it leaves as they are: weight decay and clipping see the means).
 *
 * Gradients are dense: a lookup_table's gradient (pdlang has no sparse rows) is all-reduced whole.
 * Appended ops carry op_role 1 (backward; the broadcasts 0) and location loc.
 *
 * Ownership: the programs are changed in place; nothing is kept. */
#ifndef PD_DATA_PARALLEL_H
#define PD_DATA_PARALLEL_H

#include "base/base.h"
#include "vm/ir/program.h"
#include "vm/passes/backward.h"

/* Insert the gradient sums of bwd's pairs into p (its block 0 ends with the backward pass).
 * nranks >= 2. Errors: PD_EINVAL (a gradient no op writes, or no op sets the cost's gradient),
 * PD_ENOMEM. */
pd_status pd_program_data_parallel(pd_program *p, const pd_backward *bwd, int nranks, pd_loc loc,
                                   pd_error *err);

/* Append the broadcasts of the startup program's persistable vars from rank 0. */
pd_status pd_program_broadcast_params(pd_program *startup, pd_loc loc, pd_error *err);

#endif /* PD_DATA_PARALLEL_H */
