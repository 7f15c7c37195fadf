# tests/local.mk -- the test suite (`make check`, automake's TAP driver). Tests are laid out as
# the source is: tests/F/ tests folder F/ (base, kernels, vm/{ir,ops,passes,run,reader}, lang,
# stdlib, api, driver, doc), beside the suites of whole runs (golden, fuzz, interop, mpi); each
# folder's local.mk lists its tests, and is included here. A C test tests/F/test_x.c is
# `check_PROGRAMS += tests/F/test_x` and `TESTS += tests/F/test_x` there (it links the
# convenience library: LDADD); a golden test is its files only (tests/golden/local.mk).
EXTRA_DIST += tests/tap.h tests/golden.sh
LDADD = libpdlang-internal.la $(PD_LIBS)

# LeakSanitizer ignores the caches fontconfig keeps for the process (tests/lsan.supp).
EXTRA_DIST += tests/lsan.supp
AM_TESTS_ENVIRONMENT += \
	LSAN_OPTIONS=suppressions='$(abs_top_srcdir)/tests/lsan.supp':print_suppressions=0; \
	export LSAN_OPTIONS;

# make -j starts the tests in the order of TESTS: the folders with the longest tests come first,
# their slowest first (under the sanitizers test_compile_oom and resnet.sh take a minute each),
# so that the long ones run beside all the others instead of alone at the end.
include tests/lang/local.mk
include tests/driver/local.mk
include tests/kernels/local.mk
include tests/mpi/local.mk
include tests/base/local.mk
include tests/vm/ir/local.mk
include tests/vm/ops/local.mk
include tests/vm/passes/local.mk
include tests/vm/run/local.mk
include tests/vm/reader/local.mk
include tests/stdlib/local.mk
include tests/train/local.mk
include tests/api/local.mk
include tests/doc/local.mk
include tests/golden/local.mk
include tests/fuzz/local.mk
include tests/interop/local.mk
