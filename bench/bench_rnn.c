/* bench_rnn.c -- one training step of the Elman RNN of bench/bench_rnn.sh (embedding 32, tanh
 * cell of hidden H, a linear layer to 256 classes, softmax cross entropy, Adam), built as
 * `train` builds it (prune, the loop hoisting of vm/passes/hoist.h, backward, optimizer) and run
 * directly through the executor on random batches of 32 sequences of length T. Not a test.
 *
 *   bench/bench_rnn mem [H...]    memory: for T = 50, 100, 200, 400, the peak of the bytes
 *                                 live in pd_k_host_alloc blocks during a step (above what
 *                                 the parameters and the optimizer state hold between steps),
 *                                 and what the step's scope tree holds at its end when the run
 *                                 keeps it (nothing released early: the peak without the
 *                                 executor's release of temporaries, vm/run/exec.h); the growth of
 *                                 both per time step (least-squares slopes over T), next to
 *                                 the theoretical activation size per time step; what one step
 *                                 scope of the loop holds, var by var; and a check that the
 *                                 bytes live after the step's scope tree is destroyed are those
 *                                 live before it (exit status 1 otherwise).
 *   bench/bench_rnn step [H [T [N]]]  time: the median and best of N (default 30) steps, in
 *                                 ms, after 3 warm-up steps; for profiling (perf record).
 * Both take --no-hoist (skip the hoisting pass) before the mode. Default H: 32 and 256.
 *
 * Theoretical activation size per time step, in bytes, of what the backward pass must keep
 * (fp32, B = 32 sequences, E = 32, V = 256 classes): the cell h_t = tanh(x_t Wx + bx +
 * h_{t-1} Wh) needs x_t ([B, E], for dWx) and h_t ([B, H]: tanh' = 1 - h_t^2, and h_t is step
 * t+1's h_{t-1}, for dWh); the output layer needs h_t again (for dWo, already counted) and the
 * softmax probabilities ([B, V], for the cross entropy's gradient); plus the B int64 ids of the
 * step's input and labels (lookup_table's gradient and the loss's):
 *     4 B (E + H + V) + 16 B.
 * A step also makes gradients of the same sizes, which live during the backward pass: the
 * measured slope counts those where they are alive at the peak. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/diag.h"
#include "kernels/kernels.h"
#include "lang/compile.h"
#include "vm/passes/backward.h"
#include "vm/run/exec.h"
#include "vm/passes/hoist.h"
#include "vm/passes/optimizer.h"
#include "vm/passes/prune.h"
#include "vm/run/scope.h"

enum { B = 32, E = 32, V = 256 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const pd_error *err) {
  fprintf(stderr, "bench_rnn: %s: %s\n", what, err && err->msg ? err->msg : "failed");
  exit(1);
}

typedef struct model {
  pd_source *src;
  pd_unit *unit;
  pd_program *train, *init;
  pd_backward bwd;
  pd_scope *global;
  pd_exec *ex;
  pd_tensor x, y;
  int hidden;
  int moved;           /* ops the hoisting pass moved out of the loop */
} model;

static void model_build(model *m, int hidden, bool hoist) {
  char text[2048];
  snprintf(text, sizeof text,
           "x = data(\"x\", [-1, 1], int64, lod_level = 1)\n"
           "y = data(\"y\", [-1, 1], int64, lod_level = 1)\n"
           "emb = param([%d, %d], name = \"emb\")\n"
           "Wx = param([%d, %d], name = \"Wx\")\n"
           "bx = param([%d], name = \"bx\", init = 0.0)\n"
           "Wh = param([%d, %d], name = \"Wh\")\n"
           "Wo = param([%d, %d], name = \"Wo\")\n"
           "bo = param([%d], name = \"bo\", init = 0.0)\n"
           "h = zeros([%d])\n"
           "for (t in lookup_table(emb, x)) {\n"
           "    h = tanh(mul(t, Wx) + bx + mul(h, Wh))\n"
           "    emit hs = h\n"
           "}\n"
           "cost = mean(softmax_with_cross_entropy(mul(hs, Wo) + bo, y))\n",
           V, E, E, hidden, hidden, hidden, hidden, hidden, V, V, hidden);
  memset(m, 0, sizeof *m);
  m->hidden = hidden;
  pd_diags d;
  pd_diags_init(&d, 5);
  if (pd_source_from_string("rnn.pd", text, strlen(text), &m->src) ||
      pd_compile(m->src, NULL, &d, &m->unit)) {
    fprintf(stderr, "%s", d.text.data ? d.text.data : "");
    die("compile", NULL);
  }
  pd_diags_free(&d);
  pd_error err = {0};
  const char *cost = "cost";
  pd_optimizer o;
  pd_optimizer_defaults(&o, PD_OPT_ADAM, 0.001);
  if (pd_program_prune(m->unit->main, 1, &cost, &m->train, &err)) die("prune", &err);
  int moved = 0;
  if (hoist && pd_program_hoist(m->train, &moved, &err)) die("hoist", &err);
  m->moved = moved;
  if (pd_append_backward(m->train, cost, &m->bwd, &err)) die("backward", &err);
  if (!(m->init = pd_program_new())) die("out of memory", NULL);
  if (pd_append_optimizer(m->train, m->init, &m->bwd, &o, (pd_loc){0}, &err))
    die("optimizer", &err);
  if (!(m->global = pd_scope_new(NULL))) die("out of memory", NULL);
  pd_exec *sx;
  if (pd_exec_new(m->unit->startup, NULL, &sx, &err) ||
      pd_exec_run_block(sx, 0, m->global, &err))
    die("startup", &err);
  pd_exec_free(sx);
  if (pd_exec_new(m->init, NULL, &sx, &err) || pd_exec_run_block(sx, 0, m->global, &err))
    die("optimizer state", &err);
  pd_exec_free(sx);
  pd_exec_options eo = {.seed = 1};
  if (pd_exec_new(m->train, &eo, &m->ex, &err)) die("prepare", &err);
  pd_tensor_init(&m->x);
  pd_tensor_init(&m->y);
}

static void model_free(model *m) {
  pd_tensor_release(&m->x);
  pd_tensor_release(&m->y);
  pd_exec_free(m->ex);
  pd_scope_free(m->global);
  pd_backward_release(&m->bwd);
  pd_program_free(m->init);
  pd_program_free(m->train);
  pd_unit_free(m->unit);
  pd_source_free(m->src);
}

/* x, y: B random sequences of T ids each. */
static void model_data(model *m, int64_t T) {
  int64_t dims[2] = {B * T, 1};
  pd_tensor *ts[2] = {&m->x, &m->y};
  int64_t *off = malloc(sizeof *off * (B + 1));
  if (!off) die("out of memory", NULL);
  for (int s = 0; s <= B; s++) off[s] = s * T;
  int64_t n = B + 1;
  const int64_t *lv = off;
  for (int i = 0; i < 2; i++) {
    if (pd_tensor_resize(ts[i], PD_INT64, 2, dims) || pd_tensor_set_lod(ts[i], 1, &lv, &n))
      die("out of memory", NULL);
    for (int64_t r = 0; r < B * T; r++) PD_TENSOR_I64(ts[i])[r] = rand() % V;
  }
  free(off);
}

static void model_step(model *m, pd_scope **keep) {
  pd_exec_feed feeds[2] = {{"x", &m->x}, {"y", &m->y}};
  pd_exec_io io = {2, feeds, 0, NULL};
  pd_error err = {0};
  if (pd_exec_run(m->ex, m->global, &io, keep, &err)) die("step", &err);
}

/* ---- mem ---- */

typedef struct by_name {
  char name[96];
  size_t bytes;
} by_name;

static size_t var_bytes(const pd_variable *v) {
  if (v->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&v->u.tensor))
    return pd_tensor_nbytes(&v->u.tensor);
  return 0;
}

/* Bytes of every var of the step scopes of the loop, summed by name over the steps. */
static int step_scope_bytes(pd_scope *run, by_name *out, int cap) {
  const char **names;
  size_t n;
  int k = 0;
  if (pd_scope_var_names(run, &names, &n)) die("out of memory", NULL);
  for (size_t i = 0; i < n; i++) {
    pd_variable *v = pd_scope_find_local_var(run, names[i]);
    if (v->type != PD_VAR_STEP_SCOPES) continue;
    for (size_t s = 0; s < pd_var_num_step_scopes(v); s++) {
      pd_scope *ss = pd_var_step_scope(v, s);
      const char **sn;
      size_t sc;
      if (pd_scope_var_names(ss, &sn, &sc)) die("out of memory", NULL);
      for (size_t j = 0; j < sc; j++) {
        size_t b = var_bytes(pd_scope_find_local_var(ss, sn[j]));
        int q = 0;
        while (q < k && strcmp(out[q].name, sn[j]) != 0) q++;
        if (q == k && k < cap) {
          snprintf(out[k].name, sizeof out[k].name, "%s", sn[j]);
          out[k++].bytes = 0;
        }
        if (q < k) out[q].bytes += b;
      }
      pd_free(sn);
    }
  }
  pd_free(names);
  return k;
}

/* The least-squares slope of y over x. */
static double slope_of(const int64_t *x, const double *y, int n) {
  double mx = 0, my = 0, sxy = 0, sxx = 0;
  for (int i = 0; i < n; i++) {
    mx += (double)x[i] / n;
    my += y[i] / n;
  }
  for (int i = 0; i < n; i++) {
    sxy += ((double)x[i] - mx) * (y[i] - my);
    sxx += ((double)x[i] - mx) * ((double)x[i] - mx);
  }
  return sxy / sxx;
}

static bool bench_mem(int hidden, bool hoist) {
  static const int64_t lens[] = {50, 100, 200, 400};
  enum { NL = sizeof lens / sizeof lens[0] };
  model m;
  model_build(&m, hidden, hoist);
  double peak[NL], tree[NL];
  bool back = true;
  double theory = 4.0 * B * (E + hidden + V) + 16.0 * B;
  printf("hidden %d (batch %d, embedding %d, %d classes), %d ops hoisted:\n", hidden, B, E, V,
         m.moved);
  printf("  %6s %14s %14s %12s %10s\n", "length", "peak live B", "kept tree B", "allocs",
         "after");
  for (int i = 0; i < NL; i++) {
    model_data(&m, lens[i]);
    model_step(&m, NULL); /* warm-up: sizes of the kernels' scratch settle */
    pd_k_host_usage u0, u1, u2;
    pd_k_host_stats(&u0);
    pd_k_host_stats_reset();
    model_step(&m, NULL);
    pd_k_host_stats(&u1);
    /* Again, keeping the run scope: what the tree holds at the end of the step. */
    pd_scope *run = NULL;
    model_step(&m, &run);
    pd_k_host_usage kept;
    pd_k_host_stats(&kept);
    char breakdown[1024] = "";
    if (i == NL - 1) {
      by_name vars[64];
      int nv = step_scope_bytes(run, vars, 64);
      size_t total = 0, k = 0;
      for (int v = 0; v < nv; v++) total += vars[v].bytes;
      k += (size_t)snprintf(breakdown + k, sizeof breakdown - k,
                            "  one step scope of the loop holds %.0f B:",
                            (double)total / (double)lens[i]);
      for (int v = 0; v < nv && k < sizeof breakdown; v++)
        k += (size_t)snprintf(breakdown + k, sizeof breakdown - k, "%s %s %.0f", v ? "," : "",
                              vars[v].name, (double)vars[v].bytes / (double)lens[i]);
      if (k < sizeof breakdown) snprintf(breakdown + k, sizeof breakdown - k, "\n");
    }
    pd_scope_free(run);
    pd_k_host_stats(&u2);
    peak[i] = (double)(u1.peak - u0.live);
    tree[i] = (double)(kept.live - u0.live);
    bool same = u2.live == u0.live;
    back = back && same;
    printf("  %6lld %14.0f %14.0f %12llu %10s\n", (long long)lens[i], peak[i], tree[i],
           (unsigned long long)u1.allocs, same ? "baseline" : "LEAK");
    if (!same)
      printf("  live bytes: %zu before the step, %zu after its scope tree is freed\n", u0.live,
             u2.live);
    if (i == NL - 1) printf("%s", breakdown);
  }
  double slope = slope_of(lens, peak, NL), kslope = slope_of(lens, tree, NL);
  printf("  bytes per time step (slopes): peak %.0f, kept tree %.0f; theoretical activations "
         "4B(E+H+V)+16B = %.0f (peak / theory %.2f); the cell alone 4B(E+H) = %.0f\n",
         slope, kslope, theory, slope / theory, 4.0 * B * (E + hidden));
  model_free(&m);
  return back;
}

/* ---- step ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void bench_step(int hidden, int64_t T, int n, bool hoist) {
  model m;
  model_build(&m, hidden, hoist);
  model_data(&m, T);
  double *t = malloc(sizeof *t * (size_t)n);
  if (!t) die("out of memory", NULL);
  for (int i = 0; i < 3; i++) model_step(&m, NULL);
  for (int i = 0; i < n; i++) {
    double t0 = now();
    model_step(&m, NULL);
    t[i] = now() - t0;
  }
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  printf("hidden %d, length %lld, batch %d, %d ops hoisted: %.3f ms/step median, %.3f best "
         "(%d steps)\n",
         hidden, (long long)T, B, m.moved, t[n / 2] * 1e3, t[0] * 1e3, n);
  free(t);
  model_free(&m);
}

int main(int argc, char **argv) {
  pd_k_init();
  srand(1);
  int a = 1;
  bool hoist = true;
  if (a < argc && strcmp(argv[a], "--no-hoist") == 0) {
    hoist = false;
    a++;
  }
  const char *mode = a < argc ? argv[a++] : "mem";
  if (strcmp(mode, "mem") == 0) {
    bool ok = true;
    if (a == argc) {
      ok = bench_mem(32, hoist) && ok;
      ok = bench_mem(256, hoist) && ok;
    }
    for (; a < argc; a++) ok = bench_mem(atoi(argv[a]), hoist) && ok;
    return ok ? 0 : 1;
  }
  if (strcmp(mode, "step") == 0) {
    int64_t T = a + 1 < argc ? atoll(argv[a + 1]) : 50;
    int n = a + 2 < argc ? atoi(argv[a + 2]) : 30;
    if (T < 1 || n < 1) die("usage", NULL);
    if (a < argc) {
      bench_step(atoi(argv[a]), T, n, hoist);
    } else {
      bench_step(32, T, n, hoist);
      bench_step(256, T, n, hoist);
    }
    return 0;
  }
  fprintf(stderr, "usage: bench_rnn [--no-hoist] mem [H...] | step [H [T [N]]]\n");
  return 2;
}
