/* inplace_check.c -- the gradient sums made in a var's own storage, and the buffers the
 * communicator holds until it packs them (vm/ops/collective.c, vm/run/comm.h), run by
 * tests/mpi/inplace.sh under mpirun with 2 ranks and buckets of 1 KiB. A var of n fp32 holds
 * (rank + 1) (i + 1) on each rank, so that its sum is 3 (i + 1): G (512, 2 KiB) is a bucket by
 * itself, summed in place while the ops after it run; H (128, half a bucket) and S (16) are the
 * last bucket, H summed in its own storage and S packed, at c_sync_comm_stream. Checked, for G
 * alone and for H with S: the sums land in the vars' own storage, which the communicator then
 * no longer holds; a var written while its sum is in flight (or its buffer held) gets the sum
 * of the values it had at c_allreduce_sum; storage shared with another var is never written
 * through (the other var keeps its values); use_calc_stream = true, on storage of its own and
 * shared. Rank 0 prints TAP; every rank exits non-zero on a failure. */
#include "config.h"

#include <stdio.h>

#include "tests/vm/ops/runop.h"
#include "tests/tap.h"
#include "vm/run/comm.h"

#define N 512   /* G: a bucket by itself */
#define NH 128  /* H: the last bucket's large gradient */
#define NS 16   /* S: packed with H */

static float mine[N];

/* Var `name` of n fp32 holding (rank + 1) (i + 1). */
static void set_var(rt *r, const char *name, int n) {
  int me = pd_comm_rank();
  char shape[16];
  snprintf(shape, sizeof shape, "[%d]", n);
  for (int i = 0; i < n; i++) mine[i] = (float)((me + 1) * (i + 1));
  rt_in_f32(r, name, shape, mine);
}

/* t holds the sum 3 (i + 1) over 2 ranks. */
static bool summed(const pd_tensor *t, int n) {
  if (!t || t->dtype != PD_FP32 || pd_tensor_numel(t) != n) return false;
  for (int i = 0; i < n; i++)
    if (PD_TENSOR_F32(t)[i] != (float)(3 * (i + 1))) return false;
  return true;
}

static pd_op_desc *allreduce(rt *r, const char *var, bool now) {
  char io[8];
  snprintf(io, sizeof io, "X=%s", var);
  char out[8];
  snprintf(out, sizeof out, "Out=%s", var);
  pd_op_desc *op = rt_op(r, "c_allreduce_sum", io, out);
  if (pd_op_set_attr_bool(op, "use_calc_stream", now)) bail("out of memory");
  return op;
}

/* The vars of a case: G alone, or H then S (the last bucket). */
typedef struct { const char *name, *vars[2]; int n[2], nv; } kase;
static const kase cases[] = {{"G alone", {"G"}, {N}, 1}, {"H with S", {"H", "S"}, {NH, NS}, 2}};

static void set_case(rt *r, const kase *c) {
  for (int v = 0; v < c->nv; v++) set_var(r, c->vars[v], c->n[v]);
}

static void allreduce_case(rt *r, const kase *c) {
  for (int v = 0; v < c->nv; v++) allreduce(r, c->vars[v], false);
}

static void sync_op(rt *r, const kase *c) {
  if (c->nv == 1) rt_op(r, "c_sync_comm_stream", "X=G", "Out=G");
  else rt_op(r, "c_sync_comm_stream", "X=H,S", "Out=H,S");
}

static bool case_summed(rt *r, const kase *c) {
  bool all = true;
  for (int v = 0; v < c->nv; v++) all = all && summed(rt_get(r, c->vars[v]), c->n[v]);
  return all;
}

static void test_in_place(const kase *c) {
  rt r;
  rt_init(&r);
  set_case(&r, c);
  const void *before = pd_tensor_data(rt_get(&r, c->vars[0]));
  allreduce_case(&r, c);
  sync_op(&r, c);
  if (rt_ok(&r, "c_allreduce_sum + c_sync_comm_stream")) {
    const pd_tensor *g = rt_get(&r, c->vars[0]);
    ok(case_summed(&r, c), "%s: the vars hold the sums over the ranks", c->name);
    ok(g && pd_tensor_data(g) == before && g->storage->refs == 1,
       "%s: summed in %s's own storage, which the communicator no longer holds", c->name,
       c->vars[0]);
    const pd_tensor *last = rt_get(&r, c->vars[c->nv - 1]);
    ok(last && last->storage->refs == 1, "%s: the communicator holds no var", c->name);
  }
  rt_free(&r);
}

/* Each var written by fill_constant after its c_allreduce_sum, before the sync. */
static void test_rewritten(const kase *c) {
  rt r;
  rt_init(&r);
  set_case(&r, c);
  allreduce_case(&r, c);
  for (int v = 0; v < c->nv; v++) {
    char out[8];
    snprintf(out, sizeof out, "Out=%s", c->vars[v]);
    pd_op_desc *fill = rt_op(&r, "fill_constant", "", out);
    if (pd_op_set_attr_longs(fill, "shape", 1, (int64_t[]){c->n[v]}) ||
        pd_op_set_attr_float(fill, "value", 7.0f))
      bail("out of memory");
  }
  sync_op(&r, c);
  if (rt_ok(&r, "vars written by fill_constant while their sums are in flight"))
    ok(case_summed(&r, c), "%s: the vars hold the sums of the values they had at "
       "c_allreduce_sum", c->name);
  rt_free(&r);
}

/* The first var's storage shared with T. */
static void test_shared(const kase *c) {
  rt r;
  rt_init(&r);
  set_case(&r, c);
  char shape[16];
  snprintf(shape, sizeof shape, "[%d]", c->n[0]);
  decl(r.f.b, "T", PD_FP32, shape);
  pd_variable *tv = pd_scope_var(r.scope, "T");
  if (!tv || pd_tensor_share(pd_var_tensor(tv), rt_get(&r, c->vars[0]))) bail("out of memory");
  set_var(&r, "U", c->n[0]);   /* what T must keep: the first var's values on this rank */
  allreduce_case(&r, c);
  sync_op(&r, c);
  if (rt_ok(&r, "a var's storage shared with T")) {
    ok(case_summed(&r, c), "%s: the vars hold the sums over the ranks", c->name);
    const pd_tensor *t = rt_get(&r, "T"), *u = rt_get(&r, "U");
    bool kept = t && u && pd_tensor_numel(t) == c->n[0];
    for (int i = 0; kept && i < c->n[0]; i++) kept = PD_TENSOR_F32(t)[i] == PD_TENSOR_F32(u)[i];
    ok(kept, "%s: T keeps its values: shared storage is not written through", c->name);
  }
  rt_free(&r);
}

/* use_calc_stream = true: the sum when the op returns; with `shared`, the var's storage is
 * shared with T, which keeps its values. */
static void test_calc_stream(const kase *c, bool shared) {
  rt r;
  rt_init(&r);
  set_var(&r, c->vars[0], c->n[0]);
  if (shared) {
    char shape[16];
    snprintf(shape, sizeof shape, "[%d]", c->n[0]);
    decl(r.f.b, "T", PD_FP32, shape);
    pd_variable *tv = pd_scope_var(r.scope, "T");
    if (!tv || pd_tensor_share(pd_var_tensor(tv), rt_get(&r, c->vars[0]))) bail("out of memory");
    set_var(&r, "U", c->n[0]);
  }
  allreduce(&r, c->vars[0], true);
  if (rt_ok(&r, "c_allreduce_sum with use_calc_stream = true")) {
    ok(summed(rt_get(&r, c->vars[0]), c->n[0]), "%s%s: %s is the sum when the op returns",
       c->name, shared ? ", shared with T" : "", c->vars[0]);
    if (shared) {
      const pd_tensor *t = rt_get(&r, "T"), *u = rt_get(&r, "U");
      bool kept = t && u && pd_tensor_numel(t) == c->n[0];
      for (int i = 0; kept && i < c->n[0]; i++)
        kept = PD_TENSOR_F32(t)[i] == PD_TENSOR_F32(u)[i];
      ok(kept, "%s, use_calc_stream = true: T keeps its values", c->name);
    }
  }
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
  if (pd_comm_grad_in_place_fits(NH, PD_FP32) || 4 * NH * sizeof(float) < pd_comm_bucket_bytes()) {
    printf("Bail out! H (%d fp32) is not a quarter of a bucket or more, less than one\n", NH);
    pd_comm_finalize();
    return 2;
  }
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    test_in_place(&cases[k]);
    test_rewritten(&cases[k]);
    test_shared(&cases[k]);
    test_calc_stream(&cases[k], false);
    test_calc_stream(&cases[k], true);
  }
  pd_comm_finalize();
  return tap_done();
}
