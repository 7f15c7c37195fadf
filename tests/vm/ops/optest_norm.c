/* optest_norm.c -- the op-test table's rows of vm/ops/norm.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_norm[] = {
    {0},
};
