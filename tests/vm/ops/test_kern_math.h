/* test_kern_math.h -- what the kernel tests of vm/ops/kern_math.c share (tests/ops/test_kern_*.c):
 * literal arrays that survive macro arguments, deterministic test values, LoD and shared-storage
 * helpers, and tests/vm/ops/gradcheck.h. */
#ifndef PD_TESTS_OPS_TEST_KERN_MATH_H
#define PD_TESTS_OPS_TEST_KERN_MATH_H

#include "tests/vm/ops/runop.h"

#include "tests/vm/ops/gradcheck.h"

/* Literal arrays usable as macro arguments: rt_expect(t, 3, D(1, 2, 3), 0, "..."). */
#define D(...) ((const double[]){__VA_ARGS__})
#define F(...) ((const float[]){__VA_ARGS__})
#define L(...) ((const int64_t[]){__VA_ARGS__})
#define I(...) ((const int32_t[]){__VA_ARGS__})
#define B(...) ((const uint8_t[]){__VA_ARGS__})

/* n pseudo-random values in [lo, hi) (an LCG: the same every run); with `gap`, none closer
 * than 0.1 to zero (the kinks of relu and abs). */
static inline void vals(double *v, int n, double lo, double hi, uint64_t seed, bool gap) {
  for (int i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = lo + (hi - lo) * (double)(seed >> 11) / 9007199254740992.0;
    if (gap && fabs(v[i]) < 0.1) v[i] += v[i] < 0 ? -0.2 : 0.2;
  }
}

static inline void to_f32(const double *d, float *f, int n) {
  for (int i = 0; i < n; i++) f[i] = (float)d[i];
}

/* The tensor has exactly one LoD level with these offsets. */
static inline bool lod_is(const pd_tensor *t, int n, const int64_t *off) {
  if (!t || t->nlod != 1 || t->lod[0].n != n) return false;
  for (int i = 0; i < n; i++)
    if (t->lod[0].offsets[i] != off[i]) return false;
  return true;
}

/* Declare var `name` and give it a value whose storage a caller's tensor shares (as a feed
 * does); returns the caller's tensor (pd_tensor_free it). */
static inline pd_tensor *shared_input(rt *r, const char *name, pd_dtype dt, const char *shape,
                                      const void *data) {
  int64_t d[16];
  int n = parse_shape(shape, d);
  decl(r->f.b, name, dt, shape);
  pd_tensor *src = pd_tensor_new();
  pd_tensor *t = pd_var_tensor(pd_scope_var(r->scope, name));
  if (!src || !t || pd_tensor_set_data(src, dt, n, d, data) || pd_tensor_share(t, src))
    bail("out of memory");
  return src;
}

#endif /* PD_TESTS_OPS_TEST_KERN_MATH_H */
