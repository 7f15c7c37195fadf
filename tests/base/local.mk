# tests/base/local.mk -- the tests of base/: status codes, errors, buffers, shapes as text, the
# allocator hook, its counter shared by threads (test_base), the string map (test_strmap).
check_PROGRAMS += tests/base/test_base tests/base/test_strmap
TESTS += tests/base/test_base tests/base/test_strmap
