/* test_kern_tensor.c -- kernels of the ops that make, copy and rearrange tensors (vm/ops/kern_tensor.c):
 * feed/fetch through FEED_MINIBATCH / FETCH_LIST vars, fill_constant, fill_zeros_like, assign,
 * assign_value, uniform_random / gaussian_random (reproducibility and moments), concat, split,
 * reshape2, transpose2, increment, lod_reset, load_combine (a parameters file save wrote, read
 * back into its vars in order; a count, a file or a path that is wrong); run through the executor and checked against
 * values computed here, and the gradients of assign, concat, split, reshape2, transpose2 and
 * lod_reset against finite differences. */
#include "config.h"

#include "tests/vm/ops/gradcheck.h"

#include <stdlib.h>
#include <unistd.h>

#include "vm/ir/params.h"


/* A sequence 0, 1, 2, ... scaled and shifted, as doubles and floats. */
static void ramp(double *d, int n, double a, double b) {
  for (int i = 0; i < n; i++) d[i] = a * i + b;
}
static void ramp_f(float *d, int n, double a, double b) {
  for (int i = 0; i < n; i++) d[i] = (float)(a * i + b);
}

static bool has_dims(const pd_tensor *t, int nd, const int64_t *d) {
  if (!t || t->ndims != nd) return false;
  for (int i = 0; i < nd; i++)
    if (t->dims[i] != d[i]) return false;
  return true;
}

static bool lod_is(const pd_tensor *t, int n, const int64_t *offs) {
  if (!t || t->nlod < 1 || t->lod[t->nlod - 1].n != n) return false;
  for (int i = 0; i < n; i++)
    if (t->lod[t->nlod - 1].offsets[i] != offs[i]) return false;
  return true;
}

/* ---------------------------------------------------------------- feed / fetch */

static void test_feed_fetch(void) {
  rt r;
  rt_init(&r);
  pd_var_desc *fd = pd_block_var(r.f.b, "feed"), *ft = pd_block_var(r.f.b, "fetch");
  if (!fd || !ft) bail("out of memory");
  fd->type = PD_VAR_FEED_MINIBATCH;
  ft->type = PD_VAR_FETCH_LIST;
  pd_variable *fv = pd_scope_var(r.scope, "feed");
  if (!fv || pd_var_set_type(fv, PD_VAR_FEED_MINIBATCH)) bail("out of memory");
  pd_tensor_array *a = pd_var_tensor_array(fv);
  pd_tensor *t0 = pd_tensor_array_push(a), *t1 = pd_tensor_array_push(a);
  if (!t0 || !t1) bail("out of memory");
  float v0[] = {9}, v1[] = {1, 2, 3, 4, 5, 6};
  pd_tensor_set_data(t0, PD_FP32, 1, (int64_t[]){1}, v0);
  pd_tensor_set_data(t1, PD_FP32, 2, (int64_t[]){3, 2}, v1);
  int64_t lod[] = {0, 1, 3}, lodn = 3;
  const int64_t *lodp = lod;
  pd_tensor_set_lod(t1, 1, &lodp, &lodn);
  decl_lod(r.f.b, "img", PD_FP32, "[-1, 2]", 1);
  pd_op_set_attr_int(rt_op(&r, "feed", "X=feed", "Out=img"), "col", 1);
  pd_op_set_attr_int(rt_op(&r, "fetch", "X=img", "Out=fetch"), "col", 2);
  if (rt_ok(&r, "feed col 1, fetch into col 2")) {
    const pd_tensor *img = rt_get(&r, "img");
    rt_expect(img, 6, ((double[]){1, 2, 3, 4, 5, 6}), 0, "feed: Out holds X[1]");
    ok(img && img->storage == t1->storage, "feed: Out shares the feed tensor's storage");
    ok(lod_is(img, 3, lod), "feed: Out keeps the LoD");
    pd_variable *fo = pd_scope_find_var(r.scope, "fetch");
    ok(fo && fo->type == PD_VAR_FETCH_LIST, "fetch: Out is a FETCH_LIST");
    const pd_tensor_array *fa = fo ? pd_var_tensor_array(fo) : NULL;
    ok(fa && fa->n == 3, "fetch: the list grew to col + 1 entries");
    const pd_tensor *got = fa && fa->n == 3 ? fa->items[2] : NULL;
    rt_expect(got, 6, ((double[]){1, 2, 3, 4, 5, 6}), 0, "fetch: col 2 holds the value");
    ok(got && got->storage != img->storage, "fetch: a deep copy");
    ok(got && has_dims(got, 2, (int64_t[]){3, 2}) && lod_is(got, 3, lod), "fetch: shape and LoD");
    ok(fa && fa->n == 3 && !pd_tensor_initialized(fa->items[0]), "fetch: other cols stay empty");
  }
  rt_free(&r);

  rt_init(&r);
  fd = pd_block_var(r.f.b, "feed");
  fd->type = PD_VAR_FEED_MINIBATCH;
  fv = pd_scope_var(r.scope, "feed");
  pd_var_set_type(fv, PD_VAR_FEED_MINIBATCH);
  pd_tensor_set_data(pd_tensor_array_push(pd_var_tensor_array(fv)), PD_FP32, 1, (int64_t[]){1},
                     v0);
  decl(r.f.b, "img", PD_FP32, "[1]");
  pd_op_set_attr_int(rt_op(&r, "feed", "X=feed", "Out=img"), "col", 5);
  rt_fails(&r, PD_EINVAL, "feed: col 5 is out of range: feed list 'feed' holds 1 tensor",
           "feed: col out of range");
  rt_free(&r);
}

/* ---------------------------------------------------------------- fill_constant & co */

static void test_fill_constant(void) {
  rt r;
  rt_init(&r);
  pd_op_desc *op = rt_op(&r, "fill_constant", "", "Out=c");
  pd_op_set_attr_longs(op, "shape", 2, (const int64_t[]){2, 3});
  pd_op_set_attr_float(op, "value", 2.5f);
  if (rt_ok(&r, "fill_constant fp32 [2, 3]")) {
    const pd_tensor *c = rt_get(&r, "c");
    rt_expect(c, 6, ((double[]){2.5, 2.5, 2.5, 2.5, 2.5, 2.5}), 0, "fill_constant: values");
    ok(c && c->dtype == PD_FP32 && has_dims(c, 2, (int64_t[]){2, 3}), "fill_constant: dtype, shape");
  }
  rt_free(&r);

  rt_init(&r);
  op = rt_op(&r, "fill_constant", "", "Out=c");
  pd_op_set_attr_longs(op, "shape", 1, (const int64_t[]){2});
  pd_op_set_attr_int(op, "dtype", PD_INT64);
  pd_op_set_attr_string(op, "str_value", "9007199254740993");
  if (rt_ok(&r, "fill_constant int64 from str_value")) {
    const pd_tensor *c = rt_get(&r, "c");
    ok(c && c->dtype == PD_INT64 && PD_TENSOR_I64(c)[0] == 9007199254740993LL &&
           PD_TENSOR_I64(c)[1] == 9007199254740993LL,
       "fill_constant: int64 str_value is exact past 2^53");
  }
  rt_free(&r);

  rt_init(&r);
  op = rt_op(&r, "fill_constant", "", "Out=c");
  pd_op_set_attr_longs(op, "shape", 1, (const int64_t[]){3});
  pd_op_set_attr_int(op, "dtype", PD_FP64);
  pd_op_set_attr_string(op, "str_value", "-inf");
  if (rt_ok(&r, "fill_constant str_value -inf")) {
    const pd_tensor *c = rt_get(&r, "c");
    ok(c && c->dtype == PD_FP64 && isinf(PD_TENSOR_F64(c)[2]) && PD_TENSOR_F64(c)[2] < 0,
       "fill_constant: -inf");
  }
  rt_free(&r);

  rt_init(&r); /* ShapeTensor (int32) and ValueTensor */
  rt_in(&r, "st", PD_INT32, "[2]", (int32_t[]){3, 1});
  rt_in_f64(&r, "v", "[1]", (double[]){-4});
  op = rt_op(&r, "fill_constant", "ShapeTensor=st ValueTensor=v", "Out=c");
  pd_op_set_attr_int(op, "dtype", PD_INT32);
  if (rt_ok(&r, "fill_constant with ShapeTensor and ValueTensor")) {
    const pd_tensor *c = rt_get(&r, "c");
    ok(c && c->dtype == PD_INT32 && has_dims(c, 2, (int64_t[]){3, 1}),
       "fill_constant: shape from ShapeTensor");
    rt_expect(c, 3, ((double[]){-4, -4, -4}), 0, "fill_constant: value from ValueTensor");
  }
  rt_free(&r);

  rt_init(&r); /* ShapeTensorList (int64), bool */
  rt_in_i64(&r, "d0", "[1]", (int64_t[]){2});
  rt_in_i64(&r, "d1", "[1]", (int64_t[]){2});
  op = rt_op(&r, "fill_constant", "ShapeTensorList=d0,d1", "Out=c");
  pd_op_set_attr_int(op, "dtype", PD_BOOL);
  pd_op_set_attr_float(op, "value", 1);
  if (rt_ok(&r, "fill_constant with ShapeTensorList, bool")) {
    const pd_tensor *c = rt_get(&r, "c");
    ok(c && c->dtype == PD_BOOL && has_dims(c, 2, (int64_t[]){2, 2}), "fill_constant: bool [2, 2]");
    rt_expect(c, 4, ((double[]){1, 1, 1, 1}), 0, "fill_constant: bool values");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_i64(&r, "st", "[2]", (int64_t[]){2, -3});
  rt_op(&r, "fill_constant", "ShapeTensor=st", "Out=c");
  rt_fails(&r, PD_EINVAL, "fill_constant: shape [2, -3] has a negative dim",
           "fill_constant: negative dim at run time");
  rt_free(&r);

  rt_init(&r);
  op = rt_op(&r, "fill_constant", "", "Out=c");
  pd_op_set_attr_longs(op, "shape", 1, (const int64_t[]){2});
  pd_op_set_attr_string(op, "str_value", "1.5x");
  rt_fails(&r, PD_EINVAL, "str_value '1.5x' is not a number", "fill_constant: bad str_value");
  rt_free(&r);
}

static void test_zeros_assign(void) {
  rt r;
  rt_init(&r);
  rt_in_i64(&r, "x", "[3, 2]", (int64_t[]){1, 2, 3, 4, 5, 6});
  rt_lod(&r, "x", 3, (int64_t[]){0, 2, 3});
  rt_op(&r, "fill_zeros_like", "X=x", "Out=z");
  if (rt_ok(&r, "fill_zeros_like int64")) {
    const pd_tensor *z = rt_get(&r, "z");
    rt_expect(z, 6, ((double[]){0, 0, 0, 0, 0, 0}), 0, "fill_zeros_like: zeros");
    ok(z && z->dtype == PD_INT64 && lod_is(z, 3, (int64_t[]){0, 2, 3}),
       "fill_zeros_like: dtype and LoD of X");
  }
  rt_free(&r);

  rt_init(&r);
  pd_tensor *x = rt_in_f32(&r, "x", "[2, 2]", (float[]){1, -2, 3.5f, 4});
  rt_lod(&r, "x", 3, (int64_t[]){0, 1, 2});
  rt_op(&r, "assign", "X=x", "Out=y");
  if (rt_ok(&r, "assign fp32 with LoD")) {
    const pd_tensor *y = rt_get(&r, "y");
    rt_expect(y, 4, ((double[]){1, -2, 3.5, 4}), 0, "assign: values");
    ok(y && y->storage != x->storage && lod_is(y, 3, (int64_t[]){0, 1, 2}),
       "assign: a deep copy with the LoD");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in(&r, "x", PD_INT32, "[3]", (int32_t[]){7, 8, 9});
  rt_op(&r, "assign", "X=x", "Out=x");
  if (rt_ok(&r, "assign onto itself"))
    rt_expect(rt_get(&r, "x"), 3, ((double[]){7, 8, 9}), 0, "assign: X = X keeps the value");
  rt_free(&r);

  rt_init(&r); /* tensor arrays */
  pd_var_desc *ad = pd_block_var(r.f.b, "arr"), *bd = pd_block_var(r.f.b, "brr");
  ad->type = bd->type = PD_VAR_LOD_TENSOR_ARRAY;
  pd_variable *av = pd_scope_var(r.scope, "arr");
  pd_tensor_array *aa = pd_var_tensor_array(av);
  pd_tensor_set_data(pd_tensor_array_push(aa), PD_FP32, 1, (int64_t[]){2}, (float[]){1, 2});
  pd_tensor_set_data(pd_tensor_array_push(aa), PD_INT64, 1, (int64_t[]){1}, (int64_t[]){5});
  rt_op(&r, "assign", "X=arr", "Out=brr");
  if (rt_ok(&r, "assign a tensor array")) {
    pd_variable *bv = pd_scope_find_var(r.scope, "brr");
    const pd_tensor_array *ba = bv ? pd_var_tensor_array(bv) : NULL;
    ok(ba && ba->n == 2, "assign: the array has both tensors");
    if (ba && ba->n == 2) {
      rt_expect(ba->items[0], 2, ((double[]){1, 2}), 0, "assign: array item 0");
      rt_expect(ba->items[1], 1, ((double[]){5}), 0, "assign: array item 1");
      ok(ba->items[0]->storage != aa->items[0]->storage, "assign: array items are copies");
    }
  }
  rt_free(&r);
}

static void test_assign_value(void) {
  rt r;
  rt_init(&r);
  pd_op_desc *op = rt_op(&r, "assign_value", "", "Out=v");
  pd_op_set_attr_ints(op, "shape", 2, (const int32_t[]){2, 2});
  pd_op_set_attr_floats(op, "fp32_values", 4, (const float[]){1.5f, -2, 0, 8});
  if (rt_ok(&r, "assign_value fp32")) {
    const pd_tensor *v = rt_get(&r, "v");
    rt_expect(v, 4, ((double[]){1.5, -2, 0, 8}), 0, "assign_value: fp32 values");
    ok(v && v->dtype == PD_FP32 && has_dims(v, 2, (int64_t[]){2, 2}), "assign_value: [2, 2]");
  }
  rt_free(&r);

  rt_init(&r);
  op = rt_op(&r, "assign_value", "", "Out=v");
  pd_op_set_attr_ints(op, "shape", 1, (const int32_t[]){3});
  pd_op_set_attr_int(op, "dtype", PD_INT64);
  pd_op_set_attr_longs(op, "int64_values", 3, (const int64_t[]){-1, 1LL << 40, 3});
  if (rt_ok(&r, "assign_value int64")) {
    const pd_tensor *v = rt_get(&r, "v");
    ok(v && v->dtype == PD_INT64 && PD_TENSOR_I64(v)[1] == (1LL << 40) && PD_TENSOR_I64(v)[0] == -1,
       "assign_value: int64 values");
  }
  rt_free(&r);

  rt_init(&r);
  op = rt_op(&r, "assign_value", "", "Out=v");
  pd_op_set_attr_ints(op, "shape", 1, (const int32_t[]){3});
  pd_op_set_attr_int(op, "dtype", PD_BOOL);
  pd_op_set_attr_ints(op, "bool_values", 3, (const int32_t[]){1, 0, 1});
  if (rt_ok(&r, "assign_value bool"))
    rt_expect(rt_get(&r, "v"), 3, ((double[]){1, 0, 1}), 0, "assign_value: bool values");
  rt_free(&r);

  rt_init(&r);
  op = rt_op(&r, "assign_value", "", "Out=v");
  pd_op_set_attr_ints(op, "shape", 1, (const int32_t[]){2});
  pd_op_set_attr_int(op, "dtype", PD_INT32);
  pd_op_set_attr_ints(op, "int32_values", 2, (const int32_t[]){-7, 11});
  if (rt_ok(&r, "assign_value int32"))
    rt_expect(rt_get(&r, "v"), 2, ((double[]){-7, 11}), 0, "assign_value: int32 values");
  rt_free(&r);
}

/* ---------------------------------------------------------------- random */

/* n draws of uniform_random (normal false) or gaussian_random into out (as doubles). */
static bool draw(bool normal, pd_dtype dt, int64_t n, int seed_attr, uint64_t exec_seed,
                 double a, double b, double *out) {
  rt r;
  rt_init(&r);
  r.seed = exec_seed;
  pd_op_desc *op = rt_op(&r, normal ? "gaussian_random" : "uniform_random", "", "Out=u");
  pd_op_set_attr_longs(op, "shape", 2, (const int64_t[]){n / 4, 4});
  pd_op_set_attr_int(op, "dtype", dt);
  pd_op_set_attr_int(op, "seed", seed_attr);
  pd_op_set_attr_float(op, normal ? "mean" : "min", (float)a);
  pd_op_set_attr_float(op, normal ? "std" : "max", (float)b);
  bool good = rt_run(&r) == PD_OK;
  const pd_tensor *u = rt_get(&r, "u");
  good = good && u && u->dtype == dt && pd_tensor_numel(u) == n;
  for (int64_t i = 0; good && i < n; i++)
    out[i] = dt == PD_FP32 ? PD_TENSOR_F32(u)[i] : PD_TENSOR_F64(u)[i];
  if (!good) printf("#   draw failed: %s\n", r.f.err.msg ? r.f.err.msg : "no value");
  rt_free(&r);
  return good;
}

static bool same(const double *a, const double *b, int n) {
  return memcmp(a, b, sizeof(double) * (size_t)n) == 0;
}

static void moments(const double *x, int64_t n, double *mean, double *var) {
  double s = 0, ss = 0;
  for (int64_t i = 0; i < n; i++) s += x[i];
  *mean = s / (double)n;
  for (int64_t i = 0; i < n; i++) ss += (x[i] - *mean) * (x[i] - *mean);
  *var = ss / (double)(n - 1);
}

static void test_random(void) {
  enum { N = 64, BIG = 100000 };
  double a[N], b[N], c[N], d[N];
  for (int normal = 0; normal < 2; normal++) {
    const char *name = normal ? "gaussian_random" : "uniform_random";
    double lo = normal ? 0 : -1, hi = 1;
    bool good = draw(normal, PD_FP32, N, 0, 5, lo, hi, a) && draw(normal, PD_FP32, N, 0, 5, lo, hi, b) &&
                draw(normal, PD_FP32, N, 0, 6, lo, hi, c);
    ok(good && same(a, b, N), "%s: seed 0, same executor seed: same numbers", name);
    ok(good && !same(a, c, N), "%s: seed 0, another executor seed: other numbers", name);
    good = draw(normal, PD_FP32, N, 7, 5, lo, hi, a) && draw(normal, PD_FP32, N, 7, 99, lo, hi, b) &&
           draw(normal, PD_FP32, N, 8, 5, lo, hi, c) && draw(normal, PD_FP32, N, 0, 5, lo, hi, d);
    ok(good && same(a, b, N), "%s: seed 7 ignores the executor seed", name);
    ok(good && !same(a, c, N), "%s: seed 8 differs from seed 7", name);
    ok(good && !same(a, d, N), "%s: seed 7 differs from the executor's stream", name);
    int distinct = 0;
    for (int i = 1; i < N; i++) distinct += a[i] != a[i - 1];
    ok(distinct > N / 2, "%s: the numbers vary", name);
  }

  /* Two ops in one run draw successive parts of the executor's stream. */
  rt r;
  rt_init(&r);
  r.seed = 3;
  for (int k = 0; k < 2; k++) {
    pd_op_desc *op = rt_op(&r, "uniform_random", "", k ? "Out=u2" : "Out=u1");
    pd_op_set_attr_longs(op, "shape", 1, (const int64_t[]){8});
  }
  if (rt_ok(&r, "two uniform_random ops")) {
    const pd_tensor *u1 = rt_get(&r, "u1"), *u2 = rt_get(&r, "u2");
    ok(u1 && u2 && memcmp(pd_tensor_data(u1), pd_tensor_data(u2), 32) != 0,
       "uniform_random: a second op continues the stream");
  }
  rt_free(&r);

  static double big[BIG];
  double mean, var;
  ok(draw(false, PD_FP32, BIG, 0, 11, -2, 4, big), "uniform_random: 100k draws");
  moments(big, BIG, &mean, &var);
  is_close(mean, 1.0, 0.02, "uniform_random fp32 [-2, 4): mean 1");
  is_close(var, 3.0, 0.05, "uniform_random fp32 [-2, 4): variance 3");
  bool in = true;
  for (int i = 0; i < BIG; i++) in = in && big[i] >= -2 && big[i] < 4;
  ok(in, "uniform_random: every value in [min, max)");
  ok(draw(false, PD_FP64, BIG, 0, 12, 0, 1, big), "uniform_random fp64: 100k draws");
  moments(big, BIG, &mean, &var);
  is_close(mean, 0.5, 0.005, "uniform_random fp64 [0, 1): mean 1/2");
  is_close(var, 1.0 / 12, 0.002, "uniform_random fp64 [0, 1): variance 1/12");
  ok(draw(true, PD_FP32, BIG, 0, 13, 1.5, 2, big), "gaussian_random: 100k draws");
  moments(big, BIG, &mean, &var);
  is_close(mean, 1.5, 0.03, "gaussian_random fp32 (1.5, 2): mean 1.5");
  is_close(var, 4.0, 0.08, "gaussian_random fp32 (1.5, 2): variance 4");
  ok(draw(true, PD_FP64, BIG, 0, 14, -1, 0.5, big), "gaussian_random fp64: 100k draws");
  moments(big, BIG, &mean, &var);
  is_close(mean, -1.0, 0.01, "gaussian_random fp64 (-1, 0.5): mean -1");
  is_close(var, 0.25, 0.005, "gaussian_random fp64 (-1, 0.5): variance 1/4");
  int within = 0;
  for (int i = 0; i < BIG; i++) within += fabs(big[i] + 1) < 0.5;
  is_close(within / (double)BIG, 0.6827, 0.01, "gaussian_random: 68%% within one std");

  rt_init(&r); /* the diagonal initialiser */
  pd_op_desc *op = rt_op(&r, "uniform_random", "", "Out=u");
  pd_op_set_attr_longs(op, "shape", 2, (const int64_t[]){3, 3});
  pd_op_set_attr_int(op, "diag_num", 3);
  pd_op_set_attr_int(op, "diag_step", 3);
  pd_op_set_attr_float(op, "diag_val", 5);
  if (rt_ok(&r, "uniform_random with diag_num")) {
    const pd_tensor *u = rt_get(&r, "u");
    ok(u && PD_TENSOR_F32(u)[0] == 5 && PD_TENSOR_F32(u)[4] == 5 && PD_TENSOR_F32(u)[8] == 5 &&
           PD_TENSOR_F32(u)[1] != 5,
       "uniform_random: diag_val on the diagonal");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- concat / split */

static void test_concat(void) {
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "a", "[2, 1]", (float[]){1, 2});
  rt_in_f32(&r, "b", "[2, 3]", (float[]){3, 4, 5, 6, 7, 8});
  rt_lod(&r, "a", 3, (int64_t[]){0, 1, 2});
  pd_op_set_attr_int(rt_op(&r, "concat", "X=a,b", "Out=c"), "axis", -1);
  if (rt_ok(&r, "concat axis -1")) {
    const pd_tensor *c = rt_get(&r, "c");
    rt_expect(c, 8, ((double[]){1, 3, 4, 5, 2, 6, 7, 8}), 0, "concat: [2, 1] ++ [2, 3] on axis 1");
    ok(lod_is(c, 3, (int64_t[]){0, 1, 2}), "concat: Out takes X[0]'s LoD");
  }
  rt_free(&r);

  rt_init(&r); /* three fp64 inputs on axis 0 of rank 3, axis from AxisTensor */
  double x[24];
  ramp(x, 24, 1, 0);
  rt_in_f64(&r, "a", "[1, 2, 2]", x);
  rt_in_f64(&r, "b", "[2, 2, 2]", x + 4);
  rt_in_f64(&r, "c", "[1, 2, 2]", x + 12);
  rt_in(&r, "ax", PD_INT32, "[1]", (int32_t[]){0});
  rt_op(&r, "concat", "X=a,b,c AxisTensor=ax", "Out=o");
  if (rt_ok(&r, "concat with AxisTensor"))
    rt_expect(rt_get(&r, "o"), 16, x, 0, "concat: axis 0 keeps the order");
  rt_free(&r);

  rt_init(&r); /* Out is one of the inputs */
  rt_in_f32(&r, "a", "[1, 2]", (float[]){1, 2});
  rt_in_f32(&r, "b", "[1, 1]", (float[]){3});
  pd_op_set_attr_int(rt_op(&r, "concat", "X=b,a,b", "Out=b"), "axis", 1);
  if (rt_ok(&r, "concat into one of its inputs"))
    rt_expect(rt_get(&r, "b"), 4, ((double[]){3, 1, 2, 3}), 0, "concat: b = concat(b, a, b)");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "a", "[2, 2]", (float[]){1, 2, 3, 4});
  rt_in_f32(&r, "b", "[3, 2]", (float[]){1, 2, 3, 4, 5, 6});
  decl(r.f.b, "a", PD_FP32, "[-1, 2]");
  decl(r.f.b, "b", PD_FP32, "[-1, 2]");
  pd_op_set_attr_int(rt_op(&r, "concat", "X=a,b", "Out=c"), "axis", 1);
  rt_fails(&r, PD_ESHAPE, "concat: cannot concatenate X[0] [2, 2] and X[1] [3, 2] along axis 1",
           "concat: dims that differ at run time");
  rt_free(&r);

  rt_init(&r);
  double g1[6], g2[3], g3[9];
  ramp(g1, 6, 0.3, -1);
  ramp(g2, 3, -0.7, 2);
  ramp(g3, 9, 0.11, 0.5);
  rt_in_f64(&r, "a", "[3, 2]", g1);
  rt_in_f64(&r, "b", "[3, 1]", g2);
  rt_in_f64(&r, "c", "[3, 3]", g3);
  pd_op_set_attr_int(rt_op(&r, "concat", "X=a,b,c", "Out=o"), "axis", 1);
  grad_check(&r, "X", "Out", "concat axis 1");
  rt_free(&r);
}

static void test_split(void) {
  rt r;
  rt_init(&r);
  float x[12];
  ramp_f(x, 12, 1, 0);
  rt_in_f32(&r, "x", "[2, 6]", x);
  rt_lod(&r, "x", 2, (int64_t[]){0, 2});
  pd_op_desc *op = rt_op(&r, "split", "X=x", "Out=p,q,s");
  pd_op_set_attr_int(op, "axis", 1);
  pd_op_set_attr_int(op, "num", 3);
  if (rt_ok(&r, "split num 3 on axis 1")) {
    rt_expect(rt_get(&r, "p"), 4, ((double[]){0, 1, 6, 7}), 0, "split: part 0");
    rt_expect(rt_get(&r, "q"), 4, ((double[]){2, 3, 8, 9}), 0, "split: part 1");
    rt_expect(rt_get(&r, "s"), 4, ((double[]){4, 5, 10, 11}), 0, "split: part 2");
    ok(lod_is(rt_get(&r, "q"), 2, (int64_t[]){0, 2}), "split: axis 1 keeps the LoD");
  }
  rt_free(&r);

  rt_init(&r);
  ramp_f(x, 12, 1, 0);
  rt_in_f32(&r, "x", "[6, 2]", x);
  rt_lod(&r, "x", 2, (int64_t[]){0, 6});
  op = rt_op(&r, "split", "X=x", "Out=p,q");
  pd_op_set_attr_ints(op, "sections", 2, (const int32_t[]){-1, 2});
  if (rt_ok(&r, "split sections [-1, 2] on axis 0")) {
    const pd_tensor *p = rt_get(&r, "p");
    ok(has_dims(p, 2, (int64_t[]){4, 2}), "split: -1 takes the rest");
    rt_expect(rt_get(&r, "q"), 4, ((double[]){8, 9, 10, 11}), 0, "split: the last section");
    ok(p && p->nlod == 0, "split: axis 0 drops the LoD");
  }
  rt_free(&r);

  rt_init(&r); /* SectionsTensorList, negative axis, int64 data */
  rt_in_i64(&r, "x", "[2, 3]", (int64_t[]){1, 2, 3, 4, 5, 6});
  rt_in(&r, "s0", PD_INT32, "[1]", (int32_t[]){1});
  rt_in(&r, "s1", PD_INT32, "[1]", (int32_t[]){2});
  op = rt_op(&r, "split", "X=x SectionsTensorList=s0,s1", "Out=p,q");
  pd_op_set_attr_ints(op, "sections", 2, (const int32_t[]){2, 1}); /* the list wins */
  pd_op_set_attr_int(op, "axis", -1);
  if (rt_ok(&r, "split with SectionsTensorList")) {
    rt_expect(rt_get(&r, "p"), 2, ((double[]){1, 4}), 0, "split: SectionsTensorList part 0");
    rt_expect(rt_get(&r, "q"), 4, ((double[]){2, 3, 5, 6}), 0, "split: SectionsTensorList part 1");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 5]", x);
  decl(r.f.b, "x", PD_FP32, "[2, -1]");
  op = rt_op(&r, "split", "X=x", "Out=p,q");
  pd_op_set_attr_int(op, "axis", 1);
  pd_op_set_attr_int(op, "num", 2);
  rt_fails(&r, PD_ESHAPE, "split: dim 1 of X [2, 5] (5) does not split into 2 equal parts",
           "split: uneven parts at run time");
  rt_free(&r);

  rt_init(&r);
  double g[24];
  ramp(g, 24, 0.1, -1);
  rt_in_f64(&r, "x", "[2, 3, 4]", g);
  op = rt_op(&r, "split", "X=x", "Out=p,q,s");
  pd_op_set_attr_int(op, "axis", 2);
  pd_op_set_attr_ints(op, "sections", 3, (const int32_t[]){1, 2, 1});
  grad_check(&r, "X", "Out", "split sections on axis 2");
  rt_free(&r);

  rt_init(&r); /* only some parts get a gradient: the others count as 0 */
  rt_in_f64(&r, "x", "[4, 3]", g);
  op = rt_op(&r, "split", "X=x", "Out=p,q");
  pd_op_set_attr_int(op, "num", 2);
  grad_check(&r, "X", "Out", "split num 2 on axis 0");
  rt_free(&r);
}

/* ---------------------------------------------------------------- reshape2 / transpose2 */

static void test_reshape(void) {
  rt r;
  rt_init(&r);
  float x[24];
  ramp_f(x, 24, 1, 0);
  rt_in_f32(&r, "x", "[2, 3, 4]", x);
  rt_lod(&r, "x", 2, (int64_t[]){0, 2});
  pd_op_set_attr_ints(rt_op(&r, "reshape2", "X=x", "Out=y XShape=xs"), "shape", 2,
                      (const int32_t[]){0, -1});
  if (rt_ok(&r, "reshape2 [2, 3, 4] to [0, -1]")) {
    const pd_tensor *y = rt_get(&r, "y"), *xs = rt_get(&r, "xs");
    ok(has_dims(y, 2, (int64_t[]){2, 12}), "reshape2: 0 copies, -1 infers: [2, 12]");
    double want[24];
    ramp(want, 24, 1, 0);
    rt_expect(y, 24, want, 0, "reshape2: the data in order");
    ok(lod_is(y, 2, (int64_t[]){0, 2}), "reshape2: same first dim keeps the LoD");
    ok(has_dims(xs, 4, (int64_t[]){0, 2, 3, 4}), "reshape2: XShape is [0] + X's dims");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3, 4]", x);
  rt_lod(&r, "x", 2, (int64_t[]){0, 2});
  pd_op_set_attr_ints(rt_op(&r, "reshape2", "X=x", "Out=y"), "shape", 2,
                      (const int32_t[]){-1, 4});
  if (rt_ok(&r, "reshape2 to [-1, 4]")) {
    const pd_tensor *y = rt_get(&r, "y");
    ok(has_dims(y, 2, (int64_t[]){6, 4}) && y->nlod == 0, "reshape2: [6, 4] without LoD");
  }
  rt_free(&r);

  rt_init(&r); /* the shape from a Shape tensor; in place */
  rt_in_f32(&r, "x", "[2, 3, 4]", x);
  rt_in(&r, "sh", PD_INT32, "[3]", (int32_t[]){4, 0, 2});
  rt_op(&r, "reshape2", "X=x Shape=sh", "Out=x");
  r.no_shape_check = true; /* x's desc is both the input and the output */
  if (rt_ok(&r, "reshape2 in place with Shape")) {
    const pd_tensor *y = rt_get(&r, "x");
    ok(has_dims(y, 3, (int64_t[]){4, 3, 2}), "reshape2: Shape [4, 0, 2] gives [4, 3, 2]");
    ok(y && PD_TENSOR_F32(y)[23] == 23, "reshape2: in place keeps the data");
  }
  rt_free(&r);

  rt_init(&r); /* ShapeTensor: one tensor per dim */
  rt_in_i64(&r, "x", "[6]", (int64_t[]){1, 2, 3, 4, 5, 6});
  rt_in_i64(&r, "d0", "[1]", (int64_t[]){3});
  rt_in(&r, "d1", PD_INT32, "[1]", (int32_t[]){-1});
  rt_op(&r, "reshape2", "X=x ShapeTensor=d0,d1", "Out=y");
  if (rt_ok(&r, "reshape2 with ShapeTensor")) {
    const pd_tensor *y = rt_get(&r, "y");
    ok(has_dims(y, 2, (int64_t[]){3, 2}) && y->dtype == PD_INT64, "reshape2: int64 [3, 2]");
    rt_expect(y, 6, ((double[]){1, 2, 3, 4, 5, 6}), 0, "reshape2: int64 data");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", x);
  decl(r.f.b, "x", PD_FP32, "[-1, 3]");
  pd_op_set_attr_ints(rt_op(&r, "reshape2", "X=x", "Out=y"), "shape", 2, (const int32_t[]){4, -1});
  rt_fails(&r, PD_ESHAPE, "reshape2: cannot reshape X [2, 3] (6 elements) to [4, -1]",
           "reshape2: no -1 fits");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[2, 3]", x);
  decl(r.f.b, "x", PD_FP32, "[-1, 3]");
  pd_op_set_attr_ints(rt_op(&r, "reshape2", "X=x", "Out=y"), "shape", 2, (const int32_t[]){2, 2});
  rt_fails(&r, PD_ESHAPE, "reshape2: cannot reshape X [2, 3] (6 elements) to [2, 2] (4 elements)",
           "reshape2: incompatible sizes name both shapes");
  rt_free(&r);

  rt_init(&r);
  double g[24];
  ramp(g, 24, 0.25, -3);
  rt_in_f64(&r, "x", "[2, 3, 4]", g);
  pd_op_set_attr_ints(rt_op(&r, "reshape2", "X=x", "Out=y XShape=xs"), "shape", 2,
                      (const int32_t[]){4, -1});
  grad_check(&r, "X", "Out", "reshape2");
  rt_free(&r);
}

static void test_transpose(void) {
  rt r;
  rt_init(&r);
  float x[24];
  ramp_f(x, 24, 1, 0);
  rt_in_f32(&r, "x", "[2, 3, 4]", x);
  pd_op_set_attr_ints(rt_op(&r, "transpose2", "X=x", "Out=y XShape=xs"), "axis", 3,
                      (const int32_t[]){2, 0, 1});
  if (rt_ok(&r, "transpose2 [2, 0, 1]")) {
    const pd_tensor *y = rt_get(&r, "y");
    ok(has_dims(y, 3, (int64_t[]){4, 2, 3}), "transpose2: shape [4, 2, 3]");
    double want[24];
    for (int k = 0; k < 4; k++)
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) want[(k * 2 + i) * 3 + j] = x[(i * 3 + j) * 4 + k];
    rt_expect(y, 24, want, 0, "transpose2: out[k][i][j] = x[i][j][k]");
    ok(has_dims(rt_get(&r, "xs"), 4, (int64_t[]){0, 2, 3, 4}), "transpose2: XShape");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in(&r, "x", PD_INT32, "[2, 3]", (int32_t[]){1, 2, 3, 4, 5, 6});
  pd_op_set_attr_ints(rt_op(&r, "transpose2", "X=x", "Out=x"), "axis", 2, (const int32_t[]){1, 0});
  r.no_shape_check = true;
  if (rt_ok(&r, "transpose2 in place, int32")) {
    const pd_tensor *y = rt_get(&r, "x");
    ok(has_dims(y, 2, (int64_t[]){3, 2}), "transpose2: in place [3, 2]");
    rt_expect(y, 6, ((double[]){1, 4, 2, 5, 3, 6}), 0, "transpose2: in place values");
  }
  rt_free(&r);

  rt_init(&r);
  double g[60];
  ramp(g, 60, 0.05, -1);
  rt_in_f64(&r, "x", "[3, 1, 4, 5]", g);
  pd_op_set_attr_ints(rt_op(&r, "transpose2", "X=x", "Out=y XShape=xs"), "axis", 4,
                      (const int32_t[]){3, 1, 0, 2});
  grad_check(&r, "X", "Out", "transpose2");
  rt_free(&r);
}

/* ---------------------------------------------------------------- increment, lod_reset, assign grads */

static void test_increment(void) {
  rt r;
  rt_init(&r);
  rt_in_i64(&r, "i", "[1]", (int64_t[]){41});
  rt_op(&r, "increment", "X=i", "Out=i");
  if (rt_ok(&r, "increment int64 in place"))
    rt_expect(rt_get(&r, "i"), 1, ((double[]){42}), 0, "increment: 41 + 1");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[1]", (float[]){1.5f});
  pd_op_set_attr_float(rt_op(&r, "increment", "X=x", "Out=y"), "step", -2);
  if (rt_ok(&r, "increment fp32 by -2"))
    rt_expect(rt_get(&r, "y"), 1, ((double[]){-0.5}), 0, "increment: 1.5 - 2");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[2]", (float[]){1, 2});
  decl(r.f.b, "x", PD_FP32, "[-1]");
  rt_op(&r, "increment", "X=x", "Out=y");
  rt_fails(&r, PD_ESHAPE, "increment: X must hold one element, got [2]", "increment: two elements");
  rt_free(&r);
}

static void test_lod_reset(void) {
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "x", "[5, 1]", (float[]){1, 2, 3, 4, 5});
  rt_lod(&r, "x", 2, (int64_t[]){0, 5});
  pd_op_set_attr_ints(rt_op(&r, "lod_reset", "X=x", "Out=y"), "target_lod", 3,
                      (const int32_t[]){0, 2, 5});
  if (rt_ok(&r, "lod_reset with target_lod")) {
    const pd_tensor *y = rt_get(&r, "y");
    ok(y && y->nlod == 1 && lod_is(y, 3, (int64_t[]){0, 2, 5}), "lod_reset: the new LoD");
    rt_expect(y, 5, ((double[]){1, 2, 3, 4, 5}), 0, "lod_reset: X's data");
  }
  rt_free(&r);

  rt_init(&r); /* Y with a LoD */
  rt_in_f32(&r, "x", "[4]", (float[]){1, 2, 3, 4});
  rt_in_f32(&r, "y", "[4]", (float[]){0, 0, 0, 0});
  rt_lod(&r, "y", 4, (int64_t[]){0, 1, 1, 4});
  rt_op(&r, "lod_reset", "X=x Y=y", "Out=o");
  if (rt_ok(&r, "lod_reset from Y's LoD"))
    ok(lod_is(rt_get(&r, "o"), 4, (int64_t[]){0, 1, 1, 4}), "lod_reset: Out takes Y's LoD");
  rt_free(&r);

  rt_init(&r); /* Y's data, appended under X's LoD */
  rt_in_f32(&r, "x", "[4]", (float[]){1, 2, 3, 4});
  rt_lod(&r, "x", 2, (int64_t[]){0, 2});
  rt_in(&r, "y", PD_INT32, "[3]", (int32_t[]){0, 3, 4});
  pd_op_set_attr_bool(rt_op(&r, "lod_reset", "X=x Y=y", "Out=o"), "append", true);
  if (rt_ok(&r, "lod_reset from Y's data, append")) {
    const pd_tensor *o = rt_get(&r, "o");
    ok(o && o->nlod == 2 && o->lod[0].n == 2 && o->lod[0].offsets[1] == 2 &&
           lod_is(o, 3, (int64_t[]){0, 3, 4}),
       "lod_reset: append adds an innermost level");
  }
  rt_free(&r);

  /* target_lod ending at X's number of sequences groups them (sequence(..., lod_level = 2)). */
  rt_init(&r);
  rt_in_f32(&r, "x", "[5, 1]", (float[]){1, 2, 3, 4, 5});
  rt_lod(&r, "x", 4, (int64_t[]){0, 2, 3, 5});
  pd_op_set_attr_ints(rt_op(&r, "lod_reset", "X=x", "Out=x"), "target_lod", 3,
                      (const int32_t[]){0, 2, 3});
  if (rt_ok(&r, "lod_reset grouping X's sequences, in place")) {
    const pd_tensor *o = rt_get(&r, "x");
    ok(o && o->nlod == 2 && o->lod[0].n == 3 && o->lod[0].offsets[1] == 2 &&
           o->lod[0].offsets[2] == 3 && lod_is(o, 4, (int64_t[]){0, 2, 3, 5}),
       "lod_reset: the groups become a top level above X's LoD");
    rt_expect(o, 5, ((double[]){1, 2, 3, 4, 5}), 0, "lod_reset: grouping keeps X's data");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[5, 1]", (float[]){1, 2, 3, 4, 5});
  rt_lod(&r, "x", 4, (int64_t[]){0, 2, 3, 5});
  pd_op_set_attr_ints(rt_op(&r, "lod_reset", "X=x", "Out=o"), "target_lod", 3,
                      (const int32_t[]){0, 2, 4});
  rt_fails(&r, PD_ESHAPE, "lod_reset: target_lod [0, 2, 4] ends at 4 but X [5, 1] has 5 rows",
           "lod_reset: offsets that end at neither X's rows nor its sequences");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "x", "[4]", (float[]){1, 2, 3, 4});
  rt_in(&r, "y", PD_INT32, "[3]", (int32_t[]){0, 3, 5});
  rt_op(&r, "lod_reset", "X=x Y=y", "Out=o");
  rt_fails(&r, PD_ESHAPE, "lod_reset: Y [0, 3, 5] ends at 5 but X [4] has 4 rows",
           "lod_reset: offsets past X");
  rt_free(&r);

  rt_init(&r);
  double g[8];
  ramp(g, 8, 0.5, -2);
  rt_in_f64(&r, "x", "[4, 2]", g);
  rt_lod(&r, "x", 2, (int64_t[]){0, 4});
  pd_op_set_attr_ints(rt_op(&r, "lod_reset", "X=x", "Out=y"), "target_lod", 3,
                      (const int32_t[]){0, 1, 4});
  grad_check(&r, "X", "Out", "lod_reset");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 4]", g);
  rt_lod(&r, "x", 3, (int64_t[]){0, 1, 2});
  rt_op(&r, "assign", "X=x", "Out=y");
  grad_check(&r, "X", "Out", "assign");
  rt_free(&r);
}

/* load_combine: the tensors of a file pd_params_save wrote (float32 [2, 3], float64 [4]) into
 * the vars of Out, in order, values and dtypes as written; the errors name what is wrong. */
static void test_load_combine(void) {
  char path[512];
  const char *t = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/pd_load_combine.%d.pdiparams", t && *t ? t : "/tmp",
           (int)getpid());
  pd_scope *s = pd_scope_new(NULL);
  pd_tensor *a = s ? pd_var_tensor(pd_scope_var(s, "a")) : NULL;
  pd_tensor *b = s ? pd_var_tensor(pd_scope_var(s, "b")) : NULL;
  float av[6];
  double bv[4];
  ramp_f(av, 6, 0.5, -1);
  ramp(bv, 4, -0.25, 3);
  int64_t da[2] = {2, 3}, db[1] = {4};
  const char *names[2] = {"a", "b"};
  pd_error e = {0};
  if (!a || !b || pd_tensor_set_data(a, PD_FP32, 2, da, av) ||
      pd_tensor_set_data(b, PD_FP64, 1, db, bv) || pd_params_save(path, s, 2, names, &e))
    bail("writing the parameters file");
  pd_scope_free(s);
  pd_error_clear(&e);

  rt r;
  rt_init(&r);
  rt_op(&r, "load_combine", "", "Out=p,q");
  pd_op_set_attr_string(r.op, "file_path", path);
  if (rt_ok(&r, "load_combine of a file of two tensors")) {
    const pd_tensor *p = rt_get(&r, "p"), *q = rt_get(&r, "q");
    double want_a[6];
    for (int i = 0; i < 6; i++) want_a[i] = av[i];
    ok(p && p->dtype == PD_FP32 && has_dims(p, 2, da), "load_combine: the first var is float32 [2, 3]");
    rt_expect(p, 6, want_a, 0, "load_combine: the first tensor's values");
    ok(q && q->dtype == PD_FP64 && has_dims(q, 1, db), "load_combine: the second var is float64 [4]");
    rt_expect(q, 4, bv, 0, "load_combine: the second tensor's values");
  }
  rt_free(&r);

  rt_init(&r);
  rt_op(&r, "load_combine", "", "Out=p,q,u");
  pd_op_set_attr_string(r.op, "file_path", path);
  rt_fails(&r, PD_EFORMAT, "holds 2 tensors", "load_combine: three vars for a file of two");
  rt_free(&r);

  rt_init(&r);
  rt_op(&r, "load_combine", "", "Out=p,q");
  pd_op_set_attr_string(r.op, "file_path", "no/such.pdiparams");
  rt_fails(&r, PD_EIO, "no/such.pdiparams", "load_combine: a missing file is named");
  rt_free(&r);

  rt_init(&r);
  rt_op(&r, "load_combine", "", "Out=p");
  rt_fails(&r, PD_EINVAL, "file_path is empty", "load_combine: no file_path");
  rt_free(&r);
  remove(path);
}

int main(void) {
  pd_k_init();
  test_feed_fetch();
  test_fill_constant();
  test_zeros_assign();
  test_assign_value();
  test_random();
  test_concat();
  test_split();
  test_reshape();
  test_transpose();
  test_increment();
  test_lod_reset();
  test_load_combine();
  return tap_done();
}
