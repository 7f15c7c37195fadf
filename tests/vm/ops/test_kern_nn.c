/* test_kern_nn.c -- kernels of the layer ops (vm/ops/nn.c, sequence.c, recurrent.c): conv2d
 * against a direct 7-loop convolution (strides, 2 and 4 paddings, dilations, groups, SAME and
 * VALID), pool2d against a direct pooling loop (max, avg exclusive or not, global, ceil_mode,
 * SAME, adaptive), lookup_table and lookup_table_v2 (padding_idx, int32 ids, ids out of range),
 * dropout (both implementations, test mode, seeds), sequence_pool (every pooltype on uneven LoD
 * with an empty sequence, nested LoD), sequence_softmax and elman_rnn (vm/ops/recurrent.c: against
 * a loop written here); and every gradient kernel of them against finite differences. */
#include "config.h"

#include "tests/vm/ops/gradcheck.h"


/* Deterministic values in [-1, 1), and distinct ones (no ties for max pooling). */
static void fill_rand(double *d, int n, uint64_t seed) {
  for (int i = 0; i < n; i++) d[i] = gc_weight_(&seed);
}
static void fill_distinct(double *d, int n, uint64_t seed) {
  for (int i = 0; i < n; i++) d[i] = (double)((i * 37 + (int)seed) % n) * 0.05 - 1.0;
}
static void to_f32(const double *d, float *f, int n) {
  for (int i = 0; i < n; i++) f[i] = (float)d[i];
}
static const char *shape4(char *buf, int a, int b, int c, int d) {
  snprintf(buf, 64, "[%d, %d, %d, %d]", a, b, c, d);
  return buf;
}
static bool has_dims(const pd_tensor *t, int nd, const int64_t *d) {
  if (!t || t->ndims != nd) return false;
  for (int i = 0; i < nd; i++)
    if (t->dims[i] != d[i]) return false;
  return true;
}

/* ---------------------------------------------------------------- conv2d */

typedef struct conv_case {
  const char *name;
  int n, c, h, w, oc, kh, kw, groups, sh, sw, dh, dw;
  int npads, pads[4];   /* as the attribute: 2 (symmetric) or 4 (top, bottom, left, right) */
  const char *algo;     /* NULL: EXPLICIT */
} conv_case;

/* Direct convolution; returns the output size through oh, ow. */
static void conv_ref(const conv_case *k, const double *x, const double *wt, double *y, int *poh,
                     int *pow_) {
  int pt, pb, pl, pr, dh = k->dh, dw = k->dw;
  if (k->npads == 4) {
    pt = k->pads[0], pb = k->pads[1], pl = k->pads[2], pr = k->pads[3];
  } else {
    pt = pb = k->pads[0];
    pl = pr = k->pads[1];
  }
  int oh, ow;
  if (k->algo && strcmp(k->algo, "SAME") == 0) {
    oh = (k->h + k->sh - 1) / k->sh;
    ow = (k->w + k->sw - 1) / k->sw;
    int ph = (oh - 1) * k->sh + k->kh - k->h, pw = (ow - 1) * k->sw + k->kw - k->w;
    ph = ph < 0 ? 0 : ph;
    pw = pw < 0 ? 0 : pw;
    pt = ph / 2;
    pl = pw / 2;
    dh = dw = 1;
    (void)pb;
    (void)pr;
  } else {
    if (k->algo && strcmp(k->algo, "VALID") == 0) pt = pb = pl = pr = 0;
    oh = (k->h + pt + pb - (dh * (k->kh - 1) + 1)) / k->sh + 1;
    ow = (k->w + pl + pr - (dw * (k->kw - 1) + 1)) / k->sw + 1;
  }
  int cg = k->c / k->groups, og = k->oc / k->groups;
  for (int n = 0; n < k->n; n++)
    for (int o = 0; o < k->oc; o++)
      for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++) {
          double s = 0;
          int g = o / og;
          for (int c = 0; c < cg; c++)
            for (int a = 0; a < k->kh; a++)
              for (int b = 0; b < k->kw; b++) {
                int yi = i * k->sh - pt + a * dh, xj = j * k->sw - pl + b * dw;
                if (yi < 0 || yi >= k->h || xj < 0 || xj >= k->w) continue;
                s += x[((n * k->c + g * cg + c) * k->h + yi) * k->w + xj] *
                     wt[((o * cg + c) * k->kh + a) * k->kw + b];
              }
          y[((n * k->oc + o) * oh + i) * ow + j] = s;
        }
  *poh = oh;
  *pow_ = ow;
}

static pd_op_desc *conv_op(rt *r, const conv_case *k) {
  pd_op_desc *op = rt_op(r, "conv2d", "Input=x Filter=f", "Output=y");
  pd_op_set_attr_ints(op, "strides", 2, (const int32_t[]){k->sh, k->sw});
  pd_op_set_attr_ints(op, "paddings", k->npads, k->pads);
  pd_op_set_attr_ints(op, "dilations", 2, (const int32_t[]){k->dh, k->dw});
  pd_op_set_attr_int(op, "groups", k->groups);
  if (k->algo) pd_op_set_attr_string(op, "padding_algorithm", k->algo);
  return op;
}

static void check_conv(const conv_case *k) {
  int nx = k->n * k->c * k->h * k->w, nw = k->oc * (k->c / k->groups) * k->kh * k->kw;
  double *x = malloc(sizeof(double) * (size_t)nx), *wt = malloc(sizeof(double) * (size_t)nw);
  double *y = malloc(sizeof(double) * (size_t)(k->n * k->oc * k->h * k->w * 4 + 16));
  float *xf = malloc(sizeof(float) * (size_t)nx), *wf = malloc(sizeof(float) * (size_t)nw);
  if (!x || !wt || !y || !xf || !wf) bail("out of memory");
  fill_rand(x, nx, 1);
  fill_rand(wt, nw, 2);
  to_f32(x, xf, nx);
  to_f32(wt, wf, nw);
  int oh, ow;
  conv_ref(k, x, wt, y, &oh, &ow);
  char sx[64], sf[64];
  shape4(sx, k->n, k->c, k->h, k->w);
  shape4(sf, k->oc, k->c / k->groups, k->kh, k->kw);
  for (int f32 = 0; f32 < 2; f32++) {
    rt r;
    rt_init(&r);
    if (f32) {
      rt_in_f32(&r, "x", sx, xf);
      rt_in_f32(&r, "f", sf, wf);
    } else {
      rt_in_f64(&r, "x", sx, x);
      rt_in_f64(&r, "f", sf, wt);
    }
    conv_op(&r, k);
    char what[160];
    snprintf(what, sizeof what, "conv2d %s (%s)", k->name, f32 ? "fp32" : "fp64");
    if (rt_ok(&r, what)) {
      const pd_tensor *out = rt_get(&r, "y");
      ok(has_dims(out, 4, (int64_t[]){k->n, k->oc, oh, ow}), "%s: Output [%d, %d, %d, %d]", what,
         k->n, k->oc, oh, ow);
      rt_expect(out, (int64_t)k->n * k->oc * oh * ow, y, f32 ? 1e-5 : 1e-12, what);
    }
    rt_free(&r);
  }
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", sx, x);
  rt_in_f64(&r, "f", sf, wt);
  conv_op(&r, k);
  char what[160];
  snprintf(what, sizeof what, "conv2d %s", k->name);
  grad_check(&r, "Input Filter", "Output", what);
  rt_free(&r);
  free(x);
  free(wt);
  free(y);
  free(xf);
  free(wf);
}

static void test_conv2d(void) {
  static const conv_case cases[] = {
      {"3x3 no padding", 2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1, 1, 2, {0, 0}, NULL},
      {"stride 2, padding 1", 1, 2, 7, 6, 3, 3, 3, 1, 2, 2, 1, 1, 2, {1, 1}, NULL},
      {"4 paddings, stride (1, 2)", 2, 2, 5, 5, 2, 2, 3, 1, 1, 2, 1, 1, 4, {1, 0, 2, 1}, NULL},
      {"dilation 2", 1, 2, 7, 7, 2, 3, 3, 1, 1, 1, 2, 2, 2, {1, 2}, NULL},
      {"groups 2", 2, 4, 5, 4, 6, 3, 2, 2, 1, 1, 1, 1, 2, {1, 0}, NULL},
      {"depthwise (groups = channels)", 1, 3, 4, 4, 3, 3, 3, 3, 1, 1, 1, 1, 2, {1, 1}, NULL},
      {"1x1", 2, 3, 3, 4, 2, 1, 1, 1, 1, 1, 1, 1, 2, {0, 0}, NULL},
      {"SAME stride 2", 1, 2, 7, 8, 2, 3, 2, 1, 2, 2, 1, 1, 2, {5, 5}, "SAME"},
      {"SAME resets dilation", 1, 1, 5, 5, 2, 3, 3, 1, 1, 1, 2, 2, 2, {0, 0}, "SAME"},
      {"VALID ignores paddings", 1, 2, 6, 5, 2, 2, 2, 1, 2, 1, 1, 1, 2, {3, 3}, "VALID"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_conv(&cases[i]);

  rt r;
  rt_init(&r);
  double x[48];
  fill_rand(x, 48, 3);
  rt_in_f64(&r, "x", "[1, 3, 4, 4]", x);
  rt_in_f64(&r, "f", "[2, 2, 3, 3]", x);
  decl(r.f.b, "x", PD_FP64, "[-1, -1, 4, 4]");
  rt_op(&r, "conv2d", "Input=x Filter=f", "Output=y");
  rt_fails(&r, PD_ESHAPE,
           "conv2d: Input [1, 3, 4, 4] has 3 channels but Filter [2, 2, 3, 3] with groups 1 takes 2",
           "conv2d: channels that disagree at run time");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 1, 2, 2]", x);
  rt_in_f64(&r, "f", "[1, 1, 3, 3]", x);
  decl(r.f.b, "x", PD_FP64, "[-1, 1, -1, -1]");
  rt_op(&r, "conv2d", "Input=x Filter=f", "Output=y");
  rt_fails(&r, PD_ESHAPE, "conv2d: Input [1, 1, 2, 2] is smaller than Filter [1, 1, 3, 3]",
           "conv2d: an image smaller than the filter");
  rt_free(&r);
}

/* ---------------------------------------------------------------- pool2d */

typedef struct pool_case {
  const char *name;
  bool max;
  int n, c, h, w, kh, kw, sh, sw;
  int npads, pads[4];
  bool global, ceil, exclusive, adaptive;
  const char *algo;
} pool_case;

static void pool_ref(const pool_case *k, const double *x, double *y, int *poh, int *pow_) {
  int pt, pb, pl, pr, kh = k->kh, kw = k->kw, oh, ow;
  if (k->npads == 4) {
    pt = k->pads[0], pb = k->pads[1], pl = k->pads[2], pr = k->pads[3];
  } else {
    pt = pb = k->pads[0];
    pl = pr = k->pads[1];
  }
  if (k->global) {
    kh = k->h;
    kw = k->w;
    pt = pb = pl = pr = 0;
  }
  if (k->adaptive) {
    oh = kh;
    ow = kw;
  } else if (k->algo && strcmp(k->algo, "SAME") == 0) {
    oh = (k->h + k->sh - 1) / k->sh;
    ow = (k->w + k->sw - 1) / k->sw;
    int ph = (oh - 1) * k->sh + kh - k->h, pw = (ow - 1) * k->sw + kw - k->w;
    pt = (ph < 0 ? 0 : ph) / 2;
    pl = (pw < 0 ? 0 : pw) / 2;
  } else {
    if (k->algo && strcmp(k->algo, "VALID") == 0) pt = pb = pl = pr = 0;
    oh = (k->h + pt + pb - kh + (k->ceil ? k->sh - 1 : 0)) / k->sh + 1;
    ow = (k->w + pl + pr - kw + (k->ceil ? k->sw - 1 : 0)) / k->sw + 1;
  }
  for (int p = 0; p < k->n * k->c; p++)
    for (int i = 0; i < oh; i++)
      for (int j = 0; j < ow; j++) {
        int hs, he, ws, we;
        if (k->adaptive) {
          hs = i * k->h / oh;
          he = ((i + 1) * k->h + oh - 1) / oh;
          ws = j * k->w / ow;
          we = ((j + 1) * k->w + ow - 1) / ow;
        } else {
          hs = i * k->sh - pt;
          ws = j * k->sw - pl;
          he = hs + kh < k->h ? hs + kh : k->h;
          we = ws + kw < k->w ? ws + kw : k->w;
          hs = hs < 0 ? 0 : hs;
          ws = ws < 0 ? 0 : ws;
        }
        double m = -INFINITY, s = 0;
        for (int a = hs; a < he; a++)
          for (int b = ws; b < we; b++) {
            double v = x[(p * k->h + a) * k->w + b];
            s += v;
            m = v > m ? v : m;
          }
        int count = k->exclusive || k->adaptive ? (he - hs) * (we - ws) : kh * kw;
        y[(p * oh + i) * ow + j] = k->max ? m : s / count;
      }
  *poh = oh;
  *pow_ = ow;
}

static pd_op_desc *pool_op(rt *r, const pool_case *k) {
  pd_op_desc *op = rt_op(r, "pool2d", "X=x", "Out=y");
  pd_op_set_attr_string(op, "pooling_type", k->max ? "max" : "avg");
  pd_op_set_attr_ints(op, "ksize", 2, (const int32_t[]){k->kh, k->kw});
  pd_op_set_attr_ints(op, "strides", 2, (const int32_t[]){k->sh, k->sw});
  pd_op_set_attr_ints(op, "paddings", k->npads, k->pads);
  pd_op_set_attr_bool(op, "global_pooling", k->global);
  pd_op_set_attr_bool(op, "ceil_mode", k->ceil);
  pd_op_set_attr_bool(op, "exclusive", k->exclusive);
  pd_op_set_attr_bool(op, "adaptive", k->adaptive);
  if (k->algo) pd_op_set_attr_string(op, "padding_algorithm", k->algo);
  return op;
}

static void check_pool(const pool_case *k) {
  int nx = k->n * k->c * k->h * k->w;
  double x[512], y[512];
  float xf[512];
  if (nx > 512) bail("pool case too large");
  fill_distinct(x, nx, 7);
  to_f32(x, xf, nx);
  int oh, ow;
  pool_ref(k, x, y, &oh, &ow);
  char sx[64], what[160];
  shape4(sx, k->n, k->c, k->h, k->w);
  for (int f32 = 0; f32 < 2; f32++) {
    rt r;
    rt_init(&r);
    if (f32) rt_in_f32(&r, "x", sx, xf);
    else rt_in_f64(&r, "x", sx, x);
    pool_op(&r, k);
    snprintf(what, sizeof what, "pool2d %s (%s)", k->name, f32 ? "fp32" : "fp64");
    if (rt_ok(&r, what)) {
      const pd_tensor *out = rt_get(&r, "y");
      ok(has_dims(out, 4, (int64_t[]){k->n, k->c, oh, ow}), "%s: Out [%d, %d, %d, %d]", what, k->n,
         k->c, oh, ow);
      rt_expect(out, (int64_t)k->n * k->c * oh * ow, y, f32 ? 1e-6 : 1e-14, what);
    }
    rt_free(&r);
  }
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", sx, x);
  pool_op(&r, k);
  snprintf(what, sizeof what, "pool2d %s", k->name);
  grad_check(&r, "X", "Out", what);
  rt_free(&r);
}

static void test_pool2d(void) {
  static const pool_case cases[] = {
      {"max 2x2 stride 2", true, 2, 2, 4, 4, 2, 2, 2, 2, 2, {0, 0}, false, false, true, false, NULL},
      {"max 3x3 stride 1 padding 1", true, 1, 2, 5, 4, 3, 3, 1, 1, 2, {1, 1}, false, false, true,
       false, NULL},
      {"avg exclusive padding 1", false, 1, 2, 5, 5, 3, 3, 2, 2, 2, {1, 1}, false, false, true,
       false, NULL},
      {"avg not exclusive padding 1", false, 1, 2, 5, 5, 3, 3, 2, 2, 2, {1, 1}, false, false,
       false, false, NULL},
      {"avg 4 paddings", false, 2, 1, 6, 5, 2, 3, 2, 1, 4, {1, 0, 2, 1}, false, false, true, false,
       NULL},
      {"max global", true, 2, 3, 4, 5, 1, 1, 1, 1, 2, {0, 0}, true, false, true, false, NULL},
      {"avg global", false, 2, 3, 4, 5, 1, 1, 1, 1, 2, {1, 1}, true, false, true, false, NULL},
      {"max ceil_mode", true, 1, 2, 5, 5, 2, 2, 2, 2, 2, {0, 0}, false, true, true, false, NULL},
      {"avg ceil_mode not exclusive", false, 1, 1, 7, 5, 3, 2, 2, 2, 2, {1, 0}, false, true, false,
       false, NULL},
      {"max SAME", true, 1, 2, 7, 6, 3, 3, 2, 2, 2, {0, 0}, false, false, true, false, "SAME"},
      {"avg VALID", false, 1, 2, 5, 6, 2, 3, 1, 2, 2, {1, 1}, false, false, true, false, "VALID"},
      {"max adaptive 2x3", true, 1, 2, 5, 7, 2, 3, 1, 1, 2, {0, 0}, false, false, true, true, NULL},
      {"avg adaptive 3x2", false, 2, 1, 7, 4, 3, 2, 1, 1, 2, {0, 0}, false, false, true, true, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_pool(&cases[i]);

  rt r;
  rt_init(&r);
  double x[32];
  fill_distinct(x, 32, 1);
  rt_in_f64(&r, "x", "[1, 4, 4, 2]", x);
  pd_op_desc *op = rt_op(&r, "pool2d", "X=x", "Out=y");
  pd_op_set_attr_string(op, "pooling_type", "max");
  pd_op_set_attr_ints(op, "ksize", 2, (const int32_t[]){2, 2});
  pd_op_set_attr_string(op, "data_format", "NHWC");
  rt_fails(&r, PD_EUNSUPPORTED, "pool2d: data_format NHWC is not supported",
           "pool2d: NHWC is refused clearly");
  rt_free(&r);
}

/* ---------------------------------------------------------------- lookup tables */

static void test_lookup(void) {
  double w[15];
  for (int i = 0; i < 15; i++) w[i] = i * 0.5 - 3;
  float wf[15];
  to_f32(w, wf, 15);
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "w", "[5, 3]", wf);
  rt_in_i64(&r, "ids", "[4, 1]", (int64_t[]){0, 4, 2, 4});
  rt_lod(&r, "ids", 3, (int64_t[]){0, 1, 4});
  rt_op(&r, "lookup_table", "W=w Ids=ids", "Out=o");
  if (rt_ok(&r, "lookup_table")) {
    const pd_tensor *o = rt_get(&r, "o");
    double want[12];
    int ids[] = {0, 4, 2, 4};
    for (int i = 0; i < 4; i++)
      for (int k = 0; k < 3; k++) want[i * 3 + k] = w[ids[i] * 3 + k];
    ok(has_dims(o, 2, (int64_t[]){4, 3}), "lookup_table: Out [4, 3]");
    rt_expect(o, 12, want, 0, "lookup_table: the rows of the ids");
    ok(o && o->nlod == 1 && o->lod[0].n == 3 && o->lod[0].offsets[1] == 1,
       "lookup_table: Out takes Ids' LoD");
  }
  rt_free(&r);

  rt_init(&r); /* v2: any shape, int32 ids, padding_idx */
  rt_in_f64(&r, "w", "[5, 3]", w);
  rt_in(&r, "ids", PD_INT32, "[2, 2]", (int32_t[]){3, 1, 1, 0});
  pd_op_set_attr_long(rt_op(&r, "lookup_table_v2", "W=w Ids=ids", "Out=o"), "padding_idx", 1);
  if (rt_ok(&r, "lookup_table_v2 with int32 ids and padding_idx")) {
    const pd_tensor *o = rt_get(&r, "o");
    ok(has_dims(o, 3, (int64_t[]){2, 2, 3}), "lookup_table_v2: Out [2, 2, 3]");
    double want[12] = {w[9], w[10], w[11], 0, 0, 0, 0, 0, 0, w[0], w[1], w[2]};
    rt_expect(o, 12, want, 0, "lookup_table_v2: padding_idx rows are 0");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "w", "[5, 3]", w);
  rt_in_i64(&r, "ids", "[3]", (int64_t[]){1, 7, 0});
  rt_op(&r, "lookup_table_v2", "W=w Ids=ids", "Out=o");
  rt_fails(&r, PD_EINVAL,
           "lookup_table_v2: id 7 (Ids element 1) is out of range for a table of 5 rows (W [5, 3])",
           "lookup_table_v2: an id past the table");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "w", "[5, 3]", w);
  rt_in_i64(&r, "ids", "[2, 1]", (int64_t[]){-1, 0});
  rt_op(&r, "lookup_table", "W=w Ids=ids", "Out=o");
  rt_fails(&r, PD_EINVAL, "lookup_table: id -1 (Ids element 0) is out of range for a table of 5",
           "lookup_table: a negative id");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "w", "[5, 3]", w);
  rt_in_i64(&r, "ids", "[5, 1]", (int64_t[]){3, 0, 3, 4, 3});
  rt_op(&r, "lookup_table", "W=w Ids=ids", "Out=o");
  grad_check(&r, "W", "Out", "lookup_table (repeated ids)");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "w", "[5, 3]", w);
  rt_in_i64(&r, "ids", "[2, 3]", (int64_t[]){2, 2, 0, 4, 1, 2});
  pd_op_set_attr_long(rt_op(&r, "lookup_table_v2", "W=w Ids=ids", "Out=o"), "padding_idx", 4);
  grad_check(&r, "W", "Out", "lookup_table_v2 with padding_idx");
  rt_free(&r);

  rt_init(&r); /* the dense gradient: zeros + Out@GRAD rows added per id */
  rt_in_f64(&r, "w", "[4, 2]", w);
  rt_in_i64(&r, "ids", "[3]", (int64_t[]){1, 3, 1});
  rt_in_f64(&r, "g", "[3, 2]", (double[]){1, 2, 3, 4, 5, 6});
  decl(r.f.b, "dw", PD_FP64, "[4, 2]");
  rt_op(&r, "lookup_table_v2_grad", "W=w Ids=ids Out@GRAD=g", "W@GRAD=dw");
  if (rt_ok(&r, "lookup_table_v2_grad directly"))
    rt_expect(rt_get(&r, "dw"), 8, ((double[]){0, 0, 6, 8, 0, 0, 3, 4}), 0,
              "lookup_table_v2_grad: repeated ids add up, other rows are 0");
  rt_free(&r);
}

/* ---------------------------------------------------------------- dropout */

static pd_op_desc *dropout_op(rt *r, double p, bool upscale, bool is_test, int fix_seed) {
  pd_op_desc *op = rt_op(r, "dropout", "X=x", "Out=y Mask=m");
  pd_op_set_attr_float(op, "dropout_prob", (float)p);
  pd_op_set_attr_bool(op, "is_test", is_test);
  if (upscale) pd_op_set_attr_string(op, "dropout_implementation", "upscale_in_train");
  if (fix_seed) {
    pd_op_set_attr_bool(op, "fix_seed", true);
    pd_op_set_attr_int(op, "seed", fix_seed);
  }
  return op;
}

/* Run dropout on x = 1.5 everywhere ([n]), copying Out to y and Mask to m. */
static bool run_dropout(double p, bool upscale, bool is_test, int fix_seed, uint64_t exec_seed,
                        int n, double *y, uint8_t *m) {
  static float ones[40000];
  for (int i = 0; i < n; i++) ones[i] = 1.5f;
  rt r;
  rt_init(&r);
  r.seed = exec_seed;
  char s[32];
  snprintf(s, sizeof s, "[%d]", n);
  rt_in_f32(&r, "x", s, ones);
  dropout_op(&r, p, upscale, is_test, fix_seed);
  bool good = rt_run(&r) == PD_OK;
  const pd_tensor *yt = rt_get(&r, "y"), *mt = rt_get(&r, "m");
  good = good && yt && mt && mt->dtype == PD_UINT8 && pd_tensor_numel(mt) == n;
  for (int i = 0; good && i < n; i++) {
    y[i] = PD_TENSOR_F32(yt)[i];
    m[i] = PD_TENSOR_BOOL(mt)[i];
  }
  if (!good) printf("#   dropout failed: %s\n", r.f.err.msg ? r.f.err.msg : "no value");
  rt_free(&r);
  return good;
}

static void test_dropout(void) {
  enum { N = 40000 };
  static double y[N], y2[N];
  static uint8_t m[N], m2[N];
  bool good = run_dropout(0.3, false, false, 0, 1, N, y, m);
  int kept = 0;
  bool consistent = good;
  for (int i = 0; good && i < N; i++) {
    kept += m[i];
    consistent = consistent && y[i] == (m[i] ? 1.5 : 0.0);
  }
  ok(good, "dropout downgrade_in_infer runs");
  is_close(kept / (double)N, 0.7, 0.01, "dropout p 0.3: 70%% kept");
  ok(consistent, "dropout downgrade_in_infer: Out = X * Mask");

  good = run_dropout(0.25, true, false, 0, 1, N, y, m);
  consistent = good;
  kept = 0;
  for (int i = 0; good && i < N; i++) {
    kept += m[i];
    consistent = consistent && fabs(y[i] - (m[i] ? 1.5 / 0.75 : 0.0)) < 1e-6;
  }
  ok(good && consistent, "dropout upscale_in_train: Out = X * Mask / (1 - p)");
  is_close(kept / (double)N, 0.75, 0.01, "dropout p 0.25: 75%% kept");

  good = run_dropout(0.3, false, false, 0, 1, N, y, m) && run_dropout(0.3, false, false, 0, 1, N, y2, m2);
  ok(good && memcmp(m, m2, N) == 0, "dropout: same executor seed, same mask");
  good = good && run_dropout(0.3, false, false, 0, 2, N, y2, m2);
  ok(good && memcmp(m, m2, N) != 0, "dropout: another executor seed, another mask");
  good = run_dropout(0.3, false, false, 9, 1, N, y, m) && run_dropout(0.3, false, false, 9, 2, N, y2, m2);
  ok(good && memcmp(m, m2, N) == 0, "dropout: fix_seed ignores the executor seed");

  good = run_dropout(0.3, false, true, 0, 1, 16, y, m);
  bool all = good;
  for (int i = 0; good && i < 16; i++) all = all && fabs(y[i] - 1.5 * 0.7) < 1e-6 && m[i] == 1;
  ok(all, "dropout is_test downgrade_in_infer: Out = X * (1 - p)");
  good = run_dropout(0.3, true, true, 0, 1, 16, y, m);
  all = good;
  for (int i = 0; good && i < 16; i++) all = all && y[i] == 1.5;
  ok(all, "dropout is_test upscale_in_train: Out = X");
  good = run_dropout(1.0, true, false, 0, 1, 16, y, m);
  all = good;
  for (int i = 0; good && i < 16; i++) all = all && y[i] == 0 && m[i] == 0;
  ok(all, "dropout p 1: everything dropped");

  rt r; /* the Seed input overrides the attributes */
  rt_init(&r);
  float xs[64];
  for (int i = 0; i < 64; i++) xs[i] = 1;
  rt_in_f32(&r, "x", "[64]", xs);
  rt_in(&r, "sd", PD_INT32, "[1]", (int32_t[]){9});
  pd_op_desc *op = rt_op(&r, "dropout", "X=x Seed=sd", "Out=y Mask=m");
  pd_op_set_attr_float(op, "dropout_prob", 0.3f);
  r.seed = 77;
  if (rt_ok(&r, "dropout with a Seed input")) {
    run_dropout(0.3, false, false, 9, 1, 64, y, m);
    ok(memcmp(PD_TENSOR_BOOL(rt_get(&r, "m")), m, 64) == 0, "dropout: Seed 9 = fix_seed 9");
  }
  rt_free(&r);

  double x[24];
  fill_rand(x, 24, 5);
  for (int upscale = 0; upscale < 2; upscale++) {
    rt_init(&r);
    rt_in_f64(&r, "x", "[4, 6]", x);
    dropout_op(&r, 0.4, upscale, false, 3);
    grad_check(&r, "X", "Out", upscale ? "dropout upscale_in_train (fix_seed)"
                                       : "dropout downgrade_in_infer (fix_seed)");
    rt_free(&r);
  }
}

/* ---------------------------------------------------------------- sequences */

static const char *const pooltypes[] = {"SUM", "AVERAGE", "SQRT", "MAX", "LAST", "FIRST"};

/* Reference sequence pooling of x [rows, w] over offsets (nseq + 1 of them). */
static void seqpool_ref(const char *type, const double *x, int w, const int64_t *off, int nseq,
                        double pad, double *y, int *idx) {
  for (int s = 0; s < nseq; s++) {
    int b = (int)off[s], e = (int)off[s + 1], len = e - b;
    for (int k = 0; k < w; k++) {
      double v = pad, sum = 0;
      int at = -1;
      for (int r = b; r < e; r++) sum += x[r * w + k];
      if (len > 0) {
        if (!strcmp(type, "SUM")) v = sum;
        else if (!strcmp(type, "AVERAGE")) v = sum / len;
        else if (!strcmp(type, "SQRT")) v = sum / sqrt(len);
        else if (!strcmp(type, "LAST")) v = x[(e - 1) * w + k];
        else if (!strcmp(type, "FIRST")) v = x[b * w + k];
        else
          for (int r = b; r < e; r++)
            if (at < 0 || x[r * w + k] > v) {
              v = x[r * w + k];
              at = r;
            }
      }
      y[s * w + k] = v;
      idx[s * w + k] = at;
    }
  }
}

static void test_sequence_pool(void) {
  int64_t off[] = {0, 2, 2, 5, 7}; /* lengths 2, 0, 3, 2 */
  double x[14], y[8];
  int idx[8];
  fill_distinct(x, 14, 3);
  for (size_t t = 0; t < sizeof pooltypes / sizeof pooltypes[0]; t++) {
    const char *type = pooltypes[t];
    seqpool_ref(type, x, 2, off, 4, -9, y, idx);
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "x", "[7, 2]", x);
    rt_lod(&r, "x", 5, off);
    pd_op_desc *op = rt_op(&r, "sequence_pool", "X=x", "Out=y MaxIndex=mi");
    pd_op_set_attr_string(op, "pooltype", type);
    pd_op_set_attr_float(op, "pad_value", -9);
    char what[96];
    snprintf(what, sizeof what, "sequence_pool %s", type);
    if (rt_ok(&r, what)) {
      const pd_tensor *out = rt_get(&r, "y"), *mi = rt_get(&r, "mi");
      ok(has_dims(out, 2, (int64_t[]){4, 2}) && out->nlod == 0, "%s: Out [4, 2], no LoD", what);
      rt_expect(out, 8, y, 1e-14, what);
      if (!strcmp(type, "MAX")) {
        double want[8];
        for (int i = 0; i < 8; i++) want[i] = idx[i];
        rt_expect(mi, 8, want, 0, "sequence_pool MAX: MaxIndex (-1 for the empty sequence)");
      }
    }
    rt_free(&r);
    rt_init(&r);
    rt_in_f64(&r, "x", "[7, 2]", x);
    rt_lod(&r, "x", 5, off);
    op = rt_op(&r, "sequence_pool", "X=x", "Out=y MaxIndex=mi");
    pd_op_set_attr_string(op, "pooltype", type);
    grad_check(&r, "X", "Out", what);
    rt_free(&r);
  }

  rt r; /* fp32, two LoD levels: pool the inner one, keep the outer */
  rt_init(&r);
  float xf[14];
  to_f32(x, xf, 14);
  pd_tensor *xt = rt_in_f32(&r, "x", "[7, 2]", xf);
  int64_t l0[] = {0, 2, 3}, l1[] = {0, 2, 5, 7}, lens[] = {3, 4};
  const int64_t *levels[] = {l0, l1};
  pd_tensor_set_lod(xt, 2, levels, lens);
  decl_lod(r.f.b, "x", PD_FP32, "[7, 2]", 2);
  pd_op_set_attr_string(rt_op(&r, "sequence_pool", "X=x", "Out=y"), "pooltype", "SUM");
  if (rt_ok(&r, "sequence_pool on a nested LoD")) {
    const pd_tensor *out = rt_get(&r, "y");
    seqpool_ref("SUM", x, 2, l1, 3, 0, y, idx);
    rt_expect(out, 6, y, 1e-6, "sequence_pool: sums of the inner sequences");
    ok(out && out->nlod == 1 && out->lod[0].n == 3 && out->lod[0].offsets[2] == 3,
       "sequence_pool: the outer level stays");
  }
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[3, 2]", x);
  decl_lod(r.f.b, "x", PD_FP64, "[3, 2]", 1);
  pd_op_set_attr_string(rt_op(&r, "sequence_pool", "X=x", "Out=y"), "pooltype", "SUM");
  rt_fails(&r, PD_EINVAL, "sequence_pool: X [3, 2] has no LoD", "sequence_pool: X without LoD");
  rt_free(&r);
}

static void test_sequence_softmax(void) {
  int64_t off[] = {0, 3, 3, 4, 7};
  double x[7] = {0.5, -1, 2, 3, 0.25, 0.75, -0.5}, want[7];
  for (int s = 0; s < 4; s++) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = off[s]; i < off[s + 1]; i++) mx = x[i] > mx ? x[i] : mx;
    for (int64_t i = off[s]; i < off[s + 1]; i++) sum += exp(x[i] - mx);
    for (int64_t i = off[s]; i < off[s + 1]; i++) want[i] = exp(x[i] - mx) / sum;
  }
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[7, 1]", x);
  rt_lod(&r, "x", 5, off);
  rt_op(&r, "sequence_softmax", "X=x", "Out=y");
  if (rt_ok(&r, "sequence_softmax fp64")) {
    const pd_tensor *y = rt_get(&r, "y");
    rt_expect(y, 7, want, 1e-14, "sequence_softmax: a softmax per sequence");
    ok(y && y->nlod == 1 && y->lod[0].n == 5, "sequence_softmax: Out keeps the LoD");
  }
  rt_free(&r);

  rt_init(&r);
  float xf[7];
  to_f32(x, xf, 7);
  rt_in_f32(&r, "x", "[7]", xf);
  rt_lod(&r, "x", 5, off);
  rt_op(&r, "sequence_softmax", "X=x", "Out=x");
  r.no_shape_check = true;
  if (rt_ok(&r, "sequence_softmax fp32 in place"))
    rt_expect(rt_get(&r, "x"), 7, want, 1e-6, "sequence_softmax: in place");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[2, 2]", x);
  rt_lod(&r, "x", 2, (int64_t[]){0, 2});
  rt_op(&r, "sequence_softmax", "X=x", "Out=y");
  rt_fails(&r, PD_ESHAPE, "sequence_softmax: X [2, 2] must hold one value per row",
           "sequence_softmax: rows wider than 1");
  rt_free(&r);

  rt_init(&r);
  rt_in_f64(&r, "x", "[7, 1]", x);
  rt_lod(&r, "x", 5, off);
  rt_op(&r, "sequence_softmax", "X=x", "Out=y");
  grad_check(&r, "X", "Out", "sequence_softmax");
  rt_free(&r);
}

/* elman_rnn, computed here sequence by sequence in the order of its elements: h = act(u + h W),
 * h starting at H0's row (the shared row, or zeros when h0 is NULL). */
static double act_of(const char *act, double v) {
  if (!strcmp(act, "relu")) return v > 0 ? v : 0;
  if (!strcmp(act, "sigmoid")) return 1 / (1 + exp(-v));
  return tanh(v);
}
static void elman_ref(const char *act, bool rev, const double *u, const int64_t *off, int nseq,
                      int hid, const double *h0, bool shared, const double *w, double *out) {
  for (int s = 0; s < nseq; s++) {
    double h[8] = {0}, nh[8];
    for (int j = 0; j < hid && h0; j++) h[j] = h0[(shared ? 0 : s * hid) + j];
    int64_t len = off[s + 1] - off[s];
    for (int64_t k = 0; k < len; k++) {
      int64_t row = off[s] + (rev ? len - 1 - k : k);
      for (int j = 0; j < hid; j++) {
        double v = u[row * hid + j];
        for (int i = 0; i < hid; i++) v += h[i] * w[i * hid + j];
        nh[j] = act_of(act, v);
      }
      for (int j = 0; j < hid; j++) out[row * hid + j] = h[j] = nh[j];
    }
  }
}

/* elman_rnn on Input u [6, 3] (LoD off, or declared with one level but given none when off is
 * NULL), Weight of shape wshape and H0 of shape h0shape (none when NULL) fails with a shape error
 * whose message holds `part`. */
static void elman_fails(const double *u, const int64_t *off, const char *wshape,
                        const char *h0shape, const char *part, const char *what) {
  double v[12];
  fill_distinct(v, 12, 1);
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "u", "[6, 3]", u);
  if (off) rt_lod(&r, "u", 5, off);
  else decl_lod(r.f.b, "u", PD_FP64, "[6, 3]", 1);
  rt_in_f64(&r, "w", wshape, v);
  if (h0shape) rt_in_f64(&r, "h0", h0shape, v);
  rt_op(&r, "elman_rnn", h0shape ? "Input=u H0=h0 Weight=w" : "Input=u Weight=w", "Hidden=h");
  rt_fails(&r, PD_ESHAPE, part, what);
  rt_free(&r);
}

/* elman_rnn, hidden 3, on six rows as four sequences of lengths 2, 0, 3 and 1 (one empty:
 * the time-major path), as two of length 3 and as one of 6 (the strided path for sequences of
 * one length): each activation, forwards and reversed, with H0 shared, one row per sequence,
 * or absent; the values against elman_ref, the gradients of Input, H0 and Weight against
 * finite differences. Then fp32 on both paths, and the errors: Weight not [H, H], H0 of the
 * wrong number of rows, Input without LoD. */
static void test_elman_rnn(void) {
  int64_t off[] = {0, 2, 2, 5, 6};
  const struct {
    int nseq;
    int64_t off[5];
    const char *h0shape, *name;
  } lay[] = {{4, {0, 2, 2, 5, 6}, "[4, 3]", "lengths 2 0 3 1"},
             {2, {0, 3, 6}, "[2, 3]", "lengths 3 3"},
             {1, {0, 6}, "[1, 3]", "length 6"}};
  double u[18], w[9], h0[12], want[18];
  fill_distinct(u, 18, 5);
  fill_distinct(w, 9, 2);
  fill_distinct(h0, 12, 7);
  for (int i = 0; i < 9; i++) w[i] *= 0.8;
  const char *acts[] = {"tanh", "relu", "sigmoid"};
  for (size_t l = 0; l < PD_ARRAY_LEN(lay); l++)
  for (int a = 0; a < 3; a++)
    for (int rev = 0; rev < 2; rev++)
      for (int mode = 0; mode < 3; mode++) { /* H0: per sequence, shared, absent */
        char what[128];
        snprintf(what, sizeof what, "elman_rnn %s %s%s, H0 %s", lay[l].name, acts[a],
                 rev ? " reversed" : "",
                 mode == 0 ? "per sequence" : mode == 1 ? "shared" : "absent");
        elman_ref(acts[a], rev, u, lay[l].off, lay[l].nseq, 3, mode < 2 ? h0 : NULL, mode == 1,
                  w, want);
        for (int pass = 0; pass < 2; pass++) {
          rt r;
          rt_init(&r);
          rt_in_f64(&r, "u", "[6, 3]", u);
          rt_lod(&r, "u", lay[l].nseq + 1, lay[l].off);
          rt_in_f64(&r, "w", "[3, 3]", w);
          if (mode == 0) rt_in_f64(&r, "h0", lay[l].h0shape, h0);
          if (mode == 1) rt_in_f64(&r, "h0", "[3]", h0);
          pd_op_desc *op = rt_op(&r, "elman_rnn", mode < 2 ? "Input=u H0=h0 Weight=w"
                                                           : "Input=u Weight=w", "Hidden=h");
          pd_op_set_attr_string(op, "activation", acts[a]);
          pd_op_set_attr_bool(op, "is_reverse", rev);
          if (pass == 1) {
            grad_check(&r, mode < 2 ? "Input H0 Weight" : "Input Weight", "Hidden", what);
          } else if (rt_ok(&r, what)) {
            const pd_tensor *h = rt_get(&r, "h");
            rt_expect(h, 18, want, 1e-14, what);
            ok(h && h->nlod == 1 && h->lod[0].n == lay[l].nseq + 1 &&
                   h->lod[0].offsets[1] == lay[l].off[1],
               "%s: Hidden has Input's LoD", what);
          }
          rt_free(&r);
        }
      }
  /* fp32: the same values within rounding. */
  float uf[18], wf[9], hf[12];
  to_f32(u, uf, 18);
  to_f32(w, wf, 9);
  to_f32(h0, hf, 12);
  for (size_t l = 0; l < 2; l++) {
    char what[64];
    snprintf(what, sizeof what, "elman_rnn fp32 %s", lay[l].name);
    elman_ref("tanh", false, u, lay[l].off, lay[l].nseq, 3, h0, false, w, want);
    rt r;
    rt_init(&r);
    rt_in_f32(&r, "u", "[6, 3]", uf);
    rt_lod(&r, "u", lay[l].nseq + 1, lay[l].off);
    rt_in_f32(&r, "w", "[3, 3]", wf);
    rt_in_f32(&r, "h0", lay[l].h0shape, hf);
    rt_op(&r, "elman_rnn", "Input=u H0=h0 Weight=w", "Hidden=h");
    if (rt_ok(&r, what)) rt_expect(rt_get(&r, "h"), 18, want, 1e-5, what);
    rt_free(&r);
  }
  /* Errors. */
  elman_fails(u, off, "[3, 2]", NULL, "Weight must be [H, H] with Input's H",
              "elman_rnn: Weight [3, 2]");
  elman_fails(u, off, "[3, 3]", "[3, 3]", "or [4, 3] (one per sequence)",
              "elman_rnn: H0 [3, 3] for 4 sequences");
  elman_fails(u, NULL, "[3, 3]", NULL, "one LoD level", "elman_rnn: Input without LoD");
}

/* fused_conv2d on Input [1, 2, 4, 4] and Filter [3, 2, 3, 3] with the given activation,
 * fuse_alpha, and Bias / ResidualData shapes (none when NULL) fails with status want and a
 * message holding part. */
static void fused_fails(const char *act, float alpha, const char *bias, const char *res,
                        pd_status want, const char *part, const char *what) {
  double v[96];
  fill_distinct(v, 96, 3);
  rt r;
  rt_init(&r);
  rt_in_f64(&r, "x", "[1, 2, 4, 4]", v);
  rt_in_f64(&r, "w", "[3, 2, 3, 3]", v);
  char ins[96];
  snprintf(ins, sizeof ins, "Input=x Filter=w%s%s", bias ? " Bias=b" : "",
           res ? " ResidualData=r" : "");
  if (bias) rt_in_f64(&r, "b", bias, v);
  if (res) rt_in_f64(&r, "r", res, v);
  pd_op_desc *op = rt_op(&r, "fused_conv2d", ins, "Output=y");
  if (pd_op_set_attr_string(op, "fuse_activation", act) ||
      pd_op_set_attr_float(op, "fuse_alpha", alpha))
    bail("setting attributes");
  rt_fails(&r, want, part, what);
  rt_free(&r);
}

/* fused_conv2d's refusals (its values are the op table's rows): an activation it does not
 * fuse, hard_swish without a positive fuse_alpha, a Bias of another number of channels, a
 * ResidualData not shaped as the output. */
static void test_fused_conv2d(void) {
  fused_fails("mish", 0, NULL, NULL, PD_EUNSUPPORTED, "fuse_activation 'mish': it is not relu",
              "fused_conv2d: an activation it does not fuse");
  fused_fails("hard_swish", 0, NULL, NULL, PD_EUNSUPPORTED, "needs a positive fuse_alpha",
              "fused_conv2d: hard_swish with fuse_alpha 0");
  fused_fails("", 0, "[4]", NULL, PD_ESHAPE, "must hold one value per output channel",
              "fused_conv2d: Bias [4] for 3 filters");
  fused_fails("relu", 0, NULL, "[1, 3, 4, 4]", PD_ESHAPE, "must be shaped as Output",
              "fused_conv2d: ResidualData [1, 3, 4, 4] for an output [1, 3, 2, 2]");
}

int main(void) {
  pd_k_init();
  test_fused_conv2d();
  test_elman_rnn();
  test_conv2d();
  test_pool2d();
  test_lookup();
  test_dropout();
  test_sequence_pool();
  test_sequence_softmax();
  return tap_done();
}
