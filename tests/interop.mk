# tests/interop.mk -- PaddlePaddle interop (issue 24): PaddlePaddle's saved models of
# tests/interop/ (tools/paddle_models.py writes them) run by the library and by `pdlang exec`.
#   tests/interop/test_interop: each model in each layout it was saved in through the C API,
#     outputs named and valued (1e-5 relative) as PaddlePaddle's.
#   tests/interop/exec.sh: `pdlang exec` on them (--out DIR / NAME=FILE, strict feed names,
#     a float64 input cast with a note) and its errors on damaged and foreign files (a PIR
#     JSON, a truncated __model__, a missing parameter file, one of the wrong shape or dtype,
#     an attribute value pdlang cannot honour: every problem listed).
#   tests/interop/roundtrip.sh: models `save(path, target)` writes load in PaddlePaddle
#     (tests/interop/paddle_run.py) with pdlang's outputs; needs PDLANG_PADDLE_PYTHON, a Python
#     with paddlepaddle installed (skipped with the reason otherwise).
check_PROGRAMS += tests/interop/test_interop
tests_interop_test_interop_SOURCES = tests/interop/test_interop.c
tests_interop_test_interop_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/interop/test_interop tests/interop/exec.sh tests/interop/roundtrip.sh
EXTRA_DIST += tools/paddle_models.py tests/interop
#   tests/ops/test_kern_select: select_input (vm/ops/select.c): values, shape function, errors
#     and its finite-difference gradient.
check_PROGRAMS += tests/ops/test_kern_select
tests_ops_test_kern_select_SOURCES = tests/ops/test_kern_select.c
tests_ops_test_kern_select_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/ops/test_kern_select
