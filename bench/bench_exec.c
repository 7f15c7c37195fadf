/* bench_exec.c -- benchmarks of the executor (not a test), each a ratio against a reference
 * measured in the same run:
 *   - dispatch: ns per op on a chain of 100,000 `scale` ops over a one-element tensor (the
 *     interpreter loop's cost, against the same number of direct kernel calls);
 *   - fc forward: mul + elementwise_add (the stdlib's fc) through the executor at batch 64 and
 *     256, against cblas_sgemm alone on the same shapes (the figure is the ratio);
 *   - conv2d forward on LeNet and small ResNet shapes through the executor, against the kernel
 *     table called directly and against PyTorch's conv2d on the same shapes and threads
 *     (bench/torch_conv.py, run with $PDLANG_BENCH_PYTHON, default python3) when installed.
 * Usage: bench/bench_exec [seconds per measurement, default 0.5] [dispatch|fc|conv: only that]. */
#include "config.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "vm/run/exec.h"
#include "vm/ops/ops.h"
#include "vm/ir/program.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const pd_error *err) {
  fprintf(stderr, "bench_exec: %s: %s\n", what, err && err->msg ? err->msg : "failed");
  exit(1);
}

static pd_var_desc *var(pd_block *b, const char *name, int nd, const int64_t *dims,
                        bool persistable) {
  pd_var_desc *v = pd_block_var(b, name);
  if (!v || pd_var_set_shape(v, nd, dims)) die("out of memory", NULL);
  v->persistable = persistable;
  return v;
}

static pd_op_desc *op1(pd_block *b, const char *type, const char *slot_x, const char *x,
                       const char *slot_y, const char *y, const char *out) {
  pd_op_desc *op = pd_block_add_op(b, type, -1);
  if (!op || pd_op_set_input(op, slot_x, 1, &x) ||
      (y && pd_op_set_input(op, slot_y, 1, &y)) || pd_op_set_output(op, "Out", 1, &out))
    die("out of memory", NULL);
  return op;
}

static void prepare_all(pd_block *b) {
  pd_error err = {0};
  for (int i = 0; i < b->nops; i++)
    if (pd_opdef_prepare(b->ops[i], b, &err)) die("prepare", &err);
}

static void fill_var(pd_scope *s, const char *name, int nd, const int64_t *dims) {
  pd_tensor *t = pd_var_tensor(pd_scope_var(s, name));
  if (!t || pd_tensor_resize(t, PD_FP32, nd, dims)) die("out of memory", NULL);
  float *p = PD_TENSOR_F32(t);
  for (int64_t i = 0; i < pd_tensor_numel(t); i++) p[i] = (float)((double)rand() / RAND_MAX - 0.5);
}

/* ---- dispatch ---- */
static void bench_dispatch(double budget) {
  enum { N = 100000 };
  pd_program *p = pd_program_new();
  pd_block *b = p->blocks[0];
  int64_t one = 1;
  var(b, "v", 1, &one, true);
  for (int i = 0; i < N; i++) {
    pd_op_desc *op = op1(b, "scale", "X", "v", NULL, NULL, "v");
    pd_op_set_attr_float(op, "scale", 1.0f);
  }
  prepare_all(b);
  pd_scope *g = pd_scope_new(NULL);
  fill_var(g, "v", 1, &one);
  pd_exec *ex;
  pd_error err = {0};
  if (pd_exec_new(p, NULL, &ex, &err)) die("prepare", &err);
  pd_exec_run_block(ex, 0, g, &err);
  int runs = 0;
  double t0 = now(), t;
  do {
    if (pd_exec_run_block(ex, 0, g, &err)) die("run", &err);
    runs++;
    t = now() - t0;
  } while (t < budget);
  double per_op = t / ((double)runs * N) * 1e9;
  /* The same kernel called directly, N times. */
  float v = 1;
  const pd_k_backend *k = pd_k_cpu();
  int direct = 0;
  t0 = now();
  do {
    for (int i = 0; i < N; i++) k->scale(PD_FP32, 1, &v, 1.0, 0.0, &v);
    direct++;
    t = now() - t0;
  } while (t < budget);
  double per_call = t / ((double)direct * N) * 1e9;
  printf("dispatch: %.1f ns per op through the executor (chain of %d scale ops on [1]); the "
         "kernel alone %.1f ns; interpreter overhead %.1f ns per op\n",
         per_op, N, per_call, per_op - per_call);
  pd_exec_free(ex);
  pd_scope_free(g);
  pd_program_free(p);
}

/* ---- fc ---- */
static void bench_fc(int batch, int in, int out, double budget) {
  pd_program *p = pd_program_new();
  pd_block *b = p->blocks[0];
  var(b, "x", 2, (int64_t[]){batch, in}, true);
  var(b, "w", 2, (int64_t[]){in, out}, true);
  var(b, "bias", 1, (int64_t[]){out}, true);
  var(b, "xw", -1, NULL, false);
  var(b, "y", -1, NULL, false);
  op1(b, "mul", "X", "x", "Y", "w", "xw");
  op1(b, "elementwise_add", "X", "xw", "Y", "bias", "y");
  prepare_all(b);
  pd_scope *g = pd_scope_new(NULL);
  fill_var(g, "x", 2, (int64_t[]){batch, in});
  fill_var(g, "w", 2, (int64_t[]){in, out});
  fill_var(g, "bias", 1, (int64_t[]){out});
  pd_exec *ex;
  pd_error err = {0};
  if (pd_exec_new(p, NULL, &ex, &err)) die("prepare", &err);
  pd_exec_run(ex, g, NULL, NULL, &err);
  int runs = 0;
  double t0 = now(), t;
  do {
    if (pd_exec_run(ex, g, NULL, NULL, &err)) die("run", &err);
    runs++;
    t = now() - t0;
  } while (t < budget);
  double t_exec = t / runs;
  pd_variable *xv = pd_scope_find_var(g, "x"), *wv = pd_scope_find_var(g, "w");
  float *c = pd_k_host_alloc((size_t)batch * out * sizeof *c);
  /* Raw sgemm on OpenBLAS's own pool with as many threads as the executor's kernels use
   * (pd_k_init left OpenBLAS at one thread per call). */
  pd_k_threading th = pd_k_threading_info();
  openblas_set_num_threads(th.threads);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, out, in, 1.0f,
              PD_TENSOR_F32(&xv->u.tensor), in, PD_TENSOR_F32(&wv->u.tensor), out, 0.0f, c, out);
  runs = 0;
  t0 = now();
  do {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, out, in, 1.0f,
                PD_TENSOR_F32(&xv->u.tensor), in, PD_TENSOR_F32(&wv->u.tensor), out, 0.0f, c, out);
    runs++;
    t = now() - t0;
  } while (t < budget);
  double t_gemm = t / runs;
  openblas_set_num_threads(th.blas_threads);
  double flops = 2.0 * batch * in * out;
  printf("fc %4d x %4d -> %4d: executor %6.1f GFLOP/s (mul + bias, fresh run scope), "
         "cblas_sgemm alone %6.1f GFLOP/s, ratio %.2f\n",
         batch, in, out, flops / t_exec * 1e-9, flops / t_gemm * 1e-9, t_gemm / t_exec);
  pd_k_host_free(c);
  pd_exec_free(ex);
  pd_scope_free(g);
  pd_program_free(p);
}

/* ---- conv2d ---- */
/* PyTorch's milliseconds per conv2d call for each shape (from bench/torch_conv.py), or -1. */
static double torch_ms[8];

static void torch_conv(const int (*shapes)[6], int nshapes, int threads, double budget) {
  for (int i = 0; i < nshapes; i++) torch_ms[i] = -1;
  const char *py = getenv("PDLANG_BENCH_PYTHON");
  if (!py || !*py) py = "python3";
  char script[1024];
  snprintf(script, sizeof script, "%s", __FILE__);
  char *slash = strrchr(script, '/');
  snprintf(slash ? slash + 1 : script, sizeof script - (size_t)(slash ? slash + 1 - script : 0),
           "torch_conv.py");
  char cmd[4096];
  int len = snprintf(cmd, sizeof cmd, "'%s' '%s' --threads %d --seconds %g", py, script, threads, budget);
  for (int i = 0; i < nshapes && len < (int)sizeof cmd - 64; i++)
    len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %d,%d,%d,%d,%d,%d", shapes[i][0],
                    shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4], shapes[i][5]);
  snprintf(cmd + len, sizeof cmd - (size_t)len, " 2>&1");
  FILE *p = popen(cmd, "r");
  if (!p) return;
  char line[512];
  while (fgets(line, sizeof line, p)) {
    int v[6];
    double ms;
    if (line[0] == '#' || strncmp(line, "PyTorch not", 11) == 0) {
      printf("PyTorch: %s", line[0] == '#' ? line + 2 : line);
      continue;
    }
    if (sscanf(line, "%d %d %d %d %d %d %lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &ms) != 7)
      continue;
    for (int i = 0; i < nshapes; i++)
      if (!memcmp(v, shapes[i], sizeof v)) torch_ms[i] = ms;
  }
  pclose(p);
}

static void bench_conv(int idx, int n, int c, int h, int oc, int k, int pad, double budget) {
  pd_program *p = pd_program_new();
  pd_block *b = p->blocks[0];
  var(b, "x", 4, (int64_t[]){n, c, h, h}, true);
  var(b, "f", 4, (int64_t[]){oc, c, k, k}, true);
  var(b, "y", -1, NULL, false);
  pd_op_desc *op = pd_block_add_op(b, "conv2d", -1);
  const char *x = "x", *f = "f", *y = "y";
  pd_op_set_input(op, "Input", 1, &x);
  pd_op_set_input(op, "Filter", 1, &f);
  pd_op_set_output(op, "Output", 1, &y);
  pd_op_set_attr_ints(op, "paddings", 2, (int32_t[]){pad, pad});
  prepare_all(b);
  pd_scope *g = pd_scope_new(NULL);
  fill_var(g, "x", 4, (int64_t[]){n, c, h, h});
  fill_var(g, "f", 4, (int64_t[]){oc, c, k, k});
  pd_exec *ex;
  pd_error err = {0};
  if (pd_exec_new(p, NULL, &ex, &err)) die("prepare", &err);
  pd_exec_run(ex, g, NULL, NULL, &err);
  int runs = 0;
  double t0 = now(), t;
  do {
    if (pd_exec_run(ex, g, NULL, NULL, &err)) die("run", &err);
    runs++;
    t = now() - t0;
  } while (t < budget);
  double t_exec = t / runs;
  pd_k_conv2d cp = {.n = n, .c = c, .h = h, .w = h, .oc = oc, .kh = k, .kw = k, .groups = 1,
                    .stride_h = 1, .stride_w = 1, .pad_top = pad, .pad_bottom = pad,
                    .pad_left = pad, .pad_right = pad, .dil_h = 1, .dil_w = 1};
  pd_k_conv2d_setup(&cp);
  float *out = pd_k_host_alloc((size_t)(n * oc * cp.oh * cp.ow) * sizeof *out);
  pd_variable *xv = pd_scope_find_var(g, "x"), *fv = pd_scope_find_var(g, "f");
  runs = 0;
  t0 = now();
  do {
    pd_k_cpu()->conv2d(PD_FP32, &cp, PD_TENSOR_F32(&xv->u.tensor), PD_TENSOR_F32(&fv->u.tensor), out);
    runs++;
    t = now() - t0;
  } while (t < budget);
  double t_k = t / runs;
  double flops = 2.0 * n * oc * cp.oh * cp.ow * c * k * k;
  printf("conv2d [%d, %d, %d, %d] * [%d, %d, %d, %d] pad %d: executor %.3f ms (%.1f GFLOP/s), "
         "kernel alone %.3f ms (ratio %.2f)",
         n, c, h, h, oc, c, k, k, pad, t_exec * 1e3, flops / t_exec * 1e-9, t_k * 1e3,
         t_k / t_exec);
  if (torch_ms[idx] > 0)
    printf(", PyTorch %.3f ms: pdlang/PyTorch speed %.2f", torch_ms[idx],
           torch_ms[idx] / (t_exec * 1e3));
  printf("\n");
  pd_k_host_free(out);
  pd_exec_free(ex);
  pd_scope_free(g);
  pd_program_free(p);
}

int main(int argc, char **argv) {
  pd_k_init();
  double budget = argc > 1 ? atof(argv[1]) : 0.5;
  if (!(budget > 0)) budget = 0.5;
  pd_k_threading th = pd_k_threading_info();
  printf("threads: %d, FTZ/DAZ %s\n", th.threads, th.ftz_daz ? "on" : "off");
  const char *only = argc > 2 ? argv[2] : "";
  if (!*only || strcmp(only, "dispatch") == 0) bench_dispatch(budget);
  if (!*only || strcmp(only, "fc") == 0) {
    bench_fc(64, 784, 256, budget);
    bench_fc(256, 784, 256, budget);
    bench_fc(64, 256, 10, budget);
    bench_fc(256, 1024, 1024, budget);
  }
  if (!*only || strcmp(only, "conv") == 0) {
    static const int shapes[][6] = {{64, 1, 28, 6, 5, 2}, {64, 6, 14, 16, 5, 0},
                                    {64, 1, 28, 20, 5, 2}, {64, 20, 14, 50, 5, 0},
                                    {32, 64, 28, 64, 3, 1}};
    int ns = (int)(sizeof shapes / sizeof shapes[0]);
    int threads = th.threads;
    torch_conv(shapes, ns, threads, budget);
    for (int i = 0; i < ns; i++)
      bench_conv(i, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4],
                 shapes[i][5], budget);
  }
  return 0;
}
