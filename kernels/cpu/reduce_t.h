/* reduce_t.h -- template of reduce.c for one element type T (suffix TN, T_FLOAT as in
 * elementwise_t.h). Sums accumulate in ACC: double for float types, int64_t for integers
 * (wrapping through uint64_t, never trapping). */
#if T_FLOAT
#define ACC double
#define ACC_ADD(a, v) ((a) + (ACC)(v))
#define T_ISNAN(v) isnan(v)
#else
#define ACC int64_t
#define ACC_ADD(a, v) ((ACC)((uint64_t)(a) + (uint64_t)(int64_t)(v)))
#define T_ISNAN(v) 0
#endif

/* acc OP= x[0], x[stride], ... (n elements). max/min keep a NaN once seen. */
static ACC TF(run)(pd_k_redop op, const T *x, int64_t n, int64_t stride, ACC acc) {
  switch (op) {
    case PD_K_RSUM:
    case PD_K_RMEAN:
      if (stride == 1) {
        for (int64_t j = 0; j < n; j++) acc = ACC_ADD(acc, x[j]);
      } else {
        for (int64_t j = 0; j < n; j++) acc = ACC_ADD(acc, x[j * stride]);
      }
      break;
    case PD_K_RMAX:
      for (int64_t j = 0; j < n; j++) {
        T v = x[j * stride];
        if (T_ISNAN(v) || v > acc) acc = v;
        if (T_ISNAN(v)) break;
      }
      break;
    case PD_K_RMIN:
      for (int64_t j = 0; j < n; j++) {
        T v = x[j * stride];
        if (T_ISNAN(v) || v < acc) acc = v;
        if (T_ISNAN(v)) break;
      }
      break;
    case PD_K_REDOP_COUNT_: break;
  }
  return acc;
}

/* The starting value of an accumulation whose first element is first. */
static ACC TF(init)(pd_k_redop op, T first) {
  return op == PD_K_RMAX || op == PD_K_RMIN ? (ACC)first : (ACC)0;
}

static ACC TF(combine)(pd_k_redop op, ACC a, ACC b) {
  switch (op) {
    case PD_K_RMAX: return T_ISNAN(a) || a > b ? a : b;
    case PD_K_RMIN: return T_ISNAN(a) || a < b ? a : b;
    default: return ACC_ADD(a, b);
  }
}

static T TF(finish)(pd_k_redop op, ACC acc, int64_t count) {
#if T_FLOAT
  if (op == PD_K_RMEAN) return (T)(acc / (double)count);
#else
  PD_UNUSED(op);
  PD_UNUSED(count);
#endif
  return (T)acc;
}

/* Chunk c of nc of a full reduction, into part[c]. */
typedef struct TF(full_job) {
  const reduce_job *job;
  ACC *part;
} TF(full_job);

static void TF(full_chunk)(void *vfj, int c, int nc) {
  const TF(full_job) *fj = vfj;
  const T *x = fj->job->x;
  int64_t n = fj->job->r, b = n * c / nc, e = n * (c + 1) / nc;
  fj->part[c] = TF(run)(fj->job->op, x + b, e - b, 1, TF(init)(fj->job->op, x[b]));
}

/* Everything to one value: a fixed number of chunks (at most MAX_CHUNKS, each at least a grain)
 * reduced in parallel, then combined in order, so the result does not depend on the number of
 * threads. */
static void TF(reduce_full)(const reduce_job *job) {
  int64_t n = job->r, nchunks = (n + PD_KCPU_GRAIN - 1) / PD_KCPU_GRAIN;
  if (nchunks > MAX_CHUNKS) nchunks = MAX_CHUNKS;
  if (nchunks < 1) nchunks = 1;
  ACC part[MAX_CHUNKS];
  TF(full_job) fj = {job, part};
  pd_kcpu_team((int)nchunks, TF(full_chunk), &fj);
  ACC acc = part[0];
  for (int64_t c = 1; c < nchunks; c++) acc = TF(combine)(job->op, acc, part[c]);
  *(T *)job->out = TF(finish)(job->op, acc, n);
}

/* x viewed as [k1, r, k2] (k2 > 1), reduced over r: rows of x are added into a block of
 * COL_BLOCK accumulators, so x is read in order. Range over (k1, column block) pairs. */
static void TF(reduce_cols)(void *vjob, int64_t b, int64_t e) {
  const reduce_job *job = vjob;
  int64_t r = job->r, k2 = job->k2, nblocks = (k2 + COL_BLOCK - 1) / COL_BLOCK;
  ACC acc[COL_BLOCK];
  for (int64_t t = b; t < e; t++) {
    int64_t i = t / nblocks, c0 = t % nblocks * COL_BLOCK;
    int64_t w = k2 - c0 < COL_BLOCK ? k2 - c0 : COL_BLOCK;
    const T *x = (const T *)job->x + i * r * k2 + c0;
    for (int64_t j = 0; j < w; j++) acc[j] = TF(init)(job->op, x[j]);
    if (job->op == PD_K_RSUM || job->op == PD_K_RMEAN) {
      /* The same additions as run() makes, in the same order, without a call per element. */
      if (!TF(colsum_simd)(x, r, k2, w, acc))
        for (int64_t q = 0; q < r; q++, x += k2)
          for (int64_t j = 0; j < w; j++) acc[j] = ACC_ADD(acc[j], x[j]);
    } else {
      for (int64_t q = 0; q < r; q++, x += k2)
        for (int64_t j = 0; j < w; j++) acc[j] = TF(run)(job->op, x + j, 1, 1, acc[j]);
    }
    T *o = (T *)job->out + i * k2 + c0;
    for (int64_t j = 0; j < w; j++) o[j] = TF(finish)(job->op, acc[j], r);
  }
}

/* [r, k2] reduced over r, cut into row chunks: chunk c's column results go to its own row of
 * part (k2 accumulators), and part t of nt takes a contiguous run of chunks. */
typedef struct TF(rows_job) {
  const reduce_job *job;
  ACC *part;
  int64_t nchunks;
} TF(rows_job);

static void TF(rows_chunks)(void *vrj, int t, int nt) {
  const TF(rows_job) *rj = vrj;
  const reduce_job *job = rj->job;
  int64_t r = job->r, k2 = job->k2;
  for (int64_t c = rj->nchunks * t / nt; c < rj->nchunks * (t + 1) / nt; c++) {
    int64_t rb = r * c / rj->nchunks, re = r * (c + 1) / rj->nchunks;
    const T *x = (const T *)job->x + rb * k2;
    ACC *acc = rj->part + c * k2;
    for (int64_t j = 0; j < k2; j++) acc[j] = TF(init)(job->op, x[j]);
    if ((job->op == PD_K_RSUM || job->op == PD_K_RMEAN) &&
        TF(colsum_simd)(x, re - rb, k2, k2, acc))
      continue;
    for (int64_t j = 0; j < k2; j++) acc[j] = TF(run)(job->op, x + j, re - rb, k2, acc[j]);
  }
}

/* The row-chunked column reduction: false when it does not apply (more than one matrix, too
 * few rows for two chunks, or no memory for the partial results), and reduce_cols runs. The
 * chunks are fixed by the sizes and combined in order, so the result does not depend on the
 * number of threads. A part reads the rows that the same part of a row-split kernel
 * (pd_kcpu_parallel) wrote just before, on the same core: reduce_cols, which splits the columns,
 * reads half of every row from the other core's cache (a bias gradient of [1600, 256] right
 * after the softmax gradient took 86 us on two threads that way, 39 us in row chunks). */
static bool TF(reduce_rows)(const reduce_job *job) {
  int64_t nchunks = job->r * job->k2 / PD_KCPU_GRAIN;
  if (nchunks > MAX_CHUNKS) nchunks = MAX_CHUNKS;
  if (nchunks > job->r) nchunks = job->r;
  if (nchunks > ROWS_SCRATCH / (job->k2 * (int64_t)sizeof(ACC)))
    nchunks = ROWS_SCRATCH / (job->k2 * (int64_t)sizeof(ACC));
  if (job->k1 != 1 || nchunks < 2) return false;
  ACC *part = pd_k_host_alloc((size_t)(nchunks * job->k2) * sizeof *part);
  if (!part) return false;
  TF(rows_job) rj = {job, part, nchunks};
  int nt = pd_kcpu_threads() < nchunks ? pd_kcpu_threads() : (int)nchunks;
  pd_kcpu_team(nt, TF(rows_chunks), &rj);
  T *o = job->out;
  for (int64_t j = 0; j < job->k2; j++) {
    ACC acc = part[j];
    for (int64_t c = 1; c < nchunks; c++) acc = TF(combine)(job->op, acc, part[c * job->k2 + j]);
    o[j] = TF(finish)(job->op, acc, job->r);
  }
  pd_k_host_free(part);
  return true;
}

/* Any pattern: each output element walks its reduced sub-box with an odometer; the innermost
 * reduced group is one strided run. Range over output elements. */
static void TF(reduce_generic)(void *vjob, int64_t b, int64_t e) {
  const reduce_job *job = vjob;
  const T *x = job->x;
  int nk = job->nk, nr = job->nr;
  for (int64_t o = b; o < e; o++) {
    int64_t off = 0, rem = o;
    for (int g = nk - 1; g >= 0; g--) {
      off += rem % job->kdims[g] * job->kstr[g];
      rem /= job->kdims[g];
    }
    ACC acc = TF(init)(job->op, x[off]);
    int64_t idx[PD_K_MAX_DIMS] = {0};
    int64_t inner = job->rdims[nr - 1], istr = job->rstr[nr - 1];
    for (;;) {
      int64_t roff = off;
      for (int g = 0; g < nr - 1; g++) roff += idx[g] * job->rstr[g];
      acc = TF(run)(job->op, x + roff, inner, istr, acc);
      int g = nr - 2;
      while (g >= 0 && ++idx[g] == job->rdims[g]) idx[g--] = 0;
      if (g < 0) break;
    }
    ((T *)job->out)[o] = TF(finish)(job->op, acc, job->r);
  }
}

static void TF(reduce)(reduce_job *job) {
  if (job->k == 1) {
    TF(reduce_full)(job);
  } else if (job->k2 > 1) {
    if (TF(reduce_rows)(job)) return;
    int64_t work = job->k1 * ((job->k2 + COL_BLOCK - 1) / COL_BLOCK);
    pd_kcpu_parallel(work, grain_for(job->r * COL_BLOCK), TF(reduce_cols), job);
  } else {
    pd_kcpu_parallel(job->k, grain_for(job->r), TF(reduce_generic), job);
  }
}

#if T_FLOAT
/* Gradient loops over x's shape: operands [dx, x, out, dout]; out and dout have zero strides
 * along the reduced dims. arg points at the mean's 1 / count. */
static void TF(grad_sum)(char *const *p, const int64_t *s, int64_t n, const void *arg) {
  T *dx = (T *)p[0];
  const T *d = (const T *)p[3];
  T scale = arg ? (T)(*(const double *)arg) : (T)1;
  for (int64_t j = 0; j < n; j++) dx[j] = d[j * s[3]] * scale;
}

static void TF(grad_extreme)(char *const *p, const int64_t *s, int64_t n, const void *arg) {
  PD_UNUSED(arg);
  T *dx = (T *)p[0];
  const T *x = (const T *)p[1], *out = (const T *)p[2], *d = (const T *)p[3];
  for (int64_t j = 0; j < n; j++) dx[j] = x[j] == out[j * s[2]] ? d[j * s[3]] : (T)0;
}
#endif

#undef ACC
#undef ACC_ADD
#undef T_ISNAN
#undef T
#undef TN
#undef T_FLOAT
