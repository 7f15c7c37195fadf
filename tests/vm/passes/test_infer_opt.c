/* test_infer_opt.c -- the load-time passes of an inference model (vm/passes/infer_opt.h): each
 * script's program, in fp64 and test mode, with batch norms' statistics and affine parameters
 * drawn away from 0 and 1, runs to the same outputs (1e-12 relative) before and after the
 * passes, which fold the batch norms (after a convolution with and without its bias, after an
 * fc), remove test-mode dropout and identity scales (or scale by 1 - p for downgrade_in_infer)
 * and assigns, fuse mul or matmul_v2 + add into fc, a convolution with its bias, residual and
 * activation into fused_conv2d and a transposed one with its bias and activation into
 * conv2d_transpose_bias,
 * an attention layer's heads into memory_efficient_attention; what must stay stays (a batch
 * norm whose input is read twice, a dropout whose output is fetched, a second activation, a
 * convolution whose output two ops read, attention scores read twice). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/run_int.h"
#include "tests/lang/fp64.h"
#include "tests/tap.h"
#include "vm/passes/infer_opt.h"
#include "vm/run/exec.h"

/* How far the optimised outputs may be from the original's, relative: the passes' own rounding
 * in fp64, or a float attribute's (fused_conv2d's hard_swish takes 1/6 as fuse_alpha, a FLOAT
 * as in Paddle, 1.7e-8 from the true value). */
static double tolerance = 1e-12;

static int count_op(const pd_program *p, const char *type) {
  int n = 0;
  for (int i = 0; i < p->blocks[0]->nops; i++) n += strcmp(p->blocks[0]->ops[i]->type, type) == 0;
  return n;
}

/* The batch norms' inputs of p given values away from the identity (seeded). */
static void draw_norms(const pd_program *p, pd_scope *scope) {
  static const char *const slots[] = {"Mean", "Variance", "Scale", "Bias"};
  uint64_t seed = 7;
  for (int i = 0; i < p->blocks[0]->nops; i++) {
    const pd_op_desc *op = p->blocks[0]->ops[i];
    if (strcmp(op->type, "batch_norm") != 0) continue;
    for (int s = 0; s < 4; s++) {
      const char *n = pd_op_input1(op, slots[s]);
      pd_variable *v = n ? pd_scope_find_var(scope, n) : NULL;
      pd_tensor *t = v ? pd_var_tensor(v) : NULL;
      for (int64_t e = 0; t && e < pd_tensor_numel(t); e++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(seed >> 11) / 9007199254740992.0;
        PD_TENSOR_F64(t)[e] = s == 1 ? 0.5 + u : s == 2 ? 0.5 + u : u - 0.5;
      }
    }
  }
}

/* Run p on x (dims nd/dims, values sin(i)) to target into out. */
static pd_status run(const pd_program *p, pd_scope *scope, int nd, const int64_t *dims,
                     const char *target, pd_tensor *out, pd_error *err) {
  pd_exec *ex = NULL;
  pd_tensor x;
  pd_tensor_init(&x);
  pd_status st = pd_tensor_resize(&x, PD_FP64, nd, dims);
  for (int64_t i = 0; !st && i < pd_tensor_numel(&x); i++) PD_TENSOR_F64(&x)[i] = sin(0.7 * i);
  pd_exec_feed f = {"x", &x};
  pd_exec_fetch fe = {target, out};
  pd_exec_io io = {1, &f, 1, &fe};
  if (!st) st = pd_exec_new(p, NULL, &ex, err);
  if (!st) st = pd_exec_run(ex, scope, &io, NULL, err);
  pd_exec_free(ex);
  pd_tensor_release(&x);
  return st;
}

/* Compile text (its input x of shape dims, -1 as 2), put it in test mode, run it, optimise a
 * copy, run that: the same target values, and the counts the stats and op lists must show. */
static void check(const char *name, const char *text, const char *target, int nd,
                  const int64_t *dims, int folded, int removed, int fused, const char *gone,
                  const char *kept) {
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  pd_runner *r = NULL;
  pd_program *fwd = NULL, *q = NULL;
  pd_error err = {0};
  pd_tensor a, b;
  pd_tensor_init(&a);
  pd_tensor_init(&b);
  pd_infer_opt_stats s = {0};
  pd_status st = fp64_setup(name, text, target, &src, &unit, &r, &fwd, &err);
  if (!st) st = pd_run_set_test_mode(fwd);
  if (!st) draw_norms(fwd, pd_runner_scope(r));
  if (!st) st = run(fwd, pd_runner_scope(r), nd, dims, target, &a, &err);
  if (!st && !(q = pd_program_clone(fwd))) st = PD_ENOMEM;
  if (!st) st = pd_program_infer_opt(q, pd_runner_scope(r), PD_K_HOST, &s, &err);
  if (!st) st = pd_program_validate(q, &err);
  if (!st) st = run(q, pd_runner_scope(r), nd, dims, target, &b, &err);
  if (st) printf("# %s: %s\n", name, err.msg ? err.msg : pd_status_str(st));
  double worst = 0;
  bool same = !st && a.ndims == b.ndims && pd_tensor_numel(&a) == pd_tensor_numel(&b) &&
              pd_tensor_numel(&a) > 0;
  for (int64_t i = 0; same && i < pd_tensor_numel(&a); i++) {
    double x = PD_TENSOR_F64(&a)[i], y = PD_TENSOR_F64(&b)[i];
    double e = fabs(x - y) / (fabs(x) > 1 ? fabs(x) : 1);
    if (e > worst) worst = e;
  }
  same = same && worst < tolerance;
  ok(same, "%s: the optimised program's %s is the original's (worst %.1e)", name, target, worst);
  ok(!st && s.bn_folded == folded && s.removed == removed && s.conv_fused == fused,
     "%s: %d batch norm%s folded, %d op%s removed, %d convolution%s fused (got %d, %d, %d)",
     name, folded, folded == 1 ? "" : "s", removed, removed == 1 ? "" : "s", fused,
     fused == 1 ? "" : "s", s.bn_folded, s.removed, s.conv_fused);
  if (gone) ok(!st && count_op(q, gone) == 0, "%s: no %s op left", name, gone);
  if (kept) ok(!st && count_op(q, kept) > 0, "%s: its %s op kept", name, kept);
  pd_tensor_release(&a);
  pd_tensor_release(&b);
  pd_program_free(q);
  pd_program_free(fwd);
  pd_runner_free(r);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_error_clear(&err);
}

int main(void) {
  const int64_t img[4] = {2, 3, 5, 5}, vec[2] = {3, 4};
  check("conv_bias_bn",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\n"
        "y = tanh(batch_norm(conv(x, 4, 3, padding = 1), act = relu))\n",
        "y", 4, img, 1, 0, 1, "batch_norm", NULL);
  check("conv_bn_no_bias",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\n"
        "y = tanh(batch_norm(conv(x, 4, 3, stride = 2, bias = false)) * 1.0)\n",
        "y", 4, img, 1, 1, 1, "batch_norm", NULL);
  /* a transposed convolution (its output channels are the filter's columns, per group) with
   * its bias, then with the folded bias and the activation as conv2d_transpose_bias; without
   * a bias it stays (conv2d_transpose_bias needs one); a convolution's bias as Paddle 3 adds
   * it, [1, C, 1, 1] at axis -1, also a transposed one's ([M] in the fused op) */
  check("conv_transpose_groups_bias_bn",
        "import \"layers\"\nx = data(\"x\", [-1, 4, 5, 5])\nw = param([4, 3, 3, 3])\n"
        "b = param([6])\nt = op(\"conv2d_transpose\", Input = x, Filter = w, strides = [2, 2], "
        "paddings = [1, 1], groups = 2)\ny = tanh(batch_norm(elementwise_add(t, b, axis = 1)))\n",
        "y", 4, (const int64_t[]){2, 4, 5, 5}, 1, 0, 1, "batch_norm", "conv2d_transpose_bias");
  check("conv_transpose_bn",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\nw = param([3, 2, 2, 2])\n"
        "y = relu(batch_norm(op(\"conv2d_transpose\", Input = x, Filter = w, strides = [2, 2])))\n",
        "y", 4, img, 1, 0, 1, "relu", "conv2d_transpose_bias");
  check("conv_transpose_no_bias",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\nw = param([3, 2, 2, 2])\n"
        "y = sigmoid(op(\"conv2d_transpose\", Input = x, Filter = w, strides = [2, 2]))\n",
        "y", 4, img, 0, 0, 0, NULL, "conv2d_transpose");
  check("conv_transpose_bias_1c11_sigmoid",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\nw = param([3, 1, 2, 2])\n"
        "b = param([1, 1, 1, 1])\ny = sigmoid(elementwise_add(op(\"conv2d_transpose\", Input = x, "
        "Filter = w, strides = [2, 2]), b))\n",
        "y", 4, img, 0, 0, 1, "sigmoid", "conv2d_transpose_bias");
  check("conv_bias_1c11_bn",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\nw = param([4, 3, 3, 3])\n"
        "b = param([1, 4, 1, 1])\ny = tanh(batch_norm(elementwise_add(conv2d(x, w), b)))\n",
        "y", 4, img, 1, 0, 1, "batch_norm", "fused_conv2d");
  check("fc_bn", "import \"layers\"\nx = data(\"x\", [-1, 4])\ny = tanh(batch_norm(fc(x, 5)))\n", "y", 2,
        vec, 1, 0, 0, "batch_norm", NULL);
  check("conv_read_twice",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\nc = conv(x, 4, 3, padding = 1)\n"
        "y = batch_norm(c) + c\n",
        "y", 4, img, 0, 0, 1, NULL, "batch_norm");
  check("dropouts",
        "import \"layers\"\nx = data(\"x\", [-1, 4])\n"
        "h = dropout(fc(x, 5), 0.3, dropout_implementation = \"upscale_in_train\")\n"
        "y = dropout(h, 0.25) + h\n",
        "y", 2, vec, 0, 2, 0, "dropout", NULL);
  /* an assign (x.clone(): PP-OCRv3's neck copies its pooled features) goes, its input read
   * by another op too */
  check("assign", "import \"layers\"\nx = data(\"x\", [-1, 4])\nh = fc(x, 5)\n"
        "y = tanh(op(\"assign\", X = h)) + h\n", "y", 2, vec, 0, 1, 0, "assign", NULL);
  check("dropout_fetched",
        "import \"layers\"\nx = data(\"x\", [-1, 4])\ny = dropout(fc(x, 5), 0.3)\n", "y", 2, vec, 0,
        1, 0, "dropout", NULL);
  /* fused_conv2d: a convolution with its bias (a folded batch norm's), a residual and an
   * activation; depthwise with hard_swish; one activation only; not past a second reader */
  check("conv_bn_residual_relu",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\n"
        "c = batch_norm(conv(x, 3, 3, padding = 1, bias = false))\ny = relu(c + x)\n",
        "y", 4, img, 1, 0, 1, "elementwise_add", "fused_conv2d");
  /* a residual block's two branches (ResNet50-vd's first): the main branch's convolution made
   * before the shortcut's, whose output the add reads, keeps its bias; the shortcut's takes
   * the add and the relu: both fused, no add left */
  check("two_branches_residual",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\n"
        "a = batch_norm(conv(x, 4, 3, padding = 1, bias = false))\n"
        "s = batch_norm(conv(x, 4, 1, bias = false))\ny = relu(a + s)\n",
        "y", 4, img, 2, 0, 2, "elementwise_add", "fused_conv2d");
  tolerance = 1e-7;
  check("depthwise_bn_hard_swish",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\nw = param([3, 1, 3, 3])\n"
        "y = hard_swish(batch_norm(conv2d(x, w, groups = 3, paddings = [1, 1], "
        "strides = [2, 2])))\n",
        "y", 4, img, 1, 0, 1, "hard_swish", "fused_conv2d");
  tolerance = 1e-12;
  check("conv_relu6_then_leaky",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\n"
        "y = leaky_relu(relu6(batch_norm(conv(x, 4, 3)), 1.5), 0.1)\n",
        "y", 4, img, 1, 0, 1, "relu6", "leaky_relu");
  check("conv_two_readers",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 5, 5])\nw = param([4, 3, 3, 3])\n"
        "c = conv2d(x, w, paddings = [1, 1])\ny = relu(c) + c\n",
        "y", 4, img, 0, 0, 0, NULL, "relu");
  /* PaddlePaddle 3's Linear: matmul_v2 of a 3-D input and a bias add become fc */
  const int64_t seq[3] = {2, 3, 4};
  check("matmul_bias_fc",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 4])\nw = param([4, 5])\n"
        "b = param([5], init = 0.5)\ny = tanh(elementwise_add(matmul(x, w), b))\n",
        "y", 3, seq, 0, 0, 0, "matmul_v2", "fc");
  /* Paddle 1.8's Linear (Fluid's matmul) likewise; with an alpha it stays */
  check("fluid_matmul_bias_fc",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 4])\nw = param([4, 5])\n"
        "b = param([5], init = 0.5)\n"
        "y = tanh(elementwise_add(op(\"matmul\", X = x, Y = w), b))\n",
        "y", 3, seq, 0, 0, 0, "matmul", "fc");
  check("fluid_matmul_alpha_no_fc",
        "import \"layers\"\nx = data(\"x\", [-1, 3, 4])\nw = param([4, 5])\n"
        "b = param([5], init = 0.5)\n"
        "y = tanh(elementwise_add(op(\"matmul\", X = x, Y = w, alpha = 3.0), b))\n",
        "y", 3, seq, 0, 0, 0, "fc", "matmul");
  /* an attention layer (the stdlib's, its scale on the queries; a causal mask [T, T] added to
   * the scores) becomes memory_efficient_attention, its heads' transposes gone; with the
   * scores read twice it stays */
  const int64_t tok[3] = {2, 5, 8};
  check("attention",
        "import \"layers\"\nx = data(\"x\", [-1, 5, 8])\n"
        "y = tanh(multi_head_attention(x, x, x, 2))\n",
        "y", 3, tok, 0, 0, 0, "transpose2", "memory_efficient_attention");
  check("attention_causal_mask",
        "import \"layers\"\nx = data(\"x\", [-1, 5, 8])\n"
        "y = tanh(multi_head_attention(x, x, x, 4, mask = causal_mask(5), dropout = 0.1))\n",
        "y", 3, tok, 0, 1, 0, "softmax", "memory_efficient_attention");
  /* the scale on the scores, after the product */
  check("attention_scale_after",
        "import \"layers\"\nx = data(\"x\", [-1, 5, 8])\n"
        "q = transpose(reshape(x, [0, 0, 2, 4]), [0, 2, 1, 3])\n"
        "k = transpose(reshape(x * 0.5, [0, 0, 2, 4]), [0, 2, 1, 3])\n"
        "v = transpose(reshape(tanh(x), [0, 0, 2, 4]), [0, 2, 1, 3])\n"
        "s = matmul(q, k, trans_y = true)\n"
        "y = tanh(transpose(matmul(softmax(s * 3.0), v), [0, 2, 1, 3]))\n",
        "y", 3, tok, 0, 0, 0, "matmul_v2", "memory_efficient_attention");
  /* Fluid 1.x's heads (BERT, ERNIE 1.0): matmul with transpose_Y and alpha for the scores, a
   * mask add, matmul for the values; with an alpha on the values' product it stays */
  check("attention_fluid_matmul",
        "import \"layers\"\nx = data(\"x\", [-1, 5, 8])\n"
        "q = transpose(reshape(x, [0, 0, 2, 4]), [0, 2, 1, 3])\n"
        "k = transpose(reshape(x * 0.5, [0, 0, 2, 4]), [0, 2, 1, 3])\n"
        "v = transpose(reshape(tanh(x), [0, 0, 2, 4]), [0, 2, 1, 3])\n"
        "s = op(\"matmul\", X = q, Y = k, transpose_Y = true, alpha = 0.5)\n"
        "p = op(\"matmul\", X = softmax(s + causal_mask(5)), Y = v)\n"
        "y = tanh(transpose(p, [0, 2, 1, 3]))\n",
        "y", 3, tok, 0, 0, 0, "matmul", "memory_efficient_attention");
  check("attention_fluid_matmul_scaled_values",
        "import \"layers\"\nx = data(\"x\", [-1, 5, 8])\n"
        "q = transpose(reshape(x, [0, 0, 2, 4]), [0, 2, 1, 3])\n"
        "s = op(\"matmul\", X = q, Y = q, transpose_Y = true, alpha = 0.5)\n"
        "p = op(\"matmul\", X = softmax(s), Y = q, alpha = 2.0)\n"
        "y = tanh(transpose(p, [0, 2, 1, 3]))\n",
        "y", 3, tok, 0, 0, 0, NULL, "softmax");
  check("attention_scores_read_twice",
        "import \"layers\"\nx = data(\"x\", [-1, 5, 8])\n"
        "q = transpose(reshape(x, [0, 0, 2, 4]), [0, 2, 1, 3])\n"
        "s = matmul(q, q, trans_y = true)\n"
        "y = transpose(matmul(softmax(s), q), [0, 2, 1, 3]) + mean(s)\n",
        "y", 3, tok, 0, 0, 0, NULL, "softmax");
  tap_done();
  return 0;
}
