/* test_kern_loss_elem.c -- the elementwise losses of vm/ops/loss_elem.c:
 * sigmoid_cross_entropy_with_logits (ignore_index, normalize), smooth_l1_loss (sigma, the
 * weights), huber_loss (delta) and kldiv_loss (every reduction): forward values against the
 * formulas written here, fp64 finite-difference gradients of every input over several shapes
 * (size-1 dims included), and bad input. */
#include "config.h"

#include <math.h>

#include "tests/vm/ops/gradcheck.h"

/* Values in [-2, 2) away from 0 and from each other (an LCG). */
static void fill(double *v, int n, uint64_t seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(seed >> 11) / 9007199254740992.0;
    v[i] = (u * 4 - 2);
    if (fabs(v[i]) < 0.05) v[i] += 0.1;
  }
}

static const char *const shapes[] = {"[4, 3]", "[1, 5]", "[3, 1]", "[2, 3, 2]", "[1, 1]"};
static int numel_of(const char *s) {
  int64_t d[16];
  int nd = parse_shape(s, d);
  int n = 1;
  for (int i = 0; i < nd; i++) n *= (int)d[i];
  return n;
}

/* ---------------------------------------------------------------- sigmoid_cross_entropy */

static double ref_sxe(double x, double z) { return fmax(x, 0) - x * z + log(1 + exp(-fabs(x))); }

static void test_sigmoid_xent(void) {
  /* Values: Out = max(x, 0) - x z + log(1 + exp(-|x|)), which is -z log s(x) - (1-z) log(1-s(x)). */
  rt r;
  rt_init(&r);
  double x[6] = {-3, -0.5, 0, 0.5, 2, 40}, z[6] = {1, 0, 0.5, 0.25, 1, 0};
  rt_in_f64(&r, "x", "[2, 3]", x);
  rt_in_f64(&r, "z", "[2, 3]", z);
  rt_op(&r, "sigmoid_cross_entropy_with_logits", "X=x Label=z", "Out=o");
  double want[6];
  for (int i = 0; i < 6; i++) {
    double s = 1 / (1 + exp(-x[i]));
    want[i] = i == 5 ? 40 : -z[i] * log(s) - (1 - z[i]) * log(1 - s);
  }
  if (rt_ok(&r, "sigmoid_cross_entropy_with_logits"))
    rt_expect(rt_get(&r, "o"), 6, want, 1e-12, "sigmoid xent: the cross entropy of sigmoid(x)");
  rt_free(&r);

  /* fp32, ignore_index and normalize: ignored labels give 0; the rest / their count (4). */
  rt_init(&r);
  rt_in_f32(&r, "x", "[6]", (float[]){1, -1, 2, 0.5f, -2, 3});
  rt_in_f32(&r, "z", "[6]", (float[]){1, -1, 0, 1, -1, 0.5f});
  pd_op_desc *op = rt_op(&r, "sigmoid_cross_entropy_with_logits", "X=x Label=z", "Out=o");
  pd_op_set_attr_int(op, "ignore_index", -1);
  pd_op_set_attr_bool(op, "normalize", true);
  double xs[6] = {1, -1, 2, 0.5, -2, 3}, zs[6] = {1, -1, 0, 1, -1, 0.5};
  for (int i = 0; i < 6; i++) want[i] = zs[i] == -1 ? 0 : ref_sxe(xs[i], zs[i]) / 4;
  if (rt_ok(&r, "sigmoid xent fp32, ignore_index, normalize"))
    rt_expect(rt_get(&r, "o"), 6, want, 1e-6, "sigmoid xent: ignored 0, normalised by 4");
  rt_free(&r);

  for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++) {
    for (int norm = 0; norm < 2; norm++) {
      double xv[16], zv[16];
      int n = numel_of(shapes[s]);
      fill(xv, n, 7 + s);
      fill(zv, n, 99 + s);
      for (int i = 0; i < n; i++) zv[i] = (zv[i] + 2) / 4;  /* in [0, 1) */
      /* An ignored label (-100) is a step of the loss: X's gradient only then. */
      bool ign = norm && n > 1;
      if (ign) zv[0] = -100;
      rt_init(&r);
      rt_in_f64(&r, "x", shapes[s], xv);
      rt_in_f64(&r, "z", shapes[s], zv);
      op = rt_op(&r, "sigmoid_cross_entropy_with_logits", "X=x Label=z", "Out=o");
      pd_op_set_attr_bool(op, "normalize", norm);
      char what[96];
      snprintf(what, sizeof what, "sigmoid xent %s%s", shapes[s], norm ? " normalize" : "");
      grad_check(&r, ign ? "X" : "X Label", "Out", what);
      rt_free(&r);
    }
  }

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", x);
  rt_in_f64(&r, "z", "[3, 2]", z);
  rt_op(&r, "sigmoid_cross_entropy_with_logits", "X=x Label=z", "Out=o");
  rt_fails(&r, PD_ESHAPE, "X [2, 3] and Label [3, 2] must have the same shape",
           "sigmoid xent: Label of another shape");
  rt_free(&r);
}

/* ---------------------------------------------------------------- smooth_l1_loss */

static double ref_sl1(double d, double s2) {
  return fabs(d) < 1 / s2 ? 0.5 * s2 * d * d : fabs(d) - 0.5 / s2;
}

static void test_smooth_l1(void) {
  rt r;
  rt_init(&r);
  double x[6] = {0, 1, 2, -1, 0.5, 3}, y[6] = {0.5, -1, 2.2, 1, 0, 0};
  rt_in_f64(&r, "x", "[2, 3]", x);
  rt_in_f64(&r, "y", "[2, 3]", y);
  rt_op(&r, "smooth_l1_loss", "X=x Y=y", "Diff=d Out=o");
  /* sigma 1: rows sum 0.5 d^2 (|d| < 1) or |d| - 0.5. Row 0: d = -0.5, 2, -0.2 -> 0.125 + 1.5 +
   * 0.02; row 1: d = -2, 0.5, 3 -> 1.5 + 0.125 + 2.5. */
  if (rt_ok(&r, "smooth_l1_loss")) {
    rt_expect(rt_get(&r, "o"), 2, ((double[]){1.645, 4.125}), 1e-12, "smooth_l1: row sums");
    rt_expect(rt_get(&r, "d"), 6, ((double[]){-0.5, 2, -0.2, -2, 0.5, 3}), 1e-12,
              "smooth_l1: Diff = x - y");
  }
  rt_free(&r);

  /* sigma 2, weights: diff = (x - y) * iw, out = sum ow * loss. */
  double iw[6] = {1, 0.5, 2, 1, 3, 0.1}, ow[6] = {2, 1, 1, 0.5, 1, 4};
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", x);
  rt_in_f64(&r, "y", "[2, 3]", y);
  rt_in_f64(&r, "iw", "[2, 3]", iw);
  rt_in_f64(&r, "ow", "[2, 3]", ow);
  pd_op_set_attr_float(rt_op(&r, "smooth_l1_loss", "X=x Y=y InsideWeight=iw OutsideWeight=ow",
                             "Diff=d Out=o"),
                       "sigma", 2.0f);
  double want[2] = {0, 0};
  for (int i = 0; i < 6; i++) want[i / 3] += ow[i] * ref_sl1((x[i] - y[i]) * iw[i], 4);
  if (rt_ok(&r, "smooth_l1_loss with weights and sigma"))
    rt_expect(rt_get(&r, "o"), 2, want, 1e-12, "smooth_l1: weights, sigma 2");
  rt_free(&r);

  const char *sh[] = {"[4, 3]", "[1, 5]", "[3, 1]", "[2, 3, 2]"};
  for (size_t s = 0; s < PD_ARRAY_LEN(sh); s++)
    for (int wts = 0; wts < 2; wts++) {
      double xv[16], yv[16], a[16], b[16];
      int n = numel_of(sh[s]);
      fill(xv, n, 3 + s);
      fill(yv, n, 33 + s);
      fill(a, n, 333 + s);
      fill(b, n, 3333 + s);
      for (int i = 0; i < n; i++) {
        a[i] = fabs(a[i]) + 0.2;
        /* Keep |diff| away from the kink at 1 / sigma^2 = 0.64. */
        if (fabs(fabs((xv[i] - yv[i]) * (wts ? a[i] : 1)) - 0.64) < 0.05) xv[i] += 0.2;
      }
      rt_init(&r);
      rt_in_f64(&r, "x", sh[s], xv);
      rt_in_f64(&r, "y", sh[s], yv);
      if (wts) {
        rt_in_f64(&r, "iw", sh[s], a);
        rt_in_f64(&r, "ow", sh[s], b);
      }
      pd_op_desc *op = rt_op(&r, "smooth_l1_loss",
                             wts ? "X=x Y=y InsideWeight=iw OutsideWeight=ow" : "X=x Y=y",
                             "Diff=d Out=o");
      pd_op_set_attr_float(op, "sigma", 1.25f);
      char what[96];
      snprintf(what, sizeof what, "smooth_l1_loss %s%s", sh[s], wts ? " weights" : "");
      grad_check(&r, wts ? "X Y InsideWeight OutsideWeight" : "X Y", "Out", what);
      rt_free(&r);
    }

  rt_init(&r);
  rt_in_f64(&r, "x", "[3]", x);
  rt_in_f64(&r, "y", "[3]", y);
  rt_op(&r, "smooth_l1_loss", "X=x Y=y", "Diff=d Out=o");
  rt_fails(&r, PD_ESHAPE, "X must have at least 2 dims [batch, ...], got [3]",
           "smooth_l1: X of one dim");
  rt_free(&r);
}

/* ---------------------------------------------------------------- huber_loss */

static void test_huber(void) {
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[4, 1]", (float[]){0, 1, 2, -1});
  rt_in_f32(&r, "y", "[4, 1]", (float[]){0.5f, -1, 5, -1.5f});
  pd_op_set_attr_float(rt_op(&r, "huber_loss", "X=x Y=y", "Out=o Residual=res"), "delta", 1.5f);
  /* r = y - x = 0.5, -2, 3, -0.5; |r| <= 1.5: 0.5 r^2, else 1.5 (|r| - 0.75). */
  if (rt_ok(&r, "huber_loss")) {
    rt_expect(rt_get(&r, "o"), 4, ((double[]){0.125, 1.875, 3.375, 0.125}), 1e-6,
              "huber: quadratic inside delta, linear outside");
    rt_expect(rt_get(&r, "res"), 4, ((double[]){0.5, -2, 3, -0.5}), 1e-6, "huber: Residual");
  }
  rt_free(&r);

  for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++) {
    double xv[16], yv[16];
    int n = numel_of(shapes[s]);
    fill(xv, n, 5 + s);
    fill(yv, n, 55 + s);
    for (int i = 0; i < n; i++)
      if (fabs(fabs(yv[i] - xv[i]) - 0.8) < 0.05) yv[i] += 0.2;
    rt_init(&r);
    rt_in_f64(&r, "x", shapes[s], xv);
    rt_in_f64(&r, "y", shapes[s], yv);
    pd_op_set_attr_float(rt_op(&r, "huber_loss", "X=x Y=y", "Out=o Residual=res"), "delta", 0.8f);
    char what[64];
    snprintf(what, sizeof what, "huber_loss %s", shapes[s]);
    grad_check(&r, "X Y", "Out", what);
    rt_free(&r);
  }

  rt_init(&r);
  rt_in_f64(&r, "x", "[2]", (double[]){1, 2});
  rt_in_f64(&r, "y", "[2]", (double[]){1, 2});
  pd_op_set_attr_float(rt_op(&r, "huber_loss", "X=x Y=y", "Out=o Residual=res"), "delta", 0.0f);
  rt_fails(&r, PD_EINVAL, "delta must be positive, got 0", "huber: delta 0");
  rt_free(&r);
}

/* ---------------------------------------------------------------- kldiv_loss */

static void test_kldiv(void) {
  double x[6] = {-1, -2, -0.5, -3, -1.5, -0.2}, t[6] = {0.2, 0.5, 0.3, 0, 0.6, 0.4};
  double l[6], sum = 0;
  for (int i = 0; i < 6; i++) {
    l[i] = t[i] > 0 ? t[i] * (log(t[i]) - x[i]) : 0;
    sum += l[i];
  }
  static const char *const reds[] = {"none", "sum", "mean", "batchmean"};
  double scale[] = {0, 1, 1.0 / 6, 1.0 / 2};
  for (int k = 0; k < 4; k++) {
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "x", "[2, 3]", x);
    rt_in_f64(&r, "t", "[2, 3]", t);
    pd_op_set_attr_string(rt_op(&r, "kldiv_loss", "X=x Target=t", "Loss=o"), "reduction", reds[k]);
    char what[64];
    snprintf(what, sizeof what, "kldiv_loss %s", reds[k]);
    if (rt_ok(&r, what)) {
      if (k == 0) rt_expect(rt_get(&r, "o"), 6, l, 1e-12, what);
      else rt_expect(rt_get(&r, "o"), 1, ((double[]){sum * scale[k]}), 1e-12, what);
    }
    rt_free(&r);
  }

  for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++)
    for (int k = 0; k < 8; k++) {
      double xv[16], tv[16];
      /* k >= 4: one target 0, where the loss is not differentiable in it: X's gradient only. */
      int n = numel_of(shapes[s]);
      fill(xv, n, 9 + s);
      fill(tv, n, 999 + s);
      for (int i = 0; i < n; i++) tv[i] = i == 1 && k >= 4 ? 0 : (tv[i] + 2.2) / 4;
      rt r;
      rt_init(&r);
      rt_in_f64(&r, "x", shapes[s], xv);
      rt_in_f64(&r, "t", shapes[s], tv);
      pd_op_set_attr_string(rt_op(&r, "kldiv_loss", "X=x Target=t", "Loss=o"), "reduction",
                            reds[k % 4]);
      char what[64];
      snprintf(what, sizeof what, "kldiv_loss %s %s%s", reds[k % 4], shapes[s],
               k >= 4 ? " a zero target" : "");
      grad_check(&r, k >= 4 ? "X" : "X Target", "Loss", what);
      rt_free(&r);
    }

  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", x);
  rt_in_f32(&r, "t", "[2, 3]", (float[]){1, 1, 1, 1, 1, 1});
  rt_op(&r, "kldiv_loss", "X=x Target=t", "Loss=o");
  rt_fails(&r, PD_ETYPE, "Target", "kldiv: Target of another dtype");
  rt_free(&r);
}

int main(void) {
  test_sigmoid_xent();
  test_smooth_l1();
  test_huber();
  test_kldiv();
  return tap_done();
}
