/* conv_avx512.c -- the fp32 depthwise convolution (a filter per input channel: MobileNet's,
 * PP-LCNet's, the OCR backbones') for AVX-512F CPUs, one output plane a call (conv.c splits the
 * planes across the pool). Each output row is computed sixteen columns at a time, eight rows at
 * once (independent sums), the kh * kw taps accumulated in registers with fused multiply-adds (the
 * tap's weight a broadcast operand) and stored once; filters 3 and 5 wide have instances of their
 * own, their taps unrolled (PicoDet's 5x5 on 40x40: 339 -> 228 us a layer of 96 channels, one
 * thread); the window reads are loads of the input row itself, masked where they cross its edges
 * (the zero padding: masked-off lanes read nothing and hold 0), and the rows outside the input are
 * skipped. A stride of 2 loads 32 consecutive inputs and keeps the even ones (one permute). The
 * masks depend on the column block and the tap only, so the blocks are the outer loop. conv_t.h's
 * depthwise_planes, which this replaces there, made kh * kw passes over each output plane, the
 * stride-2 ones scalar: MobileNetV3's 15 depthwise layers at 224x224 took 3.6 ms of its 11 ms. (A
 * first version copied each plane into a zero-bordered scratch plane first: the copy took as long
 * as the arithmetic.) Each output is its taps added in the order (i, j) row by row, as there, but
 * fused: results differ from it in the last bits. A fused convolution's epilogue (bias, residual,
 * a piecewise-linear activation) is applied to each vector before it is stored. Also the data
 * gradient of a 2x2 convolution of stride 2, the transposed convolution of upsampling heads
 * (pd_kcpu_unstride2_row16_f32). Compiled with a function attribute; nothing calls it on a CPU without
 * AVX-512F (pd_kcpu_simd). */
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
static __mmask16 lanes(int64_t c0, int64_t w) {
  int64_t lo = c0 < 0 ? -c0 : 0, hi = w - c0 < 16 ? w - c0 : 16;
  if (hi <= lo) return 0;
  return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* Columns [ox, ox + 16) of R output rows of plane yc from row oy, at stride S (R and S constants
 * in the instances below, so that the loops unroll): the taps' loads at row iy, column c0 + j dw
 * come from the input plane xc with the masks m[j] (and m2[j] for a stride-2 block's second
 * half). The R rows' sums are independent chains of fused multiply-adds: with one row at a time
 * each waited on the one before (four cycles a tap), and PicoDet's 5x5 layers ran at a tenth of
 * the FMA rate. Each sum still adds its taps in the order (i, j). */
static inline __attribute__((always_inline)) AVX512 void rows_block(
    const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox, int64_t oy, float *yc,
    const pd_kcpu_epi16 *e, float bias, const float *rc, const __mmask16 *m, const __mmask16 *m2,
    __mmask16 mk, int R, int S, int KW) {
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  int64_t kh = p->kh, kw = p->kw, dh = p->dil_h, dw = p->dil_w, ow = p->ow, w = p->w;
  int64_t c0 = ox * S - p->pad_left;
  __m512 acc[8];
  UNROLL8 for (int r = 0; r < 8; r++) acc[r] = _mm512_setzero_ps();
  if (KW) kw = KW, dw = 1; /* a constant width: the taps unroll, their offsets immediates */
  for (int64_t i = 0; i < kh; i++) {
    const float *wr = wc + i * kw, *row[8];
    UNROLL8 for (int r = 0; r < R; r++) { /* the rows of tap row i, NULL outside the input */
      int64_t iy = (oy + r) * p->stride_h - p->pad_top + i * dh;
      row[r] = iy < 0 || iy >= p->h ? NULL : xc + iy * w + c0;
    }
    UNROLL8 for (int64_t j = 0; j < kw; j++) {
      __m512 wv = _mm512_set1_ps(wr[j]);
      UNROLL8 for (int r = 0; r < R; r++) {
        if (!row[r]) continue;
        const float *src = row[r] + j * dw;
        __m512 v;
        if (S == 1) {
          v = _mm512_maskz_loadu_ps(m[j], src);
        } else {
          __m512 lo = _mm512_maskz_loadu_ps(m[j], src);
          __m512 hi = _mm512_maskz_loadu_ps(m2[j], src + 16);
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

/* Columns [ox, ox + 16) of every output row: eight rows at a time, then four, two, one. */
static inline __attribute__((always_inline)) AVX512 void block(
    const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox, float *yc,
    const pd_kcpu_epi16 *e, float bias, const float *rc, int S, int KW) {
  int64_t kw = p->kw, dw = p->dil_w, w = p->w;
  int64_t c0 = ox * S - p->pad_left;
  __mmask16 m[KW_MAX], m2[KW_MAX];
  for (int64_t j = 0; j < kw; j++) {
    m[j] = lanes(c0 + j * dw, w);
    m2[j] = S == 2 ? lanes(c0 + j * dw + 16, w) : 0;
  }
  int64_t left = p->ow - ox;
  __mmask16 mk = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
  int64_t oy = 0;
  for (; oy + 8 <= p->oh; oy += 8)
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, 8, S, KW);
  if (oy + 4 <= p->oh) {
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, 4, S, KW);
    oy += 4;
  }
  if (oy + 2 <= p->oh) {
    rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, 2, S, KW);
    oy += 2;
  }
  if (oy < p->oh) rows_block(p, xc, wc, ox, oy, yc, e, bias, rc, m, m2, mk, 1, S, KW);
}

/* One instance per stride (1, 2) and width (3, 5 without dilation: MobileNet's, PP-LCNet's,
 * PicoDet's; any other as a variable). */
#define PLANE(name, S, KW)                                                                   \
  static AVX512 void name(const pd_k_conv2d *p, const float *xc, const float *wc, float *yc, \
                          const pd_kcpu_epi16 *e, float bias, const float *rc) {             \
    for (int64_t ox = 0; ox < p->ow; ox += 16) block(p, xc, wc, ox, yc, e, bias, rc, S, KW); \
  }
PLANE(plane_s1, 1, 0)
PLANE(plane_s2, 2, 0)
PLANE(plane_s1_k3, 1, 3)
PLANE(plane_s2_k3, 2, 3)
PLANE(plane_s1_k5, 1, 5)
PLANE(plane_s2_k5, 2, 5)
#undef PLANE

void pd_kcpu_depthwise16_f32(const pd_k_conv2d *p, const float *x, const float *w, int64_t plane,
                             float *y, const pd_kcpu_epi16 *e) {
  pd_kcpu_dw_plane q = pd_kcpu_dw_plane_of(p, x, w, plane, y, e);
  if (p->stride_w == 1)
    (q.kw == 3 ? plane_s1_k3 : q.kw == 5 ? plane_s1_k5 : plane_s1)(p, q.x, q.w, q.y, e, q.bias,
                                                                            q.res);
  else
    (q.kw == 3 ? plane_s2_k3 : q.kw == 5 ? plane_s2_k5 : plane_s2)(p, q.x, q.w, q.y, e, q.bias,
                                                                            q.res);
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
    __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
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
    __mmask16 m0 = n0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n0) - 1u);
    __mmask16 m1 = n1 >= 16 ? (__mmask16)0xffff : n1 > 0 ? (__mmask16)((1u << n1) - 1u) : 0;
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
#endif
