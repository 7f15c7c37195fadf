# vm/reader.mk -- the data readers: in-memory datasets from IDX (MNIST), CSV, .npy and text files
# (fixed windows, or one sequence per line), and the batcher (shuffling, partial batches,
# sequence fields with their LoD, a prefetch thread).
libpdlang_internal_la_SOURCES += vm/reader.h vm/reader_int.h vm/reader.c vm/reader_idx.c vm/reader_csv.c \
	vm/reader_npy.c vm/reader_batch.c vm/reader_text.c vm/reader_lines.c
