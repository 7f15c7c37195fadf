/* elementwise.c -- broadcast binary ops, comparisons, logical ops, unary activations and their
 * gradients, scale: the typed loops come from elementwise_t.h (fp32 e^x, tanh and sigmoid from
 * fastmath.h), the iteration from iter.c. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <string.h>
#include <tgmath.h>

/* One loop over a run of the innermost dim for out = EXPR(a, b), for the element type T of the
 * including context: p[0] = out (stride 1), p[1] = x, p[2] = y. Strides 0 and 1 get their own
 * loops so that the compiler vectorises the same-shape, row-broadcast (bias add) and scalar
 * cases; any other stride takes the general loop. VEC is PD_SIMD, or nothing for an EXPR that
 * cannot be vectorised (a libm call, an integer division): clang reports a failed request. */
#define EW_LOOP_(name, OT, EXPR, VEC)                                                  \
  static void TF(name)(char *const *p, const int64_t *s, int64_t n, const void *arg) { \
    PD_UNUSED(arg);                                                                    \
    OT *o = (OT *)p[0];                                                                \
    const T *x = (const T *)p[1], *y = (const T *)p[2];                                \
    if (s[1] == 1 && s[2] == 1) {                                                      \
      VEC for (int64_t j = 0; j < n; j++) {                                            \
        T a = x[j], b = y[j];                                                          \
        o[j] = (EXPR);                                                                 \
      }                                                                                \
    } else if (s[1] == 1 && s[2] == 0) {                                               \
      const T b = y[0];                                                                \
      VEC for (int64_t j = 0; j < n; j++) {                                            \
        T a = x[j];                                                                    \
        o[j] = (EXPR);                                                                 \
      }                                                                                \
    } else if (s[1] == 0 && s[2] == 1) {                                               \
      const T a = x[0];                                                                \
      VEC for (int64_t j = 0; j < n; j++) {                                            \
        T b = y[j];                                                                    \
        o[j] = (EXPR);                                                                 \
      }                                                                                \
    } else {                                                                           \
      for (int64_t j = 0; j < n; j++) {                                                \
        T a = x[j * s[1]], b = y[j * s[2]];                                            \
        o[j * s[0]] = (EXPR);                                                          \
      }                                                                                \
    }                                                                                  \
  }
#define EW_LOOP(name, OT, EXPR) EW_LOOP_(name, OT, EXPR, PD_SIMD)
#define EW_LOOP_SCALAR(name, OT, EXPR) EW_LOOP_(name, OT, EXPR, )

/* A flat elementwise job split by pd_kcpu_parallel. */
typedef struct unary_job {
  pd_k_unop op;
  const void *x, *y, *dout;  /* input, forward output, gradient of the output */
  void *out;                 /* result (out, dx) */
  double a, b;               /* scale: out = a * x + b */
} unary_job;

#define PD_KCPU_TEMPLATE "kernels/cpu/elementwise_t.h"
#include "kernels/cpu/each_type.h"

/* ---- Bools: one byte each, any non-zero byte is true, results are 0 or 1. ---- */
#define T uint8_t
#define TN b8
EW_LOOP(cmp_lt, uint8_t, !a && b)
EW_LOOP(cmp_le, uint8_t, !a || b)
EW_LOOP(cmp_gt, uint8_t, a && !b)
EW_LOOP(cmp_ge, uint8_t, a || !b)
EW_LOOP(cmp_eq, uint8_t, !a == !b)
EW_LOOP(cmp_ne, uint8_t, !a != !b)
EW_LOOP(log_and, uint8_t, a && b)
EW_LOOP(log_or, uint8_t, a || b)
EW_LOOP(log_xor, uint8_t, !a != !b)
static pd_kcpu_loop_fn *const compare_loops_b8[PD_K_CMPOP_COUNT_] = {
    [PD_K_LT] = cmp_lt_b8, [PD_K_LE] = cmp_le_b8, [PD_K_GT] = cmp_gt_b8,
    [PD_K_GE] = cmp_ge_b8, [PD_K_EQ] = cmp_eq_b8, [PD_K_NE] = cmp_ne_b8,
};
static pd_kcpu_loop_fn *const logical_loops[PD_K_LOGOP_COUNT_] = {
    [PD_K_AND] = log_and_b8, [PD_K_OR] = log_or_b8, [PD_K_XOR] = log_xor_b8,
};
#undef T
#undef TN

/* ---- Dispatch ---- */

static pd_kcpu_loop_fn *const *const binary_tables[] = {
    binary_loops_f32, binary_loops_f64, binary_loops_i32, binary_loops_i64};
static pd_kcpu_loop_fn *const *const compare_tables[] = {
    compare_loops_f32, compare_loops_f64, compare_loops_i32, compare_loops_i64, compare_loops_b8};

/* Index into the tables above; -1 for a dtype without kernels here. */
static int type_index(pd_dtype dt) {
  switch (dt) {
    case PD_FP32: return 0;
    case PD_FP64: return 1;
    case PD_INT32: return 2;
    case PD_INT64: return 3;
    case PD_BOOL: return 4;
    default: return -1;
  }
}

static pd_status run_broadcast(pd_kcpu_loop_fn *loop, size_t in_size, size_t out_size, int xnd,
                               const int64_t *xdims, const void *x, int ynd,
                               const int64_t *ydims, const void *y, int axis, void *out,
                               int64_t grain) {
  pd_kcpu_iter it;
  pd_status st = pd_kcpu_bcast_iter(&it, xnd, xdims, ynd, ydims, axis, out_size, in_size,
                                    in_size);
  if (st) return st;
  void *base[3] = {out, (void *)x, (void *)y};
  pd_kcpu_iter_run(&it, base, loop, NULL, true, grain);
  return PD_OK;
}

pd_status pd_kcpu_binary(pd_k_binop op, pd_dtype dt, int xnd, const int64_t *xdims,
                         const void *x, int ynd, const int64_t *ydims, const void *y, int axis,
                         void *out) {
  if ((unsigned)op >= PD_K_BINOP_COUNT_) return PD_EINVAL;
  int ti = type_index(dt);
  if (ti < 0 || ti >= (int)PD_ARRAY_LEN(binary_tables) || !binary_tables[ti][op])
    return PD_EUNSUPPORTED;
  size_t sz = pd_dtype_size(dt);
  return run_broadcast(binary_tables[ti][op], sz, sz, xnd, xdims, x, ynd, ydims, y, axis, out,
                       op == PD_K_POW ? PD_KCPU_GRAIN_TRANSCENDENTAL : PD_KCPU_GRAIN);
}

pd_status pd_kcpu_compare(pd_k_cmpop op, pd_dtype dt, int xnd, const int64_t *xdims,
                          const void *x, int ynd, const int64_t *ydims, const void *y, int axis,
                          uint8_t *out) {
  if ((unsigned)op >= PD_K_CMPOP_COUNT_) return PD_EINVAL;
  int ti = type_index(dt);
  if (ti < 0) return PD_EUNSUPPORTED;
  return run_broadcast(compare_tables[ti][op], pd_dtype_size(dt), 1, xnd, xdims, x, ynd, ydims,
                       y, axis, out, PD_KCPU_GRAIN);
}

pd_status pd_kcpu_logical(pd_k_logop op, int xnd, const int64_t *xdims, const uint8_t *x,
                          int ynd, const int64_t *ydims, const uint8_t *y, int axis,
                          uint8_t *out) {
  if ((unsigned)op >= PD_K_LOGOP_COUNT_) return PD_EINVAL;
  return run_broadcast(logical_loops[op], 1, 1, xnd, xdims, x, ynd, ydims, y, axis, out,
                       PD_KCPU_GRAIN);
}

void pd_kcpu_logical_not(int64_t n, const uint8_t *x, uint8_t *out) {
  PD_SIMD for (int64_t i = 0; i < n; i++) out[i] = !x[i];
}

pd_status pd_kcpu_binary_grad(pd_k_binop op, pd_dtype dt, int xnd, const int64_t *xdims,
                              const void *x, int ynd, const int64_t *ydims, const void *y,
                              int axis, const void *dout, void *dx, void *dy) {
  if ((unsigned)op >= PD_K_BINOP_COUNT_) return PD_EINVAL;
  pd_kcpu_loop_fn *loop;
  switch (dt) {
    case PD_FP32: loop = grad_loops_f32[op]; break;
    case PD_FP64: loop = grad_loops_f64[op]; break;
    default: return PD_EUNSUPPORTED;
  }
  int nd;
  int64_t od[PD_K_MAX_DIMS], xp[PD_K_MAX_DIMS], yp[PD_K_MAX_DIMS], s[5][PD_K_MAX_DIMS];
  pd_status st = pd_k_broadcast_strides(xnd, xdims, ynd, ydims, axis, &nd, od, xp, yp, s);
  if (st) return st;
  bool x_bcast = false, y_bcast = false;
  for (int d = 0; d < nd; d++) {
    x_bcast |= xp[d] != od[d];
    y_bcast |= yp[d] != od[d];
    s[3][d] = s[1][d];
    s[4][d] = s[2][d];
  }
  size_t sz = pd_dtype_size(dt);
  int64_t xn = pd_k_numel(nd, xp), yn = pd_k_numel(nd, yp);
  /* The gradients accumulate (broadcast dims sum into one element): start from zero. */
  if (dx && xn) memset(dx, 0, (size_t)xn * sz);
  if (dy && yn) memset(dy, 0, (size_t)yn * sz);
  size_t sizes[5] = {sz, sz, sz, sz, sz};
  pd_kcpu_iter it;
  pd_kcpu_iter_init(&it, nd, od, 5, (const int64_t(*)[PD_K_MAX_DIMS])s, sizes);
  void *base[5] = {(void *)dout, (void *)x, (void *)y, dx, dy};
  /* Two threads adding into one broadcast element would race: those runs stay serial. */
  bool parallel = !(dx && x_bcast) && !(dy && y_bcast);
  pd_kcpu_iter_run(&it, base, loop, NULL, parallel, PD_KCPU_GRAIN);
  return PD_OK;
}

/* Ops that call libm for each element are costlier and split sooner. fp32 e^x, tanh and sigmoid
 * are fastmath.h's vector code (~2 ns an element) and keep the plain grain: two threads on an
 * RNN's [32, 256] tanh made bench_rnn's step slower, not faster. */
static int64_t unary_grain(pd_k_unop op, pd_dtype dt) {
  bool fast = PD_KCPU_FASTMATH_f32 && dt == PD_FP32;
  bool fm = op == PD_K_SIGMOID || op == PD_K_TANH || op == PD_K_EXP;
  bool libm = op == PD_K_LOG || (fm && !fast);
  return libm ? PD_KCPU_GRAIN_TRANSCENDENTAL : PD_KCPU_GRAIN;
}

pd_status pd_kcpu_unary(pd_k_unop op, pd_dtype dt, int64_t n, const void *x, void *out) {
  if ((unsigned)op >= PD_K_UNOP_COUNT_ || n < 0) return PD_EINVAL;
  unary_job job = {.op = op, .x = x, .out = out};
  int64_t grain = unary_grain(op, dt);
  switch (dt) {
    case PD_FP32: pd_kcpu_parallel(n, grain, unary_range_f32, &job); return PD_OK;
    case PD_FP64: pd_kcpu_parallel(n, grain, unary_range_f64, &job); return PD_OK;
    default: return PD_EUNSUPPORTED;
  }
}

pd_status pd_kcpu_unary_grad(pd_k_unop op, pd_dtype dt, int64_t n, const void *x,
                             const void *out, const void *dout, void *dx) {
  if ((unsigned)op >= PD_K_UNOP_COUNT_ || n < 0) return PD_EINVAL;
  bool reads_x = op == PD_K_LOG || op == PD_K_SQUARE || op == PD_K_ABS;
  if (n > 0 && (reads_x ? !x : !out)) return PD_EINVAL;
  unary_job job = {.op = op, .x = reads_x ? x : NULL, .y = reads_x ? NULL : out,
                   .dout = dout, .out = dx};
  switch (dt) {
    case PD_FP32: pd_kcpu_parallel(n, PD_KCPU_GRAIN, unary_grad_range_f32, &job); return PD_OK;
    case PD_FP64: pd_kcpu_parallel(n, PD_KCPU_GRAIN, unary_grad_range_f64, &job); return PD_OK;
    default: return PD_EUNSUPPORTED;
  }
}

pd_status pd_kcpu_scale(pd_dtype dt, int64_t n, const void *x, double a, double b, void *out) {
  if (n < 0) return PD_EINVAL;
  unary_job job = {.x = x, .out = out, .a = a, .b = b};
  switch (dt) {
    case PD_FP32: pd_kcpu_parallel(n, PD_KCPU_GRAIN, scale_range_f32, &job); return PD_OK;
    case PD_FP64: pd_kcpu_parallel(n, PD_KCPU_GRAIN, scale_range_f64, &job); return PD_OK;
    default: return PD_EUNSUPPORTED;
  }
}
