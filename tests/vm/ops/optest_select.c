/* optest_select.c -- the op-test table's rows of vm/ops/select.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_select[] = {
    {0},
};
