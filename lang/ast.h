/* ast.h -- the syntax tree of a .pd script, as the parser (lang/parser.y) builds it and the
 * compiler walks it: one node type with a kind tag and a per-kind payload, every node carrying the
 * source position of the token that anchors it.
 *
 * Ownership: every node, list and string of a tree lives in one pd_ast_arena, created by the caller
 * before parsing and freed with pd_ast_arena_free, which releases the whole tree at once. Nodes
 * are never freed one by one. Locations point at the pd_source's name, so the source must outlive
 * the tree's use of locations.
 *
 * Depth: a tree returned by the parser is at most PD_AST_MAX_DEPTH levels high (the parser reports
 * deeper input as an error), so a walker may recurse over it without risking the C stack.
 *
 * Walking: switch on `kind` and read the payload member named in the kind's comment, or use the
 * generic child accessors (pd_ast_child_count / pd_ast_child_at), which list the children of any
 * node in source order together with their role ("cond", "body", ...). For example, the
 * statements of a program or block: for (size_t i = 0; i < n->block.stmts.len; i++) ... */
#ifndef PD_AST_H
#define PD_AST_H

#include "base/base.h"

#include <stdint.h>

/* The deepest tree the parser returns: a node's `height` never exceeds this. */
#define PD_AST_MAX_DEPTH 1000

/* X(NAME, printed name, category, phrase used in messages such as "cannot assign to %s").
 * Categories: S statement (appears in a block's statement list), E expression, P part of a
 * statement or expression that is neither (a branch of an if, a parameter, a keyword argument...). */
#define PD_AST_KIND_LIST(X)                                     \
  X(PROGRAM,   "program",   'S', "a program")                   \
  X(BLOCK,     "block",     'S', "a block")                     \
  X(IMPORT,    "import",    'S', "an import")                   \
  X(ASSIGN,    "assign",    'S', "an assignment")               \
  X(LET,       "let",       'S', "a declaration")               \
  X(EXPR_STMT, "expr",      'S', "an expression statement")     \
  X(IF,        "if",        'S', "an if statement")             \
  X(FOR,       "for",       'S', "a for loop")                  \
  X(WHILE,     "while",     'S', "a while loop")                \
  X(DEF,       "def",       'S', "a function definition")       \
  X(RETURN,    "return",    'S', "a return statement")          \
  X(EMIT,      "emit",      'S', "an emit statement")           \
  X(BRANCH,    "branch",    'P', "a branch")                    \
  X(PARAM,     "param",     'P', "a parameter")                 \
  X(OUTPUT,    "output",    'P', "an emitted output")           \
  X(KWARG,     "kwarg",     'P', "a keyword argument")          \
  X(SLICE,     "slice",     'P', "a slice")                     \
  X(NAME,      "name",      'E', "a name")                      \
  X(INT,       "int",       'E', "a number")                    \
  X(FLOAT,     "float",     'E', "a number")                    \
  X(STRING,    "string",    'E', "a string")                    \
  X(BOOL,      "bool",      'E', "a boolean")                   \
  X(NONE,      "none",      'E', "'none'")                      \
  X(LIST,      "list",      'E', "a list")                      \
  X(UNARY,     "unary",     'E', "an operator expression")      \
  X(BINARY,    "binary",    'E', "an operator expression")      \
  X(CALL,      "call",      'E', "a function call")             \
  X(INDEX,     "index",     'E', "an index expression")         \
  X(ATTR,      "attr",      'E', "an attribute")

typedef enum pd_ast_kind {
#define PD_X_(name, text, cat, phrase) PD_AST_##name,
  PD_AST_KIND_LIST(PD_X_)
#undef PD_X_
  PD_AST_KIND_COUNT_
} pd_ast_kind;

/* X(NAME, spelling): the operators of UNARY and BINARY nodes. */
#define PD_AST_OP_LIST(X)                                       \
  X(NEG, "-") X(NOT, "not")                                     \
  X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(MOD, "%")   \
  X(MATMUL, "@")                                                \
  X(EQ, "==") X(NE, "!=") X(LT, "<") X(LE, "<=") X(GT, ">")     \
  X(GE, ">=")                                                   \
  X(AND, "and") X(OR, "or")

typedef enum pd_ast_op {
#define PD_X_(name, text) PD_AST_OP_##name,
  PD_AST_OP_LIST(PD_X_)
#undef PD_X_
  PD_AST_OP_COUNT_
} pd_ast_op;

typedef struct pd_ast_node pd_ast_node;

/* An array of child nodes (arena-owned); never contains NULL. `items` is NULL when len == 0. */
typedef struct pd_ast_list {
  pd_ast_node **items;
  size_t len;
} pd_ast_list;

/* Bytes of a string (arena-owned). The bytes are followed by a NUL that `len` does not count, but
 * may themselves contain NUL bytes (written "\x00" in the source). */
typedef struct pd_ast_str {
  const char *data;
  size_t len;
} pd_ast_str;

struct pd_ast_node {
  pd_ast_kind kind;
  int height;   /* levels in the subtree rooted here: 1 for a leaf; <= PD_AST_MAX_DEPTH + 1 */
  pd_loc loc;   /* the anchoring token: see each kind below */
  union {
    /* PROGRAM (loc 1:1, the whole file) and BLOCK (loc: its '{'). A BLOCK is always the body of
     * a BRANCH, IF (else), FOR, WHILE or DEF; it is a scope of its own. */
    struct {
      pd_ast_list stmts;        /* statement nodes (category S), in order */
    } block;
    /* IMPORT (loc: 'import'): `import "layers"`. */
    struct {
      pd_ast_str path;          /* the module named by the string literal, escapes decoded */
    } import;
    /* ASSIGN (loc: the first target) `a, b = e` and LET (loc: 'let') `let a, b = e`. */
    struct {
      pd_ast_list targets;      /* NAME nodes, at least one */
      pd_ast_node *value;       /* the expression assigned */
    } assign;
    /* EXPR_STMT (loc: the expression's first token, e.g. the callee of a call): `print(x)`. */
    struct {
      pd_ast_node *expr;        /* any expression */
    } expr_stmt;
    /* IF (loc: the first 'if'): `if (c1) {..} else if (c2) {..} else {..}`. */
    struct {
      pd_ast_list branches;     /* BRANCH nodes, one per 'if'/'else if', at least one */
      pd_ast_node *else_block;  /* BLOCK of the final 'else', or NULL */
    } if_;
    /* BRANCH (loc: its 'if'): one `if (cond) { body }` arm of an IF. */
    struct {
      pd_ast_node *cond;        /* expression */
      pd_ast_node *body;        /* BLOCK */
    } branch;
    /* FOR (loc: 'for'): `for (var in iter) { body }`, `for (var in iter, reverse = e) {..}`. */
    struct {
      pd_ast_node *var;         /* NAME bound to each element */
      pd_ast_node *iter;        /* expression iterated over */
      pd_ast_node *option;      /* KWARG after the iterated expression (`reverse = e`), or NULL */
      pd_ast_node *body;        /* BLOCK */
    } for_;
    /* WHILE (loc: 'while'): `while (cond) { body }`. */
    struct {
      pd_ast_node *cond;        /* expression */
      pd_ast_node *body;        /* BLOCK */
    } while_;
    /* DEF (loc: 'def'): `def name(params) { body }`. */
    struct {
      pd_ast_node *name;        /* NAME of the function */
      pd_ast_list params;       /* PARAM nodes, possibly none; those with defaults come last */
      pd_ast_node *body;        /* BLOCK */
    } def;
    /* RETURN (loc: 'return'): `return`, `return e`, `return a, b`. */
    struct {
      pd_ast_list values;       /* expressions, possibly none */
    } return_;
    /* EMIT (loc: 'emit'): `emit o1 = a, o2 = b`. */
    struct {
      pd_ast_list outputs;      /* OUTPUT nodes, at least one */
    } emit;
    /* PARAM `size` or `act = none` (value: the default, or NULL); KWARG `act = relu` in a call;
     * OUTPUT `o1 = a` in an emit (value never NULL for KWARG and OUTPUT). loc: the name. */
    struct {
      const char *name;         /* the identifier before '=' */
      pd_ast_node *value;       /* expression after '=' */
    } binding;
    /* SLICE (loc: ':'): `lo:hi` as a subscript of an INDEX; either bound may be omitted. */
    struct {
      pd_ast_node *lo;          /* expression or NULL */
      pd_ast_node *hi;          /* expression or NULL */
    } slice;
    /* NAME (loc: the identifier). */
    struct {
      const char *id;           /* ASCII identifier, NUL-terminated */
    } name;
    /* INT, FLOAT, BOOL (loc: the literal); NONE has no payload. A leading '-' is a UNARY NEG. */
    int64_t int_value;          /* INT: 0 .. INT64_MAX */
    double float_value;         /* FLOAT: finite, >= 0 */
    int bool_value;             /* BOOL: 1 for true, 0 for false */
    /* STRING (loc: the opening quote). */
    pd_ast_str str;
    /* LIST (loc: '['): `[a, b, c]`. */
    struct {
      pd_ast_list items;        /* expressions, possibly none */
    } list;
    /* UNARY (loc: the operator): `-x` (NEG), `not x` (NOT). */
    struct {
      pd_ast_op op;
      pd_ast_node *operand;
    } unary;
    /* BINARY (loc: the operator): arithmetic, comparison, `and`, `or`. */
    struct {
      pd_ast_op op;
      pd_ast_node *lhs;
      pd_ast_node *rhs;
    } binary;
    /* CALL (loc: '('): `callee(args)`, and as a statement `callee(args) { body }` (an op that
     * runs a block: `op("while", ...) { ... }`). */
    struct {
      pd_ast_node *callee;      /* expression, usually a NAME */
      pd_ast_list args;         /* expressions (positional) then KWARG nodes (keyword) */
      pd_ast_node *body;        /* BLOCK after the call, or NULL */
    } call;
    /* INDEX (loc: '['): `object[subscripts]`. */
    struct {
      pd_ast_node *object;      /* expression indexed */
      pd_ast_list subscripts;   /* expressions and SLICE nodes, at least one */
    } index;
    /* ATTR (loc: the attribute's name): `object.name`. */
    struct {
      pd_ast_node *object;      /* expression */
      const char *name;         /* identifier after '.' */
    } attr;
  };
};

/* ---- Kind and operator tables ---- */
const char *pd_ast_kind_name(pd_ast_kind kind);    /* "call"; "?" when out of range */
const char *pd_ast_kind_phrase(pd_ast_kind kind);  /* "a function call" */
int pd_ast_is_stmt(pd_ast_kind kind);
int pd_ast_is_expr(pd_ast_kind kind);
const char *pd_ast_op_name(pd_ast_op op);          /* "+", "not" */

/* ---- The arena ----
 * Allocations are carved from large chunks (pd_malloc'ed), or, in a build where
 * PD_AST_ARENA_TRACKED is 1 (the default under AddressSanitizer), each one is a separate pd_malloc
 * so that ASan and valgrind see every node's bounds. Either way pd_ast_arena_free releases all. */
typedef struct pd_ast_arena pd_ast_arena;

pd_ast_arena *pd_ast_arena_new(void);              /* NULL when out of memory */
void pd_ast_arena_free(pd_ast_arena *arena);       /* NULL is fine */
/* `n` bytes aligned for any object, zeroed; NULL when out of memory. */
void *pd_ast_alloc(pd_ast_arena *arena, size_t n);
/* A NUL-terminated copy of s[0..n) (which may contain NULs); NULL when out of memory. */
char *pd_ast_strndup(pd_ast_arena *arena, const char *s, size_t n);
/* Bytes handed out so far (for statistics and tests). */
size_t pd_ast_arena_used(const pd_ast_arena *arena);

/* ---- Building ---- */
/* A zeroed node of `kind` at `loc` with height 1; NULL when out of memory. */
pd_ast_node *pd_ast_new(pd_ast_arena *arena, pd_ast_kind kind, pd_loc loc);
/* Copy `n` node pointers into an arena list; PD_ENOMEM on failure. */
pd_status pd_ast_list_make(pd_ast_arena *arena, pd_ast_node *const *items, size_t n,
                           pd_ast_list *out);
/* Set n->height from its children's heights (1 + the highest, capped at PD_AST_MAX_DEPTH + 1)
 * and return it. Children must be complete first: builders call it bottom-up. */
int pd_ast_update_height(pd_ast_node *n);

/* ---- Walking ---- */
typedef struct pd_ast_child {
  const char *role;     /* "cond", "body", "callee"...; NULL for elements of a uniform list
                           (statements of a block, arguments, list items, operands) */
  pd_ast_node *node;    /* never NULL */
} pd_ast_child;

/* The children of `n` in source order; absent optional children (an IF without else, a PARAM
 * without default, an open slice bound) are skipped. pd_ast_child_at(n, i) needs
 * i < pd_ast_child_count(n); it takes constant time. */
size_t pd_ast_child_count(const pd_ast_node *n);
pd_ast_child pd_ast_child_at(const pd_ast_node *n, size_t i);

/* Append a readable, indented dump of the tree to `out`, one node per line:
 *     <role>: <kind> <fields> @<line>:<col>
 * (two spaces of indentation per level; the role is omitted where it is NULL). Stable: golden
 * tests compare it. The walk is iterative, so any tree shape is fine. PD_ENOMEM on failure. */
pd_status pd_ast_dump(const pd_ast_node *root, pd_buf *out);

#endif /* PD_AST_H */
