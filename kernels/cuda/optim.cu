/* optim.cu -- the CUDA backend's optimizer updates (opt: sgd, momentum, adam/adamw, rmsprop,
 * adagrad): one grid-stride kernel, in double precision, the arithmetic the CPU backend's
 * (kernels/cpu/optim_t.h), expression for expression. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <math.h>

/* The state buffers of one update, passed by value (device pointers). */
template <typename T>
struct opt_bufs {
  const T *s[3];
  T *so[3];
};

template <typename T>
__global__ void opt_kernel(int64_t n, pd_k_opt o, const T *p, const T *g, T *po,
                           opt_bufs<T> b) {
  const double lr = o.lr;
  PD_KCU_LOOP(i, n) {
    double pi = p[i], gi = g[i];
    switch (o.kind) {
      case PD_K_OPT_SGD: po[i] = (T)(pi - lr * gi); break;
      case PD_K_OPT_MOMENTUM: {
        double gr = gi * o.rescale + o.l2 * pi, vn = (double)b.s[0][i] * o.mu + gr;
        b.so[0][i] = (T)vn;
        po[i] = (T)(pi - lr * (o.nesterov ? gr + vn * o.mu : vn));
        break;
      }
      case PD_K_OPT_ADAM: {
        double mom1 = o.beta1 * b.s[0][i] + (1 - o.beta1) * gi,
               mom2 = o.beta2 * b.s[1][i] + (1 - o.beta2) * gi * gi;
        b.so[0][i] = (T)mom1;
        b.so[1][i] = (T)mom2;
        po[i] = (T)(pi * (1 - o.decay) - lr * (mom1 / (sqrt(mom2) + o.eps)));
        break;
      }
      case PD_K_OPT_RMSPROP: {
        double s2 = o.rho * b.s[0][i] + (1 - o.rho) * gi * gi, den = s2 + o.eps;
        if (o.centered) {
          double a2 = o.rho * b.s[2][i] + (1 - o.rho) * gi;
          b.so[2][i] = (T)a2;
          den -= a2 * a2;
        }
        double m2 = o.mu * b.s[1][i] + lr * gi / sqrt(den);
        b.so[0][i] = (T)s2;
        b.so[1][i] = (T)m2;
        po[i] = (T)(pi - m2);
        break;
      }
      case PD_K_OPT_ADAGRAD: {
        double m2 = b.s[0][i] + gi * gi;
        b.so[0][i] = (T)m2;
        po[i] = (T)(pi - lr * gi / (sqrt(m2) + o.eps));
        break;
      }
      default: break;
    }
  }
}

template <typename T>
static void launch(int64_t n, const pd_k_opt *o, const void *p, const void *g,
                   const void *const *s, void *p_out, void *const *s_out) {
  opt_bufs<T> b = {};
  for (int i = 0; i < pd_k_opt_nstates(o); i++) {
    b.s[i] = (const T *)s[i];
    b.so[i] = (T *)s_out[i];
  }
  opt_kernel<T><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
      n, *o, (const T *)p, (const T *)g, (T *)p_out, b);
}

pd_status pd_kcu_opt(pd_dtype dt, int64_t n, const pd_k_opt *o, const void *p, const void *g,
                     const void *const *s, void *p_out, void *const *s_out) {
  pd_status st = pd_k_opt_check(dt, n, o, p, g, s, p_out, s_out);
  if (st) return st;
  if (n == 0) return PD_OK;
  if (dt == PD_FP32) launch<float>(n, o, p, g, s, p_out, s_out);
  else launch<double>(n, o, p, g, s, p_out, s_out);
  PD_KCU_LAUNCHED("optimizer kernel");
  return PD_OK;
}

/* unscale (kernels.h): out = x * inv_scale, and *found = true where some x is not finite (every
 * thread that sees one writes the same value). */
template <typename T>
__global__ void unscale_kernel(int64_t n, const T *x, T inv, T *out, bool *found) {
  PD_KCU_LOOP(i, n) {
    T v = x[i];
    if (!isfinite(v)) *found = true;
    out[i] = v * inv;
  }
}

pd_status pd_kcu_unscale(pd_dtype dt, int64_t n, const void *x, double inv_scale, void *out,
                         bool *found) {
  pd_status st = pd_k_unscale_check(dt, n, x, inv_scale, out, found);
  if (st) return st;
  if (n == 0) return PD_OK;
  if (dt == PD_FP32)
    unscale_kernel<float><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, (const float *)x, (float)inv_scale, (float *)out, found);
  else
    unscale_kernel<double><<<pd_kcu_blocks(n), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
        n, (const double *)x, inv_scale, (double *)out, found);
  PD_KCU_LAUNCHED("unscale kernel");
  return PD_OK;
}
