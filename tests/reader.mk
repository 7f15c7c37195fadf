# tests/reader.mk -- tests of the data readers (vm/reader*.c): IDX, CSV and .npy loading, bad
# input of every kind, allocation failures, and batching with and without prefetch.
check_PROGRAMS += tests/vm/test_reader
tests_vm_test_reader_SOURCES = tests/vm/test_reader.c
tests_vm_test_reader_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_reader
# tests/run/csv_categories.sh: csv(..., categorical =): text labels and one-hot text features,
# categories fixed by a column's first reader, saved beside the model and loaded back, errors.
TESTS += tests/run/csv_categories.sh
EXTRA_DIST += tests/run/csv_categories.sh
