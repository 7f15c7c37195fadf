/* rnn_seq.cu -- the CUDA backend's whole-sequence recurrences (lstm_seq, gru_seq and their
 * gradients, kernels.h): the steps composed of this backend's own entries (kernels/rnn_steps.c:
 * a gather, then a cuBLAS GEMM and a cell kernel a step, then a scatter), with the plan's row
 * list uploaded once a call. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

/* The environment of rnn_steps.c on this backend, with s->row on the GPU (*drow, to free). */
static pd_status env_of(const pd_k_rnn_seq *s, pd_k_steps_env *e, int64_t **drow) {
  PD_KCU_TRY(pd_k_rnn_seq_check(s));
  *drow = NULL;
  int64_t total = s->steps ? s->koff[s->steps] : 0;
  if (total) {
    size_t bytes = (size_t)total * sizeof **drow;
    if (!(*drow = (int64_t *)pd_kcu_scratch(bytes))) return PD_ENOMEM;
    pd_status st = pd_k_dev_upload(*drow, s->row, bytes);
    if (st) {
      pd_k_dev_free(*drow);
      return st;
    }
  }
  *e = pd_k_steps_env{pd_k_cuda(), *drow, pd_k_dev_alloc, pd_k_dev_free, pd_k_dev_copy};
  return PD_OK;
}

pd_status pd_kcu_lstm_seq(const pd_k_rnn_seq *s, const void *x, const void *w, const void *h0,
                          const void *c0, void *hidden, void *cell, void *gate) {
  pd_k_steps_env e;
  int64_t *drow;
  PD_KCU_TRY(env_of(s, &e, &drow));
  pd_status st = pd_k_lstm_seq_steps(&e, s, x, w, h0, c0, hidden, cell, gate);
  pd_k_dev_free(drow); /* stream order: reused only by work queued after the steps */
  return st;
}

pd_status pd_kcu_lstm_seq_grad(const pd_k_rnn_seq *s, const void *w, const void *h0,
                               const void *c0, const void *hidden, const void *cell,
                               const void *gate, const void *dhidden, const void *dcell,
                               void *dx, void *dw, void *dh0, void *dc0) {
  pd_k_steps_env e;
  int64_t *drow;
  PD_KCU_TRY(env_of(s, &e, &drow));
  pd_status st = pd_k_lstm_seq_grad_steps(&e, s, w, h0, c0, hidden, cell, gate, dhidden, dcell,
                                          dx, dw, dh0, dc0);
  pd_k_dev_free(drow);
  return st;
}

pd_status pd_kcu_gru_seq(const pd_k_rnn_seq *s, const void *x, const void *w, const void *b,
                         const void *h0, void *hidden, void *gate) {
  pd_k_steps_env e;
  int64_t *drow;
  PD_KCU_TRY(env_of(s, &e, &drow));
  pd_status st = pd_k_gru_seq_steps(&e, s, x, w, b, h0, hidden, gate);
  pd_k_dev_free(drow);
  return st;
}

pd_status pd_kcu_gru_seq_grad(const pd_k_rnn_seq *s, const void *w, const void *h0,
                              const void *hidden, const void *gate, const void *dhidden,
                              void *dx, void *dw, void *db, void *dh0) {
  pd_k_steps_env e;
  int64_t *drow;
  PD_KCU_TRY(env_of(s, &e, &drow));
  pd_status st = pd_k_gru_seq_grad_steps(&e, s, w, h0, hidden, gate, dhidden, dx, dw, db, dh0);
  pd_k_dev_free(drow);
  return st;
}
