/* read_doc.h -- doc/language.md's text for the tests that check it against the tables it
 * documents (tests/doc/test_train_options.c, tests/lang/test_spec_help.c): read from
 * $top_srcdir (else the working folder). The caller frees it (free); NULL when unreadable. */
#ifndef PD_TESTS_DOC_READ_DOC_H
#define PD_TESTS_DOC_READ_DOC_H

#include <stdio.h>
#include <stdlib.h>

static inline char *read_doc(void) {
  const char *top = getenv("top_srcdir");
  char path[512];
  snprintf(path, sizeof path, "%s/doc/language.md", top && *top ? top : ".");
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

#endif
