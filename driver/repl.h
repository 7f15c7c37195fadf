/* repl.h -- a REPL session (driver/repl.c): statements typed one at a time, each compiled with
 * every statement before it and run on a runner that keeps the global scope (parameters), plus
 * the `:` commands. The terminal side (line editing, history, prompts, Ctrl-C) is
 * driver/cmd_repl.c.
 *
 * How a statement runs: the session keeps the source text of every statement that succeeded. A
 * new statement is compiled together with that text, from scratch, into a fresh unit; the runner
 * adopts the unit (pd_runner_adopt: parameters keep their values) and runs only the actions the
 * statement added. If anything fails -- syntax, compilation, an action at run time, Ctrl-C --
 * the diagnostic is printed, the runner goes back to the previous unit, the variables the
 * statement created in the global scope are dropped, and the text is not extended: a failed
 * statement adds nothing. At a prompt (`echo`), the values a statement's ops make are computed
 * when it is typed, unless they need data a reader feeds, so that a statement that fails at run
 * time (a runaway while stopped with Ctrl-C) is dropped there too. With `echo` set, a
 * statement that is a bare expression (not a call of an action such as print or train) is
 * evaluated and its value printed, and is not kept.
 *
 * Line numbers in diagnostics are those of the session's text, under the source name given in
 * the options ("<repl>", "<stdin>"): every line typed keeps its number, those of statements that
 * failed, bare expressions, commands and blank lines included (the session's text holds blank
 * lines in their place), so numbers only grow and an error never reuses the number of a
 * statement that was dropped; a script read from a pipe is numbered as its input. Statements
 * of a file loaded with :load are numbered the same way, in the session's text, after the lines
 * typed before.
 *
 * Ownership: pd_repl_new's session is freed with pd_repl_free; it borrows the options' FILEs and
 * interrupt flag. Strings returned by pd_repl_complete belong to the session. */
#ifndef PD_REPL_H
#define PD_REPL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"

typedef struct pd_repl pd_repl;

typedef struct pd_repl_options {
  const char *source_name;            /* the name diagnostics show: "<repl>", "<stdin>" */
  bool echo;                          /* print the value of bare expressions (interactive) */
  FILE *out;                          /* values, print's output, command output */
  FILE *err;                          /* diagnostics; training progress */
  uint64_t seed;                      /* pd_run_options.seed */
  volatile sig_atomic_t *interrupt;   /* Ctrl-C: non-zero stops a running action */
  int place, gpu_index;               /* pd_run_options.place and .gpu_index (:device) */
} pd_repl_options;

/* What feeding a line did. */
typedef enum pd_repl_result {
  PD_REPL_OK,           /* a statement or command ran (or the line was empty) */
  PD_REPL_MORE,         /* the statement goes on: read another line (continuation prompt) */
  PD_REPL_ERROR,        /* an error was printed; the session is as it was before */
  PD_REPL_INTERRUPTED,  /* Ctrl-C stopped an action; the session is as it was before */
  PD_REPL_QUIT,         /* :quit */
} pd_repl_result;

/* A new, empty session. PD_ENOMEM, or an error from the runner, with err filled. */
pd_status pd_repl_new(const pd_repl_options *opts, pd_repl **out, pd_error *err);
void pd_repl_free(pd_repl *r);  /* NULL is a no-op */

/* Feed one line of input (a trailing newline is optional). A line starting with ':' where a
 * statement would start is a command (:help lists them). */
pd_repl_result pd_repl_feed(pd_repl *r, const char *line);
/* True while a statement is incomplete (lines fed since the last complete one). */
bool pd_repl_pending(const pd_repl *r);
/* Forget the incomplete statement (Ctrl-C at the prompt). */
void pd_repl_discard(pd_repl *r);
/* The input ended: an incomplete statement is reported as the syntax error it is (and
 * discarded): PD_REPL_ERROR; else PD_REPL_OK. */
pd_repl_result pd_repl_end(pd_repl *r);
/* Append a file's statements as if typed (`:load FILE.pd`); all or nothing. */
pd_repl_result pd_repl_load(pd_repl *r, const char *path);

/* Completion candidates for the word `prefix` (plen bytes) before the cursor: with `command`,
 * the names of the `:` commands; else names in scope (every name of the session's statements),
 * built-in functions, stdlib layers and keywords. Sorted, without duplicates; *out (owned by the
 * session, valid until the next call) holds the returned count of names. */
int pd_repl_complete(pd_repl *r, const char *prefix, size_t plen, bool command,
                     const char *const **out);
/* Completion in context, for the line before the cursor (len bytes): the word completed starts
 * at line + *word. Inside a string literal, file and folder names (a folder ends in '/'); after
 * `NAME.`, a tensor's attributes (shape, ndim, dtype, lod_level, name); at the start of an
 * argument of a call `f(`, f's keyword parameters as "name = " and the names of
 * pd_repl_complete; else those names (a command's after a leading ':'). Sorted, without
 * duplicates; *out as for pd_repl_complete. */
int pd_repl_complete_at(pd_repl *r, const char *line, size_t len, size_t *word,
                        const char *const **out);

#endif /* PD_REPL_H */
