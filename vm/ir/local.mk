# vm/ir/local.mk -- the program in memory and its files: the ProgramDesc (program.[ch]), its text
# and Graphviz listings (program_dump.c), its serialization to Fluid's framework.proto
# (serialize.[ch]), and the on-disk formats of tensor values (params.[ch]: Fluid's LoDTensor
# stream, combined .pdiparams files, pdlang's checkpoints).
libpdlang_internal_la_SOURCES += vm/ir/program.h vm/ir/program.c vm/ir/program_dump.c \
	vm/ir/framework.pb-c.c vm/ir/framework.pb-c.h vm/ir/serialize.h vm/ir/serialize.c \
	vm/ir/params.h vm/ir/params.c
# framework.pb-c.[ch] are made by protoc-c in the build tree, shipped in the dist tarball (a
# release builds without protoc-c) and never committed.
BUILT_SOURCES += vm/ir/framework.pb-c.c vm/ir/framework.pb-c.h
MAINTAINERCLEANFILES += vm/ir/framework.pb-c.c vm/ir/framework.pb-c.h
EXTRA_DIST += vm/ir/framework.proto

# One protoc-c run writes both files; the header follows the source (the automake manual's
# recipe for a tool with several outputs, safe under make -j).
vm/ir/framework.pb-c.c: vm/ir/framework.proto
	$(AM_V_GEN)$(MKDIR_P) vm/ir && \
	$(PROTOC_C) --proto_path=$(srcdir)/vm/ir --c_out=vm/ir $(srcdir)/vm/ir/framework.proto
vm/ir/framework.pb-c.h: vm/ir/framework.pb-c.c
	@if test ! -f $@; then \
	  rm -f vm/ir/framework.pb-c.c; \
	  $(MAKE) $(AM_MAKEFLAGS) vm/ir/framework.pb-c.c; \
	else :; fi
