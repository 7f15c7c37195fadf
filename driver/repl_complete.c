/* repl_complete.c -- Tab completion in context (pd_repl_complete_at, driver/repl.h): file names
 * inside a string literal, a tensor's attributes after `x.`, a called function's keyword
 * parameters at the start of an argument; the names of pd_repl_complete (repl.c) otherwise. */
#include "config.h"
#include "driver/repl_int.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What a tensor has after '.' (lang/compile_expr.c's attributes). */
static const char *const tensor_attrs[] = {"dtype", "lod_level", "name", "ndim", "shape"};

static bool ident_char(int c) { return isalnum(c) || c == '_'; }

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Candidates made here live in r->made (NUL-separated); their pointers are taken once it stops
 * growing. */
typedef struct made {
  size_t *offsets;
  size_t n, cap;
  bool oom;
} made;

static void make(pd_repl *r, made *m, const char *fmt, const char *a, const char *b) {
  if (m->oom || PD_GROW(m->offsets, m->cap, m->n + 1)) {
    m->oom = true;
    return;
  }
  m->offsets[m->n++] = r->made.len;
  pd_buf_printf(&r->made, fmt, a, b);
  pd_buf_append(&r->made, "", 1);  /* the terminator */
  if (r->made.oom) m->oom = true;
}

/* Sorted, without duplicates: the n names of more, then m's, into r->cands. */
static int finish(pd_repl *r, made *m, const char *const *more, int n, const char *const **out) {
  *out = NULL;
  size_t total = (size_t)(n > 0 ? n : 0) + m->n;
  const char **all = total ? pd_malloc(sizeof *all * total) : NULL;
  if (m->oom || (total && !all)) {
    pd_free(all);
    pd_free(m->offsets);
    return 0;
  }
  size_t k = 0;
  for (int i = 0; i < n; i++) all[k++] = more[i];
  for (size_t i = 0; i < m->n; i++) all[k++] = r->made.data + m->offsets[i];
  pd_free(m->offsets);
  if (!k) return 0;
  qsort(all, k, sizeof *all, cmp_str);
  size_t u = 1;
  for (size_t i = 1; i < k; i++)
    if (strcmp(all[i], all[u - 1]) != 0) all[u++] = all[i];
  pd_free(r->cands);
  r->cands = all;
  r->capcands = k;
  *out = r->cands;
  return (int)u;
}

/* Inside a string: the entries of the folder typed so far whose names start as typed. */
static void files(pd_repl *r, made *m, const char *path, size_t len) {
  const char *slash = NULL;
  for (size_t i = 0; i < len; i++)
    if (path[i] == '/') slash = path + i;
  size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
  char *dir = pd_strndup(path, dlen), *base = pd_strndup(path + dlen, len - dlen);
  DIR *d = dir && base ? opendir(dlen ? dir : ".") : NULL;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strncmp(e->d_name, base, strlen(base)) != 0) continue;
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || (e->d_name[0] == '.' && !*base))
      continue;
    pd_buf full;
    pd_buf_init(&full);
    pd_buf_printf(&full, "%s%s", dir, e->d_name);
    struct stat st;
    bool folder = !full.oom && stat(full.data, &st) == 0 && S_ISDIR(st.st_mode);
    if (!full.oom) make(r, m, folder ? "%s%s/" : "%s%s", dir, e->d_name);
    else m->oom = true;
    pd_buf_free(&full);
  }
  if (d) closedir(d);
  if (!dir || !base) m->oom = true;
  pd_free(dir);
  pd_free(base);
}

/* The keyword parameters of fn, from the first line of its :help text: a def's every
 * parameter, a builtin's those written "name = ...". */
static void keywords(pd_repl *r, made *m, const char *fn, const char *prefix, size_t plen) {
  pd_buf h;
  pd_buf_init(&h);
  if (!pd_repl_help_text(r, fn, &h) || h.oom || !h.data) {
    pd_buf_free(&h);
    return;
  }
  bool is_def = !strncmp(h.data, "def ", 4);
  const char *p = strchr(h.data, '('), *end = strchr(h.data, '\n');
  if (!end) end = h.data + h.len;
  for (int depth = 0; p && p < end && *p; p++) {
    if (*p == '(' || *p == '[') depth++;
    if (*p == ')' || *p == ']') depth--;
    if (!((*p == '(' && depth == 1) || (*p == ',' && depth == 1))) continue;
    const char *q = p + 1;
    while (*q == ' ') q++;
    const char *e = q;
    while (ident_char((unsigned char)*e)) e++;
    const char *after = e;
    while (*after == ' ') after++;
    bool keyword = is_def || *after == '=';
    size_t n = (size_t)(e - q);
    if (keyword && n && n >= plen && !strncmp(q, prefix, plen)) {
      char name[128];
      if (n < sizeof name) {
        memcpy(name, q, n);
        name[n] = 0;
        make(r, m, "%s%s", name, " = ");
      }
    }
  }
  pd_buf_free(&h);
}

int pd_repl_complete_at(pd_repl *r, const char *line, size_t len, size_t *word,
                        const char *const **out) {
  *out = NULL;
  pd_buf_clear(&r->made);
  r->made.oom = 0;
  made m = {0};
  /* The tokens before the cursor: an open string, the calls whose '(' is still open. */
  size_t pos = 0, start = 0, last_start = 0;
  int kind, prev = T_END;
  size_t opens[64];  /* the positions of the identifiers before unclosed '(' */
  int nopen = 0;
  size_t prev_start = 0;
  bool in_string = false;
  while ((kind = pd_repl_scan(line, len, &pos, &start)) != T_END) {
    char c = line[start];
    in_string = kind == T_OTHER && (c == '"' || c == '\'') &&
                (pos - start < 2 || line[pos - 1] != c || pos == len);
    if (in_string && pos - start >= 2 && line[pos - 1] == c && pos == len) {
      /* a closed string right before the cursor: not inside it */
      size_t bs = 0;
      for (size_t i = pos - 2; i > start && line[i] == '\\'; i--) bs++;
      in_string = bs % 2 == 1;
    }
    if (kind == T_OTHER && c == '(' && nopen < 64)
      opens[nopen++] = prev == T_IDENT ? prev_start : (size_t)-1;
    if (kind == T_OTHER && c == ')' && nopen > 0) nopen--;
    prev = kind;
    prev_start = start;
    last_start = start;
  }
  if (in_string) {
    *word = last_start + 1;
    files(r, &m, line + *word, len - *word);
    return finish(r, &m, NULL, 0, out);
  }
  size_t w = len;
  while (w > 0 && ident_char((unsigned char)line[w - 1])) w--;
  *word = w;
  const char *prefix = line + w;
  size_t plen = len - w;
  /* After `NAME.`: a tensor's attributes. */
  if (w >= 2 && line[w - 1] == '.' && ident_char((unsigned char)line[w - 2]) &&
      !isdigit((unsigned char)line[w - 2])) {
    const char *attrs[PD_ARRAY_LEN(tensor_attrs)];
    int n = 0;
    for (size_t i = 0; i < PD_ARRAY_LEN(tensor_attrs); i++)
      if (!strncmp(tensor_attrs[i], prefix, plen)) attrs[n++] = tensor_attrs[i];
    return finish(r, &m, attrs, n, out);
  }
  const char *q = line;
  while (q < line + w && (*q == ' ' || *q == '\t')) q++;
  bool command = !pd_repl_pending(r) && w > 0 && line[w - 1] == ':' && q == line + w - 1;
  const char *const *names = NULL;
  int n = plen || command ? pd_repl_complete(r, prefix, plen, command, &names) : 0;
  /* Copied: the keyword parameters' lookup below may reuse r->cands. */
  const char **copy = n ? pd_malloc(sizeof *copy * (size_t)n) : NULL;
  if (n && !copy) return 0;
  if (n) memcpy(copy, names, sizeof *copy * (size_t)n);
  /* At the start of an argument of `f(`: f's keyword parameters too. */
  size_t b = w;
  while (b > 0 && (line[b - 1] == ' ' || line[b - 1] == '\t')) b--;
  if (!command && nopen > 0 && opens[nopen - 1] != (size_t)-1 && b > 0 &&
      (line[b - 1] == '(' || line[b - 1] == ',')) {
    size_t fs = opens[nopen - 1], fe = fs;
    while (fe < len && ident_char((unsigned char)line[fe])) fe++;
    char fn[128];
    if (fe - fs < sizeof fn) {
      memcpy(fn, line + fs, fe - fs);
      fn[fe - fs] = 0;
      keywords(r, &m, fn, prefix, plen);
    }
  }
  int k = finish(r, &m, copy, n, out);
  pd_free(copy);
  return k;
}
