/* optest_index.c -- the op-test table's rows of vm/ops/index.c (optest.h): clip (attributes and
 * the Min / Max tensors), expand_v2 and tile (shorter and longer lists than X's rank), gather
 * (axis attribute and Axis tensor, int32 and int64 Index, the [n, 1] Index), slice (negative
 * and out-of-range bounds, negative axes, decrease_axis), meshgrid (two and three inputs, a
 * rank-0 one, int64), where (NumPy broadcasting of the three operands) and one_hot, one_hot_v2
 * (int32 and int64 ids, the output dtypes, depth_tensor, allow_out_of_range). The references are
 * the definitions, in double, by coordinates: an output element's coordinates say which input
 * element it reads. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* ---------------------------------------------------------------- coordinates */

/* The row-major coordinates c of element i of a tensor of dims (rank nd). */
static void coords(int64_t i, int nd, const int64_t *dims, int64_t *c) {
  for (int d = nd - 1; d >= 0; d--) {
    c[d] = i % dims[d];
    i /= dims[d];
  }
}

/* The row-major offset in dims of the coordinates c taken modulo dims: a dim of size 1 reads
 * its one element (broadcasting), a repeated dim wraps around (tiling). */
static int64_t wrapped(int nd, const int64_t *dims, const int64_t *c) {
  int64_t o = 0;
  for (int d = 0; d < nd; d++) o = o * dims[d] + c[d] % dims[d];
  return o;
}

/* v's dims padded with leading 1s to rank nd (NumPy's alignment at the end). */
static void pad_dims(const ot_val *v, int nd, int64_t *out) {
  for (int d = 0; d < nd; d++) out[d] = d < nd - v->nd ? 1 : v->dims[d - (nd - v->nd)];
}

/* ---------------------------------------------------------------- the references */

/* clip: min(max(x, lo), hi); the Min and Max tensors, where given, stand for the attributes. */
static void ref_clip(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *mn = ot_in(r, "Min"), *mx = ot_in(r, "Max");
  double lo = mn ? mn->v[0] : ot_float(r, "min"), hi = mx ? mx->v[0] : ot_float(r, "max");
  double *o = ot_out_like(r, "Out", x);
  for (int64_t i = 0; i < x->n; i++) o[i] = fmin(fmax(x->v[i], lo), hi);
}

/* expand_v2 and tile. Both line X's dims up at the end with their list (shape, repeat_times),
 * the shorter padded with leading 1s. expand_v2: Out's dim is the shape's entry (-1: X's dim)
 * and X's dims of 1 are broadcast; tile: Out's dim is X's times the repeat, and X repeats
 * whole along it. Either way Out's element at c reads X's at c modulo X's (padded) dims. */
static void ref_repeat(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *sh = ot_in(r, "Shape");
  bool tile = strcmp(ot_op(r), "tile") == 0;
  int64_t a[OT_MAX_DIMS], xd[OT_MAX_DIMS], od[OT_MAX_DIMS], c[OT_MAX_DIMS];
  int na = ot_ints(r, tile ? "repeat_times" : "shape", a, OT_MAX_DIMS);
  /* expand_v2's shape at run time: Shape, else the expand_shapes_tensor list. */
  if (!tile && (sh || ot_nin(r, "expand_shapes_tensor") > 0)) {
    na = sh ? (int)sh->n : ot_nin(r, "expand_shapes_tensor");
    for (int i = 0; i < na; i++)
      a[i] = (int64_t)(sh ? sh->v[i] : ot_in_at(r, "expand_shapes_tensor", i)->v[0]);
  }
  int nd = na > x->nd ? na : x->nd;
  pad_dims(x, nd, xd);
  for (int d = 0; d < nd; d++) {
    int64_t v = d < nd - na ? 1 : a[d - (nd - na)];
    od[d] = tile ? xd[d] * v : v == -1 ? xd[d] : v;
  }
  double *o = ot_out(r, "Out", nd, od);
  for (int64_t i = 0; i < ot_numel(nd, od); i++) {
    coords(i, nd, od, c);
    o[i] = x->v[wrapped(nd, xd, c)];
  }
}

/* gather: Out takes X's slices Index[j] along the axis (the Axis tensor, else the attribute;
 * negative counts from the end): Out's element at c reads X's at c with c[axis] replaced by
 * Index[c[axis]]. Index is [m] or [m, 1]. */
static void ref_gather(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *ix = ot_in(r, "Index"), *at = ot_in(r, "Axis");
  int64_t axis = at ? (int64_t)at->v[0] : ot_int(r, "axis"), od[OT_MAX_DIMS], c[OT_MAX_DIMS];
  if (axis < 0) axis += x->nd;
  memcpy(od, x->dims, sizeof od);
  od[axis] = ix->dims[0];
  double *o = ot_out(r, "Out", x->nd, od);
  for (int64_t i = 0; i < ot_numel(x->nd, od); i++) {
    coords(i, x->nd, od, c);
    c[axis] = (int64_t)ix->v[c[axis]];
    o[i] = x->v[wrapped(x->nd, x->dims, c)];
  }
}

/* slice: along axes[i] (negative: from the end), the elements [starts[i], ends[i]), where a
 * negative bound counts from the end and both are then clamped to [0, dim] (Fluid); the axes
 * of decrease_axis (size 1 after slicing) are dropped, and when all go Out is [1]. */
static void ref_slice(ot_ref *r) {
  const ot_val *x = ot_in(r, "Input");
  int nd = x->nd;
  int64_t axes[OT_MAX_DIMS], st[OT_MAX_DIMS], en[OT_MAX_DIMS], dec[OT_MAX_DIMS];
  int64_t begin[OT_MAX_DIMS] = {0}, full[OT_MAX_DIMS], od[OT_MAX_DIMS], c[OT_MAX_DIMS];
  int na = ot_ints(r, "axes", axes, OT_MAX_DIMS);
  ot_ints(r, "starts", st, OT_MAX_DIMS);
  ot_ints(r, "ends", en, OT_MAX_DIMS);
  int ndec = ot_ints(r, "decrease_axis", dec, OT_MAX_DIMS);
  memcpy(full, x->dims, sizeof full);
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + nd : axes[i], dim = x->dims[a];
    int64_t s = st[i] < 0 ? st[i] + dim : st[i], e = en[i] < 0 ? en[i] + dim : en[i];
    s = s < 0 ? 0 : s > dim ? dim : s;
    e = e < 0 ? 0 : e > dim ? dim : e;
    begin[a] = s;
    full[a] = e - s;
  }
  int ond = 0;
  for (int d = 0; d < nd; d++) {
    bool drop = false;
    for (int i = 0; i < ndec; i++) drop = drop || (dec[i] < 0 ? dec[i] + nd : dec[i]) == d;
    if (!drop) od[ond++] = full[d];
  }
  if (ond == 0) od[ond++] = 1;
  double *o = ot_out(r, "Out", ond, od);
  for (int64_t i = 0; i < ot_numel(nd, full); i++) {
    coords(i, nd, full, c);
    for (int d = 0; d < nd; d++) c[d] += begin[d];
    o[i] = x->v[wrapped(nd, x->dims, c)];
  }
}

/* where: X where Condition, else Y, the three broadcast together by NumPy's rule. */
static void ref_where(ot_ref *r) {
  const ot_val *v[3] = {ot_in(r, "Condition"), ot_in(r, "X"), ot_in(r, "Y")};
  int nd = 0;
  int64_t pads[3][OT_MAX_DIMS], od[OT_MAX_DIMS], c[OT_MAX_DIMS];
  for (int k = 0; k < 3; k++) nd = v[k]->nd > nd ? v[k]->nd : nd;
  for (int k = 0; k < 3; k++) pad_dims(v[k], nd, pads[k]);
  for (int d = 0; d < nd; d++) {
    od[d] = 1;
    for (int k = 0; k < 3; k++) od[d] = pads[k][d] > od[d] ? pads[k][d] : od[d];
  }
  double *o = ot_out(r, "Out", nd, od);
  for (int64_t i = 0; i < ot_numel(nd, od); i++) {
    coords(i, nd, od, c);
    bool pick_x = v[0]->v[wrapped(nd, pads[0], c)] != 0;
    o[i] = pick_x ? v[1]->v[wrapped(nd, pads[1], c)] : v[2]->v[wrapped(nd, pads[2], c)];
  }
}

/* meshgrid: Out[i] has dims [n_0, ..., n_{N-1}] (n_k the elements of X[k]) and holds at
 * coordinates (c_0, ..., c_{N-1}) the element c_i of X[i]. */
static void ref_meshgrid(ot_ref *r) {
  int n = ot_nin(r, "X");
  int64_t od[OT_MAX_DIMS];
  for (int i = 0; i < n; i++) od[i] = ot_in_at(r, "X", i)->n;
  int64_t total = ot_numel(n, od);
  for (int i = 0; i < n; i++) {
    const ot_val *x = ot_in_at(r, "X", i);
    double *o = ot_out_at(r, "Out", i, n, od);
    int64_t inner = ot_numel(n - i - 1, od + i + 1);
    for (int64_t e = 0; e < total; e++) o[e] = x->v[(e / inner) % od[i]];
  }
}

/* ---------------------------------------------------------------- the rows */

/* one_hot: X [..., 1] -> [..., depth]; one_hot_v2: X -> [X's dims, depth]; each id a row of
 * zeros with a one at the id (none when it is outside [0, depth), allow_out_of_range). */
static void ref_one_hot(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *dt = ot_in(r, "depth_tensor");
  int64_t depth = dt ? (int64_t)dt->v[0] : ot_int(r, "depth"), od[OT_MAX_DIMS];
  int nd = x->nd;
  for (int d = 0; d < nd; d++) od[d] = x->dims[d];
  if (strcmp(ot_op(r), "one_hot") == 0)
    od[nd - 1] = depth;
  else
    od[nd++] = depth;
  double *o = ot_out(r, "Out", nd, od);
  for (int64_t i = 0; i < x->n; i++) {
    int64_t id = (int64_t)x->v[i];
    if (id >= 0 && id < depth) o[i * depth + id] = 1;
  }
}

static const double ids_5[] = {3, 0, 4, 4, 1, 2}, ids_oor[] = {2, -1, 5, 0};

const ot_row ot_rows_index[] = {
    /* one_hot_v2 (F.one_hot writes allow_out_of_range false) and Fluid 1.x's one_hot. */
    {.op = "one_hot_v2", .what = "int64 ids [2, 3], depth 5, float32",
     .attrs = "depth=5 dtype=5", .in = {{"X", "[2, 3]", OT_I64, .v = ids_5}},
     .ref = ref_one_hot},
    {.op = "one_hot_v2", .what = "int32 ids [6], float64", .attrs = "depth=5 dtype=6",
     .in = {{"X", "[6]", OT_I32, .v = ids_5}}, .ref = ref_one_hot},
    {.op = "one_hot_v2", .what = "depth_tensor over depth, int64 Out", .attrs = "depth=2 dtype=3",
     .in = {{"X", "[3, 2]", OT_I64, .v = ids_5}, {"depth_tensor", "[1]", OT_I32,
                                                   .v = (const double[]){6}}},
     .ref = ref_one_hot},
    {.op = "one_hot_v2", .what = "allow_out_of_range: zero rows",
     .attrs = "depth=4 allow_out_of_range=true", .in = {{"X", "[4]", OT_I64, .v = ids_oor}},
     .ref = ref_one_hot},
    {.op = "one_hot", .what = "X [6, 1], depth 5", .attrs = "depth=5",
     .in = {{"X", "[6, 1]", OT_I64, .v = ids_5}}, .ref = ref_one_hot},
    {.op = "one_hot", .what = "X [2, 3, 1] int32, int32 Out", .attrs = "depth=5 dtype=2",
     .in = {{"X", "[2, 3, 1]", OT_I32, .v = ids_5}}, .ref = ref_one_hot},
    /* clip: bounds inside the inputs' range [-1, 1), so that both clamp; the gradient is 1
     * inside and 0 outside (no input falls within the difference step of a bound). Gradients
     * are taken for X only: the op has none for Min and Max. */
    {.op = "clip", .attrs = "min=-0.5 max=0.625", .in = {{"X", "[3, 4]"}}, .ref = ref_clip},
    {.op = "clip", .what = "Min and Max tensors", .attrs = "min=-2 max=2",
     .in = {{"X", "[3, 4]"},
            {"Min", "[1]", .v = (const double[]){-0.25}},
            {"Max", "[1]", .v = (const double[]){0.5}}},
     .ref = ref_clip, .wrt = "X"},
    {.op = "clip", .what = "Max tensor, min attribute", .attrs = "min=-0.75 max=3",
     .in = {{"X", "[2, 5]"}, {"Max", "[1]", .v = (const double[]){0.25}}}, .ref = ref_clip,
     .wrt = "X"},

    /* expand_v2: -1 keeps X's dim; new leading dims; size-1 dims broadcast. */
    {.op = "expand_v2", .what = "-1 and a new leading dim", .attrs = "shape=[2, -1, 4]",
     .in = {{"X", "[3, 1]"}}, .ref = ref_repeat},
    {.op = "expand_v2", .what = "same rank", .attrs = "shape=[4, 3]", .in = {{"X", "[1, 3]"}},
     .ref = ref_repeat},
    {.op = "expand_v2", .what = "rank 4", .attrs = "shape=[2, -1, 4, -1]",
     .in = {{"X", "[2, 1, 3]"}}, .ref = ref_repeat},
    {.op = "expand_v2", .what = "int64", .attrs = "shape=[2, 3]",
     .in = {{"X", "[3]", OT_I64, -50, 50}}, .ref = ref_repeat, .no_grad = true},

    /* tile: fewer repeats than dims (they apply to the last dims), as many, and more (X gets
     * leading 1s). */
    {.op = "tile", .what = "fewer repeats than dims", .attrs = "repeat_times=[2]",
     .in = {{"X", "[2, 3]"}}, .ref = ref_repeat},
    /* expand_v2 with the shape given at run time: the Shape input over the list and the
     * attribute; the list (a -1 keeps X's dim) over the attribute, where Paddle writes -1. */
    {.op = "expand_v2", .what = "Shape input", .attrs = "shape=[9, 9]",
     .in = {{"X", "[3, 1]"}, {"Shape", "[3]", OT_I32, .v = (const double[]){2, 3, 4}},
            {"expand_shapes_tensor", "[1]", OT_I64, .v = (const double[]){5}}},
     .ref = ref_repeat},
    {.op = "expand_v2", .what = "expand_shapes_tensor", .attrs = "shape=[-1, -1, 2]",
     .in = {{"X", "[1, 3, 1]"}, {"expand_shapes_tensor", "[1]", OT_I64, .v = (const double[]){4}},
            {"expand_shapes_tensor", "[1]", OT_I32, .v = (const double[]){-1}},
            {"expand_shapes_tensor", "[1]", OT_I64, .v = (const double[]){2}}},
     .ref = ref_repeat},
    {.op = "tile", .what = "as many", .attrs = "repeat_times=[2, 3, 1]",
     .in = {{"X", "[2, 1, 3]"}}, .ref = ref_repeat},
    {.op = "tile", .what = "more repeats than dims", .attrs = "repeat_times=[2, 1, 2]",
     .in = {{"X", "[3]"}}, .ref = ref_repeat},
    {.op = "tile", .what = "int32", .attrs = "repeat_times=[1, 2]",
     .in = {{"X", "[2, 2]", OT_I32, -50, 50}}, .ref = ref_repeat, .no_grad = true},

    /* gather: repeated indices (their gradients add up), other axes, the Axis tensor over the
     * attribute, an [n, 1] Index. */
    {.op = "gather", .what = "int64 Index with a repeat",
     .in = {{"X", "[5, 3]"}, {"Index", "[4]", OT_I64, .v = (const double[]){4, 0, 2, 0}}},
     .ref = ref_gather},
    {.op = "gather", .what = "axis 1, int32 Index", .attrs = "axis=1",
     .in = {{"X", "[2, 4, 3]"}, {"Index", "[3]", OT_I32, .v = (const double[]){3, 1, 3}}},
     .ref = ref_gather},
    {.op = "gather", .what = "axis -1", .attrs = "axis=-1",
     .in = {{"X", "[2, 3, 4]"}, {"Index", "[5]", OT_I64, 0, 3}}, .ref = ref_gather},
    {.op = "gather", .what = "Axis tensor", .attrs = "axis=0",
     .in = {{"X", "[3, 4]"},
            {"Index", "[2]", OT_I64, .v = (const double[]){2, 0}},
            {"Axis", "[1]", OT_I32, .v = (const double[]){1}}},
     .ref = ref_gather},
    {.op = "gather", .what = "Index [n, 1]",
     .in = {{"X", "[4, 2]"}, {"Index", "[3, 1]", OT_I64, .v = (const double[]){1, 3, 1}}},
     .ref = ref_gather},
    {.op = "gather", .what = "int64 X",
     .in = {{"X", "[4, 2]", OT_I64, -50, 50},
            {"Index", "[2]", OT_I32, .v = (const double[]){3, 0}}},
     .ref = ref_gather, .no_grad = true},

    /* slice: an end past the dim and negative bounds; a negative axis and a start before -dim
     * (both clamp); decrease_axis; every axis decreased ([1]); axes out of order. */
    {.op = "slice", .what = "clamped and negative bounds",
     .attrs = "axes=[0, 2] starts=[1, -4] ends=[100, -1]", .in = {{"Input", "[3, 4, 5]"}},
     .ref = ref_slice},
    {.op = "slice", .what = "negative axis, start before -dim",
     .attrs = "axes=[-1] starts=[-10] ends=[3]", .in = {{"Input", "[4, 6]"}}, .ref = ref_slice},
    {.op = "slice", .what = "decrease_axis",
     .attrs = "axes=[1, 2] starts=[-2, 0] ends=[-1, 2] decrease_axis=[1]",
     .in = {{"Input", "[3, 4, 5]"}}, .ref = ref_slice},
    {.op = "slice", .what = "every axis decreased",
     .attrs = "axes=[0, 1] starts=[2, 3] ends=[3, 4] decrease_axis=[0, 1]",
     .in = {{"Input", "[3, 4]"}}, .ref = ref_slice},
    {.op = "slice", .what = "axes out of order",
     .attrs = "axes=[2, 0] starts=[-3, 1] ends=[1000, 2] decrease_axis=[0]",
     .in = {{"Input", "[3, 4, 5]"}}, .ref = ref_slice},
    {.op = "slice", .what = "int64", .attrs = "axes=[1] starts=[1] ends=[3]",
     .in = {{"Input", "[2, 4]", OT_I64, -50, 50}}, .ref = ref_slice, .no_grad = true},

    /* where: equal shapes; the three broadcast against each other (the gradients of X and Y
     * sum over the dims they were broadcast along). */
    {.op = "where",
     .in = {{"Condition", "[3, 4]", OT_BOOL, 0, 1}, {"X", "[3, 4]"}, {"Y", "[3, 4]"}},
     .ref = ref_where},
    {.op = "where", .what = "broadcast",
     .in = {{"Condition", "[3, 1]", OT_BOOL, 0, 1}, {"X", "[4]"}, {"Y", "[3, 4]"}},
     .ref = ref_where},
    {.op = "where", .what = "broadcast, rank 3",
     .in = {{"Condition", "[2, 1, 4]", OT_BOOL, 0, 1}, {"X", "[3, 1]"}, {"Y", "[4]"}},
     .ref = ref_where},
    {.op = "where", .what = "int64",
     .in = {{"Condition", "[5]", OT_BOOL, 0, 1}, {"X", "[5]", OT_I64, -9, 9},
            {"Y", "[5]", OT_I64, -9, 9}},
     .ref = ref_where, .no_grad = true},
    /* meshgrid: two inputs (PP-YOLOE's anchor grid, int64 there), three with a rank-0 one. */
    {.op = "meshgrid", .what = "2 inputs", .in = {{"X", "[3]"}, {"X", "[4]"}}, .outs = "Out:2",
     .ref = ref_meshgrid},
    {.op = "meshgrid", .what = "3 inputs, rank 0", .in = {{"X", "[2]"}, {"X", "[]"}, {"X", "[3]"}},
     .outs = "Out:3", .ref = ref_meshgrid},
    {.op = "meshgrid", .what = "int64",
     .in = {{"X", "[2]", OT_I64, 0, 40}, {"X", "[5]", OT_I64, -9, 9}}, .outs = "Out:2",
     .ref = ref_meshgrid, .no_grad = true},
    {0},
};
