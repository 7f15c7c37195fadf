/* train.c -- the actions that run a program over data or move its parameters to and from disk:
 *   train(cost, reader=, batch=, epochs=, optimizer=, shuffle=, drop_last=, seed=, checkpoint=,
 *         log_every=, valid=, metrics=, valid_every=, valid_every_steps=, early_stop=, monitor=,
 *         mode=, keep_best=, log=, plot=)
 *       builds the training program of the cost (vm/passes/pipeline.h: the main program pruned to
 *       the cost, rewritten, its backward pass and the optimizer's updates), and runs it once
 *       per minibatch in a fresh scope under the global one, with progress on the progress
 *       stream; Ctrl-C stops after the minibatch; the validation options are
 *       lang/train_valid.c's, the log lang/train_log.c's, the plot lang/plot.c's;
 *   eval(metric, ..., reader=, batch=) runs the pruned forward program over a whole data set
 *       and prints each metric averaged over the samples;
 *   save and load are lang/train_save.c's.
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
#include "lang/run_int.h"
#include "vm/ir/serialize.h"
#include "lang/train.h"
#include "vm/passes/data_parallel.h"
#include "lang/plot.h"
#include "lang/train_int.h"
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

static bool opt_bool(const pd_action *a, const char *key, bool def) {
  const pd_cval *v = opt(a, key);
  return v && v->kind == PD_CVAL_BOOL ? v->b : def;
}

static const char *opt_str(const pd_action *a, const char *key) {
  const pd_cval *v = opt(a, key);
  return v && v->kind == PD_CVAL_STRING ? v->str : NULL;
}

/* train's amp = "bf16" | "fp16": the precision of the products under mixed precision (the
 * compiler checked the value); PD_FP32 without. */
static pd_dtype opt_amp(const pd_action *a) {
  const char *s = opt_str(a, "amp");
  return s && strcmp(s, "bf16") == 0 ? PD_BF16 : s && strcmp(s, "fp16") == 0 ? PD_FP16 : PD_FP32;
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

static bool num(const pd_cval *v, double *out) {
  if (!v) return false;
  if (v->kind == PD_CVAL_INT) *out = (double)v->i;
  else if (v->kind == PD_CVAL_FLOAT) *out = v->f;
  else return false;
  return true;
}

/* fp16's loss scaling: Paddle's defaults, then train's options (checked by the compiler). */
static void opt_scaling(const pd_action *a, pd_amp_scaling *s) {
  pd_amp_scaling_defaults(s);
  num(opt(a, "loss_scale"), &s->loss_scale);
  s->dynamic = opt_bool(a, "dynamic_loss_scaling", true);
  s->incr_every_n_steps = (int)opt_int(a, "incr_every_n_steps", s->incr_every_n_steps);
  s->decr_every_n_nan_or_inf =
      (int)opt_int(a, "decr_every_n_nan_or_inf", s->decr_every_n_nan_or_inf);
  num(opt(a, "incr_ratio"), &s->incr_ratio);
  num(opt(a, "decr_ratio"), &s->decr_ratio);
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

/* lines(paths, min_length = 1, max_length = none, split = none, test_every = 5, valid, seed,
 * pad_to = none); the compiler
 * has checked the arguments' kinds and ranges. */
static pd_status open_lines(const pd_action *a, const pd_cval *spec, pd_dataset **out,
                            pd_error *err) {
  const pd_cval *p = pd_cval_field(spec, "paths");
  const pd_cval *minl = pd_cval_field(spec, "min_length");
  const pd_cval *maxl = pd_cval_field(spec, "max_length");
  const pd_cval *split = pd_cval_field(spec, "split");
  const pd_cval *every = pd_cval_field(spec, "test_every");
  const pd_cval *padt = pd_cval_field(spec, "pad_to");
  pd_lines_options o = {
      .min_length = minl && minl->kind == PD_CVAL_INT ? minl->i : 1,
      .max_length = maxl && maxl->kind == PD_CVAL_INT ? maxl->i : 0,
      .split = !split || split->kind != PD_CVAL_STRING ? PD_LINES_ALL
               : strcmp(split->str, "test") == 0     ? PD_LINES_TEST
                                                     : PD_LINES_TRAIN,  /* "train", "valid" */
      .test_every = every && every->kind == PD_CVAL_INT ? every->i : 5,
      .pad_to = padt && padt->kind == PD_CVAL_INT ? padt->i : 0};
  int n = !p ? 0 : p->kind == PD_CVAL_LIST ? p->n : p->kind == PD_CVAL_STRING ? 1 : 0;
  char **paths = pd_calloc((size_t)n + 1, sizeof *paths);
  pd_status st = paths ? PD_OK : PD_ENOMEM;
  for (int i = 0; i < n && !st; i++) {
    const pd_cval *v = p->kind == PD_CVAL_LIST ? p->items[i] : p;
    if (!(paths[i] = pd_train_script_path(a, v->kind == PD_CVAL_STRING ? v->str : ""))) st = PD_ENOMEM;
  }
  if (st) st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  else st = pd_dataset_lines(n, (const char *const *)paths, &o, out, err);
  for (int i = 0; paths && i < n; i++) pd_free(paths[i]);
  pd_free(paths);
  return st;
}

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

/* A validation split (split = "valid", or "train" with valid = F; the compiler checked the
 * arguments): *ds becomes its part (vm/reader/reader.h, pd_dataset_split). */
static pd_status apply_split(const pd_cval *spec, pd_dataset **ds, pd_error *err) {
  const pd_cval *split = pd_cval_field(spec, "split");
  const char *s = split && split->kind == PD_CVAL_STRING ? split->str : "";
  double frac = 0.1;
  bool given = num(pd_cval_field(spec, "valid"), &frac);
  bool held_out = strcmp(s, "valid") == 0;
  if (!held_out && !(given && strcmp(s, "train") == 0)) return PD_OK;
  const pd_cval *seed = pd_cval_field(spec, "seed");
  pd_dataset *part = NULL;
  uint64_t sd = seed && seed->kind == PD_CVAL_INT ? (uint64_t)seed->i : 0;
  pd_status st = pd_dataset_split(*ds, frac, sd, held_out, &part, err);
  if (st) {
    pd_error_prefix(err, "%s", spec->str);  /* name the reader */
    return st;
  }
  pd_dataset_free(*ds);
  *ds = part;
  return PD_OK;
}

/* note: where the images reader lists its classes (NULL: nowhere). */
static pd_status open_reader(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                             pd_dataset **out, pd_error *err) {
  *out = NULL;
  if (!spec || spec->kind != PD_CVAL_RECORD)
    return pd_error_set(err, PD_EINVAL, a->loc, "%s needs a reader, e.g. reader = "
                        "fashion_mnist(\"train\")", pd_action_name(a->kind));
  const char *name = spec->str;
  const pd_cval *f0 = pd_cval_field(spec, "split");
  /* Errors from reading point at the argument naming the file, else at the reader's call. */
  pd_loc at = pd_cval_field_loc(spec, "path", a->loc);
  pd_status st;
  if (strcmp(name, "fashion_mnist") == 0 || strcmp(name, "mnist") == 0) {
    const char *split = f0 && f0->kind == PD_CVAL_STRING ? f0->str : "train";
    if (strcmp(split, "valid") == 0) split = "train";  /* held out of it below */
    if (strcmp(split, "train") && strcmp(split, "test"))
      return pd_error_set(err, PD_EINVAL, pd_cval_field_loc(spec, "split", at),
                          "%s: split must be \"train\", \"valid\" or \"test\", not \"%s\"",
                          name, split);
    const pd_cval *p = pd_cval_field(spec, "path");
    char *dir = p && p->kind == PD_CVAL_STRING ? pd_train_script_path(a, p->str) : NULL;
    st = pd_dataset_mnist(name, split, dir, out, err);
    pd_free(dir);
  } else if (strcmp(name, "csv") == 0) {
    const pd_cval *p = pd_cval_field(spec, "path");
    const pd_cval *label = pd_cval_field(spec, "label");
    const pd_cval *feats = pd_cval_field(spec, "features");
    const char *fnames[256];
    int nf = 0;
    if (feats && feats->kind == PD_CVAL_LIST)
      for (int i = 0; i < feats->n && nf < 256; i++)
        if (feats->items[i]->kind == PD_CVAL_STRING) fnames[nf++] = feats->items[i]->str;
    const pd_cval *hdr = pd_cval_field(spec, "header");
    if (hdr && hdr->kind == PD_CVAL_BOOL && !hdr->b)
      return pd_error_set(err, PD_EUNSUPPORTED, pd_cval_field_loc(spec, "header", at),
                          "csv: files without a header row are not supported yet (add a first "
                          "line naming the columns)");
    char *path = pd_train_script_path(a, p && p->kind == PD_CVAL_STRING ? p->str : "");
    if (!path) return pd_error_set(err, PD_ENOMEM, at, "out of memory");
    const pd_cval *cats = pd_cval_field(spec, "categorical");
    const char *cnames[256];
    int nc = 0;
    if (cats && cats->kind == PD_CVAL_LIST)
      for (int i = 0; i < cats->n && nc < 256; i++)
        if (cats->items[i]->kind == PD_CVAL_STRING) cnames[nc++] = cats->items[i]->str;
    if (nc && !r->categories && !(r->categories = pd_categories_new())) {
      pd_free(path);
      return pd_error_set(err, PD_ENOMEM, at, "out of memory");
    }
    pd_csv_options co = {.label = label && label->kind == PD_CVAL_STRING ? label->str : NULL,
                         .nfeatures = nf, .features = nf ? fnames : NULL, .ncategorical = nc,
                         .categorical = nc ? cnames : NULL, .categories = r->categories};
    const pd_cval *delim = pd_cval_field(spec, "delimiter"), *fill = pd_cval_field(spec, "fill");
    if (delim && delim->kind == PD_CVAL_STRING) co.delimiter = delim->str[0];
    if (fill && (fill->kind == PD_CVAL_INT || fill->kind == PD_CVAL_FLOAT)) {
      co.has_fill = true;
      co.fill = fill->kind == PD_CVAL_INT ? (double)fill->i : fill->f;
    }
    st = pd_dataset_csv_opts(path, &co, out, err);
    pd_free(path);
  } else if (strcmp(name, "npy") == 0) {
    const pd_cval *p = pd_cval_field(spec, "path");
    const pd_cval *lp = pd_cval_field(spec, "label_path");
    char *path = pd_train_script_path(a, p && p->kind == PD_CVAL_STRING ? p->str : "");
    char *lpath = lp && lp->kind == PD_CVAL_STRING ? pd_train_script_path(a, lp->str) : NULL;
    st = path ? pd_dataset_npy(path, lpath, out, err) : PD_ENOMEM;
    pd_free(path);
    pd_free(lpath);
  } else if (strcmp(name, "text") == 0) {
    const pd_cval *p = pd_cval_field(spec, "path");
    const pd_cval *len = pd_cval_field(spec, "length");
    char *path = pd_train_script_path(a, p && p->kind == PD_CVAL_STRING ? p->str : "");
    st = path ? pd_dataset_text(path, len && len->kind == PD_CVAL_INT ? len->i : 32, out, err)
              : PD_ENOMEM;
    pd_free(path);
  } else if (strcmp(name, "lines") == 0) {
    at = pd_cval_field_loc(spec, "paths", a->loc);
    st = open_lines(a, spec, out, err);
  } else if (strcmp(name, "host") == 0) {   /* the C library's pd_state_set_dataset */
    const pd_cval *n = pd_cval_field(spec, "name");
    at = pd_cval_field_loc(spec, "name", a->loc);
    const char *dname = n && n->kind == PD_CVAL_STRING ? n->str : "";
    st = r->opts.host_dataset
             ? r->opts.host_dataset(r->opts.host_ctx, dname, out, err)
             : pd_error_set(err, PD_ENOTFOUND, at, "host: no data set named '%s': host(...) "
                            "reads the data sets of a program embedding pdlang "
                            "(pd_state_set_dataset), and this run has none", dname);
  } else if (pd_train_is_images(spec)) {
    const pd_cval *p = pd_cval_field(spec, "path");
    char *dir = pd_train_script_path(a, p && p->kind == PD_CVAL_STRING ? p->str : "");
    st = dir ? pd_train_images_open(spec, dir, note, out, err) : PD_ENOMEM;
    pd_free(dir);
    if (!st) { /* what save writes beside a model this input feeds */
      pd_train_images_options(spec, &r->image_prep);
      r->has_image_prep = true;
    }
  } else {
    return pd_error_set(err, PD_EINVAL, spec->loc.line > 0 ? spec->loc : a->loc,
                        "unknown reader '%s'", name);
  }
  if (!st) st = apply_split(spec, out, err);
  return pd_run_at_loc(err, st, at, NULL);
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

static double elem(const pd_tensor *t, int64_t i) {
  const void *d = pd_tensor_data(t);
  switch (t->dtype) {
    case PD_FP32: return ((const float *)d)[i];
    case PD_FP64: return ((const double *)d)[i];
    case PD_INT64: return (double)((const int64_t *)d)[i];
    case PD_INT32: return ((const int32_t *)d)[i];
    case PD_INT16: return ((const int16_t *)d)[i];
    case PD_UINT8: case PD_BOOL: return ((const uint8_t *)d)[i];
    case PD_INT8: return ((const int8_t *)d)[i];
    case PD_FP16: return pd_fp16_to_f32(((const uint16_t *)d)[i]);
    case PD_BF16: return pd_bf16_to_f32(((const uint16_t *)d)[i]);
    default: return 0;
  }
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
    double v = elem(src, k);
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
  pd_status st = open_reader(r, a, spec, NULL, &ds, err);
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

static pd_status parse_optimizer(const pd_action *a, pd_optimizer *o, pd_error *err) {
  const pd_cval *spec = opt(a, "optimizer");
  pd_optimizer_defaults(o, PD_OPT_SGD, 0.01);
  if (!spec) return PD_OK;
  const char *name = spec->str;
  pd_opt_kind kind = strcmp(name, "adam") == 0       ? PD_OPT_ADAM
                     : strcmp(name, "adamw") == 0    ? PD_OPT_ADAMW
                     : strcmp(name, "rmsprop") == 0  ? PD_OPT_RMSPROP
                     : strcmp(name, "adagrad") == 0  ? PD_OPT_ADAGRAD
                     : strcmp(name, "momentum") == 0 ? PD_OPT_MOMENTUM
                                                     : PD_OPT_SGD;
  double lr = 0.01;
  num(pd_cval_field(spec, "learning_rate"), &lr);
  pd_optimizer_defaults(o, kind, lr);
  double v;
  if (num(pd_cval_field(spec, "mu"), &v)) o->mu = v;
  if (kind == PD_OPT_RMSPROP && num(pd_cval_field(spec, "momentum"), &v)) o->mu = v;
  if (num(pd_cval_field(spec, "rho"), &v)) o->rho = v;
  if (num(pd_cval_field(spec, "initial_accumulator_value"), &v)) o->init_acc = v;
  const pd_cval *nest = pd_cval_field(spec, "use_nesterov");
  if (nest && nest->kind == PD_CVAL_BOOL) o->nesterov = nest->b;
  const pd_cval *cent = pd_cval_field(spec, "centered");
  if (cent && cent->kind == PD_CVAL_BOOL) o->centered = cent->b;
  if (num(pd_cval_field(spec, "beta1"), &v)) o->beta1 = v;
  if (num(pd_cval_field(spec, "beta2"), &v)) o->beta2 = v;
  if (num(pd_cval_field(spec, "epsilon"), &v)) o->epsilon = v;
  if (num(pd_cval_field(spec, "weight_decay"), &v)) o->weight_decay = v;
  if (num(pd_cval_field(spec, "clip_norm"), &v)) o->clip_norm = v;
  if (num(pd_cval_field(spec, "decay_steps"), &v)) o->decay_steps = (int64_t)v;
  if (num(pd_cval_field(spec, "decay_rate"), &v)) o->decay_rate = v;
  if (num(pd_cval_field(spec, "warmup_steps"), &v)) o->warmup_steps = (int64_t)v;
  const pd_cval *sch = pd_cval_field(spec, "lr_schedule");
  if (sch && sch->kind == PD_CVAL_STRING) {
    if (strcmp(sch->str, "step") == 0) o->schedule = PD_LR_STEP;
    else if (strcmp(sch->str, "cosine") == 0) o->schedule = PD_LR_COSINE;
    else if (strcmp(sch->str, "constant") != 0)
      return pd_error_set(err, PD_EINVAL, a->loc, "%s: lr_schedule is \"constant\", \"step\" "
                          "or \"cosine\", not \"%s\"", name, sch->str);
    if (o->schedule == PD_LR_STEP && o->decay_steps <= 0)
      return pd_error_set(err, PD_EINVAL, a->loc, "%s: lr_schedule = \"step\" needs decay_steps",
                          name);
  }
  if (!(o->lr > 0))
    return pd_error_set(err, PD_EINVAL, a->loc, "%s: the learning rate must be positive", name);
  return PD_OK;
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
static pd_status train_setup(const pd_runner *r, const pd_action *a, const pd_program *p,
                             const pd_optimizer *o, int64_t batch, bool drop_last,
                             const pd_valid *vd, char *out) {
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
  const pd_cval *rd = opt(a, "reader");
  if (rd) pd_cval_format(rd, &b);
  pd_buf_printf(&b, ", batch %lld%s", (long long)batch, drop_last ? ", drop_last" : "");
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

/* Rank 0 alone writes checkpoints (every rank holds the same values); each rank of a later run
 * resumes from it. */
static pd_status save_checkpoint(pd_runner *r, const pd_program *p, const char *path,
                                 const pd_ckpt_meta *meta, pd_error *err) {
  if (pd_comm_rank() != 0) return PD_OK;
  const char **names;
  int n = pd_train_persistables(r, p, &names);
  if (n < 0) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  pd_status st = pd_checkpoint_save(path, r->global, n, names, meta, err);
  pd_free(names);
  return st;
}

/* The log a plot draws when train names no other: "curves.png" -> "curves.csv". Heap. */
static char *plot_log_name(const char *png) {
  size_t n = strlen(png);
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "%.*s.csv", (int)(n > 4 && strcmp(png + n - 4, ".png") == 0 ? n - 4 : n), png);
  return pd_buf_take(&b);
}

pd_status pd_run_train(pd_runner *r, const pd_action *a, pd_error *err) {
  const char *cost = a->args[0]->str;
  int64_t batch = opt_int(a, "batch", 64), epochs = opt_int(a, "epochs", 1);
  uint64_t seed = (uint64_t)opt_int(a, "seed", (int64_t)r->opts.seed);
  bool shuffle = opt_bool(a, "shuffle", true), drop_last = opt_bool(a, "drop_last", false);
  pd_optimizer o;
  pd_status st = parse_optimizer(a, &o, err);
  if (st) return st;
  char *ckpt = opt_str(a, "checkpoint") ? pd_train_script_path(a, opt_str(a, "checkpoint")) : NULL;
  pd_program *p = NULL, *init = NULL;
  pd_exec *ex = NULL;
  pd_valid *vd = NULL;
  pd_train_log *lg = NULL;
  char *log_path = NULL, *plot_path = NULL;
  int64_t gstep = 0, total = 0;   /* the global step, the schedule's length */
  bool scheduled = false;         /* gstep counts: the schedule is recorded at the end */
  pd_buf line, line2;   /* the epoch's validation, and a note after it */
  pd_buf_init(&line);
  pd_buf_init(&line2);
  pd_dataset *ds = NULL;
  pd_batcher *bt = NULL;
  feeder f = {0};
  pd_tensor loss_t;
  pd_tensor_init(&loss_t);
  /* The program: forward for the cost, its backward pass, the updates (vm/passes/pipeline.h). */
  int nranks = pd_comm_size();
  pd_amp_scaling scaling;
  opt_scaling(a, &scaling);
  pd_pipeline_options po = {.optimizer = &o, .loc = a->loc, .nranks = nranks,
                            .amp = opt_amp(a), .scaling = &scaling};
  if (r->opts.place == PD_K_CUDA) {   /* GPU ranks need NCCL (vm/run/comm.h) */
    pd_error ge = {0};
    if ((st = pd_comm_gpu_check(&ge))) {
      st = pd_error_set(err, st, a->loc, "train: %s", ge.msg ? ge.msg : pd_status_str(st));
      pd_error_clear(&ge);
      goto out;
    }
  }
  if ((st = pd_pipeline_train(r->unit->main, cost, &po, &p, &init, err))) goto out;
  if ((st = pd_run_same_program(p, "training program", a->loc, err))) goto out;
  if ((st = pd_run_init_missing(r, init, err))) goto out;
  /* Validation: its reader is checked before training starts; its state joins the program. */
  if ((st = pd_valid_new(r, a, cost, &vd, err))) goto out;
  if (vd && (st = pd_valid_declare(vd, p, err))) goto out;
  pd_exec_options eo = pd_run_exec_options(r, seed ^ 0x9e3779b97f4a7c15ull, false);
  if ((st = pd_exec_new(p, &eo, &ex, err))) goto out;
  /* The data. */
  FILE *note = r->opts.progress_mode == PD_PROGRESS_NONE || pd_comm_rank() != 0
                   ? NULL : r->opts.progress;
  if ((st = open_reader(r, a, opt(a, "reader"), note, &ds, err))) goto out;
  pd_batcher_options bo = {.batch = batch, .shuffle = shuffle, .seed = seed,
                            .drop_last = drop_last, .prefetch = prefetch_pays(),
                            .shard_rank = pd_comm_rank(),
                            .shard_count = nranks, .equal_shards = true};
  /* Augmentations (images(..., crop_padding, flip)) in training only, seeded by train's seed. */
  pd_image_augment aug;
  pd_batch_augment baug;
  if (pd_train_images_augment(opt(a, "reader"), &aug)) {
    baug = pd_image_augmenter(&aug);
    bo.augment = &baug;
  }
  if ((st = pd_batcher_new(ds, &bo, &bt, err))) goto out;
  if ((st = feeder_init(r, a, "train", p, ds, false, &f, err))) goto out;
  if (vd && (st = fields_like(pd_valid_averager(vd), &f, ds, pd_train_opt_loc(a, "valid"), err)))
    goto out;
  int64_t steps = pd_batcher_num_batches(bt);
  if (steps == 0 && drop_last) {
    int64_t n = pd_dataset_size(ds);
    pd_buf why;
    pd_buf_init(&why);
    pd_buf_printf(&why, "the reader has %" PRId64 " sample%s", n, n == 1 ? "" : "s");
    if (nranks > 1) pd_buf_printf(&why, ", %" PRId64 " for each of the %d processes", n / nranks,
                                  nranks);
    st = pd_error_set(err, PD_EINVAL, pd_train_opt_loc(a, "drop_last"),
                      "train: drop_last = true leaves no batch: %s, fewer than one batch of %"
                      PRId64, why.oom ? "too few samples" : why.data, batch);
    pd_buf_free(&why);
    goto out;
  }
  total = steps * epochs;
  /* Resume. */
  pd_ckpt_meta meta = {0};
  bool resumed = false;
  int first_epoch = 0;
  int64_t skip = 0;
  progress pg = {.out = r->opts.progress_mode == PD_PROGRESS_NONE ? NULL : r->opts.progress};
  bool goes_on = schedule_resume(r, cost, &o, &gstep, &total);
  scheduled = true;
  if (goes_on && pg.out && gstep > 0)
    fprintf(pg.out, "train: the learning-rate schedule goes on from step %lld\n",
            (long long)gstep);
  char setup[PD_CKPT_SETUP_SIZE] = "";
  if (ckpt && (st = train_setup(r, a, p, &o, batch, drop_last, vd, setup))) {
    st = pd_error_set(err, st, a->loc, "out of memory");
    goto out;
  }
  if (ckpt && access(ckpt, F_OK) == 0) {
    if ((st = pd_checkpoint_load_setup(ckpt, r->global, p, setup, &meta, err))) {
      pd_run_at_loc(err, st, pd_train_opt_loc(a, "checkpoint"), "checkpoint");
      goto out;
    }
    resumed = true;
    first_epoch = (int)meta.epoch;
    skip = meta.step;
    gstep = meta.global_step;
    pd_exec_set_rng_offset(ex, meta.rng_offset);
    if (pd_valid_stopped(vd)) {
      if (pg.out)
        fprintf(pg.out, "%s: early stopping ended the run at epoch %lld; nothing to train\n",
                ckpt, (long long)first_epoch);
      first_epoch = (int)epochs;
    } else if (pg.out && first_epoch >= epochs)
      fprintf(pg.out, "%s: the run already finished its %lld epochs; nothing to train\n", ckpt,
              (long long)epochs);
    else if (pg.out)
      fprintf(pg.out, "resuming from %s: epoch %d, step %lld\n", ckpt, first_epoch + 1,
              (long long)skip);
  }
  /* The log: train's log =, else the run's --log, else with plot = "NAME.png" NAME.csv. */
  const char *lname = opt_str(a, "log") ? opt_str(a, "log") : r->opts.log_path;
  if (opt_str(a, "plot") && !(plot_path = pd_train_script_path(a, opt_str(a, "plot")))) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto out;
  }
  if ((lname || plot_path) && pd_comm_rank() == 0) {  /* rank 0 alone writes (and plots) */
    if (lname) log_path = opt_str(a, "log") ? pd_train_script_path(a, lname) : pd_strdup(lname);
    else log_path = plot_log_name(plot_path);
    if (!log_path) {
      st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
      goto out;
    }
    if ((st = pd_train_log_open(r, a, log_path, resumed, vd, &lg, err))) goto out;
  }
  pg.bar = pg.out && (r->opts.progress_mode == PD_PROGRESS_BAR ||
                      (r->opts.progress_mode == PD_PROGRESS_AUTO && isatty(fileno(pg.out))));
  /* Lines: a tenth of an epoch, but no more than one a second (an epoch of the char RNN takes
   * 20 ms: ten lines in it woke the reader of the pipe ten times, which took a core from the
   * training); log_every = N: every N steps exactly. */
  pg.every = opt_int(a, "log_every", steps >= 10 ? steps / 10 : 1);
  pg.min_gap = opt(a, "log_every") ? 0 : 1.0;
  if (!pg.bar) pg.last_draw = pd_train_now();
  pd_exec_fetch fetch = {cost, &loss_t};
  double lr = pd_optimizer_lr(&o, gstep, total);
  bool stop = false;
  for (int e = first_epoch; e < epochs && !st && !stop; e++) {
    if ((st = pd_batcher_start_epoch(bt, e))) break;
    pg.t0 = pd_train_now();
    double sum = 0;
    int64_t samples = 0, done = 0, rows;
    for (int64_t s = 0; s < steps; s++) {
      if ((st = pd_batcher_next(bt, f.fields, &rows, err))) goto out;
      if (rows == 0) break;
      if (s < skip) continue; /* resuming mid-epoch: the same batches, not run again */
      lr = pd_optimizer_lr(&o, gstep, total);
      if ((st = set_lr(r, lr, err))) goto out;
      if ((st = feeder_batch(&f, rows, a->loc, err))) goto out;
      pd_exec_io io = {.nfeeds = f.n, .feeds = f.feeds, .nfetches = 1, .fetches = &fetch};
      if ((st = pd_exec_run(ex, r->global, &io, NULL, err))) goto out;
      double loss = loss_t.dtype == PD_FP64 ? PD_TENSOR_F64(&loss_t)[0] : PD_TENSOR_F32(&loss_t)[0];
      if (!isfinite(loss)) {
        st = pd_error_set(err, PD_ERUNTIME, a->loc,
                          "train: the loss became %s at epoch %d step %lld; lower the learning "
                          "rate, or run with --check-nan-inf to find the op",
                          isnan(loss) ? "NaN" : "Inf", e + 1, (long long)s + 1);
        goto out;
      }
      sum += loss * (double)rows;
      samples += rows;
      done = s + 1;
      gstep++;
      pd_train_log_loss(lg, loss);
      if (lg && done % pg.every == 0 && done != steps) {
        double el = pd_train_now() - pg.t0;
        if ((st = pd_train_log_step(lg, e + 1, gstep, lr, el > 0 ? (double)(samples * nranks) / el : 0,
                                    pd_train_opt_loc(a, "log"), err)))
          goto out;
      }
      progress_step(&pg, e + 1, (int)epochs, done, steps, sum / (double)samples,
                    samples * nranks);
      /* valid_every_steps = N: validation after the call's steps N, 2N, ... (over its epochs). */
      if (vd) {
        double vsec, el = pd_train_now() - pg.t0;
        line.len = line2.len = 0;
        if ((st = pd_valid_step(vd, (int64_t)e * steps + done, &line, &line2, &stop, &vsec,
                                err)))
          goto out;
        if (line.oom || line2.oom) {
          st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
          goto out;
        }
        if (line.len) {
          step_validation_line(&pg, (int64_t)e * steps + done, e + 1, (int)epochs, line.data,
                               line2.len ? line2.data : NULL);
          if ((st = pd_train_log_valid(lg, e + 1, gstep, lr,
                                       el > 0 ? (double)(samples * nranks) / el : 0,
                                       pd_valid_last(vd),
                                       (pd_valid_improved(vd) ? PD_LOG_BEST : 0u) |
                                           (stop ? PD_LOG_STOP : 0u),
                                       pd_train_opt_loc(a, "log"), err)))
            goto out;
        }
        if (stop) break;
      }
      if (r->opts.interrupt && *r->opts.interrupt) {
        if (pg.bar) fputc('\n', pg.out);
        if (ckpt) {
          meta = (pd_ckpt_meta){.epoch = e, .step = done, .global_step = gstep,
                                .rng_offset = pd_exec_rng_offset(ex), .seed = seed};
          memcpy(meta.setup, setup, sizeof meta.setup);
          if ((st = save_checkpoint(r, p, ckpt, &meta, err))) {
            pd_run_at_loc(err, st, pd_train_opt_loc(a, "checkpoint"), "checkpoint");
            goto out;
          }
        }
        st = pd_error_set(err, PD_EINTR, a->loc, "training interrupted at epoch %d step %lld%s%s",
                          e + 1, (long long)done, ckpt ? "; checkpoint saved to " : "",
                          ckpt ? ckpt : "");
        goto out;
      }
    }
    skip = 0;
    double el = pd_train_now() - pg.t0, vsec = 0;
    bool estop = false;  /* a stop after a step (valid_every_steps) is already in stop */
    line.len = line2.len = 0;
    if (vd && (st = pd_valid_epoch(vd, e, &line, &line2, &estop, &vsec, err)))
      goto out;
    if (line.oom || line2.oom) {
      st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
      goto out;
    }
    stop = stop || estop;
    pg.valid_secs = vsec;
    /* A summary per epoch; for long runs of short epochs, about 20 in all (and each epoch that
     * validated). */
    int64_t every = epochs > 20 ? (epochs + 19) / 20 : 1;
    if ((e + 1) % every == 0 || e == first_epoch || e + 1 == epochs || line.len || stop)
      epoch_summary(&pg, e + 1, (int)epochs, samples ? sum / (double)samples : 0.0,
                    samples * nranks, el, lr, line.len ? line.data : "",
                    line2.len ? line2.data : NULL, nranks);
    if (lg && ((st = pd_train_log_step(lg, e + 1, gstep, lr, el > 0 ? (double)samples / el : 0,
                                       pd_train_opt_loc(a, "log"), err)) ||
               (st = pd_train_log_epoch(lg, e + 1, gstep, samples ? sum / (double)samples : 0.0,
                                        lr, el > 0 ? (double)samples / el : 0, pd_valid_last(vd),
                                        (pd_valid_improved(vd) ? PD_LOG_BEST : 0u) |
                                            (estop ? PD_LOG_STOP : 0u),
                                        pd_train_opt_loc(a, "log"), err))))
      goto out;
    if (ckpt) {
      meta = (pd_ckpt_meta){.epoch = e + 1, .step = 0, .global_step = gstep,
                            .rng_offset = pd_exec_rng_offset(ex), .seed = seed};
      memcpy(meta.setup, setup, sizeof meta.setup);
      if ((st = save_checkpoint(r, p, ckpt, &meta, err))) {
        pd_run_at_loc(err, st, pd_train_opt_loc(a, "checkpoint"), "checkpoint");
        goto out;
      }
    }
  }
  /* keep_best: the best epoch's parameters replace the model's. The checkpoint keeps the last
   * epoch's (a later call with more epochs goes on from them) and the best as NAME@BEST. */
  if (!st && vd) st = pd_valid_finish(vd, pg.out, err);
  /* plot = "NAME.png": the curves of the log, drawn when training ends. */
  if (!st && plot_path && log_path) {  /* log_path: rank 0 */
    pd_train_log_close(lg);
    lg = NULL;
    if ((st = pd_plot_log(log_path, plot_path, 0, 0, false, err)))
      pd_run_at_loc(err, st, pd_train_opt_loc(a, "plot"), "plot");
  }
out:
  if (scheduled && schedule_save(r, cost, &o, gstep, total) && !st)
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  pd_train_log_close(lg);
  pd_free(log_path);
  pd_free(plot_path);
  pd_buf_free(&line);
  pd_buf_free(&line2);
  pd_valid_free(vd);
  feeder_release(&f);
  pd_tensor_release(&loss_t);
  pd_batcher_free(bt);
  pd_dataset_free(ds);
  pd_exec_free(ex);
  pd_program_free(init);
  pd_program_free(p);
  pd_free(ckpt);
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
  pd_amp_scaling scaling;
  opt_scaling(a, &scaling);
  pd_pipeline_options po = {.optimizer = &o, .loc = a->loc, .nranks = nranks,
                            .amp = opt_amp(a), .scaling = &scaling};
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
 * and train's validation (lang/train_int.h). */
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
  if ((st = open_reader(r, a, spec, NULL, &av->ds, err))) goto out;
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
