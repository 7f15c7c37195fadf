/* driver.h -- the pdlang command-line driver: one function per subcommand, each in its own
 * driver/cmd_NAME.c, dispatched from driver/pdlang.c. A command returns the process exit status:
 * 0 success, 1 an error in the user's input (diagnostics printed), 2 a usage error. */
#ifndef PD_DRIVER_H
#define PD_DRIVER_H

#include <stdio.h>

#include "base/dtype.h"

typedef struct pd_command {
  const char *name;
  int (*run)(int argc, char **argv);  /* argv[0] is the command name */
  const char *summary;                /* one line for `pdlang --help` */
  const char *usage;                  /* `pdlang NAME --help` text */
  bool sizes_pool;                    /* run calls pd_k_init itself, once its options have set
                                         PDLANG_THREADS (the pool reads it when it starts);
                                         main calls it before the others */
} pd_command;

/* Print `pdlang CMD --help` text for cmd to `out`. */
void pd_driver_usage(FILE *out, const pd_command *cmd);
/* True when argv holds -h or --help. */
int pd_driver_wants_help(int argc, char **argv);

extern const pd_command pd_cmd_parse; /* driver/cmd_parse.c */
extern const pd_command pd_cmd_dump;  /* driver/cmd_dump.c */
extern const pd_command pd_cmd_check;   /* driver/cmd_check.c */
extern const pd_command pd_cmd_compile; /* driver/cmd_check.c */
extern const pd_command pd_cmd_run;     /* driver/cmd_run.c */
extern const pd_command pd_cmd_exec;    /* driver/cmd_exec.c */
extern const pd_command pd_cmd_bench;   /* driver/cmd_bench.c */
extern const pd_command pd_cmd_decompile; /* driver/cmd_decompile.c */
extern const pd_command pd_cmd_repl;    /* driver/cmd_repl.c */
extern const pd_command pd_cmd_plot;    /* driver/cmd_plot.c */
extern const pd_command pd_cmd_summary; /* driver/cmd_summary.c */

struct pd_source;
struct pd_unit;
/* Load and compile a script, printing diagnostics to stderr. Returns 0 with *src and *unit set
 * (the caller frees both: pd_unit_free, then pd_source_free), or 1 with both NULL. */
int pd_driver_compile_file(const char *path, struct pd_source **src, struct pd_unit **unit);
/* The same with the --set NAME=VALUE overrides of the command line (sets[0..nsets), from
 * pd_driver_set_arg; see pd_compile_options). */
struct pd_compile_set;
int pd_driver_compile_file_set(const char *path, int nsets, const struct pd_compile_set *sets,
                               struct pd_source **src, struct pd_unit **unit);
/* argv[*i] as `--set NAME=VALUE` of command cmd: 1 when it was one (added to sets[*nsets], *i
 * moved past its value), 0 when it is another argument, -1 after printing a usage error
 * (sets holds PD_DRIVER_MAX_SETS). The strings point into argv, except option, which points
 * into the caller's `text` (PD_DRIVER_MAX_SETS rows of PD_DRIVER_SET_TEXT bytes). */
#define PD_DRIVER_MAX_SETS 64
#define PD_DRIVER_SET_TEXT 160
int pd_driver_set_arg(const char *cmd, int argc, char **argv, int *i, struct pd_compile_set *sets,
                      char (*text)[PD_DRIVER_SET_TEXT], int *nsets);
/* Print a run-time error to stderr the way compile errors look (file:line:col, line, caret),
 * finding the source of the error's location among unit's (main is src). */
struct pd_error;
void pd_driver_print_error(const struct pd_unit *unit, const struct pd_source *src,
                           const struct pd_error *err);

/* The device of --device SPEC, or of PDLANG_DEVICE when spec is NULL (default: the CPU), for
 * the command named cmd. Returns 0, or 2 after printing the error to stderr. place is a
 * pd_k_place (kernels/kernels.h). */
int pd_driver_device(const char *cmd, const char *spec, int *place, int *gpu_index);
/* The precision of --precision SPEC (exec, bench): "fp32" (or "float32"), "bf16" (or
 * "bfloat16": the model's products multiply in bf16, pd_model's precision); non-zero after
 * saying what is wrong. */
int pd_driver_precision(const char *cmd, const char *spec, pd_dtype *out);
/* How many of the hottest ops a profile (run --profile, bench --profile) lists:
 * PDLANG_PROFILE_TOP, 0 for all of them; 12 when it is unset (or not a count, with a warning on
 * stderr). */
size_t pd_driver_profile_top(void);

/* ---- Saved models and their inputs (driver/model_inputs.c: exec and bench) ---- */

#define PD_DRIVER_MAX_IO 32
/* The --feed NAME=FILE.npy and --lengths NAME=LENGTHS.npy of a command line (the strings point
 * into argv). */
typedef struct pd_driver_feeds {
  int nfeeds, nlens;
  const char *feed_names[PD_DRIVER_MAX_IO], *feed_files[PD_DRIVER_MAX_IO];
  const char *len_names[PD_DRIVER_MAX_IO], *len_files[PD_DRIVER_MAX_IO];
} pd_driver_feeds;
/* argv[*i] as --feed or --lengths of command cmd: 1 when it was one (its value taken, *i moved
 * past it), 0 when it is another argument, -1 after printing a usage error. */
int pd_driver_feed_arg(const char *cmd, int argc, char **argv, int *i, pd_driver_feeds *f);
struct pd_model;
struct pd_tensor;
/* Find MODEL as exec does (NAME.pdmodel, NAME.json, a path prefix, a folder), load it into *m
 * (which must be zeroed; the caller frees it with pd_model_free, also on failure), then its
 * parameters (params, else the file beside it), and make inputs[0 .. m->nfeeds) from f (each
 * input by name, once; sequences as rows with --lengths; PD_DRIVER_MAX_IO entries at most).
 * *ninputs says how many of inputs are initialised (the caller releases them), *found the
 * model path found (heap, or NULL: MODEL itself; the caller frees it). 0, or 1 after printing
 * the error as "pdlang CMD: ...". */
int pd_driver_load_model(const char *cmd, const char *model, const char *params,
                         const pd_driver_feeds *f, struct pd_model *m, struct pd_tensor *inputs,
                         int *ninputs, char **found);
/* Print an error of loading or running the model at path: at the model's source line when the
 * op that failed has one, else as "error: message". */
void pd_driver_print_model_error(const char *model, const struct pd_error *err);

#endif /* PD_DRIVER_H */
