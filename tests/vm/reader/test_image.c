/* test_image.c -- the images reader (vm/reader/reader_image.c, pd_dataset_images): PNG files of
 * every colour type (grey 2/8/16-bit, grey + alpha, RGB, RGBA, palette with transparency)
 * written with libpng and read back exactly, JPEG files written with libjpeg read back within
 * JPEG's tolerance, the conversion to 1, 3 or 4 channels, the bilinear resize against the
 * formula computed here, normalisation, the class folders and their order, every error (not an
 * image, truncated and corrupt PNG and JPEG, empty folders), allocation failures, and the
 * augmentations through the batcher: determinism for a seed (prefetch on and off), a flip is a
 * mirror image, a crop is a shift filled with the padding value. Skips without libpng and
 * libjpeg. */
#include "config.h"
#include "vm/reader/reader.h"
#include "tests/tap.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/vm/reader/image_write.h"

#if defined(PD_HAVE_PNG) && defined(PD_HAVE_JPEG)

static char root[256];

static const char *path_of(const char *rel) {
  static char buf[8][512];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 512, "%s/%s", root, rel);
  return p;
}

static void mkdirs(const char *rel) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", root, rel);
  for (char *s = p + strlen(root) + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      mkdir(p, 0755);
      *s = '/';
    }
  mkdir(p, 0755);
}

static void write_bytes(const char *rel, const void *data, size_t n) {
  FILE *f = fopen(path_of(rel), "wb");
  if (!f || fwrite(data, 1, n, f) != n) printf("Bail out! cannot write %s\n", rel), exit(1);
  fclose(f);
}

static unsigned char *slurp(const char *rel, size_t *n) {
  FILE *f = fopen(path_of(rel), "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len + 1);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

static void must(int rc, const char *what) {
  if (rc) printf("Bail out! cannot write %s\n", what), exit(1);
}

static pd_image_options opts(int c, int h, int w) {
  pd_image_options o = {.channels = c, .height = h, .width = w};
  for (int k = 0; k < 4; k++) o.std[k] = 1;
  return o;
}

/* Load DIR (relative to root); NULL on failure (the error in *e). */
static pd_dataset *load(const char *rel, const pd_image_options *o, pd_error *e) {
  pd_dataset *d = NULL;
  pd_status st = pd_dataset_images(path_of(rel), o, &d, NULL, NULL, e);
  if (st) printf("# %s: %s\n", rel, e->msg ? e->msg : "?");
  return st ? NULL : d;
}

static float at(const pd_dataset *d, int64_t i, int c, int y, int x) {
  int64_t dims[8];
  pd_dataset_field_shape(d, 0, dims);
  const float *p = pd_dataset_field_data(d, 0);
  return p[(((size_t)i * (size_t)dims[0] + (size_t)c) * (size_t)dims[1] + (size_t)y) *
               (size_t)dims[2] + (size_t)x];
}

/* The one-image folder rel/c/img.png holding the given file (rel/c is made). */
static const char *one(const char *rel) {
  static char p[8][256];
  static int k;
  char *s = p[k++ % 8];
  snprintf(s, 256, "%s/c", rel);
  mkdirs(s);
  snprintf(s, 256, "%s/c/img", rel);
  return s;
}

/* ---- Decoding: PNG exactly, JPEG within its tolerance ---- */

static void test_png_types(void) {
  pd_error e = {0};
  /* RGB 8-bit, 5 x 4, every sample distinct. */
  unsigned char rgb[4 * 5 * 3];
  for (int i = 0; i < 60; i++) rgb[i] = (unsigned char)(i * 4 + 3);
  must(write_png(path_of(one("rgb")), 5, 4, PNG_COLOR_TYPE_RGB, 8, rgb, NULL, 0, NULL, 0), "rgb");
  pd_image_options o = opts(3, 4, 5);
  pd_dataset *d = load("rgb", &o, &e);
  int bad = 0;
  for (int y = 0; d && y < 4; y++)
    for (int x = 0; x < 5; x++)
      for (int c = 0; c < 3; c++)
        bad += fabs(at(d, 0, c, y, x) * 255.0 - rgb[(y * 5 + x) * 3 + c]) > 1e-4;
  ok(d && bad == 0, "RGB PNG: every sample v reads v / 255 (CHW)");
  pd_dataset_free(d);
  o = opts(1, 4, 5);
  d = load("rgb", &o, &e);
  bad = 0;
  for (int y = 0; d && y < 4; y++)
    for (int x = 0; x < 5; x++) {
      const unsigned char *p = rgb + (y * 5 + x) * 3;
      double l = (0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]) / 255;
      bad += fabs(at(d, 0, 0, y, x) - l) > 1e-6;
    }
  ok(d && bad == 0, "RGB PNG as 1 channel: 0.299 R + 0.587 G + 0.114 B");
  pd_dataset_free(d);

  /* Grey 8-bit as 1 and 3 channels; as 4, alpha 1. */
  unsigned char g8[3 * 2] = {0, 51, 102, 153, 204, 255};
  must(write_png(path_of(one("g8")), 3, 2, PNG_COLOR_TYPE_GRAY, 8, g8, NULL, 0, NULL, 0), "g8");
  o = opts(3, 2, 3);
  d = load("g8", &o, &e);
  bad = 0;
  for (int i = 0; d && i < 6; i++)
    for (int c = 0; c < 3; c++) bad += fabs(at(d, 0, c, i / 3, i % 3) * 255.0 - g8[i]) > 1e-4;
  ok(d && bad == 0, "grey PNG as RGB: the grey value in every channel");
  pd_dataset_free(d);
  o = opts(4, 2, 3);
  d = load("g8", &o, &e);
  ok(d && at(d, 0, 3, 1, 2) == 1.0f && fabs(at(d, 0, 0, 1, 1) * 255.0 - 204) < 1e-4,
     "grey PNG as RGBA: alpha 1");
  pd_dataset_free(d);

  /* Grey 16-bit: v / 65535. */
  uint16_t v16[4] = {0, 1, 40000, 65535};
  unsigned char g16[8];
  for (int i = 0; i < 4; i++) g16[2 * i] = (unsigned char)(v16[i] >> 8), g16[2 * i + 1] = (unsigned char)v16[i];
  must(write_png(path_of(one("g16")), 2, 2, PNG_COLOR_TYPE_GRAY, 16, g16, NULL, 0, NULL, 0), "g16");
  o = opts(1, 2, 2);
  d = load("g16", &o, &e);
  bad = 0;
  for (int i = 0; d && i < 4; i++) bad += fabs(at(d, 0, 0, i / 2, i % 2) - v16[i] / 65535.0) > 1e-7;
  ok(d && bad == 0, "16-bit grey PNG: v / 65535 (1 / 65535 is not rounded away)");
  pd_dataset_free(d);

  /* Grey 2-bit: 0..3 -> 0, 1/3, 2/3, 1. One row of 4 pixels: 00 01 10 11 = 0x1b. */
  unsigned char g2[1] = {0x1b};
  must(write_png(path_of(one("g2")), 4, 1, PNG_COLOR_TYPE_GRAY, 2, g2, NULL, 0, NULL, 0), "g2");
  o = opts(1, 1, 4);
  d = load("g2", &o, &e);
  bad = 0;
  for (int i = 0; d && i < 4; i++) bad += fabs(at(d, 0, 0, 0, i) - i / 3.0) > 1e-6;
  ok(d && bad == 0, "2-bit grey PNG: the levels 0..3 are 0, 1/3, 2/3, 1");
  pd_dataset_free(d);

  /* Palette with a transparent entry, as RGBA and RGB. */
  png_color pal[3] = {{255, 0, 0}, {0, 128, 0}, {10, 20, 30}};
  unsigned char trns[1] = {64}, idx[4] = {0, 1, 2, 1};
  must(write_png(path_of(one("pal")), 2, 2, PNG_COLOR_TYPE_PALETTE, 8, idx, pal, 3, trns, 1), "pal");
  o = opts(4, 2, 2);
  d = load("pal", &o, &e);
  bad = 0;
  for (int i = 0; d && i < 4; i++) {
    png_color p = pal[idx[i]];
    double want[4] = {p.red, p.green, p.blue, idx[i] == 0 ? 64 : 255};
    for (int c = 0; c < 4; c++) bad += fabs(at(d, 0, c, i / 2, i % 2) * 255.0 - want[c]) > 1e-4;
  }
  ok(d && bad == 0, "palette PNG with tRNS as RGBA: the entries' colours and alpha");
  pd_dataset_free(d);

  /* RGBA as RGB drops alpha; grey + alpha as 1 channel keeps the grey. */
  unsigned char rgba[2 * 4] = {10, 20, 30, 0, 200, 100, 50, 255};
  must(write_png(path_of(one("rgba")), 2, 1, PNG_COLOR_TYPE_RGBA, 8, rgba, NULL, 0, NULL, 0), "rgba");
  o = opts(3, 1, 2);
  d = load("rgba", &o, &e);
  ok(d && fabs(at(d, 0, 0, 0, 0) * 255.0 - 10) < 1e-4 && fabs(at(d, 0, 2, 0, 1) * 255.0 - 50) < 1e-4,
     "RGBA PNG as RGB: the colour, alpha dropped (not composited)");
  pd_dataset_free(d);
  unsigned char ga[2 * 2] = {77, 0, 99, 255};
  must(write_png(path_of(one("ga")), 2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8, ga, NULL, 0, NULL, 0), "ga");
  o = opts(1, 1, 2);
  d = load("ga", &o, &e);
  ok(d && fabs(at(d, 0, 0, 0, 0) * 255.0 - 77) < 1e-4 && fabs(at(d, 0, 0, 0, 1) * 255.0 - 99) < 1e-4,
     "grey + alpha PNG as grey");
  pd_dataset_free(d);
  pd_error_clear(&e);
}

static void test_jpeg(void) {
  pd_error e = {0};
  enum { W = 16, H = 8 };
  unsigned char rgb[W * H * 3], grey[W * H];
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {   /* smooth gradients: JPEG keeps them closely */
      unsigned char *p = rgb + (y * W + x) * 3;
      p[0] = (unsigned char)(40 + 8 * x);
      p[1] = (unsigned char)(60 + 10 * y);
      p[2] = (unsigned char)(200 - 4 * x - 5 * y);
      grey[y * W + x] = (unsigned char)(30 + 6 * x + 9 * y);
    }
  must(write_jpeg(path_of(one("jrgb")), W, H, 3, rgb, 100), "jrgb");
  must(write_jpeg(path_of(one("jgrey")), W, H, 1, grey, 100), "jgrey");
  pd_image_options o = opts(3, H, W);
  pd_dataset *d = load("jrgb", &o, &e);
  double worst = 0;
  for (int y = 0; d && y < H; y++)
    for (int x = 0; x < W; x++)
      for (int c = 0; c < 3; c++) {
        double diff = fabs(at(d, 0, c, y, x) * 255.0 - rgb[(y * W + x) * 3 + c]);
        if (diff > worst) worst = diff;
      }
  ok(d && worst <= 3, "RGB JPEG (quality 100, 4:4:4): every sample within 3 of 255 (worst %.2f)",
     worst);
  pd_dataset_free(d);
  d = load("jgrey", &o, &e);
  worst = 0;
  for (int y = 0; d && y < H; y++)
    for (int x = 0; x < W; x++)
      for (int c = 0; c < 3; c++) {
        double diff = fabs(at(d, 0, c, y, x) * 255.0 - grey[y * W + x]);
        if (diff > worst) worst = diff;
      }
  ok(d && worst <= 2, "greyscale JPEG as RGB: within 2 of 255 in every channel (worst %.2f)",
     worst);
  pd_dataset_free(d);
  pd_error_clear(&e);
}

/* ---- Resizing and normalisation ---- */

/* Bilinear, half-pixel centres, source clamped below at 0 (PyTorch's align_corners = False). */
static double bilinear(const double *img, int ih, int iw, int oh, int ow, int y, int x) {
  double sy = (y + 0.5) * ih / oh - 0.5, sx = (x + 0.5) * iw / ow - 0.5;
  if (sy < 0) sy = 0;
  if (sx < 0) sx = 0;
  int y0 = (int)floor(sy), x0 = (int)floor(sx);
  if (y0 > ih - 1) y0 = ih - 1;
  if (x0 > iw - 1) x0 = iw - 1;
  int y1 = y0 + 1 < ih ? y0 + 1 : y0, x1 = x0 + 1 < iw ? x0 + 1 : x0;
  double fy = sy - y0, fx = sx - x0;
  return (1 - fy) * ((1 - fx) * img[y0 * iw + x0] + fx * img[y0 * iw + x1]) +
         fy * ((1 - fx) * img[y1 * iw + x0] + fx * img[y1 * iw + x1]);
}

static void test_resize(void) {
  pd_error e = {0};
  enum { IH = 5, IW = 7 };
  unsigned char g[IH * IW];
  double img[IH * IW];
  for (int i = 0; i < IH * IW; i++) g[i] = (unsigned char)((i * 37) % 256), img[i] = g[i] / 255.0;
  must(write_png(path_of(one("rs")), IW, IH, PNG_COLOR_TYPE_GRAY, 8, g, NULL, 0, NULL, 0), "rs");
  static const int sizes[][2] = {{3, 4}, {10, 9}, {5, 3}, {1, 1}};
  for (size_t s = 0; s < 4; s++) {
    int oh = sizes[s][0], ow = sizes[s][1];
    pd_image_options o = opts(1, oh, ow);
    pd_dataset *d = load("rs", &o, &e);
    double worst = 0;
    for (int y = 0; d && y < oh; y++)
      for (int x = 0; x < ow; x++) {
        double diff = fabs(at(d, 0, 0, y, x) - bilinear(img, IH, IW, oh, ow, y, x));
        if (diff > worst) worst = diff;
      }
    ok(d && worst < 1e-5, "resize %dx%d -> %dx%d: the bilinear formula (worst %.2g)", IH, IW, oh,
       ow, worst);
    pd_dataset_free(d);
  }
  /* Normalisation after the resize: (v - mean) / std per channel. */
  unsigned char rgb[2 * 3] = {255, 0, 51, 0, 255, 102};
  must(write_png(path_of(one("norm")), 2, 1, PNG_COLOR_TYPE_RGB, 8, rgb, NULL, 0, NULL, 0), "norm");
  pd_image_options o = opts(3, 1, 2);
  double mean[3] = {0.485, 0.456, 0.406}, std[3] = {0.229, 0.224, 0.225};
  for (int c = 0; c < 3; c++) o.mean[c] = mean[c], o.std[c] = std[c];
  pd_dataset *d = load("norm", &o, &e);
  int bad = 0;
  for (int x = 0; d && x < 2; x++)
    for (int c = 0; c < 3; c++)
      bad += fabs(at(d, 0, c, 0, x) - (rgb[x * 3 + c] / 255.0 - mean[c]) / std[c]) > 1e-5;
  ok(d && bad == 0, "normalised per channel: (v / 255 - mean[c]) / std[c]");
  pd_dataset_free(d);
  pd_error_clear(&e);
}

/* ---- Class folders ---- */

static void test_folders(void) {
  pd_error e = {0};
  unsigned char px[1] = {0};
  mkdirs("cls/zebra");
  mkdirs("cls/ant/nested");
  mkdirs("cls/.hidden");
  mkdirs("cls/bee");
  px[0] = 10;
  must(write_png(path_of("cls/zebra/a.png"), 1, 1, PNG_COLOR_TYPE_GRAY, 8, px, NULL, 0, NULL, 0), "z");
  px[0] = 20;
  must(write_png(path_of("cls/ant/b.png"), 1, 1, PNG_COLOR_TYPE_GRAY, 8, px, NULL, 0, NULL, 0), "a");
  px[0] = 30;
  must(write_png(path_of("cls/ant/nested/c.png"), 1, 1, PNG_COLOR_TYPE_GRAY, 8, px, NULL, 0, NULL, 0), "n");
  px[0] = 40;   /* a .jpg name holding a PNG: files go by their content */
  must(write_png(path_of("cls/bee/d.jpg"), 1, 1, PNG_COLOR_TYPE_GRAY, 8, px, NULL, 0, NULL, 0), "b");
  write_bytes("cls/bee/.DS_Store", "junk", 4);
  write_bytes("cls/.hidden/x.txt", "junk", 4);
  write_bytes("cls/README.txt", "not a class", 11);
  pd_image_options o = opts(1, 1, 1);
  char **classes = NULL;
  int nc = 0;
  pd_dataset *d = NULL;
  pd_status st = pd_dataset_images(path_of("cls"), &o, &d, &classes, &nc, &e);
  ok(st == PD_OK && nc == 3 && strcmp(classes[0], "ant") == 0 && strcmp(classes[1], "bee") == 0 &&
         strcmp(classes[2], "zebra") == 0,
     "class folders sorted by name: ant, bee, zebra (hidden folders and files at the top skipped)");
  ok(d && pd_dataset_size(d) == 4, "four images (a nested folder's included, hidden files not)");
  if (d && pd_dataset_size(d) == 4) {
    const int64_t *lab = pd_dataset_field_data(d, 1);
    static const int64_t want_lab[4] = {0, 0, 1, 2};
    static const int want_px[4] = {20, 30, 40, 10};
    int bad = 0;
    for (int i = 0; i < 4; i++)
      bad += lab[i] != want_lab[i] || fabs(at(d, i, 0, 0, 0) * 255.0 - want_px[i]) > 1e-4;
    ok(bad == 0, "labels 0, 0, 1, 2 in class then path order (ant/b, ant/nested/c, bee/d, zebra/a)");
    is_str(pd_dataset_field_name(d, 0), "images", "field 0 is 'images'");
    int64_t dims[8];
    ok(pd_dataset_field_shape(d, 0, dims) == 3 && dims[0] == 1 && dims[1] == 1 && dims[2] == 1 &&
           pd_dataset_field_dtype(d, 0) == PD_FP32 && pd_dataset_field_dtype(d, 1) == PD_INT64,
       "images float32 [C, H, W], label int64 [1]");
  } else {
    for (int i = 0; i < 3; i++) ok(0, "dataset missing");
  }
  pd_image_classes_free(classes, nc);
  pd_dataset_free(d);
  pd_error_clear(&e);
}

/* ---- Errors ---- */

static void expect_error(const char *rel, const pd_image_options *o, pd_status want,
                         const char *needle, const char *needle2, const char *what) {
  pd_error e = {0};
  pd_dataset *d = NULL;
  pd_status st = pd_dataset_images(rel ? path_of(rel) : "/nonexistent/pd_images", o, &d, NULL,
                                   NULL, &e);
  bool pass = st == want && d == NULL && e.msg && strstr(e.msg, needle) &&
              (!needle2 || strstr(e.msg, needle2));
  ok(pass, "%s", what);
  if (!pass)
    printf("#   got %s: %s\n#   want %s with '%s'\n", pd_status_str(st), e.msg ? e.msg : "(none)",
           pd_status_str(want), needle);
  pd_dataset_free(d);
  pd_error_clear(&e);
}

static void test_errors(void) {
  pd_image_options o = opts(3, 4, 4);
  unsigned char rgb[8 * 8 * 3];
  for (int i = 0; i < (int)sizeof rgb; i++) rgb[i] = (unsigned char)(i * 7);
  must(write_png(path_of("good.png"), 8, 8, PNG_COLOR_TYPE_RGB, 8, rgb, NULL, 0, NULL, 0), "good");
  must(write_jpeg(path_of("good.jpg"), 8, 8, 3, rgb, 90), "good jpeg");
  size_t np, nj;
  unsigned char *png = slurp("good.png", &np), *jpg = slurp("good.jpg", &nj);
  if (!png || !jpg) printf("Bail out! cannot read the fixtures back\n"), exit(1);

  mkdirs("e_text/c");
  write_bytes("e_text/c/notes.txt", "hello, world\n", 13);
  expect_error("e_text", &o, PD_EFORMAT, "e_text/c/notes.txt is neither a PNG nor a JPEG",
               "68 65 6c", "a text file: neither a PNG nor a JPEG, its first bytes named");
  mkdirs("e_empty_file/c");
  write_bytes("e_empty_file/c/x.png", "", 0);
  expect_error("e_empty_file", &o, PD_EFORMAT, "x.png is neither", "it is empty", "an empty file");
  mkdirs("e_trunc_png/c");
  write_bytes("e_trunc_png/c/t.png", png, np / 2);
  expect_error("e_trunc_png", &o, PD_EFORMAT, "e_trunc_png/c/t.png: corrupt PNG", NULL,
               "a truncated PNG: an error naming the file, not an abort");
  mkdirs("e_crc_png/c");
  unsigned char *bad = malloc(np);
  memcpy(bad, png, np);
  bad[np / 2] ^= 0x55;   /* inside IDAT: its CRC no longer matches */
  write_bytes("e_crc_png/c/b.png", bad, np);
  expect_error("e_crc_png", &o, PD_EFORMAT, "b.png: corrupt PNG", NULL, "a PNG with a bad CRC");
  memcpy(bad, png, 8);
  memset(bad + 8, 0xee, np - 8);
  write_bytes("e_crc_png/c/b.png", bad, np);
  expect_error("e_crc_png", &o, PD_EFORMAT, "b.png: corrupt PNG", NULL,
               "a PNG signature followed by garbage");
  free(bad);
  mkdirs("e_trunc_jpg/c");
  write_bytes("e_trunc_jpg/c/t.jpg", jpg, nj / 2);
  expect_error("e_trunc_jpg", &o, PD_EFORMAT, "e_trunc_jpg/c/t.jpg: corrupt JPEG", NULL,
               "a truncated JPEG (libjpeg's warning is an error)");
  mkdirs("e_bad_jpg/c");
  unsigned char junk[64] = {0xff, 0xd8, 0xff, 0x00};
  for (int i = 4; i < 64; i++) junk[i] = (unsigned char)(i * 13);
  write_bytes("e_bad_jpg/c/j.jpg", junk, sizeof junk);
  expect_error("e_bad_jpg", &o, PD_EFORMAT, "j.jpg: corrupt JPEG", NULL,
               "a JPEG marker followed by garbage (libjpeg's error_exit)");
  mkdirs("e_fifo/c");
  if (mkfifo(path_of("e_fifo/c/pipe"), 0600) == 0)
    expect_error("e_fifo", &o, PD_EFORMAT, "e_fifo/c/pipe' is neither an image file nor a folder",
                 NULL, "a FIFO in a class folder: an error, not a read that blocks");
  else
    ok(0, "cannot make a FIFO");
  mkdirs("e_none");
  expect_error("e_none", &o, PD_EFORMAT, "has no class folders", NULL, "an empty folder");
  mkdirs("e_noimg/a");
  mkdirs("e_noimg/b");
  write_bytes("e_noimg/a/x.png", png, np);
  expect_error("e_noimg", &o, PD_EFORMAT, "e_noimg/b' has no images", "class 1 of 2",
               "a class folder without images");
  expect_error(NULL, &o, PD_ENOTFOUND, "cannot open the folder '/nonexistent/pd_images'", NULL,
               "a missing folder");
  expect_error("good.png", &o, PD_EIO, "is not a folder", NULL, "a file where the folder should be");
  pd_image_options b = opts(2, 4, 4);
  expect_error("e_noimg", &b, PD_EINVAL, "1 (grey), 3 (RGB) or 4 (RGBA) channels, not 2", NULL,
               "2 channels refused");
  b = opts(3, 0, 4);
  expect_error("e_noimg", &b, PD_EINVAL, "1 to 4096, not 0 x 4", NULL, "a height of 0 refused");
  b = opts(3, 4, 4);
  b.std[1] = 0;
  expect_error("e_noimg", &b, PD_EINVAL, "channel 1", "std", "a std of 0 refused");
  /* An image too large for memory is refused before its pixels are allocated: a PNG header
   * announcing 100000 x 100000. */
  mkdirs("e_huge/c");
  unsigned char *big = calloc(100000, 1);
  int rc = write_png(path_of("e_huge/c/h.png"), 100000, 1, PNG_COLOR_TYPE_GRAY, 8, big, NULL, 0, NULL, 0);
  free(big);
  if (rc == 0) {
    size_t nh;
    unsigned char *h = slurp("e_huge/c/h.png", &nh);
    h[20] = 0x00, h[21] = 0x01, h[22] = 0x86, h[23] = 0xa0;   /* height 100000 */
    unsigned crc = (unsigned)crc32(crc32(0, NULL, 0), h + 12, 17);
    h[29] = (unsigned char)(crc >> 24), h[30] = (unsigned char)(crc >> 16);
    h[31] = (unsigned char)(crc >> 8), h[32] = (unsigned char)crc;
    write_bytes("e_huge/c/h.png", h, nh);
    free(h);
    expect_error("e_huge", &o, PD_EUNSUPPORTED, "100000 x 100000 pixels", NULL,
                 "a 100000 x 100000 PNG refused by its header");
  } else {
    ok(0, "cannot write the large PNG fixture");
  }
  free(png);
  free(jpg);
}

/* Every allocation failing in turn: PD_ENOMEM and nothing leaked, never a crash. */
static void test_alloc_failures(void) {
  pd_image_options o = opts(3, 3, 3);
  bool all = true, finished = false;
  for (long k = 1; k < 3000 && !finished; k++) {
    pd_error e = {0};
    pd_dataset *d = NULL;
    char **cls = NULL;
    int nc = 0;
    pd_alloc_fail_after(k);
    pd_status st = pd_dataset_images(path_of("cls"), &o, &d, &cls, &nc, &e);
    pd_alloc_fail_after(0);
    if (st == PD_OK) finished = true;
    else if (st != PD_ENOMEM || d) all = false, printf("# allocation %ld: %s\n", k, e.msg);
    pd_image_classes_free(cls, nc);
    pd_dataset_free(d);
    pd_error_clear(&e);
  }
  ok(all && finished, "every allocation failing in turn gives PD_ENOMEM, then it loads");
}

/* ---- Augmentation through the batcher ---- */

/* A dataset of n images, W x H RGB, every sample distinct. */
static pd_dataset *aug_data(int n, const pd_image_options *o) {
  mkdirs("aug/a");
  mkdirs("aug/b");
  int W = o->width, H = o->height;
  unsigned char *px = malloc((size_t)W * H * 3);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < W * H * 3; k++) px[k] = (unsigned char)((i * 31 + k * 7) % 251 + 1);
    char rel[64];
    snprintf(rel, sizeof rel, "aug/%c/%03d.png", i % 2 ? 'b' : 'a', i);
    must(write_png(path_of(rel), W, H, PNG_COLOR_TYPE_RGB, 8, px, NULL, 0, NULL, 0), rel);
  }
  free(px);
  pd_error e = {0};
  pd_dataset *d = load("aug", o, &e);
  pd_error_clear(&e);
  return d;
}

/* All the batches of an epoch, the images field concatenated into out (n samples). */
static int run_epoch(const pd_dataset *d, const pd_image_augment *ia, uint64_t seed, int epoch,
                     bool prefetch, bool shuffle, float *out, int64_t *labels) {
  pd_batch_augment ba = pd_image_augmenter(ia);
  pd_batcher_options bo = {.batch = 5, .shuffle = shuffle, .seed = seed, .prefetch = prefetch,
                           .augment = ia ? &ba : NULL};
  pd_batcher *b = NULL;
  pd_error e = {0};
  if (pd_batcher_new(d, &bo, &b, &e)) {
    printf("# batcher: %s\n", e.msg);
    pd_error_clear(&e);
    return -1;
  }
  pd_batcher_start_epoch(b, epoch);
  pd_tensor t[2];
  pd_tensor_init(&t[0]);
  pd_tensor_init(&t[1]);
  int64_t rows, at = 0;
  size_t per = (size_t)ia->o.channels * (size_t)ia->o.height * (size_t)ia->o.width;
  while (pd_batcher_next(b, t, &rows, &e) == PD_OK && rows > 0) {
    memcpy(out + (size_t)at * per, pd_tensor_data(&t[0]), (size_t)rows * per * sizeof(float));
    memcpy(labels + at, pd_tensor_data(&t[1]), (size_t)rows * sizeof(int64_t));
    at += rows;
  }
  pd_tensor_release(&t[0]);
  pd_tensor_release(&t[1]);
  pd_batcher_free(b);
  return (int)at;
}

static void test_augment(void) {
  enum { N = 24, C = 3, H = 6, W = 5 };
  pd_image_options o = opts(C, H, W);
  double mean[3] = {0.5, 0.25, 0.125}, std[3] = {0.5, 0.25, 2};
  for (int c = 0; c < 3; c++) o.mean[c] = mean[c], o.std[c] = std[c];
  pd_dataset *d = aug_data(N, &o);
  if (!d) {
    ok(0, "the augmentation fixture loads");
    return;
  }
  const size_t per = C * H * W;
  const float *src = pd_dataset_field_data(d, 0);
  static float a[N * C * H * W], b[N * C * H * W];
  int64_t la[N], lb[N];
  /* Flip only: each sample is itself or its mirror image, and both happen. */
  pd_image_augment flip = {.o = o, .pad = 0, .flip = true};
  int n = run_epoch(d, &flip, 7, 0, false, false, a, la);
  int same = 0, mirrored = 0, other = 0;
  for (int i = 0; i < n; i++) {
    bool s = true, m = true;
    for (int c = 0; c < C; c++)
      for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
          float v = a[i * per + (c * H + y) * W + x];
          s = s && v == src[i * per + (c * H + y) * W + x];
          m = m && v == src[i * per + (c * H + y) * W + (W - 1 - x)];
        }
    same += s;
    mirrored += m && !s;
    other += !s && !m;
  }
  ok(n == N && other == 0 && same > 0 && mirrored > 0,
     "flip: every sample is the image or its mirror (%d of each kind: %d, %d)", N, same, mirrored);
  /* Crop with padding 2: each sample is the image shifted by (dy, dx) in [-2, 2], the pixels
   * from outside the padding value -mean / std. */
  pd_image_augment crop = {.o = o, .pad = 2, .flip = false};
  n = run_epoch(d, &crop, 11, 0, false, false, a, la);
  int shifted = 0, moved = 0;
  for (int i = 0; i < n; i++) {
    bool found = false;
    for (int dy = -2; dy <= 2 && !found; dy++)
      for (int dx = -2; dx <= 2 && !found; dx++) {
        bool m = true;
        for (int c = 0; c < C && m; c++)
          for (int y = 0; y < H && m; y++)
            for (int x = 0; x < W && m; x++) {
              int sy = y + dy, sx = x + dx;
              float want = sy >= 0 && sy < H && sx >= 0 && sx < W
                               ? src[i * per + (c * H + sy) * W + sx]
                               : (float)(-mean[c] / std[c]);
              m = a[i * per + (c * H + y) * W + x] == want;
            }
        if (m) found = true, moved += dy != 0 || dx != 0;
      }
    shifted += found;
  }
  ok(n == N && shifted == N && moved > N / 2,
     "crop with padding 2: every sample a shift by up to 2 filled with -mean/std (%d moved)",
     moved);
  /* Determinism: the same seed gives the same batches with prefetch on and off, shuffled too;
   * another seed or epoch gives others; without augmentation the data comes out as it is. */
  pd_image_augment both = {.o = o, .pad = 1, .flip = true};
  int n1 = run_epoch(d, &both, 3, 1, false, true, a, la);
  int n2 = run_epoch(d, &both, 3, 1, true, true, b, lb);
  ok(n1 == N && n2 == N && memcmp(a, b, sizeof a) == 0 && memcmp(la, lb, sizeof la) == 0,
     "the same seed and epoch: the same augmented batches, prefetch on or off");
  run_epoch(d, &both, 4, 1, true, true, b, lb);
  ok(memcmp(a, b, sizeof a) != 0, "another seed: other batches");
  run_epoch(d, &both, 3, 1, true, false, a, la);
  run_epoch(d, &both, 3, 2, true, false, b, lb);
  ok(memcmp(a, b, sizeof a) != 0, "another epoch: other augmentations of the same samples");
  pd_image_augment none = {.o = o};
  run_epoch(d, &none, 3, 0, true, false, a, la);
  ok(memcmp(a, src, N * per * sizeof(float)) == 0,
     "padding 0 and no flip: the samples as they are");
  pd_dataset_free(d);
}

int main(void) {
  snprintf(root, sizeof root, "%s/pd_test_image.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid());
  if (mkdir(root, 0700) != 0) {
    printf("Bail out! cannot make %s\n", root);
    return 1;
  }
  test_png_types();
  test_jpeg();
  test_resize();
  test_folders();
  test_errors();
  test_alloc_failures();
  test_augment();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) printf("# could not remove %s\n", root);
  return tap_done();
}

#else

int main(void) {
  tap_skip("this pdlang was built without libpng or libjpeg");
  return tap_done();
}

#endif
