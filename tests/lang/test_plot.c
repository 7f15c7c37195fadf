/* test_plot.c -- the training curves of train/plot.c: a log written here (CSV, and the same as
 * JSON lines) is drawn, the PNG decoded again with cairo and checked for its size, for pixels of
 * each curve's colour in the panel each belongs to (the loss panel: the steps, the epochs and
 * the validation; the accuracy panel: the validation only; a learning-rate panel only when the
 * rate changes; the validation from epoch rows, or from step rows as valid_every_steps writes
 * them), and for a blank picture of no curves never passing; the best and stop rows' dashed
 * lines in every panel; log_y's logarithmic loss axis; the errors of bad logs
 * name the file and the line (a cell: its column and value), and a last line without its newline
 * (still being written) is left out. Without cairo: the error that says so. */
#include "config.h"
#include "train/plot.h"
#include "tests/tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef PD_HAVE_CAIRO
#include <cairo.h>
#endif

static char dir[256];

static const char *path(const char *name) {
  static char buf[4][320];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 320, "%s/%s", dir, name);
  return p;
}

static void write_text(const char *name, const char *text) {
  FILE *f = fopen(path(name), "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* A log of 4 epochs of 10 steps: the loss falls as 1 / step, the validation's loss and
 * accuracy move each epoch; lr_changes: the rate halves each epoch; step_valid: the validation
 * is on step rows, every 5 steps, as valid_every_steps = 5 writes it (CSV only). */
static void make_log(const char *name, bool json, bool lr_changes, bool step_valid) {
  FILE *f = fopen(path(name), "w");
  if (!f) return;
  if (!json) fputs("kind,epoch,step,loss,lr,samples_per_s,time_s,valid_loss,valid_accuracy\n", f);
  for (int e = 1; e <= 4; e++) {
    double lr = lr_changes ? 0.1 / (1 << (e - 1)) : 0.1;
    for (int s = 1; s <= 10; s++) {
      int step = (e - 1) * 10 + s;
      if (json)
        fprintf(f, "{\"kind\": \"step\", \"epoch\": %d, \"step\": %d, \"loss\": %g, \"lr\": %g, "
                "\"samples_per_s\": 1000, \"time_s\": %g}\n", e, step, 1.0 / step, lr, step * 0.01);
      else fprintf(f, "step,%d,%d,%g,%g,1000,%g,,\n", e, step, 1.0 / step, lr, step * 0.01);
      if (step_valid && step % 5 == 0)
        fprintf(f, "step,%d,%d,,%g,1000,%g,%g,%g\n", e, step, lr, step * 0.01, 0.5 / step + 0.1,
                0.7 + 0.005 * step);
    }
    double vl = 0.5 / e + (e == 4 ? 0.1 : 0), acc = 0.7 + 0.05 * e;
    if (step_valid)
      fprintf(f, "epoch,%d,%d,%g,%g,1000,%g,,\n", e, e * 10, 0.3 / e, lr, e * 0.1);
    else if (json)
      fprintf(f, "{\"kind\": \"epoch\", \"epoch\": %d, \"step\": %d, \"loss\": %g, \"lr\": %g, "
              "\"samples_per_s\": 1000, \"time_s\": %g, \"valid_loss\": %g, \"valid_accuracy\": "
              "%g}\n", e, e * 10, 0.3 / e, lr, e * 0.1, vl, acc);
    else fprintf(f, "epoch,%d,%d,%g,%g,1000,%g,%g,%g\n", e, e * 10, 0.3 / e, lr, e * 0.1, vl, acc);
  }
  fclose(f);
}

#ifdef PD_HAVE_CAIRO
/* Pixels of colour rgb in rows [y0, y1) of the decoded PNG (the callers skip the panels' top
 * 50 rows, where the title and the legend's samples of the colours are). */
static long count(cairo_surface_t *s, unsigned rgb, int y0, int y1) {
  int w = cairo_image_surface_get_width(s), stride = cairo_image_surface_get_stride(s);
  const unsigned char *d = cairo_image_surface_get_data(s);
  long n = 0;
  for (int y = y0; y < y1; y++)
    for (int x = 0; x < w; x++) {
      uint32_t px;
      memcpy(&px, d + (size_t)y * stride + (size_t)x * 4, 4);
      n += (px & 0xffffff) == rgb;
    }
  return n;
}

static void check_picture(const char *log, const char *png, int panels, const char *what) {
  pd_error e = {0};
  pd_status st = pd_plot_log(path(log), path(png), 0, 0, false, &e);
  is_int(st, PD_OK, "%s: drawn (%s)", what, e.msg ? e.msg : "no error");
  pd_error_clear(&e);
  cairo_surface_t *s = cairo_image_surface_create_from_png(path(png));
  ok(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS, "%s: the PNG decodes", what);
  if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(s);
    return;
  }
  cairo_surface_flush(s);
  int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  ok(w == 900 && h == 280 * panels, "%s: 900 x %d pixels (%d panels), got %d x %d", what,
     280 * panels, panels, w, h);
  int ph = h / panels;
  long st_ = count(s, PD_PLOT_STEP_RGB, 50, ph), tr = count(s, PD_PLOT_TRAIN_RGB, 50, ph),
       va = count(s, PD_PLOT_VALID_RGB, 50, ph);
  ok(st_ > 50 && tr > 200 && va > 200,
     "%s: the loss panel has the steps' (%ld), the epochs' (%ld) and the validation's (%ld) "
     "curves", what, st_, tr, va);
  int acc = panels - 1;  /* the accuracy panel is the last */
  long av = count(s, PD_PLOT_VALID_RGB, acc * ph + 50, h);
  ok(av > 200 && count(s, PD_PLOT_STEP_RGB, acc * ph, h) == 0 &&
         count(s, PD_PLOT_TRAIN_RGB, acc * ph, h) == 0,
     "%s: the accuracy panel has the validation's curve only (%ld)", what, av);
  cairo_surface_destroy(s);
}
/* The marks: train's log repeats the row of a new best validation as kind "best" and the row
 * where early stopping ended the run as "stop"; the last of each is a dashed line in every
 * panel, and a log without them has none. */
static void check_marks(void) {
  FILE *f = fopen(path("marks.csv"), "w"), *g = fopen(path("marks.jsonl"), "w");
  if (!f || !g) {
    if (f) fclose(f);
    if (g) fclose(g);
    ok(false, "marks: cannot write the logs");
    return;
  }
  fputs("kind,epoch,step,loss,lr,samples_per_s,time_s,valid_loss,valid_accuracy\n", f);
  for (int e = 1; e <= 6; e++) {
    double vl = e <= 2 ? 0.5 / e : 0.3 + 0.01 * e, acc = 0.7 + 0.01 * e;
    for (int s = 1; s <= 10; s++) {
      fprintf(f, "step,%d,%d,%g,0.1,1000,1,,\n", e, (e - 1) * 10 + s, 1.0 / ((e - 1) * 10 + s));
      fprintf(g, "{\"kind\": \"step\", \"epoch\": %d, \"step\": %d, \"loss\": %g}\n", e,
              (e - 1) * 10 + s, 1.0 / ((e - 1) * 10 + s));
    }
    const char *kinds[3] = {"epoch", e <= 2 ? "best" : NULL, e == 6 ? "stop" : NULL};
    for (int k = 0; k < 3; k++) {
      if (!kinds[k]) continue;
      fprintf(f, "%s,%d,%d,%g,0.1,1000,1,%g,%g\n", kinds[k], e, e * 10, 0.3 / e, vl, acc);
      fprintf(g, "{\"kind\": \"%s\", \"epoch\": %d, \"step\": %d, \"loss\": %g, "
              "\"valid_loss\": %g, \"valid_accuracy\": %g}\n", kinds[k], e, e * 10, 0.3 / e, vl, acc);
    }
  }
  fclose(f);
  fclose(g);
  const char *logs[2] = {"marks.csv", "marks.jsonl"};
  for (int i = 0; i < 2; i++) {
    pd_error e = {0};
    is_int(pd_plot_log(path(logs[i]), path("m.png"), 0, 0, false, &e), PD_OK, "marks: %s drawn",
           logs[i]);
    pd_error_clear(&e);
    cairo_surface_t *s = cairo_image_surface_create_from_png(path("m.png"));
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
      ok(false, "marks: the PNG of %s decodes", logs[i]);
      cairo_surface_destroy(s);
      continue;
    }
    cairo_surface_flush(s);
    int h = cairo_image_surface_get_height(s), ph = h / 2;
    long b0 = count(s, PD_PLOT_BEST_RGB, 50, ph), b1 = count(s, PD_PLOT_BEST_RGB, ph + 50, h);
    long s0 = count(s, PD_PLOT_STOP_RGB, 50, ph), s1 = count(s, PD_PLOT_STOP_RGB, ph + 50, h);
    ok(h == 560 && b0 > 60 && b1 > 60 && s0 > 60 && s1 > 60,
       "marks (%s): the best (epoch 2) and the early stop (epoch 6) are lines in both panels "
       "(%ld, %ld; %ld, %ld pixels), and their rows are not points of the curves", logs[i], b0,
       b1, s0, s1);
    cairo_surface_destroy(s);
  }
  cairo_surface_t *s = cairo_image_surface_create_from_png(path("a.png"));
  cairo_surface_flush(s);
  int h = cairo_image_surface_get_height(s);
  ok(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS && count(s, PD_PLOT_BEST_RGB, 0, h) == 0 &&
         count(s, PD_PLOT_STOP_RGB, 0, h) == 0,
     "marks: a log without best and stop rows has none");
  cairo_surface_destroy(s);
}

/* log_y: the loss panel on a logarithmic axis. The panel spans the steps' loss 1 / step, 1
 * down to 0.025; the first epoch's training loss, 0.3, is below the frame's middle on a linear
 * axis (about 0.51) and above it on a logarithmic one (about 0.16): the epochs' curve (its
 * dots) has pixels in the upper half with log_y only. */
static void check_log_y(void) {
  pd_error e = {0};
  is_int(pd_plot_log(path("run.csv"), path("ly.png"), 0, 0, true, &e), PD_OK, "log_y: drawn");
  pd_error_clear(&e);
  cairo_surface_t *lin = cairo_image_surface_create_from_png(path("a.png"));
  cairo_surface_t *lg = cairo_image_surface_create_from_png(path("ly.png"));
  cairo_surface_flush(lin);
  cairo_surface_flush(lg);
  bool good = cairo_surface_status(lin) == CAIRO_STATUS_SUCCESS &&
              cairo_surface_status(lg) == CAIRO_STATUS_SUCCESS &&
              cairo_image_surface_get_height(lg) == cairo_image_surface_get_height(lin);
  /* The frame of the loss panel: rows 34 to 240; its upper half 34 to 137. */
  long up_lin = good ? count(lin, PD_PLOT_TRAIN_RGB, 50, 137) : 0;
  long up_log = good ? count(lg, PD_PLOT_TRAIN_RGB, 50, 137) : 0;
  long all_log = good ? count(lg, PD_PLOT_TRAIN_RGB, 50, 240) : 0;
  ok(good && up_lin == 0 && up_log > 20 && all_log > 200,
     "log_y: the epochs' curve rises into the upper half (%ld pixels there, %ld on a linear "
     "axis; %ld in all)", up_log, up_lin, all_log);
  cairo_surface_destroy(lin);
  cairo_surface_destroy(lg);
}
#endif

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/pdplot.XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(dir)) {
    printf("Bail out! no temporary folder\n");
    return 1;
  }
  make_log("run.csv", false, false, false);
  make_log("run.jsonl", true, false, false);
  make_log("lr.csv", false, true, false);
  make_log("steps.csv", false, false, true);
  pd_error e = {0};
#ifdef PD_HAVE_CAIRO
  ok(pd_plot_available(), "built with cairo");
  check_picture("run.csv", "a.png", 2, "CSV");
  check_picture("run.jsonl", "b.png", 2, "JSON lines");
  check_picture("lr.csv", "c.png", 3, "a changing learning rate");
  check_picture("steps.csv", "e.png", 2, "validation on step rows (valid_every_steps)");
  check_marks();
  check_log_y();
  /* A chosen size. */
  is_int(pd_plot_log(path("run.csv"), path("d.png"), 400, 300, false, NULL), PD_OK, "400 x 300 drawn");
  cairo_surface_t *s = cairo_image_surface_create_from_png(path("d.png"));
  ok(cairo_image_surface_get_width(s) == 400 && cairo_image_surface_get_height(s) == 300,
     "  and it is 400 x 300");
  cairo_surface_destroy(s);
  /* The checks fail on a picture without curves: a blank one of the same size. */
  cairo_surface_t *blank = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 900, 560);
  cairo_t *cr = cairo_create(blank);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_destroy(cr);
  cairo_surface_flush(blank);
  ok(count(blank, PD_PLOT_TRAIN_RGB, 0, 560) == 0 && count(blank, PD_PLOT_VALID_RGB, 0, 560) == 0,
     "a blank picture has no curve pixels (the counts can fail)");
  cairo_surface_destroy(blank);
#else
  ok(!pd_plot_available(), "built without cairo");
  is_int(pd_plot_log(path("run.csv"), path("a.png"), 0, 0, false, &e), PD_EUNSUPPORTED,
         "drawing is refused");
  ok(e.msg && strstr(e.msg, "built without cairo"), "  saying why: %s", e.msg ? e.msg : "");
  pd_error_clear(&e);
  ok(access(path("a.png"), F_OK) != 0, "  and writes nothing");
#endif
  /* Bad logs, with or without cairo. */
  write_text("bad_header.csv", "epoch,loss\n1,2\n");
  is_int(pd_plot_log(path("bad_header.csv"), path("x.png"), 0, 0, false, &e), PD_EFORMAT,
         "a CSV that is not a train log is refused");
  ok(e.msg && strstr(e.msg, "not a train log") && e.loc.file && e.loc.line == 1 &&
         strstr(e.loc.file, "bad_header.csv"),
     "  at its file and line: %s", e.msg ? e.msg : "");
  pd_error_clear(&e);
  write_text("bad_cell.csv", "kind,epoch,step,loss\nstep,1,1,0.5\nstep,1,2,zero\n");
  is_int(pd_plot_log(path("bad_cell.csv"), path("x.png"), 0, 0, false, &e), PD_EFORMAT,
         "a cell that is not a number is refused");
  ok(e.loc.line == 3 && e.msg && !strcmp(e.msg, "a cell is not a number: column loss, value \"zero\""),
     "  at line 3, naming the column and the value: %s", e.msg ? e.msg : "");
  pd_error_clear(&e);
  write_text("bad_cell.jsonl", "{\"kind\": \"step\", \"step\": 1, \"loss\": 1e}\n");
  is_int(pd_plot_log(path("bad_cell.jsonl"), path("x.png"), 0, 0, false, &e), PD_EFORMAT,
         "a JSON value that is not a number is refused");
  ok(e.loc.line == 1 && e.msg && !strcmp(e.msg, "a cell is not a number: column loss, value \"1e\""),
     "  at line 1, naming the key and the value: %s", e.msg ? e.msg : "");
  pd_error_clear(&e);
  /* The last line without its newline is still being written: left out. */
  write_text("partial.csv", "kind,epoch,step,loss\nstep,1,1,0.5\nstep,1,2,0.4\nstep,1,");
  write_text("partial.jsonl", "{\"kind\": \"step\", \"step\": 1, \"loss\": 1}\n"
                              "{\"kind\": \"step\", \"step\": 2, \"loss\": 0.5}\n{\"kind\": \"st");
  write_text("partial_header.csv", "kind,epoch,st");
#ifdef PD_HAVE_CAIRO
  is_int(pd_plot_log(path("partial.csv"), path("x.png"), 0, 0, false, &e), PD_OK,
         "a CSV log whose last line is being written draws without it");
  pd_error_clear(&e);
  is_int(pd_plot_log(path("partial.jsonl"), path("x.png"), 0, 0, false, &e), PD_OK,
         "a JSON-lines log whose last line is being written draws without it");
  pd_error_clear(&e);
  unlink(path("x.png"));
#endif
  is_int(pd_plot_log(path("partial_header.csv"), path("x.png"), 0, 0, false, &e), PD_EINVAL,
         "a log whose header is being written has no rows yet");
  ok(e.msg && strstr(e.msg, "no rows"), "  saying so: %s", e.msg ? e.msg : "");
  pd_error_clear(&e);
  write_text("empty.csv", "kind,epoch,step,loss,lr\n");
  is_int(pd_plot_log(path("empty.csv"), path("x.png"), 0, 0, false, &e), PD_EINVAL,
         "a log without rows is refused");
  ok(e.msg && strstr(e.msg, "no rows"), "  saying so: %s", e.msg ? e.msg : "");
  pd_error_clear(&e);
  write_text("bad.jsonl", "{\"kind\": \"step\", \"step\": 1, \"loss\": 1}\n{\"kind\": \"halt\"}\n");
  is_int(pd_plot_log(path("bad.jsonl"), path("x.png"), 0, 0, false, &e), PD_EFORMAT,
         "a JSON line of another kind is refused");
  pd_error_clear(&e);
  is_int(pd_plot_log(path("missing.csv"), path("x.png"), 0, 0, false, &e), PD_EIO,
         "a missing log is refused");
  ok((e.msg && strstr(e.msg, "missing.csv")) || (e.loc.file && strstr(e.loc.file, "missing.csv")),
     "  naming it: %s", e.msg ? e.msg : "");
  pd_error_clear(&e);
  ok(access(path("x.png"), F_OK) != 0, "no picture is written for a bad log");
  const char *names[] = {"run.csv", "run.jsonl", "lr.csv", "a.png", "b.png", "c.png", "d.png",
                         "bad_header.csv", "bad_cell.csv", "empty.csv", "bad.jsonl",
                         "bad_cell.jsonl", "partial.csv", "partial.jsonl", "partial_header.csv",
                         "steps.csv", "e.png", "marks.csv", "marks.jsonl", "m.png", "ly.png"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(path(names[i]));
  rmdir(dir);
  return tap_done();
}
