# lang/params.mk -- the on-disk formats of tensor values (lang/params.[ch]): Fluid's LoDTensor
# stream, combined parameters files (.pdiparams) and pdlang's checkpoints.
libpdlang_a_SOURCES += lang/params.h lang/params.c
