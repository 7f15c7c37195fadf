/* optest_loss.c -- the op-test table's rows of vm/ops/loss.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_loss[] = {
    {0},
};
