/* comm_none.c -- the communicator of a pdlang built without MPI (vm/run/comm.h): always this one
 * process, rank 0 of 1, so that every collective is the identity. The bucketed gradient sums are
 * only started by a job of several ranks; here they report that MPI is absent. */
#include "config.h"
#include "vm/run/comm.h"

static const pd_loc nowhere = {0};

pd_status pd_comm_init(int *argc, char ***argv, pd_error *err) {
  (void)argc;
  (void)argv;
  (void)err;
  return PD_OK;
}

void pd_comm_finalize(void) {}
void pd_comm_abort(int code) { (void)code; }
int pd_comm_rank(void) { return 0; }
int pd_comm_size(void) { return 1; }
int pd_comm_local_rank(void) { return 0; }
int pd_comm_local_size(void) { return 1; }
const char *pd_comm_backend(void) { return "none"; }

pd_status pd_comm_allreduce_f64(double *v, int n, pd_error *err) {
  (void)v;
  (void)n;
  (void)err;
  return PD_OK;
}

pd_status pd_comm_bcast(void *data, size_t n, int root, pd_error *err) {
  (void)data;
  (void)n;
  (void)root;
  (void)err;
  return PD_OK;
}

pd_status pd_comm_same(uint64_t hash, const char *what, pd_error *err) {
  (void)hash;
  (void)what;
  (void)err;
  return PD_OK;
}

static pd_status no_mpi(pd_error *err) {
  return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                      "this pdlang was built without MPI (configure --with-mpi)");
}

pd_status pd_comm_grad_start(const pd_comm_grad *g, pd_error *err) {
  if (g->release) g->release(g->keep);
  return no_mpi(err);
}

bool pd_comm_grad_in_place_fits(int64_t n, pd_dtype dtype) {
  (void)n;
  (void)dtype;
  return false;
}

void pd_comm_progress(void) {}

int pd_comm_grad_pending(void) { return 0; }

void pd_comm_grad_info(int k, int64_t *n, pd_dtype *dtype) {
  (void)k;
  *n = 0;
  *dtype = PD_FP32;
}

const void *pd_comm_grad_held(int k) {
  (void)k;
  return NULL;
}

pd_status pd_comm_grad_finish(void *const *out, pd_error *err) {
  (void)out;
  (void)err;
  return PD_OK;
}

size_t pd_comm_bucket_bytes(void) { return (size_t)PD_COMM_BUCKET_KB * 1024; }

pd_status pd_comm_gpu_check(pd_error *err) {
  (void)err;
  return PD_OK;   /* one process: no collective to run */
}

pd_status pd_comm_grad_start_dev(const void *dev, int64_t n, pd_dtype dtype, pd_error *err) {
  (void)dev;
  (void)n;
  (void)dtype;
  return no_mpi(err);
}

pd_status pd_comm_bcast_dev(void *dev, size_t n, int root, pd_error *err) {
  return pd_comm_bcast(dev, n, root, err);
}
