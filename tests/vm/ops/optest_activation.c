/* optest_activation.c -- the op-test table's rows of vm/ops/activation.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_activation[] = {
    {0},
};
