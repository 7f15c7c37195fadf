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
    .gemm = pd_kcpu_gemm,
    .gemm_batched = pd_kcpu_gemm_batched,
    .gemm_act = pd_kcpu_gemm_act,
    .gemm_bias = pd_kcpu_gemm_bias,
    .gemm_act_chain = pd_kcpu_gemm_act_chain,
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
    .act = pd_kcpu_act,
    .act_grad = pd_kcpu_act_grad,
    .batch_norm = pd_kcpu_batch_norm,
    .batch_norm_grad = pd_kcpu_batch_norm_grad,
    .layer_norm = pd_kcpu_layer_norm,
    .layer_norm_grad = pd_kcpu_layer_norm_grad,
    .strided_copy = pd_kcpu_strided_copy,
    .where = pd_kcpu_where,
    .opt = pd_kcpu_opt,
    .lstm_cell = pd_kcpu_lstm_cell,
    .lstm_cell_grad = pd_kcpu_lstm_cell_grad,
    .gru_cell = pd_kcpu_gru_cell,
    .gru_cell_grad = pd_kcpu_gru_cell_grad,
    .lstm_seq = pd_kcpu_lstm_seq,
    .lstm_seq_grad = pd_kcpu_lstm_seq_grad,
    .gru_seq = pd_kcpu_gru_seq,
    .gru_seq_grad = pd_kcpu_gru_seq_grad,
    .sigmoid_xent = pd_kcpu_sigmoid_xent,
    .sigmoid_xent_grad = pd_kcpu_sigmoid_xent_grad,
    .smooth_l1 = pd_kcpu_smooth_l1,
    .smooth_l1_grad = pd_kcpu_smooth_l1_grad,
    .huber = pd_kcpu_huber,
    .huber_grad = pd_kcpu_huber_grad,
    .kldiv = pd_kcpu_kldiv,
    .kldiv_grad = pd_kcpu_kldiv_grad,
    .dropout = pd_kcpu_dropout,
    .dropout_grad = pd_kcpu_dropout_grad,
    .copy_rows = pd_kcpu_copy_rows,
    .adaptive_pool2d = pd_kcpu_adaptive_pool2d,
    .adaptive_pool2d_grad = pd_kcpu_adaptive_pool2d_grad,
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
