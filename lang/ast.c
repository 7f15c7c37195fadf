/* ast.c -- the syntax tree's arena, kind tables, generic child access and the text dump. */
#include "config.h"
#include "lang/ast.h"

#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Kind and operator tables ---- */

static const struct kind_info {
  const char *name;
  char category;
  const char *phrase;
} kinds[] = {
#define PD_X_(name, text, cat, phrase) {text, cat, phrase},
    PD_AST_KIND_LIST(PD_X_)
#undef PD_X_
};
_Static_assert(PD_ARRAY_LEN(kinds) == PD_AST_KIND_COUNT_, "kind table out of sync");

static const char *const op_names[] = {
#define PD_X_(name, text) text,
    PD_AST_OP_LIST(PD_X_)
#undef PD_X_
};
_Static_assert(PD_ARRAY_LEN(op_names) == PD_AST_OP_COUNT_, "operator table out of sync");

const char *pd_ast_kind_name(pd_ast_kind kind) {
  return (unsigned)kind < PD_AST_KIND_COUNT_ ? kinds[kind].name : "?";
}

const char *pd_ast_kind_phrase(pd_ast_kind kind) {
  return (unsigned)kind < PD_AST_KIND_COUNT_ ? kinds[kind].phrase : "?";
}

int pd_ast_is_stmt(pd_ast_kind kind) {
  return (unsigned)kind < PD_AST_KIND_COUNT_ && kinds[kind].category == 'S';
}

int pd_ast_is_expr(pd_ast_kind kind) {
  return (unsigned)kind < PD_AST_KIND_COUNT_ && kinds[kind].category == 'E';
}

const char *pd_ast_op_name(pd_ast_op op) {
  return (unsigned)op < PD_AST_OP_COUNT_ ? op_names[op] : "?";
}

/* ---- The arena ---- */

#ifndef PD_AST_ARENA_TRACKED
#if defined(__SANITIZE_ADDRESS__)
#define PD_AST_ARENA_TRACKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PD_AST_ARENA_TRACKED 1
#endif
#endif
#endif
#ifndef PD_AST_ARENA_TRACKED
#define PD_AST_ARENA_TRACKED 0
#endif

/* Everything the tree holds (pointers, int64_t, double) is aligned to this. */
typedef union arena_align {
  void *p;
  int64_t i;
  double d;
} arena_align;
#define ARENA_ALIGN _Alignof(arena_align)
#define ROUND_UP(n) (((n) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1))

enum {
  FIRST_CHUNK = 4096,          /* bytes of the first chunk; each next one doubles... */
  MAX_CHUNK = 1 << 20          /* ...up to this; larger requests get a chunk of their own */
};

/* A block of memory from pd_calloc; its usable bytes start CHUNK_HEADER bytes in. */
typedef struct chunk {
  struct chunk *prev;          /* the chunk allocated before this one (all are freed together) */
} chunk;
#define CHUNK_HEADER ROUND_UP(sizeof(chunk))

struct pd_ast_arena {
  chunk *chunks;               /* every chunk, newest (or the latest dedicated one) first */
  char *next;                  /* free space of the current bump chunk: [next, end) */
  char *end;
  size_t next_size;            /* size of the next bump chunk */
  size_t used;                 /* bytes handed out, for pd_ast_arena_used */
};

pd_ast_arena *pd_ast_arena_new(void) {
  pd_ast_arena *a = pd_calloc(1, sizeof *a);
  if (a) a->next_size = FIRST_CHUNK;
  return a;
}

void pd_ast_arena_free(pd_ast_arena *arena) {
  if (!arena) return;
  chunk *c = arena->chunks;
  while (c) {
    chunk *prev = c->prev;
    pd_free(c);
    c = prev;
  }
  pd_free(arena);
}

/* A zeroed chunk with `n` usable bytes, linked into the arena; NULL when out of memory. */
static char *new_chunk(pd_ast_arena *a, size_t n) {
  if (n > SIZE_MAX - CHUNK_HEADER) return NULL;
  chunk *c = pd_calloc(1, CHUNK_HEADER + n);
  if (!c) return NULL;
  c->prev = a->chunks;
  a->chunks = c;
  return (char *)c + CHUNK_HEADER;
}

void *pd_ast_alloc(pd_ast_arena *a, size_t n) {
  if (n > SIZE_MAX - ARENA_ALIGN) return NULL;
  n = ROUND_UP(n ? n : 1);
  char *p;
  if (PD_AST_ARENA_TRACKED || n > MAX_CHUNK / 4) {
    /* A dedicated allocation. The bump chunk, if any, stays current: it is only found through
     * a->next, so linking the new chunk in front of it loses nothing. */
    p = new_chunk(a, n);
  } else {
    if ((size_t)(a->end - a->next) < n) {
      size_t size = a->next_size;
      char *fresh = new_chunk(a, size);
      if (!fresh) return NULL;
      a->next = fresh;
      a->end = fresh + size;
      if (a->next_size < MAX_CHUNK) a->next_size *= 2;
    }
    p = a->next;
    a->next += n;
  }
  if (p) a->used += n;
  return p;
}

char *pd_ast_strndup(pd_ast_arena *arena, const char *s, size_t n) {
  if (n == SIZE_MAX) return NULL;
  char *p = pd_ast_alloc(arena, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

size_t pd_ast_arena_used(const pd_ast_arena *arena) { return arena->used; }

/* ---- Building ---- */

pd_ast_node *pd_ast_new(pd_ast_arena *arena, pd_ast_kind kind, pd_loc loc) {
  pd_ast_node *n = pd_ast_alloc(arena, sizeof *n);
  if (!n) return NULL;
  n->kind = kind;
  n->height = 1;
  n->loc = loc;
  return n;
}

pd_status pd_ast_list_make(pd_ast_arena *arena, pd_ast_node *const *items, size_t n,
                           pd_ast_list *out) {
  out->items = NULL;
  out->len = 0;
  if (n == 0) return PD_OK;
  if (n > SIZE_MAX / sizeof *items) return PD_ENOMEM;
  pd_ast_node **copy = pd_ast_alloc(arena, n * sizeof *items);
  if (!copy) return PD_ENOMEM;
  memcpy(copy, items, n * sizeof *items);
  out->items = copy;
  out->len = n;
  return PD_OK;
}

/* ---- Generic children ----
 * Each kind's children form at most three slots, each a single optional child or a list. */
typedef struct slot {
  const char *role;
  pd_ast_node *const *items;
  size_t len;
} slot;
enum { MAX_SLOTS = 4 };

static int slots_of(const pd_ast_node *n, slot s[MAX_SLOTS]) {
  int k = 0;
#define ONE(role_, field) (s[k++] = (slot){(role_), &(field), (field) != NULL})
#define MANY(role_, list) (s[k++] = (slot){(role_), (list).items, (list).len})
  switch (n->kind) {
  case PD_AST_PROGRAM:
  case PD_AST_BLOCK: MANY(NULL, n->block.stmts); break;
  case PD_AST_ASSIGN:
  case PD_AST_LET: MANY("target", n->assign.targets); ONE("value", n->assign.value); break;
  case PD_AST_EXPR_STMT: ONE(NULL, n->expr_stmt.expr); break;
  case PD_AST_IF: MANY(NULL, n->if_.branches); ONE("else", n->if_.else_block); break;
  case PD_AST_BRANCH: ONE("cond", n->branch.cond); ONE("body", n->branch.body); break;
  case PD_AST_FOR:
    ONE("var", n->for_.var); ONE("in", n->for_.iter); ONE("option", n->for_.option);
    ONE("body", n->for_.body);
    break;
  case PD_AST_WHILE: ONE("cond", n->while_.cond); ONE("body", n->while_.body); break;
  case PD_AST_DEF:
    ONE("name", n->def.name); MANY(NULL, n->def.params); ONE("body", n->def.body);
    break;
  case PD_AST_RETURN: MANY(NULL, n->return_.values); break;
  case PD_AST_EMIT: MANY(NULL, n->emit.outputs); break;
  case PD_AST_PARAM: ONE("default", n->binding.value); break;
  case PD_AST_OUTPUT:
  case PD_AST_KWARG: ONE(NULL, n->binding.value); break;
  case PD_AST_SLICE: ONE("lo", n->slice.lo); ONE("hi", n->slice.hi); break;
  case PD_AST_LIST: MANY(NULL, n->list.items); break;
  case PD_AST_UNARY: ONE(NULL, n->unary.operand); break;
  case PD_AST_BINARY: ONE(NULL, n->binary.lhs); ONE(NULL, n->binary.rhs); break;
  case PD_AST_CALL:
    ONE("callee", n->call.callee); MANY(NULL, n->call.args); ONE("body", n->call.body);
    break;
  case PD_AST_INDEX: ONE("object", n->index.object); MANY(NULL, n->index.subscripts); break;
  case PD_AST_ATTR: ONE(NULL, n->attr.object); break;
  case PD_AST_IMPORT:
  case PD_AST_NAME:
  case PD_AST_INT:
  case PD_AST_FLOAT:
  case PD_AST_STRING:
  case PD_AST_BOOL:
  case PD_AST_NONE:
  case PD_AST_KIND_COUNT_: break;
  }
#undef ONE
#undef MANY
  return k;
}

size_t pd_ast_child_count(const pd_ast_node *n) {
  slot s[MAX_SLOTS];
  int k = slots_of(n, s);
  size_t count = 0;
  for (int i = 0; i < k; i++) count += s[i].len;
  return count;
}

pd_ast_child pd_ast_child_at(const pd_ast_node *n, size_t i) {
  slot s[MAX_SLOTS];
  int k = slots_of(n, s);
  for (int j = 0; j < k; j++) {
    if (i < s[j].len) return (pd_ast_child){s[j].role, s[j].items[i]};
    i -= s[j].len;
  }
  return (pd_ast_child){NULL, NULL}; /* out of range: a caller bug */
}

int pd_ast_update_height(pd_ast_node *n) {
  slot s[MAX_SLOTS];
  int k = slots_of(n, s);
  int highest = 0;
  for (int j = 0; j < k; j++)
    for (size_t i = 0; i < s[j].len; i++)
      if (s[j].items[i]->height > highest) highest = s[j].items[i]->height;
  n->height = highest < PD_AST_MAX_DEPTH ? highest + 1 : PD_AST_MAX_DEPTH + 1;
  return n->height;
}

/* ---- Dump ---- */

/* A string literal in double quotes: printable ASCII as is, everything else escaped, so the dump
 * is plain ASCII whatever the string holds. */
static void dump_string(pd_buf *out, pd_ast_str s) {
  pd_buf_puts(out, "\"");
  for (size_t i = 0; i < s.len; i++) {
    unsigned char c = (unsigned char)s.data[i];
    switch (c) {
    case '"': pd_buf_puts(out, "\\\""); break;
    case '\\': pd_buf_puts(out, "\\\\"); break;
    case '\n': pd_buf_puts(out, "\\n"); break;
    case '\t': pd_buf_puts(out, "\\t"); break;
    case '\r': pd_buf_puts(out, "\\r"); break;
    default:
      if (c >= 0x20 && c < 0x7f)
        pd_buf_append(out, &c, 1);
      else
        pd_buf_printf(out, "\\x%02x", c);
    }
  }
  pd_buf_puts(out, "\"");
}

/* The shortest %g form that reads back as the same double, with a '.' whatever the locale, and
 * a ".0" added when it would otherwise look like an integer. */
static void dump_double(pd_buf *out, double v) {
  char text[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(text, sizeof text, "%.*g", prec, v);
    if (strtod(text, NULL) == v) break;
  }
  const char *point = localeconv()->decimal_point;
  if (point[0] != '.' && point[0] != '\0' && point[1] == '\0') {
    char *p = strchr(text, point[0]);
    if (p) *p = '.';
  }
  pd_buf_puts(out, text);
  if (!strpbrk(text, ".eEn")) pd_buf_puts(out, ".0");
}

static void dump_node(pd_buf *out, size_t depth, const char *role, const pd_ast_node *n) {
  for (size_t i = 0; i < depth; i++) pd_buf_puts(out, "  ");
  if (role) pd_buf_printf(out, "%s: ", role);
  pd_buf_puts(out, pd_ast_kind_name(n->kind));
  switch (n->kind) {
  case PD_AST_IMPORT: pd_buf_puts(out, " "); dump_string(out, n->import.path); break;
  case PD_AST_NAME: pd_buf_printf(out, " %s", n->name.id); break;
  case PD_AST_INT: pd_buf_printf(out, " %" PRId64, n->int_value); break;
  case PD_AST_FLOAT: pd_buf_puts(out, " "); dump_double(out, n->float_value); break;
  case PD_AST_STRING: pd_buf_puts(out, " "); dump_string(out, n->str); break;
  case PD_AST_BOOL: pd_buf_puts(out, n->bool_value ? " true" : " false"); break;
  case PD_AST_UNARY: pd_buf_printf(out, " %s", pd_ast_op_name(n->unary.op)); break;
  case PD_AST_BINARY: pd_buf_printf(out, " %s", pd_ast_op_name(n->binary.op)); break;
  case PD_AST_PARAM:
  case PD_AST_KWARG:
  case PD_AST_OUTPUT: pd_buf_printf(out, " %s", n->binding.name); break;
  case PD_AST_ATTR: pd_buf_printf(out, " %s", n->attr.name); break;
  default: break;
  }
  pd_buf_printf(out, " @%d:%d\n", n->loc.line, n->loc.col);
}

pd_status pd_ast_dump(const pd_ast_node *root, pd_buf *out) {
  /* Depth-first with an explicit stack: frame i is the node at depth i and its next child. */
  struct frame {
    const pd_ast_node *node;
    size_t next;
  } *stack = NULL;
  size_t cap = 0, depth = 0;
  if (PD_GROW(stack, cap, 1)) return PD_ENOMEM;
  dump_node(out, 0, NULL, root);
  stack[depth++] = (struct frame){root, 0};
  while (depth > 0 && !out->oom) {
    struct frame *top = &stack[depth - 1];
    if (top->next == pd_ast_child_count(top->node)) {
      depth--;
      continue;
    }
    pd_ast_child c = pd_ast_child_at(top->node, top->next++);
    dump_node(out, depth, c.role, c.node);
    if (PD_GROW(stack, cap, depth + 1)) {
      pd_free(stack);
      return PD_ENOMEM;
    }
    stack[depth++] = (struct frame){c.node, 0};
  }
  pd_free(stack);
  return out->oom ? PD_ENOMEM : PD_OK;
}
