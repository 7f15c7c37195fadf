/* api_finetune.h -- the script that the C library compiles to fine-tune a loaded model
 * (pd_state_train on a state of pd_state_load_model) and to save it (pd_state_save_model): the
 * model imported as a layer (import_model, lang/import_model.c), a data() per input, the loss
 * of the options `loss`, `target`, `label` and `freeze`, then a train(...) or save(...) call,
 * with, for every line, what the caller wrote that the line comes from, so that an error in
 * the script is told as an error of the caller's option. Not installed.
 *
 * Ownership: a pd_api_ft owns its text and its blame strings; pd_api_ft_free releases them. The
 * model and the options are borrowed for the call only. */
#ifndef PD_API_API_FINETUNE_H
#define PD_API_API_FINETUNE_H

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

#endif /* PD_API_API_FINETUNE_H */
