/* optest_rnn_fused.c -- the op-test table's rows of vm/ops/rnn_fused.c (optest.h). */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_rnn_fused[] = {
    {0},
};
