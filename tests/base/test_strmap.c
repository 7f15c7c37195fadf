/* test_strmap.c -- unit tests for base/strmap.h: insert, lookup, overwrite, removal, growth,
 * many keys checked against a plain array, borrowed and copied keys, allocation failure. */
#include "config.h"
#include "base/strmap.h"
#include "tests/tap.h"

#include <stdio.h>
#include <stdlib.h>

static void test_hash(void) {
  /* FNV-1a 64 reference values (the published test vectors). */
  ok(pd_str_hash("") == 0xcbf29ce484222325ull, "FNV-1a of \"\" is the offset basis");
  ok(pd_str_hash("a") == 0xaf63dc4c8601ec8cull, "FNV-1a of \"a\"");
  ok(pd_str_hash("foobar") == 0x85944171f73967e8ull, "FNV-1a of \"foobar\"");
}

static void test_basic(void) {
  pd_strmap m;
  pd_strmap_init(&m, false);
  ok(pd_strmap_find(&m, "x") == NULL && m.cap == 0, "an empty map finds nothing, allocates nothing");
  ok(!pd_strmap_remove(&m, "x"), "removing from an empty map");
  int a = 1, b = 2;
  ok(pd_strmap_set_ptr(&m, "a", &a) == PD_OK, "insert a pointer");
  ok(pd_strmap_set_ptr(&m, "b", &b) == PD_OK, "insert another");
  ok(pd_strmap_get_ptr(&m, "a") == &a && pd_strmap_get_ptr(&m, "b") == &b, "lookup");
  ok(pd_strmap_get_ptr(&m, "c") == NULL, "lookup of an absent key");
  ok(pd_strmap_set_ptr(&m, "a", &b) == PD_OK && pd_strmap_get_ptr(&m, "a") == &b,
     "overwrite");
  is_int((int)m.count, 2, "overwriting adds no entry");
  bool added = true;
  pd_strmap_entry *e = pd_strmap_add(&m, "b", &added);
  ok(e && !added && e->val.p == &b, "add of a present key returns its entry");
  e = pd_strmap_add(&m, "n", &added);
  ok(e && added && e->val.i == 0 && e->val.p == NULL, "add of a new key: a zero value");
  e->val.i = 41;
  e->val.i++;
  int64_t v = 0;
  ok(pd_strmap_get_int(&m, "n", &v) && v == 42, "an int value through the entry");
  ok(pd_strmap_set_int(&m, "n", -7) == PD_OK && pd_strmap_get_int(&m, "n", &v) && v == -7,
     "set_int overwrites");
  ok(!pd_strmap_get_int(&m, "zz", &v) && v == -7, "get_int of an absent key leaves *out");
  ok(pd_strmap_remove(&m, "a") && pd_strmap_find(&m, "a") == NULL, "remove");
  ok(!pd_strmap_remove(&m, "a"), "remove twice");
  is_int((int)m.count, 2, "count after remove");
  char key[] = "b";
  ok(pd_strmap_find(&m, key) != NULL, "keys compare by content, not by pointer");
  size_t i = 0, seen = 0;
  while ((e = pd_strmap_next(&m, &i))) seen++;
  is_int((int)seen, 2, "iteration visits every entry once");
  pd_strmap_free(&m);
  ok(m.cap == 0 && m.count == 0 && pd_strmap_find(&m, "b") == NULL, "free empties the map");
  ok(pd_strmap_set_int(&m, "again", 1) == PD_OK, "a freed map is usable");
  pd_strmap_free(&m);
}

/* Many keys, with removals, against an array that says what should be there. */
static void test_many(void) {
  enum { N = 5000 };
  static char keys[N][16];
  static bool in[N];
  pd_strmap m = {0};
  for (int i = 0; i < N; i++) snprintf(keys[i], sizeof keys[i], "k%d", i * 7919);
  bool all = true;
  for (int i = 0; i < N; i++) {
    all &= pd_strmap_set_int(&m, keys[i], i) == PD_OK;
    in[i] = true;
  }
  ok(all, "5000 inserts");
  is_int((int)m.count, N, "5000 entries");
  ok(m.cap >= 2 * N && (m.cap & (m.cap - 1)) == 0, "the table grew to a power of two, at most half full");
  srand(5);
  for (int r = 0; r < 3000; r++) {  /* remove and re-add at random: runs get shifted back */
    int i = rand() % N;
    if (in[i]) all &= pd_strmap_remove(&m, keys[i]);
    else all &= pd_strmap_set_int(&m, keys[i], i) == PD_OK;
    in[i] = !in[i];
  }
  ok(all, "3000 random removals and re-insertions");
  bool right = true;
  size_t n = 0;
  for (int i = 0; i < N; i++) {
    int64_t v = -1;
    bool got = pd_strmap_get_int(&m, keys[i], &v);
    right &= got == in[i] && (!got || v == i);
    n += in[i];
  }
  ok(right, "every key is found exactly when it should be, with its value");
  is_int((int)m.count, (int)n, "the count agrees");
  pd_strmap_free(&m);
}

static void test_reserve(void) {
  pd_strmap m = {0};
  ok(pd_strmap_reserve(&m, 100) == PD_OK && m.cap >= 200, "reserve");
  size_t cap = m.cap;
  static char keys[100][16];
  pd_alloc_fail_after(1);  /* the next allocation would fail */
  bool all = true;
  for (int i = 0; i < 100; i++) {
    snprintf(keys[i], sizeof keys[i], "r%d", i);
    all &= pd_strmap_set_int(&m, keys[i], i) == PD_OK;
  }
  pd_alloc_fail_after(0);
  ok(all && m.cap == cap, "adding up to the reserved count allocates nothing");
  pd_strmap_free(&m);
}

static void test_copied_keys(void) {
  pd_strmap m;
  pd_strmap_init(&m, true);
  char key[16] = "temp";
  ok(pd_strmap_set_int(&m, key, 5) == PD_OK, "insert into a copying map");
  strcpy(key, "other");
  int64_t v = 0;
  ok(pd_strmap_get_int(&m, "temp", &v) && v == 5, "the key was copied");
  ok(pd_strmap_find(&m, "temp")->key != key, "the stored key is the map's own");
  ok(pd_strmap_remove(&m, "temp"), "remove frees the copy (the sanitizer build checks)");
  for (int i = 0; i < 50; i++) {
    snprintf(key, sizeof key, "c%d", i);
    pd_strmap_set_int(&m, key, i);
  }
  is_int((int)m.count, 50, "50 copied keys");
  pd_strmap_free(&m);
  ok(m.copy_keys, "free keeps the copying mode");
}

/* The k-th allocation fails, for every k that a sequence of adds makes: each add either
 * succeeds or fails leaving the map as it was. */
static void test_alloc_failure(void) {
  for (int copy = 0; copy < 2; copy++) {
    bool clean = true;
    int tries = 0;
    for (long k = 1;; k++) {
      pd_strmap m;
      pd_strmap_init(&m, copy);
      static char keys[40][8];
      int done = 0;
      bool failed = false;
      pd_alloc_fail_after(k);
      for (int i = 0; i < 40; i++) {
        snprintf(keys[i], sizeof keys[i], "f%d", i);
        size_t before = m.count, cap = m.cap;
        pd_status st = pd_strmap_set_int(&m, keys[i], i);
        if (st) {
          failed = true;
          clean &= st == PD_ENOMEM && m.count == before && m.cap >= cap &&
                   !pd_strmap_find(&m, keys[i]);
          break;
        }
        done++;
      }
      pd_alloc_fail_after(0);
      for (int i = 0; i < done; i++) {
        int64_t v;
        clean &= pd_strmap_get_int(&m, keys[i], &v) && v == i;
      }
      clean &= (int)m.count == done;
      pd_strmap_free(&m);
      tries++;
      if (!failed) break;
    }
    ok(clean && tries > 2, "%s keys: every allocation failure is reported and leaves the map "
                           "intact (%d runs)", copy ? "copied" : "borrowed", tries);
  }
}

int main(void) {
  test_hash();
  test_basic();
  test_many();
  test_reserve();
  test_copied_keys();
  test_alloc_failure();
  return tap_done();
}
