# base/local.mk -- status codes, allocation, buffers, the string map, sources and diagnostics.
libpdlang_internal_la_SOURCES += base/base.h base/base.c base/diag.h base/diag.c base/dtype.h base/dtype.c \
	base/strmap.h base/strmap.c
