/* comm_mpi.c -- the communicator on MPI (vm/run/comm.h): initialisation under mpirun, the
 * blocking collectives of the runner (metric sums, program hashes, broadcasts) and the gradient
 * buckets, each summed by one non-blocking MPI_Iallreduce started as soon as it is full. Built
 * with --with-mpi only (vm/run/comm_none.c otherwise). */
#include "config.h"
#include "vm/run/comm.h"

#include <inttypes.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct bucket {
  unsigned char *buf;  /* the packed gradients; cap bytes */
  size_t cap, used;
  pd_dtype dtype;
  MPI_Request req;     /* MPI_REQUEST_NULL until started (and again once complete) */
  bool started;
} bucket;

typedef struct pending {
  int bucket;          /* where the gradient's elements were packed */
  size_t off;          /* byte offset in it */
  int64_t n;
  pd_dtype dtype;
} pending;

static struct {
  bool up;             /* MPI_Init_thread done by us */
  int rank, size, local_rank, local_size;
  size_t bucket_bytes;
  bucket *buckets;     /* nb in use this step, cb allocated (buffers kept between steps) */
  int nb, cb;
  pending *grads;
  int ng, cg;
} C = {.size = 1, .local_size = 1};

static const pd_loc nowhere = {0};

static pd_status mpi_fail(pd_error *err, int rc, const char *what) {
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return pd_error_set(err, PD_ERUNTIME, nowhere, "rank %d of %d: %s failed: %s", C.rank, C.size,
                      what, msg);
}

static bool launched_by_mpirun(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}

pd_status pd_comm_init(int *argc, char ***argv, pd_error *err) {
  if (C.up || !launched_by_mpirun()) return PD_OK;
  /* A rank that waits for the others yields its core rather than spinning in MPI_Wait: ranks
   * share cores with their kernel threads and, on a small machine, with each other (spinning
   * made an epoch of 2 ranks on 2 busy cores 25 times slower). The user's setting wins. */
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  int provided = 0;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) return pd_error_set(err, PD_ERUNTIME, nowhere, "MPI_Init_thread failed");
  C.up = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &C.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &C.size);
  if (provided < MPI_THREAD_FUNNELED)
    return pd_error_set(err, PD_ERUNTIME, nowhere,
                        "MPI gives thread level %d, below MPI_THREAD_FUNNELED (%d) that pdlang's "
                        "kernel threads need", provided, MPI_THREAD_FUNNELED);
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, C.rank, MPI_INFO_NULL, &local) ==
      MPI_SUCCESS) {
    MPI_Comm_rank(local, &C.local_rank);
    MPI_Comm_size(local, &C.local_size);
    MPI_Comm_free(&local);
  }
  return PD_OK;
}

static void release_buckets(void) {
  for (int i = 0; i < C.cb; i++) {
    if (C.buckets[i].req != MPI_REQUEST_NULL) MPI_Request_free(&C.buckets[i].req);
    pd_free(C.buckets[i].buf);
  }
  pd_free(C.buckets);
  pd_free(C.grads);
  C.buckets = NULL;
  C.grads = NULL;
  C.nb = C.cb = C.ng = C.cg = 0;
}

void pd_comm_finalize(void) {
  release_buckets();
  if (!C.up) return;
  MPI_Finalize();
  C.up = false;
}

void pd_comm_abort(int code) {
  if (C.up && C.size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

int pd_comm_rank(void) { return C.rank; }
int pd_comm_size(void) { return C.size; }
int pd_comm_local_rank(void) { return C.local_rank; }
int pd_comm_local_size(void) { return C.local_size; }

const char *pd_comm_backend(void) {
  static char version[MPI_MAX_LIBRARY_VERSION_STRING];
  if (!version[0]) {
    int len = 0;
    MPI_Get_library_version(version, &len);
    char *nl = strchr(version, '\n');
    if (nl) *nl = '\0';
    char *comma = strchr(version, ',');
    if (comma) *comma = '\0';
  }
  return version;
}

pd_status pd_comm_allreduce_f64(double *v, int n, pd_error *err) {
  if (C.size == 1) return PD_OK;
  int rc = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? PD_OK : mpi_fail(err, rc, "MPI_Allreduce");
}

pd_status pd_comm_bcast(void *data, size_t n, int root, pd_error *err) {
  if (C.size == 1) return PD_OK;
  for (size_t off = 0; off < n;) {   /* counts are int: large tensors in chunks */
    size_t k = n - off > (size_t)1 << 30 ? (size_t)1 << 30 : n - off;
    int rc = MPI_Bcast((unsigned char *)data + off, (int)k, MPI_BYTE, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Bcast");
    off += k;
  }
  return PD_OK;
}

pd_status pd_comm_same(uint64_t hash, const char *what, pd_error *err) {
  if (C.size == 1) return PD_OK;
  uint64_t *all = pd_malloc(sizeof *all * (size_t)C.size);
  if (!all) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  int rc = MPI_Allgather(&hash, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
  pd_status st = PD_OK;
  if (rc != MPI_SUCCESS) {
    st = mpi_fail(err, rc, "MPI_Allgather");
  } else {
    for (int i = 1; i < C.size && !st; i++)
      if (all[i] != all[0])
        st = pd_error_set(err, PD_EINVAL, nowhere,
                          "the ranks run different programs: the %s of rank %d (#%016" PRIx64
                          ") is not rank 0's (#%016" PRIx64 "); start every rank with the same "
                          "script and data shapes", what, i, all[i], all[0]);
  }
  pd_free(all);
  return st;
}

/* ---- Buckets ---- */

size_t pd_comm_bucket_bytes(void) {
  if (!C.bucket_bytes) {
    const char *s = getenv("PDLANG_MPI_BUCKET_KB");
    char *end = NULL;
    long long kb = s && *s ? strtoll(s, &end, 10) : 0;
    C.bucket_bytes = (size_t)(kb > 0 && end && !*end ? kb : PD_COMM_BUCKET_KB) * 1024;
  }
  return C.bucket_bytes;
}

static MPI_Datatype mpi_type(pd_dtype t) { return t == PD_FP64 ? MPI_DOUBLE : MPI_FLOAT; }

static pd_status start_bucket(bucket *b, pd_error *err) {
  size_t esz = pd_dtype_size(b->dtype);
  size_t n = b->used / esz;
  if (n > INT32_MAX)
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere, "a gradient bucket of %zu elements", n);
  int rc = MPI_Iallreduce(MPI_IN_PLACE, b->buf, (int)n, mpi_type(b->dtype), MPI_SUM,
                          MPI_COMM_WORLD, &b->req);
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Iallreduce");
  b->started = true;
  return PD_OK;
}

/* The bucket that takes `bytes` more of dtype: the open one, or a new one (the open one is then
 * started). -1 on out of memory or an MPI error. */
static int open_bucket(size_t bytes, pd_dtype dtype, pd_error *err) {
  if (C.nb > 0) {
    bucket *b = &C.buckets[C.nb - 1];
    if (!b->started && b->dtype == dtype && b->used + bytes <= b->cap) return C.nb - 1;
    if (!b->started && b->dtype == dtype && b->used == 0) { /* an empty bucket grows */
      unsigned char *nb = pd_realloc(b->buf, bytes);
      if (!nb) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory"), -1;
      b->buf = nb;
      b->cap = bytes;
      return C.nb - 1;
    }
    if (!b->started && start_bucket(b, err)) return -1;
  }
  if (C.nb == C.cb) {
    int nc = C.cb ? 2 * C.cb : 4;
    bucket *nbk = pd_realloc(C.buckets, sizeof *nbk * (size_t)nc);
    if (!nbk) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory"), -1;
    for (int i = C.cb; i < nc; i++) nbk[i] = (bucket){.req = MPI_REQUEST_NULL};
    C.buckets = nbk;
    C.cb = nc;
  }
  bucket *b = &C.buckets[C.nb];
  size_t want = bytes > pd_comm_bucket_bytes() ? bytes : pd_comm_bucket_bytes();
  if (b->cap < want) {
    unsigned char *nb = pd_realloc(b->buf, want);
    if (!nb) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory"), -1;
    b->buf = nb;
    b->cap = want;
  }
  b->used = 0;
  b->dtype = dtype;
  b->started = false;
  b->req = MPI_REQUEST_NULL;
  return C.nb++;
}

/* Let the buckets in flight progress (Open MPI has no progress thread by default). */
static pd_status progress(pd_error *err) {
  for (int i = 0; i < C.nb; i++) {
    if (!C.buckets[i].started || C.buckets[i].req == MPI_REQUEST_NULL) continue;
    int done = 0;
    int rc = MPI_Test(&C.buckets[i].req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Test");
  }
  return PD_OK;
}

pd_status pd_comm_grad_start(const void *data, int64_t n, pd_dtype dtype, pd_error *err) {
  if (dtype != PD_FP32 && dtype != PD_FP64)
    return pd_error_set(err, PD_ETYPE, nowhere, "gradients to sum must be fp32 or fp64, not %s",
                        pd_dtype_name(dtype));
  size_t bytes = (size_t)n * pd_dtype_size(dtype);
  if (C.ng == C.cg) {
    int nc = C.cg ? 2 * C.cg : 16;
    pending *ng = pd_realloc(C.grads, sizeof *ng * (size_t)nc);
    if (!ng) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
    C.grads = ng;
    C.cg = nc;
  }
  int bi = open_bucket(bytes, dtype, err);
  if (bi < 0) return err && err->status ? err->status : PD_ENOMEM;
  bucket *b = &C.buckets[bi];
  if (bytes) memcpy(b->buf + b->used, data, bytes);
  C.grads[C.ng++] = (pending){.bucket = bi, .off = b->used, .n = n, .dtype = dtype};
  b->used += bytes;
  pd_status st = PD_OK;
  if (b->used >= pd_comm_bucket_bytes()) st = start_bucket(b, err);
  return st ? st : progress(err);
}

int pd_comm_grad_pending(void) { return C.ng; }

void pd_comm_grad_info(int k, int64_t *n, pd_dtype *dtype) {
  *n = C.grads[k].n;
  *dtype = C.grads[k].dtype;
}

pd_status pd_comm_grad_finish(void *const *out, pd_error *err) {
  pd_status st = PD_OK;
  for (int i = 0; i < C.nb && !st; i++) {
    bucket *b = &C.buckets[i];
    if (!b->started) st = start_bucket(b, err);
    if (st) break;
    int rc = MPI_Wait(&b->req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) st = mpi_fail(err, rc, "MPI_Wait");
  }
  for (int k = 0; k < C.ng && !st; k++) {
    const pending *g = &C.grads[k];
    if (g->n) memcpy(out[k], C.buckets[g->bucket].buf + g->off,
                     (size_t)g->n * pd_dtype_size(g->dtype));
  }
  C.nb = 0;
  C.ng = 0;
  return st;
}
