/* bench_norm.c -- batch_norm and layer_norm, forward + backward, on the CPU backend, against the
 * memory bandwidth a plain copy of the same size reaches in the same run (not a test).
 *
 * Bandwidth of a normalisation step = the bytes it cannot avoid moving / its time: the forward
 * pass reads x and writes y, the backward pass reads x and dy and writes dx: 5 tensors of x's
 * size (the per-channel or per-row statistics are small). The reference is the better of
 * memcpy and the backend's scale(x, 1) (a copy split across the kernels' thread pool) over a
 * buffer of x's size: 2 tensors moved. The ratio column is the first over the second; the goal
 * is 0.5 or more. Shapes: the batch norms of examples/resnet.pd's stages at batch 64 (their
 * tensors fit in the L3 cache, and so do the copy's), one ImageNet-sized batch norm whose 51 MB
 * tensors do not (both then run at the memory's speed), and layer norms of a transformer's
 * [batch * length, d] rows. fp32; the best of the repeats.
 *
 * With --cpu, one thread (PDLANG_THREADS=1) and its CPU time instead of the wall clock: figures
 * that hold on a loaded machine (the copy's reference is then memcpy's, on one thread too).
 *
 * Usage: bench/bench_norm [seconds per measurement, default 0.3] [--cpu]. */
#include "config.h"
#include "bench/bench_util.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void bench_fn(void *ctx);

static double (*clock_fn)(void) = bench_now;

/* The best seconds per call over `budget` seconds, after a warm-up call. */
static double best_time(bench_fn *fn, void *ctx, double budget) {
  fn(ctx);
  double best = 1e30, end = bench_now() + budget;
  do {
    double t0 = clock_fn();
    fn(ctx);
    double t = clock_fn() - t0;
    if (t < best) best = t;
  } while (bench_now() < end);
  return best;
}

static void die_if(pd_status st, const char *what) {
  if (st) {
    fprintf(stderr, "bench_norm: %s: %s\n", what, pd_status_str(st));
    exit(1);
  }
}

typedef struct job {
  int64_t n, c, s;         /* batch_norm: [n, c, s]; layer_norm: rows = n, cols = c (s = 1) */
  bool layer;
  float *x, *y, *dy, *dx, *scale, *bias, *mean, *var, *smean, *sinv, *dscale, *dbias;
} job;

static void run_norm(void *vj) {
  job *j = vj;
  const pd_k_backend *k = pd_k_cpu();
  if (j->layer) {
    die_if(k->layer_norm(PD_FP32, j->n, j->c, j->x, j->scale, j->bias, 1e-5, j->y, j->smean,
                         j->sinv),
           "layer_norm");
    die_if(k->layer_norm_grad(PD_FP32, j->n, j->c, j->x, j->scale, j->smean, j->sinv, 1e-5,
                              j->dy, j->dx, j->dscale, j->dbias),
           "layer_norm_grad");
  } else {
    die_if(k->batch_norm(PD_FP32, j->n, j->c, j->s, j->x, j->scale, j->bias, j->mean, j->var,
                         false, 0.9, 1e-5, j->y, j->mean, j->var, j->smean, j->sinv),
           "batch_norm");
    die_if(k->batch_norm_grad(PD_FP32, j->n, j->c, j->s, j->x, j->scale, j->smean, j->sinv,
                              false, j->dy, j->dx, j->dscale, j->dbias),
           "batch_norm_grad");
  }
}

typedef struct copy_job {
  size_t n;
  float *src, *dst;
  bool pool;
} copy_job;

static void run_copy(void *vj) {
  copy_job *j = vj;
  if (j->pool) die_if(pd_k_cpu()->scale(PD_FP32, (int64_t)j->n, j->src, 1, 0, j->dst), "scale");
  else memcpy(j->dst, j->src, j->n * sizeof(float));
}

static void bench(const char *label, int64_t n, int64_t c, int64_t s, bool layer, double budget) {
  size_t numel = (size_t)(n * c * s), stat = (size_t)(layer ? n : c), par = (size_t)c;
  job j = {n, c, s, layer, bench_randf("bench_norm", numel), bench_randf("bench_norm", numel), bench_randf("bench_norm", numel), bench_randf("bench_norm", numel), bench_randf("bench_norm", par),
           bench_randf("bench_norm", par), bench_randf("bench_norm", stat), bench_randf("bench_norm", stat), bench_randf("bench_norm", stat), bench_randf("bench_norm", stat), bench_randf("bench_norm", par),
           bench_randf("bench_norm", par)};
  for (size_t i = 0; i < stat; i++) j.var[i] = 1, j.sinv[i] = 1;
  double t = best_time(run_norm, &j, budget);
  copy_job cm = {numel, j.x, j.dx, false}, cp = {numel, j.x, j.dx, true};
  double tm = best_time(run_copy, &cm, budget), tp = best_time(run_copy, &cp, budget);
  double tc = tm < tp ? tm : tp;
  double bytes = 4.0 * (double)numel, bw = 5 * bytes / t, cbw = 2 * bytes / tc;
  printf("%-34s %8.1f us  %6.1f GB/s   copy %6.1f GB/s (%s)   ratio %.2f\n", label, t * 1e6,
         bw * 1e-9, cbw * 1e-9, tm < tp ? "memcpy" : "pool", bw / cbw);
  float *bufs[] = {j.x, j.y, j.dy, j.dx, j.scale, j.bias, j.mean, j.var, j.smean, j.sinv,
                   j.dscale, j.dbias};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) pd_k_host_free(bufs[i]);
}

int main(int argc, char **argv) {
  double budget = 0.3;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--cpu") == 0) {
      clock_fn = bench_thread_cpu;
      setenv("PDLANG_THREADS", "1", 1);
    } else {
      budget = atof(argv[i]);
    }
  }
  pd_k_init();
  pd_k_threading th = pd_k_threading_info();
  printf("threads: %d, ftz/daz %s; forward + backward, fp32\n", th.threads,
         th.ftz_daz ? "on" : "off");
  bench("batch_norm [64, 16, 28, 28]", 64, 16, 28 * 28, false, budget);
  bench("batch_norm [64, 32, 14, 14]", 64, 32, 14 * 14, false, budget);
  bench("batch_norm [64, 64, 7, 7]", 64, 64, 7 * 7, false, budget);
  bench("batch_norm [256, 512] (NC)", 256, 512, 1, false, budget);
  bench("batch_norm [64, 64, 56, 56] (DRAM)", 64, 64, 56 * 56, false, budget);
  bench("layer_norm [32 * 64, 128]", 32 * 64, 128, 1, true, budget);
  bench("layer_norm [32 * 64, 512]", 32 * 64, 512, 1, true, budget);
  return 0;
}
