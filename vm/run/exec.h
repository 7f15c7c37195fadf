/* exec.h -- the executor: runs a ProgramDesc's blocks over a scope tree, and the interface that op
 * kernels (vm/kern_*.c) see.
 *
 * Preparing: pd_exec_new resolves every block of a program once: each op's registry entry and
 * kernel, and each slot's vars as indices into the block's table of var names. Running a block
 * then looks each name up in the scope once (creating the block's own vars there), and the ops
 * reach their variables through that table: the loop over ops does no name lookups, no registry
 * search and no allocation. An RNN step or a while iteration reruns a prepared block in a new
 * scope.
 *
 * Scopes (Fluid's rules, see vm/run/scope.h): pd_exec_run runs block 0 in a fresh child scope of the
 * caller's global scope. Persistable vars of block 0 (parameters, optimizer state) are created in
 * the global scope and survive the run; the others are temporaries of the run scope. An op that
 * owns a sub-block runs it in a child scope it keeps in a STEP_SCOPES var (conditional_block's
 * Scope output, while's StepScopes, recurrent's step_scopes), so a gradient block can read the
 * forward values; the whole tree goes when the run scope is destroyed, at the end of the run
 * unless the caller asks to keep it. Before that, each temporary of block 0 (a var it declares
 * that is not persistable) is released right after the last op that names it, directly or in a
 * block the op owns: a training step's gradients and the forward values only the backward pass
 * reads do not all live until the step ends (not in a run that keeps its scope, and never a
 * fetched var).
 *
 * Errors: a failing op's error carries its .pd location (the op's loc) and a message that starts
 * with the op type and names the vars and shapes involved ("mul: X has 784 columns but Y has 300
 * rows ([64, 784] x [300, 10])"); the run stops at that op and returns its status.
 *
 * Ownership: a pd_exec borrows its program (which must outlive it and not change while it
 * exists) and owns the prepared blocks. Scopes belong to their callers; the executor only
 * creates (and, for the run scope, destroys) child scopes. Tensors passed as feeds are copied
 * by reference (pd_tensor_share); fetched tensors are deep copies the caller owns. */
#ifndef PD_EXEC_H
#define PD_EXEC_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "kernels/kernels.h"
#include "vm/ops/ops.h"
#include "vm/ir/program.h"
#include "vm/run/scope.h"
#include "vm/run/tensor.h"

typedef struct pd_exec pd_exec;
typedef struct pd_exec_block pd_exec_block;  /* a prepared block (private) */
typedef struct pd_exec_op pd_exec_op;        /* a prepared op (private) */

/* ---- Options ---- */
typedef struct pd_exec_options {
  /* Check every floating-point output of every op for NaN and Inf and stop at the first op
   * that made one (PD_ERUNTIME). Also on when the environment has PDLANG_CHECK_NAN_INF=1. */
  bool check_nan_inf;
  /* Seed of the generator that random ops with seed 0 draw from (uniform_random,
   * gaussian_random, dropout). Same seed, same numbers. */
  uint64_t seed;
  /* When not NULL, checked between ops: non-zero stops the run with PD_EINTR. For Ctrl-C. */
  volatile sig_atomic_t *interrupt;
  /* Where ops compute: PD_K_HOST (the default), or PD_K_CUDA, which needs the GPU open
   * (pd_k_cuda_open; pd_exec_new fails otherwise). On the GPU, each op whose kernel can run
   * there does (vm/run/exec_place.c lists them), with its inputs moved to the GPU first; the
   * others run on the host, with their inputs moved back. Values stay where their last op
   * left them, so parameters live on the GPU for a whole training run, and data crosses only
   * at feeds, fetches and around the ops that have no GPU kernel. */
  pd_k_place place;
  /* Called once per op type, while preparing, for each op that runs on the host although the
   * place is the GPU ("op 'accuracy' has no GPU kernel: it runs on the CPU"). May be NULL. */
  void (*notice)(void *ud, const char *msg);
  void *notice_ud;
  /* The backend of the ops that run on the host: NULL for the CPU's (pd_k_cpu()). The kernel
   * tests give a copy of it without its optional entries (kernels.h: lstm_seq, ...), to run
   * the code that ops take on backends without them (the GPU's) on the CPU. Borrowed: it must
   * outlive the executor. */
  const pd_k_backend *host;
} pd_exec_options;

/* Prepare every block of p. Unknown op types, ops without a kernel and sub-block attributes
 * that do not name a block give PD_EUNSUPPORTED / PD_EFORMAT at the op's location. p should
 * have passed pd_program_validate (programs from the compiler or pd_program_load have). opts
 * may be NULL (defaults: no NaN check, seed 0, no interrupt). */
pd_status pd_exec_new(const pd_program *p, const pd_exec_options *opts, pd_exec **out,
                      pd_error *err);
void pd_exec_free(pd_exec *ex);  /* NULL is a no-op */
const pd_program *pd_exec_program(const pd_exec *ex);
/* Reseed the generator of random ops with seed 0 (counter back to 0). */
void pd_exec_seed(pd_exec *ex, uint64_t seed);

/* ---- Running ---- */

/* A value given to a run by name, or a var to fetch from it. */
typedef struct pd_exec_feed {
  const char *name;
  const pd_tensor *value;   /* shared into the var (no copy of the data) */
} pd_exec_feed;

typedef struct pd_exec_fetch {
  const char *name;
  pd_tensor *out;           /* caller's tensor: receives a deep copy of the var's value */
} pd_exec_fetch;

typedef struct pd_exec_io {
  int nfeeds;
  const pd_exec_feed *feeds;
  int nfetches;
  const pd_exec_fetch *fetches;
} pd_exec_io;

/* Run block 0 once: create a child scope of `global`, put the feeds into it (each must name a
 * var of block 0 whose dtype matches and whose known dims match the value's; the error names
 * the var and both shapes), run the ops, copy the fetches out, destroy the child scope.
 * io may be NULL. With keep != NULL the run scope is not destroyed but handed to the caller
 * (*keep; free it with pd_scope_free, or let global's destruction free it), for tests and for
 * passes that look at what the run left; such a run releases no temporary early. */
pd_status pd_exec_run(pd_exec *ex, pd_scope *global, const pd_exec_io *io, pd_scope **keep,
                      pd_error *err);

/* Run block `block_idx` directly in `scope` (no run scope, no feeds or fetches): the block's
 * own vars are created in `scope`, persistable vars of block 0 in the root of `scope`'s tree.
 * For the startup program (pd_exec_run_block(ex, 0, global)) and for tests. */
pd_status pd_exec_run_block(pd_exec *ex, int block_idx, pd_scope *scope, pd_error *err);

/* Put value into the var `name` of scope (shared, as a feed), checking it against the var's
 * desc in block 0 (dtype, rank, known dims, LoD level when the desc has one). */
pd_status pd_exec_feed_var(pd_exec *ex, pd_scope *scope, const char *name,
                           const pd_tensor *value, pd_error *err);

/* The position of the random generator in its stream, and setting it back (checkpoints: a
 * resumed run draws the numbers an uninterrupted one would have). */
uint64_t pd_exec_rng_offset(const pd_exec *ex);
void pd_exec_set_rng_offset(pd_exec *ex, uint64_t offset);

/* Statistics: ops run since pd_exec_new (for benchmarks and tests). */
uint64_t pd_exec_ops_run(const pd_exec *ex);

/* The op profiler (`pdlang run --profile`): while enabled, every kernel call of every executor
 * run by this thread is timed (wall clock; on the GPU the op waits for its stream, so the time
 * is the op's, at the price of a sync per op). Counts add up per op type (calls, total time,
 * and self time: the total less the ops of the blocks the op ran, so a `recurrent`'s self time
 * is its own work between steps) and per op of the source (type and file:line:col; a gradient
 * op counts at its forward op's place). pd_exec_profile_report prints the types sorted by
 * self time, then the `top` hottest ops of the source (0: all). The state is per thread; the
 * site table it allocates is freed by pd_exec_profile_reset. begin/end are exec.c's bracket around a call. */
void pd_exec_profile_enable(bool on);
bool pd_exec_profile_enabled(void);
void pd_exec_profile_reset(void);  /* zero the counts, free the table */
void pd_exec_profile_report(FILE *f, size_t top);
uint64_t pd_exec_profile_begin(uint64_t *saved_child_ns);
/* An op without a source location (a loaded model's) counts under name (its first output var,
 * or NULL), so that the hottest ops of a model name its layers. */
void pd_exec_profile_end(const pd_opdef *def, const pd_loc *loc, const char *name,
                         uint64_t start_ns, uint64_t saved_child_ns);

/* ============================ The kernel interface ============================
 * A kernel is `pd_status pd_kernel_<type>(pd_exec_ctx *ctx)` (declared in vm/ops/opkernels.h and
 * bound into the registry, vm/ops/ops.c). It reads its inputs and attributes through the functions
 * below, resizes and fills its outputs, and reports errors with pd_ctx_fail, which puts the
 * op's location on them. Before a kernel runs, the executor has checked that every var bound to
 * an input slot exists and, for tensor vars, holds a value: a kernel may use its inputs' data
 * directly. Kernels must not keep pointers to variables past their return. */
typedef struct pd_exec_ctx {
  pd_exec *ex;
  const pd_exec_op *xop;    /* the prepared op (use the functions below) */
  const pd_op_desc *op;     /* the op's desc: type, slots, attributes, loc */
  const pd_opdef *def;      /* its registry entry */
  pd_scope *scope;          /* the scope the op's block runs in */
  pd_variable **vars;       /* the block's var table for this run (private) */
  const pd_k_backend *k;    /* the backend to compute with: the CPU's, or the GPU's for an op
                               placed there (its buffers are then device memory) */
  pd_k_rng *rng;            /* the executor's generator, for random ops with seed 0 */
  pd_error *err;
} pd_exec_ctx;

/* Inputs. The number of vars bound to an input slot (0 when absent), the i-th var (NULL when
 * absent or bound to PD_EMPTY_VAR_NAME), its name, and its tensor (NULL when absent or when
 * the var holds no tensor). pd_ctx_in is pd_ctx_in_at(ctx, slot, 0). */
int pd_ctx_nin(const pd_exec_ctx *ctx, const char *slot);
pd_variable *pd_ctx_in_var(const pd_exec_ctx *ctx, const char *slot, int i);
const char *pd_ctx_in_name(const pd_exec_ctx *ctx, const char *slot, int i);
const pd_tensor *pd_ctx_in_at(const pd_exec_ctx *ctx, const char *slot, int i);
const pd_tensor *pd_ctx_in(const pd_exec_ctx *ctx, const char *slot);
/* Whether the i-th var of an input slot is one of the program's constants: a persistable var
 * of block 0 that no op of the program writes (an inference model's weights). Its values stay
 * the same from run to run unless something outside the program writes them, so a kernel may
 * keep the backend's prepared copy of it (pd_tensor_prepared, vm/run/tensor.h). */
bool pd_ctx_in_const(const pd_exec_ctx *ctx, const char *slot, int i);
/* Whether the i-th var of an input slot is a temporary of block 0 that this run releases right
 * after this op (its last user; not fetched): its tensor's storage may then pass to an output
 * instead of being copied (reshape2's Out). False in a run that keeps its temporaries. */
bool pd_ctx_in_dies(const pd_exec_ctx *ctx, const char *slot, int i);

/* Outputs, likewise. pd_ctx_out gives the tensor of the first var bound to the slot (the var
 * becomes a LOD_TENSOR if it was unset), NULL when the slot is absent or unbound, or when the
 * var holds something else. */
int pd_ctx_nout(const pd_exec_ctx *ctx, const char *slot);
pd_variable *pd_ctx_out_var(const pd_exec_ctx *ctx, const char *slot, int i);
const char *pd_ctx_out_name(const pd_exec_ctx *ctx, const char *slot, int i);
pd_tensor *pd_ctx_out_at(const pd_exec_ctx *ctx, const char *slot, int i);
pd_tensor *pd_ctx_out(const pd_exec_ctx *ctx, const char *slot);

/* Resize an output (pd_tensor_resize) and turn failure into an error at the op. out's LoD is
 * cleared; copy the input's with pd_tensor_copy_lod where the op keeps it. Mind in-place ops
 * (out is the input's tensor): take the input's LoD before resizing, and note that resizing a
 * tensor whose storage is shared (a fed value) gives it new storage, so read the input first. */
pd_status pd_ctx_resize(const pd_exec_ctx *ctx, pd_tensor *out, pd_dtype dtype, int ndims,
                        const int64_t *dims);

/* Attributes, falling back to the registry default when the op does not set one (programs
 * written by other tools may omit them). Integer getters accept INT, LONG and BOOLEAN
 * attributes, float getters FLOAT and FLOAT64. A missing attribute without a default gives the
 * zero value; kernels whose attributes are required rely on pd_opdef_check having run. */
int64_t pd_ctx_attr_int(const pd_exec_ctx *ctx, const char *name);
double pd_ctx_attr_float(const pd_exec_ctx *ctx, const char *name);
bool pd_ctx_attr_bool(const pd_exec_ctx *ctx, const char *name);
const char *pd_ctx_attr_str(const pd_exec_ctx *ctx, const char *name);  /* "" if absent */
/* An INTS or LONGS attribute as int64: up to cap elements to out; returns the length (which
 * may exceed cap), or -1 when the attribute is neither set nor defaulted. */
int pd_ctx_attr_ints(const pd_exec_ctx *ctx, const char *name, int64_t *out, int cap);
/* A FLOATS/FLOAT64S list attribute's raw pd_attr (NULL if absent): for assign_value and co. */
const pd_attr *pd_ctx_attr_raw(const pd_exec_ctx *ctx, const char *name);

/* Report an error at the op: the message is prefixed with the op type ("mul: ...") and
 * carries the op's location. Returns st. */
pd_status pd_ctx_fail(const pd_exec_ctx *ctx, pd_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A kernel's status turned into an error at the op when the kernel left no message. */
pd_status pd_ctx_check(const pd_exec_ctx *ctx, pd_status st, const char *what);

/* ---- Places. A kernel may run with ctx->k the GPU backend: its input and output tensors
 * are then on the GPU, and host code must not read their data directly. These helpers work on
 * either place. ---- */
pd_k_place pd_ctx_place(const pd_exec_ctx *ctx);
/* nbytes of scratch memory where the op computes (an error at the op on failure); free it
 * with pd_ctx_scratch_free. */
void *pd_ctx_scratch(const pd_exec_ctx *ctx, size_t nbytes, pd_status *st);
void pd_ctx_scratch_free(const pd_exec_ctx *ctx, void *p);
/* n scratch buffers at once, bufs[i] of sizes[i] bytes (at least one byte each): all or none
 * (an error at the op, every one freed and NULL, when one fails). Free with
 * pd_ctx_scratch_free_n. */
pd_status pd_ctx_scratch_n(const pd_exec_ctx *ctx, int n, char **bufs, const size_t *sizes);
void pd_ctx_scratch_free_n(const pd_exec_ctx *ctx, int n, char **bufs);
/* Copy nbytes between two buffers of the op's place. */
pd_status pd_ctx_copy(const pd_exec_ctx *ctx, void *dst, const void *src, size_t nbytes);
/* t's data readable on the host: t's own data for a host tensor, else a host copy in *tmp
 * (free with pd_k_host_free; NULL when no copy was made). NULL with an error on failure. */
const void *pd_ctx_host_data(const pd_exec_ctx *ctx, const pd_tensor *t, void **tmp,
                             pd_status *st);
/* nbytes of host data where the op computes: host itself on the host, else a copy in
 * scratch (*tmp, free with pd_ctx_scratch_free; NULL when no copy was made). */
const void *pd_ctx_at_place(const pd_exec_ctx *ctx, const void *host, size_t nbytes,
                            void **tmp, pd_status *st);

/* Shapes in messages: "[64, 784]" into buf (n bytes). Returns buf. */
const char *pd_ctx_shape_str(const pd_tensor *t, char *buf, size_t n);

/* Control flow: run the op's sub-block (attribute "sub_block") in `scope`, a scope the kernel
 * made (a step scope or a child of ctx->scope). The block's own vars are created there; names of
 * enclosing blocks resolve through scope's parents. */
pd_status pd_ctx_run_sub_block(const pd_exec_ctx *ctx, pd_scope *scope);
/* The prepared sub-block's desc (NULL when the op has none). */
const pd_block *pd_ctx_sub_block(const pd_exec_ctx *ctx);

#endif /* PD_EXEC_H */
