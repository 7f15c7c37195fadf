/* pipeline.c -- the training pipeline: prune -> hoist -> fuse_rnn -> fuse_fc -> amp ->
 * sync_batch_norm -> backward -> data_parallel -> optimizer, in that order (see
 * vm/passes/pipeline.h). */
#include "config.h"
#include "vm/passes/pipeline.h"

#include <string.h>

#include "vm/passes/amp.h"
#include "vm/passes/backward.h"
#include "vm/passes/data_parallel.h"
#include "vm/passes/fuse_fc.h"
#include "vm/passes/fuse_rnn.h"
#include "vm/passes/hoist.h"
#include "vm/passes/prune.h"

/* train(..., sync_batch_norm = true) in a job of several ranks: every batch_norm op of p (any
 * block) becomes PaddlePaddle's sync_batch_norm, the same slots and attributes, before the
 * backward pass (which then writes sync_batch_norm_grad). */
static pd_status sync_batch_norm(pd_program *p, pd_loc loc, pd_error *err) {
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      pd_op_desc *op = p->blocks[b]->ops[i];
      if (strcmp(op->type, "batch_norm") != 0) continue;
      char *t = pd_strdup("sync_batch_norm");
      if (!t) return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
      pd_free(op->type);
      op->type = t;
    }
  return PD_OK;
}

pd_status pd_pipeline_train(const pd_program *main, const char *cost,
                            const pd_pipeline_options *opts, pd_program **out_train,
                            pd_program **out_init, pd_error *err) {
  *out_train = NULL;
  *out_init = NULL;
  pd_program *p = NULL, *init = NULL;
  pd_backward bwd = {0};
  pd_status st;
  /* The forward program of the cost, rewritten before its gradient ops exist (each rewrite's
   * ops then get their own gradient ops), then the backward pass and the updates. */
  if ((st = pd_program_prune(main, 1, &cost, &p, err))) goto out;
  if ((st = pd_program_hoist(p, NULL, err))) goto out;
  if ((st = pd_program_fuse_rnn(p, NULL, err))) goto out;
  if ((st = pd_program_fuse_fc(p, NULL, err))) goto out;
  if ((opts->amp == PD_BF16 || opts->amp == PD_FP16) &&
      (st = pd_program_amp(p, opts->amp, NULL, err)))
    goto out;
  if (opts->sync_batch_norm && opts->nranks > 1 && (st = sync_batch_norm(p, opts->loc, err)))
    goto out;
  if ((st = pd_append_backward(p, cost, &bwd, err))) goto out;
  if (opts->nranks > 1 && (st = pd_program_data_parallel(p, &bwd, opts->nranks, opts->loc, err)))
    goto out;
  if (!(init = pd_program_new())) {
    st = pd_error_set(err, PD_ENOMEM, opts->loc, "out of memory");
    goto out;
  }
  if ((st = pd_append_optimizer(p, init, &bwd, opts->optimizer, opts->loc, err))) goto out;
  *out_train = p;
  *out_init = init;
  p = init = NULL;
out:
  pd_backward_release(&bwd);
  pd_program_free(init);
  pd_program_free(p);
  return st;
}
