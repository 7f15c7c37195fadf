/* decompile_cf.c -- the ops of a saved program's blocks written as .pd source (for
 * lang/decompile.c, through lang/decompile_int.h): control flow as the language's if / while
 * / for where it maps back (the script is then compiled and compared with the model by
 * decompile.c), else an op that runs a block as op(...) { ... } with the vars its block writes
 * first declared before it, declare(shape); every other op as op(...) or its layer group's
 * call; and the whole script: data() of the feeds, param() of the parameters, the ops, load()
 * and save(). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "lang/decompile_int.h"
#include "vm/ir/params.h"

static const pd_loc nowhere = {0};

/* ---- Ops: their slots, the body of an op that runs a block ---- */

/* `Slot = x` or `Slot = [x, y]`, the vars as block b sees them. */
static pd_status put_slot(dc *d, const pd_block *b, const pd_slot *s, bool list) {
  pd_buf_printf(d->out, ", %s = %s", s->param, list ? "[" : "");
  for (int k = 0; k < s->nargs; k++) {
    const char *id = pd_dc_ident(d, b, s->args[k]);
    if (!id) return oom(d);
    pd_buf_printf(d->out, "%s%s", k ? ", " : "", id);
  }
  if (list) pd_buf_puts(d->out, "]");
  return PD_OK;
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
            o != b || pd_dc_defined(d, b, name))
          continue;
        const pd_var_desc *v = pd_block_find_var_local(b, name);
        if (v->type != PD_VAR_LOD_TENSOR)
          return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "var '%s' (%s) of block %d is "
                              "written first in block %d: only a tensor can be declared", name,
                              pd_var_type_name(v->type), b->idx, sub->idx);
        const char *id = pd_dc_ident(d, b, name);
        if (!id) return oom(d);
        indent(d);
        pd_buf_printf(d->out, "%s = declare(", id);
        if (v->ndims >= 0) pd_dc_put_dims(d->out, v->ndims, v->dims);
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

/* Whether var name, as block b sees it, is persistable (a parameter, a running statistic). */
static bool persistable(const pd_block *b, const char *name) {
  const pd_var_desc *v = pd_block_find_var_visible(b, name, NULL);
  return v && v->persistable;
}

/* Whether an op's output var name is a new name of the script: one without an identifier yet,
 * or, in a body written as the language's if / while, any var but a persistable one (a write
 * of the name there is an assignment, which the construct carries out of its block). */
static bool fresh(dc *d, const pd_block *b, const char *name) {
  if (!pd_dc_defined(d, b, name)) return true;
  return d->rebind && strcmp(name, PD_EMPTY_VAR_NAME) && !persistable(b, name);
}

static pd_status put_op(dc *d, const pd_block *b, int index, const pd_op_desc *op);
static pd_status put_ops(dc *d, const pd_block *b);

/* ---- Control flow as the language's if / while / for ----
 * A recurrent op that pdlang's for over sequences makes becomes `for (t in x) { ... }`
 * (for_plan, put_for); the rest of this comment is the if and the while.
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

enum { CF_OP, CF_SKIP, CF_WHILE, CF_IF, CF_FOR };

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
  int src_op;                         /* CF_FOR: the assign of the loop's input before it
                                         (skipped: the for makes it), -1: none */
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
  plan[i] = (cfplan){CF_IF, i + 1, -1, i + 2, true, n, -1};
  for (int k = i + 1; k < i + 2 + n; k++) plan[k].kind = CF_SKIP;
  return true;
}

/* Whether block t is block b or under it. */
static bool in_tree(const pd_program *p, const pd_block *b, const pd_block *t) {
  for (int n = 0; t && n <= p->nblocks; n++) {
    if (t == b) return true;
    t = t->parent_idx >= 0 ? pd_program_block(p, t->parent_idx) : NULL;
  }
  return false;
}

/* How many op inputs of the blocks that see var name of block o (o and the blocks under it
 * that declare no var of that name) name it, and for a var of block 0 how many fetch targets. */
static int64_t uses(const dc *d, const pd_block *o, const char *name) {
  const pd_program *p = d->m->program;
  int64_t n = 0;
  for (int bi = 0; bi < p->nblocks; bi++) {
    const pd_block *bk = p->blocks[bi], *decl = NULL;
    if (!in_tree(p, o, bk) || !pd_block_find_var_visible(bk, name, &decl) || decl != o) continue;
    for (int i = 0; i < bk->nops; i++) n += op_reads(bk->ops[i], name);
  }
  for (int i = 0; o->idx == 0 && i < d->m->nfetches; i++) n += !strcmp(d->m->fetches[i].var, name);
  return n;
}

/* Whether the ops of block sub and of the blocks under it write only vars of those blocks. */
static bool writes_inside(const pd_program *p, const pd_block *sub) {
  for (int bi = 0; bi < p->nblocks; bi++) {
    const pd_block *bk = p->blocks[bi];
    for (int i = 0; in_tree(p, sub, bk) && i < bk->nops; i++)
      for (int j = 0; j < bk->ops[i]->noutputs; j++)
        for (int k = 0; k < bk->ops[i]->outputs[j].nargs; k++) {
          const char *name = bk->ops[i]->outputs[j].args[k];
          const pd_block *o = NULL;
          if (strcmp(name, PD_EMPTY_VAR_NAME) &&
              (!pd_block_find_var_visible(bk, name, &o) || !o || !in_tree(p, sub, o)))
            return false;
        }
  }
  return true;
}

/* The memory (its index in states) whose last step op of b is, for the recurrent op rec: the
 * sequence_pool the language's for writes after it (pooltype LAST, FIRST in reverse, of the
 * state's stacked output; its MaxIndex unread); else -1. */
static int pool_of(const dc *d, const pd_block *b, const pd_op_desc *op,
                   const pd_op_desc *rec) {
  const pd_attr *pt = pd_op_attr(op, "pooltype"), *rv = pd_op_attr(rec, "reverse");
  const pd_attr *sts = pd_op_attr(rec, "states");
  const pd_slot *outs = pd_op_output(rec, "outputs"), *mi = pd_op_output(op, "MaxIndex");
  const char *x = one_var(pd_op_input(op, "X")), *out = one_var(pd_op_output(op, "Out"));
  bool reverse = rv && rv->type == PD_ATTR_BOOLEAN && rv->v.b;
  if (strcmp(op->type, "sequence_pool") || !x || !out || !pt || pt->type != PD_ATTR_STRING ||
      !pt->v.s || strcmp(pt->v.s, reverse ? "FIRST" : "LAST") || !outs || !sts ||
      sts->type != PD_ATTR_STRINGS || persistable(b, out))
    return -1;
  for (int k = 0; mi && k < mi->nargs; k++)
    if (strcmp(mi->args[k], PD_EMPTY_VAR_NAME) && uses(d, b, mi->args[k])) return -1;
  bool out_of_rec = false;
  for (int k = 0; k < outs->nargs; k++) out_of_rec |= !strcmp(outs->args[k], x);
  for (int k = 0; out_of_rec && k < sts->n; k++)
    if (sts->strings[k] && !strcmp(sts->strings[k], x)) return k;
  return -1;
}

/* A recurrent op at op i of b as the language's for over sequences (plan filled): its one
 * input, a var of its block too (the step); each memory's initial state a var that only the
 * op reads (its name is the memory's), its previous value (ex_states) and its state (states)
 * two vars of the block; the block writes no var above it, and no op reads its step_scopes.
 * An assign of the input before it that only the op reads is the for's own copy (skipped),
 * and so are the sequence_pool ops after it of its memories' last steps. */
static void for_plan(const dc *d, const pd_block *b, int i, cfplan *plan) {
  const pd_op_desc *op = b->ops[i];
  const pd_block *sub = cf_sub(d, b, op), *o = NULL;
  const char *src = one_var(pd_op_input(op, "inputs"));
  const pd_attr *ex = pd_op_attr(op, "ex_states"), *sts = pd_op_attr(op, "states");
  const pd_slot *init = pd_op_input(op, "initial_states");
  int n = init && !slot_empty(init) ? init->nargs : 0;
  if (!sub || !src || !ex || !sts || ex->type != PD_ATTR_STRINGS ||
      sts->type != PD_ATTR_STRINGS || ex->n != n || sts->n != n ||
      !pd_block_find_var_local(sub, src) || !unread(d, op, "step_scopes") ||
      !pd_block_find_var_visible(b, src, &o) || !o || !writes_inside(d->m->program, sub))
    return;
  for (int k = 0; k < n; k++) {
    const char *iv = init->args[k], *e = ex->strings[k], *st = sts->strings[k];
    const pd_block *io = NULL;
    if (!e || !st || !strcmp(e, st) || !pd_block_find_var_local(sub, e) ||
        !pd_block_find_var_local(sub, st) || !pd_block_find_var_visible(b, iv, &io) || !io ||
        persistable(b, iv) || uses(d, io, iv) != 1)
      return;
  }
  plan[i].kind = CF_FOR;
  for (int k = i - 1; k >= 0; k--) {
    const pd_op_desc *a = b->ops[k];
    static const char *const x_only[] = {"X", NULL}, *const out_only[] = {"Out", NULL};
    if (!same_var(one_var(pd_op_output(a, "Out")), src)) continue;
    if (!strcmp(a->type, "assign") && plan[k].kind == CF_OP && one_var(pd_op_input(a, "X")) &&
        pd_dc_only_slots(a, x_only, out_only) && uses(d, o, src) == 1) {
      plan[k].kind = CF_SKIP;
      plan[i].src_op = k;
    }
    break;
  }
  for (int k = i + 1; k < b->nops; k++)
    if (plan[k].kind == CF_OP && pool_of(d, b, b->ops[k], op) >= 0) plan[k].kind = CF_SKIP;
}

/* Where the ops of block b are written as if / while (plan[i] for op i). */
static void plan_block(const dc *d, const pd_block *b, cfplan *plan) {
  for (int i = 0; i < b->nops; i++) plan[i] = (cfplan){CF_OP, -1, -1, -1, false, 0, -1};
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    const char *c, *c2;
    const pd_block *s1, *s2;
    if (plan[i].kind != CF_OP) continue;
    if (!strcmp(op->type, "recurrent")) {
      for_plan(d, b, i, plan);
      continue;
    }
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
          if (pd_dc_defined(d, b, name) || result_val(b, pl, side, name) ||
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
    const char *id = pd_dc_ident(d, b, res);
    const char *v = pd_dc_defined(d, sub, val) ? pd_dc_ident(d, sub, val) : NULL;
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

/* Var name, as block b sees it, is written id (another var's identifier). false: out of
 * memory. */
static bool alias(dc *d, const pd_block *b, const char *name, const char *id) {
  char *key = pd_dc_var_key(b, name);
  pd_strmap_entry *e = key ? pd_strmap_add(&d->ident, key, NULL) : NULL;
  pd_free(key);
  if (e) e->val.p = (void *)id;
  return e != NULL;
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
    if (!pd_dc_defined(d, b, x))
      return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (split_lod_tensor) reads "
                          "'%s', which no op before it writes", k, x);
    const char *id = pd_dc_ident(d, b, x);
    for (int side = 0; id && side < 2; side++)
      if (!alias(d, b, one_var(pd_op_output(sp, side ? "OutFalse" : "OutTrue")), id))
        return oom(d);
    if (!id) return oom(d);
  }
  return PD_OK;
}

/* `for (t in x) { ... }` for the recurrent op i of b as planned: the body's ops, one level in,
 * the previous value of each memory named as its initial state (the memory's name), then each
 * memory's state assigned to that name and each output that the language stacks otherwise
 * emitted; after it, the memories' last steps (the sequence_pool ops planned away) are the
 * memories' names. *done false (nothing written) when a var it reads has no name yet. */
static pd_status put_for(dc *d, const pd_block *b, int i, const cfplan *pl, bool *done) {
  const pd_op_desc *op = b->ops[i];
  const pd_block *sub = cf_sub(d, b, op);
  const char *src = one_var(pd_op_input(op, "inputs"));
  const char *x = pl->src_op >= 0 ? one_var(pd_op_input(b->ops[pl->src_op], "X")) : src;
  const pd_slot *init = pd_op_input(op, "initial_states"), *outs = pd_op_output(op, "outputs");
  const pd_attr *ex = pd_op_attr(op, "ex_states"), *sts = pd_op_attr(op, "states");
  const pd_attr *rv = pd_op_attr(op, "reverse");
  char where[32];
  *done = false;
  if (!pd_dc_defined(d, b, x)) return d->oom ? oom(d) : PD_OK;
  for (int k = 0; k < ex->n; k++)
    if (!pd_dc_defined(d, b, init->args[k])) return d->oom ? oom(d) : PD_OK;
  for (int k = 0; k < ex->n; k++) {
    const char *id = pd_dc_ident(d, b, init->args[k]);
    if (!id || !alias(d, sub, ex->strings[k], id)) return oom(d);
  }
  const char *xid = pd_dc_ident(d, b, x), *tid = pd_dc_ident(d, sub, src);
  if (!xid || !tid) return oom(d);
  *done = true;
  d->lifted++;
  indent(d);
  pd_buf_printf(d->out, "for (%s in %s%s) {  # op %d%s (recurrent)\n", tid, xid,
                rv && rv->type == PD_ATTR_BOOLEAN && rv->v.b ? ", reverse = true" : "", i,
                of_block(where, b));
  bool rebind = d->rebind;
  d->rebind = true;
  d->depth++;
  pd_status st = put_ops(d, sub);
  for (int k = 0; !st && k < ex->n; k++) { /* the memories */
    const char *v = sts->strings[k];
    if (!pd_dc_defined(d, sub, v)) {
      st = d->oom ? oom(d) : pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d%s (recurrent): "
                                          "no op of its block writes its state '%s'", i,
                                          of_block(where, b), v);
      break;
    }
    const char *m = pd_dc_ident(d, b, init->args[k]), *id = pd_dc_ident(d, sub, v);
    if (!m || !id) st = oom(d);
    else if (strcmp(m, id)) {
      indent(d);
      pd_buf_printf(d->out, "%s = %s  # memory %d of op %d%s\n", m, id, k, i,
                    of_block(where, b));
    }
  }
  for (int j = 0; !st && outs && j < outs->nargs; j++) { /* the outputs read as sequences */
    const char *o = outs->args[j];
    int64_t pools = 0;
    bool state = false;
    for (int k = 0; k < sts->n; k++) state |= !strcmp(sts->strings[k], o);
    for (int k = i + 1; k < b->nops; k++)
      pools += pool_of(d, b, b->ops[k], op) >= 0 &&
               same_var(one_var(pd_op_input(b->ops[k], "X")), o);
    if (!strcmp(o, PD_EMPTY_VAR_NAME) || (state && uses(d, b, o) == pools)) continue;
    if (!pd_block_find_var_local(sub, o) || !pd_dc_defined(d, sub, o)) {
      st = d->oom ? oom(d) : pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d%s (recurrent): "
                                          "no op of its block writes its output '%s'", i,
                                          of_block(where, b), o);
      break;
    }
    const char *e = pd_dc_ident(d, b, o), *id = pd_dc_ident(d, sub, o);
    if (!e || !id) st = oom(d);
    else {
      indent(d);
      pd_buf_printf(d->out, "emit %s = %s  # output %d of op %d%s\n", e, id, j, i,
                    of_block(where, b));
    }
  }
  d->depth--;
  d->rebind = rebind;
  for (int k = i + 1; !st && k < b->nops; k++) { /* the last steps */
    int mem = pool_of(d, b, b->ops[k], op);
    const char *id = mem >= 0 ? pd_dc_ident(d, b, init->args[mem]) : NULL;
    if (mem >= 0 && (!id || !alias(d, b, one_var(pd_op_output(b->ops[k], "Out")), id)))
      st = oom(d);
  }
  if (!st) {
    indent(d);
    pd_buf_puts(d->out, "}\n");
  }
  return st;
}

/* `if (...) { ... } else { ... }` or `while (...) { ... }` for op i of b as planned (plan: the
 * block's); *done false (nothing written) when its writes do not map (the op is then written
 * as op() { }). */
static pd_status put_cf(dc *d, const pd_block *b, int i, const cfplan *plan, bool *done) {
  const cfplan *pl = &plan[i];
  if (pl->kind == CF_FOR) return put_for(d, b, i, pl, done);
  const pd_op_desc *op = b->ops[i];
  const pd_block *s1 = cf_sub(d, b, op), *s2 = NULL;
  const char *c = one_var(pd_op_input(op, pl->kind == CF_WHILE ? "Condition" : "Cond"));
  const cfplan *ifp = pl->kind == CF_IF ? pl : NULL;
  char where[32];
  *done = false;
  if (pl->else_op >= 0) s2 = cf_sub(d, b, b->ops[pl->else_op]);
  pd_status st = pl->rows ? alias_parts(d, b, i, c) : PD_OK;
  if (st) return st;
  if (!pd_dc_defined(d, b, c) || !writes_map(d, b, s1, s2, ifp, 0) ||
      (s2 && !writes_map(d, b, s2, s1, ifp, 1))) {
    if (pl->else_op < 0) return d->oom ? oom(d) : PD_OK;  /* op() { } */
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d%s (conditional_block): a var "
                        "its block writes is read after it", i, of_block(where, b));
  }
  const char *cid = pd_dc_ident(d, b, c);
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
      st = pd_dc_put_group(d, g);
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
  if (d->rebind && !strcmp(op->type, "assign") && ax && ao &&
      pd_dc_only_slots(op, x_only, out_only) &&
      !persistable(b, ao)) { /* a copy: the name takes the value */
    if (!pd_dc_defined(d, b, ax))
      return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d%s (assign) reads '%s', "
                          "which no op before it writes", index, of_block(where, b), ax);
    const char *x = pd_dc_ident(d, b, ax), *y = pd_dc_ident(d, b, ao);
    if (!x || !y) return oom(d);
    indent(d);
    pd_buf_printf(d->out, "%s = %s  # op %d%s\n", y, x, index, of_block(where, b));
    return PD_OK;
  }
  /* in such a body the elementwise ops of the operators and the builtins' activations are
   * written as those (the check of the whole script compares their ops) */
  const char *sym = d->rebind ? pd_dc_binary_sym(op) : NULL;
  const char *fn = d->rebind && !sym && strcmp(op->type, "dropout") ? pd_dc_unary_fn(op) : NULL;
  const char *ay = sym ? one_var(pd_op_input(op, "Y")) : NULL;
  if ((sym || fn) && !persistable(b, ao) && pd_dc_defined(d, b, ax) &&
      (!ay || pd_dc_defined(d, b, ay))) {
    pd_buf call;
    pd_buf_init(&call);
    pd_status st = fn ? pd_dc_attrs_given(op, &call) : PD_OK;
    const char *x = pd_dc_ident(d, b, ax), *y = ay ? pd_dc_ident(d, b, ay) : "";
    const char *o = pd_dc_ident(d, b, ao);
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
      if (strcmp(op->inputs[j].args[k], PD_EMPTY_VAR_NAME) &&
          !pd_dc_defined(d, b, op->inputs[j].args[k]))
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
      const char *id = pd_dc_ident(d, b, s->args[k]);
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
      st = pd_dc_put_attr(d, op, &op->attrs[j]);
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
pd_status pd_dc_write_script(dc *d, const char *model_path, const char *save_as,
                             const char **params, int np) {
  const pd_model *m = d->m;
  pd_buf *out = d->out;
  pd_error *err = d->err;
  pd_status st = PD_OK;
  pd_buf_puts(out, "# ");
  pd_buf_puts(out, model_path);
  pd_buf_printf(out, ", decompiled by `pdlang decompile`: %d ops. `pdlang run` of this script "
                     "writes the\n# same program to ", d->b->nops);
  pd_dc_put_str(out, save_as);
  pd_buf_puts(out, ".\n");
  if (d->ls && d->ls->any_layer) pd_buf_puts(out, "\nimport \"layers\"\n");
  pd_buf_puts(out, "\n# inputs\n");
  for (int i = 0; !st && i < m->nfeeds; i++) {
    const pd_var_desc *v = pd_block_find_var_local(d->b, m->feeds[i].var);
    const char *id = v ? pd_dc_ident(d, d->b, v->name) : NULL;
    if (!v) st = pd_error_set(err, PD_EFORMAT, nowhere, "feed target '%s' is no var",
                              m->feeds[i].var);
    else if (!id) st = oom(d);
    else if (v->ndims < 1)
      st = pd_error_set(err, PD_EUNSUPPORTED, nowhere, "input '%s' has no shape", v->name);
    if (st) break;
    int seq = pd_dc_seq_feed(d, v->name);  /* a padded sequence as rows with LoD; its lengths */
    if (seq == 2) continue;
    pd_buf_printf(out, "%s = data(", id);
    pd_dc_put_str(out, v->name);
    pd_buf_puts(out, ", ");
    pd_dc_put_dims(out, v->ndims - (seq == 1), v->dims + (seq == 1));
    if (v->dtype != PD_FP32) pd_buf_printf(out, ", %s", pd_dtype_name(v->dtype));
    if (v->lod_level || seq) pd_buf_printf(out, ", lod_level = %d", seq ? 1 : v->lod_level);
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
    const char *id = pd_dc_ident(d, d->b, v->name);
    if (!id) {
      st = oom(d);
      break;
    }
    if (!heading) pd_buf_puts(out, "\n# parameters (their values: load below)\n");
    heading = true;
    pd_buf_printf(out, "%s = param(", id);
    pd_dc_put_str(out, v->name);
    pd_buf_puts(out, ", ");
    pd_dc_put_dims(out, v->ndims, v->dims);
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
        pd_dc_put_str(out, lp);
        pd_buf_puts(out, ")\n");
      }
      pd_free(pp);
    }
    pd_buf_puts(out, "save(");
    pd_dc_put_str(out, save_as);
    for (int i = 0; i < m->nfetches && !st; i++) {
      const char *fv = m->fetches[i].var;
      const char *id = pd_dc_defined(d, d->b, fv) ? pd_dc_ident(d, d->b, fv) : NULL;
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
