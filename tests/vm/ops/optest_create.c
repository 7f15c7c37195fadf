/* optest_create.c -- the op-test table's rows of vm/ops/create.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_create[] = {
    {0},
};
