/* test_params_identity.c -- the identity of a model's parameter file (vm/ir/params.c,
 * pd_params_set_identity / pd_params_check_identity): the record survives serialization, a file
 * with other bytes of the same size is refused with a message naming it, a model without a
 * record (PaddlePaddle's own files) is never refused and its file not even read, and saving a
 * pair again replaces the record rather than adding one. The hash is checked against FNV-1a 64
 * computed here from its definition. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "tests/tap.h"
#include "vm/ir/params.h"
#include "vm/ir/program.h"
#include "vm/ir/serialize.h"

static char dir[] = "/tmp/pdlang-test-identity-XXXXXX";

static char *path_of(const char *name) {
  static char paths[4][512];
  static int next;
  char *p = paths[next++ % 4];
  snprintf(p, sizeof paths[0], "%s/%s", dir, name);
  return p;
}

static void put(const char *path, const char *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(bytes, 1, n, f);
    fclose(f);
  }
}

/* The identity vars of block 0. */
static int count_identities(const pd_program *p, const char **name) {
  int n = 0;
  const pd_block *b = p->blocks[0];
  for (int i = 0; i < b->nvars; i++)
    if (strncmp(b->vars[i]->name, PD_PARAMS_IDENTITY_PREFIX,
                strlen(PD_PARAMS_IDENTITY_PREFIX)) == 0) {
      n++;
      if (name) *name = b->vars[i]->name;
    }
  return n;
}

int main(void) {
  if (!mkdtemp(dir)) {
    ok(0, "a temporary directory");
    return tap_done();
  }
  pd_error err = {0};
  /* FNV-1a 64 of "a" (offset basis ^ 'a', times the prime), and of nothing. */
  uint64_t want_a = (0xcbf29ce484222325ull ^ 0x61) * 0x100000001b3ull;
  ok(pd_hash_bytes("a", 1) == want_a, "pd_hash_bytes(\"a\") is FNV-1a 64");
  ok(pd_hash_bytes("", 0) == 0xcbf29ce484222325ull, "pd_hash_bytes of nothing is the basis");

  pd_program *p = pd_program_new();
  ok(p != NULL, "a program");
  if (!p) return tap_done();
  /* No record: never refused, the file not read (it does not exist). */
  is_int(pd_params_check_identity(p, path_of("none.pdiparams"), &err), PD_OK,
         "a model without a record passes without reading its file");

  const char good[] = "parameter bytes, version 1";
  const char other[] = "parameter bytes, version 2";
  is_int(pd_params_set_identity(p, good, sizeof good), PD_OK, "record an identity");
  const char *name = NULL;
  is_int(count_identities(p, &name), 1, "one var records it");
  char want[96];
  snprintf(want, sizeof want, "%s%zu:%016" PRIx64, PD_PARAMS_IDENTITY_PREFIX, sizeof good,
           pd_hash_bytes(good, sizeof good));
  is_str(name, want, "the var's name: size and hash");
  const pd_var_desc *v = pd_block_find_var_local(p->blocks[0], want);
  ok(v && v->type == PD_VAR_RAW && !v->persistable, "a RAW var, not persistable");

  /* Through the ProgramDesc bytes and back. */
  uint8_t *bytes = NULL;
  size_t len = 0;
  pd_program *q = NULL;
  is_int(pd_program_to_bytes(p, &bytes, &len, &err), PD_OK, "serialize");
  is_int(pd_program_from_bytes(bytes, len, &q, &err), PD_OK, "and read back");
  pd_free(bytes);
  if (q) {
    put(path_of("good.pdiparams"), good, sizeof good);
    put(path_of("other.pdiparams"), other, sizeof other);
    put(path_of("short.pdiparams"), good, sizeof good - 1);
    is_int(pd_params_check_identity(q, path_of("good.pdiparams"), &err), PD_OK,
           "the file saved with the model passes");
    pd_error_clear(&err);
    is_int(pd_params_check_identity(q, path_of("other.pdiparams"), &err), PD_EFORMAT,
           "other bytes of the same size are refused");
    ok(err.msg && strstr(err.msg, "not the parameter file saved with this model"),
       "the message says so: %s", err.msg ? err.msg : "(none)");
    ok(err.loc.file && strcmp(err.loc.file, path_of("other.pdiparams")) == 0,
       "the error names the parameter file");
    pd_error_clear(&err);
    is_int(pd_params_check_identity(q, path_of("short.pdiparams"), &err), PD_EFORMAT,
           "a shorter file is refused");
    pd_error_clear(&err);
    is_int(pd_params_check_identity(q, path_of("missing.pdiparams"), &err), PD_EIO,
           "a missing file is an I/O error");
    pd_error_clear(&err);
    pd_program_free(q);
  }
  /* Saving again replaces the record. */
  is_int(pd_params_set_identity(p, other, sizeof other), PD_OK, "record another identity");
  is_int(count_identities(p, NULL), 1, "still one var");
  is_int(pd_params_check_identity(p, path_of("other.pdiparams"), &err), PD_OK,
         "the new file passes");
  pd_error_clear(&err);
  is_int(pd_params_check_identity(p, path_of("good.pdiparams"), &err), PD_EFORMAT,
         "the old one no longer does");
  pd_error_clear(&err);
  pd_program_free(p);
  const char *names[] = {"good.pdiparams", "other.pdiparams", "short.pdiparams"};
  for (size_t i = 0; i < PD_ARRAY_LEN(names); i++) unlink(path_of(names[i]));
  rmdir(dir);
  return tap_done();
}
