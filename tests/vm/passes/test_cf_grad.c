/* test_cf_grad.c -- gradients through control flow, checked by finite differences in fp64.
 * Each case is a .pd script: it is compiled, turned to fp64 (every float32 var and dtype
 * attribute becomes float64), its startup program run, and the pruned program for its cost
 * extended by the backward pass (vm/passes/backward.h). The gradient of every parameter, element by
 * element, is compared with the central difference of the cost run forward with the parameter
 * nudged by +-h (relative error at most 1e-6). Cases: a per-row if/else (the seeds'
 * example), a branch no row takes, a one-element condition, a for-rnn over sequences of
 * lengths 1, 3 and 7 with gradients into the step inputs, a shared and a per-sequence initial
 * memory and the parameters, an if inside a for, a parameter shared by name between the loop
 * body and the global block, a while, a while inside an if, a for inside an if, a while inside
 * a for, and a for inside a for over sequences of sequences (a 2-level LoD fed as data:
 * paragraphs of 1 to 3 sentences of 1 to 4 words, a parameter per word, memories of both loops
 * from shared and per-paragraph initial values, parameters used by both loops, ifs in both).
 * Plus the seeds' if/else gradients computed by hand, the nested loop's values against a naive
 * reference, and the errors for a LoD of the wrong depth. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "tests/tap.h"
#include "vm/passes/backward.h"
#include "vm/run/exec.h"
#include "vm/passes/prune.h"
#include "tests/lang/fp64.h"

typedef struct gcase {
  pd_source *src;
  pd_unit *unit;
  pd_runner *r;
  pd_program *fwd, *bwd;
  pd_exec *fex, *bex;
  pd_backward pg;
  pd_error err;
  int nfeeds;                  /* values for the script's data vars (borrowed) */
  const pd_exec_feed *feeds;
} gcase;

static void gcase_free(gcase *c) {
  pd_exec_free(c->fex);
  pd_exec_free(c->bex);
  pd_program_free(c->fwd);
  pd_program_free(c->bwd);
  pd_backward_release(&c->pg);
  pd_runner_free(c->r);
  pd_unit_free(c->unit);
  pd_source_free(c->src);
  pd_error_clear(&c->err);
}

static bool setup(gcase *c, const char *name, const char *text, const char *cost) {
  memset(c, 0, sizeof *c);
  pd_status st = fp64_setup(name, text, cost, &c->src, &c->unit, &c->r, &c->fwd, &c->err);
  if (!st && !(c->bwd = pd_program_clone(c->fwd))) st = PD_ENOMEM;
  if (!st) st = pd_append_backward(c->bwd, cost, &c->pg, &c->err);
  if (!st) st = pd_program_validate(c->bwd, &c->err);
  if (!st) st = pd_exec_new(c->fwd, NULL, &c->fex, &c->err);
  if (!st) st = pd_exec_new(c->bwd, NULL, &c->bex, &c->err);
  if (st) printf("# %s: %s\n", name, c->err.msg ? c->err.msg : pd_status_str(st));
  return st == PD_OK;
}

static double run_cost(gcase *c, pd_exec *ex, const char *cost) {
  pd_tensor t;
  pd_tensor_init(&t);
  pd_exec_fetch f = {cost, &t};
  pd_exec_io io = {c->nfeeds, c->feeds, 1, &f};
  double v = NAN;
  if (pd_exec_run(ex, pd_runner_scope(c->r), &io, NULL, &c->err) == PD_OK && t.dtype == PD_FP64)
    v = PD_TENSOR_F64(&t)[0];
  else printf("# run: %s\n", c->err.msg ? c->err.msg : "?");
  pd_tensor_release(&t);
  return v;
}

/* Check every parameter gradient of the case; `want` parameters must be among them. The
 * script's data vars get the nfeeds feeds. */
static void check_grads_fed(const char *name, const char *text, const char *cost, int want,
                            int nfeeds, const pd_exec_feed *feeds) {
  gcase c;
  if (!setup(&c, name, text, cost)) {
    ok(0, "%s: builds its backward pass", name);
    gcase_free(&c);
    return;
  }
  c.nfeeds = nfeeds;
  c.feeds = feeds;
  ok(c.pg.n >= want, "%s: %d parameters get gradients (want %d)", name, c.pg.n, want);
  /* Analytic gradients: one run of forward + backward, fetching every parameter's. */
  pd_tensor *grads = calloc((size_t)c.pg.n + 1, sizeof *grads);
  pd_exec_fetch *fetches = calloc((size_t)c.pg.n + 1, sizeof *fetches);
  for (int i = 0; i < c.pg.n; i++) {
    pd_tensor_init(&grads[i]);
    fetches[i] = (pd_exec_fetch){c.pg.pairs[i].grad, &grads[i]};
  }
  pd_exec_io io = {nfeeds, feeds, c.pg.n, fetches};
  pd_status st = pd_exec_run(c.bex, pd_runner_scope(c.r), &io, NULL, &c.err);
  if (!ok(st == PD_OK, "%s: forward + backward runs", name))
    printf("#   %s\n", c.err.msg ? c.err.msg : "?");
  for (int i = 0; st == PD_OK && i < c.pg.n; i++) {
    pd_variable *pv = pd_scope_find_local_var(pd_runner_scope(c.r), c.pg.pairs[i].param);
    pd_tensor *p = pv ? pd_var_tensor(pv) : NULL;
    double worst = 0, at_a = 0, at_n = 0;
    int64_t at = -1;
    bool shaped = p && p->dtype == PD_FP64 && pd_tensor_numel(p) == pd_tensor_numel(&grads[i]) &&
                  grads[i].dtype == PD_FP64;
    for (int64_t j = 0; shaped && j < pd_tensor_numel(p); j++) {
      double *x = &PD_TENSOR_F64(p)[j], x0 = *x, h = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1);
      *x = x0 + h;
      double lp = run_cost(&c, c.fex, cost);
      *x = x0 - h;
      double lm = run_cost(&c, c.fex, cost);
      *x = x0;
      double num = (lp - lm) / (2 * h), ana = PD_TENSOR_F64(&grads[i])[j];
      double rel = fabs(num - ana) / (fabs(num) > 1 ? fabs(num) : 1);
      if (!(rel <= worst)) {
        worst = rel;
        at = j;
        at_a = ana;
        at_n = num;
      }
    }
    if (!ok(shaped && worst <= 1e-6, "%s: d cost / d %s matches finite differences", name,
            c.pg.pairs[i].param))
      printf("#   element %lld: analytic %.12g, numeric %.12g (rel %.3g)%s\n", (long long)at, at_a,
             at_n, worst, shaped ? "" : " (gradient missing or misshapen)");
  }
  for (int i = 0; i < c.pg.n; i++) pd_tensor_release(&grads[i]);
  free(grads);
  free(fetches);
  gcase_free(&c);
}

static void check_grads(const char *name, const char *text, const char *cost, int want) {
  check_grads_fed(name, text, cost, want, 0, NULL);
}

/* The seeds' if/else with the given values: rows 2 and 3 (x > 15) compute x + y, row 1 takes
 * fc(z, 1) = 10 w + b. cost = mean(o1 * o1) = (o1[0]^2 + 21^2 + 31^2) / 3 with y a parameter:
 * d/dy = 2 (21 + 31) / 3, d/dw = 2 o1[0] * 10 / 3, d/db = 2 o1[0] / 3 -- computed by hand. */
static void test_seed_ifelse_by_hand(void) {
  const char *text =
      "x = minibatch([10, 20, 30])\n"
      "y = param([1], init = 1.0)\n"
      "z = minibatch([10, 20, 30])\n"
      "w = param([1, 1], init = 0.5)\n"
      "b = param([1], init = 0.25)\n"
      "if (x > 15) {\n"
      "    let d = x + y\n"
      "    o1 = d\n"
      "} else {\n"
      "    let d = mul(z, w) + b\n"
      "    o1 = d\n"
      "}\n"
      "cost = mean(o1 * o1)\n";
  gcase c;
  if (!setup(&c, "seed_ifelse.pd", text, "cost")) {
    ok(0, "seeds' if/else: builds");
    gcase_free(&c);
    return;
  }
  pd_tensor g[3];
  pd_exec_fetch f[3];
  const char *names[3] = {"y@GRAD", "w@GRAD", "b@GRAD"};
  for (int i = 0; i < 3; i++) {
    pd_tensor_init(&g[i]);
    f[i] = (pd_exec_fetch){names[i], &g[i]};
  }
  pd_exec_io io = {0, NULL, 3, f};
  pd_status st = pd_exec_run(c.bex, pd_runner_scope(c.r), &io, NULL, &c.err);
  ok(st == PD_OK, "seeds' if/else: backward runs (%s)", c.err.msg ? c.err.msg : "ok");
  double o0 = 10 * 0.5 + 0.25;
  if (st == PD_OK) {
    is_close(PD_TENSOR_F64(&g[0])[0], 2.0 * (21 + 31) / 3, 1e-12, "d/dy = 2 (21 + 31) / 3");
    is_close(PD_TENSOR_F64(&g[1])[0], 2 * o0 * 10 / 3, 1e-12, "d/dw = 20 o1[0] / 3");
    is_close(PD_TENSOR_F64(&g[2])[0], 2 * o0 / 3, 1e-12, "d/db = 2 o1[0] / 3");
  }
  for (int i = 0; i < 3; i++) pd_tensor_release(&g[i]);
  gcase_free(&c);
}

/* A known wrong-gradient bug of the system this design comes from: a loop-carried var that the
 * loop passes through unchanged got x@GRAD 0 instead of 1 after renaming. Here s = x, the loop
 * runs three times with s = s * 1 (and s = s * 2: 8), and cost = mean(s). */
static void test_loop_carried_identity(void) {
  const char *texts[2] = {
      "x = param([1], init = 2.0, name = \"x\")\n"
      "i = var(0)\n"
      "s = x\n"
      "while (i < 3) {\n"
      "    s = s * 1\n"
      "    i = i + 1\n"
      "}\n"
      "cost = mean(s)\n",
      "x = param([1], init = 2.0, name = \"x\")\n"
      "i = var(0)\n"
      "s = x\n"
      "while (i < 3) {\n"
      "    s = s * 2\n"
      "    i = i + 1\n"
      "}\n"
      "cost = mean(s)\n"};
  double want[2] = {1, 8};
  for (int k = 0; k < 2; k++) {
    gcase c;
    if (!setup(&c, "carried.pd", texts[k], "cost")) {
      ok(0, "loop-carried identity: builds");
      gcase_free(&c);
      continue;
    }
    pd_tensor g;
    pd_tensor_init(&g);
    pd_exec_fetch f = {"x@GRAD", &g};
    pd_exec_io io = {0, NULL, 1, &f};
    pd_status st = pd_exec_run(c.bex, pd_runner_scope(c.r), &io, NULL, &c.err);
    if (st) printf("# %s\n", c.err.msg ? c.err.msg : "?");
    is_close(st ? -1 : PD_TENSOR_F64(&g)[0], want[k], 1e-12,
             "a loop-carried var through 3 iterations of s = s * %d: x@GRAD = %g", k + 1, want[k]);
    pd_tensor_release(&g);
    gcase_free(&c);
  }
}

/* ---- Loops over sequences of sequences (a 2-level LoD): paragraphs of sentences of words. */

/* t = an fp64 [rows, 1] tensor of the values v with the LoD [top, sub]. */
static bool make_seq2(pd_tensor *t, const double *v, const int64_t *top, int64_t ntop,
                      const int64_t *sub, int64_t nsub) {
  int64_t dims[2] = {sub[nsub - 1], 1};
  const int64_t *offs[2] = {top, sub};
  int64_t lens[2] = {ntop, nsub};
  pd_tensor_init(t);
  return pd_tensor_set_data(t, PD_FP64, 2, dims, v) == PD_OK &&
         pd_tensor_set_lod(t, 2, offs, lens) == PD_OK;
}

/* Three paragraphs of 1, 3 and 2 sentences (so the rank table reorders them), sentences of
 * 2, 1, 3, 1, 2 and 4 words: 13 words. */
static const int64_t para_lod[] = {0, 1, 4, 6};
static const int64_t sent_lod[] = {0, 2, 3, 6, 7, 9, 13};
static const double words[] = {0.5, -1.0, 0.25, 1.5, -0.5, 0.75, 2.0,
                               -0.25, 1.0, 0.125, -1.5, 0.5, 1.25};

/* The nested RNN of the value and gradient checks below. */
static const char *nested_rnn =
    "x = data(\"x\", [-1, 1], float32, lod_level = 2)\n"
    "h = var(0)\n"
    "W = param([1], init = 0.5)\n"
    "U = param([1], init = 0.75)\n"
    "V = param([1], init = -0.375)\n"
    "for (s in x) {\n"
    "    g = h\n"
    "    for (w in s) {\n"
    "        g = tanh(w * W + g * U)\n"
    "        emit ow = g\n"
    "    }\n"
    "    h = tanh(g * V + h * W)\n"
    "    emit os = g, ows = ow\n"
    "}\n"
    "last = h * 1\n";

/* Is t's LoD [l0[0..n0), l1[0..n1)] (with n1 = 0: the one level l0)? */
static bool lod_is(const pd_tensor *t, const int64_t *l0, int64_t n0, const int64_t *l1,
                   int64_t n1) {
  if (t->nlod != (n1 ? 2 : 1) || t->lod[0].n != n0) return false;
  for (int64_t i = 0; i < n0; i++)
    if (t->lod[0].offsets[i] != l0[i]) return false;
  for (int64_t i = 0; n1 && i < n1; i++)
    if (t->lod[1].n != n1 || t->lod[1].offsets[i] != l1[i]) return false;
  return true;
}

/* The forward values of the nested RNN against a naive reference: each paragraph's state h
 * starts at 0; each of its sentences, in order, runs g = tanh(w W + g U) over its words from
 * g = h, then h = tanh(g V + h W). ows holds every word's g (x's LoD), os every sentence's last
 * g (the paragraphs' LoD), h each paragraph's last state. */
static void test_nested_values(void) {
  const double W = 0.5, U = 0.75, V = -0.375;
  double ref_ows[13], ref_os[6], ref_h[3];
  for (int p = 0; p < 3; p++) {
    double h = 0;
    for (int64_t s = para_lod[p]; s < para_lod[p + 1]; s++) {
      double g = h;
      for (int64_t w = sent_lod[s]; w < sent_lod[s + 1]; w++)
        ref_ows[w] = g = tanh(words[w] * W + g * U);
      ref_os[s] = g;
      h = tanh(g * V + h * W);
    }
    ref_h[p] = h;
  }
  gcase c;
  memset(&c, 0, sizeof c);
  pd_diags d;
  pd_diags_init(&d, 5);
  bool good =
      pd_source_from_string("nested.pd", nested_rnn, strlen(nested_rnn), &c.src) == PD_OK &&
      pd_compile(c.src, NULL, &d, &c.unit) == PD_OK;
  if (!good) printf("# compile: %s\n", d.text.data ? d.text.data : "?");
  pd_diags_free(&d);
  pd_tensor x, out[3];
  pd_tensor_init(&x);
  const char *names[3] = {"last", "os", "ows"};
  pd_exec_fetch f[3];
  for (int i = 0; i < 3; i++) {
    pd_tensor_init(&out[i]);
    f[i] = (pd_exec_fetch){names[i], &out[i]};
  }
  pd_status st = PD_EINVAL;
  if (good) {
    to_fp64(c.unit->main);
    to_fp64(c.unit->startup);
    pd_run_options o = {0};
    st = pd_runner_new(c.unit, &o, &c.r, &c.err);
    if (!st && !make_seq2(&x, words, para_lod, 4, sent_lod, 7)) st = PD_ENOMEM;
    pd_exec_feed feed = {"x", &x};
    pd_exec_io io = {1, &feed, 3, f};
    if (!st) st = pd_exec_new(c.unit->main, NULL, &c.fex, &c.err);
    if (!st) st = pd_exec_run(c.fex, pd_runner_scope(c.r), &io, NULL, &c.err);
    pd_tensor_release(&x);
  }
  if (!ok(st == PD_OK, "for in for: the nested RNN runs"))
    printf("#   %s\n", c.err.msg ? c.err.msg : "?");
  if (st == PD_OK) {
    double worst = 0;
    for (int i = 0; i < 3; i++) worst = fmax(worst, fabs(PD_TENSOR_F64(&out[0])[i] - ref_h[i]));
    ok(pd_tensor_numel(&out[0]) == 3 && out[0].nlod == 0 && worst < 1e-12,
       "for in for: h is each paragraph's last state (max error %.3g)", worst);
    worst = 0;
    for (int i = 0; i < 6; i++) worst = fmax(worst, fabs(PD_TENSOR_F64(&out[1])[i] - ref_os[i]));
    ok(pd_tensor_numel(&out[1]) == 6 && lod_is(&out[1], para_lod, 4, NULL, 0) && worst < 1e-12,
       "for in for: os is each sentence's last g, with the paragraphs' LoD (max error %.3g)",
       worst);
    worst = 0;
    for (int i = 0; i < 13; i++)
      worst = fmax(worst, fabs(PD_TENSOR_F64(&out[2])[i] - ref_ows[i]));
    ok(pd_tensor_numel(&out[2]) == 13 && lod_is(&out[2], para_lod, 4, sent_lod, 7) &&
           worst < 1e-12,
       "for in for: ows is every word's g, with x's two-level LoD (max error %.3g)", worst);
  }
  for (int i = 0; i < 3; i++) pd_tensor_release(&out[i]);
  gcase_free(&c);
}

/* Gradients through for in for: into the words (a parameter per word scales x, so every row
 * of the step inputs' gradients is checked where it lands), the initial memories (shared and
 * per paragraph) and parameters used by both loops. */
static void test_nested_grads(void) {
  pd_tensor x;
  if (!ok(make_seq2(&x, words, para_lod, 4, sent_lod, 7), "for in for: the input is built")) return;
  pd_exec_feed feed = {"x", &x};
  check_grads_fed("for_in_for.pd",
                  "import \"layers\"\n"
                  "x = data(\"x\", [-1, 1], float32, lod_level = 2) * "
                  "param([13, 1], init = 0.9, name = \"s\")\n"
                  "h = var(0) + param([1], init = 0.2, name = \"h0\")\n"
                  "W = param([1], init = 0.5)\n"
                  "U = param([1], init = 0.75)\n"
                  "V = param([1], init = -0.375)\n"
                  "for (s in x) {\n"
                  "    g = h * V\n"
                  "    for (w in s) {\n"
                  "        g = tanh(w * W + g * U)\n"
                  "        emit ow = g * w\n"
                  "    }\n"
                  "    h = tanh(g * W + h * U)\n"
                  "    emit os = g, ows = ow\n"
                  "}\n"
                  "cost = mean(h) + mean(sequence_sum(os * os)) + mean(ows * ows)\n",
                  "cost", 5, 1, &feed);
  /* A per-paragraph initial state (the first word of each paragraph), an inner memory that
   * starts from it (one row per sentence of the step) and one that starts shared (var(0)). */
  check_grads_fed("for_in_for_init.pd",
                  "import \"layers\"\n"
                  "x = data(\"x\", [-1, 1], float32, lod_level = 2) * "
                  "param([13, 1], init = 1.1, name = \"s\")\n"
                  "h = first_step(first_step(x)) * param([1], init = 0.6, name = \"h0\")\n"
                  "W = param([1], init = 0.5)\n"
                  "for (s in x) {\n"
                  "    c = h\n"
                  "    m = var(0)\n"
                  "    for (w in s) {\n"
                  "        c = sigmoid(w * W + c)\n"
                  "        m = m + c * w\n"
                  "    }\n"
                  "    h = tanh(m * W + h)\n"
                  "    emit e = c\n"
                  "}\n"
                  "cost = mean(h * h) + mean(sequence_sum(e))\n",
                  "cost", 3, 1, &feed);
  /* No inner loop: each step pools its sentences (a hierarchical encoder). */
  check_grads_fed("pool_in_for.pd",
                  "import \"layers\"\n"
                  "x = data(\"x\", [-1, 1], float32, lod_level = 2) * "
                  "param([13, 1], init = 0.7, name = \"s\")\n"
                  "h = var(0)\n"
                  "W = param([1], init = 0.5)\n"
                  "for (s in x) {\n"
                  "    h = tanh(sequence_pool(s, \"AVERAGE\") * W + sequence_max(s) + h * W)\n"
                  "    emit o = tanh(s * W), e = h\n"
                  "}\n"
                  "cost = mean(h * h) + mean(o * o) + mean(sequence_sum(e))\n",
                  "cost", 2, 1, &feed);
  /* Per-row ifs in both loops: over the words of the step's sentences, and over the
   * paragraphs after their sentence. */
  check_grads_fed("for_in_for_if.pd",
                  "import \"layers\"\n"
                  "x = data(\"x\", [-1, 1], float32, lod_level = 2) * "
                  "param([13, 1], init = 0.8, name = \"s\")\n"
                  "h = var(0) + param([1], init = 0.15, name = \"h0\")\n"
                  "W = param([1], init = 0.5)\n"
                  "for (s in x) {\n"
                  "    g = h\n"
                  "    for (w in s) {\n"
                  "        if (w > 0.3) {\n"
                  "            g = tanh(g * W + w)\n"
                  "        } else {\n"
                  "            g = tanh(g - w * W)\n"
                  "        }\n"
                  "    }\n"
                  "    if (g > 0) {\n"
                  "        h = tanh(g * W + h)\n"
                  "    } else {\n"
                  "        h = g * h\n"
                  "    }\n"
                  "    emit o = h\n"
                  "}\n"
                  "cost = mean(h * h) + mean(sequence_sum(o))\n",
                  "cost", 3, 1, &feed);
  pd_tensor_release(&x);
}

/* A nested loop given the wrong depth of LoD at run time: an error at the loop's `for` that
 * says what it has and what was declared. */
static void test_nested_lod_errors(void) {
  struct {
    const char *text;
    int line;
    bool two_levels;
    const char *want;
  } cases[] = {
      {"x = data(\"x\", [-1, 1], float32, lod_level = 2)\n"
       "h = var(0)\n"
       "for (s in x) {\n"
       "    for (w in s) {\n"
       "        h = h + w\n"
       "    }\n"
       "}\n",
       3, false,
       "recurrent: the sequence it loops over has 1 LoD level (lod [[0, 2, 3, 6, 7, 9, 13]]), "
       "but it was declared with lod_level = 2 (each step a batch of sequences, for a loop "
       "inside the loop)"},
      {"x = data(\"x\", [-1, 1], float32, lod_level = 1)\n"
       "h = var(0)\n"
       "for (t in x) {\n"
       "    h = h + t\n"
       "}\n",
       3, true,
       "recurrent: the sequence it loops over has 2 LoD levels (lod [[0, 1, 4, 6], [0, 2, 3, 6, "
       "7, 9, 13]]), but it was declared with lod_level = 1 (each step one element of each "
       "sequence); declare it with lod_level = 2 to loop over its sequences of sequences"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    gcase c;
    memset(&c, 0, sizeof c);
    pd_diags d;
    pd_diags_init(&d, 5);
    pd_status st = pd_source_from_string("bad.pd", cases[i].text, strlen(cases[i].text), &c.src);
    if (!st) st = pd_compile(c.src, NULL, &d, &c.unit);
    pd_diags_free(&d);
    pd_run_options o = {0};
    if (!st) st = pd_runner_new(c.unit, &o, &c.r, &c.err);
    if (!st) st = pd_exec_new(c.unit->main, NULL, &c.fex, &c.err);
    pd_tensor x;
    pd_tensor_init(&x);
    int64_t dims[2] = {13, 1};
    float v[13] = {0};
    if (!st) st = pd_tensor_set_data(&x, PD_FP32, 2, dims, v);
    const int64_t *offs[2] = {cases[i].two_levels ? para_lod : sent_lod, sent_lod};
    int64_t lens[2] = {cases[i].two_levels ? 4 : 7, 7};
    if (!st) st = pd_tensor_set_lod(&x, cases[i].two_levels ? 2 : 1, offs, lens);
    pd_tensor h;
    pd_tensor_init(&h);
    pd_exec_feed feed = {"x", &x};
    pd_exec_fetch fetch = {"h", &h};
    pd_exec_io io = {1, &feed, 1, &fetch};
    if (!st) st = pd_exec_run(c.fex, pd_runner_scope(c.r), &io, NULL, &c.err);
    ok(st == PD_ESHAPE && c.err.loc.line == cases[i].line && c.err.loc.col == 1,
       "%s LoD to a loop declared for %s: an error at the for (%d:%d)",
       cases[i].two_levels ? "a 2-level" : "a 1-level", cases[i].two_levels ? "1" : "2",
       c.err.loc.line, c.err.loc.col);
    is_str(c.err.msg ? c.err.msg : "", cases[i].want, "  its message");
    pd_tensor_release(&x);
    pd_tensor_release(&h);
    gcase_free(&c);
  }
}

int main(void) {
  test_seed_ifelse_by_hand();
  check_grads("ifelse_rows.pd",
              "import \"layers\"\n"
              "x = minibatch([10, 20, 30, 5]) * param([1], init = 0.1, name = \"s\")\n"
              "z = minibatch([1, 2, 3, 4])\n"
              "y = param([1], init = 0.3)\n"
              "if (x > 1.5) {\n"
              "    let d = x * y + tanh(x)\n"
              "    o1 = d\n"
              "    o2 = sigmoid(d)\n"
              "} else {\n"
              "    let d = fc(z, 1)\n"
              "    o1 = d * d\n"
              "    o2 = d + x\n"
              "}\n"
              "cost = mean(o1 * o2) + mean(o2)\n",
              "cost", 4);
  check_grads("ifelse_one_side.pd",
              "x = minibatch([1, 2, 3]) * param([1], init = 0.7, name = \"s\")\n"
              "y = param([1], init = 0.3)\n"
              "if (x > 100) {\n"
              "    a = x * y\n"
              "} else {\n"
              "    a = x * x + y\n"
              "}\n"
              "cost = mean(a * a)\n",
              "cost", 2);
  check_grads("scalar_if.pd",
              "x = minibatch([1, 2, 3]) * param([1], init = 0.9, name = \"s\")\n"
              "y = x\n"
              "if (mean(x) > 1) {\n"
              "    y = sigmoid(x) * x\n"
              "}\n"
              "cost = mean(y * y)\n",
              "cost", 1);
  check_grads("rnn_seed.pd",
              "x = sequence([[10, 20, 30]]) * param([1], init = 0.1, name = \"s\")\n"
              "h = var(0) + param([1], init = 0.05, name = \"h0\")\n"
              "W = param([1], init = 0.314)\n"
              "U = param([1], init = 0.375)\n"
              "for (t in x) {\n"
              "    a = t * W\n"
              "    b = h * U\n"
              "    h = sigmoid(a + b)\n"
              "    emit o1 = a, o2 = b\n"
              "}\n"
              "cost = mean(h) + mean(o1 * o2)\n",
              "cost", 4);
  check_grads("rnn_lengths.pd",
              "import \"layers\"\n"
              "x = sequence([[1], [2, 3, 4], [5, 6, 7, 8, 9, 10, 11]]) * "
              "param([1], init = 0.1, name = \"s\")\n"
              "h = first_step(x) * param([1], init = 1.0, name = \"h0\")\n"
              "W = param([1], init = 0.314)\n"
              "U = param([1], init = 0.375)\n"
              "for (t in x) {\n"
              "    h = tanh(t * W + h * U)\n"
              "    emit o = h * h\n"
              "}\n"
              "cost = mean(h) + mean(sequence_sum(o))\n",
              "cost", 4);
  /* Products of loop parameters (vm/passes/backward.c sums such a gradient in one product over all
   * steps): U in two products of the step (left per step: two contributions), V in one, with
   * a sequence-length mix; the memory is [rows, 3]. */
  check_grads("rnn_products.pd",
              "import \"layers\"\n"
              "x = sequence([[1, 2], [3], [4, 5, 6, 7]]) * param([1], init = 0.1, name = \"s\")\n"
              "A = param([1, 3], name = \"A\")\n"
              "U = param([3, 3], name = \"U\")\n"
              "V = param([3, 3], name = \"V\")\n"
              "h = zeros([3]) + param([3], init = 0.2, name = \"h0\")\n"
              "for (t in x) {\n"
              "    h = tanh(mul(t, A) + mul(h, U) + mul(tanh(mul(h, V)), U))\n"
              "    emit o = h\n"
              "}\n"
              "cost = mean(h * h) + mean(sequence_sum(o))\n",
              "cost", 5);
  /* Emits without copies (lang/compile_stmt.c stacks a value the step computed as it is): the new
   * state emitted twice and pooled as the final state (three uses of one stacked var), next to
   * the previous state, which is copied. */
  check_grads("emit_shared.pd",
              "import \"layers\"\n"
              "x = sequence([[1, 2, 3], [4, 5]]) * param([1], init = 0.2, name = \"s\")\n"
              "h = var(0) + param([1], init = 0.1, name = \"h0\")\n"
              "W = param([1], init = 0.5)\n"
              "for (t in x) {\n"
              "    emit before = h\n"
              "    h = tanh(h * W + t)\n"
              "    emit after = h, again = h\n"
              "}\n"
              "cost = mean(h * h) + mean(before * after) + mean(sequence_sum(again))\n",
              "cost", 3);
  check_grads("if_in_for.pd",
              "import \"layers\"\n"
              "x = sequence([[1, 2], [3, 4, 5]]) * param([1], init = 0.5, name = \"s\")\n"
              "h = var(0)\n"
              "W = param([1], init = 0.4)\n"
              "for (t in x) {\n"
              "    g = t * W + h\n"
              "    if (t > 1.2) {\n"
              "        g = g * g\n"
              "    } else {\n"
              "        g = g + 1\n"
              "    }\n"
              "    h = tanh(g)\n"
              "    emit o = g\n"
              "}\n"
              "cost = mean(h) + mean(sequence_sum(o))\n",
              "cost", 2);
  check_grads("shared_param.pd",
              "x = sequence([[1, 2], [3]]) * param([1], init = 0.5, name = \"s\")\n"
              "h = var(0)\n"
              "V = param([1], init = 0.6, name = \"shared.w\")\n"
              "for (t in x) {\n"
              "    h = tanh(t * get_variable(\"shared.w\") + h)\n"
              "}\n"
              "cost = mean(h) + mean(V * V)\n",
              "cost", 2);
  check_grads("while_carried.pd",
              "x = param([1], init = 2.0, name = \"x\")\n"
              "w = param([1], init = 0.7)\n"
              "i = var(0)\n"
              "s = x\n"
              "while (i < 3) {\n"
              "    s = tanh(s * w) + s\n"
              "    i = i + 1\n"
              "}\n"
              "cost = mean(s * s)\n",
              "cost", 2);
  check_grads("while_in_if.pd",
              "x = minibatch([1, 2, 3]) * param([1], init = 0.4, name = \"s\")\n"
              "w = param([1], init = 0.9)\n"
              "y = x\n"
              "if (mean(x) > 0.5) {\n"
              "    i = var(0)\n"
              "    t = x\n"
              "    while (i < 2) {\n"
              "        t = sigmoid(t * w)\n"
              "        i = i + 1\n"
              "    }\n"
              "    y = t\n"
              "}\n"
              "cost = mean(y * y)\n",
              "cost", 2);
  check_grads("for_in_if.pd",
              "import \"layers\"\n"
              "x = sequence([[1, 2], [3, 4, 5], [6]]) * param([1], init = 0.3, name = \"s\")\n"
              "W = param([1], init = 0.4)\n"
              "y = first_step(x)\n"
              "if (mean(x) > 0.5) {\n"
              "    h = var(0)\n"
              "    for (t in x) {\n"
              "        h = tanh(t * W + h)\n"
              "    }\n"
              "    y = h * y\n"
              "}\n"
              "cost = mean(y * y)\n",
              "cost", 2);
  check_grads("while_in_for.pd",
              "x = sequence([[1, 2], [3, 4, 5], [6]]) * param([1], init = 0.3, name = \"s\")\n"
              "W = param([1], init = 0.4)\n"
              "h = var(0)\n"
              "for (t in x) {\n"
              "    i = var(0)\n"
              "    u = t\n"
              "    while (i < 2) {\n"
              "        u = tanh(u * W + h)\n"
              "        i = i + 1\n"
              "    }\n"
              "    h = u\n"
              "    emit o = u * t\n"
              "}\n"
              "cost = mean(h) + mean(o * o)\n",
              "cost", 2);
  test_nested_values();
  test_nested_grads();
  test_nested_lod_errors();
  test_loop_carried_identity();
  return tap_done();
}
