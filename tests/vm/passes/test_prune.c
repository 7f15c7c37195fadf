/* test_prune.c -- unit tests of vm/passes/prune.c: hand-built programs with nested blocks (a conditional
 * block reading an outer var it does not list, a while loop with loop-carried vars and a value
 * read before it is written, an op with a BLOCKS attribute, the gradient block of model_nested),
 * programs compiled from .pd source (examples/ifelse.pd, rnn.pd, train.pd and a while loop), the
 * errors, and a failure of every allocation in turn. The expected results are written out by
 * hand from the rules in vm/passes/prune.h. */
#include "config.h"
#include "vm/passes/prune.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "tests/vm/ir/models.h"
#include "tests/tap.h"

#ifndef PD_TOP_SRCDIR
#define PD_TOP_SRCDIR "."
#endif

/* ---- Helpers ---- */

static char *listing(const pd_program *p) {
  pd_buf b;
  pd_buf_init(&b);
  pd_program_dump(p, &b);
  return b.oom ? (pd_buf_free(&b), NULL) : pd_buf_take(&b);
}

/* The op types of a block, "a b c" ("-" for none); a static buffer, overwritten by each call. */
static const char *ops_of(const pd_program *p, int bi) {
  static char buf[4096];
  buf[0] = '\0';
  const pd_block *b = pd_program_block(p, bi);
  if (!b) return "(no block)";
  for (int i = 0; i < b->nops; i++) {
    if (i) strncat(buf, " ", sizeof buf - strlen(buf) - 1);
    strncat(buf, b->ops[i]->type, sizeof buf - strlen(buf) - 1);
  }
  return buf[0] ? buf : "-";
}

/* The var names of a block, "a b c" ("-" for none). */
static const char *vars_of(const pd_program *p, int bi) {
  static char buf[4096];
  buf[0] = '\0';
  const pd_block *b = pd_program_block(p, bi);
  if (!b) return "(no block)";
  for (int i = 0; i < b->nvars; i++) {
    if (i) strncat(buf, " ", sizeof buf - strlen(buf) - 1);
    strncat(buf, b->vars[i]->name, sizeof buf - strlen(buf) - 1);
  }
  return buf[0] ? buf : "-";
}

/* The first output of op i of block bi (NULL if none), to tell ops of one type apart. */
static const char *out_of(const pd_program *p, int bi, int i) {
  const pd_block *b = pd_program_block(p, bi);
  if (!b || i < 0 || i >= b->nops) return NULL;
  const pd_op_desc *op = b->ops[i];
  return op->noutputs > 0 && op->outputs[0].nargs > 0 ? op->outputs[0].args[0] : NULL;
}

/* The op types of block bi of p without op `skip`, into buf (as ops_of writes them). */
static const char *ops_except(const pd_program *p, int bi, int skip, char *buf, size_t n) {
  buf[0] = '\0';
  const pd_block *b = pd_program_block(p, bi);
  for (int i = 0; b && i < b->nops; i++) {
    if (i == skip) continue;
    if (buf[0]) strncat(buf, " ", n - strlen(buf) - 1);
    strncat(buf, b->ops[i]->type, n - strlen(buf) - 1);
  }
  return buf[0] ? buf : "-";
}

/* The index of the op of block bi that writes var `name` (the last one), or -1. */
static int writer_of(const pd_program *p, int bi, const char *name) {
  const pd_block *b = pd_program_block(p, bi);
  int w = -1;
  for (int i = 0; b && i < b->nops; i++)
    for (int k = 0; k < b->ops[i]->noutputs; k++)
      for (int a = 0; a < b->ops[i]->outputs[k].nargs; a++)
        if (strcmp(b->ops[i]->outputs[k].args[a], name) == 0) w = i;
  return w;
}

static int sub_block_of(const pd_program *p, int bi, int i) {
  const pd_block *b = pd_program_block(p, bi);
  if (!b || i < 0 || i >= b->nops) return -2;
  const pd_attr *a = pd_op_attr(b->ops[i], "sub_block");
  return a && a->type == PD_ATTR_BLOCK ? a->v.i : -1;
}

/* Prune p to the comma-separated names; NULL (and a failed test) on error. */
static pd_program *prune(const pd_program *p, const char *names) {
  char buf[512];
  const char *t[16];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", names);
  for (char *s = strtok(buf, ","); s && n < 16; s = strtok(NULL, ",")) t[n++] = s;
  pd_program *q = NULL;
  pd_error err = {0};
  pd_status st = pd_program_prune(p, n, t, &q, &err);
  if (st) {
    ok(0, "prune to %s: %s", names, err.msg ? err.msg : pd_status_str(st));
    pd_error_clear(&err);
    return NULL;
  }
  return q;
}

/* The result is a valid program with the same blocks and parents, and pruning it again to the
 * same targets changes nothing. */
static void check_sound(const pd_program *p, const pd_program *q, const char *names) {
  pd_error err = {0};
  ok(pd_program_validate(q, &err) == PD_OK, "%s: the pruned program is valid%s%s", names,
     err.msg ? ": " : "", err.msg ? err.msg : "");
  pd_error_clear(&err);
  bool same_tree = p->nblocks == q->nblocks;
  for (int i = 0; same_tree && i < q->nblocks; i++)
    same_tree = q->blocks[i]->parent_idx == p->blocks[i]->parent_idx &&
                q->blocks[i]->forward_block_idx == p->blocks[i]->forward_block_idx;
  ok(same_tree, "%s: every block stays at its index, with its parent", names);
  pd_program *r = prune(q, names);
  char *lq = listing(q), *lr = r ? listing(r) : NULL;
  ok(lq && lr && strcmp(lq, lr) == 0, "%s: pruning again changes nothing", names);
  free(lq);
  free(lr);
  pd_program_free(r);
}

/* ---- A hand-built program: a conditional block and a while loop in the global block ----
 *
 *   block 0: x, c15, w (persistable), y, cond, junk, o1, o2, o3, scope_if, i, n, lc, acc, steps
 *     0 fill_constant          -> y
 *     1 fill_constant          -> c15
 *     2 greater_than x, c15    -> cond
 *     3 scale x                -> junk          (feeds nothing)
 *     4 conditional_block Cond=cond Input=x -> Out=o1 Scope=scope_if, block 1
 *       (block 1 reads y too, which the op does not list)
 *     5 fill_constant          -> i
 *     6 fill_constant          -> n
 *     7 less_than i, n         -> lc
 *     8 while X=i,n,acc Condition=lc -> Out=i,lc,acc StepScopes=steps, block 2
 *     9 mul x, w               -> o3            (feeds nothing but o3)
 *    10 scale o1               -> o2
 *   block 1 (parent 0): d, dead
 *     0 elementwise_add x, y   -> d
 *     1 assign d               -> o1
 *     2 scale y                -> dead          (feeds nothing)
 *   block 2 (parent 0): step, waste
 *     0 elementwise_add acc, step -> acc        (reads step before op 3 writes it)
 *     1 increment i            -> i
 *     2 less_than i, n         -> lc
 *     3 fill_constant          -> step
 *     4 scale i                -> waste         (feeds nothing) */

static pd_op_desc *add_op(pd_block *b, const char *type, const char *in_x, const char *in_y,
                          const char *out) {
  pd_op_desc *o = pd_block_add_op(b, type, -1);
  if (!o) return NULL;
  if ((in_x && pd_op_set_input(o, "X", 1, &in_x)) || (in_y && pd_op_set_input(o, "Y", 1, &in_y)) ||
      (out && pd_op_set_output(o, "Out", 1, &out)))
    return NULL;
  return o;
}

static int vars(pd_block *b, const char *names) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", names);
  for (char *s = strtok(buf, " "); s; s = strtok(NULL, " "))
    if (!pd_block_var(b, s)) return -1;
  return 0;
}

static int slot(pd_op_desc *o, bool input, const char *param, const char *names) {
  char buf[256];
  const char *a[8];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", names);
  for (char *s = strtok(buf, ","); s && n < 8; s = strtok(NULL, ",")) a[n++] = s;
  return input ? pd_op_set_input(o, param, n, a) : pd_op_set_output(o, param, n, a);
}

static pd_program *model_loops(void) {
  pd_program *p = pd_program_new();
  pd_block *b0 = p ? p->blocks[0] : NULL;
  pd_block *b1 = p ? pd_program_add_block(p, 0) : NULL;
  pd_block *b2 = b1 ? pd_program_add_block(p, 0) : NULL;
  pd_op_desc *o;
  int bad = !b2 ||
            vars(b0, "x c15 w y cond junk o1 o2 o3 scope_if i n lc acc steps") ||
            vars(b1, "d dead") || vars(b2, "step waste") ||
            !add_op(b0, "fill_constant", NULL, NULL, "y") ||
            !add_op(b0, "fill_constant", NULL, NULL, "c15") ||
            !add_op(b0, "greater_than", "x", "c15", "cond") ||
            !add_op(b0, "scale", "x", NULL, "junk") ||
            !(o = add_op(b0, "conditional_block", NULL, NULL, NULL)) ||
            slot(o, true, "Cond", "cond") || slot(o, true, "Input", "x") ||
            slot(o, false, "Out", "o1") || slot(o, false, "Scope", "scope_if") ||
            pd_op_set_attr_block(o, "sub_block", 1) ||
            !add_op(b0, "fill_constant", NULL, NULL, "i") ||
            !add_op(b0, "fill_constant", NULL, NULL, "n") ||
            !add_op(b0, "less_than", "i", "n", "lc") ||
            !(o = add_op(b0, "while", NULL, NULL, NULL)) || slot(o, true, "X", "i,n,acc") ||
            slot(o, true, "Condition", "lc") || slot(o, false, "Out", "i,lc,acc") ||
            slot(o, false, "StepScopes", "steps") || pd_op_set_attr_block(o, "sub_block", 2) ||
            !add_op(b0, "mul", "x", "w", "o3") ||
            !add_op(b0, "scale", "o1", NULL, "o2") ||
            !add_op(b1, "elementwise_add", "x", "y", "d") ||
            !add_op(b1, "assign", "d", NULL, "o1") ||
            !add_op(b1, "scale", "y", NULL, "dead") ||
            !add_op(b2, "elementwise_add", "acc", "step", "acc") ||
            !add_op(b2, "increment", "i", NULL, "i") ||
            !add_op(b2, "less_than", "i", "n", "lc") ||
            !add_op(b2, "fill_constant", NULL, NULL, "step") ||
            !add_op(b2, "scale", "i", NULL, "waste");
  if (bad) {
    pd_program_free(p);
    return NULL;
  }
  pd_block_find_var_local(b0, "w")->persistable = true;
  pd_block_find_var_local(b0, "scope_if")->type = PD_VAR_STEP_SCOPES;
  pd_block_find_var_local(b0, "steps")->type = PD_VAR_STEP_SCOPES;
  return p;
}

static void test_conditional(const pd_program *p) {
  pd_program *q = prune(p, "o2");
  if (!q) return;
  is_str(ops_of(q, 0), "fill_constant fill_constant greater_than conditional_block scale",
         "o2: the ops that compute it, the conditional block whole");
  is_str(out_of(q, 0, 0), "y",
         "y is kept: block 1 reads it although the conditional_block does not list it");
  is_str(out_of(q, 0, 4), "o2", "the last op computes o2");
  is_int(sub_block_of(q, 0, 3), 1, "the conditional_block still points at block 1");
  is_str(ops_of(q, 1), "elementwise_add assign",
         "block 1 loses the op whose output nobody reads");
  is_str(vars_of(q, 1), "d dead", "block 1 keeps its vars");
  is_str(ops_of(q, 2), "-", "the while loop's block stays, empty");
  is_str(vars_of(q, 2), "-", "and without vars");
  is_str(vars_of(q, 0), "x c15 y cond o1 o2 scope_if",
         "block 0 keeps the vars kept ops name (w, junk, the loop's vars go)");
  check_sound(p, q, "o2");
  pd_program_free(q);
}

static void test_while(const pd_program *p) {
  pd_program *q = prune(p, "acc");
  if (!q) return;
  is_str(ops_of(q, 0), "fill_constant fill_constant less_than while",
         "acc: the loop and what initialises its condition");
  is_str(out_of(q, 0, 0), "i", "i is initialised");
  is_str(ops_of(q, 2), "elementwise_add increment less_than fill_constant",
         "the body keeps the loop-carried updates, the condition and the value read before it "
         "is written (step); only the dead scale goes");
  is_str(vars_of(q, 2), "step waste", "the body keeps its vars");
  is_str(ops_of(q, 1), "-", "the conditional block's block is emptied");
  is_str(vars_of(q, 0), "i n lc acc steps", "block 0: the loop's vars only");
  check_sound(p, q, "acc");
  pd_program_free(q);

  q = prune(p, "lc");
  if (!q) return;
  is_str(ops_of(q, 0), "fill_constant fill_constant less_than while",
         "lc (an output of the while): the same loop");
  is_str(ops_of(q, 2), "elementwise_add increment less_than fill_constant",
         "every write to an outer var of the body is kept");
  pd_program_free(q);

  q = prune(p, "n");
  if (!q) return;
  is_str(ops_of(q, 0), "fill_constant", "n: one op, which the loop does not write");
  is_str(vars_of(q, 0), "n", "and one var");
  pd_program_free(q);
}

static void test_two_targets(const pd_program *p) {
  pd_program *q = prune(p, "o2,acc");
  if (!q) return;
  is_str(ops_of(q, 0),
         "fill_constant fill_constant greater_than conditional_block fill_constant "
         "fill_constant less_than while scale",
         "o2 and acc: the union, in program order (junk and mul go)");
  is_str(ops_of(q, 1), "elementwise_add assign", "block 1 pruned");
  is_str(ops_of(q, 2), "elementwise_add increment less_than fill_constant", "block 2 pruned");
  is_int(sub_block_of(q, 0, 3), 1, "sub-block indices unchanged (1)");
  is_int(sub_block_of(q, 0, 7), 2, "sub-block indices unchanged (2)");
  check_sound(p, q, "o2,acc");
  pd_program_free(q);

  q = prune(p, "o3,junk");
  if (!q) return;
  is_str(ops_of(q, 0), "scale mul", "o3 and junk: two independent ops");
  is_str(vars_of(q, 0), "x w junk o3", "the persistable w stays: mul reads it");
  ok(q->blocks[0]->nvars == 4 && pd_block_find_var_local(q->blocks[0], "w")->persistable,
     "w is still persistable");
  is_str(ops_of(q, 1), "-", "block 1 emptied");
  is_str(ops_of(q, 2), "-", "block 2 emptied");
  check_sound(p, q, "o3,junk");
  pd_program_free(q);

  q = prune(p, "x");
  if (!q) return;
  is_str(ops_of(q, 0), "-", "x (fed, no op writes it): no ops");
  is_str(vars_of(q, 0), "x", "the target var stays");
  pd_program_free(q);
}

static void test_input_unchanged(const pd_program *p) {
  char *before = listing(p);
  pd_program *q = prune(p, "o2");
  char *after = listing(p);
  ok(before && after && strcmp(before, after) == 0, "pruning leaves its input unchanged");
  free(before);
  free(after);
  pd_program_free(q);
}

/* ---- model_nested: a while inside the 'if' branch, and the branch's gradient block ---- */

static void test_nested(void) {
  pd_program *p = model_nested();
  ok(p != NULL, "model_nested builds");
  if (!p) return;
  pd_program *q = prune(p, "o1");
  if (q) {
    is_str(ops_of(q, 0),
           "feed feed fill_constant greater_than conditional_block logical_not conditional_block",
           "o1: both branches (fetch and the gradient op go)");
    is_str(ops_of(q, 1), "elementwise_add assign softmax",
           "the 'if' branch keeps what computes o1 and o2 (the op's outputs), drops the while "
           "that rewrites d after its last use");
    is_str(ops_of(q, 3), "-", "so the while body, nested in block 1, is emptied");
    is_str(ops_of(q, 2), "mul assign scale assign", "the 'else' branch is kept whole");
    is_str(ops_of(q, 4), "-", "the gradient block is emptied");
    is_str(vars_of(q, 4), "-", "with its vars");
    is_str(vars_of(q, 0), "feed x y z c15 cond not_cond fc_0.w_0 o1 o2 scope_if scope_else",
           "block 0 drops fetch, words and the gradients");
    check_sound(p, q, "o1");
    pd_program_free(q);
  }
  q = prune(p, "x@GRAD");
  if (q) {
    is_str(ops_of(q, 0),
           "feed feed fill_constant greater_than conditional_block logical_not conditional_block "
           "conditional_block_grad",
           "x@GRAD: the gradient op and the forward ops it reads (not fetch)");
    is_str(ops_of(q, 4), "softmax_grad elementwise_add_grad", "the gradient block, both ops");
    is_str(ops_of(q, 1), "elementwise_add assign softmax while",
           "its forward block is kept whole, the while too");
    is_str(ops_of(q, 3), "scale assign increment less_than", "and the while body");
    check_sound(p, q, "x@GRAD");
    pd_program_free(q);
  }
  q = prune(p, "fetch");
  if (q) {
    is_str(ops_of(q, 0),
           "feed feed fill_constant greater_than conditional_block logical_not conditional_block "
           "fetch",
           "fetch: everything but the gradient op");
    pd_program_free(q);
  }
  pd_program_free(p);
}

/* An op with a BLOCKS attribute (two sub-blocks): both are followed. */
static void test_blocks_attr(void) {
  pd_program *p = pd_program_new();
  pd_block *b0 = p ? p->blocks[0] : NULL;
  pd_block *b1 = p ? pd_program_add_block(p, 0) : NULL;
  pd_block *b2 = b1 ? pd_program_add_block(p, 0) : NULL;
  pd_op_desc *o = NULL;
  const int32_t subs[] = {1, 2};
  int bad = !b2 || vars(b0, "a b out other") || vars(b1, "t") || vars(b2, "u") ||
            !add_op(b0, "fill_constant", NULL, NULL, "a") ||
            !add_op(b0, "fill_constant", NULL, NULL, "b") ||
            !add_op(b0, "fill_constant", NULL, NULL, "other") ||
            !(o = add_op(b0, "select", NULL, NULL, "out")) ||
            pd_op_set_attr_blocks(o, "sub_blocks", 2, subs) ||
            !add_op(b1, "scale", "a", NULL, "t") || !add_op(b1, "assign", "t", NULL, "out") ||
            !add_op(b2, "scale", "b", NULL, "u") || !add_op(b2, "assign", "u", NULL, "out") ||
            !add_op(b2, "scale", "other", NULL, "u");
  ok(!bad, "a program with a BLOCKS attribute builds");
  if (bad) {
    pd_program_free(p);
    return;
  }
  pd_program *q = prune(p, "out");
  if (q) {
    is_str(ops_of(q, 0), "fill_constant fill_constant fill_constant select",
           "out: a and b, read in the two sub-blocks, are computed; so is other (in a loop-like "
           "block, the later write to u is kept)");
    is_str(ops_of(q, 1), "scale assign", "sub-block 1");
    is_str(ops_of(q, 2), "scale assign scale", "sub-block 2");
    check_sound(p, q, "out");
    pd_program_free(q);
  }
  pd_program_free(p);
}

/* ---- Errors ---- */

static void test_errors(const pd_program *p) {
  pd_program *q = (pd_program *)1;
  pd_error err = {0};
  const char *nope[] = {"o2", "nope"};
  is_int(pd_program_prune(p, 2, nope, &q, &err), PD_ENOTFOUND, "a missing target: PD_ENOTFOUND");
  is_str(err.msg, "prune target 'nope' is not a var of the program", "and says which");
  ok(q == NULL, "*out is NULL on failure");
  pd_error_clear(&err);

  const char *local[] = {"d"};
  q = (pd_program *)1;
  is_int(pd_program_prune(p, 1, local, &q, &err), PD_ENOTFOUND,
         "a var of a sub-block: PD_ENOTFOUND");
  is_str(err.msg, "prune target 'd' is not a var of the global block (it is local to block 1)",
         "and says where it lives");
  ok(q == NULL, "*out is NULL");
  pd_error_clear(&err);

  is_int(pd_program_prune(p, 0, NULL, &q, &err), PD_EINVAL, "no targets: PD_EINVAL");
  is_str(err.msg, "prune needs at least one target var", "with a message");
  pd_error_clear(&err);
  const char *empty[] = {""};
  is_int(pd_program_prune(p, 1, empty, &q, NULL), PD_EINVAL, "an empty name: PD_EINVAL");

  /* An invalid program: an op naming a var nobody declares. */
  pd_program *bad = pd_program_clone(p);
  if (bad && add_op(bad->blocks[0], "scale", "ghost", NULL, "o2")) {
    const char *t[] = {"o2"};
    q = (pd_program *)1;
    is_int(pd_program_prune(bad, 1, t, &q, &err), PD_EFORMAT, "an invalid program: PD_EFORMAT");
    ok(err.msg && strstr(err.msg, "'ghost'"), "with the validator's message: %s",
       err.msg ? err.msg : "(none)");
    ok(q == NULL, "and no result");
    pd_error_clear(&err);
  }
  pd_program_free(bad);
}

/* ---- Programs compiled from .pd source ---- */

/* A compiled script: the unit borrows its source, so both are kept and freed together. */
typedef struct compiled {
  pd_source *src;
  pd_unit *u;
} compiled;

static void compiled_free(compiled *c) {
  pd_unit_free(c->u);
  pd_source_free(c->src);
  *c = (compiled){0};
}

static compiled compile_src(pd_source *src, const char *what) {
  compiled c = {src, NULL};
  pd_diags d;
  pd_diags_init(&d, 20);
  pd_status st = pd_compile(src, NULL, &d, &c.u);
  ok(st == PD_OK, "%s compiles", what);
  if (st) {
    printf("# %s", d.text.data ? d.text.data : pd_status_str(st));
    compiled_free(&c);
  }
  pd_diags_free(&d);
  return c;
}

static compiled compile_text(const char *name, const char *text) {
  pd_source *src = NULL;
  if (pd_source_from_string(name, text, strlen(text), &src)) return (compiled){0};
  return compile_src(src, name);
}

static compiled compile_example(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/%s", PD_TOP_SRCDIR, name);
  pd_source *src = NULL;
  pd_error err = {0};
  if (pd_source_open(path, &src, &err)) {
    ok(0, "open %s: %s", path, err.msg ? err.msg : "?");
    pd_error_clear(&err);
    return (compiled){0};
  }
  return compile_src(src, name);
}

/* The compiler's exact lowering may change; these check what Prune must do with it. */
static void test_compiled_ifelse(void) {
  compiled c = compile_example("ifelse.pd");
  if (!c.u) return;
  const pd_program *p = c.u->main;
  /* print(o1, o2) names the merged vars; o2's is the last op's output. */
  const pd_block *b0 = p->blocks[0];
  const char *o2 = b0->nops > 0 ? out_of(p, 0, b0->nops - 1) : NULL;
  ok(o2 && b0->nops > 0 && strcmp(b0->ops[b0->nops - 1]->type, "merge_lod_tensor") == 0 &&
         writer_of(p, 0, "o1") >= 0,
     "ifelse.pd: o1 and o2 are merged at the end of block 0");
  pd_program *q = prune(p, "o1");
  if (q && o2) {
    char want[4096];
    is_str(ops_of(q, 0), ops_except(p, 0, b0->nops - 1, want, sizeof want),
           "ifelse.pd to o1: every op but o2's merge (both branches are kept whole)");
    ok(strstr(ops_of(q, 0), "conditional_block conditional_block") != NULL,
       "both conditional_blocks are there");
    is_int(q->blocks[1]->nops, p->blocks[1]->nops,
           "the true branch keeps all its ops (they compute its outputs)");
    is_int(q->blocks[2]->nops, p->blocks[2]->nops, "and so does the false branch");
    is_int(sub_block_of(q, 0, writer_of(q, 0, "o1.true")), 1, "the true branch is block 1");
    is_int(sub_block_of(q, 0, writer_of(q, 0, "o1.false")), 2, "the false branch is block 2");
    ok(!pd_block_find_var_local(q->blocks[0], o2) &&
           pd_block_find_var_local(q->blocks[0], "fc_0.w_0"),
       "o2's merged var goes; the false branch's parameter stays");
    check_sound(p, q, "o1");
  }
  pd_program_free(q);
  compiled_free(&c);
}

static void test_compiled_rnn(void) {
  compiled c = compile_example("rnn.pd");
  if (!c.u) return;
  const pd_program *p = c.u->main;
  int pool = writer_of(p, 0, "h.tmp_0"), rnn = writer_of(p, 0, "o1");
  ok(pool >= 0 && strcmp(p->blocks[0]->ops[pool]->type, "sequence_pool") == 0 && rnn >= 0 &&
         strcmp(p->blocks[0]->ops[rnn]->type, "recurrent") == 0,
     "rnn.pd: a recurrent op writes o1; a sequence_pool the final h");
  pd_program *q = prune(p, "o1");
  if (q && pool >= 0) {
    char want[4096];
    is_str(ops_of(q, 0), ops_except(p, 0, pool, want, sizeof want),
           "rnn.pd to o1: the recurrent op and its inputs; the final-state pool goes");
    is_str(ops_of(q, 1), "elementwise_mul elementwise_mul elementwise_add sigmoid",
           "the step block keeps every op: they compute the op's outputs and the memory");
    ok(!pd_block_find_var_local(q->blocks[0], "h.tmp_0") &&
           pd_block_find_var_local(q->blocks[0], "W") &&
           pd_block_find_var_local(q->blocks[0], "U"),
       "h.tmp_0 goes, the parameters W and U stay");
    check_sound(p, q, "o1");
  }
  pd_program_free(q);
  compiled_free(&c);
}

static void test_compiled_train(void) {
  compiled c = compile_example("train.pd");
  if (!c.u) return;
  const pd_program *p = c.u->main;
  pd_program *q = prune(p, "cost");
  if (q) {
    is_str(ops_of(q, 0), "mul elementwise_add relu mul elementwise_add softmax_with_cross_entropy "
                         "mean",
           "train.pd to cost: the forward pass, no accuracy");
    bool metric_vars = false;
    for (int i = 0; i < q->blocks[0]->nvars; i++)
      metric_vars |= strncmp(q->blocks[0]->vars[i]->name, "top_k", 5) == 0 ||
                     strncmp(q->blocks[0]->vars[i]->name, "accuracy", 8) == 0;
    ok(!metric_vars && pd_block_find_var_local(q->blocks[0], "cost") &&
           pd_block_find_var_local(q->blocks[0], "fc_1.w_0"),
       "top_k's and accuracy's vars go; cost and the parameters stay");
    check_sound(p, q, "cost");
    pd_program_free(q);
  }
  q = prune(p, "fc_1.elementwise_add.tmp_0");
  if (q) {
    is_str(ops_of(q, 0), "mul elementwise_add relu mul elementwise_add",
           "to the logits: no loss, and label goes");
    ok(!pd_block_find_var_local(q->blocks[0], "label"), "label is not needed");
    pd_program_free(q);
  }
  compiled_free(&c);
}

static void test_compiled_while(void) {
  compiled c = compile_text("loop.pd",
                            "i = var(0)\n"
                            "n = var(10)\n"
                            "s = var(0)\n"
                            "u = var(5)\n"
                            "while (i < n) {\n"
                            "    i = i + 1\n"
                            "    s = s + i\n"
                            "    let junk = s * 2\n"
                            "}\n"
                            "v = u * 3\n");
  if (!c.u) return;
  const pd_program *p = c.u->main;
  int w = -1;
  for (int i = 0; i < p->blocks[0]->nops; i++)
    if (strcmp(p->blocks[0]->ops[i]->type, "while") == 0) w = i;
  const pd_slot *outs = w >= 0 ? pd_op_output(p->blocks[0]->ops[w], "Out") : NULL;
  ok(outs && outs->nargs == 3, "the while op has 3 outputs (i, s, the condition)");
  if (!outs || outs->nargs != 3) {
    compiled_free(&c);
    return;
  }
  pd_program *q = prune(p, outs->args[1]); /* s after the loop */
  if (q) {
    is_str(ops_of(q, 0), "fill_constant fill_constant fill_constant assign assign less_than while",
           "s: its initialisers, the loop, not u nor v");
    is_str(ops_of(q, 1), "scale elementwise_add assign assign less_than assign",
           "the body drops only the op computing junk");
    check_sound(p, q, outs->args[1]);
    pd_program_free(q);
  }
  q = prune(p, "v");
  if (q) {
    is_str(ops_of(q, 0), "fill_constant scale", "v: two ops, no loop");
    is_str(ops_of(q, 1), "-", "the body is emptied");
    pd_program_free(q);
  }
  compiled_free(&c);
}

/* ---- Allocation failures ---- *
 * From the k-th allocation on, every allocation fails (pd_alloc_fail_after); the call must give
 * PD_ENOMEM and no result, and free what it had (ASan checks the leaks). */

static void test_alloc_failures(void) {
  compiled c = compile_example("ifelse.pd");
  pd_program *p = model_nested();
  if (!c.u || !p) {
    compiled_free(&c);
    pd_program_free(p);
    return;
  }
  const char *t1[] = {"o1"}, *t2[] = {"o1", "x@GRAD"};
  const pd_program *progs[] = {c.u->main, p};
  const char *const *targets[] = {t1, t2};
  int ntargets[] = {1, 2};
  int unreported = 0, wrong = 0;
  long most = 0;
  for (int m = 0; m < 2; m++) {
    pd_program *ref = NULL;
    if (pd_program_prune(progs[m], ntargets[m], targets[m], &ref, NULL)) {
      wrong++;
      continue;
    }
    char *lref = listing(ref);
    long k;
    for (k = 1; k < 100000; k++) {
      pd_program *q = (pd_program *)1;
      pd_error err = {0};
      pd_alloc_fail_after(k);
      pd_status st = pd_program_prune(progs[m], ntargets[m], targets[m], &q, &err);
      long used = pd_alloc_fail_after(0);
      if (st == PD_OK) {
        char *lq = listing(q);
        if (!lq || !lref || strcmp(lq, lref) != 0) wrong++;
        free(lq);
        pd_program_free(q);
        if (used < k) break; /* no allocation failed: done */
        unreported++;        /* one failed but the call succeeded */
      } else if (st != PD_ENOMEM || q != NULL) {
        wrong++;
      }
      pd_error_clear(&err);
    }
    if (k - 1 > most) most = k - 1;
    free(lref);
    pd_program_free(ref);
  }
  ok(most > 50, "pruning makes %ld allocations; each was made to fail once", most);
  is_int(unreported, 0, "every failure was reported");
  is_int(wrong, 0, "as PD_ENOMEM with no result; the other runs gave the same program");
  compiled_free(&c);
  pd_program_free(p);
}

int main(void) {
  pd_program *p = model_loops();
  ok(p != NULL && pd_program_validate(p, NULL) == PD_OK, "the loops model builds and is valid");
  if (p) {
    test_conditional(p);
    test_while(p);
    test_two_targets(p);
    test_input_unchanged(p);
    test_errors(p);
  }
  pd_program_free(p);
  test_nested();
  test_blocks_attr();
  test_compiled_ifelse();
  test_compiled_rnn();
  test_compiled_train();
  test_compiled_while();
  test_alloc_failures();
  return tap_done();
}
