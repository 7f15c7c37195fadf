/* program.h -- the in-memory ProgramDesc: a flat array of blocks, each with a parent index,
 * holding variable descriptions and op descriptions. An op that owns a block (conditional_block,
 * while, recurrent) names it with a BLOCK attribute ("sub_block"). This is what the compiler
 * builds, what InferShape, backward and Prune rewrite, what the executor runs, and what
 * vm/ir/serialize.c turns into PaddlePaddle Fluid's framework.proto bytes and back.
 *
 * The structs are transparent so passes can walk them directly; mutate them only through the
 * functions here, which keep the indexes (name lookup) consistent.
 *
 * Ownership: a pd_program owns its blocks; a block owns its vars and ops; a var or op owns its
 * strings, dims and attributes. Everything is freed by pd_program_free. Pointers to blocks, vars
 * and ops stay valid until the program is freed or the element is removed (they are allocated
 * one by one; the arrays hold pointers). Functions taking `const char *` copy the string. */
#ifndef PD_PROGRAM_H
#define PD_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "base/dtype.h"

/* Variable kinds, numbered as Fluid's VarType.Type. */
typedef enum pd_var_type {
  PD_VAR_LOD_TENSOR = 7,
  PD_VAR_SELECTED_ROWS = 8,
  PD_VAR_FEED_MINIBATCH = 9,
  PD_VAR_FETCH_LIST = 10,
  PD_VAR_STEP_SCOPES = 11,
  PD_VAR_LOD_RANK_TABLE = 12,
  PD_VAR_LOD_TENSOR_ARRAY = 13,
  PD_VAR_RAW = 17,
} pd_var_type;

const char *pd_var_type_name(pd_var_type t); /* "LOD_TENSOR", ...; "?" for other values */
bool pd_var_type_valid(int t);                 /* one of the values above */
/* True for the kinds that carry a dtype and a shape (LOD_TENSOR, SELECTED_ROWS,
 * LOD_TENSOR_ARRAY); the others (FEED_MINIBATCH, STEP_SCOPES, ...) ignore those fields. */
bool pd_var_type_has_tensor(pd_var_type t);

/* How deep sub-blocks may nest (a block's chain of parents up to block 0): the compiler, the
 * passes and the executor recurse once per level, and pd_program_validate refuses more. */
#define PD_MAX_BLOCK_DEPTH 256
/* The most dimensions a var may have (Fluid's limit too). */
#define PD_MAX_RANK 9
/* The name Fluid binds to a slot that has no var (an unused gradient); ops may name it freely. */
#define PD_EMPTY_VAR_NAME "@EMPTY@"

/* Attribute types, numbered as Fluid's AttrType. */
typedef enum pd_attr_type {
  PD_ATTR_INT = 0,
  PD_ATTR_FLOAT = 1,
  PD_ATTR_STRING = 2,
  PD_ATTR_INTS = 3,
  PD_ATTR_FLOATS = 4,
  PD_ATTR_STRINGS = 5,
  PD_ATTR_BOOLEAN = 6,
  PD_ATTR_BOOLEANS = 7,
  PD_ATTR_BLOCK = 8,
  PD_ATTR_LONG = 9,
  PD_ATTR_BLOCKS = 10,
  PD_ATTR_LONGS = 11,
  PD_ATTR_FLOAT64S = 12,
  PD_ATTR_FLOAT64 = 15,
} pd_attr_type;

const char *pd_attr_type_name(pd_attr_type t); /* "INT", "FLOATS", "BLOCK", ...; "?" */
bool pd_attr_type_valid(int t);                  /* one of the values above */
bool pd_attr_type_is_list(pd_attr_type t);       /* INTS, FLOATS, ..., BLOCKS, FLOAT64S */

typedef struct pd_attr {
  char *name;
  pd_attr_type type;
  union {
    int32_t i;      /* INT, and BLOCK (a block index) */
    int64_t l;      /* LONG */
    float f;        /* FLOAT */
    double d;       /* FLOAT64 */
    bool b;         /* BOOLEAN */
    char *s;        /* STRING */
  } v;
  /* List attributes (INTS, FLOATS, STRINGS, BOOLEANS, BLOCKS, LONGS, FLOAT64S): n elements in
   * the one array matching the type (BLOCKS uses ints). */
  int n;
  int32_t *ints;
  int64_t *longs;
  float *floats;
  double *doubles;
  bool *bools;
  char **strings;
} pd_attr;

typedef struct pd_var_desc {
  char *name;
  pd_var_type type;
  pd_dtype dtype;       /* element type for LOD_TENSOR / LOD_TENSOR_ARRAY */
  int ndims;            /* -1: shape not known */
  int64_t *dims;        /* ndims entries; -1 marks an unknown (batch) dimension */
  int lod_level;        /* 0 = plain tensor, 1 = batch of sequences, 2 = nested sequences */
  bool persistable;     /* parameters and optimizer state: live in the global scope */
  bool stop_gradient;   /* no gradient flows into this var (data, labels, ints) */
} pd_var_desc;

/* One named input or output slot of an op ("X", "Out", ...) and the vars bound to it. */
typedef struct pd_slot {
  char *param;
  int nargs;
  char **args;
} pd_slot;

/* `def` calls nest at most this deep (the compiler's limit; a chain read from a file longer than
 * this is not taken as one). */
#define PD_MAX_CALL_DEPTH 200

/* The `def` calls an op was written inside, innermost first: sites[0] is the call of the
 * function whose body holds the op, sites[n-1] the call in the user's code. Immutable and
 * shared (reference-counted) by the ops of one call and their copies, so a layer's ops cost one
 * chain; the strings live in the same block. */
typedef struct pd_callchain {
  _Atomic int refs;
  int n;                  /* >= 1 */
  pd_call_site sites[];
} pd_callchain;

typedef struct pd_op_desc {
  char *type;           /* "mul", "elementwise_add", "conditional_block", ... */
  int ninputs, noutputs, nattrs;
  pd_slot *inputs;
  pd_slot *outputs;
  pd_attr *attrs;
  pd_loc loc;           /* .pd source position where the op was written (inside a def: the
                           line in its body); loc.file is owned by the op */
  pd_callchain *calls;  /* the calls loc is inside, or NULL (a reference the op holds).
                           loc and calls are serialized as the STRINGS attribute
                           "op_callstack" (vm/ir/serialize.h) */
} pd_op_desc;

typedef struct pd_block {
  int idx;
  int parent_idx;         /* -1 for block 0 */
  int forward_block_idx;  /* for a gradient block: the forward block it mirrors; else -1 */
  int nvars, nops;
  pd_var_desc **vars;
  pd_op_desc **ops;
  struct pd_program *program;  /* back pointer (not owned) */
  void *var_index;             /* private: name -> var hash index */
} pd_block;

typedef struct pd_program {
  int nblocks;
  pd_block **blocks;      /* blocks[i]->idx == i; blocks[0] is the global block */
  int64_t version;        /* ProgramDesc.version */
  void *name_counts;      /* private: var name -> how many blocks declare it (NULL: none yet) */
  void *suffix_next;      /* private: hint -> the least K for which "hint.K" may be free */
} pd_program;

/* ---- Program and blocks ---- */
pd_program *pd_program_new(void);               /* with block 0; NULL on out of memory */
void pd_program_free(pd_program *p);
pd_program *pd_program_clone(const pd_program *p); /* deep copy; NULL on out of memory */
/* Append a block whose parent is parent_idx; returns it (its idx is the old nblocks). */
pd_block *pd_program_add_block(pd_program *p, int parent_idx);
pd_block *pd_program_block(const pd_program *p, int idx); /* NULL if out of range */
pd_block *pd_block_parent(const pd_block *b);            /* NULL for block 0 */

/* ---- Vars ---- */
/* Create a var in b, or return b's existing var of that name (like Scope::Var). New vars are
 * LOD_TENSOR, FP32, ndims -1, lod_level 0, not persistable. NULL on out of memory. */
pd_var_desc *pd_block_var(pd_block *b, const char *name);
pd_var_desc *pd_block_find_var_local(const pd_block *b, const char *name);
/* Search b, then its parents (like Scope::FindVar). */
pd_var_desc *pd_block_find_var(const pd_block *b, const char *name);
/* The var an op in b may name: search b and its parents like pd_block_find_var, and for each
 * gradient block on that chain (forward_block_idx >= 0) also the forward block it mirrors and
 * that block's parents, since a gradient op reads the forward values (Fluid's
 * Block._var_recursive). If owner is not NULL it receives the block that declares the var.
 * Terminates on malformed programs (parent cycles). NULL if not found. */
pd_var_desc *pd_block_find_var_visible(const pd_block *b, const char *name,
                                       const pd_block **owner);
/* Whether any block of p declares a var of this name, in constant time (the compiler's unique
 * names: scanning every block made compiling quadratic in the number of blocks). */
bool pd_program_has_var_name(const pd_program *p, const char *name);
/* The least K >= 1 for which no block of p declares a var named "hint.K" (the compiler's ".K"
 * suffixes). Amortized constant time: p remembers where the search for each hint stopped, and
 * goes back when a var of such a name is removed or renamed. -1 on out of memory. */
int64_t pd_program_free_suffix(pd_program *p, const char *hint);
/* Remove a var from b (frees it). Returns 0, or -1 if b has no such var. */
int pd_block_remove_var(pd_block *b, const char *name);
/* Set the shape (copies dims; ndims -1 = unknown, 0 = a scalar). 0, or -1 on out of memory or
 * bad arguments (ndims < -1, or dims NULL with ndims > 0). */
int pd_var_set_shape(pd_var_desc *v, int ndims, const int64_t *dims);
/* Rename a var (keeps the index consistent); 0, or -1 on out of memory or a clash. */
int pd_block_rename_var(pd_block *b, pd_var_desc *v, const char *new_name);

/* ---- Ops ---- */
/* Append an op of the given type at the end of b (pos = -1) or insert before position pos
 * (0 <= pos <= nops). NULL on out of memory or a pos out of range. */
pd_op_desc *pd_block_add_op(pd_block *b, const char *type, int pos);
/* A deep copy of src (slots, attributes, location and calls) added as pd_block_add_op adds an
 * op; src may belong to another block or program. NULL on out of memory or a pos out of range. */
pd_op_desc *pd_block_copy_op(pd_block *b, int pos, const pd_op_desc *src);
/* Remove (and free) the op at index i; nothing happens when i is out of range. */
void pd_block_remove_op(pd_block *b, int i);
/* Bind input/output slot `param` to the given vars (replaces an existing binding). 0 or -1. */
int pd_op_set_input(pd_op_desc *op, const char *param, int nargs, const char *const *args);
/* Remove input slot param / attribute name (freeing it); false when the op has none. */
bool pd_op_remove_input(pd_op_desc *op, const char *param);
bool pd_op_remove_attr(pd_op_desc *op, const char *name);
int pd_op_set_output(pd_op_desc *op, const char *param, int nargs, const char *const *args);
/* The slot named param, or NULL. */
const pd_slot *pd_op_input(const pd_op_desc *op, const char *param);
const pd_slot *pd_op_output(const pd_op_desc *op, const char *param);
/* The single var bound to a slot (first argument), or NULL when the slot is absent or empty. */
const char *pd_op_input1(const pd_op_desc *op, const char *param);
const char *pd_op_output1(const pd_op_desc *op, const char *param);
int pd_op_set_loc(pd_op_desc *op, pd_loc loc);  /* copies loc.file */
/* The chain of calls: a new one copying sites (n >= 1; NULL on out of memory), another
 * reference to one (NULL stays NULL), and the release of a reference. */
pd_callchain *pd_callchain_new(const pd_call_site *sites, int n);
pd_callchain *pd_callchain_ref(pd_callchain *ch);
void pd_callchain_unref(pd_callchain *ch);
/* op holds a reference to ch (NULL: none) instead of its chain before. */
void pd_op_set_calls(pd_op_desc *op, pd_callchain *ch);
/* dst takes src's location and chain of calls (an op made from another: a gradient, a fused
 * op). 0, or -1 on out of memory. */
int pd_op_copy_loc(pd_op_desc *dst, const pd_op_desc *src);
/* Where the user wrote the op: the outermost call's site when it is inside calls, else loc. */
pd_loc pd_op_user_loc(const pd_op_desc *op);
/* An error reported at op's location gets op's calls (err->calls), innermost first, unless it
 * has calls already or is located elsewhere. Returns st. */
pd_status pd_op_error_calls(pd_error *err, const pd_op_desc *op, pd_status st);

/* Attributes: setters replace an attribute of the same name. 0, or -1 on out of memory. */
int pd_op_set_attr_int(pd_op_desc *op, const char *name, int32_t v);
int pd_op_set_attr_long(pd_op_desc *op, const char *name, int64_t v);
int pd_op_set_attr_float(pd_op_desc *op, const char *name, float v);
int pd_op_set_attr_double(pd_op_desc *op, const char *name, double v);
int pd_op_set_attr_bool(pd_op_desc *op, const char *name, bool v);
int pd_op_set_attr_string(pd_op_desc *op, const char *name, const char *v);
int pd_op_set_attr_block(pd_op_desc *op, const char *name, int block_idx);
int pd_op_set_attr_ints(pd_op_desc *op, const char *name, int n, const int32_t *v);
int pd_op_set_attr_longs(pd_op_desc *op, const char *name, int n, const int64_t *v);
int pd_op_set_attr_floats(pd_op_desc *op, const char *name, int n, const float *v);
int pd_op_set_attr_doubles(pd_op_desc *op, const char *name, int n, const double *v);
int pd_op_set_attr_bools(pd_op_desc *op, const char *name, int n, const bool *v);
int pd_op_set_attr_strings(pd_op_desc *op, const char *name, int n, const char *const *v);
int pd_op_set_attr_blocks(pd_op_desc *op, const char *name, int n, const int32_t *v);
/* Any list type: data holds n elements as the pd_attr array of that type stores them (int32_t
 * for INTS and BLOCKS, int64_t, float, double, bool, char *). 0, or -1. */
int pd_op_set_attr_list(pd_op_desc *op, const char *name, pd_attr_type type, int n,
                        const void *data);
/* Copy an attribute (any type) onto op; 0 or -1. */
int pd_op_set_attr(pd_op_desc *op, const pd_attr *a);
const pd_attr *pd_op_attr(const pd_op_desc *op, const char *name); /* NULL if absent */
/* The array of a list attribute (the one of ints/longs/floats/doubles/bools/strings that its
 * type uses) and the size of one element; NULL and 0 for a scalar attribute. */
const void *pd_attr_list(const pd_attr *a);
size_t pd_attr_list_elem_size(pd_attr_type t);

/* ---- Checking and listing ---- */
/* Structural validation of a program from an untrusted source: block indices consistent, parents
 * in range and acyclic (every chain reaches block 0), BLOCK attributes point at existing blocks
 * that are not block 0 (nor the op's own block or one of its ancestors), forward_block_idx -1 or
 * another block, no negative dims other than -1, at most PD_MAX_RANK dims whose product fits in
 * int64, no NULL or empty names, known var/attr types and dtypes, var names unique per block,
 * slot and attribute names unique per op, and every var an op names visible from the op's block
 * (pd_block_find_var_visible; PD_EMPTY_VAR_NAME excepted). Returns PD_OK or PD_EFORMAT with a
 * message naming the block, op and var at fault ("block 1, op 2 (elementwise_add): input 'X'
 * names var 'q', which block 1 cannot see"). */
pd_status pd_program_validate(const pd_program *p, pd_error *err);
/* Append a readable listing (blocks with parents, vars with type/shape/persistable, ops with
 * slots, attrs and sub-block links) to out. The format is stable: golden tests compare it.
 * Safe on programs that fail validation. On out of memory out->oom is set. */
void pd_program_dump(const pd_program *p, pd_buf *out);
/* Append a Graphviz digraph of the program, each block a cluster nested in its parent's, ops
 * and vars as nodes, data-flow edges, and dashed edges from an op to its sub-block. Inside a
 * block, the ops of each `def` call (pd_op_desc.calls) and the vars they make form a cluster
 * labelled "fn (file:line)" of the call, nested as the calls nest; a long block 0 is laid out
 * in columns (cut between the user's calls) side by side instead of one strip. */
void pd_program_dump_dot(const pd_program *p, pd_buf *out);
/* A name made safe for a message into buf (size n >= 8): printable ASCII kept, other bytes as
 * \xHH, cut with "..." when longer than buf; "(null)" for NULL. Returns buf. */
const char *pd_program_excerpt(const char *name, char *buf, size_t n);

#endif /* PD_PROGRAM_H */
