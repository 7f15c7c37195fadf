# kernels/local.mk -- the kernel interface (kernels.h, kernels.c; kernels_int.h: the checks both
# backends share) and its CPU backend: OpenBLAS GEMMs, plain C loops, and the thread pool they
# run on (kernels/cpu/pool.c). The *_t.h files are type templates included by their .c file.
libpdlang_internal_la_SOURCES += kernels/kernels.h kernels/kernels_int.h kernels/kernels.c \
	kernels/cpu/cpu.h kernels/cpu/backend.c kernels/cpu/pool.c kernels/cpu/iter.c kernels/cpu/gemm.c \
	kernels/cpu/elementwise.c kernels/cpu/elementwise_t.h kernels/cpu/each_type.h \
	kernels/cpu/fastmath.h kernels/cpu/fastmath_avx2.c kernels/cpu/fastmath_avx512.c kernels/cpu/gemm_avx512.c \
	kernels/cpu/gemm_lp.c kernels/cpu/gemm_amx.c kernels/cpu/gemm_amx.h \
	kernels/cpu/reduce.c kernels/cpu/reduce_t.h \
	kernels/cpu/softmax.c kernels/cpu/softmax_t.h \
	kernels/cpu/pool2d.c kernels/cpu/pool2d_t.h \
	kernels/cpu/conv.c kernels/cpu/conv_t.h kernels/cpu/conv_avx512.c kernels/cpu/conv_avx2.c kernels/cpu/conv_wino.c kernels/cpu/epi_avx512.h kernels/cpu/epi_avx2.h kernels/cpu/gemm_avx2.c \
	kernels/cpu/index.c kernels/cpu/index_t.h \
	kernels/cpu/random.c kernels/cpu/strided.c kernels/cpu/pad.c \
	kernels/cpu/act.c kernels/cpu/act_t.h \
	kernels/cpu/norm.c kernels/cpu/norm_t.h \
	kernels/cpu/optim.c kernels/cpu/optim_t.h kernels/cpu/rnn_cell.c \
	kernels/cpu/rnn_seq.c kernels/cpu/rnn_seq_t.h \
	kernels/cpu/loss.c kernels/cpu/loss_t.h kernels/cpu/dropout.c kernels/cpu/dropout_t.h \
	kernels/cpu/copy_rows.c kernels/cpu/adaptive_pool.c kernels/cpu/adaptive_pool_t.h \
	kernels/cpu/each_float.h kernels/cpu/interp.c kernels/cpu/interp_t.h kernels/grid_sample_t.h \
	kernels/cpu/detection.c kernels/detect_t.h \
	kernels/rnn_steps.c

# The CUDA backend (configure --with-cuda): its .cu files go into the same convenience library,
# compiled by nvcc through kernels/cuda/nvcc-lo.sh, which writes the PIC object and the .lo
# file libtool reads. Without CUDA, kernels/cuda/none.c provides the device API of kernels.h
# (reporting that CUDA is absent) and no .cu file is compiled; the tarball has both.
# PD_CUDA_SRCS: every .cu file of the backend, once.
PD_CUDA_SRCS = kernels/cuda/device.cu kernels/cuda/gemm.cu kernels/cuda/elementwise.cu \
	kernels/cuda/reduce.cu kernels/cuda/softmax.cu kernels/cuda/conv.cu \
	kernels/cuda/index.cu kernels/cuda/topk.cu kernels/cuda/random.cu kernels/cuda/strided.cu \
	kernels/cuda/act.cu kernels/cuda/norm.cu kernels/cuda/optim.cu kernels/cuda/rnn_cell.cu \
	kernels/cuda/loss.cu kernels/cuda/dropout.cu kernels/cuda/copy_rows.cu \
	kernels/cuda/adaptive_pool.cu kernels/cuda/rnn_seq.cu kernels/cuda/pad.cu \
	kernels/cuda/interp.cu kernels/cuda/cudnn.cu kernels/cuda/detection.cu
PD_CUDA_HDRS = kernels/cuda/cuda_int.h kernels/cuda/reduce.cuh
if PD_HAVE_CUDA
libpdlang_internal_la_SOURCES += $(PD_CUDA_HDRS) $(PD_CUDA_SRCS)
# nvcc's dependency output does not reach automake's tracking: every object depends on every
# header it may include.
$(PD_CUDA_SRCS:.cu=.lo): $(PD_CUDA_HDRS) kernels/kernels.h kernels/kernels_int.h kernels/detect_t.h \
	base/base.h base/dtype.h config.h $(srcdir)/kernels/cuda/nvcc-lo.sh
else
libpdlang_internal_la_SOURCES += kernels/cuda/none.c
endif
EXTRA_DIST += kernels/cuda/nvcc-lo.sh

# The GPU collectives of data-parallel jobs (kernels/nccl.h): NCCL with CUDA and MPI (configure
# finds it), else kernels/nccl_none.c, which says that NCCL is absent.
libpdlang_internal_la_SOURCES += kernels/nccl.h
if PD_HAVE_NCCL
libpdlang_internal_la_SOURCES += kernels/cuda/nccl.cu
kernels/cuda/nccl.lo: $(PD_CUDA_HDRS) kernels/kernels.h kernels/kernels_int.h \
	kernels/nccl.h base/base.h base/dtype.h config.h $(srcdir)/kernels/cuda/nvcc-lo.sh
else
libpdlang_internal_la_SOURCES += kernels/nccl_none.c
endif

# nvcc: C++20 (designated initializers), fp32 denormals flushed to zero (as the CPU after
# pd_k_init), the architectures of --with-cuda-arch, host code with our warnings.
PD_NVCC_FLAGS = -std=c++20 -O2 -g -ftz=true $(NVCC_ARCH_FLAGS) $(NVCC_WARN_FLAGS) \
	-I$(top_srcdir) -I$(top_builddir) $(NCCL_CFLAGS)
AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
am__v_NVCC_1 =
.cu.lo:
	$(AM_V_NVCC)$(SHELL) $(srcdir)/kernels/cuda/nvcc-lo.sh $@ $< $(NVCC) $(PD_NVCC_FLAGS) \
	$(NVCCFLAGS)
