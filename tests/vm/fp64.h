/* fp64.h -- for gradient tests of compiled programs: turn a program's fp32 vars and dtype
 * attributes into fp64, so that finite differences are exact enough to check against. */
#ifndef PD_TESTS_FP64_H
#define PD_TESTS_FP64_H

#include <string.h>

#include "vm/program.h"

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

#endif /* PD_TESTS_FP64_H */
