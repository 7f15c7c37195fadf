/* comm_mpi.c -- the communicator on MPI (vm/run/comm.h): initialisation under mpirun, the
 * blocking collectives of the runner (metric sums, program hashes, broadcasts) and the gradient
 * buckets, each summed by one non-blocking MPI_Iallreduce started as soon as it is full (in
 * place for a gradient that fills one) and moved forward by the progress thread, or by the
 * executor between ops, while the backward pass computes; the last one by blocking
 * MPI_Allreduce calls at the end. Built with --with-mpi only (vm/run/comm_none.c otherwise). */
#include "config.h"
#include "vm/run/comm.h"

#include "kernels/kernels.h"
#include "kernels/nccl.h"

#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often the progress thread tests the buckets in flight. Open MPI advances a large
 * non-blocking collective by about one fragment per test (a 2.5 MB sum took some 60 tests on
 * 2 ranks), so tests between ops only leave most of it to the final wait; a test every 50 us
 * finishes it within the backward pass while costing little of a core. */
#define PROGRESS_NS (50 * 1000)
/* pd_comm_grad_finish's wait for a bucket (wait_bucket): tests back to back for up to SPIN_NS,
 * then a test every WAIT_NS, sleeping in between. */
#define SPIN_NS (1000 * 1000)
#define WAIT_NS (20 * 1000)
/* The fragments of a message Open MPI's ob1 keeps in flight (pd_comm_init). */
#define PD_COMM_PIPELINE_DEPTH "64"

typedef struct bucket {
  unsigned char *buf;  /* what is summed: `mine`, or a gradient's own buffer (summed in place) */
  unsigned char *mine; /* the bucket's own buffer of cap bytes (kept between steps) */
  size_t cap, used;
  int first, count;    /* its gradients: C.grads[first .. first + count - 1] */
  pd_dtype dtype;
  MPI_Request req;     /* MPI_REQUEST_NULL until started (and again once complete) */
  bool started;
  bool dev;            /* buf is device memory, summed through NCCL (no MPI request) */
} bucket;

typedef struct pending {
  int bucket;          /* its bucket; -1: not sent (skip) */
  size_t off;          /* byte offset in it, where it is packed */
  int64_t n;
  pd_dtype dtype;
  void *held;          /* the caller's buffer while held (not yet packed, or summed in it) */
  bool in_place;       /* summed in `held` itself (a bucket by itself) */
  bool summed;         /* its sum is already in the caller's output (pd_comm_grad_finish) */
  void (*release)(void *keep);   /* called on keep once `held` is no longer needed */
  void *keep;
} pending;

static struct {
  bool up;             /* MPI_Init_thread done by us */
  int rank, size, local_rank, local_size;
  size_t bucket_bytes;
  bool skip;           /* PDLANG_MPI_SKIP_ALLREDUCE: gradients are not summed (benchmarks) */
  /* The progress thread (MPI_THREAD_MULTIPLE): `mu` guards the buckets, nb and `inflight`
   * (buckets started and not yet known complete), which it tests while non-zero; it sleeps on
   * `cv` otherwise. Without it (PDLANG_MPI_PROGRESS=test, or MPI without the thread level), the
   * buckets are tested at each pd_comm_grad_start only. */
  bool threaded, thread_up, stop;
  int inflight;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bucket *buckets;     /* nb in use this step, cb allocated (buffers kept between steps) */
  int nb, cb;
  pending *grads;
  int ng, cg;
} C = {.size = 1, .local_size = 1, .mu = PTHREAD_MUTEX_INITIALIZER,
       .cv = PTHREAD_COND_INITIALIZER};

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

/* The largest PDLANG_MPI_BUCKET_KB: 4 GiB. */
#define BUCKET_KB_MAX (4LL << 20)

/* PDLANG_MPI_BUCKET_KB in bytes: the default when unset or empty, 0 when malformed. */
static size_t bucket_env(void) {
  const char *s = getenv("PDLANG_MPI_BUCKET_KB");
  if (!s || !*s) return (size_t)PD_COMM_BUCKET_KB * 1024;
  char *end = NULL;
  errno = 0;
  long long kb = strtoll(s, &end, 10);
  return kb > 0 && kb <= BUCKET_KB_MAX && !*end && !errno ? (size_t)kb * 1024 : 0;
}

/* Every rank must pack the same buckets and make the same sums (a rank whose differ would wait
 * in a collective the others never start, or sum other counts): their bucket sizes and
 * PDLANG_MPI_SKIP_ALLREDUCE are compared at start-up. */
static pd_status same_settings(pd_error *err) {
  uint64_t mine[2] = {pd_comm_bucket_bytes(), C.skip};
  uint64_t *all = pd_malloc(sizeof *all * 2 * (size_t)C.size);
  if (!all) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  int rc = MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
  pd_status st = rc == MPI_SUCCESS ? PD_OK : mpi_fail(err, rc, "MPI_Allgather");
  for (int i = 1; i < C.size && !st; i++) {
    if (all[2 * i] != all[0])
      st = pd_error_set(err, PD_EINVAL, nowhere, "rank %d packs gradients into buckets of %" PRIu64
                        " KiB and rank 0 into buckets of %" PRIu64 " KiB (PDLANG_MPI_BUCKET_KB): "
                        "every rank must pack the same buckets; give each the same value "
                        "(mpirun -x PDLANG_MPI_BUCKET_KB)", i, all[2 * i] / 1024, all[0] / 1024);
    else if (all[2 * i + 1] != all[1])
      st = pd_error_set(err, PD_EINVAL, nowhere, "PDLANG_MPI_SKIP_ALLREDUCE is set on rank %d "
                        "and not on rank %d: every rank must make the same sums; give each the "
                        "same value (mpirun -x PDLANG_MPI_SKIP_ALLREDUCE)", all[1] ? 0 : i,
                        all[1] ? i : 0);
  }
  pd_free(all);
  return st;
}

pd_status pd_comm_init(int *argc, char ***argv, pd_error *err) {
  if (C.up || !launched_by_mpirun()) return PD_OK;
  /* A rank that waits for the others yields its core rather than spinning in MPI_Wait: ranks
   * share cores with their kernel threads and, on a small machine, with each other (spinning
   * made an epoch of 2 ranks on 2 busy cores 25 times slower). The user's setting wins. */
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  /* A large message through shared memory that is copied in and out (no single-copy
   * mechanism: containers, the tests) moves in fragments of 32 KiB, of which Open MPI keeps 3
   * (send) and 4 (receive) in flight by default: a non-blocking sum then advances a few
   * fragments per MPI_Test, and LeNet's 1.6 MB gradient, started early in the backward pass,
   * was still in flight at its end (4.1-4.7 ms of waiting a step). With 64 in flight the
   * progress thread's tests move it whole: 0.1-0.3 ms (bench/README). */
  setenv("OMPI_MCA_pml_ob1_send_pipeline_depth", PD_COMM_PIPELINE_DEPTH, 0);
  setenv("OMPI_MCA_pml_ob1_recv_pipeline_depth", PD_COMM_PIPELINE_DEPTH, 0);
  const char *prog = getenv("PDLANG_MPI_PROGRESS");
  bool want_thread = true;
  if (prog && *prog) {
    if (strcmp(prog, "test") == 0) want_thread = false;
    else if (strcmp(prog, "thread") != 0)
      return pd_error_set(err, PD_EINVAL, nowhere, "PDLANG_MPI_PROGRESS is '%s'; expected "
                          "'thread' (the default: a thread moves the gradient sums forward) or "
                          "'test' (only the ops' own tests do)", prog);
  }
  if (!bucket_env())
    return pd_error_set(err, PD_EINVAL, nowhere, "PDLANG_MPI_BUCKET_KB is '%s'; expected the "
                        "size of the gradient buckets in KiB, a whole number from 1 to %lld "
                        "(default %d)", getenv("PDLANG_MPI_BUCKET_KB"), BUCKET_KB_MAX,
                        PD_COMM_BUCKET_KB);
  int provided = 0;
  int rc = MPI_Init_thread(argc, argv, want_thread ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED,
                           &provided);
  if (rc != MPI_SUCCESS) return pd_error_set(err, PD_ERUNTIME, nowhere, "MPI_Init_thread failed");
  C.up = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &C.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &C.size);
  if (provided < MPI_THREAD_FUNNELED)
    return pd_error_set(err, PD_ERUNTIME, nowhere,
                        "MPI gives thread level %d, below MPI_THREAD_FUNNELED (%d) that pdlang's "
                        "kernel threads need", provided, MPI_THREAD_FUNNELED);
  /* An MPI without MPI_THREAD_MULTIPLE still trains: the ops' own tests move the sums. */
  C.threaded = want_thread && provided >= MPI_THREAD_MULTIPLE;
  /* A benchmark switch, not a mode of training: every rank then steps on its own gradients
   * (bench/bench_overlap.sh measures what the sums add to a step against it). */
  const char *skip = getenv("PDLANG_MPI_SKIP_ALLREDUCE");
  C.skip = skip && *skip && strcmp(skip, "0") != 0;
  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, C.rank, MPI_INFO_NULL, &local) ==
      MPI_SUCCESS) {
    MPI_Comm_rank(local, &C.local_rank);
    MPI_Comm_size(local, &C.local_size);
    MPI_Comm_free(&local);
  }
  return C.size > 1 ? same_settings(err) : PD_OK;
}

/* Give a gradient's buffer back to its owner (pd_comm_grad_start). */
static void unhold(pending *g) {
  if (g->release) g->release(g->keep);
  g->release = NULL;
  g->held = NULL;
}

static void release_grads(void) {
  for (int k = 0; k < C.ng; k++) unhold(&C.grads[k]);
  C.ng = 0;
}

static void release_buckets(void) {
  for (int i = 0; i < C.cb; i++) {
    if (C.buckets[i].req != MPI_REQUEST_NULL) MPI_Request_free(&C.buckets[i].req);
    if (C.buckets[i].dev) pd_k_dev_free(C.buckets[i].mine);
    else pd_free(C.buckets[i].mine);
  }
  release_grads();
  pd_free(C.buckets);
  pd_free(C.grads);
  C.buckets = NULL;
  C.grads = NULL;
  C.nb = C.cb = C.ng = C.cg = 0;
}

static void stop_thread(void) {
  if (!C.thread_up) return;
  pthread_mutex_lock(&C.mu);
  C.stop = true;
  pthread_cond_signal(&C.cv);
  pthread_mutex_unlock(&C.mu);
  pthread_join(C.thread, NULL);
  C.thread_up = false;
  C.stop = false;
}

void pd_comm_finalize(void) {
  stop_thread();
  pd_k_nccl_close();
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
    size_t b = bucket_env();
    C.bucket_bytes = b ? b : (size_t)PD_COMM_BUCKET_KB * 1024;
  }
  return C.bucket_bytes;
}

static MPI_Datatype mpi_type(pd_dtype t) { return t == PD_FP64 ? MPI_DOUBLE : MPI_FLOAT; }

/* Copy the bucket's gradients still held into its buffer, and give them back. */
static void pack(bucket *b) {
  for (int k = b->first; k < b->first + b->count; k++) {
    pending *g = &C.grads[k];
    if (!g->held || g->in_place) continue;
    memcpy(b->buf + g->off, g->held, (size_t)g->n * pd_dtype_size(g->dtype));
    unhold(g);
  }
}

static pd_status start_bucket(bucket *b, pd_error *err) {
  size_t esz = pd_dtype_size(b->dtype);
  size_t n = b->used / esz;
  if (!b->dev) pack(b);
  if (b->dev) {
    pd_status st = pd_k_nccl_allreduce_start(b->buf, n, b->dtype, err);
    if (st) return st;
    b->started = true;
    return PD_OK;
  }
  if (n > INT32_MAX)
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere, "a gradient bucket of %zu elements", n);
  int rc = MPI_Iallreduce(MPI_IN_PLACE, b->buf, (int)n, mpi_type(b->dtype), MPI_SUM,
                          MPI_COMM_WORLD, &b->req);
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Iallreduce");
  b->started = true;
  C.inflight++;
  return PD_OK;
}

/* Test the buckets in flight once, C.mu held (Open MPI has no progress thread of its own by
 * default). Completed requests become MPI_REQUEST_NULL. */
static int test_inflight(void) {
  for (int i = 0; i < C.nb && C.inflight > 0; i++) {
    bucket *b = &C.buckets[i];
    if (!b->started || b->req == MPI_REQUEST_NULL) continue;
    int done = 0;
    int rc = MPI_Test(&b->req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    if (done) C.inflight--;
  }
  return MPI_SUCCESS;
}

/* The progress thread: while sums are in flight, a test every PROGRESS_NS; else it sleeps.
 * An MPI error here is left for pd_comm_grad_finish's wait to report. */
static void *progress_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&C.mu);
  while (!C.stop) {
    if (C.inflight == 0) {
      pthread_cond_wait(&C.cv, &C.mu);
      continue;
    }
    if (test_inflight() != MPI_SUCCESS) C.inflight = 0;   /* stop testing a failed request */
    pthread_mutex_unlock(&C.mu);
    nanosleep(&(struct timespec){0, PROGRESS_NS}, NULL);
    pthread_mutex_lock(&C.mu);
  }
  pthread_mutex_unlock(&C.mu);
  return NULL;
}

/* An empty bucket's buffer: at least `want` bytes, in device memory when dev (its contents are
 * dropped). */
static pd_status reserve(bucket *b, size_t want, bool dev, pd_error *err) {
  b->buf = b->mine;
  if (b->cap >= want && b->dev == dev) return PD_OK;
  if (b->dev) pd_k_dev_free(b->mine);
  else pd_free(b->mine);
  b->buf = b->mine = dev ? pd_k_dev_alloc(want) : pd_malloc(want);
  b->dev = dev;
  b->cap = b->buf ? want : 0;
  if (b->buf) return PD_OK;
  if (dev) return pd_error_set(err, PD_ENOMEM, nowhere, "rank %d of %d: a gradient bucket of %zu "
                               "bytes on the GPU: %s", C.rank, C.size, want, pd_k_cuda_error());
  return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
}

/* A new bucket after the open one (which is then started), its buffer not yet chosen. -1 on
 * out of memory or an MPI / NCCL error. */
static int new_bucket(pd_dtype dtype, pd_error *err) {
  if (C.nb > 0 && !C.buckets[C.nb - 1].started && start_bucket(&C.buckets[C.nb - 1], err))
    return -1;
  if (C.nb == C.cb) {
    int nc = C.cb ? 2 * C.cb : 4;
    bucket *nbk = pd_realloc(C.buckets, sizeof *nbk * (size_t)nc);
    if (!nbk) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory"), -1;
    for (int i = C.cb; i < nc; i++) nbk[i] = (bucket){.req = MPI_REQUEST_NULL};
    C.buckets = nbk;
    C.cb = nc;
  }
  bucket *b = &C.buckets[C.nb];
  b->used = 0;
  b->first = C.ng;
  b->count = 0;
  b->dtype = dtype;
  b->started = false;
  b->req = MPI_REQUEST_NULL;
  return C.nb++;
}

/* The bucket that takes `bytes` more of dtype, in device memory when dev: the open one, or a
 * new one (the open one is then started). -1 on out of memory or an MPI / NCCL error. */
static int open_bucket(size_t bytes, pd_dtype dtype, bool dev, pd_error *err) {
  if (C.nb > 0) {
    bucket *b = &C.buckets[C.nb - 1];
    bool same = !b->started && b->dtype == dtype && b->dev == dev;
    if (same && b->used + bytes <= b->cap) return C.nb - 1;
    if (same && b->used == 0) /* an empty bucket grows */
      return reserve(b, bytes, dev, err) ? -1 : C.nb - 1;
  }
  int bi = new_bucket(dtype, err);
  size_t want = bytes > pd_comm_bucket_bytes() ? bytes : pd_comm_bucket_bytes();
  return bi < 0 || reserve(&C.buckets[bi], want, dev, err) ? -1 : bi;
}

/* After a bucket was started: wake the progress thread (started at the first sum), or, without
 * one, test the buckets in flight here. C.mu held. */
static pd_status progress(pd_error *err) {
  if (C.inflight == 0) return PD_OK;
  if (C.threaded) {
    if (!C.thread_up) {
      int rc = pthread_create(&C.thread, NULL, progress_main, NULL);
      if (rc != 0) return pd_error_set(err, PD_ERUNTIME, nowhere, "rank %d of %d: cannot start "
                                       "the MPI progress thread: %s", C.rank, C.size,
                                       strerror(rc));
      C.thread_up = true;
    }
    pthread_cond_signal(&C.cv);
    return PD_OK;
  }
  int rc = test_inflight();
  return rc == MPI_SUCCESS ? PD_OK : mpi_fail(err, rc, "MPI_Test");
}

void pd_comm_progress(void) {
  /* Without the thread, C.inflight is the executor thread's alone (no lock needed). */
  if (C.threaded || C.inflight == 0) return;
  if (test_inflight() != MPI_SUCCESS) C.inflight = 0;   /* pd_comm_grad_finish reports it */
}

/* GPU ranks: the NCCL communicator, made at the first GPU collective (every rank gets there in
 * the same order): rank 0 draws the id and broadcasts it with a flag saying whether it could,
 * so that no rank waits in ncclCommInitRank for a rank 0 that failed. */
static pd_status nccl_up(pd_error *err) {
  if (pd_k_nccl_is_open()) return PD_OK;
  pd_status st = pd_comm_gpu_check(err);
  if (st) return st;
  unsigned char msg[1 + PD_K_NCCL_ID_BYTES] = {0};
  if (C.rank == 0) msg[0] = pd_k_nccl_unique_id(msg + 1, err) == PD_OK;
  int rc = MPI_Bcast(msg, (int)sizeof msg, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_fail(err, rc, "MPI_Bcast (NCCL's unique id)");
  if (!msg[0])
    return C.rank == 0 ? err && err->status ? err->status : PD_ERUNTIME
                       : pd_error_set(err, PD_ERUNTIME, nowhere, "rank %d of %d: rank 0 could "
                                      "not make NCCL's unique id", C.rank, C.size);
  return pd_k_nccl_open(msg + 1, C.rank, C.size, err);
}

pd_status pd_comm_gpu_check(pd_error *err) {
  if (C.size == 1 || pd_k_nccl_built()) return PD_OK;
  return pd_error_set(err, PD_EUNSUPPORTED, nowhere, "%d ranks with --device gpu sum their "
                      "gradients through NCCL, and this pdlang was built without it (configure "
                      "--with-cuda with MPI and NCCL); train on CPU ranks (--device cpu)",
                      C.size);
}

pd_status pd_comm_bcast_dev(void *dev, size_t n, int root, pd_error *err) {
  if (C.size == 1) return PD_OK;
  pd_status st = nccl_up(err);
  return st ? st : pd_k_nccl_bcast(dev, n, root, err);
}

/* A free entry in C.grads (C.grads[C.ng]). */
static pd_status grow_grads(pd_error *err) {
  if (C.ng < C.cg) return PD_OK;
  int nc = C.cg ? 2 * C.cg : 16;
  pending *ng = pd_realloc(C.grads, sizeof *ng * (size_t)nc);
  if (!ng) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  C.grads = ng;
  C.cg = nc;
  return PD_OK;
}

static pd_status want_float(pd_dtype dtype, pd_error *err) {
  if (dtype == PD_FP32 || dtype == PD_FP64) return PD_OK;
  return pd_error_set(err, PD_ETYPE, nowhere, "gradients to sum must be fp32 or fp64, not %s",
                      pd_dtype_name(dtype));
}

bool pd_comm_grad_in_place_fits(int64_t n, pd_dtype dtype) {
  return n > 0 && (size_t)n * pd_dtype_size(dtype) >= pd_comm_bucket_bytes();
}

/* g (host memory) into the open bucket, held until the bucket is packed; or, owned and filling a
 * bucket by itself, a bucket of its own summed where it is, started at once. */
static pd_status grad_start(const pd_comm_grad *g, pd_error *err) {
  pd_status st;
  if ((st = want_float(g->dtype, err)) || (st = grow_grads(err))) return st;
  pending *p = &C.grads[C.ng];
  *p = (pending){.bucket = -1, .n = g->n, .dtype = g->dtype, .held = g->data,
                 .release = g->release, .keep = g->keep};
  size_t bytes = (size_t)g->n * pd_dtype_size(g->dtype);
  if (C.skip || !bytes) {
    C.ng++;
    unhold(p);
    return PD_OK;
  }
  bool alone = g->own && pd_comm_grad_in_place_fits(g->n, g->dtype);
  int bi = alone ? new_bucket(g->dtype, err) : open_bucket(bytes, g->dtype, false, err);
  if (bi < 0) return err && err->status ? err->status : PD_ENOMEM;
  bucket *b = &C.buckets[bi];
  if (alone) {
    if (b->dev) {   /* a device buffer left by an earlier job on the GPU: not needed here */
      pd_k_dev_free(b->mine);
      b->mine = NULL;
      b->cap = 0;
      b->dev = false;
    }
    b->buf = g->data;
    p->in_place = true;
  }
  p->bucket = bi;
  p->off = b->used;
  b->used += bytes;
  b->count++;
  C.ng++;
  st = b->used >= pd_comm_bucket_bytes() ? start_bucket(b, err) : PD_OK;
  return st ? st : progress(err);
}

pd_status pd_comm_grad_start(const pd_comm_grad *g, pd_error *err) {
  pthread_mutex_lock(&C.mu);
  int ng = C.ng;
  pd_status st = grad_start(g, err);
  if (st && C.ng == ng && g->release) g->release(g->keep);   /* not recorded: given back */
  pthread_mutex_unlock(&C.mu);
  return st;
}

/* A gradient in device memory: copied into a device bucket at once (NCCL sums it). */
static pd_status grad_start_dev(const void *data, int64_t n, pd_dtype dtype, pd_error *err) {
  pd_status st;
  if ((st = want_float(dtype, err)) || (st = grow_grads(err))) return st;
  size_t bytes = (size_t)n * pd_dtype_size(dtype);
  if (C.skip) {
    C.grads[C.ng++] = (pending){.bucket = -1, .n = n, .dtype = dtype};
    return PD_OK;
  }
  if ((st = nccl_up(err))) return st;
  int bi = open_bucket(bytes, dtype, true, err);
  if (bi < 0) return err && err->status ? err->status : PD_ENOMEM;
  bucket *b = &C.buckets[bi];
  if (bytes && pd_k_dev_copy(b->buf + b->used, data, bytes))
    return pd_error_set(err, PD_ERUNTIME, nowhere, "rank %d of %d: a gradient into its bucket: "
                        "%s", C.rank, C.size, pd_k_cuda_error());
  C.grads[C.ng++] = (pending){.bucket = bi, .off = b->used, .n = n, .dtype = dtype};
  b->used += bytes;
  b->count++;
  st = b->used >= pd_comm_bucket_bytes() ? start_bucket(b, err) : PD_OK;
  return st ? st : progress(err);
}

pd_status pd_comm_grad_start_dev(const void *dev, int64_t n, pd_dtype dtype, pd_error *err) {
  pthread_mutex_lock(&C.mu);
  pd_status st = grad_start_dev(dev, n, dtype, err);
  pthread_mutex_unlock(&C.mu);
  return st;
}

int pd_comm_grad_pending(void) { return C.ng; }

void pd_comm_grad_info(int k, int64_t *n, pd_dtype *dtype) {
  *n = C.grads[k].n;
  *dtype = C.grads[k].dtype;
}

const void *pd_comm_grad_held(int k) { return C.grads[k].held; }

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wait for a bucket's sum: tests back to back for up to SPIN_NS, then a test every WAIT_NS with
 * sleeps between. A sum on the critical path (the MLP's only bucket, LeNet's last) moves forward
 * at each test, and needs many with Open MPI's copy-in/copy-out shared memory: sleeping from the
 * start made the MLP's step 3.5-3.9 ms instead of 1.1-1.4 (bench/README); spinning without end,
 * as MPI_Wait does (yielding), keeps a core busy for as long as the other rank is late. */
static int wait_bucket(bucket *b) {
  double spin_until = seconds() + SPIN_NS * 1e-9;
  for (;;) {
    int done = 0;
    int rc = MPI_Test(&b->req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    if (seconds() > spin_until) nanosleep(&(struct timespec){0, WAIT_NS}, NULL);
  }
}

/* A blocking sum of n elements of dtype in buf. */
static pd_status allreduce_now(void *buf, size_t n, pd_dtype dtype, pd_error *err) {
  if (n > INT32_MAX)
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere, "a gradient bucket of %zu elements", n);
  int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, mpi_type(dtype), MPI_SUM, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? PD_OK : mpi_fail(err, rc, "MPI_Allreduce");
}

/* The last bucket (host memory, not started): nothing is left to overlap its sum with, so
 * blocking MPI_Allreduce calls make it. A gradient of a quarter bucket or more, or the bucket's
 * only one, is summed in out[k] itself (copied there first when out[k] is not its buffer: no
 * copy in the usual case); the others are packed together, summed by one call, and copied back
 * by the caller. */
static pd_status sum_last(bucket *b, void *const *out, pd_error *err) {
  size_t big = pd_comm_bucket_bytes() / 4, used = 0;
  pd_status st = PD_OK;
  for (int k = b->first; k < b->first + b->count && !st; k++) {
    pending *g = &C.grads[k];
    size_t bytes = (size_t)g->n * pd_dtype_size(g->dtype);
    if (b->count > 1 && bytes < big) {
      memcpy(b->buf + used, g->held, bytes);
      g->off = used;
      used += bytes;
    } else {
      if (out[k] != g->held) memcpy(out[k], g->held, bytes);
      st = allreduce_now(out[k], (size_t)g->n, g->dtype, err);
      g->summed = true;
    }
    unhold(g);
  }
  b->used = used;
  b->started = true;
  if (!st && used) st = allreduce_now(b->buf, used / pd_dtype_size(b->dtype), b->dtype, err);
  return st;
}

pd_status pd_comm_grad_finish(void *const *out, pd_error *err) {
  pthread_mutex_lock(&C.mu);
  pd_status st = PD_OK;
  bool dev = false;
  for (int i = 0; i < C.nb && !st; i++) {
    bucket *b = &C.buckets[i];
    if (!b->started && !b->dev) {   /* the last one; those before it are summed */
      st = sum_last(b, out, err);
      continue;
    }
    if (!b->started) st = start_bucket(b, err);
    if (st) break;
    dev = dev || b->dev;
    if (b->dev) continue;   /* joined below, on the GPU */
    int rc = wait_bucket(b);
    if (rc != MPI_SUCCESS) st = mpi_fail(err, rc, "MPI_Test");
  }
  if (!st && dev) st = pd_k_nccl_join(err);
  for (int k = 0; k < C.ng && !st; k++) {
    const pending *g = &C.grads[k];
    if (!g->n || g->bucket < 0 || g->summed) continue;
    const bucket *b = &C.buckets[g->bucket];
    size_t bytes = (size_t)g->n * pd_dtype_size(g->dtype);
    if (b->buf + g->off == out[k]) continue;   /* summed where it is */
    if (!b->dev) memcpy(out[k], b->buf + g->off, bytes);
    else if (pd_k_dev_copy(out[k], b->buf + g->off, bytes))
      st = pd_error_set(err, PD_ERUNTIME, nowhere, "rank %d of %d: a summed gradient from its "
                        "bucket: %s", C.rank, C.size, pd_k_cuda_error());
  }
  release_grads();
  C.nb = 0;
  C.inflight = 0;
  pthread_mutex_unlock(&C.mu);
  return st;
}
