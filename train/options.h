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
  PD_TOPT_REQUIRED = 1,  /* no default: the call must give it */
  PD_TOPT_NONE = 2,      /* absent by default (the docs write `none`) */
  PD_TOPT_DEPENDS = 4,   /* its default depends on something else: the meaning says on what */
  PD_TOPT_CKPT = 8,      /* a checkpoint records it: a resume with another value is refused */
  PD_TOPT_VALID = 16,    /* about the validation: needs valid = READER */
};

/* X(name, type, default (INT, BOOL), default (NAME, CHOICE, OPTIMIZER: as the docs write it),
 *   lo, hi, flags, expect (what a value must be, for errors; NULL: the type says), meaning) */
#define PD_TRAIN_OPTIONS(X) \
  X(reader, READER, 0, NULL, 0, 0, PD_TOPT_REQUIRED | PD_TOPT_CKPT, NULL, \
    "the training data, a reader") \
  X(batch, INT, 64, NULL, 1, 0, PD_TOPT_CKPT, NULL, "samples per minibatch") \
  X(epochs, INT, 1, NULL, 1, 0, 0, NULL, "passes over the data") \
  X(optimizer, OPTIMIZER, 0, "sgd(0.01)", 0, 0, PD_TOPT_CKPT, NULL, \
    "an optimizer: sgd, momentum, adam, adamw, rmsprop, adagrad") \
  X(shuffle, BOOL, 1, NULL, 0, 0, 0, NULL, "a new order of the samples every epoch") \
  X(drop_last, BOOL, 0, NULL, 0, 0, PD_TOPT_CKPT, NULL, \
    "leave out an epoch's last, smaller minibatch") \
  X(seed, INT, 0, NULL, 0, 0, PD_TOPT_DEPENDS, NULL, \
    "the seed of the shuffling and of random ops (default: pdlang run --seed)") \
  X(checkpoint, NAME, 0, NULL, 0, 0, PD_TOPT_NONE, "a file (\"model.ckpt\")", \
    "a file the training state is saved to after every epoch, and resumed from") \
  X(log_every, INT, 0, NULL, 1, 0, PD_TOPT_DEPENDS, NULL, \
    "with --progress=lines, a line every this many steps (default: a tenth of an epoch)") \
  X(valid, READER, 0, NULL, 0, 0, PD_TOPT_NONE, NULL, "the validation data, a reader") \
  X(metrics, METRICS, 0, NULL, 0, 0, PD_TOPT_NONE | PD_TOPT_VALID, NULL, \
    "tensors of one value per batch evaluated on valid beside the cost") \
  X(valid_every, INT, 1, NULL, 1, 0, PD_TOPT_VALID, NULL, "validate after every this many epochs") \
  X(early_stop, INT, 0, NULL, 1, 0, PD_TOPT_NONE | PD_TOPT_VALID, NULL, \
    "patience: stop after this many validations without a better monitored value") \
  X(monitor, NAME, 0, "loss", 0, 0, PD_TOPT_VALID, \
    "a metric (\"loss\" or one of 'metrics')", \
    "what early_stop and keep_best watch: \"loss\" or a metric's name") \
  X(mode, CHOICE, 0, "min|max", 0, 0, PD_TOPT_DEPENDS | PD_TOPT_VALID, \
    "\"min\" or \"max\" (whether a smaller or a larger monitored value is better)", \
    "\"min\" or \"max\": whether a smaller or a larger monitored value is better (default: " \
    "\"max\" for a name with acc, else \"min\")") \
  X(keep_best, BOOL, 0, NULL, 0, 0, PD_TOPT_VALID, NULL, \
    "at the end, put back the parameters of the best validation") \
  X(log, NAME, 0, NULL, 0, 0, PD_TOPT_NONE, \
    "a file (\"run.csv\", or \"run.jsonl\" for JSON lines)", \
    "a file of a row per logged step and epoch (CSV, or JSON lines for .jsonl)") \
  X(plot, NAME, 0, NULL, 0, 0, PD_TOPT_NONE, "a PNG file (\"curves.png\")", \
    "a PNG of the log's curves, drawn when training ends") \
  X(valid_every_steps, INT, 0, NULL, 1, 0, PD_TOPT_NONE | PD_TOPT_VALID, NULL, \
    "validate after every this many steps instead") \
  X(amp, CHOICE, 0, "bf16", 0, 0, PD_TOPT_NONE, \
    "\"bf16\" (mixed precision: the products in bfloat16, the rest in fp32; fp16, which needs " \
    "loss scaling, is not built yet)", \
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
  int64_t dflt;         /* INT, BOOL */
  const char *sdflt;    /* NAME: the default; CHOICE: the choices, "a|b"; OPTIMIZER: the
                           default as written */
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
/* The default as the docs write it ("64", "true", "\"loss\"", "sgd(0.01)", "none"), or NULL
 * for a required option or one whose default depends (its meaning says). */
const char *pd_topt_default_text(const pd_topt_desc *d, char *buf, size_t n);
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
/* Option id's value: given, else its default (INT, BOOL: the table's; `dflt` for a DEPENDS
 * one). */
int64_t pd_train_opt_int(const pd_train_opts *o, pd_topt_id id, int64_t dflt);
bool pd_train_opt_bool(const pd_train_opts *o, pd_topt_id id);
/* A NAME or CHOICE option's string: given, else the table's default (NULL: none). */
const char *pd_train_opt_str(const pd_train_opts *o, pd_topt_id id);
/* Whether the call gave option id. */
bool pd_train_opt_given(const pd_train_opts *o, pd_topt_id id);

/* What a checkpoint records of the scalar options flagged PD_TOPT_CKPT, after the reader:
 * ", batch 64, drop_last" (an INT as ", NAME N", a BOOL as ", NAME" when true), appended to b. */
void pd_train_opts_describe(const pd_train_opts *o, pd_buf *b);

#endif /* PD_TRAIN_OPTIONS_H */
