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
 * Buckets (Horovod's tensor fusion, PyTorch DDP's gradient buckets): pd_comm_grad_start adds a
 * gradient to the open bucket, holding the caller's buffer (no copy yet); a bucket that reaches
 * the bucket size (PDLANG_MPI_BUCKET_KB, default PD_COMM_BUCKET_KB) packs its gradients and
 * starts its non-blocking MPI_Iallreduce at once, so that it runs while the backward pass goes
 * on; a gradient of the bucket size or more is a bucket by itself, summed in place in its own
 * buffer (no copy in or out, as DDP's gradient_as_bucket_view). pd_comm_grad_finish waits for
 * the buckets started (tests back to back for up to 1 ms, then every 20 us, sleeping between:
 * MPI_Wait spins for as long as the other rank is late), then sums the last bucket, which nothing
 * is left to overlap with, by a blocking MPI_Allreduce (Open MPI's blocking algorithms have both
 * ranks reduce where its non-blocking one has rank 0 reduce for both: 0.5 to 0.7 of the time
 * for 0.8 MB on 2 ranks here), each of its gradients of a quarter bucket or more in the
 * caller's output itself, and copies the packed sums back, in the order the gradients were
 * started. Open MPI moves a non-blocking collective forward only inside MPI calls (about one
 * fragment per call when its shared memory copies in and out, one call per message when it
 * reads the other process's memory directly, CMA), so a progress thread tests the buckets in
 * flight every 50 us while there are any, and sleeps otherwise (PDLANG_MPI_PROGRESS=thread, the
 * default); with PDLANG_MPI_PROGRESS=test, the executor tests them after each op instead
 * (pd_comm_progress), and each pd_comm_grad_start.
 * PDLANG_MPI_SKIP_ALLREDUCE=1 is a benchmark switch only: the gradients are then not summed at
 * all (each rank keeps its own; the step without its communication, to measure what it adds).
 *
 * Ownership: the communicator owns its buckets; it holds the callers' gradient buffers as
 * pd_comm_grad_start says, and other buffers only during the call. Errors fill err (which may
 * be NULL) with a location-free message; MPI's own errors come back as PD_ERUNTIME with MPI's
 * text (the communicator returns errors rather than aborting, MPI_ERRORS_RETURN). */
#ifndef PD_COMM_H
#define PD_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/dtype.h"

#define PD_COMM_BUCKET_KB 1024

/* Start MPI when the process runs under mpirun (see above); a no-op otherwise and without MPI.
 * Unless the user set them, it sets Open MPI's OMPI_MCA_mpi_yield_when_idle=1 (a waiting rank
 * yields its core) and 64 fragments in flight per message (OMPI_MCA_pml_ob1_*_pipeline_depth:
 * a sum started during the backward pass then moves whole between the progress thread's tests).
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

/* A gradient in host memory for pd_comm_grad_start. */
typedef struct pd_comm_grad {
  void *data;                  /* n elements of dtype, fp32 or fp64 */
  int64_t n;
  pd_dtype dtype;
  bool own;                    /* no other var shares data: it may be summed where it is */
  void (*release)(void *keep); /* NULL when data outlives the sum */
  void *keep;
} pd_comm_grad;

/* The bucketed, overlapped sum of a gradient in host memory (see above). The communicator reads
 * g->data until it packs it into its bucket (when the bucket starts, or in pd_comm_grad_finish);
 * when g->own and the gradient fills a bucket by itself (pd_comm_grad_in_place_fits), it sums it
 * in g->data itself, whose value is then unspecified until pd_comm_grad_finish (the caller must
 * neither read nor write it). Either way it keeps the memory alive through keep: it calls
 * release(keep) once it no longer needs data (packed, or the sum written; pd_comm_finalize after
 * a failure), and at once when the call fails. */
pd_status pd_comm_grad_start(const pd_comm_grad *g, pd_error *err);
/* Whether a gradient of n elements of dtype fills a bucket by itself (at least the bucket
 * size): summed in place at once when the caller owns its buffer. */
bool pd_comm_grad_in_place_fits(int64_t n, pd_dtype dtype);
/* Move the sums in flight forward where no progress thread does (PDLANG_MPI_PROGRESS=test):
 * one test of each, which the executor makes after every op while there are any; nothing
 * otherwise. An MPI error is left for pd_comm_grad_finish to report. */
void pd_comm_progress(void);
/* The number of gradients started and not yet finished. */
int pd_comm_grad_pending(void);
/* The k-th pending gradient's element count and dtype (0 <= k < pd_comm_grad_pending()). */
void pd_comm_grad_info(int k, int64_t *n, pd_dtype *dtype);
/* The caller's buffer that the communicator still holds for the k-th pending gradient (summed in
 * it, or not yet packed: its release not yet called), or NULL. */
const void *pd_comm_grad_held(int k);
/* Wait for every bucket (see above); then out[k] (n elements of the k-th gradient started)
 * receives its sum over the ranks; out[k] may be the gradient's own buffer (the sum made there,
 * or copied into it). Afterwards nothing is pending. */
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
