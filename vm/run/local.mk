# vm/run/local.mk -- the runtime: tensors with LoD (tensor.[ch]), the scope tree (scope.[ch]), the
# executor (exec.[ch]), its placement rules on the GPU (exec_place.[ch]) and the op profiler
# (exec_profile.c), and saved inference models loaded and made ready to run (model.[ch]: the
# loader behind `pdlang exec`, pd_state_load_model and a script's import_model).
libpdlang_internal_la_SOURCES += vm/run/tensor.h vm/run/tensor.c vm/run/scope.h vm/run/scope.c \
	vm/run/exec.h vm/run/exec.c vm/run/exec_place.h vm/run/exec_place.c vm/run/exec_profile.c \
	vm/run/model.h vm/run/model.c
# The communicator of data-parallel training (comm.h): on MPI with --with-mpi, else one process.
libpdlang_internal_la_SOURCES += vm/run/comm.h
if PD_HAVE_MPI
libpdlang_internal_la_SOURCES += vm/run/comm_mpi.c
else
libpdlang_internal_la_SOURCES += vm/run/comm_none.c
endif
EXTRA_DIST += vm/run/comm_mpi.c vm/run/comm_none.c
