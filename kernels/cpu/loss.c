/* loss.c -- the CPU backend's element-wise losses and their gradients (sigmoid_xent, smooth_l1,
 * huber, kldiv; kernels.h gives the formulas): the typed loops come from loss_t.h. Elements (or
 * smooth_l1's rows) are independent and split across the pool's threads; the sums (a row of
 * smooth_l1, kldiv's total) run in index order on one thread, and sigmoid_xent's count of the
 * labels not ignored is an integer, so the results do not depend on the thread count. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels_int.h"

#include <math.h>

/* The operands of one call: y is the label, Y or target; w1, w2 smooth_l1's inside and outside
 * weights; o[] the outputs in the order of the entry's arguments. */
typedef struct loss_job {
  const void *x, *y, *w1, *w2, *dout;
  void *o[4];
  int64_t cols, ignore;
  double p;     /* s2, delta or kldiv's scale */
  double norm;  /* sigmoid_xent's normaliser */
  bool reduce;
} loss_job;

/* A label is ignored when its integer part is ignore_index (Fluid casts it to int). */
static inline bool loss_ignored(double l, int64_t ignore) {
  return l > -9.2e18 && l < 9.2e18 && (int64_t)l == ignore;
}

static inline double loss_sigmoid(double x) {
  if (x >= 0) return 1 / (1 + exp(-x));
  double e = exp(x);
  return e / (1 + e);
}

#define PD_KCPU_TEMPLATE "kernels/cpu/loss_t.h"
#include "kernels/cpu/each_float.h"

#define BY_TYPE(dt, fn) ((dt) == PD_FP32 ? fn##_f32 : fn##_f64)

/* sigmoid_xent's normaliser. */
static double sxent_norm(pd_dtype dt, const loss_job *j, int64_t n, bool normalize) {
  if (!normalize) return 1;
  int64_t cnt = BY_TYPE(dt, sxent_count)(j, n);
  return cnt > 0 ? (double)cnt : 1;
}

pd_status pd_kcpu_sigmoid_xent(pd_dtype dt, int64_t n, const void *x, const void *label,
                               int64_t ignore_index, bool normalize, void *out) {
  pd_status st = pd_k_sigmoid_xent_check(dt, n, x, label, out);
  if (st || n == 0) return st;
  loss_job j = {.x = x, .y = label, .o = {out}, .ignore = ignore_index};
  j.norm = sxent_norm(dt, &j, n, normalize);
  pd_kcpu_parallel(n, PD_KCPU_GRAIN_TRANSCENDENTAL, BY_TYPE(dt, sxent_range), &j);
  return PD_OK;
}

pd_status pd_kcpu_sigmoid_xent_grad(pd_dtype dt, int64_t n, const void *x, const void *label,
                                    const void *dout, int64_t ignore_index, bool normalize,
                                    void *dx, void *dlabel) {
  pd_status st = pd_k_sigmoid_xent_check(dt, n, x, label, dout);
  if (st || n == 0 || (!dx && !dlabel)) return st;
  loss_job j = {.x = x, .y = label, .dout = dout, .o = {dx, dlabel}, .ignore = ignore_index};
  j.norm = sxent_norm(dt, &j, n, normalize);
  pd_kcpu_parallel(n, PD_KCPU_GRAIN_TRANSCENDENTAL, BY_TYPE(dt, sxent_grad_range), &j);
  return PD_OK;
}

/* Rows a part of a smooth_l1 job takes: about a grain of elements. */
static int64_t row_grain(int64_t cols) {
  return cols > 0 && cols < PD_KCPU_GRAIN ? PD_KCPU_GRAIN / cols : 1;
}

pd_status pd_kcpu_smooth_l1(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                            const void *y, const void *iw, const void *ow, double s2, void *diff,
                            void *out) {
  pd_status st = pd_k_smooth_l1_check(dt, rows, cols, s2, x, y, out);
  if (st || rows == 0) return st;
  loss_job j = {.x = x, .y = y, .w1 = iw, .w2 = ow, .o = {diff, out}, .cols = cols, .p = s2};
  pd_kcpu_parallel(rows, row_grain(cols), BY_TYPE(dt, sl1_range), &j);
  return PD_OK;
}

pd_status pd_kcpu_smooth_l1_grad(pd_dtype dt, int64_t rows, int64_t cols, const void *x,
                                 const void *y, const void *iw, const void *ow, double s2,
                                 const void *dout, void *dx, void *dy, void *diw, void *dow) {
  pd_status st = pd_k_smooth_l1_check(dt, rows, cols, s2, x, y, dout);
  if (st || rows == 0 || cols == 0) return st;
  loss_job j = {.x = x, .y = y, .w1 = iw, .w2 = ow, .dout = dout, .o = {dx, dy, diw, dow},
                .cols = cols, .p = s2};
  pd_kcpu_parallel(rows, row_grain(cols), BY_TYPE(dt, sl1_grad_range), &j);
  return PD_OK;
}

pd_status pd_kcpu_huber(pd_dtype dt, int64_t n, const void *x, const void *y, double delta,
                        void *res, void *out) {
  pd_status st = pd_k_huber_check(dt, n, delta, x, y, out);
  if (st || n == 0) return st;
  loss_job j = {.x = x, .y = y, .o = {res, out}, .p = delta};
  pd_kcpu_parallel(n, PD_KCPU_GRAIN, BY_TYPE(dt, huber_range), &j);
  return PD_OK;
}

pd_status pd_kcpu_huber_grad(pd_dtype dt, int64_t n, const void *x, const void *y,
                             const void *dout, double delta, void *dx, void *dy) {
  pd_status st = pd_k_huber_check(dt, n, delta, x, y, dout);
  if (st || n == 0) return st;
  loss_job j = {.x = x, .y = y, .dout = dout, .o = {dx, dy}, .p = delta};
  pd_kcpu_parallel(n, PD_KCPU_GRAIN, BY_TYPE(dt, huber_grad_range), &j);
  return PD_OK;
}

pd_status pd_kcpu_kldiv(pd_dtype dt, int64_t n, const void *x, const void *target, bool reduce,
                        double scale, void *loss) {
  pd_status st = pd_k_kldiv_check(dt, n, reduce, scale, x, target, false, loss);
  if (st) return st;
  loss_job j = {.x = x, .y = target, .o = {loss}, .p = scale, .reduce = reduce};
  if (reduce) BY_TYPE(dt, kl_sum)(&j, n);
  else if (n > 0) pd_kcpu_parallel(n, PD_KCPU_GRAIN_TRANSCENDENTAL, BY_TYPE(dt, kl_range), &j);
  return PD_OK;
}

pd_status pd_kcpu_kldiv_grad(pd_dtype dt, int64_t n, const void *x, const void *target,
                             const void *dloss, bool reduce, double scale, void *dx,
                             void *dtarget) {
  pd_status st = pd_k_kldiv_check(dt, n, reduce, scale, x, target, true, dloss);
  if (st || n == 0) return st;
  loss_job j = {.x = x, .y = target, .dout = dloss, .o = {dx, dtarget}, .p = scale,
                .reduce = reduce};
  pd_kcpu_parallel(n, PD_KCPU_GRAIN_TRANSCENDENTAL, BY_TYPE(dt, kl_grad_range), &j);
  return PD_OK;
}
