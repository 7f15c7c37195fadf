/* test_infer_tensor.c -- shape inference of the ops that create or rearrange tensors: feed,
 * fetch, fill_constant and the random initialisers, concat, split, reshape2 (0 and -1 entries),
 * transpose2, and the embedding lookups. */
#include "config.h"

#include "tests/vm/ops/fixture.h"

static void test_feed_fetch(void) {
  fx f;
  fx_init(&f);
  pd_var_desc *feed = pd_block_var(f.b, "feed");
  pd_var_desc *fetch = pd_block_var(f.b, "fetch");
  if (!feed || !fetch) bail("out of memory");
  feed->type = PD_VAR_FEED_MINIBATCH;
  fetch->type = PD_VAR_FETCH_LIST;
  decl(f.b, "images", PD_FP32, "[-1, 784]");
  pd_op_desc *op = add_op(&f, "feed", "X=feed", "Out=images");
  pd_op_set_attr_int(op, "col", 0);
  expect_shape(&f, op, "images", "[-1, 784]", "feed keeps the declared shape");
  op = add_op(&f, "fetch", "X=images", "Out=fetch");
  pd_op_set_attr_int(op, "col", 0);
  pd_error_clear(&f.err);
  is_int(prep(&f, op), PD_OK, "fetch");
  expect_error(&f, add_op(&f, "feed", "X=feed", "Out=images"), PD_EINVAL,
               "feed: attribute col is required", "feed needs col");
  fx_free(&f);
}

static void test_fill(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "s0", PD_INT64, "[1]");
  decl(f.b, "st", PD_INT64, "[2]");
  decl(f.b, "st2", PD_INT64, "[2, 2]");
  pd_op_desc *op = add_op(&f, "fill_constant", "", "Out=c");
  pd_op_set_attr_longs(op, "shape", 2, (const int64_t[]){2, 3});
  pd_op_set_attr_int(op, "dtype", PD_INT64);
  expect_shape(&f, op, "c", "[2, 3]", "fill_constant: shape");
  is_int(dtype_of(&f, "c"), PD_INT64, "fill_constant: dtype");
  expect_shape(&f, add_op(&f, "fill_constant", "", "Out=c0"), "c0", "[]", "fill_constant: rank 0");
  op = add_op(&f, "fill_constant", "", "Out=c");
  pd_op_set_attr_longs(op, "shape", 2, (const int64_t[]){2, -1});
  expect_error(&f, op, PD_EINVAL, "fill_constant: shape [2, -1] has a negative dim",
               "fill_constant: a negative dim");
  op = add_op(&f, "fill_constant", "", "Out=c");
  pd_op_set_attr_int(op, "dtype", 42);
  expect_error(&f, op, PD_EINVAL, "fill_constant: dtype 42 is not a data type", "fill_constant: bad dtype");
  expect_shape(&f, add_op(&f, "fill_constant", "ShapeTensorList=s0,s0,s0", "Out=c"), "c",
               "[-1, -1, -1]", "fill_constant: ShapeTensorList gives the rank");
  expect_shape(&f, add_op(&f, "fill_constant", "ShapeTensor=st", "Out=c"), "c", "[-1, -1]",
               "fill_constant: ShapeTensor gives the rank");
  expect_error(&f, add_op(&f, "fill_constant", "ShapeTensor=st2", "Out=c"), PD_ESHAPE,
               "fill_constant: ShapeTensor must have 1 dim, got [2, 2]", "fill_constant: bad ShapeTensor");

  op = add_op(&f, "uniform_random", "", "Out=w");
  pd_op_set_attr_longs(op, "shape", 2, (const int64_t[]){784, 256});
  expect_shape(&f, op, "w", "[784, 256]", "uniform_random");
  is_int(dtype_of(&f, "w"), PD_FP32, "uniform_random: float32 by default");
  op = add_op(&f, "uniform_random", "", "Out=w");
  pd_op_set_attr_longs(op, "shape", 1, (const int64_t[]){4});
  pd_op_set_attr_int(op, "dtype", PD_INT64);
  expect_error(&f, op, PD_ETYPE, "uniform_random: dtype must be float16, float32 or float64, got int64",
               "uniform_random: integer dtype");
  op = add_op(&f, "uniform_random", "", "Out=w");
  pd_op_set_attr_longs(op, "shape", 1, (const int64_t[]){4});
  pd_op_set_attr_float(op, "min", 1.0f);
  pd_op_set_attr_float(op, "max", 0.0f);
  expect_error(&f, op, PD_EINVAL, "uniform_random: min (1) must be less than max (0)",
               "uniform_random: empty range");
  expect_error(&f, add_op(&f, "uniform_random", "", "Out=w"), PD_EINVAL,
               "uniform_random: shape is empty", "uniform_random: no shape");
  op = add_op(&f, "gaussian_random", "", "Out=g");
  pd_op_set_attr_longs(op, "shape", 1, (const int64_t[]){3});
  pd_op_set_attr_int(op, "dtype", PD_FP64);
  expect_shape(&f, op, "g", "[3]", "gaussian_random");
  is_int(dtype_of(&f, "g"), PD_FP64, "gaussian_random: float64");
  fx_free(&f);
}

/* concat of the given shapes ("[2, 3]|[4, 3]") along axis. */
static void concat(const char *shapes, int axis, const char *want, const char *what) {
  fx f;
  fx_init(&f);
  char buf[256], ins[256] = "X=";
  snprintf(buf, sizeof buf, "%s", shapes);
  int i = 0;
  for (char *save = NULL, *s = strtok_r(buf, "|", &save); s; s = strtok_r(NULL, "|", &save), i++) {
    char name[16];
    snprintf(name, sizeof name, "c%d", i);
    decl(f.b, name, PD_FP32, s);
    snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%s%s", i ? "," : "", name);
  }
  pd_op_desc *op = add_op(&f, "concat", ins, "Out=out");
  pd_op_set_attr_int(op, "axis", axis);
  if (want[0] == '[') expect_shape(&f, op, "out", want, what);
  else expect_error(&f, op, strstr(want, "range") ? PD_EINVAL : PD_ESHAPE, want, what);
  fx_free(&f);
}

static void test_concat(void) {
  concat("[-1, 3]|[-1, 4]", 1, "[-1, 7]", "concat along the features");
  concat("[2, 3]|[4, 3]|[1, 3]", 0, "[7, 3]", "concat of three along the batch");
  concat("[-1, 3]|[5, 3]", 0, "[-1, 3]", "concat with an unknown batch");
  concat("[2, 3]|[2, 4]", -1, "[2, 7]", "concat along axis -1");
  concat("[-1, -1]|[2, 3]", 1, "[2, -1]", "concat: unknown dims take known ones");
  concat("[9223372036854775807, 3]|[1, 3]", 0, "[-1, 3]", "concat: a sum past int64 stays unknown");
  concat("[2, 3]|[2, 4]", 0,
         "concat: cannot concatenate [2, 3] and [2, 4] along axis 0: they differ in dim 1",
         "concat: mismatch off the axis");
  concat("[2, 3]|[2, 3, 1]", 0, "concat: cannot concatenate [2, 3] and [2, 3, 1]: X[1] has 3 dims but X[0] has 2",
         "concat: ranks differ");
  concat("[2, 3]|[2, 3]", 2, "concat: axis 2 is out of range for X[0] [2, 3] (expected -2 to 1)",
         "concat: bad axis");

  fx f;
  fx_init(&f);
  decl_lod(f.b, "a", PD_FP32, "[2, 3]", 1);
  decl(f.b, "b", PD_INT64, "[2, 3]");
  decl(f.b, "b2", PD_FP32, "[2, 3]");
  decl(f.b, "ax", PD_INT32, "[1]");
  expect_error(&f, add_op(&f, "concat", "X=a,b", "Out=o"), PD_ETYPE,
               "concat: X[1] has dtype int64 but X[0] has dtype float32", "concat: dtype mismatch");
  expect_shape(&f, add_op(&f, "concat", "X=a,b2 AxisTensor=ax", "Out=o"), "o", "[-1, -1]",
               "concat: axis given at run time");
  expect_shape(&f, add_op(&f, "concat", "X=a,b2", "Out=o"), "o", "[4, 3]", "concat");
  is_int(lod_of(&f, "o"), 1, "concat keeps X[0]'s LoD");
  fx_free(&f);
}

/* split X (xs) with num or sections (nsec < 0: not set) into nout outputs o0, o1, ...; want is
 * the shapes of the outputs joined by "|", or an error message. */
static void split(const char *xs, int axis, int num, int nsec, const int32_t *sec, int nout,
                  const char *want, const char *what) {
  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, xs, 1);
  char outs[64] = "Out=";
  for (int i = 0; i < nout; i++)
    snprintf(outs + strlen(outs), sizeof outs - strlen(outs), "%so%d", i ? "," : "", i);
  pd_op_desc *op = add_op(&f, "split", "X=x", outs);
  pd_op_set_attr_int(op, "axis", axis);
  if (num) pd_op_set_attr_int(op, "num", num);
  if (nsec >= 0) pd_op_set_attr_ints(op, "sections", nsec, sec);
  if (want[0] != '[') {
    expect_error(&f, op, strstr(want, "add up") || strstr(want, "equal parts") ? PD_ESHAPE : PD_EINVAL,
                 want, what);
    fx_free(&f);
    return;
  }
  pd_status st = prep(&f, op);
  char got[256] = "";
  for (int i = 0; i < nout && !st; i++) {
    char name[16];
    snprintf(name, sizeof name, "o%d", i);
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "|" : "", shape_of(&f, name));
  }
  is_str(st ? f.err.msg : got, want, "%s", what);
  fx_free(&f);
}

static void test_split(void) {
  static const int32_t s37[] = {3, 7}, s3m[] = {3, -1}, s34[] = {3, 4}, s3mm[] = {3, -1, -1},
                       s12m[] = {12, -1}, s123[] = {1, 2, 3}, sneg[] = {3, -2};
  split("[4, 10]", 1, 2, -1, NULL, 2, "[4, 5]|[4, 5]", "split into 2 equal parts");
  split("[4, 10]", 1, 3, -1, NULL, 3, "split: dim 1 of X [4, 10] (10) does not split into 3 equal parts",
        "split: uneven num");
  split("[4, 10]", -1, 0, 2, s37, 2, "[4, 3]|[4, 7]", "split by sections");
  split("[4, 10]", 1, 0, 2, s3m, 2, "[4, 3]|[4, 7]", "split: a -1 section takes the rest");
  split("[4, 10]", 1, 0, 2, s34, 2, "split: sections [3, 4] add up to 7 but dim 1 of X [4, 10] is 10",
        "split: sections too short");
  split("[4, 10]", 1, 0, 3, s3mm, 3, "split: sections [3, -1, -1] have more than one -1",
        "split: two -1 sections");
  split("[4, 10]", 1, 0, 2, sneg, 2, "split: sections [3, -2] have a negative size",
        "split: a negative section");
  split("[4, 10]", 1, 0, 2, s12m, 2, "split: sections [12, -1] add up to more than dim 1 of X [4, 10] (10)",
        "split: sections too long");
  split("[4, 10]", 1, 2, -1, NULL, 3, "split: 2 parts (num) but 3 outputs", "split: num vs outputs");
  split("[4, 10]", 1, 0, 3, s123, 2, "split: 3 sections but 2 outputs", "split: sections vs outputs");
  split("[4, 10]", 1, 0, -1, NULL, 2, "split: give num or sections", "split: neither num nor sections");
  split("[4, 10]", 1, 2, 2, s37, 2, "split: give num or sections, not both", "split: both");
  split("[-1, 10]", 0, 2, -1, NULL, 2, "[-1, 10]|[-1, 10]", "split an unknown dim");
  split("[6, -1]", 1, 0, 2, s3m, 2, "[6, 3]|[6, -1]", "split an unknown dim by sections");

  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, "[4, 10]", 1);
  decl(f.b, "ax", PD_INT32, "[1]");
  pd_op_desc *op = add_op(&f, "split", "X=x", "Out=a,b");
  pd_op_set_attr_int(op, "axis", 1);
  pd_op_set_attr_int(op, "num", 2);
  expect_shape(&f, op, "b", "[4, 5]", "split along dim 1");
  is_int(lod_of(&f, "b"), 1, "split along dim 1 keeps the LoD");
  op = add_op(&f, "split", "X=x", "Out=a,b");
  pd_op_set_attr_int(op, "num", 2);
  expect_shape(&f, op, "b", "[2, 10]", "split along dim 0");
  is_int(lod_of(&f, "b"), 0, "split along dim 0 drops the LoD");
  op = add_op(&f, "split", "X=x AxisTensor=ax", "Out=a,b");
  pd_op_set_attr_int(op, "num", 2);
  expect_shape(&f, op, "a", "[-1, -1]", "split along an axis given at run time");
  fx_free(&f);
}

/* reshape2 of X (xs, LoD 1) to shape (n entries). */
static void reshape(const char *xs, int n, const int32_t *shape, const char *want, const char *what) {
  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, xs, 1);
  pd_op_desc *op = add_op(&f, "reshape2", "X=x", "Out=out XShape=xs");
  pd_op_set_attr_ints(op, "shape", n, shape);
  if (want[0] == '[') expect_shape(&f, op, "out", want, what);
  else expect_error(&f, op, strstr(want, "cannot") ? PD_ESHAPE : PD_EINVAL, want, what);
  fx_free(&f);
}

static void test_reshape_transpose(void) {
  reshape("[-1, 784]", 3, (const int32_t[]){-1, 28, 28}, "[-1, 28, 28]", "reshape a batch of images");
  reshape("[-1, 28, 28]", 2, (const int32_t[]){0, 784}, "[-1, 784]", "reshape: 0 copies a dim");
  reshape("[6, 4]", 2, (const int32_t[]){3, -1}, "[3, 8]", "reshape: -1 takes the rest");
  reshape("[6, 4]", 3, (const int32_t[]){0, 2, -1}, "[6, 2, 2]", "reshape: 0 and -1");
  reshape("[6, 4]", 2, (const int32_t[]){5, -1}, "reshape2: cannot reshape X [6, 4] (24 elements) to [5, -1]",
          "reshape: -1 does not divide");
  reshape("[6, 4]", 2, (const int32_t[]){4, 5},
          "reshape2: cannot reshape X [6, 4] (24 elements) to [4, 5] (20 elements)",
          "reshape: element counts differ");
  reshape("[-1, 6]", 2, (const int32_t[]){4, 5}, "[4, 5]", "reshape: no false error with unknown dims");
  reshape("[4294967296, 4294967296]", 2, (const int32_t[]){-1, 2}, "[-1, 2]",
          "reshape: an element count past int64 stays unknown");
  reshape("[-1, 6]", 2, (const int32_t[]){-1, 3}, "[-1, 3]", "reshape: -1 with an unknown input");
  reshape("[6, 4]", 2, (const int32_t[]){-1, -1}, "reshape2: shape [-1, -1] has more than one -1",
          "reshape: two -1");
  reshape("[6, 4]", 2, (const int32_t[]){2, -3}, "reshape2: shape [2, -3] has a negative dim other than -1",
          "reshape: a negative dim");
  reshape("[2, 3]", 3, (const int32_t[]){0, 0, 0},
          "reshape2: shape [0, 0, 0] copies dim 2 (a 0) but X [2, 3] has only 2 dims",
          "reshape: 0 beyond X's dims");

  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, "[-1, 784]", 1);
  decl(f.b, "t", PD_FP32, "[2, 3, 4]");
  decl(f.b, "d", PD_INT32, "[1]");
  decl(f.b, "sh", PD_INT32, "[4]");
  pd_op_desc *op = add_op(&f, "reshape2", "X=x", "Out=r XShape=xs");
  pd_op_set_attr_ints(op, "shape", 3, (const int32_t[]){-1, 28, 28});
  expect_shape(&f, op, "xs", "[0, -1, 784]", "reshape2's XShape is [0] + X's dims");
  is_int(lod_of(&f, "r"), 1, "reshape2 keeps the LoD when dim 0 is kept");
  op = add_op(&f, "reshape2", "X=x", "Out=r");
  pd_op_set_attr_ints(op, "shape", 1, (const int32_t[]){-1});
  expect_shape(&f, op, "r", "[-1]", "reshape2 without XShape");
  expect_error(&f, add_op(&f, "reshape2", "X=x", "Out=r"), PD_EINVAL, "reshape2: shape is empty",
               "reshape2 without a shape");
  expect_shape(&f, add_op(&f, "reshape2", "X=x ShapeTensor=d,d,d", "Out=r"), "r", "[-1, -1, -1]",
               "reshape2: ShapeTensor gives the rank");
  expect_shape(&f, add_op(&f, "reshape2", "X=x Shape=sh", "Out=r"), "r", "[-1, -1, -1, -1]",
               "reshape2: Shape gives the rank");

  op = add_op(&f, "transpose2", "X=t", "Out=tt XShape=txs");
  pd_op_set_attr_ints(op, "axis", 3, (const int32_t[]){2, 0, 1});
  expect_shape(&f, op, "tt", "[4, 2, 3]", "transpose2");
  is_str(shape_of(&f, "txs"), "[0, 2, 3, 4]", "transpose2's XShape");
  op = add_op(&f, "transpose2", "X=t", "Out=tt");
  pd_op_set_attr_ints(op, "axis", 3, (const int32_t[]){0, 0, 1});
  expect_error(&f, op, PD_EINVAL, "transpose2: axis [0, 0, 1] is not a permutation of the 3 dims of X [2, 3, 4]",
               "transpose2: a repeated axis");
  op = add_op(&f, "transpose2", "X=t", "Out=tt");
  pd_op_set_attr_ints(op, "axis", 2, (const int32_t[]){1, 0});
  expect_error(&f, op, PD_EINVAL, "transpose2: axis [1, 0] is not a permutation of the 3 dims of X [2, 3, 4]",
               "transpose2: too few axes");
  expect_error(&f, add_op(&f, "transpose2", "X=t", "Out=tt"), PD_EINVAL,
               "transpose2: attribute axis is required", "transpose2 needs axis");
  fx_free(&f);
}

static void test_lookup_table(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "w", PD_FP32, "[1000, 64]");
  decl(f.b, "w1", PD_FP32, "[1000]");
  decl_lod(f.b, "ids", PD_INT64, "[-1, 20]", 1);
  decl_lod(f.b, "ids1", PD_INT64, "[-1, 1]", 1);
  decl(f.b, "fids", PD_FP32, "[-1, 1]");
  expect_shape(&f, add_op(&f, "lookup_table_v2", "W=w Ids=ids", "Out=e"), "e", "[-1, 20, 64]",
               "lookup_table_v2 adds the width");
  ok(dtype_of(&f, "e") == PD_FP32 && lod_of(&f, "e") == 1, "embeddings: W's dtype, Ids' LoD");
  expect_shape(&f, add_op(&f, "lookup_table", "W=w Ids=ids1", "Out=e"), "e", "[-1, 64]",
               "lookup_table replaces the trailing 1");
  expect_error(&f, add_op(&f, "lookup_table", "W=w Ids=ids", "Out=e"), PD_ESHAPE,
               "lookup_table: Ids [-1, 20] must end in a dim of 1 (lookup_table_v2 takes any shape)",
               "lookup_table: Ids without a trailing 1");
  expect_error(&f, add_op(&f, "lookup_table_v2", "W=w Ids=fids", "Out=e"), PD_ETYPE,
               "lookup_table_v2: Ids must be int64 or int32, got float32", "lookup_table: float Ids");
  expect_error(&f, add_op(&f, "lookup_table_v2", "W=w1 Ids=ids", "Out=e"), PD_ESHAPE,
               "lookup_table_v2: W must have 2 dims [vocabulary, width], got [1000]",
               "lookup_table: a 1-D table");
  fx_free(&f);
}

int main(void) {
  test_feed_fetch();
  test_fill();
  test_concat();
  test_split();
  test_reshape_transpose();
  test_lookup_table();
  return tap_done();
}
