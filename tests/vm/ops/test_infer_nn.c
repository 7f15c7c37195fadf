/* test_infer_nn.c -- shape inference of layers and losses: conv2d and pool2d (output sizes
 * worked out by hand from out = (in + pad0 + pad1 - dilation * (k - 1) - 1) / stride + 1, SAME
 * and VALID padding, NHWC, groups), cross_entropy, softmax_with_cross_entropy, accuracy. */
#include "config.h"

#include "tests/vm/ops/fixture.h"

/* Attributes for conv2d/pool2d given as a small spec: "strides=2,2 paddings=1,1 groups=3
 * padding_algorithm=SAME ..."; integer lists for list attributes, strings for the enums. */
static void set_attrs(pd_op_desc *op, const char *spec) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) bail("bad attr spec");
    *eq = '\0';
    const char *v = eq + 1;
    const pd_attrdef *ad = pd_opdef_attr(pd_opdef_lookup(op->type), tok);
    if (!ad) bail("unknown attr in spec");
    if (ad->type == PD_ATTR_STRING) {
      pd_op_set_attr_string(op, tok, v);
    } else if (ad->type == PD_ATTR_BOOLEAN) {
      pd_op_set_attr_bool(op, tok, strcmp(v, "true") == 0);
    } else if (ad->type == PD_ATTR_INT) {
      pd_op_set_attr_int(op, tok, atoi(v));
    } else {
      int32_t list[8];
      int n = 0;
      for (const char *p = v; *p && n < 8; p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p))
        list[n++] = atoi(p);
      pd_op_set_attr_ints(op, tok, n, list);
    }
  }
}

static void conv(const char *in, const char *filter, const char *attrs, const char *want,
                 const char *what) {
  fx f;
  fx_init(&f);
  decl(f.b, "in", PD_FP32, in);
  decl(f.b, "k", PD_FP32, filter);
  pd_op_desc *op = add_op(&f, "conv2d", "Input=in Filter=k", "Output=out");
  set_attrs(op, attrs);
  if (want[0] == '[') expect_shape(&f, op, "out", want, what);
  else
    expect_error(&f, op, strstr(want, "strides") || strstr(want, "paddings") ||
                 strstr(want, "groups must") ? PD_EINVAL : PD_ESHAPE, want, what);
  fx_free(&f);
}

static void test_conv2d(void) {
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "", "[-1, 16, 30, 30]", "conv2d 3x3, stride 1, no padding");
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "strides=2,2 paddings=1,1", "[-1, 16, 16, 16]",
       "conv2d stride 2, padding 1");
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "dilations=2,2", "[-1, 16, 28, 28]", "conv2d dilation 2");
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "paddings=1,0,2,1", "[-1, 16, 31, 33]",
       "conv2d with 4 paddings (top, bottom, left, right)");
  conv("[-1, 3, 31, 32]", "[16, 3, 3, 3]", "strides=2,2 padding_algorithm=SAME", "[-1, 16, 16, 16]",
       "conv2d SAME: ceil(in / stride)");
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "paddings=5,5 padding_algorithm=VALID", "[-1, 16, 30, 30]",
       "conv2d VALID ignores paddings");
  conv("[-1, 32, 32, 3]", "[16, 3, 3, 3]", "data_format=NHWC", "[-1, 30, 30, 16]", "conv2d NHWC");
  conv("[-1, 3, 8, 8]", "[6, 1, 3, 3]", "groups=3", "[-1, 6, 6, 6]", "conv2d with groups");
  conv("[-1, 3, -1, -1]", "[16, 3, 5, 5]", "", "[-1, 16, -1, -1]", "conv2d of an unknown size");
  conv("[-1, -1, 32, 32]", "[16, 3, 5, 5]", "", "[-1, 16, 28, 28]", "conv2d of unknown channels");
  conv("?", "[16, 3, 5, 5]", "", "[-1, 16, -1, -1]", "conv2d of an unknown rank");
  conv("[-1, 3, 32, 32]", "[16, 1, 3, 3]", "",
       "conv2d: Input [-1, 3, 32, 32] has 3 channels but Filter [16, 1, 3, 3] with groups 1 takes 1",
       "conv2d: channel mismatch");
  conv("[-1, 3, 8, 8]", "[4, 1, 3, 3]", "groups=3",
       "conv2d: Filter [4, 1, 3, 3] has 4 output channels, which groups 3 does not divide",
       "conv2d: groups do not divide the filters");
  conv("[1, 3, 2, 2]", "[16, 3, 3, 3]", "",
       "conv2d: Input [1, 3, 2, 2] is smaller than Filter [16, 3, 3, 3] (output height would be 0)",
       "conv2d: input smaller than the filter");
  conv("[1, 3, 9, 2]", "[16, 3, 3, 5]", "strides=1,2",
       "conv2d: Input [1, 3, 9, 2] is smaller than Filter [16, 3, 3, 5] (output width would be -1)",
       "conv2d: the width does not fit");
  conv("[-1, 3, 32, 32]", "[16, 3, 0, 3]", "", "conv2d: Filter [16, 3, 0, 3] has an empty window",
       "conv2d: a filter of height 0");
  conv("[1, 3, 9223372036854775807, 8]", "[16, 3, 3, 3]", "paddings=1,1",
       "[1, 16, -1, 8]", "conv2d: a size past int64 stays unknown");
  conv("[-1, 784]", "[16, 3, 3, 3]", "", "conv2d: Input must have 4 dims (NCHW), got [-1, 784]",
       "conv2d: a 2-D input");
  conv("[-1, 3, 32, 32]", "[3, 3]", "",
       "conv2d: Filter must have 4 dims [out channels, in channels / groups, height, width], got [3, 3]",
       "conv2d: a 2-D filter");
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "strides=0,1", "conv2d: strides [0, 1] must be positive",
       "conv2d: stride 0");
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "strides=1",
       "conv2d: strides must have 2 entries (height, width), got [1]", "conv2d: one stride");
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "paddings=1,1,1",
       "conv2d: paddings must have 2 or 4 entries, got [1, 1, 1]", "conv2d: three paddings");
  conv("[-1, 3, 32, 32]", "[16, 3, 3, 3]", "groups=0", "conv2d: groups must be at least 1, got 0",
       "conv2d: groups 0");

  fx f;
  fx_init(&f);
  decl(f.b, "in", PD_FP32, "[-1, 3, 8, 8]");
  decl(f.b, "ii", PD_INT32, "[-1, 3, 8, 8]");
  decl(f.b, "k64", PD_FP64, "[4, 3, 3, 3]");
  expect_error(&f, add_op(&f, "conv2d", "Input=in Filter=k64", "Output=o"), PD_ETYPE,
               "conv2d: Input has dtype float32 but Filter has dtype float64", "conv2d: dtype mismatch");
  expect_error(&f, add_op(&f, "conv2d", "Input=ii Filter=k64", "Output=o"), PD_ETYPE,
               "conv2d: Input must be float16, float32 or float64, got int32", "conv2d: integer input");
  fx_free(&f);
}

static void pool(const char *x, const char *attrs, const char *want, const char *what) {
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, x);
  pd_op_desc *op = add_op(&f, "pool2d", "X=x", "Out=out");
  set_attrs(op, attrs);
  if (want[0] == '[') expect_shape(&f, op, "out", want, what);
  else expect_error(&f, op, strstr(want, "entries") ? PD_EINVAL : PD_ESHAPE, want, what);
  fx_free(&f);
}

static void test_pool2d(void) {
  pool("[-1, 16, 32, 32]", "pooling_type=max ksize=2,2 strides=2,2", "[-1, 16, 16, 16]", "max pool 2x2");
  pool("[-1, 16, 32, 32]", "pooling_type=avg ksize=3,3 strides=2,2", "[-1, 16, 15, 15]",
       "avg pool 3x3 stride 2 (floor)");
  pool("[-1, 16, 32, 32]", "pooling_type=avg ksize=3,3 strides=2,2 ceil_mode=true", "[-1, 16, 16, 16]",
       "avg pool 3x3 stride 2 (ceil_mode)");
  pool("[-1, 16, 32, 32]", "pooling_type=max ksize=3,3 paddings=1,1", "[-1, 16, 32, 32]",
       "pool with padding 1");
  pool("[-1, 16, 7, 9]", "pooling_type=avg ksize=1,1 global_pooling=true", "[-1, 16, 1, 1]",
       "global pooling");
  pool("[-1, 16, 32, 32]", "pooling_type=avg ksize=4,4 adaptive=true", "[-1, 16, 4, 4]",
       "adaptive pooling");
  pool("[-1, 32, 32, 16]", "pooling_type=max ksize=2,2 strides=2,2 data_format=NHWC", "[-1, 16, 16, 16]",
       "pool NHWC");
  pool("[-1, 16, 31, 31]", "pooling_type=max ksize=2,2 strides=2,2 padding_algorithm=SAME",
       "[-1, 16, 16, 16]", "pool SAME");
  pool("[-1, 16, -1, 32]", "pooling_type=max ksize=2,2 strides=2,2", "[-1, 16, -1, 16]",
       "pool of an unknown height");
  pool("[1, 1, 2, 2]", "pooling_type=max ksize=3,3",
       "pool2d: X [1, 1, 2, 2] is smaller than ksize [3, 3] (output height would be 0)",
       "pool: window larger than the input");
  pool("[-1, 16, 32, 32]", "pooling_type=max ksize=2",
       "pool2d: ksize must have 2 entries (height, width), got [2]", "pool: one ksize");
  pool("[-1, 16, 32]", "pooling_type=max ksize=2,2", "pool2d: X must have 4 dims (NCHW), got [-1, 16, 32]",
       "pool: a 3-D input");
}

/* A loss op `type` with scores (slot xslot, shape xs, dtype xt) and Label (ls, lt). */
static void loss(const char *type, const char *xs, pd_dtype xt, const char *ls, pd_dtype lt,
                 const char *attrs, const char *want, const char *what) {
  fx f;
  fx_init(&f);
  bool swce = strcmp(type, "softmax_with_cross_entropy") == 0;
  decl(f.b, "x", xt, xs);
  decl(f.b, "label", lt, ls);
  pd_op_desc *op = swce ? add_op(&f, type, "Logits=x Label=label", "Softmax=sm Loss=out")
                        : add_op(&f, type, "X=x Label=label", "Y=out");
  set_attrs(op, attrs);
  if (want[0] == '[') expect_shape(&f, op, "out", want, what);
  else
    expect_error(&f, op, strstr(want, "dtype") || strstr(want, "int64") ? PD_ETYPE :
                 strstr(want, "range") ? PD_EINVAL : PD_ESHAPE, want, what);
  fx_free(&f);
}

static void test_losses(void) {
  const char *ce = "cross_entropy", *swce = "softmax_with_cross_entropy";
  loss(ce, "[-1, 10]", PD_FP32, "[-1, 1]", PD_INT64, "", "[-1, 1]", "cross_entropy, hard labels");
  loss(ce, "[-1, 10]", PD_FP32, "[-1, 10]", PD_FP32, "soft_label=true", "[-1, 1]",
       "cross_entropy, soft labels");
  loss(ce, "[-1, 5, 10]", PD_FP32, "[-1, 5, 1]", PD_INT64, "", "[-1, 5, 1]", "cross_entropy, 3-D");
  loss(ce, "[-1, 10]", PD_FP32, "[-1]", PD_INT64, "",
       "cross_entropy: X [-1, 10] and Label [-1] must have the same number of dims",
       "cross_entropy: Label rank");
  loss(ce, "[-1, 10]", PD_FP32, "[-1, 10]", PD_INT64, "",
       "cross_entropy: hard Label [-1, 10] must have 1 in dim 1 (X [-1, 10])",
       "cross_entropy: hard Label of width 10");
  loss(ce, "[32, 10]", PD_FP32, "[16, 1]", PD_INT64, "",
       "cross_entropy: X [32, 10] and Label [16, 1] differ in dim 0", "cross_entropy: batch sizes differ");
  loss(ce, "[-1, 10]", PD_FP32, "[-1, 1]", PD_FP32, "",
       "cross_entropy: hard Label must be int64 or int32, got float32", "cross_entropy: float labels");
  loss(ce, "[-1, 10]", PD_FP32, "[-1, 5]", PD_FP32, "soft_label=true",
       "cross_entropy: soft Label [-1, 5] must match X [-1, 10] in dim 1",
       "cross_entropy: soft Label of the wrong width");
  loss(ce, "[-1, 10]", PD_FP32, "[-1, 10]", PD_FP64, "soft_label=true",
       "cross_entropy: Label has dtype float64 but X has dtype float32",
       "cross_entropy: soft Label dtype");

  loss(swce, "[-1, 10]", PD_FP32, "[-1, 1]", PD_INT64, "", "[-1, 1]", "softmax_with_cross_entropy");
  loss(swce, "[-1, 10, 5]", PD_FP32, "[-1, 1, 5]", PD_INT64, "axis=1", "[-1, 1, 5]",
       "softmax_with_cross_entropy along axis 1");
  loss(swce, "[-1, 10]", PD_FP32, "[-1, 1]", PD_INT32, "", "[-1, 1]", "int32 labels");
  loss(swce, "[-1, 10]", PD_FP32, "[-1, 1]", PD_INT64, "axis=3",
       "softmax_with_cross_entropy: axis 3 is out of range for Logits [-1, 10] (expected -2 to 1)",
       "softmax_with_cross_entropy: bad axis");
  loss(swce, "[-1, 10]", PD_FP32, "[-1, 3]", PD_INT64, "",
       "softmax_with_cross_entropy: hard Label [-1, 3] must have 1 in dim 1 (Logits [-1, 10])",
       "softmax_with_cross_entropy: hard Label width");
  loss(swce, "[-1, 10]", PD_INT64, "[-1, 1]", PD_INT64, "",
       "softmax_with_cross_entropy: Logits must be float16, float32 or float64, got int64",
       "softmax_with_cross_entropy: integer logits");

  fx f;
  fx_init(&f);
  decl_lod(f.b, "x", PD_FP32, "[-1, 10]", 1);
  decl(f.b, "label", PD_INT64, "[-1, 1]");
  expect_shape(&f, add_op(&f, "softmax_with_cross_entropy", "Logits=x Label=label", "Softmax=sm Loss=l"),
               "sm", "[-1, 10]", "Softmax is shaped like Logits");
  is_int(lod_of(&f, "l"), 1, "Loss keeps the LoD");
  expect_shape(&f, add_op(&f, "softmax_with_cross_entropy", "Logits=x Label=label", "Loss=l2"), "l2",
               "[-1, 1]", "Softmax may be left out");
  fx_free(&f);
}

static void test_accuracy(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "v", PD_FP32, "[-1, 5]");
  decl(f.b, "v4", PD_FP32, "[-1, 4]");
  decl(f.b, "i", PD_INT64, "[-1, 5]");
  decl(f.b, "i32", PD_INT64, "[32, 5]");
  decl(f.b, "i1", PD_INT64, "[-1]");
  decl(f.b, "fi", PD_FP32, "[-1, 5]");
  decl(f.b, "l", PD_INT64, "[-1, 1]");
  decl(f.b, "l16", PD_INT64, "[16, 1]");
  decl(f.b, "l10", PD_INT64, "[-1, 10]");
  const char *outs = "Accuracy=acc Correct=cor Total=tot";
  expect_shape(&f, add_op(&f, "accuracy", "Out=v Indices=i Label=l", outs), "acc", "[1]", "accuracy");
  ok(dtype_of(&f, "acc") == PD_FP32 && dtype_of(&f, "cor") == PD_INT32 &&
         dtype_of(&f, "tot") == PD_INT32 && strcmp(shape_of(&f, "tot"), "[1]") == 0,
     "accuracy: Accuracy float32, Correct and Total int32 [1]");
  expect_error(&f, add_op(&f, "accuracy", "Out=v Indices=i Label=l10", outs), PD_ESHAPE,
               "accuracy: Label must be [batch, 1], got [-1, 10]", "accuracy: Label width");
  expect_error(&f, add_op(&f, "accuracy", "Out=v Indices=i32 Label=l16", outs), PD_ESHAPE,
               "accuracy: Indices [32, 5] and Label [16, 1] disagree on the batch size",
               "accuracy: batch sizes differ");
  expect_error(&f, add_op(&f, "accuracy", "Out=v Indices=i1 Label=l", outs), PD_ESHAPE,
               "accuracy: Indices must have 2 dims [batch, k], got [-1]", "accuracy: 1-D Indices");
  expect_error(&f, add_op(&f, "accuracy", "Out=v Indices=fi Label=l", outs), PD_ETYPE,
               "accuracy: Indices must be int64 or int32, got float32", "accuracy: float Indices");
  expect_error(&f, add_op(&f, "accuracy", "Out=v4 Indices=i Label=l", outs), PD_ESHAPE,
               "accuracy: Out [-1, 4] and Indices [-1, 5] must have the same shape",
               "accuracy: Out and Indices differ");
  fx_free(&f);
}

int main(void) {
  test_conv2d();
  test_pool2d();
  test_losses();
  test_accuracy();
  return tap_done();
}
