/* optest_rnn.c -- the op-test table's rows of vm/ops/rnn.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_rnn[] = {
    {0},
};
