/* test_paddle_ops.c -- doc/paddle.md against the program: its table of the ops pdlang runs is
 * the one the op registry (vm/oplist.h) and the loader's compat facts (vm/ops/compat.c) make,
 * and its table of model families names every family of tests/interop/zoo/ (one folder each,
 * tools/paddle_zoo.py). `test_paddle_ops --print` prints the op table (to paste into the doc
 * after an op changes). */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "tests/tap.h"
#include "vm/ops/compat.h"
#include "vm/ops/ops.h"

#define BEGIN "<!-- ops: made by tests/doc/test_paddle_ops --print -->\n"
#define END "<!-- ops end -->\n"

static const char *srcdir(void) {
  const char *s = getenv("top_srcdir");
  return s && *s ? s : ".";
}

/* "A, B?, C[]" for a slot list: ? optional, [] a list; an output only the gradient reads is
 * left out (Paddle writes it, nothing else reads it). */
static void slots(pd_buf *b, int n, const pd_slotdef *s) {
  int shown = 0;
  for (int i = 0; i < n; i++)
    if (!(s[i].flags & PD_SLOT_INTERMEDIATE))
      pd_buf_printf(b, "%s`%s`%s", shown++ ? ", " : "", s[i].name,
                  (s[i].flags & PD_SLOT_DUPLICABLE) && (s[i].flags & PD_SLOT_DISPENSABLE) ? "[]?"
                  : s[i].flags & PD_SLOT_DUPLICABLE                                   ? "[]"
                  : s[i].flags & PD_SLOT_DISPENSABLE                               ? "?"
                                                                                : "");
  if (!shown) pd_buf_printf(b, "-");
}

/* The table: one row per op, its slots, its attributes, what it can do, what loading drops on
 * it besides the facts of every op. */
static void table(pd_buf *b) {
  pd_buf_printf(b, "| op | inputs | outputs | attributes | gradient | GPU | loading drops |\n"
                   "|----|--------|---------|------------|----------|-----|---------------|\n");
  for (int k = 0; k < PD_OP_COUNT_; k++) {
    const pd_opdef *d = &pd_opdefs[k];
    pd_buf_printf(b, "| `%s` | ", d->type);
    slots(b, d->ninputs, d->inputs);
    pd_buf_printf(b, " | ");
    slots(b, d->noutputs, d->outputs);
    pd_buf_printf(b, " | ");
    if (d->nattrs == 0) pd_buf_printf(b, "-");
    for (int i = 0; i < d->nattrs; i++)
      pd_buf_printf(b, "%s`%s`", i ? ", " : "", d->attrs[i].name);
    pd_buf_printf(b, " | %s | %s | ", d->flags & PD_OPF_DIFF ? "yes" : "-",
                  d->flags & PD_OPF_GPU_GRAD ? "with gradient"
                  : d->flags & PD_OPF_GPU    ? "yes"
                                             : "-");
    int n = 0;
    for (int i = 0; i < pd_compat_nfacts; i++) {
      const pd_compat_fact *f = &pd_compat_facts[i];
      if (f->ops && pd_compat_names_op(f, d->type))
        pd_buf_printf(b, "%s`%s`", n++ ? ", " : "", f->name);
    }
    pd_buf_printf(b, "%s |\n", n ? "" : "-");
  }
}

/* Every folder of tests/interop/zoo has its row "| `NAME` |" in doc. */
static void families(const char *doc) {
  char path[1024], row[300];
  snprintf(path, sizeof path, "%s/tests/interop/zoo", srcdir());
  DIR *dir = opendir(path);
  if (!dir) {
    ok(0, "tests/interop/zoo is readable");
    return;
  }
  int n = 0, missing = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    if (e->d_name[0] == '.') continue;
    n++;
    snprintf(row, sizeof row, "| `%s` |", e->d_name);
    if (!strstr(doc, row)) printf("# doc/paddle.md has no row %s\n", row), missing++;
  }
  closedir(dir);
  ok(n > 0 && missing == 0, "doc/paddle.md lists the %d model families of tests/interop/zoo", n);
}

int main(int argc, char **argv) {
  pd_buf b;
  pd_buf_init(&b);
  table(&b);
  if (b.oom) return 1;
  if (argc == 2 && strcmp(argv[1], "--print") == 0) {
    fputs(BEGIN, stdout);
    fputs(b.data, stdout);
    fputs(END, stdout);
    pd_buf_free(&b);
    return 0;
  }
  char path[1024], *doc = NULL;
  size_t len;
  snprintf(path, sizeof path, "%s/doc/paddle.md", srcdir());
  if (pd_read_file(path, &doc, &len, NULL)) {
    ok(0, "doc/paddle.md is readable");
  } else {
    const char *s = strstr(doc, BEGIN), *e = s ? strstr(s, END) : NULL;
    bool same = s && e && (size_t)(e - s - strlen(BEGIN)) == b.len &&
                memcmp(s + strlen(BEGIN), b.data, b.len) == 0;
    if (!same) printf("# the op table differs: `tests/doc/test_paddle_ops --print` makes it\n");
    ok(same, "doc/paddle.md's op table is the registry's (%d ops)", PD_OP_COUNT_);
    families(doc);
  }
  pd_free(doc);
  pd_buf_free(&b);
  return tap_done();
}
