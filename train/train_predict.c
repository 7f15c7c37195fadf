/* train_predict.c -- predict(y, reader = R, out = "preds.npy" | "preds.csv", batch = 256): the
 * target y computed in test mode for every sample of a reader, in the reader's order, written
 * one row per sample: a .npy [N, ...] (a sequence output: its steps, [total steps, ...], and
 * PATH.lengths.npy, int64 [N], each sample's number of steps), or a CSV file (a header, then
 * "sample" and the row's values; a sequence output has a line per step, "sample,step,..."),
 * with a progress bar or lines on the progress stream and a summary line on the output. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/run_int.h"
#include "train/train.h"
#include "train/train_int.h"
#include "vm/run/comm.h"

typedef struct predict {
  const pd_action *a;
  const char *name;         /* the target as the script wrote it */
  bool started, seq;        /* after the first batch: whether y is a batch of sequences */
  pd_dtype dtype;
  int nd;                   /* a row's shape: y's dims after the first */
  int64_t dims[PD_TENSOR_MAX_DIMS];
  size_t row_bytes;
  pd_buf data;              /* every row's values, in y's dtype */
  pd_buf lengths;           /* a sequence output: each sample's steps (int64) */
  int64_t samples, rows;
  /* progress */
  FILE *pg;
  bool bar;
  int64_t batch, batches;
  double t0, last_draw;
} predict;

static void show_progress(predict *p) {
  if (!p->pg) return;
  double t = pd_train_now();
  bool last = p->batch == p->batches;
  if (p->bar) {
    if (!last && t - p->last_draw < 0.1) return;
    int w = 24, fill = p->batches ? (int)(w * p->batch / p->batches) : w;
    char bar[32];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[w] = 0;
    fprintf(p->pg, "\rpredict [%s] %lld/%lld batches, %lld samples\033[K%s", bar,
            (long long)p->batch, (long long)p->batches, (long long)p->samples, last ? "\n" : "");
  } else {
    if (!last && t - p->last_draw < 1.0) return;
    fprintf(p->pg, "predict: batch %lld/%lld, %lld samples\n", (long long)p->batch,
            (long long)p->batches, (long long)p->samples);
  }
  p->last_draw = t;
  fflush(p->pg);
}

/* One batch of y: its rows appended (a sequence output: its sequences and their lengths). */
static pd_status take_batch(void *ctx, const pd_tensor *vals, int64_t rows, pd_error *err) {
  predict *p = ctx;
  const pd_tensor *t = &vals[0];
  pd_loc loc = pd_train_arg_loc(p->a, 0);
  char sh[96];
  bool seq = t->nlod >= 1 && t->lod[0].n == rows + 1 && t->ndims >= 1 &&
             t->lod[0].offsets[rows] == t->dims[0];
  if (t->ndims < 1 || (!seq && t->dims[0] != rows))
    return pd_error_set(err, PD_EINVAL, loc,
                        "predict: '%s' is %s for a batch of %lld samples; it must have a row "
                        "per sample (its first dimension the batch), or be a batch of "
                        "sequences, one per sample",
                        p->name, pd_ctx_shape_str(t, sh, sizeof sh), (long long)rows);
  if (!p->started) {
    p->started = true;
    p->seq = seq;
    p->dtype = t->dtype;
    p->nd = t->ndims - 1;
    memcpy(p->dims, t->dims + 1, sizeof *p->dims * (size_t)p->nd);
    int64_t per = 1;
    for (int k = 0; k < p->nd; k++) per *= p->dims[k];
    p->row_bytes = (size_t)per * pd_dtype_size(t->dtype);
  } else {
    bool same = seq == p->seq && t->dtype == p->dtype && t->ndims - 1 == p->nd;
    for (int k = 0; same && k < p->nd; k++) same = t->dims[k + 1] == p->dims[k];
    if (!same) {
      char was[96];
      return pd_error_set(err, PD_EINVAL, loc,
                          "predict: '%s' is %s %s%s in this batch but was %s %s%s in the first; "
                          "every sample's row must have the same dtype and shape",
                          p->name, pd_dtype_name(t->dtype), pd_ctx_shape_str(t, sh, sizeof sh),
                          seq ? " (sequences)" : "", pd_dtype_name(p->dtype),
                          pd_dims_str(p->nd, p->dims, was, sizeof was),
                          p->seq ? " per step (sequences)" : " per sample");
    }
  }
  if (t->place != PD_K_HOST)
    return pd_error_set(err, PD_EINVAL, loc, "predict: '%s' is not in host memory", p->name);
  pd_buf_append(&p->data, pd_tensor_data(t), (size_t)t->dims[0] * p->row_bytes);
  for (int64_t i = 0; seq && i < rows; i++) {
    int64_t len = t->lod[0].offsets[i + 1] - t->lod[0].offsets[i];
    pd_buf_append(&p->lengths, &len, sizeof len);
  }
  if (p->data.oom || p->lengths.oom)
    return pd_error_set(err, PD_ENOMEM, loc, "predict: out of memory for %lld samples",
                        (long long)(p->samples + rows));
  p->samples += rows;
  p->rows += t->dims[0];
  p->batch++;
  show_progress(p);
  return PD_OK;
}

/* path as a .npy of dtype [n, dims...] holding data. */
static pd_status write_npy(const char *path, pd_dtype dtype, int64_t n, int nd,
                           const int64_t *dims, const void *data, pd_error *err) {
  pd_tensor t;
  pd_tensor_init(&t);
  int64_t all[PD_TENSOR_MAX_DIMS] = {n};
  if (nd) memcpy(all + 1, dims, sizeof *dims * (size_t)nd);
  pd_status st = pd_tensor_resize(&t, dtype, nd + 1, all);
  if (st) {
    pd_tensor_release(&t);
    return pd_error_set(err, st, (pd_loc){0}, "%s: out of memory", path);
  }
  size_t bytes = (size_t)pd_tensor_numel(&t) * pd_dtype_size(dtype);
  if (bytes) memcpy(pd_tensor_data(&t), data, bytes);
  st = pd_npy_save(path, &t, err);
  pd_tensor_release(&t);
  return st;
}

static void csv_value(pd_buf *b, pd_dtype dt, const unsigned char *at) {
  pd_buf_puts(b, ",");
  if (dt == PD_FP32) {
    float v;
    memcpy(&v, at, sizeof v);
    pd_buf_put_shortest(b, v, true);
  } else if (dt == PD_FP64) {
    double v;
    memcpy(&v, at, sizeof v);
    pd_buf_put_shortest(b, v, false);
  } else if (dt == PD_INT64) {
    int64_t v;
    memcpy(&v, at, sizeof v);
    pd_buf_printf(b, "%lld", (long long)v);
  } else if (dt == PD_INT32) {
    int32_t v;
    memcpy(&v, at, sizeof v);
    pd_buf_printf(b, "%d", (int)v);
  } else {
    pd_buf_printf(b, "%d", (int)*at);   /* PD_BOOL, and the 1-byte integers */
  }
}

/* The CSV: "sample[,step],NAME" (one value a row) or NAME_0, NAME_1, ... (the row's values in C
 * order), NAME the target when the script wrote a plain name, else "value". */
static pd_status write_csv(const predict *p, const char *path, pd_error *err) {
  size_t esz = pd_dtype_size(p->dtype);
  int64_t per = esz ? (int64_t)(p->row_bytes / esz) : 0;
  const char *col = pd_is_plain_name(p->name) ? p->name : "value";
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_puts(&b, p->seq ? "sample,step" : "sample");
  for (int64_t k = 0; k < per; k++)
    if (per == 1) pd_buf_printf(&b, ",%s", col);
    else pd_buf_printf(&b, ",%s_%lld", col, (long long)k);
  pd_buf_puts(&b, "\n");
  const unsigned char *at = (const unsigned char *)p->data.data;
  const int64_t *len = (const int64_t *)p->lengths.data;
  for (int64_t s = 0; s < p->samples && !b.oom; s++) {
    int64_t steps = p->seq ? len[s] : 1;
    for (int64_t j = 0; j < steps; j++) {
      if (p->seq) pd_buf_printf(&b, "%lld,%lld", (long long)s, (long long)j);
      else pd_buf_printf(&b, "%lld", (long long)s);
      for (int64_t k = 0; k < per; k++, at += esz) csv_value(&b, p->dtype, at);
      pd_buf_puts(&b, "\n");
    }
  }
  pd_status st = b.oom ? pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "%s: out of memory", path)
                       : pd_write_file_atomic(path, b.data, b.len, err);
  pd_buf_free(&b);
  return st;
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), m = strlen(tail);
  return n >= m && strcmp(s + n - m, tail) == 0;
}

pd_status pd_run_predict(pd_runner *r, const pd_action *a, pd_error *err) {
  const pd_cval *o = pd_action_opt(a, "out"), *b = pd_action_opt(a, "batch");
  const char *out = o && o->kind == PD_CVAL_STRING ? o->str : "";
  const char *name = a->args[0]->str;
  predict p = {.a = a, .name = a->arg_text && a->arg_text[0] ? a->arg_text[0] : name};
  pd_buf_init(&p.data);
  pd_buf_init(&p.lengths);
  pd_averager *av = NULL;
  char *path = NULL, *lpath = NULL;
  double t0 = pd_train_now();
  pd_status st = pd_averager_new(r, a, "predict", pd_action_opt(a, "reader"),
                                 b && b->kind == PD_CVAL_INT ? b->i : 256, false, 1, &name, &av,
                                 err);
  if (st) goto done;
  /* In a job of several processes every rank computes, and the first one writes. */
  bool writer = pd_comm_rank() == 0;
  p.pg = r->opts.progress_mode == PD_PROGRESS_NONE || !writer ? NULL : r->opts.progress;
  p.bar = p.pg && (r->opts.progress_mode == PD_PROGRESS_BAR ||
                   (r->opts.progress_mode == PD_PROGRESS_AUTO && isatty(fileno(p.pg))));
  p.batches = pd_averager_batches(av);
  p.t0 = p.last_draw = t0;
  if ((st = pd_averager_each(av, take_batch, &p, err)) || !writer) goto done;
  if (!p.started) {
    st = pd_error_set(err, PD_EINVAL, a->loc, "predict: the reader gave no sample");
    goto done;
  }
  if (!(path = pd_train_script_path(a, out))) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto done;
  }
  pd_loc at = pd_train_opt_loc(a, "out");
  if (ends_with(out, ".csv")) {
    st = pd_run_at_loc(err, write_csv(&p, path, err), at, "predict");
  } else {
    size_t n = strlen(path);
    if (p.seq && (lpath = pd_malloc(n + sizeof ".lengths.npy"))) {
      memcpy(lpath, path, n - 4);   /* the compiler checked that out ends in ".npy" */
      strcpy(lpath + n - 4, ".lengths.npy");
    }
    if (p.seq && !lpath) st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    else if (p.seq) st = write_npy(lpath, PD_INT64, p.samples, 0, NULL, p.lengths.data, err);
    if (!st)
      st = write_npy(path, p.dtype, p.seq ? p.rows : p.samples, p.nd, p.dims, p.data.data, err);
    st = pd_run_at_loc(err, st, at, "predict");
  }
  if (!st && r->opts.out) {
    char sh[96];
    bool lens = p.seq && !ends_with(out, ".csv");
    fprintf(r->opts.out, "predict: %s, %s %s per %s, %lld samples%s to %s%s%.*s%s (%.1f s)\n",
            p.name, pd_dtype_name(p.dtype), pd_dims_str(p.nd, p.dims, sh, sizeof sh),
            p.seq ? "step" : "sample", (long long)p.samples, p.seq ? " (sequences)" : "", out,
            lens ? " and " : "", lens ? (int)strlen(out) - 4 : 0, out, lens ? ".lengths.npy" : "",
            pd_train_now() - t0);
    fflush(r->opts.out);
  }
done:
  pd_free(path);
  pd_free(lpath);
  pd_buf_free(&p.data);
  pd_buf_free(&p.lengths);
  pd_averager_free(av);
  return pd_run_at_loc(err, st, a->loc, NULL);
}
