# tests/compile.mk -- golden tests of the compiler (tests/golden.sh runs them):
#   tests/golden/check: `pdlang check` on scripts, with the exact diagnostics expected for each
#     class of compile error (every test but ok_layers has a .err file); a missing import lists
#     build-dependent directories, so import_not_found.sh compares it with those replaced.
#   tests/golden/dump: `pdlang dump` of the seed programs (copies of examples/ifelse.pd, rnn.pd,
#     train.pd: tests/program/dump_cli.sh checks that they still match), the startup program, a
#     pruned program, and a script that does not compile.
PD_CHECK_TESTS = tests/golden/check/undefined_name.pd \
	tests/golden/check/name_outside_block.pd \
	tests/golden/check/shape_mismatch.pd \
	tests/golden/check/mul_mismatch.pd \
	tests/golden/check/one_branch.pd \
	tests/golden/check/emit_outside_loop.pd \
	tests/golden/check/return_outside_function.pd \
	tests/golden/check/recursion.pd \
	tests/golden/check/unknown_kwarg.pd \
	tests/golden/check/missing_argument.pd \
	tests/golden/check/wrong_arguments.pd \
	tests/golden/check/for_needs_sequence.pd \
	tests/golden/check/ok_layers.pd \
	tests/golden/check/train_needs_reader.pd \
	tests/golden/check/reader_arguments.pd \
	tests/golden/check/circular_import.pd
TESTS += $(PD_CHECK_TESTS) tests/golden/check/import_not_found.sh
EXTRA_DIST += $(PD_CHECK_TESTS) \
	tests/golden/check/undefined_name.err \
	tests/golden/check/name_outside_block.err \
	tests/golden/check/shape_mismatch.err \
	tests/golden/check/mul_mismatch.err \
	tests/golden/check/one_branch.err \
	tests/golden/check/emit_outside_loop.err \
	tests/golden/check/return_outside_function.err \
	tests/golden/check/recursion.err \
	tests/golden/check/unknown_kwarg.err \
	tests/golden/check/missing_argument.err \
	tests/golden/check/wrong_arguments.err \
	tests/golden/check/for_needs_sequence.err \
	tests/golden/check/train_needs_reader.err \
	tests/golden/check/reader_arguments.err \
	tests/golden/check/circular_import.err \
	tests/golden/check/a_cycle.pd tests/golden/check/b_cycle.pd \
	tests/golden/check/import_not_found.sh tests/golden/check/missing_import.pd \
	tests/golden/check/missing_import.err

PD_DUMP_TESTS = tests/golden/dump/ifelse_listing.pd \
	tests/golden/dump/rnn_listing.pd \
	tests/golden/dump/train_listing.pd \
	tests/golden/dump/train_startup.pd \
	tests/golden/dump/rnn_prune.pd \
	tests/golden/dump/compile_error.pd
TESTS += $(PD_DUMP_TESTS)
EXTRA_DIST += $(PD_DUMP_TESTS) \
	tests/golden/dump/ifelse_listing.out \
	tests/golden/dump/rnn_listing.out \
	tests/golden/dump/train_listing.out \
	tests/golden/dump/train_startup.out \
	tests/golden/dump/rnn_prune.out \
	tests/golden/dump/compile_error.err
