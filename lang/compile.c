/* compile.c -- the compiler's entry point (pd_compile, the unit) and its common services. The
 * compiler walks the syntax tree, keeps one symbol table per block, evaluates compile-time values,
 * inlines `def` calls, and lowers tensor expressions and blocks to ops of the main ProgramDesc
 * (parameter initialisers go to the startup program). Control flow:
 *   if over a [batch, 1] bool tensor  split_lod_tensor, two conditional_blocks, merge_lod_tensor
 *   if over a one-element tensor      conditional_block(s) with is_scalar_condition
 *   for (t in seq)                    recurrent (memories: outer names written in the body)
 *   while (cond)                      while (loop-carried: outer names written in the body)
 * Here: memory and messages, values, vars, names and the helpers that append ops, attributes
 * from values, symbol tables, reads of outer vars from inside a block, inlined `def` calls,
 * `import`, the unit and the actions' values. Expressions are in lang/compile_expr.c,
 * statements and control flow in lang/compile_stmt.c, builtin functions in lang/builtins.c;
 * lang/compile_int.h is what they share. */
#include "config.h"
#include "lang/compile_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lang/parse.h"

const value pd_cmp_v_error = {.k = V_ERROR};
const value pd_cmp_v_none = {.k = V_NONE};

/* ------------------------------------------------------------------------------------------ */
/* Counters by name (unique-name counters, imported modules): base/strmap.h maps whose keys are
 * copies in the arena.                                                                         */

/* The counter of key in m (0 when new), or NULL on out of memory (c->oom set). The pointer is
 * good until the next name is added to m. */
static int64_t *name_count(C *c, pd_strmap *m, const char *key) {
  pd_strmap_entry *e = pd_strmap_find(m, key);
  if (e) return &e->val.i;
  const char *k = pd_cmp_strdup(c, key);
  if (!k || !(e = pd_strmap_add(m, k, NULL))) {
    c->oom = true;
    return NULL;
  }
  return &e->val.i;
}

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

/* Report text at loc as an error; when at_caller and inside inlined calls, at the user's line
 * (the outermost call) with a note at loc, where the function raised it; else at loc, then a
 * note at each call site, innermost first, out to the user's line (as compilers show an
 * inlining chain). */
static void report(C *c, pd_loc loc, bool at_caller, const char *fmt, va_list ap) {
  pd_buf msg;
  pd_buf_init(&msg);
  pd_buf_vprintf(&msg, fmt, ap);
  const char *text = msg.data ? msg.data : "out of memory";
  inline_call *outermost = NULL;
  for (inline_call *k = c->call; at_caller && k; k = k->outer) outermost = k;
  if (outermost) {
    pd_diag_report(c->diags, source_of(c, outermost->site.file), PD_DIAG_ERROR, outermost->site,
                   "%s", text);
    pd_diag_report(c->diags, source_of(c, loc.file), PD_DIAG_NOTE, loc, "raised in '%s', here",
                   c->call->def->def.name->name.id);
  } else {
    pd_diag_report(c->diags, source_of(c, loc.file), PD_DIAG_ERROR, loc, "%s", text);
    if (!at_caller) pd_cmp_note_calls(c);
  }
  pd_buf_free(&msg);
}

void pd_cmp_error(C *c, pd_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(c, loc, false, fmt, ap);
  va_end(ap);
}

const char *pd_cmp_suggest_kw(const char *word, const char *const *names, int n) {
  const char *best = NULL;
  int bestd = 1000;
  for (int i = 0; i < n; i++) pd_suggest_consider(word, names[i], &best, &bestd);
  if (best) return best;
  size_t lw = strlen(word), bestgap = SIZE_MAX;
  for (int i = 0; i < n; i++) {
    size_t ln = strlen(names[i]), m = ln < lw ? ln : lw;
    if (m < 3 || strncmp(word, names[i], m) != 0) continue;
    size_t gap = ln < lw ? lw - ln : ln - lw;
    if (gap < bestgap) {
      best = names[i];
      bestgap = gap;
    }
  }
  return best;
}

void pd_cmp_error_at_caller(C *c, pd_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(c, loc, true, fmt, ap);
  va_end(ap);
}

void pd_cmp_note_calls(C *c) {
  for (inline_call *k = c->call; k; k = k->outer)
    pd_diag_report_call(c->diags, source_of(c, k->site.file), k->site, k->def->def.name->name.id);
}

/* op at loc inside the call k (NULL: none) and the calls k is inside. */
static bool op_set_loc_in(C *c, pd_op_desc *op, pd_loc loc, inline_call *k) {
  if (k && !k->chain) {  /* the first op of this call: its chain, shared by the call's ops */
    int depth = 0;
    for (inline_call *o = k; o; o = o->outer) depth++;
    pd_call_site *sites = pd_cmp_calloc(c, sizeof *sites * (size_t)depth);
    int n = 0;
    for (inline_call *o = k; sites && o; o = o->outer)
      sites[n++] = (pd_call_site){o->site, o->def->def.name->name.id};
    if (!sites || !(k->chain = pd_callchain_new(sites, n))) return false;
  }
  if (pd_op_set_loc(op, loc)) return false;
  pd_op_set_calls(op, k ? k->chain : NULL);
  return true;
}

bool pd_cmp_op_set_loc(C *c, pd_op_desc *op, pd_loc loc) {
  return op_set_loc_in(c, op, loc, c->call);
}

bool pd_cmp_spend(C *c, int64_t n, pd_loc loc) {
  if (c->over_budget) return false;
  c->work += n;
  if (c->work <= PD_CMP_WORK_BUDGET) return true;
  c->over_budget = true;
  const unrolling *u = c->unrolling;
  while (u && u->outer) u = u->outer;
  if (u)
    pd_cmp_error(c, u->loop->loc,
                 "this loop takes more compile-time work than a program may (%d steps: "
                 "statements, values, ops, passes), in its pass %d of %d: a for over a "
                 "compile-time list is written out once per item, so loops inside it multiply; "
                 "loop over fewer items, or over a tensor",
                 PD_CMP_WORK_BUDGET, u->pass + 1, u->passes);
  else
    pd_cmp_error(c, loc,
                 "this takes more compile-time work than a program may (%d steps: statements, "
                 "values, ops, function calls)",
                 PD_CMP_WORK_BUDGET);
  return false;
}

/* ------------------------------------------------------------------------------------------ */
/* Values.                                                                                     */

value *pd_cmp_vnew(C *c, vkind k) {
  c->work++;
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

/* The copy first: a string value never exists without its text (save and load read it). */
value *pd_cmp_vstr(C *c, const char *s) {
  const char *copy = pd_cmp_strdup(c, s);
  value *v = copy ? pd_cmp_vnew(c, V_STR) : VERR;
  if (v != VERR) v->s = copy;
  return v;
}

value *pd_cmp_vtensor(C *c, pd_var_desc *var) {
  if (!var) return VERR;
  value *v = pd_cmp_vnew(c, V_TENSOR);
  if (v != VERR) v->var = var;
  return v;
}

value *pd_cmp_vbool(C *c, bool b) {
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
  case V_MODEL: return "a saved model";
  case V_METHOD: return "a method";
  }
  return "a value";
}

const char *pd_cmp_dims_str(C *c, const pd_var_desc *v) {
  if (v->ndims < 0) return "[?]";
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_put_dims(&b, v->ndims, v->dims);
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
  case V_MODEL: pd_buf_printf(out, "import_model(\"%s\")", pd_cmp_model_path(v)); break;
  default: pd_buf_puts(out, pd_cmp_vkind_phrase(v)); break;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Vars, names and ops.                                                                        */

const char *pd_cmp_unique_name(C *c, const char *prefix) {
  int64_t *n = name_count(c, &c->counters, prefix);
  if (!n) return "";
  return pd_cmp_fmt(c, "%s_%lld", prefix, (long long)(*n)++);
}

/* The prefix for names made inside the current inlined call ("fc_0"), or NULL at top level. */
const char *pd_cmp_name_prefix(C *c) { return c->call ? c->call->prefix : NULL; }

bool pd_cmp_name_taken(C *c, const char *name) {
  return pd_program_has_var_name(c->unit->main, name);
}

const char *pd_cmp_suffixed_name(C *c, const char *hint) {
  int64_t k = pd_program_free_suffix(c->unit->main, hint);
  if (k < 0) {
    c->oom = true;
    return hint;
  }
  return pd_cmp_fmt(c, "%s.%lld", hint, (long long)k);
}

/* A new var in block b. With exact, the name is used as given when free, else made unique by a
 * ".N" suffix; without, `hint` is a prefix for a unique temp name. */
pd_var_desc *pd_cmp_var_new(C *c, pd_block *b, const char *hint, bool exact) {
  const char *name = hint;
  if (!exact) {
    const char *pre = pd_cmp_name_prefix(c);
    name = pd_cmp_unique_name(c, pre ? pd_cmp_fmt(c, "%s.%s", pre, hint) : hint);
  }
  if (pd_cmp_name_taken(c, name)) name = pd_cmp_suffixed_name(c, hint);
  pd_var_desc *v = pd_block_var(b, name);
  if (!v) c->oom = true;
  return v;
}

/* The var that the current block should read for an outer var: reading through each enclosing
 * construct between the var's block and here (a per-row branch reads its half of the rows). */
static pd_var_desc *import_var(C *c, pd_var_desc *v, pd_loc loc);

pd_op_desc *pd_cmp_op_new(C *c, const char *type, pd_loc loc) {
  c->work += PD_CMP_WORK_OP;
  pd_op_desc *op = pd_block_add_op(c->block, type, -1);
  if (!op || !pd_cmp_op_set_loc(c, op, loc)) {
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
    pd_var_desc *v = import_var(c, vs[i]->var, loc);
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
bool pd_cmp_op_temps(C *c, pd_op_desc *op) {
  const pd_opdef *def = pd_opdef_lookup(op->type);
  for (int i = 0; def && i < def->noutputs; i++)
    if ((def->outputs[i].flags & PD_SLOT_INTERMEDIATE) && !pd_op_output(op, def->outputs[i].name) &&
        !pd_cmp_op_out(c, op, def->outputs[i].name, op->type))
      return false;
  return true;
}

bool pd_cmp_check_size(C *c, const pd_var_desc *v, pd_loc loc, const char *what) {
  uint64_t bytes;
  if (v->type != PD_VAR_LOD_TENSOR || v->ndims < 0 ||
      pd_shape_fits(v->dtype, v->ndims, v->dims, &bytes))
    return true;
  const char *shape = pd_cmp_dims_str(c, v);
  if (bytes == UINT64_MAX)
    pd_cmp_error(c, loc, "%s of shape %s has more elements than int64 counts; a tensor can have "
                 "at most 2^48 bytes (256 TiB)", what, shape);
  else {
    int u = bytes >> 60 ? 60 : bytes >> 50 ? 50 : 40;
    pd_cmp_error(c, loc, "%s of shape %s (%s) would take %.1f %s; a tensor can have at most "
                 "2^48 bytes (256 TiB)", what, shape, pd_dtype_name(v->dtype),
                 (double)bytes / (double)(UINT64_C(1) << u),
                 u == 60 ? "EiB" : u == 50 ? "PiB" : "TiB");
  }
  return false;
}

value *pd_cmp_op_finish(C *c, pd_op_desc *op, pd_var_desc *result) {
  if (!op || !result || c->oom || !pd_cmp_op_temps(c, op)) return VERR;
  pd_error e = {0};
  pd_status st = pd_opdef_prepare(op, c->block, &e);
  if (st) {
    if (st == PD_ENOMEM) c->oom = true;
    else
      pd_cmp_error(c, op->loc, "%s",
                   e.msg ? e.msg : pd_status_str(st));
    pd_error_clear(&e);
    return VERR;
  }
  /* Every output whose inferred shape is known must be one a machine can hold. */
  for (int i = 0; i < op->noutputs; i++)
    for (int j = 0; j < op->outputs[i].nargs; j++) {
      const pd_var_desc *v = pd_block_find_var(c->block, op->outputs[i].args[j]);
      if (v && !pd_cmp_check_size(c, v, op->loc,
                                  pd_cmp_fmt(c, "%s: its output %s", op->type,
                                             op->outputs[i].param)))
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
      for (int i = 0; i < n; i++) {
        if (xs[i] < INT32_MIN || xs[i] > INT32_MAX) {
          pd_cmp_error(c, loc, "%s: item %d (%lld) is out of range for a 32-bit integer", what,
                       i, (long long)xs[i]);
          return false;
        }
        ys[i] = (int32_t)xs[i];
      }
      r = pd_op_set_attr_ints(op, ad->name, n, ys);
    }
    break;
  }
  case PD_ATTR_STRINGS: {
    if (v->k != V_LIST) {
      if (v->k != V_ERROR) pd_cmp_error(c, loc, "%s must be a list of strings", what);
      return false;
    }
    const char **ss = pd_cmp_calloc(c, sizeof *ss * (size_t)(v->list.n ? v->list.n : 1));
    if (!ss) return false;
    for (int i = 0; i < v->list.n; i++) {
      if (v->list.items[i]->k != V_STR) {
        pd_cmp_error(c, loc, "%s must be a list of strings (item %d is %s)", what, i,
                     pd_cmp_vkind_phrase(v->list.items[i]));
        return false;
      }
      ss[i] = v->list.items[i]->s;
    }
    r = pd_op_set_attr_strings(op, ad->name, v->list.n, ss);
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

symtab *pd_cmp_scope_push(C *c, scope_kind kind, symtab *parent) {
  symtab *s = pd_cmp_calloc(c, sizeof *s);
  if (!s) return NULL;
  s->kind = kind;
  s->parent = parent;
  s->pushed_before = c->newest_scope;
  c->newest_scope = s;
  c->scope = s;
  return s;
}

binding *pd_cmp_lookup_local(symtab *s, const char *name) {
  pd_strmap_entry *e = pd_strmap_find(&s->index, name);
  return e ? e->val.p : NULL;
}

void pd_cmp_scopes_free(C *c) {
  for (symtab *s = c->newest_scope; s; s = s->pushed_before) pd_strmap_free(&s->index);
  c->newest_scope = NULL;
}

/* Find a name through the enclosing scopes (a function body sees its defining scope). */
binding *pd_cmp_lookup(symtab *s, const char *name, symtab **where) {
  for (; s; s = s->parent) {
    binding *b = pd_cmp_lookup_local(s, name);
    if (b) {
      if (where) *where = s;
      return b;
    }
  }
  return NULL;
}

binding *pd_cmp_bind_local(C *c, symtab *s, const char *name, value *v, pd_loc loc) {
  binding *b = pd_cmp_lookup_local(s, name);
  if (b) {
    b->v = v;
    return b;
  }
  b = pd_cmp_calloc(c, sizeof *b);
  if (!b || !(b->name = pd_cmp_strdup(c, name))) return NULL;
  pd_strmap_entry *e = pd_strmap_add(&s->index, b->name, NULL);
  if (!e) {
    c->oom = true;
    return NULL;
  }
  e->val.p = b;
  b->v = v;
  b->loc = loc;
  if (s->last) s->last->next = b;
  else s->first = b;
  s->last = b;
  return b;
}

static bool append_name(C *c, const char ***arr, int *n, int *cap, const char *name);

bool pd_cmp_push_name(C *c, const char ***arr, int *n, int *cap, const char *name) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*arr)[i], name) == 0) return true;
  return append_name(c, arr, n, cap, name);
}

/* pd_cmp_push_name for a name known not to be in *arr. */
static bool append_name(C *c, const char ***arr, int *n, int *cap, const char *name) {
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
    if (pd_cmp_name_taken(c, name)) return;
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
  if (var == c->last_decl) {  /* declare(): a var no op writes yet */
    c->last_decl = NULL;
    pd_block *b = pd_block_find_var_local(c->block, var->name) ? c->block : NULL;
    if (b && !pd_cmp_name_taken(c, name) && pd_block_rename_var(b, var, name)) c->oom = true;
    return;
  }
  if (var != c->last_temp || c->block->nops == 0 || pd_cmp_name_taken(c, name)) return;
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
void pd_cmp_assign_name(C *c, const char *name, value *v, pd_loc loc, bool is_let) {
  symtab *s = c->scope;
  if (is_let) {
    if (pd_cmp_lookup_local(s, name)) {
      pd_cmp_error(c, loc, "'%s' is already defined in this block", name);
      return;
    }
    binding *b = pd_cmp_bind_local(c, s, name, v, loc);
    if (b) b->is_let = true;
    adopt_name(c, v, name);
    return;
  }
  /* Search up to and including the nearest function body. */
  symtab *where = NULL;
  binding *b = NULL;
  for (symtab *t = s; t; t = t->parent) {
    if ((b = pd_cmp_lookup_local(t, name))) {
      where = t;
      break;
    }
    if (t->kind == SC_FUNC) break;
  }
  if (!b) {  /* new to every table up to the function's: not in s->news yet */
    if (pd_cmp_bind_local(c, s, name, v, loc))
      append_name(c, &s->news, &s->nnews, &s->capnews, name);
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
  /* The first write in cf records the name (a binding of cf's own means it was recorded). */
  bool first = !pd_cmp_lookup_local(cf, name);
  if (pd_cmp_bind_local(c, cf, name, v, loc) && first)
    append_name(c, &cf->writes, &cf->nwrites, &cf->capwrites, name);
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
  if (!op || !t || !fl || !op_set_loc_in(c, op, r->loc, r->call)) {
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
  pd_status st = pd_opdef_prepare(op, r->at, &e);
  if (st) {
    if (st == PD_ENOMEM) c->oom = true;
    else pd_cmp_error(c, op->loc, "%s", e.msg ? e.msg : "cannot split rows");
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

static pd_var_desc *import_var(C *c, pd_var_desc *v, pd_loc loc) {
  /* The constructs from the outermost one that does not hold v, inwards. */
  cflow *chain[PD_MAX_BLOCK_DEPTH];
  int n = 0;
  for (cflow *f = c->cf; f; f = f->outer) {
    if (pd_block_find_var_local(f->block, v->name)) break;
    if (n == (int)PD_ARRAY_LEN(chain)) {
      if (!c->too_deep)  /* once: every later op in these blocks would say it again */
        pd_cmp_error(c, loc, "blocks nested more than %d deep here (an 'else if' is an if "
                     "inside the else: split a long chain of tensor ifs)", PD_MAX_BLOCK_DEPTH);
      c->too_deep = true;
      return NULL;
    }
    chain[n++] = f;
  }
  for (int i = n - 1; i >= 0 && v; i--) v = cf_read(c, chain[i], v);
  return v;
}

/* ------------------------------------------------------------------------------------------ */
/* Functions and modules: inlined `def` calls, import.                                        */

/* Inline a `def`: bind parameters in a fresh scope whose parent is the defining scope, run the
 * body in the current block, and return what it returned. */
value *pd_cmp_call_def(C *c, value *fnv, call_args *a) {
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
  if (c->call_depth >= PD_MAX_CALL_DEPTH) {
    pd_cmp_error(c, a->loc, "function calls nested too deeply (limit %d)", PD_MAX_CALL_DEPTH);
    return VERR;
  }
  if (!pd_cmp_spend(c, PD_CMP_WORK_CALL, a->loc)) return VERR;
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
      const char **names = pd_cmp_calloc(c, sizeof *names * (np ? np : 1));
      if (!names) return VERR;
      for (size_t j = 0; j < np; j++) names[j] = def->def.params.items[j]->binding.name;
      const char *near = pd_cmp_suggest_kw(a->kw[k], names, (int)np);
      pd_cmp_error(c, a->kw_loc[k], "'%s' has no parameter '%s'%s", fname, a->kw[k],
                   near ? pd_cmp_fmt(c, "; did you mean '%s'?", near) : "");
      return VERR;
    }
    if (vals[i]) {
      pd_cmp_error(c, a->kw_loc[k], "argument '%s' of '%s' given twice", a->kw[k], fname);
      return VERR;
    }
    vals[i] = a->kwv[k];
  }
  symtab *saved_scope = c->scope;
  symtab *fs = pd_cmp_scope_push(c, SC_FUNC, fnv->fn.env);
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
      vals[i] = pd_cmp_eval(c, p->binding.value);
    }
    pd_cmp_bind_local(c, fs, p->binding.name, vals[i], p->loc);
  }
  inline_call call = {.def = def, .site = a->loc, .outer = c->call};
  int64_t *cnt = name_count(c, &c->counters, pd_cmp_fmt(c, "@call.%s", fname));
  call.prefix = cnt ? pd_cmp_fmt(c, "%s_%lld", fname, (long long)(*cnt)++) : fname;
  fs->call = &call;
  c->call = &call;
  c->call_depth++;
  pd_cmp_compile_block(c, def->def.body);
  c->call_depth--;
  pd_callchain_unref(call.chain);  /* the call's ops hold their references */
  c->call = call.outer;
  c->scope = saved_scope;
  return call.ret ? call.ret : VNONE;
}

/* The standard library installed beside the code that runs, or NULL: the pdlang program, or the
 * libpdlang a host program loaded, sits in PREFIX/bin or PREFIX/lib (PREFIX/lib/TRIPLET on a
 * multiarch system), the library in PREFIX/share/pdlang/stdlib. Found at run time, so that the
 * files find each other under whatever prefix they were installed, also when the program was
 * built for another one (PD_STDLIB_DIR is fixed at compile time, and make does not rebuild for a
 * new prefix). */
static const char *installed_stdlib(C *c) {
  static const char anchor; /* an address inside this object file */
  Dl_info info;
  char path[PATH_MAX];
  if (!dladdr(&anchor, &info) || !info.dli_fname) return NULL;
  /* The main program's name may be relative, or bare when found on PATH: ask the kernel. */
  const char *self = strchr(info.dli_fname, '/') ? info.dli_fname : "/proc/self/exe";
  if (!realpath(self, path)) return NULL;
  char *slash = strrchr(path, '/');
  if (!slash) return NULL;
  *slash = '\0';
  static const char *const up[] = {"/..", "/../.."};
  for (size_t i = 0; i < PD_ARRAY_LEN(up); i++) {
    const char *dir = pd_cmp_fmt(c, "%s%s/share/pdlang/stdlib", path, up[i]);
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return dir;
  }
  return NULL;
}

/* find_module's search; *dir (when not NULL) gets the first path that named a folder, *std
 * whether the module is one of the standard library's. */
static const char *find_module(C *c, const char *name, const char *from_file, pd_buf *tried,
                               const char **dir, bool *std) {
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
  int first_std = nd;
  const char *installed = c->opts && c->opts->stdlib_dir ? NULL : installed_stdlib(c);
  if (installed) dirs[nd++] = installed;
  dirs[nd++] = c->opts && c->opts->stdlib_dir ? c->opts->stdlib_dir : PD_STDLIB_DIR;
#ifdef PD_SRC_STDLIB_DIR
  if (!(c->opts && c->opts->stdlib_dir)) dirs[nd++] = PD_SRC_STDLIB_DIR;
#endif
  int end_std = nd;
  const char *slash = strrchr(from_file, '/');
  dirs[nd++] = slash ? pd_cmp_fmt(c, "%.*s", (int)(slash - from_file), from_file) : ".";
  bool has_ext = strlen(name) > 3 && strcmp(name + strlen(name) - 3, ".pd") == 0;
  for (int i = 0; i < nd; i++) {
    const char *path = strcmp(dirs[i], ".") == 0  /* beside a script named without a folder */
                           ? pd_cmp_fmt(c, "%s%s", name, has_ext ? "" : ".pd")
                           : pd_cmp_fmt(c, "%s/%s%s", dirs[i], name, has_ext ? "" : ".pd");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      *std = i >= first_std && i < end_std;
      return path;
    }
    if (dir && !*dir && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) *dir = path;
    pd_buf_printf(tried, "%s%s", i ? ", " : "", dirs[i]);
  }
  return NULL;
}


void pd_cmp_compile_import(C *c, const pd_ast_node *s) {
  if (c->scope->kind != SC_GLOBAL || c->call) {
    pd_cmp_error(c, s->loc, "'import' is only allowed at the top level of a script");
    return;
  }
  const char *name = s->import.path.data;
  if (memchr(name, '\0', s->import.path.len) || !*name) {
    pd_cmp_error(c, s->loc, "bad module name");
    return;
  }
  if (c->nimporting >= PD_CMP_MAX_IMPORT_DEPTH) {
    /* The chain's first and last files: main.pd -> a.pd -> b.pd -> ... -> z.pd. */
    pd_buf chain;
    pd_buf_init(&chain);
    for (int j = 0; j < c->nimporting; j++) {
      if (j == 3 && c->nimporting > 5) {
        pd_buf_puts(&chain, " -> ...");
        j = c->nimporting - 2;
      }
      const char *f = c->importing[j], *slash = strrchr(f, '/');
      pd_buf_printf(&chain, "%s%s", j ? " -> " : "", slash ? slash + 1 : f);
    }
    pd_cmp_error(c, s->loc, "imports nested more than %d deep (%s): import the modules from "
                 "fewer levels", PD_CMP_MAX_IMPORT_DEPTH,
                 chain.oom || !chain.data ? "..." : chain.data);
    pd_buf_free(&chain);
    return;
  }
  pd_buf tried;
  pd_buf_init(&tried);
  const char *dir = NULL;
  bool std = false;
  const char *path = find_module(c, name, s->loc.file, &tried, &dir, &std);
  if (!path) {
    if (dir)
      pd_cmp_error(c, s->loc, "cannot import '%s': '%s' is a directory, not a module", name,
                   dir);
    else
      pd_cmp_error(c, s->loc, "cannot find module '%s' (looked in %s)", name,
                   tried.data ? tried.data : "");
    pd_buf_free(&tried);
    return;
  }
  pd_buf_free(&tried);
  char *real = realpath(path, NULL);
  const char *key = real ? pd_cmp_strdup(c, real) : path;
  free(real);
  if (!key) return;  /* out of memory (c->oom set) */
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
  int64_t *done = name_count(c, &c->modules, key);
  if (!done || *done) return; /* imported once */
  *done = 1;
  pd_source *msrc;
  pd_error e = {0};
  if (pd_source_open(path, &msrc, &e)) {
    pd_cmp_error(c, s->loc, "cannot import '%s': %s", name, e.msg ? e.msg : "error");
    pd_error_clear(&e);
    return;
  }
  if (std) {  /* messages name it <stdlib>/layers.pd, wherever pdlang is installed */
    const char *base = strrchr(path, '/');
    char *shown = pd_strdup(pd_cmp_fmt(c, "<stdlib>/%s", base ? base + 1 : path));
    if (!shown) {
      pd_source_free(msrc);
      c->oom = true;
      return;
    }
    pd_free(msrc->name);
    msrc->name = shown;
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
  pd_cmp_compile_block(c, prog);
  c->nimporting--;
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

typedef struct unit_sources {
  const pd_unit *unit;
  const pd_source *main;
} unit_sources;

static const pd_source *find_unit_source(void *ctx, const char *file) {
  const unit_sources *us = ctx;
  return pd_unit_source(us->unit, us->main, file);
}

void pd_unit_render_error(pd_buf *out, const pd_unit *unit, const pd_source *main,
                          const pd_error *err) {
  unit_sources us = {unit, main};
  pd_diag_render_error_in(out, find_unit_source, &us, err);
}

/* ------------------------------------------------------------------------------------------ */
/* Overrides of top-level bindings (pd_compile_options.sets: `pdlang run --set NAME=VALUE`).   */

/* The literal kind of a binding's value (INT, FLOAT, BOOL, STRING; a negative number is a
 * UNARY NEG over INT or FLOAT), or PD_AST_KIND_COUNT_ when it is an expression. */
static pd_ast_kind literal_kind(const pd_ast_node *v) {
  if (v->kind == PD_AST_UNARY && v->unary.op == PD_AST_OP_NEG &&
      (v->unary.operand->kind == PD_AST_INT || v->unary.operand->kind == PD_AST_FLOAT))
    return v->unary.operand->kind;
  if (v->kind == PD_AST_INT || v->kind == PD_AST_FLOAT || v->kind == PD_AST_BOOL ||
      v->kind == PD_AST_STRING)
    return v->kind;
  return PD_AST_KIND_COUNT_;
}

/* The top-level statement binding `name` alone (`name = e`, `let name = e`); i-th from *from. */
static pd_ast_node *top_binding(pd_ast_node *prog, const char *name, size_t *from) {
  for (size_t i = *from; i < prog->block.stmts.len; i++) {
    pd_ast_node *st = prog->block.stmts.items[i];
    if (st->kind != PD_AST_ASSIGN && st->kind != PD_AST_LET) continue;
    for (size_t t = 0; t < st->assign.targets.len; t++)
      if (strcmp(st->assign.targets.items[t]->name.id, name) == 0) {
        *from = i + 1;
        return st;
      }
  }
  return NULL;
}

/* The literal node of `text` read as kind (negative numbers as NEG over the number); NULL with
 * *bad set when text is not of that kind, NULL alone on out of memory. */
static pd_ast_node *set_literal(C *c, pd_ast_kind kind, const char *text, pd_loc loc, bool *bad) {
  *bad = false;
  bool neg = false;
  const char *num = text;
  if (kind == PD_AST_INT || kind == PD_AST_FLOAT) {
    while (*num == ' ') num++;
    neg = *num == '-';
    if (neg || *num == '+') num++;
    if (!(*num >= '0' && *num <= '9') && *num != '.') {
      *bad = true;
      return NULL;
    }
  }
  pd_ast_node *lit = NULL;
  char *end;
  errno = 0;
  if (kind == PD_AST_INT) {
    long long v = strtoll(num, &end, 10);
    if (*end || errno) {
      *bad = true;
      return NULL;
    }
    if ((lit = pd_ast_new(c->arena, PD_AST_INT, loc))) lit->int_value = v;
  } else if (kind == PD_AST_FLOAT) {
    double v = strtod(num, &end);
    if (*end || errno || !isfinite(v)) {
      *bad = true;
      return NULL;
    }
    if ((lit = pd_ast_new(c->arena, PD_AST_FLOAT, loc))) lit->float_value = v;
  } else if (kind == PD_AST_BOOL) {
    if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0) {
      *bad = true;
      return NULL;
    }
    if ((lit = pd_ast_new(c->arena, PD_AST_BOOL, loc))) lit->bool_value = text[0] == 't';
  } else {
    size_t n = strlen(text);
    if ((lit = pd_ast_new(c->arena, PD_AST_STRING, loc)) &&
        (lit->str.data = pd_ast_strndup(c->arena, text, n)))
      lit->str.len = n;
    else
      lit = NULL;
  }
  if (!lit || !neg) return lit;
  pd_ast_node *u = pd_ast_new(c->arena, PD_AST_UNARY, loc);
  if (!u) return NULL;
  u->unary.op = PD_AST_OP_NEG;
  u->unary.operand = lit;
  pd_ast_update_height(u);
  return u;
}

static const char *literal_phrase(pd_ast_kind k) {
  return k == PD_AST_INT     ? "an integer"
         : k == PD_AST_FLOAT ? "a number"
         : k == PD_AST_BOOL  ? "a boolean (true or false)"
                             : "a string";
}

/* Apply opts->sets to the parsed main script; errors go to the diags. */
static void apply_sets(C *c, pd_ast_node *prog) {
  for (int k = 0; c->opts && k < c->opts->nsets; k++) {
    const pd_compile_set *s = &c->opts->sets[k];
    size_t from = 0;
    pd_ast_node *st = top_binding(prog, s->name, &from);
    if (!st) {
      const char *best = NULL;
      int bestd = 1000;
      for (size_t i = 0; i < prog->block.stmts.len; i++) {
        const pd_ast_node *b = prog->block.stmts.items[i];
        if (b->kind != PD_AST_ASSIGN && b->kind != PD_AST_LET) continue;
        for (size_t t = 0; t < b->assign.targets.len; t++)
          pd_suggest_consider(s->name, b->assign.targets.items[t]->name.id, &best, &bestd);
      }
      pd_cmp_error(c, (pd_loc){.file = c->main_src->name}, "%s: the script binds no '%s' at its "
                   "top level%s", s->option, s->name,
                   best ? pd_cmp_fmt(c, " (did you mean '%s'?)", best) : "");
      continue;
    }
    pd_ast_node *again = top_binding(prog, s->name, &from);
    if (again) {
      pd_cmp_error(c, again->loc, "%s: '%s' is bound at the top level on line %d and again "
                   "here: --set overrides a name bound once", s->option, s->name, st->loc.line);
      continue;
    }
    pd_ast_kind kind = st->assign.targets.len == 1 ? literal_kind(st->assign.value)
                                                   : PD_AST_KIND_COUNT_;
    if (kind == PD_AST_KIND_COUNT_) {
      pd_cmp_error(c, st->assign.value->loc, "%s: '%s' is bound on line %d to %s, not to a "
                   "literal number, string or boolean, which --set can replace", s->option,
                   s->name, st->loc.line, pd_ast_kind_phrase(st->assign.value->kind));
      continue;
    }
    bool bad;
    pd_ast_node *lit = set_literal(c, kind, s->value, st->assign.value->loc, &bad);
    if (bad) {
      pd_cmp_error(c, st->assign.value->loc, "%s: '%s' (line %d) is %s, not '%s'", s->option,
                   s->name, st->loc.line, literal_phrase(kind), s->value);
      continue;
    }
    if (!lit) {
      c->oom = true;
      return;
    }
    st->assign.value = lit;
  }
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
  pd_status st = PD_OK;
  if (!c.arena || !u->main || !u->startup) {
    st = PD_ENOMEM;
    goto done;
  }
  pd_ast_node *prog;
  int errors_before = diags->nerrors;
  st = pd_parse(src, c.arena, diags, &prog);
  if (st) goto done;
  apply_sets(&c, prog);
  if (c.oom || diags->nerrors > errors_before) {
    st = c.oom ? PD_ENOMEM : PD_ECOMPILE;
    goto done;
  }
  c.block = u->main->blocks[0];
  if (!pd_cmp_scope_push(&c, SC_GLOBAL, NULL)) {
    st = PD_ENOMEM;
    goto done;
  }
  pd_cmp_compile_block(&c, prog);
  if (c.oom) st = PD_ENOMEM;
  else if (diags->nerrors > errors_before) st = PD_ECOMPILE;
done:
  priv->sources = c.sources;
  priv->nsources = c.nsources;
  pd_free(c.importing);
  pd_cmp_models_free(&c);
  pd_cmp_scopes_free(&c);
  pd_strmap_free(&c.counters);
  pd_strmap_free(&c.modules);
  if (st) {
    pd_unit_free(u);
    return st;
  }
  *out = u;
  return PD_OK;
}

