/* test_kern_select.c -- select_input (vm/ops/select.c), the op PaddlePaddle's static.nn.cond
 * writes: Out is X[Mask] (int32 or int64 Mask),
 * its shape function (X's dims where they agree, -1 where they differ), its errors (a Mask out
 * of range, of a float dtype or of more than one element; X of two dtypes), and its gradient
 * (Out@GRAD to X@GRAD[Mask], zeros for the other branch) by finite differences. */
#include "config.h"

#include "tests/vm/ops/gradcheck.h"

static void test_forward(void) {
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "a", "[2, 3]", (float[]){1, 2, 3, 4, 5, 6});
  rt_in_f32(&r, "b", "[2, 3]", (float[]){-1, -2, -3, -4, -5, -6});
  rt_in(&r, "m", PD_INT32, "[1]", (int32_t[]){1});
  rt_op(&r, "select_input", "X=a,b Mask=m", "Out=o");
  if (rt_ok(&r, "select_input: Mask 1 (int32)"))
    rt_expect(rt_get(&r, "o"), 6, ((double[]){-1, -2, -3, -4, -5, -6}), 0,
              "select_input: Out is X[1]");
  rt_free(&r);

  /* Mask 0 as int64; X[0] of another shape than X[1]: Out's second dim is unknown to the shape
   * function. (A branch that did not run, so that its X has no value, is tested with
   * PaddlePaddle's cond model in tests/interop.) */
  rt_init(&r);
  rt_in_f32(&r, "a", "[2, 2]", (float[]){7, 8, 9, 10});
  rt_in_f32(&r, "b", "[2, 5]", (float[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  rt_in_i64(&r, "m", "[1]", (int64_t[]){0});
  rt_op(&r, "select_input", "X=a,b Mask=m", "Out=o");
  if (rt_ok(&r, "select_input: Mask 0 (int64), X of two shapes")) {
    rt_expect(rt_get(&r, "o"), 4, ((double[]){7, 8, 9, 10}), 0, "select_input: Out is X[0]");
    const pd_var_desc *o = pd_block_find_var(r.f.b, "o");
    ok(o && o->ndims == 2 && o->dims[0] == 2 && o->dims[1] == -1,
       "select_input: the shape function keeps the dims the branches agree on");
  }
  rt_free(&r);
}

static void test_errors(void) {
  rt r;
  rt_init(&r);
  rt_in_f32(&r, "a", "[2]", (float[]){1, 2});
  rt_in_f32(&r, "b", "[2]", (float[]){3, 4});
  rt_in(&r, "m", PD_INT32, "[1]", (int32_t[]){2});
  rt_op(&r, "select_input", "X=a,b Mask=m", "Out=o");
  rt_fails(&r, PD_EINVAL, "select_input: Mask is 2 but X has 2 vars (0..1)",
           "select_input: a Mask out of range");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "a", "[2]", (float[]){1, 2});
  rt_in_f32(&r, "m", "[1]", (float[]){0});
  rt_op(&r, "select_input", "X=a Mask=m", "Out=o");
  rt_fails(&r, PD_ETYPE, "Mask must be int32 or int64, got float32",
           "select_input: a float Mask");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "a", "[2]", (float[]){1, 2});
  rt_in(&r, "m", PD_INT32, "[2]", (int32_t[]){0, 1});
  rt_op(&r, "select_input", "X=a Mask=m", "Out=o");
  rt_fails(&r, PD_ESHAPE, "Mask must hold one element, got [2]",
           "select_input: a Mask of two elements");
  rt_free(&r);

  rt_init(&r);
  rt_in_f32(&r, "a", "[2]", (float[]){1, 2});
  rt_in_i64(&r, "b", "[2]", (int64_t[]){1, 2});
  rt_in(&r, "m", PD_INT32, "[1]", (int32_t[]){0});
  rt_op(&r, "select_input", "X=a,b Mask=m", "Out=o");
  rt_fails(&r, PD_ETYPE, "X[1] has dtype int64 but X[0] has dtype float32",
           "select_input: X of two dtypes");
  rt_free(&r);
}

static void test_grad(void) {
  for (int m = 0; m < 2; m++) {
    rt r;
    rt_init(&r);
    rt_in_f64(&r, "a", "[2, 3]", (double[]){0.5, -1.5, 2, 0.25, 3, -0.75});
    rt_in_f64(&r, "b", "[2, 3]", (double[]){1.25, 0.5, -2, 1, -0.5, 0.125});
    rt_in(&r, "m", PD_INT32, "[1]", (int32_t[]){m});
    rt_op(&r, "select_input", "X=a,b Mask=m", "Out=o");
    grad_check(&r, "X", "Out", m ? "select_input Mask 1" : "select_input Mask 0");
    rt_free(&r);
  }
}

int main(void) {
  pd_k_init();
  test_forward();
  test_errors();
  test_grad();
  return tap_done();
}
