# lang/local.mk -- build fragment for lang/ (included by the top Makefile.am).
