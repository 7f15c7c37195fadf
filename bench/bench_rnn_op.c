/* bench_rnn_op.c -- PaddlePaddle's `rnn` op (vm/ops/rnn.c: what paddle.nn.LSTM / GRU write into
 * a program, and so what a model imported from PaddlePaddle runs), forward and backward, next
 * to the same recurrence as pdlang's own ops in the same run: the input projection as `fc` and
 * the loop as fused_lstm / fused_gru (what `train` makes of stdlib's lstm and gru layers), with
 * their gradient ops. One layer, one direction, a batch of 32 sequences of 50 steps, input 32,
 * hidden 256 (bench/bench_gated.sh's sizes), fp32. Prints the best and median milliseconds of
 * 15 runs after 3 warm-ups and the rnn op's time over the fused ops'. Not a test.
 * Usage: bench/bench_rnn_op [LSTM|GRU ...] */
#include "config.h"

#include <time.h>

#include "kernels/kernels.h"
#include "tests/vm/ops/runop.h"

enum { T = 50, N = 32, I = 32, H = 256, REPS = 15 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Deterministic values in [-0.05, 0.05). */
static float *values(size_t n, unsigned seed) {
  float *v = malloc(sizeof *v * n);
  if (!v) bail("out of memory");
  for (size_t i = 0; i < n; i++)
    v[i] = (float)(((i + 1) * 2654435761u + seed * 40503u) % 1000u) / 10000.0f - 0.05f;
  return v;
}

/* Best and median seconds of REPS runs of r's block (after 3 warm-ups). */
static void timed(rt *r, const char *what, double *best, double *med) {
  double t[REPS];
  for (int i = 0; i < 3 + REPS; i++) {
    double t0 = now();
    if (rt_run(r)) {
      fprintf(stderr, "bench_rnn_op: %s: %s\n", what, r->f.err.msg ? r->f.err.msg : "failed");
      exit(1);
    }
    if (i >= 3) t[i - 3] = now() - t0;
  }
  qsort(t, REPS, sizeof *t, cmp);
  *best = t[0];
  *med = t[REPS / 2];
}

static void shape(char *s, size_t n, int nd, int64_t a, int64_t b, int64_t c) {
  if (nd == 1) snprintf(s, n, "[%lld]", (long long)a);
  else if (nd == 2) snprintf(s, n, "[%lld, %lld]", (long long)a, (long long)b);
  else snprintf(s, n, "[%lld, %lld, %lld]", (long long)a, (long long)b, (long long)c);
}

/* The rnn op and its gradient op, forward and backward through Out. */
static void rnn_op(const char *mode, double *best, double *med) {
  bool lstm = !strcmp(mode, "LSTM");
  int G = lstm ? 4 : 3;
  char s[64];
  rt r;
  rt_init(&r);
  r.no_shape_check = true;
  float *v = values((size_t)(T * N * H + G * H * H), 1);
  shape(s, sizeof s, 3, T, N, I), rt_in_f32(&r, "x", s, v);
  shape(s, sizeof s, 3, 1, N, H), rt_in_f32(&r, "h0", s, v + 1), rt_in_f32(&r, "c0", s, v + 2);
  shape(s, sizeof s, 2, G * H, I, 0), rt_in_f32(&r, "wih", s, v + 3);
  shape(s, sizeof s, 2, G * H, H, 0), rt_in_f32(&r, "whh", s, v + 4);
  shape(s, sizeof s, 1, G * H, 0, 0), rt_in_f32(&r, "bih", s, v + 5);
  rt_in_f32(&r, "bhh", s, v + 6);
  shape(s, sizeof s, 3, T, N, H), rt_in_f32(&r, "dy", s, v + 7);
  const char *ins = lstm ? "Input=x PreState=h0,c0 WeightList=wih,whh,bih,bhh"
                         : "Input=x PreState=h0 WeightList=wih,whh,bih,bhh";
  pd_op_desc *op = rt_op(&r, "rnn", ins, lstm ? "Out=y Reserve=res State=hT,cT"
                                              : "Out=y Reserve=res State=hT");
  for (int k = 0; k < 2; k++) {
    pd_op_set_attr_string(op, "mode", mode);
    pd_op_set_attr_int(op, "hidden_size", H);
    pd_op_set_attr_int(op, "input_size", I);
    if (k) break;
    char gins[256];
    snprintf(gins, sizeof gins, "%s Out=y Reserve=res Out@GRAD=dy", ins);
    op = rt_op(&r, "rnn_grad", gins,
               lstm ? "Input@GRAD=dx PreState@GRAD=dh0,dc0 WeightList@GRAD=dwih,dwhh,dbih,dbhh"
                    : "Input@GRAD=dx PreState@GRAD=dh0 WeightList@GRAD=dwih,dwhh,dbih,dbhh");
  }
  timed(&r, mode, best, med);
  rt_free(&r);
  free(v);
}

/* fc (the input projection) + fused_lstm / fused_gru and their gradient ops, the N sequences
 * one after another as rows of a LoD tensor. */
static void fused_ops(const char *mode, double *best, double *med) {
  bool lstm = !strcmp(mode, "LSTM");
  int G = lstm ? 4 : 3;
  const char *type = lstm ? "fused_lstm" : "fused_gru";
  char s[64], ins[160], outs[160];
  rt r;
  rt_init(&r);
  r.no_shape_check = true;
  float *v = values((size_t)(T * N * H + G * H * H), 2);
  int64_t off[N + 1];
  for (int n = 0; n <= N; n++) off[n] = (int64_t)n * T;
  shape(s, sizeof s, 2, T * N, I, 0), rt_in_f32(&r, "x", s, v);
  rt_lod(&r, "x", N + 1, off);
  shape(s, sizeof s, 2, I, G * H, 0), rt_in_f32(&r, "wx", s, v + 3);
  shape(s, sizeof s, 1, G * H, 0, 0), rt_in_f32(&r, "b", s, v + 5), rt_in_f32(&r, "bh", s, v + 6);
  shape(s, sizeof s, 2, H, G * H, 0), rt_in_f32(&r, "wh", s, v + 4);
  shape(s, sizeof s, 2, T * N, H, 0), rt_in_f32(&r, "dh", s, v + 7);
  rt_lod(&r, "dh", N + 1, off);
  rt_op(&r, "fc", "Input=x W=wx Bias=b", "Out=u");
  snprintf(ins, sizeof ins, "Input=u Weight=wh%s", lstm ? "" : " Bias=bh");
  snprintf(outs, sizeof outs, "Hidden=h%s BatchGate=g", lstm ? " Cell=c" : "");
  rt_op(&r, type, ins, outs);
  char gins[400], gtype[32];
  snprintf(gins, sizeof gins, "%s %s Hidden@GRAD=dh", ins, outs);
  snprintf(gtype, sizeof gtype, "%s_grad", type);
  rt_op(&r, gtype, gins, lstm ? "Input@GRAD=du Weight@GRAD=dwh"
                              : "Input@GRAD=du Weight@GRAD=dwh Bias@GRAD=dbh");
  rt_op(&r, "fc_grad", "Input=x W=wx Bias=b Out=u Out@GRAD=du",
        "Input@GRAD=dx W@GRAD=dwx Bias@GRAD=db");
  timed(&r, type, best, med);
  rt_free(&r);
  free(v);
}

int main(int argc, char **argv) {
  pd_k_init();
  const char *all[2] = {"LSTM", "GRU"};
  int n = argc > 1 ? argc - 1 : 2;
  printf("# the rnn op against fc + fused op, forward and backward: T %d, N %d, input %d, "
         "hidden %d, fp32, %d thread(s)\n", T, N, I, H, pd_k_threading_info().threads);
  for (int i = 0; i < n; i++) {
    const char *mode = argc > 1 ? argv[i + 1] : all[i];
    if (strcmp(mode, "LSTM") && strcmp(mode, "GRU")) {
      fprintf(stderr, "bench_rnn_op: mode '%s': expected LSTM or GRU\n", mode);
      return 2;
    }
    double rb, rm, fb, fm;
    rnn_op(mode, &rb, &rm);
    fused_ops(mode, &fb, &fm);
    printf("%-4s rnn op %.2f ms (median %.2f); fc + fused_%s %.2f ms (median %.2f); rnn op / "
           "fused %.2fx the time\n", mode, rb * 1e3, rm * 1e3,
           !strcmp(mode, "LSTM") ? "lstm" : "gru", fb * 1e3, fm * 1e3, rm / fm);
  }
  return 0;
}
