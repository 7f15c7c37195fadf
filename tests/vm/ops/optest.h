/* optest.h -- the op-test table: one row per case of an op, run by one driver (test_optable.c)
 * everywhere it applies (ggml's test-backend-ops is the model):
 *   - on the CPU, in fp64 and in fp32, against the row's reference: values computed in the row
 *     file, in double, from the very inputs the op got (written from the op's definition, not
 *     from its kernel), or a check of properties where values cannot be foretold (random ops);
 *   - on the GPU against the CPU, when a GPU opens and vm/oplist.h flags the op GPU (its
 *     outputs) and GPU_GRAD (its gradients);
 *   - through the fp64 finite-difference check of its gradient op (gradcheck.h) when the op is
 *     DIFF.
 * Coverage comes from the flags: an op flagged GPU, GPU_GRAD or DIFF without a row fails, and a
 * DIFF op must pass a finite-difference check in one of its rows.
 *
 * A row of an op that runs alone (most):
 *
 *   {.op = "elementwise_add", .what = "axis 1", .attrs = "axis=1",
 *    .in = {{"X", "[2, 3, 4]"}, {"Y", "[3]"}}, .ref = ref_binary},
 *
 * Its inputs are generated (uniform in [lo, hi), [-1, 1) by default, from a generator seeded by
 * the row, the same in both passes), or given (.v); an input slot given twice is a list. Its
 * outputs are every output slot the op cannot do without and every TEMP one (or .outs). The
 * reference fills the expected values of the outputs it knows (ot_out) from the inputs (ot_in)
 * and attributes (ot_int, ...), in double; each is compared with the op's: the same dims, and
 * values within .tol of max(1, |want|) in fp32 (1e-5 by default) and .tol64 in fp64 (1e-10).
 * Integer and bool outputs must be equal.
 *
 * A row of an op that owns a block (conditional_block, while, recurrent, and the ops the
 * language's if/else makes) is a script instead: .script, its .cost (a one-element var) and the
 * cost's value worked out by hand (.want); .covers names the ops the compiled program must hold.
 * The cost's gradient with respect to every parameter is checked by finite differences (fp64).
 *
 * Attributes are text, "name=value ..." with values as the op's attribute types want them: 1,
 * 0.5, true, [0, 1], "NCHW" (a string without spaces may go unquoted); $F stands for the pass's
 * float dtype code (cast's out_dtype=$F). Rows are kept in one file per family of vm/ops/
 * (optest_<family>.c, a table ot_rows_<family> ended by {0}); OT_FAMILIES lists the files. */
#ifndef PD_TESTS_OPTEST_H
#define PD_TESTS_OPTEST_H

#include <stdbool.h>
#include <stdint.h>

#include "base/dtype.h"

/* The element type of an input: OT_F is the pass's float type (fp64, then fp32; fp64 in the
 * gradient check); the others are fixed. */
typedef enum ot_type { OT_F = 0, OT_I64, OT_I32, OT_BOOL, OT_F32 } ot_type;

enum { OT_MAX_IN = 20, OT_MAX_DIMS = 9 };

typedef struct ot_input {
  const char *slot;       /* the op's input slot ("X"); NULL ends the list */
  const char *shape;      /* "[2, 3]"; "[]" is a 0-d tensor */
  ot_type type;
  double lo, hi;          /* floats uniform in [lo, hi) (both 0: [-1, 1)); integers in [lo, hi] */
  const double *v;        /* the values instead (as many as the shape holds) */
  const int64_t *lod;     /* one LoD level: nlod offsets (a batch of sequences) */
  int nlod;
} ot_input;

/* Values as the reference sees them: dims, and n elements as doubles (row-major). */
typedef struct ot_val {
  pd_dtype dt;            /* its element type */
  int nd;
  int64_t dims[OT_MAX_DIMS];
  int64_t n;
  double *v;
  int nlod;               /* the input's LoD level 0 offsets, nlod of them (0: none) */
  const int64_t *lod;
} ot_val;

typedef struct ot_ref ot_ref;

typedef struct ot_row {
  const char *op;         /* the op type; NULL ends a table */
  const char *what;       /* what the case is about, for the TAP lines ("axis 1") */
  const char *attrs;      /* "axis=1 keep_dim=true dim=[0, 1]" */
  ot_input in[OT_MAX_IN];
  const char *outs;       /* output slots to bind: "Y MeanOut", "Out:3" (three vars), "Out=X"
                             (in place: X's vars); NULL: the op's needed ones */
  const char *loss;       /* outputs the gradient check weighs; NULL: the first bound output */
  const char *wrt;        /* inputs whose gradients are checked; NULL: every OT_F input */
  void (*ref)(ot_ref *r); /* fills the expected outputs (ot_out); or: */
  void (*check)(ot_ref *r); /* checks the outputs (ot_got) and says what is wrong (ot_fail) */
  double tol, tol64, gtol;  /* fp32 and fp64 value tolerances, the gradient check's (1e-6) */
  bool no_fp64;           /* the op computes in fp32 only */
  bool no_grad;           /* no finite-difference check in this row (another row has it) */
  uint64_t seed;          /* the executor's seed (random ops with seed 0) */
  /* A script row (ops that own blocks): */
  const char *script;     /* the program */
  const char *cost;       /* the var whose value (.want, nwant elements) and gradients count */
  const double *want;
  int nwant;
  const char *covers;     /* ops the compiled program must hold ("conditional_block ...") */
  int nparams;            /* how many parameters get gradients */
} ot_row;

/* ---- For references and checks. ---- */
/* An input's values: the i-th var of the slot (NULL when the row has none). */
const ot_val *ot_in(ot_ref *r, const char *slot);
const ot_val *ot_in_at(ot_ref *r, const char *slot, int i);
int ot_nin(ot_ref *r, const char *slot);
/* The expected values of an output to fill: nd dims; zeros until written. ot_out_like takes the
 * shape of v. A slot the reference does not fill is not compared. */
double *ot_out(ot_ref *r, const char *slot, int nd, const int64_t *dims);
double *ot_out_at(ot_ref *r, const char *slot, int i, int nd, const int64_t *dims);
double *ot_out_like(ot_ref *r, const char *slot, const ot_val *v);
/* The op's attributes (its defaults where the row sets none). ot_ints gives up to cap values
 * and returns how many the list has. */
int64_t ot_int(ot_ref *r, const char *name);
double ot_float(ot_ref *r, const char *name);
bool ot_bool(ot_ref *r, const char *name);
const char *ot_str(ot_ref *r, const char *name);
int ot_ints(ot_ref *r, const char *name, int64_t *v, int cap);
/* Mixed precision: PD_BF16 or PD_FP16 when the row marks an AMP op (attrs
 * "mkldnn_data_type=bfloat16", as vm/passes/amp.h does) and the pass is fp32, where the op's
 * products round their operands to it; else 0. */
pd_dtype ot_amp(ot_ref *r);
/* The pass's float type (PD_FP64 or PD_FP32): a reference rounds where the op must. */
pd_dtype ot_dtype(ot_ref *r);
/* The row's op type (a reference shared by a family tells its members apart by it). */
const char *ot_op(ot_ref *r);
/* For checks: an output's values after the run (NULL when the op left none). */
const ot_val *ot_got(ot_ref *r, const char *slot);
const ot_val *ot_got_at(ot_ref *r, const char *slot, int i);
/* A check's verdict: the first failure is reported. */
void ot_fail(ot_ref *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Shape helpers for references: the number of elements of dims; row-major index arithmetic. */
int64_t ot_numel(int nd, const int64_t *dims);

/* ---- The tables, one per family file of vm/ops/. ---- */
#define OT_FAMILIES(X)                                                                         \
  X(activation) X(amp) X(collective) X(control) X(create) X(detection) X(elementwise)         \
  X(index) X(interp) X(loss) X(loss_elem) X(matmul) X(nn) X(norm) X(optim) X(pad)             \
  X(recurrent) X(reduce) X(rnn) X(rnn_fused) X(select) X(sequence) X(shape)
#define OT_DECLARE_(family) extern const ot_row ot_rows_##family[];
OT_FAMILIES(OT_DECLARE_)
#undef OT_DECLARE_

#endif /* PD_TESTS_OPTEST_H */
