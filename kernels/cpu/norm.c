/* norm.c -- batch normalisation (per channel of [n, c, s]) and layer normalisation (per row of
 * [rows, cols]) with their gradients, for the batch_norm and layer_norm ops. Channels, rows or
 * columns are independent and split across the pool's threads (layer_norm_grad's rows in
 * chunks of a fixed size, whose column sums are added in chunk order), so the results do not
 * depend on the thread count. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <math.h>

typedef struct norm_job {
  const void *x, *scale, *bias;
  const void *mean, *var;      /* inputs: running (or saved, or forward) statistics */
  const void *dy;
  void *y;                     /* y, or dx */
  void *mean_out, *var_out;    /* forward outputs */
  void *saved_mean, *saved_r;  /* batch_norm's saved statistics */
  void *dscale, *dbias;
  void *part;                  /* layer_norm_grad: each chunk's column sums (T [2, cols]) */
  int64_t n, c, s;
  double eps, momentum;
  bool global;
} norm_job;

/* Channels of batch_norm over [n, c, 1] summed together, row by row: one double accumulator
 * each on the stack. */
enum { NORM_BLOCK = 256 };
/* Elements a sum in the element type takes before it is added into a double (norm_t.h). */
enum { NORM_FOLD = 512 };
/* Rows of a layer_norm_grad chunk, whose column sums are kept apart and added in order. */
enum { NORM_ROWS = 32 };
/* Rows of a layer_norm forward block, whose statistics are computed side by side. */
enum { LN_BLOCK = 8 };

/* The loops three times: for the baseline (SSE2: two doubles a vector) and, where the compiler
 * can target them, for AVX2 (four) and AVX-512 (eight), chosen at run time (pd_kcpu_simd). The
 * baseline and AVX2 give the same products and sums, but for the order in which a reduction's
 * vector lanes are added; the AVX-512 instance also fuses multiply-adds (one rounding instead
 * of two), so its results may differ from the others' in the last bits. On one thread (CPU
 * time), layer_norm [2048, 128] forward + backward took 1.09 ns an element before the AVX-512
 * instance with its tree sums (below) and norm_t.h's row blocks, 0.68 after. */
#define NORM_ATTR
#define PD_KCPU_TEMPLATE "kernels/cpu/norm_t.h"
#include "kernels/cpu/each_float.h"
#undef NORM_ATTR
#if PD_KCPU_HAVE_AVX2
#define NORM_ATTR __attribute__((target("avx2")))
#define PD_KCPU_TEMPLATE "kernels/cpu/norm_t.h"
#define PD_KCPU_EACH_SUFFIX avx2
#include "kernels/cpu/each_float.h"
#undef NORM_ATTR
#define NORM_ATTR __attribute__((target("avx512f")))
#include <immintrin.h>

/* The fp32 AVX-512 instance's sums (NORM_SUMS16): the loops of sum_of, dev_sums and
 * ln_bwd_range's row sums with sixteen lanes, each lane's partial sums in float over
 * NORM_FOLD elements as there, the lanes then added in a fixed tree (_mm512_reduce_add_ps)
 * into a double. GCC's simd reductions added the lanes one after another, in scalar adds,
 * which on a row of 128 took longer than the row's loads. */
static inline __attribute__((always_inline)) NORM_ATTR __mmask16 norm_tail(int64_t left) {
  return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

static inline __attribute__((always_inline)) NORM_ATTR double norm_sum16(const float *p,
                                                                         int64_t len) {
  double sum = 0;
  for (int64_t k0 = 0; k0 < len; k0 += NORM_FOLD) {
    int64_t e = len - k0 < NORM_FOLD ? len : k0 + NORM_FOLD;
    __m512 u = _mm512_setzero_ps();
    for (int64_t k = k0; k < e; k += 16)
      u = _mm512_add_ps(u, _mm512_maskz_loadu_ps(norm_tail(e - k), p + k));
    sum += (double)_mm512_reduce_add_ps(u);
  }
  return sum;
}

static inline __attribute__((always_inline)) NORM_ATTR void norm_dev16(const float *p,
                                                                       int64_t len, float m0,
                                                                       double *s1, double *s2) {
  __m512 vm = _mm512_set1_ps(m0);
  *s1 = *s2 = 0;
  for (int64_t k0 = 0; k0 < len; k0 += NORM_FOLD) {
    int64_t e = len - k0 < NORM_FOLD ? len : k0 + NORM_FOLD;
    __m512 u = _mm512_setzero_ps(), v = _mm512_setzero_ps();
    for (int64_t k = k0; k < e; k += 16) {
      __mmask16 t = norm_tail(e - k);
      __m512 d = _mm512_maskz_sub_ps(t, _mm512_maskz_loadu_ps(t, p + k), vm);
      u = _mm512_add_ps(u, d);
      v = _mm512_add_ps(v, _mm512_mul_ps(d, d));
    }
    *s1 += (double)_mm512_reduce_add_ps(u);
    *s2 += (double)_mm512_reduce_add_ps(v);
  }
}

/* sg = the sum of g (times scale, when given), sgx = that times (p - m). */
static inline __attribute__((always_inline)) NORM_ATTR void norm_grad16(
    const float *g, const float *scale, const float *p, float m, int64_t len, double *sg,
    double *sgx) {
  __m512 vm = _mm512_set1_ps(m);
  *sg = *sgx = 0;
  for (int64_t k0 = 0; k0 < len; k0 += NORM_FOLD) {
    int64_t e = len - k0 < NORM_FOLD ? len : k0 + NORM_FOLD;
    __m512 u = _mm512_setzero_ps(), w = _mm512_setzero_ps();
    for (int64_t k = k0; k < e; k += 16) {
      __mmask16 t = norm_tail(e - k);
      __m512 gk = _mm512_maskz_loadu_ps(t, g + k);
      if (scale) gk = _mm512_mul_ps(gk, _mm512_maskz_loadu_ps(t, scale + k));
      __m512 d = _mm512_maskz_sub_ps(t, _mm512_maskz_loadu_ps(t, p + k), vm);
      u = _mm512_add_ps(u, gk);
      w = _mm512_add_ps(w, _mm512_mul_ps(gk, d));
    }
    *sg += (double)_mm512_reduce_add_ps(u);
    *sgx += (double)_mm512_reduce_add_ps(w);
  }
}

#define NORM_SUMS16
#define T float
#define TN f32_avx512
#include "kernels/cpu/norm_t.h"
#undef NORM_SUMS16
#define T double
#define TN f64_avx512
#include "kernels/cpu/norm_t.h"
#undef NORM_ATTR
#define BY_TYPE(dt, fn)                                                                      \
  (pd_kcpu_simd() >= PD_KCPU_SIMD_AVX512                                                     \
       ? ((dt) == PD_FP32 ? fn##_f32_avx512 : fn##_f64_avx512)                               \
   : pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2 ? ((dt) == PD_FP32 ? fn##_f32_avx2 : fn##_f64_avx2) \
                                         : ((dt) == PD_FP32 ? fn##_f32 : fn##_f64))
#else
#define BY_TYPE(dt, fn) ((dt) == PD_FP32 ? fn##_f32 : fn##_f64)
#endif

/* Split count items of `cost` elements each across threads. */
static void run(int64_t count, int64_t cost, pd_kcpu_range_fn *fn, norm_job *job) {
  int64_t grain = cost >= PD_KCPU_GRAIN ? 1 : PD_KCPU_GRAIN / (cost > 0 ? cost : 1);
  pd_kcpu_parallel(count, grain, fn, job);
}

pd_status pd_kcpu_batch_norm(pd_dtype dt, int64_t n, int64_t c, int64_t s, const void *x,
                             const void *scale, const void *bias, const void *mean,
                             const void *var, bool global, double momentum, double epsilon,
                             void *y, void *mean_out, void *var_out, void *saved_mean,
                             void *saved_inv_std) {
  pd_status st = pd_k_norm_check(dt, n, c, s, epsilon, !global);
  if (st) return st;
  norm_job job = {.x = x, .scale = scale, .bias = bias, .mean = mean, .var = var, .y = y,
                  .mean_out = mean_out, .var_out = var_out, .saved_mean = saved_mean,
                  .saved_r = saved_inv_std, .n = n, .c = c, .s = s, .eps = epsilon,
                  .momentum = momentum, .global = global};
  run(c, n * s * 3, BY_TYPE(dt, bn_fwd_range), &job);
  return PD_OK;
}

pd_status pd_kcpu_batch_norm_grad(pd_dtype dt, int64_t n, int64_t c, int64_t s, const void *x,
                                  const void *scale, const void *saved_mean,
                                  const void *saved_inv_std, bool global, const void *dy,
                                  void *dx, void *dscale, void *dbias) {
  pd_status st = pd_k_norm_check(dt, n, c, s, 0, false);
  if (st) return st;
  norm_job job = {.x = x, .scale = scale, .mean = saved_mean, .var = saved_inv_std, .dy = dy,
                  .y = dx, .dscale = dscale, .dbias = dbias, .n = n, .c = c, .s = s,
                  .global = global};
  run(c, n * s * 2, BY_TYPE(dt, bn_bwd_range), &job);
  return PD_OK;
}

pd_status pd_kcpu_layer_norm(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                             const void *scale, const void *bias, double epsilon, void *y,
                             void *mean, void *var) {
  pd_status st = pd_k_norm_check(dt, rows, cols, 1, epsilon, false);
  if (st) return st;
  norm_job job = {.x = x, .scale = scale, .bias = bias, .y = y, .mean_out = mean,
                  .var_out = var, .n = rows, .c = cols, .s = 1, .eps = epsilon};
  run(rows, cols * 3, BY_TYPE(dt, ln_fwd_range), &job);
  return PD_OK;
}

pd_status pd_kcpu_layer_norm_grad(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                                  const void *scale, const void *mean, const void *var,
                                  double epsilon, const void *dy, void *dx, void *dscale,
                                  void *dbias) {
  pd_status st = pd_k_norm_check(dt, rows, cols, 1, epsilon, false);
  if (st) return st;
  norm_job job = {.x = x, .scale = scale, .mean = mean, .var = var, .dy = dy, .y = dx,
                  .dscale = dscale, .dbias = dbias, .n = rows, .c = cols, .s = 1,
                  .eps = epsilon};
  int64_t chunks = (rows + NORM_ROWS - 1) / NORM_ROWS;
  bool params = dscale || dbias;
  if (params && !(job.part = pd_k_host_alloc((size_t)(chunks * 2 * cols) * pd_dtype_size(dt))))
    return PD_ENOMEM;
  if (dx || params) run(chunks, NORM_ROWS * cols * 4, BY_TYPE(dt, ln_bwd_range), &job);
  if (params) {
    run(cols, chunks * 2, BY_TYPE(dt, ln_dparam_range), &job);
    pd_k_host_free(job.part);
  }
  return PD_OK;
}
