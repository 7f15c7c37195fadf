/* test_kern_random.c -- sampling_id (vm/ops/random.c) through the executor: the frequencies of
 * the drawn classes against the given probabilities (a chi-square bound, fixed seeds, so the
 * test cannot flake), rows that do not sum to 1 and a wider [min, max) as Fluid's rule gives them
 * (the shortfall goes to the last class), one-hot rows exactly, reproducibility by seed, float32
 * and float64, and the errors (negative or non-finite probabilities, a rank that is not 2, an
 * empty range). The moments of uniform_random and gaussian_random are in test_kern_tensor.c. */
#include "config.h"

#include "tests/vm/ops/runop.h"

enum { MAXK = 8 };

/* Draw one class for each of n rows, all equal to p[0..k), with sampling_id(min, max, seed) and
 * executor seed `exec_seed`; the ids go to ids (n of them). */
static bool draw(pd_dtype dt, int n, int k, const double *p, double lo, double hi, int seed,
                 uint64_t exec_seed, int64_t *ids) {
  rt r;
  rt_init(&r);
  r.seed = exec_seed;
  double *x = calloc((size_t)n * (size_t)k, sizeof *x);
  float *xf = calloc((size_t)n * (size_t)k, sizeof *xf);
  if (!x || !xf) bail("out of memory");
  for (int i = 0; i < n * k; i++) xf[i] = (float)(x[i] = p[i % k]);
  char shape[64];
  snprintf(shape, sizeof shape, "[%d, %d]", n, k);
  if (dt == PD_FP32) rt_in_f32(&r, "x", shape, xf);
  else rt_in_f64(&r, "x", shape, x);
  pd_op_desc *op = rt_op(&r, "sampling_id", "X=x", "Out=ids");
  pd_op_set_attr_float(op, "min", (float)lo);
  pd_op_set_attr_float(op, "max", (float)hi);
  pd_op_set_attr_int(op, "seed", seed);
  bool good = rt_run(&r) == PD_OK;
  const pd_tensor *t = rt_get(&r, "ids");
  good = good && t && t->dtype == PD_INT64 && t->ndims == 1 && t->dims[0] == n;
  if (good) memcpy(ids, PD_TENSOR_I64(t), sizeof *ids * (size_t)n);
  else printf("#   sampling_id failed: %s\n", r.f.err.msg ? r.f.err.msg : "no value");
  free(x);
  free(xf);
  rt_free(&r);
  return good;
}

/* Pearson's chi-square of the counts of ids[0..n) against the class probabilities want[0..k)
 * (an id outside [0, k) makes it infinite). */
static double chi_square(const int64_t *ids, int n, int k, const double *want) {
  double count[MAXK] = {0}, chi = 0;
  for (int i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= k) return INFINITY;
    count[ids[i]] += 1;
  }
  for (int j = 0; j < k; j++) {
    double e = want[j] * n;
    if (e == 0) {
      if (count[j] != 0) return INFINITY;
      continue;
    }
    chi += (count[j] - e) * (count[j] - e) / e;
  }
  return chi;
}

/* The 99.9% quantiles of chi-square with 1, 2 and 3 degrees of freedom. */
static const double chi_999[] = {0, 10.83, 13.82, 16.27};

static void test_frequencies(void) {
  enum { N = 20000 };
  static int64_t ids[N];
  const double p4[] = {0.1, 0.2, 0.3, 0.4};
  for (int f = 0; f < 2; f++) {
    pd_dtype dt = f ? PD_FP64 : PD_FP32;
    double chi = draw(dt, N, 4, p4, 0, 1, 0, 17, ids) ? chi_square(ids, N, 4, p4) : INFINITY;
    ok(chi < chi_999[3], "%s [0.1, 0.2, 0.3, 0.4], %d draws: chi-square %.2f < %.2f (3 dof)",
       pd_dtype_name(dt), N, chi, chi_999[3]);
  }
  /* A row summing to 0.5: Fluid's rule gives the last class its own 0.3 and the missing 0.5. */
  const double half[] = {0.2, 0.3}, half_want[] = {0.2, 0.8};
  double chi = draw(PD_FP64, N, 2, half, 0, 1, 0, 23, ids) ? chi_square(ids, N, 2, half_want)
                                                           : INFINITY;
  ok(chi < chi_999[1], "a row summing to 0.5: the last class gets the rest (chi-square %.2f)", chi);
  /* r uniform in [0, 2) against [0.5, 0.5]: class 0 when r < 0.5, so a quarter of the time. */
  const double even[] = {0.5, 0.5}, wide_want[] = {0.25, 0.75};
  chi = draw(PD_FP64, N, 2, even, 0, 2, 0, 29, ids) ? chi_square(ids, N, 2, wide_want) : INFINITY;
  ok(chi < chi_999[1], "min 0, max 2: [0.5, 0.5] draws class 0 a quarter of the time "
     "(chi-square %.2f)", chi);
  /* A class of probability 0 never comes. */
  const double zero[] = {0.5, 0, 0.5};
  chi = draw(PD_FP32, N, 3, zero, 0, 1, 0, 31, ids) ? chi_square(ids, N, 3, zero) : INFINITY;
  ok(chi < chi_999[2], "[0.5, 0, 0.5]: the middle class never drawn (chi-square %.2f)", chi);
}

static void test_one_hot(void) {
  rt r;
  rt_init(&r);
  r.seed = 5;
  rt_in_f64(&r, "x", "[4, 3]", (double[]){0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
  rt_op(&r, "sampling_id", "X=x", "Out=ids");
  if (rt_ok(&r, "sampling_id of one-hot rows"))
    rt_expect(rt_get(&r, "ids"), 4, ((double[]){2, 0, 1, 2}), 0, "one-hot rows: their classes");
  rt_free(&r);
}

static bool same(const int64_t *a, const int64_t *b, int n) {
  return memcmp(a, b, sizeof *a * (size_t)n) == 0;
}

static void test_seeds(void) {
  enum { N = 64 };
  int64_t a[N], b[N], c[N], d[N];
  const double p[] = {0.25, 0.25, 0.25, 0.25};
  bool good = draw(PD_FP32, N, 4, p, 0, 1, 0, 5, a) && draw(PD_FP32, N, 4, p, 0, 1, 0, 5, b) &&
              draw(PD_FP32, N, 4, p, 0, 1, 0, 6, c);
  ok(good && same(a, b, N), "seed 0, same executor seed: same classes");
  ok(good && !same(a, c, N), "seed 0, another executor seed: other classes");
  good = draw(PD_FP32, N, 4, p, 0, 1, 7, 5, a) && draw(PD_FP32, N, 4, p, 0, 1, 7, 99, b) &&
         draw(PD_FP32, N, 4, p, 0, 1, 8, 5, c) && draw(PD_FP32, N, 4, p, 0, 1, 0, 5, d);
  ok(good && same(a, b, N), "seed 7 ignores the executor seed");
  ok(good && !same(a, c, N), "seed 8 differs from seed 7");
  ok(good && !same(a, d, N), "seed 7 differs from the executor's stream");
}

static void fails(const char *shape, const double *x, double lo, double hi, pd_status want,
                  const char *part, const char *what) {
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", shape, x);
  pd_op_desc *op = rt_op(&r, "sampling_id", "X=x", "Out=ids");
  pd_op_set_attr_float(op, "min", (float)lo);
  pd_op_set_attr_float(op, "max", (float)hi);
  rt_fails(&r, want, part, what);
  rt_free(&r);
}

static void test_errors(void) {
  fails("[2, 2]", (double[]){0.5, 0.5, -0.1, 1.1}, 0, 1, PD_EINVAL,
        "X[1, 0] is -0.1: probabilities must be finite and not negative",
        "a negative probability is refused, with its place");
  fails("[1, 2]", (double[]){NAN, 1}, 0, 1, PD_EINVAL, "X[0, 0] is nan",
        "a NaN probability is refused");
  fails("[1, 2]", (double[]){INFINITY, 0}, 0, 1, PD_EINVAL, "X[0, 0] is inf",
        "an infinite probability is refused");
  fails("[4]", (double[]){0.25, 0.25, 0.25, 0.25}, 0, 1, PD_ESHAPE,
        "X must be a matrix [batch, classes] of probabilities, got [4]", "a vector is refused");
  fails("[1, 2]", (double[]){0.5, 0.5}, 1, 1, PD_EINVAL, "min (1) must be less than max (1)",
        "an empty range is refused");
  rt r;
  rt_init(&r);
  rt_in_i64(&r, "x", "[1, 2]", (int64_t[]){0, 1});
  rt_op(&r, "sampling_id", "X=x", "Out=ids");
  rt_fails(&r, PD_ETYPE, "float", "integer probabilities are refused");
  rt_free(&r);
}

int main(void) {
  test_frequencies();
  test_one_hot();
  test_seeds();
  test_errors();
  return tap_done();
}
