/* test_kern_loss.c -- the kernels of softmax and log_softmax (any axis), cross_entropy and
 * softmax_with_cross_entropy (hard int64/int32 and soft labels, ignore_index, a class axis
 * that is not the last) and accuracy, run through the executor against naive references
 * written here; LoD, in-place runs, run-time label errors, and finite-difference gradients. */
#include "config.h"

#include "tests/vm/ops/test_kern_math.h"

/* softmax (or log_softmax) of x viewed as [pre, n, post] along the middle axis. */
static void naive_softmax(int pre, int n, int post, const double *x, bool log_out, double *out) {
  for (int p = 0; p < pre; p++)
    for (int q = 0; q < post; q++) {
      const double *v = x + p * n * post + q;
      double mx = v[0], s = 0;
      for (int j = 1; j < n; j++) mx = v[j * post] > mx ? v[j * post] : mx;
      for (int j = 0; j < n; j++) s += exp(v[j * post] - mx);
      for (int j = 0; j < n; j++)
        out[p * n * post + q + j * post] =
            log_out ? v[j * post] - mx - log(s) : exp(v[j * post] - mx) / s;
    }
}

/* ---------------------------------------------------------------- softmax */

static void test_softmax(void) {
  const struct {
    const char *shape;
    int axis, pre, n, post;
  } cases[] = {
      {"[4, 5]", -1, 4, 5, 1},
      {"[2, 3, 4]", 1, 2, 3, 4},
      {"[2, 3, 4]", 0, 1, 2, 12},
      {"[3, 4]", -2, 1, 3, 4},
      {"[6]", 0, 1, 6, 1},
  };
  for (int lg = 0; lg < 2; lg++) {
    const char *type = lg ? "log_softmax" : "softmax";
    for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
      int n = cases[c].pre * cases[c].n * cases[c].post;
      double x[24], want[24];
      vals(x, n, -4, 4, 91 + c, false);
      for (int dt = 0; dt < 2; dt++) {
        rt r;
        rt_init(&r);
        if (dt == 0) {
          float xf[24];
          to_f32(x, xf, n);
          double xr[24];
          for (int i = 0; i < n; i++) xr[i] = xf[i];
          naive_softmax(cases[c].pre, cases[c].n, cases[c].post, xr, lg, want);
          rt_in_f32(&r, "x", cases[c].shape, xf);
        } else {
          naive_softmax(cases[c].pre, cases[c].n, cases[c].post, x, lg, want);
          rt_in_f64(&r, "x", cases[c].shape, x);
        }
        pd_op_set_attr_int(rt_op(&r, type, "X=x", "Out=o"), "axis", cases[c].axis);
        char what[96];
        snprintf(what, sizeof what, "%s %s axis %d (%s)", type, cases[c].shape, cases[c].axis,
                 dt ? "float64" : "float32");
        if (rt_ok(&r, what)) rt_expect(rt_get(&r, "o"), n, want, dt ? 1e-14 : 1e-6, what);
        if (dt == 1) {
          snprintf(what, sizeof what, "%s %s axis %d", type, cases[c].shape, cases[c].axis);
          grad_check(&r, "X", "Out", what);
        }
        rt_free(&r);
      }
    }

    /* In place, with LoD; stable for large inputs. */
    rt r;
    rt_init(&r);
    pd_tensor *x = rt_in_f64(&r, "x", "[2, 3]", D(1000, 1001, 1002, -1000, 0, 1000));
    rt_lod(&r, "x", 2, L(0, 2));
    void *before = pd_tensor_data(x);
    rt_op(&r, type, "X=x", "Out=x");
    char what[64];
    snprintf(what, sizeof what, "%s in place, inputs of 1000", type);
    if (rt_ok(&r, what)) {
      double want[6];
      naive_softmax(2, 3, 1, (const double[]){1000, 1001, 1002, -1000, 0, 1000}, lg, want);
      rt_expect(rt_get(&r, "x"), 6, want, 1e-12, what);  /* inputs of 1000: ulp ~1e-13 */
      ok(pd_tensor_data(rt_get(&r, "x")) == before, "%s: computed in place", what);
      ok(lod_is(rt_get(&r, "x"), 2, L(0, 2)), "%s: the LoD stays", what);
    }
    rt_free(&r);
  }

  /* softmax_grad written over Out@GRAD, with X's LoD. */
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 3]", D(0, 0, 0));
  rt_lod(&r, "x", 2, L(0, 1));
  rt_in_f64(&r, "y", "[1, 3]", D(0.2, 0.3, 0.5));
  rt_in_f64(&r, "g", "[1, 3]", D(1, 2, 3));
  rt_op(&r, "softmax_grad", "X=x Out=y Out@GRAD=g", "X@GRAD=g");
  if (rt_ok(&r, "softmax_grad over Out@GRAD")) {
    double dot = 0.2 * 1 + 0.3 * 2 + 0.5 * 3;
    rt_expect(rt_get(&r, "g"), 3, D(0.2 * (1 - dot), 0.3 * (2 - dot), 0.5 * (3 - dot)), 1e-15,
              "softmax_grad: Out * (dOut - sum(dOut * Out))");
    ok(lod_is(rt_get(&r, "g"), 2, L(0, 1)), "softmax_grad: X@GRAD takes X's LoD");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- cross_entropy */

static void test_cross_entropy(void) {
  /* Probabilities [4, 3] (rows need not sum to 1 for the op). */
  const double p[] = {0.2, 0.5, 0.3, 0.1, 0.1, 0.8, 0.6, 0.3, 0.1, 0.25, 0.25, 0.5};
  const int64_t lab[] = {1, 2, 0, 2};
  for (int dt = 0; dt < 2; dt++) {
    rt r;
    rt_init(&r);
    if (dt == 0) {
      float pf[12];
      to_f32(p, pf, 12);
      rt_in_f32(&r, "p", "[4, 3]", pf);
    } else {
      rt_in_f64(&r, "p", "[4, 3]", p);
    }
    rt_lod(&r, "p", 3, L(0, 1, 4));
    rt_in_i64(&r, "l", "[4, 1]", lab);
    rt_op(&r, "cross_entropy", "X=p Label=l", "Y=y");
    const char *what = dt ? "cross_entropy hard float64" : "cross_entropy hard float32";
    if (rt_ok(&r, what)) {
      double want[4];
      for (int i = 0; i < 4; i++) want[i] = -log(p[i * 3 + lab[i]]);
      rt_expect(rt_get(&r, "y"), 4, want, dt ? 1e-15 : 1e-6, what);
      ok(lod_is(rt_get(&r, "y"), 3, L(0, 1, 4)), "%s: X's LoD", what);
    }
    if (dt) grad_check(&r, "X", "Y", "cross_entropy hard");
    rt_free(&r);
  }

  /* int32 labels, ignore_index, a 3-D X. */
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "p", "[2, 2, 3]", p);
  rt_in(&r, "l", PD_INT32, "[2, 2, 1]", I(1, 7, 0, 2));
  pd_op_set_attr_int(rt_op(&r, "cross_entropy", "X=p Label=l", "Y=y"), "ignore_index", 7);
  if (rt_ok(&r, "cross_entropy, int32 labels, ignore_index, 3-D")) {
    rt_expect(rt_get(&r, "y"), 4, D(-log(0.5), 0, -log(0.6), -log(0.5)), 1e-15,
              "cross_entropy: an ignored row has loss 0");
    const pd_tensor *y = rt_get(&r, "y");
    ok(y && y->ndims == 3 && y->dims[2] == 1, "cross_entropy: Y is [2, 2, 1]");
  }
  grad_check(&r, "X", "Y", "cross_entropy with an ignored row");
  rt_free(&r);

  /* Soft labels. */
  const double soft[] = {0.1, 0.6, 0.3, 0, 0, 1, 0.5, 0.5, 0, 0.2, 0.2, 0.6};
  rt_init(&r);
  rt_in_f64(&r, "p", "[4, 3]", p);
  rt_in_f64(&r, "l", "[4, 3]", soft);
  pd_op_set_attr_bool(rt_op(&r, "cross_entropy", "X=p Label=l", "Y=y"), "soft_label", true);
  if (rt_ok(&r, "cross_entropy soft")) {
    double want[4] = {0};
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 3; j++) want[i] -= soft[i * 3 + j] * log(p[i * 3 + j]);
    rt_expect(rt_get(&r, "y"), 4, want, 1e-15, "cross_entropy soft: -sum(label * log(X))");
  }
  grad_check(&r, "X", "Y", "cross_entropy soft");
  rt_free(&r);

  /* A label out of range at run time. */
  rt_init(&r);
  rt_in_f32(&r, "p", "[4, 3]", F(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1));
  rt_in_i64(&r, "l", "[4, 1]", L(0, 1, 2, 3));
  rt_op(&r, "cross_entropy", "X=p Label=l", "Y=y");
  rt_fails(&r, PD_EINVAL, "cross_entropy: label 3 out of range [0, 3) in row 3",
           "cross_entropy: a label out of range");
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "p", "[4, 3]", F(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1));
  rt_in_i64(&r, "l", "[3, 1]", L(0, 1, 2));
  decl(r.f.b, "p", PD_FP32, "[-1, 3]");
  decl(r.f.b, "l", PD_INT64, "[-1, 1]");
  rt_op(&r, "cross_entropy", "X=p Label=l", "Y=y");
  rt_fails(&r, PD_ESHAPE, "cross_entropy: hard Label (var 'l') [3, 1] does not fit X [4, 3]",
           "cross_entropy: a batch mismatch at run time");
  rt_free(&r);
}

/* ---------------------------------------------------------------- softmax_with_cross_entropy */

static void swce_case(const char *shape, int axis, int pre, int n, int post, bool soft,
                      int64_t ignore, const char *what) {
  int total = pre * n * post, rows = pre * post;
  double x[24], lab[24], logsm[24], sm[24], want[8];
  vals(x, total, -3, 3, 101, false);
  naive_softmax(pre, n, post, x, true, logsm);
  naive_softmax(pre, n, post, x, false, sm);
  int64_t hard[8];
  for (int r = 0; r < rows; r++) {
    int p = r / post, q = r % post;
    hard[r] = (r * 2 + 1) % n;
    if (r == 1 && ignore >= 0) hard[r] = ignore;
    want[r] = 0;
    if (soft) {
      double s = 0;
      for (int j = 0; j < n; j++) s += lab[p * n * post + j * post + q] = 1.0 + (r + j) % 3;
      for (int j = 0; j < n; j++) lab[p * n * post + j * post + q] /= s;
      for (int j = 0; j < n; j++)
        want[r] -= lab[p * n * post + j * post + q] * logsm[p * n * post + j * post + q];
    } else if (hard[r] != ignore) {
      want[r] = -logsm[p * n * post + hard[r] * post + q];
    }
  }
  char lshape[64];
  if (soft) {
    snprintf(lshape, sizeof lshape, "%s", shape);
  } else {  /* the shape with 1 along the class axis */
    int64_t d[8];
    int nd = parse_shape(shape, d), a = axis < 0 ? axis + nd : axis;
    d[a] = 1;
    size_t k = 0;
    k += (size_t)snprintf(lshape + k, sizeof lshape - k, "[");
    for (int i = 0; i < nd; i++)
      k += (size_t)snprintf(lshape + k, sizeof lshape - k, "%s%lld", i ? ", " : "", (long long)d[i]);
    snprintf(lshape + k, sizeof lshape - k, "]");
  }
  for (int dt = 0; dt < 2; dt++) {
    rt r;
    rt_init(&r);
    if (dt == 0) {
      float xf[24], lf[24];
      to_f32(x, xf, total);
      rt_in_f32(&r, "x", shape, xf);
      if (soft) {
        to_f32(lab, lf, total);
        rt_in_f32(&r, "l", lshape, lf);
      }
    } else {
      rt_in_f64(&r, "x", shape, x);
      if (soft) rt_in_f64(&r, "l", lshape, lab);
    }
    if (!soft) rt_in_i64(&r, "l", lshape, hard);
    rt_lod(&r, "x", 2, L(0, 2));
    pd_op_desc *op = rt_op(&r, "softmax_with_cross_entropy", "Logits=x Label=l", "Softmax=s Loss=loss");
    pd_op_set_attr_int(op, "axis", axis);
    pd_op_set_attr_bool(op, "soft_label", soft);
    if (ignore >= 0) pd_op_set_attr_int(op, "ignore_index", (int)ignore);
    char w[160];
    snprintf(w, sizeof w, "%s (%s)", what, dt ? "float64" : "float32");
    if (rt_ok(&r, w)) {
      double tol = dt ? 1e-14 : 2e-6;
      rt_expect(rt_get(&r, "s"), total, sm, tol, w);
      rt_expect(rt_get(&r, "loss"), rows, want, tol, w);
      ok(lod_is(rt_get(&r, "s"), 2, L(0, 2)) && lod_is(rt_get(&r, "loss"), 2, L(0, 2)),
         "%s: Softmax and Loss keep Logits' LoD", w);
    }
    if (dt == 1) grad_check(&r, "Logits", "Loss", what);
    rt_free(&r);
  }
}

static void test_softmax_xent(void) {
  swce_case("[4, 5]", -1, 4, 5, 1, false, -1, "softmax_with_cross_entropy hard");
  swce_case("[4, 5]", -1, 4, 5, 1, false, 3, "softmax_with_cross_entropy hard, ignore_index");
  swce_case("[4, 5]", 1, 4, 5, 1, true, -1, "softmax_with_cross_entropy soft");
  swce_case("[2, 3, 4]", 1, 2, 3, 4, false, -1, "softmax_with_cross_entropy hard, axis 1");
  swce_case("[2, 3, 4]", -2, 2, 3, 4, true, -1, "softmax_with_cross_entropy soft, axis 1");
  swce_case("[2, 3, 4]", 1, 2, 3, 4, false, 2, "softmax_with_cross_entropy axis 1, ignore_index");

  /* Softmax not bound; a label out of range; logits that only disagree at run time. */
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", F(1, 2, 3, 0, 0, 0));
  rt_in_i64(&r, "l", "[2, 1]", L(2, 0));
  rt_op(&r, "softmax_with_cross_entropy", "Logits=x Label=l", "Loss=loss");
  if (rt_ok(&r, "softmax_with_cross_entropy without Softmax")) {
    double s = exp(1) + exp(2) + exp(3);
    rt_expect(rt_get(&r, "loss"), 2, D(log(s) - 3, log(3)), 1e-6,
              "softmax_with_cross_entropy without Softmax: the loss");
  }
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", F(1, 2, 3, 0, 0, 0));
  rt_in_i64(&r, "l", "[2, 1]", L(2, -1));
  rt_op(&r, "softmax_with_cross_entropy", "Logits=x Label=l", "Softmax=s Loss=loss");
  rt_fails(&r, PD_EINVAL, "softmax_with_cross_entropy: label -1 out of range [0, 3) in row 1",
           "softmax_with_cross_entropy: a label out of range");
  rt_free(&r);

  /* The gradient op, written over Softmax (the backend allows it). */
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", D(0, 0, 0, 0, 0, 0));
  pd_tensor *s = rt_in_f64(&r, "s", "[2, 3]", D(0.2, 0.3, 0.5, 0.1, 0.1, 0.8));
  void *before = pd_tensor_data(s);
  rt_in_i64(&r, "l", "[2, 1]", L(2, 0));
  rt_in_f64(&r, "g", "[2, 1]", D(2, -1));
  rt_op(&r, "softmax_with_cross_entropy_grad", "Logits=x Softmax=s Label=l Loss@GRAD=g",
        "Logits@GRAD=s");
  if (rt_ok(&r, "softmax_with_cross_entropy_grad over Softmax"))
  {
    rt_expect(rt_get(&r, "s"), 6, D(0.4, 0.6, -1, 0.9, -0.1, -0.8), 1e-15,
              "softmax_with_cross_entropy_grad: (Softmax - onehot) * dLoss");
    ok(pd_tensor_data(rt_get(&r, "s")) == before, "softmax_with_cross_entropy_grad: in place");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- accuracy */

static void test_accuracy(void) {
  for (int narrow = 0; narrow < 2; narrow++) {
    rt r;
    rt_init(&r);
    rt_in_f32(&r, "v", "[5, 2]", F(0.9f, 0.1f, 0.8f, 0.2f, 0.5f, 0.4f, 0.7f, 0.3f, 0.6f, 0.3f));
    if (narrow) {
      rt_in(&r, "i", PD_INT32, "[5, 2]", I(3, 1, 0, 2, 4, 3, 1, 0, 2, 2));
      rt_in(&r, "l", PD_INT32, "[5, 1]", I(1, 2, 0, 0, 2));
    } else {
      rt_in_i64(&r, "i", "[5, 2]", L(3, 1, 0, 2, 4, 3, 1, 0, 2, 2));
      rt_in_i64(&r, "l", "[5, 1]", L(1, 2, 0, 0, 2));
    }
    rt_op(&r, "accuracy", "Out=v Indices=i Label=l", "Accuracy=a Correct=c Total=t");
    const char *what = narrow ? "accuracy, int32 indices and labels" : "accuracy";
    if (rt_ok(&r, what)) {
      /* Rows 0 (index 1 second), 1, 3 and 4 hit; row 2 misses. */
      rt_expect(rt_get(&r, "a"), 1, D(0.8), 1e-7, what);
      rt_expect(rt_get(&r, "c"), 1, D(4), 0, "accuracy: Correct");
      rt_expect(rt_get(&r, "t"), 1, D(5), 0, "accuracy: Total");
      ok(rt_get(&r, "a")->dtype == PD_FP32 && rt_get(&r, "c")->dtype == PD_INT32,
         "accuracy: float32 Accuracy, int32 counts");
    }
    rt_free(&r);
  }
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "v", "[0, 1]", F(0));
  rt_in_i64(&r, "i", "[0, 1]", L(0));
  rt_in_i64(&r, "l", "[0, 1]", L(0));
  rt_op(&r, "accuracy", "Out=v Indices=i Label=l", "Accuracy=a Correct=c Total=t");
  if (rt_ok(&r, "accuracy of an empty batch")) {
    rt_expect(rt_get(&r, "a"), 1, D(0), 0, "accuracy of an empty batch is 0");
    rt_expect(rt_get(&r, "t"), 1, D(0), 0, "accuracy of an empty batch: Total 0");
  }
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "v", "[2, 1]", F(1, 1));
  rt_in_i64(&r, "i", "[2, 1]", L(0, 0));
  rt_in_i64(&r, "l", "[2, 1]", L(0, -3));
  rt_op(&r, "accuracy", "Out=v Indices=i Label=l", "Accuracy=a Correct=c Total=t");
  rt_fails(&r, PD_EINVAL, "accuracy: label -3 in row 1 is negative", "accuracy: a negative label");
  rt_free(&r);
}

int main(void) {
  test_softmax();
  test_cross_entropy();
  test_softmax_xent();
  test_accuracy();
  return tap_done();
}
