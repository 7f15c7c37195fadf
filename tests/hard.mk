# tests/hard.mk -- regression tests of the hardening of issue 26: integer division by zero, file
# errors of actions at their line, eval's feed mismatches, consistent .pdmodel/.pdiparams pairs,
# left-over temporaries, checkpoints of another training setup.
TESTS += tests/golden/run/int_div_zero.pd
EXTRA_DIST += tests/golden/run/int_div_zero.pd tests/golden/run/int_div_zero.err
# eval's feed mismatches at eval's line.
TESTS += tests/golden/run/eval_feed_mismatch.pd
EXTRA_DIST += tests/golden/run/eval_feed_mismatch.pd tests/golden/run/eval_feed_mismatch.err
# tests/run/file_errors.sh: the file errors of load, save and train's checkpoint at the action's
# line and the argument that named the file.
TESTS += tests/run/file_errors.sh
EXTRA_DIST += tests/run/file_errors.sh
# The identity of a model's parameter file: tests/program/test_params_identity (the record, a
# mismatch refused, models without a record accepted) and tests/run/save_pair.sh (save's pair
# end to end: exec and load() refuse another save's parameters; a failed save writes nothing).
check_PROGRAMS += tests/program/test_params_identity
tests_program_test_params_identity_SOURCES = tests/program/test_params_identity.c
tests_program_test_params_identity_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/program/test_params_identity tests/run/save_pair.sh
EXTRA_DIST += tests/run/save_pair.sh
# tests/run/stale_temps.sh: the temporaries of killed writers removed by the next save.
TESTS += tests/run/stale_temps.sh
EXTRA_DIST += tests/run/stale_temps.sh
# tests/run/ckpt_setup.sh: a checkpoint resumes only into the setup that wrote it.
TESTS += tests/run/ckpt_setup.sh
EXTRA_DIST += tests/run/ckpt_setup.sh
# tests/run/imports.sh: nested imports are limited (100) with one error at the import that
# crosses it; a module name that is a directory says so.
TESTS += tests/run/imports.sh
EXTRA_DIST += tests/run/imports.sh
# Tensor else-if chains: 200 else-ifs (201 blocks deep) run and train; 300 are one error at the
# line where blocks pass 256 deep (they said "blocks nested too deeply" twice, with no line, at 64).
PD_HARD_ELSE_IF = tests/golden/run/else_if_chain.pd tests/golden/run/else_if_chain_train.pd \
	tests/golden/run/else_if_too_deep.pd
TESTS += $(PD_HARD_ELSE_IF)
EXTRA_DIST += $(PD_HARD_ELSE_IF) tests/golden/run/else_if_chain.out \
	tests/golden/run/else_if_chain_train.out tests/golden/run/else_if_chain.csv \
	tests/golden/run/else_if_too_deep.err
# An error inside a def of a module, two calls deep: the module's line first, then each call
# site as a note.
TESTS += tests/golden/check/def_chain.pd
EXTRA_DIST += tests/golden/check/def_chain.pd tests/golden/check/def_chain.err \
	tests/golden/check/def_chain_mod.pd
# tests/frontend/test_compile_oom: the examples compiled with the k-th allocation failing.
check_PROGRAMS += tests/frontend/test_compile_oom
tests_frontend_test_compile_oom_SOURCES = tests/frontend/test_compile_oom.c
tests_frontend_test_compile_oom_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/frontend/test_compile_oom
# A reader's numbers convert to their data var's dtype when they fit exactly: an integer CSV
# label column into float32 (it was read as int64 and refused), uint8 .npy pixels into float32;
# 2^24 + 1 into float32 is refused naming the value.
PD_HARD_CONVERT = tests/golden/run/csv_int_label.pd tests/golden/run/csv_int_label_big.pd \
	tests/golden/run/npy_uint8.pd
TESTS += $(PD_HARD_CONVERT)
EXTRA_DIST += $(PD_HARD_CONVERT) tests/golden/run/csv_int_label.csv \
	tests/golden/run/csv_int_label.out tests/golden/run/csv_int_label_big.csv \
	tests/golden/run/csv_int_label_big.err tests/golden/run/npy_uint8.out \
	tests/golden/run/npy_uint8_x.npy tests/golden/run/npy_uint8_y.npy
# csv(..., delimiter = ";", fill = 2.5): another delimiter, missing cells filled in; without fill
# a missing cell is an error naming line and column; a bad delimiter is a compile-time error.
PD_HARD_CSV = tests/golden/run/csv_options.pd tests/golden/run/csv_missing.pd \
	tests/golden/run/csv_bad_delimiter.pd
TESTS += $(PD_HARD_CSV)
EXTRA_DIST += $(PD_HARD_CSV) tests/golden/run/csv_options.csv tests/golden/run/csv_options.out \
	tests/golden/run/csv_missing.err tests/golden/run/csv_bad_delimiter.err
# tests/run/exec_caret.sh: exec's run-time errors with the line and a caret when the script is
# beside the model.
TESTS += tests/run/exec_caret.sh
EXTRA_DIST += tests/run/exec_caret.sh
# tests/run/exec_sequences.sh: saved sequence models through pdlang exec (--lengths).
TESTS += tests/run/exec_sequences.sh
EXTRA_DIST += tests/run/exec_sequences.sh
