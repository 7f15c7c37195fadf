/* ckpt_close.c -- the data-parallel tests' comparison of two checkpoints (tests/mpi/equiv.sh,
 * faults.sh): every var of A must be in B with the same dtype and shape and values within a
 * relative tolerance of the var's largest magnitude. Prints the worst var and exits 1 when they
 * differ, 2 on a bad file. Usage: ckpt_close A.ckpt B.ckpt [TOL]   (default 1e-5) */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "vm/ir/params.h"
#include "vm/run/scope.h"

static double at(const pd_tensor *t, int64_t i) {
  return t->dtype == PD_FP64 ? PD_TENSOR_F64(t)[i] : t->dtype == PD_FP32 ? PD_TENSOR_F32(t)[i]
         : t->dtype == PD_INT64 ? (double)PD_TENSOR_I64(t)[i] : (double)PD_TENSOR_I32(t)[i];
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ckpt_close A.ckpt B.ckpt [TOL]\n");
    return 2;
  }
  double tol = argc > 3 ? atof(argv[3]) : 1e-5;
  pd_scope *a = pd_scope_new(NULL), *b = pd_scope_new(NULL);
  pd_error err = {0};
  if (!a || !b || pd_checkpoint_load(argv[1], a, NULL, NULL, &err) ||
      pd_checkpoint_load(argv[2], b, NULL, NULL, &err)) {
    fprintf(stderr, "ckpt_close: %s\n", err.msg ? err.msg : "out of memory");
    return 2;
  }
  const char **names = NULL;
  size_t n = 0;
  if (pd_scope_var_names(a, &names, &n)) return 2;
  int rc = n ? 0 : 1;
  double worst = 0;
  const char *worst_name = "-";
  for (size_t k = 0; k < n; k++) {
    pd_variable *va = pd_scope_find_local_var(a, names[k]);
    pd_variable *vb = pd_scope_find_local_var(b, names[k]);
    const pd_tensor *ta = va ? pd_var_tensor(va) : NULL, *tb = vb ? pd_var_tensor(vb) : NULL;
    if (!ta || !tb || ta->dtype != tb->dtype || pd_tensor_numel(ta) != pd_tensor_numel(tb)) {
      fprintf(stderr, "ckpt_close: '%s' is missing or differs in dtype or size\n", names[k]);
      rc = 1;
      continue;
    }
    double big = 0, diff = 0;
    for (int64_t i = 0; i < pd_tensor_numel(ta); i++) {
      big = fmax(big, fmax(fabs(at(ta, i)), fabs(at(tb, i))));
      diff = fmax(diff, fabs(at(ta, i) - at(tb, i)));
    }
    double rel = big > 0 ? diff / big : diff;
    if (rel > worst) worst = rel, worst_name = names[k];
    if (!(rel <= tol)) rc = 1;
  }
  printf("%zu vars, largest relative difference %.3g (%s)%s\n", n, worst, worst_name,
         rc ? " -- beyond the tolerance" : "");
  pd_free(names);
  pd_scope_free(a);
  pd_scope_free(b);
  return rc;
}
