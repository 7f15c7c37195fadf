# tests/norm.mk -- the normalisation ops (vm/ops/norm.c, kernels/cpu/norm.c):
#   tests/ops/test_kern_norm: batch_norm and layer_norm against their formulas, their gradients
#     against finite differences, bad input;
#   tests/golden/run/batch_norm_*, layer_norm_*: train updates the running statistics, print
#     and eval use them, layer_norm's values (all by hand in the scripts), and errors at the
#     .pd line;
#   tests/run/batch_norm.sh: stdlib's batch_norm trained end to end, its running statistics in
#     the saved model (pdlang exec on one row) and through a checkpoint resume, bit for bit.
check_PROGRAMS += tests/ops/test_kern_norm
tests_ops_test_kern_norm_SOURCES = tests/ops/test_kern_norm.c
tests_ops_test_kern_norm_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/ops/test_kern_norm

#   tests/vm/test_norm_train: the training program of batch_norm and layer_norm layers (no
#     gradient or update for the running statistics), and what print / eval / save prune to.
check_PROGRAMS += tests/vm/test_norm_train
tests_vm_test_norm_train_SOURCES = tests/vm/test_norm_train.c tests/vm/fp64.h
tests_vm_test_norm_train_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_norm_train

# The goldens: batch_norm in eval and on a one-row batch, bad Scale, layer_norm's values and a
# bad axis; train's drop_last leaving out a one-row last batch (and leaving no batch), and its
# boolean options checked.
PD_NORM_RUN_TESTS = tests/golden/run/batch_norm_eval.pd \
	tests/golden/run/batch_norm_one_row.pd \
	tests/golden/run/batch_norm_bad_scale.pd \
	tests/golden/run/layer_norm_values.pd \
	tests/golden/run/layer_norm_bad_axis.pd \
	tests/golden/run/batch_norm_drop_last.pd \
	tests/golden/run/drop_last_no_batch.pd \
	tests/golden/run/train_bool_option.pd
TESTS += $(PD_NORM_RUN_TESTS) tests/run/batch_norm.sh
EXTRA_DIST += $(PD_NORM_RUN_TESTS) tests/run/batch_norm.sh \
	tests/golden/run/batch_norm_rows.csv \
	tests/golden/run/batch_norm_eval.out \
	tests/golden/run/batch_norm_one_row.err \
	tests/golden/run/batch_norm_bad_scale.err \
	tests/golden/run/layer_norm_values.out \
	tests/golden/run/layer_norm_bad_axis.err \
	tests/golden/run/batch_norm_drop_last.out \
	tests/golden/run/drop_last_no_batch.err \
	tests/golden/run/train_bool_option.err

#   tests/run/resnet.sh: examples/resnet.pd (residual blocks, batch norm, dropout) in a short form
#     learns, and its saved model classifies a batch of one image (running statistics).
TESTS += tests/run/resnet.sh
EXTRA_DIST += tests/run/resnet.sh
