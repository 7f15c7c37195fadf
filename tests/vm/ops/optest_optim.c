/* optest_optim.c -- the op-test table's rows of vm/ops/optim.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_optim[] = {
    {0},
};
