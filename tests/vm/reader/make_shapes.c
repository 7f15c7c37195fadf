/* make_shapes.c -- writes the small image folders that examples/images.pd trains on and
 * examples/finetune.pd fine-tunes its model on:
 *     make_shapes DIR [N] [corners]
 * makes DIR/train/CLASS/ and DIR/test/CLASS/ for the classes "cross", "horizontal" (a bar) and
 * "vertical" (a bar), or with `corners` the four corners "down_right" (the bars of an L that
 * leave the corner rightwards and downwards), "down_left", "up_right" and "up_left", N training
 * images per class (default 60) and N / 3 test ones (at least 20): a shape of
 * a random colour at a random place on a dark background with noise, 16 to 24 pixels square
 * (the reader resizes them), as RGB PNG, greyscale PNG and RGB JPEG in turn. Deterministic (a
 * fixed seed). Needs libpng and libjpeg; without them it says so and exits 77. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/vm/reader/image_write.h"

#if defined(PD_HAVE_PNG) && defined(PD_HAVE_JPEG)

static unsigned long long state = 0x2545f4914f6cdd1dull;

static unsigned rnd(unsigned n) {   /* xorshift64*, uniform enough in [0, n) for a fixture */
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return (unsigned)((state * 0x2545f4914f6cdd1dull) >> 33) % n;
}

static const char *const classes[3] = {"cross", "horizontal", "vertical"};
static const char *const corners[4] = {"down_right", "down_left", "up_right", "up_left"};

/* One image of class k (of the corners when `corner`), size s x s, into px (RGB). */
static void draw(int k, bool corner, int s, unsigned char *px) {
  unsigned char col[3] = {(unsigned char)(150 + rnd(106)), (unsigned char)(150 + rnd(106)),
                          (unsigned char)(150 + rnd(106))};
  for (int i = 0; i < s * s * 3; i++) px[i] = (unsigned char)(rnd(60));
  int len = s / 2 + (int)rnd((unsigned)(s / 3)), thick = 2 + (int)rnd(2);
  int cy = s / 4 + (int)rnd((unsigned)(s / 2)), cx = s / 4 + (int)rnd((unsigned)(s / 2));
  for (int y = 0; y < s; y++)
    for (int x = 0; x < s; x++) {
      bool h = abs(y - cy) < thick && abs(x - cx) <= len / 2;
      bool v = abs(x - cx) < thick && abs(y - cy) <= len / 2;
      bool on = k == 0 ? h || v : k == 1 ? h : v;
      if (corner) { /* half of each bar, from the centre: right or left, down or up */
        bool right = k == 0 || k == 2, down = k <= 1;
        on = (h && (right ? x >= cx - thick + 1 : x <= cx + thick - 1)) ||
             (v && (down ? y >= cy - thick + 1 : y <= cy + thick - 1));
      }
      if (on) memcpy(px + (y * s + x) * 3, col, 3);
    }
}

int main(int argc, char **argv) {
  bool corner = argc >= 3 && strcmp(argv[argc - 1], "corners") == 0;
  if (argc < 2 || argc - corner > 3) {
    fprintf(stderr, "usage: make_shapes DIR [N] [corners]\n");
    return 2;
  }
  int n = argc - corner == 3 ? atoi(argv[2]) : 60, nclasses = corner ? 4 : 3;
  const char *const *names = corner ? corners : classes;
  if (n < 3) {
    fprintf(stderr, "make_shapes: N must be at least 3\n");
    return 2;
  }
  static unsigned char px[24 * 24 * 3], grey[24 * 24];
  char path[4096];
  mkdir(argv[1], 0755);
  for (int split = 0; split < 2; split++) {
    const char *name = split ? "test" : "train";
    snprintf(path, sizeof path, "%s/%s", argv[1], name);
    mkdir(path, 0755);
    for (int k = 0; k < nclasses; k++) {
      snprintf(path, sizeof path, "%s/%s/%s", argv[1], name, names[k]);
      mkdir(path, 0755);
      int count = split ? (corner && n / 3 < 20 ? 20 : n / 3) : n;
      for (int i = 0; i < count; i++) {
        int s = 16 + (int)rnd(9);
        draw(k, corner, s, px);
        int rc, kind = i % 3;
        snprintf(path, sizeof path, "%s/%s/%s/%03d.%s", argv[1], name, names[k], i,
                 kind == 2 ? "jpg" : "png");
        if (kind == 0) {
          rc = write_png(path, s, s, PNG_COLOR_TYPE_RGB, 8, px, NULL, 0, NULL, 0);
        } else if (kind == 1) {
          for (int p = 0; p < s * s; p++)
            grey[p] = (unsigned char)((px[3 * p] * 299 + px[3 * p + 1] * 587 + px[3 * p + 2] * 114) / 1000);
          rc = write_png(path, s, s, PNG_COLOR_TYPE_GRAY, 8, grey, NULL, 0, NULL, 0);
        } else {
          rc = write_jpeg(path, s, s, 3, px, 90);
        }
        if (rc) {
          fprintf(stderr, "make_shapes: cannot write %s\n", path);
          return 1;
        }
      }
    }
  }
  return 0;
}

#else

int main(void) {
  fprintf(stderr, "make_shapes: this pdlang was built without libpng or libjpeg\n");
  return 77;
}

#endif
