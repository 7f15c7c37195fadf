/* run_int.h -- the runner's core (train/runner.c), which the actions build on: train/run.c (print,
 * assert_close, the dispatch) and train/train.c (train, eval, save, load). Private to train/.
 * Direction: run.c -> train.c (train/train.h) -> runner.c; runner.c calls neither, train.c never
 * calls run.c. */
#ifndef PD_RUN_INT_H
#define PD_RUN_INT_H

#include "train/run.h"
#include "vm/run/exec.h"
#include "vm/ir/program.h"

struct pd_runner {
  const pd_unit *unit;
  pd_run_options opts;
  pd_scope *global;
  uint64_t startup_rng;   /* where the startup programs' random stream stands */
  pd_buf noticed;         /* op types already reported as running on the CPU ("|a|b|") */
  pd_categories *categories; /* the CSV readers' categorical columns (NULL: none yet); owned */
  bool has_image_prep;    /* an images(...) reader opened: its options, which save writes */
  pd_image_options image_prep; /* beside a model that input feeds (MODEL.preprocess) */
  int nbound;             /* the REPL's :batch: data vars bound to one batch of a reader, */
  char **bound_names;     /* which pd_runner_compute feeds (names and tensors owned) */
  pd_tensor *bound;
};

/* Bind the data vars feeds[i].name to copies of feeds[i].value (the REPL's :batch), replacing
 * what was bound. PD_ENOMEM (then nothing is bound). */
pd_status pd_runner_bind(pd_runner *r, int n, const pd_exec_feed *feeds, pd_error *err);

/* The executor options of an action: the runner's seed (or `seed`), NaN checking, place, and
 * the notices of ops that stay on the CPU, each printed once per runner on opts.progress.
 * with_interrupt: the executor stops between ops on Ctrl-C (train checks between batches). */
pd_exec_options pd_run_exec_options(pd_runner *r, uint64_t seed, bool with_interrupt);

/* The data vars of a program: vars of block 0 that its ops read, that no op writes, and that are
 * neither persistable nor already holding a value in the global scope (a reader must feed them;
 * r may be NULL: no scope).
 * Up to cap names (borrowed from p) go to names; returns how many there are. */
int pd_run_data_vars(const pd_runner *r, const pd_program *p, const char **names, int cap);
/* The same without "that its ops read": every input data() declared (the REPL's :batch binds
 * them before any statement reads them). */
int pd_run_declared_data_vars(const pd_runner *r, const pd_program *p, const char **names,
                              int cap);

/* An error that has no line (from a file, a reader, feeding) gets loc, and its message the
 * prefix "what: " when what is not NULL; an error located in a file alone (a parameter file,
 * a checkpoint) then names the file after it, unless the message does. Returns st. */
pd_status pd_run_at_loc(pd_error *err, pd_status st, pd_loc loc, const char *what);

/* Inference: every op that has an is_test attribute (dropout) gets is_test = true. For the
 * programs that print, eval and save run or write. PD_ENOMEM or PD_OK. */
pd_status pd_run_set_test_mode(pd_program *p);

/* Prune the main program to targets (in test mode) and prepare it. *out_prog and *out_ex are the caller's to
 * free (pd_exec_free, then pd_program_free). Errors are placed at loc. */
pd_status pd_run_prepare(pd_runner *r, int n, const char *const *targets, pd_loc loc,
                         pd_program **out_prog, pd_exec **out_ex, pd_error *err);

/* Run the ops of init's block 0 whose outputs have no value in the global scope yet: the
 * startup program of a unit (again after pd_runner_adopt), an optimizer's state. */
pd_status pd_run_init_missing(pd_runner *r, const pd_program *init, pd_error *err);

/* An identity of a program (FNV-1a of its serialised bytes, source locations left out), for
 * checkpoints and for the data-parallel ranks' start-up check. PD_ENOMEM. */
pd_status pd_run_program_hash(const pd_program *p, uint64_t *hash);
/* Refuse a data-parallel job whose ranks run different programs: p's hash compared across the
 * ranks (vm/run/comm.h), the error at loc naming `what` and the first rank that differs. */
pd_status pd_run_same_program(const pd_program *p, const char *what, pd_loc loc, pd_error *err);

#endif /* PD_RUN_INT_H */
