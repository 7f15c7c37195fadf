/* test_cuda_ops.c -- the CUDA kernels of issue 29's ops against the CPU backend's, on random
 * inputs, fp32 and fp64, with empty, size-1 and odd sizes:
 *  - the element-wise losses (sigmoid_xent, smooth_l1, huber, kldiv and their gradients;
 *    kernels/cuda/loss.cu against kernels/cpu/loss.c), rows summed by a thread and by a block,
 *    every attribute (ignore_index, normalize, sigma, the weights, delta, the reductions),
 *    gradients with some outputs absent; the GPU's sums the same bits on a second run;
 *  - dropout and its gradient from the backends' own uniform draws of one seed: outputs and
 *    masks bit for bit;
 *  - copy_rows (the fused recurrences' reordering) through gather and scatter lists, every
 *    element size, bit for bit;
 *  - adaptive pooling and its gradient (max and avg, windows that overlap, outputs larger than
 *    the input), bit for bit;
 *  - the whole-sequence LSTM and GRU and their gradients (kernels/rnn_steps.c on the GPU
 *    against kernels/cpu/rnn_seq.c), a padded batch of unequal lengths, forward and reversed;
 *  - pad and its gradient in every mode (kernels/cuda/pad.cu against kernels/cpu/pad.c).
 * The comparison of test_cuda_backend.c (cuda_cmp.h): fp32 within 1e-5, fp64 within 1e-12 of
 * the largest magnitude. The argument checks both backends share run on the CPU (and the GPU)
 * in every build; the comparison skips without a GPU. Its own program: test_cuda_backend.c is
 * near the length a file may have. */
#include "config.h"
#include "kernels/kernels.h"
#include "tests/kernels/cuda_cmp.h"

static bool have_gpu;

/* The status of one call on the CPU is `want`, and the GPU's the same. */
#define check_status(want, call_c, call_g, ...)                                   \
  do {                                                                            \
    is_int((call_c), (want), __VA_ARGS__);                                        \
    if (have_gpu) same_status((call_g), (want), __VA_ARGS__);                     \
  } while (0)

/* ---- The argument checks (kernels_int.h), the same on both backends. ---- */

static void test_checks(void) {
  const pd_k_backend *c = C, *g = G;
  char b[64] = {0};
  void *p = b;
#define BOTH(want, call, ...) check_status(want, c->call, have_gpu ? g->call : PD_OK, __VA_ARGS__)
  BOTH(PD_EUNSUPPORTED, sigmoid_xent(PD_INT32, 1, p, p, -100, false, p), "sigmoid_xent int32");
  BOTH(PD_EINVAL, sigmoid_xent(PD_FP32, -1, p, p, -100, false, p), "sigmoid_xent n -1");
  BOTH(PD_EINVAL, sigmoid_xent(PD_FP32, 2, p, NULL, -100, false, p), "sigmoid_xent no label");
  BOTH(PD_OK, sigmoid_xent(PD_FP32, 0, NULL, NULL, -100, true, NULL), "sigmoid_xent n 0");
  BOTH(PD_EINVAL, sigmoid_xent_grad(PD_FP64, 2, p, p, NULL, -100, false, p, p),
       "sigmoid_xent_grad no dout");
  BOTH(PD_EUNSUPPORTED, smooth_l1(PD_INT64, 1, 1, p, p, NULL, NULL, 1, NULL, p),
       "smooth_l1 int64");
  BOTH(PD_EINVAL, smooth_l1(PD_FP32, 2, 2, p, p, NULL, NULL, 0, NULL, p), "smooth_l1 s2 0");
  BOTH(PD_EINVAL, smooth_l1(PD_FP32, 2, 2, p, p, NULL, NULL, NAN, NULL, p), "smooth_l1 s2 NaN");
  BOTH(PD_EINVAL, smooth_l1(PD_FP32, 2, 0, NULL, NULL, NULL, NULL, 1, NULL, NULL),
       "smooth_l1 rows without out");
  BOTH(PD_EINVAL, smooth_l1(PD_FP32, INT64_MAX, 2, p, p, NULL, NULL, 1, NULL, p),
       "smooth_l1 rows * cols overflows");
  BOTH(PD_EINVAL, smooth_l1_grad(PD_FP64, 1, 1, p, p, NULL, NULL, 1, NULL, p, p, p, p),
       "smooth_l1_grad no dout");
  BOTH(PD_EINVAL, huber(PD_FP32, 3, p, p, 0, NULL, p), "huber delta 0");
  BOTH(PD_EINVAL, huber(PD_FP32, 3, p, p, -1, NULL, p), "huber delta -1");
  BOTH(PD_EINVAL, huber_grad(PD_FP32, 3, p, NULL, p, 1, p, p), "huber_grad no y");
  BOTH(PD_EINVAL, kldiv(PD_FP32, 3, p, p, true, INFINITY, p), "kldiv scale inf");
  BOTH(PD_EINVAL, kldiv(PD_FP32, 0, NULL, NULL, true, 1, NULL), "kldiv reduce without loss");
  BOTH(PD_OK, kldiv(PD_FP32, 0, NULL, NULL, false, 1, NULL), "kldiv none, n 0");
  BOTH(PD_EUNSUPPORTED, kldiv_grad(PD_BOOL, 3, p, p, p, false, 1, p, p), "kldiv_grad bool");
  BOTH(PD_EUNSUPPORTED, dropout(PD_INT32, 1, p, NULL, 0.5, 1, p, NULL), "dropout int32");
  BOTH(PD_EINVAL, dropout(PD_FP32, 1, p, NULL, 1.5, 1, p, NULL), "dropout p 1.5");
  BOTH(PD_EINVAL, dropout(PD_FP32, -1, p, NULL, 0.5, 1, p, NULL), "dropout n -1");
  BOTH(PD_EINVAL, dropout_grad(PD_FP64, 2, p, NULL, NAN, p), "dropout_grad scale NaN");
  BOTH(PD_EINVAL, dropout_grad(PD_FP64, 2, NULL, NULL, 1, p), "dropout_grad no dy");
  BOTH(PD_EINVAL, copy_rows(PD_FP32, -1, 2, p, NULL, p, NULL), "copy_rows n -1");
  BOTH(PD_EINVAL, copy_rows(PD_FP32, 2, 2, NULL, NULL, p, NULL), "copy_rows no src");
  BOTH(PD_EINVAL, copy_rows(PD_INT8, INT64_MAX, 2, p, NULL, p, NULL), "copy_rows overflows");
  BOTH(PD_OK, copy_rows(PD_FP64, 0, 5, NULL, NULL, NULL, NULL), "copy_rows n 0");
  pd_k_pool2d ap = {.type = PD_K_POOL_AVG, .n = 1, .c = 1, .h = 2, .w = 2, .oh = 1, .ow = 1};
  BOTH(PD_EUNSUPPORTED, adaptive_pool2d(PD_INT32, &ap, p, p), "adaptive_pool2d int32");
  BOTH(PD_EINVAL, adaptive_pool2d(PD_FP32, &ap, p, NULL), "adaptive_pool2d no y");
  BOTH(PD_EINVAL, adaptive_pool2d_grad(PD_FP32, &ap, p, NULL, NULL, p), "adaptive grad no dy");
  ap.oh = 0;
  BOTH(PD_EINVAL, adaptive_pool2d(PD_FP32, &ap, p, p), "adaptive_pool2d oh 0");
  ap.oh = 1;
  ap.type = (pd_k_pool)7;
  BOTH(PD_EINVAL, adaptive_pool2d(PD_FP64, &ap, p, p), "adaptive_pool2d bad type");
  const int64_t xd[2] = {2, 3}, zero[2] = {0, 0}, one[2] = {1, 1}, three[2] = {0, 3};
  const int64_t neg[2] = {0, -1}, empty[2] = {0, 3};
  BOTH(PD_EUNSUPPORTED, pad(PD_BOOL, 2, xd, one, one, PD_K_PAD_CONSTANT, 0, p, p), "pad bool");
  BOTH(PD_EUNSUPPORTED, pad_grad(PD_INT32, 2, xd, one, one, PD_K_PAD_EDGE, p, p),
       "pad_grad int32");
  BOTH(PD_EINVAL, pad(PD_FP32, 2, xd, neg, one, PD_K_PAD_CONSTANT, 0, p, p), "pad negative");
  BOTH(PD_EINVAL, pad(PD_FP32, 2, xd, zero, three, PD_K_PAD_REFLECT, 0, p, p),
       "pad reflect by the dim");
  BOTH(PD_EINVAL, pad(PD_FP32, 2, empty, one, zero, PD_K_PAD_CIRCULAR, 0, p, p),
       "pad circular of an empty dim");
  BOTH(PD_EINVAL, pad(PD_FP32, 2, xd, one, one, (pd_k_pad_mode)9, 0, p, p), "pad bad mode");
  BOTH(PD_OK, pad(PD_FP64, 2, empty, zero, zero, PD_K_PAD_EDGE, 0, NULL, NULL), "pad empty");
#undef BOTH
}

/* ---- The comparisons. ---- */

/* n random labels in [0, 1], every 5th ignore_index plus a fraction of the way from zero (or
 * all of them). */
static buf labels(pd_dtype dt, int64_t n, int64_t ignore, bool all_ignored) {
  size_t bytes = (size_t)n * pd_dtype_size(dt);
  void *h = kt_alloc(bytes);
  for (int64_t i = 0; i < n; i++)
    kt_set(dt, h, i,
           all_ignored || i % 5 == 3 ? (double)ignore + (ignore < 0 ? -0.25 : 0.25)
                                     : kt_uniform(0, 1));
  buf b = B_copy(h, bytes);
  free(h);
  return b;
}

static void test_sigmoid_xent(pd_dtype dt) {
  const int64_t ns[] = {0, 1, 7, 1000, 70001};
  size_t sz = pd_dtype_size(dt);
  for (size_t a = 0; a < PD_ARRAY_LEN(ns); a++)
    for (int mode = 0; mode < 4; mode++) {
      int64_t n = ns[a], ignore = mode == 2 ? 3 : -100;
      bool normalize = mode >= 1, all = mode == 3;
      const char *d = dn(dt);
      buf x = B_rand(dt, n, -8, 8), z = labels(dt, n, ignore, all), out = B_out(n * sz);
      same_status(G->sigmoid_xent(dt, n, x.d, z.d, ignore, normalize, out.d),
                  C->sigmoid_xent(dt, n, x.h, z.h, ignore, normalize, out.h),
                  "sigmoid_xent %s n %lld mode %d: status", d, (long long)n, mode);
      same(dt, &out, n, "sigmoid_xent %s n %lld mode %d: out", d, (long long)n, mode);
      buf dout = B_rand(dt, n, -1, 1), dx = B_out(n * sz), dl = B_out(n * sz);
      same_status(G->sigmoid_xent_grad(dt, n, x.d, z.d, dout.d, ignore, normalize, dx.d,
                                       mode == 1 ? NULL : dl.d),
                  C->sigmoid_xent_grad(dt, n, x.h, z.h, dout.h, ignore, normalize, dx.h,
                                       mode == 1 ? NULL : dl.h),
                  "sigmoid_xent_grad %s: status", d);
      same(dt, &dx, n, "sigmoid_xent_grad %s n %lld mode %d: dx", d, (long long)n, mode);
      same_bits(&dl, "sigmoid_xent_grad %s n %lld mode %d: dlabel (junk when absent)", d,
                (long long)n, mode);
      buf *all_b[] = {&x, &z, &out, &dout, &dx, &dl};
      for (size_t i = 0; i < PD_ARRAY_LEN(all_b); i++) B_free(all_b[i]);
    }
}

static void test_smooth_l1(pd_dtype dt) {
  const struct {
    int64_t rows, cols;
  } cs[] = {{0, 3}, {5, 0}, {1, 1}, {13, 4}, {7, 65}, {3, 1000}, {1000, 3}, {2, 70001}};
  const double s2s[] = {1, 4, 0.25};
  size_t sz = pd_dtype_size(dt);
  for (size_t a = 0; a < PD_ARRAY_LEN(cs); a++)
    for (int w = 0; w < 3; w++) {
      int64_t rows = cs[a].rows, cols = cs[a].cols, n = rows * cols;
      double s2 = s2s[w];
      const char *d = dn(dt);
      buf x = B_rand(dt, n, -3, 3), y = B_rand(dt, n, -3, 3);
      buf iw = B_rand(dt, n, 0, 2), ow = B_rand(dt, n, 0, 2);
      const void *iwd = w >= 1 ? iw.d : NULL, *iwh = w >= 1 ? iw.h : NULL;
      const void *owd = w == 2 ? ow.d : NULL, *owh = w == 2 ? ow.h : NULL;
      buf diff = B_out(n * sz), out = B_out(rows * sz);
      void *diffd = w == 1 ? NULL : diff.d, *diffh = w == 1 ? NULL : diff.h;
      same_status(G->smooth_l1(dt, rows, cols, x.d, y.d, iwd, owd, s2, diffd, out.d),
                  C->smooth_l1(dt, rows, cols, x.h, y.h, iwh, owh, s2, diffh, out.h),
                  "smooth_l1 %s: status", d);
      same(dt, &out, rows, "smooth_l1 %s [%lld, %lld] s2 %g weights %d: out", d,
           (long long)rows, (long long)cols, s2, w);
      same(dt, &diff, n, "smooth_l1 %s [%lld, %lld] s2 %g weights %d: diff", d,
           (long long)rows, (long long)cols, s2, w);
      buf dout = B_rand(dt, rows, -1, 1), g[4];
      for (int k = 0; k < 4; k++) g[k] = B_out(n * sz);
      void *gd[4], *gh[4];
      for (int k = 0; k < 4; k++) {
        bool absent = (w == 1 && k == 1) || (w == 0 && k >= 2);
        gd[k] = absent ? NULL : g[k].d;
        gh[k] = absent ? NULL : g[k].h;
      }
      same_status(G->smooth_l1_grad(dt, rows, cols, x.d, y.d, iwd, owd, s2, dout.d, gd[0],
                                    gd[1], gd[2], gd[3]),
                  C->smooth_l1_grad(dt, rows, cols, x.h, y.h, iwh, owh, s2, dout.h, gh[0],
                                    gh[1], gh[2], gh[3]),
                  "smooth_l1_grad %s: status", d);
      static const char *gn[] = {"dx", "dy", "dinside", "doutside"};
      for (int k = 0; k < 4; k++)
        same(dt, &g[k], n, "smooth_l1_grad %s [%lld, %lld] s2 %g weights %d: %s", d,
             (long long)rows, (long long)cols, s2, w, gn[k]);
      buf *all_b[] = {&x, &y, &iw, &ow, &diff, &out, &dout, &g[0], &g[1], &g[2], &g[3]};
      for (size_t i = 0; i < PD_ARRAY_LEN(all_b); i++) B_free(all_b[i]);
    }
}

static void test_huber(pd_dtype dt) {
  const int64_t ns[] = {0, 1, 7, 1000, 70001};
  const double deltas[] = {0.5, 1, 3};
  size_t sz = pd_dtype_size(dt);
  for (size_t a = 0; a < PD_ARRAY_LEN(ns); a++)
    for (size_t k = 0; k < PD_ARRAY_LEN(deltas); k++) {
      int64_t n = ns[a];
      double delta = deltas[k];
      const char *d = dn(dt);
      buf x = B_rand(dt, n, -4, 4), y = B_rand(dt, n, -4, 4);
      buf res = B_out(n * sz), out = B_out(n * sz);
      same_status(G->huber(dt, n, x.d, y.d, delta, k == 2 ? NULL : res.d, out.d),
                  C->huber(dt, n, x.h, y.h, delta, k == 2 ? NULL : res.h, out.h),
                  "huber %s: status", d);
      same(dt, &out, n, "huber %s n %lld delta %g: out", d, (long long)n, delta);
      same(dt, &res, n, "huber %s n %lld delta %g: residual", d, (long long)n, delta);
      buf dout = B_rand(dt, n, -1, 1), dx = B_out(n * sz), dy = B_out(n * sz);
      same_status(G->huber_grad(dt, n, x.d, y.d, dout.d, delta, k == 1 ? NULL : dx.d, dy.d),
                  C->huber_grad(dt, n, x.h, y.h, dout.h, delta, k == 1 ? NULL : dx.h, dy.h),
                  "huber_grad %s: status", d);
      same(dt, &dx, n, "huber_grad %s n %lld delta %g: dx", d, (long long)n, delta);
      same(dt, &dy, n, "huber_grad %s n %lld delta %g: dy", d, (long long)n, delta);
      buf *all_b[] = {&x, &y, &res, &out, &dout, &dx, &dy};
      for (size_t i = 0; i < PD_ARRAY_LEN(all_b); i++) B_free(all_b[i]);
    }
}

static void test_kldiv(pd_dtype dt) {
  const int64_t ns[] = {0, 1, 7, 1000, 70001, 300007};
  size_t sz = pd_dtype_size(dt);
  for (size_t a = 0; a < PD_ARRAY_LEN(ns); a++)
    for (int r = 0; r < 3; r++) {
      int64_t n = ns[a];
      bool reduce = r > 0;
      double scale = r == 2 && n ? 1.0 / (double)n : 1;
      const char *d = dn(dt);
      /* Targets <= 0 (a fifth of them) contribute nothing. */
      buf x = B_rand(dt, n, -2, 2), t = B_rand(dt, n, -0.25, 1);
      int64_t nout = reduce ? 1 : n;
      buf loss = B_out(nout * sz);
      same_status(G->kldiv(dt, n, x.d, t.d, reduce, scale, loss.d),
                  C->kldiv(dt, n, x.h, t.h, reduce, scale, loss.h), "kldiv %s: status", d);
      same(dt, &loss, nout, "kldiv %s n %lld reduce %d: loss", d, (long long)n, r);
      if (reduce) {
        void *first = download(&loss);
        same_status(G->kldiv(dt, n, x.d, t.d, reduce, scale, loss.d), PD_OK,
                    "kldiv %s again: status", d);
        void *second = download(&loss);
        ok(memcmp(first, second, sz) == 0, "kldiv %s n %lld reduce %d: the same bits again", d,
           (long long)n, r);
        free(first);
        free(second);
      }
      buf dl = B_rand(dt, nout, -1, 1), dx = B_out(n * sz), dtg = B_out(n * sz);
      same_status(G->kldiv_grad(dt, n, x.d, t.d, dl.d, reduce, scale, dx.d, r == 1 ? NULL : dtg.d),
                  C->kldiv_grad(dt, n, x.h, t.h, dl.h, reduce, scale, dx.h, r == 1 ? NULL : dtg.h),
                  "kldiv_grad %s: status", d);
      same(dt, &dx, n, "kldiv_grad %s n %lld reduce %d: dx", d, (long long)n, r);
      same(dt, &dtg, n, "kldiv_grad %s n %lld reduce %d: dtarget", d, (long long)n, r);
      buf *all_b[] = {&x, &t, &loss, &dl, &dx, &dtg};
      for (size_t i = 0; i < PD_ARRAY_LEN(all_b); i++) B_free(all_b[i]);
    }
}

/* dropout with draws of one seed on each backend (uniform's numbers are the same bits), and
 * without draws; its gradient from the forward's mask and without one. */
static void test_dropout(pd_dtype dt) {
  const int64_t ns[] = {0, 1, 7, 1000, 70001};
  const struct {
    double p, scale;
    bool draws;
  } cs[] = {{0.1, 1 / 0.9, true}, {0.5, 1, true}, {0.9, 10, true},
            {0, 1, false},        {1, 0, false},  {0, 0.7, false}};
  size_t sz = pd_dtype_size(dt);
  for (size_t a = 0; a < PD_ARRAY_LEN(ns); a++)
    for (size_t k = 0; k < PD_ARRAY_LEN(cs); k++) {
      int64_t n = ns[a];
      double p = cs[k].p, scale = cs[k].scale;
      const char *d = dn(dt);
      buf x = B_rand(dt, n, -3, 3), u = B_out(n * sizeof(float));
      buf out = B_out(n * sz), mask = B_out((size_t)n), dy = B_rand(dt, n, -1, 1);
      buf dx = B_out(n * sz);
      if (cs[k].draws) {
        pd_k_rng rc, rg;
        pd_k_rng_init(&rc, 1234 + a);
        pd_k_rng_init(&rg, 1234 + a);
        same_status(G->uniform(PD_FP32, n, u.d, 0, 1, &rg), C->uniform(PD_FP32, n, u.h, 0, 1, &rc),
                    "dropout draws %s n %lld: status", d, (long long)n);
      }
      const float *ud = cs[k].draws ? u.d : NULL, *uh = cs[k].draws ? u.h : NULL;
      uint8_t *md = k == 1 ? NULL : mask.d, *mh = k == 1 ? NULL : mask.h;
      same_status(G->dropout(dt, n, x.d, ud, p, scale, out.d, md),
                  C->dropout(dt, n, x.h, uh, p, scale, out.h, mh), "dropout %s: status", d);
      same_bits(&out, "dropout %s n %lld p %g draws %d: out", d, (long long)n, p, cs[k].draws);
      same_bits(&mask, "dropout %s n %lld p %g draws %d: mask", d, (long long)n, p,
                cs[k].draws);
      const uint8_t *gm = k == 1 ? NULL : mask.d, *hm = k == 1 ? NULL : mask.h;
      same_status(G->dropout_grad(dt, n, dy.d, gm, scale, dx.d),
                  C->dropout_grad(dt, n, dy.h, hm, scale, dx.h), "dropout_grad %s: status", d);
      same_bits(&dx, "dropout_grad %s n %lld p %g mask %d: dx", d, (long long)n, p, k != 1);
      /* In place: out over x. */
      same_status(G->dropout(dt, n, x.d, ud, p, scale, x.d, NULL),
                  C->dropout(dt, n, x.h, uh, p, scale, x.h, NULL), "dropout %s in place", d);
      same_bits(&x, "dropout %s n %lld p %g in place: out", d, (long long)n, p);
      buf *all_b[] = {&x, &u, &out, &mask, &dy, &dx};
      for (size_t i = 0; i < PD_ARRAY_LEN(all_b); i++) B_free(all_b[i]);
    }
}

/* copy_rows: a gather through a permutation, a scatter through it, a gather of one row to
 * every row (a shared initial state), for element sizes 1, 2, 4 and 8. */
static void test_copy_rows(void) {
  const pd_dtype dts[] = {PD_UINT8, PD_INT16, PD_FP32, PD_FP64};
  const int64_t ns[] = {0, 1, 37, 5000}, widths[] = {1, 3, 64};
  for (size_t t = 0; t < PD_ARRAY_LEN(dts); t++)
    for (size_t a = 0; a < PD_ARRAY_LEN(ns); a++)
      for (size_t b = 0; b < PD_ARRAY_LEN(widths); b++) {
        pd_dtype dt = dts[t];
        int64_t n = ns[a], w = widths[b];
        size_t bytes = (size_t)(n * w) * pd_dtype_size(dt);
        uint8_t *raw = kt_alloc(bytes);
        for (size_t i = 0; i < bytes; i++) raw[i] = (uint8_t)(kt_rand() * 256);
        int64_t *perm = kt_alloc(sizeof *perm * (size_t)(n + 1)), *zeros;
        for (int64_t i = 0; i < n; i++) perm[i] = i;
        for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
          int64_t j = (int64_t)(kt_rand() * (double)(i + 1)), v = perm[i];
          perm[i] = perm[j];
          perm[j] = v;
        }
        zeros = kt_alloc(sizeof *zeros * (size_t)(n + 1));
        buf src = B_copy(raw, bytes), ids = B_copy(perm, sizeof *perm * (size_t)n);
        buf zid = B_copy(zeros, sizeof *zeros * (size_t)n);
        buf g = B_out(bytes), sc = B_out(bytes), one = B_out(bytes);
        const char *d = dn(dt);
        same_status(G->copy_rows(dt, n, w, src.d, ids.d, g.d, NULL),
                    C->copy_rows(dt, n, w, src.h, ids.h, g.h, NULL), "copy_rows %s gather", d);
        same_bits(&g, "copy_rows %s [%lld, %lld]: gather", d, (long long)n, (long long)w);
        same_status(G->copy_rows(dt, n, w, src.d, NULL, sc.d, ids.d),
                    C->copy_rows(dt, n, w, src.h, NULL, sc.h, ids.h), "copy_rows %s scatter", d);
        same_bits(&sc, "copy_rows %s [%lld, %lld]: scatter", d, (long long)n, (long long)w);
        same_status(G->copy_rows(dt, n, w, src.d, zid.d, one.d, NULL),
                    C->copy_rows(dt, n, w, src.h, zid.h, one.h, NULL), "copy_rows %s row 0", d);
        same_bits(&one, "copy_rows %s [%lld, %lld]: row 0 everywhere", d, (long long)n,
                  (long long)w);
        buf *all_b[] = {&src, &ids, &zid, &g, &sc, &one};
        for (size_t i = 0; i < PD_ARRAY_LEN(all_b); i++) B_free(all_b[i]);
        free(raw);
        free(perm);
        free(zeros);
      }
}

/* Zero-filled buffers (the rows of a padded batch that no step writes stay 0 on both sides). */
static buf B_zero(size_t bytes) {
  void *h = kt_alloc(bytes);
  memset(h, 0, bytes);
  buf b = B_copy(h, bytes);
  free(h);
  return b;
}

/* The whole-sequence recurrences (the CUDA backend composes them of its GEMM and cell kernels a
 * step at a time, kernels/rnn_steps.c) against the CPU's kernels: a padded batch (more rows
 * than steps take, as the rnn op hands them) of five sequences of lengths 7, 5, 5, 2 and 0,
 * forward and reversed, hidden 3 and 64; the gradients with and without dcell. */
static void test_rnn_seq(pd_dtype dt) {
  enum { NS = 5, MAXT = 7, ROWS = NS * MAXT };
  const int64_t lens[NS] = {7, 5, 5, 2, 0}, hs[2] = {3, 64};
  size_t sz = pd_dtype_size(dt);
  for (int hi = 0; hi < 2; hi++)
    for (int rev = 0; rev < 2; rev++) {
      int64_t H = hs[hi], koff[MAXT + 1], row[ROWS], i = 0;
      for (int64_t k = 0; k < MAXT; k++) {
        koff[k] = i;
        for (int64_t r = 0; r < NS && lens[r] > k; r++)
          row[i++] = (rev ? lens[r] - 1 - k : k) * NS + r;
      }
      koff[MAXT] = i;
      pd_k_rnn_seq s = {dt, H, NS, MAXT, koff, row, ROWS, PD_FP32};
      const char *d = dn(dt);
      char what[64];
      snprintf(what, sizeof what, "%s H %lld%s", d, (long long)H, rev ? " reversed" : "");
      for (int lstm = 0; lstm < 2; lstm++) {
        int64_t ng = lstm ? 4 : 3; /* gates */
        buf x = B_rand(dt, ROWS * ng * H, -1, 1), w = B_rand(dt, H * ng * H, -0.5, 0.5);
        buf b = B_rand(dt, ng * H, -0.5, 0.5), h0 = B_rand(dt, NS * H, -1, 1);
        buf c0 = B_rand(dt, NS * H, -1, 1), hid = B_zero((size_t)(ROWS * H) * sz);
        buf cel = B_zero((size_t)(ROWS * H) * sz), gat = B_zero((size_t)(ROWS * 4 * H) * sz);
        buf dh = B_rand(dt, ROWS * H, -1, 1), dc = B_rand(dt, ROWS * H, -1, 1);
        buf dx = B_zero((size_t)(ROWS * ng * H) * sz), dw = B_zero((size_t)(H * ng * H) * sz);
        buf db = B_zero((size_t)(ng * H) * sz), dh0 = B_zero((size_t)(NS * H) * sz);
        buf dc0 = B_zero((size_t)(NS * H) * sz);
        const char *name = lstm ? "lstm_seq" : "gru_seq";
        if (lstm)
          same_status(G->lstm_seq(&s, x.d, w.d, h0.d, c0.d, hid.d, cel.d, gat.d),
                      C->lstm_seq(&s, x.h, w.h, h0.h, c0.h, hid.h, cel.h, gat.h),
                      "%s %s: status", name, what);
        else
          same_status(G->gru_seq(&s, x.d, w.d, b.d, h0.d, hid.d, gat.d),
                      C->gru_seq(&s, x.h, w.h, b.h, h0.h, hid.h, gat.h), "%s %s: status", name,
                      what);
        same(dt, &hid, ROWS * H, "%s %s: hidden", name, what);
        if (lstm) same(dt, &cel, ROWS * H, "%s %s: cell", name, what);
        same(dt, &gat, ROWS * 4 * H, "%s %s: gates", name, what);
        for (int with_dc = 0; with_dc < (lstm ? 2 : 1); with_dc++) {
          if (lstm)
            same_status(G->lstm_seq_grad(&s, w.d, h0.d, c0.d, hid.d, cel.d, gat.d, dh.d,
                                         with_dc ? dc.d : NULL, dx.d, dw.d, dh0.d, dc0.d),
                        C->lstm_seq_grad(&s, w.h, h0.h, c0.h, hid.h, cel.h, gat.h, dh.h,
                                         with_dc ? dc.h : NULL, dx.h, dw.h, dh0.h, dc0.h),
                        "%s_grad %s: status", name, what);
          else
            same_status(G->gru_seq_grad(&s, w.d, h0.d, hid.d, gat.d, dh.d, dx.d, dw.d, db.d,
                                        dh0.d),
                        C->gru_seq_grad(&s, w.h, h0.h, hid.h, gat.h, dh.h, dx.h, dw.h, db.h,
                                        dh0.h),
                        "%s_grad %s: status", name, what);
          const char *dcs = with_dc ? ", dcell" : "";
          same(dt, &dx, ROWS * ng * H, "%s_grad %s%s: dx", name, what, dcs);
          same(dt, &dw, H * ng * H, "%s_grad %s%s: dw", name, what, dcs);
          same(dt, &dh0, NS * H, "%s_grad %s%s: dh0", name, what, dcs);
          if (lstm) same(dt, &dc0, NS * H, "%s_grad %s%s: dc0", name, what, dcs);
          else same(dt, &db, ng * H, "%s_grad %s: db", name, what);
        }
        buf *all_b[] = {&x, &w, &b, &h0, &c0, &hid, &cel, &gat, &dh, &dc, &dx, &dw, &db, &dh0,
                        &dc0};
        for (size_t k = 0; k < PD_ARRAY_LEN(all_b); k++) B_free(all_b[k]);
      }
    }
}

/* Adaptive pooling: output sizes that divide the input, that do not (overlapping windows) and
 * that exceed it (windows repeat), one window per plane; max with ties (rounded inputs). */
static void test_adaptive_pool(pd_dtype dt) {
  const struct {
    int64_t n, c, h, w, oh, ow;
  } cs[] = {{2, 3, 8, 8, 4, 4}, {1, 2, 7, 5, 3, 2}, {2, 1, 3, 4, 7, 9},
            {3, 5, 6, 6, 1, 1}, {1, 1, 1, 1, 1, 1}, {0, 4, 5, 5, 2, 2}};
  size_t sz = pd_dtype_size(dt);
  for (size_t a = 0; a < PD_ARRAY_LEN(cs); a++)
    for (int t = 0; t < 2; t++) {
      pd_k_pool2d p = {.type = t ? PD_K_POOL_MAX : PD_K_POOL_AVG, .n = cs[a].n, .c = cs[a].c,
                       .h = cs[a].h, .w = cs[a].w, .oh = cs[a].oh, .ow = cs[a].ow};
      int64_t nin = p.n * p.c * p.h * p.w, nout = p.n * p.c * p.oh * p.ow;
      const char *d = dn(dt);
      /* Inputs rounded to quarters: max pooling meets ties. */
      void *h = kt_alloc((size_t)nin * sz);
      for (int64_t i = 0; i < nin; i++) kt_set(dt, h, i, floor(kt_uniform(-8, 8)) / 4);
      buf x = B_copy(h, (size_t)nin * sz), y = B_out((size_t)nout * sz);
      buf dy = B_rand(dt, nout, -1, 1), dx = B_out((size_t)nin * sz);
      free(h);
      same_status(G->adaptive_pool2d(dt, &p, x.d, y.d), C->adaptive_pool2d(dt, &p, x.h, y.h),
                  "adaptive_pool2d %s: status", d);
      same_bits(&y, "adaptive_pool2d %s %s [%lld, %lld, %lld, %lld] -> [%lld, %lld]", d,
                t ? "max" : "avg", (long long)p.n, (long long)p.c, (long long)p.h,
                (long long)p.w, (long long)p.oh, (long long)p.ow);
      same_status(G->adaptive_pool2d_grad(dt, &p, x.d, NULL, dy.d, dx.d),
                  C->adaptive_pool2d_grad(dt, &p, x.h, NULL, dy.h, dx.h),
                  "adaptive_pool2d_grad %s: status", d);
      same_bits(&dx, "adaptive_pool2d_grad %s %s [%lld, %lld, %lld, %lld] -> [%lld, %lld]", d,
                t ? "max" : "avg", (long long)p.n, (long long)p.c, (long long)p.h,
                (long long)p.w, (long long)p.oh, (long long)p.ow);
      buf *all_b[] = {&x, &y, &dy, &dx};
      for (size_t i = 0; i < PD_ARRAY_LEN(all_b); i++) B_free(all_b[i]);
    }
}

/* pad in every mode, on shapes with one dim, odd sizes, several padded dims and circular
 * padding past a period: the forward bit for bit (every numeric dtype), the gradient (fp32,
 * fp64) within the tolerance (the GPU adds a border's repeats in any order). */
static void test_pad(void) {
  const struct {
    int nd;
    int64_t xd[5], b[5], a[5];
  } cs[] = {{1, {5}, {2}, {3}},
            {2, {3, 4}, {1, 2}, {2, 3}},
            {4, {2, 3, 3, 5}, {0, 0, 2, 4}, {0, 0, 1, 3}},
            {5, {1, 2, 2, 3, 2}, {0, 1, 1, 2, 0}, {0, 0, 1, 1, 0}},
            {3, {2, 1, 2}, {0, 0, 1}, {0, 0, 1}}};
  for (size_t c = 0; c < PD_ARRAY_LEN(cs); c++)
    for (int m = 0; m < PD_K_PAD_COUNT_; m++) {
      int nd = cs[c].nd;
      int64_t nx = 1, no = 1;
      bool fits = true;
      for (int k = 0; k < nd; k++) {
        nx *= cs[c].xd[k];
        no *= cs[c].xd[k] + cs[c].b[k] + cs[c].a[k];
        fits = fits && (m != PD_K_PAD_REFLECT || (cs[c].b[k] < cs[c].xd[k] &&
                                                  cs[c].a[k] < cs[c].xd[k]));
      }
      pd_k_pad_mode mode = (pd_k_pad_mode)m;
      for (size_t t = 0; fits && t < PD_ARRAY_LEN(nums); t++) {
        pd_dtype dt = nums[t];
        size_t sz = pd_dtype_size(dt);
        buf x = B_rand(dt, nx, -5, 5), y = B_out((size_t)no * sz);
        same_status(G->pad(dt, nd, cs[c].xd, cs[c].b, cs[c].a, mode, 1.5, x.d, y.d),
                    C->pad(dt, nd, cs[c].xd, cs[c].b, cs[c].a, mode, 1.5, x.h, y.h),
                    "pad case %zu mode %d %s: status", c, m, dn(dt));
        same_bits(&y, "pad case %zu mode %d %s", c, m, dn(dt));
        if (dt == PD_FP32 || dt == PD_FP64) {
          buf dy = B_rand(dt, no, -1, 1), dx = B_out((size_t)nx * sz);
          same_status(G->pad_grad(dt, nd, cs[c].xd, cs[c].b, cs[c].a, mode, dy.d, dx.d),
                      C->pad_grad(dt, nd, cs[c].xd, cs[c].b, cs[c].a, mode, dy.h, dx.h),
                      "pad_grad case %zu mode %d %s: status", c, m, dn(dt));
          same(dt, &dx, nx, "pad_grad case %zu mode %d %s", c, m, dn(dt));
          B_free(&dy);
          B_free(&dx);
        }
        B_free(&x);
        B_free(&y);
      }
    }
}

/* sigmoid_xent's count is a sum on the GPU too: normalised results the same bits twice. */
static void test_repeat(void) {
  int64_t n = 300007;
  buf x = B_rand(PD_FP64, n, -8, 8), z = labels(PD_FP64, n, -100, false);
  buf o = B_out(n * sizeof(double));
  ok(G->sigmoid_xent(PD_FP64, n, x.d, z.d, -100, true, o.d) == PD_OK, "sigmoid_xent: runs");
  void *first = download(&o);
  ok(G->sigmoid_xent(PD_FP64, n, x.d, z.d, -100, true, o.d) == PD_OK, "sigmoid_xent: again");
  void *second = download(&o);
  ok(memcmp(first, second, o.bytes) == 0, "sigmoid_xent normalised: the same bits again");
  free(first);
  free(second);
  buf *all_b[] = {&x, &z, &o};
  for (size_t i = 0; i < PD_ARRAY_LEN(all_b); i++) B_free(all_b[i]);
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  PD_UNUSED(argv);
  pd_error err = {0};
  have_gpu = cmp_open(&err);
  test_checks();
  if (!have_gpu) {
    char why[300];
    snprintf(why, sizeof why, "the CPU/CUDA comparison needs a GPU: %s",
             err.msg ? err.msg : "?");
    tap_skip(why);
    pd_error_clear(&err);
    return tap_done();
  }
  for (size_t t = 0; t < PD_ARRAY_LEN(floats); t++) {
    test_sigmoid_xent(floats[t]);
    test_smooth_l1(floats[t]);
    test_huber(floats[t]);
    test_kldiv(floats[t]);
    test_dropout(floats[t]);
    test_adaptive_pool(floats[t]);
    test_rnn_seq(floats[t]);
  }
  test_repeat();
  test_copy_rows();
  test_pad();
  return tap_done();
}
