# vm/passes/local.mk -- the program passes: Prune (prune.[ch]), the hoisting of loop-invariant
# row-wise work out of loops (hoist.[ch]), the fusions (fuse_rnn.[ch] with fuse_gated.c, fuse_fc.[ch]), the backward
# pass (backward.[ch]), mixed precision (amp.[ch]), the optimizer ops (optimizer.[ch]), and the pipeline that chains them into
# a training program (pipeline.[ch]).
libpdlang_internal_la_SOURCES += vm/passes/prune.h vm/passes/prune.c vm/passes/hoist.h \
	vm/passes/hoist.c vm/passes/fuse_rnn.h vm/passes/fuse_rnn.c vm/passes/fuse_gated.c vm/passes/fuse_fc.h \
	vm/passes/fuse_fc.c vm/passes/infer_opt.h vm/passes/infer_opt.c vm/passes/backward.h vm/passes/backward.c vm/passes/optimizer.h \
	vm/passes/optimizer.c vm/passes/pipeline.h vm/passes/pipeline.c vm/passes/amp.h vm/passes/amp.c \
	vm/passes/data_parallel.h vm/passes/data_parallel.c vm/passes/paddle_export.h \
	vm/passes/paddle_export.c
