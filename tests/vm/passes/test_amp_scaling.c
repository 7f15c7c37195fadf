/* test_amp_scaling.c -- fp16 loss scaling in the training program (vm/passes/amp.h through
 * vm/passes/pipeline.h) under a forced overflow, with values worked out by hand: cost =
 * mean(mul(x, w)) for one sample x = 1, so the gradient that reaches mul's is the loss scale
 * itself, which the fp16 product rounds to an infinity from 65520 up. Starting at 2^17 with
 * decr_every_n_nan_or_inf 1, decr_ratio 0.5, incr_every_n_steps 3, incr_ratio 2 and momentum
 * (lr 0.125, mu 0.5) from w = 0.25:
 *   step 1  2^17 overflows: skipped (w, velocity unchanged), the scale 2^16
 *   step 2  2^16 = 65536 overflows too: skipped, the scale 2^15
 *   step 3  good (1 of 3): gradient 1 unscaled; v = 1, w = 0.125
 *   step 4  good (2): v = 1.5, w = -0.0625
 *   step 5  good (3): v = 1.75, w = -0.28125; the scale grows to 2^16, the count restarts
 *   step 6  2^16 overflows: skipped, the scale back to 2^15
 * Also: a static scale (dynamic_loss_scaling false) has no step counts and never changes; the
 * training program's shape (the scaled cost, the two ops, the guarded updates); a script var
 * named like one of the pass's is refused. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/tap.h"
#include "vm/ops/ops.h"
#include "vm/passes/amp.h"
#include "vm/passes/optimizer.h"
#include "vm/passes/pipeline.h"
#include "vm/run/exec.h"

/* cost = mean(y = mul(x, w)), x [1, 1] data, w [1, 1] a parameter; y named yname. */
static pd_program *forward(const char *yname) {
  pd_program *p = pd_program_new();
  pd_block *b = p->blocks[0];
  const char *names[] = {"x", "w", yname, "cost"};
  int64_t dims[2] = {1, 1};
  for (int i = 0; i < 4; i++) {
    pd_var_desc *v = pd_block_var(b, names[i]);
    pd_var_set_shape(v, i == 3 ? 1 : 2, dims);
    v->dtype = PD_FP32;
    v->persistable = i == 1;
    v->stop_gradient = i == 0;
  }
  pd_op_desc *op = pd_block_add_op(b, "mul", -1);
  pd_op_set_input(op, "X", 1, (const char *[]){"x"});
  pd_op_set_input(op, "Y", 1, (const char *[]){"w"});
  pd_op_set_output(op, "Out", 1, &yname);
  pd_error err = {0};
  if (pd_opdef_prepare(op, b, &err)) printf("# %s\n", err.msg);
  op = pd_block_add_op(b, "mean", -1);
  pd_op_set_input(op, "X", 1, &yname);
  pd_op_set_output(op, "Out", 1, (const char *[]){"cost"});
  if (pd_opdef_prepare(op, b, &err)) printf("# %s\n", err.msg);
  pd_error_clear(&err);
  return p;
}

static double f32_of(pd_scope *g, const char *name) {
  pd_variable *v = pd_scope_find_var(g, name);
  return v && pd_tensor_initialized(&v->u.tensor) ? PD_TENSOR_F32(&v->u.tensor)[0] : NAN;
}

static long i32_of(pd_scope *g, const char *name) {
  pd_variable *v = pd_scope_find_var(g, name);
  return v && pd_tensor_initialized(&v->u.tensor) ? (long)((int32_t *)pd_tensor_data(&v->u.tensor))[0]
                                                  : -1;
}

static int count_ops(const pd_block *b, const char *type) {
  int n = 0;
  for (int i = 0; i < b->nops; i++) n += strcmp(b->ops[i]->type, type) == 0;
  return n;
}

typedef struct run {
  pd_program *train, *init;
  pd_exec *ex;
  pd_scope *g;
} run;

static bool start(run *r, const pd_amp_scaling *s, pd_error *err) {
  memset(r, 0, sizeof *r);
  pd_program *fwd = forward("y");
  pd_optimizer o;
  pd_optimizer_defaults(&o, PD_OPT_MOMENTUM, 0.125);
  o.mu = 0.5;
  pd_pipeline_options po = {.optimizer = &o, .amp = PD_FP16, .scaling = s};
  pd_status st = pd_pipeline_train(fwd, "cost", &po, &r->train, &r->init, err);
  pd_program_free(fwd);
  r->g = pd_scope_new(NULL);
  float x = 1, w = 0.25;
  int64_t dims[2] = {1, 1};
  pd_tensor_set_data(pd_var_tensor(pd_scope_var(r->g, "x")), PD_FP32, 2, dims, &x);
  pd_tensor_set_data(pd_var_tensor(pd_scope_var(r->g, "w")), PD_FP32, 2, dims, &w);
  pd_exec *ie = NULL;
  if (!st) st = pd_exec_new(r->init, NULL, &ie, err);
  if (!st) st = pd_exec_run_block(ie, 0, r->g, err);
  pd_exec_free(ie);
  if (!st) st = pd_exec_new(r->train, NULL, &r->ex, err);
  if (st) printf("# %s\n", err->msg ? err->msg : pd_status_str(st));
  return st == PD_OK;
}

static void stop(run *r) {
  pd_exec_free(r->ex);
  pd_scope_free(r->g);
  pd_program_free(r->train);
  pd_program_free(r->init);
}

int main(void) {
  pd_error err = {0};
  pd_amp_scaling s;
  pd_amp_scaling_defaults(&s);
  ok(s.loss_scale == 32768 && s.dynamic && s.incr_every_n_steps == 1000 &&
         s.decr_every_n_nan_or_inf == 2 && s.incr_ratio == 2 && s.decr_ratio == 0.8,
     "Paddle's defaults: 2^15, 1000 good steps x 2, 2 bad steps x 0.8");
  s = (pd_amp_scaling){.loss_scale = 131072, .dynamic = true, .incr_every_n_steps = 3,
                       .decr_every_n_nan_or_inf = 1, .incr_ratio = 2, .decr_ratio = 0.5};
  run r;
  bool started = start(&r, &s, &err);
  ok(started, "the fp16 training program of mean(mul(x, w)) is made and starts");
  if (!started) return tap_done();

  const pd_block *b0 = r.train->blocks[0];
  const pd_op_desc *mul = NULL;
  for (int i = 0; i < b0->nops; i++)
    if (strcmp(b0->ops[i]->type, "mul_grad") == 0) mul = b0->ops[i];
  const pd_attr *mark = mul ? pd_op_attr(mul, "mkldnn_data_type") : NULL;
  ok(mark && mark->type == PD_ATTR_STRING && strcmp(mark->v.s, "float16") == 0,
     "mul_grad multiplies in float16");
  ok(count_ops(b0, "check_finite_and_unscale") == 1 && count_ops(b0, "update_loss_scaling") == 1 &&
         count_ops(b0, "conditional_block") == 1 && count_ops(b0, "momentum") == 0 &&
         r.train->nblocks == 2 && count_ops(r.train->blocks[1], "momentum") == 1,
     "block 0 unscales and updates the scale; the momentum update is in the guarded block");
  const pd_var_desc *sv = pd_block_find_var_local(b0, PD_AMP_SCALE_VAR);
  const pd_var_desc *gv = pd_block_find_var_local(b0, PD_AMP_GOOD_VAR);
  ok(sv && sv->persistable && gv && gv->persistable && gv->dtype == PD_INT32,
     "the scale and the step counts are persistable (checkpoints carry them)");

  static const struct {
    double scale_after, w, v;
    long good, bad;
    bool skipped;
    const char *what;
  } want[] = {
      {65536, 0.25, 0, 0, 0, true, "step 1: 2^17 overflows, skipped, the scale halved"},
      {32768, 0.25, 0, 0, 0, true, "step 2: 65536 overflows fp16 too, skipped, halved again"},
      {32768, 0.125, 1, 1, 0, false, "step 3: a good step, the unscaled gradient 1 applied"},
      {32768, -0.0625, 1.5, 2, 0, false, "step 4: the second good step"},
      {65536, -0.28125, 1.75, 0, 0, false, "step 5: the third good step doubles the scale"},
      {32768, -0.28125, 1.75, 0, 0, true,
       "step 6: 2^16 overflows: skipped, velocity kept, halved"},
  };
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    pd_status st = pd_exec_run_block(r.ex, 0, r.g, &err);
    double sc = f32_of(r.g, PD_AMP_SCALE_VAR), w = f32_of(r.g, "w"),
           v = f32_of(r.g, "w_velocity_0");
    long good = i32_of(r.g, PD_AMP_GOOD_VAR), bad = i32_of(r.g, PD_AMP_BAD_VAR);
    double g = f32_of(r.g, "w@GRAD");
    bool pass = !st && sc == want[k].scale_after && w == want[k].w && v == want[k].v &&
                good == want[k].good && bad == want[k].bad && g == (want[k].skipped ? 0 : 1);
    if (!ok(pass, "%s", want[k].what))
      printf("#   st %d, scale %g, w %.9g, velocity %.9g, good %ld, bad %ld, w@GRAD %g\n", st,
             sc, w, v, good, bad, g);
  }
  stop(&r);

  /* A static scale: every step unscaled by the same 1024, no counts. */
  s = (pd_amp_scaling){.loss_scale = 1024, .dynamic = false};
  started = start(&r, &s, &err);
  ok(started && !pd_block_find_var_local(r.train->blocks[0], PD_AMP_GOOD_VAR) &&
         count_ops(r.train->blocks[0], "update_loss_scaling") == 0,
     "dynamic_loss_scaling false: no update_loss_scaling, no step counts");
  bool same = started;
  for (int k = 0; k < 3 && same; k++)
    same = !pd_exec_run_block(r.ex, 0, r.g, &err) && f32_of(r.g, PD_AMP_SCALE_VAR) == 1024 &&
           f32_of(r.g, "w@GRAD") == 1;
  ok(same && f32_of(r.g, "w") == -0.28125f,
     "the static scale stays 1024; three good steps reach w = -0.28125 (w %.9g)",
     f32_of(r.g, "w"));
  if (started) stop(&r);

  /* A script var named like the pass's (y here): refused, naming it. */
  pd_program *fwd = forward(PD_AMP_SCALE_VAR), *train = NULL, *init = NULL;
  pd_optimizer o;
  pd_optimizer_defaults(&o, PD_OPT_SGD, 0.1);
  pd_amp_scaling_defaults(&s);
  pd_pipeline_options po = {.optimizer = &o, .amp = PD_FP16, .scaling = &s};
  pd_status st = pd_pipeline_train(fwd, "cost", &po, &train, &init, &err);
  ok(st == PD_EINVAL && err.msg && strstr(err.msg, "'loss_scaling_0'") && !train && !init,
     "a var named loss_scaling_0 in the script is refused: %s", err.msg ? err.msg : "-");
  pd_program_free(fwd);
  pd_error_clear(&err);
  return tap_done();
}
