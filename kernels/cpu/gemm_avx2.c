/* gemm_avx2.c -- the fp32 product of a 1x1 convolution with its fused epilogue for CPUs with AVX2
 * and FMA but not AVX-512 (pd_kcpu_simd chooses): C = A B, A the filters [m, k], B the image's
 * channels [k, n] read in place, and each element of C through fastmath.h's epilogue (a bias per
 * row, a residual, an activation) as it is stored. Through OpenBLAS these layers made three
 * passes over C: its beta pass clearing C, the product adding into it, and conv.c's epilogue;
 * on a Zen 3 core the first and the last were 12% of MobileNetV3's time at batch 1. The same
 * tiles multiply a KxK convolution's column matrix, which conv.c makes in panels of 16 columns
 * a block at a time (pd_kcpu_gemm8p_epi_f32: through OpenBLAS and a separate epilogue a DB
 * detector's 3x3 convolutions of 24 filters ran at ~43 GFLOP/s a Zen 3 core, here ~57). And
 * pd_kcpu_gemm_nt8_f32, C = A B^T as dot products along K (the squeeze-excitations' 1x1
 * convolutions of one-pixel maps, each filter read once for the whole batch).
 *
 * A tile of 6 rows by 16 columns of C sits in 12 registers for the whole of K while each element
 * of A is broadcast against 16 columns of a row of B (two loads); a tile's rows past m are not
 * computed (instances for 6, 4, 2, 1 rows), its columns past n are masked; a product of one row
 * takes four panels at a time instead (row_panels). B may also come transposed (B^T's rows
 * copied into the panels: pd_kcpu_gemm8t_epi_f32). Each element of C is
 * its k products added in order with fused multiply-adds (as gemm_avx512.c's), so results differ
 * from OpenBLAS's in the last bits. Compiled with a function attribute; nothing calls it on a CPU
 * without AVX2 and FMA. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"

#if PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>

#include "kernels/cpu/epi_avx2.h"

#define AVX2 __attribute__((target("avx2,fma")))
#define INLINE static inline __attribute__((always_inline))
#define UNROLL6 _Pragma("GCC unroll 6")
#define UNROLL4 _Pragma("GCC unroll 4")
#define MR 6  /* rows of C a tile */
#define NR PD_KCPU_GEMM8_NR /* columns of C a tile: two vectors */
#define PACK_STACK_K 512 /* panels of B up to this many rows (32 KB) on the stack */
#define A_BLOCK ((int64_t)192 << 10) /* bytes of A's rows multiplied against all of B at once */

/* Columns [j, j + 16) of the row of C at c (row i of the epilogue's) from the sums x (`whole`,
 * else the columns mk0, mk1 select): bias, residual and activation, stored. */
INLINE AVX2 void store16(const __m256 x2[2], bool whole, float *c, const pd_kcpu_epi16 *e,
                         int64_t i, int64_t j, __m256i mk0, __m256i mk1) {
  _Pragma("GCC unroll 2") for (int v = 0; v < 2; v++) { /* unrolled: the sums stay in registers */
    __m256 x = x2[v];
    __m256i mk = v ? mk1 : mk0;
    if (e) {
      if (e->cbias) {
        const float *q = e->cbias + j + 8 * v;
        x = _mm256_add_ps(x, whole ? _mm256_loadu_ps(q) : _mm256_maskload_ps(q, mk));
      }
      if (e->rbias) x = _mm256_add_ps(x, _mm256_broadcast_ss(e->rbias + i));
      if (e->res) {
        const float *q = e->res + i * e->ldres + j + 8 * v;
        x = _mm256_add_ps(x, whole ? _mm256_loadu_ps(q) : _mm256_maskload_ps(q, mk));
      }
      x = pd_kcpu_epi_act8(e->act, e->p, x);
    }
    if (whole) _mm256_storeu_ps(c + j + 8 * v, x);
    else _mm256_maskstore_ps(c + j + 8 * v, mk, x);
  }
}

/* The store masks of a panel's w columns (w <= 16): all lanes where w is 16. */
INLINE AVX2 void panel_masks(int64_t w, __m256i *mk0, __m256i *mk1) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  *mk0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w), lane);
  *mk1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w - 8), lane);
}

/* R rows (1..MR) of C from row i0, columns [j, j + 16) (`whole`, else those mk selects): the
 * tile's sums over k, then bias, residual and activation, stored. */
INLINE AVX2 void tile(int R, bool whole, int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float *c, int64_t ldc, const pd_kcpu_epi16 *e, int64_t i0,
                      int64_t j, __m256i mk0, __m256i mk1) {
  __m256 acc[MR][2];
  UNROLL6 for (int r = 0; r < R; r++) {
    acc[r][0] = _mm256_setzero_ps();
    acc[r][1] = _mm256_setzero_ps();
  }
  const float *bq = b; /* the panel: column j of B at its column 0 */
  for (int64_t q = 0; q < k; q++, bq += ldb) {
    __m256 b0 = whole ? _mm256_loadu_ps(bq) : _mm256_maskload_ps(bq, mk0);
    __m256 b1 = whole ? _mm256_loadu_ps(bq + 8) : _mm256_maskload_ps(bq + 8, mk1);
    UNROLL6 for (int r = 0; r < R; r++) {
      __m256 av = _mm256_broadcast_ss(a + r * lda + q);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  UNROLL6 for (int r = 0; r < R; r++)
    store16(acc[r], whole, c + r * ldc, e, i0 + r, j, mk0, mk1);
}

/* A's only row (row i0 of the epilogue's) against NP panels at pack, k NR floats apart, from
 * column j, the last w columns wide (its missing columns are zeros in the panel): 2 NP
 * independent sums, where a tile of one row has 2 whose chains of fused multiply-adds leave it
 * waiting on their latency (a batch-1 fc layer, an RNN's step). Each sum as the tile's. */
INLINE AVX2 void row_panels(int NP, int64_t k, const float *a, const float *pack, int64_t w,
                            float *c, const pd_kcpu_epi16 *e, int64_t i0, int64_t j) {
  __m256 acc[4][2];
  UNROLL4 for (int p = 0; p < NP; p++) acc[p][0] = acc[p][1] = _mm256_setzero_ps();
  for (int64_t q = 0; q < k; q++) {
    __m256 av = _mm256_broadcast_ss(a + q);
    UNROLL4 for (int p = 0; p < NP; p++) {
      const float *bq = pack + p * k * NR + q * NR;
      acc[p][0] = _mm256_fmadd_ps(av, _mm256_loadu_ps(bq), acc[p][0]);
      acc[p][1] = _mm256_fmadd_ps(av, _mm256_loadu_ps(bq + 8), acc[p][1]);
    }
  }
  UNROLL4 for (int p = 0; p < NP; p++) {
    __m256i mk0, mk1;
    panel_masks(p < NP - 1 ? NR : w, &mk0, &mk1);
    store16(acc[p], p < NP - 1 || w == NR, c, e, i0, j + p * NR, mk0, mk1);
  }
}

/* A's only row against np panels from column j (the last wl columns wide), four at a time. */
INLINE AVX2 void row_all(int64_t k, const float *a, const float *pack, int64_t np, int64_t wl,
                         float *c, const pd_kcpu_epi16 *e, int64_t i0, int64_t j) {
  for (int64_t q = 0; q < np; q += 4) {
    int64_t g = np - q < 4 ? np - q : 4, w = q + g == np ? wl : NR;
    const float *pq = pack + q * k * NR;
    int64_t at = j + q * NR;
    switch (g) {
      case 4: row_panels(4, k, a, pq, w, c, e, i0, at); break;
      case 3: row_panels(3, k, a, pq, w, c, e, i0, at); break;
      case 2: row_panels(2, k, a, pq, w, c, e, i0, at); break;
      default: row_panels(1, k, a, pq, w, c, e, i0, at); break;
    }
  }
}

/* Rows [0, m) of C against columns [j, j + 16): six rows at a time, then four, two, one. */
INLINE AVX2 void columns(bool whole, int64_t m, int64_t k, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float *c, int64_t ldc,
                         const pd_kcpu_epi16 *e, int64_t j, __m256i mk0, __m256i mk1) {
  int64_t i = 0;
  for (; i + MR <= m; i += MR)
    tile(MR, whole, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, e, i, j, mk0, mk1);
  if (i + 4 <= m) {
    tile(4, whole, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, e, i, j, mk0, mk1);
    i += 4;
  }
  if (i + 2 <= m) {
    tile(2, whole, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, e, i, j, mk0, mk1);
    i += 2;
  }
  if (i < m) tile(1, whole, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, e, i, j, mk0, mk1);
}

/* B's columns [j, j + w) (w <= 16) copied into pack, k rows of 16 (the missing columns 0). */
INLINE AVX2 void pack_panel(int64_t k, const float *b, int64_t ldb, int64_t j, int64_t w,
                            float *pack) {
  if (w == NR) {
    for (int64_t q = 0; q < k; q++) {
      _mm256_storeu_ps(pack + q * NR, _mm256_loadu_ps(b + q * ldb + j));
      _mm256_storeu_ps(pack + q * NR + 8, _mm256_loadu_ps(b + q * ldb + j + 8));
    }
    return;
  }
  for (int64_t q = 0; q < k; q++)
    for (int64_t t = 0; t < NR; t++) pack[q * NR + t] = t < w ? b[q * ldb + j + t] : 0.0f;
}

/* Rows [0, m) of C against its columns [j, j + w) (w <= 16), B's panel of them at pack. */
INLINE AVX2 void panel(int64_t m, int64_t k, const float *a, int64_t lda, const float *pack,
                       int64_t w, float *c, int64_t ldc, const pd_kcpu_epi16 *e, int64_t j) {
  __m256i mk0, mk1;
  panel_masks(w, &mk0, &mk1);
  if (w == NR) columns(true, m, k, a, lda, pack, NR, c, ldc, e, j, mk0, mk1);
  else columns(false, m, k, a, lda, pack, NR, c, ldc, e, j, mk0, mk1);
}

/* One tile of R rows (6, 4, 2, 1: the instances) against the panel at pack of w columns. */
INLINE AVX2 void tile_of(int64_t R, int64_t k, const float *a, int64_t lda, const float *pack,
                         int64_t w, float *c, int64_t ldc, const pd_kcpu_epi16 *e, int64_t i0,
                         int64_t j) {
  __m256i mk0, mk1;
  panel_masks(w, &mk0, &mk1);
  if (w == NR) {
    switch (R) {
      case 6: tile(6, true, k, a, lda, pack, NR, c, ldc, e, i0, j, mk0, mk1); break;
      case 4: tile(4, true, k, a, lda, pack, NR, c, ldc, e, i0, j, mk0, mk1); break;
      case 2: tile(2, true, k, a, lda, pack, NR, c, ldc, e, i0, j, mk0, mk1); break;
      default: tile(1, true, k, a, lda, pack, NR, c, ldc, e, i0, j, mk0, mk1); break;
    }
    return;
  }
  switch (R) {
    case 6: tile(6, false, k, a, lda, pack, NR, c, ldc, e, i0, j, mk0, mk1); break;
    case 4: tile(4, false, k, a, lda, pack, NR, c, ldc, e, i0, j, mk0, mk1); break;
    case 2: tile(2, false, k, a, lda, pack, NR, c, ldc, e, i0, j, mk0, mk1); break;
    default: tile(1, false, k, a, lda, pack, NR, c, ldc, e, i0, j, mk0, mk1); break;
  }
}

/* Rows [0, m) of C against np panels packed one after another from column j, the last wl
 * columns wide: a tile of rows across all the panels, then the next, so that C is written as
 * six streams at a time; panel by panel every row of C took 64 bytes in turn (MobileNetV3's
 * first 1x1 layers, 16 -> 64 channels on 112x112: 64 streams of stores, which ran 15-40% slower
 * in the model). */
INLINE AVX2 void chunk_rows(int64_t m, int64_t k, const float *a, int64_t lda,
                            const float *pack, int64_t np, int64_t wl, float *c, int64_t ldc,
                            const pd_kcpu_epi16 *e, int64_t j) {
  for (int64_t i = 0; i < m;) {
    int64_t R = m - i >= MR ? MR : m - i >= 4 ? 4 : m - i >= 2 ? 2 : 1;
    if (R == 1) {
      row_all(k, a + i * lda, pack, np, wl, c + i * ldc, e, i, j);
      break;
    }
    for (int64_t q = 0; q < np; q++)
      tile_of(R, k, a + i * lda, lda, pack + q * k * NR, q == np - 1 ? wl : NR, c + i * ldc, ldc,
              e, i, j + q * NR);
    i += R;
  }
}

AVX2 void pd_kcpu_gemm8p_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                 const float *pack, float *c, int64_t ldc,
                                 const pd_kcpu_epi16 *e) {
  if (m == 1) {
    int64_t np = (n + NR - 1) / NR;
    row_all(k, a, pack, np, n - (np - 1) * NR, c, e, 0, 0);
    return;
  }
  for (int64_t j = 0; j < n; j += NR, pack += k * NR)
    panel(m, k, a, lda, pack, n - j < NR ? n - j : NR, c, ldc, e, j);
}

AVX2 void pd_kcpu_gemm8_pack_f32(int64_t k, int64_t n, const float *b, int64_t ldb,
                                 float *pack) {
  for (int64_t j = 0; j < n; j += NR)
    pack_panel(k, b, ldb, j, n - j < NR ? n - j : NR, pack + j * k);
}

/* The same panel from B^T [n, k] (row stride ldbt): its rows [j, j + w) become the panel's
 * columns, each row read along k. */
INLINE AVX2 void pack_panel_t(int64_t k, const float *bt, int64_t ldbt, int64_t j, int64_t w,
                              float *pack) {
  for (int64_t t = 0; t < NR; t++) {
    const float *row = bt + (j + t) * ldbt;
    if (t < w)
      for (int64_t q = 0; q < k; q++) pack[q * NR + t] = row[q];
    else
      for (int64_t q = 0; q < k; q++) pack[q * NR + t] = 0.0f;
  }
}

INLINE AVX2 void pack_any(bool tb, int64_t k, const float *b, int64_t ldb, int64_t j, int64_t w,
                          float *pack) {
  if (tb) pack_panel_t(k, b, ldb, j, w, pack);
  else pack_panel(k, b, ldb, j, w, pack);
}

/* Rows [0, m) of C through the whole packed B, A_BLOCK bytes of A's rows at a time (the filters
 * stay in L2 while every panel passes them). */
AVX2 void pd_kcpu_gemm8p_rows_epi_f32(int64_t m, int64_t n, int64_t k, const float *a,
                                      int64_t lda, const float *pack, float *c, int64_t ldc,
                                      const pd_kcpu_epi16 *e) {
  int64_t mc = A_BLOCK / ((int64_t)sizeof(float) * k) / MR * MR;
  if (mc < MR) mc = MR;
  for (int64_t i0 = 0; i0 < m; i0 += mc) {
    pd_kcpu_epi16 eb; /* the epilogue's rows from i0 on */
    if (e) {
      eb = *e;
      if (eb.rbias) eb.rbias += i0;
      if (eb.res) eb.res += i0 * eb.ldres;
    }
    pd_kcpu_gemm8p_epi_f32(m - i0 < mc ? m - i0 : mc, n, k, a + i0 * lda, lda, pack,
                           c + i0 * ldc, ldc, e ? &eb : NULL);
  }
}

/* C = A op(B), op(B) = B^T where tb (B [n, k]). */
static AVX2 bool gemm8_epi(bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                           const pd_kcpu_epi16 *e) {
  if ((int64_t)sizeof(float) * m * k > A_BLOCK && n > NR) {
    /* filters past L2 (a 512 -> 512 layer's are 1 MB): B packed whole first, then A a block of
     * rows at a time against every panel, instead of all of A from L3 for each panel */
    int64_t np = (n + NR - 1) / NR;
    float *all = pd_k_host_alloc((size_t)(np * k * NR) * sizeof(float));
    if (all) {
      for (int64_t j = 0; j < n; j += NR) pack_any(tb, k, b, ldb, j, n - j < NR ? n - j : NR,
                                                   all + j * k);
      pd_kcpu_gemm8p_rows_epi_f32(m, n, k, a, lda, all, c, ldc, e);
      pd_k_host_free(all);
      return true;
    }
  }
  float stack[PACK_STACK_K * NR], *pack = stack;
  if (k > PACK_STACK_K && !(pack = pd_k_host_alloc((size_t)k * NR * sizeof(float))))
    return false;
  /* as many panels at a time as the stack's 32 KB hold */
  int64_t cols = (k > PACK_STACK_K ? 1 : PACK_STACK_K / k) * NR;
  for (int64_t j = 0; j < n; j += cols) {
    int64_t w = n - j < cols ? n - j : cols, np = (w + NR - 1) / NR;
    for (int64_t q = 0; q < np; q++)
      pack_any(tb, k, b, ldb, j + q * NR, q == np - 1 ? w - q * NR : NR, pack + q * k * NR);
    chunk_rows(m, k, a, lda, pack, np, w - (np - 1) * NR, c, ldc, e, j);
  }
  if (pack != stack) pd_k_host_free(pack);
  return true;
}

AVX2 bool pd_kcpu_gemm8_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                const float *b, int64_t ldb, float *c, int64_t ldc,
                                const pd_kcpu_epi16 *e) {
  return gemm8_epi(false, m, n, k, a, lda, b, ldb, c, ldc, e);
}

AVX2 bool pd_kcpu_gemm8t_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                 const float *bt, int64_t ldbt, float *c, int64_t ldc,
                                 const pd_kcpu_epi16 *e) {
  return gemm8_epi(true, m, n, k, a, lda, bt, ldbt, c, ldc, e);
}

/* ---- pd_kcpu_gemm_nt8_f32: C = A B^T, both read along K ---- */

/* R rows of A (1..4) against J rows of B (1..4): R x J dot products over k, eight terms a step,
 * the last step masked; each sum's eight lanes added at the end. */
INLINE AVX2 void dots(int R, int J, int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float *c, int64_t ldc, __m256i lane) {
  __m256 acc[4][4];
  UNROLL4 for (int r = 0; r < 4; r++)
    UNROLL4 for (int jj = 0; jj < 4; jj++) acc[r][jj] = _mm256_setzero_ps();
  int64_t q = 0;
  for (; q + 8 <= k; q += 8) {
    __m256 bv[4];
    UNROLL4 for (int jj = 0; jj < J; jj++) bv[jj] = _mm256_loadu_ps(b + jj * ldb + q);
    UNROLL4 for (int r = 0; r < R; r++) {
      __m256 av = _mm256_loadu_ps(a + r * lda + q);
      UNROLL4 for (int jj = 0; jj < J; jj++)
        acc[r][jj] = _mm256_fmadd_ps(av, bv[jj], acc[r][jj]);
    }
  }
  if (q < k) {
    __m256i mk = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(k - q)), lane);
    __m256 bv[4];
    UNROLL4 for (int jj = 0; jj < J; jj++)
      bv[jj] = _mm256_maskload_ps(b + jj * ldb + q, mk);
    UNROLL4 for (int r = 0; r < R; r++) {
      __m256 av = _mm256_maskload_ps(a + r * lda + q, mk);
      UNROLL4 for (int jj = 0; jj < J; jj++)
        acc[r][jj] = _mm256_fmadd_ps(av, bv[jj], acc[r][jj]);
    }
  }
  UNROLL4 for (int r = 0; r < R; r++)
    UNROLL4 for (int jj = 0; jj < J; jj++) {
      __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[r][jj]),
                            _mm256_extractf128_ps(acc[r][jj], 1));
      h = _mm_add_ps(h, _mm_movehl_ps(h, h));
      h = _mm_add_ss(h, _mm_movehdup_ps(h));
      c[r * ldc + jj] = _mm_cvtss_f32(h);
    }
}

INLINE AVX2 void dots_rows(int J, int64_t m, int64_t k, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float *c, int64_t ldc, __m256i lane) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) dots(4, J, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, lane);
  switch (m - i) {
    case 3: dots(3, J, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, lane); break;
    case 2: dots(2, J, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, lane); break;
    case 1: dots(1, J, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, lane); break;
    default: break;
  }
}

AVX2 void pd_kcpu_gemm_nt8_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                               const float *b, int64_t ldb, float *c, int64_t ldc) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  /* four rows of B at a time (they stay in L1) against every row of A */
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) dots_rows(4, m, k, a, lda, b + j * ldb, ldb, c + j, ldc, lane);
  switch (n - j) {
    case 3: dots_rows(3, m, k, a, lda, b + j * ldb, ldb, c + j, ldc, lane); break;
    case 2: dots_rows(2, m, k, a, lda, b + j * ldb, ldb, c + j, ldc, lane); break;
    case 1: dots_rows(1, m, k, a, lda, b + j * ldb, ldb, c + j, ldc, lane); break;
    default: break;
  }
}

#endif /* PD_KCPU_HAVE_AVX2 && PD_KCPU_FASTMATH_f32 */
