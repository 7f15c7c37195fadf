/* optest_shape.c -- the op-test table's rows of vm/ops/shape.c (optest.h): concat, split and
 * stack (axes, negative axes, the AxisTensor and SectionsTensorList inputs, several Out vars),
 * transpose2, and the reshapes reshape2 (0 and -1, the Shape and ShapeTensor inputs),
 * flatten_contiguous_range, flatten2, squeeze2 (a listed dim other than 1 stays) and
 * unsqueeze2; the Fluid 1.x versions without XShape through their own names (transpose,
 * reshape, flatten, squeeze, unsqueeze); the channel shuffles pixel_shuffle (NCHW, NHWC),
 * shuffle_channel and channel_shuffle (2 and 3 groups, NHWC). The references are the
 * definitions in double: the joins and cuts view their tensors as [pre, axis, post] blocks; a
 * reshape keeps X's elements in order, and its XShape is [0] followed by X's dims (it holds no
 * elements; only its dims say anything); a shuffle's Out element is read from X by its index
 * formula. The gradient check weighs Out (or stack's Y) alone. */
#include "config.h"

#include <string.h>

#include "tests/vm/ops/optest.h"

/* The product of dims [from, to). */
static int64_t prod(const int64_t *dims, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++) p *= dims[d];
  return p;
}

/* The axis of concat and split: the AxisTensor's value when given, else the attribute;
 * negative counts from the end of rank nd. */
static int axis_of(ot_ref *r, int nd) {
  const ot_val *at = ot_in(r, "AxisTensor");
  int64_t a = at ? (int64_t)at->v[0] : ot_int(r, "axis");
  return (int)(a < 0 ? a + nd : a);
}

/* ---------------------------------------------------------------- joins and cuts */

/* concat: the X joined along the axis; over [pre, len_k, post] views, each block of Out's is
 * X[0]'s block p, then X[1]'s, ... */
static void ref_concat(ot_ref *r) {
  const ot_val *x0 = ot_in(r, "X");
  int n = ot_nin(r, "X"), nd = x0->nd, axis = axis_of(r, nd);
  int64_t od[OT_MAX_DIMS];
  memcpy(od, x0->dims, sizeof od);
  od[axis] = 0;
  for (int k = 0; k < n; k++) od[axis] += ot_in_at(r, "X", k)->dims[axis];
  double *o = ot_out(r, "Out", nd, od);
  int64_t pre = prod(od, 0, axis), post = prod(od, axis + 1, nd);
  for (int64_t p = 0; p < pre; p++)
    for (int k = 0; k < n; k++) {
      const ot_val *x = ot_in_at(r, "X", k);
      int64_t len = x->dims[axis] * post;
      memcpy(o, x->v + p * len, sizeof(double) * (size_t)len);
      o += len;
    }
}

/* split: X cut along the axis into num equal parts, or into parts of the sizes in sections
 * (the SectionsTensorList's values when given), where one -1 takes what the others leave. */
static void ref_split(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  int nd = x->nd, axis = axis_of(r, nd), nout;
  int64_t sizes[16], dim = x->dims[axis], num = ot_int(r, "num");
  if (ot_nin(r, "SectionsTensorList") > 0) {
    nout = ot_nin(r, "SectionsTensorList");
    for (int k = 0; k < nout; k++) sizes[k] = (int64_t)ot_in_at(r, "SectionsTensorList", k)->v[0];
  } else if (num > 0) {
    nout = (int)num;
    for (int k = 0; k < nout; k++) sizes[k] = dim / num;
  } else {
    nout = ot_ints(r, "sections", sizes, 16);
  }
  int64_t rest = dim;
  for (int k = 0; k < nout; k++) rest -= sizes[k] == -1 ? 0 : sizes[k];
  for (int k = 0; k < nout; k++) sizes[k] = sizes[k] == -1 ? rest : sizes[k];
  int64_t pre = prod(x->dims, 0, axis), post = prod(x->dims, axis + 1, nd), off = 0;
  for (int k = 0; k < nout; k++) {
    int64_t od[OT_MAX_DIMS];
    memcpy(od, x->dims, sizeof od);
    od[axis] = sizes[k];
    double *o = ot_out_at(r, "Out", k, nd, od);
    for (int64_t p = 0; p < pre; p++)
      memcpy(o + p * sizes[k] * post, x->v + (p * dim + off) * post,
             sizeof(double) * (size_t)(sizes[k] * post));
    off += sizes[k];
  }
}

/* stack: the n X (one shape) joined along a new axis of size n (-(rank + 1)..rank): Y viewed
 * as [pre, n, post] holds X[k]'s block p at (p, k). */
static void ref_stack(ot_ref *r) {
  const ot_val *x0 = ot_in(r, "X");
  int n = ot_nin(r, "X"), nd = x0->nd;
  int64_t a = ot_int(r, "axis"), od[OT_MAX_DIMS];
  int axis = (int)(a < 0 ? a + nd + 1 : a);
  for (int d = 0, j = 0; d <= nd; d++) od[d] = d == axis ? n : x0->dims[j++];
  double *y = ot_out(r, "Y", nd + 1, od);
  int64_t pre = prod(x0->dims, 0, axis), post = prod(x0->dims, axis, nd);
  for (int64_t p = 0; p < pre; p++)
    for (int k = 0; k < n; k++)
      memcpy(y + (p * n + k) * post, ot_in_at(r, "X", k)->v + p * post,
             sizeof(double) * (size_t)post);
}

/* ---------------------------------------------------------------- transpose2, reshapes */

/* XShape: [0] then X's dims, no elements; the Fluid 1.x versions (a name without the 2) have
 * none. */
static void out_xshape(ot_ref *r, const ot_val *x) {
  const char *op = ot_op(r);
  if (op[strlen(op) - 1] != '2') return;
  int64_t xs[OT_MAX_DIMS + 1] = {0};
  memcpy(xs + 1, x->dims, sizeof(int64_t) * (size_t)x->nd);
  ot_out(r, "XShape", x->nd + 1, xs);
}

/* transpose2: Out's dim i is X's dim axis[i]; Out's element at c is X's at x_c with
 * x_c[axis[i]] = c[i]. */
static void ref_transpose2(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  int nd = x->nd;
  int64_t perm[OT_MAX_DIMS], od[OT_MAX_DIMS], xstr[OT_MAX_DIMS];
  ot_ints(r, "axis", perm, OT_MAX_DIMS);
  for (int d = nd - 1; d >= 0; d--) xstr[d] = d == nd - 1 ? 1 : xstr[d + 1] * x->dims[d + 1];
  for (int i = 0; i < nd; i++) od[i] = x->dims[perm[i]];
  double *o = ot_out(r, "Out", nd, od);
  for (int64_t i = 0; i < x->n; i++) {
    int64_t rest = i, xi = 0;
    for (int d = nd - 1; d >= 0; d--) {
      xi += rest % od[d] * xstr[perm[d]];
      rest /= od[d];
    }
    o[i] = x->v[xi];
  }
  out_xshape(r, x);
}

/* Out's dims of the reshape ops for X (returns the rank; the 1.x versions as the others):
 *   reshape2: the ShapeTensor values (one var per dim), else Shape's, else the attribute;
 *             0 copies X's dim at that place, one -1 takes the elements left;
 *   flatten_contiguous_range: dims start_axis..stop_axis (negative: from the end) become one;
 *   flatten2: [the product of the dims before axis, that of the others];
 *   squeeze2: X's dims without the axes listed whose size is 1, or without every 1;
 *   unsqueeze2: a 1 inserted at each of axes (AxesTensorList's values, AxesTensor's, else
 *             the attribute's) in turn, against the rank so far (negative: from the end of the
 *             dims so far plus one). */
static int reshaped_dims(ot_ref *r, const ot_val *x, int64_t *od) {
  const char *op = ot_op(r);
  int64_t a[OT_MAX_DIMS];
  int nx = x->nd, n = 0;
  if (strncmp(op, "reshape", 7) == 0) {
    const ot_val *sh = ot_in(r, "Shape");
    if (ot_nin(r, "ShapeTensor") > 0) {
      n = ot_nin(r, "ShapeTensor");
      for (int i = 0; i < n; i++) od[i] = (int64_t)ot_in_at(r, "ShapeTensor", i)->v[0];
    } else if (sh) {
      n = (int)sh->n;
      for (int i = 0; i < n; i++) od[i] = (int64_t)sh->v[i];
    } else {
      n = ot_ints(r, "shape", od, OT_MAX_DIMS);
    }
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
      if (od[i] == 0) od[i] = x->dims[i];
      if (od[i] != -1) known *= od[i];
    }
    for (int i = 0; i < n; i++)
      if (od[i] == -1) od[i] = x->n / known;
  } else if (strcmp(op, "flatten_contiguous_range") == 0) {
    int start = (int)ot_int(r, "start_axis"), stop = (int)ot_int(r, "stop_axis");
    start += start < 0 ? nx : 0;
    stop += stop < 0 ? nx : 0;
    for (int d = 0; d < start; d++) od[n++] = x->dims[d];
    od[n++] = prod(x->dims, start, stop + 1);
    for (int d = stop + 1; d < nx; d++) od[n++] = x->dims[d];
  } else if (strncmp(op, "flatten", 7) == 0) {
    int axis = (int)ot_int(r, "axis");
    od[0] = prod(x->dims, 0, axis);
    od[1] = prod(x->dims, axis, nx);
    n = 2;
  } else if (strncmp(op, "squeeze", 7) == 0) {
    int na = ot_ints(r, "axes", a, OT_MAX_DIMS);
    for (int d = 0; d < nx; d++) {
      bool listed = na == 0;
      for (int i = 0; i < na; i++) listed = listed || (a[i] < 0 ? a[i] + nx : a[i]) == d;
      if (!listed || x->dims[d] != 1) od[n++] = x->dims[d];
    }
  } else {
    const ot_val *axt = ot_in(r, "AxesTensor");
    int nl = ot_nin(r, "AxesTensorList"), na = nl > 0 ? nl : axt ? (int)axt->n : 0;
    for (int i = 0; i < na; i++)
      a[i] = (int64_t)(nl > 0 ? ot_in_at(r, "AxesTensorList", i)->v[0] : axt->v[i]);
    if (na == 0) na = ot_ints(r, "axes", a, OT_MAX_DIMS);
    n = nx;
    memcpy(od, x->dims, sizeof(int64_t) * (size_t)nx);
    for (int i = 0; i < na; i++, n++) {
      int64_t at = a[i] < 0 ? a[i] + n + 1 : a[i];
      memmove(od + at + 1, od + at, sizeof(int64_t) * (size_t)(n - at));
      od[at] = 1;
    }
  }
  return n;
}

/* The reshapes: Out holds X's elements in order, in the new dims. */
static void ref_reshaped(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  int64_t od[OT_MAX_DIMS];
  int nd = reshaped_dims(r, x, od);
  double *o = ot_out(r, "Out", nd, od);
  memcpy(o, x->v, sizeof(double) * (size_t)x->n);
  out_xshape(r, x);
}

/* ---------------------------------------------------------------- the channel shuffles */

/* pixel_shuffle (r = upscale_factor): Out [N, C, H r, W r] (NCHW; NHWC: [N, H r, W r, C]) with
 * Out[n, c, y, x] = X[n, c r r + (y mod r) r + x mod r, y / r, x / r].
 * shuffle_channel (group) and channel_shuffle (groups, data_format): g groups of C / g
 * channels; Out's channel a g + b is X's channel b (C / g) + a. */
static void ref_shuffle(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  const char *op = ot_op(r);
  bool pixel = strcmp(op, "pixel_shuffle") == 0;
  bool nhwc = strcmp(op, "shuffle_channel") != 0 && strcmp(ot_str(r, "data_format"), "NHWC") == 0;
  int64_t k = ot_int(r, pixel ? "upscale_factor" : strcmp(op, "shuffle_channel") == 0 ? "group"
                                                                                     : "groups");
  int64_t n = x->dims[0], ch = x->dims[nhwc ? 3 : 1], h = x->dims[nhwc ? 1 : 2];
  int64_t w = x->dims[nhwc ? 2 : 3], oc = pixel ? ch / (k * k) : ch, oh = pixel ? h * k : h;
  int64_t ow = pixel ? w * k : w;
  int64_t od[4] = {n, oc, oh, ow}, odh[4] = {n, oh, ow, oc};
  double *o = ot_out(r, "Out", 4, nhwc ? odh : od);
  for (int64_t b = 0; b < n; b++)
    for (int64_t c = 0; c < oc; c++)
      for (int64_t y = 0; y < oh; y++)
        for (int64_t xx = 0; xx < ow; xx++) {
          int64_t ic = pixel ? c * k * k + y % k * k + xx % k : c % k * (ch / k) + c / k;
          int64_t iy = pixel ? y / k : y, ix = pixel ? xx / k : xx;
          int64_t src = nhwc ? ((b * h + iy) * w + ix) * ch + ic
                             : ((b * ch + ic) * h + iy) * w + ix;
          int64_t dst = nhwc ? ((b * oh + y) * ow + xx) * oc + c
                             : ((b * oc + c) * oh + y) * ow + xx;
          o[dst] = x->v[src];
        }
}

/* ---------------------------------------------------------------- the rows */

/* One-element integer inputs: an axis, a dim, a section size. */
#define I32_1(val) "[1]", OT_I32, .v = (const double[]) { val }
#define I64_1(val) "[1]", OT_I64, .v = (const double[]) { val }

const ot_row ot_rows_shape[] = {
    /* concat: along axis 0 (the default), a middle axis, -1; the AxisTensor over the
     * attribute. The gradient of every X is checked. */
    {.op = "concat", .in = {{"X", "[2, 3]"}, {"X", "[1, 3]"}, {"X", "[3, 3]"}}, .ref = ref_concat},
    {.op = "concat", .what = "axis 1", .attrs = "axis=1",
     .in = {{"X", "[2, 1, 3]"}, {"X", "[2, 4, 3]"}}, .ref = ref_concat},
    {.op = "concat", .what = "axis -1", .attrs = "axis=-1",
     .in = {{"X", "[2, 2]"}, {"X", "[2, 3]"}, {"X", "[2, 1]"}}, .ref = ref_concat},
    {.op = "concat", .what = "AxisTensor", .attrs = "axis=0",
     .in = {{"X", "[3, 2]"}, {"X", "[3, 4]"}, {"AxisTensor", I32_1(1)}}, .ref = ref_concat},
    {.op = "concat", .what = "int64",
     .in = {{"X", "[2]", OT_I64, -9, 9}, {"X", "[3]", OT_I64, -9, 9}}, .ref = ref_concat,
     .no_grad = true},

    /* split: num equal parts; sections with a -1; the AxisTensor; the SectionsTensorList over
     * the attribute. The gradient weighs every Out var. */
    {.op = "split", .what = "num 3, axis 1", .attrs = "num=3 axis=1", .in = {{"X", "[2, 6]"}},
     .outs = "Out:3", .ref = ref_split},
    {.op = "split", .what = "sections with -1", .attrs = "sections=[2, -1, 1]",
     .in = {{"X", "[6, 2]"}}, .outs = "Out:3", .ref = ref_split},
    {.op = "split", .what = "axis -1", .attrs = "sections=[1, 3] axis=-1",
     .in = {{"X", "[2, 2, 4]"}}, .outs = "Out:2", .ref = ref_split},
    {.op = "split", .what = "AxisTensor", .attrs = "num=2 axis=0",
     .in = {{"X", "[3, 4]"}, {"AxisTensor", I64_1(1)}}, .outs = "Out:2", .ref = ref_split},
    {.op = "split", .what = "SectionsTensorList", .attrs = "sections=[1, 1] axis=1",
     .in = {{"X", "[2, 5]"}, {"SectionsTensorList", I32_1(3)}, {"SectionsTensorList", I32_1(-1)}},
     .outs = "Out:2", .ref = ref_split},

    /* stack: a new first, middle and last axis (-1). */
    {.op = "stack", .in = {{"X", "[2, 3]"}, {"X", "[2, 3]"}, {"X", "[2, 3]"}}, .ref = ref_stack},
    {.op = "stack", .what = "axis 1", .attrs = "axis=1",
     .in = {{"X", "[2, 3]"}, {"X", "[2, 3]"}}, .ref = ref_stack},
    {.op = "stack", .what = "axis -1", .attrs = "axis=-1",
     .in = {{"X", "[3, 2]"}, {"X", "[3, 2]"}, {"X", "[3, 2]"}}, .ref = ref_stack},

    /* transpose2: a matrix, a rotation of three dims, four dims. */
    {.op = "transpose2", .attrs = "axis=[1, 0]", .in = {{"X", "[3, 4]"}}, .ref = ref_transpose2},
    {.op = "transpose2", .what = "rank 3", .attrs = "axis=[2, 0, 1]", .in = {{"X", "[2, 3, 4]"}},
     .ref = ref_transpose2},
    {.op = "transpose2", .what = "rank 4", .attrs = "axis=[0, 2, 3, 1]",
     .in = {{"X", "[2, 3, 2, 2]"}}, .ref = ref_transpose2},

    /* reshape2: 0 and -1 in the attribute; the Shape input; the ShapeTensor list (it wins
     * over the attribute). */
    {.op = "reshape2", .what = "0 and -1", .attrs = "shape=[0, -1]", .in = {{"X", "[2, 3, 4]"}},
     .ref = ref_reshaped},
    {.op = "reshape2", .what = "more dims", .attrs = "shape=[3, -1, 2, 1]",
     .in = {{"X", "[4, 3]"}}, .ref = ref_reshaped},
    {.op = "reshape2", .what = "Shape", .attrs = "shape=[24]",
     .in = {{"X", "[2, 3, 4]"}, {"Shape", "[3]", OT_I32, .v = (const double[]){4, 0, -1}}},
     .ref = ref_reshaped},
    {.op = "reshape2", .what = "ShapeTensor", .attrs = "shape=[6, 2]",
     .in = {{"X", "[2, 6]"}, {"ShapeTensor", I64_1(4)}, {"ShapeTensor", I64_1(3)}},
     .ref = ref_reshaped},
    {.op = "reshape2", .what = "int64", .attrs = "shape=[-1]",
     .in = {{"X", "[2, 3]", OT_I64, -9, 9}}, .ref = ref_reshaped, .no_grad = true},

    /* flatten_contiguous_range: the default (dim 1 alone: no change), a middle range, all. */
    {.op = "flatten_contiguous_range", .what = "default axes", .in = {{"X", "[2, 3, 4]"}},
     .ref = ref_reshaped},
    {.op = "flatten_contiguous_range", .what = "axes 1 to 2", .attrs = "start_axis=1 stop_axis=2",
     .in = {{"X", "[2, 3, 2, 2]"}}, .ref = ref_reshaped},
    {.op = "flatten_contiguous_range", .what = "axes 0 to -1",
     .attrs = "start_axis=0 stop_axis=-1", .in = {{"X", "[2, 3, 4]"}}, .ref = ref_reshaped},

    /* squeeze2: listed axes (one negative), and every size-1 dim. */
    {.op = "squeeze2", .what = "axes", .attrs = "axes=[1, -1]", .in = {{"X", "[3, 1, 4, 1]"}},
     .ref = ref_reshaped},
    {.op = "squeeze2", .what = "every 1", .in = {{"X", "[1, 3, 1, 2]"}}, .ref = ref_reshaped},
    {.op = "squeeze2", .what = "a 1 left", .attrs = "axes=[0]", .in = {{"X", "[1, 4, 1]"}},
     .ref = ref_reshaped},

    /* squeeze2 on a listed dim other than 1: it stays (Paddle 1.8 on). */
    {.op = "squeeze2", .what = "a listed dim not 1", .attrs = "axes=[0, 1]",
     .in = {{"X", "[3, 1, 4]"}}, .ref = ref_reshaped},

    /* flatten2: the default axis 1, axis 0 ([1, all]), axis rank ([all, 1]). */
    {.op = "flatten2", .what = "axis 1", .in = {{"X", "[2, 3, 4]"}}, .ref = ref_reshaped},
    {.op = "flatten2", .what = "axis 0", .attrs = "axis=0", .in = {{"X", "[2, 3]"}},
     .ref = ref_reshaped},
    {.op = "flatten2", .what = "axis 3", .attrs = "axis=3", .in = {{"X", "[2, 3, 2]"}},
     .ref = ref_reshaped},

    /* The Fluid 1.x versions, without XShape: each through its own name. */
    {.op = "transpose", .what = "rank 3", .attrs = "axis=[1, 2, 0]", .in = {{"X", "[2, 3, 4]"}},
     .ref = ref_transpose2},
    {.op = "reshape", .what = "0 and -1", .attrs = "shape=[0, -1, 2]", .in = {{"X", "[2, 3, 4]"}},
     .ref = ref_reshaped},
    {.op = "reshape", .what = "Shape", .attrs = "shape=[24]",
     .in = {{"X", "[2, 3, 4]"}, {"Shape", "[2]", OT_I32, .v = (const double[]){-1, 4}}},
     .ref = ref_reshaped},
    {.op = "flatten", .what = "axis 2", .attrs = "axis=2", .in = {{"X", "[2, 3, 2, 2]"}},
     .ref = ref_reshaped},
    {.op = "squeeze", .what = "axes", .attrs = "axes=[-1]", .in = {{"X", "[3, 4, 1]"}},
     .ref = ref_reshaped},
    {.op = "squeeze", .what = "every 1", .in = {{"X", "[1, 3, 1]"}}, .ref = ref_reshaped},
    {.op = "unsqueeze", .what = "axes", .attrs = "axes=[0, 2]", .in = {{"X", "[3, 4]"}},
     .ref = ref_reshaped},
    {.op = "unsqueeze", .what = "AxesTensorList",
     .in = {{"X", "[3, 4]"}, {"AxesTensorList", I32_1(-1)}, {"AxesTensorList", I32_1(1)}},
     .ref = ref_reshaped},

    /* The channel shuffles. */
    {.op = "pixel_shuffle", .what = "r 2 NCHW", .attrs = "upscale_factor=2",
     .in = {{"X", "[2, 8, 2, 3]"}}, .ref = ref_shuffle},
    {.op = "pixel_shuffle", .what = "r 3 NHWC", .attrs = "upscale_factor=3 data_format=NHWC",
     .in = {{"X", "[1, 2, 2, 18]"}}, .ref = ref_shuffle},
    {.op = "pixel_shuffle", .what = "r 1", .in = {{"X", "[1, 3, 2, 2]"}}, .ref = ref_shuffle},
    {.op = "shuffle_channel", .what = "group 2", .attrs = "group=2",
     .in = {{"X", "[2, 6, 2, 2]"}}, .ref = ref_shuffle},
    {.op = "shuffle_channel", .what = "group 3", .attrs = "group=3",
     .in = {{"X", "[1, 6, 3, 2]"}}, .ref = ref_shuffle},
    {.op = "channel_shuffle", .what = "groups 2", .attrs = "groups=2",
     .in = {{"X", "[2, 4, 2, 3]"}}, .ref = ref_shuffle},
    {.op = "channel_shuffle", .what = "groups 3 NHWC", .attrs = "groups=3 data_format=NHWC",
     .in = {{"X", "[2, 2, 3, 6]"}}, .ref = ref_shuffle},
    {.op = "pixel_shuffle", .what = "int64", .attrs = "upscale_factor=2",
     .in = {{"X", "[1, 4, 1, 2]", OT_I64, -9, 9}}, .ref = ref_shuffle, .no_grad = true},

    {.op = "unsqueeze2", .what = "AxesTensor",
     .in = {{"X", "[2, 3]"}, {"AxesTensor", "[2]", OT_I64, .v = (const double[]){0, 3}}},
     .ref = ref_reshaped},

    /* unsqueeze2: axes in turn ([0, -1] on [3, 4] is [1, 3, 4, 1]); a repeated axis. */
    {.op = "unsqueeze2", .what = "first and last", .attrs = "axes=[0, -1]",
     .in = {{"X", "[3, 4]"}}, .ref = ref_reshaped},
    {.op = "unsqueeze2", .what = "in turn", .attrs = "axes=[1, 1, 4]", .in = {{"X", "[2, 3]"}},
     .ref = ref_reshaped},
    {0},
};
