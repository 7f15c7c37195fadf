/* test_index.c -- argmax, top_k, transpose, concat/split, embedding gather/scatter-add against
 * naive references; the Philox generator (known answers, reproducibility, moments); and the
 * process set-up (FTZ/DAZ, the thread count, aligned host memory). */
#include "config.h"

#include <sched.h>

#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"
#include "tests/kernels/kt.h"

static const pd_dtype all4[] = {PD_FP32, PD_FP64, PD_INT32, PD_INT64};

static void test_argmax(void) {
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 17, 1}, {2, 5, 3}, {1, 64, 7}};
  for (size_t t = 0; t < PD_ARRAY_LEN(all4); t++) {
    pd_dtype dt = all4[t];
    for (int sm = 0; sm < 2; sm++) {
      bool good = true;
      for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++) {
        int64_t pre = shapes[s][0], n = shapes[s][1], post = shapes[s][2];
        void *x = kt_random(dt, pre * n * post, -5, 5);  /* ints: many ties */
        int64_t *got = kt_alloc(pre * post * 8);
        good &= K->argmax(dt, pre, n, post, sm, x, got) == PD_OK;
        for (int64_t i = 0; i < pre; i++)
          for (int64_t k = 0; k < post; k++) {
            int64_t best = 0;
            for (int64_t j = 1; j < n; j++) {
              double v = kt_get(dt, x, (i * n + j) * post + k);
              double b = kt_get(dt, x, (i * n + best) * post + k);
              if (sm ? v < b : v > b) best = j;
            }
            good &= got[i * post + k] == best;
          }
        free(x), free(got);
      }
      ok(good, "arg%s %s matches the naive loop (the first one wins)", sm ? "min" : "max",
         pd_dtype_name(dt));
    }
  }
  float x[4] = {1, NAN, 3, NAN}, y[4] = {NAN, 2, NAN, 2}, z[2] = {NAN, NAN};
  int64_t i;
  K->argmax(PD_FP32, 1, 4, 1, false, x, &i);
  is_int(i, 1, "argmax: the first NaN counts as the maximum");
  K->argmax(PD_FP32, 1, 4, 1, true, y, &i);
  is_int(i, 1, "argmin: NaN counts as the largest, never the minimum of numbers");
  K->argmax(PD_FP32, 1, 2, 1, true, z, &i);
  is_int(i, 0, "argmin of NaNs only: the first");
}

/* Reference order of top_k: larger first (smallest: smaller first), NaN largest, ties by
 * index. */
static bool before(double va, int64_t ia, double vb, int64_t ib, bool sm) {
  if (isnan(va) || isnan(vb)) return isnan(va) && isnan(vb) ? ia < ib : sm ? isnan(vb) : isnan(va);
  return va != vb ? (sm ? va < vb : va > vb) : ia < ib;
}

static void test_top_k(void) {
  for (size_t t = 0; t < PD_ARRAY_LEN(all4); t++) {
    pd_dtype dt = all4[t];
    const int64_t ks[] = {1, 3, 17};
    for (int sm = 0; sm < 2; sm++) {
      bool good = true;
      for (size_t q = 0; q < PD_ARRAY_LEN(ks); q++) {
        int64_t rows = 5, n = 17, k = ks[q];
        void *x = kt_random(dt, rows * n, -4, 4);
        if (dt == PD_FP32) kt_set(dt, x, 5, NAN);
        void *v = kt_alloc(rows * k * 8);
        int64_t *ix = kt_alloc(rows * k * 8);
        good &= K->top_k(dt, rows, n, k, sm, x, v, ix) == PD_OK;
        for (int64_t r = 0; r < rows; r++) {
          /* Selection sort of the row's (value, index) pairs by the reference order. */
          int64_t order[17];
          for (int64_t j = 0; j < n; j++) order[j] = j;
          for (int64_t a = 0; a < n; a++)
            for (int64_t b = a + 1; b < n; b++)
              if (before(kt_get(dt, x, r * n + order[b]), order[b],
                         kt_get(dt, x, r * n + order[a]), order[a], sm)) {
                int64_t tmp = order[a];
                order[a] = order[b];
                order[b] = tmp;
              }
          for (int64_t j = 0; j < k; j++) {
            double want = kt_get(dt, x, r * n + order[j]), got = kt_get(dt, v, r * k + j);
            good &= ix[r * k + j] == order[j] && (got == want || (isnan(got) && isnan(want)));
          }
        }
        free(x), free(v), free(ix);
      }
      ok(good, "top_k %s (k = 1, 3, n)%s: sorted, ties by index, NaN largest", pd_dtype_name(dt),
         sm ? ", the smallest" : "");
    }
  }
  float x[3];
  int64_t ix[3];
  is_int(K->top_k(PD_FP32, 1, 3, 4, false, x, x, ix), PD_EINVAL, "k > n is refused");
}

static void test_transpose(void) {
  const struct {
    int nd;
    int64_t dims[4];
    int perm[4];
  } cases[] = {
      {2, {3, 17}, {1, 0}},
      {3, {2, 3, 4}, {2, 0, 1}},
      {3, {2, 3, 4}, {0, 2, 1}},
      {4, {2, 3, 4, 5}, {3, 2, 1, 0}},
      {4, {2, 3, 4, 5}, {0, 1, 2, 3}},
      {4, {2, 1, 4, 5}, {1, 0, 3, 2}},
      {2, {300, 200}, {1, 0}},
  };
  const pd_dtype types[] = {PD_BOOL, PD_INT32, PD_FP32, PD_FP64, PD_INT64};
  for (size_t t = 0; t < PD_ARRAY_LEN(types); t++) {
    pd_dtype dt = types[t];
    bool good = true;
    for (size_t c = 0; c < PD_ARRAY_LEN(cases); c++) {
      int nd = cases[c].nd;
      const int64_t *dims = cases[c].dims;
      const int *perm = cases[c].perm;
      int64_t n = kt_numel(nd, dims);
      void *x = kt_random(dt, n, -100, 100), *out = kt_alloc(n * 8);
      good &= K->transpose(dt, nd, dims, perm, x, out) == PD_OK;
      int64_t od[4], idx[4];
      for (int d = 0; d < nd; d++) od[d] = dims[perm[d]];
      for (int64_t o = 0; o < n; o++) {
        int64_t r = o, xi = 0;
        for (int d = nd - 1; d >= 0; d--) {
          idx[perm[d]] = r % od[d];
          r /= od[d];
        }
        for (int d = 0; d < nd; d++) xi = xi * dims[d] + idx[d];
        good &= kt_get(dt, out, o) == kt_get(dt, x, xi);
      }
      free(x), free(out);
    }
    ok(good, "transpose %s: 7 permutations match the naive index map", pd_dtype_name(dt));
  }
  float f[4];
  is_int(K->transpose(PD_FP32, 2, (int64_t[]){2, 2}, (int[]){0, 0}, f, f), PD_EINVAL,
         "a perm with a repeated axis is refused");
}

/* concat and split along the middle axis of [pre, 7, post] from parts of 2, 0 and 5 (the empty
 * one given a dummy pointer); at 40 x 7 x 2048 int32 the outer indices are split across the
 * pool. */
static void concat_split(int64_t pre, int64_t post) {
  const int64_t sizes[3] = {2, 0, 5}, total = 7;
  int32_t *a = kt_random(PD_INT32, pre * 2 * post, -9, 9);
  int32_t *c = kt_random(PD_INT32, pre * 5 * post, -9, 9);
  int32_t b[1], *out = kt_alloc((size_t)(pre * total * post) * 4);
  const void *xs[3] = {a, b, c};
  ok(K->concat(PD_INT32, 3, xs, sizes, pre, post, out) == PD_OK, "concat runs");
  bool good = true;
  for (int64_t i = 0; i < pre; i++)
    for (int64_t j = 0; j < total; j++)
      for (int64_t k = 0; k < post; k++) {
        int32_t want = j < 2 ? a[(i * 2 + j) * post + k] : c[(i * 5 + j - 2) * post + k];
        good &= out[(i * total + j) * post + k] == want;
      }
  ok(good, "concat along the middle axis of [%lld, 7, %lld] (an empty part included)",
     (long long)pre, (long long)post);
  int32_t *a2 = kt_alloc((size_t)(pre * 2 * post) * 4);
  int32_t *c2 = kt_alloc((size_t)(pre * 5 * post) * 4), b2[1];
  void *outs[3] = {a2, b2, c2};
  ok(K->split(PD_INT32, out, pre, post, 3, sizes, outs) == PD_OK &&
         memcmp(a, a2, (size_t)(pre * 2 * post) * 4) == 0 &&
         memcmp(c, c2, (size_t)(pre * 5 * post) * 4) == 0,
     "split inverts concat of [%lld, 7, %lld]", (long long)pre, (long long)post);
  free(a), free(c), free(a2), free(c2), free(out);
}

static void test_concat_split(void) {
  concat_split(3, 4);
  concat_split(40, 2048);
}

static void test_gather_scatter(void) {
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    const int64_t nrows = 10, width = 7, nids = 6;
    const int64_t ids[6] = {3, 0, 9, 3, 5, 5};
    void *table = kt_random(dt, nrows * width, -1, 1), *out = kt_alloc(nids * width * 8);
    ok(K->gather_rows(dt, nrows, width, table, nids, ids, 5, out) == PD_OK,
       "gather_rows %s runs", pd_dtype_name(dt));
    bool good = true;
    for (int64_t i = 0; i < nids; i++)
      for (int64_t j = 0; j < width; j++)
        good &= kt_get(dt, out, i * width + j) ==
                (ids[i] == 5 ? 0 : kt_get(dt, table, ids[i] * width + j));
    ok(good, "gather_rows %s: rows by id, padding_idx gives zeros", pd_dtype_name(dt));
    void *dst = kt_alloc(nrows * width * 8);
    K->fill(dt, nrows * width, dst, 1);
    K->scatter_add_rows(dt, nrows, width, dst, nids, ids, 5, out);
    good = true;
    for (int64_t r = 0; r < nrows; r++)
      for (int64_t j = 0; j < width; j++) {
        double want = 1;
        for (int64_t i = 0; i < nids; i++)
          if (ids[i] == r && r != 5) want += kt_get(dt, out, i * width + j);
        good &= fabs(kt_get(dt, dst, r * width + j) - want) <= 1e-6;
      }
    ok(good, "scatter_add_rows %s accumulates repeated ids, skips padding", pd_dtype_name(dt));
    int64_t bad[1] = {10};
    is_int(K->gather_rows(dt, nrows, width, table, 1, bad, -1, out), PD_EINVAL,
           "gather_rows %s: id == nrows is refused", pd_dtype_name(dt));
    free(table), free(out), free(dst);
  }
}

/* ---- Random ---- */

static void test_philox(void) {
  /* Known answers of Philox4x32-10 from the Random123 distribution (kat_vectors). */
  const struct {
    uint32_t ctr[4], key[2], out[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (size_t i = 0; i < PD_ARRAY_LEN(kat); i++) {
    uint32_t out[4];
    pd_k_philox4x32_10(kat[i].ctr, kat[i].key, out);
    ok(memcmp(out, kat[i].out, sizeof out) == 0, "Philox4x32-10 known answer %zu", i + 1);
  }
}

/* uniform fp32 is the Philox words of its counters (24 bits of each), whatever the backend
 * does to draw them (the CPU: eight counters at a time across its threads): element i from
 * word i % 4 of counter offset + i / 4, with the counter's high word and the key's from a
 * seed and an offset past 2^32 (the carry into the high word), over sizes that end inside a
 * group of eight counters; on the CPU's baseline code and (where the CPU has it) its AVX-512
 * one. */
static void test_uniform_words(int level) {
  const int64_t sizes[] = {1, 5, 31, 33, 100003};
  bool same = true;
  for (size_t s = 0; s < PD_ARRAY_LEN(sizes) && same; s++) {
    int64_t n = sizes[s];
    float *u = kt_alloc((size_t)n * 4);
    pd_k_rng r;
    pd_k_rng_init(&r, 0x123456789abcdefull);
    r.offset = 0xfffffffcull;  /* a group of eight counters straddles 2^32 */
    uint64_t off = r.offset;
    K->uniform(PD_FP32, n, u, 0, 1, &r);
    for (int64_t i = 0; i < n && same; i++) {
      uint64_t c = off + (uint64_t)(i / 4);
      uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
      uint32_t key[2] = {(uint32_t)r.seed, (uint32_t)(r.seed >> 32)}, w[4];
      pd_k_philox4x32_10(ctr, key, w);
      same = u[i] == (float)((double)(w[i % 4] >> 8) * 0x1p-24);
    }
    same = same && r.offset == off + (uint64_t)((n + 3) / 4);
    free(u);
  }
  ok(same, "uniform fp32 (SIMD level %d): element i is 24 bits of word i %% 4 of counter "
     "offset + i / 4", level);
}

static void test_random(void) {
  const int64_t n = 200000;
  for (size_t t = 0; t < 2; t++) {
    pd_dtype dt = kt_float_types[t];
    void *a = kt_alloc(n * 8), *b = kt_alloc(n * 8);
    pd_k_rng r1, r2;
    pd_k_rng_init(&r1, 42);
    pd_k_rng_init(&r2, 42);
    K->uniform(dt, n, a, 2, 5, &r1);
    K->uniform(dt, n / 2, b, 2, 5, &r2);  /* n / 2 is a multiple of 4: the stream continues */
    K->uniform(dt, n / 2, (char *)b + n / 2 * pd_dtype_size(dt), 2, 5, &r2);
    ok(memcmp(a, b, n * pd_dtype_size(dt)) == 0 && r1.offset == r2.offset,
       "uniform %s: same seed, same numbers, also when drawn in two calls", pd_dtype_name(dt));
    double mean = 0, var = 0, lo = 5, hi = 2;
    for (int64_t i = 0; i < n; i++) {
      double v = kt_get(dt, a, i);
      mean += v;
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
    mean /= n;
    for (int64_t i = 0; i < n; i++) var += pow(kt_get(dt, a, i) - mean, 2);
    var /= n;
    ok(fabs(mean - 3.5) < 0.01 && fabs(var - 0.75) < 0.01 && lo >= 2 && hi < 5,
       "uniform %s [2, 5): mean %.4f (3.5), variance %.4f (0.75), range [%.4f, %.4f]",
       pd_dtype_name(dt), mean, var, lo, hi);
    pd_k_rng_init(&r1, 7);
    K->uniform(dt, 16, b, 2, 5, &r1);
    ok(memcmp(a, b, 16 * pd_dtype_size(dt)) != 0, "uniform %s: another seed, other numbers",
       pd_dtype_name(dt));

    pd_k_rng_init(&r1, 1234);
    K->gaussian(dt, n, a, 1, 2, &r1);
    pd_k_rng_init(&r2, 1234);
    K->gaussian(dt, n, b, 1, 2, &r2);
    mean = var = 0;
    for (int64_t i = 0; i < n; i++) mean += kt_get(dt, a, i);
    mean /= n;
    for (int64_t i = 0; i < n; i++) var += pow(kt_get(dt, a, i) - mean, 2);
    var /= n;
    ok(memcmp(a, b, n * pd_dtype_size(dt)) == 0, "gaussian %s is reproducible",
       pd_dtype_name(dt));
    ok(fabs(mean - 1) < 0.02 && fabs(var - 4) < 0.08,
       "gaussian %s mean %.4f (1), variance %.4f (4)", pd_dtype_name(dt), mean, var);
    free(a), free(b);
  }
  /* The stream does not depend on the thread count: one value drawn alone equals the same
   * element of a long (parallel) draw. */
  double big[40000], one[4];
  pd_k_rng r;
  pd_k_rng_init(&r, 99);
  K->uniform(PD_FP64, 40000, big, 0, 1, &r);
  r.seed = 99;
  r.offset = 39996 / 2;  /* fp64: 2 values per counter */
  K->uniform(PD_FP64, 4, one, 0, 1, &r);
  ok(memcmp(one, big + 39996, sizeof one) == 0, "element i comes from counter offset + i / 2");
  float f[8];
  pd_k_rng_init(&r, 5);
  K->uniform(PD_FP32, 8, f, 1, 1, &r);
  ok(f[0] == 1 && f[7] == 1, "uniform over an empty range gives low");
  is_int(K->uniform(PD_FP32, 8, f, 2, 1, &r), PD_EINVAL, "high < low is refused");
}

/* ---- Process set-up ---- */

static void test_init(void) {
  pd_k_threading th = pd_k_threading_info();
  ok(th.ftz_daz, "FTZ/DAZ are on after pd_k_init");
  is_int(th.threads, atoi(getenv("PDLANG_THREADS")), "the kernels use PDLANG_THREADS threads");
  is_int(th.blas_threads, 1, "OpenBLAS computes on the calling thread");
#ifdef __linux__
  cpu_set_t set;
  ok(sched_getaffinity(0, sizeof set, &set) == 0 && th.cpus == CPU_COUNT(&set),
     "cpus is the size of the affinity mask (%d)", th.cpus);
#else
  ok(th.cpus >= 1, "cpus is at least 1");
#endif
  volatile float tiny = 1e-39f, one = 1.0f;
  ok(tiny * one == 0.0f, "a denormal reads as 0 (the workers: tests/kernels/test_pool.c)");
  void *p = pd_k_host_alloc(100), *q = pd_k_host_alloc(0);
  ok(p && q && (uintptr_t)p % PD_K_ALIGN == 0 && (uintptr_t)q % PD_K_ALIGN == 0,
     "host memory is %d-byte aligned", PD_K_ALIGN);
  pd_k_host_free(p);
  pd_k_host_free(q);
  pd_k_host_free(NULL);
  pd_alloc_fail_after(1);
  ok(pd_k_host_alloc(10) == NULL, "host allocation fails through the pd_malloc hook");
  pd_alloc_fail_after(0);
  /* Large blocks are cached when freed and handed out again (training steps reallocate the
   * same temporaries every step); the cache is bounded and trim empties it. */
  pd_k_host_trim();
  is_int((long)pd_k_host_cached(), 0, "no cached host memory after trim");
  size_t big = (size_t)1 << 20;
  char *b1 = pd_k_host_alloc(big + 100);
  ok(b1 && (uintptr_t)b1 % PD_K_ALIGN == 0, "a large block is aligned");
  memset(b1, 1, big + 100);
  pd_k_host_free(b1);
  ok(pd_k_host_cached() >= big + 100, "a freed large block is cached (%zu bytes)",
     pd_k_host_cached());
  char *b2 = pd_k_host_alloc(big + 50);
  ok(b2 == b1 && pd_k_host_cached() == 0, "the next request of its size class reuses it");
  char *b3 = pd_k_host_alloc(big + 100);
  ok(b3 && b3 != b2, "a second live block is a new one");
  pd_k_host_free(b2);
  pd_k_host_free(b3);
  /* 20 live blocks of 16 MiB (a live peak past the 256 MiB floor), then all freed: a program
   * whose tensors are that large keeps them all, so that its next run maps no fresh pages */
  enum { NBLK = 20 };
  void *blk[NBLK];
  bool all = true;
  pd_k_host_trim();
  pd_k_host_stats_reset();
  for (int i = 0; i < NBLK; i++) all = (blk[i] = pd_k_host_alloc((size_t)16 << 20)) && all;
  for (int i = 0; i < NBLK; i++) pd_k_host_free(blk[i]);
  pd_k_host_usage u;
  pd_k_host_stats(&u);
  ok(all && u.cached >= (size_t)NBLK * (16 << 20) && u.cached <= u.peak,
     "blocks are kept up to the live peak past 256 MiB (%zu bytes kept, peak %zu)", u.cached,
     u.peak);
  /* then blocks of other sizes, 16 at a time and all freed, three rounds: the cache keeps at
   * most twice the live peak */
  for (int r = 0; r < 3; r++) {
    void *q2[16];
    for (int i = 0; i < 16; i++) all = (q2[i] = pd_k_host_alloc(((size_t)(37 + 8 * r) << 20) +
                                                                (size_t)i * 4096)) && all;
    for (int i = 0; i < 16; i++) pd_k_host_free(q2[i]);
  }
  pd_k_host_stats(&u);
  ok(all && u.cached <= 2 * u.peak, "the cache stays bounded by twice the live peak (%zu bytes "
     "kept, peak %zu)", u.cached, u.peak);
  /* a request whose class is empty takes a cached block of a class up to twice its size: the
   * next run of an inference model finds its tensors' memory whatever its order of sizes */
  pd_k_host_trim();
  void *larger = pd_k_host_alloc((size_t)3 << 20), *far = pd_k_host_alloc((size_t)9 << 20);
  pd_k_host_free(larger);
  pd_k_host_free(far);
  void *smaller = pd_k_host_alloc((size_t)2 << 20), *one_mib = pd_k_host_alloc((size_t)1 << 20);
  ok(smaller == larger && one_mib != far, "a block up to four classes larger serves a request "
     "(3 MiB for 2 MiB), none further (9 MiB for 1 MiB)");
  pd_k_host_free(smaller);
  pd_k_host_free(one_mib);
  pd_k_host_trim();
  is_int((long)pd_k_host_cached(), 0, "trim frees every cached block");
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  kt_begin(argv);
  test_argmax();
  test_top_k();
  test_transpose();
  test_concat_split();
  test_gather_scatter();
  test_philox();
#if PD_KCPU_FASTMATH_f32
  int best = pd_kcpu_simd_force(PD_KCPU_SIMD_AVX512);
  pd_kcpu_simd_force(PD_KCPU_SIMD_BASE);
  test_uniform_words(PD_KCPU_SIMD_BASE);
  pd_kcpu_simd_force(best);
  test_uniform_words(best);
#else
  test_uniform_words(0);
#endif
  test_random();
  test_init();
  return tap_done();
}
