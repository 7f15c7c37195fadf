/* test_optim.c -- the CPU backend's updates that take a square root and a division per element
 * (Adam / AdamW, RMSProp plain and centered, Adagrad; kernels/cpu/optim_t.h) at each instruction
 * set it has (pd_kcpu_simd: the scalar loops, Adam's two SSE2 lanes; AVX2, four lanes) on random
 * states, fp32 and fp64, lengths that leave every remainder of the four-lane loops and split
 * across threads: every instance gives exactly the bits of kernels.h's formulas computed here
 * element by element in double (the vector code rounds each product and sum as the scalar code
 * does), into other buffers and in place. The ops' own tests (tests/vm/ops/test_kern_optim.c)
 * check the updates against hand-computed values. And unscale, the division of fp16 training's
 * gradients by the loss scale with its finiteness flag. */
#include "config.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"
#include "tests/kernels/kt.h"

#include <math.h>

/* Element i of a T array as double, and a double stored as T. */
static double get(pd_dtype dt, const void *x, int64_t i) {
  return dt == PD_FP32 ? (double)((const float *)x)[i] : ((const double *)x)[i];
}
static void put(pd_dtype dt, void *x, int64_t i, double v) {
  if (dt == PD_FP32) ((float *)x)[i] = (float)v;
  else ((double *)x)[i] = v;
}

/* kernels.h's update of element i: p into po, the states s[] into so[]. */
static void ref_at(pd_dtype dt, const pd_k_opt *o, int64_t i, const void *p, const void *g,
                   void *const *s, void *po, void *const *so) {
  double gi = get(dt, g, i), pi = get(dt, p, i);
  switch (o->kind) {
    case PD_K_OPT_ADAM: {
      double m1 = o->beta1 * get(dt, s[0], i) + (1 - o->beta1) * gi;
      double m2 = o->beta2 * get(dt, s[1], i) + (1 - o->beta2) * gi * gi;
      put(dt, so[0], i, m1);
      put(dt, so[1], i, m2);
      put(dt, po, i, pi * (1 - o->decay) - o->lr * (m1 / (sqrt(m2) + o->eps)));
      break;
    }
    case PD_K_OPT_RMSPROP: {
      double ms = o->rho * get(dt, s[0], i) + (1 - o->rho) * gi * gi, den = ms + o->eps;
      if (o->centered) {
        double mg = o->rho * get(dt, s[2], i) + (1 - o->rho) * gi;
        put(dt, so[2], i, mg);
        den -= mg * mg;
      }
      double mom = o->mu * get(dt, s[1], i) + o->lr * gi / sqrt(den);
      put(dt, so[0], i, ms);
      put(dt, so[1], i, mom);
      put(dt, po, i, pi - mom);
      break;
    }
    case PD_K_OPT_ADAGRAD: {
      double m = get(dt, s[0], i) + gi * gi;
      put(dt, so[0], i, m);
      put(dt, po, i, pi - o->lr * gi / (sqrt(m) + o->eps));
      break;
    }
    default: /* sgd and momentum: no square root, no vector instance */
      break;
  }
}

/* The update o of n elements at every level against ref_at, bit for bit. */
static void check(const char *what, const pd_k_opt *o, pd_dtype dt, int64_t n, int best) {
  size_t bytes = (size_t)n * pd_dtype_size(dt);
  int ns = pd_k_opt_nstates(o);
  void *p = kt_random(dt, n, -2, 2), *g = kt_random(dt, n, -1, 1), *s[3] = {0}, *ws[3] = {0};
  for (int k = 0; k < ns; k++) {
    /* First moments and momenta signed; second moments (and Adagrad's sum) not. */
    bool sq = (o->kind == PD_K_OPT_ADAM && k == 1) || (o->kind == PD_K_OPT_RMSPROP && k == 0) ||
              o->kind == PD_K_OPT_ADAGRAD;
    s[k] = kt_random(dt, n, sq ? 0.5 : -0.1, sq ? 1 : 0.1);
    ws[k] = kt_alloc(bytes);
  }
  void *wp = kt_alloc(bytes);
  for (int64_t i = 0; i < n; i++) ref_at(dt, o, i, p, g, s, wp, ws);
  bool good = true;
  for (int level = 0; level <= best; level++) {
#if PD_KCPU_HAVE_AVX2
    pd_kcpu_simd_force(level);
#endif
    for (int inplace = 0; inplace < 2; inplace++) {
      void *po = kt_alloc(bytes), *so[3] = {0};
      const void *si[3] = {0};
      for (int k = 0; k < ns; k++) {
        so[k] = kt_alloc(bytes);
        if (inplace) memcpy(so[k], s[k], bytes);
        si[k] = inplace ? so[k] : s[k];
      }
      if (inplace) memcpy(po, p, bytes);
      good = good && K->opt(dt, n, o, inplace ? po : p, g, si, po, so) == PD_OK &&
             memcmp(po, wp, bytes) == 0;
      for (int k = 0; k < ns; k++) good = good && memcmp(so[k], ws[k], bytes) == 0;
      free(po);
      for (int k = 0; k < ns; k++) free(so[k]);
    }
  }
  ok(good, "%s %s n = %lld: levels 0 to %d give the formula's bits, into other buffers and in "
     "place", what, pd_dtype_name(dt), (long long)n, best);
  free(p), free(g), free(wp);
  for (int k = 0; k < ns; k++) free(s[k]), free(ws[k]);
}

/* unscale (fp16 loss scaling): out = x * inv_scale element by element, exactly (one rounded
 * product), the flag set by an infinity or a NaN anywhere (first, last, middle) and left alone
 * otherwise (so calls accumulate), into another buffer and in place; the argument checks. */
static void check_unscale(pd_dtype dt) {
  const int64_t n = 1037;
  size_t sz = pd_dtype_size(dt);
  char *x = kt_alloc((size_t)n * sz), *o = kt_alloc((size_t)n * sz);
  for (int64_t i = 0; i < n; i++) put(dt, x, i, kt_uniform(-3e4, 3e4));
  const double inv = dt == PD_FP32 ? (double)(1.0f / 3.0f) : 1.0 / 3.0;
  bool found = false, exact = !K->unscale(dt, n, x, inv, o, &found) && !found;
  for (int64_t i = 0; i < n && exact; i++) {
    double want = dt == PD_FP32 ? (double)((float)get(dt, x, i) * (float)inv) : get(dt, x, i) * inv;
    exact = get(dt, o, i) == want;
  }
  ok(exact, "unscale %s: x * (1/3) exactly, no flag on finite values", pd_dtype_name(dt));
  found = true;
  ok(!K->unscale(dt, n, x, inv, o, &found) && found, "unscale %s: a set flag stays set",
     pd_dtype_name(dt));
  const int64_t at[] = {0, n / 2, n - 1};
  const double bad[] = {INFINITY, -INFINITY, NAN};
  bool all = true;
  for (size_t a = 0; a < PD_ARRAY_LEN(at); a++)
    for (size_t b = 0; b < PD_ARRAY_LEN(bad); b++) {
      memcpy(o, x, (size_t)n * sz);
      put(dt, o, at[a], bad[b]);
      found = false;
      all &= !K->unscale(dt, n, o, inv, o, &found) && found; /* in place */
      all &= isnan(bad[b]) ? isnan(get(dt, o, at[a])) : get(dt, o, at[a]) == bad[b];
    }
  ok(all, "unscale %s: an infinity or NaN first, in the middle or last sets the flag (in place)",
     pd_dtype_name(dt));
  found = false;
  ok(K->unscale(dt, -1, x, inv, o, &found) == PD_EINVAL &&
         K->unscale(dt, n, x, inv, o, NULL) == PD_EINVAL &&
         K->unscale(dt, n, x, NAN, o, &found) == PD_EINVAL &&
         K->unscale(dt, n, NULL, inv, o, &found) == PD_EINVAL &&
         K->unscale(PD_INT32, n, x, inv, o, &found) == PD_EUNSUPPORTED &&
         !K->unscale(dt, 0, NULL, inv, NULL, &found) && !found,
     "unscale %s: the argument checks (n < 0, no flag, a NaN scale, no x; int32; n = 0)",
     pd_dtype_name(dt));
  free(x);
  free(o);
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  kt_begin(argv);
  for (size_t t = 0; t < PD_ARRAY_LEN(kt_float_types); t++) check_unscale(kt_float_types[t]);
#if PD_KCPU_HAVE_AVX2
  int best = pd_kcpu_simd_force(PD_KCPU_SIMD_AVX512);
#else
  int best = 0;
#endif
  const struct {
    const char *what;
    pd_k_opt o;
  } kinds[] = {
      {"adam", {.kind = PD_K_OPT_ADAM, .lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8}},
      {"adamw", {.kind = PD_K_OPT_ADAM, .lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                 .decay = 1e-4}},
      {"rmsprop", {.kind = PD_K_OPT_RMSPROP, .lr = 1e-2, .rho = 0.95, .mu = 0.9, .eps = 1e-6}},
      {"rmsprop centered", {.kind = PD_K_OPT_RMSPROP, .lr = 1e-2, .rho = 0.95, .mu = 0.9,
                            .eps = 1e-6, .centered = true}},
      {"adagrad", {.kind = PD_K_OPT_ADAGRAD, .lr = 1e-2, .eps = 1e-6}},
  };
  const int64_t lens[] = {1, 3, 4, 5, 7, 1037, 40003};
  for (size_t k = 0; k < PD_ARRAY_LEN(kinds); k++)
    for (size_t t = 0; t < PD_ARRAY_LEN(kt_float_types); t++)
      for (size_t l = 0; l < PD_ARRAY_LEN(lens); l++)
        check(kinds[k].what, &kinds[k].o, kt_float_types[t], lens[l], best);
#if PD_KCPU_HAVE_AVX2
  pd_kcpu_simd_force(best);
#endif
  return tap_done();
}
