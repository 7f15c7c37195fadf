/* pool2d.c -- max and average pooling of NCHW planes and their gradients, the planes split
 * across the thread pool: the typed loops from pool2d_t.h; fp32 max pooling a plane at a time
 * on AVX-512 (conv_avx512.c's pd_kcpu_maxpool16_plane_f32), 2x2 average pooling at stride 2
 * likewise (pd_kcpu_avgpool2x2_16_plane_f32), 2x2 max pooling's fp32 gradient
 * eight windows at a time on AVX2 CPUs. (Split from conv.c, which it shared a template with.) */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels_int.h"

#if PD_KCPU_HAVE_AVX2
#include <immintrin.h>
#endif

typedef struct pool_job {
  const pd_k_pool2d *p;
  const void *x, *y, *dy;
  void *dx;
} pool_job;

/* 2x2 windows at stride 2 without padding, each inside the input. */
static bool windows_2x2(const pd_k_pool2d *p) {
  return p->kh == 2 && p->kw == 2 && p->stride_h == 2 && p->stride_w == 2 && p->pad_top == 0 &&
         p->pad_left == 0 && 2 * p->oh <= p->h && 2 * p->ow <= p->w;
}

#define T float
#define TN f32
#include "kernels/cpu/pool2d_t.h"
#define T double
#define TN f64
#include "kernels/cpu/pool2d_t.h"

/* Planes per thread so that each gets about a grain of window reads. */
static int64_t pool_grain(const pd_k_pool2d *p) {
  int64_t cost = p->oh * p->ow * p->kh * p->kw;
  return cost >= PD_KCPU_GRAIN ? 1 : PD_KCPU_GRAIN / (cost > 0 ? cost : 1);
}

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
/* Planes [b, e) of fp32 max pooling on AVX-512 (conv_avx512.c), the row scratch per range; the
 * scalar loop where there is no memory for it. */
static void maxpool16_range(void *vjob, int64_t b, int64_t e) {
  const pool_job *job = vjob;
  const pd_k_pool2d *p = job->p;
  float *row = pd_k_host_alloc((size_t)p->w * sizeof(float));
  if (!row) {
    pool_range_f32(vjob, b, e);
    return;
  }
  for (int64_t pl = b; pl < e; pl++)
    pd_kcpu_maxpool16_plane_f32(p, (const float *)job->x + pl * p->h * p->w,
                                (float *)job->y + pl * p->oh * p->ow, row);
  pd_k_host_free(row);
}

/* Planes [b, e) of fp32 2x2 average pooling at stride 2 on AVX-512 (conv_avx512.c). */
static void avgpool2x2_16_range(void *vjob, int64_t b, int64_t e) {
  const pool_job *job = vjob;
  const pd_k_pool2d *p = job->p;
  for (int64_t pl = b; pl < e; pl++)
    pd_kcpu_avgpool2x2_16_plane_f32(p, (const float *)job->x + pl * p->h * p->w,
                                    (float *)job->y + pl * p->oh * p->ow);
}
#endif

pd_status pd_kcpu_pool2d(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y) {
  pd_status st = pd_k_pool2d_check(dt, p);
  if (st) return st;
  pool_job job = {.p = p, .x = x, .y = y};
  pd_kcpu_range_fn *fn = dt == PD_FP32 ? pool_range_f32 : pool_range_f64;
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (dt == PD_FP32 && !pool_is_2x2_f32(p) && pd_kcpu_simd() == PD_KCPU_SIMD_AVX512 &&
      pd_kcpu_maxpool16_takes(p))
    fn = maxpool16_range;
  if (dt == PD_FP32 && p->type == PD_K_POOL_AVG && windows_2x2(p) &&
      pd_kcpu_simd() == PD_KCPU_SIMD_AVX512)
    fn = avgpool2x2_16_range;
#endif
  pd_kcpu_parallel(p->n * p->c, pool_grain(p), fn, &job);
  return PD_OK;
}

#if PD_KCPU_HAVE_AVX2
#define AVX2 __attribute__((target("avx2")))

/* The even and the odd elements of a, b (16 consecutive floats) in order: shuffle_ps works
 * within 128-bit lanes ([a0 a2 b0 b2 | a4 a6 b4 b6]), then the 64-bit quarters are reordered
 * ([a0 a2 a4 a6 b0 b2 b4 b6]). */
static inline __attribute__((always_inline)) AVX2 __m256 pool_evens(__m256 a, __m256 b) {
  __m256d v = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(v, 0xd8));
}

static inline __attribute__((always_inline)) AVX2 __m256 pool_odds(__m256 a, __m256 b) {
  __m256d v = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(v, 0xd8));
}

/* Eight windows' values of row pair r0, r1 from their first columns: each window's four
 * elements in four vectors (top-left, top-right, bottom-left, bottom-right). */
static inline __attribute__((always_inline)) AVX2 void pool_windows8(const float *r0,
                                                                      const float *r1,
                                                                      __m256 q[4]) {
  __m256 a = _mm256_loadu_ps(r0), b = _mm256_loadu_ps(r0 + 8);
  __m256 c = _mm256_loadu_ps(r1), d = _mm256_loadu_ps(r1 + 8);
  q[0] = pool_evens(a, b);
  q[1] = pool_odds(a, b);
  q[2] = pool_evens(c, d);
  q[3] = pool_odds(c, d);
}

/* Sixteen columns of a row from the left and right elements of eight windows. */
static inline __attribute__((always_inline)) AVX2 void pool_store16(float *d, __m256 l,
                                                                     __m256 r) {
  __m256 lo = _mm256_unpacklo_ps(l, r), hi = _mm256_unpackhi_ps(l, r);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(lo, hi, 0x20));
  _mm256_storeu_ps(d + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* conv_t.h's pool_grad_2x2 for fp32, eight windows at a time (the same comparisons: each
 * window's gradient to its first element equal to its max, in the order top-left, top-right,
 * bottom-left, bottom-right; every other element 0), the last windows of a row as there. */
static AVX2 void pool_grad_2x2_avx2(const pd_k_pool2d *p, const float *x, const float *y,
                                    const float *dy, float *dx) {
  int64_t w = p->w;
  for (int64_t oy = 0; oy < p->oh; oy++) {
    const float *r0 = x + 2 * oy * w, *r1 = r0 + w;
    float *d0 = dx + 2 * oy * w, *d1 = d0 + w;
    const float *m = y + oy * p->ow, *g = dy + oy * p->ow;
    int64_t ox = 0;
    for (; ox + 8 <= p->ow; ox += 8) {
      __m256 q[4], mx = _mm256_loadu_ps(m + ox), gx = _mm256_loadu_ps(g + ox);
      pool_windows8(r0 + 2 * ox, r1 + 2 * ox, q);
      __m256 a = _mm256_cmp_ps(q[0], mx, _CMP_EQ_OQ);
      __m256 taken = a;
      __m256 b = _mm256_andnot_ps(taken, _mm256_cmp_ps(q[1], mx, _CMP_EQ_OQ));
      taken = _mm256_or_ps(taken, b);
      __m256 c = _mm256_andnot_ps(taken, _mm256_cmp_ps(q[2], mx, _CMP_EQ_OQ));
      taken = _mm256_or_ps(taken, c);
      __m256 d = _mm256_andnot_ps(taken, _mm256_cmp_ps(q[3], mx, _CMP_EQ_OQ));
      pool_store16(d0 + 2 * ox, _mm256_and_ps(a, gx), _mm256_and_ps(b, gx));
      pool_store16(d1 + 2 * ox, _mm256_and_ps(c, gx), _mm256_and_ps(d, gx));
    }
    for (; ox < p->ow; ox++) {
      float mx = m[ox], gx = g[ox];
      int a = r0[2 * ox] == mx, b = (r0[2 * ox + 1] == mx) & !a;
      int c = (r1[2 * ox] == mx) & !(a | b), d = (r1[2 * ox + 1] == mx) & !(a | b | c);
      d0[2 * ox] = a ? gx : 0.0f;
      d0[2 * ox + 1] = b ? gx : 0.0f;
      d1[2 * ox] = c ? gx : 0.0f;
      d1[2 * ox + 1] = d ? gx : 0.0f;
    }
    for (int64_t ix = 2 * p->ow; ix < w; ix++) d0[ix] = d1[ix] = 0;
  }
  for (int64_t iy = 2 * p->oh; iy < p->h; iy++)
    for (int64_t ix = 0; ix < w; ix++) dx[iy * w + ix] = 0;
}

static void pool_grad_range_f32_avx2(void *vjob, int64_t b, int64_t e) {
  const pool_job *job = vjob;
  const pd_k_pool2d *p = job->p;
  for (int64_t pl = b; pl < e; pl++)
    pool_grad_2x2_avx2(p, (const float *)job->x + pl * p->h * p->w,
                       (const float *)job->y + pl * p->oh * p->ow,
                       (const float *)job->dy + pl * p->oh * p->ow,
                       (float *)job->dx + pl * p->h * p->w);
}
#undef AVX2
#endif

pd_status pd_kcpu_pool2d_grad(pd_dtype dt, const pd_k_pool2d *p, const void *x, const void *y,
                              const void *dy, void *dx) {
  pd_status st = pd_k_pool2d_check(dt, p);
  if (st) return st;
  pool_job job = {.p = p, .x = x, .y = y, .dy = dy, .dx = dx};
  pd_kcpu_range_fn *fn = dt == PD_FP32 ? pool_grad_range_f32 : pool_grad_range_f64;
#if PD_KCPU_HAVE_AVX2
  /* LeNet's and VGG's 2x2 max pooling: 8 windows a step where the CPU has AVX2 (the scalar
   * loop's stores interleave two outputs a row, which compilers do not vectorise). */
  if (dt == PD_FP32 && pool_is_2x2_f32(p) && pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2)
    fn = pool_grad_range_f32_avx2;
#endif
  pd_kcpu_parallel(p->n * p->c, pool_grain(p), fn, &job);
  return PD_OK;
}
