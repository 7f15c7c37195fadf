/* program_dump.c -- listings of a program: a readable text form (`pdlang dump`, golden tests)
 * and a Graphviz digraph (`pdlang dump --dot`). Both are deterministic and safe on programs that
 * fail validation: names are escaped, indexes are range-checked, parent cycles do not loop. */
#include "config.h"
#include "vm/ir/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Names and values ---- */

/* A name that can be written as is: printable ASCII that cannot be confused with the listing's
 * own punctuation. Anything else is written quoted, with C escapes. */
static bool plain_name(const char *s) {
  if (!*s) return false;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c <= 0x20 || c >= 0x7f || strchr("\"\\,[]", c)) return false;
  }
  return true;
}

static void put_quoted(pd_buf *out, const char *s) {
  if (!s) {
    pd_buf_puts(out, "(null)");
    return;
  }
  pd_buf_puts(out, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '"': pd_buf_puts(out, "\\\""); break;
    case '\\': pd_buf_puts(out, "\\\\"); break;
    case '\n': pd_buf_puts(out, "\\n"); break;
    case '\t': pd_buf_puts(out, "\\t"); break;
    default:
      if (c < 0x20 || c >= 0x7f)
        pd_buf_printf(out, "\\x%02x", c);
      else
        pd_buf_append(out, s, 1);
    }
  }
  pd_buf_puts(out, "\"");
}

static void put_name(pd_buf *out, const char *s) {
  if (s && plain_name(s))
    pd_buf_puts(out, s);
  else
    put_quoted(out, s);
}

/* The shortest %g form that reads back as the same value. */
static void put_float(pd_buf *out, float f) {
  char tmp[48];
  for (int prec = 1; prec <= 9; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, (double)f);
    if (strtof(tmp, NULL) == f) break;
  }
  pd_buf_puts(out, tmp);
}

static void put_double(pd_buf *out, double d) {
  char tmp[48];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    if (strtod(tmp, NULL) == d) break;
  }
  pd_buf_puts(out, tmp);
}

/* One value of a scalar type, or one element of a list (`scalar` is the element's type). */
static void put_value(pd_buf *out, pd_attr_type scalar, const void *p) {
  switch (scalar) {
  case PD_ATTR_INT:
  case PD_ATTR_BLOCK: pd_buf_printf(out, "%d", (int)*(const int32_t *)p); break;
  case PD_ATTR_LONG: pd_buf_printf(out, "%lld", (long long)*(const int64_t *)p); break;
  case PD_ATTR_FLOAT: put_float(out, *(const float *)p); break;
  case PD_ATTR_FLOAT64: put_double(out, *(const double *)p); break;
  case PD_ATTR_BOOLEAN: pd_buf_puts(out, *(const bool *)p ? "true" : "false"); break;
  case PD_ATTR_STRING: put_quoted(out, *(char *const *)p); break;
  default: pd_buf_puts(out, "?"); break;
  }
}

/* The element type of a list type (INTS -> INT, ...); scalars map to themselves. */
static pd_attr_type elem_type(pd_attr_type t) {
  switch (t) {
  case PD_ATTR_INTS: return PD_ATTR_INT;
  case PD_ATTR_BLOCKS: return PD_ATTR_BLOCK;
  case PD_ATTR_LONGS: return PD_ATTR_LONG;
  case PD_ATTR_FLOATS: return PD_ATTR_FLOAT;
  case PD_ATTR_FLOAT64S: return PD_ATTR_FLOAT64;
  case PD_ATTR_BOOLEANS: return PD_ATTR_BOOLEAN;
  case PD_ATTR_STRINGS: return PD_ATTR_STRING;
  default: return t;
  }
}

/* The value of an attribute: "1", "[1, 2]", "\"s\"". */
static void put_attr_value(pd_buf *out, const pd_attr *a) {
  if (!pd_attr_type_is_list(a->type)) {
    const void *p = a->type == PD_ATTR_INT || a->type == PD_ATTR_BLOCK ? (const void *)&a->v.i
                    : a->type == PD_ATTR_LONG                          ? (const void *)&a->v.l
                    : a->type == PD_ATTR_FLOAT                         ? (const void *)&a->v.f
                    : a->type == PD_ATTR_FLOAT64                       ? (const void *)&a->v.d
                    : a->type == PD_ATTR_BOOLEAN                       ? (const void *)&a->v.b
                                                                       : (const void *)&a->v.s;
    put_value(out, a->type, p);
    return;
  }
  const char *data = pd_attr_list(a);
  size_t elem = pd_attr_list_elem_size(a->type);
  pd_buf_puts(out, "[");
  for (int i = 0; data && i < a->n; i++) {
    if (i) pd_buf_puts(out, ", ");
    put_value(out, elem_type(a->type), data + (size_t)i * elem);
  }
  pd_buf_puts(out, "]");
}

static void put_shape(pd_buf *out, const pd_var_desc *v) {
  if (v->ndims < 0 || (v->ndims > 0 && !v->dims)) {
    pd_buf_puts(out, "(shape unknown)");
    return;
  }
  pd_buf_put_dims(out, v->ndims, v->dims);
}

static void put_loc(pd_buf *out, pd_loc loc) {
  put_name(out, loc.file && loc.file[0] ? loc.file : "?");
  pd_buf_printf(out, ":%d:%d", loc.line, loc.col);
}

/* ---- The block tree ---- */

/* What the listings need to know about each block beyond the block itself. */
typedef struct block_info {
  int first_child;   /* smallest block whose parent this is, or -1 */
  int next_sibling;  /* next block (by index) with the same parent, or -1 */
  bool in_tree;      /* reached from block 0 through the child links */
  int owner_block;   /* the first op owning this block through a BLOCK/BLOCKS attr: its block, */
  int owner_op;      /* its index, */
  const char *owner_attr; /* and the attribute; owner_block -1 when no op owns the block */
  int nowners;       /* how many (op, attribute) pairs point at this block */
} block_info;

static const pd_block *block_at(const pd_program *p, int i) {
  return i >= 0 && i < p->nblocks ? p->blocks[i] : NULL;
}

static void note_owner(block_info *info, const pd_program *p, int target, int bi, int oi,
                       const char *attr) {
  if (!block_at(p, target)) return;
  block_info *t = &info[target];
  if (t->nowners++ == 0) {
    t->owner_block = bi;
    t->owner_op = oi;
    t->owner_attr = attr;
  }
}

/* Children lists and owners for every block; NULL (and out->oom set) on out of memory. */
static block_info *block_infos(const pd_program *p, pd_buf *out) {
  int n = p->nblocks;
  block_info *info = pd_calloc((size_t)n, sizeof *info);
  if (!info) {
    out->oom = 1;
    return NULL;
  }
  for (int i = 0; i < n; i++) info[i] = (block_info){-1, -1, false, -1, -1, NULL, 0};
  /* Backwards, so that each list of children comes out in index order. Block 0 is the root
   * whatever its parent says, so the links from it form a tree even when parents loop. */
  for (int i = n - 1; i > 0; i--) {
    const pd_block *b = p->blocks[i];
    if (!b || !block_at(p, b->parent_idx) || b->parent_idx == i) continue;
    info[i].next_sibling = info[b->parent_idx].first_child;
    info[b->parent_idx].first_child = i;
  }
  for (int bi = 0; bi < n; bi++) {
    const pd_block *b = p->blocks[bi];
    for (int oi = 0; b && oi < b->nops; oi++) {
      const pd_op_desc *op = b->ops[oi];
      for (int k = 0; op && k < op->nattrs; k++) {
        const pd_attr *a = &op->attrs[k];
        if (a->type == PD_ATTR_BLOCK) note_owner(info, p, a->v.i, bi, oi, a->name);
        for (int e = 0; a->type == PD_ATTR_BLOCKS && a->ints && e < a->n; e++)
          note_owner(info, p, a->ints[e], bi, oi, a->name);
      }
    }
  }
  return info;
}

/* Visit the tree under block 0 in pre-order without recursion (a chain of blocks may be as
 * deep as the program is long): returns the block after u, and updates *depth; -1 at the end. */
static int tree_next(const pd_program *p, const block_info *info, int u, int *depth) {
  if (info[u].first_child >= 0) {
    ++*depth;
    return info[u].first_child;
  }
  while (u != 0 && info[u].next_sibling < 0) {
    u = p->blocks[u]->parent_idx;
    --*depth;
  }
  return u == 0 ? -1 : info[u].next_sibling;
}

static void put_indent(pd_buf *out, int depth) {
  /* Deep chains are shown flattened past 24 levels rather than as megabytes of spaces. */
  for (int i = 0; i < depth && i < 24; i++) pd_buf_puts(out, "  ");
}

static void put_owner(pd_buf *out, const pd_program *p, const block_info *bi) {
  if (bi->owner_block < 0) return;
  const pd_op_desc *op = p->blocks[bi->owner_block]->ops[bi->owner_op];
  pd_buf_puts(out, "  <- ");
  put_name(out, bi->owner_attr);
  pd_buf_printf(out, " of block %d op %d (", bi->owner_block, bi->owner_op);
  put_name(out, op->type);
  pd_buf_puts(out, ")");
  if (bi->nowners > 1) pd_buf_printf(out, " and %d more", bi->nowners - 1);
}

static void dump_tree_line(pd_buf *out, const pd_program *p, const block_info *info, int i,
                           int depth) {
  const pd_block *b = p->blocks[i];
  put_indent(out, depth + 1);
  pd_buf_printf(out, "block %d", i);
  if (b->forward_block_idx >= 0)
    pd_buf_printf(out, " (gradient of block %d)", b->forward_block_idx);
  put_owner(out, p, &info[i]);
  pd_buf_puts(out, "\n");
}

static void dump_tree(pd_buf *out, const pd_program *p, block_info *info) {
  pd_buf_puts(out, "block tree:\n");
  if (!p->blocks[0]) return;
  int depth = 0;
  for (int u = 0; u >= 0; u = tree_next(p, info, u, &depth)) {
    info[u].in_tree = true;
    dump_tree_line(out, p, info, u, depth);
  }
  for (int i = 1; i < p->nblocks; i++) {
    if (info[i].in_tree || !p->blocks[i]) continue;
    pd_buf_printf(out, "  block %d (not under block 0: parent %d)\n", i,
                  p->blocks[i]->parent_idx);
  }
}

/* ---- The text listing ---- */

static void dump_var(pd_buf *out, const pd_var_desc *v) {
  pd_buf_puts(out, "  var ");
  if (!v) {
    pd_buf_puts(out, "(missing)\n");
    return;
  }
  put_name(out, v->name);
  pd_buf_printf(out, ": %s", pd_var_type_name(v->type));
  if (pd_var_type_has_tensor(v->type)) {
    pd_buf_printf(out, " %s ", pd_dtype_name(v->dtype));
    put_shape(out, v);
    if (v->lod_level) pd_buf_printf(out, " lod_level %d", v->lod_level);
  }
  if (v->persistable) pd_buf_puts(out, " persistable");
  if (v->stop_gradient) pd_buf_puts(out, " stop_gradient");
  pd_buf_puts(out, "\n");
}

static void dump_slots(pd_buf *out, const pd_slot *slots, int n, const char *dir) {
  for (int k = 0; slots && k < n; k++) {
    pd_buf_printf(out, "    %s ", dir);
    put_name(out, slots[k].param);
    pd_buf_puts(out, ": [");
    for (int a = 0; slots[k].args && a < slots[k].nargs; a++) {
      if (a) pd_buf_puts(out, ", ");
      put_name(out, slots[k].args[a]);
    }
    pd_buf_puts(out, "]\n");
  }
}

static int cmp_attr_name(const void *x, const void *y) {
  const pd_attr *a = *(const pd_attr *const *)x, *b = *(const pd_attr *const *)y;
  int c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
  return c ? c : (a < b ? -1 : a > b); /* duplicates (invalid programs) in array order */
}

static void dump_attrs(pd_buf *out, const pd_op_desc *op) {
  if (op->nattrs <= 0 || !op->attrs) return;
  const pd_attr **sorted = pd_malloc((size_t)op->nattrs * sizeof *sorted);
  if (!sorted) {
    out->oom = 1;
    return;
  }
  for (int k = 0; k < op->nattrs; k++) sorted[k] = &op->attrs[k];
  qsort(sorted, (size_t)op->nattrs, sizeof *sorted, cmp_attr_name);
  for (int k = 0; k < op->nattrs; k++) {
    const pd_attr *a = sorted[k];
    pd_buf_puts(out, "    attr ");
    put_name(out, a->name);
    if (a->type == PD_ATTR_BLOCK) {
      pd_buf_printf(out, " -> block %d\n", (int)a->v.i);
    } else if (a->type == PD_ATTR_BLOCKS) {
      pd_buf_puts(out, " -> blocks ");
      put_attr_value(out, a);
      pd_buf_puts(out, "\n");
    } else {
      pd_buf_printf(out, ": %s ", pd_attr_type_name(a->type));
      put_attr_value(out, a);
      pd_buf_puts(out, "\n");
    }
  }
  pd_free(sorted);
}

static void dump_op(pd_buf *out, const pd_op_desc *op, int j) {
  pd_buf_printf(out, "  op %d: ", j);
  if (!op) {
    pd_buf_puts(out, "(missing)\n");
    return;
  }
  put_name(out, op->type);
  if (op->loc.line > 0) {
    pd_buf_puts(out, " @ ");
    put_loc(out, op->loc);
    /* The calls it is inside, innermost first: "@ lib.pd:3:9 in f @ main.pd:5:5". */
    for (int k = 0; op->calls && k < op->calls->n; k++) {
      pd_buf_puts(out, " in ");
      put_name(out, op->calls->sites[k].fn);
      pd_buf_puts(out, " @ ");
      put_loc(out, op->calls->sites[k].loc);
    }
  }
  pd_buf_puts(out, "\n");
  dump_slots(out, op->inputs, op->ninputs, "in ");
  dump_slots(out, op->outputs, op->noutputs, "out");
  dump_attrs(out, op);
}

static void dump_block(pd_buf *out, const pd_block *b, int i) {
  pd_buf_printf(out, "\nblock %d", i);
  if (!b) {
    pd_buf_puts(out, ": missing\n");
    return;
  }
  if (i == 0 && b->parent_idx == -1)
    pd_buf_puts(out, " (global");
  else
    pd_buf_printf(out, " (parent %d", b->parent_idx);
  if (b->forward_block_idx >= 0) pd_buf_printf(out, ", forward block %d", b->forward_block_idx);
  if (b->idx != i) pd_buf_printf(out, ", idx says %d", b->idx);
  pd_buf_puts(out, "):\n");
  if (b->nvars <= 0 && b->nops <= 0) pd_buf_puts(out, "  (empty)\n");
  for (int j = 0; b->vars && j < b->nvars; j++) dump_var(out, b->vars[j]);
  for (int j = 0; b->ops && j < b->nops; j++) dump_op(out, b->ops[j], j);
}

void pd_program_dump(const pd_program *p, pd_buf *out) {
  if (!p || p->nblocks <= 0 || !p->blocks) {
    pd_buf_puts(out, "program: no blocks\n");
    return;
  }
  pd_buf_printf(out, "program: %d block%s, version %lld\n", p->nblocks,
                p->nblocks == 1 ? "" : "s", (long long)p->version);
  block_info *info = block_infos(p, out);
  if (!info) return;
  dump_tree(out, p, info);
  pd_free(info);
  for (int i = 0; i < p->nblocks; i++) dump_block(out, p->blocks[i], i);
}

/* ---- Graphviz ---- */

/* A DOT string literal: quotes and backslashes escaped, other bytes outside printable ASCII as
 * \xHH text (DOT has no byte escapes), so that any name gives a well-formed file. */
static void put_dot_text(pd_buf *out, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      pd_buf_printf(out, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      pd_buf_printf(out, "\\\\x%02x", c);
    else
      pd_buf_append(out, s, 1);
  }
  if (!s) pd_buf_puts(out, "(null)");
}

static void dot_var_node(pd_buf *out, const pd_var_desc *v, int bi, int j, int depth) {
  put_indent(out, depth);
  pd_buf_printf(out, "b%d_v%d [label=\"", bi, j);
  put_dot_text(out, v->name);
  if (pd_var_type_has_tensor(v->type)) {
    pd_buf printable;
    pd_buf_init(&printable);
    put_shape(&printable, v);
    pd_buf_printf(out, "\\n%s ", pd_dtype_name(v->dtype));
    put_dot_text(out, printable.data);
    if (printable.oom) out->oom = 1;
    pd_buf_free(&printable);
  } else {
    pd_buf_printf(out, "\\n%s", pd_var_type_name(v->type));
  }
  pd_buf_printf(out, "\", shape=ellipse%s];\n",
                v->persistable ? ", style=filled, fillcolor=\"#dddddd\"" : "");
}

static void dot_op_node(pd_buf *out, const pd_op_desc *op, int bi, int j, int depth) {
  put_indent(out, depth);
  pd_buf_printf(out, "b%d_o%d [label=\"", bi, j);
  put_dot_text(out, op->type);
  if (op->loc.line > 0) {
    pd_buf loc;
    pd_buf_init(&loc);
    put_loc(&loc, op->loc);
    pd_buf_puts(out, "\\n");
    put_dot_text(out, loc.data);
    if (loc.oom) out->oom = 1;
    pd_buf_free(&loc);
  }
  pd_buf_puts(out, "\", shape=box, style=rounded];\n");
}

/* ---- The ops of one `def` call as a cluster of their own, nested as the calls nest ---- */
typedef struct dot_call {
  int parent;                 /* the enclosing call, or -1 */
  const pd_call_site *site;
  const pd_callchain *direct; /* the chain of the ops directly inside (the first one seen) */
} dot_call;

typedef struct dot_calls {
  dot_call *calls;
  int n;
  size_t cap;
  int *op_call;               /* per op of the block: its innermost call, or -1 */
  int *var_call;              /* per var: the call of the op that makes it, or -1 */
  int *var_op;                /* per var: the op that makes it, else its first reader, or -1 */
  /* A long block is laid out in columns side by side rather than one strip (dot_columns). */
  int ncols;                  /* 1: one column */
  int *op_col;                /* per op: its column (NULL when one) */
} dot_calls;

static bool same_site(const pd_call_site *a, const pd_call_site *b) {
  return a->loc.line == b->loc.line && a->loc.col == b->loc.col &&
         (a->loc.file == b->loc.file ||
          (a->loc.file && b->loc.file && strcmp(a->loc.file, b->loc.file) == 0)) &&
         (a->fn == b->fn || (a->fn && b->fn && strcmp(a->fn, b->fn) == 0));
}

static void dot_calls_free(dot_calls *dc) {
  pd_free(dc->calls);
  pd_free(dc->op_call);
  pd_free(dc->var_call);
  pd_free(dc->var_op);
  pd_free(dc->op_col);
  *dc = (dot_calls){0};
}

/* Which call each op and var of b belongs to. Consecutive ops whose chains agree on the outer
 * calls are in the same clusters; a chain object of its own for the same call site starts a
 * new call (a function called twice from one line). Returns false on out of memory. */
static bool dot_calls_find(const pd_block *b, dot_calls *dc) {
  *dc = (dot_calls){0};
  dc->op_call = pd_malloc(sizeof *dc->op_call * (size_t)(b->nops + 1));
  dc->var_call = pd_malloc(sizeof *dc->var_call * (size_t)(b->nvars + 1));
  dc->var_op = pd_malloc(sizeof *dc->var_op * (size_t)(b->nvars + 1));
  dc->ncols = 1;
  int *open = pd_malloc(sizeof *open * (PD_MAX_CALL_DEPTH + 1)), depth = 0;
  bool okay = dc->op_call && dc->var_call && dc->var_op && open;
  for (int j = 0; okay && j < b->nops; j++) {
    const pd_callchain *ch = b->ops[j] ? b->ops[j]->calls : NULL;
    int n = ch ? (ch->n < PD_MAX_CALL_DEPTH ? ch->n : PD_MAX_CALL_DEPTH) : 0, common = 0;
    while (common < depth && common < n &&
           same_site(dc->calls[open[common]].site, &ch->sites[ch->n - 1 - common]))
      common++;
    if (n && common == n && dc->calls[open[n - 1]].direct && dc->calls[open[n - 1]].direct != ch)
      common--;  /* the same site, another call */
    depth = common;
    for (; okay && depth < n; depth++) {
      if (PD_GROW(dc->calls, dc->cap, (size_t)dc->n + 1)) okay = false;
      else {
        dc->calls[dc->n] = (dot_call){depth ? open[depth - 1] : -1,
                                      &ch->sites[ch->n - 1 - depth], NULL};
        open[depth] = dc->n++;
      }
    }
    if (okay && n && !dc->calls[open[n - 1]].direct) dc->calls[open[n - 1]].direct = ch;
    if (okay) dc->op_call[j] = n ? open[n - 1] : -1;
  }
  pd_free(open);
  /* A var goes with the op that makes it; a parameter (made by no op here) with its first
   * reader; anything else stays in the block. */
  for (int v = 0; okay && v < b->nvars; v++) {
    dc->var_call[v] = -1;
    const pd_var_desc *var = b->vars[v];
    int reader = -1, maker = -1;
    for (int j = 0; var && j < b->nops && maker < 0; j++) {
      const pd_op_desc *op = b->ops[j];
      for (int s = 0; op && s < op->noutputs && maker < 0; s++)
        for (int a = 0; a < op->outputs[s].nargs && maker < 0; a++)
          if (op->outputs[s].args[a] && strcmp(op->outputs[s].args[a], var->name) == 0) maker = j;
      for (int s = 0; op && reader < 0 && s < op->ninputs; s++)
        for (int a = 0; a < op->inputs[s].nargs && reader < 0; a++)
          if (op->inputs[s].args[a] && strcmp(op->inputs[s].args[a], var->name) == 0) reader = j;
    }
    if (maker >= 0) dc->var_call[v] = dc->op_call[maker];
    else if (var && var->persistable && reader >= 0) dc->var_call[v] = dc->op_call[reader];
    dc->var_op[v] = maker >= 0 ? maker : reader;
  }
  if (!okay) dot_calls_free(dc);
  return okay;
}

/* Ops per column of a long block (about; a column ends where a call of the user's code does). */
enum { DOT_COLUMN_OPS = 40 };

/* The outermost call op j is inside, or -1. */
static int root_call(const dot_calls *dc, int j) {
  int root = dc->op_call[j];
  while (root >= 0 && dc->calls[root].parent >= 0) root = dc->calls[root].parent;
  return root;
}

/* Split the ops of a long block into columns of about equal length, cut only between units (an
 * outermost call, or one op outside calls): a unit starts the next column when more than half
 * of it would overflow the current one. false on out of memory. */
static bool dot_columns(const pd_block *b, dot_calls *dc) {
  int ncols = (b->nops + DOT_COLUMN_OPS - 1) / DOT_COLUMN_OPS;
  if (ncols < 2) return true;
  if (!(dc->op_col = pd_malloc(sizeof *dc->op_col * (size_t)b->nops))) return false;
  int target = (b->nops + ncols - 1) / ncols, col = 0, count = 0;
  for (int j = 0; j < b->nops;) {
    int root = root_call(dc, j), len = 1;
    while (root >= 0 && j + len < b->nops && root_call(dc, j + len) == root) len++;
    if (count > 0 && count + len / 2 >= target && col < ncols - 1) {
      col++;
      count = 0;
    }
    for (int k = 0; k < len; k++) dc->op_col[j + k] = col;
    count += len;
    j += len;
  }
  dc->ncols = col + 1;
  return true;
}

static int var_col(const dot_calls *dc, int v) {
  return dc->op_col && dc->var_op[v] >= 0 ? dc->op_col[dc->var_op[v]] : 0;
}

static void put_file_line(pd_buf *out, pd_loc loc) {
  put_dot_text(out, loc.file && loc.file[0] ? loc.file : "?");
  pd_buf_printf(out, ":%d", loc.line);
}

/* The nodes of block i (vars and ops of call c: -1 for those outside calls) at depth. */
static void dot_nodes(pd_buf *out, const pd_block *b, const dot_calls *dc, int c, int depth) {
  for (int j = 0; b->vars && j < b->nvars; j++)
    if (b->vars[j] && (dc ? dc->var_call[j] : -1) == c)
      dot_var_node(out, b->vars[j], b->idx, j, depth);
  for (int j = 0; b->ops && j < b->nops; j++)
    if (b->ops[j] && (dc ? dc->op_call[j] : -1) == c)
      dot_op_node(out, b->ops[j], b->idx, j, depth);
}

/* The calls of block b as clusters "cluster_bB_cK" labelled "fc (main.pd:12)", each inside the
 * cluster of the call that made it (calls come in pre-order: a call after its parent). */
static void dot_call_clusters(pd_buf *out, const pd_block *b, const dot_calls *dc, int depth) {
  int *stack = dc->n ? pd_malloc(sizeof *stack * (size_t)dc->n) : NULL, top = 0;
  if (dc->n && !stack) {
    out->oom = 1;
    return;
  }
  for (int k = 0; k < dc->n; k++) {
    while (top > 0 && stack[top - 1] != dc->calls[k].parent) {
      put_indent(out, depth + --top);
      pd_buf_puts(out, "}\n");
    }
    put_indent(out, depth + top);
    pd_buf_printf(out, "subgraph cluster_b%d_c%d {\n", b->idx, k);
    put_indent(out, depth + top + 1);
    pd_buf_puts(out, "label=\"");
    put_dot_text(out, dc->calls[k].site->fn);
    pd_buf_puts(out, " (");
    put_file_line(out, dc->calls[k].site->loc);
    pd_buf_printf(out, ")\"; style=\"rounded,filled\"; fillcolor=\"%s\";\n",
                  top % 2 ? "#fff6e0" : "#eaf2ff");
    dot_nodes(out, b, dc, k, depth + top + 1);
    stack[top++] = k;
  }
  while (top > 0) {
    put_indent(out, depth + --top);
    pd_buf_puts(out, "}\n");
  }
  pd_free(stack);
}

/* The nodes of block i inside its cluster (the caller closes it after the nested clusters);
 * dc0: block 0's calls (NULL: none were found). */
static void dot_open_block(pd_buf *out, const pd_program *p, int i, int depth,
                           const dot_calls *dc0) {
  const pd_block *b = p->blocks[i];
  put_indent(out, depth);
  pd_buf_printf(out, "subgraph cluster_b%d {\n", i);
  put_indent(out, depth + 1);
  pd_buf_printf(out, "label=\"block %d", i);
  if (b->forward_block_idx >= 0)
    pd_buf_printf(out, " (gradient of block %d)", b->forward_block_idx);
  pd_buf_puts(out, "\";\n");
  /* An invisible anchor, so that edges can point at the cluster (lhead). */
  put_indent(out, depth + 1);
  pd_buf_printf(out, "b%d [shape=point, style=invis];\n", i);
  dot_calls own = {0};
  const dot_calls *dc = i == 0 ? dc0 : NULL;
  bool has_ops = b->ops && b->nops > 0;
  if (i != 0 && has_ops) {
    if (dot_calls_find(b, &own)) dc = &own;
    else out->oom = 1;
  }
  dot_nodes(out, b, dc, -1, depth + 1);
  if (dc) dot_call_clusters(out, b, dc, depth + 1);
  dot_calls_free(&own);
}

static void dot_close_block(pd_buf *out, int depth) {
  put_indent(out, depth);
  pd_buf_puts(out, "}\n");
}

/* The node of the var `name` as seen from block b, written as "bB_vJ"; false if not found.
 * *var receives J when the var is b's own, else -1. */
static bool put_var_ref(pd_buf *out, const pd_block *b, const char *name, int *var) {
  const pd_block *owner = NULL;
  const pd_var_desc *v = name ? pd_block_find_var_visible(b, name, &owner) : NULL;
  *var = -1;
  if (!v) return false;
  for (int j = 0; j < owner->nvars; j++) {
    if (owner->vars[j] == v) {
      pd_buf_printf(out, "b%d_v%d", owner->idx, j);
      if (owner == b) *var = j;
      return true;
    }
  }
  return false;
}

/* dc: the block's columns, or NULL; an edge between columns does not rank its ends. */
static void dot_slot_edges(pd_buf *out, const pd_block *b, int j, const pd_slot *slots, int n,
                           bool input, const dot_calls *dc) {
  for (int k = 0; slots && k < n; k++) {
    for (int a = 0; slots[k].args && a < slots[k].nargs; a++) {
      pd_buf edge;
      pd_buf_init(&edge);
      int v;
      bool found = put_var_ref(&edge, b, slots[k].args[a], &v);
      if (found && !edge.oom) {
        if (input)
          pd_buf_printf(out, "  %s -> b%d_o%d [label=\"", edge.data, b->idx, j);
        else
          pd_buf_printf(out, "  b%d_o%d -> %s [label=\"", b->idx, j, edge.data);
        put_dot_text(out, slots[k].param);
        bool across = dc && dc->op_col && v >= 0 && var_col(dc, v) != dc->op_col[j];
        pd_buf_puts(out, across ? "\", constraint=false];\n" : "\"];\n");
      }
      if (edge.oom) out->oom = 1;
      pd_buf_free(&edge);
    }
  }
}

static void dot_edges(pd_buf *out, const pd_program *p, const dot_calls *dc0) {
  for (int i = 0; i < p->nblocks; i++) {
    const pd_block *b = p->blocks[i];
    if (!b) continue;
    if (block_at(p, b->forward_block_idx) && b->forward_block_idx != i)
      pd_buf_printf(out,
                    "  b%d -> b%d [ltail=cluster_b%d, lhead=cluster_b%d, style=dotted, "
                    "label=\"forward\"];\n",
                    i, b->forward_block_idx, i, b->forward_block_idx);
    for (int j = 0; b->ops && j < b->nops; j++) {
      const pd_op_desc *op = b->ops[j];
      if (!op) continue;
      dot_slot_edges(out, b, j, op->inputs, op->ninputs, true, i == 0 ? dc0 : NULL);
      dot_slot_edges(out, b, j, op->outputs, op->noutputs, false, i == 0 ? dc0 : NULL);
      for (int k = 0; op->attrs && k < op->nattrs; k++) {
        const pd_attr *a = &op->attrs[k];
        if (a->type != PD_ATTR_BLOCK && a->type != PD_ATTR_BLOCKS) continue;
        const int32_t *targets = a->type == PD_ATTR_BLOCK ? &a->v.i : a->ints;
        int n = a->type == PD_ATTR_BLOCK ? 1 : a->n;
        for (int e = 0; targets && e < n; e++) {
          if (!block_at(p, targets[e])) continue;
          pd_buf_printf(out, "  b%d_o%d -> b%d [lhead=cluster_b%d, style=dashed, label=\"", i, j,
                        targets[e], targets[e]);
          put_dot_text(out, a->name);
          pd_buf_puts(out, "\"];\n");
        }
      }
    }
  }
}

void pd_program_dump_dot(const pd_program *p, pd_buf *out) {
  pd_buf_puts(out, "digraph program {\n  compound=true;\n  rankdir=TB;\n"
                   "  node [fontname=\"Helvetica\", fontsize=10];\n"
                   "  edge [fontname=\"Helvetica\", fontsize=9];\n");
  if (!p || p->nblocks <= 0 || !p->blocks || !p->blocks[0]) {
    pd_buf_puts(out, "}\n");
    return;
  }
  block_info *info = block_infos(p, out);
  if (!info) return;
  const pd_block *b0 = p->blocks[0];
  dot_calls dc0 = {0};
  bool has0 = b0->ops && b0->nops > 0 && dot_calls_find(b0, &dc0);
  if (b0->ops && b0->nops > 0 && (!has0 || !dot_columns(b0, &dc0))) out->oom = 1;
  /* The columns' first ops on one rank (newrank: across clusters). */
  if (dc0.ncols > 1) pd_buf_puts(out, "  newrank=true;\n");
  /* Pre-order over the tree; on the way to the next block, close the clusters being left. */
  int depth = 0;
  for (int u = 0; u >= 0;) {
    info[u].in_tree = true;
    dot_open_block(out, p, u, depth + 1, has0 ? &dc0 : NULL);
    int next_depth = depth;
    int next = tree_next(p, info, u, &next_depth);
    int close_to = next < 0 ? 0 : next_depth;
    for (int d = depth; d >= close_to; d--) dot_close_block(out, d + 1);
    u = next;
    depth = next_depth;
  }
  /* Blocks whose parents never reach block 0 (only in invalid programs) stand alone. */
  for (int i = 1; i < p->nblocks; i++) {
    if (info[i].in_tree || !p->blocks[i]) continue;
    dot_open_block(out, p, i, 1, NULL);
    dot_close_block(out, 1);
  }
  pd_free(info);
  if (dc0.ncols > 1) {
    pd_buf_puts(out, "  { rank=same;");
    for (int j = 0, col = -1; j < b0->nops; j++) {
      if (dc0.op_col[j] == col) continue;
      col = dc0.op_col[j];
      pd_buf_printf(out, " b0_o%d;", j);
    }
    pd_buf_puts(out, " }\n");
  }
  dot_edges(out, p, has0 ? &dc0 : NULL);
  dot_calls_free(&dc0);
  pd_buf_puts(out, "}\n");
}
