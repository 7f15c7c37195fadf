/* train.c -- the actions that run a program over data:
 *   train(cost, OPTION = ..., ...) (its options: train/options.h) builds the training program of
 *       the cost (vm/passes/pipeline.h: the main program pruned to the cost, rewritten, its
 *       backward pass and the optimizer's updates) and runs it as a trainer: trainer_start (the
 *       program, the data through train/readers.h, the resume), then epochs of steps, each
 *       minibatch in a fresh scope under the global one, and after each step and epoch the
 *       hooks: validation (train/train_valid.c), progress, log (train/train_log.c) and plot
 *       (train/plot.c), checkpoint, interrupt (Ctrl-C stops after the minibatch);
 *   eval(metric, ..., reader=, batch=) runs the pruned forward program over a whole data set
 *       and prints each metric averaged over the samples;
 *   save and load are train/train_save.c's, predict train/train_predict.c's.
 * Data vars (vars of the program that a reader must feed) are matched to the reader's fields by
 * name, else by position; a field whose per-sample size matches a var of another shape (images
 * [784] for a [-1, 1, 28, 28] input) is reshaped. A sequence field (lines(...)) comes with its
 * LoD and feeds a lod_level = 1 input only; a fixed field [T] feeding a lod_level = 1 input
 * [-1, 1] (text(...)) becomes one sequence of T steps per sample. */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "vm/ir/params.h"
#include "train/run_int.h"
#include "vm/ir/serialize.h"
#include "train/train.h"
#include "vm/passes/data_parallel.h"
#include "train/plot.h"
#include "train/train_int.h"
#include "train/options.h"
#include "train/optimizers.h"
#include "train/readers.h"
#include "vm/passes/optimizer.h"
#include "vm/passes/pipeline.h"
#include "vm/passes/prune.h"
#include "vm/reader/reader.h"
#include "vm/run/comm.h"

/* ---------------------------------------------------------------- options */

static const pd_cval *opt(const pd_action *a, const char *key) { return pd_action_opt(a, key); }

static int64_t opt_int(const pd_action *a, const char *key, int64_t def) {
  const pd_cval *v = opt(a, key);
  return v && v->kind == PD_CVAL_INT ? v->i : def;
}


/* Where a keyword argument, a positional one, was written (the action's call when unknown): file
 * errors point at the argument that named the file. */
pd_loc pd_train_opt_loc(const pd_action *a, const char *key) {
  for (int i = 0; i < a->nopts; i++)
    if (strcmp(a->opts[i].key, key) == 0 && a->opts[i].loc.line > 0) return a->opts[i].loc;
  return a->loc;
}

pd_loc pd_train_arg_loc(const pd_action *a, int i) {
  return a->arg_loc && i < a->nargs && a->arg_loc[i].line > 0 ? a->arg_loc[i] : a->loc;
}

/* fp16's loss scaling (vm/passes/amp.h): Paddle's defaults, as train's options give them (the
 * compiler checked them). */
static void opts_scaling(const pd_train_opts *o, pd_amp_scaling *s) {
  pd_amp_scaling_defaults(s);
  s->loss_scale = pd_train_opt_float(o, PD_TOPT_loss_scale);
  s->dynamic = pd_train_opt_bool(o, PD_TOPT_dynamic_loss_scaling);
  s->incr_every_n_steps = (int)pd_train_opt_int(o, PD_TOPT_incr_every_n_steps, 0);
  s->decr_every_n_nan_or_inf = (int)pd_train_opt_int(o, PD_TOPT_decr_every_n_nan_or_inf, 0);
  s->incr_ratio = pd_train_opt_float(o, PD_TOPT_incr_ratio);
  s->decr_ratio = pd_train_opt_float(o, PD_TOPT_decr_ratio);
}

double pd_train_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A path named in a script: relative paths are taken from the script's folder when the file is
 * there, else from the working directory. Heap string. */
char *pd_train_script_path(const pd_action *a, const char *path) {
  return pd_path_beside(a->loc.file, path ? path : "");
}

/* ---------------------------------------------------------------- readers */

/* The readers themselves are train/readers.c's registry (pd_reader_open). */

/* Whether the batcher gathers the next minibatch on a thread of its own. The datasets are in
 * memory, so a gather is a copy of rows (microseconds); the thread pays only when a core is
 * free for it. When the kernels' pool has every core, its wake-up once a step preempted a
 * spinning pool worker, whose job the step then waited for: on 2 cores, the char RNN of
 * bench/bench_rnn.sh at hidden 32 trained at 13.6k samples/s with it and 16k without, the
 * MLP of examples/train.pd at 65k and 77k; with PDLANG_THREADS=1 they were the same. */
static bool prefetch_pays(void) {
  pd_k_threading t = pd_k_threading_info();
  return t.cpus > t.threads;
}

/* How the data vars of a program take the reader's fields. */
typedef struct feeder {
  int n;
  const char *vars[16];
  int field[16];            /* the dataset field of each var */
  int64_t seq_len[16];      /* > 0: the var is a batch of sequences of this many steps, each
                               sample one sequence (a field [T] feeds a var [-1, 1] LoD 1) */
  bool seq[16];             /* the field is a sequence field: the batch comes with its LoD */
  int nd[16];               /* the var's rank when the batch must be reshaped, else 0 */
  int64_t dims[16][PD_TENSOR_MAX_DIMS];
  pd_tensor *fields;        /* one per dataset field: the current batch */
  int nfields;
  bool cast[16];            /* the field's dtype is not the var's: converted per batch ... */
  pd_dtype dtype[16];       /* ... to the var's dtype ... */
  pd_tensor conv[16];       /* ... into this tensor of the var's dtype */
  pd_exec_feed feeds[16];
} feeder;

static void feeder_release(feeder *f) {
  for (int i = 0; i < f->nfields; i++) pd_tensor_release(&f->fields[i]);
  for (int i = 0; i < f->n; i++) pd_tensor_release(&f->conv[i]);
  pd_free(f->fields);
  f->fields = NULL;
  f->nfields = 0;
}

/* A reader's numbers of another dtype than their data var's are converted when every value
 * fits exactly (an integer label column feeding a float32 `data`, uint8 pixels feeding float32,
 * float64 rounded to float32), else refused with the value that does not. */
static bool convertible(pd_dtype from, pd_dtype to) {
  bool fnum = pd_dtype_is_float(from) || from == PD_INT64 || from == PD_INT32 ||
              from == PD_INT16 || from == PD_UINT8 || from == PD_INT8 || from == PD_BOOL;
  return fnum && (pd_dtype_is_kernel_float(to) || to == PD_INT64 || to == PD_INT32);
}

/* dst (the var's dtype) = src, value by value; an error naming the first value that does not
 * fit (an integer past 2^24 into float32, a fraction or a value out of range into an integer). */
static pd_status convert_batch(const feeder *f, int i, const pd_tensor *src, pd_tensor *dst,
                               pd_dtype to, pd_loc loc, pd_error *err) {
  pd_status st = pd_tensor_resize(dst, to, src->ndims, src->dims);
  if (!st) st = pd_tensor_copy_lod(dst, src);
  if (st) return pd_error_set(err, st, loc, "out of memory");
  int64_t n = pd_tensor_numel(src);
  void *d = pd_tensor_data(dst);
  for (int64_t k = 0; k < n; k++) {
    double v = pd_tensor_get(src, k);
    bool fits;
    switch (to) {
      case PD_FP32:
        fits = pd_dtype_is_float(src->dtype) ? !(fabs(v) > FLT_MAX) : (double)(float)v == v;
        ((float *)d)[k] = (float)v;
        break;
      case PD_FP64: fits = true; ((double *)d)[k] = v; break;
      case PD_INT64:
        fits = v == floor(v) && fabs(v) < 9007199254740992.0;
        ((int64_t *)d)[k] = fits ? (int64_t)v : 0;
        break;
      default: /* PD_INT32 */
        fits = v == floor(v) && v >= INT32_MIN && v <= INT32_MAX;
        ((int32_t *)d)[k] = fits ? (int32_t)v : 0;
        break;
    }
    if (!fits)
      return pd_error_set(err, PD_ETYPE, loc,
                          "cannot feed '%s': it is declared %s, and the reader's value %.17g "
                          "(element %lld of the batch, %s) does not convert to it exactly",
                          f->vars[i], pd_dtype_name(to), v, (long long)k,
                          pd_dtype_name(src->dtype));
  }
  return PD_OK;
}

/* `what` begins the errors ("train", "eval", ":batch"). With `declared` (the REPL's :batch),
 * the inputs data() declared in p, read or not: all of them as train takes them (by name when
 * the reader has a field of each one's name, else by position) when they can be; else those
 * that a field of ds names. */
static pd_status feeder_init(pd_runner *r, const pd_action *a, const char *what,
                             const pd_program *p, const pd_dataset *ds, bool declared,
                             feeder *f, pd_error *err) {
  memset(f, 0, sizeof *f);
  for (int i = 0; i < 16; i++) pd_tensor_init(&f->conv[i]);
  const char *names[16];
  int n = declared ? 0 : pd_run_data_vars(r, p, names, 16);
  int nf = pd_dataset_nfields(ds);
  if (declared) {
    const char *all[16];
    int na = pd_run_declared_data_vars(r, p, all, 16);
    for (int i = 0; i < na && i < 16; i++)
      if (na > nf ? pd_dataset_field_index(ds, all[i]) >= 0 : true) names[n++] = all[i];
    if (!n) {
      pd_buf b;
      pd_buf_init(&b);
      for (int k = 0; k < nf; k++)
        pd_buf_printf(&b, "%s'%s'", k ? ", " : "", pd_dataset_field_name(ds, k));
      pd_status st = pd_error_set(err, PD_EINVAL, a->loc, "%s: no input of the session is named "
                                  "after a field of the reader (%s): declare one, such as "
                                  "data(\"%s\", ...)", what, b.data ? b.data : "?",
                                  nf ? pd_dataset_field_name(ds, 0) : "x");
      pd_buf_free(&b);
      return st;
    }
  }
  if (n > 16) return pd_error_set(err, PD_EUNSUPPORTED, a->loc, "more than 16 data inputs");
  f->n = n;
  bool by_name = true;
  for (int i = 0; i < n; i++) {
    f->vars[i] = names[i];
    f->field[i] = -1;
    for (int k = 0; k < nf; k++)
      if (strcmp(pd_dataset_field_name(ds, k), names[i]) == 0) f->field[i] = k;
    by_name = by_name && f->field[i] >= 0;
  }
  if (!by_name) {
    if (n > nf) {
      pd_buf b;
      pd_buf_init(&b);
      for (int i = 0; i < n; i++) pd_buf_printf(&b, "%s'%s'", i ? ", " : "", names[i]);
      pd_buf_puts(&b, " but the reader gives ");
      for (int k = 0; k < nf; k++) pd_buf_printf(&b, "%s'%s'", k ? ", " : "", pd_dataset_field_name(ds, k));
      pd_status st = pd_error_set(err, PD_EINVAL, a->loc, "%s: the program reads data %s",
                                  what, b.data ? b.data : "?");
      pd_buf_free(&b);
      return st;
    }
    for (int i = 0; i < n; i++) f->field[i] = i; /* by position, in declaration order */
  }
  /* Reshape when the var's per-sample shape differs from the field's but holds as many values
   * (for a sequence field: the shape of one row). */
  for (int i = 0; i < n; i++) {
    const pd_var_desc *v = pd_block_find_var_local(p->blocks[0], names[i]);
    int64_t fd[PD_TENSOR_MAX_DIMS];
    int fnd = pd_dataset_field_shape(ds, f->field[i], fd);
    int64_t fnum = 1, vnum = 1;
    for (int k = 0; k < fnd; k++) fnum *= fd[k];
    bool same = v && v->ndims == fnd + 1;
    for (int k = 0; same && k < fnd; k++) same = v->dims[k + 1] < 0 || v->dims[k + 1] == fd[k];
    f->seq[i] = pd_dataset_field_is_seq(ds, f->field[i]);
    if (v && pd_var_type_has_tensor(v->type) && v->dtype != pd_dataset_field_dtype(ds, f->field[i]))
      f->cast[i] = convertible(pd_dataset_field_dtype(ds, f->field[i]), v->dtype),
      f->dtype[i] = v->dtype;
    if (v && f->seq[i] && v->lod_level != 1) {
      /* Sequences of varying length only make sense to a sequence input. */
      pd_buf b;
      pd_buf_init(&b);
      pd_buf_puts(&b, "[-1");
      for (int k = 0; k < fnd; k++) pd_buf_printf(&b, ", %lld", (long long)fd[k]);
      pd_buf_puts(&b, "]");
      pd_dtype dt = pd_dataset_field_dtype(ds, f->field[i]);
      pd_status st;
      if (v->lod_level == 0)
        st = pd_error_set(err, PD_EINVAL, a->loc,
                          "%s: the reader's '%s' is a batch of sequences of varying length, but "
                          "'%s' is not a sequence input; declare it data(\"%s\", %s, %s, "
                          "lod_level = 1)",
                          what, pd_dataset_field_name(ds, f->field[i]),
                          names[i], names[i], b.data ? b.data : "?", pd_dtype_name(dt));
      else
        st = pd_error_set(err, PD_EINVAL, a->loc,
                          "%s: the reader's '%s' has one level of sequences, but '%s' is "
                          "declared with lod_level = %d",
                          what, pd_dataset_field_name(ds, f->field[i]),
                          names[i], v->lod_level);
      pd_buf_free(&b);
      return st;
    }
    if (v && !f->seq[i] && v->lod_level >= 1 && fnd == 1 && v->ndims >= 1) {
      /* Each sample is a sequence of fd[0] steps of the var's per-step shape. */
      int64_t per = 1;
      for (int k = 1; k < v->ndims; k++) per *= v->dims[k] < 0 ? 1 : v->dims[k];
      if (per == 1) {
        f->seq_len[i] = fd[0];
        f->nd[i] = v->ndims;
        memcpy(f->dims[i], v->dims, sizeof *v->dims * (size_t)v->ndims);
        for (int k = 1; k < v->ndims; k++) f->dims[i][k] = 1;
        continue;
      }
    }
    if (!v || same || v->ndims < 1) continue;
    bool known = true;
    for (int k = 1; k < v->ndims; k++) {
      known = known && v->dims[k] >= 0;
      vnum *= v->dims[k];
    }
    if (known && vnum == fnum) {
      f->nd[i] = v->ndims;
      memcpy(f->dims[i], v->dims, sizeof *v->dims * (size_t)v->ndims);
    }
  }
  /* fields and nfields are set together, once the array exists: feeder_release reads them */
  pd_tensor *fields = pd_calloc((size_t)nf + 1, sizeof *fields);
  if (!fields) return pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  for (int k = 0; k < nf; k++) pd_tensor_init(&fields[k]);
  f->fields = fields;
  f->nfields = nf;
  return PD_OK;
}

/* After pd_batcher_next filled f->fields with rows rows: the feeds for the run. */
static pd_status feeder_batch(feeder *f, int64_t rows, pd_loc loc, pd_error *err) {
  for (int i = 0; i < f->n; i++) {
    pd_tensor *t = &f->fields[f->field[i]];
    if (f->nd[i]) {
      int64_t dims[PD_TENSOR_MAX_DIMS];
      memcpy(dims, f->dims[i], sizeof dims);
      dims[0] = f->seq[i] ? t->dims[0] : f->seq_len[i] ? rows * f->seq_len[i] : rows;
      pd_status st = pd_tensor_reshape(t, f->nd[i], dims);
      if (st) return pd_error_set(err, st, loc, "cannot reshape the reader's '%s' for '%s'",
                                  "field", f->vars[i]);
    }
    if (f->seq_len[i]) { /* one sequence per sample: offsets 0, T, 2T, ... */
      int64_t *off = pd_malloc(sizeof *off * (size_t)(rows + 1));
      if (!off) return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
      for (int64_t r = 0; r <= rows; r++) off[r] = r * f->seq_len[i];
      const int64_t *lv = off;
      int64_t len = rows + 1;
      pd_status st = pd_tensor_set_lod(t, 1, &lv, &len);
      pd_free(off);
      if (st) return pd_error_set(err, st, loc, "out of memory");
    }
    if (f->cast[i]) {
      pd_status st = convert_batch(f, i, t, &f->conv[i], f->dtype[i], loc, err);
      if (st) return st;
      t = &f->conv[i];
    }
    f->feeds[i] = (pd_exec_feed){f->vars[i], t};
  }
  return PD_OK;
}

static pd_status fields_like(const pd_averager *av, const feeder *f, const pd_dataset *ds,
                             pd_loc loc, pd_error *err);

/* ---------------------------------------------------------------- the REPL's :batch */

pd_status pd_runner_bind_batch(pd_runner *r, const pd_action *a, const pd_cval *spec,
                               int64_t batch, int64_t *samples, pd_error *err) {
  *samples = 0;
  pd_dataset *ds = NULL;
  pd_batcher *bt = NULL;
  feeder f;
  memset(&f, 0, sizeof f);
  pd_batcher_options bo = {.batch = batch, .shard_count = 1};
  pd_status st = pd_reader_open(r, a, spec, NULL, &ds, err);
  if (!st) st = pd_batcher_new(ds, &bo, &bt, err);
  if (!st) st = feeder_init(r, a, ":batch", r->unit->main, ds, true, &f, err);
  if (!st) st = pd_batcher_next(bt, f.fields, samples, err);
  if (!st && *samples == 0)
    st = pd_error_set(err, PD_EINVAL, a->loc, ":batch: the reader gave no sample");
  if (!st) st = feeder_batch(&f, *samples, a->loc, err);
  if (!st) st = pd_runner_bind(r, f.n, f.feeds, err);
  feeder_release(&f);
  pd_batcher_free(bt);
  pd_dataset_free(ds);
  return pd_run_at_loc(err, st, a->loc, ":batch");
}

/* ---------------------------------------------------------------- progress */

typedef struct progress {
  FILE *out;
  bool bar;
  int64_t every;        /* lines mode: a line every this many steps, */
  double min_gap;       /* and at least this many seconds after the last one */
  double t0;            /* epoch start */
  double last_draw;
  double valid_secs;    /* how long the last validation took (for the ETA) */
} progress;

static void fmt_time(char *buf, size_t n, double s) {
  if (!(s >= 0) || s > 1e7) {
    snprintf(buf, n, "?");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

static void progress_step(progress *pg, int epoch, int epochs, int64_t step, int64_t steps,
                          double loss, int64_t samples) {
  if (!pg->out) return;
  double t = pd_train_now(), el = t - pg->t0;
  double sps = el > 0 ? (double)samples / el : 0;
  if (pg->bar) {
    if (step != steps && t - pg->last_draw < 0.1) return;
    pg->last_draw = t;
    int w = 24, fill = steps ? (int)(w * step / steps) : w;
    char bar[32], eta[32];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[w] = 0;
    /* The ETA of the whole run: this epoch's rest, the epochs after it at this epoch's pace,
     * and a validation after each as long as the last one. */
    double left = step ? el / (double)step * (double)(steps - step + steps * (epochs - epoch)) +
                             pg->valid_secs * (epochs - epoch + 1)
                       : -1;
    fmt_time(eta, sizeof eta, left);
    fprintf(pg->out, "\repoch %d/%d [%s] %lld/%lld loss %.4f %.0f samples/s ETA %s\033[K", epoch,
            epochs, bar, (long long)step, (long long)steps, loss, sps, eta);
    fflush(pg->out);
  } else if (step % pg->every == 0 && step != steps && t - pg->last_draw >= pg->min_gap) {
    pg->last_draw = t;
    fprintf(pg->out, "epoch %d/%d step %lld/%lld loss %.4f %.0f samples/s\n", epoch, epochs,
            (long long)step, (long long)steps, loss, sps);
    fflush(pg->out);
  }
}

/* The summary line of an epoch: the train loss, the validation (valid: ", valid loss ..."
 * or ""), the learning rate, the time; note (NULL: none) on a line after it. */
/* samples: of every process; the loss is rank 0's. */
static void epoch_summary(progress *pg, int epoch, int epochs, double loss, int64_t samples,
                          double el, double lr, const char *valid, const char *note,
                          int nranks) {
  if (!pg->out) return;
  if (pg->bar) fputc('\n', pg->out);
  fprintf(pg->out, "epoch %d/%d: loss %.4f%s, lr %.4g, %lld samples in %.1f s (%.0f samples/s",
          epoch, epochs, loss, valid, lr, (long long)samples, el,
          el > 0 ? (double)samples / el : 0.0);
  if (nranks > 1) fprintf(pg->out, ", %d processes", nranks);
  fputs(")\n", pg->out);
  if (note) fprintf(pg->out, "%s\n", note);
  fflush(pg->out);
}

/* The line of a validation after a step (valid_every_steps): "step 26 (epoch 2/30), valid loss
 * 0.4741, valid accuracy 1.0000", and the early-stopping note (may be NULL) below it. */
static void step_validation_line(progress *pg, int64_t step, int epoch, int epochs,
                                 const char *valid, const char *note) {
  if (!pg->out) return;
  if (pg->bar) fputc('\n', pg->out);
  fprintf(pg->out, "step %lld (epoch %d/%d)%s\n", (long long)step, epoch, epochs, valid);
  if (note) fprintf(pg->out, "%s\n", note);
  fflush(pg->out);
}

/* ---------------------------------------------------------------- train */

/* train's optimizer = RECORD (train/optimizers.h; sgd(0.01) when not given). */
static pd_status parse_optimizer(const pd_action *a, pd_optimizer *o, pd_error *err) {
  return pd_optimizer_from_record(pd_action_opt(a, "optimizer"), o, a->loc, err);
}

static pd_status set_lr(pd_runner *r, double lr, pd_error *err) {
  pd_variable *v = pd_scope_find_local_var(r->global, PD_LR_VAR);
  pd_tensor *t = v ? pd_var_tensor(v) : NULL;
  if (!t || !pd_tensor_initialized(t))
    return pd_error_set(err, PD_ERUNTIME, (pd_loc){0}, "the learning rate var is missing");
  return pd_tensor_fill(t, lr);
}

/* The parameters of p (pd_params_names) that hold a tensor in the global scope, sorted by
 * name (heap array of borrowed names); -1 on out of memory. */
int pd_train_persistables(pd_runner *r, const pd_program *p, const char ***out) {
  int n;
  if (pd_params_names(p, out, &n)) return -1;
  int k = 0;
  for (int i = 0; i < n; i++) {
    pd_variable *gv = pd_scope_find_local_var(r->global, (*out)[i]);
    if (gv && gv->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&gv->u.tensor))
      (*out)[k++] = (*out)[i];
  }
  return k;
}

/* ---- What identifies a training setup, stored in its checkpoints (pd_ckpt_meta.setup) so that a
 * resume into another one is refused: the training program (its ops and vars, without source
 * locations, so that editing comments or moving the script does not count), the parameters of the
 * model (names, dtypes, shapes), the optimizer and its hyper-parameters, the reader, batch
 * and drop_last. ---- */

static void describe_optimizer(const pd_optimizer *o, pd_buf *b) {
  static const char *const sched[] = {"constant", "step", "cosine"};
  switch (o->kind) {
    case PD_OPT_SGD: pd_buf_printf(b, "sgd(lr=%.9g", o->lr); break;
    case PD_OPT_MOMENTUM:
      pd_buf_printf(b, "momentum(lr=%.9g, momentum=%.9g, nesterov=%s", o->lr, o->mu,
                    o->nesterov ? "true" : "false");
      break;
    case PD_OPT_ADAM:
    case PD_OPT_ADAMW:
      pd_buf_printf(b, "%s(lr=%.9g, beta1=%.9g, beta2=%.9g, epsilon=%.9g",
                    o->kind == PD_OPT_ADAM ? "adam" : "adamw", o->lr, o->beta1, o->beta2,
                    o->epsilon);
      break;
    case PD_OPT_RMSPROP:
      pd_buf_printf(b, "rmsprop(lr=%.9g, rho=%.9g, epsilon=%.9g, momentum=%.9g, centered=%s",
                    o->lr, o->rho, o->epsilon, o->mu, o->centered ? "true" : "false");
      break;
    case PD_OPT_ADAGRAD:
      pd_buf_printf(b, "adagrad(lr=%.9g, epsilon=%.9g, initial_accumulator_value=%.9g", o->lr,
                    o->epsilon, o->init_acc);
      break;
  }
  if (o->weight_decay != 0) pd_buf_printf(b, ", weight_decay=%.9g", o->weight_decay);
  if (o->clip_norm != 0) pd_buf_printf(b, ", clip_norm=%.9g", o->clip_norm);
  if (o->schedule != PD_LR_CONSTANT)
    pd_buf_printf(b, ", lr_schedule=%s, decay_steps=%lld, decay_rate=%.9g",
                  (unsigned)o->schedule < 3 ? sched[o->schedule] : "?", (long long)o->decay_steps,
                  o->decay_rate);
  if (o->warmup_steps > 0) pd_buf_printf(b, ", warmup_steps=%lld", (long long)o->warmup_steps);
  pd_buf_puts(b, ")");
}

/* The setup text into out (PD_CKPT_SETUP_SIZE bytes). PD_ENOMEM or PD_OK. */
static pd_status train_setup(const pd_runner *r, const pd_train_opts *to, const pd_program *p,
                             const pd_optimizer *o, const pd_valid *vd, char *out) {
  uint64_t program;
  if (pd_run_program_hash(p, &program)) return PD_ENOMEM;
  /* The model's parameters: the persistable vars of the training program that the model
   * declares (not the optimizer's state, which the optimizer entry covers). */
  pd_buf pb, b;
  pd_buf_init(&pb);
  pd_buf_init(&b);
  const pd_block *b0 = p->blocks[0], *m0 = r->unit->main->blocks[0];
  for (int i = 0; i < b0->nvars; i++) {
    const pd_var_desc *v = b0->vars[i];
    if (!v->persistable || !pd_block_find_var_local(m0, v->name)) continue;
    pd_buf_printf(&pb, "%s:%s:%d", v->name, pd_dtype_name(v->dtype), v->ndims);
    for (int k = 0; k < v->ndims; k++) pd_buf_printf(&pb, ",%lld", (long long)v->dims[k]);
    pd_buf_puts(&pb, ";");
  }
  pd_buf_printf(&b, "training program=#%016llx\nparameter list=#%016llx\noptimizer=",
                (unsigned long long)program,
                (unsigned long long)pd_hash_bytes(pb.data ? pb.data : "", pb.len));
  describe_optimizer(o, &b);
  pd_buf_puts(&b, "\nreader=");
  const pd_cval *rd = to->value[PD_TOPT_reader];
  if (rd) pd_cval_format(rd, &b);
  pd_train_opts_describe(to, &b);  /* the options a checkpoint records: ", batch 64" */
  if (vd) pd_valid_describe(vd, &b);
  pd_status st = pb.oom || b.oom ? PD_ENOMEM : PD_OK;
  if (!st) snprintf(out, PD_CKPT_SETUP_SIZE, "%s", b.data);
  pd_buf_free(&pb);
  pd_buf_free(&b);
  return st;
}

/* ---- The learning-rate schedule across train calls: a call on the same cost with the same
 * optimizer (kind and hyper-parameters) goes on with the global step and the schedule where
 * the call before it left them; another optimizer, or another cost, starts a new schedule at
 * step 0. The record, int64 [3] {the global step, the schedule's length in steps (what a
 * cosine schedule without decay_steps spans: the steps of the call that started it), the
 * optimizer's hash}, lives in the global scope as "@SCHEDULE@" + the cost's name. ---- */

static uint64_t optimizer_hash(const pd_optimizer *o) {
  pd_buf b;
  pd_buf_init(&b);
  describe_optimizer(o, &b);
  uint64_t h = pd_hash_bytes(b.data ? b.data : "", b.len) ^ (b.oom ? 1u : 0u);
  pd_buf_free(&b);
  return h;
}

static pd_tensor *schedule_record(pd_runner *r, const char *cost, bool create) {
  pd_buf name;
  pd_buf_init(&name);
  pd_buf_printf(&name, "@SCHEDULE@%s", cost);
  pd_variable *v = name.oom ? NULL
                   : create ? pd_scope_var(r->global, name.data)
                            : pd_scope_find_local_var(r->global, name.data);
  pd_buf_free(&name);
  return v ? pd_var_tensor(v) : NULL;
}

/* Where the schedule of cost and o stands: true when an earlier call left one to go on with. */
static bool schedule_resume(pd_runner *r, const char *cost, const pd_optimizer *o,
                            int64_t *gstep, int64_t *total) {
  pd_tensor *t = schedule_record(r, cost, false);
  if (!t || !pd_tensor_initialized(t) || t->dtype != PD_INT64 || pd_tensor_numel(t) != 3 ||
      t->place != PD_K_HOST || (uint64_t)PD_TENSOR_I64(t)[2] != optimizer_hash(o))
    return false;
  *gstep = PD_TENSOR_I64(t)[0];
  *total = PD_TENSOR_I64(t)[1];
  return true;
}

static pd_status schedule_save(pd_runner *r, const char *cost, const pd_optimizer *o,
                               int64_t gstep, int64_t total) {
  pd_tensor *t = schedule_record(r, cost, true);
  int64_t three = 3;
  if (!t || pd_tensor_resize(t, PD_INT64, 1, &three)) return PD_ENOMEM;
  PD_TENSOR_I64(t)[0] = gstep;
  PD_TENSOR_I64(t)[1] = total;
  PD_TENSOR_I64(t)[2] = (int64_t)optimizer_hash(o);
  return PD_OK;
}

/* ---------------------------------------------------------------- the trainer */

/* A train call as a trainer: its setup (the program, the executor, the data, the resume) in
 * trainer_start, then the loop of trainer_run, which after each step and each epoch calls its
 * hooks in order: the validation (which leaves its line and whether to stop in the trainer),
 * the progress on the terminal, the log, the checkpoint and the interrupt (Ctrl-C). A hook
 * reads the trainer's state and returns an error to stop the run; each has its own context. */
typedef struct trainer trainer;

typedef struct train_hook {
  const char *name;
  pd_status (*step)(trainer *t, pd_error *err);     /* after each step (may be NULL) */
  pd_status (*epoch)(trainer *t, pd_error *err);    /* after each epoch (may be NULL) */
  pd_status (*finish)(trainer *t, pd_error *err);   /* after the last epoch (may be NULL) */
} train_hook;

struct trainer {
  pd_runner *r;
  const pd_action *a;
  pd_train_opts o;
  const char *cost;
  int64_t batch, epochs;
  uint64_t seed;
  bool drop_last;
  int nranks;
  pd_optimizer opt;
  pd_program *p, *init;
  pd_exec *ex;
  pd_dataset *ds;
  pd_batcher *bt;
  pd_image_augment aug;       /* the batcher's augmentation (it borrows them) */
  pd_batch_augment baug;
  feeder f;
  pd_tensor loss_t;
  int64_t steps;              /* steps an epoch */
  /* Where the run stands. */
  int first_epoch, epoch;     /* 0-based */
  int64_t skip;               /* resuming mid-epoch: the steps of the first epoch already run */
  int64_t gstep, total;       /* the global step, the schedule's length */
  bool scheduled;             /* gstep counts: the schedule is recorded at the end */
  bool resumed;
  double lr, loss;            /* the step's learning rate and loss */
  double sum;                 /* the epoch's: the losses times rows, */
  int64_t samples, done;      /* its samples on this process, its steps done */
  double t0;                  /* when it started */
  double step_el, epoch_el;   /* the seconds from t0 to the end of the last step, of its steps */
  bool stop;                  /* early stopping ends the run */
  /* The validation hook's results, for the hooks after it: its line (", valid loss ...") and
   * note, empty when it did not validate; estop: early stopping after this epoch. */
  pd_valid *vd;
  pd_buf line, line2;
  bool estop;
  /* Progress, log, checkpoint. */
  progress pg;
  pd_train_log *lg;
  char *log_path, *plot_path;
  char *ckpt;
  char setup[PD_CKPT_SETUP_SIZE];
};

/* Samples a second over el seconds. */
static double trainer_sps(double el, int64_t samples) {
  return el > 0 ? (double)samples / el : 0;
}

static pd_status trainer_oom(trainer *t, pd_error *err) {
  return pd_error_set(err, PD_ENOMEM, t->a->loc, "out of memory");
}

/* ---- hook: the validation (valid = READER) ---- */

static pd_status valid_step(trainer *t, pd_error *err) {
  t->line.len = t->line2.len = 0;
  if (!t->vd) return PD_OK;
  double vsec;
  pd_status st = pd_valid_step(t->vd, (int64_t)t->epoch * t->steps + t->done, &t->line,
                               &t->line2, &t->stop, &vsec, err);
  return st ? st : t->line.oom || t->line2.oom ? trainer_oom(t, err) : PD_OK;
}

static pd_status valid_epoch(trainer *t, pd_error *err) {
  t->line.len = t->line2.len = 0;
  t->estop = false;  /* a stop after a step (valid_every_steps) is already in stop */
  t->pg.valid_secs = 0;
  if (!t->vd) return PD_OK;
  pd_status st = pd_valid_epoch(t->vd, t->epoch, &t->line, &t->line2, &t->estop,
                                &t->pg.valid_secs, err);
  if (st) return st;
  if (t->line.oom || t->line2.oom) return trainer_oom(t, err);
  t->stop = t->stop || t->estop;
  return PD_OK;
}

/* keep_best: the best epoch's parameters replace the model's. The checkpoint keeps the last
 * epoch's (a later call with more epochs goes on from them) and the best as NAME@BEST. */
static pd_status valid_finish(trainer *t, pd_error *err) {
  return t->vd ? pd_valid_finish(t->vd, t->pg.out, err) : PD_OK;
}

/* ---- hook: the progress on the terminal ---- */

static pd_status progress_hook_step(trainer *t, pd_error *err) {
  (void)err;
  progress_step(&t->pg, t->epoch + 1, (int)t->epochs, t->done, t->steps,
                t->sum / (double)t->samples, t->samples * t->nranks);
  if (t->line.len)
    step_validation_line(&t->pg, (int64_t)t->epoch * t->steps + t->done, t->epoch + 1,
                         (int)t->epochs, t->line.data, t->line2.len ? t->line2.data : NULL);
  return PD_OK;
}

/* A summary per epoch; for long runs of short epochs, about 20 in all (and each epoch that
 * validated). */
static pd_status progress_hook_epoch(trainer *t, pd_error *err) {
  (void)err;
  int64_t every = t->epochs > 20 ? (t->epochs + 19) / 20 : 1, e = t->epoch;
  if ((e + 1) % every == 0 || e == t->first_epoch || e + 1 == t->epochs || t->line.len ||
      t->stop)
    epoch_summary(&t->pg, (int)e + 1, (int)t->epochs,
                  t->samples ? t->sum / (double)t->samples : 0.0, t->samples * t->nranks,
                  t->epoch_el, t->lr, t->line.len ? t->line.data : "",
                  t->line2.len ? t->line2.data : NULL, t->nranks);
  return PD_OK;
}

/* ---- hook: the log (log = FILE, --log, or plot's) and the plot drawn from it ---- */

static unsigned log_marks(const trainer *t, bool stop) {
  return (pd_valid_improved(t->vd) ? PD_LOG_BEST : 0u) | (stop ? PD_LOG_STOP : 0u);
}

static pd_status log_hook_step(trainer *t, pd_error *err) {
  if (!t->lg) return PD_OK;
  pd_loc at = t->o.loc[PD_TOPT_log];
  pd_train_log_loss(t->lg, t->loss);
  pd_status st = PD_OK;
  if (t->done % t->pg.every == 0 && t->done != t->steps)
    st = pd_train_log_step(t->lg, t->epoch + 1, t->gstep, t->lr,
                           trainer_sps(t->step_el, t->samples * t->nranks), at, err);
  if (!st && t->line.len)
    st = pd_train_log_valid(t->lg, t->epoch + 1, t->gstep, t->lr,
                            trainer_sps(t->step_el, t->samples * t->nranks), pd_valid_last(t->vd),
                            log_marks(t, t->stop), at, err);
  return st;
}

static pd_status log_hook_epoch(trainer *t, pd_error *err) {
  if (!t->lg) return PD_OK;
  pd_loc at = t->o.loc[PD_TOPT_log];
  double sps = trainer_sps(t->epoch_el, t->samples);
  pd_status st = pd_train_log_step(t->lg, t->epoch + 1, t->gstep, t->lr, sps, at, err);
  if (!st)
    st = pd_train_log_epoch(t->lg, t->epoch + 1, t->gstep,
                            t->samples ? t->sum / (double)t->samples : 0.0, t->lr, sps,
                            pd_valid_last(t->vd), log_marks(t, t->estop), at, err);
  return st;
}

/* plot = "NAME.png": the curves of the log, drawn when training ends (rank 0, which logs). */
static pd_status log_hook_finish(trainer *t, pd_error *err) {
  if (!t->plot_path || !t->log_path) return PD_OK;
  pd_train_log_close(t->lg);
  t->lg = NULL;
  pd_status st = pd_plot_log(t->log_path, t->plot_path, 0, 0, false, err);
  return st ? pd_run_at_loc(err, st, t->o.loc[PD_TOPT_plot], "plot") : PD_OK;
}

/* ---- hook: the checkpoint (checkpoint = FILE), after every epoch ---- */

/* Rank 0 alone writes checkpoints (every rank holds the same values); each rank of a later run
 * resumes from it. */
static pd_status trainer_save(trainer *t, int epoch, int64_t step, pd_error *err) {
  if (!t->ckpt || pd_comm_rank() != 0) return PD_OK;
  pd_ckpt_meta meta = {.epoch = epoch, .step = step, .global_step = t->gstep,
                       .rng_offset = pd_exec_rng_offset(t->ex), .seed = t->seed};
  memcpy(meta.setup, t->setup, sizeof meta.setup);
  const char **names;
  int n = pd_train_persistables(t->r, t->p, &names);
  if (n < 0) return trainer_oom(t, err);
  pd_status st = pd_checkpoint_save(t->ckpt, t->r->global, n, names, &meta, err);
  pd_free(names);
  return st ? pd_run_at_loc(err, st, t->o.loc[PD_TOPT_checkpoint], "checkpoint") : PD_OK;
}

static pd_status ckpt_hook_epoch(trainer *t, pd_error *err) {
  return trainer_save(t, t->epoch + 1, 0, err);
}

/* ---- hook: Ctrl-C stops after the step, saving a checkpoint to resume from ---- */

static pd_status interrupt_hook_step(trainer *t, pd_error *err) {
  if (t->stop || !t->r->opts.interrupt || !*t->r->opts.interrupt) return PD_OK;
  if (t->pg.bar) fputc('\n', t->pg.out);
  pd_status st = trainer_save(t, t->epoch, t->done, err);
  if (st) return st;
  return pd_error_set(err, PD_EINTR, t->a->loc, "training interrupted at epoch %d step %lld%s%s",
                      t->epoch + 1, (long long)t->done, t->ckpt ? "; checkpoint saved to " : "",
                      t->ckpt ? t->ckpt : "");
}

/* The hooks, in the order they run: the validation first (the others show and log its
 * result), the interrupt last (after the step was shown, logged and validated). */
static const train_hook hooks[] = {
    {"validation", valid_step, valid_epoch, valid_finish},
    {"progress", progress_hook_step, progress_hook_epoch, NULL},
    {"log", log_hook_step, log_hook_epoch, log_hook_finish},
    {"checkpoint", NULL, ckpt_hook_epoch, NULL},
    {"interrupt", interrupt_hook_step, NULL, NULL},
};

/* The log a plot draws when train names no other: "curves.png" -> "curves.csv". Heap. */
static char *plot_log_name(const char *png) {
  size_t n = strlen(png);
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "%.*s.csv", (int)(n > 4 && strcmp(png + n - 4, ".png") == 0 ? n - 4 : n), png);
  return pd_buf_take(&b);
}

/* train's amp = "bf16" | "fp16": the precision of the products under mixed precision (the compiler
 * checked the value); PD_FP32 without. */
static pd_dtype opts_amp(const pd_train_opts *o) {
  const char *s = pd_train_opt_str(o, PD_TOPT_amp, NULL, 0);
  return s && strcmp(s, "bf16") == 0 ? PD_BF16 : s && strcmp(s, "fp16") == 0 ? PD_FP16 : PD_FP32;
}

/* Resume from the checkpoint when its file is there. */
static pd_status trainer_resume(trainer *t, pd_error *err) {
  pd_ckpt_meta meta = {0};
  pd_status st = pd_checkpoint_load_setup(t->ckpt, t->r->global, t->p, t->setup, &meta, err);
  if (st) return pd_run_at_loc(err, st, t->o.loc[PD_TOPT_checkpoint], "checkpoint");
  FILE *out = t->pg.out;
  t->resumed = true;
  t->first_epoch = (int)meta.epoch;
  t->skip = meta.step;
  t->gstep = meta.global_step;
  pd_exec_set_rng_offset(t->ex, meta.rng_offset);
  if (pd_valid_stopped(t->vd)) {
    if (out)
      fprintf(out, "%s: early stopping ended the run at epoch %lld; nothing to train\n", t->ckpt,
              (long long)t->first_epoch);
    t->first_epoch = (int)t->epochs;
  } else if (out && t->first_epoch >= t->epochs)
    fprintf(out, "%s: the run already finished its %lld epochs; nothing to train\n", t->ckpt,
            (long long)t->epochs);
  else if (out)
    fprintf(out, "resuming from %s: epoch %d, step %lld\n", t->ckpt, t->first_epoch + 1,
            (long long)t->skip);
  return PD_OK;
}

/* Everything before the first step: the training program (forward for the cost, its backward
 * pass, the updates: vm/passes/pipeline.h), the validation, the executor, the data, the
 * schedule, the resume, the log. */
static pd_status trainer_start(trainer *t, pd_error *err) {
  pd_runner *r = t->r;
  const pd_action *a = t->a;
  pd_status st;
  pd_amp_scaling scaling;
  opts_scaling(&t->o, &scaling);
  pd_pipeline_options po = {.optimizer = &t->opt, .loc = a->loc, .nranks = t->nranks,
                            .amp = opts_amp(&t->o),
                            .sync_batch_norm = pd_train_opt_bool(&t->o, PD_TOPT_sync_batch_norm),
                            .scaling = &scaling};
  if (r->opts.place == PD_K_CUDA) {   /* GPU ranks need NCCL (vm/run/comm.h) */
    pd_error ge = {0};
    if ((st = pd_comm_gpu_check(&ge))) {
      st = pd_error_set(err, st, a->loc, "train: %s", ge.msg ? ge.msg : pd_status_str(st));
      pd_error_clear(&ge);
      return st;
    }
  }
  if ((st = pd_pipeline_train(r->unit->main, t->cost, &po, &t->p, &t->init, err)) ||
      (st = pd_run_same_program(t->p, "training program", a->loc, err)) ||
      (st = pd_run_init_missing(r, t->init, err)))
    return st;
  /* Validation: its reader is checked before training starts; its state joins the program. */
  if ((st = pd_valid_new(r, a, t->cost, &t->vd, err))) return st;
  if (t->vd && (st = pd_valid_declare(t->vd, t->p, err))) return st;
  pd_exec_options eo = pd_run_exec_options(r, t->seed ^ 0x9e3779b97f4a7c15ull, false);
  if ((st = pd_exec_new(t->p, &eo, &t->ex, err))) return st;
  /* The data. */
  const pd_cval *reader = t->o.value[PD_TOPT_reader];
  FILE *note = r->opts.progress_mode == PD_PROGRESS_NONE || pd_comm_rank() != 0
                   ? NULL : r->opts.progress;
  if ((st = pd_reader_open(r, a, reader, note, &t->ds, err))) return st;
  pd_batcher_options bo = {.batch = t->batch, .shuffle = pd_train_opt_bool(&t->o, PD_TOPT_shuffle),
                           .seed = t->seed, .drop_last = t->drop_last,
                           .prefetch = prefetch_pays(), .shard_rank = pd_comm_rank(),
                           .shard_count = t->nranks, .equal_shards = true};
  /* Augmentations (images(..., crop_padding, flip)) in training only, seeded by train's seed. */
  if (pd_train_images_augment(reader, &t->aug)) {
    t->baug = pd_image_augmenter(&t->aug);
    bo.augment = &t->baug;
  }
  if ((st = pd_batcher_new(t->ds, &bo, &t->bt, err)) ||
      (st = feeder_init(r, a, "train", t->p, t->ds, false, &t->f, err)))
    return st;
  if (t->vd && (st = fields_like(pd_valid_averager(t->vd), &t->f, t->ds, t->o.loc[PD_TOPT_valid],
                                 err)))
    return st;
  t->steps = pd_batcher_num_batches(t->bt);
  if (t->steps == 0 && t->drop_last) {
    int64_t n = pd_dataset_size(t->ds);
    pd_buf why;
    pd_buf_init(&why);
    pd_buf_printf(&why, "the reader has %" PRId64 " sample%s", n, n == 1 ? "" : "s");
    if (t->nranks > 1)
      pd_buf_printf(&why, ", %" PRId64 " for each of the %d processes", n / t->nranks, t->nranks);
    st = pd_error_set(err, PD_EINVAL, t->o.loc[PD_TOPT_drop_last],
                      "train: drop_last = true leaves no batch: %s, fewer than one batch of %"
                      PRId64, why.oom ? "too few samples" : why.data, t->batch);
    pd_buf_free(&why);
    return st;
  }
  t->total = t->steps * t->epochs;
  /* The schedule, then the resume. */
  t->pg.out = r->opts.progress_mode == PD_PROGRESS_NONE ? NULL : r->opts.progress;
  bool goes_on = schedule_resume(r, t->cost, &t->opt, &t->gstep, &t->total);
  t->scheduled = true;
  if (goes_on && t->pg.out && t->gstep > 0)
    fprintf(t->pg.out, "train: the learning-rate schedule goes on from step %lld\n",
            (long long)t->gstep);
  if (t->ckpt && train_setup(r, &t->o, t->p, &t->opt, t->vd, t->setup)) return trainer_oom(t, err);
  if (t->ckpt && access(t->ckpt, F_OK) == 0 && (st = trainer_resume(t, err))) return st;
  /* The log: train's log =, else the run's --log, else with plot = "NAME.png" NAME.csv. */
  const char *given = pd_train_opt_str(&t->o, PD_TOPT_log, NULL, 0);
  const char *lname = given ? given : r->opts.log_path;
  const char *plot = pd_train_opt_str(&t->o, PD_TOPT_plot, NULL, 0);
  if (plot && !(t->plot_path = pd_train_script_path(a, plot))) return trainer_oom(t, err);
  if ((lname || t->plot_path) && pd_comm_rank() == 0) {  /* rank 0 alone writes (and plots) */
    if (lname) t->log_path = given ? pd_train_script_path(a, lname) : pd_strdup(lname);
    else t->log_path = plot_log_name(t->plot_path);
    if (!t->log_path) return trainer_oom(t, err);
    if ((st = pd_train_log_open(r, a, t->log_path, t->resumed, t->vd, &t->lg, err))) return st;
  }
  t->pg.bar = t->pg.out && (r->opts.progress_mode == PD_PROGRESS_BAR ||
                            (r->opts.progress_mode == PD_PROGRESS_AUTO &&
                             isatty(fileno(t->pg.out))));
  /* Lines: a tenth of an epoch, but no more than one a second (an epoch of the char RNN takes
   * 20 ms: ten lines in it woke the reader of the pipe ten times, which took a core from the
   * training); log_every = N: every N steps exactly. */
  t->pg.every = pd_train_opt_int(&t->o, PD_TOPT_log_every, t->steps >= 10 ? t->steps / 10 : 1);
  t->pg.min_gap = pd_train_opt_given(&t->o, PD_TOPT_log_every) ? 0 : 1.0;
  if (!t->pg.bar) t->pg.last_draw = pd_train_now();
  t->lr = pd_optimizer_lr(&t->opt, t->gstep, t->total);
  return PD_OK;
}

/* One step: the next batch through the training program. *ran: 1 when it ran, 0 when the batch
 * was one that a resumed epoch already ran, -1 when the reader had no more. */
static pd_status trainer_step(trainer *t, int64_t s, int *ran, pd_error *err) {
  int64_t rows;
  pd_status st;
  *ran = -1;
  if ((st = pd_batcher_next(t->bt, t->f.fields, &rows, err)) || rows == 0) return st;
  *ran = 0;
  if (s < t->skip) return PD_OK;  /* resuming mid-epoch: the same batches, not run again */
  t->lr = pd_optimizer_lr(&t->opt, t->gstep, t->total);
  if ((st = set_lr(t->r, t->lr, err)) || (st = feeder_batch(&t->f, rows, t->a->loc, err)))
    return st;
  pd_exec_fetch fetch = {t->cost, &t->loss_t};
  pd_exec_io io = {.nfeeds = t->f.n, .feeds = t->f.feeds, .nfetches = 1, .fetches = &fetch};
  if ((st = pd_exec_run(t->ex, t->r->global, &io, NULL, err))) return st;
  t->loss = t->loss_t.dtype == PD_FP64 ? PD_TENSOR_F64(&t->loss_t)[0]
                                       : PD_TENSOR_F32(&t->loss_t)[0];
  if (!isfinite(t->loss))
    return pd_error_set(err, PD_ERUNTIME, t->a->loc,
                        "train: the loss became %s at epoch %d step %lld; lower the learning "
                        "rate, or run with --check-nan-inf to find the op",
                        isnan(t->loss) ? "NaN" : "Inf", t->epoch + 1, (long long)s + 1);
  t->sum += t->loss * (double)rows;
  t->samples += rows;
  t->done = s + 1;
  t->gstep++;
  t->step_el = pd_train_now() - t->t0;
  *ran = 1;
  return PD_OK;
}

/* The loop: epochs of steps, the hooks after each. */
static pd_status trainer_run(trainer *t, pd_error *err) {
  pd_status st = PD_OK;
  for (t->epoch = t->first_epoch; t->epoch < t->epochs && !t->stop; t->epoch++) {
    if ((st = pd_batcher_start_epoch(t->bt, t->epoch))) return st;
    t->t0 = pd_train_now();
    t->sum = 0;
    t->samples = t->done = 0;
    for (int64_t s = 0; s < t->steps; s++) {
      int ran;
      if ((st = trainer_step(t, s, &ran, err))) return st;
      if (ran < 0) break;
      if (!ran) continue;
      for (size_t h = 0; h < PD_ARRAY_LEN(hooks); h++)
        if (hooks[h].step && (st = hooks[h].step(t, err))) return st;
      if (t->stop) break;
    }
    t->skip = 0;
    t->epoch_el = pd_train_now() - t->t0;
    for (size_t h = 0; h < PD_ARRAY_LEN(hooks); h++)
      if (hooks[h].epoch && (st = hooks[h].epoch(t, err))) return st;
  }
  for (size_t h = 0; h < PD_ARRAY_LEN(hooks); h++)
    if (hooks[h].finish && (st = hooks[h].finish(t, err))) return st;
  return PD_OK;
}

pd_status pd_run_train(pd_runner *r, const pd_action *a, pd_error *err) {
  trainer *t = pd_calloc(1, sizeof *t);
  if (!t) return pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  t->r = r;
  t->a = a;
  t->cost = a->args[0]->str;
  pd_train_opts_from_action(a, &t->o);
  t->batch = pd_train_opt_int(&t->o, PD_TOPT_batch, 0);
  t->epochs = pd_train_opt_int(&t->o, PD_TOPT_epochs, 0);
  t->seed = (uint64_t)pd_train_opt_int(&t->o, PD_TOPT_seed, (int64_t)r->opts.seed);
  t->drop_last = pd_train_opt_bool(&t->o, PD_TOPT_drop_last);
  t->nranks = pd_comm_size();
  pd_buf_init(&t->line);
  pd_buf_init(&t->line2);
  pd_tensor_init(&t->loss_t);
  pd_status st = parse_optimizer(a, &t->opt, err);
  const char *ckpt = pd_train_opt_str(&t->o, PD_TOPT_checkpoint, NULL, 0);
  if (!st && ckpt && !(t->ckpt = pd_train_script_path(a, ckpt))) st = trainer_oom(t, err);
  if (!st) st = trainer_start(t, err);
  if (!st) st = trainer_run(t, err);
  if (t->scheduled && schedule_save(r, t->cost, &t->opt, t->gstep, t->total) && !st)
    st = trainer_oom(t, err);
  pd_train_log_close(t->lg);
  pd_free(t->log_path);
  pd_free(t->plot_path);
  pd_buf_free(&t->line);
  pd_buf_free(&t->line2);
  pd_valid_free(t->vd);
  feeder_release(&t->f);
  pd_tensor_release(&t->loss_t);
  pd_batcher_free(t->bt);
  pd_dataset_free(t->ds);
  pd_exec_free(t->ex);
  pd_program_free(t->init);
  pd_program_free(t->p);
  pd_free(t->ckpt);
  pd_free(t);
  return pd_run_at_loc(err, st, a->loc, NULL);
}

pd_status pd_run_train_program(const pd_unit *unit, int nranks, bool startup, pd_program **out,
                               pd_error *err) {
  *out = NULL;
  if (startup) {
    pd_program *p = pd_program_clone(unit->startup);
    if (!p) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
    pd_status st = nranks > 1 ? pd_program_broadcast_params(p, (pd_loc){0}, err) : PD_OK;
    if (st) pd_program_free(p);
    else *out = p;
    return st;
  }
  const pd_action *a = NULL;
  for (int i = 0; i < unit->nactions && !a; i++)
    if (unit->actions[i].kind == PD_ACTION_TRAIN) a = &unit->actions[i];
  if (!a) return pd_error_set(err, PD_ENOTFOUND, (pd_loc){0}, "the script has no train(...)");
  pd_optimizer o;
  pd_status st = parse_optimizer(a, &o, err);
  if (st) return st;
  pd_train_opts to;
  pd_train_opts_from_action(a, &to);
  pd_amp_scaling scaling;
  opts_scaling(&to, &scaling);
  pd_pipeline_options po = {.optimizer = &o, .loc = a->loc, .nranks = nranks,
                            .amp = opts_amp(&to),
                            .sync_batch_norm = pd_train_opt_bool(&to, PD_TOPT_sync_batch_norm),
                            .scaling = &scaling};
  pd_program *init = NULL;
  st = pd_pipeline_train(unit->main, a->args[0]->str, &po, out, &init, err);
  pd_program_free(init);
  return st;
}

/* ---------------------------------------------------------------- eval */

/* "accuracy.tmp_0" -> "accuracy": a metric's name for people. */
void pd_train_metric_name(const char *var, char *buf, size_t n) {
  snprintf(buf, n, "%s", var);
  char *dot = strstr(buf, ".tmp_");
  if (dot) *dot = 0;
}

/* The forward program of n one-element targets, run over a whole data set in test mode: eval,
 * and train's validation (train/train_int.h). */
struct pd_averager {
  pd_runner *r;
  const pd_action *a;
  const char *what;
  int n;
  const char *const *names;     /* borrowed */
  pd_tensor *vals;
  pd_exec_fetch *fetches;
  pd_program *p;
  pd_exec *ex;
  pd_dataset *ds;
  pd_batcher *bt;
  pd_image_augment aug;       /* the batcher's augmentation (it borrows them) */
  pd_batch_augment baug;
  feeder f;
};

void pd_averager_free(pd_averager *av) {
  if (!av) return;
  feeder_release(&av->f);
  for (int i = 0; av->vals && i < av->n; i++) pd_tensor_release(&av->vals[i]);
  pd_batcher_free(av->bt);
  pd_dataset_free(av->ds);
  pd_exec_free(av->ex);
  pd_program_free(av->p);
  pd_free(av->vals);
  pd_free(av->fetches);
  pd_free(av);
}

pd_status pd_averager_new(pd_runner *r, const pd_action *a, const char *what,
                          const pd_cval *spec, int64_t batch, bool shard, int n,
                          const char *const *names, pd_averager **out, pd_error *err) {
  *out = NULL;
  pd_averager *av = pd_calloc(1, sizeof *av);
  if (!av) return pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  *av = (pd_averager){.r = r, .a = a, .what = what, .n = n, .names = names};
  av->vals = pd_calloc((size_t)n + 1, sizeof *av->vals);
  av->fetches = pd_calloc((size_t)n + 1, sizeof *av->fetches);
  pd_status st = PD_OK;
  if (!av->vals || !av->fetches) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++) {
    pd_tensor_init(&av->vals[i]);
    av->fetches[i] = (pd_exec_fetch){names[i], &av->vals[i]};
  }
  if ((st = pd_run_prepare(r, n, names, a->loc, &av->p, &av->ex, err))) goto out;
  if ((st = pd_reader_open(r, a, spec, NULL, &av->ds, err))) goto out;
  pd_batcher_options bo = {.batch = batch, .prefetch = prefetch_pays(),
                            .shard_rank = shard ? pd_comm_rank() : 0,
                            .shard_count = shard ? pd_comm_size() : 1};
  if ((st = pd_batcher_new(av->ds, &bo, &av->bt, err))) goto out;
  st = feeder_init(r, a, pd_action_name(a->kind), av->p, av->ds, false, &av->f, err);
out:
  if (st) pd_averager_free(av);
  else *out = av;
  return st;
}

int64_t pd_averager_batches(const pd_averager *av) { return pd_batcher_num_batches(av->bt); }

pd_status pd_averager_each(pd_averager *av, pd_averager_fn fn, void *ctx, pd_error *err) {
  pd_runner *r = av->r;
  const pd_action *a = av->a;
  pd_status st = pd_batcher_start_epoch(av->bt, 0);
  if (st) return pd_error_set(err, st, a->loc, "%s: cannot start the reader", av->what);
  int64_t rows;
  for (;;) {
    if ((st = pd_batcher_next(av->bt, av->f.fields, &rows, err))) return st;
    if (rows == 0) break;
    if ((st = feeder_batch(&av->f, rows, a->loc, err))) return st;
    pd_exec_io io = {.nfeeds = av->f.n, .feeds = av->f.feeds, .nfetches = av->n,
                     .fetches = av->fetches};
    if ((st = pd_exec_run(av->ex, r->global, &io, NULL, err))) return st;
    if ((st = fn(ctx, av->vals, rows, err))) return st;
    if (r->opts.interrupt && *r->opts.interrupt)
      return pd_error_set(err, PD_EINTR, a->loc, "%s interrupted", av->what);
  }
  return PD_OK;
}

/* pd_averager_run's sums: each target's value of a batch, weighted by its rows. */
typedef struct sums {
  const pd_averager *av;
  double *means;
  int64_t *samples;
} sums;

static pd_status add_batch(void *ctx, const pd_tensor *vals, int64_t rows, pd_error *err) {
  sums *s = ctx;
  const pd_averager *av = s->av;
  for (int i = 0; i < av->n; i++) {
    const pd_tensor *t = &vals[i];
    if (pd_tensor_numel(t) != 1) {
      char sh[96];
      return pd_error_set(err, PD_EINVAL, av->a->loc,
                          "%s: a metric must be one value per batch (mean(...), "
                          "accuracy(...)); '%s' has shape %s",
                          av->what, av->names[i], pd_ctx_shape_str(t, sh, sizeof sh));
    }
    double v = t->dtype == PD_FP64    ? PD_TENSOR_F64(t)[0]
               : t->dtype == PD_FP32  ? PD_TENSOR_F32(t)[0]
               : t->dtype == PD_INT64 ? (double)PD_TENSOR_I64(t)[0]
                                      : (double)PD_TENSOR_I32(t)[0];
    s->means[i] += v * (double)rows;
  }
  *s->samples += rows;
  return PD_OK;
}

pd_status pd_averager_run(pd_averager *av, double *means, int64_t *samples, pd_error *err) {
  const pd_action *a = av->a;
  int n = av->n;
  for (int i = 0; i < n; i++) means[i] = 0;
  *samples = 0;
  sums s = {av, means, samples};
  pd_status st = pd_averager_each(av, add_batch, &s, err);
  if (st) return st;
  /* Several processes: each evaluated its shard; the metrics are the sums over every rank
   * divided by every rank's samples (not a mean of means). */
  if (pd_comm_size() > 1) {
    means[n] = (double)*samples;
    pd_error ce = {0};
    if ((st = pd_comm_allreduce_f64(means, n + 1, &ce))) {
      st = pd_error_set(err, st, a->loc, "%s: %s", av->what, ce.msg ? ce.msg : pd_status_str(st));
      pd_error_clear(&ce);
      return st;
    }
    *samples = (int64_t)means[n];
  }
  for (int i = 0; i < n && *samples; i++) means[i] /= (double)*samples;
  return PD_OK;
}

/* The fields the averager av feeds must be those that train's feeder f takes from ds: each data
 * var both read gets fields of the same dtype and per-sample shape (else PD_EINVAL at loc,
 * naming the var and both fields), so a validation reader that does not fit is refused before
 * training starts. */
static pd_status fields_like(const pd_averager *av, const feeder *f, const pd_dataset *ds,
                             pd_loc loc, pd_error *err) {
  for (int i = 0; i < av->f.n; i++)
    for (int j = 0; j < f->n; j++) {
      if (strcmp(av->f.vars[i], f->vars[j]) != 0) continue;
      int64_t vd[PD_TENSOR_MAX_DIMS], td[PD_TENSOR_MAX_DIMS];
      int vn = pd_dataset_field_shape(av->ds, av->f.field[i], vd);
      int tn = pd_dataset_field_shape(ds, f->field[j], td);
      pd_dtype vt = pd_dataset_field_dtype(av->ds, av->f.field[i]);
      pd_dtype tt = pd_dataset_field_dtype(ds, f->field[j]);
      bool same = vn == tn && vt == tt &&
                  pd_dataset_field_is_seq(av->ds, av->f.field[i]) ==
                      pd_dataset_field_is_seq(ds, f->field[j]);
      for (int k = 0; same && k < vn; k++) same = vd[k] == td[k];
      if (same) continue;
      char a1[96], a2[96];
      return pd_error_set(err, PD_EINVAL, loc,
                          "train: the validation reader (valid) feeds '%s' from its field '%s', "
                          "%s %s per sample, but the training reader from '%s', %s %s",
                          av->f.vars[i], pd_dataset_field_name(av->ds, av->f.field[i]),
                          pd_dtype_name(vt), pd_dims_str(vn, vd, a1, sizeof a1),
                          pd_dataset_field_name(ds, f->field[j]), pd_dtype_name(tt),
                          pd_dims_str(tn, td, a2, sizeof a2));
    }
  return PD_OK;
}

pd_status pd_run_eval(pd_runner *r, const pd_action *a, pd_error *err) {
  int n = a->nargs;
  const char **names = pd_calloc((size_t)n + 1, sizeof *names);
  double *means = pd_calloc((size_t)n + 1, sizeof *means);
  pd_averager *av = NULL;
  pd_status st = PD_OK;
  if (!names || !means) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++) names[i] = a->args[i]->str;
  double t0 = pd_train_now();
  if ((st = pd_averager_new(r, a, "eval", opt(a, "reader"), opt_int(a, "batch", 256), true, n,
                            names, &av, err)))
    goto out;
  int64_t samples;
  if ((st = pd_averager_run(av, means, &samples, err))) goto out;
  if (r->opts.out) {
    fprintf(r->opts.out, "eval:");
    for (int i = 0; i < n; i++) {
      char mn[128];
      pd_train_metric_name(names[i], mn, sizeof mn);
      const char *label = a->arg_text && a->arg_text[i] ? a->arg_text[i] : mn;
      fprintf(r->opts.out, "%s %s = %.4f", i ? "," : "", label, means[i]);
    }
    fprintf(r->opts.out, " (%lld samples, %.1f s)\n", (long long)samples, pd_train_now() - t0);
    fflush(r->opts.out);
  }
out:
  pd_averager_free(av);
  pd_free(names);
  pd_free(means);
  return pd_run_at_loc(err, st, a->loc, NULL);
}
