/* backward.c -- append_backward (see vm/backward.h): gradient ops for the ops a cost depends on,
 * in reverse order, with fan-out gradients summed. */
#include "config.h"
#include "vm/backward.h"

#include <stdio.h>
#include <string.h>

#include "vm/ops.h"

#define GRAD "@GRAD"

/* ---- A small name -> info map (open addressing). Keys are borrowed from the program. ---- */
typedef struct vinfo {
  const char *name;
  bool needs;       /* needs a gradient */
  int contribs;     /* gradients made so far (0: none) */
} vinfo;

typedef struct vmap {
  size_t cap, n;
  vinfo *slots;
} vmap;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The info of name, created when create is set (NULL on out of memory or when absent). */
static vinfo *vmap_get(vmap *m, const char *name, bool create) {
  if (create && (m->n + 1) * 2 > m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 256;
    vinfo *ns = pd_calloc(ncap, sizeof *ns);
    if (!ns) return NULL;
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->slots[i].name) continue;
      size_t j = hash_str(m->slots[i].name) & (ncap - 1);
      while (ns[j].name) j = (j + 1) & (ncap - 1);
      ns[j] = m->slots[i];
    }
    pd_free(m->slots);
    m->slots = ns;
    m->cap = ncap;
  }
  if (!m->cap) return NULL;
  size_t j = hash_str(name) & (m->cap - 1);
  while (m->slots[j].name) {
    if (strcmp(m->slots[j].name, name) == 0) return &m->slots[j];
    j = (j + 1) & (m->cap - 1);
  }
  if (!create) return NULL;
  m->slots[j] = (vinfo){.name = name};
  m->n++;
  return &m->slots[j];
}

static bool is_float(pd_dtype t) { return t == PD_FP32 || t == PD_FP64 || t == PD_FP16; }

/* ---- The pass ---- */

typedef struct bw {
  pd_program *p;
  pd_block *b0;
  vmap m;
  pd_error *err;
  pd_buf name;      /* scratch for names */
} bw;

static pd_status oom(bw *w) { return pd_error_set(w->err, PD_ENOMEM, (pd_loc){0}, "out of memory"); }

static const char *grad_name(bw *w, const char *var, int k) {
  w->name.len = 0;
  if (k == 0) pd_buf_printf(&w->name, "%s" GRAD, var);
  else pd_buf_printf(&w->name, "%s" GRAD "@RENAME@%d", var, k);
  return w->name.oom ? NULL : w->name.data;
}

/* Declare a gradient var in block 0 (its shape comes from the op that writes it). */
static pd_var_desc *declare(bw *w, const char *name, const pd_var_desc *like) {
  pd_var_desc *v = pd_block_var(w->b0, name);
  if (!v) return NULL;
  if (like) {
    v->dtype = like->dtype;
    v->lod_level = like->lod_level;
    if (pd_var_set_shape(v, like->ndims, like->dims)) return NULL;
  }
  return v;
}

static pd_status finish_op(bw *w, pd_op_desc *op, pd_loc loc, int role) {
  if (pd_op_set_loc(op, loc) || pd_op_set_attr_int(op, "op_role", role)) return oom(w);
  return pd_opdef_prepare(op, w->b0, w->err);
}

/* Add up the gradients of var (when more than one was made) into <var>@GRAD. */
static pd_status total(bw *w, vinfo *vi, pd_loc loc) {
  if (vi->contribs <= 1) return PD_OK;
  int n = vi->contribs;
  char **names = pd_calloc((size_t)n, sizeof *names);
  if (!names) return oom(w);
  pd_status st = PD_OK;
  for (int k = 0; k < n && !st; k++) {
    const char *g = grad_name(w, vi->name, k);
    if (!g || !(names[k] = pd_strdup(g))) st = oom(w);
  }
  pd_op_desc *op = st ? NULL : pd_block_add_op(w->b0, "sum", -1);
  if (!st && !op) st = oom(w);
  if (!st && (pd_op_set_input(op, "X", n, (const char *const *)names) ||
              pd_op_set_output(op, "Out", 1, (const char *const *)names)))
    st = oom(w);
  if (!st) st = finish_op(w, op, loc, PD_OP_ROLE_BACKWARD);
  for (int k = 0; k < n; k++) pd_free(names[k]);
  pd_free(names);
  if (!st) vi->contribs = 1;
  return st;
}

static const pd_var_desc *find(bw *w, const char *name) {
  return pd_block_find_var(w->b0, name);
}

static bool needs_grad(bw *w, const char *name) {
  if (strcmp(name, PD_EMPTY_VAR_NAME) == 0) return false;
  vinfo *vi = vmap_get(&w->m, name, false);
  const pd_var_desc *d = find(w, name);
  return vi && vi->needs && d && is_float(d->dtype) && !d->stop_gradient;
}

/* Bind slot `param` of g to the gradients of the vars of a forward slot: existing ones (reading)
 * or new contributions (writing). */
static pd_status bind_grads(bw *w, pd_op_desc *g, const pd_slot *s, bool outputs_of_fwd) {
  char slot[256];
  snprintf(slot, sizeof slot, "%s" GRAD, s->param);
  char **names = pd_calloc((size_t)s->nargs + 1, sizeof *names);
  if (!names) return oom(w);
  pd_status st = PD_OK;
  bool any = false;
  for (int a = 0; a < s->nargs && !st; a++) {
    const char *var = s->args[a];
    const char *gname = PD_EMPTY_VAR_NAME;
    vinfo *vi = strcmp(var, PD_EMPTY_VAR_NAME) ? vmap_get(&w->m, var, false) : NULL;
    if (outputs_of_fwd) {
      if (vi && vi->contribs > 0) gname = grad_name(w, var, 0);
    } else if (vi && needs_grad(w, var)) {
      gname = grad_name(w, var, vi->contribs);
      if (gname && !declare(w, gname, find(w, var))) st = oom(w);
      vi->contribs++;
    }
    if (!gname) st = oom(w);
    else if (!(names[a] = pd_strdup(gname))) st = oom(w);
    any = any || (gname && strcmp(gname, PD_EMPTY_VAR_NAME) != 0);
  }
  if (!st && any) {
    int r = outputs_of_fwd ? pd_op_set_input(g, slot, s->nargs, (const char *const *)names)
                           : pd_op_set_output(g, slot, s->nargs, (const char *const *)names);
    if (r) st = oom(w);
  }
  for (int a = 0; a < s->nargs; a++) pd_free(names[a]);
  pd_free(names);
  return st;
}

static pd_status grad_op(bw *w, const pd_op_desc *fwd) {
  char type[128];
  snprintf(type, sizeof type, "%s_grad", fwd->type);
  if (!pd_opdef_lookup(type))
    return pd_error_set(w->err, PD_EUNSUPPORTED, fwd->loc, "%s: no gradient op", fwd->type);
  /* The totals of the output gradients this op reads. */
  for (int s = 0; s < fwd->noutputs; s++)
    for (int a = 0; a < fwd->outputs[s].nargs; a++) {
      vinfo *vi = vmap_get(&w->m, fwd->outputs[s].args[a], false);
      pd_status st = vi ? total(w, vi, fwd->loc) : PD_OK;
      if (st) return st;
    }
  pd_op_desc *g = pd_block_add_op(w->b0, type, -1);
  if (!g) return oom(w);
  for (int s = 0; s < fwd->ninputs; s++)
    if (pd_op_set_input(g, fwd->inputs[s].param, fwd->inputs[s].nargs,
                        (const char *const *)fwd->inputs[s].args))
      return oom(w);
  for (int s = 0; s < fwd->noutputs; s++)
    if (pd_op_set_input(g, fwd->outputs[s].param, fwd->outputs[s].nargs,
                        (const char *const *)fwd->outputs[s].args))
      return oom(w);
  pd_status st;
  for (int s = 0; s < fwd->noutputs; s++)
    if ((st = bind_grads(w, g, &fwd->outputs[s], true))) return st;
  for (int s = 0; s < fwd->ninputs; s++)
    if ((st = bind_grads(w, g, &fwd->inputs[s], false))) return st;
  for (int i = 0; i < fwd->nattrs; i++) {
    if (strcmp(fwd->attrs[i].name, "op_role") == 0) continue;
    if (pd_op_set_attr(g, &fwd->attrs[i])) return oom(w);
  }
  return finish_op(w, g, fwd->loc, PD_OP_ROLE_BACKWARD);
}

static bool writes_any(const pd_op_desc *op, vmap *needed) {
  for (int s = 0; s < op->noutputs; s++)
    for (int a = 0; a < op->outputs[s].nargs; a++)
      if (vmap_get(needed, op->outputs[s].args[a], false)) return true;
  return false;
}

static bool reads_needing(bw *w, const pd_op_desc *op) {
  for (int s = 0; s < op->ninputs; s++)
    for (int a = 0; a < op->inputs[s].nargs; a++)
      if (needs_grad(w, op->inputs[s].args[a])) return true;
  return false;
}

static bool has_out_grad(bw *w, const pd_op_desc *op) {
  for (int s = 0; s < op->noutputs; s++)
    for (int a = 0; a < op->outputs[s].nargs; a++) {
      vinfo *vi = vmap_get(&w->m, op->outputs[s].args[a], false);
      if (vi && vi->contribs > 0) return true;
    }
  return false;
}

static pd_status run_pass(bw *w, const char *cost, pd_backward *out) {
  pd_block *b0 = w->b0;
  const pd_var_desc *cv = pd_block_find_var_local(b0, cost);
  if (!cv)
    return pd_error_set(w->err, PD_ENOTFOUND, (pd_loc){0},
                        "the cost '%s' is not a var of the global block", cost);
  int64_t numel = 1;
  for (int i = 0; i < cv->ndims; i++) numel *= cv->dims[i];
  if (!is_float(cv->dtype) || cv->ndims < 0 || numel != 1)
    return pd_error_set(w->err, PD_EINVAL, (pd_loc){0},
                        "the cost '%s' must be one floating-point value (mean(...) of a loss), "
                        "it is %s with %d dims",
                        cost, pd_dtype_name(cv->dtype), cv->ndims);
  int nops = b0->nops;
  bool *relevant = pd_calloc((size_t)nops + 1, sizeof *relevant);
  vmap needed = {0};
  pd_status st = PD_OK;
  pd_loc cost_loc = {0};
  if (!relevant || !vmap_get(&needed, cost, true)) {
    st = oom(w);
    goto out;
  }
  /* 1. The ops the cost depends on. */
  for (int i = nops - 1; i >= 0; i--) {
    const pd_op_desc *op = b0->ops[i];
    if (!writes_any(op, &needed)) continue;
    relevant[i] = true;
    if (!cost_loc.line) cost_loc = op->loc;
    for (int s = 0; s < op->ninputs; s++)
      for (int a = 0; a < op->inputs[s].nargs; a++)
        if (!vmap_get(&needed, op->inputs[s].args[a], true)) {
          st = oom(w);
          goto out;
        }
  }
  /* 2. Which vars need a gradient. */
  for (int i = 0; i < b0->nvars; i++) {
    const pd_var_desc *v = b0->vars[i];
    if (v->persistable && v->type == PD_VAR_LOD_TENSOR && is_float(v->dtype) && !v->stop_gradient) {
      vinfo *vi = vmap_get(&w->m, v->name, true);
      if (!vi) {
        st = oom(w);
        goto out;
      }
      vi->needs = true;
    }
  }
  for (int i = 0; i < nops; i++) {
    const pd_op_desc *op = b0->ops[i];
    const pd_opdef *def = pd_opdef_lookup(op->type);
    if (!relevant[i] || !def || !(def->flags & PD_OPF_DIFF) || !reads_needing(w, op)) continue;
    for (int s = 0; s < op->noutputs; s++)
      for (int a = 0; a < op->outputs[s].nargs; a++) {
        vinfo *vi = vmap_get(&w->m, op->outputs[s].args[a], true);
        if (!vi) {
          st = oom(w);
          goto out;
        }
        vi->needs = true;
      }
  }
  vinfo *ci = vmap_get(&w->m, cost, false);
  if (!ci || !ci->needs) {
    st = pd_error_set(w->err, PD_EINVAL, cost_loc,
                      "the cost does not depend on any trainable parameter, so there is "
                      "nothing to train");
    goto out;
  }
  /* 3. cost@GRAD = 1, then the gradient ops in reverse. */
  {
    const char *gname = grad_name(w, cost, 0);
    pd_op_desc *fill = gname ? pd_block_add_op(b0, "fill_constant", -1) : NULL;
    pd_var_desc *gv = fill ? declare(w, gname, cv) : NULL;
    int64_t one = 1;
    if (!gv || pd_op_set_output(fill, "Out", 1, &gname) ||
        pd_op_set_attr_longs(fill, "shape", 1, &one) || pd_op_set_attr_float(fill, "value", 1.0f) ||
        pd_op_set_attr_int(fill, "dtype", (int)cv->dtype)) {
      st = oom(w);
      goto out;
    }
    if ((st = finish_op(w, fill, cost_loc, PD_OP_ROLE_BACKWARD | PD_OP_ROLE_LOSS))) goto out;
    ci->contribs = 1;
  }
  for (int i = nops - 1; i >= 0; i--) {
    const pd_op_desc *op = b0->ops[i];
    const pd_opdef *def = pd_opdef_lookup(op->type);
    if (!relevant[i] || !def || !(def->flags & PD_OPF_DIFF)) continue;
    if (!has_out_grad(w, op) || !reads_needing(w, op)) continue;
    if (pd_op_attr(op, "sub_block")) {
      st = pd_error_set(w->err, PD_EUNSUPPORTED, op->loc,
                        "%s: training through a tensor if, for or while is not supported yet "
                        "(its gradient is part of the control-flow work)",
                        op->type);
      goto out;
    }
    if ((st = grad_op(w, op))) goto out;
  }
  /* 4. Parameters: totals, and the result. */
  out->pairs = pd_calloc((size_t)b0->nvars + 1, sizeof *out->pairs);
  if (!out->pairs) {
    st = oom(w);
    goto out;
  }
  for (int i = 0; i < b0->nvars; i++) {
    const pd_var_desc *v = b0->vars[i];
    if (!v->persistable) continue;
    vinfo *vi = vmap_get(&w->m, v->name, false);
    if (!vi || !vi->needs || vi->contribs == 0) continue;
    if ((st = total(w, vi, cost_loc))) goto out;
    const char *g = grad_name(w, v->name, 0);
    pd_param_grad *pg = &out->pairs[out->n];
    if (!g || !(pg->param = pd_strdup(v->name)) || !(pg->grad = pd_strdup(g))) {
      if (pg->param) pd_free(pg->param);
      pg->param = NULL;
      st = oom(w);
      goto out;
    }
    out->n++;
  }
out:
  pd_free(relevant);
  pd_free(needed.slots);
  return st;
}

pd_status pd_append_backward(pd_program *p, const char *cost, pd_backward *out, pd_error *err) {
  memset(out, 0, sizeof *out);
  bw w = {.p = p, .b0 = p->blocks[0], .err = err};
  pd_buf_init(&w.name);
  /* Names of gradient vars are looked up by the forward names (borrowed from the program);
   * vars are never removed during the pass, so the keys stay valid. */
  pd_status st = run_pass(&w, cost, out);
  pd_free(w.m.slots);
  pd_buf_free(&w.name);
  if (st) pd_backward_release(out);
  return st;
}

void pd_backward_release(pd_backward *b) {
  for (int i = 0; i < b->n; i++) {
    pd_free(b->pairs[i].param);
    pd_free(b->pairs[i].grad);
  }
  pd_free(b->pairs);
  memset(b, 0, sizeof *b);
}
