/* diag.h -- source files held in memory and the rendering of diagnostics:
 *   file:line:col: error: message
 *       3 | x = (1 + )
 *         |          ^
 * Diagnostics are collected into a buffer (pd_diags), never printed here: the driver decides where
 * they go, and the embeddable library stays silent unless asked.
 *
 * Ownership: a pd_source owns its name and text; pd_loc values point at the name, so a source must
 * outlive every location taken from it. pd_diags owns its text buffer. */
#ifndef PD_DIAG_H
#define PD_DIAG_H

#include "base/base.h"

typedef struct pd_source {
  char *name;      /* owned: the path as the user gave it, or "<stdin>", "<repl>" */
  char *text;      /* owned, NUL-terminated (the text itself may contain NUL bytes) */
  size_t len;      /* bytes of text, not counting the terminator */
  size_t *lines;   /* owned: byte offset of the start of each line */
  size_t nlines;
} pd_source;

/* Load a file / wrap a copy of a string. The result is freed with pd_source_free. */
pd_status pd_source_open(const char *path, pd_source **out, pd_error *err);
pd_status pd_source_from_string(const char *name, const char *text, size_t len, pd_source **out);
void pd_source_free(pd_source *src);
/* Line `line` (1-based) without its line break; NULL if out of range. */
const char *pd_source_line(const pd_source *src, int line, size_t *len);

typedef enum pd_diag_kind { PD_DIAG_ERROR, PD_DIAG_WARNING, PD_DIAG_NOTE } pd_diag_kind;

typedef struct pd_diags {
  pd_buf text;     /* the rendered diagnostics, in order */
  int nerrors;     /* errors reported (including ones past the limit) */
  int max_errors;  /* errors rendered before "too many errors" (default 20) */
} pd_diags;

void pd_diags_init(pd_diags *d, int max_errors);
void pd_diags_free(pd_diags *d);
/* Report one diagnostic at `loc`. `src` may be NULL (then no source line is shown). Returns 1 if
 * the error limit has been reached (callers doing error recovery should stop), else 0. */
int pd_diag_report(pd_diags *d, const pd_source *src, pd_diag_kind kind, pd_loc loc,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int pd_diag_reportv(pd_diags *d, const pd_source *src, pd_diag_kind kind, pd_loc loc,
                    const char *fmt, va_list ap);
/* The note that shows one call a diagnostic's location is inside ("FILE:L:C: note: 'fn' called
 * from here" and the call's line): compile-time and run-time errors inside a `def` both show
 * their chain of calls with it, innermost first. Returns as pd_diag_report. */
int pd_diag_report_call(pd_diags *d, const pd_source *src, pd_loc site, const char *fn);
/* Render a pd_error (with its location, if any) the same way, appending to `out`, then a note
 * per call it is inside (err->calls). src is the source of the error's file; a call's line is
 * shown when it is in that file too. */
void pd_diag_render_error(pd_buf *out, const pd_source *src, const pd_error *err);
/* The source of a file a location names, or NULL when it is not available. */
typedef const pd_source *(*pd_source_find)(void *ctx, const char *file);
/* The same with each location's source (the error's and its calls') from find(ctx, file). */
void pd_diag_render_error_in(pd_buf *out, pd_source_find find, void *ctx, const pd_error *err);
/* Render only the "   3 | line\n     |    ^\n" part for loc into `out`. */
void pd_diag_render_snippet(pd_buf *out, const pd_source *src, pd_loc loc);

#endif /* PD_DIAG_H */
