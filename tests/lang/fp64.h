/* fp64.h -- for gradient tests of compiled programs: turn a program's fp32 vars and dtype
 * attributes into fp64, so that finite differences are exact enough to check against, and
 * compile a script that way up to its forward program pruned to the cost. */
#ifndef PD_TESTS_FP64_H
#define PD_TESTS_FP64_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "vm/ir/program.h"
#include "vm/passes/prune.h"

static inline void to_fp64(pd_program *p) {
  for (int b = 0; b < p->nblocks; b++) {
    pd_block *blk = p->blocks[b];
    for (int i = 0; i < blk->nvars; i++)
      if (blk->vars[i]->dtype == PD_FP32) blk->vars[i]->dtype = PD_FP64;
    for (int i = 0; i < blk->nops; i++) {
      pd_op_desc *op = blk->ops[i];
      for (int a = 0; a < op->nattrs; a++) {
        pd_attr *at = &op->attrs[a];
        if ((strcmp(at->name, "dtype") == 0 || strcmp(at->name, "in_dtype") == 0 ||
             strcmp(at->name, "out_dtype") == 0) &&
            at->type == PD_ATTR_INT && at->v.i == PD_FP32)
          at->v.i = PD_FP64;
      }
    }
  }
}

/* Compile `text` (as file `name`) in fp64, make its runner (which runs the startup program:
 * the parameters) and the main program pruned to `cost` (*fwd). The caller frees *src, *unit,
 * *r and *fwd, whatever the result; compile errors are printed as TAP comments, other errors
 * are in err. */
static inline pd_status fp64_setup(const char *name, const char *text, const char *cost,
                                   pd_source **src, pd_unit **unit, pd_runner **r,
                                   pd_program **fwd, pd_error *err) {
  pd_diags d;
  pd_diags_init(&d, 5);
  pd_status st = pd_source_from_string(name, text, strlen(text), src);
  if (!st) st = pd_compile(*src, NULL, &d, unit);
  if (st) printf("# compile: %s\n", d.text.data ? d.text.data : "?");
  pd_diags_free(&d);
  if (st) return st;
  to_fp64((*unit)->main);
  to_fp64((*unit)->startup);
  pd_run_options o = {0};
  st = pd_runner_new(*unit, &o, r, err);
  if (!st) st = pd_program_prune((*unit)->main, 1, &cost, fwd, err);
  return st;
}

#endif /* PD_TESTS_FP64_H */
