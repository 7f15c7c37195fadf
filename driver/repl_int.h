/* repl_int.h -- private to the REPL session (driver/repl.c, driver/repl_gc.c): the session's
 * record and the helpers both files use. Not part of driver/repl.h's interface.
 *
 * Ownership: as in repl.h; a namelist's names are borrowed unless said otherwise. */
#ifndef PD_REPL_INT_H
#define PD_REPL_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/diag.h"
#include "driver/repl.h"
#include "lang/compile.h"
#include "train/run.h"

struct pd_repl {
  pd_repl_options o;
  pd_source *src;       /* the text of the statements that succeeded (unit was compiled from it) */
  int src_lines;        /* newlines in src's text */
  int gap;              /* lines typed after src's text that it does not keep (statements that
                           failed, bare expressions, commands): blank lines before the next
                           statement, so that line numbers only grow */
  pd_unit *unit;
  pd_runner *runner;    /* runs unit; holds the global scope */
  int nrun;             /* unit's actions that have run */
  pd_buf pending;       /* lines of the statement being read */
  bool incomplete;      /* pending is an unfinished statement */
  const char *label;    /* the bare expression being shown when it is a name, else NULL */
  const pd_source *shown; /* the text errors of a bare expression are shown in (see eval_pending) */
  /* Completion */
  unsigned gen;         /* bumped whenever src changes */
  char **words;         /* identifiers of src, as of generation words_gen */
  int nwords;
  unsigned words_gen;
  char **lib;           /* functions defined by the stdlib modules */
  int nlib;
  bool lib_loaded;
  const char **cands;   /* the last candidates returned */
  size_t capcands;
  pd_buf made;          /* candidates made for the last completion (file names, "name = "),
                           NUL-separated */
};

typedef struct namelist {
  const char **names;
  size_t n, cap;
  bool oom;
} namelist;

/* The kinds of token pd_repl_scan returns. */
enum { T_END, T_IDENT, T_NEWLINE, T_SEMI, T_OTHER };

/* repl.c: a rough scanner for text that already parsed (identifiers, and where code ends;
 * strings and comments skipped): the next token of s[*pos, len), its start in *start. */
int pd_repl_scan(const char *s, size_t len, size_t *pos, size_t *start);
/* Print a run-time error of unit (its sources: src and its modules), or a message. */
void pd_repl_print_error(pd_repl *r, const pd_unit *unit, const pd_source *src,
                         const pd_error *err);
void pd_repl_say_error(pd_repl *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Compile text as the session's source. Diagnostics are printed unless quiet. */
pd_status pd_repl_compile_text(pd_repl *r, const char *text, size_t len, bool quiet,
                               pd_source **src_out, pd_unit **unit_out);
/* Add name (borrowed) unless it is there already; l->oom on out of memory. */
void pd_repl_names_add(namelist *l, const char *name);

/* The first line of :help NAME's text (a def's signature, a builtin's) appended to out, and
 * the rest; false when there is no such function. */
bool pd_repl_help_text(pd_repl *r, const char *name, pd_buf *out);

/* repl_gc.c: orphan parameters. A statement whose names are all bound again before anything
 * reads them (h = fc(x, 3), later h = fc(x, 5)) leaves parameters that nothing reaches. */
bool pd_repl_names_has(const namelist *l, const char *name);
/* Free a namelist whose names are owned copies. */
void pd_repl_names_free(namelist *l);
/* The session's text without such statements (each dropped only if the text still compiles
 * without it): *src_out and *unit_out (NULL when none can go), and in *orphans (owned copies:
 * pd_repl_names_free) the parameters they made; the number dropped, or -1 on out of memory. */
int pd_repl_gc_plan(pd_repl *r, pd_source **src_out, pd_unit **unit_out, namelist *orphans);
/* :gc -- drop those statements (blank lines in their place, so that line numbers stay) and the
 * values of the parameters only they made; later layers' values follow their new names. */
pd_repl_result pd_repl_gc(pd_repl *r);

#endif /* PD_REPL_INT_H */
