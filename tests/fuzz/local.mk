# tests/fuzz/local.mk -- the fuzz targets (HACKING.md, Fuzzing): fuzz_parse.c (the lexer and
# parser), fuzz_load.c (the .pdmodel loader), fuzz_compile.c (parse + compile + InferShape, and the
# training program; nothing runs) and fuzz_ckpt.c (.pdiparams and checkpoints against
# ckpt_model.pd), fuzz_pir.c (PaddlePaddle 3's PIR JSON programs: vm/ir/pir.c, then the op
# checks and the executor's preparation; its seeds: mkseeds_pir.sh), fuzz_prep.c (a model's
# NAME.preprocess file: vm/reader/image_prep.c, then an image through it). `make check` replays their
# seed corpora (and the golden inputs) through them with $(CC): replay.c, one build per target,
# and replay_load.c (valid_* seeds must load, bad_* must not); test_findings keeps what the
# fuzzers found that a replay cannot (allocation counts, no timings). `make fuzz-NAME` builds a
# libFuzzer target with clang, `make fuzz-NAME-run` runs it.

FUZZ_CKPT_MODEL_DEF = -DPD_FUZZ_CKPT_MODEL='"$(abs_top_srcdir)/tests/fuzz/ckpt_model.pd"'

# ---- The replays. ----
check_PROGRAMS += tests/fuzz/replay_parse tests/fuzz/replay_load tests/fuzz/replay_compile \
	tests/fuzz/replay_ckpt tests/fuzz/replay_pir tests/fuzz/replay_prep tests/fuzz/test_findings
TESTS += tests/fuzz/replay_parse tests/fuzz/replay_load tests/fuzz/replay_compile \
	tests/fuzz/replay_ckpt tests/fuzz/replay_pir tests/fuzz/replay_prep tests/fuzz/test_findings
tests_fuzz_replay_parse_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_parse.c
tests_fuzz_replay_load_SOURCES = tests/fuzz/replay_load.c tests/fuzz/fuzz_load.c
tests_fuzz_replay_compile_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_compile.c
tests_fuzz_replay_compile_CPPFLAGS = $(AM_CPPFLAGS) -DPD_REPLAY_DIRS='"tests/fuzz/corpus_compile", \
	"examples", "tests/golden/check", "tests/golden/run", "tests/golden/dump", \
	"tests/golden/summary", "tests/golden/parse"'
tests_fuzz_replay_ckpt_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_ckpt.c
tests_fuzz_replay_ckpt_CPPFLAGS = $(AM_CPPFLAGS) $(FUZZ_CKPT_MODEL_DEF) \
	-DPD_REPLAY_DIRS='"tests/fuzz/corpus_ckpt"'
tests_fuzz_replay_pir_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_pir.c
tests_fuzz_replay_pir_CPPFLAGS = $(AM_CPPFLAGS) -DPD_REPLAY_DIRS='"tests/fuzz/corpus_pir"'
tests_fuzz_replay_prep_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_prep.c
tests_fuzz_replay_prep_CPPFLAGS = $(AM_CPPFLAGS) -DPD_REPLAY_DIRS='"tests/fuzz/corpus_prep"'
EXTRA_DIST += tests/fuzz/corpus_parse tests/fuzz/corpus_load tests/fuzz/corpus_compile \
	tests/fuzz/corpus_pir tests/fuzz/mkseeds_pir.sh tests/fuzz/corpus_prep \
	tests/fuzz/corpus_ckpt tests/fuzz/ckpt_model.pd tests/fuzz/ckpt_model.csv \
	tests/fuzz/mkseeds_ckpt.sh tests/fuzz/build-lib.sh

# ---- libFuzzer: the front end compiled straight from its sources by clang (the gcc-built
# library would mix sanitizer runtimes). `make fuzz-parse-run` fuzzes a copy of the seed corpus,
# so that what the fuzzer adds stays in the build tree; crashes are written to tests/fuzz/.
FUZZ_PARSE_SRCS = tests/fuzz/fuzz_parse.c base/base.c base/diag.c lang/ast.c
FUZZ_PARSE_GENERATED = lang/lexer.c lang/parser.c
FUZZ_PARSE_HDRS = base/base.h base/diag.h lang/ast.h lang/lexer.h lang/parse.h lang/parser.h
FUZZ_PARSE_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_PARSE_SECONDS = 600
CLEANFILES += tests/fuzz/fuzz_parse$(EXEEXT)
.PHONY: fuzz-parse fuzz-parse-run clean-fuzz-parse
if PD_HAVE_CLANG
fuzz-parse: tests/fuzz/fuzz_parse$(EXEEXT)
tests/fuzz/fuzz_parse$(EXEEXT): $(FUZZ_PARSE_SRCS) $(FUZZ_PARSE_GENERATED) $(FUZZ_PARSE_HDRS)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	srcs=; for f in $(FUZZ_PARSE_SRCS); do srcs="$$srcs $(srcdir)/$$f"; done; \
	for f in $(FUZZ_PARSE_GENERATED); do \
	  if test -f $$f; then srcs="$$srcs $$f"; else srcs="$$srcs $(srcdir)/$$f"; fi; \
	done; \
	$(CLANG) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(PD_WARN_CFLAGS) $(FUZZ_PARSE_CFLAGS) \
	  -o $@ $$srcs -lm
fuzz-parse-run: tests/fuzz/fuzz_parse$(EXEEXT)
	rm -rf tests/fuzz/corpus_parse.run
	$(MKDIR_P) tests/fuzz/corpus_parse.run
	cp $(srcdir)/tests/fuzz/corpus_parse/* tests/fuzz/corpus_parse.run/
	tests/fuzz/fuzz_parse$(EXEEXT) -max_total_time=$(FUZZ_PARSE_SECONDS) -rss_limit_mb=2048 \
	  -artifact_prefix=tests/fuzz/ tests/fuzz/corpus_parse.run
else
fuzz-parse fuzz-parse-run:
	@echo "$@: libFuzzer targets need clang, which configure did not find" >&2; exit 1
endif
clean-local: clean-fuzz-parse
clean-fuzz-parse:
	rm -rf tests/fuzz/corpus_parse.run

# ---- libFuzzer: the loader and everything it calls, compiled straight from the sources. ----
FUZZ_LOAD_SRCS = tests/fuzz/fuzz_load.c base/base.c base/dtype.c vm/ir/program.c \
	vm/ir/program_dump.c vm/ir/serialize.c
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS = 60
CLEANFILES += tests/fuzz/fuzz_load$(EXEEXT)
.PHONY: fuzz-load fuzz-load-run
if PD_HAVE_CLANG
fuzz-load: tests/fuzz/fuzz_load$(EXEEXT)
tests/fuzz/fuzz_load$(EXEEXT): $(FUZZ_LOAD_SRCS) vm/ir/framework.pb-c.c vm/ir/framework.pb-c.h
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && \
	gen=`test -f vm/ir/framework.pb-c.c || echo $(srcdir)/`vm/ir/framework.pb-c.c; \
	srcs=; for f in $(FUZZ_LOAD_SRCS); do srcs="$$srcs $(srcdir)/$$f"; done; \
	$(CLANG) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(PD_WARN_CFLAGS) $(FUZZ_CFLAGS) \
	  -o $@ $$srcs $$gen $(PROTOBUF_C_LIBS) -lm
# Fuzz a copy of the seed corpus, so that what the fuzzer adds stays in the build tree.
fuzz-load-run: tests/fuzz/fuzz_load$(EXEEXT)
	$(MKDIR_P) tests/fuzz/corpus_load.run
	cp $(srcdir)/tests/fuzz/corpus_load/* tests/fuzz/corpus_load.run/
	tests/fuzz/fuzz_load$(EXEEXT) -max_total_time=$(FUZZ_SECONDS) tests/fuzz/corpus_load.run
else
fuzz-load fuzz-load-run:
	@echo "$@: libFuzzer targets need clang, which configure did not find" >&2; exit 1
endif
clean-local: clean-fuzz-load
clean-fuzz-load:
	rm -rf tests/fuzz/corpus_load.run
.PHONY: clean-fuzz-load

# ---- libFuzzer: the library's C sources compiled by clang into tests/fuzz/libfuzz.a
# (tests/fuzz/build-lib.sh: incremental, FUZZ_JOBS at a time; it takes the .c files of the list
# once each): lang/parser.c is Bison's output of the listed parser.y, kernels/cuda/none.c stands in
# for the CUDA backend of a --with-cuda build. ----
FUZZ_LIB_CFLAGS = -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined
FUZZ_TARGET_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_JOBS = 2
# Per run: seconds in all, seconds per input, resident memory (MiB), largest input (bytes).
FUZZ_RUN_SECONDS = 1800
FUZZ_TIMEOUT = 10
FUZZ_RSS_MB = 2048
FUZZ_MAX_LEN = 16384
# Compiled without the sanitizers (+ in build-lib.sh): clang's ASan runs for over half an hour on
# the AVX-512 product kernels (UBSan a minute), which no fuzz target reaches.
FUZZ_UNSANITIZED = kernels/cpu/gemm_avx512.c
FUZZ_LIB_SRCS = $(filter-out $(FUZZ_UNSANITIZED),$(libpdlang_internal_la_SOURCES)) \
	$(addprefix +,$(FUZZ_UNSANITIZED)) lang/parser.c kernels/cuda/none.c
# -Wno-pass-failed: at -O1 clang does not vectorize the loops PD_SIMD asks it to.
FUZZ_FLAGS = $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(PD_WARN_CFLAGS) $(PD_SIMD_CFLAGS) \
	-Wno-pass-failed
CLEANFILES += tests/fuzz/fuzz_compile$(EXEEXT) tests/fuzz/fuzz_ckpt$(EXEEXT) \
	tests/fuzz/fuzz_pir$(EXEEXT) tests/fuzz/fuzz_prep$(EXEEXT) tests/fuzz/libfuzz.a
.PHONY: fuzz-compile fuzz-compile-run fuzz-ckpt fuzz-ckpt-run fuzz-pir fuzz-pir-run fuzz-lib \
	fuzz-prep fuzz-prep-run \
	clean-fuzz-all
if PD_HAVE_CLANG
fuzz-compile: tests/fuzz/fuzz_compile$(EXEEXT)
fuzz-ckpt: tests/fuzz/fuzz_ckpt$(EXEEXT)
fuzz-pir: tests/fuzz/fuzz_pir$(EXEEXT)
fuzz-prep: tests/fuzz/fuzz_prep$(EXEEXT)
# Always asked: the script decides what is out of date.
fuzz-lib: $(BUILT_SOURCES)
	@$(SHELL) $(srcdir)/tests/fuzz/build-lib.sh tests/fuzz/libfuzz.a tests/fuzz/obj $(srcdir) \
	  $(FUZZ_JOBS) $(CLANG) $(FUZZ_LIB_SRCS) -- $(FUZZ_FLAGS) $(FUZZ_LIB_CFLAGS)
tests/fuzz/fuzz_compile$(EXEEXT): fuzz-lib $(srcdir)/tests/fuzz/fuzz_compile.c
	$(AM_V_CCLD)$(CLANG) $(FUZZ_FLAGS) $(FUZZ_TARGET_CFLAGS) -o $@ \
	  $(srcdir)/tests/fuzz/fuzz_compile.c tests/fuzz/libfuzz.a $(PD_LIBS) -lpthread -ldl
tests/fuzz/fuzz_ckpt$(EXEEXT): fuzz-lib $(srcdir)/tests/fuzz/fuzz_ckpt.c
	$(AM_V_CCLD)$(CLANG) $(FUZZ_FLAGS) $(FUZZ_CKPT_MODEL_DEF) $(FUZZ_TARGET_CFLAGS) -o $@ \
	  $(srcdir)/tests/fuzz/fuzz_ckpt.c tests/fuzz/libfuzz.a $(PD_LIBS) -lpthread -ldl
tests/fuzz/fuzz_pir$(EXEEXT): fuzz-lib $(srcdir)/tests/fuzz/fuzz_pir.c
	$(AM_V_CCLD)$(CLANG) $(FUZZ_FLAGS) $(FUZZ_TARGET_CFLAGS) -o $@ \
	  $(srcdir)/tests/fuzz/fuzz_pir.c tests/fuzz/libfuzz.a $(PD_LIBS) -lpthread -ldl
tests/fuzz/fuzz_prep$(EXEEXT): fuzz-lib $(srcdir)/tests/fuzz/fuzz_prep.c
	$(AM_V_CCLD)$(CLANG) $(FUZZ_FLAGS) $(FUZZ_TARGET_CFLAGS) -o $@ \
	  $(srcdir)/tests/fuzz/fuzz_prep.c tests/fuzz/libfuzz.a $(PD_LIBS) -lpthread -ldl
# Each run fuzzes a copy of its seeds (tests/fuzz/NAME.run: what the fuzzer adds stays in the
# build tree) and writes crashes, leaks, timeouts and out-of-memory inputs to tests/fuzz/NAME-*.
# FUZZ_KEEP_GOING: a run goes on after a finding (one child process at a time); set it empty to
# stop at the first.
FUZZ_KEEP_GOING = -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1
FUZZ_RUN_FLAGS = -max_total_time=$(FUZZ_RUN_SECONDS) -timeout=$(FUZZ_TIMEOUT) \
	-rss_limit_mb=$(FUZZ_RSS_MB) -max_len=$(FUZZ_MAX_LEN) -print_final_stats=1 $(FUZZ_KEEP_GOING)
fuzz-compile-run: tests/fuzz/fuzz_compile$(EXEEXT)
	$(MKDIR_P) tests/fuzz/compile.run
	cp $(srcdir)/tests/fuzz/corpus_compile/* $(srcdir)/examples/*.pd tests/fuzz/compile.run/
	for d in check run dump summary parse; do \
	  for f in $(srcdir)/tests/golden/$$d/*.pd; do cp "$$f" tests/fuzz/compile.run/$$d-`basename $$f`; done; \
	done
	tests/fuzz/fuzz_compile$(EXEEXT) $(FUZZ_RUN_FLAGS) -artifact_prefix=tests/fuzz/compile- \
	  tests/fuzz/compile.run
fuzz-ckpt-run: tests/fuzz/fuzz_ckpt$(EXEEXT)
	$(MKDIR_P) tests/fuzz/ckpt.run
	cp $(srcdir)/tests/fuzz/corpus_ckpt/* tests/fuzz/ckpt.run/
	tests/fuzz/fuzz_ckpt$(EXEEXT) $(FUZZ_RUN_FLAGS) -artifact_prefix=tests/fuzz/ckpt- \
	  tests/fuzz/ckpt.run
fuzz-pir-run: tests/fuzz/fuzz_pir$(EXEEXT)
	$(MKDIR_P) tests/fuzz/pir.run
	cp $(srcdir)/tests/fuzz/corpus_pir/* tests/fuzz/pir.run/
	tests/fuzz/fuzz_pir$(EXEEXT) $(FUZZ_RUN_FLAGS) -artifact_prefix=tests/fuzz/pir- \
	  tests/fuzz/pir.run
fuzz-prep-run: tests/fuzz/fuzz_prep$(EXEEXT)
	$(MKDIR_P) tests/fuzz/prep.run
	cp $(srcdir)/tests/fuzz/corpus_prep/* tests/fuzz/prep.run/
	tests/fuzz/fuzz_prep$(EXEEXT) $(FUZZ_RUN_FLAGS) -artifact_prefix=tests/fuzz/prep- \
	  tests/fuzz/prep.run
else
fuzz-compile fuzz-compile-run fuzz-ckpt fuzz-ckpt-run fuzz-pir fuzz-pir-run fuzz-prep \
fuzz-prep-run fuzz-lib:
	@echo "$@: libFuzzer targets need clang, which configure did not find" >&2; exit 1
endif
clean-local: clean-fuzz-all
clean-fuzz-all:
	rm -rf tests/fuzz/obj tests/fuzz/compile.run tests/fuzz/ckpt.run tests/fuzz/pir.run \
	  tests/fuzz/prep.run
