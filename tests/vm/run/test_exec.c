/* test_exec.c -- the executor (vm/run/exec.h): the scope rules of a run (temporaries in a run scope
 * that goes away, persistable vars in the global scope), feeds and fetches and their errors,
 * errors at an op's location, PDLANG_CHECK_NAN_INF, interruption, kept sub-block scopes, and no
 * growth over many runs. Values are checked against numbers computed here. */
#include <math.h>
#include <stdlib.h>

#include "tests/vm/ops/fixture.h"
#include "vm/run/exec.h"

/* A program: y = scale(x, 2, bias 1); w (persistable) = fill_constant 3; z = y * w. */
static void build(fx *f) {
  fx_init(f);
  decl(f->b, "x", PD_FP32, "[-1, 3]");
  pd_var_desc *w = decl(f->b, "w", PD_FP32, "[1]");
  w->persistable = true;
  pd_op_desc *op = add_op(f, "scale", "X=x", "Out=y");
  pd_op_set_attr_float(op, "scale", 2);
  pd_op_set_attr_float(op, "bias", 1);
  if (prep(f, op)) bail("prep scale");
  op = add_op(f, "fill_constant", NULL, "Out=w");
  int64_t one = 1;
  pd_op_set_attr_longs(op, "shape", 1, &one);
  pd_op_set_attr_float(op, "value", 3);
  if (prep(f, op)) bail("prep fill");
  op = add_op(f, "elementwise_mul", "X=y Y=w", "Out=z");
  if (prep(f, op)) bail("prep mul");
}

static void test_run_and_scopes(void) {
  fx f;
  build(&f);
  pd_exec *ex;
  pd_error err = {0};
  ok(pd_exec_new(f.p, NULL, &ex, &err) == PD_OK, "prepare");
  pd_scope *global = pd_scope_new(NULL);
  pd_tensor x, z;
  pd_tensor_init(&x);
  pd_tensor_init(&z);
  pd_tensor_set_data(&x, PD_FP32, 2, (int64_t[]){2, 3}, (float[]){0, 1, 2, 3, 4, 5});
  pd_exec_feed feed = {"x", &x};
  pd_exec_fetch fetch = {"z", &z};
  pd_exec_io io = {1, &feed, 1, &fetch};
  pd_status st = pd_exec_run(ex, global, &io, NULL, &err);
  ok(st == PD_OK, "run: %s", err.msg ? err.msg : "ok");
  bool same = z.ndims == 2 && z.dims[0] == 2 && z.dims[1] == 3;
  for (int i = 0; same && i < 6; i++) same = PD_TENSOR_F32(&z)[i] == (2.0f * i + 1) * 3;
  ok(same, "z = (2x + 1) * 3");
  ok(pd_scope_find_local_var(global, "w") != NULL, "the persistable var lives in the global scope");
  ok(pd_scope_find_local_var(global, "y") == NULL && pd_scope_find_local_var(global, "x") == NULL,
     "temporaries and feeds do not");
  is_int(pd_scope_num_kids(global), 0, "the run scope is gone after the run");
  /* Keep the run scope. */
  pd_scope *kept = NULL;
  st = pd_exec_run(ex, global, &io, &kept, &err);
  ok(st == PD_OK && kept && pd_scope_parent(kept) == global, "keep: the run scope is handed over");
  pd_variable *yv = kept ? pd_scope_find_local_var(kept, "y") : NULL;
  ok(yv && yv->type == PD_VAR_LOD_TENSOR && PD_TENSOR_F32(&yv->u.tensor)[5] == 11.0f,
     "keep: temporaries are in it");
  pd_scope_free(kept);
  /* Many runs: nothing accumulates. */
  for (int i = 0; i < 2000 && st == PD_OK; i++) st = pd_exec_run(ex, global, &io, NULL, &err);
  ok(st == PD_OK && pd_scope_num_kids(global) == 0 && pd_scope_num_vars(global) == 1,
     "2000 runs leave only the persistable var");
  ok(pd_exec_ops_run(ex) == 3u * 2002u, "every run ran the 3 ops (%llu)",
     (unsigned long long)pd_exec_ops_run(ex));
  pd_tensor_release(&x);
  pd_tensor_release(&z);
  pd_scope_free(global);
  pd_exec_free(ex);
  pd_error_clear(&err);
  fx_free(&f);
}

static void expect_err(pd_status st, pd_status want, const pd_error *err, const char *part,
                       const char *what) {
  bool pass = st == want && err->msg && strstr(err->msg, part);
  if (!ok(pass, "%s", what))
    printf("#   %s: %s\n#   want ...%s...\n", pd_status_str(st), err->msg ? err->msg : "", part);
}

static void test_feed_errors(void) {
  fx f;
  build(&f);
  pd_exec *ex;
  pd_error err = {0};
  pd_exec_new(f.p, NULL, &ex, &err);
  pd_scope *global = pd_scope_new(NULL);
  pd_tensor x;
  pd_tensor_init(&x);
  pd_exec_feed feed = {"x", &x};
  pd_exec_io io = {1, &feed, 0, NULL};
  pd_tensor_set_data(&x, PD_FP32, 2, (int64_t[]){2, 4}, (float[8]){0});
  expect_err(pd_exec_run(ex, global, &io, NULL, &err), PD_ESHAPE, &err,
             "cannot feed 'x': it is declared float32 [-1, 3], the value is float32 [2, 4]",
             "a feed of the wrong shape names both shapes");
  pd_tensor_set_data(&x, PD_FP64, 2, (int64_t[]){2, 3}, (double[6]){0});
  expect_err(pd_exec_run(ex, global, &io, NULL, &err), PD_ESHAPE, &err, "float64 [2, 3]",
             "a feed of the wrong dtype names it");
  feed.name = "nope";
  expect_err(pd_exec_run(ex, global, &io, NULL, &err), PD_ENOTFOUND, &err, "no such variable",
             "a feed of an unknown var");
  /* No feed at all: the op reading x fails at its location. */
  pd_error_clear(&err);
  pd_status st = pd_exec_run(ex, global, NULL, NULL, &err);
  expect_err(st, PD_ERUNTIME, &err, "scale: input X (var 'x') has no value",
             "an input never computed is an error at the op");
  ok(err.loc.line == 3 && err.loc.col == 7 && strcmp(err.loc.file, "t.pd") == 0,
     "... at the op's source location");
  pd_exec_fetch fetch = {"q", &x};
  pd_tensor_set_data(&x, PD_FP32, 2, (int64_t[]){1, 3}, (float[3]){0});
  feed.name = "x";
  pd_exec_io io2 = {1, &feed, 1, &fetch};
  expect_err(pd_exec_run(ex, global, &io2, NULL, &err), PD_ENOTFOUND, &err, "cannot fetch 'q'",
             "fetching a var the run did not make");
  is_int(pd_scope_num_kids(global), 0, "failed runs leave no scope behind");
  pd_tensor_release(&x);
  pd_scope_free(global);
  pd_exec_free(ex);
  pd_error_clear(&err);
  fx_free(&f);
}

static void test_prepare_errors(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "a", PD_FP32, "[1]");
  pd_op_desc *op = add_op(&f, "elementwise_ad", "X=a Y=a", "Out=b");
  (void)op;
  pd_exec *ex = NULL;
  pd_error err = {0};
  expect_err(pd_exec_new(f.p, NULL, &ex, &err), PD_EUNSUPPORTED, &err,
             "unknown op type 'elementwise_ad' (did you mean elementwise_add?)",
             "an unknown op type is found when preparing, with a suggestion");
  ok(ex == NULL && err.loc.line == 3, "... at the op, and no executor");
  pd_error_clear(&err);
  fx_free(&f);
}

static void test_nan_check_and_interrupt(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "a", PD_FP32, "[2]");
  pd_op_desc *op = add_op(&f, "log", "X=a", "Out=b");
  prep(&f, op);
  op = add_op(&f, "scale", "X=b", "Out=c");
  prep(&f, op);
  pd_tensor a;
  pd_tensor_init(&a);
  pd_tensor_set_data(&a, PD_FP32, 1, (int64_t[]){2}, (float[]){1, -1});
  pd_exec_feed feed = {"a", &a};
  pd_exec_io io = {1, &feed, 0, NULL};
  pd_scope *global = pd_scope_new(NULL);
  pd_error err = {0};
  pd_exec *ex;
  pd_exec_new(f.p, NULL, &ex, &err);
  ok(pd_exec_run(ex, global, &io, NULL, &err) == PD_OK, "without the check a NaN goes through");
  pd_exec_free(ex);
  pd_exec_options o = {.check_nan_inf = true};
  pd_exec_new(f.p, &o, &ex, &err);
  expect_err(pd_exec_run(ex, global, &io, NULL, &err), PD_ERUNTIME, &err,
             "log: output Out (var 'b', shape [2]) has NaN at element 1",
             "with the check the first op making a NaN is named");
  pd_exec_free(ex);
  volatile sig_atomic_t stop = 1;
  pd_exec_options o2 = {.interrupt = &stop};
  pd_exec_new(f.p, &o2, &ex, &err);
  ok(pd_exec_run(ex, global, &io, NULL, &err) == PD_EINTR, "an interrupt stops the run");
  pd_exec_free(ex);
  pd_tensor_release(&a);
  pd_scope_free(global);
  pd_error_clear(&err);
  fx_free(&f);
}

/* conditional_block keeps the scope it ran its block in (for the backward pass); a while loop
 * keeps one per iteration. */
static void test_kept_sub_scopes(void) {
  fx f;
  fx_init(&f);
  pd_block *b0 = f.b;
  decl(b0, "c", PD_BOOL, "[1]");
  decl(b0, "v", PD_FP32, "[1]");
  pd_var_desc *sv = decl(b0, "scopes", PD_FP32, "[1]");
  sv->type = PD_VAR_STEP_SCOPES;
  pd_block *b1 = pd_program_add_block(f.p, 0);
  f.b = b1;
  decl(b1, "t", PD_FP32, "[1]");
  pd_op_desc *in = add_op(&f, "scale", "X=v", "Out=t");
  pd_op_set_attr_float(in, "scale", 5);
  prep(&f, in);
  pd_op_desc *in2 = add_op(&f, "assign", "X=t", "Out=v");
  prep(&f, in2);
  f.b = b0;
  pd_op_desc *cb = add_op(&f, "conditional_block", "Cond=c Input=v", "Out=v Scope=scopes");
  pd_op_set_attr_block(cb, "sub_block", 1);
  pd_op_set_attr_bool(cb, "is_scalar_condition", true);
  ok(prep(&f, cb) == PD_OK, "conditional_block prepares: %s", f.err.msg ? f.err.msg : "");
  pd_scope *global = pd_scope_new(NULL);
  pd_tensor c, v, out;
  pd_tensor_init(&c);
  pd_tensor_init(&v);
  pd_tensor_init(&out);
  pd_tensor_set_data(&c, PD_BOOL, 1, (int64_t[]){1}, (uint8_t[]){1});
  pd_tensor_set_data(&v, PD_FP32, 1, (int64_t[]){1}, (float[]){2});
  pd_exec_feed feeds[2] = {{"c", &c}, {"v", &v}};
  pd_exec_fetch fetch = {"v", &out};
  pd_exec_io io = {2, feeds, 1, &fetch};
  pd_error err = {0};
  pd_exec *ex;
  pd_exec_new(f.p, NULL, &ex, &err);
  pd_scope *run = NULL;
  pd_status st = pd_exec_run(ex, global, &io, &run, &err);
  ok(st == PD_OK && PD_TENSOR_F32(&out)[0] == 10.0f, "the block ran: v = 5 * 2 (%s)",
     err.msg ? err.msg : "ok");
  pd_variable *scopes = run ? pd_scope_find_local_var(run, "scopes") : NULL;
  ok(scopes && pd_var_num_step_scopes(scopes) == 1, "the block's scope is kept in Scope");
  pd_scope *inner = scopes ? pd_var_step_scope(scopes, 0) : NULL;
  pd_variable *t = inner ? pd_scope_find_local_var(inner, "t") : NULL;
  ok(t && PD_TENSOR_F32(&t->u.tensor)[0] == 10.0f && pd_scope_parent(inner) == run,
     "its local t is there, and its parent is the run scope");
  ok(inner && !pd_scope_find_local_var(inner, "v"), "the outer v was written through, not shadowed");
  pd_scope_free(run);
  /* Condition false: the block does not run, v keeps its value. */
  PD_TENSOR_BOOL(&c)[0] = 0;
  st = pd_exec_run(ex, global, &io, NULL, &err);
  ok(st == PD_OK && PD_TENSOR_F32(&out)[0] == 2.0f, "a false condition skips the block");
  pd_tensor_release(&c);
  pd_tensor_release(&v);
  pd_tensor_release(&out);
  pd_scope_free(global);
  pd_exec_free(ex);
  pd_error_clear(&err);
  fx_free(&f);
}

/* ---- The program's constants (pd_ctx_in_const) and the prepared copies fc keeps of them:
 * y = fc(x, w, b) with w a persistable var no op writes; then the same with an op writing w. */
static void fc_expect(const float *x, const float *w, const float *b, int64_t m, int64_t k,
                      int64_t n, float *want) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = b[j];
      for (int64_t q = 0; q < k; q++) acc += (double)x[i * k + q] * w[q * n + j];
      want[i * n + j] = (float)acc;
    }
}

static bool fc_matches(const pd_tensor *y, const float *want, int64_t count) {
  if (pd_tensor_numel(y) != count) return false;
  for (int64_t i = 0; i < count; i++)
    if (fabsf(PD_TENSOR_F32(y)[i] - want[i]) > 1e-4f * (1 + fabsf(want[i]))) return false;
  return true;
}

static void test_constants(void) {
  enum { M = 5, K = 40, N = 70 };
  static float xv[M * K], wv[K * N], w2[K * N], bv[N], want[M * N];
  for (int i = 0; i < M * K; i++) xv[i] = (float)((i * 37 % 19) - 9) / 9.0f;
  for (int i = 0; i < K * N; i++) wv[i] = (float)((i * 11 % 23) - 11) / 23.0f, w2[i] = -wv[i] / 2;
  for (int i = 0; i < N; i++) bv[i] = (float)i / N;
  static const float zero[N];
  /* fc with w a constant; fc with w written by the program; matmul_v2 of a constant w */
  for (int variant = 0; variant < 3; variant++) {
    int writes = variant == 1;
    bool mm = variant == 2;
    const float *bias = mm ? zero : bv;
    fx f;
    fx_init(&f);
    decl(f.b, "x", PD_FP32, "[-1, 40]");
    decl(f.b, "w", PD_FP32, "[40, 70]")->persistable = true;
    decl(f.b, "b", PD_FP32, "[70]")->persistable = true;
    pd_op_desc *op = mm ? add_op(&f, "matmul_v2", "X=x Y=w", "Out=y")
                        : add_op(&f, "fc", "Input=x W=w Bias=b", "Out=y");
    if (!mm) pd_op_set_attr_int(op, "in_num_col_dims", 1);
    if (prep(&f, op)) bail("prep fc");
    if (writes) { /* w = w * 1 after the product: w is no constant of this program */
      op = add_op(&f, "scale", "X=w", "Out=w");
      pd_op_set_attr_float(op, "scale", 1);
      if (prep(&f, op)) bail("prep scale");
    }
    pd_exec *ex = NULL;
    pd_error err = {0};
    pd_scope *global = pd_scope_new(NULL);
    pd_tensor x, y;
    pd_tensor_init(&x);
    pd_tensor_init(&y);
    pd_tensor *w = pd_var_tensor(pd_scope_var(global, "w"));
    pd_tensor *b = pd_var_tensor(pd_scope_var(global, "b"));
    pd_tensor_set_data(&x, PD_FP32, 2, (int64_t[]){M, K}, xv);
    pd_tensor_set_data(w, PD_FP32, 2, (int64_t[]){K, N}, wv);
    pd_tensor_set_data(b, PD_FP32, 1, (int64_t[]){N}, bv);
    pd_exec_feed feed = {"x", &x};
    pd_exec_fetch fetch = {"y", &y};
    pd_exec_io io = {1, &feed, 1, &fetch};
    bool good = pd_exec_new(f.p, NULL, &ex, &err) == PD_OK &&
                pd_exec_run(ex, global, &io, NULL, &err) == PD_OK;
    fc_expect(xv, wv, bias, M, K, N, want);
    good = good && fc_matches(&y, want, M * N);
    pd_k_prepared *made = *pd_tensor_prepared(w);
    /* Whether this CPU's backend keeps a copy for this product at all (fp32 on AVX-512 only):
     * asked of it directly. */
    pd_k_prepared *probe = NULL;
    static float probe_c[M * N];
    bool prepares = pd_k_cpu()->gemm_const_b &&
                    pd_k_cpu()->gemm_const_b(PD_FP32, M, N, K, xv, wv, NULL, probe_c, &probe) ==
                        PD_OK &&
                    probe;
    if (probe) probe->release(probe);
    if (writes) {
      ok(good && !made, "fc of a w that the program writes: y = x w + b, no prepared copy of w");
    } else {
      ok(good && (made != NULL) == prepares, "%s of a constant w: y = x w%s, w's prepared copy %s",
         mm ? "matmul_v2" : "fc", mm ? "" : " + b", prepares ? "made" : "not made");
      good = pd_exec_run(ex, global, &io, NULL, &err) == PD_OK && fc_matches(&y, want, M * N);
      ok(good && *pd_tensor_prepared(w) == made, "a second run reuses it");
      /* New values from outside the program (a parameter loaded, set through the library). */
      pd_tensor_set_data(w, PD_FP32, 2, (int64_t[]){K, N}, w2);
      ok(*pd_tensor_prepared(w) == NULL, "writing w drops the copy");
      fc_expect(xv, w2, bias, M, K, N, want);
      good = pd_exec_run(ex, global, &io, NULL, &err) == PD_OK && fc_matches(&y, want, M * N);
      ok(good, "the next run computes with w's new values");
      pd_tensor_fill(w, 0.5);
      for (int i = 0; i < K * N; i++) w2[i] = 0.5f;
      fc_expect(xv, w2, bias, M, K, N, want);
      good = pd_exec_run(ex, global, &io, NULL, &err) == PD_OK && fc_matches(&y, want, M * N);
      ok(good, "and after a fill, with the filled values");
    }
    if (err.msg) printf("# %s\n", err.msg);
    pd_exec_free(ex);
    pd_scope_free(global);
    pd_tensor_release(&x);
    pd_tensor_release(&y);
    pd_error_clear(&err);
    fx_free(&f);
  }
}

int main(void) {
  test_run_and_scopes();
  test_feed_errors();
  test_prepare_errors();
  test_nan_check_and_interrupt();
  test_kept_sub_scopes();
  test_constants();
  return tap_done();
}
