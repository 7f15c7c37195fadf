/* nccl.cu -- the GPU collectives of data-parallel jobs (kernels/nccl.h) on NCCL: one
 * communicator per process on the device the CUDA backend opened, the sums on a stream of their
 * own ordered after the backend's stream by events, so that they overlap the kernels queued
 * after them. Built with --with-cuda, MPI and NCCL only (kernels/nccl_none.c otherwise). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <string.h>

#include "kernels/cuda/cuda_int.h"

extern "C" {
#include "kernels/nccl.h"
}

static_assert(PD_K_NCCL_ID_BYTES == NCCL_UNIQUE_ID_BYTES && sizeof(ncclUniqueId) ==
              NCCL_UNIQUE_ID_BYTES, "kernels/nccl.h's id size is NCCL's");

static struct {
  ncclComm_t comm;
  cudaStream_t stream;     /* the sums' stream */
  cudaEvent_t ready;       /* recorded on the backend's stream: the buffer is final */
  cudaEvent_t done;        /* recorded on the sums' stream: the sums so far are over */
  bool open, pending;      /* pending: sums started since the last join */
  int rank, nranks;
} N;

static const pd_loc nowhere = {};

static pd_status cuda_fail(pd_error *err, const char *what, cudaError_t e) {
  return pd_error_set(err, e == cudaErrorMemoryAllocation ? PD_ENOMEM : PD_ERUNTIME, nowhere,
                      "rank %d of %d: %s: %s (%s)", N.rank, N.nranks, what, cudaGetErrorName(e),
                      cudaGetErrorString(e));
}

static pd_status nccl_fail(pd_error *err, const char *what, ncclResult_t r) {
  const char *last = N.comm ? ncclGetLastError(N.comm) : NULL;
  return pd_error_set(err, r == ncclSystemError || r == ncclRemoteError ? PD_ERUNTIME
                      : r == ncclInvalidArgument || r == ncclInvalidUsage ? PD_EINVAL
                      : PD_ERUNTIME, nowhere, "rank %d of %d: %s failed: %s%s%s", N.rank,
                      N.nranks, what, ncclGetErrorString(r), last && *last ? ": " : "",
                      last ? last : "");
}

#define CUDA_TRY(what, call)                                   \
  do {                                                         \
    cudaError_t e_ = (call);                                   \
    if (e_ != cudaSuccess) return cuda_fail(err, what, e_);    \
  } while (0)
#define NCCL_TRY(what, call)                                   \
  do {                                                         \
    ncclResult_t r_ = (call);                                  \
    if (r_ != ncclSuccess) return nccl_fail(err, what, r_);    \
  } while (0)

static pd_status not_open(pd_error *err) {
  return pd_error_set(err, PD_EINVAL, nowhere, "the NCCL communicator is not open "
                      "(pd_k_nccl_open)");
}

extern "C" bool pd_k_nccl_built(void) { return true; }

extern "C" pd_status pd_k_nccl_unique_id(unsigned char id[PD_K_NCCL_ID_BYTES], pd_error *err) {
  ncclUniqueId u;
  NCCL_TRY("ncclGetUniqueId", ncclGetUniqueId(&u));
  memcpy(id, u.internal, NCCL_UNIQUE_ID_BYTES);
  return PD_OK;
}

/* What open made so far, undone (after a failure, or at close). */
static void teardown(bool abort_comm) {
  if (N.comm) {
    if (abort_comm) ncclCommAbort(N.comm);
    else ncclCommDestroy(N.comm);
  }
  if (N.ready) cudaEventDestroy(N.ready);
  if (N.done) cudaEventDestroy(N.done);
  if (N.stream) cudaStreamDestroy(N.stream);
  N.comm = NULL;
  N.ready = N.done = NULL;
  N.stream = NULL;
  N.open = N.pending = false;
}

static pd_status open_comm(const unsigned char id[PD_K_NCCL_ID_BYTES], pd_error *err) {
  CUDA_TRY("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&N.stream,
                                                                  cudaStreamNonBlocking));
  CUDA_TRY("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&N.ready,
                                                                cudaEventDisableTiming));
  CUDA_TRY("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&N.done,
                                                                cudaEventDisableTiming));
  ncclUniqueId u;
  memcpy(u.internal, id, NCCL_UNIQUE_ID_BYTES);
  ncclComm_t comm = NULL;   /* N.comm only once made: a failed init leaves nothing to free */
  NCCL_TRY("ncclCommInitRank", ncclCommInitRank(&comm, N.nranks, u, N.rank));
  N.comm = comm;
  return PD_OK;
}

extern "C" pd_status pd_k_nccl_open(const unsigned char id[PD_K_NCCL_ID_BYTES], int rank,
                                    int nranks, pd_error *err) {
  if (N.open) return pd_error_set(err, PD_EINVAL, nowhere, "the NCCL communicator is open "
                                  "already");
  if (!pd_k_cuda_is_open())
    return pd_error_set(err, PD_EINVAL, nowhere, "NCCL needs the GPU open first "
                        "(pd_k_cuda_open)");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return pd_error_set(err, PD_EINVAL, nowhere, "rank %d of %d is not a rank", rank, nranks);
  N.rank = rank;
  N.nranks = nranks;
  pd_status st = open_comm(id, err);
  if (st) {
    teardown(true);
    return st;
  }
  N.open = true;
  return PD_OK;
}

extern "C" bool pd_k_nccl_is_open(void) { return N.open; }

extern "C" void pd_k_nccl_close(void) {
  if (!N.open) return;
  ncclResult_t async = ncclSuccess;
  bool ok = cudaStreamSynchronize(N.stream) == cudaSuccess &&
            ncclCommGetAsyncError(N.comm, &async) == ncclSuccess && async == ncclSuccess;
  teardown(!ok);
}

/* The sums' stream waits for the work queued so far on the backend's stream. */
static pd_status after_backend(pd_error *err) {
  CUDA_TRY("cudaEventRecord", cudaEventRecord(N.ready, pd_kcu_stream));
  CUDA_TRY("cudaStreamWaitEvent", cudaStreamWaitEvent(N.stream, N.ready, 0));
  return PD_OK;
}

extern "C" pd_status pd_k_nccl_allreduce_start(void *dev, size_t n, pd_dtype dtype,
                                               pd_error *err) {
  if (!N.open) return not_open(err);
  if (dtype != PD_FP32 && dtype != PD_FP64)
    return pd_error_set(err, PD_ETYPE, nowhere, "gradients to sum must be fp32 or fp64, not %s",
                        pd_dtype_name(dtype));
  if (n == 0) return PD_OK;
  pd_status st = after_backend(err);
  if (st) return st;
  NCCL_TRY("ncclAllReduce", ncclAllReduce(dev, dev, n, dtype == PD_FP64 ? ncclFloat64
                                          : ncclFloat32, ncclSum, N.comm, N.stream));
  N.pending = true;
  return PD_OK;
}

extern "C" pd_status pd_k_nccl_join(pd_error *err) {
  if (!N.open) return not_open(err);
  ncclResult_t async = ncclSuccess;
  NCCL_TRY("ncclCommGetAsyncError", ncclCommGetAsyncError(N.comm, &async));
  if (async != ncclSuccess) return nccl_fail(err, "a sum over the ranks (NCCL)", async);
  if (!N.pending) return PD_OK;
  CUDA_TRY("cudaEventRecord", cudaEventRecord(N.done, N.stream));
  CUDA_TRY("cudaStreamWaitEvent", cudaStreamWaitEvent(pd_kcu_stream, N.done, 0));
  N.pending = false;
  return PD_OK;
}

extern "C" pd_status pd_k_nccl_bcast(void *dev, size_t nbytes, int root, pd_error *err) {
  if (!N.open) return not_open(err);
  if (root < 0 || root >= N.nranks)
    return pd_error_set(err, PD_EINVAL, nowhere, "root %d is not a rank (0 to %d)", root,
                        N.nranks - 1);
  if (nbytes == 0) return PD_OK;
  /* On the sums' stream too: NCCL wants the calls of one communicator in one order on one
   * stream. */
  pd_status st = after_backend(err);
  if (st) return st;
  NCCL_TRY("ncclBroadcast", ncclBroadcast(dev, dev, nbytes, ncclUint8, root, N.comm, N.stream));
  N.pending = true;
  return pd_k_nccl_join(err);
}
