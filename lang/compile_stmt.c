/* compile_stmt.c -- statements and control flow: assignment, emit, return, def, and the
 * lowering of if / for / while to the block ops listed at the top of lang/compile.c. Part of the
 * compiler (lang/compile_int.h). */
#include "config.h"
#include "lang/compile_int.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Control flow.                                                                               */

/* The names a block's statements assign at its own level (not in nested blocks), for deciding
 * which names every branch of an if defines: added to *set (keys borrowed from the AST). A
 * nested if defines a name when all of its branches, else included, do. False on out of
 * memory. */
static bool assigned_names(const pd_ast_node *block, pd_strmap *set) {
  if (!block) return true;
  for (size_t i = 0; i < block->block.stmts.len; i++) {
    const pd_ast_node *s = block->block.stmts.items[i];
    if (s->kind == PD_AST_ASSIGN)
      for (size_t k = 0; k < s->assign.targets.len; k++)
        if (!pd_strmap_add(set, s->assign.targets.items[k]->name.id, NULL)) return false;
    if (s->kind == PD_AST_IF && s->if_.else_block) {
      /* The intersection of the arms' sets: the first arm's, less what another arm lacks. */
      pd_strmap all = {0}, arm = {0};
      bool ok = assigned_names(s->if_.branches.items[0]->branch.body, &all);
      for (size_t k = 1; ok && k <= s->if_.branches.len; k++) {
        const pd_ast_node *body = k < s->if_.branches.len ? s->if_.branches.items[k]->branch.body
                                                         : s->if_.else_block;
        ok = assigned_names(body, &arm);
        for (size_t e = 0; ok && e < all.cap; e++)
          if (all.slots[e].key && !pd_strmap_find(&arm, all.slots[e].key))
            all.slots[e].val.i = -1; /* marked: not in every arm */
        pd_strmap_free(&arm);
      }
      for (size_t e = 0; ok && e < all.cap; e++)
        if (all.slots[e].key && all.slots[e].val.i == 0)
          ok = pd_strmap_add(set, all.slots[e].key, NULL) != NULL;
      pd_strmap_free(&all);
      if (!ok) return false;
    }
  }
  return true;
}

/* The sets of names each arm of an if assigns: sets[k] for branch k, sets[nb] for the else (empty
 * when there is none). NULL on out of memory (reported). Free with arm_sets_free. */
static pd_strmap *arm_sets(C *c, const pd_ast_node *ifn) {
  size_t nb = ifn->if_.branches.len;
  pd_strmap *sets = pd_calloc(nb + 1, sizeof *sets);
  bool ok = sets != NULL;
  for (size_t k = 0; ok && k <= nb; k++)
    ok = assigned_names(k < nb ? ifn->if_.branches.items[k]->branch.body : ifn->if_.else_block,
                        &sets[k]);
  if (!ok) {
    c->oom = true;
    if (sets)
      for (size_t k = 0; k <= nb; k++) pd_strmap_free(&sets[k]);
    pd_free(sets);
    return NULL;
  }
  return sets;
}

static void arm_sets_free(const pd_ast_node *ifn, pd_strmap *sets) {
  if (!sets) return;
  for (size_t k = 0; k <= ifn->if_.branches.len; k++) pd_strmap_free(&sets[k]);
  pd_free(sets);
}

/* Open a construct's sub-block and its scope. */
static cflow *cf_open(C *c, cf_kind kind, scope_kind sk) {
  cflow *f = pd_cmp_calloc(c, sizeof *f);
  if (!f) return NULL;
  f->kind = kind;
  f->parent_block = c->block;
  f->block = pd_program_add_block(c->unit->main, c->block->idx);
  if (!f->block) {
    c->oom = true;
    return NULL;
  }
  f->outer = c->cf;
  symtab *s = pd_cmp_scope_push(c, sk, c->scope);
  if (!s) return NULL;
  s->cf = f;
  c->cf = f;
  c->block = f->block;
  return f;
}

static void cf_close(C *c, cflow *f, symtab *saved) {
  c->cf = f->outer;
  c->block = f->parent_block;
  c->scope = saved;
}

static const char **read_names(C *c, cflow *f, int *n) {
  const char **names = pd_cmp_calloc(c, sizeof *names * (size_t)(f->nreads ? f->nreads : 1));
  if (!names) return NULL;
  for (int i = 0; i < f->nreads; i++) names[i] = f->reads[i].inner->name;
  *n = f->nreads;
  return names;
}

/* One branch of a tensor if: lower its statements into a sub-block, then copy the branch's value
 * of every output name into out_vars[i] (vars of the enclosing block). */
typedef struct if_out {
  const char *name;
  pd_var_desc *part[2];   /* per branch (rows: each half; scalar: both the same var) */
  value *vals[2];         /* the branch's value of the name */
  pd_loc loc;
} if_out;

static bool compile_if_chain(C *c, const pd_ast_node *ifn, size_t from);

/* Run a branch's statements (or, for the else of an `else if`, the rest of the chain). */
static void compile_branch_body(C *c, const pd_ast_node *ifn, size_t idx) {
  if (idx < ifn->if_.branches.len)
    pd_cmp_compile_block(c, ifn->if_.branches.items[idx]->branch.body);
  else if (idx == ifn->if_.branches.len && ifn->if_.else_block)
    pd_cmp_compile_block(c, ifn->if_.else_block);
  else if (idx > ifn->if_.branches.len) compile_if_chain(c, ifn, idx - ifn->if_.branches.len);
}

/* Does the arm `idx` (branch index, or len for else) assign name at its own level? sets from
 * arm_sets. */
static bool arm_assigns(const pd_ast_node *ifn, const pd_strmap *sets, size_t idx,
                        const char *name) {
  size_t nb = ifn->if_.branches.len;
  if (idx <= nb) return pd_strmap_find(&sets[idx], name) != NULL;
  /* the rest of an else-if chain starting at branch idx - nb, with its else */
  if (!ifn->if_.else_block) return false;
  for (size_t k = idx - nb; k <= nb; k++)
    if (!pd_strmap_find(&sets[k], name)) return false;
  return true;
}

static bool lower_tensor_if(C *c, const pd_ast_node *ifn, size_t from, value *cond) {
  const pd_ast_node *br = ifn->if_.branches.items[from];
  pd_var_desc *cv = cond->var;
  pd_loc loc = br->loc;
  int64_t numel = 1;
  bool known = cv->ndims >= 0;
  for (int i = 0; known && i < cv->ndims; i++) {
    if (cv->dims[i] < 0) known = false;
    else numel *= cv->dims[i];
  }
  bool rows = cv->ndims >= 1 && cv->ndims <= 2 && (cv->ndims == 1 || cv->dims[1] == 1) &&
              (cv->dims[0] == -1 || cv->dims[0] > 1);
  if (cv->dtype != PD_BOOL || (!rows && !(known && numel == 1))) {
    pd_cmp_error(c, br->branch.cond->loc,
                 "the condition of an if must be a bool tensor with one element or of shape "
                 "[batch, 1], got %s %s", pd_dtype_name(cv->dtype), pd_cmp_dims_str(c, cv));
    return false;
  }
  size_t nb = ifn->if_.branches.len;
  /* The false arm: the else block, the rest of an else-if chain, or nothing. */
  size_t false_arm = from + 1 < nb ? nb + from + 1 : nb;
  bool has_false = from + 1 < nb || ifn->if_.else_block;
  rows_split *rs = NULL;
  if (rows) {
    rs = pd_cmp_calloc(c, sizeof *rs);
    if (!rs) return false;
    rs->cond = cv;
    rs->at = c->block;
    rs->loc = br->branch.cond->loc;
    rs->call = c->call;
  }
  pd_var_desc *not_cond = NULL;
  symtab *saved = c->scope;
  symtab *arm_scope[2] = {NULL, NULL};
  cflow *arm_cf[2] = {NULL, NULL};
  for (int side = 0; side < 2; side++) {
    cflow *f = cf_open(c, rows ? CF_ROWS : CF_SCALAR, SC_BRANCH);
    if (!f) return false;
    f->side = side;
    f->rows = rs;
    f->cond = cv;
    arm_cf[side] = f;
    arm_scope[side] = c->scope;
    if (side == 0) pd_cmp_compile_block(c, br->branch.body);
    else if (has_false) compile_branch_body(c, ifn, false_arm);
    cf_close(c, f, saved);
  }
  if (!rows) {
    value *nc = pd_cmp_simple_op(c, "logical_not", cond, NULL, loc);
    if (nc->k != V_TENSOR) return false;
    not_cond = nc->var;
  }
  /* Outputs: outer names written in either arm, and new names assigned in both. */
  if_out *outs = NULL;
  int nouts = 0, capouts = 0;
  pd_strmap *sets = arm_sets(c, ifn), seen = {0};  /* seen: the names in outs */
  bool failed = sets == NULL;
  for (int side = 0; side < 2 && !failed; side++) {
    symtab *s = arm_scope[side];
    if (!s) continue;
    for (int pass = 0; pass < 2 && !failed; pass++) {
      const char **names = pass ? s->news : s->writes;
      int n = pass ? s->nnews : s->nwrites;
      for (int i = 0; i < n && !failed; i++) {
        const char *name = names[i];
        if (pd_strmap_find(&seen, name)) continue;
        bool outer = pd_cmp_lookup(saved, name, NULL) != NULL;
        if (!outer) {
          /* New in this arm: an output only when every arm defines it. */
          bool every = arm_assigns(ifn, sets, from, name) && has_false &&
                       arm_assigns(ifn, sets, false_arm, name);
          binding *b = pd_cmp_lookup_local(s, name);
          if (!every) {
            value *u = pd_cmp_vnew(c, V_UNDEF);
            if ((failed = u == VERR)) break;
            u->undef.loc = b ? b->loc : loc;
            u->undef.why =
                pd_cmp_fmt(c,
                           "it is assigned at %d:%d in only one branch of the if at %d:%d "
                           "(assign it in every branch, or before the if)",
                           u->undef.loc.line, u->undef.loc.col, ifn->loc.line, ifn->loc.col);
            pd_cmp_bind_local(c, saved, name, u, u->undef.loc);
            continue;
          }
        }
        if (nouts == capouts) {
          capouts = capouts ? capouts * 2 : 8;
          if_out *no = pd_cmp_calloc(c, sizeof *no * (size_t)capouts);
          if ((failed = !no)) break;
          if (nouts) memcpy(no, outs, sizeof *no * (size_t)nouts);
          outs = no;
        }
        if ((failed = !pd_strmap_add(&seen, name, NULL))) {
          c->oom = true;
          break;
        }
        memset(&outs[nouts], 0, sizeof outs[nouts]);
        outs[nouts].name = name;
        binding *b = pd_cmp_lookup_local(s, name);
        outs[nouts].loc = b ? b->loc : loc;
        nouts++;
      }
    }
  }
  arm_sets_free(ifn, sets);
  pd_strmap_free(&seen);
  if (failed) return false;
  /* Each arm copies its value of each output into a var of the enclosing block. */
  for (int j = 0; j < nouts; j++) {
    pd_var_desc *shared = NULL;
    for (int side = 0; side < 2; side++) {
      value *v = NULL;
      if (arm_scope[side]) {
        binding *b = pd_cmp_lookup_local(arm_scope[side], outs[j].name);
        if (b) v = b->v;
      }
      if (!v) {
        binding *ob = pd_cmp_lookup(saved, outs[j].name, NULL);
        v = ob ? ob->v : VERR;
      }
      outs[j].vals[side] = v;
      if (v->k == V_ERROR) return false;
      if (v->k != V_TENSOR) {
        pd_cmp_error(c, outs[j].loc,
                     "'%s' is assigned in a branch of a tensor if, so it must be a tensor "
                     "(got %s)",
                     outs[j].name, pd_cmp_vkind_phrase(v));
        return false;
      }
      if (!arm_cf[side]) continue;
      /* assign inside the arm's block */
      cflow *f = arm_cf[side];
      pd_block *saved_block = c->block;
      cflow *saved_cf = c->cf;
      c->block = f->block;
      c->cf = f;
      pd_var_desc *dst = shared;
      if (!dst) {
        const char *hint = rows ? pd_cmp_fmt(c, "%s.%s", outs[j].name, side ? "false" : "true")
                                : pd_cmp_fmt(c, "%s.cond", outs[j].name);
        dst = pd_cmp_var_new(c, f->parent_block, hint, true);
      }
      if (!rows) shared = dst;
      pd_op_desc *op = pd_cmp_op_new(c, "assign", outs[j].loc);
      bool okk = dst && op && pd_cmp_op_in(c, op, "X", v, outs[j].loc);
      if (okk) {
        const char *dn = dst->name;
        if (pd_op_set_output(op, "Out", 1, &dn)) c->oom = true;
        else okk = pd_cmp_op_finish(c, op, dst)->k == V_TENSOR;
      }
      c->block = saved_block;
      c->cf = saved_cf;
      if (!okk) return false;
      outs[j].part[side] = dst;
    }
  }
  /* The conditional_block ops, then (per row) the merges. */
  for (int side = 0; side < 2; side++) {
    cflow *f = arm_cf[side];
    if (!f) continue;
    pd_op_desc *op = pd_cmp_op_new(c, "conditional_block", loc);
    if (!op) return false;
    int nin;
    const char **ins = read_names(c, f, &nin);
    const char **outn = pd_cmp_calloc(c, sizeof *outn * (size_t)(nouts ? nouts : 1));
    pd_var_desc *scope = pd_cmp_var_new(c, c->block, "cond_block.scope", false);
    if (!ins || !outn || !scope) return false;
    scope->type = PD_VAR_STEP_SCOPES;
    for (int j = 0; j < nouts; j++) outn[j] = outs[j].part[side]->name;
    const char *cn = (side == 1 && !rows) ? not_cond->name : cv->name;
    const char *sn = scope->name;
    if (pd_op_set_input(op, "Cond", 1, &cn) || pd_op_set_input(op, "Input", nin, ins) ||
        pd_op_set_output(op, "Out", nouts, outn) || pd_op_set_output(op, "Scope", 1, &sn) ||
        pd_op_set_attr_block(op, "sub_block", f->block->idx) ||
        pd_op_set_attr_bool(op, "is_scalar_condition", !rows)) {
      c->oom = true;
      return false;
    }
    if (pd_cmp_op_finish(c, op, scope)->k == V_ERROR) return false;
  }
  for (int j = 0; j < nouts; j++) {
    value *result;
    if (rows) {
      pd_var_desc *t = outs[j].part[0], *f = outs[j].part[1];
      if (t->ndims >= 0 && f->ndims >= 0) {
        bool same = t->ndims == f->ndims && t->dtype == f->dtype;
        for (int d = 1; same && d < t->ndims; d++)
          same = t->dims[d] == f->dims[d] || t->dims[d] < 0 || f->dims[d] < 0;
        if (!same) {
          pd_cmp_error(c, outs[j].loc,
                       "'%s' is %s %s in the true branch but %s %s in the false branch",
                       outs[j].name, pd_dtype_name(t->dtype), pd_cmp_dims_str(c, t),
                       pd_dtype_name(f->dtype), pd_cmp_dims_str(c, f));
          return false;
        }
      }
      pd_op_desc *op = pd_cmp_op_new(c, "merge_lod_tensor", loc);
      pd_var_desc *out = op ? pd_cmp_op_out(c, op, "Out", outs[j].name) : NULL;
      if (!out) return false;
      const char *x = cv->name, *tn = t->name, *fn = f->name;
      if (pd_op_set_input(op, "X", 1, &x) || pd_op_set_input(op, "Mask", 1, &x) ||
          pd_op_set_input(op, "InTrue", 1, &tn) || pd_op_set_input(op, "InFalse", 1, &fn)) {
        c->oom = true;
        return false;
      }
      result = pd_cmp_op_finish(c, op, out);
    } else {
      result = pd_cmp_vtensor(c, outs[j].part[0]);
    }
    if (result->k != V_TENSOR) return false;
    pd_cmp_assign_name(c, outs[j].name, result, outs[j].loc, false);
  }
  return true;
}

/* The arm of a compile-time if: statements in a plain scope (same block); afterwards its new
 * names are defined outside only when every arm of the if assigns them. */
static void compile_staged_arm(C *c, const pd_ast_node *ifn, size_t arm, size_t nb, bool has_else) {
  symtab *saved = c->scope;
  symtab *s = pd_cmp_scope_push(c, SC_PLAIN, saved);
  if (!s) return;
  compile_branch_body(c, ifn, arm);
  c->scope = saved;
  pd_strmap *sets = s->nnews && has_else ? arm_sets(c, ifn) : NULL;
  for (int i = 0; i < s->nnews; i++) {
    const char *name = s->news[i];
    binding *b = pd_cmp_lookup_local(s, name);
    bool every = sets != NULL;
    for (size_t k = 0; every && k <= nb; k++) every = pd_strmap_find(&sets[k], name) != NULL;
    if (every) {
      pd_cmp_assign_name(c, name, b->v, b->loc, false);
    } else {
      value *u = pd_cmp_vnew(c, V_UNDEF);
      if (u == VERR) break;
      u->undef.loc = b->loc;
      u->undef.why = pd_cmp_fmt(c,
                                "it is assigned at %d:%d in only one branch of the if at %d:%d "
                                "(assign it in every branch, or before the if)",
                                b->loc.line, b->loc.col, ifn->loc.line, ifn->loc.col);
      if (!pd_cmp_lookup(saved, name, NULL)) pd_cmp_bind_local(c, saved, name, u, b->loc);
    }
  }
  arm_sets_free(ifn, sets);
}

static bool compile_if_chain(C *c, const pd_ast_node *ifn, size_t from) {
  size_t nb = ifn->if_.branches.len;
  for (size_t i = from; i < nb; i++) {
    const pd_ast_node *br = ifn->if_.branches.items[i];
    value *cond = pd_cmp_eval(c, br->branch.cond);
    if (cond->k == V_ERROR) return false;
    if (cond->k == V_TENSOR) return lower_tensor_if(c, ifn, i, cond);
    bool t;
    if (!pd_cmp_truthy(c, cond, br->branch.cond->loc, &t)) return false;
    if (t) {
      compile_staged_arm(c, ifn, i, nb, ifn->if_.else_block != NULL);
      return false;
    }
  }
  if (ifn->if_.else_block) compile_staged_arm(c, ifn, nb, nb, true);
  return true;
}

/* Outer names a loop body assigns (at any depth, but not inside a def): its memories. */
static void collect_assigned(C *c, const pd_ast_node *n, const char ***out, int *cnt, int *cap) {
  if (n->kind == PD_AST_DEF) return;
  if (n->kind == PD_AST_ASSIGN)
    for (size_t k = 0; k < n->assign.targets.len; k++)
      pd_cmp_push_name(c, out, cnt, cap, n->assign.targets.items[k]->name.id);
  size_t nc = pd_ast_child_count(n);
  for (size_t i = 0; i < nc; i++) {
    pd_ast_node *ch = pd_ast_child_at(n, i).node;
    if (pd_ast_is_stmt(ch->kind) || ch->kind == PD_AST_BRANCH)
      collect_assigned(c, ch, out, cnt, cap);
  }
}

/* The per-step shape of a memory whose initial value has shape init: a value shared by every
 * sequence ([1], [H]) gets a leading batch dim; a per-sequence value ([-1, H]) keeps its own. */
static int memory_dims(const pd_var_desc *init, int64_t *dims) {
  if (init->ndims >= 1 && init->dims[0] == -1) {
    memcpy(dims, init->dims, sizeof *dims * (size_t)init->ndims);
    return init->ndims;
  }
  dims[0] = -1;
  for (int i = 0; i < init->ndims && i + 1 < PD_MAX_RANK; i++) dims[i + 1] = init->dims[i];
  return init->ndims + 1 > PD_MAX_RANK ? PD_MAX_RANK : init->ndims + 1;
}

typedef struct loop_mem {
  const char *name;
  value *init;             /* the outer value before the loop */
  pd_var_desc *pre;        /* for: the previous step's value inside the step block */
  pd_loc loc;
} loop_mem;

/* The index of `name` among names[0..n), or -1. */
static int out_index(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

/* A for over a compile-time list (range(3), [0.1, 0.01], a list name) is unrolled: the body is
 * compiled once per item, in order, each time in a plain scope of its own (same block) where the
 * loop variable is that item, a compile-time value. So actions in the body (train, eval, save,
 * print) are recorded once per item, and layers called in it make new parameters each time (the
 * body is written out once per item: a stack of layers). Names the body assigns that were
 * defined before the loop are updated (the next item sees the new value); names it defines
 * first stay inside its pass. Unrolling stops after a pass that reported errors. */
static bool compile_for_unrolled(C *c, const pd_ast_node *s, const value *list) {
  if (s->for_.option) {
    pd_cmp_error(c, s->for_.option->loc,
                 "'%s' is an option of a loop over sequences; a for over a compile-time list "
                 "takes none (it unrolls over the items in their order)",
                 s->for_.option->binding.name);
    return false;
  }
  symtab *saved = c->scope;
  const char *name = s->for_.var->name.id;
  unrolling u = {.loop = s, .passes = list->list.n, .outer = c->unrolling};
  c->unrolling = &u;
  bool ok = true;
  for (int i = 0; ok && i < list->list.n && !c->oom; i++) {
    int errors = c->diags->nerrors;
    u.pass = i;
    if (!pd_cmp_spend(c, 1, s->loc) || !pd_cmp_scope_push(c, SC_PLAIN, saved)) {
      ok = false;
      break;
    }
    if (!pd_cmp_bind_local(c, c->scope, name, list->list.items[i], s->for_.var->loc)) {
      c->scope = saved;
      ok = false;
      break;
    }
    pd_cmp_compile_block(c, s->for_.body);
    c->scope = saved;
    if (c->diags->nerrors > errors || c->over_budget) ok = false;
    else if (c->call && c->call->returned) break;
  }
  c->unrolling = u.outer;
  return ok && !c->oom;
}

static bool compile_for(C *c, const pd_ast_node *s) {
  value *seq = pd_cmp_eval(c, s->for_.iter);
  if (seq->k == V_ERROR) return false;
  if (seq->k == V_LIST) return compile_for_unrolled(c, s, seq);
  if (seq->k != V_TENSOR) {
    pd_cmp_error(c, s->for_.iter->loc,
                 "for (e in x) needs x to be a compile-time list to unroll (range(3), [1, 2], a "
                 "name bound to a list) or a batch of sequences (a tensor with LoD) to loop "
                 "over, got %s",
                 pd_cmp_vkind_phrase(seq));
    return false;
  }
  if (seq->var->lod_level < 1) {
    pd_buf b;
    pd_buf_init(&b);
    pd_cmp_describe(c, seq, &b);
    /* The step input of an enclosing for over a one-level batch: say how to nest loops. */
    const cflow *outer = NULL;
    for (const symtab *t = c->scope; t && !outer && seq->k == V_TENSOR; t = t->parent)
      if (t->kind == SC_LOOP && t->cf && t->cf->kind == CF_FOR && t->cf->step == seq->var)
        outer = t->cf;
    pd_cmp_error(c, s->for_.iter->loc,
                 "for (t in x) needs x to be a batch of sequences (a tensor with LoD), got %s%s",
                 b.data ? b.data : "?",
                 outer ? "; a step of a loop over sequences is one element of each: to loop "
                         "inside the loop, loop over sequences of sequences (lod_level = 2)"
                       : "");
    pd_buf_free(&b);
    return false;
  }
  /* `for (t in x, reverse = e)`: e a compile-time truth value; each sequence then runs from its
   * last element to its first. */
  bool reverse = false;
  const pd_ast_node *opt = s->for_.option;
  if (opt) {
    if (strcmp(opt->binding.name, "reverse") != 0) {
      pd_cmp_error(c, opt->loc, "for (t in x, ...) takes one option, reverse = true or false, "
                                "not '%s'",
                   opt->binding.name);
      return false;
    }
    value *rv = pd_cmp_eval(c, opt->binding.value);
    if (rv->k == V_ERROR) return false;
    if (rv->k != V_BOOL) {
      pd_cmp_error(c, opt->binding.value->loc,
                   "for (t in x, reverse = ...) needs true or false (known when compiling), "
                   "got %s",
                   pd_cmp_vkind_phrase(rv));
      return false;
    }
    reverse = rv->b;
  }
  pd_var_desc *xv = seq->var;
  /* The recurrent op slices its input into each step scope under the input's own name (Fluid's
   * convention), so the loop steps over a copy with a name of its own: the body may still name
   * the whole sequence. */
  pd_op_desc *src_op = pd_cmp_op_new(c, "assign", s->for_.iter->loc);
  if (!src_op || !pd_cmp_op_in(c, src_op, "X", seq, s->for_.iter->loc)) return false;
  value *src = pd_cmp_op_finish(c, src_op, pd_cmp_op_out(c, src_op, "Out", s->for_.var->name.id));
  if (src->k != V_TENSOR) return false;
  symtab *saved = c->scope;
  /* Memories: names assigned in the body that are defined outside. */
  const char **names = NULL;
  int nnames = 0, capnames = 0;
  collect_assigned(c, s->for_.body, &names, &nnames, &capnames);
  loop_mem *mems = pd_cmp_calloc(c, sizeof *mems * (size_t)(nnames ? nnames : 1));
  int nmems = 0;
  if (!mems) return false;
  for (int i = 0; i < nnames; i++) {
    binding *b = pd_cmp_lookup(saved, names[i], NULL);
    if (!b || b->v->k == V_UNDEF) continue;
    if (b->v->k != V_TENSOR) {
      pd_cmp_error(c, s->loc,
                   "'%s' is written in the loop, so it is a memory and must be a tensor (it is %s)",
                   names[i], pd_cmp_vkind_phrase(b->v));
      return false;
    }
    mems[nmems].name = names[i];
    mems[nmems].init = b->v;
    mems[nmems].loc = b->loc;
    nmems++;
  }
  cflow *f = cf_open(c, CF_FOR, SC_LOOP);
  if (!f) return false;
  symtab *ls = c->scope;
  /* The step input t: one element of each sequence. */
  pd_var_desc *t = pd_block_var(f->block, src->var->name);
  if (!t) {
    c->oom = true;
    return false;
  }
  t->dtype = xv->dtype;
  if (xv->ndims >= 1 && pd_var_set_shape(t, xv->ndims, xv->dims)) c->oom = true;
  if (t->ndims >= 1) t->dims[0] = -1;
  /* Over sequences of sequences (lod_level 2) a step is a batch of sequences: loop over it. */
  t->lod_level = xv->lod_level > 1 ? xv->lod_level - 1 : 0;
  f->step = t;
  pd_cmp_bind_local(c, ls, s->for_.var->name.id, pd_cmp_vtensor(c, t), s->for_.var->loc);
  for (int i = 0; i < nmems; i++) {
    pd_var_desc *init = mems[i].init->var;
    pd_var_desc *pre = pd_cmp_var_new(c, f->block, pd_cmp_fmt(c, "%s.pre", mems[i].name), true);
    if (!pre) return false;
    pre->dtype = init->dtype;
    int64_t dims[PD_MAX_RANK];
    int nd = init->ndims >= 0 ? memory_dims(init, dims) : -1;
    if (nd >= 0 && pd_var_set_shape(pre, nd, dims)) c->oom = true;
    mems[i].pre = pre;
    /* The memory is read as the previous step's value; writes shadow it in the loop scope. */
    pd_cmp_bind_local(c, ls, mems[i].name, pd_cmp_vtensor(c, pre), mems[i].loc);
  }
  /* The body. `emit` statements record their outputs on the loop scope (news list, below). */
  pd_cmp_compile_block(c, s->for_.body);
  /* Outputs: emitted sequences (bound by `emit` as "@emit.NAME" in the loop scope), then each
   * memory's per-step values, stacked too: its last step is the final state. */
  const char **outs = NULL, **states = NULL, **exstates = NULL;
  int nouts = 0, capouts = 0;
  pd_var_desc **out_inner = NULL;
  size_t capinner = 0;
  const char **emitted = NULL;
  int nemitted = 0, *emit_at = NULL; /* emitted[i] is the stacked output outs[emit_at[i]] */
  for (binding *b = ls->first; b; b = b->next) {
    if (strncmp(b->name, "@emit.", 6) != 0) continue;
    pd_var_desc *ev = b->v->var;
    /* A stacked output is a var of the enclosing block under its own name, so one must not be
     * the step input (whose name is the loop's input's): `emit o = t` stacks a copy. */
    if (ev == t) {
      value *cp = pd_cmp_simple_op(c, "assign", b->v, NULL, b->loc);
      if (cp->k != V_TENSOR) break;
      ev = cp->var;
    }
    int at = out_index(outs, nouts, ev->name); /* the same value emitted twice: stacked once */
    if (at < 0) {
      if (PD_GROW(out_inner, capinner, (size_t)nouts + 1) ||
          !pd_cmp_push_name(c, &outs, &nouts, &capouts, ev->name)) {
        c->oom = true;
        break;
      }
      out_inner[nouts - 1] = ev;
      at = nouts - 1;
    }
    const char **ne = pd_cmp_calloc(c, sizeof *ne * (size_t)(nemitted + 1));
    int *na = pd_cmp_calloc(c, sizeof *na * (size_t)(nemitted + 1));
    if (!ne || !na) break;
    if (nemitted) {
      memcpy(ne, emitted, sizeof *ne * (size_t)nemitted);
      memcpy(na, emit_at, sizeof *na * (size_t)nemitted);
    }
    ne[nemitted] = b->name + 6;
    na[nemitted++] = at;
    emitted = ne;
    emit_at = na;
  }
  int nemit = nouts;
  int *state_at = pd_cmp_calloc(c, sizeof *state_at * (size_t)(nmems ? nmems : 1));
  states = pd_cmp_calloc(c, sizeof *states * (size_t)(nmems ? nmems : 1));
  exstates = pd_cmp_calloc(c, sizeof *exstates * (size_t)(nmems ? nmems : 1));
  if (!states || !exstates || !state_at || c->oom) {
    pd_free(out_inner);
    cf_close(c, f, saved);
    return false;
  }
  bool ok = true;
  for (int i = 0; i < nmems && ok; i++) {
    binding *b = pd_cmp_lookup_local(ls, mems[i].name);
    value *v = b->v;
    if (v->k != V_TENSOR) {
      ok = false;
      if (v->k != V_ERROR)
        pd_cmp_error(c, b->loc, "memory '%s' must stay a tensor in the loop (it is %s)",
                     mems[i].name, pd_cmp_vkind_phrase(v));
      break;
    }
    pd_var_desc *pre = mems[i].pre, *nv = v->var;
    if (nv == pre) { /* never written: keep the memory as it was */
      states[i] = pre->name;
    } else {
      if (pre->ndims >= 0 && nv->ndims >= 0) {
        bool same = pre->ndims == nv->ndims;
        for (int d = 1; same && d < nv->ndims; d++)
          same = pre->dims[d] == nv->dims[d] || pre->dims[d] < 0 || nv->dims[d] < 0;
        if (!same) {
          pd_cmp_error(c, b->loc, "memory '%s' changes shape in the loop: %s before, %s after",
                       mems[i].name, pd_cmp_dims_str(c, pre), pd_cmp_dims_str(c, nv));
          ok = false;
          break;
        }
      }
      /* The new state must be a var of the step block (an outer var is copied in), and not the
       * step input (`prev = t`): the states are stacked as outputs (below), which the step
       * input cannot be. A value also emitted is stacked once, unless the two stackings
       * differ (an emitted batch of sequences in a loop over sequences of sequences is stacked
       * per sequence, a state by rows). */
      int at = out_index(outs, nemit, nv->name);
      if (!pd_block_find_var_local(f->block, nv->name) || nv == t ||
          (at >= 0 && xv->lod_level > 1 && nv->lod_level > 0)) {
        value *cp = pd_cmp_simple_op(c, "assign", v, NULL, b->loc);
        if (cp->k != V_TENSOR) { ok = false; break; }
        nv = cp->var;
      }
      states[i] = nv->name;
    }
    exstates[i] = pre->name;
    /* Stack the states too: the final value of the memory is the last step of each sequence. */
    pd_var_desc *st = pd_block_find_var_local(f->block, states[i]);
    state_at[i] = out_index(outs, nouts, states[i]);
    if (state_at[i] >= 0 && state_at[i] < nemit) continue;  /* emitted too: stacked once */
    if (PD_GROW(out_inner, capinner, (size_t)nouts + 1) ||
        !pd_cmp_push_name(c, &outs, &nouts, &capouts, st ? st->name : states[i])) {
      c->oom = true;
      ok = false;
      break;
    }
    out_inner[nouts - 1] = st;
    state_at[i] = nouts - 1;
  }
  cf_close(c, f, saved);
  if (!ok || c->oom) {
    pd_free(out_inner);
    return false;
  }
  /* The sequences the loop produces, in the enclosing block (same names as inside). */
  pd_var_desc **seqs = pd_cmp_calloc(c, sizeof *seqs * (size_t)(nouts ? nouts : 1));
  const char **seq_names = pd_cmp_calloc(c, sizeof *seq_names * (size_t)(nouts ? nouts : 1));
  if (!seqs || !seq_names) { pd_free(out_inner); return false; }
  for (int i = 0; i < nouts; i++) {
    pd_var_desc *in = out_inner[i];
    pd_var_desc *o = in ? pd_block_var(c->block, in->name) : NULL;
    if (!o) { c->oom = true; pd_free(out_inner); return false; }
    o->dtype = in->dtype;
    /* x's top level; below it, over sequences of sequences, the levels of an emitted value that
     * is itself a batch of sequences (one per running sequence: an inner loop's emits). */
    o->lod_level = xv->lod_level;
    if (xv->lod_level > 1) o->lod_level = i < nemit && in->lod_level > 0 ? 1 + in->lod_level : 1;
    if (in->ndims >= 0 && pd_var_set_shape(o, in->ndims, in->dims)) c->oom = true;
    seqs[i] = o;
    seq_names[i] = o->name;
  }
  pd_free(out_inner);
  pd_op_desc *op = pd_cmp_op_new(c, "recurrent", s->loc);
  pd_var_desc *scopes = pd_cmp_var_new(c, c->block, "rnn.step_scopes", false);
  if (!op || !scopes) return false;
  scopes->type = PD_VAR_STEP_SCOPES;
  int nparams;
  const char **params = read_names(c, f, &nparams);
  const char *sn = scopes->name;
  value **initv = pd_cmp_calloc(c, sizeof *initv * (size_t)(nmems ? nmems : 1));
  if (!params || !initv) return false;
  for (int i = 0; i < nmems; i++) initv[i] = mems[i].init;
  /* The sequence and the initial states are read in the enclosing block. */
  if (!pd_cmp_op_in(c, op, "inputs", src, s->for_.iter->loc) ||
      !pd_cmp_op_in_list(c, op, "initial_states", initv, nmems, s->loc))
    return false;
  if (pd_op_set_input(op, "parameters", nparams, params) ||
      pd_op_set_output(op, "outputs", nouts, seq_names) ||
      pd_op_set_output(op, "step_scopes", 1, &sn) ||
      pd_op_set_attr_strings(op, "ex_states", nmems, exstates) ||
      pd_op_set_attr_strings(op, "states", nmems, states) ||
      pd_op_set_attr_block(op, "sub_block", f->block->idx) ||
      pd_op_set_attr_bool(op, "has_states", nmems > 0) ||
      (reverse && pd_op_set_attr_bool(op, "reverse", true))) {
    c->oom = true;
    return false;
  }
  if (pd_cmp_op_finish(c, op, scopes)->k == V_ERROR) return false;
  for (int i = 0; i < nemitted; i++)
    pd_cmp_assign_name(c, emitted[i], pd_cmp_vtensor(c, seqs[emit_at[i]]), s->loc, false);
  /* Each memory becomes its last step: the last element of each sequence, or its first when
   * the loop runs in reverse (the stacked states keep x's order). */
  for (int i = 0; i < nmems; i++) {
    pd_op_desc *pool = pd_cmp_op_new(c, "sequence_pool", s->loc);
    if (!pool || !pd_cmp_op_in(c, pool, "X", pd_cmp_vtensor(c, seqs[state_at[i]]), s->loc) ||
        pd_op_set_attr_string(pool, "pooltype", reverse ? "FIRST" : "LAST")) {
      c->oom |= pool == NULL;
      return false;
    }
    value *last = pd_cmp_op_finish(c, pool, pd_cmp_op_out(c, pool, "Out", mems[i].name));
    if (last->k != V_TENSOR) return false;
    pd_cmp_assign_name(c, mems[i].name, last, mems[i].loc, false);
  }
  return true;
}

static bool compile_while(C *c, const pd_ast_node *s) {
  symtab *saved = c->scope;
  const char **names = NULL;
  int nnames = 0, capnames = 0;
  collect_assigned(c, s->while_.body, &names, &nnames, &capnames);
  /* Loop-carried names get a fresh var each, so that the values bound to other names before the
   * loop are not changed by it. */
  const char **carried = pd_cmp_calloc(c, sizeof *carried * (size_t)(nnames ? nnames : 1));
  pd_var_desc **cvars = pd_cmp_calloc(c, sizeof *cvars * (size_t)(nnames ? nnames : 1));
  int ncarried = 0;
  if (!carried || !cvars) return false;
  for (int i = 0; i < nnames; i++) {
    binding *b = pd_cmp_lookup(saved, names[i], NULL);
    if (!b || b->v->k == V_UNDEF) continue;
    if (b->v->k != V_TENSOR) {
      pd_cmp_error(c, s->loc,
                   "'%s' is written in the loop, so it is loop-carried and must be a tensor "
                   "(it is %s)",
                   names[i], pd_cmp_vkind_phrase(b->v));
      return false;
    }
    value *cp = pd_cmp_simple_op(c, "assign", b->v, NULL, s->loc);
    if (cp->k != V_TENSOR) return false;
    carried[ncarried] = names[i];
    cvars[ncarried] = cp->var;
    ncarried++;
    /* the loop reads and writes the fresh var */
    pd_cmp_assign_name(c, names[i], cp, s->loc, false);
  }
  value *cond = pd_cmp_eval(c, s->while_.cond);
  if (cond->k == V_ERROR) return false;
  if (cond->k != V_TENSOR) {
    pd_cmp_error(c, s->while_.cond->loc,
                 "the condition of a while loop must be a bool tensor with one "
                 "element (a compile-time condition would never change), got %s",
                 pd_cmp_vkind_phrase(cond));
    return false;
  }
  pd_var_desc *cv = cond->var;
  if (cv->dtype != PD_BOOL || cv->ndims < 0 ||
      (cv->ndims > 0 && !(cv->ndims == 1 && cv->dims[0] == 1))) {
    pd_cmp_error(c, s->while_.cond->loc,
                 "the condition of a while loop must be a bool tensor with one "
                 "element, got %s %s",
                 pd_dtype_name(cv->dtype), pd_cmp_dims_str(c, cv));
    return false;
  }
  cflow *f = cf_open(c, CF_WHILE, SC_LOOP);
  if (!f) return false;
  f->cond = cv;
  symtab *ls = c->scope;
  pd_cmp_compile_block(c, s->while_.body);
  /* Write each carried name's new value back into its loop var; then the condition. */
  bool ok = true;
  for (int i = 0; i < ncarried && ok; i++) {
    binding *b = pd_cmp_lookup_local(ls, carried[i]);
    if (!b) continue;
    if (b->v->k != V_TENSOR) {
      ok = false;
      if (b->v->k != V_ERROR)
        pd_cmp_error(c, b->loc, "'%s' must stay a tensor in the loop", carried[i]);
      break;
    }
    pd_op_desc *op = pd_cmp_op_new(c, "assign", b->loc);
    const char *dn = cvars[i]->name;
    if (!op || !pd_cmp_op_in(c, op, "X", b->v, b->loc) || pd_op_set_output(op, "Out", 1, &dn)) {
      ok = false;
      break;
    }
    ok = pd_cmp_op_finish(c, op, cvars[i])->k == V_TENSOR;
  }
  if (ok) {
    value *nc = pd_cmp_eval(c, s->while_.cond);
    pd_op_desc *op = nc->k == V_TENSOR ? pd_cmp_op_new(c, "assign", s->while_.cond->loc) : NULL;
    const char *dn = cv->name;
    ok = op && pd_cmp_op_in(c, op, "X", nc, s->while_.cond->loc) &&
         !pd_op_set_output(op, "Out", 1, &dn) && pd_cmp_op_finish(c, op, cv)->k == V_TENSOR;
  }
  cf_close(c, f, saved);
  if (!ok) return false;
  pd_op_desc *op = pd_cmp_op_new(c, "while", s->loc);
  pd_var_desc *scopes = pd_cmp_var_new(c, c->block, "while.step_scopes", false);
  int nx;
  const char **xs = read_names(c, f, &nx);
  const char **outn = pd_cmp_calloc(c, sizeof *outn * (size_t)(ncarried + 1));
  if (!op || !scopes || !xs || !outn) return false;
  scopes->type = PD_VAR_STEP_SCOPES;
  for (int i = 0; i < ncarried; i++) outn[i] = cvars[i]->name;
  outn[ncarried] = cv->name;
  const char *cn = cv->name, *sn = scopes->name;
  if (pd_op_set_input(op, "X", nx, xs) || pd_op_set_input(op, "Condition", 1, &cn) ||
      pd_op_set_output(op, "Out", ncarried + 1, outn) ||
      pd_op_set_output(op, "StepScopes", 1, &sn) ||
      pd_op_set_attr_block(op, "sub_block", f->block->idx)) {
    c->oom = true;
    return false;
  }
  return pd_cmp_op_finish(c, op, scopes)->k != V_ERROR;
}

bool pd_cmp_compile_op_body(C *c, const pd_ast_node *body, int *idx) {
  symtab *saved = c->scope;
  int errors = c->diags->nerrors;
  cflow *f = cf_open(c, CF_OP, SC_BRANCH);
  if (!f) return false;
  *idx = f->block->idx;
  pd_cmp_compile_block(c, body);
  cf_close(c, f, saved);
  return c->diags->nerrors == errors && !c->oom;
}

/* ------------------------------------------------------------------------------------------ */
/* Statements.                                                                                 */

static void compile_assign(C *c, const pd_ast_node *s, bool is_let) {
  value *v = pd_cmp_eval(c, s->assign.value);
  size_t nt = s->assign.targets.len;
  if (nt == 1) {
    pd_cmp_assign_name(c, s->assign.targets.items[0]->name.id, v, s->assign.targets.items[0]->loc,
                       is_let);
    return;
  }
  if (v->k != V_ERROR && (v->k != V_LIST || (size_t)v->list.n != nt)) {
    pd_cmp_error(c, s->assign.value->loc, "cannot unpack %s into %zu names%s",
                 pd_cmp_vkind_phrase(v), nt,
                 v->k == V_LIST ? pd_cmp_fmt(c, " (it has %d items)", v->list.n) : "");
    v = VERR;
  }
  for (size_t i = 0; i < nt; i++)
    pd_cmp_assign_name(c, s->assign.targets.items[i]->name.id,
                       v->k == V_LIST ? v->list.items[i] : VERR, s->assign.targets.items[i]->loc,
                       is_let);
}

/* Is the var `name` written by an op of block b, and only by plain ops (none that runs a block:
 * a loop's stacked outputs are named as the vars of its step block, so they keep their name)? */
static bool written_by_plain_ops(const pd_block *b, const char *name) {
  bool written = false;
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    for (int j = 0; j < op->noutputs; j++)
      for (int k = 0; k < op->outputs[j].nargs; k++) {
        if (strcmp(op->outputs[j].args[k], name) != 0) continue;
        if (pd_op_attr(op, "sub_block")) return false;
        written = true;
      }
  }
  return written;
}

/* Has an earlier `emit` of this loop (its bindings "@emit.NAME") emitted the var? */
static bool emitted_var(const symtab *loop, const pd_var_desc *v) {
  for (const binding *b = loop->first; b; b = b->next)
    if (strncmp(b->name, "@emit.", 6) == 0 && b->v->k == V_TENSOR && b->v->var == v) return true;
  return false;
}

/* Does block `in` read the var `name` of block b: is it b, or inside b with no var of that name
 * of its own in the blocks between (a loop's step block has vars named as the loop's inputs)? */
static bool sees_var_of(const pd_program *p, const pd_block *in, const pd_block *b,
                        const char *name) {
  for (; in && in != b; in = in->parent_idx >= 0 ? p->blocks[in->parent_idx] : NULL)
    if (pd_block_find_var_local(in, name)) return false;
  return in == b;
}

/* Name var v of the step block b after the output it is emitted as (`hint`, or hint.N when
 * taken): the stacked sequence is a var of the enclosing block under the same name, so listings,
 * fetches and prunes find `hs`, not `tanh.tmp_0`. The ops of b and of the blocks inside it that
 * read v are updated. */
static void rename_step_var(C *c, pd_block *b, pd_var_desc *v, const char *hint) {
  const char *name = pd_cmp_name_taken(c, hint) ? pd_cmp_suffixed_name(c, hint) : hint;
  char *old = pd_strdup(v->name);
  pd_program *p = c->unit->main;
  bool *sees = pd_calloc((size_t)p->nblocks, sizeof *sees);
  if (!old || !sees) {
    pd_free(old);
    pd_free(sees);
    c->oom = true;
    return;
  }
  for (int i = 0; i < p->nblocks; i++) sees[i] = sees_var_of(p, p->blocks[i], b, old);
  if (pd_block_rename_var(b, v, name)) {
    pd_free(old);
    pd_free(sees);
    c->oom = true;
    return;
  }
  for (int i = 0; i < p->nblocks; i++) {
    if (!sees[i]) continue;
    for (int j = 0; j < p->blocks[i]->nops; j++) {
      pd_op_desc *op = p->blocks[i]->ops[j];
      for (int side = 0; side < 2; side++) {
        pd_slot *slots = side ? op->outputs : op->inputs;
        int ns = side ? op->noutputs : op->ninputs;
        for (int si = 0; si < ns; si++)
          for (int k = 0; k < slots[si].nargs; k++) {
            if (strcmp(slots[si].args[k], old) != 0) continue;
            char *dup = pd_strdup(name);
            if (!dup) {
              c->oom = true;
              continue;
            }
            pd_free(slots[si].args[k]);
            slots[si].args[k] = dup;
          }
      }
    }
  }
  pd_free(old);
  pd_free(sees);
}

static void compile_emit(C *c, const pd_ast_node *s) {
  symtab *loop = NULL;
  for (symtab *t = c->scope; t; t = t->parent) {
    if (t->kind == SC_FUNC) break;
    if (t->kind == SC_BRANCH) {
      pd_cmp_error(c, s->loc,
                   "'emit' inside a tensor if: assign a name in both branches and emit it "
                   "after the if");
      return;
    }
    if (t->kind == SC_LOOP) {
      loop = t;
      break;
    }
  }
  if (!loop || !loop->cf || loop->cf->kind != CF_FOR) {
    pd_cmp_error(c, s->loc, "'emit' is only allowed in the body of a for loop");
    return;
  }
  for (size_t i = 0; i < s->emit.outputs.len; i++) {
    const pd_ast_node *o = s->emit.outputs.items[i];
    const char *key = pd_cmp_fmt(c, "@emit.%s", o->binding.name);
    if (pd_cmp_lookup_local(loop, key)) {
      pd_cmp_error(c, o->loc, "'%s' is emitted twice in this loop", o->binding.name);
      continue;
    }
    value *v = pd_cmp_eval(c, o->binding.value);
    if (v->k == V_ERROR) continue;
    if (v->k != V_TENSOR) {
      pd_cmp_error(c, o->binding.value->loc, "emit needs a tensor, got %s", pd_cmp_vkind_phrase(v));
      continue;
    }
    /* A value an op of the step block computed is stacked as it is (compile_for names the output
     * after it); anything else (a memory's value from the step before, an outer var, the step
     * input) is copied into a var of the step block named after the output first. */
    if (written_by_plain_ops(loop->cf->block, v->var->name)) {
      if (!emitted_var(loop, v->var)) rename_step_var(c, loop->cf->block, v->var, o->binding.name);
      pd_cmp_bind_local(c, loop, key, v, o->loc);
      continue;
    }
    pd_op_desc *op = pd_cmp_op_new(c, "assign", o->loc);
    pd_var_desc *dst = pd_cmp_var_new(c, loop->cf->block, o->binding.name, true);
    const char *dn = dst ? dst->name : NULL;
    if (!op || !dst || !pd_cmp_op_in(c, op, "X", v, o->loc) ||
        pd_op_set_output(op, "Out", 1, &dn)) {
      c->oom |= !op || !dst;
      continue;
    }
    value *r = pd_cmp_op_finish(c, op, dst);
    if (r->k == V_TENSOR) pd_cmp_bind_local(c, loop, key, r, o->loc);
  }
}

static void compile_return(C *c, const pd_ast_node *s) {
  if (!c->call) {
    pd_cmp_error(c, s->loc, "'return' outside a function");
    return;
  }
  if (c->cf && c->scope->kind != SC_FUNC) {
    for (symtab *t = c->scope; t && t->kind != SC_FUNC; t = t->parent)
      if (t->kind == SC_BRANCH || t->kind == SC_LOOP) {
        pd_cmp_error(c, s->loc,
                     "'return' inside a tensor if or a loop: the block runs on its own rows "
                     "or steps, so it cannot return from the function; assign a name instead");
        return;
      }
  }
  size_t n = s->return_.values.len;
  value *v = VNONE;
  if (n == 1) {
    v = pd_cmp_eval(c, s->return_.values.items[0]);
  } else if (n > 1) {
    v = pd_cmp_vnew(c, V_LIST);
    if (v == VERR) return;
    v->list.n = (int)n;
    v->list.items = pd_cmp_calloc(c, sizeof(value *) * n);
    if (!v->list.items) return;
    for (size_t i = 0; i < n; i++) v->list.items[i] = pd_cmp_eval(c, s->return_.values.items[i]);
  }
  c->call->ret = v;
  c->call->returned = true;
}

/* After a block failed to compile, the names it would have defined read as errors (silently),
 * so that one mistake is not reported again at every later use. */
static void quiet_names(C *c, const pd_ast_node *s) {
  const char **names = NULL;
  int n = 0, cap = 0;
  collect_assigned(c, s, &names, &n, &cap);
  if (s->kind == PD_AST_FOR) {
    for (size_t i = 0; i < s->for_.body->block.stmts.len; i++) {
      const pd_ast_node *st = s->for_.body->block.stmts.items[i];
      if (st->kind == PD_AST_EMIT)
        for (size_t k = 0; k < st->emit.outputs.len; k++)
          pd_cmp_push_name(c, &names, &n, &cap, st->emit.outputs.items[k]->binding.name);
    }
  }
  for (int i = 0; i < n; i++) {
    binding *b = pd_cmp_lookup(c->scope, names[i], NULL);
    if (!b) pd_cmp_bind_local(c, c->scope, names[i], VERR, s->loc);
    else if (b->v->k == V_UNDEF) b->v = VERR;
  }
}

static void compile_stmt(C *c, const pd_ast_node *s) {
  c->work++;
  switch (s->kind) {
  case PD_AST_ASSIGN: compile_assign(c, s, false); break;
  case PD_AST_LET: compile_assign(c, s, true); break;
  case PD_AST_EXPR_STMT: {
    value *v = pd_cmp_eval(c, s->expr_stmt.expr);
    (void)v;
    break;
  }
  case PD_AST_IF:
  case PD_AST_FOR:
  case PD_AST_WHILE: {
    bool ok = s->kind == PD_AST_IF    ? compile_if_chain(c, s, 0)
            : s->kind == PD_AST_FOR   ? compile_for(c, s)
                                      : compile_while(c, s);
    if (!ok) quiet_names(c, s);
    break;
  }
  case PD_AST_DEF: {
    value *f = pd_cmp_vnew(c, V_FUNC);
    if (f == VERR) return;
    f->fn.def = s;
    f->fn.env = c->scope;
    const char *name = s->def.name->name.id;
    if (pd_cmp_lookup_local(c->scope, name) &&
        pd_cmp_lookup_local(c->scope, name)->v->k == V_FUNC) {
      pd_cmp_error(c, s->def.name->loc, "function '%s' is already defined in this block", name);
      return;
    }
    pd_cmp_bind_local(c, c->scope, name, f, s->def.name->loc);
    break;
  }
  case PD_AST_RETURN: compile_return(c, s); break;
  case PD_AST_EMIT: compile_emit(c, s); break;
  case PD_AST_IMPORT: pd_cmp_compile_import(c, s); break;
  case PD_AST_BLOCK: pd_cmp_compile_block(c, s); break;
  default: pd_cmp_error(c, s->loc, "%s cannot appear here", pd_ast_kind_phrase(s->kind)); break;
  }
}

void pd_cmp_compile_block(C *c, const pd_ast_node *block) {
  for (size_t i = 0; i < block->block.stmts.len && !c->oom && !c->over_budget; i++) {
    if (c->call && c->call->returned) break;
    if (c->diags->nerrors > c->diags->max_errors) break;
    compile_stmt(c, block->block.stmts.items[i]);
  }
}
