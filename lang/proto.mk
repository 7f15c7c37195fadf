# lang/proto.mk -- PaddlePaddle Fluid's framework.proto, compiled by protoc-c, and the serializer
# between pd_program and ProgramDesc bytes (lang/serialize.[ch]). framework.pb-c.[ch] are made in
# the build tree, shipped in the dist tarball (a release builds without protoc-c) and never
# committed. (`pdlang dump` is listed in driver/local.mk: pdlang_SOURCES starts there.)
#
# protoc-c names the functions and descriptors after the proto package
# (paddle__framework__proto__program_desc__pack); the rule renames that prefix to pd_pb_
# (pd_pb_program_desc__pack), so that every external symbol of the library starts with pd_.
# The proto file stays Fluid's (protoc decodes with it as paddle.framework.proto); the type and
# macro names (Paddle__Framework__Proto__ProgramDesc, PADDLE__FRAMEWORK__PROTO__...) are kept.
libpdlang_internal_la_SOURCES += lang/framework.pb-c.c lang/framework.pb-c.h \
	lang/serialize.h lang/serialize.c
BUILT_SOURCES += lang/framework.pb-c.c lang/framework.pb-c.h
MAINTAINERCLEANFILES += lang/framework.pb-c.c lang/framework.pb-c.h
EXTRA_DIST += lang/framework.proto

# One protoc-c run writes both files; the header follows the source (the automake manual's
# recipe for a tool with several outputs, safe under make -j).
lang/framework.pb-c.c: lang/framework.proto
	$(AM_V_GEN)rm -rf lang/framework.tmp && $(MKDIR_P) lang/framework.tmp && \
	$(PROTOC_C) --proto_path=$(srcdir)/lang --c_out=lang/framework.tmp \
	  $(srcdir)/lang/framework.proto && \
	for f in framework.pb-c.h framework.pb-c.c; do \
	  sed 's/paddle__framework__proto__/pd_pb_/g' lang/framework.tmp/$$f > lang/$$f.tmp && \
	  mv lang/$$f.tmp lang/$$f || exit 1; \
	done && rm -rf lang/framework.tmp
lang/framework.pb-c.h: lang/framework.pb-c.c
	@if test ! -f $@; then \
	  rm -f lang/framework.pb-c.c; \
	  $(MAKE) $(AM_MAKEFLAGS) lang/framework.pb-c.c; \
	else :; fi
