/* pdlang.c -- entry point of the pdlang program: global options and subcommand dispatch. */
#include "config.h"
#include "driver/driver.h"

#include <string.h>

#include "kernels/kernels.h"

static const pd_command *const commands[] = {
    &pd_cmd_parse,
    &pd_cmd_check,
    &pd_cmd_compile,
    &pd_cmd_dump,
    &pd_cmd_run,
    &pd_cmd_exec,
    &pd_cmd_bench,
    &pd_cmd_decompile,
    &pd_cmd_repl,
    &pd_cmd_plot,
    &pd_cmd_summary,
};

static void usage(FILE *out) {
  fprintf(out,
          "usage: pdlang COMMAND [ARGS...]\n"
          "       pdlang -i [FILE.pd]   (run FILE.pd, then stay in the REPL: pdlang repl -i)\n"
          "       pdlang --help | --version\n"
          "\n"
          "pdlang compiles .pd deep-learning scripts to PaddlePaddle-style programs and runs them.\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(out, "\n'pdlang COMMAND --help' describes one command.\n");
}

void pd_driver_usage(FILE *out, const pd_command *cmd) {
  fprintf(out, "usage: %s\n", cmd->usage);
}

int pd_driver_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  /* Flush-to-zero in every computing thread (kernels.h); the kernels' thread pool below, or in
   * the command once its options have chosen its size. */
  pd_k_set_ftz_daz();
  if (argc < 2) { /* the REPL, or stdin */
    pd_k_init();
    return pd_cmd_repl.run(1, (char *[]){"repl", NULL});
  }
  const char *name = argv[1];
  /* `pdlang -i [FILE.pd]`, as python -i: run the file, then stay at the prompt (pdlang repl -i). */
  if (strcmp(name, "-i") == 0) {
    pd_k_init();
    argv[0] = (char *)"repl";
    return pd_cmd_repl.run(argc, argv);
  }
  if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
    printf("%s\n", PACKAGE_STRING);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(name, commands[i]->name) == 0) {
      if (pd_driver_wants_help(argc - 1, argv + 1)) {
        pd_driver_usage(stdout, commands[i]);
        return 0;
      }
      if (!commands[i]->sizes_pool) pd_k_init();
      return commands[i]->run(argc - 1, argv + 1);
    }
  }
  fprintf(stderr, "pdlang: unknown command '%s' (see 'pdlang --help')\n", name);
  return 2;
}
