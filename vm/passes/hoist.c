/* hoist.c -- moving row-wise, loop-invariant ops out of recurrent step blocks (see vm/passes/hoist.h). */
#include "config.h"
#include "vm/passes/hoist.h"

#include <string.h>

#include "base/strmap.h"
#include "vm/ops/ops.h"

/* ---- A list of names (borrowed from the program unless said otherwise), in order with
 * duplicates, and how often each occurs (a base/strmap.h map, keys borrowed: loop bodies can
 * be large). ---- */
typedef struct names {
  int n, cap;
  const char **v;
  pd_strmap counts;   /* name -> occurrences */
} names;

static int count(const names *s, const char *x) {
  const pd_strmap_entry *e = pd_strmap_find(&s->counts, x);
  return e ? (int)e->val.i : 0;
}

static bool has(const names *s, const char *x) { return count(s, x) > 0; }

/* Append x (duplicates kept); -1 on out of memory (s unchanged). */
static int push(names *s, const char *x) {
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 16;
    const char **v = pd_realloc(s->v, sizeof *v * (size_t)cap);
    if (!v) return -1;
    s->v = v;
    s->cap = cap;
  }
  pd_strmap_entry *e = pd_strmap_add(&s->counts, x, NULL);
  if (!e) return -1;
  e->val.i++;
  s->v[s->n++] = x;
  return 0;
}

static void names_free(names *s) {
  pd_free(s->v);
  pd_strmap_free(&s->counts);
  memset(s, 0, sizeof *s);
}

/* ---- What ops read and write, nested blocks included. ---- */

static int block_io(const pd_program *p, int bidx, names *reads, names *writes, int depth);

#define MAX_DEPTH PD_MAX_BLOCK_DEPTH /* nesting of blocks the pass looks into */

/* Add op's input vars to reads and output vars to writes (either may be NULL), and those of
 * the ops of the blocks it owns. -1 on out of memory (or nesting past MAX_DEPTH, which
 * hoist_loop rules out first). */
static int op_io(const pd_program *p, const pd_op_desc *op, names *reads, names *writes,
                 int depth) {
  for (int s = 0; reads && s < op->ninputs; s++)
    for (int a = 0; a < op->inputs[s].nargs; a++)
      if (push(reads, op->inputs[s].args[a])) return -1;
  for (int s = 0; writes && s < op->noutputs; s++)
    for (int a = 0; a < op->outputs[s].nargs; a++)
      if (push(writes, op->outputs[s].args[a])) return -1;
  for (int i = 0; i < op->nattrs; i++) {
    const pd_attr *at = &op->attrs[i];
    if (at->type == PD_ATTR_BLOCK) {
      if (block_io(p, at->v.i, reads, writes, depth + 1)) return -1;
    } else if (at->type == PD_ATTR_BLOCKS) {
      for (int k = 0; k < at->n; k++)
        if (block_io(p, at->ints[k], reads, writes, depth + 1)) return -1;
    }
  }
  return 0;
}

static int block_io(const pd_program *p, int bidx, names *reads, names *writes, int depth) {
  const pd_block *b = pd_program_block(p, bidx);
  if (!b) return 0;
  if (depth > MAX_DEPTH) return -1;
  for (int i = 0; i < b->nops; i++)
    if (op_io(p, b->ops[i], reads, writes, depth)) return -1;
  return 0;
}

/* Are the blocks nested in block bidx at most MAX_DEPTH - depth deep? */
static bool shallow(const pd_program *p, int bidx, int depth) {
  const pd_block *b = pd_program_block(p, bidx);
  if (!b) return true;
  if (depth > MAX_DEPTH) return false;
  for (int i = 0; i < b->nops; i++)
    for (int a = 0; a < b->ops[i]->nattrs; a++) {
      const pd_attr *at = &b->ops[i]->attrs[a];
      if (at->type == PD_ATTR_BLOCK && !shallow(p, at->v.i, depth + 1)) return false;
      for (int k = 0; at->type == PD_ATTR_BLOCKS && k < at->n; k++)
        if (!shallow(p, at->ints[k], depth + 1)) return false;
    }
  return true;
}

/* How many ops of p own block idx. */
static int owners(const pd_program *p, int idx) {
  int n = 0;
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      const pd_op_desc *op = p->blocks[b]->ops[i];
      for (int a = 0; a < op->nattrs; a++) {
        const pd_attr *at = &op->attrs[a];
        if (at->type == PD_ATTR_BLOCK && at->v.i == idx) n++;
        for (int k = 0; at->type == PD_ATTR_BLOCKS && k < at->n; k++) n += at->ints[k] == idx;
      }
    }
  return n;
}

/* ---- Which ops move ---- */

/* How op is row-wise (the ROW_ flags of vm/oplist.h); *commutes: X and Y may be exchanged
 * (add, mul: exactly commutative in floating point). */
typedef enum kind { K_NONE, K_ROW_X, K_ELEMENTWISE, K_LOOKUP } kind;

static kind kind_of(const pd_op_desc *op, bool *commutes) {
  const pd_opdef *d = pd_opdef_of(op);
  *commutes = false;
  if (!d || d->forward) return K_NONE;
  if (d->flags & PD_OPF_ROW_X) return K_ROW_X;
  if (d->flags & PD_OPF_ROW_IDS) return K_LOOKUP;
  if (!(d->flags & PD_OPF_ROW_XY)) return K_NONE;
  *commutes = d->kind == PD_OP_elementwise_add || d->kind == PD_OP_elementwise_mul;
  return K_ELEMENTWISE;
}

/* The loop being worked on. */
typedef struct loop {
  const pd_program *p;
  pd_block *outer, *step;
  pd_op_desc *op;
  names ins;       /* the recurrent op's inputs */
  names mems;      /* states and ex_states */
  names outs;      /* its stacked outputs */
  names writes;    /* every var written in the step block or a block nested in it */
  names rows;      /* step-block vars holding the step's rows: inputs and moved ops' outputs */
  names before;    /* vars read by the step block's ops so far (nested blocks included) */
} loop;

static void loop_free(loop *l) {
  names_free(&l->ins);
  names_free(&l->mems);
  names_free(&l->outs);
  names_free(&l->writes);
  names_free(&l->rows);
  names_free(&l->before);
}

/* A value from outside the loop that the loop does not change. */
static bool invariant(const loop *l, const char *v) {
  return !pd_block_find_var_local(l->step, v) && pd_block_find_var(l->outer, v) &&
         !has(&l->writes, v) && !has(&l->rows, v);
}

/* The rank of var v as the step block sees it; -1 when unknown. */
static int rank_of(const loop *l, const char *v) {
  const pd_var_desc *d = pd_block_find_var(l->step, v);
  return d ? d->ndims : -1;
}

/* Can op (of the step block) move? *swap: move it with X and Y exchanged. */
static bool movable(const loop *l, const pd_op_desc *op, bool *swap) {
  bool commutes;
  kind k = kind_of(op, &commutes);
  *swap = false;
  if (k == K_NONE || op->noutputs != 1 || op->outputs[0].nargs != 1) return false;
  if (pd_op_attr(op, "sub_block") || pd_op_attr(op, "sub_blocks")) return false;
  /* The output: a var of the step block alone, written once, not read before. */
  const char *o = op->outputs[0].args[0];
  if (strcmp(op->outputs[0].param, "Out") != 0 || !pd_block_find_var_local(l->step, o) ||
      count(&l->writes, o) != 1 || has(&l->before, o) || has(&l->mems, o) || has(&l->outs, o))
    return false;
  for (int b = 0; b < l->p->nblocks; b++)
    if (l->p->blocks[b] != l->step && pd_block_find_var_local(l->p->blocks[b], o)) return false;
  /* The inputs: the row-wise slot holds step rows, the others invariant values. */
  const char *row_slot = k == K_LOOKUP ? "Ids" : "X";
  bool x_row = false, y_row = false, x_inv = false, y_inv = false;
  for (int s = 0; s < op->ninputs; s++) {
    const pd_slot *sl = &op->inputs[s];
    for (int a = 0; a < sl->nargs; a++) {
      const char *v = sl->args[a];
      if (strcmp(v, PD_EMPTY_VAR_NAME) == 0) continue;
      bool row = has(&l->rows, v), inv = !row && invariant(l, v);
      if (!row && !inv) return false;
      bool is_row_slot = strcmp(sl->param, row_slot) == 0, is_y = strcmp(sl->param, "Y") == 0;
      if (is_row_slot && sl->nargs == 1) {
        x_row = row;
        x_inv = inv;
      } else if (k == K_ELEMENTWISE && is_y && sl->nargs == 1) {
        y_row = row;
        y_inv = inv;
      } else if (row) {
        return false; /* rows where the op expects a whole value */
      }
    }
  }
  if (k != K_ELEMENTWISE) return x_row;
  const pd_attr *ax = pd_op_attr(op, "axis");
  int64_t axis = !ax ? -1 : ax->type == PD_ATTR_LONG ? ax->v.l : ax->v.i;
  const char *x = pd_op_input1(op, "X"), *y = pd_op_input1(op, "Y");
  if (!x || !y) return false;
  int xr = rank_of(l, x), yr = rank_of(l, y);
  if (xr < 1 || yr < 0) return false;
  if (x_row && y_row) return xr == yr; /* the same rows on both sides */
  /* An invariant operand of a lower rank is aligned to the right (axis -1) or from dim axis >= 1:
   * it never spans the rows. */
  if (x_row && y_inv) return yr < xr && (axis == -1 || axis >= 1);
  if (x_inv && y_row && commutes && axis == -1 && xr < yr && yr >= 1) {
    *swap = true;
    return true;
  }
  return false;
}

/* ---- Rewriting ---- */

static pd_status oom(pd_error *err) {
  return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
}

/* A copy of op at position pos of b, X and Y exchanged when swap. */
static int copy_op(pd_block *b, int pos, const pd_op_desc *op, bool swap) {
  pd_op_desc *c = pd_block_copy_op(b, pos, op);
  if (!c) return -1;
  const pd_slot *x = pd_op_input(op, "X"), *y = pd_op_input(op, "Y");
  if (swap && x && y &&
      (pd_op_set_input(c, "X", y->nargs, (const char *const *)y->args) ||
       pd_op_set_input(c, "Y", x->nargs, (const char *const *)x->args)))
    return -1;
  return 0;
}

/* Declare in the outer block the sequence var `name` like the step var d. */
static int declare_outer(loop *l, const pd_var_desc *d, int lod_level) {
  pd_var_desc *v = pd_block_var(l->outer, d->name);
  if (!v || pd_var_set_shape(v, d->ndims, d->dims)) return -1;
  v->type = d->type;
  v->dtype = d->dtype;
  v->lod_level = lod_level;
  v->stop_gradient = d->stop_gradient;
  v->persistable = false;
  return 0;
}

static int add_names(names *s, const pd_op_desc *op, const char *slot, bool input) {
  const pd_slot *sl = input ? pd_op_input(op, slot) : pd_op_output(op, slot);
  for (int a = 0; sl && a < sl->nargs; a++)
    if (push(s, sl->args[a])) return -1;
  return 0;
}

static int add_strings(names *s, const pd_op_desc *op, const char *attr) {
  const pd_attr *at = pd_op_attr(op, attr);
  for (int i = 0; at && at->type == PD_ATTR_STRINGS && i < at->n; i++)
    if (push(s, at->strings[i])) return -1;
  return 0;
}

/* Free a heap array of n heap strings. */
static void free_strs(char **v, int n) {
  for (int i = 0; v && i < n; i++) pd_free(v[i]);
  pd_free(v);
}

/* Hoist out of the recurrent op at index *at of block outer; *at receives its new index. */
static pd_status hoist_loop(pd_program *p, pd_block *outer, int *at, int *moved, pd_error *err) {
  pd_op_desc *op = outer->ops[*at];
  const pd_attr *sa = pd_op_attr(op, "sub_block");
  pd_block *step = sa && sa->type == PD_ATTR_BLOCK ? pd_program_block(p, sa->v.i) : NULL;
  if (!step || step == outer || step->parent_idx != outer->idx || owners(p, step->idx) != 1 ||
      !shallow(p, step->idx, 1))
    return PD_OK;
  loop l = {.p = p, .outer = outer, .step = step, .op = op};
  bool *move = pd_calloc((size_t)step->nops + 1, sizeof *move);
  bool *swap = pd_calloc((size_t)step->nops + 1, sizeof *swap);
  names used = {0};
  char **new_ins = NULL, **new_params = NULL, **drop = NULL;
  int nnew = 0, nparams = 0, ndrop = 0, nmove = 0;
  pd_status st = PD_OK;
  if (!move || !swap || add_names(&l.ins, op, "inputs", true) ||
      add_strings(&l.mems, op, "states") || add_strings(&l.mems, op, "ex_states") ||
      add_names(&l.outs, op, "outputs", false) ||
      block_io(p, step->idx, NULL, &l.writes, 0))
    goto nomem;
  for (int i = 0; i < l.ins.n; i++)
    if (push(&l.rows, l.ins.v[i])) goto nomem;
  for (int i = 0; i < step->nops; i++) {
    const pd_op_desc *s = step->ops[i];
    if (movable(&l, s, &swap[i])) {
      move[i] = true;
      nmove++;
      if (push(&l.rows, s->outputs[0].args[0])) goto nomem;
    }
    if (op_io(p, s, &l.before, NULL, 0)) goto nomem;
  }
  if (nmove == 0) goto out;
  /* What the ops that stay read, and what the loop itself reads from its step scopes. */
  for (int i = 0; i < step->nops; i++)
    if (!move[i] && op_io(p, step->ops[i], &used, NULL, 0)) goto nomem;
  for (int i = 0; i < l.outs.n; i++)
    if (push(&used, l.outs.v[i])) goto nomem;
  for (int i = 0; i < l.mems.n; i++)
    if (push(&used, l.mems.v[i])) goto nomem;
  /* The new inputs: the old ones still read, then the moved outputs read by what stays. At
   * least one input is kept: it gives the loop its steps. Copies: the moved ops' strings go. */
  new_ins = pd_calloc((size_t)(l.ins.n + nmove) + 1, sizeof *new_ins);
  drop = pd_calloc((size_t)(l.ins.n + nmove) + 1, sizeof *drop);
  if (!new_ins || !drop) goto nomem;
  for (int i = 0; i < l.ins.n; i++) {
    char **dst = has(&used, l.ins.v[i]) ? &new_ins[nnew++] : &drop[ndrop++];
    if (!(*dst = pd_strdup(l.ins.v[i]))) goto nomem;
  }
  for (int i = 0; i < step->nops; i++) {
    if (!move[i]) continue;
    const char *o = step->ops[i]->outputs[0].args[0];
    char **dst = has(&used, o) ? &new_ins[nnew++] : &drop[ndrop++];
    if (!(*dst = pd_strdup(o))) goto nomem;
  }
  if (nnew == 0) { /* nothing the body reads comes from the sequences any more */
    if (!(new_ins[nnew++] = pd_strdup(l.ins.v[0]))) goto nomem;
    for (int i = 0; i < ndrop; i++)
      if (strcmp(drop[i], new_ins[0]) == 0) drop[i][0] = '\0';
  }
  /* The parameters the body still reads. */
  const pd_slot *ps = pd_op_input(op, "parameters");
  new_params = pd_calloc((size_t)(ps ? ps->nargs : 0) + 1, sizeof *new_params);
  if (!new_params) goto nomem;
  for (int i = 0; ps && i < ps->nargs; i++)
    if (has(&used, ps->args[i]) && !(new_params[nparams++] = pd_strdup(ps->args[i])))
      goto nomem;
  /* Move: copies before the loop, in order, each output declared there as a sequence. */
  const pd_var_desc *in0 = pd_block_find_var(outer, l.ins.v[0]);
  int lod_level = in0 && in0->lod_level > 0 ? in0->lod_level : 1;
  int pos = *at;
  for (int i = 0; i < step->nops; i++) {
    if (!move[i]) continue;
    const pd_op_desc *s = step->ops[i];
    const pd_var_desc *d = pd_block_find_var_local(step, s->outputs[0].args[0]);
    if (declare_outer(&l, d, lod_level) || copy_op(outer, pos++, s, swap[i])) goto nomem;
  }
  op = outer->ops[pos];
  *at = pos;
  for (int i = step->nops - 1; i >= 0; i--)
    if (move[i]) pd_block_remove_op(step, i);
  /* The step block no longer holds the step rows nobody reads there. */
  for (int i = 0; i < ndrop; i++)
    if (drop[i][0]) pd_block_remove_var(step, drop[i]);
  if (pd_op_set_input(op, "inputs", nnew, (const char *const *)new_ins) ||
      pd_op_set_input(op, "parameters", nparams, (const char *const *)new_params))
    goto nomem;
  if (moved) *moved += nmove;
  goto out;
nomem:
  st = oom(err);
out:
  free_strs(new_ins, nnew);
  free_strs(new_params, nparams);
  free_strs(drop, ndrop);
  names_free(&used);
  pd_free(move);
  pd_free(swap);
  loop_free(&l);
  return st;
}

pd_status pd_program_hoist(pd_program *p, int *moved, pd_error *err) {
  if (moved) *moved = 0;
  for (int b = 0; b < p->nblocks; b++)
    if (p->blocks[b]->forward_block_idx >= 0) return PD_OK; /* a backward pass reads names */
  for (int b = 0; b < p->nblocks; b++) {
    pd_block *blk = p->blocks[b];
    for (int i = 0; i < blk->nops; i++) {
      if (!pd_opdef_is(blk->ops[i], PD_OP_recurrent)) continue;
      pd_status st = hoist_loop(p, blk, &i, moved, err);
      if (st) return st;
    }
  }
  return PD_OK;
}
