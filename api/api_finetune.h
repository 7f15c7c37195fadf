/* api_finetune.h -- private to the C library (api/): fine-tuning a loaded model (pd_state_train
 * on a state of pd_state_load_model) and saving it (pd_state_save_model). The script that the
 * library compiles for it: the model imported as a layer (import_model, lang/import_model.c),
 * a data() per input, the loss of the options `loss`, `target`, `label` and `freeze`, then a
 * train(...) or save(...) call, with, for every line, what the caller wrote that the line comes
 * from, so that an error in the script is told as an error of the caller's option; and the
 * calls that compile and run it in the state's fine-tuning runner. Not installed.
 *
 * Ownership: a pd_api_ft owns its text and its blame strings; pd_api_ft_free releases them. The
 * model and the options are borrowed for the call only; the state's fine-tuning runner, unit
 * and source are the state's (api/api_int.h). */
#ifndef PD_API_API_FINETUNE_H
#define PD_API_API_FINETUNE_H

#include "include/pdlang.h"
#include "base/base.h"
#include "vm/ir/program.h"

typedef struct pd_api_ft {
  pd_buf text;     /* the script */
  char **blame;    /* blame[i]: what line i + 1 comes from ("option 'label' ..."); owned */
  int nlines;
  size_t cap;
} pd_api_ft;

/* The options of fine-tuning that are not train's (doc/language.md, include/pdlang.h). */
bool pd_api_ft_own_option(const char *name);

/* The script for model program p (its feed vars feeds[0..nfeeds), its fetch vars
 * fetches[0..nfetches)) read from path: options (a NULL-terminated list of name, value pairs,
 * as pd_state_train takes them; NULL: none) give the loss, target, label and freeze; then,
 * when save_path is NULL, train(cost, OPTION = VALUE, ...) of the options that are train's,
 * else save(save_path, every fetch target) under the fetch targets' names. PD_EINVAL with a
 * message naming the option at fault (an unknown loss or target, a value that is no line of
 * the language; the language checks the rest when the script compiles), PD_ENOMEM. */
pd_status pd_api_ft_script(pd_api_ft *ft, const pd_program *p, const char *path,
                           int nfeeds, const char *const *feeds, int nfetches,
                           const char *const *fetches, const char *const *options,
                           const char *save_path, pd_error *err);

/* What line (1-based) of the script comes from; NULL for a line beyond it. */
const char *pd_api_ft_blame(const pd_api_ft *ft, int line);

void pd_api_ft_free(pd_api_ft *ft);

/* pd_state_train (options: its name, value pairs, checked by the caller) when save_path is
 * NULL, or pd_state_save_model to save_path, of the model st loaded (fn: the entry point, for
 * messages): the script compiled and adopted by the state's fine-tuning runner (made at the
 * first call: its startup program reads the model's parameters), and its train or save run;
 * after training, the state's model is made again with the trained parameters. Ends the
 * call's error record (pd_api_ok or a failure naming the caller's option); returns the
 * result. */
int pd_api_finetune(pd_state *st, const char *fn, const char *const *options,
                    const char *save_path);
/* pd_state_save_model (its checks of the state and the path, then pd_api_finetune). Begins
 * the call's error record. */
int pd_api_save_model(pd_state *st, const char *path);

#endif /* PD_API_API_FINETUNE_H */
