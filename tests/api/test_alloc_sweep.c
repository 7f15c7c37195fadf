/* test_alloc_sweep.c -- every allocation failing in turn (issue 44), every k from the first to
 * the last, through the C library: a script that trains from a host data set, evaluates, saves
 * its parameters and an inference model and loads them back, then the saved model run from its
 * file. Each run must come back with a status (ENOMEM, or OK when the failure was absorbed);
 * nothing may crash. A sampled sweep had missed two NULL dereferences here: train's and eval's
 * feeder recorded its field count before allocating the fields (the release then walked a
 * NULL array), and a compile-time string whose copy failed still came out as a string with a
 * NULL text, which save's and load's path check read. A sanitizer build checks the heap on
 * every path. */
#include "config.h"
#include "include/pdlang.h"
#include "tests/tap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

enum { N = 16, D = 3 };
static float xs[N * D];
static int64_t labels[N];
static char tmpdir[256], script[2048], model[512];

static void make_data(void) {
  for (int i = 0; i < N * D; i++) xs[i] = (float)((i * 7 % 11) - 5) / 5.0f;
  for (int i = 0; i < N; i++) labels[i] = xs[i * D] > 0;
}

/* Train, eval, save, load: every action of the runner that takes a reader or a path. */
static int cycle(void) {
  pd_state *st = NULL;
  int rc = pd_state_new(&st);
  if (!rc) pd_state_set_output(st, NULL, NULL);
  const char *names[2] = {"x", "label"};
  pd_tensor_info f[2] = {{.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, D}, .data = xs},
                         {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {N, 1}, .data = labels}};
  rc = rc ? rc : pd_state_set_dataset(st, "d", 2, names, f);
  rc = rc ? rc : pd_state_compile_string(st, "sweep.pd", script);
  rc = rc ? rc : pd_state_run(st);
  pd_state_free(st);
  return rc;
}

/* The saved inference model, loaded and run. */
static int cycle_model(void) {
  pd_state *st = NULL;
  int rc = pd_state_new(&st);
  int64_t d[2] = {N, D};
  pd_tensor_info out;
  int nout = 0;
  const char *const *outs = NULL;
  rc = rc ? rc : pd_state_load_model(st, model);
  rc = rc ? rc : pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, d, xs);
  rc = rc ? rc : pd_state_run(st);
  rc = rc ? rc : pd_state_outputs(st, &nout, &outs);
  rc = rc ? rc : nout == 1 ? pd_state_fetch(st, outs[0], &out) : -1;
  pd_state_free(st);
  return rc;
}

static void sweep(const char *what, int (*run)(void)) {
  pd_alloc_fail_after(0);
  int clean = run();
  long total = pd_alloc_fail_after(0);
  if (!ok(clean == PD_RESULT_OK, "%s runs (%ld allocations)", what, total)) return;
  long nomem = 0, passed = 0, other = 0;
  for (long k = 1; k <= total; k++) {
    pd_alloc_fail_after(k);
    int rc = run();
    pd_alloc_fail_after(0);
    if (rc == PD_RESULT_ENOMEM) nomem++;
    else if (rc == PD_RESULT_OK) passed++;
    else other++;
  }
  ok(nomem > 0 && other == 0,
     "%s: each of %ld allocations failing in turn: %ld ENOMEM, %ld absorbed, %ld other", what,
     total, nomem, passed, other);
  is_int(run(), PD_RESULT_OK, "%s runs again afterwards", what);
}

int main(void) {
  make_data();
  snprintf(tmpdir, sizeof tmpdir, "%s/pd_sweep.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("Bail out! cannot make a temporary directory\n");
    return 1;
  }
  snprintf(model, sizeof model, "%s/m.pdmodel", tmpdir);
  snprintf(script, sizeof script,
           "x = data(\"x\", [-1, %d])\n"
           "label = data(\"label\", [-1, 1], int64)\n"
           "w = param(\"w\", [%d, 2])\n"
           "y = x @ w\n"
           "cost = mean(softmax_with_cross_entropy(y, label))\n"
           "train(cost, reader = host(\"d\"), batch = 8, epochs = 1, optimizer = sgd(0.1), "
           "seed = 1)\n"
           "eval(cost, reader = host(\"d\"), batch = 8)\n"
           "save(\"%s/p\")\n"
           "load(\"%s/p\")\n"
           "save(\"%s\", y)\n",
           D, D, tmpdir, tmpdir, model);
  sweep("train, eval, save, load", cycle);
  sweep("the saved model", cycle_model);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) printf("# could not remove %s\n", tmpdir);
  return tap_done();
}
