/* decompile.c -- a saved inference program as .pd source (lang/decompile.h): data() for its
 * feed targets, param() for its parameters, op() for each op, load() and save(). An op that runs
 * a block (conditional_block, while) is written with its block as a body, op(...) { ... }, and a
 * var of a block that a block below it writes first is declared before, declare(shape). Each var
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
} dc;

static const pd_loc nowhere = {0};

static pd_status oom(dc *d) { return pd_error_set(d->err, PD_ENOMEM, nowhere, "out of memory"); }

static bool reserved(const char *s) {
  static const char *const kw[] = {"and", "def", "else", "emit", "false", "for", "if",
                                   "import", "in", "let", "none", "not", "or", "return",
                                   "true", "while"};
  for (size_t i = 0; i < PD_ARRAY_LEN(kw); i++)
    if (strcmp(kw[i], s) == 0) return true;
  if (pd_dtype_from_name(s) >= 0) return true;
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

/* The ops of block b, in their order, at the current depth. */
static pd_status put_ops(dc *d, const pd_block *b) {
  pd_status st = PD_OK;
  for (int i = 0; !st && i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    if (strcmp(op->type, "feed") == 0 || strcmp(op->type, "fetch") == 0) continue;
    st = put_op(d, b, i, op);
    if (st && !d->err->msg) st = oom(d);
  }
  return st;
}

static pd_status put_op(dc *d, const pd_block *b, int index, const pd_op_desc *op) {
  const pd_opdef *def = pd_opdef_lookup(op->type);
  if (!def)
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d: '%s' is not an op of pdlang",
                        index, op->type);
  const pd_block *sub;
  char where[32];
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
    for (int k = 0; k < s->nargs; k++) n += !defined(d, b, s->args[k]);
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
    d->depth++;
    st = put_ops(d, sub);
    d->depth--;
    if (!st) {
      indent(d);
      pd_buf_puts(d->out, "}\n");
    }
  }
  pd_buf_free(&lhs);
  pd_free(outs);
  return st;
}

pd_status pd_decompile(const pd_model *m, const char *model_path, const char *save_as,
                       pd_buf *out, pd_error *err) {
  dc d = {.m = m, .b = m->program->blocks[0], .out = out, .err = err};
  pd_strmap_init(&d.ident, true);
  pd_strmap_init(&d.taken, false);
  pd_status st = PD_OK;
  pd_buf_puts(out, "# ");
  pd_buf_puts(out, model_path);
  pd_buf_printf(out, ", decompiled by `pdlang decompile`: %d ops. `pdlang run` of this script "
                     "writes the\n# same program to ", d.b->nops);
  put_str(out, save_as);
  pd_buf_puts(out, ".\n\n# inputs\n");
  for (int i = 0; !st && i < m->nfeeds; i++) {
    const pd_var_desc *v = pd_block_find_var_local(d.b, m->feeds[i].var);
    const char *id = v ? ident(&d, d.b, v->name) : NULL;
    if (!v) st = pd_error_set(err, PD_EFORMAT, nowhere, "feed target '%s' is no var",
                              m->feeds[i].var);
    else if (!id) st = oom(&d);
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
  const char **params = NULL;
  int np = 0;
  if (!st && pd_params_names(m->program, &params, &np)) st = oom(&d);
  if (!st && np) pd_buf_puts(out, "\n# parameters (their values: load below)\n");
  for (int i = 0; !st && i < np; i++) {
    const pd_var_desc *v = pd_block_find_var_local(d.b, params[i]);
    if (v->dtype != PD_FP32 && v->dtype != PD_FP64) {
      st = pd_error_set(err, PD_EUNSUPPORTED, nowhere, "parameter '%s' is %s: a script's "
                        "parameters are float32 or float64", v->name, pd_dtype_name(v->dtype));
      break;
    }
    bool state = false; /* written by an op (of any block): batch norm's running statistics */
    for (int bi = 0; bi < m->program->nblocks && !state; bi++) {
      const pd_block *bk = m->program->blocks[bi];
      for (int k = 0; k < bk->nops && !state; k++)
        for (int j = 0; j < bk->ops[k]->noutputs && !state; j++)
          for (int a = 0; a < bk->ops[k]->outputs[j].nargs; a++)
            state |= !strcmp(bk->ops[k]->outputs[j].args[a], v->name);
    }
    const char *id = ident(&d, d.b, v->name);
    if (!id) {
      st = oom(&d);
      break;
    }
    pd_buf_printf(out, "%s = param(", id);
    put_str(out, v->name);
    pd_buf_puts(out, ", ");
    put_dims(out, v->ndims, v->dims);
    if (v->dtype != PD_FP32) pd_buf_printf(out, ", dtype = %s", pd_dtype_name(v->dtype));
    if (state) pd_buf_puts(out, ", trainable = false");
    pd_buf_puts(out, ")\n");
  }
  if (!st) pd_buf_puts(out, "\n# the ops, in the saved program's order\n");
  if (!st) st = put_ops(&d, d.b);
  if (!st) {
    pd_buf_puts(out, "\n");
    if (np) { /* a .pdmodel's parameters by their names, else the parameters file itself */
      size_t n = strlen(model_path);
      char *pp = n > 8 && !strcmp(model_path + n - 8, ".pdmodel") ? NULL
                 : m->fluid_dir ? NULL : pd_params_path_for(model_path);
      const char *lp = pp ? pp : model_path;
      char *fluid = NULL;
      if (m->fluid_dir) {
        pd_buf fb;
        pd_buf_init(&fb);
        pd_buf_printf(&fb, "%s/%s", m->fluid_dir, PD_MODEL_FLUID_PARAMS);
        lp = fluid = pd_buf_take(&fb);
      }
      if (!lp) st = oom(&d);
      else {
        pd_buf_puts(out, "load(");
        put_str(out, lp);
        pd_buf_puts(out, ")\n");
      }
      pd_free(pp);
      pd_free(fluid);
    }
    pd_buf_puts(out, "save(");
    put_str(out, save_as);
    for (int i = 0; i < m->nfetches && !st; i++) {
      const char *id = defined(&d, d.b, m->fetches[i].var) ? ident(&d, d.b, m->fetches[i].var)
                                                          : NULL;
      if (!id) st = pd_error_set(err, PD_EUNSUPPORTED, nowhere, "fetch target '%s' is made by "
                                 "no op", m->fetches[i].var);
      else pd_buf_printf(out, ", %s", id);
    }
    pd_buf_puts(out, ")\n");
  }
  if (!st && (out->oom || d.oom)) st = oom(&d);
  pd_free(params);
  for (size_t i = 0; i < d.taken.cap; i++)
    if (d.taken.slots && d.taken.slots[i].key) pd_free(d.taken.slots[i].val.p);
  pd_strmap_free(&d.ident);
  pd_strmap_free(&d.taken);
  return st;
}
