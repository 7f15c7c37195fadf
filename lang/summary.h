/* summary.h -- a model's summary, as Keras's model.summary() prints it (lang/summary.c): each
 * layer (the ops of one call in the script, by its source line), its output shape and its
 * parameter count, then the totals. `pdlang summary FILE.pd` and the REPL's :summary print it.
 *
 * Ownership: the caller owns the unit, the source and the buffer. */
#ifndef PD_SUMMARY_H
#define PD_SUMMARY_H

#include <stdint.h>

#include "base/diag.h"
#include "lang/compile.h"

typedef struct pd_summary_totals {
  int64_t params;          /* the elements of every parameter of the main program */
  int64_t trainable;       /* of those, in trainable parameters */
  int layers;              /* rows of the table */
} pd_summary_totals;

/* Append the summary of unit's main program to out (src: the script, for the calls' text; may
 * be NULL) and fill *totals (may be NULL). A parameter read by several layers counts once, in
 * the first; parameters no op reads count in the totals only. PD_ENOMEM or PD_OK. */
pd_status pd_unit_summary(const pd_unit *unit, const pd_source *src, pd_buf *out,
                          pd_summary_totals *totals);

#endif /* PD_SUMMARY_H */
