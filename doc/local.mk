# doc/local.mk -- the documentation: the manual page of the pdlang command (installed by
# `make install` into $(man1dir)) and the language reference (installed into $(docdir),
# /usr/local/share/doc/pdlang by default), whose examples tests/doc/doc_examples.sh runs
# (tests/doc/local.mk).
dist_man_MANS = doc/pdlang.1
dist_doc_DATA = doc/language.md doc/paddle.md
# The picture of training curves README.md shows (drawn by `pdlang plot`).
EXTRA_DIST += doc/training-curves.png
