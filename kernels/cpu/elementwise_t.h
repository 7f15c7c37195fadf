/* elementwise_t.h -- template of the elementwise kernels for one element type; included by
 * elementwise.c (which defines the EW_LOOP generator and unary_job) with T (the type), TN (its
 * suffix), T_FLOAT (1 for float, double) and, for integer types, TU (the unsigned type of the
 * same width, for wrapping arithmetic). Defines TF(binary_loops), TF(compare_loops) and, for
 * float types, TF(grad_loops), TF(unary_range), TF(unary_grad_range) and TF(scale_range). */

/* ---- Arithmetic. Integer types wrap (through the unsigned type) and never trap. ---- */
#if T_FLOAT
EW_LOOP(ew_add, T, a + b)
EW_LOOP(ew_sub, T, a - b)
EW_LOOP(ew_mul, T, a * b)
EW_LOOP(ew_div, T, a / b)
EW_LOOP_SCALAR(ew_pow, T, pow(a, b))
#else
EW_LOOP(ew_add, T, (T)((TU)a + (TU)b))
EW_LOOP(ew_sub, T, (T)((TU)a - (TU)b))
EW_LOOP(ew_mul, T, (T)((TU)a * (TU)b))
/* x / 0 = 0 (as NumPy); MIN / -1 wraps to MIN instead of trapping. */
EW_LOOP_SCALAR(ew_div, T, b == 0 ? (T)0 : b == -1 ? (T)((TU)0 - (TU)a) : (T)(a / b))
#endif
/* max/min propagate NaN from either side. */
#if T_FLOAT
#define T_ISNAN(v) isnan(v)
#else
#define T_ISNAN(v) 0
#endif
EW_LOOP(ew_max, T, (T_ISNAN(a) || a > b) ? a : b)
EW_LOOP(ew_min, T, (T_ISNAN(a) || a < b) ? a : b)
#undef T_ISNAN

static pd_kcpu_loop_fn *const TF(binary_loops)[PD_K_BINOP_COUNT_] = {
    [PD_K_ADD] = TF(ew_add), [PD_K_SUB] = TF(ew_sub), [PD_K_MUL] = TF(ew_mul),
    [PD_K_DIV] = TF(ew_div), [PD_K_MAX] = TF(ew_max), [PD_K_MIN] = TF(ew_min),
#if T_FLOAT
    [PD_K_POW] = TF(ew_pow),
#endif
};

/* ---- Comparisons (bool out). ---- */
EW_LOOP(cmp_lt, uint8_t, a < b)
EW_LOOP(cmp_le, uint8_t, a <= b)
EW_LOOP(cmp_gt, uint8_t, a > b)
EW_LOOP(cmp_ge, uint8_t, a >= b)
EW_LOOP(cmp_eq, uint8_t, a == b)
EW_LOOP(cmp_ne, uint8_t, a != b)

static pd_kcpu_loop_fn *const TF(compare_loops)[PD_K_CMPOP_COUNT_] = {
    [PD_K_LT] = TF(cmp_lt), [PD_K_LE] = TF(cmp_le), [PD_K_GT] = TF(cmp_gt),
    [PD_K_GE] = TF(cmp_ge), [PD_K_EQ] = TF(cmp_eq), [PD_K_NE] = TF(cmp_ne),
};

#if T_FLOAT
/* ---- Gradients of binary ops: operands [dout, x, y, dx, dy]; dx/dy accumulate (they were
 * zeroed), through a zero stride where their operand was broadcast. ---- */
#define EW_GRAD_LOOP(name, GX, GY)                                                     \
  static void TF(name)(char *const *p, const int64_t *s, int64_t n, const void *arg) { \
    PD_UNUSED(arg);                                                                    \
    const T *dout = (const T *)p[0], *x = (const T *)p[1], *y = (const T *)p[2];       \
    T *dx = (T *)p[3], *dy = (T *)p[4];                                                \
    for (int64_t j = 0; j < n; j++) {                                                  \
      T d = dout[j * s[0]], a = x[j * s[1]], b = y[j * s[2]];                          \
      PD_UNUSED(a);                                                                    \
      PD_UNUSED(b);                                                                    \
      if (dx) dx[j * s[3]] += (GX);                                                    \
      if (dy) dy[j * s[4]] += (GY);                                                    \
    }                                                                                  \
  }
EW_GRAD_LOOP(gr_add, d, d)
EW_GRAD_LOOP(gr_sub, d, -d)
EW_GRAD_LOOP(gr_mul, d * b, d * a)
EW_GRAD_LOOP(gr_div, d / b, -d * a / (b * b))
EW_GRAD_LOOP(gr_max, a > b ? d : 0, a <= b ? d : 0)
EW_GRAD_LOOP(gr_min, a < b ? d : 0, a >= b ? d : 0)
EW_GRAD_LOOP(gr_pow, d * b * pow(a, b - 1), d * pow(a, b) * log(a))
#undef EW_GRAD_LOOP

static pd_kcpu_loop_fn *const TF(grad_loops)[PD_K_BINOP_COUNT_] = {
    [PD_K_ADD] = TF(gr_add), [PD_K_SUB] = TF(gr_sub), [PD_K_MUL] = TF(gr_mul),
    [PD_K_DIV] = TF(gr_div), [PD_K_MAX] = TF(gr_max), [PD_K_MIN] = TF(gr_min),
    [PD_K_POW] = TF(gr_pow),
};

/* ---- Unary ops on [begin, end) of a flat job (see unary_job in elementwise.c). ---- */
#define UN_CASE_(op, EXPR, VEC)                        \
  case op: {                                           \
    VEC for (int64_t j = 0; j < n; j++) o[j] = (EXPR); \
  } break;
#define UN_CASE(op, EXPR) UN_CASE_(op, EXPR, PD_SIMD)
#define UN_CASE_SCALAR(op, EXPR) UN_CASE_(op, EXPR, )  /* libm calls (errno) do not vectorise */
/* fp32 e^x, tanh and the logistic function: the vector code of fastmath.h; fp64 (the gradient
 * checks): libm. */
#if TF(PD_KCPU_FASTMATH)
#define UN_CASE_FAST(op, FM, EXPR) \
  case op: pd_kcpu_map_f32(FM, x, o, n); break;
#else
#define UN_CASE_FAST(op, FM, EXPR) UN_CASE_SCALAR(op, EXPR)
#endif

static void TF(unary_range)(void *vjob, int64_t b, int64_t e) {
  const unary_job *job = vjob;
  const T *x = (const T *)job->x + b;
  T *o = (T *)job->out + b;
  int64_t n = e - b;
  switch (job->op) {
    UN_CASE(PD_K_RELU, x[j] < 0 ? (T)0 : x[j])  /* keeps NaN: a comparison with NaN is false */
    /* exp(-x) overflows to inf for very negative x and gives 1 / inf = 0: no NaN. */
    UN_CASE_FAST(PD_K_SIGMOID, PD_KCPU_FM_SIGMOID, (T)1 / ((T)1 + exp(-x[j])))
    UN_CASE_FAST(PD_K_TANH, PD_KCPU_FM_TANH, tanh(x[j]))
    UN_CASE_FAST(PD_K_EXP, PD_KCPU_FM_EXP, exp(x[j]))
    UN_CASE_SCALAR(PD_K_LOG, log(x[j]))
    UN_CASE_SCALAR(PD_K_SQRT, sqrt(x[j]))
    UN_CASE(PD_K_SQUARE, x[j] * x[j])
    UN_CASE(PD_K_ABS, fabs(x[j]))
    case PD_K_UNOP_COUNT_: break;
  }
}

/* dx = dout * f'(x); y is the forward output f(x). x or y is NULL when the op does not read
 * it (checked by the caller), so each case touches only what it reads. */
/* relu's and abs's gradients select dout by the sign of y or x. Written as functions of both
 * loaded values, so that the loop has no conditional load and vectorises (as a ternary on d[j]
 * it was a branch per element, mispredicted half the time: 30x slower than relu itself). */
static inline T TF(relu_dx)(T y, T d) { return y > 0 ? d : (T)0; }
static inline T TF(abs_dx)(T x, T d) { return x > 0 ? d : x < 0 ? -d : (T)0; }

static void TF(unary_grad_range)(void *vjob, int64_t b, int64_t e) {
  const unary_job *job = vjob;
  const T *x = job->x ? (const T *)job->x + b : NULL;
  const T *y = job->y ? (const T *)job->y + b : NULL;
  const T *d = (const T *)job->dout + b;
  T *o = (T *)job->out + b;
  int64_t n = e - b;
  switch (job->op) {
    UN_CASE(PD_K_RELU, TF(relu_dx)(y[j], d[j]))
    UN_CASE(PD_K_SIGMOID, d[j] * y[j] * ((T)1 - y[j]))
    UN_CASE(PD_K_TANH, d[j] * ((T)1 - y[j] * y[j]))
    UN_CASE(PD_K_EXP, d[j] * y[j])
    UN_CASE(PD_K_LOG, d[j] / x[j])
    UN_CASE(PD_K_SQRT, d[j] * (T)0.5 / y[j])
    UN_CASE(PD_K_SQUARE, d[j] * (T)2 * x[j])
    UN_CASE(PD_K_ABS, TF(abs_dx)(x[j], d[j]))
    case PD_K_UNOP_COUNT_: break;
  }
}
#undef UN_CASE
#undef UN_CASE_
#undef UN_CASE_SCALAR
#undef UN_CASE_FAST

static void TF(scale_range)(void *vjob, int64_t b, int64_t e) {
  const unary_job *job = vjob;
  const T *x = (const T *)job->x + b;
  T *o = (T *)job->out + b;
  const T a = (T)job->a, c = (T)job->b;
  PD_SIMD for (int64_t j = 0; j < e - b; j++) o[j] = a * x[j] + c;
}
#endif /* T_FLOAT */

#undef T
#undef TN
#undef TU
#undef T_FLOAT
