/* parser.y -- the pdlang grammar (Bison): tokens from lang/lexer.re -> the syntax tree of
 * lang/ast.h. Entry points are in lang/parse.h; doc/language.md describes the same grammar for
 * users.
 *
 * Design notes
 * - Pure (reentrant) parser; all state is in pd_parser. Tokens carry pd_loc locations, and a rule's
 *   location (@$) is the location of its first symbol.
 * - Expression precedence is written as one nonterminal per level (or_expr ... postfix) rather than
 *   %left declarations: the grammar then says exactly what may appear where (`a + not b` is an
 *   error, as in Python) and no precedence declaration can hide a conflict. %expect 0.
 * - Every list is left-recursive, so the parser stack does not grow with its length; nesting is
 *   bounded by the lexer (PD_LEX_MAX_NESTING) and tree height by PD_AST_MAX_DEPTH (checked here).
 * - Errors: parse.error custom with LAC, so the "expecting ..." lists are exact; messages name the
 *   unexpected token and, at the end of input or at a mismatched closer, the bracket left open.
 *   Recovery is per statement (`stmt_opt: error`): the parser skips to the next newline, ';' or
 *   '}' and goes on, until the diagnostics' error limit.
 * - Memory: nodes and strings live in the arena. Lists under construction (pd_node_vec) are on
 *   the heap until their rule completes; they are the only semantic values with a real
 *   %destructor. An action that runs out of memory frees what it holds and says YYNOMEM. */

%code top {
#include "config.h"
}

%code requires {
#include "lang/ast.h"

typedef struct pd_parser pd_parser;

/* A list of nodes under construction, heap-owned until copied into the arena. */
typedef struct pd_node_vec {
  pd_ast_node **items;
  size_t len;
  size_t cap;
} pd_node_vec;
}

%code {
#include "lang/lexer.h"
#include "lang/parse.h"

#include <string.h>

struct pd_parser {
  pd_lexer lex;             /* the token source; also where errors are reported */
  pd_ast_arena *arena;      /* every node goes here */
  pd_ast_node *root;        /* the PROGRAM, once the input is parsed */
  int repl;                 /* an error at the end of input means "incomplete", not an error */
  int incomplete;           /* ... and it happened */
  int too_deep;             /* the tree-height error was reported (it is reported once) */
};

/* The parser's stack grows on the heap through the allocator hook, up to YYMAXDEPTH entries. The
 * lexer's limits keep it far below that: an overflow can only mean out of memory. */
#define YYMALLOC pd_malloc
#define YYFREE pd_free
#define YYMAXDEPTH 1000000

#define YYLLOC_DEFAULT(Cur, Rhs, N) ((Cur) = (N) ? YYRHSLOC(Rhs, 1) : YYRHSLOC(Rhs, 0))

static int yylex(PD_YYSTYPE *lval, pd_loc *lloc, pd_parser *ps);
static void yyerror(pd_loc *lloc, pd_parser *ps, const char *msg);

/* ---- Lists under construction ---- */

static void vec_free(pd_node_vec *v) {
  pd_free(v->items);
  *v = (pd_node_vec){0};
}

/* Append `n` (nothing when NULL: an empty or erroneous statement). On failure frees `v` and
 * returns -1. */
static int vec_push(pd_node_vec *v, pd_ast_node *n) {
  if (!n) return 0;
  if (PD_GROW(v->items, v->cap, v->len + 1)) {
    vec_free(v);
    return -1;
  }
  v->items[v->len++] = n;
  return 0;
}

/* Move the nodes of `v` into an arena list. `v` is freed whatever happens; -1 when out of memory. */
static int vec_finish(pd_parser *ps, pd_node_vec *v, pd_ast_list *out) {
  pd_status st = pd_ast_list_make(ps->arena, v->items, v->len, out);
  vec_free(v);
  return st == PD_OK ? 0 : -1;
}

static pd_ast_node *vec_last(const pd_node_vec *v) { return v->len ? v->items[v->len - 1] : NULL; }

/* ---- Nodes ---- */

/* Give `n` its height from its (complete) children, and report a tree too deep for the walkers
 * downstream -- once: the nodes above it are too deep as well. */
static pd_ast_node *done(pd_parser *ps, pd_ast_node *n) {
  if (pd_ast_update_height(n) > PD_AST_MAX_DEPTH && !ps->too_deep) {
    ps->too_deep = 1;
    pd_lex_error(&ps->lex, n->loc, "%s nested too deeply (limit %d levels)",
                 pd_ast_is_expr(n->kind) ? "expression" : "statements", PD_AST_MAX_DEPTH);
  }
  return n;
}

static pd_ast_node *unary(pd_parser *ps, pd_ast_op op, pd_loc loc, pd_ast_node *operand) {
  pd_ast_node *n = pd_ast_new(ps->arena, PD_AST_UNARY, loc);
  if (!n) return NULL;
  n->unary.op = op;
  n->unary.operand = operand;
  return done(ps, n);
}

static pd_ast_node *binary(pd_parser *ps, pd_ast_op op, pd_loc loc, pd_ast_node *lhs,
                           pd_ast_node *rhs) {
  pd_ast_node *n = pd_ast_new(ps->arena, PD_AST_BINARY, loc);
  if (!n) return NULL;
  n->binary.op = op;
  n->binary.lhs = lhs;
  n->binary.rhs = rhs;
  return done(ps, n);
}

/* PARAM, KWARG or OUTPUT: `name = value` (value may be NULL for a PARAM). */
static pd_ast_node *binding(pd_parser *ps, pd_ast_kind kind, pd_loc loc, const char *name,
                            pd_ast_node *value) {
  pd_ast_node *n = pd_ast_new(ps->arena, kind, loc);
  if (!n) return NULL;
  n->binding.name = name;
  n->binding.value = value;
  return done(ps, n);
}

/* Assignment targets are parsed as expressions (so `x.y = 1` gets a precise message, not just
 * "unexpected '='"); only names are allowed. */
static void check_targets(pd_parser *ps, const pd_ast_list *targets, const char *verb) {
  for (size_t i = 0; i < targets->len; i++) {
    const pd_ast_node *t = targets->items[i];
    if (t->kind != PD_AST_NAME)
      pd_lex_error(&ps->lex, t->loc, "cannot %s %s; only a name can be", verb,
                   pd_ast_kind_phrase(t->kind));
  }
}

/* An ASSIGN or LET of the expressions in `targets` (the list is consumed). */
static pd_ast_node *assignment(pd_parser *ps, pd_ast_kind kind, pd_loc loc, pd_node_vec *targets,
                               pd_ast_node *value) {
  pd_ast_list list;
  if (vec_finish(ps, targets, &list)) return NULL;
  check_targets(ps, &list, kind == PD_AST_LET ? "declare" : "assign to");
  pd_ast_node *n = pd_ast_new(ps->arena, kind, loc);
  if (!n) return NULL;
  n->assign.targets = list;
  n->assign.value = value;
  return done(ps, n);
}

/* `call { body }`: the block an op runs (op("while", ...) { ... }). */
static pd_ast_node *with_body(pd_parser *ps, pd_ast_node *call, pd_ast_node *body) {
  call->call.body = body;
  done(ps, call);
  return call;
}

/* A node of `kind` whose one list payload (block.stmts, list.items, return_.values,
 * emit.outputs) is `v` (consumed). */
static pd_ast_node *with_list(pd_parser *ps, pd_ast_kind kind, pd_loc loc, pd_node_vec *v) {
  pd_ast_list list;
  if (vec_finish(ps, v, &list)) return NULL;
  pd_ast_node *n = pd_ast_new(ps->arena, kind, loc);
  if (!n) return NULL;
  switch (kind) {
  case PD_AST_PROGRAM:
  case PD_AST_BLOCK: n->block.stmts = list; break;
  case PD_AST_LIST: n->list.items = list; break;
  case PD_AST_RETURN: n->return_.values = list; break;
  case PD_AST_EMIT: n->emit.outputs = list; break;
  case PD_AST_IF: n->if_.branches = list; break;
  default: return NULL; /* not a list kind: a bug in this file */
  }
  return done(ps, n);
}

/* Called by Bison only when its stack cannot grow: that is, out of memory. */
static void yyerror(pd_loc *lloc, pd_parser *ps, const char *msg) {
  PD_UNUSED(lloc);
  PD_UNUSED(msg);
  ps->lex.nomem = 1;
}

#define CHECK(x) do { if (!(x)) YYNOMEM; } while (0)
}

/* automake's ylwrap runs Bison in a scratch directory and collects yacc's output names, y.tab.c
 * and y.tab.h, as lang/parser.c and lang/parser.h. */
%file-prefix "y"
%define api.pure full
%define api.prefix {pd_yy}
%define api.token.prefix {PD_TOK_}
%define api.location.type {pd_loc}
%define api.header.include {"lang/parser.h"}
%define parse.error custom
%define parse.lac full
%locations
%param {pd_parser *ps}
%expect 0
/* The location before the first token (what an empty rule at the start would take). */
%initial-action { @$ = (pd_loc){ps->lex.src->name, 1, 1}; }

%union {
  pd_ast_node *node;        /* arena-owned */
  pd_node_vec vec;          /* heap-owned until its list is complete */
  pd_ast_str str;           /* arena-owned */
  int64_t ival;
  double fval;
  pd_ast_op op;
}

/* Arena-owned values are reclaimed with the arena; only lists under construction own heap. */
%destructor { vec_free(&$$); } <vec>
%destructor { } <node> <str> <ival> <fval> <op>

%token END 0 "end of input"
%token NEWLINE "newline"
%token <str> IDENT "identifier"
%token <ival> INT "integer"
%token <fval> FLOAT "float"
%token <str> STRING "string"
%token AND "'and'" DEF "'def'" ELSE "'else'" EMIT "'emit'" FALSE "'false'" FOR "'for'"
       IF "'if'" IMPORT "'import'" IN "'in'" LET "'let'" NONE "'none'" NOT "'not'" OR "'or'"
       RETURN "'return'" TRUE "'true'" WHILE "'while'"
%token EQ "'=='" NE "'!='" LE "'<='" GE "'>='" ARROW "'->'"

%type <vec> stmts exprs outputs branches params params_opt args args_opt items_opt subscripts
%type <node> stmt_opt stmt block if_stmt branch output param
%type <node> expr or_expr and_expr not_expr comparison sum term unary postfix call primary
%type <node> arg subscript slice
%type <op> cmp_op add_op mul_op

%%

program:
  stmts {
    pd_ast_node *n = with_list(ps, PD_AST_PROGRAM, (pd_loc){ps->lex.src->name, 1, 1}, &$1);
    CHECK(n);
    ps->root = n;
  }
;

/* ---- Statements ---- */

stmts:
  stmt_opt            { $$ = (pd_node_vec){0}; CHECK(vec_push(&$$, $1) == 0); }
| stmts sep stmt_opt  { $$ = $1; CHECK(vec_push(&$$, $3) == 0); }
;

sep: NEWLINE | ';' ;

stmt_opt:
  %empty  { $$ = NULL; }
| stmt
| error   { $$ = NULL; }
;

block:
  '{' stmts '}'  { CHECK($$ = with_list(ps, PD_AST_BLOCK, @1, &$2)); }
;

stmt:
  expr {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_EXPR_STMT, @1));
    $$->expr_stmt.expr = $1;
    done(ps, $$);
  }
| call block {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_EXPR_STMT, @1));
    $$->expr_stmt.expr = with_body(ps, $1, $2);
    done(ps, $$);
  }
| exprs '=' expr      { CHECK($$ = assignment(ps, PD_AST_ASSIGN, @1, &$1, $3)); }
| exprs '=' call block {
    CHECK($$ = assignment(ps, PD_AST_ASSIGN, @1, &$1, with_body(ps, $3, $4)));
  }
| LET exprs '=' expr  { CHECK($$ = assignment(ps, PD_AST_LET, @1, &$2, $4)); }
| IMPORT STRING {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_IMPORT, @1));
    $$->import.path = $2;
  }
| RETURN {
    pd_node_vec none = {0};
    CHECK($$ = with_list(ps, PD_AST_RETURN, @1, &none));
  }
| RETURN exprs        { CHECK($$ = with_list(ps, PD_AST_RETURN, @1, &$2)); }
| EMIT outputs        { CHECK($$ = with_list(ps, PD_AST_EMIT, @1, &$2)); }
| if_stmt
| FOR '(' IDENT IN expr ')' block {
    pd_ast_node *var = pd_ast_new(ps->arena, PD_AST_NAME, @3);
    CHECK(var);
    var->name.id = $3.data;
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_FOR, @1));
    $$->for_.var = var;
    $$->for_.iter = $5;
    $$->for_.body = $7;
    done(ps, $$);
  }
| FOR '(' IDENT IN expr ',' IDENT '=' expr ')' block {
    pd_ast_node *var = pd_ast_new(ps->arena, PD_AST_NAME, @3);
    CHECK(var);
    var->name.id = $3.data;
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_FOR, @1));
    $$->for_.var = var;
    $$->for_.iter = $5;
    CHECK($$->for_.option = binding(ps, PD_AST_KWARG, @7, $7.data, $9));
    $$->for_.body = $11;
    done(ps, $$);
  }
| WHILE '(' expr ')' block {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_WHILE, @1));
    $$->while_.cond = $3;
    $$->while_.body = $5;
    done(ps, $$);
  }
| DEF IDENT '(' params_opt ')' block {
    pd_ast_list params;
    CHECK(vec_finish(ps, &$4, &params) == 0);
    pd_ast_node *name = pd_ast_new(ps->arena, PD_AST_NAME, @2);
    CHECK(name);
    name->name.id = $2.data;
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_DEF, @1));
    $$->def.name = name;
    $$->def.params = params;
    $$->def.body = $6;
    done(ps, $$);
  }
;

/* `if (a) {..} else if (b) {..} else {..}`: one IF with a flat list of branches, so a long
 * else-if chain is neither deep in the tree nor on the parser's stack. */
if_stmt:
  branches             { CHECK($$ = with_list(ps, PD_AST_IF, @1, &$1)); }
| branches ELSE block  {
    CHECK($$ = with_list(ps, PD_AST_IF, @1, &$1));
    $$->if_.else_block = $3;
    done(ps, $$);
  }
;

branches:
  branch                { $$ = (pd_node_vec){0}; CHECK(vec_push(&$$, $1) == 0); }
| branches ELSE branch  { $$ = $1; CHECK(vec_push(&$$, $3) == 0); }
;

branch:
  IF '(' expr ')' block {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_BRANCH, @1));
    $$->branch.cond = $3;
    $$->branch.body = $5;
    done(ps, $$);
  }
;

outputs:
  output              { $$ = (pd_node_vec){0}; CHECK(vec_push(&$$, $1) == 0); }
| outputs ',' output  { $$ = $1; CHECK(vec_push(&$$, $3) == 0); }
;

output:
  IDENT '=' expr  { CHECK($$ = binding(ps, PD_AST_OUTPUT, @1, $1.data, $3)); }
;

params_opt:
  %empty      { $$ = (pd_node_vec){0}; }
| params
| params ','
;

params:
  param             { $$ = (pd_node_vec){0}; CHECK(vec_push(&$$, $1) == 0); }
| params ',' param  {
    const pd_ast_node *prev = vec_last(&$1);
    if (prev->binding.value && !$3->binding.value)
      pd_lex_error(&ps->lex, @3, "parameter '%s' without a default follows parameter '%s' "
                   "with one", $3->binding.name, prev->binding.name);
    $$ = $1;
    CHECK(vec_push(&$$, $3) == 0);
  }
;

param:
  IDENT           { CHECK($$ = binding(ps, PD_AST_PARAM, @1, $1.data, NULL)); }
| IDENT '=' expr  { CHECK($$ = binding(ps, PD_AST_PARAM, @1, $1.data, $3)); }
;

/* ---- Expressions, loosest first ---- */

exprs:
  expr            { $$ = (pd_node_vec){0}; CHECK(vec_push(&$$, $1) == 0); }
| exprs ',' expr  { $$ = $1; CHECK(vec_push(&$$, $3) == 0); }
;

expr: or_expr ;

or_expr:
  and_expr
| or_expr OR and_expr  { CHECK($$ = binary(ps, PD_AST_OP_OR, @2, $1, $3)); }
;

and_expr:
  not_expr
| and_expr AND not_expr  { CHECK($$ = binary(ps, PD_AST_OP_AND, @2, $1, $3)); }
;

not_expr:
  comparison
| NOT not_expr  { CHECK($$ = unary(ps, PD_AST_OP_NOT, @1, $2)); }
;

/* Comparisons do not associate: `a < b < c` is a syntax error. */
comparison:
  sum
| sum cmp_op sum  { CHECK($$ = binary(ps, $2, @2, $1, $3)); }
;

cmp_op:
  EQ   { $$ = PD_AST_OP_EQ; }
| NE   { $$ = PD_AST_OP_NE; }
| '<'  { $$ = PD_AST_OP_LT; }
| LE   { $$ = PD_AST_OP_LE; }
| '>'  { $$ = PD_AST_OP_GT; }
| GE   { $$ = PD_AST_OP_GE; }
;

sum:
  term
| sum add_op term  { CHECK($$ = binary(ps, $2, @2, $1, $3)); }
;

add_op:
  '+'  { $$ = PD_AST_OP_ADD; }
| '-'  { $$ = PD_AST_OP_SUB; }
;

term:
  unary
| term mul_op unary  { CHECK($$ = binary(ps, $2, @2, $1, $3)); }
;

mul_op:
  '*'  { $$ = PD_AST_OP_MUL; }
| '/'  { $$ = PD_AST_OP_DIV; }
| '@'  { $$ = PD_AST_OP_MATMUL; }
| '%'  { $$ = PD_AST_OP_MOD; }
;

unary:
  postfix
| '-' unary  { CHECK($$ = unary(ps, PD_AST_OP_NEG, @1, $2)); }
;

postfix:
  primary
| call
| postfix '[' subscripts ']' {
    pd_ast_list subscripts;
    CHECK(vec_finish(ps, &$3, &subscripts) == 0);
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_INDEX, @2));
    $$->index.object = $1;
    $$->index.subscripts = subscripts;
    done(ps, $$);
  }
| postfix '.' IDENT {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_ATTR, @3));
    $$->attr.object = $1;
    $$->attr.name = $3.data;
    done(ps, $$);
  }
;

/* A call; as a whole statement, or the value of an assignment, it may take a block (above). */
call:
  postfix '(' args_opt ')' {
    pd_ast_list args;
    CHECK(vec_finish(ps, &$3, &args) == 0);
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_CALL, @2));
    $$->call.callee = $1;
    $$->call.args = args;
    done(ps, $$);
  }
;

primary:
  IDENT {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_NAME, @1));
    $$->name.id = $1.data;
  }
| INT {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_INT, @1));
    $$->int_value = $1;
  }
| FLOAT {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_FLOAT, @1));
    $$->float_value = $1;
  }
| STRING {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_STRING, @1));
    $$->str = $1;
  }
| TRUE {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_BOOL, @1));
    $$->bool_value = 1;
  }
| FALSE {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_BOOL, @1));
    $$->bool_value = 0;
  }
| NONE                 { CHECK($$ = pd_ast_new(ps->arena, PD_AST_NONE, @1)); }
| '(' expr ')'         { $$ = $2; }
| '[' items_opt ']'    { CHECK($$ = with_list(ps, PD_AST_LIST, @1, &$2)); }
;

items_opt:
  %empty     { $$ = (pd_node_vec){0}; }
| exprs
| exprs ','
;

args_opt:
  %empty    { $$ = (pd_node_vec){0}; }
| args
| args ','
;

/* Positional arguments first, then keyword arguments (as in Python). */
args:
  arg           { $$ = (pd_node_vec){0}; CHECK(vec_push(&$$, $1) == 0); }
| args ',' arg  {
    const pd_ast_node *prev = vec_last(&$1);
    if (prev->kind == PD_AST_KWARG && $3->kind != PD_AST_KWARG)
      pd_lex_error(&ps->lex, @3, "positional argument follows keyword argument '%s'",
                   prev->binding.name);
    $$ = $1;
    CHECK(vec_push(&$$, $3) == 0);
  }
;

arg:
  expr
| expr '=' expr {
    const char *name = "";
    if ($1->kind == PD_AST_NAME)
      name = $1->name.id;
    else
      pd_lex_error(&ps->lex, $1->loc, "a keyword argument needs a name before '=', not %s",
                   pd_ast_kind_phrase($1->kind));
    CHECK($$ = binding(ps, PD_AST_KWARG, $1->loc, name, $3));
  }
;

subscripts:
  subscript                 { $$ = (pd_node_vec){0}; CHECK(vec_push(&$$, $1) == 0); }
| subscripts ',' subscript  { $$ = $1; CHECK(vec_push(&$$, $3) == 0); }
;

subscript: expr | slice ;

slice:
  ':'            { CHECK($$ = pd_ast_new(ps->arena, PD_AST_SLICE, @1)); }
| expr ':'       {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_SLICE, @2));
    $$->slice.lo = $1;
    done(ps, $$);
  }
| ':' expr       {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_SLICE, @1));
    $$->slice.hi = $2;
    done(ps, $$);
  }
| expr ':' expr  {
    CHECK($$ = pd_ast_new(ps->arena, PD_AST_SLICE, @2));
    $$->slice.lo = $1;
    $$->slice.hi = $3;
    done(ps, $$);
  }
;

%%

/* ---- Error messages ---- */

/* Tokens that can start an operand: when all of them are expected, "an expression" says it. */
static const int operand_starts[] = {PD_TOK_IDENT, PD_TOK_INT,  PD_TOK_FLOAT, PD_TOK_STRING,
                                     PD_TOK_TRUE,  PD_TOK_FALSE, PD_TOK_NONE, '(', '['};
static const int unary_ops[] = {'-', PD_TOK_NOT};

/* Operators that may follow an operand. Expected after every complete expression, they are left
 * out of "expecting ..." lists: they would drown the one token the user probably forgot. */
static const int infix_ops[] = {'+', '-', '*', '/', '@', '%', PD_TOK_EQ, PD_TOK_NE, '<', PD_TOK_LE,
                                '>', PD_TOK_GE, PD_TOK_AND, PD_TOK_OR, '(', '[', '.'};

static int has_token(const yysymbol_kind_t *set, int n, int token) {
  yysymbol_kind_t sym = YYTRANSLATE(token);
  for (int i = 0; i < n; i++)
    if (set[i] == sym) return 1;
  return 0;
}

/* Remove the symbols of `tokens` from set[0..*n). */
static void drop_tokens(yysymbol_kind_t *set, int *n, const int *tokens, size_t ntokens) {
  int k = 0;
  for (int i = 0; i < *n; i++) {
    int keep = 1;
    for (size_t j = 0; j < ntokens && keep; j++) keep = set[i] != YYTRANSLATE(tokens[j]);
    if (keep) set[k++] = set[i];
  }
  *n = k;
}

static int is_comparison(yysymbol_kind_t sym) {
  static const int cmp[] = {PD_TOK_EQ, PD_TOK_NE, '<', PD_TOK_LE, '>', PD_TOK_GE};
  for (size_t i = 0; i < PD_ARRAY_LEN(cmp); i++)
    if (sym == YYTRANSLATE(cmp[i])) return 1;
  return 0;
}

/* "unexpected X" for the lookahead token `sym`: the lexer's last token. */
static void describe_token(pd_buf *m, const pd_parser *ps, yysymbol_kind_t sym) {
  const pd_token *t = &ps->lex.last;
  size_t n = t->len > 32 ? 32 : t->len;
  const char *more = t->len > 32 ? "..." : "";
  switch (sym) {
  case YYSYMBOL_IDENT: pd_buf_printf(m, "identifier '%.*s%s'", (int)n, t->text, more); break;
  case YYSYMBOL_INT:
  case YYSYMBOL_FLOAT: pd_buf_printf(m, "number %.*s%s", (int)n, t->text, more); break;
  case YYSYMBOL_STRING: pd_buf_printf(m, "string %.*s%s", (int)n, t->text, more); break;
  default: pd_buf_puts(m, yysymbol_name(sym)); break;
  }
}

/* " to close the 'if' block opened at 4:12" */
static void describe_bracket(pd_buf *m, const pd_lex_bracket *b) {
  char closer = b->open == '(' ? ')' : b->open == '[' ? ']' : '}';
  pd_buf_printf(m, "expected '%c' to close the ", closer);
  if (b->open != '{')
    pd_buf_printf(m, "'%c'", b->open);
  else if (b->owner)
    pd_buf_printf(m, "'%s' block", b->owner);
  else
    pd_buf_puts(m, "block");
  pd_buf_printf(m, " opened at %d:%d", b->loc.line, b->loc.col);
}

static int yyreport_syntax_error(const yypcontext_t *ctx, pd_parser *ps) {
  pd_lexer *lx = &ps->lex;
  if (lx->stop) return 0;
  yysymbol_kind_t sym = yypcontext_token(ctx);
  pd_loc loc = *yypcontext_location(ctx);
  if (sym == YYSYMBOL_YYEMPTY) { /* only after YYERROR in an action, which this grammar avoids */
    pd_lex_error(lx, loc, "syntax error");
    return 0;
  }
  if (sym == YYSYMBOL_YYEOF && ps->repl && pd_lex_error_count(lx) == 0) {
    ps->incomplete = 1;
    lx->stop = 1;
    return 0;
  }

  yysymbol_kind_t expected[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, expected, YYNTOKENS);
  if (n < 0) return 2; /* out of memory */
  int wants_eq = has_token(expected, n, PD_TOK_EQ);
  int wants_plus = has_token(expected, n, '+');

  pd_buf m;
  pd_buf_init(&m);
  pd_buf_puts(&m, "unexpected ");
  describe_token(&m, ps, sym);
  const pd_lex_bracket *open = pd_lex_innermost(lx);
  int closer = sym == YYTRANSLATE(')') || sym == YYTRANSLATE(']') || sym == YYTRANSLATE('}');
  if (sym == YYSYMBOL_YYEOF && open) {
    pd_buf_puts(&m, ": ");
    describe_bracket(&m, open);
  } else if (closer && lx->mismatch) {
    pd_buf_puts(&m, "; ");
    describe_bracket(&m, &lx->mismatched);
  } else {
    int all_operands = 1;
    for (size_t i = 0; i < PD_ARRAY_LEN(operand_starts); i++)
      all_operands &= has_token(expected, n, operand_starts[i]);
    if (wants_plus) drop_tokens(expected, &n, infix_ops, PD_ARRAY_LEN(infix_ops));
    if (all_operands) {
      drop_tokens(expected, &n, operand_starts, PD_ARRAY_LEN(operand_starts));
      drop_tokens(expected, &n, unary_ops, PD_ARRAY_LEN(unary_ops));
    }
    /* "end of input" reads best last. */
    if (n > 1 && expected[0] == YYSYMBOL_YYEOF) {
      memmove(expected, expected + 1, (size_t)(n - 1) * sizeof *expected);
      expected[n - 1] = YYSYMBOL_YYEOF;
    }
    int items = n + all_operands;
    if (items > 0 && items <= 4) {
      pd_buf_puts(&m, ", expecting ");
      for (int i = 0; i < items; i++) {
        if (i > 0) pd_buf_puts(&m, i == items - 1 ? " or " : ", ");
        pd_buf_puts(&m, i < n ? yysymbol_name(expected[i]) : "an expression");
      }
    }
    /* Classic slips. */
    if (sym == YYTRANSLATE('{'))
      pd_buf_puts(&m, " (a block follows 'if', 'else', 'for', 'while', 'def' or a call of op())");
    else if (sym == YYTRANSLATE(PD_TOK_ELSE))
      pd_buf_puts(&m, " ('else' follows the '}' of an 'if')");
    else if (sym == YYTRANSLATE(PD_TOK_NOT) && all_operands)
      pd_buf_puts(&m, " ('not' binds more loosely than arithmetic and comparisons: write "
                      "'(not x)')");
    else if (sym == YYTRANSLATE('=') && wants_eq)
      pd_buf_puts(&m, " (use '==' to compare)");
    else if (is_comparison(sym) && wants_plus && !wants_eq)
      pd_buf_puts(&m, " (comparisons do not chain: write 'a < b and b < c')");
  }
  pd_lex_error(lx, loc, "%s", m.oom ? "syntax error" : m.data);
  pd_buf_free(&m);
  return 0;
}

static int yylex(PD_YYSTYPE *lval, pd_loc *lloc, pd_parser *ps) {
  pd_token t;
  pd_lex_next(&ps->lex, &t);
  *lloc = t.loc;
  switch (t.kind) {
  case PD_TOK_IDENT:
  case PD_TOK_STRING: lval->str = t.value.s; break;
  case PD_TOK_INT: lval->ival = t.value.i; break;
  case PD_TOK_FLOAT: lval->fval = t.value.f; break;
  default: break;
  }
  return t.kind;
}

static pd_status parse(const pd_source *src, pd_ast_arena *arena, pd_diags *diags, int repl,
                       pd_ast_node **out, int *incomplete) {
  pd_parser ps;
  memset(&ps, 0, sizeof ps);
  pd_lex_init(&ps.lex, src, arena, diags);
  ps.arena = arena;
  ps.repl = repl;
  int rc = yyparse(&ps);
  pd_status st = PD_OK;
  if (rc == 2 || ps.lex.nomem)
    st = PD_ENOMEM;
  else if (rc != 0 || ps.incomplete || pd_lex_error_count(&ps.lex) > 0 || !ps.root)
    st = PD_ESYNTAX;
  pd_lex_free(&ps.lex);
  *out = st == PD_OK ? ps.root : NULL;
  if (incomplete) *incomplete = st == PD_ESYNTAX && ps.incomplete;
  return st;
}

pd_status pd_parse(const pd_source *src, pd_ast_arena *arena, pd_diags *diags, pd_ast_node **out) {
  return parse(src, arena, diags, 0, out, NULL);
}

pd_status pd_parse_repl(const pd_source *src, pd_ast_arena *arena, pd_diags *diags,
                        pd_ast_node **out, int *incomplete) {
  return parse(src, arena, diags, 1, out, incomplete);
}
