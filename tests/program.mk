# tests/program.mk -- tests of the program IR (vm/ir/program.c), Prune (vm/passes/prune.c), the ProgramDesc
# serializer (vm/ir/serialize.c) and `pdlang dump`; the replay of the loader's fuzz corpus; and the
# libFuzzer target itself (`make fuzz-load`, `make fuzz-load-run FUZZ_SECONDS=600`: clang only).
PROGRAM_TEST_LIBS = libpdlang-internal.la $(PD_LIBS)
PROGRAM_TEST_MODELS = tests/program/models.c tests/program/models.h

check_PROGRAMS += tests/program/test_program tests/program/test_serialize \
	tests/program/replay_load tests/program/mkmodel tests/program/test_prune \
	tests/program/test_roundtrip
tests_program_test_program_SOURCES = tests/program/test_program.c $(PROGRAM_TEST_MODELS)
tests_program_test_program_LDADD = $(PROGRAM_TEST_LIBS)
tests_program_test_serialize_SOURCES = tests/program/test_serialize.c $(PROGRAM_TEST_MODELS)
tests_program_test_serialize_LDADD = $(PROGRAM_TEST_LIBS)
# Prune on hand-built programs and on examples/*.pd (found through PD_TOP_SRCDIR).
tests_program_test_prune_SOURCES = tests/program/test_prune.c $(PROGRAM_TEST_MODELS)
tests_program_test_prune_CPPFLAGS = $(AM_CPPFLAGS) -DPD_TOP_SRCDIR='"$(abs_top_srcdir)"'
tests_program_test_prune_LDADD = $(PROGRAM_TEST_LIBS)
# Compile examples/*.pd, serialize, parse back: the same listing.
tests_program_test_roundtrip_SOURCES = tests/program/test_roundtrip.c
tests_program_test_roundtrip_CPPFLAGS = $(AM_CPPFLAGS) -DPD_TOP_SRCDIR='"$(abs_top_srcdir)"'
tests_program_test_roundtrip_LDADD = $(PROGRAM_TEST_LIBS)
tests_program_replay_load_SOURCES = tests/program/replay_load.c tests/fuzz/fuzz_load.c
tests_program_replay_load_LDADD = $(PROGRAM_TEST_LIBS)
# Writes the test programs as files: for the shell tests, fixtures and the seed corpus
# (regenerate it with `tests/program/mkmodel --corpus $(srcdir)/tests/fuzz/corpus_load`).
tests_program_mkmodel_SOURCES = tests/program/mkmodel.c $(PROGRAM_TEST_MODELS)
tests_program_mkmodel_LDADD = $(PROGRAM_TEST_LIBS)

TESTS += tests/program/test_program tests/program/test_serialize tests/program/replay_load \
	tests/program/test_prune tests/program/test_roundtrip tests/program/dump_cli.sh tests/program/protoc_decode.sh
EXTRA_DIST += tests/program/dump_cli.sh tests/program/protoc_decode.sh \
	tests/fuzz/corpus_load \
	tests/golden/dump/nested.pdmodel tests/golden/dump/nested.out tests/golden/dump/nested.dot \
	tests/golden/dump/foreign.pdmodel tests/golden/dump/foreign.out \
	tests/golden/dump/cycle.pdmodel tests/golden/dump/cycle.err

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
