/* cpu.h -- private to the CPU backend (the files of kernels/cpu/): the kernel functions that
 * fill the pd_k_cpu() table, the thread pool, and the strided N-operand iterator the elementwise
 * kernels share. Not installed, not included outside kernels/cpu/.
 *
 * Typed code is written once per file as a template (FILE_t.h) that the .c file includes once per
 * element type after defining T (the C type), TN (a name suffix: f32, f64, i32, i64) and T_FLOAT
 * (1 for floating types); TF(name) then names the type's instance of a function. */
#ifndef PD_KERNELS_CPU_H
#define PD_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "kernels/kernels.h"
#include "kernels/kernels_int.h"

#define PD_KCPU_CAT_(a, b) a##_##b
#define PD_KCPU_CAT(a, b) PD_KCPU_CAT_(a, b)
#define TF(name) PD_KCPU_CAT(name, TN)

/* "Vectorize this loop": OpenMP's simd pragma, where configure found -fopenmp-simd (which
 * enables that pragma only: no OpenMP runtime). Threads are pool.c's. */
#define PD_KCPU_PRAGMA_(x) _Pragma(#x)
#ifdef PD_HAVE_OMP_SIMD
#define PD_SIMD PD_KCPU_PRAGMA_(omp simd)
#define PD_SIMD_WITH(clauses) PD_KCPU_PRAGMA_(omp simd clauses) /* e.g. reduction(+ : s) */
#else
#define PD_SIMD
#define PD_SIMD_WITH(clauses)
#endif

/* Work below these many elements stays on one thread: a parallel job costs a few
 * microseconds, which a memory-bound loop over 32k floats does not repay on two cores. Loops
 * that call exp/log/tanh per element are ~8x costlier per element and split sooner. */
#define PD_KCPU_GRAIN 32768
#define PD_KCPU_GRAIN_TRANSCENDENTAL 4096

/* ---- The thread pool (pool.c; its comment says how it schedules and waits). pd_k_init starts
 * it; before that, and with one thread, everything runs on the calling thread. OpenBLAS then
 * computes on the calling thread only (one pool: kernels that call BLAS split their work across
 * this pool themselves: GEMMs by blocks of rows or columns, convolutions by images). ---- */

/* Start the workers once (PDLANG_THREADS, else OMP_NUM_THREADS, else the CPUs this process may
 * use, minus the caller); returns the number of threads, caller included. Thread-safe. */
int pd_kcpu_pool_start(void);
/* Threads of the pool, the caller included (1 before pd_kcpu_pool_start). */
int pd_kcpu_threads(void);
/* The CPUs this process may run on (its affinity mask; 1 where that cannot be read). */
int pd_kcpu_cpus(void);
/* True on a thread that is running a part of a job (or is a worker): jobs it dispatches run
 * serially on it. */
bool pd_kcpu_in_pool(void);

/* Run fn(ctx, t, nt) once for each part t in [0, nt), on the pool: parts are claimed by the
 * calling thread and by idle workers, in no fixed assignment, and all are done when this
 * returns. A part must depend on t only, not on which thread runs it. Inside a part, or while
 * another thread's job runs, the parts run in order on the calling thread. */
typedef void pd_kcpu_team_fn(void *ctx, int t, int nt);
void pd_kcpu_team(int nt, pd_kcpu_team_fn *fn, void *ctx);

/* Run fn(ctx, begin, end) over [0, n): one contiguous range per thread when n >= grain (each
 * range at least half a grain), else fn(ctx, 0, n). */
typedef void pd_kcpu_range_fn(void *ctx, int64_t begin, int64_t end);
void pd_kcpu_parallel(int64_t n, int64_t grain, pd_kcpu_range_fn *fn, void *ctx);

/* How many parts a BLAS-calling kernel may split into here: the pool's threads, or 1 inside a
 * part. */
int pd_kcpu_blas_team(void);

/* ---- Strided iteration over up to PD_KCPU_MAX_OPS operands of one shape (the out shape of a
 * broadcast). Operand k has element size esize[k] and a stride per dim in elements (0 along a
 * broadcast dim). Dims of size 1 are dropped and adjacent dims merged where every operand
 * allows it, so a same-shape op becomes one flat loop, a bias add [rows, n] + [n] a 2-d loop
 * with y's inner stride 0. The inner loop is a typed function over one run of the innermost
 * dim, given each operand's pointer and inner stride (0 or 1 after merging, for the kernels
 * here). ---- */
#define PD_KCPU_MAX_OPS 5

typedef void pd_kcpu_loop_fn(char *const *ptr, const int64_t *step, int64_t n, const void *arg);

typedef struct pd_kcpu_iter {
  int nd;                                          /* >= 1 after pd_kcpu_iter_init */
  int nops;
  int64_t numel;
  int64_t dims[PD_K_MAX_DIMS];
  int64_t strides[PD_KCPU_MAX_OPS][PD_K_MAX_DIMS];
  size_t esize[PD_KCPU_MAX_OPS];
} pd_kcpu_iter;

/* dims/strides as described above (strides[k][d] for operand k); nd <= PD_K_MAX_DIMS. */
void pd_kcpu_iter_init(pd_kcpu_iter *it, int nd, const int64_t *dims, int nops,
                       const int64_t (*strides)[PD_K_MAX_DIMS], const size_t *esize);
/* Call loop over every element; base[k] is operand k's buffer (NULL: the loop ignores it).
 * Splits across threads when `parallel` and numel >= grain; an operand written through a zero
 * stride (an accumulation) must run with parallel = false. */
void pd_kcpu_iter_run(const pd_kcpu_iter *it, void *const *base, pd_kcpu_loop_fn *loop,
                      const void *arg, bool parallel, int64_t grain);

/* Set up the iterator of a broadcast binary op: operands [out, x, y] with the given element
 * sizes; PD_ESHAPE for shapes that do not broadcast. */
pd_status pd_kcpu_bcast_iter(pd_kcpu_iter *it, int xnd, const int64_t *xdims, int ynd,
                             const int64_t *ydims, int axis, size_t out_size, size_t x_size,
                             size_t y_size);

/* ---- The CPU kernels (pd_k_cpu() table entries; see kernels.h for the contracts). ---- */
pd_k_gemm_fn pd_kcpu_gemm;
pd_k_gemm_batched_fn pd_kcpu_gemm_batched;
pd_k_gemm_act_fn pd_kcpu_gemm_act;
pd_k_gemm_bias_fn pd_kcpu_gemm_bias;
pd_k_gemm_act_chain_fn pd_kcpu_gemm_act_chain;
pd_k_binary_fn pd_kcpu_binary;
pd_k_binary_grad_fn pd_kcpu_binary_grad;
pd_k_compare_fn pd_kcpu_compare;
pd_k_logical_fn pd_kcpu_logical;
pd_k_logical_not_fn pd_kcpu_logical_not;
pd_k_unary_fn pd_kcpu_unary;
pd_k_unary_grad_fn pd_kcpu_unary_grad;
pd_k_scale_fn pd_kcpu_scale;
pd_k_fill_fn pd_kcpu_fill;
pd_k_reduce_fn pd_kcpu_reduce;
pd_k_reduce_grad_fn pd_kcpu_reduce_grad;
pd_k_softmax_fn pd_kcpu_softmax;
pd_k_softmax_grad_fn pd_kcpu_softmax_grad;
pd_k_softmax_fn pd_kcpu_log_softmax;
pd_k_softmax_grad_fn pd_kcpu_log_softmax_grad;
pd_k_cross_entropy_fn pd_kcpu_cross_entropy;
pd_k_cross_entropy_grad_fn pd_kcpu_cross_entropy_grad;
pd_k_softmax_xent_fn pd_kcpu_softmax_xent;
pd_k_softmax_xent_grad_fn pd_kcpu_softmax_xent_grad;
pd_k_im2col_fn pd_kcpu_im2col;
pd_k_col2im_fn pd_kcpu_col2im;
pd_k_conv2d_fn pd_kcpu_conv2d;
pd_k_conv2d_bwd_data_fn pd_kcpu_conv2d_bwd_data;
pd_k_conv2d_bwd_filter_fn pd_kcpu_conv2d_bwd_filter;
pd_k_pool2d_fn pd_kcpu_pool2d;
pd_k_pool2d_grad_fn pd_kcpu_pool2d_grad;
pd_k_argmax_fn pd_kcpu_argmax;
pd_k_top_k_fn pd_kcpu_top_k;
pd_k_cast_fn pd_kcpu_cast;
pd_k_transpose_fn pd_kcpu_transpose;
pd_k_concat_fn pd_kcpu_concat;
pd_k_split_fn pd_kcpu_split;
pd_k_gather_rows_fn pd_kcpu_gather_rows;
pd_k_scatter_add_rows_fn pd_kcpu_scatter_add_rows;
pd_k_uniform_fn pd_kcpu_uniform;
pd_k_gaussian_fn pd_kcpu_gaussian;
pd_k_opt_fn pd_kcpu_opt;
pd_k_act_fn pd_kcpu_act;            /* act.c */
pd_k_act_grad_fn pd_kcpu_act_grad;
pd_k_batch_norm_fn pd_kcpu_batch_norm;
pd_k_batch_norm_grad_fn pd_kcpu_batch_norm_grad;
pd_k_layer_norm_fn pd_kcpu_layer_norm;
pd_k_layer_norm_grad_fn pd_kcpu_layer_norm_grad;
pd_k_strided_copy_fn pd_kcpu_strided_copy;
pd_k_where_fn pd_kcpu_where;
pd_k_lstm_cell_fn pd_kcpu_lstm_cell;            /* rnn_cell.c */
pd_k_lstm_cell_grad_fn pd_kcpu_lstm_cell_grad;
pd_k_gru_cell_fn pd_kcpu_gru_cell;
pd_k_gru_cell_grad_fn pd_kcpu_gru_cell_grad;
pd_k_lstm_seq_fn pd_kcpu_lstm_seq;              /* rnn_seq.c */
pd_k_lstm_seq_grad_fn pd_kcpu_lstm_seq_grad;
pd_k_gru_seq_fn pd_kcpu_gru_seq;
pd_k_gru_seq_grad_fn pd_kcpu_gru_seq_grad;
pd_k_sigmoid_xent_fn pd_kcpu_sigmoid_xent;      /* loss.c */
pd_k_sigmoid_xent_grad_fn pd_kcpu_sigmoid_xent_grad;
pd_k_smooth_l1_fn pd_kcpu_smooth_l1;
pd_k_smooth_l1_grad_fn pd_kcpu_smooth_l1_grad;
pd_k_huber_fn pd_kcpu_huber;
pd_k_huber_grad_fn pd_kcpu_huber_grad;
pd_k_kldiv_fn pd_kcpu_kldiv;
pd_k_kldiv_grad_fn pd_kcpu_kldiv_grad;
pd_k_dropout_fn pd_kcpu_dropout;                /* dropout.c */
pd_k_dropout_grad_fn pd_kcpu_dropout_grad;
pd_k_copy_rows_fn pd_kcpu_copy_rows;             /* copy_rows.c */
pd_k_pool2d_fn pd_kcpu_adaptive_pool2d;          /* adaptive_pool.c */
pd_k_pool2d_grad_fn pd_kcpu_adaptive_pool2d_grad;

#endif /* PD_KERNELS_CPU_H */
