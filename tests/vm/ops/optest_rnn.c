/* optest_rnn.c -- the op-test table's rows of vm/ops/rnn.c (optest.h): Paddle's rnn op in its four
 * modes (LSTM, GRU, RNN_TANH, RNN_RELU), one layer and two, one direction and both, with padded
 * sequence lengths (SequenceLength) and without. The reference runs Paddle's equations (those of
 * paddle.nn.LSTM / GRU / SimpleRNN, which tests/vm/ops/paddle_rnn_check.py checks against
 * Paddle) sequence by sequence; the gradient check weighs Out and State, with respect to Input,
 * PreState and every tensor of WeightList. Sizes are tiny (hidden 2, input 3, T 3): the
 * finite-difference check reruns the op twice per input element. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* The largest sizes the rows use: T, N, hidden, a layer's input (I or 2 H). */
enum { RT = 4, RN = 3, RH = 3, RIN = 6 };

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* Per step, with x the layer's input row, h and c the states, W_ih [G H, in] and W_hh [G H, H]
 * (rows by gate, Paddle's order), u = W_ih x + b_ih and v = W_hh h + b_hh:
 *   LSTM  i, f, g, o = s(u_i + v_i), s(u_f + v_f), tanh(u_g + v_g), s(u_o + v_o);
 *         c' = f c + i g; h' = o tanh(c')
 *   GRU   r, z = s(u_r + v_r), s(u_z + v_z); n = tanh(u_n + r v_n); h' = (1 - z) n + z h
 *   RNN   h' = tanh or relu(u + v)
 * Direction 1 runs each sequence from its last valid step down to 0. Steps at or past a
 * sequence's length output 0 and keep the states, so State holds those of the last valid
 * step (or PreState's, for length 0). Out [T, N, D H]: the directions side by side; the next
 * layer reads it. */
/* v rounded to lp (PD_BF16, PD_FP16) through fp32; lp 0: v. */
static double lp_round(pd_dtype lp, double v) {
  return lp == PD_BF16 ? pd_bf16_round((float)v) : lp == PD_FP16 ? pd_fp16_round((float)v) : v;
}

static void ref_rnn(ot_ref *r) {
  const char *mode = ot_str(r, "mode");
  bool lstm = !strcmp(mode, "LSTM"), gru = !strcmp(mode, "GRU");
  /* under amp's mark the gated modes' products round their operands (fp32 pass) */
  pd_dtype lp = lstm || gru ? ot_amp(r) : (pd_dtype)0;
  int G = lstm ? 4 : gru ? 3 : 1, L = (int)ot_int(r, "num_layers");
  int D = ot_bool(r, "is_bidirec") ? 2 : 1, cells = L * D;
  const ot_val *x = ot_in(r, "Input"), *sl = ot_in(r, "SequenceLength");
  int64_t T = x->dims[0], N = x->dims[1], I = x->dims[2], H = ot_int(r, "hidden_size");
  int64_t sd[3] = {cells, N, H}, od[3] = {T, N, D * H};
  double *hT = ot_out_at(r, "State", 0, 3, sd);
  double *cT = lstm ? ot_out_at(r, "State", 1, 3, sd) : NULL;
  double *out = ot_out(r, "Out", 3, od);
  double in[RT][RN][RIN], y[RT][RN][RIN];
  for (int64_t t = 0; t < T; t++)
    for (int64_t n = 0; n < N; n++)
      for (int64_t i = 0; i < I; i++) in[t][n][i] = x->v[(t * N + n) * I + i];
  for (int l = 0; l < L; l++) {
    int64_t nin = l ? D * H : I;
    for (int d = 0; d < D; d++) {
      int c = l * D + d;
      const double *wih = ot_in_at(r, "WeightList", 2 * c)->v;
      const double *whh = ot_in_at(r, "WeightList", 2 * c + 1)->v;
      const double *bih = ot_in_at(r, "WeightList", 2 * cells + 2 * c)->v;
      const double *bhh = ot_in_at(r, "WeightList", 2 * cells + 2 * c + 1)->v;
      for (int64_t n = 0; n < N; n++) {
        int64_t len = sl ? (int64_t)sl->v[n] : T;
        double h[RH], cc[RH], u[4 * RH], v[4 * RH];
        for (int64_t j = 0; j < H; j++) {
          h[j] = ot_in_at(r, "PreState", 0)->v[(c * N + n) * H + j];
          cc[j] = lstm ? ot_in_at(r, "PreState", 1)->v[(c * N + n) * H + j] : 0;
        }
        for (int64_t t = 0; t < T; t++)
          for (int64_t j = 0; j < H; j++) y[t][n][d * H + j] = 0;
        for (int64_t k = 0; k < len; k++) {
          int64_t t = d ? len - 1 - k : k;
          for (int64_t q = 0; q < G * H; q++) {
            u[q] = bih[q];
            v[q] = bhh[q];
            for (int64_t i = 0; i < nin; i++)
              u[q] += lp_round(lp, wih[q * nin + i]) * lp_round(lp, in[t][n][i]);
            for (int64_t i = 0; i < H; i++) v[q] += lp_round(lp, whh[q * H + i]) * lp_round(lp, h[i]);
          }
          for (int64_t j = 0; j < H; j++) {
            double a = u[j] + v[j];
            if (lstm) {
              double g = tanh(u[2 * H + j] + v[2 * H + j]);
              cc[j] = sigm(u[H + j] + v[H + j]) * cc[j] + sigm(a) * g;
              y[t][n][d * H + j] = sigm(u[3 * H + j] + v[3 * H + j]) * tanh(cc[j]);
            } else if (gru) {
              double z = sigm(u[H + j] + v[H + j]);
              double nn = tanh(u[2 * H + j] + sigm(a) * v[2 * H + j]);
              y[t][n][d * H + j] = (1 - z) * nn + z * h[j];
            } else {
              y[t][n][d * H + j] = !strcmp(mode, "RNN_TANH") ? tanh(a) : a > 0 ? a : 0;
            }
          }
          for (int64_t j = 0; j < H; j++) h[j] = y[t][n][d * H + j];
        }
        for (int64_t j = 0; j < H; j++) {
          hT[(c * N + n) * H + j] = h[j];
          if (lstm) cT[(c * N + n) * H + j] = cc[j];
        }
      }
    }
    for (int64_t t = 0; t < T; t++)
      for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < D * H; i++) in[t][n][i] = y[t][n][i];
  }
  for (int64_t t = 0; t < T; t++)
    for (int64_t n = 0; n < N; n++)
      for (int64_t i = 0; i < D * H; i++) out[(t * N + n) * D * H + i] = in[t][n][i];
}

/* ---------------------------------------------------------------- the rows */

/* Input [T 3, N 2, I 3] (N 3 with three lengths); hidden 2. The weights of a cell (layer input
 * `in` columns, gh = G H rows), then the biases of a cell, as WeightList orders them: every
 * cell's weight_ih and weight_hh, then every cell's bias_ih and bias_hh. */
#define X_IN(n) {"Input", "[3, " n ", 3]", .lo = -1.5, .hi = 1.5}
#define STATE(cells, n) {"PreState", "[" cells ", " n ", 2]"}
#define WCELL(gh, in) {"WeightList", "[" gh ", " in "]"}, {"WeightList", "[" gh ", 2]"}
#define BCELL(gh) {"WeightList", "[" gh "]"}, {"WeightList", "[" gh "]"}
/* One layer, one direction; two layers; one layer both ways; two layers both ways (the second
 * layer reads both directions' hidden states: 4 columns). */
#define W_1(gh) WCELL(gh, "3"), BCELL(gh)
#define W_2L(gh) WCELL(gh, "3"), WCELL(gh, "2"), BCELL(gh), BCELL(gh)
#define W_BI(gh) WCELL(gh, "3"), WCELL(gh, "3"), BCELL(gh), BCELL(gh)
#define W_2BI(gh)                                                                             \
  WCELL(gh, "3"), WCELL(gh, "3"), WCELL(gh, "4"), WCELL(gh, "4"), BCELL(gh), BCELL(gh),       \
      BCELL(gh), BCELL(gh)
/* Lengths 1 and 3 of T 3 (the longer second); 2, 0 and 3. */
#define LEN_2 {"SequenceLength", "[2]", OT_I32, .v = (const double[]){1, 3}}
#define LEN_3 {"SequenceLength", "[3]", OT_I32, .v = (const double[]){2, 0, 3}}
#define RNN_ATTRS(mode, more) "mode=" mode " input_size=3 hidden_size=2 " more
#define LSTM_OUTS .outs = "Out Reserve State:2", .loss = "Out State"
#define OUTS .outs = "Out Reserve State", .loss = "Out State"

const ot_row ot_rows_rnn[] = {
    {.op = "rnn", .what = "LSTM", .attrs = RNN_ATTRS("LSTM", ""),
     .in = {X_IN("2"), STATE("1", "2"), STATE("1", "2"), W_1("8")}, LSTM_OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "LSTM, two layers", .attrs = RNN_ATTRS("LSTM", "num_layers=2"),
     .in = {X_IN("2"), STATE("2", "2"), STATE("2", "2"), W_2L("8")}, LSTM_OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "LSTM, bidirectional", .attrs = RNN_ATTRS("LSTM", "is_bidirec=true"),
     .in = {X_IN("2"), STATE("2", "2"), STATE("2", "2"), W_BI("8")}, LSTM_OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "LSTM, bidirectional, lengths",
     .attrs = RNN_ATTRS("LSTM", "is_bidirec=true"),
     .in = {X_IN("2"), STATE("2", "2"), STATE("2", "2"), W_BI("8"), LEN_2}, LSTM_OUTS,
     .ref = ref_rnn},
    {.op = "rnn", .what = "LSTM, two layers, lengths with 0",
     .attrs = RNN_ATTRS("LSTM", "num_layers=2"),
     .in = {X_IN("3"), STATE("2", "3"), STATE("2", "3"), W_2L("8"), LEN_3}, LSTM_OUTS,
     .ref = ref_rnn},
    {.op = "rnn", .what = "LSTM, two layers, bidirectional, lengths",
     .attrs = RNN_ATTRS("LSTM", "num_layers=2 is_bidirec=true"),
     .in = {X_IN("2"), STATE("4", "2"), STATE("4", "2"), W_2BI("8"), LEN_2}, LSTM_OUTS,
     .ref = ref_rnn},

    {.op = "rnn", .what = "LSTM, two layers, bidirectional, bf16 products (amp)",
     .attrs = RNN_ATTRS("LSTM", "num_layers=2 is_bidirec=true mkldnn_data_type=bfloat16"),
     .in = {X_IN("2"), STATE("4", "2"), STATE("4", "2"), W_2BI("8")}, LSTM_OUTS,
     .ref = ref_rnn, .tol = 1e-4},
    {.op = "rnn", .what = "GRU, fp16 products (amp)",
     .attrs = RNN_ATTRS("GRU", "mkldnn_data_type=float16"),
     .in = {X_IN("2"), STATE("1", "2"), W_1("6")}, OUTS, .ref = ref_rnn, .tol = 1e-4},
    {.op = "rnn", .what = "GRU", .attrs = RNN_ATTRS("GRU", ""),
     .in = {X_IN("2"), STATE("1", "2"), W_1("6")}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "GRU, two layers", .attrs = RNN_ATTRS("GRU", "num_layers=2"),
     .in = {X_IN("2"), STATE("2", "2"), W_2L("6")}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "GRU, bidirectional, lengths",
     .attrs = RNN_ATTRS("GRU", "is_bidirec=true"),
     .in = {X_IN("2"), STATE("2", "2"), W_BI("6"), LEN_2}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "GRU, two layers, lengths with 0",
     .attrs = RNN_ATTRS("GRU", "num_layers=2"),
     .in = {X_IN("3"), STATE("2", "3"), W_2L("6"), LEN_3}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "GRU, two layers, bidirectional, lengths with 0",
     .attrs = RNN_ATTRS("GRU", "num_layers=2 is_bidirec=true"),
     .in = {X_IN("3"), STATE("4", "3"), W_2BI("6"), LEN_3}, OUTS, .ref = ref_rnn},

    {.op = "rnn", .what = "RNN_TANH", .attrs = RNN_ATTRS("RNN_TANH", ""),
     .in = {X_IN("2"), STATE("1", "2"), W_1("2")}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "RNN_TANH, two layers, lengths",
     .attrs = RNN_ATTRS("RNN_TANH", "num_layers=2"),
     .in = {X_IN("2"), STATE("2", "2"), W_2L("2"), LEN_2}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "RNN_TANH, bidirectional, lengths with 0",
     .attrs = RNN_ATTRS("RNN_TANH", "is_bidirec=true"),
     .in = {X_IN("3"), STATE("2", "3"), W_BI("2"), LEN_3}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "RNN_TANH, two layers, bidirectional",
     .attrs = RNN_ATTRS("RNN_TANH", "num_layers=2 is_bidirec=true"),
     .in = {X_IN("2"), STATE("4", "2"), W_2BI("2")}, OUTS, .ref = ref_rnn},

    /* relu: the pre-activations are random, none within the check's step of 0. */
    {.op = "rnn", .what = "RNN_RELU", .attrs = RNN_ATTRS("RNN_RELU", ""),
     .in = {X_IN("2"), STATE("1", "2"), W_1("2")}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "RNN_RELU, bidirectional, lengths",
     .attrs = RNN_ATTRS("RNN_RELU", "is_bidirec=true"),
     .in = {X_IN("2"), STATE("2", "2"), W_BI("2"), LEN_2}, OUTS, .ref = ref_rnn},
    {.op = "rnn", .what = "RNN_RELU, two layers", .attrs = RNN_ATTRS("RNN_RELU", "num_layers=2"),
     .in = {X_IN("2"), STATE("2", "2"), W_2L("2")}, OUTS, .ref = ref_rnn},
    {0},
};
