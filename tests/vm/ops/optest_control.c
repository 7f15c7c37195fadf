/* optest_control.c -- the op-test table's rows of vm/ops/control.c (optest.h): the ops that own
 * blocks, as the language makes them, each a script whose cost is worked out by hand in its
 * comment and whose parameters' gradients are checked by finite differences. */
#include "config.h"

#include "tests/vm/ops/optest.h"

const ot_row ot_rows_control[] = {
    /* A whole-block if on one element: mean(x) = 1.8 > 1, so y = sigmoid(x) x with x = s [1, 2,
     * 3], s the fp32 0.9 (0.89999997615814209: init is a float attribute); cost = mean(y^2),
     * by Python: sum((x / (1 + exp(-x)))**2 for x in xs) / 3. */
    {.op = "conditional_block", .what = "scalar if",
     .script = "x = minibatch([1, 2, 3]) * param([1], init = 0.9, name = \"s\")\n"
               "y = x\n"
               "if (mean(x) > 1) {\n"
               "    y = sigmoid(x) * x\n"
               "}\n"
               "cost = mean(y * y)\n",
     .cost = "cost", .nparams = 1,
     .want = (const double[]){3.0653902542986704}, .nwant = 1},
    {0},
};
