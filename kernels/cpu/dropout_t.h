/* dropout_t.h -- template of dropout.c's loops for one float type; included by dropout.c (which
 * defines drop_job) with T (float or double), TN (its suffix), T_FLOAT and DROP_ATTR (empty, or
 * the target attribute of an instance for a wider instruction set). Each range function covers
 * elements [b, e); the loops go through restrict pointers, without branches, so that they
 * vectorise (the product in double, rounded to T once, as before). */

DROP_ATTR static void TF(drop_range)(void *ctx, int64_t b, int64_t e) {
  const drop_job *j = ctx;
  const T *restrict x = (const T *)j->x + b;
  T *restrict o = (T *)j->out + b;
  uint8_t *restrict mask = j->mask ? j->mask + b : NULL;
  const double scale = j->scale, p = j->p;
  int64_t n = e - b;
  if (!j->u) { /* no draws: every element scaled, the mask p < 1 */
    PD_SIMD for (int64_t i = 0; i < n; i++) o[i] = (T)((double)x[i] * scale);
    if (mask)
      for (int64_t i = 0; i < n; i++) mask[i] = p < 1;
    return;
  }
  const float *restrict u = j->u + b;
  if (mask) {
    PD_SIMD for (int64_t i = 0; i < n; i++) {
      bool keep = (double)u[i] >= p;
      o[i] = keep ? (T)((double)x[i] * scale) : (T)0;
      mask[i] = keep;
    }
  } else {
    PD_SIMD for (int64_t i = 0; i < n; i++)
      o[i] = (double)u[i] >= p ? (T)((double)x[i] * scale) : (T)0;
  }
}

DROP_ATTR static void TF(drop_grad_range)(void *ctx, int64_t b, int64_t e) {
  const drop_job *j = ctx;
  const T *restrict g = (const T *)j->x + b;
  T *restrict o = (T *)j->out + b;
  const double scale = j->scale;
  int64_t n = e - b;
  if (!j->m) {
    PD_SIMD for (int64_t i = 0; i < n; i++) o[i] = (T)((double)g[i] * scale);
    return;
  }
  const uint8_t *restrict m = j->m + b;
  PD_SIMD for (int64_t i = 0; i < n; i++) o[i] = m[i] ? (T)((double)g[i] * scale) : (T)0;
}

#undef T
#undef TN
#undef T_FLOAT
