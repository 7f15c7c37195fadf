# bench/local.mk -- build fragment for bench/ (included by the top Makefile.am).
