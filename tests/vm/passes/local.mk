# tests/vm/passes/local.mk -- the tests of vm/passes/:
#   test_prune: Prune on hand-built programs (tests/vm/ir/models.c) and on examples/*.pd;
#   test_hoist: the loop hoisting pass: what moves, same cost, gradients against the unhoisted
#     program and finite differences (fp64);
#   test_cf_grad: the backward pass through if/else, scalar if and for-rnn (fp64 finite
#     differences), and the seeds' if/else gradients by hand;
#   test_optimizer, test_optimizer_more: the optimizer pass (sgd, momentum, adam, adamw,
#     rmsprop, adagrad, weight decay, clipping, schedules) against updates by hand, Fluid's state
#     var names (opt_fixture.h);
#   test_norm_train: the training program of batch_norm and layer_norm layers (no gradient or
#     update for the running statistics), and what print / eval / save prune to;
#   test_paddle_export: the rewrite of a saved model for PaddlePaddle against the program run
#     in memory; test_infer_opt: the load-time passes of an inference model (batch norm folding,
#     dropout and identity scales removed) against the unoptimised program;
#   test_amp_scaling: fp16 loss scaling in the training program under a forced overflow (steps
#     skipped, the scale backed off and grown: values by hand), a static scale.
VM_PASSES_TESTS = tests/vm/passes/test_prune tests/vm/passes/test_hoist \
	tests/vm/passes/test_cf_grad tests/vm/passes/test_optimizer \
	tests/vm/passes/test_optimizer_more tests/vm/passes/test_norm_train \
	tests/vm/passes/test_paddle_export tests/vm/passes/test_infer_opt \
	tests/vm/passes/test_amp_scaling
check_PROGRAMS += $(VM_PASSES_TESTS)
TESTS += $(VM_PASSES_TESTS)
EXTRA_DIST += tests/vm/passes/opt_fixture.h
tests_vm_passes_test_prune_SOURCES = tests/vm/passes/test_prune.c $(VM_IR_MODELS)
tests_vm_passes_test_prune_CPPFLAGS = $(AM_CPPFLAGS) -DPD_TOP_SRCDIR='"$(abs_top_srcdir)"'
