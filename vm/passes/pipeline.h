/* pipeline.h -- the chain of program passes that turns a forward program into the program that
 * trains it, in the one order they must run:
 *   prune (vm/passes/prune.h)           the ops the cost needs;
 *   hoist (vm/passes/hoist.h)           loop-invariant row-wise ops out of each recurrent step block;
 *   fuse_rnn (vm/passes/fuse_rnn.h)     a loop left with one Elman cell -> one elman_rnn op;
 *   fuse_fc (vm/passes/fuse_fc.h)       mul + elementwise_add of block 0 -> fc;
 *   amp (vm/passes/amp.h)               with amp: the products marked to multiply in bf16 or
 *                                       fp16 (their gradient ops copy the mark);
 *   backward (vm/passes/backward.h)     the gradient ops of every trainable parameter;
 *   data_parallel (data_parallel.h)     with nranks >= 2: each gradient summed over the ranks
 *                                       (c_allreduce_sum, c_sync_comm_stream) and scaled by
 *                                       1/nranks, before any update reads it;
 *   optimizer (vm/passes/optimizer.h)   the updates, and the initialisers of their state.
 * Each pass documents why it runs where it does; this is the one place that chains them (the
 * `train` action, train/train.c, calls it).
 *
 * Ownership: main is not changed. On success *out_train (the training program) and *out_init
 * (block 0: the fill_constant ops that initialise the optimizer's state vars, to be run for the
 * vars that have no value yet) are new programs that the caller frees with pd_program_free; on
 * failure both are NULL. */
#ifndef PD_PIPELINE_H
#define PD_PIPELINE_H

#include "base/base.h"
#include "vm/passes/optimizer.h"
#include "vm/ir/program.h"

typedef struct pd_pipeline_options {
  const pd_optimizer *optimizer;   /* the updates to append (required) */
  pd_loc loc;                      /* where the appended optimizer ops, and an out-of-memory
                                      error of the pipeline itself, are placed (the train call) */
  int nranks;                      /* the processes of a data-parallel job; 0 or 1: one */
  pd_dtype amp;                    /* mixed precision: PD_BF16 or PD_FP16; anything else
                                      (0, PD_FP32): none */
  bool sync_batch_norm;            /* with nranks > 1: batch_norm ops become sync_batch_norm
                                      (statistics over every rank's batch) */
} pd_pipeline_options;

/* The training program of the var `cost` of main's block 0. Errors are the passes' own (with
 * their messages; PD_ENOMEM). */
pd_status pd_pipeline_train(const pd_program *main, const char *cost,
                            const pd_pipeline_options *opts, pd_program **out_train,
                            pd_program **out_init, pd_error *err);

#endif /* PD_PIPELINE_H */
