/* test_cuda_backend.c -- the CUDA backend against the CPU backend: every entry of pd_k_cuda()
 * runs on random inputs (uploaded to the GPU) and its results (downloaded) are compared with
 * the CPU's on the same inputs: fp32 within 1e-5 and fp64 within 1e-12 of the largest
 * magnitude of the CPU's result, integers and bools exactly, uniform random numbers bit for
 * bit; statuses must be the same, including for bad arguments and bad labels/ids. Shapes
 * include broadcasts, empty and size-1 dims and sizes that are not multiples of a block. Also
 * the device API (allocator, copies). Skipped (a TAP "SKIP" plan) when no GPU can be opened;
 * in a build without CUDA it checks that the device API says so. */
#include "config.h"
#include "kernels/kernels.h"
#include "tests/kernels/cuda_cmp.h"

/* ---- The device API ---- */

static void test_device_api(void) {
  ok(pd_k_cuda_built() && pd_k_cuda_is_open() && pd_k_cuda() != NULL, "built, open, a backend");
  is_str(G->name, "cuda", "the backend's name");
  ok(strlen(pd_k_cuda_device_name()) > 0, "device: %s", pd_k_cuda_device_name());
  is_str(pd_k_cuda_error(), "", "no CUDA error after opening");
  pd_error err = {0};
  is_int(pd_k_cuda_open(0, &err), PD_OK, "opening the same GPU again is a no-op");
  is_int(pd_k_cuda_open(1000, &err), PD_EINVAL, "another GPU once one is open: PD_EINVAL");
  pd_error_clear(&err);

  size_t live0 = pd_k_dev_live();
  void *a = pd_k_dev_alloc(1000), *b = pd_k_dev_alloc(0);
  ok(a && b && a != b && pd_k_dev_live() >= live0 + 1024, "alloc: distinct blocks, counted live");
  pd_k_dev_free(a);
  void *c = pd_k_dev_alloc(900);
  ok(c == a, "a freed block is reused for a request of its class");
  pd_k_dev_free(c);
  pd_k_dev_free(b);
  pd_k_dev_free(NULL);
  ok(pd_k_dev_cached() >= 1024 && pd_k_dev_live() == live0, "freed blocks are cached");
  pd_k_dev_trim();
  is_int((long)pd_k_dev_cached(), 0, "trim returns the cache");

  enum { N = 100003 };
  double *h = kt_alloc(N * sizeof *h), *back = kt_alloc(N * sizeof *back);
  for (int i = 0; i < N; i++) h[i] = kt_uniform(-1, 1);
  void *d1 = pd_k_dev_alloc(N * sizeof *h), *d2 = pd_k_dev_alloc(N * sizeof *h);
  ok(d1 && d2 && pd_k_dev_upload(d1, h, N * sizeof *h) == PD_OK &&
         pd_k_dev_copy(d2, d1, N * sizeof *h) == PD_OK &&
         pd_k_dev_download(back, d2, N * sizeof *h) == PD_OK && pd_k_dev_sync() == PD_OK &&
         memcmp(h, back, N * sizeof *h) == 0,
     "upload, device copy, download: the same bytes");
  pd_k_dev_free(d1);
  pd_k_dev_free(d2);
  free(h);
  free(back);
}

/* ---- GEMM ---- */

/* gemm_lp: both backends round the operands the same way and sum exact products in fp32, so
 * they agree to fp32's rounding of the sums; transposes, padding, a batch with B broadcast,
 * bias, beta. */
static void test_gemm_lp(void) {
  const pd_dtype lps[] = {PD_BF16, PD_FP16};
  for (size_t l = 0; l < PD_ARRAY_LEN(lps); l++) {
    const struct {
      int64_t batch, m, n, k;
      bool ta, tb, bias;
      double beta;
    } cs[] = {{1, 7, 13, 5, false, false, false, 0}, {1, 64, 33, 129, false, true, true, 0},
              {3, 33, 20, 17, true, false, false, 0.5}, {2, 16, 48, 40, true, true, true, 1}};
    for (size_t i = 0; i < PD_ARRAY_LEN(cs); i++) {
      int64_t bt = cs[i].batch, m = cs[i].m, n = cs[i].n, k = cs[i].k;
      int64_t lda = (cs[i].ta ? m : k) + 1, ldb = cs[i].tb ? k : n;
      int64_t sa = (cs[i].ta ? k : m) * lda, sb = 0; /* B broadcast */
      buf a = B_rand(PD_FP32, bt * sa, -1, 1), b = B_rand(PD_FP32, (cs[i].tb ? n : k) * ldb, -1, 1);
      buf c = B_rand(PD_FP32, bt * m * n, -1, 1), bias = B_rand(PD_FP32, n, -1, 1);
      pd_status sc = C->gemm_lp(lps[l], cs[i].ta, cs[i].tb, bt, m, n, k, 1.0, a.h, lda, sa, b.h,
                                ldb, sb, cs[i].beta, c.h, n, m * n, cs[i].bias ? bias.h : NULL);
      pd_status sg = G->gemm_lp(lps[l], cs[i].ta, cs[i].tb, bt, m, n, k, 1.0, a.d, lda, sa, b.d,
                                ldb, sb, cs[i].beta, c.d, n, m * n, cs[i].bias ? bias.d : NULL);
      same_status(sg, sc, "gemm_lp %s case %zu: status", pd_dtype_name(lps[l]), i);
      same(PD_FP32, &c, bt * m * n, "gemm_lp %s batch %lld %lldx%lldx%lld%s%s%s",
           pd_dtype_name(lps[l]), (long long)bt, (long long)m, (long long)n, (long long)k,
           cs[i].ta ? " A^T" : "", cs[i].tb ? " B^T" : "", cs[i].bias ? " bias" : "");
      B_free(&a), B_free(&b), B_free(&c), B_free(&bias);
    }
  }
}

static void test_gemm(void) {
  const struct {
    int64_t m, n, k, pad;
    bool ta, tb;
    double alpha, beta;
  } cs[] = {
      {1, 1, 1, 0, false, false, 1, 0},      {7, 13, 5, 0, false, false, 1, 0},
      {64, 33, 129, 3, false, true, 0.5, 1}, {33, 64, 17, 0, true, false, -1, 0.25},
      {65, 31, 70, 2, true, true, 2, 0},      {100, 1, 37, 0, false, false, 1, 1},
      {0, 5, 3, 0, false, false, 1, 0},       {3, 4, 0, 0, false, false, 1, 0.5},
      {3, 4, 0, 1, true, true, 1, 0},
  };
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    for (size_t i = 0; i < PD_ARRAY_LEN(cs); i++) {
      int64_t m = cs[i].m, n = cs[i].n, k = cs[i].k;
      int64_t ar = cs[i].ta ? k : m, ac = cs[i].ta ? m : k, br = cs[i].tb ? n : k,
              bc = cs[i].tb ? k : n;
      int64_t lda = ac + cs[i].pad, ldb = bc + cs[i].pad, ldc = n + cs[i].pad;
      if (lda < 1) lda = 1;
      if (ldb < 1) ldb = 1;
      if (ldc < 1) ldc = 1;
      buf a = B_rand(dt, ar * lda, -1, 1), b = B_rand(dt, br * ldb, -1, 1);
      /* beta == 0: C starts as NaN, which must not show through. */
      bool nan_c = cs[i].beta == 0;
      buf c = B_rand(dt, m * ldc, nan_c ? NAN : -1, nan_c ? NAN : 1);
      pd_status sc = C->gemm(dt, cs[i].ta, cs[i].tb, m, n, k, cs[i].alpha, a.h, lda, b.h, ldb,
                             cs[i].beta, c.h, ldc);
      pd_status sg = G->gemm(dt, cs[i].ta, cs[i].tb, m, n, k, cs[i].alpha, a.d, lda, b.d, ldb,
                             cs[i].beta, c.d, ldc);
      same_status(sg, sc, "gemm %s %lldx%lldx%lld: status", dn(dt), (long long)m, (long long)n,
                  (long long)k);
      same(dt, &c, m * ldc, "gemm %s %lldx%lldx%lld%s%s lda+%lld beta %g", dn(dt), (long long)m,
           (long long)n, (long long)k, cs[i].ta ? " A^T" : "", cs[i].tb ? " B^T" : "",
           (long long)cs[i].pad, cs[i].beta);
      B_free(&a), B_free(&b), B_free(&c);
    }
    /* Batched: A broadcast (stride 0), and overlapping outputs (stride_c 0: sequential). */
    int64_t batch = 3, m = 9, n = 11, k = 6;
    buf a = B_rand(dt, m * k, -1, 1), b = B_rand(dt, batch * k * n, -1, 1);
    buf c = B_rand(dt, batch * m * n, -1, 1);
    pd_status sc = C->gemm_batched(dt, false, true, batch, m, n, k, 1.5, a.h, k, 0, b.h, k,
                                   k * n, 0.5, c.h, n, m * n);
    pd_status sg = G->gemm_batched(dt, false, true, batch, m, n, k, 1.5, a.d, k, 0, b.d, k,
                                   k * n, 0.5, c.d, n, m * n);
    same_status(sg, sc, "gemm_batched %s: status", dn(dt));
    same(dt, &c, batch * m * n, "gemm_batched %s, A broadcast", dn(dt));
    B_sync_up(&c, c.h);
    sc = C->gemm_batched(dt, true, false, batch, k, n, m, 1, a.h, k, 0, c.h, n, m * n, 1, b.h, n,
                         0);
    sg = G->gemm_batched(dt, true, false, batch, k, n, m, 1, a.d, k, 0, c.d, n, m * n, 1, b.d, n,
                         0);
    same_status(sg, sc, "gemm_batched %s stride_c 0: status", dn(dt));
    same(dt, &b, k * n, "gemm_batched %s, stride_c 0 accumulates in order", dn(dt));
    /* gemm_act: an RNN step (C's rows strided in a sequence-major tensor) and its backward
     * step, for each activation; and a contiguous C (one activation launch). */
    const pd_k_unop acts[] = {PD_K_TANH, PD_K_SIGMOID, PD_K_RELU};
    for (size_t q = 0; q < PD_ARRAY_LEN(acts); q++)
      for (int grad = 0; grad < 2; grad++)
        for (int64_t ldc = 32; ldc <= 96; ldc += 64) {
          int64_t am = 8, an = 32, ak = 32;
          buf x = B_rand(dt, am * ak, -1, 1), w = B_rand(dt, ak * an, -0.3, 0.3);
          buf y = B_rand(dt, am * ldc, -1, 1), hh = B_rand(dt, am * ldc, 0.01, 0.99);
          sc = C->gemm_act(acts[q], grad, dt, false, grad, am, an, ak, x.h, ak, w.h, an, 1, y.h,
                           ldc, hh.h, ldc);
          sg = G->gemm_act(acts[q], grad, dt, false, grad, am, an, ak, x.d, ak, w.d, an, 1, y.d,
                           ldc, hh.d, ldc);
          same_status(sg, sc, "gemm_act %s %s grad %d ldc %lld: status", dn(dt),
                      pd_k_unop_name(acts[q]), grad, (long long)ldc);
          same(dt, &y, am * ldc, "gemm_act %s %s grad %d ldc %lld", dn(dt),
               pd_k_unop_name(acts[q]), grad, (long long)ldc);
          B_free(&x), B_free(&w), B_free(&y), B_free(&hh);
        }
    /* gemm_bias: an fc layer's forward, C contiguous (one broadcast launch) and strided. */
    for (int64_t ldc = 40; ldc <= 45; ldc += 5) {
      int64_t fm = 300, fn = 40, fk = 48;
      buf x = B_rand(dt, fm * fk, -1, 1), w = B_rand(dt, fk * fn, -0.3, 0.3);
      buf bias = B_rand(dt, fn, -2, 2), y = B_rand(dt, fm * ldc, -1, 1);
      sc = C->gemm_bias(dt, false, false, fm, fn, fk, x.h, fk, w.h, fn, bias.h, y.h, ldc);
      sg = G->gemm_bias(dt, false, false, fm, fn, fk, x.d, fk, w.d, fn, bias.d, y.d, ldc);
      same_status(sg, sc, "gemm_bias %s ldc %lld: status", dn(dt), (long long)ldc);
      same(dt, &y, fm * ldc, "gemm_bias %s ldc %lld", dn(dt), (long long)ldc);
      B_free(&x), B_free(&w), B_free(&bias), B_free(&y);
    }
    /* gemm_act_chain: 6 steps of an RNN over 8 sequences of hidden 32, sequence-major,
     * forward and backward (reversed steps). */
    for (int grad = 0; grad < 2; grad++) {
      int64_t cm = 8, cn = 32, steps = 6, ld = steps * cn, s0 = grad ? (steps - 1) * cn : 0;
      int64_t sz = (int64_t)pd_dtype_size(dt);
      buf x = B_rand(dt, cm * cn, -1, 1), w = B_rand(dt, cn * cn, -0.3, 0.3);
      buf y = B_rand(dt, cm * ld, -1, 1), hh = B_rand(dt, cm * ld, 0.01, 0.99);
      sc = C->gemm_act_chain(PD_K_TANH, grad, dt, grad, cm, cn, steps, x.h, cn, w.h,
                             (char *)y.h + s0 * sz, ld, grad ? -cn : cn, (char *)hh.h + s0 * sz,
                             ld);
      sg = G->gemm_act_chain(PD_K_TANH, grad, dt, grad, cm, cn, steps, x.d, cn, w.d,
                             (char *)y.d + s0 * sz, ld, grad ? -cn : cn, (char *)hh.d + s0 * sz,
                             ld);
      same_status(sg, sc, "gemm_act_chain %s grad %d: status", dn(dt), grad);
      same(dt, &y, cm * ld, "gemm_act_chain %s grad %d", dn(dt), grad);
      B_free(&x), B_free(&w), B_free(&y), B_free(&hh);
    }
    same_status(G->gemm(dt, false, false, -1, 2, 2, 1, a.d, 2, b.d, 2, 0, c.d, 2),
                C->gemm(dt, false, false, -1, 2, 2, 1, a.h, 2, b.h, 2, 0, c.h, 2),
                "gemm %s: a negative size", dn(dt));
    same_status(G->gemm(dt, false, false, 4, 4, 4, 1, a.d, 3, b.d, 4, 0, c.d, 4),
                C->gemm(dt, false, false, 4, 4, 4, 1, a.h, 3, b.h, 4, 0, c.h, 4),
                "gemm %s: lda too small", dn(dt));
    B_free(&a), B_free(&b), B_free(&c);
  }
  buf a = B_rand(PD_INT32, 4, 0, 9);
  same_status(G->gemm(PD_INT32, false, false, 2, 2, 1, 1, a.d, 1, a.d, 2, 0, a.d, 2),
              C->gemm(PD_INT32, false, false, 2, 2, 1, 1, a.h, 1, a.h, 2, 0, a.h, 2),
              "gemm int32: unsupported");
  B_free(&a);
}

/* ---- Broadcast binary ops, compare, logical ---- */

typedef struct bshape {
  int xnd, ynd, axis;
  int64_t x[4], y[4];
} bshape;

static const bshape bshapes[] = {
    {3, 3, -1, {3, 4, 5}, {3, 4, 5}},   /* same shape */
    {3, 2, -1, {2, 3, 5}, {3, 1}},      /* NumPy, both broadcast */
    {4, 2, 1, {2, 3, 4, 5}, {3, 4}},    /* Fluid axis */
    {2, 4, 1, {3, 4}, {2, 3, 4, 5}},    /* Fluid axis, x the smaller */
    {2, 0, -1, {7, 9}, {0}},            /* scalar y */
    {2, 1, -1, {0, 3}, {3}},            /* empty */
    {1, 1, -1, {1}, {1}},               /* size 1 */
    {2, 1, -1, {1000, 3}, {3}},         /* bias add, not a block multiple */
    {1, 1, -1, {517}, {1}},
    {3, 3, -1, {1, 7, 1}, {5, 1, 3}},
};

static const char *bshape_str(const bshape *s, char *out, size_t size) {
  char a[64], b[64];
  snprintf(out, size, "%s op %s axis %d", shape_str(s->xnd, s->x, a, sizeof a),
           shape_str(s->ynd, s->y, b, sizeof b), s->axis);
  return out;
}

static int64_t bcast_numel(const bshape *s) {
  int nd;
  int64_t od[PD_K_MAX_DIMS];
  if (pd_k_broadcast_shape(s->xnd, s->x, s->ynd, s->y, s->axis, &nd, od)) return -1;
  return pd_k_numel(nd, od);
}

static void test_binary(void) {
  char sh[160];
  for (size_t t = 0; t < PD_ARRAY_LEN(nums); t++) {
    pd_dtype dt = nums[t];
    for (int op = 0; op < PD_K_BINOP_COUNT_; op++) {
      bool good_status = true;
      for (size_t s = 0; s < PD_ARRAY_LEN(bshapes); s++) {
        const bshape *bs = &bshapes[s];
        int64_t xn = kt_numel(bs->xnd, bs->x), yn = kt_numel(bs->ynd, bs->y), on = bcast_numel(bs);
        bool pw = op == PD_K_POW;
        buf x = B_rand(dt, xn, pw ? 0.5 : -20, pw ? 2 : 20), y = B_rand(dt, yn, pw ? -2 : -20, 20);
        buf o = B_out((size_t)on * pd_dtype_size(dt));
        pd_status sc = C->binary(op, dt, bs->xnd, bs->x, x.h, bs->ynd, bs->y, y.h, bs->axis, o.h);
        pd_status sg = G->binary(op, dt, bs->xnd, bs->x, x.d, bs->ynd, bs->y, y.d, bs->axis, o.d);
        good_status &= sc == sg;
        if (sc == PD_OK && sg == PD_OK)
          same(dt, &o, on, "binary %s %s %s", pd_k_binop_name(op), dn(dt),
               bshape_str(bs, sh, sizeof sh));
        B_free(&x), B_free(&y), B_free(&o);
      }
      ok(good_status, "binary %s %s: the same statuses", pd_k_binop_name(op), dn(dt));
    }
  }
  /* In place (out == x), and the integer corner cases: x / 0 = 0, MIN / -1 wraps. */
  int32_t xi[] = {7, -7, INT32_MIN, 5, 0}, yi[] = {0, 2, -1, -1, 3};
  int64_t d5[] = {5};
  buf x = B_copy(xi, sizeof xi), y = B_copy(yi, sizeof yi);
  same_status(G->binary(PD_K_DIV, PD_INT32, 1, d5, x.d, 1, d5, y.d, -1, x.d),
              C->binary(PD_K_DIV, PD_INT32, 1, d5, x.h, 1, d5, y.h, -1, x.h), "int32 div status");
  same(PD_INT32, &x, 5, "int32 div in place: x / 0 = 0, INT32_MIN / -1 = INT32_MIN");
  same_status(G->binary(PD_K_POW, PD_INT32, 1, d5, x.d, 1, d5, y.d, -1, x.d),
              C->binary(PD_K_POW, PD_INT32, 1, d5, x.h, 1, d5, y.h, -1, x.h),
              "int32 pow: unsupported");
  int64_t d3[] = {3};
  same_status(G->binary(PD_K_ADD, PD_INT32, 1, d5, x.d, 1, d3, y.d, -1, x.d),
              C->binary(PD_K_ADD, PD_INT32, 1, d5, x.h, 1, d3, y.h, -1, x.h),
              "binary: shapes that do not broadcast");
  same_status(G->binary(PD_K_ADD, PD_BOOL, 1, d5, x.d, 1, d5, y.d, -1, x.d),
              C->binary(PD_K_ADD, PD_BOOL, 1, d5, x.h, 1, d5, y.h, -1, x.h),
              "binary bool: unsupported");
  B_free(&x), B_free(&y);
}

static void test_binary_grad(void) {
  char sh[160];
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (int op = 0; op < PD_K_BINOP_COUNT_; op++) {
      for (size_t s = 0; s < PD_ARRAY_LEN(bshapes); s++) {
        const bshape *bs = &bshapes[s];
        int64_t xn = kt_numel(bs->xnd, bs->x), yn = kt_numel(bs->ynd, bs->y), on = bcast_numel(bs);
        bool pw = op == PD_K_POW;
        buf x = B_rand(dt, xn, pw ? 0.5 : -2, 2), y = B_rand(dt, yn, pw ? -2 : 0.5, 2);
        buf d = B_rand(dt, on, -1, 1);
        buf dx = B_out((size_t)xn * sz), dy = B_out((size_t)yn * sz);
        bool only_x = s % 3 == 2;  /* dy not wanted */
        pd_status sc = C->binary_grad(op, dt, bs->xnd, bs->x, x.h, bs->ynd, bs->y, y.h, bs->axis,
                                      d.h, dx.h, only_x ? NULL : dy.h);
        pd_status sg = G->binary_grad(op, dt, bs->xnd, bs->x, x.d, bs->ynd, bs->y, y.d, bs->axis,
                                      d.d, dx.d, only_x ? NULL : dy.d);
        same_status(sg, sc, "binary_grad %s %s %s: status", pd_k_binop_name(op), dn(dt),
                    bshape_str(bs, sh, sizeof sh));
        same(dt, &dx, xn, "binary_grad %s %s %s: dx", pd_k_binop_name(op), dn(dt),
             bshape_str(bs, sh, sizeof sh));
        if (!only_x)
          same(dt, &dy, yn, "binary_grad %s %s %s: dy", pd_k_binop_name(op), dn(dt),
               bshape_str(bs, sh, sizeof sh));
        B_free(&x), B_free(&y), B_free(&d), B_free(&dx), B_free(&dy);
      }
    }
    /* Ties of max/min: half the elements equal. */
    int64_t n = 1001, dims[] = {1001};
    buf x = B_rand(dt, n, -2, 2), y = B_rand(dt, n, -2, 2), d = B_rand(dt, n, -1, 1);
    for (int64_t i = 0; i < n; i += 2) kt_set(dt, y.h, i, kt_get(dt, x.h, i));
    B_sync_up(&y, y.h);
    for (int op = PD_K_MAX; op <= PD_K_MIN; op++) {
      buf dx = B_out((size_t)n * sz), dy = B_out((size_t)n * sz);
      C->binary_grad(op, dt, 1, dims, x.h, 1, dims, y.h, -1, d.h, dx.h, dy.h);
      G->binary_grad(op, dt, 1, dims, x.d, 1, dims, y.d, -1, d.d, dx.d, dy.d);
      same(dt, &dx, n, "binary_grad %s %s with ties: dx", pd_k_binop_name(op), dn(dt));
      same(dt, &dy, n, "binary_grad %s %s with ties: dy", pd_k_binop_name(op), dn(dt));
      B_free(&dx), B_free(&dy);
    }
    B_free(&x), B_free(&y), B_free(&d);
  }
}

static void test_compare_logical(void) {
  char sh[160];
  const pd_dtype types[] = {PD_FP32, PD_FP64, PD_INT32, PD_INT64, PD_BOOL};
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    for (int op = 0; op < PD_K_CMPOP_COUNT_; op++) {
      for (size_t s = 0; s < PD_ARRAY_LEN(bshapes); s++) {
        const bshape *bs = &bshapes[s];
        int64_t xn = kt_numel(bs->xnd, bs->x), yn = kt_numel(bs->ynd, bs->y), on = bcast_numel(bs);
        buf x = B_rand(dt, xn, -3, 3), y = B_rand(dt, yn, -3, 3), o = B_out((size_t)on);
        if ((dt == PD_FP32 || dt == PD_FP64) && xn > 2) {
          kt_set(dt, x.h, 1, NAN);
          B_sync_up(&x, x.h);
        }
        pd_status sc = C->compare(op, dt, bs->xnd, bs->x, x.h, bs->ynd, bs->y, y.h, bs->axis, o.h);
        pd_status sg = G->compare(op, dt, bs->xnd, bs->x, x.d, bs->ynd, bs->y, y.d, bs->axis, o.d);
        same_status(sg, sc, "compare %s %s %s: status", pd_k_cmpop_name(op), dn(dt),
                    bshape_str(bs, sh, sizeof sh));
        same_bits(&o, "compare %s %s %s", pd_k_cmpop_name(op), dn(dt),
                  bshape_str(bs, sh, sizeof sh));
        B_free(&x), B_free(&y), B_free(&o);
      }
    }
  }
  for (int op = 0; op < PD_K_LOGOP_COUNT_; op++) {
    for (size_t s = 0; s < PD_ARRAY_LEN(bshapes); s++) {
      const bshape *bs = &bshapes[s];
      int64_t xn = kt_numel(bs->xnd, bs->x), yn = kt_numel(bs->ynd, bs->y), on = bcast_numel(bs);
      buf x = B_rand(PD_BOOL, xn, 0, 0), y = B_rand(PD_BOOL, yn, 0, 0), o = B_out((size_t)on);
      pd_status sc = C->logical(op, bs->xnd, bs->x, x.h, bs->ynd, bs->y, y.h, bs->axis, o.h);
      pd_status sg = G->logical(op, bs->xnd, bs->x, x.d, bs->ynd, bs->y, y.d, bs->axis, o.d);
      same_status(sg, sc, "logical %s %s: status", pd_k_logop_name(op),
                  bshape_str(bs, sh, sizeof sh));
      same_bits(&o, "logical %s %s", pd_k_logop_name(op), bshape_str(bs, sh, sizeof sh));
      B_free(&x), B_free(&y), B_free(&o);
    }
  }
  const int64_t ns[] = {0, 1, 1000};
  for (size_t i = 0; i < PD_ARRAY_LEN(ns); i++) {
    buf x = B_rand(PD_BOOL, ns[i], 0, 0), o = B_out((size_t)ns[i]);
    C->logical_not(ns[i], x.h, o.h);
    G->logical_not(ns[i], x.d, o.d);
    same_bits(&o, "logical_not n=%lld", (long long)ns[i]);
    C->logical_not(ns[i], x.h, x.h);
    G->logical_not(ns[i], x.d, x.d);
    same_bits(&x, "logical_not n=%lld in place", (long long)ns[i]);
    B_free(&x), B_free(&o);
  }
}

/* ---- Unary, scale, fill, cast ---- */

/* ---- Optimizer updates: every kind (momentum plain and Nesterov with L2, adam and adamw's
 * decay, rmsprop plain and centered), then again in place. ---- */

static void test_opt(void) {
  const pd_k_opt kinds[] = {
      {.kind = PD_K_OPT_SGD, .lr = 0.1},
      {.kind = PD_K_OPT_MOMENTUM, .lr = 0.05, .mu = 0.9, .rescale = 1},
      {.kind = PD_K_OPT_MOMENTUM, .lr = 0.05, .mu = 0.8, .rescale = 0.5, .l2 = 1e-3,
       .nesterov = true},
      {.kind = PD_K_OPT_ADAM, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8},
      {.kind = PD_K_OPT_ADAM, .lr = 1e-2, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6,
       .decay = 1e-3},
      {.kind = PD_K_OPT_RMSPROP, .lr = 1e-2, .rho = 0.9, .eps = 1e-6, .mu = 0.5},
      {.kind = PD_K_OPT_RMSPROP, .lr = 1e-2, .rho = 0.95, .eps = 1e-6, .centered = true},
      {.kind = PD_K_OPT_ADAGRAD, .lr = 0.1, .eps = 1e-6},
  };
  const int64_t n = 1025;
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (size_t k = 0; k < PD_ARRAY_LEN(kinds); k++) {
      const pd_k_opt *o = &kinds[k];
      int ns = pd_k_opt_nstates(o);
      /* States >= 0.5 keep rmsprop's centered mean square above the squared mean gradient. */
      buf p = B_rand(dt, n, -1, 1), g = B_rand(dt, n, -1, 1), po = B_out((size_t)n * sz);
      buf st[3], so[3];
      const void *sh[3] = {0}, *sd[3] = {0};
      void *soh[3] = {0}, *sod[3] = {0};
      for (int i = 0; i < 3; i++) {
        st[i] = B_rand(dt, n, i == 2 ? -0.1 : 0.5, i == 2 ? 0.1 : 1);
        so[i] = B_out((size_t)n * sz);
        sh[i] = st[i].h, sd[i] = st[i].d, soh[i] = so[i].h, sod[i] = so[i].d;
      }
      same_status(G->opt(dt, n, o, p.d, g.d, sd, po.d, sod),
                  C->opt(dt, n, o, p.h, g.h, sh, po.h, soh), "opt %zu %s: status", k, dn(dt));
      same(dt, &po, n, "opt %zu %s: param", k, dn(dt));
      for (int i = 0; i < ns; i++) same(dt, &so[i], n, "opt %zu %s: state %d", k, dn(dt), i);
      void *ih[3] = {st[0].h, st[1].h, st[2].h}, *id[3] = {st[0].d, st[1].d, st[2].d};
      C->opt(dt, n, o, p.h, g.h, sh, p.h, ih);
      G->opt(dt, n, o, p.d, g.d, sd, p.d, id);
      same(dt, &p, n, "opt %zu %s in place: param", k, dn(dt));
      for (int i = 0; i < ns; i++)
        same(dt, &st[i], n, "opt %zu %s in place: state %d", k, dn(dt), i);
      B_free(&p), B_free(&g), B_free(&po);
      for (int i = 0; i < 3; i++) B_free(&st[i]), B_free(&so[i]);
    }
  }
  pd_k_opt bad = {.kind = PD_K_OPT_COUNT_};
  same_status(G->opt(PD_FP32, 4, &bad, NULL, NULL, NULL, NULL, NULL),
              C->opt(PD_FP32, 4, &bad, NULL, NULL, NULL, NULL, NULL), "opt: an unknown kind");
  pd_k_opt nan_lr = {.kind = PD_K_OPT_SGD, .lr = NAN};
  buf x = B_rand(PD_FP32, 4, 0, 1);
  same_status(G->opt(PD_FP32, 4, &nan_lr, x.d, x.d, NULL, x.d, NULL),
              C->opt(PD_FP32, 4, &nan_lr, x.h, x.h, NULL, x.h, NULL), "opt: a NaN rate");
  pd_k_opt sgd = {.kind = PD_K_OPT_SGD, .lr = 0.1};
  same_status(G->opt(PD_INT32, 4, &sgd, x.d, x.d, NULL, x.d, NULL),
              C->opt(PD_INT32, 4, &sgd, x.h, x.h, NULL, x.h, NULL), "opt: int32 unsupported");
  B_free(&x);
}

/* unscale: the same quotients and the same flag, finite and with an infinity in the middle. */
static void test_unscale(void) {
  const int64_t n = 1025;
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (int inf = 0; inf < 2; inf++) {
      buf x = B_rand(dt, n, -1000, 1000), o = B_out((size_t)n * sz), f = B_out(1);
      if (inf) {
        kt_set(dt, x.h, n / 2, INFINITY);
        B_sync_up(&x, x.h);
      }
      C->fill(PD_BOOL, 1, f.h, 0);
      G->fill(PD_BOOL, 1, f.d, 0);
      same_status(G->unscale(dt, n, x.d, 0.125, o.d, (bool *)f.d),
                  C->unscale(dt, n, x.h, 0.125, o.h, (bool *)f.h), "unscale %s: status", dn(dt));
      if (!inf) same(dt, &o, n, "unscale %s: the quotients", dn(dt));
      same_bits(&f, "unscale %s%s: the flag", dn(dt), inf ? " (an infinity)" : "");
      B_free(&x), B_free(&o), B_free(&f);
    }
  }
}

static void test_unary(void) {
  const int64_t ns[] = {0, 1, 777};
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (int op = 0; op < PD_K_UNOP_COUNT_; op++) {
      for (size_t i = 0; i < PD_ARRAY_LEN(ns); i++) {
        int64_t n = ns[i];
        buf x = B_rand(dt, n, -3, 3), o = B_out((size_t)n * sz);
        if (n > 3) {  /* zeros: relu'(0), abs'(0) */
          kt_set(dt, x.h, 2, 0);
          B_sync_up(&x, x.h);
        }
        same_status(G->unary(op, dt, n, x.d, o.d), C->unary(op, dt, n, x.h, o.h),
                    "unary %s %s n=%lld: status", pd_k_unop_name(op), dn(dt), (long long)n);
        same(dt, &o, n, "unary %s %s n=%lld", pd_k_unop_name(op), dn(dt), (long long)n);
        buf d = B_rand(dt, n, -1, 1), dx = B_out((size_t)n * sz);
        /* The forward output as the CPU computed it, for both. */
        B_sync_up(&o, o.h);
        same_status(G->unary_grad(op, dt, n, x.d, o.d, d.d, dx.d),
                    C->unary_grad(op, dt, n, x.h, o.h, d.h, dx.h), "unary_grad %s %s: status",
                    pd_k_unop_name(op), dn(dt));
        same(dt, &dx, n, "unary_grad %s %s n=%lld", pd_k_unop_name(op), dn(dt), (long long)n);
        C->unary(op, dt, n, x.h, x.h);
        G->unary(op, dt, n, x.d, x.d);
        same(dt, &x, n, "unary %s %s n=%lld in place", pd_k_unop_name(op), dn(dt), (long long)n);
        B_free(&x), B_free(&o), B_free(&d), B_free(&dx);
      }
    }
    int64_t n = 1025;
    buf x = B_rand(dt, n, -3, 3), o = B_out((size_t)n * sz);
    same_status(G->scale(dt, n, x.d, 2.5, -1, o.d), C->scale(dt, n, x.h, 2.5, -1, o.h),
                "scale %s: status", dn(dt));
    same(dt, &o, n, "scale %s", dn(dt));
    C->scale(dt, n, x.h, -0.5, 3, x.h);
    G->scale(dt, n, x.d, -0.5, 3, x.d);
    same(dt, &x, n, "scale %s in place", dn(dt));
    B_free(&x), B_free(&o);
  }
  buf x = B_rand(PD_INT32, 4, 0, 9), o = B_out(16);
  same_status(G->unary(PD_K_EXP, PD_INT32, 4, x.d, o.d), C->unary(PD_K_EXP, PD_INT32, 4, x.h, o.h),
              "unary int32: unsupported");
  same_status(G->unary(PD_K_EXP, PD_FP32, -1, x.d, o.d), C->unary(PD_K_EXP, PD_FP32, -1, x.h, o.h),
              "unary: a negative size");
  same_status(G->unary_grad(PD_K_LOG, PD_FP32, 4, NULL, o.d, x.d, o.d),
              C->unary_grad(PD_K_LOG, PD_FP32, 4, NULL, o.h, x.h, o.h),
              "unary_grad log without x: PD_EINVAL");
  B_free(&x), B_free(&o);
}

/* ---- Activations with parameters (act, act_grad) ---- */

static void test_act(void) {
  /* Each op's parameters (kernels.h's order); gelu_tanh and log_sigmoid take none. */
  static const double params[PD_K_ACT_COUNT_][3] = {
      [PD_K_LEAKY_RELU] = {0.1}, [PD_K_ELU] = {0.7},          [PD_K_SWISH] = {1.5},
      [PD_K_SOFTPLUS] = {2, 15}, [PD_K_RELU6] = {6},           [PD_K_HARD_SWISH] = {6, 6, 3},
  };
  const int64_t ns[] = {0, 1, 777};
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (int op = 0; op < PD_K_ACT_COUNT_; op++) {
      const double *p = params[op];
      for (size_t i = 0; i < PD_ARRAY_LEN(ns); i++) {
        int64_t n = ns[i];
        buf x = B_rand(dt, n, -12, 12), o = B_out((size_t)n * sz);
        if (n > 5) {  /* far out: softplus and log_sigmoid must not overflow */
          kt_set(dt, x.h, 3, -90);
          kt_set(dt, x.h, 4, 90);
          B_sync_up(&x, x.h);
        }
        same_status(G->act(op, dt, n, p, x.d, o.d), C->act(op, dt, n, p, x.h, o.h),
                    "act %s %s n=%lld: status", pd_k_act_name(op), dn(dt), (long long)n);
        same(dt, &o, n, "act %s %s n=%lld", pd_k_act_name(op), dn(dt), (long long)n);
        buf d = B_rand(dt, n, -1, 1), dx = B_out((size_t)n * sz);
        same_status(G->act_grad(op, dt, n, p, x.d, d.d, dx.d),
                    C->act_grad(op, dt, n, p, x.h, d.h, dx.h), "act_grad %s %s: status",
                    pd_k_act_name(op), dn(dt));
        same(dt, &dx, n, "act_grad %s %s n=%lld", pd_k_act_name(op), dn(dt), (long long)n);
        C->act_grad(op, dt, n, p, x.h, d.h, d.h);
        G->act_grad(op, dt, n, p, x.d, d.d, d.d);
        same(dt, &d, n, "act_grad %s %s n=%lld over dout", pd_k_act_name(op), dn(dt),
             (long long)n);
        C->act(op, dt, n, p, x.h, x.h);
        G->act(op, dt, n, p, x.d, x.d);
        same(dt, &x, n, "act %s %s n=%lld in place", pd_k_act_name(op), dn(dt), (long long)n);
        B_free(&x), B_free(&o), B_free(&d), B_free(&dx);
      }
    }
  }
  const double zero[3] = {0, 0, 0}, one[3] = {1, 1, 1};
  buf x = B_rand(PD_FP32, 4, -1, 1), o = B_out(16);
  same_status(G->act(PD_K_ELU, PD_INT32, 4, one, x.d, o.d),
              C->act(PD_K_ELU, PD_INT32, 4, one, x.h, o.h), "act int32: unsupported");
  same_status(G->act(PD_K_ELU, PD_FP32, -1, one, x.d, o.d),
              C->act(PD_K_ELU, PD_FP32, -1, one, x.h, o.h), "act: a negative size");
  same_status(G->act(PD_K_ELU, PD_FP32, 4, NULL, x.d, o.d),
              C->act(PD_K_ELU, PD_FP32, 4, NULL, x.h, o.h), "act: elu without parameters");
  same_status(G->act_grad(PD_K_SOFTPLUS, PD_FP32, 4, zero, x.d, x.d, o.d),
              C->act_grad(PD_K_SOFTPLUS, PD_FP32, 4, zero, x.h, x.h, o.h),
              "act_grad: softplus with beta 0");
  B_free(&x), B_free(&o);
}

static void test_fill_cast(void) {
  const pd_dtype types[] = {PD_BOOL, PD_INT32, PD_INT64, PD_FP32, PD_FP64};
  const double values[] = {3.7, -2.5, 0, NAN, 1e20, -1e20, INFINITY};
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    for (size_t v = 0; v < PD_ARRAY_LEN(values); v++) {
      int64_t n = 1001;
      buf o = B_out((size_t)n * pd_dtype_size(dt));
      same_status(G->fill(dt, n, o.d, values[v]), C->fill(dt, n, o.h, values[v]),
                  "fill %s %g: status", dn(dt), values[v]);
      same_tol(dt, &o, n, 0, "fill %s %g", dn(dt), values[v]);
      B_free(&o);
    }
  }
  buf o = B_out(8);
  same_status(G->fill(PD_INT16, 2, o.d, 1), C->fill(PD_INT16, 2, o.h, 1),
              "fill int16: unsupported");
  B_free(&o);
  /* Every pair, with special values in the source. */
  const double specials[] = {NAN, INFINITY, -INFINITY, 1e10, -1e10, 2.5, -2.5, 0, -0.0,
                             2147483648.0, -2147483649.0, 9.3e18, -9.3e18, 1, 7};
  int64_t n = 515;
  for (size_t s = 0; s < PD_ARRAY_LEN(types); s++) {
    pd_dtype st = types[s];
    buf src = B_rand(st, n, -1e6, 1e6);
    for (size_t i = 0; i < PD_ARRAY_LEN(specials); i++)
      if (st == PD_FP32 || st == PD_FP64) kt_set(st, src.h, (int64_t)i * 7, specials[i]);
    if (st == PD_INT64) ((int64_t *)src.h)[3] = INT64_MIN, ((int64_t *)src.h)[4] = INT64_MAX;
    if (st == PD_INT32) ((int32_t *)src.h)[3] = INT32_MIN, ((int32_t *)src.h)[4] = INT32_MAX;
    B_sync_up(&src, src.h);
    for (size_t d = 0; d < PD_ARRAY_LEN(types); d++) {
      pd_dtype dt = types[d];
      buf dst = B_out((size_t)n * pd_dtype_size(dt));
      same_status(G->cast(st, src.d, dt, dst.d, n), C->cast(st, src.h, dt, dst.h, n),
                  "cast %s -> %s: status", dn(st), dn(dt));
      same_tol(dt, &dst, n, 0, "cast %s -> %s", dn(st), dn(dt));
      B_free(&dst);
    }
    B_free(&src);
  }
}

/* ---- Reductions ---- */

typedef struct rcase {
  int nd, naxes;
  int64_t dims[4];
  int axes[4];
} rcase;

static const rcase rcases[] = {
    {3, 1, {3, 4, 5}, {1}},      {3, 2, {3, 4, 5}, {0, 2}}, {3, 0, {3, 4, 5}, {0}},
    {3, 1, {3, 4, 5}, {-1}},     {1, 0, {1000}, {0}},       {2, 1, {2, 3000}, {1}},
    {2, 1, {3000, 2}, {0}},      {2, 1, {0, 3}, {1}},       {2, 1, {3, 0}, {1}},
    {3, 1, {1, 1, 1}, {1}},      {3, 1, {7, 1, 9}, {1}},    {4, 2, {2, 3, 4, 5}, {1, 3}},
    {2, 0, {1, 100000}, {0}},    {2, 1, {5000, 7}, {1}},    {0, 0, {0}, {0}},
    {2, 1, {3, 4}, {2}},         /* a bad axis */
};

static void test_reduce(void) {
  char sh[64];
  for (size_t t = 0; t < PD_ARRAY_LEN(nums); t++) {
    pd_dtype dt = nums[t];
    size_t sz = pd_dtype_size(dt);
    for (int op = 0; op < PD_K_REDOP_COUNT_; op++) {
      for (size_t c = 0; c < PD_ARRAY_LEN(rcases); c++) {
        const rcase *rc = &rcases[c];
        int ond;
        int64_t od[PD_K_MAX_DIMS];
        int64_t xn = kt_numel(rc->nd, rc->dims), on = 1;
        if (pd_k_reduce_shape(rc->nd, rc->dims, rc->naxes, rc->axes, false, &ond, od) == PD_OK)
          on = kt_numel(ond, od);
        buf x = B_rand(dt, xn, -5, 5), o = B_out((size_t)on * sz);
        pd_status sc = C->reduce(op, dt, rc->nd, rc->dims, x.h, rc->naxes, rc->axes, o.h);
        pd_status sg = G->reduce(op, dt, rc->nd, rc->dims, x.d, rc->naxes, rc->axes, o.d);
        shape_str(rc->nd, rc->dims, sh, sizeof sh);
        same_status(sg, sc, "reduce %s %s %s (%d axes): status", pd_k_redop_name(op), dn(dt), sh,
                    rc->naxes);
        if (sc == PD_OK && sg == PD_OK)
          same(dt, &o, on, "reduce %s %s %s (%d axes)", pd_k_redop_name(op), dn(dt), sh,
               rc->naxes);
        if (sc == PD_OK && (dt == PD_FP32 || dt == PD_FP64)) {
          /* The gradient, from the CPU's forward result; integer-valued x for max/min ties. */
          for (int64_t i = 0; i < xn; i++) kt_set(dt, x.h, i, floor(kt_get(dt, x.h, i)));
          B_sync_up(&x, x.h);
          C->reduce(op, dt, rc->nd, rc->dims, x.h, rc->naxes, rc->axes, o.h);
          B_sync_up(&o, o.h);
          buf d = B_rand(dt, on, -1, 1), dx = B_out((size_t)xn * sz);
          sc = C->reduce_grad(op, dt, rc->nd, rc->dims, x.h, o.h, d.h, rc->naxes, rc->axes, dx.h);
          sg = G->reduce_grad(op, dt, rc->nd, rc->dims, x.d, o.d, d.d, rc->naxes, rc->axes, dx.d);
          same_status(sg, sc, "reduce_grad %s %s %s: status", pd_k_redop_name(op), dn(dt), sh);
          same(dt, &dx, xn, "reduce_grad %s %s %s (%d axes)", pd_k_redop_name(op), dn(dt), sh,
               rc->naxes);
          B_free(&d), B_free(&dx);
        }
        B_free(&x), B_free(&o);
      }
    }
  }
}

/* ---- Softmax and cross entropy ---- */

static void test_softmax(void) {
  /* The last shape also gets +-1000 and -inf (kept out of the others: they would dominate
   * the error's normalisation). */
  const int64_t shapes[][3] = {{4, 10, 1}, {3, 1000, 1}, {2, 5, 7},  {1, 1, 1},  {0, 3, 1},
                               {64, 3, 100}, {5, 300, 3}, {2, 0, 1}, {6, 37, 2}};
  const size_t extreme = PD_ARRAY_LEN(shapes) - 1;
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++) {
      int64_t pre = shapes[s][0], n = shapes[s][1], post = shapes[s][2], cnt = pre * n * post;
      for (int lg = 0; lg < 2; lg++) {
        pd_k_softmax_fn *fc = lg ? C->log_softmax : C->softmax;
        pd_k_softmax_fn *fg = lg ? G->log_softmax : G->softmax;
        pd_k_softmax_grad_fn *gc = lg ? C->log_softmax_grad : C->softmax_grad;
        pd_k_softmax_grad_fn *gg = lg ? G->log_softmax_grad : G->softmax_grad;
        const char *name = lg ? "log_softmax" : "softmax";
        buf x = B_rand(dt, cnt, -5, 5), o = B_out((size_t)cnt * sz);
        if (s == extreme) {
          kt_set(dt, x.h, 0, 1000), kt_set(dt, x.h, 1, -1000), kt_set(dt, x.h, 3, -INFINITY);
          B_sync_up(&x, x.h);
        }
        same_status(fg(dt, pre, n, post, x.d, o.d), fc(dt, pre, n, post, x.h, o.h),
                    "%s %s [%lld, %lld, %lld]: status", name, dn(dt), (long long)pre,
                    (long long)n, (long long)post);
        same(dt, &o, cnt, "%s %s [%lld, %lld, %lld]", name, dn(dt), (long long)pre, (long long)n,
             (long long)post);
        B_sync_up(&o, o.h);
        buf d = B_rand(dt, cnt, -1, 1), dx = B_out((size_t)cnt * sz);
        same_status(gg(dt, pre, n, post, o.d, d.d, dx.d), gc(dt, pre, n, post, o.h, d.h, dx.h),
                    "%s_grad %s: status", name, dn(dt));
        same(dt, &dx, cnt, "%s_grad %s [%lld, %lld, %lld]", name, dn(dt), (long long)pre,
             (long long)n, (long long)post);
        gc(dt, pre, n, post, o.h, d.h, d.h);
        gg(dt, pre, n, post, o.d, d.d, d.d);
        same(dt, &d, cnt, "%s_grad %s in place", name, dn(dt));
        fc(dt, pre, n, post, x.h, x.h);
        fg(dt, pre, n, post, x.d, x.d);
        same(dt, &x, cnt, "%s %s in place", name, dn(dt));
        B_free(&x), B_free(&o), B_free(&d), B_free(&dx);
      }
    }
  }
}

static void test_xent(void) {
  const int64_t shapes[][2] = {{1, 1}, {8, 10}, {300, 7}, {3, 1000}, {0, 5}};
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++) {
      int64_t rows = shapes[s][0], c = shapes[s][1];
      for (int soft = 0; soft < 2; soft++) {
        int64_t ignore = c > 1 ? 1 : -100;
        buf logits = B_rand(dt, rows * c, -4, 4), prob = B_out((size_t)(rows * c) * sz);
        C->softmax(dt, rows, c, 1, logits.h, prob.h);
        B_sync_up(&prob, prob.h);
        buf label;
        if (soft) {
          label = B_out((size_t)(rows * c) * sz);
          C->softmax(dt, rows, c, 1, prob.h, label.h);  /* a distribution per row */
          B_sync_up(&label, label.h);
        } else {
          int64_t *l = kt_alloc((size_t)rows * 8 + 8);
          for (int64_t r = 0; r < rows; r++) l[r] = r % 5 == 4 ? ignore : (int64_t)(kt_rand() * c);
          label = B_copy(l, (size_t)rows * 8);
          free(l);
        }
        buf loss = B_out((size_t)rows * sz), dloss = B_rand(dt, rows, -1, 1);
        buf dp = B_out((size_t)(rows * c) * sz), sm = B_out((size_t)(rows * c) * sz);
        const char *kind = soft ? "soft" : "hard";
        same_status(G->cross_entropy(dt, rows, c, prob.d, soft, label.d, ignore, loss.d),
                    C->cross_entropy(dt, rows, c, prob.h, soft, label.h, ignore, loss.h),
                    "cross_entropy %s %s: status", kind, dn(dt));
        same(dt, &loss, rows, "cross_entropy %s %s [%lld, %lld]", kind, dn(dt), (long long)rows,
             (long long)c);
        same_status(
            G->cross_entropy_grad(dt, rows, c, prob.d, soft, label.d, ignore, dloss.d, dp.d),
            C->cross_entropy_grad(dt, rows, c, prob.h, soft, label.h, ignore, dloss.h, dp.h),
            "cross_entropy_grad %s %s: status", kind, dn(dt));
        same(dt, &dp, rows * c, "cross_entropy_grad %s %s [%lld, %lld]", kind, dn(dt),
             (long long)rows, (long long)c);
        same_status(
            G->softmax_xent(dt, rows, c, logits.d, soft, label.d, ignore, sm.d, loss.d),
            C->softmax_xent(dt, rows, c, logits.h, soft, label.h, ignore, sm.h, loss.h),
            "softmax_xent %s %s: status", kind, dn(dt));
        same(dt, &sm, rows * c, "softmax_xent %s %s [%lld, %lld]: softmax", kind, dn(dt),
             (long long)rows, (long long)c);
        same(dt, &loss, rows, "softmax_xent %s %s [%lld, %lld]: loss", kind, dn(dt),
             (long long)rows, (long long)c);
        B_sync_up(&sm, sm.h);
        same_status(
            G->softmax_xent_grad(dt, rows, c, sm.d, soft, label.d, ignore, dloss.d, dp.d),
            C->softmax_xent_grad(dt, rows, c, sm.h, soft, label.h, ignore, dloss.h, dp.h),
            "softmax_xent_grad %s %s: status", kind, dn(dt));
        same(dt, &dp, rows * c, "softmax_xent_grad %s %s [%lld, %lld]", kind, dn(dt),
             (long long)rows, (long long)c);
        C->softmax_xent_grad(dt, rows, c, sm.h, soft, label.h, ignore, dloss.h, sm.h);
        G->softmax_xent_grad(dt, rows, c, sm.d, soft, label.d, ignore, dloss.d, sm.d);
        same(dt, &sm, rows * c, "softmax_xent_grad %s %s in place", kind, dn(dt));
        B_free(&logits), B_free(&prob), B_free(&label), B_free(&loss), B_free(&dloss),
            B_free(&dp), B_free(&sm);
      }
    }
    /* A label out of range: PD_EINVAL from every hard-label entry. */
    int64_t rows = 4, c = 3, l[] = {0, 2, 3, 1};
    buf label = B_copy(l, sizeof l), p = B_rand(dt, rows * c, 0.1, 1), out = B_out(rows * c * sz);
    buf d = B_rand(dt, rows, -1, 1);
    same_status(G->cross_entropy(dt, rows, c, p.d, false, label.d, -100, out.d),
                C->cross_entropy(dt, rows, c, p.h, false, label.h, -100, out.h),
                "cross_entropy %s: a label out of range", dn(dt));
    same_status(G->cross_entropy_grad(dt, rows, c, p.d, false, label.d, -100, d.d, out.d),
                C->cross_entropy_grad(dt, rows, c, p.h, false, label.h, -100, d.h, out.h),
                "cross_entropy_grad %s: a label out of range", dn(dt));
    buf loss = B_out(rows * sz);
    same_status(G->softmax_xent(dt, rows, c, p.d, false, label.d, -100, out.d, loss.d),
                C->softmax_xent(dt, rows, c, p.h, false, label.h, -100, out.h, loss.h),
                "softmax_xent %s: a label out of range", dn(dt));
    same_status(G->softmax_xent_grad(dt, rows, c, p.d, false, label.d, -100, d.d, out.d),
                C->softmax_xent_grad(dt, rows, c, p.h, false, label.h, -100, d.h, out.h),
                "softmax_xent_grad %s: a label out of range", dn(dt));
    same_status(G->softmax_xent(dt, rows, c, p.d, false, label.d, 3, out.d, loss.d),
                C->softmax_xent(dt, rows, c, p.h, false, label.h, 3, out.h, loss.h),
                "softmax_xent %s: the same label as ignore_index is fine", dn(dt));
    same(dt, &loss, rows, "softmax_xent %s: ignored row", dn(dt));
    /* log(0) is clamped to -1e20. */
    double p01[] = {0, 1, 0.5, 0.5};
    int64_t l01[] = {0, 1};
    buf pz = B_out(4 * sz), lz = B_copy(l01, sizeof l01), lossz = B_out(2 * sz);
    for (int i = 0; i < 4; i++) kt_set(dt, pz.h, i, p01[i]);
    B_sync_up(&pz, pz.h);
    same_status(G->cross_entropy(dt, 2, 2, pz.d, false, lz.d, -100, lossz.d),
                C->cross_entropy(dt, 2, 2, pz.h, false, lz.h, -100, lossz.h),
                "cross_entropy %s of a zero probability: status", dn(dt));
    same(dt, &lossz, 2, "cross_entropy %s of a zero probability: 1e20", dn(dt));
    B_free(&pz), B_free(&lz), B_free(&lossz);
    B_free(&label), B_free(&p), B_free(&out), B_free(&d), B_free(&loss);
  }
}

/* ---- Convolution and pooling ---- */

/* The CUDA convolutions against the CPU's. In a build with cuDNN (PD_HAVE_CUDNN) the cases
 * with symmetric padding run through it (kernels/cuda/cudnn.cu) and the asymmetric ones
 * through im2col + cuBLAS (conv.cu): both paths are compared. */
static void test_conv(void) {
  const pd_k_conv2d cs[] = {
      /* n  c  h  w  oc kh kw g  sh sw pt pb pl pr dh dw */
      {2, 3, 8, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},
      {3, 4, 11, 7, 6, 3, 2, 2, 2, 1, 0, 2, 1, 0, 1, 1, 0, 0, 0},   /* groups, asymmetric pad */
      {2, 6, 9, 9, 6, 3, 3, 6, 1, 2, 1, 1, 2, 1, 2, 2, 0, 0, 0},    /* depthwise, dilation */
      {4, 5, 6, 6, 7, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},    /* 1x1: no im2col */
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},    /* all sizes 1 */
      {0, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},    /* no images */
      {9, 3, 28, 28, 8, 5, 5, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},  /* LeNet-like */
      {2, 2, 7, 5, 4, 2, 3, 2, 3, 2, 0, 1, 2, 0, 2, 1, 0, 0, 0},
      {8, 16, 32, 32, 32, 3, 3, 1, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0}, /* a ResNet stage's stride 2 */
      {4, 8, 12, 12, 8, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0},    /* groups 4, symmetric */
  };
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (size_t i = 0; i < PD_ARRAY_LEN(cs); i++) {
      pd_k_conv2d p = cs[i];
      if (pd_k_conv2d_setup(&p)) {
        ok(0, "conv case %zu sets up", i);
        continue;
      }
      int64_t xn = p.n * p.c * p.h * p.w, wn = p.oc * (p.c / p.groups) * p.kh * p.kw;
      int64_t yn = p.n * p.oc * p.oh * p.ow, img = p.c * p.h * p.w;
      int64_t coln = p.c * p.kh * p.kw * p.oh * p.ow;
      buf x = B_rand(dt, xn, -1, 1), w = B_rand(dt, wn, -1, 1), y = B_out((size_t)yn * sz);
      buf dy = B_rand(dt, yn, -1, 1), dx = B_out((size_t)xn * sz), dw = B_out((size_t)wn * sz);
      const char *d = dn(dt);
      same_status(G->conv2d(dt, &p, x.d, w.d, y.d), C->conv2d(dt, &p, x.h, w.h, y.h),
                  "conv2d %s case %zu: status", d, i);
      same(dt, &y, yn, "conv2d %s case %zu", d, i);
      same_status(G->conv2d_bwd_data(dt, &p, w.d, dy.d, dx.d),
                  C->conv2d_bwd_data(dt, &p, w.h, dy.h, dx.h), "conv2d_bwd_data %s: status", d);
      same(dt, &dx, xn, "conv2d_bwd_data %s case %zu", d, i);
      same_status(G->conv2d_bwd_filter(dt, &p, x.d, dy.d, dw.d),
                  C->conv2d_bwd_filter(dt, &p, x.h, dy.h, dw.h), "conv2d_bwd_filter %s: status", d);
      same(dt, &dw, wn, "conv2d_bwd_filter %s case %zu", d, i);
      if (p.n > 0) {  /* im2col of the first image; col2im accumulates into an image */
        buf col = B_out((size_t)coln * sz), im = B_rand(dt, img, -1, 1);
        same_status(G->im2col(dt, &p, x.d, col.d), C->im2col(dt, &p, x.h, col.h),
                    "im2col %s: status", d);
        same_bits(&col, "im2col %s case %zu", d, i);
        same_status(G->col2im(dt, &p, col.d, im.d), C->col2im(dt, &p, col.h, im.h),
                    "col2im %s: status", d);
        same_bits(&im, "col2im %s case %zu (the CPU's additions, in its order)", d, i);
        B_free(&col), B_free(&im);
      }
      B_free(&x), B_free(&w), B_free(&y), B_free(&dy), B_free(&dx), B_free(&dw);
    }
    pd_k_conv2d bad = cs[0];
    pd_k_conv2d_setup(&bad);
    bad.ow++;
    buf z = B_out(64);
    same_status(G->conv2d(dt, &bad, z.d, z.d, z.d), C->conv2d(dt, &bad, z.h, z.h, z.h),
                "conv2d %s: parameters that did not pass setup", dn(dt));
    B_free(&z);
  }
}

static void test_pool(void) {
  const pd_k_pool2d ps[] = {
      /* type n c h w kh kw sh sw pt pb pl pr ceil excl */
      {PD_K_POOL_MAX, 2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, false, true, 0, 0},
      {PD_K_POOL_MAX, 2, 3, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, false, true, 0, 0},
      {PD_K_POOL_MAX, 1, 2, 10, 11, 3, 2, 2, 3, 0, 1, 1, 0, true, true, 0, 0},
      {PD_K_POOL_AVG, 2, 3, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, false, true, 0, 0},
      {PD_K_POOL_AVG, 2, 3, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, false, false, 0, 0},
      {PD_K_POOL_AVG, 1, 2, 10, 11, 3, 2, 2, 3, 0, 1, 1, 0, true, true, 0, 0},
      {PD_K_POOL_AVG, 3, 4, 5, 5, 5, 5, 1, 1, 0, 0, 0, 0, false, true, 0, 0},  /* global */
      {PD_K_POOL_MAX, 0, 3, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0, false, true, 0, 0},
      {PD_K_POOL_MAX, 4, 16, 28, 28, 2, 2, 2, 2, 0, 0, 0, 0, false, true, 0, 0},
  };
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (size_t i = 0; i < PD_ARRAY_LEN(ps); i++) {
      pd_k_pool2d p = ps[i];
      if (pd_k_pool2d_setup(&p)) {
        ok(0, "pool case %zu sets up", i);
        continue;
      }
      int64_t xn = p.n * p.c * p.h * p.w, yn = p.n * p.c * p.oh * p.ow;
      /* Integer values: ties inside max windows (the first maximum takes the gradient). */
      buf x = B_rand(dt, xn, -3, 3), y = B_out((size_t)yn * sz);
      for (int64_t j = 0; j < xn; j++) kt_set(dt, x.h, j, floor(kt_get(dt, x.h, j)));
      B_sync_up(&x, x.h);
      same_status(G->pool2d(dt, &p, x.d, y.d), C->pool2d(dt, &p, x.h, y.h),
                  "pool2d %s case %zu: status", dn(dt), i);
      same_bits(&y, "pool2d %s case %zu", dn(dt), i);
      B_sync_up(&y, y.h);
      buf dy = B_rand(dt, yn, -1, 1), dx = B_out((size_t)xn * sz);
      same_status(G->pool2d_grad(dt, &p, x.d, y.d, dy.d, dx.d),
                  C->pool2d_grad(dt, &p, x.h, y.h, dy.h, dx.h), "pool2d_grad %s: status", dn(dt));
      same_bits(&dx, "pool2d_grad %s case %zu", dn(dt), i);
      B_free(&x), B_free(&y), B_free(&dy), B_free(&dx);
    }
  }
}

/* ---- Index kernels ---- */

static void test_argmax_top_k(void) {
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 17, 1}, {2, 5, 3}, {1, 3000, 1},
                               {40, 7, 100}, {0, 4, 2}, {2, 4, 0}};
  for (size_t t = 0; t < PD_ARRAY_LEN(nums); t++) {
    pd_dtype dt = nums[t];
    for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++) {
      int64_t pre = shapes[s][0], n = shapes[s][1], post = shapes[s][2];
      buf x = B_rand(dt, pre * n * post, -4, 4);  /* many ties */
      if ((dt == PD_FP32 || dt == PD_FP64) && pre * n * post > 10) {
        kt_set(dt, x.h, 7, NAN);
        kt_set(dt, x.h, 9, NAN);
        B_sync_up(&x, x.h);
      }
      buf o = B_out((size_t)(pre * post) * 8);
      for (int sm = 0; sm < 2; sm++) {
        same_status(G->argmax(dt, pre, n, post, sm, x.d, o.d),
                    C->argmax(dt, pre, n, post, sm, x.h, o.h), "argmax %s: status", dn(dt));
        same_bits(&o, "arg%s %s [%lld, %lld, %lld]", sm ? "min" : "max", dn(dt), (long long)pre,
                  (long long)n, (long long)post);
      }
      B_free(&x), B_free(&o);
    }
    const int64_t tk[][3] = {{5, 17, 1}, {5, 17, 3}, {5, 17, 17}, {1, 1, 1},
                             {3, 5000, 10}, {200, 33, 33}, {0, 3, 2}};
    for (size_t s = 0; s < PD_ARRAY_LEN(tk); s++) {
      int64_t rows = tk[s][0], n = tk[s][1], k = tk[s][2];
      buf x = B_rand(dt, rows * n, -4, 4);
      if ((dt == PD_FP32 || dt == PD_FP64) && rows * n > 10) {
        kt_set(dt, x.h, 2, NAN), kt_set(dt, x.h, 4, 0.0), kt_set(dt, x.h, 5, -0.0);
        kt_set(dt, x.h, 6, INFINITY), kt_set(dt, x.h, 8, -INFINITY);
        B_sync_up(&x, x.h);
      }
      buf v = B_out((size_t)(rows * k) * pd_dtype_size(dt)), ix = B_out((size_t)(rows * k) * 8);
      for (int sm = 0; sm < 2; sm++) {
        same_status(G->top_k(dt, rows, n, k, sm, x.d, v.d, (int64_t *)ix.d),
                    C->top_k(dt, rows, n, k, sm, x.h, v.h, (int64_t *)ix.h), "top_k %s: status",
                    dn(dt));
        same_bits(&ix, "top_k %s [%lld, %lld] k=%lld smallest=%d: indices", dn(dt),
                  (long long)rows, (long long)n, (long long)k, sm);
        same_tol(dt, &v, rows * k, 0, "top_k %s [%lld, %lld] k=%lld smallest=%d: values", dn(dt),
                 (long long)rows, (long long)n, (long long)k, sm);
      }
      B_free(&x), B_free(&v), B_free(&ix);
    }
    buf z = B_out(64);
    same_status(G->top_k(dt, 2, 3, 4, false, z.d, z.d, (int64_t *)z.d),
                C->top_k(dt, 2, 3, 4, false, z.h, z.h, (int64_t *)z.h), "top_k %s: k > n", dn(dt));
    B_free(&z);
  }
}

static void test_transpose_concat(void) {
  const pd_dtype types[] = {PD_BOOL, PD_FP32, PD_FP64, PD_INT32};
  const struct {
    int nd;
    int64_t dims[4];
    int perm[4];
  } ts[] = {{4, {2, 3, 4, 5}, {0, 2, 1, 3}}, {4, {2, 3, 4, 5}, {3, 2, 1, 0}},
            {4, {1, 7, 1, 3}, {3, 1, 2, 0}}, {2, {33, 65}, {1, 0}},
            {3, {2, 3, 4}, {0, 1, 2}},       {0, {0}, {0}},
            {2, {0, 5}, {1, 0}},             {2, {2, 2}, {0, 0}}};
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    for (size_t i = 0; i < PD_ARRAY_LEN(ts); i++) {
      int64_t n = kt_numel(ts[i].nd, ts[i].dims);
      buf x = B_rand(dt, n, -100, 100), o = B_out((size_t)n * pd_dtype_size(dt));
      same_status(G->transpose(dt, ts[i].nd, ts[i].dims, ts[i].perm, x.d, o.d),
                  C->transpose(dt, ts[i].nd, ts[i].dims, ts[i].perm, x.h, o.h),
                  "transpose %s case %zu: status", dn(dt), i);
      same_bits(&o, "transpose %s case %zu", dn(dt), i);
      B_free(&x), B_free(&o);
    }
    /* concat of 3 parts (one empty), then split back. */
    const int64_t pres[] = {1, 3, 0}, posts[] = {1, 5};
    for (size_t a = 0; a < PD_ARRAY_LEN(pres); a++)
      for (size_t b = 0; b < PD_ARRAY_LEN(posts); b++) {
        int64_t pre = pres[a], post = posts[b], sizes[3] = {2, 0, 3}, total = 5;
        size_t sz = pd_dtype_size(dt);
        buf p0 = B_rand(dt, pre * 2 * post, -9, 9), p1 = B_out(8),
            p2 = B_rand(dt, pre * 3 * post, -9, 9);
        buf o = B_out((size_t)(pre * total * post) * sz);
        const void *hx[3] = {p0.h, p1.h, p2.h}, *dx[3] = {p0.d, p1.d, p2.d};
        same_status(G->concat(dt, 3, dx, sizes, pre, post, o.d),
                    C->concat(dt, 3, hx, sizes, pre, post, o.h), "concat %s: status", dn(dt));
        same_bits(&o, "concat %s pre %lld post %lld", dn(dt), (long long)pre, (long long)post);
        B_sync_up(&o, o.h);
        buf s0 = B_out((size_t)(pre * 2 * post) * sz), s1 = B_out(8),
            s2 = B_out((size_t)(pre * 3 * post) * sz);
        void *ho[3] = {s0.h, s1.h, s2.h}, *dO[3] = {s0.d, s1.d, s2.d};
        same_status(G->split(dt, o.d, pre, post, 3, sizes, dO),
                    C->split(dt, o.h, pre, post, 3, sizes, ho), "split %s: status", dn(dt));
        same_bits(&s0, "split %s pre %lld post %lld: part 0", dn(dt), (long long)pre,
                  (long long)post);
        same_bits(&s2, "split %s: part 2", dn(dt));
        B_free(&p0), B_free(&p1), B_free(&p2), B_free(&o), B_free(&s0), B_free(&s1),
            B_free(&s2);
      }
  }
}

/* strided_copy: slices of a [4, 5, 6] buffer (an offset, the last dim cut), broadcast and
 * repeated views (expand_v2, tile), a part of a stacked buffer, and the scatter back into a
 * window; every dtype size. */
static void test_strided_copy(void) {
  const pd_dtype types[] = {PD_BOOL, PD_FP32, PD_FP64, PD_INT32};
  const struct {
    int nd;
    int64_t od[3], sd[3], sstr[3], off;
  } cs[] = {{3, {2, 3, 4}, {2, 3, 4}, {30, 6, 1}, 1 * 30 + 1 * 6 + 2},  /* x[1:3, 1:4, 2:6] */
            {2, {4, 1}, {4, 1}, {30, 1}, 5},                             /* a column */
            {3, {3, 4, 6}, {1, 4, 6}, {0, 6, 1}, 0},                     /* expand a [4, 6] */
            {3, {2, 8, 12}, {1, 4, 6}, {0, 6, 1}, 0},                    /* tile it [2, 2, 2] */
            {2, {4, 6}, {4, 6}, {30, 1}, 12},                            /* a stacked part */
            {1, {0}, {1}, {1}, 0},                                       /* empty */
            {0, {0}, {0}, {0}, 7}};                                      /* one element */
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    size_t sz = pd_dtype_size(dt);
    for (size_t i = 0; i < PD_ARRAY_LEN(cs); i++) {
      int64_t n = kt_numel(cs[i].nd, cs[i].od);
      buf x = B_rand(dt, 120, -100, 100), o = B_out((size_t)(n ? n : 1) * sz);
      same_status(G->strided_copy(dt, cs[i].nd, cs[i].od, cs[i].sd, cs[i].sstr, cs[i].off, x.d,
                                  o.d, false),
                  C->strided_copy(dt, cs[i].nd, cs[i].od, cs[i].sd, cs[i].sstr, cs[i].off, x.h,
                                  o.h, false),
                  "strided_copy %s case %zu: status", dn(dt), i);
      same_bits(&o, "strided_copy %s case %zu", dn(dt), i);
      B_free(&x), B_free(&o);
    }
    /* Scatter a [2, 3, 4] block into the window of case 0 of a [4, 5, 6] buffer. */
    buf d = B_rand(dt, 24, -100, 100), w = B_out(120 * sz);
    same_status(G->strided_copy(dt, 3, cs[0].od, cs[0].sd, cs[0].sstr, cs[0].off, d.d, w.d, true),
                C->strided_copy(dt, 3, cs[0].od, cs[0].sd, cs[0].sstr, cs[0].off, d.h, w.h, true),
                "strided_copy %s scatter: status", dn(dt));
    same_bits(&w, "strided_copy %s scatter into a window", dn(dt));
    B_free(&d), B_free(&w);
  }
  const int64_t od[1] = {2}, bad_sd[1] = {0}, str[1] = {1};
  buf z = B_out(16);
  same_status(G->strided_copy(PD_FP32, 1, od, bad_sd, str, 0, z.d, z.d, false),
              C->strided_copy(PD_FP32, 1, od, bad_sd, str, 0, z.h, z.h, false),
              "strided_copy: a view dim of 0");
  B_free(&z);
}

/* where: equal shapes, and cond [3], x [2, 1], y a scalar broadcast to [2, 3]; every dtype size. */
static void test_where(void) {
  const pd_dtype types[] = {PD_BOOL, PD_FP32, PD_FP64, PD_INT32};
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    size_t sz = pd_dtype_size(dt);
    const int64_t od[2] = {33, 65}, full[2] = {65, 1}, zero[2] = {0, 0};
    buf c = B_rand(PD_BOOL, 33 * 65, 0, 1), x = B_rand(dt, 33 * 65, -100, 100),
        y = B_rand(dt, 33 * 65, -100, 100), o = B_out(33 * 65 * sz);
    same_status(G->where(dt, 2, od, full, c.d, full, x.d, full, y.d, o.d),
                C->where(dt, 2, od, full, c.h, full, x.h, full, y.h, o.h), "where %s: status",
                dn(dt));
    same_bits(&o, "where %s [33, 65]", dn(dt));
    B_free(&o);
    const int64_t bd[2] = {2, 3}, cs[2] = {0, 1}, xs[2] = {1, 0};
    buf ob = B_out(6 * sz);
    same_status(G->where(dt, 2, bd, cs, c.d, xs, x.d, zero, y.d, ob.d),
                C->where(dt, 2, bd, cs, c.h, xs, x.h, zero, y.h, ob.h),
                "where %s broadcast: status", dn(dt));
    same_bits(&ob, "where %s broadcast to [2, 3]", dn(dt));
    B_free(&ob), B_free(&c), B_free(&x), B_free(&y);
  }
}

static void test_rows(void) {
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    const int64_t widths[] = {1, 7, 300, 0};
    for (size_t wi = 0; wi < PD_ARRAY_LEN(widths); wi++) {
      int64_t nrows = 11, width = widths[wi], nids = 40, pad = 3;
      int64_t *ids = kt_alloc((size_t)nids * 8);
      for (int64_t i = 0; i < nids; i++) ids[i] = (int64_t)(kt_rand() * nrows);  /* repeats */
      buf id = B_copy(ids, (size_t)nids * 8), table = B_rand(dt, nrows * width, -1, 1);
      buf o = B_out((size_t)(nids * width) * sz + 1), src = B_rand(dt, nids * width, -1, 1);
      same_status(G->gather_rows(dt, nrows, width, table.d, nids, id.d, pad, o.d),
                  C->gather_rows(dt, nrows, width, table.h, nids, id.h, pad, o.h),
                  "gather_rows %s width %lld: status", dn(dt), (long long)width);
      same_bits(&o, "gather_rows %s width %lld (padding rows zero)", dn(dt), (long long)width);
      same_status(G->scatter_add_rows(dt, nrows, width, table.d, nids, id.d, pad, src.d),
                  C->scatter_add_rows(dt, nrows, width, table.h, nids, id.h, pad, src.h),
                  "scatter_add_rows %s width %lld: status", dn(dt), (long long)width);
      same(dt, &table, nrows * width, "scatter_add_rows %s width %lld (repeated ids add up)",
           dn(dt), (long long)width);
      /* A bad id: PD_EINVAL, and scatter_add_rows leaves dst alone. */
      B_sync_up(&table, table.h);
      ids[5] = nrows;
      B_sync_up(&id, ids);
      memcpy(id.h, ids, (size_t)nids * 8);
      same_status(G->gather_rows(dt, nrows, width, table.d, nids, id.d, pad, o.d),
                  C->gather_rows(dt, nrows, width, table.h, nids, id.h, pad, o.h),
                  "gather_rows %s: an id out of range", dn(dt));
      same_status(G->scatter_add_rows(dt, nrows, width, table.d, nids, id.d, pad, src.d),
                  C->scatter_add_rows(dt, nrows, width, table.h, nids, id.h, pad, src.h),
                  "scatter_add_rows %s: an id out of range", dn(dt));
      same_bits(&table, "scatter_add_rows %s: a bad id leaves dst alone", dn(dt));
      free(ids);
      B_free(&id), B_free(&table), B_free(&o), B_free(&src);
    }
  }
}

/* ---- Random numbers ---- */

static void test_random(void) {
  const int64_t ns[] = {1, 5, 1001, 0, 4096};
  const double ranges[][2] = {{-1, 1}, {0, 1}, {1, 1.0000001}, {3, 3}};
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (size_t r = 0; r < PD_ARRAY_LEN(ranges); r++) {
      pd_k_rng rc, rg;
      pd_k_rng_init(&rc, 0x123456789abcdefull + r);
      pd_k_rng_init(&rg, 0x123456789abcdefull + r);
      rc.offset = rg.offset = 0xfffffffeull;  /* the counter crosses into its high word */
      for (size_t i = 0; i < PD_ARRAY_LEN(ns); i++) {  /* successive calls continue the stream */
        int64_t n = ns[i];
        buf o = B_out((size_t)n * sz);
        same_status(G->uniform(dt, n, o.d, ranges[r][0], ranges[r][1], &rg),
                    C->uniform(dt, n, o.h, ranges[r][0], ranges[r][1], &rc),
                    "uniform %s: status", dn(dt));
        same_bits(&o, "uniform %s [%g, %g) n=%lld", dn(dt), ranges[r][0], ranges[r][1],
                  (long long)n);
        ok(rg.offset == rc.offset, "uniform %s n=%lld: the offset advances as on the CPU",
           dn(dt), (long long)n);
        B_free(&o);
      }
      for (size_t i = 0; i < PD_ARRAY_LEN(ns); i++) {
        int64_t n = ns[i];
        buf o = B_out((size_t)n * sz);
        same_status(G->gaussian(dt, n, o.d, ranges[r][0], ranges[r][1] - ranges[r][0] + 0.5, &rg),
                    C->gaussian(dt, n, o.h, ranges[r][0], ranges[r][1] - ranges[r][0] + 0.5, &rc),
                    "gaussian %s: status", dn(dt));
        same(dt, &o, n, "gaussian %s n=%lld (device libm: within rounding)", dn(dt),
             (long long)n);
        ok(rg.offset == rc.offset, "gaussian %s: the offset advances as on the CPU", dn(dt));
        B_free(&o);
      }
    }
    pd_k_rng rc, rg;
    pd_k_rng_init(&rc, 1);
    pd_k_rng_init(&rg, 1);
    buf o = B_out(64);
    same_status(G->uniform(dt, 2, o.d, 1, 0, &rg), C->uniform(dt, 2, o.h, 1, 0, &rc),
                "uniform %s: high < low", dn(dt));
    same_status(G->gaussian(dt, 2, o.d, 0, INFINITY, &rg),
                C->gaussian(dt, 2, o.h, 0, INFINITY, &rc),
                "gaussian %s: an infinite std", dn(dt));
    B_free(&o);
  }
}

/* ---- Without a GPU ---- */

/* A build without CUDA: the device API says so (kernels/cuda/none.c). */
/* ---- batch_norm and layer_norm, with their gradients ---- */

static void test_norm(void) {
  /* [n, c, s] views: NCHW, NC (s = 1), one long channel, many channels (blocks loop). */
  static const int64_t nshapes[][3] = {{4, 3, 5}, {7, 6, 1}, {2, 2, 700}, {3, 70000, 1}};
  static const int64_t lshapes[][2] = {{5, 7}, {3, 1000}, {70000, 3}, {2048, 130}, {1, 1}};
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    pd_dtype dt = floats[t];
    size_t sz = pd_dtype_size(dt);
    for (size_t k = 0; k < PD_ARRAY_LEN(nshapes); k++) {
      int64_t n = nshapes[k][0], c = nshapes[k][1], s = nshapes[k][2], m = n * c * s;
      for (int global = 0; global < 2; global++) {
        buf x = B_rand(dt, m, -2, 3), sc = B_rand(dt, c, 0.5, 2), bi = B_rand(dt, c, -1, 1);
        buf mean = B_rand(dt, c, -1, 1), var = B_rand(dt, c, 0.5, 2), y = B_out((size_t)m * sz);
        buf sm = B_out((size_t)c * sz), sr = B_out((size_t)c * sz);
        /* Batch statistics: the running ones updated in place. */
        same_status(G->batch_norm(dt, n, c, s, x.d, sc.d, bi.d, mean.d, var.d, global, 0.9,
                                  1e-5, y.d, global ? NULL : mean.d, global ? NULL : var.d,
                                  sm.d, sr.d),
                    C->batch_norm(dt, n, c, s, x.h, sc.h, bi.h, mean.h, var.h, global, 0.9,
                                  1e-5, y.h, global ? NULL : mean.h, global ? NULL : var.h,
                                  sm.h, sr.h),
                    "batch_norm %s [%lld, %lld, %lld]%s: status", dn(dt), (long long)n,
                    (long long)c, (long long)s, global ? " global" : "");
        same(dt, &y, m, "batch_norm %s [%lld, %lld, %lld]%s: y", dn(dt), (long long)n,
             (long long)c, (long long)s, global ? " global" : "");
        same(dt, &sm, c, "batch_norm %s%s: saved mean", dn(dt), global ? " global" : "");
        same(dt, &sr, c, "batch_norm %s%s: saved inverse std", dn(dt), global ? " global" : "");
        same(dt, &mean, c, "batch_norm %s%s: running mean", dn(dt), global ? " global" : "");
        same(dt, &var, c, "batch_norm %s%s: running variance", dn(dt), global ? " global" : "");
        /* The gradient from the CPU's saved statistics, then with dx in place of dy. */
        B_sync_up(&sm, sm.h);
        B_sync_up(&sr, sr.h);
        buf dy = B_rand(dt, m, -1, 1), dx = B_out((size_t)m * sz), ds = B_out((size_t)c * sz),
            db = B_out((size_t)c * sz);
        same_status(G->batch_norm_grad(dt, n, c, s, x.d, sc.d, sm.d, sr.d, global, dy.d, dx.d,
                                       ds.d, db.d),
                    C->batch_norm_grad(dt, n, c, s, x.h, sc.h, sm.h, sr.h, global, dy.h, dx.h,
                                       ds.h, db.h),
                    "batch_norm_grad %s: status", dn(dt));
        same(dt, &dx, m, "batch_norm_grad %s [%lld, %lld, %lld]%s: dx", dn(dt), (long long)n,
             (long long)c, (long long)s, global ? " global" : "");
        same(dt, &ds, c, "batch_norm_grad %s%s: dscale", dn(dt), global ? " global" : "");
        same(dt, &db, c, "batch_norm_grad %s%s: dbias", dn(dt), global ? " global" : "");
        C->batch_norm_grad(dt, n, c, s, x.h, sc.h, sm.h, sr.h, global, dy.h, dy.h, NULL, NULL);
        G->batch_norm_grad(dt, n, c, s, x.d, sc.d, sm.d, sr.d, global, dy.d, dy.d, NULL, NULL);
        same(dt, &dy, m, "batch_norm_grad %s%s: dx in place of dy", dn(dt),
             global ? " global" : "");
        B_free(&x), B_free(&sc), B_free(&bi), B_free(&mean), B_free(&var), B_free(&y),
            B_free(&sm), B_free(&sr), B_free(&dy), B_free(&dx), B_free(&ds), B_free(&db);
      }
    }
    for (size_t k = 0; k < PD_ARRAY_LEN(lshapes); k++) {
      int64_t rows = lshapes[k][0], cols = lshapes[k][1], m = rows * cols;
      for (int affine = 0; affine < 2; affine++) {
        buf x = B_rand(dt, m, -2, 3), sc = B_rand(dt, cols, 0.5, 2), bi = B_rand(dt, cols, -1, 1);
        buf y = B_out((size_t)m * sz), mean = B_out((size_t)rows * sz),
            var = B_out((size_t)rows * sz);
        same_status(G->layer_norm(dt, rows, cols, x.d, affine ? sc.d : NULL,
                                  affine ? bi.d : NULL, 1e-5, y.d, mean.d, var.d),
                    C->layer_norm(dt, rows, cols, x.h, affine ? sc.h : NULL,
                                  affine ? bi.h : NULL, 1e-5, y.h, mean.h, var.h),
                    "layer_norm %s: status", dn(dt));
        same(dt, &y, m, "layer_norm %s [%lld, %lld]%s: y", dn(dt), (long long)rows,
             (long long)cols, affine ? " scale, bias" : "");
        same(dt, &mean, rows, "layer_norm %s%s: mean", dn(dt), affine ? " scale, bias" : "");
        same(dt, &var, rows, "layer_norm %s%s: variance", dn(dt), affine ? " scale, bias" : "");
        B_sync_up(&mean, mean.h);
        B_sync_up(&var, var.h);
        buf dy = B_rand(dt, m, -1, 1), dx = B_out((size_t)m * sz), ds = B_out((size_t)cols * sz),
            db = B_out((size_t)cols * sz);
        same_status(G->layer_norm_grad(dt, rows, cols, x.d, affine ? sc.d : NULL, mean.d, var.d,
                                       1e-5, dy.d, dx.d, ds.d, db.d),
                    C->layer_norm_grad(dt, rows, cols, x.h, affine ? sc.h : NULL, mean.h, var.h,
                                       1e-5, dy.h, dx.h, ds.h, db.h),
                    "layer_norm_grad %s: status", dn(dt));
        same(dt, &dx, m, "layer_norm_grad %s [%lld, %lld]%s: dx", dn(dt), (long long)rows,
             (long long)cols, affine ? " scale, bias" : "");
        same(dt, &ds, cols, "layer_norm_grad %s%s: dscale", dn(dt), affine ? " scale" : "");
        same(dt, &db, cols, "layer_norm_grad %s%s: dbias", dn(dt), affine ? " scale" : "");
        C->layer_norm_grad(dt, rows, cols, x.h, affine ? sc.h : NULL, mean.h, var.h, 1e-5, dy.h,
                           dy.h, ds.h, NULL);
        G->layer_norm_grad(dt, rows, cols, x.d, affine ? sc.d : NULL, mean.d, var.d, 1e-5, dy.d,
                           dy.d, ds.d, NULL);
        same(dt, &dy, m, "layer_norm_grad %s%s: dx in place of dy", dn(dt),
             affine ? " scale" : "");
        same(dt, &ds, cols, "layer_norm_grad %s%s: dscale before dx overwrites dy", dn(dt),
             affine ? " scale" : "");
        B_free(&x), B_free(&sc), B_free(&bi), B_free(&y), B_free(&mean), B_free(&var),
            B_free(&dy), B_free(&dx), B_free(&ds), B_free(&db);
      }
    }
  }
  /* The same statuses for bad arguments. */
  buf x = B_rand(PD_FP32, 8, 0, 1), o = B_out(64);
  same_status(G->batch_norm(PD_FP32, 1, 4, 1, x.d, x.d, x.d, x.d, x.d, false, 0.9, 1e-5, o.d,
                            NULL, NULL, NULL, NULL),
              C->batch_norm(PD_FP32, 1, 4, 1, x.h, x.h, x.h, x.h, x.h, false, 0.9, 1e-5, o.h,
                            NULL, NULL, NULL, NULL),
              "batch_norm: one value per channel in training is PD_EINVAL");
  same_status(G->batch_norm(PD_INT32, 2, 2, 1, x.d, x.d, x.d, x.d, x.d, true, 0.9, 1e-5, o.d,
                            NULL, NULL, NULL, NULL),
              C->batch_norm(PD_INT32, 2, 2, 1, x.h, x.h, x.h, x.h, x.h, true, 0.9, 1e-5, o.h,
                            NULL, NULL, NULL, NULL),
              "batch_norm int32: unsupported");
  same_status(G->layer_norm(PD_FP32, -1, 2, x.d, NULL, NULL, 1e-5, o.d, NULL, NULL),
              C->layer_norm(PD_FP32, -1, 2, x.h, NULL, NULL, 1e-5, o.h, NULL, NULL),
              "layer_norm: a negative size");
  same_status(G->layer_norm(PD_FP32, 2, 2, x.d, NULL, NULL, -1, o.d, NULL, NULL),
              C->layer_norm(PD_FP32, 2, 2, x.h, NULL, NULL, -1, o.h, NULL, NULL),
              "layer_norm: a negative epsilon");
  B_free(&x), B_free(&o);
}

static int test_without_cuda(const pd_error *err) {
  is_int(err->status, PD_EUNSUPPORTED, "pd_k_cuda_open: PD_EUNSUPPORTED");
  is_str(err->msg, "this pdlang was built without CUDA (configure --with-cuda)", "its message");
  ok(!pd_k_cuda_is_open() && pd_k_cuda() == NULL && pd_k_dev_alloc(16) == NULL,
     "no backend, no device memory");
  is_str(pd_k_cuda_error(), "this pdlang was built without CUDA (configure --with-cuda)",
         "pd_k_cuda_error says why");
  is_str(pd_k_cuda_device_name(), "", "no device name");
  char h[4] = {0};
  ok(pd_k_dev_upload(h, h, 4) == PD_EUNSUPPORTED && pd_k_dev_sync() == PD_EUNSUPPORTED,
     "copies: PD_EUNSUPPORTED");
  printf("ok %d # SKIP the CPU/CUDA comparison needs a CUDA build and a GPU\n", ++tap_count_);
  return tap_done();
}

/* lstm_cell, gru_cell and their gradients (the fused recurrences' gate arithmetic): n rows of
 * hidden h, n 0, 5 and 37, h 3 and 64; every output and every buffer written in place. */
static void test_rnn_cell(void) {
  const int64_t ns[] = {0, 5, 37}, hs[] = {3, 64};
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++)
    for (size_t a = 0; a < PD_ARRAY_LEN(ns); a++)
      for (size_t b = 0; b < PD_ARRAY_LEN(hs); b++) {
        pd_dtype dt = floats[t];
        int64_t n = ns[a], h = hs[b], nh = n * h;
        size_t sz = pd_dtype_size(dt);
        const char *d = dn(dt);
        buf g = B_rand(dt, 4 * nh, -3, 3), pc = B_rand(dt, nh, -1, 1), c = B_out((size_t)nh * sz);
        buf ho = B_out((size_t)nh * sz);
        same_status(G->lstm_cell(dt, n, h, g.d, pc.d, c.d, ho.d),
                    C->lstm_cell(dt, n, h, g.h, pc.h, c.h, ho.h), "lstm_cell %s: status", d);
        same(dt, &g, 4 * nh, "lstm_cell %s [%lld, %lld]: gates", d, (long long)n, (long long)h);
        same(dt, &c, nh, "lstm_cell %s [%lld, %lld]: c", d, (long long)n, (long long)h);
        same(dt, &ho, nh, "lstm_cell %s [%lld, %lld]: h", d, (long long)n, (long long)h);
        buf dh = B_rand(dt, nh, -1, 1), dc = B_rand(dt, nh, -1, 1), dg = B_out(4 * (size_t)nh * sz);
        same_status(G->lstm_cell_grad(dt, n, h, g.d, pc.d, c.d, dh.d, dc.d, dg.d),
                    C->lstm_cell_grad(dt, n, h, g.h, pc.h, c.h, dh.h, dc.h, dg.h),
                    "lstm_cell_grad %s: status", d);
        same(dt, &dc, nh, "lstm_cell_grad %s [%lld, %lld]: dc", d, (long long)n, (long long)h);
        same(dt, &dg, 4 * nh, "lstm_cell_grad %s [%lld, %lld]: dg", d, (long long)n,
             (long long)h);
        buf u = B_rand(dt, 3 * nh, -2, 2), hp = B_rand(dt, 3 * nh, -2, 2);
        buf bias = B_rand(dt, 3 * h, -1, 1), sg = B_out(4 * (size_t)nh * sz);
        buf hg = B_out((size_t)nh * sz);
        same_status(G->gru_cell(dt, n, h, u.d, hp.d, bias.d, pc.d, sg.d, hg.d),
                    C->gru_cell(dt, n, h, u.h, hp.h, bias.h, pc.h, sg.h, hg.h),
                    "gru_cell %s: status", d);
        same(dt, &sg, 4 * nh, "gru_cell %s [%lld, %lld]: gates", d, (long long)n, (long long)h);
        same(dt, &hg, nh, "gru_cell %s [%lld, %lld]: h", d, (long long)n, (long long)h);
        buf du = B_out(3 * (size_t)nh * sz), dp = B_out(3 * (size_t)nh * sz);
        same_status(G->gru_cell_grad(dt, n, h, sg.d, pc.d, dh.d, du.d, dp.d),
                    C->gru_cell_grad(dt, n, h, sg.h, pc.h, dh.h, du.h, dp.h),
                    "gru_cell_grad %s: status", d);
        same(dt, &dh, nh, "gru_cell_grad %s [%lld, %lld]: dh", d, (long long)n, (long long)h);
        same(dt, &du, 3 * nh, "gru_cell_grad %s [%lld, %lld]: du", d, (long long)n,
             (long long)h);
        same(dt, &dp, 3 * nh, "gru_cell_grad %s [%lld, %lld]: dhp", d, (long long)n,
             (long long)h);
        buf *all[] = {&g, &pc, &c, &ho, &dh, &dc, &dg, &u, &hp, &bias, &sg, &hg, &du, &dp};
        for (size_t i = 0; i < PD_ARRAY_LEN(all); i++) B_free(all[i]);
      }
  same_status(G->lstm_cell(PD_INT32, 1, 1, NULL, NULL, NULL, NULL),
              C->lstm_cell(PD_INT32, 1, 1, NULL, NULL, NULL, NULL), "lstm_cell int32: status");
  same_status(G->gru_cell_grad(PD_FP32, -1, 1, NULL, NULL, NULL, NULL, NULL),
              C->gru_cell_grad(PD_FP32, -1, 1, NULL, NULL, NULL, NULL, NULL),
              "gru_cell_grad n -1: status");
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  PD_UNUSED(argv);
  pd_error err = {0};
  if (!cmp_open(&err)) {
    int rc = 0;
    if (!pd_k_cuda_built()) {
      rc = test_without_cuda(&err);
    } else {
      /* The TAP way to skip a whole file (automake's TAP driver counts exit 77 as an error). */
      printf("1..0 # SKIP no usable GPU: %s\n", err.msg ? err.msg : "?");
    }
    pd_error_clear(&err);
    return rc;
  }
  test_device_api();
  test_gemm();
  test_gemm_lp();
  test_binary();
  test_binary_grad();
  test_compare_logical();
  test_unary();
  test_opt();
  test_unscale();
  test_act();
  test_fill_cast();
  test_reduce();
  test_softmax();
  test_xent();
  test_conv();
  test_pool();
  test_argmax_top_k();
  test_transpose_concat();
  test_rows();
  test_random();
  test_norm();
  test_strided_copy();
  test_where();
  test_rnn_cell();
  return tap_done();
}
