# vm/ops.mk -- the op registry: the op list (vm/oplist.h), the registry and its checks (ops.c),
# and the compile-time shape functions, grouped by op family (infershape*.c).
libpdlang_internal_la_SOURCES += vm/ops.h vm/oplist.h vm/ops.c \
	vm/infershape.h vm/infershape.c vm/infershape_elementwise.c vm/infershape_math.c \
	vm/infershape_tensor.c vm/infershape_nn.c vm/infershape_sequence.c vm/infershape_control.c \
	vm/infershape_optim.c
libpdlang_internal_la_SOURCES += vm/exec.h vm/exec.c vm/exec_place.h vm/exec_place.c vm/opkernels.h vm/kern_math.c vm/kern_tensor.c \
	vm/kern_rnn.c vm/exec_control.c vm/exec_profile.c vm/gradlist.h vm/ops_grad.c vm/backward.h vm/backward.c vm/optimizer.h vm/optimizer.c \
	vm/fuse_rnn.h vm/fuse_rnn.c vm/fuse_fc.h vm/fuse_fc.c
libpdlang_internal_la_SOURCES += vm/pipeline.h vm/pipeline.c
