/* compat.h -- what programs saved by other versions of PaddlePaddle/Fluid carry that does not
 * change the math, as facts beside the op table (vm/oplist.h): per op (or every op), an
 * attribute whose value is a hint to Paddle's own backends (oneDNN, cuDNN, quantization) or
 * is harmless at one value, and input slots Paddle writes bound to no var. pd_compat_apply
 * drops them from a loaded program, refuses the values pdlang cannot honour, and checks every
 * op against its def, listing every problem of the program at once. doc/language.md ("Coming
 * from PaddlePaddle") lists the facts for users; tests/interop tests them. */
#ifndef PD_VM_OPS_COMPAT_H
#define PD_VM_OPS_COMPAT_H

#include "base/base.h"
#include "vm/ir/program.h"

typedef enum pd_compat_rule {
  PD_COMPAT_ANY,        /* any value: dropped */
  PD_COMPAT_FALSE,      /* a bool (or integer): false/0 is dropped, anything else refused */
  PD_COMPAT_EMPTY_STR,  /* a string: "" is dropped, anything else refused */
  PD_COMPAT_EMPTY_SLOT, /* an input slot: bound to no var it is dropped; bound, refused */
} pd_compat_rule;

typedef struct pd_compat_fact {
  const char *op;    /* the op type; NULL: every op */
  const char *name;  /* the attribute, or for PD_COMPAT_EMPTY_SLOT the input slot */
  pd_compat_rule rule;
  const char *why;   /* what it is in PaddlePaddle (for the refusal message and the docs) */
} pd_compat_fact;

/* The facts, and how many. */
extern const pd_compat_fact pd_compat_facts[];
extern const int pd_compat_nfacts;

/* Apply the facts to every op of every block of p (dropping what changes nothing), then check
 * each op against its def (pd_opdef_check). When anything is refused: PD_EINVAL whose message
 * starts "WHAT: pdlang cannot run this program (N problems):" and lists each problem on a line
 * of its own as "  block B op I (TYPE): ...", naming the attribute and its value; what names
 * the file. */
pd_status pd_compat_apply(pd_program *p, const char *what, pd_error *err);

#endif /* PD_VM_OPS_COMPAT_H */
