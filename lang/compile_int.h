/* compile_int.h -- private to the compiler (lang/compile.c, lang/builtins.c): compile-time values,
 * symbol tables, control-flow contexts and the helpers that append ops. Not installed, not used
 * outside lang/compile*.c and lang/builtins.c.
 *
 * Memory: every value, binding, symbol table and name lives in the compiler's arena (freed with
 * the unit); program objects belong to the unit's programs. */
#ifndef PD_COMPILE_INT_H
#define PD_COMPILE_INT_H

#include "lang/ast.h"
#include "lang/compile.h"
#include "vm/ops.h"

typedef struct pd_compiler C;
typedef struct value value;
typedef struct symtab symtab;

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
} vkind;

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
} call_args;

typedef value *(*builtin_fn)(C *c, const builtin *self, call_args *a);

struct builtin {
  const char *name;
  builtin_fn fn;
  const char *op;          /* generic op builtins: the Fluid op type */
  const char *in[3];       /* generic: input slots taken positionally */
  const char *out;         /* generic: the output slot returned */
  const char *pattr[2];    /* generic: attributes taken positionally after the inputs */
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
  binding *first, *last;    /* in insertion order; small tables, linear search */
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

/* A tensor `if` branch, `for` or `while` body being lowered (lang/compile.c). */

/* ---- The compiler ---- */
typedef struct inline_call {
  const pd_ast_node *def;
  pd_loc site;              /* where it was called */
  const char *prefix;       /* unique name prefix of this call: "fc_0" */
  value *ret;               /* the returned value (NULL until `return`) */
  bool returned;
  struct inline_call *outer;
} inline_call;

typedef struct strmap strmap;

struct pd_compiler {
  pd_unit *unit;
  pd_diags *diags;
  pd_ast_arena *arena;      /* values, symbol tables, names, imported trees */
  const pd_compile_options *opts;
  const pd_source *main_src;
  pd_source **sources;      /* loaded modules (owned by the unit) */
  int nsources;
  size_t capsources;
  const char **importing;   /* the import chain (paths), for cycles */
  int nimporting;
  size_t capimporting;
  strmap *counters;         /* unique-name prefix -> next number */
  strmap *modules;          /* resolved module path -> 1 once imported */
  pd_block *block;          /* where ops go now */
  symtab *scope;            /* the innermost symbol table */
  symtab *newest_scope;     /* the table made last; pushed_before links all of them */
  cflow *cf;                /* the innermost control-flow construct */
  inline_call *call;        /* the innermost inlined call */
  int call_depth;
  pd_var_desc *last_temp;   /* the newest temp var made outside a function (renamable) */
  pd_var_desc *last_param;  /* the newest parameter made outside a function (renamable) */
  size_t capactions;        /* capacity of unit->actions */
  bool oom;
};

extern value pd_cmp_v_error, pd_cmp_v_none;
#define VERR (&pd_cmp_v_error)
#define VNONE (&pd_cmp_v_none)

/* compile.c: services for builtins */
/* fill_constant's exact value for float64 / int64 constants (compile.c). */
int pd_cmp_set_exact_value(pd_op_desc *op, double v, pd_dtype dt);
/* The source text of the call argument starting at loc (compile.c). */
const char *pd_cmp_arg_source_text(C *c, pd_loc loc);
void pd_cmp_error(C *c, pd_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
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

pd_loc pd_cmp_op_loc(C *c, pd_loc loc);
pd_op_desc *pd_cmp_op_new(C *c, const char *type, pd_loc loc);
bool pd_cmp_op_in(C *c, pd_op_desc *op, const char *slot, value *v, pd_loc loc);
bool pd_cmp_op_in_list(C *c, pd_op_desc *op, const char *slot, value **vs, int n, pd_loc loc);
pd_var_desc *pd_cmp_op_out(C *c, pd_op_desc *op, const char *slot, const char *hint);
value *pd_cmp_op_finish(C *c, pd_op_desc *op, pd_var_desc *result);
pd_var_desc *pd_cmp_var_new(C *c, pd_block *b, const char *hint, bool exact);
const char *pd_cmp_unique_name(C *c, const char *prefix);
const char *pd_cmp_name_prefix(C *c);
bool pd_cmp_set_attr(C *c, pd_op_desc *op, const pd_attrdef *ad, value *v, pd_loc loc);
value *pd_cmp_tensor_const(C *c, double v, pd_dtype dt, pd_loc loc);
value *pd_cmp_call_value(C *c, value *fn, call_args *a);
value *pd_cmp_binary_tensor(C *c, pd_ast_op op, value *l, value *r, pd_loc loc);

/* builtins.c */
const builtin *pd_cmp_builtin_lookup(const char *name);
const builtin *pd_cmp_builtin_at(int i);   /* NULL past the end */
bool pd_cmp_builtin_is_action(const builtin *b);

#endif /* PD_COMPILE_INT_H */
