/* optimizers.h -- the registry of optimizers and learning-rate schedules: one row each in
 * train/optimizers.c (its name, parameters with their defaults and meanings, train/spec.h, and
 * its kind of vm/passes/optimizer.h). The compiler makes a record of an optimizer's call from
 * its row (lang/builtins_action.c), :help NAME shows it, and train turns the record into a
 * pd_optimizer with pd_optimizer_from_record. A new optimizer is its kind and update ops in
 * vm/passes/optimizer.c and its row here; a parameter of a new name also gets its field in
 * optimizers.c's list of fields.
 *
 * Ownership: the rows are static. */
#ifndef PD_OPTIMIZERS_H
#define PD_OPTIMIZERS_H

#include <stdbool.h>

#include "train/spec.h"
#include "train/unit.h"
#include "vm/passes/optimizer.h"

typedef struct pd_optim_def {
  pd_spec spec;
  pd_opt_kind kind;
} pd_optim_def;

/* Optimizer i (NULL past the last), and an optimizer by name (NULL: none). */
const pd_optim_def *pd_optim(int i);
const pd_optim_def *pd_optim_find(const char *name);

/* The learning-rate schedules lr_schedule names: schedule i's name and what it does (false past
 * the last), and a name's schedule (false: none). */
bool pd_lr_schedule_info(int i, const char **name, const char **what);
bool pd_lr_schedule_find(const char *name, pd_lr_schedule *out);

/* Whether parameter `param` of an optimizer has a field of pd_optimizer (the test of the
 * registry checks every row's), and that field's value in o, as a double (bools 0 or 1,
 * schedules their number). */
bool pd_optim_field(const pd_optimizer *o, const char *param, double *value);

/* The optimizer of record spec (NULL: sgd(0.01)): its kind's defaults (pd_optimizer_defaults),
 * then each parameter given. Errors (PD_EINVAL) at loc, naming the optimizer. */
pd_status pd_optimizer_from_record(const pd_cval *spec, pd_optimizer *o, pd_loc loc,
                                   pd_error *err);

#endif /* PD_OPTIMIZERS_H */
