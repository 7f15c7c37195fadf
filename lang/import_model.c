/* import_model.c -- a saved model as a layer of a script: `m = import_model("dir/inference")`
 * loads a saved inference program (Fluid's .pdmodel, PaddlePaddle 3's PIR .json, a Fluid folder:
 * vm/run/model.h) at compile time; each call `y = m(x)` writes its ops into the current block
 * with the call's arguments for its feed targets, and returns its fetch targets. Its parameters
 * become the script's (named as in the file, after an optional prefix), made at the first call
 * and initialised from the model's parameters file by a load_combine op of the startup program;
 * they are trainable unless frozen. `m.inputs`, `m.outputs` (names, shapes, dtypes) and
 * `m.layer("name")` (a var of the latest call) read the model at compile time.
 *
 * Memory: the loaded programs (pd_cmp_model.m) are heap objects on the compiler's list, freed by
 * pd_cmp_models_free when the compilation ends; everything else is in the compiler's arena. */
#include "config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lang/builtins_int.h"
#include "vm/ir/params.h"
#include "vm/run/model.h"

struct pd_cmp_model {
  const char *path;         /* as the script named it, for messages */
  const char *file;         /* the model file or Fluid folder loaded */
  pd_model m;               /* its program, feeds and fetches (heap) */
  const char *prefix;       /* prepended to each parameter's name ("" for none) */
  bool trainable;           /* false: every parameter frozen */
  int nfreeze;              /* patterns (fnmatch) of parameters to freeze */
  const char **freeze;
  bool made;                /* the first call made the parameters and their load op */
  pd_strmap last;           /* the latest call: a var of the program -> its pd_var_desc */
  bool called;
  pd_loc loc;               /* the import_model call */
  pd_cmp_model *next;       /* the compiler's list (c->models) */
};

void pd_cmp_models_free(C *c) {
  for (pd_cmp_model *md = c->models; md; md = md->next) {
    pd_model_free(&md->m);
    pd_strmap_free(&md->last);
  }
  c->models = NULL;
}

const char *pd_cmp_model_path(const value *mv) { return mv->model->path; }

/* The parameters file beside the model (Fluid's __params__, else one file per parameter: NULL
 * with *per_file set), arena memory; NULL with c->oom on out of memory. */
static const char *params_file(C *c, pd_cmp_model *md, bool *per_file) {
  *per_file = false;
  if (md->m.fluid_dir) {
    const char *p = pd_cmp_fmt(c, "%s/%s", md->m.fluid_dir, PD_MODEL_FLUID_PARAMS);
    FILE *f = p ? fopen(p, "rb") : NULL;
    if (f) {
      fclose(f);
      return p;
    }
    *per_file = true;
    return NULL;
  }
  char *s = pd_params_path_for(md->file);
  const char *r = s ? pd_cmp_strdup(c, s) : NULL;
  if (!s) c->oom = true;
  pd_free(s);
  return r;
}

/* import_model(path, prefix = "", trainable = true, freeze = []) */
value *pd_cmp_b_import_model(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"path", "prefix", "trainable", "freeze", NULL};
  (void)self;
  if (!pd_cmp_check_args(c, a, 1, names)) return VERR;
  pd_loc ploc, xloc, tloc, floc;
  value *path = pd_cmp_arg(a, 0, "path", &ploc), *prefix = pd_cmp_arg(a, -1, "prefix", &xloc);
  value *trainable = pd_cmp_arg(a, -1, "trainable", &tloc);
  value *freeze = pd_cmp_arg(a, -1, "freeze", &floc);
  if (!path || path->k != V_STR) {
    if (!path || path->k != V_ERROR)
      pd_cmp_error(c, path ? ploc : a->loc, "import_model needs the saved model's path, a string "
                   "such as \"model/inference\" (NAME.pdmodel, NAME.json or a Fluid folder)");
    return VERR;
  }
  if (prefix && prefix->k != V_STR) {
    pd_cmp_error(c, xloc, "import_model: 'prefix' must be a string (prepended to each parameter's "
                 "name)");
    return VERR;
  }
  if (trainable && trainable->k != V_BOOL) {
    pd_cmp_error(c, tloc, "import_model: 'trainable' must be true or false");
    return VERR;
  }
  if (freeze && freeze->k == V_STR) {
    value *l = pd_cmp_vnew(c, V_LIST);
    if (l == VERR) return VERR;
    l->list.n = 1;
    if (!(l->list.items = pd_cmp_calloc(c, sizeof *l->list.items))) return VERR;
    l->list.items[0] = freeze;
    freeze = l;
  }
  if (freeze && freeze->k != V_LIST) {
    pd_cmp_error(c, floc, "import_model: 'freeze' must be a list of parameter names (patterns "
                 "such as \"conv1_*\" allowed)");
    return VERR;
  }
  for (int i = 0; freeze && i < freeze->list.n; i++)
    if (freeze->list.items[i]->k != V_STR) {
      pd_cmp_error(c, floc, "import_model: 'freeze' must be a list of strings; item %d is %s", i,
                   pd_cmp_vkind_phrase(freeze->list.items[i]));
      return VERR;
    }
  pd_cmp_model *md = pd_cmp_calloc(c, sizeof *md);
  if (!md) return VERR;
  md->path = path->s;
  md->prefix = prefix ? prefix->s : "";
  md->trainable = !trainable || trainable->b;
  md->loc = a->loc;
  pd_strmap_init(&md->last, true);
  md->next = c->models;
  c->models = md;
  char *resolved = pd_path_beside(a->loc.file, path->s), *found = NULL;
  if (!resolved) {
    c->oom = true;
    return VERR;
  }
  pd_error err = {0};
  pd_status st = pd_model_find(resolved, &found, &err);
  const char *file = found ? found : resolved;
  struct stat sb;
  if (!st && !found && stat(resolved, &sb) != 0)
    st = pd_error_set(&err, PD_EIO, (pd_loc){0}, "there is no %s, %s.pdmodel or %s.json%s",
                      resolved, resolved, resolved,
                      strcmp(resolved, path->s) ? "" : " (from the working directory; a relative "
                      "path is also looked for beside the script)");
  else if (!st && !found && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
    st = pd_error_set(&err, PD_EIO, (pd_loc){0}, "%s is neither a file nor a folder", resolved);
  if (!st) st = pd_model_load(&md->m, file, &err);
  if (!st && md->m.nfetches == 0)
    st = pd_error_set(&err, PD_EFORMAT, (pd_loc){0}, "it has no fetch ops: no outputs to return");
  if (!st) st = pd_model_load_params(&md->m, file, NULL, &err);
  md->file = pd_cmp_strdup(c, file);
  pd_free(found);
  pd_free(resolved);
  if (st == PD_ENOMEM) {
    c->oom = true;
    pd_error_clear(&err);
    return VERR;
  }
  if (st) {
    pd_cmp_error(c, ploc, "import_model: cannot use '%s': %s", path->s,
                 err.msg ? err.msg : pd_status_str(st));
    pd_error_clear(&err);
    return VERR;
  }
  /* The values were read to check them; the startup program reads them again when it runs. */
  pd_scope_free(md->m.scope);
  if (!(md->m.scope = pd_scope_new(NULL))) {
    c->oom = true;
    return VERR;
  }
  const char **params = NULL;
  int nparams = 0;
  if (pd_params_names(md->m.program, &params, &nparams)) {
    c->oom = true;
    return VERR;
  }
  if (freeze) {
    md->nfreeze = freeze->list.n;
    if (!(md->freeze = pd_cmp_calloc(c, sizeof *md->freeze * (size_t)(md->nfreeze + 1)))) {
      pd_free(params);
      return VERR;
    }
    for (int i = 0; i < md->nfreeze; i++) {
      const char *pat = md->freeze[i] = freeze->list.items[i]->s;
      int hits = 0;
      for (int j = 0; j < nparams; j++) hits += fnmatch(pat, params[j], 0) == 0;
      if (!hits) {
        const char *near = pd_cmp_suggest_kw(pat, params, nparams);
        pd_cmp_error(c, floc, "import_model: '%s' names no parameter of '%s'%s%s%s", pat, path->s,
                     near ? "; did you mean '" : " (it has ", near ? near : nparams ? params[0] : "none",
                     near ? "'?" : nparams > 1 ? ", ...)" : ")");
        pd_free(params);
        return VERR;
      }
    }
  }
  pd_free(params);
  value *v = pd_cmp_vnew(c, V_MODEL);
  if (v != VERR) v->model = md;
  return v;
}

/* ---- Calls ---- */

static bool frozen(const pd_cmp_model *md, const char *name) {
  if (!md->trainable) return true;
  for (int i = 0; i < md->nfreeze; i++)
    if (fnmatch(md->freeze[i], name, 0) == 0) return true;
  return false;
}

/* Whether an op of block 0 writes name (a persistable var that an op updates, such as batch
 * norm's running mean, is state, not a parameter to train). */
static bool written(const pd_block *b, const char *name) {
  for (int i = 0; i < b->nops; i++)
    for (int j = 0; j < b->ops[i]->noutputs; j++)
      for (int k = 0; k < b->ops[i]->outputs[j].nargs; k++)
        if (strcmp(b->ops[i]->outputs[j].args[k], name) == 0) return true;
  return false;
}

static bool copy_var_type(pd_var_desc *to, const pd_var_desc *from) {
  to->type = from->type;
  to->dtype = from->dtype;
  to->lod_level = from->lod_level;
  return pd_var_set_shape(to, from->ndims, from->dims) == 0;
}

/* The parameters, at the first call: a persistable var of the main and startup programs for
 * each (the prefix before its name), and the startup program's load_combine of the file. */
static bool make_params(C *c, pd_cmp_model *md, pd_loc loc) {
  const pd_block *src = md->m.program->blocks[0];
  const char **params = NULL;
  int n = 0;
  if (pd_params_names(md->m.program, &params, &n)) {
    c->oom = true;
    return false;
  }
  bool per_file;
  const char *file = params_file(c, md, &per_file);
  const char **pnames = pd_cmp_calloc(c, sizeof *pnames * (size_t)(n + 1));
  bool ok = pnames && (file || per_file);
  pd_block *mb = c->unit->main->blocks[0], *sb = c->unit->startup->blocks[0];
  for (int i = 0; ok && i < n; i++) {
    const char *pn = pnames[i] = pd_cmp_fmt(c, "%s%s", md->prefix, params[i]);
    if (!pn) {
      ok = false;
      break;
    }
    if (pd_cmp_name_taken(c, pn)) {
      pd_cmp_error(c, loc, "the parameter '%s' of '%s' is named as a var the script has already; "
                   "give import_model a prefix (import_model(\"%s\", prefix = \"m1.\"))", pn,
                   md->path, md->path);
      ok = false;
      break;
    }
    const pd_var_desc *o = pd_block_find_var_local(src, params[i]);
    pd_var_desc *v = pd_block_var(mb, pn), *sv = pd_block_var(sb, pn);
    if (!o || !v || !sv || !copy_var_type(v, o) || !copy_var_type(sv, o)) {
      c->oom = true;
      ok = false;
      break;
    }
    v->persistable = sv->persistable = true;
    v->stop_gradient = frozen(md, params[i]) || written(src, params[i]) ||
                       !pd_dtype_is_float(o->dtype);
  }
  for (int i = 0; ok && i < (per_file ? n : n ? 1 : 0); i++) {
    pd_op_desc *op = pd_block_add_op(sb, "load_combine", -1);
    const char *fp = per_file ? pd_cmp_fmt(c, "%s/%s", md->m.fluid_dir, params[i]) : file;
    if (!op || !fp || !pd_cmp_op_set_loc(c, op, loc) ||
        pd_op_set_output(op, "Out", per_file ? 1 : n, pnames + (per_file ? i : 0)) ||
        pd_op_set_attr_string(op, "file_path", fp)) {
      c->oom = true;
      ok = false;
    }
  }
  pd_free(params);
  md->made = ok;
  return ok;
}

/* Whether an input slot carries values a gradient flows back to (not a shape or a scalar read
 * on the host: fill_constant_batch_size_like's Input, a ShapeTensor). */
static bool value_slot(const pd_opdef *def, const char *slot) {
  for (int i = 0; def && i < def->ninputs; i++)
    if (strcmp(def->inputs[i].name, slot) == 0)
      return !(def->inputs[i].flags & (PD_SLOT_HOST | PD_SLOT_ANY));
  return true;
}

static bool float_var(const pd_block *b, const char *name) {
  const pd_var_desc *v = pd_block_find_var(b, name);
  return v && v->type == PD_VAR_LOD_TENSOR && pd_dtype_is_float(v->dtype);
}

/* " of block N" for an op of a sub-block, in messages. */
static const char *of_block(C *c, const pd_block *b) {
  return b->idx ? pd_cmp_fmt(c, " of block %d", b->idx) : "";
}

/* The ops of saved block b and the blocks under it, in the order they run: a block op's block
 * before the op. False on out of memory. */
typedef struct run_op {
  const pd_op_desc *op;
  const pd_block *b;
  int i;                    /* its index in b */
} run_op;

static bool ops_in_order(const pd_program *p, const pd_block *b, run_op **ops, size_t *n,
                         size_t *cap, int depth) {
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    for (int j = 0; j < op->nattrs && depth < PD_MAX_BLOCK_DEPTH; j++) {
      const pd_block *sb =
          op->attrs[j].type == PD_ATTR_BLOCK ? pd_program_block(p, op->attrs[j].v.i) : NULL;
      if (sb && sb->parent_idx == b->idx && sb != b && !ops_in_order(p, sb, ops, n, cap, depth + 1))
        return false;
    }
    if (PD_GROW(*ops, *cap, *n + 1)) return false;
    (*ops)[(*n)++] = (run_op){op, b, i};
  }
  return true;
}

/* Walk the ops once: back (reach: the vars the model's outputs are computed from) or forward
 * (from: a float var -> a trainable parameter it is computed from through ops with gradients).
 * Returns how many vars were added; -1 on out of memory. With report, an op without a gradient
 * that carries such a var into a var that reaches an output is an error at the call instead. */
static int walk(C *c, pd_cmp_model *md, const run_op *ops, size_t n, pd_strmap *reach,
                pd_strmap *from, bool back, bool report, pd_loc loc) {
  int added_n = 0;
  bool added;
  for (size_t r = 0; r < n; r++) {
    const run_op *ro = &ops[back ? n - 1 - r : r];
    const pd_op_desc *op = ro->op;
    if (back) {
      bool hit = false;
      for (int j = 0; !hit && j < op->noutputs; j++)
        for (int k = 0; !hit && k < op->outputs[j].nargs; k++)
          hit = pd_strmap_find(reach, op->outputs[j].args[k]) != NULL;
      for (int j = 0; hit && j < op->ninputs; j++)
        for (int k = 0; k < op->inputs[j].nargs; k++) {
          if (!pd_strmap_add(reach, op->inputs[j].args[k], &added)) return -1;
          added_n += added;
        }
      continue;
    }
    const pd_opdef *def = pd_opdef_lookup(op->type);
    const char *param = NULL;
    for (int j = 0; !param && j < op->ninputs; j++)
      for (int k = 0; !param && k < op->inputs[j].nargs; k++)
        if (value_slot(def, op->inputs[j].param) && float_var(ro->b, op->inputs[j].args[k]))
          param = pd_strmap_get_ptr(from, op->inputs[j].args[k]);
    if (!param) continue;
    bool diff = def && (def->flags & PD_OPF_DIFF);
    for (int j = 0; j < op->noutputs; j++)
      for (int k = 0; k < op->outputs[j].nargs; k++) {
        const char *out = op->outputs[j].args[k];
        if (!float_var(ro->b, out)) continue;
        if (diff) {
          pd_strmap_entry *e = pd_strmap_add(from, out, &added);
          if (!e) return -1;
          if (added) e->val.p = (void *)param, added_n++;
        } else if (report && pd_strmap_find(reach, out)) {
          pd_cmp_error(c, loc, "op %d%s (%s) of '%s' has no gradient, yet the model's outputs "
                       "depend through it on the trainable parameter '%s': freeze the "
                       "parameters before it (import_model(\"%s\", freeze = [\"%s\", ...])) or "
                       "import the model with trainable = false", ro->i, of_block(c, ro->b),
                       op->type, md->path, param, md->path, param);
          return 0;
        }
      }
  }
  return added_n;
}

/* Training through the model: every op between a trainable parameter and the model's outputs
 * needs a gradient. The vars that reach a fetch target are found walking back, the float vars
 * computed from a trainable parameter walking forward (again, until nothing changes: a while
 * loop carries them round); then an op without a gradient that reads such a var and writes a
 * float var that reaches an output is an error at the call naming it. False after reporting (or
 * on out of memory). */
static bool check_gradients(C *c, pd_cmp_model *md, pd_loc loc) {
  const pd_program *p = md->m.program;
  const pd_block *src = p->blocks[0];
  pd_strmap reach, from;
  pd_strmap_init(&reach, false);
  pd_strmap_init(&from, false);
  run_op *ops = NULL;
  size_t n = 0, cap = 0;
  bool ok = ops_in_order(p, src, &ops, &n, &cap, 0), added;
  for (int i = 0; ok && i < md->m.nfetches; i++)
    ok = pd_strmap_add(&reach, md->m.fetches[i].var, &added) != NULL;
  for (int i = 0; ok && i < src->nvars; i++) {
    const pd_var_desc *v = src->vars[i];
    if (v->persistable && float_var(src, v->name) && !frozen(md, v->name) &&
        !written(src, v->name)) {
      pd_strmap_entry *e = pd_strmap_add(&from, v->name, &added);
      if (!(ok = e != NULL)) break;
      e->val.p = (void *)v->name;
    }
  }
  int more = 1;
  while (ok && more > 0) ok = (more = walk(c, md, ops, n, &reach, &from, true, false, loc)) >= 0;
  more = 1;
  while (ok && more > 0) ok = (more = walk(c, md, ops, n, &reach, &from, false, false, loc)) >= 0;
  int errors = c->diags->nerrors;
  if (ok) ok = walk(c, md, ops, n, &reach, &from, false, true, loc) >= 0;
  pd_free(ops);
  pd_strmap_free(&reach);
  pd_strmap_free(&from);
  if (!ok) c->oom = true;
  return ok && c->diags->nerrors == errors;
}

/* The index of feed target `name` of the model, else -1. */
static int feed_index(const pd_model *m, const char *name) {
  for (int i = 0; i < m->nfeeds; i++)
    if (strcmp(m->feeds[i].var, name) == 0) return i;
  return -1;
}

/* The arguments of a call, one per feed target (by position, then by name), checked against
 * the feed vars' dtypes and shapes. */
static bool bind_inputs(C *c, pd_cmp_model *md, call_args *a, value **in, pd_loc *in_loc) {
  const pd_model *m = &md->m;
  const pd_block *src = m->program->blocks[0];
  const char **fnames = pd_cmp_calloc(c, sizeof *fnames * (size_t)(m->nfeeds + 1));
  if (!fnames) return false;
  for (int i = 0; i < m->nfeeds; i++) fnames[i] = m->feeds[i].var;
  if (a->npos > m->nfeeds) {
    pd_cmp_error(c, a->pos_loc[m->nfeeds], "'%s' takes %d input%s, got %d", md->path, m->nfeeds,
                 m->nfeeds == 1 ? "" : "s", a->npos);
    return false;
  }
  for (int i = 0; i < a->npos; i++) in[i] = a->pos[i], in_loc[i] = a->pos_loc[i];
  for (int k = 0; k < a->nkw; k++) {
    int i = feed_index(m, a->kw[k]);
    if (i < 0) {
      const char *near = pd_cmp_suggest_kw(a->kw[k], fnames, m->nfeeds);
      pd_cmp_error(c, a->kw_loc[k], "'%s' has no input '%s'%s%s%s", md->path, a->kw[k],
                   near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
      return false;
    }
    if (in[i]) {
      pd_cmp_error(c, a->kw_loc[k], "input '%s' of '%s' is given twice", a->kw[k], md->path);
      return false;
    }
    in[i] = a->kwv[k], in_loc[i] = a->kw_loc[k];
  }
  for (int i = 0; i < m->nfeeds; i++) {
    const pd_var_desc *f = pd_block_find_var_local(src, m->feeds[i].var);
    if (!in[i]) {
      pd_cmp_error(c, a->loc, "input '%s' of '%s' (%s %s) is not given", m->feeds[i].var,
                   md->path, f ? pd_dtype_name(f->dtype) : "?", f ? pd_cmp_dims_str(c, f) : "");
      return false;
    }
    if (!pd_cmp_want_tensor_arg(c, in[i], in_loc[i], md->path, m->feeds[i].var)) return false;
    const pd_var_desc *x = in[i]->var;
    if (!f) continue;
    bool same = x->dtype == f->dtype && (f->ndims < 0 || x->ndims < 0 || x->ndims == f->ndims);
    for (int d = 0; same && f->ndims > 0 && x->ndims == f->ndims && d < f->ndims; d++)
      same = f->dims[d] < 0 || x->dims[d] < 0 || f->dims[d] == x->dims[d];
    if (!same) {
      pd_cmp_error(c, in_loc[i], "input '%s' of '%s' is %s %s; this is %s %s", m->feeds[i].var,
                   md->path, pd_dtype_name(f->dtype), pd_cmp_dims_str(c, f),
                   pd_dtype_name(x->dtype), pd_cmp_dims_str(c, x));
      return false;
    }
  }
  return true;
}

/* The var of the call that name of the imported program became (map), or NULL. */
static pd_var_desc *mapped(const pd_strmap *map, const char *name) {
  return pd_strmap_get_ptr(map, name);
}

/* Copying the saved program's ops into the script's program at a call. */
typedef struct copy_ctx {
  C *c;
  pd_cmp_model *md;
  pd_loc loc;               /* the call */
  pd_strmap *map;           /* a var of the saved block 0 -> the script's var (md->last) */
  pd_strmap inner;          /* "BLOCK:name", a var of a saved sub-block -> the script's var */
  pd_block **to;            /* a block of the saved program (by index) -> the script's block */
  pd_var_desc *last_out;    /* the newest output made */
} copy_ctx;

/* The script's var for var `name` as an op of saved block b names it (the block that declares
 * it decides which), else NULL; *owner (when not NULL) gets that block. */
static pd_var_desc *map_var(copy_ctx *k, const pd_block *b, const char *name,
                            const pd_block **owner) {
  const pd_block *o = NULL;
  if (!pd_block_find_var_visible(b, name, &o) || !o) o = b;
  if (owner) *owner = o;
  if (o->idx == 0) return mapped(k->map, name);
  const char *key = pd_cmp_fmt(k->c, "%d:%s", o->idx, name);
  return key ? pd_strmap_get_ptr(&k->inner, key) : NULL;
}

/* Rewrite the args of slot s of the copied op nop (an op of saved block b) to the script's
 * vars; outputs get new vars in the block that declares them the first time. */
static bool map_slot(copy_ctx *k, const pd_block *b, int i, const pd_op_desc *op, pd_slot *s,
                     bool output) {
  C *c = k->c;
  for (int j = 0; j < s->nargs; j++) {
    if (strcmp(s->args[j], PD_EMPTY_VAR_NAME) == 0) continue;
    const pd_block *o;
    pd_var_desc *v = map_var(k, b, s->args[j], &o);
    if (!v && !output) {
      pd_cmp_error(c, k->loc, "op %d%s (%s) of '%s' reads '%s', which is no input, parameter "
                   "or output of an op before it", i, of_block(c, b), op->type, k->md->path,
                   s->args[j]);
      return false;
    }
    if (!v) {
      const pd_var_desc *ov = pd_block_find_var_local(o, s->args[j]);
      pd_block *tb = k->to[o->idx];
      v = tb ? pd_cmp_var_new(c, tb, pd_cmp_fmt(c, "%s%s", k->md->prefix, s->args[j]), false)
             : NULL;
      if (!v || (ov && !copy_var_type(v, ov))) goto oom;
      v->stop_gradient = !pd_dtype_is_float(v->dtype);  /* the shape is inferred below */
      bool added;
      pd_strmap_entry *e;
      if (o->idx == 0) e = pd_strmap_add(k->map, s->args[j], &added);
      else {
        const char *key = pd_cmp_fmt(c, "%d:%s", o->idx, s->args[j]);
        e = key ? pd_strmap_add(&k->inner, key, &added) : NULL;
      }
      if (!e) goto oom;
      e->val.p = v;
    }
    char *dup = pd_strdup(v->name);
    if (!dup) goto oom;
    pd_free(s->args[j]);
    s->args[j] = dup;
    if (output && o->idx == 0) k->last_out = v;
  }
  return true;
oom:
  c->oom = true;
  return false;
}

/* Copy the ops of saved block b into the script's block k->to[b->idx], in order; an op that runs
 * a block gets a new block of the script, its ops copied first. */
static bool copy_ops(copy_ctx *k, const pd_block *b) {
  C *c = k->c;
  const pd_program *sp = k->md->m.program;
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    if (strcmp(op->type, "feed") == 0 || strcmp(op->type, "fetch") == 0) continue;
    if (!pd_cmp_spend(c, PD_CMP_WORK_OP, k->loc)) return false;
    const pd_attr *blk = NULL;
    for (int j = 0; j < op->nattrs; j++) {
      const pd_attr *at = &op->attrs[j];
      if (at->type == PD_ATTR_BLOCK) blk = at;
      const pd_block *sb = at->type == PD_ATTR_BLOCK ? pd_program_block(sp, at->v.i) : NULL;
      if (at->type == PD_ATTR_BLOCKS || (blk && !strcmp(op->type, "recurrent")) ||
          (at->type == PD_ATTR_BLOCK && (!sb || sb->parent_idx != b->idx || sb == b))) {
        pd_cmp_error(c, k->loc, "op %d%s (%s) of '%s' runs %s, which cannot be called as a layer "
                     "(pdlang exec runs it)", i, of_block(c, b), op->type, k->md->path,
                     at->type == PD_ATTR_BLOCKS ? "several blocks"
                     : !sb || sb->parent_idx != b->idx || sb == b ? "a block that is not under its own"
                     : "a recurrent block (it names the block's vars in its attributes)");
        return false;
      }
    }
    int sub = -1;
    if (blk) {
      const pd_block *sb = pd_program_block(sp, blk->v.i);
      pd_block *nb = pd_program_add_block(c->unit->main, k->to[b->idx]->idx);
      if (!nb) goto oom;
      k->to[sb->idx] = nb;
      sub = nb->idx;
      if (!copy_ops(k, sb)) return false;
    }
    pd_block *dst = k->to[b->idx];
    pd_op_desc *nop = pd_block_copy_op(dst, -1, op);
    if (!nop || !pd_cmp_op_set_loc(c, nop, k->loc)) goto oom;
    if (blk && pd_op_set_attr_block(nop, blk->name, sub)) goto oom;
    for (int j = 0; j < nop->ninputs; j++)
      if (!map_slot(k, b, i, op, &nop->inputs[j], false)) return false;
    for (int j = 0; j < nop->noutputs; j++)
      if (!map_slot(k, b, i, op, &nop->outputs[j], true)) return false;
    pd_block *saved = c->block;
    c->block = dst;  /* temps of the op go beside it */
    bool temps = pd_cmp_op_temps(c, nop);
    c->block = saved;
    if (!temps) goto oom;
    pd_op_remove_attr(nop, "op_callstack");  /* Paddle's Python stack: the call's line instead */
    const pd_opdef *def = pd_opdef_lookup(nop->type);
    if (def && pd_opdef_attr(def, "is_test") && pd_op_set_attr_bool(nop, "is_test", false))
      goto oom;
    pd_error err = {0};
    pd_status st = pd_opdef_prepare(nop, dst, &err);
    if (st == PD_ENOMEM) goto oom;
    if (st) {
      pd_cmp_error(c, k->loc, "op %d%s (%s) of '%s': %s", i, of_block(c, b), op->type,
                   k->md->path, err.msg ? err.msg : pd_status_str(st));
      pd_error_clear(&err);
      return false;
    }
  }
  return true;
oom:
  c->oom = true;
  return false;
}

/* Whether exactly one slot of one op of p names var `name`. */
static bool named_once(const pd_program *p, const char *name) {
  int n = 0;
  for (int b = 0; b < p->nblocks && n < 2; b++)
    for (int i = 0; i < p->blocks[b]->nops && n < 2; i++) {
      const pd_op_desc *op = p->blocks[b]->ops[i];
      for (int j = 0; j < op->ninputs; j++)
        for (int k = 0; k < op->inputs[j].nargs; k++) n += !strcmp(op->inputs[j].args[k], name);
      for (int j = 0; j < op->noutputs; j++)
        for (int k = 0; k < op->outputs[j].nargs; k++) n += !strcmp(op->outputs[j].args[k], name);
    }
  return n == 1;
}

value *pd_cmp_call_model(C *c, value *mv, call_args *a) {
  pd_cmp_model *md = mv->model;
  const pd_model *m = &md->m;
  const pd_block *src = m->program->blocks[0];
  if (c->cf) {
    pd_cmp_error(c, a->loc, "a saved model is called outside if, for and while blocks (its ops "
                 "go into the block of the call)");
    return VERR;
  }
  value **in = pd_cmp_calloc(c, sizeof *in * (size_t)(m->nfeeds + 1));
  pd_loc *in_loc = pd_cmp_calloc(c, sizeof *in_loc * (size_t)(m->nfeeds + 1));
  if (!in || !in_loc || !bind_inputs(c, md, a, in, in_loc)) return VERR;
  if (!md->made && (!check_gradients(c, md, a->loc) || !make_params(c, md, a->loc))) return VERR;
  pd_strmap_free(&md->last);
  md->called = false;
  pd_strmap *map = &md->last;
  pd_strmap_entry *e;
  bool added;
  pd_block *mb = c->unit->main->blocks[0];
  for (int i = 0; i < m->nfeeds; i++) {
    if (!(e = pd_strmap_add(map, m->feeds[i].var, &added))) goto oom;
    e->val.p = in[i]->var;
  }
  for (int i = 0; i < src->nvars; i++) {
    const pd_var_desc *o = src->vars[i];
    if (!o->persistable || o->type != PD_VAR_LOD_TENSOR) continue;
    const char *pn = pd_cmp_fmt(c, "%s%s", md->prefix, o->name);
    if (!pn || !(e = pd_strmap_add(map, o->name, &added))) goto oom;
    e->val.p = pd_block_find_var_local(mb, pn);
  }
  copy_ctx k = {.c = c, .md = md, .loc = a->loc, .map = map};
  pd_strmap_init(&k.inner, true);
  if (!(k.to = pd_calloc((size_t)m->program->nblocks + 1, sizeof *k.to))) {
    pd_strmap_free(&k.inner);
    goto oom;
  }
  k.to[0] = c->block;
  bool copied = copy_ops(&k, src);
  pd_var_desc *last_out = k.last_out;
  pd_free(k.to);
  pd_strmap_free(&k.inner);
  if (!copied) return VERR;
  md->called = true;
  value **outs = pd_cmp_calloc(c, sizeof *outs * (size_t)m->nfetches);
  if (!outs) return VERR;
  for (int i = 0; i < m->nfetches; i++) {
    pd_var_desc *v = mapped(map, m->fetches[i].var);
    if (!v) {
      pd_cmp_error(c, a->loc, "fetch target %d of '%s', '%s', is made by no op", i, md->path,
                   m->fetches[i].var);
      return VERR;
    }
    outs[i] = pd_cmp_vtensor(c, v);
  }
  if (m->nfetches == 1) {
    /* renamable after the assignment's name when the last op alone names it (not a var that
     * several ops write, as a cond's output that each branch's block assigns) */
    if (!c->call && outs[0]->var == last_out && named_once(c->unit->main, last_out->name))
      c->last_temp = last_out;
    return outs[0];
  }
  value *l = pd_cmp_vnew(c, V_LIST);
  if (l == VERR) return VERR;
  l->list.n = m->nfetches;
  l->list.items = outs;
  return l;
oom:
  c->oom = true;
  return VERR;
}

/* ---- Attributes ---- */

/* A record NAME(name = ..., shape = [...], dtype = ...) of var v of the program. */
static value *var_record(C *c, const char *kind, const char *name, const pd_var_desc *v,
                         pd_loc loc) {
  value *r = pd_cmp_vnew(c, V_RECORD);
  if (r == VERR) return VERR;
  static const char *const keys[] = {"name", "shape", "dtype"};
  r->rec.name = kind;
  r->rec.n = 3;
  r->rec.loc = loc;
  r->rec.keys = pd_cmp_calloc(c, sizeof *r->rec.keys * 3);
  r->rec.vals = pd_cmp_calloc(c, sizeof *r->rec.vals * 3);
  r->rec.locs = pd_cmp_calloc(c, sizeof *r->rec.locs * 3);
  value *shape = pd_cmp_vnew(c, V_LIST), *dt = pd_cmp_vnew(c, V_DTYPE);
  if (!r->rec.keys || !r->rec.vals || !r->rec.locs || shape == VERR || dt == VERR) return VERR;
  int nd = v && v->ndims > 0 ? v->ndims : 0;
  shape->list.n = nd;
  if (!(shape->list.items = pd_cmp_calloc(c, sizeof *shape->list.items * (size_t)(nd + 1))))
    return VERR;
  for (int i = 0; i < nd; i++) shape->list.items[i] = pd_cmp_vint(c, v->dims[i]);
  dt->dtype = v ? v->dtype : PD_FP32;
  for (int i = 0; i < 3; i++) r->rec.keys[i] = keys[i], r->rec.locs[i] = loc;
  r->rec.vals[0] = pd_cmp_vstr(c, name);
  r->rec.vals[1] = shape;
  r->rec.vals[2] = dt;
  return r;
}

value *pd_cmp_model_attr(C *c, value *mv, const char *name, pd_loc loc) {
  pd_cmp_model *md = mv->model;
  const pd_model *m = &md->m;
  bool inputs = strcmp(name, "inputs") == 0;
  if (inputs || strcmp(name, "outputs") == 0) {
    int n = inputs ? m->nfeeds : m->nfetches;
    value *l = pd_cmp_vnew(c, V_LIST);
    if (l == VERR) return VERR;
    l->list.n = n;
    if (!(l->list.items = pd_cmp_calloc(c, sizeof *l->list.items * (size_t)(n + 1)))) return VERR;
    for (int i = 0; i < n; i++) {
      const char *var = inputs ? m->feeds[i].var : m->fetches[i].var;
      l->list.items[i] = var_record(c, inputs ? "input" : "output", var,
                                    pd_block_find_var_local(m->program->blocks[0], var), loc);
      if (l->list.items[i] == VERR) return VERR;
    }
    return l;
  }
  if (strcmp(name, "path") == 0) return pd_cmp_vstr(c, md->path);
  if (strcmp(name, "layer") == 0) {
    value *f = pd_cmp_vnew(c, V_METHOD);
    if (f != VERR) f->method.self = mv, f->method.name = "layer";
    return f;
  }
  pd_cmp_error(c, loc, "a saved model has no attribute '%s' (it has inputs, outputs, path, "
               "layer(\"name\"))", name);
  return VERR;
}

/* m.layer("name"): the var `name` of the program as the latest call of m made it. */
value *pd_cmp_call_method(C *c, value *fn, call_args *a) {
  pd_cmp_model *md = fn->method.self->model;
  static const char *const names[] = {"name", NULL};
  if (!pd_cmp_check_args(c, a, 1, names)) return VERR;
  pd_loc nloc;
  value *name = pd_cmp_arg(a, 0, "name", &nloc);
  if (!name || name->k != V_STR) {
    if (!name || name->k != V_ERROR)
      pd_cmp_error(c, name ? nloc : a->loc, "layer needs the name of a var of '%s', a string",
                   md->path);
    return VERR;
  }
  if (!md->called) {
    pd_cmp_error(c, a->loc, "'%s' has not been called yet: layer(\"%s\") is a var of its latest "
                 "call (y = m(x), then m.layer(\"%s\"))", md->path, name->s, name->s);
    return VERR;
  }
  pd_var_desc *v = mapped(&md->last, name->s);
  if (v) return pd_cmp_vtensor(c, v);
  const pd_block *src = md->m.program->blocks[0];
  const char **vn = pd_cmp_calloc(c, sizeof *vn * (size_t)(src->nvars + 1));
  if (!vn) return VERR;
  for (int i = 0; i < src->nvars; i++) vn[i] = src->vars[i]->name;
  const char *near = pd_cmp_suggest_kw(name->s, vn, src->nvars);
  pd_cmp_error(c, nloc, "'%s' has no var '%s'%s%s%s (pdlang dump %s lists them)", md->path,
               name->s, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "",
               md->path);
  return VERR;
}
