/* optest_sequence.c -- the op-test table's rows of vm/ops/sequence.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_sequence[] = {
    {0},
};
