/* conv_avx512.c -- the fp32 depthwise convolution (a filter per input channel: MobileNet's,
 * PP-LCNet's, the OCR backbones') for AVX-512F CPUs, one output plane a call (conv.c splits the
 * planes across the pool). The input plane is first copied into a zero-bordered scratch plane, so
 * that every window read is a plain load; then each output row is computed sixteen columns at a
 * time, the kh * kw taps accumulated in a register with fused multiply-adds (the tap's weight a
 * broadcast operand) and stored once. A stride of 2 loads 32 consecutive inputs and keeps the
 * even ones (one permute). conv_t.h's depthwise_planes, which this replaces there, made kh * kw
 * passes over each output plane, the stride-2 ones scalar: MobileNetV3's 15 depthwise layers at
 * 224x224 took 3.6 ms of its 11 ms. Each output is its taps added in the order (i, j) row by
 * row, as there, but fused: results differ from it in the last bits. Compiled with a function
 * attribute; nothing calls it on a CPU without AVX-512F (pd_kcpu_simd). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/epi_avx512.h"

#define AVX512 __attribute__((target("avx512f,fma")))

/* The scratch plane: enough rows for every window row, and columns for the last 16-column
 * block's loads (32 inputs a block at stride 2) at every tap. */
static int64_t pad_width(const pd_k_conv2d *p) {
  int64_t blocks = (p->ow + 15) / 16;
  return blocks * 16 * p->stride_w + (p->kw - 1) * p->dil_w + 16;
}

static int64_t pad_height(const pd_k_conv2d *p) {
  return (p->oh - 1) * p->stride_h + (p->kh - 1) * p->dil_h + 1;
}

bool pd_kcpu_depthwise16_scratch(const pd_k_conv2d *p, size_t *floats) {
  if (p->stride_w > 2 || p->groups != p->c || p->oc % p->groups) return false;
  int64_t n = pad_width(p) * pad_height(p);
  if (n <= 0 || n > ((int64_t)1 << 26)) return false;
  *floats = (size_t)n;
  return true;
}

/* Input plane xc [h, w] into pad [ph, pw]: row r, column q of pad holds input row r - pad_top,
 * column q - pad_left, 0 outside the input. */
static void fill_pad(const pd_k_conv2d *p, const float *xc, float *pad, int64_t ph,
                     int64_t pw) {
  for (int64_t r = 0; r < ph; r++) {
    float *d = pad + r * pw;
    int64_t iy = r - p->pad_top;
    if (iy < 0 || iy >= p->h) {
      memset(d, 0, (size_t)pw * sizeof(float));
      continue;
    }
    int64_t lo = p->pad_left < pw ? p->pad_left : pw;
    int64_t n = p->w < pw - lo ? p->w : pw - lo;
    memset(d, 0, (size_t)lo * sizeof(float));
    memcpy(d + lo, xc + iy * p->w, (size_t)n * sizeof(float));
    memset(d + lo + n, 0, (size_t)(pw - lo - n) * sizeof(float));
  }
}

/* One output row of KW taps a window row at stride S (a constant in the instances below, so
 * that the loops unroll), the sum of rows [0, kh) of the window. */
static inline __attribute__((always_inline)) AVX512 void row_taps(
    const pd_k_conv2d *p, const float *pad, int64_t pw, const float *wc, int64_t oy, float *yr,
    const pd_kcpu_epi16 *e, float bias, const float *rr, int S) {
  const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  int64_t kh = p->kh, kw = p->kw, dh = p->dil_h, dw = p->dil_w, ow = p->ow;
  for (int64_t ox = 0; ox < ow; ox += 16) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < kh; i++) {
      const float *src = pad + (oy * p->stride_h + i * dh) * pw + ox * S;
      const float *wr = wc + i * kw;
      for (int64_t j = 0; j < kw; j++) {
        __m512 v;
        if (S == 1) {
          v = _mm512_loadu_ps(src + j * dw);
        } else {
          __m512 a = _mm512_loadu_ps(src + j * dw), b = _mm512_loadu_ps(src + j * dw + 16);
          v = _mm512_permutex2var_ps(a, evens, b);
        }
        acc = _mm512_fmadd_ps(v, _mm512_set1_ps(wr[j]), acc);
      }
    }
    int64_t left = ow - ox;
    __mmask16 mk = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
    if (e) {
      acc = _mm512_add_ps(acc, _mm512_set1_ps(bias));
      if (rr) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(mk, rr + ox));
      acc = pd_kcpu_epi_act(e, acc);
    }
    _mm512_mask_storeu_ps(yr + ox, mk, acc);
  }
}

#define ROWS(S)                                                                          \
  for (int64_t oy = 0; oy < p->oh; oy++)                                                 \
    row_taps(p, pad, pw, wc, oy, yc + oy * p->ow, e, bias, rc ? rc + oy * p->ow : NULL, S)

static AVX512 void rows_s1(const pd_k_conv2d *p, const float *pad, int64_t pw, const float *wc,
                           float *yc, const pd_kcpu_epi16 *e, float bias, const float *rc) {
  ROWS(1);
}

static AVX512 void rows_s2(const pd_k_conv2d *p, const float *pad, int64_t pw, const float *wc,
                           float *yc, const pd_kcpu_epi16 *e, float bias, const float *rc) {
  ROWS(2);
}
#undef ROWS

void pd_kcpu_depthwise16_f32(const pd_k_conv2d *p, const float *x, const float *w, int64_t plane,
                             float *pad, float *y, const pd_kcpu_epi16 *e) {
  int64_t ocg = p->oc / p->groups, n = plane / p->oc, oc = plane % p->oc, ic = oc / ocg;
  int64_t pw = pad_width(p), ph = pad_height(p), ohw = p->oh * p->ow;
  fill_pad(p, x + (n * p->c + ic) * p->h * p->w, pad, ph, pw);
  const float *wc = w + oc * p->kh * p->kw;
  float *yc = y + plane * ohw;
  float bias = e && e->rbias ? e->rbias[oc] : 0.0f;
  const float *rc = e && e->res ? e->res + plane * ohw : NULL;
  if (p->stride_w == 1) rows_s1(p, pad, pw, wc, yc, e, bias, rc);
  else rows_s2(p, pad, pw, wc, yc, e, bias, rc);
}
#endif
