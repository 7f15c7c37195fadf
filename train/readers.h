/* readers.h -- the registry of readers: one row each in train/readers.c (its name, parameters
 * with their defaults and meanings, train/spec.h, and its open function). The compiler makes a
 * record of a reader's call from its row (lang/builtins_action.c), :help NAME shows it, and
 * train, eval, predict and the REPL's :batch open it through pd_reader_open. A new reader is its
 * open function (in readers.c, or a file of its own) and its row.
 *
 * Ownership: the rows are static; an open function's dataset is the caller's. */
#ifndef PD_READERS_H
#define PD_READERS_H

#include <stdio.h>

#include "train/spec.h"
#include "train/unit.h"
#include "vm/reader/reader.h"

typedef struct pd_runner pd_runner;

/* Open the data set of reader record `spec` (an argument of action a: relative paths are taken
 * beside its script) into *out. *at: where its errors point (the argument naming the file;
 * set it when another argument does). note: where a reader may say what it found (the images
 * reader's classes; NULL: nowhere). The record's split (split, valid, seed) is applied after. */
typedef pd_status (*pd_reader_open_fn)(pd_runner *r, const pd_action *a, const pd_cval *spec,
                                       FILE *note, pd_dataset **out, pd_loc *at,
                                       pd_error *err);

typedef struct pd_reader_def {
  pd_spec spec;
  pd_reader_open_fn open;
} pd_reader_def;

/* Reader i (NULL past the last), and a reader by name (NULL: none). */
const pd_reader_def *pd_reader(int i);
const pd_reader_def *pd_reader_find(const char *name);

/* Open reader `spec` for action a (what its row's open does, then the validation split). An error
 * without a location gets the argument's. */
pd_status pd_reader_open(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                         pd_dataset **out, pd_error *err);

#endif /* PD_READERS_H */
