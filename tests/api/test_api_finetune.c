/* test_api_finetune.c -- pd_state_train on a loaded model and pd_state_save_model
 * (include/pdlang.h): a model that a script saved (two fc layers, with a .preprocess and a
 * .categories beside it) is loaded and fine-tuned on a host data set with the options loss,
 * target, label and freeze: its loss falls, the frozen layer's parameters are bit-identical
 * afterwards and the others moved, the state runs the trained model, a second call goes on from
 * the first; the saved model (with copies of the side files) loads in another state, and runs
 * in `pdlang exec`, to the trained outputs bit for bit; mse on the second output; a call that
 * fails part-way (a NaN in the data) changes nothing, the optimizer's state included; every bad
 * option is an error that names it. */
#include "config.h"
#include "include/pdlang.h"
#include "tests/tap.h"
#include "tests/api/train_common.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 96, D = 4 };
static float xs[N * D];
static int64_t labels[N];
static float targets2[N];
static char dir[256];

static const char *at(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%s/%s", dir, name);
  return p;
}

/* The model: a body of 8 relu units, a head of 2 logits, and a second output (a sum of the
 * logits, named as Fluid names vars) for mse; saved untrained by a script. */
static bool make_model(void) {
  char script[1024];
  snprintf(script, sizeof script,
           "import \"layers\"\n"
           "x = data(\"x\", [-1, 4])\n"
           "h = fc(x, 8, act = relu, name = \"body\", bias_name = \"body_b\")\n"
           "y = fc(h, 2, name = \"head\", bias_name = \"head_b\")\n"
           "s = reduce_sum(y, [1], keep_dim = true)\n"
           "save(\"%s\", y, s, names = [\"y\", \"out/sum.0\"])\n",
           at("m.pdmodel"));
  pd_state *st = NULL;
  int rc = pd_state_new(&st);
  if (!rc) pd_state_set_output(st, NULL, NULL);
  if (!rc) rc = pd_state_set_seed(st, 5);
  if (!rc) rc = pd_state_compile_string(st, "make.pd", script);
  if (!rc) rc = pd_state_run(st);
  if (rc) printf("# %s", pd_state_error(st)->text);
  pd_state_free(st);
  FILE *f = fopen(at("m.preprocess"), "w");
  if (f) {
    fputs("# pdlang: how an image file becomes this model's input (as the images reader read "
          "it)\ninput x\nshape 1 2 2\nmean 0.5\nstd 0.25\n", f);
    fclose(f);
  }
  f = fopen(at("m.categories"), "w");
  if (f) {
    fputs("# pdlang categories: the values of each categorical CSV column, in id order "
          "(COLUMN<tab>VALUE)\nlabel\tno\nlabel\tyes\n", f);
    fclose(f);
  }
  return rc == 0 && f;
}

static pd_state *load(const char *model) {
  pd_state *st = NULL;
  if (pd_state_new(&st)) return NULL;
  pd_state_set_output(st, NULL, NULL);
  const char *names[3] = {"x", "label", "t"};
  pd_tensor_info f[3] = {{.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, D}, .data = xs},
                         {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {N, 1}, .data = labels},
                         {.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, 1}, .data = targets2}};
  int rc = pd_state_set_dataset(st, "d", 3, names, f);
  if (!rc) rc = pd_state_load_model(st, model);
  if (rc) {
    printf("# %s", pd_state_error(st)->text);
    pd_state_free(st);
    return NULL;
  }
  return st;
}

/* The model's output `which` (0: the logits, 1: their sum) on all the data, copied into out. */
static bool outputs(pd_state *st, int which, float *out, size_t n) {
  int64_t xd[2] = {N, D};
  int nout = 0;
  const char *const *names = NULL;
  pd_tensor_info t;
  if (pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, xd, xs) || pd_state_run(st) ||
      pd_state_outputs(st, &nout, &names) || nout != 2 ||
      pd_state_fetch(st, names[which], &t) || t.nbytes != n * sizeof *out) {
    printf("# outputs: %s", pd_state_error(st)->text);
    return false;
  }
  memcpy(out, t.data, n * sizeof *out);
  return true;
}

/* Softmax cross entropy of the logits against the labels, averaged. */
static double xent(pd_state *st) {
  float y[N * 2];
  if (!outputs(st, 0, y, N * 2)) return NAN;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    double a = y[2 * i], b = y[2 * i + 1], m = a > b ? a : b;
    double lse = m + log(exp(a - m) + exp(b - m));
    sum += lse - (labels[i] ? b : a);
  }
  return sum / N;
}

static double mse(pd_state *st) {
  float s[N];
  if (!outputs(st, 1, s, N)) return NAN;
  double sum = 0;
  for (int i = 0; i < N; i++) sum += (s[i] - targets2[i]) * (double)(s[i] - targets2[i]);
  return sum / N;
}

static bool same_file(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  bool same = fa && fb;
  while (same) {
    int ca = fgetc(fa), cb = fgetc(fb);
    same = ca == cb;
    if (ca == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

/* A float32 [rows, cols] array as a .npy file. */
static bool write_npy(const char *path, const float *v, int rows, int cols) {
  char hdr[128];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }",
                   rows, cols);
  int total = 10 + n + 1, pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  unsigned short len = (unsigned short)(n + pad + 1);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(len & 0xff, f);
  fputc(len >> 8, f);
  fwrite(hdr, 1, (size_t)n, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  fwrite(v, sizeof *v, (size_t)rows * (size_t)cols, f);
  return fclose(f) == 0;
}

/* The n float32 values of a version 1 .npy file (after its header) into out. */
static bool read_npy(const char *path, float *out, size_t n) {
  FILE *f = fopen(path, "rb");
  unsigned char head[10];
  bool good = f && fread(head, 1, 10, f) == 10 && memcmp(head, "\x93NUMPY\x01", 7) == 0 &&
              fseek(f, 10 + head[8] + 256 * head[9], SEEK_SET) == 0 &&
              fread(out, sizeof *out, n, f) == n && fgetc(f) == EOF;
  if (f) fclose(f);
  return good;
}

/* `pdlang exec` (PDLANG, as make check sets it) of the saved model on xs: its output y is the
 * state's, bit for bit. */
static void test_exec(const float *want) {
  const char *pdlang = getenv("PDLANG");
  if (!pdlang) {
    tap_skip("pdlang exec runs the saved model: PDLANG is not set");
    return;
  }
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' exec '%s' --feed 'x=%s' --out 'y=%s' > '%s' 2>&1", pdlang,
           at("ft.pdmodel"), at("x.npy"), at("y.npy"), at("exec.log"));
  float y[N * 2];
  bool ran = write_npy(at("x.npy"), xs, N, D) && system(cmd) == 0;
  ok(ran && read_npy(at("y.npy"), y, N * 2) && memcmp(y, want, sizeof y) == 0,
     "pdlang exec runs the saved model to the fine-tuned outputs, bit for bit");
  if (!ran) printf("# %s\n", cmd);
}

static const char *const opts[] = {"reader", "host(\"d\")", "batch", "8", "epochs", "10",
                                   "optimizer", "adam(0.05)", "seed", "3",
                                   "freeze", "\"body*\"", NULL};

static void test_finetune(void) {
  pd_state *st = load(at("m.pdmodel"));
  if (!ok(st != NULL, "the saved model loads")) return;
  double before = xent(st);
  size_t nb0, nb1, nh0, nh1;
  void *body0 = weights(st, "body", &nb0), *head0 = weights(st, "head", &nh0);
  int rc = pd_state_train(st, NULL, opts);
  if (!ok(rc == PD_RESULT_OK, "pd_state_train fine-tunes the loaded model"))
    printf("# %s", pd_state_error(st)->text);
  double after = xent(st);
  ok(after < before * 0.7, "the loss falls: %g -> %g", before, after);
  void *body1 = weights(st, "body", &nb1), *head1 = weights(st, "head", &nh1);
  ok(body0 && body1 && nb0 == nb1 && memcmp(body0, body1, nb0) == 0,
     "the frozen layer's weight is bit-identical");
  ok(head0 && head1 && nh0 == nh1 && memcmp(head0, head1, nh0) != 0, "the head's weight moved");
  free(body1);
  free(head1);

  /* a second call goes on from the first */
  rc = pd_state_train(st, NULL, opts);
  double again = xent(st);
  ok(rc == PD_RESULT_OK && again < after, "a second call goes on: %g -> %g", after, again);

  /* saved, loaded again: the trained outputs, the side files copied */
  float y[N * 2], y2[N * 2];
  rc = pd_state_save_model(st, at("ft.pdmodel"));
  if (!ok(rc == PD_RESULT_OK, "pd_state_save_model writes the fine-tuned model"))
    printf("# %s", pd_state_error(st)->text);
  bool got = outputs(st, 0, y, N * 2);
  pd_state *st2 = load(at("ft.pdmodel"));
  ok(got && st2 && outputs(st2, 0, y2, N * 2) && memcmp(y, y2, sizeof y) == 0,
     "the saved model gives the fine-tuned outputs bit for bit");
  if (got) test_exec(y);
  int n = 0;
  const char *const *names = NULL;
  ok(st2 && !pd_state_outputs(st2, &n, &names) && n == 2 && !strcmp(names[0], "y") &&
         !strcmp(names[1], "out/sum.0"),
     "its outputs keep their names");
  size_t nb2;
  void *body2 = st2 ? weights(st2, "body", &nb2) : NULL;
  ok(body2 && nb2 == nb0 && memcmp(body0, body2, nb0) == 0, "the frozen weight is saved as it was");
  ok(same_file(at("m.preprocess"), at("ft.preprocess")) &&
         same_file(at("m.categories"), at("ft.categories")),
     "the side files are copied beside it");
  ok(access(at("ft.pdiparams"), F_OK) == 0, "with its parameters");
  free(body0);
  free(body2);
  free(head0);
  pd_state_free(st2);
  pd_state_free(st);

  /* mse on the second output, nothing frozen */
  st = load(at("m.pdmodel"));
  before = st ? mse(st) : NAN;
  const char *const mse_opts[] = {"loss", "\"mse\"", "target", "\"out/sum.0\"", "label",
                                  "\"t\", [-1, 1]", "reader", "host(\"d\")", "batch", "8",
                                  "epochs", "10", "optimizer", "adam(0.02)", NULL};
  rc = st ? pd_state_train(st, NULL, mse_opts) : -1;
  if (!ok(rc == PD_RESULT_OK, "mse on the output 'out/sum.0' with the label 't'") && st)
    printf("# %s", pd_state_error(st)->text);
  after = st ? mse(st) : NAN;
  ok(after < before * 0.5, "its loss falls: %g -> %g", before, after);
  pd_state_free(st);
}

/* The saved model path (NAME.pdmodel) and its parameters equal those of want, byte for byte. */
static bool same_model(const char *path, const char *want) {
  char p[600], w[600];
  snprintf(p, sizeof p, "%.*s.pdiparams", (int)(strlen(path) - 8), path);
  snprintf(w, sizeof w, "%.*s.pdiparams", (int)(strlen(want) - 8), want);
  return same_file(path, want) && same_file(p, w);
}

/* The step rows of a train log (CSV: a header, then a row per step and per epoch). */
static int log_steps(const char *path) {
  FILE *f = fopen(path, "r");
  char line[512];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "step,", 5) == 0) n++;
  if (f) fclose(f);
  return n;
}

/* A training call that fails part-way (the NaN guard, at a sample of the 12th batch, after 11
 * steps updated the parameters) changes nothing: the outputs are bit for bit those before it,
 * the model saved after it is the one saved before it, byte for byte, and the optimizer's
 * state (Adam's moments, the schedule's step) is as before too: the next call computes what it
 * computes in a state that never made the failed call. Both the first call (the fine-tuning's
 * runner is made by it) and a later one (it goes on from a call that succeeded). */
static void test_failed_call(void) {
  static float bad[N * D];
  memcpy(bad, xs, sizeof bad);
  bad[90 * D] = NAN;
  const char *names[2] = {"x", "label"};
  pd_tensor_info f[2] = {{.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, D}, .data = bad},
                         {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {N, 1}, .data = labels}};
  const char *const good_opts[] = {"reader", "host(\"d\")", "batch", "8", "epochs", "2",
                                   "optimizer", "adam(0.05)", "seed", "3", NULL};
  char log0[600], log1[600];
  snprintf(log0, sizeof log0, "\"%s\"", at("fail0.csv"));
  snprintf(log1, sizeof log1, "\"%s\"", at("fail1.csv"));
  const char *const bad0[] = {"reader", "host(\"bad\")", "batch", "8", "epochs", "2",
                              "optimizer", "adam(0.05)", "seed", "3", "shuffle", "false",
                              "log", log0, NULL};
  const char *const bad1[] = {"reader", "host(\"bad\")", "batch", "8", "epochs", "2",
                              "optimizer", "adam(0.05)", "seed", "3", "shuffle", "false",
                              "log", log1, NULL};
  pd_state *st = load(at("m.pdmodel")), *ctl = load(at("m.pdmodel"));
  if (!ok(st && ctl && !pd_state_set_check_nan_inf(st, 1) && !pd_state_set_check_nan_inf(ctl, 1) &&
              !pd_state_set_dataset(st, "bad", 2, names, f) &&
              !pd_state_save_model(ctl, at("orig.pdmodel")),
          "two states load the model, one with a data set holding a NaN")) {
    pd_state_free(st);
    pd_state_free(ctl);
    return;
  }
  float y0[N * 2], y1[N * 2], y[N * 2];

  /* the first call fails */
  bool got = outputs(st, 0, y0, N * 2);
  expect(pd_state_train(st, NULL, bad0), PD_RESULT_ERUNTIME, st, "has NaN",
         "a first training call fails at the NaN");
  ok(log_steps(at("fail0.csv")) == 11, "after 11 steps (%d logged)", log_steps(at("fail0.csv")));
  ok(got && outputs(st, 0, y, N * 2) && memcmp(y, y0, sizeof y) == 0,
     "the outputs after it are those before it, bit for bit");
  ok(pd_state_save_model(st, at("f0.pdmodel")) == PD_RESULT_OK &&
         same_model(at("f0.pdmodel"), at("orig.pdmodel")),
     "the model saved after it is the model as loaded, byte for byte");

  /* a later call fails */
  int rc = pd_state_train(st, NULL, good_opts);
  ok(rc == PD_RESULT_OK && pd_state_save_model(st, at("a.pdmodel")) == PD_RESULT_OK &&
         outputs(st, 0, y1, N * 2) && memcmp(y1, y0, sizeof y1) != 0,
     "then a call trains it");
  expect(pd_state_train(st, NULL, bad1), PD_RESULT_ERUNTIME, st, "has NaN",
         "a later call fails at the NaN");
  ok(log_steps(at("fail1.csv")) == 11, "after 11 steps (%d logged)", log_steps(at("fail1.csv")));
  ok(outputs(st, 0, y, N * 2) && memcmp(y, y1, sizeof y) == 0,
     "the outputs after it are those before it, bit for bit");
  ok(pd_state_save_model(st, at("b.pdmodel")) == PD_RESULT_OK &&
         same_model(at("b.pdmodel"), at("a.pdmodel")),
     "the model saved after it is the one saved before it, byte for byte");

  /* the optimizer's state too: the next call as in a state without the failed calls */
  float yc[N * 2];
  rc = pd_state_train(st, NULL, good_opts);
  int rcc = pd_state_train(ctl, NULL, good_opts);
  rcc = rcc ? rcc : pd_state_train(ctl, NULL, good_opts);
  ok(rc == PD_RESULT_OK && rcc == PD_RESULT_OK && outputs(st, 0, y, N * 2) &&
         outputs(ctl, 0, yc, N * 2) && memcmp(y, yc, sizeof y) == 0 &&
         memcmp(y, y1, sizeof y) != 0,
     "the next call computes what it computes after no failed call, bit for bit (Adam's "
     "moments and the schedule rolled back)");
  ok(pd_state_save_model(st, at("c.pdmodel")) == PD_RESULT_OK &&
         pd_state_save_model(ctl, at("d.pdmodel")) == PD_RESULT_OK &&
         same_model(at("c.pdmodel"), at("d.pdmodel")),
     "and saves the same model");
  pd_state_free(st);
  pd_state_free(ctl);
}

static void test_errors(void) {
  pd_state *st = load(at("m.pdmodel"));
  if (!st) return;
  struct {
    const char *key, *value;
    int rc;
    const char *needle, *what;
  } bad[] = {
      {"loss", "\"hinge\"", PD_RESULT_EINVAL, "option 'loss' is \"hinge\"", "an unknown loss"},
      {"target", "\"z\"", PD_RESULT_EINVAL, "its outputs are \"y\", \"out/sum.0\"",
       "an unknown target"},
      {"label", "\"label\", [-1, 3], int64", PD_RESULT_ECOMPILE,
       "'label' (\"label\", [-1, 3], int64): softmax_with_cross_entropy",
       "a label of the wrong shape"},
      {"freeze", "[\"nothing*\"]", PD_RESULT_ECOMPILE, "option 'freeze'",
       "a freeze that names no parameter"},
      {"epochs", "0", PD_RESULT_ECOMPILE, "option 'epochs'", "a bad value of a train option"},
      {"reader", "host(\"nope\")", PD_RESULT_ENOTFOUND, "option 'reader' (host(\"nope\")): host",
       "a reader of no data set"},
      {"colour", "1", PD_RESULT_EINVAL, "its options are loss, target, label, freeze",
       "an unknown option"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    bool reader = strcmp(bad[i].key, "reader") == 0;
    const char *o[] = {bad[i].key, bad[i].value, reader ? NULL : "reader", "host(\"d\")", NULL};
    int rc = pd_state_train(st, NULL, o);
    expect(rc, bad[i].rc, st, bad[i].needle, bad[i].what);
    ok(!strstr(pd_state_error(st)->text, "<fine-tuning>") && !pd_state_error(st)->file,
       "%s: no line of a script the caller never wrote", bad[i].what);
  }
  const char *o[] = {"reader", "host(\"d\")", NULL};
  expect(pd_state_train(st, "cost", o), PD_RESULT_EINVAL, st, "with the cost NULL",
         "a cost for a loaded model");
  expect(pd_state_save_model(st, at("no/such/dir/x.pdmodel")), PD_RESULT_EIO, st, "no/such",
         "a path that cannot be written");
  pd_state_free(st);
  pd_state *sc = NULL;
  if (!pd_state_new(&sc) && !pd_state_compile_string(sc, "s.pd", "x = data(\"x\", [-1, 1])\n"))
    expect(pd_state_save_model(sc, at("s.pdmodel")), PD_RESULT_EINVAL, sc,
           "needs a loaded model", "pd_state_save_model of a script");
  pd_state_free(sc);
}

int main(void) {
  plane_data(777, N, xs, labels);
  for (int i = 0; i < N; i++) targets2[i] = 2 * xs[i * D] - xs[i * D + 1];
  snprintf(dir, sizeof dir, "%s/pd_finetune.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    printf("Bail out! cannot make a temporary directory\n");
    return 1;
  }
  if (!ok(make_model(), "a script saves the model")) return tap_done();
  test_finetune();
  test_failed_call();
  test_errors();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (!getenv("KEEP") && system(cmd) != 0) printf("# could not remove %s\n", dir);
  return tap_done();
}
