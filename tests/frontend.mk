# tests/frontend.mk -- tests of the front end (lang/lexer.re, lang/parser.y, lang/ast.c and
# `pdlang parse`): unit tests, golden parse tests, stress tests, the replay of the fuzz corpus,
# and the libFuzzer target (`make fuzz-parse`, `make fuzz-parse-run FUZZ_PARSE_SECONDS=600`).

check_PROGRAMS += tests/frontend/test_lexer
tests_frontend_test_lexer_SOURCES = tests/frontend/test_lexer.c
tests_frontend_test_lexer_LDADD = libpdlang.a $(PD_LIBS)
TESTS += tests/frontend/test_lexer

check_PROGRAMS += tests/frontend/test_parse
tests_frontend_test_parse_SOURCES = tests/frontend/test_parse.c
tests_frontend_test_parse_LDADD = libpdlang.a $(PD_LIBS)
TESTS += tests/frontend/test_parse

# The fuzz target, run over its seed corpus and the golden inputs (compiled with $(CC): no
# libFuzzer needed).
check_PROGRAMS += tests/frontend/test_corpus
tests_frontend_test_corpus_SOURCES = tests/frontend/test_corpus.c tests/fuzz/fuzz_parse.c
tests_frontend_test_corpus_LDADD = libpdlang.a $(PD_LIBS)
TESTS += tests/frontend/test_corpus
EXTRA_DIST += tests/fuzz/corpus_parse

# ---- libFuzzer: the front end compiled straight from its sources by clang (the gcc-built
# library would mix sanitizer runtimes). `make fuzz-parse-run` fuzzes a copy of the seed corpus,
# so that what the fuzzer adds stays in the build tree; crashes are written to tests/fuzz/.
FUZZ_PARSE_SRCS = tests/fuzz/fuzz_parse.c base/base.c base/diag.c lang/ast.c
FUZZ_PARSE_GENERATED = lang/lexer.c lang/parser.c
FUZZ_PARSE_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_PARSE_SECONDS = 600
CLEANFILES += tests/fuzz/fuzz_parse$(EXEEXT)
.PHONY: fuzz-parse fuzz-parse-run clean-fuzz-parse
if PD_HAVE_CLANG
fuzz-parse: tests/fuzz/fuzz_parse$(EXEEXT)
tests/fuzz/fuzz_parse$(EXEEXT): $(FUZZ_PARSE_SRCS) $(FUZZ_PARSE_GENERATED) lang/parser.h
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
