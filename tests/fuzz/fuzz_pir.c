/* fuzz_pir.c -- libFuzzer target for the reader of PaddlePaddle 3's PIR JSON programs
 * (vm/ir/pir.h): any bytes, copied into a buffer of exactly their size (the reader is handed
 * files that end where they end, with no NUL after them), go through pd_pir_is_json and
 * pd_pir_from_json, which must fail cleanly (no program, a status among those pir.h names, a
 * message naming the file) or return a program that validates, lists, clones and survives a
 * save/load round trip as a ProgramDesc unchanged. Then, as pd_model_load goes on,
 * pd_compat_apply checks its ops against their defs: it must succeed or refuse with a message,
 * and what it accepts must still validate and be prepared by the executor or refused with a
 * message (nothing runs: there are no parameters). Built with clang by `make fuzz-pir`;
 * tests/fuzz/replay.c replays the seed corpus (tests/fuzz/corpus_pir) through it in
 * `make check` with any compiler. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ir/pir.h"
#include "vm/ir/program.h"
#include "vm/ir/serialize.h"
#include "vm/ops/compat.h"
#include "vm/run/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WHAT "fuzz.json"

/* A promise broke: say which, and crash so that the fuzzer keeps the input. */
static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_pir: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static char *listing(const pd_program *p) {
  pd_buf b;
  pd_buf_init(&b);
  pd_program_dump(p, &b);
  if (b.oom) broken("listing ran out of memory", NULL);
  return pd_buf_take(&b);
}

static void same_listing(const pd_program *q, const char *want, const char *what) {
  char *got = listing(q);
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "--- want\n%s--- got\n%s", want, got);
    broken(what, NULL);
  }
  pd_free(got);
}

/* A refusal: a status the header names and a message that names the file. */
static void refused(pd_status st, const pd_error *err, const char *who) {
  if (st != PD_EFORMAT && st != PD_EINVAL && st != PD_EUNSUPPORTED && st != PD_ENOMEM)
    broken(who, "an unexpected status");
  if (!err->msg || !err->msg[0]) broken(who, "a refusal without a message");
  if (st != PD_ENOMEM && !strstr(err->msg, WHAT)) broken(who, err->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = pd_malloc(size);
  if (!text) return 0;
  if (size) memcpy(text, data, size);
  (void)pd_pir_is_json(text, size);
  pd_program *p = NULL;
  pd_error err = {0};
  pd_status st = pd_pir_from_json(text, size, WHAT, &p, &err);
  pd_free(text);
  if (st != PD_OK) {
    if (p) broken("a failed read returned a program", NULL);
    refused(st, &err, "pd_pir_from_json");
    pd_error_clear(&err);
    return 0;
  }
  if (!p) broken("a read returned no program", NULL);
  if (pd_program_validate(p, &err) != PD_OK) broken("a read program does not validate", err.msg);
  char *want = listing(p);

  pd_program *c = pd_program_clone(p);
  if (!c) broken("clone failed", NULL);
  same_listing(c, want, "the clone lists differently");
  pd_program_free(c);

  uint8_t *bytes = NULL;
  size_t len = 0;
  pd_program *q = NULL;
  if (pd_program_to_bytes(p, &bytes, &len, &err) != PD_OK)
    broken("a read program does not serialize", err.msg);
  if (pd_program_from_bytes(bytes, len, &q, &err) != PD_OK)
    broken("its ProgramDesc does not load", err.msg);
  same_listing(q, want, "the ProgramDesc round trip lists differently");
  pd_program_free(q);
  pd_free(bytes);
  pd_free(want);

  st = pd_compat_apply(p, WHAT, &err);
  if (st != PD_OK) {
    refused(st, &err, "pd_compat_apply");
  } else {
    if (pd_program_validate(p, &err) != PD_OK) broken("an accepted program does not validate", err.msg);
    pd_exec *ex = NULL;
    pd_exec_options eo = {0};
    st = pd_exec_new(p, &eo, &ex, &err);
    if (st != PD_OK && (ex || !err.msg || !err.msg[0])) broken("pd_exec_new", "a refusal without a message");
    pd_exec_free(ex);
  }
  pd_error_clear(&err);
  pd_program_free(p);
  return 0;
}
