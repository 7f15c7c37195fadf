# tests/vm/ops/local.mk -- the tests of vm/ops/ and of the op table vm/oplist.h:
#   test_optable: the op-test table (optest.h): every op flagged GPU, GPU_GRAD or DIFF, case by
#     case, on the CPU against a reference (fp64 and fp32), on the GPU against the CPU (where a
#     GPU opens), and through the fp64 finite-difference check of its gradient; the rows are in
#     optest_<family>.c, one file per family file of vm/ops/;
#   test_opdefs: the registry itself (sorted, flags, slots, attributes, gradient ops);
#   test_opcheck: pd_opdef_check and the defaults;
#   test_infer_*: shape inference family by family (fixture.h builds the programs);
#   test_kern_amp: mul, fc, matmul_v2 and their gradients under mixed precision (bf16 products);
#   test_kern_*: each op run through the real executor (runop.h: run-time shapes checked
#     against shape inference) against values computed in the test, bad input, and fp64
#     finite-difference gradients (gradcheck.h): the math ops (test_kern_math.h: what they
#     share), elementwise and comparisons, matmul, reductions, losses, the activations with
#     parameters, norms, shape and index ops, tensors and random ops, conv and pooling,
#     optimizers, select_input, the fused recurrences and Paddle's rnn op (paddle_rnn_check.py:
#     the same reference against paddle.nn.LSTM / GRU, by hand).
VM_OPS_TESTS = tests/vm/ops/test_optable tests/vm/ops/test_opdefs tests/vm/ops/test_opcheck \
	tests/vm/ops/test_infer_elementwise tests/vm/ops/test_infer_math \
	tests/vm/ops/test_infer_tensor tests/vm/ops/test_infer_nn tests/vm/ops/test_infer_control \
	tests/vm/ops/test_kern_math tests/vm/ops/test_kern_math_matmul \
	tests/vm/ops/test_kern_elementwise tests/vm/ops/test_kern_reduce tests/vm/ops/test_kern_loss \
	tests/vm/ops/test_kern_loss_elem tests/vm/ops/test_kern_act tests/vm/ops/test_kern_norm \
	tests/vm/ops/test_kern_index tests/vm/ops/test_kern_tensor tests/vm/ops/test_kern_nn \
	tests/vm/ops/test_kern_optim tests/vm/ops/test_kern_optim_more tests/vm/ops/test_kern_random \
	tests/vm/ops/test_kern_select tests/vm/ops/test_kern_rnn_fused tests/vm/ops/test_kern_rnn_op \
	tests/vm/ops/test_kern_amp
check_PROGRAMS += $(VM_OPS_TESTS)
TESTS += $(VM_OPS_TESTS)
EXTRA_DIST += tests/vm/ops/fixture.h tests/vm/ops/runop.h tests/vm/ops/gradcheck.h \
	tests/vm/ops/test_kern_math.h tests/vm/ops/paddle_rnn_check.py
# A row names only the fields it sets ({"X", "[2, 3]"}: slot and shape); C zeroes the rest, which
# clang's -Wextra would have written out.
tests_vm_ops_test_optable_CFLAGS = $(AM_CFLAGS) -Wno-missing-field-initializers
tests_vm_ops_test_optable_SOURCES = tests/vm/ops/test_optable.c tests/vm/ops/optest.h \
	tests/vm/ops/optest_activation.c tests/vm/ops/optest_amp.c tests/vm/ops/optest_collective.c \
	tests/vm/ops/optest_control.c tests/vm/ops/optest_create.c tests/vm/ops/optest_detection.c \
	tests/vm/ops/optest_elementwise.c \
	tests/vm/ops/optest_index.c tests/vm/ops/optest_interp.c \
	tests/vm/ops/optest_loss.c tests/vm/ops/optest_loss_elem.c \
	tests/vm/ops/optest_matmul.c tests/vm/ops/optest_nn.c tests/vm/ops/optest_norm.c \
	tests/vm/ops/optest_optim.c tests/vm/ops/optest_pad.c tests/vm/ops/optest_recurrent.c \
	tests/vm/ops/optest_reduce.c tests/vm/ops/optest_rnn.c tests/vm/ops/optest_rnn_fused.c \
	tests/vm/ops/optest_select.c tests/vm/ops/optest_sequence.c tests/vm/ops/optest_shape.c
# test_compat: vm/ops/compat.c's facts against what PaddlePaddle's definitions say its ops carry
# (vm/ops/compat_paddle.txt, tools/paddle_compat.py), pd_compat_apply on programs with each kind
# of thing, and doc/language.md's table of the facts (`test_compat --doc` prints it).
check_PROGRAMS += tests/vm/ops/test_compat
TESTS += tests/vm/ops/test_compat
EXTRA_DIST += vm/ops/compat_paddle.txt tools/paddle_compat.py
# Outside make check (it needs PaddlePaddle): tools/paddle_op_check.py runs single ops in Paddle
# and through `pdlang exec` and compares them bit for bit (the resize ops, grid_sampler,
# top_k_v2, arg_min, one_hot_v2).
EXTRA_DIST += tools/paddle_op_check.py
