/* optest_recurrent.c -- the op-test table's rows of vm/ops/recurrent.c (optest.h): elman_rnn, an op
 * row over a batch of sequences (each activation, reversed, initial states per sequence, shared
 * or absent, sequences of one length and of several), and recurrent, as scripts whose `for`
 * over a batch of sequences the language makes into one, with their costs worked out in Python
 * (quoted in the comments) and their parameters' gradients checked by finite differences. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

enum { MAX_H = 8 };

/* elman_rnn: per sequence, from its first row (its last with is_reverse), h' = act(x + h W),
 * x the row of Input, h the previous state (H0's row for the sequence, its one row when [H],
 * or 0) times Weight [H, H]; Hidden holds each row's h'. */
static void ref_elman(ot_ref *r) {
  const ot_val *x = ot_in(r, "Input"), *w = ot_in(r, "Weight"), *h0 = ot_in(r, "H0");
  const char *act = ot_str(r, "activation");
  int64_t H = x->dims[1];
  double *o = ot_out_like(r, "Hidden", x);
  for (int s = 0; s + 1 < x->nlod; s++) {
    int64_t len = x->lod[s + 1] - x->lod[s];
    double h[MAX_H], a[MAX_H];
    for (int64_t j = 0; j < H; j++) h[j] = !h0 ? 0 : h0->nd == 1 ? h0->v[j] : h0->v[s * H + j];
    for (int64_t k = 0; k < len; k++) {
      int64_t row = x->lod[s] + (ot_bool(r, "is_reverse") ? len - 1 - k : k);
      for (int64_t j = 0; j < H; j++) {
        a[j] = x->v[row * H + j];
        for (int64_t i = 0; i < H; i++) a[j] += h[i] * w->v[i * H + j];
      }
      for (int64_t j = 0; j < H; j++) {
        h[j] = !strcmp(act, "tanh")   ? tanh(a[j])
               : !strcmp(act, "relu") ? (a[j] > 0 ? a[j] : 0)
                                      : 1 / (1 + exp(-a[j]));
        o[row * H + j] = h[j];
      }
    }
  }
}

/* ---------------------------------------------------------------- the rows */

/* Hidden 3. Four sequences of 2, 0, 3 and 1 rows; three of 2 (one length: the strided path). */
#define SEQS .lod = (const int64_t[]){0, 2, 2, 5, 6}, .nlod = 5
#define EVEN .lod = (const int64_t[]){0, 2, 4, 6}, .nlod = 4
#define ELMAN(what_, attrs_, lod, ...)                                                        \
  {.op = "elman_rnn", .what = what_, .attrs = attrs_,                                         \
   .in = {{"Input", "[6, 3]", .lo = -1.5, .hi = 1.5, lod}, {"Weight", "[3, 3]"}, __VA_ARGS__}, \
   .ref = ref_elman}

const ot_row ot_rows_recurrent[] = {
    ELMAN("tanh, H0 per sequence", "activation=tanh", SEQS, {"H0", "[4, 3]"}),
    ELMAN("tanh, reversed, no H0", "activation=tanh is_reverse=true", SEQS, {0}),
    /* relu: the pre-activations are random, none within the check's step of 0. */
    ELMAN("relu, shared H0", "activation=relu", SEQS, {"H0", "[3]"}),
    ELMAN("relu, reversed, H0 per sequence", "activation=relu is_reverse=true", SEQS,
          {"H0", "[4, 3]"}),
    ELMAN("sigmoid, reversed, shared H0", "activation=sigmoid is_reverse=true", SEQS,
          {"H0", "[3]"}),
    ELMAN("tanh, one length, H0 per sequence", "activation=tanh", EVEN, {"H0", "[3, 3]"}),
    ELMAN("sigmoid, one length, reversed, shared H0", "activation=sigmoid is_reverse=true", EVEN,
          {"H0", "[3]"}),
    ELMAN("relu, one length, no H0", "activation=relu", EVEN, {0}),

    /* Sequences of 3 and 2 steps, h0 shared: per sequence h = tanh(t W + h U), emitting t W h;
     * after the loop h is each sequence's last state. By Python:
     *   s, h0, W, U = 0.5, 0.25, 0.75, 0.375
     *   hs, os_ = [], []
     *   for q in [[1, 2, 3], [4, 5]]:
     *       h = h0
     *       for v in q:
     *           a = v * s * W
     *           h = math.tanh(a + h * U)
     *           os_.append(a * h)
     *       hs.append(h)
     *   sum(hs) / len(hs) + sum(o * o for o in os_) / len(os_) */
    {.op = "recurrent", .what = "for over two sequences, a memory and an emit",
     .script = "x = sequence([[1, 2, 3], [4, 5]]) * param([1], init = 0.5, name = \"s\")\n"
               "h = var(0) + param([1], init = 0.25, name = \"h0\")\n"
               "W = param([1], init = 0.75, name = \"W\")\n"
               "U = param([1], init = 0.375, name = \"U\")\n"
               "for (t in x) {\n"
               "    a = t * W\n"
               "    h = tanh(a + h * U)\n"
               "    emit o = a * h\n"
               "}\n"
               "cost = mean(h) + mean(o * o)\n",
     .cost = "cost", .nparams = 4, .want = (const double[]){2.245039360947281}, .nwant = 1},
    /* Reversed, over three sequences (2, 1, 3 steps): h is each sequence's state after its
     * first element, o keeps x's order (weighed by x, so that the order counts). By Python:
     *   sig = lambda v: 1 / (1 + math.exp(-v))
     *   s, W = 0.25, 0.5
     *   hs, terms = [], []
     *   for q in [[1, 2], [3], [4, 5, 6]]:
     *       h, o = 0.5, [0] * len(q)
     *       for j in reversed(range(len(q))):
     *           h = sig(q[j] * s * W + h)
     *           o[j] = h
     *       hs.append(h)
     *       terms += [o[j] * q[j] * s for j in range(len(q))]
     *   sum(v * v for v in hs) / len(hs) + sum(terms) / len(terms) */
    {.op = "recurrent", .what = "reversed, three lengths",
     .script = "x = sequence([[1, 2], [3], [4, 5, 6]]) * param([1], init = 0.25, name = \"s\")\n"
               "W = param([1], init = 0.5, name = \"W\")\n"
               "h = var(0.5)\n"
               "for (t in x, reverse = true) {\n"
               "    h = sigmoid(t * W + h)\n"
               "    emit o = h\n"
               "}\n"
               "cost = mean(h * h) + mean(o * x)\n",
     .cost = "cost", .nparams = 2, .want = (const double[]){1.197387702880198}, .nwant = 1},
    {0},
};
