# tests/params.mk -- tests of the tensor stream, .pdiparams and checkpoint formats
# (vm/ir/params.c): round trips, a byte-exact known answer, damaged files, out of memory.
check_PROGRAMS += tests/program/test_params
tests_program_test_params_SOURCES = tests/program/test_params.c
tests_program_test_params_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/program/test_params
