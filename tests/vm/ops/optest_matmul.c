/* optest_matmul.c -- the op-test table's rows of vm/ops/matmul.c (optest.h): mul (X and Y
 * flattened to matrices at x_num_col_dims and y_num_col_dims), fc (Input flattened at
 * in_num_col_dims times W, plus an optional Bias row), matmul_v2 (NumPy's matmul: trans_x,
 * trans_y, 1-d operands, batch dims that broadcast), Fluid's matmul (alpha, transposed 1-d
 * operands, batches counted as one) and memory_efficient_attention (the softmax
 * of scaled, biased and masked products of queries and keys, times the values). The references
 * are the sums of products written out in double, element by element. */
#include "config.h"

#include <math.h>
#include <stdbool.h>

#include "tests/vm/ops/optest.h"

/* The product of dims [from, to). */
static int64_t dims_prod(const int64_t *dims, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; d++) p *= dims[d];
  return p;
}

/* Out [M, N] = A [M, K] B [K, N] (row-major), plus bias[j] when bias is given. */
static void matrix_product(const double *a, const double *b, const double *bias, int64_t m,
                           int64_t k, int64_t n, double *out) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = bias ? bias[j] : 0;
      for (int64_t t = 0; t < k; t++) s += a[i * k + t] * b[t * n + j];
      out[i * n + j] = s;
    }
}

/* mul: X [x0 .. xn-1 | rest] as a matrix [prod(X.dims[:x_num_col_dims]), prod(rest)], Y
 * likewise at y_num_col_dims; Out = X.dims[:x_num_col_dims] + Y.dims[y_num_col_dims:]. */
static void ref_mul(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *y = ot_in(r, "Y");
  int xn = (int)ot_int(r, "x_num_col_dims"), yn = (int)ot_int(r, "y_num_col_dims");
  int64_t od[OT_MAX_DIMS];
  int ond = 0;
  for (int d = 0; d < xn; d++) od[ond++] = x->dims[d];
  for (int d = yn; d < y->nd; d++) od[ond++] = y->dims[d];
  matrix_product(x->v, y->v, NULL, dims_prod(x->dims, 0, xn), dims_prod(x->dims, xn, x->nd),
                 dims_prod(y->dims, yn, y->nd), ot_out(r, "Out", ond, od));
}

/* fc: Input flattened at in_num_col_dims times W [K, N], plus Bias ([N] or [1, N]) on every
 * row; Out = Input.dims[:in_num_col_dims] + [N]. */
static void ref_fc(ot_ref *r) {
  const ot_val *x = ot_in(r, "Input"), *w = ot_in(r, "W"), *b = ot_in(r, "Bias");
  int xn = (int)ot_int(r, "in_num_col_dims");
  int64_t od[OT_MAX_DIMS];
  for (int d = 0; d < xn; d++) od[d] = x->dims[d];
  od[xn] = w->dims[1];
  matrix_product(x->v, w->v, b ? b->v : NULL, dims_prod(x->dims, 0, xn),
                 dims_prod(x->dims, xn, x->nd), w->dims[1], ot_out(r, "Out", xn + 1, od));
}

/* matmul_v2 as NumPy's matmul: X is [..., M, K] ([..., K, M] stored when trans_x), Y
 * [..., K, N] ([..., N, K] when trans_y); a 1-d X is the row [1, K] and a 1-d Y the column
 * [K, 1] (trans ignored for them), the added dim left out of Out; the batch dims (all but the
 * last two) align from the right and broadcast; vector . vector is [1]. */
static void ref_matmul_v2(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *y = ot_in(r, "Y");
  bool tx = ot_bool(r, "trans_x") && x->nd > 1, ty = ot_bool(r, "trans_y") && y->nd > 1;
  int64_t xr = x->nd > 1 ? x->dims[x->nd - 2] : 1, xc = x->dims[x->nd - 1];
  int64_t yr = y->nd > 1 ? y->dims[y->nd - 2] : y->dims[0], yc = y->nd > 1 ? y->dims[y->nd - 1] : 1;
  int64_t m = tx ? xc : xr, k = tx ? xr : xc, n = ty ? yr : yc;
  int xb = x->nd > 2 ? x->nd - 2 : 0, yb = y->nd > 2 ? y->nd - 2 : 0;
  int nb = xb > yb ? xb : yb;
  int64_t xbd[OT_MAX_DIMS], ybd[OT_MAX_DIMS], od[OT_MAX_DIMS];
  for (int d = 0; d < nb; d++) {
    xbd[d] = d >= nb - xb ? x->dims[d - (nb - xb)] : 1;
    ybd[d] = d >= nb - yb ? y->dims[d - (nb - yb)] : 1;
    od[d] = xbd[d] > ybd[d] ? xbd[d] : ybd[d];
  }
  int ond = nb;
  if (x->nd > 1) od[ond++] = m;
  if (y->nd > 1) od[ond++] = n;
  if (ond == 0) od[ond++] = 1;
  double *o = ot_out(r, "Out", ond, od);
  int64_t batch = dims_prod(od, 0, nb);
  for (int64_t b = 0; b < batch; b++) {
    /* The batch coordinates of b, and the matrices of X and Y they pick (dims of 1 repeat). */
    int64_t rest = b, xm = 0, ym = 0, xs = 1, ys = 1;
    for (int d = nb - 1; d >= 0; d--) {
      int64_t c = rest % od[d];
      rest /= od[d];
      xm += (xbd[d] == 1 ? 0 : c) * xs;
      ym += (ybd[d] == 1 ? 0 : c) * ys;
      xs *= xbd[d];
      ys *= ybd[d];
    }
    const double *xv = x->v + xm * m * k, *yv = y->v + ym * k * n;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t t = 0; t < k; t++)
          s += (tx ? xv[t * xc + i] : xv[i * xc + t]) * (ty ? yv[j * yc + t] : yv[t * yc + j]);
        o[(b * m + i) * n + j] = s;
      }
  }
}

/* Fluid's matmul: a 1-d X is the row [1, K] and a 1-d Y the column [K, 1], then transposed
 * when asked (so X [K] with transpose_X is the column [K, 1]); the matrices are the last two
 * dims and the batch the count of all the dims before them: X's b-th matrix times Y's (or the
 * one matrix of an operand of rank 2 or less); Out = X's leading dims (Y's when only Y has
 * them), M unless X was 1-d and M is 1, N unless Y was 1-d and N is 1, [1] when nothing is
 * left; every product times alpha. */
static void ref_matmul(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *y = ot_in(r, "Y");
  bool tx = ot_bool(r, "transpose_X"), ty = ot_bool(r, "transpose_Y");
  double alpha = ot_float(r, "alpha");
  int64_t xr = x->nd > 1 ? x->dims[x->nd - 2] : 1, xc = x->dims[x->nd - 1];
  int64_t yr = y->nd > 1 ? y->dims[y->nd - 2] : y->dims[0], yc = y->nd > 1 ? y->dims[y->nd - 1] : 1;
  int64_t m = tx ? xc : xr, k = tx ? xr : xc, n = ty ? yr : yc;
  const ot_val *lead = x->nd > 2 ? x : y;
  int nb = lead->nd > 2 ? lead->nd - 2 : 0;
  int64_t od[OT_MAX_DIMS];
  int ond = 0;
  for (int d = 0; d < nb; d++) od[ond++] = lead->dims[d];
  if (x->nd > 1 || m != 1) od[ond++] = m;
  if (y->nd > 1 || n != 1) od[ond++] = n;
  if (ond == 0) od[ond++] = 1;
  double *o = ot_out(r, "Out", ond, od);
  int64_t batch = dims_prod(lead->dims, 0, nb);
  for (int64_t b = 0; b < batch; b++) {
    const double *xv = x->v + (x->nd > 2 ? b * m * k : 0), *yv = y->v + (y->nd > 2 ? b * k * n : 0);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t t = 0; t < k; t++)
          s += (tx ? xv[t * xc + i] : xv[i * xc + t]) * (ty ? yv[j * yc + t] : yv[t * yc + j]);
        o[(b * m + i) * n + j] = alpha * s;
      }
  }
}

/* memory_efficient_attention: per batch b and head h the scores s_ij = scale q_i . k_j plus the
 * bias (its dims aligned at the end of [B, H, Sq, Sk], those of 1 repeated), none past j = i
 * when causal; output_i = sum over j of softmax_j(s_ij) v_j, logsumexp_i = log sum_j e^s_ij
 * (with_lse: the row binds it, and seed_and_offset, 0 0). scale < 0 is 1 / sqrt(D). */
static void attention(ot_ref *r, bool with_lse) {
  const ot_val *q = ot_in(r, "query"), *k = ot_in(r, "key"), *v = ot_in(r, "value");
  const ot_val *bias = ot_in(r, "bias");
  int64_t nb = q->dims[0], sq = q->dims[1], nh = q->dims[2], d = q->dims[3];
  int64_t sk = k->dims[1], dv = v->dims[3];
  double scale = ot_float(r, "scale");
  if (scale < 0) scale = 1 / sqrt((double)d);
  bool causal = ot_bool(r, "causal");
  double *o = ot_out(r, "output", 4, (int64_t[]){nb, sq, nh, dv});
  double *lse = with_lse ? ot_out(r, "logsumexp", 3, (int64_t[]){nb, nh, sq}) : NULL;
  if (with_lse) ot_out(r, "seed_and_offset", 1, (int64_t[]){2});
  double s[64];
  for (int64_t b = 0; b < nb; b++)
    for (int64_t h = 0; h < nh; h++)
      for (int64_t i = 0; i < sq; i++) {
        int64_t n = causal && i + 1 < sk ? i + 1 : sk;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; j++) {
          double t = 0;
          for (int64_t c = 0; c < d; c++)
            t += q->v[((b * sq + i) * nh + h) * d + c] * k->v[((b * sk + j) * nh + h) * d + c];
          t *= scale;
          if (bias) { /* [B, H, Sq, Sk] coordinates, the bias's from the right */
            int64_t at[4] = {b, h, i, j}, off = 0;
            for (int e = 0; e < bias->nd; e++) {
              int64_t size = bias->dims[e], c = at[4 - bias->nd + e];
              off = off * size + (size == 1 ? 0 : c);
            }
            t += bias->v[off];
          }
          s[j] = t;
          mx = t > mx ? t : mx;
        }
        for (int64_t j = 0; j < n; j++) sum += exp(s[j] - mx);
        for (int64_t c = 0; c < dv; c++) {
          double acc = 0;
          for (int64_t j = 0; j < n; j++)
            acc += exp(s[j] - mx) / sum * v->v[((b * sk + j) * nh + h) * dv + c];
          o[((b * sq + i) * nh + h) * dv + c] = acc;
        }
        if (lse) lse[(b * nh + h) * sq + i] = mx + log(sum);
      }
}

static void ref_attention(ot_ref *r) { attention(r, false); }
static void ref_attention_lse(ot_ref *r) { attention(r, true); }

/* ---------------------------------------------------------------- the rows */

const ot_row ot_rows_matmul[] = {
    /* memory_efficient_attention: the default scale; a per-batch mask [B, 1, 1, Sk] (an
     * encoder's padding) and a given scale; causal with a bias of [Sq, Sk] broadcast over batch
     * and heads, the queries fewer than the keys and more; logsumexp and seed_and_offset bound. */
    {.op = "memory_efficient_attention", .what = "scale 1 / sqrt(D)",
     .in = {{"query", "[2, 3, 2, 4]"}, {"key", "[2, 5, 2, 4]"}, {"value", "[2, 5, 2, 3]"}},
     .ref = ref_attention},
    {.op = "memory_efficient_attention", .what = "bias [B, 1, 1, Sk], scale 0.7",
     .attrs = "scale=0.7",
     .in = {{"query", "[2, 4, 3, 2]"}, {"key", "[2, 4, 3, 2]"}, {"value", "[2, 4, 3, 5]"},
            {"bias", "[2, 1, 1, 4]", .lo = -3, .hi = 0}},
     .ref = ref_attention},
    {.op = "memory_efficient_attention", .what = "causal, bias [Sq, Sk]", .attrs = "causal=true",
     .in = {{"query", "[1, 3, 2, 4]"}, {"key", "[1, 5, 2, 4]"}, {"value", "[1, 5, 2, 2]"},
            {"bias", "[3, 5]"}},
     .ref = ref_attention},
    {.op = "memory_efficient_attention", .what = "causal, more queries than keys, logsumexp",
     .attrs = "causal=true scale=2", .outs = "output logsumexp seed_and_offset",
     .in = {{"query", "[2, 6, 1, 3]"}, {"key", "[2, 4, 1, 3]"}, {"value", "[2, 4, 1, 3]"},
            {"bias", "[2, 1, 6, 4]"}},
     .ref = ref_attention_lse},

    /* mul: plain matrices; X split after 2 of 3 dims; X's 3 dims flattened to 1 row dim and
     * Y's trailing dims kept in Out; Y split after 2 dims. */
    {.op = "mul", .in = {{"X", "[2, 3]"}, {"Y", "[3, 4]"}}, .ref = ref_mul},
    {.op = "mul", .what = "x_num_col_dims 2", .attrs = "x_num_col_dims=2",
     .in = {{"X", "[2, 3, 4]"}, {"Y", "[4, 2]"}}, .ref = ref_mul},
    {.op = "mul", .what = "X flattened, Y [3, 2, 2]",
     .in = {{"X", "[2, 1, 3]"}, {"Y", "[3, 2, 2]"}}, .ref = ref_mul},
    {.op = "mul", .what = "y_num_col_dims 2", .attrs = "x_num_col_dims=1 y_num_col_dims=2",
     .in = {{"X", "[3, 2, 2]"}, {"Y", "[2, 2, 3]"}}, .ref = ref_mul},

    /* fc (activation_type is refused by the op: only ""): Bias [N] and [1, N], no Bias,
     * in_num_col_dims 2 and 1 on a 3-d Input. */
    {.op = "fc", .in = {{"Input", "[3, 4]"}, {"W", "[4, 5]"}, {"Bias", "[5]"}}, .ref = ref_fc},
    {.op = "fc", .what = "no Bias", .in = {{"Input", "[2, 3]"}, {"W", "[3, 4]"}}, .ref = ref_fc},
    {.op = "fc", .what = "in_num_col_dims 2, Bias [1, N]", .attrs = "in_num_col_dims=2",
     .in = {{"Input", "[2, 3, 4]"}, {"W", "[4, 2]"}, {"Bias", "[1, 2]"}}, .ref = ref_fc},
    {.op = "fc", .what = "3-d Input flattened", .attrs = "in_num_col_dims=1",
     .in = {{"Input", "[2, 2, 3]"}, {"W", "[6, 3]"}, {"Bias", "[3]"}}, .ref = ref_fc},

    /* matmul (Fluid's): alpha; each transpose; equal batches (also of other dims with the
     * same count), a batch times a matrix and a matrix times a batch; 1-d operands, plain and
     * transposed (a transposed 1-d X is a column: M stays). */
    {.op = "matmul", .what = "alpha 0.5", .attrs = "alpha=0.5",
     .in = {{"X", "[2, 3]"}, {"Y", "[3, 4]"}}, .ref = ref_matmul},
    {.op = "matmul", .what = "transpose_X transpose_Y", .attrs = "transpose_X=true transpose_Y=true",
     .in = {{"X", "[3, 2]"}, {"Y", "[4, 3]"}}, .ref = ref_matmul},
    {.op = "matmul", .what = "batched, transpose_Y, alpha 0.125 (attention scores)",
     .attrs = "transpose_Y=true alpha=0.125", .in = {{"X", "[2, 2, 3, 4]"}, {"Y", "[2, 2, 3, 4]"}},
     .ref = ref_matmul},
    {.op = "matmul", .what = "batches of other dims, one count",
     .in = {{"X", "[2, 3, 2, 3]"}, {"Y", "[6, 3, 2]"}}, .ref = ref_matmul},
    {.op = "matmul", .what = "batch times a matrix, transpose_X", .attrs = "transpose_X=true",
     .in = {{"X", "[2, 3, 2]"}, {"Y", "[3, 4]"}}, .ref = ref_matmul},
    {.op = "matmul", .what = "a matrix times a batch, transpose_Y, alpha 2",
     .attrs = "transpose_Y=true alpha=2", .in = {{"X", "[2, 3]"}, {"Y", "[3, 2, 3]"}},
     .ref = ref_matmul},
    {.op = "matmul", .what = "vector . vector", .in = {{"X", "[4]"}, {"Y", "[4]"}},
     .ref = ref_matmul},
    {.op = "matmul", .what = "1-d X transposed: a column", .attrs = "transpose_X=true",
     .in = {{"X", "[3]"}, {"Y", "[1, 2]"}}, .ref = ref_matmul},
    {.op = "matmul", .what = "1-d Y transposed: a row", .attrs = "transpose_Y=true",
     .in = {{"X", "[2, 1]"}, {"Y", "[3]"}}, .ref = ref_matmul},
    {.op = "matmul", .what = "batch times a vector", .in = {{"X", "[2, 2, 3]"}, {"Y", "[3]"}},
     .ref = ref_matmul},
    {.op = "matmul", .what = "vector times a batch", .in = {{"X", "[3]"}, {"Y", "[2, 3, 2]"}},
     .ref = ref_matmul},

    /* matmul_v2: matrices with each transpose; batches, equal and broadcast (one operand 2-d,
     * a batch dim of 1 on either side, batch ranks that differ); 1-d operands. */
    {.op = "matmul_v2", .in = {{"X", "[2, 3]"}, {"Y", "[3, 4]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "trans_x", .attrs = "trans_x=true",
     .in = {{"X", "[3, 2]"}, {"Y", "[3, 4]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "trans_y", .attrs = "trans_y=true",
     .in = {{"X", "[2, 3]"}, {"Y", "[4, 3]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "trans_x trans_y", .attrs = "trans_x=true trans_y=true",
     .in = {{"X", "[3, 2]"}, {"Y", "[4, 3]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "batched", .in = {{"X", "[2, 2, 3]"}, {"Y", "[2, 3, 2]"}},
     .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "batched, trans_x trans_y", .attrs = "trans_x=true trans_y=true",
     .in = {{"X", "[2, 3, 2]"}, {"Y", "[2, 2, 3]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "batch times a matrix", .in = {{"X", "[3, 2, 3]"}, {"Y", "[3, 2]"}},
     .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "batch times a matrix, trans_x", .attrs = "trans_x=true",
     .in = {{"X", "[2, 3, 2]"}, {"Y", "[3, 4]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "a matrix times a batch, trans_y", .attrs = "trans_y=true",
     .in = {{"X", "[2, 3]"}, {"Y", "[3, 2, 3]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "batch dims of 1 broadcast both ways",
     .in = {{"X", "[2, 1, 2, 3]"}, {"Y", "[1, 3, 3, 2]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "batch ranks differ", .attrs = "trans_y=true",
     .in = {{"X", "[2, 3, 2, 2]"}, {"Y", "[3, 4, 2]"}}, .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "vector . vector", .in = {{"X", "[4]"}, {"Y", "[4]"}},
     .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "vector times a batch", .in = {{"X", "[3]"}, {"Y", "[2, 3, 2]"}},
     .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "batch times a vector", .in = {{"X", "[2, 2, 3]"}, {"Y", "[3]"}},
     .ref = ref_matmul_v2},
    {.op = "matmul_v2", .what = "1-d operands ignore trans", .attrs = "trans_x=true trans_y=true",
     .in = {{"X", "[3]"}, {"Y", "[2, 3]"}}, .ref = ref_matmul_v2},
    {0},
};
