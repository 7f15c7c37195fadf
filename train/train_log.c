/* train_log.c -- train's log file (train(..., log = "run.csv") or `pdlang run --log FILE`): a
 * row per logged step and per epoch, written as training goes (each row flushed), as CSV or,
 * for a name ending in .jsonl, JSON lines. `pdlang plot` reads it back (driver/cmd_plot.c).
 * train/train.c calls it (train/train_int.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/train_int.h"

struct pd_train_log {
  FILE *f;
  char *path;
  bool json;
  int nvalid;                     /* validation columns: valid_loss, valid_<metric>... */
  char names[17][72];
  double t0;
  double sum;                     /* the losses of the steps since the last step row */
  int64_t nsum;
  bool failed;
};

/* The runner remembers in its global scope which logs this run opened ("@LOG@" + path): a
 * later train call appends to them instead of starting them over. */
static pd_status opened_before(pd_runner *r, const char *path, bool *before) {
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "@LOG@%s", path);
  if (b.oom) return PD_ENOMEM;
  pd_scope *g = pd_runner_scope(r);
  *before = pd_scope_find_local_var(g, b.data) != NULL;
  pd_status st = *before || pd_scope_var(g, b.data) ? PD_OK : PD_ENOMEM;
  pd_buf_free(&b);
  return st;
}

void pd_train_log_close(pd_train_log *l) {
  if (!l) return;
  if (l->f) fclose(l->f);
  pd_free(l->path);
  pd_free(l);
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned)(unsigned char)*s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

/* A number as the log writes it: %.9g, an empty CSV cell or JSON null when not finite or
 * absent (has false). */
static void put_num(const pd_train_log *l, const char *key, double v, bool has, bool first) {
  if (l->json) {
    fprintf(l->f, "%s", first ? "" : ", ");
    json_str(l->f, key);
    if (has && isfinite(v)) fprintf(l->f, ": %.9g", v);
    else fputs(": null", l->f);
  } else {
    if (!first) fputc(',', l->f);
    if (has && isfinite(v)) fprintf(l->f, "%.9g", v);
  }
}

pd_status pd_train_log_open(pd_runner *r, const pd_action *a, const char *path, bool resumed,
                            const pd_valid *vd, pd_train_log **out, pd_error *err) {
  *out = NULL;
  pd_train_log *l = pd_calloc(1, sizeof *l);
  if (!l || !(l->path = pd_strdup(path))) {
    pd_free(l);
    return pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  }
  size_t n = strlen(path);
  l->json = n > 6 && strcmp(path + n - 6, ".jsonl") == 0;
  l->t0 = pd_train_now();
  if (vd) {
    l->nvalid = pd_valid_count(vd);
    for (int i = 0; i < l->nvalid; i++)
      snprintf(l->names[i], sizeof l->names[i], "valid_%s", pd_valid_name(vd, i));
  }
  bool before = false;
  pd_status st = opened_before(r, path, &before);
  if (st) {
    pd_train_log_close(l);
    return pd_error_set(err, st, a->loc, "out of memory");
  }
  /* A resumed run, or a later call of this run, goes on with the file; else it starts over. */
  bool append = before || resumed;
  if (!(l->f = fopen(path, append ? "a" : "w"))) {
    st = pd_error_set(err, PD_EIO, pd_train_opt_loc(a, "log"), "log: cannot write %s: %s", path,
                      strerror(errno));
    pd_train_log_close(l);
    return st;
  }
  if (!l->json && ftell(l->f) == 0) {
    fputs("kind,epoch,step,loss,lr,samples_per_s,time_s", l->f);
    for (int i = 0; i < l->nvalid; i++) fprintf(l->f, ",%s", l->names[i]);
    fputc('\n', l->f);
    fflush(l->f);
  }
  *out = l;
  return PD_OK;
}

/* t: the seconds since the log opened. */
static void row(pd_train_log *l, const char *kind, int epoch, int64_t step, double loss,
                double lr, double sps, double t, const double *valid) {
  if (l->json) {
    fputs("{\"kind\": ", l->f);
    json_str(l->f, kind);
    fprintf(l->f, ", \"epoch\": %d, \"step\": %lld", epoch, (long long)step);
  } else {
    fprintf(l->f, "%s,%d,%lld", kind, epoch, (long long)step);
  }
  put_num(l, "loss", loss, true, false);
  put_num(l, "lr", lr, true, false);
  put_num(l, "samples_per_s", sps, true, false);
  put_num(l, "time_s", t, true, false);
  for (int i = 0; i < l->nvalid; i++)
    if (valid || !l->json) put_num(l, l->names[i], valid ? valid[i] : 0, valid != NULL, false);
  fputs(l->json ? "}\n" : "\n", l->f);
  if (fflush(l->f) || ferror(l->f)) l->failed = true;
}

void pd_train_log_loss(pd_train_log *l, double loss) {
  if (!l) return;
  l->sum += loss;
  l->nsum++;
}

pd_status pd_train_log_step(pd_train_log *l, int epoch, int64_t step, double lr, double sps,
                            pd_loc loc, pd_error *err) {
  if (!l || !l->nsum) return PD_OK;
  row(l, "step", epoch, step, l->sum / (double)l->nsum, lr, sps, pd_train_now() - l->t0, NULL);
  l->sum = 0;
  l->nsum = 0;
  if (l->failed) return pd_error_set(err, PD_EIO, loc, "log: cannot write %s", l->path);
  return PD_OK;
}

/* A row of `kind`, then the same of kind best and stop as marks say. */
static void rows(pd_train_log *l, const char *kind, unsigned marks, int epoch, int64_t step,
                 double loss, double lr, double sps, const double *valid) {
  double t = pd_train_now() - l->t0;
  row(l, kind, epoch, step, loss, lr, sps, t, valid);
  if (marks & PD_LOG_BEST) row(l, "best", epoch, step, loss, lr, sps, t, valid);
  if (marks & PD_LOG_STOP) row(l, "stop", epoch, step, loss, lr, sps, t, valid);
}

pd_status pd_train_log_epoch(pd_train_log *l, int epoch, int64_t step, double loss, double lr,
                             double sps, const double *valid, unsigned marks, pd_loc loc,
                             pd_error *err) {
  if (!l) return PD_OK;
  rows(l, "epoch", marks, epoch, step, loss, lr, sps, valid);
  if (l->failed) return pd_error_set(err, PD_EIO, loc, "log: cannot write %s", l->path);
  return PD_OK;
}

pd_status pd_train_log_valid(pd_train_log *l, int epoch, int64_t step, double lr, double sps,
                             const double *valid, unsigned marks, pd_loc loc, pd_error *err) {
  if (!l) return PD_OK;
  rows(l, "step", marks, epoch, step, l->nsum ? l->sum / (double)l->nsum : NAN, lr, sps, valid);
  l->sum = 0;
  l->nsum = 0;
  if (l->failed) return pd_error_set(err, PD_EIO, loc, "log: cannot write %s", l->path);
  return PD_OK;
}
