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

pd_status pd_image_prep_save(const char *path, const pd_image_prep *p, pd_error *err) {
  const pd_image_options *o = &p->o;
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "# pdlang: how an image file becomes this model's input (as the images "
                "reader read it)\ninput %s\nshape %d %d %d\nmean", p->input, o->channels,
                o->height, o->width);
  for (int k = 0; k < 2; k++) {
    pd_buf_puts(&b, k ? "\nstd" : "");
    for (int c = 0; c < o->channels; c++) {
      pd_buf_puts(&b, " ");
      pd_buf_put_shortest(&b, k ? o->std[c] : o->mean[c], false);
    }
  }
  pd_buf_puts(&b, "\n");
  pd_status st = b.oom ? pd_error_set(err, PD_ENOMEM, nowhere, "out of memory")
                       : pd_write_file_atomic(path, b.data, b.len, err);
  pd_buf_free(&b);
  return st;
}

/* n numbers after the key on line s into v; false when there are not exactly n. */
static bool numbers(const char *s, int n, double *v) {
  char *end;
  for (int i = 0; i < n; i++) {
    v[i] = strtod(s, &end);
    if (end == s) return false;
    s = end;
  }
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  return *s == 0;
}

pd_status pd_image_prep_load(const char *path, pd_image_prep *p, pd_error *err) {
  memset(p, 0, sizeof *p);
  if (access(path, F_OK) != 0)
    return pd_error_set(err, PD_ENOTFOUND, nowhere, "%s: no such file", path);
  char *text = NULL;
  size_t len;
  pd_status st = pd_read_file(path, &text, &len, err);
  if (st) return st;
  bool have[4] = {false, false, false, false};
  int ln = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line && !st;
       line = strtok_r(NULL, "\n", &save)) {
    ln++;
    double v[4];
    if (*line == '#' || *line == '\r' || *line == 0) continue;
    if (!strncmp(line, "input ", 6) && strlen(line + 6) < sizeof p->input &&
        line[6 + strcspn(line + 6, " \t\r")] == 0 && line[6]) {
      snprintf(p->input, sizeof p->input, "%s", line + 6);
      have[0] = true;
    } else if (!strncmp(line, "shape ", 6) && numbers(line + 6, 3, v) &&
               (v[0] == 1 || v[0] == 3 || v[0] == 4) && v[1] >= 1 && v[1] <= 4096 &&
               v[2] >= 1 && v[2] <= 4096) {
      p->o.channels = (int)v[0];
      p->o.height = (int)v[1];
      p->o.width = (int)v[2];
      have[1] = true;
    } else if (have[1] && !strncmp(line, "mean ", 5) && numbers(line + 5, p->o.channels, v)) {
      memcpy(p->o.mean, v, sizeof *v * (size_t)p->o.channels);
      have[2] = true;
    } else if (have[1] && !strncmp(line, "std ", 4) && numbers(line + 4, p->o.channels, v)) {
      memcpy(p->o.std, v, sizeof *v * (size_t)p->o.channels);
      have[3] = true;
    } else {
      st = pd_error_set(err, PD_EFORMAT, (pd_loc){path, ln, 0},
                        "not a preprocessing file: expected input NAME, shape C H W (C 1, 3 or "
                        "4), then mean and std with C numbers each");
    }
  }
  pd_free(text);
  if (!st && !(have[0] && have[1] && have[2] && have[3]))
    st = pd_error_set(err, PD_EFORMAT, (pd_loc){path, 0, 0},
                      "a preprocessing file needs the lines input, shape, mean and std");
  return st;
}
