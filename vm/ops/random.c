/* random.c -- the random op that draws from given probabilities: sampling_id (Fluid's name, slots
 * and attributes), its shape function and its CPU kernel. The random fillers uniform_random and
 * gaussian_random are with the other filling ops in create.c. Not differentiable. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* sampling_id: X [N, K] of float32/float64 probabilities -> Out int64 [N]; min < max. */
pd_status pd_infer_sampling_id(pd_infer_ctx *c) {
  pd_infer_dims d;
  char s[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "X", 0, NULL, &d);
  if (st) return st;
  if (d.n >= 0 && d.n != 2)
    return pd_infer_fail(c, PD_ESHAPE, "X must be a matrix [batch, classes] of probabilities, "
                         "got %s", pd_infer_dims_str(&d, s));
  double lo = pd_infer_attr_float(c, "min"), hi = pd_infer_attr_float(c, "max");
  if (!(lo < hi))
    return pd_infer_fail(c, PD_EINVAL, "min (%g) must be less than max (%g)", lo, hi);
  pd_infer_dims o = pd_infer_dims_unknown(1);
  if (d.n == 2) o.d[0] = d.d[0];
  return pd_infer_set_out(c, "Out", 0, &o, PD_INT64, 0);
}

/* sampling_id, as Fluid computes it: for each row i, r uniform in [min, max), then the first
 * column j where r - X[i, 0] - ... - X[i, j] < 0, or the last column when the row's sum does not
 * reach r. With min 0 and max 1 and a row summing to 1, column j comes with probability X[i, j];
 * a row summing to s < 1 gives its last column the shortfall 1 - s on top of its own share
 * (Fluid's behaviour; softmax's rows sum to 1 up to rounding). A negative or non-finite entry
 * is refused: it has no meaning as a probability. seed 0 draws from the executor's generator
 * (reproducible from the run's --seed, different at each run of the op), any other seed the
 * same numbers at every run, as the random fillers and dropout do. */
pd_status pd_kernel_sampling_id(pd_exec_ctx *ctx) {
  const pd_tensor *x;
  pd_tensor *out;
  char s[DIMS_BUF];
  pd_status st;
  if ((st = in1(ctx, "X", &x)) || (st = want_float(ctx, "X", x))) return st;
  if (x->ndims != 2)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X must be a matrix [batch, classes] of probabilities, "
                       "got %s", shape_str(x, s));
  double lo = pd_ctx_attr_float(ctx, "min"), hi = pd_ctx_attr_float(ctx, "max");
  if (!(lo < hi)) return pd_ctx_fail(ctx, PD_EINVAL, "min (%g) must be less than max (%g)", lo, hi);
  int64_t n = x->dims[0], k = x->dims[1];
  if (k < 1 && n > 0)
    return pd_ctx_fail(ctx, PD_ESHAPE, "X %s has no classes to sample from", shape_str(x, s));
  int64_t bad = -1;
  FLOAT_SWITCH(x->dtype, {
    const T *xs = pd_tensor_data(x);
    for (int64_t i = 0; i < n * k && bad < 0; i++)
      if (!(xs[i] >= 0) || isinf(xs[i])) bad = i;
  });
  if (bad >= 0)
    return pd_ctx_fail(ctx, PD_EINVAL, "X[%" PRId64 ", %" PRId64 "] is %g: probabilities must "
                       "be finite and not negative", bad / k, bad % k, elem_f(x, bad));
  hold h;
  hold_init(&h);
  if ((st = out1(ctx, "Out", &out)) || (st = unalias(ctx, &h, out, &x))) return st;
  int64_t od[1] = {n};
  if ((st = resize(ctx, out, PD_INT64, 1, od, NULL))) {
    hold_free(&h);
    return st;
  }
  int64_t seed = pd_ctx_attr_int(ctx, "seed");
  pd_k_rng local, *rng = ctx->rng;
  if (seed != 0) {
    pd_k_rng_init(&local, (uint64_t)seed);
    rng = &local;
  }
  int64_t *ids = PD_TENSOR_I64(out);
  double u[256];
  for (int64_t b = 0; b < n && !st; b += 256) {
    int64_t e = n - b < 256 ? n - b : 256;
    if ((st = pd_ctx_check(ctx, ctx->k->uniform(PD_FP64, e, u, lo, hi, rng), "uniform"))) break;
    FLOAT_SWITCH(x->dtype, {
      for (int64_t i = 0; i < e; i++) {
        const T *row = (const T *)pd_tensor_data(x) + (b + i) * k;
        double r = u[i];
        int64_t id = k - 1;
        for (int64_t j = 0; j < k; j++)
          if ((r -= (double)row[j]) < 0) {
            id = j;
            break;
          }
        ids[b + i] = id;
      }
    });
  }
  hold_free(&h);
  return st;
}
