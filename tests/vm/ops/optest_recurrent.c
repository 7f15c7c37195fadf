/* optest_recurrent.c -- the op-test table's rows of vm/ops/recurrent.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_recurrent[] = {
    {0},
};
