# lang/compile.mk -- the compiler (AST -> ProgramDesc) and its builtins (saved models as layers:
# import_model.c), and a model's summary, its layers and parameter counts (lang/summary.c). What
# runs a compiled unit's actions (train, eval, print, save, ...) is train/ (train/local.mk).
libpdlang_internal_la_SOURCES += lang/compile.h lang/compile_int.h lang/compile.c \
	lang/compile_expr.c lang/compile_stmt.c lang/builtins.c \
	lang/builtins_action.c lang/builtins_int.h lang/builtins_random.c \
	lang/import_model.c lang/builtins_op.c lang/decompile.h lang/decompile_int.h \
	lang/decompile.c lang/decompile_cf.c lang/decompile_rnn.c lang/decompile_attn.c
dist_stdlib_DATA += stdlib/layers.pd
libpdlang_internal_la_SOURCES += lang/summary.h lang/summary.c
