# vm/ops/local.mk -- the op registry (vm/oplist.h is the one table of what an op is; ops.[ch] the
# registry and its checks, ops_grad.c the gradient ops) and the ops themselves, one file per
# family holding its shape functions, kernels and gradient kernels.
libpdlang_internal_la_SOURCES += vm/oplist.h vm/ops/ops.h vm/ops/ops.c vm/ops/ops_grad.c \
	vm/ops/gradlist.h vm/ops/opkernels.h vm/ops/infershape.h vm/ops/infershape.c \
	vm/ops/infershape_elementwise.c vm/ops/infershape_math.c vm/ops/infershape_tensor.c \
	vm/ops/infershape_nn.c vm/ops/infershape_sequence.c vm/ops/infershape_control.c \
	vm/ops/infershape_optim.c vm/ops/kern_math.c vm/ops/kern_tensor.c vm/ops/kern_rnn.c \
	vm/ops/exec_control.c
