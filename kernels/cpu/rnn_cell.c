/* rnn_cell.c -- the CPU backend's gate arithmetic of the fused LSTM and GRU steps (kernels.h:
 * lstm_cell, gru_cell and their gradients): the sigmoids and tanhs through the vectorised unary
 * kernel (fastmath.h) a row's gate columns at a time, the rest in plain loops. Runs on the
 * calling thread (FTZ/DAZ set by pd_k_init / pd_k_fp_enter). */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels_int.h"

#include <math.h>

/* The arithmetic, for float and double (n rows, hidden H): see kernels.h. */
#define PD_RNN_CELL(T, SFX)                                                                      \
  static void lstm_combine_##SFX(int64_t n, int64_t H, const T *g, const T *pc, T *c) {          \
    for (int64_t r = 0; r < n; r++, g += 4 * H, pc += H, c += H)                                 \
      for (int64_t j = 0; j < H; j++) c[j] = g[H + j] * pc[j] + g[j] * g[2 * H + j];             \
  }                                                                                              \
  static void lstm_out_##SFX(int64_t n, int64_t H, const T *g, T *h) {                           \
    for (int64_t r = 0; r < n; r++, g += 4 * H, h += H)                                          \
      for (int64_t j = 0; j < H; j++) h[j] *= g[3 * H + j];                                      \
  }                                                                                              \
  static void lstm_bw_##SFX(int64_t n, int64_t H, const T *g, const T *pc, const T *tc,          \
                            const T *dh, T *dc, T *dg) {                                         \
    for (int64_t r = 0; r < n; r++, g += 4 * H, pc += H, tc += H, dh += H, dc += H, dg += 4 * H) \
      for (int64_t j = 0; j < H; j++) {                                                          \
        T i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j], t = tc[j];                \
        T dcj = dc[j] + dh[j] * o * ((T)1 - t * t);                                              \
        dg[j] = dcj * gg * i * ((T)1 - i);                                                       \
        dg[H + j] = dcj * pc[j] * f * ((T)1 - f);                                                \
        dg[2 * H + j] = dcj * i * ((T)1 - gg * gg);                                              \
        dg[3 * H + j] = dh[j] * t * o * ((T)1 - o);                                              \
        dc[j] = dcj * f;                                                                         \
      }                                                                                          \
  }                                                                                              \
  static void gru_pre_##SFX(int64_t n, int64_t H, const T *u, const T *hp, const T *b, T *s) {   \
    for (int64_t r = 0; r < n; r++, u += 3 * H, hp += 3 * H, s += 4 * H) {                       \
      for (int64_t j = 0; j < 2 * H; j++) s[j] = u[j] + hp[j] + b[j];                            \
      for (int64_t j = 0; j < H; j++) s[3 * H + j] = hp[2 * H + j] + b[2 * H + j];               \
    }                                                                                            \
  }                                                                                              \
  static void gru_cand_##SFX(int64_t n, int64_t H, const T *u, T *s) {                           \
    for (int64_t r = 0; r < n; r++, u += 3 * H, s += 4 * H)                                      \
      for (int64_t j = 0; j < H; j++) s[2 * H + j] = u[2 * H + j] + s[j] * s[3 * H + j];         \
  }                                                                                              \
  static void gru_out_##SFX(int64_t n, int64_t H, const T *s, const T *ph, T *h) {               \
    for (int64_t r = 0; r < n; r++, s += 4 * H, ph += H, h += H)                                 \
      for (int64_t j = 0; j < H; j++)                                                            \
        h[j] = ((T)1 - s[H + j]) * s[2 * H + j] + s[H + j] * ph[j];                              \
  }                                                                                              \
  static void gru_bw_##SFX(int64_t n, int64_t H, const T *s, const T *ph, T *dh, T *du,          \
                           T *dhp) {                                                             \
    for (int64_t r = 0; r < n; r++, s += 4 * H, ph += H, dh += H, du += 3 * H, dhp += 3 * H)     \
      for (int64_t j = 0; j < H; j++) {                                                          \
        T rg = s[j], z = s[H + j], ng = s[2 * H + j], hn = s[3 * H + j], d = dh[j];              \
        T dn = d * ((T)1 - z) * ((T)1 - ng * ng);                                                \
        T dr = dn * hn * rg * ((T)1 - rg), dz = d * (ph[j] - ng) * z * ((T)1 - z);               \
        du[j] = dhp[j] = dr;                                                                     \
        du[H + j] = dhp[H + j] = dz;                                                             \
        du[2 * H + j] = dn;                                                                      \
        dhp[2 * H + j] = dn * rg;                                                                \
        dh[j] = d * z;                                                                           \
      }                                                                                          \
  }
PD_RNN_CELL(float, f32)
PD_RNN_CELL(double, f64)
#undef PD_RNN_CELL

#define F32(p) ((float *)(p))
#define F64(p) ((double *)(p))
#define CF32(p) ((const float *)(p))
#define CF64(p) ((const double *)(p))

/* f in place on cols columns from column at of n rows of width w. */
static pd_status act_cols(pd_k_unop f, pd_dtype dt, int64_t n, int64_t w, int64_t at,
                          int64_t cols, void *x) {
  size_t es = pd_dtype_size(dt), rb = (size_t)w * es;
  pd_status st = PD_OK;
  for (int64_t r = 0; r < n && !st; r++) {
    char *q = (char *)x + (size_t)r * rb + (size_t)at * es;
    st = pd_kcpu_unary(f, dt, cols, q, q);
  }
  return st;
}

pd_status pd_kcpu_lstm_cell(pd_dtype dt, int64_t n, int64_t h, void *g, const void *pc, void *c,
                            void *hout) {
  pd_status st = pd_k_rnn_cell_check(dt, n, h);
  if (st || n == 0 || h == 0) return st;
  if ((st = act_cols(PD_K_SIGMOID, dt, n, 4 * h, 0, 2 * h, g)) ||
      (st = act_cols(PD_K_TANH, dt, n, 4 * h, 2 * h, h, g)) ||
      (st = act_cols(PD_K_SIGMOID, dt, n, 4 * h, 3 * h, h, g)))
    return st;
  if (dt == PD_FP32) lstm_combine_f32(n, h, CF32(g), CF32(pc), F32(c));
  else lstm_combine_f64(n, h, CF64(g), CF64(pc), F64(c));
  if ((st = pd_kcpu_unary(PD_K_TANH, dt, n * h, c, hout))) return st;
  if (dt == PD_FP32) lstm_out_f32(n, h, CF32(g), F32(hout));
  else lstm_out_f64(n, h, CF64(g), F64(hout));
  return PD_OK;
}

pd_status pd_kcpu_lstm_cell_grad(pd_dtype dt, int64_t n, int64_t h, const void *g,
                                 const void *pc, const void *c, const void *dh, void *dc,
                                 void *dg) {
  pd_status st = pd_k_rnn_cell_check(dt, n, h);
  if (st || n == 0 || h == 0) return st;
  /* tanh(c), vectorised, into a scratch block of n h values */
  size_t bytes = (size_t)(n * h) * pd_dtype_size(dt);
  void *tc = pd_k_host_alloc(bytes);
  if (!tc) return PD_ENOMEM;
  st = pd_kcpu_unary(PD_K_TANH, dt, n * h, c, tc);
  if (!st && dt == PD_FP32)
    lstm_bw_f32(n, h, CF32(g), CF32(pc), CF32(tc), CF32(dh), F32(dc), F32(dg));
  else if (!st)
    lstm_bw_f64(n, h, CF64(g), CF64(pc), CF64(tc), CF64(dh), F64(dc), F64(dg));
  pd_k_host_free(tc);
  return st;
}

pd_status pd_kcpu_gru_cell(pd_dtype dt, int64_t n, int64_t h, const void *u, const void *hp,
                           const void *b, const void *ph, void *s, void *hout) {
  pd_status st = pd_k_rnn_cell_check(dt, n, h);
  if (st || n == 0 || h == 0) return st;
  if (dt == PD_FP32) gru_pre_f32(n, h, CF32(u), CF32(hp), CF32(b), F32(s));
  else gru_pre_f64(n, h, CF64(u), CF64(hp), CF64(b), F64(s));
  if ((st = act_cols(PD_K_SIGMOID, dt, n, 4 * h, 0, 2 * h, s))) return st;
  if (dt == PD_FP32) gru_cand_f32(n, h, CF32(u), F32(s));
  else gru_cand_f64(n, h, CF64(u), F64(s));
  if ((st = act_cols(PD_K_TANH, dt, n, 4 * h, 2 * h, h, s))) return st;
  if (dt == PD_FP32) gru_out_f32(n, h, CF32(s), CF32(ph), F32(hout));
  else gru_out_f64(n, h, CF64(s), CF64(ph), F64(hout));
  return PD_OK;
}

pd_status pd_kcpu_gru_cell_grad(pd_dtype dt, int64_t n, int64_t h, const void *s,
                                const void *ph, void *dh, void *du, void *dhp) {
  pd_status st = pd_k_rnn_cell_check(dt, n, h);
  if (st || n == 0 || h == 0) return st;
  if (dt == PD_FP32) gru_bw_f32(n, h, CF32(s), CF32(ph), F32(dh), F32(du), F32(dhp));
  else gru_bw_f64(n, h, CF64(s), CF64(ph), F64(dh), F64(du), F64(dhp));
  return PD_OK;
}
