/* plot.c -- training curves as a PNG (train/plot.h): reads a train log (CSV or JSON lines, as
 * train/train_log.c writes them) and draws one panel per quantity with cairo, the PNG written
 * atomically. Without cairo (configure found none) pd_plot_log says so. */
#include "config.h"
#include "train/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PD_HAVE_CAIRO
#include <cairo.h>
#endif

/* ---------------------------------------------------------------- the log */

#define MAX_COLS 24

typedef struct logdata {
  int ncols;                       /* the numeric columns: epoch, step, loss, lr, ... */
  char cols[MAX_COLS][72];
  int64_t nrows, cap;
  bool *epoch_row;                 /* kind: epoch (else step) */
  double *v;                       /* nrows x ncols, NaN where empty */
  double best_step, best_epoch;    /* the last "best" row's (NaN: none) */
  double stop_step, stop_epoch;    /* the last "stop" row's (NaN: none) */
} logdata;

/* A row's kind: step, epoch, or the marks best and stop (the row of the best validation so
 * far, of an early stop), which are kept apart from the curves; -1: none of them. */
enum { K_STEP, K_EPOCH, K_BEST, K_STOP };
static int row_kind(const char *s, size_t n) {
  static const char *const kinds[] = {"step", "epoch", "best", "stop"};
  for (int k = 0; k < 4; k++)
    if (n == strlen(kinds[k]) && strncmp(s, kinds[k], n) == 0) return k;
  return -1;
}


static void log_free(logdata *d) {
  pd_free(d->epoch_row);
  pd_free(d->v);
}

static int col(const logdata *d, const char *name) {
  for (int i = 0; i < d->ncols; i++)
    if (strcmp(d->cols[i], name) == 0) return i;
  return -1;
}

/* After the row just added was parsed: a best or stop row becomes the log's mark, not a point. */
static void take_mark(logdata *d, int kind) {
  if (kind != K_BEST && kind != K_STOP) return;
  const double *v = d->v + (d->nrows - 1) * MAX_COLS;
  int s = col(d, "step"), e = col(d, "epoch");
  double step = s >= 0 ? v[s] : NAN, epoch = e >= 0 ? v[e] : NAN;
  if (kind == K_BEST) d->best_step = step, d->best_epoch = epoch;
  else d->stop_step = step, d->stop_epoch = epoch;
  d->nrows--;
}

static pd_status add_row(logdata *d, bool epoch, double **vals) {
  if (d->nrows == d->cap) {
    int64_t cap = d->cap ? 2 * d->cap : 256;
    bool *k = pd_realloc(d->epoch_row, sizeof *k * (size_t)cap);
    if (!k) return PD_ENOMEM;
    d->epoch_row = k;
    double *v = pd_realloc(d->v, sizeof *v * (size_t)cap * MAX_COLS);
    if (!v) return PD_ENOMEM;
    d->v = v;
    d->cap = cap;
  }
  d->epoch_row[d->nrows] = epoch;
  *vals = d->v + d->nrows * MAX_COLS;
  for (int i = 0; i < MAX_COLS; i++) (*vals)[i] = NAN;
  d->nrows++;
  return PD_OK;
}

/* An error at line `line` of the log: "FILE:LINE: error: what", as the readers say theirs. */
static pd_status bad(pd_error *err, const char *path, int line, const char *what) {
  return pd_error_set(err, PD_EFORMAT, (pd_loc){path, line, 0}, "%s", what);
}

/* A cell that is not a number: its column and its text. */
static pd_status bad_cell(pd_error *err, const char *path, int line, const char *column,
                          const char *cell, size_t n) {
  return pd_error_set(err, PD_EFORMAT, (pd_loc){path, line, 0},
                      "a cell is not a number: column %s, value \"%.*s\"", column,
                      (int)(n > 60 ? 60 : n), cell);
}

/* A number, or NaN for an empty cell / null; false when the text is neither. */
static bool parse_num(const char *s, size_t n, double *out) {
  while (n && (*s == ' ')) s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\r')) n--;
  if (n == 0 || (n == 4 && memcmp(s, "null", 4) == 0)) {
    *out = NAN;
    return true;
  }
  char buf[64];
  if (n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  char *end;
  *out = strtod(buf, &end);
  return *end == 0;
}

static pd_status read_csv(const char *path, char *text, logdata *d, pd_error *err) {
  char *save = NULL, *line = strtok_r(text, "\n", &save);
  if (!line || strncmp(line, "kind,", 5) != 0)
    return bad(err, path, 1, "not a train log (its header must start with \"kind,\")");
  for (char *c = line + 5, *e; c; c = e ? e + 1 : NULL) {
    e = strchr(c, ',');
    size_t n = e ? (size_t)(e - c) : strcspn(c, "\r");
    if (d->ncols == MAX_COLS) return bad(err, path, 1, "more than 24 columns");
    snprintf(d->cols[d->ncols++], sizeof d->cols[0], "%.*s", (int)n, c);
  }
  int ln = 1;
  while ((line = strtok_r(NULL, "\n", &save))) {
    ln++;
    if (*line == '#' || *line == '\r') continue;
    if (strncmp(line, "kind,", 5) == 0) continue;  /* the header again (an appended log) */
    int kind = row_kind(line, strcspn(line, ","));
    if (kind < 0) return bad(err, path, ln, "a row's kind must be step, epoch, best or stop");
    double *vals;
    if (add_row(d, kind == K_EPOCH, &vals))
      return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
    char *c = strchr(line, ',') + 1;
    for (int i = 0; i < d->ncols; i++) {
      char *e = strchr(c, ',');
      size_t n = e ? (size_t)(e - c) : strlen(c);
      if (!parse_num(c, n, &vals[i])) return bad_cell(err, path, ln, d->cols[i], c, n);
      if (!e) {
        if (i + 1 < d->ncols) return bad(err, path, ln, "fewer cells than the header's columns");
        break;
      }
      c = e + 1;
    }
    take_mark(d, kind);
  }
  return PD_OK;
}

/* JSON lines as train_log.c writes them: flat objects of "key": number | null | "kind". */
static pd_status read_jsonl(const char *path, char *text, logdata *d, pd_error *err) {
  int ln = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    ln++;
    char *p = line;
    while (*p == ' ') p++;
    if (*p == 0 || *p == '\r') continue;
    if (*p != '{') return bad(err, path, ln, "not a JSON object");
    double *vals = NULL;
    if (add_row(d, false, &vals)) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
    p++;
    int kind = -1;
    for (;;) {
      while (*p == ' ' || *p == ',') p++;
      if (*p == '}') break;
      if (*p != '"') return bad(err, path, ln, "a key must be a string");
      char *k = ++p, *ke = strchr(k, '"');
      if (!ke) return bad(err, path, ln, "an unterminated key");
      p = ke + 1;
      while (*p == ' ') p++;
      if (*p++ != ':') return bad(err, path, ln, "a key without ':'");
      while (*p == ' ') p++;
      size_t kn = (size_t)(ke - k);
      if (*p == '"') { /* only "kind" has a string */
        char *ve = strchr(p + 1, '"');
        if (!ve) return bad(err, path, ln, "an unterminated string");
        int rk = row_kind(p + 1, (size_t)(ve - p - 1));
        if (rk < 0) return bad(err, path, ln, "a row's kind must be step, epoch, best or stop");
        if (kn == 4 && strncmp(k, "kind", 4) == 0) kind = rk;
        p = ve + 1;
        continue;
      }
      char *ve = p + strcspn(p, ",}");
      char name[72];
      snprintf(name, sizeof name, "%.*s", (int)kn, k);
      int c = col(d, name);
      if (c < 0) {
        if (d->ncols == MAX_COLS) return bad(err, path, ln, "more than 24 keys");
        snprintf(d->cols[c = d->ncols++], sizeof d->cols[0], "%s", name);
      }
      if (!parse_num(p, (size_t)(ve - p), &vals[c]))
        return bad_cell(err, path, ln, d->cols[c], p, (size_t)(ve - p));
      p = ve;
    }
    if (kind < 0) return bad(err, path, ln, "a row without \"kind\"");
    d->epoch_row[d->nrows - 1] = kind == K_EPOCH;
    take_mark(d, kind);
  }
  return PD_OK;
}

static pd_status read_log(const char *path, logdata *d, pd_error *err) {
  memset(d, 0, sizeof *d);
  d->best_step = d->best_epoch = d->stop_step = d->stop_epoch = NAN;
  char *text = NULL;
  size_t len = 0;
  pd_status st = pd_read_file(path, &text, &len, err);
  if (st) return st;
  /* A last line without its newline is still being written (plot runs beside a training that
   * writes the log): it is left out, as if not there yet. */
  while (len > 0 && text[len - 1] != '\n') text[--len] = 0;
  bool json = len > 0 && text[strspn(text, " \n\r")] == '{';
  st = len == 0 ? PD_OK : json ? read_jsonl(path, text, d, err) : read_csv(path, text, d, err);
  pd_free(text);
  if (!st && (d->nrows == 0 || col(d, "step") < 0 || col(d, "loss") < 0))
    st = pd_error_set(err, d->nrows ? PD_EFORMAT : PD_EINVAL, (pd_loc){0}, "%s",
                      d->nrows ? "not a train log: it has no step or loss column"
                               : "the log has no rows yet");
  if (st && err && !err->loc.file) err->loc.file = path;
  if (st) log_free(d);
  return st;
}

/* ---------------------------------------------------------------- drawing */

#ifdef PD_HAVE_CAIRO

typedef struct series {
  int col;            /* column of y */
  bool epochs;        /* epoch rows (else step rows) */
  unsigned rgb;
  double width;
  bool dots;
  const char *label;
  bool any_row;       /* rows of either kind that have a value (validation: epoch rows, or step
                         rows with valid_every_steps) */
} series;

/* A value on the y axis: its log10 with a logarithmic axis (NaN for one <= 0, not drawn). */
static double ty(double v, bool logy) { return !logy ? v : v > 0 ? log10(v) : NAN; }

/* Whether row r of the log has a point of series s. */
static bool has_point(const logdata *d, const series *s, int64_t r, int xs, bool logy) {
  const double *v = d->v + r * MAX_COLS;
  return (s->any_row || d->epoch_row[r] == s->epochs) && isfinite(ty(v[s->col], logy)) &&
         isfinite(v[xs]);
}

typedef struct panel {
  char title[96];
  series s[3];
  int ns;
} panel;

/* A "nice" step for about n ticks over span: 1, 2 or 5 times a power of ten. */
static double nice_step(double span, int n) {
  double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static void set_rgb(cairo_t *cr, unsigned rgb) {
  cairo_set_source_rgb(cr, ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0,
                       (rgb & 255) / 255.0);
}

/* A vertical dashed line at step x of the panel's frame, labelled at its top. */
static void draw_mark(cairo_t *cr, double x, double T, double B, double R, unsigned rgb,
                      const char *label) {
  set_rgb(cr, rgb);
  x = round(x);  /* 2 pixels wide on whole pixels: the mark's colour exactly */
  cairo_set_line_width(cr, 2);
  double dash[2] = {5, 4};
  cairo_set_dash(cr, dash, 2, 0);
  cairo_move_to(cr, x, T), cairo_line_to(cr, x, B), cairo_stroke(cr);
  cairo_set_dash(cr, NULL, 0, 0);
  cairo_set_font_size(cr, 10);
  cairo_text_extents_t te;
  cairo_text_extents(cr, label, &te);
  double lx = x + 4 + te.x_advance > R ? x - 4 - te.x_advance : x + 4;
  cairo_move_to(cr, lx, T + 12), cairo_show_text(cr, label);
}

/* One panel in the box (x0, y0, w, h); every panel shares the x range of the whole log. With
 * logy the y axis is logarithmic. The log's best and stop marks are dashed lines. */
static void draw_panel(cairo_t *cr, const logdata *d, const panel *pn, double x0, double y0,
                       double w, double h, bool logy) {
  int xs = col(d, "step");
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (int64_t r = 0; r < d->nrows; r++)
    if (isfinite(d->v[r * MAX_COLS + xs]))
      xmin = fmin(xmin, d->v[r * MAX_COLS + xs]), xmax = fmax(xmax, d->v[r * MAX_COLS + xs]);
  for (int k = 0; k < pn->ns; k++)
    for (int64_t r = 0; r < d->nrows; r++) {
      const double *v = d->v + r * MAX_COLS;
      if (!has_point(d, &pn->s[k], r, xs, logy)) continue;
      double y = ty(v[pn->s[k].col], logy);
      ymin = fmin(ymin, y), ymax = fmax(ymax, y);
    }
  if (!(xmin <= xmax) || !(ymin <= ymax)) return;
  if (xmax == xmin) xmin -= 1, xmax += 1;
  if (ymax == ymin) ymin -= fabs(ymin) * 0.1 + 0.5, ymax += fabs(ymax) * 0.1 + 0.5;
  double pad = (ymax - ymin) * 0.05;
  ymin -= pad, ymax += pad;
  double L = x0 + 70, R = x0 + w - 20, T = y0 + 34, B = y0 + h - 40;
  /* Frame, grid and ticks: on a logarithmic axis of a decade or more, at powers of ten (every
   * k-th decade); else at the values of a "nice" step (on a logarithmic axis, where they fall). */
  cairo_set_line_width(cr, 1);
  double lo = logy && ymax - ymin < 1 ? pow(10, ymin) : ymin;
  double hi = logy && ymax - ymin < 1 ? pow(10, ymax) : ymax;
  bool decades = logy && ymax - ymin >= 1;
  double ys = decades ? ceil((ymax - ymin) / 6) : nice_step(hi - lo, 5);
  double xst = nice_step(xmax - xmin, 8);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 11);
  char buf[64];
  for (double t = ceil(lo / ys) * ys; t <= hi; t += ys) {
    double yv = logy && !decades ? log10(t) : t;
    if (!isfinite(yv)) continue;
    double y = B - (yv - ymin) / (ymax - ymin) * (B - T);
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, L, y), cairo_line_to(cr, R, y), cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    snprintf(buf, sizeof buf, "%.4g", decades ? pow(10, t) : fabs(t) < ys * 1e-6 ? 0.0 : t);
    cairo_text_extents_t te;
    cairo_text_extents(cr, buf, &te);
    cairo_move_to(cr, L - 6 - te.width, y + 4), cairo_show_text(cr, buf);
  }
  for (double t = ceil(xmin / xst) * xst; t <= xmax; t += xst) {
    double x = L + (t - xmin) / (xmax - xmin) * (R - L);
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, x, T), cairo_line_to(cr, x, B), cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    snprintf(buf, sizeof buf, "%.6g", t);
    cairo_text_extents_t te;
    cairo_text_extents(cr, buf, &te);
    cairo_move_to(cr, x - te.width / 2, B + 15), cairo_show_text(cr, buf);
  }
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_rectangle(cr, L, T, R - L, B - T), cairo_stroke(cr);
  cairo_move_to(cr, (L + R) / 2 - 12, B + 32), cairo_show_text(cr, "step");
  cairo_set_font_size(cr, 14);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_move_to(cr, L, y0 + 22), cairo_show_text(cr, pn->title);
  if (logy) cairo_show_text(cr, " (log scale)");
  /* The curves, clipped to the frame. */
  cairo_save(cr);
  cairo_rectangle(cr, L, T, R - L, B - T);
  cairo_clip(cr);
  for (int k = 0; k < pn->ns; k++) {
    const series *s = &pn->s[k];
    set_rgb(cr, s->rgb);
    cairo_set_line_width(cr, s->width);
    bool started = false;
    for (int64_t r = 0; r < d->nrows; r++) {
      const double *v = d->v + r * MAX_COLS;
      if (!has_point(d, s, r, xs, logy)) continue;
      double x = L + (v[xs] - xmin) / (xmax - xmin) * (R - L);
      double y = B - (ty(v[s->col], logy) - ymin) / (ymax - ymin) * (B - T);
      if (started) cairo_line_to(cr, x, y);
      else cairo_move_to(cr, x, y);
      started = true;
    }
    cairo_stroke(cr);
    for (int64_t r = 0; s->dots && r < d->nrows; r++) {
      const double *v = d->v + r * MAX_COLS;
      if (!has_point(d, s, r, xs, logy)) continue;
      cairo_arc(cr, L + (v[xs] - xmin) / (xmax - xmin) * (R - L),
                B - (ty(v[s->col], logy) - ymin) / (ymax - ymin) * (B - T), 3, 0, 2 * M_PI);
      cairo_fill(cr);
    }
  }
  /* The best validation and the early stop, where the log marks them. */
  char label[64];
  if (isfinite(d->best_step)) {
    snprintf(label, sizeof label, "best (epoch %.0f)", d->best_epoch);
    draw_mark(cr, L + (d->best_step - xmin) / (xmax - xmin) * (R - L), T, B, R, PD_PLOT_BEST_RGB,
              label);
  }
  if (isfinite(d->stop_step)) {
    snprintf(label, sizeof label, "early stop (epoch %.0f)", d->stop_epoch);
    draw_mark(cr, L + (d->stop_step - xmin) / (xmax - xmin) * (R - L), T, B, R, PD_PLOT_STOP_RGB,
              label);
  }
  cairo_restore(cr);
  /* The legend: one row above the frame, ending at its right edge. */
  cairo_set_font_size(cr, 11);
  double widths[3], total = 0;
  for (int k = 0; k < pn->ns; k++) {
    cairo_text_extents_t te;
    cairo_text_extents(cr, pn->s[k].label, &te);
    widths[k] = 24 + te.x_advance + 16;
    total += widths[k];
  }
  double lx = R - total + 16, ly = y0 + 18;
  for (int k = 0; k < pn->ns; k++) {
    set_rgb(cr, pn->s[k].rgb);
    cairo_set_line_width(cr, 3);
    cairo_move_to(cr, lx, ly), cairo_line_to(cr, lx + 18, ly), cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    cairo_move_to(cr, lx + 24, ly + 4), cairo_show_text(cr, pn->s[k].label);
    lx += widths[k];
  }
}

static cairo_status_t to_buf(void *closure, const unsigned char *data, unsigned int n) {
  pd_buf *b = closure;
  pd_buf_append(b, data, n);
  return b->oom ? CAIRO_STATUS_NO_MEMORY : CAIRO_STATUS_SUCCESS;
}

bool pd_plot_available(void) { return true; }

pd_status pd_plot_log(const char *log_path, const char *png_path, int width, int height,
                      bool log_y, pd_error *err) {
  logdata d;
  pd_status st = read_log(log_path, &d, err);
  if (st) return st;
  panel panels[MAX_COLS];
  int np = 0;
  int lc = col(&d, "loss"), vl = col(&d, "valid_loss"), lr = col(&d, "lr");
  panel *p = &panels[np++];
  *p = (panel){.title = "loss"};
  p->s[p->ns++] = (series){lc, false, PD_PLOT_STEP_RGB, 1.2, false, "train (steps)", false};
  p->s[p->ns++] = (series){lc, true, PD_PLOT_TRAIN_RGB, 2.2, true, "train (epochs)", false};
  if (vl >= 0)
    p->s[p->ns++] = (series){vl, true, PD_PLOT_VALID_RGB, 2.2, true, "validation", true};
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t r = 0; lr >= 0 && r < d.nrows; r++)
    if (isfinite(d.v[r * MAX_COLS + lr]))
      lo = fmin(lo, d.v[r * MAX_COLS + lr]), hi = fmax(hi, d.v[r * MAX_COLS + lr]);
  if (lo < hi) {
    p = &panels[np++];
    *p = (panel){.title = "learning rate"};
    p->s[p->ns++] = (series){lr, false, PD_PLOT_TRAIN_RGB, 1.6, false, "learning rate", false};
  }
  for (int c = 0; c < d.ncols; c++)
    if (strncmp(d.cols[c], "valid_", 6) == 0 && c != vl) {
      p = &panels[np++];
      *p = (panel){.ns = 0};
      snprintf(p->title, sizeof p->title, "%s", d.cols[c] + 6);
      p->s[p->ns++] = (series){c, true, PD_PLOT_VALID_RGB, 2.2, true, "validation", true};
    }
  int W = width > 0 ? width : 900, H = height > 0 ? height : 280 * np;
  cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
  cairo_t *cr = cairo_create(sf);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  for (int i = 0; i < np; i++)
    draw_panel(cr, &d, &panels[i], 0, (double)H * i / np, W, (double)H / np,
               log_y && i == 0);
  cairo_destroy(cr);
  pd_buf b;
  pd_buf_init(&b);
  cairo_status_t cs = cairo_surface_status(sf);
  if (cs == CAIRO_STATUS_SUCCESS) cs = cairo_surface_write_to_png_stream(sf, to_buf, &b);
  cairo_surface_destroy(sf);
  if (b.oom || cs == CAIRO_STATUS_NO_MEMORY)
    st = pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  else if (cs != CAIRO_STATUS_SUCCESS)
    st = pd_error_set(err, PD_EIO, (pd_loc){0}, "cannot draw %s: %s", png_path,
                      cairo_status_to_string(cs));
  else st = pd_write_file_atomic(png_path, b.data, b.len, err);
  pd_buf_free(&b);
  log_free(&d);
  return st;
}

#else /* no cairo */

bool pd_plot_available(void) { return false; }

pd_status pd_plot_log(const char *log_path, const char *png_path, int width, int height,
                      bool log_y, pd_error *err) {
  (void)png_path, (void)width, (void)height, (void)log_y;
  logdata d;
  pd_status st = read_log(log_path, &d, err);  /* a bad log is still reported as such */
  if (st) return st;
  log_free(&d);
  return pd_error_set(err, PD_EUNSUPPORTED, (pd_loc){0},
                      "this pdlang was built without cairo, so it cannot draw PNGs (install "
                      "libcairo2-dev and configure again)");
}

#endif
