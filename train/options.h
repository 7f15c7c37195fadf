/* options.h -- train's options, one descriptor each: its name, type, default, range, whether a
 * checkpoint records it, and its meaning. The one table (PD_TRAIN_OPTIONS) that the compiler's
 * check of a train(...) call (lang/builtins_action.c), the trainer (train/train.c, which reads
 * them through pd_train_opts_get), the checkpoint's setup text, :help train and the docs'
 * check (tests/lang/test_spec_help.c) read. A new option is its row here and its use.
 *
 * Ownership: the descriptors are static; a pd_train_opts borrows the action's values (strings,
 * records), which the unit owns. */
#ifndef PD_TRAIN_OPTIONS_H
#define PD_TRAIN_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "train/unit.h"

typedef enum pd_topt_type {
  PD_TOPT_INT,        /* an integer in [lo, hi] (hi 0: no upper bound) */
  PD_TOPT_BOOL,       /* true or false */
  PD_TOPT_NAME,       /* a non-empty string naming something (a file, a metric): `expect` */
  PD_TOPT_CHOICE,     /* one of the strings of `choices` ("a|b"); `expect` says what each is */
  PD_TOPT_READER,     /* a reader record (train/readers.h) */
  PD_TOPT_OPTIMIZER,  /* an optimizer record (train/optimizers.h) */
  PD_TOPT_METRICS,    /* a tensor of one element, or a list of 1 to 16 of them */
} pd_topt_type;

enum {
  PD_TOPT_CKPT = 1,      /* a checkpoint records it: a resume with another value is refused */
  PD_TOPT_VALID = 2,     /* about the validation: needs valid = READER */
};

/* X(name, type, default as the docs write it ("64", "true", "\"loss\"", "sgd(0.01)"; "none":
 *   absent; NULL: required when flags say PD_TOPT_REQUIRED, else its default depends on something
 *   the meaning names), choices (CHOICE: "a|b"), lo, hi (INT), flags, expect (what a value must
 *   be, for errors; NULL: the type says), meaning). The trainer reads INT and BOOL defaults from
 *   the text: one spelling of each default. */
#define PD_TOPT_REQUIRED 4   /* no default: the call must give it */
#define PD_TRAIN_OPTIONS(X) \
  X(reader, READER, NULL, NULL, 0, 0, PD_TOPT_REQUIRED | PD_TOPT_CKPT, NULL, \
    "the training data, a reader") \
  X(batch, INT, "64", NULL, 1, 0, PD_TOPT_CKPT, NULL, "samples per minibatch") \
  X(epochs, INT, "1", NULL, 1, 0, 0, NULL, "passes over the data") \
  X(optimizer, OPTIMIZER, "sgd(0.01)", NULL, 0, 0, PD_TOPT_CKPT, NULL, \
    "an optimizer: sgd, momentum, adam, adamw, rmsprop, adagrad") \
  X(shuffle, BOOL, "true", NULL, 0, 0, 0, NULL, "a new order of the samples every epoch") \
  X(drop_last, BOOL, "false", NULL, 0, 0, PD_TOPT_CKPT, NULL, \
    "leave out an epoch's last, smaller minibatch") \
  X(seed, INT, NULL, NULL, 0, 0, 0, NULL, \
    "the seed of the shuffling and of random ops (default: pdlang run --seed)") \
  X(checkpoint, NAME, "none", NULL, 0, 0, 0, "a file (\"model.ckpt\")", \
    "a file the training state is saved to after every epoch, and resumed from") \
  X(log_every, INT, NULL, NULL, 1, 0, 0, NULL, \
    "with --progress=lines, a line every this many steps (default: a tenth of an epoch)") \
  X(valid, READER, "none", NULL, 0, 0, 0, NULL, "the validation data, a reader") \
  X(metrics, METRICS, "none", NULL, 0, 0, PD_TOPT_VALID, NULL, \
    "tensors of one value per batch evaluated on valid beside the cost") \
  X(valid_every, INT, "1", NULL, 1, 0, PD_TOPT_VALID, NULL, \
    "validate after every this many epochs") \
  X(early_stop, INT, "none", NULL, 1, 0, PD_TOPT_VALID, NULL, \
    "patience: stop after this many validations without a better monitored value") \
  X(monitor, NAME, "\"loss\"", NULL, 0, 0, PD_TOPT_VALID, \
    "a metric (\"loss\" or one of 'metrics')", \
    "what early_stop and keep_best watch: \"loss\" or a metric's name") \
  X(mode, CHOICE, NULL, "min|max", 0, 0, PD_TOPT_VALID, \
    "\"min\" or \"max\" (whether a smaller or a larger monitored value is better)", \
    "\"min\" or \"max\": whether a smaller or a larger monitored value is better (default: " \
    "\"max\" for a name with acc, else \"min\")") \
  X(keep_best, BOOL, "false", NULL, 0, 0, PD_TOPT_VALID, NULL, \
    "at the end, put back the parameters of the best validation") \
  X(log, NAME, "none", NULL, 0, 0, 0, "a file (\"run.csv\", or \"run.jsonl\" for JSON lines)", \
    "a file of a row per logged step and epoch (CSV, or JSON lines for .jsonl)") \
  X(plot, NAME, "none", NULL, 0, 0, 0, "a PNG file (\"curves.png\")", \
    "a PNG of the log's curves, drawn when training ends") \
  X(valid_every_steps, INT, "none", NULL, 1, 0, PD_TOPT_VALID, NULL, \
    "validate after every this many steps instead") \
  X(sync_batch_norm, BOOL, "false", NULL, 0, 0, PD_TOPT_CKPT, NULL, \
    "under MPI, batch norm's statistics over every process's batch (sync_batch_norm)") \
  X(amp, CHOICE, "none", "bf16", 0, 0, 0, \
    "\"bf16\" (mixed precision: the products in bfloat16, the rest in fp32; fp16, which " \
    "needs loss scaling, is not built yet)", \
    "\"bf16\": mixed precision, the matrix products in bfloat16 with fp32 sums")

/* The options' numbers: PD_TOPT_batch, ...; PD_TOPT_COUNT of them. */
typedef enum pd_topt_id {
#define PD_TOPT_ID_(name, ...) PD_TOPT_##name,
  PD_TRAIN_OPTIONS(PD_TOPT_ID_)
#undef PD_TOPT_ID_
  PD_TOPT_COUNT
} pd_topt_id;

typedef struct pd_topt_desc {
  const char *name;
  pd_topt_type type;
  const char *dflt;     /* as the docs write it; "none": absent; NULL: required or depends */
  const char *choices;  /* CHOICE: "a|b" */
  int64_t lo, hi;       /* INT */
  unsigned flags;
  const char *expect;
  const char *meaning;
} pd_topt_desc;

/* Option i's descriptor (NULL past the last), and the descriptor of a name (NULL: none). */
const pd_topt_desc *pd_topt(int i);
const pd_topt_desc *pd_topt_find(const char *name);
/* The options' names in table order, NULL-terminated (static). */
const char *const *pd_topt_names(void);
/* Whether value v is one of a CHOICE option's choices. */
bool pd_topt_is_choice(const pd_topt_desc *d, const char *v);

/* A train call's options as the trainer reads them: each given value (NULL: not given, the
 * default applies) and where it was written (the call's location when not). */
typedef struct pd_train_opts {
  const pd_cval *value[PD_TOPT_COUNT];
  pd_loc loc[PD_TOPT_COUNT];
} pd_train_opts;

/* The options of action a (a train call: the compiler checked their types and ranges). */
void pd_train_opts_from_action(const pd_action *a, pd_train_opts *o);
/* Option id's value: given, else the table's default; `dflt` for an option whose default
 * depends (the table gives none). */
int64_t pd_train_opt_int(const pd_train_opts *o, pd_topt_id id, int64_t dflt);
bool pd_train_opt_bool(const pd_train_opts *o, pd_topt_id id);
/* A NAME or CHOICE option's string: given, else the table's default without its quotes into buf
 * (n bytes; buf NULL: none), else NULL. */
const char *pd_train_opt_str(const pd_train_opts *o, pd_topt_id id, char *buf, size_t n);
/* Whether the call gave option id. */
bool pd_train_opt_given(const pd_train_opts *o, pd_topt_id id);

/* What a checkpoint records of the scalar options flagged PD_TOPT_CKPT, after the reader:
 * ", batch 64, drop_last" (an INT as ", NAME N", a BOOL as ", NAME" when true), appended to b. */
void pd_train_opts_describe(const pd_train_opts *o, pd_buf *b);

#endif /* PD_TRAIN_OPTIONS_H */
