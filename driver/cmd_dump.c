/* cmd_dump.c -- `pdlang dump [--dot] FILE`: print a program as a readable listing (the format of
 * pd_program_dump, which golden tests compare) or as a Graphviz digraph. FILE is a saved program
 * (a .pdmodel: Fluid ProgramDesc bytes); load_input is where .pd scripts will be compiled. */
#include "config.h"
#include "driver/driver.h"

#include <stdbool.h>
#include <string.h>

#include "base/diag.h"
#include "lang/serialize.h"

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The program FILE stands for: a .pd script is compiled; anything else is read as a saved
 * ProgramDesc, whatever its name. */
static pd_status load_input(const char *path, pd_program **out, pd_error *err) {
  *out = NULL;
  if (has_suffix(path, ".pd"))
    return pd_error_set(err, PD_EUNSUPPORTED, (pd_loc){path, 0, 0},
                        "compiling .pd files is not available yet; dump a saved .pdmodel");
  return pd_program_load(path, out, err);
}

static void print_error(const pd_error *err) {
  pd_buf msg;
  pd_buf_init(&msg);
  pd_diag_render_error(&msg, NULL, err);
  fputs(msg.oom || !msg.data ? "error: out of memory\n" : msg.data, stderr);
  pd_buf_free(&msg);
}

static int run_dump(int argc, char **argv) {
  bool dot = false, options_done = false;
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!options_done && strcmp(a, "--") == 0) {
      options_done = true;
    } else if (!options_done && strcmp(a, "--dot") == 0) {
      dot = true;
    } else if (!options_done && a[0] == '-' && a[1]) {
      fprintf(stderr, "pdlang dump: unknown option '%s'\n", a);
      pd_driver_usage(stderr, &pd_cmd_dump);
      return 2;
    } else if (path) {
      fprintf(stderr, "pdlang dump: one file at a time ('%s' and '%s' given)\n", path, a);
      return 2;
    } else {
      path = a;
    }
  }
  if (!path) {
    pd_driver_usage(stderr, &pd_cmd_dump);
    return 2;
  }

  pd_program *p;
  pd_error err = {0};
  if (load_input(path, &p, &err)) {
    print_error(&err);
    pd_error_clear(&err);
    return 1;
  }
  pd_buf out;
  pd_buf_init(&out);
  if (dot)
    pd_program_dump_dot(p, &out);
  else
    pd_program_dump(p, &out);
  pd_program_free(p);
  int rc = 0;
  if (out.oom) {
    fputs("error: out of memory listing the program\n", stderr);
    rc = 1;
  } else if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
    fputs("error: cannot write the listing\n", stderr);
    rc = 1;
  }
  pd_buf_free(&out);
  return rc;
}

const pd_command pd_cmd_dump = {
    "dump", run_dump, "print a saved program (.pdmodel) as a listing or a Graphviz graph",
    "pdlang dump [--dot] FILE.pdmodel\n"
    "  Prints the program's blocks, vars and ops; --dot prints a Graphviz digraph instead\n"
    "  (pdlang dump --dot model.pdmodel | dot -Tsvg > model.svg)."};
