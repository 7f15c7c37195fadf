/* bench_util.h -- what the C micro-benchmarks share (bench_kernels.c, bench_norm.c): a monotonic
 * clock, a thread's CPU clock and random fp32 buffers from the kernels' host allocator. Not a test. */
#ifndef PD_BENCH_UTIL_H
#define PD_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/kernels.h"

/* Seconds on the monotonic clock. */
static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds of CPU time of the calling thread: a one-thread measurement that other processes on
 * the machine (a loaded build machine) perturb far less than the wall clock. */
static inline double bench_thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n floats uniform in [-0.5, 0.5] (pd_k_host_alloc; pd_k_host_free them); exits naming prog
 * when out of memory. */
static inline float *bench_randf(const char *prog, size_t n) {
  float *p = pd_k_host_alloc(n * sizeof *p);
  if (!p) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(1);
  }
  for (size_t i = 0; i < n; i++) p[i] = (float)((double)rand() / RAND_MAX - 0.5);
  return p;
}

#endif /* PD_BENCH_UTIL_H */
