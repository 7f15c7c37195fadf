# vm/ops/local.mk -- the op registry (vm/oplist.h is the one table of what an op is; ops.[ch] the
# registry and its checks, ops_grad.c the gradient ops; infershape.[ch] the shape functions'
# helpers, kern.h the kernels' and subblock.h those of the ops that run blocks) and the ops
# themselves, one file per family holding its shape functions, kernels and gradient kernels.
libpdlang_internal_la_SOURCES += vm/oplist.h vm/ops/ops.h vm/ops/ops.c vm/ops/ops_grad.c \
	vm/ops/opkernels.h vm/ops/infershape.h vm/ops/infershape.c vm/ops/kern.h \
	vm/ops/subblock.h vm/ops/elementwise.c vm/ops/matmul.c vm/ops/reduce.c vm/ops/loss.c \
	vm/ops/create.c vm/ops/shape.c vm/ops/nn.c vm/ops/sequence.c vm/ops/control.c \
	vm/ops/recurrent.c vm/ops/optim.c vm/ops/amp.c vm/ops/activation.c vm/ops/norm.c \
	vm/ops/index.c vm/ops/loss_elem.c vm/ops/rnn_fused.c vm/ops/rnn.c vm/ops/compat.h \
	vm/ops/compat.c vm/ops/select.c vm/ops/collective.c vm/ops/random.c vm/ops/pad.c \
	vm/ops/detection.c vm/ops/interp.c
