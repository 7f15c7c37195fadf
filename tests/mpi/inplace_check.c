/* inplace_check.c -- the gradient sums made in a var's own storage (vm/ops/collective.c,
 * pd_comm_grad_start_in_place), run by tests/mpi/inplace.sh under mpirun with 2 ranks and
 * buckets of 1 KiB: a var G of 512 fp32 (2 KiB, a bucket by itself) holds (rank + 1) (i + 1) on
 * each rank, so that its sum is 3 (i + 1). Checked: the sum lands in G's own storage (no copy);
 * a var written while its sum is in flight gets the sum of the values it had at
 * c_allreduce_sum (what the copying buckets gave); storage that G shares with another var is
 * never written through (the other var keeps its values); use_calc_stream = true. Rank 0 prints
 * TAP; every rank exits non-zero on a failure. */
#include "config.h"

#include <stdio.h>

#include "tests/ops/runop.h"
#include "tests/tap.h"
#include "vm/run/comm.h"

#define N 512

static float mine[N];

static void set_g(rt *r) {
  int me = pd_comm_rank();
  for (int i = 0; i < N; i++) mine[i] = (float)((me + 1) * (i + 1));
  rt_in_f32(r, "G", "[512]", mine);
}

/* G holds the sum 3 (i + 1) over 2 ranks. */
static bool summed(const pd_tensor *g) {
  if (!g || g->dtype != PD_FP32 || pd_tensor_numel(g) != N) return false;
  for (int i = 0; i < N; i++)
    if (PD_TENSOR_F32(g)[i] != (float)(3 * (i + 1))) return false;
  return true;
}

static pd_op_desc *allreduce(rt *r, bool now) {
  pd_op_desc *op = rt_op(r, "c_allreduce_sum", "X=G", "Out=G");
  if (pd_op_set_attr_bool(op, "use_calc_stream", now)) bail("out of memory");
  return op;
}

static void sync_op(rt *r) { rt_op(r, "c_sync_comm_stream", "X=G", "Out=G"); }

static void test_in_place(void) {
  rt r;
  rt_init(&r);
  set_g(&r);
  const void *before = pd_tensor_data(rt_get(&r, "G"));
  allreduce(&r, false);
  sync_op(&r);
  if (rt_ok(&r, "c_allreduce_sum + c_sync_comm_stream")) {
    const pd_tensor *g = rt_get(&r, "G");
    ok(summed(g), "G is the sum over the ranks");
    ok(g && pd_tensor_data(g) == before && g->storage->refs == 1,
       "summed in G's own storage, which the communicator no longer holds");
  }
  rt_free(&r);
}

static void test_rewritten(void) {
  rt r;
  rt_init(&r);
  set_g(&r);
  allreduce(&r, false);
  pd_op_desc *fill = rt_op(&r, "fill_constant", "", "Out=G");
  if (pd_op_set_attr_longs(fill, "shape", 1, (int64_t[]){N}) ||
      pd_op_set_attr_float(fill, "value", 7.0f))
    bail("out of memory");
  sync_op(&r);
  if (rt_ok(&r, "G written by fill_constant while its sum is in flight"))
    ok(summed(rt_get(&r, "G")), "G is the sum of the values it had at c_allreduce_sum");
  rt_free(&r);
}

static void test_shared(void) {
  rt r;
  rt_init(&r);
  set_g(&r);
  decl(r.f.b, "T", PD_FP32, "[512]");
  pd_variable *tv = pd_scope_var(r.scope, "T");
  if (!tv || pd_tensor_share(pd_var_tensor(tv), rt_get(&r, "G"))) bail("out of memory");
  allreduce(&r, false);
  sync_op(&r);
  if (rt_ok(&r, "G's storage shared with T")) {
    ok(summed(rt_get(&r, "G")), "G is the sum over the ranks");
    const pd_tensor *t = rt_get(&r, "T");
    bool kept = t && pd_tensor_numel(t) == N;
    for (int i = 0; kept && i < N; i++) kept = PD_TENSOR_F32(t)[i] == mine[i];
    ok(kept, "T keeps its values: shared storage is not written through");
  }
  rt_free(&r);
}

static void test_calc_stream(void) {
  rt r;
  rt_init(&r);
  set_g(&r);
  allreduce(&r, true);
  if (rt_ok(&r, "c_allreduce_sum with use_calc_stream = true"))
    ok(summed(rt_get(&r, "G")), "G is the sum when the op returns");
  rt_free(&r);
}

int main(int argc, char **argv) {
  pd_error err = {0};
  if (pd_comm_init(&argc, &argv, &err) || pd_comm_size() != 2) {
    fprintf(stderr, "inplace_check: run it under mpirun -np 2 (%s)\n",
            err.msg ? err.msg : "not 2 ranks");
    pd_error_clear(&err);
    pd_comm_finalize();
    return 2;
  }
  if (pd_comm_rank() != 0 && !freopen("/dev/null", "w", stdout)) return 2;
  pd_k_init();
  if (!pd_comm_grad_in_place_fits(N, PD_FP32)) {
    printf("Bail out! 2 KiB is not summed in place: run with PDLANG_MPI_BUCKET_KB=1\n");
    pd_comm_finalize();
    return 2;
  }
  test_in_place();
  test_rewritten();
  test_shared();
  test_calc_stream();
  pd_comm_finalize();
  return tap_done();
}
