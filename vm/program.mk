# vm/program.mk -- the in-memory ProgramDesc (vm/program.h): blocks, vars, ops, attributes,
# validation (program.c), the text and Graphviz listings (program_dump.c), and Prune (prune.c).
libpdlang_internal_la_SOURCES += vm/program.h vm/program.c vm/program_dump.c vm/prune.h vm/prune.c
