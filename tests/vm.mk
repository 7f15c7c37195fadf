# tests/vm.mk -- build fragment (included by the top Makefile.am).
