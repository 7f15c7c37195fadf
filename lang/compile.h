/* compile.h -- the compiler: a parsed .pd script (lang/ast.h) becomes a compilation unit: the main
 * ProgramDesc (definitions lowered to ops in nested blocks), the startup ProgramDesc (parameter
 * initialisers), and the list of actions (train, eval, print, save, load, assert_close) that run
 * the program in order. The whole file is compiled and checked -- names, types, shapes -- before
 * anything runs.
 *
 * Compile-time vs run-time: numbers, strings, booleans, `none`, lists, functions and dtypes are
 * compile-time values; an `if` over one of them is resolved here, as a Python `if` is when a graph
 * is built. Tensors are run-time values: an expression over them appends ops to the current block.
 *
 * Ownership: pd_unit owns its programs, actions, the sources it loaded (imports) and every value an
 * action refers to; pd_unit_free releases all. The pd_source passed in is borrowed and must outlive
 * the unit (diagnostics and op locations point at its name). Diagnostics go to the caller's
 * pd_diags; nothing is printed. */
#ifndef PD_COMPILE_H
#define PD_COMPILE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/diag.h"
#include "train/unit.h"
#include "vm/ir/program.h"

/* Where `import "name"` looks, in order: the directories in $PDLANG_PATH (':'-separated), the
 * stdlib directory, then the importing script's folder. `stdlib_dir` NULL means the built-in
 * default (the installed stdlib, else the source tree's). */
typedef struct pd_compile_set pd_compile_set;
typedef struct pd_compile_options {
  const char *stdlib_dir;
  /* Overrides of the script's top-level bindings (`pdlang run --set NAME=VALUE`), applied to
   * the parsed script before it compiles: each names a binding that the main script makes once
   * at its top level (`batch = 64`, `let lr = 0.01`) to a literal number, string or boolean,
   * and replaces that literal with `value`, read as the literal's type (an integer for an
   * integer, any number for a float, true or false, any text for a string). An unknown name,
   * a name bound more than once or to an expression, or a value of another type is an error
   * (reported to the diags like a compile error, naming `option`). Borrowed. */
  int nsets;
  const pd_compile_set *sets;
} pd_compile_options;

struct pd_compile_set {
  const char *name;    /* the binding */
  const char *value;   /* its new value, as written on the command line */
  const char *option;  /* the option as the user wrote it ("--set batch=64"), for messages */
};

/* Compile a whole script. Returns PD_OK and *out, or PD_ECOMPILE / PD_ESYNTAX with every error
 * reported to diags (compilation goes on after an error to find more, up to the diags' limit),
 * or PD_ENOMEM. On failure *out is NULL. */
pd_status pd_compile(const pd_source *src, const pd_compile_options *opts, pd_diags *diags,
                     pd_unit **out);
void pd_unit_free(pd_unit *unit);

/* The source a location of the unit points into: main (the script passed to pd_compile) when
 * file is its name, else the imported module of that name; NULL when none. For rendering
 * run-time errors, whose locations come from the ops, with the line and a caret. */
const pd_source *pd_unit_source(const pd_unit *unit, const pd_source *main, const char *file);
/* Render a run-time error of the unit's programs (pd_diag_render_error_in): its line and each
 * call it is inside, innermost first, shown from main or the module they are in. */
void pd_unit_render_error(pd_buf *out, const pd_unit *unit, const pd_source *main,
                          const pd_error *err);

/* The built-in functions whose names start with prefix ("" for all), in sorted order: the first
 * cap names go to out (static strings, not to be freed); returns how many match. For completion
 * at a prompt. */
int pd_builtin_names(const char *prefix, const char **out, int cap);
/* A built-in function's signature and what it is, as the compiler's tables say it (one or two
 * lines, appended to out), for the REPL's :help. False when name is not a builtin. */
bool pd_builtin_describe(const char *name, pd_buf *out);
/* :help of a reader, optimizer, initializer, action or learning-rate schedule: its signature with the defaults, what
 * it is, and a line per parameter (its default and meaning), from the one table of
 * lang/builtins_action.c; false for another name. */
bool pd_cmp_spec_describe(const char *name, pd_buf *out);
/* That table, for tests/lang/test_spec_help.c: spec or action i (readers, optimizers and
 * initializers first, then the actions; false past the last), its parameter k's name (NULL past
 * its last, or when the keyword list and the help disagree), default (NULL: required or
 * described in the meaning) and meaning. */
bool pd_cmp_spec_param(int i, int k, const char **spec, const char **param, const char **dflt,
                       const char **meaning);
/* The learning-rate schedules lr_schedule names ("constant", "step", "cosine"; :help NAME
 * describes each): schedule i, NULL past the last. */
const char *pd_cmp_schedule(int i);

#endif /* PD_COMPILE_H */
