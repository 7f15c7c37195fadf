# tests/frontend.mk -- tests of the front end (lang/lexer.re, lang/parser.y, lang/ast.c and
# `pdlang parse`): unit tests, golden parse tests, stress tests, the replay of the fuzz corpus,
# and the libFuzzer target (`make fuzz-parse`, `make fuzz-parse-run FUZZ_PARSE_SECONDS=600`).

check_PROGRAMS += tests/frontend/test_lexer
tests_frontend_test_lexer_SOURCES = tests/frontend/test_lexer.c
tests_frontend_test_lexer_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/frontend/test_lexer

check_PROGRAMS += tests/frontend/test_parse
tests_frontend_test_parse_SOURCES = tests/frontend/test_parse.c
tests_frontend_test_parse_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/frontend/test_parse

# The fuzz target, run over its seed corpus and the golden inputs (compiled with $(CC): no
# libFuzzer needed).
check_PROGRAMS += tests/frontend/test_corpus
tests_frontend_test_corpus_SOURCES = tests/frontend/test_corpus.c tests/fuzz/fuzz_parse.c
tests_frontend_test_corpus_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/frontend/test_corpus
EXTRA_DIST += tests/fuzz/corpus_parse

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

# Golden tests: tests/golden/parse/NAME.pd is run as `pdlang parse NAME.pd` by tests/golden.sh and
# compared with NAME.out (the tree) or NAME.err (the exact diagnostics, exit status 1).
PARSE_GOLDEN = \
	tests/golden/parse/comments_only.pd \
	tests/golden/parse/empty.pd \
	tests/golden/parse/err_bad_char.pd \
	tests/golden/parse/err_bad_escape.pd \
	tests/golden/parse/err_deep_blocks.pd \
	tests/golden/parse/err_deep_parens.pd \
	tests/golden/parse/err_eof_expr.pd \
	tests/golden/parse/err_eof_paren.pd \
	tests/golden/parse/err_hints.pd \
	tests/golden/parse/err_limit.pd \
	tests/golden/parse/err_mismatch.pd \
	tests/golden/parse/err_missing_brace.pd \
	tests/golden/parse/err_nul.pd \
	tests/golden/parse/err_numbers.pd \
	tests/golden/parse/err_recovery.pd \
	tests/golden/parse/err_targets.pd \
	tests/golden/parse/err_tree_depth.pd \
	tests/golden/parse/err_unexpected.pd \
	tests/golden/parse/err_unterminated.pd \
	tests/golden/parse/err_utf8.pd \
	tests/golden/parse/expressions.pd \
	tests/golden/parse/newlines.pd \
	tests/golden/parse/no_final_newline.pd \
	tests/golden/parse/seed_ifelse.pd \
	tests/golden/parse/seed_rnn.pd \
	tests/golden/parse/seed_train.pd \
	tests/golden/parse/statements.pd
TESTS += $(PARSE_GOLDEN)
EXTRA_DIST += $(PARSE_GOLDEN) \
	tests/golden/parse/comments_only.out \
	tests/golden/parse/empty.out \
	tests/golden/parse/expressions.out \
	tests/golden/parse/newlines.out \
	tests/golden/parse/no_final_newline.out \
	tests/golden/parse/seed_ifelse.out \
	tests/golden/parse/seed_rnn.out \
	tests/golden/parse/seed_train.out \
	tests/golden/parse/statements.out \
	tests/golden/parse/err_bad_char.err \
	tests/golden/parse/err_bad_escape.err \
	tests/golden/parse/err_deep_blocks.err \
	tests/golden/parse/err_deep_parens.err \
	tests/golden/parse/err_eof_expr.err \
	tests/golden/parse/err_eof_paren.err \
	tests/golden/parse/err_hints.err \
	tests/golden/parse/err_limit.err \
	tests/golden/parse/err_mismatch.err \
	tests/golden/parse/err_missing_brace.err \
	tests/golden/parse/err_nul.err \
	tests/golden/parse/err_numbers.err \
	tests/golden/parse/err_recovery.err \
	tests/golden/parse/err_targets.err \
	tests/golden/parse/err_tree_depth.err \
	tests/golden/parse/err_unexpected.err \
	tests/golden/parse/err_unterminated.err \
	tests/golden/parse/err_utf8.err

# Edge cases of `pdlang parse` on generated inputs (big, deep, binary).
TESTS += tests/frontend/stress.sh
EXTRA_DIST += tests/frontend/stress.sh
