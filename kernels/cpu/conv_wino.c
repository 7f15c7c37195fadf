/* conv_wino.c -- the transforms of a 3x3 convolution at stride 1 computed as Winograd's
 * F(2x2, 3x3) in fp32 on CPUs with AVX2 and FMA (conv.c drives it and says where it applies:
 * wino_take). Each 2x2 block of outputs (a tile) is A^T [(G g G^T) .* (B^T d B)] A of its 4x4
 * input patch d and the filter g: the products of the 16 points xi are 16 matrix products,
 * U[xi] [oc, c] times V[xi] [c, tiles] (gemm_avx2.c's; gemm_avx512.c's on AVX-512 CPUs), 4
 * multiply-adds a tile for each input and output channel instead of 9 for each output: 2.25x
 * fewer. The transforms here make U from
 * the filters, V from the input (a block of tile rows of one image) and the outputs from the
 * products M[xi] [oc, tiles]; conv.c adds the epilogue.
 *
 * With the transforms' coefficients 0, +-1 and +-1/2 the results differ from the direct sums by
 * a few units in the last place of fp32 (test_conv bounds them against fp64). Eight tiles of a
 * tile row at a time (stride-2 loads: two loads and an even/odd shuffle a patch row), those at
 * the image's edges and a row's last ones with masked loads and stores. Compiled with a function
 * attribute; nothing calls it on a CPU without AVX2 and FMA. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#if PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))
#define UNROLL4 _Pragma("GCC unroll 4")

/* ---- Filters: U[xi][o][c] = (G g G^T)[xi], G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] ---- */

void pd_kcpu_wino8_filter(const pd_k_conv2d *p, const float *w, float *u, int64_t o0,
                          int64_t o1) {
  int64_t c = p->c, plane = p->oc * c;
  for (int64_t o = o0; o < o1; o++)
    for (int64_t i = 0; i < c; i++) {
      const float *g = w + (o * c + i) * 9;
      float t[4][3], r[4][4];
      for (int q = 0; q < 3; q++) { /* G g: the rows */
        t[0][q] = g[q];
        t[1][q] = 0.5f * (g[q] + g[3 + q] + g[6 + q]);
        t[2][q] = 0.5f * (g[q] - g[3 + q] + g[6 + q]);
        t[3][q] = g[6 + q];
      }
      for (int a = 0; a < 4; a++) { /* (G g) G^T: the columns */
        r[a][0] = t[a][0];
        r[a][1] = 0.5f * (t[a][0] + t[a][1] + t[a][2]);
        r[a][2] = 0.5f * (t[a][0] - t[a][1] + t[a][2]);
        r[a][3] = t[a][2];
      }
      for (int xi = 0; xi < 16; xi++) u[xi * plane + o * c + i] = r[xi / 4][xi % 4];
    }
}

/* ---- Input: V[xi][ch][t] = (B^T d B)[xi], B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1] ---- */

/* The first n lanes (vmaskmovps's mask: a lane's sign bit), and the lanes of an 8-float load at
 * column c0 that lie in [0, w). */
INLINE AVX2 __m256i first(int64_t n) {
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

INLINE AVX2 __m256i lanes(int64_t c0, int64_t w) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int64_t lo = c0 < 0 ? -c0 : 0, hi = w - c0 < 8 ? w - c0 : 8;
  lo = lo > 8 ? 8 : lo;
  hi = hi < lo ? lo : hi;
  return _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32((int)lo - 1)),
                          _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), idx));
}

/* The transform of the 16 values d[r][q] (vectors over 8 tiles), stored at v[xi * vstride]:
 * all eight lanes, or those of mask st. */
INLINE AVX2 void bt_d_b(const __m256 d[4][4], float *v, int64_t vstride, bool ALL, __m256i st) {
  __m256 t[4][4];
  UNROLL4 for (int q = 0; q < 4; q++) { /* B^T d: over the rows */
    t[0][q] = _mm256_sub_ps(d[0][q], d[2][q]);
    t[1][q] = _mm256_add_ps(d[1][q], d[2][q]);
    t[2][q] = _mm256_sub_ps(d[2][q], d[1][q]);
    t[3][q] = _mm256_sub_ps(d[1][q], d[3][q]);
  }
  UNROLL4 for (int a = 0; a < 4; a++) { /* (B^T d) B: over the columns */
    __m256 r[4] = {_mm256_sub_ps(t[a][0], t[a][2]), _mm256_add_ps(t[a][1], t[a][2]),
                   _mm256_sub_ps(t[a][2], t[a][1]), _mm256_sub_ps(t[a][1], t[a][3])};
    UNROLL4 for (int b = 0; b < 4; b++) {
      float *dst = v + (4 * a + b) * vstride;
      if (ALL) _mm256_storeu_ps(dst, r[b]);
      else _mm256_maskstore_ps(dst, st, r[b]);
    }
  }
}

/* Of [s + 2u, s + 2u + 16) for u = 0..7: the evens (odd: the odds) of a and b, the 16 floats
 * from s; the shuffle's lanes (0 2 8 10 4 6 12 14) put back in order. */
INLINE AVX2 __m256 evens(__m256 lo, __m256 hi, int odd) {
  __m256 e = odd ? _mm256_shuffle_ps(lo, hi, 0xDD) : _mm256_shuffle_ps(lo, hi, 0x88);
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8));
}

/* Eight tiles' patches from row iy0 and column s, per patch row the inputs s + 2u + q of tile
 * u, q = 0..3 (the evens and odds of [s, s + 16) and of [s + 2, s + 18)), transformed. FULL:
 * every load inside the image; else rows outside [0, h) are zeros, the loads masked to the
 * columns inside (m: at s, s + 8, s + 2, s + 10), and the first cnt tiles stored. */
INLINE AVX2 void input_tiles(const float *xc, int64_t h, int64_t w, int64_t iy0, int64_t s,
                             int64_t cnt, float *v, int64_t vstride, bool FULL) {
  __m256 d[4][4];
  __m256i m[4];
  if (!FULL)
    for (int k = 0; k < 4; k++) m[k] = lanes(s + (k & 1) * 8 + (k >> 1) * 2, w);
  UNROLL4 for (int r = 0; r < 4; r++) {
    const float *row = xc + (iy0 + r) * w + s;
    __m256 a, b, a2, b2;
    if (FULL) {
      a = _mm256_loadu_ps(row), b = _mm256_loadu_ps(row + 8);
      a2 = _mm256_loadu_ps(row + 2), b2 = _mm256_loadu_ps(row + 10);
    } else if (iy0 + r < 0 || iy0 + r >= h) {
      a = b = a2 = b2 = _mm256_setzero_ps();
    } else {
      a = _mm256_maskload_ps(row, m[0]), b = _mm256_maskload_ps(row + 8, m[1]);
      a2 = _mm256_maskload_ps(row + 2, m[2]), b2 = _mm256_maskload_ps(row + 10, m[3]);
    }
    d[r][0] = evens(a, b, 0);
    d[r][1] = evens(a, b, 1);
    d[r][2] = evens(a2, b2, 0);
    d[r][3] = evens(a2, b2, 1);
  }
  bt_d_b(d, v, vstride, FULL || cnt == 8, first(cnt));
}

AVX2 void pd_kcpu_wino8_input(const pd_k_conv2d *p, const float *xn, int64_t ty0, int64_t ty1,
                              int64_t c0, int64_t c1, float *v, int64_t nb) {
  int64_t tw = (p->ow + 1) / 2, h = p->h, w = p->w, vstride = p->c * nb;
  for (int64_t ch = c0; ch < c1; ch++) {
    const float *xc = xn + ch * h * w;
    for (int64_t ty = ty0; ty < ty1; ty++) {
      int64_t iy0 = 2 * ty - p->pad_top;
      bool rows_in = iy0 >= 0 && iy0 + 3 < h;
      float *vt = v + ch * nb + (ty - ty0) * tw;
      for (int64_t tx = 0; tx < tw; tx += 8) {
        int64_t s = 2 * tx - p->pad_left, cnt = tw - tx < 8 ? tw - tx : 8;
        if (rows_in && cnt == 8 && s >= 0 && s + 17 < w)
          input_tiles(xc, h, w, iy0, s, 8, vt + tx, vstride, true);
        else /* at the image's edges, or the row's last tiles */
          input_tiles(xc, h, w, iy0, s, cnt, vt + tx, vstride, false);
      }
    }
  }
}

/* ---- Output: y = A^T M A, A^T = [1 1 1 0; 0 1 -1 -1]: the tile's 2x2 outputs ---- */

/* The 2x2 outputs of the m[xi] (vectors over tiles): y[dy][dx]. */
INLINE AVX2 void at_m_a(const __m256 m[16], __m256 y[2][2]) {
  __m256 t[2][4];
  UNROLL4 for (int b = 0; b < 4; b++) {
    t[0][b] = _mm256_add_ps(_mm256_add_ps(m[b], m[4 + b]), m[8 + b]);
    t[1][b] = _mm256_sub_ps(_mm256_sub_ps(m[4 + b], m[8 + b]), m[12 + b]);
  }
  for (int a = 0; a < 2; a++) {
    y[a][0] = _mm256_add_ps(_mm256_add_ps(t[a][0], t[a][1]), t[a][2]);
    y[a][1] = _mm256_sub_ps(_mm256_sub_ps(t[a][1], t[a][2]), t[a][3]);
  }
}

/* The 2x2 outputs of eight tiles as their two output rows of 16 (tile u's at 2u, 2u + 1): the
 * rows of `nrows` (1 or 2), the first `cols` columns of each. */
INLINE AVX2 void rows16(const __m256 y[2][2], float *row0, int64_t ow, int nrows, int64_t cols) {
  for (int a = 0; a < nrows; a++) {
    __m256 lo = _mm256_unpacklo_ps(y[a][0], y[a][1]), hi = _mm256_unpackhi_ps(y[a][0], y[a][1]);
    __m256 x0 = _mm256_permute2f128_ps(lo, hi, 0x20), x1 = _mm256_permute2f128_ps(lo, hi, 0x31);
    float *row = row0 + a * ow;
    if (cols == 16) {
      _mm256_storeu_ps(row, x0);
      _mm256_storeu_ps(row + 8, x1);
    } else {
      _mm256_maskstore_ps(row, first(cols), x0);
      _mm256_maskstore_ps(row + 8, first(cols - 8), x1);
    }
  }
}

AVX2 void pd_kcpu_wino8_output(const pd_k_conv2d *p, const float *m, int64_t nb, int64_t ty0,
                               int64_t ty1, int64_t o0, int64_t o1, float *yn) {
  int64_t tw = (p->ow + 1) / 2, oh = p->oh, ow = p->ow, mstride = p->oc * nb;
  for (int64_t o = o0; o < o1; o++) {
    float *yo = yn + o * oh * ow;
    for (int64_t ty = ty0; ty < ty1; ty++) {
      const float *mt = m + o * nb + (ty - ty0) * tw;
      int64_t oy = 2 * ty;
      int nrows = oy + 1 < oh ? 2 : 1;
      for (int64_t tx = 0; tx < tw; tx += 8) {
        int64_t cnt = tw - tx < 8 ? tw - tx : 8, cols = ow - 2 * tx < 16 ? ow - 2 * tx : 16;
        __m256 mv[16], y[2][2];
        if (cnt == 8) {
          for (int xi = 0; xi < 16; xi++) mv[xi] = _mm256_loadu_ps(mt + xi * mstride + tx);
        } else { /* the row's last tiles: the products past them are not read */
          __m256i mk = first(cnt);
          for (int xi = 0; xi < 16; xi++) mv[xi] = _mm256_maskload_ps(mt + xi * mstride + tx, mk);
        }
        at_m_a(mv, y);
        rows16(y, yo + oy * ow + 2 * tx, ow, nrows, cols);
      }
    }
  }
}

#endif /* PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32 */
