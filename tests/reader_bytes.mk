# tests/reader_bytes.mk -- the readers' unit-bytes fields (vm/reader/reader.h): IDX images held as
# uint8 and converted per batch, bit for bit as before (tests/vm/test_reader_bytes.c).
check_PROGRAMS += tests/vm/test_reader_bytes
tests_vm_test_reader_bytes_SOURCES = tests/vm/test_reader_bytes.c
tests_vm_test_reader_bytes_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_reader_bytes
