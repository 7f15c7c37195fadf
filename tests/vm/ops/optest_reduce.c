/* optest_reduce.c -- the op-test table's rows of vm/ops/reduce.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_reduce[] = {
    {0},
};
