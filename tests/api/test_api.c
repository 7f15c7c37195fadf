/* test_api.c -- tests of the embeddable library's C API (include/pdlang.h), linked with the
 * convenience library so that allocation failures can be injected (pd_alloc_fail_after): errors
 * with their message and location (compile, run time, files), feeds that do not fit, unknown
 * names, a NULL state, silence on stdout and stderr, a saved model run through the API against
 * the script that trained it, a create / compile / run / free loop that leaks nothing, and every
 * allocation of that loop failing in turn. Expected values are computed here by hand. */
#include "config.h"
#include "include/pdlang.h"

#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "tests/tap.h"

#if defined(__SANITIZE_ADDRESS__)
#define PD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PD_ASAN 1
#endif
#endif

static char tmpdir[256];

/* ---- Capturing what the library writes to the process's stdout and stderr ---- */

static int saved_fd[2] = {-1, -1};
static char capture_path[2][300];

static void capture_begin(void) {
  fflush(stdout);
  fflush(stderr);
  for (int i = 0; i < 2; i++) {
    snprintf(capture_path[i], sizeof capture_path[i], "%s/fd%d.txt", tmpdir, i + 1);
    int fd = open(capture_path[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    saved_fd[i] = dup(i + 1);
    dup2(fd, i + 1);
    close(fd);
  }
}

/* Restore stdout and stderr; returns the bytes written to them meanwhile. */
static long capture_end(void) {
  fflush(stdout);
  fflush(stderr);
  long total = 0;
  for (int i = 0; i < 2; i++) {
    dup2(saved_fd[i], i + 1);
    close(saved_fd[i]);
    struct stat sb;
    if (stat(capture_path[i], &sb) == 0) total += (long)sb.st_size;
  }
  return total;
}

static int has(const char *s, const char *part) { return s && strstr(s, part) != NULL; }

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* ---- A NULL state and calls out of order ---- */

static void test_null_state(void) {
  int64_t dims[1] = {1};
  float x = 0;
  int n;
  const char *const *names;
  pd_tensor_info info;
  const char *target = "y";
  ok(pd_state_new(NULL) == PD_RESULT_EINVAL, "pd_state_new(NULL) is EINVAL");
  ok(pd_state_set_output(NULL, stdout, stderr) == PD_RESULT_EINVAL, "set_output(NULL)");
  ok(pd_state_set_seed(NULL, 1) == PD_RESULT_EINVAL, "set_seed(NULL)");
  ok(pd_state_set_check_nan_inf(NULL, 1) == PD_RESULT_EINVAL, "set_check_nan_inf(NULL)");
  ok(pd_state_set_interrupt(NULL, NULL) == PD_RESULT_EINVAL, "set_interrupt(NULL)");
  ok(pd_state_set_stdlib_dir(NULL, "/") == PD_RESULT_EINVAL, "set_stdlib_dir(NULL)");
  ok(pd_state_compile_string(NULL, "a.pd", "x = 1\n") == PD_RESULT_EINVAL, "compile_string(NULL)");
  ok(pd_state_compile_file(NULL, "a.pd") == PD_RESULT_EINVAL, "compile_file(NULL)");
  ok(pd_state_load_model(NULL, "a.pdmodel") == PD_RESULT_EINVAL, "load_model(NULL)");
  ok(pd_state_inputs(NULL, &n, &names) == PD_RESULT_EINVAL, "inputs(NULL)");
  ok(pd_state_outputs(NULL, &n, &names) == PD_RESULT_EINVAL, "outputs(NULL)");
  ok(pd_state_describe(NULL, "x", &info) == PD_RESULT_EINVAL, "describe(NULL)");
  ok(pd_state_feed(NULL, "x", PD_DTYPE_FLOAT32, 1, dims, &x) == PD_RESULT_EINVAL, "feed(NULL)");
  ok(pd_state_run(NULL) == PD_RESULT_EINVAL, "run(NULL)");
  ok(pd_state_run_target(NULL, "y") == PD_RESULT_EINVAL, "run_target(NULL)");
  ok(pd_state_run_targets(NULL, 1, &target) == PD_RESULT_EINVAL, "run_targets(NULL)");
  ok(pd_state_fetch(NULL, "y", &info) == PD_RESULT_EINVAL, "fetch(NULL)");
  const pd_error_info *e = pd_state_error(NULL);
  ok(e && e->code == PD_RESULT_EINVAL && has(e->message, "NULL"), "pd_state_error(NULL) says so");
  pd_state_free(NULL);
  ok(1, "pd_state_free(NULL) is a no-op");
  is_str(pd_state_result_str(PD_RESULT_ESHAPE), "shape mismatch", "result_str");
  is_str(pd_state_result_str(999), "unknown result code", "result_str of an unknown code");
  is_str(pd_state_version(), PACKAGE_VERSION, "version");

  pd_state *st;
  if (pd_state_new(&st)) return;
  e = pd_state_error(st);
  ok(e->code == PD_RESULT_OK && e->message[0] == 0 && e->file == NULL && e->text[0] == 0,
     "a new state's error record is empty");
  ok(pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 1, dims, &x) == PD_RESULT_EINVAL &&
         has(pd_state_error(st)->message, "nothing compiled"),
     "feed before compiling: EINVAL, 'nothing compiled'");
  ok(pd_state_run(st) == PD_RESULT_EINVAL, "run before compiling");
  ok(pd_state_fetch(st, "y", &info) == PD_RESULT_EINVAL, "fetch before compiling");
  ok(pd_state_inputs(st, &n, &names) == PD_RESULT_EINVAL, "inputs before compiling");
  ok(pd_state_compile_string(st, "a.pd", NULL) == PD_RESULT_EINVAL, "compile_string(NULL text)");
  e = pd_state_error(st);
  ok(pd_state_set_seed(st, 3) == PD_RESULT_OK && e->code == PD_RESULT_OK && e->message[0] == 0 &&
         e->text[0] == 0 && e->file == NULL && e->line == 0,
     "a successful call clears the error record");
  pd_state_free(st);
}

/* ---- Compile errors ---- */

static void test_compile_errors(void) {
  pd_state *st;
  if (pd_state_new(&st)) return;
  int rc = pd_state_compile_string(st, "bad.pd", "# a comment\nx = (1 + )\n");
  const pd_error_info *e = pd_state_error(st);
  is_int(rc, PD_RESULT_ESYNTAX, "a syntax error is ESYNTAX");
  is_int(e->code, PD_RESULT_ESYNTAX, "the record has the code");
  is_str(e->file, "bad.pd", "the file");
  is_int(e->line, 2, "the line");
  is_int(e->col, 10, "the column");
  is_str(e->message, "unexpected ')', expecting an expression", "the message, no location");
  ok(has(e->text, "bad.pd:2:10: error: unexpected ')'") && has(e->text, "    2 | x = (1 + )\n") &&
         has(e->text, "      |          ^\n"),
     "the rendered text: location, source line, caret");

  rc = pd_state_compile_string(st, "names.pd",
                               "x = data(\"x\", [-1, 10])\ny = x + undefined_name\n"
                               "z = other + 1\n");
  e = pd_state_error(st);
  is_int(rc, PD_RESULT_ECOMPILE, "an undefined name is ECOMPILE");
  ok(e->file && strcmp(e->file, "names.pd") == 0 && e->line == 2 && e->col == 9,
     "at names.pd:2:9 (got %s:%d:%d)", e->file ? e->file : "(null)", e->line, e->col);
  is_str(e->message, "'undefined_name' is not defined", "the first error's message");
  ok(has(e->text, "names.pd:3:5: error: 'other' is not defined"), "the text has every error");

  rc = pd_state_compile_string(st, NULL, "x = (\n");
  ok(rc == PD_RESULT_ESYNTAX && pd_state_error(st)->file &&
         strcmp(pd_state_error(st)->file, "<string>") == 0,
     "a nameless string is <string> in locations");

  char missing[300];
  snprintf(missing, sizeof missing, "%s/no-such-file.pd", tmpdir);
  rc = pd_state_compile_file(st, missing);
  ok(rc == PD_RESULT_EIO && has(pd_state_error(st)->text, "no-such-file.pd"),
     "compile_file of a missing file: EIO naming it (%d: %s)", rc, pd_state_error(st)->text);

  char path[300];
  snprintf(path, sizeof path, "%s/shape.pd", tmpdir);
  write_text(path, "a = data(\"a\", [-1, 3])\nb = data(\"b\", [-1, 4])\nc = a + b\n");
  rc = pd_state_compile_file(st, path);
  e = pd_state_error(st);
  ok(rc == PD_RESULT_ECOMPILE && e->line == 3 && has(e->file, "shape.pd") && e->message[0],
     "a shape error in a file: at its line (%s)", e->message);
  int n;
  const char *const *names;
  ok(pd_state_inputs(st, &n, &names) == PD_RESULT_EINVAL,
     "a failed compile leaves no program behind");
  pd_state_free(st);
}

/* ---- Run-time errors ---- */

static void test_runtime_errors(void) {
  pd_state *st;
  if (pd_state_new(&st)) return;
  int rc = pd_state_compile_string(st, "label.pd",
                                   "logits = minibatch([[1, 2], [3, 4]])\n"
                                   "label = minibatch([[0], [5]], int64)\n"
                                   "cost = softmax_with_cross_entropy(logits, label)\n"
                                   "print(cost)\n");
  is_int(rc, PD_RESULT_OK, "a script that fails at run time compiles");
  rc = pd_state_run(st);
  const pd_error_info *e = pd_state_error(st);
  ok(rc != PD_RESULT_OK && rc == e->code, "running it fails (%d: %s)", rc,
     pd_state_result_str(rc));
  ok(e->file && strcmp(e->file, "label.pd") == 0 && e->line == 3 && e->col == 8,
     "at the op: label.pd:3:8 (got %s:%d:%d)", e->file ? e->file : "(null)", e->line, e->col);
  is_str(e->message, "softmax_with_cross_entropy: label 5 out of range [0, 2) in row 1",
         "the kernel's message");
  ok(has(e->text, "label.pd:3:8: error: softmax_with_cross_entropy") &&
         has(e->text, "    3 | cost = softmax_with_cross_entropy(logits, label)\n") &&
         has(e->text, "      |        ^\n"),
     "rendered with the source line and a caret");
  rc = pd_state_run_target(st, "cost");
  ok(rc == e->code && pd_state_error(st)->line == 3 && pd_state_error(st)->col == 8,
     "run_target fails the same way");

  rc = pd_state_compile_string(st, "assert.pd", "a = minibatch([[1, 2]])\n"
                                                "assert_close(a * 2, [[2, 5]])\n");
  rc = rc ? rc : pd_state_run(st);
  e = pd_state_error(st);
  ok(rc == PD_RESULT_ERUNTIME && e->line == 2 && e->col == 1,
     "a failing assert_close: ERUNTIME at the call (%d, %d:%d)", rc, e->line, e->col);
  pd_state_free(st);
}

/* ---- Feeds, targets, fetches on a script ---- */

static const char *affine_script =
    "x = data(\"x\", [-1, 3])\n"
    "w = minibatch([[1, 0], [0, 1], [1, 1]])\n"
    "y = x @ w + 0.5\n"
    "z = y * 2\n";

/* The kernels flush denormals to zero during a call (as `pdlang` does), and the caller's own
 * arithmetic keeps them after it: 1e-20 * 1e-20 = 1e-40, a denormal float. */
static void test_denormals(void) {
  pd_state *st;
  if (pd_state_new(&st)) return;
  volatile float tiny = 1e-20f;
  int rc = pd_state_compile_string(st, "tiny.pd", "a = var(1e-20)\nb = a * a\n");
  if (!rc) rc = pd_state_run_target(st, "b");
  pd_tensor_info info = {0};
  if (!rc) rc = pd_state_fetch(st, "b", &info);
  float b = -1;
  if (!rc && info.dtype == PD_DTYPE_FLOAT32 && info.nbytes == sizeof b) memcpy(&b, info.data, sizeof b);
#if defined(__x86_64__) || defined(__i386__)
  ok(rc == 0 && b == 0.0f, "a kernel's denormal result is flushed to zero (got %g)", (double)b);
#else
  ok(rc == 0 && b >= 0.0f, "the kernels compute 1e-20 * 1e-20 (%g)", (double)b);
#endif
  volatile float host = tiny * tiny;
  ok(host > 0.0f, "after the call the caller's own 1e-20f * 1e-20f is still %g", (double)host);
  pd_state_free(st);
}

static void test_feed_fetch(void) {
  pd_state *st;
  if (pd_state_new(&st)) return;
  int rc = pd_state_compile_string(st, "affine.pd", affine_script);
  is_int(rc, PD_RESULT_OK, "the affine script compiles");
  int n = -1;
  const char *const *names = NULL;
  rc = pd_state_inputs(st, &n, &names);
  ok(rc == 0 && n == 1 && strcmp(names[0], "x") == 0, "its one input is x");
  rc = pd_state_outputs(st, &n, &names);
  int found_z = 0;
  for (int i = 0; rc == 0 && i < n; i++) found_z += strcmp(names[i], "z") == 0;
  ok(rc == 0 && found_z == 1, "z is among its outputs");
  pd_tensor_info info;
  rc = pd_state_describe(st, "x", &info);
  ok(rc == 0 && info.dtype == PD_DTYPE_FLOAT32 && info.ndims == 2 && info.dims[0] == -1 &&
         info.dims[1] == 3 && info.data == NULL,
     "describe x: float32 [-1, 3]");
  ok(pd_state_describe(st, "nope", &info) == PD_RESULT_ENOTFOUND, "describe an unknown name");

  /* Not fed yet. */
  rc = pd_state_run_target(st, "z");
  ok(rc == PD_RESULT_EINVAL && has(pd_state_error(st)->message, "'x'") &&
         has(pd_state_error(st)->message, "not fed"),
     "run_target without the input: EINVAL naming x (%s)", pd_state_error(st)->message);

  /* Wrong feeds are errors, and leave nothing behind. */
  float bad[8] = {0};
  int64_t d24[2] = {2, 4}, d3[1] = {3}, d23[2] = {2, 3}, dneg[2] = {-1, 3};
  rc = pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d24, bad);
  is_int(rc, PD_RESULT_ESHAPE, "feeding [2, 4] for [-1, 3] is ESHAPE");
  is_str(pd_state_error(st)->message,
         "input 'x' is float32 [-1, 3] but the value fed is float32 [2, 4]",
         "the message shows both shapes");
  rc = pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 1, d3, bad);
  is_int(rc, PD_RESULT_ESHAPE, "feeding rank 1 for rank 2 is ESHAPE");
  rc = pd_state_feed(st, "x", PD_DTYPE_INT64, 2, d23, bad);
  ok(rc == PD_RESULT_ETYPE && has(pd_state_error(st)->message, "int64 [2, 3]"),
     "feeding int64 for float32 is ETYPE (%s)", pd_state_error(st)->message);
  rc = pd_state_feed(st, "x", 77, 2, d23, bad);
  is_int(rc, PD_RESULT_EINVAL, "an unknown dtype is EINVAL");
  rc = pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, dneg, bad);
  is_int(rc, PD_RESULT_EINVAL, "a negative dimension is EINVAL");
  rc = pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d23, NULL);
  is_int(rc, PD_RESULT_EINVAL, "NULL data is EINVAL");
  rc = pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 12, d23, bad);
  is_int(rc, PD_RESULT_EINVAL, "rank 12 is EINVAL");
  rc = pd_state_feed(st, "w", PD_DTYPE_FLOAT32, 2, d23, bad);
  ok(rc == PD_RESULT_ENOTFOUND && has(pd_state_error(st)->message, "its inputs are 'x'"),
     "feeding a name that is not an input: ENOTFOUND listing the inputs (%s)",
     pd_state_error(st)->message);
  rc = pd_state_run_target(st, "z");
  is_int(rc, PD_RESULT_EINVAL, "the bad feeds were not kept");

  /* A good feed. */
  float x[6] = {1, 2, 3, -1, 0, 4};
  rc = pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d23, x);
  is_int(rc, PD_RESULT_OK, "feeding float32 [2, 3]");
  x[0] = 100;  /* the feed was copied */
  const char *targets[2] = {"z", "y"};
  rc = pd_state_run_targets(st, 2, targets);
  is_int(rc, PD_RESULT_OK, "run_targets z, y (%s)", pd_state_error(st)->message);
  /* y = x @ [[1,0],[0,1],[1,1]] + 0.5: row 0 (1,2,3) -> (4.5, 5.5); row 1 (-1,0,4) -> (3.5, 4.5) */
  const float want_y[4] = {4.5f, 5.5f, 3.5f, 4.5f};
  pd_tensor_info y, z;
  rc = pd_state_fetch(st, "z", &z);
  ok(rc == 0 && z.dtype == PD_DTYPE_FLOAT32 && z.ndims == 2 && z.dims[0] == 2 &&
         z.dims[1] == 2 && z.nbytes == 16 && z.data,
     "fetch z: float32 [2, 2]");
  rc = pd_state_fetch(st, "y", &y);
  ok(rc == 0 && y.ndims == 2 && y.nbytes == 16, "fetch y: [2, 2]");
  int good = z.data && y.data;
  for (int i = 0; good && i < 4; i++)
    good = ((const float *)y.data)[i] == want_y[i] && ((const float *)z.data)[i] == 2 * want_y[i];
  ok(good, "y and z hold the values computed by hand");
  rc = pd_state_fetch(st, "nope", &info);
  ok(rc == PD_RESULT_ENOTFOUND && has(pd_state_error(st)->message, "'nope'"),
     "fetch of an unknown name: ENOTFOUND");
  rc = pd_state_fetch(st, "x", &info);
  is_int(rc, PD_RESULT_ENOTFOUND, "an input is not a result");
  rc = pd_state_run_target(st, "nope");
  is_int(rc, PD_RESULT_ENOTFOUND, "run_target of an unknown name: ENOTFOUND");
  rc = pd_state_fetch(st, "z", &info);
  is_int(rc, PD_RESULT_ENOTFOUND, "a failed run drops the results");

  /* Names the script defines stand for their vars; compile-time values are not tensors. */
  rc = pd_state_compile_string(st, "names.pd",
                               "x = data(\"x\", [-1, 3])\nlr = 0.5\n"
                               "def lin(v) {\n  w = param([3, 2], init = 1.0)\n"
                               "  return v @ w\n}\n"
                               "h = lin(x)\nout = h * lr\n");
  rc = rc ? rc : pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d23, x);
  const char *hz[2] = {"h", "out"};
  rc = rc ? rc : pd_state_run_targets(st, 2, hz);
  pd_tensor_info h, o;
  int rh = rc ? rc : pd_state_fetch(st, "h", &h);
  int ro = rh ? rh : pd_state_fetch(st, "out", &o);
  /* Every weight 1: each output is the row's sum (x[0] was changed to 100 above). */
  ok(rc == 0 && rh == 0 && ro == 0 && h.dims[0] == 2 && h.dims[1] == 2 &&
         ((const float *)h.data)[0] == 105 && ((const float *)h.data)[3] == 3 &&
         ((const float *)o.data)[0] == 52.5f,
     "run_targets by the script's names h and out (%s)", pd_state_error(st)->message);
  rc = pd_state_run_target(st, "lr");
  ok(rc == PD_RESULT_EINVAL && has(pd_state_error(st)->message, "compile-time value"),
     "a compile-time name is not a target (%s)", pd_state_error(st)->message);
  rc = pd_state_run_target(st, "h)\nprint(1");
  is_int(rc, PD_RESULT_ENOTFOUND, "a name that is not an identifier is not looked up in the script");
  rc = pd_state_compile_string(st, "affine.pd", affine_script);
  rc = rc ? rc : pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d23, x);
  x[0] = 1;
  rc = rc ? rc : pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d23, x);
  is_int(rc, PD_RESULT_OK, "compile the affine script again, feed again");

  /* Again with the same feed (the prepared program is reused; the feed was not changed). */
  rc = pd_state_run_target(st, "y");
  rc = rc ? rc : pd_state_fetch(st, "y", &y);
  ok(rc == 0 && ((const float *)y.data)[0] == 4.5f && ((const float *)y.data)[3] == 4.5f,
     "a second run gives the same values");
  /* A new batch size. */
  float x1[3] = {1, 1, 1};
  int64_t d13[2] = {1, 3};
  rc = pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d13, x1);
  rc = rc ? rc : pd_state_run_target(st, "z");
  rc = rc ? rc : pd_state_fetch(st, "z", &z);
  ok(rc == 0 && z.dims[0] == 1 && ((const float *)z.data)[0] == 5 &&
         ((const float *)z.data)[1] == 5,
     "feeding a batch of 1: z = [[5, 5]]");
  pd_state_free(st);
}

/* ---- Output goes where the host says, and nowhere by default ---- */

static const char *noisy_script =
    "import \"layers\"\n"
    "a = minibatch([[1.5, 2]])\n"
    "print(a * 2)\n"
    "print(\"hello\")\n"
    "x = data(\"features\", [-1, 2])\n"
    "label = data(\"label\", [-1, 1], int64)\n"
    "y = fc(x, 2)\n"
    "cost = mean(softmax_with_cross_entropy(y, label))\n"
    "train(cost, reader = csv(\"%s/points.csv\", label = \"label\"), batch = 8, epochs = 2,\n"
    "      optimizer = adam(0.05))\n"
    "eval(accuracy(y, label), reader = csv(\"%s/points.csv\", label = \"label\"))\n";

static void make_points(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/points.csv", tmpdir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "f1,f2,label\n");
  unsigned seed = 7;
  for (int i = 0; i < 64; i++) {
    seed = seed * 1103515245u + 12345u;
    double a = (double)(seed >> 16 & 0x7fff) / 32768.0 * 4 - 2;
    seed = seed * 1103515245u + 12345u;
    double b = (double)(seed >> 16 & 0x7fff) / 32768.0 * 4 - 2;
    if (a + b > -0.2 && a + b < 0.2) continue;
    fprintf(f, "%.4f,%.4f,%d\n", a, b, a + b > 0);
  }
  fclose(f);
}

static void test_silence(void) {
  char text[2048];
  snprintf(text, sizeof text, noisy_script, tmpdir, tmpdir);
  pd_state *st;
  if (pd_state_new(&st)) return;
  capture_begin();
  int rc1 = pd_state_compile_string(st, "noisy.pd", text);
  int rc2 = pd_state_run(st);
  int rc3 = pd_state_compile_string(st, "bad.pd", "x = (\n");
  int rc4 = pd_state_compile_string(st, "rt.pd", "a = minibatch([[1, 2]])\n"
                                                 "assert_close(a, [[1, 3]])\n");
  int rc5 = pd_state_run(st);
  long written = capture_end();
  ok(rc1 == 0 && rc2 == 0, "a script that prints, trains and evaluates runs (%d %d: %s)", rc1,
     rc2, pd_state_error(st)->text);
  ok(rc3 && rc4 == 0 && rc5, "and failing ones fail");
  is_int(written, 0, "nothing was written to stdout or stderr");

  /* With streams set, the output goes there. */
  char *out = NULL, *prog = NULL;
  size_t outlen = 0, proglen = 0;
  FILE *fo = open_memstream(&out, &outlen), *fp = open_memstream(&prog, &proglen);
  capture_begin();
  int rc = pd_state_set_output(st, fo, fp);
  rc = rc ? rc : pd_state_compile_string(st, "noisy.pd", text);
  rc = rc ? rc : pd_state_run(st);
  written = capture_end();
  fclose(fo);
  fclose(fp);
  is_int(rc, PD_RESULT_OK, "the same script with output streams");
  ok(has(out, "Tensor(shape=[1, 2], dtype=float32)") && has(out, "[[3, 4]]") &&
         has(out, "\"hello\"\n") && has(out, "eval: accuracy"),
     "print and eval wrote to the output stream");
  ok(has(prog, "epoch 2/2: loss"), "training reported progress to the progress stream");
  is_int(written, 0, "still nothing on stdout or stderr");
  free(out);
  free(prog);

  /* The host's interrupt flag stops an action. */
  static volatile sig_atomic_t stop;
  stop = 0;
  rc = pd_state_set_output(st, NULL, NULL);
  rc = rc ? rc : pd_state_set_interrupt(st, &stop);
  rc = rc ? rc : pd_state_compile_string(st, "noisy.pd", text);
  stop = 1;
  int rr = rc ? rc : pd_state_run(st);
  ok(rc == 0 && rr == PD_RESULT_EINTR, "a set interrupt flag stops the run: EINTR (%d, %d)", rc,
     rr);
  pd_state_free(st);
}

/* ---- A saved model, loaded and run through the API ---- */

static void test_model(void) {
  char text[2048], model[300], params[300];
  snprintf(model, sizeof model, "%s/points.pdmodel", tmpdir);
  snprintf(params, sizeof params, "%s/points.pdiparams", tmpdir);
  snprintf(text, sizeof text,
           "import \"layers\"\n"
           "x = data(\"features\", [-1, 2])\n"
           "label = data(\"label\", [-1, 1], int64)\n"
           "h = fc(x, 4, act = relu)\n"
           "y = fc(h, 2)\n"
           "cost = mean(softmax_with_cross_entropy(y, label))\n"
           "train(cost, reader = csv(\"%s/points.csv\", label = \"label\"), batch = 8, "
           "epochs = 3, optimizer = adam(0.05), seed = 5)\n"
           "save(\"%s\", y)\n",
           tmpdir, model);
  pd_state *script, *st;
  if (pd_state_new(&script)) return;
  if (pd_state_new(&st)) {
    pd_state_free(script);
    return;
  }
  int rc = pd_state_compile_string(script, "points.pd", text);
  rc = rc ? rc : pd_state_run(script);
  is_int(rc, PD_RESULT_OK, "a script trains and saves a model (%s)", pd_state_error(script)->text);

  rc = pd_state_load_model(st, model);
  is_int(rc, PD_RESULT_OK, "load_model (%s)", pd_state_error(st)->text);
  int n = 0, nout = 0;
  const char *const *in = NULL, *const *out = NULL;
  rc = pd_state_inputs(st, &n, &in);
  ok(rc == 0 && n == 1 && strcmp(in[0], "features") == 0, "the model's input is features");
  rc = pd_state_outputs(st, &nout, &out);
  ok(rc == 0 && nout == 1, "it has one output (%s)", nout ? out[0] : "none");
  rc = pd_state_run(st);
  ok(rc == PD_RESULT_EINVAL && has(pd_state_error(st)->message, "features") &&
         has(pd_state_error(st)->message, "not fed"),
     "running without the input: EINVAL naming it (%s)", pd_state_error(st)->message);
  float bad[4] = {0};
  int64_t d4[2] = {1, 4};
  rc = pd_state_feed(st, "features", PD_DTYPE_FLOAT32, 2, d4, bad);
  ok(rc == PD_RESULT_ESHAPE && has(pd_state_error(st)->message, "float32 [-1, 2]"),
     "a wrong shape for the model: ESHAPE (%s)", pd_state_error(st)->message);

  float pts[6] = {1, 1, -1, -1, 0.5f, 1};
  int64_t d32[2] = {3, 2};
  rc = pd_state_feed(st, "features", PD_DTYPE_FLOAT32, 2, d32, pts);
  rc = rc ? rc : pd_state_run(st);
  pd_tensor_info got, want;
  rc = rc ? rc : pd_state_fetch(st, nout ? out[0] : "", &got);
  ok(rc == 0 && got.ndims == 2 && got.dims[0] == 3 && got.dims[1] == 2,
     "the model computes [3, 2] logits (%s)", pd_state_error(st)->message);
  /* The same points through the script that trained it. */
  int rs = pd_state_feed(script, "features", PD_DTYPE_FLOAT32, 2, d32, pts);
  rs = rs ? rs : pd_state_run_target(script, "y");  /* the script's name for fc_1's output */
  rs = rs ? rs : pd_state_fetch(script, "y", &want);
  ok(rs == 0 && rc == 0 && want.nbytes == got.nbytes &&
         memcmp(want.data, got.data, got.nbytes) == 0,
     "the loaded model gives the trained script's y, bit for bit (%s)",
     pd_state_error(script)->message);
  rs = pd_state_describe(script, "y", &want);
  ok(rs == 0 && want.ndims == 2 && want.dims[0] == -1 && want.dims[1] == 2,
     "describe the script's y: [-1, 2]");
  const float *l = rc == 0 ? got.data : NULL;
  ok(l && l[1] > l[0] && l[2] > l[3] && l[5] > l[4], "and classifies the points right");
  rc = pd_state_run_target(st, out[0]);
  is_int(rc, PD_RESULT_OK, "run_target of the model's output");
  rc = pd_state_run_target(st, "features");
  is_int(rc, PD_RESULT_ENOTFOUND, "run_target of a name that is not an output");
  rc = pd_state_fetch(st, "fc_0.w_0", &got);
  ok(rc == 0 && got.ndims == 2 && got.dims[0] == 2 && got.dims[1] == 4,
     "a parameter can be fetched: fc_0.w_0 [2, 4]");
  rc = pd_state_fetch(script, "fc_0.w_0", &want);
  ok(rc == 0 && want.nbytes == got.nbytes && memcmp(want.data, got.data, got.nbytes) == 0,
     "the same as the trained script's");

  /* Damaged files. */
  char junk[300];
  snprintf(junk, sizeof junk, "%s/junk.pdmodel", tmpdir);
  write_text(junk, "this is not a ProgramDesc, but it is not empty either\n");
  rc = pd_state_load_model(st, junk);
  ok(rc == PD_RESULT_EFORMAT && has(pd_state_error(st)->file, "junk.pdmodel"),
     "a malformed .pdmodel: EFORMAT naming the file (%d: %s)", rc, pd_state_error(st)->text);
  ok(pd_state_run(st) == PD_RESULT_EINVAL, "and no model is left loaded");
  snprintf(junk, sizeof junk, "%s/none.pdmodel", tmpdir);
  rc = pd_state_load_model(st, junk);
  ok(rc == PD_RESULT_EIO, "a missing .pdmodel: EIO (%d: %s)", rc, pd_state_error(st)->message);
  write_text(params, "short");
  rc = pd_state_load_model(st, model);
  ok(rc == PD_RESULT_EFORMAT && has(pd_state_error(st)->file, "points.pdiparams"),
     "a damaged .pdiparams: EFORMAT naming it (%d: %s)", rc, pd_state_error(st)->text);
  pd_state_free(st);
  pd_state_free(script);
}

/* ---- Create / compile / run / free, over and over ---- */

/* One whole use of the API; returns the first failing result (0 when all went well). */
/* Batches of sequences through pd_state_feed_sequences: a script's for loop and sequence_pool,
 * and the same loop saved as a model and run from the library (values from the recurrence,
 * computed here). */
static void test_sequences(void) {
  static const char script_text[] =
      "x = data(\"x\", [-1, 1], lod_level = 1)\n"
      "s = sequence_pool(x, pooltype = \"SUM\")\n"
      "h = var(0)\n"
      "for (t in x) {\n"
      "    h = tanh(t * 0.5 + h * 0.25)\n"
      "}\n";
  float x[5] = {1, 2, 3, -1, 0.5f};
  int64_t dims[2] = {5, 1}, lengths[2] = {3, 2}, bad_len[2] = {3, 3};
  double want_h[2];
  for (int q = 0, at = 0; q < 2; q++) {  /* h = tanh(0.5 x_t + 0.25 h) along each sequence */
    double h = 0;
    for (int k = 0; k < lengths[q]; k++) h = tanh(0.5 * x[at + k] + 0.25 * h);
    want_h[q] = h;
    at += (int)lengths[q];
  }
  pd_state *st;
  if (pd_state_new(&st)) return;
  int rc = pd_state_compile_string(st, "seq.pd", script_text);
  is_int(rc, PD_RESULT_OK, "a script with a sequence input compiles (%s)", pd_state_error(st)->text);
  rc = pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, dims, x);
  ok(rc == PD_RESULT_EINVAL && has(pd_state_error(st)->message, "pd_state_feed_sequences"),
     "pd_state_feed refuses a sequence input, naming the call to use (%s)",
     pd_state_error(st)->message);
  rc = pd_state_feed_sequences(st, "x", PD_DTYPE_FLOAT32, 2, dims, x, 2, bad_len);
  ok(rc == PD_RESULT_ESHAPE && has(pd_state_error(st)->message, "sequence 1 has length 3"),
     "lengths that do not add up to the rows: ESHAPE (%s)", pd_state_error(st)->message);
  rc = pd_state_feed_sequences(st, "x", PD_DTYPE_FLOAT32, 2, dims, x, 2, lengths);
  is_int(rc, PD_RESULT_OK, "feeding two sequences of 3 and 2 rows");
  const char *const targets[2] = {"s", "h"};
  rc = pd_state_run_targets(st, 2, targets);
  is_int(rc, PD_RESULT_OK, "sequence_pool and the for loop run (%s)", pd_state_error(st)->text);
  pd_tensor_info info;
  rc = pd_state_fetch(st, "s", &info);
  ok(rc == 0 && info.ndims == 2 && info.dims[0] == 2 && ((const float *)info.data)[0] == 6.0f &&
         ((const float *)info.data)[1] == -0.5f,
     "the sums of each sequence: 6 and -0.5");
  rc = pd_state_fetch(st, "h", &info);
  ok(rc == 0 && info.dims[0] == 2 &&
         fabs(((const float *)info.data)[0] - want_h[0]) < 1e-6 &&
         fabs(((const float *)info.data)[1] - want_h[1]) < 1e-6,
     "the loop's last h of each sequence: %g and %g", want_h[0], want_h[1]);
  /* The loop saved as a model, run through the library. */
  char text[512], model[300];
  snprintf(model, sizeof model, "%s/seq.pdmodel", tmpdir);
  snprintf(text, sizeof text, "%ssave(\"%s\", h)\n", script_text, model);
  pd_state *m;
  if (pd_state_new(&m)) {
    pd_state_free(st);
    return;
  }
  rc = pd_state_compile_string(st, "seq.pd", text);
  rc = rc ? rc : pd_state_run(st);
  is_int(rc, PD_RESULT_OK, "the loop saved as a model (%s)", pd_state_error(st)->text);
  rc = pd_state_load_model(m, model);
  rc = rc ? rc : pd_state_feed_sequences(m, "x", PD_DTYPE_FLOAT32, 2, dims, x, 2, lengths);
  rc = rc ? rc : pd_state_run(m);
  is_int(rc, PD_RESULT_OK, "the model runs on fed sequences (%s)", pd_state_error(m)->text);
  int n = 0;
  const char *const *outs = NULL;
  rc = rc ? rc : pd_state_outputs(m, &n, &outs);
  rc = rc || n != 1 ? PD_RESULT_EINVAL : pd_state_fetch(m, outs[0], &info);
  ok(rc == 0 && info.dims[0] == 2 && fabs(((const float *)info.data)[0] - want_h[0]) < 1e-6 &&
         fabs(((const float *)info.data)[1] - want_h[1]) < 1e-6,
     "the model's output: the last h of each sequence");
  pd_state_free(m);
  pd_state_free(st);
}

static int one_cycle(void) {
  pd_state *st = NULL;
  int rc = pd_state_new(&st);
  float x[6] = {1, 2, 3, -1, 0, 4};
  int64_t d[2] = {2, 3};
  pd_tensor_info info;
  rc = rc ? rc : pd_state_compile_string(st, "affine.pd", affine_script);
  rc = rc ? rc : pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d, x);
  rc = rc ? rc : pd_state_run_target(st, "z");
  rc = rc ? rc : pd_state_fetch(st, "z", &info);
  rc = rc ? rc : pd_state_compile_string(st, "print.pd", "a = minibatch([[1, 2]])\nprint(a)\n");
  rc = rc ? rc : pd_state_run(st);
  /* An error path too. */
  int bad = pd_state_compile_string(st, "bad.pd", "x = (1 + )\n");
  if (!rc && bad != PD_RESULT_ESYNTAX) rc = bad ? bad : -1;
  if (st && pd_state_error(st)->message == NULL) rc = -2;
  pd_state_free(st);
  return rc;
}

/* Without a sanitizer, the heap in use (glibc's mallinfo2) must not grow over many cycles.
 * glibc's per-thread caches (tcache) count as in use and fill up slowly, so main() runs the
 * test with them turned off (GLIBC_TUNABLES); the numbers are then exact. With AddressSanitizer
 * its leak checker does the job at exit. */
static void test_leaks(void) {
  int failures = 0;
  for (int i = 0; i < 3; i++) failures += one_cycle() != 0;  /* warm up lazy initialisation */
#ifndef PD_ASAN
  struct mallinfo2 before = mallinfo2();
#endif
  for (int i = 0; i < 40; i++) failures += one_cycle() != 0;
  is_int(failures, 0, "43 create / compile / feed / run / fetch / free cycles succeed");
#ifndef PD_ASAN
  struct mallinfo2 after = mallinfo2();
  long grown = (long)after.uordblks - (long)before.uordblks;
  if (getenv("PD_TEST_API_NO_TCACHE"))
    is_int(grown, 0, "the heap in use did not grow over 40 cycles");
  else
    ok(1, "# SKIP heap growth: could not turn glibc's tcache off (%ld bytes)", grown);
#else
  ok(1, "# SKIP heap growth: AddressSanitizer's leak checker covers it at exit");
#endif
}

/* Every allocation of a cycle fails in turn: each failure comes back as an error status (the
 * leak checker of a sanitizer build sees that nothing is lost on the way). */
static void test_out_of_memory(void) {
  pd_alloc_fail_after(0);
  one_cycle();
  long total = pd_alloc_fail_after(0);  /* the allocations of one whole cycle */
  int crashed = 0, nomem = 0, stride = total > 4000 ? (int)(total / 4000) : 1;
  long k;
  for (k = 1; k <= total; k += stride) {
    pd_alloc_fail_after(k);
    int rc = one_cycle();
    pd_alloc_fail_after(0);
    if (rc == PD_RESULT_ENOMEM) nomem++;
    else if (rc != 0) crashed++;
  }
  ok(total > 0 && nomem > 0, "%ld allocations in a cycle; %d failures came back as ENOMEM",
     total, nomem);
  is_int(crashed, 0, "no injected failure turned into another error");
  is_int(one_cycle(), 0, "a cycle after all that succeeds");
}

int main(int argc, char **argv) {
#ifndef PD_ASAN
  /* Once: run again without glibc's tcache (see test_leaks). */
  if (argc > 0 && !getenv("PD_TEST_API_NO_TCACHE")) {
    setenv("PD_TEST_API_NO_TCACHE", "1", 1);
    setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
    execv("/proc/self/exe", argv);
    unsetenv("PD_TEST_API_NO_TCACHE");  /* exec failed: go on with the tcache */
  }
#else
  (void)argc;
  (void)argv;
#endif
  snprintf(tmpdir, sizeof tmpdir, "%s/pd_api.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("Bail out! cannot make a temporary directory\n");
    return 1;
  }
  make_points();
  test_null_state();
  test_compile_errors();
  test_sequences();
  test_runtime_errors();
  test_feed_fetch();
  test_denormals();
  test_silence();
  test_model();
  test_leaks();
  test_out_of_memory();
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
  return tap_done();
}
