/* plot.h -- training curves as a PNG (train/plot.c): the loss, the learning rate when it
 * changes, and each validation metric of a train log (train/train_log.c's CSV or JSON lines),
 * train and validation, drawn with cairo. `pdlang plot` and train(..., plot = ...) use it.
 *
 * Ownership: the caller owns every argument. */
#ifndef PD_PLOT_H
#define PD_PLOT_H

#include <stdbool.h>

#include "base/base.h"

/* Colours of the curves (0xRRGGBB): the loss of the logged steps, the epochs' mean training
 * loss, the validation's values. */
#define PD_PLOT_STEP_RGB 0x9ecae1
#define PD_PLOT_TRAIN_RGB 0x1f5fa8
#define PD_PLOT_VALID_RGB 0xe6550d
/* The marks of the log's best validation and early stop: dashed vertical lines. */
#define PD_PLOT_BEST_RGB 0x31a354
#define PD_PLOT_STOP_RGB 0x756bb1

/* Whether this pdlang was built with cairo (without it, pd_plot_log says so). */
bool pd_plot_available(void);

/* Read the log at log_path and draw its curves into png_path (written atomically), width x
 * height pixels (0: 900 wide, 280 high a panel). One panel per quantity, x the global step:
 * "loss" (the logged steps, the epochs' training loss, the validation loss; with log_y on a
 * logarithmic axis, values <= 0 left out), "learning rate" when it changes, and each
 * valid_NAME column; in each, a dashed line at the log's last "best" row (the best validation)
 * and at its last "stop" row (early stopping), labelled with their epochs. Errors (PD_EIO: a log that cannot be read, a
 * picture that cannot be written; PD_EFORMAT naming
 * the line: a log that is not train's, a row with bad numbers; PD_EINVAL: a log with no row;
 * PD_EUNSUPPORTED: built without cairo) name the file in err->loc.file. */
pd_status pd_plot_log(const char *log_path, const char *png_path, int width, int height,
                      bool log_y, pd_error *err);

#endif /* PD_PLOT_H */
