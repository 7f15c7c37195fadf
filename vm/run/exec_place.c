/* exec_place.c -- the executor's placement rules on the GPU: the ops whose kernels run there
 * (flags GPU and GPU_GRAD of vm/oplist.h: their kernels read and write tensor data only through
 * the backend, ctx->k, and the place-aware pd_ctx_* helpers), and the slots whose values stay on
 * the host or are left alone. */
#include "config.h"
#include "vm/run/exec_place.h"

#include <string.h>

#include "base/base.h"

bool pd_exec_gpu_op(const pd_opdef *def) {
  if (!def) return false;
  return def->forward ? (def->forward->flags & PD_OPF_GPU_GRAD) != 0
                      : (def->flags & PD_OPF_GPU) != 0;
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
    {"adamw", "LearningRate", true, PD_WHERE_HOST},
    {"adamw", "Beta1Pow", true, PD_WHERE_HOST},
    {"adamw", "Beta2Pow", true, PD_WHERE_HOST},
    {"adamw", "Beta1Tensor", true, PD_WHERE_HOST},
    {"adamw", "Beta2Tensor", true, PD_WHERE_HOST},
    {"adamw", "EpsilonTensor", true, PD_WHERE_HOST},
    {"adamw", "SkipUpdate", true, PD_WHERE_HOST},
    {"adamw", "Beta1PowOut", false, PD_WHERE_HOST},
    {"adamw", "Beta2PowOut", false, PD_WHERE_HOST},
    {"adagrad", "LearningRate", true, PD_WHERE_HOST},
    {"momentum", "LearningRate", true, PD_WHERE_HOST},
    {"rmsprop", "LearningRate", true, PD_WHERE_HOST},
    {"sgd", "LearningRate", true, PD_WHERE_HOST},
    {"scale", "ScaleTensor", true, PD_WHERE_HOST},
    {"scale_grad", "ScaleTensor", true, PD_WHERE_HOST},
    {"batch_norm", "MomentumTensor", true, PD_WHERE_HOST},
    {"batch_norm_grad", "MomentumTensor", true, PD_WHERE_HOST},
    {"clip", "Min", true, PD_WHERE_HOST},
    {"clip", "Max", true, PD_WHERE_HOST},
    {"clip_grad", "Min", true, PD_WHERE_HOST},
    {"clip_grad", "Max", true, PD_WHERE_HOST},
    /* Shapes and values given as tensors are read on the host. */
    {"fill_constant", "ShapeTensor", true, PD_WHERE_HOST},
    {"fill_constant", "ShapeTensorList", true, PD_WHERE_HOST},
    {"fill_constant", "ValueTensor", true, PD_WHERE_HOST},
    {"uniform_random", "ShapeTensor", true, PD_WHERE_HOST},
    {"uniform_random", "ShapeTensorList", true, PD_WHERE_HOST},
    {"gaussian_random", "ShapeTensor", true, PD_WHERE_HOST},
    {"gaussian_random", "ShapeTensorList", true, PD_WHERE_HOST},
    {"reshape2", "Shape", true, PD_WHERE_HOST},
    {"reshape2", "ShapeTensor", true, PD_WHERE_HOST},
    {"dropout", "Seed", true, PD_WHERE_HOST},
    {"gather", "Index", true, PD_WHERE_HOST},
    {"gather", "Axis", true, PD_WHERE_HOST},
    {"gather_grad", "Index", true, PD_WHERE_HOST},
    {"gather_grad", "Axis", true, PD_WHERE_HOST},
    {"select_input", "Mask", true, PD_WHERE_HOST},
    {"select_input_grad", "Mask", true, PD_WHERE_HOST},
    /* shape reads only the dims of its input: the data stays where it is */
    {"shape", "Input", true, PD_WHERE_ANY},
    {"shape", "Out", false, PD_WHERE_HOST},
    /* A saved program's feed and fetch ops: data enters and leaves on the host. */
    {"feed", "X", true, PD_WHERE_HOST},
    {"feed", "Out", false, PD_WHERE_HOST},
    {"fetch", "X", true, PD_WHERE_HOST},
    {"fetch", "Out", false, PD_WHERE_HOST},
    {"rnn", "SequenceLength", true, PD_WHERE_HOST},
    {"rnn_grad", "SequenceLength", true, PD_WHERE_HOST},
    {"concat", "AxisTensor", true, PD_WHERE_HOST},
    {"concat_grad", "AxisTensor", true, PD_WHERE_HOST},
    {"split", "AxisTensor", true, PD_WHERE_HOST},
    {"split", "SectionsTensorList", true, PD_WHERE_HOST},
    {"split_grad", "AxisTensor", true, PD_WHERE_HOST},
    {"split_grad", "SectionsTensorList", true, PD_WHERE_HOST},
    /* lookup_table checks its ids on the host (an error names the one out of range) and
     * hands the backend a copy where it computes. */
    {"lookup_table", "Ids", true, PD_WHERE_HOST},
    {"lookup_table_grad", "Ids", true, PD_WHERE_HOST},
    {"lookup_table_v2", "Ids", true, PD_WHERE_HOST},
    {"lookup_table_v2_grad", "Ids", true, PD_WHERE_HOST},
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

bool pd_exec_host_sub_block(const pd_opdef *def) {
  /* A gradient op has its forward op's kind: recurrent_grad and while_grad are included. */
  return def && (def->kind == PD_OP_recurrent || def->kind == PD_OP_while);
}
