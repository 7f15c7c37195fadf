/* backward.c -- append_backward (see vm/passes/backward.h): gradient ops for the ops a cost depends on,
 * in reverse order, with fan-out gradients summed. */
#include "config.h"
#include "vm/passes/backward.h"

#include <stdio.h>
#include <string.h>

#include "base/strmap.h"
#include "vm/ops/ops.h"

#define GRAD "@GRAD"

/* ---- A name -> info map: the infos in an array, indexed by a base/strmap.h map. Keys are
 * borrowed from the program. A vinfo pointer stays valid until the next vmap_get that
 * creates. ---- */
typedef struct vinfo {
  const char *name;
  bool needs;       /* needs a gradient */
  bool seed;        /* its gradient is given (a sub-block's output: the caller's gradient) */
  bool local;       /* a seed whose given gradient was used up: later gradients of the older
                       value are named <var>@GRAD@LOCAL so as not to clash with the given one */
  int contribs;     /* gradients made so far (0: none) */
} vinfo;

typedef struct vmap {
  pd_strmap index;  /* name -> position in items */
  vinfo *items;
  size_t n, cap;
} vmap;

/* The info of name, created when create is set (NULL on out of memory or when absent). */
static vinfo *vmap_get(vmap *m, const char *name, bool create) {
  const pd_strmap_entry *e = pd_strmap_find(&m->index, name);
  if (e) return &m->items[e->val.i];
  if (!create || PD_GROW(m->items, m->cap, m->n + 1) ||
      pd_strmap_set_int(&m->index, name, (int64_t)m->n))
    return NULL;
  m->items[m->n] = (vinfo){.name = name};
  return &m->items[m->n++];
}

static void vmap_free(vmap *m) {
  pd_strmap_free(&m->index);
  pd_free(m->items);
}

/* ---- The pass ---- */

typedef struct bw {
  pd_program *p;
  pd_block *fb;     /* the block whose ops are differentiated */
  pd_block *gb;     /* where the gradient ops and vars go: fb itself for block 0, else a
                       gradient block (parent: fb's parent; forward_block_idx: fb) */
  vmap m;
  pd_error *err;
  pd_buf name;      /* scratch for names */
  int depth;        /* nesting of sub-block passes */
} bw;

static pd_status diff_block(bw *w, bool *relevant, int nops);

static pd_status oom(bw *w) { return pd_error_set(w->err, PD_ENOMEM, (pd_loc){0}, "out of memory"); }

static const char *grad_name_of(bw *w, const char *var, bool local, int k) {
  w->name.len = 0;
  pd_buf_printf(&w->name, "%s" GRAD "%s", var, local ? "@LOCAL" : "");
  if (k > 0) pd_buf_printf(&w->name, "@RENAME@%d", k);
  return w->name.oom ? NULL : w->name.data;
}

static const char *grad_name(bw *w, const char *var, int k) {
  vinfo *vi = vmap_get(&w->m, var, false);
  return grad_name_of(w, var, vi && vi->local, k);
}

/* Declare a gradient var where the gradient ops go (its shape comes from the op that writes
 * it). */
static pd_var_desc *declare(bw *w, const char *name, const pd_var_desc *like) {
  pd_var_desc *v = pd_block_var(w->gb, name);
  if (!v) return NULL;
  if (like) {
    v->dtype = like->dtype;
    v->lod_level = like->lod_level;
    if (pd_var_set_shape(v, like->ndims, like->dims)) return NULL;
  }
  return v;
}

/* op takes the location (and calls) of from, the forward op it comes from (NULL: none). */
static pd_status finish_op(bw *w, pd_op_desc *op, const pd_op_desc *from, int role) {
  if ((from && pd_op_copy_loc(op, from)) || pd_op_set_attr_int(op, "op_role", role))
    return oom(w);
  return pd_opdef_prepare(op, w->gb, w->err);
}

/* Add up the gradients of var (when more than one was made) into <var>@GRAD. */
static pd_status total(bw *w, vinfo *vi, const pd_op_desc *from) {
  if (vi->contribs <= 1) return PD_OK;
  int n = vi->contribs;
  char **names = pd_calloc((size_t)n, sizeof *names);
  if (!names) return oom(w);
  pd_status st = PD_OK;
  for (int k = 0; k < n && !st; k++) {
    const char *g = grad_name(w, vi->name, k);
    if (!g || !(names[k] = pd_strdup(g))) st = oom(w);
  }
  pd_op_desc *op = st ? NULL : pd_block_add_op(w->gb, "sum", -1);
  if (!st && !op) st = oom(w);
  if (!st && (pd_op_set_input(op, "X", n, (const char *const *)names) ||
              pd_op_set_output(op, "Out", 1, (const char *const *)names)))
    st = oom(w);
  if (!st) st = finish_op(w, op, from, PD_OP_ROLE_BACKWARD);
  for (int k = 0; k < n; k++) pd_free(names[k]);
  pd_free(names);
  if (!st) vi->contribs = 1;
  return st;
}

static const pd_var_desc *find(bw *w, const char *name) {
  return pd_block_find_var_visible(w->gb, name, NULL);
}

static bool needs_grad(bw *w, const char *name) {
  if (strcmp(name, PD_EMPTY_VAR_NAME) == 0) return false;
  vinfo *vi = vmap_get(&w->m, name, false);
  const pd_var_desc *d = find(w, name);
  return vi && vi->needs && d && pd_dtype_is_float(d->dtype) && !d->stop_gradient;
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

/* The totals of the gradients of fwd's outputs, before a gradient op reads them. */
static pd_status totals_of_outputs(bw *w, const pd_op_desc *fwd) {
  for (int s = 0; s < fwd->noutputs; s++)
    for (int a = 0; a < fwd->outputs[s].nargs; a++) {
      vinfo *vi = vmap_get(&w->m, fwd->outputs[s].args[a], false);
      pd_status st = vi ? total(w, vi, fwd) : PD_OK;
      if (st) return st;
    }
  return PD_OK;
}

/* After fwd's gradient op: the gradients of the values fwd wrote are used up. A var that an
 * earlier op reads too (an in-place write, a loop-carried var) starts over: its older value
 * gets gradients of its own. */
static void outputs_used_up(bw *w, const pd_op_desc *fwd) {
  /* A conditional_block may not run: then its outputs keep their earlier values, whose
   * writers (the other branch's block, which the compiler always emits) still need the
   * gradient. Its gradient op gives zeros when the block did not run. */
  if (pd_opdef_is(fwd, PD_OP_conditional_block)) return;
  for (int s = 0; s < fwd->noutputs; s++)
    for (int a = 0; a < fwd->outputs[s].nargs; a++) {
      vinfo *vi = vmap_get(&w->m, fwd->outputs[s].args[a], false);
      if (!vi || vi->contribs == 0) continue;
      vi->contribs = 0;
      if (vi->seed) vi->local = true;
    }
}

/* A gradient op of fwd's type + "_grad": fwd's inputs and outputs, the outputs' gradients, and
 * gradient outputs for the inputs that need one. */
static pd_status start_grad_op(bw *w, const pd_op_desc *fwd, pd_op_desc **out) {
  const pd_opdef *gd = pd_opdef_grad(pd_opdef_of(fwd));
  if (!gd) return pd_error_set(w->err, PD_EUNSUPPORTED, fwd->loc, "%s: no gradient op", fwd->type);
  pd_status st = totals_of_outputs(w, fwd);
  if (st) return st;
  pd_op_desc *g = pd_block_add_op(w->gb, gd->type, -1);
  if (!g) return oom(w);
  for (int s = 0; s < fwd->ninputs; s++)
    if (pd_op_set_input(g, fwd->inputs[s].param, fwd->inputs[s].nargs,
                        (const char *const *)fwd->inputs[s].args))
      return oom(w);
  for (int s = 0; s < fwd->noutputs; s++)
    if (pd_op_set_input(g, fwd->outputs[s].param, fwd->outputs[s].nargs,
                        (const char *const *)fwd->outputs[s].args))
      return oom(w);
  for (int s = 0; s < fwd->noutputs; s++)
    if ((st = bind_grads(w, g, &fwd->outputs[s], true))) return st;
  /* Then the inputs' gradients: an input that is also an output (written in place) starts
   * over, its gradient here being that of its value before the op. */
  outputs_used_up(w, fwd);
  for (int s = 0; s < fwd->ninputs; s++)
    if ((st = bind_grads(w, g, &fwd->inputs[s], false))) return st;
  for (int i = 0; i < fwd->nattrs; i++) {
    if (strcmp(fwd->attrs[i].name, "op_role") == 0) continue;
    if (pd_op_set_attr(g, &fwd->attrs[i])) return oom(w);
  }
  *out = g;
  return PD_OK;
}

static pd_status grad_op(bw *w, const pd_op_desc *fwd) {
  pd_op_desc *g = NULL;
  pd_status st = start_grad_op(w, fwd, &g);
  if (!st) st = finish_op(w, g, fwd, PD_OP_ROLE_BACKWARD);
  return st;
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

/* Which ops of fw->fb (the first nops) the vars in `needed` depend on, walking back; the
 * inputs of each such op become needed too. */
static pd_status mark_relevant(bw *w, vmap *needed, bool *relevant, int nops) {
  for (int i = nops - 1; i >= 0; i--) {
    const pd_op_desc *op = w->fb->ops[i];
    if (!writes_any(op, needed)) continue;
    relevant[i] = true;
    for (int s = 0; s < op->ninputs; s++)
      for (int a = 0; a < op->inputs[s].nargs; a++)
        if (!vmap_get(needed, op->inputs[s].args[a], true)) return oom(w);
  }
  return PD_OK;
}

/* Vars that need a gradient: those already marked, and every output of a differentiable
 * relevant op that reads one. */
static pd_status propagate_needs(bw *w, const bool *relevant, int nops) {
  for (int i = 0; i < nops; i++) {
    const pd_op_desc *op = w->fb->ops[i];
    const pd_opdef *def = pd_opdef_lookup(op->type);
    if (!relevant[i] || !def || !(def->flags & PD_OPF_DIFF) || !reads_needing(w, op)) continue;
    for (int s = 0; s < op->noutputs; s++)
      for (int a = 0; a < op->outputs[s].nargs; a++) {
        vinfo *vi = vmap_get(&w->m, op->outputs[s].args[a], true);
        if (!vi) return oom(w);
        vi->needs = true;
      }
  }
  return PD_OK;
}

/* ---- Ops that own blocks ----
 * conditional_block and recurrent get a gradient op whose "sub_block" is a new gradient block:
 * the backward pass of the forward sub-block, made by a nested pass whose given gradients
 * ("seeds") are those of the forward op's outputs and whose wanted gradients are those of its
 * inputs. At run time the gradient op runs that block in a child of each scope the forward
 * run kept, and moves the gradients of the inputs (named <var>@GRAD, or <var>@GRAD@LOCAL for a
 * var the block also writes, in the gradient block's scope) out to the vars its @GRAD outputs
 * name (vm/ops/control.c, vm/ops/recurrent.c). */

typedef struct sub_spec {
  int nseeds;
  const char **seeds;     /* vars of the sub-block (or outer ones) whose gradients are given */
  bool declare_seeds;     /* the seeds' gradient vars are filled per step by the gradient op
                             (recurrent): declare them in the gradient block */
  int nwrt;
  const char **wrt;       /* vars whose gradients are wanted */
} sub_spec;

static pd_status sub_pass(bw *outer, pd_block *fb, pd_block *gb, const sub_spec *sp,
                          pd_loc loc) {
  /* The compiler nests blocks at most PD_MAX_BLOCK_DEPTH deep; a loaded program may nest more. */
  if (outer->depth >= PD_MAX_BLOCK_DEPTH)
    return pd_error_set(outer->err, PD_EUNSUPPORTED, loc,
                        "blocks nested more than %d deep: the gradient cannot be built",
                        PD_MAX_BLOCK_DEPTH);
  bw w = {.p = outer->p, .fb = fb, .gb = gb, .err = outer->err, .depth = outer->depth + 1};
  pd_buf_init(&w.name);
  vmap needed = {0};
  int nops = fb->nops;
  bool *relevant = pd_calloc((size_t)nops + 1, sizeof *relevant);
  pd_status st = relevant ? PD_OK : oom(&w);
  for (int i = 0; !st && i < sp->nseeds; i++)
    if (!vmap_get(&needed, sp->seeds[i], true)) st = oom(&w);
  if (!st) st = mark_relevant(&w, &needed, relevant, nops);
  for (int i = 0; !st && i < sp->nwrt; i++) {
    vinfo *vi = vmap_get(&w.m, sp->wrt[i], true);
    if (!vi) st = oom(&w);
    else vi->needs = true;
  }
  /* Parameters visible from the block need gradients as in the outer pass. */
  for (const pd_block *b = pd_block_parent(fb); !st && b; b = pd_block_parent(b))
    for (int i = 0; !st && i < b->nvars; i++) {
      const pd_var_desc *v = b->vars[i];
      if (!v->persistable || v->type != PD_VAR_LOD_TENSOR || !pd_dtype_is_float(v->dtype) ||
          v->stop_gradient)
        continue;
      vinfo *vi = vmap_get(&w.m, v->name, true);
      if (!vi) st = oom(&w);
      else vi->needs = true;
    }
  if (!st) st = propagate_needs(&w, relevant, nops);
  for (int i = 0; !st && i < sp->nseeds; i++) {
    vinfo *vi = vmap_get(&w.m, sp->seeds[i], true);
    if (!vi) {
      st = oom(&w);
      break;
    }
    vi->seed = true;
    vi->contribs = 1;
    if (sp->declare_seeds) {
      const char *g = grad_name_of(&w, sp->seeds[i], false, 0);
      if (!g || !declare(&w, g, pd_block_find_var_visible(fb, sp->seeds[i], NULL))) st = oom(&w);
    }
  }
  if (!st) st = diff_block(&w, relevant, nops);
  /* The wanted gradients as totals. */
  for (int i = 0; !st && i < sp->nwrt; i++) {
    vinfo *vi = vmap_get(&w.m, sp->wrt[i], false);
    if (vi) st = total(&w, vi, NULL);
  }
  pd_free(relevant);
  vmap_free(&needed);
  vmap_free(&w.m);
  pd_buf_free(&w.name);
  return st;
}

/* The names bound to a slot of op (NULL/0 when absent). */
static const char **slot_args(const pd_op_desc *op, const char *slot, bool input, int *n) {
  const pd_slot *s = input ? pd_op_input(op, slot) : pd_op_output(op, slot);
  *n = s ? s->nargs : 0;
  return s ? (const char **)s->args : NULL;
}

/* True when some op of b other than skip names var among its inputs or outputs. */
static bool named_elsewhere(const pd_block *b, const pd_op_desc *skip, const char *var) {
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    if (op == skip) continue;
    for (int s = 0; s < op->ninputs; s++)
      for (int a = 0; a < op->inputs[s].nargs; a++)
        if (strcmp(op->inputs[s].args[a], var) == 0) return true;
    for (int s = 0; s < op->noutputs; s++)
      for (int a = 0; a < op->outputs[s].nargs; a++)
        if (strcmp(op->outputs[s].args[a], var) == 0) return true;
  }
  return false;
}

static int64_t int_attr(const pd_op_desc *op, const char *name, int64_t dflt) {
  const pd_attr *a = pd_op_attr(op, name);
  return !a ? dflt : a->type == PD_ATTR_LONG ? a->v.l : a->type == PD_ATTR_INT ? a->v.i : -1;
}

/* A loop parameter's gradient from a product in the step, P@GRAD = X^T dOut (mul_grad's Y@GRAD,
 * with X [rows, K] and P [K, N]), is summed over the steps by the recurrent gradient op: per
 * step, a [K, N] GEMM with as many rows as sequences run, then a [K, N] addition. When that
 * mul_grad is the only op of the gradient step block gb that names P@GRAD, it stops computing
 * it, and the gradient op, told by the "param_products" attr (triples P, X, Out@GRAD), stacks
 * each step's rows of X and Out@GRAD and makes the sum one GEMM over all the rows of all steps
 * (vm/ops/recurrent.c): at hidden size 256, 50 steps of batch 32, a [256, 1600] x [1600, 256]
 * product instead of 50 products of inner size 32 and 50 additions of 64k floats. */
static pd_status defer_param_products(bw *w, pd_block *gb, const char **params, int nparams,
                                      pd_op_desc *g) {
  const char **triples = pd_calloc((size_t)(3 * nparams) + 1, sizeof *triples);
  if (!triples) return oom(w);
  int nt = 0;
  for (int i = 0; i < gb->nops; i++) {
    pd_op_desc *op = gb->ops[i];
    if (!pd_opdef_is_grad(op, PD_OP_mul) || int_attr(op, "x_num_col_dims", 1) != 1 ||
        int_attr(op, "y_num_col_dims", 1) != 1)
      continue;
    const char *y = pd_op_input1(op, "Y"), *x = pd_op_input1(op, "X");
    const char *dout = pd_op_input1(op, "Out@GRAD"), *dy = pd_op_output1(op, "Y@GRAD");
    if (!x || !y || !dout || !dy || !*dy) continue;
    bool param = false;
    for (int k = 0; k < nparams && !param; k++) param = strcmp(params[k], y) == 0;
    bool done = false;
    for (int k = 0; k < nt && !done; k += 3) done = strcmp(triples[k], y) == 0;
    char want[512];
    snprintf(want, sizeof want, "%s@GRAD", y);
    if (!param || done || strcmp(dy, want) != 0 || named_elsewhere(gb, op, dy)) continue;
    if (pd_op_set_output(op, "Y@GRAD", 0, NULL)) {
      pd_free(triples);
      return oom(w);
    }
    triples[nt++] = y;
    triples[nt++] = x;
    triples[nt++] = dout;
  }
  pd_status st = nt && pd_op_set_attr_strings(g, "param_products", nt, triples) ? oom(w) : PD_OK;
  pd_free(triples);
  return st;
}

static pd_status cf_grad(bw *w, const pd_op_desc *fwd) {
  const pd_attr *sa = pd_op_attr(fwd, "sub_block");
  pd_block *fb = sa ? pd_program_block(w->p, sa->v.i) : NULL;
  bool rnn = pd_opdef_is(fwd, PD_OP_recurrent), loop = pd_opdef_is(fwd, PD_OP_while);
  if (!fb || (!rnn && !loop && !pd_opdef_is(fwd, PD_OP_conditional_block)))
    return pd_error_set(w->err, PD_EUNSUPPORTED, fwd->loc,
                        "%s: no gradient for this op", fwd->type);
  pd_status st = totals_of_outputs(w, fwd);
  if (st) return st;
  pd_block *gb = pd_program_add_block(w->p, w->gb->idx);
  if (!gb) return oom(w);
  gb->forward_block_idx = fb->idx;
  sub_spec sp = {0};
  const char **wrt = NULL;
  int nw = 0;
  if (rnn) {
    int nin, nex, nparams;
    const char **ins = slot_args(fwd, "inputs", true, &nin);
    const char **params = slot_args(fwd, "parameters", true, &nparams);
    const pd_attr *ex = pd_op_attr(fwd, "ex_states");
    nex = ex && ex->type == PD_ATTR_STRINGS ? ex->n : 0;
    wrt = pd_calloc((size_t)(nin + nex + nparams) + 1, sizeof *wrt);
    if (!wrt) return oom(w);
    for (int i = 0; i < nin; i++) wrt[nw++] = ins[i];
    for (int i = 0; i < nex; i++) wrt[nw++] = ex->strings[i];
    for (int i = 0; i < nparams; i++) wrt[nw++] = params[i];
    sp.seeds = slot_args(fwd, "outputs", false, &sp.nseeds);
    sp.declare_seeds = true;
  } else if (loop) {
    /* Seeds: the loop-carried vars (Out), filled per iteration by while_grad; wanted: every
     * outer var the body reads (X). */
    int nx;
    const char **xs = slot_args(fwd, "X", true, &nx);
    wrt = pd_calloc((size_t)nx + 1, sizeof *wrt);
    if (!wrt) return oom(w);
    for (int i = 0; i < nx; i++) wrt[nw++] = xs[i];
    int nout;
    const char **outs = slot_args(fwd, "Out", false, &nout);
    sp.seeds = pd_calloc((size_t)nout + 1, sizeof *sp.seeds);
    if (!sp.seeds) {
      pd_free(wrt);
      return oom(w);
    }
    for (int i = 0; i < nout; i++) {
      const pd_var_desc *v = find(w, outs[i]);
      if (v && pd_dtype_is_float(v->dtype)) sp.seeds[sp.nseeds++] = outs[i];
    }
    sp.declare_seeds = true;
  } else {
    int nin;
    const char **ins = slot_args(fwd, "Input", true, &nin);
    wrt = pd_calloc((size_t)nin + 1, sizeof *wrt);
    if (!wrt) return oom(w);
    for (int i = 0; i < nin; i++) wrt[nw++] = ins[i];
    /* The outputs whose gradients exist are the seeds (their totals, in the outer scope). */
    int nout;
    const char **outs = slot_args(fwd, "Out", false, &nout);
    sp.seeds = pd_calloc((size_t)nout + 1, sizeof *sp.seeds);
    if (!sp.seeds) {
      pd_free(wrt);
      return oom(w);
    }
    for (int i = 0; i < nout; i++) {
      vinfo *vi = vmap_get(&w->m, outs[i], false);
      if (vi && vi->contribs > 0) sp.seeds[sp.nseeds++] = outs[i];
    }
  }
  sp.wrt = wrt;
  sp.nwrt = nw;
  st = sub_pass(w, fb, gb, &sp, fwd->loc);
  if (!rnn) pd_free((void *)sp.seeds);
  pd_free(wrt);
  if (st) return st;
  pd_op_desc *g = NULL;
  if ((st = start_grad_op(w, fwd, &g))) return st;
  if (pd_op_set_attr_block(g, "sub_block", gb->idx)) return oom(w);
  if (rnn) {
    int nparams;
    const char **params = slot_args(fwd, "parameters", true, &nparams);
    if ((st = defer_param_products(w, gb, params, nparams, g))) return st;
  }
  return finish_op(w, g, fwd, PD_OP_ROLE_BACKWARD);
}

/* The gradient ops of the relevant ops of w->fb (the first nops), last to first. */
static pd_status diff_block(bw *w, bool *relevant, int nops) {
  for (int i = nops - 1; i >= 0; i--) {
    const pd_op_desc *op = w->fb->ops[i];
    const pd_opdef *def = pd_opdef_lookup(op->type);
    if (!relevant[i] || !def || !(def->flags & PD_OPF_DIFF)) continue;
    if (!has_out_grad(w, op) || !reads_needing(w, op)) continue;
    pd_status st = pd_op_attr(op, "sub_block") ? cf_grad(w, op) : grad_op(w, op);
    if (st) return st;
  }
  return PD_OK;
}

static pd_status run_pass(bw *w, const char *cost, pd_backward *out) {
  pd_block *b0 = w->fb;
  const pd_var_desc *cv = pd_block_find_var_local(b0, cost);
  if (!cv)
    return pd_error_set(w->err, PD_ENOTFOUND, (pd_loc){0},
                        "the cost '%s' is not a var of the global block", cost);
  int64_t numel = 1;
  for (int i = 0; i < cv->ndims; i++) numel *= cv->dims[i];
  if (!pd_dtype_is_float(cv->dtype) || cv->ndims < 0 || numel != 1)
    return pd_error_set(w->err, PD_EINVAL, (pd_loc){0},
                        "the cost '%s' must be one floating-point value (mean(...) of a loss), "
                        "it is %s with %d dims",
                        cost, pd_dtype_name(cv->dtype), cv->ndims);
  int nops = b0->nops;
  bool *relevant = pd_calloc((size_t)nops + 1, sizeof *relevant);
  vmap needed = {0};
  pd_status st = PD_OK;
  const pd_op_desc *cost_op = NULL;  /* the last op the cost depends on */
  pd_loc cost_loc = {0};             /* where the user wrote it */
  if (!relevant || !vmap_get(&needed, cost, true)) {
    st = oom(w);
    goto out;
  }
  /* 1. The ops the cost depends on. */
  if ((st = mark_relevant(w, &needed, relevant, nops))) goto out;
  for (int i = nops - 1; i >= 0 && !cost_op; i--)
    if (relevant[i] && b0->ops[i]->loc.line) cost_op = b0->ops[i];
  if (cost_op) cost_loc = pd_op_user_loc(cost_op);
  /* 2. Which vars need a gradient. */
  for (int i = 0; i < b0->nvars; i++) {
    const pd_var_desc *v = b0->vars[i];
    if (v->persistable && v->type == PD_VAR_LOD_TENSOR && pd_dtype_is_float(v->dtype) &&
        !v->stop_gradient) {
      vinfo *vi = vmap_get(&w->m, v->name, true);
      if (!vi) {
        st = oom(w);
        goto out;
      }
      vi->needs = true;
    }
  }
  if ((st = propagate_needs(w, relevant, nops))) goto out;
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
    if ((st = finish_op(w, fill, cost_op, PD_OP_ROLE_BACKWARD | PD_OP_ROLE_LOSS))) goto out;
    ci->contribs = 1;
  }
  if ((st = diff_block(w, relevant, nops))) goto out;
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
    if ((st = total(w, vi, cost_op))) goto out;
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
  vmap_free(&needed);
  return st;
}

pd_status pd_append_backward(pd_program *p, const char *cost, pd_backward *out, pd_error *err) {
  memset(out, 0, sizeof *out);
  bw w = {.p = p, .fb = p->blocks[0], .gb = p->blocks[0], .err = err};
  pd_buf_init(&w.name);
  /* Names of gradient vars are looked up by the forward names (borrowed from the program);
   * vars are never removed during the pass, so the keys stay valid. */
  pd_status st = run_pass(&w, cost, out);
  vmap_free(&w.m);
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
