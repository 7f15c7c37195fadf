/* compat.h -- what programs saved by other versions of PaddlePaddle/Fluid carry that does not
 * change the math, as facts beside the op table (vm/oplist.h): attributes that are hints to
 * Paddle's own backends (oneDNN, cuDNN, quantization) or that keep the math at some values, and
 * optional input slots Paddle writes bound to no var. What Paddle's ops may carry is derived
 * from Paddle's own definitions into vm/ops/compat_paddle.txt (tools/paddle_compat.py); every
 * such attribute and slot of an op pdlang has is either the op's own or has a fact here
 * (tests/vm/ops/test_compat checks it). pd_compat_apply drops them from a loaded program,
 * converts attributes an older version wrote in another type, refuses the values pdlang cannot
 * honour, and checks every op against its def, listing every problem of the program at once.
 * doc/language.md ("Models from PaddlePaddle") lists the facts for users. */
#ifndef PD_VM_OPS_COMPAT_H
#define PD_VM_OPS_COMPAT_H

#include "base/base.h"
#include "vm/ir/program.h"

typedef enum pd_compat_rule {
  PD_COMPAT_ANY,        /* an attribute: any value is dropped */
  PD_COMPAT_KEEPS,      /* an attribute: dropped at one of the values `keeps` lists, refused at
                           any other */
  PD_COMPAT_EMPTY_SLOT, /* an input slot: bound to no var it is dropped; bound, refused */
} pd_compat_rule;

typedef struct pd_compat_fact {
  const char *ops;   /* the op types it applies to, separated by spaces; NULL: every op */
  const char *name;  /* the attribute, or the input slot; "*Tensor" matches every name ending
                        so */
  pd_compat_rule rule;
  const char *keeps; /* PD_COMPAT_KEEPS: the values that keep the math, '|' between them,
                        written as compat_paddle.txt writes defaults: false, 0, 1.0, "", "NCHW",
                        {} (an empty list); false also stands for 0, true for 1 */
  const char *why;   /* what it is in PaddlePaddle (for the refusal message and the docs) */
} pd_compat_fact;

/* The facts, and how many. */
extern const pd_compat_fact pd_compat_facts[];
extern const int pd_compat_nfacts;

/* The fact about attribute (slot false) or input slot (slot true) `name` of op type `type`, or
 * NULL. */
const pd_compat_fact *pd_compat_find(const char *type, const char *name, bool slot);

/* Whether fact f names op type `type` (a NULL ops names every op). */
bool pd_compat_names_op(const pd_compat_fact *f, const char *type);

/* Whether attribute a has one of the values f->keeps lists (PD_COMPAT_ANY: always). */
bool pd_compat_keeps(const pd_compat_fact *f, const pd_attr *a);

/* Apply the facts to every op of every block of p (dropping what changes nothing, converting
 * attributes written in another type: pd_opdef_convert_attr), then check each op against its
 * def (pd_opdef_check). When anything is refused: PD_EINVAL whose message starts "WHAT: pdlang
 * cannot run this program (N problems):" and lists each problem on a line of its own as
 * "  block B op I (TYPE): ...", naming the attribute and its value; what names the file. */
pd_status pd_compat_apply(pd_program *p, const char *what, pd_error *err);

#endif /* PD_VM_OPS_COMPAT_H */
