/* test_kern_math.h -- what the kernel tests of vm/kern_math.c share (tests/ops/test_kern_*.c):
 * literal arrays that survive macro arguments, deterministic test values, LoD and shared-storage
 * helpers, and grad_check with the forward op's attributes on the gradient op.
 *
 * Why the last: tests/ops/gradcheck.h builds the gradient op with the forward op's slots but
 * not its attributes, so a gradient kernel would see the registry defaults (scale 1, axis -1,
 * no transposes, ...) where the backward pass gives it the forward op's values (vm/ops_grad.c:
 * "attrs: the forward op's"), and cast_grad fails outright (in_dtype is required). Until
 * gradcheck.h copies them itself, the one pd_block_add_op call in it is routed through
 * add_op_with_attrs below, which copies the attributes of the forward op being checked. */
#ifndef PD_TESTS_OPS_TEST_KERN_MATH_H
#define PD_TESTS_OPS_TEST_KERN_MATH_H

#include "tests/ops/runop.h"

static const pd_op_desc *kmt_fwd_;  /* the forward op of the running grad_check */

static inline pd_op_desc *add_op_with_attrs(pd_block *b, const char *type, int pos) {
  pd_op_desc *op = pd_block_add_op(b, type, pos);
  for (int i = 0; op && kmt_fwd_ && i < kmt_fwd_->nattrs; i++)
    if (pd_op_set_attr(op, &kmt_fwd_->attrs[i])) bail("out of memory");
  return op;
}

#define pd_block_add_op add_op_with_attrs
#include "tests/ops/gradcheck.h"
#undef pd_block_add_op

#undef grad_check_tol
#define grad_check_tol(r, wrt, outs, tol, what)                                   \
  do {                                                                            \
    kmt_fwd_ = (r)->op;                                                           \
    grad_check_((r), (wrt), (outs), (tol), (what), __LINE__);                     \
    kmt_fwd_ = NULL;                                                              \
  } while (0)

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
