/* act_t.h -- template of the activation loops of act.c for one float type; included by act.c
 * (which defines act_job and ACT_BLOCK) with T (float or double), TN (its suffix) and T_FLOAT.
 * Defines TF(act_range) and TF(act_grad_range). The arithmetic is the CUDA backend's
 * (kernels/cuda/act.cu), expression for expression, but for gelu's normal distribution
 * function (map_phi), which the device takes from its own erf. */

/* sqrt(1/2), sqrt(2/pi), 1/sqrt(2 pi); the cubic coefficient of gelu's tanh form. */
#define ACT_SQRT1_2 0.70710678118654752440
#define ACT_SQRT_2_PI 0.79788456080286535588
#define ACT_INV_SQRT_2PI 0.39894228040143267794
#define ACT_GELU_C 0.044715

/* c ? a : b of two values already loaded: a loop over it has no conditional load and
 * vectorises (a ternary on d[j] is a branch per element, mispredicted half the time). */
static inline T TF(sel)(int c, T a, T b) { return c ? a : b; }

/* o[j] = e^a[j] and 1 / (1 + e^-a[j]) for j < n (o may be a): fastmath.h's vector
 * code for fp32, libm for fp64 (the gradient checks). */
static void TF(map_exp)(const T *a, T *o, int64_t n) {
#if TF(PD_KCPU_FASTMATH)
  pd_kcpu_map_f32(PD_KCPU_FM_EXP, a, o, n);
#else
  for (int64_t j = 0; j < n; j++) o[j] = exp(a[j]);
#endif
}

static void TF(map_sigmoid)(const T *a, T *o, int64_t n) {
#if TF(PD_KCPU_FASTMATH)
  pd_kcpu_map_f32(PD_KCPU_FM_SIGMOID, a, o, n);
#else
  for (int64_t j = 0; j < n; j++) o[j] = (T)1 / ((T)1 + exp(-a[j])); /* 1 / inf = 0: no NaN */
#endif
}

/* o[j] = Phi(a[j]), the normal distribution function (1 + erf(a / sqrt 2)) / 2, for j < n <=
 * ACT_BLOCK (o may be a): 0.5 erfc(-a / sqrt 2) from libm in fp64; in fp32 fastmath.h's
 * (pd_kcpu_v4_phi: gelu(-2) = -0.0455003 keeps its digits). glibc's erff, a call an element,
 * made gelu 6 ns an element, ERNIE's feed-forward layers a sixth of its time. */
static void TF(map_phi)(const T *a, T *o, int64_t n) {
#if TF(PD_KCPU_FASTMATH)
  pd_kcpu_map_f32(PD_KCPU_FM_PHI, a, o, n);
#else
  for (int64_t j = 0; j < n; j++) o[j] = (T)0.5 * erfc(-a[j] * (T)ACT_SQRT1_2);
#endif
}

/* e^a - 1 for a <= 0 (elu), n <= ACT_BLOCK, o may be a: expm1 in fp64; in fp32 the vector e^x
 * minus 1, but for a in (-1/8, 0], where that would lose the small results' digits, a Taylor
 * polynomial (its first dropped term is under 2^-30 of the value there). */
static void TF(map_expm1)(const T *a, T *o, int64_t n) {
#if TF(PD_KCPU_FASTMATH)
  float e[ACT_BLOCK];
  pd_kcpu_map_f32(PD_KCPU_FM_EXP, a, e, n);
  PD_SIMD for (int64_t j = 0; j < n; j++) {
    float v = a[j];
    float p = v + v * v * (0.5f + v * (1.0f / 6 + v * (1.0f / 24 + v * (1.0f / 120 + v / 720))));
    o[j] = v > -0.125f ? p : e[j] - 1.0f;
  }
#else
  for (int64_t j = 0; j < n; j++) o[j] = expm1(a[j]);
#endif
}

/* out = f(x) on [b, e), a block of ACT_BLOCK at a time; t is the block's scratch. Comparisons
 * are written so that NaN gives NaN (a comparison with NaN is false). */
static void TF(act_range)(void *vjob, int64_t b, int64_t e) {
  const act_job *job = vjob;
  const T p0 = (T)job->p[0], p1 = (T)job->p[1], p2 = (T)job->p[2];
  T t[ACT_BLOCK];
  for (int64_t b0 = b; b0 < e; b0 += ACT_BLOCK) {
    const int64_t n = e - b0 < ACT_BLOCK ? e - b0 : ACT_BLOCK;
    const T *x = (const T *)job->x + b0;
    T *o = (T *)job->out + b0;
    switch (job->op) {
      case PD_K_GELU: /* x Phi(x) */
        TF(map_phi)(x, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = x[j] * t[j];
        break;
      case PD_K_GELU_TANH: /* x (1 + tanh u) / 2 = x sigmoid(2u): no 1 + tanh u to cancel */
        PD_SIMD for (int64_t j = 0; j < n; j++)
          t[j] = (T)(2 * ACT_SQRT_2_PI) * (x[j] + (T)ACT_GELU_C * x[j] * x[j] * x[j]);
        TF(map_sigmoid)(t, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = x[j] * t[j];
        break;
      case PD_K_LEAKY_RELU:
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = x[j] > 0 ? x[j] : p0 * x[j];
        break;
      case PD_K_ELU:
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = x[j] > 0 ? (T)0 : x[j];
        TF(map_expm1)(t, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = x[j] > 0 ? x[j] : p0 * t[j];
        break;
      case PD_K_SWISH:
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = p0 * x[j];
        TF(map_sigmoid)(t, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = x[j] * t[j];
        break;
      case PD_K_SOFTPLUS: /* (max(z, 0) + log1p(e^-|z|)) / beta, z = beta x */
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = -fabs(p0 * x[j]);
        TF(map_exp)(t, t, n);
        for (int64_t j = 0; j < n; j++) {
          T z = p0 * x[j];
          o[j] = z > p1 ? x[j] : ((z > 0 ? z : (T)0) + log1p(t[j])) / p0;
        }
        break;
      case PD_K_RELU6:
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = x[j] < 0 ? (T)0 : x[j] > p0 ? p0 : x[j];
        break;
      case PD_K_HARD_SWISH:
        PD_SIMD for (int64_t j = 0; j < n; j++) {
          T v = x[j] + p2;
          o[j] = x[j] * (v < 0 ? (T)0 : v > p0 ? p0 : v) / p1;
        }
        break;
      case PD_K_HARD_SIGMOID:
        PD_SIMD for (int64_t j = 0; j < n; j++) {
          T v = p0 * x[j] + p1;
          o[j] = v < 0 ? (T)0 : v > 1 ? (T)1 : v;
        }
        break;
      case PD_K_LOG_SIGMOID: /* min(x, 0) - log1p(e^-|x|) */
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = -fabs(x[j]);
        TF(map_exp)(t, t, n);
        for (int64_t j = 0; j < n; j++) o[j] = (x[j] < 0 ? x[j] : (T)0) - log1p(t[j]);
        break;
      case PD_K_SILU: /* swish by now (pd_k_act_canon) */
      case PD_K_ACT_COUNT_: break;
    }
  }
}

/* dx = dout * f'(x) on [b, e). */
static void TF(act_grad_range)(void *vjob, int64_t b, int64_t e) {
  const act_job *job = vjob;
  const T p0 = (T)job->p[0], p1 = (T)job->p[1], p2 = (T)job->p[2];
  T t[ACT_BLOCK];
  for (int64_t b0 = b; b0 < e; b0 += ACT_BLOCK) {
    const int64_t n = e - b0 < ACT_BLOCK ? e - b0 : ACT_BLOCK;
    const T *x = (const T *)job->x + b0, *d = (const T *)job->dout + b0;
    T *o = (T *)job->out + b0;
    switch (job->op) {
      case PD_K_GELU: { /* Phi(x) + x phi(x) */
        T f[ACT_BLOCK];
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = (T)-0.5 * x[j] * x[j];
        TF(map_exp)(t, t, n);
        TF(map_phi)(x, f, n);
        PD_SIMD for (int64_t j = 0; j < n; j++)
          o[j] = d[j] * (f[j] + x[j] * (T)ACT_INV_SQRT_2PI * t[j]);
        break;
      }
      case PD_K_GELU_TANH: /* s + 2 x s (1 - s) u', s = sigmoid(2u): (1 + tanh u) / 2 = s and
                              (1 - tanh^2 u) / 2 = 2 s (1 - s), which lose nothing where
                              tanh u is near -1 (the CUDA kernel computes the same) */
        PD_SIMD for (int64_t j = 0; j < n; j++)
          t[j] = (T)(2 * ACT_SQRT_2_PI) * (x[j] + (T)ACT_GELU_C * x[j] * x[j] * x[j]);
        TF(map_sigmoid)(t, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++)
          o[j] = d[j] * t[j] *
                 ((T)1 + (T)(2 * ACT_SQRT_2_PI) * x[j] * ((T)1 - t[j]) *
                             ((T)1 + (T)(3 * ACT_GELU_C) * x[j] * x[j]));
        break;
      case PD_K_LEAKY_RELU:
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = TF(sel)(x[j] > 0, d[j], p0 * d[j]);
        break;
      case PD_K_ELU: /* alpha e^x below 0 */
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = x[j] > 0 ? (T)0 : x[j];
        TF(map_exp)(t, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = TF(sel)(x[j] > 0, d[j], d[j] * p0 * t[j]);
        break;
      case PD_K_SWISH: /* s + beta x s (1 - s), s = sigmoid(beta x) */
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = p0 * x[j];
        TF(map_sigmoid)(t, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++)
          o[j] = d[j] * t[j] * ((T)1 + p0 * x[j] * ((T)1 - t[j]));
        break;
      case PD_K_SOFTPLUS: /* sigmoid(beta x), 1 above the threshold */
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = p0 * x[j];
        TF(map_sigmoid)(t, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = TF(sel)(p0 * x[j] > p1, d[j], d[j] * t[j]);
        break;
      case PD_K_RELU6:
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = TF(sel)((x[j] > 0) & (x[j] < p0), d[j], (T)0);
        break;
      case PD_K_HARD_SWISH:
        PD_SIMD for (int64_t j = 0; j < n; j++) {
          T v = x[j] + p2;
          o[j] = TF(sel)(v <= 0, (T)0, d[j] * TF(sel)(v < p0, ((T)2 * x[j] + p2) / p1, p0 / p1));
        }
        break;
      case PD_K_HARD_SIGMOID:
        PD_SIMD for (int64_t j = 0; j < n; j++) {
          T v = p0 * x[j] + p1;
          o[j] = TF(sel)((v > 0) & (v < 1), d[j] * p0, (T)0);
        }
        break;
      case PD_K_LOG_SIGMOID: /* sigmoid(-x) */
        PD_SIMD for (int64_t j = 0; j < n; j++) t[j] = -x[j];
        TF(map_sigmoid)(t, t, n);
        PD_SIMD for (int64_t j = 0; j < n; j++) o[j] = d[j] * t[j];
        break;
      case PD_K_SILU: /* swish by now (pd_k_act_canon) */
      case PD_K_ACT_COUNT_: break;
    }
  }
}

#undef ACT_SQRT1_2
#undef ACT_SQRT_2_PI
#undef ACT_INV_SQRT_2PI
#undef ACT_GELU_C
#undef T
#undef TN
#undef T_FLOAT
