/* backend.c -- the CPU backend's table and its process-wide set-up (FTZ/DAZ, the thread pool of
 * pool.c, OpenBLAS kept to the calling thread). */
#include "config.h"
#include "kernels/cpu/cpu.h"

#include <cblas.h>
#include <pthread.h>

#if defined(__SSE2__) || defined(__x86_64__)
#include <xmmintrin.h>
#define PD_HAVE_MXCSR 1
#endif

static const pd_k_backend cpu_backend = {
    .name = "cpu",
#define PD_KCPU_ROW_(name, type, cuda) .name = pd_kcpu_##name,
    PD_K_BACKEND_LIST(PD_KCPU_ROW_)
#undef PD_KCPU_ROW_
};

const pd_k_backend *pd_k_cpu(void) { return &cpu_backend; }

bool pd_k_set_ftz_daz(void) {
#ifdef PD_HAVE_MXCSR
  /* MXCSR bit 15 = flush-to-zero (denormal results become 0), bit 6 = denormals-are-zero
   * (denormal inputs read as 0). */
  _mm_setcsr(_mm_getcsr() | 0x8040u);
  return (_mm_getcsr() & 0x8040u) == 0x8040u;
#else
  return false;
#endif
}

pd_k_fpmode pd_k_fp_enter(void) {
  pd_k_fpmode m = {0, false};
#ifdef PD_HAVE_MXCSR
  m.bits = _mm_getcsr();
  m.saved = true;
  _mm_setcsr(m.bits | 0x8040u);
#endif
  return m;
}

void pd_k_fp_leave(pd_k_fpmode m) {
#ifdef PD_HAVE_MXCSR
  /* Only the two mode bits go back: the exception flags the kernels raised stay raised, as
   * any library call leaves them. */
  if (m.saved) _mm_setcsr((_mm_getcsr() & ~0x8040u) | (m.bits & 0x8040u));
#else
  (void)m;
#endif
}

static pd_k_threading threading;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

pd_k_threading pd_k_threading_info(void) { return threading; }

/* OpenBLAS's pthreads build exports this (it runs it before a fork); others may not. */
extern int blas_thread_shutdown_(void) __attribute__((weak));

static void start_threads(void) {
  threading.threads = pd_kcpu_pool_start();  /* each worker sets its own FTZ/DAZ */
  threading.cpus = pd_kcpu_cpus();
  /* One pool: OpenBLAS computes on the calling thread, a thread of this pool with FTZ/DAZ set;
   * its own threads, which would fight this pool's for the cores, are never woken. They are
   * stopped too: started when the library loads, they spin (sched_yield) for about 0.1 s
   * before they sleep, which took a core from this pool's workers at the start of every run.
   * OpenBLAS starts them again if a caller asks it for more threads. */
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) blas_thread_shutdown_();
  threading.blas_threads = openblas_get_num_threads();
}

void pd_k_init_threads(void) { pthread_once(&threads_once, start_threads); }

void pd_k_init(void) {
  bool ftz = pd_k_set_ftz_daz();
  pd_k_init_threads();
  threading.ftz_daz = ftz;
}
