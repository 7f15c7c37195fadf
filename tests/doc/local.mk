# tests/doc/local.mk -- the documentation checked against the program:
#   doc_examples.sh: every ```pd example of doc/language.md (and README.md) runs, and prints
#     exactly its ```output block (or fails with exactly its ```error block);
#   man.sh: doc/pdlang.1 renders without warnings (groff), and names every command of
#     `pdlang --help` and every PDLANG_* variable the sources read.
TESTS += tests/doc/doc_examples.sh tests/doc/man.sh
EXTRA_DIST += tests/doc/doc_examples.sh tests/doc/man.sh
