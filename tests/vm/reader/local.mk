# tests/vm/reader/local.mk -- the tests of vm/reader/:
#   test_reader: IDX, CSV and .npy loading, bad input of every kind, allocation failures, and
#     batching with and without prefetch;
#   test_reader_bytes: the unit-bytes fields (IDX images held as uint8 and converted per batch,
#     bit for bit as before);
#   test_reader_split: validation splits of a dataset (reader_split.c);
#   test_image: PNG and JPEG decoding (files written with libpng and libjpeg: image_write.h),
#     channel conversion, the bilinear resize, normalisation, class folders, every error,
#     allocation failures, and the seeded augmentations through the batcher;
#   test_image_prep: a model's preprocessing file (NAME.preprocess): round trips, every refusal
#     with its line, the normalisation rule;
#   make_shapes: the image folder of examples/images.pd (a generator, also for users;
#     tests/driver/images.sh trains on it).
VM_READER_TESTS = tests/vm/reader/test_reader tests/vm/reader/test_reader_bytes \
	tests/vm/reader/test_reader_split tests/vm/reader/test_image tests/vm/reader/test_image_prep
check_PROGRAMS += $(VM_READER_TESTS) tests/vm/reader/make_shapes
TESTS += $(VM_READER_TESTS)
EXTRA_DIST += tests/vm/reader/image_write.h
tests_vm_reader_make_shapes_LDADD = $(PNG_LIBS) $(JPEG_LIBS)
