/* conv_avx512.c -- the fp32 depthwise convolution (a filter per input channel: MobileNet's,
 * PP-LCNet's, the OCR backbones') for AVX-512F CPUs, one output plane a call (conv.c splits the
 * planes across the pool). Each output row is computed sixteen columns at a time, the kh * kw
 * taps accumulated in a register with fused multiply-adds (the tap's weight a broadcast
 * operand) and stored once; the window reads are loads of the input row itself, masked where
 * they cross its edges (the zero padding: masked-off lanes read nothing and hold 0), and the rows
 * outside the input are skipped. A stride of 2 loads 32 consecutive inputs and keeps the even
 * ones (one permute). The masks depend on the column block and the tap only, so the blocks are
 * the outer loop. conv_t.h's depthwise_planes, which this replaces there, made kh * kw passes
 * over each output plane, the stride-2 ones scalar: MobileNetV3's 15 depthwise layers at
 * 224x224 took 3.6 ms of its 11 ms. (A first version copied each plane into a zero-bordered
 * scratch plane first: the copy took as long as the arithmetic.) Each output is its taps added
 * in the order (i, j) row by row, as there, but fused: results differ from it in the last bits.
 * A fused convolution's epilogue (bias, residual, a piecewise-linear activation) is applied to
 * each vector before it is stored. Compiled with a function attribute; nothing calls it on a
 * CPU without AVX-512F (pd_kcpu_simd). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>

#include "kernels/cpu/epi_avx512.h"

#define AVX512 __attribute__((target("avx512f,fma")))
#define KW_MAX 16 /* filter widths taken */

bool pd_kcpu_depthwise16_takes(const pd_k_conv2d *p) {
  return p->stride_w <= 2 && p->groups == p->c && p->oc % p->groups == 0 && p->kw <= KW_MAX;
}

/* The lanes of a 16-float load at input column c0 that lie in [0, w). */
static __mmask16 lanes(int64_t c0, int64_t w) {
  int64_t lo = c0 < 0 ? -c0 : 0, hi = w - c0 < 16 ? w - c0 : 16;
  if (hi <= lo) return 0;
  return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* Columns [ox, ox + 16) of the output plane yc, every row, at stride S (a constant in the
 * instances below, so that the loops unroll): the taps' loads at row iy, column c0 + j dw come
 * from the input plane xc with the masks m[j] (and m2[j] for a stride-2 block's second half). */
static inline __attribute__((always_inline)) AVX512 void block(
    const pd_k_conv2d *p, const float *xc, const float *wc, int64_t ox, float *yc,
    const pd_kcpu_epi16 *e, float bias, const float *rc, int S) {
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  int64_t kh = p->kh, kw = p->kw, dh = p->dil_h, dw = p->dil_w, ow = p->ow, w = p->w;
  int64_t c0 = ox * S - p->pad_left;
  __mmask16 m[KW_MAX], m2[KW_MAX];
  for (int64_t j = 0; j < kw; j++) {
    m[j] = lanes(c0 + j * dw, w);
    m2[j] = S == 2 ? lanes(c0 + j * dw + 16, w) : 0;
  }
  int64_t left = ow - ox;
  __mmask16 mk = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
  for (int64_t oy = 0; oy < p->oh; oy++) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < kh; i++) {
      int64_t iy = oy * p->stride_h - p->pad_top + i * dh;
      if (iy < 0 || iy >= p->h) continue;
      const float *src = xc + iy * w + c0;
      const float *wr = wc + i * kw;
      for (int64_t j = 0; j < kw; j++) {
        __m512 v;
        if (S == 1) {
          v = _mm512_maskz_loadu_ps(m[j], src + j * dw);
        } else {
          __m512 lo = _mm512_maskz_loadu_ps(m[j], src + j * dw);
          __m512 hi = _mm512_maskz_loadu_ps(m2[j], src + j * dw + 16);
          v = _mm512_permutex2var_ps(lo, evens, hi);
        }
        acc = _mm512_fmadd_ps(v, _mm512_set1_ps(wr[j]), acc);
      }
    }
    if (e) {
      acc = _mm512_add_ps(acc, _mm512_set1_ps(bias));
      if (rc) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mk, rc + oy * ow + ox));
      acc = pd_kcpu_epi_act(e, acc);
    }
    _mm512_mask_storeu_ps(yc + oy * ow + ox, mk, acc);
  }
}

static AVX512 void plane_s1(const pd_k_conv2d *p, const float *xc, const float *wc, float *yc,
                            const pd_kcpu_epi16 *e, float bias, const float *rc) {
  for (int64_t ox = 0; ox < p->ow; ox += 16) block(p, xc, wc, ox, yc, e, bias, rc, 1);
}

static AVX512 void plane_s2(const pd_k_conv2d *p, const float *xc, const float *wc, float *yc,
                            const pd_kcpu_epi16 *e, float bias, const float *rc) {
  for (int64_t ox = 0; ox < p->ow; ox += 16) block(p, xc, wc, ox, yc, e, bias, rc, 2);
}

void pd_kcpu_depthwise16_f32(const pd_k_conv2d *p, const float *x, const float *w, int64_t plane,
                             float *y, const pd_kcpu_epi16 *e) {
  int64_t ocg = p->oc / p->groups, n = plane / p->oc, oc = plane % p->oc, ic = oc / ocg;
  int64_t ohw = p->oh * p->ow;
  const float *xc = x + (n * p->c + ic) * p->h * p->w, *wc = w + oc * p->kh * p->kw;
  float *yc = y + plane * ohw;
  float bias = e && e->rbias ? e->rbias[oc] : 0.0f;
  const float *rc = e && e->res ? e->res + plane * ohw : NULL;
  if (p->stride_w == 1) plane_s1(p, xc, wc, yc, e, bias, rc);
  else plane_s2(p, xc, wc, yc, e, bias, rc);
}
#endif
