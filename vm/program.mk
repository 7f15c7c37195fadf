# vm/program.mk -- the in-memory ProgramDesc (vm/program.h): blocks, vars, ops, attributes,
# validation (program.c), the text and Graphviz listings (program_dump.c), Prune (prune.c), and
# the hoisting of row-wise work out of loops (hoist.c).
libpdlang_internal_la_SOURCES += vm/program.h vm/program.c vm/program_dump.c vm/prune.h vm/prune.c \
	vm/hoist.h vm/hoist.c
