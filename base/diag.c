/* diag.c -- in-memory sources with a line index, and gcc-style rendering of diagnostics. */
#include "config.h"
#include "base/diag.h"

#include <stdio.h>
#include <string.h>

static pd_status index_lines(pd_source *s) {
  size_t cap = 0;
  s->nlines = 0;
  s->lines = NULL;
  if (PD_GROW(s->lines, cap, 1)) return PD_ENOMEM;
  s->lines[s->nlines++] = 0;
  for (size_t i = 0; i < s->len; i++) {
    if (s->text[i] == '\n' && i + 1 < s->len) {
      if (PD_GROW(s->lines, cap, s->nlines + 1)) return PD_ENOMEM;
      s->lines[s->nlines++] = i + 1;
    }
  }
  return PD_OK;
}

static pd_status source_take(const char *name, char *text, size_t len, pd_source **out) {
  pd_source *s = pd_calloc(1, sizeof *s);
  if (!s) {
    pd_free(text);
    return PD_ENOMEM;
  }
  s->text = text;
  s->len = len;
  s->name = pd_strdup(name);
  if (!s->name || index_lines(s) != PD_OK) {
    pd_source_free(s);
    return PD_ENOMEM;
  }
  *out = s;
  return PD_OK;
}

pd_status pd_source_open(const char *path, pd_source **out, pd_error *err) {
  char *text;
  size_t len;
  *out = NULL;
  pd_status st = pd_read_file(path, &text, &len, err);
  if (st) return st;
  st = source_take(path, text, len, out);
  if (st) return pd_error_set(err, st, (pd_loc){0}, "out of memory loading '%s'", path);
  return PD_OK;
}

pd_status pd_source_from_string(const char *name, const char *text, size_t len, pd_source **out) {
  *out = NULL;
  char *copy = pd_malloc(len + 1);
  if (!copy) return PD_ENOMEM;
  memcpy(copy, text, len);
  copy[len] = '\0';
  return source_take(name, copy, len, out);
}

void pd_source_free(pd_source *src) {
  if (!src) return;
  pd_free(src->name);
  pd_free(src->text);
  pd_free(src->lines);
  pd_free(src);
}

const char *pd_source_line(const pd_source *src, int line, size_t *len) {
  if (!src || line < 1 || (size_t)line > src->nlines) return NULL;
  size_t start = src->lines[line - 1];
  size_t end = start;
  while (end < src->len && src->text[end] != '\n') end++;
  if (end > start && src->text[end - 1] == '\r') end--;
  *len = end - start;
  return src->text + start;
}

void pd_diags_init(pd_diags *d, int max_errors) {
  pd_buf_init(&d->text);
  d->nerrors = 0;
  d->max_errors = max_errors > 0 ? max_errors : 20;
}

void pd_diags_free(pd_diags *d) { pd_buf_free(&d->text); }

/* Echo at most this many bytes of a source line; longer lines show a window around the column. */
enum { SNIPPET_WIDTH = 120 };

void pd_diag_render_snippet(pd_buf *out, const pd_source *src, pd_loc loc) {
  size_t len;
  const char *line = pd_source_line(src, loc.line, &len);
  if (!line) return;
  size_t col = loc.col > 0 ? (size_t)loc.col - 1 : 0;
  if (col > len) col = len;
  size_t from = 0, to = len;
  if (len > SNIPPET_WIDTH) {
    from = col > SNIPPET_WIDTH / 2 ? col - SNIPPET_WIDTH / 2 : 0;
    to = from + SNIPPET_WIDTH < len ? from + SNIPPET_WIDTH : len;
  }
  const char *lead = from > 0 ? "..." : "";
  /* The gutter is as wide as the line number (at least 5), the caret line's too. */
  char num[24];
  int w = snprintf(num, sizeof num, "%5d", loc.line);
  pd_buf_printf(out, "%s | %s", num, lead);
  for (size_t i = from; i < to; i++) {
    unsigned char c = (unsigned char)line[i];
    char ch = (c == '\t' || c >= 0x20) && c != 0x7f ? (char)c : '?';
    pd_buf_append(out, &ch, 1);
  }
  pd_buf_printf(out, "%s\n%*s | %s", to < len ? "..." : "", w, "", lead);
  /* The caret sits under the column's character: one space per displayed character before it
   * (UTF-8 continuation bytes take no room), tabs copied so that the terminal aligns them. */
  for (size_t i = from; i < col; i++) {
    unsigned char c = (unsigned char)line[i];
    if ((c & 0xC0) == 0x80) continue;
    pd_buf_append(out, c == '\t' ? "\t" : " ", 1);
  }
  pd_buf_puts(out, "^\n");
}

static const char *const kind_names[] = {"error", "warning", "note"};

static void render(pd_buf *out, const pd_source *src, pd_diag_kind kind, pd_loc loc,
                   const char *msg) {
  const char *file = loc.file ? loc.file : (src ? src->name : NULL);
  if (file && loc.line > 0 && loc.col > 0)
    pd_buf_printf(out, "%s:%d:%d: ", file, loc.line, loc.col);
  else if (file && loc.line > 0) /* a line of a data file, no column: FILE:LINE: */
    pd_buf_printf(out, "%s:%d: ", file, loc.line);
  else if (file)
    pd_buf_printf(out, "%s: ", file);
  pd_buf_printf(out, "%s: %s\n", kind_names[kind], msg ? msg : "(no message)");
  if (src && loc.line > 0) pd_diag_render_snippet(out, src, loc);
}

int pd_diag_reportv(pd_diags *d, const pd_source *src, pd_diag_kind kind, pd_loc loc,
                    const char *fmt, va_list ap) {
  if (kind == PD_DIAG_ERROR) {
    d->nerrors++;
    if (d->nerrors == d->max_errors + 1)
      pd_buf_printf(&d->text, "%s: too many errors (%d), stopping\n",
                    src ? src->name : "pdlang", d->max_errors);
    if (d->nerrors > d->max_errors) return 1;
  } else if (d->nerrors > d->max_errors) {
    return 1; /* notes attached to suppressed errors are dropped too */
  }
  pd_buf msg;
  pd_buf_init(&msg);
  pd_buf_vprintf(&msg, fmt, ap);
  render(&d->text, src, kind, loc, msg.data);
  pd_buf_free(&msg);
  return d->nerrors >= d->max_errors;
}

int pd_diag_report(pd_diags *d, const pd_source *src, pd_diag_kind kind, pd_loc loc,
                   const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = pd_diag_reportv(d, src, kind, loc, fmt, ap);
  va_end(ap);
  return r;
}

/* The text of a call's note, one format for compile-time and run-time chains. */
static void render_call(pd_buf *out, const pd_source *src, pd_loc site, const char *fn) {
  pd_buf msg;
  pd_buf_init(&msg);
  pd_buf_printf(&msg, "'%s' called from here", fn ? fn : "?");
  render(out, src, PD_DIAG_NOTE, site, msg.oom ? NULL : msg.data);
  pd_buf_free(&msg);
}

int pd_diag_report_call(pd_diags *d, const pd_source *src, pd_loc site, const char *fn) {
  if (d->nerrors > d->max_errors) return 1;
  render_call(&d->text, src, site, fn);
  return d->nerrors >= d->max_errors;
}

static const pd_source *same_file(void *ctx, const char *file) {
  const pd_source *src = ctx;
  return src && file && src->name && strcmp(src->name, file) == 0 ? src : NULL;
}

void pd_diag_render_error(pd_buf *out, const pd_source *src, const pd_error *err) {
  render(out, src, PD_DIAG_ERROR, err->loc, err->msg ? err->msg : pd_status_str(err->status));
  for (int i = 0; i < err->ncalls; i++)
    render_call(out, same_file((void *)src, err->calls[i].loc.file), err->calls[i].loc,
                err->calls[i].fn);
}

void pd_diag_render_error_in(pd_buf *out, pd_source_find find, void *ctx, const pd_error *err) {
  render(out, err->loc.file ? find(ctx, err->loc.file) : NULL, PD_DIAG_ERROR, err->loc,
         err->msg ? err->msg : pd_status_str(err->status));
  for (int i = 0; i < err->ncalls; i++) {
    const char *file = err->calls[i].loc.file;
    render_call(out, file ? find(ctx, file) : NULL, err->calls[i].loc, err->calls[i].fn);
  }
}
