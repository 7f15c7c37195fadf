/* test_conv.c -- GEMM (and GEMM with an activation) against a triple loop, conv2d against a
 * direct convolution, pool2d against direct pooling, im2col/col2im as adjoints, the conv/pool
 * gradients by central finite differences in fp64, and 2x2 max pooling's fp32 gradient at each
 * vector level against its definition. */
#include "config.h"
#include "kernels/kernels.h"
#include "kernels/cpu/fastmath.h"
#include "tests/kernels/kt.h"

/* ---- GEMM ---- */

/* pd_kcpu_simd_force where fastmath.h has vector code; elsewhere there is one level. */
static int simd_force(int level) {
#if PD_KCPU_FASTMATH_f32
  return pd_kcpu_simd_force(level);
#else
  (void)level;
  return PD_KCPU_SIMD_BASE;
#endif
}

/* The SIMD levels to test the kernels at: the CPU's best (gemm_avx512.c's fp32 products on
 * AVX-512 CPUs), then the base one (OpenBLAS for every product); returns how many there are
 * (1 on a CPU with only the base one). Leaves the best in force. */
static int simd_levels(int levels[2]) {
  levels[0] = simd_force(PD_KCPU_SIMD_AVX512);
  levels[1] = PD_KCPU_SIMD_BASE;
  return levels[0] != PD_KCPU_SIMD_BASE ? 2 : 1;
}

/* Every SIMD level of this CPU, best first (AVX-512, AVX2, base: conv_avx512.c's and
 * conv_avx2.c's depthwise kernels and epilogues, then conv_t.h's loops); returns how many.
 * Leaves the best in force. */
static int all_levels(int levels[3]) {
  int n = 0, best = simd_force(PD_KCPU_SIMD_AVX512);
  for (int l = best; l >= PD_KCPU_SIMD_BASE; l--) levels[n++] = l;
  return n;
}

static void naive_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                       const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                       double *c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++)
        s += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = alpha * s + (beta == 0 ? 0 : beta * c[i * ldc + j]);
    }
}

static void test_gemm(void) {
  /* The last four are split across the pool's threads (gemm.c): C's columns, C's rows, and K
   * (a weight gradient's shape, and one whose K does not divide evenly). */
  /* {1, 75, 40}: one row against five panels of 16 columns, the last of 11 (gemm_avx2.c's
   * row_panels, four panels at a time) */
  const int64_t shapes[][3] = {{1, 1, 1},      {3, 17, 5},     {64, 33, 17},
                               {17, 1, 64},    {2, 3, 0},      {1, 75, 40},   {64, 300, 100},
                               {300, 64, 100}, {32, 256, 1600}, {33, 31, 1203}};
  const double ab[][2] = {{1, 0}, {0.5, 2}};
  int levels[2], nlevels = simd_levels(levels);
  for (int li = 0; li < nlevels; li++) {
    int level = simd_force(levels[li]);
    for (size_t t = 0; t < 2; t++) {
      pd_dtype dt = kt_float_types[t];
      int good = 0, total = 0;
      for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++)
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++)
            for (size_t q = 0; q < PD_ARRAY_LEN(ab); q++) {
              int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
              /* Leading dims wider than the rows, to test strides. */
              int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
              int64_t na = (ta ? k : m) * lda, nb = (tb ? n : k) * ldb, nc = m * ldc;
              void *a = kt_random(dt, na, -1, 1), *b = kt_random(dt, nb, -1, 1);
              void *c = kt_random(dt, nc, -1, 1);
              if (ab[q][1] == 0)
                for (int64_t i = 0; i < nc; i++) kt_set(dt, c, i, NAN);  /* beta 0 ignores C */
              double *ad = kt_to_double(dt, a, na), *bd = kt_to_double(dt, b, nb);
              double *cd = kt_to_double(dt, c, nc);
              naive_gemm(ta, tb, m, n, k, ab[q][0], ad, lda, bd, ldb, ab[q][1], cd, ldc);
              for (int64_t i = 0; i < m; i++)  /* padding columns are untouched */
                cd[i * ldc + n] = kt_get(dt, c, i * ldc + n);
              pd_status st = K->gemm(dt, ta, tb, m, n, k, ab[q][0], a, lda, b, ldb, ab[q][1], c,
                                     ldc);
              total++;
              double e = kt_err(dt, c, cd, nc);
              /* fp32's rounding grows with the length of the sums */
              double tol = (dt == PD_FP32 ? 1e-5 : 1e-13) * (k > 64 ? (double)k / 64 : 1);
              if (st == PD_OK && e <= tol) good++;
              else printf("# gemm %lldx%lldx%lld ta %d tb %d: st %d err %g\n", (long long)m,
                          (long long)n, (long long)k, ta, tb, st, e);
              free(a), free(b), free(c), free(ad), free(bd), free(cd);
            }
      ok(good == total, "gemm %s, SIMD level %d: %d/%d (shapes x transposes x alpha/beta, "
         "padded strides)", pd_dtype_name(dt), level, good, total);
    }
  }
  simd_force(levels[0]);
  /* Batched, with A broadcast (stride 0). */
  const int64_t batch = 3, m = 4, n = 5, k = 6;
  double *a = kt_random(PD_FP64, m * k, -1, 1), *b = kt_random(PD_FP64, batch * k * n, -1, 1);
  double *c = kt_alloc(batch * m * n * 8), *want = kt_alloc(batch * m * n * 8);
  for (int64_t i = 0; i < batch; i++)
    naive_gemm(false, false, m, n, k, 1, a, k, b + i * k * n, n, 0, want + i * m * n, n);
  ok(K->gemm_batched(PD_FP64, false, false, batch, m, n, k, 1, a, k, 0, b, n, k * n, 0, c, n,
                     m * n) == PD_OK &&
         kt_err(PD_FP64, c, want, batch * m * n) <= 1e-13,
     "gemm_batched with a broadcast A (stride 0)");
  {
    /* Products large enough to be dealt to the pool's threads (an attention layer's heads,
     * B transposed): each one the bits of the same product in a batch of one. */
    const int64_t hb = 6, hm = 64, hn = 96, hk = 200;
    float *ha = kt_random(PD_FP32, hb * hm * hk, -1, 1);
    float *hbm = kt_random(PD_FP32, hb * hn * hk, -1, 1);
    float *hc = kt_alloc((size_t)(hb * hm * hn) * 4), *hw = kt_alloc((size_t)(hb * hm * hn) * 4);
    bool same = K->gemm_batched(PD_FP32, false, true, hb, hm, hn, hk, 1, ha, hk, hm * hk, hbm,
                                hk, hn * hk, 0, hc, hn, hm * hn) == PD_OK;
    for (int64_t i = 0; i < hb && same; i++) /* one at a time: on the calling thread */
      same = K->gemm_batched(PD_FP32, false, true, 1, hm, hn, hk, 1, ha + i * hm * hk, hk, 0,
                             hbm + i * hn * hk, hk, 0, 0, hw + i * hm * hn, hn, 0) == PD_OK;
    ok(same && memcmp(hc, hw, (size_t)(hb * hm * hn) * 4) == 0,
       "gemm_batched split across the threads: each product the bits it has made alone");
    free(ha), free(hbm), free(hc), free(hw);
  }
  /* alpha 0: C = beta C, A and B unread (BLAS's rule), at every SIMD level. */
  for (int li = 0; li < nlevels; li++) {
    int level = simd_force(levels[li]);
    float fa[6] = {NAN, 1, 2, 3, 4, 5}, fb[6] = {1, INFINITY, 2, 3, 4, 5}, fc[4] = {1, 2, 3, 4};
    pd_status st = K->gemm(PD_FP32, false, false, 2, 2, 3, 0, fa, 3, fb, 2, 0.5, fc, 2);
    ok(st == PD_OK && fc[0] == 0.5f && fc[1] == 1 && fc[2] == 1.5f && fc[3] == 2,
       "gemm with alpha 0 scales C by beta and reads neither A nor B (SIMD level %d)", level);
  }
  simd_force(levels[0]);
  is_int(K->gemm(PD_FP64, false, false, 2, 2, 2, 1, a, 1, b, 2, 0, c, 2), PD_EINVAL,
         "lda smaller than a row is refused");
  is_int(K->gemm(PD_INT32, false, false, 1, 1, 1, 1, a, 1, b, 1, 0, c, 1), PD_EUNSUPPORTED,
         "int32 gemm unsupported");
  free(a), free(b), free(c), free(want);
}

/* ---- GEMM with an activation (an RNN step and its backward step) ---- */

static double act_ref(pd_k_unop act, double x) {
  return act == PD_K_TANH ? tanh(x) : act == PD_K_SIGMOID ? 1 / (1 + exp(-x)) : x > 0 ? x : 0;
}

static double act_grad_ref(pd_k_unop act, double y) {
  return act == PD_K_TANH ? 1 - y * y : act == PD_K_SIGMOID ? y * (1 - y) : y > 0 ? 1 : 0;
}

/* One case: against the product and activation in double, and bit for bit against gemm then
 * unary (or unary_grad) row by row, which the contract promises. */
static bool gemm_act_case(pd_dtype dt, pd_k_unop act, bool grad, bool tb, int64_t m, int64_t n,
                          int64_t k, double beta, int64_t ldc) {
  int64_t lda = k > 1 ? k : 1, ldb = tb ? lda : n, ldh = n + 2;
  int64_t na = m * lda, nb = (tb ? n : k) * ldb, nc = m * ldc, nh = m * ldh;
  void *a = kt_random(dt, na, -1, 1), *b = kt_random(dt, nb, -0.3, 0.3);
  void *c = kt_random(dt, nc, -1, 1), *h = kt_random(dt, nh, -0.99, 0.99);
  if (act == PD_K_SIGMOID)
    for (int64_t i = 0; i < nh; i++) kt_set(dt, h, i, (kt_get(dt, h, i) + 1) / 2);
  size_t bytes = (size_t)nc * pd_dtype_size(dt);
  void *c2 = kt_alloc(bytes);
  memcpy(c2, c, bytes);
  double *ad = kt_to_double(dt, a, na), *bd = kt_to_double(dt, b, nb);
  double *want = kt_to_double(dt, c, nc), *hd = kt_to_double(dt, h, nh);
  naive_gemm(false, tb, m, n, k, 1, ad, lda, bd, ldb, beta, want, ldc);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double *w = &want[i * ldc + j];
      *w = grad ? *w * act_grad_ref(act, hd[i * ldh + j]) : act_ref(act, *w);
    }
  pd_status st = K->gemm_act(act, grad, dt, false, tb, m, n, k, a, lda, b, ldb, beta, c, ldc,
                             grad ? h : NULL, ldh);
  pd_status st2 = K->gemm(dt, false, tb, m, n, k, 1, a, lda, b, ldb, beta, c2, ldc);
  size_t sz = pd_dtype_size(dt);
  for (int64_t i = 0; i < m && !st2; i++) {
    char *row = (char *)c2 + (size_t)(i * ldc) * sz;
    st2 = grad ? K->unary_grad(act, dt, n, NULL, (char *)h + (size_t)(i * ldh) * sz, row, row)
               : K->unary(act, dt, n, row, row);
  }
  double e = kt_err(dt, c, want, nc);
  double tol = (dt == PD_FP32 ? 1e-5 : 1e-13) * (k > 64 ? (double)k / 64 : 1);
  bool good = st == PD_OK && st2 == PD_OK && e <= tol && memcmp(c, c2, bytes) == 0;
  if (!good)
    printf("# gemm_act %s %s grad %d tb %d %lldx%lldx%lld beta %g ldc %lld: st %d err %g%s\n",
           pd_dtype_name(dt), pd_k_unop_name(act), grad, tb, (long long)m, (long long)n,
           (long long)k, beta, (long long)ldc, st, e,
           memcmp(c, c2, bytes) ? " (differs from gemm then unary)" : "");
  free(a), free(b), free(c), free(h), free(c2), free(ad), free(bd), free(want), free(hd);
  return good;
}

static void test_gemm_act(void) {
  /* Unsplit, C's columns split (an RNN step at hidden 256), C's rows split, and a k of 0. */
  const int64_t shapes[][3] = {{3, 17, 5}, {32, 256, 256}, {300, 64, 100}, {4, 5, 0}};
  const pd_k_unop acts[] = {PD_K_TANH, PD_K_SIGMOID, PD_K_RELU};
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    int good = 0, total = 0;
    for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++)
      for (size_t q = 0; q < PD_ARRAY_LEN(acts); q++)
        for (int grad = 0; grad < 2; grad++)
          for (int tb = 0; tb < 2; tb++)
            for (int beta = 0; beta < 2; beta++)
              for (int strided = 0; strided < 2; strided++) {
                int64_t n = shapes[s][1];
                total++;
                good += gemm_act_case(dt, acts[q], grad, tb, shapes[s][0], n, shapes[s][2], beta,
                                      strided ? 3 * n : n);
              }
    ok(good == total, "gemm_act %s: %d/%d (shapes x activations x forward/gradient x "
       "transposes x beta x contiguous/strided C), equal to gemm then unary", pd_dtype_name(dt),
       good, total);
  }
  double a[4] = {1, 2, 3, 4}, c[4];
  is_int(K->gemm_act(PD_K_EXP, false, PD_FP64, false, false, 2, 2, 2, a, 2, a, 2, 0, c, 2,
                     NULL, 0),
         PD_EINVAL, "gemm_act refuses an activation other than tanh, sigmoid and relu");
  is_int(K->gemm_act(PD_K_TANH, true, PD_FP64, false, false, 2, 2, 2, a, 2, a, 2, 0, c, 2,
                     NULL, 2),
         PD_EINVAL, "gemm_act's gradient needs H");
  is_int(K->gemm_act(PD_K_TANH, true, PD_FP64, false, false, 2, 2, 2, a, 2, a, 2, 0, c, 2, a,
                     1),
         PD_EINVAL, "gemm_act refuses an ldh smaller than a row");
}

/* ---- A recurrence of GEMMs with an activation (an RNN over equal-length sequences) ---- */

/* One case: `steps` steps of m rows in a sequence-major buffer (row stride steps * n, step
 * `dir` * n elements apart), against the recurrence in double and within rounding of one
 * gemm_act a step. */
static bool chain_case(pd_dtype dt, pd_k_unop act, bool grad, int64_t m, int64_t n,
                       int64_t steps, int dir) {
  int64_t ld = steps * n, nc = m * ld, sz = (int64_t)pd_dtype_size(dt);
  void *first = kt_random(dt, m * n, -1, 1), *b = kt_random(dt, n * n, -0.4, 0.4);
  void *c = kt_random(dt, nc, -1, 1), *h = kt_random(dt, nc, -0.99, 0.99);
  if (act == PD_K_SIGMOID)
    for (int64_t i = 0; i < nc; i++) kt_set(dt, h, i, (kt_get(dt, h, i) + 1) / 2);
  void *c2 = kt_alloc((size_t)(nc * sz));
  memcpy(c2, c, (size_t)(nc * sz));
  double *fd = kt_to_double(dt, first, m * n), *bd = kt_to_double(dt, b, n * n);
  double *want = kt_to_double(dt, c, nc), *hd = kt_to_double(dt, h, nc);
  int64_t s0 = dir > 0 ? 0 : (steps - 1) * n; /* step 0's first element */
  for (int64_t s = 0; s < steps; s++) {
    const double *a = s ? want + s0 + (s - 1) * dir * n : fd;
    int64_t lda = s ? ld : n, off = s0 + s * dir * n;
    naive_gemm(false, grad, m, n, n, 1, a, lda, bd, n, 1, want + off, ld);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double *w = &want[off + i * ld + j];
        *w = grad ? *w * act_grad_ref(act, hd[off + i * ld + j]) : act_ref(act, *w);
      }
  }
  pd_status st = K->gemm_act_chain(act, grad, dt, grad, m, n, steps, first, n, b,
                                   (char *)c + s0 * sz, ld, dir * n, (char *)h + s0 * sz, ld);
  pd_status st2 = PD_OK;
  for (int64_t s = 0; s < steps && !st2; s++) {
    const char *a = s ? (char *)c2 + (s0 + (s - 1) * dir * n) * sz : (char *)first;
    int64_t off = s0 + s * dir * n;
    st2 = K->gemm_act(act, grad, dt, false, grad, m, n, n, a, s ? ld : n, b, n, 1,
                      (char *)c2 + off * sz, ld, (char *)h + off * sz, ld);
  }
  double e = kt_err(dt, c, want, nc), tol = dt == PD_FP32 ? 1e-5 : 1e-13;
  double *c2d = kt_to_double(dt, c2, nc);
  double e2 = kt_err(dt, c, c2d, nc);
  bool good = st == PD_OK && st2 == PD_OK && e <= tol && e2 <= tol;
  if (!good)
    printf("# gemm_act_chain %s %s grad %d %lldx%lld %lld steps dir %d: st %d err %g, %g from "
           "gemm_act\n", pd_dtype_name(dt), pd_k_unop_name(act), grad, (long long)m,
           (long long)n, (long long)steps, dir, st, e, e2);
  free(first), free(b), free(c), free(h), free(c2), free(fd), free(bd), free(want), free(hd);
  free(c2d);
  return good;
}

static void test_gemm_act_chain(void) {
  /* Rows split across threads (32, 40) or not (5); hidden sizes taking the small AVX-512
   * product (17: a masked tail; 32; 64) and OpenBLAS (80, 128: split only with enough work). */
  const int64_t shapes[][3] = {{32, 32, 7}, {40, 17, 5}, {5, 64, 4}, {32, 80, 3}, {48, 128, 3},
                               {1, 3, 2}};
  const pd_k_unop acts[] = {PD_K_TANH, PD_K_SIGMOID, PD_K_RELU};
  int levels[2], nlevels = simd_levels(levels);
  for (int li = 0; li < nlevels; li++) {
    int level = simd_force(levels[li]);
    for (size_t t = 0; t < 2; t++) {
      pd_dtype dt = kt_float_types[t];
      int good = 0, total = 0;
      for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++)
        for (size_t q = 0; q < PD_ARRAY_LEN(acts); q++)
          for (int grad = 0; grad < 2; grad++)
            for (int dir = -1; dir <= 1; dir += 2) {
              total++;
              good += chain_case(dt, acts[q], grad, shapes[s][0], shapes[s][1], shapes[s][2],
                                 dir);
            }
      ok(good == total, "gemm_act_chain %s, SIMD level %d: %d/%d (shapes x activations x "
         "forward/gradient x forward/reversed steps), the recurrence in double and one "
         "gemm_act a step", pd_dtype_name(dt), level, good, total);
    }
  }
  simd_force(levels[0]);
  double a[4] = {1, 2, 3, 4}, c[4];
  is_int(K->gemm_act_chain(PD_K_TANH, false, PD_FP64, false, 2, 2, -1, a, 2, a, c, 2, 2, NULL,
                           0),
         PD_EINVAL, "gemm_act_chain refuses a negative number of steps");
  is_int(K->gemm_act_chain(PD_K_TANH, true, PD_FP64, true, 2, 2, 1, a, 2, a, c, 2, 2, NULL, 2),
         PD_EINVAL, "gemm_act_chain's gradient needs H");
  is_int(K->gemm_act_chain(PD_K_EXP, false, PD_FP64, false, 2, 2, 1, a, 2, a, c, 2, 2, NULL, 0),
         PD_EINVAL, "gemm_act_chain refuses an activation other than tanh, sigmoid and relu");
  is_int(K->gemm_act_chain(PD_K_TANH, false, PD_FP64, false, 2, 2, 1, a, 1, a, c, 2, 2, NULL, 0),
         PD_EINVAL, "gemm_act_chain refuses a first operand narrower than B");
}

/* ---- GEMM onto a bias (an fc layer) ---- */

/* One case: against the product plus bias in double; C's old contents (NaN) must not leak in.
 * Bit for bit the same as gemm then an add of the bias (`same_bits`), as a model's fused fc
 * must give its mul and elementwise_add's bits (a Zen CPU's OpenBLAS kernel rounded a product
 * accumulated onto the bias differently, at any K). */
static bool gemm_bias_case(pd_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                           int64_t ldc, bool same_bits) {
  int64_t lda = ta ? (m > 1 ? m : 1) : (k > 1 ? k : 1), ldb = tb ? (k > 1 ? k : 1) : n;
  int64_t na = (ta ? k : m) * lda, nb = (tb ? n : k) * ldb, nc = m * ldc;
  void *a = kt_random(dt, na, -1, 1), *b = kt_random(dt, nb, -0.3, 0.3);
  void *bias = kt_random(dt, n, -2, 2), *c = kt_alloc((size_t)nc * pd_dtype_size(dt));
  void *c2 = kt_alloc((size_t)nc * pd_dtype_size(dt));
  for (int64_t i = 0; i < nc; i++) kt_set(dt, c, i, NAN), kt_set(dt, c2, i, NAN);
  double *ad = kt_to_double(dt, a, na), *bd = kt_to_double(dt, b, nb);
  double *biasd = kt_to_double(dt, bias, n), *want = kt_alloc((size_t)nc * sizeof(double));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < ldc; j++) want[i * ldc + j] = j < n ? biasd[j] : NAN;
  naive_gemm(ta, tb, m, n, k, 1, ad, lda, bd, ldb, 1, want, ldc);
  pd_status st = K->gemm_bias(dt, ta, tb, m, n, k, a, lda, b, ldb, bias, c, ldc);
  pd_status st2 = K->gemm(dt, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c2, ldc);
  size_t sz = pd_dtype_size(dt);
  for (int64_t i = 0; i < m && !st2; i++) {
    char *row = (char *)c2 + (size_t)(i * ldc) * sz;
    st2 = K->binary(PD_K_ADD, dt, 1, &n, row, 1, &n, bias, -1, row);
  }
  double e = 0;
  bool bits = true;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      int64_t at = i * ldc + j;
      double got = kt_get(dt, c, at);
      if (isnan(got)) e = INFINITY;
      else if (fabs(got - want[at]) > e) e = fabs(got - want[at]);
      bits = bits && memcmp((char *)c + at * (int64_t)sz, (char *)c2 + at * (int64_t)sz, sz) == 0;
    }
  double tol = (dt == PD_FP32 ? 1e-5 : 1e-13) * (k > 64 ? (double)k / 64 : 1);
  bool good = st == PD_OK && st2 == PD_OK && e <= tol && (!same_bits || bits);
  if (!good)
    printf("# gemm_bias %s ta %d tb %d %lldx%lldx%lld ldc %lld: st %d err %g%s\n",
           pd_dtype_name(dt), ta, tb, (long long)m, (long long)n, (long long)k, (long long)ldc,
           st, e, bits ? "" : " (differs from gemm then add)");
  free(a), free(b), free(bias), free(c), free(c2), free(ad), free(bd), free(biasd), free(want);
  return good;
}

static void test_gemm_bias(void) {
  /* Unsplit; C's rows split (an output layer: [1600, 32] by [32, 256]); C's columns split; a K
   * past one OpenBLAS block; a k of 0 (C is the bias); no rows. */
  const int64_t shapes[][3] = {{3, 17, 5}, {1600, 256, 32}, {40, 1000, 64}, {200, 96, 700},
                               {1, 3, 768}, {4, 5, 0},       {0, 7, 3}};
  int levels[2], nlevels = simd_levels(levels);
  for (int li = 0; li < nlevels; li++) {
    int level = simd_force(levels[li]);
    for (size_t t = 0; t < 2; t++) {
      pd_dtype dt = kt_float_types[t];
      int good = 0, total = 0;
      for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++)
        for (int ta = 0; ta < 2; ta++)
          for (int tb = 0; tb < 2; tb++)
            for (int strided = 0; strided < 2; strided++) {
              int64_t n = shapes[s][1];
              total++;
              good += gemm_bias_case(dt, ta, tb, shapes[s][0], n, shapes[s][2],
                                     strided ? n + 5 : n, true);
            }
      ok(good == total, "gemm_bias %s, SIMD level %d: %d/%d (shapes x transposes x "
         "contiguous/strided C), the product plus bias, and gemm then add's bits",
         pd_dtype_name(dt), level, good, total);
    }
  }
  simd_force(levels[0]);
  double a[4] = {1, 2, 3, 4}, c[4];
  is_int(K->gemm_bias(PD_FP64, false, false, 2, 2, 2, a, 2, a, 2, NULL, c, 2), PD_EINVAL,
         "gemm_bias needs a bias");
  is_int(K->gemm_bias(PD_FP64, false, false, 2, 2, 2, a, 2, a, 2, a, c, 1), PD_EINVAL,
         "gemm_bias refuses an ldc smaller than a row");
  is_int(K->gemm_bias(PD_INT32, false, false, 2, 2, 2, a, 2, a, 2, a, c, 2), PD_EUNSUPPORTED,
         "gemm_bias is float only");
}

/* ---- GEMM with a B prepared once (gemm_const_b: an inference model's fc weights) ---- */

/* One product against the product (plus bias) in double; C's old contents (NaN) must not leak
 * in. *prep is kept across calls as the executor keeps it beside W. */
static bool const_b_case(pd_dtype dt, int64_t m, int64_t n, int64_t k, bool with_bias,
                         const void *b, pd_k_prepared **prep) {
  void *a = kt_random(dt, m * k, -1, 1), *bias = kt_random(dt, n, -2, 2);
  void *c = kt_alloc((size_t)(m * n + 1) * pd_dtype_size(dt));
  for (int64_t i = 0; i < m * n; i++) kt_set(dt, c, i, NAN);
  double *ad = kt_to_double(dt, a, m * k), *bd = kt_to_double(dt, b, k * n);
  double *biasd = kt_to_double(dt, bias, n), *want = kt_alloc((size_t)(m * n + 1) * sizeof(double));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) want[i * n + j] = with_bias ? biasd[j] : 0;
  naive_gemm(false, false, m, n, k, 1, ad, k, bd, n, 1, want, n);
  pd_status st = K->gemm_const_b(dt, m, n, k, a, b, with_bias ? bias : NULL, c, prep);
  double e = 0;
  for (int64_t i = 0; i < m * n; i++) {
    double got = kt_get(dt, c, i);
    if (isnan(got)) e = INFINITY;
    else if (fabs(got - want[i]) > e) e = fabs(got - want[i]);
  }
  double tol = (dt == PD_FP32 ? 1e-5 : 1e-13) * (k > 64 ? (double)k / 64 : 1);
  /* The bits of gemm with the bias then added in the dtype: an fc layer fused at load (exec)
   * against the same model's mul and elementwise_add (predict), at every SIMD level. */
  void *c2 = kt_alloc((size_t)(m * n + 1) * pd_dtype_size(dt));
  bool same = K->gemm(dt, false, false, m, n, k, 1.0, a, k > 1 ? k : 1, b, n, 0.0, c2, n) == PD_OK;
  for (int64_t i = 0; i < m * n && with_bias; i++) {
    if (dt == PD_FP32) ((float *)c2)[i] += ((const float *)bias)[i % n];
    else ((double *)c2)[i] += ((const double *)bias)[i % n];
  }
  same = same && memcmp(c, c2, (size_t)(m * n) * pd_dtype_size(dt)) == 0;
  bool good = st == PD_OK && e <= tol && same;
  if (!good)
    printf("# gemm_const_b %s %lldx%lldx%lld bias %d: st %d err %g, gemm's bits %d\n",
           pd_dtype_name(dt), (long long)m, (long long)n, (long long)k, with_bias, st, e, same);
  free(a), free(bias), free(c), free(c2), free(ad), free(bd), free(biasd), free(want);
  return good;
}

static void test_gemm_const_b(void) {
  /* Panels whole and cut (n not a multiple of 32), K in one pass and in blocks (past 192),
   * C's rows in one block and several (past 128), one thread's work and the split. */
  const int64_t shapes[][3] = {{3, 17, 5},     {128, 384, 384}, {300, 100, 700},
                               {1, 1536, 384}, {257, 33, 64},   {4, 5, 0}, {1, 75, 40}};
  int levels[2], nlevels = simd_levels(levels);
  for (int li = 0; li < nlevels; li++) {
    int level = simd_force(levels[li]);
    for (size_t t = 0; t < 2; t++) {
      pd_dtype dt = kt_float_types[t];
      int good = 0, total = 0, kept = 0, made = 0, with_k = 0;
      for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++) {
        int64_t n = shapes[s][1], k = shapes[s][2];
        void *b = kt_random(dt, k * n + 1, -0.3, 0.3);
        pd_k_prepared *prep = NULL, *first = NULL;
        for (int call = 0; call < 3; call++) { /* made, reused, reused without the bias */
          total++;
          good += const_b_case(dt, shapes[s][0], n, k, call < 2, b, &prep);
          if (call == 0) first = prep;
          else kept += prep == first;
        }
        made += prep != NULL;
        with_k += k > 0;
        if (prep) prep->release(prep);
        free(b);
      }
      /* The copy is gemm_avx512.c's or gemm_avx2.c's panels: fp32 on AVX-512 or AVX2 only,
       * and not for an empty K. */
      int want_made =
          dt == PD_FP32 && (level == PD_KCPU_SIMD_AVX512 || level == PD_KCPU_SIMD_AVX2) ? with_k
                                                                                        : 0;
      ok(good == total && kept == 2 * (int)PD_ARRAY_LEN(shapes) && made == want_made,
         "gemm_const_b %s, SIMD level %d: %d/%d products (made, reused, without bias), the "
         "prepared B kept across calls, %d made (%d expected)", pd_dtype_name(dt), level, good,
         total, made, want_made);
    }
  }
  simd_force(levels[0]);
  /* A prepared B of another shape is made again for the new one. */
  int64_t k = 40, n = 48;
  float *b = kt_random(PD_FP32, k * n, -1, 1), *b2 = kt_random(PD_FP32, n * k, -1, 1);
  pd_k_prepared *prep = NULL;
  bool good = const_b_case(PD_FP32, 20, n, k, true, b, &prep);
  good = good && const_b_case(PD_FP32, 20, k, n, true, b2, &prep);
  ok(good && (!prep || (prep->rows == n && prep->cols == k)),
     "gemm_const_b makes its copy again for a B of another shape");
  if (prep) prep->release(prep);
  free(b), free(b2);
  double a[4] = {1, 2, 3, 4}, c[4];
  is_int(K->gemm_const_b(PD_FP64, 2, 2, 2, a, a, NULL, c, NULL), PD_EINVAL,
         "gemm_const_b needs the slot of its copy");
  is_int(K->gemm_const_b(PD_INT32, 2, 2, 2, a, a, NULL, c, &prep), PD_EUNSUPPORTED,
         "gemm_const_b is float only");
  is_int(K->gemm_const_b(PD_FP64, -1, 2, 2, a, a, NULL, c, &prep), PD_EINVAL,
         "gemm_const_b refuses a negative size");
}

/* ---- gemm_avx512.c's fp32 product, called directly on AVX-512 CPUs: tiles of 12, 8, 4 and 1
 * rows, of one or two vectors of columns (masked or whole), K in one pass and in blocks of 192
 * (partial sums on the stack, and on the heap past 128 rows), B^T copied on the stack and (K
 * past 256) on the heap, alpha, beta and a bias; against a triple loop in double. C's padding
 * columns must come out untouched (the last vector's stores are masked). ---- */

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
static bool gemm16_case(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        float beta, bool with_bias) {
  int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
  int64_t na = (ta ? k : m) * lda, nb = (tb ? n : k) * ldb, nc = m * ldc;
  float *a = kt_random(PD_FP32, na, -1, 1), *b = kt_random(PD_FP32, nb, -1, 1);
  float *c = kt_random(PD_FP32, nc, -1, 1), *bias = kt_random(PD_FP32, n, -2, 2);
  for (int64_t i = 0; i < nc; i++)
    if (i % ldc >= n) c[i] = 7.0f;    /* padding */
    else if (beta == 0) c[i] = NAN;   /* beta 0 ignores C */
  double *ad = kt_to_double(PD_FP32, a, na), *bd = kt_to_double(PD_FP32, b, nb);
  double *want = kt_to_double(PD_FP32, c, nc);
  naive_gemm(ta, tb, m, n, k, alpha, ad, lda, bd, ldb, beta, want, ldc);
  for (int64_t i = 0; i < m && with_bias; i++)
    for (int64_t j = 0; j < n; j++) want[i * ldc + j] += bias[j];
  bool took = pd_kcpu_gemm16_f32(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta,
                                 with_bias ? bias : NULL, c, ldc);
  double e = kt_err(PD_FP32, c, want, nc), tol = 1e-5 * (k > 64 ? (double)k / 64 : 1);
  bool good = took && e <= tol;
  if (!good)
    printf("# gemm16 %lldx%lldx%lld ta %d tb %d alpha %g beta %g bias %d: took %d err %g\n",
           (long long)m, (long long)n, (long long)k, ta, tb, alpha, beta, with_bias, took, e);
  free(a), free(b), free(c), free(bias), free(ad), free(bd), free(want);
  return good;
}
#endif

static void test_gemm16(void) {
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (simd_force(PD_KCPU_SIMD_AVX512) != PD_KCPU_SIMD_AVX512) {
    tap_skip("the CPU has no AVX-512F: gemm_avx512.c's product is not used");
    return;
  }
  const int64_t shapes[][3] = {
      {1, 1, 1},     {3, 17, 5},    {12, 32, 8},   {25, 33, 7},  {23, 48, 193},
      {37, 16, 200}, {40, 31, 600}, {150, 20, 400}, {5, 70, 384}, {32, 256, 192}};
  const float abb[][3] = {{1, 0, 0}, {0.5f, 2, 0}, {1, 1, 1}, {-1, 0, 1}}; /* alpha beta bias */
  int good = 0, total = 0;
  for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (size_t q = 0; q < PD_ARRAY_LEN(abb); q++) {
          total++;
          good += gemm16_case(ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], abb[q][0],
                              abb[q][1], abb[q][2] != 0);
        }
  ok(good == total, "gemm16 fp32: %d/%d (shapes x transposes x alpha/beta/bias), padding "
     "untouched", good, total);
  /* Out of memory for the copy of B^T: it declines with C untouched, and gemm takes OpenBLAS. */
  int64_t m = 9, n = 20, k = 600;
  float *a = kt_random(PD_FP32, m * k, -1, 1), *b = kt_random(PD_FP32, n * k, -1, 1);
  float *c = kt_alloc((size_t)(m * n) * sizeof(float));
  for (int64_t i = 0; i < m * n; i++) c[i] = 5.0f;
  double *ad = kt_to_double(PD_FP32, a, m * k), *bd = kt_to_double(PD_FP32, b, n * k);
  double *want = kt_alloc((size_t)(m * n) * sizeof(double));
  naive_gemm(false, true, m, n, k, 1, ad, k, bd, k, 0, want, n);
  pd_k_host_trim();
  pd_alloc_fail_after(1);
  bool took = pd_kcpu_gemm16_f32(false, true, m, n, k, 1, a, k, b, k, 0, NULL, c, n);
  pd_alloc_fail_after(0);
  bool untouched = true;
  for (int64_t i = 0; i < m * n; i++) untouched = untouched && c[i] == 5.0f;
  ok(!took && untouched, "gemm16 declines, C untouched, when B^T cannot be copied");
  pd_alloc_fail_after(1);
  pd_status st = K->gemm(PD_FP32, false, true, m, n, k, 1, a, k, b, k, 0, c, n);
  pd_alloc_fail_after(0);
  ok(st == PD_OK && kt_err(PD_FP32, c, want, m * n) <= 1e-5 * (double)k / 64,
     "gemm falls back to OpenBLAS then");
  free(a), free(b), free(c), free(ad), free(bd), free(want);
#else
  tap_skip("no AVX-512 code in this build");
#endif
}

/* ---- Convolution ---- */

typedef struct ccase {
  const char *what;
  pd_k_conv2d p;
} ccase;

/* n, c, h, w, oc, kh, kw, groups, stride h/w, pads t/b/l/r, dilation h/w */
static const ccase ccases[] = {
    {"3x3 pad 1", {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {"stride 2", {1, 2, 9, 8, 3, 3, 3, 1, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0, 0}},
    {"dilation 2", {1, 2, 9, 9, 2, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 0}},
    {"groups 2", {2, 4, 5, 5, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {"depthwise (groups = c)", {1, 3, 5, 4, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    /* the direct depthwise kernel: a channel multiplier, strides, uneven pads, dilation */
    {"depthwise x2, stride 2, pads 1/0/1/0", {2, 3, 9, 8, 6, 3, 3, 3, 2, 2, 1, 0, 1, 0, 1, 1, 0, 0, 0}},
    {"depthwise 5x5, dilation 2", {1, 4, 11, 10, 4, 5, 5, 4, 1, 1, 4, 4, 4, 4, 2, 2, 0, 0, 0}},
    /* planes wider than the AVX-512 kernel's 16 columns: whole blocks and a remainder */
    {"depthwise 3x3 on 19x40", {1, 5, 19, 40, 5, 3, 3, 5, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {"depthwise 5x5 stride 2 on 33x35", {2, 3, 33, 35, 3, 5, 5, 3, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0}},
    {"depthwise x2, strides (3, 2), dilation 2, pads 0/1/3/2",
     {1, 2, 20, 37, 4, 3, 3, 2, 3, 2, 0, 1, 3, 2, 2, 2, 0, 0, 0}},
    {"depthwise stride 3 (the scalar loop)", {1, 2, 13, 29, 2, 3, 3, 2, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    /* one image, more work than one thread gets: its columns split across the threads */
    {"1 image, 16->64 3x3 on 32x32", {1, 16, 32, 32, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {"1 image, 1x1 direct 32->48 on 24x24", {1, 32, 24, 24, 48, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0}},
    /* one image of few output pixels: its filters split across the threads */
    {"1 image, 1x1 64->96 on 7x7", {1, 64, 7, 7, 96, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0}},
    {"1 image, 3x3 32->40 on 9x9", {1, 32, 9, 9, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {"1x1 direct", {2, 5, 4, 3, 7, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0}},
    /* outputs of 16 MB, stored past the caches (conv.c's CONV_STREAM_MIN): 1x1, and 3x3 in
     * panels */
    {"1x1 1->64 on 256x256", {1, 1, 256, 256, 64, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0}},
    {"3x3 2->32 on 256x256, 2 images",
     {2, 2, 256, 256, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {"asymmetric padding, 3x2 kernel", {1, 2, 6, 5, 3, 3, 2, 1, 2, 1, 1, 0, 0, 2, 1, 1, 0, 0, 0}},
    {"LeNet conv1 1->6 5x5 on 28x28", {2, 1, 28, 28, 6, 5, 5, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0}},
    {"LeNet conv2 6->16 5x5 on 14x14", {3, 6, 14, 14, 16, 5, 5, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0}},
    /* Output as wide as the input at unit strides: im2col's shifted-plane copies. */
    {"5x5 pad 2 (same size)", {2, 2, 9, 7, 3, 5, 5, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0}},
    {"3x3 pad 1 on 1x1", {2, 3, 1, 1, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {"3x3 pad 1 on 2x5", {1, 2, 2, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
    {"3x2 kernel, pads 2 above, 1 left (same width)",
     {1, 2, 4, 6, 3, 3, 2, 1, 1, 1, 2, 0, 1, 0, 1, 1, 0, 0, 0}},
    {"3x3 pad 3 above and below (same width, taller)",
     {1, 1, 3, 4, 2, 3, 3, 1, 1, 1, 3, 3, 1, 1, 1, 1, 0, 0, 0}},
    /* column panels (im2col_panels) of rows wider than a panel: whole runs copied at once
     * and runs cut by the padding, a taller stride, dilations, groups */
    {"3x3 strides (2, 1), dilations (1, 2), pads 2/1/2/1 on 11x37",
     {2, 3, 11, 37, 7, 3, 3, 1, 2, 1, 2, 1, 2, 1, 1, 2, 0, 0, 0}},
    {"groups 2, 5x3 kernel on 6x40", {2, 4, 6, 40, 6, 5, 3, 2, 1, 1, 2, 2, 1, 1, 1, 1, 0, 0, 0}},
    {"3x3 stride 2 pad 1 on 13x70 (a first layer)",
     {2, 3, 13, 70, 5, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
};

static void naive_conv(const pd_k_conv2d *p, const double *x, const double *w, double *y) {
  int64_t cg = p->c / p->groups, ocg = p->oc / p->groups;
  for (int64_t n = 0; n < p->n; n++)
    for (int64_t o = 0; o < p->oc; o++)
      for (int64_t oy = 0; oy < p->oh; oy++)
        for (int64_t ox = 0; ox < p->ow; ox++) {
          double s = 0;
          int64_t g = o / ocg;
          for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t i = 0; i < p->kh; i++)
              for (int64_t j = 0; j < p->kw; j++) {
                int64_t iy = oy * p->stride_h - p->pad_top + i * p->dil_h;
                int64_t ix = ox * p->stride_w - p->pad_left + j * p->dil_w;
                if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) continue;
                s += x[((n * p->c + g * cg + ci) * p->h + iy) * p->w + ix] *
                     w[((o * cg + ci) * p->kh + i) * p->kw + j];
              }
          y[((n * p->oc + o) * p->oh + oy) * p->ow + ox] = s;
        }
}

/* The factor on fp32's tolerance where the layer goes through Winograd's F(4x4, 3x3) (conv.c's
 * wino_tile: AVX-512, 3x3 at stride 1, at least 16 channels in and out and 64 tiles of 4x4 an
 * image): its transforms' coefficients (up to 8 in A^T, 5 in B^T, sixths in G) cancel in fp32, so
 * its worst errors are a few times the direct sums' (3.3e-5 relative at 16 channels against
 * fp64, in a simulation of 200 tiles; 5.6e-5 and 7.8e-5 here over thousands), their mean the
 * same (1e-6). */
static double wino4_factor(const pd_k_conv2d *p, pd_dtype dt) {
  bool f4 = dt == PD_FP32 && pd_kcpu_simd() == PD_KCPU_SIMD_AVX512 && p->groups == 1 &&
            p->kh == 3 && p->kw == 3 && p->stride_h == 1 && p->stride_w == 1 && p->dil_h == 1 &&
            p->dil_w == 1 && p->c >= 16 && p->oc >= 16 &&
            ((p->oh + 3) / 4) * ((p->ow + 3) / 4) >= 64;
  return f4 ? 10 : 1;
}

static int64_t xsize(const pd_k_conv2d *p) { return p->n * p->c * p->h * p->w; }
static int64_t wsize(const pd_k_conv2d *p) { return p->oc * (p->c / p->groups) * p->kh * p->kw; }
static int64_t ysize(const pd_k_conv2d *p) { return p->n * p->oc * p->oh * p->ow; }

static void test_conv_forward(void) {
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    for (size_t k = 0; k < PD_ARRAY_LEN(ccases); k++) {
      pd_k_conv2d p = ccases[k].p;
      if (pd_k_conv2d_setup(&p) != PD_OK) {
        ok(0, "conv2d setup %s", ccases[k].what);
        continue;
      }
      void *x = kt_random(dt, xsize(&p), -1, 1), *w = kt_random(dt, wsize(&p), -1, 1);
      void *y = kt_alloc((size_t)ysize(&p) * 8);
      double *xd = kt_to_double(dt, x, xsize(&p)), *wd = kt_to_double(dt, w, wsize(&p));
      double *want = kt_alloc((size_t)ysize(&p) * 8);
      naive_conv(&p, xd, wd, want);
      /* the depthwise kernels of each level in fp32 */
      int levels[3], nl = dt == PD_FP32 && p.groups == p.c ? all_levels(levels) : 1;
      for (int li = 0; li < nl; li++) {
        int level = nl > 1 ? simd_force(levels[li]) : -1;
        memset(y, 0x7f, (size_t)ysize(&p) * pd_dtype_size(dt));
        is_int(K->conv2d(dt, &p, x, w, y), PD_OK, "conv2d %s %s runs%s", pd_dtype_name(dt),
               ccases[k].what, level == 1 ? " (AVX2)" : level == 0 ? " (base level)" : "");
        kt_close(dt, y, want, ysize(&p), dt == PD_FP32 ? 1e-5 * wino4_factor(&p, dt) : 1e-13,
                 "conv2d %s %s matches the direct convolution%s", pd_dtype_name(dt),
                 ccases[k].what, level == 1 ? " (AVX2)" : level == 0 ? " (base level)" : "");
      }
      simd_force(PD_KCPU_SIMD_AVX512);
      free(x), free(w), free(y), free(xd), free(wd), free(want);
    }
  }
}

/* The fused forward pass (conv2d_fused): the direct convolution plus a bias per channel and a
 * residual, through each kind of epilogue activation, in both dtypes; on a 1x1 convolution, a
 * 3x3 one of one image (its columns split across the threads), a 1x1 one of few pixels (its
 * filters split), a depthwise one and 1x1 ones of one-pixel maps. */
static double epi_ref(const pd_k_conv_epilogue *ep, double v) {
  if (ep->kind == PD_K_EPI_UNOP)
    return ep->unop == PD_K_RELU ? (v > 0 ? v : 0) : ep->unop == PD_K_TANH ? tanh(v)
                                                                          : 1 / (1 + exp(-v));
  if (ep->kind == PD_K_EPI_NONE) return v;
  const double *q = ep->p;
  switch (ep->act) {
    case PD_K_RELU6: return v < 0 ? 0 : v > q[0] ? q[0] : v;
    case PD_K_LEAKY_RELU: return v > 0 ? v : q[0] * v;
    case PD_K_HARD_SWISH: return v * fmin(fmax(v + q[2], 0), q[0]) / q[1];
    case PD_K_HARD_SIGMOID: return fmin(fmax(q[0] * v + q[1], 0), 1);
    case PD_K_SWISH: return v / (1 + exp(-q[0] * v));
    default: return v * 0.5 * (1 + erf(v / sqrt(2.0)));  /* gelu */
  }
}

static void test_conv_fused(void) {
  static const pd_k_conv2d shapes[] = {
      {1, 16, 9, 9, 24, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      {1, 16, 32, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 64, 7, 7, 96, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      /* on AVX2 the last 1-4 pixels past the 16-column panels as dot products: 1x1 (B read in
       * place), 3x3 on 7x7 (from the last panel; K 216 with the columns on the stack, 1152 in
       * a buffer) */
      {2, 40, 6, 3, 20, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      {1, 48, 5, 4, 30, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      {1, 24, 7, 7, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 128, 7, 7, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      /* a thread's filters past gemm_avx2.c's A_BLOCK (200 or 300 x 512 floats): B packed
       * whole, A by blocks of rows, the epilogue's rows following */
      {1, 512, 3, 7, 600, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      /* filters past gemm_avx512.c's BIG_A (2^18 floats), every thread all of them (the
       * columns split: 400 pixels): K in blocks (600 = 384 + 216; 4608 3x3 taps in 12), rows
       * in blocks (500 = 240 + 240 + 20), the partial sums of every panel kept between them */
      {1, 600, 20, 20, 500, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      {1, 512, 20, 20, 60, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      /* images of few pixels split by filters (at least 8 a thread) over panels that all the
       * threads made first (3 of 99 and 4 of 42 columns), the epilogue in the stores */
      {1, 32, 9, 11, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {2, 20, 6, 7, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {2, 6, 21, 23, 6, 3, 3, 6, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      /* 3x3 at stride 1 through Winograd's F(2x2, 3x3) (conv_wino.c; on AVX-512 the last of
       * these three F(4x4, 3x3)): odd sizes (a last tile half outside), eight-tile groups and
       * single edge tiles, uneven pads, two images, blocks of tile rows (40 + 40 channels by 80
       * tiles a row: one row a block) */
      {2, 16, 9, 37, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 20, 16, 18, 16, 3, 3, 1, 1, 1, 0, 2, 0, 1, 1, 1, 0, 0, 0},
      {1, 40, 7, 160, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      /* F(4x4, 3x3) on AVX-512: sixteen-tile groups crossing panels (11 tiles a row), a last
       * tile row of two outputs and a last column of four, pads of 0 and 2, two images, two
       * blocks of tile rows an image; rows of 150 columns whose middle groups read inside the
       * image (every load unmasked) */
      {2, 17, 35, 43, 20, 3, 3, 1, 1, 1, 1, 0, 2, 1, 1, 1, 0, 0, 0},
      {1, 16, 14, 150, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      /* column panels of rows narrower than two panels at stride 2 across (conv_avx512.c's
       * im2col_small): pieces of several output rows a vector, uneven pads, a dilated 5x3
       * filter, 7-pixel rows as ResNet50's last stride-2 layer's */
      {2, 5, 23, 29, 12, 5, 3, 1, 2, 2, 2, 1, 3, 0, 1, 2, 0, 0, 0},
      {1, 16, 14, 14, 24, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      /* one or two filters (a detection head's 96 -> 1 5x5): a sum of depthwise planes */
      {2, 24, 11, 21, 1, 5, 5, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 5, 9, 19, 2, 3, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0},
      /* one-pixel maps (squeeze-excitation, a head after pooling): the images as rows, a
       * filter's dot product with each; K and the filters past a whole step, several images */
      {3, 37, 1, 1, 43, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      {5, 16, 1, 1, 4, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      {2, 300, 1, 1, 200, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      /* depthwise: column blocks inside the rows and at their edges (5x5 on 40 columns), a
       * channel multiplier at stride (1, 2), a dilated 3x3 (the width a variable), 7x7 */
      {1, 4, 19, 40, 4, 5, 5, 4, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 3, 17, 37, 6, 3, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 2, 15, 30, 2, 3, 3, 2, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 0},
      {2, 2, 12, 26, 2, 7, 7, 2, 2, 2, 3, 3, 3, 3, 1, 1, 0, 0, 0},
      /* depthwise, interior spans of 32 or 16 columns summed input row by input row
       * (conv_avx2.c's band): bands of 4, 3, 2 and 1 rows, stride 2 down, uneven pads, a
       * channel multiplier, edge blocks after the last span; then at stride 2 across */
      {2, 3, 11, 75, 3, 5, 5, 3, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 2, 12, 70, 4, 5, 5, 2, 2, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 4, 3, 64, 4, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 2, 9, 50, 2, 3, 3, 2, 2, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0},
      {1, 3, 1, 41, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 2, 9, 30, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 3, 7, 150, 3, 5, 5, 3, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 2, 9, 80, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 2, 6, 100, 2, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 2, 3, 70, 2, 5, 5, 2, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 2, 2, 70, 2, 3, 3, 2, 2, 2, 1, 0, 1, 1, 1, 1, 0, 0, 0},
      /* depthwise with eight channels in the lanes (conv_avx2.c's lanes): a unit of eight and
       * one of four planes plane by plane, rows of 8 + 5 pixels, two images; 5x5 at stride 2;
       * stride (2, 1), uneven pads, rows narrower than a vector; bands of 29 + 11 rows of 70;
       * no padding at stride 2 (the last input column unread); pads past the filter (rows and
       * columns of padding only) */
      {2, 12, 9, 13, 12, 3, 3, 12, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 16, 14, 14, 16, 5, 5, 16, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 8, 6, 5, 8, 3, 3, 8, 2, 1, 0, 1, 2, 0, 1, 1, 0, 0, 0},
      {1, 8, 40, 70, 8, 5, 5, 8, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 8, 9, 10, 8, 3, 3, 8, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      {1, 8, 3, 2, 8, 3, 3, 8, 1, 1, 3, 2, 1, 3, 1, 1, 0, 0, 0},
      /* 5x5 on AVX-512 too: a unit of eight in the lanes, four planes of the sixteen-lane
       * kernel */
      {1, 12, 9, 13, 12, 5, 5, 12, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      /* filter rows or columns that only meet padding, dropped: a map one row high (the
       * SVTR neck's 3x3), one column wide at stride 2 with a dilation down, a 5x5 on 2x2
       * (rows and columns; 2 of 5 live), a depthwise one on one row */
      {2, 24, 1, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 8, 7, 1, 6, 3, 3, 1, 2, 1, 2, 2, 1, 1, 2, 1, 0, 0, 0},
      {1, 6, 2, 2, 10, 5, 5, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 16, 1, 20, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      /* a first layer's 3x3 at stride 2 (3 -> 16 channels): rows of the column panels taken
       * every second input column (pd_kcpu_copy_evens_f32), panels inside a row and across
       * two (65 columns: 32 + 32 + 1), runs of 1 to 31, the padding's columns at both ends */
      {1, 3, 30, 130, 16, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {2, 3, 9, 47, 8, 3, 3, 1, 2, 2, 0, 1, 2, 1, 1, 1, 0, 0, 0},
      /* on AVX-512 those computed directly (conv_avx512.c's fewc16: at most 4 channels and 16
       * filters): blocks inside the rows and across their edges, 12 filters (a pass of sixteen,
       * four not stored) from one channel 5x5 at stride 1, four channels 7x7 at stride 2 with
       * pads of 3 and 2, stride 2 down only and a dilation down, rows narrower than a vector,
       * two images */
      {2, 1, 13, 45, 12, 5, 5, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 4, 21, 70, 16, 7, 7, 1, 2, 2, 3, 2, 3, 2, 1, 1, 0, 0, 0},
      {2, 2, 17, 5, 5, 3, 3, 1, 2, 1, 1, 1, 0, 1, 2, 1, 0, 0, 0},
      /* depthwise on one image, split by bands of output rows across the threads (row 20 of
       * 40 and 12 of 25 at stride 2; the padding's rows in the first and last band) */
      {1, 12, 40, 70, 12, 3, 3, 12, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 32, 50, 90, 32, 3, 3, 32, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0},
  };
  pd_k_conv_epilogue eps[] = {
      {.kind = PD_K_EPI_NONE},
      {.kind = PD_K_EPI_UNOP, .unop = PD_K_RELU},
      {.kind = PD_K_EPI_UNOP, .unop = PD_K_TANH},
      {.kind = PD_K_EPI_UNOP, .unop = PD_K_SIGMOID},
      {.kind = PD_K_EPI_ACT, .act = PD_K_RELU6, .p = {0.5}},
      {.kind = PD_K_EPI_ACT, .act = PD_K_LEAKY_RELU, .p = {0.1}},
      {.kind = PD_K_EPI_ACT, .act = PD_K_HARD_SWISH, .p = {6, 6, 3}},
      {.kind = PD_K_EPI_ACT, .act = PD_K_HARD_SIGMOID, .p = {0.2, 0.5}},
      {.kind = PD_K_EPI_ACT, .act = PD_K_SWISH, .p = {1.5}},
      {.kind = PD_K_EPI_ACT, .act = PD_K_GELU},
  };
  static const char *const names[] = {"none", "relu", "tanh", "sigmoid", "relu6", "leaky_relu",
                                      "hard_swish", "hard_sigmoid", "swish", "gelu"};
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    for (size_t k = 0; k < PD_ARRAY_LEN(shapes); k++) {
      pd_k_conv2d p = shapes[k];
      pd_k_conv2d_setup(&p);
      int64_t ny = ysize(&p), plane = p.oh * p.ow;
      void *x = kt_random(dt, xsize(&p), -2, 2), *w = kt_random(dt, wsize(&p), -1, 1);
      void *b = kt_random(dt, p.oc, -1, 1), *res = kt_random(dt, ny, -1, 1);
      void *y = kt_alloc((size_t)ny * 8);
      double *xd = kt_to_double(dt, x, xsize(&p)), *wd = kt_to_double(dt, w, wsize(&p));
      double *bd = kt_to_double(dt, b, p.oc), *rd = kt_to_double(dt, res, ny);
      double *conv = kt_alloc((size_t)ny * 8), *want = kt_alloc((size_t)ny * 8);
      naive_conv(&p, xd, wd, conv);
      int levels[3], nl = dt == PD_FP32 ? all_levels(levels) : 1;
      /* fp32's rounding over a sum of kdim terms grows as its square root: 512 terms of
       * 1x1 layer 3 came within 2e-5 relative (2.04e-5 for one random draw at the base
       * level's OpenBLAS) */
      int64_t kdim = p.c / p.groups * p.kh * p.kw;
      double tol32 = 2e-5 * (kdim > 64 ? sqrt((double)kdim / 64) : 1);
      for (int li = 0; li < nl; li++) {
        int level = simd_force(dt == PD_FP32 ? levels[li] : PD_KCPU_SIMD_AVX512);
        for (size_t e = 0; e < PD_ARRAY_LEN(eps); e++) {
          pd_k_conv_epilogue ep = eps[e];
          /* with and without each part, each combination for each epilogue over the shapes */
          ep.bias = (e + k) % 2 ? b : NULL;
          ep.residual = (e + k / 2) % 3 ? res : NULL;
          for (int64_t i = 0; i < ny; i++)
            want[i] = epi_ref(&ep, conv[i] + (ep.bias ? bd[i / plane % p.oc] : 0) +
                                       (ep.residual ? rd[i] : 0));
          memset(y, 0x7f, (size_t)ny * pd_dtype_size(dt)); /* every element must be written */
          is_int(K->conv2d_fused(dt, &p, x, w, &ep, y, NULL), PD_OK,
                 "conv2d_fused %s shape %zu %s at level %d runs", pd_dtype_name(dt), k, names[e],
                 level);
          kt_close(dt, y, want, ny, dt == PD_FP32 ? tol32 * wino4_factor(&p, dt) : 1e-12,
                   "conv2d_fused %s shape %zu %s%s%s at level %d matches", pd_dtype_name(dt), k,
                   names[e], ep.bias ? " + bias" : "", ep.residual ? " + residual" : "", level);
        }
      }
      simd_force(PD_KCPU_SIMD_AVX512);
      free(x), free(w), free(b), free(res), free(y), free(xd), free(wd), free(bd), free(rd);
      free(conv), free(want);
    }
  }
  /* Filters that stay the same (an inference model's): conv2d_fused keeps Winograd's
   * transformed filters in the prepared slot on AVX2 and AVX-512 (nothing at the base level),
   * reuses them with the same bits as without the slot, and makes them again for another
   * shape. */
  int wl[3], nwl = all_levels(wl);
  for (int li = 0; li < nwl; li++) {
    int level = simd_force(wl[li]);
    pd_k_prepared *prep = NULL;
    bool same = true, kept = true;
    for (int s = 0; s < 2; s++) {
      pd_k_conv2d q = {1, s ? 24 : 16, 14, 19, s ? 16 : 32, 3, 3, 1, 1, 1,
                       1, 1, 1, 1, 1, 1, 0, 0, 0};
      pd_k_conv2d_setup(&q);
      float *x = kt_random(PD_FP32, xsize(&q), -2, 2), *w = kt_random(PD_FP32, wsize(&q), -1, 1);
      float *y0 = kt_alloc((size_t)ysize(&q) * 4), *y1 = kt_alloc((size_t)ysize(&q) * 4);
      pd_k_conv_epilogue ep = {.kind = PD_K_EPI_UNOP, .unop = PD_K_RELU};
      same = same && K->conv2d_fused(PD_FP32, &q, x, w, &ep, y0, NULL) == PD_OK;
      for (int call = 0; call < 2; call++) {
        pd_k_prepared *before = prep;
        same = same && K->conv2d_fused(PD_FP32, &q, x, w, &ep, y1, &prep) == PD_OK &&
               memcmp(y0, y1, (size_t)ysize(&q) * 4) == 0;
        if (call == 1) kept = kept && prep == before;
      }
      if (level != PD_KCPU_SIMD_BASE)
        kept = kept && prep && prep->rows == q.oc && prep->cols == q.c * 9;
      else
        kept = kept && !prep;
      free(x), free(w), free(y0), free(y1);
    }
    ok(same && kept, "conv2d_fused at level %d: the prepared filters kept (above the base "
       "level), reused with the same bits, made again for another shape", level);
    if (prep) prep->release(prep);
  }
  simd_force(PD_KCPU_SIMD_AVX512);
  /* 1x1 and 3x3 convolutions of small maps (7x7, 14x14, 19x19; the 3x3 ones at stride 1 and
   * 2, padded) with 256 terms or more and filters that stay the same: on AVX-512 the product
   * made transposed (pixels by filters, the filters' panels kept in the prepared slot; a 3x3
   * layer's plain columns its A^T) gives the bits of the call without the slot, through each
   * part of the epilogue, at one image (the filters split across the threads in whole panels,
   * 33 of them a panel and one) and more. */
  if (simd_force(PD_KCPU_SIMD_AVX512) == PD_KCPU_SIMD_AVX512) {
    static const struct { int64_t n, c, hw, oc, k, s; int epi; } tc[] = {
        {1, 256, 7, 96, 1, 1, 0},  {3, 272, 14, 64, 1, 1, 1}, {1, 320, 19, 33, 1, 1, 2},
        {2, 300, 7, 40, 1, 1, 3},  {1, 64, 14, 96, 3, 1, 0},  {1, 40, 7, 33, 3, 1, 2},
        {2, 48, 14, 64, 3, 2, 1},  {1, 32, 28, 64, 3, 2, 3},  {3, 36, 9, 40, 3, 1, 1}};
    bool same = true, kept = true;
    for (size_t s = 0; s < PD_ARRAY_LEN(tc); s++) {
      int64_t k = tc[s].k, st = tc[s].s, pad = k / 2;
      pd_k_conv2d q = {tc[s].n, tc[s].c, tc[s].hw, tc[s].hw, tc[s].oc, k, k, 1, st, st,
                       pad, pad, pad, pad, 1, 1, 0, 0, 0};
      pd_k_conv2d_setup(&q);
      float *x = kt_random(PD_FP32, xsize(&q), -2, 2), *w = kt_random(PD_FP32, wsize(&q), -1, 1);
      float *b = kt_random(PD_FP32, q.oc, -1, 1), *r = kt_random(PD_FP32, ysize(&q), -1, 1);
      float *y0 = kt_alloc((size_t)ysize(&q) * 4), *y1 = kt_alloc((size_t)ysize(&q) * 4);
      pd_k_conv_epilogue kinds[4] = {
          {.bias = b, .kind = PD_K_EPI_UNOP, .unop = PD_K_RELU},
          {.residual = r, .kind = PD_K_EPI_ACT, .act = PD_K_RELU6, .p = {6}},
          {.bias = b, .residual = r, .kind = PD_K_EPI_ACT, .act = PD_K_HARD_SWISH,
           .p = {6, 6, 3}},
          {.kind = PD_K_EPI_NONE}};
      const pd_k_conv_epilogue *ep = tc[s].epi == 3 ? NULL : &kinds[tc[s].epi];
      pd_k_prepared *prep = NULL;
      same = same && K->conv2d_fused(PD_FP32, &q, x, w, ep, y0, NULL) == PD_OK;
      for (int call = 0; call < 2; call++)
        same = same && K->conv2d_fused(PD_FP32, &q, x, w, ep, y1, &prep) == PD_OK &&
               memcmp(y0, y1, (size_t)ysize(&q) * 4) == 0;
      kept = kept && prep && prep->rows == q.oc && prep->cols == q.c * k * k;
      if (prep) prep->release(prep);
      free(x), free(w), free(b), free(r), free(y0), free(y1);
    }
    ok(same && kept, "conv2d_fused: 1x1 and 3x3 convolutions of small maps transposed (the "
       "filters kept in the prepared slot) give the bits of the plain product");
  }
  /* Filters with rows that only meet padding (3x3 on one row): the live rows kept in the
   * prepared slot at every level, reused with the bits of a call without the slot, made again
   * for another shape (one column). */
  for (int li = 0; li < nwl; li++) {
    int level = simd_force(wl[li]);
    pd_k_prepared *prep = NULL;
    bool same = true, kept = true;
    for (int s = 0; s < 2; s++) {
      pd_k_conv2d q = {1, 20, s ? 9 : 1, s ? 1 : 9, 12, 3, 3, 1, 1, 1,
                       1, 1, 1, 1, 1, 1, 0, 0, 0};
      pd_k_conv2d_setup(&q);
      float *x = kt_random(PD_FP32, xsize(&q), -2, 2), *w = kt_random(PD_FP32, wsize(&q), -1, 1);
      float *y0 = kt_alloc((size_t)ysize(&q) * 4), *y1 = kt_alloc((size_t)ysize(&q) * 4);
      same = same && K->conv2d_fused(PD_FP32, &q, x, w, NULL, y0, NULL) == PD_OK;
      for (int call = 0; call < 2; call++) {
        pd_k_prepared *before = prep;
        same = same && K->conv2d_fused(PD_FP32, &q, x, w, NULL, y1, &prep) == PD_OK &&
               memcmp(y0, y1, (size_t)ysize(&q) * 4) == 0;
        if (call == 1) kept = kept && prep == before;
      }
      kept = kept && prep && prep->rows == q.oc && prep->cols == q.c * 9;
      free(x), free(w), free(y0), free(y1);
    }
    ok(same && kept, "conv2d_fused at level %d: the live rows (columns) of filters that meet "
       "padding only kept in the prepared slot, reused with the same bits, made again", level);
    if (prep) prep->release(prep);
  }
  simd_force(PD_KCPU_SIMD_AVX512);
  /* an epilogue the activations refuse */
  pd_k_conv2d p = shapes[0];
  pd_k_conv2d_setup(&p);
  float *x = kt_random(PD_FP32, xsize(&p), -1, 1), *w = kt_random(PD_FP32, wsize(&p), -1, 1);
  float *y = kt_alloc((size_t)ysize(&p) * 4);
  pd_k_conv_epilogue bad = {.kind = PD_K_EPI_ACT, .act = PD_K_HARD_SWISH, .p = {6, 0, 3}};
  is_int(K->conv2d_fused(PD_FP32, &p, x, w, &bad, y, NULL), PD_EINVAL,
         "conv2d_fused refuses hard_swish with scale 0");
  bad = (pd_k_conv_epilogue){.kind = (pd_k_epi_kind)7};
  is_int(K->conv2d_fused(PD_FP32, &p, x, w, &bad, y, NULL), PD_EINVAL,
         "conv2d_fused refuses an unknown epilogue kind");
  free(x), free(w), free(y);
}

/* Mixed precision (p.lp = PD_BF16, fp32 tensors): the forward pass against the direct
 * convolution of the operands rounded to bf16, and apart from the unrounded one; the two
 * gradients through the adjoint identities with their rounded operands:
 * <x, dx(w, dy)> = <conv(x, bf16(w)), bf16(dy)> and <w, dw(x, dy)> = <conv(bf16(x), w), bf16(dy)>,
 * each within fp32's rounding. The depthwise cases compute directly in fp32 (left out); so do
 * the products with fewer than 16 filters per group, terms (c kh kw / groups) or output
 * pixels: those must give fp32's bits. */
static double *rounded(const float *x, int64_t n) {
  double *d = kt_alloc((size_t)n * sizeof *d);
  for (int64_t i = 0; i < n; i++) d[i] = pd_bf16_round(x[i]);
  return d;
}
static double dot(const double *a, const double *b, int64_t n, double *mag) {
  double s = 0;
  *mag = 0;
  for (int64_t i = 0; i < n; i++) s += a[i] * b[i], *mag += fabs(a[i] * b[i]);
  return s;
}

static void test_conv_bf16(void) {
  for (size_t k = 0; k < PD_ARRAY_LEN(ccases); k++) {
    pd_k_conv2d p = ccases[k].p;
    if (p.groups == p.c && p.groups > 1) continue;
    pd_k_conv2d_setup(&p);
    bool small = p.oc / p.groups < 16 || p.c / p.groups * p.kh * p.kw < 16 || p.oh * p.ow < 16;
    if (small) { /* fp32's bits */
      int64_t nx = xsize(&p), nw = wsize(&p), ny = ysize(&p);
      float *x = kt_random(PD_FP32, nx, -1, 1), *w = kt_random(PD_FP32, nw, -1, 1);
      float *y = kt_alloc((size_t)ny * 4), *y16 = kt_alloc((size_t)ny * 4);
      K->conv2d(PD_FP32, &p, x, w, y);
      p.lp = PD_BF16;
      K->conv2d(PD_FP32, &p, x, w, y16);
      ok(memcmp(y, y16, (size_t)ny * 4) == 0, "conv2d bf16 %s: a small product stays fp32",
         ccases[k].what);
      free(x), free(w), free(y), free(y16);
      continue;
    }
    p.lp = PD_BF16;
    int64_t nx = xsize(&p), nw = wsize(&p), ny = ysize(&p);
    float *x = kt_random(PD_FP32, nx, -1, 1), *w = kt_random(PD_FP32, nw, -1, 1);
    float *dy = kt_random(PD_FP32, ny, -1, 1), *y = kt_alloc((size_t)ny * 4);
    float *dx = kt_alloc((size_t)nx * 4), *dw = kt_alloc((size_t)nw * 4);
    double *rx = rounded(x, nx), *rw = rounded(w, nw), *rdy = rounded(dy, ny);
    double *xd = kt_to_double(PD_FP32, x, nx), *wd = kt_to_double(PD_FP32, w, nw);
    double *want = kt_alloc((size_t)ny * 8), *plain = kt_alloc((size_t)ny * 8);
    double *yd = kt_alloc((size_t)ny * 8);
    naive_conv(&p, rx, rw, want);
    naive_conv(&p, xd, wd, plain);
    bool run = !K->conv2d(PD_FP32, &p, x, w, y) && !K->conv2d_bwd_data(PD_FP32, &p, w, dy, dx) &&
               !K->conv2d_bwd_filter(PD_FP32, &p, x, dy, dw);
    double err = 0, moved = 0;
    for (int64_t i = 0; i < ny; i++) {
      err = fmax(err, fabs(y[i] - want[i]));
      moved = fmax(moved, fabs(want[i] - plain[i]));
    }
    ok(run && err <= 1e-5 && moved > 1e-4, "conv2d bf16 %s: the rounded operands' convolution "
       "(error %.2g; %.2g from fp32's)", ccases[k].what, err, moved);
    double mag1, mag2, *dxd = kt_to_double(PD_FP32, dx, nx), *dwd = kt_to_double(PD_FP32, dw, nw);
    naive_conv(&p, xd, rw, yd);
    double l1 = dot(yd, rdy, ny, &mag1), r1 = dot(xd, dxd, nx, &mag2);
    naive_conv(&p, rx, wd, yd);
    double l2 = dot(yd, rdy, ny, &mag1), r2 = dot(wd, dwd, nw, &mag2);
    ok(fabs(l1 - r1) <= 1e-6 * mag2 + 1e-9 && fabs(l2 - r2) <= 1e-6 * mag2 + 1e-9,
       "conv2d bf16 %s: dx and dw of the rounded operands (adjoints: %.9g %.9g, %.9g %.9g)",
       ccases[k].what, l1, r1, l2, r2);
    free(x), free(w), free(dy), free(y), free(dx), free(dw), free(rx), free(rw), free(rdy);
    free(xd), free(wd), free(want), free(plain), free(yd), free(dxd), free(dwd);
  }
}

/* <im2col(x), c> == <x, col2im(c)>: col2im is im2col's adjoint. */
static void test_im2col_adjoint(void) {
  for (size_t k = 0; k < PD_ARRAY_LEN(ccases); k++) {
    pd_k_conv2d p = ccases[k].p;
    pd_k_conv2d_setup(&p);
    int64_t nx = p.c * p.h * p.w, nc = p.c * p.kh * p.kw * p.oh * p.ow;
    double *x = kt_random(PD_FP64, nx, -1, 1), *c = kt_random(PD_FP64, nc, -1, 1);
    double *col = kt_alloc(nc * 8), *img = kt_alloc(nx * 8), l = 0, r = 0;
    K->im2col(PD_FP64, &p, x, col);
    K->col2im(PD_FP64, &p, c, img);
    for (int64_t i = 0; i < nc; i++) l += col[i] * c[i];
    for (int64_t i = 0; i < nx; i++) r += x[i] * img[i];
    is_close(l, r, 1e-12, "col2im is the adjoint of im2col (%s)", ccases[k].what);
    free(x), free(c), free(col), free(img);
  }
}

typedef struct conv_ctx {
  const pd_k_conv2d *p;
  const double *other;
  bool wrt_w;
} conv_ctx;

static void conv_fwd(const double *v, double *y, void *vc) {
  const conv_ctx *c = vc;
  K->conv2d(PD_FP64, c->p, c->wrt_w ? c->other : v, c->wrt_w ? v : c->other, y);
}

static void test_conv_backward(void) {
  /* Small versions of the layouts (finite differences cost 2 convolutions per input). */
  const pd_k_conv2d small[] = {
      {2, 2, 5, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 2, 7, 6, 2, 3, 2, 1, 2, 2, 1, 0, 0, 1, 1, 1, 0, 0, 0},
      {1, 2, 7, 7, 2, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 0},
      {2, 4, 4, 4, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {2, 3, 3, 2, 4, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      /* 2x2 of stride 2, an upsampling head's transposed convolution as its data gradient (fp32
       * on AVX-512 and AVX2: written row by row, conv_avx512.c, conv_avx2.c): channels past a
       * block of 8 (of 4 on AVX2), a row of dy of 16 + 5 and of 16 + 9 columns */
      {2, 13, 4, 42, 3, 2, 2, 1, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0, 0},
      {1, 8, 2, 50, 5, 2, 2, 1, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0, 0},
  };
  const char *names[] = {"3x3 pad 1", "stride 2, asymmetric pad, 3x2", "dilation 2", "groups 2",
                         "1x1 direct", "2x2 stride 2, 13 channels", "2x2 stride 2, 25 columns"};
  for (size_t k = 0; k < PD_ARRAY_LEN(small); k++) {
    pd_k_conv2d p = small[k];
    pd_k_conv2d_setup(&p);
    double *x = kt_random(PD_FP64, xsize(&p), -1, 1), *w = kt_random(PD_FP64, wsize(&p), -1, 1);
    double *dy = kt_random(PD_FP64, ysize(&p), -1, 1);
    double *dx = kt_alloc(xsize(&p) * 8), *dw = kt_alloc(wsize(&p) * 8);
    ok(K->conv2d_bwd_data(PD_FP64, &p, w, dy, dx) == PD_OK &&
           K->conv2d_bwd_filter(PD_FP64, &p, x, dy, dw) == PD_OK,
       "conv2d backward runs (%s)", names[k]);
    conv_ctx cx = {&p, w, false}, cw = {&p, x, true};
    kt_grad_ok(kt_gradcheck(xsize(&p), x, ysize(&p), dy, dx, conv_fwd, &cx),
               "conv2d_bwd_data fp64 matches finite differences (%s)", names[k]);
    kt_grad_ok(kt_gradcheck(wsize(&p), w, ysize(&p), dy, dw, conv_fwd, &cw),
               "conv2d_bwd_filter fp64 matches finite differences (%s)", names[k]);
    /* fp32 agrees with fp64. */
    float *xf = kt_alloc(xsize(&p) * 4), *wf = kt_alloc(wsize(&p) * 4),
          *dyf = kt_alloc(ysize(&p) * 4), *dxf = kt_alloc(xsize(&p) * 4),
          *dwf = kt_alloc(wsize(&p) * 4);
    for (int64_t i = 0; i < xsize(&p); i++) xf[i] = (float)x[i];
    for (int64_t i = 0; i < wsize(&p); i++) wf[i] = (float)w[i];
    for (int64_t i = 0; i < ysize(&p); i++) dyf[i] = (float)dy[i];
    for (int64_t i = 0; i < xsize(&p); i++) x[i] = xf[i];
    for (int64_t i = 0; i < wsize(&p); i++) w[i] = wf[i];
    for (int64_t i = 0; i < ysize(&p); i++) dy[i] = dyf[i];
    K->conv2d_bwd_data(PD_FP64, &p, w, dy, dx);
    K->conv2d_bwd_filter(PD_FP64, &p, x, dy, dw);
    K->conv2d_bwd_data(PD_FP32, &p, wf, dyf, dxf);
    K->conv2d_bwd_filter(PD_FP32, &p, xf, dyf, dwf);
    ok(kt_err(PD_FP32, dxf, dx, xsize(&p)) <= 1e-5 && kt_err(PD_FP32, dwf, dw, wsize(&p)) <= 1e-5,
       "conv2d backward fp32 agrees with fp64 (%s)", names[k]);
    free(x), free(w), free(dy), free(dx), free(dw), free(xf), free(wf), free(dyf), free(dxf),
        free(dwf);
  }
  pd_k_conv2d bad = {1, 3, 5, 5, 4, 3, 3, 2, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0};
  is_int(pd_k_conv2d_setup(&bad), PD_ESHAPE, "groups must divide channels");
  pd_k_conv2d big = {1, 1, 2, 2, 1, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0};
  is_int(pd_k_conv2d_setup(&big), PD_ESHAPE, "a kernel larger than the padded input");
  pd_k_conv2d zero = {1, 1, 5, 5, 1, 3, 3, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0};
  is_int(pd_k_conv2d_setup(&zero), PD_EINVAL, "stride 0 is refused");
  pd_k_conv2d p = ccases[0].p;
  pd_k_conv2d_setup(&p);
  p.oh++;
  float f;
  is_int(K->conv2d(PD_FP32, &p, &f, &f, &f), PD_EINVAL, "conv2d checks the output size");
}

/* ---- Pooling ---- */

typedef struct pcase {
  const char *what;
  pd_k_pool2d p;
} pcase;

/* type, n, c, h, w, kh, kw, stride h/w, pads t/b/l/r, ceil_mode, exclusive */
static const pcase pcases[] = {
    {"max 2x2 stride 2", {PD_K_POOL_MAX, 2, 3, 8, 6, 2, 2, 2, 2, 0, 0, 0, 0, false, true, 0, 0}},
    {"max 3x3 stride 1 pad 1", {PD_K_POOL_MAX, 1, 2, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1, false, true,
                                0, 0}},
    {"max 3x3 stride 2 ceil", {PD_K_POOL_MAX, 1, 2, 8, 8, 3, 3, 2, 2, 0, 0, 0, 0, true, true, 0,
                               0}},
    {"avg exclusive pad 1", {PD_K_POOL_AVG, 2, 2, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, false, true, 0,
                             0}},
    {"avg inclusive pad 1", {PD_K_POOL_AVG, 2, 2, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, false, false, 0,
                             0}},
    {"avg ceil, asymmetric pad", {PD_K_POOL_AVG, 1, 3, 7, 6, 2, 3, 2, 2, 1, 0, 0, 2, true, true,
                                  0, 0}},
    {"global avg", {PD_K_POOL_AVG, 2, 4, 5, 5, 5, 5, 1, 1, 0, 0, 0, 0, false, true, 0, 0}},
    {"avg 2x2 stride 2, ceil on even sizes (ResNet-D's shortcuts)",
     {PD_K_POOL_AVG, 2, 3, 6, 8, 2, 2, 2, 2, 0, 0, 0, 0, true, true, 0, 0}},
    /* rows wide enough for conv_avx512.c's vectors (16 windows, the last one's fewer), the
     * windows crossing the row's ends column by column */
    {"max 3x3 stride 2 pad 1 (ResNet's stem) on 21x50",
     {PD_K_POOL_MAX, 1, 2, 21, 50, 3, 3, 2, 2, 1, 1, 1, 1, false, true, 0, 0}},
    {"max 3x3 stride 1 pad 1 on 9x41", {PD_K_POOL_MAX, 1, 2, 9, 41, 3, 3, 1, 1, 1, 1, 1, 1,
                                        false, true, 0, 0}},
    {"max 3x3 stride 2 ceil on 11x40", {PD_K_POOL_MAX, 1, 2, 11, 40, 3, 3, 2, 2, 0, 0, 0, 0,
                                        true, true, 0, 0}},
    {"max 2x5 strides (1, 2), pads 0/1/2/1 on 6x45",
     {PD_K_POOL_MAX, 2, 1, 6, 45, 2, 5, 1, 2, 0, 1, 2, 1, false, true, 0, 0}},
};

static void naive_pool(const pd_k_pool2d *p, const double *x, double *y) {
  for (int64_t pl = 0; pl < p->n * p->c; pl++)
    for (int64_t oy = 0; oy < p->oh; oy++)
      for (int64_t ox = 0; ox < p->ow; ox++) {
        double acc = p->type == PD_K_POOL_MAX ? -INFINITY : 0;
        int64_t cnt = 0;
        for (int64_t i = 0; i < p->kh; i++)
          for (int64_t j = 0; j < p->kw; j++) {
            int64_t iy = oy * p->stride_h - p->pad_top + i, ix = ox * p->stride_w - p->pad_left + j;
            if (iy < 0 || iy >= p->h || ix < 0 || ix >= p->w) continue;
            double v = x[(pl * p->h + iy) * p->w + ix];
            acc = p->type == PD_K_POOL_MAX ? fmax(acc, v) : acc + v;
            cnt++;
          }
        if (p->type == PD_K_POOL_AVG) acc /= (double)(p->exclusive ? cnt : p->kh * p->kw);
        y[(pl * p->oh + oy) * p->ow + ox] = acc;
      }
}

typedef struct pool_ctx {
  const pd_k_pool2d *p;
} pool_ctx;

static void pool_fwd(const double *x, double *y, void *vc) {
  K->pool2d(PD_FP64, ((const pool_ctx *)vc)->p, x, y);
}

static void test_pool(void) {
  for (size_t k = 0; k < PD_ARRAY_LEN(pcases); k++) {
    pd_k_pool2d p = pcases[k].p;
    if (pd_k_pool2d_setup(&p) != PD_OK) {
      ok(0, "pool2d setup %s", pcases[k].what);
      continue;
    }
    int64_t nx = p.n * p.c * p.h * p.w, ny = p.n * p.c * p.oh * p.ow;
    for (size_t t = 0; t < 2; t++) {
      pd_dtype dt = kt_float_types[t];
      void *x = kt_random(dt, nx, -1, 1), *y = kt_alloc(ny * 8);
      double *xd = kt_to_double(dt, x, nx), *want = kt_alloc(ny * 8);
      naive_pool(&p, xd, want);
      ok(K->pool2d(dt, &p, x, y) == PD_OK && kt_err(dt, y, want, ny) <= kt_tol(dt),
         "pool2d %s %s matches direct pooling (out %lldx%lld)", pd_dtype_name(dt),
         pcases[k].what, (long long)p.oh, (long long)p.ow);
      free(x), free(y), free(xd), free(want);
    }
    double *x = kt_random(PD_FP64, nx, -1, 1), *y = kt_alloc(ny * 8);
    double *dy = kt_random(PD_FP64, ny, -1, 1), *dx = kt_alloc(nx * 8);
    K->pool2d(PD_FP64, &p, x, y);
    K->pool2d_grad(PD_FP64, &p, x, y, dy, dx);
    pool_ctx c = {&p};
    kt_grad_ok(kt_gradcheck(nx, x, ny, dy, dx, pool_fwd, &c),
               "pool2d_grad %s fp64 matches finite differences", pcases[k].what);
    free(x), free(y), free(dy), free(dx);
  }
  pd_k_pool2d q = {PD_K_POOL_MAX, 1, 1, 4, 4, 2, 2, 2, 2, 2, 0, 0, 0, false, true, 0, 0};
  is_int(pd_k_pool2d_setup(&q), PD_EINVAL, "padding as large as the window is refused");
  pd_k_pool2d r = {PD_K_POOL_MAX, 1, 1, 5, 5, 2, 2, 2, 2, 0, 0, 0, 0, true, true, 0, 0};
  ok(pd_k_pool2d_setup(&r) == PD_OK && r.oh == 3 && r.ow == 3, "ceil mode: 5 -> 3 windows");
  pd_k_pool2d s = {PD_K_POOL_MAX, 1, 1, 5, 5, 2, 2, 2, 2, 1, 1, 1, 1, true, true, 0, 0};
  ok(pd_k_pool2d_setup(&s) == PD_OK && s.oh == 3,
     "ceil mode drops a last window that starts in the padding");
}

/* Max pooling in fp32 at each level gives the bits of the base level's loop (conv_t.h), NaN
 * included (a window's maximum starts at its first element; a NaN elsewhere is passed over):
 * inputs with a NaN in about one element of six, on the vectors' shapes of pcases. */
static void test_pool_nan(void) {
  const pd_k_pool2d shapes[] = {
      {PD_K_POOL_MAX, 1, 3, 21, 50, 3, 3, 2, 2, 1, 1, 1, 1, false, true, 0, 0},
      {PD_K_POOL_MAX, 1, 2, 9, 41, 3, 3, 1, 1, 1, 1, 1, 1, false, true, 0, 0},
      {PD_K_POOL_MAX, 2, 1, 6, 45, 2, 5, 1, 2, 0, 1, 2, 1, false, true, 0, 0},
  };
  int levels[3], nl = all_levels(levels);
  for (size_t k = 0; k < PD_ARRAY_LEN(shapes); k++) {
    pd_k_pool2d p = shapes[k];
    if (pd_k_pool2d_setup(&p) != PD_OK) {
      ok(0, "pool2d setup %lldx%lld", (long long)p.h, (long long)p.w);
      continue;
    }
    int64_t nx = p.n * p.c * p.h * p.w, ny = p.n * p.c * p.oh * p.ow;
    float *x = kt_random(PD_FP32, nx, -1, 1), *want = kt_alloc((size_t)ny * 4);
    for (int64_t i = 0; i < nx; i++)
      if (kt_rand() < 1.0 / 6) x[i] = NAN;
    simd_force(PD_KCPU_SIMD_BASE);
    bool good = K->pool2d(PD_FP32, &p, x, want) == PD_OK;
    int64_t nans = 0;
    for (int64_t i = 0; i < ny; i++) nans += isnan(want[i]);
    for (int li = 0; li < nl; li++) {
      simd_force(levels[li]);
      float *y = kt_alloc((size_t)ny * 4);
      good = good && K->pool2d(PD_FP32, &p, x, y) == PD_OK && memcmp(y, want, (size_t)ny * 4) == 0;
      free(y);
    }
    ok(good && nans > 0 && nans < ny,
       "max pool fp32 of [%lld, %lld, %lld, %lld] with NaNs (%lld of %lld outputs): each level "
       "gives the loop's bits", (long long)p.n, (long long)p.c, (long long)p.h, (long long)p.w,
       (long long)nans, (long long)ny);
    free(x), free(want);
  }
  simd_force(PD_KCPU_SIMD_AVX512);
}

/* Whether p's fp32 pooling of x (adaptive_pool2d's where adaptive, else pool2d's; ny outputs)
 * gives the base level's bits at each level; the AVX-512 level in force after. */
static bool pool_bits_at_levels(const pd_k_pool2d *p, bool adaptive, const float *x, int64_t ny) {
  int levels[3], nl = all_levels(levels);
  float *want = kt_alloc((size_t)ny * 4), *y = kt_alloc((size_t)ny * 4);
  simd_force(PD_KCPU_SIMD_BASE);
  bool good = (adaptive ? K->adaptive_pool2d : K->pool2d)(PD_FP32, p, x, want) == PD_OK;
  for (int li = 0; li < nl; li++) {
    simd_force(levels[li]);
    good = good && (adaptive ? K->adaptive_pool2d : K->pool2d)(PD_FP32, p, x, y) == PD_OK &&
           memcmp(y, want, (size_t)ny * 4) == 0;
  }
  simd_force(PD_KCPU_SIMD_AVX512);
  free(want), free(y);
  return good;
}

/* 2x2 average pooling at stride 2 in fp32, which AVX-512 CPUs compute sixteen windows at a time
 * (conv_avx512.c): on widths that leave a vector and a remainder, an odd last row and column no
 * window covers (ceil mode off), values of every magnitude, each level gives the bits of the
 * base level's loop (sums in double, in its order). */
static void test_avgpool_2x2_bits(void) {
  const int64_t hw[][2] = {{7, 45}, {4, 32}, {9, 3}, {56, 56}};
  bool good = true;
  for (size_t k = 0; k < PD_ARRAY_LEN(hw); k++) {
    pd_k_pool2d p = {PD_K_POOL_AVG, 2, 3, hw[k][0], hw[k][1], 2, 2, 2, 2, 0, 0, 0, 0,
                     false, true, 0, 0};
    good = good && pd_k_pool2d_setup(&p) == PD_OK;
    int64_t nx = p.n * p.c * p.h * p.w;
    float *x = kt_random(PD_FP32, nx, -1, 1);
    for (int64_t i = 0; i < nx; i++) x[i] = ldexpf(x[i], (int)(i % 61) - 30);
    good = good && pool_bits_at_levels(&p, false, x, p.n * p.c * p.oh * p.ow);
    free(x);
  }
  ok(good, "2x2 average pooling at stride 2 in fp32 (rows of 45, 32, 3 and 56): each level gives "
     "the loop's bits");
}

/* Global average pooling in fp32 (adaptive to 1x1: a squeeze-excitation's), which AVX-512 CPUs
 * compute four planes at a time: planes of 49, 784, 15 and 3 elements (a tail of eight lanes,
 * none, one of seven, only a tail), counts of planes that leave every remainder of four,
 * values of every magnitude and sign: each level gives the bits of the base level's loop. */
static void test_global_avg_bits(void) {
  static const int64_t shapes[][4] = {{2, 7, 7, 7}, {1, 4, 28, 28}, {3, 1, 3, 5}, {1, 5, 1, 3}};
  bool good = true;
  for (size_t k = 0; k < PD_ARRAY_LEN(shapes); k++) {
    pd_k_pool2d p = {PD_K_POOL_AVG, shapes[k][0], shapes[k][1], shapes[k][2], shapes[k][3],
                     shapes[k][2], shapes[k][3], 1, 1, 0, 0, 0, 0, false, true, 1, 1};
    int64_t nx = p.n * p.c * p.h * p.w;
    float *x = kt_random(PD_FP32, nx, -1, 1);
    for (int64_t i = 0; i < nx; i++) x[i] = ldexpf(x[i], (int)(i % 53) - 26);
    good = good && pool_bits_at_levels(&p, true, x, p.n * p.c);
    free(x);
  }
  ok(good, "global average pooling in fp32 (planes of 49, 784, 15 and 3; 14, 4, 3 and 5 of "
     "them): each level gives the loop's bits");
}

/* 2x2 max pooling's fp32 gradient (LeNet's), which AVX2 CPUs compute eight windows at a time:
 * on inputs full of ties (values from {0, 1, 2}), widths that leave every remainder of eight
 * windows and an odd last row or column no window covers, each level gives the bits of the
 * definition: each window's gradient on its first element (row by row) equal to its max, 0
 * everywhere else. */
static void test_pool_grad_2x2(void) {
  const int64_t shapes[][2] = {{28, 28}, {10, 10}, {4, 16}, {5, 33}, {7, 34}, {2, 2}, {3, 47}};
#if PD_KCPU_HAVE_AVX2
  int best = pd_kcpu_simd_force(PD_KCPU_SIMD_AVX512);
#else
  int best = 0;
#endif
  for (size_t k = 0; k < PD_ARRAY_LEN(shapes); k++) {
    pd_k_pool2d p = {PD_K_POOL_MAX, 3, 5, shapes[k][0], shapes[k][1], 2, 2, 2, 2, 0, 0, 0, 0,
                     false, true, 0, 0};
    if (pd_k_pool2d_setup(&p) != PD_OK) {
      ok(0, "pool2d setup %lldx%lld", (long long)p.h, (long long)p.w);
      continue;
    }
    int64_t nx = p.n * p.c * p.h * p.w, ny = p.n * p.c * p.oh * p.ow;
    float *x = kt_alloc((size_t)nx * 4), *y = kt_alloc((size_t)ny * 4);
    float *dy = kt_random(PD_FP32, ny, -1, 1), *want = kt_alloc((size_t)nx * 4);
    for (int64_t i = 0; i < nx; i++) x[i] = (float)(int)(3 * kt_rand());
    bool good = K->pool2d(PD_FP32, &p, x, y) == PD_OK;
    memset(want, 0, (size_t)nx * 4);
    for (int64_t pl = 0; pl < p.n * p.c; pl++)
      for (int64_t o = 0; o < p.oh * p.ow; o++) {
        int64_t oy = o / p.ow, ox = o % p.ow, at = -1;
        for (int64_t q = 0; q < 4 && at < 0; q++) {
          int64_t i = (pl * p.h + 2 * oy + q / 2) * p.w + 2 * ox + q % 2;
          if (x[i] == y[pl * p.oh * p.ow + o]) at = i;
        }
        if (at >= 0) want[at] = dy[pl * p.oh * p.ow + o];
      }
    for (int level = 0; level <= best; level++) {
#if PD_KCPU_HAVE_AVX2
      pd_kcpu_simd_force(level);
#endif
      float *dx = kt_alloc((size_t)nx * 4);
      for (int64_t i = 0; i < nx; i++) dx[i] = NAN;   /* every element must be written */
      good = good && K->pool2d_grad(PD_FP32, &p, x, y, dy, dx) == PD_OK &&
             memcmp(dx, want, (size_t)nx * 4) == 0;
      free(dx);
    }
    ok(good, "2x2 max pool gradient fp32 of [3, 5, %lld, %lld], ties: levels 0 to %d give the "
       "definition's bits", (long long)p.h, (long long)p.w, best);
    free(x), free(y), free(dy), free(want);
  }
#if PD_KCPU_HAVE_AVX2
  pd_kcpu_simd_force(best);
#endif
}

/* Of each depthwise shape's output planes, how many are the bits of the same plane computed
 * alone (n = c = oc = 1, the per-plane kernel), with its bias and a hard_swish; total counts the
 * planes. At the level in force. */
static int planes_bits(const pd_k_conv2d *shapes, size_t n, const char *what, int *total) {
  int good = 0;
  for (size_t k = 0; k < n; k++) {
    pd_k_conv2d p = shapes[k], q = shapes[k];
    q.n = q.c = q.oc = q.groups = 1;
    pd_k_conv2d_setup(&p);
    pd_k_conv2d_setup(&q);
    int64_t ny = ysize(&p), plane = p.oh * p.ow, in = p.h * p.w, taps = p.kh * p.kw;
    float *x = kt_random(PD_FP32, xsize(&p), -2, 2), *w = kt_random(PD_FP32, wsize(&p), -1, 1);
    float *b = kt_random(PD_FP32, p.oc, -1, 1), *y = kt_alloc((size_t)ny * 4);
    float *one = kt_alloc((size_t)plane * 4);
    pd_k_conv_epilogue ep = {.bias = b, .kind = PD_K_EPI_ACT, .act = PD_K_HARD_SWISH,
                             .p = {6, 6, 3}};
    is_int(K->conv2d_fused(PD_FP32, &p, x, w, &ep, y, NULL), PD_OK, "%s shape %zu runs", what, k);
    for (int64_t i = 0; i < p.n * p.oc; i++) {
      int64_t c = i % p.oc;
      pd_k_conv_epilogue e1 = ep;
      e1.bias = b + c;
      (*total)++;
      good += K->conv2d_fused(PD_FP32, &q, x + i * in, w + c * taps, &e1, one, NULL) == PD_OK &&
              memcmp(one, y + i * plane, (size_t)plane * 4) == 0;
    }
    free(x), free(w), free(b), free(y), free(one);
  }
  return good;
}

/* conv_avx2.c's depthwise with eight channels in the lanes gives the bits of its per-plane
 * kernel: each plane of a unit computed again as a one-channel convolution (which the per-plane
 * kernel computes), with its bias and a hard_swish, bit for bit; at the AVX2 level only. */
static void test_dw_lanes_bits(void) {
  static const pd_k_conv2d shapes[] = {
      {2, 16, 14, 14, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 8, 13, 11, 8, 5, 5, 8, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 8, 6, 37, 8, 5, 5, 8, 2, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 8, 40, 70, 8, 3, 3, 8, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
  };
  if (simd_force(PD_KCPU_SIMD_AVX2) != PD_KCPU_SIMD_AVX2) {
    tap_skip("no AVX2 level on this CPU: the lanes kernel is not built");
    simd_force(PD_KCPU_SIMD_AVX512);
    return;
  }
  int total = 0, good = planes_bits(shapes, PD_ARRAY_LEN(shapes), "lanes", &total);
  ok(good == total, "depthwise, eight channels in the lanes: %d/%d planes the bits of the "
     "per-plane kernel (AVX2)", good, total);
  simd_force(PD_KCPU_SIMD_AVX512);
}

/* conv_avx512.c's depthwise with sixteen channels in the lanes (5x5 at stride 1 and 2 across;
 * 3x3 on rows narrower than sixteen) gives the bits of the per-plane kernel, each plane computed
 * again alone, with its bias and a hard_swish: 16 + 8 channels (a unit, then eight planes), two
 * images, stride 2 down, uneven pads, rows of 16 + 16 + 8 pixels, one pixel wide; at stride 2
 * across, PP-OCRv3's (1, 2) on three rows, (2, 2) on odd sizes with uneven pads. */
static void test_dw_lanes16_bits(void) {
  static const pd_k_conv2d shapes[] = {
      {2, 24, 9, 13, 24, 3, 3, 24, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 32, 6, 40, 32, 5, 5, 32, 2, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {1, 16, 7, 70, 16, 5, 5, 16, 1, 1, 2, 1, 3, 2, 1, 1, 0, 0, 0},
      {1, 48, 7, 7, 48, 3, 3, 48, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 16, 5, 1, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {1, 32, 3, 40, 32, 5, 5, 32, 1, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {2, 24, 17, 37, 24, 5, 5, 24, 2, 2, 2, 1, 1, 2, 1, 1, 0, 0, 0},
  };
  if (simd_force(PD_KCPU_SIMD_AVX512) != PD_KCPU_SIMD_AVX512) {
    tap_skip("no AVX-512 level on this CPU: the sixteen-lane kernel is not built");
    return;
  }
  int total = 0, good = planes_bits(shapes, PD_ARRAY_LEN(shapes), "lanes16", &total);
  ok(good == total, "depthwise, sixteen channels in the lanes: %d/%d planes the bits of the "
     "per-plane kernel (AVX-512)", good, total);
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  kt_begin(argv);
  test_gemm();
  test_gemm_act();
  test_gemm_bias();
  test_gemm_const_b();
  test_gemm_act_chain();
  test_gemm16();
  test_conv_forward();
  test_conv_fused();
  test_dw_lanes_bits();
  test_dw_lanes16_bits();
  test_im2col_adjoint();
  test_conv_backward();
  test_conv_bf16();
  test_pool();
  test_pool_nan();
  test_avgpool_2x2_bits();
  test_global_avg_bits();
  test_pool_grad_2x2();
  return tap_done();
}
