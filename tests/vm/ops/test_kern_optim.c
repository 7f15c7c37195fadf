/* test_kern_optim.c -- kernels of the optimizer ops (vm/ops/optim.c): sgd, momentum (plain,
 * Nesterov, l2_decay, rescale_grad) and adam (two steps against hand-computed values, Beta1Tensor,
 * SkipUpdate, use_global_beta_pow), run as the optimizer runs them: in place, ParamOut bound to
 * the var of Param (and VelocityOut to Velocity, ...), so a second run continues from the first. */
#include "config.h"

#include "tests/vm/ops/runop.h"

/* Set a var's value in the scope (for the second step of an update). */
static void set_f64(rt *r, const char *name, int n, const double *v) {
  pd_tensor *t = pd_var_tensor(pd_scope_var(r->scope, name));
  if (!t || pd_tensor_set_data(t, PD_FP64, 1, (int64_t[]){n}, v)) bail("out of memory");
}

static void test_sgd(void) {
  rt r;
  rt_init(&r);
  pd_tensor *p = rt_in_f32(&r, "p", "[3]", (float[]){1, 2, 3});
  rt_in_f32(&r, "g", "[3]", (float[]){0.5f, -1, 2});
  rt_in_f32(&r, "lr", "[1]", (float[]){0.1f});
  rt_op(&r, "sgd", "Param=p Grad=g LearningRate=lr", "ParamOut=p");
  void *before = pd_tensor_data(p);
  if (rt_ok(&r, "sgd fp32 in place")) {
    rt_expect(rt_get(&r, "p"), 3, ((double[]){0.95, 2.1, 2.8}), 1e-6, "sgd: p - lr * g");
    ok(pd_tensor_data(rt_get(&r, "p")) == before, "sgd: ParamOut is Param's own storage");
  }
  if (rt_ok(&r, "sgd second step"))
    rt_expect(rt_get(&r, "p"), 3, ((double[]){0.9, 2.2, 2.6}), 1e-6, "sgd: two steps");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "p", "[2, 2]", (double[]){1, 2, 3, 4});
  rt_in_f64(&r, "g", "[2, 2]", (double[]){1, 1, -2, 0.5});
  rt_in_f64(&r, "lr", "[1]", (double[]){0.25});
  rt_op(&r, "sgd", "Param=p Grad=g LearningRate=lr", "ParamOut=q");
  if (rt_ok(&r, "sgd fp64 into another var")) {
    rt_expect(rt_get(&r, "q"), 4, ((double[]){0.75, 1.75, 3.5, 3.875}), 1e-15, "sgd: fp64");
    rt_expect(rt_get(&r, "p"), 4, ((double[]){1, 2, 3, 4}), 0, "sgd: Param unchanged");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "p", "[3]", (float[]){1, 2, 3});
  rt_in_f32(&r, "g", "[2]", (float[]){1, 2});
  rt_in_f32(&r, "lr", "[1]", (float[]){0.1f});
  decl(r.f.b, "p", PD_FP32, "[-1]");
  decl(r.f.b, "g", PD_FP32, "[-1]");
  rt_op(&r, "sgd", "Param=p Grad=g LearningRate=lr", "ParamOut=p");
  rt_fails(&r, PD_ESHAPE, "sgd: Grad [2] must have the shape of Param [3]",
           "sgd: a gradient of another shape");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "p", "[1]", (float[]){1});
  rt_in_f32(&r, "g", "[1]", (float[]){1});
  rt_in_f32(&r, "lr", "[2]", (float[]){0.1f, 0.2f});
  decl(r.f.b, "lr", PD_FP32, "[-1]");
  rt_op(&r, "sgd", "Param=p Grad=g LearningRate=lr", "ParamOut=p");
  rt_fails(&r, PD_ESHAPE, "sgd: LearningRate must hold one element, got [2]",
           "sgd: a learning rate of two elements");
  rt_free(&r);
}

static void test_momentum(void) {
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "p", "[2]", (double[]){1, 2});
  rt_in_f64(&r, "g", "[2]", (double[]){0.5, -1});
  rt_in_f64(&r, "v", "[2]", (double[]){0, 0});
  rt_in_f64(&r, "lr", "[1]", (double[]){0.1});
  pd_op_set_attr_float(rt_op(&r, "momentum", "Param=p Grad=g Velocity=v LearningRate=lr",
                             "ParamOut=p VelocityOut=v"),
                       "mu", 0.9f);
  /* v1 = g = [0.5, -1], p1 = p - 0.1 v1 = [0.95, 2.1]; v2 = 0.9 v1 + g = [0.95, -1.9],
   * p2 = p1 - 0.1 v2 = [0.855, 2.29]. */
  if (rt_ok(&r, "momentum in place, step 1")) {
    rt_expect(rt_get(&r, "p"), 2, ((double[]){0.95, 2.1}), 1e-7, "momentum: p after step 1");
    rt_expect(rt_get(&r, "v"), 2, ((double[]){0.5, -1}), 1e-7, "momentum: v after step 1");
  }
  if (rt_ok(&r, "momentum in place, step 2")) {
    rt_expect(rt_get(&r, "p"), 2, ((double[]){0.855, 2.29}), 1e-7, "momentum: p after step 2");
    rt_expect(rt_get(&r, "v"), 2, ((double[]){0.95, -1.9}), 1e-7, "momentum: v after step 2");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "p", "[2]", (float[]){1, 2});
  rt_in_f32(&r, "g", "[2]", (float[]){0.5f, -1});
  rt_in_f32(&r, "v", "[2]", (float[]){0.2f, 0.1f});
  rt_in_f32(&r, "lr", "[1]", (float[]){0.1f});
  pd_op_desc *op = rt_op(&r, "momentum", "Param=p Grad=g Velocity=v LearningRate=lr",
                         "ParamOut=p VelocityOut=v");
  pd_op_set_attr_float(op, "mu", 0.9f);
  pd_op_set_attr_bool(op, "use_nesterov", true);
  pd_op_set_attr_string(op, "regularization_method", "l2_decay");
  pd_op_set_attr_float(op, "regularization_coeff", 0.01f);
  pd_op_set_attr_float(op, "rescale_grad", 2);
  /* g' = 2 g + 0.01 p = [1.01, -1.98]; v = 0.9 v + g' = [1.19, -1.89];
   * p = p - 0.1 (g' + 0.9 v) = [0.7919, 2.3681]. */
  if (rt_ok(&r, "momentum nesterov, l2_decay, rescale_grad")) {
    rt_expect(rt_get(&r, "p"), 2, ((double[]){0.7919, 2.3681}), 1e-6, "momentum nesterov: p");
    rt_expect(rt_get(&r, "v"), 2, ((double[]){1.19, -1.89}), 1e-6, "momentum nesterov: v");
  }
  rt_free(&r);
}

/* beta1 0.9, beta2 0.999, epsilon 1e-8 as FLOAT64 attributes (the defaults are float32). */
static void adam_attrs(pd_op_desc *op) {
  pd_op_set_attr_double(op, "beta1", 0.9);
  pd_op_set_attr_double(op, "beta2", 0.999);
  pd_op_set_attr_double(op, "epsilon", 1e-8);
}

/* Adam's inputs; Beta1Pow and Beta2Pow start at beta1 and beta2, as Fluid's optimizer does. */
static pd_op_desc *adam_setup(rt *r, pd_dtype dt) {
  double p[] = {1, -0.5, 2}, g[] = {0.5, -0.2, 0}, z[] = {0, 0, 0};
  float pf[] = {1, -0.5f, 2}, gf[] = {0.5f, -0.2f, 0}, zf[] = {0, 0, 0};
  if (dt == PD_FP64) {
    rt_in_f64(r, "p", "[3]", p);
    rt_in_f64(r, "g", "[3]", g);
    rt_in_f64(r, "m1", "[3]", z);
    rt_in_f64(r, "m2", "[3]", z);
  } else {
    rt_in_f32(r, "p", "[3]", pf);
    rt_in_f32(r, "g", "[3]", gf);
    rt_in_f32(r, "m1", "[3]", zf);
    rt_in_f32(r, "m2", "[3]", zf);
  }
  if (dt != PD_FP64) {  /* float32 rates and powers, as Fluid keeps them */
    rt_in_f32(r, "lr", "[1]", (float[]){0.01f});
    rt_in_f32(r, "b1p", "[1]", (float[]){0.9f});
    rt_in_f32(r, "b2p", "[1]", (float[]){0.999f});
  }
  pd_op_desc *op = rt_op(r, "adam",
                         "Param=p Grad=g LearningRate=lr Moment1=m1 Moment2=m2 Beta1Pow=b1p "
                         "Beta2Pow=b2p",
                         "ParamOut=p Moment1Out=m1 Moment2Out=m2 Beta1PowOut=b1p Beta2PowOut=b2p");
  if (dt == PD_FP64) { /* exact inputs: fp64 rates and powers, FLOAT64 attributes */
    rt_in_f64(r, "lr", "[1]", (double[]){0.01});
    rt_in_f64(r, "b1p", "[1]", (double[]){0.9});
    rt_in_f64(r, "b2p", "[1]", (double[]){0.999});
    adam_attrs(op);
  }
  return op;
}

static void test_adam(void) {
  /* Step 1 (beta1 0.9, beta2 0.999, epsilon 1e-8, lr 0.01, beta powers 0.9 and 0.999):
   *   lr_t = 0.01 * sqrt(1 - 0.999) / (1 - 0.9) = 0.0031622776601683794
   *   m1 = 0.1 g = [0.05, -0.02, 0]; m2 = 0.001 g^2 = [0.00025, 0.00004, 0]
   *   p -= lr_t * m1 / (sqrt(m2) + 1e-8 * sqrt(0.001)): element 0: 1 - lr_t * 0.05 /
   *   (0.015811388300841896 + 3.16e-10) = 0.9900000002; g = 0 leaves element 2 alone.
   * Step 2 with g = [0.1, 0.3, -1] and beta powers 0.81, 0.998001:
   *   lr_t = 0.01 * sqrt(0.001999) / 0.19; m1 = [0.055, 0.012, -0.1];
   *   m2 = [0.00025975, 0.00012996, 0.001]; p = [0.98196959063846, -0.49247701856419,
   *   2.00744136813046]. */
  rt r;
  rt_init(&r);
  adam_setup(&r, PD_FP64);
  if (rt_ok(&r, "adam fp64 in place, step 1")) {
    rt_expect(rt_get(&r, "p"), 3, ((double[]){0.9900000002, -0.4900000005, 2.0}), 1e-9,
              "adam: Param after step 1");
    rt_expect(rt_get(&r, "m1"), 3, ((double[]){0.05, -0.02, 0}), 1e-15, "adam: Moment1 after step 1");
    rt_expect(rt_get(&r, "m2"), 3, ((double[]){0.00025, 0.00004, 0}), 1e-15,
              "adam: Moment2 after step 1");
    rt_expect(rt_get(&r, "b1p"), 1, ((double[]){0.81}), 1e-15, "adam: Beta1PowOut = 0.9 * 0.9");
    rt_expect(rt_get(&r, "b2p"), 1, ((double[]){0.998001}), 1e-15, "adam: Beta2PowOut = 0.999^2");
  }
  set_f64(&r, "g", 3, (double[]){0.1, 0.3, -1});
  if (rt_ok(&r, "adam fp64 in place, step 2")) {
    rt_expect(rt_get(&r, "p"), 3,
              ((double[]){0.9819695906384652, -0.4924770185641943, 2.0074413681304595}), 1e-7,
              "adam: Param after step 2");
    rt_expect(rt_get(&r, "m1"), 3, ((double[]){0.055, 0.012, -0.1}), 1e-12,
              "adam: Moment1 after step 2");
    rt_expect(rt_get(&r, "m2"), 3, ((double[]){0.00025975, 0.00012996, 0.001}), 1e-12,
              "adam: Moment2 after step 2");
    rt_expect(rt_get(&r, "b1p"), 1, ((double[]){0.729}), 1e-6, "adam: Beta1Pow after step 2");
  }
  rt_free(&r);

  rt_init(&r);
  adam_setup(&r, PD_FP32);
  if (rt_ok(&r, "adam fp32")) {
    rt_expect(rt_get(&r, "p"), 3, ((double[]){0.99, -0.49, 2.0}), 1e-6, "adam fp32: step 1");
    ok(rt_get(&r, "b1p")->dtype == PD_FP32, "adam: Beta1PowOut keeps Beta1Pow's dtype");
    rt_expect(rt_get(&r, "b1p"), 1, ((double[]){0.81}), 1e-6, "adam fp32: Beta1PowOut");
  }
  rt_free(&r);

  rt_init(&r); /* Beta1Tensor and EpsilonTensor override the attributes */
  pd_op_desc *op = adam_setup(&r, PD_FP64);
  rt_in_f64(&r, "b1", "[1]", (double[]){0.5});
  rt_in_f64(&r, "ep", "[1]", (double[]){0.1});
  pd_op_set_input(op, "Beta1Tensor", 1, (const char *const[]){"b1"});
  pd_op_set_input(op, "EpsilonTensor", 1, (const char *const[]){"ep"});
  pd_op_set_attr_bool(op, "use_global_beta_pow", true);
  /* element 0: m1 = 0.5 * 0.5 = 0.25, m2 = 0.00025, lr_t = 0.0031622776601683794,
   * p = 1 - lr_t * 0.25 / (0.015811388300841896 + 0.1 * 0.0316227766) = 0.9583333... */
  if (rt_ok(&r, "adam with Beta1Tensor, EpsilonTensor, use_global_beta_pow")) {
    double lr_t = 0.01 * sqrt(0.001) / 0.1;
    double want = 1 - lr_t * 0.25 / (sqrt(0.00025) + 0.1 * sqrt(0.001));
    is_close(PD_TENSOR_F64(rt_get(&r, "p"))[0], want, 1e-12, "adam: Beta1Tensor, EpsilonTensor");
    is_close(PD_TENSOR_F64(rt_get(&r, "m1"))[0], 0.25, 1e-15, "adam: m1 with beta1 0.5");
    rt_expect(rt_get(&r, "b1p"), 1, ((double[]){0.9}), 1e-7,
              "adam: use_global_beta_pow leaves Beta1Pow alone");
  }
  rt_free(&r);

  rt_init(&r); /* SkipUpdate */
  op = adam_setup(&r, PD_FP64);
  rt_in(&r, "skip", PD_BOOL, "[1]", (uint8_t[]){1});
  pd_op_set_input(op, "SkipUpdate", 1, (const char *const[]){"skip"});
  if (rt_ok(&r, "adam with SkipUpdate")) {
    rt_expect(rt_get(&r, "p"), 3, ((double[]){1, -0.5, 2}), 0, "adam: SkipUpdate keeps Param");
    rt_expect(rt_get(&r, "b1p"), 1, ((double[]){0.9}), 1e-7, "adam: SkipUpdate keeps Beta1Pow");
  }
  rt_free(&r);

  rt_init(&r); /* into other vars: the inputs stay */
  rt_in_f64(&r, "p", "[2]", (double[]){1, 2});
  rt_in_f64(&r, "g", "[2]", (double[]){0.5, 0.5});
  rt_in_f64(&r, "m1", "[2]", (double[]){0, 0});
  rt_in_f64(&r, "m2", "[2]", (double[]){0, 0});
  rt_in_f64(&r, "lr", "[1]", (double[]){0.01});
  rt_in_f64(&r, "b1p", "[1]", (double[]){0.9});
  rt_in_f64(&r, "b2p", "[1]", (double[]){0.999});
  adam_attrs(rt_op(&r, "adam",
                   "Param=p Grad=g LearningRate=lr Moment1=m1 Moment2=m2 Beta1Pow=b1p Beta2Pow=b2p",
                   "ParamOut=p2 Moment1Out=n1 Moment2Out=n2 Beta1PowOut=c1 Beta2PowOut=c2"));
  if (rt_ok(&r, "adam into new vars")) {
    rt_expect(rt_get(&r, "p2"), 2, ((double[]){0.9900000002, 1.9900000002}), 1e-9,
              "adam: ParamOut");
    rt_expect(rt_get(&r, "p"), 2, ((double[]){1, 2}), 0, "adam: Param unchanged");
    rt_expect(rt_get(&r, "m1"), 2, ((double[]){0, 0}), 0, "adam: Moment1 unchanged");
    rt_expect(rt_get(&r, "c2"), 1, ((double[]){0.998001}), 1e-15, "adam: fp64 Beta2PowOut");
  }
  rt_free(&r);
}

int main(void) {
  pd_k_init();
  test_sgd();
  test_momentum();
  test_adam();
  return tap_done();
}
