/* builtins_int.h -- what the builtins' files (lang/builtins.c, lang/builtins_action.c) share:
 * the argument helpers, defined once in builtins.c, and the builtin functions that the table in
 * builtins.c names but another file defines. Internal to the compiler. */
#ifndef PD_BUILTINS_INT_H
#define PD_BUILTINS_INT_H

#include "lang/compile_int.h"

/* Positional argument i (i >= 0), or the keyword argument `name`; NULL when absent. *loc (when
 * loc is not NULL) gets the argument's location, or the call's when absent. */
value *pd_cmp_arg(call_args *a, int i, const char *name, pd_loc *loc);
/* At most `npos` positional arguments; keywords among `names` (NULL-terminated). The first
 * `named_pos` names are also positions, so a keyword may not repeat one given positionally.
 * Reports the error and returns false otherwise. */
bool pd_cmp_check_args_kw(C *c, call_args *a, int npos, const char *const *names, int named_pos);
/* pd_cmp_check_args_kw with every positional argument named. */
bool pd_cmp_check_args(C *c, call_args *a, int npos, const char *const *names);
/* Argument i or `name`; reports its absence and returns VERR when it is missing. */
value *pd_cmp_need(C *c, call_args *a, int i, const char *name);
/* Whether v is a tensor; reports (unless v is already an error) and returns false otherwise. */
bool pd_cmp_want_tensor_arg(C *c, value *v, pd_loc loc, const char *fname, const char *what);
/* Whether the compiler is in the program's top-level block (actions and data live there). */
bool pd_cmp_in_global_block(C *c);
/* A compile-time list of dimensions (each positive, or -1 with allow_unknown) into dims[*n];
 * reports "WHAT must be a list of ..." at loc and returns false otherwise. */
bool pd_cmp_value_to_dims(C *c, value *v, pd_loc loc, const char *what, int64_t *dims, int *n,
                          bool allow_unknown);
/* The `dtype` argument (position i, or by keyword) into *dt, float32 when absent; reports and
 * returns false when it is not a dtype. */
bool pd_cmp_dtype_arg(C *c, call_args *a, int i, pd_dtype *dt);

/* builtins_action.c: reader, optimizer and initializer specs (a record of the arguments) and the
 * actions (recorded in the unit; run after compilation). */
value *pd_cmp_b_record(C *c, const builtin *self, call_args *a);
value *pd_cmp_b_action(C *c, const builtin *self, call_args *a);
/* For help text: the parameters of a reader/optimizer/initializer spec (NULL-terminated, the
 * first *required of them required) or of an action (its keywords, NULL-terminated, and in
 * *pos its positional arguments as text); NULL when name is not one. */
const char *const *pd_cmp_record_params(const char *name, int *required);
const char *const *pd_cmp_action_params(const char *name, const char **pos);

/* builtins_op.c: op(type, Slot = tensor, ..., attr = value, ..., outputs = [...]). */
value *pd_cmp_b_op(C *c, const builtin *self, call_args *a);

/* import_model.c: import_model(path, prefix =, trainable =, freeze =). */
value *pd_cmp_b_import_model(C *c, const builtin *self, call_args *a);

/* builtins_random.c: the random ops of the language (uniform_random, gaussian_random, sample). */
value *pd_cmp_b_random_fill(C *c, const builtin *self, call_args *a);
value *pd_cmp_b_sample(C *c, const builtin *self, call_args *a);

#endif /* PD_BUILTINS_INT_H */
