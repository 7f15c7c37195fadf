/* cmd_check.c -- `pdlang check FILE.pd` (compile and report errors, run nothing) and
 * `pdlang compile FILE.pd -o FILE.pdmodel` (write the compiled main ProgramDesc, atomically). */
#include "config.h"
#include "driver/driver.h"

#include <string.h>

#include "lang/compile.h"
#include "vm/ir/serialize.h"

int pd_driver_compile_file(const char *path, pd_source **src_out, pd_unit **unit_out) {
  *src_out = NULL;
  *unit_out = NULL;
  pd_error err = {0};
  pd_source *src;
  if (pd_source_open(path, &src, &err)) {
    fprintf(stderr, "pdlang: %s\n", err.msg ? err.msg : pd_status_str(err.status));
    pd_error_clear(&err);
    return 1;
  }
  pd_diags diags;
  pd_diags_init(&diags, 20);
  pd_unit *unit = NULL;
  pd_status st = pd_compile(src, NULL, &diags, &unit);
  if (diags.text.len) fputs(diags.text.data, stderr);
  if (st == PD_ENOMEM) fprintf(stderr, "%s: error: out of memory while compiling\n", path);
  if (st && !diags.text.len && st != PD_ENOMEM)
    fprintf(stderr, "%s: error: %s\n", path, pd_status_str(st));
  pd_diags_free(&diags);
  if (st) {
    pd_source_free(src);
    return 1;
  }
  *src_out = src;
  *unit_out = unit;
  return 0;
}

static int run_check(int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-') {
    pd_driver_usage(stderr, &pd_cmd_check);
    return 2;
  }
  pd_source *src;
  pd_unit *unit;
  int rc = pd_driver_compile_file(argv[1], &src, &unit);
  pd_unit_free(unit);
  pd_source_free(src);
  return rc;
}

static int run_compile(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *startup = NULL;
  for (int i = 1; i < argc; i++) {
    if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--startup") == 0) && i + 1 < argc) {
      if (argv[i][1] == 'o') out = argv[++i];
      else startup = argv[++i];
    } else if (argv[i][0] == '-' || in) {
      pd_driver_usage(stderr, &pd_cmd_compile);
      return 2;
    } else {
      in = argv[i];
    }
  }
  if (!in || !out) {
    pd_driver_usage(stderr, &pd_cmd_compile);
    return 2;
  }
  pd_source *src;
  pd_unit *unit;
  int rc = pd_driver_compile_file(in, &src, &unit);
  if (rc == 0) {
    pd_error err = {0};
    if (pd_program_save(unit->main, out, &err) ||
        (startup && pd_program_save(unit->startup, startup, &err))) {
      fprintf(stderr, "pdlang compile: %s\n", err.msg ? err.msg : pd_status_str(err.status));
      pd_error_clear(&err);
      rc = 1;
    }
  }
  pd_unit_free(unit);
  pd_source_free(src);
  return rc;
}

const pd_command pd_cmd_check = {
    "check", run_check, "compile a script and report its errors; run nothing",
    "pdlang check FILE.pd\n\n"
    "Compiles FILE.pd (names, types and shapes included) and prints every error with its\n"
    "location. Prints nothing when the script is correct. Exit status: 0 ok, 1 errors, 2 usage.\n"};

const pd_command pd_cmd_compile = {
    "compile", run_compile, "compile a script to a ProgramDesc file (.pdmodel)",
    "pdlang compile FILE.pd -o OUT.pdmodel [--startup STARTUP.pdmodel]\n\n"
    "Writes the main program (Fluid's framework.proto ProgramDesc) to OUT.pdmodel and, with\n"
    "--startup, the parameter initialisers to STARTUP.pdmodel. Files are replaced atomically.\n"};
