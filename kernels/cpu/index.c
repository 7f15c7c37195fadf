/* index.c -- kernels that move or select elements: argmax, top_k, cast, fill, transpose,
 * concat/split, embedding gather and its scatter-add gradient. */
#include "config.h"
#include "kernels/cpu/cpu.h"

#include <math.h>
#include <string.h>

typedef struct arg_job {
  const void *x;
  void *values;
  int64_t *idx;
  int64_t pre, n, post, k;
  bool smallest; /* the minimum / the k smallest (kernels.h) */
} arg_job;

#define PD_KCPU_TEMPLATE "kernels/cpu/index_t.h"
#include "kernels/cpu/each_type.h"

pd_status pd_kcpu_argmax(pd_dtype dt, int64_t pre, int64_t n, int64_t post, bool smallest,
                         const void *x, int64_t *out) {
  int64_t sizes[] = {pre, n, post};
  if (pre < 0 || n < 1 || post < 0 || pd_k_numel(3, sizes) < 0) return PD_EINVAL;
  arg_job job = {.x = x, .idx = out, .pre = pre, .n = n, .post = post, .smallest = smallest};
  switch (dt) {
    case PD_FP32: argmax_f32(&job); return PD_OK;
    case PD_FP64: argmax_f64(&job); return PD_OK;
    case PD_INT32: argmax_i32(&job); return PD_OK;
    case PD_INT64: argmax_i64(&job); return PD_OK;
    default: return PD_EUNSUPPORTED;
  }
}

pd_status pd_kcpu_top_k(pd_dtype dt, int64_t rows, int64_t n, int64_t k, bool smallest,
                        const void *x, void *values, int64_t *indices) {
  int64_t sizes[] = {rows, n};
  if (rows < 0 || k < 1 || k > n || pd_k_numel(2, sizes) < 0) return PD_EINVAL;
  pd_kcpu_range_fn *fn;
  switch (dt) {
    case PD_FP32: fn = top_k_range_f32; break;
    case PD_FP64: fn = top_k_range_f64; break;
    case PD_INT32: fn = top_k_range_i32; break;
    case PD_INT64: fn = top_k_range_i64; break;
    default: return PD_EUNSUPPORTED;
  }
  arg_job job = {.x = x, .values = values, .idx = indices, .n = n, .k = k, .smallest = smallest};
  int64_t grain = n >= PD_KCPU_GRAIN ? 1 : PD_KCPU_GRAIN / n;
  pd_kcpu_parallel(rows, grain, fn, &job);
  return PD_OK;
}

/* ---- cast: one loop per (source, destination) pair. The destination decides how a value
 * converts (_Generic on the source value's type): float to integer truncates and saturates,
 * NaN gives 0; integer to integer wraps (as C on gcc/clang); anything to bool is != 0. ---- */
static int32_t f_to_i32(double v) {
  if (isnan(v)) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;
}
static int64_t f_to_i64(double v) {
  if (isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;  /* the double 2^63 */
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}
static int32_t i_to_i32(int64_t v) { return (int32_t)v; }
static int64_t i_to_i64(int64_t v) { return v; }
#define TO_I32(v) _Generic((v), float: f_to_i32, double: f_to_i32, default: i_to_i32)(v)
#define TO_I64(v) _Generic((v), float: f_to_i64, double: f_to_i64, default: i_to_i64)(v)

#define CAST_LOOP(S, D, EXPR)                           \
  do {                                                  \
    const S *s_ = src;                                  \
    D *d_ = dst;                                        \
    for (int64_t i = 0; i < n; i++) {                   \
      S v = s_[i];                                      \
      d_[i] = (EXPR);                                   \
    }                                                   \
  } while (0)

/* Convert n values of C type S (bools are read as 0/1, 16-bit floats as their value, through
 * NORM) to dst_dt. To fp16 and bf16 through fp32 (from fp64 or int64: rounded twice). */
#define CAST_FROM(S, NORM)                                                               \
  switch (dst_dt) {                                                                      \
    case PD_BOOL: CAST_LOOP(S, uint8_t, NORM(v) != 0); return PD_OK;                     \
    case PD_INT32: CAST_LOOP(S, int32_t, TO_I32(NORM(v))); return PD_OK;                 \
    case PD_INT64: CAST_LOOP(S, int64_t, TO_I64(NORM(v))); return PD_OK;                 \
    case PD_FP32: CAST_LOOP(S, float, (float)NORM(v)); return PD_OK;                     \
    case PD_FP64: CAST_LOOP(S, double, (double)NORM(v)); return PD_OK;                   \
    case PD_FP16: CAST_LOOP(S, uint16_t, pd_fp16_from_f32((float)NORM(v))); return PD_OK; \
    case PD_BF16: CAST_LOOP(S, uint16_t, pd_bf16_from_f32((float)NORM(v))); return PD_OK; \
    default: return PD_EUNSUPPORTED;                                                     \
  }

#define AS_IS(v) (v)
#define AS_BIT(v) ((int64_t)((v) != 0))
#define AS_FP16(v) pd_fp16_to_f32(v)
#define AS_BF16(v) pd_bf16_to_f32(v)

pd_status pd_kcpu_cast(pd_dtype src_dt, const void *src, pd_dtype dst_dt, void *dst,
                       int64_t n) {
  if (n < 0) return PD_EINVAL;
  switch (src_dt) {
    case PD_BOOL: CAST_FROM(uint8_t, AS_BIT)
    case PD_INT32: CAST_FROM(int32_t, AS_IS)
    case PD_INT64: CAST_FROM(int64_t, AS_IS)
    case PD_FP32: CAST_FROM(float, AS_IS)
    case PD_FP64: CAST_FROM(double, AS_IS)
    case PD_FP16: CAST_FROM(uint16_t, AS_FP16)
    case PD_BF16: CAST_FROM(uint16_t, AS_BF16)
    default: return PD_EUNSUPPORTED;
  }
}

pd_status pd_kcpu_fill(pd_dtype dt, int64_t n, void *out, double value) {
  if (n < 0) return PD_EINVAL;
  union {
    uint8_t b;
    uint16_t h;
    uint32_t w;
    uint64_t q;
  } one;
  pd_status st = pd_kcpu_cast(PD_FP64, &value, dt, &one, 1);
  if (st) return st;
  /* Replicate the converted element's bytes. */
  switch (pd_dtype_size(dt)) {
    case 1: if (n) memset(out, one.b, (size_t)n); break;
    case 2: for (int64_t i = 0; i < n; i++) ((uint16_t *)out)[i] = one.h; break;
    case 4: for (int64_t i = 0; i < n; i++) ((uint32_t *)out)[i] = one.w; break;
    default: for (int64_t i = 0; i < n; i++) ((uint64_t *)out)[i] = one.q; break;
  }
  return PD_OK;
}

/* ---- transpose: the iterator walks the output in order and gathers from x through the
 * permuted strides; merged dims make a no-op permutation one memcpy-like run. ---- */
#define COPY_LOOP(W)                                                                  \
  static void copy_##W(char *const *p, const int64_t *s, int64_t n, const void *arg) { \
    PD_UNUSED(arg);                                                                   \
    uint##W##_t *o = (uint##W##_t *)p[0];                                             \
    const uint##W##_t *x = (const uint##W##_t *)p[1];                                 \
    if (s[1] == 1) {                                                                  \
      memcpy(o, x, (size_t)n * sizeof *o);                                            \
    } else {                                                                          \
      for (int64_t j = 0; j < n; j++) o[j] = x[j * s[1]];                             \
    }                                                                                 \
  }
COPY_LOOP(8)
COPY_LOOP(16)
COPY_LOOP(32)
COPY_LOOP(64)

pd_status pd_kcpu_transpose(pd_dtype dt, int nd, const int64_t *dims, const int *perm,
                            const void *x, void *out) {
  size_t sz = pd_dtype_size(dt);
  pd_kcpu_loop_fn *loop;
  switch (sz) {
    case 1: loop = copy_8; break;
    case 2: loop = copy_16; break;
    case 4: loop = copy_32; break;
    case 8: loop = copy_64; break;
    default: return PD_EUNSUPPORTED;
  }
  if (nd < 0 || nd > PD_K_MAX_DIMS || pd_k_numel(nd, dims) < 0) return PD_EINVAL;
  bool seen[PD_K_MAX_DIMS] = {false};
  int64_t xs[PD_K_MAX_DIMS], od[PD_K_MAX_DIMS], s[2][PD_K_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    if (perm[i] < 0 || perm[i] >= nd || seen[perm[i]]) return PD_EINVAL;
    seen[perm[i]] = true;
  }
  pd_k_contig_strides(nd, dims, xs);
  for (int i = 0; i < nd; i++) {
    od[i] = dims[perm[i]];
    s[1][i] = xs[perm[i]];
  }
  pd_k_contig_strides(nd, od, s[0]);
  size_t sizes[2] = {sz, sz};
  pd_kcpu_iter it;
  pd_kcpu_iter_init(&it, nd, od, 2, (const int64_t(*)[PD_K_MAX_DIMS])s, sizes);
  void *base[2] = {out, (void *)x};
  pd_kcpu_iter_run(&it, base, loop, NULL, true, PD_KCPU_GRAIN);
  return PD_OK;
}

/* ---- concat / split: per outer index, one memcpy per part; the outer indices split across
 * the pool where there is at least PARTS_GRAIN bytes a part (one thread copied PP-OCRv3's
 * [16, 1024, 1, 40] concat at batch 16 at 8 GB/s). ---- */
#define PARTS_GRAIN ((int64_t)64 << 10)

typedef struct parts_job {
  int n;                 /* parts */
  const int64_t *sizes;  /* each part's extent along the axis */
  size_t row;            /* bytes an index of the axis */
  int64_t total;         /* the sum of sizes */
  const void *const *xs; /* concat: the parts and its output; split: NULL */
  char *out;
  void *const *outs;     /* split: the parts and its input; concat: NULL */
  const char *in;
} parts_job;

/* Outer indices [b, e): each part's slab copied to or from the joined tensor. */
static void parts_range(void *ctx, int64_t b, int64_t e) {
  const parts_job *j = ctx;
  for (int64_t i = b; i < e; i++) {
    size_t at = (size_t)i * (size_t)j->total * j->row;
    for (int k = 0; k < j->n; k++) {
      size_t part = (size_t)j->sizes[k] * j->row;
      if (!part) continue;
      if (j->xs) memcpy(j->out + at, (const char *)j->xs[k] + (size_t)i * part, part);
      else memcpy((char *)j->outs[k] + (size_t)i * part, j->in + at, part);
      at += part;
    }
  }
}

static void parts_run(parts_job *j, int64_t pre) {
  int64_t per = j->total * (int64_t)j->row; /* bytes an outer index */
  pd_kcpu_parallel(pre, per >= PARTS_GRAIN ? 1 : PARTS_GRAIN / (per > 0 ? per : 1), parts_range,
                   j);
}

pd_status pd_kcpu_concat(pd_dtype dt, int ninputs, const void *const *xs, const int64_t *sizes,
                         int64_t pre, int64_t post, void *out) {
  int64_t total;
  pd_status st = pd_k_parts_check(dt, ninputs, sizes, pre, post, &total);
  if (st) return st;
  parts_job j = {ninputs, sizes, (size_t)post * pd_dtype_size(dt), total, xs, out, NULL, NULL};
  parts_run(&j, pre);
  return PD_OK;
}

pd_status pd_kcpu_split(pd_dtype dt, const void *x, int64_t pre, int64_t post, int noutputs,
                        const int64_t *sizes, void *const *outs) {
  int64_t total;
  pd_status st = pd_k_parts_check(dt, noutputs, sizes, pre, post, &total);
  if (st) return st;
  parts_job j = {noutputs, sizes, (size_t)post * pd_dtype_size(dt), total, NULL, NULL, outs, x};
  parts_run(&j, pre);
  return PD_OK;
}

/* ---- Embedding rows ---- */
static pd_status check_ids(pd_dtype dt, int64_t nrows, int64_t width, int64_t nids,
                           const int64_t *ids, int64_t padding_idx) {
  pd_status st = pd_k_rows_check(dt, nrows, width, nids);
  if (st) return st;
  for (int64_t i = 0; i < nids; i++)
    if ((ids[i] < 0 || ids[i] >= nrows) && ids[i] != padding_idx) return PD_EINVAL;
  return PD_OK;
}

pd_status pd_kcpu_gather_rows(pd_dtype dt, int64_t nrows, int64_t width, const void *table,
                              int64_t nids, const int64_t *ids, int64_t padding_idx,
                              void *out) {
  pd_status st = check_ids(dt, nrows, width, nids, ids, padding_idx);
  if (st) return st;
  size_t row = (size_t)width * pd_dtype_size(dt);
  for (int64_t i = 0; i < nids; i++) {
    char *o = (char *)out + (size_t)i * row;
    if (ids[i] == padding_idx) memset(o, 0, row);
    else memcpy(o, (const char *)table + (size_t)ids[i] * row, row);
  }
  return PD_OK;
}

pd_status pd_kcpu_scatter_add_rows(pd_dtype dt, int64_t nrows, int64_t width, void *dst,
                                   int64_t nids, const int64_t *ids, int64_t padding_idx,
                                   const void *src) {
  pd_status st = check_ids(dt, nrows, width, nids, ids, padding_idx);
  if (st) return st;
  if (dt == PD_FP32) scatter_add_f32(width, dst, nids, ids, padding_idx, src);
  else scatter_add_f64(width, dst, nids, ids, padding_idx, src);
  return PD_OK;
}
