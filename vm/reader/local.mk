# vm/reader/local.mk -- the data readers: in-memory datasets from IDX (MNIST), CSV, .npy and text
# files (fixed windows, or one sequence per line), and the batcher (shuffling, partial batches,
# sequence fields with their LoD, a prefetch thread).
libpdlang_internal_la_SOURCES += vm/reader/reader.h vm/reader/reader_int.h vm/reader/reader.c \
	vm/reader/reader_idx.c vm/reader/reader_csv.c vm/reader/reader_categories.c vm/reader/reader_npy.c \
	vm/reader/reader_batch.c vm/reader/reader_text.c vm/reader/reader_lines.c \
	vm/reader/npy_write.c
# Validation splits of a dataset (reader_split.c).
libpdlang_internal_la_SOURCES += vm/reader/reader_split.c
# Folders of PNG and JPEG images (reader_image.c), decoded by libpng and libjpeg when configure
# finds them (image_decode.c).
libpdlang_internal_la_SOURCES += vm/reader/image.h vm/reader/image_decode.c \
	vm/reader/reader_image.c
# A model's image preprocessing, saved beside it for exec and the C library (image_prep.c).
libpdlang_internal_la_SOURCES += vm/reader/image_prep.c
AM_CPPFLAGS += $(PNG_CFLAGS) $(JPEG_CFLAGS)
PD_LIBS += $(PNG_LIBS) $(JPEG_LIBS)
