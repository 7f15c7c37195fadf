# tests/compile.mk -- golden tests of the compiler: `pdlang check` on scripts, with the exact
# diagnostics expected for each class of compile error (tests/golden.sh runs them). Every test
# but ok_layers has a .err file.
PD_CHECK_TESTS = tests/golden/check/undefined_name.pd \
	tests/golden/check/shape_mismatch.pd \
	tests/golden/check/mul_mismatch.pd \
	tests/golden/check/one_branch.pd \
	tests/golden/check/emit_outside_loop.pd \
	tests/golden/check/return_outside_function.pd \
	tests/golden/check/recursion.pd \
	tests/golden/check/unknown_kwarg.pd \
	tests/golden/check/missing_argument.pd \
	tests/golden/check/for_needs_sequence.pd \
	tests/golden/check/ok_layers.pd \
	tests/golden/check/train_needs_reader.pd \
	tests/golden/check/circular_import.pd
TESTS += $(PD_CHECK_TESTS)
EXTRA_DIST += $(PD_CHECK_TESTS) \
	tests/golden/check/undefined_name.err \
	tests/golden/check/shape_mismatch.err \
	tests/golden/check/mul_mismatch.err \
	tests/golden/check/one_branch.err \
	tests/golden/check/emit_outside_loop.err \
	tests/golden/check/return_outside_function.err \
	tests/golden/check/recursion.err \
	tests/golden/check/unknown_kwarg.err \
	tests/golden/check/missing_argument.err \
	tests/golden/check/for_needs_sequence.err \
	tests/golden/check/train_needs_reader.err \
	tests/golden/check/circular_import.err \
	tests/golden/check/a_cycle.pd tests/golden/check/b_cycle.pd
