/* test_hoist.c -- the loop hoisting pass (vm/passes/hoist.h). Each case is a .pd script with a for-rnn:
 * it is compiled, turned to fp64, pruned to its cost, and hoisted. Checked: which ops left the
 * step block and what the loop then reads (its inputs and parameters); that the program still
 * validates; that the cost equals the cost of the program as it was (the same operations on the
 * same rows); that the gradients of the backward pass built on the hoisted program equal those
 * built on the original one and match central finite differences of the cost (fp64, relative
 * error at most 1e-6), element by element; and, for the ops the pass must leave alone (work on
 * a memory, a non-commutative op with the rows on the right, an op whose output the loop
 * stacks), that nothing moves. Also: the bench model (lookup_table outside the loop), sequences
 * of different lengths, an if inside the loop reading a hoisted value, lookup_table inside the
 * loop, nested loops over sequences of sequences, a program with a backward pass already (left alone), and out-of-memory from every
 * allocation of the pass on.
 * The fusion passes (vm/passes/fuse_rnn.h, then vm/passes/fuse_fc.h) run on each hoisted program too: how
 * many loops became elman_rnn ops, and that the fused program's cost and gradients equal the
 * hoisted one's; test_fuse_fc checks which products and bias adds became fc ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "tests/tap.h"
#include "vm/passes/backward.h"
#include "vm/run/exec.h"
#include "vm/passes/fuse_fc.h"
#include "vm/passes/fuse_rnn.h"
#include "vm/passes/hoist.h"
#include "vm/passes/prune.h"
#include "tests/lang/fp64.h"

typedef struct hcase {
  pd_source *src;
  pd_unit *unit;
  pd_runner *r;
  pd_program *fwd, *hfwd, *bwd, *hbwd;  /* as pruned, hoisted; their backward passes */
  pd_program *ffwd, *fbwd;               /* hoisted and fused; its backward pass */
  pd_exec *fex, *hfex, *bex, *hbex, *ffex, *fbex;
  pd_backward pg, hpg, fpg;
  int moved, fused, fc;  /* fc: products + bias made fc ops (vm/passes/fuse_fc.h) */
  pd_error err;
} hcase;

static void hcase_free(hcase *c) {
  pd_exec_free(c->fex);
  pd_exec_free(c->hfex);
  pd_exec_free(c->bex);
  pd_exec_free(c->hbex);
  pd_exec_free(c->ffex);
  pd_exec_free(c->fbex);
  pd_program_free(c->ffwd);
  pd_program_free(c->fbwd);
  pd_backward_release(&c->fpg);
  pd_program_free(c->fwd);
  pd_program_free(c->hfwd);
  pd_program_free(c->bwd);
  pd_program_free(c->hbwd);
  pd_backward_release(&c->pg);
  pd_backward_release(&c->hpg);
  pd_runner_free(c->r);
  pd_unit_free(c->unit);
  pd_source_free(c->src);
  pd_error_clear(&c->err);
}

static bool setup(hcase *c, const char *name, const char *text) {
  memset(c, 0, sizeof *c);
  const char *cost = "cost";
  pd_status st = fp64_setup(name, text, cost, &c->src, &c->unit, &c->r, &c->fwd, &c->err);
  if (!st && !(c->hfwd = pd_program_clone(c->fwd))) st = PD_ENOMEM;
  if (!st) st = pd_program_hoist(c->hfwd, &c->moved, &c->err);
  if (!st) st = pd_program_validate(c->hfwd, &c->err);
  if (!st && (!(c->bwd = pd_program_clone(c->fwd)) || !(c->hbwd = pd_program_clone(c->hfwd))))
    st = PD_ENOMEM;
  if (!st) st = pd_append_backward(c->bwd, cost, &c->pg, &c->err);
  if (!st) st = pd_append_backward(c->hbwd, cost, &c->hpg, &c->err);
  if (!st) st = pd_program_validate(c->hbwd, &c->err);
  if (!st) st = pd_exec_new(c->fwd, NULL, &c->fex, &c->err);
  if (!st) st = pd_exec_new(c->hfwd, NULL, &c->hfex, &c->err);
  if (!st) st = pd_exec_new(c->bwd, NULL, &c->bex, &c->err);
  if (!st) st = pd_exec_new(c->hbwd, NULL, &c->hbex, &c->err);
  if (!st && !(c->ffwd = pd_program_clone(c->hfwd))) st = PD_ENOMEM;
  if (!st) st = pd_program_fuse_rnn(c->ffwd, &c->fused, &c->err);
  if (!st) st = pd_program_fuse_fc(c->ffwd, &c->fc, &c->err);
  if (!st) st = pd_program_validate(c->ffwd, &c->err);
  if (!st && !(c->fbwd = pd_program_clone(c->ffwd))) st = PD_ENOMEM;
  if (!st) st = pd_append_backward(c->fbwd, cost, &c->fpg, &c->err);
  if (!st) st = pd_program_validate(c->fbwd, &c->err);
  if (!st) st = pd_exec_new(c->ffwd, NULL, &c->ffex, &c->err);
  if (!st) st = pd_exec_new(c->fbwd, NULL, &c->fbex, &c->err);
  if (st) printf("# %s: %s\n", name, c->err.msg ? c->err.msg : pd_status_str(st));
  return st == PD_OK;
}

static double run_cost(hcase *c, pd_exec *ex) {
  pd_tensor t;
  pd_tensor_init(&t);
  pd_exec_fetch f = {"cost", &t};
  pd_exec_io io = {0, NULL, 1, &f};
  double v = NAN;
  if (pd_exec_run(ex, pd_runner_scope(c->r), &io, NULL, &c->err) == PD_OK && t.dtype == PD_FP64)
    v = PD_TENSOR_F64(&t)[0];
  else printf("# run: %s\n", c->err.msg ? c->err.msg : "?");
  pd_tensor_release(&t);
  return v;
}

/* The recurrent op of block 0 of p (NULL when none). */
static const pd_op_desc *loop_op(const pd_program *p) {
  for (int i = 0; i < p->blocks[0]->nops; i++)
    if (strcmp(p->blocks[0]->ops[i]->type, "recurrent") == 0) return p->blocks[0]->ops[i];
  return NULL;
}

/* The names bound to slot of op, joined by commas ("" when none). */
static const char *slot_str(const pd_op_desc *op, const char *slot, char *buf, size_t n) {
  const pd_slot *s = op ? pd_op_input(op, slot) : NULL;
  size_t k = 0;
  buf[0] = '\0';
  for (int a = 0; s && a < s->nargs && k < n; a++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", a ? "," : "", s->args[a]);
  return buf;
}

/* The op types of the step block, joined by commas. */
static const char *step_ops(const pd_program *p, char *buf, size_t n) {
  const pd_op_desc *op = loop_op(p);
  const pd_attr *sb = op ? pd_op_attr(op, "sub_block") : NULL;
  const pd_block *b = sb ? pd_program_block(p, sb->v.i) : NULL;
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; b && i < b->nops && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "", b->ops[i]->type);
  return buf;
}

/* Check a case: ops moved, the loop's inputs and parameters after the pass, the op types left
 * in the step block (NULL: not checked), the cost, and the gradients; and the loops fused. */
static void check(const char *name, const char *text, int want_moved, const char *want_inputs,
                  const char *want_params, const char *want_step, int want_fused) {
  hcase c;
  if (!setup(&c, name, text)) {
    ok(0, "%s: builds, hoists and validates", name);
    hcase_free(&c);
    return;
  }
  char buf[512];
  is_int(c.moved, want_moved, "%s: %d ops moved out of the loop", name, want_moved);
  is_str(slot_str(loop_op(c.hfwd), "inputs", buf, sizeof buf), want_inputs,
         "%s: the loop steps over %s", name, want_inputs);
  is_str(slot_str(loop_op(c.hfwd), "parameters", buf, sizeof buf), want_params,
         "%s: the loop reads parameters [%s]", name, want_params);
  if (want_step)
    is_str(step_ops(c.hfwd, buf, sizeof buf), want_step, "%s: the step block runs %s", name,
           want_step);
  /* The same cost. */
  double l0 = run_cost(&c, c.fex), l1 = run_cost(&c, c.hfex);
  ok(isfinite(l0) && fabs(l0 - l1) <= 1e-12 * (fabs(l0) > 1 ? fabs(l0) : 1),
     "%s: the hoisted program computes the same cost (%.15g, %.15g)", name, l0, l1);
  is_int(c.fused, want_fused, "%s: %d loops fused", name, want_fused);
  double l2 = run_cost(&c, c.ffex);
  ok(fabs(l0 - l2) <= 1e-12 * (fabs(l0) > 1 ? fabs(l0) : 1),
     "%s: the fused program computes the same cost (%.15g, %.15g)", name, l0, l2);
  /* Gradients: the three backward passes, one run each. */
  ok(c.pg.n == c.hpg.n && c.pg.n == c.fpg.n && c.pg.n > 0,
     "%s: %d parameters get gradients all three ways", name, c.pg.n);
  int n = c.pg.n < c.hpg.n ? c.pg.n : c.hpg.n;
  n = n < c.fpg.n ? n : c.fpg.n;
  pd_tensor *g = calloc((size_t)(3 * n) + 1, sizeof *g);
  pd_exec_fetch *f = calloc((size_t)(3 * n) + 1, sizeof *f);
  for (int i = 0; i < 3 * n; i++) pd_tensor_init(&g[i]);
  for (int i = 0; i < n; i++) {
    f[i] = (pd_exec_fetch){c.pg.pairs[i].grad, &g[i]};
    f[n + i] = (pd_exec_fetch){c.hpg.pairs[i].grad, &g[n + i]};
    f[2 * n + i] = (pd_exec_fetch){c.fpg.pairs[i].grad, &g[2 * n + i]};
  }
  pd_exec_io io0 = {0, NULL, n, f}, io1 = {0, NULL, n, f + n}, io2 = {0, NULL, n, f + 2 * n};
  pd_status st = pd_exec_run(c.bex, pd_runner_scope(c.r), &io0, NULL, &c.err);
  if (!st) st = pd_exec_run(c.hbex, pd_runner_scope(c.r), &io1, NULL, &c.err);
  if (!st) st = pd_exec_run(c.fbex, pd_runner_scope(c.r), &io2, NULL, &c.err);
  if (!ok(st == PD_OK, "%s: the three backward passes run", name))
    printf("#   %s\n", c.err.msg ? c.err.msg : "?");
  for (int i = 0; st == PD_OK && i < n; i++) {
    const char *param = c.hpg.pairs[i].param;
    pd_variable *pv = pd_scope_find_local_var(pd_runner_scope(c.r), param);
    pd_tensor *p = pv ? pd_var_tensor(pv) : NULL;
    pd_tensor *ga = &g[i], *gh = &g[n + i], *gf = &g[2 * n + i];
    bool shaped = p && p->dtype == PD_FP64 && strcmp(c.pg.pairs[i].param, param) == 0 &&
                  strcmp(c.fpg.pairs[i].param, param) == 0 && gh->dtype == PD_FP64 &&
                  ga->dtype == PD_FP64 && gf->dtype == PD_FP64 &&
                  pd_tensor_numel(gh) == pd_tensor_numel(p) &&
                  pd_tensor_numel(ga) == pd_tensor_numel(p) &&
                  pd_tensor_numel(gf) == pd_tensor_numel(p);
    double same = 0, fsame = 0, worst = 0;
    int64_t at = -1;
    double at_a = 0, at_n = 0;
    for (int64_t j = 0; shaped && j < pd_tensor_numel(p); j++) {
      double a = PD_TENSOR_F64(gh)[j], b = PD_TENSOR_F64(ga)[j];
      double d = fabs(a - b) / (fabs(b) > 1 ? fabs(b) : 1);
      if (d > same) same = d;
      d = fabs(PD_TENSOR_F64(gf)[j] - b) / (fabs(b) > 1 ? fabs(b) : 1);
      if (d > fsame) fsame = d;
      double *x = &PD_TENSOR_F64(p)[j], x0 = *x, h = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1);
      *x = x0 + h;
      double lp = run_cost(&c, c.hfex);
      *x = x0 - h;
      double lm = run_cost(&c, c.hfex);
      *x = x0;
      double num = (lp - lm) / (2 * h);
      double rel = fabs(num - a) / (fabs(num) > 1 ? fabs(num) : 1);
      if (!(rel <= worst)) {
        worst = rel;
        at = j;
        at_a = a;
        at_n = num;
      }
    }
    ok(shaped && same <= 1e-10, "%s: d cost / d %s is the same hoisted or not (rel %.3g)", name,
       param, same);
    ok(shaped && fsame <= 1e-10, "%s: d cost / d %s is the same fused or not (rel %.3g)", name,
       param, fsame);
    if (!ok(shaped && worst <= 1e-6, "%s: d cost / d %s matches finite differences", name, param))
      printf("#   element %lld: analytic %.12g, numeric %.12g (rel %.3g)%s\n", (long long)at, at_a,
             at_n, worst, shaped ? "" : " (gradient missing or misshapen)");
  }
  for (int i = 0; i < 3 * n; i++) pd_tensor_release(&g[i]);
  free(g);
  free(f);
  hcase_free(&c);
}

/* The bench model, small: lookup_table outside the loop, mul(t, Wx) + bx hoisted, the memory's
 * part (mul(h, Wh), the add, tanh) and the emit left. */
static const char elman[] =
    "x = sequence([[1, 2, 3], [4], [5, 6, 7, 8, 9]], int64)\n"
    "y = sequence([[3, 1, 2], [0], [2, 2, 1, 0, 3]], int64)\n"
    "emb = param([10, 3], name = \"emb\")\n"
    "Wx = param([3, 4], name = \"Wx\")\n"
    "bx = param([4], name = \"bx\", init = 0.1)\n"
    "Wh = param([4, 4], name = \"Wh\")\n"
    "Wo = param([4, 4], name = \"Wo\")\n"
    "h = zeros([4])\n"
    "for (t in lookup_table(emb, x)) {\n"
    "    h = tanh(mul(t, Wx) + bx + mul(h, Wh))\n"
    "    emit hs = h\n"
    "}\n"
    "cost = mean(softmax_with_cross_entropy(mul(hs, Wo), y))\n";

/* Run `pass` on copies of src, failing its k-th allocation for k = 1, 2, ... until it runs
 * through: each failure must be reported as PD_ENOMEM. */
static void oom_each(const pd_program *src, pd_status (*pass)(pd_program *, int *, pd_error *),
                     const char *what) {
  int fails = 0, k, done = -1;
  pd_status st = PD_OK;
  for (k = 1; k < 10000; k++) {
    pd_program *p = pd_program_clone(src);
    if (!p) break;
    pd_error e = {0};
    pd_alloc_fail_after(k);
    st = pass(p, &done, &e);
    pd_alloc_fail_after(0);
    if (st != PD_OK) {
      fails += st == PD_ENOMEM;
      if (st != PD_ENOMEM) printf("# allocation %d: %s\n", k, pd_status_str(st));
    }
    pd_error_clear(&e);
    pd_program_free(p);
    if (st == PD_OK) break;
  }
  ok(fails == k - 1 && k > 1 && done > 0,
     "%s: out of memory at each of the pass's %d allocations is reported", what, k - 1);
}

/* A pass over a program that has a backward pass already changes nothing; and running out of
 * memory at any allocation of the pass is reported (and leaks nothing: the sanitizer build
 * checks). */
static void test_backward_and_oom(void) {
  hcase c;
  if (!setup(&c, "elman.pd", elman)) {
    ok(0, "elman.pd: builds");
    hcase_free(&c);
    return;
  }
  int moved = -1;
  pd_status st = pd_program_hoist(c.bwd, &moved, &c.err);
  ok(st == PD_OK && moved == 0, "a program with a backward pass is left as it is");
  st = pd_program_fuse_rnn(c.hbwd, &moved, &c.err);
  ok(st == PD_OK && moved == 0, "fusion: a program with a backward pass is left as it is");
  oom_each(c.fwd, pd_program_hoist, "hoisting");
  oom_each(c.hfwd, pd_program_fuse_rnn, "fusion");
  hcase_free(&c);
}

/* The backward pass sums Wh's gradient over the steps in one product (vm/passes/backward.c,
 * defer_param_products): the loop's gradient op lists (Wh, the memory's previous value, the
 * product's output gradient), and the step gradient block's mul_grad no longer computes
 * Wh@GRAD; so does Wx's, where mul(t, Wx) stays in the loop (not hoisted). Both programs'
 * gradients are checked against finite differences above. */
static void test_param_products(void) {
  hcase c;
  if (!setup(&c, "elman.pd", elman)) {
    ok(0, "elman.pd: builds");
    hcase_free(&c);
    return;
  }
  const pd_program *progs[2] = {c.bwd, c.hbwd};
  for (int k = 0; k < 2; k++) {
    const pd_attr *a = NULL;
    const pd_op_desc *mg = NULL;
    for (int b = 0; b < progs[k]->nblocks; b++)
      for (int i = 0; i < progs[k]->blocks[b]->nops; i++) {
        const pd_op_desc *op = progs[k]->blocks[b]->ops[i];
        if (strcmp(op->type, "recurrent_grad") == 0) a = pd_op_attr(op, "param_products");
        const char *y = pd_op_input1(op, "Y");
        if (strcmp(op->type, "mul_grad") == 0 && y && strcmp(y, "Wh") == 0) mg = op;
      }
    const pd_slot *dy = mg ? pd_op_output(mg, "Y@GRAD") : NULL;
    int n = a && a->type == PD_ATTR_STRINGS ? a->n : 0, t = 0;
    while (t < n && strcmp(a->strings[t], "Wh") != 0) t += 3;
    ok(n == (k ? 3 : 6) && t + 2 < n && mg &&
           strcmp(a->strings[t + 1], pd_op_input1(mg, "X")) == 0 &&
           strcmp(a->strings[t + 2], pd_op_input1(mg, "Out@GRAD")) == 0 &&
           (!dy || dy->nargs == 0),
       "%s: Wh's gradient is one product over all steps (%d names listed)",
       k ? "hoisted" : "as written", n);
  }
  hcase_free(&c);
}

/* The op types of block 0 of p, joined by commas. */
static const char *block0_ops(const pd_program *p, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = '\0';
  for (int i = 0; i < p->blocks[0]->nops && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "", p->blocks[0]->ops[i]->type);
  return buf;
}

/* Fuse the products and bias adds of a case: how many, block 0's op types after it, the cost
 * bit for bit; for a program that has some, a backward pass left alone and out of memory. */
static void fc_case(const char *name, const char *text, int want_fc, const char *want_ops) {
  hcase c;
  if (!setup(&c, name, text)) {
    ok(0, "%s: builds", name);
    hcase_free(&c);
    return;
  }
  char buf[512];
  is_int(c.fc, want_fc, "%s: %d products and bias adds became fc ops", name, want_fc);
  is_str(block0_ops(c.ffwd, buf, sizeof buf), want_ops, "%s: block 0 runs %s", name, want_ops);
  double l0 = run_cost(&c, c.fex), l1 = run_cost(&c, c.ffex);
  ok(isfinite(l0) && l0 == l1, "%s: the same cost, bit for bit (%.17g, %.17g)", name, l0, l1);
  if (want_fc) {
    int done = -1;
    ok(pd_program_fuse_fc(c.hbwd, &done, &c.err) == PD_OK && done == 0,
       "%s: fc fusion leaves a program with a backward pass as it is", name);
    oom_each(c.hfwd, pd_program_fuse_fc, "fc fusion");
  }
  hcase_free(&c);
}

/* fuse_fc: the hoisted input projection mul(t, Wx) + bx and the output layer mul(hs, Wo) + bo
 * become fc ops (the cost and the gradients, fused or not, are compared by check); a product
 * that another op also reads, and one whose add has the bias on the left, stay as they are;
 * a program with a backward pass is left alone; out of memory is reported. */
static void test_fuse_fc(void) {
  static const char two[] =
      "x = sequence([[1, 2, 3], [4], [5, 6, 7, 8, 9]], int64)\n"
      "y = sequence([[3, 1, 2], [0], [2, 2, 1, 0, 3]], int64)\n"
      "emb = param([10, 3], name = \"emb\")\n"
      "Wx = param([3, 4], name = \"Wx\")\n"
      "bx = param([4], name = \"bx\", init = 0.1)\n"
      "Wh = param([4, 4], name = \"Wh\")\n"
      "Wo = param([4, 4], name = \"Wo\")\n"
      "bo = param([4], name = \"bo\", init = -0.2)\n"
      "h = zeros([4])\n"
      "for (t in lookup_table(emb, x)) {\n"
      "    h = tanh(mul(t, Wx) + bx + mul(h, Wh))\n"
      "    emit hs = h\n"
      "}\n"
      "cost = mean(softmax_with_cross_entropy(mul(hs, Wo) + bo, y))\n";
  check("two_fc.pd", two, 2, "elementwise_add.tmp_0", "Wh", "mul,elementwise_add,tanh", 1);
  static const char kept[] =
      "x = param([3, 4], name = \"x\")\n"
      "W = param([4, 5], name = \"W\")\n"
      "b = param([5], name = \"b\", init = 0.1)\n"
      "a = mul(x, W)\n"
      "cost = mean(tanh(a + b)) + mean(a) + mean(tanh(b + mul(x, W)))\n";
  fc_case("two_fc.pd", two, 2,
          "assign_value,lod_reset,assign_value,lod_reset,fill_constant,lookup_table,assign,fc,"
          "elman_rnn,fc,softmax_with_cross_entropy,mean");
  fc_case("kept.pd", kept, 0,
          "mul,elementwise_add,tanh,mean,mean,elementwise_add,mul,elementwise_add,tanh,mean,"
          "elementwise_add");
}

int main(void) {
  test_param_products();
  test_fuse_fc();
  check("elman.pd", elman, 2, "elementwise_add.tmp_0", "Wh",
        "mul,elementwise_add,tanh", 1);
  /* bx + mul(t, Wx): the add's operands are swapped (the LoD comes from X). Sequences of
   * lengths 1, 3 and 7; the step input is still read (h * t): it stays an input. */
  check("swap.pd",
        "x = sequence([[1], [2, 3, 4], [5, 6, 7, 8, 9, 10, 11]]) * "
        "param([1], init = 0.1, name = \"s\")\n"
        "W = param([1, 3], name = \"W\")\n"
        "b = param([3], name = \"b\", init = 0.2)\n"
        "U = param([3, 3], name = \"U\")\n"
        "h = zeros([3])\n"
        "for (t in x) {\n"
        "    h = tanh(b + mul(t, W) + mul(h, U)) * t\n"
        "}\n"
        "cost = mean(h * h)\n",
        2, "t.tmp_0,elementwise_add.tmp_0", "U",
        "mul,elementwise_add,tanh,elementwise_mul", 0);
  /* Chains of row-wise work: two products of the step, their elementwise product (rows on both
   * sides), sigmoid and scale; the memory's part stays. */
  check("chain.pd",
        "x = sequence([[1, 2], [3, 4, 5]]) * param([1], init = 0.5, name = \"s\")\n"
        "A = param([1, 2], name = \"A\")\n"
        "B = param([1, 2], name = \"B\")\n"
        "U = param([2, 2], name = \"U\")\n"
        "h = zeros([2])\n"
        "for (t in x) {\n"
        "    let z = sigmoid(mul(t, A) * mul(t, B)) * 2\n"
        "    h = tanh(z + mul(h, U))\n"
        "}\n"
        "cost = mean(h)\n",
        5, "z", "U", NULL, 1);
  /* Left alone: work on the memory, an invariant minus the step rows (not commutative), and the
   * stacked output itself (a + c, invariant too). Only mul(t, W) moves. */
  check("stays.pd",
        "x = sequence([[1, 2], [3, 4, 5]]) * param([1], init = 0.5, name = \"s\")\n"
        "W = param([1, 2], name = \"W\")\n"
        "c = param([2], name = \"c\", init = 0.3)\n"
        "h = zeros([2])\n"
        "for (t in x) {\n"
        "    let a = mul(t, W)\n"
        "    h = tanh(c - a + h * h)\n"
        "    emit o = a + c\n"
        "}\n"
        "cost = mean(h) + mean(o * o)\n",
        1, "a", "c", NULL, 0);
  /* An if inside the loop reads a hoisted value; lookup_table inside the loop. */
  check("if_lookup.pd",
        "x = sequence([[1, 2], [3, 0, 2]], int64)\n"
        "emb = param([4, 2], name = \"emb\")\n"
        "W = param([2, 2], name = \"W\")\n"
        "h = zeros([2])\n"
        "for (t in x) {\n"
        "    let e = mul(lookup_table(emb, t), W)\n"
        "    g = e + h\n"
        "    if (reduce_sum(e, dim = [1], keep_dim = true) > 0) {\n"
        "        g = g * e\n"
        "    } else {\n"
        "        g = g - e\n"
        "    }\n"
        "    h = tanh(g)\n"
        "}\n"
        "cost = mean(h * h)\n",
        2, "e", "", NULL, 0);
  /* Nested loops over sequences of sequences: w * W leaves the inner loop's body for the outer
   * loop's (where the inner loop runs once per outer step); the outer loop's own body has
   * nothing to move (its step input is the inner loop's too) and keeps its input. */
  check("nested.pd",
        "x = sequence([[[0.5, -1, 0.25], [1.5, -0.5]], [[0.75]], [[2, -0.25], [1], "
        "[0.125, -1.5, 0.5]]], lod_level = 2)\n"
        "h = var(0)\n"
        "W = param([1], init = 0.5, name = \"W\")\n"
        "U = param([1], init = 0.75, name = \"U\")\n"
        "V = param([1], init = -0.375, name = \"V\")\n"
        "for (s in x) {\n"
        "    g = h\n"
        "    for (w in s) {\n"
        "        g = tanh(w * W + g * U)\n"
        "        emit gw = g\n"
        "    }\n"
        "    h = tanh(g * V + h * W)\n"
        "    emit gs = g, gws = gw\n"
        "}\n"
        "cost = mean(h) + mean(gs * gs) + mean(gws)\n",
        1, "s.tmp_0", "W,U,V", NULL, 0);
  /* Fused cells: relu with one initial state per sequence (a sequence's first step), the
   * product on the left of the add; sigmoid over sequences of lengths 1, 3 and 7. */
  check("relu_h0.pd",
        "x = sequence([[1, 2, 3], [4], [5, 6, 7, 8, 9]], int64)\n"
        "emb = param([10, 3], name = \"emb\")\n"
        "W = param([3, 3], name = \"W\")\n"
        "U = param([3, 3], name = \"U\")\n"
        "e = lookup_table(emb, x)\n"
        "h = sequence_pool(e, pooltype = \"FIRST\") * 0.5\n"
        "for (t in e) {\n"
        "    h = relu(mul(h, U) + mul(t, W))\n"
        "    emit hs = h\n"
        "}\n"
        "cost = mean(hs * hs) + mean(h)\n",
        1, "mul.tmp_1", "U", "mul,elementwise_add,relu", 1);
  check("sigmoid.pd",
        "x = sequence([[1], [2, 3, 4], [5, 6, 7, 8, 9, 10, 11]]) * "
        "param([1], init = 0.1, name = \"s\")\n"
        "W = param([1, 3], name = \"W\")\n"
        "U = param([3, 3], name = \"U\")\n"
        "h = zeros([3])\n"
        "for (t in x) {\n"
        "    h = sigmoid(mul(t, W) + mul(h, U))\n"
        "    emit hs = h\n"
        "}\n"
        "cost = mean(hs * hs)\n",
        1, "mul.tmp_0", "U", "mul,elementwise_add,sigmoid", 1);
  /* Not a cell the fused op computes: the bias is added after the memory's product (it stays
   * in the loop), or the memory's product is scaled. */
  check("bias_in_loop.pd",
        "x = sequence([[1, 2], [3, 4, 5]]) * param([1], init = 0.5, name = \"s\")\n"
        "W = param([1, 2], name = \"W\")\n"
        "U = param([2, 2], name = \"U\")\n"
        "b = param([2], name = \"b\", init = 0.1)\n"
        "h = zeros([2])\n"
        "for (t in x) {\n"
        "    h = tanh(mul(h, U) + mul(t, W) + b)\n"
        "    emit hs = h\n"
        "}\n"
        "cost = mean(hs * hs)\n",
        1, "mul.tmp_1", "U,b", "mul,elementwise_add,elementwise_add,tanh", 0);
  check("scaled.pd",
        "x = sequence([[1, 2], [3, 4, 5]]) * param([1], init = 0.5, name = \"s\")\n"
        "W = param([1, 2], name = \"W\")\n"
        "U = param([2, 2], name = \"U\")\n"
        "h = zeros([2])\n"
        "for (t in x) {\n"
        "    h = tanh(mul(h, U) * 0.5 + mul(t, W))\n"
        "}\n"
        "cost = mean(h)\n",
        1, "mul.tmp_1", "U", NULL, 0);
  test_backward_and_oom();
  return tap_done();
}
