/* test_kern_rnn_op.c -- PaddlePaddle's rnn op (vm/ops/rnn.c) run as one op: every mode (LSTM,
 * GRU, RNN_TANH, RNN_RELU), one and two layers, one direction and both, with SequenceLength
 * (lengths 3, 1, 2 and 0 in a padded batch of T = 3: outputs past a length zero, states those of
 * the last valid step) and without. Checked: Out and State against a reference written here from
 * Paddle's equations (the weights [G H, in] as WeightList orders them, the GRU's reset applied to
 * h W_hn^T + b_hn), the gradients of Input, PreState and every weight and bias against finite
 * differences through Out and State, fp32 values, and the errors (a WeightList of the wrong
 * length, a weight of the wrong shape, a length past T, dropout in training). LSTM and GRU run
 * through the CPU backend's whole-sequence kernels, and again through kernels/rnn_steps.c (the
 * CUDA backend's composition of them, over the CPU's entries); with a GPU, the op and its
 * gradient there against the CPU's, every mode. */
#include "config.h"

#include <math.h>

#include "tests/kernels/steps_backend.h"
#include "tests/vm/ops/test_kern_math.h"

enum { T = 3, N = 4, I = 2, H = 2 };

static double sigm(double v) { return 1 / (1 + exp(-v)); }

static const char *const modes[4] = {"LSTM", "GRU", "RNN_TANH", "RNN_RELU"};
static int gates(int m) { return m == 0 ? 4 : m == 1 ? 3 : 1; }

/* Values: each tensor of the op gets its own pseudo-random values. */
static double vin[T * N * I], vstate[2][2 * 2 * N * H], vw[16][4 * H * 2 * H];
static const int32_t lens[N] = {3, 1, 2, 0};

/* The reference: out [T, N, D H], hT, cT [L D, N, H]. */
static void reference(int m, int L, int D, bool use_len, double *out, double *hT, double *cT) {
  int G = gates(m), cells = L * D;
  double x[T][N][2 * H], y[T][N][2 * H];
  for (int t = 0; t < T; t++)
    for (int n = 0; n < N; n++)
      for (int i = 0; i < I; i++) x[t][n][i] = vin[(t * N + n) * I + i];
  for (int l = 0; l < L; l++) {
    int in = l ? D * H : I;
    for (int d = 0; d < D; d++) {
      int c = l * D + d;
      const double *wih = vw[2 * c], *whh = vw[2 * c + 1], *bih = vw[2 * cells + 2 * c];
      const double *bhh = vw[2 * cells + 2 * c + 1];
      for (int n = 0; n < N; n++) {
        int len = use_len ? lens[n] : T;
        double h[H], cc[H];
        for (int j = 0; j < H; j++) {
          h[j] = vstate[0][(c * N + n) * H + j];
          cc[j] = vstate[1][(c * N + n) * H + j];
        }
        for (int s = 0; s < T; s++) {
          int t = d ? T - 1 - s : s;
          if (t >= len) {
            for (int j = 0; j < H; j++) y[t][n][d * H + j] = 0;
            continue;
          }
          double gx[4 * H], gh[4 * H], nh[H];
          for (int q = 0; q < G * H; q++) {
            gx[q] = bih[q];
            gh[q] = bhh[q];
            for (int i = 0; i < in; i++) gx[q] += wih[q * in + i] * x[t][n][i];
            for (int i = 0; i < H; i++) gh[q] += whh[q * H + i] * h[i];
          }
          for (int j = 0; j < H; j++) {
            if (m == 0) {
              double ig = sigm(gx[j] + gh[j]), fg = sigm(gx[H + j] + gh[H + j]);
              double gg = tanh(gx[2 * H + j] + gh[2 * H + j]), og = sigm(gx[3 * H + j] + gh[3 * H + j]);
              cc[j] = fg * cc[j] + ig * gg;
              nh[j] = og * tanh(cc[j]);
            } else if (m == 1) {
              double r = sigm(gx[j] + gh[j]), z = sigm(gx[H + j] + gh[H + j]);
              double nn = tanh(gx[2 * H + j] + r * gh[2 * H + j]);
              nh[j] = (1 - z) * nn + z * h[j];
            } else {
              double v = gx[j] + gh[j];
              nh[j] = m == 2 ? tanh(v) : v > 0 ? v : 0;
            }
          }
          for (int j = 0; j < H; j++) y[t][n][d * H + j] = h[j] = nh[j];
        }
        for (int j = 0; j < H; j++) {
          hT[(c * N + n) * H + j] = h[j];
          cT[(c * N + n) * H + j] = cc[j];
        }
      }
    }
    for (int t = 0; t < T; t++)
      for (int n = 0; n < N; n++)
        for (int i = 0; i < D * H; i++) x[t][n][i] = y[t][n][i];
  }
  for (int t = 0; t < T; t++)
    for (int n = 0; n < N; n++)
      for (int i = 0; i < D * H; i++) out[(t * N + n) * D * H + i] = y[t][n][i];
}

/* Declare the op's inputs (fp64, or fp32 when f32) and the op; returns it. */
static pd_op_desc *setup(rt *r, int m, int L, int D, bool use_len, bool f32) {
  int G = gates(m), cells = L * D, ns = m == 0 ? 2 : 1;
  char shape[64], list[512] = "", sl[64] = "", names[16][16];
  float fb[4 * H * 2 * H];
  snprintf(shape, sizeof shape, "[%d, %d, %d]", T, N, I);
  if (f32) {
    to_f32(vin, fb, T * N * I);
    rt_in_f32(r, "x", shape, fb);
  } else {
    rt_in_f64(r, "x", shape, vin);
  }
  snprintf(shape, sizeof shape, "[%d, %d, %d]", cells, N, H);
  for (int i = 0; i < ns; i++) {
    const char *nm = i ? "c0" : "h0";
    if (f32) {
      to_f32(vstate[i], fb, cells * N * H);
      rt_in_f32(r, nm, shape, fb);
    } else {
      rt_in_f64(r, nm, shape, vstate[i]);
    }
  }
  for (int k = 0; k < 4 * cells; k++) {
    int c = k < 2 * cells ? k / 2 : (k - 2 * cells) / 2, l = c / D;
    bool bias = k >= 2 * cells;
    int cols = bias ? 0 : k % 2 ? H : l ? D * H : I;
    if (bias) snprintf(shape, sizeof shape, "[%d]", G * H);
    else snprintf(shape, sizeof shape, "[%d, %d]", G * H, cols);
    snprintf(names[k], sizeof names[k], "w%d", k);
    int n = G * H * (bias ? 1 : cols);
    if (f32) {
      to_f32(vw[k], fb, n);
      rt_in_f32(r, names[k], shape, fb);
    } else {
      rt_in_f64(r, names[k], shape, vw[k]);
    }
    size_t at = strlen(list);
    snprintf(list + at, sizeof list - at, "%s%s", k ? "," : "", names[k]);
  }
  if (use_len) {
    snprintf(shape, sizeof shape, "[%d]", N);
    rt_in(r, "len", PD_INT32, shape, lens);
    snprintf(sl, sizeof sl, " SequenceLength=len");
  }
  char ins[400], outs[128];
  snprintf(ins, sizeof ins, "Input=x PreState=%s WeightList=%s%s", ns > 1 ? "h0,c0" : "h0", list,
           sl);
  snprintf(outs, sizeof outs, "Out=y State=%s Reserve=res DropoutState=ds",
           ns > 1 ? "hT,cT" : "hT");
  pd_op_desc *op = rt_op(r, "rnn", ins, outs);
  pd_op_set_attr_string(op, "mode", modes[m]);
  pd_op_set_attr_int(op, "num_layers", L);
  pd_op_set_attr_int(op, "hidden_size", H);
  pd_op_set_attr_int(op, "input_size", I);
  pd_op_set_attr_bool(op, "is_bidirec", D == 2);
  return op;
}

static void one(int m, int L, int D, bool use_len) {
  char what[128];
  snprintf(what, sizeof what, "rnn %s, %d layer%s, %s%s", modes[m], L, L > 1 ? "s" : "",
           D == 2 ? "bidirectional" : "forward", use_len ? ", lengths 3 1 2 0" : "");
  double out[T * N * 2 * H], hT[2 * 2 * N * H], cT[2 * 2 * N * H];
  reference(m, L, D, use_len, out, hT, cT);
  for (int pass = 0; pass < 2; pass++) {
    rt r;
    rt_init(&r);
    setup(&r, m, L, D, use_len, false);
    if (pass == 1) {
      grad_check(&r, m == 0 ? "Input PreState WeightList" : "Input PreState WeightList",
                 "Out State", what);
    } else if (rt_ok(&r, what)) {
      rt_expect(rt_get(&r, "y"), T * N * D * H, out, 1e-13, what);
      rt_expect(rt_get(&r, "hT"), L * D * N * H, hT, 1e-13, what);
      if (m == 0) rt_expect(rt_get(&r, "cT"), L * D * N * H, cT, 1e-13, what);
    }
    rt_free(&r);
  }
}

static void fails(int m, int L, int D, void (*spoil)(rt *r, pd_op_desc *op), pd_status want,
                  const char *part, const char *what) {
  rt r;
  rt_init(&r);
  pd_op_desc *op = setup(&r, m, L, D, true, false);
  spoil(&r, op);
  rt_fails(&r, want, part, what);
  rt_free(&r);
}

static void short_list(rt *r, pd_op_desc *op) {
  (void)r;
  const char *ws[3] = {"w0", "w1", "w2"};
  pd_op_set_input(op, "WeightList", 3, ws);
}
static void bad_weight(rt *r, pd_op_desc *op) {
  (void)op;
  double v[24] = {0};
  rt_in_f64(r, "w1", "[8, 3]", v);
}
static void long_len(rt *r, pd_op_desc *op) {
  (void)op;
  rt_in(r, "len", PD_INT32, "[4]", (int32_t[]){3, 4, 1, 0});
}
static void dropout(rt *r, pd_op_desc *op) {
  (void)r;
  pd_op_set_attr_float(op, "dropout_prob", 0.5f);
}

/* With a GPU: the op and its gradient op (through Out and State) computed there give the CPU's
 * values, for every mode, 2 layers, both directions, padded lengths; skipped without one. */
enum { GPU_VALS = 4 * T * N * 2 * H + 16 * 4 * H * 2 * H };
static int64_t gpu_run(int m, pd_k_place place, double *got) {
  int ns = m == 0 ? 2 : 1, cells = 4;
  rt r;
  rt_init(&r);
  r.place = place;
  r.no_shape_check = true;
  setup(&r, m, 2, 2, true, false);
  double d[T * N * 2 * H];
  char shape[64], gins[480], gouts[400];
  vals(d, T * N * 2 * H, -1, 1, 77, false);
  snprintf(shape, sizeof shape, "[%d, %d, %d]", T, N, 2 * H);
  rt_in_f64(&r, "dy", shape, d);
  snprintf(shape, sizeof shape, "[%d, %d, %d]", cells, N, H);
  rt_in_f64(&r, "dhT", shape, d + 1);
  rt_in_f64(&r, "dcT", shape, d + 2);
  const pd_op_desc *f = r.op;
  size_t at = 0;
  for (int s = 0; s < f->ninputs; s++) {
    at += (size_t)snprintf(gins + at, sizeof gins - at, "%s=", f->inputs[s].param);
    for (int a = 0; a < f->inputs[s].nargs; a++)
      at += (size_t)snprintf(gins + at, sizeof gins - at, "%s%s", a ? "," : "",
                             f->inputs[s].args[a]);
    at += (size_t)snprintf(gins + at, sizeof gins - at, " ");
  }
  snprintf(gins + at, sizeof gins - at, "Out=y Reserve=res State=%s Out@GRAD=dy State@GRAD=%s",
           ns > 1 ? "hT,cT" : "hT", ns > 1 ? "dhT,dcT" : "dhT");
  at = (size_t)snprintf(gouts, sizeof gouts, "Input@GRAD=dx PreState@GRAD=%s WeightList@GRAD=",
                        ns > 1 ? "dh0,dc0" : "dh0");
  for (int k = 0; k < 4 * cells; k++)
    at += (size_t)snprintf(gouts + at, sizeof gouts - at, "%sdw%d", k ? "," : "", k);
  pd_op_desc *g = rt_op(&r, "rnn_grad", gins, gouts);
  for (int i = 0; i < f->nattrs; i++)
    if (pd_op_set_attr(g, &f->attrs[i])) bail("out of memory");
  int64_t n = 0;
  if (rt_run(&r) != PD_OK) {
    printf("#   %s: %s\n", place == PD_K_CUDA ? "GPU" : "CPU", r.f.err.msg ? r.f.err.msg : "?");
    n = -1;
  }
  const char *outs[8] = {"y", "hT", "dx", "dh0", ns > 1 ? "cT" : NULL, ns > 1 ? "dc0" : NULL};
  for (int i = 0; n >= 0 && i < 6; i++) {
    const pd_tensor *t = outs[i] ? rt_get(&r, outs[i]) : NULL;
    if (t && n + pd_tensor_numel(t) > GPU_VALS) bail("gpu_run: more values than GPU_VALS");
    for (int64_t j = 0; t && j < pd_tensor_numel(t); j++) got[n++] = PD_TENSOR_F64(t)[j];
  }
  for (int k = 0; n >= 0 && k < 4 * cells; k++) {
    char nm[8];
    snprintf(nm, sizeof nm, "dw%d", k);
    const pd_tensor *t = rt_get(&r, nm);
    if (t && n + pd_tensor_numel(t) > GPU_VALS) bail("gpu_run: more values than GPU_VALS");
    for (int64_t j = 0; t && j < pd_tensor_numel(t); j++) got[n++] = PD_TENSOR_F64(t)[j];
  }
  rt_free(&r);
  return n;
}

static void test_gpu(void) {
  pd_error e = {0};
  if (pd_k_cuda_open(0, &e) != PD_OK) {
    char why[300];
    snprintf(why, sizeof why, "the rnn op on the GPU needs one: %s", e.msg ? e.msg : "?");
    tap_skip(why);
    pd_error_clear(&e);
    return;
  }
  static double cpu[GPU_VALS], gpu[GPU_VALS];
  for (int m = 0; m < 4; m++) {
    int64_t nc = gpu_run(m, PD_K_HOST, cpu), ng = gpu_run(m, PD_K_CUDA, gpu);
    double scale = 1e-300, worst = 0;
    for (int64_t i = 0; i < nc && nc == ng; i++) scale = fmax(scale, fabs(cpu[i]));
    for (int64_t i = 0; i < nc && nc == ng; i++) worst = fmax(worst, fabs(gpu[i] - cpu[i]) / scale);
    ok(nc > 0 && nc == ng && worst <= 1e-10,
       "rnn %s, 2 layers, bidirectional, lengths: on the GPU, Out, State and every gradient as on "
       "the CPU (%lld values, worst %.2g of the largest)", modes[m], (long long)nc, worst);
  }
}

int main(void) {
  pd_k_init();
  vals(vin, T * N * I, -1.5, 1.5, 1, false);
  vals(vstate[0], 2 * 2 * N * H, -0.8, 0.8, 2, false);
  vals(vstate[1], 2 * 2 * N * H, -0.8, 0.8, 3, false);
  for (int k = 0; k < 16; k++) vals(vw[k], 4 * H * 2 * H, -0.7, 0.7, 10 + (uint64_t)k, true);
  for (int m = 0; m < 4; m++)
    for (int L = 1; L <= 2; L++)
      for (int D = 1; D <= 2; D++)
        for (int ul = 0; ul < 2; ul++) one(m, L, D, ul);
  /* LSTM and GRU again through kernels/rnn_steps.c (the CUDA backend's recurrences, over the
   * CPU's entries): the padded rows of a batch with lengths included. */
  printf("# LSTM and GRU step by step (kernels/rnn_steps.c)\n");
  rt_default_host = steps_backend();
  for (int m = 0; m < 2; m++)
    for (int D = 1; D <= 2; D++) one(m, 2, D, 1);
  rt_default_host = NULL;
  /* fp32: the same values within rounding. */
  for (int m = 0; m < 2; m++) {
    const char *what = m ? "rnn GRU fp32" : "rnn LSTM fp32";
    double out[T * N * 2 * H], hT[2 * 2 * N * H], cT[2 * 2 * N * H];
    reference(m, 2, 2, true, out, hT, cT);
    rt r;
    rt_init(&r);
    setup(&r, m, 2, 2, true, true);
    if (rt_ok(&r, what)) {
      rt_expect(rt_get(&r, "y"), T * N * 2 * H, out, 1e-5, what);
      rt_expect(rt_get(&r, "hT"), 2 * 2 * N * H, hT, 1e-5, what);
    }
    rt_free(&r);
  }
  fails(1, 1, 1, short_list, PD_EINVAL, "WeightList must hold 4 tensors",
        "rnn: a WeightList of 3 tensors");
  fails(1, 1, 1, bad_weight, PD_ESHAPE, "must be [6, 2] float64",
        "rnn: weight_hh [8, 3] for a GRU of hidden 2");
  fails(0, 1, 2, long_len, PD_EINVAL, "SequenceLength[1] is 4, outside 0 .. 3",
        "rnn: a length past T");
  fails(0, 1, 1, dropout, PD_EUNSUPPORTED, "dropout between layers",
        "rnn: dropout in training");
  test_gpu();
  return tap_done();
}
