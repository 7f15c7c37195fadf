/* optest_loss_elem.c -- the op-test table's rows of vm/ops/loss_elem.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_loss_elem[] = {
    {0},
};
