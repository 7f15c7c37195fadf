/* test_kern_elementwise.c -- the kernels of elementwise_add/sub/mul/div/max/min/pow (Fluid's
 * broadcasting with `axis`), the comparisons and the logical ops, run through the executor
 * against a naive broadcast written here (operand shapes padded by hand), with int and bool
 * dtypes, LoD, in-place runs, run-time shape errors and finite-difference gradients. */
#include "config.h"

#include "tests/vm/ops/test_kern_math.h"

/* A broadcast case: the shapes as the op sees them and, written out by hand, both padded to
 * Out's rank (the reference indexes through these, not through the kernels' broadcast code). */
typedef struct bcase {
  const char *what, *xs, *ys;
  int axis, nd;
  int64_t xpad[4], ypad[4];
} bcase;

static const bcase cases[] = {
    {"same shape", "[2, 3]", "[2, 3]", -1, 2, {2, 3}, {2, 3}},
    {"a bias row [4, 3] + [3]", "[4, 3]", "[3]", -1, 2, {4, 3}, {1, 3}},
    {"axis 1: [2, 3, 4] + [3]", "[2, 3, 4]", "[3]", 1, 3, {2, 3, 4}, {1, 3, 1}},
    {"axis 1: [2, 3, 4] + [3, 4]", "[2, 3, 4]", "[3, 4]", 1, 3, {2, 3, 4}, {1, 3, 4}},
    {"axis 0: [2, 3, 2] + [2]", "[2, 3, 2]", "[2]", 0, 3, {2, 3, 2}, {2, 1, 1}},
    {"axis 1, a 1 inside Y: [2, 3, 4] + [3, 1]", "[2, 3, 4]", "[3, 1]", 1, 3, {2, 3, 4}, {1, 3, 1}},
    {"both broadcast: [3, 1] + [1, 4]", "[3, 1]", "[1, 4]", -1, 2, {3, 1}, {1, 4}},
    {"X of lower rank: [3] + [2, 3]", "[3]", "[2, 3]", -1, 2, {1, 3}, {2, 3}},
    {"a scalar Y: [2, 3] + []", "[2, 3]", "[]", -1, 2, {2, 3}, {1, 1}},
};

static int64_t numel4(int nd, const int64_t *d) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= d[i];
  return n;
}

/* want[o] = f(x[..], y[..]) over Out's elements. */
static int naive(const bcase *c, double (*f)(double, double), const double *x, const double *y,
                 double *want) {
  int64_t od[4], idx[4] = {0};
  for (int d = 0; d < c->nd; d++) od[d] = c->xpad[d] == 1 ? c->ypad[d] : c->xpad[d];
  int64_t n = numel4(c->nd, od);
  for (int64_t o = 0; o < n; o++) {
    int64_t rem = o, xi = 0, yi = 0;
    for (int d = c->nd - 1; d >= 0; d--) {
      idx[d] = rem % od[d];
      rem /= od[d];
    }
    for (int d = 0; d < c->nd; d++) {
      xi = xi * c->xpad[d] + (c->xpad[d] == 1 ? 0 : idx[d]);
      yi = yi * c->ypad[d] + (c->ypad[d] == 1 ? 0 : idx[d]);
    }
    want[o] = f(x[xi], y[yi]);
  }
  return (int)n;
}

static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static double f_max(double a, double b) { return a > b ? a : b; }
static double f_min(double a, double b) { return a < b ? a : b; }
static double f_pow(double a, double b) { return pow(a, b); }

static const struct {
  const char *type;
  double (*f)(double, double);
  double xlo, xhi, ylo, yhi;  /* value ranges: away from division by 0, positive bases */
} binops[] = {
    {"elementwise_add", f_add, -2, 2, -2, 2},  {"elementwise_sub", f_sub, -2, 2, -2, 2},
    {"elementwise_mul", f_mul, -2, 2, -2, 2},  {"elementwise_div", f_div, -2, 2, 0.5, 2},
    {"elementwise_max", f_max, -2, 2, -2, 2},  {"elementwise_min", f_min, -2, 2, -2, 2},
    {"elementwise_pow", f_pow, 0.5, 2, -1.5, 1.5},
};

static void set_axis(pd_op_desc *op, int axis) {
  if (axis != -1) pd_op_set_attr_int(op, "axis", axis);
}

static void test_binary(void) {
  for (size_t b = 0; b < PD_ARRAY_LEN(binops); b++) {
    for (size_t k = 0; k < PD_ARRAY_LEN(cases); k++) {
      const bcase *c = &cases[k];
      int xn = (int)numel4(c->nd, c->xpad), yn = (int)numel4(c->nd, c->ypad);
      double x[32], y[32], want[32];
      vals(x, xn, binops[b].xlo, binops[b].xhi, 50 + k, false);
      vals(y, yn, binops[b].ylo, binops[b].yhi, 60 + k, false);
      /* Ties of max/min are kinks: keep X and Y apart. */
      for (int i = 0; i < yn; i++) y[i] += (i % 2 ? 0.013 : -0.017);
      char what[160];
      for (int dt = 0; dt < 2; dt++) {
        rt r;
        rt_init(&r);
        int on;
        if (dt == 0) {
          float xf[32], yf[32];
          to_f32(x, xf, xn);
          to_f32(y, yf, yn);
          rt_in_f32(&r, "x", c->xs, xf);
          rt_in_f32(&r, "y", c->ys, yf);
          double xd[32], yd[32];
          for (int i = 0; i < xn; i++) xd[i] = xf[i];
          for (int i = 0; i < yn; i++) yd[i] = yf[i];
          on = naive(c, binops[b].f, xd, yd, want);
        } else {
          rt_in_f64(&r, "x", c->xs, x);
          rt_in_f64(&r, "y", c->ys, y);
          on = naive(c, binops[b].f, x, y, want);
        }
        set_axis(rt_op(&r, binops[b].type, "X=x Y=y", "Out=o"), c->axis);
        snprintf(what, sizeof what, "%s, %s (%s)", binops[b].type, c->what,
                 dt ? "float64" : "float32");
        if (rt_ok(&r, what)) rt_expect(rt_get(&r, "o"), on, want, dt ? 1e-15 : 1e-6, what);
        if (dt == 1) {
          snprintf(what, sizeof what, "%s, %s", binops[b].type, c->what);
          grad_check(&r, "X Y", "Out", what);
        }
        rt_free(&r);
      }
    }
  }
}

/* Integers: wrapping arithmetic, division truncating (a zero divisor is an error at the op:
 * test_int_div); pow is float only. */
static void test_binary_int(void) {
  const struct {
    const char *type;
    double want[6];
  } ops[] = {
      {"elementwise_add", {-11, -5, 10, 3, 6, 7}},   {"elementwise_sub", {-31, 5, 4, 3, 12, 7}},
      {"elementwise_mul", {-210, 0, 21, 0, -27, 0}}, {"elementwise_max", {10, 0, 7, 3, 9, 7}},
      {"elementwise_min", {-21, -5, 3, 0, -3, 0}},
  };
  for (size_t i = 0; i < PD_ARRAY_LEN(ops); i++) {
    for (int wide = 0; wide < 2; wide++) {
      rt r;
      rt_init(&r);
      if (wide) {
        rt_in_i64(&r, "x", "[2, 3]", L(-21, 0, 7, 3, 9, 7));
        rt_in_i64(&r, "y", "[2, 3]", L(10, -5, 3, 0, -3, 0));
      } else {
        rt_in(&r, "x", PD_INT32, "[2, 3]", I(-21, 0, 7, 3, 9, 7));
        rt_in(&r, "y", PD_INT32, "[2, 3]", I(10, -5, 3, 0, -3, 0));
      }
      rt_op(&r, ops[i].type, "X=x Y=y", "Out=o");
      char what[96];
      snprintf(what, sizeof what, "%s %s", ops[i].type, wide ? "int64" : "int32");
      if (rt_ok(&r, what)) rt_expect(rt_get(&r, "o"), 6, ops[i].want, 0, what);
      rt_free(&r);
    }
  }
  rt r;
  rt_init(&r);
  rt_in_i64(&r, "x", "[2]", L(2, 3));
  rt_in_i64(&r, "y", "[2]", L(2, 2));
  rt_op(&r, "elementwise_pow", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ETYPE, "elementwise_pow: X (var 'x') has dtype int64; expected float32 or float64",
           "elementwise_pow of integers is refused at run time");
  rt_free(&r);
}

/* Integer division truncates toward zero; a 0 anywhere in Y is an error at the op, with the
 * element's index, in each integer dtype (the backend's x / 0 = 0 is never reached). */
static void test_int_div(void) {
  static const double want[6] = {-21 / 10, 0 / -5, 7 / 3, 3 / 1, 9 / -3, 7 / 2};
  for (int wide = 0; wide < 2; wide++) {
    rt r;
    rt_init(&r);
    if (wide) {
      rt_in_i64(&r, "x", "[2, 3]", L(-21, 0, 7, 3, 9, 7));
      rt_in_i64(&r, "y", "[2, 3]", L(10, -5, 3, 1, -3, 2));
    } else {
      rt_in(&r, "x", PD_INT32, "[2, 3]", I(-21, 0, 7, 3, 9, 7));
      rt_in(&r, "y", PD_INT32, "[2, 3]", I(10, -5, 3, 1, -3, 2));
    }
    rt_op(&r, "elementwise_div", "X=x Y=y", "Out=o");
    const char *what = wide ? "elementwise_div int64" : "elementwise_div int32";
    if (rt_ok(&r, what)) rt_expect(rt_get(&r, "o"), 6, want, 0, what);
    rt_free(&r);
    rt_init(&r);
    if (wide) {
      rt_in_i64(&r, "x", "[2, 3]", L(-21, 0, 7, 3, 9, 7));
      rt_in_i64(&r, "y", "[3]", L(10, -5, 0));
    } else {
      rt_in(&r, "x", PD_INT32, "[2, 3]", I(-21, 0, 7, 3, 9, 7));
      rt_in(&r, "y", PD_INT32, "[3]", I(10, -5, 0));
    }
    rt_op(&r, "elementwise_div", "X=x Y=y", "Out=o");
    rt_fails(&r, PD_ERUNTIME,
             "elementwise_div: integer division by zero: element 2 of Y (var 'y') [3] is 0",
             wide ? "elementwise_div int64 by 0: an error"
                  : "elementwise_div int32 by 0: an error");
    rt_free(&r);
  }
  /* Floats divide by 0 as IEEE says: no scan, no error. */
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[2]", F(1, -1));
  rt_in_f32(&r, "y", "[2]", F(0, 0));
  rt_op(&r, "elementwise_div", "X=x Y=y", "Out=o");
  if (rt_ok(&r, "elementwise_div float32 by 0")) {
    const float *o = pd_tensor_data(rt_get(&r, "o"));
    ok(isinf(o[0]) && o[0] > 0 && isinf(o[1]) && o[1] < 0, "float32 x / 0 is +-inf");
  }
  rt_free(&r);
}

static void test_binary_misc(void) {
  /* In place on X (x = x + b), X's LoD kept; the storage is reused. */
  rt r;
  rt_init(&r);
  pd_tensor *x = rt_in_f32(&r, "x", "[3, 2]", F(1, 2, 3, 4, 5, 6));
  rt_lod(&r, "x", 3, L(0, 2, 3));
  rt_in_f32(&r, "b", "[2]", F(10, 20));
  void *before = pd_tensor_data(x);
  rt_op(&r, "elementwise_add", "X=x Y=b", "Out=x");
  if (rt_ok(&r, "x = x + b")) {
    rt_expect(rt_get(&r, "x"), 6, D(11, 22, 13, 24, 15, 26), 0, "x = x + b: values");
    ok(pd_tensor_data(rt_get(&r, "x")) == before, "x = x + b: computed in place");
    ok(lod_is(rt_get(&r, "x"), 3, L(0, 2, 3)), "x = x + b: X's LoD kept");
  }
  rt_free(&r);

  /* In place on Y; Out takes X's LoD. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 2]", D(1, 2, 3, 4));
  rt_lod(&r, "x", 2, L(0, 2));
  rt_in_f64(&r, "y", "[2, 2]", D(2, 4, 6, 8));
  rt_op(&r, "elementwise_div", "X=x Y=y", "Out=y");
  if (rt_ok(&r, "y = x / y")) {
    rt_expect(rt_get(&r, "y"), 4, D(0.5, 0.5, 0.5, 0.5), 0, "y = x / y: values");
    ok(lod_is(rt_get(&r, "y"), 2, L(0, 2)), "y = x / y: Out takes X's LoD");
  }
  rt_free(&r);

  /* Out is the smaller operand: it grows, so it cannot be computed in place. */
  rt_init(&r);
  rt_in_f64(&r, "b", "[2]", D(1, 2));
  rt_in_f64(&r, "m", "[2, 2]", D(10, 20, 30, 40));
  rt_op(&r, "elementwise_sub", "X=b Y=m", "Out=b");
  if (rt_ok(&r, "b = b - m (b broadcast)"))
    rt_expect(rt_get(&r, "b"), 4, D(-9, -18, -29, -38), 0, "b = b - m: values");
  rt_free(&r);

  /* An empty batch, forward and backward. */
  rt_init(&r);
  rt_in_f32(&r, "x", "[0, 3]", F(0));
  rt_in_f32(&r, "b", "[3]", F(1, 2, 3));
  rt_in_f32(&r, "g", "[0, 3]", F(0));
  rt_op(&r, "elementwise_add", "X=x Y=b", "Out=o");
  rt_op(&r, "elementwise_add_grad", "X=x Y=b Out@GRAD=g", "X@GRAD=gx Y@GRAD=gb");
  if (rt_ok(&r, "elementwise_add of an empty batch")) {
    const pd_tensor *o = rt_get(&r, "o");
    ok(o && o->ndims == 2 && o->dims[0] == 0 && o->dims[1] == 3, "empty batch: Out is [0, 3]");
    rt_expect(rt_get(&r, "gb"), 3, D(0, 0, 0), 0, "empty batch: the bias gradient is 0");
  }
  rt_free(&r);

  /* Shapes that only disagree at run time. */
  float z[40] = {0};
  rt_init(&r);
  rt_in_f32(&r, "x", "[4, 10]", z);
  rt_in_f32(&r, "y", "[3, 10]", z);
  decl(r.f.b, "x", PD_FP32, "[-1, 10]");
  decl(r.f.b, "y", PD_FP32, "[-1, 10]");
  rt_op(&r, "elementwise_add", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ESHAPE, "elementwise_add: cannot add x [4, 10] and y [3, 10]",
           "elementwise_add: a mismatch at run time");
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3, 4]", z);
  rt_in_f32(&r, "y", "[4]", z);
  decl(r.f.b, "y", PD_FP32, "[-1]");
  set_axis(rt_op(&r, "elementwise_mul", "X=x Y=y", "Out=o"), 1);
  rt_fails(&r, PD_ESHAPE, "elementwise_mul: cannot multiply x [2, 3, 4] and y [4] (axis 1)",
           "elementwise_mul: an axis mismatch at run time");
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[2]", z);
  rt_in(&r, "y", PD_FP64, "[2]", D(1, 2));
  decl(r.f.b, "y", PD_FP32, "[2]");
  rt_op(&r, "elementwise_add", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ETYPE, "elementwise_add: X (var 'x') has dtype float32 but Y (var 'y') has dtype float64",
           "elementwise_add: dtypes that disagree at run time");
  rt_free(&r);

  /* The bias gradient: a column sum; subtract's negated; only the wanted one written. */
  rt_init(&r);
  rt_in_f32(&r, "x", "[3, 2]", F(0, 0, 0, 0, 0, 0));
  rt_lod(&r, "x", 2, L(0, 3));
  rt_in_f32(&r, "b", "[2]", F(0, 0));
  rt_in_f32(&r, "g", "[3, 2]", F(1, 2, 3, 4, 5, 6));
  rt_op(&r, "elementwise_add_grad", "X=x Y=b Out@GRAD=g", "X@GRAD=gx Y@GRAD=gb");
  rt_op(&r, "elementwise_sub_grad", "X=x Y=b Out@GRAD=g", "Y@GRAD=gs");
  if (rt_ok(&r, "elementwise_add_grad and elementwise_sub_grad")) {
    rt_expect(rt_get(&r, "gx"), 6, D(1, 2, 3, 4, 5, 6), 0, "add_grad: dX = dOut");
    ok(lod_is(rt_get(&r, "gx"), 2, L(0, 3)), "add_grad: dX takes X's LoD");
    rt_expect(rt_get(&r, "gb"), 2, D(9, 12), 0, "add_grad: dY = column sums of dOut");
    rt_expect(rt_get(&r, "gs"), 2, D(-9, -12), 0, "sub_grad: dY = -column sums of dOut");
  }
  rt_free(&r);

  /* Gradient written over Out@GRAD (x = x * y in place). */
  rt_init(&r);
  rt_in_f64(&r, "x", "[3]", D(1, 2, 3));
  rt_in_f64(&r, "y", "[3]", D(4, 5, 6));
  rt_in_f64(&r, "g", "[3]", D(1, 10, 100));
  rt_op(&r, "elementwise_mul_grad", "X=x Y=y Out@GRAD=g", "X@GRAD=g Y@GRAD=gy");
  if (rt_ok(&r, "elementwise_mul_grad over Out@GRAD")) {
    rt_expect(rt_get(&r, "g"), 3, D(4, 50, 600), 0, "mul_grad: dX = dOut * Y");
    rt_expect(rt_get(&r, "gy"), 3, D(1, 20, 300), 0, "mul_grad: dY = dOut * X (read dOut first)");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- comparisons */

static double c_lt(double a, double b) { return a < b; }
static double c_le(double a, double b) { return a <= b; }
static double c_gt(double a, double b) { return a > b; }
static double c_ge(double a, double b) { return a >= b; }
static double c_eq(double a, double b) { return a == b; }
static double c_ne(double a, double b) { return a != b; }

static void test_compare(void) {
  const struct {
    const char *type;
    double (*f)(double, double);
  } ops[] = {{"less_than", c_lt},    {"less_equal", c_le}, {"greater_than", c_gt},
             {"greater_equal", c_ge}, {"equal", c_eq},      {"not_equal", c_ne}};
  /* Values with ties, so that every relation is both true and false somewhere. */
  const double xv[] = {1, 2, 3, 2, 0, -1}, yv[] = {2, 2, 1};
  const bcase *c = &cases[1];  /* [4, 3] + [3] */
  double x[12], want[12];
  for (int i = 0; i < 12; i++) x[i] = xv[i % 6];
  const pd_dtype dts[] = {PD_FP32, PD_FP64, PD_INT32, PD_INT64};
  for (size_t o = 0; o < PD_ARRAY_LEN(ops); o++) {
    naive(c, ops[o].f, x, yv, want);
    for (size_t t = 0; t < PD_ARRAY_LEN(dts); t++) {
      pd_dtype dt = dts[t];
      char xb[12 * 8], yb[3 * 8];
      pd_k_cpu()->cast(PD_FP64, x, dt, xb, 12);
      pd_k_cpu()->cast(PD_FP64, yv, dt, yb, 3);
      rt r;
      rt_init(&r);
      rt_in(&r, "x", dt, "[4, 3]", xb);
      rt_lod(&r, "x", 2, L(0, 4));
      rt_in(&r, "y", dt, "[3]", yb);
      rt_op(&r, ops[o].type, "X=x Y=y", "Out=o");
      char what[96];
      snprintf(what, sizeof what, "%s %s, a row broadcast", ops[o].type, pd_dtype_name(dt));
      if (rt_ok(&r, what)) {
        const pd_tensor *out = rt_get(&r, "o");
        ok(out && out->dtype == PD_BOOL, "%s: Out is bool", what);
        rt_expect(out, 12, want, 0, what);
        if (t == 0) ok(lod_is(out, 2, L(0, 4)), "%s: X's LoD", what);
      }
      rt_free(&r);
    }
  }
  /* Bools, with Fluid's axis; NaN. */
  rt r;
  rt_init(&r);
  rt_in(&r, "x", PD_BOOL, "[2, 2, 1]", B(0, 1, 1, 0));
  rt_in(&r, "y", PD_BOOL, "[2]", B(1, 0));
  set_axis(rt_op(&r, "less_than", "X=x Y=y", "Out=o"), 1);
  if (rt_ok(&r, "less_than of bools, axis 1"))
    rt_expect(rt_get(&r, "o"), 4, D(1, 0, 0, 0), 0, "less_than of bools: false < true");
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[3]", F(NAN, 1, NAN));
  rt_in_f32(&r, "y", "[3]", F(NAN, NAN, 2));
  rt_op(&r, "equal", "X=x Y=y", "Out=e");
  rt_op(&r, "not_equal", "X=x Y=y", "Out=n");
  rt_op(&r, "greater_equal", "X=x Y=y", "Out=g");
  if (rt_ok(&r, "comparisons with NaN")) {
    rt_expect(rt_get(&r, "e"), 3, D(0, 0, 0), 0, "NaN is not equal to anything");
    rt_expect(rt_get(&r, "n"), 3, D(1, 1, 1), 0, "NaN is not_equal to everything");
    rt_expect(rt_get(&r, "g"), 3, D(0, 0, 0), 0, "NaN is not >= anything");
  }
  rt_free(&r);
  /* A run-time mismatch. */
  rt_init(&r);
  rt_in_i64(&r, "x", "[2, 3]", L(1, 2, 3, 4, 5, 6));
  rt_in_i64(&r, "y", "[2]", L(1, 2));
  decl(r.f.b, "y", PD_INT64, "[-1]");
  rt_op(&r, "less_than", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ESHAPE, "less_than: cannot compare x [2, 3] and y [2]",
           "less_than: a mismatch at run time");
  rt_free(&r);
}

/* ---------------------------------------------------------------- logical ops */

static void test_logical(void) {
  rt r;
  rt_init(&r);
  rt_in(&r, "a", PD_BOOL, "[2, 2]", B(0, 1, 0, 1));
  rt_in(&r, "b", PD_BOOL, "[2, 1]", B(0, 1));
  rt_lod(&r, "a", 3, L(0, 1, 2));
  rt_op(&r, "logical_and", "X=a Y=b", "Out=and");
  rt_op(&r, "logical_or", "X=a Y=b", "Out=or");
  rt_op(&r, "logical_not", "X=a", "Out=not");
  if (rt_ok(&r, "logical ops of bools, broadcast")) {
    rt_expect(rt_get(&r, "and"), 4, D(0, 0, 0, 1), 0, "logical_and");
    rt_expect(rt_get(&r, "or"), 4, D(0, 1, 1, 1), 0, "logical_or");
    rt_expect(rt_get(&r, "not"), 4, D(1, 0, 1, 0), 0, "logical_not");
    ok(lod_is(rt_get(&r, "and"), 3, L(0, 1, 2)) && lod_is(rt_get(&r, "not"), 3, L(0, 1, 2)),
       "logical ops keep X's LoD");
  }
  rt_free(&r);

  /* In place; numbers read as x != 0. */
  rt_init(&r);
  pd_tensor *a = rt_in(&r, "a", PD_BOOL, "[3]", B(0, 1, 1));
  void *before = pd_tensor_data(a);
  rt_op(&r, "logical_not", "X=a", "Out=a");
  if (rt_ok(&r, "a = logical_not(a)")) {
    rt_expect(rt_get(&r, "a"), 3, D(1, 0, 0), 0, "a = logical_not(a): values");
    ok(pd_tensor_data(rt_get(&r, "a")) == before, "a = logical_not(a): in place");
  }
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[4]", F(0, 2.5f, -1, 0));
  rt_in_f32(&r, "y", "[4]", F(1, 0, 3, 0));
  rt_op(&r, "logical_and", "X=x Y=y", "Out=and");
  rt_op(&r, "logical_or", "X=x Y=y", "Out=or");
  rt_op(&r, "logical_not", "X=x", "Out=not");
  if (rt_ok(&r, "logical ops of floats")) {
    rt_expect(rt_get(&r, "and"), 4, D(0, 0, 1, 0), 0, "logical_and of floats");
    rt_expect(rt_get(&r, "or"), 4, D(1, 1, 1, 0), 0, "logical_or of floats");
    rt_expect(rt_get(&r, "not"), 4, D(1, 0, 0, 1), 0, "logical_not of floats");
  }
  rt_free(&r);
}

int main(void) {
  test_binary();
  test_binary_int();
  test_int_div();
  test_binary_misc();
  test_compare();
  test_logical();
  return tap_done();
}
