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
    /* A while loop of three turns carrying s, which depends on both parameters: s = tanh(s w) +
     * s / 2 from s = x. By Python:
     *   s, w = 0.75, 1.5
     *   for i in range(3):
     *       s = math.tanh(s * w) + s * 0.5
     *   s * s */
    {.op = "while", .what = "three turns carrying a value",
     .script = "x = param([1], init = 0.75, name = \"x\")\n"
               "w = param([1], init = 1.5, name = \"w\")\n"
               "i = var(0)\n"
               "s = x\n"
               "while (i < 3) {\n"
               "    s = tanh(s * w) + s * 0.5\n"
               "    i = i + 1\n"
               "}\n"
               "cost = mean(s * s)\n",
     .cost = "cost", .nparams = 2, .want = (const double[]){3.0572939937639214}, .nwant = 1},
    /* An if/else over the rows of a minibatch: split_lod_tensor sends the rows with x > 2 (rows
     * 0 and 2 of x = s [3, 1, 4, 2]) to the true block and the others to the false one, each a
     * conditional_block; merge_lod_tensor puts y's rows back in x's order (weighed by x, so
     * that the order counts). By Python:
     *   s, w = 0.75, 0.5
     *   xs = [v * s for v in [3, 1, 4, 2]]
     *   ys = [x * w if x > 2 else math.tanh(x + w) for x in xs]
     *   sum(y * x for y, x in zip(ys, xs)) / 4 */
    {.op = "split_lod_tensor", .what = "if/else over rows",
     .script = "x = minibatch([3, 1, 4, 2]) * param([1], init = 0.75, name = \"s\")\n"
               "w = param([1], init = 0.5, name = \"w\")\n"
               "if (x > 2) {\n"
               "    y = x * w\n"
               "} else {\n"
               "    y = tanh(x + w)\n"
               "}\n"
               "cost = mean(y * x)\n",
     .covers = "split_lod_tensor conditional_block merge_lod_tensor",
     .cost = "cost", .nparams = 2, .want = (const double[]){2.278376025020465}, .nwant = 1},
    {0},
};
