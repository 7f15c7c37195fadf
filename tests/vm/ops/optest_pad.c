/* optest_pad.c -- the op-test table's rows of vm/ops/pad.c (optest.h): pad (every dim, with a
 * pad_value; int64), pad2d (constant, reflect and edge, NCHW and NHWC, reflect at the border
 * widths: a padding one less than its dim; the Paddings input) and pad3d (constant, reflect,
 * replicate and circular, NCDHW and NDHWC, circular wrapping more than once; Paddings). The
 * reference is the definition in double: Out's element at index o reads, in each dim, X's
 * index i = o - before when it lies in X, else the value (constant), the mirror image about
 * the edge element (reflect: -i, or 2 (n - 1) - i), the edge element (edge, replicate), or
 * i mod n (circular). The gradient check weighs Out. */
#include "config.h"

#include <string.h>

#include "tests/vm/ops/optest.h"

/* The paddings of the row's op for X of rank nd, as before[k], after[k] per dim: pad's
 * attribute lists them dim by dim; pad2d's is [top, bottom, left, right], pad3d's [left,
 * right, top, bottom, front, back], of the spatial dims (after C, or from dim 1 in NHWC and
 * NDHWC). The Paddings input, when given, replaces the attribute. */
static void paddings_of(ot_ref *r, int nd, int64_t *before, int64_t *after) {
  const char *op = ot_op(r);
  int64_t p[2 * OT_MAX_DIMS] = {0};
  const ot_val *pt = ot_in(r, "Paddings");
  if (pt)
    for (int64_t i = 0; i < pt->n; i++) p[i] = (int64_t)pt->v[i];
  else
    ot_ints(r, "paddings", p, 2 * OT_MAX_DIMS);
  memset(before, 0, sizeof(int64_t) * (size_t)nd);
  memset(after, 0, sizeof(int64_t) * (size_t)nd);
  if (strcmp(op, "pad") == 0) {
    for (int k = 0; k < nd; k++) {
      before[k] = p[2 * k];
      after[k] = p[2 * k + 1];
    }
    return;
  }
  const char *fmt = ot_str(r, "data_format");
  int first = fmt[1] == 'C' ? 2 : 1; /* NCHW, NCDHW: the spatial dims start at 2 */
  if (strcmp(op, "pad2d") == 0) {
    before[first] = p[0], after[first] = p[1];          /* H: top, bottom */
    before[first + 1] = p[2], after[first + 1] = p[3];  /* W: left, right */
  } else {
    before[first] = p[4], after[first] = p[5];          /* D: front, back */
    before[first + 1] = p[2], after[first + 1] = p[3];  /* H: top, bottom */
    before[first + 2] = p[0], after[first + 2] = p[1];  /* W: left, right */
  }
}

/* X's index that index i (relative to X's start) of a dim of n reads, or -1 for the value. */
static int64_t source(const char *mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  if (strcmp(mode, "reflect") == 0) return i < 0 ? -i : 2 * (n - 1) - i;
  if (strcmp(mode, "edge") == 0 || strcmp(mode, "replicate") == 0) return i < 0 ? 0 : n - 1;
  if (strcmp(mode, "circular") == 0) return ((i % n) + n) % n;
  return -1;
}

static void ref_pad(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  const char *op = ot_op(r);
  bool plain = strcmp(op, "pad") == 0;
  const char *mode = plain ? "constant" : ot_str(r, "mode");
  double value = ot_float(r, strcmp(op, "pad3d") == 0 ? "value" : "pad_value");
  int nd = x->nd;
  int64_t before[OT_MAX_DIMS], after[OT_MAX_DIMS], od[OT_MAX_DIMS];
  paddings_of(r, nd, before, after);
  for (int k = 0; k < nd; k++) od[k] = x->dims[k] + before[k] + after[k];
  double *o = ot_out(r, "Out", nd, od);
  int64_t n = ot_numel(nd, od);
  for (int64_t j = 0; j < n; j++) {
    int64_t rest = j, src = 0, scale = 1;
    for (int k = nd - 1; k >= 0 && src >= 0; k--) {
      int64_t i = source(mode, rest % od[k] - before[k], x->dims[k]);
      rest /= od[k];
      src = i < 0 ? -1 : src + i * scale;
      scale *= x->dims[k];
    }
    o[j] = src < 0 ? value : x->v[src];
  }
}

#define PADS(...) .v = (const double[]){__VA_ARGS__}

const ot_row ot_rows_pad[] = {
    /* pad: every dim, a pad_value; a dim left alone; int64. */
    {.op = "pad", .what = "2 dims", .attrs = "paddings=[1, 2, 0, 3] pad_value=0.5",
     .in = {{"X", "[2, 3]"}}, .ref = ref_pad},
    {.op = "pad", .what = "3 dims", .attrs = "paddings=[0, 0, 2, 1, 1, 1]",
     .in = {{"X", "[2, 2, 3]"}}, .ref = ref_pad},
    {.op = "pad", .what = "int64", .attrs = "paddings=[1, 1] pad_value=-3",
     .in = {{"X", "[3]", OT_I64, -9, 9}}, .ref = ref_pad, .no_grad = true},

    /* pad2d: each mode in NCHW and NHWC; reflect at the border widths (H - 1, W - 1). */
    {.op = "pad2d", .what = "constant", .attrs = "paddings=[0, 1, 2, 3] pad_value=1.5",
     .in = {{"X", "[2, 1, 2, 3]"}}, .ref = ref_pad},
    {.op = "pad2d", .what = "reflect", .attrs = "paddings=[1, 0, 2, 1] mode=reflect",
     .in = {{"X", "[1, 2, 3, 4]"}}, .ref = ref_pad},
    {.op = "pad2d", .what = "reflect at the border widths",
     .attrs = "paddings=[2, 2, 3, 3] mode=reflect", .in = {{"X", "[1, 1, 3, 4]"}},
     .ref = ref_pad},
    {.op = "pad2d", .what = "edge", .attrs = "paddings=[2, 1, 1, 3] mode=edge",
     .in = {{"X", "[2, 2, 2, 3]"}}, .ref = ref_pad},
    {.op = "pad2d", .what = "constant NHWC",
     .attrs = "paddings=[1, 1, 0, 2] pad_value=-1 data_format=NHWC",
     .in = {{"X", "[2, 2, 3, 2]"}}, .ref = ref_pad},
    {.op = "pad2d", .what = "reflect NHWC at the border widths",
     .attrs = "paddings=[2, 1, 1, 1] mode=reflect data_format=NHWC",
     .in = {{"X", "[1, 3, 2, 2]"}}, .ref = ref_pad},
    {.op = "pad2d", .what = "edge NHWC",
     .attrs = "paddings=[0, 2, 3, 0] mode=edge data_format=NHWC", .in = {{"X", "[1, 2, 2, 3]"}}, .ref = ref_pad},
    {.op = "pad2d", .what = "Paddings", .attrs = "paddings=[0, 0, 0, 0] mode=reflect",
     .in = {{"X", "[1, 2, 3, 3]"}, {"Paddings", "[4]", OT_I32, PADS(1, 2, 2, 0)}},
     .ref = ref_pad},

    /* pad3d: each mode; NDHWC; circular wrapping past a whole period. */
    {.op = "pad3d", .what = "constant", .attrs = "paddings=[1, 0, 0, 2, 1, 1] value=2",
     .in = {{"X", "[1, 2, 2, 2, 3]"}}, .ref = ref_pad},
    {.op = "pad3d", .what = "reflect at the border widths",
     .attrs = "paddings=[2, 1, 1, 1, 1, 0] mode=reflect", .in = {{"X", "[1, 1, 2, 2, 3]"}},
     .ref = ref_pad},
    {.op = "pad3d", .what = "replicate", .attrs = "paddings=[1, 2, 2, 0, 0, 1] mode=replicate",
     .in = {{"X", "[2, 1, 2, 2, 2]"}}, .ref = ref_pad},
    {.op = "pad3d", .what = "circular", .attrs = "paddings=[1, 2, 0, 2, 1, 1] mode=circular",
     .in = {{"X", "[1, 1, 2, 3, 3]"}}, .ref = ref_pad},
    {.op = "pad3d", .what = "circular past a period",
     .attrs = "paddings=[5, 3, 0, 0, 0, 0] mode=circular", .in = {{"X", "[1, 1, 1, 2, 2]"}},
     .ref = ref_pad},
    {.op = "pad3d", .what = "reflect NDHWC",
     .attrs = "paddings=[1, 1, 1, 0, 0, 1] mode=reflect data_format=NDHWC",
     .in = {{"X", "[1, 2, 2, 3, 2]"}}, .ref = ref_pad},
    {.op = "pad3d", .what = "replicate NDHWC",
     .attrs = "paddings=[0, 1, 2, 1, 1, 0] mode=replicate data_format=NDHWC",
     .in = {{"X", "[1, 2, 2, 2, 2]"}}, .ref = ref_pad},
    {.op = "pad3d", .what = "circular NDHWC",
     .attrs = "paddings=[1, 1, 1, 1, 1, 1] mode=circular data_format=NDHWC",
     .in = {{"X", "[1, 2, 2, 2, 1]"}}, .ref = ref_pad},
    {.op = "pad3d", .what = "constant NDHWC", .attrs = "paddings=[1, 0, 1, 0, 0, 1] value=-0.5 "
     "data_format=NDHWC", .in = {{"X", "[1, 1, 2, 2, 2]"}}, .ref = ref_pad},
    {.op = "pad3d", .what = "Paddings", .attrs = "mode=constant",
     .in = {{"X", "[1, 1, 2, 2, 2]"}, {"Paddings", "[6]", OT_I64, PADS(0, 1, 1, 0, 2, 1)}},
     .ref = ref_pad},
    {.op = "pad3d", .what = "int32", .attrs = "paddings=[1, 1, 0, 0, 0, 0] mode=circular",
     .in = {{"X", "[1, 1, 1, 1, 3]", OT_I32, -9, 9}}, .ref = ref_pad, .no_grad = true},
    {0},
};
