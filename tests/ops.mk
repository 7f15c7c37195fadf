# tests/ops.mk -- build fragment (included by the top Makefile.am).
