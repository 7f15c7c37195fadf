/* test_kern_math_matmul.c -- the kernels of mul (Fluid's flattening at x_num_col_dims /
 * y_num_col_dims), fc (mul plus a bias) and matmul_v2 (transposes, 1-D operands, broadcast batch
 * dims) through the executor, against naive triple loops written here; LoD, aliasing, run-time
 * shape errors and finite-difference gradients of both operands; memory_efficient_attention's
 * errors. */
#include "config.h"

#include "tests/vm/ops/test_kern_math.h"

/* ---------------------------------------------------------------- mul */

/* out [m, n] = a [m, k] b [k, n]. */
static void naive_mm(int m, int k, int n, const double *a, const double *b, double *out) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double s = 0;
      for (int q = 0; q < k; q++) s += a[i * k + q] * b[q * n + j];
      out[i * n + j] = s;
    }
}

/* mul of X (shape xs, m x k once flattened) by Y (ys, k x n) with the given num_col_dims. */
static void mul_case(const char *xs, const char *ys, int xn, int yn, int m, int k, int n,
                     const char *what) {
  double x[64], y[64], want[64];
  vals(x, m * k, -2, 2, 31, false);
  vals(y, k * n, -2, 2, 32, false);
  naive_mm(m, k, n, x, y, want);
  for (int dt = 0; dt < 2; dt++) {
    rt r;
    rt_init(&r);
    if (dt == 0) {
      float xf[64], yf[64];
      to_f32(x, xf, m * k);
      to_f32(y, yf, k * n);
      rt_in_f32(&r, "x", xs, xf);
      rt_in_f32(&r, "y", ys, yf);
    } else {
      rt_in_f64(&r, "x", xs, x);
      rt_in_f64(&r, "y", ys, y);
    }
    pd_op_desc *op = rt_op(&r, "mul", "X=x Y=y", "Out=o");
    pd_op_set_attr_int(op, "x_num_col_dims", xn);
    pd_op_set_attr_int(op, "y_num_col_dims", yn);
    char w[128];
    snprintf(w, sizeof w, "%s (%s)", what, dt ? "float64" : "float32");
    if (rt_ok(&r, w)) rt_expect(rt_get(&r, "o"), m * n, want, dt ? 1e-14 : 1e-5, w);
    if (dt == 1) grad_check(&r, "X Y", "Out", what);
    rt_free(&r);
  }
}

static void test_mul(void) {
  mul_case("[2, 3]", "[3, 4]", 1, 1, 2, 3, 4, "mul [2, 3] x [3, 4]");
  mul_case("[2, 2, 3]", "[3, 4]", 2, 1, 4, 3, 4, "mul x_num_col_dims 2: [2, 2, 3] x [3, 4]");
  mul_case("[2, 3, 2]", "[6, 4]", 1, 1, 2, 6, 4, "mul flattens X's columns: [2, 3, 2] x [6, 4]");
  mul_case("[2, 6]", "[2, 3, 5]", 1, 2, 2, 6, 5, "mul y_num_col_dims 2: [2, 6] x [2, 3, 5]");
  mul_case("[1, 1]", "[1, 1]", 1, 1, 1, 1, 1, "mul of 1x1 matrices");

  /* Out's shape, X's LoD. */
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[3, 2]", F(1, 2, 3, 4, 5, 6));
  rt_lod(&r, "x", 3, L(0, 1, 3));
  rt_in_f32(&r, "y", "[2, 1, 2]", F(1, 0, 0, 1));
  pd_op_desc *op = rt_op(&r, "mul", "X=x Y=y", "Out=o");
  pd_op_set_attr_int(op, "y_num_col_dims", 1);
  if (rt_ok(&r, "mul [3, 2] x [2, 1, 2]")) {
    const pd_tensor *o = rt_get(&r, "o");
    ok(o && o->ndims == 3 && o->dims[0] == 3 && o->dims[1] == 1 && o->dims[2] == 2,
       "mul: Out is X.dims[:1] + Y.dims[1:]");
    rt_expect(o, 6, D(1, 2, 3, 4, 5, 6), 0, "mul by the identity");
    ok(lod_is(o, 3, L(0, 1, 3)), "mul keeps X's LoD");
  }
  rt_free(&r);

  /* Out written over X: the product reads X whole before it is replaced. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 2]", D(1, 2, 3, 4));
  rt_in_f64(&r, "w", "[2, 2]", D(0, 1, 1, 0));
  rt_op(&r, "mul", "X=x Y=w", "Out=x");
  if (rt_ok(&r, "x = mul(x, w)"))
    rt_expect(rt_get(&r, "x"), 4, D(2, 1, 4, 3), 0, "x = mul(x, w): columns swapped");
  rt_free(&r);

  /* An empty batch. */
  rt_init(&r);
  rt_in_f32(&r, "x", "[0, 3]", F(0));
  rt_in_f32(&r, "y", "[3, 2]", F(1, 2, 3, 4, 5, 6));
  rt_op(&r, "mul", "X=x Y=y", "Out=o");
  if (rt_ok(&r, "mul of an empty batch")) {
    const pd_tensor *o = rt_get(&r, "o");
    ok(o && o->ndims == 2 && o->dims[0] == 0 && o->dims[1] == 2, "mul: [0, 3] x [3, 2] is [0, 2]");
  }
  rt_free(&r);

  /* Columns that only disagree at run time. */
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 5]", F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  rt_in_f32(&r, "y", "[3, 4]", F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
  decl(r.f.b, "x", PD_FP32, "[2, -1]");
  rt_op(&r, "mul", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ESHAPE, "mul: X has 5 columns but Y has 3 rows ([2, 5] x [3, 4])",
           "mul: a column mismatch at run time");
  rt_free(&r);

  /* mul_grad with only dY wanted, and dX's LoD. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 2]", D(1, 2, 3, 4));
  rt_in_f64(&r, "y", "[2, 1]", D(1, -1));
  rt_in_f64(&r, "g", "[2, 1]", D(1, 10));
  rt_op(&r, "mul_grad", "X=x Y=y Out@GRAD=g", "Y@GRAD=gy");
  if (rt_ok(&r, "mul_grad, dY only"))
    rt_expect(rt_get(&r, "gy"), 2, D(31, 42), 0, "mul_grad: dY = X^T dOut");
  rt_free(&r);
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 2]", D(1, 2, 3, 4));
  rt_lod(&r, "x", 2, L(0, 2));
  rt_in_f64(&r, "y", "[2, 1]", D(1, -1));
  rt_in_f64(&r, "g", "[2, 1]", D(1, 10));
  rt_op(&r, "mul_grad", "X=x Y=y Out@GRAD=g", "X@GRAD=gx");
  if (rt_ok(&r, "mul_grad, dX only")) {
    rt_expect(rt_get(&r, "gx"), 4, D(1, -1, 10, -10), 0, "mul_grad: dX = dOut Y^T");
    ok(lod_is(rt_get(&r, "gx"), 2, L(0, 2)), "mul_grad: dX takes X's LoD");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- matmul_v2 */

/* NumPy's matmul written out: X (xnd dims xd) times Y, transposes applied to stored matrices,
 * 1-D operands promoted and the batch dims broadcast. Returns Out's element count. */
static int naive_matmul(int xnd, const int64_t *xd, const double *x, int ynd, const int64_t *yd,
                        const double *y, bool tx, bool ty, double *out) {
  tx = tx && xnd > 1;
  ty = ty && ynd > 1;
  int64_t xr = xnd == 1 ? 1 : xd[xnd - 2], xc = xd[xnd - 1];
  int64_t yr = ynd == 1 ? yd[0] : yd[ynd - 2], yc = ynd == 1 ? 1 : yd[ynd - 1];
  int64_t m = tx ? xc : xr, k = tx ? xr : xc, n = ty ? yr : yc;
  int xb = xnd > 2 ? xnd - 2 : 0, yb = ynd > 2 ? ynd - 2 : 0, nb = xb > yb ? xb : yb;
  int64_t bx[8], by[8], bo[8], batch = 1;
  for (int i = 0; i < nb; i++) {
    bx[i] = i - (nb - xb) >= 0 ? xd[i - (nb - xb)] : 1;
    by[i] = i - (nb - yb) >= 0 ? yd[i - (nb - yb)] : 1;
    bo[i] = bx[i] > by[i] ? bx[i] : by[i];
    batch *= bo[i];
  }
  for (int64_t b = 0; b < batch; b++) {
    int64_t idx[8], rem = b, xi = 0, yi = 0;
    for (int i = nb - 1; i >= 0; i--) {
      idx[i] = rem % bo[i];
      rem /= bo[i];
    }
    for (int i = 0; i < nb; i++) {
      xi = xi * bx[i] + (bx[i] == 1 ? 0 : idx[i]);
      yi = yi * by[i] + (by[i] == 1 ? 0 : idx[i]);
    }
    const double *xm = x + xi * xr * xc, *ym = y + yi * yr * yc;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t q = 0; q < k; q++)
          s += (tx ? xm[q * xc + i] : xm[i * xc + q]) * (ty ? ym[j * yc + q] : ym[q * yc + j]);
        out[(b * m + i) * n + j] = s;
      }
  }
  return (int)(batch * m * n);
}

static void matmul_case(const char *xs, const char *ys, bool tx, bool ty, const char *want_shape,
                        const char *what) {
  int64_t xd[8], yd[8];
  int xnd = parse_shape(xs, xd), ynd = parse_shape(ys, yd);
  int xn = (int)pd_k_numel(xnd, xd), yn = (int)pd_k_numel(ynd, yd);
  double x[128], y[128], want[256];
  vals(x, xn, -2, 2, 41, false);
  vals(y, yn, -2, 2, 42, false);
  int on = naive_matmul(xnd, xd, x, ynd, yd, y, tx, ty, want);
  for (int dt = 0; dt < 2; dt++) {
    rt r;
    rt_init(&r);
    if (dt == 0) {
      float xf[128], yf[128];
      to_f32(x, xf, xn);
      to_f32(y, yf, yn);
      rt_in_f32(&r, "x", xs, xf);
      rt_in_f32(&r, "y", ys, yf);
    } else {
      rt_in_f64(&r, "x", xs, x);
      rt_in_f64(&r, "y", ys, y);
    }
    pd_op_desc *op = rt_op(&r, "matmul_v2", "X=x Y=y", "Out=o");
    pd_op_set_attr_bool(op, "trans_x", tx);
    pd_op_set_attr_bool(op, "trans_y", ty);
    char w[160];
    snprintf(w, sizeof w, "%s (%s)", what, dt ? "float64" : "float32");
    if (rt_ok(&r, w)) {
      const pd_tensor *o = rt_get(&r, "o");
      rt_expect(o, on, want, dt ? 1e-14 : 1e-5, w);
      char got[128] = "none";
      if (o) pd_ctx_shape_str(o, got, sizeof got);
      is_str(got, want_shape, "%s: Out's shape", w);
    }
    if (dt == 1) grad_check(&r, "X Y", "Out", what);
    rt_free(&r);
  }
}

static void test_matmul(void) {
  matmul_case("[2, 3]", "[3, 4]", false, false, "[2, 4]", "matmul [2, 3] x [3, 4]");
  matmul_case("[3, 2]", "[3, 4]", true, false, "[2, 4]", "matmul trans_x");
  matmul_case("[2, 3]", "[4, 3]", false, true, "[2, 4]", "matmul trans_y");
  matmul_case("[3, 2]", "[4, 3]", true, true, "[2, 4]", "matmul trans_x and trans_y");
  matmul_case("[2, 2, 3]", "[2, 3, 4]", false, false, "[2, 2, 4]", "matmul batched");
  matmul_case("[2, 3, 2]", "[2, 4, 3]", true, true, "[2, 2, 4]", "matmul batched, both transposed");
  matmul_case("[3, 3, 2]", "[3, 3, 4]", true, false, "[3, 2, 4]", "matmul batched, trans_x");
  matmul_case("[3, 2, 3]", "[3, 4, 3]", false, true, "[3, 2, 4]", "matmul batched, trans_y");
  matmul_case("[3, 2]", "[2, 4, 3]", true, true, "[2, 2, 4]",
              "matmul, X shared by the batch, both transposed");
  matmul_case("[2, 2, 3]", "[3, 4]", false, false, "[2, 2, 4]", "matmul, Y shared by the batch");
  matmul_case("[2, 2, 3]", "[4, 3]", false, true, "[2, 2, 4]",
              "matmul, Y shared by the batch, trans_y");
  matmul_case("[2, 3, 2]", "[3, 4]", true, false, "[2, 2, 4]",
              "matmul, Y shared by the batch, trans_x");
  matmul_case("[2, 3]", "[3, 3, 4]", false, false, "[3, 2, 4]", "matmul, X shared by the batch");
  matmul_case("[2, 1, 2, 3]", "[3, 3, 4]", false, false, "[2, 3, 2, 4]",
              "matmul, both broadcast along the batch");
  matmul_case("[1, 2, 2, 3]", "[3, 1, 3, 4]", false, false, "[3, 2, 2, 4]",
              "matmul, batch dims [1, 2] and [3, 1]");
  matmul_case("[3]", "[2, 3, 4]", false, false, "[2, 4]", "matmul of a 1-D X");
  matmul_case("[2, 3, 4]", "[4]", false, false, "[2, 3]", "matmul of a 1-D Y");
  matmul_case("[4, 3]", "[4]", true, false, "[3]", "matmul trans_x by a 1-D Y");
  matmul_case("[3]", "[3]", true, true, "[1]", "matmul of two vectors (transposes ignored)");

  /* No LoD on Out; run-time shape errors. */
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 2]", F(1, 2, 3, 4));
  rt_lod(&r, "x", 2, L(0, 2));
  rt_in_f32(&r, "y", "[2, 2]", F(1, 0, 0, 1));
  rt_op(&r, "matmul_v2", "X=x Y=y", "Out=o");
  if (rt_ok(&r, "matmul with a LoD X")) {
    rt_expect(rt_get(&r, "o"), 4, D(1, 2, 3, 4), 0, "matmul by the identity");
    ok(rt_get(&r, "o") && rt_get(&r, "o")->nlod == 0, "matmul: Out has no LoD");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 5]", F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  rt_in_f32(&r, "y", "[3, 4]", F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
  decl(r.f.b, "x", PD_FP32, "[2, -1]");
  rt_op(&r, "matmul_v2", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ESHAPE, "matmul_v2: X has 5 columns but Y has 3 rows ([2, 5] x [3, 4])",
           "matmul: a column mismatch at run time");
  rt_free(&r);

  double z[24] = {0};
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 1, 3]", z);
  rt_in_f64(&r, "y", "[3, 3, 2]", z);
  decl(r.f.b, "x", PD_FP64, "[-1, 1, 3]");
  decl(r.f.b, "y", PD_FP64, "[-1, 3, 2]");
  rt_op(&r, "matmul_v2", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ESHAPE, "matmul_v2: cannot broadcast the batch dims of [2, 1, 3] and [3, 3, 2]",
           "matmul: batch dims that do not broadcast at run time");
  rt_free(&r);

  /* Out written over Y. */
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 2]", D(0, 1, 1, 0));
  rt_in_f64(&r, "y", "[2, 2]", D(1, 2, 3, 4));
  rt_op(&r, "matmul_v2", "X=x Y=y", "Out=y");
  if (rt_ok(&r, "y = matmul(x, y)"))
    rt_expect(rt_get(&r, "y"), 4, D(3, 4, 1, 2), 0, "y = matmul(x, y): rows swapped");
  rt_free(&r);
}

/* Fluid's matmul at run time: X's LoD kept on Out; batch counts that differ (dims unknown when
 * the program was made) refused; Out written over X with alpha. */
static void test_matmul_fluid(void) {
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[3, 2]", F(1, 2, 3, 4, 5, 6));
  rt_lod(&r, "x", 3, L(0, 1, 3));
  rt_in_f32(&r, "y", "[2, 2]", F(1, 0, 0, 1));
  pd_op_set_attr_float(rt_op(&r, "matmul", "X=x Y=y", "Out=o"), "alpha", 0.5f);
  if (rt_ok(&r, "Fluid's matmul with a LoD X")) {
    const pd_tensor *o = rt_get(&r, "o");
    rt_expect(o, 6, D(0.5, 1, 1.5, 2, 2.5, 3), 0, "matmul: half of X");
    ok(o && o->nlod == 1 && o->lod[0].n == 3 && o->lod[0].offsets[2] == 3,
       "matmul: Out keeps X's LoD");
  }
  rt_free(&r);

  double z[48] = {0};
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 2, 3]", z);
  rt_in_f64(&r, "y", "[3, 3, 2]", z);
  decl(r.f.b, "x", PD_FP64, "[-1, 2, 3]");
  decl(r.f.b, "y", PD_FP64, "[-1, 3, 2]");
  rt_op(&r, "matmul", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ESHAPE, "matmul: X's 2 matrices and Y's 3 differ ([2, 2, 3] x [3, 3, 2]): "
           "matmul multiplies equal batches, or one by a matrix",
           "matmul: batch counts that differ at run time");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 2]", D(1, 2, 3, 4));
  rt_in_f64(&r, "y", "[2, 2]", D(0, 1, 1, 0));
  pd_op_desc *op = rt_op(&r, "matmul", "X=x Y=y", "Out=x");
  pd_op_set_attr_bool(op, "transpose_X", true);
  pd_op_set_attr_float(op, "alpha", 2.0f);
  if (rt_ok(&r, "x = matmul(x^T, y) * 2"))
    rt_expect(rt_get(&r, "x"), 4, D(6, 2, 8, 4), 0, "x = 2 x^T y: columns swapped");
  rt_free(&r);
}

/* ---------------------------------------------------------------- fc */

/* fc of Input (shape xs, m x k once flattened at ncd) by W [k, n], plus a bias of shape bs
 * (NULL: none) on every row. */
static void fc_case(const char *xs, const char *ws, const char *bs, int ncd, int m, int k, int n,
                    const char *what) {
  double x[64], w[64], b[8], want[64];
  vals(x, m * k, -2, 2, 41, false);
  vals(w, k * n, -2, 2, 42, false);
  vals(b, n, -1, 1, 43, false);
  naive_mm(m, k, n, x, w, want);
  for (int i = 0; i < m * n && bs; i++) want[i] += b[i % n];
  for (int dt = 0; dt < 2; dt++) {
    rt r;
    rt_init(&r);
    if (dt == 0) {
      float xf[64], wf[64], bf[8];
      to_f32(x, xf, m * k);
      to_f32(w, wf, k * n);
      to_f32(b, bf, n);
      rt_in_f32(&r, "x", xs, xf);
      rt_in_f32(&r, "w", ws, wf);
      if (bs) rt_in_f32(&r, "b", bs, bf);
    } else {
      rt_in_f64(&r, "x", xs, x);
      rt_in_f64(&r, "w", ws, w);
      if (bs) rt_in_f64(&r, "b", bs, b);
    }
    pd_op_desc *op = rt_op(&r, "fc", bs ? "Input=x W=w Bias=b" : "Input=x W=w", "Out=o");
    pd_op_set_attr_int(op, "in_num_col_dims", ncd);
    char name[128];
    snprintf(name, sizeof name, "%s (%s)", what, dt ? "float64" : "float32");
    if (rt_ok(&r, name)) rt_expect(rt_get(&r, "o"), m * n, want, dt ? 1e-14 : 1e-5, name);
    if (dt == 1) grad_check(&r, bs ? "Input W Bias" : "Input W", "Out", what);
    rt_free(&r);
  }
}

static void test_fc(void) {
  fc_case("[2, 3]", "[3, 4]", "[4]", 1, 2, 3, 4, "fc [2, 3] x [3, 4] + [4]");
  fc_case("[2, 2, 3]", "[3, 4]", "[1, 4]", 2, 4, 3, 4,
          "fc in_num_col_dims 2: [2, 2, 3] x [3, 4] + [1, 4]");
  fc_case("[2, 3, 2]", "[6, 4]", "[4]", 1, 2, 6, 4, "fc flattens Input's columns");
  fc_case("[3, 2]", "[2, 5]", NULL, 1, 3, 2, 5, "fc without a bias");

  /* Out's shape and Input's LoD; an empty batch. */
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[3, 2]", F(1, 2, 3, 4, 5, 6));
  rt_lod(&r, "x", 3, L(0, 1, 3));
  rt_in_f32(&r, "w", "[2, 2]", F(1, 0, 0, 1));
  rt_in_f32(&r, "b", "[2]", F(10, 20));
  rt_op(&r, "fc", "Input=x W=w Bias=b", "Out=o");
  if (rt_ok(&r, "fc [3, 2] x [2, 2] + [2]")) {
    const pd_tensor *o = rt_get(&r, "o");
    rt_expect(o, 6, D(11, 22, 13, 24, 15, 26), 0, "fc by the identity adds the bias to each row");
    ok(lod_is(o, 3, L(0, 1, 3)), "fc keeps Input's LoD");
  }
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[0, 3]", F(0));
  rt_in_f32(&r, "w", "[3, 2]", F(1, 2, 3, 4, 5, 6));
  rt_in_f32(&r, "b", "[2]", F(1, 2));
  rt_op(&r, "fc", "Input=x W=w Bias=b", "Out=o");
  if (rt_ok(&r, "fc of an empty batch")) {
    const pd_tensor *o = rt_get(&r, "o");
    ok(o && o->ndims == 2 && o->dims[0] == 0 && o->dims[1] == 2, "fc: [0, 3] x [3, 2] is [0, 2]");
  }
  rt_free(&r);

  /* Shapes that only disagree at run time. */
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 2]", F(1, 2, 3, 4));
  rt_in_f32(&r, "w", "[2, 3]", F(1, 2, 3, 4, 5, 6));
  rt_in_f32(&r, "b", "[2]", F(1, 2));
  decl(r.f.b, "b", PD_FP32, "[-1]");
  rt_op(&r, "fc", "Input=x W=w Bias=b", "Out=o");
  rt_fails(&r, PD_ESHAPE, "fc: Bias [2] must be [3] or [1, 3] for W [2, 3]",
           "fc: a bias of the wrong size at run time");
  rt_free(&r);
  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 5]", F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  rt_in_f32(&r, "w", "[3, 2]", F(1, 2, 3, 4, 5, 6));
  decl(r.f.b, "x", PD_FP32, "[2, -1]");
  rt_op(&r, "fc", "Input=x W=w", "Out=o");
  rt_fails(&r, PD_ESHAPE, "fc: Input has 5 columns but W has 3 rows ([2, 5] x [3, 2])",
           "fc: a column mismatch at run time");
  rt_free(&r);
}

/* ---------------------------------------------------------------- memory_efficient_attention */

/* The errors of memory_efficient_attention (its values are optest_matmul.c's rows): a bias that
 * does not broadcast to the scores (known only at run time), dropout outside is_test, a
 * variable-length input, key and value of two lengths. */
static void test_attention_errors(void) {
  float z[64] = {0};
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "q", "[1, 2, 2, 3]", z);
  rt_in_f32(&r, "k", "[1, 4, 2, 3]", z);
  rt_in_f32(&r, "v", "[1, 4, 2, 3]", z);
  rt_in_f32(&r, "b", "[2, 3]", z);
  decl(r.f.b, "b", PD_FP32, "[-1, -1]");
  rt_op(&r, "memory_efficient_attention", "query=q key=k value=v bias=b", "output=o");
  rt_fails(&r, PD_ESHAPE, "bias [2, 3] does not broadcast to the scores [batch, heads, query "
           "length, key length] [1, 2, 2, 4]", "memory_efficient_attention: a bias of other dims");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "q", "[1, 2, 2, 3]", z);
  rt_in_f32(&r, "k", "[1, 4, 2, 3]", z);
  rt_in_f32(&r, "v", "[1, 4, 2, 3]", z);
  pd_op_desc *op = rt_op(&r, "memory_efficient_attention", "query=q key=k value=v", "output=o");
  pd_op_set_attr_float(op, "dropout_p", 0.1f);
  pd_op_set_attr_bool(op, "is_test", false);
  rt_fails(&r, PD_EUNSUPPORTED, "dropout_p 0.1 outside is_test",
           "memory_efficient_attention: dropout in training refused");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "q", "[1, 2, 2, 3]", z);
  rt_in_f32(&r, "k", "[1, 4, 2, 3]", z);
  rt_in_f32(&r, "v", "[1, 4, 2, 3]", z);
  rt_in_i64(&r, "cu", "[2]", (int64_t[]){0, 2});
  rt_op(&r, "memory_efficient_attention", "query=q key=k value=v cu_seqlens_q=cu", "output=o");
  rt_fails(&r, PD_EUNSUPPORTED, "cu_seqlens_q is set: batches of sequences of several lengths",
           "memory_efficient_attention: variable lengths refused");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "q", "[1, 2, 2, 3]", z);
  rt_in_f32(&r, "k", "[1, 4, 2, 3]", z);
  rt_in_f32(&r, "v", "[1, 5, 2, 3]", z);
  decl(r.f.b, "v", PD_FP32, "[1, -1, 2, 3]");
  rt_op(&r, "memory_efficient_attention", "query=q key=k value=v", "output=o");
  rt_fails(&r, PD_ESHAPE, "key [1, 4, 2, 3] and value [1, 5, 2, 3] do not fit",
           "memory_efficient_attention: key and value of two lengths at run time");
  rt_free(&r);
}

int main(void) {
  test_mul();
  test_fc();
  test_matmul();
  test_matmul_fluid();
  test_attention_errors();
  return tap_done();
}
