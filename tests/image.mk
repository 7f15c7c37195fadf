# tests/image.mk -- the images reader (vm/reader/reader_image.c, image_decode.c):
#   tests/vm/test_image: PNG and JPEG decoding (files written with libpng and libjpeg), channel
#     conversion, the bilinear resize, normalisation, class folders, every error, allocation
#     failures, and the seeded augmentations through the batcher.
check_PROGRAMS += tests/vm/test_image
tests_vm_test_image_SOURCES = tests/vm/test_image.c tests/vm/image_write.h
tests_vm_test_image_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_image
