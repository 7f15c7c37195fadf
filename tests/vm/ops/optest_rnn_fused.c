/* optest_rnn_fused.c -- the op-test table's rows of vm/ops/rnn_fused.c (optest.h): fused_lstm and
 * fused_gru, pdlang's gated recurrences over a batch of sequences of different lengths (one of
 * them empty), forwards and reversed, with initial states per sequence, shared by all, or
 * absent; and Fluid's lstm (peepholes or not, other activations), lstmp (lstm with a recurrent
 * projection: clips, peepholes, reversed) and gru (origin_mode or not).
 * The references run each sequence on its own from the equations of vm/oplist.h and
 * vm/ops/rnn_fused.c: Input holds each row's input projection (the gates' columns side by
 * side), the recurrent product is h Weight (a row times [H, G H]); under amp's mark
 * (mkldnn_data_type) its operands rounded to bf16 or fp16 in the fp32 pass. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

enum { MAX_H = 8 };

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* v rounded to lp (PD_BF16, PD_FP16) through fp32; lp 0: v. */
static double lp_round(pd_dtype lp, double v) {
  return lp == PD_BF16 ? pd_bf16_round((float)v) : lp == PD_FP16 ? pd_fp16_round((float)v) : v;
}

/* Initial state j of sequence s: the slot's row s ([sequences, H]), its one row ([H]), or 0. */
static double init_state(const ot_val *v, int64_t s, int64_t j, int64_t H) {
  if (!v) return 0;
  return v->nd == 1 ? v->v[j] : v->v[s * H + j];
}

/* Per step of a sequence (from its last row back with is_reverse), with x the row of Input and
 * p = h Weight (+ Bias for the GRU):
 *   LSTM  i, f, g, o = s(x_i + p_i), s(x_f + p_f), tanh(x_g + p_g), s(x_o + p_o);
 *         c' = f c + i g, h' = o tanh(c'); BatchGate keeps i, f, g, o.
 *   GRU   r, z = s(x_r + p_r), s(x_z + p_z); n = tanh(x_n + r p_n); h' = (1 - z) n + z h;
 *         BatchGate keeps r, z, n, p_n.
 * Hidden (and Cell) [T, H] hold each row's new state, in Input's row order. */
static void ref_fused(ot_ref *r) {
  bool lstm = !strcmp(ot_op(r), "fused_lstm");
  /* under mixed precision (the amp pass's mark; fp32 tensors only) h and Weight are rounded to
   * bf16 or fp16 in the recurrent product */
  pd_dtype lp = ot_amp(r);
  const ot_val *x = ot_in(r, "Input"), *w = ot_in(r, "Weight"), *b = ot_in(r, "Bias");
  const ot_val *h0 = ot_in(r, "H0"), *c0 = ot_in(r, "C0");
  int64_t H = w->dims[0], G = (lstm ? 4 : 3) * H, T = x->dims[0];
  int64_t dh[2] = {T, H}, dg[2] = {T, 4 * H};
  double *hid = ot_out(r, "Hidden", 2, dh), *cell = lstm ? ot_out(r, "Cell", 2, dh) : NULL;
  double *gate = ot_out(r, "BatchGate", 2, dg);
  bool rev = ot_bool(r, "is_reverse");
  for (int s = 0; s + 1 < x->nlod; s++) {
    int64_t len = x->lod[s + 1] - x->lod[s];
    double h[MAX_H], c[MAX_H], p[4 * MAX_H];
    for (int64_t j = 0; j < H; j++) {
      h[j] = init_state(h0, s, j, H);
      c[j] = init_state(c0, s, j, H);
    }
    for (int64_t k = 0; k < len; k++) {
      int64_t row = x->lod[s] + (rev ? len - 1 - k : k);
      const double *xr = x->v + row * G;
      double *gr = gate + row * 4 * H;
      for (int64_t q = 0; q < G; q++) {
        p[q] = b ? b->v[q] : 0;
        for (int64_t i = 0; i < H; i++)
          p[q] += lp_round(lp, h[i]) * lp_round(lp, w->v[i * G + q]);
      }
      for (int64_t j = 0; j < H; j++) {
        if (lstm) {
          gr[j] = sigm(xr[j] + p[j]);
          gr[H + j] = sigm(xr[H + j] + p[H + j]);
          gr[2 * H + j] = tanh(xr[2 * H + j] + p[2 * H + j]);
          gr[3 * H + j] = sigm(xr[3 * H + j] + p[3 * H + j]);
          c[j] = gr[H + j] * c[j] + gr[j] * gr[2 * H + j];
          cell[row * H + j] = c[j];
          hid[row * H + j] = gr[3 * H + j] * tanh(c[j]);
        } else {
          gr[j] = sigm(xr[j] + p[j]);
          gr[H + j] = sigm(xr[H + j] + p[H + j]);
          gr[2 * H + j] = tanh(xr[2 * H + j] + gr[j] * p[2 * H + j]);
          gr[3 * H + j] = p[2 * H + j];
          hid[row * H + j] = (1 - gr[H + j]) * gr[2 * H + j] + gr[H + j] * h[j];
        }
      }
      for (int64_t j = 0; j < H; j++) h[j] = hid[row * H + j];
    }
  }
}

/* ---------------------------------------------------------------- Fluid's lstm and gru */

static double act(const char *name, double v) {
  if (!strcmp(name, "sigmoid")) return sigm(v);
  if (!strcmp(name, "tanh")) return tanh(v);
  if (!strcmp(name, "relu")) return v > 0 ? v : 0;
  return v;
}

/* Fluid's lstm, each sequence on its own (from its last row back with is_reverse); x the row
 * of Input plus Bias's first 4H (c~, i, f, o), p = h Weight, peepholes Bias[4H..7H]:
 *   c~ = cand(x_c + p_c), i = gate(x_i + p_i + W_ic c), f = gate(x_f + p_f + W_fc c),
 *   c' = f c + i c~, o = gate(x_o + p_o + W_oc c'), h' = o cell(c').
 * Fluid's gru, x the row plus Bias (u, r, c), Weight's memory W_ur [H, 2H] then W_c [H, H]:
 *   u, r = gate(x_u + (h W_ur)_u), gate(x_r + (h W_ur)_r), c = act(x_c + (r h) W_c),
 *   h' = u c + (1 - u) h (origin_mode: u h + (1 - u) c). */
static void ref_fluid(ot_ref *r) {
  bool lstm = !strcmp(ot_op(r), "lstm");
  const ot_val *x = ot_in(r, "Input"), *w = ot_in(r, "Weight"), *b = ot_in(r, "Bias");
  const ot_val *h0 = ot_in(r, "H0"), *c0 = ot_in(r, "C0");
  int64_t H = w->dims[0], G = (lstm ? 4 : 3) * H, T = x->dims[0];
  int64_t dh[2] = {T, H}, dg[2] = {T, G};
  double *hid = ot_out(r, "Hidden", 2, dh), *gate = ot_out(r, "BatchGate", 2, dg);
  double *cell = lstm ? ot_out(r, "Cell", 2, dh) : NULL;
  double *pre = lstm ? ot_out(r, "BatchCellPreAct", 2, dh) : NULL;
  double *rhp = lstm ? NULL : ot_out(r, "BatchResetHiddenPrev", 2, dh);
  double *bh = lstm ? NULL : ot_out(r, "BatchHidden", 2, dh);
  bool rev = ot_bool(r, "is_reverse"), peep = lstm && ot_bool(r, "use_peepholes");
  bool origin = !lstm && ot_bool(r, "origin_mode");
  const char *ga = ot_str(r, "gate_activation");
  const char *ca = lstm ? ot_str(r, "cell_activation") : ot_str(r, "activation");
  const char *na = lstm ? ot_str(r, "candidate_activation") : NULL;
  for (int s = 0; s + 1 < x->nlod; s++) {
    int64_t len = x->lod[s + 1] - x->lod[s];
    double h[MAX_H], c[MAX_H], g[4 * MAX_H], rh[MAX_H];
    for (int64_t j = 0; j < H; j++) {
      h[j] = init_state(h0, s, j, H);
      c[j] = init_state(c0, s, j, H);
    }
    for (int64_t k = 0; k < len; k++) {
      int64_t row = x->lod[s] + (rev ? len - 1 - k : k);
      for (int64_t q = 0; q < G; q++) g[q] = x->v[row * G + q] + (b ? b->v[q] : 0);
      double *gr = gate + row * G;
      if (lstm) {
        for (int64_t q = 0; q < G; q++)
          for (int64_t i = 0; i < H; i++) g[q] += h[i] * w->v[i * G + q];
        for (int64_t j = 0; j < H; j++) {
          gr[j] = act(na, g[j]);
          gr[H + j] = act(ga, g[H + j] + (peep ? b->v[4 * H + j] * c[j] : 0));
          gr[2 * H + j] = act(ga, g[2 * H + j] + (peep ? b->v[5 * H + j] * c[j] : 0));
          c[j] = gr[2 * H + j] * c[j] + gr[H + j] * gr[j];
          gr[3 * H + j] = act(ga, g[3 * H + j] + (peep ? b->v[6 * H + j] * c[j] : 0));
          cell[row * H + j] = c[j];
          pre[row * H + j] = act(ca, c[j]);
          hid[row * H + j] = gr[3 * H + j] * act(ca, c[j]);
        }
      } else {
        for (int64_t q = 0; q < 2 * H; q++)
          for (int64_t i = 0; i < H; i++) g[q] += h[i] * w->v[i * 2 * H + q];
        for (int64_t j = 0; j < H; j++) {
          gr[j] = act(ga, g[j]);
          gr[H + j] = act(ga, g[H + j]);
          rh[j] = rhp[row * H + j] = gr[H + j] * h[j];
        }
        for (int64_t j = 0; j < H; j++) {
          double v = g[2 * H + j];
          for (int64_t i = 0; i < H; i++) v += rh[i] * w->v[2 * H * H + i * H + j];
          double u = gr[j], cand = gr[2 * H + j] = act(ca, v);
          hid[row * H + j] = bh[row * H + j] = origin ? u * h[j] + (1 - u) * cand
                                                      : u * cand + (1 - u) * h[j];
        }
      }
      for (int64_t j = 0; j < H; j++) h[j] = hid[row * H + j];
    }
  }
}

/* Fluid's lstmp, each sequence on its own: Fluid's lstm where the state multiplied by Weight
 * [P, 4H] is the projection r = clip(act_p(h ProjWeight), proj_clip) of h (H0 is r's initial
 * value, [sequences, P] or [P]), the cell c' = clip(f c + i c~, cell_clip) before o and h
 * (clip(v, m) bounds v to [-m, m] when m > 0); act_p is cell_activation unless proj_activation
 * is identity (what PaddlePaddle's lstmp kernel computes). OrderedP0: H0's rows (zeros without
 * it) in the order of the sequences by length, longest first, ties in index order. */
static double clip_to(double v, double m) {
  return m > 0 ? (v < -m ? -m : v > m ? m : v) : v;
}

static void ref_lstmp(ot_ref *r) {
  const ot_val *x = ot_in(r, "Input"), *w = ot_in(r, "Weight"), *b = ot_in(r, "Bias");
  const ot_val *pw = ot_in(r, "ProjWeight"), *h0 = ot_in(r, "H0"), *c0 = ot_in(r, "C0");
  int64_t H = pw->dims[0], P = pw->dims[1], G = 4 * H, T = x->dims[0], N = x->nlod - 1;
  int64_t dh[2] = {T, H}, dp[2] = {T, P}, dg[2] = {T, G}, d0[2] = {N, P};
  double *proj = ot_out(r, "Projection", 2, dp), *gate = ot_out(r, "BatchGate", 2, dg);
  double *cell = ot_out(r, "Cell", 2, dh), *pre = ot_out(r, "BatchCellPreAct", 2, dh);
  double *bh = ot_out(r, "BatchHidden", 2, dh), *op0 = ot_out(r, "OrderedP0", 2, d0);
  bool rev = ot_bool(r, "is_reverse"), peep = ot_bool(r, "use_peepholes");
  const char *ga = ot_str(r, "gate_activation"), *ca = ot_str(r, "cell_activation");
  const char *na = ot_str(r, "candidate_activation");
  const char *pa = !strcmp(ot_str(r, "proj_activation"), "identity") ? "identity" : ca;
  double cclip = ot_float(r, "cell_clip"), pclip = ot_float(r, "proj_clip");
  /* OrderedP0: a selection sort by length, longest first, the lower index first on ties */
  bool used[MAX_H] = {0};
  for (int64_t q = 0; q < N; q++) {
    int64_t best = -1;
    for (int64_t s = 0; s < N; s++)
      if (!used[s] && (best < 0 || x->lod[s + 1] - x->lod[s] > x->lod[best + 1] - x->lod[best]))
        best = s;
    used[best] = true;
    for (int64_t j = 0; j < P; j++) op0[q * P + j] = init_state(h0, best, j, P);
  }
  for (int s = 0; s < N; s++) {
    int64_t len = x->lod[s + 1] - x->lod[s];
    double rs[MAX_H], c[MAX_H], g[4 * MAX_H], h[MAX_H];
    for (int64_t j = 0; j < P; j++) rs[j] = init_state(h0, s, j, P);
    for (int64_t j = 0; j < H; j++) c[j] = init_state(c0, s, j, H);
    for (int64_t k = 0; k < len; k++) {
      int64_t row = x->lod[s] + (rev ? len - 1 - k : k);
      double *gr = gate + row * G;
      for (int64_t q = 0; q < G; q++) {
        g[q] = x->v[row * G + q] + b->v[q];
        for (int64_t i = 0; i < P; i++) g[q] += rs[i] * w->v[i * G + q];
      }
      for (int64_t j = 0; j < H; j++) {
        gr[j] = act(na, g[j]);
        gr[H + j] = act(ga, g[H + j] + (peep ? b->v[4 * H + j] * c[j] : 0));
        gr[2 * H + j] = act(ga, g[2 * H + j] + (peep ? b->v[5 * H + j] * c[j] : 0));
        c[j] = clip_to(gr[2 * H + j] * c[j] + gr[H + j] * gr[j], cclip);
        gr[3 * H + j] = act(ga, g[3 * H + j] + (peep ? b->v[6 * H + j] * c[j] : 0));
        cell[row * H + j] = c[j];
        pre[row * H + j] = act(ca, c[j]);
        h[j] = bh[row * H + j] = gr[3 * H + j] * act(ca, c[j]);
      }
      for (int64_t q = 0; q < P; q++) {
        double v = 0;
        for (int64_t i = 0; i < H; i++) v += h[i] * pw->v[i * P + q];
        rs[q] = proj[row * P + q] = clip_to(act(pa, v), pclip);
      }
    }
  }
}

/* ---------------------------------------------------------------- the rows */

/* Hidden 3; four sequences of 2, 0, 3 and 1 rows (six rows), or one of four. */
#define SEQS .lod = (const int64_t[]){0, 2, 2, 5, 6}, .nlod = 5
#define ONE_SEQ .lod = (const int64_t[]){0, 4}, .nlod = 2
/* Inputs in [-1.5, 1.5): the gates neither saturate nor stay linear. */
#define INPUT(shape, lod) {"Input", shape, .lo = -1.5, .hi = 1.5, lod}

const ot_row ot_rows_rnn_fused[] = {
    {.op = "fused_lstm", .what = "H0 and C0 per sequence",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[4, 3]"}, {"C0", "[4, 3]"}, {"Weight", "[3, 12]"}},
     .loss = "Hidden Cell", .ref = ref_fused},
    {.op = "fused_lstm", .what = "no initial states",
     .in = {INPUT("[6, 12]", SEQS), {"Weight", "[3, 12]"}}, .loss = "Hidden Cell",
     .ref = ref_fused},
    {.op = "fused_lstm", .what = "is_reverse, shared H0 and C0", .attrs = "is_reverse=true",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[3]"}, {"C0", "[3]"}, {"Weight", "[3, 12]"}},
     .loss = "Hidden Cell", .ref = ref_fused},
    {.op = "fused_lstm", .what = "one sequence, reversed, H0 only", .attrs = "is_reverse=true",
     .in = {INPUT("[4, 8]", ONE_SEQ), {"H0", "[1, 2]"}, {"Weight", "[2, 8]"}},
     .loss = "Hidden Cell", .ref = ref_fused},
    /* Hidden alone weighs the last step's cell only through the output gate. */
    {.op = "fused_lstm", .what = "through Hidden only",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[4, 3]"}, {"C0", "[4, 3]"}, {"Weight", "[3, 12]"}},
     .ref = ref_fused},

    /* Under amp (vm/passes/amp.h marks them): the recurrent product's operands rounded. */
    {.op = "fused_lstm", .what = "bf16 products (amp)", .attrs = "mkldnn_data_type=bfloat16",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[4, 3]"}, {"C0", "[4, 3]"}, {"Weight", "[3, 12]"}},
     .loss = "Hidden Cell", .ref = ref_fused, .tol = 1e-4},

    {.op = "fused_gru", .what = "H0 per sequence",
     .in = {INPUT("[6, 9]", SEQS), {"H0", "[4, 3]"}, {"Weight", "[3, 9]"}, {"Bias", "[9]"}},
     .ref = ref_fused},
    {.op = "fused_gru", .what = "no H0",
     .in = {INPUT("[6, 9]", SEQS), {"Weight", "[3, 9]"}, {"Bias", "[9]"}}, .ref = ref_fused},
    {.op = "fused_gru", .what = "is_reverse, shared H0", .attrs = "is_reverse=true",
     .in = {INPUT("[6, 9]", SEQS), {"H0", "[3]"}, {"Weight", "[3, 9]"}, {"Bias", "[9]"}},
     .ref = ref_fused},
    {.op = "fused_gru", .what = "fp16 products (amp)", .attrs = "mkldnn_data_type=float16",
     .in = {INPUT("[6, 9]", SEQS), {"H0", "[4, 3]"}, {"Weight", "[3, 9]"}, {"Bias", "[9]"}},
     .ref = ref_fused, .tol = 1e-4},
    {.op = "fused_gru", .what = "one sequence, reversed", .attrs = "is_reverse=true",
     .in = {INPUT("[4, 6]", ONE_SEQ), {"H0", "[1, 2]"}, {"Weight", "[2, 6]"}, {"Bias", "[6]"}},
     .ref = ref_fused},

    /* Fluid's lstm: Bias [1, 7 H] with the peepholes (the default), [1, 4 H] without. */
    {.op = "lstm", .what = "peepholes, H0 and C0",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[4, 3]"}, {"C0", "[4, 3]"}, {"Weight", "[3, 12]"},
            {"Bias", "[1, 21]"}},
     .loss = "Hidden Cell", .ref = ref_fluid},
    {.op = "lstm", .what = "no peepholes, no initial states", .attrs = "use_peepholes=false",
     .in = {INPUT("[6, 12]", SEQS), {"Weight", "[3, 12]"}, {"Bias", "[1, 12]"}},
     .loss = "Hidden Cell", .ref = ref_fluid},
    {.op = "lstm", .what = "is_reverse, peepholes", .attrs = "is_reverse=true",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[4, 3]"}, {"C0", "[4, 3]"}, {"Weight", "[3, 12]"},
            {"Bias", "[1, 21]"}},
     .ref = ref_fluid},
    {.op = "lstm", .what = "other activations",
     .attrs = "gate_activation=tanh cell_activation=identity candidate_activation=sigmoid",
     .in = {INPUT("[6, 8]", SEQS), {"H0", "[4, 2]"}, {"C0", "[4, 2]"}, {"Weight", "[2, 8]"},
            {"Bias", "[1, 14]"}},
     .loss = "Hidden Cell", .ref = ref_fluid},
    /* relu's kink: only its forward values (a finite difference across it would not agree). */
    {.op = "lstm", .what = "relu cell activation", .attrs = "cell_activation=relu",
     .in = {INPUT("[6, 8]", SEQS), {"Weight", "[2, 8]"}, {"Bias", "[1, 14]"}}, .no_grad = true,
     .ref = ref_fluid},

    /* Fluid's lstmp: H 3, P 2: ProjWeight [3, 2], Weight [2, 12]; the gradient check weighs
     * Projection and Cell (Paddle's own lstmp_grad ignores Cell's gradient; the math does not). */
    {.op = "lstmp", .what = "peepholes, H0 and C0 per sequence",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[4, 2]"}, {"C0", "[4, 3]"}, {"Weight", "[2, 12]"},
            {"ProjWeight", "[3, 2]"}, {"Bias", "[1, 21]"}},
     .loss = "Projection Cell", .ref = ref_lstmp},
    {.op = "lstmp", .what = "no peepholes, no initial states, identity projection",
     .attrs = "use_peepholes=false proj_activation=identity",
     .in = {INPUT("[6, 12]", SEQS), {"Weight", "[2, 12]"}, {"ProjWeight", "[3, 2]"},
            {"Bias", "[1, 12]"}},
     .loss = "Projection Cell", .ref = ref_lstmp},
    {.op = "lstmp", .what = "is_reverse, shared H0 and C0", .attrs = "is_reverse=true",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[2]"}, {"C0", "[3]"}, {"Weight", "[2, 12]"},
            {"ProjWeight", "[3, 2]"}, {"Bias", "[1, 21]"}},
     .loss = "Projection Cell", .ref = ref_lstmp},
    /* Bounds that clip some values and not others (none lies near a bound: the finite
     * difference agrees). */
    {.op = "lstmp", .what = "cell_clip and proj_clip", .attrs = "cell_clip=0.3 proj_clip=0.15",
     .in = {INPUT("[6, 12]", SEQS), {"H0", "[4, 2]"}, {"C0", "[4, 3]"}, {"Weight", "[2, 12]"},
            {"ProjWeight", "[3, 2]"}, {"Bias", "[1, 21]"}},
     .loss = "Projection Cell", .ref = ref_lstmp},
    /* proj_activation other than identity means cell_activation (Paddle's kernel). */
    {.op = "lstmp", .what = "other activations, P wider than H, reversed",
     .attrs = "is_reverse=true gate_activation=tanh cell_activation=sigmoid "
              "candidate_activation=identity proj_activation=relu",
     .in = {INPUT("[4, 8]", ONE_SEQ), {"H0", "[1, 3]"}, {"C0", "[1, 2]"}, {"Weight", "[3, 8]"},
            {"ProjWeight", "[2, 3]"}, {"Bias", "[1, 14]"}},
     .loss = "Projection", .ref = ref_lstmp},

    /* Fluid's gru: Weight's memory W_ur [H, 2 H] then W_c [H, H]. */
    {.op = "gru", .what = "H0, Bias",
     .in = {INPUT("[6, 9]", SEQS), {"H0", "[4, 3]"}, {"Weight", "[3, 9]"}, {"Bias", "[1, 9]"}},
     .loss = "Hidden", .ref = ref_fluid},
    {.op = "gru", .what = "origin_mode, no H0", .attrs = "origin_mode=true",
     .in = {INPUT("[6, 9]", SEQS), {"Weight", "[3, 9]"}, {"Bias", "[1, 9]"}}, .loss = "Hidden",
     .ref = ref_fluid},
    {.op = "gru", .what = "is_reverse, origin_mode, no Bias",
     .attrs = "is_reverse=true origin_mode=true",
     .in = {INPUT("[6, 9]", SEQS), {"H0", "[4, 3]"}, {"Weight", "[3, 9]"}}, .loss = "Hidden",
     .ref = ref_fluid},
    {.op = "gru", .what = "is_reverse, sigmoid candidate, one sequence",
     .attrs = "is_reverse=true activation=sigmoid gate_activation=tanh",
     .in = {INPUT("[4, 6]", ONE_SEQ), {"H0", "[1, 2]"}, {"Weight", "[2, 6]"}, {"Bias", "[1, 6]"}},
     .loss = "Hidden", .ref = ref_fluid},
    {0},
};
