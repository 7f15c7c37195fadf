/* act.c -- the CPU backend's activations with parameters (act, act_grad: gelu, leaky_relu, elu,
 * swish, softplus, relu6, hard_swish, log_sigmoid, hard_sigmoid; silu as swish): the typed loops come from act_t.h, the fp32
 * e^x, tanh and logistic function from fastmath.h's vector code. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/cpu/fastmath.h"
#include "kernels/kernels_int.h"

#include <tgmath.h>

/* A flat activation job split by pd_kcpu_parallel. */
typedef struct act_job {
  pd_k_act op;
  double p[3];          /* the op's parameters (unused ones 0) */
  const void *x, *dout; /* input, gradient of the output (act_grad) */
  void *out;            /* out, or dx */
} act_job;

/* The loops work on blocks of ACT_BLOCK elements: a block's transcendental part (e^x, tanh, the
 * logistic function) is one call of fastmath.h's vector code into a scratch array on the
 * stack, then a plain loop combines it with x. */
enum { ACT_BLOCK = 256 };

#define PD_KCPU_TEMPLATE "kernels/cpu/act_t.h"
#include "kernels/cpu/each_float.h"

/* Piecewise-linear ones are as cheap as relu; the others call e^x, tanh or libm. */
static int64_t act_grain(pd_k_act op) {
  bool linear = op == PD_K_LEAKY_RELU || op == PD_K_RELU6 || op == PD_K_HARD_SWISH ||
                op == PD_K_HARD_SIGMOID;
  return linear ? PD_KCPU_GRAIN : PD_KCPU_GRAIN_TRANSCENDENTAL;
}

static pd_status run(pd_k_act op, pd_dtype dt, int64_t n, const double *p, const void *x,
                     const void *dout, void *out, bool grad) {
  pd_status st = pd_k_act_check(op, dt, n, p);
  if (st) return st;
  act_job job = {.op = op, .x = x, .dout = dout, .out = out};
  pd_k_act_canon(&job.op, p, job.p);
  op = job.op;
  pd_kcpu_range_fn *fn = dt == PD_FP32 ? (grad ? act_grad_range_f32 : act_range_f32)
                                       : (grad ? act_grad_range_f64 : act_range_f64);
  pd_kcpu_parallel(n, act_grain(op), fn, &job);
  return PD_OK;
}

pd_status pd_kcpu_act(pd_k_act op, pd_dtype dt, int64_t n, const double *p, const void *x,
                      void *out) {
  return run(op, dt, n, p, x, NULL, out, false);
}

pd_status pd_kcpu_act_grad(pd_k_act op, pd_dtype dt, int64_t n, const double *p, const void *x,
                           const void *dout, void *dx) {
  return run(op, dt, n, p, x, dout, dx, true);
}
