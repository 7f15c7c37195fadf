/* compile_int.h -- private to the compiler (lang/compile.c, compile_expr.c, compile_stmt.c,
 * builtins.c): compile-time values, symbol tables, control-flow contexts and the helpers that
 * append ops. Not installed, not used outside those files. Its functions and variables are
 * pd_cmp_*: they are external symbols of the library, not part of any API.
 *
 * Memory: every value, binding, symbol table and name lives in the compiler's arena (freed with
 * the unit); program objects belong to the unit's programs. */
#ifndef PD_COMPILE_INT_H
#define PD_COMPILE_INT_H

#include "base/strmap.h"
#include "lang/ast.h"
#include "lang/compile.h"
#include "vm/ops/ops.h"

typedef struct pd_compiler C;
typedef struct value value;
typedef struct symtab symtab;

/* Imports may nest this deep (each level recurses through the compiler: a chain of thousands
 * overflowed the stack). */
#define PD_CMP_MAX_IMPORT_DEPTH 100

/* The compile-time work of one compilation, in steps: a statement compiled, a value or list
 * item made, a pass of a loop unrolled, a step each; a function inlined (its scope, its names)
 * PD_CMP_WORK_CALL steps, an op made (with its vars and attributes) PD_CMP_WORK_OP. Loops
 * unrolled inside each other (and functions calling functions) multiply, so one budget for the
 * whole compilation refuses a program past it before memory grows: a step is about a hundred
 * bytes of memory, so the compiler stays under some 300 MB. The examples and golden scripts take
 * at most 2.3% of it (tests/golden/run/else_if_too_deep.pd), the largest fuzz seed
 * (tests/fuzz/corpus_compile/slow_sequential_ifs.pd) 9%. */
#define PD_CMP_WORK_BUDGET 3000000
#define PD_CMP_WORK_OP 32
#define PD_CMP_WORK_CALL 8

/* ---- Values ---- */
typedef enum vkind {
  V_ERROR,    /* an error was reported: operations on it stay silent */
  V_UNDEF,    /* a name assigned in only some branches of an if: using it is an error */
  V_NONE,
  V_BOOL,
  V_INT,
  V_FLOAT,
  V_STR,
  V_LIST,
  V_TENSOR,   /* a run-time value: a var of the program */
  V_FUNC,     /* a `def` */
  V_BUILTIN,  /* a function written in C (lang/builtins.c) */
  V_DTYPE,
  V_RECORD,   /* a reader, optimizer or initializer spec: name(args...) */
  V_MODEL,    /* a saved model imported as a layer (lang/import_model.c) */
  V_METHOD,   /* a method of a value, such as m.layer: called with its object */
} vkind;

typedef struct pd_cmp_model pd_cmp_model;

typedef struct builtin builtin;

struct value {
  vkind k;
  union {
    bool b;
    int64_t i;
    double f;
    pd_dtype dtype;
    const char *s;                    /* V_STR (NUL-terminated) */
    struct { value **items; int n; } list;
    pd_var_desc *var;                 /* V_TENSOR */
    struct { const pd_ast_node *def; symtab *env; } fn;
    const builtin *bi;
    struct {
      const char *name;
      int n;
      const char **keys;
      value **vals;
      pd_loc *locs; /* where each argument was written */
      pd_loc loc;   /* where the call was */
    } rec;
    struct { pd_loc loc; const char *why; } undef;
    pd_cmp_model *model;              /* V_MODEL */
    struct { value *self; const char *name; } method;  /* V_METHOD */
  };
};

/* ---- Calls ---- */
typedef struct call_args {
  pd_loc loc;          /* the callee's position */
  const char *fname;   /* the function's name, for messages */
  int npos;
  value **pos;
  pd_loc *pos_loc;
  pd_loc *pos_start;   /* where each positional argument's text begins (pos_loc may be an
                          operator's position); for actions, which show arguments as written */
  int nkw;
  const char **kw;
  value **kwv;
  pd_loc *kw_loc;
  const pd_ast_node *body;  /* `op(...) { body }`: the block the op runs, else NULL */
} call_args;

typedef value *(*builtin_fn)(C *c, const builtin *self, call_args *a);

struct builtin {
  const char *name;
  builtin_fn fn;
  const char *op;          /* generic op builtins: the Fluid op type */
  const char *in[3];       /* generic: input slots taken positionally */
  const char *out;         /* generic: the output slot returned */
  const char *pattr[3];    /* generic: attributes taken positionally after the inputs */
};

/* ---- Symbol tables ---- */
typedef enum scope_kind {
  SC_GLOBAL,   /* the script's top level (block 0) */
  SC_PLAIN,    /* the body of an `if` resolved at compile time */
  SC_BRANCH,   /* a branch of a tensor `if`: a block of its own */
  SC_LOOP,     /* the body of `for` or `while`: a block of its own */
  SC_FUNC,     /* an inlined `def` body; its parent is the defining scope, not the caller */
} scope_kind;

typedef struct binding {
  const char *name;
  value *v;
  pd_loc loc;
  bool is_let;
  struct binding *next;     /* next in the table's insertion-ordered list */
} binding;

typedef struct cflow cflow;

struct symtab {
  symtab *parent;
  scope_kind kind;
  binding *first, *last;    /* in insertion order */
  pd_strmap index;          /* name -> binding (keys borrowed from the bindings, in the arena);
                             * its table is freed with the compiler (pd_cmp_scopes_free) */
  cflow *cf;                /* SC_BRANCH, SC_LOOP: the construct being lowered */
  struct inline_call *call; /* SC_FUNC: the call being inlined */
  /* Names this scope created by plain assignment that no enclosing scope had (candidates for an
   * if's outputs) and outer names it wrote (SC_BRANCH, SC_LOOP: they shadow the outer binding). */
  const char **news;
  int nnews, capnews;
  const char **writes;
  int nwrites, capwrites;
  symtab *pushed_before;    /* the table made before this one (all tables, for messages) */
};

/* ---- Control-flow constructs being lowered (a tensor `if` branch, `for` or `while` body) ---- */
typedef struct var_map {
  const char *outer;        /* the var's name outside */
  pd_var_desc *inner;       /* what the block reads instead (itself unless split or a memory) */
} var_map;

/* The row split of a per-row `if`, shared by its two branches. */
typedef struct rows_split {
  pd_var_desc *cond;
  pd_block *at;             /* where split ops go (the block holding the if) */
  pd_loc loc;               /* the if's condition, for the split ops' source location */
  struct inline_call *call; /* the call the if is in (NULL: none), for the split ops' calls */
  int n, cap;
  struct { const char *outer; pd_var_desc *part[2]; } *e;
} rows_split;

/* CF_OP: the body of `op(type, ...) { ... }`, a block op's sub_block as written (outer vars read
 * as they are, nothing added to the op). */
typedef enum cf_kind { CF_ROWS, CF_SCALAR, CF_FOR, CF_WHILE, CF_OP } cf_kind;

struct cflow {
  cf_kind kind;
  pd_block *block;          /* the sub-block */
  pd_block *parent_block;   /* where the owning op goes */
  int side;                 /* CF_ROWS: 0 true rows, 1 false rows */
  rows_split *rows;         /* CF_ROWS */
  pd_var_desc *cond;        /* CF_ROWS, CF_SCALAR: condition */
  var_map *reads;           /* outer vars read inside, in first-use order */
  int nreads, capreads;
  pd_var_desc *step;        /* CF_FOR: the step input (t in `for (t in x)`) */
  cflow *outer;
};

/* ---- The compiler ---- */
typedef struct inline_call {
  const pd_ast_node *def;
  pd_loc site;              /* where it was called */
  const char *prefix;       /* unique name prefix of this call: "fc_0" */
  value *ret;               /* the returned value (NULL until `return`) */
  bool returned;
  struct inline_call *outer;
  pd_callchain *chain;      /* this call and the outer ones, for its ops (made at the first) */
} inline_call;

/* A for loop being unrolled (compile_for_unrolled), for the budget's message. */
typedef struct unrolling {
  const pd_ast_node *loop;
  int pass, passes;         /* the pass running (from 0), of how many */
  struct unrolling *outer;
} unrolling;


struct pd_compiler {
  pd_unit *unit;
  pd_diags *diags;
  pd_ast_arena *arena;      /* values, symbol tables, names, imported trees */
  const pd_compile_options *opts;
  const pd_source *main_src;
  pd_source **sources;      /* loaded modules (owned by the unit) */
  int nsources;
  size_t capsources;
  bool too_deep;            /* blocks nested past PD_MAX_BLOCK_DEPTH was reported */
  const char **importing;   /* the import chain (paths), for cycles */
  int nimporting;
  size_t capimporting;
  pd_strmap counters;       /* unique-name prefix -> next number (keys in the arena) */
  pd_strmap modules;        /* resolved module path -> 1 once imported (keys in the arena) */
  pd_block *block;          /* where ops go now */
  symtab *scope;            /* the innermost symbol table */
  symtab *newest_scope;     /* the table made last; pushed_before links all of them */
  cflow *cf;                /* the innermost control-flow construct */
  inline_call *call;        /* the innermost inlined call */
  int call_depth;
  pd_var_desc *last_temp;   /* the newest temp var made outside a function (renamable) */
  pd_var_desc *last_param;  /* the newest parameter made outside a function (renamable) */
  pd_var_desc *last_decl;   /* the newest var declare() made outside a function (renamable) */
  size_t capactions;        /* capacity of unit->actions */
  bool oom;
  int64_t work;             /* compile-time work so far (PD_CMP_WORK_BUDGET) */
  bool over_budget;         /* it went past the budget: reported, and everything stops */
  unrolling *unrolling;     /* the innermost loop being unrolled */
  pd_cmp_model *models;     /* the saved models imported (pd_cmp_models_free) */
};

/* The shared error and none values: read-only (a write through VERR or VNONE faults), handed
 * out as value * like every other value. */
extern const value pd_cmp_v_error, pd_cmp_v_none;
#define VERR ((value *)&pd_cmp_v_error)
#define VNONE ((value *)&pd_cmp_v_none)

/* compile.c: memory, messages, values, vars and ops */
/* Count n steps of compile-time work; false once past the budget (reported once, at the
 * outermost loop being unrolled, else at loc: then nothing more compiles). */
bool pd_cmp_spend(C *c, int64_t n, pd_loc loc);
/* fill_constant's exact value for float64 / int64 constants. */
int pd_cmp_set_exact_value(pd_op_desc *op, double v, pd_dtype dt);
/* The source text of the call argument starting at loc. */
const char *pd_cmp_arg_source_text(C *c, pd_loc loc);
void pd_cmp_error(C *c, pd_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "Did you mean" for a keyword argument `word` that names no parameter among names[0..n): the
 * closest within pd_suggest_consider's reach of a typo, else a name that word begins with or
 * that begins with word (3 letters at least: `activation` -> `act`), the nearest in length;
 * NULL when none is close. */
const char *pd_cmp_suggest_kw(const char *word, const char *const *names, int n);
/* The notes of pd_cmp_error after an error reported another way: each inlined call site,
 * innermost first. */
void pd_cmp_note_calls(C *c);
/* An error about the arguments a function was called with (fail() in a layer): at the user's
 * line (the outermost call), with a note at loc, where the function raised it. */
void pd_cmp_error_at_caller(C *c, pd_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void *pd_cmp_calloc(C *c, size_t n);
const char *pd_cmp_strdup(C *c, const char *s);
const char *pd_cmp_fmt(C *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
value *pd_cmp_vnew(C *c, vkind k);
value *pd_cmp_vint(C *c, int64_t i);
value *pd_cmp_vfloat(C *c, double f);
value *pd_cmp_vstr(C *c, const char *s);
value *pd_cmp_vtensor(C *c, pd_var_desc *var);
const char *pd_cmp_vkind_phrase(const value *v);
void pd_cmp_describe(C *c, const value *v, pd_buf *out);
const char *pd_cmp_dims_str(C *c, const pd_var_desc *v);
bool pd_cmp_is_number(const value *v);
double pd_cmp_num(const value *v);

/* Give op the location loc, where it was written, and the calls being inlined (pd_op_desc.calls);
 * false on out of memory. */
bool pd_cmp_op_set_loc(C *c, pd_op_desc *op, pd_loc loc);
pd_op_desc *pd_cmp_op_new(C *c, const char *type, pd_loc loc);
bool pd_cmp_op_in(C *c, pd_op_desc *op, const char *slot, value *v, pd_loc loc);
bool pd_cmp_op_in_list(C *c, pd_op_desc *op, const char *slot, value **vs, int n, pd_loc loc);
pd_var_desc *pd_cmp_op_out(C *c, pd_op_desc *op, const char *slot, const char *hint);
/* Prepare op (its defs' checks and InferShape) and return result as a value; an error at the
 * op when an output's known shape is one no machine can hold (pd_cmp_check_size). */
value *pd_cmp_op_finish(C *c, pd_op_desc *op, pd_var_desc *result);
/* v, when its shape is fully known, fits (pd_shape_fits: int64 elements, at most
 * PD_MAX_TENSOR_BYTES); else an error at loc naming what ("data 'x'") and false. */
bool pd_cmp_check_size(C *c, const pd_var_desc *v, pd_loc loc, const char *what);
/* The outputs only the backward pass reads (Softmax, Mask, XShape, MaxIndex), given a var when
 * op has none: the forward run must leave them for the gradient ops. False on out of memory. */
bool pd_cmp_op_temps(C *c, pd_op_desc *op);
pd_var_desc *pd_cmp_var_new(C *c, pd_block *b, const char *hint, bool exact);
const char *pd_cmp_unique_name(C *c, const char *prefix);
const char *pd_cmp_name_prefix(C *c);
bool pd_cmp_set_attr(C *c, pd_op_desc *op, const pd_attrdef *ad, value *v, pd_loc loc);
value *pd_cmp_tensor_const(C *c, double v, pd_dtype dt, pd_loc loc);

/* compile.c: values, names, symbol tables */
value *pd_cmp_vbool(C *c, bool b);
/* Is `name` a var of the main program (any block) already? */
bool pd_cmp_name_taken(C *c, const char *name);
/* The first "hint.K", K = 1, 2, ..., that no var of the program has (pd_program_free_suffix:
 * amortized constant time; hint itself on out of memory, c->oom set). */
const char *pd_cmp_suffixed_name(C *c, const char *hint);
/* A new symbol table under parent, made the current one; NULL on out of memory. */
symtab *pd_cmp_scope_push(C *c, scope_kind kind, symtab *parent);
binding *pd_cmp_lookup_local(symtab *s, const char *name);
/* Free every symbol table's index (the tables themselves live in the arena). */
void pd_cmp_scopes_free(C *c);
/* Find a name through the enclosing scopes (a function body sees its defining scope); *where
 * (may be NULL) receives the table that holds it. */
binding *pd_cmp_lookup(symtab *s, const char *name, symtab **where);
binding *pd_cmp_bind_local(C *c, symtab *s, const char *name, value *v, pd_loc loc);
/* Append name to a growable array of names (arena memory); false on out of memory. */
bool pd_cmp_push_name(C *c, const char ***arr, int *n, int *cap, const char *name);
/* `name = v` (or `let name = v`) in the current scope, with the rules of doc/language.md. */
void pd_cmp_assign_name(C *c, const char *name, value *v, pd_loc loc, bool is_let);

/* compile.c: functions and modules */
/* Inline a call of the `def` fnv: returns what its body returned (VNONE without `return`). */
value *pd_cmp_call_def(C *c, value *fnv, call_args *a);
/* The statement `import "name"`: compiles the module's statements once, at the top level. */
void pd_cmp_compile_import(C *c, const pd_ast_node *s);

/* compile_expr.c: expressions */
value *pd_cmp_eval(C *c, const pd_ast_node *e);
/* The truth of a compile-time value; false (after reporting, unless v is an error) when it has
 * none (a tensor, a function, ...). */
bool pd_cmp_truthy(C *c, value *v, pd_loc loc, bool *out);
/* An op X[, Y] -> Out of the given type (y may be NULL). */
value *pd_cmp_simple_op(C *c, const char *type, value *x, value *y, pd_loc loc);
/* Call fn (a builtin or a `def`) with the arguments a. */
value *pd_cmp_call_value(C *c, value *fn, call_args *a);
/* l op r where one side is a tensor: the elementwise, comparison or logical op. */
value *pd_cmp_binary_tensor(C *c, pd_ast_op op, value *l, value *r, pd_loc loc);

/* compile_stmt.c: statements and control flow */
/* Compile a block's statements in order, in the current scope and block. */
void pd_cmp_compile_block(C *c, const pd_ast_node *block);
/* The body of `op(type, ...) { body }`: compiled into a new block under the current one, in a
 * scope of its own (CF_OP); its index in *idx. False when it reported errors (or out of memory). */
bool pd_cmp_compile_op_body(C *c, const pd_ast_node *body, int *idx);

/* The visible name or builtin closest to a misspelt id (pd_suggest_consider), or NULL. */
const char *pd_cmp_suggest_name(C *c, const char *id);

/* import_model.c: saved models as layers. A call of the model value mv (its ops written into
 * the current block), an attribute of it (inputs, outputs, path, layer), a call of its method
 * fn (m.layer("name")), and the release of every model loaded, when the compilation ends. */
value *pd_cmp_call_model(C *c, value *mv, call_args *a);
value *pd_cmp_model_attr(C *c, value *mv, const char *name, pd_loc loc);
value *pd_cmp_call_method(C *c, value *fn, call_args *a);
void pd_cmp_models_free(C *c);
const char *pd_cmp_model_path(const value *mv);  /* the path the script gave import_model */

/* builtins.c */
const builtin *pd_cmp_builtin_lookup(const char *name);
const builtin *pd_cmp_builtin_at(int i);   /* NULL past the end */
bool pd_cmp_builtin_is_action(const builtin *b);

#endif /* PD_COMPILE_INT_H */
