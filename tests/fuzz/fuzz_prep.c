/* fuzz_prep.c -- libFuzzer target for a model's preprocessing file, NAME.preprocess (save writes
 * it beside a model an images(...) reader fed; pdlang exec and pd_state_feed_images read it:
 * vm/reader/image_prep.c). Any bytes, in a buffer of exactly their size, go through
 * pd_image_prep_parse, which must refuse them (PD_EFORMAT or PD_ENOMEM, a message naming the
 * file, nothing left in the record) or return preprocessing the images reader accepts (channels
 * 1, 3 or 4, sizes 1..4096, every mean and std pd_image_norm_ok) that writes out as save writes
 * it and reads back the same, bit for bit. Then, where PNG is built in and the image is small, a
 * 3 x 3 RGB PNG goes through pd_image_files with it: finite float32 values of its shape. Built
 * with clang by `make fuzz-prep`; tests/fuzz/replay.c replays the seed corpus
 * (tests/fuzz/corpus_prep) through it in `make check` with any compiler. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm/reader/reader.h"
#include "vm/run/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define WHAT "fuzz.preprocess"

/* A promise broke: say which, and crash so that the fuzzer keeps the input. */
static void broken(const char *what, const char *detail) {
  fprintf(stderr, "fuzz_prep: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  abort();
}

#ifdef PD_HAVE_PNG
/* A 3 x 3 RGB PNG, written once into a temporary folder removed at exit. */
static const unsigned char png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
    0x52, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x03, 0x08, 0x02, 0x00, 0x00, 0x00, 0xd9,
    0x4a, 0x22, 0xe8, 0x00, 0x00, 0x00, 0x27, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60,
    0xd0, 0x08, 0x08, 0xa8, 0x58, 0xb0, 0xe0, 0xc4, 0x07, 0x06, 0xa3, 0xa8, 0xa6, 0xa6, 0x55,
    0x97, 0x2e, 0xfd, 0x52, 0x62, 0x48, 0xe9, 0xd9, 0xb2, 0xe5, 0x0e, 0x0b, 0x8b, 0x4e, 0x08,
    0x00, 0xc1, 0x38, 0x0c, 0xef, 0x2d, 0xdc, 0x68, 0xf4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
static char dir[256], image[300];

static void remove_image(void) {
  unlink(image);
  rmdir(dir);
}

static const char *image_path(void) {
  if (image[0]) return image;
  snprintf(dir, sizeof dir, "%s/pd_fuzz_prep.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) broken("cannot make a temporary folder", dir);
  snprintf(image, sizeof image, "%s/a.png", dir);
  if (pd_write_file_atomic(image, png, sizeof png, NULL) != PD_OK) broken("cannot write", image);
  atexit(remove_image);
  return image;
}

/* The image through the preprocessing: every value finite, the shape [1, C, H, W]. */
static void run_image(const pd_image_prep *p) {
  if ((int64_t)p->o.height * p->o.width > 64 * 64) return;
  const char *paths[1] = {image_path()};
  pd_tensor *t = pd_tensor_new();
  if (!t) return;
  pd_error err = {0};
  pd_status st = pd_image_files(&p->o, 1, paths, 0, NULL, t, &err);
  if (st == PD_OK) {
    if (t->ndims != 4 || t->dims[0] != 1 || t->dims[1] != p->o.channels ||
        t->dims[2] != p->o.height || t->dims[3] != p->o.width)
      broken("pd_image_files", "a tensor of the wrong shape");
    const float *v = PD_TENSOR_F32(t);
    for (int64_t i = 0; i < pd_tensor_numel(t); i++)
      if (!isfinite(v[i])) broken("pd_image_files", "a value that is not finite");
  } else if (st != PD_ENOMEM) {
    broken("pd_image_files refused what the file accepted", err.msg);
  }
  pd_error_clear(&err);
  pd_tensor_free(t);
}
#else
static void run_image(const pd_image_prep *p) { (void)p; }
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = pd_malloc(size ? size : 1);
  if (!text) return 0;
  if (size) memcpy(text, data, size);
  pd_image_prep p;
  pd_error err = {0};
  pd_status st = pd_image_prep_parse(text, size, WHAT, &p, &err);
  pd_free(text);
  static const pd_image_prep zero;
  if (st != PD_OK) {
    if (st != PD_EFORMAT && st != PD_ENOMEM) broken("pd_image_prep_parse", "an unexpected status");
    if (!err.msg || !err.msg[0]) broken("pd_image_prep_parse", "a refusal without a message");
    if (st == PD_EFORMAT && (!err.loc.file || strcmp(err.loc.file, WHAT) != 0))
      broken("a refusal that does not name the file", err.msg);
    if (memcmp(&p, &zero, sizeof p) != 0) broken("a refusal left a half-read record", NULL);
    pd_error_clear(&err);
    return 0;
  }
  const pd_image_options *o = &p.o;
  if (o->channels != 1 && o->channels != 3 && o->channels != 4) broken("channels", NULL);
  if (o->height < 1 || o->height > 4096 || o->width < 1 || o->width > 4096) broken("size", NULL);
  for (int c = 0; c < o->channels; c++)
    if (!pd_image_norm_ok(o->mean[c], o->std[c])) broken("a mean or std the reader refuses", NULL);
  size_t n = strlen(p.input);
  if (n == 0 || n >= sizeof p.input || strcspn(p.input, " \t\r\n") != n)
    broken("an input name that is not one word", p.input);

  pd_buf b;
  pd_buf_init(&b);
  pd_image_prep_format(&p, &b);
  if (!b.oom) {
    pd_image_prep q;
    if (pd_image_prep_parse(b.data, b.len, WHAT, &q, &err) != PD_OK)
      broken("what save writes does not read back", err.msg);
    if (memcmp(&p, &q, sizeof p) != 0) broken("the written record reads back different", b.data);
  }
  pd_buf_free(&b);
  pd_error_clear(&err);
  run_image(&p);
  return 0;
}
