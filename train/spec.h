/* spec.h -- what the registries of readers (train/readers.h) and optimizers
 * (train/optimizers.h) say of each entry: its parameters in positional order, each with its
 * default as the docs write it, its meaning and its type. The compiler makes a record of a call from it
 * (lang/builtins_action.c: keyword lookup, required arguments), :help NAME shows it, and
 * tests/lang/test_spec_help.c checks every default against doc/language.md.
 *
 * Ownership: static tables. */
#ifndef PD_SPEC_H
#define PD_SPEC_H

/* The kind of value a parameter takes. The compiler refuses an argument of another kind at the
 * argument, naming the parameter and the type (`adam: 'beta1' must be a number, not a
 * string`); an optional parameter (dflt not NULL) also takes none, its default. What a value
 * must be beyond its kind (a range, one of some names) the reader's or optimizer's own checks
 * say. */
typedef enum pd_spec_type {
  PD_SPEC_ANY,       /* not checked here (the initializers' rows) */
  PD_SPEC_NUM,       /* a number (an integer or a float) */
  PD_SPEC_INT,       /* an integer */
  PD_SPEC_BOOL,      /* true or false */
  PD_SPEC_STR,       /* a string */
  PD_SPEC_STR_LIST,  /* a list of strings */
  PD_SPEC_STRS,      /* a string or a list of strings */
  PD_SPEC_NUMS,      /* a number or a list of numbers */
  PD_SPEC_INT_LIST,  /* a list of integers */
} pd_spec_type;

typedef struct pd_spec_param {
  const char *name, *dflt, *meaning;   /* dflt NULL: required */
  pd_spec_type type;
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
