/* conv_avx2.c -- the fp32 depthwise convolution and the convolutions' fused epilogue for CPUs
 * with AVX2 and FMA but not AVX-512 (AMD's Zen 1 to 3, Intel's client cores; pd_kcpu_simd
 * chooses): conv_avx512.c's kernel at eight columns a vector. Without it these CPUs ran
 * conv_t.h's depthwise_planes, kh * kw passes over each output plane (the stride-2 ones scalar),
 * and the epilogue in the baseline's four-lane SSE: on a Zen 3 core PP-LCNet at batch 16 spent
 * 45% of its time in the depthwise layers and 10% in the epilogues.
 *
 * Each output row is computed eight columns at a time, eight rows at once (independent sums), the
 * kh * kw taps accumulated in registers with fused multiply-adds and stored once, each output its
 * taps added in the order (i, j) row by row as in conv_avx512.c (so both levels give the same
 * sums). AVX2 has no mask registers: a column block whose every tap lies inside the input row
 * (all but the first and last blocks of a row, usually) loads plainly, the others with
 * vmaskmovps, whose masked-off lanes read nothing and hold 0 (the zero padding). Rows outside
 * the input are skipped. A stride of 2 loads sixteen consecutive inputs and keeps the even ones
 * with one in-lane shuffle; the sums then hold the columns in the order (0 2 8 10 4 6 12 14)/2,
 * which one permute puts right before the epilogue and the store. Where a depthwise layer has
 * one filter per channel, 3x3 or 5x5, at least eight channels (MobileNet's, PP-LCNet's, the OCR
 * recognisers'), conv.c gives it instead to the lanes kernel below: eight planes at a time with
 * the channels in the vector lanes. Compiled with a function attribute; nothing calls it on a
 * CPU without AVX2 and FMA. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <string.h>

#if PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>

#include "kernels/cpu/epi_avx2.h"

#define AVX2 __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))
#define KW_MAX 16 /* filter widths taken */
#define UNROLL8 _Pragma("GCC unroll 8")

bool pd_kcpu_depthwise8_takes(const pd_k_conv2d *p) {
  return p->stride_w <= 2 && p->groups == p->c && p->oc % p->groups == 0 && p->kw <= KW_MAX;
}

/* The lanes of an 8-float load at input column c0 that lie in [0, w), as vmaskmovps's mask (a
 * lane's sign bit); *full: all eight. */
INLINE AVX2 __m256i lanes(int64_t c0, int64_t w, bool *full) {
  int64_t lo = c0 < 0 ? -c0 : 0, hi = w - c0 < 8 ? w - c0 : 8;
  if (hi < lo) hi = lo;
  *full = lo == 0 && hi == 8;
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i ge = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32((int)lo - 1));
  __m256i lt = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), idx);
  return _mm256_and_si256(ge, lt);
}

/* The first n lanes (n <= 8), as vmaskmovps's mask. */
INLINE AVX2 __m256i first_lanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* ---- The depthwise convolution ---- */

/* Zeros that a tap row outside the input reads in the unrolled widths' instances (Z), instead of
 * a test before each of its multiply-adds: at most (KW - 1) + 16 floats from its start. On a
 * Zen 3 core the tests made the 5x5 kernel of PicoDet's and PP-OCRv3's small planes issue-bound
 * (a test and a branch for each load and multiply-add). */
static const float zero_row[32] __attribute__((aligned(32)));

/* Columns [ox, ox + 8) of R output rows of plane yc from row oy, at stride S, filter width KW
 * (0: p->kw, a variable) (R, S, KW, FULL and Z constants in the instances below, so that the
 * loops unroll): the taps' loads at row iy, column c0 + j dw come from the input plane xc (rows
 * outside it from zero_row where Z, else skipped), masked with m[j] (and m2[j], a stride-2
 * block's second half) unless FULL. mk: the columns of the block that exist. */
INLINE AVX2 void rows_block(const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox,
                            int64_t oy, float *yc, const pd_kcpu_epi16 *e, float bias,
                            const float *rc, const __m256i *m, const __m256i *m2, __m256i mk,
                            bool whole, int R, int S, int KW, bool FULL, bool Z) {
  int64_t kh = p->kh, kw = p->kw, dh = p->dil_h, dw = p->dil_w, ow = p->ow, w = p->w;
  int64_t c0 = ox * S - p->pad_left;
  __m256 acc[8];
  UNROLL8 for (int r = 0; r < 8; r++) acc[r] = _mm256_setzero_ps();
  if (KW) kw = KW, dw = 1; /* a constant width: the taps unroll, their offsets immediates */
  for (int64_t i = 0; i < kh; i++) {
    const float *wr = wc + i * kw, *row[8];
    UNROLL8 for (int r = 0; r < R; r++) { /* the rows of tap row i, NULL outside the input */
      int64_t iy = (oy + r) * p->stride_h - p->pad_top + i * dh;
      row[r] = iy < 0 || iy >= p->h ? (Z ? zero_row : NULL) : xc + iy * w + c0;
    }
    UNROLL8 for (int64_t j = 0; j < kw; j++) {
      __m256 wv = _mm256_broadcast_ss(wr + j);
      UNROLL8 for (int r = 0; r < R; r++) {
        if (!Z && !row[r]) continue;
        const float *src = row[r] + j * dw;
        __m256 v;
        if (S == 1) {
          v = FULL ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, m[j]);
        } else {
          __m256 lo = FULL ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, m[j]);
          __m256 hi = FULL ? _mm256_loadu_ps(src + 8) : _mm256_maskload_ps(src + 8, m2[j]);
          v = _mm256_shuffle_ps(lo, hi, 0x88); /* columns 0 2 8 10 | 4 6 12 14 */
        }
        acc[r] = _mm256_fmadd_ps(v, wv, acc[r]);
      }
    }
  }
  UNROLL8 for (int r = 0; r < R; r++) {
    __m256 x = acc[r];
    if (S == 2) x = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(x), 0xD8));
    float *yr = yc + (oy + r) * ow + ox;
    if (e) {
      x = _mm256_add_ps(x, _mm256_set1_ps(bias));
      if (rc) {
        const float *q = rc + (oy + r) * ow + ox;
        x = _mm256_add_ps(x, whole ? _mm256_loadu_ps(q) : _mm256_maskload_ps(q, mk));
      }
      x = pd_kcpu_epi_act8(e->act, e->p, x);
    }
    if (whole) _mm256_storeu_ps(yr, x);
    else _mm256_maskstore_ps(yr, mk, x);
  }
}

/* Columns [ox, ox + 8) of every output row: eight rows at a time, then four, two, one. */
INLINE AVX2 void block_rows(const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox,
                            float *yc, const pd_kcpu_epi16 *e, float bias, const float *rc,
                            const __m256i *m, const __m256i *m2, __m256i mk, bool whole, int S,
                            int KW, bool FULL) {
  const bool Z = KW != 0; /* a constant width: dilation 1, its loads within zero_row */
  int64_t oy = 0;
  for (; oy + 8 <= p->oh; oy += 8)
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, whole, 8, S, KW, FULL, Z);
  if (oy + 4 <= p->oh) {
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, whole, 4, S, KW, FULL, Z);
    oy += 4;
  }
  if (oy + 2 <= p->oh) {
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, whole, 2, S, KW, FULL, Z);
    oy += 2;
  }
  if (oy < p->oh)
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, whole, 1, S, KW, FULL, Z);
}

/* Columns [ox, ox + 8): their masks, then the rows, plainly where no tap crosses an edge. */
INLINE AVX2 void block(const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox,
                       float *yc, const pd_kcpu_epi16 *e, float bias, const float *rc, int S,
                       int KW) {
  int64_t kw = p->kw, dw = p->dil_w, w = p->w;
  int64_t c0 = ox * S - p->pad_left;
  __m256i m[KW_MAX], m2[KW_MAX];
  bool full = true, f;
  for (int64_t j = 0; j < kw; j++) {
    m[j] = lanes(c0 + j * dw, w, &f);
    full = full && f;
    m2[j] = S == 2 ? lanes(c0 + j * dw + 8, w, &f) : m[j];
    full = full && f;
  }
  int64_t left = p->ow - ox;
  bool whole = left >= 8;
  __m256i mk = first_lanes(whole ? 8 : left);
  if (full) block_rows(p, xc, wc, ox, yc, e, bias, rc, m, m2, mk, whole, S, KW, true);
  else block_rows(p, xc, wc, ox, yc, e, bias, rc, m, m2, mk, whole, S, KW, false);
}

/* ---- Interior spans: input rows outer ----
 * Where a span of 16 or 32 output columns has every tap inside the input row (the span is not
 * at an edge) and the filter width is a constant (3 or 5, no dilation), R output rows (R <= 4)
 * of NC column blocks are summed with the input rows in the outer loop: each input row's vector
 * for a tap (at stride 2 two loads and a shuffle, as in rows_block) is made once for every
 * output row that reads it, each weight broadcast once for the NC blocks, and a tap row outside
 * the input is skipped rather than read as zeros. rows_block makes each vector again for every
 * output row and tap row and adds zero rows at the top and bottom edges: on the short wide
 * planes of the OCR recognisers (3 or 6 rows of 160, 5x5, stride (2, 1) or 1) that ran at
 * 17-27 GFLOP/s on a Zen 3 core, here 29-38. Each output's taps are added in the order (i, j),
 * as there, so the sums are the same. */
INLINE AVX2 void band(const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox,
                      int64_t oy, float *yc, const pd_kcpu_epi16 *e, float bias, const float *rc,
                      int R, int NC, int S, int KW) {
  int64_t sh = p->stride_h, kh = p->kh, ow = p->ow;
  int64_t top = oy * sh - p->pad_top, nt = (R - 1) * sh + kh;
  __m256 acc[8];
  UNROLL8 for (int q = 0; q < R * NC; q++) acc[q] = _mm256_setzero_ps();
  for (int64_t t = 0; t < nt; t++) {
    int64_t iy = top + t;
    if (iy < 0 || iy >= p->h) continue;
    const float *src = xc + iy * p->w + ox * S - p->pad_left;
    UNROLL8 for (int j = 0; j < KW; j++) {
      __m256 v[4];
      UNROLL8 for (int c = 0; c < NC; c++) {
        const float *q = src + j + 8 * S * c;
        v[c] = S == 1 ? _mm256_loadu_ps(q)
                      : _mm256_shuffle_ps(_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8), 0x88);
      }
      UNROLL8 for (int r = 0; r < R; r++) {
        int64_t i = t - r * sh;
        if (i < 0 || i >= kh) continue;
        __m256 wv = _mm256_broadcast_ss(wc + i * KW + j);
        UNROLL8 for (int c = 0; c < NC; c++)
          acc[r * NC + c] = _mm256_fmadd_ps(v[c], wv, acc[r * NC + c]);
      }
    }
  }
  UNROLL8 for (int r = 0; r < R; r++) UNROLL8 for (int c = 0; c < NC; c++) {
      __m256 x = acc[r * NC + c];
      if (S == 2) x = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(x), 0xD8));
      int64_t at = (oy + r) * ow + ox + 8 * c;
      if (e) {
        x = _mm256_add_ps(x, _mm256_set1_ps(bias));
        if (rc) x = _mm256_add_ps(x, _mm256_loadu_ps(rc + at));
        x = pd_kcpu_epi_act8(e->act, e->p, x);
      }
      _mm256_storeu_ps(yc + at, x);
    }
}

/* Columns [ox, ox + 8 NB) (NB 2 or 4 blocks) of every output row: four rows at a time in bands
 * of two blocks, then three, then two or one row in bands of up to four blocks. */
INLINE AVX2 void span_rows(const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox,
                           float *yc, const pd_kcpu_epi16 *e, float bias, const float *rc,
                           int NB, int S, int KW) {
  int64_t oy = 0, oh = p->oh;
  for (; oy + 4 <= oh; oy += 4)
    for (int b = 0; b < NB; b += 2) band(p, xc, wc, ox + 8 * b, oy, yc, e, bias, rc, 4, 2, S, KW);
  if (oh - oy == 3)
    for (int b = 0; b < NB; b += 2) band(p, xc, wc, ox + 8 * b, oy, yc, e, bias, rc, 3, 2, S, KW);
  else if (oh - oy == 2)
    band(p, xc, wc, ox, oy, yc, e, bias, rc, 2, NB, S, KW);
  else if (oh - oy == 1)
    band(p, xc, wc, ox, oy, yc, e, bias, rc, 1, NB, S, KW);
}

/* Whether output columns [ox, ox + cols) at stride S are an interior span of width KW: every
 * load of band's inside the input row (at stride 2 its last load reaches one column further). */
INLINE bool interior(const pd_k_conv2d *p, int64_t ox, int64_t cols, int S, int KW) {
  int64_t c0 = ox * S - p->pad_left, last = c0 + (cols - 1) * S + KW - 1 + (S == 2);
  return KW && p->dil_h == 1 && ox + cols <= p->ow && c0 >= 0 && last < p->w;
}

/* A 3x3 filter at stride 1 takes the spans on planes up to this many outputs: on a Zen 3 core
 * 12x160 and 112x112 ran 5-15% faster through them, 160x160 (DB's) 15-30% slower. */
#define SPAN_K3_PLANE (128 * 128)

/* One instance per stride (1, 2) and width (3, 5 without dilation: MobileNet's, PP-LCNet's,
 * PicoDet's; any other as a variable). */
#define PLANE(name, S, KW)                                                                   \
  static AVX2 void name(const pd_k_conv2d *p, const float *xc, const float *wc, float *yc,   \
                        const pd_kcpu_epi16 *e, float bias, const float *rc) {               \
    bool spans = KW == 5 || S == 2 || p->oh * p->ow <= SPAN_K3_PLANE;                       \
    for (int64_t ox = 0; ox < p->ow;) {                                                      \
      if (spans && interior(p, ox, 32, S, KW)) {                                             \
        span_rows(p, xc, wc, ox, yc, e, bias, rc, 4, S, KW);                                 \
        ox += 32;                                                                            \
      } else if (spans && interior(p, ox, 16, S, KW)) {                                      \
        span_rows(p, xc, wc, ox, yc, e, bias, rc, 2, S, KW);                                 \
        ox += 16;                                                                            \
      } else {                                                                               \
        block(p, xc, wc, ox, yc, e, bias, rc, S, KW);                                        \
        ox += 8;                                                                             \
      }                                                                                      \
    }                                                                                        \
  }
PLANE(plane_s1, 1, 0)
PLANE(plane_s2, 2, 0)
PLANE(plane_s1_k3, 1, 3)
PLANE(plane_s2_k3, 2, 3)
PLANE(plane_s1_k5, 1, 5)
PLANE(plane_s2_k5, 2, 5)
#undef PLANE

void pd_kcpu_depthwise8_f32(const pd_k_conv2d *p, const float *x, const float *w, int64_t plane,
                            float *y, const pd_kcpu_epi16 *e) {
  pd_kcpu_dw_plane q = pd_kcpu_dw_plane_of(p, x, w, plane, y, e);
  if (p->stride_w == 1)
    (q.kw == 3 ? plane_s1_k3 : q.kw == 5 ? plane_s1_k5 : plane_s1)(p, q.x, q.w, q.y, e, q.bias,
                                                                            q.res);
  else
    (q.kw == 3 ? plane_s2_k3 : q.kw == 5 ? plane_s2_k5 : plane_s2)(p, q.x, q.w, q.y, e, q.bias,
                                                                            q.res);
}

/* ---- Eight channels in the lanes ----
 * A depthwise convolution with one filter a channel, KxK (3 or 5), no dilation, at stride 1 or 2
 * across (any down) computed eight planes of one image at a time, each vector the eight
 * channels of one pixel (as ONNX Runtime's NCHWc convolutions hold them). A band of output rows
 * at a time: the input rows it reads are transposed into T [rows][tw][8], zero columns and rows
 * where the padding is, so that no tap needs a mask, a test or a shuffle (a stride is an
 * address); the sums are made there four pixels at a time (tap (i, j): the eight channels'
 * weights, loaded once, times four loads) into O [band pixels][8], which is transposed back into
 * the eight output planes with the epilogue applied as they are stored. Every vector is full:
 * column blocks (block, band above) work one plane at a time, pay masks and edge blocks on
 * every row and leave lanes idle where a row is not a multiple of eight wide (MobileNetV3's
 * 7x7 and 14x14 planes). On a Zen 3 core MobileNetV3's depthwise layers ran 1.7-3.3x faster
 * (7x7 to 112x112, 3x3 and 5x5, both strides). Each output's taps are summed from 0 in the order
 * (i, j), a padding tap adding its zero as block's masked loads do, then the epilogue: the
 * same sums as block and band. */

/* Output rows a band holds: O at most LANES_PIXELS pixels (64 KB). */
#define LANES_PIXELS 2048

bool pd_kcpu_depthwise8_lanes_takes(const pd_k_conv2d *p) {
  return p->groups == p->c && p->oc == p->c && p->oc >= 8 && p->kh == p->kw &&
         (p->kw == 3 || p->kw == 5) && p->dil_h == 1 && p->dil_w == 1 &&
         (p->stride_w == 1 || p->stride_w == 2) && p->oh > 0 && p->ow > 0;
}

static int64_t lanes_band(const pd_k_conv2d *p) {
  int64_t r = LANES_PIXELS / p->ow;
  return r < 1 ? 1 : r > p->oh ? p->oh : r;
}

size_t pd_kcpu_depthwise8_lanes_floats(const pd_k_conv2d *p) {
  int64_t br = lanes_band(p), tw = (p->ow - 1) * p->stride_w + p->kw;
  return (size_t)(((br - 1) * p->stride_h + p->kh) * tw + br * p->ow) * 8;
}

/* The transpose of eight vectors as an 8x8 matrix (row r = r[r]). */
INLINE AVX2 void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  UNROLL8 for (int k = 0; k < 4; k++) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  UNROLL8 for (int k = 0; k < 2; k++) {
    u[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
    u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
    u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  UNROLL8 for (int k = 0; k < 4; k++) {
    r[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
    r[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
  }
}

/* T's rows for output rows [oy0, oy1): nr input rows from iy0, each tw pixels of the eight
 * planes from column -pad_left (plane k at x + k hw). */
INLINE AVX2 void lanes_in(const pd_k_conv2d *p, const float *x, int64_t iy0, int64_t nr,
                          int64_t tw, float *t) {
  int64_t hw = p->h * p->w, pl = p->pad_left;
  int64_t n = p->w < tw - pl ? p->w : tw - pl; /* input columns T holds */
  if (n < 0) n = 0;
  const __m256 z = _mm256_setzero_ps();
  for (int64_t r = 0; r < nr; r++) {
    float *tr = t + r * tw * 8;
    int64_t iy = iy0 + r;
    if (iy < 0 || iy >= p->h) {
      for (int64_t c = 0; c < tw; c++) _mm256_storeu_ps(tr + c * 8, z);
      continue;
    }
    for (int64_t c = 0; c < pl && c < tw; c++) _mm256_storeu_ps(tr + c * 8, z);
    const float *xr = x + iy * p->w;
    float *dst = tr + pl * 8;
    int64_t ix = 0;
    for (; ix + 8 <= n; ix += 8) {
      __m256 v[8];
      UNROLL8 for (int k = 0; k < 8; k++) v[k] = _mm256_loadu_ps(xr + k * hw + ix);
      transpose8(v);
      UNROLL8 for (int k = 0; k < 8; k++) _mm256_storeu_ps(dst + (ix + k) * 8, v[k]);
    }
    if (ix < n) {
      __m256i mk = first_lanes(n - ix);
      __m256 v[8];
      UNROLL8 for (int k = 0; k < 8; k++) v[k] = _mm256_maskload_ps(xr + k * hw + ix, mk);
      transpose8(v);
      for (int64_t k = 0; k < n - ix; k++) _mm256_storeu_ps(dst + (ix + k) * 8, v[k]);
    }
    for (int64_t c = pl + n; c < tw; c++) _mm256_storeu_ps(tr + c * 8, z);
  }
}

/* O's pixels [0, np) back into the eight output planes from pixel q0 (plane k at y + k ohw),
 * through the epilogue e (NULL: none): bias[k], plane k's residual from res + k ohw. */
INLINE AVX2 void lanes_out(const float *o, int64_t np, int64_t q0, int64_t ohw, float *y,
                           const pd_kcpu_epi16 *e, const float *bias, const float *res) {
  __m256 bv[8];
  UNROLL8 for (int k = 0; k < 8; k++) bv[k] = _mm256_set1_ps(bias ? bias[k] : 0.0f);
  for (int64_t i = 0; i < np; i += 8) {
    int64_t m = np - i < 8 ? np - i : 8;
    __m256i mk = first_lanes(m);
    __m256 v[8];
    UNROLL8 for (int k = 0; k < 8; k++)
      v[k] = k < m ? _mm256_loadu_ps(o + (i + k) * 8) : _mm256_setzero_ps();
    transpose8(v);
    UNROLL8 for (int k = 0; k < 8; k++) {
      __m256 r = v[k];
      int64_t at = k * ohw + q0 + i;
      if (e) {
        r = _mm256_add_ps(r, bv[k]);
        if (res) r = _mm256_add_ps(r, m == 8 ? _mm256_loadu_ps(res + at)
                                             : _mm256_maskload_ps(res + at, mk));
        r = pd_kcpu_epi_act8(e->act, e->p, r);
      }
      if (m == 8) _mm256_storeu_ps(y + at, r);
      else _mm256_maskstore_ps(y + at, mk, r);
    }
  }
}

/* The band's sums: output rows [0, nrows) of ow pixels, from T (tw pixels a row, stride sh rows
 * down, SW across), weights wv [K K], into O. */
INLINE AVX2 void lanes_sums(const float *t, int64_t tw, int64_t sh, int64_t nrows, int64_t ow,
                            const __m256 *wv, float *o, int SW, int K) {
  for (int64_t r = 0; r < nrows; r++) {
    const float *tr = t + r * sh * tw * 8;
    float *orow = o + r * ow * 8;
    int64_t ox = 0;
    for (; ox + 4 <= ow; ox += 4) {
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      UNROLL8 for (int i = 0; i < K; i++) UNROLL8 for (int j = 0; j < K; j++) {
          const float *s = tr + (i * tw + ox * SW + j) * 8;
          __m256 w = wv[i * K + j];
          a0 = _mm256_fmadd_ps(_mm256_loadu_ps(s), w, a0);
          a1 = _mm256_fmadd_ps(_mm256_loadu_ps(s + SW * 8), w, a1);
          a2 = _mm256_fmadd_ps(_mm256_loadu_ps(s + 2 * SW * 8), w, a2);
          a3 = _mm256_fmadd_ps(_mm256_loadu_ps(s + 3 * SW * 8), w, a3);
        }
      _mm256_storeu_ps(orow + ox * 8, a0);
      _mm256_storeu_ps(orow + ox * 8 + 8, a1);
      _mm256_storeu_ps(orow + ox * 8 + 16, a2);
      _mm256_storeu_ps(orow + ox * 8 + 24, a3);
    }
    for (; ox < ow; ox++) {
      __m256 a = _mm256_setzero_ps();
      UNROLL8 for (int i = 0; i < K; i++) UNROLL8 for (int j = 0; j < K; j++)
          a = _mm256_fmadd_ps(_mm256_loadu_ps(tr + (i * tw + ox * SW + j) * 8), wv[i * K + j], a);
      _mm256_storeu_ps(orow + ox * 8, a);
    }
  }
}

#define LANES(name, SW, K)                                                                     \
  static AVX2 void name(const pd_k_conv2d *p, const float *x, const float *w, float *y,      \
                        const pd_kcpu_epi16 *e, const float *bias, const float *res,         \
                        float *scratch) {                                                     \
    int64_t sh = p->stride_h, ow = p->ow, ohw = p->oh * ow, br = lanes_band(p);              \
    int64_t tw = (ow - 1) * SW + K;                                                           \
    float *t = scratch, *o = scratch + ((br - 1) * sh + K) * tw * 8;                          \
    __m256 wv[K * K];                                                                         \
    UNROLL8 for (int k = 0; k < K * K; k++)                                                   \
      wv[k] = _mm256_setr_ps(w[k], w[K * K + k], w[2 * K * K + k], w[3 * K * K + k],          \
                             w[4 * K * K + k], w[5 * K * K + k], w[6 * K * K + k],            \
                             w[7 * K * K + k]);                                               \
    for (int64_t oy = 0; oy < p->oh; oy += br) {                                              \
      int64_t nr = p->oh - oy < br ? p->oh - oy : br;                                         \
      lanes_in(p, x, oy * sh - p->pad_top, (nr - 1) * sh + K, tw, t);                        \
      lanes_sums(t, tw, sh, nr, ow, wv, o, SW, K);                                            \
      lanes_out(o, nr * ow, oy * ow, ohw, y, e, bias, res);                                    \
    }                                                                                         \
  }
LANES(lanes_s1_k3, 1, 3)
LANES(lanes_s2_k3, 2, 3)
LANES(lanes_s1_k5, 1, 5)
LANES(lanes_s2_k5, 2, 5)
#undef LANES

void pd_kcpu_depthwise8_lanes_f32(const pd_k_conv2d *p, const float *x, const float *w,
                                  int64_t plane, float *y, const pd_kcpu_epi16 *e,
                                  float *scratch) {
  pd_kcpu_dw_plane q = pd_kcpu_dw_plane_of(p, x, w, plane, y, e);
  const float *bias = e && e->rbias ? e->rbias + plane % p->oc : NULL;
  (p->stride_w == 1 ? (p->kw == 3 ? lanes_s1_k3 : lanes_s1_k5)
                    : (p->kw == 3 ? lanes_s2_k3 : lanes_s2_k5))(p, q.x, q.w, q.y, e, bias,
                                                                 q.res, scratch);
}

/* ---- The data gradient of a 2x2 convolution of stride 2 (the transposed convolution of an
 * upsampling head) ----
 * conv_avx512.c's unstride at eight columns of dy a vector: row y of channel c of dx takes
 * a = y % 2 of the filter and row i = y / 2 of dy; each column of dy duplicated into two lanes
 * (one permute a half) times the weight pair (w[o][c][a][0], w[o][c][a][1]) broadcast as one
 * 64-bit value gives sixteen columns of dx, UCO channels at a time sharing the duplicated
 * vectors; each sum over o in order, as conv_avx512.c's. Through the column matrix (OpenBLAS,
 * then col2im's scatter over a cleared dx, all of an image on one thread) DB's [24, 160, 160]
 * -> [24, 320, 320] took 6.9 ms of its 47 on two threads. */
#define UCO 4

INLINE AVX2 void unstride_row8(int NC, const pd_k_conv2d *p, const float *w, const float *rows,
                               float *dxn, int64_t c, int64_t y) {
  int64_t a = y % 2, ow = p->ow, W = p->w;
  const __m256i lo = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const __m256i hi = _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7);
  for (int64_t j0 = 0; j0 < ow; j0 += 8) {
    int64_t left = ow - j0;
    bool whole = left >= 8;
    __m256i m = first_lanes(left);
    __m256 acc[UCO][2];
    UNROLL8 for (int k = 0; k < NC; k++) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
    const float *src = rows + j0;
    for (int64_t o = 0; o < p->oc; o++) {
      __m256 v = whole ? _mm256_loadu_ps(src + o * ow) : _mm256_maskload_ps(src + o * ow, m);
      __m256 dl = _mm256_permutevar8x32_ps(v, lo), dh = _mm256_permutevar8x32_ps(v, hi);
      const float *wp = w + ((o * p->c + c) * 2 + a) * 2; /* w[o][c][a][0..1] */
      UNROLL8 for (int k = 0; k < NC; k++) {
        long long pair;
        memcpy(&pair, wp + k * 4, sizeof pair); /* w[o][c + k][a][0..1] */
        __m256 wv = _mm256_castsi256_ps(_mm256_set1_epi64x(pair));
        acc[k][0] = _mm256_fmadd_ps(dl, wv, acc[k][0]);
        acc[k][1] = _mm256_fmadd_ps(dh, wv, acc[k][1]);
      }
    }
    /* 2 left columns of dx from 2 j0: the first vector's 8, then the rest */
    int64_t n0 = 2 * left >= 8 ? 8 : 2 * left, n1 = 2 * left - 8;
    UNROLL8 for (int k = 0; k < NC; k++) {
      float *dst = dxn + ((c + k) * p->h + y) * W + 2 * j0;
      if (n0 == 8) _mm256_storeu_ps(dst, acc[k][0]);
      else _mm256_maskstore_ps(dst, first_lanes(n0), acc[k][0]);
      if (n1 >= 8) _mm256_storeu_ps(dst + 8, acc[k][1]);
      else if (n1 > 0) _mm256_maskstore_ps(dst + 8, first_lanes(n1), acc[k][1]);
    }
  }
}

AVX2 void pd_kcpu_unstride2_row8_f32(const pd_k_conv2d *p, const float *w, const float *rows,
                                     float *dxn, int64_t y) {
  int64_t c = 0;
  for (; c + UCO <= p->c; c += UCO) unstride_row8(UCO, p, w, rows, dxn, c, y);
  switch (p->c - c) {
    case 3: unstride_row8(3, p, w, rows, dxn, c, y); break;
    case 2: unstride_row8(2, p, w, rows, dxn, c, y); break;
    case 1: unstride_row8(1, p, w, rows, dxn, c, y); break;
    default: break;
  }
}

/* ---- The epilogue of a row ---- */

/* r[j] = act(r[j] + b + q[j]) for j < len (q NULL: none), ACT a constant in each instance. */
INLINE AVX2 void epi_row(int ACT, const float *pp, float *r, float b, const float *q,
                         int64_t len) {
  const __m256 bv = _mm256_set1_ps(b);
  int64_t j = 0;
  for (; j + 8 <= len; j += 8) {
    __m256 x = _mm256_add_ps(_mm256_loadu_ps(r + j), bv);
    if (q) x = _mm256_add_ps(x, _mm256_loadu_ps(q + j));
    _mm256_storeu_ps(r + j, pd_kcpu_epi_act8(ACT, pp, x));
  }
  if (j < len) {
    __m256i mk = first_lanes(len - j);
    __m256 x = _mm256_add_ps(_mm256_maskload_ps(r + j, mk), bv);
    if (q) x = _mm256_add_ps(x, _mm256_maskload_ps(q + j, mk));
    _mm256_maskstore_ps(r + j, mk, pd_kcpu_epi_act8(ACT, pp, x));
  }
}

AVX2 void pd_kcpu_epi_row8_f32(int act, const float pp[4], float *r, float b, const float *q,
                               int64_t len) {
  switch (act) {
    case PD_KCPU_EPI_RELU: epi_row(PD_KCPU_EPI_RELU, pp, r, b, q, len); break;
    case PD_KCPU_EPI_RELU6: epi_row(PD_KCPU_EPI_RELU6, pp, r, b, q, len); break;
    case PD_KCPU_EPI_LEAKY: epi_row(PD_KCPU_EPI_LEAKY, pp, r, b, q, len); break;
    case PD_KCPU_EPI_HSWISH: epi_row(PD_KCPU_EPI_HSWISH, pp, r, b, q, len); break;
    case PD_KCPU_EPI_HSIGMOID: epi_row(PD_KCPU_EPI_HSIGMOID, pp, r, b, q, len); break;
    default: epi_row(PD_KCPU_EPI_NONE, pp, r, b, q, len); break;
  }
}

#endif /* PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32 */
