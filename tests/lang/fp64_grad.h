/* fp64_grad.h -- the finite-difference check of every parameter's gradient of a compiled fp64
 * program (tests/lang/fp64.h compiles it): the backward program's gradients of the cost against
 * central differences of the forward program's cost, each parameter a TAP test. The caller
 * owns everything it passes. */
#ifndef PD_TESTS_FP64_GRAD_H
#define PD_TESTS_FP64_GRAD_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/tap.h"
#include "vm/passes/backward.h"
#include "vm/run/exec.h"
#include "vm/run/scope.h"

/* What a check runs: the forward program (fex) and it with its backward pass (bex, whose
 * parameters and gradients pg lists), the scope of the parameters, the feeds, the cost's name. */
typedef struct fp64_grad_run {
  pd_exec *fex, *bex;
  pd_scope *scope;
  const pd_backward *pg;
  pd_exec_io feeds; /* nfeeds and feeds; no fetches */
  const char *cost;
  pd_error *err;
} fp64_grad_run;

/* The fp64 parameter `name` of the scope, or NULL. */
static inline pd_tensor *fp64_param(pd_scope *scope, const char *name) {
  pd_variable *v = pd_scope_find_local_var(scope, name);
  pd_tensor *t = v ? pd_var_tensor(v) : NULL;
  return t && t->dtype == PD_FP64 ? t : NULL;
}

/* The cost of one forward run; NaN (and the error as a TAP comment) when it fails. */
static inline double fp64_run_cost(const fp64_grad_run *g) {
  pd_tensor t;
  pd_tensor_init(&t);
  pd_exec_fetch f = {g->cost, &t};
  pd_exec_io io = {g->feeds.nfeeds, g->feeds.feeds, 1, &f};
  double v = NAN;
  if (pd_exec_run(g->fex, g->scope, &io, NULL, g->err) == PD_OK && t.dtype == PD_FP64)
    v = PD_TENSOR_F64(&t)[0];
  else printf("# run: %s\n", g->err->msg ? g->err->msg : "?");
  pd_tensor_release(&t);
  return v;
}

/* want parameters get gradients, and each matches central differences of the cost (step 1e-6
 * relative, to 1e-6 relative). Returns whether all of it held. */
static inline bool fp64_check_grads(const fp64_grad_run *g, const char *name, int want) {
  int n = g->pg->n;
  bool all = ok(n == want, "%s: %d parameters get gradients (want %d)", name, n, want);
  pd_tensor *gt = calloc((size_t)n + 1, sizeof *gt);
  pd_exec_fetch *f = calloc((size_t)n + 1, sizeof *f);
  if (!gt || !f) n = 0;
  for (int i = 0; i < n; i++) {
    pd_tensor_init(&gt[i]);
    f[i] = (pd_exec_fetch){g->pg->pairs[i].grad, &gt[i]};
  }
  pd_exec_io io = {g->feeds.nfeeds, g->feeds.feeds, n, f};
  pd_status st = pd_exec_run(g->bex, g->scope, &io, NULL, g->err);
  if (!ok(st == PD_OK, "%s: forward + backward runs", name)) {
    printf("#   %s\n", g->err->msg ? g->err->msg : "?");
    all = false;
  }
  for (int i = 0; st == PD_OK && i < n; i++) {
    pd_tensor *p = fp64_param(g->scope, g->pg->pairs[i].param);
    bool shaped = p && gt[i].dtype == PD_FP64 && pd_tensor_numel(p) == pd_tensor_numel(&gt[i]);
    double worst = 0, at_a = 0, at_n = 0;
    int64_t at = -1;
    for (int64_t j = 0; shaped && j < pd_tensor_numel(p); j++) {
      double *x = &PD_TENSOR_F64(p)[j], x0 = *x, h = 1e-6 * (fabs(x0) > 1 ? fabs(x0) : 1);
      *x = x0 + h;
      double lp = fp64_run_cost(g);
      *x = x0 - h;
      double lm = fp64_run_cost(g);
      *x = x0;
      double num = (lp - lm) / (2 * h), ana = PD_TENSOR_F64(&gt[i])[j];
      double rel = fabs(num - ana) / (fabs(num) > 1 ? fabs(num) : 1);
      if (!(rel <= worst)) {
        worst = rel;
        at = j;
        at_a = ana;
        at_n = num;
      }
    }
    bool pass = shaped && worst <= 1e-6;
    all = all && pass;
    if (!ok(pass, "%s: d cost / d %s matches finite differences", name, g->pg->pairs[i].param))
      printf("#   element %lld: analytic %.12g, numeric %.12g (rel %.3g)%s\n", (long long)at,
             at_a, at_n, worst, shaped ? "" : " (gradient missing or misshapen)");
  }
  for (int i = 0; i < n; i++) pd_tensor_release(&gt[i]);
  free(gt);
  free(f);
  return all;
}

#endif /* PD_TESTS_FP64_GRAD_H */
