/* test_infer_math.c -- shape inference of matrix products (mul, fc, matmul_v2, Fluid's matmul:
 * flattening, transposes, vectors, batch broadcasting or batch counts) and reductions (reduce_*, mean, arg_max, top_k). */
#include "config.h"

#include "tests/vm/ops/fixture.h"

/* A binary op X, Y -> Out with up to two integer attributes (name NULL: not set). */
static void product(const char *type, const char *xs, const char *ys, const char *a1, int v1,
                    const char *a2, int v2, const char *want, const char *what) {
  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, xs, 1);
  decl(f.b, "y", PD_FP32, ys);
  pd_op_desc *op = add_op(&f, type, "X=x Y=y", "Out=out");
  const char *names[2] = {a1, a2};
  int values[2] = {v1, v2};
  for (int i = 0; i < 2; i++) {
    const pd_attrdef *ad = names[i] ? pd_opdef_attr(pd_opdef_lookup(type), names[i]) : NULL;
    if (ad && ad->type == PD_ATTR_BOOLEAN) pd_op_set_attr_bool(op, names[i], values[i] != 0);
    else if (ad) pd_op_set_attr_int(op, names[i], values[i]);
  }
  if (want[0] == '[' || want[0] == '?') expect_shape(&f, op, "out", want, what);
  else expect_error(&f, op, strstr(want, "split") ? PD_EINVAL : PD_ESHAPE, want, what);
  fx_free(&f);
}

static void test_mul(void) {
  product("mul", "[-1, 784]", "[784, 256]", NULL, 0, NULL, 0, "[-1, 256]", "mul: a batch by a matrix");
  product("mul", "[-1, 784]", "[300, 10]", NULL, 0, NULL, 0,
          "mul: X has 784 columns but Y has 300 rows ([-1, 784] x [300, 10])", "mul: mismatch");
  product("mul", "[-1, 5, 784]", "[784, 10]", "x_num_col_dims", 2, NULL, 0, "[-1, 5, 10]",
          "mul: x_num_col_dims 2 keeps two dims of X");
  product("mul", "[-1, 28, 28]", "[784, 10]", NULL, 0, NULL, 0, "[-1, 10]",
          "mul: X flattened to 784 columns");
  product("mul", "[6, 4]", "[2, 2, 7]", NULL, 0, "y_num_col_dims", 2, "[6, 7]",
          "mul: y_num_col_dims 2 flattens Y's rows");
  product("mul", "[-1, -1]", "[784, 10]", NULL, 0, NULL, 0, "[-1, 10]",
          "mul: unknown columns are no error");
  product("mul", "[-1, 784]", "[784, 10]", "x_num_col_dims", 2, NULL, 0,
          "mul: x_num_col_dims 2 does not split X [-1, 784] in two (expected 1 to 1)",
          "mul: x_num_col_dims too large");
  product("mul", "[784]", "[784, 10]", NULL, 0, NULL, 0,
          "mul: x_num_col_dims 1 does not split X [784] in two (expected 1 to 0)", "mul: a vector X");
  product("mul", "?", "[784, 10]", NULL, 0, NULL, 0, "?", "mul: unknown rank");

  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, "[-1, 4]", 1);
  decl(f.b, "w", PD_FP64, "[4, 2]");
  decl(f.b, "w2", PD_FP32, "[4, 2]");
  expect_error(&f, add_op(&f, "mul", "X=x Y=w", "Out=o"), PD_ETYPE,
               "mul: X has dtype float32 but Y has dtype float64", "mul: dtype mismatch");
  expect_shape(&f, add_op(&f, "mul", "X=x Y=w2", "Out=o"), "o", "[-1, 2]", "mul");
  is_int(lod_of(&f, "o"), 1, "mul keeps X's LoD");
  fx_free(&f);
}

static void test_matmul(void) {
  const char *m = "matmul_v2";
  product(m, "[-1, 784]", "[784, 256]", NULL, 0, NULL, 0, "[-1, 256]", "matmul: batch by matrix");
  product(m, "[-1, 784]", "[300, 10]", NULL, 0, NULL, 0,
          "matmul_v2: X has 784 columns but Y has 300 rows ([-1, 784] x [300, 10])", "matmul: mismatch");
  product(m, "[-1, 784]", "[10, 784]", "trans_y", 1, NULL, 0, "[-1, 10]", "matmul: trans_y");
  product(m, "[-1, 784]", "[10, 300]", "trans_y", 1, NULL, 0,
          "matmul_v2: X has 784 columns but Y^T has 300 rows ([-1, 784] x [10, 300])",
          "matmul: mismatch with trans_y");
  product(m, "[784, 5]", "[784, 3]", "trans_x", 1, NULL, 0, "[5, 3]", "matmul: trans_x");
  product(m, "[4, 5]", "[3, 4]", "trans_x", 1, "trans_y", 1, "[5, 3]", "matmul: both transposed");
  product(m, "[8, 3, 4]", "[4, 5]", NULL, 0, NULL, 0, "[8, 3, 5]", "matmul: batch of X only");
  product(m, "[8, 1, 3, 4]", "[6, 4, 5]", NULL, 0, NULL, 0, "[8, 6, 3, 5]",
          "matmul: batch dims broadcast");
  product(m, "[-1, 3, 4]", "[7, 4, 5]", NULL, 0, NULL, 0, "[7, 3, 5]", "matmul: unknown batch dim");
  product(m, "[2, 3, 4]", "[5, 4, 6]", NULL, 0, NULL, 0,
          "matmul_v2: cannot broadcast the batch dims of [2, 3, 4] and [5, 4, 6]",
          "matmul: batch mismatch");
  product(m, "[4]", "[4, 5]", NULL, 0, NULL, 0, "[5]", "matmul: vector by matrix");
  product(m, "[3, 4]", "[4]", NULL, 0, NULL, 0, "[3]", "matmul: matrix by vector");
  product(m, "[4]", "[4]", NULL, 0, NULL, 0, "[1]", "matmul: vector by vector");
  product(m, "[4]", "[5]", NULL, 0, NULL, 0,
          "matmul_v2: X has 4 columns but Y has 5 rows ([4] x [5])", "matmul: vector mismatch");
  product(m, "[]", "[5]", NULL, 0, NULL, 0,
          "matmul_v2: cannot multiply [] by [5]: both need at least 1 dim", "matmul: rank 0");
  product(m, "[-1, -1]", "[7, 3]", NULL, 0, NULL, 0, "[-1, 3]", "matmul: unknown inner dim");
}

/* Fluid's matmul: the batch dims as one count (equal, or one side a matrix), the batched
 * operand's leading dims in Out, a 1-d operand transposed too, X's LoD kept. */
static void test_matmul_fluid(void) {
  const char *m = "matmul";
  product(m, "[-1, 12, 128, 64]", "[-1, 12, 128, 64]", "transpose_Y", 1, NULL, 0,
          "[-1, 12, 128, 128]", "matmul: attention scores");
  product(m, "[2, 3, 4, 5]", "[6, 5, 7]", NULL, 0, NULL, 0, "[2, 3, 4, 7]",
          "matmul: batches of other dims, the same count: X's dims");
  product(m, "[4, 5]", "[2, 3, 5, 7]", NULL, 0, NULL, 0, "[2, 3, 4, 7]",
          "matmul: a matrix by a batch: Y's dims");
  product(m, "[2, 4, 5]", "[3, 5, 7]", NULL, 0, NULL, 0,
          "matmul: X's 2 matrices and Y's 3 differ ([2, 4, 5] x [3, 5, 7]): matmul multiplies "
          "equal batches, or one by a matrix", "matmul: batch counts differ");
  product(m, "[1, 4, 5]", "[3, 5, 7]", NULL, 0, NULL, 0,
          "matmul: X's 1 matrices and Y's 3 differ ([1, 4, 5] x [3, 5, 7]): matmul multiplies "
          "equal batches, or one by a matrix", "matmul: a batch of one does not broadcast");
  product(m, "[4]", "[1, 3]", "transpose_X", 1, NULL, 0, "[4, 3]",
          "matmul: a transposed 1-d X is a column");
  product(m, "[2, 1]", "[3]", "transpose_Y", 1, NULL, 0, "[2, 3]",
          "matmul: a transposed 1-d Y is a row");
  product(m, "[4]", "[4]", NULL, 0, NULL, 0, "[1]", "matmul: vector by vector");
  product(m, "[2, 3, 4]", "[4]", NULL, 0, NULL, 0, "[2, 3]", "matmul: batch by vector");
  product(m, "[4, 5]", "[4, 3]", NULL, 0, NULL, 0,
          "matmul: X has 5 columns but Y has 4 rows ([4, 5] x [4, 3])", "matmul: mismatch");
  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, "[-1, 8]", 1);
  decl(f.b, "y", PD_FP32, "[8, 3]");
  expect_shape(&f, add_op(&f, m, "X=x Y=y", "Out=o"), "o", "[-1, 3]", "matmul of a sequence");
  is_int(lod_of(&f, "o"), 1, "matmul keeps X's LoD");
  expect_shape(&f, add_op(&f, "matmul_v2", "X=x Y=y", "Out=o2"), "o2", "[-1, 3]", "matmul_v2 too");
  is_int(lod_of(&f, "o2"), 0, "matmul_v2 does not");
  fx_free(&f);
}

/* reduce `type` over X of shape xs with dim (n entries; n < 0: not set), keep_dim, reduce_all. */
static void reduce(const char *type, const char *xs, int n, const int32_t *dim, bool keep, bool all,
                   const char *want, const char *what) {
  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, xs, 1);
  pd_op_desc *op = add_op(&f, type, "X=x", "Out=out");
  if (n >= 0) pd_op_set_attr_ints(op, "dim", n, dim);
  if (keep) pd_op_set_attr_bool(op, "keep_dim", true);
  if (all) pd_op_set_attr_bool(op, "reduce_all", true);
  if (want[0] == '[' || want[0] == '?') expect_shape(&f, op, "out", want, what);
  else expect_error(&f, op, PD_EINVAL, want, what);
  fx_free(&f);
}

static void test_reduce(void) {
  static const int32_t d0[] = {0}, d1[] = {1}, dm1[] = {-1}, d01[] = {0, 1}, d02[] = {0, 2},
                       d2[] = {2};
  reduce("reduce_sum", "[-1, 10]", -1, NULL, false, false, "[10]", "reduce_sum: default dim 0");
  reduce("reduce_sum", "[-1, 10]", 1, d1, false, false, "[-1]", "reduce_sum: dim 1");
  reduce("reduce_mean", "[-1, 10]", 1, dm1, false, false, "[-1]", "reduce_mean: dim -1");
  reduce("reduce_max", "[-1, 10]", 1, d1, true, false, "[-1, 1]", "reduce_max: keep_dim");
  reduce("reduce_min", "[-1, 10]", 1, d0, false, true, "[1]", "reduce_min: reduce_all");
  reduce("reduce_prod", "[-1, 10]", -1, NULL, true, true, "[1, 1]", "reduce_prod: reduce_all, keep_dim");
  reduce("reduce_sum", "[-1, 10]", 2, d01, false, false, "[1]", "reduce_sum: every dim listed");
  reduce("reduce_sum", "[2, 3, 4]", 2, d02, false, false, "[3]", "reduce_sum: two of three dims");
  reduce("reduce_sum", "[2, 3, 4]", 0, NULL, false, false, "[1]", "reduce_sum: an empty dim list");
  reduce("reduce_sum", "[-1, 10]", 1, d2, false, false,
         "reduce_sum: dim 2 is out of range for X [-1, 10] (expected -2 to 1)", "reduce: bad dim");
  reduce("reduce_sum", "?", 1, d1, false, false, "?", "reduce: unknown rank");

  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, "[-1, 10]", 1);
  decl(f.b, "n", PD_INT64, "[-1, 10]");
  pd_op_desc *op = add_op(&f, "reduce_sum", "X=x", "Out=o");
  pd_op_set_attr_ints(op, "dim", 1, d1);
  expect_shape(&f, op, "o", "[-1]", "reduce_sum over dim 1");
  is_int(lod_of(&f, "o"), 1, "reducing another dim than 0 keeps the LoD");
  expect_shape(&f, add_op(&f, "reduce_sum", "X=x", "Out=o2"), "o2", "[10]", "reduce_sum over dim 0");
  is_int(lod_of(&f, "o2"), 0, "reducing dim 0 drops the LoD");
  op = add_op(&f, "reduce_sum", "X=x", "Out=o3");
  pd_op_set_attr_int(op, "out_dtype", PD_FP64);
  expect_shape(&f, op, "o3", "[10]", "reduce_sum with out_dtype");
  is_int(dtype_of(&f, "o3"), PD_FP64, "out_dtype sets the dtype");
  op = add_op(&f, "reduce_sum", "X=x", "Out=o3");
  pd_op_set_attr_int(op, "out_dtype", 42);
  expect_error(&f, op, PD_EINVAL, "reduce_sum: out_dtype 42 is not a data type", "bad out_dtype");
  expect_error(&f, add_op(&f, "reduce_mean", "X=n", "Out=o4"), PD_ETYPE,
               "reduce_mean: X must be float16, float32 or float64, got int64",
               "reduce_mean needs floating point");
  expect_shape(&f, add_op(&f, "reduce_max", "X=n", "Out=o5"), "o5", "[10]", "reduce_max of int64");
  expect_shape(&f, add_op(&f, "mean", "X=x", "Out=m"), "m", "[1]", "mean gives [1]");
  ok(dtype_of(&f, "m") == PD_FP32 && lod_of(&f, "m") == 0, "mean: X's dtype, no LoD");
  fx_free(&f);
}

static void test_arg_max_top_k(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, "[-1, 10]");
  decl(f.b, "v", PD_FP32, "[10]");
  decl(f.b, "u", PD_FP32, "[-1, -1]");
  decl(f.b, "k", PD_INT32, "[1]");
  pd_op_desc *op = add_op(&f, "arg_max", "X=x", "Out=a");
  pd_op_set_attr_long(op, "axis", 1);
  expect_shape(&f, op, "a", "[-1]", "arg_max over the last axis");
  is_int(dtype_of(&f, "a"), PD_INT64, "arg_max gives int64");
  op = add_op(&f, "arg_max", "X=x", "Out=a");
  pd_op_set_attr_long(op, "axis", -1);
  pd_op_set_attr_bool(op, "keepdims", true);
  pd_op_set_attr_int(op, "dtype", PD_INT32);
  expect_shape(&f, op, "a", "[-1, 1]", "arg_max keepdims");
  is_int(dtype_of(&f, "a"), PD_INT32, "arg_max dtype int32");
  op = add_op(&f, "arg_max", "X=x", "Out=a");
  pd_op_set_attr_long(op, "axis", 0);
  pd_op_set_attr_bool(op, "flatten", true);
  expect_shape(&f, op, "a", "[1]", "arg_max flatten");
  op = add_op(&f, "arg_max", "X=v", "Out=a");
  pd_op_set_attr_long(op, "axis", 0);
  expect_shape(&f, op, "a", "[1]", "arg_max of a vector");
  op = add_op(&f, "arg_max", "X=x", "Out=a");
  pd_op_set_attr_long(op, "axis", 2);
  expect_error(&f, op, PD_EINVAL, "arg_max: axis 2 is out of range for X [-1, 10] (expected -2 to 1)",
               "arg_max: bad axis");
  op = add_op(&f, "arg_max", "X=x", "Out=a");
  pd_op_set_attr_long(op, "axis", 1);
  pd_op_set_attr_int(op, "dtype", PD_FP32);
  expect_error(&f, op, PD_EINVAL, "arg_max: dtype must be int32 (2) or int64 (3), got 5",
               "arg_max: bad dtype");
  expect_error(&f, add_op(&f, "arg_max", "X=x", "Out=a"), PD_EINVAL,
               "arg_max: attribute axis is required", "arg_max needs an axis");

  op = add_op(&f, "top_k", "X=x", "Out=tv Indices=ti");
  pd_op_set_attr_int(op, "k", 5);
  expect_shape(&f, op, "tv", "[-1, 5]", "top_k values");
  ok(strcmp(shape_of(&f, "ti"), "[-1, 5]") == 0 && dtype_of(&f, "ti") == PD_INT64 &&
         dtype_of(&f, "tv") == PD_FP32,
     "top_k indices: [-1, 5] int64");
  op = add_op(&f, "top_k", "X=x", "Out=tv Indices=ti");
  pd_op_set_attr_int(op, "k", 20);
  expect_error(&f, op, PD_ESHAPE, "top_k: k 20 is larger than the last dim of X [-1, 10]",
               "top_k: k too large");
  op = add_op(&f, "top_k", "X=x", "Out=tv Indices=ti");
  pd_op_set_attr_int(op, "k", 0);
  expect_error(&f, op, PD_EINVAL, "top_k: k must be at least 1, got 0", "top_k: k 0");
  op = add_op(&f, "top_k", "X=u", "Out=tv Indices=ti");
  pd_op_set_attr_int(op, "k", 3);
  expect_shape(&f, op, "tv", "[-1, 3]", "top_k of an unknown last dim");
  expect_shape(&f, add_op(&f, "top_k", "X=x K=k", "Out=tv Indices=ti"), "ti", "[-1, -1]",
               "top_k with k given at run time");
  fx_free(&f);
}

/* fc: Input [.., K] by W [K, N] plus Bias [N] or [1, N]; what it does not support. */
static void fc_case(const char *xs, const char *ws, const char *bs, int ncd, const char *act,
                    const char *want, const char *what) {
  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, xs, 1);
  decl(f.b, "w", PD_FP32, ws);
  if (bs) decl(f.b, "b", PD_FP32, bs);
  pd_op_desc *op = add_op(&f, "fc", bs ? "Input=x W=w Bias=b" : "Input=x W=w", "Out=out");
  pd_op_set_attr_int(op, "in_num_col_dims", ncd);
  if (act) pd_op_set_attr_string(op, "activation_type", act);
  if (want[0] == '[') expect_shape(&f, op, "out", want, what);
  else expect_error(&f, op, act ? PD_EUNSUPPORTED : strstr(want, "split") ? PD_EINVAL : PD_ESHAPE,
                    want, what);
  fx_free(&f);
}

static void test_fc(void) {
  fc_case("[-1, 32]", "[32, 256]", "[256]", 1, NULL, "[-1, 256]", "fc: a batch by a matrix");
  fc_case("[-1, 5, 32]", "[32, 8]", "[1, 8]", 2, NULL, "[-1, 5, 8]",
          "fc: in_num_col_dims 2, a [1, N] bias");
  fc_case("[-1, 4, 8]", "[32, 8]", NULL, 1, NULL, "[-1, 8]", "fc: flattened, no bias");
  fc_case("[-1, 32]", "[30, 8]", "[8]", 1, NULL,
          "fc: Input has 32 columns but W has 30 rows ([-1, 32] x [30, 8])", "fc: mismatch");
  fc_case("[-1, 32]", "[32, 8]", "[7]", 1, NULL, "fc: Bias [7] must be [N] or [1, N] for W [32, 8]",
          "fc: a bias of the wrong size");
  fc_case("[-1, 32]", "[32, 8]", "[8]", 2, NULL,
          "fc: in_num_col_dims 2 does not split Input [-1, 32] in two (expected 1 to 1)",
          "fc: in_num_col_dims out of range");
  fc_case("[-1, 32]", "[32, 8]", "[8]", 1, "relu",
          "fc: activation_type \"relu\" is not supported (expected \"\": apply the activation as an "
          "op of its own)", "fc: activation_type is refused");
}

int main(void) {
  test_mul();
  test_fc();
  test_matmul();
  test_matmul_fluid();
  test_reduce();
  test_arg_max_top_k();
  return tap_done();
}
