/* optest_amp.c -- the op-test table's rows of vm/ops/amp.c (optest.h): fp16 loss scaling.
 * check_finite_and_unscale on lists of gradients, finite and with an infinity or a NaN, in place
 * and not; update_loss_scaling's state machine step by step (a good step counted, the
 * incr_every_n_steps-th growing the scale, a bad step counted and zeroing the gradients, the
 * decr_every_n_nan_or_inf-th backing off, never below 1, a growth past the float range kept,
 * stop_update), against PaddlePaddle's definitions written out here. No gradients: values only
 * (and the GPU against the CPU). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* check_finite_and_unscale: Out[i] = X[i] / Scale; FoundInfinite whether any element of any X
 * is an infinity or NaN (Out is then not compared: its values are the quotients of those). */
static void ref_unscale(ot_ref *r) {
  double scale = ot_in(r, "Scale")->v[0];
  bool bad = false;
  for (int i = 0; i < ot_nin(r, "X"); i++) {
    const ot_val *x = ot_in_at(r, "X", i);
    for (int64_t k = 0; k < x->n; k++) bad = bad || !isfinite(x->v[k]);
  }
  for (int i = 0; i < ot_nin(r, "X") && !bad; i++) {
    const ot_val *x = ot_in_at(r, "X", i);
    double *o = ot_out_at(r, "Out", i, x->nd, x->dims);
    for (int64_t k = 0; k < x->n; k++) o[k] = x->v[k] / scale;
  }
  int64_t one = 1;
  ot_out(r, "FoundInfinite", 1, &one)[0] = bad;
}

/* update_loss_scaling (Paddle's Update): a bad step zeroes every Out, resets the good steps and
 * counts a bad one; the decr_every_n_nan_or_inf-th multiplies the scale by decr_ratio, at
 * least 1, and resets the count. A good step leaves Out = X, resets the bad steps, and the
 * incr_every_n_steps-th multiplies the scale by incr_ratio unless that overflows (the scale in
 * its own dtype), resetting the count. stop_update: Out only. */
static void ref_update(ot_ref *r) {
  bool found = ot_in(r, "FoundInfinite")->v[0] != 0;
  for (int i = 0; i < ot_nin(r, "X"); i++) {
    const ot_val *x = ot_in_at(r, "X", i);
    double *o = ot_out_at(r, "Out", i, x->nd, x->dims);
    for (int64_t k = 0; k < x->n; k++) o[k] = found ? 0 : x->v[k];
  }
  if (ot_bool(r, "stop_update")) return;
  const ot_val *ps = ot_in(r, "PrevLossScaling");
  double scale = ps->v[0], good = ot_in(r, "InGoodSteps")->v[0],
         bad = ot_in(r, "InBadSteps")->v[0];
  bool f32 = ps->dt == PD_FP32;
  if (found) {
    good = 0;
    if (++bad == (double)ot_int(r, "decr_every_n_nan_or_inf")) {
      double s = scale * ot_float(r, "decr_ratio");
      if (f32) s = (float)s;
      scale = s < 1 ? 1 : s;
      bad = 0;
    }
  } else {
    bad = 0;
    if (++good == (double)ot_int(r, "incr_every_n_steps")) {
      double s = scale * ot_float(r, "incr_ratio");
      if (f32) s = (float)s;
      if (isfinite(s)) scale = s;
      good = 0;
    }
  }
  int64_t one = 1;
  ot_out(r, "LossScaling", 1, &one)[0] = scale;
  ot_out(r, "OutGoodSteps", 1, &one)[0] = good;
  ot_out(r, "OutBadSteps", 1, &one)[0] = bad;
}

/* ---------------------------------------------------------------- the rows */

#define SCALE(s) {"Scale", "[1]", .v = (const double[]){s}}
#define STATE(found, scale, good, bad)                                                        \
  {"FoundInfinite", "[1]", OT_BOOL, .v = (const double[]){found}},                            \
      {"PrevLossScaling", "[1]", .v = (const double[]){scale}},                               \
      {"InGoodSteps", "[1]", OT_I32, .v = (const double[]){good}},                            \
      {"InBadSteps", "[1]", OT_I32, .v = (const double[]){bad}}
#define RATES "incr_every_n_steps=3 decr_every_n_nan_or_inf=2 incr_ratio=2 decr_ratio=0.5"

const ot_row ot_rows_amp[] = {
    {.op = "check_finite_and_unscale", .what = "two finite gradients",
     .in = {{"X", "[2, 3]", .lo = -100, .hi = 100}, {"X", "[4]"}, SCALE(1024)},
     .outs = "Out:2 FoundInfinite", .ref = ref_unscale},
    {.op = "check_finite_and_unscale", .what = "in place, a scale not a power of 2",
     .in = {{"X", "[3, 2]"}, {"X", "[5]"}, SCALE(3)}, .outs = "Out=X FoundInfinite",
     .ref = ref_unscale},
    {.op = "check_finite_and_unscale", .what = "an infinity in the second",
     .in = {{"X", "[2]"}, {"X", "[3]", .v = (const double[]){1, -INFINITY, 2}}, SCALE(8)},
     .outs = "Out:2 FoundInfinite", .ref = ref_unscale},
    {.op = "check_finite_and_unscale", .what = "a NaN",
     .in = {{"X", "[2]", .v = (const double[]){NAN, 0.5}}, SCALE(8)},
     .outs = "Out FoundInfinite", .ref = ref_unscale},

    {.op = "update_loss_scaling", .what = "a good step counted", .attrs = RATES,
     .in = {{"X", "[2, 2]"}, {"X", "[3]"}, STATE(0, 32768, 1, 1)},
     .outs = "Out:2 LossScaling OutGoodSteps OutBadSteps", .ref = ref_update},
    {.op = "update_loss_scaling", .what = "the third good step doubles the scale",
     .attrs = RATES, .in = {{"X", "[3]"}, STATE(0, 32768, 2, 0)},
     .outs = "Out=X LossScaling OutGoodSteps OutBadSteps", .ref = ref_update},
    {.op = "update_loss_scaling", .what = "a bad step zeroes the gradients", .attrs = RATES,
     .in = {{"X", "[2, 3]"}, {"X", "[2]"}, STATE(1, 32768, 2, 0)},
     .outs = "Out:2 LossScaling OutGoodSteps OutBadSteps", .ref = ref_update},
    {.op = "update_loss_scaling", .what = "the second bad step halves the scale",
     .attrs = RATES, .in = {{"X", "[4]"}, STATE(1, 32768, 0, 1)},
     .outs = "Out=X LossScaling OutGoodSteps OutBadSteps", .ref = ref_update},
    {.op = "update_loss_scaling", .what = "never below 1",
     .attrs = "incr_every_n_steps=3 decr_every_n_nan_or_inf=1 incr_ratio=2 decr_ratio=0.25",
     .in = {{"X", "[2]"}, STATE(1, 2, 0, 0)},
     .outs = "Out LossScaling OutGoodSteps OutBadSteps", .ref = ref_update},
    {.op = "update_loss_scaling", .what = "a growth past float's range is not taken",
     .attrs = "incr_every_n_steps=1 decr_every_n_nan_or_inf=2 incr_ratio=4 decr_ratio=0.5",
     .in = {{"X", "[2]"}, {"FoundInfinite", "[1]", OT_BOOL, .v = (const double[]){0}},
            {"PrevLossScaling", "[1]", OT_F32, .v = (const double[]){1e38}},
            {"InGoodSteps", "[1]", OT_I32, .v = (const double[]){0}},
            {"InBadSteps", "[1]", OT_I32, .v = (const double[]){0}}},
     .outs = "Out LossScaling OutGoodSteps OutBadSteps", .ref = ref_update},
    {.op = "update_loss_scaling", .what = "stop_update: the gradients only",
     .attrs = RATES " stop_update=true", .in = {{"X", "[3]"}, STATE(1, 32768, 2, 1)},
     .outs = "Out LossScaling OutGoodSteps OutBadSteps", .ref = ref_update},
    {0}};
