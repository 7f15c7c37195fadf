/* test_step_memory.c -- live-byte accounting of the host allocator (pd_k_host_stats) and what a
 * training step leaves behind. The accounting: sizes as asked (small blocks and cached ones),
 * the peak and its reset, the allocation count, and balance under concurrent threads. The
 * step: the Elman RNN of bench/bench_rnn.c (small), built as `train` builds it (prune, hoist,
 * backward, Adam), run on batches of sequences fed as `train` feeds them. After each step the
 * bytes live are those live before it (the run's scope tree, step scopes included, is gone);
 * while the tree is kept it holds more, and freeing it gives the bytes back; a step over
 * longer sequences peaks higher; the executor's release of temporaries after their last use
 * keeps the peak below what the whole tree holds, and fetched temporaries survive it. No
 * timings. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "kernels/kernels.h"
#include "lang/compile.h"
#include "tests/tap.h"
#include "vm/passes/backward.h"
#include "vm/run/exec.h"
#include "vm/passes/hoist.h"
#include "vm/passes/optimizer.h"
#include "vm/passes/prune.h"

static pd_k_host_usage usage(void) {
  pd_k_host_usage u;
  pd_k_host_stats(&u);
  return u;
}

static void test_accounting(void) {
  pd_k_host_usage u0 = usage();
  pd_k_host_stats_reset();
  ok(usage().peak == u0.live && usage().allocs == 0, "reset: peak = live, no allocations");
  void *a = pd_k_host_alloc(100), *b = pd_k_host_alloc((size_t)200 << 10);
  pd_k_host_usage u1 = usage();
  is_int((long long)(u1.live - u0.live), 100 + (200 << 10), "live counts the sizes asked for");
  is_int((long long)u1.allocs, 2, "two allocations counted");
  pd_k_host_free(b);
  pd_k_host_usage u2 = usage();
  is_int((long long)(u2.live - u0.live), 100, "a freed block leaves live (cached or not)");
  is_int((long long)(u2.peak - u0.live), 100 + (200 << 10), "the peak stays");
  b = pd_k_host_alloc((size_t)190 << 10); /* the cached block of that size class comes back */
  is_int((long long)(usage().live - u0.live), 100 + (190 << 10),
         "a block from the cache counts its new size");
  pd_k_host_free(b);
  pd_k_host_free(a);
  pd_k_host_stats_reset();
  is_int((long long)usage().live, (long long)u0.live, "all freed: live is back");
  is_int((long long)usage().peak, (long long)u0.live, "and the reset peak with it");
}

static void *churn(void *arg) {
  size_t base = (size_t)(uintptr_t)arg;
  for (int i = 0; i < 2000; i++) {
    void *p = pd_k_host_alloc(base + (size_t)(i % 7) * 4096);
    void *q = pd_k_host_alloc(64 + (size_t)i);
    pd_k_host_free(p);
    pd_k_host_free(q);
  }
  return NULL;
}

static void test_threads(void) {
  size_t before = usage().live;
  pthread_t th[4];
  int started = 0;
  for (int i = 0; i < 4; i++)
    started += pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)((size_t)(i + 1) << 15)) == 0;
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  ok(started == 4, "4 threads allocate and free");
  is_int((long long)usage().live, (long long)before, "live balances across threads");
}

/* ---- A training step ---- */

static const char rnn_text[] =
    "x = data(\"x\", [-1, 1], int64, lod_level = 1)\n"
    "y = data(\"y\", [-1, 1], int64, lod_level = 1)\n"
    "emb = param([16, 8], name = \"emb\")\n"
    "Wx = param([8, 24], name = \"Wx\")\n"
    "bx = param([24], name = \"bx\", init = 0.0)\n"
    "Wh = param([24, 24], name = \"Wh\")\n"
    "Wo = param([24, 16], name = \"Wo\")\n"
    "h = zeros([24])\n"
    "for (t in lookup_table(emb, x)) {\n"
    "    h = tanh(mul(t, Wx) + bx + mul(h, Wh))\n"
    "    emit hs = h\n"
    "}\n"
    "cost = mean(softmax_with_cross_entropy(mul(hs, Wo), y))\n";

typedef struct step {
  pd_source *src;
  pd_unit *unit;
  pd_program *train, *init;
  pd_backward bwd;
  pd_scope *global;
  pd_exec *ex;
  pd_tensor x, y;
  pd_error err;
} step;

static void step_free(step *s) {
  pd_tensor_release(&s->x);
  pd_tensor_release(&s->y);
  pd_exec_free(s->ex);
  pd_scope_free(s->global);
  pd_backward_release(&s->bwd);
  pd_program_free(s->init);
  pd_program_free(s->train);
  pd_unit_free(s->unit);
  pd_source_free(s->src);
  pd_error_clear(&s->err);
}

static bool run_block0(const pd_program *p, pd_scope *scope, pd_error *err) {
  pd_exec *ex;
  if (pd_exec_new(p, NULL, &ex, err)) return false;
  bool good = pd_exec_run_block(ex, 0, scope, err) == PD_OK;
  pd_exec_free(ex);
  return good;
}

static bool step_build(step *s) {
  memset(s, 0, sizeof *s);
  pd_tensor_init(&s->x);
  pd_tensor_init(&s->y);
  pd_diags d;
  pd_diags_init(&d, 5);
  bool good = pd_source_from_string("rnn.pd", rnn_text, strlen(rnn_text), &s->src) == PD_OK &&
              pd_compile(s->src, NULL, &d, &s->unit) == PD_OK;
  if (!good) printf("# compile: %s\n", d.text.data ? d.text.data : "?");
  pd_diags_free(&d);
  if (!good) return false;
  const char *cost = "cost";
  pd_optimizer o;
  pd_optimizer_defaults(&o, PD_OPT_ADAM, 0.01);
  pd_status st = pd_program_prune(s->unit->main, 1, &cost, &s->train, &s->err);
  if (!st) st = pd_program_hoist(s->train, NULL, &s->err);
  if (!st) st = pd_append_backward(s->train, cost, &s->bwd, &s->err);
  if (!st && !(s->init = pd_program_new())) st = PD_ENOMEM;
  if (!st) st = pd_append_optimizer(s->train, s->init, &s->bwd, &o, (pd_loc){0}, &s->err);
  if (!st && !(s->global = pd_scope_new(NULL))) st = PD_ENOMEM;
  if (!st && (!run_block0(s->unit->startup, s->global, &s->err) ||
              !run_block0(s->init, s->global, &s->err)))
    st = PD_ERUNTIME;
  if (!st) st = pd_exec_new(s->train, NULL, &s->ex, &s->err);
  if (st) printf("# build: %s\n", s->err.msg ? s->err.msg : pd_status_str(st));
  return st == PD_OK;
}

/* The feeds: nseq sequences of lengths len, len + 1, ... (ids mod 16). */
static bool step_data(step *s, int nseq, int len) {
  int64_t off[9] = {0};
  for (int q = 0; q < nseq; q++) off[q + 1] = off[q] + len + q;
  int64_t dims[2] = {off[nseq], 1}, n = nseq + 1;
  const int64_t *lv = off;
  pd_tensor *ts[2] = {&s->x, &s->y};
  for (int i = 0; i < 2; i++) {
    if (pd_tensor_resize(ts[i], PD_INT64, 2, dims) || pd_tensor_set_lod(ts[i], 1, &lv, &n))
      return false;
    for (int64_t r = 0; r < dims[0]; r++) PD_TENSOR_I64(ts[i])[r] = (r * 7 + i * 3) % 16;
  }
  return true;
}

/* One step on the feeds. */
static bool step_run(step *s, pd_scope **keep) {
  pd_exec_feed feeds[2] = {{"x", &s->x}, {"y", &s->y}};
  pd_exec_io io = {2, feeds, 0, NULL};
  pd_status st = pd_exec_run(s->ex, s->global, &io, keep, &s->err);
  if (st) printf("# step: %s\n", s->err.msg ? s->err.msg : pd_status_str(st));
  return st == PD_OK;
}

static void test_training_step(void) {
  step s;
  if (!ok(step_build(&s), "the training program builds")) {
    step_free(&s);
    return;
  }
  /* The first step of the executor may size caches of its own: measure from the second. */
  bool ran = step_data(&s, 4, 10) && step_run(&s, NULL);
  size_t peak[2] = {0, 0};
  for (int i = 0; i < 2 && ran; i++) {
    int len = i == 0 ? 10 : 40;
    ran = step_data(&s, 4, len); /* the feeds are the caller's: made before measuring */
    pd_k_host_usage u0 = usage();
    pd_k_host_stats_reset();
    ran = ran && step_run(&s, NULL);
    pd_k_host_usage u1 = usage();
    peak[i] = u1.peak - u0.live;
    ok(ran, "a step over sequences of lengths %d..%d runs", len, len + 3);
    is_int((long long)u1.live, (long long)u0.live,
           "after it, the bytes live are those before it (lengths %d..%d)", len, len + 3);
    pd_scope *run = NULL;
    ran = ran && step_run(&s, &run);
    size_t kept = usage().live;
    ok(ran && kept > u0.live, "the kept scope tree holds %zu bytes", kept - u0.live);
    pd_scope_free(run);
    is_int((long long)usage().live, (long long)u0.live, "freeing the tree gives them back");
  }
  ok(peak[1] > peak[0] && peak[0] > 0, "the step over longer sequences peaks higher (%zu > %zu)",
     peak[1], peak[0]);
  /* Temporaries go after their last use, so the step peaks below what its whole tree holds when
   * kept (every forward value, gradient and step scope); a fetched temporary stays. */
  pd_scope *run = NULL;
  size_t base = usage().live;
  ran = ran && step_run(&s, &run);
  size_t tree = usage().live - base;
  pd_scope_free(run);
  ok(ran && peak[1] < tree, "the step peaks at %zu bytes, below the %zu its kept tree holds",
     peak[1], tree);
  pd_tensor hs, g;
  pd_tensor_init(&hs);
  pd_tensor_init(&g);
  pd_exec_feed feeds[2] = {{"x", &s.x}, {"y", &s.y}};
  pd_exec_fetch fetches[2] = {{"hs", &hs}, {"Wh@GRAD", &g}};
  pd_exec_io io = {2, feeds, 2, fetches};
  pd_status st = ran ? pd_exec_run(s.ex, s.global, &io, NULL, &s.err) : PD_ERUNTIME;
  ok(st == PD_OK && hs.ndims == 2 && hs.dims[0] == 4 * 40 + 6 && hs.dims[1] == 24 &&
         g.ndims == 2 && g.dims[0] == 24 && g.dims[1] == 24,
     "fetched temporaries (hs, Wh@GRAD) keep their values");
  pd_tensor_release(&hs);
  pd_tensor_release(&g);
  step_free(&s);
}

int main(void) {
  test_accounting();
  test_threads();
  test_training_step();
  return tap_done();
}
