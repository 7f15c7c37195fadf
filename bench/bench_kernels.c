/* bench_kernels.c -- micro-benchmarks of the CPU kernels (not a test): sgemm GFLOP/s on
 * fully-connected shapes through the kernel table (and the MLP 784-1024-1024-10's in fp32 against
 * gemm_lp's bf16, mixed precision's products), conv2d forward on LeNet shapes through the
 * kernel table, and an elementwise op followed by a GEMM, which shows whether the pool's idle
 * threads steal cores from the GEMM that follows (kernels/cpu/pool.c), and the
 * convolution and pooling kernels of a LeNet training step, and the output layer's backward
 * kernels of bench_rnn.sh's model, each alone and right after the softmax gradient (the best of
 * 50 calls each), and the updates of the MLP's 200,704 first-layer weights that take a square
 * root and a division per element (Adam, RMSProp, Adagrad) with the widest vectors the CPU has
 * against the baseline loops (pd_kcpu_simd).
 * Usage: bench/bench_kernels [seconds per measurement, default 0.3]. */
#include "config.h"
#include "bench/bench_util.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void bench_fn(void *ctx);

/* Seconds per call: one warm-up call, then repeat for `budget` seconds. */
static double time_it(bench_fn *fn, void *ctx, double budget) {
  fn(ctx);
  long calls = 0;
  double t0 = bench_now(), t;
  do {
    fn(ctx);
    calls++;
    t = bench_now() - t0;
  } while (t < budget);
  return t / (double)calls;
}

/* Seconds per call, the fastest of `reps` calls after a warm-up: steadier than a mean on a
 * machine shared with other work. */
static double best_of(bench_fn *fn, void *ctx, int reps) {
  fn(ctx);
  double best = 1e30;
  for (int i = 0; i < reps; i++) {
    double t0 = bench_now();
    fn(ctx);
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

typedef struct gemm_job {
  int m, n, k;
  const float *a, *b;
  float *c;
  bool bf16; /* through gemm_lp: the products of mixed precision */
} gemm_job;

/* Through the kernel table: split across the kernels' thread pool (kernels.h). */
static void run_gemm(void *ctx) {
  gemm_job *g = ctx;
  if (g->bf16)
    pd_k_cpu()->gemm_lp(PD_BF16, false, false, 1, g->m, g->n, g->k, 1.0, g->a, g->k, 0, g->b,
                        g->n, 0, 0.0, g->c, g->n, 0, NULL);
  else
    pd_k_cpu()->gemm(PD_FP32, false, false, g->m, g->n, g->k, 1.0, g->a, g->k, g->b, g->n, 0.0,
                     g->c, g->n);
}

typedef struct conv_job {
  pd_k_conv2d p;
  const float *x, *w;
  float *y;
} conv_job;

static void run_conv(void *ctx) {
  conv_job *c = ctx;
  if (pd_k_cpu()->conv2d(PD_FP32, &c->p, c->x, c->w, c->y) != PD_OK) {
    fprintf(stderr, "bench_kernels: conv2d failed\n");
    exit(1);
  }
}

typedef struct lenet_job {
  int which;  /* 0 forward, 1 backward data, 2 backward filter, 3 pool, 4 pool grad */
  pd_k_conv2d p;
  pd_k_pool2d q;
  float *x, *w, *y, *dy, *dx, *dw;
} lenet_job;

static void run_lenet(void *ctx) {
  lenet_job *j = ctx;
  const pd_k_backend *k = pd_k_cpu();
  pd_status st = PD_OK;
  switch (j->which) {
    case 0: st = k->conv2d(PD_FP32, &j->p, j->x, j->w, j->y); break;
    case 1: st = k->conv2d_bwd_data(PD_FP32, &j->p, j->w, j->dy, j->dx); break;
    case 2: st = k->conv2d_bwd_filter(PD_FP32, &j->p, j->x, j->dy, j->dw); break;
    case 3: st = k->pool2d(PD_FP32, &j->q, j->x, j->y); break;
    default: st = k->pool2d_grad(PD_FP32, &j->q, j->x, j->y, j->dy, j->dx); break;
  }
  if (st) {
    fprintf(stderr, "bench_kernels: a LeNet kernel failed\n");
    exit(1);
  }
}

/* The convolution and pooling kernels of one LeNet training step at batch 64, each the best of
 * 50 calls. */
static void bench_lenet(void) {
  const pd_k_conv2d convs[] = {
      {64, 1, 28, 28, 6, 5, 5, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {64, 6, 14, 14, 16, 5, 5, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
  };
  static const char *const what[] = {"forward", "backward data", "backward filter"};
  double total = 0;
  for (int i = 0; i < 2; i++) {
    lenet_job j = {.p = convs[i]};
    pd_k_conv2d_setup(&j.p);
    pd_k_conv2d *p = &j.p;
    size_t nx = (size_t)(p->n * p->c * p->h * p->w), nw = (size_t)(p->oc * p->c * p->kh * p->kw);
    size_t ny = (size_t)(p->n * p->oc * p->oh * p->ow);
    j.x = bench_randf("bench_kernels", nx), j.dx = bench_randf("bench_kernels", nx), j.w = bench_randf("bench_kernels", nw), j.dw = bench_randf("bench_kernels", nw), j.y = bench_randf("bench_kernels", ny);
    j.dy = bench_randf("bench_kernels", ny);
    for (j.which = 0; j.which < 3; j.which++) {
      if (i == 0 && j.which == 1) continue;  /* the data needs no gradient */
      double s = best_of(run_lenet, &j, 50);
      total += s;
      printf("lenet conv%d %-16s %8.1f us\n", i + 1, what[j.which], s * 1e6);
    }
    pd_k_host_free(j.x), pd_k_host_free(j.dx), pd_k_host_free(j.w), pd_k_host_free(j.dw);
    pd_k_host_free(j.y), pd_k_host_free(j.dy);
  }
  const int64_t pools[][3] = {{6, 28, 28}, {16, 10, 10}};
  for (int i = 0; i < 2; i++) {
    lenet_job j = {.q = {.type = PD_K_POOL_MAX, .n = 64, .c = pools[i][0], .h = pools[i][1],
                         .w = pools[i][2], .kh = 2, .kw = 2, .stride_h = 2, .stride_w = 2}};
    pd_k_pool2d_setup(&j.q);
    size_t nx = (size_t)(64 * j.q.c * j.q.h * j.q.w), ny = (size_t)(64 * j.q.c * j.q.oh * j.q.ow);
    j.x = bench_randf("bench_kernels", nx), j.dx = bench_randf("bench_kernels", nx), j.y = bench_randf("bench_kernels", ny), j.dy = bench_randf("bench_kernels", ny);
    for (j.which = 3; j.which < 5; j.which++) {
      double s = best_of(run_lenet, &j, 50);
      total += s;
      printf("lenet pool%d %-16s %8.1f us\n", i + 1, j.which == 3 ? "forward" : "backward", s * 1e6);
    }
    pd_k_host_free(j.x), pd_k_host_free(j.dx), pd_k_host_free(j.y), pd_k_host_free(j.dy);
  }
  printf("lenet conv + pool kernels of one step: %.1f us\n", total * 1e6);
}

/* The backward pass of bench_rnn.sh's output layer: states [1600, 32], weights [32, 256]. */
typedef struct outgrad_job {
  int which;      /* reader: 0 none, 1 the bias gradient, 2 dX, 3 dW */
  bool softmax;   /* run the softmax gradient first */
  float *sm, *dloss, *dlogits, *h, *w, *db, *dh, *dw;
  int64_t *label;
} outgrad_job;

enum { OG_ROWS = 1600, OG_HID = 32, OG_CLASSES = 256 };

static void run_outgrad(void *ctx) {
  outgrad_job *j = ctx;
  const pd_k_backend *k = pd_k_cpu();
  int64_t dims[] = {OG_ROWS, OG_CLASSES};
  pd_status st = PD_OK;
  if (j->softmax)
    st = k->softmax_xent_grad(PD_FP32, OG_ROWS, OG_CLASSES, j->sm, false, j->label, -100,
                              j->dloss, j->dlogits);
  if (!st && j->which == 1)
    st = k->reduce(PD_K_RSUM, PD_FP32, 2, dims, j->dlogits, 1, (int[]){0}, j->db);
  if (!st && j->which == 2)
    st = k->gemm(PD_FP32, false, true, OG_ROWS, OG_HID, OG_CLASSES, 1.0, j->dlogits, OG_CLASSES,
                 j->w, OG_CLASSES, 0.0, j->dh, OG_HID);
  if (!st && j->which == 3)
    st = k->gemm(PD_FP32, true, false, OG_HID, OG_CLASSES, OG_ROWS, 1.0, j->h, OG_HID,
                 j->dlogits, OG_CLASSES, 0.0, j->dw, OG_CLASSES);
  if (st) {
    fprintf(stderr, "bench_kernels: an output layer kernel failed\n");
    exit(1);
  }
}

/* The softmax gradient writes its rows split across the threads; the bias gradient (a column
 * sum), dX and dW then read them. Each reader is timed alone (its input where its last call
 * left it) and right after the softmax gradient: the difference is the cost of reading rows
 * that another core wrote (reduce_t.h's row chunks and gemm.c's K split keep it small). Best of
 * 50 calls each. */
static void bench_outgrad(void) {
  outgrad_job j = {0};
  size_t nl = (size_t)OG_ROWS * OG_CLASSES;
  j.sm = bench_randf("bench_kernels", nl), j.dlogits = bench_randf("bench_kernels", nl), j.dloss = bench_randf("bench_kernels", OG_ROWS);
  j.h = bench_randf("bench_kernels", (size_t)OG_ROWS * OG_HID), j.dh = bench_randf("bench_kernels", (size_t)OG_ROWS * OG_HID);
  j.w = bench_randf("bench_kernels", (size_t)OG_HID * OG_CLASSES), j.dw = bench_randf("bench_kernels", (size_t)OG_HID * OG_CLASSES);
  j.db = bench_randf("bench_kernels", OG_CLASSES);
  j.label = pd_k_host_alloc(OG_ROWS * sizeof *j.label);
  if (!j.label) {
    fprintf(stderr, "bench_kernels: out of memory\n");
    exit(1);
  }
  for (int i = 0; i < OG_ROWS; i++) j.label[i] = i % OG_CLASSES;
  j.softmax = true;
  double sg = best_of(run_outgrad, &j, 50);
  printf("output layer backward [%d, %d] x [%d, %d]: softmax gradient %.1f us\n", OG_ROWS,
         OG_HID, OG_HID, OG_CLASSES, sg * 1e6);
  const char *names[] = {"", "bias gradient", "dX", "dW"};
  for (j.which = 1; j.which <= 3; j.which++) {
    j.softmax = false;
    double alone = best_of(run_outgrad, &j, 50);
    j.softmax = true;
    double after = best_of(run_outgrad, &j, 50) - sg;
    printf("  %-14s alone %8.1f us, right after the softmax gradient %8.1f us\n",
           names[j.which], alone * 1e6, after * 1e6);
  }
  pd_k_host_free(j.sm), pd_k_host_free(j.dlogits), pd_k_host_free(j.dloss);
  pd_k_host_free(j.h), pd_k_host_free(j.dh), pd_k_host_free(j.w), pd_k_host_free(j.dw);
  pd_k_host_free(j.db), pd_k_host_free(j.label);
}

typedef struct mixed_job {
  gemm_job g;
  float *big;
  int64_t n;
} mixed_job;

static void run_mixed(void *ctx) {
  mixed_job *m = ctx;
  pd_k_cpu()->unary(PD_K_RELU, PD_FP32, m->n, m->big, m->big);  /* a parallel job */
  run_gemm(&m->g);                                                /* then a split GEMM */
}

typedef struct opt_bench {
  pd_k_opt o;
  int64_t n;
  float *p, *g, *s[3];
} opt_bench;

static void run_opt(void *ctx) {
  opt_bench *b = ctx;
  const void *s[3] = {b->s[0], b->s[1], b->s[2]};
  pd_k_cpu()->opt(PD_FP32, b->n, &b->o, b->p, b->g, s, b->p, (void *const *)b->s);
}

/* One update of the MLP's first layer (784 x 256 fp32) in place, at the CPU's widest level and
 * at the baseline (scalar, Adam's two SSE2 lanes): the best of 50 calls each. */
static void bench_optim(void) {
  const struct {
    const char *name;
    pd_k_opt o;
  } kinds[] = {
      {"adam", {.kind = PD_K_OPT_ADAM, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}},
      {"rmsprop", {.kind = PD_K_OPT_RMSPROP, .lr = 1e-3, .rho = 0.95, .mu = 0.9, .eps = 1e-6}},
      {"adagrad", {.kind = PD_K_OPT_ADAGRAD, .lr = 1e-2, .eps = 1e-6}},
  };
  opt_bench b = {.n = 784 * 256};
  b.p = bench_randf("bench_kernels", (size_t)b.n);
  b.g = bench_randf("bench_kernels", (size_t)b.n);
  for (int k = 0; k < 3; k++) {
    b.s[k] = bench_randf("bench_kernels", (size_t)b.n);
    for (int64_t i = 0; i < b.n; i++) b.s[k][i] = b.s[k][i] * b.s[k][i];  /* >= 0 */
  }
#if PD_KCPU_HAVE_AVX2
  int best = pd_kcpu_simd();
#else
  int best = 0;
#endif
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    b.o = kinds[k].o;
    double t[2];
    for (int l = 0; l < 2; l++) {
#if PD_KCPU_HAVE_AVX2
      pd_kcpu_simd_force(l == 0 ? best : PD_KCPU_SIMD_BASE);
#endif
      t[l] = best_of(run_opt, &b, 50);
    }
#if PD_KCPU_HAVE_AVX2
    pd_kcpu_simd_force(best);
#endif
    printf("%-8s update of [784, 256] fp32  %8.1f us at level %d, %8.1f us at the baseline: "
           "%.2fx\n", kinds[k].name, t[0] * 1e6, best, t[1] * 1e6, t[1] / t[0]);
  }
  pd_k_host_free(b.p), pd_k_host_free(b.g);
  for (int k = 0; k < 3; k++) pd_k_host_free(b.s[k]);
}

int main(int argc, char **argv) {
  double budget = argc > 1 ? atof(argv[1]) : 0.3;
  pd_k_init();
  pd_k_threading th = pd_k_threading_info();
  printf("threads: %d (OpenBLAS %d per call), ftz/daz %s\n", th.threads, th.blas_threads,
         th.ftz_daz ? "on" : "off");

  const int fc[][3] = {{64, 256, 784}, {64, 10, 256}, {256, 256, 784}, {256, 10, 256}};
  for (size_t i = 0; i < sizeof fc / sizeof fc[0]; i++) {
    gemm_job g = {fc[i][0], fc[i][1], fc[i][2], NULL, NULL, NULL, false};
    g.a = bench_randf("bench_kernels", (size_t)g.m * g.k);
    g.b = bench_randf("bench_kernels", (size_t)g.k * g.n);
    g.c = bench_randf("bench_kernels", (size_t)g.m * g.n);
    double s = time_it(run_gemm, &g, budget);
    printf("sgemm %4dx%-4d @ %4dx%-4d  %8.1f us  %7.2f GFLOP/s\n", g.m, g.k, g.k, g.n, s * 1e6,
           2.0 * g.m * g.n * g.k / s * 1e-9);
    pd_k_host_free((void *)g.a), pd_k_host_free((void *)g.b), pd_k_host_free(g.c);
  }

  /* Mixed precision (issue 42): the forward products of the MLP 784-1024-1024-10 at batch 256
   * in fp32 and through gemm_lp in bf16 (AMX tiles where the CPU has them), same run. */
  const int mlp[][3] = {{256, 1024, 784}, {256, 1024, 1024}, {256, 10, 1024}};
  for (size_t i = 0; i < sizeof mlp / sizeof mlp[0]; i++) {
    gemm_job g = {mlp[i][0], mlp[i][1], mlp[i][2], NULL, NULL, NULL, false};
    g.a = bench_randf("bench_kernels", (size_t)g.m * g.k);
    g.b = bench_randf("bench_kernels", (size_t)g.k * g.n);
    g.c = bench_randf("bench_kernels", (size_t)g.m * g.n);
    double s32 = time_it(run_gemm, &g, budget);
    g.bf16 = true;
    double s16 = time_it(run_gemm, &g, budget);
    printf("gemm %4dx%-4d @ %4dx%-4d  fp32 %8.1f us, bf16 %8.1f us (%5.2fx, %7.1f GFLOP/s)\n",
           g.m, g.k, g.k, g.n, s32 * 1e6, s16 * 1e6, s32 / s16, 2.0 * g.m * g.n * g.k / s16 * 1e-9);
    pd_k_host_free((void *)g.a), pd_k_host_free((void *)g.b), pd_k_host_free(g.c);
  }

  /* LeNet-5 on 28x28 MNIST: conv1 1->6 5x5 pad 2, conv2 6->16 5x5 (after 2x2 pooling). */
  const pd_k_conv2d lenet[] = {
      {64, 1, 28, 28, 6, 5, 5, 1, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0},
      {64, 6, 14, 14, 16, 5, 5, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof lenet / sizeof lenet[0]; i++) {
    conv_job c = {lenet[i], NULL, NULL, NULL};
    pd_k_conv2d_setup(&c.p);
    pd_k_conv2d *p = &c.p;
    c.x = bench_randf("bench_kernels", (size_t)(p->n * p->c * p->h * p->w));
    c.w = bench_randf("bench_kernels", (size_t)(p->oc * p->c * p->kh * p->kw));
    c.y = bench_randf("bench_kernels", (size_t)(p->n * p->oc * p->oh * p->ow));
    double s = time_it(run_conv, &c, budget);
    double flop = 2.0 * (double)(p->n * p->oc * p->oh * p->ow * p->c * p->kh * p->kw);
    printf("conv2d [%lld,%lld,%lld,%lld] -> [%lld,%lld,%lld,%lld] %lldx%lld  %8.1f us  %7.2f "
           "GFLOP/s\n",
           (long long)p->n, (long long)p->c, (long long)p->h, (long long)p->w, (long long)p->n,
           (long long)p->oc, (long long)p->oh, (long long)p->ow, (long long)p->kh,
           (long long)p->kw, s * 1e6, flop / s * 1e-9);
    pd_k_host_free((void *)c.x), pd_k_host_free((void *)c.w), pd_k_host_free(c.y);
  }

  bench_lenet();
  bench_outgrad();
  bench_optim();

  mixed_job m = {{256, 256, 784, NULL, NULL, NULL, false}, NULL, 1 << 20};
  m.g.a = bench_randf("bench_kernels", 256 * 784);
  m.g.b = bench_randf("bench_kernels", 784 * 256);
  m.g.c = bench_randf("bench_kernels", 256 * 256);
  m.big = bench_randf("bench_kernels", (size_t)m.n);
  double gemm_alone = time_it(run_gemm, &m.g, budget);
  double mixed = time_it(run_mixed, &m, budget);
  printf("relu on 1M floats then sgemm 256x784 @ 784x256: %8.1f us (sgemm alone "
         "%.1f us)\n",
         mixed * 1e6, gemm_alone * 1e6);
  pd_k_host_free((void *)m.g.a), pd_k_host_free((void *)m.g.b), pd_k_host_free(m.g.c);
  pd_k_host_free(m.big);
  return 0;
}
