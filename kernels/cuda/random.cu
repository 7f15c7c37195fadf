/* random.cu -- the CUDA backend's uniform and normal fills from the Philox4x32-10 stream of a
 * pd_k_rng: kernels/cpu/random.c on the device. Element i of a call comes from counter
 * rng->offset + i / per_counter (4 values per counter for fp32, 2 for fp64), one thread per
 * counter, and the call moves rng->offset past the counters it used, exactly as the CPU does.
 * Uniform values are bit for bit the CPU's: the same integer-to-double conversions, and the
 * affine map low + (high - low) * u done with explicitly rounded operations (no FMA
 * contraction). Normal values use the device's log, sqrt, cos and sin, which may differ from
 * glibc's in the last bits. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <math.h>

/* pd_k_philox4x32_10 (kernels/kernels.c), for the device. */
__device__ __forceinline__ void philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                              uint32_t k0, uint32_t k1, uint32_t out[4]) {
#pragma unroll
  for (int round = 0; round < 10; round++) {
    uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;  /* the Weyl sequence bumps the key between rounds */
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* The two 53-bit words of a counter's output as a double in [0, 1) (exact). */
__device__ __forceinline__ double bits53(uint32_t hi, uint32_t lo) {
  return (double)(((uint64_t)hi << 21) | (lo >> 11)) * 0x1p-53;
}

template <typename T>
__global__ void rand_kernel(int64_t n, int64_t counters, int per, bool normal, uint64_t seed,
                            uint64_t offset, double a, double b, T *out) {
  const double two_pi = 6.283185307179586476925286766559;
  const bool f32 = sizeof(T) == 4;
  PD_KCU_LOOP(c, counters) {
    uint64_t ctr = offset + (uint64_t)c;
    uint32_t w[4];
    philox4x32_10((uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0, (uint32_t)seed,
                  (uint32_t)(seed >> 32), w);
    double v[4];
    if (!normal) {
      if (f32) {
#pragma unroll
        for (int i = 0; i < 4; i++) v[i] = (double)(w[i] >> 8) * 0x1p-24;
      } else {
        v[0] = bits53(w[0], w[1]);
        v[1] = bits53(w[2], w[3]);
        v[2] = v[3] = 0;
      }
      double span = __dsub_rn(b, a);
#pragma unroll
      for (int i = 0; i < 4; i++) v[i] = __dadd_rn(a, __dmul_rn(span, v[i]));
    } else {
      /* Box-Muller: u1 in (0, 1) (never 0, so the log is finite), u2 in [0, 1). */
      double u[4];
      if (f32) {
#pragma unroll
        for (int i = 0; i < 4; i++) u[i] = __dmul_rn(__dadd_rn((double)w[i], 0.5), 0x1p-32);
      } else {
        u[0] = __dmul_rn(
            __dadd_rn((double)(((uint64_t)w[0] << 21) | (w[1] >> 11)), 0.5), 0x1p-53);
        u[1] = bits53(w[2], w[3]);
        u[2] = u[3] = 0;
      }
      for (int pair = 0; pair < (f32 ? 2 : 1); pair++) {
        double r = sqrt(-2.0 * log(u[2 * pair])), t = two_pi * u[2 * pair + 1];
        v[2 * pair] = a + b * r * cos(t);
        v[2 * pair + 1] = a + b * r * sin(t);
      }
    }
    for (int lane = 0; lane < per; lane++) {
      int64_t i = c * per + lane;
      if (i >= n) break;
      if (f32) {
        float f = __double2float_rn(v[lane]);
        /* Rounding to float can reach `high`; keep uniform values in [low, high). */
        if (!normal && f >= __double2float_rn(b) && b > a)
          f = nextafterf(__double2float_rn(b), __double2float_rn(a));
        out[i] = (T)f;
      } else {
        out[i] = (T)v[lane];
      }
    }
  }
}

static pd_status fill_random(pd_dtype dt, int64_t n, void *out, double a, double b,
                             pd_k_rng *rng, bool normal) {
  pd_status st = pd_k_random_check(dt, n, rng, a, b, normal);
  if (st) return st;
  int per = dt == PD_FP32 ? 4 : 2;
  int64_t counters = (n + per - 1) / per;
  if (counters > 0) {
    unsigned nb = pd_kcu_blocks(counters);
    if (dt == PD_FP32)
      rand_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          n, counters, per, normal, rng->seed, rng->offset, a, b, (float *)out);
    else
      rand_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          n, counters, per, normal, rng->seed, rng->offset, a, b, (double *)out);
    PD_KCU_LAUNCHED("random kernel");
  }
  rng->offset += (uint64_t)counters;
  return PD_OK;
}

pd_status pd_kcu_uniform(pd_dtype dt, int64_t n, void *out, double low, double high,
                         pd_k_rng *rng) {
  return fill_random(dt, n, out, low, high, rng, false);
}

pd_status pd_kcu_gaussian(pd_dtype dt, int64_t n, void *out, double mean, double std,
                          pd_k_rng *rng) {
  return fill_random(dt, n, out, mean, std, rng, true);
}
