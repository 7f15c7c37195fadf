/* test_reduce.c -- reductions, softmax / log-softmax, cross entropy, the fused
 * softmax-with-cross-entropy and attention against naive references (numerically hard inputs
 * included), and their gradients by central finite differences in fp64. */
#include "config.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"
#include "tests/kernels/kt.h"

/* ---- Reductions ---- */

typedef struct rcase {
  const char *what;
  int nd;
  int64_t dims[4];
  int naxes;
  int axes[4];
} rcase;

static const rcase rcases[] = {
    {"[17] all", 1, {17}, 0, {0}},
    {"[3,17] axis 1 (rows)", 2, {3, 17}, 1, {1}},
    {"[3,17] axis 0 (columns)", 2, {3, 17}, 1, {0}},
    {"[3,17] axis -1", 2, {3, 17}, 1, {-1}},
    {"[2,3,4,5] axes 1,2", 4, {2, 3, 4, 5}, 2, {1, 2}},
    {"[2,3,4,5] axes 0,2,3 (per channel)", 4, {2, 3, 4, 5}, 3, {0, 2, 3}},
    {"[2,3,4,5] axes 0,3", 4, {2, 3, 4, 5}, 2, {0, 3}},
    {"[2,3,4,5] axis 1", 4, {2, 3, 4, 5}, 1, {1}},
    {"[2,3,4,5] all", 4, {2, 3, 4, 5}, 0, {0}},
    {"[1,5,1] axis 0 (size-1 axis)", 3, {1, 5, 1}, 1, {0}},
    {"[64,130] axis 0 (column blocks)", 2, {64, 130}, 1, {0}},
    {"[300,200] axis 1 (threads)", 2, {300, 200}, 1, {1}},
    {"[300,200] axis 0 (threads)", 2, {300, 200}, 1, {0}},
    {"[300,400] all (chunks)", 2, {300, 400}, 0, {0}},
    {"[1600,256] axis 0 (row chunks)", 2, {1600, 256}, 1, {0}},
    {"[40000,3] axis 0 (row chunks, narrow)", 2, {40000, 3}, 1, {0}},
    {"[2,1600,256] axis 1 (column blocks)", 3, {2, 1600, 256}, 1, {1}},
};

static void reduced_mask(const rcase *c, bool *red) {
  for (int d = 0; d < c->nd; d++) red[d] = c->naxes == 0;
  for (int i = 0; i < c->naxes; i++) red[c->axes[i] < 0 ? c->axes[i] + c->nd : c->axes[i]] = true;
}

/* Naive: visit every x element in order, find its output slot by dropping reduced dims. */
static void naive_reduce(int op, const rcase *c, const double *x, double *want, int64_t *nout) {
  bool red[4];
  reduced_mask(c, red);
  int64_t n = kt_numel(c->nd, c->dims), no = 1, count = 1;
  for (int d = 0; d < c->nd; d++) {
    if (red[d]) count *= c->dims[d];
    else no *= c->dims[d];
  }
  bool *seen = kt_alloc((size_t)no);
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i, o = 0, mul = 1;
    for (int d = c->nd - 1; d >= 0; d--) {
      int64_t id = r % c->dims[d];
      r /= c->dims[d];
      if (!red[d]) {
        o += id * mul;
        mul *= c->dims[d];
      }
    }
    double v = x[i];
    if (!seen[o]) want[o] = v, seen[o] = true;
    else if (op == PD_K_RMAX) want[o] = v > want[o] ? v : want[o];
    else if (op == PD_K_RMIN) want[o] = v < want[o] ? v : want[o];
    else want[o] += v;
  }
  if (op == PD_K_RMEAN)
    for (int64_t o = 0; o < no; o++) want[o] /= (double)count;
  free(seen);
  *nout = no;
}

static void test_reduce_shape(void) {
  int nd;
  int64_t od[PD_K_MAX_DIMS];
  const int64_t d4[] = {2, 3, 4, 5};
  ok(pd_k_reduce_shape(4, d4, 2, (int[]){1, -1}, false, &nd, od) == PD_OK && nd == 2 &&
         od[0] == 2 && od[1] == 4,
     "reduce shape [2,3,4,5] axes 1,-1 -> [2,4]");
  ok(pd_k_reduce_shape(4, d4, 2, (int[]){1, -1}, true, &nd, od) == PD_OK && nd == 4 &&
         od[1] == 1 && od[3] == 1 && od[2] == 4,
     "keep_dim keeps 1s");
  ok(pd_k_reduce_shape(4, d4, 0, NULL, false, &nd, od) == PD_OK && nd == 0,
     "full reduction has rank 0");
  is_int(pd_k_reduce_shape(4, d4, 2, (int[]){1, -3}, false, &nd, od), PD_EINVAL,
         "repeated axis (1 and -3) is refused");
  is_int(pd_k_reduce_shape(4, d4, 1, (int[]){4}, false, &nd, od), PD_EINVAL,
         "axis out of range is refused");
}

static void test_reduce(void) {
  const pd_dtype types[] = {PD_FP32, PD_FP64, PD_INT32, PD_INT64};
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    bool is_int = dt == PD_INT32 || dt == PD_INT64;
    for (int op = 0; op < PD_K_REDOP_COUNT_; op++) {
      if (is_int && op == PD_K_RMEAN) continue;
      int good = 0, total = 0;
      for (size_t k = 0; k < PD_ARRAY_LEN(rcases); k++) {
        const rcase *c = &rcases[k];
        int64_t n = kt_numel(c->nd, c->dims), no;
        void *x = kt_random(dt, n, -100, 100);
        double *xd = kt_to_double(dt, x, n), *want = kt_alloc((size_t)n * 8);
        naive_reduce(op, c, xd, want, &no);
        void *out = kt_alloc((size_t)no * 8);
        pd_status st = K->reduce(op, dt, c->nd, c->dims, x, c->naxes, c->axes, out);
        /* fp32 sums accumulate in double: error is the final rounding, relative to the sum. */
        double tol = is_int ? 0 : dt == PD_FP32 ? 1e-6 * 100 : 1e-12 * 100;
        double e = kt_err(dt, out, want, no);
        total++;
        if (st == PD_OK && e <= tol) good++;
        else printf("# %s %s %s: status %d error %g\n", pd_k_redop_name(op), pd_dtype_name(dt),
                    c->what, st, e);
        free(x), free(xd), free(want), free(out);
      }
      ok(good == total, "reduce %s %s: %d/%d layouts match the naive loop",
         pd_k_redop_name(op), pd_dtype_name(dt), good, total);
    }
  }
  float x[6] = {1, NAN, 3, 4, 5, 6}, out[2];
  K->reduce(PD_K_RMAX, PD_FP32, 2, (int64_t[]){2, 3}, x, 1, (int[]){1}, out);
  ok(isnan(out[0]) && out[1] == 6, "max keeps NaN of its row only");
  float empty[1], sums[3] = {9, 9, 9};
  ok(K->reduce(PD_K_RSUM, PD_FP32, 2, (int64_t[]){0, 3}, empty, 1, (int[]){0}, sums) == PD_OK &&
         sums[0] == 0 && sums[2] == 0,
     "sum over an empty axis is 0");
  is_int(K->reduce(PD_K_RMAX, PD_FP32, 2, (int64_t[]){0, 3}, empty, 1, (int[]){0}, sums),
         PD_EINVAL, "max over an empty axis is refused");
  K->reduce(PD_K_RMEAN, PD_FP32, 2, (int64_t[]){0, 3}, empty, 1, (int[]){0}, sums);
  ok(isnan(sums[1]), "mean over an empty axis is NaN");
  is_int(K->reduce(PD_K_RMEAN, PD_INT32, 1, (int64_t[]){2}, empty, 0, NULL, sums),
         PD_EUNSUPPORTED, "integer mean unsupported");
  /* A large fp32 sum is accurate (double accumulation). */
  int64_t n = 1 << 20;
  float *ones = kt_alloc((size_t)n * 4), total;
  for (int64_t i = 0; i < n; i++) ones[i] = 0.1f;
  K->reduce(PD_K_RSUM, PD_FP32, 1, &n, ones, 0, NULL, &total);
  is_close(total, n * (double)0.1f, 1e-7, "sum of 2^20 x 0.1f accurate to fp32 rounding");
  free(ones);
}

#if PD_KCPU_FASTMATH_f32
/* The column sums of an fc layer's bias gradient ([rows, n] over axis 0) take a vector loop on
 * AVX2 CPUs (fastmath_avx2.c): the scalar loop's additions in its order, so both give the same
 * bits, for widths that use its 32-column, 4-column and one-column pieces (AVX-512 CPUs take the
 * same loop). */
static void test_column_sums(void) {
  const int64_t shapes[][2] = {{1600, 256}, {37, 71}, {5, 3}, {300, 200}, {2, 100}, {1, 39}};
  int best = pd_kcpu_simd_force(PD_KCPU_SIMD_AVX512);
  for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++) {
    int64_t rows = shapes[s][0], n = shapes[s][1], dims[2] = {rows, n};
    float *x = kt_random(PD_FP32, rows * n, -100, 100), *out[2];
    double *want = kt_alloc((size_t)n * 8);
    for (int64_t j = 0; j < n; j++) {
      want[j] = 0;
      for (int64_t q = 0; q < rows; q++) want[j] += (double)x[q * n + j];
    }
    bool good = true;
    for (int l = 0; l < 2; l++) {
      pd_kcpu_simd_force(l == 0 ? PD_KCPU_SIMD_BASE : best);
      out[l] = kt_alloc((size_t)n * 4);
      good = good && K->reduce(PD_K_RSUM, PD_FP32, 2, dims, x, 1, (int[]){0}, out[l]) == PD_OK;
    }
    good = good && memcmp(out[0], out[1], (size_t)n * 4) == 0;
    for (int64_t j = 0; j < n; j++) good = good && out[1][j] == (float)want[j];
    ok(good, "column sums of [%lld, %lld]: the vector loop (level %d) gives the scalar loop's "
       "bits, the double sum rounded once", (long long)rows, (long long)n, best);
    free(x), free(want), free(out[0]), free(out[1]);
  }
  pd_kcpu_simd_force(best);
}
#endif

typedef struct red_ctx {
  int op;
  const rcase *c;
} red_ctx;

static void red_fwd(const double *x, double *y, void *vc) {
  const red_ctx *r = vc;
  K->reduce(r->op, PD_FP64, r->c->nd, r->c->dims, x, r->c->naxes, r->c->axes, y);
}

static void test_reduce_grad(void) {
  const size_t pick[] = {1, 2, 5, 6, 8};
  for (int op = 0; op < PD_K_REDOP_COUNT_; op++) {
    double worst = 0;
    for (size_t k = 0; k < PD_ARRAY_LEN(pick); k++) {
      const rcase *c = &rcases[pick[k]];
      int64_t n = kt_numel(c->nd, c->dims), no;
      double *x = kt_random(PD_FP64, n, -2, 2), *out = kt_alloc((size_t)n * 8);
      double *want = kt_alloc((size_t)n * 8), *dx = kt_alloc((size_t)n * 8);
      naive_reduce(PD_K_RSUM, c, x, want, &no);
      double *dout = kt_random(PD_FP64, no, -1, 1);
      K->reduce(op, PD_FP64, c->nd, c->dims, x, c->naxes, c->axes, out);
      K->reduce_grad(op, PD_FP64, c->nd, c->dims, x, out, dout, c->naxes, c->axes, dx);
      red_ctx r = {op, c};
      double e = kt_gradcheck(n, x, no, dout, dx, red_fwd, &r);
      if (e > worst) worst = e;
      free(x), free(out), free(want), free(dx), free(dout);
    }
    kt_grad_ok(worst, "reduce_grad %s fp64 matches finite differences (5 layouts)",
               pd_k_redop_name(op));
  }
}

/* ---- Softmax ---- */

static void naive_softmax(int64_t pre, int64_t n, int64_t post, const double *x, double *out,
                          bool log_out) {
  for (int64_t i = 0; i < pre; i++)
    for (int64_t k = 0; k < post; k++) {
      double mx = -INFINITY, s = 0;
      for (int64_t j = 0; j < n; j++) mx = fmax(mx, x[(i * n + j) * post + k]);
      for (int64_t j = 0; j < n; j++) s += exp(x[(i * n + j) * post + k] - mx);
      for (int64_t j = 0; j < n; j++) {
        double v = x[(i * n + j) * post + k] - mx;
        out[(i * n + j) * post + k] = log_out ? v - log(s) : exp(v) / s;
      }
    }
}

static const int64_t sm_shapes[][3] = {{1, 1, 1}, {3, 17, 1}, {2, 5, 3}, {64, 10, 1},
                                       {4000, 10, 1}, {1, 64, 7}};

static void test_softmax(void) {
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    for (int lg = 0; lg < 2; lg++) {
      bool good = true;
      for (size_t s = 0; s < PD_ARRAY_LEN(sm_shapes); s++) {
        int64_t pre = sm_shapes[s][0], n = sm_shapes[s][1], post = sm_shapes[s][2];
        int64_t total = pre * n * post;
        void *x = kt_random(dt, total, -10, 10), *out = kt_alloc((size_t)total * 8);
        double *xd = kt_to_double(dt, x, total), *want = kt_alloc((size_t)total * 8);
        naive_softmax(pre, n, post, xd, want, lg);
        pd_status st = (lg ? K->log_softmax : K->softmax)(dt, pre, n, post, x, out);
        good &= st == PD_OK && kt_err(dt, out, want, total) <= kt_tol(dt) * 10;
        free(x), free(out), free(xd), free(want);
      }
      ok(good, "%s %s matches the naive loop on 6 [pre, n, post] shapes",
         lg ? "log_softmax" : "softmax", pd_dtype_name(dt));
    }
    /* Numerically hard rows: huge logits must not overflow exp. */
    double rows[4][3] = {{1000, -1000, 0}, {-1000, -1000, -1000}, {1000, 1000, 1000},
                         {-INFINITY, 0, 0}};
    void *x = kt_alloc(12 * 8), *sm = kt_alloc(12 * 8), *ls = kt_alloc(12 * 8);
    for (int i = 0; i < 12; i++) kt_set(dt, x, i, rows[i / 3][i % 3]);
    K->softmax(dt, 4, 3, 1, x, sm);
    K->log_softmax(dt, 4, 3, 1, x, ls);
    double third = 1.0 / 3, want_sm[12] = {1, 0, 0, third, third, third, third, third, third,
                                           0, 0.5, 0.5};
    double l3 = -log(3.0), want_ls[12] = {0, -2000, -1000, l3, l3, l3, l3, l3, l3, -INFINITY,
                                          -log(2.0), -log(2.0)};
    kt_close(dt, sm, want_sm, 12, kt_tol(dt), "softmax %s of +-1000 and -inf rows is exact",
             pd_dtype_name(dt));
    kt_close(dt, ls, want_ls, 12, kt_tol(dt), "log_softmax %s of +-1000 and -inf rows is exact",
             pd_dtype_name(dt));
    free(x), free(sm), free(ls);
  }
  float v[2];
  is_int(K->softmax(PD_FP32, 1, 0, 1, v, v), PD_EINVAL, "softmax over 0 classes is refused");
}

typedef struct sm_ctx {
  int64_t pre, n, post;
  bool log;
} sm_ctx;

static void sm_fwd(const double *x, double *y, void *vc) {
  const sm_ctx *c = vc;
  (c->log ? K->log_softmax : K->softmax)(PD_FP64, c->pre, c->n, c->post, x, y);
}

static void test_softmax_grad(void) {
  for (int lg = 0; lg < 2; lg++) {
    double worst = 0;
    for (size_t s = 0; s < 4; s++) {
      sm_ctx c = {sm_shapes[s][0], sm_shapes[s][1], sm_shapes[s][2], lg};
      int64_t total = c.pre * c.n * c.post;
      double *x = kt_random(PD_FP64, total, -3, 3), *y = kt_alloc((size_t)total * 8);
      double *d = kt_random(PD_FP64, total, -1, 1), *dx = kt_alloc((size_t)total * 8);
      sm_fwd(x, y, &c);
      (lg ? K->log_softmax_grad : K->softmax_grad)(PD_FP64, c.pre, c.n, c.post, y, d, dx);
      double e = kt_gradcheck(total, x, total, d, dx, sm_fwd, &c);
      if (e > worst) worst = e;
      free(x), free(y), free(d), free(dx);
    }
    kt_grad_ok(worst, "%s_grad fp64 matches finite differences", lg ? "log_softmax" : "softmax");
  }
}

/* ---- Cross entropy ---- */

static void test_cross_entropy(void) {
  const int64_t rows = 37, classes = 11, ignore = -100;
  int64_t *label = kt_alloc(rows * 8);
  for (int64_t r = 0; r < rows; r++) label[r] = r % 7 == 3 ? ignore : (r * 5) % classes;
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    void *logits = kt_random(dt, rows * classes, -5, 5);
    void *sm = kt_alloc(rows * classes * 8), *loss = kt_alloc(rows * 8),
         *loss2 = kt_alloc(rows * 8);
    double *ld = kt_to_double(dt, logits, rows * classes);
    double *smd = kt_alloc(rows * classes * 8), *want = kt_alloc(rows * 8);
    naive_softmax(rows, classes, 1, ld, smd, false);
    for (int64_t r = 0; r < rows; r++)
      want[r] = label[r] == ignore ? 0 : -log(smd[r * classes + label[r]]);
    ok(K->softmax_xent(dt, rows, classes, logits, false, label, ignore, sm, loss) == PD_OK,
       "softmax_xent %s runs", pd_dtype_name(dt));
    kt_close(dt, loss, want, rows, kt_tol(dt) * 10, "softmax_xent %s hard-label loss",
             pd_dtype_name(dt));
    kt_close(dt, sm, smd, rows * classes, kt_tol(dt) * 10, "softmax_xent %s softmax output",
             pd_dtype_name(dt));
    K->cross_entropy(dt, rows, classes, sm, false, label, ignore, loss2);
    kt_close(dt, loss2, want, rows, kt_tol(dt) * 10, "cross_entropy %s of the softmax",
             pd_dtype_name(dt));

    /* Soft labels: random distributions. */
    void *soft = kt_random(dt, rows * classes, 0, 1);
    for (int64_t r = 0; r < rows; r++) {
      double s = 0;
      for (int64_t j = 0; j < classes; j++) s += kt_get(dt, soft, r * classes + j);
      for (int64_t j = 0; j < classes; j++)
        kt_set(dt, soft, r * classes + j, kt_get(dt, soft, r * classes + j) / s);
    }
    for (int64_t r = 0; r < rows; r++) {
      want[r] = 0;
      for (int64_t j = 0; j < classes; j++)
        want[r] -= kt_get(dt, soft, r * classes + j) * log(smd[r * classes + j]);
    }
    K->softmax_xent(dt, rows, classes, logits, true, soft, ignore, sm, loss);
    K->cross_entropy(dt, rows, classes, sm, true, soft, ignore, loss2);
    kt_close(dt, loss, want, rows, kt_tol(dt) * 10, "softmax_xent %s soft-label loss",
             pd_dtype_name(dt));
    kt_close(dt, loss2, want, rows, kt_tol(dt) * 10, "cross_entropy %s soft-label loss",
             pd_dtype_name(dt));
    free(logits), free(sm), free(loss), free(loss2), free(ld), free(smd), free(want),
        free(soft);
  }
  /* Huge logits: the fused loss is logsumexp - logit, finite where log(softmax) underflows. */
  double lg[3] = {1000, -1000, 0}, sm[3], loss;
  int64_t l1 = 1;
  K->softmax_xent(PD_FP64, 1, 3, lg, false, &l1, -100, sm, &loss);
  is_close(loss, 2000, 1e-12, "softmax_xent of logit -1000 vs 1000 is 2000, not inf");
  double p0[2] = {0, 1}, lz;
  int64_t l0 = 0;
  K->cross_entropy(PD_FP64, 1, 2, p0, false, &l0, -100, &lz);
  is_close(lz, 1e20, 1e-12, "cross_entropy of probability 0 is clamped to 1e20");
  int64_t bad = 11;
  double dummy[11] = {0}, dl;
  is_int(K->cross_entropy(PD_FP64, 1, 11, dummy, false, &bad, -100, &dl), PD_EINVAL,
         "label == classes is refused");
  bad = -1;
  is_int(K->softmax_xent(PD_FP64, 1, 11, dummy, false, &bad, -100, dummy, &dl), PD_EINVAL,
         "negative label is refused");
  free(label);
}

typedef struct xent_ctx {
  int64_t rows, classes;
  bool soft, fused;
  const void *label;
} xent_ctx;

static void xent_fwd(const double *x, double *loss, void *vc) {
  const xent_ctx *c = vc;
  if (c->fused) {
    double *sm = kt_alloc((size_t)(c->rows * c->classes) * 8);
    K->softmax_xent(PD_FP64, c->rows, c->classes, x, c->soft, c->label, -100, sm, loss);
    free(sm);
  } else {
    K->cross_entropy(PD_FP64, c->rows, c->classes, x, c->soft, c->label, -100, loss);
  }
}

static void test_cross_entropy_grad(void) {
  const int64_t rows = 6, classes = 5, n = rows * classes;
  int64_t hard[6] = {0, 4, -100, 2, 3, 1};
  double *soft = kt_random(PD_FP64, n, 0.1, 1);  /* not normalised: the exact gradient holds */
  for (int fused = 0; fused < 2; fused++) {
    for (int s = 0; s < 2; s++) {
      xent_ctx c = {rows, classes, s, fused, s ? (const void *)soft : (const void *)hard};
      double *x = fused ? kt_random(PD_FP64, n, -3, 3) : kt_random(PD_FP64, n, 0.1, 1);
      double *dloss = kt_random(PD_FP64, rows, -1, 1), *dx = kt_alloc(n * 8);
      double *sm = kt_alloc(n * 8), *loss = kt_alloc(rows * 8);
      if (fused) {
        K->softmax_xent(PD_FP64, rows, classes, x, s, c.label, -100, sm, loss);
        K->softmax_xent_grad(PD_FP64, rows, classes, sm, s, c.label, -100, dloss, dx);
      } else {
        K->cross_entropy_grad(PD_FP64, rows, classes, x, s, c.label, -100, dloss, dx);
      }
      kt_grad_ok(kt_gradcheck(n, x, rows, dloss, dx, xent_fwd, &c),
                 "%s_grad %s labels fp64 matches finite differences",
                 fused ? "softmax_xent" : "cross_entropy", s ? "soft" : "hard");
      if (!s) {
        bool zero = true;
        for (int64_t j = 0; j < classes; j++) zero &= dx[2 * classes + j] == 0;
        ok(zero, "%s_grad is 0 on the ignored row", fused ? "softmax_xent" : "cross_entropy");
      }
      free(x), free(dloss), free(dx), free(sm), free(loss);
    }
  }
  free(soft);
}

/* ---- Attention: the softmax between two products ---- */

/* out and lse of pd_k_attention's definition, in double. */
static void naive_attention(const pd_k_attention *a, const double *q, const double *k,
                            const double *v, const double *bias, double *out, double *lse) {
  int64_t H = a->heads, d = a->d, dv = a->dv, sq = a->sq, sk = a->sk;
  const int64_t *bs = a->bias_strides;
  double *s = kt_alloc((size_t)sk * sizeof(double));
  for (int64_t b = 0; b < a->batch; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t i = 0; i < sq; i++) {
        int64_t n = a->causal && i + 1 < sk ? i + 1 : sk;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; j++) {
          double t = 0;
          for (int64_t c = 0; c < d; c++)
            t += q[((b * sq + i) * H + h) * d + c] * k[((b * sk + j) * H + h) * d + c];
          s[j] = a->scale * t + (bias ? bias[b * bs[0] + h * bs[1] + i * bs[2] + j * bs[3]] : 0);
          mx = fmax(mx, s[j]);
        }
        for (int64_t j = 0; j < n; j++) sum += exp(s[j] - mx);
        for (int64_t c = 0; c < dv; c++) {
          double acc = 0;
          for (int64_t j = 0; j < n; j++)
            acc += exp(s[j] - mx) / sum * v[((b * sk + j) * H + h) * dv + c];
          out[((b * sq + i) * H + h) * dv + c] = acc;
        }
        lse[(b * H + h) * sq + i] = mx + log(sum);
      }
  free(s);
}

/* ERNIE's heads (12 of 32 over 128 tokens, a padding mask per batch element), a long one whose
 * scores take several blocks of rows (fp32: 600 x 1500 floats past the kernel's 256 KB), causal
 * over them, and a bias per head and row. */
static void test_attention(void) {
  static const struct {
    const char *what;
    pd_k_attention a;
    int64_t bias_dims[4]; /* [batch, heads, sq, sk], 1 where broadcast; all 0: no bias */
  } cases[] = {
      {"ERNIE's heads, a padding mask", {2, 128, 128, 12, 32, 32, 0.17677669529663687, false, {0}},
       {2, 1, 1, 128}},
      {"600 queries, 1500 keys", {1, 600, 1500, 2, 8, 5, 0.3, false, {0}}, {0}},
      {"causal, 600 queries", {1, 600, 1500, 1, 4, 4, 0.5, true, {0}}, {1, 1, 600, 1500}},
      {"bias per head and row, Dv > D", {3, 7, 9, 2, 3, 6, 1.0, false, {0}}, {3, 2, 7, 1}},
  };
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
      pd_k_attention a = cases[c].a;
      const int64_t *bd = cases[c].bias_dims;
      int64_t nq = a.batch * a.sq * a.heads, nk = a.batch * a.sk * a.heads;
      int64_t nbias = bd[0] ? bd[0] * bd[1] * bd[2] * bd[3] : 0;
      if (nbias) {
        int64_t stride = 1;
        for (int i = 3; i >= 0; i--) {
          a.bias_strides[i] = bd[i] == 1 ? 0 : stride;
          stride *= bd[i];
        }
      }
      void *q = kt_random(dt, nq * a.d, -1, 1), *k = kt_random(dt, nk * a.d, -1, 1);
      void *v = kt_random(dt, nk * a.dv, -1, 1);
      void *bias = nbias ? kt_random(dt, nbias, -4, 0) : NULL;
      void *out = kt_alloc((size_t)(nq * a.dv) * 8), *lse = kt_alloc((size_t)nq * 8);
      double *qd = kt_to_double(dt, q, nq * a.d), *kd = kt_to_double(dt, k, nk * a.d);
      double *vd = kt_to_double(dt, v, nk * a.dv);
      double *bsd = nbias ? kt_to_double(dt, bias, nbias) : NULL;
      double *want = kt_alloc((size_t)(nq * a.dv) * 8), *wlse = kt_alloc((size_t)nq * 8);
      naive_attention(&a, qd, kd, vd, bsd, want, wlse);
      pd_status st = K->attention(dt, &a, q, k, v, bias, out, lse);
      ok(st == PD_OK && kt_err(dt, out, want, nq * a.dv) <= kt_tol(dt) * 10 &&
             kt_err(dt, lse, wlse, nq) <= kt_tol(dt) * 10,
         "attention %s, %s: the output and the log-sum-exps match the naive loops",
         pd_dtype_name(dt), cases[c].what);
      free(q), free(k), free(v), free(bias), free(out), free(lse), free(qd), free(kd), free(vd);
      free(bsd), free(want), free(wlse);
    }
  }
  pd_k_attention bad = {1, 2, 0, 1, 4, 4, 1.0, false, {0}};
  ok(K->attention(PD_FP32, &bad, NULL, NULL, NULL, NULL, NULL, NULL) == PD_EINVAL &&
         K->attention(PD_INT32, &(pd_k_attention){1, 2, 2, 1, 4, 4, 1.0, false, {0}}, NULL, NULL,
                      NULL, NULL, NULL, NULL) == PD_EUNSUPPORTED,
     "attention: no keys is PD_EINVAL, int32 PD_EUNSUPPORTED");
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  kt_begin(argv);
  test_reduce_shape();
  test_reduce();
#if PD_KCPU_FASTMATH_f32
  test_column_sums();
#endif
  test_reduce_grad();
  test_softmax();
  test_softmax_grad();
  test_cross_entropy();
  test_cross_entropy_grad();
  test_attention();
  return tap_done();
}
