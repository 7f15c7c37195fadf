/* image_prep.c -- a model's image preprocessing, the file MODEL.preprocess that save writes
 * beside a model whose input an images(...) reader fed, and that `pdlang exec` and the C library
 * read to turn image files into that input (vm/reader/reader.h). The format, a line each:
 *     # a comment
 *     input images
 *     shape 3 32 32
 *     mean 0.5 0.5 0.5
 *     std 0.25 0.25 0.25
 * (mean and std one number per channel). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm/reader/reader.h"

static const pd_loc nowhere = {0};

char *pd_model_side_path(const char *path, const char *ext) {
  size_t n = strlen(path);
  static const char *const exts[] = {".pdmodel", ".pdiparams"};
  for (size_t i = 0; i < PD_ARRAY_LEN(exts); i++) {
    size_t e = strlen(exts[i]);
    if (n > e && strcmp(path + n - e, exts[i]) == 0) n -= e;
  }
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "%.*s%s", (int)n, path, ext);
  return b.oom ? (pd_buf_free(&b), NULL) : pd_buf_take(&b);
}

void pd_image_prep_format(const pd_image_prep *p, pd_buf *b) {
  const pd_image_options *o = &p->o;
  pd_buf_printf(b, "# pdlang: how an image file becomes this model's input (as the images "
                "reader read it)\ninput %s\nshape %d %d %d\nmean", p->input, o->channels,
                o->height, o->width);
  for (int k = 0; k < 2; k++) {
    pd_buf_puts(b, k ? "\nstd" : "");
    for (int c = 0; c < o->channels; c++) {
      pd_buf_puts(b, " ");
      pd_buf_put_shortest(b, k ? o->std[c] : o->mean[c], false);
    }
  }
  pd_buf_puts(b, "\n");
}

pd_status pd_image_prep_save(const char *path, const pd_image_prep *p, pd_error *err) {
  pd_buf b;
  pd_buf_init(&b);
  pd_image_prep_format(p, &b);
  pd_status st = b.oom ? pd_error_set(err, PD_ENOMEM, nowhere, "out of memory")
                       : pd_write_file_atomic(path, b.data, b.len, err);
  pd_buf_free(&b);
  return st;
}

/* n numbers after the key on line s into v (integers when whole); false when there are not
 * exactly n, separated by blanks. */
static bool numbers(const char *s, int n, double *v, bool whole) {
  char *end;
  for (int i = 0; i < n; i++) {
    if (*s != ' ' && *s != '\t') return false;
    while (*s == ' ' || *s == '\t') s++;
    if (whole) {
      long k = strtol(s, &end, 10);
      v[i] = (double)k;
      if (end == s || k < 0 || k > 1000000) return false;
    } else {
      v[i] = strtod(s, &end);
      if (end == s) return false;
    }
    s = end;
  }
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  return *s == 0;
}

/* The line's key: "input", "shape", "mean" or "std" followed by a blank; -1 if none. */
static int key_of(const char *line) {
  static const char *const keys[] = {"input", "shape", "mean", "std"};
  for (int k = 0; k < 4; k++) {
    size_t n = strlen(keys[k]);
    if (!strncmp(line, keys[k], n) && (line[n] == ' ' || line[n] == '\t')) return k;
  }
  return -1;
}

pd_status pd_image_prep_parse(const char *text, size_t len, const char *path, pd_image_prep *p,
                              pd_error *err) {
  static const char *const keys[] = {"input", "shape", "mean", "std"};
  static const char expected[] =
      "expected the lines input NAME, shape C H W (C 1, 3 or 4; H and W 1 to 4096), then mean "
      "and std with C numbers each (std positive), each once";
  memset(p, 0, sizeof *p);
  const char *nul = memchr(text, 0, len);
  if (nul) {
    int ln = 1;
    for (const char *c = text; c < nul; c++) ln += *c == '\n';
    return pd_error_set(err, PD_EFORMAT, (pd_loc){path, ln, 0},
                        "not a preprocessing file: a NUL byte; %s", expected);
  }
  char *copy = pd_malloc(len + 1);
  if (!copy) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading %s", path);
  memcpy(copy, text, len);
  copy[len] = 0;
  bool have[4] = {false, false, false, false};
  pd_status st = PD_OK;
  int ln = 0;
  for (char *line = copy, *next; line && !st; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = 0;
    if (!next && !*line) break;   /* after the last newline */
    ln++;
    if (*line == '#' || *line == '\r' || *line == 0) continue;
    int k = key_of(line);
    double v[4];
    const char *why = NULL;
    if (k < 0) why = "an unknown line";
    else if (have[k]) why = k == 0 ? "a second input line" : k == 1 ? "a second shape line"
                          : k == 2 ? "a second mean line" : "a second std line";
    else if (k >= 2 && !have[1]) why = "mean and std come after shape";
    else if (k == 0) {
      const char *name = line + 6;
      while (*name == ' ' || *name == '\t') name++;
      size_t n = strcspn(name, " \t\r");
      const char *rest = name + n;
      while (*rest == ' ' || *rest == '\t' || *rest == '\r') rest++;
      if (n == 0 || n >= sizeof p->input || *rest) why = "input needs one name (127 bytes at most)";
      else memcpy(p->input, name, n), p->input[n] = 0;
    } else if (k == 1) {
      if (!numbers(line + 5, 3, v, true) || !(v[0] == 1 || v[0] == 3 || v[0] == 4) ||
          v[1] < 1 || v[1] > 4096 || v[2] < 1 || v[2] > 4096)
        why = "shape needs three integers: channels 1, 3 or 4, height and width 1 to 4096";
      else p->o.channels = (int)v[0], p->o.height = (int)v[1], p->o.width = (int)v[2];
    } else {
      double *to = k == 2 ? p->o.mean : p->o.std;
      if (!numbers(line + strlen(keys[k]), p->o.channels, v, false))
        why = k == 2 ? "mean needs one number per channel" : "std needs one number per channel";
      for (int c = 0; !why && c < p->o.channels; c++)
        /* Each line alone here (the pair is checked at the end). */
        if (!(k == 2 ? isfinite(v[c]) : pd_image_norm_ok(0, v[c])))
          why = k == 2 ? "a mean must be a finite number"
                       : "a std must be a positive number, with 1 / std finite in float32";
      if (!why) memcpy(to, v, sizeof *v * (size_t)p->o.channels);
    }
    if (why)
      st = pd_error_set(err, PD_EFORMAT, (pd_loc){path, ln, 0},
                        "not a preprocessing file: %s; %s", why, expected);
    if (!st && k >= 0) have[k] = true;
  }
  pd_free(copy);
  if (!st && !(have[0] && have[1] && have[2] && have[3]))
    st = pd_error_set(err, PD_EFORMAT, (pd_loc){path, 0, 0},
                      "a preprocessing file needs the lines input, shape, mean and std");
  for (int c = 0; !st && c < p->o.channels; c++)
    if (!pd_image_norm_ok(p->o.mean[c], p->o.std[c]))
      st = pd_error_set(err, PD_EFORMAT, (pd_loc){path, 0, 0},
                        "channel %d: mean %g and std %g make values (0..1 - mean) / std past "
                        "float32's range", c, p->o.mean[c], p->o.std[c]);
  if (st) memset(p, 0, sizeof *p);
  return st;
}

pd_status pd_image_prep_load(const char *path, pd_image_prep *p, pd_error *err) {
  memset(p, 0, sizeof *p);
  if (access(path, F_OK) != 0)
    return pd_error_set(err, PD_ENOTFOUND, nowhere, "%s: no such file", path);
  char *text = NULL;
  size_t len;
  pd_status st = pd_read_file(path, &text, &len, err);
  if (st) return st;
  st = pd_image_prep_parse(text, len, path, p, err);
  pd_free(text);
  return st;
}
