# tests/api_data.mk -- training from a host program (pd_state_set_dataset, host("NAME") readers):
#   tests/api/test_api_data: the cost falls, the weights equal those of the same script on .npy
#     files with the same values and seed, eval and validation splits, copies and replacement,
#     every bad argument, an unknown name at the reader, allocation failures.
check_PROGRAMS += tests/api/test_api_data
tests_api_test_api_data_SOURCES = tests/api/test_api_data.c
tests_api_test_api_data_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/api/test_api_data
#   tests/golden/run/host_none: `pdlang run` of a script reading host("NAME"): a clear error at
#     the reader (only a host program gives data sets).
TESTS += tests/golden/run/host_none.pd
EXTRA_DIST += tests/golden/run/host_none.pd tests/golden/run/host_none.out \
	tests/golden/run/host_none.err
