/* random.c -- uniform and normal fills from the Philox4x32-10 stream of a pd_k_rng. Element i
 * of a call comes from counter rng->offset + i / per_counter, so any split of the work across
 * threads gives the same numbers; the call then moves rng->offset past the counters it used.
 *
 * Per counter (4 random 32-bit words): uniform fp32 takes 4 values (24 bits each), uniform fp64
 * 2 (53 bits from two words), normal fp32 4 (two Box-Muller pairs, 32-bit uniforms), normal fp64
 * 2 (one pair from 53-bit uniforms). */
#include "config.h"
#include "kernels/cpu/cpu.h"

#include <math.h>

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
static void philox_lanes(uint64_t ctr, uint64_t seed, uint32_t w[4][PHILOX_LANES]) {
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

static void rand_range(void *vjob, int64_t b, int64_t e) {
  const rand_job *job = vjob;
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
