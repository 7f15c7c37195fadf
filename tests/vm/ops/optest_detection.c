/* optest_detection.c -- the op-test table's rows of vm/ops/detection.c (optest.h): yolo_box
 * (clip_bbox, scale_x_y, iou_aware, int64 ImgSize), prior_box (max sizes, flipped and repeated
 * ratios, min_max_aspect_ratios_order, clip, given steps and offset), density_prior_box
 * (densities, flatten_to_2d, the integer steps), box_coder (encoding and decoding, along both
 * axes, PriorBoxVar or the variance attribute, normalized or not) and the multi-class NMS
 * (several classes, background_label, the score threshold, nms_top_k, keep_top_k below the
 * kept, nms_eta, normalized or not, tied scores, the empty result, a batch of 2 images, 2-D
 * scores split by RoisNum; the three versions). The references are Paddle's definitions written
 * out in double; the NMS is the plain quadratic greedy one. The float list attributes, which
 * the table cannot read back, are each case's constants beside its row. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tests/vm/ops/optest.h"

static double sig(double v) { return 1.0 / (1.0 + exp(-v)); }

/* ---------------------------------------------------------------- yolo_box */

/* yolo_box: Boxes [N, A H W, 4], Scores [N, A H W, classes]; box a H W + k W + l of image n is
 * decoded from X's channels of anchor a (after the A IoU channels when iou_aware): sigmoid
 * centres on the grid scaled by scale_x_y around the cell, exponential sizes times the anchor,
 * in the image's pixels; zero where the confidence is under conf_thresh. */
static void ref_yolo_box(ot_ref *r) {
  const ot_val *x = ot_in(r, "X"), *im = ot_in(r, "ImgSize");
  int64_t anchors[16];
  int na = ot_ints(r, "anchors", anchors, 16) / 2;
  int64_t cls = ot_int(r, "class_num"), ratio = ot_int(r, "downsample_ratio");
  bool iou_aware = ot_bool(r, "iou_aware"), clip = ot_bool(r, "clip_bbox");
  float scale = (float)ot_float(r, "scale_x_y"), bias = -0.5f * (scale - 1.f);
  double thr = ot_float(r, "conf_thresh"), f = ot_float(r, "iou_aware_factor");
  int64_t n = x->dims[0], ch = x->dims[1], H = x->dims[2], W = x->dims[3], nb = na * H * W;
  double *bo = ot_out(r, "Boxes", 3, (int64_t[]){n, nb, 4});
  double *so = ot_out(r, "Scores", 3, (int64_t[]){n, nb, cls});
  for (int64_t b = 0; b < n; b++) {
    double ih = im->v[2 * b], iw = im->v[2 * b + 1];
    for (int a = 0; a < na; a++)
      for (int64_t k = 0; k < H; k++)
        for (int64_t l = 0; l < W; l++) {
          /* X[b, channel, k, l] */
#define XV(c) x->v[((b * ch + (c)) * H + k) * W + l]
          int64_t c0 = (iou_aware ? na : 0) + a * (5 + cls);
          double conf = sig(XV(c0 + 4));
          if (iou_aware) conf = pow(conf, 1 - f) * pow(sig(XV(a)), f);
          if (conf < thr) continue;
          double cx = (l + sig(XV(c0)) * scale + bias) * iw / W;
          double cy = (k + sig(XV(c0 + 1)) * scale + bias) * ih / H;
          double w = exp(XV(c0 + 2)) * anchors[2 * a] * iw / (ratio * W);
          double h = exp(XV(c0 + 3)) * anchors[2 * a + 1] * ih / (ratio * H);
          double *o = bo + (b * nb + a * H * W + k * W + l) * 4;
          o[0] = cx - w / 2, o[1] = cy - h / 2, o[2] = cx + w / 2, o[3] = cy + h / 2;
          if (clip) {
            o[0] = fmax(o[0], 0), o[1] = fmax(o[1], 0);
            o[2] = fmin(o[2], iw - 1), o[3] = fmin(o[3], ih - 1);
          }
          for (int64_t j = 0; j < cls; j++)
            so[(b * nb + a * H * W + k * W + l) * cls + j] = conf * sig(XV(c0 + 5 + j));
#undef XV
        }
  }
}

static const double img_sizes[] = {96, 128, 64, 80};
#define YOLO_IMG_ {"ImgSize", "[2, 2]", OT_I32, .v = img_sizes}

/* ---------------------------------------------------------------- prior_box */

/* A prior-box case's float lists (the row's attributes, written twice). */
typedef struct prior_case {
  double min[4], max[4], ar[4], var[4];
  int nmin, nmax, nar;
} prior_case;

/* prior_box: Boxes and Variances [H, W, priors, 4]. Ratios: 1, then each new ratio and its
 * inverse (flip); per cell and min size m the boxes (m sqrt(r), m / sqrt(r)) of every ratio
 * then the square sqrt(m M), or with min_max_aspect_ratios_order the square m, the square
 * sqrt(m M), the other ratios; corners over the image's size, clipped to [0, 1] with clip. */
static void ref_prior(ot_ref *r, const prior_case *p) {
  const ot_val *in = ot_in(r, "Input"), *im = ot_in(r, "Image");
  double ar[16];
  int nar = 0;
  ar[nar++] = 1;
  for (int i = 0; i < p->nar; i++) {
    bool seen = false;
    for (int j = 0; j < nar; j++) seen = seen || fabs((float)p->ar[i] - ar[j]) < 1e-6;
    if (seen) continue;
    ar[nar++] = (float)p->ar[i];
    if (ot_bool(r, "flip")) ar[nar++] = 1.0f / (float)p->ar[i];
  }
  int64_t H = in->dims[2], W = in->dims[3], np = nar * p->nmin + p->nmax;
  double iw = (double)im->dims[3], ih = (double)im->dims[2];
  double sw = ot_float(r, "step_w"), sh = ot_float(r, "step_h"), off = ot_float(r, "offset");
  if (sw == 0 || sh == 0) sw = iw / W, sh = ih / H;
  bool order = ot_bool(r, "min_max_aspect_ratios_order"), clip = ot_bool(r, "clip");
  double *b = ot_out(r, "Boxes", 4, (int64_t[]){H, W, np, 4});
  double *v = ot_out(r, "Variances", 4, (int64_t[]){H, W, np, 4});
  int64_t k = 0;
  for (int64_t h = 0; h < H; h++)
    for (int64_t w = 0; w < W; w++)
      for (int s = 0; s < p->nmin; s++) {
        double m = (float)p->min[s], big = p->nmax ? sqrt(m * (float)p->max[s]) : 0;
        double sizes[20][2];
        int ns = 0;
        if (order) {
          sizes[ns][0] = sizes[ns][1] = m, ns++;
          if (p->nmax) sizes[ns][0] = sizes[ns][1] = big, ns++;
        }
        for (int i = 0; i < nar; i++) {
          if (order && ar[i] == 1) continue;
          sizes[ns][0] = m * sqrt(ar[i]), sizes[ns][1] = m / sqrt(ar[i]), ns++;
        }
        if (!order && p->nmax) sizes[ns][0] = sizes[ns][1] = big, ns++;
        double cx = (w + off) * sw, cy = (h + off) * sh;
        for (int i = 0; i < ns; i++, k++) {
          double c[4] = {(cx - sizes[i][0] / 2) / iw, (cy - sizes[i][1] / 2) / ih,
                         (cx + sizes[i][0] / 2) / iw, (cy + sizes[i][1] / 2) / ih};
          for (int e = 0; e < 4; e++) {
            b[k * 4 + e] = clip ? fmin(fmax(c[e], 0), 1) : c[e];
            v[k * 4 + e] = (float)p->var[e];
          }
        }
      }
}

#define PRIOR_CASE(name, ...)                                       \
  static const prior_case name##_case = __VA_ARGS__;               \
  static void name(ot_ref *r) { ref_prior(r, &name##_case); }
/* min [8, 15], max [12, 25], ratios [2, 0.5, 3] (0.5 is 2 flipped), variances 0.1 0.1 0.2 0.2 */
PRIOR_CASE(ref_prior_a, {{8, 15}, {12, 25}, {2, 0.5, 3}, {0.1, 0.1, 0.2, 0.2}, 2, 2, 3})
/* min [6], no max, ratios [2], variances 0.1 0.2 0.3 0.4 */
PRIOR_CASE(ref_prior_b, {{6}, {0}, {2}, {0.1, 0.2, 0.3, 0.4}, 1, 0, 1})
#define PRIOR_A_ "min_sizes=[8, 15] max_sizes=[12, 25] aspect_ratios=[2, 0.5, 3] " \
                 "variances=[0.1, 0.1, 0.2, 0.2]"

/* ---------------------------------------------------------------- density_prior_box */

typedef struct density_case {
  double sizes[4], ratios[4], var[4];
  int dens[4], n, nratios;
} density_case;

/* density_prior_box: per cell, fixed size z with density d and ratio r, a d x d grid of boxes
 * z sqrt(r) by z / sqrt(r) around centres spaced by shift = s / d, s = (int)((step_w +
 * step_h) / 2), from the cell's centre less s/2 - shift/2 (in float, as Paddle); low corners at
 * least 0, high ones at most 1, all clipped to [0, 1] with clip. */
static void ref_density(ot_ref *r, const density_case *p) {
  const ot_val *in = ot_in(r, "Input"), *im = ot_in(r, "Image");
  int64_t H = in->dims[2], W = in->dims[3], np = 0;
  for (int i = 0; i < p->n; i++) np += p->nratios * p->dens[i] * p->dens[i];
  double iw = (double)im->dims[3], ih = (double)im->dims[2];
  double sw = ot_float(r, "step_w"), sh = ot_float(r, "step_h"), off = ot_float(r, "offset");
  if (sw == 0 || sh == 0) sw = iw / W, sh = ih / H;
  bool clip = ot_bool(r, "clip"), flat = ot_bool(r, "flatten_to_2d");
  int64_t d4[4] = {H, W, np, 4}, d2[2] = {H * W * np, 4};
  double *b = flat ? ot_out(r, "Boxes", 2, d2) : ot_out(r, "Boxes", 4, d4);
  double *v = flat ? ot_out(r, "Variances", 2, d2) : ot_out(r, "Variances", 4, d4);
  int step = (int)((sw + sh) * 0.5);
  bool f32 = ot_dtype(r) == PD_FP32;
  int64_t k = 0;
  for (int64_t h = 0; h < H; h++)
    for (int64_t w = 0; w < W; w++)
      for (int s = 0; s < p->n; s++) {
        int shift = step / p->dens[s];
        for (int q = 0; q < p->nratios; q++) {
          float bw = (float)p->sizes[s] * sqrtf((float)p->ratios[q]);
          float bh = (float)p->sizes[s] / sqrtf((float)p->ratios[q]);
          float x0 = (float)((w + off) * sw - step / 2. + shift / 2.);
          float y0 = (float)((h + off) * sh - step / 2. + shift / 2.);
          for (int i = 0; i < p->dens[s]; i++)
            for (int j = 0; j < p->dens[s]; j++, k++) {
              float x = x0 + (float)(j * shift), y = y0 + (float)(i * shift);
              double c[4] = {fmax((x - bw / 2.) / iw, 0), fmax((y - bh / 2.) / ih, 0),
                             fmin((x + bw / 2.) / iw, 1), fmin((y + bh / 2.) / ih, 1)};
              for (int e = 0; e < 4; e++) {
                double cv = f32 ? (float)c[e] : c[e];
                b[k * 4 + e] = clip ? fmin(fmax(cv, 0), 1) : cv;
                v[k * 4 + e] = (float)p->var[e];
              }
            }
        }
      }
}

#define DENSITY_CASE(name, ...)                                     \
  static const density_case name##_case = __VA_ARGS__;             \
  static void name(ot_ref *r) { ref_density(r, &name##_case); }
DENSITY_CASE(ref_density_a, {{8, 16}, {1, 2}, {0.1, 0.1, 0.2, 0.2}, {2, 1}, 2, 2})
DENSITY_CASE(ref_density_b, {{20}, {0.5, 1, 3}, {0.2, 0.2, 0.1, 0.1}, {3}, 1, 3})

/* ---------------------------------------------------------------- box_coder */

/* box_coder with variances var (NULL: PriorBoxVar's row, or 1 without it). Widths and heights
 * get +1 unless box_normalized. Encode target i against prior j: the centre offset over the
 * prior's size and the log of the size ratio, over the variances; decode TargetBox[i, j] with
 * prior j (axis 0) or i (axis 1): the inverse, as corners (less 1 at the far ones unless
 * normalized). */
static void ref_box_coder_var(ot_ref *r, const double *var) {
  const ot_val *p = ot_in(r, "PriorBox"), *pv = ot_in(r, "PriorBoxVar"), *t = ot_in(r, "TargetBox");
  bool decode = strcmp(ot_str(r, "code_type"), "decode_center_size") == 0;
  bool axis1 = decode && ot_int(r, "axis") == 1;
  double one = ot_bool(r, "box_normalized") ? 0 : 1;
  int64_t n = t->dims[0], m = decode ? t->dims[1] : p->dims[0];
  double *o = ot_out(r, "OutputBox", 3, (int64_t[]){n, m, 4});
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      int64_t q = axis1 ? i : j;
      const double *pb = p->v + q * 4;
      double v[4];
      for (int e = 0; e < 4; e++) v[e] = var ? (float)var[e] : pv ? pv->v[q * 4 + e] : 1;
      double pw = pb[2] - pb[0] + one, ph = pb[3] - pb[1] + one;
      double pcx = pb[0] + pw / 2, pcy = pb[1] + ph / 2, *y = o + (i * m + j) * 4;
      if (!decode) {
        const double *tb = t->v + i * 4;
        y[0] = ((tb[0] + tb[2]) / 2 - pcx) / pw / v[0];
        y[1] = ((tb[1] + tb[3]) / 2 - pcy) / ph / v[1];
        y[2] = log(fabs((tb[2] - tb[0] + one) / pw)) / v[2];
        y[3] = log(fabs((tb[3] - tb[1] + one) / ph)) / v[3];
      } else {
        const double *tb = t->v + (i * m + j) * 4;
        double cx = v[0] * tb[0] * pw + pcx, cy = v[1] * tb[1] * ph + pcy;
        double w = exp(v[2] * tb[2]) * pw, h = exp(v[3] * tb[3]) * ph;
        y[0] = cx - w / 2, y[1] = cy - h / 2, y[2] = cx + w / 2 - one, y[3] = cy + h / 2 - one;
      }
    }
}
static void ref_box_coder(ot_ref *r) { ref_box_coder_var(r, NULL); }
static const double var_attr[4] = {0.1, 0.1, 0.2, 0.2};
static void ref_box_coder_attr(ot_ref *r) { ref_box_coder_var(r, var_attr); }

/* Priors [3, 4] (x1 < x2, y1 < y2), their variances, targets [2, 4], deltas [2, 3, 4]. */
static const double priors[] = {1, 2, 5, 7, 0.5, 0.5, 3, 1.5, 4, 1, 9, 6};
static const double prior_vars[] = {0.1, 0.2, 0.3, 0.4, 0.2, 0.1, 0.2, 0.1, 0.1, 0.1, 0.2, 0.2};
static const double targets[] = {2, 3, 6, 6, 0, 1, 4, 2.5};
static const double deltas[] = {0.1, -0.2, 0.3, 0.05, -0.4, 0.2, -0.1, 0.2, 0.3, 0.3, 0.1, -0.3,
                                0.0, 0.1, -0.5, 0.4, 0.2, -0.3, 0.25, 0.1, -0.1, 0.05, 0.0, 0.6};

/* ---------------------------------------------------------------- multiclass_nms */

typedef struct ref_det {
  int64_t label, idx, pos;
  double score;
  bool keep;
} ref_det;

/* The IoU of two boxes by Paddle's rule: 0 when apart; +1 on the sides unless normalized;
 * an inverted box has area 0. */
static double ref_area(const double *b, bool norm) {
  if (b[2] < b[0] || b[3] < b[1]) return 0;
  return norm ? (b[2] - b[0]) * (b[3] - b[1]) : (b[2] - b[0] + 1) * (b[3] - b[1] + 1);
}
static double ref_iou(const double *a, const double *b, bool norm) {
  if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0;
  double e = norm ? 0 : 1;
  double in = (fmin(a[2], b[2]) - fmax(a[0], b[0]) + e) * (fmin(a[3], b[3]) - fmax(a[1], b[1]) + e);
  return in / (ref_area(a, norm) + ref_area(b, norm) - in);
}

/* a comes before b: the higher score as a float, then the earlier position. */
static bool ref_before(double sa, int64_t pa, double sb, int64_t pb) {
  float x = (float)sa, y = (float)sb;
  return x > y || (x == y && pa < pb);
}

/* The multi-class NMS by its definition, image by image: per class (background_label
 * skipped), the boxes scoring above score_threshold best first (ties: lower index), the first
 * nms_top_k; a box stays when its IoU with each one kept before is at most the threshold, which
 * is multiplied by nms_eta after each kept box while above 0.5 (in the pass's float type);
 * when more than keep_top_k stay in the image, the keep_top_k best over all classes (ties: the
 * class then the order kept). Out lists them by class, in the order kept (2-D Scores: by index);
 * Index is the image's first box (3-D: image m; 2-D: its first row times classes) plus m (3-D)
 * or index classes + label (2-D); NmsRoisNum the count per image. None at all: Out [0, 6] when
 * Index is bound, else [1, 1] holding -1. */
static void ref_nms(ot_ref *r) {
  const ot_val *bb = ot_in(r, "BBoxes"), *sc = ot_in(r, "Scores"), *rn = ot_in(r, "RoisNum");
  bool three = sc->nd == 3, norm = ot_bool(r, "normalized");
  bool f32 = ot_dtype(r) == PD_FP32, has_index = strcmp(ot_op(r), "multiclass_nms") != 0;
  double thr = (float)ot_float(r, "score_threshold"), eta = (float)ot_float(r, "nms_eta");
  int64_t top = ot_int(r, "nms_top_k"), keep_top = ot_int(r, "keep_top_k");
  int64_t bg = ot_int(r, "background_label"), classes = sc->dims[1];
  int64_t n = three ? sc->dims[0] : rn->n, first_row = 0;
  ref_det *all = calloc((size_t)(bb->n + 1), sizeof *all);
  int64_t *count = calloc((size_t)n + 1, sizeof *count), *index = calloc((size_t)bb->n + 1, 8);
  int64_t total = 0;
  for (int64_t im = 0; im < n; im++) {
    int64_t m = three ? sc->dims[2] : (int64_t)rn->v[im], start = total;
    for (int64_t c = 0; c < classes; c++) {
      if (c == bg) continue;
      /* Candidates by selection sort: the best remaining each time. */
      ref_det cand[64];
      int64_t nc = 0;
      for (int64_t i = 0; i < m; i++) {
        double s = three ? sc->v[(im * classes + c) * m + i] : sc->v[(first_row + i) * classes + c];
        if (s > thr) cand[nc++] = (ref_det){c, i, i, s, true};
      }
      for (int64_t i = 0; i < nc; i++)
        for (int64_t j = i + 1; j < nc; j++)
          if (ref_before(cand[j].score, cand[j].pos, cand[i].score, cand[i].pos)) {
            ref_det t = cand[i];
            cand[i] = cand[j], cand[j] = t;
          }
      if (top > -1 && nc > top) nc = top;
      double nt = (float)ot_float(r, "nms_threshold");
      int64_t from = total;
      for (int64_t i = 0; i < nc; i++) {
        bool keep = true;
        for (int64_t k = from; k < total && keep; k++) {
          const double *a, *b;
          if (three) {
            a = bb->v + (im * m + cand[i].idx) * 4, b = bb->v + (im * m + all[k].idx) * 4;
          } else {
            a = bb->v + ((first_row + cand[i].idx) * classes + c) * 4;
            b = bb->v + ((first_row + all[k].idx) * classes + c) * 4;
          }
          keep = ref_iou(a, b, norm) <= nt;
        }
        if (!keep) continue;
        all[total] = cand[i];
        all[total].pos = total - start;
        total++;
        if (eta < 1 && nt > 0.5) nt = f32 ? (float)(nt * eta) : nt * eta;
      }
    }
    int64_t got = total - start;
    if (keep_top > -1 && got > keep_top)
      for (int64_t i = start; i < total; i++) {
        int64_t better = 0; /* how many of the image's detections come before this one */
        for (int64_t j = start; j < total; j++)
          better += j != i && ref_before(all[j].score, all[j].pos, all[i].score, all[i].pos);
        all[i].keep = better < keep_top;
      }
    int64_t w = start;
    for (int64_t i = start; i < total; i++)
      if (all[i].keep) all[w++] = all[i];
    total = w;
    if (!three) /* by class, then index */
      for (int64_t i = start; i < total; i++)
        for (int64_t j = i + 1; j < total; j++)
          if (all[j].label < all[i].label ||
              (all[j].label == all[i].label && all[j].idx < all[i].idx)) {
            ref_det t = all[i];
            all[i] = all[j], all[j] = t;
          }
    for (int64_t i = start; i < total; i++)
      index[i] = three ? im * m + all[i].idx : (first_row + all[i].idx) * classes + all[i].label;
    count[im] = total - start;
    if (!three) first_row += m;
  }
  bool none = total == 0 && !has_index;
  double *o = ot_out(r, "Out", 2, none ? (int64_t[]){1, 1} : (int64_t[]){total, 6});
  if (none) o[0] = -1;
  for (int64_t i = 0; i < total; i++) {
    const ref_det *d = &all[i];
    o[i * 6] = (double)d->label;
    o[i * 6 + 1] = d->score;
    for (int e = 0; e < 4; e++) o[i * 6 + 2 + e] = bb->v[index[i] * 4 + e];
  }
  if (has_index) {
    double *x = ot_out(r, "Index", 2, (int64_t[]){total, 1});
    for (int64_t i = 0; i < total; i++) x[i] = (double)index[i];
  }
  if (strcmp(ot_op(r), "multiclass_nms3") == 0) {
    double *c = ot_out(r, "NmsRoisNum", 1, (int64_t[]){n});
    for (int64_t i = 0; i < n; i++) c[i] = (double)count[i];
  }
  free(all);
  free(count);
  free(index);
}

/* Two images of six boxes: overlaps at IoU 0.7, 0.375 (0.68, 0.33 normalized) and 1 in the
 * first; 0.909, 0.47 (0.39 normalized) in the second. */
static const double boxes2[] = {
    0, 0, 10, 10, 1, 1, 11, 11, 20, 20, 30, 30, 0, 0, 10, 10, 5, 0, 15, 10, 21, 19, 31, 29,
    0, 0, 4, 4,   2, 2, 6, 6,   0, 0, 4, 4.5,   10, 10, 14, 14, 3, 0, 7, 4, 11, 11, 15, 15};
/* Their scores [2, 3, 6], with ties (0.95 twice, 0.5 three times in a class). */
static const double scores2[] = {
    0.9, 0.8, 0.7, 0.6, 0.5,  0.4,  0.3,  0.95, 0.2,  0.95, 0.05, 0.6,  0.5,  0.5,  0.5, 0.1,
    0.7, 0.65, 0.2, 0.1, 0.3, 0.4, 0.5,  0.6,  0.8,  0.7,  0.9,  0.6,  0.5,  0.05, 0.45, 0.55,
    0.35, 0.75, 0.25, 0.15};
/* 2-D: 5 rows of 3 classes' boxes [5, 3, 4] and scores [5, 3], rows 3 + 2. */
#define SQ_(x, y, s) x, y, x + s, y + s
static const double rows_boxes[] = {
    SQ_(0, 0, 10), SQ_(0, 0, 10), SQ_(0, 0, 10), SQ_(1, 1, 10), SQ_(8, 8, 10), SQ_(0, 1, 10),
    SQ_(0, 1, 10), SQ_(30, 30, 5), SQ_(0, 0, 9),  SQ_(5, 5, 4),  SQ_(5, 5, 4),  SQ_(6, 5, 4),
    SQ_(5, 6, 4),  SQ_(20, 0, 4), SQ_(5, 5, 4)};
static const double rows_scores[] = {0.9, 0.3, 0.6, 0.8, 0.7, 0.2, 0.95, 0.4, 0.65,
                                     0.5, 0.8, 0.9, 0.6, 0.85, 0.1};
static const double rois[] = {3, 2};

#define NMS_IN_                                                                          \
  .in = {{"BBoxes", "[2, 6, 4]", .v = boxes2}, {"Scores", "[2, 3, 6]", .v = scores2}}
#define NMS_ROWS_IN_                                                                     \
  .in = {{"BBoxes", "[5, 3, 4]", .v = rows_boxes}, {"Scores", "[5, 3]", .v = rows_scores}, \
         {"RoisNum", "[2]", OT_I32, .v = rois}}
#define NMS3_ .outs = "Out Index NmsRoisNum"
#define NMS_ATTRS_(more) "nms_top_k=-1 keep_top_k=-1 " more

const ot_row ot_rows_detection[] = {
    /* yolo_box: three anchors and two classes on a 3 x 4 grid, two images. */
    {.op = "yolo_box", .what = "clip_bbox",
     .attrs = "anchors=[10, 13, 16, 30, 33, 23] class_num=2 conf_thresh=0.3",
     .in = {{"X", "[2, 21, 3, 4]", .lo = -3, .hi = 3}, YOLO_IMG_},
     .ref = ref_yolo_box},
    {.op = "yolo_box", .what = "no clip, scale_x_y 1.05, downsample 16",
     .attrs = "anchors=[10, 13, 16, 30, 33, 23] class_num=2 conf_thresh=0.1 clip_bbox=false "
              "scale_x_y=1.05 downsample_ratio=16",
     .in = {{"X", "[2, 21, 3, 4]", .lo = -3, .hi = 3}, YOLO_IMG_},
     .ref = ref_yolo_box},
    {.op = "yolo_box", .what = "iou_aware",
     .attrs = "anchors=[10, 13, 16, 30, 33, 23] class_num=2 conf_thresh=0.2 iou_aware=true "
              "iou_aware_factor=0.4 scale_x_y=1.1",
     .in = {{"X", "[2, 24, 3, 4]", .lo = -3, .hi = 3}, YOLO_IMG_},
     .ref = ref_yolo_box},
    {.op = "yolo_box", .what = "one anchor, int64 ImgSize",
     .attrs = "anchors=[20, 12] class_num=3 conf_thresh=0.05 downsample_ratio=8",
     .in = {{"X", "[1, 8, 2, 5]", .lo = -2, .hi = 2},
            {"ImgSize", "[1, 2]", OT_I64, .v = (const double[]){40, 70}}},
     .ref = ref_yolo_box},

    /* prior_box */
    {.op = "prior_box", .what = "max sizes, flipped ratios",
     .attrs = PRIOR_A_ " clip=false",
     .in = {{"Input", "[1, 2, 3, 4]"}, {"Image", "[1, 3, 30, 41]"}}, .ref = ref_prior_a},
    {.op = "prior_box", .what = "min_max_aspect_ratios_order, clip",
     .attrs = PRIOR_A_ " min_max_aspect_ratios_order=true",
     .in = {{"Input", "[2, 2, 3, 4]"}, {"Image", "[2, 3, 30, 41]"}}, .ref = ref_prior_a},
    {.op = "prior_box", .what = "no flip, steps, offset",
     .attrs = "min_sizes=[6] aspect_ratios=[2] variances=[0.1, 0.2, 0.3, 0.4] flip=false "
              "step_w=8 step_h=10 offset=0.3 clip=false",
     .in = {{"Input", "[1, 1, 2, 3]"}, {"Image", "[1, 3, 20, 20]"}}, .ref = ref_prior_b},

    /* density_prior_box */
    {.op = "density_prior_box", .what = "two densities, clip",
     .attrs = "fixed_sizes=[8, 16] fixed_ratios=[1, 2] densities=[2, 1] "
              "variances=[0.1, 0.1, 0.2, 0.2]",
     .in = {{"Input", "[1, 2, 2, 3]"}, {"Image", "[1, 3, 32, 48]"}}, .ref = ref_density_a},
    {.op = "density_prior_box", .what = "flatten_to_2d, steps, no clip",
     .attrs = "fixed_sizes=[20] fixed_ratios=[0.5, 1, 3] densities=[3] "
              "variances=[0.2, 0.2, 0.1, 0.1] flatten_to_2d=true clip=false step_w=10 "
              "step_h=13 offset=0.4",
     .in = {{"Input", "[1, 2, 2, 2]"}, {"Image", "[1, 3, 24, 30]"}}, .ref = ref_density_b},

    /* box_coder */
    {.op = "box_coder", .what = "encode, PriorBoxVar, not normalized",
     .attrs = "code_type=encode_center_size box_normalized=false",
     .in = {{"PriorBox", "[3, 4]", .v = priors}, {"PriorBoxVar", "[3, 4]", .v = prior_vars},
            {"TargetBox", "[2, 4]", .v = targets}},
     .ref = ref_box_coder},
    {.op = "box_coder", .what = "encode, no variances",
     .attrs = "code_type=encode_center_size",
     .in = {{"PriorBox", "[3, 4]", .v = priors}, {"TargetBox", "[2, 4]", .v = targets}},
     .ref = ref_box_coder},
    {.op = "box_coder", .what = "decode axis 0, variance attribute",
     .attrs = "code_type=decode_center_size variance=[0.1, 0.1, 0.2, 0.2]",
     .in = {{"PriorBox", "[3, 4]", .v = priors}, {"TargetBox", "[2, 3, 4]", .v = deltas}},
     .ref = ref_box_coder_attr},
    {.op = "box_coder", .what = "decode axis 1, PriorBoxVar, not normalized",
     .attrs = "code_type=decode_center_size axis=1 box_normalized=false",
     .in = {{"PriorBox", "[3, 4]", .v = priors}, {"PriorBoxVar", "[3, 4]", .v = prior_vars},
            {"TargetBox", "[3, 2, 4]", .v = deltas}},
     .ref = ref_box_coder},

    /* multiclass_nms3 on two images, three classes, tied scores. */
    {.op = "multiclass_nms3", .what = "background 0, not normalized",
     .attrs = NMS_ATTRS_("score_threshold=0.1 nms_threshold=0.5 normalized=false"), NMS_IN_,
     .ref = ref_nms, NMS3_},
    {.op = "multiclass_nms3", .what = "every class, normalized, keep_top_k 3",
     .attrs = "score_threshold=0.1 nms_top_k=-1 keep_top_k=3 background_label=-1 "
              "nms_threshold=0.5",
     NMS_IN_, .ref = ref_nms, NMS3_},
    {.op = "multiclass_nms3", .what = "threshold cuts, nms_top_k 2, background 2",
     .attrs = "score_threshold=0.45 nms_top_k=2 keep_top_k=-1 background_label=2 "
              "nms_threshold=0.3",
     NMS_IN_, .ref = ref_nms, NMS3_},
    {.op = "multiclass_nms3", .what = "nms_eta 0.8",
     .attrs = NMS_ATTRS_("score_threshold=0.1 nms_threshold=0.95 nms_eta=0.8 background_label=-1 "
                         "normalized=false"),
     NMS_IN_, .ref = ref_nms, NMS3_},
    {.op = "multiclass_nms3", .what = "keep_top_k 5 of 8, ties",
     .attrs = "score_threshold=0.0 nms_top_k=4 keep_top_k=5 nms_threshold=0.99", NMS_IN_,
     .ref = ref_nms, NMS3_},
    {.op = "multiclass_nms3", .what = "empty", .attrs = NMS_ATTRS_("score_threshold=0.99"),
     NMS_IN_, .ref = ref_nms, NMS3_},
    /* many candidates a class: the first nms_top_k and keep_top_k selected, not sorted whole */
    {.op = "multiclass_nms3", .what = "60 random boxes, nms_top_k 13, keep_top_k 17",
     .attrs = "score_threshold=0.05 nms_top_k=13 keep_top_k=17 nms_threshold=0.3 "
              "background_label=-1",
     .in = {{"BBoxes", "[2, 60, 4]", .lo = 0, .hi = 1}, {"Scores", "[2, 4, 60]", .lo = 0, .hi = 1}},
     .ref = ref_nms, NMS3_},
    {.op = "multiclass_nms3", .what = "60 random boxes, nms_top_k 13, all kept",
     .attrs = "score_threshold=0.05 nms_top_k=13 keep_top_k=-1 nms_threshold=0.9 "
              "background_label=-1",
     .in = {{"BBoxes", "[2, 60, 4]", .lo = 0, .hi = 1}, {"Scores", "[2, 4, 60]", .lo = 0, .hi = 1}},
     .ref = ref_nms, NMS3_},
    {.op = "multiclass_nms3", .what = "2-D scores, RoisNum",
     .attrs = NMS_ATTRS_("score_threshold=0.1 nms_threshold=0.4 background_label=-1"),
     NMS_ROWS_IN_, .ref = ref_nms, NMS3_},
    {.op = "multiclass_nms3", .what = "2-D scores, RoisNum, keep_top_k 2",
     .attrs = "score_threshold=0.15 nms_top_k=-1 keep_top_k=2 nms_threshold=0.4 "
              "normalized=false",
     NMS_ROWS_IN_, .ref = ref_nms, NMS3_},
    /* The older versions: Out with LoD (multiclass_nms), Index (multiclass_nms2); no
     * detection without Index is one row holding -1. */
    {.op = "multiclass_nms", .what = "keep_top_k 4",
     .attrs = "score_threshold=0.1 nms_top_k=-1 keep_top_k=4 nms_threshold=0.5", NMS_IN_,
     .ref = ref_nms},
    {.op = "multiclass_nms", .what = "empty", .attrs = NMS_ATTRS_("score_threshold=0.99"),
     NMS_IN_, .ref = ref_nms},
    {.op = "multiclass_nms2", .what = "Index", .outs = "Out Index",
     .attrs = NMS_ATTRS_("score_threshold=0.1 nms_threshold=0.5 normalized=false"), NMS_IN_,
     .ref = ref_nms},
    {0},
};
