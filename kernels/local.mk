# kernels/local.mk -- build fragment for kernels/ (included by the top Makefile.am).
