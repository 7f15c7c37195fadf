/* test_kern_math.c -- the kernels of the unary ops (abs, exp, log, relu, sigmoid, sqrt, square,
 * tanh), scale, cast, sum and mean, run through the executor: values against libm and naive
 * references written here, int dtypes, LoD, in-place runs (Out the same var as X) and storage
 * shared with a caller's tensor, run-time errors, and finite-difference gradients. */
#include "config.h"

#include "tests/vm/ops/test_kern_math.h"

/* ---------------------------------------------------------------- unary ops */

static double r_abs(double x) { return fabs(x); }
static double r_relu(double x) { return x > 0 ? x : 0; }
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_square(double x) { return x * x; }
static double r_exp(double x) { return exp(x); }
static double r_log(double x) { return log(x); }
static double r_sqrt(double x) { return sqrt(x); }
static double r_tanh(double x) { return tanh(x); }

static const struct {
  const char *type;
  double (*f)(double);
  double lo, hi;
} unaries[] = {
    {"abs", r_abs, -3, 3},         {"exp", r_exp, -3, 3},       {"log", r_log, 0.1, 5},
    {"relu", r_relu, -3, 3},       {"sigmoid", r_sigmoid, -5, 5}, {"sqrt", r_sqrt, 0.1, 9},
    {"square", r_square, -3, 3},   {"tanh", r_tanh, -3, 3},
};

static void test_unary(void) {
  for (size_t u = 0; u < PD_ARRAY_LEN(unaries); u++) {
    const char *type = unaries[u].type;
    double xs[12], want[12];
    float xf[12];
    char what[96];
    vals(xs, 12, unaries[u].lo, unaries[u].hi, 7 + u, true);
    to_f32(xs, xf, 12);

    /* float32, with LoD. */
    rt r;
    rt_init(&r);
    rt_in_f32(&r, "x", "[3, 4]", xf);
    int64_t lod[] = {0, 1, 3};
    rt_lod(&r, "x", 3, lod);
    rt_op(&r, type, "X=x", "Out=y");
    snprintf(what, sizeof what, "%s float32", type);
    if (rt_ok(&r, what)) {
      for (int i = 0; i < 12; i++) want[i] = unaries[u].f((double)xf[i]);
      rt_expect(rt_get(&r, "y"), 12, want, 2e-6, what);
      snprintf(what, sizeof what, "%s keeps X's LoD", type);
      ok(lod_is(rt_get(&r, "y"), 3, lod), "%s", what);
    }
    rt_free(&r);

    /* float64, in place: Out is X. */
    rt_init(&r);
    pd_tensor *x = rt_in_f64(&r, "x", "[2, 3, 2]", xs);
    void *before = pd_tensor_data(x);
    rt_op(&r, type, "X=x", "Out=x");
    snprintf(what, sizeof what, "%s float64 in place", type);
    if (rt_ok(&r, what)) {
      for (int i = 0; i < 12; i++) want[i] = unaries[u].f(xs[i]);
      rt_expect(rt_get(&r, "x"), 12, want, 1e-14, what);
      snprintf(what, sizeof what, "%s in place keeps the storage", type);
      ok(pd_tensor_data(rt_get(&r, "x")) == before, "%s", what);
    }
    rt_free(&r);

    /* The gradient. */
    rt_init(&r);
    rt_in_f64(&r, "x", "[3, 4]", xs);
    rt_op(&r, type, "X=x", "Out=y");
    grad_check(&r, "X", "Out", type);
    rt_free(&r);
  }
}

/* relu, abs and square also take integers; other dtypes are refused at run time. */
static void test_unary_int(void) {
  const int64_t xl[] = {-3, 0, 5, -7, 2, 9};
  const int32_t xi[] = {-3, 0, 5, -7, 2, 9};
  const struct {
    const char *type;
    double want[6];
  } cases[] = {
      {"relu", {0, 0, 5, 0, 2, 9}},
      {"abs", {3, 0, 5, 7, 2, 9}},
      {"square", {9, 0, 25, 49, 4, 81}},
  };
  for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
    char what[64];
    rt r;
    rt_init(&r);
    rt_in_i64(&r, "x", "[2, 3]", xl);
    rt_op(&r, cases[c].type, "X=x", "Out=y");
    snprintf(what, sizeof what, "%s int64", cases[c].type);
    if (rt_ok(&r, what)) rt_expect(rt_get(&r, "y"), 6, cases[c].want, 0, what);
    rt_free(&r);

    rt_init(&r);
    rt_in(&r, "x", PD_INT32, "[6]", xi);
    rt_op(&r, cases[c].type, "X=x", "Out=x");
    snprintf(what, sizeof what, "%s int32 in place", cases[c].type);
    if (rt_ok(&r, what)) rt_expect(rt_get(&r, "x"), 6, cases[c].want, 0, what);
    rt_free(&r);
  }
  rt r;
  rt_init(&r);
  rt_in(&r, "b", PD_BOOL, "[2]", (uint8_t[]){1, 0});
  rt_op(&r, "relu", "X=b", "Out=y");
  rt_fails(&r, PD_ETYPE, "relu: X (var 'b') has dtype bool; expected float32, float64, int32 or int64",
           "relu of bools is refused at run time");
  rt_free(&r);
}

/* An in-place op on a var whose storage a caller's tensor shares writes new storage, never the
 * caller's. */
static void test_unary_shared(void) {
  rt r;
  rt_init(&r);
  pd_tensor *src = shared_input(&r, "x", PD_FP64, "[4]", D(-1, 2, -3, 4));
  rt_op(&r, "relu", "X=x", "Out=x");
  if (rt_ok(&r, "relu in place on shared storage")) {
    rt_expect(rt_get(&r, "x"), 4, D(0, 2, 0, 4), 0, "relu in place: the var's value");
    rt_expect(src, 4, D(-1, 2, -3, 4), 0, "relu in place: the caller's tensor is intact");
  }
  pd_tensor_free(src);
  rt_free(&r);
}

/* Gradient ops run directly: X@GRAD written over Out@GRAD (the gradient of x = relu(x)),
 * X@GRAD takes X's LoD, a missing forward value is an error. */
static void test_unary_grad_ops(void) {
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[4]", D(-1, 2, -3, 4));
  rt_in_f64(&r, "y", "[4]", D(0, 2, 0, 4));
  pd_tensor *g = rt_in_f64(&r, "g", "[4]", D(0.5, 0.25, 2, -1));
  void *before = pd_tensor_data(g);
  rt_op(&r, "relu_grad", "X=x Out=y Out@GRAD=g", "X@GRAD=g");
  if (rt_ok(&r, "relu_grad in place")) {
    rt_expect(rt_get(&r, "g"), 4, D(0, 0.25, 0, -1), 0, "relu_grad in place: values");
    ok(pd_tensor_data(rt_get(&r, "g")) == before, "relu_grad in place keeps the storage");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[3, 1]", (float[]){0.5f, -1, 2});
  int64_t lod[] = {0, 2, 3};
  rt_lod(&r, "x", 3, lod);
  float y[3] = {tanhf(0.5f), tanhf(-1), tanhf(2)};
  rt_in_f32(&r, "y", "[3, 1]", y);
  rt_in_f32(&r, "g", "[3, 1]", (float[]){1, 2, 3});
  rt_op(&r, "tanh_grad", "X=x Out=y Out@GRAD=g", "X@GRAD=gx");
  if (rt_ok(&r, "tanh_grad float32")) {
    double want[3];
    for (int i = 0; i < 3; i++) want[i] = (i + 1) * (1 - (double)y[i] * y[i]);
    rt_expect(rt_get(&r, "gx"), 3, want, 1e-6, "tanh_grad float32: dOut * (1 - Out^2)");
    ok(lod_is(rt_get(&r, "gx"), 3, lod), "tanh_grad: X@GRAD takes X's LoD");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2]", D(1, 2));
  rt_in_f64(&r, "g", "[2]", D(1, 1));
  rt_op(&r, "sigmoid_grad", "X=x Out@GRAD=g", "X@GRAD=gx");
  rt_fails(&r, PD_EINVAL, "sigmoid_grad: input Out is missing",
           "sigmoid_grad without Out: an error, not a crash");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3]", D(1, 2, 3));
  rt_in_f64(&r, "y", "[3]", D(1, 4, 9));
  rt_in_f64(&r, "g", "[2]", D(1, 1));
  decl(r.f.b, "x", PD_FP64, "[-1]");
  decl(r.f.b, "y", PD_FP64, "[-1]");
  decl(r.f.b, "g", PD_FP64, "[-1]");
  rt_op(&r, "square_grad", "X=x Out=y Out@GRAD=g", "X@GRAD=gx");
  rt_fails(&r, PD_ESHAPE, "square_grad: Out@GRAD (var 'g') is [2] but X is [3]",
           "square_grad: a gradient of the wrong size fed at run time");
  rt_free(&r);
}

/* ---------------------------------------------------------------- scale */

static void test_scale(void) {
  const float xf[] = {1, -2, 3.5f, 0, 4, -0.25f};
  double want[6];
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", xf);
  int64_t lod[] = {0, 2};
  rt_lod(&r, "x", 2, lod);
  pd_op_desc *op = rt_op(&r, "scale", "X=x", "Out=y");
  pd_op_set_attr_float(op, "scale", 2);
  pd_op_set_attr_float(op, "bias", 1);
  if (rt_ok(&r, "scale 2, bias 1")) {
    for (int i = 0; i < 6; i++) want[i] = 2 * xf[i] + 1;
    rt_expect(rt_get(&r, "y"), 6, want, 1e-7, "scale: 2x + 1");
    ok(lod_is(rt_get(&r, "y"), 2, lod), "scale keeps X's LoD");
  }
  pd_op_set_attr_bool(op, "bias_after_scale", false);
  if (rt_ok(&r, "scale, bias before the scale")) {
    for (int i = 0; i < 6; i++) want[i] = 2 * (xf[i] + 1);
    rt_expect(rt_get(&r, "y"), 6, want, 1e-7, "scale: 2 (x + 1)");
  }
  rt_free(&r);

  /* ScaleTensor overrides the attribute; in place. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[3]", D(1, 2, 3));
  rt_in_f32(&r, "s", "[1]", (float[]){-3});
  op = rt_op(&r, "scale", "X=x ScaleTensor=s", "Out=x");
  pd_op_set_attr_float(op, "scale", 100);
  pd_op_set_attr_float(op, "bias", 0.5f);
  if (rt_ok(&r, "scale by ScaleTensor, in place"))
    rt_expect(rt_get(&r, "x"), 3, D(-2.5, -5.5, -8.5), 1e-15, "scale: ScaleTensor * x + bias");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3]", D(1, 2, 3));
  rt_in_f32(&r, "s", "[2]", (float[]){1, 2});
  rt_op(&r, "scale", "X=x ScaleTensor=s", "Out=y");
  rt_fails(&r, PD_ESHAPE, "scale: ScaleTensor (var 's') must hold one value, got [2]",
           "scale: a ScaleTensor of two values");
  rt_free(&r);

  /* Integers: scale and bias converted to the dtype first, as Fluid. */
  rt_init(&r);
  rt_in_i64(&r, "x", "[4]", L(1, -2, 3, 40));
  op = rt_op(&r, "scale", "X=x", "Out=y");
  pd_op_set_attr_float(op, "scale", 3);
  pd_op_set_attr_float(op, "bias", -1);
  if (rt_ok(&r, "scale int64"))
    rt_expect(rt_get(&r, "y"), 4, D(2, -7, 8, 119), 0, "scale int64: 3x - 1");
  rt_free(&r);
  rt_init(&r);
  rt_in(&r, "x", PD_INT32, "[3]", (int32_t[]){1, -2, 3});
  op = rt_op(&r, "scale", "X=x", "Out=x");
  pd_op_set_attr_float(op, "scale", 2);
  pd_op_set_attr_float(op, "bias", 5);
  pd_op_set_attr_bool(op, "bias_after_scale", false);
  if (rt_ok(&r, "scale int32 in place"))
    rt_expect(rt_get(&r, "x"), 3, D(12, 6, 16), 0, "scale int32: 2 (x + 5)");
  rt_free(&r);

  /* Gradients: dX = scale * dOut, also with the scale from ScaleTensor. */
  double xs[6];
  vals(xs, 6, -2, 2, 3, false);
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", xs);
  op = rt_op(&r, "scale", "X=x", "Out=y");
  pd_op_set_attr_float(op, "scale", 2.5f);
  pd_op_set_attr_float(op, "bias", 0.75f);
  grad_check(&r, "X", "Out", "scale");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", xs);
  rt_in_f64(&r, "s", "[1]", D(-1.5));
  op = rt_op(&r, "scale", "X=x ScaleTensor=s", "Out=y");
  pd_op_set_attr_bool(op, "bias_after_scale", false);
  pd_op_set_attr_float(op, "bias", 0.75f);
  grad_check(&r, "X", "Out", "scale by ScaleTensor");
  rt_free(&r);
}

/* ---------------------------------------------------------------- cast */

static void cast_case(pd_dtype from, const char *shape, const void *data, pd_dtype to, int n,
                      const double *want, const char *what) {
  rt r;
  rt_init(&r);
  rt_in(&r, "x", from, shape, data);
  pd_op_desc *op = rt_op(&r, "cast", "X=x", "Out=y");
  pd_op_set_attr_int(op, "in_dtype", from);
  pd_op_set_attr_int(op, "out_dtype", to);
  if (rt_ok(&r, what)) {
    const pd_tensor *y = rt_get(&r, "y");
    ok(y && y->dtype == to, "%s: Out's dtype", what);
    rt_expect(y, n, want, 0, what);
  }
  rt_free(&r);
}

static void test_cast(void) {
  cast_case(PD_FP32, "[5]", (float[]){1.75f, -1.75f, 2.5f, -0.25f, 7}, PD_INT32, 5,
            D(1, -1, 2, 0, 7), "cast float32 to int32 truncates");
  cast_case(PD_INT64, "[2, 2]", L(-5, 0, 3, 1 << 20), PD_FP64, 4,
            D(-5, 0, 3, 1 << 20), "cast int64 to float64");
  cast_case(PD_BOOL, "[3]", (uint8_t[]){1, 0, 1}, PD_FP32, 3, D(1, 0, 1),
            "cast bool to float32");
  cast_case(PD_FP64, "[4]", D(0, 0.5, -2, 0), PD_BOOL, 4, D(0, 1, 1, 0),
            "cast float64 to bool: x != 0");
  cast_case(PD_INT32, "[3]", (int32_t[]){-1, 2, 3}, PD_INT64, 3, D(-1, 2, 3),
            "cast int32 to int64");

  /* In place, changing the dtype; LoD kept. */
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[3, 1]", (float[]){1.5f, 2.5f, -3});
  int64_t lod[] = {0, 1, 3};
  rt_lod(&r, "x", 3, lod);
  pd_op_desc *op = rt_op(&r, "cast", "X=x", "Out=x");
  pd_op_set_attr_int(op, "in_dtype", PD_FP32);
  pd_op_set_attr_int(op, "out_dtype", PD_FP64);
  if (rt_ok(&r, "cast float32 to float64 in place")) {
    const pd_tensor *x = rt_get(&r, "x");
    ok(x && x->dtype == PD_FP64, "cast in place: the var is float64 now");
    rt_expect(x, 3, D(1.5, 2.5, -3), 0, "cast in place: values");
    ok(lod_is(x, 3, lod), "cast in place keeps the LoD");
  }
  rt_free(&r);

  /* Gradient: the identity for float64 -> float64; cast_grad converts back to X's dtype. */
  double xs[6];
  vals(xs, 6, -2, 2, 5, false);
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", xs);
  op = rt_op(&r, "cast", "X=x", "Out=y");
  pd_op_set_attr_int(op, "in_dtype", PD_FP64);
  pd_op_set_attr_int(op, "out_dtype", PD_FP64);
  grad_check(&r, "X", "Out", "cast");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[2]", (float[]){1, 2});
  rt_in_f64(&r, "y", "[2]", D(1, 2));
  rt_in_f64(&r, "g", "[2]", D(0.5, -4));
  op = rt_op(&r, "cast_grad", "X=x Out=y Out@GRAD=g", "X@GRAD=gx");
  pd_op_set_attr_int(op, "in_dtype", PD_FP32);
  pd_op_set_attr_int(op, "out_dtype", PD_FP64);
  if (rt_ok(&r, "cast_grad float64 -> float32")) {
    const pd_tensor *gx = rt_get(&r, "gx");
    ok(gx && gx->dtype == PD_FP32, "cast_grad: X@GRAD has X's dtype");
    rt_expect(gx, 2, D(0.5, -4), 0, "cast_grad: values");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- sum */

static void test_sum(void) {
  double a[6], b[6], c[6], want[6];
  vals(a, 6, -2, 2, 11, false);
  vals(b, 6, -2, 2, 12, false);
  vals(c, 6, -2, 2, 13, false);
  float af[6], bf[6], cf[6];
  to_f32(a, af, 6);
  to_f32(b, bf, 6);
  to_f32(c, cf, 6);

  rt r;
  rt_init(&r);
  rt_in_f32(&r, "a", "[2, 3]", af);
  rt_in_f32(&r, "b", "[2, 3]", bf);
  rt_in_f32(&r, "c", "[2, 3]", cf);
  int64_t lod[] = {0, 1, 2};
  rt_lod(&r, "a", 3, lod);
  rt_op(&r, "sum", "X=a,b,c", "Out=s");
  if (rt_ok(&r, "sum of three float32")) {
    for (int i = 0; i < 6; i++) want[i] = (double)af[i] + bf[i] + cf[i];
    rt_expect(rt_get(&r, "s"), 6, want, 1e-6, "sum of three: values");
    ok(lod_is(rt_get(&r, "s"), 3, lod), "sum: Out takes X[0]'s LoD");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "a", "[6]", af);
  rt_op(&r, "sum", "X=a", "Out=s");
  if (rt_ok(&r, "sum of one")) {
    for (int i = 0; i < 6; i++) want[i] = af[i];
    rt_expect(rt_get(&r, "s"), 6, want, 0, "sum of one: a copy");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_i64(&r, "a", "[3]", L(1, -2, 3));
  rt_in_i64(&r, "b", "[3]", L(10, 20, 30));
  rt_op(&r, "sum", "X=a,b", "Out=s");
  if (rt_ok(&r, "sum int64")) rt_expect(rt_get(&r, "s"), 3, D(11, 18, 33), 0, "sum int64");
  rt_free(&r);

  /* The backward pass's form: Out is X[0] (or another input), added into in place. */
  for (int self = 0; self < 2; self++) {
    rt_init(&r);
    pd_tensor *ta = rt_in_f64(&r, "a", "[2, 3]", a);
    pd_tensor *tb = rt_in_f64(&r, "b", "[2, 3]", b);
    rt_in_f64(&r, "c", "[2, 3]", c);
    rt_lod(&r, "a", 3, lod);
    void *before = pd_tensor_data(self ? tb : ta);
    rt_op(&r, "sum", "X=a,b,c", self ? "Out=b" : "Out=a");
    const char *what = self ? "sum(X=[a, b, c], Out=b)" : "sum(X=[a, b, c], Out=a)";
    if (rt_ok(&r, what)) {
      const pd_tensor *s = rt_get(&r, self ? "b" : "a");
      for (int i = 0; i < 6; i++) want[i] = a[i] + b[i] + c[i];
      rt_expect(s, 6, want, 1e-15, what);
      ok(pd_tensor_data(s) == before, "%s: added in place", what);
      ok(lod_is(s, 3, lod), "%s: X[0]'s LoD", what);
    }
    rt_free(&r);
  }

  /* The same var twice. */
  rt_init(&r);
  rt_in_f64(&r, "a", "[2, 3]", a);
  rt_op(&r, "sum", "X=a,a", "Out=s");
  rt_op(&r, "sum", "X=a,a,a", "Out=a");
  if (rt_ok(&r, "sum(X=[a, a]) and sum(X=[a, a, a], Out=a)")) {
    for (int i = 0; i < 6; i++) want[i] = 2 * a[i];
    rt_expect(rt_get(&r, "s"), 6, want, 1e-15, "sum(X=[a, a]) = 2a");
    for (int i = 0; i < 6; i++) want[i] = 3 * a[i];
    rt_expect(rt_get(&r, "a"), 6, want, 1e-15, "sum(X=[a, a, a], Out=a) = 3a");
  }
  rt_free(&r);

  /* Out = X[0] whose storage a caller's tensor shares: a fresh result, the caller's intact. */
  rt_init(&r);
  pd_tensor *src = shared_input(&r, "a", PD_FP64, "[2, 3]", a);
  rt_in_f64(&r, "b", "[2, 3]", b);
  rt_op(&r, "sum", "X=a,b", "Out=a");
  if (rt_ok(&r, "sum into shared storage")) {
    for (int i = 0; i < 6; i++) want[i] = a[i] + b[i];
    rt_expect(rt_get(&r, "a"), 6, want, 1e-15, "sum into shared storage: the var's value");
    rt_expect(src, 6, a, 0, "sum into shared storage: the caller's tensor is intact");
  }
  pd_tensor_free(src);
  rt_free(&r);

  /* Shapes that disagree at run time. */
  rt_init(&r);
  rt_in_f32(&r, "a", "[2, 3]", af);
  rt_in_f32(&r, "b", "[1, 3]", bf);
  decl(r.f.b, "a", PD_FP32, "[-1, 3]");
  decl(r.f.b, "b", PD_FP32, "[-1, 3]");
  rt_op(&r, "sum", "X=a,b", "Out=s");
  rt_fails(&r, PD_ESHAPE, "sum: X[1] (var 'b') has shape [1, 3] but X[0] (var 'a') has [2, 3]",
           "sum: shapes that disagree at run time");
  rt_free(&r);

  /* Gradient: every input's is dOut. */
  rt_init(&r);
  rt_in_f64(&r, "a", "[2, 3]", a);
  rt_in_f64(&r, "b", "[2, 3]", b);
  rt_in_f64(&r, "c", "[2, 3]", c);
  rt_op(&r, "sum", "X=a,b,c", "Out=s");
  grad_check(&r, "X", "Out", "sum");
  rt_free(&r);

  /* sum_grad with one gradient not wanted, and X[i]'s LoD. */
  rt_init(&r);
  rt_in_f64(&r, "a", "[2, 1]", D(1, 2));
  rt_in_f64(&r, "b", "[2, 1]", D(3, 4));
  rt_lod(&r, "b", 2, L(0, 2));
  rt_in_f64(&r, "g", "[2, 1]", D(0.5, -1));
  rt_op(&r, "sum_grad", "X=a,b Out@GRAD=g", "X@GRAD=" PD_EMPTY_VAR_NAME ",gb");
  if (rt_ok(&r, "sum_grad")) {
    rt_expect(rt_get(&r, "gb"), 2, D(0.5, -1), 0, "sum_grad: dX = dOut");
    ok(lod_is(rt_get(&r, "gb"), 2, L(0, 2)), "sum_grad: X[1]'s LoD");
    ok(!rt_get(&r, PD_EMPTY_VAR_NAME), "sum_grad: an unbound gradient is skipped");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- mean */

static void test_mean(void) {
  double xs[12];
  vals(xs, 12, -3, 3, 21, false);
  float xf[12];
  to_f32(xs, xf, 12);
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[3, 4]", xf);
  rt_lod(&r, "x", 2, L(0, 3));
  rt_op(&r, "mean", "X=x", "Out=m");
  if (rt_ok(&r, "mean float32")) {
    double s = 0;
    for (int i = 0; i < 12; i++) s += xf[i];
    const pd_tensor *m = rt_get(&r, "m");
    rt_expect(m, 1, D(s / 12), 1e-6, "mean float32");
    ok(m && m->ndims == 1 && m->dims[0] == 1 && m->nlod == 0, "mean: Out is [1] without LoD");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3, 2]", xs);
  rt_op(&r, "mean", "X=x", "Out=x");
  if (rt_ok(&r, "x = mean(x)")) {
    double s = 0;
    for (int i = 0; i < 12; i++) s += xs[i];
    rt_expect(rt_get(&r, "x"), 1, D(s / 12), 1e-15, "x = mean(x): read before written");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3, 2]", xs);
  rt_op(&r, "mean", "X=x", "Out=m");
  grad_check(&r, "X", "Out", "mean");
  rt_free(&r);
}

int main(void) {
  test_unary();
  test_unary_int();
  test_unary_shared();
  test_unary_grad_ops();
  test_scale();
  test_cast();
  test_sum();
  test_mean();
  return tap_done();
}
