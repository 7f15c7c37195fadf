# tests/vm/run/local.mk -- the tests of vm/run/:
#   test_tensor, test_scope: tensors with LoD, the scope tree;
#   test_exec: the executor's scope rules, feeds/fetches, errors, NaN check, interrupts;
#   test_exec_place: where ops compute (the GPU flags and slot places of vm/oplist.h); the GPU
#     place refused cleanly without a GPU;
#   test_step_memory: live-byte accounting of the host allocator; a training step of an RNN
#     gives back every byte it allocated once its scope tree is gone, and peaks below what the
#     whole tree holds (the executor releases temporaries after their last use);
#   test_rnn_input_memory: a for-rnn whose memory is set to the step input (prev = t), emitted
#     and used after the loop: values by hand (one and two LoD levels), gradients by hand and by
#     finite differences, two SGD steps (the use-after-free fixed in a237a6a: run it in the
#     --enable-sanitizers build).
VM_RUN_TESTS = tests/vm/run/test_tensor tests/vm/run/test_scope tests/vm/run/test_exec \
	tests/vm/run/test_exec_place tests/vm/run/test_step_memory tests/vm/run/test_rnn_input_memory
check_PROGRAMS += $(VM_RUN_TESTS)
TESTS += $(VM_RUN_TESTS)
