/* oplist.h -- every op pdlang knows, one entry each: the one place where an op is described.
 * An X-macro list (no include guard): define PD_OP(name, flags, infer, inputs, outputs, attrs)
 * and include this file. ops.h makes the pd_op_kind enum from it, ops.c the slot and attribute
 * tables and the pd_opdefs registry, infershape.h the shape functions' prototypes, opkernels.h
 * the kernels' (with the gradient kernels of the DIFF ops), ops_grad.c the gradient ops.
 *
 * Keep the entries sorted by name (strcmp order): pd_opdef_lookup is a binary search over them,
 * and tests/ops/test_opdefs checks the order. Names, slots and attributes are PaddlePaddle
 * Fluid's, so that programs move between pdlang and Fluid unchanged.
 *
 *   name     the Fluid op type; the enum constant is PD_OP_<name>
 *   flags    0, or any of these joined with | (vm/ops/ops.h, PD_OPF_*, says more):
 *              DIFF      differentiable: it has a gradient op "<name>_grad", whose kernel is
 *                        pd_kernel_<name>_grad (vm/ops/ops_grad.c). Written first: the
 *                        preprocessor finds it there (PD_IF_DIFF)
 *              FP_IN     the first input must be floating point
 *              SEQ_IN    the first input must be a sequence
 *              GPU       its kernel runs on the GPU (vm/run/exec_place.h)
 *              GPU_GRAD  its gradient op's kernel runs on the GPU too
 *              ROW_X, ROW_XY, ROW_IDS   row-wise: row i of the output comes from row i of X; of
 *                        X and/or Y, the other broadcast (elementwise); of Ids (lookup). The
 *                        loop-invariant code motion of vm/passes/hoist.c moves these
 *   infer    the shape function, pd_infer_<infer> (vm/infershape*.c); ops of a family share one
 *   inputs   IN(slot, ...) or NONE; outputs likewise with OUT(...). A slot is ONE("X") (exactly
 *            one var), LIST("X") (one or more), OPT("X") (zero or one), OPT_LIST("X") (any
 *            number), or, for outputs only the backward pass reads, TEMP("XShape")
 *   attrs    ATTRS(attr, ...) or NONE. An attribute is INT, LONG, FLOAT or BOOL(name, default),
 *            STR(name, default), ENUM(name, default, other allowed values...), INTS(name,
 *            default elements...), INTS_EMPTY / LONGS_EMPTY / FLOATS_EMPTY / STRS_EMPTY(name) for an empty
 *            list default, REQ(TYPE, name) for one without default that the op must set
 *            (TYPE is INT, LONG, FLOAT, INTS, STRINGS or BLOCK), REQ_ENUM(name, allowed...).
 *
 * Ops of a family that share every slot and attribute are written PD_UNARY_(name, flags),
 * PD_ELEMENTWISE_(name), ...: the family's signature is spelt once, below (with the flags all
 * its members share, where the family takes none). */
#ifndef PD_OP
#error "define PD_OP(name, flags, infer, inputs, outputs, attrs) before including vm/oplist.h"
#endif

/* Families whose members share slots and attributes (and differ in name and flags only). */
#define PD_UNARY_(name, flags) PD_OP(name, flags, unary, IN(ONE("X")), OUT(ONE("Out")), NONE)
/* The activations of vm/ops/activation.c that take attributes (written without ATTRS): float,
 * per element, on the GPU too. */
#define PD_ACT_(name, ...)                                                                      \
  PD_OP(name, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, unary, IN(ONE("X")), OUT(ONE("Out")),      \
        ATTRS(__VA_ARGS__))
#define PD_ELEMENTWISE_(name)                                                                   \
  PD_OP(name, DIFF | GPU | GPU_GRAD | ROW_XY, elementwise, IN(ONE("X"), ONE("Y")),              \
        OUT(ONE("Out")), ATTRS(INT("axis", -1)))
#define PD_COMPARE_(name)                                                                       \
  PD_OP(name, GPU, compare, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")),                            \
        ATTRS(INT("axis", -1), BOOL("force_cpu", false)))
#define PD_LOGICAL_(name) PD_OP(name, GPU, compare, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")), NONE)
#define PD_REDUCE_(name, flags)                                                                 \
  PD_OP(name, flags, reduce, IN(ONE("X")), OUT(ONE("Out")),                                     \
        ATTRS(INTS("dim", 0), BOOL("keep_dim", false), BOOL("reduce_all", false),               \
              INT("in_dtype", -1), INT("out_dtype", -1)))
#define PD_LOOKUP_TABLE_(name)                                                                  \
  PD_OP(name, DIFF | GPU | GPU_GRAD | ROW_IDS, lookup_table, IN(ONE("W"), ONE("Ids")),          \
        OUT(ONE("Out")),                                                                        \
        ATTRS(BOOL("is_sparse", false), BOOL("is_distributed", false),                          \
              LONG("padding_idx", -1), BOOL("remote_prefetch", false)))

PD_UNARY_(abs, DIFF | GPU | GPU_GRAD | ROW_X)
PD_OP(accuracy, 0, accuracy, IN(ONE("Out"), ONE("Indices"), ONE("Label")),
      OUT(ONE("Accuracy"), ONE("Correct"), ONE("Total")), NONE)
PD_OP(adagrad, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("Grad"), ONE("Moment"), ONE("LearningRate"), OPT("MasterParam")),
      OUT(ONE("ParamOut"), ONE("MomentOut"), OPT("MasterParamOut")),
      ATTRS(FLOAT("epsilon", 1e-6), BOOL("multi_precision", false)))
PD_OP(adam, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("Grad"), ONE("LearningRate"), ONE("Moment1"), ONE("Moment2"),
         ONE("Beta1Pow"), ONE("Beta2Pow"), OPT("Beta1Tensor"), OPT("Beta2Tensor"),
         OPT("EpsilonTensor"), OPT("MasterParam"), OPT("SkipUpdate")),
      OUT(ONE("ParamOut"), ONE("Moment1Out"), ONE("Moment2Out"), ONE("Beta1PowOut"),
          ONE("Beta2PowOut"), OPT("MasterParamOut")),
      ATTRS(FLOAT("beta1", 0.9), FLOAT("beta2", 0.999), FLOAT("epsilon", 1e-8),
            BOOL("lazy_mode", false), LONG("min_row_size_to_use_multithread", 1000),
            BOOL("multi_precision", false), BOOL("use_global_beta_pow", false)))
PD_OP(adamw, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("Grad"), ONE("LearningRate"), ONE("Moment1"), ONE("Moment2"),
         ONE("Beta1Pow"), ONE("Beta2Pow"), OPT("Beta1Tensor"), OPT("Beta2Tensor"),
         OPT("EpsilonTensor"), OPT("MasterParam"), OPT("SkipUpdate")),
      OUT(ONE("ParamOut"), ONE("Moment1Out"), ONE("Moment2Out"), ONE("Beta1PowOut"),
          ONE("Beta2PowOut"), OPT("MasterParamOut")),
      ATTRS(FLOAT("beta1", 0.9), FLOAT("beta2", 0.999), FLOAT("epsilon", 1e-8),
            BOOL("lazy_mode", false), LONG("min_row_size_to_use_multithread", 1000),
            BOOL("multi_precision", false), BOOL("use_global_beta_pow", false),
            FLOAT("lr_ratio", 1.0), FLOAT("coeff", 0.01), BOOL("with_decay", false)))
PD_OP(arg_max, 0, arg_max, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(REQ(LONG, "axis"), BOOL("keepdims", false), BOOL("flatten", false),
            INT("dtype", PD_INT64)))
PD_UNARY_(assign, DIFF | GPU | GPU_GRAD | ROW_X)
PD_OP(assign_value, 0, assign_value, NONE, OUT(ONE("Out")),
      ATTRS(INTS_EMPTY("shape"), INT("dtype", PD_FP32), FLOATS_EMPTY("fp32_values"),
            INTS_EMPTY("int32_values"), LONGS_EMPTY("int64_values"), INTS_EMPTY("bool_values")))
PD_OP(batch_norm, DIFF | FP_IN | GPU | GPU_GRAD, batch_norm,
      IN(ONE("X"), ONE("Scale"), ONE("Bias"), ONE("Mean"), ONE("Variance"),
         OPT("MomentumTensor")),
      OUT(ONE("Y"), ONE("MeanOut"), ONE("VarianceOut"), TEMP("SavedMean"), TEMP("SavedVariance"),
          OPT("ReserveSpace")),
      ATTRS(FLOAT("momentum", 0.9), FLOAT("epsilon", 1e-5),
            ENUM("data_layout", "NCHW", "NHWC", "AnyLayout"), BOOL("is_test", false),
            BOOL("use_global_stats", false), BOOL("trainable_statistics", false)))
/* The collective ops of data-parallel training (vm/ops/collective.c, vm/passes/data_parallel.h):
 * Fluid's names, slots and attributes; ring 0 is every rank of the job. On GPU ranks they sum
 * device memory through NCCL. */
PD_OP(c_allreduce_sum, GPU, collective, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(INT("ring_id", 0), BOOL("use_calc_stream", false), BOOL("use_model_parallel", false)))
PD_OP(c_broadcast, GPU, collective, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(INT("ring_id", 0), INT("root", 0), BOOL("use_calc_stream", false)))
PD_OP(c_sync_comm_stream, GPU, c_sync_comm_stream, IN(LIST("X")), OUT(LIST("Out")),
      ATTRS(INT("ring_id", 0)))
PD_OP(cast, DIFF | GPU | ROW_X, cast, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(REQ(INT, "in_dtype"), REQ(INT, "out_dtype")))
PD_OP(clip, DIFF | FP_IN | GPU | GPU_GRAD, clip, IN(ONE("X"), OPT("Min"), OPT("Max")),
      OUT(ONE("Out")),
      ATTRS(REQ(FLOAT, "min"), REQ(FLOAT, "max")))
PD_OP(concat, DIFF | GPU | GPU_GRAD, concat, IN(LIST("X"), OPT("AxisTensor")),
      OUT(ONE("Out")),
      ATTRS(INT("axis", 0)))
PD_OP(conditional_block, DIFF, conditional_block, IN(LIST("Cond"), OPT_LIST("Input")),
      OUT(OPT_LIST("Out"), ONE("Scope")),
      ATTRS(REQ(BLOCK, "sub_block"), BOOL("is_scalar_condition", false),
            STRS_EMPTY("skip_eager_deletion_vars")))
PD_OP(conv2d, DIFF | FP_IN | GPU | GPU_GRAD, conv2d, IN(ONE("Input"), ONE("Filter")),
      OUT(ONE("Output")),
      ATTRS(INTS("strides", 1, 1), INTS("paddings", 0, 0),
            ENUM("padding_algorithm", "EXPLICIT", "SAME", "VALID"), INT("groups", 1),
            INTS("dilations", 1, 1), ENUM("data_format", "NCHW", "NHWC", "AnyLayout")))
PD_OP(cross_entropy, DIFF | FP_IN, cross_entropy, IN(ONE("X"), ONE("Label")), OUT(ONE("Y")),
      ATTRS(BOOL("soft_label", false), INT("ignore_index", -100)))
PD_OP(dropout, DIFF | FP_IN | GPU | GPU_GRAD, dropout, IN(ONE("X"), OPT("Seed")),
      OUT(ONE("Out"), TEMP("Mask")),
      ATTRS(FLOAT("dropout_prob", 0.5), BOOL("is_test", false), BOOL("fix_seed", false),
            INT("seed", 0),
            ENUM("dropout_implementation", "downgrade_in_infer", "upscale_in_train")))
PD_ELEMENTWISE_(elementwise_add)
PD_ELEMENTWISE_(elementwise_div)
PD_ELEMENTWISE_(elementwise_max)
PD_ELEMENTWISE_(elementwise_min)
PD_ELEMENTWISE_(elementwise_mul)
PD_ELEMENTWISE_(elementwise_pow)
PD_ELEMENTWISE_(elementwise_sub)
PD_OP(elman_rnn, DIFF | FP_IN | SEQ_IN, elman_rnn, IN(ONE("Input"), OPT("H0"), ONE("Weight")),
      OUT(ONE("Hidden")), ATTRS(ENUM("activation", "tanh", "relu", "sigmoid"),
                                BOOL("is_reverse", false)))
PD_ACT_(elu, FLOAT("alpha", 1.0))
PD_COMPARE_(equal)
PD_UNARY_(exp, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X)
PD_OP(expand_v2, DIFF | GPU | GPU_GRAD, expand_v2, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(INTS_EMPTY("shape")))
PD_OP(fc, DIFF | FP_IN | GPU | GPU_GRAD, fc, IN(ONE("Input"), ONE("W"), OPT("Bias")),
      OUT(ONE("Out")),
      ATTRS(INT("in_num_col_dims", 1), STR("activation_type", ""),
            BOOL("padding_weights", false)))
PD_OP(feed, 0, declared, IN(ONE("X")), OUT(ONE("Out")), ATTRS(REQ(INT, "col")))
PD_OP(fetch, 0, declared, IN(ONE("X")), OUT(ONE("Out")), ATTRS(REQ(INT, "col")))
PD_OP(fill_constant, GPU, fill_constant,
      IN(OPT("ValueTensor"), OPT("ShapeTensor"), OPT_LIST("ShapeTensorList")), OUT(ONE("Out")),
      ATTRS(INT("dtype", PD_FP32), LONGS_EMPTY("shape"), FLOAT("value", 0.0),
            STR("str_value", ""), BOOL("force_cpu", false), INT("place_type", -1)))
PD_UNARY_(fill_zeros_like, 0)
PD_OP(flatten_contiguous_range, DIFF | GPU | GPU_GRAD, flatten_contiguous_range, IN(ONE("X")),
      OUT(ONE("Out"), TEMP("XShape")), ATTRS(INT("start_axis", 1), INT("stop_axis", 1)))
/* fused_gru, fused_lstm: pdlang's own ops (not Fluid's gru and lstm, whose gate order, slots
 * and GRU reset form differ), made by vm/passes/fuse_gated.c from stdlib/layers.pd's gru and lstm
 * loops after the input projection is hoisted: Input [T, 3 H] = x W_ih + b_ih (r, z, n), Weight
 * [H, 3 H] = W_hh, Bias [3 H] = b_hh; n = tanh(x_n + r (h W_hn + b_hn)), h' = (1 - z) n + z h
 * (PyTorch's and paddle.nn.GRU's). LSTM: Input [T, 4 H] = x W_ih + b (i, f, g, o), Weight
 * [H, 4 H]; c' = f c + i g, h' = o tanh(c'); Cell the c of every step. H0, C0: [H] or
 * [sequences, H]. BatchGate keeps the activations for the gradient. */
PD_OP(fused_gru, DIFF | FP_IN | SEQ_IN | GPU | GPU_GRAD, fused_gru,
      IN(ONE("Input"), OPT("H0"), ONE("Weight"), ONE("Bias")),
      OUT(ONE("Hidden"), TEMP("BatchGate")), ATTRS(BOOL("is_reverse", false)))
PD_OP(fused_lstm, DIFF | FP_IN | SEQ_IN | GPU | GPU_GRAD, fused_lstm,
      IN(ONE("Input"), OPT("H0"), OPT("C0"), ONE("Weight")),
      OUT(ONE("Hidden"), ONE("Cell"), TEMP("BatchGate")), ATTRS(BOOL("is_reverse", false)))
PD_OP(gather, DIFF | GPU | GPU_GRAD, gather, IN(ONE("X"), ONE("Index"), OPT("Axis")),
      OUT(ONE("Out")),
      ATTRS(INT("axis", 0), BOOL("overwrite", true)))
PD_OP(gaussian_random, GPU, random, IN(OPT("ShapeTensor"), OPT_LIST("ShapeTensorList")),
      OUT(ONE("Out")),
      ATTRS(LONGS_EMPTY("shape"), FLOAT("mean", 0.0), FLOAT("std", 1.0), INT("seed", 0),
            INT("dtype", PD_FP32)))
PD_ACT_(gelu, BOOL("approximate", false))
PD_COMPARE_(greater_equal)
PD_COMPARE_(greater_than)
PD_ACT_(hard_swish, FLOAT("threshold", 6.0), FLOAT("scale", 6.0), FLOAT("offset", 3.0))
PD_OP(huber_loss, DIFF | FP_IN | GPU | GPU_GRAD, huber_loss, IN(ONE("X"), ONE("Y")),
      OUT(ONE("Out"), TEMP("Residual")), ATTRS(FLOAT("delta", 1.0)))
PD_OP(increment, 0, increment, IN(ONE("X")), OUT(ONE("Out")), ATTRS(FLOAT("step", 1.0)))
PD_OP(kldiv_loss, DIFF | FP_IN | GPU | GPU_GRAD, kldiv_loss, IN(ONE("X"), ONE("Target")),
      OUT(ONE("Loss")),
      ATTRS(ENUM("reduction", "mean", "none", "batchmean", "sum")))
PD_OP(layer_norm, DIFF | FP_IN | GPU | GPU_GRAD, layer_norm,
      IN(ONE("X"), OPT("Scale"), OPT("Bias")),
      OUT(ONE("Y"), TEMP("Mean"), TEMP("Variance")),
      ATTRS(INT("begin_norm_axis", 1), FLOAT("epsilon", 1e-5)))
PD_ACT_(leaky_relu, FLOAT("alpha", 0.02))
PD_COMPARE_(less_equal)
PD_COMPARE_(less_than)
PD_OP(lod_reset, DIFF, lod_reset, IN(ONE("X"), OPT("Y")), OUT(ONE("Out")),
      ATTRS(INTS_EMPTY("target_lod"), BOOL("append", false)))
PD_UNARY_(log, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X)
PD_UNARY_(log_sigmoid, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X)
PD_OP(log_softmax, DIFF | FP_IN | GPU | GPU_GRAD, softmax, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(INT("axis", -1)))
PD_LOGICAL_(logical_and)
PD_OP(logical_not, GPU, unary_bool, IN(ONE("X")), OUT(ONE("Out")), NONE)
PD_LOGICAL_(logical_or)
PD_LOOKUP_TABLE_(lookup_table)
PD_LOOKUP_TABLE_(lookup_table_v2)
PD_OP(matmul_v2, DIFF | GPU | GPU_GRAD, matmul_v2, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")),
      ATTRS(BOOL("trans_x", false), BOOL("trans_y", false)))
PD_OP(mean, DIFF | FP_IN | GPU | GPU_GRAD, mean, IN(ONE("X")), OUT(ONE("Out")), NONE)
PD_OP(merge_lod_tensor, DIFF, merge_lod_tensor,
      IN(ONE("X"), ONE("Mask"), ONE("InTrue"), ONE("InFalse")), OUT(ONE("Out")),
      ATTRS(INT("level", 0)))
PD_OP(momentum, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("Grad"), ONE("Velocity"), ONE("LearningRate"), OPT("MasterParam")),
      OUT(ONE("ParamOut"), ONE("VelocityOut"), OPT("MasterParamOut")),
      ATTRS(REQ(FLOAT, "mu"), BOOL("use_nesterov", false), STR("regularization_method", ""),
            FLOAT("regularization_coeff", 0.0), BOOL("multi_precision", false),
            FLOAT("rescale_grad", 1.0)))
PD_OP(mul, DIFF | GPU | GPU_GRAD | ROW_X, mul, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")),
      ATTRS(INT("x_num_col_dims", 1), INT("y_num_col_dims", 1)))
PD_COMPARE_(not_equal)
PD_OP(pool2d, DIFF | FP_IN | GPU | GPU_GRAD, pool2d, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(REQ_ENUM("pooling_type", "max", "avg"), REQ(INTS, "ksize"),
            BOOL("global_pooling", false), INTS("strides", 1, 1), INTS("paddings", 0, 0),
            BOOL("exclusive", true), BOOL("adaptive", false), BOOL("ceil_mode", false),
            ENUM("data_format", "NCHW", "NHWC", "AnyLayout"),
            ENUM("padding_algorithm", "EXPLICIT", "SAME", "VALID")))
PD_OP(recurrent, DIFF, recurrent,
      IN(LIST("inputs"), OPT_LIST("initial_states"), OPT_LIST("parameters")),
      OUT(OPT_LIST("outputs"), ONE("step_scopes")),
      ATTRS(REQ(STRINGS, "ex_states"), REQ(STRINGS, "states"), REQ(BLOCK, "sub_block"),
            BOOL("reverse", false), BOOL("is_train", true), BOOL("has_states", false),
            STRS_EMPTY("skip_eager_deletion_vars"), STRS_EMPTY("param_products")))
PD_REDUCE_(reduce_max, DIFF | GPU | GPU_GRAD)
PD_REDUCE_(reduce_mean, DIFF | FP_IN | GPU | GPU_GRAD)
PD_REDUCE_(reduce_min, DIFF | GPU | GPU_GRAD)
PD_REDUCE_(reduce_prod, DIFF)
PD_REDUCE_(reduce_sum, DIFF | GPU | GPU_GRAD)
PD_UNARY_(relu, DIFF | GPU | GPU_GRAD | ROW_X)
PD_ACT_(relu6, FLOAT("threshold", 6.0))
PD_OP(reshape2, DIFF | GPU | GPU_GRAD, reshape2,
      IN(ONE("X"), OPT("Shape"), OPT_LIST("ShapeTensor")), OUT(ONE("Out"), TEMP("XShape")),
      ATTRS(INTS_EMPTY("shape")))
PD_OP(rmsprop, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("MeanSquare"), ONE("Moment"), ONE("LearningRate"), ONE("Grad"),
         OPT("MeanGrad"), OPT("MasterParam")),
      OUT(ONE("ParamOut"), ONE("MomentOut"), ONE("MeanSquareOut"), OPT("MeanGradOut"),
          OPT("MasterParamOut")),
      ATTRS(FLOAT("epsilon", 1e-10), FLOAT("decay", 0.9), FLOAT("momentum", 0.0),
            BOOL("centered", false), BOOL("multi_precision", false)))
/* rnn: PaddlePaddle's (paddle.nn.LSTM / GRU / SimpleRNN in a static program), vm/ops/rnn.c.
 * Input time-major [T, N, I]; PreState h (and c) [layers x directions, N, H]; WeightList the
 * weight_ih, weight_hh of each (layer, direction), then their bias_ih, bias_hh. */
PD_OP(rnn, DIFF | FP_IN | GPU | GPU_GRAD, rnn,
      IN(ONE("Input"), LIST("PreState"), LIST("WeightList"), OPT("SequenceLength")),
      OUT(ONE("Out"), OPT("DropoutState"), TEMP("Reserve"), LIST("State")),
      ATTRS(FLOAT("dropout_prob", 0.0), BOOL("is_bidirec", false), INT("input_size", 10),
            INT("hidden_size", 100), INT("num_layers", 1),
            REQ_ENUM("mode", "LSTM", "GRU", "RNN_TANH", "RNN_RELU"), INT("seed", 0),
            BOOL("is_test", false)))
PD_OP(sampling_id, 0, sampling_id, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(FLOAT("min", 0.0), FLOAT("max", 1.0), INT("seed", 0)))
PD_OP(scale, DIFF | GPU | GPU_GRAD | ROW_X, unary, IN(ONE("X"), OPT("ScaleTensor")), OUT(ONE("Out")),
      ATTRS(FLOAT("scale", 1.0), FLOAT("bias", 0.0), BOOL("bias_after_scale", true)))
PD_OP(select_input, DIFF | GPU | GPU_GRAD, select_input, IN(LIST("X"), ONE("Mask")),
      OUT(ONE("Out")), NONE)
PD_OP(sequence_pool, DIFF | SEQ_IN, sequence_pool, IN(ONE("X")),
      OUT(ONE("Out"), TEMP("MaxIndex")),
      ATTRS(BOOL("is_test", false),
            ENUM("pooltype", "AVERAGE", "SUM", "SQRT", "LAST", "FIRST", "MAX"),
            FLOAT("pad_value", 0.0)))
PD_UNARY_(sequence_softmax, DIFF | FP_IN | SEQ_IN)
PD_OP(sgd, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("LearningRate"), ONE("Grad"), OPT("MasterParam")),
      OUT(ONE("ParamOut"), OPT("MasterParamOut")), ATTRS(BOOL("multi_precision", false)))
PD_OP(shape, 0, shape, IN(ONE("Input")), OUT(ONE("Out")), NONE)
PD_UNARY_(sigmoid, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X)
PD_OP(sigmoid_cross_entropy_with_logits, DIFF | FP_IN | GPU | GPU_GRAD,
      sigmoid_cross_entropy_with_logits,
      IN(ONE("X"), ONE("Label")), OUT(ONE("Out")),
      ATTRS(BOOL("normalize", false), INT("ignore_index", -100)))
PD_UNARY_(silu, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X)
PD_OP(slice, DIFF | GPU | GPU_GRAD, slice, IN(ONE("Input")), OUT(ONE("Out")),
      ATTRS(REQ(INTS, "axes"), INTS_EMPTY("starts"), INTS_EMPTY("ends"), INTS_EMPTY("infer_flags"),
            INTS_EMPTY("decrease_axis")))
PD_OP(smooth_l1_loss, DIFF | FP_IN | GPU | GPU_GRAD, smooth_l1_loss,
      IN(ONE("X"), ONE("Y"), OPT("InsideWeight"), OPT("OutsideWeight")),
      OUT(TEMP("Diff"), ONE("Out")), ATTRS(FLOAT("sigma", 1.0)))
PD_OP(softmax, DIFF | FP_IN | GPU | GPU_GRAD, softmax, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(INT("axis", -1)))
PD_OP(softmax_with_cross_entropy, DIFF | FP_IN | GPU | GPU_GRAD, softmax_with_cross_entropy,
      IN(ONE("Logits"), ONE("Label")), OUT(TEMP("Softmax"), ONE("Loss")),
      ATTRS(BOOL("soft_label", false), BOOL("numeric_stable_mode", true),
            INT("ignore_index", -100), INT("axis", -1)))
PD_ACT_(softplus, FLOAT("beta", 1.0), FLOAT("threshold", 20.0))
PD_OP(split, DIFF | GPU | GPU_GRAD, split,
      IN(ONE("X"), OPT("AxisTensor"), OPT_LIST("SectionsTensorList")),
      OUT(LIST("Out")), ATTRS(INT("axis", 0), INT("num", 0), INTS_EMPTY("sections")))
PD_OP(split_lod_tensor, DIFF, split_lod_tensor, IN(ONE("X"), ONE("Mask")),
      OUT(ONE("OutTrue"), ONE("OutFalse")), ATTRS(INT("level", 0)))
PD_UNARY_(sqrt, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X)
PD_UNARY_(square, DIFF | GPU | GPU_GRAD | ROW_X)
PD_OP(squeeze2, DIFF | GPU | GPU_GRAD, squeeze2, IN(ONE("X")), OUT(ONE("Out"), TEMP("XShape")),
      ATTRS(INTS_EMPTY("axes")))
PD_OP(stack, DIFF | GPU | GPU_GRAD, stack, IN(LIST("X")), OUT(ONE("Y")), ATTRS(INT("axis", 0)))
PD_OP(sum, DIFF | GPU, sum, IN(LIST("X")), OUT(ONE("Out")), NONE)
PD_ACT_(swish, FLOAT("beta", 1.0))
PD_UNARY_(tanh, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X)
PD_OP(tile, DIFF | GPU | GPU_GRAD, tile, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(INTS_EMPTY("repeat_times")))
PD_OP(top_k, DIFF, top_k, IN(ONE("X"), OPT("K")), OUT(ONE("Out"), ONE("Indices")),
      ATTRS(INT("k", 1)))
PD_OP(transpose2, DIFF | GPU | GPU_GRAD, transpose2, IN(ONE("X")), OUT(ONE("Out"), TEMP("XShape")),
      ATTRS(REQ(INTS, "axis")))
PD_OP(uniform_random, GPU, random, IN(OPT("ShapeTensor"), OPT_LIST("ShapeTensorList")),
      OUT(ONE("Out")),
      ATTRS(LONGS_EMPTY("shape"), FLOAT("min", -1.0), FLOAT("max", 1.0), INT("seed", 0),
            INT("diag_num", 0), INT("diag_step", 0), FLOAT("diag_val", 1.0),
            INT("dtype", PD_FP32)))
PD_OP(unsqueeze2, DIFF | GPU | GPU_GRAD, unsqueeze2, IN(ONE("X")), OUT(ONE("Out"), TEMP("XShape")),
      ATTRS(INTS_EMPTY("axes")))
PD_OP(where, DIFF | GPU | GPU_GRAD, where, IN(ONE("Condition"), ONE("X"), ONE("Y")), OUT(ONE("Out")), NONE)
PD_OP(while, DIFF, while, IN(OPT_LIST("X"), LIST("Condition")),
      OUT(OPT_LIST("Out"), ONE("StepScopes")),
      ATTRS(REQ(BLOCK, "sub_block"), BOOL("is_test", false),
            STRS_EMPTY("skip_eager_deletion_vars"), LONG("max_iterations", 1000000)))

#undef PD_UNARY_
#undef PD_ACT_
#undef PD_ELEMENTWISE_
#undef PD_COMPARE_
#undef PD_LOGICAL_
#undef PD_REDUCE_
#undef PD_LOOKUP_TABLE_
