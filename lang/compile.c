/* compile.c -- the compiler proper: walks the syntax tree, keeps one symbol table per block,
 * evaluates compile-time values, inlines `def` calls, and lowers tensor expressions and blocks to
 * ops of the main ProgramDesc (parameter initialisers go to the startup program). Control flow:
 *   if over a [batch, 1] bool tensor  split_lod_tensor, two conditional_blocks, merge_lod_tensor
 *   if over a one-element tensor      conditional_block(s) with is_scalar_condition
 *   for (t in seq)                    recurrent (memories: outer names written in the body)
 *   while (cond)                      while (loop-carried: outer names written in the body)
 * Builtin functions live in lang/builtins.c. */
#include "config.h"
#include "lang/compile_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lang/parse.h"

value pd_cmp_v_error = {.k = V_ERROR};
value pd_cmp_v_none = {.k = V_NONE};

/* ------------------------------------------------------------------------------------------ */
/* A string-keyed map of integers (unique-name counters, imported modules).                   */

typedef struct sm_entry {
  const char *key;
  int64_t val;
} sm_entry;

struct strmap {
  sm_entry *e;
  size_t cap, n;
};

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int64_t *sm_slot(C *c, strmap *m, const char *key, bool create) {
  if (create && (m->n + 1) * 2 > m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    sm_entry *ne = pd_calloc(ncap, sizeof *ne);
    if (!ne) {
      c->oom = true;
      return NULL;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->e[i].key) continue;
      size_t j = hash_str(m->e[i].key) & (ncap - 1);
      while (ne[j].key) j = (j + 1) & (ncap - 1);
      ne[j] = m->e[i];
    }
    pd_free(m->e);
    m->e = ne;
    m->cap = ncap;
  }
  if (!m->cap) return NULL;
  size_t j = hash_str(key) & (m->cap - 1);
  while (m->e[j].key) {
    if (strcmp(m->e[j].key, key) == 0) return &m->e[j].val;
    j = (j + 1) & (m->cap - 1);
  }
  if (!create) return NULL;
  const char *k = pd_cmp_strdup(c, key);
  if (!k) return NULL;
  m->e[j].key = k;
  m->e[j].val = 0;
  m->n++;
  return &m->e[j].val;
}

static void sm_free(strmap *m) {
  if (!m) return;
  pd_free(m->e);
  pd_free(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Control-flow constructs being lowered.                                                      */

typedef struct var_map {
  const char *outer;        /* the var's name outside */
  pd_var_desc *inner;       /* what the block reads instead (itself unless split or a memory) */
} var_map;

/* The row split of a per-row `if`, shared by its two branches. */
typedef struct rows_split {
  pd_var_desc *cond;
  pd_block *at;             /* where split ops go (the block holding the if) */
  pd_loc loc;               /* the if's condition, for the split ops' source location */
  int n, cap;
  struct { const char *outer; pd_var_desc *part[2]; } *e;
} rows_split;

typedef enum cf_kind { CF_ROWS, CF_SCALAR, CF_FOR, CF_WHILE } cf_kind;

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

/* ------------------------------------------------------------------------------------------ */
/* Private state hung on the unit.                                                             */

typedef struct unit_priv {
  pd_ast_arena *arena;
  pd_source **sources;
  int nsources;
} unit_priv;

/* ------------------------------------------------------------------------------------------ */
/* Memory and messages.                                                                        */

void *pd_cmp_calloc(C *c, size_t n) {
  void *p = pd_ast_alloc(c->arena, n);
  if (!p) c->oom = true;
  return p;
}

const char *pd_cmp_strdup(C *c, const char *s) {
  char *p = pd_ast_strndup(c->arena, s, strlen(s));
  if (!p) c->oom = true;
  return p;
}

const char *pd_cmp_fmt(C *c, const char *fmt, ...) {
  pd_buf b;
  pd_buf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  pd_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  const char *s = b.oom ? NULL : pd_cmp_strdup(c, b.data ? b.data : "");
  if (b.oom) c->oom = true;
  pd_buf_free(&b);
  return s ? s : "";
}

static const pd_source *source_of(C *c, const char *file) {
  if (!file) return NULL;
  if (c->main_src->name == file || strcmp(c->main_src->name, file) == 0) return c->main_src;
  for (int i = 0; i < c->nsources; i++)
    if (c->sources[i]->name == file || strcmp(c->sources[i]->name, file) == 0) return c->sources[i];
  return NULL;
}

/* The source text of a call argument that starts at loc: up to the ',' or ')' that ends it at
 * its own bracket depth (strings skipped), spaces trimmed. NULL when the source is unknown. */
const char *pd_cmp_arg_source_text(C *c, pd_loc loc) {
  const pd_source *src = source_of(c, loc.file);
  size_t len;
  const char *line = src ? pd_source_line(src, loc.line, &len) : NULL;
  if (!line || loc.col < 1) return NULL;
  const char *p = line + loc.col - 1, *end = src->text + src->len, *q = p;
  int depth = 0;
  char quote = 0;
  for (; q < end; q++) {
    if (quote) {
      if (*q == '\\' && q + 1 < end) q++;
      else if (*q == quote) quote = 0;
      continue;
    }
    if (*q == '"' || *q == '\'') quote = *q;
    else if (*q == '(' || *q == '[') depth++;
    else if (*q == ')' || *q == ']') {
      if (depth == 0) break;
      depth--;
    } else if ((*q == ',' && depth == 0) || *q == '#' || (*q == '\n' && depth == 0)) break;
  }
  while (q > p && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\n' || q[-1] == '\r')) q--;
  pd_buf b;
  pd_buf_init(&b);
  for (const char *r = p; r < q; r++) /* one line: runs of blanks become one space */
    if (!(*r == ' ' || *r == '\n' || *r == '\t' || *r == '\r') || (r > p && r[-1] != ' ' &&
                                                                  r[-1] != '\n' && r[-1] != '\t'))
      pd_buf_append(&b, (*r == '\n' || *r == '\t' || *r == '\r') ? " " : r, 1);
  const char *t = b.oom ? NULL : pd_cmp_strdup(c, b.data ? b.data : "");
  if (b.oom) c->oom = true;
  pd_buf_free(&b);
  return t;
}

/* Report an error. Inside inlined calls the error is shown at the call site in the caller's
 * file, with notes leading to the line inside the function. */
void pd_cmp_error(C *c, pd_loc loc, const char *fmt, ...) {
  pd_buf msg;
  pd_buf_init(&msg);
  va_list ap;
  va_start(ap, fmt);
  pd_buf_vprintf(&msg, fmt, ap);
  va_end(ap);
  const char *text = msg.data ? msg.data : "out of memory";
  /* Find the outermost call frame: the user's line. */
  inline_call *outermost = NULL;
  for (inline_call *k = c->call; k; k = k->outer) outermost = k;
  if (outermost && loc.file != outermost->site.file) {
    pd_diag_report(c->diags, source_of(c, outermost->site.file), PD_DIAG_ERROR, outermost->site,
                   "%s", text);
    pd_diag_report(c->diags, source_of(c, loc.file), PD_DIAG_NOTE, loc, "in '%s', here",
                   c->call->def->def.name->name.id);
  } else {
    pd_diag_report(c->diags, source_of(c, loc.file), PD_DIAG_ERROR, loc, "%s", text);
  }
  pd_buf_free(&msg);
}

/* The location an op records: in the user's file, where the outermost inlined call was made. */
pd_loc pd_cmp_op_loc(C *c, pd_loc loc) {
  inline_call *outermost = NULL;
  for (inline_call *k = c->call; k; k = k->outer) outermost = k;
  return outermost ? outermost->site : loc;
}

/* ------------------------------------------------------------------------------------------ */
/* Values.                                                                                     */

value *pd_cmp_vnew(C *c, vkind k) {
  value *v = pd_cmp_calloc(c, sizeof *v);
  if (!v) return VERR;
  v->k = k;
  return v;
}

value *pd_cmp_vint(C *c, int64_t i) {
  value *v = pd_cmp_vnew(c, V_INT);
  if (v != VERR) v->i = i;
  return v;
}

value *pd_cmp_vfloat(C *c, double f) {
  value *v = pd_cmp_vnew(c, V_FLOAT);
  if (v != VERR) v->f = f;
  return v;
}

value *pd_cmp_vstr(C *c, const char *s) {
  value *v = pd_cmp_vnew(c, V_STR);
  if (v != VERR) v->s = pd_cmp_strdup(c, s);
  return v;
}

value *pd_cmp_vtensor(C *c, pd_var_desc *var) {
  if (!var) return VERR;
  value *v = pd_cmp_vnew(c, V_TENSOR);
  if (v != VERR) v->var = var;
  return v;
}

static value *vbool(C *c, bool b) {
  value *v = pd_cmp_vnew(c, V_BOOL);
  if (v != VERR) v->b = b;
  return v;
}

bool pd_cmp_is_number(const value *v) { return v->k == V_INT || v->k == V_FLOAT || v->k == V_BOOL; }

double pd_cmp_num(const value *v) {
  return v->k == V_INT ? (double)v->i : v->k == V_FLOAT ? v->f : v->k == V_BOOL ? v->b : 0;
}

const char *pd_cmp_vkind_phrase(const value *v) {
  switch (v->k) {
  case V_ERROR: return "an erroneous value";
  case V_UNDEF: return "an undefined value";
  case V_NONE: return "none";
  case V_BOOL: return "a boolean";
  case V_INT: return "an integer";
  case V_FLOAT: return "a number";
  case V_STR: return "a string";
  case V_LIST: return "a list";
  case V_TENSOR: return "a tensor";
  case V_FUNC: return "a function";
  case V_BUILTIN: return "a function";
  case V_DTYPE: return "a dtype";
  case V_RECORD: return "a spec";
  }
  return "a value";
}

const char *pd_cmp_dims_str(C *c, const pd_var_desc *v) {
  pd_buf b;
  pd_buf_init(&b);
  if (v->ndims < 0) {
    pd_buf_puts(&b, "[?]");
  } else {
    pd_buf_puts(&b, "[");
    for (int i = 0; i < v->ndims; i++)
      pd_buf_printf(&b, "%s%lld", i ? ", " : "", (long long)v->dims[i]);
    pd_buf_puts(&b, "]");
  }
  const char *s = b.oom ? "[?]" : pd_cmp_strdup(c, b.data);
  pd_buf_free(&b);
  return s;
}

void pd_cmp_describe(C *c, const value *v, pd_buf *out) {
  switch (v->k) {
  case V_INT: pd_buf_printf(out, "%lld", (long long)v->i); break;
  case V_FLOAT: pd_buf_printf(out, "%g", v->f); break;
  case V_BOOL: pd_buf_puts(out, v->b ? "true" : "false"); break;
  case V_STR: pd_buf_printf(out, "\"%s\"", v->s); break;
  case V_NONE: pd_buf_puts(out, "none"); break;
  case V_DTYPE: pd_buf_puts(out, pd_dtype_name(v->dtype)); break;
  case V_TENSOR:
    pd_buf_printf(out, "%s tensor %s", pd_dtype_name(v->var->dtype), pd_cmp_dims_str(c, v->var));
    break;
  case V_LIST:
    pd_buf_puts(out, "[");
    for (int i = 0; i < v->list.n; i++) {
      if (i) pd_buf_puts(out, ", ");
      pd_cmp_describe(c, v->list.items[i], out);
    }
    pd_buf_puts(out, "]");
    break;
  case V_FUNC: pd_buf_printf(out, "function %s", v->fn.def->def.name->name.id); break;
  case V_BUILTIN: pd_buf_printf(out, "function %s", v->bi->name); break;
  case V_RECORD: pd_buf_printf(out, "%s(...)", v->rec.name); break;
  default: pd_buf_puts(out, pd_cmp_vkind_phrase(v)); break;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Vars, names and ops.                                                                        */

const char *pd_cmp_unique_name(C *c, const char *prefix) {
  int64_t *n = sm_slot(c, c->counters, prefix, true);
  if (!n) return "";
  return pd_cmp_fmt(c, "%s_%lld", prefix, (long long)(*n)++);
}

/* The prefix for names made inside the current inlined call ("fc_0"), or NULL at top level. */
const char *pd_cmp_name_prefix(C *c) { return c->call ? c->call->prefix : NULL; }

static bool name_taken(C *c, const char *name) {
  pd_program *p = c->unit->main;
  for (int i = 0; i < p->nblocks; i++)
    if (pd_block_find_var_local(p->blocks[i], name)) return true;
  return false;
}

/* A new var in block b. With exact, the name is used as given when free, else made unique by a
 * ".N" suffix; without, `hint` is a prefix for a unique temp name. */
pd_var_desc *pd_cmp_var_new(C *c, pd_block *b, const char *hint, bool exact) {
  const char *name = hint;
  if (!exact) {
    const char *pre = pd_cmp_name_prefix(c);
    name = pd_cmp_unique_name(c, pre ? pd_cmp_fmt(c, "%s.%s", pre, hint) : hint);
  }
  for (int k = 1; name_taken(c, name); k++) name = pd_cmp_fmt(c, "%s.%d", hint, k);
  pd_var_desc *v = pd_block_var(b, name);
  if (!v) c->oom = true;
  return v;
}

/* The var that the current block should read for an outer var: reading through each enclosing
 * construct between the var's block and here (a per-row branch reads its half of the rows). */
static pd_var_desc *import_var(C *c, pd_var_desc *v);

pd_op_desc *pd_cmp_op_new(C *c, const char *type, pd_loc loc) {
  pd_op_desc *op = pd_block_add_op(c->block, type, -1);
  if (!op || pd_op_set_loc(op, pd_cmp_op_loc(c, loc))) {
    c->oom = true;
    return NULL;
  }
  return op;
}

static bool want_tensor(C *c, value *v, pd_loc loc, const char *what) {
  if (v->k == V_TENSOR) return true;
  if (v->k != V_ERROR) {
    pd_buf b;
    pd_buf_init(&b);
    pd_cmp_describe(c, v, &b);
    pd_cmp_error(c, loc, "%s must be a tensor, got %s", what, b.data ? b.data : "?");
    pd_buf_free(&b);
  }
  return false;
}

bool pd_cmp_op_in_list(C *c, pd_op_desc *op, const char *slot, value **vs, int n, pd_loc loc) {
  const char **names = pd_cmp_calloc(c, sizeof *names * (size_t)(n ? n : 1));
  if (!names) return false;
  for (int i = 0; i < n; i++) {
    if (!want_tensor(c, vs[i], loc, pd_cmp_fmt(c, "input '%s' of %s", slot, op->type)))
      return false;
    pd_var_desc *v = import_var(c, vs[i]->var);
    if (!v) return false;
    names[i] = v->name;
  }
  if (pd_op_set_input(op, slot, n, names)) {
    c->oom = true;
    return false;
  }
  return true;
}

bool pd_cmp_op_in(C *c, pd_op_desc *op, const char *slot, value *v, pd_loc loc) {
  return pd_cmp_op_in_list(c, op, slot, &v, 1, loc);
}

pd_var_desc *pd_cmp_op_out(C *c, pd_op_desc *op, const char *slot, const char *hint) {
  pd_var_desc *v =
      pd_cmp_var_new(c, c->block, pd_cmp_fmt(c, "%s.tmp", hint ? hint : op->type), false);
  if (!v) return NULL;
  const char *name = v->name;
  if (pd_op_set_output(op, slot, 1, &name)) {
    c->oom = true;
    return NULL;
  }
  return v;
}

/* Check the op, fill default attributes, infer output shapes. Returns the result var as a value,
 * or VERR after reporting. */
value *pd_cmp_op_finish(C *c, pd_op_desc *op, pd_var_desc *result) {
  if (!op || !result || c->oom) return VERR;
  /* Outputs only the backward pass reads (Softmax, Mask, XShape, MaxIndex) always get a var:
   * the forward run must leave them for the gradient ops. */
  const pd_opdef *def = pd_opdef_lookup(op->type);
  for (int i = 0; def && i < def->noutputs; i++)
    if ((def->outputs[i].flags & PD_SLOT_INTERMEDIATE) && !pd_op_output(op, def->outputs[i].name) &&
        !pd_cmp_op_out(c, op, def->outputs[i].name, op->type))
      return VERR;
  pd_error e = {0};
  pd_status st = pd_opdef_prepare(op, c->block, &e);
  if (st) {
    if (st == PD_ENOMEM) c->oom = true;
    else
      pd_cmp_error(c, op->loc.line ? op->loc : (pd_loc){0}, "%s",
                   e.msg ? e.msg : pd_status_str(st));
    pd_error_clear(&e);
    return VERR;
  }
  if (!c->call) c->last_temp = result;
  return pd_cmp_vtensor(c, result);
}

/* fill_constant's "value" is a float32 attribute; a float64 or int64 constant also gets the
 * exact "str_value" (which the kernel prefers, as Fluid's does). 0, or -1 on out of memory. */
int pd_cmp_set_exact_value(pd_op_desc *op, double v, pd_dtype dt) {
  if (dt != PD_FP64 && dt != PD_INT64) return 0;
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  return pd_op_set_attr_string(op, "str_value", buf);
}

/* A [1] tensor holding a constant (for tensor-number arithmetic and comparisons). */
value *pd_cmp_tensor_const(C *c, double v, pd_dtype dt, pd_loc loc) {
  pd_op_desc *op = pd_cmp_op_new(c, "fill_constant", loc);
  if (!op) return VERR;
  int64_t shape[1] = {1};
  pd_var_desc *out = pd_cmp_op_out(c, op, "Out", "fill_constant");
  if (!out || pd_op_set_attr_longs(op, "shape", 1, shape) ||
      pd_op_set_attr_float(op, "value", (float)v) || pd_op_set_attr_int(op, "dtype", (int)dt) ||
      pd_cmp_set_exact_value(op, v, dt)) {
    c->oom = true;
    return VERR;
  }
  out->stop_gradient = true;
  return pd_cmp_op_finish(c, op, out);
}

/* ------------------------------------------------------------------------------------------ */
/* Attributes from compile-time values, typed by the registry.                                 */

static bool value_ints(C *c, value *v, int64_t **out, int *n, pd_loc loc, const char *what) {
  if (pd_cmp_is_number(v) && v->k != V_FLOAT) {
    *out = pd_cmp_calloc(c, sizeof **out);
    if (!*out) return false;
    (*out)[0] = v->k == V_BOOL ? v->b : v->i;
    *n = 1;
    return true;
  }
  if (v->k != V_LIST) {
    if (v->k != V_ERROR) pd_cmp_error(c, loc, "%s must be an integer or a list of integers", what);
    return false;
  }
  *out = pd_cmp_calloc(c, sizeof **out * (size_t)(v->list.n ? v->list.n : 1));
  if (!*out) return false;
  for (int i = 0; i < v->list.n; i++) {
    value *it = v->list.items[i];
    if (it->k != V_INT) {
      if (it->k != V_ERROR)
        pd_cmp_error(c, loc, "%s must be a list of integers (item %d is %s)", what, i,
                     pd_cmp_vkind_phrase(it));
      return false;
    }
    (*out)[i] = it->i;
  }
  *n = v->list.n;
  return true;
}

bool pd_cmp_set_attr(C *c, pd_op_desc *op, const pd_attrdef *ad, value *v, pd_loc loc) {
  const char *what = pd_cmp_fmt(c, "argument '%s' of %s", ad->name, op->type);
  int r = 0;
  switch (ad->type) {
  case PD_ATTR_INT:
  case PD_ATTR_LONG:
    if (v->k == V_DTYPE) {
      r = pd_op_set_attr_int(op, ad->name, (int32_t)v->dtype);
      break;
    }
    if (v->k != V_INT && v->k != V_BOOL) {
      if (v->k != V_ERROR)
        pd_cmp_error(c, loc, "%s must be an integer, got %s", what, pd_cmp_vkind_phrase(v));
      return false;
    }
    if (ad->type == PD_ATTR_INT) {
      int64_t x = v->k == V_BOOL ? v->b : v->i;
      if (x < INT32_MIN || x > INT32_MAX) {
        pd_cmp_error(c, loc, "%s is out of range for a 32-bit integer", what);
        return false;
      }
      r = pd_op_set_attr_int(op, ad->name, (int32_t)x);
    } else {
      r = pd_op_set_attr_long(op, ad->name, v->i);
    }
    break;
  case PD_ATTR_FLOAT:
  case PD_ATTR_FLOAT64:
    if (!pd_cmp_is_number(v)) {
      if (v->k != V_ERROR)
        pd_cmp_error(c, loc, "%s must be a number, got %s", what, pd_cmp_vkind_phrase(v));
      return false;
    }
    r = ad->type == PD_ATTR_FLOAT ? pd_op_set_attr_float(op, ad->name, (float)pd_cmp_num(v))
                                  : pd_op_set_attr_double(op, ad->name, pd_cmp_num(v));
    break;
  case PD_ATTR_BOOLEAN:
    if (v->k != V_BOOL) {
      if (v->k != V_ERROR)
        pd_cmp_error(c, loc, "%s must be true or false, got %s", what, pd_cmp_vkind_phrase(v));
      return false;
    }
    r = pd_op_set_attr_bool(op, ad->name, v->b);
    break;
  case PD_ATTR_STRING:
    if (v->k != V_STR) {
      if (v->k != V_ERROR)
        pd_cmp_error(c, loc, "%s must be a string, got %s", what, pd_cmp_vkind_phrase(v));
      return false;
    }
    if (ad->choices) {
      bool okv = false;
      pd_buf b;
      pd_buf_init(&b);
      for (int i = 0; ad->choices[i]; i++) {
        okv |= strcmp(ad->choices[i], v->s) == 0;
        pd_buf_printf(&b, "%s\"%s\"", i ? ", " : "", ad->choices[i]);
      }
      if (!okv)
        pd_cmp_error(c, loc, "%s must be one of %s, got \"%s\"", what, b.data ? b.data : "", v->s);
      pd_buf_free(&b);
      if (!okv) return false;
    }
    r = pd_op_set_attr_string(op, ad->name, v->s);
    break;
  case PD_ATTR_INTS:
  case PD_ATTR_LONGS: {
    int64_t *xs;
    int n;
    if (!value_ints(c, v, &xs, &n, loc, what)) return false;
    if (ad->type == PD_ATTR_LONGS) {
      r = pd_op_set_attr_longs(op, ad->name, n, xs);
    } else {
      int32_t *ys = pd_cmp_calloc(c, sizeof *ys * (size_t)(n ? n : 1));
      if (!ys) return false;
      for (int i = 0; i < n; i++) ys[i] = (int32_t)xs[i];
      r = pd_op_set_attr_ints(op, ad->name, n, ys);
    }
    break;
  }
  case PD_ATTR_FLOATS: {
    if (v->k != V_LIST) {
      if (v->k != V_ERROR) pd_cmp_error(c, loc, "%s must be a list of numbers", what);
      return false;
    }
    float *fs = pd_cmp_calloc(c, sizeof *fs * (size_t)(v->list.n ? v->list.n : 1));
    if (!fs) return false;
    for (int i = 0; i < v->list.n; i++) {
      if (!pd_cmp_is_number(v->list.items[i])) {
        pd_cmp_error(c, loc, "%s must be a list of numbers", what);
        return false;
      }
      fs[i] = (float)pd_cmp_num(v->list.items[i]);
    }
    r = pd_op_set_attr_floats(op, ad->name, v->list.n, fs);
    break;
  }
  default:
    pd_cmp_error(c, loc, "%s cannot be set from a script", what);
    return false;
  }
  if (r) c->oom = true;
  return r == 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Symbol tables.                                                                              */

static symtab *scope_push(C *c, scope_kind kind, symtab *parent) {
  symtab *s = pd_cmp_calloc(c, sizeof *s);
  if (!s) return NULL;
  s->kind = kind;
  s->parent = parent;
  s->pushed_before = c->newest_scope;
  c->newest_scope = s;
  c->scope = s;
  return s;
}

static binding *lookup_local(symtab *s, const char *name) {
  for (binding *b = s->first; b; b = b->next)
    if (strcmp(b->name, name) == 0) return b;
  return NULL;
}

/* Find a name through the enclosing scopes (a function body sees its defining scope). */
static binding *lookup(symtab *s, const char *name, symtab **where) {
  for (; s; s = s->parent) {
    binding *b = lookup_local(s, name);
    if (b) {
      if (where) *where = s;
      return b;
    }
  }
  return NULL;
}

static binding *bind_local(C *c, symtab *s, const char *name, value *v, pd_loc loc) {
  binding *b = lookup_local(s, name);
  if (b) {
    b->v = v;
    return b;
  }
  b = pd_cmp_calloc(c, sizeof *b);
  if (!b) return NULL;
  b->name = pd_cmp_strdup(c, name);
  b->v = v;
  b->loc = loc;
  if (s->last) s->last->next = b;
  else s->first = b;
  s->last = b;
  return b;
}

static bool push_name(C *c, const char ***arr, int *n, int *cap, const char *name) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*arr)[i], name) == 0) return true;
  if (*n == *cap) {
    int ncap = *cap ? *cap * 2 : 8;
    const char **na = pd_cmp_calloc(c, sizeof *na * (size_t)ncap);
    if (!na) return false;
    if (*n) memcpy(na, *arr, sizeof *na * (size_t)*n);
    *arr = na;
    *cap = ncap;
  }
  (*arr)[(*n)++] = name;
  return true;
}

/* Give a user's name to a var just made for the value being assigned, so that listings and
 * fetches read `h`, not `tmp_3`. Only vars made outside functions, by the newest op. */
static void adopt_name(C *c, value *v, const char *name) {
  if (v->k != V_TENSOR || c->call) return;
  pd_var_desc *var = v->var;
  if (var == c->last_param) {
    if (name_taken(c, name)) return;
    pd_block *sb = c->unit->startup->blocks[0];
    pd_var_desc *sv = pd_block_find_var_local(sb, var->name);
    for (int i = 0; i < sb->nops; i++) {
      pd_op_desc *op = sb->ops[i];
      for (int j = 0; j < op->noutputs; j++)
        for (int k = 0; k < op->outputs[j].nargs; k++)
          if (strcmp(op->outputs[j].args[k], var->name) == 0) {
            const char *nm = name;
            if (pd_op_set_output(op, op->outputs[j].param, 1, &nm)) c->oom = true;
          }
    }
    if ((sv && pd_block_rename_var(sb, sv, name)) ||
        pd_block_rename_var(c->unit->main->blocks[0], var, name))
      c->oom = true;
    c->last_param = NULL;
    return;
  }
  if (var != c->last_temp || c->block->nops == 0 || name_taken(c, name)) return;
  pd_op_desc *op = c->block->ops[c->block->nops - 1];
  for (int j = 0; j < op->noutputs; j++) {
    pd_slot *s = &op->outputs[j];
    for (int k = 0; k < s->nargs; k++) {
      if (strcmp(s->args[k], var->name) != 0) continue;
      if (pd_block_rename_var(c->block, var, name)) {
        c->oom = true;
        return;
      }
      char *dup = pd_strdup(name);
      if (!dup) {
        c->oom = true;
        return;
      }
      pd_free(s->args[k]);
      s->args[k] = dup;
      c->last_temp = NULL;
      return;
    }
  }
}

/* Assign `name = v` in the current scope (see the rules in doc/language.md): a name found in an
 * enclosing scope is written through, except that a tensor-if branch or a loop body keeps the
 * new value in its own table and records the write (it becomes an output or a memory). */
static void assign_name(C *c, const char *name, value *v, pd_loc loc, bool is_let) {
  symtab *s = c->scope;
  if (is_let) {
    if (lookup_local(s, name)) {
      pd_cmp_error(c, loc, "'%s' is already defined in this block", name);
      return;
    }
    binding *b = bind_local(c, s, name, v, loc);
    if (b) b->is_let = true;
    adopt_name(c, v, name);
    return;
  }
  /* Search up to and including the nearest function body. */
  symtab *where = NULL;
  binding *b = NULL;
  for (symtab *t = s; t; t = t->parent) {
    if ((b = lookup_local(t, name))) {
      where = t;
      break;
    }
    if (t->kind == SC_FUNC) break;
  }
  if (!b) {
    if (bind_local(c, s, name, v, loc)) push_name(c, &s->news, &s->nnews, &s->capnews, name);
    adopt_name(c, v, name);
    return;
  }
  /* The innermost construct (branch or loop body) between here and the binding's scope. */
  symtab *cf = NULL;
  for (symtab *t = s; t != where; t = t->parent)
    if (t->kind == SC_BRANCH || t->kind == SC_LOOP) {
      cf = t;
      break;
    }
  if (!cf) {
    if (b->v->k == V_UNDEF) b->loc = loc;
    b->v = v;
    adopt_name(c, v, name);
    return;
  }
  if (bind_local(c, cf, name, v, loc))
    push_name(c, &cf->writes, &cf->nwrites, &cf->capwrites, name);
}

/* ------------------------------------------------------------------------------------------ */
/* Reading outer vars from inside a construct.                                                 */

static bool batch_shaped(const pd_var_desc *v, const pd_var_desc *cond) {
  if (v->persistable || v->ndims < 1) return false;
  if (v->dims[0] == -1) return true;
  return cond->ndims >= 1 && cond->dims[0] > 1 && v->dims[0] == cond->dims[0];
}

static pd_var_desc *rows_part(C *c, cflow *f, pd_var_desc *v) {
  rows_split *r = f->rows;
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->e[i].outer, v->name) == 0) return r->e[i].part[f->side];
  if (r->n == r->cap) {
    int ncap = r->cap ? r->cap * 2 : 8;
    void *ne = pd_cmp_calloc(c, sizeof *r->e * (size_t)ncap);
    if (!ne) return NULL;
    if (r->n) memcpy(ne, r->e, sizeof *r->e * (size_t)r->n);
    r->e = ne;
    r->cap = ncap;
  }
  /* split_lod_tensor goes before the branches, in the block that holds the if. */
  pd_op_desc *op = pd_block_add_op(r->at, "split_lod_tensor", -1);
  pd_var_desc *t = pd_cmp_var_new(c, r->at, pd_cmp_fmt(c, "%s.true", v->name), true);
  pd_var_desc *fl = pd_cmp_var_new(c, r->at, pd_cmp_fmt(c, "%s.false", v->name), true);
  if (!op || !t || !fl || pd_op_set_loc(op, pd_cmp_op_loc(c, r->loc))) {
    c->oom = true;
    return NULL;
  }
  const char *x = v->name, *mask = r->cond->name, *tn = t->name, *fn = fl->name;
  if (pd_op_set_input(op, "X", 1, &x) || pd_op_set_input(op, "Mask", 1, &mask) ||
      pd_op_set_output(op, "OutTrue", 1, &tn) || pd_op_set_output(op, "OutFalse", 1, &fn)) {
    c->oom = true;
    return NULL;
  }
  pd_error e = {0};
  if (pd_opdef_prepare(op, r->at, &e)) {
    pd_cmp_error(c, op->loc, "%s", e.msg ? e.msg : "cannot split rows");
    pd_error_clear(&e);
    return NULL;
  }
  r->e[r->n].outer = v->name;
  r->e[r->n].part[0] = t;
  r->e[r->n].part[1] = fl;
  r->n++;
  return f->side ? fl : t;
}

static pd_var_desc *cf_read(C *c, cflow *f, pd_var_desc *v) {
  for (int i = 0; i < f->nreads; i++)
    if (f->reads[i].inner == v || strcmp(f->reads[i].outer, v->name) == 0) return f->reads[i].inner;
  pd_var_desc *inner = v;
  if (f->kind == CF_ROWS && batch_shaped(v, f->rows->cond)) inner = rows_part(c, f, v);
  if (!inner) return NULL;
  if (f->nreads == f->capreads) {
    int ncap = f->capreads ? f->capreads * 2 : 8;
    var_map *nr = pd_cmp_calloc(c, sizeof *nr * (size_t)ncap);
    if (!nr) return NULL;
    if (f->nreads) memcpy(nr, f->reads, sizeof *nr * (size_t)f->nreads);
    f->reads = nr;
    f->capreads = ncap;
  }
  f->reads[f->nreads].outer = v->name;
  f->reads[f->nreads].inner = inner;
  f->nreads++;
  return inner;
}

static pd_var_desc *import_var(C *c, pd_var_desc *v) {
  /* The constructs from the outermost one that does not hold v, inwards. */
  cflow *chain[64];
  int n = 0;
  for (cflow *f = c->cf; f; f = f->outer) {
    if (pd_block_find_var_local(f->block, v->name)) break;
    if (n == (int)PD_ARRAY_LEN(chain)) {
      pd_cmp_error(c, (pd_loc){0}, "blocks nested too deeply");
      return NULL;
    }
    chain[n++] = f;
  }
  for (int i = n - 1; i >= 0 && v; i--) v = cf_read(c, chain[i], v);
  return v;
}

/* ------------------------------------------------------------------------------------------ */
/* Expressions.                                                                                */

static value *eval(C *c, const pd_ast_node *e);
static void compile_block(C *c, const pd_ast_node *block);
static void compile_stmt(C *c, const pd_ast_node *s);

static bool truthy(C *c, value *v, pd_loc loc, bool *out) {
  switch (v->k) {
  case V_BOOL: *out = v->b; return true;
  case V_INT: *out = v->i != 0; return true;
  case V_FLOAT: *out = v->f != 0; return true;
  case V_NONE: *out = false; return true;
  case V_STR: *out = v->s[0] != '\0'; return true;
  case V_LIST: *out = v->list.n != 0; return true;
  case V_ERROR: return false;
  default:
    pd_cmp_error(c, loc, "%s cannot be used as a condition here", pd_cmp_vkind_phrase(v));
    return false;
  }
}

static bool values_equal(const value *a, const value *b) {
  if (pd_cmp_is_number(a) && pd_cmp_is_number(b)) return pd_cmp_num(a) == pd_cmp_num(b);
  if (a->k != b->k) return false;
  switch (a->k) {
  case V_NONE: return true;
  case V_STR: return strcmp(a->s, b->s) == 0;
  case V_DTYPE: return a->dtype == b->dtype;
  case V_FUNC: return a->fn.def == b->fn.def;
  case V_BUILTIN: return a->bi == b->bi;
  case V_TENSOR: return a->var == b->var;
  case V_LIST:
    if (a->list.n != b->list.n) return false;
    for (int i = 0; i < a->list.n; i++)
      if (!values_equal(a->list.items[i], b->list.items[i])) return false;
    return true;
  default: return a == b;
  }
}

/* Arithmetic and comparison between compile-time values. */
static value *fold_binary(C *c, pd_ast_op op, value *l, value *r, pd_loc loc) {
  if (op == PD_AST_OP_EQ || op == PD_AST_OP_NE) {
    bool eq = values_equal(l, r);
    return vbool(c, op == PD_AST_OP_EQ ? eq : !eq);
  }
  if (op == PD_AST_OP_ADD && l->k == V_STR && r->k == V_STR)
    return pd_cmp_vstr(c, pd_cmp_fmt(c, "%s%s", l->s, r->s));
  if (op == PD_AST_OP_ADD && l->k == V_LIST && r->k == V_LIST) {
    value *v = pd_cmp_vnew(c, V_LIST);
    if (v == VERR) return v;
    v->list.n = l->list.n + r->list.n;
    v->list.items = pd_cmp_calloc(c, sizeof(value *) * (size_t)(v->list.n ? v->list.n : 1));
    if (!v->list.items) return VERR;
    for (int i = 0; i < l->list.n; i++) v->list.items[i] = l->list.items[i];
    for (int i = 0; i < r->list.n; i++) v->list.items[l->list.n + i] = r->list.items[i];
    return v;
  }
  if (!pd_cmp_is_number(l) || !pd_cmp_is_number(r)) {
    pd_cmp_error(c, loc, "cannot apply '%s' to %s and %s", pd_ast_op_name(op),
                 pd_cmp_vkind_phrase(l), pd_cmp_vkind_phrase(r));
    return VERR;
  }
  bool ints = l->k != V_FLOAT && r->k != V_FLOAT;
  double a = pd_cmp_num(l), b = pd_cmp_num(r);
  int64_t ia = l->k == V_INT ? l->i : (int64_t)a, ib = r->k == V_INT ? r->i : (int64_t)b;
  switch (op) {
  case PD_AST_OP_ADD:
    return ints ? pd_cmp_vint(c, (int64_t)((uint64_t)ia + (uint64_t)ib)) : pd_cmp_vfloat(c, a + b);
  case PD_AST_OP_SUB:
    return ints ? pd_cmp_vint(c, (int64_t)((uint64_t)ia - (uint64_t)ib)) : pd_cmp_vfloat(c, a - b);
  case PD_AST_OP_MUL:
    return ints ? pd_cmp_vint(c, (int64_t)((uint64_t)ia * (uint64_t)ib)) : pd_cmp_vfloat(c, a * b);
  case PD_AST_OP_DIV:
    if (b == 0) {
      pd_cmp_error(c, loc, "division by zero");
      return VERR;
    }
    return pd_cmp_vfloat(c, a / b);
  case PD_AST_OP_MOD:
    if (b == 0) {
      pd_cmp_error(c, loc, "division by zero");
      return VERR;
    }
    if (ints && !(ia == INT64_MIN && ib == -1)) return pd_cmp_vint(c, ((ia % ib) + ib) % ib);
    return pd_cmp_vfloat(c, a - b * floor(a / b));
  case PD_AST_OP_LT: return vbool(c, a < b);
  case PD_AST_OP_LE: return vbool(c, a <= b);
  case PD_AST_OP_GT: return vbool(c, a > b);
  case PD_AST_OP_GE: return vbool(c, a >= b);
  default: break;
  }
  pd_cmp_error(c, loc, "cannot apply '%s' to numbers", pd_ast_op_name(op));
  return VERR;
}

/* A simple op X[,Y] -> Out with optional float attrs. */
static value *simple_op(C *c, const char *type, value *x, value *y, pd_loc loc) {
  pd_op_desc *op = pd_cmp_op_new(c, type, loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, loc) || (y && !pd_cmp_op_in(c, op, "Y", y, loc)))
    return VERR;
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Out", type));
}

static value *scale_op(C *c, value *x, double scale, double bias, pd_loc loc) {
  pd_op_desc *op = pd_cmp_op_new(c, "scale", loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, loc)) return VERR;
  if (pd_op_set_attr_float(op, "scale", (float)scale) ||
      pd_op_set_attr_float(op, "bias", (float)bias)) {
    c->oom = true;
    return VERR;
  }
  return pd_cmp_op_finish(c, op, pd_cmp_op_out(c, op, "Out", "scale"));
}

value *pd_cmp_binary_tensor(C *c, pd_ast_op op, value *l, value *r, pd_loc loc) {
  static const struct { pd_ast_op op; const char *type; } table[] = {
      {PD_AST_OP_ADD, "elementwise_add"}, {PD_AST_OP_SUB, "elementwise_sub"},
      {PD_AST_OP_MUL, "elementwise_mul"}, {PD_AST_OP_DIV, "elementwise_div"},
      {PD_AST_OP_MATMUL, "matmul_v2"},    {PD_AST_OP_EQ, "equal"},
      {PD_AST_OP_NE, "not_equal"},        {PD_AST_OP_LT, "less_than"},
      {PD_AST_OP_LE, "less_equal"},       {PD_AST_OP_GT, "greater_than"},
      {PD_AST_OP_GE, "greater_equal"},    {PD_AST_OP_AND, "logical_and"},
      {PD_AST_OP_OR, "logical_or"},
  };
  /* tensor OP number (for + - * /): one scale op instead of a constant and a broadcast. */
  if (l->k == V_TENSOR && pd_cmp_is_number(r) && r->k != V_BOOL) {
    double k = pd_cmp_num(r);
    switch (op) {
    case PD_AST_OP_ADD: return scale_op(c, l, 1, k, loc);
    case PD_AST_OP_SUB: return scale_op(c, l, 1, -k, loc);
    case PD_AST_OP_MUL: return scale_op(c, l, k, 0, loc);
    case PD_AST_OP_DIV:
      if (k == 0) {
        pd_cmp_error(c, loc, "division by zero");
        return VERR;
      }
      return scale_op(c, l, 1 / k, 0, loc);
    default: break;
    }
  }
  if (r->k == V_TENSOR && pd_cmp_is_number(l) && l->k != V_BOOL) {
    double k = pd_cmp_num(l);
    switch (op) {
    case PD_AST_OP_ADD: return scale_op(c, r, 1, k, loc);
    case PD_AST_OP_SUB: return scale_op(c, r, -1, k, loc);
    case PD_AST_OP_MUL: return scale_op(c, r, k, 0, loc);
    default: break;
    }
  }
  for (size_t i = 0; i < PD_ARRAY_LEN(table); i++) {
    if (table[i].op != op) continue;
    value *t = l->k == V_TENSOR ? l : r;
    if (l->k != V_TENSOR)
      l = pd_cmp_is_number(l) ? pd_cmp_tensor_const(c, pd_cmp_num(l), t->var->dtype, loc) : l;
    if (r->k != V_TENSOR)
      r = pd_cmp_is_number(r) ? pd_cmp_tensor_const(c, pd_cmp_num(r), t->var->dtype, loc) : r;
    if (l->k == V_ERROR || r->k == V_ERROR) return VERR;
    if (l->k != V_TENSOR || r->k != V_TENSOR) {
      pd_cmp_error(c, loc, "cannot apply '%s' to %s and %s", pd_ast_op_name(op),
                   pd_cmp_vkind_phrase(l), pd_cmp_vkind_phrase(r));
      return VERR;
    }
    return simple_op(c, table[i].type, l, r, loc);
  }
  pd_cmp_error(c, loc, "operator '%s' is not defined for tensors", pd_ast_op_name(op));
  return VERR;
}

static value *eval_binary(C *c, const pd_ast_node *e) {
  pd_ast_op op = e->binary.op;
  value *l = eval(c, e->binary.lhs);
  if (l->k == V_ERROR) return VERR;
  /* `and` / `or` on compile-time values short-circuit, as in the staged `if` of a layer. */
  if ((op == PD_AST_OP_AND || op == PD_AST_OP_OR) && l->k != V_TENSOR) {
    bool t;
    if (!truthy(c, l, e->binary.lhs->loc, &t)) return VERR;
    if (op == PD_AST_OP_AND ? !t : t) return vbool(c, t);
    value *r = eval(c, e->binary.rhs);
    if (r->k == V_TENSOR) return pd_cmp_binary_tensor(c, op, l, r, e->loc);
    if (!truthy(c, r, e->binary.rhs->loc, &t)) return VERR;
    return vbool(c, t);
  }
  value *r = eval(c, e->binary.rhs);
  if (r->k == V_ERROR) return VERR;
  if (l->k == V_TENSOR || r->k == V_TENSOR) {
    if (op == PD_AST_OP_MOD) {
      pd_cmp_error(c, e->loc, "operator '%%' is not defined for tensors");
      return VERR;
    }
    if (op == PD_AST_OP_MATMUL && (l->k != V_TENSOR || r->k != V_TENSOR)) {
      pd_cmp_error(c, e->loc, "'@' needs two tensors, got %s and %s", pd_cmp_vkind_phrase(l),
                   pd_cmp_vkind_phrase(r));
      return VERR;
    }
    return pd_cmp_binary_tensor(c, op, l, r, e->loc);
  }
  if (op == PD_AST_OP_MATMUL) {
    pd_cmp_error(c, e->loc, "'@' needs two tensors, got %s and %s", pd_cmp_vkind_phrase(l),
                 pd_cmp_vkind_phrase(r));
    return VERR;
  }
  return fold_binary(c, op, l, r, e->loc);
}

static value *eval_unary(C *c, const pd_ast_node *e) {
  value *v = eval(c, e->unary.operand);
  if (v->k == V_ERROR) return VERR;
  if (e->unary.op == PD_AST_OP_NEG) {
    if (v->k == V_TENSOR) return scale_op(c, v, -1, 0, e->loc);
    if (v->k == V_INT) return pd_cmp_vint(c, (int64_t)(0 - (uint64_t)v->i));
    if (v->k == V_FLOAT) return pd_cmp_vfloat(c, -v->f);
    pd_cmp_error(c, e->loc, "cannot negate %s", pd_cmp_vkind_phrase(v));
    return VERR;
  }
  if (v->k == V_TENSOR) return simple_op(c, "logical_not", v, NULL, e->loc);
  bool t;
  if (!truthy(c, v, e->unary.operand->loc, &t)) return VERR;
  return vbool(c, !t);
}

static value *eval_name(C *c, const pd_ast_node *e) {
  const char *id = e->name.id;
  binding *b = lookup(c->scope, id, NULL);
  if (b) {
    if (b->v->k == V_UNDEF) {
      pd_cmp_error(c, e->loc, "'%s' is not defined on every path here: %s", id, b->v->undef.why);
      return VERR;
    }
    return b->v;
  }
  const builtin *bi = pd_cmp_builtin_lookup(id);
  if (bi) {
    value *v = pd_cmp_vnew(c, V_BUILTIN);
    if (v != VERR) v->bi = bi;
    return v;
  }
  int dt = pd_dtype_from_name(id);
  if (dt >= 0) {
    value *v = pd_cmp_vnew(c, V_DTYPE);
    if (v != VERR) v->dtype = (pd_dtype)dt;
    return v;
  }
  /* A name of a block that has ended (in this file; not a function's own names). */
  for (symtab *t = c->newest_scope; t; t = t->pushed_before) {
    if (t->kind == SC_GLOBAL || t->kind == SC_FUNC) continue;
    symtab *up = c->scope;
    while (up && up != t) up = up->parent;
    binding *lb = up ? NULL : lookup_local(t, id);
    if (!lb || !lb->loc.file || !e->loc.file || strcmp(lb->loc.file, e->loc.file) != 0) continue;
    pd_cmp_error(c, e->loc,
                 "'%s' is not defined here: the '%s' of line %d is local to its block, which "
                 "has ended (to use it after the block, assign it before the block)",
                 id, id, lb->loc.line);
    return VERR;
  }
  pd_cmp_error(c, e->loc, "'%s' is not defined", id);
  return VERR;
}

static value *eval_index(C *c, const pd_ast_node *e) {
  value *obj = eval(c, e->index.object);
  if (obj->k == V_ERROR) return VERR;
  if (obj->k != V_LIST) {
    pd_cmp_error(c, e->loc, "only lists can be indexed at compile time; this is %s",
                 pd_cmp_vkind_phrase(obj));
    return VERR;
  }
  if (e->index.subscripts.len != 1) {
    pd_cmp_error(c, e->loc, "a list takes one subscript");
    return VERR;
  }
  const pd_ast_node *sub = e->index.subscripts.items[0];
  int64_t n = obj->list.n;
  if (sub->kind == PD_AST_SLICE) {
    int64_t lo = 0, hi = n;
    const pd_ast_node *bounds[2] = {sub->slice.lo, sub->slice.hi};
    int64_t *dst[2] = {&lo, &hi};
    for (int k = 0; k < 2; k++) {
      if (!bounds[k]) continue;
      value *bv = eval(c, bounds[k]);
      if (bv->k == V_ERROR) return VERR;
      if (bv->k != V_INT) {
        pd_cmp_error(c, bounds[k]->loc, "a slice bound must be an integer, got %s",
                     pd_cmp_vkind_phrase(bv));
        return VERR;
      }
      int64_t x = bv->i < 0 ? bv->i + n : bv->i;
      *dst[k] = x < 0 ? 0 : x > n ? n : x;
    }
    value *v = pd_cmp_vnew(c, V_LIST);
    if (v == VERR) return v;
    v->list.n = hi > lo ? (int)(hi - lo) : 0;
    v->list.items = pd_cmp_calloc(c, sizeof(value *) * (size_t)(v->list.n ? v->list.n : 1));
    if (!v->list.items) return VERR;
    for (int i = 0; i < v->list.n; i++) v->list.items[i] = obj->list.items[lo + i];
    return v;
  }
  value *iv = eval(c, sub);
  if (iv->k == V_ERROR) return VERR;
  if (iv->k != V_INT) {
    pd_cmp_error(c, sub->loc, "a list index must be an integer, got %s", pd_cmp_vkind_phrase(iv));
    return VERR;
  }
  int64_t i = iv->i < 0 ? iv->i + n : iv->i;
  if (i < 0 || i >= n) {
    pd_cmp_error(c, sub->loc, "index %lld is out of range for a list of %lld items",
                 (long long)iv->i, (long long)n);
    return VERR;
  }
  return obj->list.items[i];
}

static value *eval_attr(C *c, const pd_ast_node *e) {
  value *obj = eval(c, e->attr.object);
  if (obj->k == V_ERROR) return VERR;
  const char *a = e->attr.name;
  if (obj->k == V_TENSOR) {
    pd_var_desc *v = obj->var;
    if (strcmp(a, "shape") == 0) {
      if (v->ndims < 0) {
        pd_cmp_error(c, e->loc, "the shape of '%s' is not known at compile time", v->name);
        return VERR;
      }
      value *l = pd_cmp_vnew(c, V_LIST);
      if (l == VERR) return l;
      l->list.n = v->ndims;
      l->list.items = pd_cmp_calloc(c, sizeof(value *) * (size_t)(v->ndims ? v->ndims : 1));
      if (!l->list.items) return VERR;
      for (int i = 0; i < v->ndims; i++) l->list.items[i] = pd_cmp_vint(c, v->dims[i]);
      return l;
    }
    if (strcmp(a, "ndim") == 0) return pd_cmp_vint(c, v->ndims);
    if (strcmp(a, "dtype") == 0) {
      value *d = pd_cmp_vnew(c, V_DTYPE);
      if (d != VERR) d->dtype = v->dtype;
      return d;
    }
    if (strcmp(a, "lod_level") == 0) return pd_cmp_vint(c, v->lod_level);
    if (strcmp(a, "name") == 0) return pd_cmp_vstr(c, v->name);
    pd_cmp_error(c, e->loc,
                 "a tensor has no attribute '%s' (it has shape, ndim, dtype, lod_level, name)", a);
    return VERR;
  }
  if (obj->k == V_LIST && strcmp(a, "len") == 0) return pd_cmp_vint(c, obj->list.n);
  if (obj->k == V_RECORD) {
    for (int i = 0; i < obj->rec.n; i++)
      if (obj->rec.keys[i] && strcmp(obj->rec.keys[i], a) == 0) return obj->rec.vals[i];
  }
  pd_cmp_error(c, e->loc, "%s has no attribute '%s'", pd_cmp_vkind_phrase(obj), a);
  return VERR;
}

/* Inline a `def`: bind parameters in a fresh scope whose parent is the defining scope, run the
 * body in the current block, and return what it returned. */
static value *call_def(C *c, value *fnv, call_args *a) {
  const pd_ast_node *def = fnv->fn.def;
  const char *fname = def->def.name->name.id;
  for (inline_call *k = c->call; k; k = k->outer) {
    if (k->def == def) {
      pd_cmp_error(c, a->loc,
                   "'%s' calls itself: functions are inlined when the program is built, so "
                   "recursion would never end",
                   fname);
      return VERR;
    }
  }
  if (c->call_depth >= 200) {
    pd_cmp_error(c, a->loc, "function calls nested too deeply (limit 200)");
    return VERR;
  }
  size_t np = def->def.params.len;
  if ((size_t)a->npos > np) {
    pd_cmp_error(c, a->loc, "'%s' takes %zu argument%s, got %d", fname, np, np == 1 ? "" : "s",
                 a->npos);
    return VERR;
  }
  value **vals = pd_cmp_calloc(c, sizeof *vals * (np ? np : 1));
  if (!vals) return VERR;
  for (int i = 0; i < a->npos; i++) vals[i] = a->pos[i];
  for (int k = 0; k < a->nkw; k++) {
    size_t i = 0;
    while (i < np && strcmp(def->def.params.items[i]->binding.name, a->kw[k]) != 0) i++;
    if (i == np) {
      pd_cmp_error(c, a->kw_loc[k], "'%s' has no parameter '%s'", fname, a->kw[k]);
      return VERR;
    }
    if (vals[i]) {
      pd_cmp_error(c, a->kw_loc[k], "argument '%s' of '%s' given twice", a->kw[k], fname);
      return VERR;
    }
    vals[i] = a->kwv[k];
  }
  symtab *saved_scope = c->scope;
  symtab *fs = scope_push(c, SC_FUNC, fnv->fn.env);
  if (!fs) return VERR;
  /* Defaults are evaluated in the defining scope, left to right, seeing earlier parameters. */
  for (size_t i = 0; i < np; i++) {
    const pd_ast_node *p = def->def.params.items[i];
    if (!vals[i]) {
      if (!p->binding.value) {
        c->scope = saved_scope;
        pd_cmp_error(c, a->loc, "'%s' needs argument '%s'", fname, p->binding.name);
        return VERR;
      }
      vals[i] = eval(c, p->binding.value);
    }
    bind_local(c, fs, p->binding.name, vals[i], p->loc);
  }
  inline_call call = {.def = def, .site = a->loc, .outer = c->call};
  int64_t *cnt = sm_slot(c, c->counters, pd_cmp_fmt(c, "@call.%s", fname), true);
  call.prefix = cnt ? pd_cmp_fmt(c, "%s_%lld", fname, (long long)(*cnt)++) : fname;
  fs->call = &call;
  c->call = &call;
  c->call_depth++;
  compile_block(c, def->def.body);
  c->call_depth--;
  c->call = call.outer;
  c->scope = saved_scope;
  return call.ret ? call.ret : VNONE;
}

value *pd_cmp_call_value(C *c, value *fn, call_args *a) {
  if (fn->k == V_BUILTIN) return fn->bi->fn(c, fn->bi, a);
  if (fn->k == V_FUNC) return call_def(c, fn, a);
  if (fn->k != V_ERROR) pd_cmp_error(c, a->loc, "%s is not a function", pd_cmp_vkind_phrase(fn));
  return VERR;
}

/* Where an expression's text begins: its leftmost operand's position. */
static pd_loc leftmost_loc(const pd_ast_node *e) {
  for (;;) {
    switch (e->kind) {
      case PD_AST_BINARY: e = e->binary.lhs; break;
      case PD_AST_CALL: e = e->call.callee; break;
      case PD_AST_INDEX: e = e->index.object; break;
      case PD_AST_ATTR: e = e->attr.object; break;
      default: return e->loc;
    }
  }
}

static value *eval_call(C *c, const pd_ast_node *e) {
  const pd_ast_node *callee = e->call.callee;
  value *fn = eval(c, callee);
  if (fn->k == V_ERROR) return VERR;
  size_t n = e->call.args.len;
  call_args a = {.loc = callee->loc};
  a.fname = fn->k == V_BUILTIN ? fn->bi->name
          : fn->k == V_FUNC    ? fn->fn.def->def.name->name.id
                               : "function";
  a.pos = pd_cmp_calloc(c, sizeof *a.pos * (n ? n : 1));
  a.pos_loc = pd_cmp_calloc(c, sizeof *a.pos_loc * (n ? n : 1));
  a.pos_start = pd_cmp_calloc(c, sizeof *a.pos_start * (n ? n : 1));
  a.kw = pd_cmp_calloc(c, sizeof *a.kw * (n ? n : 1));
  a.kwv = pd_cmp_calloc(c, sizeof *a.kwv * (n ? n : 1));
  a.kw_loc = pd_cmp_calloc(c, sizeof *a.kw_loc * (n ? n : 1));
  if (c->oom) return VERR;
  bool bad = false;
  for (size_t i = 0; i < n; i++) {
    const pd_ast_node *arg = e->call.args.items[i];
    if (arg->kind == PD_AST_KWARG) {
      for (int k = 0; k < a.nkw; k++)
        if (strcmp(a.kw[k], arg->binding.name) == 0) {
          pd_cmp_error(c, arg->loc, "keyword argument '%s' given twice", arg->binding.name);
          bad = true;
        }
      a.kw[a.nkw] = arg->binding.name;
      a.kw_loc[a.nkw] = arg->loc;
      a.kwv[a.nkw] = eval(c, arg->binding.value);
      bad |= a.kwv[a.nkw]->k == V_ERROR;
      a.nkw++;
    } else {
      a.pos_loc[a.npos] = arg->loc;
      a.pos_start[a.npos] = leftmost_loc(arg);
      a.pos[a.npos] = eval(c, arg);
      bad |= a.pos[a.npos]->k == V_ERROR;
      a.npos++;
    }
  }
  if (bad) return VERR;
  return pd_cmp_call_value(c, fn, &a);
}

static value *eval(C *c, const pd_ast_node *e) {
  if (c->oom) return VERR;
  switch (e->kind) {
  case PD_AST_INT: return pd_cmp_vint(c, e->int_value);
  case PD_AST_FLOAT: return pd_cmp_vfloat(c, e->float_value);
  case PD_AST_BOOL: return vbool(c, e->bool_value);
  case PD_AST_NONE: return VNONE;
  case PD_AST_STRING: {
    if (memchr(e->str.data, '\0', e->str.len)) {
      pd_cmp_error(c, e->loc, "strings with NUL bytes cannot be used here");
      return VERR;
    }
    return pd_cmp_vstr(c, e->str.data);
  }
  case PD_AST_NAME: return eval_name(c, e);
  case PD_AST_LIST: {
    value *v = pd_cmp_vnew(c, V_LIST);
    if (v == VERR) return v;
    v->list.n = (int)e->list.items.len;
    v->list.items = pd_cmp_calloc(c, sizeof(value *) * (e->list.items.len ? e->list.items.len : 1));
    if (!v->list.items) return VERR;
    for (size_t i = 0; i < e->list.items.len; i++) {
      v->list.items[i] = eval(c, e->list.items.items[i]);
      if (v->list.items[i]->k == V_ERROR) return VERR;
    }
    return v;
  }
  case PD_AST_UNARY: return eval_unary(c, e);
  case PD_AST_BINARY: return eval_binary(c, e);
  case PD_AST_CALL: return eval_call(c, e);
  case PD_AST_INDEX: return eval_index(c, e);
  case PD_AST_ATTR: return eval_attr(c, e);
  default:
    pd_cmp_error(c, e->loc, "%s is not an expression", pd_ast_kind_phrase(e->kind));
    return VERR;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Control flow.                                                                               */

/* Names a block's statements assign at its own level (not in nested blocks), for deciding which
 * names every branch of an if defines. */
static bool block_assigns(const pd_ast_node *block, const char *name) {
  if (!block) return false;
  for (size_t i = 0; i < block->block.stmts.len; i++) {
    const pd_ast_node *s = block->block.stmts.items[i];
    if (s->kind == PD_AST_ASSIGN)
      for (size_t k = 0; k < s->assign.targets.len; k++)
        if (strcmp(s->assign.targets.items[k]->name.id, name) == 0) return true;
    if (s->kind == PD_AST_IF) { /* a nested if defines it if all of its branches do */
      bool all = s->if_.else_block != NULL;
      for (size_t k = 0; all && k < s->if_.branches.len; k++)
        all = block_assigns(s->if_.branches.items[k]->branch.body, name);
      if (all && block_assigns(s->if_.else_block, name)) return true;
    }
  }
  return false;
}

/* Open a construct's sub-block and its scope. */
static cflow *cf_open(C *c, cf_kind kind, scope_kind sk) {
  cflow *f = pd_cmp_calloc(c, sizeof *f);
  if (!f) return NULL;
  f->kind = kind;
  f->parent_block = c->block;
  f->block = pd_program_add_block(c->unit->main, c->block->idx);
  if (!f->block) {
    c->oom = true;
    return NULL;
  }
  f->outer = c->cf;
  symtab *s = scope_push(c, sk, c->scope);
  if (!s) return NULL;
  s->cf = f;
  c->cf = f;
  c->block = f->block;
  return f;
}

static void cf_close(C *c, cflow *f, symtab *saved) {
  c->cf = f->outer;
  c->block = f->parent_block;
  c->scope = saved;
}

static const char **read_names(C *c, cflow *f, int *n) {
  const char **names = pd_cmp_calloc(c, sizeof *names * (size_t)(f->nreads ? f->nreads : 1));
  if (!names) return NULL;
  for (int i = 0; i < f->nreads; i++) names[i] = f->reads[i].inner->name;
  *n = f->nreads;
  return names;
}

/* One branch of a tensor if: lower its statements into a sub-block, then copy the branch's value
 * of every output name into out_vars[i] (vars of the enclosing block). */
typedef struct if_out {
  const char *name;
  pd_var_desc *part[2];   /* per branch (rows: each half; scalar: both the same var) */
  value *vals[2];         /* the branch's value of the name */
  pd_loc loc;
} if_out;

static bool compile_if_chain(C *c, const pd_ast_node *ifn, size_t from);

/* Run a branch's statements (or, for the else of an `else if`, the rest of the chain). */
static void compile_branch_body(C *c, const pd_ast_node *ifn, size_t idx) {
  if (idx < ifn->if_.branches.len) compile_block(c, ifn->if_.branches.items[idx]->branch.body);
  else if (idx == ifn->if_.branches.len && ifn->if_.else_block)
    compile_block(c, ifn->if_.else_block);
  else if (idx > ifn->if_.branches.len) compile_if_chain(c, ifn, idx - ifn->if_.branches.len);
}

/* Does the arm `idx` (branch index, or len for else) assign name at its own level? */
static bool arm_assigns(const pd_ast_node *ifn, size_t idx, const char *name) {
  size_t nb = ifn->if_.branches.len;
  if (idx < nb) return block_assigns(ifn->if_.branches.items[idx]->branch.body, name);
  if (idx == nb) return block_assigns(ifn->if_.else_block, name);
  /* the rest of an else-if chain starting at branch idx - nb */
  for (size_t k = idx - nb; k < nb; k++)
    if (!block_assigns(ifn->if_.branches.items[k]->branch.body, name)) return false;
  return block_assigns(ifn->if_.else_block, name);
}

static bool lower_tensor_if(C *c, const pd_ast_node *ifn, size_t from, value *cond) {
  const pd_ast_node *br = ifn->if_.branches.items[from];
  pd_var_desc *cv = cond->var;
  pd_loc loc = br->loc;
  int64_t numel = 1;
  bool known = cv->ndims >= 0;
  for (int i = 0; known && i < cv->ndims; i++) {
    if (cv->dims[i] < 0) known = false;
    else numel *= cv->dims[i];
  }
  bool rows = cv->ndims >= 1 && cv->ndims <= 2 && (cv->ndims == 1 || cv->dims[1] == 1) &&
              (cv->dims[0] == -1 || cv->dims[0] > 1);
  if (cv->dtype != PD_BOOL || (!rows && !(known && numel == 1))) {
    pd_cmp_error(
        c, br->branch.cond->loc,
        "the condition of an if must be a bool tensor with one element or of shape [batch, 1], "
        "got %s %s",
        pd_dtype_name(cv->dtype), pd_cmp_dims_str(c, cv));
    return false;
  }
  size_t nb = ifn->if_.branches.len;
  /* The false arm: the else block, the rest of an else-if chain, or nothing. */
  size_t false_arm = from + 1 < nb ? nb + from + 1 : nb;
  bool has_false = from + 1 < nb || ifn->if_.else_block;
  rows_split *rs = NULL;
  if (rows) {
    rs = pd_cmp_calloc(c, sizeof *rs);
    if (!rs) return false;
    rs->cond = cv;
    rs->at = c->block;
    rs->loc = br->branch.cond->loc;
  }
  pd_var_desc *not_cond = NULL;
  symtab *saved = c->scope;
  symtab *arm_scope[2] = {NULL, NULL};
  cflow *arm_cf[2] = {NULL, NULL};
  for (int side = 0; side < 2; side++) {
    cflow *f = cf_open(c, rows ? CF_ROWS : CF_SCALAR, SC_BRANCH);
    if (!f) return false;
    f->side = side;
    f->rows = rs;
    f->cond = cv;
    arm_cf[side] = f;
    arm_scope[side] = c->scope;
    if (side == 0) compile_block(c, br->branch.body);
    else if (has_false) compile_branch_body(c, ifn, false_arm);
    cf_close(c, f, saved);
  }
  if (!rows) {
    value *nc = simple_op(c, "logical_not", cond, NULL, loc);
    if (nc->k != V_TENSOR) return false;
    not_cond = nc->var;
  }
  /* Outputs: outer names written in either arm, and new names assigned in both. */
  if_out *outs = NULL;
  int nouts = 0, capouts = 0;
  for (int side = 0; side < 2; side++) {
    symtab *s = arm_scope[side];
    if (!s) continue;
    for (int pass = 0; pass < 2; pass++) {
      const char **names = pass ? s->news : s->writes;
      int n = pass ? s->nnews : s->nwrites;
      for (int i = 0; i < n; i++) {
        const char *name = names[i];
        int j = 0;
        while (j < nouts && strcmp(outs[j].name, name) != 0) j++;
        if (j < nouts) continue;
        bool outer = lookup(saved, name, NULL) != NULL;
        if (!outer) {
          /* New in this arm: an output only when every arm defines it. */
          bool every =
              arm_assigns(ifn, from, name) && has_false && arm_assigns(ifn, false_arm, name);
          binding *b = lookup_local(s, name);
          if (!every) {
            value *u = pd_cmp_vnew(c, V_UNDEF);
            if (u == VERR) return false;
            u->undef.loc = b ? b->loc : loc;
            u->undef.why =
                pd_cmp_fmt(c,
                           "it is assigned at %d:%d in only one branch of the if at %d:%d "
                           "(assign it in every branch, or before the if)",
                           u->undef.loc.line, u->undef.loc.col, ifn->loc.line, ifn->loc.col);
            bind_local(c, saved, name, u, u->undef.loc);
            continue;
          }
        }
        if (nouts == capouts) {
          capouts = capouts ? capouts * 2 : 8;
          if_out *no = pd_cmp_calloc(c, sizeof *no * (size_t)capouts);
          if (!no) return false;
          if (nouts) memcpy(no, outs, sizeof *no * (size_t)nouts);
          outs = no;
        }
        memset(&outs[nouts], 0, sizeof outs[nouts]);
        outs[nouts].name = name;
        binding *b = lookup_local(s, name);
        outs[nouts].loc = b ? b->loc : loc;
        nouts++;
      }
    }
  }
  /* Each arm copies its value of each output into a var of the enclosing block. */
  for (int j = 0; j < nouts; j++) {
    pd_var_desc *shared = NULL;
    for (int side = 0; side < 2; side++) {
      value *v = NULL;
      if (arm_scope[side]) {
        binding *b = lookup_local(arm_scope[side], outs[j].name);
        if (b) v = b->v;
      }
      if (!v) {
        binding *ob = lookup(saved, outs[j].name, NULL);
        v = ob ? ob->v : VERR;
      }
      outs[j].vals[side] = v;
      if (v->k == V_ERROR) return false;
      if (v->k != V_TENSOR) {
        pd_cmp_error(c, outs[j].loc,
                     "'%s' is assigned in a branch of a tensor if, so it must be a tensor "
                     "(got %s)",
                     outs[j].name, pd_cmp_vkind_phrase(v));
        return false;
      }
      if (!arm_cf[side]) continue;
      /* assign inside the arm's block */
      cflow *f = arm_cf[side];
      pd_block *saved_block = c->block;
      cflow *saved_cf = c->cf;
      c->block = f->block;
      c->cf = f;
      pd_var_desc *dst = shared;
      if (!dst) {
        const char *hint = rows ? pd_cmp_fmt(c, "%s.%s", outs[j].name, side ? "false" : "true")
                                : pd_cmp_fmt(c, "%s.cond", outs[j].name);
        dst = pd_cmp_var_new(c, f->parent_block, hint, true);
      }
      if (!rows) shared = dst;
      pd_op_desc *op = pd_cmp_op_new(c, "assign", outs[j].loc);
      bool okk = dst && op && pd_cmp_op_in(c, op, "X", v, outs[j].loc);
      if (okk) {
        const char *dn = dst->name;
        if (pd_op_set_output(op, "Out", 1, &dn)) c->oom = true;
        else okk = pd_cmp_op_finish(c, op, dst)->k == V_TENSOR;
      }
      c->block = saved_block;
      c->cf = saved_cf;
      if (!okk) return false;
      outs[j].part[side] = dst;
    }
  }
  /* The conditional_block ops, then (per row) the merges. */
  for (int side = 0; side < 2; side++) {
    cflow *f = arm_cf[side];
    if (!f) continue;
    pd_op_desc *op = pd_cmp_op_new(c, "conditional_block", loc);
    if (!op) return false;
    int nin;
    const char **ins = read_names(c, f, &nin);
    const char **outn = pd_cmp_calloc(c, sizeof *outn * (size_t)(nouts ? nouts : 1));
    pd_var_desc *scope = pd_cmp_var_new(c, c->block, "cond_block.scope", false);
    if (!ins || !outn || !scope) return false;
    scope->type = PD_VAR_STEP_SCOPES;
    for (int j = 0; j < nouts; j++) outn[j] = outs[j].part[side]->name;
    const char *cn = (side == 1 && !rows) ? not_cond->name : cv->name;
    const char *sn = scope->name;
    if (pd_op_set_input(op, "Cond", 1, &cn) || pd_op_set_input(op, "Input", nin, ins) ||
        pd_op_set_output(op, "Out", nouts, outn) || pd_op_set_output(op, "Scope", 1, &sn) ||
        pd_op_set_attr_block(op, "sub_block", f->block->idx) ||
        pd_op_set_attr_bool(op, "is_scalar_condition", !rows)) {
      c->oom = true;
      return false;
    }
    if (pd_cmp_op_finish(c, op, scope)->k == V_ERROR) return false;
  }
  for (int j = 0; j < nouts; j++) {
    value *result;
    if (rows) {
      pd_var_desc *t = outs[j].part[0], *f = outs[j].part[1];
      if (t->ndims >= 0 && f->ndims >= 0) {
        bool same = t->ndims == f->ndims && t->dtype == f->dtype;
        for (int d = 1; same && d < t->ndims; d++)
          same = t->dims[d] == f->dims[d] || t->dims[d] < 0 || f->dims[d] < 0;
        if (!same) {
          pd_cmp_error(c, outs[j].loc,
                       "'%s' is %s %s in the true branch but %s %s in the false branch",
                       outs[j].name, pd_dtype_name(t->dtype), pd_cmp_dims_str(c, t),
                       pd_dtype_name(f->dtype), pd_cmp_dims_str(c, f));
          return false;
        }
      }
      pd_op_desc *op = pd_cmp_op_new(c, "merge_lod_tensor", loc);
      pd_var_desc *out = op ? pd_cmp_op_out(c, op, "Out", outs[j].name) : NULL;
      if (!out) return false;
      const char *x = cv->name, *tn = t->name, *fn = f->name;
      if (pd_op_set_input(op, "X", 1, &x) || pd_op_set_input(op, "Mask", 1, &x) ||
          pd_op_set_input(op, "InTrue", 1, &tn) || pd_op_set_input(op, "InFalse", 1, &fn)) {
        c->oom = true;
        return false;
      }
      result = pd_cmp_op_finish(c, op, out);
    } else {
      result = pd_cmp_vtensor(c, outs[j].part[0]);
    }
    if (result->k != V_TENSOR) return false;
    assign_name(c, outs[j].name, result, outs[j].loc, false);
  }
  return true;
}

/* The arm of a compile-time if: statements in a plain scope (same block); afterwards its new
 * names are defined outside only when every arm of the if assigns them. */
static void compile_staged_arm(C *c, const pd_ast_node *ifn, size_t arm, size_t nb, bool has_else) {
  symtab *saved = c->scope;
  symtab *s = scope_push(c, SC_PLAIN, saved);
  if (!s) return;
  compile_branch_body(c, ifn, arm);
  c->scope = saved;
  for (int i = 0; i < s->nnews; i++) {
    const char *name = s->news[i];
    binding *b = lookup_local(s, name);
    bool every = has_else;
    for (size_t k = 0; every && k < nb; k++)
      every = block_assigns(ifn->if_.branches.items[k]->branch.body, name);
    if (every) every = block_assigns(ifn->if_.else_block, name);
    if (every) {
      assign_name(c, name, b->v, b->loc, false);
    } else {
      value *u = pd_cmp_vnew(c, V_UNDEF);
      if (u == VERR) return;
      u->undef.loc = b->loc;
      u->undef.why = pd_cmp_fmt(c, "it is assigned at %d:%d in only one branch of the if at %d:%d "
                              "(assign it in every branch, or before the if)",
                                b->loc.line, b->loc.col, ifn->loc.line, ifn->loc.col);
      if (!lookup(saved, name, NULL)) bind_local(c, saved, name, u, b->loc);
    }
  }
}

static bool compile_if_chain(C *c, const pd_ast_node *ifn, size_t from) {
  size_t nb = ifn->if_.branches.len;
  for (size_t i = from; i < nb; i++) {
    const pd_ast_node *br = ifn->if_.branches.items[i];
    value *cond = eval(c, br->branch.cond);
    if (cond->k == V_ERROR) return false;
    if (cond->k == V_TENSOR) return lower_tensor_if(c, ifn, i, cond);
    bool t;
    if (!truthy(c, cond, br->branch.cond->loc, &t)) return false;
    if (t) {
      compile_staged_arm(c, ifn, i, nb, ifn->if_.else_block != NULL);
      return false;
    }
  }
  if (ifn->if_.else_block) compile_staged_arm(c, ifn, nb, nb, true);
  return true;
}

/* Outer names a loop body assigns (at any depth, but not inside a def): its memories. */
static void collect_assigned(C *c, const pd_ast_node *n, const char ***out, int *cnt, int *cap) {
  if (n->kind == PD_AST_DEF) return;
  if (n->kind == PD_AST_ASSIGN)
    for (size_t k = 0; k < n->assign.targets.len; k++)
      push_name(c, out, cnt, cap, n->assign.targets.items[k]->name.id);
  size_t nc = pd_ast_child_count(n);
  for (size_t i = 0; i < nc; i++) {
    pd_ast_node *ch = pd_ast_child_at(n, i).node;
    if (pd_ast_is_stmt(ch->kind) || ch->kind == PD_AST_BRANCH)
      collect_assigned(c, ch, out, cnt, cap);
  }
}

/* The per-step shape of a memory whose initial value has shape init: a value shared by every
 * sequence ([1], [H]) gets a leading batch dim; a per-sequence value ([-1, H]) keeps its own. */
static int memory_dims(const pd_var_desc *init, int64_t *dims) {
  if (init->ndims >= 1 && init->dims[0] == -1) {
    memcpy(dims, init->dims, sizeof *dims * (size_t)init->ndims);
    return init->ndims;
  }
  dims[0] = -1;
  for (int i = 0; i < init->ndims && i + 1 < PD_MAX_RANK; i++) dims[i + 1] = init->dims[i];
  return init->ndims + 1 > PD_MAX_RANK ? PD_MAX_RANK : init->ndims + 1;
}

typedef struct loop_mem {
  const char *name;
  value *init;             /* the outer value before the loop */
  pd_var_desc *pre;        /* for: the previous step's value inside the step block */
  pd_loc loc;
} loop_mem;

/* The index of `name` among names[0..n), or -1. */
static int out_index(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

static bool compile_for(C *c, const pd_ast_node *s) {
  value *seq = eval(c, s->for_.iter);
  if (seq->k == V_ERROR) return false;
  if (seq->k != V_TENSOR || seq->var->lod_level < 1) {
    pd_buf b;
    pd_buf_init(&b);
    pd_cmp_describe(c, seq, &b);
    /* The step input of an enclosing for over a one-level batch: say how to nest loops. */
    const cflow *outer = NULL;
    for (const symtab *t = c->scope; t && !outer && seq->k == V_TENSOR; t = t->parent)
      if (t->kind == SC_LOOP && t->cf && t->cf->kind == CF_FOR && t->cf->step == seq->var)
        outer = t->cf;
    pd_cmp_error(
        c, s->for_.iter->loc,
        "for (t in x) needs x to be a batch of sequences (a tensor with "
        "LoD), got %s%s",
        b.data ? b.data : "?",
        outer ? "; a step of a loop over sequences is one element of each: to loop inside the "
                "loop, loop over sequences of sequences (lod_level = 2)"
              : "");
    pd_buf_free(&b);
    return false;
  }
  pd_var_desc *xv = seq->var;
  /* The recurrent op slices its input into each step scope under the input's own name (Fluid's
   * convention), so the loop steps over a copy with a name of its own: the body may still name
   * the whole sequence. */
  pd_op_desc *src_op = pd_cmp_op_new(c, "assign", s->for_.iter->loc);
  if (!src_op || !pd_cmp_op_in(c, src_op, "X", seq, s->for_.iter->loc)) return false;
  value *src = pd_cmp_op_finish(c, src_op, pd_cmp_op_out(c, src_op, "Out", s->for_.var->name.id));
  if (src->k != V_TENSOR) return false;
  symtab *saved = c->scope;
  /* Memories: names assigned in the body that are defined outside. */
  const char **names = NULL;
  int nnames = 0, capnames = 0;
  collect_assigned(c, s->for_.body, &names, &nnames, &capnames);
  loop_mem *mems = pd_cmp_calloc(c, sizeof *mems * (size_t)(nnames ? nnames : 1));
  int nmems = 0;
  if (!mems) return false;
  for (int i = 0; i < nnames; i++) {
    binding *b = lookup(saved, names[i], NULL);
    if (!b || b->v->k == V_UNDEF) continue;
    if (b->v->k != V_TENSOR) {
      pd_cmp_error(c, s->loc, "'%s' is written in the loop, so it is a memory and must be a tensor "
                      "(it is %s)", names[i], pd_cmp_vkind_phrase(b->v));
      return false;
    }
    mems[nmems].name = names[i];
    mems[nmems].init = b->v;
    mems[nmems].loc = b->loc;
    nmems++;
  }
  cflow *f = cf_open(c, CF_FOR, SC_LOOP);
  if (!f) return false;
  symtab *ls = c->scope;
  /* The step input t: one element of each sequence. */
  pd_var_desc *t = pd_block_var(f->block, src->var->name);
  if (!t) {
    c->oom = true;
    return false;
  }
  t->dtype = xv->dtype;
  if (xv->ndims >= 1 && pd_var_set_shape(t, xv->ndims, xv->dims)) c->oom = true;
  if (t->ndims >= 1) t->dims[0] = -1;
  /* Over sequences of sequences (lod_level 2) a step is a batch of sequences: loop over it. */
  t->lod_level = xv->lod_level > 1 ? xv->lod_level - 1 : 0;
  f->step = t;
  bind_local(c, ls, s->for_.var->name.id, pd_cmp_vtensor(c, t), s->for_.var->loc);
  for (int i = 0; i < nmems; i++) {
    pd_var_desc *init = mems[i].init->var;
    pd_var_desc *pre = pd_cmp_var_new(c, f->block, pd_cmp_fmt(c, "%s.pre", mems[i].name), true);
    if (!pre) return false;
    pre->dtype = init->dtype;
    int64_t dims[PD_MAX_RANK];
    int nd = init->ndims >= 0 ? memory_dims(init, dims) : -1;
    if (nd >= 0 && pd_var_set_shape(pre, nd, dims)) c->oom = true;
    mems[i].pre = pre;
    /* The memory is read as the previous step's value; writes shadow it in the loop scope. */
    bind_local(c, ls, mems[i].name, pd_cmp_vtensor(c, pre), mems[i].loc);
  }
  /* The body. `emit` statements record their outputs on the loop scope (news list, below). */
  compile_block(c, s->for_.body);
  /* Outputs: emitted sequences (bound by `emit` as "@emit.NAME" in the loop scope), then each
   * memory's per-step values, stacked too: its last step is the final state. */
  const char **outs = NULL, **states = NULL, **exstates = NULL;
  int nouts = 0, capouts = 0;
  pd_var_desc **out_inner = NULL;
  size_t capinner = 0;
  const char **emitted = NULL;
  int nemitted = 0, *emit_at = NULL; /* emitted[i] is the stacked output outs[emit_at[i]] */
  for (binding *b = ls->first; b; b = b->next) {
    if (strncmp(b->name, "@emit.", 6) != 0) continue;
    pd_var_desc *ev = b->v->var;
    /* A stacked output is a var of the enclosing block under its own name, so one must not be
     * the step input (whose name is the loop's input's): `emit o = t` stacks a copy. */
    if (ev == t) {
      value *cp = simple_op(c, "assign", b->v, NULL, b->loc);
      if (cp->k != V_TENSOR) break;
      ev = cp->var;
    }
    int at = out_index(outs, nouts, ev->name); /* the same value emitted twice: stacked once */
    if (at < 0) {
      if (PD_GROW(out_inner, capinner, (size_t)nouts + 1)) { c->oom = true; break; }
      push_name(c, &outs, &nouts, &capouts, ev->name);
      out_inner[nouts - 1] = ev;
      at = nouts - 1;
    }
    const char **ne = pd_cmp_calloc(c, sizeof *ne * (size_t)(nemitted + 1));
    int *na = pd_cmp_calloc(c, sizeof *na * (size_t)(nemitted + 1));
    if (!ne || !na) break;
    if (nemitted) {
      memcpy(ne, emitted, sizeof *ne * (size_t)nemitted);
      memcpy(na, emit_at, sizeof *na * (size_t)nemitted);
    }
    ne[nemitted] = b->name + 6;
    na[nemitted++] = at;
    emitted = ne;
    emit_at = na;
  }
  int nemit = nouts;
  int *state_at = pd_cmp_calloc(c, sizeof *state_at * (size_t)(nmems ? nmems : 1));
  states = pd_cmp_calloc(c, sizeof *states * (size_t)(nmems ? nmems : 1));
  exstates = pd_cmp_calloc(c, sizeof *exstates * (size_t)(nmems ? nmems : 1));
  if (!states || !exstates || !state_at || c->oom) {
    pd_free(out_inner);
    cf_close(c, f, saved);
    return false;
  }
  bool ok = true;
  for (int i = 0; i < nmems && ok; i++) {
    binding *b = lookup_local(ls, mems[i].name);
    value *v = b->v;
    if (v->k != V_TENSOR) {
      ok = false;
      if (v->k != V_ERROR)
        pd_cmp_error(c, b->loc, "memory '%s' must stay a tensor in the loop (it is %s)",
                     mems[i].name, pd_cmp_vkind_phrase(v));
      break;
    }
    pd_var_desc *pre = mems[i].pre, *nv = v->var;
    if (nv == pre) { /* never written: keep the memory as it was */
      states[i] = pre->name;
    } else {
      if (pre->ndims >= 0 && nv->ndims >= 0) {
        bool same = pre->ndims == nv->ndims;
        for (int d = 1; same && d < nv->ndims; d++)
          same = pre->dims[d] == nv->dims[d] || pre->dims[d] < 0 || nv->dims[d] < 0;
        if (!same) {
          pd_cmp_error(c, b->loc, "memory '%s' changes shape in the loop: %s before, %s after",
                       mems[i].name, pd_cmp_dims_str(c, pre), pd_cmp_dims_str(c, nv));
          ok = false;
          break;
        }
      }
      /* The new state must be a var of the step block (an outer var is copied in), and not the
       * step input (`prev = t`): the states are stacked as outputs (below), which the step
       * input cannot be. A value also emitted is stacked once, unless the two stackings
       * differ (an emitted batch of sequences in a loop over sequences of sequences is stacked
       * per sequence, a state by rows). */
      int at = out_index(outs, nemit, nv->name);
      if (!pd_block_find_var_local(f->block, nv->name) || nv == t ||
          (at >= 0 && xv->lod_level > 1 && nv->lod_level > 0)) {
        value *cp = simple_op(c, "assign", v, NULL, b->loc);
        if (cp->k != V_TENSOR) { ok = false; break; }
        nv = cp->var;
      }
      states[i] = nv->name;
    }
    exstates[i] = pre->name;
    /* Stack the states too: the final value of the memory is the last step of each sequence. */
    pd_var_desc *st = pd_block_find_var_local(f->block, states[i]);
    state_at[i] = out_index(outs, nouts, states[i]);
    if (state_at[i] >= 0 && state_at[i] < nemit) continue;  /* emitted too: stacked once */
    if (PD_GROW(out_inner, capinner, (size_t)nouts + 1)) { c->oom = true; ok = false; break; }
    push_name(c, &outs, &nouts, &capouts, st ? st->name : states[i]);
    out_inner[nouts - 1] = st;
    state_at[i] = nouts - 1;
  }
  cf_close(c, f, saved);
  if (!ok || c->oom) {
    pd_free(out_inner);
    return false;
  }
  /* The sequences the loop produces, in the enclosing block (same names as inside). */
  pd_var_desc **seqs = pd_cmp_calloc(c, sizeof *seqs * (size_t)(nouts ? nouts : 1));
  const char **seq_names = pd_cmp_calloc(c, sizeof *seq_names * (size_t)(nouts ? nouts : 1));
  if (!seqs || !seq_names) { pd_free(out_inner); return false; }
  for (int i = 0; i < nouts; i++) {
    pd_var_desc *in = out_inner[i];
    pd_var_desc *o = in ? pd_block_var(c->block, in->name) : NULL;
    if (!o) { c->oom = true; pd_free(out_inner); return false; }
    o->dtype = in->dtype;
    /* x's top level; below it, over sequences of sequences, the levels of an emitted value that
     * is itself a batch of sequences (one per running sequence: an inner loop's emits). */
    o->lod_level = xv->lod_level;
    if (xv->lod_level > 1) o->lod_level = i < nemit && in->lod_level > 0 ? 1 + in->lod_level : 1;
    if (in->ndims >= 0 && pd_var_set_shape(o, in->ndims, in->dims)) c->oom = true;
    seqs[i] = o;
    seq_names[i] = o->name;
  }
  pd_free(out_inner);
  pd_op_desc *op = pd_cmp_op_new(c, "recurrent", s->loc);
  pd_var_desc *scopes = pd_cmp_var_new(c, c->block, "rnn.step_scopes", false);
  if (!op || !scopes) return false;
  scopes->type = PD_VAR_STEP_SCOPES;
  int nparams;
  const char **params = read_names(c, f, &nparams);
  const char *sn = scopes->name;
  value **initv = pd_cmp_calloc(c, sizeof *initv * (size_t)(nmems ? nmems : 1));
  if (!params || !initv) return false;
  for (int i = 0; i < nmems; i++) initv[i] = mems[i].init;
  /* The sequence and the initial states are read in the enclosing block. */
  if (!pd_cmp_op_in(c, op, "inputs", src, s->for_.iter->loc) ||
      !pd_cmp_op_in_list(c, op, "initial_states", initv, nmems, s->loc))
    return false;
  if (pd_op_set_input(op, "parameters", nparams, params) ||
      pd_op_set_output(op, "outputs", nouts, seq_names) ||
      pd_op_set_output(op, "step_scopes", 1, &sn) ||
      pd_op_set_attr_strings(op, "ex_states", nmems, exstates) ||
      pd_op_set_attr_strings(op, "states", nmems, states) ||
      pd_op_set_attr_block(op, "sub_block", f->block->idx) ||
      pd_op_set_attr_bool(op, "has_states", nmems > 0)) {
    c->oom = true;
    return false;
  }
  if (pd_cmp_op_finish(c, op, scopes)->k == V_ERROR) return false;
  for (int i = 0; i < nemitted; i++)
    assign_name(c, emitted[i], pd_cmp_vtensor(c, seqs[emit_at[i]]), s->loc, false);
  /* Each memory becomes its last step. */
  for (int i = 0; i < nmems; i++) {
    pd_op_desc *pool = pd_cmp_op_new(c, "sequence_pool", s->loc);
    if (!pool || !pd_cmp_op_in(c, pool, "X", pd_cmp_vtensor(c, seqs[state_at[i]]), s->loc) ||
        pd_op_set_attr_string(pool, "pooltype", "LAST")) {
      c->oom |= pool == NULL;
      return false;
    }
    value *last = pd_cmp_op_finish(c, pool, pd_cmp_op_out(c, pool, "Out", mems[i].name));
    if (last->k != V_TENSOR) return false;
    assign_name(c, mems[i].name, last, mems[i].loc, false);
  }
  return true;
}

static bool compile_while(C *c, const pd_ast_node *s) {
  symtab *saved = c->scope;
  const char **names = NULL;
  int nnames = 0, capnames = 0;
  collect_assigned(c, s->while_.body, &names, &nnames, &capnames);
  /* Loop-carried names get a fresh var each, so that the values bound to other names before the
   * loop are not changed by it. */
  const char **carried = pd_cmp_calloc(c, sizeof *carried * (size_t)(nnames ? nnames : 1));
  pd_var_desc **cvars = pd_cmp_calloc(c, sizeof *cvars * (size_t)(nnames ? nnames : 1));
  int ncarried = 0;
  if (!carried || !cvars) return false;
  for (int i = 0; i < nnames; i++) {
    binding *b = lookup(saved, names[i], NULL);
    if (!b || b->v->k == V_UNDEF) continue;
    if (b->v->k != V_TENSOR) {
      pd_cmp_error(c, s->loc,
                   "'%s' is written in the loop, so it is loop-carried and must be a tensor "
                   "(it is %s)",
                   names[i], pd_cmp_vkind_phrase(b->v));
      return false;
    }
    value *cp = simple_op(c, "assign", b->v, NULL, s->loc);
    if (cp->k != V_TENSOR) return false;
    carried[ncarried] = names[i];
    cvars[ncarried] = cp->var;
    ncarried++;
    assign_name(c, names[i], cp, s->loc, false); /* the loop reads and writes the fresh var */
  }
  value *cond = eval(c, s->while_.cond);
  if (cond->k == V_ERROR) return false;
  if (cond->k != V_TENSOR) {
    pd_cmp_error(c, s->while_.cond->loc,
                 "the condition of a while loop must be a bool tensor with one "
                 "element (a compile-time condition would never change), got %s",
                 pd_cmp_vkind_phrase(cond));
    return false;
  }
  pd_var_desc *cv = cond->var;
  if (cv->dtype != PD_BOOL || cv->ndims < 0 ||
      (cv->ndims > 0 && !(cv->ndims == 1 && cv->dims[0] == 1))) {
    pd_cmp_error(c, s->while_.cond->loc,
                 "the condition of a while loop must be a bool tensor with one "
                 "element, got %s %s",
                 pd_dtype_name(cv->dtype), pd_cmp_dims_str(c, cv));
    return false;
  }
  cflow *f = cf_open(c, CF_WHILE, SC_LOOP);
  if (!f) return false;
  f->cond = cv;
  symtab *ls = c->scope;
  compile_block(c, s->while_.body);
  /* Write each carried name's new value back into its loop var; then the condition. */
  bool ok = true;
  for (int i = 0; i < ncarried && ok; i++) {
    binding *b = lookup_local(ls, carried[i]);
    if (!b) continue;
    if (b->v->k != V_TENSOR) {
      ok = false;
      if (b->v->k != V_ERROR)
        pd_cmp_error(c, b->loc, "'%s' must stay a tensor in the loop", carried[i]);
      break;
    }
    pd_op_desc *op = pd_cmp_op_new(c, "assign", b->loc);
    const char *dn = cvars[i]->name;
    if (!op || !pd_cmp_op_in(c, op, "X", b->v, b->loc) || pd_op_set_output(op, "Out", 1, &dn)) {
      ok = false;
      break;
    }
    ok = pd_cmp_op_finish(c, op, cvars[i])->k == V_TENSOR;
  }
  if (ok) {
    value *nc = eval(c, s->while_.cond);
    pd_op_desc *op = nc->k == V_TENSOR ? pd_cmp_op_new(c, "assign", s->while_.cond->loc) : NULL;
    const char *dn = cv->name;
    ok = op && pd_cmp_op_in(c, op, "X", nc, s->while_.cond->loc) &&
         !pd_op_set_output(op, "Out", 1, &dn) && pd_cmp_op_finish(c, op, cv)->k == V_TENSOR;
  }
  cf_close(c, f, saved);
  if (!ok) return false;
  pd_op_desc *op = pd_cmp_op_new(c, "while", s->loc);
  pd_var_desc *scopes = pd_cmp_var_new(c, c->block, "while.step_scopes", false);
  int nx;
  const char **xs = read_names(c, f, &nx);
  const char **outn = pd_cmp_calloc(c, sizeof *outn * (size_t)(ncarried + 1));
  if (!op || !scopes || !xs || !outn) return false;
  scopes->type = PD_VAR_STEP_SCOPES;
  for (int i = 0; i < ncarried; i++) outn[i] = cvars[i]->name;
  outn[ncarried] = cv->name;
  const char *cn = cv->name, *sn = scopes->name;
  if (pd_op_set_input(op, "X", nx, xs) || pd_op_set_input(op, "Condition", 1, &cn) ||
      pd_op_set_output(op, "Out", ncarried + 1, outn) ||
      pd_op_set_output(op, "StepScopes", 1, &sn) ||
      pd_op_set_attr_block(op, "sub_block", f->block->idx)) {
    c->oom = true;
    return false;
  }
  return pd_cmp_op_finish(c, op, scopes)->k != V_ERROR;
  return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Statements.                                                                                 */

static void compile_assign(C *c, const pd_ast_node *s, bool is_let) {
  value *v = eval(c, s->assign.value);
  size_t nt = s->assign.targets.len;
  if (nt == 1) {
    assign_name(c, s->assign.targets.items[0]->name.id, v, s->assign.targets.items[0]->loc, is_let);
    return;
  }
  if (v->k != V_ERROR && (v->k != V_LIST || (size_t)v->list.n != nt)) {
    pd_cmp_error(c, s->assign.value->loc, "cannot unpack %s into %zu names%s",
                 pd_cmp_vkind_phrase(v), nt,
                 v->k == V_LIST ? pd_cmp_fmt(c, " (it has %d items)", v->list.n) : "");
    v = VERR;
  }
  for (size_t i = 0; i < nt; i++)
    assign_name(c, s->assign.targets.items[i]->name.id, v->k == V_LIST ? v->list.items[i] : VERR,
                s->assign.targets.items[i]->loc, is_let);
}

/* Is the var `name` written by an op of block b, and only by plain ops (none that runs a block:
 * a loop's stacked outputs are named as the vars of its step block, so they keep their name)? */
static bool written_by_plain_ops(const pd_block *b, const char *name) {
  bool written = false;
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    for (int j = 0; j < op->noutputs; j++)
      for (int k = 0; k < op->outputs[j].nargs; k++) {
        if (strcmp(op->outputs[j].args[k], name) != 0) continue;
        if (pd_op_attr(op, "sub_block")) return false;
        written = true;
      }
  }
  return written;
}

/* Has an earlier `emit` of this loop (its bindings "@emit.NAME") emitted the var? */
static bool emitted_var(const symtab *loop, const pd_var_desc *v) {
  for (const binding *b = loop->first; b; b = b->next)
    if (strncmp(b->name, "@emit.", 6) == 0 && b->v->k == V_TENSOR && b->v->var == v) return true;
  return false;
}

/* Does block `in` read the var `name` of block b: is it b, or inside b with no var of that name
 * of its own in the blocks between (a loop's step block has vars named as the loop's inputs)? */
static bool sees_var_of(const pd_program *p, const pd_block *in, const pd_block *b,
                        const char *name) {
  for (; in && in != b; in = in->parent_idx >= 0 ? p->blocks[in->parent_idx] : NULL)
    if (pd_block_find_var_local(in, name)) return false;
  return in == b;
}

/* Name var v of the step block b after the output it is emitted as (`hint`, or hint.N when
 * taken): the stacked sequence is a var of the enclosing block under the same name, so listings,
 * fetches and prunes find `hs`, not `tanh.tmp_0`. The ops of b and of the blocks inside it that
 * read v are updated. */
static void rename_step_var(C *c, pd_block *b, pd_var_desc *v, const char *hint) {
  const char *name = hint;
  for (int k = 1; name_taken(c, name); k++) name = pd_cmp_fmt(c, "%s.%d", hint, k);
  char *old = pd_strdup(v->name);
  pd_program *p = c->unit->main;
  bool *sees = pd_calloc((size_t)p->nblocks, sizeof *sees);
  if (!old || !sees) {
    pd_free(old);
    pd_free(sees);
    c->oom = true;
    return;
  }
  for (int i = 0; i < p->nblocks; i++) sees[i] = sees_var_of(p, p->blocks[i], b, old);
  if (pd_block_rename_var(b, v, name)) {
    pd_free(old);
    pd_free(sees);
    c->oom = true;
    return;
  }
  for (int i = 0; i < p->nblocks; i++) {
    if (!sees[i]) continue;
    for (int j = 0; j < p->blocks[i]->nops; j++) {
      pd_op_desc *op = p->blocks[i]->ops[j];
      for (int side = 0; side < 2; side++) {
        pd_slot *slots = side ? op->outputs : op->inputs;
        int ns = side ? op->noutputs : op->ninputs;
        for (int si = 0; si < ns; si++)
          for (int k = 0; k < slots[si].nargs; k++) {
            if (strcmp(slots[si].args[k], old) != 0) continue;
            char *dup = pd_strdup(name);
            if (!dup) {
              c->oom = true;
              continue;
            }
            pd_free(slots[si].args[k]);
            slots[si].args[k] = dup;
          }
      }
    }
  }
  pd_free(old);
  pd_free(sees);
}

static void compile_emit(C *c, const pd_ast_node *s) {
  symtab *loop = NULL;
  for (symtab *t = c->scope; t; t = t->parent) {
    if (t->kind == SC_FUNC) break;
    if (t->kind == SC_BRANCH) {
      pd_cmp_error(c, s->loc,
                   "'emit' inside a tensor if: assign a name in both branches and emit it "
                   "after the if");
      return;
    }
    if (t->kind == SC_LOOP) {
      loop = t;
      break;
    }
  }
  if (!loop || !loop->cf || loop->cf->kind != CF_FOR) {
    pd_cmp_error(c, s->loc, "'emit' is only allowed in the body of a for loop");
    return;
  }
  for (size_t i = 0; i < s->emit.outputs.len; i++) {
    const pd_ast_node *o = s->emit.outputs.items[i];
    const char *key = pd_cmp_fmt(c, "@emit.%s", o->binding.name);
    if (lookup_local(loop, key)) {
      pd_cmp_error(c, o->loc, "'%s' is emitted twice in this loop", o->binding.name);
      continue;
    }
    value *v = eval(c, o->binding.value);
    if (v->k == V_ERROR) continue;
    if (v->k != V_TENSOR) {
      pd_cmp_error(c, o->binding.value->loc, "emit needs a tensor, got %s", pd_cmp_vkind_phrase(v));
      continue;
    }
    /* A value an op of the step block computed is stacked as it is (compile_for names the output
     * after it); anything else (a memory's value from the step before, an outer var, the step
     * input) is copied into a var of the step block named after the output first. */
    if (written_by_plain_ops(loop->cf->block, v->var->name)) {
      if (!emitted_var(loop, v->var)) rename_step_var(c, loop->cf->block, v->var, o->binding.name);
      bind_local(c, loop, key, v, o->loc);
      continue;
    }
    pd_op_desc *op = pd_cmp_op_new(c, "assign", o->loc);
    pd_var_desc *dst = pd_cmp_var_new(c, loop->cf->block, o->binding.name, true);
    const char *dn = dst ? dst->name : NULL;
    if (!op || !dst || !pd_cmp_op_in(c, op, "X", v, o->loc) ||
        pd_op_set_output(op, "Out", 1, &dn)) {
      c->oom |= !op || !dst;
      continue;
    }
    value *r = pd_cmp_op_finish(c, op, dst);
    if (r->k == V_TENSOR) bind_local(c, loop, key, r, o->loc);
  }
}

static const char *find_module(C *c, const char *name, const char *from_file, pd_buf *tried) {
  const char *dirs[64];
  int nd = 0;
  const char *env = getenv("PDLANG_PATH");
  char *envcopy = NULL;
  if (env && *env) {
    envcopy = pd_strdup(env);
    for (char *p = envcopy, *save = NULL, *tok;
         envcopy && (tok = strtok_r(p, ":", &save)) && nd < 60; p = NULL)
      dirs[nd++] = pd_cmp_strdup(c, tok);
  }
  pd_free(envcopy);
  dirs[nd++] = c->opts && c->opts->stdlib_dir ? c->opts->stdlib_dir : PD_STDLIB_DIR;
#ifdef PD_SRC_STDLIB_DIR
  if (!(c->opts && c->opts->stdlib_dir)) dirs[nd++] = PD_SRC_STDLIB_DIR;
#endif
  const char *slash = strrchr(from_file, '/');
  dirs[nd++] = slash ? pd_cmp_fmt(c, "%.*s", (int)(slash - from_file), from_file) : ".";
  bool has_ext = strlen(name) > 3 && strcmp(name + strlen(name) - 3, ".pd") == 0;
  for (int i = 0; i < nd; i++) {
    const char *path = pd_cmp_fmt(c, "%s/%s%s", dirs[i], name, has_ext ? "" : ".pd");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return path;
    pd_buf_printf(tried, "%s%s", i ? ", " : "", dirs[i]);
  }
  return NULL;
}


static void compile_import(C *c, const pd_ast_node *s) {
  if (c->scope->kind != SC_GLOBAL || c->call) {
    pd_cmp_error(c, s->loc, "'import' is only allowed at the top level of a script");
    return;
  }
  const char *name = s->import.path.data;
  if (memchr(name, '\0', s->import.path.len) || !*name) {
    pd_cmp_error(c, s->loc, "bad module name");
    return;
  }
  pd_buf tried;
  pd_buf_init(&tried);
  const char *path = find_module(c, name, s->loc.file, &tried);
  if (!path) {
    pd_cmp_error(c, s->loc, "cannot find module '%s' (looked in %s)", name,
                 tried.data ? tried.data : "");
    pd_buf_free(&tried);
    return;
  }
  pd_buf_free(&tried);
  char *real = realpath(path, NULL);
  const char *key = real ? pd_cmp_strdup(c, real) : path;
  free(real);
  for (int i = 0; i < c->nimporting; i++) {
    if (strcmp(c->importing[i], key) == 0) {
      /* Show the cycle by file names: a.pd -> b.pd -> a.pd. */
      pd_buf chain;
      pd_buf_init(&chain);
      for (int j = i; j <= c->nimporting; j++) {
        const char *f = c->importing[j < c->nimporting ? j : i], *slash = strrchr(f, '/');
        pd_buf_printf(&chain, "%s%s", j > i ? " -> " : "", slash ? slash + 1 : f);
      }
      pd_cmp_error(c, s->loc, "circular import: '%s' is already being imported (%s)", name,
                   chain.oom || !chain.data ? "..." : chain.data);
      pd_buf_free(&chain);
      return;
    }
  }
  int64_t *done = sm_slot(c, c->modules, key, true);
  if (!done || *done) return; /* imported once */
  *done = 1;
  pd_source *msrc;
  pd_error e = {0};
  if (pd_source_open(path, &msrc, &e)) {
    pd_cmp_error(c, s->loc, "cannot import '%s': %s", name, e.msg ? e.msg : "error");
    pd_error_clear(&e);
    return;
  }
  if (PD_GROW(c->sources, c->capsources, (size_t)c->nsources + 1)) {
    pd_source_free(msrc);
    c->oom = true;
    return;
  }
  c->sources[c->nsources++] = msrc;
  pd_ast_node *prog;
  if (pd_parse(msrc, c->arena, c->diags, &prog)) return;
  if (PD_GROW(c->importing, c->capimporting, (size_t)c->nimporting + 1)) {
    c->oom = true;
    return;
  }
  c->importing[c->nimporting++] = key;
  compile_block(c, prog);
  c->nimporting--;
}

static void compile_return(C *c, const pd_ast_node *s) {
  if (!c->call) {
    pd_cmp_error(c, s->loc, "'return' outside a function");
    return;
  }
  if (c->cf && c->scope->kind != SC_FUNC) {
    for (symtab *t = c->scope; t && t->kind != SC_FUNC; t = t->parent)
      if (t->kind == SC_BRANCH || t->kind == SC_LOOP) {
        pd_cmp_error(c, s->loc,
                     "'return' inside a tensor if or a loop: the block runs on its own rows "
                     "or steps, so it cannot return from the function; assign a name instead");
        return;
      }
  }
  size_t n = s->return_.values.len;
  value *v = VNONE;
  if (n == 1) {
    v = eval(c, s->return_.values.items[0]);
  } else if (n > 1) {
    v = pd_cmp_vnew(c, V_LIST);
    if (v == VERR) return;
    v->list.n = (int)n;
    v->list.items = pd_cmp_calloc(c, sizeof(value *) * n);
    if (!v->list.items) return;
    for (size_t i = 0; i < n; i++) v->list.items[i] = eval(c, s->return_.values.items[i]);
  }
  c->call->ret = v;
  c->call->returned = true;
}

/* After a block failed to compile, the names it would have defined read as errors (silently),
 * so that one mistake is not reported again at every later use. */
static void quiet_names(C *c, const pd_ast_node *s) {
  const char **names = NULL;
  int n = 0, cap = 0;
  collect_assigned(c, s, &names, &n, &cap);
  if (s->kind == PD_AST_FOR) {
    for (size_t i = 0; i < s->for_.body->block.stmts.len; i++) {
      const pd_ast_node *st = s->for_.body->block.stmts.items[i];
      if (st->kind == PD_AST_EMIT)
        for (size_t k = 0; k < st->emit.outputs.len; k++)
          push_name(c, &names, &n, &cap, st->emit.outputs.items[k]->binding.name);
    }
  }
  for (int i = 0; i < n; i++) {
    binding *b = lookup(c->scope, names[i], NULL);
    if (!b) bind_local(c, c->scope, names[i], VERR, s->loc);
    else if (b->v->k == V_UNDEF) b->v = VERR;
  }
}

static void compile_stmt(C *c, const pd_ast_node *s) {
  switch (s->kind) {
  case PD_AST_ASSIGN: compile_assign(c, s, false); break;
  case PD_AST_LET: compile_assign(c, s, true); break;
  case PD_AST_EXPR_STMT: {
    value *v = eval(c, s->expr_stmt.expr);
    (void)v;
    break;
  }
  case PD_AST_IF:
  case PD_AST_FOR:
  case PD_AST_WHILE: {
    bool ok = s->kind == PD_AST_IF    ? compile_if_chain(c, s, 0)
            : s->kind == PD_AST_FOR   ? compile_for(c, s)
                                      : compile_while(c, s);
    if (!ok) quiet_names(c, s);
    break;
  }
  case PD_AST_DEF: {
    value *f = pd_cmp_vnew(c, V_FUNC);
    if (f == VERR) return;
    f->fn.def = s;
    f->fn.env = c->scope;
    const char *name = s->def.name->name.id;
    if (lookup_local(c->scope, name) && lookup_local(c->scope, name)->v->k == V_FUNC) {
      pd_cmp_error(c, s->def.name->loc, "function '%s' is already defined in this block", name);
      return;
    }
    bind_local(c, c->scope, name, f, s->def.name->loc);
    break;
  }
  case PD_AST_RETURN: compile_return(c, s); break;
  case PD_AST_EMIT: compile_emit(c, s); break;
  case PD_AST_IMPORT: compile_import(c, s); break;
  case PD_AST_BLOCK: compile_block(c, s); break;
  default: pd_cmp_error(c, s->loc, "%s cannot appear here", pd_ast_kind_phrase(s->kind)); break;
  }
}

static void compile_block(C *c, const pd_ast_node *block) {
  for (size_t i = 0; i < block->block.stmts.len && !c->oom; i++) {
    if (c->call && c->call->returned) break;
    if (c->diags->nerrors > c->diags->max_errors) break;
    compile_stmt(c, block->block.stmts.items[i]);
  }
}


/* ------------------------------------------------------------------------------------------ */
/* The unit.                                                                                   */

void pd_unit_free(pd_unit *u) {
  if (!u) return;
  pd_program_free(u->main);
  pd_program_free(u->startup);
  pd_free(u->actions);
  unit_priv *p = u->priv;
  if (p) {
    for (int i = 0; i < p->nsources; i++) pd_source_free(p->sources[i]);
    pd_free(p->sources);
    pd_ast_arena_free(p->arena);
    pd_free(p);
  }
  pd_free(u);
}

const pd_source *pd_unit_source(const pd_unit *u, const pd_source *main, const char *file) {
  if (!file) return NULL;
  if (main && main->name && strcmp(main->name, file) == 0) return main;
  const unit_priv *p = u ? u->priv : NULL;
  for (int i = 0; p && i < p->nsources; i++)
    if (p->sources[i]->name && strcmp(p->sources[i]->name, file) == 0) return p->sources[i];
  return NULL;
}

pd_status pd_compile(const pd_source *src, const pd_compile_options *opts, pd_diags *diags,
                     pd_unit **out) {
  *out = NULL;
  pd_unit *u = pd_calloc(1, sizeof *u);
  unit_priv *priv = pd_calloc(1, sizeof *priv);
  C c = {0};
  if (!u || !priv) {
    pd_free(u);
    pd_free(priv);
    return PD_ENOMEM;
  }
  u->priv = priv;
  c.unit = u;
  c.diags = diags;
  c.opts = opts;
  c.main_src = src;
  c.arena = priv->arena = pd_ast_arena_new();
  u->main = pd_program_new();
  u->startup = pd_program_new();
  c.counters = pd_calloc(1, sizeof *c.counters);
  c.modules = pd_calloc(1, sizeof *c.modules);
  pd_status st = PD_OK;
  if (!c.arena || !u->main || !u->startup || !c.counters || !c.modules) {
    st = PD_ENOMEM;
    goto done;
  }
  pd_ast_node *prog;
  int errors_before = diags->nerrors;
  st = pd_parse(src, c.arena, diags, &prog);
  if (st) goto done;
  c.block = u->main->blocks[0];
  if (!scope_push(&c, SC_GLOBAL, NULL)) {
    st = PD_ENOMEM;
    goto done;
  }
  compile_block(&c, prog);
  if (c.oom) st = PD_ENOMEM;
  else if (diags->nerrors > errors_before) st = PD_ECOMPILE;
done:
  priv->sources = c.sources;
  priv->nsources = c.nsources;
  pd_free(c.importing);
  sm_free(c.counters);
  sm_free(c.modules);
  if (st) {
    pd_unit_free(u);
    return st;
  }
  *out = u;
  return PD_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Actions and their values.                                                                   */

const char *pd_action_name(pd_action_kind kind) {
  static const char *const names[] = {"print", "train", "eval", "save", "load", "assert_close"};
  return (unsigned)kind < PD_ARRAY_LEN(names) ? names[kind] : "?";
}

const pd_cval *pd_action_opt(const pd_action *a, const char *key) {
  for (int i = 0; i < a->nopts; i++)
    if (strcmp(a->opts[i].key, key) == 0) return a->opts[i].value;
  return NULL;
}

const pd_cval *pd_cval_field(const pd_cval *r, const char *key) {
  if (!r || r->kind != PD_CVAL_RECORD) return NULL;
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->fields[i].key, key) == 0) return r->fields[i].value;
  return NULL;
}

pd_loc pd_cval_field_loc(const pd_cval *r, const char *key, pd_loc fallback) {
  if (!r || r->kind != PD_CVAL_RECORD) return fallback;
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->fields[i].key, key) == 0 && r->fields[i].loc.line > 0) return r->fields[i].loc;
  return r->loc.line > 0 ? r->loc : fallback;
}

void pd_cval_format(const pd_cval *v, pd_buf *out) {
  switch (v->kind) {
  case PD_CVAL_NONE: pd_buf_puts(out, "none"); break;
  case PD_CVAL_BOOL: pd_buf_puts(out, v->b ? "true" : "false"); break;
  case PD_CVAL_INT: pd_buf_printf(out, "%lld", (long long)v->i); break;
  case PD_CVAL_FLOAT: pd_buf_printf(out, "%g", v->f); break;
  case PD_CVAL_STRING: pd_buf_printf(out, "\"%s\"", v->str); break;
  case PD_CVAL_TENSOR: pd_buf_printf(out, "tensor %s", v->str); break;
  case PD_CVAL_DTYPE: pd_buf_puts(out, pd_dtype_name(v->dtype)); break;
  case PD_CVAL_FUNC: pd_buf_puts(out, v->str); break;
  case PD_CVAL_LIST:
  case PD_CVAL_RECORD:
    pd_buf_printf(out, "%s%s", v->kind == PD_CVAL_RECORD ? v->str : "",
                  v->kind == PD_CVAL_RECORD ? "(" : "[");
    for (int i = 0; i < v->n; i++) {
      if (i) pd_buf_puts(out, ", ");
      if (v->kind == PD_CVAL_RECORD) {
        pd_buf_printf(out, "%s = ", v->fields[i].key);
        pd_cval_format(v->fields[i].value, out);
      } else {
        pd_cval_format(v->items[i], out);
      }
    }
    pd_buf_puts(out, v->kind == PD_CVAL_RECORD ? ")" : "]");
    break;
  }
}
