# tests/calls.mk -- run-time errors inside a `def` show the calls they are inside (issue 26): the
# op's chain of calls (vm/ir: pd_op_desc.calls, op_callstack) in tests/program/test_callchain;
# golden run-time errors inside a def of the same file, of an imported module (two calls deep),
# of a standard-library layer called from a def; tests/run/exec_calls.sh: a saved model keeps
# the chain and `pdlang exec` shows it.
check_PROGRAMS += tests/program/test_callchain
tests_program_test_callchain_SOURCES = tests/program/test_callchain.c
tests_program_test_callchain_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/program/test_callchain
PD_CALLS_GOLDEN = tests/golden/run/def_error_same_file.pd tests/golden/run/def_error_module.pd \
	tests/golden/run/def_error_stdlib.pd
TESTS += $(PD_CALLS_GOLDEN) tests/run/exec_calls.sh
EXTRA_DIST += $(PD_CALLS_GOLDEN) $(PD_CALLS_GOLDEN:.pd=.err) \
	tests/golden/run/def_error_module_mod.pd tests/run/exec_calls.sh
# tests/program/dot_calls.sh: `pdlang dump --dot` clusters per def call, nested; a long program
# in columns (issue 27).
TESTS += tests/program/dot_calls.sh
EXTRA_DIST += tests/program/dot_calls.sh
