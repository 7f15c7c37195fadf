/* data_parallel.h -- data parallelism as a program transformation, as PaddlePaddle's collective
 * transpiler (GradAllReduce) does it, with Fluid's ops (vm/ops/collective.c) on ring 0:
 *
 *   startup program  after the initialisers, one c_broadcast (root 0, use_calc_stream true) per
 *                    persistable var they write: every rank starts from rank 0's parameters;
 *   training program each gradient of the backward pass (vm/passes/backward.h) is handed to
 *                    c_allreduce_sum (use_calc_stream false) right after the op that makes it
 *                    final, so the sums of the buckets (vm/run/comm.h) run while the rest of the
 *                    backward pass computes; then one c_sync_comm_stream over every gradient, in
 *                    the order they were started, waits for them, and a scale by 1/nranks per
 *                    gradient makes the sums means. The optimizer ops come after (the pipeline,
 *                    vm/passes/pipeline.h, runs this pass between backward and optimizer, which
 *                    it leaves as they are).
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
 * nranks >= 2. Errors: PD_EINVAL (a gradient no op writes), PD_ENOMEM. */
pd_status pd_program_data_parallel(pd_program *p, const pd_backward *bwd, int nranks, pd_loc loc,
                                   pd_error *err);

/* Append the broadcasts of the startup program's persistable vars from rank 0. */
pd_status pd_program_broadcast_params(pd_program *startup, pd_loc loc, pd_error *err);

#endif /* PD_DATA_PARALLEL_H */
