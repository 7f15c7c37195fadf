/* reader_lines.c -- text files as a data set of variable-length sequences: every line of every
 * file is a sample, "x" the line's bytes as a sequence field (one int64 row per character) and
 * "label" the index of its file, with a deterministic train/test split (every k-th line of each
 * file is a test line). See pd_dataset_lines in vm/reader/reader.h for the rules. */
#include "config.h"

#include <string.h>

#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

static const pd_loc nowhere = {0};

/* One pass over a file's text. Returns the number of lines the split selects; *nkept = the
 * lines the length filter keeps, before the split. With lengths, writes each selected line's length; with x, its bytes
 * (advancing *x). */
static int64_t scan(const unsigned char *t, size_t len, const pd_lines_options *o,
                    int64_t *nkept, int64_t *lengths, int64_t **x) {
  int64_t k = 0, kept = 0, n = 0;
  size_t i = 0;
  while (i < len) {
    size_t s = i;
    while (i < len && t[i] != '\n') i++;
    size_t e = i;   /* the line is [s, e) */
    if (i < len) i++;   /* past the '\n' */
    if (e > s && t[e - 1] == '\r') e--;
    bool blank = true;
    for (size_t j = s; blank && j < e; j++) blank = t[j] == ' ' || t[j] == '\t';
    if (blank) continue;
    k++;   /* numbered before the length filter: the split does not depend on it */
    if ((int64_t)(e - s) < o->min_length) continue;
    if (o->max_length > 0 && (int64_t)(e - s) > o->max_length) e = s + (size_t)o->max_length;
    kept++;
    bool test = k % o->test_every == 0;
    if ((o->split == PD_LINES_TRAIN && test) || (o->split == PD_LINES_TEST && !test)) continue;
    if (lengths) lengths[n] = (int64_t)(e - s);
    if (x)
      for (size_t j = s; j < e; j++) *(*x)++ = t[j];
    n++;
  }
  *nkept = kept;
  return n;
}

static const char *split_name(pd_lines_split s) {
  return s == PD_LINES_TRAIN ? "train" : s == PD_LINES_TEST ? "test" : "whole";
}

pd_status pd_dataset_lines(int npaths, const char *const *paths, const pd_lines_options *o,
                           pd_dataset **out, pd_error *err) {
  *out = NULL;
  if (npaths < 1 || !paths)
    return pd_error_set(err, PD_EINVAL, nowhere, "lines: needs at least one file");
  if (o->min_length < 1)
    return pd_error_set(err, PD_EINVAL, nowhere, "lines: min_length must be at least 1, not %lld",
                        (long long)o->min_length);
  if (o->max_length < 0 || (o->max_length > 0 && o->max_length < o->min_length))
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "lines: max_length must be at least min_length (%lld), not %lld",
                        (long long)o->min_length, (long long)o->max_length);
  if (o->split != PD_LINES_ALL && o->split != PD_LINES_TRAIN && o->split != PD_LINES_TEST)
    return pd_error_set(err, PD_EINVAL, nowhere, "lines: %d is not a split", (int)o->split);
  if (o->pad_to < 0)
    return pd_error_set(err, PD_EINVAL, nowhere, "lines: pad_to must be 0 or more, not %lld",
                        (long long)o->pad_to);
  if (o->split != PD_LINES_ALL && o->test_every < 2)
    return pd_error_set(err, PD_EINVAL, nowhere, "lines: test_every must be at least 2, not %lld",
                        (long long)o->test_every);
  pd_lines_options opt = *o;
  if (opt.split == PD_LINES_ALL) opt.test_every = 2;   /* unused, but keeps k % test_every sane */

  char **text = pd_calloc((size_t)npaths, sizeof *text);
  size_t *len = pd_calloc((size_t)npaths, sizeof *len);
  int64_t *count = pd_calloc((size_t)npaths, sizeof *count);
  int64_t *lengths = NULL;
  pd_dataset *d = NULL;
  pd_status st = PD_OK;
  if (!text || !len || !count) {
    st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
    goto out;
  }
  /* Pass 1: read every file, count its lines. */
  int64_t n = 0;
  for (int f = 0; f < npaths; f++) {
    if ((st = pd_reader_read_all(paths[f], &text[f], &len[f], err))) goto out;
    int64_t kept;
    count[f] = scan((const unsigned char *)text[f], len[f], &opt, &kept, NULL, NULL);
    if (kept == 0) {
      if (opt.min_length > 1)
        st = pd_error_set(err, PD_EFORMAT, nowhere,
                          "lines: %s has no line of at least %lld characters", paths[f],
                          (long long)opt.min_length);
      else
        st = pd_error_set(err, PD_EFORMAT, nowhere, "lines: %s has no line that is not blank",
                          paths[f]);
      goto out;
    }
    n += count[f];
  }
  if (n == 0) {
    st = pd_error_set(err, PD_EFORMAT, nowhere,
                      "lines: the %s split has no line (every %lld%s line of each file is a "
                      "test line)",
                      split_name(opt.split), (long long)opt.test_every,
                      opt.test_every == 2 ? "nd" : opt.test_every == 3 ? "rd" : "th");
    goto out;
  }
  /* Pass 2: the lengths, then the rows and labels. */
  if (!(lengths = pd_malloc((size_t)n * sizeof *lengths))) {
    st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory for %lld lines", (long long)n);
    goto out;
  }
  int64_t at = 0, kept;
  for (int f = 0; f < npaths; f++)
    at += scan((const unsigned char *)text[f], len[f], &opt, &kept, lengths + at, NULL);
  void *xs, *ls, *ms = NULL;
  int64_t one = 1, L = opt.pad_to;
  if ((st = pd_dataset_new(n, &d, err)) ||
      (st = L ? pd_dataset_add_field(d, "x", PD_INT64, 1, &L, &xs, err)
              : pd_dataset_add_seq_field(d, "x", PD_INT64, 1, &one, lengths, &xs, err)) ||
      (L && (st = pd_dataset_add_field(d, "mask", PD_FP32, 1, &L, &ms, err))) ||
      (st = pd_dataset_add_field(d, "label", PD_INT64, 1, &one, &ls, err)))
    goto out;
  int64_t *x = xs, *label = ls;
  if (L) { /* each line into a row of the sequences' storage, then padded or cut to L */
    int64_t rows = 0;
    for (int64_t i = 0; i < n; i++) rows += lengths[i];
    if (!(x = pd_malloc((size_t)(rows ? rows : 1) * sizeof *x))) {
      st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory for %lld characters",
                        (long long)rows);
      goto out;
    }
  }
  int64_t *seq = x;
  for (int f = 0; f < npaths; f++) {
    scan((const unsigned char *)text[f], len[f], &opt, &kept, NULL, &x);
    for (int64_t i = 0; i < count[f]; i++) *label++ = f;
  }
  if (L) { /* the fields are zero-filled: copy the bytes and set the mask */
    int64_t *px = xs;
    float *pm = ms;
    const int64_t *from = seq;
    for (int64_t i = 0; i < n; i++) {
      int64_t k = lengths[i] < L ? lengths[i] : L;
      memcpy(px + i * L, from, (size_t)k * sizeof *px);
      for (int64_t j = 0; j < k; j++) pm[i * L + j] = 1.0f;
      from += lengths[i];
    }
    pd_free(seq);
  }
  *out = d;
  d = NULL;
out:
  pd_dataset_free(d);
  for (int f = 0; text && f < npaths; f++) pd_free(text[f]);
  pd_free(text);
  pd_free(len);
  pd_free(count);
  pd_free(lengths);
  return st;
}
