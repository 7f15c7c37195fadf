/* reader_categories.c -- the categories of a run's CSV text columns (csv(..., categorical =)):
 * for each column name, its values in id order. The first reader of a column fixes them (its
 * distinct values, sorted by their bytes: the ids do not depend on the rows' order); later
 * readers of a column of that name (a test file, a validation file) map through them, and a
 * value the first did not have is an error naming its line. save writes them beside the model
 * and load reads them back, so that a later run maps the same way. */
#include "config.h"
#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

#include <stdlib.h>
#include <string.h>

static const pd_loc nowhere = {0};

typedef struct cat_column {
  char *name;
  int64_t n;
  char **vals;    /* sorted by bytes (memcmp, then the shorter first): id order */
  size_t *lens;
} cat_column;

struct pd_categories {
  cat_column *cols;
  int n;
  size_t cap;
};

pd_categories *pd_categories_new(void) { return pd_calloc(1, sizeof(pd_categories)); }

static void column_free(cat_column *c) {
  for (int64_t i = 0; i < c->n; i++) pd_free(c->vals[i]);
  pd_free(c->vals);
  pd_free(c->lens);
  pd_free(c->name);
}

void pd_categories_free(pd_categories *c) {
  if (!c) return;
  for (int i = 0; i < c->n; i++) column_free(&c->cols[i]);
  pd_free(c->cols);
  pd_free(c);
}

int pd_categories_count(const pd_categories *c) { return c ? c->n : 0; }

static int bytes_cmp(const char *a, size_t la, const char *b, size_t lb) {
  int r = memcmp(a, b, la < lb ? la : lb);
  return r ? r : la < lb ? -1 : la > lb;
}

static cat_column *find_column(const pd_categories *c, const char *name) {
  for (int i = 0; i < c->n; i++)
    if (strcmp(c->cols[i].name, name) == 0) return &c->cols[i];
  return NULL;
}

/* The id of s in col, or -1. */
static int64_t lookup(const cat_column *col, const char *s, size_t len) {
  int64_t lo = 0, hi = col->n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int r = bytes_cmp(col->vals[mid], col->lens[mid], s, len);
    if (r == 0) return mid;
    if (r < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* Add a column (name and values copied; vals sorted and distinct). */
static pd_status add_column(pd_categories *c, const char *name, int64_t n,
                            const char *const *vals, const size_t *lens) {
  if (PD_GROW(c->cols, c->cap, c->n + 1)) return PD_ENOMEM;
  cat_column col = {pd_strdup(name), 0, pd_calloc((size_t)(n ? n : 1), sizeof(char *)),
                    pd_calloc((size_t)(n ? n : 1), sizeof(size_t))};
  pd_status st = col.name && col.vals && col.lens ? PD_OK : PD_ENOMEM;
  for (int64_t i = 0; i < n && !st; i++) {
    if (!(col.vals[i] = pd_strndup(vals[i], lens[i]))) st = PD_ENOMEM;
    col.lens[i] = lens[i];
    col.n = i + 1;
  }
  if (st) {
    column_free(&col);
    return st;
  }
  c->cols[c->n++] = col;
  return PD_OK;
}

typedef struct cell_ref {
  const char *s;
  size_t len;
} cell_ref;

static int ref_cmp(const void *a, const void *b) {
  const cell_ref *x = a, *y = b;
  return bytes_cmp(x->s, x->len, y->s, y->len);
}

/* An unknown value: the message lists the column's first categories. */
static pd_status unknown_value(const cat_column *col, const char *path, int line,
                               const char *s, size_t len, pd_error *err) {
  pd_buf b;
  pd_buf_init(&b);
  for (int64_t i = 0; i < col->n && i < 8; i++)
    pd_buf_printf(&b, "%s'%.*s'", i ? ", " : "", (int)(col->lens[i] > 40 ? 40 : col->lens[i]),
                  col->vals[i]);
  if (col->n > 8) pd_buf_printf(&b, ", ... (%lld in all)", (long long)col->n);
  pd_status st = pd_error_set(err, PD_EFORMAT, nowhere,
                              "%s:%d: column '%s': '%.*s' is not one of the categories the "
                              "column's first reader found: %s",
                              path, line, col->name, (int)(len > 40 ? 40 : len), s,
                              b.data ? b.data : "");
  pd_buf_free(&b);
  return st;
}

pd_status pd_categories_map(struct pd_categories *c, const char *name, const char *path, int64_t n,
                            const char *const *s, const size_t *len, const int *lines,
                            int64_t *ids, int64_t *k, pd_error *err) {
  cat_column *col = find_column(c, name);
  if (!col) {  /* the first reader of this column: its distinct values, sorted */
    cell_ref *refs = pd_malloc((size_t)(n ? n : 1) * sizeof *refs);
    const char **vals = pd_malloc((size_t)(n ? n : 1) * sizeof *vals);
    size_t *lens = pd_malloc((size_t)(n ? n : 1) * sizeof *lens);
    pd_status st = refs && vals && lens ? PD_OK : PD_ENOMEM;
    int64_t m = 0;
    if (!st) {
      for (int64_t i = 0; i < n; i++) refs[i] = (cell_ref){s[i], len[i]};
      qsort(refs, (size_t)n, sizeof *refs, ref_cmp);
      for (int64_t i = 0; i < n; i++)
        if (m == 0 || ref_cmp(&refs[i], &refs[m - 1]) != 0) refs[m++] = refs[i];
      for (int64_t i = 0; i < m; i++) vals[i] = refs[i].s, lens[i] = refs[i].len;
      st = add_column(c, name, m, vals, lens);
    }
    pd_free(refs);
    pd_free(vals);
    pd_free(lens);
    if (st) return pd_error_set(err, st, nowhere, "out of memory reading '%s'", path);
    col = &c->cols[c->n - 1];
  }
  for (int64_t i = 0; i < n; i++) {
    ids[i] = lookup(col, s[i], len[i]);
    if (ids[i] < 0) return unknown_value(col, path, lines[i], s[i], len[i], err);
  }
  *k = col->n;
  return PD_OK;
}

/* ---- The file: a comment line, then "COLUMN\tVALUE\n" per value in id order, with tab,
 * newline, carriage return and backslash written \t \n \r \\. ---- */

static void put_escaped(pd_buf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    switch (s[i]) {
      case '\t': pd_buf_puts(b, "\\t"); break;
      case '\n': pd_buf_puts(b, "\\n"); break;
      case '\r': pd_buf_puts(b, "\\r"); break;
      case '\\': pd_buf_puts(b, "\\\\"); break;
      default: pd_buf_append(b, s + i, 1);
    }
  }
}

void pd_categories_format(const pd_categories *c, pd_buf *b) {
  pd_buf_puts(b, "# pdlang categories: the values of each categorical CSV column, in id order "
                 "(COLUMN<tab>VALUE)\n");
  for (int i = 0; i < c->n; i++)
    for (int64_t j = 0; j < c->cols[i].n; j++) {
      put_escaped(b, c->cols[i].name, strlen(c->cols[i].name));
      pd_buf_puts(b, "\t");
      put_escaped(b, c->cols[i].vals[j], c->cols[i].lens[j]);
      pd_buf_puts(b, "\n");
    }
}

pd_status pd_categories_save(const pd_categories *c, const char *path, pd_error *err) {
  pd_buf b;
  pd_buf_init(&b);
  pd_categories_format(c, &b);
  pd_status st = b.oom ? pd_error_set(err, PD_ENOMEM, nowhere, "out of memory")
                       : pd_write_file_atomic(path, b.data ? b.data : "", b.len, err);
  pd_buf_free(&b);
  return st;
}

/* Undo put_escaped in place over [s, s + *n): false for a bad escape. */
static bool unescape(char *s, size_t *n) {
  size_t w = 0;
  for (size_t i = 0; i < *n; i++) {
    if (s[i] != '\\') {
      s[w++] = s[i];
      continue;
    }
    if (++i == *n) return false;
    char e = s[i];
    s[w++] = e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == '\\' ? '\\' : 0;
    if (!s[w - 1]) return false;
  }
  *n = w;
  return true;
}

pd_status pd_categories_load(pd_categories *c, const char *path, pd_error *err) {
  char *text;
  size_t len;
  pd_status st = pd_read_file(path, &text, &len, err);
  if (st) return st;
  pd_categories *f = pd_categories_new();   /* the file's columns, then merged into c */
  const char **vals = NULL;
  size_t *lens = NULL, cap = 0, cap2 = 0;
  int64_t nv = 0;
  char *name = NULL;
  int line = 0;
  if (!f) st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  char *p = text, *end = text + len;
  while (!st) {
    bool eof = p >= end;
    char *nl = eof ? end : memchr(p, '\n', (size_t)(end - p));
    if (!nl) nl = end;
    line++;
    char *tab = eof ? NULL : memchr(p, '\t', (size_t)(nl - p));
    bool comment = !eof && *p == '#';
    size_t nlen = tab ? (size_t)(tab - p) : 0, vlen = tab ? (size_t)(nl - tab - 1) : 0;
    if (!eof && !comment && (!tab || !unescape(p, &nlen) || !unescape(tab + 1, &vlen) ||
                             nlen == 0))
      st = pd_error_set(err, PD_EFORMAT, nowhere, "%s:%d: not a categories line (COLUMN, a tab, "
                        "VALUE)", path, line);
    bool other = !eof && !comment && !st && name &&
                 (strlen(name) != nlen || memcmp(name, p, nlen) != 0);
    if (!st && (eof || other) && name) {   /* a column ends */
      if (find_column(f, name))
        st = pd_error_set(err, PD_EFORMAT, nowhere, "%s: column '%s' appears in two places",
                          path, name);
      else if ((st = add_column(f, name, nv, vals, lens)))
        st = pd_error_set(err, st, nowhere, "out of memory");
      pd_free(name);
      name = NULL;
      nv = 0;
    }
    if (st || eof) break;
    if (!comment) {
      if (!name && !(name = pd_strndup(p, nlen))) {
        st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
        break;
      }
      if (PD_GROW(vals, cap, (size_t)nv + 1) || PD_GROW(lens, cap2, (size_t)nv + 1)) {
        st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
        break;
      }
      vals[nv] = tab + 1;
      lens[nv] = vlen;
      if (nv > 0 && bytes_cmp(vals[nv - 1], lens[nv - 1], vals[nv], vlen) >= 0) {
        st = pd_error_set(err, PD_EFORMAT, nowhere, "%s:%d: the values of column '%s' are not "
                          "in increasing order without repeats, as pdlang writes them", path,
                          line, name);
        break;
      }
      nv++;
    }
    p = nl < end ? nl + 1 : end;
  }
  for (int i = 0; !st && i < f->n; i++) {  /* a column c has already must agree */
    const cat_column *fc = &f->cols[i], *cc = find_column(c, fc->name);
    bool same = cc && cc->n == fc->n;
    for (int64_t j = 0; same && j < fc->n; j++)
      same = bytes_cmp(cc->vals[j], cc->lens[j], fc->vals[j], fc->lens[j]) == 0;
    if (cc && !same)
      st = pd_error_set(err, PD_EINVAL, nowhere, "%s: column '%s' has other categories than "
                        "this run's readers found (%lld here, %lld in the run)", path, fc->name,
                        (long long)fc->n, (long long)cc->n);
  }
  for (int i = 0; !st && i < f->n; i++)  /* then the new ones join c */
    if (!find_column(c, f->cols[i].name) &&
        (st = add_column(c, f->cols[i].name, f->cols[i].n, (const char *const *)f->cols[i].vals,
                         f->cols[i].lens)))
      st = pd_error_set(err, st, nowhere, "out of memory");
  pd_free(name);
  pd_free(vals);
  pd_free(lens);
  pd_categories_free(f);
  pd_free(text);
  return st;
}
