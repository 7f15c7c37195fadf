/* gemm_amx.c -- the bf16 products of mixed precision (gemm_lp.c) on AMX tiles: on this
 * project's Xeon (Sapphire Rapids) a tdpbf16ps multiplies a 16 x 32 bf16 tile by a 32 x 16 one
 * at ~1000 GMAC/s a core, against ~110 for fp32 FMAs and ~55 for AVX512-BF16's vdpbf16ps
 * (which here runs at half the FMA rate, so it is no use for products). The fp32 operands are
 * rounded to bf16 (vcvtne2ps2bf16: to nearest even) and packed into tiles, A into row tiles
 * (16 rows x 32 K), B into Intel's VNNI layout (16 pairs of K x 16 columns, each pair one
 * dword); C is computed 2 x 2 tiles (32 x 32) at a time in four accumulator tiles and written
 * through an epilogue (alpha, beta, bias). Compiled with function attributes; nothing calls it
 * unless pd_kcpu_amx_bf16() said yes. */
#include "config.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/cpu/gemm_amx.h"

#if PD_KCPU_HAVE_AMX
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512bf16")))
#define INLINE inline __attribute__((always_inline))

/* ---- Detection: the CPU has AMX-TILE, AMX-BF16 and AVX512-BF16 (which packs the tiles), the
 * kernels may use AVX-512 (pd_kcpu_simd, which tests lower), and Linux lets this process use
 * the tile registers (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, Linux 5.16 on: granted for
 * the whole process, worker threads included). ---- */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static _Atomic int amx_ok = -1;

static int detect(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  bool tile = d & (1u << 24), bf16 = d & (1u << 22), bw = b & (1u << 30);
  if (!tile || !bf16 || !bw || !__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5)))
    return 0;
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool pd_kcpu_amx_bf16(void) {
  if (pd_kcpu_simd() != PD_KCPU_SIMD_AVX512) return false;
  int ok = atomic_load_explicit(&amx_ok, memory_order_relaxed);
  if (ok < 0) {
    ok = detect();
    atomic_store_explicit(&amx_ok, ok, memory_order_relaxed);
  }
  return ok;
}

/* ---- Packing. A tile is 16 rows of 64 bytes (PD_KCPU_AMX_TILE bf16), stored contiguously. */

/* bf16 of lo (low half) and hi (high half), each rounded to nearest even. */
static INLINE AMX __m512i cvt2(__m512 lo, __m512 hi) {
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/* cvt2's halves interleaved: dword c holds (bf16(x0[c]), bf16(x1[c])), x0's in the low half. */
static INLINE AMX __m512i pairs(__m512 x0, __m512 x1) {
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                       8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(idx, cvt2(x0, x1));
}

/* dst[x * 16 + y] = dword x of v[y]: the 16 x 16 dword transpose in three rounds (dwords,
 * qwords within 128-bit lanes, then lanes), 64 shuffles (a scalar copy took 2.5 times as long
 * as fp32's whole product on the attention gradients' [48, 48] x [48, 8]). */
static INLINE AMX void store_transposed(const __m512i v[16], uint32_t *dst) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  /* u[4i + j], lane L: column 4L + j of rows 4i .. 4i + 3 */
  for (int i = 0; i < 4; i++) {
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; j++) {
    __m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88); /* lanes 0, 2 of each */
    __m512i v1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xdd); /* lanes 1, 3 */
    __m512i w0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
    __m512i w1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xdd);
    _mm512_storeu_si512(dst + (0 + j) * 16, _mm512_shuffle_i32x4(v0, w0, 0x88));
    _mm512_storeu_si512(dst + (8 + j) * 16, _mm512_shuffle_i32x4(v0, w0, 0xdd));
    _mm512_storeu_si512(dst + (4 + j) * 16, _mm512_shuffle_i32x4(v1, w1, 0x88));
    _mm512_storeu_si512(dst + (12 + j) * 16, _mm512_shuffle_i32x4(v1, w1, 0xdd));
  }
}

static INLINE __mmask16 lanes(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* Row q of x (stride ld), 16 columns from j0 under mask mj; zeros for q >= rows. */
static INLINE AMX __m512 row(const float *x, int64_t ld, int64_t q, int64_t rows, int64_t j0,
                             __mmask16 mj) {
  return q < rows ? _mm512_maskz_loadu_ps(mj, x + q * ld + j0) : _mm512_setzero_ps();
}

/* The 16 x 32 block of an operand at outer indices o0 .. o0 + 15 (rows of op(A), columns of
 * op(B)) and K k0 .. k0 + 31, rounded, as 16 vectors of 16 dwords, each dword a pair of K:
 * with K along x's rows (x stored [outer, K], row stride ld) v[r] holds outer index o0 + r's
 * pairs; with K down x's columns (x stored [K, outer]) v[p] holds pair p of the 16 outer
 * indices. Zeros past `outer` and k. */
static INLINE AMX void load_block(bool k_down, const float *x, int64_t ld, int64_t outer,
                                  int64_t k, int64_t o0, int64_t k0, __m512i v[16]) {
  if (!k_down) {
    __mmask16 m0 = lanes(k - k0), m1 = lanes(k - k0 - 16);
    for (int r = 0; r < 16; r++) {
      v[r] = _mm512_setzero_si512();
      if (o0 + r < outer) {
        const float *src = x + (o0 + r) * ld + k0;
        v[r] = cvt2(_mm512_maskz_loadu_ps(m0, src), _mm512_maskz_loadu_ps(m1, src + 16));
      }
    }
  } else {
    __mmask16 mo = lanes(outer - o0);
    for (int p = 0; p < 16; p++) {
      int64_t q = k0 + 2 * p;
      v[p] = pairs(row(x, ld, q, k, o0, mo), row(x, ld, q + 1, k, o0, mo));
    }
  }
}

/* Tiles [t0, t1) of outer indices of an operand [outer, K] (see load_block), each tile (t, kt)
 * at out + (t * kts + kt) * TILE, K kt * 32 ..: as rows of pairs (vnni false: row r holds
 * outer index r's 16 pairs: op(A)'s tiles) or in the VNNI layout (row p holds pair p of the 16
 * outer indices: op(B)'s). */
static AMX void pack(bool k_down, bool vnni, int64_t outer, int64_t k, const float *x,
                     int64_t ld, int64_t t0, int64_t t1, uint16_t *out) {
  int64_t kts = (k + 31) / 32;
  for (int64_t t = t0; t < t1; t++)
    for (int64_t kt = 0; kt < kts; kt++) {
      __m512i v[16];
      load_block(k_down, x, ld, outer, k, t * 16, kt * 32, v);
      uint16_t *dst = out + (t * kts + kt) * PD_KCPU_AMX_TILE;
      if (k_down == vnni) /* v already is the tile's rows */
        for (int r = 0; r < 16; r++) _mm512_storeu_si512(dst + r * 32, v[r]);
      else
        store_transposed(v, (uint32_t *)dst);
    }
}

/* op(A)'s element (i, q) is a[i * lda + q], or a[q * lda + i] when ta: K down its columns. */
AMX void pd_kcpu_amx_pack_a(bool ta, int64_t m, int64_t k, const float *a, int64_t lda,
                            int64_t t0, int64_t t1, uint16_t *out) {
  pack(ta, false, m, k, a, lda, t0, t1, out);
}

/* op(B)'s element (q, j) is b[q * ldb + j] (K down its columns), or b[j * ldb + q] when tb. */
AMX void pd_kcpu_amx_pack_b(bool tb, int64_t k, int64_t n, const float *b, int64_t ldb,
                            int64_t t0, int64_t t1, uint16_t *out) {
  pack(!tb, true, n, k, b, ldb, t0, t1, out);
}

/* ---- The products ---- */

typedef struct tilecfg {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} tilecfg;

/* Tiles 0-3: C; 4, 5: A; 6, 7: B; all 16 rows of 64 bytes. */
static AMX void configure(void) {
  tilecfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
}

/* R (1, 2) row tiles a0, a1 by NC (1, 2) column tiles b0, b1 over kts K tiles: C tile (r, c)
 * to out + (r * 2 + c) * 256 floats (rows of 16). */
static INLINE AMX void block(int R, int NC, int64_t kts, const uint16_t *a0, const uint16_t *a1,
                             const uint16_t *b0, const uint16_t *b1, float *out) {
  _tile_zero(0);
  if (NC == 2) _tile_zero(1);
  if (R == 2) _tile_zero(2);
  if (R == 2 && NC == 2) _tile_zero(3);
  for (int64_t q = 0; q < kts; q++) {
    int64_t o = q * PD_KCPU_AMX_TILE;
    _tile_loadd(4, a0 + o, 64);
    _tile_loadd(6, b0 + o, 64);
    if (R == 2) _tile_loadd(5, a1 + o, 64);
    if (NC == 2) _tile_loadd(7, b1 + o, 64);
    _tile_dpbf16ps(0, 4, 6);
    if (NC == 2) _tile_dpbf16ps(1, 4, 7);
    if (R == 2) _tile_dpbf16ps(2, 5, 6);
    if (R == 2 && NC == 2) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  if (NC == 2) _tile_stored(1, out + 256, 64);
  if (R == 2) _tile_stored(2, out + 512, 64);
  if (R == 2 && NC == 2) _tile_stored(3, out + 768, 64);
}

/* C's tile at row i0, column j0 = alpha acc + beta C (+ bias), over its rows < m and columns
 * < n. */
static INLINE AMX void epilogue(const float *acc, int64_t rows, int64_t cols,
                                const pd_kcpu_amx_out *o, int64_t i0, int64_t j0) {
  __mmask16 mk = lanes(cols);
  __m512 va = _mm512_set1_ps(o->alpha), vb = _mm512_set1_ps(o->beta);
  __m512 bias = o->bias ? _mm512_maskz_loadu_ps(mk, o->bias + j0) : _mm512_setzero_ps();
  for (int64_t r = 0; r < rows; r++) {
    float *cp = o->c + (i0 + r) * o->ldc + j0;
    __m512 x = _mm512_fmadd_ps(va, _mm512_loadu_ps(acc + r * 16), bias);
    if (o->beta != 0.0f) x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk, cp), x);
    _mm512_mask_storeu_ps(cp, mk, x);
  }
}

AMX void pd_kcpu_amx_gemm(int64_t m, int64_t n, int64_t k, const uint16_t *pa,
                          const uint16_t *pb, int64_t it0, int64_t it1, int64_t jt0, int64_t jt1,
                          const pd_kcpu_amx_out *o) {
  int64_t kts = (k + 31) / 32, tsz = kts * PD_KCPU_AMX_TILE;
  float acc[4][256];
  configure();
  for (int64_t jt = jt0; jt < jt1; jt += 2) {
    int nc = jt + 1 < jt1 ? 2 : 1;
    const uint16_t *b0 = pb + jt * tsz, *b1 = b0 + tsz;
    for (int64_t it = it0; it < it1; it += 2) {
      int nr = it + 1 < it1 ? 2 : 1;
      const uint16_t *a0 = pa + it * tsz, *a1 = a0 + tsz;
      if (nr == 2 && nc == 2) block(2, 2, kts, a0, a1, b0, b1, acc[0]);
      else if (nr == 2) block(2, 1, kts, a0, a1, b0, b1, acc[0]);
      else if (nc == 2) block(1, 2, kts, a0, a1, b0, b1, acc[0]);
      else block(1, 1, kts, a0, a1, b0, b1, acc[0]);
      for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++) {
          int64_t i0 = (it + r) * 16, j0 = (jt + c) * 16;
          epilogue(acc[r * 2 + c], m - i0 < 16 ? m - i0 : 16, n - j0 < 16 ? n - j0 : 16, o, i0,
                   j0);
        }
    }
  }
  _tile_release();
}
#endif
