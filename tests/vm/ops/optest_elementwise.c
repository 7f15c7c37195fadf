/* optest_elementwise.c -- the op-test table's rows of vm/ops/elementwise.c (optest.h): the
 * binary ops with Fluid's and NumPy's broadcasting, the unary math ops, scale, cast, sum, the
 * comparisons and the logical ops. The references are the definitions, element by element in
 * double, over the broadcast written out here. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* ---------------------------------------------------------------- broadcasting */

/* x and y padded with 1s to the output's rank nd: NumPy's rule (right-aligned) for axis -1 or
 * equal ranks, else Fluid's: the lower-rank operand's dims (trailing 1s dropped) from dim
 * `axis` of the other's. */
typedef struct bcast {
  int nd;
  int64_t od[OT_MAX_DIMS], xd[OT_MAX_DIMS], yd[OT_MAX_DIMS];
} bcast;

static void bcast_init(bcast *b, const ot_val *x, const ot_val *y, int axis) {
  int nd = b->nd = x->nd > y->nd ? x->nd : y->nd;
  for (int d = 0; d < nd; d++) b->xd[d] = b->yd[d] = 1;
  if (axis < 0 || x->nd == y->nd) {
    for (int d = 0; d < x->nd; d++) b->xd[nd - x->nd + d] = x->dims[d];
    for (int d = 0; d < y->nd; d++) b->yd[nd - y->nd + d] = y->dims[d];
  } else {
    const ot_val *hi = x->nd > y->nd ? x : y, *lo = x->nd > y->nd ? y : x;
    int64_t *hd = hi == x ? b->xd : b->yd, *ld = hi == x ? b->yd : b->xd;
    int m = lo->nd;
    while (m > 0 && lo->dims[m - 1] == 1) m--;
    for (int d = 0; d < nd; d++) hd[d] = hi->dims[d];
    for (int d = 0; d < m; d++) ld[axis + d] = lo->dims[d];
  }
  for (int d = 0; d < nd; d++) b->od[d] = b->xd[d] > b->yd[d] ? b->xd[d] : b->yd[d];
}

/* The x and y elements output element i reads. */
static void bcast_at(const bcast *b, int64_t i, int64_t *xi, int64_t *yi) {
  int64_t c[OT_MAX_DIMS];
  for (int d = b->nd - 1; d >= 0; d--) {
    c[d] = i % b->od[d];
    i /= b->od[d];
  }
  *xi = *yi = 0;
  for (int d = 0; d < b->nd; d++) {
    *xi = *xi * b->xd[d] + (b->xd[d] == 1 ? 0 : c[d]);
    *yi = *yi * b->yd[d] + (b->yd[d] == 1 ? 0 : c[d]);
  }
}

/* Out = f(X, Y) broadcast, f chosen by the op's name. */
static double binary(const char *op, double x, double y) {
  if (!strcmp(op, "elementwise_add")) return x + y;
  if (!strcmp(op, "elementwise_sub")) return x - y;
  if (!strcmp(op, "elementwise_mul")) return x * y;
  if (!strcmp(op, "elementwise_div")) return x / y;
  if (!strcmp(op, "elementwise_max")) return x > y ? x : y;
  if (!strcmp(op, "elementwise_min")) return x < y ? x : y;
  if (!strcmp(op, "elementwise_pow")) return pow(x, y);
  if (!strcmp(op, "less_than")) return x < y;
  if (!strcmp(op, "less_equal")) return x <= y;
  if (!strcmp(op, "greater_than")) return x > y;
  if (!strcmp(op, "greater_equal")) return x >= y;
  if (!strcmp(op, "equal")) return x == y;
  if (!strcmp(op, "not_equal")) return x != y;
  if (!strcmp(op, "logical_and")) return (x != 0) && (y != 0);
  if (!strcmp(op, "logical_or")) return (x != 0) || (y != 0);
  return NAN;
}

static void ref_binary(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *y = ot_in(r, "Y");
  bcast b;
  bcast_init(&b, x, y, (int)ot_int(r, "axis"));
  double *o = ot_out(r, "Out", b.nd, b.od);
  bool ints = x->dt == PD_INT64 || x->dt == PD_INT32;
  for (int64_t i = 0; i < ot_numel(b.nd, b.od); i++) {
    int64_t xi, yi;
    bcast_at(&b, i, &xi, &yi);
    o[i] = binary(ot_op(r), x->v[xi], y->v[yi]);
    if (ints) o[i] = trunc(o[i]); /* integer division truncates, as in C and Paddle */
  }
}

/* The logical ops have no axis attribute: NumPy's rule. */
static void ref_logical(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *y = ot_in(r, "Y");
  bcast b;
  bcast_init(&b, x, y, -1);
  double *o = ot_out(r, "Out", b.nd, b.od);
  for (int64_t i = 0; i < ot_numel(b.nd, b.od); i++) {
    int64_t xi, yi;
    bcast_at(&b, i, &xi, &yi);
    o[i] = binary(ot_op(r), x->v[xi], y->v[yi]);
  }
}

/* ---------------------------------------------------------------- unary */

static double unary(const char *op, double x) {
  if (!strcmp(op, "abs")) return fabs(x);
  if (!strcmp(op, "exp")) return exp(x);
  if (!strcmp(op, "log")) return log(x);
  if (!strcmp(op, "relu")) return x > 0 ? x : 0;
  if (!strcmp(op, "sigmoid")) return 1 / (1 + exp(-x));
  if (!strcmp(op, "sqrt")) return sqrt(x);
  if (!strcmp(op, "square")) return x * x;
  if (!strcmp(op, "tanh")) return tanh(x);
  if (!strcmp(op, "logical_not")) return x == 0;
  return NAN;
}

static void ref_unary(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  double *o = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++) o[i] = unary(ot_op(r), x->v[i]);
}

/* scale: scale * x + bias, or scale * (x + bias) without bias_after_scale; ScaleTensor, when
 * given, is the scale. */
static void ref_scale(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *st = ot_in(r, "ScaleTensor");
  double s = st ? st->v[0] : ot_float(r, "scale"), b = ot_float(r, "bias");
  double *o = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++)
    o[i] = ot_bool(r, "bias_after_scale") ? s * x->v[i] + b : s * (x->v[i] + b);
}

/* cast: to integers by truncation toward zero, to bool by x != 0, floats as they are (an fp32
 * target rounds). */
static void ref_cast(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  int to = (int)ot_int(r, "out_dtype");
  double *o = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++) {
    double v = x->v[i];
    o[i] = to == PD_INT64 || to == PD_INT32 ? trunc(v) : to == PD_BOOL ? v != 0
           : to == PD_FP32                  ? (float)v
                                            : v;
  }
}

/* sum: the element-wise sum of the list X. */
static void ref_sum(ot_ref *r) {
  const ot_val *x0 = ot_in(r, "X");
  double *o = ot_out_like(r, "Out", x0);
  for (int k = 0; k < ot_nin(r, "X"); k++)
    for (int64_t i = 0; i < x0->n; i++) o[i] += ot_in_at(r, "X", k)->v[i];
}

/* ---------------------------------------------------------------- the rows */

/* Positive inputs: log, sqrt, pow's base, a divisor. */
#define POS .lo = 0.5, .hi = 2
/* Small integers: ties for the comparisons. */
#define SMALL_INTS .type = OT_I64, .lo = 0, .hi = 2

const ot_row ot_rows_elementwise[] = {
    /* The binary ops: same shapes, NumPy broadcasting both ways, Fluid's axis. */
    {.op = "elementwise_add", .in = {{"X", "[2, 3]"}, {"Y", "[2, 3]"}}, .ref = ref_binary},
    {.op = "elementwise_add", .what = "NumPy broadcast", .in = {{"X", "[2, 3, 4]"}, {"Y", "[4]"}},
     .ref = ref_binary},
    {.op = "elementwise_add", .what = "both broadcast", .in = {{"X", "[2, 1, 4]"}, {"Y", "[3, 1]"}},
     .ref = ref_binary},
    {.op = "elementwise_add", .what = "axis 1", .attrs = "axis=1",
     .in = {{"X", "[2, 3, 4]"}, {"Y", "[3]"}}, .ref = ref_binary},
    {.op = "elementwise_add", .what = "axis 0, trailing 1", .attrs = "axis=0",
     .in = {{"X", "[2, 3]"}, {"Y", "[2, 1]"}}, .ref = ref_binary},
    {.op = "elementwise_sub", .in = {{"X", "[3, 4]"}, {"Y", "[3, 4]"}}, .ref = ref_binary},
    {.op = "elementwise_sub", .what = "axis 1", .attrs = "axis=1",
     .in = {{"X", "[2, 3, 2]"}, {"Y", "[3, 2]"}}, .ref = ref_binary},
    {.op = "elementwise_mul", .in = {{"X", "[2, 5]"}, {"Y", "[2, 5]"}}, .ref = ref_binary},
    {.op = "elementwise_mul", .what = "broadcast", .in = {{"X", "[3, 4]"}, {"Y", "[1, 4]"}},
     .ref = ref_binary},
    {.op = "elementwise_div", .in = {{"X", "[2, 4]"}, {"Y", "[2, 4]", POS}}, .ref = ref_binary},
    {.op = "elementwise_div", .what = "broadcast", .in = {{"X", "[4, 3]"}, {"Y", "[3]", POS}},
     .ref = ref_binary},
    {.op = "elementwise_div", .what = "int64", .in = {{"X", "[5]", OT_I64, -9, 9},
                                                    {"Y", "[5]", OT_I64, 1, 4}},
     .ref = ref_binary, .no_grad = true},
    {.op = "elementwise_max", .in = {{"X", "[3, 4]"}, {"Y", "[3, 4]"}}, .ref = ref_binary},
    {.op = "elementwise_max", .what = "broadcast", .in = {{"X", "[2, 3]"}, {"Y", "[3]"}},
     .ref = ref_binary},
    {.op = "elementwise_min", .in = {{"X", "[3, 4]"}, {"Y", "[3, 4]"}}, .ref = ref_binary},
    {.op = "elementwise_min", .what = "broadcast", .in = {{"X", "[2, 3]"}, {"Y", "[2, 1]"}},
     .ref = ref_binary},
    {.op = "elementwise_pow", .in = {{"X", "[2, 3]", POS}, {"Y", "[2, 3]"}}, .ref = ref_binary},
    {.op = "elementwise_pow", .what = "broadcast", .in = {{"X", "[3, 2]", POS}, {"Y", "[2]"}},
     .ref = ref_binary},

    /* The unary math ops, away from their kinks (abs and relu at 0 are not hit). */
    {.op = "abs", .in = {{"X", "[3, 5]"}}, .ref = ref_unary},
    {.op = "exp", .in = {{"X", "[3, 5]", .lo = -3, .hi = 3}}, .ref = ref_unary},
    {.op = "log", .in = {{"X", "[3, 5]", POS}}, .ref = ref_unary},
    {.op = "relu", .in = {{"X", "[3, 5]"}}, .ref = ref_unary},
    {.op = "sigmoid", .in = {{"X", "[3, 5]", .lo = -5, .hi = 5}}, .ref = ref_unary},
    {.op = "sqrt", .in = {{"X", "[3, 5]", POS}}, .ref = ref_unary},
    {.op = "square", .in = {{"X", "[3, 5]", .lo = -3, .hi = 3}}, .ref = ref_unary},
    {.op = "tanh", .in = {{"X", "[3, 5]", .lo = -3, .hi = 3}}, .ref = ref_unary},
    {.op = "abs", .what = "int64", .in = {{"X", "[6]", OT_I64, -5, 5}}, .ref = ref_unary,
     .no_grad = true},

    {.op = "scale", .attrs = "scale=2.5 bias=-0.5", .in = {{"X", "[2, 3]"}}, .ref = ref_scale},
    {.op = "scale", .what = "bias before scale",
     .attrs = "scale=-1.5 bias=2 bias_after_scale=false",
     .in = {{"X", "[4]"}}, .ref = ref_scale},
    {.op = "scale", .what = "ScaleTensor", .attrs = "scale=7 bias=0.25",
     .in = {{"X", "[2, 2]"}, {"ScaleTensor", "[1]", .v = (const double[]){0.75}}},
     .ref = ref_scale, .wrt = "X"},

    {.op = "cast", .what = "to its own type", .attrs = "in_dtype=$F out_dtype=$F",
     .in = {{"X", "[2, 3]"}}, .ref = ref_cast},
    {.op = "cast", .what = "int64 to float", .attrs = "in_dtype=3 out_dtype=$F",
     .in = {{"X", "[5]", OT_I64, -100, 100}}, .ref = ref_cast, .no_grad = true},
    {.op = "cast", .what = "float to int64", .attrs = "in_dtype=$F out_dtype=3",
     .in = {{"X", "[6]", .lo = -9, .hi = 9}}, .ref = ref_cast, .no_grad = true},
    {.op = "cast", .what = "float to bool", .attrs = "in_dtype=$F out_dtype=0",
     .in = {{"X", "[4]", .v = (const double[]){0, 1.5, -0.25, 0}}}, .ref = ref_cast,
     .no_grad = true},

    {.op = "sum", .in = {{"X", "[2, 3]"}, {"X", "[2, 3]"}, {"X", "[2, 3]"}}, .ref = ref_sum},
    {.op = "sum", .what = "one input", .in = {{"X", "[4]"}}, .ref = ref_sum},

    /* Comparisons: small integers tie often; floats; broadcast with an axis. */
    {.op = "equal", .in = {{"X", "[3, 4]", SMALL_INTS}, {"Y", "[3, 4]", SMALL_INTS}},
     .ref = ref_binary},
    {.op = "not_equal", .in = {{"X", "[3, 4]", SMALL_INTS}, {"Y", "[3, 4]", SMALL_INTS}},
     .ref = ref_binary},
    {.op = "less_than", .in = {{"X", "[3, 4]", SMALL_INTS}, {"Y", "[3, 4]", SMALL_INTS}},
     .ref = ref_binary},
    {.op = "less_than", .what = "float, axis 0", .attrs = "axis=0",
     .in = {{"X", "[3, 2]"}, {"Y", "[3]"}}, .ref = ref_binary},
    {.op = "less_equal", .in = {{"X", "[3, 4]", SMALL_INTS}, {"Y", "[3, 4]", SMALL_INTS}},
     .ref = ref_binary},
    {.op = "greater_than", .in = {{"X", "[2, 5]"}, {"Y", "[5]"}}, .ref = ref_binary},
    {.op = "greater_equal", .in = {{"X", "[3, 4]", SMALL_INTS}, {"Y", "[4]", SMALL_INTS}},
     .ref = ref_binary},

    {.op = "logical_and", .in = {{"X", "[3, 4]", OT_BOOL, 0, 1}, {"Y", "[3, 4]", OT_BOOL, 0, 1}},
     .ref = ref_logical},
    {.op = "logical_or", .in = {{"X", "[2, 3]", OT_BOOL, 0, 1}, {"Y", "[3]", OT_BOOL, 0, 1}},
     .ref = ref_logical},
    {.op = "logical_or", .what = "numbers",
     .in = {{"X", "[5]", SMALL_INTS}, {"Y", "[5]", SMALL_INTS}},
     .ref = ref_logical},
    {.op = "logical_not", .in = {{"X", "[7]", OT_BOOL, 0, 1}}, .ref = ref_unary},
    {0},
};
