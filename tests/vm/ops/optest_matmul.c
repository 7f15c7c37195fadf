/* optest_matmul.c -- the op-test table's rows of vm/ops/matmul.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_matmul[] = {
    {0},
};
