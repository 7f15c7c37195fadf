/* test_train_options.c -- doc/language.md's train options checked against train/options.h's
 * descriptor table (PD_TRAIN_OPTIONS): in the section "### train" (its subsections included),
 * every row "| `NAME` | DEFAULT | meaning |" of an options table ("| option | default |
 * meaning |") names an option of the table, once, with the descriptor's default (`DFLT`, none
 * unquoted, "(required)" for a required one; a default that depends, NULL in the table, may be
 * said in words), and every option of the table has its row. Needs top_srcdir. */
#include "config.h"
#include "tests/tap.h"
#include "train/options.h"
#include "tests/doc/read_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cell of a row "| `NAME` | CELL | ..." after its name: *name and *cell get their text
 * (trimmed), false for a line of another form. */
static bool parse_row(const char *line, size_t len, char *name, size_t nsize, char *cell,
                      size_t csize) {
  if (len < 6 || strncmp(line, "| `", 3) != 0) return false;
  const char *n = line + 3, *e = memchr(n, '`', len - 3);
  if (!e || (size_t)(e - n) >= nsize || strncmp(e, "` | ", 4) != 0) return false;
  memcpy(name, n, (size_t)(e - n));
  name[e - n] = 0;
  const char *c = e + 4, *end = line + len;
  const char *bar = c;
  while (bar < end && *bar != '|') bar++;  /* the cell ends at the next bar */
  if (bar == end) return false;
  const char *ce = bar;
  while (ce > c && ce[-1] == ' ') ce--;
  if ((size_t)(ce - c) >= csize) return false;
  memcpy(cell, c, (size_t)(ce - c));
  cell[ce - c] = 0;
  return true;
}

int main(void) {
  char *doc = read_doc();
  if (!ok(doc != NULL, "doc/language.md is read (top_srcdir)")) return tap_done();
  const char *sec = strstr(doc, "\n### train\n");
  if (!ok(sec != NULL, "doc/language.md has the section '### train'")) {
    free(doc);
    return tap_done();
  }
  sec++;
  const char *sec_end = strstr(sec + 1, "\n### ");
  if (!sec_end) sec_end = sec + strlen(sec);
  int ntopts = 0;
  while (pd_topt(ntopts)) ntopts++;
  int *rows = calloc((size_t)ntopts + 1, sizeof *rows);
  bool in_table = false;
  int nrows = 0, unknown = 0, wrong = 0;
  for (const char *line = sec; line < sec_end;) {
    const char *nl = memchr(line, '\n', (size_t)(sec_end - line));
    size_t len = nl ? (size_t)(nl - line) : (size_t)(sec_end - line);
    if (strncmp(line, "| option | default | meaning |", 30) == 0) in_table = true;
    else if (len == 0 || line[0] != '|') in_table = false;
    char name[64], cell[256];
    if (in_table && parse_row(line, len, name, sizeof name, cell, sizeof cell)) {
      nrows++;
      const pd_topt_desc *d = pd_topt_find(name);
      int k = 0;
      while (d && pd_topt(k) != d) k++;
      if (!d) {
        unknown++;
        ok(false, "the documented option '%s' is in train/options.h's table", name);
      } else {
        rows[k]++;
        char want[256];
        if (d->dflt && strcmp(d->dflt, "none") == 0) snprintf(want, sizeof want, "none");
        else if (d->dflt) snprintf(want, sizeof want, "`%s`", d->dflt);
        else if (d->flags & PD_TOPT_REQUIRED) snprintf(want, sizeof want, "(required)");
        else want[0] = 0;  /* it depends: the words are the doc's */
        if (want[0] && strcmp(cell, want) != 0) {
          wrong++;
          ok(false, "%s: the doc's default %s is the table's %s", name, cell, want);
        }
        if (!want[0] && (!cell[0] || strcmp(cell, "none") == 0)) {
          wrong++;
          ok(false, "%s: a default that depends is said in words, not '%s'", name, cell);
        }
      }
    }
    line = nl ? nl + 1 : sec_end;
  }
  ok(unknown == 0, "every one of the %d documented options is in the table", nrows);
  ok(wrong == 0, "each documented default is the table's");
  int missing = 0, twice = 0;
  for (int k = 0; k < ntopts; k++) {
    if (rows[k] == 0) {
      missing++;
      ok(false, "train's option '%s' (default %s) is documented", pd_topt(k)->name,
         pd_topt(k)->dflt ? pd_topt(k)->dflt : "depends");
    }
    if (rows[k] > 1) {
      twice++;
      ok(false, "train's option '%s' is documented once, not %d times", pd_topt(k)->name,
         rows[k]);
    }
  }
  ok(missing == 0 && twice == 0, "each of the table's %d options has its one row", ntopts);
  ok(nrows == ntopts, "as many rows as options (%d, %d)", nrows, ntopts);
  free(rows);
  free(doc);
  return tap_done();
}
