/* runop.h -- helpers for kernel tests: build one op (tests/vm/ops/fixture.h), give its inputs values,
 * run it through the real executor, and read its outputs. The op goes through pd_opdef_prepare
 * first (defaults, shape inference), and after the run every output's actual shape is checked
 * against the shape inference gave (unknown -1 dims match anything), so each kernel test is also
 * a test of the op's shape function. Header-only, like tests/tap.h.
 *
 *     rt r; rt_init(&r);
 *     rt_in_f32(&r, "x", "[2, 3]", (float[]){1, 2, 3, 4, 5, 6});
 *     rt_op(&r, "relu", "X=x", "Out=y");
 *     if (rt_run(&r) == PD_OK) { const pd_tensor *y = rt_get(&r, "y"); ... }
 *     rt_free(&r); */
#ifndef PD_TESTS_OPS_RUNOP_H
#define PD_TESTS_OPS_RUNOP_H

#include "tests/vm/ops/fixture.h"
#include "vm/run/exec.h"
#include "vm/run/scope.h"
#include "vm/run/tensor.h"

typedef struct rt {
  fx f;
  pd_scope *scope;
  pd_op_desc *op;      /* the last op added */
  uint64_t seed;       /* executor seed */
  bool no_shape_check; /* skip the inferred-vs-actual shape comparison */
  const pd_k_backend *host; /* the executor's host backend (NULL: the CPU's) */
  pd_k_place place;         /* where the executor computes (PD_K_CUDA: an open GPU) */
} rt;

/* The host backend every new rt starts with (NULL: the CPU's); a test sets it to run all its
 * ops through another one. */
static const pd_k_backend *rt_default_host __attribute__((unused));

static inline void rt_init(rt *r) {
  memset(r, 0, sizeof *r);
  r->host = rt_default_host;
  fx_init(&r->f);
  if (!(r->scope = pd_scope_new(NULL))) bail("out of memory");
}

static inline void rt_free(rt *r) {
  pd_scope_free(r->scope);
  fx_free(&r->f);
}

/* Declare var `name` in block 0 with dtype and shape (a "[2, 3]" string as in fixture.h; the
 * desc may use -1 for a batch dim via decl_shape) and give it a value in the scope: n elements
 * of data (the shape's product). Returns the scope's tensor, for setting LoD. */
static inline pd_tensor *rt_in(rt *r, const char *name, pd_dtype dt, const char *shape,
                               const void *data) {
  int64_t d[16];
  int n = parse_shape(shape, d);
  decl(r->f.b, name, dt, shape);
  pd_variable *v = pd_scope_var(r->scope, name);
  pd_tensor *t = v ? pd_var_tensor(v) : NULL;
  if (!t || pd_tensor_set_data(t, dt, n, d, data)) bail("out of memory");
  return t;
}
static inline pd_tensor *rt_in_f32(rt *r, const char *name, const char *shape, const float *d) {
  return rt_in(r, name, PD_FP32, shape, d);
}
static inline pd_tensor *rt_in_f64(rt *r, const char *name, const char *shape, const double *d) {
  return rt_in(r, name, PD_FP64, shape, d);
}
static inline pd_tensor *rt_in_i64(rt *r, const char *name, const char *shape,
                                   const int64_t *d) {
  return rt_in(r, name, PD_INT64, shape, d);
}
/* Set a one-level LoD on an input (offsets, n of them) and declare the var's lod_level 1. */
static inline void rt_lod(rt *r, const char *name, int n, const int64_t *offsets) {
  pd_variable *v = pd_scope_find_var(r->scope, name);
  pd_var_desc *vd = pd_block_find_var(r->f.b, name);
  int64_t len = n;
  if (!v || !vd || pd_tensor_set_lod(pd_var_tensor(v), 1, &offsets, &len)) bail("bad rt_lod");
  vd->lod_level = 1;
}

/* Append an op ("X=a,b Y=c" slot specs as in fixture.h); outputs are declared. */
static inline pd_op_desc *rt_op(rt *r, const char *type, const char *ins, const char *outs) {
  r->op = add_op(&r->f, type, ins, outs);
  return r->op;
}

/* Prepare every op of block 0, run it, and compare the outputs' shapes with the inferred ones.
 * The error (if any) is in r->f.err. */
static inline pd_status rt_run(rt *r) {
  pd_error_clear(&r->f.err);
  for (int i = 0; i < r->f.b->nops; i++) {
    pd_status st = pd_opdef_prepare(r->f.b->ops[i], r->f.b, &r->f.err);
    if (st) return st;
  }
  pd_exec *ex = NULL;
  pd_exec_options o = {.seed = r->seed, .host = r->host, .place = r->place};
  pd_status st = pd_exec_new(r->f.p, &o, &ex, &r->f.err);
  if (st) return st;
  st = pd_exec_run_block(ex, 0, r->scope, &r->f.err);
  pd_exec_free(ex);
  if (st || r->no_shape_check) return st;
  for (int i = 0; i < r->f.b->nops; i++) {
    const pd_op_desc *op = r->f.b->ops[i];
    for (int s = 0; s < op->noutputs; s++)
      for (int a = 0; a < op->outputs[s].nargs; a++) {
        const char *name = op->outputs[s].args[a];
        const pd_var_desc *vd = pd_block_find_var(r->f.b, name);
        pd_variable *v = pd_scope_find_var(r->scope, name);
        if (!vd || !v || v->type != PD_VAR_LOD_TENSOR || vd->ndims < 0) continue;
        const pd_tensor *t = &v->u.tensor;
        if (!pd_tensor_initialized(t)) continue;
        bool same = vd->ndims == t->ndims && vd->dtype == t->dtype;
        for (int k = 0; same && k < t->ndims; k++)
          same = vd->dims[k] < 0 || vd->dims[k] == t->dims[k];
        if (!same) {
          char got[128];
          return pd_error_set(&r->f.err, PD_ESHAPE, op->loc,
                              "%s: output %s is %s %s at run time but shape inference said %s %s",
                              op->type, name, pd_dtype_name(t->dtype),
                              pd_ctx_shape_str(t, got, sizeof got), pd_dtype_name(vd->dtype),
                              shape_of(&r->f, name));
        }
      }
  }
  return PD_OK;
}

/* The value of a var after a run (NULL when it has none), moved to the host when a GPU run left
 * it on the GPU. */
static inline const pd_tensor *rt_get(rt *r, const char *name) {
  pd_variable *v = pd_scope_find_var(r->scope, name);
  if (!v || v->type != PD_VAR_LOD_TENSOR || !pd_tensor_initialized(&v->u.tensor)) return NULL;
  if (pd_tensor_on_gpu(&v->u.tensor) && pd_tensor_to_place(&v->u.tensor, PD_K_HOST))
    bail("moving a result to the host");
  return &v->u.tensor;
}

/* One TAP line: the run succeeded (prints the error otherwise). */
#define rt_ok(r, what) rt_ok_((r), (what), __LINE__)
static inline bool rt_ok_(rt *r, const char *what, int line) {
  pd_status st = rt_run(r);
  if (!tap_ok_(st == PD_OK, __FILE__, line, "%s runs", what))
    printf("#   %s: %s\n", pd_status_str(st), r->f.err.msg ? r->f.err.msg : "(no message)");
  return st == PD_OK;
}

/* One TAP line: the run fails with status want and a message containing `part`, at the op's
 * location (t.pd:3:7, as fixture.h's add_op sets). */
#define rt_fails(r, want, part, what) rt_fails_((r), (want), (part), (what), __LINE__)
static inline void rt_fails_(rt *r, pd_status want, const char *part, const char *what,
                             int line) {
  pd_status st = rt_run(r);
  const char *msg = r->f.err.msg ? r->f.err.msg : "";
  bool pass = st == want && strstr(msg, part) && r->f.err.loc.line == 3;
  if (!tap_ok_(pass, __FILE__, line, "%s", what))
    printf("#   status %s (want %s)\n#   got  %s\n#   want ...%s...\n", pd_status_str(st),
           pd_status_str(want), msg, part);
}

/* Compare a tensor with expected values: one TAP line (the first mismatch is printed). */
#define rt_expect(t, n, want, tol, what) rt_expect_((t), (n), (want), (tol), (what), __LINE__)
static inline void rt_expect_(const pd_tensor *t, int64_t n, const double *want, double tol,
                              const char *what, int line) {
  const char *why = NULL;
  int64_t bad = -1;
  double got = 0;
  if (!t) why = "no value";
  else if (pd_tensor_numel(t) != n) why = "wrong number of elements";
  for (int64_t i = 0; !why && i < n; i++) {
    switch (t->dtype) {
      case PD_FP32: got = PD_TENSOR_F32(t)[i]; break;
      case PD_FP64: got = PD_TENSOR_F64(t)[i]; break;
      case PD_INT32: got = PD_TENSOR_I32(t)[i]; break;
      case PD_INT64: got = (double)PD_TENSOR_I64(t)[i]; break;
      case PD_BOOL: got = PD_TENSOR_BOOL(t)[i]; break;
      default: why = "unexpected dtype"; continue;
    }
    double s = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
    if (!(fabs(got - want[i]) <= tol * s) && !(isnan(got) && isnan(want[i]))) {
      bad = i;
      why = "value";
    }
  }
  if (!tap_ok_(!why, __FILE__, line, "%s", what)) {
    if (bad >= 0) printf("#   element %lld: got %.17g, want %.17g\n", (long long)bad, got, want[bad]);
    else printf("#   %s (numel %lld, want %lld)\n", why, t ? (long long)pd_tensor_numel(t) : -1LL,
                (long long)n);
  }
}

#endif /* PD_TESTS_OPS_RUNOP_H */
