/* fuzz_load.c -- libFuzzer target for the .pdmodel loader: any bytes go through
 * pd_program_from_bytes, which must fail cleanly (a status and a message) or return a program
 * that validates, lists, graphs, clones and survives a save/load round trip unchanged.
 * Built with clang by `make fuzz-load`; tests/fuzz/replay_load.c runs the seed corpus
 * (tests/fuzz/corpus_load) through it in `make check` without clang. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ir/serialize.h"
#include "vm/ir/program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant broke: say which, and crash so that the fuzzer keeps the input. */
static void broken(const char *what) {
  fprintf(stderr, "fuzz_load: %s\n", what);
  abort();
}

static char *listing(const pd_program *p, bool dot) {
  pd_buf b;
  pd_buf_init(&b);
  if (dot)
    pd_program_dump_dot(p, &b);
  else
    pd_program_dump(p, &b);
  if (b.oom) broken("listing ran out of memory");
  return pd_buf_take(&b);
}

static void check_same_listing(const pd_program *q, const char *want, const char *what) {
  char *got = listing(q, false);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "--- want\n%s--- got\n%s", want, got);
    broken(what);
  }
  pd_free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pd_program *p = NULL;
  pd_error err = {0};
  pd_status st = pd_program_from_bytes(data, size, &p, &err);
  if (st != PD_OK) {
    if (p) broken("a failed load returned a program");
    if (st != PD_EFORMAT && st != PD_EUNSUPPORTED && st != PD_ENOMEM) broken("unexpected status");
    if (!err.msg || !err.msg[0]) broken("a failed load gave no message");
    pd_error_clear(&err);
    return 0;
  }
  if (pd_program_validate(p, NULL) != PD_OK) broken("a loaded program does not validate");
  char *text = listing(p, false);
  pd_free(listing(p, true));

  pd_program *c = pd_program_clone(p);
  if (!c) broken("clone failed");
  check_same_listing(c, text, "the clone lists differently");
  pd_program_free(c);

  uint8_t *bytes = NULL;
  size_t len = 0;
  pd_program *q = NULL;
  if (pd_program_to_bytes(p, &bytes, &len, &err) != PD_OK) broken("a loaded program does not save");
  if (pd_program_from_bytes(bytes, len, &q, &err) != PD_OK) broken("a saved program does not load");
  check_same_listing(q, text, "the round trip lists differently");

  pd_program_free(q);
  pd_free(bytes);
  pd_free(text);
  pd_program_free(p);
  pd_error_clear(&err);
  return 0;
}
