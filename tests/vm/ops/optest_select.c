/* optest_select.c -- the op-test table's rows of vm/ops/select.c (optest.h): select_input, the
 * op after the two conditional_blocks of PaddlePaddle's static.nn.cond. Out is the X var that
 * the int Mask names; its gradient goes to that var and the others get zeros, which the
 * finite-difference check of every X var confirms. */
#include "config.h"

#include <string.h>

#include "tests/vm/ops/optest.h"

/* select_input: Out = X[Mask], its dims and values. */
static void ref_select_input(ot_ref *r) {
  const ot_val *x = ot_in_at(r, "X", (int)ot_in(r, "Mask")->v[0]);
  memcpy(ot_out_like(r, "Out", x), x->v, sizeof(double) * (size_t)x->n);
}

const ot_row ot_rows_select[] = {
    /* Mask 1 (int32) of two; Mask 0 (int64); the last of three branches of other shapes (the
     * branches of a cond need not agree); one branch. */
    {.op = "select_input", .what = "Mask 1 of 2",
     .in = {{"X", "[2, 3]"}, {"X", "[2, 3]"}, {"Mask", "[1]", OT_I32, .v = (const double[]){1}}},
     .ref = ref_select_input},
    {.op = "select_input", .what = "int64 Mask 0",
     .in = {{"X", "[4]"}, {"X", "[4]"}, {"Mask", "[1]", OT_I64, .v = (const double[]){0}}},
     .ref = ref_select_input},
    {.op = "select_input", .what = "Mask 2 of 3 shapes",
     .in = {{"X", "[2, 3]"}, {"X", "[4]"}, {"X", "[3, 1]"},
            {"Mask", "[1]", OT_I32, .v = (const double[]){2}}},
     .ref = ref_select_input},
    {.op = "select_input", .what = "one branch",
     .in = {{"X", "[3, 2]"}, {"Mask", "[1]", OT_I32, .v = (const double[]){0}}},
     .ref = ref_select_input},
    {.op = "select_input", .what = "int64 branches",
     .in = {{"X", "[3]", OT_I64, -9, 9}, {"X", "[3]", OT_I64, -9, 9},
            {"Mask", "[1]", OT_I32, .v = (const double[]){1}}},
     .ref = ref_select_input, .no_grad = true},
    {0},
};
