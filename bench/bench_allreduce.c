/* bench_allreduce.c -- the gradient buckets of vm/run/comm.h against Open MPI's own blocking
 * MPI_Allreduce on the same bytes (run under mpirun -np 2; bench/bench_mpi.sh, and
 * bench/bench_overlap.sh for a model's gradient bytes). For each total size (64 KiB to 64 MiB,
 * or the byte counts given as arguments), the gradients are tensors of 64 KiB (like a model's
 * layers; the last one shorter): "mpi" sums the whole buffer with one MPI_Allreduce; "buckets"
 * starts each tensor with pd_comm_grad_start (fused into buckets of PDLANG_MPI_BUCKET_KB; the
 * last one summed by pd_comm_grad_finish) and waits with pd_comm_grad_finish, copies in and out
 * included. Prints the time per sum (the best of the repetitions, each after a barrier), the
 * bus bandwidth 2 (N - 1) / N x bytes / time (the ring all-reduce's traffic per rank) and the
 * CPU time of rank 0's process per sum (the mean, its threads included: what a sum takes from
 * the computation when every core computes), rank 0 only. */
#include "config.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "vm/run/comm.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of this process, all its threads. */
static double cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

int main(int argc, char **argv) {
  pd_error err = {0};
  if (pd_comm_init(&argc, &argv, &err) || pd_comm_size() < 2) {
    fprintf(stderr, "bench_allreduce: run it under mpirun -np 2 or more\n");
    pd_comm_finalize();
    return 2;
  }
  int n = pd_comm_size(), me = pd_comm_rank();
  const int64_t tensor = 16384;   /* fp32 elements: 64 KiB */
  int64_t ladder[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  int nsizes = argc > 1 ? argc - 1 : (int)(sizeof ladder / sizeof ladder[0]);
  int64_t *sizes = argc > 1 ? malloc(sizeof *sizes * (size_t)nsizes) : ladder;
  for (int i = 0; argc > 1 && sizes && i < nsizes; i++) {
    char *end = NULL;
    long long v = strtoll(argv[i + 1], &end, 10);
    if (!end || *end || v < 4 || v > (1LL << 30)) {
      if (me == 0)
        fprintf(stderr, "bench_allreduce: '%s' is not a byte count from 4 to 2^30\n"
                "usage: mpirun -np N bench_allreduce [BYTES...]\n", argv[i + 1]);
      free(sizes);
      pd_comm_finalize();
      return 2;
    }
    sizes[i] = v / 4 * 4;
  }
  if (!sizes) return 1;
  if (me == 0)
    printf("%d ranks, bucket %zu KiB, tensors of 64 KiB\n%10s %12s %12s %12s %12s %12s %12s\n",
           n, pd_comm_bucket_bytes() / 1024, "bytes", "mpi us", "mpi GB/s", "mpi cpu us",
           "buckets us", "buckets GB/s", "buckets cpu");
  for (int si = 0; si < nsizes; si++) {
    int64_t bytes = sizes[si], elems = bytes / 4, ntensors = (elems + tensor - 1) / tensor;
    float *buf = malloc((size_t)bytes), *out = malloc((size_t)bytes);
    void **dst = malloc(sizeof *dst * (size_t)ntensors);
    if (!buf || !out || !dst) return 1;
    for (int64_t i = 0; i < elems; i++) buf[i] = (float)(i % 7);
    for (int64_t k = 0; k < ntensors; k++) dst[k] = out + k * tensor;
    int reps = bytes >= (16 << 20) ? 5 : 20;
    double t_mpi = 1e30, t_b = 1e30, c_mpi = 0, c_b = 0;
    for (int r = 0; r < reps; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now(), c0 = cpu();
      MPI_Allreduce(MPI_IN_PLACE, buf, (int)elems, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t1 = now();
      c_mpi += cpu() - c0;
      if (t1 - t0 < t_mpi) t_mpi = t1 - t0;
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = now();
      c0 = cpu();
      for (int64_t k = 0; k < ntensors; k++) {
        int64_t len = elems - k * tensor < tensor ? elems - k * tensor : tensor;
        if (pd_comm_grad_start(&(pd_comm_grad){.data = buf + k * tensor, .n = len,
                                               .dtype = PD_FP32}, &err))
          return 1;
      }
      if (pd_comm_grad_finish(dst, &err)) return 1;
      t1 = now();
      c_b += cpu() - c0;
      if (t1 - t0 < t_b) t_b = t1 - t0;
    }
    double traffic = 2.0 * (n - 1) / n * (double)bytes;
    if (me == 0)
      printf("%10lld %12.1f %12.2f %12.1f %12.1f %12.2f %12.1f\n", (long long)bytes, t_mpi * 1e6,
             traffic / t_mpi / 1e9, c_mpi / reps * 1e6, t_b * 1e6, traffic / t_b / 1e9,
             c_b / reps * 1e6);
    free(buf);
    free(out);
    free(dst);
  }
  if (sizes != ladder) free(sizes);
  pd_comm_finalize();
  return 0;
}
