/* test_paddle_export.c -- the pass that writes a saved model for PaddlePaddle
 * (vm/passes/paddle_export.h): each script's program, in fp64, run on a batch of sequences
 * with LoD (lengths 3, 1, 4) and, rewritten, on the same batch padded [3, 4, D] with its
 * lengths, gives the same outputs (1e-12), the sequences' rows compared up to each length; the
 * ops the rewrite writes (rnn for the lstm and gru layers, one bidirectional rnn for a forward
 * and a reverse layer over the same input, while for other loops, the poolings of sequences as
 * masked reductions over the steps, an if over rows as where, no recurrent or sequence_pool
 * left); the refusals (a softmax over each sequence, an if over rows with a batch-wide op); the
 * original program unchanged. tests/interop/roundtrip.sh runs the same kinds of models in
 * PaddlePaddle. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/lang/fp64.h"
#include "tests/tap.h"
#include "vm/ir/serialize.h"
#include "vm/passes/paddle_export.h"
#include "vm/run/exec.h"

enum { N = 3, T = 4, ROWS = 8 };
static const int64_t lens[N] = {3, 1, 4};

/* The values of the batch: row r, column k. */
static double val(int r, int k, bool ids) { return ids ? (r * 7 + 3) % 20 : sin(1.7 * r + k); }

static int count_op(const pd_program *p, const char *type) {
  int n = 0;
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) n += strcmp(p->blocks[b]->ops[i]->type, type) == 0;
  return n;
}
static bool has_op(const pd_program *p, const char *type) { return count_op(p, type) > 0; }

/* Run ex on x (rows with LoD, or padded with x_lengths) and fetch the targets into out. */
static pd_status run(pd_exec *ex, pd_runner *r, bool padded, bool ids, int d, int nt,
                     const char *const *targets, pd_tensor *out, pd_error *err) {
  pd_tensor x, l;
  pd_tensor_init(&x);
  pd_tensor_init(&l);
  double xs[N * T * 8] = {0};
  int64_t xi[N * T * 8] = {0};
  int row = 0;
  for (int s = 0; s < N; s++)
    for (int t = 0; t < lens[s]; t++, row++)
      for (int k = 0; k < d; k++) {
        int at = (padded ? s * T + t : row) * d + k;
        xs[at] = val(row, k, ids);
        xi[at] = (int64_t)val(row, k, ids);
      }
  int64_t pd[3] = {N, T, d}, rd[2] = {ROWS, d}, nd[1] = {N};
  pd_status st = pd_tensor_set_data(&x, ids ? PD_INT64 : PD_FP64, padded ? 3 : 2, padded ? pd : rd,
                                    ids ? (const void *)xi : (const void *)xs);
  if (!st && padded) st = pd_tensor_set_data(&l, PD_INT64, 1, nd, lens);
  if (!st && !padded) {
    int64_t off[N + 1] = {0, 3, 4, 8}, n = N + 1;
    const int64_t *lv = off;
    st = pd_tensor_set_lod(&x, 1, &lv, &n);
  }
  pd_exec_feed f[2] = {{ids ? "ids" : "x", &x}, {ids ? "ids_lengths" : "x_lengths", &l}};
  pd_exec_fetch fe[4];
  for (int i = 0; i < nt; i++) fe[i] = (pd_exec_fetch){targets[i], &out[i]};
  pd_exec_io io = {padded ? 2 : 1, f, nt, fe};
  if (!st) st = pd_exec_run(ex, pd_runner_scope(r), &io, NULL, err);
  pd_tensor_release(&x);
  pd_tensor_release(&l);
  return st;
}

/* Compare a target of the original run (a with LoD rows, or plain) with the rewritten run's. */
static bool same(const pd_tensor *a, const pd_tensor *b, double *worst) {
  int64_t n = pd_tensor_numel(a);
  bool seq = a->nlod > 0 || (b->ndims == a->ndims + 1 && a->dims[0] == ROWS);
  if (a->dtype != PD_FP64 || b->dtype != PD_FP64) return false;
  int64_t w = a->ndims > 1 ? n / a->dims[0] : 1;
  if (!seq && (pd_tensor_numel(b) != n)) return false;
  if (seq && (b->ndims < 2 || b->dims[0] != N || b->dims[1] != T)) return false;
  int row = 0;
  for (int s = 0; s < (seq ? N : 1); s++)
    for (int t = 0; t < (seq ? lens[s] : 1); t++, row++)
      for (int64_t k = 0; k < (seq ? w : n); k++) {
        double x = PD_TENSOR_F64(a)[seq ? row * w + k : k];
        double y = PD_TENSOR_F64(b)[seq ? (s * T + t) * w + k : k];
        double e = fabs(x - y) / (fabs(x) > 1 ? fabs(x) : 1);
        if (e > *worst) *worst = e;
      }
  return *worst < 1e-12;
}

/* Compile text in fp64, run its program to the targets on the LoD batch, rewrite it, run that
 * on the padded batch; the rewrite holds nwant `want` ops and no recurrent or sequence_pool. */
static void check(const char *name, const char *text, int nt, const char *const *targets,
                  bool ids, int d, const char *want, int nwant) {
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  pd_runner *r = NULL;
  pd_program *fwd = NULL, *q = NULL;
  pd_exec *ex = NULL, *qx = NULL;
  pd_error err = {0};
  const char **feeds = NULL;
  int nf = 0;
  pd_tensor a[4], b[4];
  for (int i = 0; i < 4; i++) pd_tensor_init(&a[i]), pd_tensor_init(&b[i]);
  const char *feed = ids ? "ids" : "x";
  pd_status st = fp64_setup(name, text, targets[0], &src, &unit, &r, &fwd, &err);
  pd_program_free(fwd);
  fwd = NULL;
  if (!st) st = pd_program_prune(unit->main, nt, targets, &fwd, &err);
  pd_buf before, after;
  pd_buf_init(&before);
  pd_buf_init(&after);
  if (!st) pd_program_dump(fwd, &before);
  if (!st) st = pd_program_for_paddle(fwd, 1, &feed, nt, targets, &q, &feeds, &nf, &err);
  if (!st) pd_program_dump(fwd, &after);
  ok(!st && before.data && after.data && strcmp(before.data, after.data) == 0,
     "%s: rewritten (the program run in memory unchanged)", name);
  if (st) printf("# %s\n", err.msg ? err.msg : pd_status_str(st));
  if (!st) {
    char ln[64];
    snprintf(ln, sizeof ln, "%s_lengths", feed);
    ok(nf == 2 && strcmp(feeds[0], feed) == 0 && strcmp(feeds[1], ln) == 0,
       "%s: inputs %s, %s", name, feed, ln);
    ok(count_op(q, want) == nwant && !has_op(q, "recurrent") && !has_op(q, "sequence_pool") &&
           !has_op(q, "fused_lstm") && !has_op(q, "fused_gru"),
       "%s: %d %s op%s, no recurrent, fused or sequence_pool op", name, nwant, want,
       nwant > 1 ? "s" : "");
    st = pd_program_validate(q, &err);
    if (!st) {
      uint8_t *bytes = NULL;
      size_t len = 0;
      st = pd_program_to_bytes(q, &bytes, &len, &err);
      pd_free(bytes);
    }
    ok(!st, "%s: the rewritten program validates and serializes", name);
  }
  if (!st) st = pd_exec_new(fwd, NULL, &ex, &err);
  if (!st) st = pd_exec_new(q, NULL, &qx, &err);
  if (!st) st = run(ex, r, false, ids, d, nt, targets, a, &err);
  if (!st) st = run(qx, r, true, ids, d, nt, targets, b, &err);
  if (st) printf("# %s: %s\n", name, err.msg ? err.msg : pd_status_str(st));
  for (int i = 0; i < nt; i++) {
    double worst = 0;
    bool agree = !st && same(&a[i], &b[i], &worst); /* before ok() reads worst */
    ok(agree, "%s: %s as the loop computes it (worst %.1e)", name, targets[i], worst);
  }
  for (int i = 0; i < 4; i++) pd_tensor_release(&a[i]), pd_tensor_release(&b[i]);
  pd_buf_free(&before);
  pd_buf_free(&after);
  pd_free(feeds);
  pd_exec_free(ex);
  pd_exec_free(qx);
  pd_program_free(q);
  pd_program_free(fwd);
  pd_runner_free(r);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_error_clear(&err);
}

/* A program the pass refuses, with the message's words. */
static void refused(const char *name, const char *text, const char *target, const char *want) {
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  pd_runner *r = NULL;
  pd_program *fwd = NULL, *q = NULL;
  pd_error err = {0};
  const char **feeds = NULL, *feed = "x";
  int nf = 0;
  pd_status st = fp64_setup(name, text, target, &src, &unit, &r, &fwd, &err);
  if (!st) st = pd_program_for_paddle(fwd, 1, &feed, 1, &target, &q, &feeds, &nf, &err);
  ok(st == PD_EUNSUPPORTED && !q && err.msg && strstr(err.msg, want), "%s: refused (%s)", name,
     err.msg ? err.msg : "no message");
  pd_program_free(fwd);
  pd_runner_free(r);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_error_clear(&err);
}

int main(void) {
  static const char *const one[] = {"y"}, *const two[] = {"y", "hs"},
                           *const three[] = {"y", "hs", "as"};
  check("lstm", "import \"layers\"\nx = data(\"x\", [-1, 4], lod_level = 1)\n"
        "hs, h, c = lstm(x, 5)\ny = fc(concat([h, c], 1), 3) * 1.0\n", 2, two, false, 4, "rnn", 1);
  check("lstm_reverse_ids",
        "import \"layers\"\nids = data(\"ids\", [-1, 1], int64, lod_level = 1)\n"
        "e = embedding(ids, 20, 6)\nhs, h, c = lstm(e, 4, reverse = true)\n"
        "y = softmax(fc(concat([h, c], 1), 3))\n", 2, two, true, 1, "rnn", 1);
  check("gru_both_ways", "import \"layers\"\nx = data(\"x\", [-1, 3], lod_level = 1)\n"
        "hs, f = gru(x, 5, h0 = var([0.1, 0.2, 0.3, 0.4, 0.5]))\n"
        "bs, b = gru(x, 5, reverse = true)\ny = fc(concat([f, b], 1), 2) * 1.0\n", 2, two, false, 3,
        "rnn", 1);
  check("lstm_both_ways", "import \"layers\"\nx = data(\"x\", [-1, 3], lod_level = 1)\n"
        "fs, f, fc_ = lstm(x, 4, c0 = var([0.5, -0.5, 0.25, 0.0]))\nm = mean(f)\n"
        "bs, b, bc = lstm(x, 4, h0 = var([0.1, 0.2, 0.3, 0.4]), reverse = true)\n"
        "y = concat([f, fc_, b, bc], 1) + m\n", 2, two, false, 3, "rnn", 1);
  check("gru_other_sizes", "import \"layers\"\nx = data(\"x\", [-1, 3], lod_level = 1)\n"
        "fs, f = gru(x, 5)\nbs, b = gru(x, 4, reverse = true)\ny = concat([f, b], 1) * 1.0\n",
        1, one, false, 3, "rnn", 2);
  check("for_loop", "x = data(\"x\", [-1, 4], lod_level = 1)\nW = param([4, 5])\n"
        "U = param([5, 5])\nV = param([5, 5])\nh = zeros([5])\nm = zeros([5])\n"
        "for (t in x) {\n    a = tanh(mul(t, W) + mul(h, U))\n"
        "    m = sigmoid(mul(a, V) + m * 0.5)\n    h = a * m\n    emit hs = h, as = a\n}\n"
        "y = h + m\n", 3, three, false, 4, "while", 1);
  check("for_loop_reverse", "x = data(\"x\", [-1, 1], lod_level = 1)\nh = var(0)\n"
        "for (t in x, reverse = true) {\n    h = tanh(t * 0.5 + h * 0.25)\n    emit hs = h\n}\n"
        "y = h * 2\n", 2, two, false, 1, "while", 1);
  check("for_loop_one", "x = data(\"x\", [-1, 1], lod_level = 1)\nh = var(0)\n"
        "for (t in x) {\n    h = tanh(t * 0.5 + h * 0.25)\n}\ny = h\n", 1, one, false, 1,
        "while", 1);
  check("pools", "import \"layers\"\nx = data(\"x\", [-1, 4], lod_level = 1)\n"
        "hs, h = gru(x, 5)\n"
        "y = concat([sequence_pool(hs, \"SUM\"), sequence_pool(hs, \"AVERAGE\"),\n"
        "            sequence_pool(hs, \"SQRT\"), sequence_max(hs), sequence_pool(x, \"FIRST\"),\n"
        "            sequence_pool(x, \"LAST\"), sequence_pool(x * 2.0 - 5.0, \"MAX\")], 1)\n",
        1, one, false, 4, "cumsum", 6);
  check("rows_if", "import \"layers\"\nx = data(\"x\", [-1, 4], lod_level = 1)\n"
        "hs, h = gru(x, 5)\nW = param([5, 3])\ny = fc(h, 3)\n"
        "if (reduce_sum(h, [1], keep_dim = true) > 0.0) {\n    y = tanh(mul(h, W)) * 2.0\n"
        "} else {\n    y = y - 1.0\n}\n", 1, one, false, 4, "where", 1);
  refused("rows_if_batch_wide", "import \"layers\"\nx = data(\"x\", [-1, 4], lod_level = 1)\n"
          "hs, h = gru(x, 5)\ny = h\nif (reduce_sum(h, [1], keep_dim = true) > 0.0) {\n"
          "    y = h - mean(h)\n}\n", "y", "whose block has mean, which is not row-wise");
  refused("sequence_softmax", "x = data(\"x\", [-1, 1], lod_level = 1)\n"
          "y = sequence_softmax(x)\n", "y", "op sequence_softmax cannot be written");
  tap_done();
  return 0;
}
