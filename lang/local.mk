# lang/local.mk -- build fragment for lang/: the front end, i.e. the re2c lexer (lexer.re), the
# Bison parser (parser.y), the syntax tree (ast.[ch]) and its API (parse.h). `pdlang parse` is
# driver/cmd_parse.c, listed in driver/local.mk (pdlang_SOURCES starts there).
#
# Generated sources are made in the build tree and never committed: lang/parser.[ch] by automake's
# yacc rule (AM_YFLAGS = -d), lang/lexer.c by the rule below. Both are in the library's sources, so
# `make dist` ships them and a release tarball builds without re2c or Bison. They compile cleanly
# with the project's warning flags (gcc and clang), so they need no flags of their own.
libpdlang_internal_la_SOURCES += lang/ast.h lang/ast.c lang/lexer.h lang/lexer.c lang/parse.h \
	lang/parser.y
EXTRA_DIST += lang/lexer.re
# The lexer includes parser.h for the token kinds: make it first (BUILT_SOURCES covers `make`,
# `make check`; the explicit dependency covers building one target, e.g. `make pdlang`).
BUILT_SOURCES += lang/parser.h lang/lexer.c
lang/lexer.lo: lang/parser.h
MAINTAINERCLEANFILES += lang/lexer.c lang/parser.c lang/parser.h

RE2C_FLAGS = -W -Werror --no-generation-date --no-version
lang/lexer.c: lang/lexer.re
	$(AM_V_GEN)$(MKDIR_P) lang && $(RE2C) $(RE2C_FLAGS) -o $@ $(srcdir)/lang/lexer.re
