# vm/local.mk -- the VM's data structures: tensors (with LoD) and the scope tree of variables.
libpdlang_internal_la_SOURCES += vm/tensor.h vm/tensor.c vm/scope.h vm/scope.c
