/* exec_place.c -- the executor's placement rules on the GPU: the ops whose kernels run there
 * (their kernels read and write tensor data only through the backend, ctx->k, and the place-
 * aware pd_ctx_* helpers), and the slots whose values stay on the host or are left alone. */
#include "config.h"
#include "vm/run/exec_place.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

/* Sorted (strcmp order) for bsearch; tests/vm/test_exec_place.c checks the order and that each
 * name is an op of the registry. */
static const char *const gpu_ops[] = {
    "abs",          "abs_grad",
    "adam",         "cast",
    "elementwise_add",      "elementwise_add_grad",
    "elementwise_div",      "elementwise_div_grad",
    "elementwise_max",      "elementwise_max_grad",
    "elementwise_min",      "elementwise_min_grad",
    "elementwise_mul",      "elementwise_mul_grad",
    "elementwise_pow",      "elementwise_pow_grad",
    "elementwise_sub",      "elementwise_sub_grad",
    "equal",        "exp",
    "exp_grad",     "fc",
    "fc_grad",      "fill_constant",
    "greater_equal",        "greater_than",
    "less_equal",   "less_than",
    "log",          "log_grad",
    "log_softmax",  "log_softmax_grad",
    "mean",         "mean_grad",
    "mul",          "mul_grad",
    "not_equal",    "reduce_max",
    "reduce_max_grad",      "reduce_mean",
    "reduce_mean_grad",     "reduce_min",
    "reduce_min_grad",      "reduce_sum",
    "reduce_sum_grad",      "relu",
    "relu_grad",    "scale",
    "sigmoid",      "sigmoid_grad",
    "softmax",      "softmax_grad",
    "softmax_with_cross_entropy",   "softmax_with_cross_entropy_grad",
    "sqrt",         "sqrt_grad",
    "square",       "square_grad",
    "sum",          "tanh",
    "tanh_grad",
};

const char *const *pd_exec_gpu_op_names(size_t *n) {
  *n = PD_ARRAY_LEN(gpu_ops);
  return gpu_ops;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool pd_exec_gpu_op(const char *type) {
  return bsearch(&type, gpu_ops, PD_ARRAY_LEN(gpu_ops), sizeof gpu_ops[0], cmp_name) != NULL;
}

static const pd_exec_slot_rule rules[] = {
    /* Optimizers read their scalars on the host, as Fluid keeps beta pows there. */
    {"adam", "LearningRate", true, PD_WHERE_HOST},
    {"adam", "Beta1Pow", true, PD_WHERE_HOST},
    {"adam", "Beta2Pow", true, PD_WHERE_HOST},
    {"adam", "Beta1Tensor", true, PD_WHERE_HOST},
    {"adam", "Beta2Tensor", true, PD_WHERE_HOST},
    {"adam", "EpsilonTensor", true, PD_WHERE_HOST},
    {"adam", "SkipUpdate", true, PD_WHERE_HOST},
    {"adam", "Beta1PowOut", false, PD_WHERE_HOST},
    {"adam", "Beta2PowOut", false, PD_WHERE_HOST},
    {"scale", "ScaleTensor", true, PD_WHERE_HOST},
    /* Shapes and values given as tensors are read on the host. */
    {"fill_constant", "ShapeTensor", true, PD_WHERE_HOST},
    {"fill_constant", "ShapeTensorList", true, PD_WHERE_HOST},
    {"fill_constant", "ValueTensor", true, PD_WHERE_HOST},
    /* Control flow: the condition is read on the host; the vars a block reads and writes stay
     * where its ops put them. */
    {"conditional_block", "Cond", true, PD_WHERE_HOST},
    {"conditional_block", "Input", true, PD_WHERE_ANY},
    {"conditional_block", "Out", false, PD_WHERE_ANY},
    {"conditional_block", "Scope", false, PD_WHERE_ANY},
    {"conditional_block_grad", "Cond", true, PD_WHERE_HOST},
    {"conditional_block_grad", "Input", true, PD_WHERE_ANY},
    {"conditional_block_grad", "Out", true, PD_WHERE_ANY},
    {"conditional_block_grad", "Out@GRAD", true, PD_WHERE_ANY},
    {"conditional_block_grad", "Scope", true, PD_WHERE_ANY},
    {"conditional_block_grad", "Input@GRAD", false, PD_WHERE_ANY},
    {"while", "Condition", true, PD_WHERE_HOST},
    {"while", "X", true, PD_WHERE_ANY},
    {"while", "Out", false, PD_WHERE_ANY},
    {"while", "StepScopes", false, PD_WHERE_ANY},
    {"while_grad", "X", true, PD_WHERE_ANY},
    {"while_grad", "Out", true, PD_WHERE_ANY},
    {"while_grad", "Out@GRAD", true, PD_WHERE_ANY},
    {"while_grad", "StepScopes", true, PD_WHERE_ANY},
    {"while_grad", "X@GRAD", false, PD_WHERE_ANY},
    {"recurrent", "parameters", true, PD_WHERE_ANY},
    {"recurrent", "step_scopes", false, PD_WHERE_ANY},
    {"recurrent_grad", "parameters", true, PD_WHERE_ANY},
    {"recurrent_grad", "step_scopes", true, PD_WHERE_ANY},
    {"recurrent_grad", "parameters@GRAD", false, PD_WHERE_ANY},
};

const pd_exec_slot_rule *pd_exec_slot_rules(size_t *n) {
  *n = PD_ARRAY_LEN(rules);
  return rules;
}

int pd_exec_slot_where(const char *type, const char *slot, bool input) {
  for (size_t i = 0; i < PD_ARRAY_LEN(rules); i++)
    if (rules[i].input == input && strcmp(rules[i].op, type) == 0 &&
        strcmp(rules[i].slot, slot) == 0)
      return rules[i].where;
  return PD_WHERE_OP;
}

bool pd_exec_host_sub_block(const char *type) {
  return strcmp(type, "recurrent") == 0 || strcmp(type, "recurrent_grad") == 0 ||
         strcmp(type, "while") == 0 || strcmp(type, "while_grad") == 0;
}
