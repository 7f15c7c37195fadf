/* test_elementwise.c -- broadcast binary ops, comparisons, logical ops, unary activations,
 * scale, fill and cast against naive references written here; gradients of the unary and
 * binary ops by central finite differences in fp64. */
#include "config.h"
#include "kernels/kernels.h"
#include "tests/kernels/kt.h"

#include <limits.h>

/* A broadcast case with its shapes padded to the output rank, written out by hand (the naive
 * reference below indexes through these, not through pd_k_broadcast_dims). */
typedef struct bcase {
  const char *what;
  int xnd;
  int64_t x[4];
  int ynd;
  int64_t y[4];
  int axis;
  int ond;
  int64_t xpad[4], ypad[4];
} bcase;

static const bcase cases[] = {
    {"same shape [17]", 1, {17}, 1, {17}, -1, 1, {17}, {17}},
    {"row broadcast [3,17]+[17]", 2, {3, 17}, 1, {17}, -1, 2, {3, 17}, {1, 17}},
    {"Fluid axis [2,3,4,5]+[3,4] axis 1", 4, {2, 3, 4, 5}, 2, {3, 4}, 1, 4, {2, 3, 4, 5},
     {1, 3, 4, 1}},
    {"Fluid axis, trailing 1 dropped [2,3]+[3,1] axis 1", 2, {2, 3}, 2, {3, 1}, 1, 2, {2, 3},
     {1, 3}},
    {"channel bias [2,6,5,5]+[6] axis 1", 4, {2, 6, 5, 5}, 1, {6}, 1, 4, {2, 6, 5, 5},
     {1, 6, 1, 1}},
    {"both broadcast [3,1]+[1,4]", 2, {3, 1}, 2, {1, 4}, -1, 2, {3, 1}, {1, 4}},
    {"x lower rank [5]+[2,3,4,5]", 1, {5}, 4, {2, 3, 4, 5}, -1, 4, {1, 1, 1, 5}, {2, 3, 4, 5}},
    {"x lower rank with axis [3]+[2,3,4] axis 1", 1, {3}, 3, {2, 3, 4}, 1, 3, {1, 3, 1},
     {2, 3, 4}},
    {"rank-0 x []+[4,3]", 0, {0}, 2, {4, 3}, -1, 2, {1, 1}, {4, 3}},
    {"NumPy 3-d [4,1,3]+[2,1]", 3, {4, 1, 3}, 2, {2, 1}, -1, 3, {4, 1, 3}, {1, 2, 1}},
    {"column [64,1]+[1]", 2, {64, 1}, 1, {1}, -1, 2, {64, 1}, {1, 1}},
    {"large row broadcast (threads) [300,129]+[129]", 2, {300, 129}, 1, {129}, -1, 2,
     {300, 129}, {1, 129}},
};

static void test_broadcast_shape(void) {
  for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
    const bcase *b = &cases[c];
    int nd;
    int64_t od[PD_K_MAX_DIMS], xp[PD_K_MAX_DIMS], yp[PD_K_MAX_DIMS];
    pd_status st = pd_k_broadcast_dims(b->xnd, b->x, b->ynd, b->y, b->axis, &nd, od, xp, yp);
    bool same = st == PD_OK && nd == b->ond;
    for (int d = 0; same && d < nd; d++)
      same = xp[d] == b->xpad[d] && yp[d] == b->ypad[d] &&
             od[d] == (b->xpad[d] == 1 ? b->ypad[d] : b->xpad[d]);
    ok(same, "broadcast shape: %s", b->what);
  }
  int nd;
  int64_t od[PD_K_MAX_DIMS];
  is_int(pd_k_broadcast_shape(2, (int64_t[]){2, 3}, 1, (int64_t[]){4}, -1, &nd, od), PD_ESHAPE,
         "[2,3] and [4] do not broadcast");
  is_int(pd_k_broadcast_shape(2, (int64_t[]){2, 3}, 2, (int64_t[]){3, 4}, 1, &nd, od),
         PD_ESHAPE, "[3,4] does not fit [2,3] at axis 1");
  is_int(pd_k_broadcast_shape(2, (int64_t[]){2, 3}, 1, (int64_t[]){3}, -2, &nd, od), PD_EINVAL,
         "axis -2 is invalid");
  is_int(pd_k_broadcast_shape(10, (int64_t[10]){1}, 1, (int64_t[]){3}, -1, &nd, od), PD_EINVAL,
         "rank 10 is beyond PD_K_MAX_DIMS");
}

/* Flat index into an operand padded to `pad` for output multi-index idx. */
static int64_t bcast_index(int nd, const int64_t *pad, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < nd; d++) off = off * pad[d] + (pad[d] == 1 ? 0 : idx[d]);
  return off;
}

/* Naive broadcast: want[o] = f(x[..], y[..]) over the output of case b. */
typedef double pair_fn(int op, double a, double b, bool is_int);
static void naive_bcast(const bcase *b, int op, bool is_int, const double *x, const double *y,
                        double *want, pair_fn *f) {
  int64_t od[4], idx[4] = {0};
  for (int d = 0; d < b->ond; d++) od[d] = b->xpad[d] == 1 ? b->ypad[d] : b->xpad[d];
  int64_t n = kt_numel(b->ond, od);
  for (int64_t o = 0; o < n; o++) {
    int64_t r = o;
    for (int d = b->ond - 1; d >= 0; d--) {
      idx[d] = r % od[d];
      r /= od[d];
    }
    want[o] = f(op, x[bcast_index(b->ond, b->xpad, idx)], y[bcast_index(b->ond, b->ypad, idx)],
                is_int);
  }
}

static double ref_binop(int op, double a, double b, bool is_int) {
  switch (op) {
    case PD_K_ADD: return a + b;
    case PD_K_SUB: return a - b;
    case PD_K_MUL: return a * b;
    case PD_K_DIV: return is_int ? (b == 0 ? 0 : trunc(a / b)) : a / b;
    case PD_K_MAX: return a > b ? a : b;
    case PD_K_MIN: return a < b ? a : b;
    default: return pow(a, b);
  }
}

static double ref_cmp(int op, double a, double b, bool is_int) {
  PD_UNUSED(is_int);
  switch (op) {
    case PD_K_LT: return a < b;
    case PD_K_LE: return a <= b;
    case PD_K_GT: return a > b;
    case PD_K_GE: return a >= b;
    case PD_K_EQ: return a == b;
    default: return a != b;
  }
}

static double ref_logic(int op, double a, double b, bool is_int) {
  PD_UNUSED(is_int);
  bool p = a != 0, q = b != 0;
  return op == PD_K_AND ? (p && q) : op == PD_K_OR ? (p || q) : (p != q);
}

static int64_t case_numel(const bcase *b, bool of_y) {
  return of_y ? kt_numel(b->ynd, b->y) : kt_numel(b->xnd, b->x);
}

static int64_t case_out_numel(const bcase *b) {
  int64_t n = 1;
  for (int d = 0; d < b->ond; d++) n *= b->xpad[d] == 1 ? b->ypad[d] : b->xpad[d];
  return n;
}

static void test_binary(void) {
  const pd_dtype types[] = {PD_FP32, PD_FP64, PD_INT32, PD_INT64};
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    bool is_int = dt == PD_INT32 || dt == PD_INT64;
    for (int op = 0; op < PD_K_BINOP_COUNT_; op++) {
      if (is_int && op == PD_K_POW) continue;
      int good = 0, total = 0;
      for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
        const bcase *b = &cases[c];
        int64_t nx = case_numel(b, false), ny = case_numel(b, true), no = case_out_numel(b);
        void *x, *y;
        if (is_int) {
          x = kt_random(dt, nx, -50, 50);
          y = kt_random(dt, ny, -50, 50);
        } else if (op == PD_K_POW) {
          x = kt_random(dt, nx, 0.5, 2);
          y = kt_random(dt, ny, -2, 2);
        } else {
          x = kt_random(dt, nx, -3, 3);
          y = kt_random(dt, ny, 0.5, 2);
          for (int64_t i = 0; i < ny; i += 2) kt_set(dt, y, i, -kt_get(dt, y, i));
        }
        void *out = kt_alloc((size_t)no * pd_dtype_size(dt));
        double *xd = kt_to_double(dt, x, nx), *yd = kt_to_double(dt, y, ny);
        double *want = kt_alloc((size_t)no * sizeof *want);
        naive_bcast(b, op, is_int, xd, yd, want, ref_binop);
        pd_status st = K->binary(op, dt, b->xnd, b->x, x, b->ynd, b->y, y, b->axis, out);
        double e = kt_err(dt, out, want, no);
        total++;
        if (st == PD_OK && e <= (is_int ? 0 : kt_tol(dt))) good++;
        else printf("# %s %s %s: status %d, error %g\n", pd_dtype_name(dt),
                    pd_k_binop_name(op), b->what, st, e);
        free(x), free(y), free(out), free(xd), free(yd), free(want);
      }
      ok(good == total, "binary %s %s: %d/%d broadcast cases match the naive loop",
         pd_k_binop_name(op), pd_dtype_name(dt), good, total);
    }
  }

  /* In place: out == x. */
  float x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {10, 20, 30};
  ok(K->binary(PD_K_ADD, PD_FP32, 2, (int64_t[]){2, 3}, x, 1, (int64_t[]){3}, y, -1, x) == PD_OK &&
         x[0] == 11 && x[5] == 36,
     "binary add works in place (out == x)");

  /* Integer edge cases never trap. */
  int32_t a[4] = {INT32_MIN, 7, INT32_MAX, -7}, bb[4] = {-1, 0, 1, 2}, o[4];
  int64_t d4[] = {4};
  K->binary(PD_K_DIV, PD_INT32, 1, d4, a, 1, d4, bb, -1, o);
  ok(o[0] == INT32_MIN && o[1] == 0 && o[3] == -3, "int32 div: MIN/-1 wraps, x/0 = 0, truncates");
  K->binary(PD_K_ADD, PD_INT32, 1, d4, a, 1, d4, bb, -1, o);
  ok(o[2] == INT32_MIN, "int32 add wraps on overflow");

  /* NaN propagates through max/min. */
  double p[2] = {NAN, 1}, q[2] = {1, NAN}, r[2];
  K->binary(PD_K_MAX, PD_FP64, 1, (int64_t[]){2}, p, 1, (int64_t[]){2}, q, -1, r);
  ok(isnan(r[0]) && isnan(r[1]), "max propagates NaN from either side");
  K->binary(PD_K_MIN, PD_FP64, 1, (int64_t[]){2}, p, 1, (int64_t[]){2}, q, -1, r);
  ok(isnan(r[0]) && isnan(r[1]), "min propagates NaN from either side");

  is_int(K->binary(PD_K_POW, PD_INT64, 1, d4, a, 1, d4, bb, -1, o), PD_EUNSUPPORTED,
         "integer pow is unsupported");
  is_int(K->binary(PD_K_ADD, PD_FP16, 1, d4, a, 1, d4, bb, -1, o), PD_EUNSUPPORTED,
         "fp16 is unsupported");
  is_int(K->binary(PD_K_ADD, PD_FP32, 1, d4, a, 1, (int64_t[]){3}, bb, -1, o), PD_ESHAPE,
         "[4] + [3] is a shape error");
}

static void test_compare_logical(void) {
  const pd_dtype types[] = {PD_FP32, PD_FP64, PD_INT32, PD_INT64, PD_BOOL};
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    for (int op = 0; op < PD_K_CMPOP_COUNT_; op++) {
      int good = 0, total = 0;
      for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
        const bcase *b = &cases[c];
        int64_t nx = case_numel(b, false), ny = case_numel(b, true), no = case_out_numel(b);
        double lo = dt == PD_BOOL ? 0 : -3, hi = dt == PD_BOOL ? 2 : 3;
        void *x = kt_random(dt, nx, lo, hi), *y = kt_random(dt, ny, lo, hi);
        if (dt != PD_BOOL && ny > 1) kt_set(dt, y, 0, kt_get(dt, x, 0));  /* some equal pairs */
        uint8_t *out = kt_alloc((size_t)no);
        double *xd = kt_to_double(dt, x, nx), *yd = kt_to_double(dt, y, ny);
        double *want = kt_alloc((size_t)no * sizeof *want);
        naive_bcast(b, op, false, xd, yd, want, ref_cmp);
        pd_status st = K->compare(op, dt, b->xnd, b->x, x, b->ynd, b->y, y, b->axis, out);
        total++;
        if (st == PD_OK && kt_err(PD_BOOL, out, want, no) == 0) good++;
        free(x), free(y), free(out), free(xd), free(yd), free(want);
      }
      ok(good == total, "compare %s %s: %d/%d cases", pd_k_cmpop_name(op), pd_dtype_name(dt),
         good, total);
    }
  }
  uint8_t t2[2] = {2, 0}, t1[2] = {1, 0}, r[2];
  K->compare(PD_K_EQ, PD_BOOL, 1, (int64_t[]){2}, t2, 1, (int64_t[]){2}, t1, -1, r);
  ok(r[0] == 1 && r[1] == 1, "any non-zero byte is true: bool 2 == bool 1");
  double nan = NAN;
  K->compare(PD_K_NE, PD_FP64, 0, NULL, &nan, 0, NULL, &nan, -1, r);
  ok(r[0] == 1, "NaN != NaN");

  for (int op = 0; op < PD_K_LOGOP_COUNT_; op++) {
    int good = 0, total = 0;
    for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
      const bcase *b = &cases[c];
      int64_t nx = case_numel(b, false), ny = case_numel(b, true), no = case_out_numel(b);
      uint8_t *x = kt_random(PD_BOOL, nx, 0, 2), *y = kt_random(PD_BOOL, ny, 0, 2);
      for (int64_t i = 0; i < nx; i += 3) x[i] *= 5;  /* non-canonical trues */
      uint8_t *out = kt_alloc((size_t)no);
      double *xd = kt_to_double(PD_BOOL, x, nx), *yd = kt_to_double(PD_BOOL, y, ny);
      double *want = kt_alloc((size_t)no * sizeof *want);
      naive_bcast(b, op, false, xd, yd, want, ref_logic);
      total++;
      if (K->logical(op, b->xnd, b->x, x, b->ynd, b->y, y, b->axis, out) == PD_OK &&
          kt_err(PD_BOOL, out, want, no) == 0)
        good++;
      free(x), free(y), free(out), free(xd), free(yd), free(want);
    }
    ok(good == total, "logical %s: %d/%d cases", pd_k_logop_name(op), good, total);
  }
  uint8_t in[3] = {0, 1, 7}, out[3];
  K->logical_not(3, in, out);
  ok(out[0] == 1 && out[1] == 0 && out[2] == 0, "logical not");
}

/* ---- Unary ops ---- */

static double ref_unary(int op, double x) {
  switch (op) {
    case PD_K_RELU: return x < 0 ? 0 : x;
    case PD_K_SIGMOID: return 1 / (1 + exp(-x));
    case PD_K_TANH: return tanh(x);
    case PD_K_EXP: return exp(x);
    case PD_K_LOG: return log(x);
    case PD_K_SQRT: return sqrt(x);
    case PD_K_SQUARE: return x * x;
    default: return fabs(x);
  }
}

/* Inputs in each op's domain, kept away from kinks (relu, abs at 0). */
static void unary_inputs(int op, pd_dtype dt, void *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double v = op == PD_K_LOG || op == PD_K_SQRT ? kt_uniform(0.2, 3) : kt_uniform(0.2, 2.5);
    if (op != PD_K_LOG && op != PD_K_SQRT && i % 2) v = -v;
    kt_set(dt, x, i, v);
  }
}

static void test_unary(void) {
  const int64_t sizes[] = {1, 17, 40000};
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    for (int op = 0; op < PD_K_UNOP_COUNT_; op++) {
      bool good = true;
      for (size_t s = 0; s < PD_ARRAY_LEN(sizes); s++) {
        int64_t n = sizes[s];
        void *x = kt_alloc((size_t)n * pd_dtype_size(dt)), *y = kt_alloc((size_t)n * 8);
        unary_inputs(op, dt, x, n);
        double *want = kt_alloc((size_t)n * sizeof *want);
        for (int64_t i = 0; i < n; i++) want[i] = ref_unary(op, kt_get(dt, x, i));
        good &= K->unary(op, dt, n, x, y) == PD_OK && kt_err(dt, y, want, n) <= kt_tol(dt);
        /* in place */
        good &= K->unary(op, dt, n, x, x) == PD_OK && kt_err(dt, x, want, n) <= kt_tol(dt);
        free(x), free(y), free(want);
      }
      ok(good, "unary %s %s matches libm (n = 1, 17, 40000; in place too)", pd_k_unop_name(op),
         pd_dtype_name(dt));
    }
  }
  float big[4] = {-1000, 1000, -90, 90}, s[4];
  K->unary(PD_K_SIGMOID, PD_FP32, 4, big, s);
  ok(s[0] == 0 && s[1] == 1 && s[2] >= 0 && s[3] == 1, "sigmoid saturates at +-1000 without NaN");
  float nanv = NAN, r;
  K->unary(PD_K_RELU, PD_FP32, 1, &nanv, &r);
  ok(isnan(r), "relu keeps NaN");
  is_int(K->unary(PD_K_EXP, PD_INT32, 1, &r, &r), PD_EUNSUPPORTED, "unary on int32 unsupported");
}

typedef struct unary_ctx {
  int op;
} unary_ctx;

static void unary_fwd(const double *x, double *y, void *ctx) {
  const unary_ctx *c = ctx;
  K->unary(c->op, PD_FP64, 24, x, y);
}

static void test_unary_grad(void) {
  const int64_t n = 24;
  for (int op = 0; op < PD_K_UNOP_COUNT_; op++) {
    double x[24], y[24], dout[24], dx[24];
    unary_inputs(op, PD_FP64, x, n);
    for (int i = 0; i < n; i++) dout[i] = kt_uniform(-1, 1);
    K->unary(op, PD_FP64, n, x, y);
    pd_status st = K->unary_grad(op, PD_FP64, n, x, y, dout, dx);
    unary_ctx c = {op};
    is_int(st, PD_OK, "unary_grad %s runs", pd_k_unop_name(op));
    kt_grad_ok(kt_gradcheck(n, x, n, dout, dx, unary_fwd, &c),
               "unary_grad %s fp64 matches finite differences", pd_k_unop_name(op));
    /* fp32 agrees with fp64 on the same inputs. */
    float xf[24], yf[24], df[24], dxf[24];
    for (int i = 0; i < n; i++) xf[i] = (float)x[i], df[i] = (float)dout[i];
    K->unary(op, PD_FP32, n, xf, yf);
    for (int i = 0; i < n; i++) x[i] = xf[i], dout[i] = df[i];
    K->unary(op, PD_FP64, n, x, y);
    K->unary_grad(op, PD_FP64, n, x, y, dout, dx);
    K->unary_grad(op, PD_FP32, n, xf, yf, df, dxf);
    kt_close(PD_FP32, dxf, dx, n, 1e-5, "unary_grad %s fp32 agrees with fp64",
             pd_k_unop_name(op));
  }
  double v = 1, d = 1, g;
  is_int(K->unary_grad(PD_K_RELU, PD_FP64, 1, &v, NULL, &d, &g), PD_EINVAL,
         "relu_grad without the forward output is refused");
  is_int(K->unary_grad(PD_K_LOG, PD_FP64, 1, &v, NULL, &d, &g), PD_OK,
         "log_grad needs only x");
}

/* ---- Binary gradients ---- */

typedef struct bin_ctx {
  int op;
  const bcase *b;
  const double *other;  /* the operand held fixed */
  bool wrt_y;
} bin_ctx;

static void bin_fwd(const double *v, double *out, void *ctx) {
  const bin_ctx *c = ctx;
  const double *x = c->wrt_y ? c->other : v, *y = c->wrt_y ? v : c->other;
  K->binary(c->op, PD_FP64, c->b->xnd, c->b->x, x, c->b->ynd, c->b->y, y, c->b->axis, out);
}

static void test_binary_grad(void) {
  /* Same shape, row broadcast, Fluid axis, both broadcast, rank-0 x. */
  const size_t pick[] = {0, 1, 2, 5, 8};
  for (int op = 0; op < PD_K_BINOP_COUNT_; op++) {
    double worst = 0;
    bool ran = true;
    for (size_t k = 0; k < PD_ARRAY_LEN(pick); k++) {
      const bcase *b = &cases[pick[k]];
      int64_t nx = case_numel(b, false), ny = case_numel(b, true), no = case_out_numel(b);
      double *x = kt_random(PD_FP64, nx, 0.5, 2), *y = kt_random(PD_FP64, ny, 0.5, 2);
      double *dout = kt_random(PD_FP64, no, -1, 1);
      double *dx = kt_alloc((size_t)nx * 8), *dy = kt_alloc((size_t)ny * 8);
      ran &= K->binary_grad(op, PD_FP64, b->xnd, b->x, x, b->ynd, b->y, y, b->axis, dout, dx,
                            dy) == PD_OK;
      bin_ctx cx = {op, b, y, false}, cy = {op, b, x, true};
      double e1 = kt_gradcheck(nx, x, no, dout, dx, bin_fwd, &cx);
      double e2 = kt_gradcheck(ny, y, no, dout, dy, bin_fwd, &cy);
      if (e1 > worst) worst = e1;
      if (e2 > worst) worst = e2;
      /* One gradient alone gives the same values. */
      double *dy2 = kt_alloc((size_t)ny * 8);
      ran &= K->binary_grad(op, PD_FP64, b->xnd, b->x, x, b->ynd, b->y, y, b->axis, dout, NULL,
                            dy2) == PD_OK &&
             memcmp(dy, dy2, (size_t)ny * 8) == 0;
      free(x), free(y), free(dout), free(dx), free(dy), free(dy2);
    }
    ok(ran, "binary_grad %s runs (dx and dy, or dy alone)", pd_k_binop_name(op));
    kt_grad_ok(worst, "binary_grad %s fp64 matches finite differences (5 broadcast layouts)",
               pd_k_binop_name(op));
  }
  /* fp32 on a large bias-add layout (parallel dx, serial dy) against fp64. */
  const bcase *b = &cases[11];
  int64_t nx = case_numel(b, false), ny = case_numel(b, true);
  float *x = kt_random(PD_FP32, nx, 0.5, 2), *y = kt_random(PD_FP32, ny, 0.5, 2);
  float *d = kt_random(PD_FP32, nx, -1, 1), *dx = kt_alloc((size_t)nx * 4),
        *dy = kt_alloc((size_t)ny * 4);
  double *xd = kt_to_double(PD_FP32, x, nx), *yd = kt_to_double(PD_FP32, y, ny),
         *dd = kt_to_double(PD_FP32, d, nx), *dxd = kt_alloc((size_t)nx * 8),
         *dyd = kt_alloc((size_t)ny * 8);
  K->binary_grad(PD_K_MUL, PD_FP32, b->xnd, b->x, x, b->ynd, b->y, y, -1, d, dx, dy);
  K->binary_grad(PD_K_MUL, PD_FP64, b->xnd, b->x, xd, b->ynd, b->y, yd, -1, dd, dxd, dyd);
  kt_close(PD_FP32, dx, dxd, nx, 1e-5, "fp32 mul grad dx on [300,129]");
  kt_close(PD_FP32, dy, dyd, ny, 1e-4, "fp32 mul grad dy summed over 300 rows");
  free(x), free(y), free(d), free(dx), free(dy), free(xd), free(yd), free(dd), free(dxd),
      free(dyd);
}

static void test_scale_fill_cast(void) {
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    int64_t n = 50000;
    void *x = kt_random(dt, n, -2, 2);
    double *want = kt_alloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) want[i] = 2.5 * kt_get(dt, x, i) - 1;
    ok(K->scale(dt, n, x, 2.5, -1, x) == PD_OK && kt_err(dt, x, want, n) <= kt_tol(dt),
       "scale %s: 2.5 * x - 1 in place", pd_dtype_name(dt));
    free(x), free(want);
  }
  float f[3];
  double d[3];
  int32_t i32[3];
  int64_t i64[3];
  uint8_t b[3];
  K->fill(PD_FP32, 3, f, 3.7);
  K->fill(PD_FP64, 3, d, 3.7);
  K->fill(PD_INT32, 3, i32, 3.7);
  K->fill(PD_INT64, 3, i64, -3.7);
  K->fill(PD_BOOL, 3, b, 0.5);
  ok(f[2] == 3.7f && d[2] == 3.7 && i32[2] == 3 && i64[2] == -3 && b[2] == 1,
     "fill converts the value to each dtype");
  K->fill(PD_INT32, 3, i32, -1e20);
  ok(i32[0] == INT32_MIN, "fill saturates -1e20 to INT32_MIN");

  const double src[] = {0, 1, -1.5, 2.7, 3e9, -3e9, 1e20, NAN};
  int32_t o32[8];
  int64_t o64[8];
  uint8_t ob[8];
  K->cast(PD_FP64, src, PD_INT32, o32, 8);
  ok(o32[0] == 0 && o32[1] == 1 && o32[2] == -1 && o32[3] == 2 && o32[4] == INT32_MAX &&
         o32[5] == INT32_MIN && o32[6] == INT32_MAX && o32[7] == 0,
     "cast fp64 -> int32 truncates, saturates, NaN -> 0");
  K->cast(PD_FP64, src, PD_INT64, o64, 8);
  ok(o64[3] == 2 && o64[4] == 3000000000 && o64[5] == -3000000000 && o64[6] == INT64_MAX &&
         o64[7] == 0,
     "cast fp64 -> int64");
  K->cast(PD_FP64, src, PD_BOOL, ob, 8);
  ok(ob[0] == 0 && ob[1] == 1 && ob[2] == 1 && ob[7] == 1, "cast fp64 -> bool is != 0");
  const int64_t big[] = {5000000000, -7, 1};
  float of[3];
  K->cast(PD_INT64, big, PD_INT32, o32, 3);
  ok(o32[0] == 705032704 && o32[1] == -7, "cast int64 -> int32 wraps");
  K->cast(PD_INT64, big, PD_FP32, of, 3);
  ok(of[0] == 5e9f && of[1] == -7, "cast int64 -> fp32");
  const uint8_t bools[] = {0, 1, 2};
  K->cast(PD_BOOL, bools, PD_INT32, o32, 3);
  K->cast(PD_BOOL, bools, PD_FP32, of, 3);
  ok(o32[2] == 1 && of[2] == 1 && of[0] == 0, "cast bool -> int32/fp32 reads bytes as 0/1");
  const int32_t small[] = {-2, 40};
  K->cast(PD_INT32, small, PD_INT64, o64, 2);
  K->cast(PD_INT32, small, PD_FP64, d, 2);
  ok(o64[0] == -2 && d[1] == 40, "cast int32 -> int64/fp64");
  float fs[2] = {1.5f, -2.5f};
  K->cast(PD_FP32, fs, PD_FP64, d, 2);
  ok(d[0] == 1.5 && d[1] == -2.5, "cast fp32 -> fp64");
  is_int(K->cast(PD_INT16, fs, PD_FP64, d, 2), PD_EUNSUPPORTED, "cast from int16 unsupported");
}

static void test_names(void) {
  bool good = true;
  for (int op = 0; op < PD_K_BINOP_COUNT_; op++)
    good &= pd_k_binop_from_name(pd_k_binop_name(op)) == op;
  for (int op = 0; op < PD_K_UNOP_COUNT_; op++)
    good &= pd_k_unop_from_name(pd_k_unop_name(op)) == op;
  for (int op = 0; op < PD_K_CMPOP_COUNT_; op++)
    good &= pd_k_cmpop_from_name(pd_k_cmpop_name(op)) == op;
  ok(good, "op names round-trip");
  is_str(pd_k_cmpop_name(PD_K_LT), "less_than", "compare names are Fluid's op types");
  is_int(pd_k_unop_from_name("gelu"), -1, "unknown name gives -1");
  is_str(pd_k_binop_name(PD_K_BINOP_COUNT_), "?", "out-of-range op name");
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  kt_begin(argv);
  test_broadcast_shape();
  test_binary();
  test_compare_logical();
  test_unary();
  test_unary_grad();
  test_binary_grad();
  test_scale_fill_cast();
  test_names();
  return tap_done();
}
