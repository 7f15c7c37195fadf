/* test_api_train.c -- pd_state_train (include/pdlang.h): a program embedding pdlang trains a
 * compiled script's cost on its own data (pd_state_set_dataset) with train's options given as
 * name, value pairs, without a train(...) in the script: the cost falls; the trained weights
 * are, bit for bit, those of the same script with the same train(...) call run by
 * pd_state_run; a second call goes on from the first's parameters; every bad option is an
 * error (an unknown name listing train's options, a value the language refuses, a value of
 * more than one line, a missing cost, a loaded model), and every allocation failing in turn is
 * clean. */
#include "config.h"
#include "include/pdlang.h"
#include "tests/tap.h"
#include "tests/api/train_common.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

enum { N = 96, D = 4 };
static float xs[N * D];
static int64_t labels[N];

static void make_data(void) { plane_data(777, N, xs, labels); }

static const char *model =
    "import \"layers\"\n"
    "x = data(\"x\", [-1, 4])\n"
    "label = data(\"label\", [-1, 1], int64)\n"
    "y = fc(x, 2, name = \"out\")\n"
    "cost = mean(softmax_with_cross_entropy(y, label))\n";

static pd_state *state(const char *text) {
  pd_state *st = NULL;
  if (pd_state_new(&st)) return NULL;
  pd_state_set_output(st, NULL, NULL);
  const char *names[2] = {"x", "label"};
  pd_tensor_info f[2] = {{.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, D}, .data = xs},
                         {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {N, 1}, .data = labels}};
  int rc = pd_state_set_dataset(st, "d", 2, names, f);
  if (!rc) rc = pd_state_compile_string(st, "t.pd", text);
  if (rc) {
    printf("# %s", pd_state_error(st)->text);
    pd_state_free(st);
    return NULL;
  }
  return st;
}

/* The cost of the current weights on all the data. */
static double cost_now(pd_state *st) {
  int64_t xd[2] = {N, D}, ld[2] = {N, 1};
  pd_tensor_info t;
  if (pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, xd, xs) ||
      pd_state_feed(st, "label", PD_DTYPE_INT64, 2, ld, labels) ||
      pd_state_run_target(st, "cost") || pd_state_fetch(st, "cost", &t)) {
    printf("# cost: %s", pd_state_error(st)->text);
    return NAN;
  }
  return ((const float *)t.data)[0];
}

static const char *const opts[] = {"reader", "host(\"d\")", "batch", "8", "epochs", "15",
                                   "optimizer", "adam(0.05)", "seed", "3", NULL};

static void test_train(void) {
  pd_state *st = state(model), *ref = NULL;
  if (!ok(st != NULL, "a script without train(...) compiles")) return;
  double before = cost_now(st);
  int rc = pd_state_train(st, "cost", opts);
  if (rc) printf("# %s", pd_state_error(st)->text);
  ok(rc == PD_RESULT_OK, "pd_state_train(cost, reader = host(\"d\"), batch = 8, epochs = 15, "
     "optimizer = adam(0.05), seed = 3)");
  double after = cost_now(st);
  ok(after < before * 0.6, "the cost falls: %.4f -> %.4f", before, after);
  /* The same call in the script, run by pd_state_run. */
  char text[1024];
  snprintf(text, sizeof text, "%strain(cost, reader = host(\"d\"), batch = 8, epochs = 15, "
           "optimizer = adam(0.05), seed = 3)\n", model);
  ref = state(text);
  rc = ref ? pd_state_run(ref) : -1;
  if (rc > 0) printf("# %s", pd_state_error(ref)->text);
  ok(rc == PD_RESULT_OK, "the script's own train(...) runs");
  const char *params[2] = {"out", "fc_0.b_0"};  /* fc(..., name = "out")'s weight, bias */
  for (int i = 0; i < 2; i++) {
    size_t na = 0, nb = 0;
    void *a = weights(st, params[i], &na), *b = ref ? weights(ref, params[i], &nb) : NULL;
    ok(a && b && na == nb && na > 0 && memcmp(a, b, na) == 0,
       "%s equals the script path's, bit for bit (%zu bytes)", params[i], na);
    free(a);
    free(b);
  }
  /* A second call goes on from the trained parameters (and the optimizer's state). */
  const char *more[] = {"reader", "host(\"d\")", "epochs", "5", "optimizer", "adam(0.05)", NULL};
  rc = pd_state_train(st, "cost", more);
  double again = cost_now(st);
  ok(rc == PD_RESULT_OK && again <= after + 1e-6, "a second call goes on: %.4f -> %.4f", after,
     again);
  /* The script is as it was: pd_state_run has no action to run, the outputs the same. */
  ok(pd_state_run(st) == PD_RESULT_OK, "pd_state_run afterwards runs the script's (no) actions");
  int n;
  const char *const *names;
  ok(pd_state_inputs(st, &n, &names) == PD_RESULT_OK && n == 2, "its inputs are x and label");
  pd_state_free(st);
  pd_state_free(ref);
}

static void test_errors(void) {
  pd_state *st = state(model);
  if (!st) return;
  const char *unknown[] = {"reader", "host(\"d\")", "epoch", "3", NULL};
  expect(pd_state_train(st, "cost", unknown), PD_RESULT_EINVAL, st,
         "train has no option 'epoch'; its options are reader, batch, epochs,",
         "an unknown option: EINVAL listing train's options");
  const char *bad[] = {"reader", "host(\"d\")", "batch", "0", NULL};
  expect(pd_state_train(st, "cost", bad), PD_RESULT_ECOMPILE, st,
         "error: train: 'batch' must be a positive integer", "batch = 0: the language's error");
  const char *kind[] = {"reader", "host(\"d\")", "shuffle", "1", NULL};
  expect(pd_state_train(st, "cost", kind), PD_RESULT_ECOMPILE, st,
         "train: 'shuffle' must be true or false, not an integer", "shuffle = 1: refused");
  const char *two[] = {"reader", "host(\"d\")", "epochs", "2\nprint(x)", NULL};
  expect(pd_state_train(st, "cost", two), PD_RESULT_EINVAL, st, "without a line break",
         "a value of two lines: refused");
  const char *more[] = {"reader", "host(\"d\")), print(1", NULL};
  int rc = pd_state_train(st, "cost", more);
  ok(rc != PD_RESULT_OK, "a value that closes the call: refused (%d)", rc);
  const char *noval[] = {"reader", NULL};
  expect(pd_state_train(st, "cost", noval), PD_RESULT_EINVAL, st,
         "option 'reader' needs a value", "a name without a value");
  const char *none[] = {NULL};
  expect(pd_state_train(st, "cost", none), PD_RESULT_ECOMPILE, st,
         "train needs a reader", "no reader: the language's error");
  const char *other[] = {"reader", "host(\"e\")", NULL};
  expect(pd_state_train(st, "cost", other), PD_RESULT_ENOTFOUND, st,
         "host: no data set named 'e'", "an unknown data set: at the reader");
  expect(pd_state_train(st, "cost + 1", opts), PD_RESULT_EINVAL, st,
         "the cost must be the name of a value the script defines",
         "a cost that is not a name: refused");
  expect(pd_state_train(st, "nocost", opts), PD_RESULT_ECOMPILE, st, "nocost",
         "an unknown cost: the language's error");
  expect(pd_state_train(st, "y", opts), PD_RESULT_ECOMPILE, st,
         "train needs a floating-point cost with one element", "a cost of many elements");
  ok(pd_state_train(NULL, "cost", opts) == PD_RESULT_EINVAL, "a NULL state: EINVAL");
  pd_state_free(st);
  pd_state_new(&st);
  expect(pd_state_train(st, "cost", opts), PD_RESULT_EINVAL, st,
         "pd_state_train needs a compiled script", "no script: EINVAL");
  pd_state_free(st);
}

/* One state throughout: a call that fails for memory leaves it as it was, ready for the next. */
static void test_alloc(void) {
  bool all = true, finished = false;
  const char *quick[] = {"reader", "host(\"d\")", "batch", "96", "epochs", "1", NULL};
  pd_state *st = state(model);
  long k = 1;
  for (; st && k < 20000 && !finished; k++) {
    pd_alloc_fail_after(k);
    int rc = pd_state_train(st, "cost", quick);
    pd_alloc_fail_after(0);
    if (rc == PD_RESULT_OK) finished = true;
    else if (rc != PD_RESULT_ENOMEM) {
      if (all) printf("# k = %ld: %d %s", k, rc, pd_state_error(st)->text);
      all = false;
    }
  }
  ok(all && finished, "every allocation failing in turn (%ld): ENOMEM, then it succeeds", k - 1);
  ok(st && pd_state_train(st, "cost", quick) == PD_RESULT_OK && isfinite(cost_now(st)),
     "the state trains and computes afterwards");
  pd_state_free(st);
}

int main(void) {
  make_data();
  test_train();
  test_errors();
  test_alloc();
  return tap_done();
}
