/* test_reader_bytes.c -- unit-bytes fields (vm/reader/reader.h): the IDX reader holds images as
 * their bytes (stored dtype uint8, one byte per pixel: a reader that holds fp32 again fails
 * here), and every batch -- in order or shuffled, with and without the prefetch thread, and from
 * a validation split -- reads byte b as the fp32 b / 255.0f, bit for bit, as the reader's
 * whole-dataset conversion did before. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

enum { N = 300, ROWS = 28, COLS = 28, PIX = ROWS * COLS };

/* Pixel j of sample i: every byte value occurs. */
static unsigned char pixel(int64_t i, int64_t j) { return (unsigned char)((i * 131 + j * 17) & 255); }

/* The IDX pair of N samples: images (rank 3) and labels i % 10. */
static bool write_idx(const char *img, const char *lab) {
  /* Big-endian headers: magic 00 00 08 RANK, then the dims. */
  const uint32_t dims[3] = {N, ROWS, COLS};
  unsigned char h[16] = {0, 0, 8, 3}, hl[8] = {0, 0, 8, 1};
  for (int k = 0; k < 12; k++) h[4 + k] = (unsigned char)(dims[k / 4] >> (24 - 8 * (k % 4)));
  for (int k = 0; k < 4; k++) hl[4 + k] = h[4 + k];
  FILE *f = fopen(img, "wb");
  if (!f) return false;
  fwrite(h, 1, 16, f);
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < PIX; j++) fputc(pixel(i, j), f);
  if (fclose(f)) return false;
  if (!(f = fopen(lab, "wb"))) return false;
  fwrite(hl, 1, 8, f);
  for (int i = 0; i < N; i++) fputc(i % 10, f);
  return fclose(f) == 0;
}

/* Every batch of one epoch of d: the k-th sample handed out is row perm[k] of d (perm: the
 * identity, or the shuffle's permutation), which is sample ids[perm[k]] of the fixture, so its
 * pixel j must be the fp32 pixel(id, j) / 255.0f, bit for bit. */
static bool epoch_exact(const pd_dataset *d, const pd_batcher_options *o, const int64_t *ids,
                        const char *what) {
  pd_batcher *b = NULL;
  pd_error e = {0};
  if (pd_batcher_new(d, o, &b, &e) != PD_OK) {
    printf("#   %s: %s\n", what, e.msg ? e.msg : "?");
    pd_error_clear(&e);
    return false;
  }
  int fi = pd_dataset_field_index(d, "images"), fl = pd_dataset_field_index(d, "label");
  pd_tensor t[2];
  pd_tensor_init(&t[0]);
  pd_tensor_init(&t[1]);
  int64_t rows, seen = 0, *perm = malloc(sizeof(int64_t) * (size_t)pd_dataset_size(d));
  bool good = perm != NULL;
  for (int64_t i = 0; i < pd_dataset_size(d); i++) perm[i] = i;
  /* Shuffled: the documented permutation of (seed, epoch 0) (pd_batcher_start_epoch). */
  if (good && o->shuffle) pd_reader_perm(perm, pd_dataset_size(d), o->seed, 0);
  while (good && pd_batcher_next(b, t, &rows, &e) == PD_OK && rows > 0) {
    pd_tensor *im = &t[fi < fl ? 0 : 1];
    good = im->dtype == PD_FP32 && im->ndims == 2 && im->dims[0] == rows && im->dims[1] == PIX;
    const float *x = pd_tensor_data(im);
    for (int64_t r = 0; good && r < rows; r++) {
      int64_t id = ids[perm[seen + r]];
      for (int64_t j = 0; j < PIX && good; j++) {
        float want = (float)pixel(id, j) / 255.0f;
        if (memcmp(&x[r * PIX + j], &want, sizeof want) != 0) {
          printf("#   %s: sample %lld pixel %lld is %.9g, expected %.9g\n", what, (long long)id,
                 (long long)j, x[r * PIX + j], want);
          good = false;
        }
      }
    }
    seen += rows;
  }
  good = good && seen == pd_dataset_size(d);
  pd_tensor_release(&t[0]);
  pd_tensor_release(&t[1]);
  pd_batcher_free(b);
  free(perm);
  return good;
}

int main(void) {
  char dir[] = "/tmp/pd_reader_bytes_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  char img[64], lab[64];
  snprintf(img, sizeof img, "%s/img.idx", dir);
  snprintf(lab, sizeof lab, "%s/lab.idx", dir);
  ok(write_idx(img, lab), "IDX fixtures written");

  pd_dataset *d = NULL;
  pd_error e = {0};
  ok(pd_dataset_idx(img, lab, &d, &e) == PD_OK, "the IDX pair loads");
  int fi = pd_dataset_field_index(d, "images"), fl = pd_dataset_field_index(d, "label");
  ok(pd_dataset_field_dtype(d, fi) == PD_FP32, "images batch as fp32");
  ok(pd_dataset_field_stored_dtype(d, fi) == PD_UINT8, "images are held as uint8");
  is_int(pd_dataset_field_stored_bytes(d, fi), (int64_t)N * PIX,
         "images take one byte per pixel (N x 784), not four");
  ok(pd_dataset_field_stored_dtype(d, fl) == PD_INT64 &&
         pd_dataset_field_stored_bytes(d, fl) == (int64_t)N * 8,
     "labels are held as their dtype (int64)");
  ok(pd_dataset_field_stored_bytes(d, 7) == -1 && pd_dataset_field_stored_dtype(d, -1) == PD_FP32,
     "out-of-range fields: -1 bytes, fp32");
  const unsigned char *held = pd_dataset_field_data(d, fi);
  bool same = true;
  for (int64_t i = 0; i < N && same; i++)
    for (int64_t j = 0; j < PIX && same; j++) same = held[i * PIX + j] == pixel(i, j);
  ok(same, "the held bytes are the file's");

  int64_t ids[N];
  for (int i = 0; i < N; i++) ids[i] = i;
  for (int pf = 0; pf <= 1; pf++) {
    pd_batcher_options in_order = {.batch = 64, .prefetch = pf};
    ok(epoch_exact(d, &in_order, ids, "in order"),
       "batches in order (prefetch %d): every pixel is byte / 255.0f, bit for bit", pf);
    pd_batcher_options shuffled = {.batch = 37, .shuffle = true, .seed = 11, .prefetch = pf};
    ok(epoch_exact(d, &shuffled, ids, "shuffled"),
       "shuffled batches of 37 (prefetch %d): every pixel is byte / 255.0f, bit for bit", pf);
  }

  /* A validation split keeps the bytes, and its batches convert the same way. */
  pd_dataset *rest = NULL;
  ok(pd_dataset_split(d, 0.2, 5, false, &rest, &e) == PD_OK, "a validation split");
  int ri = pd_dataset_field_index(rest, "images"), rl = pd_dataset_field_index(rest, "label");
  int64_t m = pd_dataset_size(rest);
  ok(pd_dataset_field_stored_dtype(rest, ri) == PD_UINT8 &&
         pd_dataset_field_dtype(rest, ri) == PD_FP32 &&
         pd_dataset_field_stored_bytes(rest, ri) == m * PIX,
     "the split's images are held as uint8 too (%lld samples)", (long long)m);
  /* Which sample of the fixture each row is: its pixels give i mod 256 (131 is odd), its label
   * i % 10 tells i from i + 256. */
  const unsigned char *rb = pd_dataset_field_data(rest, ri);
  const int64_t *rlab = pd_dataset_field_data(rest, rl);
  int64_t rids[N];
  bool found = m > 0 && m < N;
  for (int64_t k = 0; k < m && found; k++) {
    rids[k] = -1;
    for (int64_t i = 0; i < N && rids[k] < 0; i++)
      if (rlab[k] == i % 10 && memcmp(rb + k * PIX, held + i * PIX, PIX) == 0) rids[k] = i;
    found = rids[k] >= 0;
  }
  ok(found, "every held byte of the split is a sample's");
  pd_batcher_options split_o = {.batch = 50, .shuffle = true, .seed = 3, .prefetch = true};
  ok(epoch_exact(rest, &split_o, rids, "split"),
     "the split's batches: every pixel is byte / 255.0f, bit for bit");
  pd_dataset_free(rest);
  pd_dataset_free(d);

  /* A unit-bytes field built by hand: all 256 byte values. */
  pd_dataset *u = NULL;
  void *data = NULL;
  int64_t dim = 256;
  ok(pd_dataset_new(2, &u, &e) == PD_OK &&
         pd_dataset_add_unit_bytes_field(u, "images", 1, &dim, &data, &e) == PD_OK,
     "a hand-made unit-bytes field");
  for (int i = 0; i < 512; i++) ((unsigned char *)data)[i] = (unsigned char)(i < 256 ? i : 511 - i);
  pd_batcher *b = NULL;
  pd_batcher_options o = {.batch = 2};
  pd_tensor t;
  pd_tensor_init(&t);
  int64_t rows = 0;
  ok(pd_batcher_new(u, &o, &b, &e) == PD_OK && pd_batcher_next(b, &t, &rows, &e) == PD_OK &&
         rows == 2,
     "one batch of it");
  bool exact = t.dtype == PD_FP32 && t.dims[1] == 256;
  const float *x = exact ? pd_tensor_data(&t) : NULL;
  for (int i = 0; exact && i < 512; i++) {
    float want = (float)(i < 256 ? i : 511 - i) / 255.0f;
    exact = memcmp(&x[i], &want, sizeof want) == 0;
  }
  ok(exact, "bytes 0..255 read as b / 255.0f, bit for bit (0 is 0, 255 is 1)");
  ok(exact && x[0] == 0.0f && x[255] == 1.0f, "the ends of the range");
  pd_tensor_release(&t);
  pd_batcher_free(b);
  pd_dataset_free(u);

  unlink(img);
  unlink(lab);
  rmdir(dir);
  return tap_done();
}
