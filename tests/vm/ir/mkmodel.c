/* mkmodel.c -- writes the test programs of tests/vm/ir/models.c as .pdmodel files: for the
 * shell tests (pdlang dump, protoc --decode), the golden fixtures and the fuzz seed corpus.
 *   mkmodel NAME FILE        a model (nested, attrs, kinds) or "foreign" (Paddle-style bytes)
 *   mkmodel --bad NAME FILE  the malformed variant NAME (see bad_cases)
 *   mkmodel --corpus DIR     all of them, as DIR/valid_NAME.pdmodel and DIR/bad_NAME.pdmodel */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ir/serialize.h"
#include "tests/vm/ir/models.h"

static int write_bytes(const char *path, const uint8_t *bytes, size_t len) {
  pd_error err = {0};
  if (pd_write_file_atomic(path, bytes, len, &err)) {
    fprintf(stderr, "mkmodel: %s\n", err.msg ? err.msg : "cannot write");
    pd_error_clear(&err);
    return 1;
  }
  return 0;
}

static int write_model(const char *name, const char *path) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  if (strcmp(name, "foreign") == 0) {
    if (foreign_bytes(&bytes, &len)) return 1;
    int rc = write_bytes(path, bytes, len);
    free(bytes);
    return rc;
  }
  pd_program *p = model_by_name(name);
  if (!p) {
    fprintf(stderr, "mkmodel: no model '%s'\n", name);
    return 1;
  }
  pd_error err = {0};
  pd_status st = pd_program_save(p, path, &err);
  pd_program_free(p);
  if (st) {
    fprintf(stderr, "mkmodel: %s\n", err.msg ? err.msg : pd_status_str(st));
    pd_error_clear(&err);
    return 1;
  }
  return 0;
}

static int write_bad(size_t i, const char *path) {
  uint8_t *bytes;
  size_t len;
  if (bad_case_bytes(i, &bytes, &len)) return 1;
  int rc = write_bytes(path, bytes, len);
  free(bytes);
  return rc;
}

static int write_corpus(const char *dir) {
  char path[4096];
  int rc = 0;
  for (size_t i = 0; i < model_count; i++) {
    snprintf(path, sizeof path, "%s/valid_%s.pdmodel", dir, model_names[i]);
    rc |= write_model(model_names[i], path);
  }
  snprintf(path, sizeof path, "%s/valid_foreign.pdmodel", dir);
  rc |= write_model("foreign", path);
  for (size_t i = 0; i < bad_case_count; i++) {
    snprintf(path, sizeof path, "%s/bad_%s.pdmodel", dir, bad_cases[i].name);
    rc |= write_bad(i, path);
  }
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--corpus") == 0) return write_corpus(argv[2]);
  if (argc == 4 && strcmp(argv[1], "--bad") == 0) {
    for (size_t i = 0; i < bad_case_count; i++)
      if (strcmp(bad_cases[i].name, argv[2]) == 0) return write_bad(i, argv[3]);
    fprintf(stderr, "mkmodel: no bad case '%s'\n", argv[2]);
    return 1;
  }
  if (argc == 3 && argv[1][0] != '-') return write_model(argv[1], argv[2]);
  fprintf(stderr, "usage: mkmodel NAME FILE | mkmodel --bad NAME FILE | mkmodel --corpus DIR\n");
  return 2;
}
