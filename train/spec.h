/* spec.h -- what the registries of readers (train/readers.h) and optimizers
 * (train/optimizers.h) say of each entry: its parameters in positional order, each with its
 * default as the docs write it and its meaning. The compiler makes a record of a call from it
 * (lang/builtins_action.c: keyword lookup, required arguments), :help NAME shows it, and
 * tests/lang/test_spec_help.c checks every default against doc/language.md.
 *
 * Ownership: static tables. */
#ifndef PD_SPEC_H
#define PD_SPEC_H

typedef struct pd_spec_param {
  const char *name, *dflt, *meaning;   /* dflt NULL: required */
} pd_spec_param;

#define PD_SPEC_MAX_PARAMS 12

typedef struct pd_spec {
  const char *name;
  const char *params[PD_SPEC_MAX_PARAMS];  /* the names of help[], NULL-terminated */
  int required;                            /* the first `required` must be given */
  const char *what;
  pd_spec_param help[PD_SPEC_MAX_PARAMS];
} pd_spec;

#endif /* PD_SPEC_H */
