# tests/loss.mk -- the elementwise losses (vm/ops/loss_elem.c) and the optimizers adamw, rmsprop
# and adagrad (vm/ops/optim.c, vm/passes/optimizer.c):
#   tests/ops/test_kern_loss_elem: sigmoid_cross_entropy_with_logits, smooth_l1_loss,
#     huber_loss, kldiv_loss against their formulas, their gradients against finite differences;
#   tests/ops/test_kern_optim_more: adamw, rmsprop, adagrad over three steps against their
#     update rules.
check_PROGRAMS += tests/ops/test_kern_loss_elem tests/ops/test_kern_optim_more
tests_ops_test_kern_loss_elem_SOURCES = tests/ops/test_kern_loss_elem.c
tests_ops_test_kern_loss_elem_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_kern_optim_more_SOURCES = tests/ops/test_kern_optim_more.c
tests_ops_test_kern_optim_more_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/ops/test_kern_loss_elem tests/ops/test_kern_optim_more

#   tests/vm/test_optimizer_more: the optimizer pass with adamw, rmsprop and adagrad (updates by
#     hand, Fluid's state var names).
check_PROGRAMS += tests/vm/test_optimizer_more
tests_vm_test_optimizer_more_SOURCES = tests/vm/test_optimizer_more.c tests/vm/opt_fixture.h
tests_vm_test_optimizer_more_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_optimizer_more

#   tests/golden/run/losses_values: the losses and the stdlib's bce_with_logits and huber from
#     the language, against values worked out by hand in the script; loss_bad_shape and
#     kaiming_bad_fan_in: errors at the .pd line; tests/golden/dump/kaiming_startup: kaiming's
#     uniform and normal bounds in the startup program;
#   tests/run/optimizers.sh: adamw, rmsprop and adagrad train end to end, with their state in
#     checkpoints: a resumed run ends bit for bit where an uninterrupted one does.
PD_LOSS_GOLDEN_TESTS = tests/golden/run/losses_values.pd \
	tests/golden/run/loss_bad_shape.pd \
	tests/golden/run/kaiming_bad_fan_in.pd \
	tests/golden/dump/kaiming_startup.pd
TESTS += $(PD_LOSS_GOLDEN_TESTS) tests/run/optimizers.sh
EXTRA_DIST += $(PD_LOSS_GOLDEN_TESTS) tests/run/optimizers.sh \
	tests/golden/run/losses_values.out \
	tests/golden/run/loss_bad_shape.err \
	tests/golden/run/kaiming_bad_fan_in.err \
	tests/golden/dump/kaiming_startup.out
