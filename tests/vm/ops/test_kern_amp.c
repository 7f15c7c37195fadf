/* test_kern_amp.c -- the matrix products under mixed precision (vm/ops/matmul.c's op_gemm: an op
 * whose mkldnn_data_type is "bfloat16" multiplies through the backend's gemm_lp): mul, fc (with
 * bias) and matmul_v2 (folded, batched, and broadcast over a batch dim, which takes the loop)
 * and their gradient ops, each output against a double-precision product written here of the
 * operands rounded to bf16 (within fp32's rounding of the sums), and apart from the same op
 * without the attribute (so the attribute is what changed it). */
#include "config.h"

#include <math.h>

#include "tests/tap.h"
#include "tests/vm/ops/runop.h"

static uint64_t seed = 42;
static float urand(void) {
  seed = seed * 6364136223846793005u + 1442695040888963407u;
  return (float)((double)(seed >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static void fill(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = urand();
}

/* One product matrix: out[i][j] against the sum over q of bf16(a(i, q)) bf16(b(q, j)); a(i, q)
 * is a[i * sa_i + q * sa_q], b(q, j) is b[q * sb_q + j * sb_j]. Returns whether every element
 * is within (k + 2) 2^-23 of the sum of the terms' magnitudes, and sets *moved when one
 * differs from `plain` (the fp32 result) by more than that. */
typedef struct view {
  const float *p;
  int64_t s0, s1; /* strides of the two indices */
} view;

static bool product_ok(const float *out, const float *plain, int64_t m, int64_t n, int64_t k,
                       view a, view b, const float *bias, bool *moved) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = bias ? bias[j] : 0, mag = bias ? fabs(bias[j]) : 0;
      for (int64_t q = 0; q < k; q++) {
        double t = (double)pd_bf16_round(a.p[i * a.s0 + q * a.s1]) *
                   pd_bf16_round(b.p[q * b.s0 + j * b.s1]);
        s += t;
        mag += fabs(t);
      }
      double tol = (double)(k + 2) * 0x1p-23 * mag;
      if (fabs(out[i * n + j] - s) > tol) {
        printf("# (%lld, %lld): got %.9g, want %.9g\n", (long long)i, (long long)j,
               out[i * n + j], s);
        return false;
      }
      if (fabs(plain[i * n + j] - s) > tol) *moved = true;
    }
  return true;
}

/* Run the op built by `build` twice, plain and in bf16; copy output `name` of each. */
typedef void build_fn(rt *r, bool bf16);
static bool run_both(build_fn *build, const char *const *outs, int nouts, float **plain,
                     float **lp, const char *what) {
  for (int pass = 0; pass < 2; pass++) {
    rt r;
    rt_init(&r);
    build(&r, pass == 1);
    if (!rt_ok(&r, what)) {
      rt_free(&r);
      return false;
    }
    for (int o = 0; o < nouts; o++) {
      const pd_tensor *t = rt_get(&r, outs[o]);
      int64_t n = pd_tensor_numel(t);
      float *dst = pass ? lp[o] : plain[o];
      memcpy(dst, pd_tensor_data(t), (size_t)n * sizeof(float));
    }
    rt_free(&r);
  }
  return true;
}

static void mark(rt *r, bool bf16) {
  if (bf16 && pd_op_set_attr_string(r->op, "mkldnn_data_type", "bfloat16")) bail("out of memory");
}

/* ---- mul and mul_grad: X [5, 37], Y [37, 9] ---- */
static float mx[5 * 37], my[37 * 9], mg[5 * 9];

static void build_mul(rt *r, bool bf16) {
  rt_in_f32(r, "x", "[5, 37]", mx);
  rt_in_f32(r, "y", "[37, 9]", my);
  rt_op(r, "mul", "X=x Y=y", "Out=o");
  mark(r, bf16);
}

static void build_mul_grad(rt *r, bool bf16) {
  rt_in_f32(r, "x", "[5, 37]", mx);
  rt_in_f32(r, "y", "[37, 9]", my);
  rt_in_f32(r, "g", "[5, 9]", mg);
  rt_op(r, "mul_grad", "X=x Y=y Out@GRAD=g", "X@GRAD=dx Y@GRAD=dy");
  mark(r, bf16);
}

static void test_mul(void) {
  fill(mx, 5 * 37), fill(my, 37 * 9), fill(mg, 5 * 9);
  float o32[45], o16[45], *p[1] = {o32}, *l[1] = {o16};
  bool moved = false;
  if (run_both(build_mul, (const char *[]){"o"}, 1, p, l, "mul"))
    ok(product_ok(o16, o32, 5, 9, 37, (view){mx, 37, 1}, (view){my, 9, 1}, NULL, &moved) && moved,
       "mul in bf16: X Y of the rounded operands, not fp32's");
  float dx32[185], dx16[185], dy32[333], dy16[333];
  float *pg[2] = {dx32, dy32}, *lg[2] = {dx16, dy16};
  bool mx_ = false, my_ = false;
  if (run_both(build_mul_grad, (const char *[]){"dx", "dy"}, 2, pg, lg, "mul_grad")) {
    ok(product_ok(dx16, dx32, 5, 37, 9, (view){mg, 9, 1}, (view){my, 1, 9}, NULL, &mx_) && mx_,
       "mul_grad in bf16: dX = dOut Y^T");
    ok(product_ok(dy16, dy32, 37, 9, 5, (view){mx, 1, 37}, (view){mg, 9, 1}, NULL, &my_) && my_,
       "mul_grad in bf16: dY = X^T dOut");
  }
}

/* ---- fc with bias: Input [6, 20], W [20, 7], Bias [7] ---- */
static float fx_[6 * 20], fw[20 * 7], fb[7];

static void build_fc(rt *r, bool bf16) {
  rt_in_f32(r, "x", "[6, 20]", fx_);
  rt_in_f32(r, "w", "[20, 7]", fw);
  rt_in_f32(r, "b", "[7]", fb);
  rt_op(r, "fc", "Input=x W=w Bias=b", "Out=o");
  mark(r, bf16);
}

static void test_fc(void) {
  fill(fx_, 120), fill(fw, 140), fill(fb, 7);
  float o32[42], o16[42], *p[1] = {o32}, *l[1] = {o16};
  bool moved = false;
  if (run_both(build_fc, (const char *[]){"o"}, 1, p, l, "fc"))
    ok(product_ok(o16, o32, 6, 7, 20, (view){fx_, 20, 1}, (view){fw, 7, 1}, fb, &moved) && moved,
       "fc in bf16: Input W + Bias, the bias added in fp32");
}

/* ---- matmul_v2: X [2, 1, 4, 6] times Y [3, 6, 5] (X's batch dim broadcast: the loop), and its
 * gradient, where dX sums over the 3 products that used each X. ---- */
static float vx[2 * 4 * 6], vy[3 * 6 * 5], vg[2 * 3 * 4 * 5];

static void build_mm(rt *r, bool bf16) {
  rt_in_f32(r, "x", "[2, 1, 4, 6]", vx);
  rt_in_f32(r, "y", "[3, 6, 5]", vy);
  rt_op(r, "matmul_v2", "X=x Y=y", "Out=o");
  mark(r, bf16);
}

static void build_mm_grad(rt *r, bool bf16) {
  rt_in_f32(r, "x", "[2, 1, 4, 6]", vx);
  rt_in_f32(r, "y", "[3, 6, 5]", vy);
  rt_in_f32(r, "g", "[2, 3, 4, 5]", vg);
  rt_op(r, "matmul_v2_grad", "X=x Y=y Out@GRAD=g", "X@GRAD=dx Y@GRAD=dy");
  mark(r, bf16);
}

static void test_matmul_v2(void) {
  fill(vx, 48), fill(vy, 90), fill(vg, 120);
  float o32[120], o16[120], *p[1] = {o32}, *l[1] = {o16};
  bool all = true, moved = false;
  if (run_both(build_mm, (const char *[]){"o"}, 1, p, l, "matmul_v2")) {
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 3; b++) {
        int64_t off = (a * 3 + b) * 20;
        all &= product_ok(o16 + off, o32 + off, 4, 5, 6, (view){vx + a * 24, 6, 1},
                          (view){vy + b * 30, 5, 1}, NULL, &moved);
      }
    ok(all && moved, "matmul_v2 in bf16, X broadcast over Y's batch: each product rounded");
  }
  /* dY_b = sum over a of X_a^T dOut_(a, b): a sum of two bf16 products of fp32 sums; checked
   * per element against the two rounded products, as one product of K = 8 rows. dX likewise
   * over the 3 b. */
  float dx32[48], dx16[48], dy32[90], dy16[90], *pg[2] = {dx32, dy32}, *lg[2] = {dx16, dy16};
  if (!run_both(build_mm_grad, (const char *[]){"dx", "dy"}, 2, pg, lg, "matmul_v2_grad"))
    return;
  float xs[8 * 6], gs[8 * 5], gcat[4 * 15], ycat[15 * 6];
  bool okdy = true, mdy = false, okdx = true, mdx = false;
  for (int b = 0; b < 3; b++) { /* X stacked [8, 6], dOut_b stacked [8, 5] */
    for (int a = 0; a < 2; a++) {
      memcpy(xs + a * 24, vx + a * 24, 24 * sizeof(float));
      memcpy(gs + a * 20, vg + (a * 3 + b) * 20, 20 * sizeof(float));
    }
    okdy &= product_ok(dy16 + b * 30, dy32 + b * 30, 6, 5, 8, (view){xs, 1, 6},
                       (view){gs, 5, 1}, NULL, &mdy);
  }
  for (int a = 0; a < 2; a++) { /* [dOut_(a,0) dOut_(a,1) dOut_(a,2)] [Y_0; Y_1; Y_2]^T */
    for (int b = 0; b < 3; b++)
      for (int i = 0; i < 4; i++)
        memcpy(gcat + i * 15 + b * 5, vg + (a * 3 + b) * 20 + i * 5, 5 * sizeof(float));
    for (int b = 0; b < 3; b++)
      for (int q = 0; q < 5; q++)
        for (int j = 0; j < 6; j++) ycat[(b * 5 + q) * 6 + j] = vy[b * 30 + j * 5 + q];
    okdx &= product_ok(dx16 + a * 24, dx32 + a * 24, 4, 6, 15, (view){gcat, 15, 1},
                       (view){ycat, 6, 1}, NULL, &mdx);
  }
  ok(okdy && mdy, "matmul_v2_grad in bf16: dY summed over the broadcast X");
  ok(okdx && mdx, "matmul_v2_grad in bf16: dX summed over Y's batch");
}

int main(void) {
  test_mul();
  test_fc();
  test_matmul_v2();
  return tap_done();
}
