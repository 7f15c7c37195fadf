/* decompile.c -- a saved inference program as .pd source (lang/decompile.h): the names of its
 * vars as identifiers, attributes as text, the runs of block 0's ops written as a layer's or
 * builtin's call (proposed, then verified by compiling the script), the check of the script with
 * if / while statements, and pd_decompile, which settles the script in rounds. How each block's
 * ops are written (control flow, op(...) calls) and the script around them are
 * lang/decompile_cf.c's; what both share is lang/decompile_int.h. Each var has one identifier,
 * made at its first use: vars are told apart by the block that declares them (Fluid's
 * visibility: a block sees its own vars and its parents'). */
#include "config.h"
#include "lang/decompile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "lang/compile.h"
#include "lang/decompile_int.h"
#include "vm/ir/params.h"
#include "vm/ops/ops.h"

static const pd_loc nowhere = {0};

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
char *pd_dc_var_key(const pd_block *b, const char *name) {
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
const char *pd_dc_ident(dc *d, const pd_block *blk, const char *name) {
  char *key = pd_dc_var_key(blk, name);
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
bool pd_dc_defined(dc *d, const pd_block *b, const char *name) {
  char *key = pd_dc_var_key(b, name);
  if (!key) {
    d->oom = true;
    return false;
  }
  bool r = pd_strmap_find(&d->ident, key) != NULL;
  pd_free(key);
  return r;
}

void pd_dc_put_str(pd_buf *b, const char *s) {
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

void pd_dc_put_dims(pd_buf *b, int nd, const int64_t *dims) {
  pd_buf_puts(b, "[");
  for (int i = 0; i < nd; i++) pd_buf_printf(b, "%s%lld", i ? ", " : "", (long long)dims[i]);
  pd_buf_puts(b, "]");
}

/* A float as a literal that reads back as the same value (a number literal always has a '.'
 * or an exponent, so that it is read as a float). */
pd_status pd_dc_put_float(dc *d, const pd_op_desc *op, const char *attr, double v, bool single) {
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
pd_status pd_dc_put_attr(dc *d, const pd_op_desc *op, const pd_attr *a) {
  pd_buf *b = d->out;
  pd_status st = PD_OK;
  switch (a->type) {
  case PD_ATTR_INT: pd_buf_printf(b, ", %s = %d", a->name, (int)a->v.i); break;
  case PD_ATTR_LONG: pd_buf_printf(b, ", %s = %lld", a->name, (long long)a->v.l); break;
  case PD_ATTR_BOOLEAN: pd_buf_printf(b, ", %s = %s", a->name, a->v.b ? "true" : "false"); break;
  case PD_ATTR_FLOAT:
  case PD_ATTR_FLOAT64:
    pd_buf_printf(b, ", %s = ", a->name);
    st = pd_dc_put_float(d, op, a->name, a->type == PD_ATTR_FLOAT ? a->v.f : a->v.d,
                         a->type == PD_ATTR_FLOAT);
    break;
  case PD_ATTR_STRING:
    pd_buf_printf(b, ", %s = ", a->name);
    pd_dc_put_str(b, a->v.s ? a->v.s : "");
    break;
  case PD_ATTR_STRINGS:
    if (a->n == 0) break;  /* the registry's default */
    pd_buf_printf(b, ", %s = [", a->name);
    for (int i = 0; i < a->n; i++) {
      if (i) pd_buf_puts(b, ", ");
      pd_dc_put_str(b, a->strings[i] ? a->strings[i] : "");
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
      else st = pd_dc_put_float(d, op, a->name, a->floats[i], true);
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


/* ---- Layers: runs of block 0's ops written as a call of the language ----
 * A run of ops that a stdlib layer or a builtin compiles to is proposed as that call (propose);
 * the script is compiled and each call's ops compared with the run it stands for (verify): a
 * call that compiles to other ops (types, attributes, wiring, parameters' shapes and dtypes)
 * is not proposed again, and the script is written anew. What is written is therefore what the
 * compiler makes of it, never a guess. */


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

static bool bump(pd_strmap *m, const char *key) {
  pd_strmap_entry *e = pd_strmap_add(m, key, NULL);
  if (e) e->val.i++;
  return e != NULL;
}

/* Whether every slot of op that names a var is one of ins / outs (NULL-terminated). */
bool pd_dc_only_slots(const pd_op_desc *op, const char *const *ins, const char *const *outs) {
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
const char *pd_dc_unary_fn(const pd_op_desc *op) {
  static const char *const x[] = {"X", NULL}, *const out[] = {"Out", "Mask", NULL};
  for (size_t i = 0; i < PD_ARRAY_LEN(unary_fns); i++)
    if (!strcmp(op->type, unary_fns[i].op))
      return one_var(pd_op_input(op, "X")) && one_var(pd_op_output(op, "Out")) &&
                     pd_dc_only_slots(op, x, out) ? unary_fns[i].fn : NULL;
  return NULL;
}

const char *pd_dc_binary_sym(const pd_op_desc *op) {
  static const char *const xy[] = {"X", "Y", NULL}, *const out[] = {"Out", NULL};
  const pd_attr *axis = pd_op_attr(op, "axis");
  if (axis && !(axis->type == PD_ATTR_INT && axis->v.i == -1)) return NULL;
  for (size_t i = 0; i < PD_ARRAY_LEN(binary_ops); i++)
    if (!strcmp(op->type, binary_ops[i].op))
      return one_var(pd_op_input(op, "X")) && one_var(pd_op_input(op, "Y")) &&
                     one_var(pd_op_output(op, "Out")) && pd_dc_only_slots(op, xy, out)
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
      st = pd_dc_put_attr(&t, op, &op->attrs[j]);
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
  pd_status st = pd_dc_put_attr(&t, op, a);
  pd_error_clear(&e);
  return !st && !b->oom;
}

/* attrs_text's attributes but those at the registry's default, into b. */
pd_status pd_dc_attrs_given(const pd_op_desc *op, pd_buf *b) {
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

/* Complete g with its sig (decompile_int.h). */
bool pd_dc_group_ok(layers *ls, const pd_block *b, group *g) {
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
  return pd_dc_unary_fn(next) && strcmp(next->type, "dropout") && passes_on(ls, v) &&
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

/* The group at op i of block 0 (the longest of the kinds that fit and were not rejected;
 * *oom_ set when memory ran out). */
static bool group_at(layers *ls, const pd_block *b, int i, group *g, bool *oom_) {
  const pd_op_desc *op = b->ops[i];
  if (!strcmp(op->type, "mul") && pd_dc_attn_group(ls, b, i, g, oom_)) return true;
  if (!*oom_ && !strcmp(op->type, "assign_value") && pd_dc_causal_group(ls, b, i, g, oom_))
    return true;
  if (*oom_) return false;
  *g = (group){.first = i, .n = 1};
  if (!strcmp(op->type, "conv2d")) {
    static const char *const ins[] = {"Input", "Filter", NULL}, *const outs[] = {"Output", NULL};
    const pd_var_desc *w = param_var(ls, b, one_var(pd_op_input(op, "Filter")));
    const pd_attr *st = pd_op_attr(op, "strides"), *pad = pd_op_attr(op, "paddings");
    const pd_attr *alg = pd_op_attr(op, "padding_algorithm");
    if (w && w->ndims == 4 && w->dims[2] == w->dims[3] && one_var(pd_op_input(op, "Input")) &&
        main_out(op) && pd_dc_only_slots(op, ins, outs) && st && st->type == PD_ATTR_INTS &&
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
      if (pd_dc_group_ok(ls, b, g)) return true;
    }
  }
  if (!strcmp(op->type, "mul") && i + 1 < b->nops) {
    static const char *const ins[] = {"X", "Y", NULL}, *const outs[] = {"Out", NULL};
    const pd_op_desc *add = b->ops[i + 1];
    const pd_var_desc *w = param_var(ls, b, one_var(pd_op_input(op, "Y")));
    const pd_var_desc *bias = param_var(ls, b, one_var(pd_op_input(add, "Y")));
    if (w && w->ndims == 2 && bias && bias->ndims == 1 && bias->dims[0] == w->dims[1] &&
        one_var(pd_op_input(op, "X")) && pd_dc_only_slots(op, ins, outs) &&
        !strcmp(add->type, "elementwise_add") && passes_on(ls, main_out(op)) &&
        same_var(one_var(pd_op_input(add, "X")), main_out(op)) && main_out(add)) {
      g->kind = G_FC;
      g->act = act_after(ls, b, i + 1);
      g->n = 2 + g->act;
      if (pd_dc_group_ok(ls, b, g)) return true;
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
      if (pd_dc_group_ok(ls, b, g)) return true;
    }
  }
  *g = (group){.first = i, .n = 1};
  static const char *const xy[] = {"X", "Y", NULL}, *const out[] = {"Out", NULL};
  if (pd_dc_binary_sym(op)) g->kind = G_BINARY;
  else if (!strcmp(op->type, "pool2d") && pool_args(op, NULL, NULL, NULL) &&
           one_var(pd_op_input(op, "X")) && main_out(op) && pd_dc_only_slots(op, xy, out))
    g->kind = G_POOL;
  else if (!strcmp(op->type, "matmul_v2") && one_var(pd_op_input(op, "X")) &&
           one_var(pd_op_input(op, "Y")) && main_out(op) && pd_dc_only_slots(op, xy, out))
    g->kind = G_MATMUL;
  else if (pd_dc_unary_fn(op) &&
           (!pd_op_output(op, "Mask") || slot_empty(pd_op_output(op, "Mask")) ||
            (one_var(pd_op_output(op, "Mask")) &&
             count(&ls->reads, one_var(pd_op_output(op, "Mask"))) == 0)))
    g->kind = G_UNARY;
  else return false;
  return pd_dc_group_ok(ls, b, g);
}

static void groups_clear(layers *ls) {
  for (int i = 0; i < ls->ngroups; i++) pd_free(ls->groups[i].sig);
  ls->ngroups = 0;
  ls->any_layer = ls->seq = false;
  pd_strmap_free(&ls->outside);
  pd_strmap_init(&ls->outside, false);
  pd_strmap_free(&ls->inside);
  pd_strmap_init(&ls->inside, false);
}

/* The groups of the rnn ops of block 0 (pd_dc_rnn_group), into rg (room for b->nops), those
 * rejected before excepted; how many. */
static int rnn_groups(layers *ls, const pd_block *b, group *rg) {
  int n = 0;
  for (int r = 0; r < b->nops; r++) {
    int from = n ? rg[n - 1].first + rg[n - 1].n : 0;
    if (pd_dc_rnn_group(ls, b, r, from, rg, n, &rg[n])) {
      r = rg[n].first + rg[n].n - 1;
      n++;
    }
  }
  return n;
}

/* Propose the groups of block 0, those rejected before excepted. PD_ENOMEM. */
static pd_status propose(layers *ls, const pd_model *m) {
  const pd_block *b = m->program->blocks[0];
  groups_clear(ls);
  for (int i = 0; i < b->nops; i++) ls->at[i] = NULL;
  group *rg = pd_calloc((size_t)b->nops + 1, sizeof *rg);
  if (!rg) return PD_ENOMEM;
  int nrg = rnn_groups(ls, b, rg), kr = 0;
  for (int i = 0; i < b->nops;) {
    group g;
    while (kr < nrg && rg[kr].first < i) pd_free(rg[kr++].sig);  /* overlapped by another */
    if (kr < nrg && rg[kr].first == i) {
      ls->groups[ls->ngroups++] = rg[kr];
      ls->any_layer = ls->seq = true;
      i += rg[kr++].n;
      continue;
    }
    bool oom_ = false;
    if (!group_at(ls, b, i, &g, &oom_)) {
      if (oom_) {
        while (kr < nrg) pd_free(rg[kr++].sig);
        pd_free(rg);
        return PD_ENOMEM;
      }
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
    ls->any_layer |= g.kind == G_POOL || g.kind == G_FC || g.kind == G_CONV || g.kind == G_BN ||
                     g.kind == G_ATTN || g.kind == G_CAUSAL;
    i += g.n;
  }
  while (kr < nrg) pd_free(rg[kr++].sig);
  pd_free(rg);
  for (int k = 0; k < ls->ngroups; k++) ls->at[ls->groups[k].first] = &ls->groups[k];
  /* the vars the other ops name: a parameter only layers name is made by them */
  for (int bi = 0; bi < m->program->nblocks; bi++) {
    const pd_block *bk = m->program->blocks[bi];
    for (int i = 0; i < bk->nops; i++) {
      const group *g = bi == 0 ? ls->at[i] : NULL;
      bool layer = g && (g->kind == G_FC || g->kind == G_CONV || g->kind == G_BN ||
                         g->kind == G_RNN || g->kind == G_ATTN);
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
  /* the calls take the padded inputs as sequences: no other op may read them or their lengths */
  bool seq_ok = true;
  for (int i = 0; ls->seq && i < m->nfeeds && seq_ok; i++) {
    dc t = {.m = m, .ls = ls};
    const char *v = m->feeds[i].var;
    int64_t fed = 0;  /* the feed ops' writes */
    for (int k = 0; k < b->nops; k++)
      fed += !strcmp(b->ops[k]->type, "feed") && same_var(one_var(pd_op_output(b->ops[k], "Out")), v);
    seq_ok = !pd_dc_seq_feed(&t, v) || count(&ls->outside, v) == fed;
  }
  if (seq_ok) return PD_OK;
  for (int k = 0; k < ls->ngroups; k++)
    if (ls->groups[k].kind == G_RNN && !pd_strmap_add(&ls->rejected, ls->groups[k].sig, NULL))
      return PD_ENOMEM;
  return propose(ls, m);
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
  if (g->act) pd_buf_printf(d->out, ", act = %s", pd_dc_unary_fn(d->b->ops[g->first + g->n - 1]));
}

/* One group as `y = call  # ops i-j`. */
pd_status pd_dc_put_group(dc *d, group *g) {
  const pd_block *b = d->b;
  for (; d->scanned < d->out->len; d->scanned++) d->line += d->out->data[d->scanned] == '\n';
  g->line = d->line;
  if (g->kind == G_RNN) return pd_dc_put_rnn(d, g);
  if (g->kind == G_ATTN) return pd_dc_put_attn(d, g);
  if (g->kind == G_CAUSAL) return pd_dc_put_causal(d, g);
  const pd_op_desc *op = b->ops[g->first], *last = b->ops[g->first + g->n - 1];
  const char *xs = one_var(pd_op_input(op, g->kind == G_CONV ? "Input" : "X"));
  bool two = g->kind == G_BINARY || g->kind == G_MATMUL;
  if (!pd_dc_defined(d, b, xs) || (two && !pd_dc_defined(d, b, one_var(pd_op_input(op, "Y")))))
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (%s) reads a var which no op "
                        "before it writes", g->first, op->type);
  const char *x = pd_dc_ident(d, b, xs), *y = pd_dc_ident(d, b, main_out(last));
  if (!x || !y) return oom(d);
  pd_buf *o = d->out;
  pd_buf_printf(o, "%s = ", y);
  switch (g->kind) {
  case G_UNARY:
  case G_MATMUL: { /* the builtin, its attributes by keyword as op() writes them */
    const char *z = g->kind == G_MATMUL ? pd_dc_ident(d, b, one_var(pd_op_input(op, "Y"))) : "";
    if (!z) return oom(d);
    pd_buf_printf(o, "%s(%s%s%s", g->kind == G_MATMUL ? "matmul" : pd_dc_unary_fn(op), x,
                  *z ? ", " : "", z);
    pd_status st = pd_dc_attrs_given(op, o);
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
    const char *z = pd_dc_ident(d, b, one_var(pd_op_input(op, "Y")));
    if (!z) return oom(d);
    pd_buf_printf(o, "%s %s %s", x, pd_dc_binary_sym(op), z);
    break;
  }
  case G_FC: {
    const pd_var_desc *w = pd_block_find_var_local(b, one_var(pd_op_input(op, "Y")));
    pd_buf_printf(o, "fc(%s, %lld", x, (long long)w->dims[1]);
    put_act(d, g);
    pd_buf_puts(o, ", name = ");
    pd_dc_put_str(o, w->name);
    pd_buf_puts(o, ", bias_name = ");
    pd_dc_put_str(o, one_var(pd_op_input(b->ops[g->first + 1], "Y")));
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
    pd_dc_put_str(o, w->name);
    if (bias) {
      pd_buf_puts(o, ", bias_name = ");
      pd_dc_put_str(o, one_var(pd_op_input(b->ops[g->first + 1], "Y")));
    }
    pd_buf_puts(o, ")");
    break;
  }
  case G_RNN:
  case G_ATTN:
  case G_CAUSAL: break;  /* pd_dc_put_rnn, pd_dc_put_attn, pd_dc_put_causal, above */
  case G_BN: {
    const char *scale = one_var(pd_op_input(op, "Scale"));
    const pd_attr *mo = pd_op_attr(op, "momentum"), *ep = pd_op_attr(op, "epsilon");
    pd_buf_printf(o, "batch_norm(%s", x);
    put_act(d, g);
    pd_status st = PD_OK;
    if (mo && (mo->type == PD_ATTR_FLOAT || mo->type == PD_ATTR_FLOAT64)) {
      pd_buf_puts(o, ", momentum = ");
      st = pd_dc_put_float(d, op, "momentum", mo->type == PD_ATTR_FLOAT ? mo->v.f : mo->v.d,
                           mo->type == PD_ATTR_FLOAT);
    }
    if (!st && ep && (ep->type == PD_ATTR_FLOAT || ep->type == PD_ATTR_FLOAT64)) {
      pd_buf_puts(o, ", epsilon = ");
      st = pd_dc_put_float(d, op, "epsilon", ep->type == PD_ATTR_FLOAT ? ep->v.f : ep->v.d,
                           ep->type == PD_ATTR_FLOAT);
    }
    if (st) return st;
    char *prefix = pd_malloc(strlen(scale) - 3);
    if (!prefix) return oom(d);
    memcpy(prefix, scale, strlen(scale) - 4);
    prefix[strlen(scale) - 4] = 0;
    pd_buf_puts(o, ", name = ");
    pd_dc_put_str(o, prefix);
    pd_buf_puts(o, ")");
    pd_free(prefix);
    break;
  }
  }
  if (g->n == 1) pd_buf_printf(o, "  # op %d\n", g->first);
  else pd_buf_printf(o, "  # ops %d-%d\n", g->first, g->first + g->n - 1);
  return PD_OK;
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
  pd_program *saved = NULL;  /* with ls->seq, what save writes of the script's program */
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
  if (u && ls->seq && (st = pd_dc_saved_program(u, &saved))) {
    for (int k = 0; k < ls->ngroups && st != PD_ENOMEM && !*bad; k++)
      if (ls->groups[k].kind == G_RNN) *bad = &ls->groups[k];
    *all = !*bad;
    if (st != PD_ENOMEM) st = PD_OK;
    goto out;
  }
  const pd_block *ob = m->program->blocks[0];
  const pd_block *cb = saved ? saved->blocks[0] : u ? u->main->blocks[0] : NULL;
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
      int cl = c ? script_line(c) : 0;
      bool same = ended || (c && (!g || (cl >= g->line && cl < g->line + (g->nlines ? g->nlines : 1))) &&
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
  pd_program_free(saved);
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

/* Whether op is the sequence_pool of a loop's output that a for writes for a memory's last
 * step (whether the model kept it or pruned it). */
static bool last_step(const pd_block *b, const pd_op_desc *op) {
  const char *x = one_var(pd_op_input(op, "X"));
  for (int i = 0; x && !strcmp(op->type, "sequence_pool") && i < b->nops; i++) {
    const pd_slot *outs = pd_op_output(b->ops[i], "outputs");
    for (int k = 0; outs && !strcmp(b->ops[i]->type, "recurrent") && k < outs->nargs; k++)
      if (!strcmp(outs->args[k], x)) return true;
  }
  return false;
}

/* Whether the compiled op c is model op o as check_readable compares them: their types and
 * attributes, but for a recurrent op's lists of its block's vars, which the script names
 * otherwise (their lengths only). */
static bool same_flat(const pd_op_desc *o, const pd_op_desc *c) {
  if (strcmp(o->type, c->type)) return false;
  if (strcmp(o->type, "recurrent")) return same_attrs(o, c);
  static const char *const flags[] = {"reverse", "has_states"};
  for (size_t k = 0; k < PD_ARRAY_LEN(flags); k++) {
    const pd_attr *a = pd_op_attr(o, flags[k]), *b = pd_op_attr(c, flags[k]);
    if ((a && a->type == PD_ATTR_BOOLEAN && a->v.b) != (b && b->type == PD_ATTR_BOOLEAN && b->v.b))
      return false;
  }
  const pd_attr *a = pd_op_attr(o, "states"), *b = pd_op_attr(c, "states");
  return a && b && a->n == b->n;
}

static void flatten(const pd_program *p, const pd_block *b, const pd_strmap *consumed,
                    opseq *s, int depth) {
  static const char *const glue[] = {"feed", "fetch", "assign", "while", "conditional_block",
                                     "logical_not", "select_input"};
  for (int i = 0; i < b->nops && !s->oom && depth <= p->nblocks; i++) {
    const pd_op_desc *op = b->ops[i];
    char key[48];
    snprintf(key, sizeof key, "%d:%d", b->idx, i);
    bool skip = (consumed && pd_strmap_find(consumed, key)) || last_step(b, op);
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
  pd_program *saved = NULL;  /* with ls->seq, what save writes of the script's program */
  if (!st) st = pd_compile(src, NULL, &dg, &u);
  if (!st && d->ls && d->ls->seq) st = pd_dc_saved_program(u, &saved);
  if (!st) {
    const pd_program *cp = saved ? saved : u->main;
    flatten(d->m->program, d->m->program->blocks[0], &d->consumed, &a, 0);
    flatten(cp, cp->blocks[0], NULL, &c, 0);
    if (a.oom || c.oom) st = PD_ENOMEM;
    *good = !st && a.n == c.n;
    for (int i = 0; *good && i < a.n; i++)
      *good = same_flat(a.ops[i], c.ops[i]);
  } else if (st != PD_ENOMEM) {
    st = PD_OK;  /* does not compile: the op() form is written */
  }
  pd_free(a.ops);
  pd_free(c.ops);
  pd_program_free(saved);
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
  bool plain = true;  /* the script with op() { } bodies was written (else its error) */
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
    st = pd_dc_write_script(&d, model_path, save_as, params, np);
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
    if (st == PD_EUNSUPPORTED && m->program->nblocks > 1) { /* a for may say it (below) */
      pd_error_clear(err);
      st = PD_OK;
      plain = false;
      break;
    }
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
    st = pd_dc_write_script(&d, model_path, save_as, params, np);
    if (!st && d.lifted) st = check_readable(&d, cf.data, cf.len, &readable);
    else if (st && st != PD_ENOMEM) { /* what the statements cannot say: the op() form */
      pd_error_clear(err);
      st = PD_OK;
    }
    dc_free(&d);
  }
  if (!st && !readable && !plain) { /* the plain script's error again */
    dc d;
    dc_init(&d, m, &text, err, NULL, &ls);
    pd_buf_clear(&text);
    st = pd_dc_write_script(&d, model_path, save_as, params, np);
    dc_free(&d);
    if (!st) st = pd_error_set(err, PD_EUNSUPPORTED, nowhere, "the script does not compile to "
                               "the model's ops");
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
