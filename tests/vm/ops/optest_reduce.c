/* optest_reduce.c -- the op-test table's rows of vm/ops/reduce.c (optest.h): mean, the
 * reduce_* ops (dim lists with negative entries, keep_dim, reduce_all, the default dim,
 * integers, out_dtype), cumsum (any axis, flatten, exclusive, reverse, integers), top_k and
 * top_k_v2 (k or the K input, any axis, the largest or the smallest; Out and the exact Indices)
 * and arg_max / arg_min. The references walk X element by element in double. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* Distinct values in [-1, 1), i * 37 mod 101 scaled (37 is invertible mod 101: no two agree):
 * the inputs of max, min and top_k, without ties to break or near ties for a finite difference
 * to swap. */
#define P_(i) ((double)((i) * 37 % 101) / 50.5 - 1.0)
#define P4_(i) P_(i), P_(i + 1), P_(i + 2), P_(i + 3)
#define P16_(i) P4_(i), P4_(i + 4), P4_(i + 8), P4_(i + 12)
static const double distinct[48] = {P16_(0), P16_(16), P16_(32)};

/* mean: Out [1] = the mean of every element of X. */
static void ref_mean(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  double s = 0;
  for (int64_t i = 0; i < x->n; i++) s += x->v[i];
  ot_out(r, "Out", 1, (int64_t[]){1})[0] = s / (double)x->n;
}

/* reduce_sum / mean / max / min / prod over the dims listed in `dim` (negative ones count from
 * the end), over all of them with reduce_all or an empty list; reduced dims stay as 1s with
 * keep_dim, and a result without dims is [1]. The op's name picks the reduction. */
static void ref_reduce(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  const char *op = ot_op(r) + strlen("reduce_");
  int64_t dim[OT_MAX_DIMS], od[OT_MAX_DIMS], ostride[OT_MAX_DIMS];
  int ndim = ot_ints(r, "dim", dim, OT_MAX_DIMS), ond = 0;
  bool red[OT_MAX_DIMS], all = ot_bool(r, "reduce_all") || ndim == 0;
  for (int d = 0; d < x->nd; d++) red[d] = all;
  for (int i = 0; i < ndim && !all; i++) red[dim[i] < 0 ? dim[i] + x->nd : dim[i]] = true;
  int64_t on = 1, count = 1;
  for (int d = 0; d < x->nd; d++) {
    if (!red[d] || ot_bool(r, "keep_dim")) od[ond++] = red[d] ? 1 : x->dims[d];
    if (red[d]) count *= x->dims[d];
    else on *= x->dims[d];
  }
  if (ond == 0) od[ond++] = 1;
  /* Out's offset of an X element: its kept coordinates, row-major. */
  for (int64_t d = x->nd - 1, s = 1; d >= 0; d--) {
    ostride[d] = red[d] ? 0 : s;
    if (!red[d]) s *= x->dims[d];
  }
  double *o = ot_out(r, "Out", ond, od);
  bool is_max = !strcmp(op, "max"), is_min = !strcmp(op, "min"), is_prod = !strcmp(op, "prod");
  for (int64_t j = 0; j < on; j++) o[j] = is_max ? -INFINITY : is_min ? INFINITY : is_prod;
  for (int64_t i = 0; i < x->n; i++) {
    int64_t rest = i, at = 0;
    for (int d = x->nd - 1; d >= 0; d--) {
      at += rest % x->dims[d] * ostride[d];
      rest /= x->dims[d];
    }
    double v = x->v[i];
    o[at] = is_max ? fmax(o[at], v) : is_min ? fmin(o[at], v) : is_prod ? o[at] * v : o[at] + v;
  }
  if (!strcmp(op, "mean"))
    for (int64_t j = 0; j < on; j++) o[j] /= (double)count;
}

/* top_k: along the last dim (top_k_v2: `axis`), the k largest values in descending order
 * (top_k_v2 with largest false: the k smallest, ascending) (Out) and where they were (Indices);
 * k is the K input's value when it is given. Values are distinct here. */
static void ref_top_k(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *kt = ot_in(r, "K");
  bool v2 = strcmp(ot_op(r), "top_k_v2") == 0, small = v2 && !ot_bool(r, "largest");
  int64_t axis = v2 ? ot_int(r, "axis") : -1;
  if (axis < 0) axis += x->nd;
  int64_t k = kt ? (int64_t)kt->v[0] : ot_int(r, "k"), n = x->dims[axis], od[OT_MAX_DIMS];
  int64_t pre = 1, post = 1;
  for (int d = 0; d < x->nd; d++) {
    od[d] = x->dims[d];
    if (d < axis) pre *= x->dims[d];
    if (d > axis) post *= x->dims[d];
  }
  od[axis] = k;
  double *o = ot_out(r, "Out", x->nd, od), *ind = ot_out(r, "Indices", x->nd, od);
  for (int64_t p = 0; p < pre; p++)
    for (int64_t q = 0; q < post; q++) {
      const double *xr = x->v + p * n * post + q;
      double *orow = o + p * k * post + q, *irow = ind + p * k * post + q;
      /* The j-th pick: the best value past the previous pick. */
      for (int64_t j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; i++) {
          double v = xr[i * post];
          bool past = j == 0 || (small ? v > orow[(j - 1) * post] : v < orow[(j - 1) * post]);
          if (past && (best < 0 || (small ? v < xr[best * post] : v > xr[best * post]))) best = i;
        }
        orow[j * post] = xr[best * post];
        irow[j * post] = (double)best;
      }
    }
}

/* arg_max, arg_min: the index of the largest / smallest element along axis (the first of equal
 * ones), Out without the axis (keepdims: with it as 1), or of all of X (flatten: Out [1]). */
static void ref_arg(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  bool small = strcmp(ot_op(r), "arg_min") == 0, flat = ot_bool(r, "flatten");
  int64_t axis = ot_int(r, "axis"), od[OT_MAX_DIMS], pre = 1, n = x->n, post = 1;
  int ond = 0;
  if (axis < 0) axis += x->nd;
  if (!flat) {
    n = x->dims[axis];
    for (int d = 0; d < x->nd; d++) {
      if (d < axis) pre *= x->dims[d];
      if (d > axis) post *= x->dims[d];
      if (d != axis || ot_bool(r, "keepdims")) od[ond++] = d == axis ? 1 : x->dims[d];
    }
  }
  if (ond == 0) od[ond++] = 1;
  double *o = ot_out(r, "Out", ond, od);
  for (int64_t p = 0; p < pre; p++)
    for (int64_t q = 0; q < post; q++) {
      const double *xr = x->v + p * n * post + q;
      int64_t best = 0;
      for (int64_t i = 1; i < n; i++)
        if (small ? xr[i * post] < xr[best * post] : xr[i * post] > xr[best * post]) best = i;
      o[p * post + q] = (double)best;
    }
}

/* ---------------------------------------------------------------- the rows */

/* Products with zeros: row 0 holds one, row 1 two, row 2 none. */
static const double with_zeros[] = {0.5, 0, -1.5, 0, 2, 0, 1.25, -0.75, 2};
/* Distinct integers for the integer max and top_k. */
static const double distinct_ints[] = {4, -7, 12, 0, 9, -3, 5, 11, -1, 8};

#define DISTINCT .v = distinct

/* cumsum: Out[.., j, ..] = the sum of X[.., i, ..] over i <= j along the axis (exclusive: i < j;
 * reverse: i >= j, or i > j); flatten: over all of X in row-major order, Out [numel]. */
static void ref_cumsum(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  bool flat = ot_bool(r, "flatten"), excl = ot_bool(r, "exclusive"), rev = ot_bool(r, "reverse");
  int64_t axis = ot_int(r, "axis"), pre = 1, n = x->n, post = 1;
  double *o = flat ? ot_out(r, "Out", 1, (int64_t[]){x->n}) : ot_out_like(r, "Out", x);
  if (!flat) {
    if (axis < 0) axis += x->nd;
    n = x->dims[axis];
    for (int d = 0; d < axis; d++) pre *= x->dims[d];
    for (int d = (int)axis + 1; d < x->nd; d++) post *= x->dims[d];
  }
  for (int64_t p = 0; p < pre; p++)
    for (int64_t q = 0; q < post; q++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++)
          if (rev ? (excl ? i > j : i >= j) : (excl ? i < j : i <= j))
            s += x->v[(p * n + i) * post + q];
        o[(p * n + j) * post + q] = s;
      }
}

const ot_row ot_rows_reduce[] = {
    /* cumsum: the last axis (default), a middle one, a negative one, flatten, exclusive,
     * reverse, both, int64 (position ids: ERNIE's cumsum of ones). */
    {.op = "cumsum", .in = {{"X", "[2, 5]"}}, .ref = ref_cumsum},
    {.op = "cumsum", .what = "axis 1 of 3", .attrs = "axis=1", .in = {{"X", "[2, 4, 3]"}},
     .ref = ref_cumsum},
    {.op = "cumsum", .what = "axis -3", .attrs = "axis=-3", .in = {{"X", "[3, 2, 2]"}},
     .ref = ref_cumsum},
    {.op = "cumsum", .what = "flatten", .attrs = "flatten=true", .in = {{"X", "[2, 3, 2]"}},
     .ref = ref_cumsum},
    {.op = "cumsum", .what = "exclusive", .attrs = "exclusive=true axis=0",
     .in = {{"X", "[4, 3]"}}, .ref = ref_cumsum},
    {.op = "cumsum", .what = "reverse", .attrs = "reverse=true", .in = {{"X", "[3, 4]"}},
     .ref = ref_cumsum},
    {.op = "cumsum", .what = "exclusive reverse", .attrs = "exclusive=true reverse=true axis=1",
     .in = {{"X", "[2, 4, 2]"}}, .ref = ref_cumsum},
    {.op = "cumsum", .what = "int64", .in = {{"X", "[2, 6]", .type = OT_I64, .lo = -9, .hi = 9}},
     .no_grad = true, .ref = ref_cumsum},
    {.op = "cumsum", .what = "int32 reverse", .attrs = "reverse=true",
     .in = {{"X", "[3, 3]", .type = OT_I32, .lo = -9, .hi = 9}}, .no_grad = true,
     .ref = ref_cumsum},

    {.op = "mean", .in = {{"X", "[3, 4]"}}, .ref = ref_mean},
    {.op = "mean", .what = "3-d", .in = {{"X", "[2, 3, 2]"}}, .ref = ref_mean},

    /* reduce_sum: one dim, a list with a negative entry, keep_dim, reduce_all (with keep_dim),
     * the default dim [0], a 1-d X, int64, bools summed into int64 (out_dtype). */
    {.op = "reduce_sum", .what = "dim [1]", .attrs = "dim=[1]", .in = {{"X", "[2, 3, 4]"}},
     .ref = ref_reduce},
    {.op = "reduce_sum", .what = "dim [0, -1] keep_dim", .attrs = "dim=[0, -1] keep_dim=true",
     .in = {{"X", "[2, 3, 4]"}}, .ref = ref_reduce},
    {.op = "reduce_sum", .what = "reduce_all", .attrs = "reduce_all=true",
     .in = {{"X", "[2, 3]"}}, .ref = ref_reduce},
    {.op = "reduce_sum", .what = "reduce_all keep_dim", .attrs = "reduce_all=true keep_dim=true",
     .in = {{"X", "[2, 1, 3]"}}, .ref = ref_reduce},
    {.op = "reduce_sum", .what = "the default dim", .in = {{"X", "[3, 2]"}}, .ref = ref_reduce},
    {.op = "reduce_sum", .what = "1-d", .attrs = "dim=[-1]", .in = {{"X", "[5]"}},
     .ref = ref_reduce},
    {.op = "reduce_sum", .what = "int64", .attrs = "dim=[1]",
     .in = {{"X", "[3, 4]", OT_I64, -50, 50}}, .ref = ref_reduce, .no_grad = true},
    {.op = "reduce_sum", .what = "bools into int64", .attrs = "dim=[1] out_dtype=3",
     .in = {{"X", "[3, 5]", OT_BOOL, 0, 1}}, .ref = ref_reduce, .no_grad = true},

    {.op = "reduce_mean", .what = "dim [-1]", .attrs = "dim=[-1]", .in = {{"X", "[3, 4]"}},
     .ref = ref_reduce},
    {.op = "reduce_mean", .what = "dim [0, 2] keep_dim", .attrs = "dim=[0, 2] keep_dim=true",
     .in = {{"X", "[2, 3, 4]"}}, .ref = ref_reduce},
    {.op = "reduce_mean", .what = "reduce_all", .attrs = "reduce_all=true",
     .in = {{"X", "[2, 2, 3]"}}, .ref = ref_reduce},

    /* max and min over distinct values: one maximum per group, the gradient goes to it. */
    {.op = "reduce_max", .what = "dim [1]", .attrs = "dim=[1]",
     .in = {{"X", "[2, 3, 4]", DISTINCT}}, .ref = ref_reduce},
    {.op = "reduce_max", .what = "dim [-1, 0] keep_dim", .attrs = "dim=[-1, 0] keep_dim=true",
     .in = {{"X", "[2, 3, 4]", DISTINCT}}, .ref = ref_reduce},
    {.op = "reduce_max", .what = "reduce_all", .attrs = "reduce_all=true",
     .in = {{"X", "[3, 4]", DISTINCT}}, .ref = ref_reduce},
    {.op = "reduce_max", .what = "int64", .attrs = "dim=[0]",
     .in = {{"X", "[2, 5]", OT_I64, .v = distinct_ints}}, .ref = ref_reduce, .no_grad = true},
    {.op = "reduce_min", .what = "dim [0]", .attrs = "dim=[0]", .in = {{"X", "[3, 4]", DISTINCT}},
     .ref = ref_reduce},
    {.op = "reduce_min", .what = "dim [-2] keep_dim", .attrs = "dim=[-2] keep_dim=true",
     .in = {{"X", "[2, 3, 4]", DISTINCT}}, .ref = ref_reduce},
    {.op = "reduce_min", .what = "reduce_all keep_dim", .attrs = "reduce_all=true keep_dim=true",
     .in = {{"X", "[2, 3, 2]", DISTINCT}}, .ref = ref_reduce},

    /* reduce_prod: factors away from 0, then exact zeros (the gradient at a lone zero is the
     * product of the rest, and 0 where a group holds two: a product is linear in each factor,
     * so the finite differences are exact there too), integers. */
    {.op = "reduce_prod", .what = "dim [1]", .attrs = "dim=[1]",
     .in = {{"X", "[3, 4]", .lo = 0.5, .hi = 1.5}}, .ref = ref_reduce},
    {.op = "reduce_prod", .what = "dim [-1, 0] keep_dim", .attrs = "dim=[-1, 0] keep_dim=true",
     .in = {{"X", "[2, 2, 3]", .lo = -1.5, .hi = 1.5}}, .ref = ref_reduce},
    {.op = "reduce_prod", .what = "reduce_all", .attrs = "reduce_all=true",
     .in = {{"X", "[2, 3]", .lo = 0.5, .hi = 1.5}}, .ref = ref_reduce},
    {.op = "reduce_prod", .what = "zeros", .attrs = "dim=[1]",
     .in = {{"X", "[3, 3]", .v = with_zeros}}, .ref = ref_reduce},
    {.op = "reduce_prod", .what = "int64", .attrs = "dim=[0]",
     .in = {{"X", "[3, 4]", OT_I64, -4, 4}}, .ref = ref_reduce, .no_grad = true},

    /* top_k: k 1, 2, all of the last dim; 3-d X; K given as an input (it wins over k); int64
     * values. The gradient weighs Out. */
    {.op = "top_k", .what = "k 2", .attrs = "k=2", .in = {{"X", "[3, 5]", DISTINCT}},
     .ref = ref_top_k},
    {.op = "top_k", .what = "k 1", .in = {{"X", "[4, 3]", DISTINCT}}, .ref = ref_top_k},
    {.op = "top_k", .what = "3-d, k 3", .attrs = "k=3", .in = {{"X", "[2, 2, 4]", DISTINCT}},
     .ref = ref_top_k},
    {.op = "top_k", .what = "k the whole row", .attrs = "k=4", .in = {{"X", "[2, 4]", DISTINCT}},
     .ref = ref_top_k},
    {.op = "top_k", .what = "K input", .attrs = "k=1",
     .in = {{"X", "[2, 5]", DISTINCT}, {"K", "[1]", OT_I32, .v = (const double[]){3}}},
     .ref = ref_top_k},
    {.op = "top_k", .what = "int64", .attrs = "k=2",
     .in = {{"X", "[2, 5]", OT_I64, .v = distinct_ints}}, .ref = ref_top_k, .no_grad = true},
    /* top_k_v2: the last axis by default, an inner axis (X transposed there and back), the k
     * smallest, K given as an input, int64 values; the gradient along an inner axis. */
    {.op = "top_k_v2", .what = "k 2, the last axis", .attrs = "k=2",
     .in = {{"X", "[3, 5]", DISTINCT}}, .ref = ref_top_k},
    {.op = "top_k_v2", .what = "axis 1 of 3, k 3", .attrs = "k=3 axis=1",
     .in = {{"X", "[2, 4, 3]", DISTINCT}}, .ref = ref_top_k},
    {.op = "top_k_v2", .what = "axis 0, the smallest", .attrs = "k=2 axis=0 largest=false",
     .in = {{"X", "[3, 2, 4]", DISTINCT}}, .ref = ref_top_k},
    {.op = "top_k_v2", .what = "axis -2, K input, sorted false",
     .attrs = "k=1 axis=-2 sorted=false",
     .in = {{"X", "[2, 5, 2]", DISTINCT}, {"K", "[1]", OT_I32, .v = (const double[]){3}}},
     .ref = ref_top_k},
    {.op = "top_k_v2", .what = "int64, the smallest, axis 0", .attrs = "k=2 axis=0 largest=false",
     .in = {{"X", "[5, 2]", OT_I64, .v = distinct_ints}}, .ref = ref_top_k, .no_grad = true},
    /* arg_max, arg_min: an axis (negative too), keepdims, flatten, integers, int32 Out. */
    {.op = "arg_max", .what = "axis 1", .attrs = "axis=1", .in = {{"X", "[3, 4, 2]", DISTINCT}},
     .ref = ref_arg},
    {.op = "arg_max", .what = "flatten", .attrs = "axis=0 flatten=true",
     .in = {{"X", "[3, 4]", DISTINCT}}, .ref = ref_arg},
    {.op = "arg_min", .what = "axis 1", .attrs = "axis=1", .in = {{"X", "[3, 4, 2]", DISTINCT}},
     .ref = ref_arg},
    {.op = "arg_min", .what = "axis -1, keepdims, int32 Out",
     .attrs = "axis=-1 keepdims=true dtype=2",
     .in = {{"X", "[2, 3, 4]", DISTINCT}}, .ref = ref_arg},
    {.op = "arg_min", .what = "flatten", .attrs = "axis=0 flatten=true",
     .in = {{"X", "[3, 4]", DISTINCT}}, .ref = ref_arg},
    {.op = "arg_min", .what = "int64 with ties (the first wins)", .attrs = "axis=0",
     .in = {{"X", "[4, 3]", OT_I64, -2, 2}}, .ref = ref_arg},
    {0},
};
