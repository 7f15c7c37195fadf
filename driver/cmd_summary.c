/* cmd_summary.c -- `pdlang summary FILE.pd`: the model's layers by source line, their output
 * shapes and parameter counts, and the totals, as Keras's model.summary() (lang/summary.h).
 * Nothing runs. */
#include "config.h"
#include "driver/driver.h"

#include "lang/compile.h"
#include "lang/summary.h"

static int run_summary(int argc, char **argv) {
  if (pd_driver_wants_help(argc, argv)) {
    pd_driver_usage(stdout, &pd_cmd_summary);
    return 0;
  }
  if (argc != 2 || argv[1][0] == '-') {
    pd_driver_usage(stderr, &pd_cmd_summary);
    return 2;
  }
  pd_source *src;
  pd_unit *unit;
  if (pd_driver_compile_file(argv[1], &src, &unit)) return 1;
  pd_buf b;
  pd_buf_init(&b);
  pd_status st = pd_unit_summary(unit, src, &b, NULL);
  if (st) fprintf(stderr, "%s: error: out of memory\n", argv[1]);
  else fputs(b.data, stdout);
  pd_buf_free(&b);
  pd_unit_free(unit);
  pd_source_free(src);
  return st ? 1 : 0;
}

const pd_command pd_cmd_summary = {
    .name = "summary",
    .run = run_summary,
    .summary = "list a script's layers, output shapes and parameter counts",
    .usage = "pdlang summary FILE.pd\n"
             "\n"
             "Compiles FILE.pd (running nothing) and prints, as Keras's model.summary(), a row\n"
             "per layer (the ops of one call, by its source line): the call, the shape of its\n"
             "output, the elements of the parameters it reads first; then the total, trainable\n"
             "and non-trainable parameter counts.",
};
