/* model.h (vm/run) -- a saved inference model made ready to run: its program, its feed and fetch ops
 * (ordered by their "col" attribute), its parameters in a scope of its own, and its executor.
 * The one loader behind pd_state_load_model (api.c) and `pdlang exec` (driver/cmd_exec.c);
 * not installed.
 *
 * The steps are separate calls so that each caller checks what it must between them, with its
 * own messages: pd_model_load (program, feed and fetch ops), pd_model_load_params,
 * pd_model_prepare (the load-time passes of vm/passes/infer_opt.h unless no_optimize, the
 * products marked for bf16 with precision PD_BF16, then the executor), then per run pd_model_feed for each input and
 * pd_model_run. Errors carry no source location; out of memory is "out of memory".
 *
 * Ownership: a pd_model owns its program, scope, executor and io arrays; pd_model_free
 * releases them (and leaves the model zeroed). The io ops' var names and the list names are
 * borrowed from the program. A fed tensor is shared (pd_tensor_share), not copied, and the
 * feed list is emptied by pd_model_run; the fetch list it hands back lives in the model's
 * scope until the next run. */
#ifndef PD_VM_RUN_MODEL_H
#define PD_VM_RUN_MODEL_H

#include "base/base.h"
#include "vm/run/exec.h"
#include "vm/ir/program.h"
#include "vm/passes/infer_opt.h"
#include "vm/run/scope.h"
#include "vm/run/tensor.h"

/* A feed or fetch op: the var it feeds (its "Out") or fetches (its "X"), and its column. */
typedef struct pd_model_io {
  const char *var;
  int col;
} pd_model_io;

typedef struct pd_model {
  pd_program *program;
  pd_scope *scope;                     /* the parameters, then the runs' variables */
  pd_exec *ex;                         /* NULL until pd_model_prepare */
  pd_model_io *feeds, *fetches;        /* in column order: feeds[i].col == i */
  int nfeeds, nfetches;
  const char *feed_list, *fetch_list;  /* the FEED_MINIBATCH / FETCH_LIST vars; NULL: none */
  char *fluid_dir;                     /* Fluid's folder layout: the folder; else NULL */
  bool no_optimize;                    /* pd_model_prepare runs the program as loaded */
  pd_dtype precision;                  /* PD_BF16: pd_model_prepare marks the products to
                                          multiply in bf16 (vm/passes/amp.h), after the
                                          load-time passes; else (0, PD_FP32) fp32 */
  int amp_ops;                         /* how many it marked */
  pd_infer_opt_stats opt;              /* what pd_model_prepare's passes did */
} pd_model;

/* Fluid's folder layout: the program file, and the file of all the parameters (when there is
 * none, each parameter is in a file named after it). */
#define PD_MODEL_FLUID_PROGRAM "__model__"
#define PD_MODEL_FLUID_PARAMS "__params__"

/* For a folder holding __model__ (Fluid's layout), FOLDER/__model__ (the caller frees it);
 * NULL for anything else (or on out of memory). For `pdlang dump FOLDER`. */
char *pd_model_folder_program(const char *path);
/* MODEL as PaddlePaddle takes it: a path prefix NAME for NAME.pdmodel (else NAME.json, a PIR
 * program), or a folder that holds no __model__ but exactly one *.pdmodel (else exactly one
 * *.json that is a PIR program). *found: a heap path (pd_free) of the file to load, or NULL
 * when MODEL is to be loaded as it is given (a file, a Fluid folder, or nothing there: the
 * loader's errors say what it is not). PD_EINVAL naming them when a folder holds several
 * models; PD_ENOMEM. */
pd_status pd_model_find(const char *model, char **found, pd_error *err);
/* Read the program at path (NAME.pdmodel; PaddlePaddle 3's PIR NAME.json, vm/ir/pir.h, also
 * when NAME.pdmodel is named but only NAME.json exists; or Fluid's layout: a folder holding
 * __model__, or that folder's __model__) and find its feed and fetch ops, whose "col"
 * attributes (INT or LONG; absent: the op's position among its kind) must number them 0..n-1,
 * each with its list var, one list var per kind (else PD_EFORMAT "PATH: feed op K is
 * malformed ..."). A model without fetch ops loads (the caller says what that means to it).
 * On failure *m is empty. */
pd_status pd_model_load(pd_model *m, const char *path, pd_error *err);
/* The parameters (every persistable tensor var, sorted by name, as `save` writes them) from
 * params_path, or when NULL from the file beside the model (pd_params_path_for(path)), or for
 * Fluid's folder layout from FOLDER/__params__ when it exists, else from one file per
 * parameter, FOLDER/NAME (a missing one is PD_EIO naming the parameter); none to read when
 * the program has none. */
pd_status pd_model_load_params(pd_model *m, const char *path, const char *params_path,
                               pd_error *err);
/* The parameters names[0..n) of a Fluid folder dir into scope, checked against expect's
 * vars (pd_params_load): from dir/__params__ when it exists (all of them, in that order),
 * else each from its own file dir/NAME (a missing one is PD_EIO naming the parameter). What
 * pd_model_load_params does for that layout, and a script's load(FOLDER). */
pd_status pd_model_fluid_params_load(const char *dir, pd_scope *scope, int n,
                                     const char *const *names, const pd_program *expect,
                                     pd_error *err);
/* The executor, with the given options. */
pd_status pd_model_prepare(pd_model *m, const pd_exec_options *eo, pd_error *err);
/* t as the value of feed op i (0 <= i < nfeeds). On failure the feed list is emptied. */
pd_status pd_model_feed(pd_model *m, int i, const pd_tensor *t, pd_error *err);
/* Run the program on what was fed, then empty the feed list (the inputs stay the caller's).
 * *fetched: the fetch list the program filled (index: a fetch op's column), or NULL when it
 * made none. */
pd_status pd_model_run(pd_model *m, pd_tensor_array **fetched, pd_error *err);
void pd_model_free(pd_model *m);

#endif /* PD_VM_RUN_MODEL_H */
