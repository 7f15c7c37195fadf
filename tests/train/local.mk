# tests/train/local.mk -- the tests of train/ (the runtime of a compiled unit): test_registry,
# the train options' descriptors and the registries of readers and optimizers. What train does
# is tested by running scripts (tests/golden/run, tests/driver/*.sh, tests/mpi).
check_PROGRAMS += tests/train/test_registry
TESTS += tests/train/test_registry
