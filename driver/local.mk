# driver/local.mk -- the pdlang program: the command-line driver (one cmd_NAME.c per subcommand)
# and the REPL.
bin_PROGRAMS += pdlang
pdlang_SOURCES = driver/driver.h driver/pdlang.c
pdlang_LDADD = libpdlang-internal.la $(PD_LIBS)
# `pdlang dump` (listed here: automake needs pdlang_SOURCES set with '=' before any '+=').
pdlang_SOURCES += driver/cmd_dump.c
# `pdlang parse` (listed here for the same reason; the front end itself is in lang/local.mk).
pdlang_SOURCES += driver/cmd_parse.c
pdlang_SOURCES += driver/cmd_check.c
pdlang_SOURCES += driver/cmd_run.c
pdlang_SOURCES += driver/cmd_exec.c driver/model_inputs.c driver/cmd_bench.c
pdlang_SOURCES += driver/cmd_repl.c driver/repl.h driver/repl.c driver/repl_int.h driver/repl_gc.c driver/repl_complete.c
pdlang_SOURCES += driver/cmd_plot.c
pdlang_SOURCES += driver/cmd_summary.c
pdlang_SOURCES += driver/cmd_decompile.c
