/* conv_avx512.c -- the fp32 depthwise convolution (a filter per input channel: MobileNet's,
 * PP-LCNet's, the OCR backbones') for AVX-512F CPUs, one output plane (or a band of its rows) a
 * call (conv.c splits the planes, or one image's rows, across the pool). Each output row is
 * computed sixteen columns at a time, eight rows at once (independent sums), the kh * kw taps
 * accumulated in registers with fused multiply-adds (the tap's weight a broadcast operand) and
 * stored once; filters 3 and 5 wide have instances of their own, their taps unrolled (PicoDet's
 * 5x5 on 40x40: 339 -> 228 us a layer of 96 channels, one thread); the window reads are loads of
 * the input row itself, masked where they cross its edges (the zero padding: masked-off lanes read
 * nothing and hold 0), and the rows outside the input are skipped. A stride of 2 loads 32
 * consecutive inputs and keeps the even ones (one permute). The masks depend on the column block
 * and the tap only, so the blocks are the outer loop. conv_t.h's depthwise_planes, which this
 * replaces there, made kh * kw passes over each output plane, the stride-2 ones scalar:
 * MobileNetV3's 15 depthwise layers at 224x224 took 3.6 ms of its 11 ms. (A first version copied
 * each plane into a zero-bordered scratch plane first: the copy took as long as the arithmetic.)
 * Each output is its taps added in the order (i, j) row by row, as there, but fused: results
 * differ from it in the last bits. A fused convolution's epilogue (bias, residual, a
 * piecewise-linear activation) is applied to each vector before it is stored. Also the data
 * gradient of a 2x2 convolution of stride 2, the transposed convolution of upsampling heads
 * (pd_kcpu_unstride2_row16_f32); an image's first layer (few input channels) computed
 * directly (fewc16); rows of conv.c's column panels at stride 2 and the panels of small maps at
 * stride 1; max pooling, 2x2 average pooling and global average pooling; a product made
 * transposed turned back into the output's rows. Compiled with a function attribute; nothing
 * calls it on a CPU without AVX-512F (pd_kcpu_simd). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/epi_avx512.h"

#define AVX512 __attribute__((target("avx512f,fma")))
#define KW_MAX 16 /* filter widths taken */
#define UNROLL8 _Pragma("GCC unroll 8")

bool pd_kcpu_depthwise16_takes(const pd_k_conv2d *p) {
  return p->stride_w <= 2 && p->groups == p->c && p->oc % p->groups == 0 && p->kw <= KW_MAX;
}

/* The lanes of a 16-float load at input column c0 that lie in [0, w). */
static __mmask16 lanes(int64_t c0, int64_t w) { return pd_kcpu_span16(-c0, w - c0); }

/* n (at most 16) elements of s two apart, the lanes past n 0: two loads of sixteen, the even
 * lanes kept (one permute), reading s[0 .. 2 n - 2] only. */
static inline __attribute__((always_inline)) AVX512 __m512 evens16(const float *s, int64_t n) {
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  int64_t span = 2 * n - 1; /* floats read */
  return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(pd_kcpu_first16(span), s), evens,
                                _mm512_maskz_loadu_ps(pd_kcpu_first16(span - 16), s + 16));
}

/* Columns [ox, ox + 16) of R output rows of plane yc from row oy, at stride S (R and S constants
 * in the instances below, so that the loops unroll): the taps' loads at row iy, column c0 + j dw
 * come from the input plane xc, masked by m[j] (and m2[j] for a stride-2 block's second half)
 * where M (a block crossing the row's edges; elsewhere plain loads). B: some of the R rows' taps
 * fall outside the input (the top and bottom rows of the padding), skipped row by row; the
 * interior rows' blocks have no such tests. (With a test and a branch before every load, gcc
 * moved each mask from the stack into a mask register again before its load: 17 cycles a tap of
 * eight rows where the loads and FMAs take about 5, on Sapphire Rapids.) The R rows' sums are
 * independent chains of fused multiply-adds: with one row at a time each waited on the one before
 * (four cycles a tap), and PicoDet's 5x5 layers ran at a tenth of the FMA rate. Each sum still
 * adds its taps in the order (i, j). */
static inline __attribute__((always_inline)) AVX512 void rows_block(
    const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox, int64_t oy, float *yc,
    const pd_kcpu_epi16 *e, float bias, const float *rc, const __mmask16 *m, const __mmask16 *m2,
    __mmask16 mk, int R, int S, int KW, int M, int B) {
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  int64_t kh = p->kh, kw = p->kw, dh = p->dil_h, dw = p->dil_w, ow = p->ow, w = p->w;
  int64_t c0 = ox * S - p->pad_left;
  __m512 acc[8];
  UNROLL8 for (int r = 0; r < 8; r++) acc[r] = _mm512_setzero_ps();
  if (KW) kw = KW, dw = 1; /* a constant width: the taps unroll, their offsets immediates */
  if (S == 2 && KW == 3) {
    /* a 3x3 at stride 2: the three taps of a row from one window of 33 columns, loaded once:
     * the even columns (tap 0), the odd ones (tap 1) and the even ones moved one lane on with
     * column 32 (tap 2); two loads and a broadcast where each tap took two loads */
    const __m512i odds =
        _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    bool last_in = c0 + 32 >= 0 && c0 + 32 < w; /* column 32 of the window inside the row */
    for (int64_t i = 0; i < kh; i++) {
      const float *wr = wc + i * 3;
      __m512 w0 = _mm512_set1_ps(wr[0]), w1 = _mm512_set1_ps(wr[1]), w2 = _mm512_set1_ps(wr[2]);
      UNROLL8 for (int r = 0; r < R; r++) {
        int64_t iy = (oy + r) * p->stride_h - p->pad_top + i * dh;
        if (B && (iy < 0 || iy >= p->h)) continue;
        const float *src = xc + iy * w + c0;
        __m512 a = M ? _mm512_maskz_loadu_ps(m[0], src) : _mm512_loadu_ps(src);
        __m512 b = M ? _mm512_maskz_loadu_ps(m2[0], src + 16) : _mm512_loadu_ps(src + 16);
        __m512 c = _mm512_set1_ps(!M || last_in ? src[32] : 0.0f);
        __m512 ev = _mm512_permutex2var_ps(a, evens, b), od = _mm512_permutex2var_ps(a, odds, b);
        __m512 e2 = _mm512_castsi512_ps(
            _mm512_alignr_epi32(_mm512_castps_si512(c), _mm512_castps_si512(ev), 1));
        acc[r] = _mm512_fmadd_ps(ev, w0, acc[r]);
        acc[r] = _mm512_fmadd_ps(od, w1, acc[r]);
        acc[r] = _mm512_fmadd_ps(e2, w2, acc[r]);
      }
    }
    kh = 0; /* done */
  }
  for (int64_t i = 0; i < kh; i++) {
    const float *wr = wc + i * kw, *row[8];
    UNROLL8 for (int r = 0; r < R; r++) { /* the rows of tap row i, NULL outside the input */
      int64_t iy = (oy + r) * p->stride_h - p->pad_top + i * dh;
      row[r] = B && (iy < 0 || iy >= p->h) ? NULL : xc + iy * w + c0;
    }
    UNROLL8 for (int64_t j = 0; j < kw; j++) {
      __m512 wv = _mm512_set1_ps(wr[j]);
      UNROLL8 for (int r = 0; r < R; r++) {
        if (B && !row[r]) continue;
        const float *src = row[r] + j * dw;
        __m512 v;
        if (S == 1) {
          v = M ? _mm512_maskz_loadu_ps(m[j], src) : _mm512_loadu_ps(src);
        } else {
          __m512 lo = M ? _mm512_maskz_loadu_ps(m[j], src) : _mm512_loadu_ps(src);
          __m512 hi = M ? _mm512_maskz_loadu_ps(m2[j], src + 16) : _mm512_loadu_ps(src + 16);
          v = _mm512_permutex2var_ps(lo, evens, hi);
        }
        acc[r] = _mm512_fmadd_ps(v, wv, acc[r]);
      }
    }
  }
  UNROLL8 for (int r = 0; r < R; r++) {
    __m512 x = acc[r];
    if (e) {
      x = _mm512_add_ps(x, _mm512_set1_ps(bias));
      if (rc) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, rc + (oy + r) * ow + ox));
      x = pd_kcpu_epi_act(e, x);
    }
    _mm512_mask_storeu_ps(yc + (oy + r) * ow + ox, mk, x);
  }
}

/* Columns [ox, ox + 16) of output rows [oy, end): eight rows at a time, then four, two, one. */
static inline __attribute__((always_inline)) AVX512 void rows_run(
    const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox, int64_t oy, int64_t end,
    float *yc, const pd_kcpu_epi16 *e, float bias, const float *rc, const __mmask16 *m,
    const __mmask16 *m2, __mmask16 mk, int S, int KW, int M, int B) {
  for (; oy + 8 <= end; oy += 8)
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, 8, S, KW, M, B);
  if (oy + 4 <= end) {
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, 4, S, KW, M, B);
    oy += 4;
  }
  if (oy + 2 <= end) {
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, 2, S, KW, M, B);
    oy += 2;
  }
  if (oy < end) rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, 1, S, KW, M, B);
}

/* Columns [ox, ox + 16) of output rows [y0, y1): the rows whose taps all lie in the input (lo
 * to hi) without tests, those above and below them with. M: the block's loads cross the row's
 * edges. */
static inline __attribute__((always_inline)) AVX512 void block(
    const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox, float *yc,
    const pd_kcpu_epi16 *e, float bias, const float *rc, int64_t y0, int64_t y1, int S, int KW,
    int M) {
  int64_t kw = p->kw, dw = p->dil_w, w = p->w, sh = p->stride_h;
  int64_t c0 = ox * S - p->pad_left;
  __mmask16 m[KW_MAX], m2[KW_MAX];
  if (M)
    for (int64_t j = 0; j < kw; j++) {
      m[j] = lanes(c0 + j * dw, w);
      m2[j] = S == 2 ? lanes(c0 + j * dw + 16, w) : 0;
    }
  int64_t left = p->ow - ox;
  __mmask16 mk = pd_kcpu_first16(left);
  /* row oy reads input rows oy sh - pad_top to that + (kh - 1) dh */
  int64_t lo = (p->pad_top + sh - 1) / sh, last = p->h - 1 + p->pad_top - (p->kh - 1) * p->dil_h;
  int64_t hi = last < 0 ? 0 : last / sh + 1;
  lo = lo < y0 ? y0 : lo > y1 ? y1 : lo;
  hi = hi < lo ? lo : hi > y1 ? y1 : hi;
  rows_run(p, xc, wc, ox, y0, lo, yc, e, bias, rc, m, m2, mk, S, KW, M, 1);
  rows_run(p, xc, wc, ox, lo, hi, yc, e, bias, rc, m, m2, mk, S, KW, M, 0);
  rows_run(p, xc, wc, ox, hi, y1, yc, e, bias, rc, m, m2, mk, S, KW, M, 1);
}

/* One instance per stride (1, 2) and width (3, 5 without dilation: MobileNet's, PP-LCNet's,
 * PicoDet's; any other as a variable). A column block reads input columns c0 to c0 + 15 S +
 * (kw - 1) dw (+ 1 at stride 2, whose loads take 32 columns): inside the row, plain loads. */
#define PLANE(name, S, KW)                                                                   \
  static AVX512 void name(const pd_k_conv2d *p, const float *xc, const float *wc, float *yc, \
                          const pd_kcpu_epi16 *e, float bias, const float *rc, int64_t y0,   \
                          int64_t y1) {                                                      \
    int64_t span = 16 * S - 1 + (p->kw - 1) * p->dil_w;                                      \
    for (int64_t ox = 0; ox < p->ow; ox += 16) {                                             \
      int64_t c0 = ox * S - p->pad_left;                                                     \
      if (c0 >= 0 && c0 + span < p->w)                                                       \
        block(p, xc, wc, ox, yc, e, bias, rc, y0, y1, S, KW, 0);                             \
      else                                                                                   \
        block(p, xc, wc, ox, yc, e, bias, rc, y0, y1, S, KW, 1);                             \
    }                                                                                        \
  }
PLANE(plane_s1, 1, 0)
PLANE(plane_s2, 2, 0)
PLANE(plane_s1_k3, 1, 3)
PLANE(plane_s2_k3, 2, 3)
PLANE(plane_s1_k5, 1, 5)
PLANE(plane_s2_k5, 2, 5)
#undef PLANE

void pd_kcpu_depthwise16_rows_f32(const pd_k_conv2d *p, const float *x, const float *w,
                                  int64_t plane, float *y, const pd_kcpu_epi16 *e, int64_t y0,
                                  int64_t y1) {
  pd_kcpu_dw_plane q = pd_kcpu_dw_plane_of(p, x, w, plane, y, e);
  if (p->stride_w == 1)
    (q.kw == 3 ? plane_s1_k3 : q.kw == 5 ? plane_s1_k5 : plane_s1)(p, q.x, q.w, q.y, e, q.bias,
                                                                            q.res, y0, y1);
  else
    (q.kw == 3 ? plane_s2_k3 : q.kw == 5 ? plane_s2_k5 : plane_s2)(p, q.x, q.w, q.y, e, q.bias,
                                                                            q.res, y0, y1);
}

void pd_kcpu_depthwise16_f32(const pd_k_conv2d *p, const float *x, const float *w, int64_t plane,
                             float *y, const pd_kcpu_epi16 *e) {
  pd_kcpu_depthwise16_rows_f32(p, x, w, plane, y, e, 0, p->oh);
}

/* d[u] = s[2 u] for u < n (a row of a column matrix at stride 2: the first layer of most of the
 * field's models): two loads of sixteen, the even lanes kept (one permute), the loads masked to
 * s[0 .. 2 n - 2]. The scalar loop took half of PP-LCNet's first layer (3 -> 16 channels,
 * 224x224 -> 112x112, 3x3). */
AVX512 void pd_kcpu_copy_evens_f32(float *d, const float *s, int64_t n) {
  for (int64_t u = 0; u < n; u += 16)
    _mm512_mask_storeu_ps(d + u, pd_kcpu_first16(n - u),
                          evens16(s + 2 * u, n - u < 16 ? n - u : 16));
}

/* ---- Sixteen channels in the lanes ----
 * conv_avx2.c's lanes kernel (see there) at sixteen lanes: a depthwise KxK (3 or 5) convolution
 * of one filter a channel, no dilation, stride 1 across, or 2 for 5x5 filters (any down; which
 * layers conv.c gives it, it says), sixteen planes of one image at a time, each vector the
 * sixteen channels of one pixel. A band of output rows at a
 * time: its input rows transposed into T [rows][tw][16] with the padding's zeros, the sums made
 * there PX pixels at a time (the K K weight vectors in registers, one load a tap) into O
 * [pixels][16], transposed back into the planes through the epilogue. Each output's taps are
 * summed from 0 in the order (i, j), a padding tap adding its zero: the same sums as the other
 * depthwise kernels. At eight lanes (AVX2 instructions on AVX-512 CPUs) PP-OCRv3's 5x5 layers
 * on 6x160 took 1.85x ONNX Runtime's time. */
#define L16_PIXELS 1024 /* O at most this many pixels (64 KB) */

bool pd_kcpu_depthwise16_lanes_takes(const pd_k_conv2d *p) {
  return p->groups == p->c && p->oc == p->c && p->oc >= 16 && p->kh == p->kw &&
         (p->kw == 3 || p->kw == 5) && p->dil_h == 1 && p->dil_w == 1 &&
         (p->stride_w == 1 || (p->stride_w == 2 && p->kw == 5)) && p->oh > 0 && p->ow > 0;
}

static int64_t l16_band(const pd_k_conv2d *p) {
  int64_t r = L16_PIXELS / p->ow;
  return r < 1 ? 1 : r > p->oh ? p->oh : r;
}

size_t pd_kcpu_depthwise16_lanes_floats(const pd_k_conv2d *p) {
  int64_t br = l16_band(p), tw = (p->ow - 1) * p->stride_w + p->kw;
  return (size_t)(((br - 1) * p->stride_h + p->kh + 1) * tw + br * p->ow) * 16;
}

#define UNROLL16 _Pragma("GCC unroll 16")

/* The transpose of sixteen vectors as a 16x16 matrix (row r = r[r]). */
static inline __attribute__((always_inline)) AVX512 void transpose16(__m512 r[16]) {
  __m512 t[16];
  UNROLL8 for (int k = 0; k < 8; k++) {
    t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  UNROLL8 for (int k = 0; k < 4; k++) { /* 4x4 blocks of each 128-bit lane */
    r[4 * k] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
    r[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
    r[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
    r[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
  }
  UNROLL8 for (int k = 0; k < 4; k++) { /* the 128-bit lanes: rows k, k + 4 and k + 8, k + 12 */
    t[k] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0x88);
    t[k + 4] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0xDD);
    t[k + 8] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0x88);
    t[k + 12] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0xDD);
  }
  UNROLL8 for (int k = 0; k < 4; k++) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD);
    r[k + 4] = _mm512_shuffle_f32x4(t[k + 4], t[k + 12], 0x88);
    r[k + 12] = _mm512_shuffle_f32x4(t[k + 4], t[k + 12], 0xDD);
  }
}

/* T's nr input rows from iy0, each tw pixels of the sixteen planes from column -pad_left (plane
 * k at x + k hw); a row outside the image is left as it is (the sums read the zero row there). */
static AVX512 void l16_in(const pd_k_conv2d *p, const float *x, int64_t iy0, int64_t nr,
                          int64_t tw, float *t) {
  int64_t hw = p->h * p->w, pl = p->pad_left;
  int64_t n = p->w < tw - pl ? p->w : tw - pl; /* input columns T holds */
  if (n < 0) n = 0;
  const __m512 z = _mm512_setzero_ps();
  for (int64_t r = 0; r < nr; r++) {
    float *tr = t + r * tw * 16;
    int64_t iy = iy0 + r;
    if (iy < 0 || iy >= p->h) continue;
    for (int64_t c = 0; c < pl && c < tw; c++) _mm512_storeu_ps(tr + c * 16, z);
    const float *xr = x + iy * p->w;
    float *dst = tr + pl * 16;
    for (int64_t ix = 0; ix < n; ix += 16) {
      int64_t m = n - ix < 16 ? n - ix : 16;
      __mmask16 mk = pd_kcpu_first16(m);
      __m512 v[16];
      UNROLL16 for (int k = 0; k < 16; k++) v[k] = _mm512_maskz_loadu_ps(mk, xr + k * hw + ix);
      transpose16(v);
      if (m == 16) {
        UNROLL16 for (int k = 0; k < 16; k++) _mm512_storeu_ps(dst + (ix + k) * 16, v[k]);
      } else {
        for (int64_t k = 0; k < m; k++) _mm512_storeu_ps(dst + (ix + k) * 16, v[k]);
      }
    }
    for (int64_t c = pl + n; c < tw; c++) _mm512_storeu_ps(tr + c * 16, z);
  }
}

/* O's pixels [0, np) back into the sixteen output planes from pixel q0 (plane k at y + k ohw),
 * through the epilogue e (NULL: none): bias[k], plane k's residual from res + k ohw. */
static AVX512 void l16_out(const float *o, int64_t np, int64_t q0, int64_t ohw, float *y,
                           const pd_kcpu_epi16 *e, const float *bias, const float *res) {
  for (int64_t i = 0; i < np; i += 16) {
    int64_t m = np - i < 16 ? np - i : 16;
    __mmask16 mk = pd_kcpu_first16(m);
    __m512 v[16];
    UNROLL16 for (int k = 0; k < 16; k++)
      v[k] = k < m ? _mm512_loadu_ps(o + (i + k) * 16) : _mm512_setzero_ps();
    transpose16(v);
    UNROLL16 for (int k = 0; k < 16; k++) {
      __m512 r = v[k];
      int64_t at = k * ohw + q0 + i;
      if (e) {
        r = _mm512_add_ps(r, _mm512_set1_ps(bias ? bias[k] : 0.0f));
        if (res) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk, res + at));
        r = pd_kcpu_epi_act(e, r);
      }
      _mm512_mask_storeu_ps(y + at, mk, r);
    }
  }
}

/* PX pixels of one output row from ox: the taps of the K rows rp (T's, or the zero row outside
 * the image; SW across) times the weights wv, into O at orow. */
static inline __attribute__((always_inline)) AVX512 void l16_pixels(
    const float *const *rp, int64_t ox, const __m512 *wv, float *orow, int PX, int SW, int K) {
  __m512 a[8];
  UNROLL8 for (int u = 0; u < PX; u++) a[u] = _mm512_setzero_ps();
  UNROLL8 for (int i = 0; i < K; i++) UNROLL8 for (int j = 0; j < K; j++) {
      const float *s = rp[i] + (ox * SW + j) * 16;
      UNROLL8 for (int u = 0; u < PX; u++)
        a[u] = _mm512_fmadd_ps(_mm512_loadu_ps(s + u * SW * 16), wv[i * K + j], a[u]);
    }
  UNROLL8 for (int u = 0; u < PX; u++) _mm512_storeu_ps(orow + (ox + u) * 16, a[u]);
}

/* The band's sums: output rows [0, nrows) of ow pixels from T (its first row input row iy0 of
 * h; stride sh rows down) into O, a row outside the image read from zero; PX pixels at a time
 * (independent sums; the weights and they fill the registers). */
static inline __attribute__((always_inline)) AVX512 void l16_sums(
    const float *t, int64_t tw, int64_t sh, int64_t iy0, int64_t h, const float *zero,
    int64_t nrows, int64_t ow, const __m512 *wv, float *o, int SW, int K) {
  enum { PX = 6 };
  for (int64_t r = 0; r < nrows; r++) {
    const float *rp[5];
    UNROLL8 for (int i = 0; i < K; i++) {
      int64_t k = r * sh + i, iy = iy0 + k;
      rp[i] = iy < 0 || iy >= h ? zero : t + k * tw * 16;
    }
    float *orow = o + r * ow * 16;
    int64_t ox = 0;
    for (; ox + PX <= ow; ox += PX) l16_pixels(rp, ox, wv, orow, PX, SW, K);
    for (; ox < ow; ox++) l16_pixels(rp, ox, wv, orow, 1, SW, K);
  }
}

#define L16(name, SW, K)                                                                      \
  static AVX512 void name(const pd_k_conv2d *p, const float *x, const float *w, float *y,    \
                          const pd_kcpu_epi16 *e, const float *bias, const float *res,       \
                          float *scratch) {                                                   \
    int64_t sh = p->stride_h, ow = p->ow, ohw = p->oh * ow, br = l16_band(p);                \
    int64_t tw = (ow - 1) * SW + K;                                                           \
    float *t = scratch, *o = scratch + ((br - 1) * sh + K) * tw * 16, *zero = o + br * ow * 16; \
    if (p->pad_top > 0 || (p->oh - 1) * sh + K - p->pad_top > p->h) /* rows outside */       \
      memset(zero, 0, (size_t)(tw * 16) * sizeof(float));                                    \
    __m512 wv[K * K];                                                                         \
    UNROLL8 for (int k = 0; k < K * K; k++) {                                                 \
      float col[16];                                                                          \
      UNROLL16 for (int c = 0; c < 16; c++) col[c] = w[c * K * K + k];                        \
      wv[k] = _mm512_loadu_ps(col);                                                           \
    }                                                                                         \
    for (int64_t oy = 0; oy < p->oh; oy += br) {                                              \
      int64_t nr = p->oh - oy < br ? p->oh - oy : br;                                         \
      l16_in(p, x, oy * sh - p->pad_top, (nr - 1) * sh + K, tw, t);                          \
      l16_sums(t, tw, sh, oy * sh - p->pad_top, p->h, zero, nr, ow, wv, o, SW, K);            \
      l16_out(o, nr * ow, oy * ow, ohw, y, e, bias, res);                                     \
    }                                                                                         \
  }
L16(l16_s1_k3, 1, 3)
L16(l16_s1_k5, 1, 5)
L16(l16_s2_k5, 2, 5)
#undef L16

void pd_kcpu_depthwise16_lanes_f32(const pd_k_conv2d *p, const float *x, const float *w,
                                   int64_t plane, float *y, const pd_kcpu_epi16 *e,
                                   float *scratch) {
  pd_kcpu_dw_plane q = pd_kcpu_dw_plane_of(p, x, w, plane, y, e);
  const float *bias = e && e->rbias ? e->rbias + plane % p->oc : NULL;
  if (p->stride_w == 2) l16_s2_k5(p, q.x, q.w, q.y, e, bias, q.res, scratch);
  else (p->kw == 3 ? l16_s1_k3 : l16_s1_k5)(p, q.x, q.w, q.y, e, bias, q.res, scratch);
}

/* ---- Few input channels: an image's first layer (3 -> 8 or 16 channels, 3x3 at stride 2) ----
 * Through im2col each output pixel's 27 inputs were copied into a column panel (1.35 MB for a
 * 224x224 image) for a product of K 27, whose sums were loaded and stored again every few taps:
 * PP-LCNet's first layer took 198-228 us on one thread where ONNX Runtime's direct kernel takes
 * 152; here 137 (on two threads 104 -> 71 us; a DB detector's 3 -> 8 on 640x640 606 -> 356).
 * Sixteen output pixels of a row at a time: each tap's sixteen inputs are loaded once
 * (masked where they cross the row's edges: the padding's zeros; at stride 2, two loads and the
 * even lanes) and multiplied into the sums of up to FEWC_OB filters at once (OB chains of fused
 * multiply-adds, the tap's weight a broadcast operand), which are stored once through the
 * epilogue. Each sum adds its taps in the order (channel, i, j) from 0, as the column panel's
 * product does. */
#define FEWC_MAX_C 4 /* input channels taken */
#define FEWC_OB 16   /* filters a pass */

/* One pass of at most FEWC_OB filters: with two, each read the inputs again (3 -> 24 and 3 ->
 * 32 on 224x224 took as long as through im2col). */
bool pd_kcpu_conv_fewc16_takes(const pd_k_conv2d *p) {
  return p->groups == 1 && p->c <= FEWC_MAX_C && p->oc <= FEWC_OB && p->kh <= KW_MAX &&
         p->kw <= KW_MAX && p->stride_w <= 2 && p->dil_w == 1 && p->oh > 0 && p->ow > 0;
}

/* The filters [oc, c, kh, kw] as blocks of FEWC_OB: block b's tap t (in the order (channel, i,
 * j)) at packed + (b taps + t) FEWC_OB, its FEWC_OB filters' weights side by side (0 past oc),
 * so that a tap's weights are one line, each an immediate offset from one pointer. */
int64_t pd_kcpu_conv_fewc16_packed_floats(const pd_k_conv2d *p) {
  return (p->oc + FEWC_OB - 1) / FEWC_OB * FEWC_OB * p->c * p->kh * p->kw;
}

void pd_kcpu_conv_fewc16_pack(const pd_k_conv2d *p, const float *w, float *packed) {
  int64_t taps = p->c * p->kh * p->kw, nb = (p->oc + FEWC_OB - 1) / FEWC_OB;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t t = 0; t < taps; t++)
      for (int64_t o = 0; o < FEWC_OB; o++) {
        int64_t f = b * FEWC_OB + o;
        packed[(b * taps + t) * FEWC_OB + o] = f < p->oc ? w[f * taps + t] : 0.0f;
      }
}

/* Filters [o0, o0 + OB) (o0 a multiple of FEWC_OB; those past oc not stored) of output pixels
 * [ox, ox + 16) of row oy of one image (x its input, y its output), at stride S across; M: the
 * block's loads cross the row's edges (masked), else every one reads inside the row. */
static inline __attribute__((always_inline)) AVX512 void fewc_block(
    const pd_k_conv2d *p, const float *x, const float *packed, float *y, const pd_kcpu_epi16 *e,
    const float *res, int64_t oy, int64_t ox, int64_t o0, int OB, int S, int M) {
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  int64_t kh = p->kh, kw = p->kw, h = p->h, wd = p->w, ohw = p->oh * p->ow;
  int64_t taps = p->c * kh * kw, c0 = ox * S - p->pad_left;
  const float *wb = packed + o0 * taps;
  __m512 acc[FEWC_OB];
  UNROLL16 for (int o = 0; o < OB; o++) acc[o] = _mm512_setzero_ps();
  for (int64_t ci = 0, t = 0; ci < p->c; ci++)
    for (int64_t i = 0; i < kh; i++, t += kw) {
      int64_t iy = oy * p->stride_h - p->pad_top + i * p->dil_h;
      if (iy < 0 || iy >= h) continue; /* the padding's rows: their taps add 0 */
      const float *row = x + (ci * h + iy) * wd;
      for (int64_t j = 0; j < kw; j++) {
        int64_t c = c0 + j; /* lane l reads column c + S l */
        __m512 v = M ? _mm512_maskz_loadu_ps(lanes(c, wd), row + c) : _mm512_loadu_ps(row + c);
        if (S == 2)
          v = _mm512_permutex2var_ps(v, evens,
                                     M ? _mm512_maskz_loadu_ps(lanes(c + 16, wd), row + c + 16)
                                       : _mm512_loadu_ps(row + c + 16));
        const float *wt = wb + (t + j) * FEWC_OB;
        UNROLL16 for (int o = 0; o < OB; o++)
          acc[o] = _mm512_fmadd_ps(v, _mm512_set1_ps(wt[o]), acc[o]);
      }
    }
  __mmask16 mk = pd_kcpu_first16(p->ow - ox);
  UNROLL16 for (int o = 0; o < OB; o++) {
    if (o0 + o >= p->oc) break;
    __m512 r = acc[o];
    int64_t at = (o0 + o) * ohw + oy * p->ow + ox;
    if (e) {
      r = _mm512_add_ps(r, _mm512_set1_ps(e->rbias ? e->rbias[o0 + o] : 0.0f));
      if (res) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk, res + at));
      r = pd_kcpu_epi_act(e, r);
    }
    _mm512_mask_storeu_ps(y + at, mk, r);
  }
}

/* The instances: sixteen or eight filters a pass, stride 1 or 2 across. */
#define FEWC(name, OB, S)                                                                      \
  static AVX512 void name(const pd_k_conv2d *p, const float *x, const float *pk, float *y,    \
                          const pd_kcpu_epi16 *e, const float *res, int64_t oy, int64_t o0) { \
    for (int64_t ox = 0; ox < p->ow; ox += 16) {                                              \
      int64_t c0 = ox * S - p->pad_left; /* the loads' columns: [c0, c0 + 16 S + kw - 1) */    \
      if (c0 >= 0 && c0 + 16 * S + p->kw - 1 <= p->w)                                         \
        fewc_block(p, x, pk, y, e, res, oy, ox, o0, OB, S, 0);                                 \
      else                                                                                     \
        fewc_block(p, x, pk, y, e, res, oy, ox, o0, OB, S, 1);                                 \
    }                                                                                          \
  }
FEWC(fewc16_s1, 16, 1)
FEWC(fewc16_s2, 16, 2)
FEWC(fewc8_s1, 8, 1)
FEWC(fewc8_s2, 8, 2)
#undef FEWC

void pd_kcpu_conv_fewc16_row_f32(const pd_k_conv2d *p, const float *x, const float *packed,
                                 int64_t n, int64_t oy, float *y, const pd_kcpu_epi16 *e) {
  int64_t ohw = p->oh * p->ow;
  const float *xn = x + n * p->c * p->h * p->w;
  float *yn = y + n * p->oc * ohw;
  const float *res = e && e->res ? e->res + n * p->oc * ohw : NULL;
  for (int64_t o0 = 0; o0 < p->oc; o0 += FEWC_OB) {
    bool eight = p->oc - o0 <= 8;
    if (p->stride_w == 2) (eight ? fewc8_s2 : fewc16_s2)(p, xn, packed, yn, e, res, oy, o0);
    else (eight ? fewc8_s1 : fewc16_s1)(p, xn, packed, yn, e, res, oy, o0);
  }
}

/* ---- Column panels of small maps at stride 1 or 2 across ----
 * Where the output rows are narrower than a panel (ResNet50's 14x14 and 7x7 3x3 layers, and its
 * stride-2 ones onto 28x28, 14x14 and 7x7), each panel's 32 columns are pieces of several output
 * rows, and each of its kdim rows was copied run by run with the padding's zeros around each
 * (im2col_panels: 13% of a 3x3 convolution of 256 channels on 14x14, a quarter of one of 128
 * channels at stride 2 onto 28x28). Which lanes of a panel's two vectors come from which output
 * row, and which of them read inside the image for each filter column, depend on the panel
 * alone: made once a panel, they make each of its rows one masked load a piece of an output row
 * (at stride 2, two and the even lanes kept), merged in registers, and two stores. */
#define RUNS_MAX 17 /* pieces of output rows in a vector of sixteen columns */

/* ceil(a / 2) and floor(a / 2) for any sign (>> on a negative int64_t is arithmetic in GCC and
 * Clang). */
static inline int64_t half_up(int64_t a) { return (a + 1) >> 1; }
static inline int64_t half_down(int64_t a) { return a >> 1; }

AVX512 void pd_kcpu_im2col_small_f32(const pd_k_conv2d *p, const float *img, int64_t j0,
                                     int64_t j1, float *pack) {
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  int64_t cg = p->c / p->groups, kh = p->kh, kw = p->kw, ow = p->ow, w = p->w;
  int64_t kdim = cg * kh * kw, plane = p->h * w, sw = p->stride_w;
  for (int64_t q = j0; q < j1; q += 32) {
    float *panel = pack + (q - j0) * kdim;
    int64_t end = j1 - q < 32 ? q + (j1 - q) : q + 32;
    int nr[2] = {0, 0};
    int64_t oy_of[2][RUNS_MAX], off[2][RUNS_MAX][KW_MAX];
    __mmask16 mk[2][RUNS_MAX][KW_MAX], lo16[2][RUNS_MAX][KW_MAX], hi16[2][RUNS_MAX][KW_MAX];
    for (int v = 0; v < 2; v++) /* the pieces of vector v: pixels [a, b) of output row oy */
      for (int64_t a = q + 16 * v; a < end && a < q + 16 * v + 16;) {
        int64_t oy = a / ow, ox0 = a % ow, b = (oy + 1) * ow;
        if (b > end) b = end;
        if (b > q + 16 * v + 16) b = q + 16 * v + 16;
        int64_t l0 = a - q - 16 * v, l1 = b - q - 16 * v; /* its lanes */
        int k = nr[v]++;
        oy_of[v][k] = oy;
        for (int64_t j = 0; j < kw; j++) {
          /* lane l reads column o + sw l of the input row: those in [0, w) */
          int64_t o = (ox0 - l0) * sw - p->pad_left + j * p->dil_w;
          int64_t lo = sw == 1 ? -o : half_up(-o), hi = sw == 1 ? w - o : half_down(w - 1 - o) + 1;
          lo = lo < l0 ? l0 : lo, hi = hi > l1 ? l1 : hi;
          off[v][k][j] = o;
          mk[v][k][j] = pd_kcpu_span16(lo, hi);
          /* at stride 2, the inputs 2 lo .. 2 hi - 2 of the two loads at o and o + 16 */
          lo16[v][k][j] = pd_kcpu_span16(2 * lo, 2 * hi - 1);
          hi16[v][k][j] = pd_kcpu_span16(2 * lo - 16, 2 * hi - 17);
        }
        a = b;
      }
    for (int64_t ci = 0; ci < cg; ci++)
      for (int64_t i = 0; i < kh; i++) {
        const float *row[2][RUNS_MAX]; /* each piece's input row, NULL in the padding */
        for (int v = 0; v < 2; v++)
          for (int k = 0; k < nr[v]; k++) {
            int64_t iy = oy_of[v][k] * p->stride_h - p->pad_top + i * p->dil_h;
            row[v][k] = iy < 0 || iy >= p->h ? NULL : img + ci * plane + iy * w;
          }
        for (int64_t j = 0; j < kw; j++) {
          float *d = panel + ((ci * kh + i) * kw + j) * 32;
          for (int v = 0; v < 2; v++) {
            __m512 acc = _mm512_setzero_ps();
            for (int k = 0; k < nr[v]; k++) {
              __mmask16 m = mk[v][k][j];
              if (!row[v][k] || !m) continue;
              const float *s = row[v][k] + off[v][k][j];
              if (sw == 1) {
                acc = _mm512_mask_loadu_ps(acc, m, s);
              } else {
                __m512 e = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo16[v][k][j], s), evens,
                                                  _mm512_maskz_loadu_ps(hi16[v][k][j], s + 16));
                acc = _mm512_mask_mov_ps(acc, m, e);
              }
            }
            _mm512_storeu_ps(d + 16 * v, acc);
          }
        }
      }
  }
}

/* ---- 2x2 average pooling at stride 2 (fp32), a plane at a time ----
 * pool2d_t.h's pool_2x2 sixteen windows a vector: each window's ((a + b) + c) + d in double,
 * over 4, rounded to float, in its order (the same bits); a and b the even and odd lanes of two
 * loads of the upper row, c and d of the lower. Its scalar loop took 0.23 ms of ResNet50-vd's
 * batch-1 time for [256, 56, 56] (ResNet-D's shortcuts), these 0.13 (ONNX Runtime's 0.08). */
static inline __attribute__((always_inline)) AVX512 __m512d lo8(__m512 v) {
  return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}

static inline __attribute__((always_inline)) AVX512 __m512d hi8(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

static inline __attribute__((always_inline)) AVX512 __m256 mean4(__m512d a, __m512d b, __m512d c,
                                                                 __m512d d) {
  return _mm512_cvtpd_ps(_mm512_mul_pd(
      _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(a, b), c), d), _mm512_set1_pd(0.25)));
}

AVX512 void pd_kcpu_avgpool2x2_16_plane_f32(const pd_k_pool2d *p, const float *x, float *y) {
  const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  for (int64_t oy = 0; oy < p->oh; oy++) {
    const float *r0 = x + 2 * oy * p->w, *r1 = r0 + p->w;
    float *o = y + oy * p->ow;
    for (int64_t ox = 0; ox < p->ow; ox += 16) {
      int64_t n = p->ow - ox < 16 ? p->ow - ox : 16;
      __mmask16 m0 = pd_kcpu_first16(2 * n), m1 = pd_kcpu_first16(2 * n - 16);
      __m512 u0 = _mm512_maskz_loadu_ps(m0, r0 + 2 * ox);
      __m512 u1 = _mm512_maskz_loadu_ps(m1, r0 + 2 * ox + 16);
      __m512 l0 = _mm512_maskz_loadu_ps(m0, r1 + 2 * ox);
      __m512 l1 = _mm512_maskz_loadu_ps(m1, r1 + 2 * ox + 16);
      __m512 a = _mm512_permutex2var_ps(u0, ev, u1), b = _mm512_permutex2var_ps(u0, od, u1);
      __m512 c = _mm512_permutex2var_ps(l0, ev, l1), d = _mm512_permutex2var_ps(l0, od, l1);
      __m256 lo = mean4(lo8(a), lo8(b), lo8(c), lo8(d));
      __m256 hi = mean4(hi8(a), hi8(b), hi8(c), hi8(d));
      __m512d both = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)),
                                        _mm256_castps_pd(hi), 1);
      _mm512_mask_storeu_ps(o + ox, pd_kcpu_first16(n), _mm512_castpd_ps(both));
    }
  }
}

/* ---- Global average pooling (fp32): the mean of each plane ----
 * adaptive_pool_t.h's plane_mean, four planes at a time: each plane's eight double lanes one
 * vector (element i into lane i % 8 in order, the last ones' other lanes adding 0, which
 * leaves a lane as it is: a sum from +0 is never -0), added in its fixed tree; the same bits.
 * One plane's additions are one chain; four chains side by side (an SE block's pooling of
 * MobileNetV3's [16, 672, 14, 14] read at half the speed of memory as one chain of the
 * compiler's two-lane vectors). */
static inline __attribute__((always_inline)) AVX512 float mean_tree(__m512d v, int64_t n) {
  double a[8];
  _mm512_storeu_pd(a, v);
  return (float)((((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))) /
                 (double)n);
}

/* The floats of s in mask m (the first few of eight), the others 0, as doubles. */
static inline __attribute__((always_inline)) AVX512 __m512d tail8(__mmask16 m, const float *s) {
  return _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_maskz_loadu_ps(m, s)));
}

/* The means of K planes (K 1 or 4: the instances below) from x, n floats each, into y. */
static inline __attribute__((always_inline)) AVX512 void plane_means(int K, const float *x,
                                                                      int64_t n, float *y) {
  int64_t body = n / 8 * 8;
  __mmask16 tail = (__mmask16)((1u << (n - body)) - 1u);
  __m512d a[4];
  UNROLL8 for (int q = 0; q < K; q++) a[q] = _mm512_setzero_pd();
  for (int64_t i = 0; i < body; i += 8)
    UNROLL8 for (int q = 0; q < K; q++)
      a[q] = _mm512_add_pd(a[q], _mm512_cvtps_pd(_mm256_loadu_ps(x + q * n + i)));
  if (tail)
    UNROLL8 for (int q = 0; q < K; q++) a[q] = _mm512_add_pd(a[q], tail8(tail, x + q * n + body));
  UNROLL8 for (int q = 0; q < K; q++) y[q] = mean_tree(a[q], n);
}

AVX512 void pd_kcpu_plane_means16_f32(const float *x, int64_t n, int64_t planes, float *y) {
  int64_t q = 0;
  for (; q + 4 <= planes; q += 4) plane_means(4, x + q * n, n, y + q);
  for (; q < planes; q++) plane_means(1, x + q * n, n, y + q);
}

/* ---- Max pooling (fp32), a plane at a time ----
 * An output row: the maximum of its windows' input rows, column by column, into `row` (w floats
 * the caller owns; the input row itself where the window has one row), then of kw consecutive
 * columns of that, sixteen outputs a vector (at stride 2 the even lanes of two loads). The
 * windows crossing the row's ends (the padding, ceil mode's last) are conv_t.h's loop. That loop
 * is the definition, NaN included: a window's first element (row by row) starts its maximum and
 * a later one replaces it only when greater, so a NaN counts only where it comes first. Here
 * the maxima ignore NaN (maxnum) and a window whose first element is NaN gives that NaN: the same
 * results. The loop took 1.04 ms of ResNet50's 42 (64 planes of 112x112, 3x3 at stride 2). */
bool pd_kcpu_maxpool16_takes(const pd_k_pool2d *p) {
  return p->type == PD_K_POOL_MAX && p->stride_w <= 2;
}

/* The larger of a and b, the other where one is NaN (NaN where both are). */
static inline __attribute__((always_inline)) AVX512 __m512 maxnum(__m512 a, __m512 b) {
  __m512 m = _mm512_max_ps(a, b); /* b where either is NaN */
  return _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q), a);
}

/* Sixteen (n of them) elements of s, sw (1 or 2) apart, lanes past n 0. */
static inline __attribute__((always_inline)) AVX512 __m512 strided(const float *s, int64_t n,
                                                                   int64_t sw) {
  return sw == 1 ? _mm512_maskz_loadu_ps(pd_kcpu_first16(n), s) : evens16(s, n);
}

AVX512 void pd_kcpu_maxpool16_plane_f32(const pd_k_pool2d *p, const float *x, float *y,
                                        float *row) {
  int64_t w = p->w, sw = p->stride_w, pl = p->pad_left, kw = p->kw, ow = p->ow;
  /* the output columns whose windows lie inside the row: [lo, hi) */
  int64_t lo = (pl + sw - 1) / sw, hi = w - kw + pl >= 0 ? (w - kw + pl) / sw + 1 : 0;
  if (lo > ow) lo = ow;
  if (hi > ow) hi = ow;
  if (hi < lo) hi = lo;
  for (int64_t oy = 0; oy < p->oh; oy++) {
    int64_t y0 = oy * p->stride_h - p->pad_top, ys = y0 < 0 ? 0 : y0;
    int64_t ye = y0 + p->kh > p->h ? p->h : y0 + p->kh;
    const float *r0 = x + ys * w, *t = r0;
    float *yr = y + oy * ow;
    if (ye - ys > 1) {
      for (int64_t c = 0; c < w; c += 16) {
        __mmask16 m = pd_kcpu_first16(w - c);
        __m512 v = _mm512_maskz_loadu_ps(m, r0 + c);
        for (int64_t iy = ys + 1; iy < ye; iy++)
          v = maxnum(_mm512_maskz_loadu_ps(m, x + iy * w + c), v);
        _mm512_mask_storeu_ps(row + c, m, v);
      }
      t = row;
    }
    for (int64_t ox = lo; ox < hi; ox += 16) {
      int64_t n = hi - ox < 16 ? hi - ox : 16, c0 = ox * sw - pl;
      __m512 acc = strided(t + c0, n, sw);
      for (int64_t j = 1; j < kw; j++) acc = maxnum(strided(t + c0 + j, n, sw), acc);
      __m512 first = strided(r0 + c0, n, sw); /* each window's first element */
      acc = _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(first, first, _CMP_UNORD_Q), first);
      _mm512_mask_storeu_ps(yr + ox, pd_kcpu_first16(n), acc);
    }
    for (int64_t ox = 0; ox < ow; ox++) { /* the windows crossing the row's ends */
      if (ox == lo) ox = hi;
      if (ox >= ow) break;
      int64_t x0 = ox * sw - pl, xs = x0 < 0 ? 0 : x0, xe = x0 + kw > w ? w : x0 + kw;
      float acc = x[ys * w + xs];
      for (int64_t iy = ys; iy < ye; iy++)
        for (int64_t ix = xs; ix < xe; ix++)
          if (x[iy * w + ix] > acc) acc = x[iy * w + ix];
      yr[ox] = acc;
    }
  }
}

/* ---- The data gradient of a 2x2 convolution of stride 2 (the transposed convolution of an
 * upsampling head) ----
 * Row y of channel c of dx takes a = y % 2 of the filter and row i = y / 2 of dy; its columns
 * 2j and 2j + 1 are sum_o dy[o][i][j] w[o][c][a][0] and ... w[o][c][a][1]. Sixteen columns of
 * dy, each duplicated into two lanes (one permute per half), times the weight pair (w[o][c][a][0],
 * w[o][c][a][1]) broadcast as one 64-bit value, accumulate 32 columns of dx; CO channels at a
 * time share the duplicated vectors. Through the column matrix (a GEMM of K = input channels,
 * then col2im's scatter over a cleared dx) DB's [24, 160, 160] -> [24, 320, 320] took 19 ms an
 * image, one thread. */
#define CO 8
#define UNROLL_CO _Pragma("GCC unroll 8")

bool pd_kcpu_unstride2_takes(const pd_k_conv2d *p) {
  return p->kh == 2 && p->kw == 2 && p->stride_h == 2 && p->stride_w == 2 && p->groups == 1 &&
         p->dil_h == 1 && p->dil_w == 1 && p->pad_top == 0 && p->pad_bottom == 0 &&
         p->pad_left == 0 && p->pad_right == 0 && p->h == 2 * p->oh && p->w == 2 * p->ow;
}

/* NC channels (1..CO) from c of dx row y (2i + a), image n; rows holds row i of dy's every
 * channel, ow floats apart. */
static inline __attribute__((always_inline)) AVX512 void unstride_row(
    int NC, const pd_k_conv2d *p, const float *w, const float *rows, float *dxn, int64_t c,
    int64_t y) {
  int64_t a = y % 2, ow = p->ow, W = p->w;
  const __m512i lo = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  const __m512i hi = _mm512_set_epi32(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8);
  for (int64_t j0 = 0; j0 < ow; j0 += 16) {
    int64_t left = ow - j0;
    __mmask16 m = pd_kcpu_first16(left);
    __m512 acc[CO][2];
    UNROLL_CO for (int k = 0; k < NC; k++) acc[k][0] = acc[k][1] = _mm512_setzero_ps();
    const float *src = rows + j0;
    for (int64_t o = 0; o < p->oc; o++) {
      __m512 v = _mm512_maskz_loadu_ps(m, src + o * ow);
      __m512 dl = _mm512_permutexvar_ps(lo, v), dh = _mm512_permutexvar_ps(hi, v);
      const float *wp = w + ((o * p->c + c) * 2 + a) * 2; /* w[o][c][a][0..1] */
      UNROLL_CO for (int k = 0; k < NC; k++) {
        int64_t pair;
        memcpy(&pair, wp + k * 4, sizeof pair); /* w[o][c + k][a][0..1] */
        __m512 wv = _mm512_castsi512_ps(_mm512_set1_epi64(pair));
        acc[k][0] = _mm512_fmadd_ps(dl, wv, acc[k][0]);
        acc[k][1] = _mm512_fmadd_ps(dh, wv, acc[k][1]);
      }
    }
    /* 2 * left columns of dx from 2 * j0: the first vector's 16, then the rest */
    int64_t n0 = 2 * left >= 16 ? 16 : 2 * left, n1 = 2 * left - 16;
    __mmask16 m0 = pd_kcpu_first16(n0), m1 = pd_kcpu_first16(n1);
    UNROLL_CO for (int k = 0; k < NC; k++) {
      float *dst = dxn + ((c + k) * p->h + y) * W + 2 * j0;
      _mm512_mask_storeu_ps(dst, m0, acc[k][0]);
      if (m1) _mm512_mask_storeu_ps(dst + 16, m1, acc[k][1]);
    }
  }
}

AVX512 void pd_kcpu_unstride2_row16_f32(const pd_k_conv2d *p, const float *w, const float *rows,
                                        float *dxn, int64_t y) {
  int64_t c = 0;
  for (; c + CO <= p->c; c += CO) unstride_row(CO, p, w, rows, dxn, c, y);
  switch (p->c - c) {
    case 7: unstride_row(7, p, w, rows, dxn, c, y); break;
    case 6: unstride_row(6, p, w, rows, dxn, c, y); break;
    case 5: unstride_row(5, p, w, rows, dxn, c, y); break;
    case 4: unstride_row(4, p, w, rows, dxn, c, y); break;
    case 3: unstride_row(3, p, w, rows, dxn, c, y); break;
    case 2: unstride_row(2, p, w, rows, dxn, c, y); break;
    case 1: unstride_row(1, p, w, rows, dxn, c, y); break;
    default: break;
  }
}

/* ---- A product made transposed (conv.c's small maps), back into the output's rows ---- */

/* Blocks of 16 pixels by 16 filters, each transposed in registers (transpose16; a gather of a
 * filter's sixteen pixels took 0.22 of a 14x14 layer's time). */
AVX512 void pd_kcpu_untranspose16_f32(int64_t np, int64_t nf, const float *t, int64_t ldt,
                                      float *y, int64_t ldy, const pd_kcpu_epi16 *e) {
  for (int64_t f = 0; f < nf; f += 16) {
    __mmask16 mf = pd_kcpu_first16(nf - f);
    int cn = nf - f < 16 ? (int)(nf - f) : 16;
    for (int64_t p = 0; p < np; p += 16) {
      __mmask16 mp = pd_kcpu_first16(np - p);
      __m512 r[16];
      for (int i = 0; i < 16; i++)
        r[i] = p + i < np ? _mm512_maskz_loadu_ps(mf, t + (p + i) * ldt + f) : _mm512_setzero_ps();
      transpose16(r);
      for (int c = 0; c < cn; c++) {
        /* the additions of gemm_avx512.c's epilogues, so that the bits are theirs: a bias of 0
         * added without a residual (-0 becomes +0), none with one */
        const float *res = e && e->res ? e->res + (f + c) * e->ldres + p : NULL;
        __m512 x = r[c];
        if (e && (e->rbias || !res))
          x = _mm512_add_ps(x, _mm512_set1_ps(e->rbias ? e->rbias[f + c] : 0.0f));
        if (res) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mp, res));
        if (e) x = pd_kcpu_epi_act(e, x);
        _mm512_mask_storeu_ps(y + (f + c) * ldy + p, mp, x);
      }
    }
  }
}
#endif
