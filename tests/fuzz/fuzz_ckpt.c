/* fuzz_ckpt.c -- libFuzzer target for the files of tensor values: any bytes are loaded as a
 * .pdiparams parameter file (pd_params_load, what `load("m.pdiparams")` and pd_model_* call) and
 * as a checkpoint (pd_checkpoint_load_setup, what `train(..., checkpoint = ...)` calls to
 * resume), against the fixed program tests/fuzz/ckpt_model.pd (compiled once per process) and
 * its training program. A checkpoint is tried as given and with its CRC repaired, so that the
 * fuzzer gets past the checksum into the parser. Every load must succeed or fail with a status
 * and a message, leaving the scope as it was; what loads must save, load again and save to the
 * same bytes. The bytes go through one temporary file made once per process (the functions read
 * a path). Built with clang by `make fuzz-ckpt`; tests/fuzz/replay.c replays the seed corpus through
 * it in `make check` with any compiler. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "vm/ir/params.h"
#include "vm/run/scope.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef PD_FUZZ_CKPT_MODEL
#error "PD_FUZZ_CKPT_MODEL: the path of tests/fuzz/ckpt_model.pd"
#endif

/* A setup other than any checkpoint's, in the format train writes (train/train.c train_setup):
 * a checkpoint that parses is then compared with it, and the difference reported. */
static const char other_setup[] =
    "training program=#0123456789abcdef\nparameter list=#fedcba9876543210\n"
    "optimizer=adam(lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-08)\n"
    "reader=csv(\"ckpt_model.csv\", label = \"y\"), batch 4";

static struct {
  pd_source *src;
  pd_unit *unit;
  pd_program *train;       /* the training program: the vars a checkpoint may hold */
  const char **names;      /* the model's parameters, in file order */
  int nnames;
  char path[64], path2[64];
} fx;

static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_ckpt: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

static void cleanup(void) {
  unlink(fx.path);
  unlink(fx.path2);
  pd_free(fx.names);
  pd_program_free(fx.train);
  pd_unit_free(fx.unit);
  pd_source_free(fx.src);
}

static void make_temp(char *path, size_t n) {
  const char *dir = getenv("TMPDIR");
  snprintf(path, n, "%s/pdfuzzXXXXXX", dir && *dir && strlen(dir) < 40 ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) broken("cannot make a temporary file", path);
  close(fd);
}

static void setup_once(void) {
  pd_error err = {0};
  if (pd_source_open(PD_FUZZ_CKPT_MODEL, &fx.src, &err)) broken("cannot read", PD_FUZZ_CKPT_MODEL);
  pd_compile_options opts = {.stdlib_dir = PD_SRC_STDLIB_DIR};
  pd_diags diags;
  pd_diags_init(&diags, 20);
  if (pd_compile(fx.src, &opts, &diags, &fx.unit)) broken("the fixed program", diags.text.data);
  pd_diags_free(&diags);
  if (pd_run_train_program(fx.unit, 1, false, &fx.train, &err))
    broken("its training program", err.msg);
  if (pd_params_names(fx.unit->main, &fx.names, &fx.nnames) || fx.nnames == 0)
    broken("its parameters", NULL);
  make_temp(fx.path, sizeof fx.path);
  make_temp(fx.path2, sizeof fx.path2);
  atexit(cleanup);
}

static void put_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
    broken("cannot write the temporary file", path);
}

/* A failed load: a known status, a message, and the scope as it was (empty here). */
static void check_failure(pd_status st, pd_error *err, pd_scope *scope, const char *what) {
  if (st != PD_EFORMAT && st != PD_EUNSUPPORTED && st != PD_ENOMEM && st != PD_ENOTFOUND &&
      st != PD_ETYPE && st != PD_ESHAPE && st != PD_EINVAL)
    broken(what, pd_status_str(st));
  if (!err->msg || !err->msg[0]) broken(what, "failed without a message");
  if (pd_scope_num_vars(scope) != 0) broken(what, "a failed load changed the scope");
  pd_error_clear(err);
}

/* ---- .pdiparams ---- */

static void params_round_trip(pd_scope *scope) {
  pd_error err = {0};
  pd_buf once, twice;
  pd_buf_init(&once);
  pd_buf_init(&twice);
  if (pd_params_encode(fx.path2, scope, fx.nnames, fx.names, &once, &err))
    broken("loaded parameters do not save", err.msg);
  put_file(fx.path2, once.data, once.len);
  pd_scope *again = pd_scope_new(NULL);
  if (!again) broken("out of memory", NULL);
  if (pd_params_load(fx.path2, again, fx.nnames, fx.names, fx.unit->main, &err))
    broken("saved parameters do not load", err.msg);
  if (pd_params_encode(fx.path2, again, fx.nnames, fx.names, &twice, &err))
    broken("reloaded parameters do not save", err.msg);
  if (once.len != twice.len || memcmp(once.data, twice.data, once.len) != 0)
    broken("parameters change in a save/load round trip", NULL);
  pd_scope_free(again);
  pd_buf_free(&once);
  pd_buf_free(&twice);
}

static void fuzz_params(void) {
  pd_scope *scope = pd_scope_new(NULL);
  if (!scope) return;
  pd_error err = {0};
  pd_status st = pd_params_load(fx.path, scope, fx.nnames, fx.names, fx.unit->main, &err);
  if (st) check_failure(st, &err, scope, "pd_params_load");
  else params_round_trip(scope);
  pd_scope_free(scope);
}

/* ---- checkpoints ---- */

static void ckpt_round_trip(pd_scope *scope, const pd_ckpt_meta *meta) {
  pd_error err = {0};
  const char **names = NULL;
  size_t n = 0;
  if (pd_scope_var_names(scope, &names, &n)) broken("out of memory", NULL);
  if (pd_checkpoint_save(fx.path2, scope, (int)n, names, meta, &err))
    broken("a loaded checkpoint does not save", err.msg);
  pd_free(names);
  char *once = NULL, *twice = NULL;
  size_t nonce = 0, ntwice = 0;
  if (pd_read_file(fx.path2, &once, &nonce, &err)) broken("cannot read back", err.msg);
  pd_scope *again = pd_scope_new(NULL);
  pd_ckpt_meta m2;
  if (!again) broken("out of memory", NULL);
  if (pd_checkpoint_load(fx.path2, again, NULL, &m2, &err))
    broken("a saved checkpoint does not load", err.msg);
  if (m2.epoch != meta->epoch || m2.step != meta->step || m2.global_step != meta->global_step ||
      m2.rng_offset != meta->rng_offset || m2.seed != meta->seed ||
      memcmp(&m2.loss, &meta->loss, sizeof m2.loss) != 0 || strcmp(m2.note, meta->note) != 0 ||
      strcmp(m2.setup, meta->setup) != 0)
    broken("the metadata changes in a save/load round trip", NULL);
  if (pd_scope_var_names(again, &names, &n)) broken("out of memory", NULL);
  if (pd_checkpoint_save(fx.path2, again, (int)n, names, &m2, &err))
    broken("a reloaded checkpoint does not save", err.msg);
  pd_free(names);
  if (pd_read_file(fx.path2, &twice, &ntwice, &err)) broken("cannot read back", err.msg);
  if (nonce != ntwice || memcmp(once, twice, nonce) != 0)
    broken("a checkpoint changes in a save/load round trip", NULL);
  pd_free(once);
  pd_free(twice);
  pd_scope_free(again);
}

/* One load of the temporary file: against the training program and another setup, then
 * (repaired is true) without either, when what loads goes round a save. */
static void fuzz_checkpoint(bool repaired) {
  pd_error err = {0};
  pd_ckpt_meta meta;
  memset(&meta, 0x5a, sizeof meta);
  pd_scope *scope = pd_scope_new(NULL);
  if (!scope) return;
  pd_status st = pd_checkpoint_load_setup(fx.path, scope, fx.train, other_setup, &meta, &err);
  if (st) check_failure(st, &err, scope, "pd_checkpoint_load_setup");
  pd_scope_free(scope);
  if (!repaired) return;
  if (!(scope = pd_scope_new(NULL))) return;
  st = pd_checkpoint_load(fx.path, scope, NULL, &meta, &err);
  if (st) check_failure(st, &err, scope, "pd_checkpoint_load");
  else ckpt_round_trip(scope, &meta);
  pd_scope_free(scope);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!fx.unit) setup_once();
  put_file(fx.path, data, size);
  fuzz_params();
  fuzz_checkpoint(false);
  if (size >= 12) {  /* magic + a CRC at least: make the CRC right */
    uint8_t *fixed = pd_malloc(size);
    if (!fixed) return 0;
    memcpy(fixed, data, size);
    uint32_t crc = (uint32_t)crc32(0L, fixed, (uInt)(size - 4));
    for (int i = 0; i < 4; i++) fixed[size - 4 + i] = (uint8_t)(crc >> (8 * i));
    put_file(fx.path, fixed, size);
    pd_free(fixed);
    fuzz_checkpoint(true);
  }
  return 0;
}
