/* cmd_dump.c -- `pdlang dump [--dot] [--startup] [--train] [--nranks N] [--prune NAMES]
 * [--optimized] FILE`: print a program as a
 * readable listing (the format of pd_program_dump, which golden tests compare) or as a Graphviz
 * digraph. FILE is a .pd script (compiled as `pdlang check` compiles it; its main program, or
 * with --startup its startup program) or a saved program (a .pdmodel: Fluid ProgramDesc bytes).
 * --prune lists what vm/passes/prune.h keeps for the given vars of the global block. --train
 * shows the training program of the script's first train(...), and --nranks N the training or
 * startup program of a data-parallel job of N processes (vm/passes/data_parallel.h). --optimized
 * shows a saved model as `pdlang exec` runs it: after the load-time passes
 * (vm/passes/infer_opt.h) on its parameters, with a line saying what they did. */
#include "config.h"
#include "driver/driver.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "vm/run/model.h"
#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "vm/ir/serialize.h"
#include "vm/passes/prune.h"

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void print_error(const pd_error *err) {
  pd_buf msg;
  pd_buf_init(&msg);
  pd_diag_render_error(&msg, NULL, err);
  fputs(msg.oom || !msg.data ? "error: out of memory\n" : msg.data, stderr);
  pd_buf_free(&msg);
}

/* The program FILE stands for, and what owns it. */
typedef struct input {
  pd_program *loaded;  /* a saved program */
  pd_source *src;      /* a compiled script: its source and unit */
  pd_unit *unit;
  const pd_program *program;
} input;

static void input_free(input *in) {
  pd_program_free(in->loaded);
  pd_unit_free(in->unit);
  pd_source_free(in->src);
}

/* Load FILE: a .pd script is compiled (diagnostics printed exactly as by `pdlang check`); a
 * Fluid model folder is its __model__; anything else is read as a saved ProgramDesc, whatever
 * its name. 0, or 1 after printing. */
static int load_input(const char *path, bool startup, input *in) {
  *in = (input){0};
  if (has_suffix(path, ".pd")) {
    if (pd_driver_compile_file(path, &in->src, &in->unit)) return 1;
    in->program = startup ? in->unit->startup : in->unit->main;
    return 0;
  }
  if (startup) {
    fprintf(stderr, "%s: error: --startup needs a .pd script; a saved program has no startup "
                    "program in it\n", path);
    return 1;
  }
  pd_error err = {0};
  char *folder_model = pd_model_folder_program(path);  /* Fluid's folder: its __model__ */
  pd_status st = pd_program_load(folder_model ? folder_model : path, &in->loaded, &err);
  pd_free(folder_model);
  if (st) {
    print_error(&err);
    pd_error_clear(&err);
    return 1;
  }
  in->program = in->loaded;
  return 0;
}

/* Split "a,b,c" into names (pointers into the copy *buf; the caller frees *buf and *names, also
 * on failure). The count, -1 for an empty name, or -2 on out of memory. */
static int split_names(const char *list, char **buf, const char ***names) {
  *names = NULL;
  if (!(*buf = pd_strdup(list))) return -2;
  int n = 1;
  for (const char *s = list; *s; s++) n += *s == ',';
  if (!(*names = pd_calloc((size_t)n, sizeof **names))) return -2;
  char *s = *buf;
  for (int i = 0; i < n; i++) {
    char *comma = strchr(s, ',');
    if (comma) *comma = '\0';
    if (!*s) return -1;
    (*names)[i] = s;
    s = comma ? comma + 1 : s + strlen(s);
  }
  return n;
}

/* Prune in->program to the comma-separated targets; *out is the pruned copy. 0, 1 (an error,
 * printed), or 2 (a malformed list: a usage error). */
static int prune_input(const char *path, const input *in, const char *list, pd_program **out) {
  char *buf = NULL;
  const char **names = NULL;
  int n = split_names(list, &buf, &names);
  int rc = 0;
  if (n < 0) {
    if (n == -2)
      fputs("error: out of memory\n", stderr);
    else
      fprintf(stderr, "pdlang dump: --prune wants var names separated by commas, got '%s'\n",
              list);
    rc = n == -2 ? 1 : 2;
  } else {
    pd_error err = {0};
    if (pd_program_prune(in->program, n, names, out, &err)) {
      fprintf(stderr, "%s: error: %s\n", path, err.msg ? err.msg : pd_status_str(err.status));
      pd_error_clear(&err);
      rc = 1;
    }
  }
  pd_free(names);
  pd_free(buf);
  return rc;
}

/* The saved model at path with its parameters, after the load-time passes; *out the program
 * (owned by *m), a note of what the passes did in note. 0, or 1 after printing. */
static int optimize_input(const char *path, pd_model *m, const pd_program **out, char *note,
                          size_t n) {
  pd_error err = {0};
  pd_status st = pd_model_load(m, path, &err);
  if (!st) st = pd_model_load_params(m, path, NULL, &err);
  if (!st) st = pd_program_infer_opt(m->program, m->scope, PD_K_HOST, &m->opt, &err);
  if (st) {
    print_error(&err);
    pd_error_clear(&err);
    return 1;
  }
  char what[240];
  pd_infer_opt_describe(&m->opt, what, sizeof what);
  snprintf(note, n, "# load-time passes: %s\n", what);
  *out = m->program;
  return 0;
}

static int usage_error(void) {
  pd_driver_usage(stderr, &pd_cmd_dump);
  return 2;
}

static int run_dump(int argc, char **argv) {
  bool dot = false, startup = false, train = false, optimized = false, options_done = false;
  const char *path = NULL, *prune = NULL;
  long nranks = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!options_done && strcmp(a, "--") == 0) {
      options_done = true;
    } else if (!options_done && strcmp(a, "--dot") == 0) {
      dot = true;
    } else if (!options_done && strcmp(a, "--startup") == 0) {
      startup = true;
    } else if (!options_done && strcmp(a, "--train") == 0) {
      train = true;
    } else if (!options_done && strcmp(a, "--optimized") == 0) {
      optimized = true;
    } else if (!options_done && (strcmp(a, "--nranks") == 0 || strncmp(a, "--nranks=", 9) == 0)) {
      const char *v = a[8] == '=' ? a + 9 : i + 1 < argc ? argv[++i] : "";
      char *end;
      nranks = strtol(v, &end, 10);
      if (!*v || *end || nranks < 1 || nranks > 1000000) {
        fprintf(stderr, "pdlang dump: --nranks needs a number of processes >= 1, got '%s'\n", v);
        return usage_error();
      }
    } else if (!options_done && strcmp(a, "--prune") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "pdlang dump: --prune needs var names (--prune NAME[,NAME...])\n");
        return usage_error();
      }
      prune = argv[++i];
    } else if (!options_done && strncmp(a, "--prune=", 8) == 0) {
      prune = a + 8;
    } else if (!options_done && a[0] == '-' && a[1]) {
      fprintf(stderr, "pdlang dump: unknown option '%s'\n", a);
      return usage_error();
    } else if (path) {
      fprintf(stderr, "pdlang dump: one file at a time ('%s' and '%s' given)\n", path, a);
      return 2;
    } else {
      path = a;
    }
  }
  if (!path) return usage_error();
  if ((train || nranks) && !has_suffix(path, ".pd")) {
    fprintf(stderr, "%s: error: --train and --nranks need a .pd script\n", path);
    return 1;
  }
  if (nranks && !train && !startup) {
    fprintf(stderr, "pdlang dump: --nranks shows the --train or the --startup program; give one\n");
    return usage_error();
  }
  if (train && startup) {
    fprintf(stderr, "pdlang dump: --train and --startup show different programs; give one\n");
    return usage_error();
  }

  if (optimized && (startup || train || nranks || has_suffix(path, ".pd"))) {
    fprintf(stderr, "pdlang dump: --optimized shows a saved model (.pdmodel, .json or a Fluid "
                    "folder) as exec runs it; give one, without --startup, --train or --nranks\n");
    return usage_error();
  }
  pd_model model = {0};
  char note[288] = "";
  input in = {0};
  if (optimized) {
    if (optimize_input(path, &model, &in.program, note, sizeof note)) {
      pd_model_free(&model);
      return 1;
    }
  } else if (load_input(path, startup, &in)) {
    input_free(&in);
    return 1;
  }
  pd_program *pruned = NULL;
  if (train || nranks) {   /* the program of a training job (replaces the unit's own) */
    pd_error err = {0};
    if (pd_run_train_program(in.unit, nranks ? (int)nranks : 1, startup, &in.loaded, &err)) {
      pd_driver_print_error(in.unit, in.src, &err);
      pd_error_clear(&err);
      input_free(&in);
      return 1;
    }
    in.program = in.loaded;
  }
  int prc = prune ? prune_input(path, &in, prune, &pruned) : 0;
  if (prc) {
    input_free(&in);
    return prc;
  }
  const pd_program *p = pruned ? pruned : in.program;
  pd_buf out;
  pd_buf_init(&out);
  if (dot) {
    pd_program_dump_dot(p, &out);
  } else {
    pd_buf_puts(&out, note);
    pd_program_dump(p, &out);
  }
  pd_program_free(pruned);
  input_free(&in);
  pd_model_free(&model);
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
    .name = "dump",
    .run = run_dump,
    .summary = "print a program (.pd script, .pdmodel or PIR .json) as a listing or a graph",
    .usage = "pdlang dump [--dot] [--startup] [--train] [--nranks N] [--prune NAME[,NAME...]]\n"
    "            [--optimized] FILE.pd|FILE.pdmodel|FILE.json|DIR\n"
    "  Prints the program's blocks, vars and ops; --dot prints a Graphviz digraph instead\n"
    "  (pdlang dump --dot model.pdmodel | dot -Tsvg > model.svg).\n"
    "  A .pd script is compiled first (errors are reported as by 'pdlang check', exit 1) and its\n"
    "  main program is shown; --startup shows its startup program (the parameter\n"
    "  initialisers) instead. --prune keeps only the ops that compute the named vars of the\n"
    "  global block (what an action that fetches them would run). --train shows the training\n"
    "  program of the script's first train(...) (backward pass and updates), and --nranks N\n"
    "  the training (--train) or startup (--startup) program of a data-parallel job of N\n"
    "  processes (mpirun -np N pdlang run): c_broadcast, c_allreduce_sum, c_sync_comm_stream.\n"
    "  A folder holding __model__ (Fluid's model layout) shows that program. --optimized shows\n"
    "  a saved model as exec runs it: its parameters loaded, batch norms folded into the\n"
    "  convolution or product before them, test-mode dropout and identity scales removed,\n"
    "  mul + bias add fused into fc (a first line says how many)."};
