/* test_reader_split.c -- validation splits of a dataset (vm/reader/reader_split.c,
 * pd_dataset_split): the held-out part is the first round(F * N) samples of the batcher's
 * documented shuffle for the seed seed ^ 0x5a17c0ffee5eed (read back through a batcher, whose
 * order test_reader.c checks against an independent implementation), the two parts are
 * disjoint, make the whole and keep the file's order, sequence fields come with their rows,
 * the same seed gives the same split and another seed another, and bad arguments are refused. */
#include "config.h"
#include "vm/reader/reader.h"
#include "tests/tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* n samples: "id" int64 [1] = i; "x" fp32 [2] = {i, -i}; "seq" a sequence field of int64 rows
 * [1], sample i has i % 3 rows 100 i + r. */
static pd_dataset *make(int64_t n) {
  pd_dataset *d = NULL;
  void *id, *x, *seq;
  int64_t one = 1, two = 2, *lens = calloc((size_t)n, sizeof *lens);
  for (int64_t i = 0; i < n; i++) lens[i] = i % 3;
  if (pd_dataset_new(n, &d, NULL) || pd_dataset_add_field(d, "id", PD_INT64, 1, &one, &id, NULL) ||
      pd_dataset_add_field(d, "x", PD_FP32, 1, &two, &x, NULL) ||
      pd_dataset_add_seq_field(d, "seq", PD_INT64, 1, &one, lens, &seq, NULL)) {
    free(lens);
    pd_dataset_free(d);
    return NULL;
  }
  int64_t *s = seq;
  for (int64_t i = 0; i < n; i++) {
    ((int64_t *)id)[i] = i;
    ((float *)x)[2 * i] = (float)i;
    ((float *)x)[2 * i + 1] = (float)-i;
    for (int64_t r = 0; r < lens[i]; r++) *s++ = 100 * i + r;
  }
  free(lens);
  return d;
}

/* The ids of the first k samples of the batcher's epoch-0 shuffle for seed into mark[]. */
static bool first_of_shuffle(const pd_dataset *d, uint64_t seed, int64_t k, bool *mark) {
  pd_batcher_options o = {.batch = k, .shuffle = true, .seed = seed};
  pd_batcher *b = NULL;
  pd_tensor t[3];
  for (int i = 0; i < 3; i++) pd_tensor_init(&t[i]);
  int64_t rows = 0;
  bool good = !pd_batcher_new(d, &o, &b, NULL) && !pd_batcher_start_epoch(b, 0) &&
              !pd_batcher_next(b, t, &rows, NULL) && rows == k;
  for (int64_t i = 0; good && i < k; i++) mark[PD_TENSOR_I64(&t[0])[i]] = true;
  for (int i = 0; i < 3; i++) pd_tensor_release(&t[i]);
  pd_batcher_free(b);
  return good;
}

/* Check one part: ids ascending, x and seq rows those of the id. */
static bool part_ok(const pd_dataset *p) {
  const int64_t *id = pd_dataset_field_data(p, 0), *seq = pd_dataset_field_data(p, 2);
  const float *x = pd_dataset_field_data(p, 1);
  const int64_t *off = pd_dataset_field_offsets(p, 2);
  for (int64_t j = 0; j < pd_dataset_size(p); j++) {
    int64_t i = id[j];
    if ((j > 0 && i <= id[j - 1]) || x[2 * j] != (float)i || x[2 * j + 1] != (float)-i)
      return false;
    if (off[j + 1] - off[j] != i % 3) return false;
    for (int64_t r = 0; r < i % 3; r++)
      if (seq[off[j] + r] != 100 * i + r) return false;
  }
  return true;
}

static void test_split(int64_t n, double frac, uint64_t seed) {
  pd_dataset *d = make(n), *held = NULL, *rest = NULL;
  int64_t k = (int64_t)llround(frac * (double)n);
  if (k < 1) k = 1;
  if (k > n - 1) k = n - 1;
  is_int(pd_dataset_split_count(n, frac), k, "N %lld, F %g: %lld held out", (long long)n, frac,
         (long long)k);
  ok(d && !pd_dataset_split(d, frac, seed, true, &held, NULL) &&
         !pd_dataset_split(d, frac, seed, false, &rest, NULL),
     "N %lld, F %g, seed %llu: both parts made", (long long)n, frac, (unsigned long long)seed);
  if (!held || !rest) {
    pd_dataset_free(d);
    pd_dataset_free(held);
    pd_dataset_free(rest);
    return;
  }
  is_int(pd_dataset_size(held), k, "the held-out part has %lld samples", (long long)k);
  is_int(pd_dataset_size(rest), n - k, "the rest has %lld", (long long)(n - k));
  bool *want = calloc((size_t)n, sizeof *want), *seen = calloc((size_t)n, sizeof *seen);
  ok(first_of_shuffle(d, seed ^ 0x5a17c0ffee5eedull, k, want),
     "the batcher's shuffle read back");
  bool same = true;
  const int64_t *hid = pd_dataset_field_data(held, 0), *rid = pd_dataset_field_data(rest, 0);
  for (int64_t j = 0; j < k; j++) {
    same = same && want[hid[j]] && !seen[hid[j]];
    seen[hid[j]] = true;
  }
  for (int64_t j = 0; j < n - k; j++) {
    same = same && !want[rid[j]] && !seen[rid[j]];
    seen[rid[j]] = true;
  }
  ok(same, "held out: the shuffle's first %lld; the rest: the others; disjoint, the whole",
     (long long)k);
  ok(part_ok(held) && part_ok(rest), "both parts in file order, every field (sequences too) "
     "the sample's own");
  free(want);
  free(seen);
  pd_dataset_free(held);
  pd_dataset_free(rest);
  pd_dataset_free(d);
}

static void test_seeds(void) {
  pd_dataset *d = make(200), *a = NULL, *b = NULL, *c = NULL;
  ok(d && !pd_dataset_split(d, 0.1, 1, true, &a, NULL) &&
         !pd_dataset_split(d, 0.1, 1, true, &b, NULL) &&
         !pd_dataset_split(d, 0.1, 2, true, &c, NULL),
     "three splits");
  if (a && b && c) {
    size_t nb = sizeof(int64_t) * 20;
    ok(memcmp(pd_dataset_field_data(a, 0), pd_dataset_field_data(b, 0), nb) == 0,
       "the same seed holds out the same samples");
    ok(memcmp(pd_dataset_field_data(a, 0), pd_dataset_field_data(c, 0), nb) != 0,
       "another seed holds out others");
  }
  pd_dataset_free(a);
  pd_dataset_free(b);
  pd_dataset_free(c);
  pd_dataset_free(d);
}

static void test_errors(void) {
  pd_dataset *d = make(5), *one = make(1), *o = NULL;
  pd_error e = {0};
  is_int(pd_dataset_split(d, 1.0, 0, true, &o, &e), PD_EINVAL, "a fraction of 1 is refused");
  ok(e.msg && strstr(e.msg, "in (0, 1), not 1"), "  saying so: %s", e.msg ? e.msg : "(none)");
  pd_error_clear(&e);
  is_int(pd_dataset_split(d, 0.0, 0, false, &o, &e), PD_EINVAL, "a fraction of 0 is refused");
  pd_error_clear(&e);
  is_int(pd_dataset_split(d, NAN, 0, false, &o, &e), PD_EINVAL, "NaN is refused");
  pd_error_clear(&e);
  is_int(pd_dataset_split(one, 0.5, 0, true, &o, &e), PD_EINVAL, "one sample cannot be split");
  ok(e.msg && strstr(e.msg, "1 sample into"), "  saying so: %s", e.msg ? e.msg : "(none)");
  pd_error_clear(&e);
  ok(o == NULL, "nothing made on failure");
  /* Allocation failures: every one refused cleanly (the sanitizer build checks for leaks). */
  bool clean = true;
  int k = 1;
  for (; k < 100; k++) {
    pd_alloc_fail_after(k);
    pd_status st = pd_dataset_split(d, 0.4, 3, true, &o, NULL);
    pd_alloc_fail_after(0);
    if (st == PD_OK) {
      pd_dataset_free(o);
      o = NULL;
      break;
    }
    clean = clean && st == PD_ENOMEM && o == NULL;
  }
  ok(clean && k > 4 && k < 100, "an allocation failure at any of the %d points gives PD_ENOMEM "
     "and nothing", k - 1);
  pd_dataset_free(d);
  pd_dataset_free(one);
}

int main(void) {
  test_split(10, 0.1, 0);
  test_split(10, 0.5, 9);
  test_split(2, 0.01, 3);
  test_split(1000, 0.25, 12345);
  test_split(7, 0.99, 1);
  test_seeds();
  test_errors();
  return tap_done();
}
