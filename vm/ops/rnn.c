/* rnn.c -- PaddlePaddle's `rnn` op, the one paddle.nn.LSTM / GRU / SimpleRNN write into a static
 * program: multi-layer, optionally bidirectional LSTM, GRU or Elman (tanh / relu) networks over a
 * padded, time-major batch with optional sequence lengths. Shape function, kernel and gradient
 * kernel, on the CPU and the GPU. LSTM and GRU run in Input's dtype through the backend's
 * whole-sequence kernels (kernels.h: lstm_seq, gru_seq and their gradients, the ones fused_lstm
 * and fused_gru use): per cell one GEMM for the input projection of every step, then the
 * recurrence in one call; every move of data a backend call at the op's place. RNN_TANH and
 * RNN_RELU compute in double on the host whatever the dtype and the place (a GPU run copies
 * their tensors there and back).
 *
 * Slots and weights as Paddle's: Input [T, N, I]; PreState the initial states, [L D, N, H] each
 * (h; for an LSTM h then c); WeightList, for each layer l and direction d in the order
 * (l, d), weight_ih [G H, in_l] and weight_hh [G H, H], then in the same order bias_ih and
 * bias_hh [G H] (G = 4 LSTM, 3 GRU, 1 RNN; in_0 = I, in_l = D H); SequenceLength (int32 [N],
 * optional). Per step, with x the layer's input row and h, c the states (PyTorch's equations,
 * Paddle's gate order):
 *   LSTM  i, f, g, o = x W_ih^T + b_ih + h W_hh^T + b_hh; c' = s(f) c + s(i) tanh(g);
 *         h' = s(o) tanh(c')
 *   GRU   r, z = s(x W_ir^T + b_ir + h W_hr^T + b_hr), ...; n = tanh(x W_in^T + b_in + r (h
 *         W_hn^T + b_hn)) (the reset applied after the product: cuDNN's form, which Paddle's
 *         rnn kernels compute); h' = (1 - z) n + z h
 *   RNN   h' = tanh or relu(x W_ih^T + b_ih + h W_hh^T + b_hh)
 * The reverse direction runs each sequence from T - 1 down to 0. A step at or past a sequence's
 * length leaves its states as they are and outputs zeros, so State holds each sequence's state
 * at its last valid step (its first, in reverse). Out [T, N, D H] (the directions side by side);
 * State like PreState. Reserve holds what the gradient reads (every step's states and gate
 * activations and each layer's output, in pdlang's own layout: Input's dtype for LSTM and GRU,
 * fp64 for RNN_TANH and RNN_RELU); DropoutState is left empty:
 * dropout between layers is not supported in training (dropout_prob must be 0 unless is_test). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

enum { RNN_LSTM, RNN_GRU, RNN_TANH, RNN_RELU };

static int mode_of(const char *m) {
  return !strcmp(m, "LSTM") ? RNN_LSTM : !strcmp(m, "GRU") ? RNN_GRU
                                       : !strcmp(m, "RNN_TANH") ? RNN_TANH
                                       : !strcmp(m, "RNN_RELU") ? RNN_RELU : -1;
}
static int gates_of(int mode) { return mode == RNN_LSTM ? 4 : mode == RNN_GRU ? 3 : 1; }

/* ================================================================ shape function */

pd_status pd_infer_rnn(pd_infer_ctx *c) {
  const pd_var_desc *x, *s;
  pd_infer_dims d, sd;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "Input", 0, &x, &d);
  if (st) return st;
  int mode = mode_of(pd_infer_attr_str(c, "mode"));
  int64_t hid = pd_infer_attr_int(c, "hidden_size"), layers = pd_infer_attr_int(c, "num_layers");
  int dirs = pd_infer_attr_bool(c, "is_bidirec") ? 2 : 1;
  if (mode < 0 || hid <= 0 || layers <= 0)
    return pd_infer_fail(c, PD_EINVAL, "mode must be LSTM, GRU, RNN_TANH or RNN_RELU, hidden_size "
                         "and num_layers positive; they are '%s', %lld, %lld",
                         pd_infer_attr_str(c, "mode"), (long long)hid, (long long)layers);
  if (d.n >= 0 && d.n != 3)
    return pd_infer_fail(c, PD_ESHAPE, "Input must be [T, N, input_size] (time-major); it is %s",
                         pd_infer_dims_str(&d, s1));
  int nstates = mode == RNN_LSTM ? 2 : 1;
  if (pd_infer_nin(c, "PreState") != nstates)
    return pd_infer_fail(c, PD_EINVAL, "PreState must hold %d tensor%s for mode %s; it holds %d",
                         nstates, nstates > 1 ? "s (h, c)" : " (h)", pd_infer_attr_str(c, "mode"),
                         pd_infer_nin(c, "PreState"));
  int nw = pd_infer_nin(c, "WeightList");
  if (nw != 4 * layers * dirs)
    return pd_infer_fail(c, PD_EINVAL, "WeightList must hold %lld tensors (weight_ih and weight_hh, "
                         "then the biases, of %lld layer%s by %d direction%s); it holds %d",
                         (long long)(4 * layers * dirs), (long long)layers, layers > 1 ? "s" : "",
                         dirs, dirs > 1 ? "s" : "", nw);
  for (int i = 0; i < nstates; i++) {
    if ((st = pd_infer_in(c, "PreState", i, &s, &sd))) return st;
    if (s->dtype != x->dtype ||
        (sd.n >= 0 && (sd.n != 3 || !pd_infer_dim_compatible(sd.d[0], layers * dirs) ||
                       !pd_infer_dim_compatible(sd.d[2], hid) ||
                       (d.n == 3 && !pd_infer_dim_compatible(sd.d[1], d.d[1])))))
      return pd_infer_fail(c, PD_ESHAPE, "PreState[%d] must be [%lld, N, %lld] (num_layers x "
                           "directions, the batch, hidden_size) with Input's dtype, Input being "
                           "%s; it is %s", i, (long long)(layers * dirs), (long long)hid,
                           pd_infer_dims_str(&d, s1), pd_infer_dims_str(&sd, s2));
    pd_infer_dims o = sd;
    if ((st = pd_infer_set_out(c, "State", i, &o, x->dtype, 0))) return st;
  }
  pd_infer_dims o = {.n = 3, .d = {d.n == 3 ? d.d[0] : -1, d.n == 3 ? d.d[1] : -1, dirs * hid}};
  if ((st = pd_infer_set_out(c, "Out", 0, &o, x->dtype, 0))) return st;
  pd_infer_dims r = {.n = 1, .d = {-1}};
  pd_dtype rdt = mode == RNN_LSTM || mode == RNN_GRU ? x->dtype : PD_FP64;
  if (pd_infer_nout(c, "Reserve") > 0 && (st = pd_infer_set_out(c, "Reserve", 0, &r, rdt, 0)))
    return st;
  if (pd_infer_nout(c, "DropoutState") > 0)
    return pd_infer_set_out(c, "DropoutState", 0, &r, PD_UINT8, 0);
  return PD_OK;
}

/* ================================================================ the plan */

typedef struct rplan {
  int mode, G, L, D;
  int64_t T, N, I, H, GH, SG;  /* SG: saved gate columns a row (LSTM, GRU: 4 H; RNN: 0) */
  pd_dtype dt;
  int32_t *len;                /* [N]: each sequence's length (T without SequenceLength) */
  const pd_tensor *w[64];      /* weight_ih, weight_hh, bias_ih, bias_hh of cell c at 4 c + k */
  size_t cell_size;            /* elements of Reserve a cell takes */
} rplan;

static int64_t in_of(const rplan *p, int l) { return l ? p->D * p->H : p->I; }

/* Reserve's parts (elements of its dtype): per cell c (= l D + d), hs [T, N, H] (the states
 * after each step; rows past a sequence's end: zeros for LSTM and GRU, the state kept for the
 * Elman modes), cs (LSTM) likewise, gates [T, N, SG]; then per layer its output [T, N, D H]. */
static size_t reserve_size(const rplan *p) {
  return (size_t)(p->L * p->D) * p->cell_size + (size_t)p->L * (size_t)(p->T * p->N * p->D * p->H);
}
/* The parts' offsets in elements. */
static size_t off_hs(const rplan *p, int c) { return (size_t)c * p->cell_size; }
static size_t off_cs(const rplan *p, int c) {
  return off_hs(p, c) + (size_t)(p->T * p->N * p->H);
}
static size_t off_gates(const rplan *p, int c) {
  return off_cs(p, c) + (p->mode == RNN_LSTM ? (size_t)(p->T * p->N * p->H) : 0);
}
static size_t off_layer(const rplan *p, int l) {
  return (size_t)(p->L * p->D) * p->cell_size + (size_t)l * (size_t)(p->T * p->N * p->D * p->H);
}
/* The Elman modes' fp64 Reserve. */
static double *cell_hs(const rplan *p, double *r, int c) { return r + off_hs(p, c); }
static double *layer_out(const rplan *p, double *r, int l) { return r + off_layer(p, l); }

static void rplan_free(rplan *p) {
  pd_free(p->len);
  p->len = NULL;
}

static pd_status rplan_make(pd_exec_ctx *ctx, rplan *p) {
  memset(p, 0, sizeof *p);
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *sl = NULL;
  char a[96], b[96];
  p->mode = mode_of(pd_ctx_attr_str(ctx, "mode"));
  p->H = pd_ctx_attr_int(ctx, "hidden_size");
  p->L = (int)pd_ctx_attr_int(ctx, "num_layers");
  p->D = pd_ctx_attr_bool(ctx, "is_bidirec") ? 2 : 1;
  if (p->mode < 0 || p->H <= 0 || p->L <= 0 || p->L > 8)
    return pd_ctx_fail(ctx, PD_EINVAL, "mode must be LSTM, GRU, RNN_TANH or RNN_RELU, hidden_size "
                       "positive and num_layers 1 to 8; they are '%s', %lld, %d",
                       pd_ctx_attr_str(ctx, "mode"), (long long)p->H, p->L);
  if (pd_ctx_attr_float(ctx, "dropout_prob") != 0 && !pd_ctx_attr_bool(ctx, "is_test"))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "dropout between layers (dropout_prob %g) is not "
                       "supported in training; set it to 0", pd_ctx_attr_float(ctx, "dropout_prob"));
  if (!x || x->ndims != 3 || !is_float(x->dtype))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input must be a float32 or float64 [T, N, input_size]; "
                       "it is %s", x ? pd_ctx_shape_str(x, a, sizeof a) : "missing");
  p->dt = x->dtype;
  p->T = x->dims[0];
  p->N = x->dims[1];
  p->I = x->dims[2];
  p->G = gates_of(p->mode);
  p->GH = p->G * p->H;
  p->SG = p->mode == RNN_LSTM || p->mode == RNN_GRU ? 4 * p->H : 0;
  p->cell_size = (size_t)(p->T * p->N) * (size_t)((p->mode == RNN_LSTM ? 2 : 1) * p->H + p->SG);
  int cells = p->L * p->D;
  if (pd_ctx_nin(ctx, "WeightList") != 4 * cells)
    return pd_ctx_fail(ctx, PD_EINVAL, "WeightList must hold %d tensors; it holds %d", 4 * cells,
                       pd_ctx_nin(ctx, "WeightList"));
  for (int c = 0; c < cells; c++) {
    int l = c / p->D;
    const int idx[4] = {2 * c, 2 * c + 1, 2 * cells + 2 * c, 2 * cells + 2 * c + 1};
    const int64_t cols[4] = {in_of(p, l), p->H, -1, -1};
    for (int k = 0; k < 4; k++) {
      const pd_tensor *t;
      pd_status st = in_at(ctx, "WeightList", idx[k], true, &t);
      if (st) return st;
      bool fits = t->dtype == p->dt && (k < 2 ? t->ndims == 2 && t->dims[0] == p->GH &&
                                                    t->dims[1] == cols[k]
                                              : t->ndims == 1 && t->dims[0] == p->GH);
      if (!fits) {
        if (k < 2)
          snprintf(b, sizeof b, "[%lld, %lld]", (long long)p->GH, (long long)cols[k]);
        else snprintf(b, sizeof b, "[%lld]", (long long)p->GH);
        return pd_ctx_fail(ctx, PD_ESHAPE, "WeightList[%d] (layer %d%s %s) must be %s %s; it is "
                           "%s %s", idx[k], l, p->D > 1 ? (c % 2 ? " backward," : " forward,") : ",",
                           k == 0 ? "weight_ih" : k == 1 ? "weight_hh" : k == 2 ? "bias_ih"
                                                                             : "bias_hh",
                           b, pd_dtype_name(p->dt), pd_ctx_shape_str(t, a, sizeof a),
                           pd_dtype_name(t->dtype));
      }
      p->w[4 * c + k] = t;
    }
  }
  int nstates = p->mode == RNN_LSTM ? 2 : 1;
  if (pd_ctx_nin(ctx, "PreState") != nstates)
    return pd_ctx_fail(ctx, PD_EINVAL, "PreState must hold %d tensor%s; it holds %d", nstates,
                       nstates > 1 ? "s (h, c)" : " (h)", pd_ctx_nin(ctx, "PreState"));
  for (int i = 0; i < nstates; i++) {
    const pd_tensor *s;
    pd_status st = in_at(ctx, "PreState", i, true, &s);
    if (st) return st;
    if (s->dtype != p->dt || s->ndims != 3 || s->dims[0] != cells || s->dims[1] != p->N ||
        s->dims[2] != p->H)
      return pd_ctx_fail(ctx, PD_ESHAPE, "PreState[%d] must be [%d, %lld, %lld] %s; it is %s %s",
                         i, cells, (long long)p->N, (long long)p->H, pd_dtype_name(p->dt),
                         pd_ctx_shape_str(s, a, sizeof a), pd_dtype_name(s->dtype));
  }
  pd_status st = in_opt(ctx, "SequenceLength", &sl);
  if (st) return st;
  if (!(p->len = pd_malloc(sizeof *p->len * (size_t)(p->N + 1)))) return nomem(ctx);
  for (int64_t n = 0; n < p->N; n++) p->len[n] = (int32_t)p->T;
  if (sl) {
    /* int32 as the op declares it; int64 too, as Paddle's kernel reads either (what
     * paddle.nn.LSTM's sequence_length usually holds). */
    if ((sl->dtype != PD_INT32 && sl->dtype != PD_INT64) || sl->ndims != 1 ||
        sl->dims[0] != p->N)
      return pd_ctx_fail(ctx, PD_ESHAPE,
                         "SequenceLength must be int32 or int64 [%lld]; it is %s %s",
                         (long long)p->N, pd_dtype_name(sl->dtype),
                         pd_ctx_shape_str(sl, a, sizeof a));
    for (int64_t n = 0; n < p->N; n++) {
      int64_t v = sl->dtype == PD_INT32 ? ((const int32_t *)pd_tensor_data(sl))[n]
                                        : ((const int64_t *)pd_tensor_data(sl))[n];
      if (v < 0 || v > p->T)
        return pd_ctx_fail(ctx, PD_EINVAL, "SequenceLength[%lld] is %lld, outside 0 .. %lld (T)",
                           (long long)n, (long long)v, (long long)p->T);
      p->len[n] = (int32_t)v;
    }
  }
  return PD_OK;
}

/* ================================================================ LSTM and GRU: whole sequences */

/* The batch as the whole-sequence kernels take it (kernels.h: pd_k_rnn_seq): the sequences by
 * length, longest first; step k's rows are those of the sequences longer than k, row t N + n
 * of the time-major tensors, t = k forward and len - 1 - k in reverse (the padded rows past a
 * sequence's end are not steps). */
typedef struct wplan {
  int64_t steps;            /* the longest length */
  int64_t *order, *rank;    /* [N]: the sequences by length; sequence n's place in order */
  int64_t *koff;            /* [steps + 1] */
  int64_t *row[2];          /* [koff[steps]]: direction d's rows */
  int64_t *last[2];         /* [N]: the row of sequence n's last step in direction d; -1: none */
  const int64_t *at_order;  /* order where the op computes (for copy_rows) */
  void *at_tmp;             /* its scratch copy there, if one was made */
} wplan;

static void wplan_free(const pd_exec_ctx *ctx, wplan *w) {
  pd_ctx_scratch_free(ctx, w->at_tmp);
  pd_free(w->order);
  pd_free(w->rank);
  pd_free(w->koff);
  for (int d = 0; d < 2; d++) {
    pd_free(w->row[d]);
    pd_free(w->last[d]);
  }
}

static pd_status wplan_make(const pd_exec_ctx *ctx, const rplan *p, wplan *w) {
  memset(w, 0, sizeof *w);
  int64_t N = p->N, *off = pd_malloc(sizeof *off * (size_t)(N + 1));
  if (!off) return nomem(ctx);
  off[0] = 0;
  for (int64_t n = 0; n < N; n++) {
    off[n + 1] = off[n] + p->len[n];
    if (p->len[n] > w->steps) w->steps = p->len[n];
  }
  size_t total = (size_t)off[N] + 1;
  w->order = pd_malloc(sizeof *w->order * (size_t)(N + 1));
  w->rank = pd_malloc(sizeof *w->rank * (size_t)(N + 1));
  w->koff = pd_malloc(sizeof *w->koff * (size_t)(w->steps + 1));
  for (int d = 0; d < 2; d++) {
    w->row[d] = pd_malloc(sizeof *w->row[d] * total);
    w->last[d] = pd_malloc(sizeof *w->last[d] * (size_t)(N + 1));
  }
  bool ok = w->order && w->rank && w->koff && w->row[0] && w->row[1] && w->last[0] &&
            w->last[1] && pd_seq_by_length(off, N, w->order);
  pd_free(off);
  if (!ok) return nomem(ctx);
  for (int64_t r = 0; r < N; r++) w->rank[w->order[r]] = r;
  int64_t i = 0, run = N;
  for (int64_t k = 0; k < w->steps; k++) {
    while (run > 0 && p->len[w->order[run - 1]] <= k) run--;
    w->koff[k] = i;
    for (int64_t r = 0; r < run; r++, i++) {
      int64_t n = w->order[r];
      w->row[0][i] = k * N + n;
      w->row[1][i] = (p->len[n] - 1 - k) * N + n;
    }
  }
  w->koff[w->steps] = i;
  for (int64_t n = 0; n < N; n++) {
    w->last[0][n] = p->len[n] ? (p->len[n] - 1) * N + n : -1;
    w->last[1][n] = p->len[n] ? n : -1;
  }
  pd_status st = PD_OK;
  w->at_order = pd_ctx_at_place(ctx, w->order, sizeof *w->order * (size_t)(N + 1), &w->at_tmp,
                                &st);
  return st;
}

/* C [m, n] = op(A) op(B) + beta C (+ bias [n] when given) in the op's dtype, leading
 * dimensions given; under mixed precision (the amp pass's mark) through gemm_lp. */
static pd_status kgemm_bias(const pd_exec_ctx *ctx, pd_dtype dt, bool ta, bool tb, int64_t m,
                            int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                            int64_t ldb, double beta, void *c, int64_t ldc, const void *bias) {
  if (m == 0 || n == 0) return PD_OK;
  pd_dtype lp = amp_precision(ctx, dt);
  pd_status st;
  if (lp != PD_FP32 && ctx->k->gemm_lp)
    st = ctx->k->gemm_lp(lp, ta, tb, 1, m, n, k, 1.0, a, ld(lda), 0, b, ld(ldb), 0, beta, c,
                         ld(ldc), 0, bias);
  else if (bias)
    st = ctx->k->gemm_bias(dt, ta, tb, m, n, k, a, ld(lda), b, ld(ldb), bias, c, ld(ldc));
  else
    st = ctx->k->gemm(dt, ta, tb, m, n, k, 1.0, a, ld(lda), b, ld(ldb), beta, c, ld(ldc));
  return pd_ctx_check(ctx, st, "gemm");
}

static pd_status kgemm(const pd_exec_ctx *ctx, pd_dtype dt, bool ta, bool tb, int64_t m,
                       int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                       int64_t ldb, double beta, void *c, int64_t ldc) {
  return kgemm_bias(ctx, dt, ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, NULL);
}

/* n rows of cols elements of size es: row i of dst (dld elements apart) = row i of src (sld). */
static pd_status copy_cols(const pd_exec_ctx *ctx, size_t es, int64_t n, int64_t cols, char *dst,
                           int64_t dld, const char *src, int64_t sld) {
  if (dld == cols && sld == cols) return pd_ctx_copy(ctx, dst, src, (size_t)(n * cols) * es);
  pd_status st = PD_OK;
  for (int64_t i = 0; i < n && !st; i++)
    st = pd_ctx_copy(ctx, dst + (size_t)(i * dld) * es, src + (size_t)(i * sld) * es,
                     (size_t)cols * es);
  return st;
}

/* wt [cols, rows] = w [rows, cols] transposed. */
static pd_status transposed(const pd_exec_ctx *ctx, pd_dtype dt, int64_t rows, int64_t cols,
                            const void *w, void *wt) {
  int64_t dims[2] = {rows, cols};
  int perm[2] = {1, 0};
  return pd_ctx_check(ctx, ctx->k->transpose(dt, 2, dims, perm, w, wt), "transpose");
}

/* The cell's initial states in the sequences' order (h0s, and c0s for the LSTM), [N, H]. */
static pd_status cell_init(const pd_exec_ctx *ctx, const rplan *p, const wplan *w, int c,
                           char *h0s, char *c0s) {
  size_t es = pd_dtype_size(p->dt), at = (size_t)(c * p->N * p->H) * es;
  pd_status st = PD_OK;
  for (int i = 0; i < (c0s ? 2 : 1) && !st; i++)
    st = pd_ctx_check(ctx, ctx->k->copy_rows(p->dt, p->N, p->H,
                                             (const char *)pd_tensor_data(
                                                 pd_ctx_in_at(ctx, "PreState", i)) + at,
                                             w->at_order, i ? c0s : h0s, NULL),
                      "copy_rows");
  return st;
}

/* One cell's whole-sequence kernel call (lstm_seq or gru_seq), made by run_seq. */
typedef struct seq_call {
  const pd_k_backend *k;
  bool lstm;
  pd_k_rnn_seq s;
  const void *x, *w, *b, *h0, *c0; /* b: the GRU's bias_hh */
  void *hs, *cs, *gs;
  pd_status st;
} seq_call;

static void run_seq(void *calls, int i) {
  seq_call *c = (seq_call *)calls + i;
  c->st = c->lstm ? c->k->lstm_seq(&c->s, c->x, c->w, c->h0, c->c0, c->hs, c->cs, c->gs)
                  : c->k->gru_seq(&c->s, c->x, c->w, c->b, c->h0, c->hs, c->gs);
}

/* LSTM and GRU layers forward: res is Reserve's data (Input's dtype); hT and cT [cells, N, H]
 * receive the final states. A layer's directions are made ready one after the other (each
 * input projection one product over every step, on all threads), then their recurrences run:
 * on the host side by side (pd_k_host_parts), since a step of a small batch is too little
 * work to split across threads (CRNN's LSTM of hidden 48 at batch 1 ran its 320 steps on one
 * thread while the other waited), elsewhere one after the other. */
static pd_status gated_forward(const pd_exec_ctx *ctx, const rplan *p, const wplan *w, char *res,
                               char *hT, char *cT) {
  bool lstm = p->mode == RNN_LSTM;
  pd_dtype dt = p->dt;
  size_t es = pd_dtype_size(dt);
  int64_t H = p->H, N = p->N, GH = p->GH, TN = p->T * p->N, DH = p->D * H;
  /* per direction: xp [TN, GH], wt [H, GH], the biases' sum [GH], h0s and c0s [N, H] */
  char *b[10];
  size_t sizes[10];
  for (int d = 0; d < 2; d++) {
    size_t *z = sizes + 5 * d;
    bool used = d < p->D;
    z[0] = used ? (size_t)(TN * GH) * es : 0, z[1] = used ? (size_t)(H * GH) * es : 0;
    z[2] = used ? (size_t)GH * es : 0;
    z[3] = z[4] = used ? (size_t)(N * H) * es : 0;
  }
  pd_status st = pd_ctx_scratch_n(ctx, 10, b, sizes);
  seq_call calls[2];
  for (int l = 0; l < p->L && !st; l++) {
    for (int d = 0; d < p->D && !st; d++) {
      int c = l * p->D + d;
      char **bd = b + 5 * d;
      int64_t in = in_of(p, l);
      const char *x = l ? res + off_layer(p, l - 1) * es : pd_tensor_data(pd_ctx_in(ctx, "Input"));
      const void *wih = pd_tensor_data(p->w[4 * c]), *whh = pd_tensor_data(p->w[4 * c + 1]);
      const void *bih = pd_tensor_data(p->w[4 * c + 2]), *bhh = pd_tensor_data(p->w[4 * c + 3]);
      const void *bias = bih;
      if (lstm) { /* both biases add to every gate's pre-activation: one bias */
        st = pd_ctx_check(ctx, ctx->k->binary(PD_K_ADD, dt, 1, &GH, bih, 1, &GH, bhh, -1, bd[2]),
                          "add");
        bias = bd[2];
      }
      if (!st && TN)
        st = kgemm_bias(ctx, dt, false, true, TN, GH, in, x, in, wih, in, 0.0, bd[0], GH, bias);
      if (!st) st = transposed(ctx, dt, GH, H, whh, bd[1]);
      if (!st) st = cell_init(ctx, p, w, c, bd[3], lstm ? bd[4] : NULL);
      char *hs = res + off_hs(p, c) * es;
      /* the padded rows' outputs are zeros */
      if (!st && TN) st = pd_ctx_check(ctx, ctx->k->fill(dt, TN * H, hs, 0.0), "fill");
      calls[d] = (seq_call){.k = ctx->k, .lstm = lstm,
                            .s = {dt, H, N, w->steps, w->koff, w->row[d], TN,
                                  amp_precision(ctx, dt)},
                            .x = bd[0], .w = bd[1], .b = bhh, .h0 = bd[3], .c0 = bd[4],
                            .hs = hs, .cs = res + off_cs(p, c) * es,
                            .gs = res + off_gates(p, c) * es};
    }
    if (st) break;
    if (p->D == 2 && pd_ctx_place(ctx) == PD_K_HOST)
      pd_k_host_parts(2, run_seq, calls);
    else
      for (int d = 0; d < p->D; d++) run_seq(calls, d);
    for (int d = 0; d < p->D && !st; d++) {
      int c = l * p->D + d;
      st = pd_ctx_check(ctx, calls[d].st, lstm ? "lstm" : "gru");
      char *hs = calls[d].hs, *cs = calls[d].cs;
      if (!st)
        st = copy_cols(ctx, es, TN, H, res + (off_layer(p, l) + (size_t)(d * H)) * es, DH, hs, H);
      /* the final states: each sequence's last step's, or its initial ones (length 0) */
      for (int i = 0; i < (lstm ? 2 : 1) && !st; i++) {
        const char *all = i ? cs : hs;
        const char *init = pd_tensor_data(pd_ctx_in_at(ctx, "PreState", i));
        char *dst = i ? cT : hT;
        for (int64_t n = 0; n < N && !st; n++) {
          size_t at = (size_t)((c * N + n) * H) * es;
          int64_t r = w->last[d][n];
          st = pd_ctx_copy(ctx, dst + at, r >= 0 ? all + (size_t)(r * H) * es : init + at,
                           (size_t)H * es);
        }
      }
    }
  }
  pd_ctx_scratch_free_n(ctx, 10, b);
  return st;
}

/* The gradient of one LSTM or GRU cell (layer l, direction d), given dy [TN, D H] (the layer
 * output's gradient) and the final states' gradients ds (NULL: zeros): adds the layer input's
 * gradient into dx [TN, in] (assigns it when d is 0), writes the weights' gradients (dw: the
 * WeightList@GRAD tensors of the cell, NULL where not wanted) and the initial states' into dps
 * [cells, N, H]. b: the scratch buffers gated_backward allocates. */
static pd_status gated_cell_backward(const pd_exec_ctx *ctx, const rplan *p, const wplan *w, int l,
                                     int d, const char *res, const char *dy,
                                     const char *const *ds, char *dx, pd_tensor *const *dw,
                                     char *const *dps, char *const *b) {
  bool lstm = p->mode == RNN_LSTM;
  pd_dtype dt = p->dt;
  size_t es = pd_dtype_size(dt);
  int64_t H = p->H, N = p->N, GH = p->GH, TN = p->T * p->N, DH = p->D * H, in = in_of(p, l);
  int c = l * p->D + d;
  char *dxp = b[0], *wt = b[1], *dwt = b[2], *dhid = b[3], *dcel = b[4], *h0s = b[5];
  char *c0s = b[6], *dh0s = b[7], *dc0s = b[8], *dbhh = b[9];
  const char *x = l ? res + off_layer(p, l - 1) * es : pd_tensor_data(pd_ctx_in(ctx, "Input"));
  const char *hs = res + off_hs(p, c) * es, *cs = res + off_cs(p, c) * es;
  const char *gs = res + off_gates(p, c) * es;
  const void *wih = pd_tensor_data(p->w[4 * c]);
  pd_status st = transposed(ctx, dt, GH, H, pd_tensor_data(p->w[4 * c + 1]), wt);
  if (!st) st = cell_init(ctx, p, w, c, h0s, lstm ? c0s : NULL);
  /* the states' gradients at each row: the output's, and the final states' at the last rows */
  if (!st) st = copy_cols(ctx, es, TN, H, dhid, H, dy + (size_t)(d * H) * es, DH);
  bool dcell = lstm && ds[1];
  if (!st && dcell && TN) st = pd_ctx_check(ctx, ctx->k->fill(dt, TN * H, dcel, 0.0), "fill");
  for (int64_t n = 0; n < N && !st; n++) {
    int64_t r = w->last[d][n];
    size_t at = (size_t)((c * N + n) * H) * es, ra = (size_t)(r * H) * es;
    if (r < 0) continue;
    if (ds[0])
      st = pd_ctx_check(ctx, ctx->k->binary(PD_K_ADD, dt, 1, &H, dhid + ra, 1, &H, ds[0] + at,
                                            -1, dhid + ra),
                        "add");
    if (!st && dcell) st = pd_ctx_copy(ctx, dcel + ra, ds[1] + at, (size_t)H * es);
  }
  if (!st && TN) st = pd_ctx_check(ctx, ctx->k->fill(dt, TN * GH, dxp, 0.0), "fill");
  pd_k_rnn_seq s = {dt, H, N, w->steps, w->koff, w->row[d], TN, amp_precision(ctx, dt)};
  if (!st)
    st = pd_ctx_check(ctx, lstm ? ctx->k->lstm_seq_grad(&s, wt, h0s, c0s, hs, cs, gs, dhid,
                                                        dcell ? dcel : NULL, dxp, dwt, dh0s, dc0s)
                                : ctx->k->gru_seq_grad(&s, wt, h0s, hs, gs, dhid, dxp, dwt, dbhh,
                                                       dh0s),
                      lstm ? "lstm gradients" : "gru gradients");
  /* the weights: W_ih's from the projection, W_hh's transposed back, the biases' sums */
  for (int k = 0; k < 4 && !st; k++) {
    pd_tensor *o = dw[k];
    const pd_tensor *wk = p->w[4 * c + k];
    if (!o) continue;
    if ((st = pd_ctx_resize(ctx, o, dt, wk->ndims, wk->dims))) break;
    char *od = pd_tensor_data(o);
    int axis = 0;
    int64_t dims[2] = {TN, GH};
    switch (k) {
      case 0: st = kgemm(ctx, dt, true, false, GH, in, TN, dxp, GH, x, in, 0.0, od, in); break;
      case 1: st = transposed(ctx, dt, H, GH, dwt, od); break;
      default:
        if (k == 3 && !lstm) st = pd_ctx_copy(ctx, od, dbhh, (size_t)GH * es);
        else if (TN)
          st = pd_ctx_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, 2, dims, dxp, 1, &axis, od),
                            "reduce");
        else st = pd_ctx_check(ctx, ctx->k->fill(dt, GH, od, 0.0), "fill");
        break;
    }
  }
  /* the layer input's gradient; the initial states': the kernel's, or ds's for length 0 */
  if (!st) st = kgemm(ctx, dt, false, false, TN, in, GH, dxp, GH, wih, in, d ? 1.0 : 0.0, dx, in);
  for (int i = 0; i < (lstm ? 2 : 1) && !st; i++) {
    const char *dk = i ? dc0s : dh0s;
    for (int64_t n = 0; n < N && !st; n++) {
      size_t at = (size_t)((c * N + n) * H) * es;
      if (w->last[d][n] >= 0)
        st = pd_ctx_copy(ctx, dps[i] + at, dk + (size_t)(w->rank[n] * H) * es, (size_t)H * es);
      else if (ds[i]) st = pd_ctx_copy(ctx, dps[i] + at, ds[i] + at, (size_t)H * es);
      else st = pd_ctx_check(ctx, ctx->k->fill(dt, H, dps[i] + at, 0.0), "fill");
    }
  }
  return st;
}

enum { GB_BUFS = 10 };

/* LSTM and GRU layers backward from Reserve's data res: every gradient the op is asked for. */
static pd_status gated_backward(pd_exec_ctx *ctx, const rplan *p, const wplan *w,
                                const char *res) {
  bool lstm = p->mode == RNN_LSTM;
  pd_dtype dt = p->dt;
  size_t es = pd_dtype_size(dt);
  int ns = lstm ? 2 : 1, cells = p->L * p->D;
  int64_t H = p->H, N = p->N, GH = p->GH, TN = p->T * p->N, DH = p->D * H;
  int64_t wmax = p->I > DH ? p->I : DH, SS = cells * N * H;
  const pd_tensor *dout = in_if_set(ctx, "Out@GRAD", 0);
  const char *ds[2] = {NULL, NULL};
  for (int i = 0; i < ns; i++) {
    const pd_tensor *t = in_if_set(ctx, "State@GRAD", i);
    if (t && (t->dtype != dt || pd_tensor_numel(t) != SS))
      return pd_ctx_fail(ctx, PD_ESHAPE, "State@GRAD[%d] must have %lld %s values", i,
                         (long long)SS, pd_dtype_name(dt));
    if (t) ds[i] = pd_tensor_data(t);
  }
  if (dout && (dout->dtype != dt || pd_tensor_numel(dout) != TN * DH))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Out@GRAD must have [%lld, %lld, %lld] %s values",
                       (long long)p->T, (long long)N, (long long)DH, pd_dtype_name(dt));
  /* dy, dx [TN, wmax]; the initial states' gradients [cells, N, H]; then the cells' scratch:
   * dxp [TN, GH], wt and dwt [H, GH], dhid and dcel [TN, H], h0s, c0s, dh0s, dc0s [N, H],
   * dbhh [GH] */
  char *a[4 + GB_BUFS];
  size_t tw = (size_t)(TN * wmax) * es, nh = (size_t)(N * H) * es;
  size_t sizes[4 + GB_BUFS] = {tw, tw, (size_t)SS * es, (size_t)SS * es,
                               (size_t)(TN * GH) * es, (size_t)(H * GH) * es,
                               (size_t)(H * GH) * es, (size_t)(TN * H) * es,
                               (size_t)(TN * H) * es, nh, nh, nh, nh, (size_t)GH * es};
  pd_status st = pd_ctx_scratch_n(ctx, 4 + GB_BUFS, a, sizes);
  if (st) return st;
  char *dy = a[0], *dx = a[1], *dps[2] = {a[2], a[3]};
  if (dout) st = pd_ctx_copy(ctx, dy, pd_tensor_data(dout), (size_t)(TN * DH) * es);
  else if (TN) st = pd_ctx_check(ctx, ctx->k->fill(dt, TN * DH, dy, 0.0), "fill");
  for (int l = p->L - 1; l >= 0 && !st; l--) {
    for (int d = 0; d < p->D && !st; d++) {
      int c = l * p->D + d;
      const int idx[4] = {2 * c, 2 * c + 1, 2 * cells + 2 * c, 2 * cells + 2 * c + 1};
      pd_tensor *dw[4];
      for (int k = 0; k < 4 && !st; k++) st = out_at(ctx, "WeightList@GRAD", idx[k], false, &dw[k]);
      if (!st)
        st = gated_cell_backward(ctx, p, w, l, d, res, dy, ds, dx, dw, dps, a + 4);
    }
    /* dx is the layer below's output's gradient (zero on the padded rows, as dxp is there) */
    char *t = dy;
    dy = dx;
    dx = t;
  }
  pd_tensor *o;
  if (!st && !(st = out_opt(ctx, "Input@GRAD", &o)) && o) {
    const pd_tensor *x = pd_ctx_in(ctx, "Input");
    if (!(st = pd_ctx_resize(ctx, o, dt, x->ndims, x->dims)))
      st = pd_ctx_copy(ctx, pd_tensor_data(o), dy, (size_t)(TN * p->I) * es);
  }
  for (int i = 0; i < ns && !st; i++) {
    if ((st = out_at(ctx, "PreState@GRAD", i, false, &o)) || !o) continue;
    const pd_tensor *s = pd_ctx_in_at(ctx, "PreState", i);
    if (!(st = pd_ctx_resize(ctx, o, dt, s->ndims, s->dims)))
      st = pd_ctx_copy(ctx, pd_tensor_data(o), dps[i], (size_t)SS * es);
  }
  pd_ctx_scratch_free_n(ctx, 4 + GB_BUFS, a);
  return st;
}

/* The LSTM and GRU modes: checks the backend, makes the plan, runs forward (grad false: Out,
 * Reserve, State) or backward. */
static pd_status gated_run(pd_exec_ctx *ctx, const rplan *p, bool grad) {
  const pd_k_backend *k = ctx->k;
  if (!(p->mode == RNN_LSTM ? k->lstm_seq && k->lstm_seq_grad : k->gru_seq && k->gru_seq_grad))
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "the %s backend has no whole-sequence %s kernel",
                       k->name, p->mode == RNN_LSTM ? "LSTM" : "GRU");
  size_t es = pd_dtype_size(p->dt), rn = reserve_size(p);
  int cells = p->L * p->D, ns = p->mode == RNN_LSTM ? 2 : 1;
  int64_t SS = cells * p->N * p->H;
  wplan w;
  pd_status st = wplan_make(ctx, p, &w);
  if (st) goto out;
  if (grad) {
    const pd_tensor *reserve;
    if ((st = in1(ctx, "Reserve", &reserve))) goto out;
    if (reserve->dtype != p->dt || (size_t)pd_tensor_numel(reserve) != rn) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "Reserve holds %lld %s values, the forward pass of these "
                       "shapes keeps %lld %s", (long long)pd_tensor_numel(reserve),
                       pd_dtype_name(reserve->dtype), (long long)rn, pd_dtype_name(p->dt));
      goto out;
    }
    st = gated_backward(ctx, p, &w, pd_tensor_data(reserve));
    goto out;
  }
  pd_tensor *out, *reserve, *state[2] = {NULL, NULL};
  if ((st = out1(ctx, "Out", &out)) || (st = out_opt(ctx, "Reserve", &reserve))) goto out;
  for (int i = 0; i < ns && !st; i++) st = out_at(ctx, "State", i, false, &state[i]);
  char *b[3] = {NULL, NULL, NULL}; /* Reserve's data when not bound; the final h and c */
  size_t sizes[3] = {reserve ? 0 : rn * es, (size_t)SS * es, (size_t)SS * es};
  if (st || (st = pd_ctx_scratch_n(ctx, 3, b, sizes))) goto out;
  int64_t rd = (int64_t)rn;
  char *res = b[0];
  if (reserve && !(st = pd_ctx_resize(ctx, reserve, p->dt, 1, &rd))) res = pd_tensor_data(reserve);
  if (!st) st = gated_forward(ctx, p, &w, res, b[1], b[2]);
  int64_t od[3] = {p->T, p->N, p->D * p->H}, sd[3] = {cells, p->N, p->H};
  if (!st && !(st = pd_ctx_resize(ctx, out, p->dt, 3, od)))
    st = pd_ctx_copy(ctx, pd_tensor_data(out), res + off_layer(p, p->L - 1) * es,
                     (size_t)(p->T * p->N * p->D * p->H) * es);
  for (int i = 0; i < ns && !st; i++)
    if (state[i] && !(st = pd_ctx_resize(ctx, state[i], p->dt, 3, sd)))
      st = pd_ctx_copy(ctx, pd_tensor_data(state[i]), b[1 + i], (size_t)SS * es);
  pd_ctx_scratch_free_n(ctx, 3, b);
out:
  wplan_free(ctx, &w);
  return st;
}

/* ================================================================ RNN_TANH and RNN_RELU */

/* The Elman modes compute in double on the host, wherever the op's tensors are (the GPU too:
 * they are copied in and out). */

/* t's values in double. */
static pd_status to_f64(const pd_exec_ctx *ctx, const pd_tensor *t, double *dst) {
  void *tmp = NULL;
  pd_status st = PD_OK;
  const void *h = pd_ctx_host_data(ctx, t, &tmp, &st);
  if (h) pd_k_cpu()->cast(t->dtype, h, PD_FP64, dst, pd_tensor_numel(t));
  pd_k_host_free(tmp);
  return h ? PD_OK : st;
}

/* nbytes between the host and the op's place (dir 1: to the place). */
static pd_status host_move(const pd_exec_ctx *ctx, void *place_buf, void *host, size_t nbytes,
                           int dir) {
  pd_k_place at = pd_ctx_place(ctx);
  pd_status st = dir ? pd_mem_copy(place_buf, at, host, PD_K_HOST, nbytes)
                     : pd_mem_copy(host, PD_K_HOST, place_buf, at, nbytes);
  return pd_ctx_check(ctx, st, "copy");
}

/* out (resized to dims, p->dt) from n doubles. */
static pd_status put(const pd_exec_ctx *ctx, const rplan *p, pd_tensor *out, int nd,
                     const int64_t *dims, const double *src) {
  if (!out) return PD_OK;
  pd_status st = pd_ctx_resize(ctx, out, p->dt, nd, dims);
  if (st) return st;
  int64_t n = pd_tensor_numel(out);
  if (pd_ctx_place(ctx) == PD_K_HOST) {
    pd_k_cpu()->cast(PD_FP64, src, p->dt, pd_tensor_data(out), n);
    return PD_OK;
  }
  size_t bytes = (size_t)n * pd_dtype_size(p->dt);
  void *tmp = pd_k_host_alloc(bytes + 1);
  if (!tmp) return nomem(ctx);
  pd_k_cpu()->cast(PD_FP64, src, p->dt, tmp, n);
  st = host_move(ctx, pd_tensor_data(out), tmp, bytes, 1);
  pd_k_host_free(tmp);
  return st;
}

/* C [m, n] = op(A) op(B) + beta C, in double on the host. */
static pd_status gemm(const pd_exec_ctx *ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      const double *a, const double *b, double beta, double *c) {
  if (m == 0 || n == 0) return PD_OK;
  return pd_ctx_check(ctx, pd_k_cpu()->gemm(PD_FP64, ta, tb, m, n, k, 1.0, a, ld(ta ? m : k), b,
                                            ld(tb ? k : n), beta, c, ld(n)),
                      "gemm");
}

/* A cell's weights in double: wih [GH, in], whh [GH, H], bih, bhh [GH]. */
typedef struct cellw {
  double *wih, *whh, *bih, *bhh;
} cellw;

/* Every cell's weights, one block (*all, to free; NULL on failure). */
static pd_status load_weights(const pd_exec_ctx *ctx, const rplan *p, cellw *cw, double **all) {
  size_t n = 0;
  for (int c = 0; c < p->L * p->D; c++)
    for (int k = 0; k < 4; k++) n += (size_t)pd_tensor_numel(p->w[4 * c + k]);
  double *q = *all = pd_malloc(sizeof *q * (n + 1));
  if (!q) return nomem(ctx);
  pd_status st = PD_OK;
  for (int c = 0; c < p->L * p->D && !st; c++) {
    double **dst[4] = {&cw[c].wih, &cw[c].whh, &cw[c].bih, &cw[c].bhh};
    for (int k = 0; k < 4 && !st; k++) {
      *dst[k] = q;
      st = to_f64(ctx, p->w[4 * c + k], q);
      q += pd_tensor_numel(p->w[4 * c + k]);
    }
  }
  return st;
}


/* One Elman cell (layer l, direction d) over the batch, in double: x [T N, in] the layer's
 * input, h [N, H] the initial states; writes the cell's states into the reserve and its half of
 * the layer's output [T, N, D H]; h becomes the final states. xp [T N, H] and hp [N, H] are
 * scratch. */
static pd_status cell_forward(const pd_exec_ctx *ctx, const rplan *p, int l, int d,
                              const cellw *w, const double *x, double *h, double *res,
                              double *xp, double *hp) {
  int cell = l * p->D + d;
  int64_t H = p->H, N = p->N, TN = p->T * p->N, DH = p->D * H;
  pd_status st = gemm(ctx, false, true, TN, H, in_of(p, l), x, w->wih, 0.0, xp);
  if (st) return st;
  for (int64_t r = 0; r < TN; r++)
    for (int64_t j = 0; j < H; j++) xp[r * H + j] += w->bih[j];
  double *hs = cell_hs(p, res, cell), *y = layer_out(p, res, l);
  for (int64_t s = 0; s < p->T; s++) {
    int64_t t = d ? p->T - 1 - s : s;
    if ((st = gemm(ctx, false, true, N, H, H, h, w->whh, 0.0, hp))) return st;
    for (int64_t n = 0; n < N; n++) {
      size_t row = (size_t)(t * N + n);
      double *hn = h + n * H, *yo = y + row * (size_t)DH + (size_t)(d * H);
      const double *xr = xp + row * (size_t)H, *pr = hp + n * H;
      if (t >= p->len[n]) { /* past the sequence: states unchanged, output 0 */
        memcpy(hs + row * (size_t)H, hn, sizeof *hn * (size_t)H);
        memset(yo, 0, sizeof *yo * (size_t)H);
        continue;
      }
      for (int64_t j = 0; j < H; j++) {
        double pre = xr[j] + pr[j] + w->bhh[j];
        hs[row * (size_t)H + (size_t)j] = yo[j] = p->mode == RNN_TANH ? tanh(pre)
                                                  : pre > 0        ? pre
                                                                   : 0;
      }
      memcpy(hn, hs + row * (size_t)H, sizeof *hn * (size_t)H);
    }
  }
  return PD_OK;
}

pd_status pd_kernel_rnn(pd_exec_ctx *ctx) {
  rplan p;
  pd_status st = rplan_make(ctx, &p);
  double *wall = NULL, *res = NULL, *x0 = NULL, *st0 = NULL, *xp = NULL, *hp = NULL;
  cellw cw[16];
  pd_tensor *out = NULL, *reserve = NULL, *drop = NULL, *state = NULL;
  if (st) goto out;
  if ((st = out_opt(ctx, "DropoutState", &drop))) goto out;
  if (drop) { /* left empty: no dropout between layers in training */
    int64_t zero = 0;
    if ((st = pd_ctx_resize(ctx, drop, PD_UINT8, 1, &zero))) goto out;
  }
  if (p.mode == RNN_LSTM || p.mode == RNN_GRU) {
    st = gated_run(ctx, &p, false);
    goto out;
  }
  if ((st = out1(ctx, "Out", &out)) || (st = out_opt(ctx, "Reserve", &reserve)) ||
      (st = out_at(ctx, "State", 0, false, &state)))
    goto out;
  int cells = p.L * p.D;
  size_t TN = (size_t)(p.T * p.N), NH = (size_t)(p.N * p.H), SS = (size_t)cells * NH;
  res = pd_malloc(sizeof *res * (reserve_size(&p) + 1));
  x0 = pd_malloc(sizeof *x0 * (TN * (size_t)p.I + 1));
  st0 = pd_malloc(sizeof *st0 * (SS + 1));
  xp = pd_malloc(sizeof *xp * (TN * (size_t)p.H + 1));
  hp = pd_malloc(sizeof *hp * (NH + 1));
  if (!res || !x0 || !st0 || !xp || !hp) {
    st = nomem(ctx);
    goto out;
  }
  if ((st = load_weights(ctx, &p, cw, &wall)) || (st = to_f64(ctx, pd_ctx_in(ctx, "Input"), x0)) ||
      (st = to_f64(ctx, pd_ctx_in_at(ctx, "PreState", 0), st0)))
    goto out;
  for (int l = 0; l < p.L && !st; l++)
    for (int d = 0; d < p.D && !st; d++) {
      int c = l * p.D + d;
      st = cell_forward(ctx, &p, l, d, &cw[c], l ? layer_out(&p, res, l - 1) : x0,
                        st0 + (size_t)c * NH, res, xp, hp);
    }
  if (st) goto out;
  int64_t od[3] = {p.T, p.N, p.D * p.H}, sd[3] = {cells, p.N, p.H};
  if ((st = put(ctx, &p, out, 3, od, layer_out(&p, res, p.L - 1))) ||
      (st = put(ctx, &p, state, 3, sd, st0)))
    goto out;
  if (reserve) {
    int64_t rd = (int64_t)reserve_size(&p);
    if ((st = pd_ctx_resize(ctx, reserve, PD_FP64, 1, &rd))) goto out;
    st = host_move(ctx, pd_tensor_data(reserve), res, sizeof *res * reserve_size(&p), 1);
  }
out:
  pd_free(wall);
  pd_free(res);
  pd_free(x0);
  pd_free(st0);
  pd_free(xp);
  pd_free(hp);
  rplan_free(&p);
  return st;
}

/* The gradient of one Elman cell: dy [T N, D H] (its half read), dh [N, H] the final states'
 * gradient (becomes the initial states'); x [T N, in] the layer's input, h0 the initial
 * states; adds to dx [T N, in] and to the weights' gradients dw (same layout as w). dgx [T N,
 * H], dgh [N, H], carry [N, H], prev [N, H] scratch. */
static pd_status cell_backward(const pd_exec_ctx *ctx, const rplan *p, int l, int d,
                               const cellw *w, const cellw *dw, const double *x,
                               const double *h0, double *res, const double *dy, double *dh,
                               double *dx, double *dgx, double *dgh, double *carry,
                               double *prev) {
  int cell = l * p->D + d;
  int64_t H = p->H, N = p->N, TN = p->T * p->N, DH = p->D * H, in = in_of(p, l);
  const double *hs = cell_hs(p, res, cell);
  memset(dgx, 0, sizeof *dgx * (size_t)(TN * H));
  pd_status st = PD_OK;
  for (int64_t s = p->T - 1; s >= 0 && !st; s--) {
    int64_t t = d ? p->T - 1 - s : s, tp = d ? t + 1 : t - 1;  /* tp: the step before */
    memcpy(prev, s ? hs + (size_t)(tp * N * H) : h0, sizeof *prev * (size_t)(N * H));
    for (int64_t n = 0; n < N; n++) {
      size_t row = (size_t)(t * N + n);
      double *gh = dgh + n * H, *gx = dgx + row * (size_t)H;
      memset(gh, 0, sizeof *gh * (size_t)H);
      if (t >= p->len[n]) continue;
      for (int64_t j = 0; j < H; j++) {
        double dhj = dy[row * (size_t)DH + (size_t)(d * H + j)] + dh[n * H + j];
        double v = hs[row * (size_t)H + (size_t)j];
        gx[j] = gh[j] = dhj * (p->mode == RNN_TANH ? 1 - v * v : v > 0 ? 1 : 0);
      }
    }
    /* h_prev's gradient dgh W_hh, on the rows of running sequences */
    if ((st = gemm(ctx, false, false, N, H, H, dgh, w->whh, 0.0, carry))) break;
    for (int64_t n = 0; n < N; n++)
      if (t < p->len[n]) memcpy(dh + n * H, carry + n * H, sizeof *dh * (size_t)H);
    if ((st = gemm(ctx, true, false, H, H, N, dgh, prev, 1.0, dw->whh))) break;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < H; j++) dw->bhh[j] += dgh[n * H + j];
  }
  if (st) return st;
  if ((st = gemm(ctx, true, false, H, in, TN, dgx, x, 1.0, dw->wih))) return st;
  for (int64_t r = 0; r < TN; r++)
    for (int64_t j = 0; j < H; j++) dw->bih[j] += dgx[r * H + j];
  return gemm(ctx, false, false, TN, in, H, dgx, w->wih, 1.0, dx);
}

pd_status pd_kernel_rnn_grad(pd_exec_ctx *ctx) {
  rplan p;
  pd_status st = rplan_make(ctx, &p);
  double *wall = NULL, *dwall = NULL, *res = NULL, *x0 = NULL, *st0 = NULL, *dst = NULL;
  double *dy = NULL, *dx = NULL, *dgx = NULL, *dgh = NULL, *carry = NULL, *prev = NULL;
  cellw cw[16], dcw[16];
  if (st) goto out;
  if (p.mode == RNN_LSTM || p.mode == RNN_GRU) {
    st = gated_run(ctx, &p, true);
    goto out;
  }
  int cells = p.L * p.D;
  const pd_tensor *reserve, *dout = in_if_set(ctx, "Out@GRAD", 0);
  if ((st = in1(ctx, "Reserve", &reserve))) goto out;
  if (reserve->dtype != PD_FP64 || (size_t)pd_tensor_numel(reserve) != reserve_size(&p)) {
    st = pd_ctx_fail(ctx, PD_ESHAPE, "Reserve holds %lld values, the forward pass of these "
                     "shapes keeps %lld", (long long)pd_tensor_numel(reserve),
                     (long long)reserve_size(&p));
    goto out;
  }
  size_t TN = (size_t)(p.T * p.N), NH = (size_t)(p.N * p.H), SS = (size_t)cells * NH;
  size_t wmax = (size_t)(p.I > p.D * p.H ? p.I : p.D * p.H);
  if ((st = load_weights(ctx, &p, cw, &wall)) || (st = load_weights(ctx, &p, dcw, &dwall)))
    goto out;
  res = pd_malloc(sizeof *res * (reserve_size(&p) + 1));
  x0 = pd_malloc(sizeof *x0 * (TN * (size_t)p.I + 1));
  st0 = pd_malloc(sizeof *st0 * (SS + 1));
  dst = pd_calloc(SS + 1, sizeof *dst);
  dy = pd_calloc(TN * wmax + 1, sizeof *dy);
  dx = pd_calloc(TN * wmax + 1, sizeof *dx);
  dgx = pd_malloc(sizeof *dgx * (TN * (size_t)p.H + 1));
  dgh = pd_malloc(sizeof *dgh * (NH + 1));
  carry = pd_malloc(sizeof *carry * (NH + 1));
  prev = pd_malloc(sizeof *prev * (NH + 1));
  if (!res || !x0 || !st0 || !dst || !dy || !dx || !dgx || !dgh || !carry || !prev) {
    st = nomem(ctx);
    goto out;
  }
  for (size_t i = 0; i < (size_t)(dcw[cells - 1].bhh - dwall) + (size_t)p.H; i++) dwall[i] = 0;
  if ((st = host_move(ctx, (void *)pd_tensor_data(reserve), res,
                      sizeof *res * reserve_size(&p), 0)) ||
      (st = to_f64(ctx, pd_ctx_in(ctx, "Input"), x0)) ||
      (st = to_f64(ctx, pd_ctx_in_at(ctx, "PreState", 0), st0)))
    goto out;
  const pd_tensor *ds = in_if_set(ctx, "State@GRAD", 0);
  if (ds && (size_t)pd_tensor_numel(ds) == SS && ds->dtype == p.dt) {
    if ((st = to_f64(ctx, ds, dst))) goto out;
  } else if (ds) {
    st = pd_ctx_fail(ctx, PD_ESHAPE, "State@GRAD[0] must have %lld %s values", (long long)SS,
                     pd_dtype_name(p.dt));
    goto out;
  }
  if (dout) {
    if (dout->dtype != p.dt || (size_t)pd_tensor_numel(dout) != TN * (size_t)(p.D * p.H)) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "Out@GRAD must have [%lld, %lld, %lld] %s values",
                       (long long)p.T, (long long)p.N, (long long)(p.D * p.H), pd_dtype_name(p.dt));
      goto out;
    }
    if ((st = to_f64(ctx, dout, dy))) goto out;
  }
  for (int l = p.L - 1; l >= 0 && !st; l--) {
    int64_t in = in_of(&p, l);
    memset(dx, 0, sizeof *dx * TN * (size_t)in);
    for (int d = 0; d < p.D && !st; d++) {
      int c = l * p.D + d;
      st = cell_backward(ctx, &p, l, d, &cw[c], &dcw[c], l ? layer_out(&p, res, l - 1) : x0,
                         st0 + (size_t)c * NH, res, dy, dst + (size_t)c * NH, dx, dgx, dgh, carry,
                         prev);
    }
    /* the layer below's outputs' gradient (zero past each sequence's length, as dgx is) */
    memcpy(dy, dx, sizeof *dy * TN * (size_t)in);
  }
  if (st) goto out;
  pd_tensor *o;
  if ((st = out_opt(ctx, "Input@GRAD", &o)) ||
      (st = put(ctx, &p, o, 3, pd_ctx_in(ctx, "Input")->dims, dy)) ||
      (st = out_at(ctx, "PreState@GRAD", 0, false, &o)) ||
      (st = put(ctx, &p, o, 3, pd_ctx_in_at(ctx, "PreState", 0)->dims, dst)))
    goto out;
  for (int c = 0; c < cells; c++) {
    const int idx[4] = {2 * c, 2 * c + 1, 2 * cells + 2 * c, 2 * cells + 2 * c + 1};
    const double *src[4] = {dcw[c].wih, dcw[c].whh, dcw[c].bih, dcw[c].bhh};
    for (int k = 0; k < 4; k++) {
      if ((st = out_at(ctx, "WeightList@GRAD", idx[k], false, &o))) goto out;
      const pd_tensor *wt = p.w[4 * c + k];
      if ((st = put(ctx, &p, o, wt->ndims, wt->dims, src[k]))) goto out;
    }
  }
out:
  pd_free(wall);
  pd_free(dwall);
  pd_free(res);
  pd_free(x0);
  pd_free(st0);
  pd_free(dst);
  pd_free(dy);
  pd_free(dx);
  pd_free(dgx);
  pd_free(dgh);
  pd_free(carry);
  pd_free(prev);
  rplan_free(&p);
  return st;
}
