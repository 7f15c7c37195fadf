/* reader_text.c -- a text file as a data set for character-level language models: the file's
 * bytes, cut into windows of `length` characters (one window after another, no overlap); each
 * sample is a window "x" and the same window shifted by one character "y" (the next character
 * of each position), both int64 [length] holding byte values 0..255. */
#include "config.h"

#include <string.h>

#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

pd_status pd_dataset_text(const char *path, int64_t length, pd_dataset **out, pd_error *err) {
  *out = NULL;
  if (length < 1)
    return pd_error_set(err, PD_EINVAL, (pd_loc){0}, "text: length must be at least 1, not %lld",
                        (long long)length);
  char *text = NULL;
  size_t len = 0;
  pd_status st = pd_reader_read_all(path, &text, &len, err);   /* gzipped or not */
  if (st) return st;
  int64_t n = len > 1 ? (int64_t)(len - 1) / length : 0;
  if (n < 1) {
    pd_free(text);
    return pd_error_set(err, PD_EINVAL, (pd_loc){0},
                        "text: %s has %zu bytes, too few for one sample of %lld characters",
                        path, len, (long long)length);
  }
  pd_dataset *d = NULL;
  void *xs = NULL, *ys = NULL;
  if (!(st = pd_dataset_new(n, &d, err)) &&
      !(st = pd_dataset_add_field(d, "x", PD_INT64, 1, &length, &xs, err)) &&
      !(st = pd_dataset_add_field(d, "y", PD_INT64, 1, &length, &ys, err))) {
    int64_t *x = xs, *y = ys;
    const unsigned char *t = (const unsigned char *)text;
    for (int64_t i = 0; i < n * length; i++) {
      x[i] = t[i];
      y[i] = t[i + 1];
    }
    *out = d;
    d = NULL;
  }
  pd_dataset_free(d);
  pd_free(text);
  return st;
}
