# vm/local.mk -- build fragment for vm/ (included by the top Makefile.am).
