# tests/lang/local.mk -- the tests of lang/: the lexer and parser (test_lexer, test_parse; stress.sh:
# `pdlang parse` on generated inputs, big, deep, binary), the compiler with the k-th allocation
# failing over the examples (test_compile_oom), the one budget of compile-time work
# (test_budget), the training curves of train/plot.c, the PNG decoded
# with cairo (test_plot; without cairo: the error that says so), gradients through saved models
# used as layers (test_import_model: import_model, finite differences), the table of the specs'
# and actions' parameters behind :help NAME, checked against doc/language.md (test_spec_help),
# pdlang decompile's layers, control flow, odd programs (also tests/vm/ir/models.c's) and its
# failing allocations (test_decompile).
# fp64.h compiles a script in fp64
# and fp64_grad.h checks every parameter's gradient against finite differences of the cost (for
# the tests of scripts: tests/stdlib, tests/vm/passes).
LANG_TESTS = tests/lang/test_compile_oom tests/lang/test_budget tests/lang/test_lexer tests/lang/test_parse \
	tests/lang/test_plot tests/lang/test_import_model tests/lang/test_spec_help tests/lang/test_decompile
check_PROGRAMS += $(LANG_TESTS)
tests_lang_test_decompile_SOURCES = tests/lang/test_decompile.c $(VM_IR_MODELS)
TESTS += $(LANG_TESTS) tests/lang/stress.sh
EXTRA_DIST += tests/lang/stress.sh tests/lang/fp64.h tests/lang/fp64_grad.h
