/* oplist.h -- every op pdlang knows, one entry each: the one place where an op is described.
 * An X-macro list (no include guard): define PD_OPK(name, flags, infer, inputs, outputs, attrs,
 * kernel) and include this file. ops.h makes the pd_op_kind enum from it, ops.c the slot and
 * attribute tables and the pd_opdefs registry, infershape.h the shape functions' prototypes,
 * opkernels.h the kernels' (with the gradient kernels of the DIFF ops), ops_grad.c the gradient
 * ops. An entry is written PD_OPK(...), or PD_OP(name, flags, infer, inputs, outputs, attrs)
 * for an op whose kernels are its own (kernel KERNEL(name, 0)): PD_OPK with that kernel,
 * unless the consumer defines PD_OP as well.
 *
 * Keep the entries sorted by name (strcmp order): pd_opdef_lookup is a binary search over them,
 * and tests/vm/ops/test_opdefs checks the order. Names, slots and attributes are PaddlePaddle
 * Fluid's, so that programs move between pdlang and Fluid unchanged.
 *
 *   name     the Fluid op type; the enum constant is PD_OP_<name>
 *   flags    0, or any of these joined with | (vm/ops/ops.h, PD_OPF_*, says more):
 *              DIFF      differentiable: it has a gradient op "<name>_grad" (vm/ops/ops_grad.c).
 *                        Written first: the preprocessor finds it there (PD_IF_DIFF)
 *              FP_IN     the first input must be floating point
 *              SEQ_IN    the first input must be a sequence
 *              GPU       its kernel runs on the GPU (vm/run/exec_place.h)
 *              GPU_GRAD  its gradient op's kernel runs on the GPU too
 *              AMP       a matrix product that mixed precision (train(..., amp = "bf16"),
 *                        vm/passes/amp.h) runs in low precision, as Paddle's AMP white list;
 *                        also the recurrences (fused_lstm, fused_gru, rnn: their input
 *                        projections and recurrent products)
 *              ROW_X, ROW_XY, ROW_IDS   row-wise: row i of the output comes from row i of X; of
 *                        X and/or Y, the other broadcast (elementwise); of Ids (lookup). The
 *                        loop-invariant code motion of vm/passes/hoist.c moves these
 *            Every op flagged GPU, GPU_GRAD or DIFF has a row in the op-test table
 *            (tests/vm/ops/optest_*.c): make check fails without one.
 *   infer    the shape function, pd_infer_<infer> (vm/ops/infershape.h; in the op's family
 *            file); ops of a family share one
 *   inputs   IN(slot, ...) or NONE; outputs likewise with OUT(...). A slot is ONE("X") (exactly
 *            one var), LIST("X") (one or more), OPT("X") (zero or one), OPT_LIST("X") (any
 *            number), or, for outputs only the backward pass reads, TEMP("XShape"). A second
 *            argument says where the slot's values must be when the op computes on the GPU:
 *            ONE("LearningRate", HOST) on the host (the kernel reads them there), OPT_LIST("X",
 *            ANY) wherever they are (a control-flow op only hands them to its block); without
 *            one, where the op computes. A gradient op's slots take their forward slot's
 *            (vm/ops/ops_grad.c). SCOPES (ONE("Scope", ANY | SCOPES)): the STEP_SCOPES var of
 *            a block op, which op(...) makes of that type
 *   attrs    ATTRS(attr, ...) or NONE. An attribute is INT, LONG, FLOAT or BOOL(name, default),
 *            STR(name, default), ENUM(name, default, other allowed values...), INTS(name,
 *            default elements...), INTS_EMPTY / LONGS_EMPTY / FLOATS_EMPTY / STRS_EMPTY(name)
 *            for an empty list default, REQ(TYPE, name) for one without default that the op
 *            must set (TYPE is INT, LONG, FLOAT, INTS, STRINGS or BLOCK), REQ_ENUM(name,
 *            allowed...).
 *   kernel   KERNEL(family, constant): the kernel is pd_kernel_<family> and a DIFF op's gradient
 *            kernel pd_kernel_<family>_grad, both in the family's file of vm/ops/, reading the
 *            constant from ctx->def->karg (elementwise_add: KERNEL(elementwise, PD_K_ADD));
 *            KERNELS(forward, gradient, constant) names the two apart (reshape2's gradient is
 *            pd_kernel_xshape_grad, shared by the ops that keep an XShape).
 *
 * Ops of a family that share every slot and attribute are written PD_MATH_(name, flags,
 * constant), PD_ELEMENTWISE_(name, constant), ...: the family's signature is spelt once, below
 * (with the flags all its members share, where the family takes none). */
#ifndef PD_OPK
#error "define PD_OPK(name, flags, infer, inputs, outputs, attrs, kernel) before including oplist.h"
#endif
/* An op with kernels of its own. A consumer that makes IN, OUT or ATTRS expand to lists defines
 * PD_OP itself (it cannot pass them on: the lists' commas would split the arguments). */
#ifndef PD_OP
#define PD_OP(name, flags, infer, inputs, outputs, attrs) \
  PD_OPK(name, flags, infer, inputs, outputs, attrs, KERNEL(name, 0))
#define PD_OP_DEFAULT_
#endif

/* Families whose members share slots and attributes (and differ in name and flags only). */
#define PD_UNARY_(name, flags) PD_OP(name, flags, unary, IN(ONE("X")), OUT(ONE("Out")), NONE)
/* Out = f(X) through the backend's unary entry (vm/ops/elementwise.c), f a pd_k_unop. */
#define PD_MATH_(name, flags, op)                                                               \
  PD_OPK(name, flags, unary, IN(ONE("X")), OUT(ONE("Out")), NONE, KERNEL(unary, op))
/* The activations of vm/ops/activation.c, through the backend's act/act_grad entries (op a
 * pd_k_act; its parameters are the op's FLOAT attributes, in order): float, per element, on
 * the GPU too. Those without attributes are written out. */
#define PD_ACT_(name, op, ...)                                                                  \
  PD_OPK(name, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, unary, IN(ONE("X")), OUT(ONE("Out")),     \
         ATTRS(__VA_ARGS__), KERNEL(act, op))
/* batch_norm and sync_batch_norm (vm/ops/norm.c): the same slots and attributes, Paddle's. */
#define PD_BATCH_NORM_(name, flags)                                                             \
  PD_OP(name, flags, batch_norm,                                                                \
        IN(ONE("X"), ONE("Scale"), ONE("Bias"), ONE("Mean"), ONE("Variance"),                   \
           OPT("MomentumTensor", HOST)),                                                        \
        OUT(ONE("Y"), ONE("MeanOut"), ONE("VarianceOut"), TEMP("SavedMean"),                    \
            TEMP("SavedVariance"), OPT("ReserveSpace")),                                        \
        ATTRS(FLOAT("momentum", 0.9), FLOAT("epsilon", 1e-5),                                   \
              ENUM("data_layout", "NCHW", "NHWC", "AnyLayout"), BOOL("is_test", false),         \
              BOOL("use_global_stats", false), BOOL("trainable_statistics", false)))
#define PD_ELEMENTWISE_(name, op)                                                               \
  PD_OPK(name, DIFF | GPU | GPU_GRAD | ROW_XY, elementwise, IN(ONE("X"), ONE("Y")),             \
         OUT(ONE("Out")), ATTRS(INT("axis", -1)), KERNEL(elementwise, op))
#define PD_COMPARE_(name, op)                                                                   \
  PD_OPK(name, GPU, compare, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")),                           \
         ATTRS(INT("axis", -1), BOOL("force_cpu", false)), KERNEL(compare, op))
#define PD_LOGICAL_(name, op)                                                                   \
  PD_OPK(name, GPU, compare, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")), NONE, KERNEL(logical, op))
#define PD_REDUCE_(name, flags, op)                                                             \
  PD_OPK(name, flags, reduce, IN(ONE("X")), OUT(ONE("Out")),                                    \
         ATTRS(INTS("dim", 0), BOOL("keep_dim", false), BOOL("reduce_all", false),              \
               INT("in_dtype", -1), INT("out_dtype", -1)),                                      \
         KERNEL(reduce, op))
/* pixel_shuffle, shuffle_channel, channel_shuffle: transposes of X viewed in more dims
 * (vm/ops/shape.c: one kernel, which tells them apart by the op's kind). */
#define PD_SHUFFLE_(name, ...)                                                                  \
  PD_OPK(name, DIFF | GPU | GPU_GRAD, shuffle, IN(ONE("X")), OUT(ONE("Out")),                   \
         ATTRS(__VA_ARGS__), KERNEL(shuffle, 0))
/* The old versions of the reshapes, without XShape (Fluid 1.x: reshape, transpose, squeeze,
 * unsqueeze, flatten) share their successors' shape functions and kernels (vm/ops/shape.c);
 * their gradient finds X's shape in X. */
#define PD_TRANSPOSE_(name, ...)                                                                \
  PD_OPK(name, DIFF | GPU | GPU_GRAD, transpose2, IN(ONE("X")), OUT(__VA_ARGS__),               \
         ATTRS(REQ(INTS, "axis"), STR("data_format", "AnyLayout")), KERNEL(transpose2, 0))
#define PD_RESHAPE_(name, ...)                                                                  \
  PD_OPK(name, DIFF | GPU | GPU_GRAD, reshape2,                                                 \
         IN(ONE("X"), OPT("Shape", HOST), OPT_LIST("ShapeTensor", HOST)), OUT(__VA_ARGS__),     \
         ATTRS(INTS_EMPTY("shape")), KERNELS(reshape2, xshape_grad, 0))
#define PD_SQUEEZE_(name, ...)                                                                  \
  PD_OPK(name, DIFF | GPU | GPU_GRAD, squeeze2, IN(ONE("X")), OUT(__VA_ARGS__),                 \
         ATTRS(INTS_EMPTY("axes")), KERNELS(squeeze2, xshape_grad, 0))
/* unsqueeze's axes may come at run time: AxesTensor (a 1-D int tensor), AxesTensorList (one int
 * tensor an axis). */
#define PD_UNSQUEEZE_(name, ...)                                                                \
  PD_OPK(name, DIFF | GPU | GPU_GRAD, unsqueeze2,                                               \
         IN(ONE("X"), OPT("AxesTensor", HOST), OPT_LIST("AxesTensorList", HOST)),               \
         OUT(__VA_ARGS__), ATTRS(INTS_EMPTY("axes")), KERNELS(unsqueeze2, xshape_grad, 0))
#define PD_FLATTEN_(name, ...)                                                                  \
  PD_OPK(name, DIFF | GPU | GPU_GRAD, flatten2, IN(ONE("X")), OUT(__VA_ARGS__),                 \
         ATTRS(INT("axis", 1)), KERNELS(flatten2, xshape_grad, 0))
/* lookup_table checks its ids on the host (an error names the one out of range) and hands the
 * backend a copy where it computes. */
#define PD_LOOKUP_TABLE_(name)                                                                  \
  PD_OPK(name, DIFF | GPU | GPU_GRAD | ROW_IDS, lookup_table, IN(ONE("W"), ONE("Ids", HOST)),   \
         OUT(ONE("Out")),                                                                       \
         ATTRS(BOOL("is_sparse", false), BOOL("is_distributed", false),                         \
               LONG("padding_idx", -1), BOOL("remote_prefetch", false)),                        \
         KERNEL(lookup, 0))

/* The resize ops (vm/ops/interp.c): Fluid's nearest_interp and bilinear_interp (one float scale;
 * the constant 1) and the _v2 ops (a scale per axis; 2). interp_method picks the method (linear:
 * a 3-D X), as in PaddlePaddle. */
#define PD_INTERP_(name, version, scale)                                                        \
  PD_OPK(name, DIFF | FP_IN | GPU | GPU_GRAD, interp,                                           \
         IN(ONE("X"), OPT("OutSize", HOST), OPT_LIST("SizeTensor", HOST), OPT("Scale", HOST)),  \
         OUT(ONE("Out")),                                                                       \
         ATTRS(ENUM("data_layout", "NCHW", "NHWC", "AnyLayout"), INT("out_d", 0),               \
               INT("out_h", 0), INT("out_w", 0), scale,                                         \
               ENUM("interp_method", "bilinear", "nearest", "bicubic", "linear"),              \
               BOOL("align_corners", true),                                                     \
               INT("align_mode", 1)),                                                           \
         KERNEL(interp, version))

PD_MATH_(abs, DIFF | GPU | GPU_GRAD | ROW_X, PD_K_ABS)
PD_OP(accuracy, 0, accuracy, IN(ONE("Out"), ONE("Indices"), ONE("Label")),
      OUT(ONE("Accuracy"), ONE("Correct"), ONE("Total")), NONE)
/* The optimizers read their scalars (learning rate, beta pows) on the host, where Fluid keeps
 * the beta pows. */
PD_OP(adagrad, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("Grad"), ONE("Moment"), ONE("LearningRate", HOST), OPT("MasterParam")),
      OUT(ONE("ParamOut"), ONE("MomentOut"), OPT("MasterParamOut")),
      ATTRS(FLOAT("epsilon", 1e-6), BOOL("multi_precision", false)))
PD_OPK(adam, FP_IN | GPU, optimizer,
       IN(ONE("Param"), ONE("Grad"), ONE("LearningRate", HOST), ONE("Moment1"), ONE("Moment2"),
          ONE("Beta1Pow", HOST), ONE("Beta2Pow", HOST), OPT("Beta1Tensor", HOST),
          OPT("Beta2Tensor", HOST), OPT("EpsilonTensor", HOST), OPT("MasterParam"),
          OPT("SkipUpdate", HOST)),
       OUT(ONE("ParamOut"), ONE("Moment1Out"), ONE("Moment2Out"), ONE("Beta1PowOut", HOST),
           ONE("Beta2PowOut", HOST), OPT("MasterParamOut")),
       ATTRS(FLOAT("beta1", 0.9), FLOAT("beta2", 0.999), FLOAT("epsilon", 1e-8),
             BOOL("lazy_mode", false), LONG("min_row_size_to_use_multithread", 1000),
             BOOL("multi_precision", false), BOOL("use_global_beta_pow", false)),
       KERNEL(adam, PD_OPV_ADAM))
PD_OPK(adamw, FP_IN | GPU, optimizer,
       IN(ONE("Param"), ONE("Grad"), ONE("LearningRate", HOST), ONE("Moment1"), ONE("Moment2"),
          ONE("Beta1Pow", HOST), ONE("Beta2Pow", HOST), OPT("Beta1Tensor", HOST),
          OPT("Beta2Tensor", HOST), OPT("EpsilonTensor", HOST), OPT("MasterParam"),
          OPT("SkipUpdate", HOST)),
       OUT(ONE("ParamOut"), ONE("Moment1Out"), ONE("Moment2Out"), ONE("Beta1PowOut", HOST),
           ONE("Beta2PowOut", HOST), OPT("MasterParamOut")),
       ATTRS(FLOAT("beta1", 0.9), FLOAT("beta2", 0.999), FLOAT("epsilon", 1e-8),
             BOOL("lazy_mode", false), LONG("min_row_size_to_use_multithread", 1000),
             BOOL("multi_precision", false), BOOL("use_global_beta_pow", false),
             FLOAT("lr_ratio", 1.0), FLOAT("coeff", 0.01), BOOL("with_decay", false)),
       KERNEL(adam, PD_OPV_ADAMW))
/* affine_channel: Out = X * Scale + Bias per channel (vm/ops/norm.c). */
PD_OP(affine_channel, DIFF | FP_IN | GPU | GPU_GRAD, affine_channel,
      IN(ONE("X"), ONE("Scale"), ONE("Bias")), OUT(ONE("Out")),
      ATTRS(ENUM("data_layout", "AnyLayout", "NCHW", "NHWC")))
/* arg_max, arg_min (vm/ops/reduce.c): the index of the largest / smallest element. */
#define PD_ARG_(name, karg)                                                                     \
  PD_OPK(name, 0, arg_max, IN(ONE("X")), OUT(ONE("Out")),                                       \
         ATTRS(REQ(LONG, "axis"), BOOL("keepdims", false), BOOL("flatten", false),              \
               INT("dtype", PD_INT64)),                                                         \
         KERNEL(arg_max, karg))
PD_ARG_(arg_max, PD_OPV_ARG_MAX)
PD_ARG_(arg_min, PD_OPV_ARG_MIN)
PD_UNARY_(assign, DIFF | GPU | GPU_GRAD | ROW_X)
PD_OP(assign_value, 0, assign_value, NONE, OUT(ONE("Out")),
      ATTRS(INTS_EMPTY("shape"), INT("dtype", PD_FP32), FLOATS_EMPTY("fp32_values"),
            INTS_EMPTY("int32_values"), LONGS_EMPTY("int64_values"), INTS_EMPTY("bool_values")))
PD_BATCH_NORM_(batch_norm, DIFF | FP_IN | GPU | GPU_GRAD)
PD_INTERP_(bicubic_interp_v2, 2, FLOATS_EMPTY("scale"))
PD_INTERP_(bilinear_interp, 1, FLOAT("scale", 0.0))
PD_INTERP_(bilinear_interp_v2, 2, FLOATS_EMPTY("scale"))
/* The detection ops (vm/ops/detection.c): the box post-processing of PaddleDetection's exports;
 * box_coder and yolo_box through the backend (on the GPU too), the others on the host. The
 * prior-box ops read only their inputs' dims. */
PD_OP(box_coder, FP_IN | GPU, box_coder,
      IN(ONE("PriorBox"), OPT("PriorBoxVar"), ONE("TargetBox")),
      OUT(ONE("OutputBox")),
      ATTRS(ENUM("code_type", "encode_center_size", "decode_center_size"),
            BOOL("box_normalized", true), INT("axis", 0), FLOATS_EMPTY("variance")))
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
PD_SHUFFLE_(channel_shuffle, REQ(INT, "groups"), ENUM("data_format", "NCHW", "NHWC"))
/* Loss scaling of fp16 training (vm/ops/amp.c; vm/passes/amp.h appends them): the gradients
 * divided by the scale, and whether any was not finite; the scale's dynamic update. The scale
 * and the step counts are read and written on the host, the gradients where the op computes. */
PD_OP(check_finite_and_unscale, GPU, check_finite_and_unscale,
      IN(LIST("X"), ONE("Scale", HOST)), OUT(LIST("Out"), ONE("FoundInfinite")), NONE)
PD_OP(clip, DIFF | FP_IN | GPU | GPU_GRAD, clip,
      IN(ONE("X"), OPT("Min", HOST), OPT("Max", HOST)),
      OUT(ONE("Out")),
      ATTRS(REQ(FLOAT, "min"), REQ(FLOAT, "max")))
PD_OP(concat, DIFF | GPU | GPU_GRAD, concat, IN(LIST("X"), OPT("AxisTensor", HOST)),
      OUT(ONE("Out")),
      ATTRS(INT("axis", 0)))
/* Control flow: the condition is read on the host; the vars a block reads and writes stay
 * where its ops put them. */
PD_OP(conditional_block, DIFF, conditional_block,
      IN(LIST("Cond", HOST), OPT_LIST("Input", ANY)),
      OUT(OPT_LIST("Out", ANY), ONE("Scope", ANY | SCOPES)),
      ATTRS(REQ(BLOCK, "sub_block"), BOOL("is_scalar_condition", false),
            STRS_EMPTY("skip_eager_deletion_vars")))
/* conv2d's signature; depthwise_conv2d is the name Paddle gives a conv2d whose groups are its
 * input channels (the same math: one kernel). */
#define PD_CONV2D_(name)                                                                       \
  PD_OPK(name, DIFF | FP_IN | GPU | GPU_GRAD | AMP, conv2d, IN(ONE("Input"), ONE("Filter")),    \
         OUT(ONE("Output")),                                                                    \
         ATTRS(INTS("strides", 1, 1), INTS("paddings", 0, 0),                                   \
               ENUM("padding_algorithm", "EXPLICIT", "SAME", "VALID"), INT("groups", 1),        \
               INTS("dilations", 1, 1), ENUM("data_format", "NCHW", "NHWC", "AnyLayout")),      \
         KERNEL(conv2d, 0))
PD_CONV2D_(conv2d)
/* conv2d_transpose's signature (Filter [in channels, out channels / groups, KH, KW], an
 * optional Bias [out channels]); depthwise_conv2d_transpose is its name with groups = the
 * input channels. One kernel, over conv2d's backend entries (vm/ops/nn.c). */
#define PD_CONV2D_TRANSPOSE_(name)                                                             \
  PD_OPK(name, DIFF | FP_IN | GPU | GPU_GRAD, conv2d_transpose,                                 \
         IN(ONE("Input"), ONE("Filter"), OPT("Bias")), OUT(ONE("Output")),                      \
         ATTRS(INTS("strides", 1, 1), INTS("paddings", 0, 0), INTS_EMPTY("output_padding"),     \
               INTS_EMPTY("output_size"), ENUM("padding_algorithm", "EXPLICIT", "SAME", "VALID"), \
               INT("groups", 1), INTS("dilations", 1, 1),                                       \
               ENUM("data_format", "NCHW", "NHWC", "AnyLayout")),                               \
         KERNEL(conv2d_transpose, 0))
PD_CONV2D_TRANSPOSE_(conv2d_transpose)
/* conv2d_transpose_bias: Paddle's fused op for an inference model's transposed convolution with
 * its bias and activation folded in (vm/passes/infer_opt.c makes it from conv2d_transpose, a bias
 * add and an activation): Output = act(conv2d_transpose(Input, Filter) + Bias [out channels]),
 * fuse_activation and its parameters as fused_conv2d's. NCHW; inference only. */
PD_OPK(conv2d_transpose_bias, FP_IN | GPU, conv2d_transpose,
       IN(ONE("Input"), ONE("Filter"), ONE("Bias")), OUT(ONE("Output")),
       ATTRS(INTS("strides", 1, 1), INTS("paddings", 0, 0), INTS_EMPTY("output_padding"),
             INTS_EMPTY("output_size"), ENUM("padding_algorithm", "EXPLICIT", "SAME", "VALID"),
             INT("groups", 1), INTS("dilations", 1, 1), ENUM("data_format", "NCHW", "AnyLayout"),
             STR("fuse_activation", ""), FLOAT("fuse_alpha", 0.0), FLOAT("fuse_beta", 0.0)),
       KERNEL(conv2d_transpose_bias, 0))
PD_OP(cross_entropy, DIFF | FP_IN, cross_entropy, IN(ONE("X"), ONE("Label")), OUT(ONE("Y")),
      ATTRS(BOOL("soft_label", false), INT("ignore_index", -100)))
/* cumsum: the running sums along axis (of all of X when flatten). */
PD_OP(cumsum, DIFF | GPU | GPU_GRAD, cumsum, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(INT("axis", -1), BOOL("flatten", false), BOOL("exclusive", false),
            BOOL("reverse", false)))
PD_OP(density_prior_box, FP_IN, density_prior_box, IN(ONE("Input", ANY), ONE("Image", ANY)),
      OUT(ONE("Boxes"), ONE("Variances")),
      ATTRS(REQ(FLOATS, "variances"), BOOL("clip", true), BOOL("flatten_to_2d", false),
            FLOAT("step_w", 0.0), FLOAT("step_h", 0.0), FLOAT("offset", 0.5),
            FLOATS_EMPTY("fixed_sizes"), FLOATS_EMPTY("fixed_ratios"), INTS_EMPTY("densities")))
PD_CONV2D_(depthwise_conv2d)
PD_CONV2D_TRANSPOSE_(depthwise_conv2d_transpose)
PD_OP(dropout, DIFF | FP_IN | GPU | GPU_GRAD, dropout, IN(ONE("X"), OPT("Seed", HOST)),
      OUT(ONE("Out"), TEMP("Mask")),
      ATTRS(FLOAT("dropout_prob", 0.5), BOOL("is_test", false), BOOL("fix_seed", false),
            INT("seed", 0),
            ENUM("dropout_implementation", "downgrade_in_infer", "upscale_in_train")))
PD_ELEMENTWISE_(elementwise_add, PD_K_ADD)
PD_ELEMENTWISE_(elementwise_div, PD_K_DIV)
PD_ELEMENTWISE_(elementwise_max, PD_K_MAX)
PD_ELEMENTWISE_(elementwise_min, PD_K_MIN)
PD_ELEMENTWISE_(elementwise_mul, PD_K_MUL)
PD_ELEMENTWISE_(elementwise_pow, PD_K_POW)
PD_ELEMENTWISE_(elementwise_sub, PD_K_SUB)
PD_OP(elman_rnn, DIFF | FP_IN | SEQ_IN, elman_rnn, IN(ONE("Input"), OPT("H0"), ONE("Weight")),
      OUT(ONE("Hidden")), ATTRS(ENUM("activation", "tanh", "relu", "sigmoid"),
                                BOOL("is_reverse", false)))
PD_ACT_(elu, PD_K_ELU, FLOAT("alpha", 1.0))
PD_COMPARE_(equal, PD_K_EQ)
PD_MATH_(exp, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, PD_K_EXP)
PD_OPK(expand_v2, DIFF | GPU | GPU_GRAD, expand_v2,
       IN(ONE("X"), OPT("Shape", HOST), OPT_LIST("expand_shapes_tensor", HOST)), OUT(ONE("Out")),
       ATTRS(INTS_EMPTY("shape")), KERNEL(repeat, PD_OPV_EXPAND))
PD_OP(fc, DIFF | FP_IN | GPU | GPU_GRAD | AMP, fc, IN(ONE("Input"), ONE("W"), OPT("Bias")),
      OUT(ONE("Out")),
      ATTRS(INT("in_num_col_dims", 1), STR("activation_type", ""),
            BOOL("padding_weights", false)))
/* A saved program's feed and fetch ops: data enters and leaves on the host. */
PD_OP(feed, 0, declared, IN(ONE("X", HOST)), OUT(ONE("Out", HOST)), ATTRS(REQ(INT, "col")))
PD_OP(fetch, 0, declared, IN(ONE("X", HOST)), OUT(ONE("Out", HOST)), ATTRS(REQ(INT, "col")))
PD_OP(fill_constant, GPU, fill_constant,
      IN(OPT("ValueTensor", HOST), OPT("ShapeTensor", HOST), OPT_LIST("ShapeTensorList", HOST)),
      OUT(ONE("Out")),
      ATTRS(INT("dtype", PD_FP32), LONGS_EMPTY("shape"), FLOAT("value", 0.0),
            STR("str_value", ""), BOOL("force_cpu", false), INT("place_type", -1)))
/* fill_constant_batch_size_like: fill_constant with one dim of shape from Input's dims. */
PD_OP(fill_constant_batch_size_like, GPU, fill_constant_batch_size_like, IN(ONE("Input", ANY)),
      OUT(ONE("Out")),
      ATTRS(REQ(INTS, "shape"), INT("dtype", PD_FP32), FLOAT("value", 0.0), STR("str_value", ""),
            INT("input_dim_idx", 0), INT("output_dim_idx", 0), BOOL("force_cpu", false)))
PD_UNARY_(fill_zeros_like, 0)
PD_FLATTEN_(flatten, ONE("Out"))
PD_FLATTEN_(flatten2, ONE("Out"), TEMP("XShape"))
PD_OPK(flatten_contiguous_range, DIFF | GPU | GPU_GRAD, flatten_contiguous_range, IN(ONE("X")),
       OUT(ONE("Out"), TEMP("XShape")), ATTRS(INT("start_axis", 1), INT("stop_axis", 1)),
       KERNELS(flatten_contiguous_range, xshape_grad, 0))
/* fused_gru, fused_lstm: pdlang's own ops (not Fluid's gru and lstm, whose gate order, slots
 * and GRU reset form differ), made by vm/passes/fuse_gated.c from stdlib/layers.pd's gru and lstm
 * loops after the input projection is hoisted: Input [T, 3 H] = x W_ih + b_ih (r, z, n), Weight
 * [H, 3 H] = W_hh, Bias [3 H] = b_hh; n = tanh(x_n + r (h W_hn + b_hn)), h' = (1 - z) n + z h
 * (PyTorch's and paddle.nn.GRU's). LSTM: Input [T, 4 H] = x W_ih + b (i, f, g, o), Weight
 * [H, 4 H]; c' = f c + i g, h' = o tanh(c'); Cell the c of every step. H0, C0: [H] or
 * [sequences, H]. BatchGate keeps the activations for the gradient. */
/* fused_conv2d: Paddle's name for an inference model's convolution with what follows it folded
 * in (vm/passes/infer_opt.c makes it from conv2d or depthwise_conv2d, a bias add, a residual add
 * and an activation): Output = act(conv(Input, Filter) + Bias (a value per output channel: [M]
 * or [1, M, 1, 1]) + ResidualData [like Output]), the two optional. fuse_activation is "" or relu, sigmoid, tanh, relu6 (its
 * threshold in fuse_beta), leaky_relu (alpha: fuse_alpha), swish (beta: fuse_alpha),
 * hard_sigmoid (slope, offset: fuse_alpha, fuse_beta), hard_swish (x min(max(fuse_alpha x +
 * fuse_beta, 0), 1), oneDNN's form), gelu or gelu_erf, gelu_tanh. Inference only. */
PD_OP(fused_conv2d, FP_IN | GPU, fused_conv2d,
      IN(ONE("Input"), ONE("Filter"), OPT("Bias"), OPT("ResidualData")), OUT(ONE("Output")),
      ATTRS(INTS("strides", 1, 1), INTS("paddings", 0, 0),
            ENUM("padding_algorithm", "EXPLICIT", "SAME", "VALID"), INT("groups", 1),
            INTS("dilations", 1, 1), ENUM("data_format", "NCHW", "AnyLayout"),
            STR("fuse_activation", ""), FLOAT("fuse_alpha", 0.0), FLOAT("fuse_beta", 0.0),
            BOOL("fuse_residual_connection", false)))
PD_OP(fused_gru, DIFF | FP_IN | SEQ_IN | GPU | GPU_GRAD | AMP, fused_gru,
      IN(ONE("Input"), OPT("H0"), ONE("Weight"), ONE("Bias")),
      OUT(ONE("Hidden"), TEMP("BatchGate")), ATTRS(BOOL("is_reverse", false)))
PD_OP(fused_lstm, DIFF | FP_IN | SEQ_IN | GPU | GPU_GRAD | AMP, fused_lstm,
      IN(ONE("Input"), OPT("H0"), OPT("C0"), ONE("Weight")),
      OUT(ONE("Hidden"), ONE("Cell"), TEMP("BatchGate")), ATTRS(BOOL("is_reverse", false)))
PD_OP(gather, DIFF | GPU | GPU_GRAD, gather, IN(ONE("X"), ONE("Index", HOST), OPT("Axis", HOST)),
      OUT(ONE("Out")),
      ATTRS(INT("axis", 0), BOOL("overwrite", true)))
PD_OPK(gaussian_random, GPU, random,
       IN(OPT("ShapeTensor", HOST), OPT_LIST("ShapeTensorList", HOST)), OUT(ONE("Out")),
       ATTRS(LONGS_EMPTY("shape"), FLOAT("mean", 0.0), FLOAT("std", 1.0), INT("seed", 0),
             INT("dtype", PD_FP32)),
       KERNEL(random_fill, PD_OPV_GAUSSIAN))
/* gelu: the backend's act entry with PD_K_GELU, or PD_K_GELU_TANH when approximate. */
PD_OP(gelu, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, unary, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(BOOL("approximate", false)))
PD_COMPARE_(greater_equal, PD_K_GE)
PD_COMPARE_(greater_than, PD_K_GT)
/* grid_sampler (vm/ops/interp.c): X [N, C, H, W] sampled at Grid [N, Ho, Wo, 2]'s points. */
PD_OP(grid_sampler, DIFF | FP_IN | GPU | GPU_GRAD, grid_sampler, IN(ONE("X"), ONE("Grid")),
      OUT(ONE("Output")),
      ATTRS(ENUM("mode", "bilinear", "nearest"), ENUM("padding_mode", "zeros", "border",
                                                        "reflection"),
            BOOL("align_corners", true)))
/* group_norm and instance_norm share a shape function and kernels (vm/ops/norm.c): a
 * layer_norm over each group, then the per-channel Scale and Bias. */
PD_OPK(group_norm, DIFF | FP_IN | GPU | GPU_GRAD, group_norm,
       IN(ONE("X"), OPT("Scale"), OPT("Bias")), OUT(ONE("Y"), TEMP("Mean"), TEMP("Variance")),
       ATTRS(FLOAT("epsilon", 1e-5), INT("groups", -1), ENUM("data_layout", "NCHW", "NHWC")),
       KERNEL(group_norm, 0))
/* gru, lstm: Fluid's recurrences over a batch of sequences (the dynamic_gru and dynamic_lstm
 * layers; vm/ops/rnn_fused.c says the equations): Input [T, 3 H] (u, r, c) or [T, 4 H] (c~, i,
 * f, o) holds the input projections; GRU Weight's memory W_ur [H, 2 H] then W_c [H, H], LSTM
 * Weight [H, 4 H] and Bias [1, 4 H] (use_peepholes: [1, 7 H], then W_ic, W_fc, W_oc); H0, C0
 * [sequences, H]. The Batch* outputs keep values for the gradient. On the CPU. */
PD_OP(gru, DIFF | FP_IN | SEQ_IN, gru, IN(ONE("Input"), OPT("H0"), ONE("Weight"), OPT("Bias")),
      OUT(TEMP("BatchGate"), TEMP("BatchResetHiddenPrev"), TEMP("BatchHidden"), ONE("Hidden")),
      ATTRS(ENUM("activation", "tanh", "sigmoid", "relu", "identity"),
            ENUM("gate_activation", "sigmoid", "tanh", "relu", "identity"),
            BOOL("is_reverse", false), BOOL("origin_mode", false)))
PD_ACT_(hard_sigmoid, PD_K_HARD_SIGMOID, FLOAT("slope", 0.2), FLOAT("offset", 0.5))
PD_ACT_(hard_swish, PD_K_HARD_SWISH, FLOAT("threshold", 6.0), FLOAT("scale", 6.0),
        FLOAT("offset", 3.0))
PD_OP(huber_loss, DIFF | FP_IN | GPU | GPU_GRAD, huber_loss, IN(ONE("X"), ONE("Y")),
      OUT(ONE("Out"), TEMP("Residual")), ATTRS(FLOAT("delta", 1.0)))
PD_OP(increment, 0, increment, IN(ONE("X")), OUT(ONE("Out")), ATTRS(FLOAT("step", 1.0)))
PD_OPK(instance_norm, DIFF | FP_IN | GPU | GPU_GRAD, group_norm,
       IN(ONE("X"), OPT("Scale"), OPT("Bias")),
       OUT(ONE("Y"), TEMP("SavedMean"), TEMP("SavedVariance")), ATTRS(FLOAT("epsilon", 1e-5)),
       KERNEL(group_norm, 0))
PD_OP(kldiv_loss, DIFF | FP_IN | GPU | GPU_GRAD, kldiv_loss, IN(ONE("X"), ONE("Target")),
      OUT(ONE("Loss")),
      ATTRS(ENUM("reduction", "mean", "none", "batchmean", "sum")))
PD_OP(layer_norm, DIFF | FP_IN | GPU | GPU_GRAD, layer_norm,
      IN(ONE("X"), OPT("Scale"), OPT("Bias")),
      OUT(ONE("Y"), TEMP("Mean"), TEMP("Variance")),
      ATTRS(INT("begin_norm_axis", 1), FLOAT("epsilon", 1e-5)))
PD_ACT_(leaky_relu, PD_K_LEAKY_RELU, FLOAT("alpha", 0.02))
PD_COMPARE_(less_equal, PD_K_LE)
PD_COMPARE_(less_than, PD_K_LT)
PD_INTERP_(linear_interp_v2, 2, FLOATS_EMPTY("scale"))
/* A combined parameters file read into the vars of Out, in order (what a script's import_model
 * puts in the startup program; Fluid's load_combine). */
PD_OPK(load_combine, 0, declared, NONE, OUT(LIST("Out", HOST)),
       ATTRS(STR("file_path", ""), BOOL("load_as_fp16", false), BOOL("model_from_memory", false)),
       KERNEL(load_combine, 0))
PD_OP(lod_reset, DIFF, lod_reset, IN(ONE("X"), OPT("Y")), OUT(ONE("Out")),
      ATTRS(INTS_EMPTY("target_lod"), BOOL("append", false)))
PD_MATH_(log, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, PD_K_LOG)
PD_OPK(log_softmax, DIFF | FP_IN | GPU | GPU_GRAD, softmax, IN(ONE("X")), OUT(ONE("Out")),
       ATTRS(INT("axis", -1)), KERNEL(softmax, PD_OPV_LOG_SOFTMAX))
PD_LOGICAL_(logical_and, PD_K_AND)
PD_OP(logical_not, GPU, unary_bool, IN(ONE("X")), OUT(ONE("Out")), NONE)
PD_LOGICAL_(logical_or, PD_K_OR)
/* logsigmoid, Fluid's name of log(1 / (1 + e^-x)) (the script's log_sigmoid). */
PD_OPK(logsigmoid, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, unary, IN(ONE("X")), OUT(ONE("Out")),
       NONE, KERNEL(act, PD_K_LOG_SIGMOID))
PD_LOOKUP_TABLE_(lookup_table)
PD_LOOKUP_TABLE_(lookup_table_v2)
PD_OP(lstm, DIFF | FP_IN | SEQ_IN, lstm,
      IN(ONE("Input"), OPT("H0"), OPT("C0"), ONE("Weight"), ONE("Bias")),
      OUT(ONE("Hidden"), ONE("Cell"), TEMP("BatchGate"), TEMP("BatchCellPreAct")),
      ATTRS(BOOL("use_peepholes", true), BOOL("is_reverse", false),
            ENUM("gate_activation", "sigmoid", "tanh", "relu", "identity"),
            ENUM("cell_activation", "tanh", "sigmoid", "relu", "identity"),
            ENUM("candidate_activation", "tanh", "sigmoid", "relu", "identity")))
/* lstmp: Fluid's lstm with a recurrent projection (the dynamic_lstmp layer; vm/ops/rnn_fused.c
 * says the equations): h [T, H] is projected by ProjWeight [H, P] into Projection [T, P], the
 * state the next step multiplies by Weight [P, 4 H]; H0 [sequences, P], C0 [sequences, H];
 * cell_clip and proj_clip bound the cell and the projection when > 0. BatchHidden keeps h,
 * OrderedP0 the initial projections in the batch's order (sequences by length). On the CPU. */
PD_OP(lstmp, DIFF | FP_IN | SEQ_IN, lstmp,
      IN(ONE("Input"), OPT("H0"), OPT("C0"), ONE("Weight"), ONE("ProjWeight"), ONE("Bias")),
      OUT(ONE("Projection"), ONE("Cell"), TEMP("BatchGate"), TEMP("BatchCellPreAct"),
          TEMP("BatchHidden"), TEMP("OrderedP0")),
      ATTRS(BOOL("use_peepholes", true), BOOL("is_reverse", false),
            ENUM("gate_activation", "sigmoid", "tanh", "relu", "identity"),
            ENUM("cell_activation", "tanh", "sigmoid", "relu", "identity"),
            ENUM("candidate_activation", "tanh", "sigmoid", "relu", "identity"),
            ENUM("proj_activation", "tanh", "sigmoid", "relu", "identity"),
            FLOAT("cell_clip", 0.0), FLOAT("proj_clip", 0.0)))
/* matmul: Fluid's first matrix product (BERT-era and Fluid 1.x exports): Out = alpha op(X) op(Y)
 * over the last two dims (op: transposed when transpose_X / transpose_Y); a 1-D X is the row
 * [1, K] and a 1-D Y the column [K, 1], transposed as well, the dim of 1 they add dropped from
 * Out. The batches (all dims but the last two, counted as one) are equal, or one operand is a
 * single matrix; Out takes the batched operand's leading dims and X's LoD. matmul_v2: NumPy's
 * matmul (a 1-D operand never transposed, batch dims that broadcast), no scale. One shape
 * function and kernel (vm/ops/matmul.c), told apart by the constant. */
PD_OPK(matmul, DIFF | GPU | GPU_GRAD | AMP, matmul, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")),
       ATTRS(BOOL("transpose_X", false), BOOL("transpose_Y", false), FLOAT("alpha", 1.0)),
       KERNEL(matmul, PD_OPV_MATMUL))
PD_OPK(matmul_v2, DIFF | GPU | GPU_GRAD | AMP, matmul, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")),
       ATTRS(BOOL("trans_x", false), BOOL("trans_y", false)), KERNEL(matmul, PD_OPV_MATMUL_V2))
PD_OP(mean, DIFF | FP_IN | GPU | GPU_GRAD, mean, IN(ONE("X")), OUT(ONE("Out")), NONE)
/* memory_efficient_attention: Paddle's fused attention (paddle.incubate.nn's; vm/passes/
 * infer_opt.c also makes it from an inference model's heads: transposes, products, mask add and
 * softmax): output [B, Sq, H, Dv] = softmax(scale query key^T + bias) value per batch and head,
 * query [B, Sq, H, D], key [B, Sk, H, D], value [B, Sk, H, Dv], bias broadcast to [B, H, Sq, Sk]
 * (optional), scale < 0 meaning 1 / sqrt(D), causal masking key j > query i. logsumexp [B, H,
 * Sq]: each row's log-sum-exp of its scores; seed_and_offset [2] int64, 0 (no dropout). Batches
 * of one length only (cu_seqlens_q and the other variable-length inputs unset), and no dropout
 * (dropout_p 0, or is_test): inference, on the host, through the CPU backend's attention entry. */
PD_OP(memory_efficient_attention, FP_IN, memory_efficient_attention,
      IN(ONE("query"), ONE("key"), ONE("value"), OPT("bias"), OPT("cu_seqlens_q"),
         OPT("cu_seqlens_k"), OPT("causal_diagonal"), OPT("seqlen_k")),
      OUT(ONE("output"), OPT("logsumexp"), OPT("seed_and_offset")),
      ATTRS(LONG("max_seqlen_q", -1), LONG("max_seqlen_k", -1), BOOL("causal", false),
            FLOAT("dropout_p", 0.0), FLOAT("scale", -1.0), BOOL("is_test", true)))
PD_OP(merge_lod_tensor, DIFF, merge_lod_tensor,
      IN(ONE("X"), ONE("Mask"), ONE("InTrue"), ONE("InFalse")), OUT(ONE("Out")),
      ATTRS(INT("level", 0)))
/* meshgrid: Out[i] = X[i] (rank 0 or 1) broadcast over the grid of every X (vm/ops/index.c). */
PD_OP(meshgrid, DIFF | GPU | GPU_GRAD, meshgrid, IN(LIST("X")), OUT(LIST("Out")), NONE)
PD_OP(momentum, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("Grad"), ONE("Velocity"), ONE("LearningRate", HOST),
         OPT("MasterParam")),
      OUT(ONE("ParamOut"), ONE("VelocityOut"), OPT("MasterParamOut")),
      ATTRS(REQ(FLOAT, "mu"), BOOL("use_nesterov", false), STR("regularization_method", ""),
            FLOAT("regularization_coeff", 0.0), BOOL("multi_precision", false),
            FLOAT("rescale_grad", 1.0)))
PD_OP(mul, DIFF | GPU | GPU_GRAD | ROW_X | AMP, mul, IN(ONE("X"), ONE("Y")), OUT(ONE("Out")),
      ATTRS(INT("x_num_col_dims", 1), INT("y_num_col_dims", 1)))
/* The multi-class NMS, three versions of one kernel (the constant): 2 adds Index, 3 RoisNum
 * and NmsRoisNum. Paddle runs it on the CPU: its values are read and written on the host. */
#define PD_MULTICLASS_NMS_ATTRS_                                                                \
  ATTRS(INT("background_label", 0), REQ(FLOAT, "score_threshold"), REQ(INT, "nms_top_k"),      \
        FLOAT("nms_threshold", 0.3), FLOAT("nms_eta", 1.0), REQ(INT, "keep_top_k"),            \
        BOOL("normalized", true))
PD_OPK(multiclass_nms, 0, multiclass_nms, IN(ONE("BBoxes", HOST), ONE("Scores", HOST)),
       OUT(ONE("Out", HOST)), PD_MULTICLASS_NMS_ATTRS_, KERNEL(multiclass_nms, 1))
PD_OPK(multiclass_nms2, 0, multiclass_nms, IN(ONE("BBoxes", HOST), ONE("Scores", HOST)),
       OUT(ONE("Out", HOST), OPT("Index", HOST)), PD_MULTICLASS_NMS_ATTRS_,
       KERNEL(multiclass_nms, 2))
PD_OPK(multiclass_nms3, 0, multiclass_nms,
       IN(ONE("BBoxes", HOST), ONE("Scores", HOST), OPT("RoisNum", HOST)),
       OUT(ONE("Out", HOST), ONE("Index", HOST), OPT("NmsRoisNum", HOST)),
       PD_MULTICLASS_NMS_ATTRS_, KERNEL(multiclass_nms, 3))
PD_INTERP_(nearest_interp, 1, FLOAT("scale", 0.0))
PD_INTERP_(nearest_interp_v2, 2, FLOATS_EMPTY("scale"))
PD_COMPARE_(not_equal, PD_K_NE)
/* one_hot (Fluid 1.x: X [..., 1], the last dim becoming depth) and one_hot_v2 (a new last dim
 * of depth), vm/ops/index.c: ids to rows of zeros with a one, of type `dtype`. */
#define PD_ONE_HOT_(name, version)                                                              \
  PD_OPK(name, 0, one_hot, IN(ONE("X"), OPT("depth_tensor")), OUT(ONE("Out")),                  \
         ATTRS(INT("depth", -1), INT("dtype", PD_FP32), BOOL("allow_out_of_range", false)),     \
         KERNEL(one_hot, version))
PD_ONE_HOT_(one_hot, PD_OPV_ONE_HOT)
PD_ONE_HOT_(one_hot_v2, PD_OPV_ONE_HOT_V2)
/* pad, pad2d, pad3d: X padded in every dim (pad: constant), in H and W (pad2d), in D, H and W
 * (pad3d) through the backend's pad entry (vm/ops/pad.c); Paddings gives the paddings at run
 * time. */
PD_OPK(pad, DIFF | GPU | GPU_GRAD, pad, IN(ONE("X")), OUT(ONE("Out")),
       ATTRS(REQ(INTS, "paddings"), FLOAT("pad_value", 0.0)), KERNEL(pad, 0))
PD_OPK(pad2d, DIFF | GPU | GPU_GRAD, pad, IN(ONE("X"), OPT("Paddings", HOST)), OUT(ONE("Out")),
       ATTRS(INTS("paddings", 0, 0, 0, 0), FLOAT("pad_value", 0.0),
             ENUM("mode", "constant", "reflect", "edge"), ENUM("data_format", "NCHW", "NHWC")),
       KERNEL(pad, 0))
PD_OPK(pad3d, DIFF | GPU | GPU_GRAD, pad, IN(ONE("X"), OPT("Paddings", HOST)), OUT(ONE("Out")),
       ATTRS(INTS("paddings", 0, 0, 0, 0, 0, 0),
             ENUM("mode", "constant", "reflect", "replicate", "circular"), FLOAT("value", 0.0),
             ENUM("data_format", "NCDHW", "NDHWC")),
       KERNEL(pad, 0))
PD_SHUFFLE_(pixel_shuffle, INT("upscale_factor", 1), ENUM("data_format", "NCHW", "NHWC"))
PD_OP(pool2d, DIFF | FP_IN | GPU | GPU_GRAD, pool2d, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(REQ_ENUM("pooling_type", "max", "avg"), REQ(INTS, "ksize"),
            BOOL("global_pooling", false), INTS("strides", 1, 1), INTS("paddings", 0, 0),
            BOOL("exclusive", true), BOOL("adaptive", false), BOOL("ceil_mode", false),
            ENUM("data_format", "NCHW", "NHWC", "AnyLayout"),
            ENUM("padding_algorithm", "EXPLICIT", "SAME", "VALID")))
/* prelu (vm/ops/activation.c): Alpha one slope (mode all), one per channel or one per element
 * of an instance. */
PD_OP(prelu, DIFF | FP_IN | GPU | GPU_GRAD, prelu, IN(ONE("X"), ONE("Alpha")), OUT(ONE("Out")),
      ATTRS(ENUM("mode", "all", "channel", "element"), ENUM("data_format", "NCHW", "NHWC")))
PD_OP(prior_box, FP_IN, prior_box, IN(ONE("Input", ANY), ONE("Image", ANY)),
      OUT(ONE("Boxes"), ONE("Variances")),
      ATTRS(REQ(FLOATS, "min_sizes"), FLOATS_EMPTY("max_sizes"), FLOATS_EMPTY("aspect_ratios"),
            FLOATS_EMPTY("variances"), BOOL("flip", true), BOOL("clip", true),
            FLOAT("step_w", 0.0), FLOAT("step_h", 0.0), FLOAT("offset", 0.5),
            BOOL("min_max_aspect_ratios_order", false)))
/* range: Start, Start + Step, ... short of End (vm/ops/create.c); values made on the host. */
PD_OP(range, GPU, range, IN(ONE("Start", HOST), ONE("End", HOST), ONE("Step", HOST)),
      OUT(ONE("Out")), NONE)
PD_OP(recurrent, DIFF, recurrent,
      IN(LIST("inputs"), OPT_LIST("initial_states"), OPT_LIST("parameters", ANY)),
      OUT(OPT_LIST("outputs"), ONE("step_scopes", ANY | SCOPES)),
      ATTRS(REQ(STRINGS, "ex_states"), REQ(STRINGS, "states"), REQ(BLOCK, "sub_block"),
            BOOL("reverse", false), BOOL("is_train", true), BOOL("has_states", false),
            STRS_EMPTY("skip_eager_deletion_vars"), STRS_EMPTY("param_products")))
PD_REDUCE_(reduce_max, DIFF | GPU | GPU_GRAD, PD_K_RMAX)
PD_REDUCE_(reduce_mean, DIFF | FP_IN | GPU | GPU_GRAD, PD_K_RMEAN)
PD_REDUCE_(reduce_min, DIFF | GPU | GPU_GRAD, PD_K_RMIN)
PD_REDUCE_(reduce_prod, DIFF, PD_OPV_REDUCE_PROD)
PD_REDUCE_(reduce_sum, DIFF | GPU | GPU_GRAD, PD_K_RSUM)
PD_MATH_(relu, DIFF | GPU | GPU_GRAD | ROW_X, PD_K_RELU)
PD_ACT_(relu6, PD_K_RELU6, FLOAT("threshold", 6.0))
PD_RESHAPE_(reshape, ONE("Out"))
PD_RESHAPE_(reshape2, ONE("Out"), TEMP("XShape"))
PD_OP(rmsprop, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("MeanSquare"), ONE("Moment"), ONE("LearningRate", HOST), ONE("Grad"),
         OPT("MeanGrad"), OPT("MasterParam")),
      OUT(ONE("ParamOut"), ONE("MomentOut"), ONE("MeanSquareOut"), OPT("MeanGradOut"),
          OPT("MasterParamOut")),
      ATTRS(FLOAT("epsilon", 1e-10), FLOAT("decay", 0.9), FLOAT("momentum", 0.0),
            BOOL("centered", false), BOOL("multi_precision", false)))
/* rnn: PaddlePaddle's (paddle.nn.LSTM / GRU / SimpleRNN in a static program), vm/ops/rnn.c.
 * Input time-major [T, N, I]; PreState h (and c) [layers x directions, N, H]; WeightList the
 * weight_ih, weight_hh of each (layer, direction), then their bias_ih, bias_hh. */
PD_OP(rnn, DIFF | FP_IN | GPU | GPU_GRAD | AMP, rnn,
      IN(ONE("Input"), LIST("PreState"), LIST("WeightList"), OPT("SequenceLength", HOST)),
      OUT(ONE("Out"), OPT("DropoutState"), TEMP("Reserve"), LIST("State")),
      ATTRS(FLOAT("dropout_prob", 0.0), BOOL("is_bidirec", false), INT("input_size", 10),
            INT("hidden_size", 100), INT("num_layers", 1),
            REQ_ENUM("mode", "LSTM", "GRU", "RNN_TANH", "RNN_RELU"), INT("seed", 0),
            BOOL("is_test", false)))
PD_OP(sampling_id, 0, sampling_id, IN(ONE("X")), OUT(ONE("Out")),
      ATTRS(FLOAT("min", 0.0), FLOAT("max", 1.0), INT("seed", 0)))
PD_OP(scale, DIFF | GPU | GPU_GRAD | ROW_X, unary, IN(ONE("X"), OPT("ScaleTensor", HOST)),
      OUT(ONE("Out")),
      ATTRS(FLOAT("scale", 1.0), FLOAT("bias", 0.0), BOOL("bias_after_scale", true)))
PD_OP(select_input, DIFF | GPU | GPU_GRAD, select_input, IN(LIST("X"), ONE("Mask", HOST)),
      OUT(ONE("Out")), NONE)
/* sequence_conv: Fluid's context projection and product: Out row t of a sequence is the rows
 * t + contextStart .. t + contextStart + contextLength - 1 of its sequence side by side (zeros
 * outside it, or PaddingData's rows with paddingTrainable) times Filter [contextLength D, M]. */
PD_OP(sequence_conv, DIFF | FP_IN | SEQ_IN, sequence_conv,
      IN(ONE("X"), OPT("PaddingData"), ONE("Filter")), OUT(ONE("Out")),
      ATTRS(BOOL("paddingTrainable", false), REQ(INT, "contextLength"), INT("contextStart", 0),
            INT("contextStride", 1)))
PD_OP(sequence_pool, DIFF | SEQ_IN, sequence_pool, IN(ONE("X")),
      OUT(ONE("Out"), TEMP("MaxIndex")),
      ATTRS(BOOL("is_test", false),
            ENUM("pooltype", "AVERAGE", "SUM", "SQRT", "LAST", "FIRST", "MAX"),
            FLOAT("pad_value", 0.0)))
PD_UNARY_(sequence_softmax, DIFF | FP_IN | SEQ_IN)
PD_OP(sgd, FP_IN | GPU, optimizer,
      IN(ONE("Param"), ONE("LearningRate", HOST), ONE("Grad"), OPT("MasterParam")),
      OUT(ONE("ParamOut"), OPT("MasterParamOut")), ATTRS(BOOL("multi_precision", false)))
/* shape reads only the dims of its input: the data stays where it is. */
PD_OP(shape, 0, shape, IN(ONE("Input", ANY)), OUT(ONE("Out", HOST)), NONE)
PD_SHUFFLE_(shuffle_channel, INT("group", 1))
PD_MATH_(sigmoid, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, PD_K_SIGMOID)
PD_OP(sigmoid_cross_entropy_with_logits, DIFF | FP_IN | GPU | GPU_GRAD,
      sigmoid_cross_entropy_with_logits,
      IN(ONE("X"), ONE("Label")), OUT(ONE("Out")),
      ATTRS(BOOL("normalize", false), INT("ignore_index", -100)))
PD_OPK(silu, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, unary, IN(ONE("X")), OUT(ONE("Out")),
       NONE, KERNEL(act, PD_K_SILU))
PD_OP(slice, DIFF | GPU | GPU_GRAD, slice, IN(ONE("Input")), OUT(ONE("Out")),
      ATTRS(REQ(INTS, "axes"), INTS_EMPTY("starts"), INTS_EMPTY("ends"), INTS_EMPTY("infer_flags"),
            INTS_EMPTY("decrease_axis")))
PD_OP(smooth_l1_loss, DIFF | FP_IN | GPU | GPU_GRAD, smooth_l1_loss,
      IN(ONE("X"), ONE("Y"), OPT("InsideWeight"), OPT("OutsideWeight")),
      OUT(TEMP("Diff"), ONE("Out")), ATTRS(FLOAT("sigma", 1.0)))
PD_OPK(softmax, DIFF | FP_IN | GPU | GPU_GRAD, softmax, IN(ONE("X")), OUT(ONE("Out")),
       ATTRS(INT("axis", -1)), KERNEL(softmax, PD_OPV_SOFTMAX))
PD_OP(softmax_with_cross_entropy, DIFF | FP_IN | GPU | GPU_GRAD, softmax_with_cross_entropy,
      IN(ONE("Logits"), ONE("Label")), OUT(TEMP("Softmax"), ONE("Loss")),
      ATTRS(BOOL("soft_label", false), BOOL("numeric_stable_mode", true),
            INT("ignore_index", -100), INT("axis", -1)))
PD_ACT_(softplus, PD_K_SOFTPLUS, FLOAT("beta", 1.0), FLOAT("threshold", 20.0))
PD_OP(split, DIFF | GPU | GPU_GRAD, split,
      IN(ONE("X"), OPT("AxisTensor", HOST), OPT_LIST("SectionsTensorList", HOST)),
      OUT(LIST("Out")), ATTRS(INT("axis", 0), INT("num", 0), INTS_EMPTY("sections")))
PD_OP(split_lod_tensor, DIFF, split_lod_tensor, IN(ONE("X"), ONE("Mask")),
      OUT(ONE("OutTrue"), ONE("OutFalse")), ATTRS(INT("level", 0)))
PD_MATH_(sqrt, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, PD_K_SQRT)
PD_MATH_(square, DIFF | GPU | GPU_GRAD | ROW_X, PD_K_SQUARE)
PD_SQUEEZE_(squeeze, ONE("Out"))
PD_SQUEEZE_(squeeze2, ONE("Out"), TEMP("XShape"))
PD_OP(stack, DIFF | GPU | GPU_GRAD, stack, IN(LIST("X")), OUT(ONE("Y")), ATTRS(INT("axis", 0)))
PD_OP(sum, DIFF | GPU, sum, IN(LIST("X")), OUT(ONE("Out")), NONE)
PD_ACT_(swish, PD_K_SWISH, FLOAT("beta", 1.0))
/* batch_norm whose batch statistics (and their gradient's sums) are summed over the ranks of a
 * data-parallel job (vm/run/comm.h); in one process, batch_norm's values. On the host. */
PD_BATCH_NORM_(sync_batch_norm, DIFF | FP_IN)
PD_MATH_(tanh, DIFF | FP_IN | GPU | GPU_GRAD | ROW_X, PD_K_TANH)
PD_OPK(tile, DIFF | GPU | GPU_GRAD, tile, IN(ONE("X")), OUT(ONE("Out")),
       ATTRS(INTS_EMPTY("repeat_times")), KERNEL(repeat, PD_OPV_TILE))
PD_OPK(top_k, DIFF, top_k, IN(ONE("X"), OPT("K")), OUT(ONE("Out"), ONE("Indices")),
       ATTRS(INT("k", 1)), KERNEL(top_k, PD_OPV_TOP_K))
PD_OPK(top_k_v2, DIFF, top_k, IN(ONE("X"), OPT("K")), OUT(ONE("Out"), ONE("Indices")),
       ATTRS(INT("k", 1), INT("axis", -1), BOOL("largest", true), BOOL("sorted", true)),
       KERNEL(top_k, PD_OPV_TOP_K_V2))
PD_TRANSPOSE_(transpose, ONE("Out"))
PD_TRANSPOSE_(transpose2, ONE("Out"), TEMP("XShape"))
PD_OPK(uniform_random, GPU, random,
       IN(OPT("ShapeTensor", HOST), OPT_LIST("ShapeTensorList", HOST)), OUT(ONE("Out")),
       ATTRS(LONGS_EMPTY("shape"), FLOAT("min", -1.0), FLOAT("max", 1.0), INT("seed", 0),
             INT("diag_num", 0), INT("diag_step", 0), FLOAT("diag_val", 1.0),
             INT("dtype", PD_FP32)),
       KERNEL(random_fill, PD_OPV_UNIFORM))
PD_UNSQUEEZE_(unsqueeze, ONE("Out"))
PD_UNSQUEEZE_(unsqueeze2, ONE("Out"), TEMP("XShape"))
PD_OP(update_loss_scaling, GPU, update_loss_scaling,
      IN(OPT_LIST("X"), ONE("FoundInfinite", HOST), ONE("PrevLossScaling", HOST),
         ONE("InGoodSteps", HOST), ONE("InBadSteps", HOST), OPT("StopUpdate", HOST)),
      OUT(OPT_LIST("Out"), ONE("LossScaling", HOST), ONE("OutGoodSteps", HOST),
          ONE("OutBadSteps", HOST)),
      ATTRS(REQ(INT, "incr_every_n_steps"), REQ(INT, "decr_every_n_nan_or_inf"),
            REQ(FLOAT, "incr_ratio"), REQ(FLOAT, "decr_ratio"), BOOL("stop_update", false)))
PD_OP(where, DIFF | GPU | GPU_GRAD, where, IN(ONE("Condition"), ONE("X"), ONE("Y")),
      OUT(ONE("Out")), NONE)
PD_OP(while, DIFF, while, IN(OPT_LIST("X", ANY), LIST("Condition", HOST)),
      OUT(OPT_LIST("Out", ANY), ONE("StepScopes", ANY | SCOPES)),
      ATTRS(REQ(BLOCK, "sub_block"), BOOL("is_test", false),
            STRS_EMPTY("skip_eager_deletion_vars"), LONG("max_iterations", 1000000)))
PD_OP(yolo_box, FP_IN | GPU, yolo_box, IN(ONE("X"), ONE("ImgSize")),
      OUT(ONE("Boxes"), ONE("Scores")),
      ATTRS(INTS_EMPTY("anchors"), INT("class_num", 1), FLOAT("conf_thresh", 0.01),
            INT("downsample_ratio", 32), BOOL("clip_bbox", true), FLOAT("scale_x_y", 1.0),
            BOOL("iou_aware", false), FLOAT("iou_aware_factor", 0.5)))

#ifdef PD_OP_DEFAULT_
#undef PD_OP
#undef PD_OP_DEFAULT_
#endif
#undef PD_UNARY_
#undef PD_CONV2D_
#undef PD_CONV2D_TRANSPOSE_
#undef PD_MATH_
#undef PD_ACT_
#undef PD_BATCH_NORM_
#undef PD_ELEMENTWISE_
#undef PD_COMPARE_
#undef PD_LOGICAL_
#undef PD_REDUCE_
#undef PD_LOOKUP_TABLE_
#undef PD_SHUFFLE_
#undef PD_TRANSPOSE_
#undef PD_RESHAPE_
#undef PD_SQUEEZE_
#undef PD_UNSQUEEZE_
#undef PD_FLATTEN_
#undef PD_MULTICLASS_NMS_ATTRS_
#undef PD_INTERP_
#undef PD_ARG_
#undef PD_ONE_HOT_
