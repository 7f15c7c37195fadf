/* index_t.h -- template of index.c for one element type T (suffix TN, T_FLOAT as in
 * elementwise_t.h): argmax, top_k and scatter-add. */
#if T_FLOAT
#define T_ISNAN(v) isnan(v)
#else
#define T_ISNAN(v) 0
#endif

/* Strict "comes before" of (value, index) pairs in top_k order: larger value first (smallest:
 * smaller first), NaN the largest, equal values by index. */
static bool TF(before)(T va, int64_t ia, T vb, int64_t ib, bool smallest) {
  bool na = T_ISNAN(va), nb = T_ISNAN(vb);
  if (na || nb) return na && nb ? ia < ib : smallest ? nb : na;
  if (va != vb) return smallest ? va < vb : va > vb;
  return ia < ib;
}

static void TF(argmax)(const arg_job *job) {
  int64_t n = job->n, post = job->post;
  for (int64_t i = 0; i < job->pre; i++) {
    for (int64_t k = 0; k < post; k++) {
      const T *x = (const T *)job->x + i * n * post + k;
      int64_t best = 0;
      for (int64_t j = 1; j < n; j++)
        if (TF(before)(x[j * post], j, x[best * post], best, job->smallest)) best = j;
      job->idx[i * post + k] = best;
    }
  }
}

/* Move heap entry at i down a min-heap (root = the entry that comes last) of size m. */
static void TF(sift)(T *v, int64_t *ix, int64_t m, int64_t i, bool sm) {
  for (;;) {
    int64_t l = 2 * i + 1, r = l + 1, w = i;
    if (l < m && TF(before)(v[w], ix[w], v[l], ix[l], sm)) w = l;
    if (r < m && TF(before)(v[w], ix[w], v[r], ix[r], sm)) w = r;
    if (w == i) return;
    T tv = v[i];
    int64_t ti = ix[i];
    v[i] = v[w];
    ix[i] = ix[w];
    v[w] = tv;
    ix[w] = ti;
    i = w;
  }
}

/* top_k of rows [b, e): the output row itself is the heap of the k best so far (O(n log k),
 * no scratch memory), then heap-sorted into top_k order. */
static void TF(top_k_range)(void *vjob, int64_t b, int64_t e) {
  const arg_job *job = vjob;
  int64_t n = job->n, k = job->k;
  for (int64_t r = b; r < e; r++) {
    const T *x = (const T *)job->x + r * n;
    T *v = (T *)job->values + r * k;
    int64_t *ix = job->idx + r * k;
    for (int64_t j = 0; j < k; j++) {
      v[j] = x[j];
      ix[j] = j;
    }
    for (int64_t j = k / 2 - 1; j >= 0; j--) TF(sift)(v, ix, k, j, job->smallest);
    for (int64_t j = k; j < n; j++) {
      if (TF(before)(x[j], j, v[0], ix[0], job->smallest)) {
        v[0] = x[j];
        ix[0] = j;
        TF(sift)(v, ix, k, 0, job->smallest);
      }
    }
    for (int64_t m = k - 1; m > 0; m--) {  /* the last-in-order entry goes to the end */
      T tv = v[0];
      int64_t ti = ix[0];
      v[0] = v[m];
      ix[0] = ix[m];
      v[m] = tv;
      ix[m] = ti;
      TF(sift)(v, ix, m, 0, job->smallest);
    }
  }
}

#if T_FLOAT
static void TF(scatter_add)(int64_t width, T *dst, int64_t nids, const int64_t *ids,
                            int64_t padding_idx, const T *src) {
  for (int64_t i = 0; i < nids; i++) {
    if (ids[i] == padding_idx) continue;
    T *d = dst + ids[i] * width;
    const T *s = src + i * width;
    PD_SIMD for (int64_t j = 0; j < width; j++) d[j] += s[j];
  }
}
#endif

#undef T_ISNAN
#undef T
#undef TN
#undef T_FLOAT
