/* lines.c -- a host program that serves a saved sequence model through pdlang's C library
 * (pdlang.h): loads a line classifier (a model whose one input is a batch of sequences of
 * bytes, `data("x", [-1, 1], int64, lod_level = 1)`, and whose one output holds a row of class
 * scores per sequence, as examples/lstm_classify.pd builds), classifies every line of the
 * files given, the lines of FILE_k being of class k as pdlang's lines(...) reader labels them,
 * and prints each prediction and the accuracy.
 *
 *     usage: lines [-b BATCH] MODEL.pdmodel FILE0 [FILE1 ...]
 *
 * A line is its bytes without the '\n' (and a '\r' before it); a blank line (empty, or spaces
 * and tabs only) is skipped, as the reader skips it. The lines go BATCH at a time (default 64)
 * into pd_state_feed_sequences: one tensor of all their bytes, one row per byte, and the length
 * of each line. Build it with the Makefile beside it (pkg-config finds the installed library):
 * `make lines`. */
#define _POSIX_C_SOURCE 200809L   /* getline */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pdlang.h>

typedef struct line {
  char *text;
  int64_t len;
  int label;
} line;

/* Append every non-blank line of path to *lines; -1 when the file cannot be read. */
static int read_lines(const char *path, int label, line **lines, long *n, long *cap) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "lines: cannot open %s\n", path);
    return -1;
  }
  char *buf = NULL;
  size_t bcap = 0;
  long len;
  int rc = 0;
  while ((len = (long)getline(&buf, &bcap, f)) > 0) {
    if (buf[len - 1] == '\n') len--;
    if (len > 0 && buf[len - 1] == '\r') len--;
    long k = 0;
    while (k < len && (buf[k] == ' ' || buf[k] == '\t')) k++;
    if (k == len) continue;   /* blank */
    if (*n == *cap) {
      *cap = *cap ? 2 * *cap : 256;
      line *grown = realloc(*lines, (size_t)*cap * sizeof *grown);
      if (!grown) {
        rc = -1;
        break;
      }
      *lines = grown;
    }
    char *text = malloc((size_t)len);
    if (!text) {
      rc = -1;
      break;
    }
    memcpy(text, buf, (size_t)len);
    (*lines)[(*n)++] = (line){text, len, label};
  }
  if (rc) fprintf(stderr, "lines: out of memory reading %s\n", path);
  free(buf);
  fclose(f);
  return rc;
}

int main(int argc, char **argv) {
  long batch = 64;
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "-b") == 0) {
    batch = atol(argv[2]);
    first = 3;
  }
  if (argc - first < 2 || batch < 1) {
    fprintf(stderr, "usage: lines [-b BATCH] MODEL.pdmodel FILE0 [FILE1 ...]\n");
    return 2;
  }
  const char *model = argv[first];
  line *lines = NULL;
  long n = 0, cap = 0;
  int rc = 1;
  pd_state *st = NULL;
  int64_t *ids = NULL, *lengths = NULL;
  for (int k = first + 1; k < argc; k++)
    if (read_lines(argv[k], k - first - 1, &lines, &n, &cap)) goto out;
  if (n == 0) {
    fprintf(stderr, "lines: the files have no line that is not blank\n");
    goto out;
  }
  int nclass = argc - first - 1;

  /* The model: one sequence input, one output of scores. */
  if (pd_state_new(&st) != PD_RESULT_OK) {
    fprintf(stderr, "lines: out of memory\n");
    goto out;
  }
  int nin = 0, nout = 0;
  const char *const *inputs, *const *outputs;
  if (pd_state_load_model(st, model) || pd_state_inputs(st, &nin, &inputs) ||
      pd_state_outputs(st, &nout, &outputs))
    goto fail;
  /* A model saved for PaddlePaddle takes a batch of sequences x as x padded and x_lengths,
   * which pd_state_feed_sequences fills together from the rows and lengths. */
  char lengths_name[256] = "";
  if (nin == 2) snprintf(lengths_name, sizeof lengths_name, "%s_lengths", inputs[0]);
  if ((nin != 1 && !(nin == 2 && strcmp(inputs[1], lengths_name) == 0)) || nout != 1) {
    fprintf(stderr, "lines: %s has %d inputs and %d outputs; this program wants one each\n",
            model, nin, nout);
    goto out;
  }
  long right = 0;
  for (long at = 0; at < n; at += batch) {
    long m = n - at < batch ? n - at : batch;
    int64_t total = 0;
    for (long i = 0; i < m; i++) total += lines[at + i].len;
    free(ids);
    free(lengths);
    ids = malloc((size_t)total * sizeof *ids);
    lengths = malloc((size_t)m * sizeof *lengths);
    if (!ids || !lengths) {
      fprintf(stderr, "lines: out of memory\n");
      goto out;
    }
    int64_t *p = ids;   /* every byte a row [1] of the batch, line after line */
    for (long i = 0; i < m; i++) {
      lengths[i] = lines[at + i].len;
      for (int64_t j = 0; j < lines[at + i].len; j++) *p++ = (unsigned char)lines[at + i].text[j];
    }
    int64_t dims[2] = {total, 1};
    pd_tensor_info out;
    if (pd_state_feed_sequences(st, inputs[0], PD_DTYPE_INT64, 2, dims, ids, m, lengths) ||
        pd_state_run(st) || pd_state_fetch(st, outputs[0], &out))
      goto fail;
    if (out.dtype != PD_DTYPE_FLOAT32 || out.ndims != 2 || out.dims[0] != m) {
      fprintf(stderr, "lines: expected %ld rows of float32 scores from %s\n", m, outputs[0]);
      goto out;
    }
    const float *s = out.data;   /* valid until the next run: read it now */
    int64_t k = out.dims[1];
    for (long i = 0; i < m; i++) {
      int64_t best = 0;
      for (int64_t c = 1; c < k; c++)
        if (s[i * k + c] > s[i * k + best]) best = c;
      const line *l = &lines[at + i];
      right += best == l->label;
      printf("%5ld: predicted %lld  true %d%s\n", at + i, (long long)best, l->label,
             best == l->label ? "" : "  <- wrong");
    }
  }
  printf("accuracy: %.4f (%ld of %ld lines, %d files)\n", (double)right / (double)n, right, n,
         nclass);
  rc = 0;
  goto out;
fail:
  fputs(pd_state_error(st)->text, stderr);   /* the library prints nothing itself */
out:
  pd_state_free(st);
  for (long i = 0; i < n; i++) free(lines[i].text);
  free(lines);
  free(ids);
  free(lengths);
  return rc;
}
