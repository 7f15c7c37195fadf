/* test_kern_norm.c -- the normalisation ops (vm/ops/norm.c): batch_norm (NCHW, NC and NHWC; batch
 * statistics with the running mean and variance updated in place or into other vars, a
 * MomentumTensor; is_test and use_global_stats with the running ones; fp32 and fp64) and
 * layer_norm (begin_norm_axis, with and without Scale and Bias) against the formulas written
 * here, every gradient against finite differences, and the errors of bad input (a Scale of the
 * wrong size, a one-row batch in training, begin_norm_axis out of range, a bad epsilon). */
#include "config.h"

#include "tests/vm/ops/gradcheck.h"

static void fill_rand(double *d, int n, uint64_t seed) {
  for (int i = 0; i < n; i++) d[i] = gc_weight_(&seed);
}

/* ---------------------------------------------------------------- references */

/* (The attributes momentum and epsilon are float32: the references take their float values.) */

/* batch_norm of x [n, c, s] (index (i * c + ch) * s + k); global: with mean and var, else with
 * the batch's mean and biased variance. Writes y and the statistics used (mu, r = 1/sqrt(v+e)),
 * and the running statistics updated with momentum into mo, vo (batch statistics only). */
static void bn_ref(int n, int c, int s, const double *x, const double *scale, const double *bias,
                   const double *mean, const double *var, bool global, double momentum,
                   double eps, double *y, double *mu, double *r, double *mo, double *vo) {
  for (int ch = 0; ch < c; ch++) {
    double m = 0, v = 0, cnt = (double)n * s;
    if (global) {
      m = mean[ch];
      v = var[ch];
    } else {
      for (int i = 0; i < n; i++)
        for (int k = 0; k < s; k++) m += x[(i * c + ch) * s + k];
      m /= cnt;
      for (int i = 0; i < n; i++)
        for (int k = 0; k < s; k++) v += pow(x[(i * c + ch) * s + k] - m, 2);
      v /= cnt;
      mo[ch] = momentum * mean[ch] + (1 - momentum) * m;
      vo[ch] = momentum * var[ch] + (1 - momentum) * v;
    }
    mu[ch] = m;
    r[ch] = 1 / sqrt(v + eps);
    for (int i = 0; i < n; i++)
      for (int k = 0; k < s; k++) {
        int at = (i * c + ch) * s + k;
        y[at] = (x[at] - m) * r[ch] * scale[ch] + bias[ch];
      }
  }
}

/* layer_norm of x [rows, cols]; scale, bias may be NULL. */
static void ln_ref(int rows, int cols, const double *x, const double *scale, const double *bias,
                   double eps, double *y, double *mean, double *var) {
  for (int i = 0; i < rows; i++) {
    double m = 0, v = 0;
    for (int k = 0; k < cols; k++) m += x[i * cols + k];
    m /= cols;
    for (int k = 0; k < cols; k++) v += pow(x[i * cols + k] - m, 2);
    v /= cols;
    mean[i] = m;
    var[i] = v;
    for (int k = 0; k < cols; k++)
      y[i * cols + k] = (x[i * cols + k] - m) / sqrt(v + eps) * (scale ? scale[k] : 1) +
                        (bias ? bias[k] : 0);
  }
}

/* NHWC x [n, h, w, c] to NCHW order [n, c, h * w] (for bn_ref), and back. */
static void nhwc_to_nchw(int n, int hw, int c, const double *in, double *out) {
  for (int i = 0; i < n; i++)
    for (int p = 0; p < hw; p++)
      for (int ch = 0; ch < c; ch++) out[(i * c + ch) * hw + p] = in[(i * hw + p) * c + ch];
}
static void nchw_to_nhwc(int n, int hw, int c, const double *in, double *out) {
  for (int i = 0; i < n; i++)
    for (int p = 0; p < hw; p++)
      for (int ch = 0; ch < c; ch++) out[(i * hw + p) * c + ch] = in[(i * c + ch) * hw + p];
}

/* ---------------------------------------------------------------- batch_norm */

typedef struct bn_case {
  const char *shape;   /* X */
  int n, c, s;         /* its [n, c, s] view in NCHW order */
  bool nhwc, global, is_test, in_place;
} bn_case;

enum { BN_MAX = 256 };

static void bn_inputs(rt *r, const bn_case *k, const double *x, const double *p) {
  char cs[32];
  snprintf(cs, sizeof cs, "[%d]", k->c);
  rt_in_f64(r, "x", k->shape, x);
  rt_in_f64(r, "scale", cs, p);
  rt_in_f64(r, "bias", cs, p + k->c);
  rt_in_f64(r, "mean", cs, p + 2 * k->c);
  rt_in_f64(r, "var", cs, p + 3 * k->c);
}

static pd_op_desc *bn_op(rt *r, const bn_case *k) {
  pd_op_desc *op = rt_op(r, "batch_norm", "X=x Scale=scale Bias=bias Mean=mean Variance=var",
                         k->in_place ? "Y=y MeanOut=mean VarianceOut=var SavedMean=sm "
                                       "SavedVariance=sv"
                                     : "Y=y MeanOut=mo VarianceOut=vo SavedMean=sm "
                                       "SavedVariance=sv");
  if (k->nhwc) pd_op_set_attr_string(op, "data_layout", "NHWC");
  if (k->global) pd_op_set_attr_bool(op, "use_global_stats", true);
  if (k->is_test) pd_op_set_attr_bool(op, "is_test", true);
  pd_op_set_attr_float(op, "momentum", 0.8f);
  pd_op_set_attr_float(op, "epsilon", 1e-3f);
  return op;
}

static void check_bn(const bn_case *k, const char *what) {
  int numel = k->n * k->c * k->s;
  double x[BN_MAX], p[4 * 16], xn[BN_MAX], y[BN_MAX], yn[BN_MAX], mu[16], rr[16], mo[16], vo[16];
  fill_rand(x, numel, 11);
  fill_rand(p, 4 * k->c, 12);
  for (int i = 0; i < k->c; i++) p[3 * k->c + i] = 0.5 + fabs(p[3 * k->c + i]); /* variances */
  for (int i = 0; i < numel; i++) x[i] = 2 * x[i] + 0.3 * (i % 3);
  if (k->nhwc) nhwc_to_nchw(k->n, k->s, k->c, x, xn);
  else memcpy(xn, x, sizeof(double) * (size_t)numel);
  bool global = k->global || k->is_test;
  bn_ref(k->n, k->c, k->s, xn, p, p + k->c, p + 2 * k->c, p + 3 * k->c, global, (double)0.8f, (double)1e-3f, yn,
         mu, rr, mo, vo);
  if (k->nhwc) nchw_to_nhwc(k->n, k->s, k->c, yn, y);
  else memcpy(y, yn, sizeof(double) * (size_t)numel);
  rt r;
  rt_init(&r);
  bn_inputs(&r, k, x, p);
  bn_op(&r, k);
  char buf[160];
  snprintf(buf, sizeof buf, "batch_norm %s", what);
  if (rt_ok(&r, buf)) {
    snprintf(buf, sizeof buf, "batch_norm %s: Y", what);
    rt_expect(rt_get(&r, "y"), numel, y, 1e-12, buf);
    snprintf(buf, sizeof buf, "batch_norm %s: SavedMean, SavedVariance (1 / std)", what);
    rt_expect(rt_get(&r, "sm"), k->c, mu, 1e-12, buf);
    rt_expect(rt_get(&r, "sv"), k->c, rr, 1e-12, buf);
    const char *mname = k->in_place ? "mean" : "mo", *vname = k->in_place ? "var" : "vo";
    snprintf(buf, sizeof buf, "batch_norm %s: MeanOut, VarianceOut%s", what,
             global ? " keep the running statistics" : " = 0.8 * running + 0.2 * batch");
    rt_expect(rt_get(&r, mname), k->c, global ? p + 2 * k->c : mo, 1e-12, buf);
    rt_expect(rt_get(&r, vname), k->c, global ? p + 3 * k->c : vo, 1e-12, buf);
  }
  rt_free(&r);
  /* The gradients, with the statistics out of the way (MeanOut into other vars). */
  bn_case g = *k;
  g.in_place = false;
  rt_init(&r);
  bn_inputs(&r, &g, x, p);
  bn_op(&r, &g);
  snprintf(buf, sizeof buf, "batch_norm_grad %s", what);
  grad_check(&r, "X Scale Bias", "Y", buf);
  rt_free(&r);
}

static void test_batch_norm(void) {
  static const bn_case cases[] = {
      {"[2, 3, 2, 2]", 2, 3, 4, false, false, false, false},
      {"[2, 3, 2, 2]", 2, 3, 4, false, false, false, true},
      {"[5, 3]", 5, 3, 1, false, false, false, true},
      {"[2, 1]", 2, 1, 1, false, false, false, false},
      {"[3, 2, 5]", 3, 2, 5, false, false, false, false},
      {"[2, 2, 3, 4]", 12, 4, 1, true, false, false, false}, /* NHWC: [n * h * w, c] */
      {"[3, 2, 1, 2]", 3, 2, 2, false, true, false, true},    /* use_global_stats */
      {"[3, 4, 2, 2]", 3, 4, 4, false, false, true, true},    /* is_test */
      {"[1, 3]", 1, 3, 1, false, false, true, true},          /* is_test: one row is fine */
  };
  static const char *const names[] = {
      "NCHW [2, 3, 2, 2]",   "NCHW [2, 3, 2, 2] in place", "NC [5, 3] in place",
      "NC [2, 1]",           "[3, 2, 5]",                  "NHWC [2, 2, 3, 4]",
      "use_global_stats",    "is_test",                    "is_test on one row"};
  for (size_t i = 0; i < PD_ARRAY_LEN(cases); i++) check_bn(&cases[i], names[i]);

  /* fp32 against the fp64 formula. */
  double x[24], p[12], y[24], mu[3], rr[3], mo[3], vo[3];
  float xf[24], pf[12];
  fill_rand(x, 24, 3);
  fill_rand(p, 12, 4);
  for (int i = 9; i < 12; i++) p[i] = 1 + fabs(p[i]);
  for (int i = 0; i < 24; i++) xf[i] = (float)x[i], x[i] = xf[i];
  for (int i = 0; i < 12; i++) pf[i] = (float)p[i], p[i] = pf[i];
  bn_ref(2, 3, 4, x, p, p + 3, p + 6, p + 9, false, (double)0.9f, (double)1e-5f, y, mu, rr, mo, vo);
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3, 4]", xf);
  rt_in_f32(&r, "scale", "[3]", pf);
  rt_in_f32(&r, "bias", "[3]", pf + 3);
  rt_in_f32(&r, "mean", "[3]", pf + 6);
  rt_in_f32(&r, "var", "[3]", pf + 9);
  rt_op(&r, "batch_norm", "X=x Scale=scale Bias=bias Mean=mean Variance=var",
        "Y=y MeanOut=mean VarianceOut=var SavedMean=sm SavedVariance=sv");
  if (rt_ok(&r, "batch_norm fp32")) {
    rt_expect(rt_get(&r, "y"), 24, y, 1e-5, "batch_norm fp32: Y (default momentum 0.9)");
    rt_expect(rt_get(&r, "mean"), 3, mo, 1e-6, "batch_norm fp32: the running mean in place");
    rt_expect(rt_get(&r, "var"), 3, vo, 1e-6, "batch_norm fp32: the running variance in place");
  }
  rt_free(&r);

  /* MomentumTensor overrides momentum; three steps update the running statistics three times. */
  rt_init(&r);
  fill_rand(x, 12, 8);
  for (int i = 0; i < 4; i++) p[i] = 1, p[4 + i] = 0, p[8 + i] = 0;
  double ones[4] = {1, 1, 1, 1};
  rt_in_f64(&r, "x", "[3, 4]", x);
  rt_in_f64(&r, "scale", "[4]", p);
  rt_in_f64(&r, "bias", "[4]", p + 4);
  rt_in_f64(&r, "mean", "[4]", p + 8);
  rt_in_f64(&r, "var", "[4]", ones);
  rt_in_f64(&r, "mom", "[1]", (double[]){0.5});
  rt_op(&r, "batch_norm", "X=x Scale=scale Bias=bias Mean=mean Variance=var MomentumTensor=mom",
        "Y=y MeanOut=mean VarianceOut=var SavedMean=sm SavedVariance=sv");
  bool good = true;
  double rm[4] = {0, 0, 0, 0}, rv[4] = {1, 1, 1, 1};
  for (int step = 0; step < 3 && good; step++) {
    good = rt_run(&r) == PD_OK;
    for (int ch = 0; ch < 4; ch++) {
      double m = (x[ch] + x[4 + ch] + x[8 + ch]) / 3, v = 0;
      for (int i = 0; i < 3; i++) v += pow(x[4 * i + ch] - m, 2);
      rm[ch] = 0.5 * rm[ch] + 0.5 * m;
      rv[ch] = 0.5 * rv[ch] + 0.5 * v / 3;
    }
  }
  ok(good, "batch_norm with MomentumTensor runs 3 times");
  rt_expect(rt_get(&r, "mean"), 4, rm, 1e-12, "3 steps: running mean by MomentumTensor 0.5");
  rt_expect(rt_get(&r, "var"), 4, rv, 1e-12, "3 steps: running variance by MomentumTensor 0.5");
  rt_free(&r);

  /* Bad input. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 3]", x);
  rt_in_f64(&r, "scale", "[3]", p);
  rt_in_f64(&r, "bias", "[3]", p);
  rt_in_f64(&r, "mean", "[3]", p);
  rt_in_f64(&r, "var", "[3]", ones);
  rt_op(&r, "batch_norm", "X=x Scale=scale Bias=bias Mean=mean Variance=var",
        "Y=y MeanOut=mean VarianceOut=var SavedMean=sm SavedVariance=sv");
  rt_fails(&r, PD_EINVAL, "one value per channel", "batch_norm: a one-row batch in training");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 3, 1, 1]", x);
  rt_in_f64(&r, "scale", "[3]", p);
  rt_in_f64(&r, "bias", "[3]", p);
  rt_in_f64(&r, "mean", "[3]", p);
  rt_in_f64(&r, "var", "[3]", ones);
  rt_op(&r, "batch_norm", "X=x Scale=scale Bias=bias Mean=mean Variance=var",
        "Y=y MeanOut=mean VarianceOut=var SavedMean=sm SavedVariance=sv");
  rt_fails(&r, PD_EINVAL, "N * H * W = 1", "batch_norm: [1, 3, 1, 1] in training");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[4, 3]", x);
  rt_in_f64(&r, "scale", "[2]", p);
  rt_in_f64(&r, "bias", "[3]", p);
  rt_in_f64(&r, "mean", "[3]", p);
  rt_in_f64(&r, "var", "[3]", ones);
  rt_op(&r, "batch_norm", "X=x Scale=scale Bias=bias Mean=mean Variance=var",
        "Y=y MeanOut=mean VarianceOut=var SavedMean=sm SavedVariance=sv");
  rt_fails(&r, PD_ESHAPE, "Scale [2] must have 3 elements", "batch_norm: a Scale of 2 for 3 channels");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[4]", x);
  rt_in_f64(&r, "scale", "[4]", p);
  rt_in_f64(&r, "bias", "[4]", p);
  rt_in_f64(&r, "mean", "[4]", p);
  rt_in_f64(&r, "var", "[4]", ones);
  rt_op(&r, "batch_norm", "X=x Scale=scale Bias=bias Mean=mean Variance=var",
        "Y=y MeanOut=mean VarianceOut=var SavedMean=sm SavedVariance=sv");
  rt_fails(&r, PD_ESHAPE, "X must have 2 to 5 dims", "batch_norm: a 1-D X");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[4, 3]", x);
  rt_in_f64(&r, "scale", "[3]", p);
  rt_in_f64(&r, "bias", "[3]", p);
  rt_in_f64(&r, "mean", "[3]", p);
  rt_in_f64(&r, "var", "[3]", ones);
  pd_op_desc *op = rt_op(&r, "batch_norm", "X=x Scale=scale Bias=bias Mean=mean Variance=var",
                         "Y=y MeanOut=mean VarianceOut=var SavedMean=sm SavedVariance=sv");
  pd_op_set_attr_float(op, "epsilon", -1.0f);
  rt_fails(&r, PD_EINVAL, "epsilon must be non-negative", "batch_norm: a negative epsilon");
  rt_free(&r);
}

/* ---------------------------------------------------------------- layer_norm */

typedef struct ln_case {
  const char *shape;
  int axis, rows, cols;
  bool scale, bias;
} ln_case;

static void check_ln(const ln_case *k) {
  int numel = k->rows * k->cols;
  double x[256], sc[64], bi[64], y[256], mean[64], var[64];
  fill_rand(x, numel, 21);
  fill_rand(sc, k->cols, 22);
  fill_rand(bi, k->cols, 23);
  for (int i = 0; i < numel; i++) x[i] = 3 * x[i] + 0.5 * (i % 4);
  ln_ref(k->rows, k->cols, x, k->scale ? sc : NULL, k->bias ? bi : NULL, (double)1e-5f, y, mean,
         var);
  char what[160], cs[32], ins[96];
  snprintf(what, sizeof what, "layer_norm %s begin_norm_axis %d%s%s", k->shape, k->axis,
           k->scale ? " Scale" : "", k->bias ? " Bias" : "");
  snprintf(cs, sizeof cs, "[%d]", k->cols);
  snprintf(ins, sizeof ins, "X=x%s%s", k->scale ? " Scale=sc" : "", k->bias ? " Bias=bi" : "");
  for (int pass = 0; pass < 2; pass++) {
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "x", k->shape, x);
    if (k->scale) rt_in_f64(&r, "sc", cs, sc);
    if (k->bias) rt_in_f64(&r, "bi", cs, bi);
    pd_op_desc *op = rt_op(&r, "layer_norm", ins, "Y=y Mean=m Variance=v");
    pd_op_set_attr_int(op, "begin_norm_axis", k->axis);
    if (pass == 0) {
      if (rt_ok(&r, what)) {
        rt_expect(rt_get(&r, "y"), numel, y, 1e-12, what);
        rt_expect(rt_get(&r, "m"), k->rows, mean, 1e-12, what);
        rt_expect(rt_get(&r, "v"), k->rows, var, 1e-12, what);
      }
    } else {
      char wrt[32];
      snprintf(wrt, sizeof wrt, "X%s%s", k->scale ? " Scale" : "", k->bias ? " Bias" : "");
      grad_check(&r, wrt, "Y", what);
    }
    rt_free(&r);
  }
}

static void test_layer_norm(void) {
  static const ln_case cases[] = {
      {"[3, 4]", 1, 3, 4, true, true},       {"[3, 4]", 1, 3, 4, false, false},
      {"[2, 3, 4]", 1, 2, 12, true, true},   {"[2, 3, 4]", 2, 6, 4, true, false},
      {"[2, 3, 4]", 2, 6, 4, false, true},   {"[2, 1, 3, 2]", 3, 6, 2, true, true},
      {"[1, 5]", 1, 1, 5, true, true},       {"[4, 1]", 1, 4, 1, true, true},
  };
  for (size_t i = 0; i < PD_ARRAY_LEN(cases); i++) check_ln(&cases[i]);

  /* fp32 with the default attributes. */
  double x[12], y[12], m[3], v[3];
  float xf[12];
  fill_rand(x, 12, 5);
  for (int i = 0; i < 12; i++) xf[i] = (float)x[i], x[i] = xf[i];
  ln_ref(3, 4, x, NULL, NULL, (double)1e-5f, y, m, v);
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[3, 4]", xf);
  rt_op(&r, "layer_norm", "X=x", "Y=y Mean=m Variance=v");
  if (rt_ok(&r, "layer_norm fp32")) {
    rt_expect(rt_get(&r, "y"), 12, y, 1e-5, "layer_norm fp32: Y");
    rt_expect(rt_get(&r, "v"), 3, v, 1e-6, "layer_norm fp32: Variance");
  }
  rt_free(&r);

  /* Bad input. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 4]", x);
  pd_op_desc *op = rt_op(&r, "layer_norm", "X=x", "Y=y Mean=m Variance=v");
  pd_op_set_attr_int(op, "begin_norm_axis", 2);
  rt_fails(&r, PD_EINVAL, "begin_norm_axis must be in [1, 2)", "layer_norm: begin_norm_axis 2 of 2 dims");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 4]", x);
  op = rt_op(&r, "layer_norm", "X=x", "Y=y Mean=m Variance=v");
  pd_op_set_attr_int(op, "begin_norm_axis", 0);
  rt_fails(&r, PD_EINVAL, "begin_norm_axis must be in [1, 2)", "layer_norm: begin_norm_axis 0");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 4]", x);
  rt_in_f64(&r, "sc", "[3]", x);
  rt_op(&r, "layer_norm", "X=x Scale=sc", "Y=y Mean=m Variance=v");
  rt_fails(&r, PD_ESHAPE, "Scale [3] must have 4 elements", "layer_norm: a Scale of 3 for rows of 4");
  rt_free(&r);
}

/* The CPU backend's wide cases, against the formulas: batch_norm over [n, c, 1] with more
 * channels than kernels/cpu/norm.c sums together in one block (256), forward and backward, and
 * layer_norm's parameter gradients over more columns than one block. */
static void test_wide(void) {
  enum { N = 5, C = 300 };
  static double x[N * C], dy[N * C], sc[C], bi[C], rm[C], rv[C], y[N * C], mu[C], rr[C], mo[C],
      vo[C], gy[N * C], ms[C], ss[C], mo2[C], vo2[C], dx[N * C], dsc[C], dbi[C];
  fill_rand(x, N * C, 21);
  fill_rand(dy, N * C, 22);
  fill_rand(sc, C, 23);
  fill_rand(bi, C, 24);
  for (int i = 0; i < C; i++) rm[i] = 0.1 * i / C, rv[i] = 1 + 0.01 * i;
  bn_ref(N, C, 1, x, sc, bi, rm, rv, false, 0.9, 1e-5, y, mu, rr, mo, vo);
  const pd_k_backend *k = pd_k_cpu();
  memcpy(mo2, rm, sizeof mo2);
  memcpy(vo2, rv, sizeof vo2);
  bool okf = k->batch_norm(PD_FP64, N, C, 1, x, sc, bi, mo2, vo2, false, 0.9, 1e-5, gy, mo2, vo2,
                           ms, ss) == PD_OK;
  double err = 0;
  for (int i = 0; okf && i < N * C; i++) err = fmax(err, fabs(gy[i] - y[i]));
  for (int i = 0; okf && i < C; i++)
    err = fmax(err, fmax(fabs(ms[i] - mu[i]), fmax(fabs(ss[i] - rr[i]),
                                                   fmax(fabs(mo2[i] - mo[i]), fabs(vo2[i] - vo[i])))));
  ok(okf && err < 1e-12, "batch_norm NC [5, 300]: Y and the statistics (max error %g)", err);
  /* Backward, from the formula: xhat = (x - mu) r, dbias = sum dy, dscale = sum dy xhat,
   * dx = scale r (dy - (dbias + xhat dscale) / n). */
  bool okb = k->batch_norm_grad(PD_FP64, N, C, 1, x, sc, ms, ss, false, dy, dx, dsc, dbi) == PD_OK;
  err = 0;
  for (int ch = 0; okb && ch < C; ch++) {
    double b = 0, g = 0;
    for (int i = 0; i < N; i++) {
      b += dy[i * C + ch];
      g += dy[i * C + ch] * (x[i * C + ch] - mu[ch]) * rr[ch];
    }
    err = fmax(err, fmax(fabs(dbi[ch] - b), fabs(dsc[ch] - g)));
    for (int i = 0; i < N; i++) {
      double xh = (x[i * C + ch] - mu[ch]) * rr[ch];
      double want = sc[ch] * rr[ch] * (dy[i * C + ch] - (b + xh * g) / N);
      err = fmax(err, fabs(dx[i * C + ch] - want));
    }
  }
  ok(okb && err < 1e-12, "batch_norm_grad NC [5, 300]: dX, dScale, dBias (max error %g)", err);
  /* layer_norm over rows of 300: dscale and dbias are column sums. */
  double lm[N], lv[N];
  bool okl = k->layer_norm(PD_FP64, N, C, x, sc, bi, 1e-5, gy, lm, lv) == PD_OK &&
             k->layer_norm_grad(PD_FP64, N, C, x, sc, lm, lv, 1e-5, dy, dx, dsc, dbi) == PD_OK;
  err = 0;
  for (int col = 0; okl && col < C; col++) {
    double b = 0, g = 0;
    for (int i = 0; i < N; i++) {
      double m = 0, v = 0;
      for (int q = 0; q < C; q++) m += x[i * C + q] / C;
      for (int q = 0; q < C; q++) v += (x[i * C + q] - m) * (x[i * C + q] - m) / C;
      b += dy[i * C + col];
      g += dy[i * C + col] * (x[i * C + col] - m) / sqrt(v + 1e-5);
    }
    err = fmax(err, fmax(fabs(dbi[col] - b), fabs(dsc[col] - g)));
  }
  ok(okl && err < 1e-12, "layer_norm_grad [5, 300]: dScale, dBias (max error %g)", err);
}

/* The CPU backend's other layouts and long runs, in fp64 (against the formulas, to 1e-11) and
 * fp32 (against the fp64 formulas, to 1e-6 relative to the values' scale), forward and backward:
 * short planes (s <= 256, summed across rows without a reduction per plane) over more rows than
 * one float partial sum takes (64), planes longer than a partial sum's run (512), and layer_norm
 * over more rows than one chunk of its parameter sums (32) and rows longer than a run. fp32 data
 * sits at 1000 +- 1 in every layout (the statistics must not lose the deviations to the mean). */
static double rel_err(double got, double want, double scale) {
  return fabs(got - want) / (scale + fabs(want));
}

static void check_bn_layout(int n, int c, int s) {
  int numel = n * c * s;
  double *x = malloc(sizeof(double) * (size_t)numel * 5), *dy = x + numel, *y = dy + numel,
         *dx = y + numel, *got = dx + numel;
  double *p = malloc(sizeof(double) * (size_t)c * 12), *sc = p, *bi = p + c, *rm = p + 2 * c,
         *rv = p + 3 * c, *mu = p + 4 * c, *rr = p + 5 * c, *mo = p + 6 * c, *vo = p + 7 * c,
         *dsc = p + 8 * c, *dbi = p + 9 * c, *ms = p + 10 * c, *ss = p + 11 * c;
  float *f = malloc(sizeof(float) * ((size_t)numel * 3 + (size_t)c * 8));
  float *fin = f, *fdy = fin + numel, *fy = fdy + numel, *fp = fy + numel;
  fill_rand(x, numel, 31);
  fill_rand(dy, numel, 32);
  fill_rand(sc, c, 33);
  fill_rand(bi, c, 34);
  for (int i = 0; i < numel; i++) x[i] = 1000 + x[i];  /* fp32 at 1000 +- 1 */
  for (int i = 0; i < c; i++) rm[i] = 0, rv[i] = 1;
  bn_ref(n, c, s, x, sc, bi, rm, rv, false, 0.9, 1e-5, y, mu, rr, mo, vo);
  /* Backward reference: xhat = (x - mu) r, dbias = sum dy, dscale = sum dy xhat,
   * dx = scale r (dy - (dbias + xhat dscale) / cnt). */
  double cnt = (double)n * s;
  for (int ch = 0; ch < c; ch++) {
    double b = 0, g = 0;
    for (int i = 0; i < n; i++)
      for (int k = 0; k < s; k++) {
        int at = (i * c + ch) * s + k;
        b += dy[at];
        g += dy[at] * (x[at] - mu[ch]) * rr[ch];
      }
    dbi[ch] = b;
    dsc[ch] = g;
    for (int i = 0; i < n; i++)
      for (int k = 0; k < s; k++) {
        int at = (i * c + ch) * s + k;
        dx[at] = sc[ch] * rr[ch] * (dy[at] - (b + (x[at] - mu[ch]) * rr[ch] * g) / cnt);
      }
  }
  const pd_k_backend *k = pd_k_cpu();
  /* fp64 */
  double e64 = 0, *m2 = p + 6 * c, *v2 = p + 7 * c;
  double *gsc = malloc(sizeof(double) * (size_t)c * 2), *gbi = gsc + c;
  for (int i = 0; i < c; i++) m2[i] = 0, v2[i] = 1;
  bool ok64 = k->batch_norm(PD_FP64, n, c, s, x, sc, bi, m2, v2, false, 0.9, 1e-5, got, m2, v2, ms,
                            ss) == PD_OK;
  for (int i = 0; ok64 && i < numel; i++) e64 = fmax(e64, rel_err(got[i], y[i], 1));
  for (int i = 0; ok64 && i < c; i++)
    e64 = fmax(e64, fmax(rel_err(ms[i], mu[i], 1), rel_err(ss[i], rr[i], 1)));
  ok64 = ok64 && k->batch_norm_grad(PD_FP64, n, c, s, x, sc, ms, ss, false, dy, got, gsc, gbi) ==
                     PD_OK;
  for (int i = 0; ok64 && i < numel; i++) e64 = fmax(e64, rel_err(got[i], dx[i], 1));
  for (int i = 0; ok64 && i < c; i++)
    e64 = fmax(e64, fmax(rel_err(gsc[i], dsc[i], 1), rel_err(gbi[i], dbi[i], 1)));
  ok(ok64 && e64 < 1e-11, "batch_norm fp64 [%d, %d, %d]: Y, statistics, dX, dScale, dBias (max "
     "relative error %g)", n, c, s, e64);
  /* fp32 */
  float *fsc = fp, *fbi = fp + c, *fm = fp + 2 * c, *fv = fp + 3 * c, *fsm = fp + 4 * c,
        *fsr = fp + 5 * c, *fgs = fp + 6 * c, *fgb = fp + 7 * c;
  for (int i = 0; i < numel; i++) fin[i] = (float)x[i], fdy[i] = (float)dy[i];
  for (int i = 0; i < c; i++) fsc[i] = (float)sc[i], fbi[i] = (float)bi[i], fm[i] = 0, fv[i] = 1;
  double e32 = 0;
  bool ok32 = k->batch_norm(PD_FP32, n, c, s, fin, fsc, fbi, fm, fv, false, 0.9, 1e-5, fy, fm, fv,
                            fsm, fsr) == PD_OK;
  /* The reference from the fp32-rounded inputs. */
  for (int i = 0; i < numel; i++) x[i] = fin[i], dy[i] = fdy[i];
  for (int i = 0; i < c; i++) sc[i] = fsc[i], bi[i] = fbi[i];
  bn_ref(n, c, s, x, sc, bi, rm, rv, false, 0.9, 1e-5, y, mu, rr, mo, vo);
  for (int i = 0; ok32 && i < numel; i++) e32 = fmax(e32, rel_err(fy[i], y[i], 1));
  for (int i = 0; ok32 && i < c; i++)
    e32 = fmax(e32, fmax(rel_err(fsm[i], mu[i], 1), rel_err(fsr[i], rr[i], 1)));
  ok32 = ok32 && k->batch_norm_grad(PD_FP32, n, c, s, fin, fsc, fsm, fsr, false, fdy, fy, fgs,
                                    fgb) == PD_OK;
  /* The gradient of the statistics the forward saved (in fp32, as Fluid's SavedMean). */
  for (int ch = 0; ch < c; ch++) mu[ch] = fsm[ch], rr[ch] = fsr[ch];
  for (int ch = 0; ok32 && ch < c; ch++) {
    double b = 0, g = 0;
    for (int i = 0; i < n; i++)
      for (int q = 0; q < s; q++) {
        int at = (i * c + ch) * s + q;
        b += dy[at];
        g += dy[at] * (x[at] - mu[ch]) * rr[ch];
      }
    e32 = fmax(e32, fmax(rel_err(fgb[ch], b, sqrt(cnt)), rel_err(fgs[ch], g, sqrt(cnt))));
    for (int i = 0; i < n; i++)
      for (int q = 0; q < s; q++) {
        int at = (i * c + ch) * s + q;
        double want = sc[ch] * rr[ch] * (dy[at] - (b + (x[at] - mu[ch]) * rr[ch] * g) / cnt);
        e32 = fmax(e32, rel_err(fy[at], want, 1));
      }
  }
  ok(ok32 && e32 < 1e-6, "batch_norm fp32 [%d, %d, %d] at 1000 +- 1: Y, statistics, dX, dScale, "
     "dBias (max relative error %g)", n, c, s, e32);
  free(gsc);
  free(f);
  free(p);
  free(x);
}

static void check_ln_layout(int rows, int cols) {
  int numel = rows * cols;
  double *x = malloc(sizeof(double) * (size_t)numel * 3), *dy = x + numel, *y = dy + numel;
  double *sc = malloc(sizeof(double) * (size_t)(cols * 4 + rows * 2)), *bi = sc + cols,
         *dsc = bi + cols, *dbi = dsc + cols, *mean = dbi + cols, *var = mean + rows;
  float *f = malloc(sizeof(float) * ((size_t)numel * 4 + (size_t)cols * 4 + (size_t)rows * 2));
  float *fin = f, *fdy = fin + numel, *fy = fdy + numel, *fdx = fy + numel, *fsc = fdx + numel,
        *fbi = fsc + cols, *fgs = fbi + cols, *fgb = fgs + cols, *fm = fgb + cols, *fv = fm + rows;
  fill_rand(x, numel, 41);
  fill_rand(dy, numel, 42);
  fill_rand(sc, cols, 43);
  fill_rand(bi, cols, 44);
  for (int i = 0; i < numel; i++) fin[i] = (float)(1000 + x[i]), x[i] = fin[i];
  for (int i = 0; i < numel; i++) fdy[i] = (float)dy[i], dy[i] = fdy[i];
  for (int i = 0; i < cols; i++) fsc[i] = (float)sc[i], sc[i] = fsc[i], fbi[i] = (float)bi[i],
                                 bi[i] = fbi[i];
  ln_ref(rows, cols, x, sc, bi, (double)1e-5f, y, mean, var);
  const pd_k_backend *k = pd_k_cpu();
  bool okf = k->layer_norm(PD_FP32, rows, cols, fin, fsc, fbi, 1e-5f, fy, fm, fv) == PD_OK &&
             k->layer_norm_grad(PD_FP32, rows, cols, fin, fsc, fm, fv, 1e-5f, fdy, fdx, fgs, fgb) ==
                 PD_OK;
  double e = 0;
  for (int i = 0; okf && i < numel; i++) e = fmax(e, rel_err(fy[i], y[i], 1));
  for (int i = 0; okf && i < rows; i++)
    e = fmax(e, fmax(rel_err(fm[i], mean[i], 1), rel_err(fv[i], var[i], 1)));
  /* The gradient of the statistics the forward saved (in fp32). */
  for (int i = 0; i < rows; i++) mean[i] = fm[i], var[i] = fv[i];
  for (int k2 = 0; k2 < cols; k2++) dsc[k2] = dbi[k2] = 0;
  for (int i = 0; okf && i < rows; i++) {
    double r = 1 / sqrt(var[i] + (double)1e-5f), sg = 0, sgx = 0;
    for (int q = 0; q < cols; q++) {
      int at = i * cols + q;
      double xh = (x[at] - mean[i]) * r;
      sg += dy[at] * sc[q];
      sgx += dy[at] * sc[q] * xh;
      dbi[q] += dy[at];
      dsc[q] += dy[at] * xh;
    }
    for (int q = 0; q < cols; q++) {
      int at = i * cols + q;
      double xh = (x[at] - mean[i]) * r;
      double want = r * (dy[at] * sc[q] - sg / cols - xh * sgx / cols);
      e = fmax(e, rel_err(fdx[at], want, 1));
    }
  }
  for (int q = 0; okf && q < cols; q++)
    e = fmax(e, fmax(rel_err(fgs[q], dsc[q], sqrt(rows)), rel_err(fgb[q], dbi[q], sqrt(rows))));
  ok(okf && e < 1e-6, "layer_norm fp32 [%d, %d] at 1000 +- 1: Y, Mean, Variance, dX, dScale, "
     "dBias (max relative error %g)", rows, cols, e);
  free(f);
  free(sc);
  free(x);
}

static void test_layouts(void) {
  check_bn_layout(70, 3, 49);    /* short planes, over 64 rows */
  check_bn_layout(3, 2, 700);    /* planes longer than a 512-element run */
  check_bn_layout(130, 5, 1);    /* NC over 64 rows */
  check_ln_layout(70, 129);      /* three chunks of parameter sums */
  check_ln_layout(5, 1100);      /* rows longer than a run */
}

int main(void) {
  test_batch_norm();
  test_wide();
  test_layouts();
  test_layer_norm();
  return tap_done();
}
