/* conv_wino.c -- a 3x3 convolution at stride 1 computed as Winograd's F(2x2, 3x3) in fp32 on
 * CPUs with AVX2 and FMA, or F(4x4, 3x3) on AVX-512: where it applies (pd_kcpu_wino_tile, which
 * conv.c's conv2d_fused asks), its driver (pd_kcpu_wino_conv, at the end) and its transforms.
 * Each 2x2 block of outputs (a tile) is A^T [(G g G^T) .* (B^T d B)] A of its 4x4 input patch d
 * and the filter g: the products of the 16 points xi are 16 matrix products, U[xi] [oc, c]
 * times V[xi] [c, tiles] (gemm_avx2.c's; gemm_avx512.c's on AVX-512 CPUs), 4 multiply-adds a
 * tile for each input and output channel instead of 9 for each output: 2.25x fewer (F(4x4,
 * 3x3): 36 points for 16 outputs, 2.25 a tile). The transforms make U from the filters, V from
 * the input (a block of tile rows of one image) in the products' panels, and the outputs from
 * the products M[xi] [oc, tiles]; the driver adds conv.c's epilogue. (V made as a plain matrix,
 * the product copied it into panels again: 13% of a DB detector's 96 -> 24 layer on 160x160.)
 *
 * With the transforms' coefficients 0, +-1 and +-1/2 the results differ from the direct sums by
 * a few units in the last place of fp32 (test_conv bounds them against fp64). Eight tiles of a
 * tile row at a time (stride-2 loads: two loads and an even/odd shuffle a patch row), those at
 * the image's edges and a row's last ones with masked loads and stores. The transforms are
 * compiled with a function attribute; nothing calls them on a CPU without AVX2 and FMA. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <stdatomic.h>
#include <string.h>

#if (PD_KCPU_HAVE_AVX2 || PD_KCPU_HAVE_AVX512) && PD_KCPU_FASTMATH_f32
/* A group of cnt tiles (at most a vector's) whose patches start at input row iy0 and column s
 * of channel xc [h, w], transformed into V: from a, the lanes [0, n1) (tile i's point xi at a +
 * i + xi vstride), and where they cross into the next panel, the lanes [n1, cnt) from b (the
 * place lane 0 would have there; NULL: none). full: every input the patches read is inside the
 * image. */
typedef void wino_group_fn(const float *xc, int64_t h, int64_t w, int64_t iy0, int64_t s,
                           float *a, float *b, int64_t n1, int64_t cnt, int64_t vstride,
                           bool full);

/* The input transform's loop over channels [c0, c1) and tile rows [ty0, ty1) of an image, for
 * tiles of T x T outputs (patches of T + 2) G at a time: each group to `group` with its places in
 * V's panels of pw columns (tile (ty, tx) at column (ty - ty0) tw + tx; channel ch's rows of the
 * panels at v + ch pw, c pw floats apart; the points pd_kcpu_wino_vstride apart). Inlined, with
 * `group` inlined in it: called through the pointer, F(2x2, 3x3)'s groups of eight took 3% more. */
static inline __attribute__((always_inline)) void wino_input_loop(
    const pd_k_conv2d *p, const float *xn, int64_t ty0, int64_t ty1, int64_t c0, int64_t c1,
    float *v, int64_t nb, int64_t pw, int64_t T, int64_t G, wino_group_fn *group) {
  int64_t tw = (p->ow + T - 1) / T, h = p->h, w = p->w, c = p->c;
  int64_t vstride = pd_kcpu_wino_vstride(c, nb, pw);
  for (int64_t ch = c0; ch < c1; ch++) {
    const float *xc = xn + ch * h * w;
    float *vc = v + ch * pw; /* the channel's row of the first panel */
    for (int64_t ty = ty0; ty < ty1; ty++) {
      int64_t iy0 = T * ty - p->pad_top;
      bool rows_in = iy0 >= 0 && iy0 + T + 2 <= h;
      for (int64_t tx = 0; tx < tw; tx += G) {
        int64_t s = T * tx - p->pad_left, cnt = tw - tx < G ? tw - tx : G;
        int64_t t = (ty - ty0) * tw + tx, col = t % pw, in = pw - col; /* lanes in its panel */
        float *a = vc + t / pw * c * pw + col;
        float *b = in < cnt ? vc + (t / pw + 1) * c * pw - in : NULL;
        group(xc, h, w, iy0, s, a, b, in < cnt ? in : cnt, cnt, vstride,
              rows_in && cnt == G && s >= 0 && s + T * G + 2 <= w);
      }
    }
  }
}
#endif

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

/* Where the transforms of eight consecutive tiles go in V's panels: lanes `ma` at a (the first
 * lane's place), and where the eight cross into the next panel, lanes `mb` at b (where lane 0
 * would be in that panel's row); b NULL: none. A masked store writes nothing past its lanes. */
typedef struct vdst {
  float *a, *b;
  __m256i ma, mb;
  bool all; /* every lane at a */
} vdst;

/* The transform of the 16 values d[r][q] (vectors over 8 tiles), point xi's at vstride xi from
 * dst's places. */
INLINE AVX2 void bt_d_b(const __m256 d[4][4], const vdst *dst, int64_t vstride) {
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
      int64_t at = (4 * a + b) * vstride;
      if (dst->all) {
        _mm256_storeu_ps(dst->a + at, r[b]);
      } else {
        _mm256_maskstore_ps(dst->a + at, dst->ma, r[b]);
        if (dst->b) _mm256_maskstore_ps(dst->b + at, dst->mb, r[b]);
      }
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
 * u, q = 0..3 (the evens and odds of [s, s + 16) and of [s + 2, s + 18)), transformed into dst.
 * FULL: every load inside the image; else rows outside [0, h) are zeros and the loads masked to
 * the columns inside (m: at s, s + 8, s + 2, s + 10). */
INLINE AVX2 void input_tiles(const float *xc, int64_t h, int64_t w, int64_t iy0, int64_t s,
                             const vdst *dst, int64_t vstride, bool FULL) {
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
  bt_d_b(d, dst, vstride);
}

static inline __attribute__((always_inline)) AVX2 void group8(
    const float *xc, int64_t h, int64_t w, int64_t iy0, int64_t s, float *a, float *b,
    int64_t n1, int64_t cnt, int64_t vstride, bool full) {
  vdst dst = {a, b, first(n1), _mm256_andnot_si256(first(n1), first(cnt)), cnt == 8 && !b};
  if (full) input_tiles(xc, h, w, iy0, s, &dst, vstride, true);
  else input_tiles(xc, h, w, iy0, s, &dst, vstride, false); /* the edges, a row's last tiles */
}

AVX2 void pd_kcpu_wino8_input(const pd_k_conv2d *p, const float *xn, int64_t ty0, int64_t ty1,
                              int64_t c0, int64_t c1, float *v, int64_t nb, int64_t pw) {
  wino_input_loop(p, xn, ty0, ty1, c0, c1, v, nb, pw, 2, 8, group8);
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

/* ---- F(4x4, 3x3) on AVX-512F CPUs ----
 * Each 4x4 block of outputs is A^T [(G g G^T) .* (B^T d B)] A of its 6x6 input patch d (tiles 4
 * apart), with the points 0, +-1, +-2 and infinity:
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1],
 *   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1],
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]:
 * 36 products, 2.25 multiply-adds an output for each input and output channel where F(2x2, 3x3)
 * takes 4, and V 2.25 floats an output where it takes 4 (the transform of a DB detector's
 * 96 -> 24 layer on 160x160 waited on writing V). Sixteen tiles a vector: a patch column of the
 * sixteen is every fourth input of four loads (two permutes and a blend), the last two columns
 * the first two shifted by a tile. The coefficients are not powers of two: results are within a
 * few units in the 5th digit of the direct sums (test_conv bounds them against fp64). */
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>

#include "kernels/cpu/epi_avx512.h"

#define AVX512 __attribute__((target("avx512f,fma")))

void pd_kcpu_wino4_filter(const pd_k_conv2d *p, const float *w, float *u, int64_t o0,
                          int64_t o1) {
  static const double G[6][3] = {{1.0 / 4, 0, 0},
                                 {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                 {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                 {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                 {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                 {0, 0, 1}};
  int64_t c = p->c, plane = p->oc * c;
  for (int64_t o = o0; o < o1; o++)
    for (int64_t i = 0; i < c; i++) {
      const float *g = w + (o * c + i) * 9;
      double t[6][3];
      for (int a = 0; a < 6; a++) /* G g */
        for (int q = 0; q < 3; q++)
          t[a][q] = G[a][0] * g[q] + G[a][1] * g[3 + q] + G[a][2] * g[6 + q];
      for (int a = 0; a < 6; a++) /* (G g) G^T */
        for (int b = 0; b < 6; b++)
          u[(6 * a + b) * plane + o * c + i] =
              (float)(t[a][0] * G[b][0] + t[a][1] * G[b][1] + t[a][2] * G[b][2]);
    }
}

/* y = B^T x for six vectors. */
static inline __attribute__((always_inline)) AVX512 void bt6(const __m512 x[6], __m512 y[6]) {
  const __m512 two = _mm512_set1_ps(2.0f), four = _mm512_set1_ps(4.0f);
  const __m512 five = _mm512_set1_ps(5.0f);
  __m512 a = _mm512_fnmadd_ps(four, x[2], x[4]), b = _mm512_fnmadd_ps(four, x[1], x[3]);
  __m512 c = _mm512_sub_ps(x[4], x[2]), d = _mm512_mul_ps(two, _mm512_sub_ps(x[3], x[1]));
  y[0] = _mm512_fmadd_ps(four, x[0], _mm512_fnmadd_ps(five, x[2], x[4]));
  y[1] = _mm512_add_ps(a, b);
  y[2] = _mm512_sub_ps(a, b);
  y[3] = _mm512_add_ps(c, d);
  y[4] = _mm512_sub_ps(c, d);
  y[5] = _mm512_fmadd_ps(four, x[1], _mm512_fnmadd_ps(five, x[3], x[5]));
}

/* y = A^T x for six vectors. */
static inline __attribute__((always_inline)) AVX512 void at6(const __m512 x[6], __m512 y[4]) {
  __m512 p = _mm512_add_ps(x[1], x[2]), q = _mm512_sub_ps(x[1], x[2]);
  __m512 r = _mm512_add_ps(x[3], x[4]), s = _mm512_sub_ps(x[3], x[4]);
  y[0] = _mm512_add_ps(_mm512_add_ps(x[0], p), r);
  y[1] = _mm512_fmadd_ps(_mm512_set1_ps(2.0f), s, q);
  y[2] = _mm512_fmadd_ps(_mm512_set1_ps(4.0f), r, p);
  y[3] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0f), s, q), x[5]);
}

/* Column q (0..3) of sixteen tiles' patches from the 64 inputs in l[0..3]: lane u the input
 * 4u + q, the first eight from l[0] and l[1], the others from l[2] and l[3]. */
static inline __attribute__((always_inline)) AVX512 __m512 phase(const __m512 l[4], int q) {
  const __m512i idx = _mm512_add_epi32(
      _mm512_set_epi32(28, 24, 20, 16, 12, 8, 4, 0, 28, 24, 20, 16, 12, 8, 4, 0),
      _mm512_set1_epi32(q));
  return _mm512_mask_blend_ps(0xff00, _mm512_permutex2var_ps(l[0], idx, l[1]),
                              _mm512_permutex2var_ps(l[2], idx, l[3]));
}

/* Sixteen tiles' patches from input row iy0 and column s, transformed into V: point xi's at
 * vstride xi from a (lanes ma) and, where the tiles cross into the next panel, from b (lanes
 * mb; b NULL: none). FULL: every load inside the image; else the rows outside [0, h) zeros and
 * the loads masked to the columns inside. */
static inline __attribute__((always_inline)) AVX512 void tiles16(
    const float *xc, int64_t h, int64_t w, int64_t iy0, int64_t s, float *a, __mmask16 ma,
    float *b, __mmask16 mb, int64_t vstride, bool FULL) {
  __m512 hr[6][6]; /* each patch row's transform along the columns */
  __mmask16 m[6] = {0xffff, 0xffff, 0xffff, 0xffff, 1, 1}; /* loads at s + 16 k, s + 64, s + 65 */
  if (!FULL) {
    for (int k = 0; k < 4; k++) m[k] = pd_kcpu_span16(-(s + 16 * k), w - (s + 16 * k));
    m[4] = pd_kcpu_span16(-(s + 64), w - (s + 64)) & 1;
    m[5] = pd_kcpu_span16(-(s + 65), w - (s + 65)) & 1;
  }
  for (int r = 0; r < 6; r++) {
    if (!FULL && (iy0 + r < 0 || iy0 + r >= h)) {
      for (int k = 0; k < 6; k++) hr[r][k] = _mm512_setzero_ps();
      continue;
    }
    const float *row = xc + (iy0 + r) * w + s;
    __m512 l[4], x[6];
    for (int k = 0; k < 4; k++) l[k] = _mm512_maskz_loadu_ps(m[k], row + 16 * k);
    for (int q = 0; q < 4; q++) x[q] = phase(l, q);
    /* columns 4 and 5: columns 0 and 1 of the next tile, the last lane's from s + 64, s + 65 */
    x[4] = _mm512_castsi512_ps(_mm512_alignr_epi32(
        _mm512_castps_si512(_mm512_maskz_loadu_ps(m[4], row + 64)), _mm512_castps_si512(x[0]), 1));
    x[5] = _mm512_castsi512_ps(_mm512_alignr_epi32(
        _mm512_castps_si512(_mm512_maskz_loadu_ps(m[5], row + 65)), _mm512_castps_si512(x[1]), 1));
    bt6(x, hr[r]);
  }
  for (int j = 0; j < 6; j++) { /* down the rows */
    __m512 x[6], y[6];
    for (int r = 0; r < 6; r++) x[r] = hr[r][j];
    bt6(x, y);
    for (int i = 0; i < 6; i++) {
      int64_t at = (6 * i + j) * vstride;
      _mm512_mask_storeu_ps(a + at, ma, y[i]);
      if (b) _mm512_mask_storeu_ps(b + at, mb, y[i]);
    }
  }
}

static inline __attribute__((always_inline)) AVX512 void group16(
    const float *xc, int64_t h, int64_t w, int64_t iy0, int64_t s, float *a, float *b,
    int64_t n1, int64_t cnt, int64_t vstride, bool full) {
  __mmask16 ma = pd_kcpu_first16(n1), mb = pd_kcpu_span16(n1, cnt);
  if (full) tiles16(xc, h, w, iy0, s, a, ma, b, mb, vstride, true);
  else tiles16(xc, h, w, iy0, s, a, ma, b, mb, vstride, false); /* the edges, a row's last */
}

AVX512 void pd_kcpu_wino4_input(const pd_k_conv2d *p, const float *xn, int64_t ty0,
                                int64_t ty1, int64_t c0, int64_t c1, float *v, int64_t nb) {
  wino_input_loop(p, xn, ty0, ty1, c0, c1, v, nb, PD_KCPU_GEMM16_NR, 4, 16, group16);
}

AVX512 void pd_kcpu_wino4_output(const pd_k_conv2d *p, const float *m, int64_t nb, int64_t ty0,
                                 int64_t ty1, int64_t o0, int64_t o1, float *yn) {
  int64_t tw = (p->ow + 3) / 4, oh = p->oh, ow = p->ow, mstride = p->oc * nb;
  /* output vector k of a row: lane 4u + j is column j of tile 4k + u, from y[j] */
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i odd = _mm512_and_si512(iota, _mm512_set1_epi32(1));
  const __m512i base = _mm512_add_epi32(_mm512_srli_epi32(iota, 2), _mm512_slli_epi32(odd, 4));
  for (int64_t o = o0; o < o1; o++) {
    float *yo = yn + o * oh * ow;
    for (int64_t ty = ty0; ty < ty1; ty++) {
      const float *mt = m + o * nb + (ty - ty0) * tw;
      for (int64_t tx = 0; tx < tw; tx += 16) {
        __mmask16 mk = pd_kcpu_first16(tw - tx); /* the products past the row's tiles: unread */
        __m512 t[6][4], y[4][4];
        for (int i = 0; i < 6; i++) { /* along the columns */
          __m512 x[6];
          for (int j = 0; j < 6; j++)
            x[j] = _mm512_maskz_loadu_ps(mk, mt + (6 * i + j) * mstride + tx);
          at6(x, t[i]);
        }
        for (int j = 0; j < 4; j++) { /* down the rows */
          __m512 x[6], r[4];
          for (int i = 0; i < 6; i++) x[i] = t[i][j];
          at6(x, r);
          for (int i = 0; i < 4; i++) y[i][j] = r[i];
        }
        for (int i = 0; i < 4 && 4 * ty + i < oh; i++) {
          float *row = yo + (4 * ty + i) * ow + 4 * tx;
          for (int k = 0; k < 4; k++) {
            int64_t cols = ow - 4 * tx - 16 * k;
            if (cols <= 0) break;
            __m512i idx = _mm512_add_epi32(base, _mm512_set1_epi32(4 * k));
            __m512 v = _mm512_mask_blend_ps(0xcccc, _mm512_permutex2var_ps(y[i][0], idx, y[i][1]),
                                            _mm512_permutex2var_ps(y[i][2], idx, y[i][3]));
            _mm512_mask_storeu_ps(row + 16 * k, pd_kcpu_first16(cols), v);
          }
        }
      }
    }
  }
}

#endif /* PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32 */

/* ---- The driver: 3x3 convolutions at stride 1 as Winograd's F(2x2, 3x3) in fp32 on AVX2 and
 * AVX-512 CPUs (the transforms above, the products gemm_avx2.c's or gemm_avx512.c's; on AVX-512
 * ResNet50's 3x3 layers on 112x112 to 28x28 took 0.6-0.9x the time, on 14x14 and 7x7 more than
 * through im2col), and as F(4x4, 3x3) on AVX-512 where an image has WINO_MIN_TILES tiles of 4x4
 * (against F(2x2, 3x3): ResNet50's 112x112 and 56x56 layers at batch 16 0.58-0.70x the time, a
 * DB detector's 96 -> 24 layers on 160x160 and 80x80 0.75-0.8x; on 28x28 the same time): the
 * filters transformed into U (kept in conv2d_fused's prepared slot for an inference model's
 * filters), then each thread a run of the tile rows (of all the images, in order), a block of
 * them at a time, its V and products M within WINO_BLOCK bytes so that they stay in its core's
 * cache: the input transform, the 16 or 36 products, the output transform and the epilogue.
 * Where there are at least WINO_MIN_CH input and output channels and WINO_MIN_TILES tiles an
 * image (below either, the transforms and U, 16/9 the size of the filters, outweigh the
 * multiply-adds saved: on a Zen 3 core 512 -> 512 channels on 7x7 ran 1.3x slower, 256 on
 * 14x14 slower on two threads), without mixed precision (gemm_lp's products keep their
 * path). ---- */
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#define WINO_MIN_CH 16
#define WINO_MIN_TILES 64
#define WINO_BLOCK ((int64_t)512 << 10)

/* The side of a tile of outputs the layer takes: 4 (F(4x4, 3x3), AVX-512) or 2 (F(2x2, 3x3)),
 * each where an image has at least WINO_MIN_TILES of them; 0: not Winograd's. */
int pd_kcpu_wino_tile(pd_dtype dt, const pd_k_conv2d *p) {
  if (!(dt == PD_FP32 && p->lp != PD_BF16 && p->lp != PD_FP16 && p->groups == 1 &&
        p->kh == 3 && p->kw == 3 && p->stride_h == 1 && p->stride_w == 1 && p->dil_h == 1 &&
        p->dil_w == 1 && p->c >= WINO_MIN_CH && p->oc >= WINO_MIN_CH))
    return 0;
  int level = pd_kcpu_simd();
  if (level == PD_KCPU_SIMD_AVX512 && ((p->oh + 3) / 4) * ((p->ow + 3) / 4) >= WINO_MIN_TILES)
    return 4;
  return level != PD_KCPU_SIMD_BASE && ((p->oh + 1) / 2) * ((p->ow + 1) / 2) >= WINO_MIN_TILES
             ? 2
             : 0;
}

typedef struct wino_job {
  const pd_k_conv2d *p;
  const pd_k_conv_epilogue *ep;
  const float *x, *w;
  float *y, *u;
  int tile;            /* outputs a tile's side: 2 or 4 */
  int pts;             /* its points: (tile + 2)^2 */
  int64_t th, tw;      /* tiles an image: rows, columns */
  int64_t rows;        /* tile rows a block */
  atomic_bool failed;  /* a part found no memory */
} wino_job;

static void wino_filter_range(void *ctx, int64_t b, int64_t e) {
  wino_job *j = ctx;
  (j->tile == 4 ? pd_kcpu_wino4_filter : pd_kcpu_wino8_filter)(j->p, j->w, j->u, b, e);
}

/* Tile rows [b, e) of the n th (image b / th first), a block of at most j->rows at a time. */
static void wino_rows_range(void *ctx, int64_t b, int64_t e) {
  wino_job *j = ctx;
  const pd_k_conv2d *p = j->p;
  bool wide = pd_kcpu_simd() == PD_KCPU_SIMD_AVX512;
  int64_t th = j->th, tw = j->tw, nb = j->rows * tw, pts = j->pts, T = j->tile;
  int64_t pw = wide ? PD_KCPU_GEMM16_NR : PD_KCPU_GEMM8_NR;
  size_t vbytes = (size_t)(pts * pd_kcpu_wino_vstride(p->c, nb, pw)) * sizeof(float);
  float *v = pd_k_host_alloc(vbytes);
  float *m = pd_k_host_alloc((size_t)(pts * p->oc * nb) * sizeof(float));
  bool ok = v && m;
  if (v) memset(v, 0, vbytes); /* the last panels' columns past the tiles: read, never written */
  for (int64_t r = b; r < e && ok;) {
    int64_t n = r / th, ty0 = r % th, ty1 = ty0 + j->rows;
    if (ty1 > th) ty1 = th;
    if (ty1 - ty0 > e - r) ty1 = ty0 + (e - r);
    int64_t tiles = (ty1 - ty0) * tw, oy1 = T * ty1 < p->oh ? T * ty1 : p->oh;
    int64_t vs = pd_kcpu_wino_vstride(p->c, tiles, pw);
    const float *xn = j->x + n * p->c * p->h * p->w;
    float *yn = j->y + n * p->oc * p->oh * p->ow;
    if (T == 4) pd_kcpu_wino4_input(p, xn, ty0, ty1, 0, p->c, v, tiles);
    else pd_kcpu_wino8_input(p, xn, ty0, ty1, 0, p->c, v, tiles, pw);
    for (int64_t xi = 0; xi < pts && ok; xi++) {
      const float *u = j->u + xi * p->oc * p->c;
      if (wide)
        ok = pd_kcpu_gemm16p_epi_f32(false, p->oc, tiles, p->c, u, p->c, v + xi * vs, 0.0f,
                                     m + xi * p->oc * tiles, tiles, NULL);
      else
        pd_kcpu_gemm8p_epi_f32(p->oc, tiles, p->c, u, p->c, v + xi * vs,
                               m + xi * p->oc * tiles, tiles, NULL);
    }
    if (!ok) break;
    if (T == 4) pd_kcpu_wino4_output(p, m, tiles, ty0, ty1, 0, p->oc, yn);
    else pd_kcpu_wino8_output(p, m, tiles, ty0, ty1, 0, p->oc, yn);
    pd_kcpu_conv_epilogue(PD_FP32, p, j->ep, j->y, n, 0, p->oc, T * ty0 * p->ow, oy1 * p->ow);
    r += ty1 - ty0;
  }
  if (!ok) atomic_store(&j->failed, true);
  pd_k_host_free(v), pd_k_host_free(m);
}

/* The transformed filters kept in a prepared slot (kernels.h: conv2d_fused's prep). */
typedef struct wino_filters {
  pd_k_prepared base; /* rows oc, cols c * 9 */
  int tile;           /* the transform's: 2 or 4 */
  float *u;           /* pts oc c floats, after the header */
} wino_filters;

#define WINO_HEADER (((sizeof(wino_filters) + PD_K_ALIGN - 1) / PD_K_ALIGN) * PD_K_ALIGN)

static void wino_filters_release(pd_k_prepared *p) { pd_k_host_free(p); }

/* U for the job's filters: from *prep when it holds this shape's and transform's, else made (in
 * parallel, by filters) into a new copy that goes into *prep (the old one released), or without
 * prep into *own (the caller frees it). NULL: no memory. */
static const float *wino_u(wino_job *j, pd_k_prepared **prep, void **own) {
  const pd_k_conv2d *p = j->p;
  wino_filters *f = prep ? (wino_filters *)*prep : NULL;
  if (f && f->base.release == wino_filters_release && f->base.dt == PD_FP32 &&
      f->base.rows == p->oc && f->base.cols == p->c * 9 && f->tile == j->tile)
    return f->u;
  char *mem = pd_k_host_alloc(WINO_HEADER + (size_t)(j->pts * p->oc * p->c) * sizeof(float));
  if (!mem) return NULL;
  f = (wino_filters *)mem;
  f->base = (pd_k_prepared){wino_filters_release, PD_FP32, p->oc, p->c * 9};
  f->tile = j->tile;
  f->u = (float *)(mem + WINO_HEADER);
  j->u = f->u;
  /* each part's share: a filter's 9 c taps */
  pd_kcpu_parallel(p->oc, PD_KCPU_GRAIN / (j->pts * p->c) + 1, wino_filter_range, j);
  if (prep) {
    if (*prep) (*prep)->release(*prep);
    *prep = &f->base;
  } else {
    *own = mem;
  }
  return f->u;
}

pd_status pd_kcpu_wino_conv(const pd_k_conv2d *p, int tile, const pd_k_conv_epilogue *ep,
                            const float *x, const float *w, float *y, pd_k_prepared **prep) {
  int64_t th = (p->oh + tile - 1) / tile, tw = (p->ow + tile - 1) / tile;
  int pts = (tile + 2) * (tile + 2);
  int64_t rows = WINO_BLOCK / ((int64_t)(pts * sizeof(float)) * (p->c + p->oc) * tw);
  wino_job j = {.p = p, .ep = ep, .x = x, .w = w, .y = y, .tile = tile, .pts = pts,
                .th = th, .tw = tw, .rows = rows < 1 ? 1 : rows > th ? th : rows};
  atomic_init(&j.failed, false);
  void *own = NULL;
  if (!(j.u = (float *)wino_u(&j, prep, &own))) return PD_ENOMEM;
  pd_kcpu_parallel(p->n * th, 2, wino_rows_range, &j);
  pd_k_host_free(own);
  return atomic_load(&j.failed) ? PD_ENOMEM : PD_OK;
}
#endif

