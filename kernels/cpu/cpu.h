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

/* gemm.c: one product on the calling thread (a part's), as the gemm entry computes it (the same
 * checks passed): C = alpha op(A) op(B) + beta C, or with bias (a row of n at C's first column;
 * beta then ignored) C = alpha op(A) op(B) + bias on every row. fp32 or fp64. */
pd_status pd_kcpu_gemm_one(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                           int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                           int64_t ldb, double beta, void *c, int64_t ldc, const void *bias);

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

/* conv_avx512.c, for conv.c on AVX-512F CPUs (pd_kcpu_simd), where fastmath.h's
 * PD_KCPU_HAVE_AVX512 and PD_KCPU_FASTMATH_f32 are set: the depthwise convolution (groups =
 * input channels) of output plane `plane` (an (image, channel) pair) of y, fp32, stride_w 1 or
 * 2, filters up to 16 wide, any stride_h, paddings and dilations (pd_kcpu_depthwise16_takes
 * says whether p is one), with the epilogue e (fastmath.h: its rbias per channel, its residual
 * shaped as y; NULL: none). */
bool pd_kcpu_depthwise16_takes(const pd_k_conv2d *p);
struct pd_kcpu_epi16;
void pd_kcpu_depthwise16_f32(const pd_k_conv2d *p, const float *x, const float *w, int64_t plane,
                             float *y, const struct pd_kcpu_epi16 *e);
/* The same, output rows [y0, y1) of the plane only (0 <= y0 <= y1 <= oh). */
void pd_kcpu_depthwise16_rows_f32(const pd_k_conv2d *p, const float *x, const float *w,
                                  int64_t plane, float *y, const struct pd_kcpu_epi16 *e,
                                  int64_t y0, int64_t y1);

/* y[q] = the mean of plane q of x (n floats a plane, planes of them; AVX-512F):
 * adaptive_pool_t.h's plane_mean, the same bits. */
void pd_kcpu_plane_means16_f32(const float *x, int64_t n, int64_t planes, float *y);
/* 2x2 average pooling at stride 2 of one plane x [h, w] into y [oh, ow] (2 oh <= h, 2 ow <= w;
 * AVX-512F): pool2d_t.h's pool_2x2, the same bits. */
void pd_kcpu_avgpool2x2_16_plane_f32(const pd_k_pool2d *p, const float *x, float *y);
/* Max pooling of one plane x [h, w] into y [oh, ow] (AVX-512F; stride across 1 or 2: _takes),
 * with row (w floats) the caller's scratch; conv_t.h's results, NaN included. */
bool pd_kcpu_maxpool16_takes(const pd_k_pool2d *p);
void pd_kcpu_maxpool16_plane_f32(const pd_k_pool2d *p, const float *x, float *y, float *row);
/* conv.c's column panels (32 columns, kdim rows each, one after another from pack) of output
 * pixels [j0, j1) of one group of an image (img at the group's first channel), the last panel's
 * missing columns 0, for stride 1 or 2 across and a filter at most 16 wide (AVX-512F). */
void pd_kcpu_im2col_small_f32(const pd_k_conv2d *p, const float *img, int64_t j0, int64_t j1,
                              float *pack);
/* y[f ldy + p] = e's act(t[p ldt + f] + rbias[f] + res[f ldres + p]) for f < nf, p < np (e NULL:
 * the values as they are): conv.c's transposed products (pixels by filters)
 * turned into the output's rows (AVX-512F). */
void pd_kcpu_untranspose16_f32(int64_t np, int64_t nf, const float *t, int64_t ldt, float *y,
                               int64_t ldy, const struct pd_kcpu_epi16 *e);
/* d[u] = s[2 u] for u < n, reading s[0] to s[2 n - 2] only (AVX-512F). */
void pd_kcpu_copy_evens_f32(float *d, const float *s, int64_t n);

/* The operands of output plane `plane` of a depthwise convolution (image n = plane / oc,
 * channel oc = plane % oc) as both SIMD versions address them (conv.c): the input channel, the
 * filter, the output plane, the epilogue's bias of the channel (0: none) and residual plane
 * (NULL: none), and kw 3 or 5 where the unrolled widths apply (dilation 1), else 0. The
 * pointers point into the caller's arrays. */
typedef struct {
  const float *x, *w, *res;
  float *y;
  float bias;
  int kw;
} pd_kcpu_dw_plane;
pd_kcpu_dw_plane pd_kcpu_dw_plane_of(const pd_k_conv2d *p, const float *x, const float *w,
                                     int64_t plane, float *y, const struct pd_kcpu_epi16 *e);

/* conv_avx2.c, for conv.c on CPUs whose best level is AVX2 (pd_kcpu_simd; fastmath.h's
 * PD_KCPU_HAVE_AVX2 and PD_KCPU_FASTMATH_f32 set): the same depthwise convolution as
 * pd_kcpu_depthwise16_f32, eight columns a vector, the same sums; and the epilogue of one row
 * of a convolution's output (fastmath.h's PD_KCPU_EPI_* activation act with parameters pp):
 * r[j] = act(r[j] + b + q[j]) for j < len (q NULL: no residual). */
bool pd_kcpu_depthwise8_takes(const pd_k_conv2d *p);
void pd_kcpu_depthwise8_f32(const pd_k_conv2d *p, const float *x, const float *w, int64_t plane,
                            float *y, const struct pd_kcpu_epi16 *e);
void pd_kcpu_epi_row8_f32(int act, const float pp[4], float *r, float b, const float *q,
                          int64_t len);
/* The same depthwise convolution eight planes at a time with the channels in the vector lanes,
 * the same sums, where it takes p (one filter a channel, at least 8, KxK 3 or 5, no dilation,
 * stride 1 or 2 across): output planes [plane, plane + 8) of one image (plane % oc + 8 <= oc),
 * working in scratch, pd_kcpu_depthwise8_lanes_floats(p) floats the caller owns. */
bool pd_kcpu_depthwise8_lanes_takes(const pd_k_conv2d *p);
size_t pd_kcpu_depthwise8_lanes_floats(const pd_k_conv2d *p);
void pd_kcpu_depthwise8_lanes_f32(const pd_k_conv2d *p, const float *x, const float *w,
                                  int64_t plane, float *y, const struct pd_kcpu_epi16 *e,
                                  float *scratch);
/* The same at sixteen lanes (conv_avx512.c, AVX-512F): planes [plane, plane + 16) of one image
 * (plane % oc + 16 <= oc), at least 16 channels, stride 1 across (2 for 5x5 filters). */
bool pd_kcpu_depthwise16_lanes_takes(const pd_k_conv2d *p);
size_t pd_kcpu_depthwise16_lanes_floats(const pd_k_conv2d *p);
void pd_kcpu_depthwise16_lanes_f32(const pd_k_conv2d *p, const float *x, const float *w,
                                   int64_t plane, float *y, const struct pd_kcpu_epi16 *e,
                                   float *scratch);
/* gemm_avx2.c, under the same conditions: C = A B for a 1x1 convolution, A [m, k] (row stride
 * lda), B [k, n] read in place (ldb), C [m, n] (ldc), each element through the epilogue e
 * (fastmath.h: cbias per column, rbias per row of C, res with row stride ldres, act; NULL:
 * none) as it is stored (res may be C itself: each element is read before it is written, so
 * C += A B); false, nothing written, when there is no memory for a panel of B (K past 512). */
bool pd_kcpu_gemm8_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float *c, int64_t ldc,
                           const struct pd_kcpu_epi16 *e);
/* The same C = A B^T, bt = B^T [n, k] (row stride ldbt) copied into the panels. */
bool pd_kcpu_gemm8t_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                            const float *bt, int64_t ldbt, float *c, int64_t ldc,
                            const struct pd_kcpu_epi16 *e);
/* The same product with B already in panels of 16 columns (k rows of 16 floats a panel, panel
 * after panel, the last padded: conv.c's im2col_panels makes them), n its columns: a KxK
 * convolution's column matrix, made a block of panels at a time so that it stays in the cache.
 * And C [m, n] = A [m, k] B^T (B [n, k], both read along k, each row of B once: a 1x1
 * convolution of one-pixel maps, the images times the filters, as gemm_avx512.c's
 * pd_kcpu_gemm_nt16_f32). */
#define PD_KCPU_GEMM8_NR 16
void pd_kcpu_gemm8p_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                            const float *pack, float *c, int64_t ldc,
                            const struct pd_kcpu_epi16 *e);
void pd_kcpu_gemm_nt8_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                          const float *b, int64_t ldb, float *c, int64_t ldc);
/* B [k, n] (row stride ldb) into those panels: (n + 15) / 16 * 16 * k floats at pack. And
 * pd_kcpu_gemm8p_epi_f32's product with A's rows a block at a time (192 KB of them) against
 * every panel, so that A stays in L2 when it is larger than that: the product of an fc layer
 * whose weights were packed once (gemm.c's gemm_const_b), whose epilogue's cbias is the layer's
 * bias per column. */
void pd_kcpu_gemm8_pack_f32(int64_t k, int64_t n, const float *b, int64_t ldb, float *pack);
void pd_kcpu_gemm8p_rows_epi_f32(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                 const float *pack, float *c, int64_t ldc,
                                 const struct pd_kcpu_epi16 *e);

/* conv_wino.c, under the same conditions: a 3x3 convolution at stride 1 (one group, no
 * dilation) as Winograd's F(2x2, 3x3), whose tiles are the 2x2 blocks of output (th = (oh + 1)
 * / 2 rows of tw = (ow + 1) / 2): U [16][oc][c] from the filters [o0, o1); V [16][c][nb] of
 * image xn's tile rows [ty0, ty1) (tile (ty, tx) at column (ty - ty0) tw + tx), channels
 * [c0, c1), each V[xi] in panels of pw columns as gemm16p's and gemm8p's (c rows of pw floats a
 * panel; the last panel's columns past nb not written: the caller clears the buffer once, the
 * products of those columns are not stored), V[xi + 1] pd_kcpu_wino_vstride floats after
 * V[xi]; and from the products M [16][oc][nb] = U V, the outputs of those tile rows, filters
 * [o0, o1), written into image yn (no epilogue). */
/* V's floats a point: its panels, and a line more, so that the points of a channel's tiles are
 * not all 4 KiB apart (with 96 channels, the panels are 12 KiB: the input transform's sixteen
 * stores of a tile fell in one set of L1 and ran 1.8x slower). */
static inline int64_t pd_kcpu_wino_vstride(int64_t c, int64_t nb, int64_t pw) {
  return c * ((nb + pw - 1) / pw * pw) + 16;
}
void pd_kcpu_wino8_filter(const pd_k_conv2d *p, const float *w, float *u, int64_t o0,
                          int64_t o1);
void pd_kcpu_wino8_input(const pd_k_conv2d *p, const float *xn, int64_t ty0, int64_t ty1,
                         int64_t c0, int64_t c1, float *v, int64_t nb, int64_t pw);
void pd_kcpu_wino8_output(const pd_k_conv2d *p, const float *m, int64_t nb, int64_t ty0,
                          int64_t ty1, int64_t o0, int64_t o1, float *yn);
/* The same as F(4x4, 3x3) on AVX-512F CPUs: tiles of 4x4 outputs (th = (oh + 3) / 4 rows of tw
 * = (ow + 3) / 4), 36 points (U [36][oc][c], V [36][c][nb] in panels of PD_KCPU_GEMM16_NR, M
 * [36][oc][nb]). */
void pd_kcpu_wino4_filter(const pd_k_conv2d *p, const float *w, float *u, int64_t o0,
                          int64_t o1);
void pd_kcpu_wino4_input(const pd_k_conv2d *p, const float *xn, int64_t ty0, int64_t ty1,
                         int64_t c0, int64_t c1, float *v, int64_t nb);
void pd_kcpu_wino4_output(const pd_k_conv2d *p, const float *m, int64_t nb, int64_t ty0,
                          int64_t ty1, int64_t o0, int64_t o1, float *yn);

/* conv_wino.c's driver: the tile side (4: F(4x4, 3x3); 2: F(2x2, 3x3); 0: neither) p takes in
 * dt on this CPU, and p computed so into y with conv.c's epilogue ep (NULL: none), its U kept in
 * *prep (conv2d_fused's prepared slot; prep NULL: made and freed each call). Built on AVX-512
 * compilers only (PD_KCPU_HAVE_AVX512 && PD_KCPU_FASTMATH_f32). */
int pd_kcpu_wino_tile(pd_dtype dt, const pd_k_conv2d *p);
pd_status pd_kcpu_wino_conv(const pd_k_conv2d *p, int tile, const pd_k_conv_epilogue *ep,
                            const float *x, const float *w, float *y, pd_k_prepared **prep);
/* conv.c: the epilogue (kernels.h) on channels [c0, c1) of image n of y, columns [j0, j1) of
 * each output plane, run by the thread that just wrote them. */
void pd_kcpu_conv_epilogue(pd_dtype dt, const pd_k_conv2d *p, const pd_k_conv_epilogue *ep,
                           void *y, int64_t n, int64_t c0, int64_t c1, int64_t j0, int64_t j1);

/* conv_avx512.c, under the same conditions: a convolution of at most 4 input channels (one
 * group, filters up to 16x16, stride 1 or 2 across, no dilation across: an image's first layer)
 * computed directly, sixteen output pixels a vector and the sums of up to sixteen filters in
 * registers. The filters first packed (pd_kcpu_conv_fewc16_packed_floats floats the caller
 * owns), then row oy of image n's output, every filter, through e (rbias the bias [oc], res the
 * whole residual, as y; NULL: none). */
bool pd_kcpu_conv_fewc16_takes(const pd_k_conv2d *p);
int64_t pd_kcpu_conv_fewc16_packed_floats(const pd_k_conv2d *p);
void pd_kcpu_conv_fewc16_pack(const pd_k_conv2d *p, const float *w, float *packed);
void pd_kcpu_conv_fewc16_row_f32(const pd_k_conv2d *p, const float *x, const float *packed,
                                 int64_t n, int64_t oy, float *y, const struct pd_kcpu_epi16 *e);

/* conv_avx512.c, under the same conditions: the data gradient of a convolution whose kernel is
 * its stride, 2x2 (pd_kcpu_unstride2_takes: one group, no padding or dilation, dx exactly twice
 * dy's size), which is also the transposed convolution of upsampling heads (DB's, U-Net's):
 * dx[n][c][2i + a][2j + b] = sum over o of dy[n][o][i][j] w[o][c][a][b], each element written
 * once (no column matrix, no clearing, no scatter). conv.c's driver copies row i of dy's every
 * channel side by side into rows [oc, ow] and has row y = 2i + a of dxn (image n's dx), every
 * channel, made by pd_kcpu_unstride2_row16_f32 (AVX-512) or pd_kcpu_unstride2_row8_f32
 * (conv_avx2.c's, eight columns of dy a vector). */
bool pd_kcpu_unstride2_takes(const pd_k_conv2d *p);
void pd_kcpu_unstride2_row16_f32(const pd_k_conv2d *p, const float *w, const float *rows,
                                 float *dxn, int64_t y);
void pd_kcpu_unstride2_row8_f32(const pd_k_conv2d *p, const float *w, const float *rows,
                                float *dxn, int64_t y);

/* ---- The CPU kernels: pd_kcpu_<name> for every entry of PD_K_BACKEND_LIST (kernels.h has
 * their contracts; the file is the entry's family: elementwise.c, reduce.c, conv.c, ...). ---- */
#define PD_KCPU_DECL_(name, type, cuda) type pd_kcpu_##name;
PD_K_BACKEND_LIST(PD_KCPU_DECL_)
#undef PD_KCPU_DECL_

#endif /* PD_KERNELS_CPU_H */
