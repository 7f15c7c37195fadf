/* train_int.h -- what train/train.c shares with train's validation (train/train_valid.c),
 * save / load (train/train_save.c) and predict (train/train_predict.c): the
 * averager, which runs the forward program of one-element targets over a whole data set in test
 * mode (eval, and the validation after an epoch), the model's parameters, metric names; and
 * the validation itself (valid = READER, metrics, early_stop, keep_best). Private to train/.
 *
 * Ownership: an averager or a validation borrows the runner and the action (both outlive it),
 * and owns its programs, executor, dataset and batcher; free it with its _free (NULL: no-op). */
#ifndef PD_TRAIN_INT_H
#define PD_TRAIN_INT_H

#include <stdio.h>

#include "base/base.h"
#include "train/run_int.h"
#include "vm/reader/reader.h"

/* ---- train/train.c ---- */

typedef struct pd_averager pd_averager;

/* The main program pruned to names[0..n) (in test mode), fed by the reader `spec` in batches
 * of `batch` in file order: with shard, this process's shard of it in a job of several (eval,
 * validation), else all of it (predict). `what` ("eval", "train: the validation reader")
 * begins its errors; names is borrowed. Errors are placed at the action. */
pd_status pd_averager_new(pd_runner *r, const pd_action *a, const char *what,
                          const pd_cval *spec, int64_t batch, bool shard, int n,
                          const char *const *names, pd_averager **out, pd_error *err);
/* One pass over the data set: after each batch of `rows` samples, fn(ctx, vals, rows, err)
 * with the n targets' values (borrowed until the next batch); fn's error stops the pass and is
 * returned. Ctrl-C stops between batches (PD_EINTR). */
typedef pd_status (*pd_averager_fn)(void *ctx, const pd_tensor *vals, int64_t rows,
                                    pd_error *err);
pd_status pd_averager_each(pd_averager *av, pd_averager_fn fn, void *ctx, pd_error *err);
/* How many batches a pass has. */
int64_t pd_averager_batches(const pd_averager *av);
/* One pass over the data set: means[i], the mean of target i over the samples (each batch's
 * value weighted by its rows); *samples, how many. means has room for n + 1 values (in a job of
 * several processes the sums and the sample count are added over the ranks). A target of more than one element is
 * PD_EINVAL naming it; Ctrl-C stops between batches (PD_EINTR). */
pd_status pd_averager_run(pd_averager *av, double *means, int64_t *samples, pd_error *err);
void pd_averager_free(pd_averager *av);

/* The persistable vars of p that hold a tensor in the global scope, sorted by name (heap array
 * of names borrowed from p); -1 on out of memory. */
int pd_train_persistables(pd_runner *r, const pd_program *p, const char ***out);

/* Seconds on the monotonic clock. */
double pd_train_now(void);

/* Where the action's option `key` was written (the action's call when it was not). */
pd_loc pd_train_opt_loc(const pd_action *a, const char *key);
/* Where the action's positional argument i was written (the action's call when unknown). */
pd_loc pd_train_arg_loc(const pd_action *a, int i);
/* A path named in a script: relative paths are taken from the script's folder when the file
 * is there, else from the working directory. Heap string (pd_free). */
char *pd_train_script_path(const pd_action *a, const char *path);

/* "accuracy.tmp_0" -> "accuracy": a metric's name for people (into buf, n bytes). */
void pd_train_metric_name(const char *var, char *buf, size_t n);

/* ---- train/train_valid.c ---- */

typedef struct pd_valid pd_valid;

/* The validation of a train action: NULL in *out when it has no valid = READER. Opens the
 * validation reader and checks that it feeds the program (an error names the validation
 * reader, at `valid`), names the metrics ("loss" for the cost, then each metric's var name
 * without ".tmp_N", made unique: "accuracy", "mean", "mean_2") and checks `monitor` against
 * them. */
pd_status pd_valid_new(pd_runner *r, const pd_action *a, const char *cost, pd_valid **out,
                       pd_error *err);
void pd_valid_free(pd_valid *v);

/* How many values a validation gives (the cost and the metrics), the name of value i ("loss",
 * "accuracy", ...: borrowed), and the values of the last epoch's validation (borrowed; NULL
 * when that epoch did not validate). */
int pd_valid_count(const pd_valid *v);
const char *pd_valid_name(const pd_valid *v, int i);
const double *pd_valid_last(const pd_valid *v);
/* Whether the last validation (as pd_valid_last) was the best so far of the monitored value. */
bool pd_valid_improved(const pd_valid *v);

/* The averager of the validation's cost and metrics (borrowed). */
pd_averager *pd_valid_averager(pd_valid *v);

/* What the validation adds to the training setup a checkpoint records (a line). */
void pd_valid_describe(const pd_valid *v, pd_buf *b);

/* Declares in the training program p (block 0, persistable, so that checkpoints carry them)
 * the validation's state: the early-stopping record, and with keep_best a copy NAME@BEST of
 * each parameter of the model; creates them in the global scope, the record fresh ("no best
 * yet") and the copies equal to the parameters. Call before the executor of p is made, and
 * before a checkpoint is loaded (which then overwrites them). */
pd_status pd_valid_declare(pd_valid *v, pd_program *p, pd_error *err);

/* Whether the record says that early stopping ended the run (a resumed checkpoint). */
bool pd_valid_stopped(const pd_valid *v);

/* After epoch `epoch` (0-based): when validation is due (after every valid_every-th epoch,
 * counted from the first, so that a resumed run validates the same epochs), evaluates the cost
 * and the metrics on the validation reader, appends ", valid loss 0.1234, valid accuracy
 * 0.9500" to line, updates the best value (keeping a copy of the parameters with keep_best)
 * and sets *stop when early_stop validations passed without a better value (a note why goes
 * to line2). *seconds: how long the validation took. */
pd_status pd_valid_epoch(pd_valid *v, int epoch, pd_buf *line, pd_buf *line2, bool *stop,
                         double *seconds, pd_error *err);

/* With valid_every_steps = N, after step `step` of the call (1-based, counted over its epochs
 * from its first, so that a resumed run validates the same steps): when step is a multiple of
 * N, the same as pd_valid_epoch (the best's "epoch" is then its step). A no-op otherwise, and
 * without valid_every_steps (pd_valid_epoch then validates by epochs and this never does). */
pd_status pd_valid_step(pd_valid *v, int64_t step, pd_buf *line, pd_buf *line2, bool *stop,
                        double *seconds, pd_error *err);

/* At the end of training: with keep_best, the best epoch's parameters (when an epoch was
 * validated) replace the model's, with a note on progress (which may be NULL). */
pd_status pd_valid_finish(pd_valid *v, FILE *progress, pd_error *err);

/* ---- train/train_log.c ---- */

typedef struct pd_train_log pd_train_log;

/* Open train's log at path (as the script names it, resolved): CSV, or JSON lines for a name
 * ending in .jsonl. It starts over unless the run resumed from a checkpoint (resumed) or an
 * earlier train call of this runner wrote it; then rows are appended. The CSV header:
 * kind,epoch,step,loss,lr,samples_per_s,time_s and valid_NAME for each of vd's values (vd may be
 * NULL). PD_EIO at `log` when it cannot be opened. */
pd_status pd_train_log_open(pd_runner *r, const pd_action *a, const char *path, bool resumed,
                            const pd_valid *vd, pd_train_log **out, pd_error *err);
void pd_train_log_close(pd_train_log *l);   /* NULL: no-op */
/* A step's loss, for the next step row (the mean of those since the last one). l may be NULL. */
void pd_train_log_loss(pd_train_log *l, double loss);
/* A step row ("step", the epoch (1-based), the global step, the mean loss since the last row,
 * the learning rate, samples/s, the seconds since the log opened), flushed; nothing when no
 * step was added since. An epoch row: the epoch's mean loss and the validation's values
 * (valid: NULL when it did not validate: empty cells, absent JSON keys). PD_EIO at loc when
 * the file cannot be written. l may be NULL. `marks` (epoch and validation rows): with
 * PD_LOG_BEST (the validation was the best so far) the same row again of kind "best", with
 * PD_LOG_STOP (early stopping ended the run there) of kind "stop". */
enum { PD_LOG_BEST = 1, PD_LOG_STOP = 2 };
pd_status pd_train_log_step(pd_train_log *l, int epoch, int64_t step, double lr, double sps,
                            pd_loc loc, pd_error *err);
pd_status pd_train_log_epoch(pd_train_log *l, int epoch, int64_t step, double loss, double lr,
                             double sps, const double *valid, unsigned marks, pd_loc loc,
                             pd_error *err);
/* A validation after a step (valid_every_steps): a step row with the validation's values (its
 * loss, the mean since the last row, empty when there was none). l may be NULL. */
pd_status pd_train_log_valid(pd_train_log *l, int epoch, int64_t step, double lr, double sps,
                             const double *valid, unsigned marks, pd_loc loc, pd_error *err);

/* ---- train/train_image.c ---- */

/* Whether spec is an images(...) reader. */
bool pd_train_is_images(const pd_cval *spec);
/* Its options: shape, mean and std per channel. */
void pd_train_images_options(const pd_cval *spec, pd_image_options *o);
/* The images of folder dir (resolved) as spec describes them; with note, a line on it naming
 * the classes and their numbers. */
pd_status pd_train_images_open(const pd_cval *spec, const char *dir, FILE *note,
                               pd_dataset **out, pd_error *err);
/* train's augmentation of an images(...) reader with crop_padding > 0 or flip = true into aug
 * (true); false for any other reader or spec. */
bool pd_train_images_augment(const pd_cval *spec, pd_image_augment *aug);

#endif /* PD_TRAIN_INT_H */
