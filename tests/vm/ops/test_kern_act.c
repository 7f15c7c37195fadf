/* test_kern_act.c -- the activations with parameters (vm/ops/activation.c: gelu exact and
 * approximate, leaky_relu, elu, silu, swish, softplus, relu6, hard_swish, log_sigmoid), run
 * through the executor: values against the formulas written here in long double (softplus and
 * log_sigmoid as log1p(e^z), another form than the kernels'), fp32 over several blocks, large
 * |x| without overflow, in place, attributes, bad input, the backend's argument checks, and
 * finite-difference gradients at points near the kinks and far out. */
#include "config.h"

#include "tests/vm/ops/test_kern_math.h"

/* ---------------------------------------------------------------- references */

typedef struct act_case {
  const char *what;  /* the TAP text */
  const char *type;  /* the op */
  int nattrs;
  const char *names[3];
  double vals[3];    /* attribute values (set as the op's float attributes; gelu's is a bool) */
} act_case;

static long double ref(const act_case *c, long double x) {
  const char *t = c->type;
  /* Fluid's attributes are fp32: the op computes with the float nearest each value. */
  long double a = (float)c->vals[0], b = (float)c->vals[1], o = (float)c->vals[2];
  if (!strcmp(t, "gelu")) {
    if (c->nattrs && c->vals[0] != 0) /* approximate */
      return 0.5L * x * (1 + tanhl(sqrtl(2 / 3.14159265358979323846264338327950288L) *
                                   (x + 0.044715L * x * x * x)));
    return 0.5L * x * (1 + erfl(x / sqrtl(2)));
  }
  if (!strcmp(t, "leaky_relu")) return x > 0 ? x : a * x;
  if (!strcmp(t, "elu")) return x > 0 ? x : a * expm1l(x);
  if (!strcmp(t, "silu")) return x / (1 + expl(-x));
  if (!strcmp(t, "swish")) return x / (1 + expl(-a * x));
  if (!strcmp(t, "softplus")) return a * x > b ? x : log1pl(expl(a * x)) / a;
  if (!strcmp(t, "relu6")) return x < 0 ? 0 : x > a ? a : x;
  if (!strcmp(t, "hard_swish")) {
    long double v = x + o;
    return x * (v < 0 ? 0 : v > a ? a : v) / b;
  }
  return -log1pl(expl(-x)); /* log_sigmoid */
}

/* Every op with its attributes at their defaults (written out) and at other values. */
static const act_case cases[] = {
    {"gelu", "gelu", 1, {"approximate"}, {0}},
    {"gelu approximate", "gelu", 1, {"approximate"}, {1}},
    {"leaky_relu", "leaky_relu", 1, {"alpha"}, {0.02}},
    {"leaky_relu alpha 0.3", "leaky_relu", 1, {"alpha"}, {0.3}},
    {"elu", "elu", 1, {"alpha"}, {1.0}},
    {"elu alpha 0.5", "elu", 1, {"alpha"}, {0.5}},
    {"silu", "silu", 0, {NULL}, {0}},
    {"swish", "swish", 1, {"beta"}, {1.0}},
    {"swish beta 1.7", "swish", 1, {"beta"}, {1.7}},
    {"softplus", "softplus", 2, {"beta", "threshold"}, {1.0, 20.0}},
    {"softplus beta 2 threshold 1e4", "softplus", 2, {"beta", "threshold"}, {2.0, 1e4}},
    {"softplus beta 0.5 threshold 3", "softplus", 2, {"beta", "threshold"}, {0.5, 3.0}},
    {"relu6", "relu6", 1, {"threshold"}, {6.0}},
    {"relu6 threshold 2", "relu6", 1, {"threshold"}, {2.0}},
    {"hard_swish", "hard_swish", 3, {"threshold", "scale", "offset"}, {6.0, 6.0, 3.0}},
    {"hard_swish 4 5 1", "hard_swish", 3, {"threshold", "scale", "offset"}, {4.0, 5.0, 1.0}},
    {"logsigmoid", "logsigmoid", 0, {NULL}, {0}},
};

static void set_attrs(pd_op_desc *op, const act_case *c) {
  for (int i = 0; i < c->nattrs; i++) {
    int e = !strcmp(c->names[i], "approximate")
                ? pd_op_set_attr_bool(op, c->names[i], c->vals[i] != 0)
                : pd_op_set_attr_float(op, c->names[i], (float)c->vals[i]);
    if (e) bail("out of memory");
  }
}

/* Points near every kink (0; relu6's 2 and 6; hard_swish's -3, 3, -1 and 3 of the second set;
 * softplus's thresholds 3 / 0.5 = 6 and 20) but not on one, and far out. */
static const double pts[] = {-40,   -7.5,  -3.01, -2.99, -1.02, -0.98, -0.3,  -0.01,
                             0.01,  0.4,   1.3,   1.99,  2.01,  2.98,  3.02,  5.98,
                             6.02,  8.5,   19.5,  20.5,  40};
enum { NPTS = sizeof pts / sizeof pts[0] };

/* ---------------------------------------------------------------- values */

static void test_values(void) {
  char what[128];
  for (size_t k = 0; k < PD_ARRAY_LEN(cases); k++) {
    const act_case *c = &cases[k];
    double want[NPTS];
    for (int i = 0; i < NPTS; i++) want[i] = (double)ref(c, pts[i]);

    /* fp64, with LoD. */
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "x", "[3, 7]", pts);
    int64_t lod[] = {0, 1, 3};
    rt_lod(&r, "x", 3, lod);
    set_attrs(rt_op(&r, c->type, "X=x", "Out=y"), c);
    snprintf(what, sizeof what, "%s float64", c->what);
    if (rt_ok(&r, what)) {
      rt_expect(rt_get(&r, "y"), NPTS, want, 1e-14, what);
      snprintf(what, sizeof what, "%s keeps X's LoD", c->what);
      ok(lod_is(rt_get(&r, "y"), 3, lod), "%s", what);
    }
    rt_free(&r);

    /* fp32 over several blocks of the CPU kernel (and threads where there is a pool): 3000
     * values in [-12, 12), in place. */
    enum { N = 3000 };
    static double xs[N], w[N];
    static float xf[N];
    vals(xs, N, -12, 12, 11 + k, false);
    to_f32(xs, xf, N);
    for (int i = 0; i < N; i++) w[i] = (double)ref(c, xf[i]);
    rt_init(&r);
    pd_tensor *x = rt_in_f32(&r, "x", "[3000]", xf);
    void *before = pd_tensor_data(x);
    set_attrs(rt_op(&r, c->type, "X=x", "Out=x"), c);
    snprintf(what, sizeof what, "%s float32 in place", c->what);
    if (rt_ok(&r, what)) {
      rt_expect(rt_get(&r, "x"), N, w, 2e-6, what);
      ok(pd_tensor_data(rt_get(&r, "x")) == before, "%s keeps the storage", what);
    }
    rt_free(&r);
  }
}

/* softplus and log_sigmoid at large |x|: no inf, no NaN, and the tiny values kept (relative
 * error, where rt_expect's tolerance is absolute below 1). */
static void test_far_out(void) {
  const double xs[] = {-700, -500, -40, 40, 500, 700};
  long double want_sp[6], want_ls[6];
  for (int i = 0; i < 6; i++) {
    want_sp[i] = log1pl(expl((long double)xs[i]));
    want_ls[i] = -log1pl(expl(-(long double)xs[i]));
  }
  for (int t = 0; t < 2; t++) {
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "x", "[6]", xs);
    pd_op_desc *op = rt_op(&r, t ? "logsigmoid" : "softplus", "X=x", "Out=y");
    if (!t && pd_op_set_attr_float(op, "threshold", 1e30f)) bail("out of memory");
    const char *what = t ? "log_sigmoid float64 at |x| up to 700"
                         : "softplus float64 at |x| up to 700 (no threshold)";
    if (rt_ok(&r, what)) {
      const double *y = PD_TENSOR_F64(rt_get(&r, "y"));
      bool good = true;
      for (int i = 0; i < 6; i++) {
        long double w = t ? want_ls[i] : want_sp[i];
        if (!(fabsl(y[i] - w) <= 1e-14L * fabsl(w))) {
          good = false;
          printf("#   x = %g: got %.17g, want %.17Lg\n", xs[i], y[i], w);
        }
      }
      ok(good, "%s: each value to 1e-14 of itself", what);
    }
    rt_free(&r);

    float xf[6];
    to_f32(xs, xf, 6);
    rt_init(&r);
    rt_in_f32(&r, "x", "[6]", xf);
    rt_op(&r, t ? "logsigmoid" : "softplus", "X=x", "Out=y");
    what = t ? "log_sigmoid float32 at |x| up to 700" : "softplus float32 at |x| up to 700";
    if (rt_ok(&r, what)) {
      const float *y = PD_TENSOR_F32(rt_get(&r, "y"));
      bool good = true;
      for (int i = 0; i < 6; i++) {
        double w = t ? (double)want_ls[i] : xs[i] > 20 ? xs[i] : (double)want_sp[i];
        if (!isfinite(y[i]) || !(fabs(y[i] - w) <= 1e-6 * (fabs(w) > 1 ? fabs(w) : 1))) {
          good = false;
          printf("#   x = %g: got %.9g, want %.9g\n", xs[i], (double)y[i], w);
        }
      }
      ok(good, "%s: finite and right", what);
    }
    rt_free(&r);
  }
}

/* elu near 0 in fp32 keeps its digits (e^x - 1 would lose them): relative error. */
static void test_elu_small(void) {
  const float xf[] = {-1e-6f, -1e-4f, -0.01f, -0.124f, -0.126f, -0.5f};
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[6]", xf);
  rt_op(&r, "elu", "X=x", "Out=y");
  if (rt_ok(&r, "elu float32 near 0")) {
    const float *y = PD_TENSOR_F32(rt_get(&r, "y"));
    bool good = true;
    for (int i = 0; i < 6; i++) {
      long double w = expm1l(xf[i]);
      if (!(fabsl(y[i] - w) <= 3e-7L * fabsl(w))) {
        good = false;
        printf("#   x = %g: got %.9g, want %.9Lg\n", (double)xf[i], (double)y[i], w);
      }
    }
    ok(good, "elu float32 near 0: each value to 3e-7 of itself");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- gradients */

static void test_grads(void) {
  char what[128];
  for (size_t k = 0; k < PD_ARRAY_LEN(cases); k++) {
    const act_case *c = &cases[k];
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "x", "[3, 7]", pts);
    set_attrs(rt_op(&r, c->type, "X=x", "Out=y"), c);
    snprintf(what, sizeof what, "%s gradient", c->what);
    grad_check(&r, "X", "Out", what);
    rt_free(&r);
  }
  /* Large |x| where the naive forms overflow: softplus without its threshold and log_sigmoid. */
  const double far[] = {-700, -300, -45, 45, 300, 700};
  for (int t = 0; t < 2; t++) {
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "x", "[2, 3]", far);
    pd_op_desc *op = rt_op(&r, t ? "logsigmoid" : "softplus", "X=x", "Out=y");
    if (!t && pd_op_set_attr_float(op, "threshold", 1e30f)) bail("out of memory");
    grad_check(&r, "X", "Out", t ? "log_sigmoid gradient at |x| up to 700"
                                 : "softplus gradient at |x| up to 700 (no threshold)");
    rt_free(&r);
  }
  /* The gradient written over Out@GRAD (an in-place op's). */
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[4]", D(-2, -0.5, 0.5, 2));
  rt_in_f64(&r, "g", "[4]", D(1, 2, 3, 4));
  rt_op(&r, "leaky_relu_grad", "X=x Out@GRAD=g", "X@GRAD=g");
  if (rt_ok(&r, "leaky_relu_grad in place"))
    rt_expect(rt_get(&r, "g"), 4, D((double)0.02f, 2 * (double)0.02f, 3, 4), 1e-15,
              "leaky_relu_grad in place: values");
  rt_free(&r);
}

/* ---------------------------------------------------------------- bad input */

static void test_errors(void) {
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[2]", D(1, 2));
  pd_op_desc *op = rt_op(&r, "softplus", "X=x", "Out=y");
  if (pd_op_set_attr_float(op, "beta", 0)) bail("out of memory");
  rt_fails(&r, PD_EINVAL, "beta must not be 0", "softplus with beta 0 is refused at run time");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2]", D(1, 2));
  op = rt_op(&r, "hard_swish", "X=x", "Out=y");
  if (pd_op_set_attr_float(op, "scale", 0)) bail("out of memory");
  rt_fails(&r, PD_EINVAL, "scale must not be 0", "hard_swish with scale 0 is refused at run time");
  rt_free(&r);

  rt_init(&r);
  rt_in_i64(&r, "x", "[2]", L(1, 2));
  rt_op(&r, "gelu", "X=x", "Out=y");
  rt_fails(&r, PD_ETYPE, "gelu: X must be float16, float32 or float64, got int64",
           "gelu of int64 is refused");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3]", D(1, 2, 3));
  rt_in_f64(&r, "g", "[2]", D(1, 2));
  rt_op(&r, "elu_grad", "X=x Out@GRAD=g", "X@GRAD=dx");
  rt_fails(&r, PD_ESHAPE, "Out@GRAD", "elu_grad with Out@GRAD of another size is refused");
  rt_free(&r);
}

/* The backend's argument checks (kernels_int.h's pd_k_act_check), which the CUDA backend shares. */
static void test_backend_checks(void) {
  const pd_k_backend *k = pd_k_cpu();
  double x[2] = {1, 2}, y[2];
  const double p[3] = {1, 20, 0}, zero[3] = {0, 0, 0};
  is_int(k->act(PD_K_ACT_COUNT_, PD_FP64, 2, p, x, y), PD_EINVAL, "act: an unknown op");
  is_int(k->act(PD_K_ELU, PD_FP64, -1, p, x, y), PD_EINVAL, "act: a negative size");
  is_int(k->act(PD_K_ELU, PD_FP64, 2, NULL, x, y), PD_EINVAL, "act: elu without parameters");
  is_int(k->act(PD_K_GELU, PD_FP64, 2, NULL, x, y), PD_OK, "act: gelu takes no parameters");
  is_int(k->act(PD_K_SOFTPLUS, PD_FP64, 2, zero, x, y), PD_EINVAL, "act: softplus beta 0");
  is_int(k->act_grad(PD_K_HARD_SWISH, PD_FP64, 2, zero, x, x, y), PD_EINVAL,
         "act_grad: hard_swish scale 0");
  is_int(k->act(PD_K_ELU, PD_INT64, 2, p, x, y), PD_EUNSUPPORTED, "act: int64 is unsupported");
  ok(!strcmp(pd_k_act_name(PD_K_GELU_TANH), "gelu_tanh") &&
         pd_k_act_from_name("log_sigmoid") == PD_K_LOG_SIGMOID && pd_k_act_from_name("x") == -1,
     "act names");
}

int main(void) {
  test_values();
  test_far_out();
  test_elu_small();
  test_grads();
  test_errors();
  test_backend_checks();
  return tap_done();
}
