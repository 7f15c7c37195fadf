/* steps_backend.h -- a copy of the CPU backend's table whose whole-sequence recurrences
 * (lstm_seq, gru_seq and their gradients) are kernels/rnn_steps.c's compositions of the CPU's
 * own entries (a gather, a GEMM and a cell entry a step, a scatter): the code the CUDA backend
 * runs, checked on the CPU by the kernel and op tests. Header-only. */
#ifndef PD_TESTS_KERNELS_STEPS_BACKEND_H
#define PD_TESTS_KERNELS_STEPS_BACKEND_H

#include <string.h>

#include "kernels/kernels.h"

static pd_status sb_copy(void *dst, const void *src, size_t n) {
  if (n) memcpy(dst, src, n);
  return PD_OK;
}

static pd_k_steps_env sb_env(const pd_k_rnn_seq *s) {
  return (pd_k_steps_env){pd_k_cpu(), s ? s->row : NULL, pd_k_host_alloc, pd_k_host_free,
                          sb_copy};
}

static pd_status sb_lstm_seq(const pd_k_rnn_seq *s, const void *x, const void *w,
                             const void *h0, const void *c0, void *hidden, void *cell,
                             void *gate) {
  pd_k_steps_env e = sb_env(s);
  return pd_k_lstm_seq_steps(&e, s, x, w, h0, c0, hidden, cell, gate);
}

static pd_status sb_lstm_seq_grad(const pd_k_rnn_seq *s, const void *w, const void *h0,
                                  const void *c0, const void *hidden, const void *cell,
                                  const void *gate, const void *dhidden, const void *dcell,
                                  void *dx, void *dw, void *dh0, void *dc0) {
  pd_k_steps_env e = sb_env(s);
  return pd_k_lstm_seq_grad_steps(&e, s, w, h0, c0, hidden, cell, gate, dhidden, dcell, dx, dw,
                                  dh0, dc0);
}

static pd_status sb_gru_seq(const pd_k_rnn_seq *s, const void *x, const void *w, const void *b,
                            const void *h0, void *hidden, void *gate) {
  pd_k_steps_env e = sb_env(s);
  return pd_k_gru_seq_steps(&e, s, x, w, b, h0, hidden, gate);
}

static pd_status sb_gru_seq_grad(const pd_k_rnn_seq *s, const void *w, const void *h0,
                                 const void *hidden, const void *gate, const void *dhidden,
                                 void *dx, void *dw, void *db, void *dh0) {
  pd_k_steps_env e = sb_env(s);
  return pd_k_gru_seq_grad_steps(&e, s, w, h0, hidden, gate, dhidden, dx, dw, db, dh0);
}

/* The table (static storage, made on the first call). */
static inline const pd_k_backend *steps_backend(void) {
  static pd_k_backend b;
  if (!b.name) {
    b = *pd_k_cpu();
    b.name = "cpu, recurrences step by step";
    b.lstm_seq = sb_lstm_seq;
    b.lstm_seq_grad = sb_lstm_seq_grad;
    b.gru_seq = sb_gru_seq;
    b.gru_seq_grad = sb_gru_seq_grad;
  }
  return &b;
}

#endif /* PD_TESTS_KERNELS_STEPS_BACKEND_H */
