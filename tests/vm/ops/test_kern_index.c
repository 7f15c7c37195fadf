/* test_kern_index.c -- the shape and indexing ops of vm/ops/shape.c and vm/ops/index.c:
 * flatten_contiguous_range, squeeze2, unsqueeze2, stack, shape, slice, expand_v2, tile, gather,
 * where, clip and the errors of one_hot / one_hot_v2 (their values are the op-test table's).
 * Each runs through the executor (tests/vm/ops/runop.h, which also compares the run-time shapes
 * with shape inference) against values computed here from the definition; every gradient is
 * checked against finite differences (tests/vm/ops/gradcheck.h); bad axes, shapes and indices
 * fail with a message at the op. */
#include "config.h"

#include "tests/vm/ops/gradcheck.h"

/* a * i + b, and a bumpy variant (no two values equal, none at a kink). */
static void ramp(double *d, int n, double a, double b) {
  for (int i = 0; i < n; i++) d[i] = a * i + b;
}
static void bumpy(double *d, int n) {
  for (int i = 0; i < n; i++) d[i] = 0.37 * i - 0.9 + 0.21 * ((i * 7) % 5);
}

static bool has_dims(const pd_tensor *t, int nd, const int64_t *d) {
  if (!t || t->ndims != nd) return false;
  for (int i = 0; i < nd; i++)
    if (t->dims[i] != d[i]) return false;
  return true;
}

static void set_ints(pd_op_desc *op, const char *name, int n, const int32_t *v) {
  if (pd_op_set_attr_ints(op, name, n, v)) bail("out of memory");
}

/* ---------------------------------------------------------------- flatten, squeeze, unsqueeze */

static void test_flatten(void) {
  rt r;
  double x[120], want[120];
  ramp(x, 120, 1, 0);
  ramp(want, 120, 1, 0);
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3, 4, 5]", x);
  pd_op_desc *op = rt_op(&r, "flatten_contiguous_range", "X=x", "Out=y XShape=xs");
  pd_op_set_attr_int(op, "start_axis", 1);
  pd_op_set_attr_int(op, "stop_axis", -2);
  if (rt_ok(&r, "flatten 1..-2")) {
    ok(has_dims(rt_get(&r, "y"), 3, (int64_t[]){2, 12, 5}), "flatten: [2, 3, 4, 5] 1..-2 -> [2, 12, 5]");
    rt_expect(rt_get(&r, "y"), 120, want, 0, "flatten: the data in order");
    ok(has_dims(rt_get(&r, "xs"), 5, (int64_t[]){0, 2, 3, 4, 5}), "flatten: XShape");
  }
  rt_free(&r);

  rt_init(&r); /* the defaults: 1..1 leaves the shape */
  rt_in_f64(&r, "x", "[2, 3, 4]", x);
  rt_op(&r, "flatten_contiguous_range", "X=x", "Out=y");
  if (rt_ok(&r, "flatten defaults"))
    ok(has_dims(rt_get(&r, "y"), 3, (int64_t[]){2, 3, 4}), "flatten: default axes 1..1 keep [2, 3, 4]");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3, 4]", x);
  op = rt_op(&r, "flatten_contiguous_range", "X=x", "Out=y");
  pd_op_set_attr_int(op, "start_axis", 0);
  pd_op_set_attr_int(op, "stop_axis", 2);
  if (rt_ok(&r, "flatten all"))
    ok(has_dims(rt_get(&r, "y"), 1, (int64_t[]){24}), "flatten: 0..2 gives [24]");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3, 4]", x);
  op = rt_op(&r, "flatten_contiguous_range", "X=x", "Out=y");
  pd_op_set_attr_int(op, "start_axis", 2);
  pd_op_set_attr_int(op, "stop_axis", 1);
  rt_fails(&r, PD_EINVAL, "stop_axis 1 comes before start_axis 2 of X [2, 3, 4]",
           "flatten: stop before start");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3, 4]", x);
  op = rt_op(&r, "flatten_contiguous_range", "X=x", "Out=y");
  pd_op_set_attr_int(op, "start_axis", 3);
  rt_fails(&r, PD_EINVAL, "start_axis 3 is out of range for X [2, 3, 4] (expected -3 to 2)",
           "flatten: axis out of range");
  rt_free(&r);

  rt_init(&r);
  bumpy(x, 24);
  rt_in_f64(&r, "x", "[2, 1, 3, 4]", x);
  op = rt_op(&r, "flatten_contiguous_range", "X=x", "Out=y XShape=xs");
  pd_op_set_attr_int(op, "start_axis", -3);
  pd_op_set_attr_int(op, "stop_axis", 2);
  grad_check(&r, "X", "Out", "flatten_contiguous_range");
  rt_free(&r);
}

static void test_squeeze(void) {
  rt r;
  double x[24];
  ramp(x, 24, 0.5, -2);
  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 2, 1, 3, 4]", x);
  set_ints(rt_op(&r, "squeeze2", "X=x", "Out=y XShape=xs"), "axes", 1, (const int32_t[]){-3});
  if (rt_ok(&r, "squeeze2 axes [-3]")) {
    ok(has_dims(rt_get(&r, "y"), 4, (int64_t[]){1, 2, 3, 4}), "squeeze2: axis -3 removes dim 2");
    rt_expect(rt_get(&r, "y"), 24, x, 0, "squeeze2: data unchanged");
    ok(has_dims(rt_get(&r, "xs"), 6, (int64_t[]){0, 1, 2, 1, 3, 4}), "squeeze2: XShape");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 2, 1, 3, 4]", x);
  rt_op(&r, "squeeze2", "X=x", "Out=y");
  if (rt_ok(&r, "squeeze2 no axes"))
    ok(has_dims(rt_get(&r, "y"), 3, (int64_t[]){2, 3, 4}), "squeeze2: no axes removes every 1");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 2, 1, 3, 4]", x);
  set_ints(rt_op(&r, "squeeze2", "X=x", "Out=y"), "axes", 2, (const int32_t[]){1, 2});
  if (rt_ok(&r, "squeeze2 on a dim that is not 1"))
    ok(has_dims(rt_get(&r, "y"), 4, (int64_t[]){1, 2, 3, 4}),
       "squeeze2: a listed dim that is not 1 stays (Paddle 1.8 on)");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 2, 1, 3, 4]", x);
  set_ints(rt_op(&r, "squeeze2", "X=x", "Out=y"), "axes", 1, (const int32_t[]){5});
  rt_fails(&r, PD_EINVAL, "axis 5 of axes [5] is out of range for X [1, 2, 1, 3, 4] (expected -5 to 4)",
           "squeeze2: axis out of range");
  rt_free(&r);

  rt_init(&r); /* the batch dim declared -1 is squeezed at compile time, and is 1 at run time */
  rt_in_f64(&r, "x", "[1, 3, 4]", x);
  decl(r.f.b, "x", PD_FP64, "[-1, 3, 4]");
  set_ints(rt_op(&r, "squeeze2", "X=x", "Out=y"), "axes", 1, (const int32_t[]){0});
  if (rt_ok(&r, "squeeze2 on a dim declared -1"))
    ok(has_dims(rt_get(&r, "y"), 2, (int64_t[]){3, 4}), "squeeze2: a -1 dim that is 1 goes");
  rt_free(&r);

  rt_init(&r);
  bumpy(x, 24);
  rt_in_f64(&r, "x", "[2, 1, 3, 4]", x);
  set_ints(rt_op(&r, "squeeze2", "X=x", "Out=y XShape=xs"), "axes", 1, (const int32_t[]){1});
  grad_check(&r, "X", "Out", "squeeze2");
  rt_free(&r);
}

static void test_unsqueeze(void) {
  rt r;
  double x[6] = {1, 2, 3, 4, 5, 6};
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", x);
  set_ints(rt_op(&r, "unsqueeze2", "X=x", "Out=y XShape=xs"), "axes", 2, (const int32_t[]){0, -1});
  if (rt_ok(&r, "unsqueeze2 [0, -1]")) {
    /* 0 against rank 2: [1, 2, 3]; -1 against rank 3: position 3 -> [1, 2, 3, 1] */
    ok(has_dims(rt_get(&r, "y"), 4, (int64_t[]){1, 2, 3, 1}), "unsqueeze2: [0, -1] gives [1, 2, 3, 1]");
    rt_expect(rt_get(&r, "y"), 6, x, 0, "unsqueeze2: data unchanged");
    ok(has_dims(rt_get(&r, "xs"), 3, (int64_t[]){0, 2, 3}), "unsqueeze2: XShape");
  }
  rt_free(&r);

  rt_init(&r); /* Fluid's order: [1, 1] inserts at 1, then at 1 again, moving the first along */
  rt_in_f64(&r, "x", "[2, 3]", x);
  set_ints(rt_op(&r, "unsqueeze2", "X=x", "Out=y"), "axes", 3, (const int32_t[]){1, 1, 4});
  if (rt_ok(&r, "unsqueeze2 [1, 1, 4]"))
    ok(has_dims(rt_get(&r, "y"), 5, (int64_t[]){2, 1, 1, 3, 1}), "unsqueeze2: [1, 1, 4] gives [2, 1, 1, 3, 1]");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", x);
  set_ints(rt_op(&r, "unsqueeze2", "X=x", "Out=y"), "axes", 1, (const int32_t[]){3});
  rt_fails(&r, PD_EINVAL, "axis 3 of axes [3] is out of range for X [2, 3] with 0 dims inserted "
           "before it (expected -3 to 2)", "unsqueeze2: axis out of range");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", x);
  set_ints(rt_op(&r, "unsqueeze2", "X=x", "Out=y XShape=xs"), "axes", 2, (const int32_t[]){-1, 0});
  grad_check(&r, "X", "Out", "unsqueeze2");
  rt_free(&r);
}

/* ---------------------------------------------------------------- stack, shape */

static void test_stack(void) {
  rt r;
  double a[6], b[6], c[6];
  ramp(a, 6, 1, 0);
  ramp(b, 6, 1, 10);
  ramp(c, 6, 1, 20);
  for (int axis = -3; axis <= 2; axis++) {
    rt_init(&r);
    rt_in_f64(&r, "a", "[2, 3]", a);
    rt_in_f64(&r, "b", "[2, 3]", b);
    rt_in_f64(&r, "c", "[2, 3]", c);
    pd_op_set_attr_int(rt_op(&r, "stack", "X=a,b,c", "Y=y"), "axis", axis);
    char what[64];
    snprintf(what, sizeof what, "stack of 3 [2, 3] on axis %d", axis);
    if (rt_ok(&r, what)) {
      int ax = axis < 0 ? axis + 3 : axis;
      int64_t d[3] = {2, 3, 3};
      d[ax] = 3;
      for (int k = 0, j = 0; k < 3; k++)
        if (k != ax) d[k] = j++ == 0 ? 2 : 3;
      ok(has_dims(rt_get(&r, "y"), 3, d), "stack axis %d: shape", axis);
      /* y[i0][i1][i2]: the input index is the one at ax; the others index [2, 3]. */
      double want[18];
      const double *in[3] = {a, b, c};
      int64_t idx[3];
      for (int f = 0; f < 18; f++) {
        idx[0] = f / (d[1] * d[2]);
        idx[1] = f / d[2] % d[1];
        idx[2] = f % d[2];
        int64_t rest[2], n = 0;
        for (int k = 0; k < 3; k++)
          if (k != ax) rest[n++] = idx[k];
        want[f] = in[idx[ax]][rest[0] * 3 + rest[1]];
      }
      rt_expect(rt_get(&r, "y"), 18, want, 0, what);
    }
    rt_free(&r);
  }

  rt_init(&r);
  rt_in_f64(&r, "a", "[2, 3]", a);
  rt_in_f64(&r, "b", "[3, 2]", b);
  rt_op(&r, "stack", "X=a,b", "Y=y");
  rt_fails(&r, PD_ESHAPE, "cannot stack X[0] [2, 3] and X[1] [3, 2]: their shapes differ",
           "stack: shapes differ");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "a", "[2, 3]", a);
  rt_in_f64(&r, "b", "[2, 3]", b);
  pd_op_set_attr_int(rt_op(&r, "stack", "X=a,b", "Y=y"), "axis", 3);
  rt_fails(&r, PD_EINVAL, "axis 3 is out of range for Y [-1, -1, -1] (expected -3 to 2)",
           "stack: axis out of range");
  rt_free(&r);

  rt_init(&r);
  bumpy(a, 6);
  ramp(b, 6, -0.3, 0.7);
  rt_in_f64(&r, "a", "[3, 2]", a);
  rt_in_f64(&r, "b", "[3, 2]", b);
  pd_op_set_attr_int(rt_op(&r, "stack", "X=a,b", "Y=y"), "axis", -2);
  grad_check(&r, "X", "Y", "stack");
  rt_free(&r);
}

static void test_shape(void) {
  rt r;
  double x[24] = {0};
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 1, 3, 4]", x);
  rt_op(&r, "shape", "Input=x", "Out=s");
  if (rt_ok(&r, "shape")) {
    const pd_tensor *s = rt_get(&r, "s");
    ok(s && s->dtype == PD_INT32 && has_dims(s, 1, (int64_t[]){4}), "shape: int32 [4]");
    rt_expect(s, 4, ((double[]){2, 1, 3, 4}), 0, "shape: the dims");
  }
  rt_free(&r);
}

/* ---------------------------------------------------------------- slice */

static void test_slice(void) {
  rt r;
  double x[60];
  ramp(x, 60, 1, 0);
  rt_init(&r); /* [3, 4, 5]: axis 0 [1, 100) clamps to [1, 3); axis 2 [-4, -1) is [1, 4) */
  rt_in_f64(&r, "x", "[3, 4, 5]", x);
  pd_op_desc *op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 2, (const int32_t[]){0, 2});
  set_ints(op, "starts", 2, (const int32_t[]){1, -4});
  set_ints(op, "ends", 2, (const int32_t[]){100, -1});
  if (rt_ok(&r, "slice with clamping and negative indices")) {
    ok(has_dims(rt_get(&r, "y"), 3, (int64_t[]){2, 4, 3}), "slice: [2, 4, 3]");
    double want[24];
    int n = 0;
    for (int i = 1; i < 3; i++)
      for (int j = 0; j < 4; j++)
        for (int k = 1; k < 4; k++) want[n++] = x[(i * 4 + j) * 5 + k];
    rt_expect(rt_get(&r, "y"), 24, want, 0, "slice: values");
  }
  rt_free(&r);

  rt_init(&r); /* decrease_axis drops the sliced size-1 axis */
  rt_in_f64(&r, "x", "[3, 4, 5]", x);
  op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 2, (const int32_t[]){1, 2});
  set_ints(op, "starts", 2, (const int32_t[]){-2, 0});
  set_ints(op, "ends", 2, (const int32_t[]){-1, 2});
  set_ints(op, "decrease_axis", 1, (const int32_t[]){1});
  if (rt_ok(&r, "slice with decrease_axis")) {
    ok(has_dims(rt_get(&r, "y"), 2, (int64_t[]){3, 2}), "slice: decrease_axis [1] gives [3, 2]");
    double want[6];
    for (int i = 0; i < 3; i++)
      for (int k = 0; k < 2; k++) want[i * 2 + k] = x[(i * 4 + 2) * 5 + k];
    rt_expect(rt_get(&r, "y"), 6, want, 0, "slice: decreased values");
  }
  rt_free(&r);

  rt_init(&r); /* every dim decreased: [1] */
  rt_in_f64(&r, "x", "[3, 4]", x);
  op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 2, (const int32_t[]){0, 1});
  set_ints(op, "starts", 2, (const int32_t[]){2, 3});
  set_ints(op, "ends", 2, (const int32_t[]){3, 4});
  set_ints(op, "decrease_axis", 2, (const int32_t[]){0, 1});
  if (rt_ok(&r, "slice to one element")) {
    ok(has_dims(rt_get(&r, "y"), 1, (int64_t[]){1}), "slice: all decreased gives [1]");
    rt_expect(rt_get(&r, "y"), 1, ((double[]){x[11]}), 0, "slice: x[2][3]");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 4]", x);
  op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 1, (const int32_t[]){1});
  set_ints(op, "starts", 1, (const int32_t[]){4});
  set_ints(op, "ends", 1, (const int32_t[]){6});
  rt_fails(&r, PD_ESHAPE, "start 4 of axis 1 is past the end of Input [3, 4] (dim 4)",
           "slice: past the end");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 4]", x);
  op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 1, (const int32_t[]){1});
  set_ints(op, "starts", 1, (const int32_t[]){3});
  set_ints(op, "ends", 1, (const int32_t[]){1});
  rt_fails(&r, PD_ESHAPE, "end 1 of axis 1 comes before start 3 in Input [3, 4]",
           "slice: end before start");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 4]", x);
  op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 1, (const int32_t[]){2});
  set_ints(op, "starts", 1, (const int32_t[]){0});
  set_ints(op, "ends", 1, (const int32_t[]){1});
  rt_fails(&r, PD_EINVAL, "axis 2 is out of range for Input with 2 dims (expected -2 to 1)",
           "slice: axis out of range");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 4]", x);
  op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 1, (const int32_t[]){1});
  set_ints(op, "starts", 1, (const int32_t[]){0});
  set_ints(op, "ends", 1, (const int32_t[]){2});
  set_ints(op, "decrease_axis", 1, (const int32_t[]){1});
  rt_fails(&r, PD_ESHAPE, "decrease_axis 1 has size 2 after slicing Input [3, 4]; it must be 1",
           "slice: decrease_axis of size 2");
  rt_free(&r);

  rt_init(&r); /* a run-time dim: the batch declared -1 */
  rt_in_f64(&r, "x", "[3, 4]", x);
  decl(r.f.b, "x", PD_FP64, "[-1, 4]");
  op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 1, (const int32_t[]){0});
  set_ints(op, "starts", 1, (const int32_t[]){5});
  set_ints(op, "ends", 1, (const int32_t[]){7});
  rt_fails(&r, PD_ESHAPE, "start 5 of axis 0 is past the end of Input [3, 4] (dim 3)",
           "slice: past the end at run time");
  rt_free(&r);

  rt_init(&r);
  bumpy(x, 60);
  rt_in_f64(&r, "x", "[3, 4, 5]", x);
  op = rt_op(&r, "slice", "Input=x", "Out=y");
  set_ints(op, "axes", 2, (const int32_t[]){2, 0});
  set_ints(op, "starts", 2, (const int32_t[]){-3, 1});
  set_ints(op, "ends", 2, (const int32_t[]){1000, 2});
  set_ints(op, "decrease_axis", 1, (const int32_t[]){0});
  grad_check(&r, "Input", "Out", "slice with negative start and decrease_axis");
  rt_free(&r);
}

/* ---------------------------------------------------------------- expand_v2, tile */

static void test_expand_tile(void) {
  rt r;
  double x[6] = {1, 2, 3, 4, 5, 6};
  rt_init(&r); /* [3, 1] -> [2, 3, 4]: -1 keeps the 3 */
  rt_in_f64(&r, "x", "[3, 1]", x);
  set_ints(rt_op(&r, "expand_v2", "X=x", "Out=y"), "shape", 3, (const int32_t[]){2, -1, 4});
  if (rt_ok(&r, "expand_v2 [3, 1] to [2, -1, 4]")) {
    ok(has_dims(rt_get(&r, "y"), 3, (int64_t[]){2, 3, 4}), "expand_v2: [2, 3, 4]");
    double want[24];
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 4; k++) want[(i * 3 + j) * 4 + k] = x[j];
    rt_expect(rt_get(&r, "y"), 24, want, 0, "expand_v2: values");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 2]", x);
  set_ints(rt_op(&r, "expand_v2", "X=x", "Out=y"), "shape", 2, (const int32_t[]){3, 4});
  rt_fails(&r, PD_ESHAPE, "cannot expand X [3, 2] to shape [3, 4] (entry 1, 4)",
           "expand_v2: a dim that is neither 1 nor the target");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 2]", x);
  set_ints(rt_op(&r, "expand_v2", "X=x", "Out=y"), "shape", 1, (const int32_t[]){6});
  rt_fails(&r, PD_ESHAPE, "shape [6] has fewer dims than X [3, 2]", "expand_v2: rank too small");
  rt_free(&r);

  rt_init(&r); /* tile: repeat_times shorter than the rank lines up at the end */
  rt_in_f64(&r, "x", "[2, 3]", x);
  set_ints(rt_op(&r, "tile", "X=x", "Out=y"), "repeat_times", 1, (const int32_t[]){2});
  if (rt_ok(&r, "tile [2]")) {
    ok(has_dims(rt_get(&r, "y"), 2, (int64_t[]){2, 6}), "tile: [2, 3] x [2] gives [2, 6]");
    double want[12];
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 6; j++) want[i * 6 + j] = x[i * 3 + j % 3];
    rt_expect(rt_get(&r, "y"), 12, want, 0, "tile: values");
  }
  rt_free(&r);

  rt_init(&r); /* more repeats than dims: X gains leading dims */
  rt_in_f64(&r, "x", "[2, 3]", x);
  set_ints(rt_op(&r, "tile", "X=x", "Out=y"), "repeat_times", 3, (const int32_t[]){2, 2, 1});
  if (rt_ok(&r, "tile [2, 2, 1]")) {
    ok(has_dims(rt_get(&r, "y"), 3, (int64_t[]){2, 4, 3}), "tile: [2, 3] x [2, 2, 1] gives [2, 4, 3]");
    double want[24];
    for (int a = 0; a < 2; a++)
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) want[(a * 4 + i) * 3 + j] = x[(i % 2) * 3 + j];
    rt_expect(rt_get(&r, "y"), 24, want, 0, "tile: values with a new leading dim");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 3]", x);
  set_ints(rt_op(&r, "tile", "X=x", "Out=y"), "repeat_times", 2, (const int32_t[]){1, 0});
  rt_fails(&r, PD_EINVAL, "repeat_times [1, 0] has 0 at 1; each must be at least 1",
           "tile: a repeat of 0");
  rt_free(&r);

  double g[12];
  bumpy(g, 12);
  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 1, 2]", g);
  set_ints(rt_op(&r, "expand_v2", "X=x", "Out=y"), "shape", 4, (const int32_t[]){2, 3, 4, -1});
  grad_check(&r, "X", "Out", "expand_v2 over a size-1 dim and a new leading one");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 1, 3]", g);
  set_ints(rt_op(&r, "tile", "X=x", "Out=y"), "repeat_times", 3, (const int32_t[]){3, 2, 2});
  grad_check(&r, "X", "Out", "tile");
  rt_free(&r);

  rt_init(&r); /* a lower rank than repeat_times, an untiled dim between two tiled ones */
  rt_in_f64(&r, "x", "[2, 3]", g);
  set_ints(rt_op(&r, "tile", "X=x", "Out=y"), "repeat_times", 3, (const int32_t[]){2, 1, 3});
  grad_check(&r, "X", "Out", "tile [2, 3] by [2, 1, 3]");
  rt_free(&r);
}

/* ---------------------------------------------------------------- gather */

static void test_gather(void) {
  rt r;
  double x[24];
  ramp(x, 24, 1, 0);
  rt_init(&r);
  rt_in_f64(&r, "x", "[4, 3, 2]", x);
  rt_in_i64(&r, "i", "[3]", (int64_t[]){3, 0, 3});
  rt_op(&r, "gather", "X=x Index=i", "Out=y");
  if (rt_ok(&r, "gather axis 0")) {
    ok(has_dims(rt_get(&r, "y"), 3, (int64_t[]){3, 3, 2}), "gather: [3, 3, 2]");
    double want[18];
    const int ix[3] = {3, 0, 3};
    for (int a = 0; a < 3; a++)
      for (int k = 0; k < 6; k++) want[a * 6 + k] = x[ix[a] * 6 + k];
    rt_expect(rt_get(&r, "y"), 18, want, 0, "gather: rows 3, 0, 3");
  }
  rt_free(&r);

  rt_init(&r); /* axis 1, int32 [2, 1] indices */
  rt_in_f64(&r, "x", "[4, 3, 2]", x);
  rt_in(&r, "i", PD_INT32, "[2, 1]", (int32_t[]){2, 1});
  pd_op_set_attr_int(rt_op(&r, "gather", "X=x Index=i", "Out=y"), "axis", 1);
  if (rt_ok(&r, "gather axis 1")) {
    ok(has_dims(rt_get(&r, "y"), 3, (int64_t[]){4, 2, 2}), "gather axis 1: [4, 2, 2]");
    double want[16];
    const int ix[2] = {2, 1};
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 2; b++)
        for (int c = 0; c < 2; c++) want[(a * 2 + b) * 2 + c] = x[(a * 3 + ix[b]) * 2 + c];
    rt_expect(rt_get(&r, "y"), 16, want, 0, "gather axis 1: values");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[4, 3, 2]", x);
  rt_in_i64(&r, "i", "[2]", (int64_t[]){1, 4});
  rt_op(&r, "gather", "X=x Index=i", "Out=y");
  rt_fails(&r, PD_EINVAL, "Index[1] = 4 is out of range for dim 0 of X [4, 3, 2] (expected 0 to 3)",
           "gather: an index out of range");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[4, 3, 2]", x);
  rt_in_i64(&r, "i", "[2]", (int64_t[]){1, 2});
  pd_op_set_attr_int(rt_op(&r, "gather", "X=x Index=i", "Out=y"), "axis", 3);
  rt_fails(&r, PD_EINVAL, "axis 3 is out of range for X [4, 3, 2] (expected -3 to 2)",
           "gather: axis out of range");
  rt_free(&r);

  rt_init(&r); /* bools move as bytes */
  rt_in(&r, "x", PD_BOOL, "[3, 2]", (uint8_t[]){1, 0, 0, 1, 1, 1});
  rt_in_i64(&r, "i", "[3]", (int64_t[]){2, 2, 0});
  rt_op(&r, "gather", "X=x Index=i", "Out=y");
  if (rt_ok(&r, "gather of bools")) {
    const pd_tensor *y = rt_get(&r, "y");
    const uint8_t want[6] = {1, 1, 1, 1, 1, 0};
    ok(y && y->dtype == PD_BOOL && has_dims(y, 2, (int64_t[]){3, 2}) &&
           !memcmp(pd_tensor_data(y), want, sizeof want),
       "gather of bools: rows 2, 2, 0");
  }
  rt_free(&r);

  rt_init(&r); /* repeated indices: the gradient adds up */
  bumpy(x, 24);
  rt_in_f64(&r, "x", "[4, 3, 2]", x);
  rt_in_i64(&r, "i", "[4]", (int64_t[]){2, 0, 2, 2});
  pd_op_set_attr_int(rt_op(&r, "gather", "X=x Index=i", "Out=y"), "axis", -2);
  grad_check(&r, "X", "Out", "gather with repeated indices on axis -2");
  rt_free(&r);
}

/* ---------------------------------------------------------------- where, clip */

static void test_where(void) {
  rt r;
  double x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {-1, -2, -3, -4, -5, -6};
  uint8_t cond[6] = {1, 0, 0, 1, 1, 0};
  rt_init(&r);
  rt_in(&r, "c", PD_BOOL, "[2, 3]", cond);
  rt_in_f64(&r, "x", "[2, 3]", x);
  rt_in_f64(&r, "y", "[2, 3]", y);
  rt_op(&r, "where", "Condition=c X=x Y=y", "Out=o");
  if (rt_ok(&r, "where"))
    rt_expect(rt_get(&r, "o"), 6, ((double[]){1, -2, -3, 4, 5, -6}), 0, "where: picks");
  rt_free(&r);

  rt_init(&r); /* broadcasting: Condition [3], X [2, 1], Y [1] */
  uint8_t c3[3] = {1, 0, 1};
  rt_in(&r, "c", PD_BOOL, "[3]", c3);
  rt_in_f64(&r, "x", "[2, 1]", x);
  rt_in_f64(&r, "y", "[1]", y);
  rt_op(&r, "where", "Condition=c X=x Y=y", "Out=o");
  if (rt_ok(&r, "where broadcast")) {
    ok(has_dims(rt_get(&r, "o"), 2, (int64_t[]){2, 3}), "where: broadcast to [2, 3]");
    double want[6];
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++) want[i * 3 + j] = c3[j] ? x[i] : y[0];
    rt_expect(rt_get(&r, "o"), 6, want, 0, "where: broadcast values");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in(&r, "c", PD_BOOL, "[2, 3]", cond);
  rt_in_f64(&r, "x", "[2, 3]", x);
  rt_in_f64(&r, "y", "[2, 2]", y);
  rt_op(&r, "where", "Condition=c X=x Y=y", "Out=o");
  rt_fails(&r, PD_ESHAPE, "Condition [2, 3], X [2, 3] and Y [2, 2] do not broadcast together",
           "where: shapes that do not broadcast");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "c", "[2, 3]", x);
  rt_in_f64(&r, "x", "[2, 3]", x);
  rt_in_f64(&r, "y", "[2, 3]", y);
  rt_op(&r, "where", "Condition=c X=x Y=y", "Out=o");
  rt_fails(&r, PD_ETYPE, "Condition must hold bool values, got float64", "where: a float condition");
  rt_free(&r);

  double gx[6], gy[3];
  bumpy(gx, 6);
  ramp(gy, 3, 0.4, -0.5);
  rt_init(&r);
  rt_in(&r, "c", PD_BOOL, "[2, 3]", cond);
  rt_in_f64(&r, "x", "[2, 3]", gx);
  rt_in_f64(&r, "y", "[2, 3]", gx);
  rt_op(&r, "where", "Condition=c X=x Y=y", "Out=o");
  grad_check(&r, "X Y", "Out", "where, equal shapes");
  rt_free(&r);

  rt_init(&r); /* Y [3] broadcast over rows, X [2, 1] over columns, Condition [2, 3] */
  rt_in(&r, "c", PD_BOOL, "[2, 3]", cond);
  rt_in_f64(&r, "x", "[2, 1]", gx);
  rt_in_f64(&r, "y", "[3]", gy);
  rt_op(&r, "where", "Condition=c X=x Y=y", "Out=o");
  grad_check(&r, "X Y", "Out", "where with broadcasting");
  rt_free(&r);
}

static void test_clip(void) {
  rt r;
  double x[8] = {-3, -1, -0.5, 0, 0.25, 1, 2, 5};
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 4]", x);
  pd_op_desc *op = rt_op(&r, "clip", "X=x", "Out=o");
  pd_op_set_attr_float(op, "min", -1);
  pd_op_set_attr_float(op, "max", 1.5);
  if (rt_ok(&r, "clip")) {
    double want[8];
    for (int i = 0; i < 8; i++) want[i] = x[i] < -1 ? -1 : x[i] > 1.5 ? 1.5 : x[i];
    rt_expect(rt_get(&r, "o"), 8, want, 0, "clip: values");
  }
  rt_free(&r);

  rt_init(&r); /* Min and Max tensors win over the attributes */
  rt_in_f64(&r, "x", "[2, 4]", x);
  rt_in(&r, "lo", PD_FP32, "[1]", (float[]){0});
  rt_in(&r, "hi", PD_FP32, "[1]", (float[]){2});
  op = rt_op(&r, "clip", "X=x Min=lo Max=hi", "Out=o");
  pd_op_set_attr_float(op, "min", -1);
  pd_op_set_attr_float(op, "max", 1);
  if (rt_ok(&r, "clip with Min/Max"))
    rt_expect(rt_get(&r, "o"), 8, ((double[]){0, 0, 0, 0, 0.25, 1, 2, 2}), 0, "clip: tensor bounds");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 4]", x);
  op = rt_op(&r, "clip", "X=x", "Out=o");
  pd_op_set_attr_float(op, "min", 2);
  pd_op_set_attr_float(op, "max", 1);
  rt_fails(&r, PD_EINVAL, "min 2 is greater than max 1", "clip: min above max");
  rt_free(&r);

  double g[8] = {-3.1, -0.9, -0.45, 0.1, 0.35, 1.2, 2.3, 0.7};
  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 4]", g);
  op = rt_op(&r, "clip", "X=x", "Out=o");
  pd_op_set_attr_float(op, "min", -1);
  pd_op_set_attr_float(op, "max", 1.5);
  grad_check(&r, "X", "Out", "clip");
  rt_free(&r);
}

/* ---------------------------------------------------------------- one_hot */

static void test_one_hot_errors(void) {
  rt r;
  rt_init(&r);
  rt_in_i64(&r, "x", "[2, 2]", (int64_t[]){1, 0, 4, 2});
  pd_op_set_attr_int(rt_op(&r, "one_hot_v2", "X=x", "Out=y"), "depth", 4);
  rt_fails(&r, PD_EINVAL, "id 4 (element 2 of X [2, 2]) is outside [0, 4)",
           "one_hot_v2: an id out of range");
  rt_free(&r);

  rt_init(&r);
  rt_in_i64(&r, "x", "[3]", (int64_t[]){1, -1, 2});
  pd_op_set_attr_int(rt_op(&r, "one_hot_v2", "X=x", "Out=y"), "depth", 3);
  rt_fails(&r, PD_EINVAL, "id -1 (element 1 of X [3]) is outside [0, 3)",
           "one_hot_v2: a negative id");
  rt_free(&r);

  rt_init(&r);
  rt_in_i64(&r, "x", "[3, 2]", (int64_t[]){1, 0, 2, 2, 0, 1});
  pd_op_set_attr_int(rt_op(&r, "one_hot", "X=x", "Out=y"), "depth", 3);
  rt_fails(&r, PD_ESHAPE, "X must be [..., 1] with at least 2 dims, got [3, 2]",
           "one_hot: X's last dim must be 1");
  rt_free(&r);
}

int main(void) {
  pd_k_init();
  test_one_hot_errors();
  test_flatten();
  test_squeeze();
  test_unsqueeze();
  test_stack();
  test_shape();
  test_slice();
  test_expand_tile();
  test_gather();
  test_where();
  test_clip();
  return tap_done();
}
