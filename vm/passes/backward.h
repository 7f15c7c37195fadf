/* backward.h -- append_backward: extend a program with the ops that compute the gradient of a
 * scalar cost with respect to every parameter it depends on (Fluid's append_backward).
 *
 * The pass works on block 0:
 *   1. The ops the cost depends on are found by walking back from it.
 *   2. Which vars need a gradient: trainable parameters (persistable floating-point vars that are
 *      not stop_gradient), and every floating-point output of a differentiable op that reads one
 *      of them. Data, labels, integer values and stop_gradient vars get none.
 *   3. cost@GRAD is filled with 1; then, for the ops from step 1 in reverse order, each
 *      differentiable op whose outputs have gradients and whose inputs need one gets its
 *      gradient op "<type>_grad" (vm/ops/ops_grad.c): it reads the forward inputs and outputs (the
 *      values the forward run left in its scope) and the outputs' gradients "<var>@GRAD", and
 *      writes "<var>@GRAD" for the inputs that need one; slots of gradients nobody needs are
 *      bound to PD_EMPTY_VAR_NAME. A var read by several ops gets one gradient from each (the
 *      second and later named "<var>@GRAD@RENAME@<k>"), added up by a `sum` op before anything
 *      reads the total.
 *   4. Gradient ops carry their forward op's attributes and source location (so a failing
 *      gradient op points at the .pd line of the forward expression) and op_role 1 (backward),
 *      as Fluid marks them; their output vars are declared in block 0 with the forward vars'
 *      shapes.
 *
 * Ops that own blocks (conditional_block, while, recurrent) are differentiated by their own
 * gradient makers (the control-flow issue); until those exist a cost that depends on one through
 * a parameter gives PD_EUNSUPPORTED at that op.
 *
 * Ownership: the program is changed in place. The result lists (parameter, gradient) name pairs;
 * release it with pd_backward_release. */
#ifndef PD_BACKWARD_H
#define PD_BACKWARD_H

#include "base/base.h"
#include "vm/ir/program.h"

/* Fluid's OpRole values, for the op_role attribute. */
enum { PD_OP_ROLE_FORWARD = 0, PD_OP_ROLE_BACKWARD = 1, PD_OP_ROLE_OPTIMIZE = 2,
       PD_OP_ROLE_LOSS = 256 };

typedef struct pd_param_grad {
  char *param;   /* a persistable var of block 0 */
  char *grad;    /* its gradient var, "<param>@GRAD" */
} pd_param_grad;

typedef struct pd_backward {
  int n;
  pd_param_grad *pairs;   /* in the order the parameters are declared in block 0 */
} pd_backward;

/* Append the backward pass for `cost` (a floating-point var of block 0 with one element) to p.
 * On failure p may hold some of the appended ops; callers work on a copy (pd_program_clone).
 * Errors: PD_ENOTFOUND (no such var), PD_EINVAL (cost not a one-element float; no parameter
 * reaches the cost), PD_EUNSUPPORTED (see above), PD_ENOMEM; and any error of preparing the
 * gradient ops, at the forward op's location. */
pd_status pd_append_backward(pd_program *p, const char *cost, pd_backward *out, pd_error *err);
void pd_backward_release(pd_backward *b);

#endif /* PD_BACKWARD_H */
