/* dropout_t.h -- template of dropout.c's loops for one float type; included by dropout.c (which
 * defines drop_job) with T (float or double), TN (its suffix) and T_FLOAT. Each range function
 * covers elements [b, e). */

static void TF(drop_range)(void *ctx, int64_t b, int64_t e) {
  const drop_job *j = ctx;
  const T *x = j->x;
  T *o = j->out;
  if (!j->u) { /* no draws: every element scaled, the mask p < 1 */
    for (int64_t i = b; i < e; i++) o[i] = (T)(x[i] * j->scale);
    if (j->mask)
      for (int64_t i = b; i < e; i++) j->mask[i] = j->p < 1;
    return;
  }
  for (int64_t i = b; i < e; i++) {
    bool keep = j->u[i] >= j->p;
    o[i] = keep ? (T)(x[i] * j->scale) : (T)0;
    if (j->mask) j->mask[i] = keep;
  }
}

static void TF(drop_grad_range)(void *ctx, int64_t b, int64_t e) {
  const drop_job *j = ctx;
  const T *g = j->x;
  T *o = j->out;
  for (int64_t i = b; i < e; i++) o[i] = (j->m && !j->m[i]) ? (T)0 : (T)(g[i] * j->scale);
}

#undef T
#undef TN
#undef T_FLOAT
