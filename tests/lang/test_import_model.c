/* test_import_model.c -- gradients through a saved model used as a layer (import_model,
 * lang/import_model.c). Each case is a script that imports one of the models PaddlePaddle 3.3
 * saved under tests/interop/ (LeNet: conv2d, pool2d, mul; the CNN with batch norm and dropout;
 * the TransformerEncoderLayer: matmul_v2, softmax, layer_norm, reshape2, transpose2; the CNN as
 * PaddlePaddle 3 saves it by default, PIR JSON; control flow: cond's conditional_blocks and
 * select_input, while_loop's while, a new layer in front), calls it
 * and puts a new head on one of its intermediate vars (m.layer), compiled in fp64
 * (tests/lang/fp64.h). The parameters come from the model's own .pdiparams through the startup
 * program's load_combine (made fp64 here), and every trainable parameter's gradient of the cost
 * is checked against central finite differences (tests/lang/fp64_grad.h); frozen parameters
 * and batch norm's running statistics get none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/lang/fp64.h"
#include "tests/lang/fp64_grad.h"
#include "vm/passes/backward.h"
#include "vm/run/exec.h"

static const char *srcdir(void) {
  const char *s = getenv("top_srcdir");
  return s && *s ? s : ".";
}

/* Input element j: about [-1.5, 1.5]. */
static double input(int64_t j) { return 1.5 * cos(0.9 * (double)j + 0.5); }

/* Every float32 tensor of the parameters' scope as float64 (the file holds float32; the fp64
 * program reads float64). False when one cannot be converted. */
static bool params_to_fp64(pd_unit *u, pd_scope *scope) {
  const pd_block *b = u->main->blocks[0];
  for (int i = 0; i < b->nvars; i++) {
    if (!b->vars[i]->persistable) continue;
    pd_variable *v = pd_scope_find_local_var(scope, b->vars[i]->name);
    pd_tensor *t = v ? pd_var_tensor(v) : NULL;
    if (!t || t->dtype != PD_FP32) continue;
    int64_t n = pd_tensor_numel(t);
    double *d = malloc(sizeof *d * (size_t)(n ? n : 1));
    if (!d) return false;
    for (int64_t j = 0; j < n; j++) d[j] = ((const float *)pd_tensor_data(t))[j];
    int64_t dims[PD_MAX_RANK];
    int nd = t->ndims;
    memcpy(dims, t->dims, sizeof *dims * (size_t)nd);
    pd_status st = pd_tensor_set_data(t, PD_FP64, nd, dims, d);
    free(d);
    if (st) return false;
  }
  return true;
}

/* The script (model path substituted for %s), its input's name and shape, and how many
 * parameters must get gradients. */
typedef struct icase {
  const char *name, *script, *feed;
  int nd;
  int64_t dims[4];
  int want;
} icase;

static void run_case(const icase *k) {
  char model[1024], text[4096];
  snprintf(model, sizeof model, "%s/tests/interop/%s/model", srcdir(), k->name);
  snprintf(text, sizeof text, k->script, model);
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  pd_runner *r = NULL;
  pd_program *fwd = NULL, *bwd = NULL;
  pd_exec *fex = NULL, *bex = NULL;
  pd_backward pg = {0};
  pd_error err = {0};
  pd_tensor in;
  pd_tensor_init(&in);
  pd_status st = fp64_setup(k->name, text, "cost", &src, &unit, &r, &fwd, &err);
  if (!st && !params_to_fp64(unit, pd_runner_scope(r))) st = PD_ENOMEM;
  /* dropout draws the same mask on every run, so that the cost is a function of the weights */
  for (int i = 0; !st && i < fwd->blocks[0]->nops; i++) {
    pd_op_desc *op = fwd->blocks[0]->ops[i];
    if (strcmp(op->type, "dropout") == 0 &&
        (pd_op_set_attr_bool(op, "fix_seed", true) || pd_op_set_attr_int(op, "seed", 7)))
      st = PD_ENOMEM;
  }
  int64_t n = 1;
  for (int i = 0; i < k->nd; i++) n *= k->dims[i];
  double *x = malloc(sizeof *x * (size_t)n);
  if (!x) st = PD_ENOMEM;
  for (int64_t j = 0; !st && j < n; j++) x[j] = input(j);
  if (!st) st = pd_tensor_set_data(&in, PD_FP64, k->nd, k->dims, x);
  free(x);
  if (!st && !(bwd = pd_program_clone(fwd))) st = PD_ENOMEM;
  if (!st) st = pd_append_backward(bwd, "cost", &pg, &err);
  if (!st) st = pd_exec_new(fwd, NULL, &fex, &err);
  if (!st) st = pd_exec_new(bwd, NULL, &bex, &err);
  if (!ok(st == PD_OK, "%s: imported, compiled in fp64, its parameters loaded", k->name)) {
    printf("#   %s\n", err.msg ? err.msg : pd_status_str(st));
  } else {
    pd_exec_feed feed = {k->feed, &in};
    fp64_grad_run g = {fex, bex, pd_runner_scope(r), &pg, {1, &feed, 0, NULL}, "cost", &err};
    fp64_check_grads(&g, k->name, k->want);
  }
  pd_exec_free(fex);
  pd_exec_free(bex);
  pd_program_free(fwd);
  pd_program_free(bwd);
  pd_backward_release(&pg);
  pd_runner_free(r);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_tensor_release(&in);
  pd_error_clear(&err);
}

int main(void) {
  static const icase cases[] = {
      /* fc_0's 12,800 weights frozen (by pattern), the other 7 parameters trained; the new head
       * reads the second pooling */
      {"lenet",
       "import \"layers\"\n"
       "m = import_model(\"%s\", freeze = [\"fc_0.w*\"])\n"
       "x = data(\"img\", [-1, 1, 28, 28])\n"
       "y = m(x)\n"
       "h = fc(reshape(m.layer(\"pool2d_1.tmp_0\"), [-1, 400]), 3, name = \"head\")\n"
       "cost = mean(y * y) + mean(h * h)\n",
       "img", 4, {2, 1, 28, 28}, 9},
      /* batch norm in training mode (batch statistics; its running mean and variance are state,
       * not parameters), dropout with a fixed mask */
      {"cnn_bn",
       "m = import_model(\"%s\")\n"
       "x = data(\"img\", [-1, 3, 12, 12])\n"
       "y = m(img = x)\n"
       "cost = mean(y * y * y)\n",
       "img", 4, {3, 3, 12, 12}, 6},
      /* the same kind of model as PaddlePaddle 3 saves it by default (PIR JSON): its in-place
       * batch_norm_ updates the running statistics where they are, so they stay state */
      {"pir/cnn_bn",
       "m = import_model(\"%s.json\")\n"
       "x = data(\"img\", [-1, 3, 8, 8])\n"
       "cost = mean(square(m(x)))\n",
       "img", 4, {3, 3, 8, 8}, 6},
      /* attention: every projection, both layer norms and the feed-forward network */
      {"transformer",
       "m = import_model(\"%s\", prefix = \"enc.\")\n"
       "x = data(\"x\", [-1, 5, 8])\n"
       "y = m(x)\n"
       "cost = mean(y * y * y)\n",
       "x", 3, {2, 5, 8}, 16},
      /* control flow as PaddlePaddle writes it, after a new layer in front: static.nn.cond's
       * two conditional_blocks and select_input (the true branch, then the false one), and
       * while_loop's while, which updates its input in place (legacy and PIR) */
      {"cond",
       "import \"layers\"\n"
       "m = import_model(\"%s\")\n"
       "x = data(\"x\", [-1, 4])\n"
       "y = m(fc(x, 4, name = \"pre\"), var([0.7]))\n"
       "cost = mean(y * y * y)\n",
       "x", 2, {3, 4}, 2},
      {"cond_false",
       "import \"layers\"\n"
       "m = import_model(\"%s\")\n"
       "x = data(\"x\", [-1, 4])\n"
       "y = m(fc(x, 4, name = \"pre\"), var([-0.3]))\n"
       "cost = mean(y * y * y)\n",
       "x", 2, {3, 4}, 2},
      {"while_loop",
       "import \"layers\"\n"
       "m = import_model(\"%s\")\n"
       "x = data(\"x\", [-1, 4])\n"
       "y = m(fc(x, 4, name = \"pre\"))\n"
       "cost = mean(y * y * y)\n",
       "x", 2, {2, 4}, 2},
      {"pir/while_loop",
       "import \"layers\"\n"
       "m = import_model(\"%s.json\")\n"
       "x = data(\"x\", [-1, 4])\n"
       "y, z = m(fc(x, 4, name = \"pre\"))\n"
       "cost = mean(y * y * y) + mean(z * z)\n",
       "x", 2, {2, 4}, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
  return tap_done();
}
