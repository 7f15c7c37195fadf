/* fuzz_compile.c -- libFuzzer target for the compiler: any bytes are compiled as a script, as
 * `pdlang check` does (parse, compile, InferShape of every op appended), and when that succeeds
 * the programs must validate and serialize, and the training program of the first `train`
 * (prune, backward pass, optimizer: vm/passes/pipeline.h) must build or fail with a message.
 * Nothing runs: actions are compiled, never executed, so no reader opens a file. The script is
 * named as if it sat in the source tree's stdlib folder and $PDLANG_PATH is cleared, so that
 * `import` finds the standard library's modules and nothing else (the only file I/O).
 * Built with clang by `make fuzz-compile`; tests/fuzz/replay.c replays the seed corpus
 * through it in `make check` with any compiler. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "vm/ir/program.h"
#include "vm/ir/serialize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A promise broke: say which and crash, so that the fuzzer keeps the input. */
static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_compile: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void check_program(const pd_program *p, const char *which) {
  pd_error err = {0};
  if (pd_program_validate(p, &err) != PD_OK) broken(which, err.msg);
  uint8_t *bytes = NULL;
  size_t len = 0;
  pd_status st = pd_program_to_bytes(p, &bytes, &len, &err);
  if (st != PD_OK && st != PD_ENOMEM) broken("a compiled program does not serialize", err.msg);
  pd_free(bytes);
  pd_error_clear(&err);
}

/* The training program of the first train(...), built as `train` builds it, and dropped. */
static void check_training(const pd_unit *unit) {
  for (int i = 0; i < unit->nactions; i++) {
    if (unit->actions[i].kind != PD_ACTION_TRAIN) continue;
    pd_program *p = NULL;
    pd_error err = {0};
    pd_status st = pd_run_train_program(unit, 1, false, &p, &err);
    if (st == PD_OK) {
      if (!p) broken("the training program is missing", NULL);
      check_program(p, "the training program does not validate");
    } else {
      if (p) broken("a failed training program was returned", NULL);
      if (st != PD_ENOMEM && (!err.msg || !err.msg[0]))
        broken("the training program failed without a message", pd_status_str(st));
    }
    pd_program_free(p);
    pd_error_clear(&err);
    return;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    unsetenv("PDLANG_PATH");
    ready = 1;
  }
  pd_source *src;
  if (pd_source_from_string(PD_SRC_STDLIB_DIR "/fuzz.pd", (const char *)data, size, &src) != PD_OK)
    return 0;
  pd_compile_options opts = {.stdlib_dir = PD_SRC_STDLIB_DIR};
  pd_diags diags;
  pd_diags_init(&diags, 20);
  pd_unit *unit = NULL;
  pd_status st = pd_compile(src, &opts, &diags, &unit);
  if (st != PD_OK && st != PD_ECOMPILE && st != PD_ESYNTAX && st != PD_ENOMEM)
    broken("unexpected status", pd_status_str(st));
  if ((st == PD_OK) != (unit != NULL)) broken("a unit comes back exactly when compiling succeeds", NULL);
  if ((st == PD_ECOMPILE || st == PD_ESYNTAX) && (diags.nerrors == 0 || !diags.text.len))
    broken("compiling failed without a diagnostic", pd_status_str(st));
  if (st == PD_OK && diags.nerrors) broken("compiling succeeded with errors", diags.text.data);
  if (unit) {
    check_program(unit->main, "the main program does not validate");
    check_program(unit->startup, "the startup program does not validate");
    check_training(unit);
    pd_unit_free(unit);
  }
  pd_diags_free(&diags);
  pd_source_free(src);
  return 0;
}
