/* test_api_images.c -- pd_state_feed_images: a model that a script trained on an images(...)
 * reader and saved (with MODEL.preprocess beside it) takes PNG files through the C library, read
 * as the reader read them: its output for two images is what the script's predict wrote for
 * them, bit for bit; the bad calls (no model, a model without preprocessing, another input, a
 * missing file, NULL arguments) are errors saying so. Skips without libpng. */
#include "config.h"
#include "include/pdlang.h"
#include "tests/tap.h"
#include "tests/vm/reader/image_write.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef PD_HAVE_PNG
static char dir[256];

static const char *path(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%s/%s", dir, name);
  return p;
}

/* A 6 x 5 RGB PNG whose pixels depend on seed. */
static int png(const char *name, int seed) {
  unsigned char px[6 * 5 * 3];
  for (int i = 0; i < (int)sizeof px; i++) px[i] = (unsigned char)((i * 37 + seed * 91) % 256);
  return write_png(path(name), 6, 5, PNG_COLOR_TYPE_RGB, 8, px, NULL, 0, NULL, 0);
}

/* The float32 values of a .npy file (after its header). */
static long npy_floats(const char *file, float *out, long cap) {
  FILE *f = fopen(file, "rb");
  if (!f) return -1;
  unsigned char head[10];
  long n = -1;
  if (fread(head, 1, 10, f) == 10 && !fseek(f, 10 + head[8] + 256 * head[9], SEEK_SET))
    n = (long)fread(out, sizeof *out, (size_t)cap, f);
  fclose(f);
  return n;
}
#endif

int main(void) {
#ifndef PD_HAVE_PNG
  printf("1..0 # SKIP built without libpng\n");
  return 0;
#else
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/pdapiimg.XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(dir)) {
    printf("Bail out! no temporary folder\n");
    return 1;
  }
  mkdir(path("train"), 0755), mkdir(path("train/a"), 0755), mkdir(path("train/b"), 0755);
  mkdir(path("two"), 0755), mkdir(path("two/a"), 0755);
  bool wrote = !png("train/a/0.png", 1) && !png("train/a/1.png", 2) &&
               !png("train/b/0.png", 3) && !png("train/b/1.png", 4) && !png("two/a/0.png", 5) &&
               !png("two/a/1.png", 6);
  ok(wrote, "the PNG files are written");
  char script[2048];
  snprintf(script, sizeof script,
           "x = data(\"images\", [-1, 3, 4, 4])\n"
           "label = data(\"label\", [-1, 1], int64)\n"
           "w = param([48, 2])\n"
           "y = reshape(x, [-1, 48]) @ w\n"
           "cost = mean(softmax_with_cross_entropy(y, label))\n"
           "r = images(\"%s/train\", shape = [3, 4, 4], mean = [0.5, 0.4, 0.3], std = 0.2)\n"
           "train(cost, reader = r, batch = 2, epochs = 2, optimizer = sgd(0.1))\n"
           "save(\"%s/m.pdmodel\", y)\n"
           "predict(y, reader = images(\"%s/two\", shape = [3, 4, 4], mean = [0.5, 0.4, 0.3], "
           "std = 0.2), out = \"%s/p.npy\", batch = 2)\n",
           dir, dir, dir, dir);
  pd_state *st = NULL;
  ok(pd_state_new(&st) == PD_RESULT_OK && st, "a state");
  char f0[512], f1[512];
  snprintf(f0, sizeof f0, "%s", path("two/a/0.png"));
  snprintf(f1, sizeof f1, "%s", path("two/a/1.png"));
  const char *two[2] = {f0, f1};
  is_int(pd_state_feed_images(st, "images", 2, two), PD_RESULT_EINVAL, "no model yet: EINVAL");
  pd_state_set_output(st, NULL, NULL);
  int rc = pd_state_compile_string(st, path("train.pd"), script);
  if (!rc) rc = pd_state_run(st);
  is_int(rc, PD_RESULT_OK, "the script trains, saves and predicts (%s)", pd_state_error(st)->message);
  ok(access(path("m.preprocess"), F_OK) == 0, "save wrote m.preprocess");
  is_int(pd_state_load_model(st, path("m.pdmodel")), PD_RESULT_OK, "the model loads (%s)",
         pd_state_error(st)->message);
  rc = pd_state_feed_images(st, "images", 2, two);
  is_int(rc, PD_RESULT_OK, "pd_state_feed_images (%s)", pd_state_error(st)->message);
  pd_tensor_info out = {0};
  if (!rc) rc = pd_state_run(st);
  if (!rc) rc = pd_state_fetch(st, "y", &out);
  float want[8];
  long nw = npy_floats(path("p.npy"), want, 8);
  ok(!rc && nw == 4 && out.ndims == 2 && out.dims[0] == 2 && out.dims[1] == 2 &&
         out.nbytes == sizeof want[0] * 4 && !memcmp(out.data, want, out.nbytes),
     "its output for the two images is predict's, bit for bit (%ld values)", nw);
  is_int(pd_state_feed_images(st, "label", 2, two), PD_RESULT_EINVAL,
         "another input: EINVAL");
  ok(strstr(pd_state_error(st)->message, "no image preprocessing") != NULL, "  saying why: %s",
     pd_state_error(st)->message);
  const char *missing[1] = {path("nope.png")};
  rc = pd_state_feed_images(st, "images", 1, missing);
  ok(rc != PD_RESULT_OK && strstr(pd_state_error(st)->message, "nope.png"),
     "a missing file: an error naming it (%s)", pd_state_error(st)->message);
  is_int(pd_state_feed_images(st, "images", 0, two), PD_RESULT_EINVAL, "no files: EINVAL");
  is_int(pd_state_feed_images(st, NULL, 2, two), PD_RESULT_EINVAL, "a NULL name: EINVAL");
  is_int(pd_state_feed_images(NULL, "images", 2, two), PD_RESULT_EINVAL, "a NULL state: EINVAL");
  /* A model without preprocessing. */
  char plain[600];
  snprintf(plain, sizeof plain,
           "x = data(\"x\", [-1, 48])\ny = x * 2\nsave(\"%s/plain.pdmodel\", y)\n", dir);
  rc = pd_state_compile_string(st, path("plain.pd"), plain);
  if (!rc) rc = pd_state_run(st);
  if (!rc) rc = pd_state_load_model(st, path("plain.pdmodel"));
  is_int(rc, PD_RESULT_OK, "a model saved without an images reader loads");
  is_int(pd_state_feed_images(st, "x", 2, two), PD_RESULT_EINVAL,
         "its input takes no image files: EINVAL");
  pd_state_free(st);
  const char *names[] = {"train/a/0.png", "train/a/1.png", "train/b/0.png", "train/b/1.png",
                         "two/a/0.png", "two/a/1.png", "m.pdmodel", "m.pdiparams",
                         "m.preprocess", "p.npy", "plain.pdmodel",
                         "plain.pdiparams", "train/a", "train/b", "two/a", "train", "two"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) remove(path(names[i]));
  rmdir(dir);
  return tap_done();
#endif
}
