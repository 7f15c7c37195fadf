# lang/proto.mk -- PaddlePaddle Fluid's framework.proto, compiled by protoc-c, and the serializer
# between pd_program and ProgramDesc bytes (lang/serialize.[ch]). framework.pb-c.[ch] are made in
# the build tree, shipped in the dist tarball (a release builds without protoc-c) and never
# committed. (`pdlang dump` is listed in driver/local.mk: pdlang_SOURCES starts there.)
libpdlang_internal_la_SOURCES += lang/framework.pb-c.c lang/framework.pb-c.h \
	lang/serialize.h lang/serialize.c
BUILT_SOURCES += lang/framework.pb-c.c lang/framework.pb-c.h
MAINTAINERCLEANFILES += lang/framework.pb-c.c lang/framework.pb-c.h
EXTRA_DIST += lang/framework.proto

# One protoc-c run writes both files; the header follows the source (the automake manual's
# recipe for a tool with several outputs, safe under make -j).
lang/framework.pb-c.c: lang/framework.proto
	$(AM_V_GEN)$(MKDIR_P) lang && \
	$(PROTOC_C) --proto_path=$(srcdir)/lang --c_out=lang $(srcdir)/lang/framework.proto
lang/framework.pb-c.h: lang/framework.pb-c.c
	@if test ! -f $@; then \
	  rm -f lang/framework.pb-c.c; \
	  $(MAKE) $(AM_MAKEFLAGS) lang/framework.pb-c.c; \
	else :; fi
