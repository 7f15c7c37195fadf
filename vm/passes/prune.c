/* prune.c -- Prune(program, targets) (vm/passes/prune.h): mark the ops the targets need, block by block
 * from the global block down through the sub-blocks of kept ops, then copy the program without
 * the others. */
#include "config.h"
#include "vm/passes/prune.h"

#include <stdbool.h>
#include <string.h>

#include "base/strmap.h"
#include "vm/ops/ops.h"

/* ---- A set of names: a base/strmap.h map with borrowed keys (the program's own strings, or
 * the caller's targets) and no values ---- */

typedef pd_strmap nameset;

static bool set_has(const nameset *s, const char *name) { return pd_strmap_find(s, name); }

/* 1 when name was added, 0 when it was there, -1 on out of memory. */
static int set_add(nameset *s, const char *name) {
  bool added;
  return !pd_strmap_add(s, name, &added) ? -1 : added;
}

static void set_free(nameset *s) { pd_strmap_free(s); }

/* ---- The marking pass ---- */

typedef struct pass {
  const pd_program *p;
  bool *keep;       /* keep[first[b] + i]: op i of block b is kept */
  int *first;       /* per block: index of its op 0 in keep */
  bool *reached;    /* the block was visited through a kept op (block 0 always) */
  bool *whole;      /* every op of the block is kept (forward blocks of kept gradient blocks) */
  bool *active;     /* the block is being visited (guards against sub-block cycles) */
  int nwhole;
  bool oom;
} pass;

/* One block being visited. */
typedef struct frame {
  const pd_block *b;
  nameset needed;        /* names whose values the kept ops (or the owner) need from this block */
  nameset reads;         /* names the kept ops read here and in their sub-blocks */
  const struct frame *up; /* the frame of the owning op's block; NULL for block 0 */
  bool loop;             /* the block is a loop body */
} frame;

static void frame_free(frame *f) {
  set_free(&f->needed);
  set_free(&f->reads);
}

/* Add name to a set, noting out-of-memory; true when it was new. */
static bool add(pass *ps, nameset *s, const char *name) {
  int r = set_add(s, name);
  if (r < 0) ps->oom = true;
  return r > 0;
}

/* Is a write to `name` in f's block needed? Needed names of the block itself; else, for a name
 * the block does not declare, the enclosing block's verdict -- except in a loop body, where every
 * write to an outer var is kept. */
static bool is_needed(const frame *f, const char *name) {
  for (; f; f = f->up) {
    if (set_has(&f->needed, name)) return true;
    if (pd_block_find_var_local(f->b, name)) return false;
    if (f->loop) return true;
  }
  return false;
}

static bool reads(const pd_op_desc *op, const char *name) {
  for (int s = 0; s < op->ninputs; s++)
    for (int a = 0; a < op->inputs[s].nargs; a++)
      if (strcmp(op->inputs[s].args[a], name) == 0) return true;
  return false;
}

/* An op that reads and writes a persistable var updates state in place (batch_norm's running
 * statistics): the var's value is in the global scope, so wanting it does not keep the op. */
static bool updates_state(const frame *f, const pd_op_desc *op, const char *name) {
  const pd_var_desc *v = pd_block_find_var_visible(f->b, name, NULL);
  return v && v->persistable && reads(op, name);
}

static bool writes_needed(const frame *f, const pd_op_desc *op) {
  for (int s = 0; s < op->noutputs; s++)
    for (int a = 0; a < op->outputs[s].nargs; a++) {
      const char *n = op->outputs[s].args[a];
      if (is_needed(f, n) && !updates_state(f, op, n)) return true;
    }
  return false;
}

/* conditional_block (and its _grad / _infer forms) runs its block at most once; every other
 * owner of a block is treated as a loop. conditional_block_infer, Fluid's form for inference
 * programs, is not in the registry: it is known by name. */
static bool owner_is_loop(const pd_op_desc *op) {
  const pd_opdef *d = pd_opdef_of(op);
  if (d) return d->kind != PD_OP_conditional_block;
  return strcmp(op->type, "conditional_block_infer") != 0;
}

/* Mark block idx, and every block inside it, as kept whole. */
static void mark_whole(pass *ps, int idx) {
  const pd_program *p = ps->p;
  for (int j = 0; j < p->nblocks; j++) {
    if (ps->whole[j]) continue;
    int steps = 0;
    for (const pd_block *c = p->blocks[j]; c && steps <= p->nblocks; c = pd_block_parent(c), steps++)
      if (c->idx == idx) {
        ps->whole[j] = true;
        ps->nwhole++;
        break;
      }
  }
}

static void visit(pass *ps, frame *f);

/* Visit sub-block s of the kept op `op` of frame f, and bring the outer names its kept ops read
 * into f. */
static void visit_sub_block(pass *ps, frame *f, const pd_op_desc *op, int s, bool *grew) {
  const pd_program *p = ps->p;
  if (s <= 0 || s >= p->nblocks || ps->active[s]) return;
  const pd_block *sb = p->blocks[s];
  frame g = {.b = sb, .up = f, .loop = owner_is_loop(op)};
  for (int k = 0; k < op->ninputs; k++)
    for (int a = 0; a < op->inputs[k].nargs; a++) add(ps, &g.needed, op->inputs[k].args[a]);
  for (int k = 0; k < op->noutputs; k++)
    for (int a = 0; a < op->outputs[k].nargs; a++) add(ps, &g.needed, op->outputs[k].args[a]);
  static const char *const state_attrs[] = {"states", "ex_states"};
  for (size_t k = 0; k < PD_ARRAY_LEN(state_attrs); k++) {
    const pd_attr *at = pd_op_attr(op, state_attrs[k]);
    if (at && at->type == PD_ATTR_STRINGS)
      for (int e = 0; e < at->n; e++) add(ps, &g.needed, at->strings[e]);
    else if (at && at->type == PD_ATTR_STRING)
      add(ps, &g.needed, at->v.s);
  }
  if (sb->forward_block_idx >= 0 && sb->forward_block_idx < p->nblocks)
    mark_whole(ps, sb->forward_block_idx);
  if (!ps->oom) visit(ps, &g);
  const pd_strmap_entry *e;
  for (size_t i = 0; !ps->oom && (e = pd_strmap_next(&g.reads, &i));) {
    const char *n = e->key;
    if (pd_block_find_var_local(sb, n)) continue;
    if (add(ps, &f->needed, n)) *grew = true;
    add(ps, &f->reads, n);
  }
  frame_free(&g);
}

/* Mark the kept ops of f's block, last to first (a loop body: again until no op is newly kept
 * and no name is newly needed). */
static void visit(pass *ps, frame *f) {
  const pd_block *b = f->b;
  int bi = b->idx;
  ps->reached[bi] = true;
  ps->active[bi] = true;
  bool changed;
  do {
    changed = false;
    for (int i = b->nops - 1; i >= 0 && !ps->oom; i--) {
      const pd_op_desc *op = b->ops[i];
      bool *kept = &ps->keep[ps->first[bi] + i];
      if (!*kept && !ps->whole[bi] && !writes_needed(f, op)) continue;
      if (!*kept) *kept = changed = true;
      for (int k = 0; k < op->ninputs; k++)
        for (int a = 0; a < op->inputs[k].nargs; a++) {
          const char *n = op->inputs[k].args[a];
          if (add(ps, &f->needed, n)) changed = true;
          add(ps, &f->reads, n);
        }
      for (int k = 0; k < op->nattrs; k++) {
        const pd_attr *at = &op->attrs[k];
        if (at->type == PD_ATTR_BLOCK) visit_sub_block(ps, f, op, at->v.i, &changed);
        if (at->type == PD_ATTR_BLOCKS)
          for (int e = 0; e < at->n; e++) visit_sub_block(ps, f, op, at->ints[e], &changed);
      }
    }
  } while (f->loop && changed && !ps->oom);
  ps->active[bi] = false;
}

/* ---- Building the result ---- */

/* The names the kept ops of q name in their slots, and the targets. */
static int referenced_names(const pd_program *q, int ntargets, const char *const *targets,
                            nameset *refs) {
  for (int t = 0; t < ntargets; t++)
    if (set_add(refs, targets[t]) < 0) return -1;
  for (int bi = 0; bi < q->nblocks; bi++) {
    const pd_block *b = q->blocks[bi];
    for (int i = 0; i < b->nops; i++) {
      const pd_op_desc *op = b->ops[i];
      for (int k = 0; k < op->ninputs; k++)
        for (int a = 0; a < op->inputs[k].nargs; a++)
          if (set_add(refs, op->inputs[k].args[a]) < 0) return -1;
      for (int k = 0; k < op->noutputs; k++)
        for (int a = 0; a < op->outputs[k].nargs; a++)
          if (set_add(refs, op->outputs[k].args[a]) < 0) return -1;
    }
  }
  return 0;
}

static pd_status check_targets(const pd_program *p, int ntargets, const char *const *targets,
                               pd_error *err) {
  pd_loc nowhere = {0};
  if (ntargets < 1 || !targets)
    return pd_error_set(err, PD_EINVAL, nowhere, "prune needs at least one target var");
  for (int t = 0; t < ntargets; t++) {
    const char *name = targets[t];
    char buf[64];
    if (!name || !name[0])
      return pd_error_set(err, PD_EINVAL, nowhere, "prune target %d has no name", t + 1);
    if (pd_block_find_var_local(p->blocks[0], name)) continue;
    for (int bi = 1; bi < p->nblocks; bi++)
      if (pd_block_find_var_local(p->blocks[bi], name))
        return pd_error_set(err, PD_ENOTFOUND, nowhere,
                            "prune target '%s' is not a var of the global block (it is local "
                            "to block %d)",
                            pd_program_excerpt(name, buf, sizeof buf), bi);
    return pd_error_set(err, PD_ENOTFOUND, nowhere,
                        "prune target '%s' is not a var of the program",
                        pd_program_excerpt(name, buf, sizeof buf));
  }
  return PD_OK;
}

/* Mark what the targets need. PD_OK or PD_ENOMEM. */
static pd_status mark(pass *ps, int ntargets, const char *const *targets) {
  int before;
  do {
    before = ps->nwhole;
    frame top = {.b = ps->p->blocks[0]};
    for (int t = 0; t < ntargets; t++) add(ps, &top.needed, targets[t]);
    if (!ps->oom) visit(ps, &top);
    frame_free(&top);
  } while (!ps->oom && ps->nwhole != before);
  return ps->oom ? PD_ENOMEM : PD_OK;
}

/* Drop from q the ops the pass did not keep, and the vars of block 0 and of unreached blocks
 * that no kept op names. */
static pd_status rebuild(const pass *ps, pd_program *q, int ntargets, const char *const *targets) {
  for (int bi = 0; bi < q->nblocks; bi++) {
    pd_block *b = q->blocks[bi];
    bool live = ps->reached[bi] || ps->whole[bi];
    for (int i = b->nops - 1; i >= 0; i--)
      if (!live || !(ps->whole[bi] || ps->keep[ps->first[bi] + i])) pd_block_remove_op(b, i);
  }
  nameset refs = {0};
  if (referenced_names(q, ntargets, targets, &refs)) {
    set_free(&refs);
    return PD_ENOMEM;
  }
  for (int bi = 0; bi < q->nblocks; bi++) {
    pd_block *b = q->blocks[bi];
    if (bi != 0 && (ps->reached[bi] || ps->whole[bi])) continue;
    for (int j = b->nvars - 1; j >= 0; j--)
      if (!set_has(&refs, b->vars[j]->name)) pd_block_remove_var(b, b->vars[j]->name);
  }
  set_free(&refs);
  return PD_OK;
}

pd_status pd_program_prune(const pd_program *p, int ntargets, const char *const *targets,
                           pd_program **out, pd_error *err) {
  *out = NULL;
  pd_status st = pd_program_validate(p, err);
  if (st) return st;
  if ((st = check_targets(p, ntargets, targets, err))) return st;

  pass ps = {.p = p};
  int nb = p->nblocks;
  size_t nops = 0;
  ps.first = pd_calloc((size_t)nb, sizeof *ps.first);
  ps.reached = pd_calloc((size_t)nb, sizeof *ps.reached);
  ps.whole = pd_calloc((size_t)nb, sizeof *ps.whole);
  ps.active = pd_calloc((size_t)nb, sizeof *ps.active);
  if (ps.first) {
    for (int bi = 0; bi < nb; bi++) {
      ps.first[bi] = (int)nops;
      nops += (size_t)p->blocks[bi]->nops;
    }
  }
  ps.keep = ps.first && nops <= INT32_MAX ? pd_calloc(nops, sizeof *ps.keep) : NULL;
  pd_program *q = NULL;
  if (!ps.first || !ps.reached || !ps.whole || !ps.active || !ps.keep)
    st = PD_ENOMEM;
  else if (!(st = mark(&ps, ntargets, targets)) && !(q = pd_program_clone(p)))
    st = PD_ENOMEM;
  if (!st) st = rebuild(&ps, q, ntargets, targets);
  pd_free(ps.first);
  pd_free(ps.reached);
  pd_free(ps.whole);
  pd_free(ps.active);
  pd_free(ps.keep);
  if (st) {
    pd_program_free(q);
    return pd_error_set(err, st, (pd_loc){0}, "out of memory while pruning the program");
  }
  *out = q;
  return PD_OK;
}
