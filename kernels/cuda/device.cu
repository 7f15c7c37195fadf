/* device.cu -- the CUDA backend's process-wide half: opening the GPU (stream, cuBLAS handle,
 * probe kernel), the caching device allocator, host<->device copies, the error messages, the
 * device error flag, the strided-shape helper, and the pd_k_cuda() table. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

cudaStream_t pd_kcu_stream;
cublasHandle_t pd_kcu_blas;
int pd_kcu_sm_count;
int *pd_kcu_flag;

static bool is_open;
static int open_device = -1;
static char device_name[320];
static int *flag_host;  /* pinned: the flag's read-back */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- Errors ---- */

static thread_local char last_error[512];

const char *pd_k_cuda_error(void) { return last_error; }

pd_status pd_kcu_fail(pd_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return st;
}

pd_status pd_kcu_cuda_fail(const char *what, cudaError_t e) {
  cudaGetLastError();  /* handled here: a later launch check must not see it again */
  /* "cudaMalloc(&p, n)" reads badly in a message: keep the function name. */
  char name[96];
  size_t n = strcspn(what, "(");
  if (n >= sizeof name) n = sizeof name - 1;
  memcpy(name, what, n);
  name[n] = '\0';
  return pd_kcu_fail(e == cudaErrorMemoryAllocation ? PD_ENOMEM : PD_ERUNTIME, "%s: %s (%s)",
                     name, cudaGetErrorName(e), cudaGetErrorString(e));
}

static const char *blas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

pd_status pd_kcu_blas_fail(const char *what, cublasStatus_t s) {
  return pd_kcu_fail(s == CUBLAS_STATUS_ALLOC_FAILED ? PD_ENOMEM : PD_ERUNTIME, "%s: %s", what,
                     blas_status_name(s));
}

/* ---- The error flag ---- */

pd_status pd_kcu_flag_reset(void) {
  PD_KCU_CUDA(cudaMemsetAsync(pd_kcu_flag, 0, sizeof(int), pd_kcu_stream));
  return PD_OK;
}

pd_status pd_kcu_flag_read(int *set) {
  PD_KCU_CUDA(cudaMemcpyAsync(flag_host, pd_kcu_flag, sizeof(int), cudaMemcpyDeviceToHost,
                              pd_kcu_stream));
  PD_KCU_CUDA(cudaStreamSynchronize(pd_kcu_stream));
  *set = *flag_host;
  return PD_OK;
}

/* ---- Opening the device ---- */

/* Writes 0 to the flag: proves that this build has code the device can run. */
__global__ void probe_kernel(int *flag) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *flag = 0;
}

static pd_status open_fail(pd_error *err, pd_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pd_status open_fail(pd_error *err, pd_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  pd_loc loc = {NULL, 0, 0};
  return pd_error_set(err, st, loc, "%s", last_error);
}

/* Undo a partial open (and clear the runtime's last error, which a later launch check would
 * otherwise see). */
static void release_state(void) {
  cudaGetLastError();
  if (pd_kcu_blas) cublasDestroy(pd_kcu_blas);
  if (flag_host) cudaFreeHost(flag_host);
  if (pd_kcu_flag) cudaFree(pd_kcu_flag);
  if (pd_kcu_stream) cudaStreamDestroy(pd_kcu_stream);
  pd_kcu_blas = NULL;
  flag_host = NULL;
  pd_kcu_flag = NULL;
  pd_kcu_stream = NULL;
}

static pd_status open_locked(int device, pd_error *err) {
  last_error[0] = '\0';
  if (is_open) {
    if (device == open_device) return PD_OK;
    return open_fail(err, PD_EINVAL, "GPU %d asked for, but GPU %d is open already (one per "
                     "process)", device, open_device);
  }
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  /* not sticky: clear it */
    return open_fail(err, PD_EUNSUPPORTED, "cannot use CUDA: %s", cudaGetErrorString(e));
  }
  if (count == 0) return open_fail(err, PD_EUNSUPPORTED, "cannot use CUDA: no GPU found");
  if (device < 0 || device >= count)
    return open_fail(err, PD_EUNSUPPORTED, "GPU %d asked for, %d found", device, count);
  cudaDeviceProp prop;
  if ((e = cudaSetDevice(device)) != cudaSuccess ||
      (e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess ||
      (e = cudaStreamCreateWithFlags(&pd_kcu_stream, cudaStreamNonBlocking)) != cudaSuccess ||
      (e = cudaMalloc((void **)&pd_kcu_flag, sizeof(int))) != cudaSuccess ||
      (e = cudaMallocHost((void **)&flag_host, sizeof(int))) != cudaSuccess) {
    release_state();
    return open_fail(err, PD_EUNSUPPORTED, "cannot open GPU %d: %s", device,
                     cudaGetErrorString(e));
  }
  probe_kernel<<<1, 1, 0, pd_kcu_stream>>>(pd_kcu_flag);
  if ((e = cudaGetLastError()) != cudaSuccess ||
      (e = cudaStreamSynchronize(pd_kcu_stream)) != cudaSuccess) {
    release_state();
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion ||
        e == cudaErrorInvalidPtx)
      return open_fail(err, PD_EUNSUPPORTED,
                       "GPU %d (%s, sm_%d%d) cannot run this build's code: %s (reconfigure "
                       "with --with-cuda-arch=sm_%d%d)", device, prop.name, prop.major,
                       prop.minor, cudaGetErrorString(e), prop.major, prop.minor);
    return open_fail(err, PD_EUNSUPPORTED, "cannot run on GPU %d: %s", device,
                     cudaGetErrorString(e));
  }
  cublasStatus_t s = cublasCreate(&pd_kcu_blas);
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetStream(pd_kcu_blas, pd_kcu_stream);
  /* Default math: fp32 GEMMs stay fp32 (no TF32 tensor cores), as on the CPU. */
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetMathMode(pd_kcu_blas, CUBLAS_DEFAULT_MATH);
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetPointerMode(pd_kcu_blas, CUBLAS_POINTER_MODE_HOST);
  if (s != CUBLAS_STATUS_SUCCESS) {
    release_state();
    return open_fail(err, PD_EUNSUPPORTED, "cannot set up cuBLAS on GPU %d: %s", device,
                     blas_status_name(s));
  }
  pd_kcu_sm_count = prop.multiProcessorCount;
  snprintf(device_name, sizeof device_name, "%s (sm_%d%d, %.1f GiB)", prop.name, prop.major,
           prop.minor, (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
  open_device = device;
  is_open = true;
  last_error[0] = '\0';
  return PD_OK;
}

extern "C" bool pd_k_cuda_built(void) { return true; }

extern "C" pd_status pd_k_cuda_open(int device, pd_error *err) {
  pthread_mutex_lock(&open_lock);
  pd_status st = open_locked(device, err);
  pthread_mutex_unlock(&open_lock);
  return st;
}

extern "C" bool pd_k_cuda_is_open(void) { return is_open; }

extern "C" const char *pd_k_cuda_device_name(void) { return is_open ? device_name : ""; }

static pd_status not_open(void) {
  return pd_kcu_fail(PD_EINVAL, "CUDA is not open (pd_k_cuda_open)");
}

/* ---- The caching allocator. Every block ever obtained from cudaMalloc and not yet returned
 * has a slot in `blocks`; a hash table maps its pointer to the slot (for pd_k_dev_free), and
 * the free blocks of each size class are chained through their slots. Blocks go back to CUDA
 * only in trim, which rebuilds the table from the live blocks. ---- */
#define MIN_LOG 9                            /* the smallest class: 512 bytes */
#define NCLASSES (4 * (48 - MIN_LOG) + 1)    /* classes up to 2^48 bytes */

typedef struct blk {
  void *ptr;
  size_t cap;   /* class size */
  int cls;
  int next;     /* next free block of the class, -1 at the end */
  bool live;
} blk;

static struct {
  pthread_mutex_t lock;
  blk *blocks;
  int n, cap;
  int *hash;          /* slot + 1, 0 = empty; open addressing, linear probing */
  size_t hash_cap;    /* power of two, > 2 * n */
  int free_head[NCLASSES];
  size_t cached, live;
  bool init;
} A = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL, 0, {0}, 0, 0, false};

/* The class of a request of n bytes and its size; -1 when too large. */
static int size_class(size_t n, size_t *cap) {
  if (n <= ((size_t)1 << MIN_LOG)) {
    *cap = (size_t)1 << MIN_LOG;
    return 0;
  }
  int lg = 63 - __builtin_clzll((unsigned long long)n);  /* 2^lg <= n < 2^(lg+1) */
  size_t base = (size_t)1 << lg, step = base >> 2;
  size_t sub = (n - base + step - 1) / step;              /* 0..4 */
  if (sub == 4) {
    lg++;
    sub = 0;
    base <<= 1;
  }
  int c = 1 + (lg - MIN_LOG) * 4 + (int)sub;
  if (lg >= 48) return -1;
  *cap = base + sub * (base >> 2);
  return c < NCLASSES ? c : -1;
}

static size_t hash_ptr(const void *p, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)p;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

static void hash_insert(int slot) {
  size_t i = hash_ptr(A.blocks[slot].ptr, A.hash_cap);
  while (A.hash[i]) i = (i + 1) & (A.hash_cap - 1);
  A.hash[i] = slot + 1;
}

static int hash_find(const void *p) {
  if (!A.hash) return -1;
  for (size_t i = hash_ptr(p, A.hash_cap);; i = (i + 1) & (A.hash_cap - 1)) {
    int s = A.hash[i];
    if (!s) return -1;
    if (A.blocks[s - 1].ptr == p) return s - 1;
  }
}

/* Room for one more slot (and its hash entry); false when out of host memory. */
static bool reserve_slot(void) {
  if (A.n == A.cap) {
    int ncap = A.cap ? 2 * A.cap : 64;
    blk *nb = (blk *)pd_realloc(A.blocks, (size_t)ncap * sizeof *nb);
    if (!nb) return false;
    A.blocks = nb;
    A.cap = ncap;
  }
  if (2 * (size_t)(A.n + 1) >= A.hash_cap) {
    size_t ncap = A.hash_cap ? 2 * A.hash_cap : 256;
    int *nh = (int *)pd_calloc(ncap, sizeof *nh);
    if (!nh) return false;
    pd_free(A.hash);
    A.hash = nh;
    A.hash_cap = ncap;
    for (int s = 0; s < A.n; s++) hash_insert(s);
  }
  return true;
}

static void init_locked(void) {
  if (A.init) return;
  for (int c = 0; c < NCLASSES; c++) A.free_head[c] = -1;
  A.init = true;
}

/* Return every cached block to CUDA and rebuild the tables from the live ones. */
static void trim_locked(void) {
  if (!A.cached) return;
  cudaStreamSynchronize(pd_kcu_stream);  /* nothing queued may still use a cached block */
  int m = 0;
  for (int s = 0; s < A.n; s++) {
    if (A.blocks[s].live) A.blocks[m++] = A.blocks[s];
    else cudaFree(A.blocks[s].ptr);
  }
  A.n = m;
  A.cached = 0;
  for (int c = 0; c < NCLASSES; c++) A.free_head[c] = -1;
  if (A.hash) {
    memset(A.hash, 0, A.hash_cap * sizeof *A.hash);
    for (int s = 0; s < A.n; s++) hash_insert(s);
  }
}

extern "C" void *pd_k_dev_alloc(size_t nbytes) {
  last_error[0] = '\0';
  if (!is_open) {
    not_open();
    return NULL;
  }
  size_t cap;
  int c = size_class(nbytes, &cap);
  if (c < 0) {
    pd_kcu_fail(PD_ENOMEM, "cannot allocate %zu bytes on the GPU: too large", nbytes);
    return NULL;
  }
  pthread_mutex_lock(&A.lock);
  init_locked();
  void *p = NULL;
  int s = A.free_head[c];
  if (s >= 0) {  /* reuse a cached block */
    A.free_head[c] = A.blocks[s].next;
    A.blocks[s].live = true;
    A.cached -= cap;
    A.live += cap;
    p = A.blocks[s].ptr;
  } else if (!reserve_slot()) {
    pd_kcu_fail(PD_ENOMEM, "out of host memory for the GPU allocator's tables");
  } else {
    cudaError_t e = cudaMalloc(&p, cap);
    if (e == cudaErrorMemoryAllocation && A.cached) {
      cudaGetLastError();  /* clear it, free the cache, try once more */
      trim_locked();
      e = cudaMalloc(&p, cap);
    }
    if (e != cudaSuccess) {
      if (e == cudaErrorMemoryAllocation) cudaGetLastError();
      pd_kcu_fail(PD_ENOMEM, "cudaMalloc of %zu bytes: %s (%zu bytes in use)", cap,
                  cudaGetErrorString(e), A.live);
      p = NULL;
    } else {
      s = A.n++;
      A.blocks[s].ptr = p;
      A.blocks[s].cap = cap;
      A.blocks[s].cls = c;
      A.blocks[s].next = -1;
      A.blocks[s].live = true;
      hash_insert(s);
      A.live += cap;
    }
  }
  pthread_mutex_unlock(&A.lock);
  return p;
}

extern "C" void pd_k_dev_free(void *p) {
  if (!p) return;
  pthread_mutex_lock(&A.lock);
  int s = hash_find(p);
  if (s >= 0 && A.blocks[s].live) {
    blk *b = &A.blocks[s];
    b->live = false;
    b->next = A.free_head[b->cls];
    A.free_head[b->cls] = s;
    A.live -= b->cap;
    A.cached += b->cap;
  }
  /* Not ours (or freed twice): ignored, as there is no way to report it. */
  pthread_mutex_unlock(&A.lock);
}

extern "C" void pd_k_dev_trim(void) {
  pthread_mutex_lock(&A.lock);
  if (is_open) trim_locked();
  pthread_mutex_unlock(&A.lock);
}

extern "C" size_t pd_k_dev_cached(void) {
  pthread_mutex_lock(&A.lock);
  size_t n = A.cached;
  pthread_mutex_unlock(&A.lock);
  return n;
}

extern "C" size_t pd_k_dev_live(void) {
  pthread_mutex_lock(&A.lock);
  size_t n = A.live;
  pthread_mutex_unlock(&A.lock);
  return n;
}

/* ---- Copies ---- */

extern "C" pd_status pd_k_dev_upload(void *dev, const void *host, size_t nbytes) {
  last_error[0] = '\0';
  if (!is_open) return not_open();
  if (!nbytes) return PD_OK;
  PD_KCU_CUDA(cudaMemcpyAsync(dev, host, nbytes, cudaMemcpyHostToDevice, pd_kcu_stream));
  PD_KCU_CUDA(cudaStreamSynchronize(pd_kcu_stream));
  return PD_OK;
}

extern "C" pd_status pd_k_dev_download(void *host, const void *dev, size_t nbytes) {
  last_error[0] = '\0';
  if (!is_open) return not_open();
  if (!nbytes) return PD_OK;
  PD_KCU_CUDA(cudaMemcpyAsync(host, dev, nbytes, cudaMemcpyDeviceToHost, pd_kcu_stream));
  PD_KCU_CUDA(cudaStreamSynchronize(pd_kcu_stream));
  return PD_OK;
}

extern "C" pd_status pd_k_dev_copy(void *dst, const void *src, size_t nbytes) {
  last_error[0] = '\0';
  if (!is_open) return not_open();
  if (!nbytes || dst == src) return PD_OK;
  PD_KCU_CUDA(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, pd_kcu_stream));
  return PD_OK;
}

extern "C" pd_status pd_k_dev_sync(void) {
  last_error[0] = '\0';
  if (!is_open) return not_open();
  PD_KCU_CUDA(cudaStreamSynchronize(pd_kcu_stream));
  PD_KCU_CUDA(cudaGetLastError());
  return PD_OK;
}

/* ---- Strided shapes ---- */

void pd_kcu_shape_init(pd_kcu_shape *s, int nd, const int64_t *dims, int nops,
                       const int64_t (*strides)[PD_K_MAX_DIMS]) {
  s->nops = nops;
  /* A single element (or none: numel == 0 is never launched) is one dim of size 1. */
  int m = pd_k_merge_dims(nd, dims, nops, strides, s->dims, s->str, &s->numel);
  for (int k = nops; k < PD_KCU_MAX_OPS; k++)
    for (int d = 0; d < m; d++) s->str[k][d] = 0;
  s->nd = m;
}

/* ---- The table ---- */

/* Each entry of the table is its kernel function behind a wrapper that first clears the
 * calling thread's error message, so that pd_k_cuda_error() speaks of the latest call (the
 * VM reads it right after a call that failed). */
template <auto F>
struct entry;
template <typename R, typename... Args, R (*F)(Args...)>
struct entry<F> {
  static R call(Args... args) {
    last_error[0] = '\0';
    return F(args...);
  }
};

/* Designated initializers (C++20), in the order of pd_k_backend, as C++ requires: the order of
 * PD_K_BACKEND_LIST, which makes both. An entry marked NO_CUDA is NULL. */
#define PD_KCU_ROW_CUDA(name) entry<pd_kcu_##name>::call
#define PD_KCU_ROW_NO_CUDA(name) nullptr
#define PD_KCU_ROW_(name, type, cuda) .name = PD_KCU_ROW_##cuda(name),
static const pd_k_backend cuda_backend = {
    .name = "cuda",
    PD_K_BACKEND_LIST(PD_KCU_ROW_)
};
#undef PD_KCU_ROW_
#undef PD_KCU_ROW_CUDA
#undef PD_KCU_ROW_NO_CUDA

extern "C" const pd_k_backend *pd_k_cuda(void) { return is_open ? &cuda_backend : NULL; }
