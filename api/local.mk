# api/local.mk -- the embeddable library: include/pdlang.h (installed) and its implementation
# api/api.c, with the loader of saved models in vm/run/model.c (`pdlang exec` and `import_model` use it too). They go
# into the convenience library with everything else, so the in-tree tests reach them together
# with the internals (pd_alloc_fail_after, ...); the installed libpdlang.la
# is that convenience library linked whole into a shared library that exports only the public
# functions (pd_state_*: tests/api/install.sh checks the list against pdlang.h), versioned with
# configure.ac's PD_LT_VERSION; shared only (-shared; configure refuses --enable-static), as an
# archive could not hide the rest. pdlang.pc (from pdlang.pc.in) tells pkg-config about it.
libpdlang_internal_la_SOURCES += api/api_int.h api/api.c
# The host program's data sets for host("NAME") readers (pd_state_set_dataset).
libpdlang_internal_la_SOURCES += api/api_data.h api/api_data.c
# Fine-tuning and saving a loaded model: the script, and its run (pd_state_train,
# pd_state_save_model).
libpdlang_internal_la_SOURCES += api/api_finetune.h api/api_finetune.c
include_HEADERS += include/pdlang.h
lib_LTLIBRARIES += libpdlang.la
libpdlang_la_SOURCES = include/pdlang.h
libpdlang_la_LIBADD = libpdlang-internal.la $(PROTOBUF_C_LIBS) $(OPENBLAS_LIBS) $(ZLIB_LIBS) \
	$(MPI_LIBS) $(CAIRO_LIBS) $(CUDA_LIBS) $(LIBS)
libpdlang_la_LDFLAGS = $(AM_LDFLAGS) -shared -version-info $(PD_LT_VERSION) -no-undefined \
	-export-symbols-regex '^pd_state_'
# The image reader's libraries (vm/reader/local.mk).
libpdlang_la_LIBADD += $(PNG_LIBS) $(JPEG_LIBS)
pkgconfig_DATA += pdlang.pc
# After `make install` as root into the system (no DESTDIR), refresh the dynamic linker's cache,
# so that a program linking libpdlang runs without LD_LIBRARY_PATH (Debian's ld.so.conf lists
# /usr/local/lib; another prefix needs its lib folder there, or LD_LIBRARY_PATH).
install-exec-hook:
	@if test -z "$(DESTDIR)" && test "`id -u`" = 0 && test -x /sbin/ldconfig; then \
	  /sbin/ldconfig || :; fi
