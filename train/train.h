/* train.h -- the actions that run a program over data or move parameters to and from disk
 * (train, eval: train/train.c; save, load: train/train_save.c; predict: train/train_predict.c).
 * Private to train/: train/run.c's dispatch calls them.
 * Direction: run.c -> train.c -> runner.c (run_int.h); train.c never calls run.c.
 *
 * Each takes an action of the runner's unit (borrowed) and fills err (may be NULL), placed at
 * the action when the error has no location of its own. */
#ifndef PD_TRAIN_H
#define PD_TRAIN_H

#include "train/run_int.h"

pd_status pd_run_train(pd_runner *r, const pd_action *a, pd_error *err);
pd_status pd_run_eval(pd_runner *r, const pd_action *a, pd_error *err);
pd_status pd_run_save(pd_runner *r, const pd_action *a, pd_error *err);
pd_status pd_run_load(pd_runner *r, const pd_action *a, pd_error *err);
/* predict(y, reader =, out =, batch =): train/train_predict.c. */
pd_status pd_run_predict(pd_runner *r, const pd_action *a, pd_error *err);

#endif /* PD_TRAIN_H */
