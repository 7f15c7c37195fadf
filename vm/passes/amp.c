/* amp.c -- the mixed-precision pass (vm/passes/amp.h): the AMP ops marked for bf16 or fp16. */
#include "config.h"
#include "vm/passes/amp.h"

#include "vm/ops/ops.h"

pd_status pd_program_amp(pd_program *p, pd_dtype lp, int *count, pd_error *err) {
  if (count) *count = 0;
  if (lp != PD_BF16 && lp != PD_FP16)
    return pd_error_set(err, PD_EINVAL, (pd_loc){0}, "mixed precision is bf16 or fp16, not %s",
                        pd_dtype_name(lp));
  const char *name = lp == PD_BF16 ? "bfloat16" : "float16";
  for (int b = 0; b < p->nblocks; b++) {
    pd_block *blk = p->blocks[b];
    for (int i = 0; i < blk->nops; i++) {
      pd_op_desc *op = blk->ops[i];
      const pd_opdef *d = pd_opdef_of(op);
      if (!d || !(d->flags & PD_OPF_AMP)) continue;
      if (pd_op_set_attr_string(op, "mkldnn_data_type", name))
        return pd_error_set(err, PD_ENOMEM, op->loc, "out of memory");
      if (count) (*count)++;
    }
  }
  return PD_OK;
}
