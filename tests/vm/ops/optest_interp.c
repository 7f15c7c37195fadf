/* optest_interp.c -- the op-test table's rows of vm/ops/interp.c (optest.h): nearest_interp,
 * bilinear_interp and their _v2, bicubic_interp_v2, NCHW and NHWC, batch 2: upsampling by 2
 * and downsampling, a non-integer scale (attribute, Scale input), out_h / out_w, OutSize and
 * SizeTensor inputs (int32, read on the host), align_corners, align_mode 0 and 1; and
 * linear_interp_v2 on 3-D X (NCW and NWC) likewise. The reference is PaddlePaddle's definition
 * written out output by output: its ratios and bilinear weights are floats (3.3.1's CPU kernel:
 * the height's source index computed in double and rounded to float, the width's in float
 * arithmetic; linear's like bilinear's height), bicubic's weights Keys' cubic convolution (A =
 * -0.75) in double, the sums in double. grid_sampler: bilinear and nearest, zeros, border and
 * reflection padding, with and without align_corners, grid points inside and outside the
 * image, gradients for X and Grid; the reference is Paddle's grid_sample written out point by
 * point in double. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

/* Paddle's ratio of an axis: 0 for one output; (in - 1) / (out - 1) with align_corners; else
 * 1 / scale when a scale gave the size, else in / out; all in float. */
static float ratio_of(int64_t in, int64_t out, bool ac, double scale) {
  if (out <= 1) return 0.0f;
  if (ac) return (float)(in - 1) / (float)(out - 1);
  return scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
}

/* Where output position k of an axis reads: taps a, b with weights wa, wb. nearest: one tap,
 * trunc(ratio k) (+ 0.5 before truncating with align_corners). bilinear: src = ratio (k + 0.5)
 * - 0.5 (align_mode 0 without align_corners) or ratio k, at least 0; a = trunc(src), b = a + 1
 * but at the last pixel; wb = src - a, wa = 1 - wb. */
static void tap(int64_t in, float ratio, int64_t k, bool nearest, bool ac, int64_t mode,
                bool width, int64_t *a, int64_t *b, double *wa, double *wb) {
  bool half = mode == 0 && !ac;
  float rk = ratio * (float)k;
  if (nearest) {
    *a = *b = ac ? (int64_t)((double)rk + 0.5) : (int64_t)rk;
    *wa = 1, *wb = 0;
  } else {
    float src;
    if (!half) {
      src = rk;
    } else if (width) {
      src = ratio * ((float)k + 0.5f) - 0.5f;
    } else {
      src = (float)((double)ratio * ((double)k + 0.5) - 0.5);
    }
    src = src > 0 ? src : 0;
    /* the height's tap comes from the double source (the same but within a float's rounding) */
    int64_t t = half && !width ? (int64_t)fmax((double)ratio * ((double)k + 0.5) - 0.5, 0)
                               : (int64_t)src;
    float frac = src - (float)t;
    *a = t;
    *b = t + 1 < in ? t + 1 : in - 1;
    *wb = frac;
    *wa = 1.0f - frac;
  }
  if (*a > in - 1) *a = in - 1;
}

/* Keys' cubic convolution (A = -0.75) of distance d. */
static double keys(double d) {
  const double a = -0.75;
  d = fabs(d);
  if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
  if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
  return 0;
}

/* Where output position k of an axis reads, bicubic: src = ratio k (align_corners) or
 * ratio (k + 0.5) - 0.5, floor i; taps i - 1 .. i + 2 clamped into the axis, weighted by
 * Keys' kernel of their distance to src. */
static void cubic_taps(int64_t in, float ratio, int64_t k, bool ac, int64_t t[4], double w[4]) {
  double src = ac ? (double)(ratio * (float)k) : (double)ratio * ((double)k + 0.5) - 0.5;
  double f = floor(src);
  for (int j = 0; j < 4; j++) {
    double at = f - 1 + j;
    w[j] = keys(src - at);
    t[j] = at < 0 ? 0 : at > (double)(in - 1) ? in - 1 : (int64_t)at;
  }
}

/* The op on X with the output size (oh, ow) and the scales (sh, sw; -1: none); a 3-D X (linear)
 * has one row (h = oh = 1). */
static void interp_with(ot_ref *r, int64_t oh, int64_t ow, double sh, double sw) {
  const ot_val *x = ot_in(r, "X");
  bool nhwc = strcmp(ot_str(r, "data_layout"), "NHWC") == 0, one = x->nd == 3;
  bool nearest = strcmp(ot_str(r, "interp_method"), "nearest") == 0;
  bool cubic = strcmp(ot_str(r, "interp_method"), "bicubic") == 0;
  bool ac = ot_bool(r, "align_corners");
  int64_t mode = ot_int(r, "align_mode");
  int64_t n = x->dims[0], c = x->dims[nhwc ? x->nd - 1 : 1], h = one ? 1 : x->dims[nhwc ? 1 : 2],
          w = x->dims[nhwc ? x->nd - 2 : x->nd - 1];
  if (one) oh = 1;
  int64_t od[4] = {n, nhwc ? oh : c, nhwc ? ow : oh, nhwc ? c : ow};
  if (one) od[1] = nhwc ? ow : c, od[2] = nhwc ? c : ow;
  double *o = ot_out(r, "Out", x->nd, od);
  float rh = ratio_of(h, oh, ac, sh), rw = ratio_of(w, ow, ac, sw);
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t k = 0; k < oh; k++)
        for (int64_t l = 0; l < ow; l++) {
          int64_t y[4] = {0}, xx[4] = {0};
          double wy[4] = {1, 0, 0, 0}, wx[4] = {0}, s = 0;
          if (cubic) {
            cubic_taps(h, rh, k, ac, y, wy);
            cubic_taps(w, rw, l, ac, xx, wx);
          } else {
            if (!one) tap(h, rh, k, nearest, ac, mode, false, &y[0], &y[1], &wy[0], &wy[1]);
            tap(w, rw, l, nearest, ac, mode, !one, &xx[0], &xx[1], &wx[0], &wx[1]);
          }
          if (h == oh && w == ow) { /* Paddle copies X */
            memset(wy, 0, sizeof wy), memset(wx, 0, sizeof wx);
            y[0] = k, xx[0] = l, wy[0] = wx[0] = 1;
          }
          for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
              if (wy[i] * wx[j] == 0) continue;
              int64_t at = nhwc ? ((b * h + y[i]) * w + xx[j]) * c + ch
                                : ((b * c + ch) * h + y[i]) * w + xx[j];
              s += x->v[at] * wy[i] * wx[j];
            }
          o[nhwc ? ((b * oh + k) * ow + l) * c + ch : ((b * c + ch) * oh + k) * ow + l] = s;
        }
}

/* grid_sampler: a grid value g of an axis of size n maps to u = (g + 1) (n - 1) / 2
 * (align_corners) or (g + 1) n / 2 - 1/2; border clamps u into [0, n - 1]; reflection folds it
 * back off 0 and n - 1 (align_corners) or off -1/2 and n - 1/2 (then clamps). */
static double grid_coord(double g, int64_t n, bool ac, const char *pad) {
  double hi = (double)(n - 1), u = ac ? (g + 1) * hi / 2 : (g + 1) * (double)n / 2 - 0.5;
  if (strcmp(pad, "reflection") == 0) {
    double lo = ac ? 0 : -0.5, top = ac ? hi : hi + 0.5, span = top - lo;
    if (span == 0) return 0;
    double r = fmod(fabs(u - lo), 2 * span);
    u = lo + (r > span ? 2 * span - r : r);
  }
  if (strcmp(pad, "zeros") != 0) u = fmin(fmax(u, 0), hi);
  return u;
}

/* X's pixel (y, x) of image b, channel ch; 0 outside the image. */
static double pixel(const ot_val *x, int64_t b, int64_t ch, double y, double xx) {
  int64_t h = x->dims[2], w = x->dims[3];
  if (y < 0 || y > (double)(h - 1) || xx < 0 || xx > (double)(w - 1)) return 0;
  return x->v[((b * x->dims[1] + ch) * h + (int64_t)y) * w + (int64_t)xx];
}

/* Output[b, ch, k, l]: X at Grid[b, k, l]'s point: the 4 pixels around it weighted by the
 * distances to the opposite ones (bilinear), or the nearest pixel (halves away from zero). */
static void ref_grid_sampler(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *g = ot_in(r, "Grid");
  bool ac = ot_bool(r, "align_corners"), nearest = strcmp(ot_str(r, "mode"), "nearest") == 0;
  const char *pad = ot_str(r, "padding_mode");
  int64_t n = x->dims[0], c = x->dims[1], oh = g->dims[1], ow = g->dims[2];
  double *o = ot_out(r, "Output", 4, (int64_t[]){n, c, oh, ow});
  for (int64_t b = 0; b < n; b++)
    for (int64_t k = 0; k < oh * ow; k++) {
      const double *gp = g->v + (b * oh * ow + k) * 2;
      double u = grid_coord(gp[0], x->dims[3], ac, pad), v = grid_coord(gp[1], x->dims[2], ac, pad);
      double x0 = floor(u), y0 = floor(v), fx = u - x0, fy = v - y0;
      for (int64_t ch = 0; ch < c; ch++)
        o[(b * c + ch) * oh * ow + k] =
            nearest ? pixel(x, b, ch, round(v), round(u))
                    : pixel(x, b, ch, y0, x0) * (1 - fx) * (1 - fy) +
                          pixel(x, b, ch, y0, x0 + 1) * fx * (1 - fy) +
                          pixel(x, b, ch, y0 + 1, x0) * (1 - fx) * fy +
                          pixel(x, b, ch, y0 + 1, x0 + 1) * fx * fy;
    }
}

/* The size as the op's inputs and attributes give it: SizeTensor; else OutSize over the Scale
 * input or v1's scale over out_h, out_w (v2's scale list, which the table cannot read, is
 * passed by the rows' wrappers below). */
static void ref_interp(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *os = ot_in(r, "OutSize"), *sc = ot_in(r, "Scale");
  bool nhwc = strcmp(ot_str(r, "data_layout"), "NHWC") == 0, one = x->nd == 3;
  int64_t h = one ? 1 : x->dims[nhwc ? 1 : 2], w = x->dims[nhwc ? x->nd - 2 : x->nd - 1];
  int64_t oh = one ? 1 : ot_int(r, "out_h"), ow = ot_int(r, "out_w");
  double sh = -1, sw = -1;
  if (ot_nin(r, "SizeTensor") > 0) {
    int last = ot_nin(r, "SizeTensor") - 1;
    interp_with(r, (int64_t)ot_in_at(r, "SizeTensor", 0)->v[0],
                (int64_t)ot_in_at(r, "SizeTensor", last)->v[0], -1, -1);
    return;
  }
  if (sc) {
    sh = (float)sc->v[0], sw = (float)sc->v[!one && sc->n > 1];
  } else if (!strstr(ot_op(r), "_v2") && ot_float(r, "scale") > 0) {
    sh = sw = (float)ot_float(r, "scale");
  }
  if (sh > 0) oh = one ? 1 : (int64_t)((float)h * (float)sh), ow = (int64_t)((float)w * (float)sw);
  if (os) oh = one ? 1 : (int64_t)os->v[0], ow = (int64_t)os->v[os->n - 1];
  interp_with(r, oh, ow, sh, sw);
}

/* v2 rows with a scale attribute [sh, sw] (floor(in * scale) unless OutSize is given). */
static void scaled(ot_ref *r, double sh, double sw) {
  const ot_val *x = ot_in(r, "X"), *os = ot_in(r, "OutSize");
  bool nhwc = strcmp(ot_str(r, "data_layout"), "NHWC") == 0;
  int64_t h = x->dims[nhwc ? 1 : 2], w = x->dims[nhwc ? 2 : 3];
  int64_t oh = (int64_t)((float)h * (float)sh), ow = (int64_t)((float)w * (float)sw);
  if (os) oh = (int64_t)os->v[0], ow = (int64_t)os->v[1];
  interp_with(r, oh, ow, sh, sw);
}
static void ref_scale_2_2(ot_ref *r) { scaled(r, 2, 2); }
/* linear_interp_v2 with a scale attribute [s]: floor(w s) unless OutSize is given. */
static void ref_scale_16(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *os = ot_in(r, "OutSize");
  bool nhwc = strcmp(ot_str(r, "data_layout"), "NHWC") == 0;
  int64_t ow = (int64_t)((float)x->dims[nhwc ? 1 : 2] * 1.6f);
  if (os) ow = (int64_t)os->v[0];
  interp_with(r, 1, ow, 1.6, 1.6);
}
static void ref_scale_15_07(ot_ref *r) { scaled(r, 1.5, 0.7); }
static void ref_scale_05_05(ot_ref *r) { scaled(r, 0.5, 0.5); }

static const double size_6_7[] = {6, 7}, size_3_5[] = {3, 5}, size_5[] = {5}, size_4[] = {4};
static const double size_11[] = {11};
static const double scale_06[] = {0.6}, scale_17_13[] = {1.7, 1.3};

const ot_row ot_rows_interp[] = {
    /* nearest_interp_v2: Paddle 2's F.interpolate(mode="nearest") writes align_corners false. */
    {.op = "nearest_interp_v2", .what = "scale 2 (upsample), batch 2",
     .attrs = "interp_method=nearest align_corners=false scale=[2.0, 2.0]",
     .in = {{"X", "[2, 3, 3, 4]"}}, .ref = ref_scale_2_2},
    {.op = "nearest_interp_v2", .what = "out_h, out_w (downsample)",
     .attrs = "interp_method=nearest align_corners=false out_h=3 out_w=2",
     .in = {{"X", "[2, 2, 5, 4]"}}, .ref = ref_interp},
    {.op = "nearest_interp_v2", .what = "align_corners (rounds)",
     .attrs = "interp_method=nearest out_h=7 out_w=5", .in = {{"X", "[1, 2, 4, 3]"}},
     .ref = ref_interp},
    {.op = "nearest_interp_v2", .what = "scale [1.5, 0.7] NHWC",
     .attrs = "interp_method=nearest align_corners=false scale=[1.5, 0.7] data_layout=NHWC",
     .in = {{"X", "[2, 4, 5, 3]"}}, .ref = ref_scale_15_07},
    {.op = "nearest_interp_v2", .what = "OutSize",
     .attrs = "interp_method=nearest align_corners=false out_h=2 out_w=2",
     .in = {{"X", "[2, 2, 3, 4]"}, {"OutSize", "[2]", OT_I32, .v = size_6_7}},
     .ref = ref_interp},
    {.op = "nearest_interp_v2", .what = "SizeTensor over OutSize",
     .attrs = "interp_method=nearest align_corners=false",
     .in = {{"X", "[1, 2, 3, 4]"}, {"OutSize", "[2]", OT_I32, .v = size_6_7},
            {"SizeTensor", "[1]", OT_I32, .v = size_5}, {"SizeTensor", "[1]", OT_I32, .v = size_4}},
     .ref = ref_interp},
    {.op = "nearest_interp_v2", .what = "Scale input 0.6",
     .attrs = "interp_method=nearest align_corners=false scale=[2.0, 2.0]",
     .in = {{"X", "[2, 1, 5, 7]"}, {"Scale", "[1]", OT_F32, .v = scale_06}}, .ref = ref_interp},
    /* nearest_interp: one float scale, the ratio from it as in v2. */
    {.op = "nearest_interp", .what = "scale 2",
     .attrs = "interp_method=nearest align_corners=false scale=2.0",
     .in = {{"X", "[2, 2, 3, 3]"}}, .ref = ref_interp},
    {.op = "nearest_interp", .what = "align_corners, out_h, out_w",
     .attrs = "interp_method=nearest out_h=5 out_w=6", .in = {{"X", "[1, 3, 3, 4]"}},
     .ref = ref_interp},
    {.op = "nearest_interp", .what = "OutSize NHWC",
     .attrs = "interp_method=nearest align_corners=false data_layout=NHWC",
     .in = {{"X", "[2, 4, 3, 2]"}, {"OutSize", "[2]", OT_I32, .v = size_3_5}},
     .ref = ref_interp},

    /* bilinear_interp_v2: F.interpolate(mode="bilinear") writes align_corners false, align_mode
     * 0 (half-pixel centres). */
    {.op = "bilinear_interp_v2", .what = "scale 2, align_mode 0, batch 2",
     .attrs = "interp_method=bilinear align_corners=false align_mode=0 scale=[2.0, 2.0]",
     .in = {{"X", "[2, 3, 3, 4]"}}, .ref = ref_scale_2_2},
    {.op = "bilinear_interp_v2", .what = "align_corners, out_h, out_w",
     .attrs = "interp_method=bilinear out_h=7 out_w=6", .in = {{"X", "[2, 2, 4, 3]"}},
     .ref = ref_interp},
    {.op = "bilinear_interp_v2", .what = "downsample, align_mode 1",
     .attrs = "interp_method=bilinear align_corners=false align_mode=1 out_h=3 out_w=2",
     .in = {{"X", "[1, 2, 7, 5]"}}, .ref = ref_interp},
    {.op = "bilinear_interp_v2", .what = "scale 0.5, align_mode 0",
     .attrs = "interp_method=bilinear align_corners=false align_mode=0 scale=[0.5, 0.5]",
     .in = {{"X", "[2, 1, 6, 8]"}}, .ref = ref_scale_05_05},
    {.op = "bilinear_interp_v2", .what = "scale [1.5, 0.7] NHWC",
     .attrs = "interp_method=bilinear align_corners=false align_mode=0 scale=[1.5, 0.7] "
              "data_layout=NHWC",
     .in = {{"X", "[2, 4, 5, 3]"}}, .ref = ref_scale_15_07},
    {.op = "bilinear_interp_v2", .what = "OutSize, align_mode 0",
     .attrs = "interp_method=bilinear align_corners=false align_mode=0",
     .in = {{"X", "[2, 2, 4, 5]"}, {"OutSize", "[2]", OT_I32, .v = size_6_7}},
     .ref = ref_interp},
    {.op = "bilinear_interp_v2", .what = "OutSize with a scale (the ratio is 1 / scale)",
     .attrs = "interp_method=bilinear align_corners=false align_mode=0 scale=[2.0, 2.0]",
     .in = {{"X", "[1, 2, 4, 5]"}, {"OutSize", "[2]", OT_I32, .v = size_3_5}},
     .ref = ref_scale_2_2},
    {.op = "bilinear_interp_v2", .what = "Scale input [1.7, 1.3]",
     .attrs = "interp_method=bilinear align_corners=false align_mode=0",
     .in = {{"X", "[1, 2, 3, 4]"}, {"Scale", "[2]", OT_F32, .v = scale_17_13}},
     .ref = ref_interp},
    {.op = "bilinear_interp_v2", .what = "the same size: a copy",
     .attrs = "interp_method=bilinear out_h=3 out_w=4", .in = {{"X", "[1, 2, 3, 4]"}},
     .ref = ref_interp},
    /* bicubic_interp_v2: F.interpolate(mode="bicubic") writes align_corners false. Taps past
     * either border (clamped) in every row. */
    {.op = "bicubic_interp_v2", .what = "scale 2, batch 2",
     .attrs = "interp_method=bicubic align_corners=false scale=[2.0, 2.0]",
     .in = {{"X", "[2, 2, 3, 4]"}}, .ref = ref_scale_2_2},
    {.op = "bicubic_interp_v2", .what = "out_h, out_w (up and down)",
     .attrs = "interp_method=bicubic align_corners=false out_h=7 out_w=3",
     .in = {{"X", "[1, 2, 4, 5]"}}, .ref = ref_interp},
    {.op = "bicubic_interp_v2", .what = "align_corners",
     .attrs = "interp_method=bicubic align_corners=true out_h=6 out_w=7",
     .in = {{"X", "[2, 1, 4, 3]"}}, .ref = ref_interp},
    {.op = "bicubic_interp_v2", .what = "scale [1.5, 0.7] NHWC",
     .attrs = "interp_method=bicubic align_corners=false scale=[1.5, 0.7] data_layout=NHWC",
     .in = {{"X", "[2, 4, 5, 3]"}}, .ref = ref_scale_15_07, .no_grad = true},
    {.op = "bicubic_interp_v2", .what = "OutSize, Scale input",
     .attrs = "interp_method=bicubic align_corners=false",
     .in = {{"X", "[1, 2, 4, 5]"}, {"OutSize", "[2]", OT_I32, .v = size_6_7},
            {"Scale", "[2]", OT_F32, .v = scale_17_13}},
     .ref = ref_interp, .no_grad = true},
    /* linear_interp_v2 on 3-D X: F.interpolate(mode="linear") writes align_corners false,
     * align_mode 0; data_layout NCHW is NCW, NHWC is NWC. */
    {.op = "linear_interp_v2", .what = "out_w, align_mode 0, batch 2",
     .attrs = "interp_method=linear align_corners=false align_mode=0 out_w=8",
     .in = {{"X", "[2, 3, 5]"}}, .ref = ref_interp},
    {.op = "linear_interp_v2", .what = "align_corners",
     .attrs = "interp_method=linear out_w=9", .in = {{"X", "[1, 2, 4]"}}, .ref = ref_interp},
    {.op = "linear_interp_v2", .what = "downsample, align_mode 1",
     .attrs = "interp_method=linear align_corners=false align_mode=1 out_w=3",
     .in = {{"X", "[2, 2, 7]"}}, .ref = ref_interp},
    {.op = "linear_interp_v2", .what = "scale [1.6] NWC",
     .attrs = "interp_method=linear align_corners=false align_mode=0 scale=[1.6] "
              "data_layout=NHWC",
     .in = {{"X", "[2, 5, 3]"}}, .ref = ref_scale_16},
    {.op = "linear_interp_v2", .what = "OutSize",
     .attrs = "interp_method=linear align_corners=false align_mode=0 out_w=2",
     .in = {{"X", "[1, 2, 6]"}, {"OutSize", "[1]", OT_I32, .v = size_11}}, .ref = ref_interp,
     .no_grad = true},
    {.op = "linear_interp_v2", .what = "SizeTensor",
     .attrs = "interp_method=linear align_corners=false align_mode=0",
     .in = {{"X", "[1, 2, 6]"}, {"SizeTensor", "[1]", OT_I32, .v = size_4}}, .ref = ref_interp,
     .no_grad = true},
    {.op = "linear_interp_v2", .what = "Scale input 0.6",
     .attrs = "interp_method=linear align_corners=false align_mode=0",
     .in = {{"X", "[2, 1, 7]"}, {"Scale", "[1]", OT_F32, .v = scale_06}}, .ref = ref_interp,
     .no_grad = true},
    /* grid_sampler: F.grid_sample writes mode bilinear, padding_mode zeros, align_corners
     * true by default; grids reach past [-1, 1] for the paddings to act. */
    {.op = "grid_sampler", .what = "bilinear, zeros, align_corners",
     .in = {{"X", "[2, 3, 4, 5]"}, {"Grid", "[2, 3, 2, 2]", .lo = -1.2, .hi = 1.2}},
     .ref = ref_grid_sampler},
    {.op = "grid_sampler", .what = "bilinear, zeros", .attrs = "align_corners=false",
     .in = {{"X", "[1, 2, 5, 4]"}, {"Grid", "[1, 4, 3, 2]", .lo = -1.2, .hi = 1.2}},
     .ref = ref_grid_sampler},
    {.op = "grid_sampler", .what = "bilinear, border", .attrs = "padding_mode=border",
     .in = {{"X", "[1, 2, 4, 4]"}, {"Grid", "[1, 3, 3, 2]", .lo = -1.4, .hi = 1.4}},
     .ref = ref_grid_sampler},
    {.op = "grid_sampler", .what = "bilinear, reflection, align_corners",
     .attrs = "padding_mode=reflection",
     .in = {{"X", "[1, 2, 4, 5]"}, {"Grid", "[1, 3, 3, 2]", .lo = -1.6, .hi = 1.6}},
     .ref = ref_grid_sampler},
    {.op = "grid_sampler", .what = "bilinear, reflection",
     .attrs = "padding_mode=reflection align_corners=false",
     .in = {{"X", "[2, 1, 3, 5]"}, {"Grid", "[2, 2, 4, 2]", .lo = -1.6, .hi = 1.6}},
     .ref = ref_grid_sampler},
    {.op = "grid_sampler", .what = "nearest, zeros", .attrs = "mode=nearest",
     .in = {{"X", "[1, 2, 4, 5]"}, {"Grid", "[1, 3, 4, 2]", .lo = -1.2, .hi = 1.2}},
     .ref = ref_grid_sampler, .wrt = "X"},
    {.op = "grid_sampler", .what = "nearest, border", .attrs = "mode=nearest padding_mode=border "
                                                             "align_corners=false",
     .in = {{"X", "[1, 1, 3, 4]"}, {"Grid", "[1, 2, 3, 2]", .lo = -1.3, .hi = 1.3}},
     .ref = ref_grid_sampler, .no_grad = true},
    /* bilinear_interp. */
    {.op = "bilinear_interp", .what = "scale 2, align_mode 0",
     .attrs = "interp_method=bilinear align_corners=false align_mode=0 scale=2.0",
     .in = {{"X", "[2, 2, 3, 4]"}}, .ref = ref_interp},
    {.op = "bilinear_interp", .what = "align_corners, out_h, out_w",
     .attrs = "interp_method=bilinear out_h=5 out_w=7", .in = {{"X", "[1, 2, 3, 4]"}},
     .ref = ref_interp},
    {.op = "bilinear_interp", .what = "NHWC, align_mode 1, downsample",
     .attrs = "interp_method=bilinear align_corners=false data_layout=NHWC out_h=3 out_w=4",
     .in = {{"X", "[2, 5, 6, 2]"}}, .ref = ref_interp},
    {0},
};
