/* bench_allreduce.c -- the gradient buckets of vm/run/comm.h against Open MPI's own blocking
 * MPI_Allreduce on the same bytes (run under mpirun -np 2; bench/bench_mpi.sh). For each total
 * size, the gradients are tensors of 64 KiB (like a model's layers): "mpi" sums the whole buffer
 * with one MPI_Allreduce; "buckets" starts each tensor with pd_comm_grad_start (fused into
 * buckets of PDLANG_MPI_BUCKET_KB; the last one summed by pd_comm_grad_finish) and waits with
 * pd_comm_grad_finish, copies in and out included. Prints the time per sum (the best of the repetitions), the bus bandwidth
 * 2 (N - 1) / N x bytes / time (the ring all-reduce's traffic per rank) and the CPU time of
 * rank 0's process per sum (the mean, its threads included: what a sum takes from the
 * computation when every core computes), rank 0 only. */
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
  if (me == 0)
    printf("%d ranks, bucket %zu KiB, tensors of 64 KiB\n%10s %12s %12s %12s %12s %12s %12s\n",
           n, pd_comm_bucket_bytes() / 1024, "bytes", "mpi us", "mpi GB/s", "mpi cpu us",
           "buckets us", "buckets GB/s", "buckets cpu");
  for (int64_t bytes = 64 << 10; bytes <= 64 << 20; bytes *= 4) {
    int64_t elems = bytes / 4, ntensors = elems / tensor;
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
      for (int64_t k = 0; k < ntensors; k++)
        if (pd_comm_grad_start(&(pd_comm_grad){.data = buf + k * tensor, .n = tensor,
                                               .dtype = PD_FP32}, &err))
          return 1;
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
  pd_comm_finalize();
  return 0;
}
