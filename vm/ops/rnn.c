/* rnn.c -- PaddlePaddle's `rnn` op, the one paddle.nn.LSTM / GRU / SimpleRNN write into a static
 * program: multi-layer, optionally bidirectional LSTM, GRU or Elman (tanh / relu) networks over a
 * padded, time-major batch with optional sequence lengths. Shape function, kernel and gradient
 * kernel (CPU; the arithmetic in double whatever the dtype, the products through the backend's
 * GEMM).
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
 * activations and each layer's output, fp64, pdlang's own layout); DropoutState is left empty:
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
  if (pd_infer_nout(c, "Reserve") > 0 && (st = pd_infer_set_out(c, "Reserve", 0, &r, PD_FP64, 0)))
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
  size_t cell_size;            /* doubles of Reserve a cell takes */
} rplan;

static int64_t in_of(const rplan *p, int l) { return l ? p->D * p->H : p->I; }

/* Reserve's parts: per cell c (= l D + d), hs [T, N, H] (the states after each step), cs
 * (LSTM) likewise, gates [T, N, SG]; then per layer its output [T, N, D H]. */
static size_t reserve_size(const rplan *p) {
  return (size_t)(p->L * p->D) * p->cell_size + (size_t)p->L * (size_t)(p->T * p->N * p->D * p->H);
}
static double *cell_hs(const rplan *p, double *r, int c) { return r + (size_t)c * p->cell_size; }
static double *cell_cs(const rplan *p, double *r, int c) {
  return cell_hs(p, r, c) + (size_t)(p->T * p->N * p->H);
}
static double *cell_gates(const rplan *p, double *r, int c) {
  return cell_cs(p, r, c) + (p->mode == RNN_LSTM ? (size_t)(p->T * p->N * p->H) : 0);
}
static double *layer_out(const rplan *p, double *r, int l) {
  return r + (size_t)(p->L * p->D) * p->cell_size + (size_t)l * (size_t)(p->T * p->N * p->D * p->H);
}

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

/* ================================================================ helpers */

static void to_f64(const pd_tensor *t, double *dst) {
  pd_k_cpu()->cast(t->dtype, pd_tensor_data(t), PD_FP64, dst, pd_tensor_numel(t));
}

/* out (resized to dims, p->dt) from n doubles. */
static pd_status put(const pd_exec_ctx *ctx, const rplan *p, pd_tensor *out, int nd,
                     const int64_t *dims, const double *src) {
  if (!out) return PD_OK;
  pd_status st = pd_ctx_resize(ctx, out, p->dt, nd, dims);
  if (!st) pd_k_cpu()->cast(PD_FP64, src, p->dt, pd_tensor_data(out), pd_tensor_numel(out));
  return st;
}

/* C [m, n] = op(A) op(B) + beta C, in double. */
static pd_status gemm(const pd_exec_ctx *ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                      const double *a, const double *b, double beta, double *c) {
  if (m == 0 || n == 0) return PD_OK;
  return pd_ctx_check(ctx, ctx->k->gemm(PD_FP64, ta, tb, m, n, k, 1.0, a, ld(ta ? m : k), b,
                                        ld(tb ? k : n), beta, c, ld(n)),
                      "gemm");
}

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* A cell's weights in double: wih [GH, in], whh [GH, H], bih, bhh [GH]. */
typedef struct cellw {
  double *wih, *whh, *bih, *bhh;
} cellw;

/* Every cell's weights, one block. */
static double *load_weights(const rplan *p, cellw *cw) {
  size_t n = 0;
  for (int c = 0; c < p->L * p->D; c++)
    for (int k = 0; k < 4; k++) n += (size_t)pd_tensor_numel(p->w[4 * c + k]);
  double *all = pd_malloc(sizeof *all * (n + 1)), *q = all;
  for (int c = 0; all && c < p->L * p->D; c++) {
    double **dst[4] = {&cw[c].wih, &cw[c].whh, &cw[c].bih, &cw[c].bhh};
    for (int k = 0; k < 4; k++) {
      *dst[k] = q;
      to_f64(p->w[4 * c + k], q);
      q += pd_tensor_numel(p->w[4 * c + k]);
    }
  }
  return all;
}

/* ================================================================ forward */

/* One cell (layer l, direction d) over the batch: x [T N, in] the layer's input, h0 and c0 [N,
 * H] (c0 LSTM); writes the cell's part of the reserve and its half of y [T, N, D H]; h0 and c0
 * become the final states. xp [T N, GH] and hp [N, GH] are scratch. */
static pd_status cell_forward(const pd_exec_ctx *ctx, const rplan *p, int l, int d,
                              const cellw *w, const double *x, double *h, double *c, double *res,
                              double *xp, double *hp) {
  int cell = l * p->D + d;
  int64_t H = p->H, N = p->N, GH = p->GH, TN = p->T * p->N, DH = p->D * H;
  pd_status st = gemm(ctx, false, true, TN, GH, in_of(p, l), x, w->wih, 0.0, xp);
  if (st) return st;
  for (int64_t r = 0; r < TN; r++)
    for (int64_t j = 0; j < GH; j++) xp[r * GH + j] += w->bih[j];
  double *hs = cell_hs(p, res, cell), *cs = cell_cs(p, res, cell), *gs = cell_gates(p, res, cell);
  double *y = layer_out(p, res, l);
  for (int64_t s = 0; s < p->T; s++) {
    int64_t t = d ? p->T - 1 - s : s;
    if ((st = gemm(ctx, false, true, N, GH, H, h, w->whh, 0.0, hp))) return st;
    for (int64_t n = 0; n < N; n++) {
      size_t row = (size_t)(t * N + n);
      double *hn = h + n * H, *cn = c ? c + n * H : NULL, *g = gs + row * (size_t)p->SG;
      double *yo = y + row * (size_t)DH + (size_t)(d * H);
      const double *xr = xp + row * (size_t)GH, *pr = hp + n * GH;
      if (t >= p->len[n]) { /* past the sequence: states unchanged, output 0 */
        memcpy(hs + row * (size_t)H, hn, sizeof *hn * (size_t)H);
        if (cn) memcpy(cs + row * (size_t)H, cn, sizeof *cn * (size_t)H);
        memset(g, 0, sizeof *g * (size_t)p->SG);
        memset(yo, 0, sizeof *yo * (size_t)H);
        continue;
      }
      for (int64_t j = 0; j < H; j++) {
        double v;
        if (p->mode == RNN_LSTM) {
          double i = sigm(xr[j] + pr[j] + w->bhh[j]), f = sigm(xr[H + j] + pr[H + j] + w->bhh[H + j]);
          double gg = tanh(xr[2 * H + j] + pr[2 * H + j] + w->bhh[2 * H + j]);
          double o = sigm(xr[3 * H + j] + pr[3 * H + j] + w->bhh[3 * H + j]);
          g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
          cn[j] = f * cn[j] + i * gg;
          cs[row * (size_t)H + (size_t)j] = cn[j];
          v = o * tanh(cn[j]);
        } else if (p->mode == RNN_GRU) {
          double r = sigm(xr[j] + pr[j] + w->bhh[j]), z = sigm(xr[H + j] + pr[H + j] + w->bhh[H + j]);
          double hn_ = pr[2 * H + j] + w->bhh[2 * H + j], nn = tanh(xr[2 * H + j] + r * hn_);
          g[j] = r, g[H + j] = z, g[2 * H + j] = nn, g[3 * H + j] = hn_;
          v = (1 - z) * nn + z * hn[j];
        } else {
          double pre = xr[j] + pr[j] + w->bhh[j];
          v = p->mode == RNN_TANH ? tanh(pre) : pre > 0 ? pre : 0;
        }
        hs[row * (size_t)H + (size_t)j] = yo[j] = v;
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
  pd_tensor *out = NULL, *reserve = NULL, *drop = NULL, *state[2] = {NULL, NULL};
  if (st) goto out;
  if ((st = out1(ctx, "Out", &out)) || (st = out_opt(ctx, "Reserve", &reserve)) ||
      (st = out_opt(ctx, "DropoutState", &drop)))
    goto out;
  int ns = p.mode == RNN_LSTM ? 2 : 1, cells = p.L * p.D;
  for (int i = 0; i < ns; i++)
    if ((st = out_at(ctx, "State", i, false, &state[i]))) goto out;
  size_t TN = (size_t)(p.T * p.N), NH = (size_t)(p.N * p.H), SS = (size_t)cells * NH;
  wall = load_weights(&p, cw);
  res = pd_malloc(sizeof *res * (reserve_size(&p) + 1));
  x0 = pd_malloc(sizeof *x0 * (TN * (size_t)p.I + 1));
  st0 = pd_malloc(sizeof *st0 * (2 * SS + 1));
  xp = pd_malloc(sizeof *xp * (TN * (size_t)p.GH + 1));
  hp = pd_malloc(sizeof *hp * ((size_t)p.N * (size_t)p.GH + 1));
  if (!wall || !res || !x0 || !st0 || !xp || !hp) {
    st = nomem(ctx);
    goto out;
  }
  to_f64(pd_ctx_in(ctx, "Input"), x0);
  for (int i = 0; i < ns; i++) to_f64(pd_ctx_in_at(ctx, "PreState", i), st0 + (size_t)i * SS);
  for (int l = 0; l < p.L && !st; l++)
    for (int d = 0; d < p.D && !st; d++) {
      int c = l * p.D + d;
      st = cell_forward(ctx, &p, l, d, &cw[c], l ? layer_out(&p, res, l - 1) : x0,
                        st0 + (size_t)c * NH, ns > 1 ? st0 + SS + (size_t)c * NH : NULL, res,
                        xp, hp);
    }
  if (st) goto out;
  int64_t od[3] = {p.T, p.N, p.D * p.H}, sd[3] = {cells, p.N, p.H};
  if ((st = put(ctx, &p, out, 3, od, layer_out(&p, res, p.L - 1)))) goto out;
  for (int i = 0; i < ns; i++)
    if ((st = put(ctx, &p, state[i], 3, sd, st0 + (size_t)i * SS))) goto out;
  if (reserve) {
    int64_t rd = (int64_t)reserve_size(&p);
    if ((st = pd_ctx_resize(ctx, reserve, PD_FP64, 1, &rd))) goto out;
    memcpy(pd_tensor_data(reserve), res, sizeof *res * reserve_size(&p));
  }
  if (drop) {
    int64_t zero = 0;
    st = pd_ctx_resize(ctx, drop, PD_UINT8, 1, &zero);
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

/* ================================================================ backward */

/* The gradient of one cell: dy [T N, D H] (its half read), dh, dc [N, H] the final states'
 * gradients (become the initial states'); x [T N, in] the layer's input, h0, c0 the initial
 * states; adds to dx [T N, in] and to the weights' gradients dw (same layout as w). dgx [T N,
 * GH], dgh [N, GH], tmp [N, H], prev [N, H] scratch. */
static pd_status cell_backward(const pd_exec_ctx *ctx, const rplan *p, int l, int d,
                               const cellw *w, const cellw *dw, const double *x,
                               const double *h0, const double *c0, double *res, const double *dy,
                               double *dh, double *dc, double *dx, double *dgx, double *dgh,
                               double *tmp, double *prev) {
  int cell = l * p->D + d;
  int64_t H = p->H, N = p->N, GH = p->GH, TN = p->T * p->N, DH = p->D * H, in = in_of(p, l);
  const double *hs = cell_hs(p, res, cell), *cs = cell_cs(p, res, cell);
  const double *gs = cell_gates(p, res, cell);
  memset(dgx, 0, sizeof *dgx * (size_t)(TN * GH));
  pd_status st = PD_OK;
  for (int64_t s = p->T - 1; s >= 0 && !st; s--) {
    int64_t t = d ? p->T - 1 - s : s, tp = d ? t + 1 : t - 1;  /* tp: the step before */
    const double *hprev = s ? hs + (size_t)(tp * N * H) : h0;
    const double *cprev = s ? cs + (size_t)(tp * N * H) : c0;
    memcpy(prev, hprev, sizeof *prev * (size_t)(N * H));
    for (int64_t n = 0; n < N; n++) {
      size_t row = (size_t)(t * N + n);
      double *gh = dgh + n * GH, *gx = dgx + row * (size_t)GH;
      const double *g = gs + row * (size_t)p->SG;
      memset(gh, 0, sizeof *gh * (size_t)GH);
      if (t >= p->len[n]) continue;
      for (int64_t j = 0; j < H; j++) {
        double dhj = dy[row * (size_t)DH + (size_t)(d * H + j)] + dh[n * H + j];
        if (p->mode == RNN_LSTM) {
          double i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
          double tc = tanh(cs[row * (size_t)H + (size_t)j]);
          double dcj = dc[n * H + j] + dhj * o * (1 - tc * tc);
          gh[j] = dcj * gg * i * (1 - i);
          gh[H + j] = dcj * cprev[n * H + j] * f * (1 - f);
          gh[2 * H + j] = dcj * i * (1 - gg * gg);
          gh[3 * H + j] = dhj * tc * o * (1 - o);
          dc[n * H + j] = dcj * f;
          gx[j] = gh[j], gx[H + j] = gh[H + j], gx[2 * H + j] = gh[2 * H + j];
          gx[3 * H + j] = gh[3 * H + j];
        } else if (p->mode == RNN_GRU) {
          double r = g[j], z = g[H + j], nn = g[2 * H + j], hn = g[3 * H + j];
          double dn = dhj * (1 - z) * (1 - nn * nn);
          double dr = dn * hn * r * (1 - r), dz = dhj * (hprev[n * H + j] - nn) * z * (1 - z);
          gx[j] = gh[j] = dr;
          gx[H + j] = gh[H + j] = dz;
          gx[2 * H + j] = dn;
          gh[2 * H + j] = dn * r;
          tmp[n * H + j] = dhj * z;  /* the direct part, added after the product */
        } else {
          double v = hs[row * (size_t)H + (size_t)j];
          gx[j] = gh[j] = dhj * (p->mode == RNN_TANH ? 1 - v * v : v > 0 ? 1 : 0);
        }
      }
    }
    /* h_prev's gradient: dgh W_hh (+ z dh for the GRU), on the rows of running sequences */
    double *carry = p->mode == RNN_GRU ? tmp + N * H : tmp;
    if ((st = gemm(ctx, false, false, N, H, GH, dgh, w->whh, 0.0, carry))) break;
    for (int64_t n = 0; n < N; n++) {
      if (t >= p->len[n]) continue;
      for (int64_t j = 0; j < H; j++)
        dh[n * H + j] = carry[n * H + j] + (p->mode == RNN_GRU ? tmp[n * H + j] : 0);
    }
    if ((st = gemm(ctx, true, false, GH, H, N, dgh, prev, 1.0, dw->whh))) break;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < GH; j++) dw->bhh[j] += dgh[n * GH + j];
  }
  if (st) return st;
  if ((st = gemm(ctx, true, false, GH, in, TN, dgx, x, 1.0, dw->wih))) return st;
  for (int64_t r = 0; r < TN; r++)
    for (int64_t j = 0; j < GH; j++) dw->bih[j] += dgx[r * GH + j];
  return gemm(ctx, false, false, TN, in, GH, dgx, w->wih, 1.0, dx);
}

pd_status pd_kernel_rnn_grad(pd_exec_ctx *ctx) {
  rplan p;
  pd_status st = rplan_make(ctx, &p);
  double *wall = NULL, *dwall = NULL, *res = NULL, *x0 = NULL, *st0 = NULL, *dst = NULL;
  double *dy = NULL, *dx = NULL, *dgx = NULL, *dgh = NULL, *tmp = NULL, *prev = NULL;
  cellw cw[16], dcw[16];
  if (st) goto out;
  int ns = p.mode == RNN_LSTM ? 2 : 1, cells = p.L * p.D;
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
  wall = load_weights(&p, cw);
  dwall = load_weights(&p, dcw);
  res = pd_malloc(sizeof *res * (reserve_size(&p) + 1));
  x0 = pd_malloc(sizeof *x0 * (TN * (size_t)p.I + 1));
  st0 = pd_malloc(sizeof *st0 * (2 * SS + 1));
  dst = pd_calloc(2 * SS + 1, sizeof *dst);
  dy = pd_calloc(TN * wmax + 1, sizeof *dy);
  dx = pd_calloc(TN * wmax + 1, sizeof *dx);
  dgx = pd_malloc(sizeof *dgx * (TN * (size_t)p.GH + 1));
  dgh = pd_malloc(sizeof *dgh * ((size_t)p.N * (size_t)p.GH + 1));
  tmp = pd_malloc(sizeof *tmp * (2 * NH + 1));
  prev = pd_malloc(sizeof *prev * (NH + 1));
  if (!wall || !dwall || !res || !x0 || !st0 || !dst || !dy || !dx || !dgx || !dgh || !tmp ||
      !prev) {
    st = nomem(ctx);
    goto out;
  }
  for (size_t i = 0; i < (size_t)(dcw[cells - 1].bhh - dwall) + (size_t)p.GH; i++) dwall[i] = 0;
  memcpy(res, pd_tensor_data(reserve), sizeof *res * reserve_size(&p));
  to_f64(pd_ctx_in(ctx, "Input"), x0);
  for (int i = 0; i < ns; i++) {
    to_f64(pd_ctx_in_at(ctx, "PreState", i), st0 + (size_t)i * SS);
    const pd_tensor *ds = in_if_set(ctx, "State@GRAD", i);
    if (ds && (size_t)pd_tensor_numel(ds) == SS && ds->dtype == p.dt) to_f64(ds, dst + (size_t)i * SS);
    else if (ds) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "State@GRAD[%d] must have %lld %s values", i,
                       (long long)SS, pd_dtype_name(p.dt));
      goto out;
    }
  }
  if (dout) {
    if (dout->dtype != p.dt || (size_t)pd_tensor_numel(dout) != TN * (size_t)(p.D * p.H)) {
      st = pd_ctx_fail(ctx, PD_ESHAPE, "Out@GRAD must have [%lld, %lld, %lld] %s values",
                       (long long)p.T, (long long)p.N, (long long)(p.D * p.H), pd_dtype_name(p.dt));
      goto out;
    }
    to_f64(dout, dy);
  }
  for (int l = p.L - 1; l >= 0 && !st; l--) {
    int64_t in = in_of(&p, l);
    memset(dx, 0, sizeof *dx * TN * (size_t)in);
    for (int d = 0; d < p.D && !st; d++) {
      int c = l * p.D + d;
      st = cell_backward(ctx, &p, l, d, &cw[c], &dcw[c], l ? layer_out(&p, res, l - 1) : x0,
                         st0 + (size_t)c * NH, ns > 1 ? st0 + SS + (size_t)c * NH : NULL, res, dy,
                         dst + (size_t)c * NH, ns > 1 ? dst + SS + (size_t)c * NH : NULL, dx, dgx,
                         dgh, tmp, prev);
    }
    /* the layer below's outputs' gradient, zero past each sequence's length (they were zeros) */
    memcpy(dy, dx, sizeof *dy * TN * (size_t)in);
    for (int64_t t = 0; l > 0 && t < p.T; t++)
      for (int64_t n = 0; n < p.N; n++)
        if (t >= p.len[n]) memset(dy + (size_t)(t * p.N + n) * (size_t)in, 0, sizeof *dy * (size_t)in);
  }
  if (st) goto out;
  pd_tensor *o;
  if ((st = out_opt(ctx, "Input@GRAD", &o)) ||
      (st = put(ctx, &p, o, 3, pd_ctx_in(ctx, "Input")->dims, dy)))
    goto out;
  for (int i = 0; i < ns; i++) {
    if ((st = out_at(ctx, "PreState@GRAD", i, false, &o))) goto out;
    const pd_tensor *s = pd_ctx_in_at(ctx, "PreState", i);
    if ((st = put(ctx, &p, o, 3, s->dims, dst + (size_t)i * SS))) goto out;
  }
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
  pd_free(tmp);
  pd_free(prev);
  rplan_free(&p);
  return st;
}
