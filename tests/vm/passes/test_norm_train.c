/* test_norm_train.c -- the training program of a script with stdlib's batch_norm and layer_norm
 * (vm/passes/pipeline.h): the running mean and variance (persistable, not trainable) get no
 * gradient and no optimizer update, while scale, bias and the fc weights get both; the
 * batch_norm op of the training program runs with batch statistics (is_test false) and writes
 * MeanOut / VarianceOut into the running statistics themselves; the programs that print, eval
 * and save run (vm/passes/prune.h, then test mode) keep the op, with is_test true, for Y but
 * not for the running statistics alone. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "train/run_int.h"
#include "tests/tap.h"
#include "tests/lang/fp64.h"
#include "vm/passes/optimizer.h"
#include "vm/passes/pipeline.h"

static const char *const script =
    "import \"layers\"\n"
    "x = data(\"x\", [-1, 3, 2, 2])\n"
    "t = data(\"t\", [-1, 1])\n"
    "h = batch_norm(x, act = relu)\n"
    "g = layer_norm(h)\n"
    "y = fc(g, 1)\n"
    "cost = mean(square(y - t))\n";

static const pd_op_desc *find_op(const pd_program *p, const char *type, int *count) {
  const pd_op_desc *found = NULL;
  *count = 0;
  for (int i = 0; i < p->blocks[0]->nops; i++)
    if (strcmp(p->blocks[0]->ops[i]->type, type) == 0) {
      found = found ? found : p->blocks[0]->ops[i];
      (*count)++;
    }
  return found;
}

static bool slot_is(const pd_op_desc *op, const char *slot, bool input, const char *var) {
  const pd_slot *s = input ? pd_op_input(op, slot) : pd_op_output(op, slot);
  return s && s->nargs == 1 && strcmp(s->args[0], var) == 0;
}

/* Does any sgd op update `param`? */
static bool updated(const pd_program *p, const char *param) {
  for (int i = 0; i < p->blocks[0]->nops; i++) {
    const pd_op_desc *op = p->blocks[0]->ops[i];
    if (strcmp(op->type, "sgd") == 0 && slot_is(op, "ParamOut", false, param)) return true;
  }
  return false;
}

static bool is_test(const pd_op_desc *op) {
  const pd_attr *a = pd_op_attr(op, "is_test");
  return a && a->type == PD_ATTR_BOOLEAN && a->v.b;
}

int main(void) {
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  pd_runner *r = NULL;
  pd_program *fwd = NULL, *train = NULL, *init = NULL, *pruned = NULL;
  pd_error err = {0};
  pd_status st = fp64_setup("norm.pd", script, "cost", &src, &unit, &r, &fwd, &err);
  ok(st == PD_OK, "a script with batch_norm and layer_norm compiles");
  pd_optimizer o;
  pd_optimizer_defaults(&o, PD_OPT_SGD, 0.1);
  pd_pipeline_options po = {.optimizer = &o};
  if (!st) st = pd_pipeline_train(unit->main, "cost", &po, &train, &init, &err);
  ok(st == PD_OK, "its training program is made");
  if (st) {
    printf("#   %s\n", err.msg ? err.msg : pd_status_str(st));
    return tap_done();
  }
  const pd_block *b0 = train->blocks[0];
  const pd_var_desc *m = pd_block_find_var_local(unit->main->blocks[0], "batch_norm_0.w_1");
  const pd_var_desc *v = pd_block_find_var_local(unit->main->blocks[0], "batch_norm_0.w_2");
  ok(m && v && m->persistable && v->persistable && m->stop_gradient && v->stop_gradient,
     "the running mean and variance are persistable and not trainable");
  int n;
  const pd_op_desc *bn = find_op(train, "batch_norm", &n);
  ok(bn && n == 1 && !is_test(bn), "the training program has one batch_norm, with is_test false");
  ok(bn && slot_is(bn, "MeanOut", false, "batch_norm_0.w_1") &&
         slot_is(bn, "Mean", true, "batch_norm_0.w_1") &&
         slot_is(bn, "VarianceOut", false, "batch_norm_0.w_2") &&
         slot_is(bn, "Variance", true, "batch_norm_0.w_2"),
     "its MeanOut and VarianceOut are Mean and Variance (updated in place)");
  const pd_op_desc *bg = find_op(train, "batch_norm_grad", &n);
  ok(bg && n == 1 && !pd_op_output(bg, "Mean@GRAD") && !pd_op_output(bg, "Variance@GRAD") &&
         slot_is(bg, "Scale@GRAD", false, "batch_norm_0.w_0@GRAD") &&
         slot_is(bg, "Bias@GRAD", false, "batch_norm_0.b_0@GRAD") && pd_op_output(bg, "X@GRAD") == NULL,
     "batch_norm_grad gives Scale and Bias gradients (X is data), none for the statistics");
  const pd_op_desc *lg = find_op(train, "layer_norm_grad", &n);
  ok(lg && n == 1 && slot_is(lg, "Scale@GRAD", false, "layer_norm_0.w_0@GRAD") &&
         slot_is(lg, "Bias@GRAD", false, "layer_norm_0.b_0@GRAD") && pd_op_output(lg, "X@GRAD"),
     "layer_norm_grad gives X, Scale and Bias gradients");
  ok(!pd_block_find_var_local(b0, "batch_norm_0.w_1@GRAD") &&
         !pd_block_find_var_local(b0, "batch_norm_0.w_2@GRAD"),
     "no gradient var for the running statistics");
  ok(updated(train, "batch_norm_0.w_0") && updated(train, "batch_norm_0.b_0") &&
         updated(train, "layer_norm_0.w_0") && updated(train, "layer_norm_0.b_0") &&
         updated(train, "fc_0.w_0"),
     "sgd updates scale, bias and the fc weight");
  ok(!updated(train, "batch_norm_0.w_1") && !updated(train, "batch_norm_0.w_2"),
     "sgd does not update the running statistics");

  /* What print / eval / save run: pruned to a target, in test mode. */
  const char *target = "cost";
  st = pd_program_prune(unit->main, 1, &target, &pruned, &err);
  if (!st) st = pd_run_set_test_mode(pruned);
  bn = st ? NULL : find_op(pruned, "batch_norm", &n);
  ok(bn && n == 1 && is_test(bn), "pruned to the cost (eval, save): batch_norm with is_test true");
  const pd_op_desc *ln = st ? NULL : find_op(pruned, "layer_norm", &n);
  ok(ln && n == 1, "and its layer_norm");
  pd_program_free(pruned);
  pruned = NULL;
  const char *stats[] = {"batch_norm_0.w_1", "batch_norm_0.w_2"};
  st = pd_program_prune(unit->main, 2, stats, &pruned, &err);
  ok(!st && pruned->blocks[0]->nops == 0,
     "pruned to the running statistics alone (print): no op, their values are the global ones");

  pd_program_free(pruned);
  pd_program_free(train);
  pd_program_free(init);
  pd_program_free(fwd);
  pd_runner_free(r);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_error_clear(&err);
  return tap_done();
}
