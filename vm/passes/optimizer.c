/* optimizer.c -- appends gradient transforms and optimizer update ops (see vm/passes/optimizer.h). */
#include "config.h"
#include "vm/passes/optimizer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/ops.h"

void pd_optimizer_defaults(pd_optimizer *o, pd_opt_kind kind, double lr) {
  memset(o, 0, sizeof *o);
  o->kind = kind;
  o->lr = lr;
  o->mu = 0.9;
  o->beta1 = 0.9;
  o->beta2 = 0.999;
  o->epsilon = 1e-8;
  o->decay_rate = 0.1;
  o->rho = 0.95;
  if (kind == PD_OPT_RMSPROP) o->mu = 0.0;
  if (kind == PD_OPT_RMSPROP || kind == PD_OPT_ADAGRAD) o->epsilon = 1e-6;
  if (kind == PD_OPT_ADAMW) o->weight_decay = 0.01;
}

double pd_optimizer_lr(const pd_optimizer *o, int64_t step, int64_t total_steps) {
  if (o->warmup_steps > 0) {
    if (step < o->warmup_steps) return o->lr * (double)step / (double)o->warmup_steps;
    step -= o->warmup_steps;
    total_steps -= o->warmup_steps;
  }
  switch (o->schedule) {
    case PD_LR_STEP:
      if (o->decay_steps > 0) return o->lr * pow(o->decay_rate, (double)(step / o->decay_steps));
      return o->lr;
    case PD_LR_COSINE: {
      int64_t len = o->decay_steps > 0 ? o->decay_steps : total_steps;
      if (len <= 0) return o->lr;
      double t = step >= len ? 1.0 : (double)step / (double)len;
      return o->lr * 0.5 * (1 + cos(M_PI * t));
    }
    default: return o->lr;
  }
}

typedef struct opt_ctx {
  pd_program *main, *init;
  pd_block *b0, *i0;
  pd_loc loc;
  pd_error *err;
  int tmp;            /* counter for temporaries */
} opt_ctx;

static pd_status oom(opt_ctx *c) { return pd_error_set(c->err, PD_ENOMEM, c->loc, "out of memory"); }

static pd_status finish(opt_ctx *c, pd_op_desc *op, pd_block *b) {
  if (pd_op_set_loc(op, c->loc) || pd_op_set_attr_int(op, "op_role", 2 /* optimize */))
    return oom(c);
  return pd_opdef_prepare(op, b, c->err);
}

/* A persistable state var of main's block 0 like `like` (or of shape [1]), with an initial value
 * made by fill_constant in init. */
static pd_status state_var(opt_ctx *c, const char *name, const pd_var_desc *like, pd_dtype dt,
                           double value) {
  int64_t one = 1;
  int nd = like ? like->ndims : 1;
  const int64_t *dims = like ? like->dims : &one;
  for (int k = 0; k < 2; k++) {
    pd_block *b = k ? c->i0 : c->b0;
    pd_var_desc *v = pd_block_var(b, name);
    if (!v || pd_var_set_shape(v, nd, dims)) return oom(c);
    v->dtype = dt;
    v->persistable = true;
    v->stop_gradient = true;
  }
  pd_op_desc *op = pd_block_add_op(c->i0, "fill_constant", -1);
  if (!op || pd_op_set_output(op, "Out", 1, &name) ||
      pd_op_set_attr_longs(op, "shape", nd, dims) || pd_op_set_attr_float(op, "value", (float)value) ||
      pd_op_set_attr_int(op, "dtype", (int)dt))
    return oom(c);
  return finish(c, op, c->i0);
}

/* A new temporary of main's block 0; its name is written to buf. */
static const char *temp(opt_ctx *c, const char *base, char *buf, size_t n) {
  snprintf(buf, n, "%s.opt_%d", base, c->tmp++);
  return pd_block_var(c->b0, buf) ? buf : NULL;
}

/* Append op type with the given slot bindings: "X=a Y=b" style arrays of (slot, var). */
typedef struct bind {
  const char *slot;
  const char *var;
} bind;

static pd_op_desc *add(opt_ctx *c, const char *type, const bind *in, int nin, const bind *out,
                       int nout) {
  pd_op_desc *op = pd_block_add_op(c->b0, type, -1);
  if (!op) return NULL;
  for (int i = 0; i < nin; i++)
    if (pd_op_set_input(op, in[i].slot, 1, &in[i].var)) return NULL;
  for (int i = 0; i < nout; i++)
    if (pd_op_set_output(op, out[i].slot, 1, &out[i].var)) return NULL;
  return op;
}

pd_status pd_append_optimizer(pd_program *main, pd_program *init, const pd_backward *pg,
                              const pd_optimizer *o, pd_loc loc, pd_error *err) {
  opt_ctx c = {.main = main, .init = init, .b0 = main->blocks[0], .i0 = init->blocks[0],
               .loc = loc, .err = err};
  pd_status st;
  if (pg->n == 0) return pd_error_set(err, PD_EINVAL, loc, "there are no parameters to train");
  /* The gradient each update reads (after decay and clipping). */
  char (*grads)[256] = pd_calloc((size_t)pg->n, sizeof *grads);
  if (!grads) return oom(&c);
  for (int i = 0; i < pg->n; i++) snprintf(grads[i], sizeof grads[i], "%s", pg->pairs[i].grad);
  pd_dtype dt = PD_FP32;
  const pd_var_desc *p0 = pd_block_find_var_local(c.b0, pg->pairs[0].param);
  if (p0) dt = p0->dtype;
  if ((st = state_var(&c, PD_LR_VAR, NULL, dt, o->lr))) goto out;

  if (o->weight_decay > 0 && o->kind != PD_OPT_ADAMW) {
    for (int i = 0; i < pg->n; i++) {
      char t1[256], t2[256];
      const char *param = pg->pairs[i].param;
      if (!temp(&c, param, t1, sizeof t1) || !temp(&c, grads[i], t2, sizeof t2)) {
        st = oom(&c);
        goto out;
      }
      pd_op_desc *sc = add(&c, "scale", (bind[]){{"X", param}}, 1, (bind[]){{"Out", t1}}, 1);
      if (!sc || pd_op_set_attr_float(sc, "scale", (float)o->weight_decay)) {
        st = oom(&c);
        goto out;
      }
      if ((st = finish(&c, sc, c.b0))) goto out;
      pd_op_desc *ad = add(&c, "elementwise_add", (bind[]){{"X", grads[i]}, {"Y", t1}}, 2,
                           (bind[]){{"Out", t2}}, 1);
      if (!ad) {
        st = oom(&c);
        goto out;
      }
      if ((st = finish(&c, ad, c.b0))) goto out;
      snprintf(grads[i], sizeof grads[i], "%s", t2);
    }
  }

  if (o->clip_norm > 0) {
    char **ssq = pd_calloc((size_t)pg->n, sizeof *ssq);
    if (!ssq) {
      st = oom(&c);
      goto out;
    }
    for (int i = 0; i < pg->n && !st; i++) {
      char sq[256], s[256];
      if (!temp(&c, grads[i], sq, sizeof sq) || !temp(&c, grads[i], s, sizeof s) ||
          !(ssq[i] = pd_strdup(s))) {
        st = oom(&c);
        break;
      }
      pd_op_desc *op = add(&c, "square", (bind[]){{"X", grads[i]}}, 1, (bind[]){{"Out", sq}}, 1);
      if (!op) st = oom(&c);
      if (!st) st = finish(&c, op, c.b0);
      if (st) break;
      op = add(&c, "reduce_sum", (bind[]){{"X", sq}}, 1, (bind[]){{"Out", s}}, 1);
      if (!op || pd_op_set_attr_bool(op, "reduce_all", true)) st = oom(&c);
      if (!st) st = finish(&c, op, c.b0);
    }
    char total[256], norm[256], cv[256], den[256], fac[256];
    if (!st && (!temp(&c, "global_norm", total, sizeof total) ||
                !temp(&c, "global_norm", norm, sizeof norm) ||
                !temp(&c, "clip_norm", cv, sizeof cv) || !temp(&c, "clip_norm", den, sizeof den) ||
                !temp(&c, "clip_norm", fac, sizeof fac)))
      st = oom(&c);
    pd_op_desc *op = NULL;
    if (!st) {
      op = pd_block_add_op(c.b0, "sum", -1);
      if (!op || pd_op_set_input(op, "X", pg->n, (const char *const *)ssq) ||
          pd_op_set_output(op, "Out", 1, (const char *[]){total}))
        st = oom(&c);
      if (!st) st = finish(&c, op, c.b0);
    }
    for (int i = 0; i < pg->n; i++) pd_free(ssq[i]);
    pd_free(ssq);
    if (st) goto out;
    if (!(op = add(&c, "sqrt", (bind[]){{"X", total}}, 1, (bind[]){{"Out", norm}}, 1)) ||
        (st = finish(&c, op, c.b0)))
      goto fail_clip;
    int64_t one = 1;
    if (!(op = add(&c, "fill_constant", NULL, 0, (bind[]){{"Out", cv}}, 1)) ||
        pd_op_set_attr_longs(op, "shape", 1, &one) ||
        pd_op_set_attr_float(op, "value", (float)o->clip_norm) ||
        pd_op_set_attr_int(op, "dtype", (int)dt) || (st = finish(&c, op, c.b0)))
      goto fail_clip;
    if (!(op = add(&c, "elementwise_max", (bind[]){{"X", norm}, {"Y", cv}}, 2,
                   (bind[]){{"Out", den}}, 1)) ||
        (st = finish(&c, op, c.b0)))
      goto fail_clip;
    if (!(op = add(&c, "elementwise_div", (bind[]){{"X", cv}, {"Y", den}}, 2,
                   (bind[]){{"Out", fac}}, 1)) ||
        (st = finish(&c, op, c.b0)))
      goto fail_clip;
    for (int i = 0; i < pg->n; i++) {
      char t[256];
      if (!temp(&c, grads[i], t, sizeof t) ||
          !(op = add(&c, "elementwise_mul", (bind[]){{"X", grads[i]}, {"Y", fac}}, 2,
                     (bind[]){{"Out", t}}, 1)) ||
          (st = finish(&c, op, c.b0)))
        goto fail_clip;
      snprintf(grads[i], sizeof grads[i], "%s", t);
    }
    goto clipped;
  fail_clip:
    if (!st) st = oom(&c);
    goto out;
  clipped:;
  }

  for (int i = 0; i < pg->n; i++) {
    const char *param = pg->pairs[i].param;
    const pd_var_desc *pv = pd_block_find_var_local(c.b0, param);
    char n1[300], n2[300], n3[300], n4[300];
    pd_op_desc *op = NULL;
    switch (o->kind) {
      case PD_OPT_SGD:
        op = add(&c, "sgd", (bind[]){{"Param", param}, {"LearningRate", PD_LR_VAR}, {"Grad", grads[i]}},
                 3, (bind[]){{"ParamOut", param}}, 1);
        break;
      case PD_OPT_MOMENTUM:
        snprintf(n1, sizeof n1, "%s_velocity_0", param);
        if ((st = state_var(&c, n1, pv, pv->dtype, 0.0))) goto out;
        op = add(&c, "momentum",
                 (bind[]){{"Param", param}, {"Grad", grads[i]}, {"Velocity", n1},
                          {"LearningRate", PD_LR_VAR}},
                 4, (bind[]){{"ParamOut", param}, {"VelocityOut", n1}}, 2);
        if (op && (pd_op_set_attr_float(op, "mu", (float)o->mu) ||
                   pd_op_set_attr_bool(op, "use_nesterov", o->nesterov)))
          op = NULL;
        break;
      case PD_OPT_ADAM:
      case PD_OPT_ADAMW:
        snprintf(n1, sizeof n1, "%s_moment1_0", param);
        snprintf(n2, sizeof n2, "%s_moment2_0", param);
        snprintf(n3, sizeof n3, "%s_beta1_pow_acc_0", param);
        snprintf(n4, sizeof n4, "%s_beta2_pow_acc_0", param);
        if ((st = state_var(&c, n1, pv, pv->dtype, 0.0)) ||
            (st = state_var(&c, n2, pv, pv->dtype, 0.0)) ||
            (st = state_var(&c, n3, NULL, pv->dtype, o->beta1)) ||
            (st = state_var(&c, n4, NULL, pv->dtype, o->beta2)))
          goto out;
        op = add(&c, o->kind == PD_OPT_ADAM ? "adam" : "adamw",
                 (bind[]){{"Param", param}, {"Grad", grads[i]}, {"LearningRate", PD_LR_VAR},
                          {"Moment1", n1}, {"Moment2", n2}, {"Beta1Pow", n3}, {"Beta2Pow", n4}},
                 7,
                 (bind[]){{"ParamOut", param}, {"Moment1Out", n1}, {"Moment2Out", n2},
                          {"Beta1PowOut", n3}, {"Beta2PowOut", n4}},
                 5);
        if (op && (pd_op_set_attr_float(op, "beta1", (float)o->beta1) ||
                   pd_op_set_attr_float(op, "beta2", (float)o->beta2) ||
                   pd_op_set_attr_float(op, "epsilon", (float)o->epsilon)))
          op = NULL;
        if (op && o->kind == PD_OPT_ADAMW &&
            (pd_op_set_attr_float(op, "coeff", (float)o->weight_decay) ||
             pd_op_set_attr_bool(op, "with_decay", true)))
          op = NULL;
        break;
      case PD_OPT_RMSPROP:
        snprintf(n1, sizeof n1, "%s_mean_square_0", param);
        snprintf(n2, sizeof n2, "%s_momentum_0", param);
        snprintf(n3, sizeof n3, "%s_mean_grad_0", param);
        if ((st = state_var(&c, n1, pv, pv->dtype, 0.0)) ||
            (st = state_var(&c, n2, pv, pv->dtype, 0.0)) ||
            (o->centered && (st = state_var(&c, n3, pv, pv->dtype, 0.0))))
          goto out;
        op = add(&c, "rmsprop",
                 (bind[]){{"Param", param}, {"Grad", grads[i]}, {"LearningRate", PD_LR_VAR},
                          {"MeanSquare", n1}, {"Moment", n2}, {"MeanGrad", n3}},
                 o->centered ? 6 : 5,
                 (bind[]){{"ParamOut", param}, {"MeanSquareOut", n1}, {"MomentOut", n2},
                          {"MeanGradOut", n3}},
                 o->centered ? 4 : 3);
        if (op && (pd_op_set_attr_float(op, "decay", (float)o->rho) ||
                   pd_op_set_attr_float(op, "epsilon", (float)o->epsilon) ||
                   pd_op_set_attr_float(op, "momentum", (float)o->mu) ||
                   pd_op_set_attr_bool(op, "centered", o->centered)))
          op = NULL;
        break;
      case PD_OPT_ADAGRAD:
        snprintf(n1, sizeof n1, "%s_moment_0", param);
        if ((st = state_var(&c, n1, pv, pv->dtype, o->init_acc))) goto out;
        op = add(&c, "adagrad",
                 (bind[]){{"Param", param}, {"Grad", grads[i]}, {"Moment", n1},
                          {"LearningRate", PD_LR_VAR}},
                 4, (bind[]){{"ParamOut", param}, {"MomentOut", n1}}, 2);
        if (op && pd_op_set_attr_float(op, "epsilon", (float)o->epsilon)) op = NULL;
        break;
    }
    if (!op) {
      st = oom(&c);
      goto out;
    }
    if ((st = finish(&c, op, c.b0))) goto out;
  }
out:
  pd_free(grads);
  return st;
}
