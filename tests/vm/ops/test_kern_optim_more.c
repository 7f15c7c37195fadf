/* test_kern_optim_more.c -- the optimizer ops adamw (decoupled weight decay, lr_ratio,
 * with_decay off), rmsprop (plain, momentum, centered) and adagrad: three steps each, run in
 * place as the optimizer pass binds them, against the update rules written out here, in fp64
 * and fp32; and bad input. */
#include "config.h"

#include <math.h>

#include "tests/vm/ops/runop.h"

enum { N = 4, STEPS = 3 };

static const double P0[N] = {1, -2, 0.5, 3};
/* The gradient of step k (different each step). */
static double grad_at(int k, int i) { return sin(1.0 + k * 1.7 + i * 0.9) * (1 + i); }

/* Put the gradient of step k into var g. */
static void set_grad(rt *r, pd_dtype dt, int k) {
  double g[N];
  float f[N];
  for (int i = 0; i < N; i++) f[i] = (float)(g[i] = grad_at(k, i));
  pd_tensor *t = pd_var_tensor(pd_scope_var(r->scope, "g"));
  if (!t || pd_tensor_set_data(t, dt, 1, (int64_t[]){N}, dt == PD_FP32 ? (void *)f : (void *)g))
    bail("out of memory");
}

static pd_tensor *in_dt(rt *r, const char *name, pd_dtype dt, const char *shape, int n,
                        const double *v) {
  float f[N];
  for (int i = 0; i < n; i++) f[i] = (float)v[i];
  return rt_in(r, name, dt, shape, dt == PD_FP32 ? (void *)f : (const void *)v);
}

static void test_adamw(void) {
  for (int variant = 0; variant < 3; variant++)
    for (int fp32 = 0; fp32 < 2; fp32++) {
      pd_dtype dt = fp32 ? PD_FP32 : PD_FP64;
      double lr = 0.05, b1 = 0.8, b2 = 0.95, eps = 1e-3, coeff = 0.1, ratio = variant == 1 ? 0.5 : 1;
      bool decay = variant != 2;
      rt r;
      rt_init(&r);
      double zero[N] = {0};
      in_dt(&r, "p", dt, "[4]", N, P0);
      in_dt(&r, "g", dt, "[4]", N, zero);
      in_dt(&r, "m1", dt, "[4]", N, zero);
      in_dt(&r, "m2", dt, "[4]", N, zero);
      in_dt(&r, "lr", dt, "[1]", 1, &lr);
      in_dt(&r, "b1p", dt, "[1]", 1, &b1);
      in_dt(&r, "b2p", dt, "[1]", 1, &b2);
      pd_op_desc *op = rt_op(&r, "adamw",
                             "Param=p Grad=g LearningRate=lr Moment1=m1 Moment2=m2 Beta1Pow=b1p "
                             "Beta2Pow=b2p",
                             "ParamOut=p Moment1Out=m1 Moment2Out=m2 Beta1PowOut=b1p "
                             "Beta2PowOut=b2p");
      pd_op_set_attr_float(op, "beta1", (float)b1);
      pd_op_set_attr_float(op, "beta2", (float)b2);
      pd_op_set_attr_float(op, "epsilon", (float)eps);
      pd_op_set_attr_float(op, "coeff", (float)coeff);
      pd_op_set_attr_float(op, "lr_ratio", (float)ratio);
      pd_op_set_attr_bool(op, "with_decay", decay);
      /* The reference, from the update rule (attrs as the op sees them: through float). */
      double bp1 = fp32 ? (float)b1 : b1, bp2 = fp32 ? (float)b2 : b2;  /* as the tensors */
      b1 = (float)b1, b2 = (float)b2, eps = (float)eps, coeff = (float)coeff;
      double p[N], m[N] = {0}, v[N] = {0};
      memcpy(p, P0, sizeof p);
      bool all = true;
      for (int k = 0; k < STEPS && all; k++) {
        set_grad(&r, dt, k);
        all = rt_ok(&r, "adamw step");
        double l = lr * ratio;
        for (int i = 0; i < N; i++) {
          double gi = grad_at(k, i);
          m[i] = b1 * m[i] + (1 - b1) * gi;
          v[i] = b2 * v[i] + (1 - b2) * gi * gi;
          double mhat = m[i] / (1 - bp1), vhat = v[i] / (1 - bp2);
          /* decoupled decay, then Adam's bias-corrected step */
          p[i] = p[i] - l * (decay ? coeff : 0) * p[i] - l * mhat / (sqrt(vhat) + eps);
        }
        bp1 *= b1;
        bp2 *= b2;
      }
      char what[96];
      snprintf(what, sizeof what, "adamw %s %s: p after 3 steps", fp32 ? "fp32" : "fp64",
               variant == 0 ? "decay" : variant == 1 ? "lr_ratio 0.5" : "with_decay false");
      double tol = fp32 ? 1e-5 : 1e-12;
      if (all) {
        rt_expect(rt_get(&r, "p"), N, p, tol, what);
        rt_expect(rt_get(&r, "m1"), N, m, tol, "adamw: Moment1");
        rt_expect(rt_get(&r, "m2"), N, v, tol, "adamw: Moment2");
        rt_expect(rt_get(&r, "b1p"), 1, &bp1, tol, "adamw: Beta1Pow");
        rt_expect(rt_get(&r, "b2p"), 1, &bp2, tol, "adamw: Beta2Pow");
      }
      rt_free(&r);
    }
}

static void test_rmsprop(void) {
  for (int variant = 0; variant < 3; variant++)
    for (int fp32 = 0; fp32 < 2; fp32++) {
      pd_dtype dt = fp32 ? PD_FP32 : PD_FP64;
      double lr = 0.01, rho = 0.9, eps = 1e-4, mu = variant ? 0.5 : 0;
      bool centered = variant == 2;
      rt r;
      rt_init(&r);
      double zero[N] = {0};
      in_dt(&r, "p", dt, "[4]", N, P0);
      in_dt(&r, "g", dt, "[4]", N, zero);
      in_dt(&r, "ms", dt, "[4]", N, zero);
      in_dt(&r, "mom", dt, "[4]", N, zero);
      in_dt(&r, "mg", dt, "[4]", N, zero);
      in_dt(&r, "lr", dt, "[1]", 1, &lr);
      pd_op_desc *op =
          rt_op(&r, "rmsprop",
                centered ? "Param=p Grad=g MeanSquare=ms Moment=mom MeanGrad=mg LearningRate=lr"
                         : "Param=p Grad=g MeanSquare=ms Moment=mom LearningRate=lr",
                centered ? "ParamOut=p MeanSquareOut=ms MomentOut=mom MeanGradOut=mg"
                         : "ParamOut=p MeanSquareOut=ms MomentOut=mom");
      pd_op_set_attr_float(op, "epsilon", (float)eps);
      pd_op_set_attr_float(op, "decay", (float)rho);
      pd_op_set_attr_float(op, "momentum", (float)mu);
      pd_op_set_attr_bool(op, "centered", centered);
      rho = (float)rho, eps = (float)eps, mu = (float)mu;
      double p[N], s[N] = {0}, m[N] = {0}, a[N] = {0};
      memcpy(p, P0, sizeof p);
      bool all = true;
      for (int k = 0; k < STEPS && all; k++) {
        set_grad(&r, dt, k);
        all = rt_ok(&r, "rmsprop step");
        for (int i = 0; i < N; i++) {
          double gi = grad_at(k, i);
          s[i] = rho * s[i] + (1 - rho) * gi * gi;
          a[i] = rho * a[i] + (1 - rho) * gi;
          double var = centered ? s[i] - a[i] * a[i] : s[i];
          m[i] = mu * m[i] + lr * gi / sqrt(var + eps);
          p[i] -= m[i];
        }
      }
      char what[96];
      snprintf(what, sizeof what, "rmsprop %s %s: p after 3 steps", fp32 ? "fp32" : "fp64",
               variant == 0 ? "plain" : variant == 1 ? "momentum" : "centered");
      double tol = fp32 ? 1e-5 : 1e-12;
      if (all) {
        rt_expect(rt_get(&r, "p"), N, p, tol, what);
        rt_expect(rt_get(&r, "ms"), N, s, tol, "rmsprop: MeanSquare");
        rt_expect(rt_get(&r, "mom"), N, m, tol, "rmsprop: Moment");
        if (centered) rt_expect(rt_get(&r, "mg"), N, a, tol, "rmsprop: MeanGrad");
      }
      rt_free(&r);
    }
}

static void test_adagrad(void) {
  for (int fp32 = 0; fp32 < 2; fp32++) {
    pd_dtype dt = fp32 ? PD_FP32 : PD_FP64;
    double lr = 0.1, eps = 1e-2, m0[N] = {0.1, 0, 0.5, 1};
    rt r;
    rt_init(&r);
    double zero[N] = {0};
    in_dt(&r, "p", dt, "[4]", N, P0);
    in_dt(&r, "g", dt, "[4]", N, zero);
    in_dt(&r, "m", dt, "[4]", N, m0);
    in_dt(&r, "lr", dt, "[1]", 1, &lr);
    pd_op_set_attr_float(rt_op(&r, "adagrad", "Param=p Grad=g Moment=m LearningRate=lr",
                               "ParamOut=p MomentOut=m"),
                         "epsilon", (float)eps);
    eps = (float)eps;
    double p[N], m[N];
    memcpy(p, P0, sizeof p);
    memcpy(m, m0, sizeof m);
    bool all = true;
    for (int k = 0; k < STEPS && all; k++) {
      set_grad(&r, dt, k);
      all = rt_ok(&r, "adagrad step");
      for (int i = 0; i < N; i++) {
        double gi = grad_at(k, i);
        m[i] += gi * gi;
        p[i] -= lr * gi / (sqrt(m[i]) + eps);
      }
    }
    double tol = fp32 ? 1e-5 : 1e-12;
    if (all) {
      rt_expect(rt_get(&r, "p"), N, p, tol,
                fp32 ? "adagrad fp32: p after 3 steps" : "adagrad fp64: p after 3 steps");
      rt_expect(rt_get(&r, "m"), N, m, tol, "adagrad: Moment");
    }
    rt_free(&r);
  }

  rt r;
  rt_init(&r);
  rt_in_f64(&r, "p", "[2]", (double[]){1, 2});
  rt_in_f64(&r, "g", "[2]", (double[]){1, 2});
  rt_in_f64(&r, "m", "[3]", (double[]){1, 2, 3});
  rt_in_f64(&r, "lr", "[1]", (double[]){0.1});
  decl(r.f.b, "m", PD_FP64, "[-1]");
  rt_op(&r, "adagrad", "Param=p Grad=g Moment=m LearningRate=lr", "ParamOut=p MomentOut=m");
  rt_fails(&r, PD_ESHAPE, "Moment [3] must have the shape of Param [2]",
           "adagrad: a Moment of another shape");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "p", "[2]", (double[]){1, 2});
  rt_in_f64(&r, "g", "[2]", (double[]){1, 2});
  rt_in_f64(&r, "ms", "[2]", (double[]){0, 0});
  rt_in_f64(&r, "mom", "[2]", (double[]){0, 0});
  rt_in_f64(&r, "lr", "[1]", (double[]){0.1});
  pd_op_set_attr_bool(rt_op(&r, "rmsprop", "Param=p Grad=g MeanSquare=ms Moment=mom LearningRate=lr",
                            "ParamOut=p MeanSquareOut=ms MomentOut=mom"),
                      "centered", true);
  rt_fails(&r, PD_EINVAL, "MeanGrad", "rmsprop: centered without MeanGrad");
  rt_free(&r);
}

int main(void) {
  test_adamw();
  test_rmsprop();
  test_adagrad();
  return tap_done();
}
