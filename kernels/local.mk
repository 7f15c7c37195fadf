# kernels/local.mk -- the kernel interface (kernels.h, kernels.c) and its CPU backend: OpenBLAS
# GEMMs, plain C + OpenMP loops. The *_t.h files are type templates included by their .c file.
libpdlang_internal_la_SOURCES += kernels/kernels.h kernels/kernels.c \
	kernels/cpu/cpu.h kernels/cpu/backend.c kernels/cpu/iter.c kernels/cpu/gemm.c \
	kernels/cpu/elementwise.c kernels/cpu/elementwise_t.h kernels/cpu/each_type.h \
	kernels/cpu/reduce.c kernels/cpu/reduce_t.h \
	kernels/cpu/softmax.c kernels/cpu/softmax_t.h \
	kernels/cpu/conv.c kernels/cpu/conv_t.h \
	kernels/cpu/index.c kernels/cpu/index_t.h \
	kernels/cpu/random.c
