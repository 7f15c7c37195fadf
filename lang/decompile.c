/* decompile.c -- a saved inference program as .pd source (lang/decompile.h): data() for its
 * feed targets, param() for its parameters, op() for each op or a layer's or builtin's call for
 * a run of them (verified by compiling the script), load() and save(). Control flow is the
 * language's while / if / else where it maps back (verified by compiling the script too); else
 * an op that runs a block (conditional_block, while) is written with its block as a body,
 * op(...) { ... }, and a var of a block that a block below it writes first is declared before,
 * declare(shape). Each var
 * has one identifier, made at its first use: vars are told apart by the block that declares them
 * (Fluid's visibility: a block sees its own vars and its parents'). */
#include "config.h"
#include "lang/decompile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "lang/compile.h"
#include "vm/ir/params.h"
#include "vm/ops/ops.h"

typedef struct dc {
  const pd_model *m;
  const pd_block *b;
  pd_buf *out;
  pd_error *err;
  pd_strmap ident;   /* "BLOCK:name" (the block declaring the var) -> its identifier (heap
                        strings, owned by taken's values, freed at the end) */
  pd_strmap taken;   /* identifiers used */
  int depth;         /* block ops around the op being written (its indentation) */
  bool oom;          /* a key could not be made (defined() said no) */
  struct layers *ls;  /* the layer calls proposed for block 0's ops (NULL: none) */
  size_t scanned;    /* out->data up to here has been counted in line */
  int line;          /* out's line (1-based) at `scanned` */
  bool readable;     /* control flow as the language's if / while where it maps back */
  bool rebind;       /* writing such a body: an op's write of a var made before is written as
                        an assignment of its name (`y = op(...)`, `y = x` for assign) */
  int lifted;        /* the if / while statements written */
  const pd_strmap *reads; /* var name -> how many op inputs (any block) and fetches name it */
  const pd_strmap *writes; /* var name -> how many op outputs name it */
  pd_strmap consumed;     /* "BLOCK:INDEX" of the ops an if on one element stands for
                             besides its conditional_block (its else's, cast, select_input) */
} dc;

static const pd_loc nowhere = {0};

static pd_status oom(dc *d) { return pd_error_set(d->err, PD_ENOMEM, nowhere, "out of memory"); }

/* The functions of stdlib/layers.pd: no var's identifier may take one of their names. */
static const char *const layer_fns[] = {
    "fc", "conv", "max_pool", "avg_pool", "embedding", "last_step", "first_step",
    "sequence_sum", "sequence_mean", "sequence_max", "batch_norm", "layer_norm", "lstm", "gru",
    "bce_with_logits", "huber", "linear", "drop", "causal_mask", "positional_embedding",
    "multi_head_attention", "transformer_encoder_layer",
};

static bool reserved(const char *s) {
  static const char *const kw[] = {"and", "def", "else", "emit", "false", "for", "if",
                                   "import", "in", "let", "none", "not", "or", "return",
                                   "true", "while"};
  for (size_t i = 0; i < PD_ARRAY_LEN(kw); i++)
    if (strcmp(kw[i], s) == 0) return true;
  if (pd_dtype_from_name(s) >= 0) return true;
  for (size_t i = 0; i < PD_ARRAY_LEN(layer_fns); i++)
    if (strcmp(layer_fns[i], s) == 0) return true;
  pd_buf b;
  pd_buf_init(&b);
  bool bi = pd_builtin_describe(s, &b);
  pd_buf_free(&b);
  return bi;
}

/* The key of var name as an op of block b names it: the block that declares it (b itself for a
 * var no block declares) and the name. Heap string; NULL on out of memory. */
static char *var_key(const pd_block *b, const char *name) {
  const pd_block *o = NULL;
  if (!pd_block_find_var_visible(b, name, &o) || !o) o = b;
  pd_buf k;
  pd_buf_init(&k);
  pd_buf_printf(&k, "%d:%s", o->idx, name);
  char *s = k.oom ? NULL : pd_buf_take(&k);
  pd_buf_free(&k);
  return s;
}

/* The identifier of var name as block b sees it (made and remembered at its first use), or NULL
 * on out of memory. */
static const char *ident(dc *d, const pd_block *blk, const char *name) {
  char *key = var_key(blk, name);
  if (!key) return NULL;
  const char *have = pd_strmap_get_ptr(&d->ident, key);
  if (have) {
    pd_free(key);
    return have;
  }
  pd_buf b;
  pd_buf_init(&b);
  if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_'))
    pd_buf_puts(&b, "v_");
  for (const char *p = name; *p; p++) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_';
    pd_buf_printf(&b, "%c", ok ? ch : '_');
  }
  if (!b.oom && reserved(b.data)) {
    pd_buf t;
    pd_buf_init(&t);
    pd_buf_printf(&t, "v_%s", b.data);
    pd_buf_free(&b);
    b = t;
  }
  size_t base = b.len;
  for (int k = 2; !b.oom && pd_strmap_find(&d->taken, b.data); k++) {
    b.len = base;
    b.data[base] = 0;
    pd_buf_printf(&b, "_%d", k);
  }
  char *s = b.oom ? NULL : pd_buf_take(&b);
  pd_buf_free(&b);
  bool added;
  pd_strmap_entry *e1 = s ? pd_strmap_add(&d->taken, s, &added) : NULL;
  pd_strmap_entry *e2 = e1 ? pd_strmap_add(&d->ident, key, &added) : NULL;
  pd_free(key);
  if (!e2) {
    if (e1) pd_strmap_remove(&d->taken, s);
    pd_free(s);
    return NULL;
  }
  e1->val.p = s;
  e2->val.p = s;
  return s;
}

/* Whether var name, as block b sees it, has an identifier already. */
static bool defined(dc *d, const pd_block *b, const char *name) {
  char *key = var_key(b, name);
  if (!key) {
    d->oom = true;
    return false;
  }
  bool r = pd_strmap_find(&d->ident, key) != NULL;
  pd_free(key);
  return r;
}

static void indent(dc *d) { pd_buf_printf(d->out, "%*s", 4 * d->depth, ""); }

static void put_str(pd_buf *b, const char *s) {
  pd_buf_puts(b, "\"");
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') pd_buf_printf(b, "\\%c", ch);
    else if (ch == '\n') pd_buf_puts(b, "\\n");
    else if (ch == '\t') pd_buf_puts(b, "\\t");
    else if (ch < 0x20 || ch >= 0x7f) pd_buf_printf(b, "\\x%02x", ch);
    else pd_buf_printf(b, "%c", ch);
  }
  pd_buf_puts(b, "\"");
}

static void put_dims(pd_buf *b, int nd, const int64_t *dims) {
  pd_buf_puts(b, "[");
  for (int i = 0; i < nd; i++) pd_buf_printf(b, "%s%lld", i ? ", " : "", (long long)dims[i]);
  pd_buf_puts(b, "]");
}

/* A float as a literal that reads back as the same value (a number literal always has a '.'
 * or an exponent, so that it is read as a float). */
static pd_status put_float(dc *d, const pd_op_desc *op, const char *attr, double v, bool single) {
  if (!isfinite(v))
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "%s: attribute %s is %g, which a "
                        "script cannot write", op->type, attr, v);
  size_t at = d->out->len;
  pd_buf_put_shortest(d->out, v, single);
  if (!d->out->oom && !strpbrk(d->out->data + at, ".eEn")) pd_buf_puts(d->out, ".0");
  return PD_OK;
}

/* `, name = value` for an attribute a script can set; nothing for a list type it cannot set
 * when the list is empty (the registry's default), else PD_EUNSUPPORTED. */
static pd_status put_attr(dc *d, const pd_op_desc *op, const pd_attr *a) {
  pd_buf *b = d->out;
  pd_status st = PD_OK;
  switch (a->type) {
  case PD_ATTR_INT: pd_buf_printf(b, ", %s = %d", a->name, (int)a->v.i); break;
  case PD_ATTR_LONG: pd_buf_printf(b, ", %s = %lld", a->name, (long long)a->v.l); break;
  case PD_ATTR_BOOLEAN: pd_buf_printf(b, ", %s = %s", a->name, a->v.b ? "true" : "false"); break;
  case PD_ATTR_FLOAT:
  case PD_ATTR_FLOAT64:
    pd_buf_printf(b, ", %s = ", a->name);
    st = put_float(d, op, a->name, a->type == PD_ATTR_FLOAT ? a->v.f : a->v.d,
                   a->type == PD_ATTR_FLOAT);
    break;
  case PD_ATTR_STRING:
    pd_buf_printf(b, ", %s = ", a->name);
    put_str(b, a->v.s ? a->v.s : "");
    break;
  case PD_ATTR_STRINGS:
    if (a->n == 0) break;  /* the registry's default */
    pd_buf_printf(b, ", %s = [", a->name);
    for (int i = 0; i < a->n; i++) {
      if (i) pd_buf_puts(b, ", ");
      put_str(b, a->strings[i] ? a->strings[i] : "");
    }
    pd_buf_puts(b, "]");
    break;
  case PD_ATTR_INTS:
  case PD_ATTR_LONGS:
  case PD_ATTR_FLOATS:
    pd_buf_printf(b, ", %s = [", a->name);
    for (int i = 0; i < a->n && !st; i++) {
      if (i) pd_buf_puts(b, ", ");
      if (a->type == PD_ATTR_INTS) pd_buf_printf(b, "%d", (int)a->ints[i]);
      else if (a->type == PD_ATTR_LONGS) pd_buf_printf(b, "%lld", (long long)a->longs[i]);
      else st = put_float(d, op, a->name, a->floats[i], true);
    }
    pd_buf_puts(b, "]");
    break;
  default:
    if (pd_attr_type_is_list(a->type) && a->n == 0) break;
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "%s: attribute %s is %s, which a "
                        "script cannot set", op->type, a->name, pd_attr_type_name(a->type));
  }
  return st;
}

/* `Slot = x` or `Slot = [x, y]`, the vars as block b sees them. */
static pd_status put_slot(dc *d, const pd_block *b, const pd_slot *s, bool list) {
  pd_buf_printf(d->out, ", %s = %s", s->param, list ? "[" : "");
  for (int k = 0; k < s->nargs; k++) {
    const char *id = ident(d, b, s->args[k]);
    if (!id) return oom(d);
    pd_buf_printf(d->out, "%s%s", k ? ", " : "", id);
  }
  if (list) pd_buf_puts(d->out, "]");
  return PD_OK;
}

/* " of block N" after an op's index in messages, for an op of a block under block 0, in buf. */
static const char *of_block(char buf[32], const pd_block *b) {
  buf[0] = 0;
  if (b->idx) snprintf(buf, 32, " of block %d", b->idx);
  return buf;
}

/* The op's sub-block (its BLOCK attribute), NULL when it runs none; PD_EUNSUPPORTED for what a
 * body cannot say. */
static pd_status sub_block(dc *d, const pd_block *b, int index, const pd_op_desc *op,
                           const pd_block **sub) {
  char where[32];
  *sub = NULL;
  for (int j = 0; j < op->nattrs; j++) {
    const pd_attr *a = &op->attrs[j];
    if (a->type == PD_ATTR_BLOCKS)
      return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d%s (%s) runs several blocks, "
                          "which a script cannot write", index, of_block(where, b), op->type);
    if (a->type != PD_ATTR_BLOCK) continue;
    const pd_block *s = pd_program_block(d->m->program, a->v.i);
    if (!s || s->parent_idx != b->idx || s == b)
      return pd_error_set(d->err, PD_EFORMAT, nowhere, "op %d (%s): its %s %d is no block "
                          "under block %d", index, op->type, a->name, (int)a->v.i, b->idx);
    *sub = s;
  }
  /* recurrent names vars of its block in its attributes (states, ex_states) and slices its
   * inputs into the block under their own names: nothing a body of op() says */
  if (*sub && strcmp(op->type, "recurrent") == 0)
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (recurrent) names vars of its "
                        "block in its attributes (states, ex_states), which a script cannot say; "
                        "decompile writes conditional_block and while bodies", index);
  return PD_OK;
}

/* Before a block op of block b: `v = declare(...)` for each var of b that an op of its block
 * (or of a block under it) writes before any op of b has: a script's var exists once assigned. */
static pd_status declare_written(dc *d, const pd_block *b, const pd_block *sub) {
  pd_status st = PD_OK;
  for (int i = 0; !st && i < sub->nops; i++) {
    const pd_op_desc *op = sub->ops[i];
    for (int j = 0; !st && j < op->noutputs; j++)
      for (int k = 0; !st && k < op->outputs[j].nargs; k++) {
        const char *name = op->outputs[j].args[k];
        const pd_block *o = NULL;
        if (!strcmp(name, PD_EMPTY_VAR_NAME) || !pd_block_find_var_visible(sub, name, &o) ||
            o != b || defined(d, b, name))
          continue;
        const pd_var_desc *v = pd_block_find_var_local(b, name);
        if (v->type != PD_VAR_LOD_TENSOR)
          return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "var '%s' (%s) of block %d is "
                              "written first in block %d: only a tensor can be declared", name,
                              pd_var_type_name(v->type), b->idx, sub->idx);
        const char *id = ident(d, b, name);
        if (!id) return oom(d);
        indent(d);
        pd_buf_printf(d->out, "%s = declare(", id);
        if (v->ndims >= 0) put_dims(d->out, v->ndims, v->dims);
        const char *sep = v->ndims >= 0 ? ", " : "";
        if (v->dtype != PD_FP32) pd_buf_printf(d->out, "%sdtype = %s", sep, pd_dtype_name(v->dtype));
        if (v->dtype != PD_FP32) sep = ", ";
        if (v->lod_level) pd_buf_printf(d->out, "%slod_level = %d", sep, v->lod_level);
        pd_buf_printf(d->out, ")  # written first in block %d\n", sub->idx);
      }
    const pd_block *inner;
    for (int j = 0; !st && j < op->nattrs; j++)
      if (op->attrs[j].type == PD_ATTR_BLOCK &&
          (inner = pd_program_block(d->m->program, op->attrs[j].v.i)) && inner->parent_idx == sub->idx &&
          inner != sub)
        st = declare_written(d, b, inner);
  }
  return st;
}

static pd_status put_op(dc *d, const pd_block *b, int index, const pd_op_desc *op);
static pd_status put_ops(dc *d, const pd_block *b);

/* Whether var name, as block b sees it, is persistable (a parameter, a running statistic). */
static bool persistable(const pd_block *b, const char *name) {
  const pd_var_desc *v = pd_block_find_var_visible(b, name, NULL);
  return v && v->persistable;
}

/* Whether an op's output var name is a new name of the script: one without an identifier yet,
 * or, in a body written as the language's if / while, any var but a persistable one (a write
 * of the name there is an assignment, which the construct carries out of its block). */
static bool fresh(dc *d, const pd_block *b, const char *name) {
  if (!defined(d, b, name)) return true;
  return d->rebind && strcmp(name, PD_EMPTY_VAR_NAME) && !persistable(b, name);
}

/* ---- Layers: runs of block 0's ops written as a call of the language ----
 * A run of ops that a stdlib layer or a builtin compiles to is proposed as that call (propose);
 * the script is compiled and each call's ops compared with the run it stands for (verify): a
 * call that compiles to other ops (types, attributes, wiring, parameters' shapes and dtypes)
 * is not proposed again, and the script is written anew. What is written is therefore what the
 * compiler makes of it, never a guess. */

typedef enum gkind { G_UNARY, G_BINARY, G_MATMUL, G_POOL, G_FC, G_CONV, G_BN } gkind;

typedef struct group {
  gkind kind;
  int first, n;     /* block 0's ops first .. first + n - 1 */
  bool act;         /* its last op is an activation (act = fn) */
  char *sig;        /* its kind, its ops' types and attributes (heap) */
  int line;         /* its line in the script written last */
} group;

typedef struct layers {
  group *groups;    /* ngroups, in the order of their ops */
  int ngroups;
  group **at;       /* at[i]: the group whose first op is block 0's op i, else NULL */
  bool any_layer;   /* a group calls a stdlib layer: the script imports "layers" */
  pd_strmap reads;  /* var name -> how many op inputs (of any block) and fetch targets name it */
  pd_strmap writes; /* var name -> how many op outputs name it */
  pd_strmap params; /* the parameters */
  pd_strmap outside;  /* the vars an op outside the layers' groups (of any block) names */
  pd_strmap inside;   /* the vars a layer's group names */
  pd_strmap rejected; /* the sigs of groups that compiled to other ops (copied keys) */
} layers;

/* The op types written as a builtin call fn(x), each the builtin's own op (lang/builtins.c). */
static const struct { const char *op, *fn; } unary_fns[] = {
    {"relu", "relu"},       {"sigmoid", "sigmoid"},     {"tanh", "tanh"},
    {"exp", "exp"},         {"log", "log"},             {"sqrt", "sqrt"},
    {"square", "square"},   {"silu", "silu"},           {"gelu", "gelu"},
    {"softmax", "softmax"}, {"relu6", "relu6"},         {"elu", "elu"},
    {"swish", "swish"},     {"leaky_relu", "leaky_relu"}, {"hard_swish", "hard_swish"},
    {"hard_sigmoid", "hard_sigmoid"}, {"logsigmoid", "log_sigmoid"}, {"dropout", "dropout"},
};
/* The elementwise ops written as the language's operators (axis -1: its broadcasting). */
static const struct { const char *op, *sym; } binary_ops[] = {
    {"elementwise_add", "+"}, {"elementwise_sub", "-"},
    {"elementwise_mul", "*"}, {"elementwise_div", "/"},
};

static int64_t count(const pd_strmap *m, const char *key) {
  int64_t v = 0;
  return pd_strmap_get_int(m, key, &v) ? v : 0;
}

static bool bump(pd_strmap *m, const char *key) {
  pd_strmap_entry *e = pd_strmap_add(m, key, NULL);
  if (e) e->val.i++;
  return e != NULL;
}

/* The one var of an op's slot, NULL when the slot is absent, empty or names several. */
static const char *one_var(const pd_slot *s) {
  return s && s->nargs == 1 && strcmp(s->args[0], PD_EMPTY_VAR_NAME) ? s->args[0] : NULL;
}

static bool same_var(const char *a, const char *b) { return a && b && !strcmp(a, b); }

static bool slot_empty(const pd_slot *s) {
  for (int k = 0; k < s->nargs; k++)
    if (strcmp(s->args[k], PD_EMPTY_VAR_NAME)) return false;
  return true;
}

/* Whether every slot of op that names a var is one of ins / outs (NULL-terminated). */
static bool only_slots(const pd_op_desc *op, const char *const *ins, const char *const *outs) {
  for (int pass = 0; pass < 2; pass++) {
    int n = pass ? op->noutputs : op->ninputs;
    const pd_slot *ss = pass ? op->outputs : op->inputs;
    const char *const *ok = pass ? outs : ins;
    for (int j = 0; j < n; j++) {
      bool listed = false;
      for (int k = 0; ok[k] && !listed; k++) listed = !strcmp(ok[k], ss[j].param);
      if (!listed && !slot_empty(&ss[j])) return false;
    }
  }
  return true;
}

/* The builtin that writes op as fn(x), or NULL (dropout's Mask, which the builtin writes
 * too, is for the caller to check unread). */
static const char *unary_fn(const pd_op_desc *op) {
  static const char *const x[] = {"X", NULL}, *const out[] = {"Out", "Mask", NULL};
  for (size_t i = 0; i < PD_ARRAY_LEN(unary_fns); i++)
    if (!strcmp(op->type, unary_fns[i].op))
      return one_var(pd_op_input(op, "X")) && one_var(pd_op_output(op, "Out")) &&
                     only_slots(op, x, out) ? unary_fns[i].fn : NULL;
  return NULL;
}

static const char *binary_sym(const pd_op_desc *op) {
  static const char *const xy[] = {"X", "Y", NULL}, *const out[] = {"Out", NULL};
  const pd_attr *axis = pd_op_attr(op, "axis");
  if (axis && !(axis->type == PD_ATTR_INT && axis->v.i == -1)) return NULL;
  for (size_t i = 0; i < PD_ARRAY_LEN(binary_ops); i++)
    if (!strcmp(op->type, binary_ops[i].op))
      return one_var(pd_op_input(op, "X")) && one_var(pd_op_input(op, "Y")) &&
                     one_var(pd_op_output(op, "Out")) && only_slots(op, xy, out)
                 ? binary_ops[i].sym : NULL;
  return NULL;
}

/* The output a group's op hands on: batch norm's Y, a convolution's Output, else Out. */
static const char *main_out(const pd_op_desc *op) {
  const char *slot = !strcmp(op->type, "batch_norm") ? "Y"
                     : !strcmp(op->type, "conv2d")   ? "Output" : "Out";
  return one_var(pd_op_output(op, slot));
}

/* A var that only the next op of the group reads: no other op, no fetch, written once. */
static bool passes_on(const layers *ls, const char *v) {
  return v && count(&ls->reads, v) == 1 && count(&ls->writes, v) == 1 &&
         !pd_strmap_find(&ls->params, v);
}

static const pd_var_desc *param_var(const layers *ls, const pd_block *b, const char *v) {
  return v && pd_strmap_find(&ls->params, v) ? pd_block_find_var_local(b, v) : NULL;
}

/* `, name = value` of op's attributes that the registry knows (a BLOCK and is_test, which save
 * sets, left out), as put_attr writes them, into b. */
static pd_status attrs_text(const pd_op_desc *op, pd_buf *b) {
  const pd_opdef *def = pd_opdef_lookup(op->type);
  pd_error e = {0};
  dc t = {.out = b, .err = &e};
  pd_status st = PD_OK;
  for (int j = 0; !st && def && j < op->nattrs; j++)
    if (pd_opdef_attr(def, op->attrs[j].name) && op->attrs[j].type != PD_ATTR_BLOCK &&
        strcmp(op->attrs[j].name, "is_test"))
      st = put_attr(&t, op, &op->attrs[j]);
  pd_error_clear(&e);
  return st ? st : b->oom ? PD_ENOMEM : PD_OK;
}

/* `, name = value` of op's attribute name into b as put_attr writes it, the registry's default
 * when op has none (a scalar one: a list default is not written); false when neither. */
static bool attr_or_default(const pd_op_desc *op, const pd_attrdef *ad, pd_buf *b) {
  const pd_attr *a = pd_op_attr(op, ad->name);
  pd_attr dflt = {.name = (char *)ad->name, .type = ad->type};
  if (!a && !ad->required) {
    switch (ad->type) {
    case PD_ATTR_INT: dflt.v.i = (int32_t)ad->def.i; break;
    case PD_ATTR_LONG: dflt.v.l = ad->def.i; break;
    case PD_ATTR_BOOLEAN: dflt.v.b = ad->def.i != 0; break;
    case PD_ATTR_FLOAT: dflt.v.f = (float)ad->def.f; break;
    case PD_ATTR_FLOAT64: dflt.v.d = ad->def.f; break;
    case PD_ATTR_STRING: dflt.v.s = (char *)(ad->def.s ? ad->def.s : ""); break;
    default: return false;
    }
    a = &dflt;
  }
  if (!a) return false;
  pd_error e = {0};
  dc t = {.out = b, .err = &e};
  pd_status st = put_attr(&t, op, a);
  pd_error_clear(&e);
  return !st && !b->oom;
}

/* attrs_text's attributes but those at the registry's default, into b. */
static pd_status attrs_given(const pd_op_desc *op, pd_buf *b) {
  const pd_opdef *def = pd_opdef_lookup(op->type);
  pd_buf t, u;
  pd_buf_init(&t);
  pd_buf_init(&u);
  pd_status st = PD_OK;
  for (int j = 0; !st && def && j < op->nattrs; j++) {
    const pd_attrdef *ad = pd_opdef_attr(def, op->attrs[j].name);
    if (!ad || ad->type == PD_ATTR_BLOCK || !strcmp(ad->name, "is_test")) continue;
    pd_op_desc none = {.type = op->type};  /* no attributes: the default */
    pd_buf_clear(&t);
    pd_buf_clear(&u);
    if (!attr_or_default(op, ad, &t)) st = t.oom ? PD_ENOMEM : PD_EUNSUPPORTED;
    else if (!attr_or_default(&none, ad, &u) || strcmp(t.data, u.data)) pd_buf_puts(b, t.data);
  }
  pd_buf_free(&t);
  pd_buf_free(&u);
  return st ? st : b->oom ? PD_ENOMEM : PD_OK;
}

/* Complete g (kind, first, n, act set) with its sig; false when it was rejected before (or on
 * out of memory: then no group). */
static bool group_ok(layers *ls, const pd_block *b, group *g) {
  pd_buf s;
  pd_buf_init(&s);
  pd_buf_printf(&s, "%d", (int)g->kind);
  bool ok = true;
  for (int i = 0; ok && i < g->n; i++) {
    pd_buf_printf(&s, "|%s", b->ops[g->first + i]->type);
    ok = attrs_text(b->ops[g->first + i], &s) == PD_OK;
  }
  ok = ok && !s.oom && !pd_strmap_find(&ls->rejected, s.data);
  g->sig = ok ? pd_buf_take(&s) : NULL;
  pd_buf_free(&s);
  return g->sig != NULL;
}

/* Whether op i + 1 of b is an activation of op i's output (the group's last op then). */
static bool act_after(const layers *ls, const pd_block *b, int i) {
  if (i + 1 >= b->nops) return false;
  const pd_op_desc *next = b->ops[i + 1];
  const char *v = main_out(b->ops[i]);
  return unary_fn(next) && strcmp(next->type, "dropout") && passes_on(ls, v) &&
         same_var(one_var(pd_op_input(next, "X")), v);
}

/* A pool2d's arguments as max_pool / avg_pool take them: a square window, equal strides, a
 * max or avg pooling, no padding (any of the pointers may be NULL). The other attributes are
 * left to the comparison. */
static bool pool_args(const pd_op_desc *op, const char **fn, int *size, int *stride) {
  const pd_attr *k = pd_op_attr(op, "ksize"), *s = pd_op_attr(op, "strides");
  const pd_attr *t = pd_op_attr(op, "pooling_type");
  if (!k || k->type != PD_ATTR_INTS || k->n != 2 || k->ints[0] != k->ints[1] || !s ||
      s->type != PD_ATTR_INTS || s->n != 2 || s->ints[0] != s->ints[1] || !t ||
      t->type != PD_ATTR_STRING || !t->v.s || (strcmp(t->v.s, "max") && strcmp(t->v.s, "avg")))
    return false;
  static const char *const off[] = {"adaptive", "ceil_mode", "global_pooling"};
  for (size_t i = 0; i < PD_ARRAY_LEN(off); i++) {
    const pd_attr *a = pd_op_attr(op, off[i]);
    if (a && !(a->type == PD_ATTR_BOOLEAN && !a->v.b)) return false;
  }
  const pd_attr *p = pd_op_attr(op, "paddings"), *alg = pd_op_attr(op, "padding_algorithm");
  for (int i = 0; p && i < p->n; i++)
    if (p->type != PD_ATTR_INTS || p->ints[i]) return false;
  if (alg && (alg->type != PD_ATTR_STRING || !alg->v.s || strcmp(alg->v.s, "EXPLICIT")))
    return false;
  if (fn) *fn = !strcmp(t->v.s, "max") ? "max_pool" : "avg_pool";
  if (size) *size = k->ints[0];
  if (stride) *stride = s->ints[0];
  return true;
}

/* The group at op i of block 0 (the longest of the kinds that fit and were not rejected). */
static bool group_at(layers *ls, const pd_block *b, int i, group *g) {
  const pd_op_desc *op = b->ops[i];
  *g = (group){.first = i, .n = 1};
  if (!strcmp(op->type, "conv2d")) {
    static const char *const ins[] = {"Input", "Filter", NULL}, *const outs[] = {"Output", NULL};
    const pd_var_desc *w = param_var(ls, b, one_var(pd_op_input(op, "Filter")));
    const pd_attr *st = pd_op_attr(op, "strides"), *pad = pd_op_attr(op, "paddings");
    const pd_attr *alg = pd_op_attr(op, "padding_algorithm");
    if (w && w->ndims == 4 && w->dims[2] == w->dims[3] && one_var(pd_op_input(op, "Input")) &&
        main_out(op) && only_slots(op, ins, outs) && st && st->type == PD_ATTR_INTS &&
        st->n == 2 && st->ints[0] == st->ints[1] && pad && pad->type == PD_ATTR_INTS &&
        pad->n == 2 && pad->ints[0] == pad->ints[1] &&
        (!alg || (alg->type == PD_ATTR_STRING && alg->v.s && !strcmp(alg->v.s, "EXPLICIT")))) {
      g->kind = G_CONV;
      const pd_op_desc *add = i + 1 < b->nops ? b->ops[i + 1] : NULL;
      const pd_attr *axis = add ? pd_op_attr(add, "axis") : NULL;
      const pd_var_desc *bias = add ? param_var(ls, b, one_var(pd_op_input(add, "Y"))) : NULL;
      if (add && !strcmp(add->type, "elementwise_add") && axis && axis->type == PD_ATTR_INT &&
          axis->v.i == 1 && bias && bias->ndims == 1 && bias->dims[0] == w->dims[0] &&
          passes_on(ls, main_out(op)) && same_var(one_var(pd_op_input(add, "X")), main_out(op)) &&
          main_out(add))
        g->n = 2;
      g->act = act_after(ls, b, i + g->n - 1);
      g->n += g->act;
      if (group_ok(ls, b, g)) return true;
    }
  }
  if (!strcmp(op->type, "mul") && i + 1 < b->nops) {
    static const char *const ins[] = {"X", "Y", NULL}, *const outs[] = {"Out", NULL};
    const pd_op_desc *add = b->ops[i + 1];
    const pd_var_desc *w = param_var(ls, b, one_var(pd_op_input(op, "Y")));
    const pd_var_desc *bias = param_var(ls, b, one_var(pd_op_input(add, "Y")));
    if (w && w->ndims == 2 && bias && bias->ndims == 1 && bias->dims[0] == w->dims[1] &&
        one_var(pd_op_input(op, "X")) && only_slots(op, ins, outs) &&
        !strcmp(add->type, "elementwise_add") && passes_on(ls, main_out(op)) &&
        same_var(one_var(pd_op_input(add, "X")), main_out(op)) && main_out(add)) {
      g->kind = G_FC;
      g->act = act_after(ls, b, i + 1);
      g->n = 2 + g->act;
      if (group_ok(ls, b, g)) return true;
    }
  }
  if (!strcmp(op->type, "batch_norm")) {
    /* the stdlib's batch_norm(name = P) names its parameters P.w_0, P.b_0, P.w_1, P.w_2 */
    const char *scale = one_var(pd_op_input(op, "Scale"));
    size_t n = scale ? strlen(scale) : 0;
    bool named = n > 4 && !strcmp(scale + n - 4, ".w_0");
    static const char *const slots[] = {"Scale", "Bias", "Mean", "Variance"};
    static const char *const sfx[] = {".w_0", ".b_0", ".w_1", ".w_2"};
    for (int k = 0; named && k < 4; k++) {
      const char *v = one_var(pd_op_input(op, slots[k]));
      named = param_var(ls, b, v) && strlen(v) == n && !strncmp(v, scale, n - 4) &&
              !strcmp(v + n - 4, sfx[k]);
    }
    const char *y = main_out(op), *sm = one_var(pd_op_output(op, "SavedMean"));
    const char *sv = one_var(pd_op_output(op, "SavedVariance"));
    const pd_slot *rs = pd_op_output(op, "ReserveSpace");
    static const char *const off[] = {"use_global_stats", "trainable_statistics"};
    for (size_t k = 0; k < PD_ARRAY_LEN(off) && named; k++) {
      const pd_attr *a = pd_op_attr(op, off[k]);
      named = !a || (a->type == PD_ATTR_BOOLEAN && !a->v.b);
    }
    if (named && y && one_var(pd_op_input(op, "X")) &&
        same_var(one_var(pd_op_input(op, "Mean")), one_var(pd_op_output(op, "MeanOut"))) &&
        same_var(one_var(pd_op_input(op, "Variance")), one_var(pd_op_output(op, "VarianceOut"))) &&
        (!sm || count(&ls->reads, sm) == 0) && (!sv || count(&ls->reads, sv) == 0) &&
        (!rs || slot_empty(rs) || (one_var(rs) && count(&ls->reads, one_var(rs)) == 0))) {
      g->kind = G_BN;
      g->act = act_after(ls, b, i);
      g->n = 1 + g->act;
      if (group_ok(ls, b, g)) return true;
    }
  }
  *g = (group){.first = i, .n = 1};
  static const char *const xy[] = {"X", "Y", NULL}, *const out[] = {"Out", NULL};
  if (binary_sym(op)) g->kind = G_BINARY;
  else if (!strcmp(op->type, "pool2d") && pool_args(op, NULL, NULL, NULL) &&
           one_var(pd_op_input(op, "X")) && main_out(op) && only_slots(op, xy, out))
    g->kind = G_POOL;
  else if (!strcmp(op->type, "matmul_v2") && one_var(pd_op_input(op, "X")) &&
           one_var(pd_op_input(op, "Y")) && main_out(op) && only_slots(op, xy, out))
    g->kind = G_MATMUL;
  else if (unary_fn(op) && (!pd_op_output(op, "Mask") || slot_empty(pd_op_output(op, "Mask")) ||
                            (one_var(pd_op_output(op, "Mask")) &&
                             count(&ls->reads, one_var(pd_op_output(op, "Mask"))) == 0)))
    g->kind = G_UNARY;
  else return false;
  return group_ok(ls, b, g);
}

static void groups_clear(layers *ls) {
  for (int i = 0; i < ls->ngroups; i++) pd_free(ls->groups[i].sig);
  ls->ngroups = 0;
  ls->any_layer = false;
  pd_strmap_free(&ls->outside);
  pd_strmap_init(&ls->outside, false);
  pd_strmap_free(&ls->inside);
  pd_strmap_init(&ls->inside, false);
}

/* Propose the groups of block 0, those rejected before excepted. PD_ENOMEM. */
static pd_status propose(layers *ls, const pd_model *m) {
  const pd_block *b = m->program->blocks[0];
  groups_clear(ls);
  for (int i = 0; i < b->nops; i++) ls->at[i] = NULL;
  for (int i = 0; i < b->nops;) {
    group g;
    if (!group_at(ls, b, i, &g)) {
      i++;
      continue;
    }
    /* the output a call assigns is a var of its own: written once, not a parameter or input */
    const char *out = main_out(b->ops[i + g.n - 1]);
    if (!out || count(&ls->writes, out) != 1 || pd_strmap_find(&ls->params, out)) {
      pd_free(g.sig);
      i++;
      continue;
    }
    ls->groups[ls->ngroups++] = g;
    ls->any_layer |= g.kind == G_POOL || g.kind == G_FC || g.kind == G_CONV || g.kind == G_BN;
    i += g.n;
  }
  for (int k = 0; k < ls->ngroups; k++) ls->at[ls->groups[k].first] = &ls->groups[k];
  /* the vars the other ops name: a parameter only layers name is made by them */
  for (int bi = 0; bi < m->program->nblocks; bi++) {
    const pd_block *bk = m->program->blocks[bi];
    for (int i = 0; i < bk->nops; i++) {
      const group *g = bi == 0 ? ls->at[i] : NULL;
      bool layer = g && (g->kind == G_FC || g->kind == G_CONV || g->kind == G_BN);
      for (int n = 0; n < (layer ? g->n : 1); n++) {
        const pd_op_desc *op = bk->ops[i + n];
        for (int pass = 0; pass < 2; pass++)
          for (int j = 0; j < (pass ? op->noutputs : op->ninputs); j++) {
            const pd_slot *s = pass ? &op->outputs[j] : &op->inputs[j];
            for (int k = 0; k < s->nargs; k++)
              if (!bump(layer ? &ls->inside : &ls->outside, s->args[k])) return PD_ENOMEM;
          }
      }
      if (layer) i += g->n - 1;
    }
  }
  for (int i = 0; i < m->nfetches; i++)
    if (!bump(&ls->outside, m->fetches[i].var)) return PD_ENOMEM;
  return PD_OK;
}

static void layers_free(layers *ls) {
  if (!ls) return;
  groups_clear(ls);
  pd_free(ls->groups);
  pd_free(ls->at);
  pd_strmap_free(&ls->reads);
  pd_strmap_free(&ls->writes);
  pd_strmap_free(&ls->params);
  pd_strmap_free(&ls->outside);
  pd_strmap_free(&ls->inside);
  pd_strmap_free(&ls->rejected);
}

static pd_status layers_init(layers *ls, const pd_model *m, const char **params, int np) {
  const pd_program *p = m->program;
  int n = p->blocks[0]->nops;
  *ls = (layers){0};
  pd_strmap_init(&ls->reads, false);
  pd_strmap_init(&ls->writes, false);
  pd_strmap_init(&ls->params, false);
  pd_strmap_init(&ls->outside, false);
  pd_strmap_init(&ls->inside, false);
  pd_strmap_init(&ls->rejected, true);
  ls->groups = pd_calloc((size_t)n + 1, sizeof *ls->groups);
  ls->at = pd_calloc((size_t)n + 1, sizeof *ls->at);
  if (!ls->groups || !ls->at) return PD_ENOMEM;
  for (int bi = 0; bi < p->nblocks; bi++)
    for (int i = 0; i < p->blocks[bi]->nops; i++) {
      const pd_op_desc *op = p->blocks[bi]->ops[i];
      for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < (pass ? op->noutputs : op->ninputs); j++) {
          const pd_slot *s = pass ? &op->outputs[j] : &op->inputs[j];
          for (int k = 0; k < s->nargs; k++)
            if (!bump(pass ? &ls->writes : &ls->reads, s->args[k])) return PD_ENOMEM;
        }
    }
  for (int i = 0; i < m->nfetches; i++)
    if (!bump(&ls->reads, m->fetches[i].var)) return PD_ENOMEM;
  for (int i = 0; i < np; i++)
    if (!bump(&ls->params, params[i])) return PD_ENOMEM;
  return PD_OK;
}

/* `act = fn, ` of a group whose last op is an activation. */
static void put_act(dc *d, const group *g) {
  if (g->act) pd_buf_printf(d->out, ", act = %s", unary_fn(d->b->ops[g->first + g->n - 1]));
}

/* One group as `y = call  # ops i-j`. */
static pd_status put_group(dc *d, group *g) {
  const pd_block *b = d->b;
  const pd_op_desc *op = b->ops[g->first], *last = b->ops[g->first + g->n - 1];
  const char *xs = one_var(pd_op_input(op, g->kind == G_CONV ? "Input" : "X"));
  bool two = g->kind == G_BINARY || g->kind == G_MATMUL;
  if (!defined(d, b, xs) || (two && !defined(d, b, one_var(pd_op_input(op, "Y")))))
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (%s) reads a var which no op "
                        "before it writes", g->first, op->type);
  for (; d->scanned < d->out->len; d->scanned++) d->line += d->out->data[d->scanned] == '\n';
  g->line = d->line;
  const char *x = ident(d, b, xs), *y = ident(d, b, main_out(last));
  if (!x || !y) return oom(d);
  pd_buf *o = d->out;
  pd_buf_printf(o, "%s = ", y);
  switch (g->kind) {
  case G_UNARY:
  case G_MATMUL: { /* the builtin, its attributes by keyword as op() writes them */
    const char *z = g->kind == G_MATMUL ? ident(d, b, one_var(pd_op_input(op, "Y"))) : "";
    if (!z) return oom(d);
    pd_buf_printf(o, "%s(%s%s%s", g->kind == G_MATMUL ? "matmul" : unary_fn(op), x,
                  *z ? ", " : "", z);
    pd_status st = attrs_given(op, o);
    if (st) return st == PD_ENOMEM ? oom(d) : st;
    pd_buf_puts(o, ")");
    break;
  }
  case G_POOL: {
    const char *fn;
    int size, stride;
    pool_args(op, &fn, &size, &stride);
    pd_buf_printf(o, "%s(%s, %d", fn, x, size);
    if (stride != size) pd_buf_printf(o, ", stride = %d", stride);
    pd_buf_puts(o, ")");
    break;
  }
  case G_BINARY: {
    const char *z = ident(d, b, one_var(pd_op_input(op, "Y")));
    if (!z) return oom(d);
    pd_buf_printf(o, "%s %s %s", x, binary_sym(op), z);
    break;
  }
  case G_FC: {
    const pd_var_desc *w = pd_block_find_var_local(b, one_var(pd_op_input(op, "Y")));
    pd_buf_printf(o, "fc(%s, %lld", x, (long long)w->dims[1]);
    put_act(d, g);
    pd_buf_puts(o, ", name = ");
    put_str(o, w->name);
    pd_buf_puts(o, ", bias_name = ");
    put_str(o, one_var(pd_op_input(b->ops[g->first + 1], "Y")));
    pd_buf_puts(o, ")");
    break;
  }
  case G_CONV: {
    const pd_var_desc *w = pd_block_find_var_local(b, one_var(pd_op_input(op, "Filter")));
    bool bias = g->n - g->act == 2;
    int s = pd_op_attr(op, "strides")->ints[0], p = pd_op_attr(op, "paddings")->ints[0];
    pd_buf_printf(o, "conv(%s, %lld, %lld", x, (long long)w->dims[0], (long long)w->dims[2]);
    if (s != 1) pd_buf_printf(o, ", stride = %d", s);
    if (p) pd_buf_printf(o, ", padding = %d", p);
    put_act(d, g);
    if (!bias) pd_buf_puts(o, ", bias = false");
    pd_buf_puts(o, ", name = ");
    put_str(o, w->name);
    if (bias) {
      pd_buf_puts(o, ", bias_name = ");
      put_str(o, one_var(pd_op_input(b->ops[g->first + 1], "Y")));
    }
    pd_buf_puts(o, ")");
    break;
  }
  case G_BN: {
    const char *scale = one_var(pd_op_input(op, "Scale"));
    const pd_attr *mo = pd_op_attr(op, "momentum"), *ep = pd_op_attr(op, "epsilon");
    pd_buf_printf(o, "batch_norm(%s", x);
    put_act(d, g);
    pd_status st = PD_OK;
    if (mo && (mo->type == PD_ATTR_FLOAT || mo->type == PD_ATTR_FLOAT64)) {
      pd_buf_puts(o, ", momentum = ");
      st = put_float(d, op, "momentum", mo->type == PD_ATTR_FLOAT ? mo->v.f : mo->v.d,
                     mo->type == PD_ATTR_FLOAT);
    }
    if (!st && ep && (ep->type == PD_ATTR_FLOAT || ep->type == PD_ATTR_FLOAT64)) {
      pd_buf_puts(o, ", epsilon = ");
      st = put_float(d, op, "epsilon", ep->type == PD_ATTR_FLOAT ? ep->v.f : ep->v.d,
                     ep->type == PD_ATTR_FLOAT);
    }
    if (st) return st;
    char *prefix = pd_malloc(strlen(scale) - 3);
    if (!prefix) return oom(d);
    memcpy(prefix, scale, strlen(scale) - 4);
    prefix[strlen(scale) - 4] = 0;
    pd_buf_puts(o, ", name = ");
    put_str(o, prefix);
    pd_buf_puts(o, ")");
    pd_free(prefix);
    break;
  }
  }
  if (g->n == 1) pd_buf_printf(o, "  # op %d\n", g->first);
  else pd_buf_printf(o, "  # ops %d-%d\n", g->first, g->first + g->n - 1);
  return PD_OK;
}


/* ---- Control flow as the language's if / while ----
 * A while op becomes `while (cond) { ... }`; a conditional_block of one element
 * (is_scalar_condition) `if (cond) { ... }`, with the conditional_block of its logical_not after
 * it as the else (`static.nn.cond`'s pair, and the if that pdlang compiles), and a select_input
 * of the pair's results on cast(cond) after them (`static.nn.cond`'s merge) as the assignment
 * of its output at the end of each arm. The if over rows that pdlang compiles (the pair on one
 * condition's rows) likewise: its split_lod_tensor parts are the split var's identifier in the
 * branches, its merge_lod_tensor outputs assigned at the end of each. In such a body a write
 * of a var made before is an assignment of its name (the language carries it out of the block:
 * a while's loop-carried name, an if's output), so each var the body writes must have a name
 * before the statement, be assigned in both arms of an if, be what a branch gives a result, or
 * be read nowhere outside the body. What does not map stays op(...) { ... }; pd_decompile
 * compiles what was written and compares its ops with the model's (check_readable). */

enum { CF_OP, CF_SKIP, CF_WHILE, CF_IF };

typedef struct cfplan {
  int kind;                           /* CF_*: how op i of the block is written */
  int else_op, cast_op, sel_op;       /* CF_IF: the else's conditional_block, select_input's
                                         cast and select_input (-1: none) */
  bool rows;                          /* CF_IF over a batch's rows: split_lod_tensor ops
                                         before it (their parts are the split var in the
                                         branches) and merge_lod_tensor ops after the pair,
                                         sel_op .. sel_op + nres - 1 (their outputs assigned
                                         at the end of each branch) */
  int nres;                           /* the results: 1 with sel_op, else the merges */
} cfplan;

/* The block op's one sub-block when it is a block of b (NULL otherwise). */
static const pd_block *cf_sub(const dc *d, const pd_block *b, const pd_op_desc *op) {
  const pd_block *sub = NULL;
  for (int j = 0; j < op->nattrs; j++) {
    const pd_attr *a = &op->attrs[j];
    if (a->type == PD_ATTR_BLOCKS || (a->type == PD_ATTR_BLOCK && sub)) return NULL;
    if (a->type == PD_ATTR_BLOCK) sub = pd_program_block(d->m->program, a->v.i);
  }
  return sub && sub != b && sub->parent_idx == b->idx ? sub : NULL;
}

static int64_t reads_of(const dc *d, const char *name) { return count(d->reads, name); }
static int64_t reads_in(const pd_program *p, const pd_block *sub, const char *name);

/* Whether no op reads any var of op's output slot (a Scope, StepScopes). */
static bool unread(const dc *d, const pd_op_desc *op, const char *slot) {
  const pd_slot *s = pd_op_output(op, slot);
  for (int k = 0; s && k < s->nargs; k++)
    if (reads_of(d, s->args[k])) return false;
  return true;
}

/* The bool var of one element (or of a shape the file leaves out: the script's var has the
 * one shape inference gives, which the compile of the script checks), as b sees it, that a
 * condition of the language can be. */
static bool cf_cond(const pd_block *b, const char *name) {
  const pd_var_desc *v = name ? pd_block_find_var_visible(b, name, NULL) : NULL;
  if (!v || v->dtype != PD_BOOL || v->type != PD_VAR_LOD_TENSOR) return false;
  for (int i = 0; i < v->ndims; i++)
    if (v->dims[i] != 1) return false;
  return true;
}

/* A conditional_block of b on one element: its Cond var and block (else false); with written,
 * a Cond that the script can write as the if's condition. */
static bool scalar_cb(const dc *d, const pd_block *b, const pd_op_desc *op, const char **cond,
                      const pd_block **sub, bool written) {
  const pd_attr *sc = pd_op_attr(op, "is_scalar_condition");
  *cond = one_var(pd_op_input(op, "Cond"));
  *sub = cf_sub(d, b, op);
  return !strcmp(op->type, "conditional_block") && sc && sc->type == PD_ATTR_BOOLEAN &&
         sc->v.b && *sub && *cond && (!written || cf_cond(b, *cond));
}

/* Whether the Scope vars of an if's conditional_blocks are read by nothing but the else's
 * Scope input (PIR's pair shares one scope). */
static bool scopes_unread(const dc *d, const pd_op_desc *cb, const pd_op_desc *els) {
  const pd_slot *s = pd_op_output(cb, "Scope"), *in = els ? pd_op_input(els, "Scope") : NULL;
  for (int k = 0; s && k < s->nargs; k++) {
    int64_t by_else = 0;
    for (int q = 0; in && q < in->nargs; q++) by_else += !strcmp(in->args[q], s->args[k]);
    if (reads_of(d, s->args[k]) != by_else) return false;
  }
  return !els || unread(d, els, "Scope");
}

/* How many of op's inputs name var name. */
static int64_t op_reads(const pd_op_desc *op, const char *name) {
  int64_t n = 0;
  for (int j = 0; j < op->ninputs; j++)
    for (int k = 0; k < op->inputs[j].nargs; k++) n += !strcmp(op->inputs[j].args[k], name);
  return n;
}

/* An if over rows at op i of b: the conditional_block pair on the rows of one condition
 * (is_scalar_condition false), the split_lod_tensor ops on it before (each part read only in
 * its branch) and the merge_lod_tensor ops after (each part merged only); plan filled. */
static bool rows_if(const dc *d, const pd_block *b, int i, cfplan *plan) {
  const pd_op_desc *op = b->ops[i], *els = i + 1 < b->nops ? b->ops[i + 1] : NULL;
  const char *c = one_var(pd_op_input(op, "Cond"));
  const pd_block *s1 = cf_sub(d, b, op), *s2 = els ? cf_sub(d, b, els) : NULL;
  const pd_attr *a1 = pd_op_attr(op, "is_scalar_condition");
  const pd_attr *a2 = els ? pd_op_attr(els, "is_scalar_condition") : NULL;
  const pd_var_desc *cv = c ? pd_block_find_var_visible(b, c, NULL) : NULL;
  if (strcmp(op->type, "conditional_block") || !els || strcmp(els->type, "conditional_block") ||
      !s1 || !s2 || !a1 || a1->type != PD_ATTR_BOOLEAN || a1->v.b || !a2 ||
      a2->type != PD_ATTR_BOOLEAN || a2->v.b || !cv || cv->dtype != PD_BOOL ||
      !same_var(one_var(pd_op_input(els, "Cond")), c) || !scopes_unread(d, op, NULL) ||
      !scopes_unread(d, els, NULL))
    return false;
  int n = 0;
  for (int k = i + 2; k < b->nops; k++, n++) {
    const pd_op_desc *m = b->ops[k];
    const char *t = one_var(pd_op_input(m, "InTrue")), *f = one_var(pd_op_input(m, "InFalse"));
    if (strcmp(m->type, "merge_lod_tensor") || !same_var(one_var(pd_op_input(m, "X")), c) ||
        !same_var(one_var(pd_op_input(m, "Mask")), c) || !one_var(pd_op_output(m, "Out")) ||
        !t || !f || reads_of(d, t) != 1 || reads_of(d, f) != 1)
      break;
  }
  if (n == 0) return false;
  for (int k = 0; k < i; k++) {  /* the splits: none may be read elsewhere */
    const pd_op_desc *sp = b->ops[k];
    if (strcmp(sp->type, "split_lod_tensor") || !same_var(one_var(pd_op_input(sp, "Mask")), c))
      continue;
    const char *t = one_var(pd_op_output(sp, "OutTrue"));
    const char *f = one_var(pd_op_output(sp, "OutFalse"));
    if (!t || !f || !one_var(pd_op_input(sp, "X")) ||
        reads_of(d, t) != reads_in(d->m->program, s1, t) + op_reads(op, t) ||
        reads_of(d, f) != reads_in(d->m->program, s2, f) + op_reads(els, f))
      return false;
  }
  for (int k = 0; k < i; k++)
    if (!strcmp(b->ops[k]->type, "split_lod_tensor") &&
        same_var(one_var(pd_op_input(b->ops[k], "Mask")), c))
      plan[k].kind = CF_SKIP;
  plan[i] = (cfplan){CF_IF, i + 1, -1, i + 2, true, n};
  for (int k = i + 1; k < i + 2 + n; k++) plan[k].kind = CF_SKIP;
  return true;
}

/* Where the ops of block b are written as if / while (plan[i] for op i). */
static void plan_block(const dc *d, const pd_block *b, cfplan *plan) {
  for (int i = 0; i < b->nops; i++) plan[i] = (cfplan){CF_OP, -1, -1, -1, false, 0};
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    const char *c, *c2;
    const pd_block *s1, *s2;
    if (plan[i].kind != CF_OP) continue;
    if (!strcmp(op->type, "while")) {
      if (cf_sub(d, b, op) && cf_cond(b, one_var(pd_op_input(op, "Condition"))) &&
          unread(d, op, "StepScopes"))
        plan[i].kind = CF_WHILE;
      continue;
    }
    if (rows_if(d, b, i, plan)) continue;
    if (!scalar_cb(d, b, op, &c, &s1, true)) continue;
    plan[i].kind = CF_IF;
    /* the else: the next op (after logical_not of the condition, if there) on its negation */
    int j = i + 1;
    if (j < b->nops && !strcmp(b->ops[j]->type, "logical_not")) j++;
    if (j < b->nops && scalar_cb(d, b, b->ops[j], &c2, &s2, false) && reads_of(d, c2) == 1 &&
        count(d->writes, c2) == 1) {
      int ln = -1;
      for (int k = 0; k < j && ln < 0; k++)
        if (!strcmp(b->ops[k]->type, "logical_not") && plan[k].kind == CF_OP &&
            same_var(one_var(pd_op_output(b->ops[k], "Out")), c2) &&
            same_var(one_var(pd_op_input(b->ops[k], "X")), c))
          ln = k;
      if (ln >= 0 && (ln == i + 1 || j == i + 1) && scopes_unread(d, op, b->ops[j])) {
        plan[i].else_op = j;
        plan[j].kind = plan[ln].kind = CF_SKIP;
      }
    }
    if (plan[i].else_op < 0 && !scopes_unread(d, op, NULL)) {
      plan[i].kind = CF_OP;
      continue;
    }
    /* select_input(X = [false's, true's], Mask = cast(cond)) after the pair */
    int k = (plan[i].else_op >= 0 ? plan[i].else_op : i) + 1;
    const pd_op_desc *cast = k < b->nops ? b->ops[k] : NULL;
    const pd_op_desc *sel = k + 1 < b->nops ? b->ops[k + 1] : NULL;
    const pd_slot *xs = sel ? pd_op_input(sel, "X") : NULL;
    const char *m = cast ? one_var(pd_op_output(cast, "Out")) : NULL;
    if (plan[i].else_op >= 0 && cast && sel && !strcmp(cast->type, "cast") &&
        same_var(one_var(pd_op_input(cast, "X")), c) && reads_of(d, m) == 1 &&
        !strcmp(sel->type, "select_input") && same_var(one_var(pd_op_input(sel, "Mask")), m) &&
        xs && xs->nargs == 2 && one_var(pd_op_output(sel, "Out")) &&
        reads_of(d, xs->args[0]) == 1 && reads_of(d, xs->args[1]) == 1 &&
        strcmp(xs->args[0], xs->args[1])) {
      plan[i].cast_op = k;
      plan[i].sel_op = k + 1;
      plan[i].nres = 1;
      plan[k].kind = plan[k + 1].kind = CF_SKIP;
    }
  }
}

/* Whether block t is block b or under it. */
static bool in_tree(const pd_program *p, const pd_block *b, const pd_block *t) {
  for (int n = 0; t && n <= p->nblocks; n++) {
    if (t == b) return true;
    t = t->parent_idx >= 0 ? pd_program_block(p, t->parent_idx) : NULL;
  }
  return false;
}

/* How many op inputs of block sub and the blocks under it name var name. */
static int64_t reads_in(const pd_program *p, const pd_block *sub, const char *name) {
  int64_t n = 0;
  for (int bi = 0; bi < p->nblocks; bi++) {
    const pd_block *bk = p->blocks[bi];
    if (!in_tree(p, sub, bk)) continue;
    for (int i = 0; i < bk->nops; i++)
      for (int j = 0; j < bk->ops[i]->ninputs; j++)
        for (int k = 0; k < bk->ops[i]->inputs[j].nargs; k++)
          n += !strcmp(bk->ops[i]->inputs[j].args[k], name);
  }
  return n;
}

/* Whether an op of block top (not of a block under it) writes var name. */
static bool top_writes(const pd_block *top, const char *name) {
  for (int i = 0; top && i < top->nops; i++)
    for (int j = 0; j < top->ops[i]->noutputs; j++)
      for (int k = 0; k < top->ops[i]->outputs[j].nargs; k++)
        if (!strcmp(top->ops[i]->outputs[j].args[k], name)) return true;
  return false;
}

/* Result r of an if as planned (its select_input, or its r-th merge_lod_tensor): the var it
 * writes and, into *val, the var of branch side (0: true, 1: false) it takes. */
static const char *result(const pd_block *b, const cfplan *pl, int r, int side,
                          const char **val) {
  const pd_op_desc *op = b->ops[pl->sel_op + r];
  if (pl->rows) *val = one_var(pd_op_input(op, side ? "InFalse" : "InTrue"));
  else *val = pd_op_input(op, "X")->args[side ? 0 : 1];
  return one_var(pd_op_output(op, "Out"));
}

/* Whether var name is what branch side gives a result of the if. */
static bool result_val(const pd_block *b, const cfplan *pl, int side, const char *name) {
  const char *v;
  for (int r = 0; pl && r < pl->nres; r++)
    if (result(b, pl, r, side, &v) && same_var(v, name)) return true;
  return false;
}

/* Whether each var of a block above sub that an op of sub (or under it) writes can be written
 * by the statement at block b: it has a name already, or it is one that both arms of an if
 * assign (other: the other arm, written in both at their own level), or what the branch gives
 * a result (pl, side), or no op outside sub reads it (nor a fetch). */
static bool writes_map(dc *d, const pd_block *b, const pd_block *sub, const pd_block *other,
                       const cfplan *pl, int side) {
  const pd_program *p = d->m->program;
  for (int bi = 0; bi < p->nblocks; bi++) {
    const pd_block *bk = p->blocks[bi];
    if (!in_tree(p, sub, bk)) continue;
    for (int i = 0; i < bk->nops; i++)
      for (int j = 0; j < bk->ops[i]->noutputs; j++)
        for (int k = 0; k < bk->ops[i]->outputs[j].nargs; k++) {
          const char *name = bk->ops[i]->outputs[j].args[k];
          const pd_block *o = NULL;
          if (!strcmp(name, PD_EMPTY_VAR_NAME) || !pd_block_find_var_visible(bk, name, &o) ||
              !o || in_tree(p, sub, o))
            continue;  /* the body's own */
          if (defined(d, b, name) || result_val(b, pl, side, name) ||
              (other && top_writes(sub, name) && top_writes(other, name)))
            continue;
          if (reads_of(d, name) != reads_in(p, sub, name)) return false;
        }
  }
  return !d->oom;
}

/* A body of the language's statement: block sub's ops, one level in, writes as assignments;
 * then `res = val` for each result of an if (pl; side: the branch). */
static pd_status put_body(dc *d, const pd_block *b, const pd_block *sub, const cfplan *pl,
                          int side) {
  bool rebind = d->rebind;
  d->rebind = true;
  d->depth++;
  pd_status st = put_ops(d, sub);
  for (int r = 0; !st && pl && r < pl->nres; r++) {
    const char *val, *res = result(b, pl, r, side, &val);
    const char *id = ident(d, b, res), *v = defined(d, sub, val) ? ident(d, sub, val) : NULL;
    const char *type = pl->rows ? "merge_lod_tensor" : "select_input";
    if (!id || (!v && d->oom)) st = oom(d);
    else if (!v)
      st = pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (%s) reads '%s', which its "
                        "block does not write", pl->sel_op + r, type, val);
    else {
      indent(d);
      pd_buf_printf(d->out, "%s = %s  # op %d (%s)\n", id, v, pl->sel_op + r, type);
    }
  }
  d->depth--;
  d->rebind = rebind;
  return st;
}

/* Before an if over rows at op i: the parts of each split_lod_tensor on its condition c
 * before it (which the plan skips) are the split var's name in the branches. */
static pd_status alias_parts(dc *d, const pd_block *b, int i, const char *c) {
  for (int k = 0; k < i; k++) {
    const pd_op_desc *sp = b->ops[k];
    if (strcmp(sp->type, "split_lod_tensor") ||
        !same_var(one_var(pd_op_input(sp, "Mask")), c))
      continue;
    const char *x = one_var(pd_op_input(sp, "X"));
    if (!defined(d, b, x))
      return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (split_lod_tensor) reads "
                          "'%s', which no op before it writes", k, x);
    const char *id = ident(d, b, x);
    for (int side = 0; id && side < 2; side++) {
      char *key = var_key(b, one_var(pd_op_output(sp, side ? "OutFalse" : "OutTrue")));
      pd_strmap_entry *e = key ? pd_strmap_add(&d->ident, key, NULL) : NULL;
      pd_free(key);
      if (!e) return oom(d);
      e->val.p = (void *)id;
    }
    if (!id) return oom(d);
  }
  return PD_OK;
}

/* `if (...) { ... } else { ... }` or `while (...) { ... }` for op i of b as planned (plan: the
 * block's); *done false (nothing written) when its writes do not map (the op is then written
 * as op() { }). */
static pd_status put_cf(dc *d, const pd_block *b, int i, const cfplan *plan, bool *done) {
  const cfplan *pl = &plan[i];
  const pd_op_desc *op = b->ops[i];
  const pd_block *s1 = cf_sub(d, b, op), *s2 = NULL;
  const char *c = one_var(pd_op_input(op, pl->kind == CF_WHILE ? "Condition" : "Cond"));
  const cfplan *ifp = pl->kind == CF_IF ? pl : NULL;
  char where[32];
  *done = false;
  if (pl->else_op >= 0) s2 = cf_sub(d, b, b->ops[pl->else_op]);
  pd_status st = pl->rows ? alias_parts(d, b, i, c) : PD_OK;
  if (st) return st;
  if (!defined(d, b, c) || !writes_map(d, b, s1, s2, ifp, 0) ||
      (s2 && !writes_map(d, b, s2, s1, ifp, 1))) {
    if (pl->else_op < 0) return d->oom ? oom(d) : PD_OK;  /* op() { } */
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d%s (conditional_block): a var "
                        "its block writes is read after it", i, of_block(where, b));
  }
  const char *cid = ident(d, b, c);
  if (!cid) return oom(d);
  *done = true;
  d->lifted++;
  for (int k = 0; k < 2 + pl->nres; k++) {
    int at = k == 0 ? pl->else_op : k == 1 ? pl->cast_op : pl->sel_op + k - 2;
    char key[48];
    snprintf(key, sizeof key, "%d:%d", b->idx, at);
    if (at >= 0 && !pl->rows && !pd_strmap_add(&d->consumed, key, NULL)) return oom(d);
  }
  indent(d);
  pd_buf_printf(d->out, "%s (%s) {  # op %d%s (%s)\n", pl->kind == CF_WHILE ? "while" : "if", cid,
                i, of_block(where, b), op->type);
  st = put_body(d, b, s1, ifp, 0);
  if (!st && s2) {
    indent(d);
    pd_buf_printf(d->out, "} else {  # op %d%s (conditional_block)\n", pl->else_op,
                  of_block(where, b));
    st = put_body(d, b, s2, ifp, 1);
  }
  if (!st) {
    indent(d);
    pd_buf_puts(d->out, "}\n");
  }
  return st;
}

/* The ops of block b, in their order, at the current depth. */
static pd_status put_ops(dc *d, const pd_block *b) {
  pd_status st = PD_OK;
  cfplan *plan = d->readable ? pd_calloc((size_t)b->nops + 1, sizeof *plan) : NULL;
  if (d->readable && !plan) return oom(d);
  if (plan) plan_block(d, b, plan);
  for (int i = 0; !st && i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    if (strcmp(op->type, "feed") == 0 || strcmp(op->type, "fetch") == 0) continue;
    if (plan && plan[i].kind == CF_SKIP) continue;
    bool done = false;
    if (plan && plan[i].kind != CF_OP && ((st = put_cf(d, b, i, plan, &done)) || done)) {
      if (st && !d->err->msg) st = oom(d);
      continue;
    }
    group *g = b->idx == 0 && d->ls ? d->ls->at[i] : NULL;
    if (g) {
      st = put_group(d, g);
      i += g->n - 1;
    } else {
      st = put_op(d, b, i, op);
    }
    if (st && !d->err->msg) st = oom(d);
  }
  pd_free(plan);
  return st;
}

static pd_status put_op(dc *d, const pd_block *b, int index, const pd_op_desc *op) {
  const pd_opdef *def = pd_opdef_lookup(op->type);
  if (!def)
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d: '%s' is not an op of pdlang",
                        index, op->type);
  const pd_block *sub;
  char where[32];
  const char *ax = one_var(pd_op_input(op, "X")), *ao = one_var(pd_op_output(op, "Out"));
  static const char *const x_only[] = {"X", NULL}, *const out_only[] = {"Out", NULL};
  if (d->rebind && !strcmp(op->type, "assign") && ax && ao && only_slots(op, x_only, out_only) &&
      !persistable(b, ao)) { /* a copy: the name takes the value */
    if (!defined(d, b, ax))
      return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d%s (assign) reads '%s', "
                          "which no op before it writes", index, of_block(where, b), ax);
    const char *x = ident(d, b, ax), *y = ident(d, b, ao);
    if (!x || !y) return oom(d);
    indent(d);
    pd_buf_printf(d->out, "%s = %s  # op %d%s\n", y, x, index, of_block(where, b));
    return PD_OK;
  }
  /* in such a body the elementwise ops of the operators and the builtins' activations are
   * written as those (the check of the whole script compares their ops) */
  const char *sym = d->rebind ? binary_sym(op) : NULL;
  const char *fn = d->rebind && !sym && strcmp(op->type, "dropout") ? unary_fn(op) : NULL;
  const char *ay = sym ? one_var(pd_op_input(op, "Y")) : NULL;
  if ((sym || fn) && !persistable(b, ao) && defined(d, b, ax) && (!ay || defined(d, b, ay))) {
    pd_buf call;
    pd_buf_init(&call);
    pd_status st = fn ? attrs_given(op, &call) : PD_OK;
    const char *x = ident(d, b, ax), *y = ay ? ident(d, b, ay) : "", *o = ident(d, b, ao);
    if (!st && (!x || !y || !o || call.oom)) st = PD_ENOMEM;
    if (!st) {
      indent(d);
      if (sym) pd_buf_printf(d->out, "%s = %s %s %s", o, x, sym, y);
      else pd_buf_printf(d->out, "%s = %s(%s%s)", o, fn, x, call.data ? call.data : "");
      pd_buf_printf(d->out, "  # op %d%s\n", index, of_block(where, b));
    }
    pd_buf_free(&call);
    if (st != PD_EUNSUPPORTED) return st ? oom(d) : PD_OK;  /* else op() below */
  }
  pd_status st = sub_block(d, b, index, op, &sub);
  if (!st && sub) st = declare_written(d, b, sub);
  if (st) return st;
  /* inputs must be defined; outputs that are defined already are written in place */
  for (int j = 0; j < op->ninputs; j++)
    for (int k = 0; k < op->inputs[j].nargs; k++)
      if (strcmp(op->inputs[j].args[k], PD_EMPTY_VAR_NAME) && !defined(d, b, op->inputs[j].args[k]))
        return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d%s (%s) reads '%s', which "
                            "no op before it writes", index, of_block(where, b), op->type,
                            op->inputs[j].args[k]);
  const char **outs = pd_calloc((size_t)op->noutputs + 1, sizeof *outs);
  int nouts = 0, nvars = 0;
  st = outs ? PD_OK : oom(d);
  bool first_only = true;
  for (int j = 0; !st && j < op->noutputs; j++) {
    const pd_slot *s = &op->outputs[j];
    int n = 0;
    for (int k = 0; k < s->nargs; k++) n += fresh(d, b, s->args[k]);
    if (n && n != s->nargs)
      st = pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (%s): output %s writes both "
                        "new vars and vars made before", index, op->type, s->param);
    else if (n) {
      outs[nouts++] = s->param;
      nvars += n;
      first_only = nouts == 1 && n == 1 && strcmp(s->param, def->outputs[0].name) == 0;
    }
  }
  /* the new vars' identifiers, in the order op() returns them */
  pd_buf lhs;
  pd_buf_init(&lhs);
  for (int i = 0; !st && i < nouts; i++) {
    const pd_slot *s = pd_op_output(op, outs[i]);
    for (int k = 0; k < s->nargs; k++) {
      const char *id = ident(d, b, s->args[k]);
      if (!id) st = oom(d);
      else pd_buf_printf(&lhs, "%s%s", lhs.len ? ", " : "", id);
    }
  }
  if (!st) indent(d);
  if (!st && lhs.len) pd_buf_printf(d->out, "%s = ", lhs.data);
  if (!st) pd_buf_printf(d->out, "op(\"%s\"", op->type);
  for (int j = 0; !st && j < op->ninputs; j++) {
    const pd_slot *s = &op->inputs[j];
    bool empty = s->nargs == 0 || (s->nargs == 1 && !strcmp(s->args[0], PD_EMPTY_VAR_NAME));
    const pd_slotdef *sd = NULL;
    for (int i = 0; i < def->ninputs; i++)
      if (!strcmp(def->inputs[i].name, s->param)) sd = &def->inputs[i];
    if (!empty) st = put_slot(d, b, s, sd && (sd->flags & PD_SLOT_DUPLICABLE));
  }
  for (int j = 0; !st && j < op->noutputs; j++) {
    const pd_slot *s = &op->outputs[j];
    bool mine = false;
    for (int i = 0; i < nouts; i++) mine |= !strcmp(outs[i], s->param);
    const pd_slotdef *sd = NULL;
    for (int i = 0; i < def->noutputs; i++)
      if (!strcmp(def->outputs[i].name, s->param)) sd = &def->outputs[i];
    if (!mine && s->nargs && strcmp(s->args[0], PD_EMPTY_VAR_NAME))
      st = put_slot(d, b, s, sd && (sd->flags & PD_SLOT_DUPLICABLE));
  }
  for (int j = 0; !st && j < op->nattrs; j++)
    if (pd_opdef_attr(def, op->attrs[j].name) && op->attrs[j].type != PD_ATTR_BLOCK)
      st = put_attr(d, op, &op->attrs[j]);
  if (!st && nouts && !first_only) {
    if (nvars == 1) { /* one new var, of another slot than the first: returned alone */
      pd_buf_printf(d->out, ", outputs = \"%s\"", outs[0]);
    } else {
      pd_buf_puts(d->out, ", outputs = [");
      for (int i = 0; i < nouts; i++) {
        int n = pd_op_output(op, outs[i])->nargs;
        if (n == 1) pd_buf_printf(d->out, "%s\"%s\"", i ? ", " : "", outs[i]);
        else pd_buf_printf(d->out, "%s[\"%s\", %d]", i ? ", " : "", outs[i], n);
      }
      pd_buf_puts(d->out, "]");
    }
  }
  if (!st) {
    pd_buf_printf(d->out, ")%s  # op %d", sub ? " {" : "", index);
    if (b->idx) pd_buf_printf(d->out, " of block %d", b->idx);
    pd_buf_puts(d->out, "\n");
  }
  if (!st && sub) {
    bool rebind = d->rebind;  /* the block of an op() is written as saved */
    d->rebind = false;
    d->depth++;
    st = put_ops(d, sub);
    d->depth--;
    d->rebind = rebind;
    if (!st) {
      indent(d);
      pd_buf_puts(d->out, "}\n");
    }
  }
  pd_buf_free(&lhs);
  pd_free(outs);
  return st;
}

/* The script of d->m with the groups of d->ls (NULL: none), appended to d->out. */
static pd_status write_script(dc *d, const char *model_path, const char *save_as,
                              const char **params, int np) {
  const pd_model *m = d->m;
  pd_buf *out = d->out;
  pd_error *err = d->err;
  pd_status st = PD_OK;
  pd_buf_puts(out, "# ");
  pd_buf_puts(out, model_path);
  pd_buf_printf(out, ", decompiled by `pdlang decompile`: %d ops. `pdlang run` of this script "
                     "writes the\n# same program to ", d->b->nops);
  put_str(out, save_as);
  pd_buf_puts(out, ".\n");
  if (d->ls && d->ls->any_layer) pd_buf_puts(out, "\nimport \"layers\"\n");
  pd_buf_puts(out, "\n# inputs\n");
  for (int i = 0; !st && i < m->nfeeds; i++) {
    const pd_var_desc *v = pd_block_find_var_local(d->b, m->feeds[i].var);
    const char *id = v ? ident(d, d->b, v->name) : NULL;
    if (!v) st = pd_error_set(err, PD_EFORMAT, nowhere, "feed target '%s' is no var",
                              m->feeds[i].var);
    else if (!id) st = oom(d);
    else if (v->ndims < 1)
      st = pd_error_set(err, PD_EUNSUPPORTED, nowhere, "input '%s' has no shape", v->name);
    if (st) break;
    pd_buf_printf(out, "%s = data(", id);
    put_str(out, v->name);
    pd_buf_puts(out, ", ");
    put_dims(out, v->ndims, v->dims);
    if (v->dtype != PD_FP32) pd_buf_printf(out, ", %s", pd_dtype_name(v->dtype));
    if (v->lod_level) pd_buf_printf(out, ", lod_level = %d", v->lod_level);
    pd_buf_puts(out, ")\n");
  }
  bool heading = false;
  for (int i = 0; !st && i < np; i++) {
    const pd_var_desc *v = pd_block_find_var_local(d->b, params[i]);
    if (d->ls && pd_strmap_find(&d->ls->inside, v->name) &&
        !pd_strmap_find(&d->ls->outside, v->name))
      continue;  /* a layer's own, which the layer makes */
    /* state, never trained: written by an op (of any block), as batch norm's running
     * statistics, or not float (an RNN's uint8 dropout state), or of rank 0 */
    bool state = (v->dtype != PD_FP32 && v->dtype != PD_FP64) || v->ndims == 0;
    for (int bi = 0; bi < m->program->nblocks && !state; bi++) {
      const pd_block *bk = m->program->blocks[bi];
      for (int k = 0; k < bk->nops && !state; k++)
        for (int j = 0; j < bk->ops[k]->noutputs && !state; j++)
          for (int a = 0; a < bk->ops[k]->outputs[j].nargs; a++)
            state |= !strcmp(bk->ops[k]->outputs[j].args[a], v->name);
    }
    const char *id = ident(d, d->b, v->name);
    if (!id) {
      st = oom(d);
      break;
    }
    if (!heading) pd_buf_puts(out, "\n# parameters (their values: load below)\n");
    heading = true;
    pd_buf_printf(out, "%s = param(", id);
    put_str(out, v->name);
    pd_buf_puts(out, ", ");
    put_dims(out, v->ndims, v->dims);
    if (v->dtype != PD_FP32) pd_buf_printf(out, ", dtype = %s", pd_dtype_name(v->dtype));
    if (state) pd_buf_puts(out, ", trainable = false");
    pd_buf_puts(out, ")\n");
  }
  if (!st) pd_buf_puts(out, "\n# the ops, in the saved program's order\n");
  if (!st) st = put_ops(d, d->b);
  if (!st) {
    pd_buf_puts(out, "\n");
    if (np) { /* a .pdmodel's parameters by their names, a Fluid folder (its __params__ or a
                 file per parameter), else the parameters file itself */
      size_t n = strlen(model_path);
      char *pp = n > 8 && !strcmp(model_path + n - 8, ".pdmodel") ? NULL
                 : m->fluid_dir ? NULL : pd_params_path_for(model_path);
      const char *lp = m->fluid_dir ? m->fluid_dir : pp ? pp : model_path;
      if (!lp) st = oom(d);
      else {
        pd_buf_puts(out, "load(");
        put_str(out, lp);
        pd_buf_puts(out, ")\n");
      }
      pd_free(pp);
    }
    pd_buf_puts(out, "save(");
    put_str(out, save_as);
    for (int i = 0; i < m->nfetches && !st; i++) {
      const char *id = defined(d, d->b, m->fetches[i].var) ? ident(d, d->b, m->fetches[i].var)
                                                           : NULL;
      if (!id) st = pd_error_set(err, PD_EUNSUPPORTED, nowhere, "fetch target '%s' is made by "
                                 "no op", m->fetches[i].var);
      else pd_buf_printf(out, ", %s", id);
    }
    pd_buf_puts(out, ")\n");
  }
  /* a failed allocation, also where it made another error (or its message) */
  if (st != PD_ENOMEM && (out->oom || d->oom || (st && err && !err->msg))) {
    pd_error_clear(err);
    st = oom(d);
  }
  return st;
}

/* ---- Verification: the script compiled, its ops compared with the model's ---- */

#define SCRIPT_NAME "decompiled.pd"

/* The line of the script a compiled op comes from: the call in the script itself. */
static int script_line(const pd_op_desc *op) {
  return op->calls && op->calls->n > 0 ? op->calls->sites[op->calls->n - 1].loc.line
                                       : op->loc.line;
}

/* Whether compiled op c has model op o's values of the registry's attributes (is_test, which
 * save sets, and blocks aside); an attribute one of them leaves out has its default. */
static bool same_attrs(const pd_op_desc *o, const pd_op_desc *c) {
  const pd_opdef *def = pd_opdef_lookup(o->type);
  pd_buf a, b;
  pd_buf_init(&a);
  pd_buf_init(&b);
  bool same = def != NULL;
  for (int pass = 0; same && pass < 2; pass++) {
    const pd_op_desc *x = pass ? c : o;
    for (int j = 0; same && j < x->nattrs; j++) {
      const pd_attrdef *ad = pd_opdef_attr(def, x->attrs[j].name);
      if (!ad || ad->type == PD_ATTR_BLOCK || !strcmp(ad->name, "is_test")) continue;
      pd_buf_clear(&a);
      pd_buf_clear(&b);
      same = attr_or_default(o, ad, &a) && attr_or_default(c, ad, &b) && !strcmp(a.data, b.data);
    }
  }
  pd_buf_free(&a);
  pd_buf_free(&b);
  return same;
}

/* Whether compiled op c (of block cb) reads and writes what model op o (of block ob) does,
 * under map (model var -> compiled var, completed with o's new outputs); with strict (a
 * group's op), also the same attributes, no other slots, its vars of the same dtype and its
 * parameters of the same shape. */
static bool same_op(const pd_op_desc *o, const pd_block *ob, const pd_op_desc *c,
                    const pd_block *cb, pd_strmap *map, bool strict, bool *oom_) {
  if (strcmp(o->type, c->type) || (strict && !same_attrs(o, c))) return false;
  for (int pass = 0; pass < 2; pass++) {
    int n = pass ? o->noutputs : o->ninputs;
    const pd_slot *os = pass ? o->outputs : o->inputs;
    for (int j = 0; j < n; j++) {
      if (slot_empty(&os[j])) continue;
      const pd_slot *cs = pass ? pd_op_output(c, os[j].param) : pd_op_input(c, os[j].param);
      if (!cs || cs->nargs != os[j].nargs) return false;
      for (int k = 0; k < cs->nargs; k++) {
        const char *oa = os[j].args[k], *ca = cs->args[k];
        if (!strcmp(oa, PD_EMPTY_VAR_NAME) || !strcmp(ca, PD_EMPTY_VAR_NAME)) {
          if (strcmp(oa, ca)) return false;
          continue;
        }
        const char *want = pd_strmap_get_ptr(map, oa);
        if (want && strcmp(want, ca)) return false;
        const pd_var_desc *ov = pd_block_find_var_visible(ob, oa, NULL);
        const pd_var_desc *cv = pd_block_find_var_visible(cb, ca, NULL);
        if (!ov || !cv ||
            (strict && (ov->dtype != cv->dtype || ov->persistable != cv->persistable)))
          return false;
        if (ov->persistable && strict) {
          bool dims = ov->ndims == cv->ndims;
          for (int q = 0; dims && q < ov->ndims; q++) dims = ov->dims[q] == cv->dims[q];
          if (!dims) return false;
        }
        if (!want) {
          if (!pass) return false;  /* read before any op wrote it */
          pd_strmap_entry *e = pd_strmap_add(map, oa, NULL);
          if (!e) {
            *oom_ = true;
            return false;
          }
          e->val.p = (void *)ca;
        }
      }
    }
    if (!strict) continue;
    n = pass ? c->noutputs : c->ninputs;
    const pd_slot *cs = pass ? c->outputs : c->inputs;
    for (int j = 0; j < n; j++) {
      const pd_slot *s = pass ? pd_op_output(o, cs[j].param) : pd_op_input(o, cs[j].param);
      if (!slot_empty(&cs[j]) && (!s || slot_empty(s))) return false;
    }
  }
  return true;
}

/* Compile the script text[0..len) (of d->ls's groups) and compare: *bad is a group that
 * compiles to other ops than its own, NULL with *all when something else differs (then no
 * group is kept), neither when the script builds the model's block 0 op for op. A script that
 * does not compile is compiled again up to the line of the error (a group before it may have
 * made the shapes that the line refuses): its first group that differs, else the group on that
 * line. With prefix, text is such a beginning of the script: the comparison ends where its
 * ops do, and a prefix that does not compile says nothing (*all). */
static pd_status verify(dc *d, const char *text, size_t len, bool prefix, group **bad,
                        bool *all) {
  const pd_model *m = d->m;
  layers *ls = d->ls;
  *bad = NULL;
  *all = false;
  pd_source *src = NULL;
  pd_diags dg;
  pd_diags_init(&dg, 1);
  pd_unit *u = NULL;
  pd_strmap map;
  pd_strmap_init(&map, false);
  pd_status st = pd_source_from_string(SCRIPT_NAME, text, len, &src);
  if (!st) {
    st = pd_compile(src, NULL, &dg, &u);
    if (st == PD_ENOMEM) goto out;
    if (st) {
      st = PD_OK;
      const char *at = dg.text.data ? strstr(dg.text.data, SCRIPT_NAME ":") : NULL;
      int line = at ? atoi(at + strlen(SCRIPT_NAME ":")) : 0;
      *all = true;
      if (prefix || line < 1) goto out;
      size_t cut = 0;  /* where that line starts */
      for (int l = 1; l < line && cut < len; cut++) l += text[cut] == '\n';
      if ((st = verify(d, text, cut, true, bad, all)) || *bad) goto out;
      *all = true;
      for (int k = 0; k < ls->ngroups && *all; k++)
        if (ls->groups[k].line == line) *bad = &ls->groups[k], *all = false;
      goto out;
    }
  }
  const pd_block *ob = m->program->blocks[0], *cb = u ? u->main->blocks[0] : NULL;
  for (int i = 0; !st && i < ob->nvars; i++) {
    const pd_var_desc *v = ob->vars[i];
    bool in = v->persistable;
    for (int k = 0; k < m->nfeeds && !in; k++) in = !strcmp(m->feeds[k].var, v->name);
    pd_strmap_entry *e = in ? pd_strmap_add(&map, v->name, NULL) : NULL;
    if (in && !e) st = PD_ENOMEM;
    else if (e) e->val.p = v->name;
  }
  int ci = 0;
  bool oom_ = false, ended = false;
  for (int i = 0; !st && cb && i < ob->nops && !*bad && !*all && !ended; i++) {
    const pd_op_desc *o = ob->ops[i];
    if (!strcmp(o->type, "feed") || !strcmp(o->type, "fetch")) continue;
    group *g = ls->at[i];
    for (int k = 0; k < (g ? g->n : 1) && !*bad && !*all && !ended; k++) {
      while (ci < cb->nops && (!strcmp(cb->ops[ci]->type, "feed") ||
                               !strcmp(cb->ops[ci]->type, "fetch")))
        ci++;
      const pd_op_desc *c = ci < cb->nops ? cb->ops[ci++] : NULL;
      ended = prefix && !c && k == 0;  /* the prefix's ops end before this line */
      bool same = ended || (c && (!g || script_line(c) == g->line) &&
                            same_op(ob->ops[i + k], ob, c, cb, &map, g != NULL, &oom_));
      if (oom_) st = PD_ENOMEM;
      else if (!same && g) *bad = g;
      else if (!same) *all = true;
    }
    if (g) i += g->n - 1;
  }
  if (!st && !*bad && !*all && cb && !prefix) { /* nothing more than the model's ops */
    while (ci < cb->nops && (!strcmp(cb->ops[ci]->type, "feed") ||
                             !strcmp(cb->ops[ci]->type, "fetch")))
      ci++;
    *all = ci < cb->nops;
  }
  if (prefix && !*bad) *all = true;  /* a prefix finds a group that differs, or says nothing */
out:
  pd_strmap_free(&map);
  pd_unit_free(u);
  pd_diags_free(&dg);
  pd_source_free(src);
  return st == PD_ENOMEM ? oom(d) : st;
}

/* The ops of block b and of the blocks under it, depth first (a block's ops where its op
 * stands), but for the ops that the language's if / while add or make otherwise (copies, the
 * block ops, a condition's negation, select_input) and those in consumed ("BLOCK:INDEX"). */
typedef struct opseq {
  const pd_op_desc **ops;
  int n, cap;
  bool oom;
} opseq;

static void flatten(const pd_program *p, const pd_block *b, const pd_strmap *consumed,
                    opseq *s, int depth) {
  static const char *const glue[] = {"feed", "fetch", "assign", "while", "conditional_block",
                                     "logical_not", "select_input"};
  for (int i = 0; i < b->nops && !s->oom && depth <= p->nblocks; i++) {
    const pd_op_desc *op = b->ops[i];
    char key[48];
    snprintf(key, sizeof key, "%d:%d", b->idx, i);
    bool skip = consumed && pd_strmap_find(consumed, key);
    for (size_t k = 0; k < PD_ARRAY_LEN(glue) && !skip; k++) skip = !strcmp(op->type, glue[k]);
    if (!skip) {
      if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        const pd_op_desc **n = pd_realloc(s->ops, sizeof *n * (size_t)cap);
        if (!n) {
          s->oom = true;
          return;
        }
        s->ops = n;
        s->cap = cap;
      }
      s->ops[s->n++] = op;
    }
    for (int j = 0; j < op->nattrs; j++) {
      const pd_block *sub = op->attrs[j].type == PD_ATTR_BLOCK
                                ? pd_program_block(p, op->attrs[j].v.i) : NULL;
      if (sub && sub != b && sub->parent_idx == b->idx) flatten(p, sub, consumed, s, depth + 1);
    }
  }
}

/* Whether the script text[0..len) with if / while statements compiles, to the model's ops
 * (types and attributes, in order: flatten's) but for what the statements make otherwise. */
static pd_status check_readable(dc *d, const char *text, size_t len, bool *good) {
  *good = false;
  pd_source *src = NULL;
  pd_diags dg;
  pd_diags_init(&dg, 1);
  pd_unit *u = NULL;
  opseq a = {0}, c = {0};
  pd_status st = pd_source_from_string(SCRIPT_NAME, text, len, &src);
  if (!st) st = pd_compile(src, NULL, &dg, &u);
  if (!st) {
    flatten(d->m->program, d->m->program->blocks[0], &d->consumed, &a, 0);
    flatten(u->main, u->main->blocks[0], NULL, &c, 0);
    if (a.oom || c.oom) st = PD_ENOMEM;
    *good = !st && a.n == c.n;
    for (int i = 0; *good && i < a.n; i++)
      *good = !strcmp(a.ops[i]->type, c.ops[i]->type) && same_attrs(a.ops[i], c.ops[i]);
  } else if (st != PD_ENOMEM) {
    st = PD_OK;  /* does not compile: the op() form is written */
  }
  pd_free(a.ops);
  pd_free(c.ops);
  pd_unit_free(u);
  pd_diags_free(&dg);
  pd_source_free(src);
  return st == PD_ENOMEM ? oom(d) : st;
}

static void dc_init(dc *d, const pd_model *m, pd_buf *text, pd_error *err, layers *ls,
                    const layers *all) {
  *d = (dc){.m = m, .b = m->program->blocks[0], .out = text, .err = err, .ls = ls, .line = 1,
            .reads = &all->reads, .writes = &all->writes};
  pd_strmap_init(&d->ident, true);
  pd_strmap_init(&d->taken, false);
  pd_strmap_init(&d->consumed, true);
}

static void dc_free(dc *d) {
  for (size_t i = 0; i < d->taken.cap; i++)
    if (d->taken.slots && d->taken.slots[i].key) pd_free(d->taken.slots[i].val.p);
  pd_strmap_free(&d->ident);
  pd_strmap_free(&d->taken);
  pd_strmap_free(&d->consumed);
}

/* Rounds of proposing and verifying before the groups are given up (each rejects a sig). */
#define MAX_ROUNDS 32

pd_status pd_decompile(const pd_model *m, const char *model_path, const char *save_as,
                       pd_buf *out, pd_error *err) {
  const char **params = NULL;
  int np = 0;
  layers ls = {0};
  bool use = true;  /* layers are proposed (until a round cannot say why a script differs) */
  pd_status st = pd_params_names(m->program, &params, &np) ? PD_ENOMEM : PD_OK;
  if (!st) st = layers_init(&ls, m, params, np);
  pd_buf text;
  pd_buf_init(&text);
  /* the layers, settled with control flow as op() { } */
  for (int round = 0; !st; round++) {
    use = use && round < MAX_ROUNDS;
    if (use && (st = propose(&ls, m))) break;
    use = use && ls.ngroups > 0;
    dc d;
    dc_init(&d, m, &text, err, use ? &ls : NULL, &ls);
    pd_buf_clear(&text);
    st = write_script(&d, model_path, save_as, params, np);
    group *bad = NULL;
    bool all = false;
    if (st && use) { /* what the plain ops say, or why not */
      pd_error_clear(err);
      st = PD_OK;
      all = true;
    } else if (!st && use) {
      st = verify(&d, text.data, text.len, false, &bad, &all);
    }
    dc_free(&d);
    if (st) break;
    if (bad && !pd_strmap_add(&ls.rejected, bad->sig, NULL)) st = PD_ENOMEM;
    else if (all) use = false;
    else if (!bad) break;
  }
  /* then the same script with if / while statements, kept when it compiles to the model's ops */
  pd_buf cf;
  pd_buf_init(&cf);
  bool readable = false;
  if (!st && m->program->nblocks > 1) {
    dc d;
    dc_init(&d, m, &cf, err, use ? &ls : NULL, &ls);
    d.readable = true;
    st = write_script(&d, model_path, save_as, params, np);
    if (!st && d.lifted) st = check_readable(&d, cf.data, cf.len, &readable);
    else if (st && st != PD_ENOMEM) { /* what the statements cannot say: the op() form */
      pd_error_clear(err);
      st = PD_OK;
    }
    dc_free(&d);
  }
  const pd_buf *keep = readable ? &cf : &text;
  if (!st && pd_buf_append(out, keep->data, keep->len)) st = PD_ENOMEM;
  if (st == PD_ENOMEM && !(err && err->msg)) pd_error_set(err, st, nowhere, "out of memory");
  pd_buf_free(&cf);
  pd_buf_free(&text);
  layers_free(&ls);
  pd_free(params);
  return st;
}
