# lang/params.mk -- the on-disk formats of tensor values (lang/params.[ch]): Fluid's LoDTensor
# stream, combined parameters files (.pdiparams) and pdlang's checkpoints.
libpdlang_internal_la_SOURCES += lang/params.h lang/params.c
