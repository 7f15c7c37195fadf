/* reduce.c -- sum/mean/max/min over any set of axes, and their gradients; running sums
 * (cumsum). The shape is first coalesced into alternating groups of kept and reduced dims;
 * [.., r] and [k1, r, k2] layouts get cache-friendly loops, anything else a generic odometer
 * (reduce_t.h holds the typed code). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <math.h>
#include <string.h>

#define MAX_CHUNKS 64  /* partial sums of a full reduction */
#define COL_BLOCK 64   /* accumulators per column block of a [k1, r, k2] reduction */
#define ROWS_SCRATCH ((int64_t)1 << 20)  /* bytes of partial results of a row-chunked one */

/* The reduction's layout after dropping size-1 dims and merging neighbours of one kind. */
typedef struct reduce_job {
  pd_k_redop op;
  const void *x;
  void *out;
  int64_t k, r;             /* kept and reduced element counts */
  int64_t k1, k2;           /* [k1, r, k2] layout when k2 > 1 (one reduced group), else k2 = 1 */
  int nk, nr;               /* kept and reduced groups, outermost first */
  int64_t kdims[PD_K_MAX_DIMS], kstr[PD_K_MAX_DIMS];  /* x strides of the groups */
  int64_t rdims[PD_K_MAX_DIMS], rstr[PD_K_MAX_DIMS];
} reduce_job;

/* Split a loop whose items each cost `cost` elements so a thread gets about a grain. */
static int64_t grain_for(int64_t cost) {
  return cost >= PD_KCPU_GRAIN ? 1 : PD_KCPU_GRAIN / (cost > 0 ? cost : 1);
}

/* acc[j] += the column sums of w columns of `rows` rows at stride ld, in the scalar loop's
 * order, where an instance with vectors exists (fp32 on AVX2: fastmath_avx2.c); false: the
 * template's loop does it. */
static bool colsum_simd_f32(const float *x, int64_t rows, int64_t ld, int64_t w, double *acc) {
#if PD_KCPU_FASTMATH_f32 && PD_KCPU_HAVE_AVX2
  if (pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2) {
    pd_kcpu_colsum8_f32(x, rows, ld, w, acc);
    return true;
  }
#else
  PD_UNUSED(x);
  PD_UNUSED(rows);
  PD_UNUSED(ld);
  PD_UNUSED(w);
  PD_UNUSED(acc);
#endif
  return false;
}
#define colsum_simd_f64(x, rows, ld, w, acc) false
#define colsum_simd_i32(x, rows, ld, w, acc) false
#define colsum_simd_i64(x, rows, ld, w, acc) false

#define PD_KCPU_TEMPLATE "kernels/cpu/reduce_t.h"
#include "kernels/cpu/each_type.h"

pd_status pd_kcpu_reduce(pd_k_redop op, pd_dtype dt, int nd, const int64_t *dims,
                         const void *x, int naxes, const int *axes, void *out) {
  if ((unsigned)op >= PD_K_REDOP_COUNT_) return PD_EINVAL;
  bool is_float = pd_dtype_is_kernel_float(dt);
  if (!is_float && (op == PD_K_RMEAN || (dt != PD_INT32 && dt != PD_INT64)))
    return PD_EUNSUPPORTED;
  bool red[PD_K_MAX_DIMS];
  pd_status st = pd_k_reduced_mask(nd, dims, naxes, axes, red);
  if (st) return st;

  reduce_job job = {.op = op, .x = x, .out = out, .k = 1, .r = 1, .k1 = 1, .k2 = 1};
  bool prev_red = false;
  int ng = 0;
  for (int d = 0; d < nd; d++) {
    if (red[d]) job.r *= dims[d];
    else job.k *= dims[d];
  }
  if (job.k == 0) return PD_OK;  /* nothing to write */
  if (job.r == 0) {  /* reducing zero elements */
    if (op == PD_K_RMAX || op == PD_K_RMIN) return PD_EINVAL;
    return pd_kcpu_fill(dt, job.k, out, op == PD_K_RMEAN ? NAN : 0.0);
  }
  /* Group the dims, innermost first, with x strides. */
  int64_t stride = 1;
  int64_t gdims[PD_K_MAX_DIMS], gstr[PD_K_MAX_DIMS];
  bool gred[PD_K_MAX_DIMS];
  for (int d = nd - 1; d >= 0; d--) {
    if (dims[d] == 1) continue;
    if (ng > 0 && prev_red == red[d]) {
      gdims[ng - 1] *= dims[d];
    } else {
      gdims[ng] = dims[d];
      gstr[ng] = stride;
      gred[ng] = red[d];
      ng++;
    }
    prev_red = red[d];
    stride *= dims[d];
  }
  /* Outermost first, split into kept and reduced lists. */
  for (int g = ng - 1; g >= 0; g--) {
    if (gred[g]) {
      job.rdims[job.nr] = gdims[g];
      job.rstr[job.nr++] = gstr[g];
    } else {
      job.kdims[job.nk] = gdims[g];
      job.kstr[job.nk++] = gstr[g];
    }
  }
  if (job.nr == 0) {  /* every reduced dim has size 1 */
    job.rdims[0] = 1;
    job.rstr[0] = 1;
    job.nr = 1;
  }
  /* [k1, r, k2]: one reduced group with kept dims inside it. */
  if (ng >= 2 && !gred[0] && job.nr == 1 && (ng == 2 || (ng == 3 && !gred[2]))) {
    job.k2 = gdims[0];
    job.k1 = job.k / job.k2;
  }
  switch (dt) {
    case PD_FP32: reduce_f32(&job); break;
    case PD_FP64: reduce_f64(&job); break;
    case PD_INT32: reduce_i32(&job); break;
    default: reduce_i64(&job); break;
  }
  return PD_OK;
}

pd_status pd_kcpu_reduce_grad(pd_k_redop op, pd_dtype dt, int nd, const int64_t *dims,
                              const void *x, const void *out, const void *dout, int naxes,
                              const int *axes, void *dx) {
  if ((unsigned)op >= PD_K_REDOP_COUNT_) return PD_EINVAL;
  pd_kcpu_loop_fn *loop;
  bool extreme = op == PD_K_RMAX || op == PD_K_RMIN;
  switch (dt) {
    case PD_FP32: loop = extreme ? grad_extreme_f32 : grad_sum_f32; break;
    case PD_FP64: loop = extreme ? grad_extreme_f64 : grad_sum_f64; break;
    default: return PD_EUNSUPPORTED;
  }
  bool red[PD_K_MAX_DIMS];
  pd_status st = pd_k_reduced_mask(nd, dims, naxes, axes, red);
  if (st) return st;
  if (extreme && (!x || !out)) return PD_EINVAL;
  int64_t odims[PD_K_MAX_DIMS], s[4][PD_K_MAX_DIMS], count = 1;
  for (int d = 0; d < nd; d++) {
    odims[d] = red[d] ? 1 : dims[d];
    if (red[d]) count *= dims[d];
  }
  pd_k_contig_strides(nd, dims, s[0]);
  pd_k_contig_strides(nd, dims, s[1]);
  pd_k_contig_strides(nd, odims, s[2]);
  for (int d = 0; d < nd; d++) {
    if (red[d]) s[2][d] = 0;
    s[3][d] = s[2][d];
  }
  size_t sz = pd_dtype_size(dt), sizes[4] = {sz, sz, sz, sz};
  pd_kcpu_iter it;
  pd_kcpu_iter_init(&it, nd, dims, 4, (const int64_t(*)[PD_K_MAX_DIMS])s, sizes);
  double inv = 1.0 / (double)count;
  void *base[4] = {dx, (void *)x, (void *)out, (void *)dout};
  pd_kcpu_iter_run(&it, base, loop, op == PD_K_RMEAN ? &inv : NULL, true, PD_KCPU_GRAIN);
  return PD_OK;
}

/* ---- cumsum: one lane (p, q) of [pre, n, post] per item. ---- */
typedef struct cumsum_job {
  const void *x;
  void *out;
  int64_t n, post;
  bool exclusive, reverse;
} cumsum_job;

/* Floats add in double; integers in uint64_t through int64_t (wrapping, no signed overflow). */
#define CUMSUM_RANGE(NAME, T, ACC, IN)                                               \
  static void NAME(void *vjob, int64_t b, int64_t e) {                             \
    const cumsum_job *j = vjob;                                                     \
    for (int64_t lane = b; lane < e; lane++) {                                      \
      int64_t p = lane / j->post, q = lane % j->post;                               \
      const T *x = (const T *)j->x + p * j->n * j->post + q;                        \
      T *o = (T *)j->out + p * j->n * j->post + q;                                  \
      ACC acc = 0;                                                                  \
      for (int64_t k = 0; k < j->n; k++) {                                          \
        int64_t i = (j->reverse ? j->n - 1 - k : k) * j->post;                      \
        ACC v = (ACC)(IN)x[i];                                                      \
        if (j->exclusive) o[i] = (T)(IN)acc;                                        \
        acc += v;                                                                   \
        if (!j->exclusive) o[i] = (T)(IN)acc;                                       \
      }                                                                             \
    }                                                                               \
  }
CUMSUM_RANGE(cumsum_f32, float, double, double)
CUMSUM_RANGE(cumsum_f64, double, double, double)
CUMSUM_RANGE(cumsum_i32, int32_t, uint64_t, int64_t)
CUMSUM_RANGE(cumsum_i64, int64_t, uint64_t, int64_t)
#undef CUMSUM_RANGE

pd_status pd_kcpu_cumsum(pd_dtype dt, int64_t pre, int64_t n, int64_t post, bool exclusive,
                         bool reverse, const void *x, void *out) {
  pd_kcpu_range_fn *fn = dt == PD_FP32   ? cumsum_f32
                         : dt == PD_FP64 ? cumsum_f64
                         : dt == PD_INT32 ? cumsum_i32
                         : dt == PD_INT64 ? cumsum_i64
                                          : NULL;
  if (!fn) return PD_EUNSUPPORTED;
  pd_status st = pd_k_slices_check(pre, n, post);
  if (st) return st;
  cumsum_job job = {.x = x, .out = out, .n = n, .post = post, .exclusive = exclusive,
                    .reverse = reverse};
  pd_kcpu_parallel(pre * post, grain_for(n), fn, &job);
  return PD_OK;
}
