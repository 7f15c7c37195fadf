# tests/local.mk -- test programs and golden tests. Areas with their own tests keep them in
# tests/<area>.mk fragments included here.
EXTRA_DIST += tests/tap.h tests/golden.sh

# Unit tests of base/.
check_PROGRAMS += tests/base/test_base
tests_base_test_base_SOURCES = tests/base/test_base.c
tests_base_test_base_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/base/test_base
check_PROGRAMS += tests/base/test_strmap
tests_base_test_strmap_SOURCES = tests/base/test_strmap.c
tests_base_test_strmap_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/base/test_strmap
