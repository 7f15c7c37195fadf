/* cmd_decompile.c -- `pdlang decompile MODEL [-o FILE.pd] [--save-as PATH]`: a saved model
 * (found as pdlang exec finds it) as a .pd script that builds the same program, loads the
 * model's parameters and saves it again (lang/decompile.h). */
#include "config.h"
#include "driver/driver.h"

#include <stdio.h>
#include <string.h>

#include "lang/decompile.h"
#include "vm/run/model.h"

static int run_decompile(int argc, char **argv) {
  if (pd_driver_wants_help(argc, argv)) {
    pd_driver_usage(stdout, &pd_cmd_decompile);
    return 0;
  }
  const char *model = NULL, *outp = NULL, *save_as = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) outp = argv[++i];
    else if (strcmp(argv[i], "--save-as") == 0 && i + 1 < argc) save_as = argv[++i];
    else if (argv[i][0] != '-' && !model) model = argv[i];
    else {
      pd_driver_usage(stderr, &pd_cmd_decompile);
      return 2;
    }
  }
  if (!model) {
    pd_driver_usage(stderr, &pd_cmd_decompile);
    return 2;
  }
  pd_error err = {0};
  pd_model m = {0};
  char *found = NULL, *def_save = NULL;
  pd_buf b;
  pd_buf_init(&b);
  int rc = 1;
  pd_status st = pd_model_find(model, &found, &err);
  const char *file = found ? found : model;
  if (!st) st = pd_model_load(&m, file, &err);
  if (!st && !save_as) {
    /* NAME.decompiled.pdmodel beside where it runs: NAME is the model file's name */
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n > 8 && strcmp(base + n - 8, ".pdmodel") == 0) n -= 8;
    else if (n > 5 && strcmp(base + n - 5, ".json") == 0) n -= 5;
    pd_buf_printf(&b, "%.*s.decompiled.pdmodel", (int)n, base);
    def_save = pd_buf_take(&b);
    save_as = def_save ? def_save : "model.decompiled.pdmodel";
  }
  pd_buf_clear(&b);
  if (!st) st = pd_decompile(&m, file, save_as, &b, &err);
  if (st) {
    fprintf(stderr, "pdlang decompile: %s: %s\n", model, err.msg ? err.msg : pd_status_str(st));
  } else if (outp) {
    st = pd_write_file_atomic(outp, b.data, b.len, &err);
    if (st) fprintf(stderr, "pdlang decompile: %s\n", err.msg ? err.msg : pd_status_str(st));
    else rc = 0;
  } else {
    fputs(b.data, stdout);
    rc = 0;
  }
  pd_buf_free(&b);
  pd_free(found);
  pd_free(def_save);
  pd_model_free(&m);
  pd_error_clear(&err);
  return rc;
}

const pd_command pd_cmd_decompile = {
    .name = "decompile",
    .run = run_decompile,
    .summary = "write a saved model as a .pd script that builds, loads and saves it again",
    .usage = "pdlang decompile MODEL [-o FILE.pd] [--save-as PATH]\n"
             "\n"
             "Reads MODEL (a .pdmodel, PaddlePaddle 3's .json, a Fluid folder, or a path prefix\n"
             "or folder as pdlang exec takes them) and writes, to FILE.pd or standard output, a\n"
             "script that builds the same program: its inputs as data(), its parameters as\n"
             "param() with the file's names, each op as op(\"type\", Slot = var, attribute =\n"
             "value, ...) in the saved order (a comment gives its index), then load(MODEL) and\n"
             "save(PATH, outputs...) to --save-as PATH (default NAME.decompiled.pdmodel), so\n"
             "that `pdlang run FILE.pd` writes the model again. Names are kept where they are\n"
             "identifiers. A run of ops that a stdlib layer or a builtin compiles to is\n"
             "written as that call (fc, conv, batch_norm, max_pool, matmul, relu, a + b, ...;\n"
             "the script is compiled first and a call whose ops differ stays op() lines).\n"
             "A Fluid folder is loaded as load(FOLDER). Control flow is written as the\n"
             "language's statements where it maps back to them: while (cond) { ... } for a\n"
             "while op, if (cond) { ... } else { ... } for a conditional_block on one element\n"
             "and the one on its logical_not (with static.nn.cond's select_input as the\n"
             "assignment of its output in each branch; an if over rows likewise, its split\n"
             "parts as the split var, its merges' outputs assigned in each branch), kept\n"
             "when the script compiles to the model's ops. Otherwise an op that runs a block\n"
             "is written with its block as a body, op(\"while\", ...) { ... }, and a var that\n"
             "a block below writes first is made before it by declare(shape).",
};
