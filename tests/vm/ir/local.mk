# tests/vm/ir/local.mk -- the tests of vm/ir/: the program in memory (test_program), the
# ProgramDesc serializer (test_serialize; test_roundtrip: examples/*.pd compiled, serialized and
# parsed back give the same listing; protoc_decode.sh: protoc reads what it writes), the files of
# tensor values (test_params: the tensor stream, .pdiparams and checkpoints: round trips, a
# byte-exact known answer, damaged files, out of memory; test_params_identity: the identity of a
# model's parameter file), an op's chain of calls (test_callchain), `pdlang dump --dot`'s clusters
# per def call (dot_calls.sh). models.c builds the test programs (also for tests/vm/passes);
# mkmodel writes them as files: for the shell tests, fixtures and the seed corpus (regenerate it
# with `tests/vm/ir/mkmodel --corpus $(srcdir)/tests/fuzz/corpus_load`).
VM_IR_MODELS = tests/vm/ir/models.c tests/vm/ir/models.h
check_PROGRAMS += tests/vm/ir/test_program tests/vm/ir/test_serialize tests/vm/ir/test_roundtrip \
	tests/vm/ir/test_params tests/vm/ir/test_params_identity tests/vm/ir/test_callchain \
	tests/vm/ir/mkmodel
TESTS += tests/vm/ir/test_program tests/vm/ir/test_serialize tests/vm/ir/test_roundtrip \
	tests/vm/ir/test_params tests/vm/ir/test_params_identity tests/vm/ir/test_callchain \
	tests/vm/ir/protoc_decode.sh tests/vm/ir/dot_calls.sh
EXTRA_DIST += tests/vm/ir/protoc_decode.sh tests/vm/ir/dot_calls.sh
tests_vm_ir_test_program_SOURCES = tests/vm/ir/test_program.c $(VM_IR_MODELS)
tests_vm_ir_test_serialize_SOURCES = tests/vm/ir/test_serialize.c $(VM_IR_MODELS)
tests_vm_ir_mkmodel_SOURCES = tests/vm/ir/mkmodel.c $(VM_IR_MODELS)
tests_vm_ir_test_roundtrip_CPPFLAGS = $(AM_CPPFLAGS) -DPD_TOP_SRCDIR='"$(abs_top_srcdir)"'
