# tests/image.mk -- the images reader (vm/reader/reader_image.c, image_decode.c):
#   tests/vm/test_image: PNG and JPEG decoding (files written with libpng and libjpeg), channel
#     conversion, the bilinear resize, normalisation, class folders, every error, allocation
#     failures, and the seeded augmentations through the batcher.
check_PROGRAMS += tests/vm/test_image
tests_vm_test_image_SOURCES = tests/vm/test_image.c tests/vm/image_write.h
tests_vm_test_image_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_image
# tests/vm/make_shapes: the image folder of examples/images.pd (a generator, also for users).
check_PROGRAMS += tests/vm/make_shapes
tests_vm_make_shapes_SOURCES = tests/vm/make_shapes.c tests/vm/image_write.h
tests_vm_make_shapes_LDADD = $(PNG_LIBS) $(JPEG_LIBS)
#   tests/run/images.sh: examples/images.pd trains on the folder make_shapes writes and learns;
#     a seed gives the same losses; bad folders and files are errors at the reader's line.
TESTS += tests/run/images.sh
EXTRA_DIST += tests/run/images.sh examples/images.pd
