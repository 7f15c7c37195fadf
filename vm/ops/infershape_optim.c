/* infershape_optim.c -- the shape function of the optimizer ops (sgd, momentum, adam): each
 * output FooOut is the updated input Foo, so it takes Foo's dtype and shape. */
#include "config.h"
#include "vm/ops/infershape.h"

#include <string.h>

/* Inputs that hold one number (a rate, a running power of beta, a flag), not one per parameter
 * element. Every other input (Grad, Velocity, Moment1, ...) is shaped like Param. */
static bool is_scalar_slot(const char *name) {
  static const char *const scalars[] = {"LearningRate", "Beta1Pow", "Beta2Pow", "Beta1Tensor",
                                        "Beta2Tensor", "EpsilonTensor", "SkipUpdate"};
  for (size_t i = 0; i < PD_ARRAY_LEN(scalars); i++)
    if (strcmp(name, scalars[i]) == 0) return true;
  return false;
}

pd_status pd_infer_optimizer(pd_infer_ctx *c) {
  const pd_var_desc *param;
  pd_infer_dims dp;
  char sp[PD_DIMS_BUF], sv[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "Param", 0, &param, &dp);
  if (st) return st;
  for (int i = 0; i < c->def->ninputs; i++) {
    const char *slot = c->def->inputs[i].name;
    if (strcmp(slot, "Param") == 0 || pd_infer_nin(c, slot) == 0) continue;
    const pd_var_desc *v;
    pd_infer_dims d;
    if ((st = pd_infer_in(c, slot, 0, &v, &d))) return st;
    if (is_scalar_slot(slot)) {
      int64_t n = pd_infer_dims_numel(&d);
      if (n >= 0 && n != 1)
        return pd_infer_fail(c, PD_ESHAPE, "%s must hold one element, got %s", slot,
                             pd_infer_dims_str(&d, sv));
      continue;
    }
    if ((st = pd_infer_same_dtype(c, slot, v->dtype, "Param", param->dtype))) return st;
    bool same = true;
    if (d.n >= 0 && dp.n >= 0) {
      same = d.n == dp.n;
      for (int k = 0; same && k < d.n; k++) same = pd_infer_dim_compatible(d.d[k], dp.d[k]);
    }
    if (!same)
      return pd_infer_fail(c, PD_ESHAPE, "%s %s must have the shape of Param %s", slot,
                           pd_infer_dims_str(&d, sv), pd_infer_dims_str(&dp, sp));
  }
  /* FooOut <- Foo. */
  for (int i = 0; i < c->def->noutputs; i++) {
    const char *out = c->def->outputs[i].name;
    size_t len = strlen(out);
    char in[64];
    if (len < 4 || len - 3 >= sizeof in || strcmp(out + len - 3, "Out") != 0) continue;
    memcpy(in, out, len - 3);
    in[len - 3] = '\0';
    if (pd_infer_nout(c, out) == 0 || pd_infer_nin(c, in) == 0) continue;
    const pd_var_desc *v;
    pd_infer_dims d;
    if ((st = pd_infer_in(c, in, 0, &v, &d)) ||
        (st = pd_infer_set_out(c, out, 0, &d, v->dtype, v->lod_level)))
      return st;
  }
  return PD_OK;
}
