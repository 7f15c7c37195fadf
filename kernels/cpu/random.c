/* random.c -- uniform and normal fills from the Philox4x32-10 stream of a pd_k_rng. Element i
 * of a call comes from counter rng->offset + i / per_counter, so any split of the work across
 * threads gives the same numbers; the call then moves rng->offset past the counters it used.
 *
 * Per counter (4 random 32-bit words): uniform fp32 takes 4 values (24 bits each), uniform fp64
 * 2 (53 bits from two words), normal fp32 4 (two Box-Muller pairs, 32-bit uniforms), normal fp64
 * 2 (one pair from 53-bit uniforms). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <math.h>
#include <string.h>

typedef struct rand_job {
  pd_dtype dt;
  bool normal;
  int64_t n, per;       /* values, values per counter */
  uint64_t seed, offset;
  double a, b;          /* uniform: low, high; normal: mean, std */
  void *out;
} rand_job;

static const double two_pi = 6.283185307179586476925286766559;

/* Philox4x32-10 of PHILOX_LANES consecutive counters from ctr at once: the words of
 * pd_k_philox4x32_10, bit for bit (w[j][l]: word j of counter ctr + l), in loops over the lanes
 * that the compiler turns into vector multiplies (one counter at a time, through the call, took
 * most of a dropout's time). */
#define PHILOX_LANES 8
static inline __attribute__((always_inline)) void philox_lanes(uint64_t ctr, uint64_t seed,
                                                               uint32_t w[4][PHILOX_LANES]) {
  uint32_t c0[PHILOX_LANES], c1[PHILOX_LANES], c2[PHILOX_LANES], c3[PHILOX_LANES];
  for (int l = 0; l < PHILOX_LANES; l++) {
    c0[l] = (uint32_t)(ctr + (uint64_t)l);
    c1[l] = (uint32_t)((ctr + (uint64_t)l) >> 32);
    c2[l] = c3[l] = 0;
  }
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    PD_SIMD for (int l = 0; l < PHILOX_LANES; l++) {
      uint64_t p0 = (uint64_t)0xD2511F53u * c0[l], p1 = (uint64_t)0xCD9E8D57u * c2[l];
      uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
      c1[l] = (uint32_t)p1;
      c3[l] = (uint32_t)p0;
      c0[l] = n0;
      c2[l] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int l = 0; l < PHILOX_LANES; l++) w[0][l] = c0[l], w[1][l] = c1[l], w[2][l] = c2[l],
                                         w[3][l] = c3[l];
}

/* The values (at most 4) of a counter whose words are w. */
static void words_values(const rand_job *job, const uint32_t w[4], double v[4]) {
  bool f32 = job->dt == PD_FP32;
  if (!job->normal) {
    if (f32) {
      for (int i = 0; i < 4; i++) v[i] = (double)(w[i] >> 8) * 0x1p-24;
    } else {
      v[0] = (double)(((uint64_t)w[0] << 21) | (w[1] >> 11)) * 0x1p-53;
      v[1] = (double)(((uint64_t)w[2] << 21) | (w[3] >> 11)) * 0x1p-53;
    }
    for (int i = 0; i < 4; i++) v[i] = job->a + (job->b - job->a) * v[i];
    return;
  }
  /* Box-Muller: u1 in (0, 1) (never 0, so the log is finite), u2 in [0, 1). */
  double u[4];
  if (f32) {
    for (int i = 0; i < 4; i++) u[i] = ((double)w[i] + 0.5) * 0x1p-32;
  } else {
    u[0] = ((double)(((uint64_t)w[0] << 21) | (w[1] >> 11)) + 0.5) * 0x1p-53;
    u[1] = (double)(((uint64_t)w[2] << 21) | (w[3] >> 11)) * 0x1p-53;
  }
  for (int pair = 0; pair < (f32 ? 2 : 1); pair++) {
    double r = sqrt(-2.0 * log(u[2 * pair])), t = two_pi * u[2 * pair + 1];
    v[2 * pair] = job->a + job->b * r * cos(t);
    v[2 * pair + 1] = job->a + job->b * r * sin(t);
  }
}

/* Uniform fp32 values of counters [b, e): the same values as words_values and rand_range's
 * rounding give (w >> 8 times 2^-24 is exact in float and in double; low + (high - low) v is
 * taken in double and rounded once; a value that rounds up to high becomes the float below
 * it), in loops over a block of counters that vectorise (one counter at a time through
 * words_values took 3.5 ns a value, most of a dropout's time). For [0, 1) (dropout's masks)
 * the block is compiled for AVX-512 too, chosen at run time (the baseline's SSE2 multiplies
 * two 64-bit products at a time; integer work and exact conversions only, so the values are
 * the same bits). */
static inline __attribute__((always_inline)) void unit_block(uint64_t ctr, uint64_t seed,
                                                             float *vals) {
  uint32_t lanes[4][PHILOX_LANES];
  philox_lanes(ctr, seed, lanes);
  for (int i = 0; i < 4; i++)
    PD_SIMD for (int l = 0; l < PHILOX_LANES; l++)
      vals[4 * l + i] = (float)(lanes[i][l] >> 8) * 0x1p-24f;
}

static void unit_block_base(uint64_t ctr, uint64_t seed, float *vals) {
  unit_block(ctr, seed, vals);
}

#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f")))

/* hi and lo words of the 16 products m * x (32 x 32 -> 64 bits, lane by lane). */
static inline __attribute__((always_inline)) AVX512 void mul_hilo(__m512i x, __m512i m,
                                                                  __m512i *hi, __m512i *lo) {
  __m512i even = _mm512_mul_epu32(x, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);
  *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
  *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* Sixteen counters from ctr at once in AVX-512 registers (GCC's vectorisation of the lanes
 * loop moved the 64-bit products' halves around with shuffles: 2.3 ns a value), then the
 * values reordered to the counters' order (value 4 c + i is word i of counter c). */
#define UNIT_LANES_512 16
static AVX512 void unit_block_avx512(uint64_t ctr, uint64_t seed, float *vals) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512i base = _mm512_set1_epi32((int)(uint32_t)ctr);
  __m512i c0 = _mm512_add_epi32(base, iota);
  __mmask16 wrap = _mm512_cmplt_epu32_mask(c0, base); /* the low word wrapped: carry */
  __m512i c1 = _mm512_set1_epi32((int)(uint32_t)(ctr >> 32));
  c1 = _mm512_mask_add_epi32(c1, wrap, c1, _mm512_set1_epi32(1));
  __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
  const __m512i m0 = _mm512_set1_epi32((int)0xD2511F53u), m1 = _mm512_set1_epi32((int)0xCD9E8D57u);
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    __m512i h0, l0, h1, l1;
    mul_hilo(c0, m0, &h0, &l0);
    mul_hilo(c2, m1, &h1, &l1);
    c0 = _mm512_xor_si512(_mm512_xor_si512(h1, c1), _mm512_set1_epi32((int)k0));
    c2 = _mm512_xor_si512(_mm512_xor_si512(h0, c3), _mm512_set1_epi32((int)k1));
    c1 = l1;
    c3 = l0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  const __m512 scale = _mm512_set1_ps(0x1p-24f);
  __m512 v0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(c0, 8)), scale);
  __m512 v1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(c1, 8)), scale);
  __m512 v2 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(c2, 8)), scale);
  __m512 v3 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(c3, 8)), scale);
  /* In each 128-bit quarter q: e = counter 4q's four words, f 4q + 1's, g 4q + 2's, h 4q + 3's */
  __m512 a = _mm512_unpacklo_ps(v0, v1), b = _mm512_unpackhi_ps(v0, v1);
  __m512 c = _mm512_unpacklo_ps(v2, v3), d = _mm512_unpackhi_ps(v2, v3);
  __m512 e = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(c)));
  __m512 f = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(c)));
  __m512 g = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(b), _mm512_castps_pd(d)));
  __m512 h = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(b), _mm512_castps_pd(d)));
  /* then the quarters transposed: out vector q = e, f, g, h's quarter q */
  __m512 t0 = _mm512_shuffle_f32x4(e, f, 0x44), t1 = _mm512_shuffle_f32x4(g, h, 0x44);
  __m512 t2 = _mm512_shuffle_f32x4(e, f, 0xEE), t3 = _mm512_shuffle_f32x4(g, h, 0xEE);
  _mm512_storeu_ps(vals, _mm512_shuffle_f32x4(t0, t1, 0x88));
  _mm512_storeu_ps(vals + 16, _mm512_shuffle_f32x4(t0, t1, 0xDD));
  _mm512_storeu_ps(vals + 32, _mm512_shuffle_f32x4(t2, t3, 0x88));
  _mm512_storeu_ps(vals + 48, _mm512_shuffle_f32x4(t2, t3, 0xDD));
}
#endif

static void uniform_f32_range(const rand_job *job, int64_t b, int64_t e) {
  float *out = job->out, top = (float)job->b, below = nextafterf(top, (float)job->a);
  bool unit = job->a == 0.0 && job->b == 1.0, clamp = job->b > job->a;
  void (*block)(uint64_t, uint64_t, float *) = unit_block_base;
  int64_t per = PHILOX_LANES; /* counters a block */
#if PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32
  if (unit && pd_kcpu_simd() == PD_KCPU_SIMD_AVX512) block = unit_block_avx512,
                                                     per = UNIT_LANES_512;
#endif
  uint32_t lanes[4][PHILOX_LANES];
  float vals[4 * 16];
  for (int64_t c = b; c < e; c += per) {
    if (unit) {
      block(job->offset + (uint64_t)c, job->seed, vals);
    } else {
      philox_lanes(job->offset + (uint64_t)c, job->seed, lanes);
      for (int i = 0; i < 4; i++)
        PD_SIMD for (int l = 0; l < PHILOX_LANES; l++) {
          double v = (double)(lanes[i][l] >> 8) * 0x1p-24;
          float f = (float)(job->a + (job->b - job->a) * v);
          vals[4 * l + i] = clamp && f >= top ? below : f;
        }
    }
    int64_t first = c * 4, cnt = (e - c < per ? e - c : per) * 4;
    if (first + cnt > job->n) cnt = job->n - first;
    memcpy(out + first, vals, (size_t)cnt * sizeof(float));
  }
}

static void rand_range(void *vjob, int64_t b, int64_t e) {
  const rand_job *job = vjob;
  if (job->dt == PD_FP32 && !job->normal) {
    uniform_f32_range(job, b, e);
    return;
  }
  uint32_t lanes[4][PHILOX_LANES];
  for (int64_t c = b; c < e; c++) {
    int64_t l = (c - b) % PHILOX_LANES;
    if (l == 0) philox_lanes(job->offset + (uint64_t)c, job->seed, lanes);
    uint32_t w[4] = {lanes[0][l], lanes[1][l], lanes[2][l], lanes[3][l]};
    double v[4];
    words_values(job, w, v);
    for (int64_t lane = 0; lane < job->per; lane++) {
      int64_t i = c * job->per + lane;
      if (i >= job->n) break;
      if (job->dt == PD_FP32) {
        float f = (float)v[lane];
        /* Rounding to float can reach `high`; keep uniform values in [low, high). */
        if (!job->normal && f >= (float)job->b && job->b > job->a)
          f = nextafterf((float)job->b, (float)job->a);
        ((float *)job->out)[i] = f;
      } else {
        ((double *)job->out)[i] = v[lane];
      }
    }
  }
}

static pd_status fill_random(pd_dtype dt, int64_t n, void *out, double a, double b,
                             pd_k_rng *rng, bool normal) {
  pd_status st = pd_k_random_check(dt, n, rng, a, b, normal);
  if (st) return st;
  rand_job job = {.dt = dt, .normal = normal, .n = n, .per = dt == PD_FP32 ? 4 : 2,
                  .seed = rng->seed, .offset = rng->offset, .a = a, .b = b, .out = out};
  int64_t counters = (n + job.per - 1) / job.per;
  pd_kcpu_parallel(counters, PD_KCPU_GRAIN_TRANSCENDENTAL / job.per, rand_range, &job);
  rng->offset += (uint64_t)counters;
  return PD_OK;
}

pd_status pd_kcpu_uniform(pd_dtype dt, int64_t n, void *out, double low, double high,
                          pd_k_rng *rng) {
  return fill_random(dt, n, out, low, high, rng, false);
}

pd_status pd_kcpu_gaussian(pd_dtype dt, int64_t n, void *out, double mean, double std,
                           pd_k_rng *rng) {
  return fill_random(dt, n, out, mean, std, rng, true);
}
