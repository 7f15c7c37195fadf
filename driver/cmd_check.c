/* cmd_check.c -- `pdlang check FILE.pd` (compile and report errors, run nothing) and
 * `pdlang compile FILE.pd -o FILE.pdmodel` (write the compiled main ProgramDesc, atomically). */
#include "config.h"
#include "driver/driver.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lang/compile.h"
#include "vm/ir/serialize.h"

int pd_driver_set_arg(const char *cmd, int argc, char **argv, int *i, pd_compile_set *sets,
                      char (*text)[PD_DRIVER_SET_TEXT], int *nsets) {
  const char *a = argv[*i], *spec;
  if (strcmp(a, "--set") == 0) {
    if (*i + 1 >= argc) {
      fprintf(stderr, "pdlang %s: --set needs NAME=VALUE\n", cmd);
      return -1;
    }
    spec = argv[++*i];
  } else if (strncmp(a, "--set=", 6) == 0) {
    spec = a + 6;
  } else {
    return 0;
  }
  const char *eq = strchr(spec, '=');
  size_t n = eq ? (size_t)(eq - spec) : 0;
  bool ident = n > 0 && n < 64 && !isdigit((unsigned char)spec[0]);
  for (size_t k = 0; ident && k < n; k++)
    ident = isalnum((unsigned char)spec[k]) || spec[k] == '_';
  if (!ident) {
    fprintf(stderr, "pdlang %s: --set takes NAME=VALUE (NAME a top-level binding of the "
            "script, such as batch=64), not '%s'\n", cmd, spec);
    return -1;
  }
  if (*nsets == PD_DRIVER_MAX_SETS) {
    fprintf(stderr, "pdlang %s: more than %d --set options\n", cmd, PD_DRIVER_MAX_SETS);
    return -1;
  }
  char *t = text[*nsets];
  snprintf(t, PD_DRIVER_SET_TEXT, "--set %s", spec);
  /* The name is its own NUL-terminated copy after the option's text when it fits, else the
   * option is cut short (the name must stay whole). */
  size_t used = strlen(t) + 1;
  if (used + n + 1 > PD_DRIVER_SET_TEXT) {
    used = PD_DRIVER_SET_TEXT - n - 1;
    memcpy(t + used - 4, "...", 4);
  }
  memcpy(t + used, spec, n);
  t[used + n] = '\0';
  sets[*nsets] = (pd_compile_set){.name = t + used, .value = eq + 1, .option = t};
  ++*nsets;
  return 1;
}

int pd_driver_compile_file(const char *path, pd_source **src_out, pd_unit **unit_out) {
  return pd_driver_compile_file_set(path, 0, NULL, src_out, unit_out);
}

int pd_driver_compile_file_set(const char *path, int nsets, const pd_compile_set *sets,
                               pd_source **src_out, pd_unit **unit_out) {
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
  pd_compile_options co = {.nsets = nsets, .sets = sets};
  pd_status st = pd_compile(src, nsets ? &co : NULL, &diags, &unit);
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
  const char *path = NULL;
  pd_compile_set sets[PD_DRIVER_MAX_SETS];
  char text[PD_DRIVER_MAX_SETS][PD_DRIVER_SET_TEXT];
  int nsets = 0;
  for (int i = 1; i < argc; i++) {
    int r = pd_driver_set_arg("check", argc, argv, &i, sets, text, &nsets);
    if (r < 0) return 2;
    if (r) continue;
    if (argv[i][0] == '-' || path) {
      pd_driver_usage(stderr, &pd_cmd_check);
      return 2;
    }
    path = argv[i];
  }
  if (!path) {
    pd_driver_usage(stderr, &pd_cmd_check);
    return 2;
  }
  pd_source *src;
  pd_unit *unit;
  int rc = pd_driver_compile_file_set(path, nsets, sets, &src, &unit);
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
    .name = "check",
    .run = run_check,
    .summary = "compile a script and report its errors; run nothing",
    .usage = "pdlang check [--set NAME=VALUE]... FILE.pd\n\n"
    "Compiles FILE.pd (names, types and shapes included) and prints every error with its\n"
    "location. Prints nothing when the script is correct. Exit status: 0 ok, 1 errors, 2 usage.\n"
    "  --set NAME=VALUE  compile with VALUE in place of the literal of the script's\n"
    "                    top-level binding NAME (as pdlang run --set); repeatable\n"};

const pd_command pd_cmd_compile = {
    .name = "compile",
    .run = run_compile,
    .summary = "compile a script to a ProgramDesc file (.pdmodel)",
    .usage = "pdlang compile FILE.pd -o OUT.pdmodel [--startup STARTUP.pdmodel]\n\n"
    "Writes the main program (Fluid's framework.proto ProgramDesc) to OUT.pdmodel and, with\n"
    "--startup, the parameter initialisers to STARTUP.pdmodel. Files are replaced atomically.\n"};
