/* backend.c -- the CPU backend's table and its process-wide set-up (FTZ/DAZ, the thread pool of
 * pool.c, OpenBLAS kept to the calling thread). */
#include "config.h"
#include "kernels/cpu/cpu.h"

#include <cblas.h>

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

void pd_k_init(void) {
  pd_k_threading t = {0};
  t.ftz_daz = pd_k_set_ftz_daz();
  t.threads = pd_kcpu_pool_start();  /* each worker sets its own FTZ/DAZ when it starts */
  /* One pool: OpenBLAS computes on the calling thread, a thread of this pool with FTZ/DAZ set;
   * its own threads, which would fight this pool's for the cores, are never woken. */
  openblas_set_num_threads(1);
  t.blas_threads = openblas_get_num_threads();
  threading = t;
}
