/* optest_loss_elem.c -- the op-test table's rows of vm/ops/loss_elem.c (optest.h): huber_loss
 * (delta), kldiv_loss (every reduction, zero targets), sigmoid_cross_entropy_with_logits
 * (normalize, ignore_index) and smooth_l1_loss (sigma, InsideWeight, OutsideWeight), with the
 * gradients of every float input. The references are Fluid's definitions in double. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* huber_loss: Residual = y - x; Out = r^2 / 2 where |r| <= delta, else delta (|r| - delta / 2). */
static void ref_huber(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *y = ot_in(r, "Y");
  double d = ot_float(r, "delta");
  double *res = ot_out_like(r, "Residual", x), *o = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++) {
    double e = y->v[i] - x->v[i];
    res[i] = e;
    o[i] = fabs(e) <= d ? 0.5 * e * e : d * (fabs(e) - 0.5 * d);
  }
}

/* kldiv_loss: l = t (log t - x) where t > 0, else 0; Loss = l ("none"), or sum(l) ("sum"),
 * sum(l) / numel ("mean"), sum(l) / dims[0] ("batchmean"). */
static void ref_kldiv(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *t = ot_in(r, "Target");
  const char *red = ot_str(r, "reduction");
  double sum = 0, *o = NULL;
  if (!strcmp(red, "none")) o = ot_out_like(r, "Loss", x);
  for (int64_t i = 0; i < x->n; i++) {
    double l = t->v[i] > 0 ? t->v[i] * (log(t->v[i]) - x->v[i]) : 0;
    sum += l;
    if (o) o[i] = l;
  }
  if (o) return;
  double div = !strcmp(red, "sum") ? 1 : !strcmp(red, "mean") ? (double)x->n : (double)x->dims[0];
  ot_out(r, "Loss", 1, (const int64_t[]){1})[0] = sum / div;
}

/* sigmoid_cross_entropy_with_logits: Out = -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)),
 * 0 where (int)z == ignore_index (Fluid casts the label); with normalize, divided by the count
 * of labels not ignored (1 when there are none). log sigmoid(x) = -log1p(e^-x) and
 * log(1 - sigmoid(x)) = -x - log1p(e^-x), the latter written for x < 0 as -log1p(e^x). */
static double log_sig(double x) { return x >= 0 ? -log1p(exp(-x)) : x - log1p(exp(x)); }

static void ref_sigmoid_xent(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *z = ot_in(r, "Label");
  int64_t ign = ot_int(r, "ignore_index"), kept = 0;
  double *o = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++) {
    if ((int64_t)z->v[i] == ign) continue;
    kept++;
    o[i] = -z->v[i] * log_sig(x->v[i]) - (1 - z->v[i]) * log_sig(-x->v[i]);
  }
  if (ot_bool(r, "normalize") && kept > 0)
    for (int64_t i = 0; i < x->n; i++) o[i] /= (double)kept;
}

/* smooth_l1_loss over X [N, ...]: d = (x - y) iw (Diff), per element s2 d^2 / 2 where
 * |d| < 1 / s2, else |d| - 0.5 / s2 (s2 = sigma^2), times ow, summed over each row: Out [N, 1].
 * Absent weights are 1. */
static void ref_smooth_l1(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *y = ot_in(r, "Y");
  const ot_val *iw = ot_in(r, "InsideWeight"), *ow = ot_in(r, "OutsideWeight");
  double s = ot_float(r, "sigma"), s2 = s * s;
  int64_t rows = x->dims[0], cols = x->n / rows;
  double *diff = ot_out_like(r, "Diff", x), *o = ot_out(r, "Out", 2, (const int64_t[]){rows, 1});
  for (int64_t i = 0; i < x->n; i++) {
    double d = (x->v[i] - y->v[i]) * (iw ? iw->v[i] : 1);
    double l = fabs(d) < 1 / s2 ? 0.5 * s2 * d * d : fabs(d) - 0.5 / s2;
    diff[i] = d;
    o[i / cols] += l * (ow ? ow->v[i] : 1);
  }
}

/* Targets of kldiv_loss: positive (the loss's log t), some 0 where given. */
#define TARGET .lo = 0.05, .hi = 1
/* Labels of sigmoid_cross_entropy_with_logits: probabilities. */
#define PROB01 .lo = 0, .hi = 1
/* Two rows of six with a target 0 each (and one below 0): l is 0 there, and so is d/dX. */
static const double tz[] = {0.3, 0, 0.2, 0.9, 0.05, 0.6, 0.1, 0.7, -0.4, 0, 0.25, 0.5};
/* Labels with some -1 (ignored with ignore_index -1), and -1.5, which (int) makes -1. */
static const double zign[] = {0.2, -1, 1, 0.7, 0, -1, 0.4, -1.5, 0.9, 0.1};
/* smooth_l1_loss: x - y in [-2, 2), beyond 1 / sigma^2 in places for each sigma below. */
#define WIDE .lo = -1, .hi = 1
#define WEIGHT .lo = 0.2, .hi = 1.5
/* Its first output is Diff: the gradient check weighs Out (the gradient op reads Out@GRAD). */
#define SL1 .ref = ref_smooth_l1, .loss = "Out"

const ot_row ot_rows_loss_elem[] = {
    /* huber_loss: |y - x| < 2 on both sides of delta 1 (the default), 0.3 and, with a wider
     * range, 2.5. The loss is C1 at |r| = delta: no kink for the gradient check. */
    {.op = "huber_loss", .in = {{"X", "[3, 4]"}, {"Y", "[3, 4]"}}, .ref = ref_huber},
    {.op = "huber_loss", .what = "delta 0.3", .attrs = "delta=0.3",
     .in = {{"X", "[2, 5]"}, {"Y", "[2, 5]"}}, .ref = ref_huber},
    {.op = "huber_loss", .what = "delta 2.5, 3-d", .attrs = "delta=2.5",
     .in = {{"X", "[2, 2, 3]", .lo = -3, .hi = 3}, {"Y", "[2, 2, 3]", .lo = -3, .hi = 3}},
     .ref = ref_huber},

    /* kldiv_loss: every reduction (the default is mean); batchmean divides by dims[0]. */
    {.op = "kldiv_loss", .in = {{"X", "[3, 4]"}, {"Target", "[3, 4]", TARGET}},
     .ref = ref_kldiv},
    {.op = "kldiv_loss", .what = "none", .attrs = "reduction=none",
     .in = {{"X", "[3, 4]"}, {"Target", "[3, 4]", TARGET}}, .ref = ref_kldiv},
    {.op = "kldiv_loss", .what = "sum", .attrs = "reduction=sum",
     .in = {{"X", "[2, 3]"}, {"Target", "[2, 3]", TARGET}}, .ref = ref_kldiv},
    {.op = "kldiv_loss", .what = "batchmean, 3-d", .attrs = "reduction=batchmean",
     .in = {{"X", "[2, 3, 2]"}, {"Target", "[2, 3, 2]", TARGET}}, .ref = ref_kldiv},
    /* Zero and negative targets: the loss is not differentiable in t there, X's gradient only. */
    {.op = "kldiv_loss", .what = "zero targets, none", .attrs = "reduction=none",
     .in = {{"X", "[2, 6]"}, {"Target", "[2, 6]", .v = tz}}, .ref = ref_kldiv, .wrt = "X"},
    {.op = "kldiv_loss", .what = "zero targets, batchmean", .attrs = "reduction=batchmean",
     .in = {{"X", "[2, 6]"}, {"Target", "[2, 6]", .v = tz}}, .ref = ref_kldiv, .wrt = "X"},

    /* sigmoid_cross_entropy_with_logits: logits up to +-30 (log(1 + e^x) must not be taken
     * naively), soft labels; normalize alone divides by every element. */
    {.op = "sigmoid_cross_entropy_with_logits",
     .in = {{"X", "[3, 4]", .lo = -30, .hi = 30}, {"Label", "[3, 4]", PROB01}},
     .ref = ref_sigmoid_xent},
    {.op = "sigmoid_cross_entropy_with_logits", .what = "logits +-800, hard labels",
     .in = {{"X", "[4]", .v = (const double[]){-800, 800, 800, -800}},
            {"Label", "[4]", .v = (const double[]){0, 1, 0, 1}}},
     .ref = ref_sigmoid_xent, .no_grad = true},
    {.op = "sigmoid_cross_entropy_with_logits", .what = "normalize", .attrs = "normalize=true",
     .in = {{"X", "[2, 3]", .lo = -4, .hi = 4}, {"Label", "[2, 3]", PROB01}},
     .ref = ref_sigmoid_xent},
    /* Ignored labels: the loss steps there as the label moves, so X's gradient only. */
    {.op = "sigmoid_cross_entropy_with_logits", .what = "ignore_index -1",
     .attrs = "ignore_index=-1",
     .in = {{"X", "[2, 5]", .lo = -4, .hi = 4}, {"Label", "[2, 5]", .v = zign}},
     .ref = ref_sigmoid_xent, .wrt = "X"},
    {.op = "sigmoid_cross_entropy_with_logits", .what = "ignore_index -1, normalize",
     .attrs = "ignore_index=-1 normalize=true",
     .in = {{"X", "[2, 5]", .lo = -4, .hi = 4}, {"Label", "[2, 5]", .v = zign}},
     .ref = ref_sigmoid_xent, .wrt = "X"},

    /* smooth_l1_loss: sigma 1 (the default) and others, without weights, with one, with both. */
    {.op = "smooth_l1_loss", .in = {{"X", "[3, 4]", WIDE}, {"Y", "[3, 4]", WIDE}}, SL1},
    {.op = "smooth_l1_loss", .what = "sigma 1.5, 3-d", .attrs = "sigma=1.5",
     .in = {{"X", "[2, 2, 3]", WIDE}, {"Y", "[2, 2, 3]", WIDE}}, SL1},
    {.op = "smooth_l1_loss", .what = "sigma 0.8, InsideWeight", .attrs = "sigma=0.8",
     .in = {{"X", "[3, 4]", .lo = -1.5, .hi = 1.5}, {"Y", "[3, 4]", WIDE},
            {"InsideWeight", "[3, 4]", WEIGHT}}, SL1},
    {.op = "smooth_l1_loss", .what = "sigma 1.25, OutsideWeight", .attrs = "sigma=1.25",
     .in = {{"X", "[2, 5]", WIDE}, {"Y", "[2, 5]", WIDE}, {"OutsideWeight", "[2, 5]", WEIGHT}},
     SL1},
    {.op = "smooth_l1_loss", .what = "sigma 2, both weights", .attrs = "sigma=2",
     .in = {{"X", "[3, 4]", WIDE}, {"Y", "[3, 4]", WIDE}, {"InsideWeight", "[3, 4]", WEIGHT},
            {"OutsideWeight", "[3, 4]", WEIGHT}}, SL1},
    {0},
};
