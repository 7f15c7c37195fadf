/* differentiable.h -- the ops pdlang differentiates, written out by hand: test_opdefs checks
 * that exactly these carry PD_OPF_DIFF in the registry, and the gradient tests check each of
 * them by finite differences. Adding a differentiable op means adding it here too. */
#ifndef PD_TESTS_OPS_DIFFERENTIABLE_H
#define PD_TESTS_OPS_DIFFERENTIABLE_H

static const char *const pd_test_differentiable_ops[] = {
    "abs", "assign", "cast", "concat", "conditional_block", "conv2d", "cross_entropy", "dropout",
    "elementwise_add", "elementwise_div", "elementwise_max", "elementwise_min", "elementwise_mul",
    "elementwise_pow", "elementwise_sub", "elman_rnn", "exp", "fc", "lod_reset", "log", "log_softmax",
    "lookup_table", "lookup_table_v2", "matmul_v2", "mean", "merge_lod_tensor", "mul", "pool2d", "recurrent",
    "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum", "relu", "reshape2",
    "scale", "sequence_pool", "sequence_softmax", "sigmoid", "softmax",
    "softmax_with_cross_entropy", "split", "split_lod_tensor", "sqrt", "square", "sum", "tanh", "top_k", "transpose2",
    "while",
};

#endif /* PD_TESTS_OPS_DIFFERENTIABLE_H */
