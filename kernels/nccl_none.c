/* nccl_none.c -- the GPU collectives of kernels/nccl.h in a build without NCCL (no CUDA, no
 * MPI, or no NCCL found by configure): every call says so; a data-parallel job on GPUs is
 * then refused before it starts (vm/run/comm.h, pd_comm_gpu_check). */
#include "config.h"
#include "kernels/nccl.h"

static pd_status absent(pd_error *err) {
  return pd_error_set(err, PD_EUNSUPPORTED, (pd_loc){0},
                      "this pdlang was built without NCCL (configure --with-cuda with MPI and "
                      "NCCL), which GPU ranks of a data-parallel job sum through");
}

bool pd_k_nccl_built(void) { return false; }

pd_status pd_k_nccl_unique_id(unsigned char id[PD_K_NCCL_ID_BYTES], pd_error *err) {
  PD_UNUSED(id);
  return absent(err);
}

pd_status pd_k_nccl_open(const unsigned char id[PD_K_NCCL_ID_BYTES], int rank, int nranks,
                         pd_error *err) {
  PD_UNUSED(id);
  PD_UNUSED(rank);
  PD_UNUSED(nranks);
  return absent(err);
}

bool pd_k_nccl_is_open(void) { return false; }

void pd_k_nccl_close(void) {}

pd_status pd_k_nccl_allreduce_start(void *dev, size_t n, pd_dtype dtype, pd_error *err) {
  PD_UNUSED(dev);
  PD_UNUSED(n);
  PD_UNUSED(dtype);
  return absent(err);
}

pd_status pd_k_nccl_join(pd_error *err) { return absent(err); }

pd_status pd_k_nccl_bcast(void *dev, size_t nbytes, int root, pd_error *err) {
  PD_UNUSED(dev);
  PD_UNUSED(nbytes);
  PD_UNUSED(root);
  return absent(err);
}
