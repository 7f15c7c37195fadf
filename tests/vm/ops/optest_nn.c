/* optest_nn.c -- the op-test table's rows of vm/ops/nn.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_nn[] = {
    {0},
};
