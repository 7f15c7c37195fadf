/* test_infer_elementwise.c -- shape inference of the elementwise families: unary ops, softmax,
 * cast, dropout, increment, Fluid's broadcasting for elementwise_* (every position of the
 * smaller operand, unknown dims, either operand the larger), comparisons, logical ops, sum. */
#include "config.h"

#include "tests/vm/ops/fixture.h"

static void test_unary(void) {
  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, "[-1, 10]", 1);
  decl(f.b, "i", PD_INT64, "[-1, 1]");
  decl(f.b, "d", PD_FP64, "[4, 5]");
  decl(f.b, "u", PD_FP32, "?");
  static const char *const unary[] = {"abs",  "assign", "exp",  "log",    "relu",
                                      "sigmoid", "sqrt", "square", "tanh", "scale",
                                      "fill_zeros_like"};
  for (size_t i = 0; i < PD_ARRAY_LEN(unary); i++) {
    char what[96];
    snprintf(what, sizeof what, "%s keeps X's shape", unary[i]);
    pd_op_desc *op = add_op(&f, unary[i], "X=x", "Out=y");
    expect_shape(&f, op, "y", "[-1, 10]", what);
    ok(dtype_of(&f, "y") == PD_FP32 && lod_of(&f, "y") == 1, "%s keeps X's dtype and LoD", unary[i]);
  }
  expect_shape(&f, add_op(&f, "scale", "X=d", "Out=yd"), "yd", "[4, 5]", "scale of float64");
  is_int(dtype_of(&f, "yd"), PD_FP64, "scale keeps float64");
  expect_shape(&f, add_op(&f, "relu", "X=i", "Out=yi"), "yi", "[-1, 1]", "relu takes integers");
  expect_error(&f, add_op(&f, "sigmoid", "X=i", "Out=yi"), PD_ETYPE,
               "sigmoid: X must be float16, float32 or float64, got int64",
               "sigmoid needs floating point");
  expect_shape(&f, add_op(&f, "tanh", "X=u", "Out=yu"), "yu", "?", "an unknown rank stays unknown");
  expect_shape(&f, add_op(&f, "logical_not", "X=i", "Out=nb"), "nb", "[-1, 1]", "logical_not");
  is_int(dtype_of(&f, "nb"), PD_BOOL, "logical_not gives bool");

  expect_error(&f, add_op(&f, "sequence_softmax", "X=d", "Out=ss"), PD_ETYPE,
               "sequence_softmax: X must be a sequence (lod_level >= 1), got lod_level 0",
               "sequence_softmax needs a sequence");
  expect_shape(&f, add_op(&f, "sequence_softmax", "X=x", "Out=ss"), "ss", "[-1, 10]",
               "sequence_softmax of a sequence");
  is_int(lod_of(&f, "ss"), 1, "sequence_softmax keeps the LoD");
  fx_free(&f);
}

static void test_softmax_cast_dropout(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, "[-1, 10]");
  decl(f.b, "one", PD_INT64, "[1]");
  decl(f.b, "two", PD_INT64, "[2]");
  expect_shape(&f, add_op(&f, "softmax", "X=x", "Out=p"), "p", "[-1, 10]", "softmax");
  pd_op_desc *op = add_op(&f, "softmax", "X=x", "Out=p");
  pd_op_set_attr_int(op, "axis", -2);
  expect_shape(&f, op, "p", "[-1, 10]", "softmax over axis -2");
  op = add_op(&f, "log_softmax", "X=x", "Out=p");
  pd_op_set_attr_int(op, "axis", 2);
  expect_error(&f, op, PD_EINVAL, "log_softmax: axis 2 is out of range for X [-1, 10] (expected -2 to 1)",
               "softmax axis out of range");

  op = add_op(&f, "cast", "X=x", "Out=c");
  pd_op_set_attr_int(op, "in_dtype", PD_FP32);
  pd_op_set_attr_int(op, "out_dtype", PD_INT64);
  expect_shape(&f, op, "c", "[-1, 10]", "cast keeps the shape");
  is_int(dtype_of(&f, "c"), PD_INT64, "cast sets out_dtype");
  op = add_op(&f, "cast", "X=x", "Out=c");
  pd_op_set_attr_int(op, "in_dtype", PD_FP32);
  pd_op_set_attr_int(op, "out_dtype", 42);
  expect_error(&f, op, PD_EINVAL, "cast: out_dtype 42 is not a data type", "cast to a non-dtype");

  op = add_op(&f, "dropout", "X=x", "Out=dr Mask=m");
  expect_shape(&f, op, "m", "[-1, 10]", "dropout's Mask is shaped like X");
  ok(dtype_of(&f, "m") == PD_UINT8 && dtype_of(&f, "dr") == PD_FP32, "Mask is uint8, Out float32");
  op = add_op(&f, "dropout", "X=x", "Out=dr");
  pd_op_set_attr_float(op, "dropout_prob", 1.5f);
  expect_error(&f, op, PD_EINVAL, "dropout: dropout_prob must be in [0, 1], got 1.5",
               "dropout_prob out of range");

  expect_shape(&f, add_op(&f, "increment", "X=one", "Out=one"), "one", "[1]", "increment a counter");
  expect_error(&f, add_op(&f, "increment", "X=two", "Out=two"), PD_ESHAPE,
               "increment: X must hold one element, got [2]", "increment of two elements");
  fx_free(&f);
}

/* X op Y with attribute axis (INT_MIN: not set) gives `want` (a shape or an exact message). */
static void bcast(const char *type, const char *xs, const char *ys, int axis, const char *want,
                  const char *what) {
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, xs);
  decl(f.b, "y", PD_FP32, ys);
  pd_op_desc *op = add_op(&f, type, "X=x Y=y", "Out=out");
  if (axis != INT32_MIN) pd_op_set_attr_int(op, "axis", axis);
  if (want[0] == '[' || want[0] == '?') expect_shape(&f, op, "out", want, what);
  else expect_error(&f, op, strstr(want, "out of range") ? PD_EINVAL : PD_ESHAPE, want, what);
  fx_free(&f);
}

static void test_broadcast(void) {
  const int unset = INT32_MIN;
  bcast("elementwise_add", "[-1, 10]", "[10]", unset, "[-1, 10]", "bias over a batch");
  bcast("elementwise_add", "[-1, 10]", "[-1, 20]", unset,
        "elementwise_add: cannot broadcast [-1, 10] and [-1, 20] (axis -1)", "mismatch");
  bcast("elementwise_add", "[2, 3, 4, 5]", "[3, 4]", 1, "[2, 3, 4, 5]", "Y in the middle (axis 1)");
  bcast("elementwise_add", "[2, 3, 4, 5]", "[3, 1]", 1, "[2, 3, 4, 5]", "Y with a trailing 1");
  bcast("elementwise_add", "[2, 3, 4, 5]", "[2]", 0, "[2, 3, 4, 5]", "Y at the front (axis 0)");
  bcast("elementwise_add", "[2, 3, 4, 5]", "[4, 5]", unset, "[2, 3, 4, 5]", "Y at the end");
  bcast("elementwise_add", "[2, 3, 4, 5]", "[1, 1, 4, 1]", unset, "[2, 3, 4, 5]", "same rank, 1s");
  bcast("elementwise_add", "[2, 3, 4, 5]", "[3, 4]", 2,
        "elementwise_add: cannot broadcast [2, 3, 4, 5] and [3, 4] (axis 2)", "Y misplaced");
  bcast("elementwise_add", "[2, 3, 4, 5]", "[3, 4]", 3,
        "elementwise_add: axis 3 is out of range for [2, 3, 4, 5] and [3, 4] (expected -1 or 0 to 2)",
        "axis beyond X");
  bcast("elementwise_sub", "[10]", "[-1, 10]", unset, "[-1, 10]", "X the smaller operand");
  bcast("elementwise_mul", "[5, 1]", "[1, 4]", unset, "[5, 4]", "both operands broadcast");
  bcast("elementwise_div", "[-1, 1]", "[1, 7]", unset, "[-1, 7]", "unknown against 1");
  bcast("elementwise_max", "[-1, -1]", "[3, 4]", unset, "[3, 4]", "unknown dims take known ones");
  bcast("elementwise_min", "[1, -1]", "[3, 1]", unset, "[3, -1]", "unknown against 1 stays unknown");
  bcast("elementwise_pow", "[-1, 10]", "[-1, 10]", unset, "[-1, 10]", "unknown batch on both");
  bcast("elementwise_add", "[1]", "[-1, 10]", unset, "[-1, 10]", "a one-element tensor");
  bcast("elementwise_add", "[]", "[2, 3]", unset, "[2, 3]", "a rank-0 tensor");
  bcast("elementwise_add", "?", "[3]", unset, "?", "an unknown rank");
  bcast("elementwise_add", "[-1, 3]", "[-1, 4]", unset,
        "elementwise_add: cannot broadcast [-1, 3] and [-1, 4] (axis -1)",
        "unknown dims never hide a real mismatch");
  bcast("less_than", "[-1, 1]", "[1]", unset, "[-1, 1]", "compare against a scalar");
  bcast("greater_equal", "[-1, 3]", "[4]", unset,
        "greater_equal: cannot broadcast [-1, 3] and [4] (axis -1)", "compare mismatch");
  bcast("equal", "[2, 3]", "[3]", 1, "[2, 3]", "equal with an axis");
  bcast("logical_and", "[4, 1]", "[4, 6]", unset, "[4, 6]", "logical_and broadcasts");
}

static void test_binary_types(void) {
  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, "[-1, 10]", 1);
  decl(f.b, "y", PD_FP32, "[10]");
  decl(f.b, "n", PD_INT64, "[10]");
  decl(f.b, "b1", PD_BOOL, "[3]");
  decl(f.b, "b2", PD_BOOL, "[3]");
  expect_shape(&f, add_op(&f, "elementwise_add", "X=x Y=y", "Out=o"), "o", "[-1, 10]", "add");
  ok(dtype_of(&f, "o") == PD_FP32 && lod_of(&f, "o") == 1, "Out takes X's dtype and LoD");
  expect_error(&f, add_op(&f, "elementwise_add", "X=x Y=n", "Out=o"), PD_ETYPE,
               "elementwise_add: X has dtype float32 but Y has dtype int64", "dtype mismatch");
  expect_shape(&f, add_op(&f, "not_equal", "X=x Y=y", "Out=c"), "c", "[-1, 10]", "not_equal");
  is_int(dtype_of(&f, "c"), PD_BOOL, "comparisons give bool");
  expect_error(&f, add_op(&f, "less_equal", "X=n Y=y", "Out=c"), PD_ETYPE,
               "less_equal: X has dtype int64 but Y has dtype float32", "compare dtype mismatch");
  expect_shape(&f, add_op(&f, "logical_or", "X=b1 Y=b2", "Out=lo"), "lo", "[3]", "logical_or");
  is_int(dtype_of(&f, "lo"), PD_BOOL, "logical_or gives bool");
  pd_op_desc *op = add_op(&f, "logical_and", "X=b1 Y=b2", "Out=lo");
  pd_op_set_attr_int(op, "axis", 0);
  expect_error(&f, op, PD_EINVAL, "logical_and: unknown attribute axis (logical_and has no attributes)",
               "logical ops have no axis");
  fx_free(&f);
}

static void test_sum(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "a", PD_FP32, "[-1, 10]");
  decl(f.b, "b", PD_FP32, "[32, 10]");
  decl(f.b, "c", PD_FP32, "[-1, 10]");
  decl(f.b, "p", PD_FP32, "[4]");
  decl(f.b, "q", PD_FP32, "[3]");
  decl(f.b, "r", PD_FP32, "[-1, 4]");
  decl(f.b, "s", PD_FP32, "[3, 4]");
  decl(f.b, "t", PD_FP32, "[5, 4]");
  decl(f.b, "d", PD_FP64, "[4]");
  decl(f.b, "u", PD_FP32, "?");
  expect_shape(&f, add_op(&f, "sum", "X=a,b,c", "Out=o"), "o", "[32, 10]", "sum of three");
  expect_shape(&f, add_op(&f, "sum", "X=a", "Out=o"), "o", "[-1, 10]", "sum of one");
  expect_shape(&f, add_op(&f, "sum", "X=u,a", "Out=o"), "o", "[-1, 10]", "sum past an unknown rank");
  expect_error(&f, add_op(&f, "sum", "X=p,q", "Out=o"), PD_ESHAPE,
               "sum: X[1] has shape [3] but X[0] has shape [4]", "sum mismatch");
  expect_error(&f, add_op(&f, "sum", "X=r,s,t", "Out=o"), PD_ESHAPE,
               "sum: X[2] has shape [5, 4] but the inputs before it have shape [3, 4]",
               "sum mismatch with a later input");
  expect_error(&f, add_op(&f, "sum", "X=p,r", "Out=o"), PD_ESHAPE,
               "sum: X[1] has shape [-1, 4] but X[0] has shape [4]", "sum of different ranks");
  expect_error(&f, add_op(&f, "sum", "X=p,d", "Out=o"), PD_ETYPE,
               "sum: X[1] has dtype float64 but X[0] has dtype float32", "sum dtype mismatch");
  fx_free(&f);
}

int main(void) {
  test_unary();
  test_softmax_cast_dropout();
  test_broadcast();
  test_binary_types();
  test_sum();
  return tap_done();
}
