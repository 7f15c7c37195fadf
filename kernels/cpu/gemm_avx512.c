/* gemm_avx512.c -- fp32 products of our own for AVX-512F CPUs, where OpenBLAS runs its AVX2
 * kernels (the environment pins it to them) at about half of what the CPU can do, or its SSE3
 * ones where it does not know the CPU:
 * - pd_kcpu_gemm16_f32: C = alpha op(A) op(B) + beta C for every fp32 product (a layer's
 *   forward and gradient products, a convolution's); a tile of 12 rows by 32 columns of C sits
 *   in 24 registers for a block of K while each element of op(A) is broadcast against a row of
 *   a panel of op(B). Panels of B (B^T) are copied together where several tiles read them
 *   (else read in place); an op(A) past L2 is taken in blocks of K and rows (blocked), a short
 *   K a tile of rows across a chunk of panels (chunk), one row four panels at a time
 *   (row_all).
 * - pd_kcpu_gemm_nt16_f32: C = A B^T as dot products along K, each row of B read once (a 1x1
 *   convolution of one-pixel maps: the images times the filters).
 * - pd_kcpu_gemm_small16_f32: C += A B with B at most 64 columns: the step of gemm_act_chain
 *   (gemm.c) at small hidden sizes, where an OpenBLAS call is mostly overhead and two threads
 *   calling it at once queue on its buffer lock (an RNN step at hidden 32 on 16 rows a thread
 *   took longer on two threads than on one). Four rows of C at a time.
 * Each element of C is its k products added in order with fused multiply-adds, so results
 * differ from OpenBLAS's in the last bits. Compiled with a function attribute
 * (fastmath_avx512.c); nothing calls it on a CPU without AVX-512F (pd_kcpu_simd). */
#include "config.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels.h"

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>
#include <string.h>

#include "kernels/cpu/epi_avx512.h"

#define AVX512 __attribute__((target("avx512f,fma")))
#define INLINE inline __attribute__((always_inline))
/* The register blocks' loops unrolled, so that acc[][] and bv[] live in registers. */
#define UNROLL _Pragma("GCC unroll 4")
#define UNROLL12 _Pragma("GCC unroll 12")

/* R rows (1..4) of C, NV vectors of 16 columns (1..4), the last masked by `last`. */
static INLINE AVX512 void rows(int R, int NV, int64_t k, const float *a, int64_t lda,
                               const float *b, int64_t ldb, float *c, int64_t ldc,
                               __mmask16 last) {
  __m512 acc[4][4];
  UNROLL for (int r = 0; r < R; r++)
    UNROLL for (int v = 0; v < NV; v++)
      acc[r][v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, c + r * ldc + 16 * v);
  for (int64_t q = 0; q < k; q++) {
    __m512 bv[4];
    UNROLL for (int v = 0; v < NV; v++)
      bv[v] = _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, b + q * ldb + 16 * v);
    UNROLL for (int r = 0; r < R; r++) {
      __m512 av = _mm512_set1_ps(a[r * lda + q]);
      UNROLL for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  UNROLL for (int r = 0; r < R; r++)
    UNROLL for (int v = 0; v < NV; v++)
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, v == NV - 1 ? last : 0xffff, acc[r][v]);
}

static INLINE AVX512 void all_rows(int NV, int64_t m, int64_t k, const float *a, int64_t lda,
                                   const float *b, int64_t ldb, float *c, int64_t ldc,
                                   __mmask16 last) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) rows(4, NV, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, last);
  for (; i < m; i++) rows(1, NV, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, last);
}

AVX512 void pd_kcpu_gemm_small16_f32(int64_t m, int64_t n, int64_t k, const float *a,
                                     int64_t lda, const float *b, int64_t ldb, float *c,
                                     int64_t ldc) {
  int nv = (int)((n + 15) / 16);
  __mmask16 last = (__mmask16)(n % 16 ? (1u << (n % 16)) - 1u : 0xffffu);
  switch (nv) { /* one instance per width, so the register blocks are fixed */
    case 1: all_rows(1, m, k, a, lda, b, ldb, c, ldc, last); break;
    case 2: all_rows(2, m, k, a, lda, b, ldb, c, ldc, last); break;
    case 3: all_rows(3, m, k, a, lda, b, ldb, c, ldc, last); break;
    case 4: all_rows(4, m, k, a, lda, b, ldb, c, ldc, last); break;
    default: break; /* n == 0 */
  }
}

/* ---- pd_kcpu_gemm_nt16_f32: C = A B^T, both read along K ---- */

/* R rows of A (1..4) against J rows of B (1..4): R x J dot products over k, sixteen terms a
 * step, the last step masked; each sum's sixteen lanes added at the end. */
static INLINE AVX512 void dots(int R, int J, int64_t k, const float *a, int64_t lda,
                               const float *b, int64_t ldb, float *c, int64_t ldc) {
  __m512 acc[4][4];
  UNROLL for (int r = 0; r < 4; r++)
    UNROLL for (int jj = 0; jj < 4; jj++) acc[r][jj] = _mm512_setzero_ps();
  for (int64_t q = 0; q < k; q += 16) {
    __mmask16 mk = k - q >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (k - q)) - 1u);
    __m512 bv[4];
    UNROLL for (int jj = 0; jj < J; jj++) bv[jj] = _mm512_maskz_loadu_ps(mk, b + jj * ldb + q);
    UNROLL for (int r = 0; r < R; r++) {
      __m512 av = _mm512_maskz_loadu_ps(mk, a + r * lda + q);
      UNROLL for (int jj = 0; jj < J; jj++) acc[r][jj] = _mm512_fmadd_ps(av, bv[jj], acc[r][jj]);
    }
  }
  UNROLL for (int r = 0; r < R; r++)
    UNROLL for (int jj = 0; jj < J; jj++) c[r * ldc + jj] = _mm512_reduce_add_ps(acc[r][jj]);
}

static AVX512 void dots_rows(int J, int64_t m, int64_t k, const float *a, int64_t lda,
                             const float *b, int64_t ldb, float *c, int64_t ldc) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) dots(4, J, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
  switch (m - i) {
    case 3: dots(3, J, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc); break;
    case 2: dots(2, J, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc); break;
    case 1: dots(1, J, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc); break;
    default: break;
  }
}

AVX512 void pd_kcpu_gemm_nt16_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                  const float *b, int64_t ldb, float *c, int64_t ldc) {
  /* four rows of B at a time (they stay in L1) against every row of A */
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) dots_rows(4, m, k, a, lda, b + j * ldb, ldb, c + j, ldc);
  switch (n - j) {
    case 3: dots_rows(3, m, k, a, lda, b + j * ldb, ldb, c + j, ldc); break;
    case 2: dots_rows(2, m, k, a, lda, b + j * ldb, ldb, c + j, ldc); break;
    case 1: dots_rows(1, m, k, a, lda, b + j * ldb, ldb, c + j, ldc); break;
    default: break;
  }
}

/* ---- pd_kcpu_gemm16_f32 ---- */

#define MR 12  /* rows of C a tile */
#define NR 32  /* columns of C a panel: two vectors */
#define KC 192 /* a longer K is taken in blocks of this, so that a block of the panel of op(B)
                * (24 KB) stays in L1 across the row tiles (it came from L2 on every tile): one
                * thread, [64, 2048]^T x [2048, 256] at 134 GFLOP/s against 88 unblocked,
                * [48, 4096] x [4096, 256] at 120 against 79 */
#define PART_STACK_M 128

typedef struct ep16 {
  float alpha, beta;
  const float *bias; /* a bias per column, at the panel's first column, or NULL */
  const pd_kcpu_epi16 *epi; /* then a bias per row, a residual and an activation, or NULL */
  const float *res;  /* epi's residual at the tile's first row and column */
  int64_t row;       /* the tile's first row (epi's bias) */
} ep16;

/* Vector v (16 columns, mk of them) of row r of a tile as ep (va, vb: alpha and beta
 * broadcast) makes it, to go to crow (C's row r). */
static INLINE AVX512 __m512 epi_vec(__m512 sum, const ep16 *ep, __m512 va, __m512 vb, int64_t r,
                                    int v, const float *crow, __mmask16 mk) {
  const float *cp = crow + 16 * v;
  __m512 x = ep->alpha == 1.0f ? sum : _mm512_mul_ps(va, sum);
  if (ep->beta == 1.0f) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, cp));
  else if (ep->beta != 0.0f) x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk, cp), x);
  if (ep->bias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, ep->bias + 16 * v));
  if (ep->epi) {
    const pd_kcpu_epi16 *e = ep->epi;
    if (e->rbias) x = _mm512_add_ps(x, _mm512_set1_ps(e->rbias[ep->row + r]));
    if (ep->res) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, ep->res + r * e->ldres + 16 * v));
    x = pd_kcpu_epi_act(e, x);
  }
  return x;
}

static INLINE AVX512 void store(__m512 sum, const ep16 *ep, __m512 va, __m512 vb, int r, int v,
                                float *crow, __mmask16 mk) {
  _mm512_mask_storeu_ps(crow + 16 * v, mk, epi_vec(sum, ep, va, vb, r, v, crow, mk));
}

/* x to C at p, the lanes of mk, past the caches where the vector is whole and aligned. */
static INLINE AVX512 void stream16(float *p, __mmask16 mk, __m512 x) {
  if (mk == 0xffff && !((uintptr_t)p & 63)) _mm512_stream_ps(p, x);
  else _mm512_mask_storeu_ps(p, mk, x);
}

/* stream_panel's rows through a convolution's epilogue, ACT a constant (store_conv's). */
static INLINE AVX512 void stream_conv(int ACT, int64_t m, int nv, const float *part,
                                      const pd_kcpu_epi16 *e, int64_t row, float *c,
                                      int64_t ldc, __mmask16 last) {
  pd_kcpu_epi16 el = *e;
  el.act = ACT;
  for (int64_t r = 0; r < m; r++) {
    __m512 b = _mm512_set1_ps(el.rbias ? el.rbias[row + r] : 0.0f);
    for (int v = 0; v < nv; v++)
      stream16(c + r * ldc + 16 * v, v == nv - 1 ? last : 0xffff,
               pd_kcpu_epi_act(&el, _mm512_add_ps(_mm512_loadu_ps(part + r * NR + 16 * v), b)));
  }
}

/* Rows [0, m) of a panel of nv vectors (the last masked by `last`) from their sums in part (rows
 * of NR) through ep (its rows from ep->row) to C, every whole aligned vector past the caches
 * (fastmath.h's `stream`): apart from the products' tiles, whose code then stays as it is (both
 * kinds of stores in their epilogues made the 1x1 products 2-3% slower however rarely they
 * streamed). */
static AVX512 void stream_panel(int64_t m, int nv, const float *part, const ep16 *ep, float *c,
                                int64_t ldc, __mmask16 last) {
  const pd_kcpu_epi16 *e = ep->epi;
  if (ep->alpha == 1.0f && ep->beta == 0.0f && !ep->bias && e && !ep->res) {
#define STREAM_CONV(ACT) \
  case ACT: stream_conv(ACT, m, nv, part, e, ep->row, c, ldc, last); return
    switch (e->act) { /* as tile's */
      STREAM_CONV(PD_KCPU_EPI_NONE);
      STREAM_CONV(PD_KCPU_EPI_RELU);
      STREAM_CONV(PD_KCPU_EPI_RELU6);
      STREAM_CONV(PD_KCPU_EPI_HSWISH);
      default: break;
    }
#undef STREAM_CONV
  }
  __m512 va = _mm512_set1_ps(ep->alpha), vb = _mm512_set1_ps(ep->beta);
  for (int64_t r = 0; r < m; r++)
    for (int v = 0; v < nv; v++) {
      __mmask16 mk = v == nv - 1 ? last : 0xffff;
      __m512 sum = _mm512_loadu_ps(part + r * NR + 16 * v);
      stream16(c + r * ldc + 16 * v, mk, epi_vec(sum, ep, va, vb, r, v, c + r * ldc, mk));
    }
}

/* A tile's R rows of NV vectors to C as a convolution's epilogue leaves them: act(sum + the
 * row's bias), ACT a constant (its switch folded) and e's parameters read once, before the first
 * store (read through e after one, they could be any float C's stores write). Through store()
 * each vector was a dozen tests and loads, and half of the time of a product of k = 16 went to
 * them (MobileNetV3's 16 -> 64 1x1 layer on 112x112). */
static INLINE AVX512 void store_conv(int ACT, int R, int NV, __m512 acc[MR][2],
                                     const pd_kcpu_epi16 *e, int64_t row, float *c,
                                     int64_t ldc, __mmask16 last) {
  pd_kcpu_epi16 el = *e;
  el.act = ACT;
  float rb[MR];
  UNROLL12 for (int r = 0; r < R; r++) rb[r] = el.rbias ? el.rbias[row + r] : 0.0f;
  UNROLL12 for (int r = 0; r < R; r++) {
    __m512 b = _mm512_set1_ps(rb[r]);
    UNROLL for (int v = 0; v < NV; v++)
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, v == NV - 1 ? last : 0xffff,
                            pd_kcpu_epi_act(&el, _mm512_add_ps(acc[r][v], b)));
  }
}

/* One tile: R rows (1..MR) and NV vectors (1, 2; the last masked by `last`) of C, over k terms.
 * op(A)'s element (r, q) is a[r * lda + q], or a[q * lda + r] when TA; row q of the panel of op(B)
 * is b + q * ldb, and when PK (a packed panel, ldb NR, its columns past the last padded) it is read
 * whole: with a mask kept in a register and fewer registers for A's rows, the loop reloaded spilled
 * pointers and the mask from the stack on every term. The sums start from `in` (row stride NR) when
 * not NULL, else from 0; they go to `out` (the same) as they are when not NULL, else through the
 * epilogue to C. pfb (NULL: none): the same k rows of the next packed panel, prefetched. */
#define PF_TA 16
static INLINE AVX512 void tile(bool TA, bool PK, int R, int NV, int64_t k, const float *a,
                               int64_t lda, const float *b, int64_t ldb, const float *in,
                               float *out, const ep16 *ep, float *c, int64_t ldc,
                               __mmask16 last, const float *pfb) {
  __m512 acc[MR][2];
  UNROLL12 for (int r = 0; r < R; r++)
    UNROLL for (int v = 0; v < NV; v++)
      acc[r][v] = in ? _mm512_loadu_ps(in + r * NR + 16 * v) : _mm512_setzero_ps();
  for (int64_t q = 0; q < k; q++) {
    __m512 bv[2];
    /* the next tile's rows of A, a line of each every sixteen terms, into L2: an inference
     * model's filters come from L3 (ResNet50's 512 3x3 filters on 7x7, 9.4 MB, read once an
     * image: 1.47 ms where they were in L2 1.13; prefetched 1.12). Prefetches never fault: the
     * last tile's reach past A. */
    if (!TA && (q & 15) == 0)
      UNROLL12 for (int r = 0; r < R; r++)
        _mm_prefetch((const char *)(a + (R + r) * lda + q), _MM_HINT_T1);
    /* op(A) transposed: each term a row of A, lda apart (a small map's 1x1 convolution made
     * transposed reads its input channel by channel, a line a channel): the row PF_TA terms on,
     * into L1. An input another op just wrote, in the other core's cache or L3, came a line at
     * a time: MobileNetV3's 672 -> 112 on 14x14 took 110 us alone, 169 after the depthwise
     * layer that wrote it, 208 with the caches swept as in the model; prefetched 119 and 141
     * (208 -> 139 in the model). */
    if (TA) {
      _mm_prefetch((const char *)(a + (q + PF_TA) * lda), _MM_HINT_T0);
      _mm_prefetch((const char *)(a + (q + PF_TA) * lda + R - 1), _MM_HINT_T0);
    }
    if (pfb) { /* the same rows of the next packed panel (its two lines), into L2 */
      _mm_prefetch((const char *)(pfb + q * NR), _MM_HINT_T1);
      _mm_prefetch((const char *)(pfb + q * NR + 16), _MM_HINT_T1);
    }
    UNROLL for (int v = 0; v < NV; v++)
      bv[v] = PK ? _mm512_loadu_ps(b + q * NR + 16 * v)
                 : _mm512_maskz_loadu_ps(v == NV - 1 ? last : 0xffff, b + q * ldb + 16 * v);
    UNROLL12 for (int r = 0; r < R; r++) {
      __m512 av = _mm512_set1_ps(TA ? a[q * lda + r] : a[r * lda + q]);
      UNROLL for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  if (out) {
    UNROLL12 for (int r = 0; r < R; r++)
      UNROLL for (int v = 0; v < NV; v++) _mm512_storeu_ps(out + r * NR + 16 * v, acc[r][v]);
    return;
  }
  const pd_kcpu_epi16 *e = ep->epi;
  if (ep->alpha == 1.0f && ep->beta == 0.0f && !ep->bias && e && !ep->res) {
#define STORE_CONV(ACT) \
  case ACT: store_conv(ACT, R, NV, acc, e, ep->row, c, ldc, last); return
    switch (e->act) { /* a convolution's epilogue: the tests once a tile */
      STORE_CONV(PD_KCPU_EPI_NONE);
      STORE_CONV(PD_KCPU_EPI_RELU);
      STORE_CONV(PD_KCPU_EPI_RELU6);
      STORE_CONV(PD_KCPU_EPI_HSWISH);
      default: break;
    }
#undef STORE_CONV
  }
  __m512 va = _mm512_set1_ps(ep->alpha), vb = _mm512_set1_ps(ep->beta);
  UNROLL12 for (int r = 0; r < R; r++)
    UNROLL for (int v = 0; v < NV; v++)
      store(acc[r][v], ep, va, vb, r, v, c + r * ldc, v == NV - 1 ? last : 0xffff);
}

/* All of C's rows against one panel of NV vectors, K in blocks of KC when `part` (m rows of
 * NR partial sums) is given, else in one. These k terms are the first of the sums when `from0`
 * (else they go onto those in part) and the last when `to_c` (else the sums stay in part).
 * next (NULL: none): the next packed panel (k rows of NR), which the first tile of each K block
 * prefetches: an inference model's packed weights come from L3 (ERNIE's 384 x 1536 products
 * 484 us where they were in L2, 550 from L3; prefetched 500). */
static INLINE AVX512 void panel(bool TA, bool PK, int NV, int64_t m, int64_t k, const float *a,
                                int64_t lda, const float *b, int64_t ldb, float *part,
                                bool from0, bool to_c, const ep16 *ep, float *c, int64_t ldc,
                                __mmask16 last, const float *next) {
  int64_t kc = part ? KC : k;
  for (int64_t k0 = 0; k0 < k; k0 += kc) {
    int64_t kk = k - k0 < kc ? k - k0 : kc;
    const float *ak = TA ? a + k0 * lda : a + k0, *bk = b + k0 * ldb;
    bool first = from0 && k0 == 0, final = to_c && k0 + kk == k;
#define TILE(R)                                                                             \
  do {                                                                                      \
    ep16 et = *ep;                                                                          \
    et.row += i;                                                                            \
    if (et.res) et.res += i * et.epi->ldres;                                                \
    tile(TA, PK, R, NV, kk, TA ? ak + i : ak + i * lda, lda, bk, ldb,                       \
         first ? NULL : part + i * NR, final ? NULL : part + i * NR, &et, c + i * ldc, ldc, \
         last, next && i == 0 ? next + k0 * NR : NULL);                                     \
  } while (0)
    int64_t i = 0;
    for (; i + MR <= m; i += MR) TILE(MR);
    if (i + 8 <= m) {
      TILE(8);
      i += 8;
    }
    if (i + 4 <= m) {
      TILE(4);
      i += 4;
    }
    for (; i < m; i++) TILE(1);
#undef TILE
  }
}

/* panel's instances: B a packed panel (ldb 0: rows of NR, padded) or in place (ldb its row
 * stride), two vectors or one. */
#define PANEL_INSTANCES(TA)                                                                   \
  do {                                                                                        \
    if (ldb == 0 && nv == 2)                                                                  \
      panel(TA, true, 2, m, k, a, lda, b, NR, part, from0, to_c, ep, c, ldc, last, next);     \
    else if (ldb == 0)                                                                        \
      panel(TA, true, 1, m, k, a, lda, b, NR, part, from0, to_c, ep, c, ldc, last, next);     \
    else if (nv == 2)                                                                         \
      panel(TA, false, 2, m, k, a, lda, b, ldb, part, from0, to_c, ep, c, ldc, last, NULL);   \
    else                                                                                      \
      panel(TA, false, 1, m, k, a, lda, b, ldb, part, from0, to_c, ep, c, ldc, last, NULL);   \
  } while (0)

static AVX512 void panel_na(int nv, int64_t m, int64_t k, const float *a, int64_t lda,
                            const float *b, int64_t ldb, float *part, bool from0, bool to_c,
                            const ep16 *ep, float *c, int64_t ldc, __mmask16 last,
                            const float *next) {
  PANEL_INSTANCES(false);
}

static AVX512 void panel_ta(int nv, int64_t m, int64_t k, const float *a, int64_t lda,
                            const float *b, int64_t ldb, float *part, bool from0, bool to_c,
                            const ep16 *ep, float *c, int64_t ldc, __mmask16 last,
                            const float *next) {
  PANEL_INSTANCES(true);
}
#undef PANEL_INSTANCES

/* The panel's columns and the mask of its last vector. */
static INLINE int panel_of(int64_t n, int64_t j, __mmask16 *last) {
  int64_t w = n - j < NR ? n - j : NR;
  *last = (__mmask16)(w % 16 ? (1u << (w % 16)) - 1u : 0xffffu);
  return w > 16 ? 2 : 1;
}

/* One panel of w (<= NR) columns of B (row stride ldb) into pack (k rows of NR). */
static AVX512 void copy_panel(int64_t k, int64_t w, const float *b, int64_t ldb, float *pack) {
  __mmask16 m0 = (__mmask16)(w >= 16 ? 0xffffu : (1u << w) - 1u);
  __mmask16 m1 = (__mmask16)(w <= 16 ? 0u : w >= 32 ? 0xffffu : (1u << (w - 16)) - 1u);
  for (int64_t q = 0; q < k; q++) {
    _mm512_storeu_ps(pack + q * NR, _mm512_maskz_loadu_ps(m0, b + q * ldb));
    _mm512_storeu_ps(pack + q * NR + 16, _mm512_maskz_loadu_ps(m1, b + q * ldb + 16));
  }
}

/* ---- Short products (k <= KC): a tile of rows across a chunk of panels ----
 * Panel by panel, every row of C takes 128 bytes in turn: MobileNetV3's first 1x1 layers (16 ->
 * 64 channels on 112x112, k = 16) wrote 64 streams of stores, read B a row 50 KB apart (a page a
 * term) and ran at 12 GB/s of output. Here the panels of a chunk of columns (32 KB of them,
 * PACK_STACK_K / k) lie together and each tile of rows passes all of them, so that C is written
 * as MR streams; each sum is the same. */
static INLINE AVX512 void tile_ep(bool TA, int R, int NV, int64_t k, const float *a, int64_t lda,
                                  const float *b, const ep16 *ep0, int64_t i, int64_t j,
                                  float *c, int64_t ldc, __mmask16 last) {
  ep16 ep = *ep0;
  ep.bias = ep0->bias ? ep0->bias + j : NULL;
  ep.res = ep0->res ? ep0->res + i * ep0->epi->ldres + j : NULL;
  ep.row = i;
  tile(TA, true, R, NV, k, TA ? a + i : a + i * lda, lda, b, NR, NULL, NULL, &ep,
       c + i * ldc + j, ldc, last, NULL);
}

/* Rows [0, m) of C against np panels at pack (k rows of NR each, one after another) from
 * column j, the last of wl columns. */
static AVX512 void chunk(bool ta, int64_t m, int64_t k, const float *a, int64_t lda,
                         const float *pack, int64_t np, int64_t wl, const ep16 *ep, int64_t j,
                         float *c, int64_t ldc) {
  __mmask16 lastw;
  int nvl = panel_of(wl, 0, &lastw);
  for (int64_t i = 0; i < m;) {
    int R = m - i >= MR ? MR : m - i >= 8 ? 8 : m - i >= 4 ? 4 : 1;
    for (int64_t q = 0; q < np; q++) {
      const float *bq = pack + q * k * NR;
      int64_t jq = j + q * NR;
      bool tail = q == np - 1;
      int nv = tail ? nvl : 2;
      __mmask16 last = tail ? lastw : 0xffff;
#define CHUNK_TILE(TA, RR)                                                      \
  do {                                                                          \
    if (nv == 2) tile_ep(TA, RR, 2, k, a, lda, bq, ep, i, jq, c, ldc, last);    \
    else tile_ep(TA, RR, 1, k, a, lda, bq, ep, i, jq, c, ldc, last);            \
  } while (0)
      if (ta) {
        switch (R) {
          case MR: CHUNK_TILE(true, MR); break;
          case 8: CHUNK_TILE(true, 8); break;
          case 4: CHUNK_TILE(true, 4); break;
          default: CHUNK_TILE(true, 1); break;
        }
      } else {
        switch (R) {
          case MR: CHUNK_TILE(false, MR); break;
          case 8: CHUNK_TILE(false, 8); break;
          case 4: CHUNK_TILE(false, 4); break;
          default: CHUNK_TILE(false, 1); break;
        }
      }
#undef CHUNK_TILE
    }
    i += R;
  }
}

/* chunk's product (A not transposed) for a C stored past the caches: each tile's sums in a
 * buffer, then through stream_panel (a separate function, so that chunk's tiles stay as they
 * are). */
static AVX512 void chunk_stream(int64_t m, int64_t k, const float *a, int64_t lda,
                                const float *pack, int64_t np, int64_t wl, const ep16 *ep0,
                                int64_t j, float *c, int64_t ldc) {
  float buf[MR * NR];
  __mmask16 lastw;
  int nvl = panel_of(wl, 0, &lastw);
  for (int64_t i = 0; i < m;) {
    int R = m - i >= MR ? MR : m - i >= 8 ? 8 : m - i >= 4 ? 4 : 1;
    for (int64_t q = 0; q < np; q++) {
      const float *bq = pack + q * k * NR, *ai = a + i * lda;
      int64_t jq = j + q * NR;
      int nv = q == np - 1 ? nvl : 2;
      __mmask16 last = q == np - 1 ? lastw : 0xffff;
      ep16 ep = *ep0;
      ep.bias = ep0->bias ? ep0->bias + jq : NULL;
      ep.res = ep0->res ? ep0->res + i * ep0->epi->ldres + jq : NULL;
      ep.row = i;
#define STREAM_TILE(RR)                                                             \
  do {                                                                              \
    if (nv == 2)                                                                    \
      tile(false, true, RR, 2, k, ai, lda, bq, NR, NULL, buf, &ep, NULL, 0, last, NULL); \
    else                                                                            \
      tile(false, true, RR, 1, k, ai, lda, bq, NR, NULL, buf, &ep, NULL, 0, last, NULL); \
  } while (0)
      switch (R) {
        case MR: STREAM_TILE(MR); break;
        case 8: STREAM_TILE(8); break;
        case 4: STREAM_TILE(4); break;
        default: STREAM_TILE(1); break;
      }
#undef STREAM_TILE
      stream_panel(R, nv, buf, &ep, c + i * ldc + jq, ldc, last);
    }
    i += R;
  }
}

/* ---- One row of C (a batch of one: an RNN's step, an fc layer) ----
 * A tile of one row sums each vector in one chain of K dependent fused multiply-adds, waiting
 * on their latency: here NP panels (up to four) at a time, eight independent sums, from packed
 * panels (rows of NR, padded). */
static INLINE AVX512 void row_panels(int NP, int64_t k, const float *a, const float *pack,
                                     int64_t wl, const ep16 *ep0, float *c) {
  __m512 acc[4][2];
  UNROLL for (int p = 0; p < NP; p++) acc[p][0] = acc[p][1] = _mm512_setzero_ps();
  for (int64_t q = 0; q < k; q++) {
    __m512 av = _mm512_set1_ps(a[q]);
    UNROLL for (int p = 0; p < NP; p++) {
      const float *bq = pack + (p * k + q) * NR;
      acc[p][0] = _mm512_fmadd_ps(av, _mm512_loadu_ps(bq), acc[p][0]);
      acc[p][1] = _mm512_fmadd_ps(av, _mm512_loadu_ps(bq + 16), acc[p][1]);
    }
  }
  UNROLL for (int p = 0; p < NP; p++) {
    ep16 ep = *ep0;
    if (ep.bias) ep.bias += p * NR;
    if (ep.res) ep.res += p * NR;
    __mmask16 last;
    int nv = panel_of(p == NP - 1 ? wl : NR, 0, &last);
    __m512 va = _mm512_set1_ps(ep.alpha), vb = _mm512_set1_ps(ep.beta);
    store(acc[p][0], &ep, va, vb, 0, 0, c + p * NR, nv == 1 ? last : 0xffff);
    if (nv == 2) store(acc[p][1], &ep, va, vb, 0, 1, c + p * NR, last);
  }
}

/* C's one row (n columns) = a (k) times the packed panels, through ep (its bias and residual
 * at C's first column). */
static AVX512 void row_all(int64_t n, int64_t k, const float *a, const float *pack,
                           const ep16 *ep0, float *c) {
  int64_t np = (n + NR - 1) / NR;
  for (int64_t q = 0; q < np; q += 4) {
    int64_t g = np - q < 4 ? np - q : 4, wl = q + g == np ? n - (np - 1) * NR : NR;
    ep16 ep = *ep0;
    if (ep.bias) ep.bias += q * NR;
    if (ep.res) ep.res += q * NR;
    const float *pq = pack + q * k * NR;
    switch (g) {
      case 4: row_panels(4, k, a, pq, wl, &ep, c + q * NR); break;
      case 3: row_panels(3, k, a, pq, wl, &ep, c + q * NR); break;
      case 2: row_panels(2, k, a, pq, wl, &ep, c + q * NR); break;
      default: row_panels(1, k, a, pq, wl, &ep, c + q * NR); break;
    }
  }
}

/* ---- Products whose op(A) is past L2 ----
 * Taken a panel at a time, all of A is read once for every 32 columns of C: ResNet50's last
 * 3x3 layers (512 filters of 4608 terms, 9.4 MB) on 7x7 maps read it from L3 twice an image,
 * and the 14x14 layers (2.4 MB) seven times. Past BIG_A floats, K is taken in blocks of BIG_KB
 * and the rows in blocks of BIG_MB: each block of A (at most 360 KB) is multiplied into every
 * panel of C while it is in L2, the sums of all of C kept between the K blocks (m x the
 * panels' width, on the heap). Each sum is added in the same order as a panel at a time, so
 * the bits are the same. */
#define BIG_A ((int64_t)1 << 18)
#define BIG_KB (2 * KC)
#define BIG_MB (20 * MR)

static bool big_a(int64_t m, int64_t k) { return m * k > BIG_A; }

/* B's panel p, row q, at b + p * pstride + q * ldb: in place (pstride NR; a K block of its
 * panels is copied together first) or packed (pstride k NR, ldb NR). ep's bias and residual at
 * C's first column, its rows from 0. */
static AVX512 bool blocked(bool ta, int64_t m, int64_t n, int64_t k, const float *a,
                           int64_t lda, const float *b, int64_t ldb, int64_t pstride,
                           const ep16 *ep0, float *c, int64_t ldc) {
  int64_t np = (n + NR - 1) / NR, kb = k < BIG_KB ? k : BIG_KB;
  bool in_place = pstride == NR;
  float *part = NULL, *bkp = NULL;
  if ((k > KC && !(part = pd_k_host_alloc((size_t)(m * np * NR) * sizeof(float)))) ||
      (in_place && !(bkp = pd_k_host_alloc((size_t)(kb * np * NR) * sizeof(float))))) {
    pd_k_host_free(part);
    return false;
  }
  for (int64_t k0 = 0; k0 < k; k0 += BIG_KB) {
    int64_t kk = k - k0 < BIG_KB ? k - k0 : BIG_KB;
    if (in_place) /* this block of B's rows in panels (PACK_STACK_K), read by every row block */
      for (int64_t p = 0; p < np; p++)
        copy_panel(kk, n - p * NR < NR ? n - p * NR : NR, b + k0 * ldb + p * NR, ldb,
                   bkp + p * kk * NR);
    for (int64_t i0 = 0; i0 < m; i0 += BIG_MB) {
      int64_t mm = m - i0 < BIG_MB ? m - i0 : BIG_MB;
      const float *ak = ta ? a + k0 * lda + i0 : a + i0 * lda + k0;
      for (int64_t p = 0; p < np; p++) {
        __mmask16 last;
        int nv = panel_of(n, p * NR, &last);
        ep16 ep = *ep0;
        ep.bias = ep0->bias ? ep0->bias + p * NR : NULL;
        ep.res = ep0->res ? ep0->res + i0 * ep0->epi->ldres + p * NR : NULL;
        ep.row = i0;
        const float *bk = in_place ? bkp + p * kk * NR : b + p * pstride + k0 * ldb;
        float *pp = part ? part + (p * m + i0) * NR : NULL;
        float *cp = c + i0 * ldc + p * NR;
        bool from0 = k0 == 0, to_c = k0 + kk == k;
        if (ta) panel_ta(nv, mm, kk, ak, lda, bk, 0, pp, from0, to_c, &ep, cp, ldc, last, NULL);
        else panel_na(nv, mm, kk, ak, lda, bk, 0, pp, from0, to_c, &ep, cp, ldc, last, NULL);
      }
    }
  }
  pd_k_host_free(part);
  pd_k_host_free(bkp);
  return true;
}

/* Panels of B^T up to this many rows (K) are packed on the stack (32 KB; with the partial
 * sums, 48 KB of stack at most), longer ones on the heap. So are B's own panels where more than
 * one tile of rows reads them: read in place, a panel's rows lie a row of B apart, and where
 * that is a multiple of 1 KB (a 56x56 image's 12.5 KB) they fall in a few sets of L1 and are
 * read from L2 on every tile: one thread, [64, 256] x [256, 3136] 100 -> 118 GFLOP/s,
 * [128, 512] x [512, 784] 123 -> 138. */
#define PACK_STACK_K 256
/* A short product (k <= KC) whose C has WIDE_C floats or more (2 MB, past L2) takes its chunks
 * of panels WIDE_B floats of packed B wide (1 MB, in L2; on the heap), each row of C then a run
 * of stores (and of its residual's loads) up to 16 KB long: in chunks of 32 KB of B, a tile's rows
 * were 512 bytes each of hundreds of rows at a time, and ResNet50's 64 -> 256 1x1 layers with
 * their shortcuts at batch 16 (51 MB of C an op, C its residual) took 1.4x the time. (With K
 * past KC, the products by panels and blocks of K lost as much as they gained: 256 -> 128 and
 * 256 -> 512 layers.) */
#define WIDE_C ((int64_t)1 << 19)
#define WIDE_B ((int64_t)1 << 18)

/* One panel of w (<= NR) columns of B^T (the rows of B at b, ldb) into pack (k rows of NR, the
 * columns past w 0: the product reads them). */
static void t_panel(int64_t k, int64_t w, const float *b, int64_t ldb, float *pack) {
  for (int64_t jj = 0; jj < w; jj++) {
    const float *src = b + jj * ldb;
    for (int64_t q = 0; q < k; q++) pack[q * NR + jj] = src[q];
  }
  if (w < NR)
    for (int64_t q = 0; q < k; q++) memset(pack + q * NR + w, 0, (size_t)(NR - w) * sizeof(float));
}

/* All of B^T (B [n, k]) into pd_kcpu_gemm16_pack_f32's panels, the last padded with zeros
 * (fastmath.h's pd_kcpu_gemm16_pack_t_f32). */
static void pack_t(int64_t k, int64_t n, const float *b, int64_t ldb, float *pack) {
  for (int64_t j = 0; j < n; j += NR) {
    int64_t w = n - j < NR ? n - j : NR;
    t_panel(k, w, b + j * ldb, ldb, pack + j * k);
  }
}

static bool gemm16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                   const float *bias, float *c, int64_t ldc, const pd_kcpu_epi16 *epi);

AVX512 bool pd_kcpu_gemm16_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                               const float *a, int64_t lda, const float *b, int64_t ldb,
                               float beta, const float *bias, float *c, int64_t ldc) {
  return gemm16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc, NULL);
}

AVX512 bool pd_kcpu_gemm16_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                   const float *b, int64_t ldb, float *c, int64_t ldc,
                                   const pd_kcpu_epi16 *epi) {
  bool ok = gemm16(false, false, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, NULL, c, ldc, epi);
  if (epi && epi->stream) _mm_sfence();
  return ok;
}

static AVX512 bool gemm16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                          const float *bias, float *c, int64_t ldc, const pd_kcpu_epi16 *epi) {
  const float *cb = bias ? bias : epi ? epi->cbias : NULL;
  if (big_a(m, k)) {
    ep16 ep = {alpha, beta, cb, epi, epi ? epi->res : NULL, 0};
    if (!tb) return blocked(ta, m, n, k, a, lda, b, ldb, NR, &ep, c, ldc);
    float *bt = pd_k_host_alloc((size_t)pd_kcpu_gemm16_packed_size(k, n) * sizeof(float));
    if (!bt) return false;
    pack_t(k, n, b, ldb, bt);
    bool ok = blocked(ta, m, n, k, a, lda, bt, NR, k * NR, &ep, c, ldc);
    pd_k_host_free(bt);
    return ok;
  }
  float pack_stack[PACK_STACK_K * NR], *pack = pack_stack;
  bool stream = epi && epi->stream; /* each panel's sums in part, then stream_panel */
  /* C past L2: wide chunks (on the heap), each row's stores one long run */
  int64_t wide = m * n >= WIDE_C && k <= KC && n > NR ? WIDE_B / k / NR * NR : 0;
  float *heap = NULL;
  if (wide > NR && (heap = pd_k_host_alloc((size_t)((wide < n ? wide : n) + NR) * k *
                                           sizeof(float))))
    pack = heap;
  if (k <= KC && n > NR) { /* a chunk of panels at a time */
    ep16 ep = {alpha, beta, cb, epi, epi ? epi->res : NULL, 0};
    int64_t cols = heap ? wide : PACK_STACK_K / k * NR;
    for (int64_t j = 0; j < n; j += cols) {
      int64_t w = n - j < cols ? n - j : cols, np = (w + NR - 1) / NR;
      for (int64_t q = 0; q < np; q++) {
        int64_t wq = q == np - 1 ? w - q * NR : NR;
        if (tb) t_panel(k, wq, b + (j + q * NR) * ldb, ldb, pack + q * k * NR);
        else copy_panel(k, wq, b + j + q * NR, ldb, pack + q * k * NR);
      }
      if (stream && !ta) chunk_stream(m, k, a, lda, pack, np, w - (np - 1) * NR, &ep, j, c, ldc);
      else chunk(ta, m, k, a, lda, pack, np, w - (np - 1) * NR, &ep, j, c, ldc);
    }
    pd_k_host_free(heap);
    return true;
  }
  float part_stack[PART_STACK_M * NR], *part = k > KC || stream ? part_stack : NULL;
  bool packs = tb || m > MR;
  if (packs && k > PACK_STACK_K && !(pack = pd_k_host_alloc((size_t)k * NR * sizeof(float))))
    return false;
  if (part && m > PART_STACK_M && !(part = pd_k_host_alloc((size_t)m * NR * sizeof(float)))) {
    if (pack != pack_stack) pd_k_host_free(pack);
    return false;
  }
  for (int64_t j = 0; j < n; j += NR) {
    __mmask16 last;
    int nv = panel_of(n, j, &last);
    const float *bp = packs ? pack : b + j;
    if (tb) /* the panel's columns are rows j .. j + w of B: transpose them */
      t_panel(k, n - j < NR ? n - j : NR, b + j * ldb, ldb, pack);
    else if (packs) /* copied together: see PACK_STACK_K */
      copy_panel(k, n - j < NR ? n - j : NR, b + j, ldb, pack);
    int64_t ldp = packs ? 0 : ldb; /* 0: the packed panel */
    ep16 ep = {alpha, beta, cb ? cb + j : NULL, epi, epi && epi->res ? epi->res + j : NULL, 0};
    if (ta) panel_ta(nv, m, k, a, lda, bp, ldp, part, true, !stream, &ep, c + j, ldc, last, NULL);
    else panel_na(nv, m, k, a, lda, bp, ldp, part, true, !stream, &ep, c + j, ldc, last, NULL);
    if (stream) stream_panel(m, nv, part, &ep, c + j, ldc, last);
  }
  if (pack != pack_stack) pd_k_host_free(pack);
  if (part && part != part_stack) pd_k_host_free(part);
  return true;
}

/* ---- pd_kcpu_gemm16p_f32: B packed once by pd_kcpu_gemm16_pack_f32 (fastmath.h) ---- */

int64_t pd_kcpu_gemm16_packed_size(int64_t k, int64_t n) { return (n + NR - 1) / NR * NR * k; }

void pd_kcpu_gemm16_pack_f32(int64_t k, int64_t n, const float *b, int64_t ldb, float *pack) {
  for (int64_t j = 0; j < n; j += NR) {
    int64_t w = n - j < NR ? n - j : NR;
    float *p = pack + j * k; /* panel j / NR: k rows of NR */
    for (int64_t q = 0; q < k; q++) {
      memcpy(p + q * NR, b + q * ldb + j, (size_t)w * sizeof(float));
      if (w < NR) memset(p + q * NR + w, 0, (size_t)(NR - w) * sizeof(float));
    }
  }
}

void pd_kcpu_gemm16_pack_t_f32(int64_t k, int64_t n, const float *b, int64_t ldb, float *pack) {
  pack_t(k, n, b, ldb, pack);
}

AVX512 bool pd_kcpu_gemm16p_f32(bool ta, int64_t m, int64_t n, int64_t k, const float *a,
                                int64_t lda, const float *pack, float beta, float *c,
                                int64_t ldc) {
  return pd_kcpu_gemm16p_epi_f32(ta, m, n, k, a, lda, pack, beta, c, ldc, NULL);
}

static AVX512 bool gemm16p_epi(bool ta, int64_t m, int64_t n, int64_t k, const float *a,
                               int64_t lda, const float *pack, float beta, float *c, int64_t ldc,
                               const pd_kcpu_epi16 *epi) {
  ep16 epw = {1.0f, beta, epi ? epi->cbias : NULL, epi, epi ? epi->res : NULL, 0};
  if (m == 1 && !ta) { /* (with ta, a one-row A is a column, its terms lda apart) */
    row_all(n, k, a, pack, &epw, c);
    return true;
  }
  if (big_a(m, k)) return blocked(ta, m, n, k, a, lda, pack, NR, k * NR, &epw, c, ldc);
  bool stream = epi && epi->stream; /* each panel's sums in part, then stream_panel */
  float part_stack[PART_STACK_M * NR], *part = k > KC || stream ? part_stack : NULL;
  if (part && m > PART_STACK_M && !(part = pd_k_host_alloc((size_t)m * NR * sizeof(float))))
    return false;
  ep16 ep = {1.0f, beta, NULL, epi, NULL, 0};
  for (int64_t j = 0; j < n; j += NR) {
    __mmask16 last;
    int nv = panel_of(n, j, &last);
    const float *bp = pack + j * k;
    ep.bias = epi && epi->cbias ? epi->cbias + j : NULL;
    ep.res = epi && epi->res ? epi->res + j : NULL;
    const float *next = j + NR < n ? bp + k * NR : NULL;
    if (ta) panel_ta(nv, m, k, a, lda, bp, 0, part, true, !stream, &ep, c + j, ldc, last, next);
    else panel_na(nv, m, k, a, lda, bp, 0, part, true, !stream, &ep, c + j, ldc, last, next);
    if (stream) stream_panel(m, nv, part, &ep, c + j, ldc, last);
  }
  if (part && part != part_stack) pd_k_host_free(part);
  return true;
}

AVX512 bool pd_kcpu_gemm16p_epi_f32(bool ta, int64_t m, int64_t n, int64_t k, const float *a,
                                    int64_t lda, const float *pack, float beta, float *c,
                                    int64_t ldc, const pd_kcpu_epi16 *epi) {
  bool ok = gemm16p_epi(ta, m, n, k, a, lda, pack, beta, c, ldc, epi);
  if (epi && epi->stream) _mm_sfence();
  return ok;
}
#endif
