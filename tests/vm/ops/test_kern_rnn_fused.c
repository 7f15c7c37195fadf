/* test_kern_rnn_fused.c -- the fused gated recurrences of vm/ops/rnn_fused.c, fused_lstm and
 * fused_gru, run as single ops: hidden 3, on six rows as four sequences of lengths 2, 0, 3 and 1
 * (one empty; the steps then run fewer sequences) and as one of length 6, forwards and reversed,
 * with the initial states per sequence, shared, or absent. Checked: Hidden (and Cell, and the
 * kept activations) against a reference written here from the equations (LSTM i, f, g, o: c' =
 * f c + i g, h' = o tanh(c'); GRU r, z, n: n = tanh(u_n + r (h W_hn + b_hn)), h' = (1 - z) n +
 * z h), the LoD, every input's gradient against finite differences (through Hidden and Cell),
 * fp32 values, and the errors of bad shapes; the values and gradients both through the CPU
 * backend's whole-sequence kernels and step by step (kernels/rnn_steps.c, what the CUDA backend
 * runs, over the CPU's entries). */
#include "config.h"

#include <math.h>

#include "tests/kernels/steps_backend.h"
#include "tests/vm/ops/test_kern_math.h"

enum { H = 3, ROWS = 6 };

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* The reference over the batch (u [ROWS, G H] already projected): hs, cs [ROWS, H] (cs: LSTM). */
static void reference(bool lstm, bool rev, const double *u, const int64_t *off, int nseq,
                      const double *h0, const double *c0, bool shared, const double *w,
                      const double *b, double *hs, double *cs) {
  const int G = (lstm ? 4 : 3) * H;
  for (int s = 0; s < nseq; s++) {
    double h[H], c[H];
    for (int j = 0; j < H; j++) {
      h[j] = h0 ? h0[(shared ? 0 : s * H) + j] : 0;
      c[j] = c0 ? c0[(shared ? 0 : s * H) + j] : 0;
    }
    int64_t len = off[s + 1] - off[s];
    for (int64_t k = 0; k < len; k++) {
      int64_t row = off[s] + (rev ? len - 1 - k : k);
      double p[4 * H];
      for (int q = 0; q < G; q++) {
        p[q] = lstm ? 0 : b[q];
        for (int i = 0; i < H; i++) p[q] += h[i] * w[i * G + q];
      }
      const double *x = u + row * G;
      for (int j = 0; j < H; j++) {
        if (lstm) {
          double ig = sigm(x[j] + p[j]), fg = sigm(x[H + j] + p[H + j]);
          double gg = tanh(x[2 * H + j] + p[2 * H + j]), og = sigm(x[3 * H + j] + p[3 * H + j]);
          c[j] = fg * c[j] + ig * gg;
          hs[row * H + j] = og * tanh(c[j]);
          cs[row * H + j] = c[j];
        } else {
          double r = sigm(x[j] + p[j]), z = sigm(x[H + j] + p[H + j]);
          double n = tanh(x[2 * H + j] + r * p[2 * H + j]);
          hs[row * H + j] = (1 - z) * n + z * h[j];
        }
      }
      for (int j = 0; j < H; j++) h[j] = hs[row * H + j];
    }
  }
}

typedef struct layout {
  int nseq;
  int64_t off[5];
  const char *sshape, *name;
} layout;

static const layout lays[] = {{4, {0, 2, 2, 5, 6}, "[4, 3]", "lengths 2 0 3 1"},
                              {1, {0, 6}, "[1, 3]", "length 6"}};

static double u4[ROWS * 12], u3[ROWS * 9], w4[36], w3[27], b3[9], h0[12], c0[12];

/* One op on layout l: values against the reference (pass 0) or gradients (pass 1). */
static void one(bool lstm, const layout *l, bool rev, int mode) {
  const char *type = lstm ? "fused_lstm" : "fused_gru";
  char what[160];
  snprintf(what, sizeof what, "%s %s%s, states %s", type, l->name, rev ? " reversed" : "",
           mode == 0 ? "per sequence" : mode == 1 ? "shared" : "absent");
  double want_h[ROWS * H], want_c[ROWS * H];
  reference(lstm, rev, lstm ? u4 : u3, l->off, l->nseq, mode < 2 ? h0 : NULL,
            mode < 2 ? c0 : NULL, mode == 1, lstm ? w4 : w3, b3, want_h, want_c);
  for (int pass = 0; pass < 2; pass++) {
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "u", lstm ? "[6, 12]" : "[6, 9]", lstm ? u4 : u3);
    rt_lod(&r, "u", l->nseq + 1, l->off);
    rt_in_f64(&r, "w", lstm ? "[3, 12]" : "[3, 9]", lstm ? w4 : w3);
    if (!lstm) rt_in_f64(&r, "b", "[9]", b3);
    if (mode < 2) {
      rt_in_f64(&r, "h0", mode == 0 ? l->sshape : "[3]", h0);
      if (lstm) rt_in_f64(&r, "c0", mode == 0 ? l->sshape : "[3]", c0);
    }
    char ins[96];
    snprintf(ins, sizeof ins, "Input=u Weight=w%s%s", lstm ? "" : " Bias=b",
             mode == 2 ? "" : lstm ? " H0=h0 C0=c0" : " H0=h0");
    pd_op_desc *op = rt_op(&r, type, ins, lstm ? "Hidden=h Cell=c BatchGate=g"
                                               : "Hidden=h BatchGate=g");
    pd_op_set_attr_bool(op, "is_reverse", rev);
    if (pass == 1) {
      char wrt[64];
      snprintf(wrt, sizeof wrt, "Input Weight%s%s", lstm ? "" : " Bias",
               mode == 2 ? "" : lstm ? " H0 C0" : " H0");
      grad_check(&r, wrt, lstm ? "Hidden Cell" : "Hidden", what);
    } else if (rt_ok(&r, what)) {
      const pd_tensor *h = rt_get(&r, "h"), *g = rt_get(&r, "g");
      rt_expect(h, ROWS * H, want_h, 1e-13, what);
      if (lstm) rt_expect(rt_get(&r, "c"), ROWS * H, want_c, 1e-13, what);
      ok(h && h->nlod == 1 && h->lod[0].n == l->nseq + 1 && h->lod[0].offsets[1] == l->off[1] &&
             g && g->ndims == 2 && g->dims[0] == ROWS && g->dims[1] == 4 * H,
         "%s: Hidden has Input's LoD, BatchGate is [6, 12]", what);
    }
    rt_free(&r);
  }
}

/* The op with Input u of shape ushape and Weight wshape (H0 of h0shape when given) fails with a
 * shape error whose message holds part. */
static void fails(bool lstm, const char *ushape, bool lod, const char *wshape,
                  const char *h0shape, const char *part, const char *what) {
  double v[72];
  vals(v, 72, -1, 1, 9, false);
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "u", ushape, v);
  if (lod) rt_lod(&r, "u", 5, lays[0].off);
  else decl_lod(r.f.b, "u", PD_FP64, ushape, 1);
  rt_in_f64(&r, "w", wshape, v);
  rt_in_f64(&r, "b", "[9]", v);
  if (h0shape) rt_in_f64(&r, "h0", h0shape, v);
  char ins[64];
  snprintf(ins, sizeof ins, "Input=u Weight=w%s%s", lstm ? "" : " Bias=b", h0shape ? " H0=h0" : "");
  rt_op(&r, lstm ? "fused_lstm" : "fused_gru", ins,
        lstm ? "Hidden=h Cell=c BatchGate=g" : "Hidden=h BatchGate=g");
  rt_fails(&r, PD_ESHAPE, part, what);
  rt_free(&r);
}

int main(void) {
  pd_k_init();
  vals(u4, ROWS * 12, -1.5, 1.5, 1, false);
  vals(u3, ROWS * 9, -1.5, 1.5, 2, false);
  vals(w4, 36, -0.8, 0.8, 3, false);
  vals(w3, 27, -0.8, 0.8, 4, false);
  vals(b3, 9, -0.5, 0.5, 5, false);
  vals(h0, 12, -0.9, 0.9, 6, false);
  vals(c0, 12, -0.9, 0.9, 7, false);
  /* Twice: through the CPU backend's whole-sequence kernels, and through kernels/rnn_steps.c's
   * composition of its GEMM and cell entries (the CUDA backend's code, on the CPU). */
  for (int path = 0; path < 2; path++) {
    printf("# %s\n", path ? "step by step (kernels/rnn_steps.c, the GPU's code, on the CPU)"
                           : "whole sequences (the CPU backend's lstm_seq / gru_seq)");
    rt_default_host = path ? steps_backend() : NULL;
    for (int lstm = 0; lstm < 2; lstm++)
      for (size_t l = 0; l < PD_ARRAY_LEN(lays); l++)
        for (int rev = 0; rev < 2; rev++)
          for (int mode = 0; mode < 3; mode++) one(lstm, &lays[l], rev, mode);
  }
  rt_default_host = NULL;
  /* fp32: the same values within rounding. */
  for (int lstm = 0; lstm < 2; lstm++) {
    const char *what = lstm ? "fused_lstm fp32" : "fused_gru fp32";
    double want_h[ROWS * H], want_c[ROWS * H];
    reference(lstm, false, lstm ? u4 : u3, lays[0].off, 4, h0, c0, false, lstm ? w4 : w3, b3,
              want_h, want_c);
    float uf[ROWS * 12], wf[36], bf[9], hf[12], cf[12];
    to_f32(lstm ? u4 : u3, uf, ROWS * (lstm ? 12 : 9));
    to_f32(lstm ? w4 : w3, wf, lstm ? 36 : 27);
    to_f32(b3, bf, 9);
    to_f32(h0, hf, 12);
    to_f32(c0, cf, 12);
    rt r;
    rt_init(&r);
    rt_in_f32(&r, "u", lstm ? "[6, 12]" : "[6, 9]", uf);
    rt_lod(&r, "u", 5, lays[0].off);
    rt_in_f32(&r, "w", lstm ? "[3, 12]" : "[3, 9]", wf);
    rt_in_f32(&r, "b", "[9]", bf);
    rt_in_f32(&r, "h0", "[4, 3]", hf);
    rt_in_f32(&r, "c0", "[4, 3]", cf);
    rt_op(&r, lstm ? "fused_lstm" : "fused_gru",
          lstm ? "Input=u Weight=w H0=h0 C0=c0" : "Input=u Weight=w Bias=b H0=h0",
          lstm ? "Hidden=h Cell=c BatchGate=g" : "Hidden=h BatchGate=g");
    if (rt_ok(&r, what)) {
      rt_expect(rt_get(&r, "h"), ROWS * H, want_h, 1e-5, what);
      if (lstm) rt_expect(rt_get(&r, "c"), ROWS * H, want_c, 1e-5, what);
    }
    rt_free(&r);
  }
  /* Errors. */
  fails(true, "[6, 12]", true, "[3, 9]", NULL, "Weight must be [H, 4 H]",
        "fused_lstm: Weight [3, 9]");
  fails(true, "[6, 9]", true, "[3, 12]", NULL, "Input [T, 4 H]", "fused_lstm: Input [6, 9]");
  fails(false, "[6, 9]", true, "[3, 9]", "[3, 3]", "or [4, 3] (one per sequence)",
        "fused_gru: H0 [3, 3] for 4 sequences");
  fails(false, "[6, 9]", false, "[3, 9]", NULL, "one LoD level", "fused_gru: Input without LoD");
  fails(false, "[6, 9]", true, "[2, 9]", NULL, "Weight must be [H, 3 H]",
        "fused_gru: Weight [2, 9]");
  return tap_done();
}
