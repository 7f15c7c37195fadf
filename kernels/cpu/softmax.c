/* softmax.c -- softmax and log-softmax over one axis (stable: each slice is shifted by its
 * max), cross entropy with hard (int64) or soft labels, and the fused softmax-with-cross-entropy,
 * with their gradients; and attention, the softmax between two products (its heads' blocks of
 * rows made whole on one thread each). Slices/rows are independent and split across threads. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"

#include <stdatomic.h>
#include <tgmath.h>

typedef struct softmax_job {
  const void *x;       /* input: x, the forward output, or probabilities, by kernel */
  const void *dout;    /* gradient input (dout, dloss) */
  void *out;           /* output (out, dx, softmax) */
  void *loss;          /* [rows] losses */
  const void *label;   /* int64 [rows] (hard) or T [rows, n] (soft) */
  int64_t n, post;     /* slice length and stride */
  int64_t ignore;      /* ignore_index */
  bool log, soft;
} softmax_job;

/* attention's (pd_kcpu_attention): rows a block of scores, nb blocks a head */
typedef struct attention_job {
  const pd_k_attention *a;
  const void *q, *k, *v, *bias;
  void *out, *lse;
  int64_t rows, nb;
  _Atomic bool failed;   /* a part found no memory for its scratch */
} attention_job;

#define T float
#define TN f32
#include "kernels/cpu/softmax_t.h"
#define T double
#define TN f64
#include "kernels/cpu/softmax_t.h"

/* Pick the f32 or f64 instance of a range function; NULL for other dtypes. */
#define BY_TYPE(dt, fn) ((dt) == PD_FP32 ? fn##_f32 : (dt) == PD_FP64 ? fn##_f64 : NULL)

/* Split `count` items of `cost` elements each (exp per element) across threads. */
static void run(int64_t count, int64_t cost, pd_kcpu_range_fn *fn, softmax_job *job) {
  int64_t grain = cost >= PD_KCPU_GRAIN_TRANSCENDENTAL ? 1
                                                       : PD_KCPU_GRAIN_TRANSCENDENTAL / cost;
  pd_kcpu_parallel(count, grain, fn, job);
}

static pd_status softmax_any(pd_dtype dt, int64_t pre, int64_t n, int64_t post, const void *x,
                             void *out, bool log) {
  pd_kcpu_range_fn *fn = BY_TYPE(dt, softmax_range);
  if (!fn) return PD_EUNSUPPORTED;
  pd_status st = pd_k_slices_check(pre, n, post);
  if (st) return st;
  softmax_job job = {.x = x, .out = out, .n = n, .post = post, .log = log};
  run(pre * post, n, fn, &job);
  return PD_OK;
}

static pd_status softmax_grad_any(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                                  const void *out, const void *dout, void *dx, bool log) {
  pd_kcpu_range_fn *fn = BY_TYPE(dt, softmax_grad_range);
  if (!fn) return PD_EUNSUPPORTED;
  pd_status st = pd_k_slices_check(pre, n, post);
  if (st) return st;
  softmax_job job = {.x = out, .dout = dout, .out = dx, .n = n, .post = post, .log = log};
  run(pre * post, n, fn, &job);
  return PD_OK;
}

pd_status pd_kcpu_softmax(pd_dtype dt, int64_t pre, int64_t n, int64_t post, const void *x,
                          void *out) {
  return softmax_any(dt, pre, n, post, x, out, false);
}

pd_status pd_kcpu_log_softmax(pd_dtype dt, int64_t pre, int64_t n, int64_t post, const void *x,
                              void *out) {
  return softmax_any(dt, pre, n, post, x, out, true);
}

/* A block of scores at most this many bytes (in L2, with the head's keys and values). */
#define ATTENTION_BLOCK ((int64_t)64 << 10)

pd_status pd_kcpu_attention(pd_dtype dt, const pd_k_attention *a, const void *q, const void *k,
                            const void *v, const void *bias, void *out, void *lse) {
  pd_kcpu_range_fn *fn = BY_TYPE(dt, attention_range);
  if (!fn) return PD_EUNSUPPORTED;
  pd_status st = pd_k_attention_check(a);
  if (st || a->batch == 0 || a->sq == 0) return st;
  int64_t rows = ATTENTION_BLOCK / (int64_t)pd_dtype_size(dt) / a->sk;
  rows = rows < 1 ? 1 : rows > a->sq ? a->sq : rows;
  attention_job job = {.a = a, .q = q, .k = k, .v = v, .bias = bias, .out = out, .lse = lse,
                       .rows = rows, .nb = (a->sq + rows - 1) / rows};
  atomic_init(&job.failed, false);
  pd_kcpu_parallel(a->batch * a->heads * job.nb, 1, fn, &job);
  return atomic_load(&job.failed) ? PD_ENOMEM : PD_OK;
}

pd_status pd_kcpu_softmax_grad(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                               const void *out, const void *dout, void *dx) {
  return softmax_grad_any(dt, pre, n, post, out, dout, dx, false);
}

pd_status pd_kcpu_log_softmax_grad(pd_dtype dt, int64_t pre, int64_t n, int64_t post,
                                   const void *out, const void *dout, void *dx) {
  return softmax_grad_any(dt, pre, n, post, out, dout, dx, true);
}

/* Validate sizes and hard labels (in [0, classes) or ignore_index) before any output is
 * written, and fill the common job fields. */
static pd_status xent_job(softmax_job *job, int64_t rows, int64_t classes, bool soft,
                          const void *label, int64_t ignore_index) {
  pd_status st = pd_k_slices_check(rows, classes, 1);
  if (st) return st;
  if (!soft) {
    const int64_t *l = label;
    for (int64_t r = 0; r < rows; r++)
      if ((l[r] < 0 || l[r] >= classes) && l[r] != ignore_index) return PD_EINVAL;
  }
  job->n = classes;
  job->post = 1;
  job->soft = soft;
  job->label = label;
  job->ignore = ignore_index;
  return PD_OK;
}

pd_status pd_kcpu_cross_entropy(pd_dtype dt, int64_t rows, int64_t classes, const void *prob,
                                bool soft_label, const void *label, int64_t ignore_index,
                                void *loss) {
  pd_kcpu_range_fn *fn = BY_TYPE(dt, xent_range);
  if (!fn) return PD_EUNSUPPORTED;
  softmax_job job = {.x = prob, .loss = loss};
  pd_status st = xent_job(&job, rows, classes, soft_label, label, ignore_index);
  if (st) return st;
  run(rows, soft_label ? classes : 1, fn, &job);
  return PD_OK;
}

pd_status pd_kcpu_cross_entropy_grad(pd_dtype dt, int64_t rows, int64_t classes,
                                     const void *prob, bool soft_label, const void *label,
                                     int64_t ignore_index, const void *dloss, void *dprob) {
  pd_kcpu_range_fn *fn = BY_TYPE(dt, xent_grad_range);
  if (!fn) return PD_EUNSUPPORTED;
  softmax_job job = {.x = prob, .dout = dloss, .out = dprob};
  pd_status st = xent_job(&job, rows, classes, soft_label, label, ignore_index);
  if (st) return st;
  run(rows, classes, fn, &job);
  return PD_OK;
}

pd_status pd_kcpu_softmax_xent(pd_dtype dt, int64_t rows, int64_t classes, const void *logits,
                               bool soft_label, const void *label, int64_t ignore_index,
                               void *softmax, void *loss) {
  pd_kcpu_range_fn *fn = BY_TYPE(dt, softmax_xent_range);
  if (!fn) return PD_EUNSUPPORTED;
  softmax_job job = {.x = logits, .out = softmax, .loss = loss};
  pd_status st = xent_job(&job, rows, classes, soft_label, label, ignore_index);
  if (st) return st;
  run(rows, classes, fn, &job);
  return PD_OK;
}

pd_status pd_kcpu_softmax_xent_grad(pd_dtype dt, int64_t rows, int64_t classes,
                                    const void *softmax, bool soft_label, const void *label,
                                    int64_t ignore_index, const void *dloss, void *dlogits) {
  pd_kcpu_range_fn *fn = BY_TYPE(dt, softmax_xent_grad_range);
  if (!fn) return PD_EUNSUPPORTED;
  softmax_job job = {.x = softmax, .dout = dloss, .out = dlogits};
  pd_status st = xent_job(&job, rows, classes, soft_label, label, ignore_index);
  if (st) return st;
  run(rows, classes, fn, &job);
  return PD_OK;
}
