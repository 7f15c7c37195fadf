/* test_image_prep.c -- a model's preprocessing file (NAME.preprocess, vm/reader/image_prep.c):
 * what save writes reads back bit for bit (from a file and from text of exactly its length),
 * blank lines, comments and CRLF, and every refusal with the line it names: a zero, tiny or NaN
 * std, a NaN or infinite mean, a fractional or out-of-range shape, a line given twice, mean
 * before shape, a NUL byte, an input of two words, a missing line; nothing half-read is left in
 * the record. Also the shared rule of the images reader (pd_image_norm_ok) at its edges. */
#include "config.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "vm/reader/reader.h"

static pd_status parse(const char *text, size_t len, pd_image_prep *p, pd_error *err) {
  return pd_image_prep_parse(text, len, "m.preprocess", p, err);
}

static void test_round_trip(void) {
  pd_image_prep p = {.input = "images",
                     .o = {.channels = 3, .height = 32, .width = 24,
                           .mean = {0.485, 0.456, 0.406}, .std = {0.229, 0.224, 0.225}}};
  char path[256];
  snprintf(path, sizeof path, "%s/pd_test_prep.%d.preprocess",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  pd_error err = {0};
  pd_image_prep q;
  is_int(pd_image_prep_save(path, &p, &err), PD_OK, "save");
  is_int(pd_image_prep_load(path, &q, &err), PD_OK, "load");
  ok(memcmp(&p, &q, sizeof p) == 0, "what save wrote loads back bit for bit");
  unlink(path);
  is_int(pd_image_prep_load(path, &q, &err), PD_ENOTFOUND, "a missing file: PD_ENOTFOUND");
  pd_error_clear(&err);

  /* Text of exactly its length: the byte after it is not read (a '9' there would change std). */
  const char text[] = "input x\nshape 1 2 2\nmean 0.5\nstd 0.259";
  is_int(parse(text, sizeof text - 2, &q, &err), PD_OK, "text without a NUL after it");
  ok(q.o.std[0] == 0.25, "its last number ends at the length (std %g)", q.o.std[0]);

  const char *crlf = "\r\n# a comment\n\ninput img\r\nshape 4 2 3\r\nmean 0 0.5 -1 1e-3\r\n"
                     "std 1 2 0.5 4\r\n";
  is_int(parse(crlf, strlen(crlf), &q, &err), PD_OK, "blank lines, comments and CRLF");
  ok(!strcmp(q.input, "img") && q.o.channels == 4 && q.o.height == 2 && q.o.width == 3 &&
         q.o.mean[3] == 1e-3 && q.o.std[2] == 0.5,
     "their values (%s %d %d %d)", q.input, q.o.channels, q.o.height, q.o.width);
  pd_error_clear(&err);
}

static void test_refusals(void) {
  static const struct {
    const char *text;
    int line;            /* the line the error names (0: the file) */
    const char *says;
  } cases[] = {
      {"input x\nshape 3 8 8\nmean 0.5 0.5 0.5\nstd 0 0.25 0.25\n", 4, "std must be a positive"},
      {"input x\nshape 1 8 8\nmean 0\nstd 1e-320\n", 4, "std must be a positive"},
      {"input x\nshape 1 8 8\nmean 0\nstd nan\n", 4, "std must be a positive"},
      {"input x\nshape 1 8 8\nmean nan\nstd 1\n", 3, "mean must be a finite"},
      {"input x\nshape 1 8 8\nmean -inf\nstd 1\n", 3, "mean must be a finite"},
      {"input x\nshape 1 8 8\nmean 1e300\nstd 1e-10\n", 0, "past float32's range"},
      {"input x\n\n\nshape 3 32.5 32\nmean 0 0 0\nstd 1 1 1\n", 4, "three integers"},
      {"input x\nshape 2 8 8\nmean 0 0\nstd 1 1\n", 2, "channels 1, 3 or 4"},
      {"input x\nshape 1 5000 8\nmean 0\nstd 1\n", 2, "1 to 4096"},
      {"input x\nshape 1 8 8\nmean 0\nstd 1\nshape 3 8 8\n", 5, "a second shape line"},
      {"input x\ninput y\nshape 1 8 8\nmean 0\nstd 1\n", 2, "a second input line"},
      {"input x\nmean 0\nshape 1 8 8\nstd 1\n", 2, "after shape"},
      {"input x\nshape 1 8 8\nmean 0 1\nstd 1\n", 3, "one number per channel"},
      {"input x y\nshape 1 8 8\nmean 0\nstd 1\n", 1, "one name"},
      {"input x\nshape 1 8 8\nmeans 0\nstd 1\n", 3, "an unknown line"},
      {"input x\nshape 1 8 8\nmean 0\n", 0, "needs the lines input, shape, mean and std"},
  };
  for (size_t i = 0; i < PD_ARRAY_LEN(cases); i++) {
    pd_image_prep p;
    memset(&p, 0x5a, sizeof p);
    pd_error err = {0};
    pd_status st = parse(cases[i].text, strlen(cases[i].text), &p, &err);
    static const pd_image_prep zero;
    ok(st == PD_EFORMAT && err.msg && strstr(err.msg, cases[i].says) &&
           err.loc.file && !strcmp(err.loc.file, "m.preprocess") && err.loc.line == cases[i].line &&
           !memcmp(&p, &zero, sizeof p),
       "case %zu refused at line %d: %s (line %d: %s)", i, cases[i].line, cases[i].says,
       err.loc.line, err.msg ? err.msg : "accepted");
    pd_error_clear(&err);
  }
  const char nul[] = "input x\nshape 1 8 8\nmean 0\0\nstd 1\n";
  pd_image_prep p;
  pd_error err = {0};
  pd_status st = parse(nul, sizeof nul - 1, &p, &err);
  ok(st == PD_EFORMAT && err.loc.line == 3 && strstr(err.msg, "NUL"),
     "a NUL byte is refused at its line (%s)", err.msg ? err.msg : "accepted");
  pd_error_clear(&err);
}

static void test_norm_rule(void) {
  ok(pd_image_norm_ok(0.5, 0.25), "mean 0.5, std 0.25");
  ok(!pd_image_norm_ok(0.5, 0), "std 0");
  ok(!pd_image_norm_ok(0.5, -1), "std -1");
  ok(!pd_image_norm_ok(0, 1e-39), "std 1e-39: 1 / std past float32");
  ok(pd_image_norm_ok(0, 1e-38), "std 1e-38: 1 / std within float32");
  ok(!pd_image_norm_ok(1e39, 1), "mean 1e39");
}

static void test_alloc_failures(void) {
  const char *text = "input x\nshape 1 8 8\nmean 0\nstd 1\n";
  bool all = true;
  for (long k = 1; k < 10; k++) {
    pd_alloc_fail_after(k);
    pd_image_prep p;
    pd_error err = {0};
    pd_status st = parse(text, strlen(text), &p, &err);
    pd_alloc_fail_after(0);
    if (st != PD_OK && st != PD_ENOMEM) all = false;
    pd_error_clear(&err);
  }
  ok(all, "each allocation failing: OK or PD_ENOMEM");
}

int main(void) {
  test_round_trip();
  test_refusals();
  test_norm_rule();
  test_alloc_failures();
  return tap_done();
}
