# tests/flow.mk -- the training workflow (issue 27): train's validation, metrics, early stopping
# and keep_best (lang/train_valid.c).
#   tests/golden/check: the compile-time errors of the new options (a metric that is not one
#     number per batch, early_stop without valid, valid that is not a reader, mode, keep_best;
#     a reader's validation split: valid with the test split, a fraction outside (0, 1), valid
#     without split);
#   tests/golden/run: a validation reader whose fields do not match the training reader's, an
#     unknown monitor; the learning-rate schedule going on across train calls;
#   tests/run/valid_train.sh: the validation's values against a hand computation, early stopping,
#     keep_best, and a resume from a checkpoint with both, bit for bit; the same with validation
#     counted in steps (valid_every_steps); tests/golden/check/train_valid_every_both.pd its
#     errors;
#   tests/run/train_log.sh: train's log (CSV and JSON lines) parsed back; its errors are golden
#     tests (train_log_not_file, train_log_unwritable).
PD_FLOW_GOLDEN_TESTS = tests/golden/check/train_metric_shape.pd \
	tests/golden/check/train_early_stop_no_valid.pd \
	tests/golden/check/train_valid_not_reader.pd \
	tests/golden/check/train_bad_mode.pd \
	tests/golden/check/train_keep_best_bool.pd \
	tests/golden/check/reader_split_test.pd \
	tests/golden/check/reader_split_fraction.pd \
	tests/golden/check/reader_split_no_split.pd \
	tests/golden/run/train_valid_fields.pd \
	tests/golden/run/train_monitor_unknown.pd \
	tests/golden/check/train_log_not_file.pd \
	tests/golden/run/train_log_unwritable.pd \
	tests/golden/check/train_plot_not_file.pd \
	tests/golden/check/train_valid_every_both.pd
# pdlang summary (tests/golden/summary: the counts checked against the parameters' sizes in
# the script's comments) and the REPL's :summary (tests/run/summary.sh).
TESTS += tests/golden/summary/layers.pd tests/run/summary.sh
EXTRA_DIST += tests/golden/summary/layers.pd tests/golden/summary/layers.out tests/run/summary.sh
TESTS += $(PD_FLOW_GOLDEN_TESTS) tests/golden/run/train_schedule_continues.pd \
	tests/run/valid_train.sh tests/run/train_log.sh tests/run/plot.sh
EXTRA_DIST += $(PD_FLOW_GOLDEN_TESTS) $(PD_FLOW_GOLDEN_TESTS:.pd=.err) \
	tests/golden/run/valid_two.csv tests/golden/run/valid_three.csv tests/run/valid_train.sh \
	tests/golden/run/train_schedule_continues.pd tests/golden/run/train_schedule_continues.out \
	tests/golden/run/schedule_one.csv tests/run/train_log.sh tests/run/plot.sh

# tests/vm/test_reader_split: validation splits of a dataset (vm/reader/reader_split.c).
check_PROGRAMS += tests/vm/test_reader_split
tests_vm_test_reader_split_SOURCES = tests/vm/test_reader_split.c
tests_vm_test_reader_split_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_reader_split

# tests/vm/test_plot: the training curves of lang/plot.c, the PNG decoded with cairo (without
# cairo: the error that says so); tests/run/plot.sh: `pdlang plot` and train(..., plot = ...).
check_PROGRAMS += tests/vm/test_plot
tests_vm_test_plot_SOURCES = tests/vm/test_plot.c
tests_vm_test_plot_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_plot

# LeakSanitizer ignores the caches fontconfig keeps for the process (tests/lsan.supp).
EXTRA_DIST += tests/lsan.supp
AM_TESTS_ENVIRONMENT += \
	LSAN_OPTIONS=suppressions='$(abs_top_srcdir)/tests/lsan.supp':print_suppressions=0; \
	export LSAN_OPTIONS;
