/* optest_optim.c -- the op-test table's rows of vm/ops/optim.c (optest.h): one update of sgd,
 * momentum (Nesterov, l2_decay, rescale_grad), adam (the Beta/Epsilon tensors, SkipUpdate,
 * use_global_beta_pow, fp32 beta pows), adamw (lr_ratio, with_decay), rmsprop (momentum,
 * centered) and adagrad, each output against Fluid's formulas written out here in double. The
 * optimizers have no gradients: their rows are values only (and the GPU against the CPU). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* A scalar input's value (LearningRate, Beta1Pow, ...), or dflt when the row gives none. */
static double scalar(ot_ref *r, const char *slot, double dflt) {
  const ot_val *v = ot_in(r, slot);
  return v ? v->v[0] : dflt;
}

/* sgd: ParamOut = Param - lr Grad. */
static void ref_sgd(ot_ref *r) {
  const ot_val *p = ot_in(r, "Param"), *g = ot_in(r, "Grad");
  double lr = scalar(r, "LearningRate", 0), *po = ot_out_like(r, "ParamOut", p);
  for (int64_t i = 0; i < p->n; i++) po[i] = p->v[i] - lr * g->v[i];
}

/* momentum: g = rescale_grad Grad (+ regularization_coeff Param for l2_decay);
 * VelocityOut = mu Velocity + g; ParamOut = Param - lr VelocityOut, or with Nesterov
 * Param - lr (g + mu VelocityOut). */
static void ref_momentum(ot_ref *r) {
  const ot_val *p = ot_in(r, "Param"), *g = ot_in(r, "Grad"), *v = ot_in(r, "Velocity");
  double lr = scalar(r, "LearningRate", 0), mu = ot_float(r, "mu");
  double l2 = !strcmp(ot_str(r, "regularization_method"), "l2_decay")
                  ? ot_float(r, "regularization_coeff") : 0;
  double *po = ot_out_like(r, "ParamOut", p), *vo = ot_out_like(r, "VelocityOut", p);
  for (int64_t i = 0; i < p->n; i++) {
    double gi = g->v[i] * ot_float(r, "rescale_grad") + l2 * p->v[i];
    vo[i] = mu * v->v[i] + gi;
    po[i] = p->v[i] - lr * (ot_bool(r, "use_nesterov") ? gi + mu * vo[i] : vo[i]);
  }
}

/* What adam and adamw give (Fluid's kernels): beta1, beta2, epsilon from their tensors when
 * given; a true SkipUpdate copies every input to its output. Else, with lr' = lr (times
 * lr_ratio for adamw) and c = coeff (adamw with with_decay; else 0): p -= lr' c p (the decay,
 * decoupled); m1 = b1 m1 + (1 - b1) g; m2 = b2 m2 + (1 - b2) g^2; p -= lr' sqrt(1 - b2p) /
 * (1 - b1p) m1 / (sqrt(m2) + eps sqrt(1 - b2p)); the pows times their beta, in their dtype. */
typedef struct adam_want {
  double *p, *m1, *m2, b1p, b2p;
} adam_want;

static void adam_expect(ot_ref *r, adam_want *w) {
  const ot_val *p = ot_in(r, "Param"), *g = ot_in(r, "Grad");
  const ot_val *m1 = ot_in(r, "Moment1"), *m2 = ot_in(r, "Moment2");
  const ot_val *bp1 = ot_in(r, "Beta1Pow"), *bp2 = ot_in(r, "Beta2Pow");
  double b1 = scalar(r, "Beta1Tensor", ot_float(r, "beta1"));
  double b2 = scalar(r, "Beta2Tensor", ot_float(r, "beta2"));
  double eps = scalar(r, "EpsilonTensor", ot_float(r, "epsilon"));
  double lr = scalar(r, "LearningRate", 0), c = 0;
  bool adamw = !strcmp(ot_op(r), "adamw");
  if (adamw) {
    lr *= ot_float(r, "lr_ratio");
    if (ot_bool(r, "with_decay")) c = ot_float(r, "coeff");
  }
  if (scalar(r, "SkipUpdate", 0) != 0) {
    for (int64_t i = 0; i < p->n; i++) {
      w->p[i] = p->v[i];
      w->m1[i] = m1->v[i];
      w->m2[i] = m2->v[i];
    }
    w->b1p = bp1->v[0];
    w->b2p = bp2->v[0];
    return;
  }
  double lrt = lr * sqrt(1 - bp2->v[0]) / (1 - bp1->v[0]);
  for (int64_t i = 0; i < p->n; i++) {
    double pi = p->v[i] - lr * c * p->v[i], gi = g->v[i];
    w->m1[i] = b1 * m1->v[i] + (1 - b1) * gi;
    w->m2[i] = b2 * m2->v[i] + (1 - b2) * gi * gi;
    w->p[i] = pi - lrt * w->m1[i] / (sqrt(w->m2[i]) + eps * sqrt(1 - bp2->v[0]));
  }
  w->b1p = bp1->v[0] * b1;
  w->b2p = bp2->v[0] * b2;
  if (bp1->dt == PD_FP32) w->b1p = (float)w->b1p;
  if (bp2->dt == PD_FP32) w->b2p = (float)w->b2p;
}

static void ref_adam(ot_ref *r) {
  const ot_val *p = ot_in(r, "Param"), *b1 = ot_in(r, "Beta1Pow"), *b2 = ot_in(r, "Beta2Pow");
  adam_want w = {ot_out_like(r, "ParamOut", p), ot_out_like(r, "Moment1Out", p),
                 ot_out_like(r, "Moment2Out", p), 0, 0};
  adam_expect(r, &w);
  ot_out_like(r, "Beta1PowOut", b1)[0] = w.b1p;
  ot_out_like(r, "Beta2PowOut", b2)[0] = w.b2p;
}

/* use_global_beta_pow: the same update, and the pows' outputs left unwritten (the program
 * updates the global pows once, elsewhere). */
static void check_adam_global_pow(ot_ref *r) {
  const ot_val *p = ot_in(r, "Param");
  double want[3][64];
  adam_want w = {want[0], want[1], want[2], 0, 0};
  if (p->n > 64) {
    ot_fail(r, "Param is too large for this check");
    return;
  }
  adam_expect(r, &w);
  const char *slots[3] = {"ParamOut", "Moment1Out", "Moment2Out"};
  double tol = ot_dtype(r) == PD_FP64 ? 1e-10 : 1e-5;
  for (int k = 0; k < 3; k++) {
    const ot_val *got = ot_got(r, slots[k]);
    if (!got || got->n != p->n) {
      ot_fail(r, "%s has no value of Param's size", slots[k]);
      return;
    }
    for (int64_t i = 0; i < p->n; i++)
      if (fabs(got->v[i] - want[k][i]) > tol * fmax(1, fabs(want[k][i])))
        ot_fail(r, "%s element %lld: %.10g, want %.10g", slots[k], (long long)i, got->v[i],
                want[k][i]);
  }
  if (ot_got(r, "Beta1PowOut") || ot_got(r, "Beta2PowOut"))
    ot_fail(r, "the beta pows' outputs were written with use_global_beta_pow");
}

/* rmsprop: ms = decay ms + (1 - decay) g^2; centered: mg = decay mg + (1 - decay) g and
 * mom = momentum mom + lr g / sqrt(ms - mg^2 + epsilon), else mom = momentum mom +
 * lr g / sqrt(ms + epsilon); ParamOut = Param - mom. */
static void ref_rmsprop(ot_ref *r) {
  const ot_val *p = ot_in(r, "Param"), *g = ot_in(r, "Grad"), *ms = ot_in(r, "MeanSquare");
  const ot_val *mom = ot_in(r, "Moment"), *mg = ot_in(r, "MeanGrad");
  double lr = scalar(r, "LearningRate", 0), rho = ot_float(r, "decay");
  double mu = ot_float(r, "momentum"), eps = ot_float(r, "epsilon");
  bool centered = ot_bool(r, "centered");
  double *po = ot_out_like(r, "ParamOut", p), *mso = ot_out_like(r, "MeanSquareOut", p);
  double *momo = ot_out_like(r, "MomentOut", p);
  double *mgo = centered ? ot_out_like(r, "MeanGradOut", p) : NULL;
  for (int64_t i = 0; i < p->n; i++) {
    double gi = g->v[i], var;
    mso[i] = rho * ms->v[i] + (1 - rho) * gi * gi;
    var = mso[i];
    if (centered) {
      mgo[i] = rho * mg->v[i] + (1 - rho) * gi;
      var -= mgo[i] * mgo[i];
    }
    momo[i] = mu * mom->v[i] + lr * gi / sqrt(var + eps);
    po[i] = p->v[i] - momo[i];
  }
}

/* adagrad: MomentOut = Moment + g^2; ParamOut = Param - lr g / (sqrt(MomentOut) + epsilon). */
static void ref_adagrad(ot_ref *r) {
  const ot_val *p = ot_in(r, "Param"), *g = ot_in(r, "Grad"), *m = ot_in(r, "Moment");
  double lr = scalar(r, "LearningRate", 0), eps = ot_float(r, "epsilon");
  double *po = ot_out_like(r, "ParamOut", p), *mo = ot_out_like(r, "MomentOut", p);
  for (int64_t i = 0; i < p->n; i++) {
    mo[i] = m->v[i] + g->v[i] * g->v[i];
    po[i] = p->v[i] - lr * g->v[i] / (sqrt(mo[i]) + eps);
  }
}

/* ---------------------------------------------------------------- the rows */

/* A learning rate in [0.05, 0.2): large enough that the update shows in fp32. */
#define LR {"LearningRate", "[1]", .lo = 0.05, .hi = 0.2}
/* Running powers of beta after a few steps: away from 1, where 1 - pow would lose digits. */
#define POWS {"Beta1Pow", "[1]", .lo = 0.3, .hi = 0.8}, {"Beta2Pow", "[1]", .lo = 0.5, .hi = 0.99}
/* Second moments (m2, MeanSquare, adagrad's Moment) positive: their roots divide. */
#define POSITIVE .lo = 0.1, .hi = 1
#define ADAM_IN(shape)                                                                        \
  {"Param", shape}, {"Grad", shape}, LR, {"Moment1", shape}, {"Moment2", shape, POSITIVE}, POWS

const ot_row ot_rows_optim[] = {
    {.op = "sgd", .in = {{"Param", "[2, 3]"}, LR, {"Grad", "[2, 3]"}}, .ref = ref_sgd},
    {.op = "sgd", .what = "one element", .in = {{"Param", "[1]"}, LR, {"Grad", "[1]"}},
     .ref = ref_sgd},

    {.op = "momentum", .attrs = "mu=0.9",
     .in = {{"Param", "[2, 3]"}, {"Grad", "[2, 3]"}, {"Velocity", "[2, 3]"}, LR},
     .ref = ref_momentum},
    {.op = "momentum", .what = "Nesterov", .attrs = "mu=0.8 use_nesterov=true",
     .in = {{"Param", "[5]"}, {"Grad", "[5]"}, {"Velocity", "[5]"}, LR}, .ref = ref_momentum},
    {.op = "momentum", .what = "l2_decay, rescale_grad",
     .attrs = "mu=0.9 regularization_method=l2_decay regularization_coeff=0.25 rescale_grad=0.5",
     .in = {{"Param", "[3, 2]"}, {"Grad", "[3, 2]"}, {"Velocity", "[3, 2]"}, LR},
     .ref = ref_momentum},
    {.op = "momentum", .what = "Nesterov, l2_decay",
     .attrs = "mu=0.7 use_nesterov=true regularization_method=l2_decay regularization_coeff=0.1",
     .in = {{"Param", "[4]"}, {"Grad", "[4]"}, {"Velocity", "[4]"}, LR}, .ref = ref_momentum},

    {.op = "adam", .in = {ADAM_IN("[2, 3]")}, .ref = ref_adam},
    {.op = "adam", .what = "beta1, beta2, epsilon attributes",
     .attrs = "beta1=0.5 beta2=0.75 epsilon=0.01", .in = {ADAM_IN("[4]")}, .ref = ref_adam},
    {.op = "adam", .what = "Beta1Tensor, Beta2Tensor, EpsilonTensor (over the attributes)",
     .attrs = "beta1=0.1 beta2=0.2 epsilon=0.3",
     .in = {ADAM_IN("[3]"), {"Beta1Tensor", "[1]", .v = (const double[]){0.625}},
            {"Beta2Tensor", "[1]", .v = (const double[]){0.875}},
            {"EpsilonTensor", "[1]", .v = (const double[]){0.0625}}},
     .ref = ref_adam},
    {.op = "adam", .what = "SkipUpdate true",
     .in = {ADAM_IN("[2, 2]"), {"SkipUpdate", "[1]", OT_BOOL, .v = (const double[]){1}}},
     .ref = ref_adam},
    {.op = "adam", .what = "SkipUpdate false",
     .in = {ADAM_IN("[2, 2]"), {"SkipUpdate", "[1]", OT_BOOL, .v = (const double[]){0}}},
     .ref = ref_adam},
    {.op = "adam", .what = "use_global_beta_pow", .attrs = "use_global_beta_pow=true",
     .in = {ADAM_IN("[5]")}, .check = check_adam_global_pow},
    /* The pows fp32 whatever Param's dtype (mixed in the fp64 pass); their outputs stay fp32. */
    {.op = "adam", .what = "fp32 beta pows",
     .in = {{"Param", "[3]"}, {"Grad", "[3]"}, LR, {"Moment1", "[3]"},
            {"Moment2", "[3]", POSITIVE}, {"Beta1Pow", "[1]", OT_F32, 0.3, 0.8},
            {"Beta2Pow", "[1]", OT_F32, 0.5, 0.99}},
     .ref = ref_adam},

    /* adamw: lr_ratio scales the rate; the decay only with with_decay. */
    {.op = "adamw", .what = "without decay, lr_ratio", .attrs = "lr_ratio=0.5 coeff=0.25",
     .in = {ADAM_IN("[2, 3]")}, .ref = ref_adam},
    {.op = "adamw", .what = "with_decay", .attrs = "with_decay=true coeff=0.25",
     .in = {ADAM_IN("[2, 3]")}, .ref = ref_adam},
    {.op = "adamw", .what = "with_decay, lr_ratio, Beta1Tensor",
     .attrs = "with_decay=true coeff=0.5 lr_ratio=0.75 beta2=0.9",
     .in = {ADAM_IN("[4]"), {"Beta1Tensor", "[1]", .v = (const double[]){0.75}}},
     .ref = ref_adam},
    {.op = "adamw", .what = "SkipUpdate", .attrs = "with_decay=true",
     .in = {ADAM_IN("[3]"), {"SkipUpdate", "[1]", OT_BOOL, .v = (const double[]){1}}},
     .ref = ref_adam},

    {.op = "rmsprop",
     .in = {{"Param", "[2, 3]"}, {"MeanSquare", "[2, 3]", POSITIVE}, {"Moment", "[2, 3]"}, LR,
            {"Grad", "[2, 3]"}},
     .ref = ref_rmsprop},
    {.op = "rmsprop", .what = "momentum, decay, epsilon",
     .attrs = "momentum=0.5 decay=0.8 epsilon=0.01",
     .in = {{"Param", "[4]"}, {"MeanSquare", "[4]", POSITIVE}, {"Moment", "[4]"}, LR,
            {"Grad", "[4]"}},
     .ref = ref_rmsprop},
    /* Centered: MeanSquare in [0.5, 1) and MeanGrad in [-0.3, 0.3) keep ms - mg^2 above 0.3. */
    {.op = "rmsprop", .what = "centered, momentum", .attrs = "centered=true momentum=0.9",
     .in = {{"Param", "[2, 2]"}, {"MeanSquare", "[2, 2]", .lo = 0.5, .hi = 1},
            {"Moment", "[2, 2]"}, LR, {"Grad", "[2, 2]"},
            {"MeanGrad", "[2, 2]", .lo = -0.3, .hi = 0.3}},
     .outs = "ParamOut MomentOut MeanSquareOut MeanGradOut", .ref = ref_rmsprop},

    {.op = "adagrad",
     .in = {{"Param", "[2, 3]"}, {"Grad", "[2, 3]"}, {"Moment", "[2, 3]", POSITIVE}, LR},
     .ref = ref_adagrad},
    {.op = "adagrad", .what = "epsilon", .attrs = "epsilon=0.1",
     .in = {{"Param", "[5]"}, {"Grad", "[5]"}, {"Moment", "[5]", POSITIVE}, LR},
     .ref = ref_adagrad},
    {0},
};
