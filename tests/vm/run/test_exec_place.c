/* test_exec_place.c -- the executor's placement rules (vm/run/exec_place.c) and the GPU place's
 * errors: an op runs on the GPU exactly when vm/oplist.h says so (GPU, and GPU_GRAD for its
 * gradient op), and has a kernel; the slots' places come from the op table; asking an
 * executor for the GPU when none is open fails cleanly. With a GPU, outputs of GPU ops are made
 * there (and tests/driver/device.sh runs whole programs there and checks their results). */
#include <stdlib.h>
#include <string.h>

#include "tests/vm/ops/fixture.h"
#include "vm/run/exec.h"
#include "vm/run/exec_place.h"

static void test_gpu_ops(void) {
  int n = 0;
  for (int i = 0; i < PD_OP_COUNT_; i++) {
    const pd_opdef *d = &pd_opdefs[i], *g = pd_opdef_grad(d);
    bool gpu = d->flags & PD_OPF_GPU, gpu_grad = d->flags & PD_OPF_GPU_GRAD;
    ok(pd_exec_gpu_op(d) == gpu, "%s %s on the GPU", d->type, gpu ? "runs" : "does not run");
    if (g)
      ok(pd_exec_gpu_op(g) == gpu_grad, "%s %s on the GPU", g->type,
         gpu_grad ? "runs" : "does not run");
    else
      ok(!gpu_grad, "%s: GPU_GRAD only on an op with a gradient op", d->type);
    if (gpu) ok(d->kernel != NULL, "GPU op '%s' has a kernel", d->type);
    if (gpu_grad && g) ok(g->kernel != NULL, "GPU op '%s' has a kernel", g->type);
    n += gpu + (gpu_grad && g);
  }
  ok(n > 40, "%d ops run on the GPU", n);
  ok(!pd_exec_gpu_op(pd_opdef_lookup("accuracy")) &&
         !pd_exec_gpu_op(pd_opdef_lookup("recurrent")) &&
         !pd_exec_gpu_op(pd_opdef_lookup("sampling_id")) && !pd_exec_gpu_op(NULL),
     "ops not marked GPU are not GPU ops");
  ok(pd_exec_gpu_op(pd_opdef_lookup("mul")) && pd_exec_gpu_op(pd_opdef_lookup("mul_grad")) &&
         pd_exec_gpu_op(pd_opdef_lookup("scale")) &&
         pd_exec_gpu_op(pd_opdef_lookup("scale_grad")) &&
         pd_exec_gpu_op(pd_opdef_lookup("assign")) &&
         pd_exec_gpu_op(pd_opdef_lookup("assign_grad")),
     "mul, scale, assign and their gradients are GPU ops");
}

/* Where slot `slot` of op `type` (input or output) must be. */
static int where(const char *type, const char *slot, bool input) {
  const pd_opdef *d = pd_opdef_lookup(type);
  const pd_slotdef *s = !d ? NULL : input ? pd_opdef_input(d, slot) : pd_opdef_output(d, slot);
  if (!s) bail("no such slot");
  return pd_exec_slot_where(s);
}

static void test_slot_rules(void) {
  /* The slots' places, as vm/oplist.h marks them (HOST, ANY), and as gradient ops derive them. */
  is_int(where("adam", "LearningRate", true), PD_WHERE_HOST, "adam's learning rate: on the host");
  is_int(where("adam", "Beta1PowOut", false), PD_WHERE_HOST, "adam's beta pows: on the host");
  is_int(where("adam", "Moment1", true), PD_WHERE_OP, "adam's moments: where it computes");
  is_int(where("clip_grad", "Min", true), PD_WHERE_HOST, "a gradient op's host inputs: the host");
  is_int(where("gather_grad", "Index", true), PD_WHERE_HOST, "gather_grad's ids: on the host");
  is_int(where("gather_grad", "Index@GRAD", false), PD_WHERE_OP,
         "the gradient of a host input is made where the op computes");
  is_int(where("shape", "Input", true), PD_WHERE_ANY, "shape reads its input where it is");
  is_int(where("shape", "Out", false), PD_WHERE_HOST, "shape writes on the host");
  is_int(where("conditional_block_grad", "Out@GRAD", true), PD_WHERE_ANY,
         "the gradient of a block's output stays where it is");
  is_int(where("conditional_block_grad", "Input@GRAD", false), PD_WHERE_ANY,
         "the gradient of a block's input stays where it is");
  is_int(where("while_grad", "StepScopes", true), PD_WHERE_ANY, "while_grad's step scopes");
  is_int(where("mul", "X", true), PD_WHERE_OP, "other slots follow their op");
  /* Every slot of every op and gradient op is one of the three. */
  int odd = 0;
  for (int k = 0; k < PD_OP_COUNT_; k++) {
    const pd_opdef *defs[2] = {&pd_opdefs[k], pd_opdef_grad(&pd_opdefs[k])};
    for (int g = 0; g < 2; g++)
      for (int io = 0; defs[g] && io < 2; io++)
        for (int s = 0; s < (io ? defs[g]->noutputs : defs[g]->ninputs); s++) {
          unsigned fl = (io ? defs[g]->outputs : defs[g]->inputs)[s].flags;
          odd += (fl & PD_SLOT_HOST) && (fl & PD_SLOT_ANY);
        }
  }
  is_int(odd, 0, "no slot is both HOST and ANY");
  ok(pd_exec_host_sub_block(pd_opdef_lookup("recurrent")) &&
         pd_exec_host_sub_block(pd_opdef_lookup("recurrent_grad")) &&
         pd_exec_host_sub_block(pd_opdef_lookup("while")) &&
         pd_exec_host_sub_block(pd_opdef_lookup("while_grad")) &&
         !pd_exec_host_sub_block(pd_opdef_lookup("conditional_block")) &&
         !pd_exec_host_sub_block(pd_opdef_lookup("conditional_block_grad")) &&
         !pd_exec_host_sub_block(NULL),
     "loops run their blocks on the host; if does not");
}

/* Without an open GPU, an executor for the GPU is refused with a message, nothing leaks. */
static void test_no_gpu(void) {
  if (pd_k_cuda_is_open()) return;
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, "[2]");
  pd_op_desc *op = add_op(&f, "scale", "X=x", "Out=y");
  if (prep(&f, op)) bail("prep scale");
  pd_exec_options o = {.place = PD_K_CUDA};
  pd_exec *ex = NULL;
  pd_error err = {0};
  is_int(pd_exec_new(f.p, &o, &ex, &err), PD_EUNSUPPORTED, "the GPU place needs an open GPU");
  ok(ex == NULL && err.msg && strstr(err.msg, "GPU"), "error: %s", err.msg ? err.msg : "(none)");
  pd_error_clear(&err);
  fx_free(&f);
}

/* With a GPU: the outputs of GPU ops are made on the GPU, also when their var has never held a
 * value (a fresh output used to be made on the host and written by a device kernel). */
static void test_gpu_outputs(void) {
  fx f;
  fx_init(&f);
  pd_op_desc *fill = add_op(&f, "fill_constant", NULL, "Out=y");
  const int64_t shape[] = {2, 3};
  if (pd_op_set_attr_longs(fill, "shape", 2, shape) || pd_op_set_attr_float(fill, "value", 1.5f))
    bail("out of memory");
  if (prep(&f, fill)) bail("prep fill_constant");
  pd_op_desc *sc = add_op(&f, "scale", "X=y", "Out=z");
  if (pd_op_set_attr_float(sc, "scale", 2.0f) || pd_op_set_attr_float(sc, "bias", 1.0f))
    bail("out of memory");
  if (prep(&f, sc)) bail("prep scale");
  pd_exec_options o = {.place = PD_K_CUDA};
  pd_exec *ex = NULL;
  pd_error err = {0};
  pd_scope *scope = pd_scope_new(NULL);
  if (!scope) bail("out of memory");
  is_int(pd_exec_new(f.p, &o, &ex, &err), PD_OK, "an executor for the GPU: %s",
         err.msg ? err.msg : "");
  if (ex) {
    is_int(pd_exec_run_block(ex, 0, scope, &err), PD_OK, "fill_constant then scale on the GPU: %s",
           err.msg ? err.msg : "");
    pd_variable *y = pd_scope_find_var(scope, "y"), *z = pd_scope_find_var(scope, "z");
    const pd_tensor *ty = y ? pd_var_tensor(y) : NULL, *tz = z ? pd_var_tensor(z) : NULL;
    ok(ty && tz && pd_tensor_on_gpu(ty) && pd_tensor_on_gpu(tz), "both outputs live on the GPU");
    pd_tensor host;
    pd_tensor_init(&host);
    bool right = tz && pd_tensor_copy_to(&host, tz, PD_K_HOST) == PD_OK && host.ndims == 2 &&
                 host.dims[0] == 2 && host.dims[1] == 3;
    for (int i = 0; right && i < 6; i++) right = PD_TENSOR_F32(&host)[i] == 4.0f;
    ok(right, "z = 2 * 1.5 + 1 everywhere, read back from the GPU");
    pd_tensor_release(&host);
  }
  pd_error_clear(&err);
  pd_exec_free(ex);
  pd_scope_free(scope);
  fx_free(&f);
}

/* Opening a GPU: a clear error where there is none; where there is one, programs run there. */
static void test_open_gpu(void) {
  pd_error e = {0};
  if (pd_k_cuda_open(0, &e) != PD_OK) {
    ok(e.msg && *e.msg, "opening a GPU here fails: %s", e.msg ? e.msg : "(none)");
    ok(pd_k_cuda() == NULL && pd_k_dev_alloc(16) == NULL, "no backend, no device memory");
  } else {
    test_gpu_outputs();
  }
  pd_error_clear(&e);
}

int main(void) {
  test_gpu_ops();
  test_slot_rules();
  test_no_gpu();
  test_open_gpu();
  return tap_done();
}
