/* gemm_amx.h -- the bf16 products on AMX tiles (gemm_amx.c) that gemm_lp.c splits across the
 * kernels' pool: pack op(A) and op(B) into tiles (each thread its share of the tiles), then
 * compute blocks of C from the packs. The caller owns the packs (pd_kcpu_amx_pack_size
 * elements each). */
#ifndef PD_KCPU_GEMM_AMX_H
#define PD_KCPU_GEMM_AMX_H

#include <stdbool.h>
#include <stdint.h>

/* AMX code is built on x86-64 Linux (which must grant the tile registers) with GCC 11 or
 * Clang 12 on (their AMX intrinsics). */
#if defined(__x86_64__) && defined(__linux__) &&                                              \
    ((defined(__clang__) && __clang_major__ >= 12) ||                                         \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define PD_KCPU_HAVE_AMX 1
#else
#define PD_KCPU_HAVE_AMX 0
#endif

/* bf16 elements of a tile: 16 rows of 32. */
#define PD_KCPU_AMX_TILE 512

/* Elements of the pack of an operand with `outer` rows (op(A)) or columns (op(B)) by k. */
static inline int64_t pd_kcpu_amx_pack_size(int64_t outer, int64_t k) {
  return (outer + 15) / 16 * ((k + 31) / 32) * PD_KCPU_AMX_TILE;
}

/* Where the tiles of C go: C = alpha acc + beta C (+ bias[j] when bias), row stride ldc;
 * beta 0 does not read C. */
typedef struct pd_kcpu_amx_out {
  float alpha, beta;
  const float *bias;
  float *c;
  int64_t ldc;
} pd_kcpu_amx_out;

#if PD_KCPU_HAVE_AMX
/* Whether this CPU has AMX-BF16 (with AVX512-BF16 and the AVX-512 level of pd_kcpu_simd) and
 * this process may use it; asks Linux for the tile registers on the first call. Thread-safe. */
bool pd_kcpu_amx_bf16(void);
/* Pack row tiles [t0, t1) of op(A) [m, k] (transposed A when ta), column tiles [t0, t1) of
 * op(B) [k, n] (B^T when tb), rounded to bf16. Call only when pd_kcpu_amx_bf16(). */
void pd_kcpu_amx_pack_a(bool ta, int64_t m, int64_t k, const float *a, int64_t lda, int64_t t0,
                        int64_t t1, uint16_t *pack);
void pd_kcpu_amx_pack_b(bool tb, int64_t k, int64_t n, const float *b, int64_t ldb, int64_t t0,
                        int64_t t1, uint16_t *pack);
/* The tiles of C [m, n] in row tiles [it0, it1) and column tiles [jt0, jt1) from the packs:
 * each element the fp32 sum of its k products, in K order a tile of 32 at a time (within a
 * tile as the hardware adds), then through *o. */
void pd_kcpu_amx_gemm(int64_t m, int64_t n, int64_t k, const uint16_t *pa, const uint16_t *pb,
                      int64_t it0, int64_t it1, int64_t jt0, int64_t jt1,
                      const pd_kcpu_amx_out *o);
#else
static inline bool pd_kcpu_amx_bf16(void) { return false; }
#endif

#endif /* PD_KCPU_GEMM_AMX_H */
