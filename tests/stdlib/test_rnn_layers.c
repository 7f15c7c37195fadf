/* test_rnn_layers.c -- the lstm and gru layers of stdlib/layers.pd (`for` bodies over a batch of
 * sequences). Each case is a .pd script compiled in fp64 whose parameters (weights, biases,
 * initial states) are then set to fixed, distinct values. Checked: the per-step outputs and the
 * last states against a naive reference written here from PyTorch's / paddle.nn's equations
 * (LSTM gates i, f, g, o: c' = f c + i g, h' = o tanh(c'); GRU r, z, n: n = tanh(xn + r (h
 * W_hn + b_hn)), h' = (1 - z) n + z h), over sequences of lengths 1, 4 and 2 (so the loop
 * reorders them), forwards and in reverse, with initial states per sequence, shared, or left
 * out; that the hoisting pass (vm/passes/hoist.h) moves the input projection x W_ih + b out of
 * the loop and leaves one product (h W_hh) in the step block, and that the passes of `train`
 * after it (vm/passes/pipeline.h) make the loop one fused_lstm / fused_gru op (equal to the loop
 * as written) and the projection an fc op; and
 * every parameter's gradient, of the program as written, hoisted, and as `train` rewrites it,
 * against central finite differences (also through a layer inside a loop over sequences of
 * sequences). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "tests/lang/fp64.h"
#include "vm/passes/backward.h"
#include "vm/passes/fuse_fc.h"
#include "vm/passes/fuse_rnn.h"
#include "vm/passes/hoist.h"
#include "vm/run/exec.h"

enum { IN = 2, H = 3, NSEQ = 3, ROWS = 7 };
static const int64_t lod[NSEQ + 1] = {0, 1, 5, 7}; /* lengths 1, 4, 2 */
static const double xs[ROWS][IN] = {{0.5, -1.0}, {0.25, 1.5},  {-0.5, 0.75}, {2.0, -0.25},
                                     {1.0, 0.125}, {-1.5, 0.5}, {1.25, -0.75}};

/* A fixed value for element j of the parameter numbered k: spread over about [-0.8, 0.8]. */
static double fixed(int k, int64_t j) { return 0.8 * sin(1.7 * (double)j + 0.9 * k + 0.3); }

typedef struct rcase {
  pd_source *src;
  pd_unit *unit;
  pd_runner *r;
  pd_program *fwd, *bwd;
  pd_exec *fex, *bex;
  pd_backward pg;
  pd_error err;
  pd_tensor x;
  pd_exec_feed feed;
} rcase;

static void rcase_free(rcase *c) {
  pd_exec_free(c->fex);
  pd_exec_free(c->bex);
  pd_program_free(c->fwd);
  pd_program_free(c->bwd);
  pd_backward_release(&c->pg);
  pd_runner_free(c->r);
  pd_unit_free(c->unit);
  pd_source_free(c->src);
  pd_tensor_release(&c->x);
  pd_error_clear(&c->err);
}

static pd_tensor *param_tensor(rcase *c, const char *name) {
  pd_variable *v = pd_scope_find_local_var(pd_runner_scope(c->r), name);
  pd_tensor *t = v ? pd_var_tensor(v) : NULL;
  return t && t->dtype == PD_FP64 ? t : NULL;
}

/* Compile `text`, set the parameters named in params[] to fixed values (parameter k gets
 * fixed(k, .)), feed x (the 7 rows above, LoD `lod`), rewrite the forward program (passes 0:
 * none; 1: hoisted, *moved the ops moved; 2: hoisted, then fuse_rnn and fuse_fc as `train`
 * does, *fused the loops fused and *fc the fc ops made), and build its backward pass. */
static bool setup(rcase *c, const char *name, const char *text, const char *const *params,
                  int nparams, int passes, int *moved, int *fused, int *fc) {
  memset(c, 0, sizeof *c);
  pd_tensor_init(&c->x);
  pd_status st = fp64_setup(name, text, "cost", &c->src, &c->unit, &c->r, &c->fwd, &c->err);
  for (int k = 0; !st && k < nparams; k++) {
    pd_tensor *t = param_tensor(c, params[k]);
    if (!t) {
      printf("# %s: no fp64 parameter %s\n", name, params[k]);
      st = PD_EINVAL;
      break;
    }
    for (int64_t j = 0; j < pd_tensor_numel(t); j++) PD_TENSOR_F64(t)[j] = fixed(k, j);
  }
  int64_t dims[2] = {ROWS, IN};
  const int64_t *offs[1] = {lod};
  int64_t n = NSEQ + 1;
  if (!st) st = pd_tensor_set_data(&c->x, PD_FP64, 2, dims, xs);
  if (!st) st = pd_tensor_set_lod(&c->x, 1, offs, &n);
  c->feed = (pd_exec_feed){"x", &c->x};
  if (!st && passes >= 1) st = pd_program_hoist(c->fwd, moved, &c->err);
  if (!st && passes >= 2) st = pd_program_fuse_rnn(c->fwd, fused, &c->err);
  if (!st && passes >= 2) st = pd_program_fuse_fc(c->fwd, fc, &c->err);
  if (!st) st = pd_program_validate(c->fwd, &c->err);
  if (!st && !(c->bwd = pd_program_clone(c->fwd))) st = PD_ENOMEM;
  if (!st) st = pd_append_backward(c->bwd, "cost", &c->pg, &c->err);
  if (!st) st = pd_program_validate(c->bwd, &c->err);
  if (!st) st = pd_exec_new(c->fwd, NULL, &c->fex, &c->err);
  if (!st) st = pd_exec_new(c->bwd, NULL, &c->bex, &c->err);
  if (st) printf("# %s: %s\n", name, c->err.msg ? c->err.msg : pd_status_str(st));
  return st == PD_OK;
}

static double run_cost(rcase *c) {
  pd_tensor t;
  pd_tensor_init(&t);
  pd_exec_fetch f = {"cost", &t};
  pd_exec_io io = {1, &c->feed, 1, &f};
  double v = NAN;
  if (pd_exec_run(c->fex, pd_runner_scope(c->r), &io, NULL, &c->err) == PD_OK &&
      t.dtype == PD_FP64)
    v = PD_TENSOR_F64(&t)[0];
  else printf("# run: %s\n", c->err.msg ? c->err.msg : "?");
  pd_tensor_release(&t);
  return v;
}

/* Every parameter's gradient against central differences of the cost (relative 1e-6). */
static void check_grads(rcase *c, const char *name, int want) {
  ok(c->pg.n >= want, "%s: %d parameters get gradients (want %d)", name, c->pg.n, want);
  int n = c->pg.n;
  pd_tensor *g = calloc((size_t)n + 1, sizeof *g);
  pd_exec_fetch *f = calloc((size_t)n + 1, sizeof *f);
  for (int i = 0; i < n; i++) {
    pd_tensor_init(&g[i]);
    f[i] = (pd_exec_fetch){c->pg.pairs[i].grad, &g[i]};
  }
  pd_exec_io io = {1, &c->feed, n, f};
  pd_status st = pd_exec_run(c->bex, pd_runner_scope(c->r), &io, NULL, &c->err);
  if (!ok(st == PD_OK, "%s: forward + backward runs", name))
    printf("#   %s\n", c->err.msg ? c->err.msg : "?");
  for (int i = 0; st == PD_OK && i < n; i++) {
    pd_tensor *p = param_tensor(c, c->pg.pairs[i].param);
    bool shaped = p && g[i].dtype == PD_FP64 && pd_tensor_numel(p) == pd_tensor_numel(&g[i]);
    double worst = 0, at_a = 0, at_n = 0;
    int64_t at = -1;
    for (int64_t j = 0; shaped && j < pd_tensor_numel(p); j++) {
      double *x = &PD_TENSOR_F64(p)[j], x0 = *x, h = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1);
      *x = x0 + h;
      double lp = run_cost(c);
      *x = x0 - h;
      double lm = run_cost(c);
      *x = x0;
      double num = (lp - lm) / (2 * h), ana = PD_TENSOR_F64(&g[i])[j];
      double rel = fabs(num - ana) / (fabs(num) > 1 ? fabs(num) : 1);
      if (!(rel <= worst)) {
        worst = rel;
        at = j;
        at_a = ana;
        at_n = num;
      }
    }
    if (!ok(shaped && worst <= 1e-6, "%s: d cost / d %s matches finite differences", name,
            c->pg.pairs[i].param))
      printf("#   element %lld: analytic %.12g, numeric %.12g (rel %.3g)%s\n", (long long)at,
             at_a, at_n, worst, shaped ? "" : " (gradient missing or misshapen)");
  }
  for (int i = 0; i < n; i++) pd_tensor_release(&g[i]);
  free(g);
  free(f);
}

/* ---- The reference. */

static double sigm(double v) { return 1 / (1 + exp(-v)); }

/* One layer over the batch: gates = 4 (LSTM) or 3 (GRU); w_ih [IN, gates H], w_hh [H, gates H],
 * b (LSTM) or b_ih and b_hh (GRU) [gates H]; h0 and c0 NULL (zeros), [H] (shared) or [NSEQ, H]
 * (per_seq; in the scripts, computed from a parameter [IN, H] and each sequence's first row).
 * Writes hs [ROWS, H] (row r: the h after element r), h and c [NSEQ, H] (the last step's: the
 * last element's, or the first's in reverse). */
typedef struct ref_args {
  int gates;
  const double *w_ih, *w_hh, *b_ih, *b_hh, *h0, *c0;
  bool per_seq, reverse;
} ref_args;

static void reference(const ref_args *a, double hs[ROWS][H], double hl[NSEQ][H],
                      double cl[NSEQ][H]) {
  const int G = a->gates * H;
  for (int s = 0; s < NSEQ; s++) {
    double h[H], c[H];
    for (int j = 0; j < H; j++) {
      h[j] = a->h0 ? a->h0[(a->per_seq ? s * H : 0) + j] : 0;
      c[j] = a->c0 ? a->c0[(a->per_seq ? s * H : 0) + j] : 0;
    }
    int64_t len = lod[s + 1] - lod[s];
    for (int64_t k = 0; k < len; k++) {
      int64_t r = lod[s] + (a->reverse ? len - 1 - k : k);
      double gx[4 * H], gh[4 * H];
      for (int q = 0; q < G; q++) {
        gx[q] = a->b_ih[q];
        gh[q] = a->b_hh ? a->b_hh[q] : 0;
        for (int i = 0; i < IN; i++) gx[q] += xs[r][i] * a->w_ih[i * G + q];
        for (int i = 0; i < H; i++) gh[q] += h[i] * a->w_hh[i * G + q];
      }
      for (int j = 0; j < H; j++) {
        if (a->gates == 4) { /* i, f, g, o */
          double ig = sigm(gx[j] + gh[j]), fg = sigm(gx[H + j] + gh[H + j]);
          double gg = tanh(gx[2 * H + j] + gh[2 * H + j]), og = sigm(gx[3 * H + j] + gh[3 * H + j]);
          c[j] = fg * c[j] + ig * gg;
          hs[r][j] = og * tanh(c[j]);
        } else { /* r, z, n */
          double rg = sigm(gx[j] + gh[j]), zg = sigm(gx[H + j] + gh[H + j]);
          double ng = tanh(gx[2 * H + j] + rg * gh[2 * H + j]);
          hs[r][j] = (1 - zg) * ng + zg * h[j];
        }
      }
      for (int j = 0; j < H; j++) h[j] = hs[r][j];
    }
    for (int j = 0; j < H; j++) {
      hl[s][j] = h[j];
      cl[s][j] = c[j];
    }
  }
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

/* The op types of the step block of the program's first recurrent op, joined by commas; and
 * how many of them are `what`. */
static int step_ops(const pd_program *p, const char *what, char *buf, size_t n) {
  const pd_block *b0 = p->blocks[0], *sb = NULL;
  for (int i = 0; i < b0->nops && !sb; i++)
    if (strcmp(b0->ops[i]->type, "recurrent") == 0) {
      const pd_attr *a = pd_op_attr(b0->ops[i], "sub_block");
      sb = a ? pd_program_block(p, a->v.i) : NULL;
    }
  size_t k = 0;
  int count = 0;
  buf[0] = '\0';
  for (int i = 0; sb && i < sb->nops && k < n; i++) {
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "", sb->ops[i]->type);
    count += strcmp(sb->ops[i]->type, what) == 0;
  }
  return count;
}

/* A case: the script (which defines hs, h and, for an LSTM, c, and cost from them), its
 * parameters in the order of ref_args' pointers, the reference's arguments. */
typedef struct lcase {
  const char *name, *text;
  const char *params[8];
  int nparams;
  ref_args ref;
  const char *w_ih, *w_hh, *b_ih, *b_hh, *h0, *c0; /* which params the reference reads */
} lcase;

static const double *pvalues(rcase *c, const char *name) {
  pd_tensor *t = name ? param_tensor(c, name) : NULL;
  return t ? PD_TENSOR_F64(t) : NULL;
}

static void run_case(lcase *lc) {
  static const char *const how[3] = {"", " (hoisted)", " (as train rewrites it)"};
  double unfused[3][ROWS * H]; /* hs, h and c of the loop as written */
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < ROWS * H; j++) unfused[i][j] = NAN;
  for (int passes = 0; passes < 3; passes++) {
    char name[96];
    snprintf(name, sizeof name, "%s%s", lc->name, how[passes]);
    rcase c;
    int moved = 0, fused = -1, fc = -1;
    if (!setup(&c, name, lc->text, lc->params, lc->nparams, passes, &moved, &fused, &fc)) {
      ok(0, "%s: builds", name);
      rcase_free(&c);
      continue;
    }
    ref_args a = lc->ref;
    a.w_ih = pvalues(&c, lc->w_ih);
    a.w_hh = pvalues(&c, lc->w_hh);
    a.b_ih = pvalues(&c, lc->b_ih);
    a.b_hh = pvalues(&c, lc->b_hh);
    /* Initial states per sequence: tanh(x's first row of the sequence times P [IN, H]). */
    double st0[2][NSEQ * H];
    const char *init[2] = {lc->h0, lc->c0};
    for (int k = 0; k < 2; k++) {
      const double *P = pvalues(&c, init[k]);
      for (int q = 0; P && a.per_seq && q < NSEQ * H; q++) {
        double v = 0;
        for (int i = 0; i < IN; i++) v += xs[lod[q / H]][i] * P[i * H + q % H];
        st0[k][q] = tanh(v);
      }
      if (k == 0) a.h0 = P && a.per_seq ? st0[0] : P;
      else a.c0 = P && a.per_seq ? st0[1] : P;
    }
    double hs[ROWS][H], hl[NSEQ][H], cl[NSEQ][H];
    reference(&a, hs, hl, cl);
    bool lstm = a.gates == 4;
    pd_tensor out[3];
    pd_exec_fetch f[3] = {{"out_hs", &out[0]}, {"out_h", &out[1]}, {"out_c", &out[2]}};
    for (int i = 0; i < 3; i++) pd_tensor_init(&out[i]);
    pd_exec_io io = {1, &c.feed, lstm ? 3 : 2, f};
    pd_status st = pd_exec_run(c.fex, pd_runner_scope(c.r), &io, NULL, &c.err);
    if (!ok(st == PD_OK, "%s: runs", name)) printf("#   %s\n", c.err.msg ? c.err.msg : "?");
    if (st == PD_OK && passes == 0)
      for (int i = 0; i < 3; i++)
        for (int64_t j = 0; j < ROWS * H; j++)
          unfused[i][j] = out[i].dtype == PD_FP64 && j < pd_tensor_numel(&out[i])
                              ? PD_TENSOR_F64(&out[i])[j] : NAN;
    if (st == PD_OK && passes == 2) {
      double d = 0;
      for (int i = 0; i < (lstm ? 3 : 2); i++) {
        double di = max_diff(&out[i], unfused[i], i ? NSEQ * H : ROWS * H);
        if (!(di <= d)) d = di;
      }
      ok(d <= 1e-12, "%s: the fused op's outputs equal the loop's as written (max diff %.3g)",
         name, d);
    }
    if (st == PD_OK) {
      double d = max_diff(&out[0], &hs[0][0], ROWS * H);
      ok(d <= 1e-12 && out[0].nlod == 1 && out[0].lod[0].n == NSEQ + 1 &&
             out[0].lod[0].offsets[2] == lod[2],
         "%s: the per-step outputs match the reference, with x's LoD (max diff %.3g)", name, d);
      d = max_diff(&out[1], &hl[0][0], NSEQ * H);
      ok(d <= 1e-12, "%s: the last h matches the reference (max diff %.3g)", name, d);
      if (lstm) {
        d = max_diff(&out[2], &cl[0][0], NSEQ * H);
        ok(d <= 1e-12, "%s: the last c matches the reference (max diff %.3g)", name, d);
      }
    }
    for (int i = 0; i < 3; i++) pd_tensor_release(&out[i]);
    if (passes == 1) {
      char buf[512];
      int muls = step_ops(c.fwd, "mul", buf, sizeof buf);
      ok(moved >= 2 && muls == 1,
         "%s: x W_ih + b leaves the loop (%d ops moved), one product per step [%s]", name,
         moved, buf);
    }
    if (passes == 2) {
      const char *want = lstm ? "fused_lstm" : "fused_gru";
      int nfused = 0, nloops = 0;
      for (int i = 0; i < c.fwd->blocks[0]->nops; i++) {
        nfused += strcmp(c.fwd->blocks[0]->ops[i]->type, want) == 0;
        nloops += strcmp(c.fwd->blocks[0]->ops[i]->type, "recurrent") == 0;
      }
      ok(fused == 1 && nfused == 1 && nloops == 0 && fc >= 1,
         "%s: the loop became one %s op (%d fused, %d loops left), the projection an fc op (%d)",
         name, want, fused, nloops, fc);
    }
    check_grads(&c, name, lc->nparams);
    rcase_free(&c);
  }
}

#define LSTM_SCRIPT(call)                                                                      \
  "import \"layers\"\n"                                                                        \
  "x = data(\"x\", [-1, 2], float32, lod_level = 1)\n"                                         \
  "s = param([2], init = 1.0, name = \"xscale\")\n"                                            \
  "w_ih = param([2, 12], name = \"L.w_0\")\n"                                                  \
  "w_hh = param([3, 12], name = \"L.w_1\")\n"                                                  \
  "b = param([12], name = \"L.b_0\")\n"                                                        \
  "h0 = tanh(mul(first_step(x), param([2, 3], name = \"h0p\")))\n"                             \
  "c0 = tanh(mul(first_step(x), param([2, 3], name = \"c0p\")))\n"                             \
  "hs, h, c = " call "\n"                                                                      \
  "out_hs = hs * 1\n"                                                                          \
  "out_h = h * 1\n"                                                                            \
  "out_c = c * 1\n"                                                                            \
  "cost = mean(out_hs * out_hs) + mean(out_h * var([1, -2, 3])) + mean(out_c * out_c)\n"

#define GRU_SCRIPT(call)                                                                       \
  "import \"layers\"\n"                                                                        \
  "x = data(\"x\", [-1, 2], float32, lod_level = 1)\n"                                         \
  "s = param([2], init = 1.0, name = \"xscale\")\n"                                            \
  "w_ih = param([2, 9], name = \"G.w_0\")\n"                                                   \
  "w_hh = param([3, 9], name = \"G.w_1\")\n"                                                   \
  "b_ih = param([9], name = \"G.b_0\")\n"                                                      \
  "b_hh = param([9], name = \"G.b_1\")\n"                                                      \
  "h0 = tanh(mul(first_step(x), param([2, 3], name = \"h0p\")))\n"                             \
  "h0s = param([3], name = \"h0s\")\n"                                                         \
  "hs, h = " call "\n"                                                                         \
  "out_hs = hs * 1\n"                                                                          \
  "out_h = h * 1\n"                                                                            \
  "cost = mean(out_hs * out_hs) + mean(out_h * var([1, -2, 3]))\n"

/* A layer inside a loop over sequences of sequences: each step's sentences run through one
 * LSTM (and one GRU), whose last h feeds the outer memory. Gradients only. */
static const char nested[] =
    "import \"layers\"\n"
    "x = data(\"x\", [-1, 2], float32, lod_level = 2)\n"
    "p = zeros([3])\n"
    "for (sent in x) {\n"
    "    hs, h, c = lstm(sent, 3, h0 = p, name = \"L\")\n"
    "    gs, g = gru(sent, 3, reverse = true, name = \"G\")\n"
    "    p = tanh(h + g * p)\n"
    "    emit ps = p\n"
    "}\n"
    "cost = mean(ps * ps) + mean(p)\n";

static void test_nested(void) {
  rcase c;
  const char *params[] = {"L.w_0", "L.w_1", "L.b_0", "G.w_0", "G.w_1", "G.b_0", "G.b_1"};
  /* Paragraphs of 2 and 1 sentences: sentences of 1, 4 and 2 words (the rows and LoD above). */
  memset(&c, 0, sizeof c);
  pd_tensor_init(&c.x);
  pd_status st = fp64_setup("nested.pd", nested, "cost", &c.src, &c.unit, &c.r, &c.fwd, &c.err);
  for (int k = 0; !st && k < 7; k++) {
    pd_tensor *t = param_tensor(&c, params[k]);
    if (!t) st = PD_EINVAL;
    for (int64_t j = 0; t && j < pd_tensor_numel(t); j++) PD_TENSOR_F64(t)[j] = fixed(k, j);
  }
  static const int64_t top[] = {0, 2, 3};
  int64_t dims[2] = {ROWS, IN}, lens[2] = {3, NSEQ + 1};
  const int64_t *offs[2] = {top, lod};
  if (!st) st = pd_tensor_set_data(&c.x, PD_FP64, 2, dims, xs);
  if (!st) st = pd_tensor_set_lod(&c.x, 2, offs, lens);
  c.feed = (pd_exec_feed){"x", &c.x};
  if (!st) st = pd_program_hoist(c.fwd, NULL, &c.err);
  if (!st && !(c.bwd = pd_program_clone(c.fwd))) st = PD_ENOMEM;
  if (!st) st = pd_append_backward(c.bwd, "cost", &c.pg, &c.err);
  if (!st) st = pd_exec_new(c.fwd, NULL, &c.fex, &c.err);
  if (!st) st = pd_exec_new(c.bwd, NULL, &c.bex, &c.err);
  if (st) printf("# nested: %s\n", c.err.msg ? c.err.msg : pd_status_str(st));
  if (ok(st == PD_OK, "layers inside a loop over sequences of sequences: build"))
    check_grads(&c, "nested", 7);
  rcase_free(&c);
}

int main(void) {
  lcase cases[] = {
      {"lstm, h0 and c0 per sequence",
       LSTM_SCRIPT("lstm(x * s, 3, h0 = h0, c0 = c0, name = \"L\")"),
       {"L.w_0", "L.w_1", "L.b_0", "h0p", "c0p"}, 5, {.gates = 4, .per_seq = true},
       "L.w_0", "L.w_1", "L.b_0", NULL, "h0p", "c0p"},
      {"lstm reversed, h0 and c0 per sequence",
       LSTM_SCRIPT("lstm(x * s, 3, h0 = h0, c0 = c0, reverse = true, name = \"L\")"),
       {"L.w_0", "L.w_1", "L.b_0", "h0p", "c0p"}, 5, {.gates = 4, .per_seq = true, .reverse = true},
       "L.w_0", "L.w_1", "L.b_0", NULL, "h0p", "c0p"},
      {"lstm reversed, zero states", LSTM_SCRIPT("lstm(x * s, 3, reverse = true, name = \"L\")"),
       {"L.w_0", "L.w_1", "L.b_0"}, 3, {.gates = 4, .reverse = true},
       "L.w_0", "L.w_1", "L.b_0", NULL, NULL, NULL},
      {"gru, h0 per sequence", GRU_SCRIPT("gru(x * s, 3, h0 = h0, name = \"G\")"),
       {"G.w_0", "G.w_1", "G.b_0", "G.b_1", "h0p"}, 5, {.gates = 3, .per_seq = true},
       "G.w_0", "G.w_1", "G.b_0", "G.b_1", "h0p", NULL},
      {"gru reversed, h0 per sequence",
       GRU_SCRIPT("gru(x * s, 3, h0 = h0, reverse = true, name = \"G\")"),
       {"G.w_0", "G.w_1", "G.b_0", "G.b_1", "h0p"}, 5,
       {.gates = 3, .per_seq = true, .reverse = true},
       "G.w_0", "G.w_1", "G.b_0", "G.b_1", "h0p", NULL},
      {"gru, one h0 for every sequence", GRU_SCRIPT("gru(x * s, 3, h0 = h0s, name = \"G\")"),
       {"G.w_0", "G.w_1", "G.b_0", "G.b_1", "h0s"}, 5, {.gates = 3},
       "G.w_0", "G.w_1", "G.b_0", "G.b_1", "h0s", NULL},
      {"gru, zero state", GRU_SCRIPT("gru(x * s, 3, name = \"G\")"),
       {"G.w_0", "G.w_1", "G.b_0", "G.b_1"}, 4, {.gates = 3},
       "G.w_0", "G.w_1", "G.b_0", "G.b_1", NULL, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
  test_nested();
  return tap_done();
}
