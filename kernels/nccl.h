/* nccl.h -- the GPU collectives of data-parallel jobs, for the communicator of vm/run/comm.h:
 * NCCL on the device the CUDA backend opened (kernels/cuda/nccl.cu, in a build with CUDA, MPI
 * and NCCL), else kernels/nccl_none.c, whose calls report that NCCL is absent.
 *
 * One NCCL communicator per process, made by pd_k_nccl_open on every rank from the unique id
 * that rank 0 drew (pd_k_nccl_unique_id) and sent to the others (over MPI: the caller's). The
 * sums run on a stream of their own, each ordered after the work queued so far on the
 * backend's stream (an event), so that kernels queued later, the rest of the backward pass,
 * overlap them; pd_k_nccl_join makes the backend's stream wait for every sum started, without
 * waiting on the host. Broadcasts go the same way, joined at once. Buffers are device memory,
 * summed or broadcast in place; they must stay untouched until joined.
 *
 * Errors fill err (may be NULL) with a location-free message naming the NCCL or CUDA call and
 * its error text; NCCL's asynchronous errors (a peer lost) are checked at each join. */
#ifndef PD_KERNELS_NCCL_H
#define PD_KERNELS_NCCL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"
#include "base/dtype.h"

#define PD_K_NCCL_ID_BYTES 128   /* NCCL_UNIQUE_ID_BYTES */

/* Whether this pdlang has NCCL. */
bool pd_k_nccl_built(void);
/* A new unique id (rank 0, before any pd_k_nccl_open). */
pd_status pd_k_nccl_unique_id(unsigned char id[PD_K_NCCL_ID_BYTES], pd_error *err);
/* This process as rank `rank` of `nranks` in the communicator of `id`; collective: every rank
 * calls it. The CUDA backend must be open (pd_k_cuda_open). */
pd_status pd_k_nccl_open(const unsigned char id[PD_K_NCCL_ID_BYTES], int rank, int nranks,
                         pd_error *err);
bool pd_k_nccl_is_open(void);
/* Wait for the sums, destroy the communicator and the stream (nothing when not open). */
void pd_k_nccl_close(void);
/* Start the sum over the ranks of n fp32 or fp64 values at dev, in place (see above). */
pd_status pd_k_nccl_allreduce_start(void *dev, size_t n, pd_dtype dtype, pd_error *err);
/* The backend's stream waits for the sums started so far (queued; the host does not wait). */
pd_status pd_k_nccl_join(pd_error *err);
/* Rank root's nbytes at dev to every rank, in place, on the sums' stream after the work queued
 * so far; the backend's stream then waits for it (as for a joined sum). */
pd_status pd_k_nccl_bcast(void *dev, size_t nbytes, int root, pd_error *err);

#endif /* PD_KERNELS_NCCL_H */
