/* optest_shape.c -- the op-test table's rows of vm/ops/shape.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_shape[] = {
    {0},
};
