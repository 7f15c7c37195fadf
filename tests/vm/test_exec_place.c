/* test_exec_place.c -- the executor's placement tables (vm/exec_place.c) and the GPU place's
 * errors: every op said to run on the GPU is an op of the registry, the list is sorted (it is
 * searched by bisection), every slot rule names a real slot of a real op, and asking an
 * executor for the GPU when none is open fails cleanly. With a GPU, tests/run/device.sh runs
 * programs there and checks their results. */
#include <stdlib.h>
#include <string.h>

#include "tests/ops/fixture.h"
#include "vm/exec.h"
#include "vm/exec_place.h"

static bool has_slot(const pd_slotdef *defs, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(defs[i].name, name) == 0) return true;
  return false;
}

static void test_gpu_ops(void) {
  size_t n;
  const char *const *names = pd_exec_gpu_op_names(&n);
  ok(n > 40, "%zu ops run on the GPU", n);
  for (size_t i = 0; i < n; i++) {
    const pd_opdef *d = pd_opdef_lookup(names[i]);
    ok(d != NULL && d->kernel != NULL, "GPU op '%s' is an op with a kernel", names[i]);
    if (i) ok(strcmp(names[i - 1], names[i]) < 0, "'%s' sorts after '%s'", names[i], names[i - 1]);
    ok(pd_exec_gpu_op(names[i]), "'%s' is found", names[i]);
  }
  ok(!pd_exec_gpu_op("accuracy") && !pd_exec_gpu_op("recurrent") && !pd_exec_gpu_op("zzz"),
     "ops not in the list are not GPU ops");
}

static void test_slot_rules(void) {
  size_t n;
  const pd_exec_slot_rule *r = pd_exec_slot_rules(&n);
  for (size_t i = 0; i < n; i++) {
    const pd_opdef *d = pd_opdef_lookup(r[i].op);
    bool found = d && (r[i].input ? has_slot(d->inputs, d->ninputs, r[i].slot)
                                  : has_slot(d->outputs, d->noutputs, r[i].slot));
    ok(found, "rule %zu: op '%s' has %s slot '%s'", i, r[i].op, r[i].input ? "input" : "output",
       r[i].slot);
    is_int(pd_exec_slot_where(r[i].op, r[i].slot, r[i].input), r[i].where, "rule %zu applies", i);
  }
  is_int(pd_exec_slot_where("mul", "X", true), PD_WHERE_OP, "other slots follow their op");
  ok(pd_exec_host_sub_block("recurrent") && pd_exec_host_sub_block("while_grad") &&
     !pd_exec_host_sub_block("conditional_block"),
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
  pd_error e2 = {0};
  ok(pd_k_cuda_open(0, &e2) != PD_OK && e2.msg && *e2.msg, "opening a GPU here fails: %s",
     e2.msg ? e2.msg : "(none)");
  ok(pd_k_cuda() == NULL && pd_k_dev_alloc(16) == NULL, "no backend, no device memory");
  pd_error_clear(&e2);
  fx_free(&f);
}

int main(void) {
  test_gpu_ops();
  test_slot_rules();
  test_no_gpu();
  return tap_done();
}
