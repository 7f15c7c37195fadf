/* unit.h -- what a compiled script hands the runtime (train/): the unit (the main and startup
 * programs and the actions, in order) and the values its actions carry (compile-time values
 * frozen: numbers, strings, lists, reader and optimizer records). lang/ makes them
 * (lang/compile.h: pd_compile, pd_unit_free); the runner (train/run.h) and the trainer read
 * them. Defined here, below lang/, so that the runtime needs no header of the compiler.
 *
 * Ownership: a unit owns its programs, actions and every value an action refers to (lang/'s
 * pd_unit_free releases all); the functions here borrow. */
#ifndef PD_UNIT_H
#define PD_UNIT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "vm/ir/program.h"

/* A compile-time value as actions see it (the compiler's own values, frozen). */
typedef enum pd_cval_kind {
  PD_CVAL_NONE,
  PD_CVAL_BOOL,
  PD_CVAL_INT,
  PD_CVAL_FLOAT,
  PD_CVAL_STRING,
  PD_CVAL_LIST,
  PD_CVAL_TENSOR,   /* a var of the main program's block 0: `var` names it */
  PD_CVAL_RECORD,   /* a reader or optimizer spec: `name` with keyword fields, e.g. adam(0.001) */
  PD_CVAL_DTYPE,
  PD_CVAL_FUNC,     /* a function value (an activation passed as act = relu): `name` */
} pd_cval_kind;

typedef struct pd_cval pd_cval;
typedef struct pd_cfield {
  const char *key;
  const pd_cval *value;
  pd_loc loc;             /* where the argument was written */
} pd_cfield;

struct pd_cval {
  pd_cval_kind kind;
  bool b;                 /* BOOL */
  int64_t i;              /* INT */
  double f;               /* FLOAT */
  pd_dtype dtype;         /* DTYPE */
  const char *str;        /* STRING: the text; TENSOR: the var name; RECORD, FUNC: the name */
  int n;                  /* LIST: items; RECORD: fields */
  const pd_cval **items;  /* LIST */
  pd_cfield *fields;      /* RECORD: the arguments given, keyed by their parameter's name */
  pd_loc loc;             /* RECORD: where its call was written */
};

/* A record's field by its parameter's name; NULL if the argument was not given. */
const pd_cval *pd_cval_field(const pd_cval *record, const char *key);
/* A reader's or optimizer's argument as its parameter's type (train/spec.h), which the compiler
 * checked: dflt when it was not given (or is none). */
int64_t pd_cval_int_field(const pd_cval *record, const char *key, int64_t dflt);
bool pd_cval_bool_field(const pd_cval *record, const char *key, bool dflt);
const char *pd_cval_str_field(const pd_cval *record, const char *key, const char *dflt);
/* Where a record's field was written, else the record's call, else `fallback`: for errors that
 * show up when the value is used (a reader's file that cannot be opened). */
pd_loc pd_cval_field_loc(const pd_cval *record, const char *key, pd_loc fallback);
/* Append a readable form of v to out ("0.001", "[1, 2]", "adam(0.001)", "tensor fc_0.tmp_1"). */
void pd_cval_format(const pd_cval *v, pd_buf *out);

typedef enum pd_action_kind {
  PD_ACTION_PRINT,
  PD_ACTION_TRAIN,
  PD_ACTION_EVAL,
  PD_ACTION_SAVE,
  PD_ACTION_LOAD,
  PD_ACTION_ASSERT_CLOSE,
  PD_ACTION_PREDICT,
} pd_action_kind;
#define PD_ACTION_NKINDS (PD_ACTION_PREDICT + 1)

const char *pd_action_name(pd_action_kind kind); /* "train", ... */

/* One action: positional arguments (tensors and compile-time values, in order) and keyword
 * options. Which arguments an action takes was checked by the compiler:
 *   print(v, ...)                      args: the values to show
 *   train(cost, reader=, batch=, epochs=, optimizer=, shuffle=, seed=, checkpoint=, log_every=)
 *   eval(metric, ..., reader=, batch=)
 *   save(path, target, ...)            args[0] is the path (STRING)
 *   load(path)
 *   assert_close(a, b, tol=)
 *   predict(y, reader=, out=, batch=)  */
typedef struct pd_action {
  pd_action_kind kind;
  pd_loc loc;             /* the call's name */
  int nargs;
  const pd_cval **args;
  const char **arg_text;  /* each argument as written ("accuracy(y, label)"); an entry may be
                             NULL when the source is unknown */
  pd_loc *arg_loc;        /* where each argument was written (for errors about the file a
                             string argument names) */
  int nopts;
  pd_cfield *opts;        /* keyword arguments (loc: where each value was written) */
} pd_action;

/* Look up a keyword option of an action; NULL if absent. */
const pd_cval *pd_action_opt(const pd_action *a, const char *key);

typedef struct pd_unit {
  pd_program *main;       /* the model: forward ops only (train builds its training program
                             from a pruned copy: vm/passes/pipeline.h) */
  pd_program *startup;    /* parameter initialisers, run once */
  int nactions;
  pd_action *actions;
  void *priv;             /* private: arenas, loaded sources */
} pd_unit;

#endif /* PD_UNIT_H */
