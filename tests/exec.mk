# tests/exec.mk -- tests of the executor (vm/run/exec.c), control-flow kernels (vm/ops/control.c, vm/ops/recurrent.c) and `pdlang run`.
#   tests/vm/test_exec: the executor's scope rules, feeds/fetches, errors, NaN check, interrupts.
#   tests/golden/run: `pdlang run` on scripts whose assert_close calls hold values computed by
#     hand (if/else over rows, a scalar if, while, the RNN), print's format, and run-time errors
#     (.err files: file:line:col, the line, a caret).
check_PROGRAMS += tests/vm/test_exec
tests_vm_test_exec_SOURCES = tests/vm/test_exec.c
tests_vm_test_exec_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_exec

PD_RUN_TESTS = tests/golden/run/ifelse_rows.pd \
	tests/golden/run/ifelse_one_side.pd \
	tests/golden/run/scalar_if.pd \
	tests/golden/run/while_sum.pd \
	tests/golden/run/rnn_steps.pd \
	tests/golden/run/rnn_nested.pd \
	tests/golden/run/rnn_emit_shared.pd \
	tests/golden/run/rnn_nested_one_level.pd \
	tests/golden/run/rnn_nested_in_flat.pd \
	tests/golden/run/label_out_of_range.pd \
	tests/golden/run/print_needs_data.pd \
	tests/golden/run/reader_missing_file.pd \
	tests/golden/run/print_values.pd
TESTS += $(PD_RUN_TESTS)
EXTRA_DIST += $(PD_RUN_TESTS) \
	tests/golden/run/ifelse_rows.out \
	tests/golden/run/ifelse_one_side.out \
	tests/golden/run/scalar_if.out \
	tests/golden/run/while_sum.out \
	tests/golden/run/rnn_steps.out \
	tests/golden/run/rnn_nested.out \
	tests/golden/run/rnn_emit_shared.out \
	tests/golden/run/rnn_nested_one_level.err \
	tests/golden/run/rnn_nested_in_flat.err \
	tests/golden/run/label_out_of_range.err \
	tests/golden/run/print_needs_data.err \
	tests/golden/run/reader_missing_file.err \
	tests/golden/run/print_values.out

#   tests/run: training end to end (accuracy, determinism, checkpoint resume, save + exec) and
#   the quick examples.
TESTS += tests/run/train_save_exec.sh tests/run/examples.sh tests/run/profile.sh
EXTRA_DIST += tests/run/train_save_exec.sh tests/run/examples.sh tests/run/profile.sh

#   tests/vm/test_cf_grad: gradients through if/else, scalar if and for-rnn (fp64 finite
#   differences), and the seeds' if/else gradients by hand.
check_PROGRAMS += tests/vm/test_cf_grad
tests_vm_test_cf_grad_SOURCES = tests/vm/test_cf_grad.c tests/vm/fp64.h
tests_vm_test_cf_grad_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_cf_grad

#   tests/vm/test_rnn_input_memory: a for-rnn whose memory is set to the step input (prev = t),
#   emitted and used after the loop: values by hand (one and two LoD levels), gradients by hand
#   and by finite differences, two SGD steps (the use-after-free fixed in a237a6a: run it in the
#   --enable-sanitizers build).
check_PROGRAMS += tests/vm/test_rnn_input_memory
tests_vm_test_rnn_input_memory_SOURCES = tests/vm/test_rnn_input_memory.c tests/vm/fp64.h
tests_vm_test_rnn_input_memory_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_rnn_input_memory

#   tests/vm/test_optimizer: sgd, momentum, adam, weight decay, clipping, schedules by hand.
check_PROGRAMS += tests/vm/test_optimizer
tests_vm_test_optimizer_SOURCES = tests/vm/test_optimizer.c tests/vm/opt_fixture.h
tests_vm_test_optimizer_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_optimizer
