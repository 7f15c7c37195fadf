/* run.h -- runs a compiled unit: the machine behind `pdlang run`, the REPL and the C library.
 *
 * A runner holds the global scope, where the parameters and optimizer state live. Creating one
 * runs the unit's startup program there (parameter initialisers) once. Each action then prunes
 * the main program to what its targets need (vm/passes/prune.h), runs that in a fresh child scope of
 * the global scope, and reports:
 *   print(v, ...)          each value as a framework prints it (tensors with shape, dtype, LoD)
 *   assert_close(a, b)     fails (PD_ERUNTIME at the call) when |a - b| > tol * (1 + |b|)
 *   train / eval / save / load   see train/train.c
 *
 * Errors come back in a pd_error whose location points at the .pd line of the op (or action) at
 * fault; render them with pd_diag_render_error and pd_unit_source.
 *
 * Implemented by train/runner.c (the runner), train/run.c (print, assert_close, the dispatch of
 * actions) and train/train.c; run.c calls train.c, both call runner.c (train/run_int.h).
 *
 * Ownership: the runner borrows the unit (which must outlive it) and owns the global scope. */
#ifndef PD_RUN_H
#define PD_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "train/unit.h"
#include "vm/run/scope.h"
#include "vm/reader/reader.h"
#include "vm/run/tensor.h"

typedef enum pd_progress_mode {
  PD_PROGRESS_AUTO,   /* a bar when `progress` is a terminal, plain lines otherwise */
  PD_PROGRESS_BAR,
  PD_PROGRESS_LINES,
  PD_PROGRESS_NONE,
} pd_progress_mode;

typedef struct pd_run_options {
  FILE *out;                          /* print's output; NULL: print writes nothing */
  FILE *progress;                     /* training progress and summaries; NULL: none */
  pd_progress_mode progress_mode;
  uint64_t seed;                      /* random initialisers and ops; the default 0 is a seed */
  bool check_nan_inf;                 /* see pd_exec_options */
  volatile sig_atomic_t *interrupt;   /* Ctrl-C: non-zero stops at the next op or minibatch */
  pd_k_place place;                   /* where ops compute (see pd_exec_options) */
  int gpu_index;                      /* which GPU, with place PD_K_CUDA (0: the first) */
  const char *log_path;               /* train's log for calls without log = (--log); NULL:
                                         none. Borrowed: must outlive the runner */
  /* The data sets of host("NAME") readers (the C library's pd_state_set_dataset): a new copy
   * of NAME's in *out (the caller's), or an error; NULL: none (pdlang run). host_ctx is
   * passed to it (borrowed: must outlive the runner). */
  pd_status (*host_dataset)(void *host_ctx, const char *name, pd_dataset **out,
                            pd_error *err);
  void *host_ctx;
} pd_run_options;

/* A device as users write it ("cpu", "gpu", "gpu:1", "cuda", "cuda:1"), for --device, the
 * PDLANG_DEVICE variable, the REPL's :device and the C API. PD_EINVAL with a message naming
 * what is accepted otherwise. */
pd_status pd_run_parse_device(const char *spec, pd_k_place *place, int *gpu_index,
                              pd_error *err);

typedef struct pd_runner pd_runner;

/* A runner for unit; runs its startup program. opts may be NULL (stdout, stderr, auto, seed 0). */
pd_status pd_runner_new(const pd_unit *unit, const pd_run_options *opts, pd_runner **out,
                        pd_error *err);
void pd_runner_free(pd_runner *r);   /* NULL is a no-op; frees the global scope */

/* Switch the runner to another unit, keeping the global scope: the new unit's startup ops run
 * only for the vars that hold no value yet, so parameters of the old unit with the same names
 * keep their trained values. For the REPL, which recompiles the session's statements each time
 * one is added: a statement that fails to compile never reaches the runner. The unit is
 * borrowed as in pd_runner_new; the old one may be freed after this returns. */
pd_status pd_runner_adopt(pd_runner *r, const pd_unit *unit, pd_error *err);

/* Compute on `place` from the next action on (the GPU is opened here: PD_EUNSUPPORTED with the
 * reason when there is none). Values already computed move when ops next read them. */
pd_status pd_runner_set_place(pd_runner *r, pd_k_place place, int gpu_index, pd_error *err);
pd_k_place pd_runner_place(const pd_runner *r);

pd_scope *pd_runner_scope(pd_runner *r);      /* the global scope */
const pd_unit *pd_runner_unit(const pd_runner *r);

/* Take the side files of the saved model at model_path as if this run's readers had made them,
 * so that save writes them beside the models it saves: its categories (MODEL.categories, as a
 * load(...) reads them) and its images' preprocessing (MODEL.preprocess); none there is no
 * error. For the C library's fine-tuning of a loaded model (api/api.c). */
pd_status pd_runner_side_files(pd_runner *r, const char *model_path, pd_error *err);

/* What an action changes in a runner, copied before it runs so that a failed action can be
 * undone (the C library undoes a failed fine-tuning so, api/api_finetune.c): the value of every
 * tensor variable of the global scope (the parameters, the optimizer's state such as Adam's
 * moments, the learning rate and its schedule's record), which variables there are, and where
 * the startup programs' random stream stands. The copies take as much memory as those tensors,
 * on their place (a GPU's tensors are copied on the GPU). Not kept: variables of other kinds
 * (tensor arrays), the unit (pd_runner_adopt), the readers' side data (categories, image
 * preprocessing) and the files an action wrote (a log, checkpoints).
 * Ownership: a pd_runner_saved owns its copies; pd_runner_restore consumes it. */
typedef struct pd_runner_saved pd_runner_saved;
/* Copy r's state into *out (NULL on failure): PD_ENOMEM with err's message, or PD_ERUNTIME when
 * a GPU tensor cannot be copied. */
pd_status pd_runner_save(pd_runner *r, pd_runner_saved **out, pd_error *err);
/* Put r back as it was when s was taken, and free s: each variable's value then (the copy is
 * moved in: nothing is allocated, so this works when memory has run out), the variables made
 * since erased, the random stream's place. PD_ENOMEM only when a variable that was erased
 * since (no action erases one) cannot be made again. */
pd_status pd_runner_restore(pd_runner *r, pd_runner_saved *s);
void pd_runner_saved_free(pd_runner_saved *s);   /* NULL is a no-op */

/* Run one action of the unit. */
pd_status pd_runner_action(pd_runner *r, const pd_action *a, pd_error *err);
/* Run every action of the unit in order, stopping at the first error. */
pd_status pd_runner_run_all(pd_runner *r, pd_error *err);

/* What `pdlang dump --train` shows: the training program that unit's first train action runs in
 * a job of nranks processes (data-parallel ops included when nranks > 1; train/train.c), or with
 * startup, the startup program of such a job (broadcasts when nranks > 1). *out is a new program
 * (pd_program_free). PD_ENOTFOUND when the script has no train action; the pipeline's errors. */
pd_status pd_run_train_program(const pd_unit *unit, int nranks, bool startup, pd_program **out,
                               pd_error *err);

/* The program that save(path, targets...), the action a of a unit whose main program is main,
 * writes: main pruned to the nt targets (var names of main; on return the names they have in
 * *out, the script's names for them), in test mode, then, when it has sequences or loops,
 * rewritten for PaddlePaddle (vm/passes/paddle_export.h). *out (pd_program_free) and *feeds, its
 * *nfeeds inputs (an array to pd_free; the names belong to *out) are set on PD_OK, and on
 * PD_EUNSUPPORTED, when the rewriting refused (err says why): *out is then the program before
 * it. r (NULL: none) is the runner whose scope's values a data var may hold already. Other
 * failures leave *out NULL. `pdlang decompile` checks a script against a saved model with it. */
pd_status pd_run_save_program(const pd_runner *r, const pd_program *main, const pd_action *a,
                              int nt, const char **targets, pd_program **out,
                              const char ***feeds, int *nfeeds, pd_error *err);

/* The REPL's :batch READER: the first `batch` samples of the reader `spec` (an argument of the
 * action a, whose location errors take) become the values of the main program's data vars
 * that it feeds, for pd_runner_compute and pd_runner_try_compute from then on (train, eval and
 * predict read their own readers); *samples: how many (the reader may have fewer). Errors
 * begin ":batch". pd_runner_unbind forgets them; pd_runner_nbound / pd_runner_bound list them
 * (name and value borrowed until the next bind or unbind). */
pd_status pd_runner_bind_batch(pd_runner *r, const pd_action *a, const pd_cval *spec,
                               int64_t batch, int64_t *samples, pd_error *err);
void pd_runner_unbind(pd_runner *r);
int pd_runner_nbound(const pd_runner *r);
const pd_tensor *pd_runner_bound(const pd_runner *r, int i, const char **name);

/* Compute vars of the main program's block 0 without data (or with the data :batch bound):
 * prune to them, run once, copy each into values[i] (caller's tensors). `why` names the caller
 * in errors ("print"), at loc. */
pd_status pd_runner_compute(pd_runner *r, int n, const char *const *names, pd_tensor *values,
                            const char *why, pd_loc loc, pd_error *err);
/* The same when the vars need no data; when they need a var that a reader feeds, nothing runs,
 * *needs_data is set and PD_OK returned (the REPL computes what a statement made, if it can). */
pd_status pd_runner_try_compute(pd_runner *r, int n, const char *const *names, pd_tensor *values,
                                pd_loc loc, bool *needs_data, pd_error *err);

#endif /* PD_RUN_H */
