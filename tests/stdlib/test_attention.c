/* test_attention.c -- multi_head_attention, transformer_encoder_layer, causal_mask and
 * positional_embedding of stdlib/layers.pd. Each case is a .pd script compiled in fp64 whose
 * parameters are then set to fixed, distinct values; its output is checked against a naive
 * reference written here from paddle.nn.MultiHeadAttention's and
 * paddle.nn.TransformerEncoderLayer's formulas (projections x W + b; per head softmax(q k^T /
 * sqrt(d / heads) + mask) v; the heads joined and projected; residual + layer_norm after the
 * sublayer, or before it with normalize_before), with a bool or int64 padding keep-mask [N, 1,
 * 1, Tk], the additive causal mask [T, T] and no mask, self- and cross-attention (k and v of
 * another length and width); and every parameter's gradient (the input's too, through a learned scale
 * of it) against central finite differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/lang/fp64.h"
#include "tests/lang/fp64_grad.h"
#include "vm/passes/backward.h"
#include "vm/run/exec.h"

enum { N = 2, TQ = 3, TK = 4, D = 4, DK = 3, H = 2, FF = 6, MAXT = 4 };

/* A fixed value for element j of the parameter numbered k: spread over about [-0.8, 0.8]. */
static double fixed(int k, int64_t j) { return 0.8 * sin(1.3 * (double)j + 0.7 * k + 0.2); }
/* Input element j of the input numbered k: about [-1.5, 1.5]. */
static double input(int k, int64_t j) { return 1.5 * cos(0.9 * (double)j + 1.1 * k + 0.5); }
/* Which keys are kept by the padding mask: sequence 0 has all TK (or TQ) keys, sequence 1 the
 * first 2. */
static bool kept(int n, int j) { return n == 0 || j < 2; }

typedef struct acase {
  pd_source *src;
  pd_unit *unit;
  pd_runner *r;
  pd_program *fwd, *bwd;
  pd_exec *fex, *bex;
  pd_backward pg;
  pd_error err;
  pd_tensor in[3];
  pd_exec_feed feed[3];
  int nfeed;
} acase;

static void acase_free(acase *c) {
  pd_exec_free(c->fex);
  pd_exec_free(c->bex);
  pd_program_free(c->fwd);
  pd_program_free(c->bwd);
  pd_backward_release(&c->pg);
  pd_runner_free(c->r);
  pd_unit_free(c->unit);
  pd_source_free(c->src);
  for (int i = 0; i < 3; i++) pd_tensor_release(&c->in[i]);
  pd_error_clear(&c->err);
}

static pd_tensor *param_tensor(acase *c, const char *name) {
  return fp64_param(pd_runner_scope(c->r), name);
}

static const double *pv(acase *c, const char *name) {
  pd_tensor *t = param_tensor(c, name);
  if (!t) printf("# no fp64 parameter %s\n", name);
  return t ? PD_TENSOR_F64(t) : NULL;
}

/* The inputs: "x" [N, TQ, D], "kv" [N, TK, DK] (cross-attention) and "m" [N, 1, 1, T] (1 where
 * kept(), else 0; T is TK with kv, TQ without); input k holds input(k, .). */
static double xv[N * TQ * D], kvv[N * TK * DK], mv[N * MAXT];

static void make_inputs(int tmask) {
  for (int j = 0; j < N * TQ * D; j++) xv[j] = input(0, j);
  for (int j = 0; j < N * TK * DK; j++) kvv[j] = input(1, j);
  for (int n = 0; n < N; n++)
    for (int j = 0; j < tmask; j++) mv[n * tmask + j] = kept(n, j) ? 1 : 0;
}

/* Compile `text`, set every trainable parameter (in the backward pass's order, k-th gets
 * fixed(k, .)) but "xscale" (1), feed the inputs the script declares. */
static bool setup(acase *c, const char *name, const char *text, bool cross, int tmask) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < 3; i++) pd_tensor_init(&c->in[i]);
  make_inputs(tmask);
  pd_status st = fp64_setup(name, text, "cost", &c->src, &c->unit, &c->r, &c->fwd, &c->err);
  int64_t dx[3] = {N, TQ, D}, dkv[3] = {N, TK, DK}, dm[4] = {N, 1, 1, tmask};
  if (!st) st = pd_tensor_set_data(&c->in[0], PD_FP64, 3, dx, xv);
  c->feed[c->nfeed++] = (pd_exec_feed){"x", &c->in[0]};
  if (!st && cross) {
    st = pd_tensor_set_data(&c->in[1], PD_FP64, 3, dkv, kvv);
    c->feed[c->nfeed++] = (pd_exec_feed){"kv", &c->in[1]};
  }
  if (!st && tmask) {
    st = pd_tensor_set_data(&c->in[2], PD_FP64, 4, dm, mv);
    c->feed[c->nfeed++] = (pd_exec_feed){"m", &c->in[2]};
  }
  if (!st && !(c->bwd = pd_program_clone(c->fwd))) st = PD_ENOMEM;
  if (!st) st = pd_append_backward(c->bwd, "cost", &c->pg, &c->err);
  for (int k = 0; !st && k < c->pg.n; k++) {
    pd_tensor *t = param_tensor(c, c->pg.pairs[k].param);
    if (!t) {
      st = PD_EINVAL;
      break;
    }
    bool unit = strcmp(c->pg.pairs[k].param, "xscale") == 0;
    for (int64_t j = 0; j < pd_tensor_numel(t); j++) PD_TENSOR_F64(t)[j] = unit ? 1 : fixed(k, j);
  }
  if (!st) st = pd_exec_new(c->fwd, NULL, &c->fex, &c->err);
  if (!st) st = pd_exec_new(c->bwd, NULL, &c->bex, &c->err);
  if (st) printf("# %s: %s\n", name, c->err.msg ? c->err.msg : pd_status_str(st));
  return st == PD_OK;
}

/* Every parameter's gradient against central differences of the cost. */
static void check_grads(acase *c, const char *name, int want) {
  fp64_grad_run g = {c->fex, c->bex, pd_runner_scope(c->r), &c->pg,
                     {c->nfeed, c->feed, 0, NULL}, "cost", &c->err};
  fp64_check_grads(&g, name, want);
}

/* ---- The reference, from the formulas. */

/* out[r][o] = sum_i in[r][i] w[i][o] + b[o], rows r of width din -> dout. */
static void linear(const double *in, int rows, int din, const double *w, const double *b,
                   int dout, double *out) {
  for (int r = 0; r < rows; r++)
    for (int o = 0; o < dout; o++) {
      double s = b[o];
      for (int i = 0; i < din; i++) s += in[r * din + i] * w[i * dout + o];
      out[r * dout + o] = s;
    }
}

enum { MASK_NONE, MASK_PAD, MASK_CAUSAL };

/* paddle.nn.MultiHeadAttention over q [N, tq, D] and k = v [N, tk, dk]; p: the weights and
 * biases of the projections q, k, v, out. The scale 1 / sqrt(D / H) is a `scale` op's
 * attribute, fp32 in Fluid: the float nearest it. */
static void ref_mha(const double *q, int tq, const double *kv, int tk, int dk, int mask,
                    const double *const p[8], double *out) {
  double Q[N * MAXT * D], K[N * MAXT * D], V[N * MAXT * D], O[N * MAXT * D];
  const int hd = D / H;
  linear(q, N * tq, D, p[0], p[1], D, Q);
  linear(kv, N * tk, dk, p[2], p[3], D, K);
  linear(kv, N * tk, dk, p[4], p[5], D, V);
  for (int n = 0; n < N; n++)
    for (int h = 0; h < H; h++)
      for (int i = 0; i < tq; i++) {
        double s[MAXT], mx = -INFINITY, z = 0;
        for (int j = 0; j < tk; j++) {
          double dot = 0;
          for (int c = 0; c < hd; c++)
            dot += Q[(n * tq + i) * D + h * hd + c] * K[(n * tk + j) * D + h * hd + c];
          s[j] = dot * (double)(float)(1 / sqrt((double)hd));
          if (mask == MASK_PAD && !kept(n, j)) s[j] += -1e9;
          if (mask == MASK_CAUSAL && j > i) s[j] += -1e9;
          if (s[j] > mx) mx = s[j];
        }
        for (int j = 0; j < tk; j++) z += (s[j] = exp(s[j] - mx));
        for (int c = 0; c < hd; c++) {
          double o = 0;
          for (int j = 0; j < tk; j++) o += s[j] / z * V[(n * tk + j) * D + h * hd + c];
          O[(n * tq + i) * D + h * hd + c] = o;
        }
      }
  linear(O, N * tq, D, p[6], p[7], D, out);
}

/* layer_norm of each row of width D, scale g, bias b, epsilon 1e-5 (an fp32 attribute, as
 * Fluid's: the float nearest 1e-5). */
static void ref_ln(double *x, int rows, const double *g, const double *b) {
  for (int r = 0; r < rows; r++) {
    double m = 0, v = 0;
    for (int i = 0; i < D; i++) m += x[r * D + i] / D;
    for (int i = 0; i < D; i++) v += (x[r * D + i] - m) * (x[r * D + i] - m) / D;
    for (int i = 0; i < D; i++)
      x[r * D + i] = (x[r * D + i] - m) / sqrt(v + (double)1e-5f) * g[i] + b[i];
  }
}

/* paddle.nn.TransformerEncoderLayer (dropout 0) over x [N, TQ, D]: the attention's projections,
 * norm1 (around the attention), norm2 (around the feed-forward network), its two linears. */
typedef struct enc_params {
  const double *attn[8], *ln1g, *ln1b, *ln2g, *ln2b, *w1, *b1, *w2, *b2;
} enc_params;

static void ref_encoder(const double *x, bool pre, bool gelu, int mask, const enc_params *p,
                        double *out) {
  enum { R = N * TQ };
  double h[R * D], a[R * D], f[R * FF], y[R * D];
  memcpy(h, x, sizeof h);
  if (pre) ref_ln(h, R, p->ln1g, p->ln1b);
  ref_mha(h, TQ, h, TQ, D, mask, p->attn, a);
  for (int i = 0; i < R * D; i++) y[i] = x[i] + a[i];
  if (!pre) ref_ln(y, R, p->ln1g, p->ln1b);
  memcpy(h, y, sizeof h);
  if (pre) ref_ln(h, R, p->ln2g, p->ln2b);
  linear(h, R, D, p->w1, p->b1, FF, f);
  for (int i = 0; i < R * FF; i++)
    f[i] = gelu ? 0.5 * f[i] * (1 + erf(f[i] / sqrt(2.0))) : (f[i] > 0 ? f[i] : 0);
  linear(f, R, FF, p->w2, p->b2, D, a);
  for (int i = 0; i < R * D; i++) out[i] = y[i] + a[i];
  if (!pre) ref_ln(out, R, p->ln2g, p->ln2b);
}

static double max_diff(const pd_tensor *t, const double *want, int64_t n) {
  if (t->dtype != PD_FP64 || pd_tensor_numel(t) != n) return INFINITY;
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs(PD_TENSOR_F64(t)[i] - want[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

/* Runs the forward program and compares "out_y" with want [N, TQ, D]. */
static void check_values(acase *c, const char *name, const double *want) {
  pd_tensor y;
  pd_tensor_init(&y);
  pd_exec_fetch f = {"out_y", &y};
  pd_exec_io io = {c->nfeed, c->feed, 1, &f};
  pd_status st = pd_exec_run(c->fex, pd_runner_scope(c->r), &io, NULL, &c->err);
  if (!ok(st == PD_OK, "%s: runs", name)) printf("#   %s\n", c->err.msg ? c->err.msg : "?");
  double d = st == PD_OK ? max_diff(&y, want, N * TQ * D) : INFINITY;
  ok(d <= 1e-12 && y.ndims == 3 && y.dims[1] == TQ,
     "%s: the output [%d, %d, %d] matches the reference (max diff %.3g)", name, N, TQ, D, d);
  pd_tensor_release(&y);
}

#define PRELUDE                                                                                \
  "import \"layers\"\n"                                                                        \
  "x = data(\"x\", [-1, 3, 4]) * param([4], init = 1.0, name = \"xscale\")\n"

#define COST "out_y = y * 1\ncost = mean(out_y * out_y) + mean(out_y * var([1, -2, 3, 0.5]))\n"

static void test_mha(const char *name, const char *call, bool cross, int mask) {
  char text[1024];
  snprintf(text, sizeof text,
           PRELUDE "kv = data(\"kv\", [-1, 4, 3])\nm = data(\"m\", [-1, 1, 1, %d])\ny = %s\n" COST,
           cross ? TK : TQ, call);
  acase c;
  int tmask = mask == MASK_PAD ? (cross ? TK : TQ) : 0;
  if (!ok(setup(&c, name, text, cross, tmask), "%s: builds", name)) {
    acase_free(&c);
    return;
  }
  const double *p[8];
  const char *pn[8] = {"linear_0.w_0", "linear_0.b_0", "linear_1.w_0", "linear_1.b_0",
                       "linear_2.w_0", "linear_2.b_0", "linear_3.w_0", "linear_3.b_0"};
  bool have = true;
  for (int i = 0; i < 8; i++) have &= (p[i] = pv(&c, pn[i])) != NULL;
  double want[N * TQ * D];
  if (have) {
    ref_mha(xv, TQ, cross ? kvv : xv, cross ? TK : TQ, cross ? DK : D, mask, p, want);
    check_values(&c, name, want);
  }
  check_grads(&c, name, 9);
  acase_free(&c);
}

static void test_encoder(const char *name, const char *call, bool pre, bool gelu, int mask) {
  char text[1024];
  snprintf(text, sizeof text, PRELUDE "m = data(\"m\", [-1, 1, 1, 3])\ny = %s\n" COST, call);
  acase c;
  if (!ok(setup(&c, name, text, false, mask == MASK_PAD ? TQ : 0), "%s: builds", name)) {
    acase_free(&c);
    return;
  }
  enc_params p;
  const char *pn[8] = {"linear_0.w_0", "linear_0.b_0", "linear_1.w_0", "linear_1.b_0",
                       "linear_2.w_0", "linear_2.b_0", "linear_3.w_0", "linear_3.b_0"};
  bool have = true;
  for (int i = 0; i < 8; i++) have &= (p.attn[i] = pv(&c, pn[i])) != NULL;
  have &= (p.ln1g = pv(&c, "layer_norm_0.w_0")) && (p.ln1b = pv(&c, "layer_norm_0.b_0")) &&
          (p.ln2g = pv(&c, "layer_norm_1.w_0")) && (p.ln2b = pv(&c, "layer_norm_1.b_0")) &&
          (p.w1 = pv(&c, "linear_4.w_0")) && (p.b1 = pv(&c, "linear_4.b_0")) &&
          (p.w2 = pv(&c, "linear_5.w_0")) && (p.b2 = pv(&c, "linear_5.b_0"));
  double want[N * TQ * D];
  if (have) {
    ref_encoder(xv, pre, gelu, mask, &p, want);
    check_values(&c, name, want);
  }
  check_grads(&c, name, 17);
  acase_free(&c);
}

/* causal_mask(T): 0 where j <= i, -1e9 above the diagonal (fp32, as built). */
static void test_causal_mask(void) {
  static const char text[] = "import \"layers\"\nout_m = causal_mask(5) * 1\ncost = mean(out_m)\n";
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  pd_runner *r = NULL;
  pd_program *fwd = NULL;
  pd_exec *ex = NULL;
  pd_error err = {0};
  pd_tensor t;
  pd_tensor_init(&t);
  pd_status st = fp64_setup("causal.pd", text, "cost", &src, &unit, &r, &fwd, &err);
  if (!st) st = pd_exec_new(fwd, NULL, &ex, &err);
  pd_exec_fetch f = {"out_m", &t};
  pd_exec_io io = {0, NULL, 1, &f};
  if (!st) st = pd_exec_run(ex, pd_runner_scope(r), &io, NULL, &err);
  bool good = !st && t.dtype == PD_FP64 && t.ndims == 2 && t.dims[0] == 5 && t.dims[1] == 5;
  for (int i = 0; good && i < 5; i++)
    for (int j = 0; j < 5; j++) good &= PD_TENSOR_F64(&t)[i * 5 + j] == (j > i ? -1e9 : 0);
  ok(good, "causal_mask(5): 0 on and below the diagonal, -1e9 above it");
  if (st) printf("#   %s\n", err.msg ? err.msg : pd_status_str(st));
  pd_tensor_release(&t);
  pd_exec_free(ex);
  pd_program_free(fwd);
  pd_runner_free(r);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_error_clear(&err);
}

/* positional_embedding(x): x plus a parameter [TQ, D] for every sequence. */
static void test_positional(void) {
  const char *name = "positional_embedding";
  acase c;
  if (!ok(setup(&c, name, PRELUDE "y = positional_embedding(x)\n" COST, false, 0), "%s: builds",
          name)) {
    acase_free(&c);
    return;
  }
  const double *p = pv(&c, "positional_embedding_0.w_0");
  double want[N * TQ * D];
  for (int i = 0; p && i < N * TQ * D; i++) want[i] = xv[i] + p[i % (TQ * D)];
  if (p) check_values(&c, name, want);
  check_grads(&c, name, 2);
  acase_free(&c);
}

int main(void) {
  test_causal_mask();
  test_positional();
  test_mha("self-attention, no mask", "multi_head_attention(x, x, x, 2)", false, MASK_NONE);
  test_mha("self-attention, bool padding mask",
           "multi_head_attention(x, x, x, 2, mask = m > 0.5)", false, MASK_PAD);
  test_mha("self-attention, int64 padding mask",
           "multi_head_attention(x, x, x, 2, mask = cast(m, int64))", false, MASK_PAD);
  test_mha("self-attention, causal mask", "multi_head_attention(x, x, x, 2, mask = causal_mask(3))",
           false, MASK_CAUSAL);
  test_mha("cross-attention, float padding mask",
           "multi_head_attention(x, kv, kv, 2, mask = (m - 1.0) * 1e9)", true, MASK_PAD);
  test_encoder("encoder, post-norm, relu, padding mask",
               "transformer_encoder_layer(x, 4, 2, 6, dropout = 0.0, mask = m > 0.5)", false,
               false, MASK_PAD);
  test_encoder("encoder, pre-norm, gelu, causal mask",
               "transformer_encoder_layer(x, 4, 2, 6, dropout = 0.0, act = gelu, "
               "normalize_before = true, mask = causal_mask(3))",
               true, true, MASK_CAUSAL);
  return tap_done();
}
