/* test_spec_help.c -- the one table of the specs' and actions' parameters (lang/builtins_action.c)
 * that :help NAME shows: each parameter has a meaning, its names are those the compiler accepts
 * (the keyword lists), and each default is the one doc/language.md writes ("beta1 = 0.9" in a
 * signature, or a row "| `batch` | `64` |" of an options table), so that :help and the reference
 * cannot disagree; the learning-rate schedules too. Also :help's text for one optimizer, reader
 * and action. Needs top_srcdir. */
#include "config.h"
#include "lang/builtins_int.h"
#include "lang/compile.h"
#include "tests/tap.h"
#include "tests/doc/read_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the doc writes param's default: "param = dflt" (a signature, a list) or an options
 * table's row "| `param` | `dflt` |" (or the cell unquoted, for none). */
static bool documented(const char *doc, const char *param, const char *dflt) {
  char a[256], b[256], c[256];
  snprintf(a, sizeof a, "%s = %s", param, dflt);
  snprintf(b, sizeof b, "| `%s` | `%s` |", param, dflt);
  snprintf(c, sizeof c, "| `%s` | %s |", param, dflt);
  return strstr(doc, a) || strstr(doc, b) || strstr(doc, c);
}

int main(void) {
  char *doc = read_doc();
  ok(doc != NULL, "doc/language.md is read (top_srcdir)");
  if (!doc) return tap_done();
  const char *spec, *param, *dflt, *meaning;
  int nspecs = 0;
  for (int i = 0; pd_cmp_spec_param(i, 0, &spec, &param, &dflt, &meaning); i++, nspecs++) {
    const char *pos;
    int required = 0;
    const char *const *names = pd_cmp_record_params(spec, &required);
    if (!names) names = pd_cmp_action_params(spec, &pos);
    int nnames = 0;
    while (names && names[nnames]) nnames++;
    int k = 0, bad_meaning = 0, undocumented = 0;
    char missing[512] = "";
    for (; pd_cmp_spec_param(i, k, &spec, &param, &dflt, &meaning) && param; k++) {
      if (!meaning || !*meaning) bad_meaning++;
      if (dflt && !documented(doc, param, dflt)) {
        undocumented++;
        size_t l = strlen(missing);
        snprintf(missing + l, sizeof missing - l, " '%s = %s'", param, dflt);
      }
    }
    ok(names && k == nnames, "%s: :help lists its %d parameters, the names the compiler takes "
       "(%d)", spec, k, nnames);
    ok(bad_meaning == 0, "%s: every parameter says what it means", spec);
    ok(undocumented == 0, "%s: every default is doc/language.md's%s%s", spec,
       undocumented ? "; not there:" : "", missing);
  }
  ok(nspecs >= 24, "the table has the readers, optimizers, initializers and actions (%d)", nspecs);
  /* The schedules: each described by :help, and named in the docs as lr_schedule takes it. */
  int nsched = 0;
  for (const char *sc; (sc = pd_cmp_schedule(nsched)); nsched++) {
    pd_buf h;
    pd_buf_init(&h);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "`\"%s\"`", sc);
    ok(pd_cmp_spec_describe(sc, &h) && h.data && strstr(h.data, "a learning-rate schedule") &&
           strstr(doc, quoted),
       ":help %s describes the schedule, which doc/language.md names (%s)", sc, quoted);
    pd_buf_free(&h);
  }
  ok(nsched == 3, "three schedules");
  /* :help's text, as the REPL shows it. */
  pd_buf b;
  pd_buf_init(&b);
  ok(pd_builtin_describe("adam", &b) && b.data &&
         !strncmp(b.data, "adam(learning_rate, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, ",
                  strlen("adam(learning_rate, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8, ")) &&
         strstr(b.data, "\n    beta1 = 0.9 ") && strstr(b.data, "(required)"),
     ":help adam: the signature with the defaults, a line per parameter");
  pd_buf_clear(&b);
  ok(pd_builtin_describe("lines", &b) && b.data && strstr(b.data, "pad_to = none") &&
         strstr(b.data, "\n  a reader: "),
     ":help lines: a reader, pad_to among its parameters");
  pd_buf_clear(&b);
  ok(pd_builtin_describe("predict", &b) && b.data &&
         !strncmp(b.data, "predict(y, reader = ..., out = ..., batch = 256)\n  an action",
                  strlen("predict(y, reader = ..., out = ..., batch = 256)\n  an action")),
     ":help predict: an action, its options");
  pd_buf_free(&b);
  free(doc);
  return tap_done();
}
