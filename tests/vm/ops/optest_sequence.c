/* optest_sequence.c -- the op-test table's rows of vm/ops/sequence.c (optest.h): lod_reset (to
 * target_lod, to Y's data, to Y's LoD, appended, grouping X's sequences), sequence_conv (contexts
 * before, around and after the row, zero and trainable padding), sequence_pool (every
 * pooltype, an empty sequence, rows of more than one element) and sequence_softmax, over
 * batches of sequences of different lengths. The references read the LoD as Fluid defines it:
 * sequence s is rows lod[s] .. lod[s + 1] - 1. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* ---------------------------------------------------------------- lod_reset */

/* lod_reset keeps X's data and sets Out's LoD; the driver compares values only, so this checks
 * both: Out's data is X's, and Out's top LoD level is the one wanted (want, n offsets). */
static void expect_lod(ot_ref *r, const int64_t *want, int n) {
  const ot_val *x = ot_in(r, "X"), *o = ot_got(r, "Out");
  if (!o || o->n != x->n || o->nd != x->nd) {
    ot_fail(r, "Out has no value of X's shape");
    return;
  }
  for (int64_t i = 0; i < x->n; i++)
    if (o->v[i] != x->v[i]) {
      ot_fail(r, "Out element %lld: %.10g, X's is %.10g", (long long)i, o->v[i], x->v[i]);
      return;
    }
  bool same = o->nlod == n;
  for (int i = 0; same && i < n; i++) same = o->lod[i] == want[i];
  if (!same) ot_fail(r, "Out's LoD has %d offsets (the last %lld), want %d (the last %lld)",
                     o->nlod, o->nlod ? (long long)o->lod[o->nlod - 1] : -1LL, n,
                     (long long)want[n - 1]);
}

/* Out's LoD is target_lod: replacing X's, or, where it ends at X's number of sequences rather
 * than its rows, a new top level grouping them. */
static void check_target_lod(ot_ref *r) {
  int64_t t[32];
  int n = ot_ints(r, "target_lod", t, 32);
  expect_lod(r, t, n);
}

/* Out's LoD: Y's LoD where Y has one, else Y's data as offsets. */
static void check_lod_from_y(ot_ref *r) {
  const ot_val *y = ot_in(r, "Y");
  if (y->nlod) {
    expect_lod(r, y->lod, y->nlod);
    return;
  }
  int64_t t[32];
  for (int64_t i = 0; i < y->n && i < 32; i++) t[i] = (int64_t)y->v[i];
  expect_lod(r, t, (int)y->n);
}

/* With append, target_lod becomes a level under X's: X's LoD stays the top level. */
static void check_append(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  expect_lod(r, x->lod, x->nlod);
}

/* ---------------------------------------------------------------- sequence_pool */

/* One row per sequence of X's LoD: Out [sequences] + X.dims[1:], per column: AVERAGE (the mean),
 * SUM, SQRT (the sum over sqrt(length)), LAST, FIRST, MAX (MaxIndex: X's row of the maximum;
 * -1 for the other pooltypes); an empty sequence gives pad_value and MaxIndex -1. */
static void ref_seqpool(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  const char *pt = ot_str(r, "pooltype");
  int64_t nseq = x->nlod - 1, w = x->n / x->dims[0], dims[OT_MAX_DIMS];
  for (int d = 0; d < x->nd; d++) dims[d] = x->dims[d];
  dims[0] = nseq;
  double *o = ot_out(r, "Out", x->nd, dims), *mi = ot_out(r, "MaxIndex", x->nd, dims);
  for (int64_t s = 0; s < nseq; s++) {
    int64_t b = x->lod[s], e = x->lod[s + 1], len = e - b;
    for (int64_t k = 0; k < w; k++) {
      double *ok = &o[s * w + k], *mk = &mi[s * w + k], sum = 0;
      *mk = -1;
      if (len == 0) {
        *ok = ot_float(r, "pad_value");
        continue;
      }
      for (int64_t i = b; i < e; i++) sum += x->v[i * w + k];
      if (!strcmp(pt, "SUM")) *ok = sum;
      else if (!strcmp(pt, "AVERAGE")) *ok = sum / (double)len;
      else if (!strcmp(pt, "SQRT")) *ok = sum / sqrt((double)len);
      else if (!strcmp(pt, "FIRST")) *ok = x->v[b * w + k];
      else if (!strcmp(pt, "LAST")) *ok = x->v[(e - 1) * w + k];
      else {
        *mk = (double)b;
        for (int64_t i = b + 1; i < e; i++)
          if (x->v[i * w + k] > x->v[(int64_t)*mk * w + k]) *mk = (double)i;
        *ok = x->v[(int64_t)*mk * w + k];
      }
    }
  }
}

/* ---------------------------------------------------------------- sequence_conv */

/* Out[t] = sum over j < contextLength of r_j Filter[j D .. j D + D - 1], r_j the row at
 * p = k + contextStart + j of t's sequence (t its row k, n rows): X's row when 0 <= p < n, else
 * with paddingTrainable PaddingData's row up + p (before the sequence, up = -contextStart when
 * negative) or up + p - n (after it), else zeros (Fluid's context projection). */
static void ref_seqconv(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *f = ot_in(r, "Filter"), *pad = ot_in(r, "PaddingData");
  int64_t L = ot_int(r, "contextLength"), cs = ot_int(r, "contextStart"), up = cs < 0 ? -cs : 0;
  int64_t D = x->dims[1], M = f->dims[1], dims[2] = {x->dims[0], M};
  bool trainable = ot_bool(r, "paddingTrainable");
  double *o = ot_out(r, "Out", 2, dims);
  for (int s = 0; s + 1 < x->nlod; s++) {
    int64_t b = x->lod[s], n = x->lod[s + 1] - b;
    for (int64_t k = 0; k < n; k++)
      for (int64_t j = 0; j < L; j++) {
        int64_t p = k + cs + j;
        const double *row = p >= 0 && p < n ? x->v + (b + p) * D
                            : !trainable     ? NULL
                            : p < 0          ? pad->v + (up + p) * D
                                             : pad->v + (up + p - n) * D;
        for (int64_t e = 0; row && e < D; e++)
          for (int64_t m = 0; m < M; m++) o[(b + k) * M + m] += row[e] * f->v[(j * D + e) * M + m];
      }
  }
}

/* ---------------------------------------------------------------- sequence_softmax */

/* A softmax over each sequence's rows (one value a row). */
static void ref_seqsoftmax(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  double *o = ot_out_like(r, "Out", x);
  for (int s = 0; s + 1 < x->nlod; s++) {
    double z = 0;
    for (int64_t i = x->lod[s]; i < x->lod[s + 1]; i++) z += exp(x->v[i]);
    for (int64_t i = x->lod[s]; i < x->lod[s + 1]; i++) o[i] = exp(x->v[i]) / z;
  }
}

/* ---------------------------------------------------------------- the rows */

/* Four sequences of 2, 0, 3 and 1 rows: an empty one, and a last one of a single row. */
#define LOD_6 .lod = (const int64_t[]){0, 2, 2, 5, 6}, .nlod = 5
#define POOL(type, shape, more)                                                                \
  {.op = "sequence_pool", .what = type " " shape, .attrs = "pooltype=" type " " more,         \
   .in = {{"X", shape, LOD_6}}, .ref = ref_seqpool}

const ot_row ot_rows_sequence[] = {
    {.op = "lod_reset", .what = "target_lod, X without LoD", .attrs = "target_lod=[0, 2, 5]",
     .in = {{"X", "[5, 2]"}}, .check = check_target_lod},
    {.op = "lod_reset", .what = "target_lod over X's LoD", .attrs = "target_lod=[0, 3, 4, 6]",
     .in = {{"X", "[6, 3]", LOD_6}}, .check = check_target_lod},
    /* X's 4 sequences grouped as 1 + 3: target_lod ends at 4, not at X's 6 rows. */
    {.op = "lod_reset", .what = "target_lod grouping X's sequences",
     .attrs = "target_lod=[0, 1, 4]", .in = {{"X", "[6, 2]", LOD_6}}, .check = check_target_lod},
    {.op = "lod_reset", .what = "Y's data as offsets",
     .in = {{"X", "[4, 2]"}, {"Y", "[3]", OT_I64, .v = (const double[]){0, 1, 4}}},
     .check = check_lod_from_y},
    {.op = "lod_reset", .what = "Y's int32 data over target_lod", .attrs = "target_lod=[0, 4]",
     .in = {{"X", "[4]"}, {"Y", "[4]", OT_I32, .v = (const double[]){0, 2, 3, 4}}},
     .check = check_lod_from_y},
    /* Y's values do not count, only its LoD. */
    {.op = "lod_reset", .what = "Y's LoD", .attrs = "target_lod=[0, 6]",
     .in = {{"X", "[6, 2]", LOD_6}, {"Y", "[6]", .lod = (const int64_t[]){0, 1, 6}, .nlod = 3}},
     .wrt = "X", .check = check_lod_from_y},
    {.op = "lod_reset", .what = "append", .attrs = "target_lod=[0, 1, 2, 3, 5, 6] append=true",
     .in = {{"X", "[6, 2]", LOD_6}}, .check = check_append},

    /* Context 3 around the row: one row before, one after; D 2, M 3. */
    {.op = "sequence_conv", .what = "start -1, zero padding",
     .attrs = "contextLength=3 contextStart=-1",
     .in = {{"X", "[6, 2]", LOD_6}, {"Filter", "[6, 3]"}}, .ref = ref_seqconv},
    {.op = "sequence_conv", .what = "start -1, trainable padding",
     .attrs = "contextLength=3 contextStart=-1 paddingTrainable=true",
     .in = {{"X", "[6, 2]", LOD_6}, {"PaddingData", "[2, 2]"}, {"Filter", "[6, 3]"}},
     .ref = ref_seqconv},
    /* Two rows before and the row itself: up padding only. */
    {.op = "sequence_conv", .what = "start -2, trainable padding",
     .attrs = "contextLength=3 contextStart=-2 paddingTrainable=true",
     .in = {{"X", "[6, 3]", LOD_6}, {"PaddingData", "[2, 3]"}, {"Filter", "[9, 2]"}},
     .ref = ref_seqconv},
    /* The row and the next three, longer than most sequences: down padding only. */
    {.op = "sequence_conv", .what = "start 0, length 4, trainable padding",
     .attrs = "contextLength=4 contextStart=0 paddingTrainable=true",
     .in = {{"X", "[6, 2]", LOD_6}, {"PaddingData", "[3, 2]"}, {"Filter", "[8, 2]"}},
     .ref = ref_seqconv},
    /* From the next row on: padding rows beyond the first of a short sequence. */
    {.op = "sequence_conv", .what = "start 2, trainable padding",
     .attrs = "contextLength=2 contextStart=2 paddingTrainable=true",
     .in = {{"X", "[6, 2]", LOD_6}, {"PaddingData", "[3, 2]"}, {"Filter", "[4, 3]"}},
     .ref = ref_seqconv},
    {.op = "sequence_conv", .what = "length 1, one sequence", .attrs = "contextLength=1",
     .in = {{"X", "[3, 4]", .lod = (const int64_t[]){0, 3}, .nlod = 2}, {"Filter", "[4, 2]"}},
     .ref = ref_seqconv},
    /* PaddingData given but not trainable: zeros, and no gradient into it. */
    {.op = "sequence_conv", .what = "PaddingData not trainable",
     .attrs = "contextLength=3 contextStart=-1",
     .in = {{"X", "[6, 2]", LOD_6}, {"PaddingData", "[2, 2]"}, {"Filter", "[6, 2]"}},
     .wrt = "X Filter", .ref = ref_seqconv},

    POOL("SUM", "[6, 2]", ""),
    POOL("AVERAGE", "[6, 2]", ""),
    POOL("SQRT", "[6, 2]", ""),
    POOL("FIRST", "[6, 2]", ""),
    POOL("LAST", "[6, 2]", ""),
    POOL("MAX", "[6, 2]", ""),
    POOL("SUM", "[6]", "pad_value=0.5"),
    POOL("AVERAGE", "[6, 2, 2]", "pad_value=-1.5"),
    POOL("MAX", "[6, 3, 1]", "pad_value=2"),
    POOL("LAST", "[6, 1]", "pad_value=-0.25"),
    /* One sequence of every row. */
    {.op = "sequence_pool", .what = "SQRT, one sequence", .attrs = "pooltype=SQRT",
     .in = {{"X", "[3, 2]", .lod = (const int64_t[]){0, 3}, .nlod = 2}}, .ref = ref_seqpool},

    {.op = "sequence_softmax", .in = {{"X", "[6]", .lo = -3, .hi = 3, LOD_6}},
     .ref = ref_seqsoftmax},
    {.op = "sequence_softmax", .what = "[N, 1]",
     .in = {{"X", "[7, 1]", .lo = -3, .hi = 3, .lod = (const int64_t[]){0, 4, 7}, .nlod = 3}},
     .ref = ref_seqsoftmax},
    {0},
};
