# tests/fuzz.mk -- the libFuzzer targets that need all of pdlang: the compiler (fuzz_compile.c:
# parse + compile + InferShape, and the training program; nothing runs) and the files of tensor
# values (fuzz_ckpt.c: .pdiparams and checkpoints against tests/fuzz/ckpt_model.pd). Their seed
# corpora are replayed in `make check` with $(CC); `make fuzz-compile`, `make fuzz-ckpt` build the
# fuzzers with clang, `make fuzz-compile-run`, `make fuzz-ckpt-run` run them (HACKING.md, Fuzzing).

FUZZ_CKPT_MODEL_DEF = -DPD_FUZZ_CKPT_MODEL='"$(abs_top_srcdir)/tests/fuzz/ckpt_model.pd"'

# ---- The replays: tests/frontend/test_corpus.c, over the target and its folders. ----
check_PROGRAMS += tests/fuzz/replay_compile tests/fuzz/replay_ckpt
tests_fuzz_replay_compile_SOURCES = tests/frontend/test_corpus.c tests/fuzz/fuzz_compile.c
tests_fuzz_replay_compile_CPPFLAGS = $(AM_CPPFLAGS) -DPD_REPLAY_DIRS='"tests/fuzz/corpus_compile", \
	"examples", "tests/golden/check", "tests/golden/run", "tests/golden/dump", \
	"tests/golden/summary", "tests/golden/parse"'
tests_fuzz_replay_compile_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_fuzz_replay_ckpt_SOURCES = tests/frontend/test_corpus.c tests/fuzz/fuzz_ckpt.c
tests_fuzz_replay_ckpt_CPPFLAGS = $(AM_CPPFLAGS) $(FUZZ_CKPT_MODEL_DEF) \
	-DPD_REPLAY_DIRS='"tests/fuzz/corpus_ckpt"'
tests_fuzz_replay_ckpt_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/fuzz/replay_compile tests/fuzz/replay_ckpt
EXTRA_DIST += tests/fuzz/corpus_compile tests/fuzz/corpus_ckpt tests/fuzz/ckpt_model.pd \
	tests/fuzz/ckpt_model.csv tests/fuzz/mkseeds_ckpt.sh tests/fuzz/build-lib.sh

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
FUZZ_LIB_SRCS = $(libpdlang_internal_la_SOURCES) lang/parser.c kernels/cuda/none.c
# -Wno-pass-failed: at -O1 clang does not vectorize the loops PD_SIMD asks it to.
FUZZ_FLAGS = $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(PD_WARN_CFLAGS) $(PD_SIMD_CFLAGS) \
	-Wno-pass-failed
CLEANFILES += tests/fuzz/fuzz_compile$(EXEEXT) tests/fuzz/fuzz_ckpt$(EXEEXT) tests/fuzz/libfuzz.a
.PHONY: fuzz-compile fuzz-compile-run fuzz-ckpt fuzz-ckpt-run fuzz-lib clean-fuzz-all
if PD_HAVE_CLANG
fuzz-compile: tests/fuzz/fuzz_compile$(EXEEXT)
fuzz-ckpt: tests/fuzz/fuzz_ckpt$(EXEEXT)
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
else
fuzz-compile fuzz-compile-run fuzz-ckpt fuzz-ckpt-run fuzz-lib:
	@echo "$@: libFuzzer targets need clang, which configure did not find" >&2; exit 1
endif
clean-local: clean-fuzz-all
clean-fuzz-all:
	rm -rf tests/fuzz/obj tests/fuzz/compile.run tests/fuzz/ckpt.run

# What the fuzzers found that a replay cannot keep fixed (cost: allocation counts, no timings).
check_PROGRAMS += tests/fuzz/test_findings
tests_fuzz_test_findings_SOURCES = tests/fuzz/test_findings.c
tests_fuzz_test_findings_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/fuzz/test_findings
