/* reader_csv.c -- CSV files with a header row into a dataset of "features" (fp32) and "label"
 * (int64 when every label cell is an integer, else fp32). */
#include "config.h"
#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const pd_loc nowhere = {0};

typedef struct cell {
  char *s;     /* into the file buffer, unquoted in place; not NUL-terminated */
  size_t len;
} cell;

typedef struct csv {
  const char *path;
  char sep;        /* the delimiter: ',' unless the options say otherwise */
  bool has_fill;   /* missing cells (empty, NA, NaN, N/A) take fill instead of an error */
  double fill;
  char *p, *end;   /* parse position in the file buffer */
  int line;        /* the line where the record being parsed starts */
  int next_line;   /* the line after it */
  cell *cells;
  size_t ncells, cap;
} csv;

/* Spaces around cells are trimmed; so are tabs, unless they are the delimiter. */
static bool is_blank_in(const csv *c, char ch) { return ch == ' ' || (ch == '\t' && c->sep != '\t'); }

/* Parse the next record into c->cells, skipping empty lines. *eof when there is none. Quoted
 * cells ("a,b", "say ""hi""") are unquoted in place; they may span lines. */
static pd_status next_record(csv *c, bool *eof, pd_error *err) {
  c->ncells = 0;
  for (;;) {   /* skip empty lines */
    if (c->p >= c->end) {
      *eof = true;
      return PD_OK;
    }
    if (*c->p == '\n') {
      c->p++;
      c->next_line++;
    } else if (*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n') {
      c->p += 2;
      c->next_line++;
    } else {
      break;
    }
  }
  *eof = false;
  c->line = c->next_line;
  for (;;) {
    while (c->p < c->end && is_blank_in(c, *c->p)) c->p++;
    char *start = c->p, *w = c->p;
    if (c->p < c->end && *c->p == '"') {
      int qline = c->next_line;
      c->p++;
      for (;;) {
        if (c->p >= c->end)
          return pd_error_set(err, PD_EFORMAT, nowhere,
                              "%s:%d: a quoted cell is not closed before the end of the file",
                              c->path, qline);
        if (*c->p == '"') {
          if (c->p + 1 < c->end && c->p[1] == '"') {
            *w++ = '"';
            c->p += 2;
            continue;
          }
          c->p++;
          break;
        }
        if (*c->p == '\n') c->next_line++;
        *w++ = *c->p++;
      }
      while (c->p < c->end && is_blank_in(c, *c->p)) c->p++;
      if (c->p < c->end && *c->p != c->sep && *c->p != '\n' && *c->p != '\r')
        return pd_error_set(err, PD_EFORMAT, nowhere,
                            "%s:%d: unexpected text after the closing quote of cell %zu",
                            c->path, c->next_line, c->ncells + 1);
    } else {
      while (c->p < c->end && *c->p != c->sep && *c->p != '\n' &&
             !(*c->p == '\r' && (c->p + 1 == c->end || c->p[1] == '\n')))
        c->p++;
      w = c->p;
      while (w > start && is_blank_in(c, w[-1])) w--;
    }
    if (PD_GROW(c->cells, c->cap, c->ncells + 1))
      return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", c->path);
    c->cells[c->ncells].s = start;
    c->cells[c->ncells].len = (size_t)(w - start);
    c->ncells++;
    if (c->p < c->end && *c->p == c->sep) {
      c->p++;
      continue;
    }
    if (c->p < c->end && *c->p == '\r') c->p++;
    if (c->p < c->end && *c->p == '\n') {
      c->p++;
      c->next_line++;
    }
    return PD_OK;
  }
}

/* The cell as a NUL-terminated string in buf (cut to fit, for messages). */
static const char *cell_text(const cell *x, char *buf, size_t cap) {
  size_t n = x->len < cap - 1 ? x->len : cap - 1;
  memcpy(buf, x->s, n);
  buf[n] = '\0';
  if (x->len > n && cap > 4) memcpy(buf + cap - 4, "...", 4);
  return buf;
}

static bool cell_is(const cell *x, const char *name) {
  return strlen(name) == x->len && memcmp(x->s, name, x->len) == 0;
}

typedef struct header {
  cell *names;   /* copies of the header cells (pointing into the buffer) */
  size_t n;
} header;

static int find_column(const header *h, const char *name) {
  for (size_t i = 0; i < h->n; i++)
    if (cell_is(&h->names[i], name)) return (int)i;
  return -1;
}

static pd_status no_column(const char *path, const header *h, const char *name, pd_error *err) {
  pd_buf b;
  pd_buf_init(&b);
  for (size_t i = 0; i < h->n && i < 20; i++) {
    char t[64];
    pd_buf_printf(&b, "%s'%s'", i ? ", " : "", cell_text(&h->names[i], t, sizeof t));
  }
  if (h->n > 20) pd_buf_printf(&b, ", ... (%zu in all)", h->n);
  pd_status st = pd_error_set(err, PD_ENOTFOUND, nowhere,
                              "%s: no column named '%s'; the header has %s", path, name,
                              b.data ? b.data : "");
  pd_buf_free(&b);
  return st;
}

/* Parse a number cell: PD_OK and *v, or PD_EFORMAT naming line and column. *is_int tells
 * whether the text is an integer (then *iv holds it exactly). */
static pd_status parse_cell(const csv *c, const header *h, size_t col, const cell *x, double *v,
                            bool *is_int, int64_t *iv, pd_error *err) {
  char buf[256], name[64];
  static const char *const missing[] = {"NA", "N/A", "NaN", "nan", "null", "NULL"};
  bool absent = x->len == 0;
  for (size_t i = 0; !absent && i < PD_ARRAY_LEN(missing); i++) absent = cell_is(x, missing[i]);
  if (absent && c->has_fill) {
    *v = c->fill;
    *iv = (int64_t)c->fill;
    *is_int = c->fill == floor(c->fill) && fabs(c->fill) < 9007199254740992.0;
    return PD_OK;
  }
  if (absent)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s:%d: column '%s' (%zu): %s%s%s, not a number (give csv(..., fill = "
                        "VALUE) to fill missing cells in)", c->path, c->line,
                        cell_text(&h->names[col], name, sizeof name), col + 1,
                        x->len ? "'" : "the cell is empty", x->len ? cell_text(x, buf, 16) : "",
                        x->len ? "' marks a missing value" : "");
  if (x->len >= sizeof buf)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s:%d: column '%s' (%zu): '%s' is not a number (too long)", c->path,
                        c->line, cell_text(&h->names[col], name, sizeof name), col + 1,
                        cell_text(x, buf, 40));
  memcpy(buf, x->s, x->len);
  buf[x->len] = '\0';
  char *e;
  errno = 0;
  long long ll = strtoll(buf, &e, 10);
  if (*e == '\0' && errno == 0) {
    *is_int = true;
    *iv = ll;
    *v = (double)ll;
    return PD_OK;
  }
  *is_int = false;
  errno = 0;
  double d = strtod(buf, &e);
  if (e == buf || *e != '\0')
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s:%d: column '%s' (%zu): '%s' is not a number", c->path, c->line,
                        cell_text(&h->names[col], name, sizeof name), col + 1, buf);
  if (!isfinite(d))
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s:%d: column '%s' (%zu): '%s' is not a finite number", c->path, c->line,
                        cell_text(&h->names[col], name, sizeof name), col + 1, buf);
  *v = d;
  return PD_OK;
}

/* The cells of the categorical columns, row by row (ncat a row), with their lines. */
typedef struct cat_cells {
  const char **s;
  size_t *len;
  int *line;
  size_t cap_s, cap_len, cap_line;
} cat_cells;

static pd_status cat_cells_grow(cat_cells *cc, size_t n, const char *path, pd_error *err) {
  if (PD_GROW(cc->s, cc->cap_s, n) || PD_GROW(cc->len, cc->cap_len, n) ||
      PD_GROW(cc->line, cc->cap_line, n))
    return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", path);
  return PD_OK;
}

static void cat_cells_put(cat_cells *cc, size_t at, const cell *x, int line) {
  cc->s[at] = x->s;
  cc->len[at] = x->len;
  cc->line[at] = line;
}

static void cat_cells_free(cat_cells *cc) {
  pd_free(cc->s);
  pd_free(cc->len);
  pd_free(cc->line);
}

/* Which of the chosen columns are categorical (slot[i] for feature i, lslot for the label: an
 * index into the categorical cells, or -1), checked against the header. */
static pd_status categorical_slots(const csv *c, const header *h, const pd_csv_options *o,
                                   int lcol, int k, const int *cols, int *slot, int *lslot,
                                   int *ncat, pd_error *err) {
  *ncat = 0;
  *lslot = -1;
  for (int i = 0; i < k; i++) slot[i] = -1;
  for (int j = 0; j < o->ncategorical; j++) {
    const char *name = o->categorical[j];
    int col = name ? find_column(h, name) : -1;
    if (!name) return pd_error_set(err, PD_EINVAL, nowhere, "categorical column name %d is NULL", j);
    if (col < 0) return no_column(c->path, h, name, err);
    int at = -2;
    if (col == lcol) at = -1;
    for (int i = 0; i < k; i++)
      if (cols[i] == col) at = i;
    if (at == -2)
      return pd_error_set(err, PD_EINVAL, nowhere, "%s: column '%s' is listed as categorical "
                          "but is neither the label nor a feature", c->path, name);
    if ((at == -1 ? *lslot : slot[at]) >= 0)
      return pd_error_set(err, PD_EINVAL, nowhere, "%s: categorical column '%s' is listed twice",
                          c->path, name);
    if (at == -1) *lslot = (*ncat)++;
    else slot[at] = (*ncat)++;
  }
  return PD_OK;
}

typedef struct values {
  float *feat;
  size_t feat_cap;
  double *lab;
  size_t lab_cap;
  int64_t *ilab;
  size_t ilab_cap;
} values;

/* Map each categorical column through the categories (o's, or a set of this file's own), then
 * widen the features: a categorical feature's one slot becomes its one-hot vector. The label's
 * ids go to v->ilab (*all_int). *kk: the features' width. */
static pd_status map_categories(const csv *c, const header *h, const pd_csv_options *o,
                                const cat_cells *cc, int ncat, int64_t n, int k, const int *cols,
                                const int *slot, int lcol, int lslot, values *v, int64_t *kk,
                                bool *all_int, pd_error *err) {
  pd_categories *own = o->categories ? NULL : pd_categories_new();
  pd_categories *cats = o->categories ? o->categories : own;
  const char **s = pd_malloc((size_t)n * sizeof *s);
  size_t *len = pd_malloc((size_t)n * sizeof *len);
  int *lines = pd_malloc((size_t)n * sizeof *lines);
  int64_t *ids = pd_malloc((size_t)n * (size_t)ncat * sizeof *ids);
  int64_t *kc = pd_malloc((size_t)ncat * sizeof *kc);
  float *wide = NULL;
  pd_status st = cats && s && len && lines && ids && kc ? PD_OK : PD_ENOMEM;
  if (st) st = pd_error_set(err, st, nowhere, "out of memory reading '%s'", c->path);
  for (int j = 0; j < ncat && !st; j++) {
    int col = -1;
    for (int i = 0; i < k; i++)
      if (slot[i] == j) col = cols[i];
    if (lslot == j) col = lcol;
    char name[256];
    size_t nl = h->names[col].len < sizeof name - 1 ? h->names[col].len : sizeof name - 1;
    memcpy(name, h->names[col].s, nl);
    name[nl] = '\0';
    for (int64_t r = 0; r < n; r++) {
      size_t at = (size_t)r * (size_t)ncat + (size_t)j;
      s[r] = cc->s[at];
      len[r] = cc->len[at];
      lines[r] = cc->line[at];
    }
    int64_t *jid = ids + (size_t)j * (size_t)n;
    st = pd_categories_map(cats, name, c->path, n, s, len, lines, jid, &kc[j], err);
  }
  if (!st && lslot >= 0) {
    for (int64_t r = 0; r < n; r++) v->ilab[r] = ids[(size_t)lslot * (size_t)n + (size_t)r];
    *all_int = true;
  }
  int64_t width = 0;
  bool any = false;
  for (int i = 0; !st && i < k; i++) {
    width += slot[i] >= 0 ? kc[slot[i]] : 1;
    any = any || slot[i] >= 0;
  }
  if (!st && any) {
    if (!(wide = pd_calloc((size_t)(n ? n : 1) * (size_t)(width ? width : 1), sizeof *wide))) {
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", c->path);
    } else {
      for (int64_t r = 0; r < n; r++) {
        float *out = wide + (size_t)r * (size_t)width;
        for (int i = 0; i < k; i++) {
          if (slot[i] < 0) {
            *out++ = v->feat[(size_t)r * (size_t)k + (size_t)i];
          } else {
            out[ids[(size_t)slot[i] * (size_t)n + (size_t)r]] = 1;
            out += kc[slot[i]];
          }
        }
      }
      pd_free(v->feat);
      v->feat = wide;
      v->feat_cap = (size_t)n * (size_t)width;
    }
  }
  if (!st) *kk = any ? width : k;
  pd_free(s);
  pd_free(len);
  pd_free(lines);
  pd_free(ids);
  pd_free(kc);
  pd_categories_free(own);
  return st;
}

static pd_status parse_csv(csv *c, const pd_csv_options *o, pd_dataset **out, pd_error *err) {
  const char *label = o->label, *const *features = o->features;
  int nfeatures = o->nfeatures;
  bool eof;
  header h = {NULL, 0};
  values v = {NULL, 0, NULL, 0, NULL, 0};
  int *cols = NULL;
  pd_dataset *d = NULL;
  pd_status st = next_record(c, &eof, err);
  if (!st && eof)
    st = pd_error_set(err, PD_EFORMAT, nowhere, "%s: empty file, expected a header row", c->path);
  if (st) return st;
  /* The header. */
  h.n = c->ncells;
  h.names = pd_malloc(h.n * sizeof *h.names);
  if (!h.names) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", c->path);
  memcpy(h.names, c->cells, h.n * sizeof *h.names);
  for (size_t i = 0; i < h.n && !st; i++) {
    char t[64];
    if (h.names[i].len == 0)
      st = pd_error_set(err, PD_EFORMAT, nowhere, "%s:%d: column %zu of the header has no name",
                        c->path, c->line, i + 1);
    for (size_t j = 0; j < i && !st; j++)
      if (h.names[j].len == h.names[i].len &&
          memcmp(h.names[j].s, h.names[i].s, h.names[i].len) == 0)
        st = pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s:%d: the header names column '%s' twice (columns %zu and %zu)",
                          c->path, c->line, cell_text(&h.names[i], t, sizeof t), j + 1, i + 1);
  }
  if (!st && h.n < 2)
    st = pd_error_set(err, PD_EFORMAT, nowhere,
                      "%s:%d: the header has %zu column; a dataset needs a label and at least "
                      "one feature column",
                      c->path, c->line, h.n);
  /* The label and feature columns. */
  int lcol = -1, k = 0;
  if (!st) {
    lcol = label ? find_column(&h, label) : (int)h.n - 1;
    if (lcol < 0) st = no_column(c->path, &h, label, err);
  }
  if (!st) {
    k = features && nfeatures > 0 ? nfeatures : (int)h.n - 1;
    cols = pd_malloc((size_t)k * sizeof *cols);
    if (!cols) st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", c->path);
  }
  if (!st && features && nfeatures > 0) {
    for (int i = 0; i < k && !st; i++) {
      char t[64];
      cols[i] = features[i] ? find_column(&h, features[i]) : -1;
      if (!features[i])
        st = pd_error_set(err, PD_EINVAL, nowhere, "feature name %d is NULL", i);
      else if (cols[i] < 0)
        st = no_column(c->path, &h, features[i], err);
      else if (cols[i] == lcol)
        st = pd_error_set(err, PD_EINVAL, nowhere,
                          "%s: column '%s' is the label; it cannot also be a feature", c->path,
                          cell_text(&h.names[lcol], t, sizeof t));
      for (int j = 0; j < i && !st; j++)
        if (cols[j] == cols[i])
          st = pd_error_set(err, PD_EINVAL, nowhere, "%s: feature column '%s' is listed twice",
                            c->path, features[i]);
    }
  } else if (!st) {
    for (int i = 0, j = 0; j < (int)h.n; j++)
      if (j != lcol) cols[i++] = j;
  }
  /* The categorical columns, whose cells are kept (with their lines) and mapped at the end. */
  int *slot = NULL, lslot = -1, ncat = 0;
  cat_cells cc = {0};
  if (!st && !(slot = pd_malloc((size_t)(k ? k : 1) * sizeof *slot)))
    st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", c->path);
  if (!st) st = categorical_slots(c, &h, o, lcol, k, cols, slot, &lslot, &ncat, err);
  /* The rows. */
  int64_t n = 0;
  bool all_int = true;
  while (!st) {
    st = next_record(c, &eof, err);
    if (st || eof) break;
    if (c->ncells != h.n) {
      st = pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s:%d: the row has %zu cells but the header has %zu columns", c->path,
                        c->line, c->ncells, h.n);
      break;
    }
    if (PD_GROW(v.feat, v.feat_cap, (size_t)(n + 1) * (size_t)k) ||
        PD_GROW(v.lab, v.lab_cap, (size_t)n + 1) ||
        (all_int && PD_GROW(v.ilab, v.ilab_cap, (size_t)n + 1))) {
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", c->path);
      break;
    }
    if (ncat && (st = cat_cells_grow(&cc, (size_t)(n + 1) * (size_t)ncat, c->path, err))) break;
    for (int i = 0; i < k && !st; i++) {
      double x;
      bool xi;
      int64_t xl;
      if (slot[i] >= 0) {
        cat_cells_put(&cc, (size_t)n * (size_t)ncat + (size_t)slot[i], &c->cells[cols[i]], c->line);
        v.feat[(size_t)n * (size_t)k + (size_t)i] = 0;
        continue;
      }
      st = parse_cell(c, &h, (size_t)cols[i], &c->cells[cols[i]], &x, &xi, &xl, err);
      if (!st) v.feat[(size_t)n * (size_t)k + (size_t)i] = (float)x;
    }
    if (st) break;
    bool li = true;
    int64_t ll = 0;
    if (lslot >= 0) {
      cat_cells_put(&cc, (size_t)n * (size_t)ncat + (size_t)lslot, &c->cells[lcol], c->line);
      v.lab[n] = 0;
    } else {
      st = parse_cell(c, &h, (size_t)lcol, &c->cells[lcol], &v.lab[n], &li, &ll, err);
    }
    if (st) break;
    if (all_int && li) v.ilab[n] = ll;
    all_int = all_int && li;
    n++;
  }
  if (!st && n == 0)
    st = pd_error_set(err, PD_EFORMAT, nowhere, "%s: the file has a header but no data rows",
                      c->path);
  /* The categorical columns' ids; the features' width with their one-hot vectors. */
  int64_t kk = k, one = 1;
  if (!st && ncat) st = map_categories(c, &h, o, &cc, ncat, n, k, cols, slot, lcol, lslot, &v,
                                       &kk, &all_int, err);
  /* The dataset. */
  void *fd = NULL, *ld = NULL;
  if (!st) st = pd_dataset_new(n, &d, err);
  if (!st) st = pd_dataset_add_field(d, "features", PD_FP32, 1, &kk, &fd, err);
  if (!st) st = pd_dataset_add_field(d, "label", all_int ? PD_INT64 : PD_FP32, 1, &one, &ld, err);
  if (!st) {
    memcpy(fd, v.feat, (size_t)n * (size_t)kk * sizeof(float));
    if (all_int) {
      memcpy(ld, v.ilab, (size_t)n * sizeof(int64_t));
    } else {
      float *lf = ld;
      for (int64_t i = 0; i < n; i++) lf[i] = (float)v.lab[i];
    }
  }
  pd_free(h.names);
  pd_free(cols);
  pd_free(slot);
  cat_cells_free(&cc);
  pd_free(v.feat);
  pd_free(v.lab);
  pd_free(v.ilab);
  if (st) {
    pd_dataset_free(d);
    return st;
  }
  *out = d;
  return PD_OK;
}

pd_status pd_dataset_csv(const char *path, const char *label, int nfeatures,
                         const char *const *features, pd_dataset **out, pd_error *err) {
  pd_csv_options o = {.label = label, .nfeatures = nfeatures, .features = features};
  return pd_dataset_csv_opts(path, &o, out, err);
}

pd_status pd_dataset_csv_opts(const char *path, const pd_csv_options *o, pd_dataset **out,
                              pd_error *err) {
  *out = NULL;
  if (!path) return pd_error_set(err, PD_EINVAL, nowhere, "pd_dataset_csv needs a path");
  int nfeatures = o->nfeatures;
  char sep = o->delimiter ? o->delimiter : ',';
  if (o->ncategorical < 0 || (o->ncategorical > 0 && !o->categorical))
    return pd_error_set(err, PD_EINVAL, nowhere, "ncategorical is %d without its names",
                        o->ncategorical);
  if (nfeatures < 0)
    return pd_error_set(err, PD_EINVAL, nowhere, "nfeatures is %d, not >= 0", nfeatures);
  if (sep == '"' || sep == '\n' || sep == '\r' || sep == ' ')
    return pd_error_set(err, PD_EINVAL, nowhere, "a CSV delimiter cannot be a quote, a space or "
                        "a line end");
  if (o->has_fill && !isfinite(o->fill))
    return pd_error_set(err, PD_EINVAL, nowhere, "the fill value of missing cells must be a "
                        "finite number");
  char *text;
  size_t len;
  pd_status st = pd_reader_read_all(path, &text, &len, err);
  if (st) return st;
  csv c = {.path = path, .sep = sep, .has_fill = o->has_fill, .fill = o->fill, .p = text,
           .end = text + len, .line = 1, .next_line = 1};
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) c.p += 3;   /* UTF-8 BOM */
  if (memchr(text, '\0', len)) {
    size_t at = (size_t)((char *)memchr(text, '\0', len) - text);
    st = pd_error_set(err, PD_EFORMAT, nowhere,
                      "%s: not a text file: it has a NUL byte at byte %zu", path, at);
  } else {
    st = parse_csv(&c, o, out, err);
  }
  pd_free(c.cells);
  pd_free(text);
  return st;
}

pd_status pd_csv_columns(const char *path, char delimiter, int *ncols, pd_error *err) {
  char sep = delimiter ? delimiter : ',';
  pd_rstream s;
  pd_status st = pd_rstream_open(&s, path, err);
  if (st) return st;
  int n = 1;
  bool quoted = false, line_end = false;
  char buf[4096];
  size_t total = 0, got = 0;
  while (!st && !line_end && total < ((size_t)1 << 20)) {
    if ((st = pd_rstream_read(&s, buf, sizeof buf, &got, err)) || got == 0) break;
    total += got;
    for (size_t i = 0; i < got && !line_end; i++) {
      if (buf[i] == '"') quoted = !quoted;
      else if (!quoted && (buf[i] == '\n' || buf[i] == '\r')) line_end = true;
      else if (!quoted && buf[i] == sep) n++;
    }
  }
  pd_rstream_close(&s);
  if (st) return st;
  if (total == 0) return pd_error_set(err, PD_EFORMAT, nowhere, "%s: an empty CSV file", path);
  *ncols = n;
  return PD_OK;
}
