# vm/ir/local.mk -- the program in memory and its files: the ProgramDesc (program.[ch]), its text
# and Graphviz listings (program_dump.c), its serialization to Fluid's framework.proto
# (serialize.[ch]), and the on-disk formats of tensor values (params.[ch]: Fluid's LoDTensor
# stream, combined .pdiparams files, pdlang's checkpoints).
libpdlang_internal_la_SOURCES += vm/ir/program.h vm/ir/program.c vm/ir/program_dump.c \
	vm/ir/framework.pb-c.c vm/ir/framework.pb-c.h vm/ir/pb_alloc.h vm/ir/serialize.h vm/ir/serialize.c \
	vm/ir/params.h vm/ir/params.c vm/ir/pir.h vm/ir/pir.c \
	vm/ir/pir_write.c
# framework.pb-c.[ch] are made by protoc-c in the build tree, shipped in the dist tarball (a
# release builds without protoc-c) and never committed. protoc-c names the functions and
# descriptors after the proto package (paddle__framework__proto__program_desc__pack); the rule
# renames that prefix to pd_pb_ (pd_pb_program_desc__pack), so that every external symbol of the
# library starts with pd_. The proto file stays Fluid's (protoc decodes with it as
# paddle.framework.proto); the type and macro names (Paddle__Framework__Proto__ProgramDesc,
# PADDLE__FRAMEWORK__PROTO__...) are kept.
BUILT_SOURCES += vm/ir/framework.pb-c.c vm/ir/framework.pb-c.h
MAINTAINERCLEANFILES += vm/ir/framework.pb-c.c vm/ir/framework.pb-c.h
EXTRA_DIST += vm/ir/framework.proto

# One protoc-c run writes both files; the header follows the source (the automake manual's
# recipe for a tool with several outputs, safe under make -j).
vm/ir/framework.pb-c.c: vm/ir/framework.proto $(srcdir)/vm/ir/local.mk
	$(AM_V_GEN)rm -rf vm/ir/framework.tmp && $(MKDIR_P) vm/ir/framework.tmp && \
	$(PROTOC_C) --proto_path=$(srcdir)/vm/ir --c_out=vm/ir/framework.tmp \
	  $(srcdir)/vm/ir/framework.proto && \
	for f in framework.pb-c.h framework.pb-c.c; do \
	  sed 's/paddle__framework__proto__/pd_pb_/g' vm/ir/framework.tmp/$$f > vm/ir/$$f.tmp && \
	  mv vm/ir/$$f.tmp vm/ir/$$f || exit 1; \
	done && rm -rf vm/ir/framework.tmp
vm/ir/framework.pb-c.h: vm/ir/framework.pb-c.c
	@if test ! -f $@; then \
	  rm -f vm/ir/framework.pb-c.c; \
	  $(MAKE) $(AM_MAKEFLAGS) vm/ir/framework.pb-c.c; \
	else :; fi
