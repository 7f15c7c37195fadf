/* pdlang.h -- the embeddable pdlang library (libpdlang; `pkg-config --cflags --libs pdlang`):
 * compile a .pd script or load a saved model (.pdmodel + .pdiparams), feed named tensors, run,
 * fetch the results, read the last error. The only header a host program includes; it does not
 * include any other pdlang header, and everything it declares is the stable API of libpdlang
 * (the shared library exports exactly the pd_state_* functions below).
 *
 *     pd_state *st;
 *     if (pd_state_new(&st) != PD_RESULT_OK) return 1;            // only fails without memory
 *     if (pd_state_load_model(st, "fashion.pdmodel") != PD_RESULT_OK ||
 *         pd_state_feed(st, "images", PD_DTYPE_FLOAT32, 2, dims, pixels) != PD_RESULT_OK ||
 *         pd_state_run(st) != PD_RESULT_OK ||
 *         pd_state_fetch(st, output_name, &logits) != PD_RESULT_OK)
 *       fprintf(stderr, "%s", pd_state_error(st)->text);          // file:line:col: error: ...
 *     pd_state_free(st);
 *
 * Results. Every function that can fail returns one of the PD_RESULT_* codes below (an int:
 * PD_RESULT_OK is 0, so `if (rc) ...` tests for failure), and then pd_state_error(st) tells
 * what went wrong, with the location in the .pd source when there is one. The codes have the
 * numbers of pdlang's internal status codes; new ones may be added at the end, so treat an
 * unknown code as a failure. The library never exits, aborts or raises a signal in the host
 * process, never installs signal handlers, and never writes to stdout or stderr: what a script
 * prints, and training progress, go to the FILE streams the host gives pd_state_set_output
 * (by default, nowhere).
 *
 * A state holds at most one program: a compiled script (its parameters, initialised when it
 * compiles, live in the state and are trained by its train actions) or a loaded model (its
 * parameters read from the .pdiparams file). Compiling or loading replaces what the state held:
 * the program, the parameters, the feeds and the results.
 *
 * Ownership: strings and buffers passed in are copied (or only read during the call); the
 * caller keeps them. Pointers the library hands out (names, fetched data, the error record)
 * belong to the state and stay valid for as long as each function's comment says.
 *
 * Threads: a state must be used by one thread at a time. In this version the library keeps
 * process-wide counters (the allocator's), so use it from one thread at a time overall. The
 * first pd_state_new starts the kernels' thread pool (PDLANG_THREADS threads, else
 * OMP_NUM_THREADS, else one per CPU the process may use, the caller included), which lives
 * until the process ends; OpenBLAS keeps its own idle threads, and a reader may start a
 * prefetch thread.
 *
 * Floating point: while a call computes (pd_state_compile_*, which initialises parameters,
 * pd_state_load_model, pd_state_run*), the calling thread flushes denormal results and inputs
 * to zero, as the pdlang command does (denormals make an RNN's backward pass ~15x slower); the
 * thread's own mode is put back before the call returns.
 *
 * Environment: as the pdlang command, the library reads PDLANG_PATH (import directories),
 * PDLANG_CHECK_NAN_INF, PDLANG_THREADS and PDLANG_FASHION_MNIST / PDLANG_MNIST (data set
 * directories); it changes no process-wide setting (signal handlers, the floating-point mode
 * outside its calls, the environment). */
#ifndef PDLANG_H
#define PDLANG_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Result codes (the numbering of pdlang's internal pd_status, base/base.h) ---- */
enum {
  PD_RESULT_OK = 0,
  PD_RESULT_ENOMEM = 1,         /* out of memory */
  PD_RESULT_EIO = 2,            /* a file could not be read or written */
  PD_RESULT_ESYNTAX = 3,        /* the script does not parse */
  PD_RESULT_ECOMPILE = 4,       /* the script parses but does not compile (names, shapes, ...) */
  PD_RESULT_EFORMAT = 5,        /* a malformed .pdmodel / .pdiparams file */
  PD_RESULT_EINVAL = 6,         /* a bad argument (NULL state, bad dtype, ...) or call order */
  PD_RESULT_ESHAPE = 7,         /* a tensor's shape does not fit */
  PD_RESULT_ETYPE = 8,          /* a tensor's dtype does not fit */
  PD_RESULT_ENOTFOUND = 9,      /* no input, output or variable of that name */
  PD_RESULT_ERUNTIME = 10,      /* an op failed while running (a label out of range, ...) */
  PD_RESULT_EINTR = 11,         /* stopped by the interrupt flag (pd_state_set_interrupt) */
  PD_RESULT_EUNSUPPORTED = 12   /* something pdlang cannot do (an op without a kernel, ...) */
};

/* A short English description of a result code ("shape mismatch"); never NULL. */
const char *pd_state_result_str(int code);
/* The library's version, "MAJOR.MINOR.PATCH" (the package version); never NULL. */
const char *pd_state_version(void);

/* ---- Element types (the numbering of Fluid's VarType.Type, as .pdmodel files store it) ---- */
enum {
  PD_DTYPE_BOOL = 0,     /* 1 byte, 0 or 1 */
  PD_DTYPE_INT16 = 1,
  PD_DTYPE_INT32 = 2,
  PD_DTYPE_INT64 = 3,
  PD_DTYPE_FLOAT16 = 4,  /* IEEE half, as uint16_t bits */
  PD_DTYPE_FLOAT32 = 5,
  PD_DTYPE_FLOAT64 = 6,
  PD_DTYPE_UINT8 = 20,
  PD_DTYPE_INT8 = 21,
  PD_DTYPE_BFLOAT16 = 22 /* bfloat16, as uint16_t bits (an fp32's high half) */
};

#define PD_STATE_MAX_DIMS 9   /* the highest rank of a tensor */

/* A tensor as the library shows it: dense, row-major, native byte order. */
typedef struct pd_tensor_info {
  int dtype;                         /* PD_DTYPE_* */
  int ndims;                         /* 0 (a scalar) .. PD_STATE_MAX_DIMS */
  int64_t dims[PD_STATE_MAX_DIMS];   /* ndims entries; -1 = not fixed (pd_state_describe) */
  const void *data;                  /* the elements (NULL from pd_state_describe) */
  size_t nbytes;                     /* bytes at data: product of dims x element size */
} pd_tensor_info;

/* What the last call on a state did wrong. After a successful call, code is PD_RESULT_OK and
 * the strings are "" (file is NULL). */
typedef struct pd_error_info {
  int code;              /* the PD_RESULT_* the call returned */
  const char *message;   /* one line, without the location: "'w' is not defined" */
  const char *file;      /* the .pd script (or model file) at fault; NULL when none */
  int line, col;         /* 1-based position in file; 0 when not known */
  const char *text;      /* the rendered diagnostics, as `pdlang` prints them: every error of a
                          * failed compile, each "file:line:col: error: message" with the source
                          * line and a caret; ends with a newline */
} pd_error_info;

typedef struct pd_state pd_state;   /* opaque */

/* ---- Life cycle ---- */

/* A new, empty state in *out (NULL on failure: PD_RESULT_ENOMEM, or PD_RESULT_EINVAL when out
 * is NULL). */
int pd_state_new(pd_state **out);
/* Free the state and everything it holds. NULL is a no-op. */
void pd_state_free(pd_state *st);

/* The last call's error record (see pd_error_info). Every other pd_state_* call on st replaces
 * it, so the record and its strings are valid until the next call on st or pd_state_free.
 * With st NULL: a static record saying so (code PD_RESULT_EINVAL). Never NULL. */
const pd_error_info *pd_state_error(const pd_state *st);

/* ---- Settings: they apply to the next compile or load (set them first) ---- */

/* Where print() and eval() write (out) and where training reports progress (progress); NULL,
 * the default, discards it. The streams are borrowed: they must stay open while the state runs
 * actions. */
int pd_state_set_output(pd_state *st, FILE *out, FILE *progress);
/* The seed of parameter initialisers and random ops (default 0, itself a seed: the same seed
 * gives the same numbers). */
int pd_state_set_seed(pd_state *st, uint64_t seed);
/* Non-zero: stop at the first op that produces a NaN or an infinity (PD_RESULT_ERUNTIME). */
int pd_state_set_check_nan_inf(pd_state *st, int on);
/* A flag the host sets (from a signal handler, say) to stop a running action: checked between
 * ops and minibatches; the call then returns PD_RESULT_EINTR. NULL (the default): none. The
 * flag is borrowed. */
int pd_state_set_interrupt(pd_state *st, volatile sig_atomic_t *flag);
/* Where ops compute: "cpu" (the default), "gpu" (the first CUDA GPU) or "gpu:N". Opens the GPU
 * now: PD_RESULT_EUNSUPPORTED, with the reason in the error, when this pdlang was built without
 * CUDA or has no such GPU. Values move to the GPU as ops read them and come back for results. */
int pd_state_set_device(pd_state *st, const char *device);
/* The directory of pdlang's standard library (what `import "layers"` reads). NULL (the
 * default): the installed one. `import` also searches $PDLANG_PATH and the script's folder. */
int pd_state_set_stdlib_dir(pd_state *st, const char *dir);

/* ---- Programs ---- */

/* Compile a script held in a string. `name` names it in diagnostics and locations (and its
 * folder is where `import` and relative file names in actions are looked up); NULL gives
 * "<string>". The whole script is checked before anything runs: on PD_RESULT_ESYNTAX or
 * PD_RESULT_ECOMPILE the error record holds the first error's message and location, and `text`
 * all of them. On success the parameters are initialised (the startup program runs), and
 * nothing else runs until pd_state_run*. */
int pd_state_compile_string(pd_state *st, const char *name, const char *text);
/* The same, reading the script from a file (PD_RESULT_EIO when it cannot be read). */
int pd_state_compile_file(pd_state *st, const char *path);
/* Load a saved inference model: `path` is the .pdmodel file (a ProgramDesc with feed and fetch
 * ops, as a script's save(path, target, ...) writes it) and its parameters are read from the
 * .pdiparams file beside it (X.pdiparams for X.pdmodel). PaddlePaddle's models load too, also
 * in Fluid's folder layout: `path` is a folder holding __model__ (or that __model__), with the
 * parameters in __params__ or one file per parameter named after it; PaddlePaddle 3's PIR
 * JSON (`path` NAME.json, parameters in NAME.pdiparams) is lowered to the same ops; attributes
 * of other versions that do not change the math are dropped, and a program pdlang cannot run is
 * PD_RESULT_EINVAL listing every problem. Malformed files give PD_RESULT_EFORMAT, never a
 * crash; a model without fetch ops is PD_RESULT_EINVAL. */
int pd_state_load_model(pd_state *st, const char *path);

/* The program's inputs: a model's feed targets, in order; a script's data vars (the vars of its
 * global block that its ops read and nothing computes, that are not parameters: what readers or
 * pd_state_feed provide), in declaration order. *names is an array of *n strings owned by the
 * state, valid until the next compile, load or pd_state_free. */
int pd_state_inputs(pd_state *st, int *n, const char *const **names);
/* The program's outputs: a model's fetch targets, in order; for a script, every var of its
 * global block that an op computes, in declaration order (each can be a pd_state_run_target).
 * Same ownership as pd_state_inputs. */
int pd_state_outputs(pd_state *st, int *n, const char *const **names);
/* The declared dtype and shape of a value of the program (an input, an output, a parameter;
 * for a script also a name it defines, as for pd_state_run_target): dims of -1 are not fixed
 * (the batch); ndims is -1 when the rank is not known. info->data is NULL and info->nbytes 0.
 * PD_RESULT_ENOTFOUND for another name. */
int pd_state_describe(pd_state *st, const char *name, pd_tensor_info *info);

/* ---- Running ---- */

/* Give the input `name` a value for the runs that follow: dtype, ndims dims and the elements at
 * data (row-major, product of dims x element size bytes; data may be NULL only when that is 0),
 * all copied. The name must be an input of the program (PD_RESULT_ENOTFOUND, the message lists
 * the inputs), and the value must fit its declaration: the same dtype (PD_RESULT_ETYPE) and
 * rank, and the same size in every fixed dimension (PD_RESULT_ESHAPE; the message shows both
 * shapes). Feeding a name again replaces its value; feeds stay until the next compile or load.
 * Needs a compiled or loaded program (PD_RESULT_EINVAL). */
int pd_state_feed(pd_state *st, const char *name, int dtype, int ndims, const int64_t *dims,
                  const void *data);
/* Feed a loaded model's image input from PNG or JPEG files, paths[0..n) (a batch, in order),
 * read as the images(...) reader of the script that saved the model read them: the shape, mean
 * and std that save wrote beside it (MODEL.preprocess), reshaped for an input declared flat.
 * PD_RESULT_EINVAL without a loaded model or such a file for this input; a file that cannot be
 * read or decoded is the error of that name (PD_RESULT_EIO, PD_RESULT_EFORMAT, ...). */
int pd_state_feed_images(pd_state *st, const char *name, int n, const char *const *paths);
/* Feed an input that is a batch of sequences (declared with lod_level = 1, as a `for` loop or a
 * recurrent layer reads it): nseq sequences of lengths[0..nseq) rows (each >= 0), one after
 * another in data, whose dims[0] is the total of the lengths (PD_RESULT_ESHAPE otherwise); the
 * rest as pd_state_feed. pd_state_feed refuses such an input, and this function a plain one
 * (PD_RESULT_EINVAL). */
int pd_state_feed_sequences(pd_state *st, const char *name, int dtype, int ndims,
                            const int64_t *dims, const void *data, int64_t nseq,
                            const int64_t *lengths);

/* Give the script a data set to train or evaluate on: its readers name it host("NAME")
 * (train(cost, reader = host("train"), ...), eval, a validation reader), as they would name a
 * file. nfields fields (1 to 8), field i named names[i] with the values fields[i] (dtype,
 * ndims >= 1, dims, data; nbytes 0 or the size the dims and dtype make): dims[0] counts the
 * samples, the same for every field, and the rest is the shape of one sample. The fields feed
 * the script's data(...) inputs by name (else by position), as a file reader's do, with the
 * same conversions (an int64 label feeds a float32 input when its values fit). Everything is
 * copied: the caller keeps its names and buffers. Setting a name again replaces its data; the
 * data sets stay with the state (across compiles) until pd_state_free. PD_RESULT_EINVAL (a
 * missing name, a float16 or unknown dtype, no data), PD_RESULT_ESHAPE (sample counts that
 * differ, a dim < 1), PD_RESULT_ENOMEM; the message names the field. A host("NAME") that was
 * not given is an error of the action, at the reader, listing the names there are. */
int pd_state_set_dataset(pd_state *st, const char *name, int nfields, const char *const *names,
                         const pd_tensor_info *fields);
/* Add to the data set `name` a field of sequences, which feeds a sequence input
 * (data(..., lod_level = 1)) a batch of whole sequences with their LoD, as the lines(...)
 * reader's "x" does: nseq sequences (one per sample: nseq must equal the data set's samples),
 * sequence i of lengths[i] >= 0 rows, one after another in values, whose dims[0] is the total
 * of the lengths and the rest the shape of one row. When the data set does not exist yet, it
 * is made with this field alone (then pd_state_set_dataset would replace it: give the other
 * fields first). Copied, as pd_state_set_dataset; the same errors, PD_RESULT_ESHAPE also for
 * lengths that do not add up to dims[0] or an nseq that is not the data set's size. */
int pd_state_add_sequences(pd_state *st, const char *name, const char *field, int64_t nseq,
                           const int64_t *lengths, const pd_tensor_info *values);

/* Run the program. A script: run its actions (print, train, eval, save, load, assert_close) in
 * order, stopping at the first error; actions take their data from their readers, not from
 * feeds. A model: run it on the fed inputs (every input must be fed: PD_RESULT_EINVAL) and
 * keep every output for pd_state_fetch. Run-time errors carry the location of the op at fault
 * in the .pd source (for a model, as saved in it). */
int pd_state_run(pd_state *st);
/* Train the compiled script's `cost` (the name of a value it defines, a one-element float
 * tensor) as train(cost, ...) in the script would: options is a NULL-terminated list of name,
 * value pairs, each name one of train's options (reader, batch, epochs, optimizer, shuffle,
 * seed, checkpoint, valid, metrics, early_stop, log, ...: the same table as the language's,
 * doc/language.md) and each value written as in the language, on one line: {"reader",
 * "host(\"train\")", "epochs", "3", "optimizer", "adam(0.001)", NULL} (pd_state_set_dataset
 * gives host readers their data; a file reader reads files beside the script). The options are
 * checked as a script's are, the compile error in the record (PD_RESULT_ECOMPILE: "train:
 * 'batch' must be a positive integer"); an unknown option name is PD_RESULT_EINVAL listing
 * them. Training updates the parameters and the optimizer's state, which later calls (run,
 * fetch, another pd_state_train, save through a script action) see; with the same data and
 * seed it computes what the script's train(...) does, bit for bit. Progress goes to the
 * progress stream (pd_state_set_output); the interrupt flag stops it (PD_RESULT_EINTR).
 *
 * A loaded model (pd_state_load_model) is fine-tuned, as a script's import_model(...) of it
 * would be (doc/language.md, "Using a saved model as a layer"): cost must then be NULL, and
 * four more options say the cost: "loss", the loss of the target and the label
 * ("softmax_with_cross_entropy", the default, "cross_entropy" or "mse", each averaged over the
 * batch); "target", the output it applies to (one of pd_state_outputs; default the first);
 * "label", the label input written as data(...)'s arguments (default "\"label\", [-1, 1],
 * int64", for mse "\"label\", SHAPE" with the target's shape: the data set's field of that
 * name feeds it); "freeze", the parameters kept as they are, a name or fnmatch pattern or a
 * list of them ("[\"conv1_*\", \"fc_0.w_0\"]", each matching a parameter). Errors name the
 * option at fault ("pd_state_train: option 'label' (...): ..."): an unknown loss or target is
 * PD_RESULT_EINVAL, a label or freeze the language refuses PD_RESULT_ECOMPILE. Afterwards the
 * state runs the model with the trained parameters (pd_state_run, pd_state_fetch), another
 * call goes on from them, and pd_state_save_model writes them. A fine-tuning call that fails,
 * part-way through too (a bad batch, the NaN check, out of memory, the interrupt flag:
 * PD_RESULT_EINTR), changes nothing: the parameters, the optimizer's state (such as Adam's
 * moments) and the learning-rate schedule are as they were before it, so that the state runs,
 * saves and trains on as if the call had not been made; only the files it wrote (a log,
 * checkpoints) stay. The cost in memory: while a call trains, unless it is the state's first
 * pd_state_train or pd_state_save_model of the model, the state holds a copy of the parameters
 * and the optimizer's state (with Adam, three times the parameters' size; on the GPU when they
 * are there). */
int pd_state_train(pd_state *st, const char *cost, const char *const *options);

/* Save the loaded model (pd_state_load_model), fine-tuned or not, as a script's save(...) of its
 * outputs would: path (NAME.pdmodel, or NAME.json for PaddlePaddle 3's PIR) and its parameters
 * (NAME.pdiparams), written atomically with the side files the loaded model had beside it
 * (NAME.categories, NAME.preprocess); its inputs and outputs keep their names, so that
 * `pdlang exec`, pd_state_load_model and PaddlePaddle load it. PD_RESULT_EINVAL without a loaded
 * model (a script saves with save(...)); a file that cannot be written is PD_RESULT_EIO naming
 * it. */
int pd_state_save_model(pd_state *st, const char *path);

/* Compute one var: pd_state_run_targets(st, 1, &name). */
int pd_state_run_target(pd_state *st, const char *name);
/* Compute n values of a script from the fed inputs and the current parameters, running only
 * the ops they need, and keep them for pd_state_fetch under the names given. A name is one the
 * script defines at top level (y after `y = fc(h, 10)`), else a var of its global block
 * (pd_state_outputs lists those; `pdlang dump` shows them). A name for a compile-time value
 * (a number, a string) is PD_RESULT_EINVAL, an unknown one PD_RESULT_ENOTFOUND; an input they
 * need that was not fed is PD_RESULT_EINVAL naming it. For a model, each name must be one of
 * its outputs, and the model runs as with pd_state_run. */
int pd_state_run_targets(pd_state *st, int n, const char *const *names);

/* Look at a value: a result of the last pd_state_run_target(s), by the name it was asked for
 * (or an output of a model's last pd_state_run), else a parameter (by its var name, as
 * fc_0.w_0: trained weights) of the program. The
 * tensor (dtype, shape, elements) is written to *out; out->data points into memory owned by
 * the state, valid until the next pd_state_run*, compile, load or pd_state_free: copy what is
 * needed longer. PD_RESULT_ENOTFOUND when no such value exists (yet). */
int pd_state_fetch(pd_state *st, const char *name, pd_tensor_info *out);

#ifdef __cplusplus
}
#endif

#endif /* PDLANG_H */
