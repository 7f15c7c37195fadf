/* cmd_plot.c -- `pdlang plot`: draws the training curves of a train log (train(..., log =
 * "run.csv") or `pdlang run --log`) as a PNG (train/plot.h). */
#include "config.h"
#include "driver/driver.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "train/plot.h"

/* A size in pixels, 16 to 10000. */
static bool pixels(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*end || !*s || v < 16 || v > 10000) return false;
  *out = (int)v;
  return true;
}

static int run_plot(int argc, char **argv) {
  if (pd_driver_wants_help(argc, argv)) {
    pd_driver_usage(stdout, &pd_cmd_plot);
    return 0;
  }
  const char *log = NULL, *png = NULL;
  int width = 0, height = 0;
  bool log_y = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--log-y") == 0) {
      log_y = true;
    } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) {
      png = argv[++i];
    } else if ((strcmp(a, "--width") == 0 || strcmp(a, "--height") == 0) && i + 1 < argc) {
      if (!pixels(argv[i + 1], a[2] == 'w' ? &width : &height)) {
        fprintf(stderr, "pdlang plot: %s is a number of pixels from 16 to 10000, not '%s'\n", a,
                argv[i + 1]);
        return 2;
      }
      i++;
    } else if (a[0] == '-' || log) {
      pd_driver_usage(stderr, &pd_cmd_plot);
      return 2;
    } else {
      log = a;
    }
  }
  if (!log || !png) {
    pd_driver_usage(stderr, &pd_cmd_plot);
    return 2;
  }
  pd_error err = {0};
  pd_status st = pd_plot_log(log, png, width, height, log_y, &err);
  if (st) {
    pd_buf b;
    pd_buf_init(&b);
    pd_diag_render_error(&b, NULL, &err);
    if (!b.oom && b.data) fputs(b.data, stderr);
    pd_buf_free(&b);
    pd_error_clear(&err);
    return 1;
  }
  return 0;
}

const pd_command pd_cmd_plot = {
    .name = "plot",
    .run = run_plot,
    .summary = "draw the training curves of a train log as a PNG",
    .usage = "pdlang plot LOG -o FILE.png [--width N] [--height N] [--log-y]\n"
             "\n"
             "Draws the log that train(..., log = \"run.csv\") or `pdlang run --log` wrote\n"
             "(CSV or JSON lines): a panel for the loss (the logged steps, each epoch's\n"
             "training loss, the validation loss), one for the learning rate when it changes,\n"
             "and one for each validation metric, against the global step; dashed lines mark\n"
             "the best validation and an early stop (the log's best and stop rows).\n"
             "  -o FILE.png       the picture to write (atomically)\n"
             "  --width N         its width in pixels (default 900)\n"
             "  --height N        its height (default 280 a panel)\n"
             "  --log-y           the loss panel on a logarithmic axis",
};
