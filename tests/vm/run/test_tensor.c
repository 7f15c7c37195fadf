/* test_tensor.c -- tensors: aligned storage, resize and reuse, sharing, copies, LoD validation,
 * the printed format (exact text), tensor arrays, and clean failure of every allocation. */
#include "config.h"
#include "vm/run/tensor.h"
#include "tests/tap.h"

#include <stdlib.h>

static void test_storage(void) {
  pd_tensor t;
  pd_tensor_init(&t);
  ok(!pd_tensor_initialized(&t) && pd_tensor_data(&t) == NULL, "a new tensor has no storage");
  is_int(pd_tensor_numel(&t), 1, "rank 0 holds one element");
  const int64_t sizes[][2] = {{1, 1}, {3, 17}, {64, 64}, {7, 0}, {1, 1000}};
  bool aligned = true;
  for (size_t i = 0; i < PD_ARRAY_LEN(sizes); i++) {
    pd_tensor u;
    pd_tensor_init(&u);
    aligned &= pd_tensor_resize(&u, PD_FP32, 2, sizes[i]) == PD_OK &&
               (uintptr_t)pd_tensor_data(&u) % 64 == 0;
    pd_tensor_release(&u);
  }
  ok(aligned, "storage is 64-byte aligned for every size (zero elements included)");

  int64_t d[] = {4, 8};
  ok(pd_tensor_resize(&t, PD_FP32, 2, d) == PD_OK && pd_tensor_numel(&t) == 32 &&
         pd_tensor_nbytes(&t) == 128,
     "resize to [4, 8] fp32: 32 elements, 128 bytes");
  void *p = pd_tensor_data(&t);
  int64_t small[] = {2, 3};
  pd_tensor_resize(&t, PD_INT64, 2, small);  /* 48 bytes fit in 128 */
  ok(pd_tensor_data(&t) == p && t.dtype == PD_INT64 && t.dims[1] == 3,
     "a smaller resize (other dtype too) reuses the storage");
  int64_t big[] = {100, 100};
  pd_tensor_resize(&t, PD_FP64, 2, big);
  ok(pd_tensor_data(&t) != NULL && pd_tensor_nbytes(&t) == 80000, "a larger resize reallocates");

  is_int(pd_tensor_resize(&t, PD_FP32, 10, (int64_t[10]){1}), PD_EINVAL, "rank 10 is refused");
  is_int(pd_tensor_resize(&t, PD_FP32, 1, (int64_t[]){-1}), PD_EINVAL, "a negative dim is refused");
  is_int(pd_tensor_resize(&t, PD_FP32, 2, (int64_t[]){1LL << 40, 1LL << 40}), PD_EINVAL,
         "a size that overflows is refused");
  is_int(pd_tensor_resize(&t, (pd_dtype)99, 1, (int64_t[]){1}), PD_EINVAL,
         "an unknown dtype is refused");
  ok(t.dtype == PD_FP64 && t.dims[0] == 100, "a refused resize leaves the tensor as it was");

  ok(pd_tensor_reshape(&t, 1, (int64_t[]){10000}) == PD_OK && t.ndims == 1,
     "reshape keeps the element count");
  is_int(pd_tensor_reshape(&t, 1, (int64_t[]){10}), PD_ESHAPE, "reshape to another count fails");
  pd_tensor_release(&t);
  ok(!pd_tensor_initialized(&t), "release empties the tensor");
}

static void test_copy_share_fill(void) {
  pd_tensor a, b, c;
  pd_tensor_init(&a);
  pd_tensor_init(&b);
  pd_tensor_init(&c);
  float v[6] = {1, 2, 3, 4, 5, 6};
  int64_t d[] = {2, 3};
  pd_tensor_set_data(&a, PD_FP32, 2, d, v);
  int64_t off[] = {0, 1, 2};
  const int64_t *levels[] = {off};
  pd_tensor_set_lod(&a, 1, levels, (int64_t[]){3});
  ok(pd_tensor_copy(&b, &a) == PD_OK && PD_TENSOR_F32(&b)[5] == 6 &&
         pd_tensor_data(&b) != pd_tensor_data(&a) && b.nlod == 1 && b.lod[0].offsets[2] == 2,
     "copy is deep: data and LoD");
  PD_TENSOR_F32(&b)[0] = 100;
  ok(PD_TENSOR_F32(&a)[0] == 1, "writing the copy leaves the original alone");

  ok(pd_tensor_share(&c, &a) == PD_OK && pd_tensor_data(&c) == pd_tensor_data(&a) &&
         a.storage->refs == 2 && c.nlod == 1,
     "share: same storage (2 references), LoD copied");
  PD_TENSOR_F32(&c)[1] = 42;
  ok(PD_TENSOR_F32(&a)[1] == 42, "writes through a shared tensor are seen by the other");
  void *shared = pd_tensor_data(&a);
  pd_tensor_resize(&c, PD_FP32, 2, d);
  ok(pd_tensor_data(&c) != shared && a.storage->refs == 1,
     "resizing a shared tensor detaches it instead of clobbering the other");
  pd_tensor_share(&c, &a);
  pd_tensor_release(&a);
  ok(PD_TENSOR_F32(&c)[1] == 42 && c.storage->refs == 1,
     "the storage lives while one tensor still uses it");

  ok(pd_tensor_fill(&c, 2.5) == PD_OK && PD_TENSOR_F32(&c)[5] == 2.5f, "fill fp32");
  pd_tensor_resize(&c, PD_BOOL, 1, (int64_t[]){3});
  pd_tensor_fill(&c, 1);
  ok(PD_TENSOR_BOOL(&c)[2] == 1, "fill bool");
  pd_tensor e;
  pd_tensor_init(&e);
  is_int(pd_tensor_fill(&e, 1), PD_EINVAL, "fill before resize is refused");
  pd_tensor_release(&b);
  pd_tensor_release(&c);

  pd_tensor *h = pd_tensor_new();
  ok(h && pd_tensor_copy(h, h) == PD_OK, "heap tensor; copy onto itself is a no-op");
  pd_tensor_free(h);
  pd_tensor_free(NULL);
}

static void test_lod(void) {
  pd_tensor t;
  pd_tensor_init(&t);
  pd_tensor_resize(&t, PD_FP32, 2, (int64_t[]){5, 1});
  pd_error err = {0};
  ok(pd_tensor_validate_lod(&t, &err) == PD_OK, "no LoD is valid");
  int64_t l0[] = {0, 3, 5};
  pd_tensor_set_lod(&t, 1, (const int64_t *[]){l0}, (int64_t[]){3});
  ok(pd_tensor_validate_lod(&t, &err) == PD_OK, "[[0, 3, 5]] on 5 rows: sequences of 3 and 2");

  int64_t top[] = {0, 2, 3}, rows[] = {0, 2, 4, 5};
  pd_tensor_set_lod(&t, 2, (const int64_t *[]){top, rows}, (int64_t[]){3, 4});
  ok(pd_tensor_validate_lod(&t, &err) == PD_OK, "two levels [[0, 2, 3], [0, 2, 4, 5]]");

  const struct {
    int64_t offs[4];
    int64_t n;
    const char *msg;
  } bad[] = {
      {{1, 3, 5}, 3, "lod level 0 starts at 1, not 0"},
      {{0, 4, 3, 5}, 4, "lod level 0 decreases at offset 2 (3 after 4)"},
      {{0, 3, 4}, 3, "lod level 0 ends at 4 but the tensor has 5 rows"},
      {{0}, 0, "lod level 0 is empty (it needs offset 0)"},
  };
  for (size_t i = 0; i < PD_ARRAY_LEN(bad); i++) {
    pd_tensor_set_lod(&t, 1, (const int64_t *[]){bad[i].offs}, &bad[i].n);
    is_int(pd_tensor_validate_lod(&t, &err), PD_ESHAPE, "invalid LoD %zu is refused", i + 1);
    is_str(err.msg, bad[i].msg, "message for invalid LoD %zu", i + 1);
  }
  int64_t top2[] = {0, 2, 4};
  pd_tensor_set_lod(&t, 2, (const int64_t *[]){top2, rows}, (int64_t[]){3, 4});
  pd_tensor_validate_lod(&t, &err);
  is_str(err.msg, "lod level 0 ends at 4 but level 1 has 3 sequences",
         "levels must nest: the top level counts sequences of the next");
  is_int(pd_tensor_set_lod(&t, 1, (const int64_t *[]){l0}, (int64_t[]){-1}), PD_EINVAL,
         "a negative offset count is refused");
  pd_tensor_clear_lod(&t);
  ok(t.nlod == 0 && t.lod == NULL, "clear_lod");
  pd_tensor s;
  pd_tensor_init(&s);
  pd_tensor_resize(&s, PD_FP32, 0, NULL);
  pd_tensor_set_lod(&s, 1, (const int64_t *[]){l0}, (int64_t[]){3});
  is_int(pd_tensor_validate_lod(&s, NULL), PD_ESHAPE, "a scalar cannot have LoD");
  pd_error_clear(&err);
  pd_tensor_release(&s);
  pd_tensor_release(&t);
}

/* Print t into a fresh string (caller frees). */
static char *print(const pd_tensor *t) {
  pd_buf b;
  pd_buf_init(&b);
  pd_tensor_print(t, &b);
  return pd_buf_take(&b);
}

static void check_print(const pd_tensor *t, const char *want, const char *what) {
  char *s = print(t);
  is_str(s, want, "print: %s", what);
  pd_free(s);
}

static void test_print(void) {
  pd_tensor t;
  pd_tensor_init(&t);
  check_print(&t, "Tensor(not initialized)\n", "uninitialized");

  float v[3] = {1, 2.5f, 3};
  pd_tensor_set_data(&t, PD_FP32, 2, (int64_t[]){3, 1}, v);
  int64_t l0[] = {0, 2, 3};
  pd_tensor_set_lod(&t, 1, (const int64_t *[]){l0}, (int64_t[]){3});
  check_print(&t,
              "Tensor(shape=[3, 1], dtype=float32, lod=[[0, 2, 3]])\n"
              "[[  1],\n"
              " [2.5],\n"
              " [  3]]\n",
              "[3, 1] fp32 with LoD, right-aligned");
  pd_tensor_clear_lod(&t);

  int64_t iv[6] = {1, 2, 3, 4, 5, -6};
  pd_tensor_set_data(&t, PD_INT64, 2, (int64_t[]){2, 3}, iv);
  check_print(&t, "Tensor(shape=[2, 3], dtype=int64)\n[[ 1,  2,  3],\n [ 4,  5, -6]]\n",
              "[2, 3] int64, no LoD");

  uint8_t bv[3] = {1, 0, 1};
  pd_tensor_set_data(&t, PD_BOOL, 1, (int64_t[]){3}, bv);
  check_print(&t, "Tensor(shape=[3], dtype=bool)\n[ true, false,  true]\n", "bool");

  double s = 3.5;
  pd_tensor_set_data(&t, PD_FP64, 0, NULL, &s);
  check_print(&t, "Tensor(shape=[], dtype=float64)\n3.5\n", "rank 0");

  int32_t cube[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  pd_tensor_set_data(&t, PD_INT32, 3, (int64_t[]){2, 2, 2}, cube);
  check_print(&t,
              "Tensor(shape=[2, 2, 2], dtype=int32)\n"
              "[[[0, 1],\n"
              "  [2, 3]],\n"
              "\n"
              " [[4, 5],\n"
              "  [6, 7]]]\n",
              "rank 3: blocks separated by a blank line");

  float sp[3] = {NAN, INFINITY, -INFINITY};
  pd_tensor_set_data(&t, PD_FP32, 1, (int64_t[]){3}, sp);
  check_print(&t, "Tensor(shape=[3], dtype=float32)\n[ nan,  inf, -inf]\n", "nan and inf");

  pd_tensor_resize(&t, PD_FP32, 1, (int64_t[]){2000});
  for (int i = 0; i < 2000; i++) PD_TENSOR_F32(&t)[i] = (float)i;
  check_print(&t,
              "Tensor(shape=[2000], dtype=float32)\n"
              "[   0,    1,    2, ..., 1997, 1998, 1999]\n",
              "2000 elements are summarised");

  pd_tensor_resize(&t, PD_INT32, 2, (int64_t[]){100, 100});
  for (int i = 0; i < 10000; i++) PD_TENSOR_I32(&t)[i] = i;
  check_print(&t,
              "Tensor(shape=[100, 100], dtype=int32)\n"
              "[[   0,    1,    2, ...,   97,   98,   99],\n"
              " [ 100,  101,  102, ...,  197,  198,  199],\n"
              " [ 200,  201,  202, ...,  297,  298,  299],\n"
              " ...,\n"
              " [9700, 9701, 9702, ..., 9797, 9798, 9799],\n"
              " [9800, 9801, 9802, ..., 9897, 9898, 9899],\n"
              " [9900, 9901, 9902, ..., 9997, 9998, 9999]]\n",
              "[100, 100] summarised in both dims");

  pd_tensor_resize(&t, PD_FP32, 2, (int64_t[]){2, 0});
  check_print(&t, "Tensor(shape=[2, 0], dtype=float32)\n[[],\n []]\n", "zero-size dim");

  pd_buf b;
  pd_buf_init(&b);
  pd_buf_put_dims(&b, 2, (int64_t[]){-1, 784});
  is_str(b.data, "[-1, 784]", "pd_buf_put_dims");
  pd_buf_free(&b);
  pd_tensor_release(&t);
}

static void test_array(void) {
  pd_tensor_array a;
  pd_tensor_array_init(&a);
  pd_tensor *first = pd_tensor_array_push(&a);
  ok(first && a.n == 1, "push an empty tensor");
  pd_tensor_resize(first, PD_FP32, 1, (int64_t[]){4});
  ok(pd_tensor_array_reserve(&a, 100) == PD_OK && a.n == 100, "reserve grows to 100 tensors");
  ok(pd_tensor_array_get(&a, 0) == first, "tensor pointers survive growth");
  ok(pd_tensor_array_get(&a, 100) == NULL && pd_tensor_array_get(&a, -1) == NULL,
     "get out of range is NULL");
  pd_tensor_array_truncate(&a, 10);
  is_int(a.n, 10, "truncate frees the tail");
  pd_tensor_array_release(&a);
  ok(a.n == 0 && a.items == NULL, "release empties the array");
}

/* Every allocation of a scenario fails in turn; each failure must leave things consistent and
 * releasable (ASan/LSan check the rest). Returns how many failures were exercised. */
static pd_status scenario(pd_tensor *t, pd_tensor *u, pd_tensor_array *arr) {
  pd_status st;
  float v[4] = {1, 2, 3, 4};
  if ((st = pd_tensor_set_data(t, PD_FP32, 2, (int64_t[]){2, 2}, v))) return st;
  int64_t l0[] = {0, 1, 2}, l1[] = {0, 2};
  if ((st = pd_tensor_set_lod(t, 2, (const int64_t *[]){l1, l0}, (int64_t[]){2, 3}))) return st;
  if ((st = pd_tensor_copy(u, t))) return st;
  if ((st = pd_tensor_share(u, t))) return st;
  if ((st = pd_tensor_resize(u, PD_FP64, 1, (int64_t[]){1000}))) return st;
  if ((st = pd_tensor_copy_lod(u, t))) return st;
  for (int i = 0; i < 20; i++)
    if (!pd_tensor_array_push(arr)) return PD_ENOMEM;
  return pd_tensor_copy(pd_tensor_array_get(arr, 19), t);
}

static void test_alloc_failures(void) {
  int failures = 0;
  bool clean = true;
  for (long k = 1; k < 1000; k++) {
    pd_tensor t, u;
    pd_tensor_array arr;
    pd_tensor_init(&t);
    pd_tensor_init(&u);
    pd_tensor_array_init(&arr);
    pd_alloc_fail_after(k);
    pd_status st = scenario(&t, &u, &arr);
    pd_alloc_fail_after(0);
    if (st == PD_OK) {
      clean &= pd_tensor_validate_lod(&t, NULL) == PD_OK && PD_TENSOR_F32(&t)[3] == 4;
      pd_tensor_release(&t), pd_tensor_release(&u), pd_tensor_array_release(&arr);
      break;
    }
    failures++;
    clean &= st == PD_ENOMEM;
    /* What exists is still usable: its LoD, if any, is complete. */
    clean &= t.nlod == 0 || (t.lod && t.lod[t.nlod - 1].offsets);
    pd_tensor_release(&t), pd_tensor_release(&u), pd_tensor_array_release(&arr);
  }
  ok(failures > 20, "%d allocation failures exercised", failures);
  ok(clean, "every failure returned PD_ENOMEM and left releasable tensors");
}

int main(void) {
  test_storage();
  test_copy_share_fill();
  test_lod();
  test_print();
  test_array();
  test_alloc_failures();
  return tap_done();
}
