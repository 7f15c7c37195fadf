/* test_alloc_sweep.c -- every allocation failing in turn (issue 44), every k from the first to
 * the last, through the C library, of the targets below. Each run must come back with a status
 * (ENOMEM, or OK when the failure was absorbed, and then with the clean run's results bit for
 * bit); nothing may crash or leak (a sanitizer build checks the heap on every path). The
 * targets:
 *   train       a script that trains from a host data set, evaluates, saves its parameters and
 *               loads them back, and saves an inference model;
 *   checkpoint  a script that trains one epoch with a checkpoint, resumes it for a second,
 *               saves and loads its parameters, and saves a model;
 *   images      a script that trains on a folder of PNG images (images(...)) and saves the
 *               model with its NAME.preprocess, then trains on a CSV file with a categorical
 *               feature and label, evaluates, and saves that model with its NAME.categories;
 *   paddle      a model PaddlePaddle saved (tests/interop/cnn_bn: convolution and batch norm,
 *               which the load-time passes fold), loaded, fed and run;
 *   saved       the images model that `images` saved, loaded (with its .preprocess), fed two PNG
 *               files through pd_state_feed_images, and run;
 *   finetune    the model that `train` saved, loaded, saved (pd_state_save_model), fine-tuned
 *               (pd_state_train of a loaded model), saved, fine-tuned again and run; after a
 *               training call fails, the model saved is the one saved before the call, byte
 *               for byte (a failed call changes nothing).
 * Usage: test_alloc_sweep [TARGET | PATH/TARGET.sweep]... (none: train and saved_train, the
 * small sweep `make check` runs; `make check-alloc` runs every target, one tests/api/alloc/
 * TARGET.sweep each). A sampled sweep had missed two NULL dereferences here: train's and eval's
 * feeder recorded its field count before allocating the fields (the release then walked a NULL
 * array), and a compile-time string whose copy failed still came out as a string with a NULL
 * text, which save's and load's path check read. */
#include "config.h"
#include "include/pdlang.h"
#include "tests/tap.h"
#include "tests/vm/reader/image_write.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"

enum { N = 16, D = 3 };
static float xs[N * D];
static int64_t labels[N];
static char tmpdir[256];

static const char *path(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

/* The results of a run: a hash of the fetched output's bytes (0: none fetched). */
static uint64_t hash(const void *data, size_t n, uint64_t h) {
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* The files[] (NULL-terminated; NULL: none) hashed into h, each with whether it exists (read
 * with stdio: no allocation of the sweep's). */
static uint64_t hash_files(const char *const *files, uint64_t h) {
  for (int i = 0; files && files[i]; i++) {
    FILE *fp = fopen(path(files[i]), "rb");
    unsigned char buf[4096];
    size_t n;
    h = hash(&(char){fp != NULL}, 1, h);
    while (fp && (n = fread(buf, 1, sizeof buf, fp)) > 0) h = hash(buf, n, h);
    if (fp) fclose(fp);
  }
  return h;
}

/* A fresh state, silent, with the host data set "d" (x, label). */
static int new_state(pd_state **st) {
  int rc = pd_state_new(st);
  if (!rc) pd_state_set_output(*st, NULL, NULL);
  const char *names[2] = {"x", "label"};
  pd_tensor_info f[2] = {{.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, D}, .data = xs},
                         {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {N, 1}, .data = labels}};
  return rc ? rc : pd_state_set_dataset(*st, "d", 2, names, f);
}

/* A script through a fresh state (with the host data set "d"), its files removed first so that
 * each run starts where the clean one did. */
static int run_script(const char *script, const char *const *files, uint64_t *out) {
  for (int i = 0; files && files[i]; i++) remove(path(files[i]));
  pd_state *st = NULL;
  int rc = new_state(&st);
  rc = rc ? rc : pd_state_compile_string(st, "sweep.pd", script);
  rc = rc ? rc : pd_state_run(st);
  pd_state_free(st);
  /* What the script wrote is its result. */
  *out = rc ? 0 : hash_files(files, 14695981039346656037ull);
  return rc;
}

/* ---- The targets ---- */

static char train_script[2048], ckpt_script[2048], images_script[4096];
static const char *const train_files[] = {"p", "m.pdmodel", "m.pdiparams", NULL};
static const char *const ckpt_files[] = {"fit.ckpt", "c.params", "c.pdmodel", "c.pdiparams",
                                         NULL};
static const char *const images_files[] = {"img.pdmodel", "img.pdiparams", "img.preprocess",
                                           "tab.pdmodel", "tab.pdiparams", "tab.categories",
                                           NULL};

static int train(uint64_t *out) { return run_script(train_script, train_files, out); }
static int checkpoint(uint64_t *out) { return run_script(ckpt_script, ckpt_files, out); }
static int images(uint64_t *out) { return run_script(images_script, images_files, out); }

/* A saved model, loaded, fed (by feed) and run; its first output is the result. */
static int run_model(const char *model, int (*feed)(pd_state *), uint64_t *out) {
  pd_state *st = NULL;
  int rc = pd_state_new(&st);
  pd_tensor_info o;
  int nout = 0;
  const char *const *outs = NULL;
  rc = rc ? rc : pd_state_load_model(st, model);
  rc = rc ? rc : feed(st);
  rc = rc ? rc : pd_state_run(st);
  rc = rc ? rc : pd_state_outputs(st, &nout, &outs);
  rc = rc ? rc : nout >= 1 ? pd_state_fetch(st, outs[0], &o) : -1;
  *out = rc ? 0 : hash(o.data, o.nbytes, 14695981039346656037ull);
  pd_state_free(st);
  return rc;
}

static int feed_x(pd_state *st) {
  int64_t d[2] = {N, D};
  return pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d, xs);
}

/* The model's one input described, its batch made 2, filled with a ramp. */
static int feed_described(pd_state *st) {
  int n = 0;
  const char *const *names = NULL;
  pd_tensor_info info;
  int rc = pd_state_inputs(st, &n, &names);
  rc = rc ? rc : n == 1 ? pd_state_describe(st, names[0], &info) : -1;
  if (rc) return rc;
  int64_t count = 1;
  for (int i = 0; i < info.ndims; i++) {
    if (info.dims[i] < 0) info.dims[i] = 2;
    count *= info.dims[i];
  }
  static float v[4096];
  if (count > 4096 || info.dtype != PD_DTYPE_FLOAT32) return -1;
  for (int64_t i = 0; i < count; i++) v[i] = (float)((i * 13) % 17) / 17.0f - 0.5f;
  return pd_state_feed(st, names[0], PD_DTYPE_FLOAT32, info.ndims, info.dims, v);
}

static int feed_pngs(pd_state *st) {
  char a[512], b[512];
  snprintf(a, sizeof a, "%s", path("two/0.png"));
  snprintf(b, sizeof b, "%s", path("two/1.png"));
  const char *two[2] = {a, b};
  return pd_state_feed_images(st, "images", 2, two);
}

/* pd_state_train of the loaded model, which when it fails must change nothing: then, with
 * allocations let succeed again, the model saved has the bytes of the files `before` (saved
 * just before the call); else a status that is neither ENOMEM nor OK, which the sweep
 * reports. */
static int train_or_nothing(pd_state *st, const char *const *opts, const char *const *before) {
  static const char *const undone[] = {"undone.pdmodel", "undone.pdiparams", NULL};
  int rc = pd_state_train(st, NULL, opts);
  if (rc == PD_RESULT_OK) return rc;
  pd_alloc_fail_after(0);
  if (pd_state_save_model(st, path(undone[0])) == PD_RESULT_OK &&
      hash_files(undone, 1) == hash_files(before, 1))
    return rc;
  printf("# finetune: a failed pd_state_train (%d: %s) changed the model\n", rc,
         pd_state_error(st)->message);
  return PD_RESULT_ERUNTIME;
}

/* The saved model of train, loaded, saved (pd_state_save_model), fine-tuned on the host data
 * set (pd_state_train), saved, fine-tuned again and run: its output and the files saved after
 * the first call are the result. */
static int finetune(uint64_t *out) {
  static const char *const files[] = {"ft.pdmodel", "ft.pdiparams", NULL};
  static const char *const files0[] = {"ft0.pdmodel", "ft0.pdiparams", NULL};
  static const char *const opts[] = {"reader", "host(\"d\")", "batch", "8", "epochs", "1",
                                     "optimizer", "adam(0.1)", "seed", "1", NULL};
  for (int i = 0; files[i]; i++) remove(path(files[i]));
  for (int i = 0; files0[i]; i++) remove(path(files0[i]));
  pd_state *st = NULL;
  pd_tensor_info o;
  int rc = new_state(&st);
  rc = rc ? rc : pd_state_load_model(st, path("m.pdmodel"));
  rc = rc ? rc : pd_state_save_model(st, path(files0[0]));
  rc = rc ? rc : train_or_nothing(st, opts, files0);  /* the first call */
  rc = rc ? rc : pd_state_save_model(st, path(files[0]));
  rc = rc ? rc : train_or_nothing(st, opts, files);   /* a later one, with Adam's state */
  rc = rc ? rc : feed_x(st);
  rc = rc ? rc : pd_state_run(st);
  rc = rc ? rc : pd_state_fetch(st, "y", &o);
  uint64_t h = rc ? 0 : hash(o.data, o.nbytes, 14695981039346656037ull);
  pd_state_free(st);
  *out = rc ? 0 : hash_files(files, h);
  return rc;
}

static char train_model[512], paddle_model[512], images_model[512];
static int saved_train(uint64_t *out) { return run_model(train_model, feed_x, out); }
static int paddle(uint64_t *out) { return run_model(paddle_model, feed_described, out); }
static int saved(uint64_t *out) { return run_model(images_model, feed_pngs, out); }

/* ---- The sweep ---- */

static void sweep(const char *what, int (*run)(uint64_t *)) {
  uint64_t want = 0, got = 0;
  pd_alloc_fail_after(0);
  int clean = run(&want);
  long total = pd_alloc_fail_after(0);
  if (!ok(clean == PD_RESULT_OK, "%s runs (%ld allocations)", what, total)) return;
  long nomem = 0, passed = 0, other = 0, wrong = 0;
  for (long k = 1; k <= total; k++) {
    pd_alloc_fail_after(k);
    int rc = run(&got);
    pd_alloc_fail_after(0);
    if (rc == PD_RESULT_ENOMEM) nomem++;
    else if (rc == PD_RESULT_OK) passed++, wrong += got != want;
    else other++;
    if ((rc != PD_RESULT_ENOMEM && rc != PD_RESULT_OK) || (rc == PD_RESULT_OK && got != want))
      printf("# %s: allocation %ld failing: status %d%s\n", what, k, rc,
             rc == PD_RESULT_OK ? ", results that differ from the clean run's" : "");
  }
  ok(nomem > 0 && other == 0 && wrong == 0,
     "%s: each of %ld allocations failing in turn: %ld ENOMEM, %ld absorbed (%ld of them with "
     "other results), %ld other", what, total, nomem, passed, wrong, other);
  ok(run(&got) == PD_RESULT_OK && got == want, "%s runs again afterwards, to the same results",
     what);
}

static int png(const char *name, int seed) {
#ifdef PD_HAVE_PNG
  unsigned char px[5 * 4 * 3];
  for (int i = 0; i < (int)sizeof px; i++) px[i] = (unsigned char)((i * 37 + seed * 91) % 256);
  return write_png(path(name), 5, 4, PNG_COLOR_TYPE_RGB, 8, px, NULL, 0, NULL, 0);
#else
  (void)name, (void)seed;
  return -1;
#endif
}

/* The files the targets read: PNG folders and a CSV file with text columns. */
static bool make_files(void) {
  for (int i = 0; i < N * D; i++) xs[i] = (float)((i * 7 % 11) - 5) / 5.0f;
  for (int i = 0; i < N; i++) labels[i] = xs[i * D] > 0;
  static const char *const dirs[] = {"train", "train/a", "train/b", "two"};
  for (size_t i = 0; i < PD_ARRAY_LEN(dirs); i++) mkdir(path(dirs[i]), 0755);
  bool pngs = !png("train/a/0.png", 1) && !png("train/a/1.png", 2) &&
              !png("train/b/0.png", 3) && !png("train/b/1.png", 4) && !png("two/0.png", 5) &&
              !png("two/1.png", 6);
  FILE *f = fopen(path("t.csv"), "w");
  if (!f) return false;
  fputs("size,colour,kind\n", f);
  static const char *const colours[] = {"red", "green", "blue"};
  for (int i = 0; i < 8; i++)
    fprintf(f, "%g,%s,%s\n", (double)(i % 5) / 4, colours[i % 3], i % 2 ? "cat" : "dog");
  fclose(f);
  return pngs;
}

static void make_scripts(void) {
  snprintf(train_model, sizeof train_model, "%s", path("m.pdmodel"));
  snprintf(images_model, sizeof images_model, "%s", path("img.pdmodel"));
  const char *src = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
  snprintf(paddle_model, sizeof paddle_model, "%s/tests/interop/cnn_bn/model.pdmodel", src);
  const char *net = "x = data(\"x\", [-1, 3])\n"
                    "label = data(\"label\", [-1, 1], int64)\n"
                    "w = param(\"w\", [3, 2])\n"
                    "y = x @ w\n"
                    "cost = mean(softmax_with_cross_entropy(y, label))\n";
  snprintf(train_script, sizeof train_script,
           "%s"
           "train(cost, reader = host(\"d\"), batch = 8, epochs = 1, optimizer = sgd(0.1), "
           "seed = 1)\n"
           "eval(cost, reader = host(\"d\"), batch = 8)\n"
           "save(\"%s\")\n"
           "load(\"%s\")\n"
           "save(\"%s\", y)\n",
           net, path("p"), path("p"), path("m.pdmodel"));
  snprintf(ckpt_script, sizeof ckpt_script,
           "%s"
           "train(cost, reader = host(\"d\"), batch = 8, epochs = 1, optimizer = adam(0.1), "
           "seed = 1, checkpoint = \"%s\")\n"
           "train(cost, reader = host(\"d\"), batch = 8, epochs = 2, optimizer = adam(0.1), "
           "seed = 1, checkpoint = \"%s\")\n"
           "save(\"%s\")\n"
           "load(\"%s\")\n"
           "save(\"%s\", y)\n",
           net, path("fit.ckpt"), path("fit.ckpt"), path("c.params"), path("c.params"),
           path("c.pdmodel"));
  snprintf(images_script, sizeof images_script,
           "x = data(\"images\", [-1, 3, 4, 5])\n"
           "label = data(\"label\", [-1, 1], int64)\n"
           "w = param(\"w\", [60, 2])\n"
           "y = reshape(x, [-1, 60]) @ w\n"
           "cost = mean(softmax_with_cross_entropy(y, label))\n"
           "train(cost, reader = images(\"%s\", shape = [3, 4, 5], mean = [0.5, 0.4, 0.3], "
           "std = 0.2, crop_padding = 1, flip = true), batch = 2, epochs = 1, "
           "optimizer = sgd(0.1), seed = 2)\n"
           "save(\"%s\", y)\n"
           "f = data(\"features\", [-1, 4])\n"
           "kind = data(\"kind\", [-1, 1], int64)\n"
           "v = param(\"v\", [4, 2])\n"
           "z = f @ v\n"
           "loss = mean(softmax_with_cross_entropy(z, kind))\n"
           "r = csv(\"%s\", label = \"kind\", categorical = [\"colour\", \"kind\"])\n"
           "train(loss, reader = r, batch = 4, epochs = 1, optimizer = sgd(0.1), seed = 3)\n"
           "eval(accuracy(z, kind), reader = r, batch = 4)\n"
           "save(\"%s\", z)\n",
           path("train"), path("img.pdmodel"), path("t.csv"), path("tab.pdmodel"));
}

static const struct {
  const char *name;
  int (*run)(uint64_t *);
  const char *what;
  bool needs_png;
} targets[] = {
    {"train", train, "train, eval, save, load", false},
    {"saved_train", saved_train, "train's saved model", false},
    {"checkpoint", checkpoint, "checkpoint, resume, save, load", false},
    {"images", images, "images and categorical CSV: train, eval, save", true},
    {"paddle", paddle, "PaddlePaddle's cnn_bn model", false},
    {"saved", saved, "the saved images model fed PNG files", true},
    {"finetune", finetune, "train's saved model fine-tuned twice (a failed call changes "
     "nothing), saved and run", false},
};

/* A target's name from an argument: NAME, or PATH/NAME.sweep. Returns its index, or -1. */
static int target_of(const char *arg) {
  const char *base = strrchr(arg, '/');
  base = base ? base + 1 : arg;
  size_t n = strcspn(base, ".");
  for (int i = 0; i < (int)PD_ARRAY_LEN(targets); i++)
    if (strlen(targets[i].name) == n && !strncmp(base, targets[i].name, n)) return i;
  return -1;
}

int main(int argc, char **argv) {
  snprintf(tmpdir, sizeof tmpdir, "%s/pd_sweep.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("Bail out! cannot make a temporary directory\n");
    return 1;
  }
  bool pngs = make_files();
  make_scripts();
  /* The targets asked for, with the runs whose files they read before them. */
  bool want[PD_ARRAY_LEN(targets)] = {false};
  if (argc < 2) want[0] = want[1] = true;
  for (int i = 1; i < argc; i++) {
    int t = target_of(argv[i]);
    if (t < 0) {
      printf("Bail out! no sweep target '%s'\n", argv[i]);
      return 1;
    }
    want[t] = true;
  }
  uint64_t ignored;
  if ((want[1] || want[6]) && !want[0] && train(&ignored) != PD_RESULT_OK)
    printf("# train did not run\n");
  if (want[5] && !want[3] && pngs && images(&ignored) != PD_RESULT_OK)
    printf("# images did not run\n");
  for (size_t i = 0; i < PD_ARRAY_LEN(targets); i++) {
    if (!want[i]) continue;
    if (targets[i].needs_png && !pngs) {
      char why[200];
      snprintf(why, sizeof why, "%s: built without libpng", targets[i].what);
      tap_skip(why);
      continue;
    }
    sweep(targets[i].what, targets[i].run);
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
  return tap_done();
}
