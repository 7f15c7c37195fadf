/* test_reader.c -- the data readers (vm/reader/reader.h): IDX (raw, gzipped, multi-member gzip), MNIST
 * paths and environment variables, CSV, .npy v1/v2/v3, text windows, lines (one sequence per
 * line, splits), every kind of bad input, allocation failures, and batching (sizes, partial
 * batches, drop_last, shuffle determinism against an independent implementation of the
 * documented permutation, prefetch on and off; sequence fields concatenated with their LoD,
 * checked against values recomputed from each sample's index). Fixtures are written to a
 * temporary directory; the shipped examples/data/norris.csv is checked against NIST's certified
 * regression coefficients; Fashion-MNIST is loaded when installed. */
#include "config.h"
#include "vm/reader/reader.h"
#include "tests/tap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- Fixture files ---- */

static char tmpdir[256];
static char made[128][300];
static int nmade;

static const char *tpath(const char *name) {
  static char buf[8][300];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 300, "%s/%s", tmpdir, name);
  return p;
}

/* Record a fixture for cleanup; returns a stable copy of its path. */
static const char *remember(const char *path) {
  for (int i = 0; i < nmade; i++)
    if (strcmp(made[i], path) == 0) return made[i];
  if (nmade >= 128) {
    printf("Bail out! too many fixtures\n");
    exit(1);
  }
  snprintf(made[nmade], sizeof made[0], "%s", path);
  return made[nmade++];
}

static const char *write_file(const char *name, const void *data, size_t len) {
  const char *p = tpath(name);
  FILE *f = fopen(p, "wb");
  if (!f) {
    printf("# cannot write %s\n", p);
    exit(1);
  }
  if (len) fwrite(data, 1, len, f);
  fclose(f);
  return remember(p);
}

static const char *write_text(const char *name, const char *text) {
  return write_file(name, text, strlen(text));
}

static const char *write_gz(const char *name, const void *data, size_t len) {
  const char *p = tpath(name);
  gzFile g = gzopen(p, "wb");
  if (!g) exit(1);
  if (len) gzwrite(g, data, (unsigned)len);
  gzclose(g);
  return remember(p);
}

/* The bytes of a file (malloc; test code). */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  *len = fread(b, 1, (size_t)n, f);
  fclose(f);
  return b;
}

static void cleanup(void) {
  for (int i = 0; i < nmade; i++) unlink(made[i]);
  char sub[300];
  snprintf(sub, sizeof sub, "%s/fm", tmpdir);
  rmdir(sub);
  snprintf(sub, sizeof sub, "%s/empty", tmpdir);
  rmdir(sub);
  rmdir(tmpdir);
}

/* ---- IDX fixtures: pixel (i, j) = (i * 31 + j * 7) & 255, label i = (3 * i) % 10. ---- */

static unsigned char pixel(int i, int j) { return (unsigned char)((i * 31 + j * 7) & 255); }

static void be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

static size_t idx_images(unsigned char *buf, int n, int rows, int cols) {
  buf[0] = buf[1] = 0;
  buf[2] = 8;
  buf[3] = 3;
  be32(buf + 4, (uint32_t)n);
  be32(buf + 8, (uint32_t)rows);
  be32(buf + 12, (uint32_t)cols);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < rows * cols; j++) buf[16 + i * rows * cols + j] = pixel(i, j);
  return 16 + (size_t)n * rows * cols;
}

static size_t idx_labels(unsigned char *buf, int n) {
  buf[0] = buf[1] = 0;
  buf[2] = 8;
  buf[3] = 1;
  be32(buf + 4, (uint32_t)n);
  for (int i = 0; i < n; i++) buf[8 + i] = (unsigned char)((3 * i) % 10);
  return 8 + (size_t)n;
}

static bool msg_has(const pd_error *e, const char *needle) {
  return e->msg && strstr(e->msg, needle) != NULL;
}

/* Expect status `want` and a message containing both needles (NULL: any). */
#define expect_err(st_, want, e, n1, n2, what)                                                    \
  do {                                                                                            \
    pd_status s__ = (st_);                                                                        \
    const char *n1__ = (n1), *n2__ = (n2);                                                        \
    bool ok__ = s__ == (want) && (!n1__ || msg_has(&(e), n1__)) && (!n2__ || msg_has(&(e), n2__)); \
    if (!ok(ok__, "%s", what))                                                                    \
      printf("#   status %s, message: %s\n", pd_status_str(s__), (e).msg ? (e).msg : "(none)");  \
    pd_error_clear(&(e));                                                                         \
  } while (0)

static bool check_idx_values(const pd_dataset *d, int n, int rows, int cols) {
  if (!d || pd_dataset_size(d) != n || pd_dataset_nfields(d) != 2) return false;
  const unsigned char *im = pd_dataset_field_data(d, 0);   /* held as the bytes (reader.h) */
  const int64_t *lb = pd_dataset_field_data(d, 1);
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < rows * cols; j++)
      if (im[i * rows * cols + j] != pixel(i, j)) return false;
    if (lb[i] != (3 * i) % 10) return false;
  }
  return true;
}

static void test_idx(void) {
  unsigned char img[16 + 5 * 12], lab[8 + 5];
  size_t ni = idx_images(img, 5, 3, 4), nl = idx_labels(lab, 5);
  const char *pi = write_file("img.idx", img, ni), *pl = write_file("lab.idx", lab, nl);
  pd_error e = {0};
  pd_dataset *d = NULL;
  ok(pd_dataset_idx(pi, pl, &d, &e) == PD_OK, "IDX pair loads");
  is_int(pd_dataset_size(d), 5, "5 samples");
  is_int(pd_dataset_nfields(d), 2, "two fields");
  is_str(pd_dataset_field_name(d, 0), "images", "field 0 is images");
  is_str(pd_dataset_field_name(d, 1), "label", "field 1 is label");
  is_int(pd_dataset_field_index(d, "label"), 1, "field_index finds label");
  is_int(pd_dataset_field_index(d, "nope"), -1, "field_index of an unknown name is -1");
  ok(pd_dataset_field_dtype(d, 0) == PD_FP32 && pd_dataset_field_dtype(d, 1) == PD_INT64,
     "images fp32, label int64");
  int64_t dims[PD_TENSOR_MAX_DIMS];
  ok(pd_dataset_field_shape(d, 0, dims) == 1 && dims[0] == 12, "images per sample [12]");
  ok(pd_dataset_field_shape(d, 1, dims) == 1 && dims[0] == 1, "label per sample [1]");
  ok(pd_dataset_field_shape(d, 2, dims) == -1 && pd_dataset_field_name(d, 2) == NULL &&
         pd_dataset_field_data(d, -1) == NULL,
     "out-of-range field index gives -1 / NULL");
  ok(check_idx_values(d, 5, 3, 4), "pixels held as the bytes, labels as stored");
  pd_dataset_free(d);

  const char *gi = write_gz("img.idx.gz", img, ni), *gl = write_gz("lab.idx.gz", lab, nl);
  d = NULL;
  ok(pd_dataset_idx(gi, gl, &d, &e) == PD_OK && check_idx_values(d, 5, 3, 4),
     "gzipped IDX pair gives the same values");
  pd_dataset_free(d);
  d = NULL;
  ok(pd_dataset_idx(gi, pl, &d, &e) == PD_OK && check_idx_values(d, 5, 3, 4),
     "gzipped images with raw labels");
  pd_dataset_free(d);

  /* Two gzip members back to back (cat a.gz b.gz). */
  size_t l1, l2;
  write_gz("part1.gz", img, 30);
  write_gz("part2.gz", img + 30, ni - 30);
  unsigned char *p1 = slurp(tpath("part1.gz"), &l1), *p2 = slurp(tpath("part2.gz"), &l2);
  unsigned char *cat = malloc(l1 + l2);
  memcpy(cat, p1, l1);
  memcpy(cat + l1, p2, l2);
  const char *mi = write_file("multi.idx.gz", cat, l1 + l2);
  d = NULL;
  ok(pd_dataset_idx(mi, gl, &d, &e) == PD_OK && check_idx_values(d, 5, 3, 4),
     "a multi-member gzip file reads as one stream");
  pd_dataset_free(d);
  if (e.msg) printf("# %s\n", e.msg);
  pd_error_clear(&e);

  /* Garbage after the gzip stream. */
  memcpy(cat + l1, "garbage!", 8);
  const char *gg = write_file("garbage.gz", cat, l1 + 8);
  d = NULL;
  expect_err(pd_dataset_idx(gg, gl, &d, &e), PD_EFORMAT, e, "garbage.gz", NULL,
             "data after the gzip stream is an error");
  ok(d == NULL, "failed load leaves *out NULL");
  free(cat);
  free(p1);
  free(p2);
}

static void test_idx_errors(void) {
  unsigned char img[16 + 5 * 12], lab[8 + 5], buf[256];
  size_t ni = idx_images(img, 5, 3, 4), nl = idx_labels(lab, 5);
  const char *pi = write_file("img.idx", img, ni), *pl = write_file("lab.idx", lab, nl);
  pd_error e = {0};
  pd_dataset *d = NULL;

  expect_err(pd_dataset_idx(tpath("nope.idx"), pl, &d, &e), PD_ENOTFOUND, e, "nope.idx",
             "No such file", "missing file: PD_ENOTFOUND naming it");
  expect_err(pd_dataset_idx(tmpdir, pl, &d, &e), PD_EIO, e, "directory", NULL,
             "a directory is refused");
  expect_err(pd_dataset_idx(write_file("empty.idx", "", 0), pl, &d, &e), PD_EFORMAT, e,
             "empty file", NULL, "empty file");
  memcpy(buf, "<!DOCTYPE html>", 15);
  expect_err(pd_dataset_idx(write_file("html.idx", buf, 15), pl, &d, &e), PD_EFORMAT, e,
             "not an IDX file", "3c 21 44 4f", "wrong magic shows the bytes");
  memcpy(buf, img, ni);
  buf[2] = 0x0D;
  expect_err(pd_dataset_idx(write_file("float.idx", buf, ni), pl, &d, &e), PD_EUNSUPPORTED, e,
             "0x0d", "float32", "IDX float data is unsupported");
  expect_err(pd_dataset_idx(write_file("hdr.idx", img, 10), pl, &d, &e), PD_EFORMAT, e,
             "truncated", "inside the header", "truncated header");
  expect_err(pd_dataset_idx(write_file("magic.idx", img, 3), pl, &d, &e), PD_EFORMAT, e,
             "truncated", "magic", "truncated magic");
  expect_err(pd_dataset_idx(write_file("short.idx", img, ni - 7), pl, &d, &e), PD_EFORMAT, e,
             "short.idx: truncated", "5 x 3 x 4 images", "truncated data (raw): named, with dims");
  memcpy(buf, img, ni);
  buf[ni] = 1;
  expect_err(pd_dataset_idx(write_file("long.idx", buf, ni + 1), pl, &d, &e), PD_EFORMAT, e,
             "unexpected data after byte 76", NULL, "trailing data (raw)");
  expect_err(pd_dataset_idx(write_gz("long.idx.gz", buf, ni + 1), pl, &d, &e), PD_EFORMAT, e,
             "unexpected data after byte 76 (uncompressed)", NULL, "trailing data (gzip)");
  /* Truncated gzip: the data is short inside the compressed stream. */
  write_gz("full.gz", img, ni);
  size_t gl;
  unsigned char *g = slurp(tpath("full.gz"), &gl);
  expect_err(pd_dataset_idx(write_file("cut.gz", g, gl - 12), pl, &d, &e), PD_EFORMAT, e,
             "cut.gz: truncated gzip stream", NULL, "truncated gzip stream");
  expect_err(pd_dataset_idx(write_file("cut2.gz", g, gl - 4), pl, &d, &e), PD_EFORMAT, e,
             "truncated gzip stream", NULL, "gzip missing its size trailer");
  /* Corrupt gzip: a bad CRC, then an invalid block type. */
  g[gl - 8] ^= 0xFF;
  expect_err(pd_dataset_idx(write_file("crc.gz", g, gl), pl, &d, &e), PD_EFORMAT, e,
             "crc.gz: corrupt gzip stream", "incorrect data check", "gzip CRC mismatch");
  g[gl - 8] ^= 0xFF;
  g[10] = 0xFF;
  expect_err(pd_dataset_idx(write_file("btype.gz", g, gl), pl, &d, &e), PD_EFORMAT, e,
             "corrupt gzip stream", "invalid block type", "gzip with an invalid block");
  free(g);

  /* Header dims. */
  unsigned char lab4[8 + 4];
  idx_labels(lab4, 4);
  expect_err(pd_dataset_idx(pi, write_file("lab4.idx", lab4, 12), &d, &e), PD_EFORMAT, e,
             "5 images", "4 labels", "image and label counts disagree");
  memcpy(buf, img, 16);
  be32(buf + 4, 0xFFFFFFFFu);
  be32(buf + 8, 0xFFFFFFFFu);
  be32(buf + 12, 0xFFFFFFFFu);
  expect_err(pd_dataset_idx(write_file("ovf.idx", buf, 16), pl, &d, &e), PD_EFORMAT, e,
             "overflow", NULL, "dims that overflow");
  be32(buf + 4, 0x7FFFFFFFu);
  be32(buf + 8, 28);
  be32(buf + 12, 28);
  expect_err(pd_dataset_idx(write_file("big.idx", buf, 16), pl, &d, &e), PD_EFORMAT, e,
             "truncated", "2147483647 x 28 x 28", "a header announcing far more than the file");
  expect_err(pd_dataset_idx(write_gz("big.idx.gz", buf, 16), pl, &d, &e), PD_EFORMAT, e,
             "gzip file can hold", NULL, "a gzip header announcing more than deflate can hold");
  be32(buf + 4, 0);
  expect_err(pd_dataset_idx(write_file("zero.idx", buf, 16), pl, &d, &e), PD_EFORMAT, e,
             "dim 0 as 0", NULL, "zero samples");
  memcpy(buf, lab, nl);
  buf[3] = 2;
  expect_err(pd_dataset_idx(pi, write_file("lab2.idx", buf, nl), &d, &e), PD_EFORMAT, e,
             "labels has rank 1", "rank 2", "labels of rank 2");
  ok(d == NULL, "no dataset after failures");
}

static void test_mnist_paths(void) {
  char fm[300], empty[300];
  snprintf(fm, sizeof fm, "%s/fm", tmpdir);
  snprintf(empty, sizeof empty, "%s/empty", tmpdir);
  mkdir(fm, 0700);
  mkdir(empty, 0700);
  unsigned char img[16 + 7 * 28 * 28], lab[8 + 7];
  size_t ni = idx_images(img, 7, 28, 28), nl = idx_labels(lab, 7);
  write_gz("fm/t10k-images-idx3-ubyte.gz", img, ni);
  write_file("fm/t10k-labels-idx1-ubyte", lab, nl);   /* not gzipped: also found */
  pd_error e = {0};
  pd_dataset *d = NULL;
  const char *saved = getenv("PDLANG_FASHION_MNIST");
  char *saved_copy = saved ? strdup(saved) : NULL;
  setenv("PDLANG_FASHION_MNIST", fm, 1);
  ok(pd_dataset_mnist("fashion_mnist", "test", NULL, &d, &e) == PD_OK &&
         check_idx_values(d, 7, 28, 28),
     "fashion_mnist test split from $PDLANG_FASHION_MNIST (.gz and plain files)");
  int64_t dims[PD_TENSOR_MAX_DIMS];
  ok(d && pd_dataset_field_shape(d, 0, dims) == 1 && dims[0] == 784, "images are [784]");
  pd_dataset_free(d);
  d = NULL;
  expect_err(pd_dataset_mnist("fashion_mnist", "train", NULL, &d, &e), PD_ENOTFOUND, e,
             "train-images-idx3-ubyte.gz", "$PDLANG_FASHION_MNIST",
             "missing train files: names the file and the variable it came from");
  setenv("PDLANG_FASHION_MNIST", empty, 1);
  ok(pd_dataset_mnist("fashion-mnist", "test", fm, &d, &e) == PD_OK, "a directory argument wins");
  pd_dataset_free(d);
  d = NULL;
  expect_err(pd_dataset_mnist("fashion_mnist", "test", empty, &d, &e), PD_ENOTFOUND, e,
             empty, "t10k-images-idx3-ubyte", "missing files in a given directory");
  unsetenv("PDLANG_FASHION_MNIST");
  struct stat st;
  if (stat("/usr/share/datasets/mnist", &st) != 0) {
    unsetenv("PDLANG_MNIST");
    expect_err(pd_dataset_mnist("mnist", "train", NULL, &d, &e), PD_ENOTFOUND, e,
               "/usr/share/datasets/mnist", "set $PDLANG_MNIST",
               "MNIST absent: the default path and the variable to set");
  } else {
    ok(1, "# SKIP /usr/share/datasets/mnist exists");
  }
  if (saved_copy) setenv("PDLANG_FASHION_MNIST", saved_copy, 1);
  free(saved_copy);
  expect_err(pd_dataset_mnist("cifar", "train", fm, &d, &e), PD_EINVAL, e, "cifar", NULL,
             "unknown dataset name");
  expect_err(pd_dataset_mnist("mnist", "valid", fm, &d, &e), PD_EINVAL, e, "valid", NULL,
             "unknown split");
}

/* The real Fashion-MNIST, when installed (Debian: dataset-fashion-mnist). */
static void test_fashion_real(void) {
  const char *dir = "/usr/share/datasets/fashion-mnist";
  struct stat st;
  if (stat("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", &st) != 0 &&
      stat("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte", &st) != 0) {
    ok(1, "# SKIP Fashion-MNIST is not installed in %s", dir);
    return;
  }
  const char *splits[2] = {"train", "test"};
  const int64_t sizes[2] = {60000, 10000};
  for (int s = 0; s < 2; s++) {
    pd_error e = {0};
    pd_dataset *d = NULL;
    pd_status stt = pd_dataset_mnist("fashion_mnist", splits[s], dir, &d, &e);
    if (!ok(stt == PD_OK, "Fashion-MNIST %s loads", splits[s])) {
      printf("# %s\n", e.msg ? e.msg : "");
      pd_error_clear(&e);
      continue;
    }
    is_int(pd_dataset_size(d), sizes[s], "%s has %lld samples", splits[s], (long long)sizes[s]);
    const unsigned char *im = pd_dataset_field_data(d, 0);   /* held as the bytes */
    const int64_t *lb = pd_dataset_field_data(d, 1);
    unsigned char lo = 255, hi = 0;
    for (int64_t i = 0; i < sizes[s] * 784; i++) {
      if (im[i] < lo) lo = im[i];
      if (im[i] > hi) hi = im[i];
    }
    ok(lo == 0 && hi == 255, "%s pixel bytes span 0..255 (batched as [0, 1])", splits[s]);
    int64_t count[10] = {0};
    bool in_range = true;
    for (int64_t i = 0; i < sizes[s]; i++) {
      if (lb[i] < 0 || lb[i] > 9) in_range = false;
      else count[lb[i]]++;
    }
    ok(in_range, "%s labels in 0..9", splits[s]);
    bool balanced = true;
    for (int c = 0; c < 10; c++) balanced &= count[c] == sizes[s] / 10;
    ok(balanced, "%s has %lld samples of each class", splits[s], (long long)sizes[s] / 10);
    if (s == 0) {
      /* One shuffled, prefetched epoch over the real data: every sample exactly once. */
      pd_batcher *b = NULL;
      pd_batcher_options o = {.batch = 256, .shuffle = true, .seed = 7, .prefetch = true};
      pd_tensor t[2];
      pd_tensor_init(&t[0]);
      pd_tensor_init(&t[1]);
      int64_t rows, total = 0, nb = 0;
      int64_t cls[10] = {0};
      bool good = pd_batcher_new(d, &o, &b, &e) == PD_OK;
      while (good && pd_batcher_next(b, t, &rows, &e) == PD_OK && rows > 0) {
        total += rows;
        nb++;
        for (int64_t r = 0; r < rows; r++) cls[PD_TENSOR_I64(&t[1])[r]]++;
      }
      bool bal = true;
      for (int c = 0; c < 10; c++) bal &= cls[c] == 6000;
      ok(good && total == 60000 && nb == 235 && nb == pd_batcher_num_batches(b) && bal,
         "a prefetched shuffled epoch over Fashion-MNIST train: 235 batches, 60000 samples");
      pd_batcher_free(b);
      pd_tensor_release(&t[0]);
      pd_tensor_release(&t[1]);
    }
    pd_dataset_free(d);
  }
}

/* ---- CSV ---- */

static void test_csv(void) {
  pd_error e = {0};
  pd_dataset *d = NULL;
  const char *p = write_text("a.csv", "a,b,label\n1,2.5,0\n-3,4e1,2\n5, 6 ,1\n");
  ok(pd_dataset_csv(p, NULL, 0, NULL, &d, &e) == PD_OK, "CSV loads");
  is_int(pd_dataset_size(d), 3, "3 rows");
  is_str(pd_dataset_field_name(d, 0), "features", "field 0 features");
  is_str(pd_dataset_field_name(d, 1), "label", "field 1 label");
  int64_t dims[PD_TENSOR_MAX_DIMS];
  ok(pd_dataset_field_shape(d, 0, dims) == 1 && dims[0] == 2, "features per sample [2]");
  ok(pd_dataset_field_dtype(d, 1) == PD_INT64, "integer labels are int64");
  const float *f = pd_dataset_field_data(d, 0);
  const int64_t *l = pd_dataset_field_data(d, 1);
  ok(f[0] == 1 && f[1] == 2.5f && f[2] == -3 && f[3] == 40 && f[4] == 5 && f[5] == 6,
     "feature values (spaces trimmed, exponents)");
  ok(l[0] == 0 && l[1] == 2 && l[2] == 1, "label values");
  pd_dataset_free(d);

  /* A named label in the middle, chosen features in a given order, a text column ignored,
   * CRLF, a BOM, quotes, blank lines. */
  p = write_text("b.csv", "\xEF\xBB\xBF\"id\",x1,\"y\",x2,x3\r\n"
                          "\"first, row\",1,0.5,2,3\r\n\r\n"
                          "second,4,1.5,\"5\",6\r\n");
  const char *feats[] = {"x3", "x1"};
  d = NULL;
  ok(pd_dataset_csv(p, "y", 2, feats, &d, &e) == PD_OK, "CSV with label 'y' and features x3, x1");
  if (e.msg) printf("# %s\n", e.msg);
  pd_error_clear(&e);
  ok(d && pd_dataset_size(d) == 2 && pd_dataset_field_dtype(d, 1) == PD_FP32,
     "2 rows (blank line skipped); fractional labels are fp32");
  if (d) {
    f = pd_dataset_field_data(d, 0);
    const float *lf = pd_dataset_field_data(d, 1);
    ok(f[0] == 3 && f[1] == 1 && f[2] == 6 && f[3] == 4 && lf[0] == 0.5f && lf[1] == 1.5f,
       "features in the order asked, label values");
  }
  pd_dataset_free(d);

  /* A label column written "1.0" is fp32 even though its values are whole; big ints exact. */
  p = write_text("c.csv", "x,y\n1,1.0\n2,2\n");
  d = NULL;
  ok(pd_dataset_csv(p, NULL, 0, NULL, &d, &e) == PD_OK && pd_dataset_field_dtype(d, 1) == PD_FP32,
     "a label cell written 1.0 makes the column fp32");
  pd_dataset_free(d);
  p = write_text("d.csv", "x,y\n1,9007199254740993\n2,-5\n");
  d = NULL;
  ok(pd_dataset_csv(p, NULL, 0, NULL, &d, &e) == PD_OK &&
         pd_dataset_field_dtype(d, 1) == PD_INT64 &&
         ((const int64_t *)pd_dataset_field_data(d, 1))[0] == 9007199254740993LL,
     "int64 labels are exact beyond 2^53");
  pd_dataset_free(d);
  /* All columns but the label, with the label first. */
  p = write_text("e.csv", "t,u,v\n7,8,9\n");
  d = NULL;
  ok(pd_dataset_csv(p, "t", 0, NULL, &d, &e) == PD_OK && pd_dataset_field_shape(d, 0, dims) == 1 &&
         dims[0] == 2 && ((const float *)pd_dataset_field_data(d, 0))[0] == 8 &&
         ((const int64_t *)pd_dataset_field_data(d, 1))[0] == 7,
     "label 't' first: features u, v");
  pd_dataset_free(d);
  /* gzipped CSV, no final newline. */
  const char *gz = write_gz("f.csv.gz", "x,y\n1,2\n3,4", 11);
  d = NULL;
  ok(pd_dataset_csv(gz, NULL, 0, NULL, &d, &e) == PD_OK && pd_dataset_size(d) == 2,
     "gzipped CSV without a final newline");
  pd_dataset_free(d);
}

static void test_csv_errors(void) {
  pd_error e = {0};
  pd_dataset *d = NULL;
  expect_err(pd_dataset_csv(tpath("none.csv"), NULL, 0, NULL, &d, &e), PD_ENOTFOUND, e,
             "none.csv", NULL, "missing CSV");
  expect_err(pd_dataset_csv(write_text("empty.csv", ""), NULL, 0, NULL, &d, &e), PD_EFORMAT, e,
             "empty.csv: empty file", NULL, "empty CSV");
  expect_err(pd_dataset_csv(write_text("blank.csv", "\n\r\n\n"), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "empty file", NULL, "CSV of blank lines");
  expect_err(pd_dataset_csv(write_text("hdr.csv", "x,y\n"), NULL, 0, NULL, &d, &e), PD_EFORMAT,
             e, "no data rows", NULL, "header only");
  expect_err(pd_dataset_csv(write_text("one.csv", "x\n1\n"), NULL, 0, NULL, &d, &e), PD_EFORMAT,
             e, "1 column", NULL, "a single column");
  expect_err(pd_dataset_csv(write_text("nan.csv", "x,y\n1,2\n3,abc\n"), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "nan.csv:3:", "column 'y' (2): 'abc' is not a number",
             "non-numeric cell: line and column named");
  expect_err(pd_dataset_csv(write_text("inf.csv", "x,y\ninf,2\n"), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "inf.csv:2:", "not a finite number", "infinite cell");
  expect_err(pd_dataset_csv(write_text("ecell.csv", "x,y\n1,\n"), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "ecell.csv:2:", "empty", "empty cell");
  expect_err(pd_dataset_csv(write_text("rag.csv", "x,y,z\n1,2,3\n\n4,5\n"), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "rag.csv:4:", "2 cells but the header has 3",
             "ragged row: line number counts blank lines");
  expect_err(pd_dataset_csv(write_text("rag2.csv", "x,y\n1,2,3\n"), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "3 cells", NULL, "a row too long");
  const char *ok_csv = write_text("ok.csv", "x,y,z\n1,2,3\n");
  expect_err(pd_dataset_csv(ok_csv, "w", 0, NULL, &d, &e), PD_ENOTFOUND, e, "no column named 'w'",
             "'x', 'y', 'z'", "unknown label column lists the header");
  const char *f1[] = {"x", "q"};
  expect_err(pd_dataset_csv(ok_csv, NULL, 2, f1, &d, &e), PD_ENOTFOUND, e, "'q'", NULL,
             "unknown feature column");
  const char *f2[] = {"z"};
  expect_err(pd_dataset_csv(ok_csv, NULL, 1, f2, &d, &e), PD_EINVAL, e, "is the label", NULL,
             "the label as a feature");
  const char *f3[] = {"x", "x"};
  expect_err(pd_dataset_csv(ok_csv, NULL, 2, f3, &d, &e), PD_EINVAL, e, "twice", NULL,
             "a feature listed twice");
  expect_err(pd_dataset_csv(ok_csv, NULL, -1, NULL, &d, &e), PD_EINVAL, e, NULL, NULL,
             "negative nfeatures");
  expect_err(pd_dataset_csv(write_text("dup.csv", "x,y,x\n1,2,3\n"), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "'x' twice", NULL, "duplicate header names");
  expect_err(pd_dataset_csv(write_text("q.csv", "x,y\n\"1,2\n"), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "not closed", NULL, "unclosed quote");
  expect_err(pd_dataset_csv(write_file("bin.csv", "x,y\n1,\0\n", 7), NULL, 0, NULL, &d, &e),
             PD_EFORMAT, e, "NUL byte", NULL, "binary data");
  ok(d == NULL, "no dataset after failures");
}

/* examples/data/norris.csv against NIST's certified least-squares coefficients. */
static void test_norris(void) {
  const char *top = getenv("top_srcdir");
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/data/norris.csv", top ? top : ".");
  size_t len;
  unsigned char *text = slurp(path, &len);
  if (!ok(text != NULL, "examples/data/norris.csv exists")) return;
  text[len] = '\0';
  /* Independent parse with strtod, then ordinary least squares in double. */
  double x[64], y[64];
  int n = 0;
  char *p = strchr((char *)text, '\n');
  ok(strncmp((char *)text, "x,y\n", 4) == 0, "header x,y");
  while (p && *++p && n < 64) {
    char *end;
    x[n] = strtod(p, &end);
    y[n] = strtod(end + 1, &end);
    n++;
    p = strchr(end, '\n');
  }
  is_int(n, 36, "36 observations");
  double mx = 0, my = 0, sxx = 0, sxy = 0, sse = 0;
  for (int i = 0; i < n; i++) mx += x[i] / n, my += y[i] / n;
  for (int i = 0; i < n; i++) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  double b1 = sxy / sxx, b0 = my - b1 * mx;
  for (int i = 0; i < n; i++) sse += (y[i] - b0 - b1 * x[i]) * (y[i] - b0 - b1 * x[i]);
  is_close(b1, 1.00211681802045, 1e-12, "slope matches NIST's certified B1");
  is_close(b0, -0.262323073774029, 1e-11, "intercept matches NIST's certified B0");
  is_close(sqrt(sse / (n - 2)), 0.884796396144373, 1e-11, "residual SD matches NIST");
  /* The loader agrees with the text. */
  pd_error e = {0};
  pd_dataset *d = NULL;
  ok(pd_dataset_csv(path, NULL, 0, NULL, &d, &e) == PD_OK, "norris.csv loads");
  ok(d && pd_dataset_size(d) == 36 && pd_dataset_field_dtype(d, 1) == PD_FP32,
     "36 samples, y (the last column) is the fp32 label");
  bool same = d != NULL;
  for (int i = 0; same && i < n; i++)
    same = ((const float *)pd_dataset_field_data(d, 0))[i] == (float)x[i] &&
           ((const float *)pd_dataset_field_data(d, 1))[i] == (float)y[i];
  ok(same, "loaded values equal the text's values rounded to fp32");
  pd_dataset_free(d);
  free(text);
}

/* ---- .npy ---- */

/* A .npy file: version 1/2/3, the dict text, the data. */
static const char *write_npy(const char *name, int version, const char *dict, const void *data,
                             size_t len) {
  unsigned char buf[4096];
  size_t pre = version == 1 ? 10 : 12;
  size_t hl = strlen(dict) + 1;
  size_t pad = (64 - (pre + hl) % 64) % 64;
  hl += pad;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)version;
  buf[7] = 0;
  buf[8] = (unsigned char)(hl & 255);
  buf[9] = (unsigned char)(hl >> 8);
  if (version != 1) buf[10] = buf[11] = 0;
  memcpy(buf + pre, dict, strlen(dict));
  memset(buf + pre + strlen(dict), ' ', pad);
  buf[pre + hl - 1] = '\n';
  memcpy(buf + pre + hl, data, len);
  return write_file(name, buf, pre + hl + len);
}

static bool is_str_eq_name(const pd_dataset *d) {
  return strcmp(pd_dataset_field_name(d, 0), "x") == 0 &&
         strcmp(pd_dataset_field_name(d, 1), "label") == 0;
}

static void test_npy(void) {
  pd_error e = {0};
  pd_dataset *d = NULL;
  float xs[4 * 2 * 3];
  for (int i = 0; i < 24; i++) xs[i] = (float)i * 0.5f - 3;
  int64_t ls[4] = {3, 1, 4, 1};
  const char *px = write_npy("x.npy", 1,
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2, 3), }", xs,
                             sizeof xs);
  const char *pl = write_npy("l.npy", 2,
                             "{\"shape\": (4,), \"fortran_order\": False, \"descr\": \"<i8\"}",
                             ls, sizeof ls);
  ok(pd_dataset_npy(px, pl, &d, &e) == PD_OK, "npy x (v1) and labels (v2) load");
  if (e.msg) printf("# %s\n", e.msg);
  pd_error_clear(&e);
  int64_t dims[PD_TENSOR_MAX_DIMS];
  ok(d && pd_dataset_size(d) == 4 && pd_dataset_field_shape(d, 0, dims) == 2 && dims[0] == 2 &&
         dims[1] == 3,
     "x per sample [2, 3]");
  ok(d && pd_dataset_field_shape(d, 1, dims) == 1 && dims[0] == 1 &&
         pd_dataset_field_dtype(d, 1) == PD_INT64,
     "1-D labels per sample [1], int64");
  ok(d && pd_dataset_field_dtype(d, 0) == PD_FP32 && is_str_eq_name(d),
     "fields x (fp32) and label");
  ok(d && memcmp(pd_dataset_field_data(d, 0), xs, sizeof xs) == 0 &&
         memcmp(pd_dataset_field_data(d, 1), ls, sizeof ls) == 0,
     "data as stored");
  pd_dataset_free(d);

  /* Every supported dtype, a v3 header, a Python 2 long, no label file. */
  struct {
    const char *descr;
    pd_dtype dt;
    int size;
  } kinds[] = {{"<f8", PD_FP64, 8}, {"<i4", PD_INT32, 4}, {"|u1", PD_UINT8, 1},
               {"|i1", PD_INT8, 1},  {"|b1", PD_BOOL, 1},  {"<i8", PD_INT64, 8}};
  for (size_t k = 0; k < PD_ARRAY_LEN(kinds); k++) {
    unsigned char data[6 * 8];
    for (int i = 0; i < 6 * kinds[k].size; i++) data[i] = (unsigned char)(i % 2);
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (6L,), }",
             kinds[k].descr);
    d = NULL;
    const char *p = write_npy("k.npy", 3, dict, data, 6 * (size_t)kinds[k].size);
    ok(pd_dataset_npy(p, NULL, &d, &e) == PD_OK && pd_dataset_nfields(d) == 1 &&
           pd_dataset_field_dtype(d, 0) == kinds[k].dt && pd_dataset_size(d) == 6 &&
           memcmp(pd_dataset_field_data(d, 0), data, 6 * (size_t)kinds[k].size) == 0,
       "dtype %s (v3 header)", kinds[k].descr);
    pd_error_clear(&e);
    pd_dataset_free(d);
  }
  /* gzipped .npy */
  size_t len;
  unsigned char *raw = slurp(px, &len);
  const char *gz = write_gz("x.npy.gz", raw, len);
  free(raw);
  d = NULL;
  ok(pd_dataset_npy(gz, NULL, &d, &e) == PD_OK && pd_dataset_size(d) == 4 &&
         memcmp(pd_dataset_field_data(d, 0), xs, sizeof xs) == 0,
     "gzipped .npy");
  pd_dataset_free(d);
}

static void test_npy_errors(void) {
  pd_error e = {0};
  pd_dataset *d = NULL;
  float xs[6] = {1, 2, 3, 4, 5, 6};
  const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";
  const char *px = write_npy("g.npy", 1, good, xs, sizeof xs);
  expect_err(pd_dataset_npy(tpath("none.npy"), NULL, &d, &e), PD_ENOTFOUND, e, "none.npy", NULL,
             "missing .npy");
  expect_err(pd_dataset_npy(px, tpath("nolab.npy"), &d, &e), PD_ENOTFOUND, e, "nolab.npy", NULL,
             "missing label .npy");
  expect_err(pd_dataset_npy(write_text("e.npy", ""), NULL, &d, &e), PD_EFORMAT, e, "empty file",
             NULL, "empty .npy");
  expect_err(pd_dataset_npy(write_text("t.npy", "hello world, not numpy"), NULL, &d, &e),
             PD_EFORMAT, e, "not a .npy file", NULL, "bad magic");
  expect_err(pd_dataset_npy(write_text("z.npz", "PK\x03\x04rest-of-zip"), NULL, &d, &e),
             PD_EUNSUPPORTED, e, ".npz", NULL, "a zip (.npz) archive");
  expect_err(pd_dataset_npy(write_file("m.npy", "\x93NUM", 4), NULL, &d, &e), PD_EFORMAT, e,
             "truncated", NULL, "truncated magic");
  unsigned char v4[16] = "\x93NUMPY\x04\x00\x02\x00{}";
  expect_err(pd_dataset_npy(write_file("v4.npy", v4, 12), NULL, &d, &e), PD_EUNSUPPORTED, e,
             "version 4.0", NULL, "format version 4");
  struct {
    const char *dict;
    pd_status st;
    const char *needle;
    const char *what;
  } bad[] = {
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", PD_EUNSUPPORTED,
       "fortran_order", "fortran order"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (3, 2), }", PD_EUNSUPPORTED,
       "big-endian", "big-endian data"},
      {"{'descr': '<u2', 'fortran_order': False, 'shape': (3, 2), }", PD_EUNSUPPORTED,
       "'<u2' is not supported", "unsupported dtype uint16"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (3, 2), }", PD_EUNSUPPORTED,
       "'<c8'", "complex dtype"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", PD_EUNSUPPORTED,
       "structured", "structured dtype"},
      {"{'fortran_order': False, 'shape': (3, 2), }", PD_EFORMAT, "no 'descr'", "missing descr"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'extra': 1}", PD_EFORMAT,
       "'extra'", "an unknown key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, x), }", PD_EFORMAT,
       "'shape' is not a tuple", "malformed shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3 2), }", PD_EFORMAT,
       "'shape' is not a tuple", "shape without a comma"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3, 2), }", PD_EFORMAT,
       "fortran_order", "fortran_order not a bool"},
      {"['descr', '<f4']", PD_EFORMAT, "does not start with '{'", "not a dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2) ", PD_EFORMAT,
       "expected ',' or '}'", "unterminated dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", PD_EUNSUPPORTED, "0-d",
       "0-d array"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2), }", PD_EFORMAT, "no samples",
       "zero samples"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 0), }", PD_EFORMAT, "empty",
       "empty samples"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,2,3,4,5,6,7,8,9,10), }",
       PD_EUNSUPPORTED, "rank", "rank 10"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }",
       PD_EFORMAT, "overflow", "a shape that overflows"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }", PD_EFORMAT,
       "truncated", "more data announced than the file holds"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", PD_EFORMAT,
       "unexpected data after byte", "less data announced than the file holds"},
  };
  for (size_t k = 0; k < PD_ARRAY_LEN(bad); k++) {
    const char *p = write_npy("bad.npy", 1, bad[k].dict, xs, sizeof xs);
    expect_err(pd_dataset_npy(p, NULL, &d, &e), bad[k].st, e, "bad.npy", bad[k].needle,
               bad[k].what);
  }
  /* The header length beyond the end of the file. */
  unsigned char hb[20] = "\x93NUMPY\x01\x00\xff\x00{'descr'";
  expect_err(pd_dataset_npy(write_file("hl.npy", hb, 18), NULL, &d, &e), PD_EFORMAT, e,
             "inside the 255-byte header", NULL, "truncated header");
  /* bools other than 0/1 */
  unsigned char bools[3] = {0, 1, 2};
  expect_err(pd_dataset_npy(write_npy("b.npy", 1,
                                      "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                      bools, 3),
                            NULL, &d, &e),
             PD_EFORMAT, e, "holds 2", NULL, "a bool byte of 2");
  /* Label count differs. */
  int64_t ls[2] = {0, 1};
  const char *pl = write_npy("l2.npy", 1,
                             "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                             ls, sizeof ls);
  expect_err(pd_dataset_npy(px, pl, &d, &e), PD_EFORMAT, e, "3 samples", "l2.npy",
             "x and label counts disagree");
  ok(d == NULL, "no dataset after failures");
}

/* ---- Allocation failures: every k-th allocation failing gives PD_ENOMEM and no leak (the
 * sanitizer build checks the leaks). ---- */

typedef pd_status (*loader_fn)(void *ctx, pd_dataset **out, pd_error *err);

static void alloc_sweep(const char *what, loader_fn fn, void *ctx) {
  bool all_nomem = true, finished = false;
  long k;
  for (k = 1; k < 2000; k++) {
    pd_error e = {0};
    pd_dataset *d = NULL;
    pd_alloc_fail_after(k);
    pd_status st = fn(ctx, &d, &e);
    pd_alloc_fail_after(0);
    pd_error_clear(&e);
    if (st == PD_OK) {
      finished = true;
      pd_dataset_free(d);
      break;
    }
    if (st != PD_ENOMEM || d != NULL) {
      all_nomem = false;
      printf("# %s: allocation %ld failing gave %s\n", what, k, pd_status_str(st));
    }
  }
  ok(finished && all_nomem, "%s: each of the %ld allocations failing gives PD_ENOMEM", what, k - 1);
}

static pd_status load_csv_ctx(void *ctx, pd_dataset **out, pd_error *err) {
  const char *feats[] = {"b", "a"};
  return pd_dataset_csv(ctx, "c", 2, feats, out, err);
}
static pd_status load_csv_all(void *ctx, pd_dataset **out, pd_error *err) {
  return pd_dataset_csv(ctx, NULL, 0, NULL, out, err);
}
static pd_status load_idx_raw(void *ctx, pd_dataset **out, pd_error *err) {
  (void)ctx;
  return pd_dataset_idx(tpath("img.idx"), tpath("lab.idx"), out, err);
}
static pd_status load_idx_gz(void *ctx, pd_dataset **out, pd_error *err) {
  (void)ctx;
  return pd_dataset_idx(tpath("img.idx.gz"), tpath("lab.idx.gz"), out, err);
}
static pd_status load_npy(void *ctx, pd_dataset **out, pd_error *err) {
  (void)ctx;
  return pd_dataset_npy(tpath("x.npy"), tpath("l.npy"), out, err);
}

static void test_alloc_failures(void) {
  /* Enough rows that the growing arrays reallocate several times. */
  char text[8192];
  size_t n = (size_t)snprintf(text, sizeof text, "a,b,c\n");
  for (int i = 0; i < 100; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "%d,%d.5,%d\n", i, -i, i % 3);
  const char *p = write_text("alloc.csv", text);
  alloc_sweep("CSV with named features", load_csv_ctx, (void *)p);
  alloc_sweep("CSV, all columns", load_csv_all, (void *)p);
  alloc_sweep("IDX raw", load_idx_raw, NULL);
  alloc_sweep("IDX gzip", load_idx_gz, NULL);
  alloc_sweep(".npy", load_npy, NULL);
}

/* ---- Batching ---- */

/* n samples: "x" fp32 [2] = {i, -i}, "y" int64 [1] = 10 i. */
static pd_dataset *toy(int64_t n) {
  pd_dataset *d = NULL;
  void *x, *y;
  int64_t two = 2, one = 1;
  if (pd_dataset_new(n, &d, NULL) || pd_dataset_add_field(d, "x", PD_FP32, 1, &two, &x, NULL) ||
      pd_dataset_add_field(d, "y", PD_INT64, 1, &one, &y, NULL)) {
    printf("# cannot build the toy dataset\n");
    exit(1);
  }
  for (int64_t i = 0; i < n; i++) {
    ((float *)x)[2 * i] = (float)i;
    ((float *)x)[2 * i + 1] = (float)-i;
    ((int64_t *)y)[i] = 10 * i;
  }
  return d;
}

/* The documented permutation, written again from the header's description. */
static uint64_t ref_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static void ref_perm(int64_t *perm, int64_t n, uint64_t seed, int epoch) {
  uint64_t s = ref_mix(seed ^ ref_mix((uint64_t)epoch + 1));
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = n - 1; i >= 1; i--) {
    uint64_t k = (uint64_t)i + 1, r;
    do {
      s += 0x9E3779B97F4A7C15ull;
      r = ref_mix(s);
    } while (r < (UINT64_MAX - k + 1) % k);
    int64_t j = (int64_t)(r % k), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* Run one epoch; record the sample order (from y) and batch sizes; check x matches y. */
static int64_t run_epoch(pd_batcher *b, int64_t *order, int64_t *sizes, bool *aligned) {
  pd_tensor t[2];
  pd_tensor_init(&t[0]);
  pd_tensor_init(&t[1]);
  int64_t rows, k = 0, nb = 0;
  *aligned = true;
  while (pd_batcher_next(b, t, &rows, NULL) == PD_OK && rows > 0) {
    if (t[0].ndims != 2 || t[0].dims[0] != rows || t[0].dims[1] != 2 || t[0].dtype != PD_FP32 ||
        t[1].ndims != 2 || t[1].dims[0] != rows || t[1].dims[1] != 1 || t[1].dtype != PD_INT64)
      *aligned = false;
    for (int64_t r = 0; r < rows; r++) {
      int64_t y = PD_TENSOR_I64(&t[1])[r];
      if (PD_TENSOR_F32(&t[0])[2 * r] != (float)(y / 10) ||
          PD_TENSOR_F32(&t[0])[2 * r + 1] != (float)-(y / 10))
        *aligned = false;
      order[k++] = y / 10;
    }
    sizes[nb++] = rows;
  }
  pd_tensor_release(&t[0]);
  pd_tensor_release(&t[1]);
  return nb;
}

static void test_batching(void) {
  pd_dataset *d = toy(10);
  pd_error e = {0};
  int64_t order[1000], sizes[1000];
  bool aligned;
  for (int pf = 0; pf < 2; pf++) {
    pd_batcher *b = NULL;
    pd_batcher_options o = {.batch = 4, .prefetch = pf};
    ok(pd_batcher_new(d, &o, &b, &e) == PD_OK, "batcher (prefetch %d)", pf);
    is_int(pd_batcher_num_batches(b), 3, "10 samples in batches of 4: 3 batches");
    int64_t nb = run_epoch(b, order, sizes, &aligned);
    bool inorder = true;
    for (int i = 0; i < 10; i++) inorder &= order[i] == i;
    ok(nb == 3 && sizes[0] == 4 && sizes[1] == 4 && sizes[2] == 2 && aligned && inorder,
       "batches of 4, 4, 2 in order, shapes [rows, 2] and [rows, 1] (prefetch %d)", pf);
    pd_tensor t[2];
    pd_tensor_init(&t[0]);
    pd_tensor_init(&t[1]);
    int64_t rows = -1;
    ok(pd_batcher_next(b, t, &rows, &e) == PD_OK && rows == 0 && !pd_tensor_initialized(&t[0]),
       "after the end: rows 0, tensors untouched");
    /* Restart mid-epoch; LoD on the caller's tensor is dropped. */
    pd_batcher_start_epoch(b, 1);
    int64_t off[] = {0, 1, 2};
    const int64_t *offs[] = {off};
    int64_t lens[] = {3};
    int64_t two[] = {2, 2};
    pd_tensor_resize(&t[0], PD_FP32, 2, two);
    pd_tensor_set_lod(&t[0], 1, offs, lens);
    ok(pd_batcher_next(b, t, &rows, &e) == PD_OK && rows == 4 && t[0].nlod == 0 &&
           PD_TENSOR_I64(&t[1])[0] == 0,
       "start_epoch rewinds; the batch tensor has no LoD");
    pd_tensor_release(&t[0]);
    pd_tensor_release(&t[1]);
    pd_batcher_free(b);

    o.drop_last = true;
    b = NULL;
    ok(pd_batcher_new(d, &o, &b, &e) == PD_OK && pd_batcher_num_batches(b) == 2,
       "drop_last: 2 batches");
    nb = run_epoch(b, order, sizes, &aligned);
    ok(nb == 2 && sizes[0] == 4 && sizes[1] == 4, "drop_last leaves out the partial batch");
    pd_batcher_free(b);

    o.batch = 15;
    b = NULL;
    ok(pd_batcher_new(d, &o, &b, &e) == PD_OK && pd_batcher_num_batches(b) == 0 &&
           run_epoch(b, order, sizes, &aligned) == 0,
       "batch larger than the dataset with drop_last: no batch");
    pd_batcher_free(b);
    o.drop_last = false;
    b = NULL;
    ok(pd_batcher_new(d, &o, &b, &e) == PD_OK && pd_batcher_num_batches(b) == 1 &&
           run_epoch(b, order, sizes, &aligned) == 1 && sizes[0] == 10,
       "batch larger than the dataset: one batch of 10");
    pd_batcher_free(b);
    o.batch = 10;
    b = NULL;
    ok(pd_batcher_new(d, &o, &b, &e) == PD_OK && pd_batcher_num_batches(b) == 1 &&
           run_epoch(b, order, sizes, &aligned) == 1 && sizes[0] == 10,
       "batch equal to the dataset: one batch");
    pd_batcher_free(b);
  }
  pd_dataset_free(d);

  /* Shuffling over 1000 samples, batch 64. */
  d = toy(1000);
  int64_t a[1000], bb[1000], ref[1000], sz[100];
  pd_batcher *b1 = NULL, *b2 = NULL, *b3 = NULL;
  pd_batcher_options o = {.batch = 64, .shuffle = true, .seed = 42};
  pd_batcher_new(d, &o, &b1, NULL);
  pd_batcher_new(d, &o, &b2, NULL);
  o.seed = 43;
  pd_batcher_new(d, &o, &b3, NULL);
  run_epoch(b1, a, sz, &aligned);
  ok(aligned, "shuffled batches keep the fields of a sample together");
  int64_t seen[1000] = {0};
  for (int i = 0; i < 1000; i++) seen[a[i]]++;
  bool once = true;
  for (int i = 0; i < 1000; i++) once &= seen[i] == 1;
  ok(once, "each sample exactly once per epoch");
  run_epoch(b2, bb, sz, &aligned);
  ok(memcmp(a, bb, sizeof a) == 0, "same seed, same order");
  ref_perm(ref, 1000, 42, 0);
  ok(memcmp(a, ref, sizeof a) == 0, "the order is the documented SplitMix64 Fisher-Yates");
  run_epoch(b3, bb, sz, &aligned);
  ok(memcmp(a, bb, sizeof a) != 0, "a different seed gives a different order");
  pd_batcher_start_epoch(b1, 1);
  run_epoch(b1, bb, sz, &aligned);
  ref_perm(ref, 1000, 42, 1);
  ok(memcmp(a, bb, sizeof a) != 0 && memcmp(bb, ref, sizeof bb) == 0,
     "epoch 1 has another order, again as documented");
  bool identity = true;
  for (int i = 0; i < 1000; i++) identity &= a[i] == i;
  ok(!identity, "shuffled is not the identity");
  pd_batcher_free(b1);
  pd_batcher_free(b2);
  pd_batcher_free(b3);

  /* Prefetch on and off give identical batches, over several epochs, with drop_last too. */
  for (int dl = 0; dl < 2; dl++) {
    pd_batcher *off = NULL, *on = NULL;
    pd_batcher_options oo = {.batch = 48, .shuffle = true, .seed = 9, .drop_last = dl};
    pd_batcher_new(d, &oo, &off, NULL);
    oo.prefetch = true;
    pd_batcher_new(d, &oo, &on, NULL);
    bool same = true;
    for (int ep = 0; ep < 3; ep++) {
      int64_t s1[100], s2[100];
      pd_batcher_start_epoch(off, ep);
      pd_batcher_start_epoch(on, ep);
      int64_t n1 = run_epoch(off, a, s1, &aligned);
      same &= aligned;
      int64_t n2 = run_epoch(on, bb, s2, &aligned);
      same &= aligned && n1 == n2 && memcmp(s1, s2, (size_t)n1 * sizeof *s1) == 0 &&
              memcmp(a, bb, (size_t)(n1 * 48 < 1000 ? n1 * 48 : 1000) * sizeof *a) == 0;
    }
    ok(same, "prefetch on and off give identical batches over 3 epochs (drop_last %d)", dl);
    pd_batcher_free(off);
    pd_batcher_free(on);
  }

  /* Freeing mid-epoch, right after creation, and after start_epoch with a gather in flight. */
  pd_batcher *b = NULL;
  pd_tensor t[2];
  pd_tensor_init(&t[0]);
  pd_tensor_init(&t[1]);
  int64_t rows;
  o = (pd_batcher_options){.batch = 100, .shuffle = true, .prefetch = true};
  pd_batcher_new(d, &o, &b, NULL);
  pd_batcher_next(b, t, &rows, NULL);
  pd_batcher_free(b);
  b = NULL;
  pd_batcher_new(d, &o, &b, NULL);
  pd_batcher_free(b);
  b = NULL;
  pd_batcher_new(d, &o, &b, NULL);
  for (int ep = 0; ep < 20; ep++) pd_batcher_start_epoch(b, ep);
  pd_batcher_free(b);
  ok(1, "freeing a prefetching batcher mid-epoch joins its thread");
  pd_batcher_free(NULL);

  /* Bad options. */
  b = NULL;
  o.batch = 0;
  expect_err(pd_batcher_new(d, &o, &b, &e), PD_EINVAL, e, "batch size", NULL, "batch 0");
  ok(b == NULL, "no batcher on failure");
  o.batch = 10;
  pd_batcher_new(d, &o, &b, NULL);
  is_int(pd_batcher_start_epoch(b, -1), PD_EINVAL, "a negative epoch is refused");

  /* A failing allocation in next does not consume the batch. */
  pd_tensor_release(&t[0]);
  pd_tensor_release(&t[1]);
  pd_batcher_start_epoch(b, 0);
  pd_alloc_fail_after(1);
  pd_status st = pd_batcher_next(b, t, &rows, &e);
  pd_alloc_fail_after(0);
  pd_error_clear(&e);
  int64_t first_after = -1;
  pd_status st2 = pd_batcher_next(b, t, &rows, &e);
  if (st2 == PD_OK) first_after = PD_TENSOR_I64(&t[1])[0] / 10;
  ref_perm(ref, 1000, 0, 0);
  ok(st == PD_ENOMEM && st2 == PD_OK && rows == 10 && first_after == ref[0],
     "PD_ENOMEM in next, then the same batch again");
  pd_batcher_free(b);
  pd_tensor_release(&t[0]);
  pd_tensor_release(&t[1]);

  /* Allocation failures in pd_batcher_new. */
  bool all_nomem = true, done = false;
  for (long k = 1; k < 50 && !done; k++) {
    for (int pf = 0; pf < 2; pf++) {
      b = NULL;
      pd_batcher_options ob = {.batch = 7, .shuffle = true, .prefetch = pf};
      pd_alloc_fail_after(k);
      st = pd_batcher_new(d, &ob, &b, NULL);
      pd_alloc_fail_after(0);
      if (st == PD_OK) {
        if (pf) done = true;
        pd_batcher_free(b);
      } else if (st != PD_ENOMEM || b) {
        all_nomem = false;
      }
    }
  }
  ok(done && all_nomem, "pd_batcher_new: every allocation failing gives PD_ENOMEM");
  pd_dataset_free(d);
}

static void test_dataset_build(void) {
  pd_dataset *d = NULL;
  pd_error e = {0};
  void *p;
  int64_t dims[2] = {2, 3}, bad[1] = {0};
  expect_err(pd_dataset_new(0, &d, &e), PD_EINVAL, e, "at least one sample", NULL,
             "a dataset of 0 samples");
  ok(pd_dataset_new(4, &d, &e) == PD_OK && pd_dataset_nfields(d) == 0, "an empty dataset");
  ok(pd_dataset_add_field(d, "img", PD_UINT8, 2, dims, &p, &e) == PD_OK && p &&
         ((unsigned char *)p)[23] == 0,
     "add a zero-filled field");
  expect_err(pd_dataset_add_field(d, "img", PD_FP32, 0, NULL, &p, &e), PD_EINVAL, e,
             "already has a field 'img'", NULL, "duplicate field name");
  expect_err(pd_dataset_add_field(d, "", PD_FP32, 0, NULL, &p, &e), PD_EINVAL, e, "name", NULL,
             "empty field name");
  expect_err(pd_dataset_add_field(d, "z", PD_FP32, 1, bad, &p, &e), PD_EINVAL, e, "dim 0", NULL,
             "a zero dim");
  expect_err(pd_dataset_add_field(d, "z", (pd_dtype)77, 0, NULL, &p, &e), PD_EINVAL, e,
             "not a dtype", NULL, "a bad dtype");
  expect_err(pd_dataset_add_field(d, "z", PD_FP32, PD_TENSOR_MAX_DIMS, dims, &p, &e), PD_EINVAL,
             e, "rank", NULL, "a per-sample rank leaving no room for the batch dim");
  ok(pd_dataset_add_field(d, "s", PD_FP64, 0, NULL, &p, &e) == PD_OK &&
         pd_dataset_field_shape(d, 1, dims) == 0,
     "a scalar field (per-sample rank 0)");
  pd_batcher *b = NULL;
  pd_batcher_options o = {.batch = 3};
  pd_tensor t[2];
  pd_tensor_init(&t[0]);
  pd_tensor_init(&t[1]);
  int64_t rows;
  ok(pd_batcher_new(d, &o, &b, &e) == PD_OK && pd_batcher_next(b, t, &rows, &e) == PD_OK &&
         rows == 3 && t[0].ndims == 3 && t[0].dtype == PD_UINT8 && t[1].ndims == 1 &&
         t[1].dims[0] == 3 && t[1].dtype == PD_FP64,
     "batches of a uint8 [2, 3] field and a scalar fp64 field");
  pd_batcher_free(b);
  pd_tensor_release(&t[0]);
  pd_tensor_release(&t[1]);
  pd_dataset_free(d);
  pd_dataset_free(NULL);
}

/* ---- Sequence fields ---- */

/* n samples: "s" fp32 sequences of seq_len(i) rows [2] = {100 i + r, -r}; "id" int64 [1] = i;
 * "c" int32 sequences of (i % 3) + 1 scalar rows, 1000 i + r. */
static int64_t seq_len(int64_t i) { return (i * 7) % 5; }   /* 0, 2, 4, 1, 3, 0, ... */

static pd_dataset *seq_toy(int64_t n) {
  pd_dataset *d = NULL;
  int64_t two = 2, one = 1;
  int64_t *la = malloc((size_t)n * sizeof *la), *lc = malloc((size_t)n * sizeof *lc);
  void *s, *id, *c;
  for (int64_t i = 0; i < n; i++) {
    la[i] = seq_len(i);
    lc[i] = i % 3 + 1;
  }
  if (pd_dataset_new(n, &d, NULL) ||
      pd_dataset_add_seq_field(d, "s", PD_FP32, 1, &two, la, &s, NULL) ||
      pd_dataset_add_field(d, "id", PD_INT64, 1, &one, &id, NULL) ||
      pd_dataset_add_seq_field(d, "c", PD_INT32, 0, NULL, lc, &c, NULL)) {
    printf("Bail out! cannot build the sequence dataset\n");
    exit(1);
  }
  float *sf = s;
  int32_t *cf = c;
  for (int64_t i = 0; i < n; i++) {
    ((int64_t *)id)[i] = i;
    for (int64_t r = 0; r < la[i]; r++) {
      *sf++ = (float)(100 * i + r);
      *sf++ = (float)-r;
    }
    for (int64_t r = 0; r < lc[i]; r++) *cf++ = (int32_t)(1000 * i + r);
  }
  free(la);
  free(lc);
  return d;
}

/* Check a batch of seq_toy against its ids: shapes, LoD and values recomputed from each
 * sample's index. Records the ids in order. */
static bool check_seq_batch(const pd_tensor *t, int64_t rows, int64_t *order) {
  const pd_tensor *s = &t[0], *id = &t[1], *c = &t[2];
  if (id->ndims != 2 || id->dims[0] != rows || id->dims[1] != 1 || id->nlod != 0) return false;
  int64_t srows = 0, crows = 0;
  for (int64_t k = 0; k < rows; k++) {
    int64_t i = PD_TENSOR_I64(id)[k];
    order[k] = i;
    srows += seq_len(i);
    crows += i % 3 + 1;
  }
  if (s->dtype != PD_FP32 || s->ndims != 2 || s->dims[0] != srows || s->dims[1] != 2 ||
      s->nlod != 1 || s->lod[0].n != rows + 1)
    return false;
  if (c->dtype != PD_INT32 || c->ndims != 1 || c->dims[0] != crows || c->nlod != 1 ||
      c->lod[0].n != rows + 1)
    return false;
  int64_t at_s = 0, at_c = 0;
  if (s->lod[0].offsets[0] != 0 || c->lod[0].offsets[0] != 0) return false;
  for (int64_t k = 0; k < rows; k++) {
    int64_t i = order[k];
    for (int64_t r = 0; r < seq_len(i); r++, at_s++)
      if (PD_TENSOR_F32(s)[2 * at_s] != (float)(100 * i + r) ||
          PD_TENSOR_F32(s)[2 * at_s + 1] != (float)-r)
        return false;
    for (int64_t r = 0; r < i % 3 + 1; r++, at_c++)
      if (PD_TENSOR_I32(c)[at_c] != (int32_t)(1000 * i + r)) return false;
    if (s->lod[0].offsets[k + 1] != at_s || c->lod[0].offsets[k + 1] != at_c) return false;
  }
  return pd_tensor_validate_lod(s, NULL) == PD_OK && pd_tensor_validate_lod(c, NULL) == PD_OK;
}

/* One epoch over seq_toy: the ids in order, the batch sizes; *good = every batch checks. */
static int64_t run_seq_epoch(pd_batcher *b, int64_t *order, int64_t *sizes, bool *good) {
  pd_tensor t[3];
  for (int f = 0; f < 3; f++) pd_tensor_init(&t[f]);
  int64_t rows, k = 0, nb = 0;
  *good = true;
  pd_status st;
  while ((st = pd_batcher_next(b, t, &rows, NULL)) == PD_OK && rows > 0) {
    *good &= check_seq_batch(t, rows, order + k);
    k += rows;
    sizes[nb++] = rows;
  }
  *good &= st == PD_OK;
  for (int f = 0; f < 3; f++) pd_tensor_release(&t[f]);
  return nb;
}

static void test_seq_fields(void) {
  pd_error e = {0};
  pd_dataset *d = seq_toy(10);
  int64_t dims[PD_TENSOR_MAX_DIMS];
  const int64_t *off = pd_dataset_field_offsets(d, 0);
  ok(pd_dataset_field_is_seq(d, 0) && !pd_dataset_field_is_seq(d, 1) &&
         pd_dataset_field_is_seq(d, 2) && !pd_dataset_field_is_seq(d, 7) &&
         !pd_dataset_field_offsets(d, 1) && !pd_dataset_field_offsets(d, -1),
     "is_seq and offsets tell the sequence fields");
  bool offs = off && off[0] == 0;
  for (int64_t i = 0; offs && i < 10; i++) offs = off[i + 1] - off[i] == seq_len(i);
  ok(offs && off[10] == 20, "the offsets are the running sum of the lengths (20 rows)");
  ok(pd_dataset_field_shape(d, 0, dims) == 1 && dims[0] == 2 &&
         pd_dataset_field_shape(d, 2, dims) == 0,
     "the shape of a sequence field is the shape of one row (rank 0 allowed)");
  ok(((const float *)pd_dataset_field_data(d, 0))[2 * off[3]] == 300.0f,
     "the rows of sample 3 start at offsets[3]");

  int64_t order[1000], sizes[1000], ref[1000];
  bool good;
  for (int pf = 0; pf < 2; pf++) {
    pd_batcher *b = NULL;
    pd_batcher_options o = {.batch = 4, .prefetch = pf};
    ok(pd_batcher_new(d, &o, &b, &e) == PD_OK, "sequence batcher (prefetch %d)", pf);
    int64_t nb = run_seq_epoch(b, order, sizes, &good);
    bool inorder = true;
    for (int i = 0; i < 10; i++) inorder &= order[i] == i;
    ok(nb == 3 && sizes[0] == 4 && sizes[1] == 4 && sizes[2] == 2 && good && inorder,
       "batches of 4, 4, 2 sequences in order, rows and LoD as computed (prefetch %d)", pf);
    /* The LoD of the first batch, spelled out: lengths 0, 2, 4, 1. */
    pd_tensor t[3];
    for (int f = 0; f < 3; f++) pd_tensor_init(&t[f]);
    int64_t rows;
    pd_batcher_start_epoch(b, 0);
    pd_batcher_next(b, t, &rows, &e);
    ok(rows == 4 && t[0].dims[0] == 7 && t[0].nlod == 1 && t[0].lod[0].n == 5 &&
           t[0].lod[0].offsets[1] == 0 && t[0].lod[0].offsets[2] == 2 &&
           t[0].lod[0].offsets[3] == 6 && t[0].lod[0].offsets[4] == 7 && t[2].dims[0] == 7 &&
           t[2].lod[0].offsets[4] == 7,
       "first batch: s [7, 2] with lod [[0, 0, 2, 6, 7]], c [7] with lod [[0, 1, 3, 6, 7]]");
    /* The last partial batch: samples 8 and 9, lengths 1 and 3. */
    pd_batcher_next(b, t, &rows, &e);
    pd_batcher_next(b, t, &rows, &e);
    ok(rows == 2 && t[0].dims[0] == 4 && t[0].lod[0].n == 3 && t[0].lod[0].offsets[1] == 1 &&
           t[0].lod[0].offsets[2] == 4 && PD_TENSOR_F32(&t[0])[2] == 900.0f,
       "the last partial batch: 2 sequences, 4 rows, lod [[0, 1, 4]]");
    for (int f = 0; f < 3; f++) pd_tensor_release(&t[f]);
    pd_batcher_free(b);

    /* A batch larger than the dataset, and drop_last. */
    o.batch = 64;
    b = NULL;
    ok(pd_batcher_new(d, &o, &b, &e) == PD_OK && run_seq_epoch(b, order, sizes, &good) == 1 &&
           sizes[0] == 10 && good,
       "one batch of all 10 sequences (prefetch %d)", pf);
    pd_batcher_free(b);
    o.batch = 3;
    o.drop_last = true;
    b = NULL;
    ok(pd_batcher_new(d, &o, &b, &e) == PD_OK && run_seq_epoch(b, order, sizes, &good) == 3 &&
           sizes[2] == 3 && good,
       "drop_last: 3 batches of 3 sequences (prefetch %d)", pf);
    pd_batcher_free(b);
  }
  pd_dataset_free(d);

  /* Shuffled: whole sequences move, in the documented order; prefetch on and off agree. */
  d = seq_toy(500);
  for (int dl = 0; dl < 2; dl++) {
    pd_batcher *off_b = NULL, *on_b = NULL;
    pd_batcher_options o = {.batch = 32, .shuffle = true, .seed = 7, .drop_last = dl};
    pd_batcher_new(d, &o, &off_b, NULL);
    o.prefetch = true;
    pd_batcher_new(d, &o, &on_b, NULL);
    bool same = off_b && on_b, documented = true;
    for (int ep = 0; ep < 3 && same; ep++) {
      int64_t o2[1000], s1[100], s2[100];
      bool g1, g2;
      pd_batcher_start_epoch(off_b, ep);
      pd_batcher_start_epoch(on_b, ep);
      int64_t n1 = run_seq_epoch(off_b, order, s1, &g1);
      int64_t n2 = run_seq_epoch(on_b, o2, s2, &g2);
      int64_t got = dl ? 480 : 500;
      same &= g1 && g2 && n1 == n2 && memcmp(order, o2, (size_t)got * sizeof *order) == 0;
      ref_perm(ref, 500, 7, ep);
      documented &= memcmp(order, ref, (size_t)got * sizeof *order) == 0;
    }
    ok(same && documented,
       "shuffled sequences: data and LoD as computed, the documented order, prefetch on and "
       "off identical over 3 epochs (drop_last %d)", dl);
    pd_batcher_free(off_b);
    pd_batcher_free(on_b);
  }

  /* A failing allocation in next (the tensors' storage, the LoD) does not consume the batch. */
  {
    pd_batcher *b = NULL;
    pd_batcher_options o = {.batch = 16, .shuffle = true, .seed = 3, .prefetch = true};
    pd_batcher_new(d, &o, &b, NULL);
    ref_perm(ref, 500, 3, 0);
    bool all = true;
    int nfail = 0;
    for (long k = 1; k <= 8; k++) {
      pd_tensor t[3];
      for (int f = 0; f < 3; f++) pd_tensor_init(&t[f]);
      int64_t rows;
      pd_batcher_start_epoch(b, 0);
      pd_alloc_fail_after(k);
      pd_status st = pd_batcher_next(b, t, &rows, &e);
      pd_alloc_fail_after(0);
      pd_error_clear(&e);
      if (st != PD_OK && st != PD_ENOMEM) all = false;
      if (st == PD_ENOMEM) {
        nfail++;
        st = pd_batcher_next(b, t, &rows, &e);
        all &= st == PD_OK && rows == 16 && check_seq_batch(t, rows, order) && order[0] == ref[0];
      }
      for (int f = 0; f < 3; f++) pd_tensor_release(&t[f]);
    }
    ok(all && nfail >= 3, "PD_ENOMEM in next with sequence fields (%d allocations), then the "
                          "same batch again", nfail);
    pd_batcher_free(b);
  }

  /* Allocation failures in pd_batcher_new with sequence fields (the LoD, the staging sized by
   * the longest sequences). */
  bool all_nomem = true, done = false;
  for (long k = 1; k < 50 && !done; k++) {
    for (int pf = 0; pf < 2; pf++) {
      pd_batcher *b = NULL;
      pd_batcher_options ob = {.batch = 7, .shuffle = true, .prefetch = pf};
      pd_alloc_fail_after(k);
      pd_status st = pd_batcher_new(d, &ob, &b, NULL);
      pd_alloc_fail_after(0);
      if (st == PD_OK) {
        if (pf) done = true;
        pd_batcher_free(b);
      } else if (st != PD_ENOMEM || b) {
        all_nomem = false;
      }
    }
  }
  ok(done && all_nomem, "pd_batcher_new with sequence fields: every allocation failing gives "
                        "PD_ENOMEM");
  pd_dataset_free(d);

  /* Every sequence empty: a [0, 2] batch with lod [[0, 0, 0]]. */
  int64_t zeros[2] = {0, 0}, two = 2, bad[2] = {1, -1};
  void *p;
  d = NULL;
  pd_dataset_new(2, &d, NULL);
  ok(pd_dataset_add_seq_field(d, "z", PD_FP32, 1, &two, zeros, &p, &e) == PD_OK && p,
     "a sequence field of empty sequences has storage");
  for (int pf = 0; pf < 2; pf++) {
    pd_batcher *b = NULL;
    pd_batcher_options o = {.batch = 2, .prefetch = pf};
    pd_tensor t;
    pd_tensor_init(&t);
    int64_t rows;
    pd_batcher_new(d, &o, &b, NULL);
    ok(b && pd_batcher_next(b, &t, &rows, &e) == PD_OK && rows == 2 && t.ndims == 2 &&
           t.dims[0] == 0 && t.dims[1] == 2 && t.nlod == 1 && t.lod[0].n == 3 &&
           t.lod[0].offsets[2] == 0,
       "a batch of empty sequences: [0, 2], lod [[0, 0, 0]] (prefetch %d)", pf);
    pd_tensor_release(&t);
    pd_batcher_free(b);
  }
  /* Bad arguments. */
  expect_err(pd_dataset_add_seq_field(d, "n", PD_FP32, 1, &two, bad, &p, &e), PD_EINVAL, e,
             "sample 1 has length -1", NULL, "a negative length");
  expect_err(pd_dataset_add_seq_field(d, "n", PD_FP32, 1, &two, NULL, &p, &e), PD_EINVAL, e,
             "needs lengths", NULL, "no lengths");
  expect_err(pd_dataset_add_seq_field(d, "z", PD_FP32, 1, &two, zeros, &p, &e), PD_EINVAL, e,
             "already has a field 'z'", NULL, "a duplicate name");
  int64_t huge[2] = {INT64_MAX, 1};
  expect_err(pd_dataset_add_seq_field(d, "h", PD_FP32, 1, &two, huge, &p, &e), PD_EINVAL, e,
             "overflow", NULL, "lengths that overflow");
  ok(pd_dataset_nfields(d) == 1 && p == NULL, "failed calls add nothing");
  pd_dataset_free(d);
}

/* ---- text and lines ---- */

static void test_text(void) {
  pd_dataset *d = NULL;
  pd_error e = {0};
  const char *body = "abcdefghij";   /* 10 bytes: 3 windows of 3 (the 10th is the last y) */
  const char *paths[2] = {write_text("t.txt", body), write_gz("t.txt.gz", body, 10)};
  for (int z = 0; z < 2; z++) {
    ok(pd_dataset_text(paths[z], 3, &d, &e) == PD_OK && pd_dataset_size(d) == 3,
       "text: 3 windows of 3 (%s)", z ? "gzip" : "plain");
    const int64_t *x = d ? pd_dataset_field_data(d, 0) : NULL;
    const int64_t *y = d ? pd_dataset_field_data(d, 1) : NULL;
    bool same = x && y;
    for (int i = 0; same && i < 9; i++) same = x[i] == body[i] && y[i] == body[i + 1];
    ok(same, "text: x is the window, y the byte after each position (%s)", z ? "gzip" : "plain");
    pd_dataset_free(d);
    d = NULL;
  }
  expect_err(pd_dataset_text(paths[0], 10, &d, &e), PD_EINVAL, e, "t.txt", "too few",
             "text: too short for one window");
  expect_err(pd_dataset_text(tpath("none.txt"), 3, &d, &e), PD_ENOTFOUND, e, "none.txt", NULL,
             "text: a missing file");
}

/* Lines of a file, the reference way: split at '\n', drop one '\r', skip blank, number the
 * rest from 1, filter and cut by length, keep the split's. Returns the count; lines into out. */
static int ref_lines(const char *text, const pd_lines_options *o, char out[][64]) {
  int n = 0, k = 0;
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    char line[64];
    snprintf(line, sizeof line, "%.*s", (int)len, p);
    p += len + (nl != NULL);
    size_t l = strlen(line);
    if (l && line[l - 1] == '\r') line[--l] = 0;
    if (strspn(line, " \t") == l) continue;
    k++;
    if ((int64_t)l < o->min_length) continue;
    if (o->max_length && (int64_t)l > o->max_length) line[o->max_length] = 0;
    bool test = k % o->test_every == 0;
    if (o->split == PD_LINES_TRAIN && test) continue;
    if (o->split == PD_LINES_TEST && !test) continue;
    snprintf(out[n++], 64, "%s", line);
  }
  return n;
}

static pd_status load_lines_ctx(void *ctx, pd_dataset **out, pd_error *err) {
  const char *const *paths = ctx;
  pd_lines_options o = {.min_length = 2, .max_length = 6, .split = PD_LINES_TRAIN,
                        .test_every = 3};
  return pd_dataset_lines(2, paths, &o, out, err);
}

static pd_status load_lines_padded_ctx(void *ctx, pd_dataset **out, pd_error *err) {
  const char *const *paths = ctx;
  pd_lines_options o = {.min_length = 1, .test_every = 5, .pad_to = 5};
  return pd_dataset_lines(2, paths, &o, out, err);
}

static void test_lines(void) {
  pd_error e = {0};
  pd_dataset *d = NULL;
  const char *a = "first line\n\n  \t \nab\r\nx\nthe third one\r\n  indented\nlast, no newline";
  const char *b = "one\ntwo\n\nthree\nfour\nfive\nsix\n";
  const char *paths[2] = {write_text("a.lines", a), write_gz("b.lines.gz", b, strlen(b))};
  const char *texts[2] = {a, b};
  pd_lines_options opts[] = {
      {.min_length = 1, .test_every = 5},
      {.min_length = 2, .max_length = 6, .test_every = 5},
      {.min_length = 1, .split = PD_LINES_TRAIN, .test_every = 2},
      {.min_length = 1, .split = PD_LINES_TEST, .test_every = 2},
      {.min_length = 3, .max_length = 3, .split = PD_LINES_TEST, .test_every = 3},
      {.min_length = 1, .test_every = 5, .pad_to = 4},
      {.min_length = 2, .max_length = 6, .split = PD_LINES_TRAIN, .test_every = 2, .pad_to = 9},
  };
  for (size_t c = 0; c < PD_ARRAY_LEN(opts); c++) {
    const pd_lines_options *o = &opts[c];
    char want[2][32][64];
    int nw[2] = {ref_lines(texts[0], o, want[0]), ref_lines(texts[1], o, want[1])};
    pd_status st = pd_dataset_lines(2, paths, o, &d, &e);
    if (o->pad_to) { /* "x" [L] (the first L bytes, then 0), "mask" [L] (1 for each byte) */
      const int64_t L = o->pad_to;
      int64_t dims[PD_TENSOR_MAX_DIMS], mdims[PD_TENSOR_MAX_DIMS];
      bool good = st == PD_OK && pd_dataset_size(d) == nw[0] + nw[1] &&
                  pd_dataset_nfields(d) == 3 && !pd_dataset_field_is_seq(d, 0) &&
                  strcmp(pd_dataset_field_name(d, 0), "x") == 0 &&
                  strcmp(pd_dataset_field_name(d, 1), "mask") == 0 &&
                  strcmp(pd_dataset_field_name(d, 2), "label") == 0 &&
                  pd_dataset_field_dtype(d, 0) == PD_INT64 &&
                  pd_dataset_field_shape(d, 0, dims) == 1 && dims[0] == L &&
                  pd_dataset_field_dtype(d, 1) == PD_FP32 &&
                  pd_dataset_field_shape(d, 1, mdims) == 1 && mdims[0] == L;
      if (good) {
        const int64_t *x = pd_dataset_field_data(d, 0), *lab = pd_dataset_field_data(d, 2);
        const float *m = pd_dataset_field_data(d, 1);
        int64_t i = 0;
        for (int f = 0; f < 2; f++)
          for (int k = 0; k < nw[f]; k++, i++) {
            int64_t l = (int64_t)strlen(want[f][k]);
            good &= lab[i] == f;
            for (int64_t j = 0; good && j < L; j++)
              good &= x[i * L + j] == (j < l ? (unsigned char)want[f][k][j] : 0) &&
                      m[i * L + j] == (j < l ? 1.0f : 0.0f);
          }
      }
      if (!ok(good, "lines: case %zu (pad_to = %lld) gives the reference's %d + %d lines, "
              "padded or cut, their masks and labels", c, (long long)L, nw[0], nw[1]) && e.msg)
        printf("#   %s\n", e.msg);
      pd_error_clear(&e);
      pd_dataset_free(d);
      d = NULL;
      continue;
    }
    bool good = st == PD_OK && pd_dataset_size(d) == nw[0] + nw[1] &&
                pd_dataset_nfields(d) == 2 && pd_dataset_field_is_seq(d, 0) &&
                strcmp(pd_dataset_field_name(d, 0), "x") == 0 &&
                strcmp(pd_dataset_field_name(d, 1), "label") == 0;
    int64_t dims[PD_TENSOR_MAX_DIMS];
    good = good && pd_dataset_field_dtype(d, 0) == PD_INT64 &&
           pd_dataset_field_shape(d, 0, dims) == 1 && dims[0] == 1 &&
           pd_dataset_field_dtype(d, 1) == PD_INT64;
    if (good) {
      const int64_t *off = pd_dataset_field_offsets(d, 0);
      const int64_t *x = pd_dataset_field_data(d, 0), *lab = pd_dataset_field_data(d, 1);
      int64_t i = 0;
      for (int f = 0; f < 2; f++)
        for (int k = 0; k < nw[f]; k++, i++) {
          size_t l = strlen(want[f][k]);
          good &= lab[i] == f && off[i + 1] - off[i] == (int64_t)l;
          for (size_t j = 0; good && j < l; j++)
            good &= x[off[i] + (int64_t)j] == (unsigned char)want[f][k][j];
        }
    }
    if (!ok(good, "lines: case %zu gives the reference's %d + %d lines, bytes and labels", c,
            nw[0], nw[1]) && e.msg)
      printf("#   %s\n", e.msg);
    pd_error_clear(&e);
    pd_dataset_free(d);
    d = NULL;
  }
  /* By hand, for the first case: 6 lines in a (its 2nd is "ab" without the '\r'), 6 in b. */
  char hand[32][64];
  ok(ref_lines(a, &opts[0], hand) == 6 && strcmp(hand[1], "ab") == 0 &&
         strcmp(hand[4], "  indented") == 0 && strcmp(hand[5], "last, no newline") == 0 &&
         ref_lines(b, &opts[0], hand) == 6,
     "lines: the reference agrees with a hand count (CRLF, blank lines, no final newline)");
  /* Train and test split partition the lines, whatever the length filter. */
  pd_dataset *tr = NULL, *te = NULL, *all = NULL;
  pd_lines_options o = {.min_length = 1, .test_every = 3};
  pd_dataset_lines(2, paths, &o, &all, NULL);
  o.split = PD_LINES_TRAIN;
  pd_dataset_lines(2, paths, &o, &tr, NULL);
  o.split = PD_LINES_TEST;
  o.min_length = 4;
  pd_dataset_lines(2, paths, &o, &te, NULL);
  char wtest[32][64];
  o.min_length = 1;
  int ntest = ref_lines(a, &o, wtest) + ref_lines(b, &o, wtest);
  o.min_length = 4;
  int ntest4 = ref_lines(a, &o, wtest) + ref_lines(b, &o, wtest);
  ok(all && tr && te && pd_dataset_size(tr) + ntest == pd_dataset_size(all) &&
         pd_dataset_size(te) == ntest4 && ntest4 < ntest,
     "lines: train + test = all; min_length filters the test lines without moving the split");
  pd_dataset_free(all);
  pd_dataset_free(tr);
  pd_dataset_free(te);

  /* Errors name the file. */
  o = (pd_lines_options){.min_length = 1, .test_every = 5};
  const char *missing[2] = {paths[0], tpath("nope.lines")};
  expect_err(pd_dataset_lines(2, missing, &o, &d, &e), PD_ENOTFOUND, e, "nope.lines", NULL,
             "lines: a missing file");
  const char *blank[2] = {paths[0], write_text("blank.lines", "\n  \n\t\r\n")};
  expect_err(pd_dataset_lines(2, blank, &o, &d, &e), PD_EFORMAT, e, "blank.lines",
             "no line that is not blank", "lines: a file of blank lines");
  o.min_length = 50;
  expect_err(pd_dataset_lines(2, paths, &o, &d, &e), PD_EFORMAT, e, "a.lines",
             "at least 50 characters", "lines: no line long enough");
  o = (pd_lines_options){.min_length = 1, .split = PD_LINES_TEST, .test_every = 40};
  expect_err(pd_dataset_lines(2, paths, &o, &d, &e), PD_EFORMAT, e, "test split has no line",
             "every 40th", "lines: an empty split");
  pd_lines_options bad[] = {
      {.min_length = 0, .test_every = 5},
      {.min_length = 4, .max_length = 3, .test_every = 5},
      {.min_length = 1, .max_length = -1, .test_every = 5},
      {.min_length = 1, .split = PD_LINES_TRAIN, .test_every = 1},
      {.min_length = 1, .split = (pd_lines_split)9, .test_every = 5},
      {.min_length = 1, .test_every = 5, .pad_to = -1},
  };
  const char *needles[] = {"min_length", "max_length", "max_length", "test_every", "not a split",
                           "pad_to"};
  for (size_t k = 0; k < PD_ARRAY_LEN(bad); k++)
    expect_err(pd_dataset_lines(2, paths, &bad[k], &d, &e), PD_EINVAL, e, needles[k], NULL,
               "lines: bad options are refused");
  expect_err(pd_dataset_lines(0, paths, &o, &d, &e), PD_EINVAL, e, "at least one file", NULL,
             "lines: no file");
  ok(d == NULL, "lines: no dataset after failures");
  alloc_sweep("lines (plain and gzip)", load_lines_ctx, (void *)paths);
  alloc_sweep("lines (pad_to)", load_lines_padded_ctx, (void *)paths);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/pdreader.XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("Bail out! cannot make a temporary directory: %s\n", strerror(errno));
    return 1;
  }
  test_dataset_build();
  test_idx();
  test_idx_errors();
  test_mnist_paths();
  test_csv();
  test_csv_errors();
  test_norris();
  test_npy();
  test_npy_errors();
  test_alloc_failures();
  test_batching();
  test_seq_fields();
  test_text();
  test_lines();
  test_fashion_real();
  cleanup();
  return tap_done();
}
