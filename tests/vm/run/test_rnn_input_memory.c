/* test_rnn_input_memory.c -- a for-rnn whose memory is set to the step input itself (`prev = t`),
 * then emitted and used after the loop, forward and backward. The step input's var is then also
 * an output of the recurrent op (the memory's states, stacked), so stacking it resizes the op's
 * own input, which drops that tensor's LoD: the loop's plan must not read offsets it borrowed
 * from it (a use-after-free that the --enable-sanitizers build reports; fixed in a237a6a by the
 * plan's own copy of the LoD). Cases, every expected value computed here from the fed values:
 *   - one level, rows of width 2, sequences of lengths 2, 4, 1, 3 (reordered longest first),
 *     then 3, 1, 2 on the same executor: the emitted sequence is the input (values and LoD),
 *     the memory after the loop is each sequence's last element, the difference to the memory
 *     read before the update is the previous element (the initial value at the first), and the
 *     fed input is left as it was;
 *   - the inner loop of a for in for over a 2-level LoD (fed as data), `g = w`: each sentence's
 *     last word, per paragraph, and the words with both levels;
 *   - backward (fp64): cost = mean(o * o) + mean(prev * prev) + mean(e * e) with o = prev * W,
 *     e = t - prev, x = sequence * s and the initial memory h0: the cost and the gradients of
 *     s, W and h0 against formulas worked out by hand and against finite differences;
 *   - training as `train` builds it (prune, hoist, backward, SGD): two steps, each from the
 *     parameters the step before left, the cost and the parameters against p -= lr * (the
 *     gradient by hand).
 * Two bugs this caught: the recurrent op's input and its stacked state were one var (t.tmp_0),
 * and resizing the stacked output freed the LoD the loop was reading (a use-after-free, fixed
 * in recurrent's plan); and recurrent_grad then read outputs@GRAD and wrote inputs@GRAD in that
 * one var, t.tmp_0@GRAD, losing the gradient from after the loop (d cost / d s lacked
 * mean(prev^2)'s 61/3; it was 0 for cost = mean(prev * prev) alone). The compiler now stacks a
 * copy of the step input when a memory is set to it or it is emitted (lang/compile_stmt.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "tests/tap.h"
#include "tests/lang/fp64.h"
#include "vm/passes/backward.h"
#include "vm/run/exec.h"
#include "vm/passes/hoist.h"
#include "vm/passes/optimizer.h"
#include "vm/passes/prune.h"

/* A compiled script and its runner (startup program run; global scope). */
typedef struct script {
  pd_source *src;
  pd_unit *unit;
  pd_runner *r;
  pd_error err;
} script;

static void script_free(script *s) {
  pd_runner_free(s->r);
  pd_unit_free(s->unit);
  pd_source_free(s->src);
  pd_error_clear(&s->err);
}

static bool script_new(script *s, const char *name, const char *text, bool fp64) {
  memset(s, 0, sizeof *s);
  pd_diags d;
  pd_diags_init(&d, 5);
  bool good = pd_source_from_string(name, text, strlen(text), &s->src) == PD_OK &&
              pd_compile(s->src, NULL, &d, &s->unit) == PD_OK;
  if (!good) printf("# compile %s: %s\n", name, d.text.data ? d.text.data : "?");
  pd_diags_free(&d);
  if (!good) return false;
  if (fp64) {
    to_fp64(s->unit->main);
    to_fp64(s->unit->startup);
  }
  pd_run_options o = {0};
  if (pd_runner_new(s->unit, &o, &s->r, &s->err)) {
    printf("# runner %s: %s\n", name, s->err.msg ? s->err.msg : "?");
    return false;
  }
  return true;
}

/* Is t's LoD exactly the given levels (lv[l][0 .. n[l]))? */
static bool lod_is(const pd_tensor *t, int nl, const int64_t *const *lv, const int64_t *n) {
  if (t->nlod != nl) return false;
  for (int l = 0; l < nl; l++) {
    if (t->lod[l].n != n[l]) return false;
    for (int64_t i = 0; i < n[l]; i++)
      if (t->lod[l].offsets[i] != lv[l][i]) return false;
  }
  return true;
}

/* Largest |t[i] - want[i]| over n fp32 values (INFINITY when t is not fp32 [rows, width] with
 * rows * width = n). */
static double worst_f32(const pd_tensor *t, const double *want, int64_t n, int64_t width) {
  if (t->dtype != PD_FP32 || t->ndims != 2 || t->dims[1] != width || pd_tensor_numel(t) != n)
    return INFINITY;
  double w = 0;
  for (int64_t i = 0; i < n; i++) w = fmax(w, fabs((double)PD_TENSOR_F32(t)[i] - want[i]));
  return w;
}

/* ---- One LoD level: prev = t, emitted, and read before the update. */

static const char *flat_text =
    "x = data(\"x\", [-1, 2], float32, lod_level = 1)\n"
    "prev = fill([2], 0.5)\n"
    "for (t in x) {\n"
    "    d = t - prev\n"
    "    prev = t\n"
    "    emit o = prev, e = d\n"
    "}\n"
    "last = prev * 1\n";

/* Feed x (rows of [r + 1, -(r + 1) / 4] plus `bias`, with the one level off[0..nseq]), run,
 * and check o, e, last and x against values computed from the feed. */
static void flat_run(script *s, pd_exec *ex, const int64_t *off, int64_t nseq, double bias,
                     const char *what) {
  int64_t rows = off[nseq], dims[2] = {rows, 2}, n = nseq + 1;
  double *v = calloc((size_t)(2 * rows), sizeof *v), *e = calloc((size_t)(2 * rows), sizeof *e);
  double *last = calloc((size_t)(2 * nseq), sizeof *last);
  float *vf = calloc((size_t)(2 * rows), sizeof *vf);
  for (int64_t r = 0; r < rows; r++) {
    v[2 * r] = (double)(r + 1) + bias;
    v[2 * r + 1] = -(double)(r + 1) / 4 + bias;
    vf[2 * r] = (float)v[2 * r];
    vf[2 * r + 1] = (float)v[2 * r + 1];
  }
  /* By hand: the difference to the previous element of the sequence (to the initial 0.5 at the
   * first), and each sequence's last element. */
  for (int64_t q = 0; q < nseq; q++) {
    for (int64_t r = off[q]; r < off[q + 1]; r++)
      for (int c = 0; c < 2; c++)
        e[2 * r + c] = v[2 * r + c] - (r == off[q] ? 0.5 : v[2 * (r - 1) + c]);
    for (int c = 0; c < 2; c++) last[2 * q + c] = v[2 * (off[q + 1] - 1) + c];
  }
  pd_tensor x, out[4];
  pd_tensor_init(&x);
  const char *names[4] = {"o", "e", "last", "x"};
  pd_exec_fetch f[4];
  for (int i = 0; i < 4; i++) {
    pd_tensor_init(&out[i]);
    f[i] = (pd_exec_fetch){names[i], &out[i]};
  }
  pd_status st = pd_tensor_set_data(&x, PD_FP32, 2, dims, vf);
  const int64_t *lv = off;
  if (!st) st = pd_tensor_set_lod(&x, 1, &lv, &n);
  pd_exec_feed feed = {"x", &x};
  pd_exec_io io = {1, &feed, 4, f};
  if (!st) st = pd_exec_run(ex, pd_runner_scope(s->r), &io, NULL, &s->err);
  if (!ok(st == PD_OK, "%s: the loop runs", what))
    printf("#   %s\n", s->err.msg ? s->err.msg : pd_status_str(st));
  if (st == PD_OK) {
    double w = worst_f32(&out[0], v, 2 * rows, 2);
    ok(w == 0 && lod_is(&out[0], 1, &lv, &n),
       "%s: the emitted memory is the input, values and LoD (max error %g)", what, w);
    w = worst_f32(&out[1], e, 2 * rows, 2);
    ok(w < 1e-6 && lod_is(&out[1], 1, &lv, &n),
       "%s: t - prev is the step from the previous element (max error %g)", what, w);
    w = worst_f32(&out[2], last, 2 * nseq, 2);
    ok(w == 0 && out[2].nlod == 0,
       "%s: after the loop the memory is each sequence's last element (max error %g)", what, w);
    w = worst_f32(&out[3], v, 2 * rows, 2);
    ok(w == 0 && lod_is(&out[3], 1, &lv, &n), "%s: the fed x is unchanged (max error %g)", what,
       w);
  }
  for (int i = 0; i < 4; i++) pd_tensor_release(&out[i]);
  pd_tensor_release(&x);
  free(v);
  free(e);
  free(last);
  free(vf);
}

static void test_flat(void) {
  script s;
  pd_exec *ex = NULL;
  bool good = script_new(&s, "flat.pd", flat_text, false) &&
              pd_exec_new(s.unit->main, NULL, &ex, &s.err) == PD_OK;
  if (!ok(good, "prev = t: the program builds")) {
    pd_exec_free(ex);
    script_free(&s);
    return;
  }
  static const int64_t off1[] = {0, 2, 6, 7, 10}, off2[] = {0, 3, 4, 6};
  flat_run(&s, ex, off1, 4, 0, "lengths 2, 4, 1, 3");
  flat_run(&s, ex, off2, 3, 0.125, "again, lengths 3, 1, 2");
  pd_exec_free(ex);
  script_free(&s);
}

/* ---- Two LoD levels: the inner loop's memory set to the inner step input. Paragraphs of 1, 3
 * and 2 sentences (reordered), sentences of 2, 1, 3, 1, 2 and 4 words. */

static const int64_t para_lod[] = {0, 1, 4, 6};
static const int64_t sent_lod[] = {0, 2, 3, 6, 7, 9, 13};

static const char *nested_text =
    "x = data(\"x\", [-1, 1], float32, lod_level = 2)\n"
    "h = var(0)\n"
    "for (s in x) {\n"
    "    g = h\n"
    "    for (w in s) {\n"
    "        g = w\n"
    "        emit ws = g\n"
    "    }\n"
    "    h = g\n"
    "    emit gs = g, wss = ws\n"
    "}\n"
    "last = h * 1\n";

static void test_nested(void) {
  double words[13], sents[6], paras[3];
  float wf[13];
  for (int i = 0; i < 13; i++) wf[i] = (float)(words[i] = 1.5 * i - 4);
  /* By hand: a sentence's g is its last word; a paragraph's h its last sentence's. */
  for (int q = 0; q < 6; q++) sents[q] = words[sent_lod[q + 1] - 1];
  for (int p = 0; p < 3; p++) paras[p] = sents[para_lod[p + 1] - 1];
  script s;
  pd_exec *ex = NULL;
  bool good = script_new(&s, "nested.pd", nested_text, false) &&
              pd_exec_new(s.unit->main, NULL, &ex, &s.err) == PD_OK;
  if (!ok(good, "inner g = w: the program builds")) {
    pd_exec_free(ex);
    script_free(&s);
    return;
  }
  pd_tensor x, out[3];
  pd_tensor_init(&x);
  const char *names[3] = {"gs", "wss", "last"};
  pd_exec_fetch f[3];
  for (int i = 0; i < 3; i++) {
    pd_tensor_init(&out[i]);
    f[i] = (pd_exec_fetch){names[i], &out[i]};
  }
  int64_t dims[2] = {13, 1}, n[2] = {4, 7};
  const int64_t *lv[2] = {para_lod, sent_lod};
  pd_status st = pd_tensor_set_data(&x, PD_FP32, 2, dims, wf);
  if (!st) st = pd_tensor_set_lod(&x, 2, lv, n);
  pd_exec_feed feed = {"x", &x};
  pd_exec_io io = {1, &feed, 3, f};
  if (!st) st = pd_exec_run(ex, pd_runner_scope(s.r), &io, NULL, &s.err);
  if (!ok(st == PD_OK, "inner g = w: the nested loop runs"))
    printf("#   %s\n", s.err.msg ? s.err.msg : pd_status_str(st));
  if (st == PD_OK) {
    double w = worst_f32(&out[0], sents, 6, 1);
    ok(w == 0 && lod_is(&out[0], 1, lv, n),
       "inner g = w: each sentence's last word, the paragraphs as LoD (max error %g)", w);
    w = worst_f32(&out[1], words, 13, 1);
    ok(w == 0 && lod_is(&out[1], 2, lv, n),
       "inner g = w: the emitted words are x, with both levels (max error %g)", w);
    w = worst_f32(&out[2], paras, 3, 1);
    ok(w == 0 && out[2].nlod == 0,
       "inner g = w: h is each paragraph's last word (max error %g)", w);
  }
  for (int i = 0; i < 3; i++) pd_tensor_release(&out[i]);
  pd_tensor_release(&x);
  pd_exec_free(ex);
  script_free(&s);
}

/* ---- Backward. x = s v over sequences [1, 2, 3], [4], [5, 6]; in the loop e = t - prev,
 * prev = t, o = prev W; cost = mean(o^2) + mean(prev^2) + mean(e^2), prev after the loop being
 * each sequence's last x. */

static const char *grad_text =
    "x = sequence([[1, 2, 3], [4], [5, 6]]) * param([1], init = 0.5, name = \"s\")\n"
    "prev = var(0) + param([1], init = 0.25, name = \"h0\")\n"
    "W = param([1], init = 1.5, name = \"W\")\n"
    "for (t in x) {\n"
    "    d = t - prev\n"
    "    prev = t\n"
    "    emit o = prev * W, e = d\n"
    "}\n"
    "cost = mean(o * o) + mean(prev * prev) + mean(e * e)\n";

static const double gv[] = {1, 2, 3, 4, 5, 6};
static const int64_t goff[] = {0, 3, 4, 6};

/* The cost and its gradients g = {d/ds, d/dW, d/dh0}, worked out by hand:
 *   x_i = s v_i, o_i = W x_i, e_i = x_i - x_{i-1} (x_i - h0 at a sequence's first element);
 *   d(o_i^2)/ds = 2 o_i W v_i, d(o_i^2)/dW = 2 o_i x_i;
 *   d(e_i^2)/ds = 2 e_i (v_i - v_{i-1}) (2 e_i v_i at a first), d(e_i^2)/dh0 = -2 e_i at a first;
 *   d(last_q^2)/ds = 2 last_q v_last(q). */
static void by_hand(double s, double W, double h0, double *cost, double g[3]) {
  const int N = 6, Q = 3;
  double so = 0, sp = 0, se = 0;
  g[0] = g[1] = g[2] = 0;
  for (int q = 0; q < Q; q++) {
    for (int64_t i = goff[q]; i < goff[q + 1]; i++) {
      bool first = i == goff[q];
      double x = s * gv[i], o = W * x;
      double e = first ? x - h0 : x - s * gv[i - 1], de = first ? gv[i] : gv[i] - gv[i - 1];
      so += o * o;
      se += e * e;
      g[0] += (2 * o * W * gv[i] + 2 * e * de) / N;
      g[1] += 2 * o * x / N;
      if (first) g[2] += -2 * e / N;
    }
    double last = s * gv[goff[q + 1] - 1];
    sp += last * last;
    g[0] += 2 * last * gv[goff[q + 1] - 1] / Q;
  }
  *cost = so / N + sp / Q + se / N;
}

static const char *pname[3] = {"s", "W", "h0"};

/* The checks of d cost / d s and what it updates: see KNOWN BUG above. */

static double run_cost(script *s, pd_exec *ex) {
  pd_tensor t;
  pd_tensor_init(&t);
  pd_exec_fetch f = {"cost", &t};
  pd_exec_io io = {0, NULL, 1, &f};
  double v = NAN;
  if (pd_exec_run(ex, pd_runner_scope(s->r), &io, NULL, &s->err) == PD_OK && t.dtype == PD_FP64)
    v = PD_TENSOR_F64(&t)[0];
  pd_tensor_release(&t);
  return v;
}

static void test_grads(void) {
  script s;
  pd_program *fwd = NULL, *bwd = NULL;
  pd_exec *fex = NULL, *bex = NULL;
  pd_backward pg;
  memset(&pg, 0, sizeof pg);
  const char *cost = "cost";
  bool good = script_new(&s, "grad.pd", grad_text, true);
  pd_status st = good ? pd_program_prune(s.unit->main, 1, &cost, &fwd, &s.err) : PD_EINVAL;
  if (!st && !(bwd = pd_program_clone(fwd))) st = PD_ENOMEM;
  if (!st) st = pd_append_backward(bwd, cost, &pg, &s.err);
  if (!st) st = pd_program_validate(bwd, &s.err);
  if (!st) st = pd_exec_new(fwd, NULL, &fex, &s.err);
  if (!st) st = pd_exec_new(bwd, NULL, &bex, &s.err);
  if (!ok(st == PD_OK, "backward: the program builds"))
    printf("#   %s\n", s.err.msg ? s.err.msg : pd_status_str(st));
  pd_tensor out[4];
  pd_exec_fetch f[4];
  const char *names[4] = {"cost", "s@GRAD", "W@GRAD", "h0@GRAD"};
  for (int i = 0; i < 4; i++) {
    pd_tensor_init(&out[i]);
    f[i] = (pd_exec_fetch){names[i], &out[i]};
  }
  pd_exec_io io = {0, NULL, 4, f};
  if (!st) st = pd_exec_run(bex, pd_runner_scope(s.r), &io, NULL, &s.err);
  if (bex && !ok(st == PD_OK, "backward: forward + backward run"))
    printf("#   %s\n", s.err.msg ? s.err.msg : pd_status_str(st));
  double want_cost, want[3];
  by_hand(0.5, 1.5, 0.25, &want_cost, want);
  for (int i = 0; st == PD_OK && i < 4; i++)
    if (!ok(out[i].dtype == PD_FP64 && pd_tensor_numel(&out[i]) == 1, "backward: %s is one fp64",
            names[i]))
      st = PD_ERUNTIME;
  if (st == PD_OK) {
    is_close(PD_TENSOR_F64(&out[0])[0], want_cost, 1e-12, "backward: the cost is %.12g by hand",
             want_cost);
    for (int i = 0; i < 3; i++)
      is_close(PD_TENSOR_F64(&out[i + 1])[0], want[i], 1e-12,
               "backward: d cost / d %s = %.12g by hand", pname[i], want[i]);
    /* And by central differences of the forward program. */
    for (int i = 0; i < 3; i++) {
      pd_variable *v = pd_scope_find_local_var(pd_runner_scope(s.r), pname[i]);
      pd_tensor *p = v ? pd_var_tensor(v) : NULL;
      if (!ok(p && p->dtype == PD_FP64 && pd_tensor_numel(p) == 1, "backward: %s is a parameter",
              pname[i]))
        continue;
      double x0 = PD_TENSOR_F64(p)[0], h = 1e-6;
      PD_TENSOR_F64(p)[0] = x0 + h;
      double lp = run_cost(&s, fex);
      PD_TENSOR_F64(p)[0] = x0 - h;
      double lm = run_cost(&s, fex);
      PD_TENSOR_F64(p)[0] = x0;
      is_close(PD_TENSOR_F64(&out[i + 1])[0], (lp - lm) / (2 * h), 1e-6,
               "backward: d cost / d %s matches finite differences", pname[i]);
    }
  }
  for (int i = 0; i < 4; i++) pd_tensor_release(&out[i]);
  pd_exec_free(fex);
  pd_exec_free(bex);
  pd_program_free(fwd);
  pd_program_free(bwd);
  pd_backward_release(&pg);
  script_free(&s);
}

/* ---- Training, as train/train.c builds the step: prune, hoist, backward, SGD. */

static bool run_block0(const pd_program *p, pd_scope *scope, pd_error *err) {
  pd_exec *ex;
  if (pd_exec_new(p, NULL, &ex, err)) return false;
  bool good = pd_exec_run_block(ex, 0, scope, err) == PD_OK;
  pd_exec_free(ex);
  return good;
}

static void test_train(void) {
  script s;
  pd_program *train = NULL, *init = NULL;
  pd_exec *ex = NULL;
  pd_backward pg;
  memset(&pg, 0, sizeof pg);
  const char *cost = "cost";
  const double lr = 0.01;
  pd_optimizer o;
  pd_optimizer_defaults(&o, PD_OPT_SGD, lr);
  bool good = script_new(&s, "train.pd", grad_text, false);
  pd_status st = good ? pd_program_prune(s.unit->main, 1, &cost, &train, &s.err) : PD_EINVAL;
  if (!st) st = pd_program_hoist(train, NULL, &s.err);
  if (!st) st = pd_append_backward(train, cost, &pg, &s.err);
  if (!st && !(init = pd_program_new())) st = PD_ENOMEM;
  if (!st) st = pd_append_optimizer(train, init, &pg, &o, (pd_loc){0}, &s.err);
  if (!st && !run_block0(init, pd_runner_scope(s.r), &s.err)) st = PD_ERUNTIME;
  if (!st) st = pd_exec_new(train, NULL, &ex, &s.err);
  if (!ok(st == PD_OK, "train: the training program builds"))
    printf("#   %s\n", s.err.msg ? s.err.msg : pd_status_str(st));
  pd_tensor *p[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3 && st == PD_OK; i++) {
    pd_variable *v = pd_scope_find_local_var(pd_runner_scope(s.r), pname[i]);
    p[i] = v ? pd_var_tensor(v) : NULL;
    if (!ok(p[i] && p[i]->dtype == PD_FP32 && pd_tensor_numel(p[i]) == 1,
            "train: %s is one fp32 parameter", pname[i]))
      st = PD_ERUNTIME;
  }
  for (int step = 1; step <= 2 && st == PD_OK; step++) {
    /* By hand from the values the step starts from (what the step before left). */
    double p0[3], want_cost, g[3];
    for (int i = 0; i < 3; i++) p0[i] = PD_TENSOR_F32(p[i])[0];
    by_hand(p0[0], p0[1], p0[2], &want_cost, g);
    pd_tensor c;
    pd_tensor_init(&c);
    pd_exec_fetch f = {"cost", &c};
    pd_exec_io io = {0, NULL, 1, &f};
    st = pd_exec_run(ex, pd_runner_scope(s.r), &io, NULL, &s.err);
    if (!ok(st == PD_OK, "train: step %d runs", step))
      printf("#   %s\n", s.err.msg ? s.err.msg : pd_status_str(st));
    if (st == PD_OK)
      is_close(c.dtype == PD_FP32 ? PD_TENSOR_F32(&c)[0] : NAN, want_cost, 1e-5,
               "train: step %d's cost is %.6g by hand", step, want_cost);
    pd_tensor_release(&c);
    for (int i = 0; i < 3 && st == PD_OK; i++)
      is_close(PD_TENSOR_F32(p[i])[0], p0[i] - lr * g[i], 1e-5,
               "train: step %d takes %s from %.6g to %.6g (p -= lr * the gradient by hand)",
               step, pname[i], p0[i], p0[i] - lr * g[i]);
  }
  pd_exec_free(ex);
  pd_program_free(train);
  pd_program_free(init);
  pd_backward_release(&pg);
  script_free(&s);
}

int main(void) {
  test_flat();
  test_nested();
  test_grads();
  test_train();
  return tap_done();
}
