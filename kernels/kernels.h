/* kernels.h -- the one interface to pdlang's numeric kernels: math on raw, contiguous, row-major
 * buffers with explicit sizes. The VM's ops call kernels through a backend table (pd_k_backend);
 * the CPU backend (kernels/cpu: OpenBLAS + plain C + a thread pool) fills every entry, and a CUDA
 * backend fills the ones it implements (a NULL entry means "not supported here": the caller
 * falls back to the CPU or reports PD_EUNSUPPORTED). Backend-independent helpers (shapes of
 * broadcasts, reductions, convolutions; the random generator; host memory) are plain functions.
 *
 * Conventions for every kernel:
 *  - Buffers are dense and row-major; `dt` names the element type of the float/int buffers
 *    (base/dtype.h). Bool buffers hold one byte per element, 0 or 1 (any non-zero byte reads as
 *    true). Index buffers (labels, ids, argmax/top_k indices) are int64_t.
 *  - The caller owns every buffer; a kernel never keeps a pointer after it returns, never
 *    allocates memory the caller must free, never prints, never aborts.
 *  - Outputs are overwritten unless a kernel says it accumulates. Unless a kernel says otherwise,
 *    an output must not overlap an input (elementwise unary/binary kernels allow out == x).
 *  - A kernel that can be given bad arguments (a dtype it does not support, a negative size, an
 *    out-of-range label) returns pd_status: PD_OK, PD_EINVAL, PD_ESHAPE, PD_ETYPE, PD_ENOMEM
 *    (scratch memory) or PD_EUNSUPPORTED. On failure the outputs hold unspecified values.
 *  - Supported dtypes are fp32 and fp64 unless stated; integer and bool support is stated per
 *    kernel. fp64 exists for gradient checks; fp32 is the default everywhere.
 *
 * Threading: one pool, started by pd_k_init (see there); without it every kernel runs on the
 * calling thread. */
#ifndef PD_KERNELS_H
#define PD_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/dtype.h"

/* Largest rank a kernel accepts (PaddlePaddle's limit); deeper shapes give PD_EINVAL. */
#define PD_K_MAX_DIMS 9
/* Alignment of host buffers from pd_k_host_alloc (a cache line; enough for AVX-512 loads). */
#define PD_K_ALIGN 64

/* ---- Operation enums. Each list is an X-macro: X(ENUM, "name"), the name as in Fluid's op
 * type without its prefix (elementwise_add -> "add", reduce_sum -> "sum"). ---- */
#define PD_K_BINOP_LIST(X) \
  X(PD_K_ADD, "add") X(PD_K_SUB, "sub") X(PD_K_MUL, "mul") X(PD_K_DIV, "div") \
  X(PD_K_MAX, "max") X(PD_K_MIN, "min") X(PD_K_POW, "pow")
#define PD_K_CMPOP_LIST(X) \
  X(PD_K_LT, "less_than") X(PD_K_LE, "less_equal") X(PD_K_GT, "greater_than") \
  X(PD_K_GE, "greater_equal") X(PD_K_EQ, "equal") X(PD_K_NE, "not_equal")
#define PD_K_LOGOP_LIST(X) X(PD_K_AND, "and") X(PD_K_OR, "or") X(PD_K_XOR, "xor")
#define PD_K_UNOP_LIST(X) \
  X(PD_K_RELU, "relu") X(PD_K_SIGMOID, "sigmoid") X(PD_K_TANH, "tanh") X(PD_K_EXP, "exp") \
  X(PD_K_LOG, "log") X(PD_K_SQRT, "sqrt") X(PD_K_SQUARE, "square") X(PD_K_ABS, "abs")
#define PD_K_REDOP_LIST(X) \
  X(PD_K_RSUM, "sum") X(PD_K_RMEAN, "mean") X(PD_K_RMAX, "max") X(PD_K_RMIN, "min")
/* The activations with parameters (pd_k_act_fn): X(ENUM, "name", number of parameters), Fluid's
 * op names, but for gelu_tanh (gelu with approximate = true). */
#define PD_K_ACT_LIST(X) \
  X(PD_K_GELU, "gelu", 0) X(PD_K_GELU_TANH, "gelu_tanh", 0) X(PD_K_LEAKY_RELU, "leaky_relu", 1) \
  X(PD_K_ELU, "elu", 1) X(PD_K_SWISH, "swish", 1) X(PD_K_SOFTPLUS, "softplus", 2) \
  X(PD_K_RELU6, "relu6", 1) X(PD_K_HARD_SWISH, "hard_swish", 3) \
  X(PD_K_LOG_SIGMOID, "log_sigmoid", 0) X(PD_K_SILU, "silu", 0) \
  X(PD_K_HARD_SIGMOID, "hard_sigmoid", 2)

#define PD_K_ENUM_(e, name) e,
typedef enum pd_k_binop { PD_K_BINOP_LIST(PD_K_ENUM_) PD_K_BINOP_COUNT_ } pd_k_binop;
typedef enum pd_k_cmpop { PD_K_CMPOP_LIST(PD_K_ENUM_) PD_K_CMPOP_COUNT_ } pd_k_cmpop;
typedef enum pd_k_logop { PD_K_LOGOP_LIST(PD_K_ENUM_) PD_K_LOGOP_COUNT_ } pd_k_logop;
typedef enum pd_k_unop { PD_K_UNOP_LIST(PD_K_ENUM_) PD_K_UNOP_COUNT_ } pd_k_unop;
typedef enum pd_k_redop { PD_K_REDOP_LIST(PD_K_ENUM_) PD_K_REDOP_COUNT_ } pd_k_redop;
#undef PD_K_ENUM_
#define PD_K_ACT_ENUM_(e, name, nparams) e,
typedef enum pd_k_act { PD_K_ACT_LIST(PD_K_ACT_ENUM_) PD_K_ACT_COUNT_ } pd_k_act;
#undef PD_K_ACT_ENUM_

/* Names of the enum values ("add", "less_than", ...); "?" when out of range. The *_from_name
 * functions return the enum value, or -1 for an unknown name. pd_k_act_nparams: how many
 * parameters an activation takes (PD_K_ACT_LIST; 0 out of range). */
const char *pd_k_binop_name(pd_k_binop op);
const char *pd_k_cmpop_name(pd_k_cmpop op);
const char *pd_k_logop_name(pd_k_logop op);
const char *pd_k_unop_name(pd_k_unop op);
const char *pd_k_redop_name(pd_k_redop op);
const char *pd_k_act_name(pd_k_act op);
int pd_k_binop_from_name(const char *name);
int pd_k_cmpop_from_name(const char *name);
int pd_k_logop_from_name(const char *name);
int pd_k_unop_from_name(const char *name);
int pd_k_redop_from_name(const char *name);
int pd_k_act_from_name(const char *name);
int pd_k_act_nparams(pd_k_act op);

/* ---- Parameters of convolution and pooling (NCHW). Fill the inputs, then call the setup
 * function, which validates them and computes the output size. ---- */
typedef struct pd_k_conv2d {
  int64_t n, c, h, w;          /* input [n, c, h, w] */
  int64_t oc, kh, kw;          /* filter [oc, c / groups, kh, kw] */
  int64_t groups;              /* c and oc are multiples of groups */
  int64_t stride_h, stride_w;  /* >= 1 */
  int64_t pad_top, pad_bottom, pad_left, pad_right;  /* >= 0 (zero padding) */
  int64_t dil_h, dil_w;        /* dilation, >= 1 */
  int64_t oh, ow;              /* output [n, oc, oh, ow]: computed by pd_k_conv2d_setup */
  pd_dtype lp;                 /* mixed precision: PD_BF16 or PD_FP16 multiplies fp32 tensors'
                                  products in that precision (the CPU's GEMMs through gemm_lp,
                                  where an image's product has at least 16 filters per group,
                                  terms and output pixels; its depthwise convolution, smaller
                                  products and the CUDA backend stay fp32); anything else (0):
                                  fp32 */
} pd_k_conv2d;

typedef enum pd_k_pool { PD_K_POOL_MAX, PD_K_POOL_AVG } pd_k_pool;

typedef struct pd_k_pool2d {
  pd_k_pool type;
  int64_t n, c, h, w;          /* input [n, c, h, w]; the output is [n, c, oh, ow] */
  int64_t kh, kw;              /* window; global pooling is kh = h, kw = w */
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_bottom, pad_left, pad_right;
  bool ceil_mode;              /* round the output size up (Fluid's ceil_mode) */
  bool exclusive;              /* avg: divide by the number of in-bounds elements (Fluid's
                                  default) instead of kh * kw */
  int64_t oh, ow;              /* computed by pd_k_pool2d_setup */
} pd_k_pool2d;

/* Validate p (sizes positive, groups dividing c and oc, the window fitting the padded input;
 * pooling: padding on each side narrower than the window, so that no window lies entirely in
 * the padding) and compute p->oh, p->ow. PD_EINVAL or PD_ESHAPE otherwise (p->oh, p->ow then
 * unspecified). */
pd_status pd_k_conv2d_setup(pd_k_conv2d *p);
pd_status pd_k_pool2d_setup(pd_k_pool2d *p);

/* ---- Random numbers: Philox4x32-10 (Salmon et al., SC'11), a counter-based generator. Output
 * element i of a call is a pure function of (seed, offset + i), so the numbers do not depend on
 * the platform, the backend or the number of threads. Each call advances rng->offset past the
 * counters it used, so successive calls continue the stream. ---- */
typedef struct pd_k_rng {
  uint64_t seed;    /* the Philox key (two 32-bit words: low, high) */
  uint64_t offset;  /* the next unused 128-bit counter */
} pd_k_rng;

void pd_k_rng_init(pd_k_rng *rng, uint64_t seed);  /* offset = 0 */
/* One Philox4x32-10 block: 4 random words for counter ctr and key. Exposed for known-answer
 * tests and for backends that generate on a device. */
void pd_k_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* ---- Shapes (backend independent). Output dims arrays hold PD_K_MAX_DIMS entries. ---- */

/* The shape of a broadcast binary op (elementwise_*, compare, logical ops).
 * axis == -1: NumPy rules: shapes are right-aligned; each pair of dims is equal or one is 1.
 * axis >= 0: Fluid rules: the lower-rank operand's dims (trailing 1s dropped) are aligned with
 *   the higher-rank one's starting at dim `axis` (e.g. X [2, 3, 4, 5], Y [3, 4], axis 1); the
 *   aligned dims must then be equal or 1. X may be the lower-rank operand, as in Paddle 2.
 * A 0-d operand (nd == 0) is a scalar. PD_ESHAPE with no output for incompatible shapes. */
pd_status pd_k_broadcast_shape(int xnd, const int64_t *xdims, int ynd, const int64_t *ydims,
                               int axis, int *out_nd, int64_t *out_dims);
/* The same, also giving x's and y's dims padded with 1s to out's rank, lined up with out's dims
 * as a kernel iterates over them (xpad, ypad: PD_K_MAX_DIMS entries each, or NULL). */
pd_status pd_k_broadcast_dims(int xnd, const int64_t *xdims, int ynd, const int64_t *ydims,
                              int axis, int *out_nd, int64_t *out_dims, int64_t *xpad,
                              int64_t *ypad);

/* The shape of a reduction over `axes` (negative axes count from the end; naxes == 0 reduces
 * every axis). keep_dim keeps reduced axes as 1s. PD_EINVAL for an axis out of range or
 * repeated. A full reduction without keep_dim has rank 0 (one element). */
pd_status pd_k_reduce_shape(int nd, const int64_t *dims, int naxes, const int *axes,
                            bool keep_dim, int *out_nd, int64_t *out_dims);

/* Number of elements of a shape (1 for rank 0); -1 if a dim is negative or it overflows. */
int64_t pd_k_numel(int nd, const int64_t *dims);

/* ---- Host memory: PD_K_ALIGN-aligned blocks through the pd_malloc hook (so allocation-failure
 * tests reach them). NULL on failure; pd_k_host_free(NULL) is a no-op. Thread-safe.
 * Freed blocks of 4 KiB and more are kept in a bounded cache (256 MiB, or the most ever live at
 * once where that is more) and reused for later requests of about their size, so that a
 * training loop or an inference server that frees and reallocates its temporaries every step
 * does not map fresh pages each time; smaller blocks are freed at once.
 * pd_k_host_trim frees every cached block; pd_k_host_cached says how many bytes are cached. */
void *pd_k_host_alloc(size_t nbytes);
void pd_k_host_free(void *p);
void pd_k_host_trim(void);
size_t pd_k_host_cached(void);

/* Live-byte accounting of the blocks above, process-wide and thread-safe: `live` is the sum of
 * the sizes asked for by the pd_k_host_alloc calls whose blocks are not yet freed (neither the
 * cache, the rounding to a size class nor the alignment padding counts), `peak` the highest
 * `live` since the last pd_k_host_stats_reset (or the start), `allocs` the pd_k_host_alloc calls
 * since then, `cached` what pd_k_host_cached says. pd_k_host_stats_reset sets peak to live and
 * allocs to 0. For benchmarks and tests that measure what a program keeps alive. */
typedef struct pd_k_host_usage {
  size_t live, peak, cached;
  uint64_t allocs;
} pd_k_host_usage;
void pd_k_host_stats(pd_k_host_usage *out);
void pd_k_host_stats_reset(void);

/* ---- Kernel signatures. A backend table holds one pointer of each type. ---- */

/* C = alpha * op(A) op(B) + beta * C, row-major. op(A) is m x k (A is k x m when trans_a),
 * op(B) is k x n, C is m x n; lda, ldb, ldc are row strides in elements. beta == 0 ignores the
 * old contents of C (NaNs included); alpha == 0 reads neither A nor B. fp32/fp64. Sizes above
 * INT_MAX give PD_EINVAL. */
typedef pd_status pd_k_gemm_fn(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                               int64_t k, double alpha, const void *a, int64_t lda,
                               const void *b, int64_t ldb, double beta, void *c, int64_t ldc);
/* `batch` GEMMs; matrix i of A starts stride_a elements after matrix i-1 (stride 0 broadcasts
 * one matrix to every product), the same for B and C. */
typedef pd_status pd_k_gemm_batched_fn(pd_dtype dt, bool trans_a, bool trans_b, int64_t batch,
                                       int64_t m, int64_t n, int64_t k, double alpha,
                                       const void *a, int64_t lda, int64_t stride_a,
                                       const void *b, int64_t ldb, int64_t stride_b, double beta,
                                       void *c, int64_t ldc, int64_t stride_c);

/* A GEMM whose result goes through an activation, act = PD_K_TANH, PD_K_SIGMOID or PD_K_RELU
 * (else PD_EINVAL), with alpha 1: P = op(A) op(B) + beta * C, then
 *   grad false:  C = act(P)                 (an RNN step: h_k = act(h_k-1 W + u_k))
 *   grad true:   C = P * act'(H)            (its backward step, act' read from the outputs
 *                                            H = act(...), m x n with row stride ldh)
 * The same values as gemm then unary (or unary_grad with dout = dx = C) on C: P is rounded to
 * dt first. Done in one pass where the product is split across threads, each applying act to
 * the block of C it wrote. H is ignored without grad (may be NULL); with grad it must not
 * overlap C. Otherwise as pd_k_gemm_fn. */
typedef pd_status pd_k_gemm_act_fn(pd_k_unop act, bool grad, pd_dtype dt, bool trans_a,
                                   bool trans_b, int64_t m, int64_t n, int64_t k, const void *a,
                                   int64_t lda, const void *b, int64_t ldb, double beta, void *c,
                                   int64_t ldc, const void *h, int64_t ldh);

/* A recurrence of gemm_act steps with beta 1 and B [n, n] (an Elman RNN over m sequences of
 * one length, or its backward pass): for s = 0 .. steps - 1
 *   C_s = act(A_s op(B) + C_s), or with grad C_s = (A_s op(B) + C_s) * act'(H_s),
 * where A_0 = first (m rows, row stride ldfirst) and A_s = C_(s-1). C_s is the m rows of n at
 * c + s * step elements, row stride ldc; H_s the same at h + s * step, row stride ldh (step may
 * be negative: a reversed RNN, or the backward pass going back in time). Row i of C_s depends on
 * row i of C_(s-1) only, so the CPU splits the rows, not the steps, across threads: each runs
 * every step on its own rows, with no synchronisation between steps (the steps of an RNN at
 * hidden 32 are too small to split one at a time). Each step's values are within rounding of
 * gemm_act's (the BLAS may round a product of fewer rows differently) and the same for a given
 * thread count. C_s must not overlap first, B, H or another step's rows except through the
 * recurrence itself. B's row stride is n. PD_EINVAL for steps < 0, ldfirst, ldc or (with grad)
 * ldh narrower than n, or grad without H. */
typedef pd_status pd_k_gemm_act_chain_fn(pd_k_unop act, bool grad, pd_dtype dt, bool trans_b,
                                         int64_t m, int64_t n, int64_t steps, const void *first,
                                         int64_t ldfirst, const void *b, void *c, int64_t ldc,
                                         int64_t step, const void *h, int64_t ldh);

/* C [m, n] = op(A) op(B) + bias, bias [n] added to every row (an fc layer's forward). C is
 * written, not read, and must not overlap A, B or bias. The CPU copies the bias into the rows of
 * C that each thread's part of the product then accumulates onto (beta 1): no pass clears C for
 * the product, and none adds the bias after it. The result is the bits of gemm then an add of
 * the bias where the backend sums K in one block (OpenBLAS: K up to a few hundred); for a longer
 * K the bias enters with the first block, which rounds differently. bias NULL: PD_EINVAL.
 * Otherwise as pd_k_gemm_fn with alpha 1. */
typedef pd_status pd_k_gemm_bias_fn(pd_dtype dt, bool trans_a, bool trans_b, int64_t m,
                                    int64_t n, int64_t k, const void *a, int64_t lda,
                                    const void *b, int64_t ldb, const void *bias, void *c,
                                    int64_t ldc);

/* A backend's copy of an operand that many calls share, made once in the layout its products
 * read (the CPU: gemm_avx512.c's 32-column or gemm_avx2.c's 16-column panels of B; Winograd's
 * transformed filters of a convolution, rows oc and cols c * 9). The caller keeps it beside the
 * operand and releases it with `release` (the backend's) when the operand's values change or
 * go; the entry that made it reads it only while `dt`, `rows` and `cols` still describe the
 * operand. */
typedef struct pd_k_prepared {
  void (*release)(struct pd_k_prepared *self);
  pd_dtype dt;
  int64_t rows, cols;
} pd_k_prepared;

/* C [m, n] = A [m, k] B [k, n] (+ bias [n] on every row when bias is not NULL; B's row stride n)
 * for a B that stays the same across calls (an inference model's weights): as gemm_bias (or gemm
 * with alpha 1, beta 0), with *prep the backend's prepared copy of B. When *prep is NULL the
 * entry may make one and store it there (the caller then owns it, and releases it with
 * (*prep)->release); a *prep of another dt or shape is released and made again. The CPU makes
 * one for fp32 on AVX-512 (B in panels, read contiguously: [128, 384] x [384, 1536] ran at 121
 * GFLOP/s against 88 reading B's rows in place, one thread) and on AVX2 (16-column panels);
 * otherwise it leaves *prep NULL and computes as gemm_bias does. A failed allocation of the
 * copy is not an error (the product is made from B itself). C must not overlap A, B or bias. */
typedef pd_status pd_k_gemm_const_b_fn(pd_dtype dt, int64_t m, int64_t n, int64_t k,
                                       const void *a, const void *b, const void *bias, void *c,
                                       pd_k_prepared **prep);

/* The products of automatic mixed precision (train(..., amp = "bf16")): fp32 matrices
 * multiplied in low precision. Every element of op(A_i) and op(B_i) is rounded to `lp` (PD_BF16
 * or PD_FP16: to nearest even; past fp16's range +-inf), their products (exact in fp32) summed
 * in fp32 in an order of the backend's, then
 *   C_i = alpha op(A_i) op(B_i) + beta C_i, plus bias [n] on every row when bias is not NULL,
 * for i < batch; matrix i of A starts stride_a elements after matrix i-1 (0 broadcasts one
 * matrix to every product), the same for B and C. A, B, C and bias hold fp32; C must not
 * overlap the others. The CPU multiplies bf16 on AMX tiles where the CPU has them and the OS
 * allows them (kernels/cpu/gemm_amx.c), else rounds copies of A and B and runs its fp32 GEMM.
 * beta == 0 ignores C's old contents; alpha == 0 or k == 0 reads neither A nor B.
 * PD_EUNSUPPORTED for another lp; PD_EINVAL for a negative batch or stride, or as gemm. */
typedef pd_status pd_k_gemm_lp_fn(pd_dtype lp, bool trans_a, bool trans_b, int64_t batch,
                                  int64_t m, int64_t n, int64_t k, double alpha, const void *a,
                                  int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
                                  int64_t stride_b, double beta, void *c, int64_t ldc,
                                  int64_t stride_c, const void *bias);

/* out = x OP y with broadcasting (pd_k_broadcast_shape gives out's shape). fp32, fp64, int32,
 * int64; PD_K_POW is float only. Integer ops wrap on overflow; integer division truncates and
 * x / 0 gives 0 (no trap). out may alias x or y when that operand has out's shape. */
typedef pd_status pd_k_binary_fn(pd_k_binop op, pd_dtype dt, int xnd, const int64_t *xdims,
                                 const void *x, int ynd, const int64_t *ydims, const void *y,
                                 int axis, void *out);
/* Gradients of a broadcast binary op given dout (out's shape): dx (x's shape) and dy (y's
 * shape), each summed over the dims its operand was broadcast along. Either may be NULL when
 * not wanted. Rules at ties as in Fluid: max: dx where x > y, dy where x <= y; min: dx where
 * x < y, dy where x >= y. pow: dy = dout * x^y * log(x). fp32/fp64. */
typedef pd_status pd_k_binary_grad_fn(pd_k_binop op, pd_dtype dt, int xnd, const int64_t *xdims,
                                      const void *x, int ynd, const int64_t *ydims,
                                      const void *y, int axis, const void *dout, void *dx,
                                      void *dy);
/* out (bool) = x CMP y with broadcasting. fp32, fp64, int32, int64, bool (bools compare as
 * 0/1, false < true). NaN compares as IEEE says (NaN != NaN). */
typedef pd_status pd_k_compare_fn(pd_k_cmpop op, pd_dtype dt, int xnd, const int64_t *xdims,
                                  const void *x, int ynd, const int64_t *ydims, const void *y,
                                  int axis, uint8_t *out);
/* out = x AND/OR/XOR y on bool buffers, with broadcasting. */
typedef pd_status pd_k_logical_fn(pd_k_logop op, int xnd, const int64_t *xdims, const uint8_t *x,
                                  int ynd, const int64_t *ydims, const uint8_t *y, int axis,
                                  uint8_t *out);
/* out = NOT x on n bools (out may be x). */
typedef void pd_k_logical_not_fn(int64_t n, const uint8_t *x, uint8_t *out);

/* out[i] = f(x[i]) for n elements; out may be x. log/sqrt of negatives give NaN as in C. */
typedef pd_status pd_k_unary_fn(pd_k_unop op, pd_dtype dt, int64_t n, const void *x, void *out);
/* dx[i] = dout[i] * f'(x[i]), written from whichever of x (the input) and out (= f(x)) is
 * cheaper: relu, sigmoid, tanh, exp and sqrt read out; log, square and abs read x. The one not
 * read may be NULL. relu'(0) = 0, abs'(0) = 0. dx may be dout. */
typedef pd_status pd_k_unary_grad_fn(pd_k_unop op, pd_dtype dt, int64_t n, const void *x,
                                     const void *out, const void *dout, void *dx);
/* out[i] = f(x[i]) for n elements, f an activation with up to three parameters p[0..2] (p may be
 * NULL for the ones that take none), with Fluid's definitions; out may be x. fp32/fp64.
 *   gelu        x Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
 *   gelu_tanh   0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
 *   leaky_relu  x > 0 ? x : alpha x                                   p = {alpha}
 *   elu         x > 0 ? x : alpha (e^x - 1)                           p = {alpha}
 *   swish       x sigmoid(beta x)                                     p = {beta}
 *   softplus    beta x > threshold ? x : log(1 + e^(beta x)) / beta  p = {beta, threshold}
 *   relu6       min(max(x, 0), threshold)                             p = {threshold}
 *   hard_swish  x min(max(x + offset, 0), threshold) / scale          p = {threshold, scale,
 *                                                                          offset}
 *   log_sigmoid log(1 / (1 + e^-x))
 *   silu        x sigmoid(x) (swish with beta 1)
 *   hard_sigmoid min(max(slope x + offset, 0), 1)                     p = {slope, offset}
 * softplus and log_sigmoid are computed as max(z, 0) + log1p(e^-|z|) (z = beta x, resp. -x),
 * which neither overflows nor loses the small values for large |x|. PD_EINVAL for an unknown op,
 * n < 0, p NULL where the op takes parameters, softplus's beta or hard_swish's scale 0. */
typedef pd_status pd_k_act_fn(pd_k_act op, pd_dtype dt, int64_t n, const double *p, const void *x,
                              void *out);
/* dx[i] = dout[i] * f'(x[i]) for the same f, from x; dx may be dout (not x). At the kinks:
 * leaky_relu and elu take the x <= 0 side at 0; relu6 has slope 1 on (0, threshold) only;
 * hard_swish has (2 x + offset) / scale on (-offset, threshold - offset), 0 below, threshold /
 * scale above; softplus has slope 1 above its threshold; hard_sigmoid has slope where
 * 0 < slope x + offset < 1, else 0. */
typedef pd_status pd_k_act_grad_fn(pd_k_act op, pd_dtype dt, int64_t n, const double *p,
                                   const void *x, const void *dout, void *dx);
/* out = a * x + b (Fluid's scale op with bias_after_scale; for scale * (x + bias) pass
 * b = scale * bias). out may be x. */
typedef pd_status pd_k_scale_fn(pd_dtype dt, int64_t n, const void *x, double a, double b,
                                void *out);
/* out[i] = value for n elements of any of fp32, fp64, int32, int64, bool (value converted as by
 * pd_k_cast_fn). */
typedef pd_status pd_k_fill_fn(pd_dtype dt, int64_t n, void *out, double value);

/* Reduce x (shape nd/dims) over axes (as pd_k_reduce_shape; naxes == 0: all). out has the
 * reduced shape (keep_dim does not change the layout). sum/mean accumulate fp32 in double.
 * fp32, fp64; sum/max/min also int32, int64. A reduction over zero elements gives 0 for sum,
 * NaN for mean, PD_EINVAL for max/min. */
typedef pd_status pd_k_reduce_fn(pd_k_redop op, pd_dtype dt, int nd, const int64_t *dims,
                                 const void *x, int naxes, const int *axes, void *out);
/* dx = d(reduce)/dx * dout, dx with x's shape: sum copies dout along the reduced axes, mean
 * divides by the reduced count, max/min send dout to every element equal to the result (as
 * Fluid does). x and out are read only by max/min (may be NULL otherwise). fp32, fp64. */
typedef pd_status pd_k_reduce_grad_fn(pd_k_redop op, pd_dtype dt, int nd, const int64_t *dims,
                                      const void *x, const void *out, const void *dout,
                                      int naxes, const int *axes, void *dx);

/* Running sums along the middle axis of x viewed as [pre, n, post]: out[p, j, q] = the sum of
 * x[p, i, q] over i <= j (exclusive: i < j; reverse: i >= j, exclusive i > j). Floats add in
 * double, integers in int64 (wrapping). fp32, fp64, int32, int64. out may be x. The gradient of
 * a cumsum is the cumsum of dOut in the other direction. */
typedef pd_status pd_k_cumsum_fn(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                                 bool exclusive, bool reverse, const void *x, void *out);

/* Softmax over the middle axis of x viewed as [pre, n, post] (the last axis: post = 1), made
 * stable by subtracting each slice's max: inputs of +-1000 give exact results, -inf gives 0.
 * log_softmax = x - max - log(sum(exp(x - max))). out may be x. */
typedef pd_status pd_k_softmax_fn(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                                  const void *x, void *out);
/* Backward from the forward output: softmax: dx = out * (dout - sum(dout * out));
 * log_softmax: dx = dout - exp(out) * sum(dout). dx may be dout. */
typedef pd_status pd_k_softmax_grad_fn(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                                       const void *out, const void *dout, void *dx);

/* Scaled dot-product attention over heads (memory_efficient_attention's, an inference model's
 * attention layer): for batch b and head h, with P the softmax along j of scale q[b, i, h, :] .
 * k[b, j, h, :] + bias[b, h, i, j] (and 0 past j = i when causal),
 *   out[b, i, h, :] = sum over j of P[i, j] v[b, j, h, :];
 * q [batch, sq, heads, d], k [batch, sk, heads, d], v [batch, sk, heads, dv] and out [batch, sq,
 * heads, dv], each contiguous (the layout of the products before their heads are split off);
 * bias NULL (none) or read at bias_strides, in elements, along [batch, heads, sq, sk] (0: that
 * dim broadcast). lse NULL, or [batch, heads, sq]: each row's log-sum-exp of its scores. fp32 and
 * fp64; within rounding of what the gemm, binary and softmax entries give in turn (the scale
 * multiplies the products' sums, the CPU's fp32 softmax sums in float lanes). */
typedef struct pd_k_attention {
  int64_t batch, sq, sk, heads, d, dv;
  double scale;
  bool causal;
  int64_t bias_strides[4];
} pd_k_attention;
typedef pd_status pd_k_attention_fn(pd_dtype dt, const pd_k_attention *a, const void *q,
                                    const void *k, const void *v, const void *bias, void *out,
                                    void *lse);

/* Cross entropy of probabilities prob [rows, classes] (each row a distribution, e.g. a softmax
 * output) against labels: hard labels (soft_label false) are int64 [rows] in [0, classes) and
 * loss[r] = -log(prob[r, label[r]]); a row whose label == ignore_index gets loss 0. Soft labels
 * are dt [rows, classes] and loss[r] = -sum_c label[r, c] * log(prob[r, c]). loss is dt [rows].
 * A log of 0 is clamped to -1e20 as Fluid does (no inf). PD_EINVAL for a label out of range. */
typedef pd_status pd_k_cross_entropy_fn(pd_dtype dt, int64_t rows, int64_t classes,
                                        const void *prob, bool soft_label, const void *label,
                                        int64_t ignore_index, void *loss);
/* dprob = d(loss)/d(prob) * dloss (dloss is [rows]): hard: -dloss / prob at the label, 0
 * elsewhere (and 0 on ignored rows); soft: -dloss * label / prob. */
typedef pd_status pd_k_cross_entropy_grad_fn(pd_dtype dt, int64_t rows, int64_t classes,
                                             const void *prob, bool soft_label,
                                             const void *label, int64_t ignore_index,
                                             const void *dloss, void *dprob);
/* Fused softmax + cross entropy on logits [rows, classes] (softmax_with_cross_entropy): writes
 * softmax [rows, classes] and loss [rows], computing the loss as logsumexp - logit (no log of
 * a rounded probability). Labels as in pd_k_cross_entropy_fn. */
typedef pd_status pd_k_softmax_xent_fn(pd_dtype dt, int64_t rows, int64_t classes,
                                       const void *logits, bool soft_label, const void *label,
                                       int64_t ignore_index, void *softmax, void *loss);
/* dlogits = (softmax - onehot(label)) * dloss (soft: softmax - label); 0 on ignored rows.
 * dlogits may be softmax. */
typedef pd_status pd_k_softmax_xent_grad_fn(pd_dtype dt, int64_t rows, int64_t classes,
                                            const void *softmax, bool soft_label,
                                            const void *label, int64_t ignore_index,
                                            const void *dloss, void *dlogits);

/* im2col of ONE image [c, h, w] into col [c * kh * kw, oh * ow] (padding reads as 0), and its
 * adjoint col2im, which ACCUMULATES col back into img (zero img first for a plain transpose).
 * The rows of group g are the contiguous block g * (c / groups) * kh * kw. */
typedef pd_status pd_k_im2col_fn(pd_dtype dt, const pd_k_conv2d *p, const void *img, void *col);
typedef pd_status pd_k_col2im_fn(pd_dtype dt, const pd_k_conv2d *p, const void *col, void *img);
/* Convolution (cross-correlation, as every framework) y = conv(x, w): x [n, c, h, w],
 * w [oc, c / groups, kh, kw], y [n, oc, oh, ow]; no bias (Fluid adds it with elementwise_add).
 * p must have passed pd_k_conv2d_setup. Scratch memory for im2col may give PD_ENOMEM. */
typedef pd_status pd_k_conv2d_fn(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                 const void *w, void *y);
/* What a fused convolution does to each output element after the product (conv2d_fused; an
 * inference model's convolution with the ops after it folded in, vm/passes/infer_opt.c):
 * y = f(y + bias[channel] + residual), each part optional, in that order. f is a unary op
 * (relu, sigmoid, tanh: kind PD_K_EPI_UNOP) or an activation with its parameters p
 * (PD_K_EPI_ACT, as pd_k_act_fn), or none. */
typedef enum pd_k_epi_kind { PD_K_EPI_NONE, PD_K_EPI_UNOP, PD_K_EPI_ACT } pd_k_epi_kind;
typedef struct pd_k_conv_epilogue {
  const void *bias;      /* [oc] in the convolution's dtype, or NULL */
  const void *residual;  /* [n, oc, oh, ow] like y (not y itself), or NULL */
  pd_k_epi_kind kind;
  pd_k_unop unop;        /* kind PD_K_EPI_UNOP */
  pd_k_act act;          /* kind PD_K_EPI_ACT, with its parameters */
  double p[3];
} pd_k_conv_epilogue;
/* y = the epilogue ep (NULL: none) applied to conv(x, w), as pd_k_conv2d_fn; PD_EINVAL for an
 * epilogue whose op or parameters pd_k_unary_fn or pd_k_act_fn would refuse. prep (NULL: none)
 * is the slot of the backend's prepared copy of w for a w that stays the same across calls (an
 * inference model's filters), as gemm_const_b's: the CPU keeps there the transformed filters of
 * a 3x3 convolution it computes as Winograd's F(2x2, 3x3) (fp32 on AVX2), made again for
 * another shape; the caller owns what is put there and releases it with (*prep)->release. */
typedef pd_status pd_k_conv2d_fused_fn(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                       const void *w, const pd_k_conv_epilogue *ep, void *y,
                                       pd_k_prepared **prep);
/* dx = conv2d's gradient w.r.t. x given dy (overwritten, not accumulated). */
typedef pd_status pd_k_conv2d_bwd_data_fn(pd_dtype dt, const pd_k_conv2d *p, const void *w,
                                          const void *dy, void *dx);
/* y = the epilogue ep (NULL: none) applied to the transposed convolution of x by w, which is
 * conv2d_bwd_data's dx of dy = x (x shaped as p's output [n, oc, oh, ow], y as its input [n, c,
 * h, w]; ep's bias a value per channel of y, its residual shaped as y): conv2d_transpose_bias's
 * (an upsampling head's transposed convolution with its bias and activation). PD_EINVAL as
 * conv2d_fused's. */
typedef pd_status pd_k_conv2d_transpose_fused_fn(pd_dtype dt, const pd_k_conv2d *p,
                                                 const void *w, const void *x,
                                                 const pd_k_conv_epilogue *ep, void *y);
/* dw = conv2d's gradient w.r.t. w given x and dy (overwritten, not accumulated). */
typedef pd_status pd_k_conv2d_bwd_filter_fn(pd_dtype dt, const pd_k_conv2d *p, const void *x,
                                            const void *dy, void *dw);
/* Pooling y [n, c, oh, ow] of x. Max pooling ignores padding (a window entirely in padding
 * gives -inf, which setup rules out); avg pooling counts padding as 0 unless exclusive. */
typedef pd_status pd_k_pool2d_fn(pd_dtype dt, const pd_k_pool2d *p, const void *x, void *y);
/* dx given x, y and dy (dx overwritten). Max: each window's dy goes to its first maximum. */
typedef pd_status pd_k_pool2d_grad_fn(pd_dtype dt, const pd_k_pool2d *p, const void *x,
                                      const void *y, const void *dy, void *dx);

/* Index of the maximum along the middle axis of x viewed as [pre, n, post]: out [pre, post].
 * The first maximum wins; NaN counts as the maximum (as NumPy). smallest: the minimum instead,
 * the first minimum winning and NaN counting as the largest (never the minimum of a row that
 * has a number: PaddlePaddle's arg_min). n >= 1. fp32, fp64, int32, int64. */
typedef pd_status pd_k_argmax_fn(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                                 bool smallest, const void *x, int64_t *out);
/* The k largest of each row of x [rows, n], in descending order: values (dt) and indices
 * [rows, k]. Equal values keep their original order; NaN is the largest. smallest: the k
 * smallest in ascending order (NaN still the largest: last). 1 <= k <= n. fp32, fp64, int32,
 * int64. */
typedef pd_status pd_k_top_k_fn(pd_dtype dt, int64_t rows, int64_t n, int64_t k, bool smallest,
                                const void *x, void *values, int64_t *indices);
/* dst = src converted, n elements, between bool, int32, int64, fp32 and fp64, and on the CPU
 * fp16 and bf16 too (to them rounded to nearest even through fp32, base/dtype.h). To bool:
 * x != 0. Float to integer truncates toward zero and saturates (NaN gives 0); int64 to int32
 * wraps. */
typedef pd_status pd_k_cast_fn(pd_dtype src_dt, const void *src, pd_dtype dst_dt, void *dst,
                               int64_t n);
/* out = x with its axes permuted: out dim i is x dim perm[i]. Any dtype (bytes are moved). */
typedef pd_status pd_k_transpose_fn(pd_dtype dt, int nd, const int64_t *dims, const int *perm,
                                    const void *x, void *out);
/* Concatenate inputs viewed as [pre, sizes[i], post] along the middle axis into out
 * [pre, sum(sizes), post]; split is the inverse. Any dtype. */
typedef pd_status pd_k_concat_fn(pd_dtype dt, int ninputs, const void *const *xs,
                                 const int64_t *sizes, int64_t pre, int64_t post, void *out);
typedef pd_status pd_k_split_fn(pd_dtype dt, const void *x, int64_t pre, int64_t post,
                                int noutputs, const int64_t *sizes, void *const *outs);
/* Embedding lookup (lookup_table): out[i, :] = table[ids[i], :], table [nrows, width],
 * out [nids, width]; ids equal to padding_idx give a zero row (padding_idx = -1: none).
 * PD_EINVAL for an id outside [0, nrows). fp32, fp64. */
typedef pd_status pd_k_gather_rows_fn(pd_dtype dt, int64_t nrows, int64_t width,
                                      const void *table, int64_t nids, const int64_t *ids,
                                      int64_t padding_idx, void *out);
/* Its gradient: dst[ids[i], :] += src[i, :] (ACCUMULATES; rows of padding_idx are skipped;
 * repeated ids add up). */
typedef pd_status pd_k_scatter_add_rows_fn(pd_dtype dt, int64_t nrows, int64_t width,
                                           void *dst, int64_t nids, const int64_t *ids,
                                           int64_t padding_idx, const void *src);
/* n numbers uniform in [low, high) / normal with mean and std, from rng (see pd_k_rng).
 * Uniform: fp32 from 24 random bits, fp64 from 53. Gaussian: Box-Muller in double precision,
 * the same on every platform whose libm agrees on log, sqrt, sin and cos (glibc does). */
typedef pd_status pd_k_uniform_fn(pd_dtype dt, int64_t n, void *out, double low, double high,
                                  pd_k_rng *rng);
typedef pd_status pd_k_gaussian_fn(pd_dtype dt, int64_t n, void *out, double mean, double std,
                                   pd_k_rng *rng);

/* ---- Optimizers: one update of n parameter elements, in double precision, for each kind
 * (the ops of vm/ops/optim.c fold their attributes and scalar inputs into pd_k_opt):
 *  - SGD:      p' = p - lr * g.
 *  - MOMENTUM: g' = rescale * g + l2 * p;  v' = mu * v + g';
 *              p' = p - lr * (nesterov ? g' + mu * v' : v').            s[0] = v
 *  - ADAM:     m1' = beta1 * m1 + (1 - beta1) * g;  m2' = beta2 * m2 + (1 - beta2) * g * g;
 *              p' = p * (1 - decay) - lr * m1' / (sqrt(m2') + eps)       s[0] = m1, s[1] = m2
 *              (lr and eps with Adam's bias corrections folded in; decay is AdamW's decoupled
 *              lr * coeff, 0 for Adam).
 *  - RMSPROP:  ms' = rho * ms + (1 - rho) * g * g;  centered: mg' = rho * mg + (1 - rho) * g;
 *              mom' = mu * mom + lr * g / sqrt(ms' + eps - (centered ? mg'^2 : 0));
 *              p' = p - mom'.                               s[0] = ms, s[1] = mom, s[2] = mg
 *  - ADAGRAD:  m' = m + g * g;  p' = p - lr * g / (sqrt(m') + eps).       s[0] = m
 * s and s_out are host arrays of the kind's state buffers (unused entries ignored); each output
 * may be its own input (p_out == p, s_out[i] == s[i]), no other overlap. fp32/fp64. ---- */
typedef enum pd_k_opt_kind {
  PD_K_OPT_SGD,
  PD_K_OPT_MOMENTUM,
  PD_K_OPT_ADAM,
  PD_K_OPT_RMSPROP,
  PD_K_OPT_ADAGRAD,
  PD_K_OPT_COUNT_
} pd_k_opt_kind;
typedef struct pd_k_opt {
  pd_k_opt_kind kind;
  double lr;               /* every kind */
  double beta1, beta2;     /* ADAM */
  double eps;              /* ADAM, RMSPROP, ADAGRAD */
  double decay;            /* ADAM: decoupled weight decay (p scaled by 1 - decay first) */
  double mu;               /* MOMENTUM, RMSPROP: the momentum */
  double rescale, l2;      /* MOMENTUM: gradient scale, L2 coefficient */
  double rho;              /* RMSPROP: the decay of the mean square */
  bool nesterov;           /* MOMENTUM */
  bool centered;           /* RMSPROP */
} pd_k_opt;
/* How many state buffers o's kind reads and writes (RMSPROP: 3 when centered, else 2). */
static inline int pd_k_opt_nstates(const pd_k_opt *o) {
  switch (o->kind) {
    case PD_K_OPT_MOMENTUM: case PD_K_OPT_ADAGRAD: return 1;
    case PD_K_OPT_ADAM: return 2;
    case PD_K_OPT_RMSPROP: return o->centered ? 3 : 2;
    default: return 0;
  }
}
typedef pd_status pd_k_opt_fn(pd_dtype dt, int64_t n, const pd_k_opt *o, const void *p,
                              const void *g, const void *const *s, void *p_out,
                              void *const *s_out);

/* ---- Loss scaling (fp16 mixed precision: Fluid's check_finite_and_unscale). out[i] = x[i] *
 * inv_scale for n elements (out may be x), and *found set to true when some x[i] is not finite
 * (an infinity or NaN); *found is left as it was otherwise, so that several calls accumulate into
 * one flag that the caller cleared first. found is in the backend's memory (a device bool on
 * CUDA). PD_EINVAL for n < 0, a NULL buffer with n > 0, found NULL or inv_scale not finite;
 * fp32/fp64. ---- */
typedef pd_status pd_k_unscale_fn(pd_dtype dt, int64_t n, const void *x, double inv_scale,
                                  void *out, bool *found);

/* ---- Normalisation (batch_norm, layer_norm). fp32/fp64; statistics accumulate in double,
 * the variance in a second pass over (x - mean) (no cancellation). ---- */

/* Batch normalisation of x viewed as [n, c, s] over its n * s values per channel (NCHW:
 * n = N, c = C, s = H * W; NC: s = 1; NHWC: n = N * H * W, s = 1); scale, bias, mean, var,
 * mean_out, var_out, saved_mean and saved_inv_std are [c], y is x's shape.
 *  - global (inference, use_global_stats): y = (x - mean) / sqrt(var + epsilon) * scale + bias;
 *    mean_out and var_out are not written (may be NULL).
 *  - otherwise: the batch's mean and biased variance b_mean, b_var per channel (n * s >= 2, else
 *    PD_EINVAL), y = (x - b_mean) / sqrt(b_var + epsilon) * scale + bias, and the running
 *    statistics (Fluid's): mean_out = momentum * mean + (1 - momentum) * b_mean, var_out likewise
 *    with b_var. mean_out may be mean and var_out var (updated in place); either may be NULL.
 * saved_mean and saved_inv_std (each may be NULL) get the mean and 1 / sqrt(variance + epsilon)
 * that normalised y. y must not overlap x. PD_EINVAL for a negative size or epsilon < 0. */
typedef pd_status pd_k_batch_norm_fn(pd_dtype dt, int64_t n, int64_t c, int64_t s,
                                     const void *x, const void *scale, const void *bias,
                                     const void *mean, const void *var, bool global,
                                     double momentum, double epsilon, void *y, void *mean_out,
                                     void *var_out, void *saved_mean, void *saved_inv_std);
/* Its gradient given dy, from the saved_mean and saved_inv_std of the forward run (r):
 * xhat = (x - saved_mean) * r, dbias = sum(dy), dscale = sum(dy * xhat) per channel, and
 * dx = scale * r * (dy - (dbias + xhat * dscale) / (n * s)) (batch statistics), or
 * dx = scale * r * dy (global: the statistics were constants). dx, dscale and dbias may each be
 * NULL (not wanted). dx may be dy. */
typedef pd_status pd_k_batch_norm_grad_fn(pd_dtype dt, int64_t n, int64_t c, int64_t s,
                                          const void *x, const void *scale,
                                          const void *saved_mean, const void *saved_inv_std,
                                          bool global, const void *dy, void *dx, void *dscale,
                                          void *dbias);
/* Layer normalisation of each row of x [rows, cols]: mean and var [rows] (the biased
 * variance), y = (x - mean) / sqrt(var + epsilon) * scale + bias, scale and bias [cols] (each
 * may be NULL: 1, 0). mean and var may be NULL. y must not overlap x. */
typedef pd_status pd_k_layer_norm_fn(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                                     const void *scale, const void *bias, double epsilon,
                                     void *y, void *mean, void *var);
/* Its gradient given dy, from the forward mean and var: r = 1 / sqrt(var + epsilon),
 * xhat = (x - mean) * r, g = dy * scale (dy without scale),
 * dx = r * (g - mean_cols(g) - xhat * mean_cols(g * xhat)); dscale = sum_rows(dy * xhat),
 * dbias = sum_rows(dy). dx, dscale and dbias may each be NULL. dx may be dy. PD_ENOMEM when
 * the scratch memory of dscale and dbias (the CPU: 2 x cols values per 32 rows) is not there. */
typedef pd_status pd_k_layer_norm_grad_fn(pd_dtype dt, int64_t rows, int64_t cols,
                                          const void *x, const void *scale, const void *mean,
                                          const void *var, double epsilon, const void *dy,
                                          void *dx, void *dscale, void *dbias);
/* Copy elements between a dense tensor of dims od (rank nd) and a strided view of another
 * buffer: element idx of the dense one is element off + sum_k (idx[k] mod sd[k]) * sstr[k] of
 * the view (sd[k] >= od[k] reads that dim straight, sd[k] == 1 broadcasts it, a smaller sd[k]
 * repeats it, as tile does; every sd[k] >= 1). scatter false: dense = dst, view = src (slice,
 * expand_v2, tile, a part of stack); scatter true: dense = src, view = dst (the gradient of
 * slice), where no two dense elements may land on one view element. Any dtype (bytes move);
 * the view's elements must lie in its buffer, which the caller checks. */
typedef pd_status pd_k_strided_copy_fn(pd_dtype dt, int nd, const int64_t *od, const int64_t *sd,
                                       const int64_t *sstr, int64_t off, const void *src,
                                       void *dst, bool scatter);

/* out (dense, dims od, rank nd) = x where cond else y, element by element: each operand is read
 * through its strides (in elements, per dim of od; 0 along a dim it is broadcast over): cond
 * is bool (any non-zero byte is true), x, y and out of dtype dt, any dtype (bytes move). out
 * must not overlap an operand. */
typedef pd_status pd_k_where_fn(pd_dtype dt, int nd, const int64_t *od, const int64_t *cstr,
                                const uint8_t *cond, const int64_t *xstr, const void *x,
                                const int64_t *ystr, const void *y, void *out);

/* Padding (pad, pad2d, pad3d): where a border element of pad's out reads x. */
typedef enum pd_k_pad_mode {
  PD_K_PAD_CONSTANT, /* nowhere: it is the value */
  PD_K_PAD_REFLECT,  /* x mirrored about its edge element, which is not repeated */
  PD_K_PAD_EDGE,     /* the edge element repeated (Paddle's edge and replicate) */
  PD_K_PAD_CIRCULAR, /* x repeated periodically */
  PD_K_PAD_COUNT_
} pd_k_pad_mode;
/* out (rank nd, dims xd[k] + before[k] + after[k]) = x (dims xd) at offset before[k] in every
 * dim k; the element at out index o of dim k, with i = o - before[k] outside [0, xd[k]), reads
 * x at -i or 2 (xd[k] - 1) - i (reflect), 0 or xd[k] - 1 (edge), i mod xd[k] (circular), or is
 * value (constant; every element outside x in some dim). before, after >= 0; in a mode other
 * than constant a padded dim (before or after > 0) holds an element, and for reflect more than
 * either padding. fp32, fp64, int32, int64 (value converted to dt). pad_grad: dx (dims xd) =
 * the sum of dout over the elements of out that read each element of x (fp32/fp64; dx is
 * overwritten). out must not overlap x, nor dx dout. */
typedef pd_status pd_k_pad_fn(pd_dtype dt, int nd, const int64_t *xd, const int64_t *before,
                              const int64_t *after, pd_k_pad_mode mode, double value,
                              const void *x, void *out);
typedef pd_status pd_k_pad_grad_fn(pd_dtype dt, int nd, const int64_t *xd, const int64_t *before,
                                   const int64_t *after, pd_k_pad_mode mode, const void *dout,
                                   void *dx);

/* ---- The backend table. ---- */
/* The gate arithmetic of one step of the fused recurrences (vm/ops/rnn_fused.c), after the
 * step's GEMMs, on n packed rows of hidden H (fp32/fp64; n, H >= 0):
 *   lstm_cell       g [n, 4H] holds the pre-activations of i, f, g, o and becomes them
 *                   activated (sigmoid, sigmoid, tanh, sigmoid); c = f pc + i g, h = o tanh(c)
 *                   ([n, H] each).
 *   lstm_cell_grad  from the gates g, the previous cells pc and the cells c: dg [n, 4H] receives
 *                   the pre-activations' gradients from dh (the step's h, read) and dc (the
 *                   step's c: its own plus what came back through h; it becomes pc's).
 *   gru_cell        u [n, 3H] = x W_ih + b_ih, hp [n, 3H] = h W_hh, b [3H] = b_hh, ph [n, H]
 *                   the previous states: s [n, 4H] receives r, z, n and hn = hp_n + b_n, h
 *                   [n, H] the states (1 - z) n + z ph, with r, z = sigmoid(u + hp + b),
 *                   n = tanh(u_n + r hn).
 *   gru_cell_grad   from s and ph: dh [n, H] (the step's h) becomes ph's direct part dh z; du
 *                   [n, 3H] and dhp [n, 3H] receive the gradients of u and of hp + b. */
typedef pd_status pd_k_lstm_cell_fn(pd_dtype dt, int64_t n, int64_t h, void *g, const void *pc,
                                    void *c, void *hout);
typedef pd_status pd_k_lstm_cell_grad_fn(pd_dtype dt, int64_t n, int64_t h, const void *g,
                                         const void *pc, const void *c, const void *dh,
                                         void *dc, void *dg);
typedef pd_status pd_k_gru_cell_fn(pd_dtype dt, int64_t n, int64_t h, const void *u,
                                   const void *hp, const void *b, const void *ph, void *s,
                                   void *hout);
typedef pd_status pd_k_gru_cell_grad_fn(pd_dtype dt, int64_t n, int64_t h, const void *s,
                                        const void *ph, void *dh, void *du, void *dhp);

/* A whole fused recurrence at once (vm/ops/rnn_fused.c, the rnn op of vm/ops/rnn.c). The CPU's
 * (kernels/cpu/rnn_seq.c) split each step's products and gate math by hidden units across the
 * pool, so that the gate math runs on every thread and each thread's share of the weights
 * stays in its cache; the CUDA backend's compose them of its GEMM and the cell entries above,
 * a step at a time (pd_k_lstm_seq_steps etc., below). The same arithmetic as those: results
 * differ only in the order of a product's or a sum's terms.
 *
 * The batch: nseq sequences of which step k has running(k) = koff[k + 1] - koff[k] rows, the
 * sequences sorted by length (longest first), so that step k's rows are the first running(k)
 * sequences and row r of step k + 1 continues row r of step k. Time-major row koff[k] + r is
 * row row[koff[k] + r] of the batch-major tensors (Input and the outputs, [T, .] with T =
 * koff[steps], or `rows`); the initial states h0 and c0 and the gradients dh0 and dc0 are
 * [nseq, H] in the sorted order. Every buffer is the caller's; outputs must not overlap inputs.
 *   lstm_seq       x [T, 4H] (x W_ih + b, i f g o) and w [H, 4H]: hidden and cell [T, H] and
 *                  gate [T, 4H] (the activated gates), as lstm_cell step by step.
 *   lstm_seq_grad  from the forward's values and dhidden, dcell ([T, H]; NULL for zeros): dx
 *                  [T, 4H], dw [H, 4H], dh0 and dc0 (rows of sequences of length 0 get zeros).
 *   gru_seq        x [T, 3H] (x W_ih + b_ih), w [H, 3H], b [3H] (b_hh): hidden [T, H] and gate
 *                  [T, 4H] (r, z, n, hn as gru_cell's s).
 *   gru_seq_grad   dx [T, 3H], dw [H, 3H], db [3H] and dh0 from dhidden (NULL for zeros). */
typedef struct pd_k_rnn_seq {
  pd_dtype dt;          /* fp32, fp64 */
  int64_t hid;          /* H */
  int64_t nseq, steps;  /* sequences; the longest one's length */
  const int64_t *koff;  /* [steps + 1], koff[0] = 0, non-decreasing */
  const int64_t *row;   /* [koff[steps]], each in [0, koff[steps]), or [0, rows) */
  int64_t rows;         /* the tensors' rows when more than koff[steps] (a padded batch, whose
                           rows past a sequence's end no step reads or writes); 0: koff[steps] */
  pd_dtype lp;          /* mixed precision (fp32 only): PD_BF16 or PD_FP16 multiply every
                           product with the weights (h w, dg w^T, h^T dg) as gemm_lp does, the
                           operands rounded to it and fp32 sums; anything else (0): in dt */
} pd_k_rnn_seq;
typedef pd_status pd_k_lstm_seq_fn(const pd_k_rnn_seq *s, const void *x, const void *w,
                                   const void *h0, const void *c0, void *hidden, void *cell,
                                   void *gate);
typedef pd_status pd_k_lstm_seq_grad_fn(const pd_k_rnn_seq *s, const void *w, const void *h0,
                                        const void *c0, const void *hidden, const void *cell,
                                        const void *gate, const void *dhidden,
                                        const void *dcell, void *dx, void *dw, void *dh0,
                                        void *dc0);
typedef pd_status pd_k_gru_seq_fn(const pd_k_rnn_seq *s, const void *x, const void *w,
                                  const void *b, const void *h0, void *hidden, void *gate);
typedef pd_status pd_k_gru_seq_grad_fn(const pd_k_rnn_seq *s, const void *w, const void *h0,
                                       const void *hidden, const void *gate,
                                       const void *dhidden, void *dx, void *dw, void *db,
                                       void *dh0);
/* The element-wise losses of vm/ops/loss_elem.c (Fluid's sigmoid_cross_entropy_with_logits,
 * smooth_l1_loss, huber_loss, kldiv_loss) and their gradients, fp32/fp64: every value is
 * computed in double from the inputs and stored in dt. Outputs must not overlap inputs; a NULL
 * output is not written (so an op computes only the gradients it is asked for).
 *   sigmoid_xent       out[i] = (max(x, 0) - x z + log1p(exp(-|x|))) / norm over n elements
 *                      (z = label[i]), 0 where the label is ignored (|z| < 9.2e18 and its
 *                      integer part is ignore_index); norm is the number of labels not ignored
 *                      (1 when there are none) with `normalize`, else 1.
 *   sigmoid_xent_grad  dx = (sigmoid(x) - z) dout / norm, dlabel = -x dout / norm; 0 where the
 *                      label is ignored.
 *   smooth_l1          over [rows, cols]: d = (x - y) iw (iw NULL: 1), diff[i] = d; out[r] (rows
 *                      elements) = the sum over row r of ow (NULL: 1) times 0.5 s2 d^2 where
 *                      |d| < 1 / s2, else |d| - 0.5 / s2 (s2 = sigma^2 > 0).
 *   smooth_l1_grad     with g = dout[r] ow (s2 d where |d| < 1 / s2, else sign(d)): dx = g iw,
 *                      dy = -dx, diw = g (x - y), dow = dout[r] times the element's loss.
 *   huber              r = y - x: res = r, out = 0.5 r^2 where |r| <= delta, else
 *                      delta (|r| - 0.5 delta) (delta > 0).
 *   huber_grad         dy = dout (r where |r| <= delta, else delta sign(r)), dx = -dy.
 *   kldiv              l = t (log(t) - x) where t > 0, else 0: reduce false: loss[i] = l;
 *                      reduce true: loss[0] = scale times the sum of every l.
 *   kldiv_grad         where t > 0: dx = -t g, dtarget = (log(t) + 1 - x) g, with g = dloss[i]
 *                      (reduce false) or dloss[0] scale (reduce true); 0 elsewhere.
 * Sums (a row of smooth_l1, kldiv's total, sigmoid_xent's count) accumulate in double in an
 * order fixed by the sizes: the CPU adds in index order on one thread, the GPU in a fixed tree
 * (no atomics), so each backend gives the same bits on every run. PD_EUNSUPPORTED for another
 * dtype, PD_EINVAL for a negative size, s2 or delta not > 0, a scale that is not finite, or a
 * required buffer NULL with elements to compute (pd_k_loss_check). */
typedef pd_status pd_k_sigmoid_xent_fn(pd_dtype dt, int64_t n, const void *x, const void *label,
                                       int64_t ignore_index, bool normalize, void *out);
typedef pd_status pd_k_sigmoid_xent_grad_fn(pd_dtype dt, int64_t n, const void *x,
                                            const void *label, const void *dout,
                                            int64_t ignore_index, bool normalize, void *dx,
                                            void *dlabel);
typedef pd_status pd_k_smooth_l1_fn(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                                    const void *y, const void *iw, const void *ow, double s2,
                                    void *diff, void *out);
typedef pd_status pd_k_smooth_l1_grad_fn(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                                         const void *y, const void *iw, const void *ow,
                                         double s2, const void *dout, void *dx, void *dy,
                                         void *diw, void *dow);
typedef pd_status pd_k_huber_fn(pd_dtype dt, int64_t n, const void *x, const void *y,
                                double delta, void *res, void *out);
typedef pd_status pd_k_huber_grad_fn(pd_dtype dt, int64_t n, const void *x, const void *y,
                                     const void *dout, double delta, void *dx, void *dy);
typedef pd_status pd_k_kldiv_fn(pd_dtype dt, int64_t n, const void *x, const void *target,
                                bool reduce, double scale, void *loss);
typedef pd_status pd_k_kldiv_grad_fn(pd_dtype dt, int64_t n, const void *x, const void *target,
                                     const void *dloss, bool reduce, double scale, void *dx,
                                     void *dtarget);

/* dropout (Fluid's, both implementations) and its gradient, fp32/fp64, n elements; products in
 * double, rounded to dt once:
 *   dropout       with draws u (fp32, n of them, uniform's stream in [0, 1)): element i is
 *                 kept where u[i] >= p: out[i] = x[i] * scale, mask[i] = 1; else out[i] = 0,
 *                 mask[i] = 0. Without draws (u NULL: is_test, p 0 or 1) every out[i] =
 *                 x[i] * scale and every mask[i] = (p < 1).
 *   dropout_grad  dx[i] = 0 where mask[i] == 0, else dy[i] * scale (mask NULL: no zeros).
 * mask (bytes) may be NULL (not written); out may be x, dx may be dy. PD_EUNSUPPORTED for
 * another dtype, PD_EINVAL for n < 0, p outside [0, 1], a scale that is not finite, or the
 * data buffers NULL with n > 0 (pd_k_dropout_check). */
typedef pd_status pd_k_dropout_fn(pd_dtype dt, int64_t n, const void *x, const float *u,
                                  double p, double scale, void *out, uint8_t *mask);
typedef pd_status pd_k_dropout_grad_fn(pd_dtype dt, int64_t n, const void *dy,
                                       const uint8_t *mask, double scale, void *dx);

/* Row copies through index lists (the fused recurrences' time-major reordering, initial states
 * and state gradients): for i < n, row (dst_ids ? dst_ids[i] : i) of dst = row (src_ids ?
 * src_ids[i] : i) of src, rows of width elements of dt (any dtype of 1, 2, 4 or 8 bytes: the
 * bytes move). The ids are the caller's own lists (on the backend's side, like the buffers),
 * which it made in range: no backend reads them to check (that would wait for the GPU); two
 * dst rows must not be the same, src and dst must not overlap. PD_EINVAL for n or width < 0, a
 * product that does not fit, or a buffer NULL with elements to copy; PD_EUNSUPPORTED for
 * another element size (pd_k_copy_rows_check). */
typedef pd_status pd_k_copy_rows_fn(pd_dtype dt, int64_t n, int64_t width, const void *src,
                                    const int64_t *src_ids, void *dst, const int64_t *dst_ids);

/* Adaptive pooling (Fluid's pool2d with `adaptive`): p gives type, n, c, h, w and the output
 * size oh, ow (the window fields are ignored); window (i, j) covers rows [floor(i h / oh),
 * ceil((i + 1) h / oh)) and the columns likewise (windows may overlap). Max takes the window's
 * first maximum in row-major order (an element replaces it only when greater), avg the mean,
 * summed in double in row-major order. The gradient (y unused, may be NULL) overwrites dx: each
 * element gets, added in T in the windows' row-major order, dy of each window whose first
 * maximum it is (max), or dy / count of each window holding it (avg), as a scatter over the
 * windows would add them. fp32/fp64 (PD_EUNSUPPORTED), n, c >= 0 and h, w, oh, ow >= 1 whose
 * products fit (PD_EINVAL; pd_k_adaptive_pool_check). Uses pd_k_pool2d_fn and
 * pd_k_pool2d_grad_fn. */

/* Resampling of images by separable tables (the interp ops: nearest_interp(_v2),
 * bilinear_interp(_v2), bicubic_interp_v2, linear_interp_v2 as images of one row): x [n, c, h,
 * w] (or [n, h, w, c] when nhwc) to y [n, c, oh, ow] (or [n, oh, ow, c]). Output row k reads
 * th input rows, tap i being iy_i = idx[i oh + k] with weight ly_i = lam[i oh + k]; output
 * column l reads tw columns, tap j being ix_j = idx[th oh + j ow + l] with weight
 * lx_j = lam[th oh + j ow + l]. The taps (th, tw) are (1, 1), (1, 2), (2, 2) or (4, 4):
 *   (1, 1)  nearest   y = x[iy_0, ix_0] (the weights unused);
 *   (1, 2), (2, 2)    y = the sum over j, then i within j, of x[iy_i, ix_j] ly_i lx_j, left
 *                     to right (bilinear: x00 ly0 lx0 + x10 ly1 lx0 + x01 ly0 lx1 + x11 ly1 lx1);
 *   (4, 4)  cubic     y = the sum over i of (the sum over j of x[iy_i, ix_j] lx_j) ly_i, each
 *                     left to right;
 * in dt (fp32: the weights as floats). The caller builds the tables (where the backend
 * computes, like the buffers) with every index in range: no backend reads them to check. The
 * gradient overwrites dx with the adjoint: each dy element times ly_i lx_j added to each tap it
 * read (the CPU adds in output order, plane by plane; the GPU with atomics, in no fixed order).
 * fp32/fp64 (PD_EUNSUPPORTED); n, c >= 0, h, w, oh, ow >= 1 whose products fit, taps as above,
 * the buffers and tables set when there are elements (PD_EINVAL; pd_k_interp2d_check). */
typedef struct pd_k_interp2d {
  int64_t n, c, h, w, oh, ow;
  bool nhwc;       /* channels last */
  int th, tw;      /* taps per output row and column */
  const int64_t *idx;  /* th oh + tw ow row and column indices */
  const double *lam;   /* th oh + tw ow weights */
} pd_k_interp2d;
typedef pd_status pd_k_interp2d_fn(pd_dtype dt, const pd_k_interp2d *p, const void *x, void *y);
typedef pd_status pd_k_interp2d_grad_fn(pd_dtype dt, const pd_k_interp2d *p, const void *dy,
                                        void *dx);

/* Sampling of images at the points of a grid (grid_sampler, PaddlePaddle's grid_sample): x
 * [n, c, h, w], grid [n, oh, ow, 2] of (x, y) in [-1, 1], y [n, c, oh, ow]. A grid value g of
 * an axis of size s maps to the source coordinate u = (g + 1) ((s - 1) / 2) with align_corners,
 * else (g + 1) (s / 2) - 1/2, each step in dt; then padding border clamps u into [0, s - 1],
 * reflection reflects it off the borders (align_corners: at 0 and s - 1, r = |u| mod 2 (s - 1),
 * u = min(r, 2 (s - 1) - r), 0 when s is 1; else at -1/2 and s - 1/2, r = |u + 1/2| mod 2 s,
 * u = min(r, 2 s - r) - 1/2 clamped into [0, s - 1]), zeros leaves it. bilinear: the corners
 * x0 = floor(u), x1 = x0 + 1 (and y0, y1 likewise) weighted by the distances to the other side,
 * y = v00 (x1 - u)(y1 - v) + v01 (u - x0)(y1 - v) + v10 (x1 - u)(v - y0) + v11 (u - x0)(v - y0)
 * left to right (v_yx the pixel, 0 outside the image); nearest: the pixel at (round(v),
 * round(u)), halves away from zero, 0 outside. The gradient overwrites dx (when not NULL) with
 * each dy element times its corner weights added to the corners inside the image, and dgrid
 * (when not NULL) with the derivative of y by the grid values summed over the channels (0 for
 * nearest, and where border or reflection clamp; reflection flips its sign), through the
 * mapping above. fp32/fp64 (PD_EUNSUPPORTED); n, c >= 0, h, w, oh, ow >= 1 whose products fit,
 * padding 0 (zeros), 1 (border) or 2 (reflection), the buffers set when there are elements
 * (PD_EINVAL; pd_k_grid_sample_check). */
typedef struct pd_k_grid_sample {
  int64_t n, c, h, w, oh, ow;
  bool nearest;        /* else bilinear */
  int padding;         /* 0 zeros, 1 border, 2 reflection */
  bool align_corners;
} pd_k_grid_sample;
typedef pd_status pd_k_grid_sample_fn(pd_dtype dt, const pd_k_grid_sample *p, const void *x,
                                      const void *grid, void *y);
typedef pd_status pd_k_grid_sample_grad_fn(pd_dtype dt, const pd_k_grid_sample *p,
                                           const void *x, const void *grid, const void *dy,
                                           void *dx, void *dgrid);

/* The box decoding of detection heads (vm/ops/detection.c's box_coder and yolo_box, with
 * PaddlePaddle's math, in double; kernels/detect_t.h holds the per-box arithmetic both backends
 * share). fp32/fp64 boxes and features (PD_EUNSUPPORTED).
 * box_coder: out [n, j, 4]. A box's width and height are x2 - x1 and y2 - y1 plus `one`
 * (1 when not box_normalized), a prior's centre (x1 + w/2, y1 + h/2). Variances (vx, vy, vw,
 * vh): prior_var's row of the prior ([priors, 4]) when set, else var when attr_var, else 1.
 * encode: target [n, 4] (corners), prior [j, 4]; out[i, k] = ((tcx - pcx) / pw / vx, (tcy -
 * pcy) / ph / vy, log|tw / pw| / vw, log|th / ph| / vh), tcx the midpoint of the corners.
 * decode: target [n, j, 4] (codes), prior [j, 4] (row k), or [n, 4] (row i) when axis1;
 * (cx, cy, w, h) = (vx t0 pw + pcx, vy t1 ph + pcy, e^(vw t2) pw, e^(vh t3) ph), written as
 * (cx - w/2, cy - h/2, cx + w/2 - one, cy + h/2 - one). n, j >= 0 whose n j 4 fits, the
 * buffers (but prior_var) set when there are boxes (PD_EINVAL; pd_k_box_coder_check). */
typedef struct pd_k_box_coder {
  int64_t n, j;
  bool decode, axis1;
  double one;     /* 1 when not box_normalized, else 0 */
  bool attr_var;  /* var holds the variances (no prior_var) */
  double var[4];
} pd_k_box_coder;
typedef pd_status pd_k_box_coder_fn(pd_dtype dt, const pd_k_box_coder *p, const void *prior,
                                    const void *prior_var, const void *target, void *out);

/* yolo_box: x [n, C, h, w] (C = na (5 + classes), plus na IoU channels first when iou_aware),
 * img [n, 2] (height, width) of im_dt int32 or int64 -> boxes [n, na h w, 4], scores [n, na h w,
 * classes]. For anchor a (anchors[2a], anchors[2a + 1]) and cell (k, l), with s the sigmoid:
 * conf = s(objectness), or s(objectness)^(1 - factor) s(iou)^factor when iou_aware; below
 * thresh the box and its scores are 0; else cx = (l + s(tx) scale + bias) iw / w, cy = (k +
 * s(ty) scale + bias) ih / h, bias = -(scale - 1) / 2 in float, bw = e^tw aw iw / (ratio w), bh
 * = e^th ah ih / (ratio h); the box (cx - bw/2, cy - bh/2, cx + bw/2, cy + bh/2), clipped to
 * [0, iw - 1] x [0, ih - 1] when clip; class c's score conf s(x_c). Box b = a h w + k w + l.
 * n, h, w >= 0, 1 <= na <= PD_K_YOLO_MAX_ANCHORS, classes and ratio >= 1, the sizes fitting,
 * the buffers set when there are boxes (PD_EINVAL; pd_k_yolo_box_check). */
enum { PD_K_YOLO_MAX_ANCHORS = 32 };
typedef struct pd_k_yolo_box {
  int64_t n, h, w, na, classes, ratio;
  int64_t anchors[2 * PD_K_YOLO_MAX_ANCHORS]; /* (width, height) per anchor */
  bool iou_aware, clip;
  float scale;            /* scale_x_y */
  double thresh, factor;  /* conf_thresh, iou_aware_factor */
  pd_dtype im_dt;         /* img's: PD_INT32 or PD_INT64 */
} pd_k_yolo_box;
typedef pd_status pd_k_yolo_box_fn(pd_dtype dt, const pd_k_yolo_box *p, const void *x,
                                   const void *img, void *boxes, void *scores);

/* ---- The backend table: every entry once, in table order. PD_K_BACKEND_LIST(X) calls
 * X(name, type, cuda) for each; the struct below, the CPU backend's declarations and table
 * (kernels/cpu/cpu.h, backend.c: pd_kcpu_<name>) and the CUDA backend's (kernels/cuda/cuda_int.h,
 * device.cu: pd_kcu_<name>) are all made from it. `cuda` says whether the CUDA backend has the
 * entry: CUDA (a kernel of its own, pd_kcu_<name>) or NO_CUDA (its table holds NULL there: the
 * op falls back to the CPU or reports PD_EUNSUPPORTED). A new entry is one line here, its type
 * above, and its kernels (HACKING.md, "Adding a kernel entry"). ---- */
#define PD_K_BACKEND_LIST(X) \
  X(gemm, pd_k_gemm_fn, CUDA)                                                                      \
  X(gemm_batched, pd_k_gemm_batched_fn, CUDA)                                                      \
  X(gemm_act, pd_k_gemm_act_fn, CUDA)                                                              \
  X(gemm_bias, pd_k_gemm_bias_fn, CUDA)                                                            \
  X(gemm_const_b, pd_k_gemm_const_b_fn, NO_CUDA)                                                   \
  X(gemm_act_chain, pd_k_gemm_act_chain_fn, CUDA)                                                  \
  X(gemm_lp, pd_k_gemm_lp_fn, CUDA)                                                                \
  X(binary, pd_k_binary_fn, CUDA)                                                                  \
  X(binary_grad, pd_k_binary_grad_fn, CUDA)                                                        \
  X(compare, pd_k_compare_fn, CUDA)                                                                \
  X(logical, pd_k_logical_fn, CUDA)                                                                \
  X(logical_not, pd_k_logical_not_fn, CUDA)                                                        \
  X(unary, pd_k_unary_fn, CUDA)                                                                    \
  X(unary_grad, pd_k_unary_grad_fn, CUDA)                                                          \
  X(scale, pd_k_scale_fn, CUDA)                                                                    \
  X(fill, pd_k_fill_fn, CUDA)                                                                      \
  X(reduce, pd_k_reduce_fn, CUDA)                                                                  \
  X(reduce_grad, pd_k_reduce_grad_fn, CUDA)                                                        \
  X(cumsum, pd_k_cumsum_fn, CUDA)                                                                  \
  X(softmax, pd_k_softmax_fn, CUDA)                                                                \
  X(softmax_grad, pd_k_softmax_grad_fn, CUDA)                                                      \
  X(log_softmax, pd_k_softmax_fn, CUDA)                                                            \
  X(log_softmax_grad, pd_k_softmax_grad_fn, CUDA)                                                  \
  X(cross_entropy, pd_k_cross_entropy_fn, CUDA)                                                    \
  X(cross_entropy_grad, pd_k_cross_entropy_grad_fn, CUDA)                                          \
  X(softmax_xent, pd_k_softmax_xent_fn, CUDA)                                                      \
  X(softmax_xent_grad, pd_k_softmax_xent_grad_fn, CUDA)                                            \
  X(attention, pd_k_attention_fn, NO_CUDA)                                                         \
  X(im2col, pd_k_im2col_fn, CUDA)                                                                  \
  X(col2im, pd_k_col2im_fn, CUDA)                                                                  \
  X(conv2d, pd_k_conv2d_fn, CUDA)                                                                  \
  X(conv2d_fused, pd_k_conv2d_fused_fn, NO_CUDA)                                                  \
  X(conv2d_bwd_data, pd_k_conv2d_bwd_data_fn, CUDA)                                                \
  X(conv2d_bwd_filter, pd_k_conv2d_bwd_filter_fn, CUDA)                                            \
  X(conv2d_transpose_fused, pd_k_conv2d_transpose_fused_fn, NO_CUDA)                              \
  X(pool2d, pd_k_pool2d_fn, CUDA)                                                                  \
  X(pool2d_grad, pd_k_pool2d_grad_fn, CUDA)                                                        \
  X(argmax, pd_k_argmax_fn, CUDA)                                                                  \
  X(top_k, pd_k_top_k_fn, CUDA)                                                                    \
  X(cast, pd_k_cast_fn, CUDA)                                                                      \
  X(transpose, pd_k_transpose_fn, CUDA)                                                            \
  X(concat, pd_k_concat_fn, CUDA)                                                                  \
  X(split, pd_k_split_fn, CUDA)                                                                    \
  X(gather_rows, pd_k_gather_rows_fn, CUDA)                                                        \
  X(scatter_add_rows, pd_k_scatter_add_rows_fn, CUDA)                                              \
  X(uniform, pd_k_uniform_fn, CUDA)                                                                \
  X(gaussian, pd_k_gaussian_fn, CUDA)                                                              \
  X(act, pd_k_act_fn, CUDA)                                                                        \
  X(act_grad, pd_k_act_grad_fn, CUDA)                                                              \
  X(batch_norm, pd_k_batch_norm_fn, CUDA)                                                          \
  X(batch_norm_grad, pd_k_batch_norm_grad_fn, CUDA)                                                \
  X(layer_norm, pd_k_layer_norm_fn, CUDA)                                                          \
  X(layer_norm_grad, pd_k_layer_norm_grad_fn, CUDA)                                                \
  X(strided_copy, pd_k_strided_copy_fn, CUDA)                                                      \
  X(where, pd_k_where_fn, CUDA)                                                                    \
  X(opt, pd_k_opt_fn, CUDA)                                                                        \
  X(unscale, pd_k_unscale_fn, CUDA)                                                                \
  X(lstm_cell, pd_k_lstm_cell_fn, CUDA)                                                            \
  X(lstm_cell_grad, pd_k_lstm_cell_grad_fn, CUDA)                                                  \
  X(gru_cell, pd_k_gru_cell_fn, CUDA)                                                              \
  X(gru_cell_grad, pd_k_gru_cell_grad_fn, CUDA)                                                    \
  X(lstm_seq, pd_k_lstm_seq_fn, CUDA)                                                              \
  X(lstm_seq_grad, pd_k_lstm_seq_grad_fn, CUDA)                                                    \
  X(gru_seq, pd_k_gru_seq_fn, CUDA)                                                                \
  X(gru_seq_grad, pd_k_gru_seq_grad_fn, CUDA)                                                      \
  X(sigmoid_xent, pd_k_sigmoid_xent_fn, CUDA)                                                      \
  X(sigmoid_xent_grad, pd_k_sigmoid_xent_grad_fn, CUDA)                                            \
  X(smooth_l1, pd_k_smooth_l1_fn, CUDA)                                                            \
  X(smooth_l1_grad, pd_k_smooth_l1_grad_fn, CUDA)                                                  \
  X(huber, pd_k_huber_fn, CUDA)                                                                    \
  X(huber_grad, pd_k_huber_grad_fn, CUDA)                                                          \
  X(kldiv, pd_k_kldiv_fn, CUDA)                                                                    \
  X(kldiv_grad, pd_k_kldiv_grad_fn, CUDA)                                                          \
  X(dropout, pd_k_dropout_fn, CUDA)                                                                \
  X(dropout_grad, pd_k_dropout_grad_fn, CUDA)                                                      \
  X(copy_rows, pd_k_copy_rows_fn, CUDA)                                                            \
  X(adaptive_pool2d, pd_k_pool2d_fn, CUDA)                                                         \
  X(adaptive_pool2d_grad, pd_k_pool2d_grad_fn, CUDA)                                              \
  X(pad, pd_k_pad_fn, CUDA)                                                                        \
  X(pad_grad, pd_k_pad_grad_fn, CUDA)                                                              \
  X(interp2d, pd_k_interp2d_fn, CUDA)                                                              \
  X(interp2d_grad, pd_k_interp2d_grad_fn, CUDA)                                                    \
  X(grid_sample, pd_k_grid_sample_fn, CUDA)                                                        \
  X(grid_sample_grad, pd_k_grid_sample_grad_fn, CUDA)                                              \
  X(box_coder, pd_k_box_coder_fn, CUDA)                                                            \
  X(yolo_box, pd_k_yolo_box_fn, CUDA)

typedef struct pd_k_backend {
  const char *name; /* "cpu", "cuda" */
#define PD_K_FIELD_(name, type, cuda) type *name;
  PD_K_BACKEND_LIST(PD_K_FIELD_)
#undef PD_K_FIELD_
} pd_k_backend;

/* The CPU backend: every entry is set. A static table; never freed. */
const pd_k_backend *pd_k_cpu(void);

/* The same four recurrences composed of a backend's other entries, one step at a time
 * (kernels/rnn_steps.c: the rows gathered time-major by copy_rows, a GEMM and a cell entry a
 * step, the results scattered back): what a backend without kernels of its own puts in those
 * entries (the CUDA one), given its table, its memory and s->row where it computes. Same
 * contracts and arguments as the entries; a failure of alloc is PD_ENOMEM. */
typedef struct pd_k_steps_env {
  const pd_k_backend *k;                    /* the entries that compute the steps */
  const int64_t *row;                       /* s->row, readable where k computes */
  void *(*alloc)(size_t nbytes);            /* k's memory: scratch (NULL when out of it) */
  void (*release)(void *p);                 /* frees what alloc gave (NULL: nothing) */
  pd_status (*copy)(void *dst, const void *src, size_t nbytes);  /* within k's memory */
} pd_k_steps_env;
pd_status pd_k_lstm_seq_steps(const pd_k_steps_env *e, const pd_k_rnn_seq *s, const void *x,
                              const void *w, const void *h0, const void *c0, void *hidden,
                              void *cell, void *gate);
pd_status pd_k_lstm_seq_grad_steps(const pd_k_steps_env *e, const pd_k_rnn_seq *s,
                                   const void *w, const void *h0, const void *c0,
                                   const void *hidden, const void *cell, const void *gate,
                                   const void *dhidden, const void *dcell, void *dx, void *dw,
                                   void *dh0, void *dc0);
pd_status pd_k_gru_seq_steps(const pd_k_steps_env *e, const pd_k_rnn_seq *s, const void *x,
                             const void *w, const void *bias, const void *h0, void *hidden,
                             void *gate);
pd_status pd_k_gru_seq_grad_steps(const pd_k_steps_env *e, const pd_k_rnn_seq *s, const void *w,
                                  const void *h0, const void *hidden, const void *gate,
                                  const void *dhidden, void *dx, void *dw, void *db, void *dh0);

/* ---- Devices: the CUDA backend (kernels/cuda/, built with configure --with-cuda; a build
 * without it has these functions too, reporting that CUDA is absent: kernels/cuda/none.c).
 *
 * One GPU per process, driven from one thread at a time: every kernel, copy and cuBLAS call is
 * queued on one stream, in call order. Kernels are asynchronous: they return once queued, with
 * PD_OK when the arguments were valid and the launch succeeded; a failure while running shows
 * up at the next synchronizing call (pd_k_dev_sync, a download, ...). The calls that wait for
 * the stream are: pd_k_cuda_open, pd_k_dev_upload, pd_k_dev_download, pd_k_dev_sync,
 * pd_k_dev_trim, and the kernels that must read a device value to report an error the CPU
 * backend reports: cross_entropy, cross_entropy_grad, softmax_xent and softmax_xent_grad with
 * hard labels, gather_rows and scatter_add_rows (their ids) check every label/id on the device
 * and wait for the verdict, returning PD_EINVAL for one out of range as the CPU does
 * (scatter_add_rows checks before adding, so dst is untouched then; the others leave their
 * outputs unspecified). Scratch memory comes from the caching allocator (PD_ENOMEM when it
 * fails). Kernels return PD_ERUNTIME when a CUDA or cuBLAS call fails (pd_k_cuda_error() then
 * says which and why).
 *
 * Differences from the CPU backend, all within rounding: reductions, GEMMs (cuBLAS; no TF32),
 * softmax sums and the filter gradient sum in another order (fp32 sums and means still
 * accumulate in double); scatter_add_rows adds repeated ids with atomics, in no fixed order;
 * the device's exp/log/pow/tanh differ from glibc's by an ulp or two, and FMA contraction may
 * round a * b + c once instead of twice; gaussian's Box-Muller uses the device's log, sqrt,
 * sin and cos, so its values agree with the CPU's to a few ulp of double, not bit for bit.
 * Bit for bit the same as the CPU: uniform (both dtypes), fill, cast (but for NaN payloads),
 * compare, logical, transpose, concat, split, gather_rows, argmax, top_k, im2col, col2im (the
 * same additions in the same order), pooling and its gradient (idem), adaptive pooling and its
 * gradient (idem), dropout and its gradient, copy_rows. The element-wise losses agree within
 * rounding (the device's exp and log; their sums in another fixed order). fp32 kernels flush
 * denormals to zero (as the CPU after pd_k_init). top_k (a stable segmented sort) takes rows
 * of up to 2^31 - 1 elements (PD_EUNSUPPORTED beyond). ---- */
typedef enum pd_k_place { PD_K_HOST = 0, PD_K_CUDA = 1 } pd_k_place;

/* True when this pdlang was configured --with-cuda (a GPU may still be absent). */
bool pd_k_cuda_built(void);
/* Opens GPU `device` (0 = the first) for the process: sets the device, creates the stream and
 * the cuBLAS handle (bound to the stream; default math mode, no TF32, so fp32 GEMMs match the
 * CPU's), and runs a probe kernel (so a GPU this build has no code for fails here). fp32
 * kernels are compiled to flush denormals to zero. Idempotent for the same device; asking for
 * another device once one is open fails (PD_EINVAL). Fails with PD_EUNSUPPORTED and a message
 * in err when built without CUDA ("this pdlang was built without CUDA (configure
 * --with-cuda)"), when there is no device or no driver (the CUDA error string), when the
 * device index is out of range ("GPU 3 asked for, 1 found"), or when the build has no code for
 * the device's architecture. Synchronizes. */
pd_status pd_k_cuda_open(int device, pd_error *err);
bool pd_k_cuda_is_open(void);
/* "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"; "" when not open. */
const char *pd_k_cuda_device_name(void);
/* The CUDA backend: NULL until pd_k_cuda_open succeeded. Its entries take DEVICE pointers for
 * every buffer (host arrays of sizes, dims, axes, perm, and the xs/outs arrays of concat/split,
 * whose elements are device pointers, stay on the host); the entries PD_K_BACKEND_LIST marks
 * NO_CUDA are NULL (gemm_lp: the ops then multiply in fp32; the whole-sequence RNN entries are
 * kernels/rnn_steps.c's compositions of the GPU's GEMM and cell kernels). */
const pd_k_backend *pd_k_cuda(void);
/* Device memory through a caching allocator (training must not call cudaMalloc per step):
 * blocks are rounded up to a size class (512 bytes, then four classes per power of two);
 * freed blocks are kept by class and reused for the next request of that class; on a
 * cudaMalloc failure the cache is trimmed and the allocation retried once. NULL on failure
 * (message in pd_k_cuda_error()) or before pd_k_cuda_open; nbytes == 0 gives a distinct
 * minimal block. pd_k_dev_free(NULL) is a no-op; a freed block may be handed out again at
 * once: that is safe because all work runs in order on the one stream. pd_k_dev_trim waits
 * for the stream, then returns every cached block to CUDA. pd_k_dev_cached: bytes held in the
 * cache; pd_k_dev_live: bytes of blocks handed out (both by class size). Thread-safe. */
void *pd_k_dev_alloc(size_t nbytes);
void pd_k_dev_free(void *p);
void pd_k_dev_trim(void);
size_t pd_k_dev_cached(void);
size_t pd_k_dev_live(void);
/* Copies on the stream; upload and download wait for the copy (after the work queued before
 * it), so the host buffer may be reused and the downloaded data read on return. nbytes == 0
 * does nothing. PD_EINVAL before pd_k_cuda_open (PD_EUNSUPPORTED in a build without CUDA),
 * PD_ERUNTIME on a CUDA failure (including an earlier asynchronous one reported here). */
pd_status pd_k_dev_upload(void *dev, const void *host, size_t nbytes);
pd_status pd_k_dev_download(void *host, const void *dev, size_t nbytes);
pd_status pd_k_dev_copy(void *dst, const void *src, size_t nbytes);  /* device to device; async */
pd_status pd_k_dev_sync(void);   /* waits for queued work; reports an asynchronous failure */
/* Why the calling thread's latest call into the CUDA layer failed (a backend entry, open,
 * alloc, a copy, sync): "cublasSgemm: CUBLAS_STATUS_EXECUTION_FAILED", "cudaMalloc of 1024
 * bytes: out of memory ...", "cross_entropy: a label outside [0, 10) ..."; "" when that call
 * succeeded or failed only an argument check. Each of those calls clears it first, so read it
 * right after the call that failed. */
const char *pd_k_cuda_error(void);

/* ---- Process-wide set-up of the CPU backend. ----
 * pd_k_init sets flush-to-zero and denormals-are-zero (MXCSR) in the calling thread
 * (denormals make an RNN's backward pass ~15x slower), starts the kernels' thread pool
 * (kernels/cpu/pool.c), whose workers set the same mode when they start, and records the
 * threading configuration. Call it from the main thread before running kernels; threads
 * created later by that thread inherit its MXCSR (POSIX: the floating-point environment is
 * inherited). Idempotent and thread-safe. Without it, kernels run on the calling thread.
 *
 * Threads: PDLANG_THREADS (else OMP_NUM_THREADS, else the CPUs the process may run on), the
 * caller included. The pool runs every parallel kernel: elementwise kernels and reductions on
 * large arrays, GEMMs split into blocks of rows or columns, each computed by a one-thread
 * OpenBLAS call, convolutions split by images. OpenBLAS is set to one thread per call
 * (pd_k_threading.blas_threads is 1): two pools on the same cores fought (OpenBLAS's idle
 * workers yield-spin while the other pool's kernels run; LeNet training spent ~15% of its time
 * in sched_yield), and every GEMM then runs on a thread with FTZ/DAZ set.
 *
 * Waiting: idle workers spin briefly, then sleep; a worker that finds itself preempted (more
 * runnable threads than cores) stops spinning for a while; and a job's caller never waits for
 * a worker that has not started (pool.c). Measured on 2 cores (bench/bench_rnn step 256): an
 * OpenMP pool with passive waiting made an RNN training step slower on two threads than on
 * one (43 ms against 31), spinning made it 19 ms on an idle machine and 57 ms next to one busy
 * process, where passive waiting gave 33. */
typedef struct pd_k_threading {
  int threads;            /* threads the kernels run on, the caller included */
  int cpus;               /* CPUs the process may run on (its affinity mask) */
  int blas_threads;       /* threads of OpenBLAS's own pool per call (1 after pd_k_init) */
  bool ftz_daz;           /* flush-to-zero and denormals-are-zero are on (x86 SSE only) */
} pd_k_threading;

void pd_k_init(void);
/* The configuration pd_k_init recorded (all false/0 before pd_k_init). */
pd_k_threading pd_k_threading_info(void);
/* Sets the calling thread's FTZ/DAZ bits: for threads a program creates itself before
 * pd_k_init or from another thread. Returns false where the CPU has no such mode. */
bool pd_k_set_ftz_daz(void);
/* Independent host work of an op side by side on the CPU pool's threads: fn(ctx, i) for each i
 * in [0, n), each part on whichever thread is free (the caller's included), the kernels a part
 * calls on that thread alone; returns when every part has run. For work no kernel splits well:
 * a bidirectional RNN's two directions, each a chain of steps too small to share. */
typedef void pd_k_part_fn(void *ctx, int i);
void pd_k_host_parts(int n, pd_k_part_fn *fn, void *ctx);

/* For a library inside someone else's program (api/): pd_k_init_threads is pd_k_init without
 * touching the calling thread's floating-point mode (it starts the pool, whose workers set
 * FTZ/DAZ, and sets OpenBLAS to one thread per call; idempotent, thread-safe). Around each
 * call that runs kernels, pd_k_fp_enter sets FTZ/DAZ on the calling thread and returns the
 * mode it found, which pd_k_fp_leave puts back, so that the host program's own arithmetic
 * keeps its denormals. */
typedef struct pd_k_fpmode {
  unsigned bits;
  bool saved;  /* false where there is no such mode (nothing to restore) */
} pd_k_fpmode;
void pd_k_init_threads(void);
pd_k_fpmode pd_k_fp_enter(void);
void pd_k_fp_leave(pd_k_fpmode m);

#endif /* PD_KERNELS_H */
