/* api_int.h -- private to the C library (api/): the state behind include/pdlang.h's pd_state,
 * and the helpers of api/api.c that the other files of api/ share (the call's error record,
 * the options of the executor and the runner). Not installed; the shared library exports none
 * of these (libpdlang.la exports pd_state_* only).
 *
 * Ownership: the state owns everything its fields point to (pd_state_free releases it all),
 * but the names in inputs and outputs, which the program (unit or model) owns. The helpers
 * borrow the state for the call; a pd_error or pd_diags given to them stays the caller's. */
#ifndef PD_API_INT_H
#define PD_API_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "include/pdlang.h"
#include "api/api_data.h"
#include "base/base.h"
#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "vm/reader/reader.h"
#include "vm/run/exec.h"
#include "vm/run/model.h"

/* A tensor with a name: the feeds and the results. */
typedef struct pd_api_named {
  char *name;
  pd_tensor t;
} pd_api_named;

typedef struct pd_api_named_list {
  int n;
  size_t cap;
  pd_api_named *items;
} pd_api_named_list;

/* A top-level name of a script and the var of the global block it stands for (y -> the var
 * fc_1.tmp_1 in `y = fc(h, 10)`); var is NULL when the name is not a tensor. */
typedef struct pd_api_alias {
  char *name, *var;
} pd_api_alias;

struct pd_state {
  /* Settings, for the next compile or load. */
  FILE *out, *progress;
  uint64_t seed;
  bool check_nan_inf;
  volatile sig_atomic_t *interrupt;
  char *stdlib_dir;
  pd_k_place place;
  int gpu_index;

  /* A compiled script... */
  pd_source *src;
  pd_unit *unit;
  pd_runner *runner;
  /* ... the program last pruned for pd_state_run_targets, kept for the next run of the same
   * targets ... */
  pd_program *pruned;
  pd_exec *pruned_ex;
  char **pruned_names;
  int npruned;
  /* ... and the vars that the script's top-level names looked up so far stand for. */
  pd_api_alias *aliases;
  int naliases;
  size_t alias_cap;

  /* ... or a loaded model (model.program is NULL when none is), and the preprocessing of its
   * image input that save wrote beside it (has_prep false when there is none). */
  pd_model model;
  bool has_prep;
  pd_image_prep prep;
  /* The loaded model's path, and what fine-tunes and saves it (pd_state_train,
   * pd_state_save_model; NULL until the first): the script of api/api_finetune.h last compiled,
   * its unit, and the runner whose scope holds the parameters as trained. */
  char *model_path;
  pd_source *ft_src;
  pd_unit *ft_unit;
  pd_runner *ft_runner;

  /* Inputs and outputs (names borrowed from the program). */
  const char **inputs, **outputs;
  int ninputs, noutputs;

  pd_api_named_list feeds, results;

  /* The host program's data sets (pd_state_set_dataset), for host("NAME") readers. */
  pd_api_datasets data;

  /* The last call's error record; the strings point into the buffers below. */
  pd_error_info info;
  pd_buf msg, text;
  char *file;
};

/* ---- the error record of the call (every entry point begins it, and ends with ok or a fail) */

/* Reset the record at the start of a call. */
void pd_api_begin(pd_state *st);
/* The call succeeded: PD_RESULT_OK. */
int pd_api_ok(pd_state *st);
/* The call failed with s and the message fmt (printf), no location; returns s. */
int pd_api_fail(pd_state *st, pd_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record err (the location's file copied), rendered against src when its location points into
 * that script, or (in_unit) against the script unit's sources, its calls' lines too; returns
 * err's status (PD_ERUNTIME for none). */
int pd_api_fail_err(pd_state *st, const pd_error *err, const pd_source *src, bool in_unit);
/* The same for an error the runner or executor reported (pd_api_fail_err, in_unit). */
int pd_api_fail_run(pd_state *st, const pd_error *err);
/* A failed compile: the first error of d's rendered text gives the message and location; the
 * text becomes the record's text whole. Returns s. */
int pd_api_fail_diags(pd_state *st, pd_status s, const pd_diags *d);

/* ---- the state's programs */

/* Free a runner, the unit it runs and that unit's source, and set the three NULL: the state's
 * script (runner, unit, src) or its fine-tuning (ft_runner, ft_unit, ft_src). */
void pd_api_drop_run(pd_runner **runner, pd_unit **unit, pd_source **src);
/* Drop the named tensors of l (the list keeps its array for reuse). */
void pd_api_named_clear(pd_api_named_list *l);
/* What the executor of a model, or of a script's targets, runs with (the state's settings). */
pd_exec_options pd_api_exec_options(const pd_state *st);
/* What the runner of a script, or of a model's fine-tuning, runs with (the settings, the host's
 * data sets). */
pd_run_options pd_api_run_options(pd_state *st);

#endif /* PD_API_INT_H */
