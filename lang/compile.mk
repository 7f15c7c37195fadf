# lang/compile.mk -- the compiler (AST -> ProgramDesc) and its builtins.
libpdlang_internal_la_SOURCES += lang/compile.h lang/compile_int.h lang/compile.c \
	lang/compile_expr.c lang/compile_stmt.c lang/builtins.c
dist_stdlib_DATA += stdlib/layers.pd
libpdlang_internal_la_SOURCES += lang/run.h lang/run_int.h lang/run.c lang/train.c
