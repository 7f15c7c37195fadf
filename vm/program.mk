# vm/program.mk -- build fragment (included by the top Makefile.am).
