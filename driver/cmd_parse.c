/* cmd_parse.c -- `pdlang parse`: parse a .pd script and print its syntax tree (the format of
 * pd_ast_dump in lang/ast.h), or its diagnostics on stderr with exit status 1. */
#include "config.h"
#include "driver/driver.h"

#include "base/diag.h"
#include "lang/ast.h"
#include "lang/parse.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Read all of standard input into a source named "<stdin>". */
static pd_status read_stdin(pd_source **out, pd_error *err) {
  pd_buf b;
  pd_buf_init(&b);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
    if (pd_buf_append(&b, chunk, n)) break;
  }
  pd_status st = PD_OK;
  if (b.oom)
    st = pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory reading standard input");
  else if (ferror(stdin))
    st = pd_error_set(err, PD_EIO, (pd_loc){0}, "cannot read standard input");
  else if (pd_source_from_string("<stdin>", b.data ? b.data : "", b.len, out) != PD_OK)
    st = pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory reading standard input");
  pd_buf_free(&b);
  return st;
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "pdlang parse: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  pd_driver_usage(stderr, &pd_cmd_parse);
  return 2;
}

static int run_parse(int argc, char **argv) {
  const char *path = NULL;
  int max_errors = 0; /* pd_diags' default */
  int options = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (options && strcmp(a, "--") == 0) {
      options = 0;
    } else if (options && strcmp(a, "--ast") == 0) {
      /* the default output; accepted for symmetry with the other commands */
    } else if (options && strcmp(a, "--max-errors") == 0) {
      if (++i == argc) return usage_error("%s needs a number", a);
      char *end;
      errno = 0;
      long v = strtol(argv[i], &end, 10);
      if (*argv[i] == '\0' || *end != '\0' || errno || v < 1 || v > INT_MAX)
        return usage_error("--max-errors takes a positive number, not '%s'", argv[i]);
      max_errors = (int)v;
    } else if (options && a[0] == '-' && a[1] != '\0') {
      return usage_error("unknown option '%s'", a);
    } else if (path) {
      return usage_error("one file at a time ('%s' is one too many)", a);
    } else {
      path = a;
    }
  }
  if (!path) return usage_error("%s", "no input file (use '-' for standard input)");

  pd_error err = {0};
  pd_source *src = NULL;
  pd_status st = strcmp(path, "-") == 0 ? read_stdin(&src, &err) : pd_source_open(path, &src, &err);
  if (st) {
    fprintf(stderr, "pdlang: %s\n", err.msg ? err.msg : pd_status_str(st));
    pd_error_clear(&err);
    return 1;
  }

  pd_diags diags;
  pd_diags_init(&diags, max_errors);
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_ast_node *root = NULL;
  st = arena ? pd_parse(src, arena, &diags, &root) : PD_ENOMEM;
  pd_buf out;
  pd_buf_init(&out);
  if (st == PD_OK) st = pd_ast_dump(root, &out);

  if (diags.text.len) fwrite(diags.text.data, 1, diags.text.len, stderr);
  if (st == PD_ENOMEM) fprintf(stderr, "pdlang: out of memory\n");
  if (st == PD_OK && out.len) fwrite(out.data, 1, out.len, stdout);
  if (st == PD_OK && fflush(stdout) != 0) {
    fprintf(stderr, "pdlang: cannot write the output: %s\n", strerror(errno));
    st = PD_EIO;
  }

  pd_buf_free(&out);
  pd_ast_arena_free(arena);
  pd_diags_free(&diags);
  pd_source_free(src);
  return st == PD_OK ? 0 : 1;
}

const pd_command pd_cmd_parse = {
    .name = "parse",
    .run = run_parse,
    .summary = "parse a .pd script and print its syntax tree",
    .usage = "pdlang parse [--ast] [--max-errors N] FILE.pd\n"
    "  Prints the syntax tree of FILE.pd (FILE '-' reads standard input), one node per line:\n"
    "  role: kind fields @line:col. On errors prints the diagnostics and exits with status 1.\n"
    "  --max-errors N  stop after N errors (default 20)"};
