# lang/compile.mk -- the compiler (AST -> ProgramDesc) and its builtins (saved models as layers:
# import_model.c); the runner of a unit's
# actions, in three layers that call downwards only: run.c (print, assert_close, the dispatch)
# -> train.c (train, eval) and train_save.c (save, load) -> runner.c (the runner's core,
# lang/run_int.h).
libpdlang_internal_la_SOURCES += lang/compile.h lang/compile_int.h lang/compile.c \
	lang/compile_expr.c lang/compile_stmt.c lang/builtins.c \
	lang/builtins_action.c lang/builtins_int.h lang/builtins_random.c \
	lang/import_model.c lang/builtins_op.c lang/decompile.h lang/decompile.c
dist_stdlib_DATA += stdlib/layers.pd
libpdlang_internal_la_SOURCES += lang/run.h lang/run_int.h lang/runner.c lang/train.h \
	lang/train.c lang/train_save.c lang/run.c
# train's validation, early stopping and keep_best (lang/train_valid.c), its log
# (lang/train_log.c), and what they share with train.c (lang/train_int.h); the training curves
# of a log as a PNG (lang/plot.c, with cairo when configure finds it); a model's summary, its
# layers and parameter counts (lang/summary.c).
libpdlang_internal_la_SOURCES += lang/train_int.h lang/train_valid.c lang/train_log.c \
	lang/plot.h lang/plot.c lang/summary.h lang/summary.c
# predict(y, reader = R, out = FILE): y for every sample, to .npy or CSV (lang/train_predict.c).
libpdlang_internal_la_SOURCES += lang/train_predict.c
# The images(...) reader's options, class list and train's augmentations (lang/train_image.c).
libpdlang_internal_la_SOURCES += lang/train_image.c
