/* test_kern_reduce.c -- the kernels of reduce_sum/mean/max/min/prod (dim, keep_dim, reduce_all,
 * out_dtype), arg_max and top_k, run through the executor against naive loops written here;
 * int dtypes, LoD, ties, run-time errors, and finite-difference gradients (reduce_prod's also
 * with zeros in a group, reduce_max's at ties, top_k's scatter). */
#include "config.h"

#include "tests/vm/ops/test_kern_math.h"

/* ---------------------------------------------------------------- reduce_* */

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD };

/* Reduce x (shape d[0..nd)) over the dims with red[d]: want in row-major order of the kept
 * dims. Returns the number of results. */
static int naive_reduce(int op, int nd, const int64_t *d, const bool *red, const double *x,
                        double *want) {
  int64_t n = 1, on = 1, idx[8] = {0};
  for (int i = 0; i < nd; i++) {
    n *= d[i];
    if (!red[i]) on *= d[i];
  }
  int64_t count[64] = {0};
  for (int64_t o = 0; o < on; o++) want[o] = op == R_PROD ? 1 : 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, o = 0;
    for (int k = nd - 1; k >= 0; k--) {
      idx[k] = rem % d[k];
      rem /= d[k];
    }
    for (int k = 0; k < nd; k++)
      if (!red[k]) o = o * d[k] + idx[k];
    double v = x[i];
    switch (op) {
      case R_SUM:
      case R_MEAN: want[o] += v; break;
      case R_MAX: want[o] = count[o] == 0 || v > want[o] ? v : want[o]; break;
      case R_MIN: want[o] = count[o] == 0 || v < want[o] ? v : want[o]; break;
      default: want[o] *= v; break;
    }
    count[o]++;
  }
  if (op == R_MEAN)
    for (int64_t o = 0; o < on; o++) want[o] /= (double)count[o];
  return (int)on;
}

static const char *const red_types[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
                                        "reduce_prod"};

typedef struct rcase {
  const char *what;
  int ndim;
  int32_t dim[3];
  bool keep, all;
  const char *out_shape;
} rcase;

static const rcase rcases[] = {
    {"dim [1]", 1, {1}, false, false, "[2, 4]"},
    {"dim [0, 2], keep_dim", 2, {0, 2}, true, false, "[1, 3, 1]"},
    {"dim [-1]", 1, {-1}, false, false, "[2, 3]"},
    {"reduce_all", 1, {0}, false, true, "[1]"},
    {"reduce_all, keep_dim", 1, {1}, true, true, "[1, 1, 1]"},
    {"dim [] (all)", 0, {0}, false, false, "[1]"},
    {"dim [2, 0]", 2, {2, 0}, false, false, "[3]"},
};

static pd_op_desc *red_op(rt *r, const char *type, const rcase *c, const char *out) {
  char outs[32];
  snprintf(outs, sizeof outs, "Out=%s", out);
  pd_op_desc *op = rt_op(r, type, "X=x", outs);
  pd_op_set_attr_ints(op, "dim", c->ndim, c->dim);
  pd_op_set_attr_bool(op, "keep_dim", c->keep);
  pd_op_set_attr_bool(op, "reduce_all", c->all);
  return op;
}

static void test_reduce(void) {
  const int64_t dims[] = {2, 3, 4};
  double x[24], want[24];
  /* Distinct values (no ties for max/min), away from 0 for prod. */
  vals(x, 24, -1.5, 1.5, 71, true);
  for (int op = 0; op < 5; op++) {
    for (size_t k = 0; k < PD_ARRAY_LEN(rcases); k++) {
      const rcase *c = &rcases[k];
      bool red[3];
      for (int d = 0; d < 3; d++) red[d] = c->all || c->ndim == 0;
      for (int i = 0; !c->all && i < c->ndim; i++) red[c->dim[i] < 0 ? c->dim[i] + 3 : c->dim[i]] = true;
      for (int dt = 0; dt < 2; dt++) {
        rt r;
        rt_init(&r);
        double xr[24];
        if (dt == 0) {
          float xf[24];
          to_f32(x, xf, 24);
          for (int i = 0; i < 24; i++) xr[i] = xf[i];
          rt_in_f32(&r, "x", "[2, 3, 4]", xf);
        } else {
          memcpy(xr, x, sizeof xr);
          rt_in_f64(&r, "x", "[2, 3, 4]", x);
        }
        rt_lod(&r, "x", 2, L(0, 2));
        int on = naive_reduce(op, 3, dims, red, xr, want);
        red_op(&r, red_types[op], c, "o");
        char what[128];
        snprintf(what, sizeof what, "%s %s (%s)", red_types[op], c->what, dt ? "float64" : "float32");
        if (rt_ok(&r, what)) {
          const pd_tensor *o = rt_get(&r, "o");
          rt_expect(o, on, want, dt ? 1e-14 : 1e-5, what);
          char got[128] = "none";
          if (o) pd_ctx_shape_str(o, got, sizeof got);
          is_str(got, c->out_shape, "%s: Out's shape", what);
          ok(o && (red[0] ? o->nlod == 0 : lod_is(o, 2, L(0, 2))),
             "%s: the LoD stays exactly when dim 0 does", what);
        }
        if (dt == 1) {
          snprintf(what, sizeof what, "%s %s", red_types[op], c->what);
          grad_check(&r, "X", "Out", what);
        }
        rt_free(&r);
      }
    }
  }
}

static void test_reduce_int(void) {
  const int64_t xl[] = {3, -2, 7, 0, 5, -4};
  const double want[][2] = {{8, 1}, {7, 5}, {-2, -4}, {-42, 0}};  /* sum, max, min, prod of rows */
  const char *types[] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"};
  const int32_t dim1[] = {1};
  for (int t = 0; t < 4; t++) {
    for (int wide = 0; wide < 2; wide++) {
      rt r;
      rt_init(&r);
      if (wide) {
        rt_in_i64(&r, "x", "[2, 3]", xl);
      } else {
        int32_t xi[6];
        for (int i = 0; i < 6; i++) xi[i] = (int32_t)xl[i];
        rt_in(&r, "x", PD_INT32, "[2, 3]", xi);
      }
      pd_op_desc *op = rt_op(&r, types[t], "X=x", "Out=o");
      pd_op_set_attr_ints(op, "dim", 1, dim1);
      char what[64];
      snprintf(what, sizeof what, "%s %s", types[t], wide ? "int64" : "int32");
      if (rt_ok(&r, what)) {
        const pd_tensor *o = rt_get(&r, "o");
        ok(o && o->dtype == (wide ? PD_INT64 : PD_INT32), "%s: Out's dtype", what);
        rt_expect(o, 2, want[t], 0, what);
      }
      rt_free(&r);
    }
  }
  /* out_dtype: bools counted into int64, floats summed into float64. */
  rt r;
  rt_init(&r);
  rt_in(&r, "b", PD_BOOL, "[2, 3]", B(1, 0, 1, 1, 1, 1));
  rt_in_f32(&r, "f", "[3]", F(0.1f, 0.2f, 0.3f));
  pd_op_desc *op = rt_op(&r, "reduce_sum", "X=b", "Out=n");
  pd_op_set_attr_ints(op, "dim", 1, dim1);
  pd_op_set_attr_int(op, "out_dtype", PD_INT64);
  op = rt_op(&r, "reduce_sum", "X=f", "Out=s");
  pd_op_set_attr_bool(op, "reduce_all", true);
  pd_op_set_attr_int(op, "out_dtype", PD_FP64);
  if (rt_ok(&r, "reduce_sum with out_dtype")) {
    rt_expect(rt_get(&r, "n"), 2, D(2, 3), 0, "reduce_sum of bools into int64");
    ok(rt_get(&r, "s") && rt_get(&r, "s")->dtype == PD_FP64, "reduce_sum into float64: dtype");
    rt_expect(rt_get(&r, "s"), 1, D((double)0.1f + (double)0.2f + (double)0.3f), 1e-15,
              "reduce_sum into float64: summed in float64");
  }
  rt_free(&r);
}

static void test_reduce_misc(void) {
  /* x = reduce_sum(x): read before the result replaces it. */
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", D(1, 2, 3, 4, 5, 6));
  pd_op_desc *op = rt_op(&r, "reduce_sum", "X=x", "Out=x");
  pd_op_set_attr_ints(op, "dim", 1, I(0));
  if (rt_ok(&r, "x = reduce_sum(x, dim 0)"))
    rt_expect(rt_get(&r, "x"), 3, D(5, 7, 9), 0, "x = reduce_sum(x): values");
  rt_free(&r);

  /* The maximum of nothing. */
  rt_init(&r);
  rt_in_f32(&r, "x", "[0, 3]", F(0));
  op = rt_op(&r, "reduce_max", "X=x", "Out=o");
  pd_op_set_attr_ints(op, "dim", 1, I(0));
  rt_fails(&r, PD_EINVAL, "reduce_max: cannot reduce an empty X (var 'x') [0, 3]",
           "reduce_max over an empty dim");
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[0, 3]", F(0));
  op = rt_op(&r, "reduce_sum", "X=x", "Out=o");
  pd_op_set_attr_ints(op, "dim", 1, I(0));
  if (rt_ok(&r, "reduce_sum over an empty dim"))
    rt_expect(rt_get(&r, "o"), 3, D(0, 0, 0), 0, "reduce_sum over an empty dim: zeros");
  rt_free(&r);

  /* reduce_prod's gradient with zeros: one zero in a group gets the product of the others,
   * two zeros make the whole group's gradient 0. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 3]", D(0, 2, 3, 0, 0, 5, 1, 2, 4));
  rt_in_f64(&r, "o", "[3]", D(0, 0, 8));
  rt_in_f64(&r, "g", "[3]", D(10, 10, 0.5));
  op = rt_op(&r, "reduce_prod_grad", "X=x Out=o Out@GRAD=g", "X@GRAD=gx");
  pd_op_set_attr_ints(op, "dim", 1, I(1));
  if (rt_ok(&r, "reduce_prod_grad with zeros"))
    rt_expect(rt_get(&r, "gx"), 9, D(60, 0, 0, 0, 0, 0, 4, 2, 1), 1e-15,
              "reduce_prod_grad: exact with zeros in a group");
  rt_free(&r);

  /* reduce_max's gradient at a tie: every maximal element gets dOut (Fluid's rule). */
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", F(1, 3, 3, 2, 0, -1));
  rt_in_f32(&r, "o", "[2]", F(3, 2));
  rt_in_f32(&r, "g", "[2]", F(1, 7));
  op = rt_op(&r, "reduce_max_grad", "X=x Out=o Out@GRAD=g", "X@GRAD=gx");
  pd_op_set_attr_ints(op, "dim", 1, I(1));
  if (rt_ok(&r, "reduce_max_grad at a tie"))
    rt_expect(rt_get(&r, "gx"), 6, D(0, 1, 1, 7, 0, 0), 0, "reduce_max_grad: ties all get dOut");
  rt_free(&r);

  /* A run-time dim out of range (X of unknown rank at compile time). */
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", F(1, 2, 3, 4, 5, 6));
  decl(r.f.b, "x", PD_FP32, "?");
  op = rt_op(&r, "reduce_mean", "X=x", "Out=o");
  pd_op_set_attr_ints(op, "dim", 1, I(2));
  rt_fails(&r, PD_EINVAL, "reduce_mean: dim 2 is out of range for X [2, 3] (expected -2 to 1)",
           "reduce_mean: a dim out of range at run time");
  rt_free(&r);
}

/* ---------------------------------------------------------------- arg_max */

static void test_arg_max(void) {
  /* [2, 3, 2] with ties (the first maximum wins). */
  const double x[] = {1, 5, 4, 5, 4, 0, -1, -2, -1, 3, 9, 3};
  const struct {
    const char *what;
    int64_t axis;
    bool keep, flat;
    int dtype;
    const char *shape;
    int n;
    double want[6];
  } cases[] = {
      {"axis 1", 1, false, false, -1, "[2, 2]", 4, {1, 0, 2, 1}},
      {"axis -1, keepdims", -1, true, false, -1, "[2, 3, 1]", 6, {1, 1, 0, 0, 1, 0}},
      {"axis 0, int32", 0, false, false, PD_INT32, "[3, 2]", 6, {0, 0, 0, 0, 1, 1}},
      {"flatten", 0, false, true, -1, "[1]", 1, {10}},
  };
  for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
    for (int dt = 0; dt < 2; dt++) {
      rt r;
      rt_init(&r);
      if (dt == 0) {
        rt_in_f64(&r, "x", "[2, 3, 2]", x);
      } else {
        int64_t xl[12];
        for (int i = 0; i < 12; i++) xl[i] = (int64_t)x[i];
        rt_in_i64(&r, "x", "[2, 3, 2]", xl);
      }
      pd_op_desc *op = rt_op(&r, "arg_max", "X=x", "Out=o");
      pd_op_set_attr_long(op, "axis", cases[c].axis);
      pd_op_set_attr_bool(op, "keepdims", cases[c].keep);
      pd_op_set_attr_bool(op, "flatten", cases[c].flat);
      if (cases[c].dtype >= 0) pd_op_set_attr_int(op, "dtype", cases[c].dtype);
      char what[96];
      snprintf(what, sizeof what, "arg_max %s (X %s)", cases[c].what, dt ? "int64" : "float64");
      if (rt_ok(&r, what)) {
        const pd_tensor *o = rt_get(&r, "o");
        char got[128] = "none";
        if (o) pd_ctx_shape_str(o, got, sizeof got);
        is_str(got, cases[c].shape, "%s: Out's shape", what);
        ok(o && o->dtype == (cases[c].dtype == PD_INT32 ? PD_INT32 : PD_INT64), "%s: Out's dtype",
           what);
        rt_expect(o, cases[c].n, cases[c].want, 0, what);
      }
      rt_free(&r);
    }
  }
}

/* ---------------------------------------------------------------- top_k */

/* The k largest of each row, descending, equal values by index. */
static void naive_top_k(int rows, int n, int k, const double *x, double *v, double *ix) {
  for (int r = 0; r < rows; r++) {
    bool used[16] = {false};
    for (int j = 0; j < k; j++) {
      int best = -1;
      for (int i = 0; i < n; i++)
        if (!used[i] && (best < 0 || x[r * n + i] > x[r * n + best])) best = i;
      used[best] = true;
      v[r * k + j] = x[r * n + best];
      ix[r * k + j] = best;
    }
  }
}

static void test_top_k(void) {
  double x[24], v[24], ix[24];
  vals(x, 24, -3, 3, 81, false);
  x[1] = x[3] = 2.5;  /* a tie in the first row */
  naive_top_k(6, 4, 3, x, v, ix);
  for (int dt = 0; dt < 3; dt++) {
    rt r;
    rt_init(&r);
    if (dt == 0) {
      rt_in_f64(&r, "x", "[2, 3, 4]", x);
    } else if (dt == 1) {
      float xf[24];
      to_f32(x, xf, 24);
      rt_in_f32(&r, "x", "[2, 3, 4]", xf);
    } else {
      int32_t xi[24];
      double xr[24];
      for (int i = 0; i < 24; i++) xr[i] = xi[i] = (int32_t)floor(x[i] * 3);
      naive_top_k(6, 4, 3, xr, v, ix);
      rt_in(&r, "x", PD_INT32, "[2, 3, 4]", xi);
    }
    rt_lod(&r, "x", 2, L(0, 2));
    pd_op_desc *op = rt_op(&r, "top_k", "X=x", "Out=v Indices=i");
    pd_op_set_attr_int(op, "k", 3);
    const char *names[] = {"float64", "float32", "int32"};
    char what[64];
    snprintf(what, sizeof what, "top_k 3 of [2, 3, 4] %s", names[dt]);
    if (rt_ok(&r, what)) {
      rt_expect(rt_get(&r, "v"), 18, v, dt == 1 ? 1e-6 : 0, what);
      rt_expect(rt_get(&r, "i"), 18, ix, 0, "top_k: Indices");
      ok(lod_is(rt_get(&r, "v"), 2, L(0, 2)) && lod_is(rt_get(&r, "i"), 2, L(0, 2)),
         "top_k: Out and Indices keep X's LoD");
    }
    rt_free(&r);
  }
  vals(x, 24, -3, 3, 82, false);  /* distinct: a tie is a kink */
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3, 4]", x);
  pd_op_set_attr_int(rt_op(&r, "top_k", "X=x", "Out=v Indices=i"), "k", 3);
  grad_check(&r, "X", "Out", "top_k");
  rt_free(&r);

  /* k from the K input. */
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", F(1, 3, 2, -1, -3, -2));
  rt_in(&r, "k", PD_INT32, "[1]", I(2));
  rt_op(&r, "top_k", "X=x K=k", "Out=v Indices=i");
  if (rt_ok(&r, "top_k with K")) {
    rt_expect(rt_get(&r, "v"), 4, D(3, 2, -1, -2), 0, "top_k with K: values");
    rt_expect(rt_get(&r, "i"), 4, D(1, 2, 0, 2), 0, "top_k with K: indices");
  }
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", F(1, 3, 2, -1, -3, -2));
  rt_in_i64(&r, "k", "[1]", L(4));
  rt_op(&r, "top_k", "X=x K=k", "Out=v Indices=i");
  rt_fails(&r, PD_EINVAL, "top_k: k 4 is out of range for X [2, 3] (expected 1 to 3)",
           "top_k: k larger than the row at run time");
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", F(1, 3, 2, -1, -3, -2));
  rt_in_i64(&r, "k", "[1]", L(3));
  pd_op_set_attr_int(rt_op(&r, "top_k_v2", "X=x K=k", "Out=v Indices=i"), "axis", 0);
  rt_fails(&r, PD_EINVAL, "top_k_v2: k 3 is out of range for X [2, 3] along axis 0 (expected 1 to "
           "2)", "top_k_v2: k larger than the axis at run time");
  rt_free(&r);

  /* The gradient op: zeros but at the indices. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", D(1, 3, 2, -1, -3, -2));
  rt_in_i64(&r, "i", "[2, 2]", L(1, 2, 0, 2));
  rt_in_f64(&r, "g", "[2, 2]", D(10, 20, 30, 40));
  rt_op(&r, "top_k_grad", "X=x Indices=i Out@GRAD=g", "X@GRAD=gx");
  if (rt_ok(&r, "top_k_grad"))
    rt_expect(rt_get(&r, "gx"), 6, D(0, 10, 20, 30, 0, 40), 0, "top_k_grad: scattered back");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", D(1, 3, 2, -1, -3, -2));
  rt_in_i64(&r, "i", "[2, 2]", L(1, 2, 0, 3));
  rt_in_f64(&r, "g", "[2, 2]", D(10, 20, 30, 40));
  rt_op(&r, "top_k_grad", "X=x Indices=i Out@GRAD=g", "X@GRAD=gx");
  rt_fails(&r, PD_EINVAL, "top_k_grad: Indices row 1 has an index outside [0, 3)",
           "top_k_grad: a bad index");
  rt_free(&r);
}

int main(void) {
  test_reduce();
  test_reduce_int();
  test_reduce_misc();
  test_arg_max();
  test_top_k();
  return tap_done();
}
