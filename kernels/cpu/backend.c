/* backend.c -- the CPU backend's table, its process-wide set-up (FTZ/DAZ in every computing
 * thread, the OpenMP waiting policy) and the OpenMP range splitter the kernels share. */
#include "config.h"
#include "kernels/cpu/cpu.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#if defined(__SSE2__) || defined(__x86_64__)
#include <xmmintrin.h>
#define PD_HAVE_MXCSR 1
#endif

static const pd_k_backend cpu_backend = {
    .name = "cpu",
    .gemm = pd_kcpu_gemm,
    .gemm_batched = pd_kcpu_gemm_batched,
    .binary = pd_kcpu_binary,
    .binary_grad = pd_kcpu_binary_grad,
    .compare = pd_kcpu_compare,
    .logical = pd_kcpu_logical,
    .logical_not = pd_kcpu_logical_not,
    .unary = pd_kcpu_unary,
    .unary_grad = pd_kcpu_unary_grad,
    .scale = pd_kcpu_scale,
    .fill = pd_kcpu_fill,
    .reduce = pd_kcpu_reduce,
    .reduce_grad = pd_kcpu_reduce_grad,
    .softmax = pd_kcpu_softmax,
    .softmax_grad = pd_kcpu_softmax_grad,
    .log_softmax = pd_kcpu_log_softmax,
    .log_softmax_grad = pd_kcpu_log_softmax_grad,
    .cross_entropy = pd_kcpu_cross_entropy,
    .cross_entropy_grad = pd_kcpu_cross_entropy_grad,
    .softmax_xent = pd_kcpu_softmax_xent,
    .softmax_xent_grad = pd_kcpu_softmax_xent_grad,
    .im2col = pd_kcpu_im2col,
    .col2im = pd_kcpu_col2im,
    .conv2d = pd_kcpu_conv2d,
    .conv2d_bwd_data = pd_kcpu_conv2d_bwd_data,
    .conv2d_bwd_filter = pd_kcpu_conv2d_bwd_filter,
    .pool2d = pd_kcpu_pool2d,
    .pool2d_grad = pd_kcpu_pool2d_grad,
    .argmax = pd_kcpu_argmax,
    .top_k = pd_kcpu_top_k,
    .cast = pd_kcpu_cast,
    .transpose = pd_kcpu_transpose,
    .concat = pd_kcpu_concat,
    .split = pd_kcpu_split,
    .gather_rows = pd_kcpu_gather_rows,
    .scatter_add_rows = pd_kcpu_scatter_add_rows,
    .uniform = pd_kcpu_uniform,
    .gaussian = pd_kcpu_gaussian,
    .adam = pd_kcpu_adam,
};

const pd_k_backend *pd_k_cpu(void) { return &cpu_backend; }

/* ---- Threads ---- */

void pd_kcpu_parallel(int64_t n, int64_t grain, pd_kcpu_range_fn *fn, void *ctx) {
  if (n <= 0) return;
#ifdef _OPENMP
  if (n >= grain && !omp_in_parallel()) {
    /* Every thread gets at least half a grain of work. */
    int64_t most = n / (grain / 2 > 0 ? grain / 2 : 1);
    int nt = omp_get_max_threads();
    if (nt > most) nt = (int)most;
    if (nt > 1) {
      PD_OMP(parallel num_threads(nt))
      {
        int64_t t = omp_get_thread_num(), m = omp_get_num_threads();
        int64_t chunk = n / m, rem = n % m;
        int64_t b = t * chunk + (t < rem ? t : rem);
        int64_t e = b + chunk + (t < rem ? 1 : 0);
        if (b < e) fn(ctx, b, e);
      }
      return;
    }
  }
#else
  PD_UNUSED(grain);
#endif
  fn(ctx, 0, n);
}

static bool one_pool;

bool pd_kcpu_one_pool(void) { return one_pool; }

int pd_kcpu_blas_team(void) {
#ifdef _OPENMP
  if (one_pool && !omp_in_parallel()) return omp_get_max_threads();
#endif
  return 1;
}

void pd_kcpu_team(int nt, pd_kcpu_team_fn *fn, void *ctx) {
#ifdef _OPENMP
  if (nt > 1) {
    PD_OMP(parallel num_threads(nt))
    fn(ctx, omp_get_thread_num(), omp_get_num_threads());
    return;
  }
#endif
  fn(ctx, 0, 1);
}

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

static pd_k_threading threading;

pd_k_threading pd_k_threading_info(void) { return threading; }

#ifdef _OPENMP
/* True when the environment asks OpenMP to wait passively (spin count 0). */
static bool env_passive(void) {
  const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
  if (spin && *spin) return strtoull(spin, NULL, 10) == 0;
  return policy && strcasecmp(policy, "passive") == 0;
}
#endif

void pd_k_init(void) {
  pd_k_threading t = {.omp_threads = 1, .passive_wait = true};
#ifdef _OPENMP
  /* libgomp read the environment when it was loaded; what it sees now is what it got, unless
   * the program changed it since (pd_k_init itself only sets an unset variable). */
  t.passive_wait = env_passive();
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"))
    setenv("OMP_WAIT_POLICY", "passive", 0);  /* for child processes and late runtimes */
  /* Spinning OpenMP workers slow the next GEMM down several times over (bench/bench_kernels:
   * relu on 1M floats then a 256x784x256 sgemm takes 15.7 ms spinning, 2.0 ms passive, on 2
   * cores), far more than two threads gain on memory-bound loops: without passive waiting, the
   * OpenMP kernels run on the calling thread only and the pool is never started. */
  if (!t.passive_wait) omp_set_num_threads(1);
  t.omp_threads = omp_get_max_threads();
  bool all = pd_k_set_ftz_daz();
  /* One region over the whole pool: each worker sets its own MXCSR (a thread's floating-point
   * control state is its own; the pool may have been started before this call). */
  if (t.omp_threads > 1) {
    PD_OMP(parallel num_threads(t.omp_threads) reduction(&& : all))
    all = pd_k_set_ftz_daz() && all;
  }
  t.ftz_daz = all;
  /* One pool: OpenBLAS computes on the calling thread, which is then an OpenMP thread with
   * FTZ/DAZ set (OpenBLAS's own threads were never reached). */
  if (t.omp_threads > 1) {
    openblas_set_num_threads(1);
    one_pool = true;
  }
  t.blas_threads = openblas_get_num_threads();
#else
  t.ftz_daz = pd_k_set_ftz_daz();
  t.blas_threads = openblas_get_num_threads();
#endif
  threading = t;
}

pd_status pd_k_reexec_for_passive_wait(char *const argv[]) {
#ifndef _OPENMP
  PD_UNUSED(argv);
  return PD_OK;  /* no OpenMP pool, nothing spins */
#else
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return PD_OK;
#ifdef __linux__
  if (!argv || !argv[0] || setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return PD_ERUNTIME;
  execv("/proc/self/exe", argv);
  return PD_ERUNTIME;  /* exec failed: go on with the runtime as it is */
#else
  PD_UNUSED(argv);
  return PD_EUNSUPPORTED;
#endif
#endif
}
