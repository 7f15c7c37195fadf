# tests/device.mk -- where ops compute (vm/run/exec_place.c, --device, PDLANG_DEVICE, the GPU).
#   tests/vm/test_exec_place: the placement tables; the GPU place refused cleanly without a GPU.
#   tests/run/device.sh: device options and their errors; with a GPU, the run goldens and quick
#     examples run there and print the CPU's numbers.
check_PROGRAMS += tests/vm/test_exec_place
tests_vm_test_exec_place_SOURCES = tests/vm/test_exec_place.c
tests_vm_test_exec_place_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_exec_place tests/run/device.sh
EXTRA_DIST += tests/run/device.sh
