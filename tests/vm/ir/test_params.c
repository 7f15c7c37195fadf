/* test_params.c -- tests of vm/ir/params.c: the LoDTensor stream (round trips of every common
 * dtype and rank, LoD, byte-exact known answers written by hand from the format, which follows
 * Paddle's paddle/fluid/framework/lod_tensor.cc SerializeToStream and tensor_util.cc
 * TensorToStream), .pdiparams files and checkpoints (round trips, damaged files of every kind,
 * the scope left as it was after each failure) and out of memory at every allocation.
 * No Paddle is installed here, so the hand-written bytes are the cross-check with Fluid. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/base.h"
#include "vm/ir/params.h"
#include "tests/tap.h"
#include "vm/ir/program.h"
#include "vm/run/scope.h"
#include "vm/run/tensor.h"

static char dir[] = "/tmp/pdlang-test-params-XXXXXX";

static char *tmp_path(const char *name) {
  static char paths[8][512];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, sizeof paths[0], "%s/%s", dir, name);
  return p;
}

/* ---- Tensors ---- */

/* A tensor of this dtype and shape whose element i is a value derived from i and seed. */
static void make(pd_tensor *t, pd_dtype dt, int nd, const int64_t *dims, int seed) {
  pd_tensor_init(t);
  if (pd_tensor_resize(t, dt, nd, dims)) abort();
  int64_t n = pd_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = (double)(i * 7 + seed) * (dt == PD_FP32 || dt == PD_FP64 ? 0.25 : 1) - 9;
    switch (dt) {
      case PD_FP32: PD_TENSOR_F32(t)[i] = (float)v; break;
      case PD_FP64: PD_TENSOR_F64(t)[i] = v / 3; break;
      case PD_INT32: PD_TENSOR_I32(t)[i] = (int32_t)v; break;
      case PD_INT64: PD_TENSOR_I64(t)[i] = (int64_t)v * 1000000007LL; break;
      case PD_BOOL: PD_TENSOR_BOOL(t)[i] = (uint8_t)((i + seed) % 3 == 0); break;
      default: abort();
    }
  }
}

static void set_lod1(pd_tensor *t, int64_t n, const int64_t *offs) {
  const int64_t *levels[1] = {offs};
  if (pd_tensor_set_lod(t, 1, levels, &n)) abort();
}

static int same_tensor(const pd_tensor *a, const pd_tensor *b) {
  if (a->dtype != b->dtype || a->ndims != b->ndims || a->nlod != b->nlod) return 0;
  if (pd_tensor_initialized(a) != pd_tensor_initialized(b)) return 0;
  for (int i = 0; i < a->ndims; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  for (int l = 0; l < a->nlod; l++) {
    if (a->lod[l].n != b->lod[l].n) return 0;
    for (int64_t i = 0; i < a->lod[l].n; i++)
      if (a->lod[l].offsets[i] != b->lod[l].offsets[i]) return 0;
  }
  size_t n = pd_tensor_nbytes(a);
  return n == 0 || memcmp(pd_tensor_data(a), pd_tensor_data(b), n) == 0;
}

static int has(const pd_error *e, const char *needle) {
  return e->msg && strstr(e->msg, needle) != NULL;
}

/* ---- Stream round trips ---- */

static void test_stream_roundtrip(void) {
  static const pd_dtype dtypes[] = {PD_FP32, PD_FP64, PD_INT32, PD_INT64, PD_BOOL};
  static const struct {
    int nd;
    int64_t dims[4];
  } shapes[] = {{0, {0}}, {1, {5}}, {2, {2, 3}}, {2, {0, 3}}, {4, {2, 1, 3, 2}}, {1, {0}}};
  int bad = 0, cases = 0;
  pd_buf all;
  pd_buf_init(&all);
  pd_tensor want[PD_ARRAY_LEN(dtypes) * PD_ARRAY_LEN(shapes)];
  for (size_t d = 0; d < PD_ARRAY_LEN(dtypes); d++) {
    for (size_t s = 0; s < PD_ARRAY_LEN(shapes); s++, cases++) {
      pd_tensor *t = &want[cases], got;
      make(t, dtypes[d], shapes[s].nd, shapes[s].dims, (int)(d * 10 + s));
      pd_buf b;
      pd_buf_init(&b);
      pd_tensor_init(&got);
      size_t pos = 0;
      pd_error err = {0};
      if (pd_tensor_write_stream(t, &b, &err) ||
          pd_tensor_read_stream((const uint8_t *)b.data, b.len, &pos, &got, &err) ||
          pos != b.len || !same_tensor(t, &got)) {
        bad++;
        printf("# %s rank %d: %s\n", pd_dtype_name(dtypes[d]), shapes[s].nd,
               err.msg ? err.msg : "differs");
      }
      pd_tensor_write_stream(t, &all, NULL);
      pd_error_clear(&err);
      pd_tensor_release(&got);
      pd_buf_free(&b);
    }
  }
  ok(bad == 0, "%d tensors (fp32/fp64/int32/int64/bool; rank 0, [5], [2, 3], [0, 3], rank 4, [0]) "
     "read back identical", cases);

  /* The same tensors concatenated: each read starts where the last ended. */
  size_t pos = 0;
  int same = 1;
  for (int i = 0; i < cases; i++) {
    pd_tensor got;
    pd_tensor_init(&got);
    same &= pd_tensor_read_stream((const uint8_t *)all.data, all.len, &pos, &got, NULL) == PD_OK &&
            same_tensor(&want[i], &got);
    pd_tensor_release(&got);
  }
  ok(same && pos == all.len, "the %d streams concatenated read back in turn, to the last byte",
     cases);
  for (int i = 0; i < cases; i++) pd_tensor_release(&want[i]);
  pd_buf_free(&all);

  /* LoD: one level and two levels. */
  pd_tensor t, got;
  int64_t dims[2] = {5, 2};
  make(&t, PD_FP32, 2, dims, 3);
  static const int64_t l0[] = {0, 1, 3}, l1[] = {0, 2, 3, 5};
  const int64_t *levels[2] = {l0, l1};
  int64_t lens[2] = {3, 4};
  pd_tensor_set_lod(&t, 2, levels, lens);
  pd_buf b;
  pd_buf_init(&b);
  pd_tensor_init(&got);
  pos = 0;
  ok(pd_tensor_write_stream(&t, &b, NULL) == PD_OK &&
         pd_tensor_read_stream((const uint8_t *)b.data, b.len, &pos, &got, NULL) == PD_OK &&
         same_tensor(&t, &got) && got.nlod == 2,
     "a [5, 2] tensor with a two-level LoD round-trips");
  set_lod1(&t, 4, l1);
  pd_buf_clear(&b);
  pos = 0;
  ok(pd_tensor_write_stream(&t, &b, NULL) == PD_OK &&
         pd_tensor_read_stream((const uint8_t *)b.data, b.len, &pos, &got, NULL) == PD_OK &&
         same_tensor(&t, &got) && got.nlod == 1,
     "with a one-level LoD, read into a tensor that held another value");
  pd_buf_free(&b);
  pd_tensor_release(&got);

  /* What cannot be written. */
  pd_error err = {0};
  pd_buf_init(&b);
  static const int64_t badlod[] = {0, 2, 4};
  set_lod1(&t, 3, badlod);
  ok(pd_tensor_write_stream(&t, &b, &err) == PD_EINVAL &&
         has(&err, "cannot save a tensor with a bad LoD: lod level 0 ends at 4") && b.len == 0,
     "a LoD that does not fit is not written");
  pd_tensor_release(&t);
  ok(pd_tensor_write_stream(&t, &b, &err) == PD_EINVAL && has(&err, "not initialized"),
     "an uninitialized tensor is not written");
  pd_buf_free(&b);
  pd_error_clear(&err);
}

/* ---- Known answers, byte for byte, from the format (params.h; Paddle's lod_tensor.cc) ---- */

static const uint8_t kat_fp32[] = {
    0x00, 0x00, 0x00, 0x00,                          /* uint32 LoD-tensor version 0 */
    0x01, 0, 0, 0, 0, 0, 0, 0,                       /* uint64 1 LoD level */
    0x18, 0, 0, 0, 0, 0, 0, 0,                       /* uint64 24 bytes of offsets */
    0, 0, 0, 0, 0, 0, 0, 0,                          /* offsets 0, 1, 2 as uint64 */
    1, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 0, 0, 0, 0, 0, 0,
    0x00, 0x00, 0x00, 0x00,                          /* uint32 tensor version 0 */
    0x06, 0x00, 0x00, 0x00,                          /* int32 TensorDesc size 6 */
    0x08, 0x05,                                      /* data_type (field 1) = FP32 (5) */
    0x10, 0x02, 0x10, 0x03,                          /* dims (field 2, unpacked) = 2, 3 */
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40,  /* 1.0f 2.0f */
    0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80, 0x40,  /* 3.0f 4.0f */
    0x00, 0x00, 0xa0, 0x40, 0x00, 0x00, 0xc0, 0x40,  /* 5.0f 6.0f */
};
/* Offsets of fields in kat_fp32. */
enum { KAT_LOD_N = 4, KAT_LOD_SIZE = 12, KAT_OFFS = 20, KAT_TVER = 44, KAT_DSIZE = 48,
       KAT_DESC = 52, KAT_DATA = 58 };

static const uint8_t kat_i64_scalar[] = {
    0, 0, 0, 0,                    /* LoD-tensor version */
    0, 0, 0, 0, 0, 0, 0, 0,        /* no LoD */
    0, 0, 0, 0,                    /* tensor version */
    2, 0, 0, 0,                    /* TensorDesc size 2 */
    0x08, 0x03,                    /* data_type INT64, no dims: rank 0 */
    0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  /* -2 */
};

static const uint8_t kat_bool[] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    4, 0, 0, 0,
    0x08, 0x00, 0x10, 0x03,        /* data_type BOOL (0, written: the field is required), [3] */
    1, 0, 1,
};

static int bytes_equal(const pd_buf *b, const uint8_t *want, size_t n) {
  if (b->len != n) {
    printf("#   %zu bytes, want %zu\n", b->len, n);
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    if ((uint8_t)b->data[i] != want[i]) {
      printf("#   byte %zu is 0x%02x, want 0x%02x\n", i, (uint8_t)b->data[i], want[i]);
      return 0;
    }
  return 1;
}

static void test_known_answer(void) {
  pd_tensor t, got;
  int64_t dims[2] = {2, 3};
  static const float v[] = {1, 2, 3, 4, 5, 6};
  static const int64_t offs[] = {0, 1, 2};
  pd_tensor_init(&t);
  pd_tensor_set_data(&t, PD_FP32, 2, dims, v);
  set_lod1(&t, 3, offs);
  pd_buf b;
  pd_buf_init(&b);
  ok(pd_tensor_write_stream(&t, &b, NULL) == PD_OK && bytes_equal(&b, kat_fp32, sizeof kat_fp32),
     "fp32 [2, 3] with lod [[0, 1, 2]]: the stream is byte for byte Fluid's");
  pd_tensor_init(&got);
  size_t pos = 0;
  ok(pd_tensor_read_stream(kat_fp32, sizeof kat_fp32, &pos, &got, NULL) == PD_OK &&
         same_tensor(&t, &got) && pos == sizeof kat_fp32,
     "and the hand-written bytes read back as that tensor");
  pd_tensor_release(&t);

  int64_t m2 = -2;
  pd_tensor_init(&t);
  pd_tensor_set_data(&t, PD_INT64, 0, NULL, &m2);
  pd_buf_clear(&b);
  ok(pd_tensor_write_stream(&t, &b, NULL) == PD_OK &&
         bytes_equal(&b, kat_i64_scalar, sizeof kat_i64_scalar),
     "int64 rank 0: no dims in the TensorDesc, 8 little-endian bytes");
  pos = 0;
  ok(pd_tensor_read_stream(kat_i64_scalar, sizeof kat_i64_scalar, &pos, &got, NULL) == PD_OK &&
         got.ndims == 0 && got.dtype == PD_INT64 && PD_TENSOR_I64(&got)[0] == -2,
     "and reads back as a scalar -2");
  pd_tensor_release(&t);

  static const uint8_t bv[] = {1, 0, 1};
  int64_t three = 3;
  pd_tensor_init(&t);
  pd_tensor_set_data(&t, PD_BOOL, 1, &three, bv);
  pd_buf_clear(&b);
  ok(pd_tensor_write_stream(&t, &b, NULL) == PD_OK && bytes_equal(&b, kat_bool, sizeof kat_bool),
     "bool [3]: data_type 0 is written, one byte per element");
  pd_tensor_release(&t);
  pd_tensor_release(&got);
  pd_buf_free(&b);
}

/* ---- Malformed streams ---- */

/* Read `bytes` into a tensor that holds a marker value: the read must fail with `want`, name a
 * byte offset (and `needle`), and leave the tensor and the position alone. */
static int refused(const uint8_t *bytes, size_t len, pd_status want, const char *needle) {
  pd_tensor t;
  int64_t one = 1;
  float marker = 42;
  pd_tensor_init(&t);
  pd_tensor_set_data(&t, PD_FP32, 1, &one, &marker);
  size_t pos = 0;
  pd_error err = {0};
  pd_status st = pd_tensor_read_stream(bytes, len, &pos, &t, &err);
  int good = st == want && has(&err, "byte ") && (!needle || has(&err, needle)) && pos == 0 &&
             t.ndims == 1 && PD_TENSOR_F32(&t)[0] == 42;
  if (!good)
    printf("#   status %s, message \"%s\"\n", pd_status_str(st), err.msg ? err.msg : "(none)");
  pd_error_clear(&err);
  pd_tensor_release(&t);
  return good;
}

/* A stream with no LoD, dtype/dims from a hand-made TensorDesc, and `data` bytes of elements. */
static size_t stream_with_desc(uint8_t *out, const uint8_t *desc, size_t dn, size_t data) {
  size_t n = 0;
  memset(out, 0, 16);
  n = 16;                      /* version, 0 levels, tensor version */
  out[n++] = (uint8_t)dn;
  out[n++] = 0;
  out[n++] = 0;
  out[n++] = 0;
  memcpy(out + n, desc, dn);
  n += dn;
  memset(out + n, 0, data);
  return n + data;
}

static void test_malformed_streams(void) {
  uint8_t b[256];
  size_t n = sizeof kat_fp32;
#define MUTATED(off, val) (memcpy(b, kat_fp32, n), b[(off)] = (val), b)
  ok(refused(MUTATED(0, 7), n, PD_EFORMAT, "LoD-tensor version 7 is not supported"),
     "LoD-tensor version 7");
  ok(refused(MUTATED(KAT_TVER, 1), n, PD_EFORMAT, "byte 44: tensor version 1"),
     "tensor version 1, at byte 44");
  ok(refused(MUTATED(KAT_DSIZE + 3, 0x80), n, PD_EFORMAT, "negative"),
     "a negative TensorDesc size");
  ok(refused(MUTATED(KAT_DSIZE, 60), n, PD_EFORMAT, "truncated"),
     "a TensorDesc size past the end");
  ok(refused(MUTATED(KAT_DESC, 0xff), n, PD_EFORMAT, "does not decode"),
     "TensorDesc bytes that are not protobuf");
  ok(refused(MUTATED(KAT_DESC + 1, 99), n, PD_EFORMAT, "unknown element type 99"),
     "an unknown data_type");
  ok(refused(MUTATED(KAT_DESC + 1, 23), n, PD_EUNSUPPORTED, "COMPLEX64"),
     "COMPLEX64 is a Fluid dtype pdlang does not support");
  ok(refused(MUTATED(KAT_DESC + 3, 3), n, PD_EFORMAT, "truncated: the data of a float32 [3, 3]"),
     "dims [3, 3]: the data is short");
  ok(refused(MUTATED(KAT_LOD_N, 2), n, PD_EFORMAT, NULL), "two LoD levels announced, one given");
  ok(refused(MUTATED(KAT_LOD_N + 7, 0x10), n, PD_EFORMAT, "LoD levels cannot fit"),
     "a huge LoD level count");
  ok(refused(MUTATED(KAT_LOD_SIZE, 20), n, PD_EFORMAT, "not a whole number"),
     "a LoD level size that is not a multiple of 8");
  ok(refused(MUTATED(KAT_LOD_SIZE, 0), n, PD_EFORMAT, "empty"), "an empty LoD level");
  ok(refused(MUTATED(KAT_LOD_SIZE + 6, 1), n, PD_EFORMAT, "truncated: LoD level 0"),
     "a LoD level larger than the file");
  ok(refused(MUTATED(KAT_OFFS, 1), n, PD_EFORMAT, "byte 20: LoD level 0 starts at 1, not 0"),
     "a LoD starting at 1");
  ok(refused(MUTATED(KAT_OFFS + 8, 5), n, PD_EFORMAT, "decreases"), "a decreasing LoD");
  ok(refused(MUTATED(KAT_OFFS + 16, 3), n, PD_EFORMAT,
             "the LoD does not fit the [2, 3] tensor: lod level 0 ends at 3 but the tensor "
             "has 2 rows"),
     "a LoD ending past the rows");
  ok(refused(MUTATED(KAT_OFFS + 23, 0x80), n, PD_EFORMAT, "too large"), "a LoD offset above 2^63");
#undef MUTATED

  /* Hand-made TensorDescs. */
  static const uint8_t neg_dim[] = {0x08, 0x05, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff, 0x01};  /* dims [-1] */
  n = stream_with_desc(b, neg_dim, sizeof neg_dim, 0);
  ok(refused(b, n, PD_EFORMAT, "dim 0 is negative (-1)"), "a negative dim");
  static const uint8_t huge[] = {0x08, 0x05,                                    /* fp32 */
                                 0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,  /* 2^49 */
                                 0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}; /* 2^49 */
  n = stream_with_desc(b, huge, sizeof huge, 0);
  ok(refused(b, n, PD_EFORMAT, "too many elements"), "dims whose product overflows");
  static const uint8_t big[] = {0x08, 0x06, 0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  n = stream_with_desc(b, big, sizeof big, 8);
  ok(refused(b, n, PD_EFORMAT,
             "float64 [562949953421312] tensor needs 4503599627370496 bytes but only 8 remain"),
     "a float64 [2^49] tensor in 8 bytes: refused before allocating");
  uint8_t rank10[2 + 20];
  rank10[0] = 0x08;
  rank10[1] = 0x05;
  for (int i = 0; i < 10; i++) rank10[2 + 2 * i] = 0x10, rank10[3 + 2 * i] = 1;
  n = stream_with_desc(b, rank10, sizeof rank10, 4);
  ok(refused(b, n, PD_EUNSUPPORTED, "rank 10"), "rank 10 is above the maximum");
  static const uint8_t no_type[] = {0x10, 0x02};
  n = stream_with_desc(b, no_type, sizeof no_type, 8);
  ok(refused(b, n, PD_EFORMAT, "does not decode"), "a TensorDesc without its required data_type");
  static const uint8_t lod_tensor[] = {0x08, 0x07};
  n = stream_with_desc(b, lod_tensor, sizeof lod_tensor, 8);
  ok(refused(b, n, PD_EUNSUPPORTED, "LOD_TENSOR"), "a var kind used as an element type");

  /* Every proper prefix of a valid stream. */
  int all = 1;
  for (size_t k = 0; k < sizeof kat_fp32; k++) all &= refused(kat_fp32, k, PD_EFORMAT, "truncated");
  ok(all, "each of the %zu proper prefixes of a stream is refused as truncated", sizeof kat_fp32);

  /* Random damage: never a crash, and a message with every failure. */
  uint32_t seed = 12345;
  int quiet = 1, failed = 0;
  for (int it = 0; it < 4000; it++) {
    memcpy(b, kat_fp32, sizeof kat_fp32);
    int flips = 1 + it % 4;
    for (int f = 0; f < flips; f++) {
      seed = seed * 1103515245u + 12345u;
      size_t at = (seed >> 8) % sizeof kat_fp32;
      seed = seed * 1103515245u + 12345u;
      b[at] = (uint8_t)(seed >> 16);
    }
    seed = seed * 1103515245u + 12345u;
    size_t len = it % 3 ? sizeof kat_fp32 : (seed >> 8) % (sizeof kat_fp32 + 1);
    pd_tensor t;
    pd_tensor_init(&t);
    size_t pos = 0;
    pd_error err = {0};
    pd_status st = pd_tensor_read_stream(b, len, &pos, &t, &err);
    if (st) {
      failed++;
      quiet &= err.msg != NULL && pos == 0 && !pd_tensor_initialized(&t);
    } else {
      quiet &= pos <= len && pd_tensor_validate_lod(&t, NULL) == PD_OK;
    }
    pd_error_clear(&err);
    pd_tensor_release(&t);
  }
  ok(quiet && failed > 1000, "4000 damaged streams: no crash, %d refused with a message", failed);

  size_t pos = 5;
  pd_tensor t;
  pd_tensor_init(&t);
  ok(pd_tensor_read_stream(kat_fp32, 4, &pos, &t, NULL) == PD_EINVAL,
     "a position past the end is an invalid argument");
}

/* ---- Scopes and programs ---- */

static pd_tensor *var_tensor(pd_scope *s, const char *name) {
  pd_variable *v = pd_scope_var(s, name);
  return v ? pd_var_tensor(v) : NULL;
}

enum { NP = 4 };
static const char *const pnames[NP] = {"fc_0.w_0", "fc_0.b_0", "step", "mask"};

/* A scope with the four parameters. */
static pd_scope *param_scope(int seed) {
  pd_scope *s = pd_scope_new(NULL);
  int64_t w[2] = {3, 4}, b1 = 4, m[2] = {0, 3};
  make(var_tensor(s, pnames[0]), PD_FP32, 2, w, seed);
  make(var_tensor(s, pnames[1]), PD_FP64, 1, &b1, seed + 1);
  make(var_tensor(s, pnames[2]), PD_INT64, 0, NULL, seed + 2);
  make(var_tensor(s, pnames[3]), PD_BOOL, 2, m, seed + 3);
  return s;
}

/* The program those parameters belong to (block 0 declares them; fc_0.w_0 with a -1 dim). */
static pd_program *param_program(void) {
  pd_program *p = pd_program_new();
  pd_block *b = pd_program_block(p, 0);
  static const int64_t w[2] = {-1, 4}, b1 = 4, m[2] = {0, 3};
  pd_var_desc *v = pd_block_var(b, pnames[0]);
  pd_var_set_shape(v, 2, w);
  v = pd_block_var(b, pnames[1]);
  v->dtype = PD_FP64;
  pd_var_set_shape(v, 1, &b1);
  v = pd_block_var(b, pnames[2]);
  v->dtype = PD_INT64;
  pd_var_set_shape(v, 0, NULL);
  v = pd_block_var(b, pnames[3]);
  v->dtype = PD_BOOL;
  pd_var_set_shape(v, 2, m);
  return p;
}

/* The target of loads: holds fc_0.w_0 = [7] (the "old value") and an unrelated var. */
static pd_scope *target_scope(void) {
  pd_scope *s = pd_scope_new(NULL);
  int64_t one = 1;
  float seven = 7;
  pd_tensor_set_data(var_tensor(s, pnames[0]), PD_FP32, 1, &one, &seven);
  pd_tensor_set_data(var_tensor(s, "other"), PD_FP32, 1, &one, &seven);
  return s;
}

/* The target scope exactly as target_scope made it. */
static int untouched(pd_scope *s) {
  pd_variable *v = pd_scope_find_local_var(s, pnames[0]);
  const pd_tensor *t = v && v->type == PD_VAR_LOD_TENSOR ? &v->u.tensor : NULL;
  return pd_scope_num_vars(s) == 2 && t && t->ndims == 1 && t->dims[0] == 1 &&
         PD_TENSOR_F32(t)[0] == 7 && pd_scope_find_local_var(s, "other");
}

static int scopes_agree(pd_scope *a, pd_scope *b, int n, const char *const *names) {
  for (int i = 0; i < n; i++) {
    pd_variable *x = pd_scope_find_var(a, names[i]), *y = pd_scope_find_var(b, names[i]);
    if (!x || !y || x->type != PD_VAR_LOD_TENSOR || y->type != PD_VAR_LOD_TENSOR ||
        !same_tensor(&x->u.tensor, &y->u.tensor))
      return 0;
  }
  return 1;
}

static char *slurp(const char *path, size_t *len) {
  char *d = NULL;
  if (pd_read_file(path, &d, len, NULL)) return NULL;
  return d;
}

/* ---- .pdiparams ---- */

static void test_params_roundtrip(void) {
  pd_scope *src = param_scope(1), *dst = target_scope();
  pd_program *p = param_program();
  const char *path = tmp_path("model.pdiparams");
  pd_error err = {0};
  ok(pd_params_save(path, src, NP, pnames, &err) == PD_OK, "save 4 parameters");
  ok(pd_params_load(path, dst, NP, pnames, p, &err) == PD_OK, "load them, checked against the "
     "program (%s)", err.msg ? err.msg : "ok");
  ok(scopes_agree(src, dst, NP, pnames) && pd_scope_num_vars(dst) == 5,
     "the loaded values are the saved ones (the old fc_0.w_0 replaced, 3 vars added)");

  /* The file is the four streams, concatenated. */
  size_t len;
  char *bytes = slurp(path, &len);
  pd_buf cat;
  pd_buf_init(&cat);
  for (int i = 0; i < NP; i++)
    pd_tensor_write_stream(&pd_scope_find_var(src, pnames[i])->u.tensor, &cat, NULL);
  ok(bytes && len == cat.len && memcmp(bytes, cat.data, len) == 0,
     "the file is the %d tensor streams back to back (%zu bytes)", NP, len);
  pd_buf_free(&cat);
  pd_free(bytes);

  /* Into a child scope: the vars are made in the child itself. */
  pd_scope *kid = pd_scope_new(dst);
  ok(pd_params_load(path, kid, NP, pnames, NULL, &err) == PD_OK &&
         pd_scope_num_vars(kid) == NP && scopes_agree(src, kid, NP, pnames),
     "loading into a child scope creates the vars there");
  ok(pd_params_save(tmp_path("again.pdiparams"), kid, 2, pnames, &err) == PD_OK,
     "saving from a child scope finds the vars of its parents too");
  ok(pd_params_save(tmp_path("none.pdiparams"), dst, 0, NULL, &err) == PD_OK &&
         pd_params_load(tmp_path("none.pdiparams"), dst, 0, NULL, NULL, &err) == PD_OK,
     "zero parameters: an empty file");

  pd_program_free(p);
  pd_scope_free(src);
  pd_scope_free(dst);
  pd_error_clear(&err);

  char *s = pd_params_path_for("out/fashion.pdmodel");
  is_str(s, "out/fashion.pdiparams", "params path for X.pdmodel");
  pd_free(s);
  s = pd_params_path_for("model");
  is_str(s, "model.pdiparams", "params path for a name without .pdmodel");
  pd_free(s);
  s = pd_params_path_for(".pdmodel");
  is_str(s, ".pdmodel.pdiparams", "\".pdmodel\" alone is not an extension");
  pd_free(s);
}

/* Load `path` into a fresh target scope: the load must fail with want (0: any error), with a
 * message naming the file, and leave the scope as it was. */
static int load_refused(const char *path, int n, const char *const *names, const pd_program *p,
                        pd_status want, const char *needle) {
  pd_scope *s = target_scope();
  pd_error err = {0};
  pd_status st = pd_params_load(path, s, n, names, p, &err);
  int good = st != PD_OK && (!want || st == want) && err.msg &&
             (!needle || strstr(err.msg, needle)) && err.loc.file &&
             strcmp(err.loc.file, path) == 0 && untouched(s);
  if (!good)
    printf("#   status %s, message \"%s\"\n", pd_status_str(st), err.msg ? err.msg : "(none)");
  pd_error_clear(&err);
  pd_scope_free(s);
  return good;
}

static void test_params_errors(void) {
  pd_scope *src = param_scope(2);
  pd_program *p = param_program();
  const char *path = tmp_path("errors.pdiparams"), *damaged = tmp_path("damaged.pdiparams");
  pd_error err = {0};
  pd_params_save(path, src, 3, pnames, NULL);
  size_t len;
  char *bytes = slurp(path, &len);
  if (!bytes) bytes = pd_strdup("");

  ok(load_refused(tmp_path("missing.pdiparams"), 3, pnames, NULL, PD_EIO, "cannot open"),
     "a missing file: an I/O error");
  /* The count. */
  ok(load_refused(path, NP, pnames, NULL, PD_EFORMAT,
                  "holds 3 tensors but the model has 4 parameters"),
     "3 tensors for 4 parameters");
  pd_params_load(path, src, NP, pnames, NULL, &err);
  is_str(err.msg, "holds 3 tensors but the model has 4 parameters", "the message says just that");
  ok(load_refused(path, 2, pnames, NULL, PD_EFORMAT,
                  "holds 3 tensors but the model has 2 parameters"),
     "3 tensors for 2 parameters");
  /* Trailing garbage. */
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_append(&b, bytes, len);
  pd_buf_puts(&b, "xyz");
  pd_write_file_atomic(damaged, b.data, b.len, NULL);
  char want[128];
  snprintf(want, sizeof want, "3 unexpected bytes at byte %zu, after the last of its 3 tensors",
           len);
  ok(load_refused(damaged, 3, pnames, NULL, PD_EFORMAT, want), "trailing garbage");
  /* Every prefix. */
  int all = 1;
  for (size_t k = 0; k < len; k++) {
    pd_write_file_atomic(damaged, bytes, k, NULL);
    all &= load_refused(damaged, 3, pnames, NULL, PD_EFORMAT, NULL);
  }
  ok(all, "each of the %zu proper prefixes of the file is refused, the scope untouched", len);
  /* Damaged headers: the first tensor's versions, LoD count, TensorDesc size and dtype. */
  /* The first tensor, fp32 [3, 4]: bytes 0-3 version, 4-11 LoD count, 12-15 tensor version,
   * 16-19 TensorDesc size (6), 20-25 TensorDesc 08 05 10 03 10 04, then the data. A second
   * change (at2 > 0) goes with the first. */
  static const struct {
    size_t at;
    uint8_t val;
    size_t at2;
    uint8_t val2;
    const char *needle;
  } flips[] = {
      {0, 1, 0, 0, "byte 0: LoD-tensor version 1"},
      {4, 0x40, 0, 0, "parameter 'fc_0.w_0' (tensor 1 of 3): byte 4: 64 LoD levels cannot fit"},
      {12, 2, 0, 0, "byte 12: tensor version 2"},
      {17, 0x7f, 0, 0, "byte 16: truncated: the TensorDesc needs 32518 bytes"},
      {21, 0x02, 0, 0,
       "'fc_0.w_0' is int32 [3, 4] in the file but float32 [-1, 4] in the program"},
      {23, 0x06, 25, 0x02, "'fc_0.w_0' has shape [6, 2] in the file but [-1, 4] in the program"}};
  for (size_t i = 0; i < PD_ARRAY_LEN(flips); i++) {
    memcpy(b.data, bytes, len);
    b.data[flips[i].at] = (char)flips[i].val;
    if (flips[i].at2) b.data[flips[i].at2] = (char)flips[i].val2;
    pd_write_file_atomic(damaged, b.data, len, NULL);
    ok(load_refused(damaged, 3, pnames, p, 0, flips[i].needle), "byte %zu set to %d: \"%s\"",
       flips[i].at, flips[i].val, flips[i].needle);
  }
  /* Against the program. */
  pd_program *q = param_program();
  pd_var_desc *v = pd_block_find_var_local(pd_program_block(q, 0), pnames[1]);
  v->dtype = PD_FP32;
  ok(load_refused(path, 3, pnames, q, PD_ETYPE,
                  "'fc_0.b_0' is float64 [4] in the file but float32 [4] in the program"),
     "a dtype other than the program's");
  v->dtype = PD_FP64;
  int64_t five = 5;
  pd_var_set_shape(v, 1, &five);
  ok(load_refused(path, 3, pnames, q, PD_ESHAPE, "has shape [4] in the file but [5]"),
     "a shape other than the program's");
  pd_var_set_shape(v, 2, (int64_t[]){4, 1});
  ok(load_refused(path, 3, pnames, q, PD_ESHAPE, "[4, 1] in the program"), "another rank");
  pd_var_set_shape(v, -1, NULL);
  pd_scope *t = target_scope();
  ok(pd_params_load(path, t, 3, pnames, q, &err) == PD_OK, "a var of unknown shape takes any");
  pd_scope_free(t);
  pd_block_remove_var(pd_program_block(q, 0), pnames[2]);
  ok(load_refused(path, 3, pnames, q, PD_ENOTFOUND, "holds var 'step', which the program does not "
                  "declare"),
     "a parameter the program does not declare");
  pd_program_free(q);
  /* A var of another kind in the scope. */
  t = target_scope();
  pd_var_tensor_array(pd_scope_var(t, pnames[2]));
  ok(pd_params_load(path, t, 3, pnames, NULL, &err) == PD_ETYPE && has(&err, "'step'") &&
         pd_scope_num_vars(t) == 3 && !pd_scope_find_local_var(t, pnames[1]),
     "a tensor array of that name in the scope: refused before anything changes");
  pd_scope_free(t);

  /* Saving what cannot be saved. */
  const char *nope = tmp_path("nope.pdiparams");
  const char *missing_names[] = {pnames[0], "ghost"};
  ok(pd_params_save(nope, src, 2, missing_names, &err) == PD_ENOTFOUND && has(&err, "'ghost'") &&
         access(nope, F_OK) != 0,
     "saving a var the scope lacks: not found, no file");
  pd_scope_var(src, "empty");
  pd_tensor_init(var_tensor(src, "uninit"));
  pd_var_tensor_array(pd_scope_var(src, "array"));
  const char *e1[] = {"empty"}, *e2[] = {"uninit"}, *e3[] = {"array"}, *e4[] = {""};
  ok(pd_params_save(nope, src, 1, e1, &err) == PD_EINVAL && has(&err, "no value"),
     "a var without a value");
  ok(pd_params_save(nope, src, 1, e2, &err) == PD_EINVAL && has(&err, "not initialized"),
     "an uninitialized tensor");
  ok(pd_params_save(nope, src, 1, e3, &err) == PD_ETYPE && has(&err, "LOD_TENSOR_ARRAY"),
     "a tensor array");
  ok(pd_params_save(nope, src, 1, e4, &err) == PD_EINVAL && pd_params_save(nope, src, -1, NULL,
     &err) == PD_EINVAL, "an empty name, a negative count");
  ok(pd_params_save(tmp_path("no/such/dir.pdiparams"), src, 1, pnames, &err) == PD_EIO,
     "a directory that does not exist: an I/O error");
  ok(access(nope, F_OK) != 0, "no file was written by the failures");

  pd_buf_free(&b);
  pd_free(bytes);
  pd_error_clear(&err);
  pd_program_free(p);
  pd_scope_free(src);
}

/* ---- Checkpoints ---- */

static pd_ckpt_meta sample_meta(void) {
  pd_ckpt_meta m = {.epoch = 3, .step = 17, .global_step = 1234, .rng_offset = 987654321012ull,
                    .seed = 0xdeadbeefcafebabeull, .loss = 0.3125};
  snprintf(m.note, sizeof m.note, "adam lr=0.001");
  snprintf(m.setup, sizeof m.setup, "optimizer=adam(lr=0.001)\nparameter list=#0123456789abcdef");
  return m;
}

static int same_meta(const pd_ckpt_meta *a, const pd_ckpt_meta *b) {
  return a->epoch == b->epoch && a->step == b->step && a->global_step == b->global_step &&
         a->rng_offset == b->rng_offset && a->seed == b->seed && a->loss == b->loss &&
         strcmp(a->note, b->note) == 0 && strcmp(a->setup, b->setup) == 0;
}

/* A checkpoint load that must fail, leaving the target scope and the meta untouched. */
static int ckpt_refused(const char *path, const pd_program *p, pd_status want, const char *needle) {
  pd_scope *s = target_scope();
  pd_error err = {0};
  pd_ckpt_meta m = sample_meta(), before = m;
  pd_status st = pd_checkpoint_load(path, s, p, &m, &err);
  int good = st != PD_OK && (!want || st == want) && err.msg &&
             (!needle || strstr(err.msg, needle)) && err.loc.file && untouched(s) &&
             same_meta(&m, &before);
  if (!good)
    printf("#   status %s, message \"%s\"\n", pd_status_str(st), err.msg ? err.msg : "(none)");
  pd_error_clear(&err);
  pd_scope_free(s);
  return good;
}

static void put32(pd_buf *b, uint32_t v) {
  uint8_t p[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  pd_buf_append(b, p, 4);
}

static void put64(pd_buf *b, uint64_t v) {
  put32(b, (uint32_t)v);
  put32(b, (uint32_t)(v >> 32));
}

static void put_key(pd_buf *b, const char *key, char tag) {
  put32(b, (uint32_t)strlen(key));
  pd_buf_puts(b, key);
  pd_buf_append(b, &tag, 1);
}

static void put_crc(pd_buf *b) {
  put32(b, (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)b->data, (uInt)b->len));
}

static void test_checkpoint(void) {
  pd_scope *src = param_scope(5), *dst = target_scope();
  pd_program *p = param_program();
  const char *path = tmp_path("train.ckpt");
  pd_ckpt_meta meta = sample_meta(), got = {0};
  pd_error err = {0};
  /* fc_0.w_0 gets a LoD: the checkpoint keeps it. */
  static const int64_t offs[] = {0, 1, 3};
  set_lod1(&pd_scope_find_var(src, pnames[0])->u.tensor, 3, offs);
  ok(pd_checkpoint_save(path, src, NP, pnames, &meta, &err) == PD_OK, "save a checkpoint");
  ok(pd_checkpoint_load(path, dst, p, &got, &err) == PD_OK, "load it (%s)",
     err.msg ? err.msg : "checked against the program");
  ok(scopes_agree(src, dst, NP, pnames) && pd_scope_num_vars(dst) == 5,
     "the tensors (LoD included) are back");
  ok(same_meta(&meta, &got), "the metadata is back: epoch %" PRId64 ", step %" PRId64
     ", global step %" PRId64 ", rng offset, a seed above 2^63, loss %g, note \"%s\"",
     got.epoch, got.step, got.global_step, got.loss, got.note);
  ok(pd_checkpoint_load(path, dst, NULL, NULL, &err) == PD_OK, "meta and program may be NULL");

  /* Known answer for a small checkpoint, written from the format in params.h. */
  const char *kat_path = tmp_path("kat.ckpt");
  pd_scope *ks = pd_scope_new(NULL);
  int64_t two = 2;
  static const int32_t iv[] = {7, -1};
  pd_tensor_set_data(var_tensor(ks, "w"), PD_INT32, 1, &two, iv);
  pd_ckpt_meta km = {.epoch = 1, .step = 2, .global_step = 3, .rng_offset = 4, .seed = 5,
                     .loss = 0.5};
  snprintf(km.note, sizeof km.note, "hi");
  snprintf(km.setup, sizeof km.setup, "k=v");
  const char *wname[] = {"w"};
  pd_buf want;
  pd_buf_init(&want);
  pd_buf_append(&want, "PDCKPT01", 8);
  put32(&want, 1);
  put32(&want, 1);
  pd_buf_append(&want, "w", 1);
  put32(&want, 0);                             /* the stream: LoD-tensor version */
  put64(&want, 0);                             /* no LoD */
  put32(&want, 0);                             /* tensor version */
  put32(&want, 4);                             /* TensorDesc: INT32, [2] */
  pd_buf_append(&want, "\x08\x02\x10\x02", 4);
  put32(&want, 7);
  put32(&want, (uint32_t)-1);
  put32(&want, 8);                             /* 8 metadata entries */
  put_key(&want, "epoch", 'i');
  put64(&want, 1);
  put_key(&want, "step", 'i');
  put64(&want, 2);
  put_key(&want, "global_step", 'i');
  put64(&want, 3);
  put_key(&want, "rng_offset", 'i');
  put64(&want, 4);
  put_key(&want, "seed", 'i');
  put64(&want, 5);
  put_key(&want, "loss", 'd');
  put64(&want, 0x3fe0000000000000ull);         /* 0.5 */
  put_key(&want, "note", 's');
  put32(&want, 2);
  pd_buf_append(&want, "hi", 2);
  put_key(&want, "setup", 's');
  put32(&want, 3);
  pd_buf_append(&want, "k=v", 3);
  put_crc(&want);
  size_t klen;
  char *kbytes = NULL;
  ok(pd_checkpoint_save(kat_path, ks, 1, wname, &km, &err) == PD_OK &&
         (kbytes = slurp(kat_path, &klen)) != NULL && klen == want.len &&
         memcmp(kbytes, want.data, klen) == 0,
     "a one-var checkpoint is byte for byte the documented format (%zu bytes)", want.len);
  pd_free(kbytes);

  /* The setup: the same one loads; another is refused before anything is installed, naming
   * what differs (a hash by name only, a text with both values); a checkpoint without one
   * (older writers) loads whatever the setup. */
  pd_ckpt_meta sm = {0};
  snprintf(sm.setup, sizeof sm.setup, "program=#00000000000000aa\noptimizer=sgd(lr=0.1)");
  ok(pd_checkpoint_save(kat_path, ks, 1, wname, &sm, &err) == PD_OK, "save with a setup");
  pd_scope *ss = pd_scope_new(NULL);
  pd_ckpt_meta sgot = {0};
  ok(pd_checkpoint_load_setup(kat_path, ss, NULL, sm.setup, &sgot, &err) == PD_OK &&
         strcmp(sgot.setup, sm.setup) == 0,
     "the same setup loads, and the setup is read back");
  pd_scope_free(ss);
  ss = pd_scope_new(NULL);
  const char *other_setup = "program=#00000000000000bb\noptimizer=adam(lr=0.1)\nreader=x";
  pd_status sst = pd_checkpoint_load_setup(kat_path, ss, NULL, other_setup, NULL, &err);
  ok(sst == PD_EINVAL && err.msg &&
         strstr(err.msg, "written by another training setup: the program differs; the optimizer "
                         "is sgd(lr=0.1) in the checkpoint but adam(lr=0.1) now; the reader "
                         "differs") &&
         err.loc.file && strcmp(err.loc.file, kat_path) == 0 && !pd_scope_find_local_var(ss, "w"),
     "another setup is refused, saying what differs, nothing installed: %s",
     err.msg ? err.msg : "(none)");
  pd_error_clear(&err);
  pd_scope_free(ss);
  ok(pd_checkpoint_save(kat_path, ks, 1, wname, NULL, &err) == PD_OK, "save without a setup");
  ss = pd_scope_new(NULL);
  ok(pd_checkpoint_load_setup(kat_path, ss, NULL, "program=#00000000000000bb", NULL, &err) ==
         PD_OK && pd_scope_find_local_var(ss, "w"),
     "a checkpoint without a setup loads into any setup");
  pd_scope_free(ss);
  pd_scope_free(ks);

  /* Metadata from a newer writer: unknown keys are skipped; a known key must keep its tag. */
  const char *crafted = tmp_path("crafted.ckpt");
  pd_buf c;
  pd_buf_init(&c);
  pd_buf_append(&c, "PDCKPT01", 8);
  put32(&c, 0);
  put32(&c, 3);
  put_key(&c, "future", 's');
  put32(&c, 3);
  pd_buf_append(&c, "abc", 3);
  put_key(&c, "epoch", 'i');
  put64(&c, 9);
  put_key(&c, "later", 'd');
  put64(&c, 0);
  put_crc(&c);
  pd_write_file_atomic(crafted, c.data, c.len, NULL);
  pd_ckpt_meta fm = sample_meta();
  ok(pd_checkpoint_load(crafted, dst, NULL, &fm, &err) == PD_OK && fm.epoch == 9 && fm.step == 0 &&
         fm.note[0] == '\0',
     "unknown metadata keys are skipped, missing ones read as 0");
  /* Hand-made bad checkpoints, each with a valid CRC. */
  pd_buf_clear(&c);
  pd_buf_append(&c, "PDCKPT01", 8);
  put32(&c, 0);
  put32(&c, 1);
  put_key(&c, "epoch", 'd');
  put64(&c, 0);
  put_crc(&c);
  pd_write_file_atomic(crafted, c.data, c.len, NULL);
  ok(ckpt_refused(crafted, NULL, PD_EFORMAT, "metadata 'epoch' has tag 'd', expected 'i'"),
     "a known key with another tag");
  pd_buf_clear(&c);
  pd_buf_append(&c, "PDCKPT01", 8);
  put32(&c, 0);
  put32(&c, 2);
  put_key(&c, "step", 'i');
  put64(&c, 0);
  put_key(&c, "step", 'i');
  put64(&c, 1);
  put_crc(&c);
  pd_write_file_atomic(crafted, c.data, c.len, NULL);
  ok(ckpt_refused(crafted, NULL, PD_EFORMAT, "metadata 'step' appears twice"), "a repeated key");
  pd_buf_clear(&c);
  pd_buf_append(&c, "PDCKPT01", 8);
  put32(&c, 0);
  put32(&c, 1);
  put_key(&c, "x", 'q');
  put64(&c, 0);
  put_crc(&c);
  pd_write_file_atomic(crafted, c.data, c.len, NULL);
  ok(ckpt_refused(crafted, NULL, PD_EFORMAT, "byte 21: unknown metadata tag 0x71"),
     "an unknown tag");
  pd_buf_clear(&c);
  pd_buf_append(&c, "PDCKPT01", 8);
  put32(&c, 2);
  for (int i = 0; i < 2; i++) {
    put32(&c, 1);
    pd_buf_append(&c, "a", 1);
    pd_buf_append(&c, kat_i64_scalar, sizeof kat_i64_scalar);
  }
  put32(&c, 0);
  put_crc(&c);
  pd_write_file_atomic(crafted, c.data, c.len, NULL);
  ok(ckpt_refused(crafted, NULL, PD_EFORMAT, "var 'a' appears twice"), "a repeated var");
  pd_buf_clear(&c);
  pd_buf_append(&c, "PDCKPT01", 8);
  put32(&c, 1);
  put32(&c, 1);
  pd_buf_append(&c, "a", 1);
  pd_buf_append(&c, kat_i64_scalar, sizeof kat_i64_scalar - 1);
  put_crc(&c);
  pd_write_file_atomic(crafted, c.data, c.len, NULL);
  ok(ckpt_refused(crafted, NULL, PD_EFORMAT, "var 'a' (1 of 1): byte "),
     "a short tensor inside a checkpoint with a good CRC");
  pd_buf_clear(&c);
  pd_buf_append(&c, "PDCKPT01", 8);
  put32(&c, 0);
  put32(&c, 0);
  pd_buf_append(&c, "zz", 2);
  put_crc(&c);
  pd_write_file_atomic(crafted, c.data, c.len, NULL);
  ok(ckpt_refused(crafted, NULL, PD_EFORMAT, "2 unexpected bytes before the checksum"),
     "bytes between the metadata and the checksum");
  pd_buf_free(&c);

  /* Damage: every flipped byte, every prefix. */
  size_t len;
  char *bytes = slurp(path, &len);
  const char *damaged = tmp_path("damaged.ckpt");
  int all = 1, crc_named = 1;
  for (size_t i = 0; bytes && i < len; i++) {
    bytes[i] ^= 0x20;
    pd_write_file_atomic(damaged, bytes, len, NULL);
    bytes[i] ^= 0x20;
    all &= ckpt_refused(damaged, p, 0, NULL);
    if (i >= 8) crc_named &= ckpt_refused(damaged, p, PD_EFORMAT, "checksum mismatch");
  }
  ok(bytes && all && crc_named, "each of the %zu bytes flipped: refused (the CRC names it past "
     "the magic), scope and meta untouched", len);
  all = 1;
  for (size_t k = 0; bytes && k < len; k++) {
    pd_write_file_atomic(damaged, bytes, k, NULL);
    all &= ckpt_refused(damaged, p, PD_EFORMAT, NULL);
  }
  ok(bytes && all, "each of the %zu proper prefixes: refused", len);
  pd_write_file_atomic(damaged, "PDCKPT02xxxxxxxxxxxxxxxx", 24, NULL);
  ok(ckpt_refused(damaged, p, PD_EUNSUPPORTED, "checkpoint format PDCKPT02 is not supported"),
     "a later format version");
  pd_write_file_atomic(damaged, "hello world, not a checkpoint", 29, NULL);
  ok(ckpt_refused(damaged, p, PD_EFORMAT, "not a pdlang checkpoint"), "not a checkpoint");
  ok(ckpt_refused(tmp_path("missing.ckpt"), p, PD_EIO, "cannot open"), "a missing file");
  pd_free(bytes);

  /* Against the program. */
  pd_program *q = param_program();
  pd_block_remove_var(pd_program_block(q, 0), pnames[3]);
  ok(ckpt_refused(path, q, PD_ENOTFOUND, "holds var 'mask', which the program does not declare"),
     "a var the program does not declare is named");
  pd_var_desc *v = pd_block_var(pd_program_block(q, 0), pnames[3]);
  v->dtype = PD_BOOL;
  pd_var_set_shape(v, 2, (int64_t[]){1, 3});
  ok(ckpt_refused(path, q, PD_ESHAPE, "'mask' has shape [0, 3] in the file but [1, 3]"),
     "a var of another shape");
  pd_program_free(q);

  /* Save errors. */
  const char *dup[] = {pnames[0], pnames[0]};
  ok(pd_checkpoint_save(tmp_path("dup.ckpt"), src, 2, dup, NULL, &err) == PD_EINVAL &&
         has(&err, "listed twice"),
     "a var listed twice is refused");
  const char *ghost[] = {"ghost"};
  ok(pd_checkpoint_save(tmp_path("dup.ckpt"), src, 1, ghost, NULL, &err) == PD_ENOTFOUND &&
         access(tmp_path("dup.ckpt"), F_OK) != 0,
     "a missing var: nothing written");
  pd_ckpt_meta longnote = {0};
  memset(longnote.note, 'x', sizeof longnote.note);  /* no NUL: cut on save */
  ok(pd_checkpoint_save(tmp_path("note.ckpt"), src, 1, pnames, &longnote, &err) == PD_OK &&
         pd_checkpoint_load(tmp_path("note.ckpt"), dst, NULL, &got, &err) == PD_OK &&
         strlen(got.note) == sizeof got.note - 1,
     "a note without its NUL is cut to %zu bytes", sizeof got.note - 1);
  ok(pd_checkpoint_save(tmp_path("empty.ckpt"), src, 0, NULL, NULL, &err) == PD_OK &&
         pd_checkpoint_load(tmp_path("empty.ckpt"), dst, NULL, &got, &err) == PD_OK &&
         got.epoch == 0 && got.note[0] == '\0',
     "no vars and no meta: a valid, empty checkpoint");

  pd_buf_free(&want);
  pd_error_clear(&err);
  pd_program_free(p);
  pd_scope_free(src);
  pd_scope_free(dst);
}

/* ---- Out of memory at every allocation ---- */

typedef pd_status (*op_fn)(void *ctx);

typedef struct oom_ctx {
  pd_scope *src, *dst;
  pd_program *p;
  const char *params, *ckpt;
  pd_buf buf;
  pd_tensor t;
} oom_ctx;

static pd_status op_write_stream(void *c) {
  oom_ctx *x = c;
  pd_buf_free(&x->buf);
  return pd_tensor_write_stream(&pd_scope_find_var(x->src, pnames[0])->u.tensor, &x->buf, NULL);
}

static pd_status op_read_stream(void *c) {
  oom_ctx *x = c;
  size_t pos = 0;
  pd_error err = {0};
  pd_status st = pd_tensor_read_stream(kat_fp32, sizeof kat_fp32, &pos, &x->t, &err);
  pd_error_clear(&err);
  return st;
}

static pd_status op_params_save(void *c) {
  oom_ctx *x = c;
  pd_error err = {0};
  pd_status st = pd_params_save(x->params, x->src, NP, pnames, &err);
  pd_error_clear(&err);
  return st;
}

static pd_status op_params_load(void *c) {
  oom_ctx *x = c;
  pd_error err = {0};
  pd_status st = pd_params_load(x->params, x->dst, NP, pnames, x->p, &err);
  pd_error_clear(&err);
  return st;
}

static pd_status op_ckpt_save(void *c) {
  oom_ctx *x = c;
  pd_ckpt_meta m = sample_meta();
  pd_error err = {0};
  pd_status st = pd_checkpoint_save(x->ckpt, x->src, NP, pnames, &m, &err);
  pd_error_clear(&err);
  return st;
}

static pd_status op_ckpt_load(void *c) {
  oom_ctx *x = c;
  pd_ckpt_meta m = {0};
  pd_error err = {0};
  pd_status st = pd_checkpoint_load(x->ckpt, x->dst, x->p, &m, &err);
  pd_error_clear(&err);
  return st;
}

static void test_oom(void) {
  oom_ctx x = {.src = param_scope(9), .p = param_program(), .params = tmp_path("oom.pdiparams"),
               .ckpt = tmp_path("oom.ckpt")};
  pd_buf_init(&x.buf);
  pd_tensor_init(&x.t);
  static const struct {
    const char *what;
    op_fn fn;
    int is_load;
  } ops[] = {{"pd_tensor_write_stream", op_write_stream, 0},
             {"pd_tensor_read_stream", op_read_stream, 0},
             {"pd_params_save", op_params_save, 0},
             {"pd_params_load", op_params_load, 1},
             {"pd_checkpoint_save", op_ckpt_save, 0},
             {"pd_checkpoint_load", op_ckpt_load, 1}};
  for (size_t i = 0; i < PD_ARRAY_LEN(ops); i++) {
    x.dst = target_scope();
    pd_alloc_fail_after(0);
    pd_status st0 = ops[i].fn(&x);
    long total = pd_alloc_fail_after(0);
    pd_scope_free(x.dst);
    int clean = st0 == PD_OK;
    for (long k = 1; k <= total; k++) {
      x.dst = target_scope();
      pd_alloc_fail_after(k);
      pd_status st = ops[i].fn(&x);
      pd_alloc_fail_after(0);
      if (st != PD_ENOMEM || (ops[i].is_load && !untouched(x.dst))) {
        clean = 0;
        printf("#   %s, allocation %ld failing: %s\n", ops[i].what, k, pd_status_str(st));
      }
      pd_scope_free(x.dst);
    }
    x.dst = target_scope();
    pd_alloc_fail_after(total + 1);
    st0 = ops[i].fn(&x);
    pd_alloc_fail_after(0);
    pd_scope_free(x.dst);
    ok(clean && total > 0 && st0 == PD_OK,
       "%s: each of its %ld allocations failing gives PD_ENOMEM%s; then it succeeds", ops[i].what,
       total, ops[i].is_load ? " and an untouched scope" : "");
  }
  pd_buf_free(&x.buf);
  pd_tensor_release(&x.t);
  pd_program_free(x.p);
  pd_scope_free(x.src);
}

static void remove_dir(void) {
  static const char *const files[] = {
      "model.pdiparams", "again.pdiparams", "none.pdiparams", "errors.pdiparams",
      "damaged.pdiparams", "train.ckpt", "kat.ckpt", "crafted.ckpt", "damaged.ckpt",
      "note.ckpt", "empty.ckpt", "oom.pdiparams", "oom.ckpt"};
  for (size_t i = 0; i < PD_ARRAY_LEN(files); i++) unlink(tmp_path(files[i]));
  rmdir(dir);
}

int main(void) {
  if (!mkdtemp(dir)) {
    ok(0, "a temporary directory");
    return tap_done();
  }
  test_stream_roundtrip();
  test_known_answer();
  test_malformed_streams();
  test_params_roundtrip();
  test_params_errors();
  test_checkpoint();
  test_oom();
  remove_dir();
  return tap_done();
}
