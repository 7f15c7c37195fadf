/* optim_t.h -- template of the optimizer loops of optim.c for one float type; included by
 * optim.c (which defines opt_job) with T (float or double) and TN (its suffix). Defines
 * TF(opt_range), whose Adam, RMSProp and Adagrad take four elements at a time on CPUs with AVX2
 * (pd_kcpu_simd). Arithmetic in double, as kernels.h says and the CUDA backend
 * (kernels/cuda/optim.cu) does, expression for expression. */

#if PD_KCPU_HAVE_AVX2
/* Four elements of x as doubles, and back (rounded to T as the scalar casts round). */
static inline __attribute__((always_inline, target("avx2"))) __m256d TF(opt_ld4)(const T *x) {
  if (sizeof(T) == sizeof(float))
    return _mm256_cvtps_pd(_mm_loadu_ps((const float *)(const void *)x));
  return _mm256_loadu_pd((const double *)(const void *)x);
}

static inline __attribute__((always_inline, target("avx2"))) void TF(opt_st4)(T *x, __m256d v) {
  if (sizeof(T) == sizeof(float)) _mm_storeu_ps((float *)(void *)x, _mm256_cvtpd_ps(v));
  else _mm256_storeu_pd((double *)(void *)x, v);
}

/* Adam on [b, e) four elements at a time, the scalar loop's operations in the same order
 * (AVX2 without FMA: each product and sum rounds as there, so the results are the same bits);
 * the square root and the division of four lanes take about the time of two (x86-64's
 * _mm_sqrt_pd, _mm_div_pd): 0.19 ms against 0.37 for 200,704 fp32 parameters on one thread
 * here (bench/bench_kernels times each update at both levels). Returns
 * where it stopped (the last e - b mod 4 are left). */
static __attribute__((target("avx2"))) int64_t TF(adam_avx2)(const opt_job *j, int64_t b,
                                                              int64_t e) {
  const T *p = j->p, *g = j->g, *a = j->s[0], *v = j->s[1];
  T *po = j->po, *ao = j->so[0], *vo = j->so[1];
  const __m256d b1 = _mm256_set1_pd(j->o.beta1), c1 = _mm256_set1_pd(1 - j->o.beta1),
                b2 = _mm256_set1_pd(j->o.beta2), c2 = _mm256_set1_pd(1 - j->o.beta2),
                lr = _mm256_set1_pd(j->o.lr), eps = _mm256_set1_pd(j->o.eps),
                keep = _mm256_set1_pd(1 - j->o.decay);
  int64_t i = b;
  for (; i + 4 <= e; i += 4) {
    __m256d gi = TF(opt_ld4)(g + i);
    __m256d mom1 = _mm256_add_pd(_mm256_mul_pd(b1, TF(opt_ld4)(a + i)), _mm256_mul_pd(c1, gi));
    __m256d mom2 = _mm256_add_pd(_mm256_mul_pd(b2, TF(opt_ld4)(v + i)),
                                 _mm256_mul_pd(_mm256_mul_pd(c2, gi), gi));
    __m256d q = _mm256_div_pd(mom1, _mm256_add_pd(_mm256_sqrt_pd(mom2), eps));
    TF(opt_st4)(ao + i, mom1);
    TF(opt_st4)(vo + i, mom2);
    TF(opt_st4)(po + i, _mm256_sub_pd(_mm256_mul_pd(TF(opt_ld4)(p + i), keep),
                                      _mm256_mul_pd(lr, q)));
  }
  return i;
}

/* RMSProp (centered or not) and Adagrad on [b, e) four elements at a time, as TF(adam_avx2):
 * the scalar loops' operations in their order. Return where they stopped. */
static __attribute__((target("avx2"))) int64_t TF(rmsprop_avx2)(const opt_job *j, int64_t b,
                                                                 int64_t e) {
  const T *p = j->p, *g = j->g, *s = j->s[0], *m = j->s[1], *a = j->s[2];
  T *po = j->po, *so = j->so[0], *mo = j->so[1], *ao = j->so[2];
  const __m256d rho = _mm256_set1_pd(j->o.rho), c = _mm256_set1_pd(1 - j->o.rho),
                mu = _mm256_set1_pd(j->o.mu), eps = _mm256_set1_pd(j->o.eps),
                lr = _mm256_set1_pd(j->o.lr);
  int64_t i = b;
  for (; i + 4 <= e; i += 4) {
    __m256d gi = TF(opt_ld4)(g + i);
    __m256d s2 = _mm256_add_pd(_mm256_mul_pd(rho, TF(opt_ld4)(s + i)),
                               _mm256_mul_pd(_mm256_mul_pd(c, gi), gi));
    __m256d den = _mm256_add_pd(s2, eps);
    if (j->o.centered) {
      __m256d a2 = _mm256_add_pd(_mm256_mul_pd(rho, TF(opt_ld4)(a + i)), _mm256_mul_pd(c, gi));
      TF(opt_st4)(ao + i, a2);
      den = _mm256_sub_pd(den, _mm256_mul_pd(a2, a2));
    }
    __m256d m2 = _mm256_add_pd(_mm256_mul_pd(mu, TF(opt_ld4)(m + i)),
                               _mm256_div_pd(_mm256_mul_pd(lr, gi), _mm256_sqrt_pd(den)));
    TF(opt_st4)(so + i, s2);
    TF(opt_st4)(mo + i, m2);
    TF(opt_st4)(po + i, _mm256_sub_pd(TF(opt_ld4)(p + i), m2));
  }
  return i;
}

static __attribute__((target("avx2"))) int64_t TF(adagrad_avx2)(const opt_job *j, int64_t b,
                                                                 int64_t e) {
  const T *p = j->p, *g = j->g, *m = j->s[0];
  T *po = j->po, *mo = j->so[0];
  const __m256d eps = _mm256_set1_pd(j->o.eps), lr = _mm256_set1_pd(j->o.lr);
  int64_t i = b;
  for (; i + 4 <= e; i += 4) {
    __m256d gi = TF(opt_ld4)(g + i);
    __m256d m2 = _mm256_add_pd(TF(opt_ld4)(m + i), _mm256_mul_pd(gi, gi));
    TF(opt_st4)(mo + i, m2);
    TF(opt_st4)(po + i, _mm256_sub_pd(TF(opt_ld4)(p + i),
                                      _mm256_div_pd(_mm256_mul_pd(lr, gi),
                                                    _mm256_add_pd(_mm256_sqrt_pd(m2), eps))));
  }
  return i;
}
#endif

/* Adam on [b, e): the square root and the division are done four at a time on CPUs with AVX2
 * (TF(adam_avx2)), else two at a time on x86-64 (_mm_sqrt_pd, _mm_div_pd: a call to sqrt,
 * which may set errno, keeps the compiler from vectorising the loop); the results are the
 * same, correctly rounded, every way. */
static void TF(adam_range)(const opt_job *j, int64_t b, int64_t e) {
  const T *p = j->p, *g = j->g, *a = j->s[0], *v = j->s[1];
  T *po = j->po, *ao = j->so[0], *vo = j->so[1];
  const double b1 = j->o.beta1, b2 = j->o.beta2, lr = j->o.lr, eps = j->o.eps,
               keep = 1 - j->o.decay;
  int64_t i = b;
#if PD_KCPU_HAVE_AVX2
  if (pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2) i = TF(adam_avx2)(j, b, e);
#endif
#ifdef __SSE2__
  for (; i + 2 <= e; i += 2) {
    double g0 = g[i], g1 = g[i + 1];
    double a0 = b1 * a[i] + (1 - b1) * g0, a1 = b1 * a[i + 1] + (1 - b1) * g1;
    double v0 = b2 * v[i] + (1 - b2) * g0 * g0, v1 = b2 * v[i + 1] + (1 - b2) * g1 * g1;
    /* m1' / (sqrt(m2') + eps) for both lanes: the same IEEE operations as the scalar loop. */
    __m128d den = _mm_add_pd(_mm_sqrt_pd(_mm_set_pd(v1, v0)), _mm_set1_pd(eps));
    double q[2];
    _mm_storeu_pd(q, _mm_div_pd(_mm_set_pd(a1, a0), den));
    double p0 = (double)p[i] * keep, p1 = (double)p[i + 1] * keep;
    ao[i] = (T)a0;
    ao[i + 1] = (T)a1;
    vo[i] = (T)v0;
    vo[i + 1] = (T)v1;
    po[i] = (T)(p0 - lr * q[0]);
    po[i + 1] = (T)(p1 - lr * q[1]);
  }
#endif
  for (; i < e; i++) {
    double gi = g[i], mom1 = b1 * a[i] + (1 - b1) * gi, mom2 = b2 * v[i] + (1 - b2) * gi * gi;
    ao[i] = (T)mom1;
    vo[i] = (T)mom2;
    po[i] = (T)((double)p[i] * keep - lr * (mom1 / (sqrt(mom2) + eps)));
  }
}

static void TF(opt_range)(void *vjob, int64_t b, int64_t e) {
  const opt_job *j = vjob;
  const pd_k_opt *o = &j->o;
  const T *p = j->p, *g = j->g;
  T *po = j->po;
  const double lr = o->lr;
  switch (o->kind) {
    case PD_K_OPT_SGD:
      for (int64_t i = b; i < e; i++) po[i] = (T)((double)p[i] - lr * (double)g[i]);
      break;
    case PD_K_OPT_MOMENTUM: {
      const T *v = j->s[0];
      T *vo = j->so[0];
      const double mu = o->mu, rescale = o->rescale, l2 = o->l2;
      for (int64_t i = b; i < e; i++) {
        double pi = p[i], gi = (double)g[i] * rescale + l2 * pi, vn = (double)v[i] * mu + gi;
        vo[i] = (T)vn;
        po[i] = (T)(pi - lr * (o->nesterov ? gi + vn * mu : vn));
      }
      break;
    }
    case PD_K_OPT_ADAM: TF(adam_range)(j, b, e); break;
    case PD_K_OPT_RMSPROP: {
      const T *s = j->s[0], *m = j->s[1], *a = j->s[2];
      T *so = j->so[0], *mo = j->so[1], *ao = j->so[2];
      const double rho = o->rho, mu = o->mu, eps = o->eps;
      int64_t i = b;
#if PD_KCPU_HAVE_AVX2
      if (pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2) i = TF(rmsprop_avx2)(j, b, e);
#endif
      for (; i < e; i++) {
        double gi = g[i], s2 = rho * s[i] + (1 - rho) * gi * gi, den = s2 + eps;
        if (o->centered) {
          double a2 = rho * a[i] + (1 - rho) * gi;
          ao[i] = (T)a2;
          den -= a2 * a2;
        }
        double m2 = mu * m[i] + lr * gi / sqrt(den);
        so[i] = (T)s2;
        mo[i] = (T)m2;
        po[i] = (T)(p[i] - m2);
      }
      break;
    }
    case PD_K_OPT_ADAGRAD: {
      const T *m = j->s[0];
      T *mo = j->so[0];
      const double eps = o->eps;
      int64_t i = b;
#if PD_KCPU_HAVE_AVX2
      if (pd_kcpu_simd() >= PD_KCPU_SIMD_AVX2) i = TF(adagrad_avx2)(j, b, e);
#endif
      for (; i < e; i++) {
        double gi = g[i], m2 = m[i] + gi * gi;
        mo[i] = (T)m2;
        po[i] = (T)(p[i] - lr * gi / (sqrt(m2) + eps));
      }
      break;
    }
    case PD_K_OPT_COUNT_: break;
  }
}

#undef T
#undef TN
