/* comm.h -- the communicator of data-parallel training: the one place that talks to MPI
 * (vm/run/comm_mpi.c, built with --with-mpi) or, without MPI, a communicator of one process
 * (vm/run/comm_none.c). It owns MPI's initialisation (MPI_THREAD_MULTIPLE: the thread that runs
 * the executor and the communicator's progress thread call MPI; MPI_THREAD_FUNNELED, without the
 * progress thread, with PDLANG_MPI_PROGRESS=test or an MPI that lacks the level) and
 * finalisation, and the gradient buckets of the c_allreduce_sum ops (vm/ops/collective.c).
 *
 * Process-wide, as MPI is: pd_comm_init once (the driver's `run`, before anything computes), then
 * any call from the main thread, then pd_comm_finalize. Before init, and when the process was not
 * started by mpirun (no OMPI_COMM_WORLD_SIZE / PMI_SIZE / PMIX_RANK in the environment), the
 * communicator is this process alone: rank 0 of 1, and every collective is the identity.
 *
 * Buckets (Horovod's tensor fusion, PyTorch DDP's gradient buckets): pd_comm_grad_start copies a
 * gradient into the open bucket; a bucket that reaches the bucket size
 * (PDLANG_MPI_BUCKET_KB, default PD_COMM_BUCKET_KB) starts its non-blocking MPI_Iallreduce at
 * once, so that it runs while the backward pass goes on; a gradient of the bucket size or more
 * is a bucket by itself, summed in place in its own buffer (pd_comm_grad_start_in_place: no
 * copy in or out, as DDP's gradient_as_bucket_view). pd_comm_grad_finish starts the last
 * bucket, waits for all of them (tests back to back for up to 1 ms, then every 20 us, sleeping
 * between: MPI_Wait spins for as long as the other rank is late) and copies the sums back, in
 * the order the gradients were started. Open MPI moves a non-blocking collective forward only
 * inside MPI calls (about one fragment per call when its shared memory copies in and out, one
 * call per message when it reads the other process's memory directly, CMA), so a progress
 * thread tests the buckets in flight every 50 us while there are any, and sleeps otherwise
 * (PDLANG_MPI_PROGRESS=thread, the default); with PDLANG_MPI_PROGRESS=test, the executor tests
 * them after each op instead (pd_comm_progress), and each pd_comm_grad_start.
 * PDLANG_MPI_SKIP_ALLREDUCE=1 is a benchmark switch only: the gradients are then not summed at
 * all (each rank keeps its own; the step without its communication, to measure what it adds).
 *
 * Ownership: the communicator owns its buckets; the callers' buffers are only read or written
 * during the call. Errors fill err (which may be NULL) with a location-free message; MPI's own
 * errors come back as PD_ERUNTIME with MPI's text (the communicator returns errors rather than
 * aborting, MPI_ERRORS_RETURN). */
#ifndef PD_COMM_H
#define PD_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/dtype.h"

#define PD_COMM_BUCKET_KB 1024

/* Start MPI when the process runs under mpirun (see above); a no-op otherwise and without MPI.
 * PD_ERUNTIME when MPI cannot give the thread level. */
pd_status pd_comm_init(int *argc, char ***argv, pd_error *err);
/* Wait for the other ranks and end MPI (nothing when it was not started). */
void pd_comm_finalize(void);
/* End the whole job after this rank failed: MPI_Abort (mpirun then stops every rank). Without
 * MPI, or when MPI was not started, it returns (the caller exits as usual). */
void pd_comm_abort(int code);

int pd_comm_rank(void);        /* 0 .. size - 1 */
int pd_comm_size(void);        /* >= 1 */
int pd_comm_local_rank(void);  /* the rank among the processes of this host */
int pd_comm_local_size(void);  /* the processes of this job on this host (>= 1) */
/* "MPI" (Open MPI's version line) or "none": what data-parallel runs go through. */
const char *pd_comm_backend(void);

/* Sum n doubles over every rank, in place (blocking). */
pd_status pd_comm_allreduce_f64(double *v, int n, pd_error *err);
/* Rank root's n bytes to every rank (blocking). */
pd_status pd_comm_bcast(void *data, size_t n, int root, pd_error *err);
/* Every rank's value of `hash`; PD_EINVAL when they differ, naming the first rank whose value is
 * not rank 0's and both values, after `what` ("training program"). */
pd_status pd_comm_same(uint64_t hash, const char *what, pd_error *err);

/* The bucketed, overlapped sum of gradients (see above). dtype is fp32 or fp64. */
pd_status pd_comm_grad_start(const void *data, int64_t n, pd_dtype dtype, pd_error *err);
/* Whether a gradient of n elements of dtype is summed in place rather than packed: it fills a
 * bucket by itself (at least the bucket size), as PyTorch DDP's gradient_as_bucket_view saves
 * the copies into the bucket and back. */
bool pd_comm_grad_in_place_fits(int64_t n, pd_dtype dtype);
/* pd_comm_grad_start for such a gradient (PD_EINVAL for another), host memory: the sum is made
 * in data itself, which the caller must neither read nor write until pd_comm_grad_finish, and
 * whose memory it keeps alive through keep: the communicator calls release(keep) once the sum
 * is written (in pd_comm_grad_finish, or pd_comm_finalize after a failure), or at once when it
 * fails to start the sum. */
pd_status pd_comm_grad_start_in_place(void *data, int64_t n, pd_dtype dtype,
                                      void (*release)(void *keep), void *keep, pd_error *err);
/* Move the sums in flight forward where no progress thread does (PDLANG_MPI_PROGRESS=test):
 * one test of each, which the executor makes after every op while there are any; nothing
 * otherwise. An MPI error is left for pd_comm_grad_finish to report. */
void pd_comm_progress(void);
/* The number of gradients started and not yet finished. */
int pd_comm_grad_pending(void);
/* The k-th pending gradient's element count and dtype (0 <= k < pd_comm_grad_pending()). */
void pd_comm_grad_info(int k, int64_t *n, pd_dtype *dtype);
/* The buffer the k-th pending gradient is summed in (pd_comm_grad_start_in_place), or NULL when
 * it was packed into a bucket. */
const void *pd_comm_grad_in_place(int k);
/* Wait for every bucket; then out[k] (n elements of the k-th gradient started) receives its sum
 * over the ranks (nothing is copied when out[k] is the buffer it was summed in place in).
 * Afterwards nothing is pending. */
pd_status pd_comm_grad_finish(void *const *out, pd_error *err);
/* The bucket size in bytes in use (PDLANG_MPI_BUCKET_KB, else the default). */
size_t pd_comm_bucket_bytes(void);

/* GPU ranks (--device gpu under mpirun): each rank computes on GPU local_rank and the sums and
 * broadcasts go through NCCL (kernels/nccl.h) on device memory, its communicator made at the
 * first GPU collective from a unique id that rank 0 broadcasts over MPI. The gradient buckets
 * are then device buffers: a bucket's ncclAllReduce starts once it is full, on the sums' stream,
 * and overlaps the backward kernels queued after it; pd_comm_grad_finish queues the wait and the
 * copies back on the backend's stream (the host does not wait).
 * PD_OK when a job of this size can compute on GPUs (one process, or NCCL built); else
 * PD_EUNSUPPORTED saying why (this pdlang has no NCCL: there is no fallback through host
 * copies, as CPU ranks are the way to train without NCCL). */
pd_status pd_comm_gpu_check(pd_error *err);
/* pd_comm_grad_start for a gradient in device memory (see above); pd_comm_grad_finish then
 * takes a device pointer for it. */
pd_status pd_comm_grad_start_dev(const void *dev, int64_t n, pd_dtype dtype, pd_error *err);
/* pd_comm_bcast of device memory, through NCCL (queued; the backend's stream waits for it). */
pd_status pd_comm_bcast_dev(void *dev, size_t n, int root, pd_error *err);

#endif /* PD_COMM_H */
