/* optest_create.c -- the op-test table's rows of vm/ops/create.c (optest.h): assign (a copy,
 * with X's LoD), fill_constant (its dtypes, value, str_value and the ValueTensor, ShapeTensor and
 * ShapeTensorList inputs), and the random initialisers uniform_random and gaussian_random,
 * whose values cannot be foretold: their rows check properties that a wrong distribution
 * fails (range, mean, variance and shares of the range, within 4 standard errors for a few
 * thousand draws), for a fixed seed attribute and for seed 0 (the executor's generator, seeded
 * by the row); fill_constant_batch_size_like (the dims' indices, a sequence batch); range
 * (integer and float, steps up and down, empty). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* ---------------------------------------------------------------- assign, fill_constant */

/* assign: Out is a copy of X. */
static void ref_assign(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  memcpy(ot_out_like(r, "Out", x), x->v, sizeof(double) * (size_t)x->n);
}

/* assign of a sequence batch: Out's values are X's and so is its LoD (which a reference cannot
 * say). */
static void check_assign_lod(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *o = ot_got(r, "Out");
  if (!o || o->n != x->n) {
    ot_fail(r, "Out has no value of X's size");
    return;
  }
  for (int64_t i = 0; i < x->n; i++)
    if (o->v[i] != x->v[i]) ot_fail(r, "element %lld: %g, want %g", (long long)i, o->v[i], x->v[i]);
  bool same = o->nlod == x->nlod;
  for (int i = 0; same && i < x->nlod; i++) same = o->lod[i] == x->lod[i];
  if (!same) ot_fail(r, "Out's LoD (%d offsets) is not X's (%d)", o->nlod, x->nlod);
}

/* The dims a filling op gives Out: the ShapeTensorList's values (one var a dim), else the
 * ShapeTensor's, else the shape attribute; fill_constant_batch_size_like's dim output_dim_idx is
 * Input's dim input_dim_idx (its sequence count when it has LoD and input_dim_idx is 0). Returns
 * the rank. */
static int fill_dims(ot_ref *r, int64_t *d) {
  const ot_val *st = ot_in(r, "ShapeTensor"), *in = ot_in(r, "Input");
  if (in) {
    int n = ot_ints(r, "shape", d, OT_MAX_DIMS), ii = (int)ot_int(r, "input_dim_idx");
    d[ot_int(r, "output_dim_idx")] = ii == 0 && in->nlod ? in->nlod - 1 : in->dims[ii];
    return n;
  }
  int n = ot_nin(r, "ShapeTensorList");
  if (n > 0) {
    for (int i = 0; i < n; i++) d[i] = (int64_t)ot_in_at(r, "ShapeTensorList", i)->v[0];
    return n;
  }
  if (st) {
    for (int64_t i = 0; i < st->n; i++) d[i] = (int64_t)st->v[i];
    return (int)st->n;
  }
  return ot_ints(r, "shape", d, OT_MAX_DIMS);
}

/* fill_constant: every element is the value (the ValueTensor's, else str_value's when set,
 * else the value attribute) as dtype holds it: integers truncate toward zero, bool is
 * value != 0, float32 rounds. */
static void ref_fill_constant(ot_ref *r) {
  int64_t d[OT_MAX_DIMS];
  int nd = fill_dims(r, d), dt = (int)ot_int(r, "dtype");
  const ot_val *vt = ot_in(r, "ValueTensor");
  const char *sv = ot_str(r, "str_value");
  double v = vt ? vt->v[0] : *sv ? strtod(sv, NULL) : ot_float(r, "value");
  v = dt == PD_INT32 || dt == PD_INT64 ? trunc(v)
      : dt == PD_BOOL                  ? v != 0
      : dt == PD_FP32                  ? (float)v
                                       : v;
  double *o = ot_out(r, "Out", nd, d);
  for (int64_t i = 0; i < ot_numel(nd, d); i++) o[i] = v;
}

/* ---------------------------------------------------------------- random initialisers */

/* Is got within 4 standard errors se of want? A failure names what. */
static void near(ot_ref *r, const char *what, double got, double want, double se) {
  if (!(fabs(got - want) <= 4 * se))
    ot_fail(r, "%s is %.6g, want %.6g within 4 standard errors (%.3g)", what, got, want, 4 * se);
}

/* Out, when it has the dtype attribute's type and the filling dims (else NULL, failed). */
static const ot_val *random_out(ot_ref *r) {
  const ot_val *o = ot_got(r, "Out");
  int64_t d[OT_MAX_DIMS];
  int nd = fill_dims(r, d);
  if (!o) {
    ot_fail(r, "Out has no value");
    return NULL;
  }
  if ((int)o->dt != (int)ot_int(r, "dtype")) {
    ot_fail(r, "Out has dtype %d, want %d", (int)o->dt, (int)ot_int(r, "dtype"));
    return NULL;
  }
  bool same = o->nd == nd;
  for (int i = 0; same && i < nd; i++) same = o->dims[i] == d[i];
  if (!same) {
    ot_fail(r, "Out has %d dims (%lld elements), not the %d asked", o->nd, (long long)o->n, nd);
    return NULL;
  }
  return o;
}

/* uniform_random: the diagonal's elements (diag_num of them, every diag_step + 1 from the
 * first) are diag_val; every other is in [min, max), their mean is (min + max) / 2, their
 * variance (max - min)^2 / 12 (its standard error from the fourth moment, w^4 / 80), and each
 * quarter of the range holds a quarter of them. */
static void check_uniform(ot_ref *r) {
  const ot_val *o = random_out(r);
  if (!o) return;
  double a = ot_float(r, "min"), b = ot_float(r, "max"), w = b - a, dv = ot_float(r, "diag_val");
  int64_t ndiag = ot_int(r, "diag_num"), step = ot_int(r, "diag_step") + 1, n = 0, bins[4] = {0};
  double sum = 0, sum2 = 0;
  for (int64_t i = 0; i < o->n; i++) {
    double v = o->v[i];
    if (i % step == 0 && i / step < ndiag) {
      if (v != dv) ot_fail(r, "element %lld: %g, want diag_val %g", (long long)i, v, dv);
      continue;
    }
    if (!(v >= a && v < b)) {
      ot_fail(r, "element %lld: %g is outside [%g, %g)", (long long)i, v, a, b);
      return;
    }
    int k = (int)((v - a) / w * 4);
    bins[k < 3 ? k : 3]++;
    sum += v;
    sum2 += v * v;
    n++;
  }
  double mean = sum / (double)n, var = sum2 / (double)n - mean * mean;
  near(r, "the mean", mean, (a + b) / 2, w / sqrt(12.0 * (double)n));
  near(r, "the variance", var, w * w / 12, w * w * sqrt((1.0 / 80 - 1.0 / 144) / (double)n));
  for (int k = 0; k < 4; k++)
    near(r, "a quarter's share", (double)bins[k] / (double)n, 0.25, sqrt(0.1875 / (double)n));
}

/* gaussian_random: the mean is `mean`, the variance std^2 (standard error std^2 sqrt(2 / n)),
 * and the shares within 1 and beyond 2 standard deviations are the normal's. */
static void check_gaussian(ot_ref *r) {
  const ot_val *o = random_out(r);
  if (!o) return;
  const double p1 = 0.68268949213708585, p2 = 0.045500263896358417;
  double mu = ot_float(r, "mean"), s = ot_float(r, "std"), n = (double)o->n;
  double sum = 0, sum2 = 0, in1 = 0, out2 = 0;
  for (int64_t i = 0; i < o->n; i++) {
    double v = o->v[i];
    if (!isfinite(v)) {
      ot_fail(r, "element %lld is %g", (long long)i, v);
      return;
    }
    sum += v;
    sum2 += v * v;
    in1 += fabs(v - mu) < s;
    out2 += fabs(v - mu) > 2 * s;
  }
  double mean = sum / n, var = sum2 / n - mean * mean;
  near(r, "the mean", mean, mu, s / sqrt(n));
  near(r, "the variance", var, s * s, s * s * sqrt(2 / n));
  near(r, "the share within 1 std", in1 / n, p1, sqrt(p1 * (1 - p1) / n));
  near(r, "the share beyond 2 std", out2 / n, p2, sqrt(p2 * (1 - p2) / n));
}

/* ---------------------------------------------------------------- range */

/* range: Start, Start + Step, ... while short of End; none when Step points away from End. The
 * count is ceil(|End - Start| / |Step|), the quotient taken in Start's type (float32 rounds). */
static void ref_range(ot_ref *r) {
  const ot_val *st = ot_in(r, "Start");
  double a = st->v[0], b = ot_in(r, "End")->v[0], s = ot_in(r, "Step")->v[0];
  int64_t n = 0;
  if (!((a < b && s < 0) || (a > b && s > 0))) {
    double q = st->dt == PD_FP32 ? (double)((float)(b - a) / (float)s) : (b - a) / s;
    n = (int64_t)ceil(fabs(q));
  }
  double *o = ot_out(r, "Out", 1, &n);
  for (int64_t i = 0; i < n; i++) o[i] = st->dt == PD_FP32 ? (float)(a + i * s) : a + i * s;
}

/* ---------------------------------------------------------------- the rows */

static const int64_t assign_lod[] = {0, 2, 5};

const ot_row ot_rows_create[] = {
    {.op = "assign", .in = {{"X", "[3, 4]"}}, .ref = ref_assign},
    {.op = "assign", .what = "int64", .in = {{"X", "[5]", OT_I64, -99, 99}}, .ref = ref_assign,
     .no_grad = true},
    {.op = "assign", .what = "LoD", .in = {{"X", "[5, 2]", .lod = assign_lod, .nlod = 3}},
     .check = check_assign_lod, .no_grad = true},

    /* fill_constant: each dtype (values that truncate, and a bool from 2); str_value over value
     * (fp64 keeps all of 0.1, which the float attribute cannot); the ValueTensor over both;
     * the ShapeTensor and ShapeTensorList over the shape attribute. */
    {.op = "fill_constant", .what = "float", .attrs = "dtype=$F shape=[2, 3] value=1.5",
     .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "int64", .attrs = "dtype=3 shape=[4] value=-7.75",
     .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "int32", .attrs = "dtype=2 shape=[2, 2] value=2.5",
     .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "bool", .attrs = "dtype=0 shape=[3] value=2",
     .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "str_value",
     .attrs = "dtype=$F shape=[3] value=9 str_value=0.1",
     .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "str_value -inf",
     .attrs = "dtype=$F shape=[2] str_value=-inf", .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "int64 str_value",
     .attrs = "dtype=3 shape=[2] str_value=123456789012", .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "ValueTensor", .attrs = "dtype=$F shape=[2, 2] value=9",
     .in = {{"ValueTensor", "[1]", .v = (const double[]){0.1}}}, .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "int64 ValueTensor", .attrs = "dtype=3 shape=[3] value=9",
     .in = {{"ValueTensor", "[1]", OT_I64, .v = (const double[]){-12}}}, .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "ShapeTensor", .attrs = "dtype=$F shape=[1] value=0.5",
     .in = {{"ShapeTensor", "[2]", OT_I64, .v = (const double[]){3, 2}}},
     .ref = ref_fill_constant},
    {.op = "fill_constant", .what = "ShapeTensorList", .attrs = "dtype=$F shape=[1] value=-2",
     .in = {{"ShapeTensorList", "[1]", OT_I32, .v = (const double[]){2}},
            {"ShapeTensorList", "[1]", OT_I32, .v = (const double[]){4}}},
     .ref = ref_fill_constant},

    /* fill_constant_batch_size_like: the batch from dim 0, from another dim into another, from
     * a sequence batch (its sequence count), an int64 str_value. */
    {.op = "fill_constant_batch_size_like", .what = "dim 0",
     .attrs = "shape=[-1, 3] dtype=$F value=0.5", .in = {{"Input", "[4, 2]"}},
     .ref = ref_fill_constant},
    {.op = "fill_constant_batch_size_like", .what = "dim 2 into 1",
     .attrs = "shape=[2, -1, 1] dtype=2 value=-3.5 input_dim_idx=2 output_dim_idx=1",
     .in = {{"Input", "[1, 2, 5]"}}, .ref = ref_fill_constant},
    {.op = "fill_constant_batch_size_like", .what = "LoD",
     .attrs = "shape=[-1, 2] dtype=$F value=1",
     .in = {{"Input", "[5, 2]", .lod = assign_lod, .nlod = 3}}, .ref = ref_fill_constant},
    {.op = "fill_constant_batch_size_like", .what = "int64 str_value",
     .attrs = "shape=[-1] dtype=3 str_value=123456789012", .in = {{"Input", "[3, 1]"}},
     .ref = ref_fill_constant},

    /* uniform_random: a fixed seed; seed 0 (the executor's); the diagonal of a [60, 70]
     * matrix set to 2.5 (outside the range, so that a misplaced one fails); the ShapeTensor. */
    {.op = "uniform_random", .what = "seed 7", .attrs = "shape=[4000] min=-2 max=3 seed=7 dtype=$F",
     .check = check_uniform},
    {.op = "uniform_random", .what = "seed 0", .attrs = "shape=[50, 80] dtype=$F",
     .check = check_uniform, .seed = 99},
    {.op = "uniform_random", .what = "diagonal",
     .attrs = "shape=[60, 70] diag_num=60 diag_step=70 diag_val=2.5 seed=3 dtype=$F",
     .check = check_uniform},
    {.op = "uniform_random", .what = "ShapeTensor",
     .attrs = "shape=[1] min=0 max=0.5 seed=11 dtype=$F",
     .in = {{"ShapeTensor", "[2]", OT_I64, .v = (const double[]){40, 100}}},
     .check = check_uniform},

    /* gaussian_random: a fixed seed, seed 0, the ShapeTensorList. */
    {.op = "gaussian_random", .what = "seed 5",
     .attrs = "shape=[5000] mean=1.5 std=0.5 seed=5 dtype=$F", .check = check_gaussian},
    {.op = "gaussian_random", .what = "seed 0", .attrs = "shape=[40, 100] dtype=$F",
     .check = check_gaussian, .seed = 42},
    {.op = "gaussian_random", .what = "ShapeTensorList", .attrs = "mean=-2 std=3 seed=9 dtype=$F",
     .in = {{"ShapeTensorList", "[1]", OT_I32, .v = (const double[]){50}},
            {"ShapeTensorList", "[1]", OT_I32, .v = (const double[]){60}}},
     .check = check_gaussian},
    /* range: int64 (PP-YOLOE's anchors), int32 down, an empty one, floats (a fraction left). */
    {.op = "range", .what = "int64",
     .in = {{"Start", "[1]", OT_I64, .v = (const double[]){0}},
            {"End", "[1]", OT_I64, .v = (const double[]){10}},
            {"Step", "[1]", OT_I64, .v = (const double[]){3}}},
     .ref = ref_range},
    {.op = "range", .what = "int32 down",
     .in = {{"Start", "[1]", OT_I32, .v = (const double[]){5}},
            {"End", "[1]", OT_I32, .v = (const double[]){-4}},
            {"Step", "[1]", OT_I32, .v = (const double[]){-2}}},
     .ref = ref_range},
    {.op = "range", .what = "empty",
     .in = {{"Start", "[1]", OT_I64, .v = (const double[]){1}},
            {"End", "[1]", OT_I64, .v = (const double[]){4}},
            {"Step", "[1]", OT_I64, .v = (const double[]){-1}}},
     .ref = ref_range},
    {.op = "range", .what = "float",
     .in = {{"Start", "[1]", .v = (const double[]){-1.5}},
            {"End", "[1]", .v = (const double[]){2.25}},
            {"Step", "[1]", .v = (const double[]){0.5}}},
     .ref = ref_range},
    {.op = "range", .what = "float down",
     .in = {{"Start", "[1]", .v = (const double[]){3}}, {"End", "[1]", .v = (const double[]){0}},
            {"Step", "[1]", .v = (const double[]){-0.75}}},
     .ref = ref_range},
    {0},
};
