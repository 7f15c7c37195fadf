/* test_compile_oom.c -- out of memory in the compiler (issue 26): every example script compiled
 * with the k-th allocation failing, for every k of the small scripts and an even sample of the
 * large ones. Each compile must come back with PD_ENOMEM (or, when the failure hit only a
 * diagnostic's text, with its errors reported) and leave nothing behind: a sanitizer build
 * checks the heap on every path, a plain build at least that nothing crashes. A failed
 * allocation that the compiler ignored wrote out of bounds (push_name) or linked a NULL name
 * (bind_local). Also every k of a script saving to and loading from a path of 300 KB (a string
 * that large is an allocation of its own in every build, not a slice of the arena's chunk):
 * a string value whose copy failed came out as a string with a NULL text, which save's and
 * load's path check read (issue 44). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/diag.h"
#include "lang/compile.h"
#include "tests/tap.h"

/* At most this many failure points per script: every k below it, a stride above. */
enum { SAMPLES = 2500 };

static pd_status compile_once(const pd_source *src, const pd_compile_options *opts) {
  pd_diags d;
  pd_diags_init(&d, 20);
  pd_unit *u = NULL;
  pd_status st = pd_compile(src, opts, &d, &u);
  pd_unit_free(u);
  pd_diags_free(&d);
  return st;
}

static void one_script(const char *dir, const char *name, const pd_compile_options *opts) {
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/%s", dir, name);
  pd_source *src = NULL;
  pd_error e = {0};
  if (pd_source_open(path, &src, &e)) {
    ok(0, "%s: cannot read it (%s)", name, e.msg ? e.msg : "?");
    pd_error_clear(&e);
    return;
  }
  pd_alloc_fail_after(0);
  pd_status clean = compile_once(src, opts);
  long total = pd_alloc_fail_after(0);
  if (!ok(clean == PD_OK, "%s compiles (%ld allocations)", name, total)) {
    pd_source_free(src);
    return;
  }
  long stride = total > SAMPLES ? total / SAMPLES : 1;
  int nomem = 0, other = 0, passed = 0;
  for (long k = 1; k <= total; k += stride) {
    pd_alloc_fail_after(k);
    pd_status st = compile_once(src, opts);
    pd_alloc_fail_after(0);
    if (st == PD_ENOMEM) nomem++;
    else if (st == PD_OK) passed++;  /* the failing allocation was retried or not needed */
    else other++;
  }
  ok(nomem > 0 && other == 0,
     "%s: allocation k failing (every %ld of %ld): %d came back as ENOMEM, %d compiled, %d "
     "other statuses",
     name, stride, total, nomem, passed, other);
  ok(compile_once(src, opts) == PD_OK, "%s compiles again afterwards", name);
  pd_source_free(src);
}

/* save and load of a path long enough to be an allocation of its own. */
static void long_path(const pd_compile_options *opts) {
  enum { LEN = 300 * 1024 };
  pd_buf text;
  pd_buf_init(&text);
  pd_buf_puts(&text, "x = data(\"x\", [-1, 2])\nw = param([2, 1])\ny = x @ w\nsave(\"");
  for (int i = 0; i < LEN; i++) pd_buf_puts(&text, "p");
  pd_buf_puts(&text, "\", y)\nload(\"");
  for (int i = 0; i < LEN; i++) pd_buf_puts(&text, "q");
  pd_buf_puts(&text, "\")\n");
  pd_source *src = NULL;
  if (text.oom || pd_source_from_string("long_path.pd", text.data, text.len, &src)) {
    ok(0, "long_path.pd: cannot make it");
    pd_buf_free(&text);
    return;
  }
  pd_buf_free(&text);
  pd_alloc_fail_after(0);
  pd_status clean = compile_once(src, opts);
  long total = pd_alloc_fail_after(0);
  int nomem = 0, other = 0;
  for (long k = 1; clean == PD_OK && k <= total; k++) {
    pd_alloc_fail_after(k);
    pd_status st = compile_once(src, opts);
    pd_alloc_fail_after(0);
    if (st == PD_ENOMEM) nomem++;
    else if (st != PD_OK) other++;
  }
  ok(clean == PD_OK && nomem > 0 && other == 0,
     "save and load of a 300 KB path: each of %ld allocations failing in turn: %d ENOMEM, %d "
     "other statuses", total, nomem, other);
  pd_source_free(src);
}

int main(void) {
  const char *top = getenv("top_srcdir");
  if (!top) top = ".";
  char stdlib[1024];
  snprintf(stdlib, sizeof stdlib, "%s/stdlib", top);
  pd_compile_options opts = {.stdlib_dir = stdlib};
  static const char *const scripts[] = {"fit_a_line.pd", "ifelse.pd", "rnn.pd", "train.pd",
                                        "cnn.pd", "char_rnn.pd", "sequence_classify.pd",
                                        "lstm_classify.pd", "resnet.pd"};
  for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++)
    one_script(top, scripts[i], &opts);
  long_path(&opts);
  return tap_done();
}
