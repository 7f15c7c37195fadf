# tests/doc/local.mk -- the documentation checked against the program:
#   doc_examples.sh: every ```pd example of doc/language.md (and README.md) runs, and prints
#     exactly its ```output block (or fails with exactly its ```error block);
#   man.sh: doc/pdlang.1 renders without warnings (groff), and names every command of
#     `pdlang --help` and every PDLANG_* variable the sources read.
#   layers.sh: HACKING.md's layers: no file includes a header of a layer above its own.
#   test_paddle_ops: doc/paddle.md's table of ops is the op registry's (with the compat facts),
#     and its table of model families names every folder of tests/interop/zoo.
#   test_train_options: the train options of doc/language.md's "### train" are train/options.h's
#     descriptors, each once with its default, and every descriptor is there.
check_PROGRAMS += tests/doc/test_paddle_ops tests/doc/test_train_options
TESTS += tests/doc/doc_examples.sh tests/doc/man.sh tests/doc/test_paddle_ops tests/doc/layers.sh \
	tests/doc/test_train_options
EXTRA_DIST += tests/doc/doc_examples.sh tests/doc/man.sh tests/doc/layers.sh tests/doc/read_doc.h
