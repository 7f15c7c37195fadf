/* optest_collective.c -- the op-test table's rows of vm/ops/collective.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_collective[] = {
    {0},
};
