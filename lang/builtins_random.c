/* builtins_random.c -- the language's random functions: uniform_random and gaussian_random
 * (Fluid's ops of those names: a tensor of a shape known when compiling) and sample (one class
 * per row, Fluid's sampling_id, from given probabilities or from softmax(logits / temperature)).
 * Seeded by the run's --seed unless given a seed of their own. Part of the compiler's builtins
 * (lang/builtins_int.h); the ops are vm/ops/create.c's and vm/ops/random.c's. */
#include "config.h"
#include "lang/builtins_int.h"

#include <math.h>
#include <string.h>

/* seed = S: a 32-bit integer, 0 (the run's generator: a different draw at each run of the op,
 * reproducible from --seed) or a fixed seed (the same numbers at every run of the op). */
static bool seed_arg(C *c, call_args *a, int i, const pd_opdef *def, pd_op_desc *op) {
  pd_loc loc;
  value *v = pd_cmp_arg(a, i, "seed", &loc);
  if (!v) return true;
  if (v->k != V_INT || v->i < 0 || v->i > INT32_MAX) {
    if (v->k != V_ERROR)
      pd_cmp_error(c, loc, "%s: 'seed' must be an integer from 0 (the run's generator, set by "
                   "--seed) to 2147483647, got %s", a->fname,
                   v->k == V_INT ? pd_cmp_fmt(c, "%lld", (long long)v->i) : pd_cmp_vkind_phrase(v));
    return false;
  }
  return pd_cmp_set_attr(c, op, pd_opdef_attr(def, "seed"), v, loc);
}

/* uniform_random(shape, min = -1.0, max = 1.0, seed = 0, dtype = float32) and
 * gaussian_random(shape, mean = 0.0, std = 1.0, seed = 0, dtype = float32). */
value *pd_cmp_b_random_fill(C *c, const builtin *self, call_args *a) {
  bool normal = strcmp(self->name, "gaussian_random") == 0;
  const char *k1 = normal ? "mean" : "min", *k2 = normal ? "std" : "max";
  const char *const names[] = {"shape", k1, k2, "seed", "dtype", NULL};
  if (!pd_cmp_check_args(c, a, 5, names)) return VERR;
  pd_loc sloc, l1, l2;
  value *shape = pd_cmp_arg(a, 0, "shape", &sloc);
  value *v1 = pd_cmp_arg(a, 1, k1, &l1), *v2 = pd_cmp_arg(a, 2, k2, &l2);
  if (!shape) {
    pd_cmp_error(c, a->loc, "%s needs a shape, such as [4, 8]", a->fname);
    return VERR;
  }
  int64_t dims[PD_MAX_RANK];
  int nd;
  if (!pd_cmp_value_to_dims(c, shape, sloc, pd_cmp_fmt(c, "%s: the shape", a->fname), dims, &nd,
                            false))
    return VERR;
  if (nd == 0) {
    pd_cmp_error(c, sloc, "%s: the shape needs at least one dimension", a->fname);
    return VERR;
  }
  if ((v1 && !pd_cmp_is_number(v1)) || (v2 && !pd_cmp_is_number(v2))) {
    bool first = v1 && !pd_cmp_is_number(v1);
    pd_cmp_error(c, first ? l1 : l2, "%s: '%s' must be a number, got %s", a->fname,
                 first ? k1 : k2, pd_cmp_vkind_phrase(first ? v1 : v2));
    return VERR;
  }
  double x1 = v1 ? pd_cmp_num(v1) : normal ? 0.0 : -1.0, x2 = v2 ? pd_cmp_num(v2) : 1.0;
  if (!isfinite(x1) || !isfinite(x2)) {
    pd_cmp_error(c, isfinite(x1) ? l2 : l1, "%s: '%s' must be finite", a->fname,
                 isfinite(x1) ? k2 : k1);
    return VERR;
  }
  if (!normal && !(x1 < x2)) {
    pd_cmp_error(c, v2 ? l2 : l1, "uniform_random: min (%g) must be less than max (%g)", x1, x2);
    return VERR;
  }
  if (normal && x2 < 0) {
    pd_cmp_error(c, l2, "gaussian_random: std must not be negative, got %g", x2);
    return VERR;
  }
  pd_dtype dt;
  if (!pd_cmp_dtype_arg(c, a, 4, &dt)) return VERR;
  if (dt != PD_FP32 && dt != PD_FP64) {
    pd_loc dl;
    pd_cmp_arg(a, 4, "dtype", &dl);
    pd_cmp_error(c, dl, "%s: 'dtype' must be float32 or float64, got %s", a->fname,
                 pd_dtype_name(dt));
    return VERR;
  }
  const pd_opdef *def = pd_opdef_lookup(self->name);
  pd_op_desc *op = pd_cmp_op_new(c, self->name, a->loc);
  if (!op || !def) return VERR;
  if (pd_op_set_attr_longs(op, "shape", nd, dims) || pd_op_set_attr_float(op, k1, (float)x1) ||
      pd_op_set_attr_float(op, k2, (float)x2) || pd_op_set_attr_int(op, "dtype", (int)dt)) {
    c->oom = true;
    return VERR;
  }
  if (!seed_arg(c, a, 3, def, op)) return VERR;
  pd_var_desc *out = pd_cmp_op_out(c, op, "Out", self->name);
  if (out) out->stop_gradient = true;
  return pd_cmp_op_finish(c, op, out);
}

/* A floating-point matrix [batch, classes] argument (rank unknown passes: the op checks). */
static bool want_matrix(C *c, value *v, pd_loc loc, const char *what) {
  if (!pd_cmp_want_tensor_arg(c, v, loc, "sample", what)) return false;
  const pd_var_desc *x = v->var;
  if ((x->dtype != PD_FP32 && x->dtype != PD_FP64) || (x->ndims >= 0 && x->ndims != 2)) {
    pd_cmp_error(c, loc, "sample: '%s' must be a float32 or float64 matrix [batch, classes], got "
                 "%s %s", what, pd_dtype_name(x->dtype), pd_cmp_dims_str(c, x));
    return false;
  }
  return true;
}

/* sample(probs, seed = 0): for each row of probs [batch, classes] (non-negative, summing to 1),
 * a class drawn with those probabilities, int64 [batch] (Fluid's sampling_id). sample(logits =
 * x, temperature = 1.0, seed = 0): the same from softmax(x / temperature) (a temperature below 1
 * sharpens the distribution towards the likeliest class, above 1 flattens it). */
value *pd_cmp_b_sample(C *c, const builtin *self, call_args *a) {
  static const char *const names[] = {"probs", "logits", "temperature", "seed", NULL};
  (void)self;
  if (!pd_cmp_check_args_kw(c, a, 1, names, 1)) return VERR;
  pd_loc ploc, lloc, tloc;
  value *probs = pd_cmp_arg(a, 0, "probs", &ploc), *logits = pd_cmp_arg(a, -1, "logits", &lloc);
  value *temp = pd_cmp_arg(a, -1, "temperature", &tloc);
  if (!probs == !logits) {
    pd_cmp_error(c, probs ? lloc : a->loc, "sample takes either probabilities (sample(p)) or "
                 "logits (sample(logits = x, temperature = T)), %s",
                 probs ? "not both" : "and got neither");
    return VERR;
  }
  if (temp && !logits) {
    pd_cmp_error(c, tloc, "sample: 'temperature' divides logits: write sample(logits = x, "
                 "temperature = T) (probabilities given as the first argument are used as "
                 "they are)");
    return VERR;
  }
  double t = 1.0;
  if (temp) {
    t = pd_cmp_is_number(temp) ? pd_cmp_num(temp) : NAN;
    if (!(t > 0) || isinf(t)) {
      pd_cmp_error(c, tloc, "sample: 'temperature' must be a number greater than 0, got %s",
                   pd_cmp_is_number(temp) ? pd_cmp_fmt(c, "%g", t) : pd_cmp_vkind_phrase(temp));
      return VERR;
    }
  }
  value *x = probs ? probs : logits;
  if (!want_matrix(c, x, probs ? ploc : lloc, probs ? "probs" : "logits")) return VERR;
  const pd_opdef *def = pd_opdef_lookup("sampling_id");
  if (!def) return VERR;
  if (logits) {
    if (t != 1.0) {
      pd_op_desc *sc = pd_cmp_op_new(c, "scale", a->loc);
      if (!sc || !pd_cmp_op_in(c, sc, "X", x, lloc)) return VERR;
      if (pd_op_set_attr_float(sc, "scale", (float)(1.0 / t))) {
        c->oom = true;
        return VERR;
      }
      if ((x = pd_cmp_op_finish(c, sc, pd_cmp_op_out(c, sc, "Out", "sample"))) == VERR)
        return VERR;
    }
    pd_op_desc *sm = pd_cmp_op_new(c, "softmax", a->loc);
    if (!sm || !pd_cmp_op_in(c, sm, "X", x, lloc)) return VERR;
    if ((x = pd_cmp_op_finish(c, sm, pd_cmp_op_out(c, sm, "Out", "sample"))) == VERR) return VERR;
  }
  pd_op_desc *op = pd_cmp_op_new(c, "sampling_id", a->loc);
  if (!op || !pd_cmp_op_in(c, op, "X", x, probs ? ploc : lloc) || !seed_arg(c, a, -1, def, op))
    return VERR;
  pd_var_desc *out = pd_cmp_op_out(c, op, "Out", "sample");
  if (out) out->stop_gradient = true;
  return pd_cmp_op_finish(c, op, out);
}
