/* ops.h -- the op registry: the VM's instruction set. One record (pd_opdef) per op type, generated
 * from the single list in vm/oplist.h, says everything the rest of pdlang needs to know about an
 * op: its Fluid type name, input and output slots, attributes with types and defaults, its flags
 * (differentiable, runs on the GPU, row-wise, ...), its compile-time shape function and its
 * kernel. Each differentiable op also has a gradient op, "<type>_grad" (vm/ops/ops_grad.c).
 *
 * How the compiler uses it, per op it appends to a block:
 *
 *     pd_op_desc *op = pd_block_add_op(block, "mul", -1);   ...bind slots, set attrs, loc...
 *     if ((st = pd_opdef_prepare(op, block, err))) return st;   // check + defaults + shapes
 *
 * pd_opdef_prepare is pd_opdef_check (the op against its def), pd_opdef_fill_defaults (missing
 * attributes get their defaults), then pd_opdef_infer_shape (output dtypes, shapes and LoD
 * levels). Errors carry the op's source location and a sentence naming the shapes at fault.
 *
 * Ownership: the registry is static and immutable; every pointer it hands out lives for the
 * whole program. The functions here never take ownership of an op desc or block.
 *
 * Conventions the shape functions follow: -1 is an unknown (batch) dimension and never causes an
 * error by itself; ndims -1 is an unknown rank, which makes the outputs' rank unknown too;
 * a reduction to a single value has shape [1], as in Fluid 1.x. */
#ifndef PD_OPS_H
#define PD_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "vm/ir/program.h"

/* ---- The op kinds: PD_OP_mul, PD_OP_elementwise_add, ... (vm/oplist.h, sorted by name). ---- */
typedef enum pd_op_kind {
#define PD_OPK(name, flags, infer, inputs, outputs, attrs, kernel) PD_OP_##name,
#include "vm/oplist.h"
#undef PD_OPK
  PD_OP_COUNT_
} pd_op_kind;

/* Slot flags (Fluid's OpProto.Var fields). A slot without flags takes exactly one var. */
enum {
  PD_SLOT_DUPLICABLE = 1u << 0,   /* a list of vars (Fluid: AsDuplicable) */
  PD_SLOT_DISPENSABLE = 1u << 1,  /* optional: may be absent or bound to no var (AsDispensable) */
  PD_SLOT_INTERMEDIATE = 1u << 2, /* an output only the backward pass reads (AsIntermediate:
                                     XShape, Mask, MaxIndex); always also dispensable here */
  /* Where the slot's values must be when the op computes on the GPU (vm/run/exec_place.h);
   * neither: where the op computes. */
  PD_SLOT_HOST = 1u << 3,         /* [HOST] on the host: scalars and shapes the kernel reads
                                     there (a learning rate, a ShapeTensor) */
  PD_SLOT_ANY = 1u << 4,          /* [ANY] wherever they are: vars a control-flow op only hands
                                     to its block, or whose dims alone it reads (shape) */
  PD_SLOT_SCOPES = 1u << 5,       /* [SCOPES] a STEP_SCOPES var: the scopes a block op ran its
                                     block in (op() makes such an output of that type) */
};

/* The constants family kernels read from pd_opdef.karg where the backend's enums (pd_k_binop,
 * pd_k_unop, pd_k_redop, pd_k_act, ...) name none: which member of its family an op is. */
enum {
  PD_OPV_SOFTMAX = 0, PD_OPV_LOG_SOFTMAX = 1,  /* softmax */
  PD_OPV_UNIFORM = 0, PD_OPV_GAUSSIAN = 1,     /* random_fill */
  PD_OPV_EXPAND = 0, PD_OPV_TILE = 1,          /* repeat: expand_v2, tile */
  PD_OPV_ADAM = 0, PD_OPV_ADAMW = 1,           /* adam */
  PD_OPV_ARG_MAX = 0, PD_OPV_ARG_MIN = 1,      /* arg_max */
  PD_OPV_TOP_K = 0, PD_OPV_TOP_K_V2 = 1,       /* top_k: v1 (the last axis), v2 (axis, largest) */
  PD_OPV_ONE_HOT = 1, PD_OPV_ONE_HOT_V2 = 2,   /* one_hot: v1 (X [..., 1]), v2 (a new last dim) */
  PD_OPV_MATMUL = 1, PD_OPV_MATMUL_V2 = 2,     /* matmul: Fluid's (alpha, batches as one count),
                                                  v2 (NumPy's) */
  PD_OPV_REDUCE_PROD = 100,                    /* reduce, beside the pd_k_redop values */
};

/* Op flags, written in vm/oplist.h as the names in brackets (see its header). A gradient op's
 * flags are 0: its forward op's flags say what there is to know about it (GPU_GRAD). */
enum {
  PD_OPF_DIFF = 1u << 0,     /* [DIFF] differentiable: it has a gradient op, "<type>_grad" */
  PD_OPF_FLOAT = 1u << 1,    /* [FP_IN] the first input must hold floating-point values */
  PD_OPF_SEQUENCE = 1u << 2, /* [SEQ_IN] the first input must be a sequence (lod_level >= 1) */
  PD_OPF_GPU = 1u << 3,      /* [GPU] its kernel computes on the GPU when the executor is there
                                (vm/run/exec_place.h) */
  PD_OPF_GPU_GRAD = 1u << 4, /* [GPU_GRAD] so does its gradient op's kernel (DIFF ops only) */
  /* Row-wise ops: row i of the output (its first dimension) is computed from row i of the
   * inputs named below and from the whole of the others. vm/passes/hoist.c moves such ops out
   * of loop bodies. At most one of these per op. */
  PD_OPF_ROW_X = 1u << 5,    /* [ROW_X] rows in X, other inputs whole (unary maps, mul) */
  PD_OPF_ROW_XY = 1u << 6,   /* [ROW_XY] elementwise X op Y: rows in X, in Y or in both, the
                                other operand broadcast (attribute axis) */
  PD_OPF_ROW_IDS = 1u << 7,  /* [ROW_IDS] rows in Ids, the table W whole (lookup_table) */
  PD_OPF_AMP = 1u << 8,      /* [AMP] a matrix product that mixed precision runs in bf16 or
                                fp16 (Paddle's AMP white list; vm/passes/amp.h sets its
                                mkldnn_data_type, which its kernels and its gradient's read) */
};
#define PD_OPF_ROW_ANY (PD_OPF_ROW_X | PD_OPF_ROW_XY | PD_OPF_ROW_IDS)

/* PD_IF_DIFF(flags, tokens...): the tokens when the flags of an entry of vm/oplist.h, as written
 * there, include DIFF, else nothing; how vm/ops/opkernels.h and vm/ops/ops_grad.c make the
 * gradient kernels' prototypes and table from the list. The preprocessor cannot evaluate
 * `DIFF | FP_IN`, so it looks at the first flag: DIFF, when present, is written first (ops.c
 * asserts it for every entry). */
#define PD_IF_DIFF(flags, ...) PD_IF_CAT_(PD_IF_, PD_IS_DIFF_(flags))(__VA_ARGS__)
#define PD_IS_DIFF_(flags) PD_IF_SECOND_(PD_IF_PASTE_(PD_IF_DIFF_PROBE_, flags), 0, ~)
#define PD_IF_DIFF_PROBE_DIFF ~, 1,
#define PD_IF_DIFF_PROBE_PD_OPF_DIFF ~, 1, /* DIFF after ops.c's vocabulary expanded it */
#define PD_IF_PASTE_(a, b) a##b
#define PD_IF_CAT_(a, b) PD_IF_PASTE_(a, b)
#define PD_IF_SECOND_(...) PD_IF_SECOND__(__VA_ARGS__)
#define PD_IF_SECOND__(a, b, ...) b
#define PD_IF_0(...)
#define PD_IF_1(...) __VA_ARGS__

/* The parts of an entry's kernel, once vm/oplist.h's KERNEL(family, constant) or
 * KERNELS(forward, gradient, constant) has become "forward, gradient, constant" (what the
 * list's consumers define them to): the kernel, the gradient kernel, the constant. */
#define PD_KERNEL_FWD_(...) PD_KERNEL_FWD__(__VA_ARGS__)
#define PD_KERNEL_FWD__(f, g, a) pd_kernel_##f
#define PD_KERNEL_GRAD_(...) PD_KERNEL_GRAD__(__VA_ARGS__)
#define PD_KERNEL_GRAD__(f, g, a) pd_kernel_##g
#define PD_KERNEL_ARG_(...) PD_KERNEL_ARG__(__VA_ARGS__)
#define PD_KERNEL_ARG__(f, g, a) (a)

typedef struct pd_slotdef {
  const char *name;  /* "X", "Y", "Input", "Filter", "Label", ... as in Fluid */
  unsigned flags;    /* PD_SLOT_* */
} pd_slotdef;

/* An attribute's default value; which members are used depends on the attribute's type. */
typedef struct pd_attrval {
  int64_t i;         /* INT, LONG, BOOLEAN (0 or 1) */
  double f;          /* FLOAT, FLOAT64 */
  const char *s;     /* STRING */
  int n;             /* list types: number of elements */
  union {            /* list types: the elements, typed as the attribute */
    const int32_t *ints;
    const int64_t *longs;
    const float *floats;
    const char *const *strings;
  } l;
} pd_attrval;

typedef struct pd_attrdef {
  const char *name;             /* "x_num_col_dims", "axis", "sub_block", ... as in Fluid */
  pd_attr_type type;            /* PD_ATTR_INT, PD_ATTR_INTS, PD_ATTR_BLOCK, ... */
  bool required;                /* no default: the op must set it (BLOCK attributes always) */
  pd_attrval def;               /* the default, when not required */
  const char *const *choices;   /* STRING only: the allowed values, NULL-terminated; NULL = any */
} pd_attrdef;

typedef struct pd_opdef pd_opdef;

/* What a shape function works on. Vars are found in `block` and its parents
 * (pd_block_find_var); vm/ops/infershape.h has the helpers shape functions use. */
typedef struct pd_infer_ctx {
  const pd_opdef *def;
  pd_op_desc *op;
  pd_block *block;  /* the block that holds op */
  pd_error *err;    /* may be NULL */
} pd_infer_ctx;

/* Compile-time shape inference: sets the dtype, shape and LoD level of op's output vars from its
 * inputs and attributes. Returns PD_OK, PD_ESHAPE/PD_ETYPE/PD_EINVAL with a message, PD_ENOMEM. */
typedef pd_status (*pd_infer_fn)(pd_infer_ctx *ctx);

/* Run time: the kernel runs the op on the variables its execution context (vm/run/exec.h) binds
 * to its slots. Every op has one (vm/ops/opkernels.h), every gradient op too; the executor calls
 * it. The gradient ops themselves are appended by the backward pass (vm/passes/backward.h). */
struct pd_exec_ctx;
typedef pd_status (*pd_kernel_fn)(struct pd_exec_ctx *ctx);

struct pd_opdef {
  pd_op_kind kind;
  const char *type;             /* Fluid op type: "mul", "elementwise_add", "while", ... */
  unsigned flags;               /* PD_OPF_* */
  int ninputs, noutputs, nattrs;
  const pd_slotdef *inputs;     /* ninputs slots, in Fluid's order */
  const pd_slotdef *outputs;
  const pd_attrdef *attrs;      /* nattrs attributes */
  pd_infer_fn infer_shape;      /* never NULL */
  pd_kernel_fn kernel;          /* never NULL */
  int karg;                     /* the constant of a family kernel (vm/oplist.h's KERNEL(family,
                                   constant): PD_K_ADD for elementwise_add), which the kernel
                                   reads from ctx->def->karg; 0 for an op's own kernel. A gradient
                                   op has its forward op's */
  const pd_opdef *forward;      /* a gradient op ("mul_grad"): the op it differentiates; else NULL.
                                   Its kind is the forward op's. */
};

/* The registry, indexed by pd_op_kind; sorted by type name. */
extern const pd_opdef pd_opdefs[PD_OP_COUNT_];

/* The def of an op type (binary search), or NULL. Resolve once per op, not per step. */
const pd_opdef *pd_opdef_lookup(const char *type);
/* The gradient op of a forward op ("mul" -> "mul_grad"; vm/ops/ops_grad.c says how its slots derive
 * from the forward op's), or NULL when fwd has none (not differentiable, or fwd is itself a
 * gradient op). pd_opdef_lookup finds gradient ops by name too. */
const pd_opdef *pd_opdef_grad(const pd_opdef *fwd);
/* How many ops have a gradient op (those marked DIFF in vm/oplist.h). */
int pd_opdef_grad_count(void);

/* The def of op's type (pd_opdef_lookup(op->type)), or NULL for a type the registry does not
 * know. Whether op is the forward op of kind `kind` (pd_opdef_is: "recurrent", not
 * "recurrent_grad"), or its gradient op (pd_opdef_is_grad: "mul_grad" for PD_OP_mul). For the
 * passes, which dispatch on kinds rather than compare type names. */
const pd_opdef *pd_opdef_of(const pd_op_desc *op);
bool pd_opdef_is(const pd_op_desc *op, pd_op_kind kind);
bool pd_opdef_is_grad(const pd_op_desc *op, pd_op_kind kind);

/* The def of a kind, or NULL when kind is out of range. */
const pd_opdef *pd_opdef_get(pd_op_kind kind);
/* A def's input/output slot or attribute by name, or NULL. */
const pd_slotdef *pd_opdef_input(const pd_opdef *def, const char *name);
const pd_slotdef *pd_opdef_output(const pd_opdef *def, const char *name);
const pd_attrdef *pd_opdef_attr(const pd_opdef *def, const char *name);

/* The names of the op types that start with prefix (NULL or "" for all), in alphabetical order:
 * up to cap of them go to names[] (static strings). Returns how many match, which may exceed cap,
 * so a caller may ask with cap 0 first. For `pdlang ops` and REPL completion. */
int pd_opdef_names(const char *prefix, const char **names, int cap);

/* The closest op type name to a misspelt one ("elementwise_ad" -> "elementwise_add"), or NULL
 * when none is close. For "unknown op" messages. */
const char *pd_opdef_suggest(const char *type);

/* Check op against its def without changing it: the type is known; every slot it binds exists in
 * the def and is bound once, every required slot is bound, a one-var slot has at most one var,
 * every var it names is visible from block (pd_block_find_var_visible: the block, its parents,
 * and for a gradient block the forward ones; PD_EMPTY_VAR_NAME stands for "no var"); every
 * attribute is known (to the def, or one of the framework-wide ones Fluid puts on every op, like
 * op_role), has the def's type (an integer or integer list of the other width when its values
 * fit, a float of the other precision), is one of the allowed values, names a block of the
 * program other than block 0; every required attribute is set. Returns PD_OK, PD_ENOTFOUND
 * (unknown type, undeclared var), PD_EINVAL or PD_ETYPE, with a message at the op's loc
 * ("mul: unknown attribute x_num_col_dim (did you mean x_num_col_dims?)"). */
pd_status pd_opdef_check(const pd_op_desc *op, const pd_block *block, pd_error *err);
/* Give attribute a of op (of type def) the type its def, or the framework-wide attributes, say,
 * where an older version wrote it in another type and the value survives: INT or LONG 0/1 for
 * a BOOLEAN, an integer of the other width (LONG to INT in range), FLOAT for FLOAT64 and
 * FLOAT64 for FLOAT (when the float holds it exactly), LONGS/INTS, FLOAT64S for FLOATS likewise.
 * PD_OK (converted, or nothing this converts: pd_opdef_check judges it), PD_ETYPE naming the
 * attribute, its type and value when the value would not survive, PD_ENOMEM. */
pd_status pd_opdef_convert_attr(const pd_opdef *def, const pd_op_desc *op, pd_attr *a,
                                pd_error *err);
/* def's attribute `name`, or the framework-wide one every op may carry (op_role, is_test, ...),
 * or NULL: what pd_opdef_convert_attr converts to. */
const pd_attrdef *pd_opdef_attr_any(const pd_opdef *def, const char *name);

/* Give op every attribute its def declares with a default that op does not set.
 * PD_OK, PD_ENOTFOUND for an unknown type, or PD_ENOMEM (op keeps what was added before). */
pd_status pd_opdef_fill_defaults(pd_op_desc *op, pd_error *err);

/* Run op's shape function in block (op should have passed pd_opdef_check). Also enforces the
 * PD_OPF_FLOAT and PD_OPF_SEQUENCE flags. Missing attributes read as their defaults. */
pd_status pd_opdef_infer_shape(pd_op_desc *op, pd_block *block, pd_error *err);

/* check, fill_defaults, infer_shape: what the compiler calls for each op it appends. */
pd_status pd_opdef_prepare(pd_op_desc *op, pd_block *block, pd_error *err);

#endif /* PD_OPS_H */
