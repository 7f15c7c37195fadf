/* optest_index.c -- the op-test table's rows of vm/ops/index.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_index[] = {
    {0},
};
