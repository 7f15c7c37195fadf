# driver/local.mk -- the pdlang program: command-line driver (and later the REPL).
bin_PROGRAMS += pdlang
pdlang_SOURCES = driver/driver.h driver/pdlang.c
pdlang_LDADD = libpdlang.a $(PD_LIBS)
