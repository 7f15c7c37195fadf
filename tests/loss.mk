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
