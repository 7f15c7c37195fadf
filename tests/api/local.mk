# tests/api/local.mk -- the tests of the embeddable library (include/pdlang.h, api/):
#   test_api: the C API, linked with the convenience library: compile and run-time errors with
#     their locations, feeds of the wrong shape or dtype, unknown names, a NULL state, silence
#     (nothing on stdout or stderr), running a saved model, a create / compile / run / free loop
#     that leaks nothing, and every allocation failing in turn;
#   test_api_data: training from a host program (pd_state_set_dataset, host("NAME") readers): the
#     cost falls, the weights equal those of the same script on .npy files with the same values
#     and seed, eval and validation splits, copies and replacement, every bad argument, an unknown
#     name at the reader, allocation failures;
#   test_api_train: pd_state_train: a script's cost trained with train's options as name, value
#     pairs (the cost falls, the weights equal the script's own train(...) bit for bit, a second
#     call goes on), every bad option, allocation failures;
#   test_api_images: pd_state_feed_images: PNG files into a saved model's image input, read as
#     the images reader read them (predict's output, bit for bit), and its errors;
#   test_alloc_sweep: every allocation failing in turn, every k, through the library: a script
#     that trains from a host data set, evaluates, saves and loads, then its saved model run;
#     `make check-alloc` sweeps every target it has (tests/api/alloc/NAME.sweep, one test each:
#     checkpoint and resume, images and categorical CSV, PaddlePaddle's cnn_bn, the saved images
#     model fed PNG files, train's saved model fine-tuned twice and saved, where a failed
#     training call must leave the model as it was), its own test-suite log
#     check-alloc.log (.ci/run, sanitizer build);
#   install.sh: `make install` of the library into a temporary DESTDIR, then: it exports exactly
#     the functions pdlang.h declares; pdlang.h compiles alone (C99, C++); examples/embed builds
#     against the installed library with pkg-config and classifies a data set made up by the test
#     (mkidx.pl) with a model that `pdlang run` trains on it;
#   symbols.sh: every external symbol of the convenience library starts with pd_;
#   install_prefix.sh: the pdlang program and the stdlib installed into a temporary DESTDIR: the
#     installed program imports the installed stdlib (found beside it at run time, whatever
#     prefix it was built for), not the build tree's.
check_PROGRAMS += tests/api/test_api tests/api/test_api_data tests/api/test_alloc_sweep \
	tests/api/test_api_images tests/api/test_api_train tests/api/test_api_finetune
TESTS += tests/api/test_api tests/api/test_api_data tests/api/test_alloc_sweep \
	tests/api/test_api_images tests/api/test_api_train tests/api/test_api_finetune tests/api/install.sh \
	tests/api/symbols.sh \
	tests/api/install_prefix.sh
EXTRA_DIST += tests/api/install.sh tests/api/symbols.sh tests/api/install_prefix.sh \
	tests/api/mkidx.pl tests/api/train_common.h
# What install.sh and install_prefix.sh need to know about this build.
AM_TESTS_ENVIRONMENT += PD_MAKE='$(MAKE)' PD_CC='$(CC)' \
	PD_SAN_CFLAGS='$(PD_SAN_CFLAGS)' PD_LIBDIR='$(libdir)' PD_INCLUDEDIR='$(includedir)' \
	PD_PKGCONFIGDIR='$(pkgconfigdir)' PD_BINDIR='$(bindir)' PD_STDLIBDIR='$(stdlibdir)'; \
	export PD_MAKE PD_CC PD_SAN_CFLAGS PD_LIBDIR PD_INCLUDEDIR PD_PKGCONFIGDIR PD_BINDIR \
	PD_STDLIBDIR;

# make check-alloc: every k of every target of test_alloc_sweep, as tests of their own.
ALLOC_SWEEPS = tests/api/alloc/train.sweep tests/api/alloc/saved_train.sweep \
	tests/api/alloc/checkpoint.sweep tests/api/alloc/images.sweep tests/api/alloc/paddle.sweep \
	tests/api/alloc/saved.sweep tests/api/alloc/finetune.sweep
EXTRA_DIST += $(ALLOC_SWEEPS)
.PHONY: check-alloc
check-alloc: tests/api/test_alloc_sweep$(EXEEXT)
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(ALLOC_SWEEPS)' TEST_SUITE_LOG=check-alloc.log
