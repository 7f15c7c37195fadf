/* run.c -- the actions of a script: print and assert_close, which compute values without data,
 * and the dispatch of every action (pd_runner_action, pd_runner_run_all) to these or to the
 * ones of train/train.c. The top of the runner: run.c -> train.c -> runner.c (see run_int.h). */
#include "config.h"
#include "train/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/run_int.h"
#include "train/train.h"

/* ---- print ---- */

static double elem(const pd_tensor *t, int64_t i);

static pd_status do_print(pd_runner *r, const pd_action *a, pd_error *err) {
  const char **names = pd_calloc((size_t)a->nargs + 1, sizeof *names);
  pd_tensor *vals = pd_calloc((size_t)a->nargs + 1, sizeof *vals);
  pd_status st = PD_OK;
  if (!names || !vals) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto out;
  }
  int n = 0;
  for (int i = 0; i < a->nargs; i++)
    if (a->args[i]->kind == PD_CVAL_TENSOR) names[n++] = a->args[i]->str;
  for (int i = 0; i < n; i++) pd_tensor_init(&vals[i]);
  if (n && (st = pd_runner_compute(r, n, names, vals, "print", a->loc, err))) goto release;
  const pd_cval *as_text = pd_action_opt(a, "as_text");
  bool text = as_text && as_text->kind == PD_CVAL_BOOL && as_text->b;
  pd_buf b;
  pd_buf_init(&b);
  for (int i = 0, k = 0; i < a->nargs; i++) {
    if (a->args[i]->kind == PD_CVAL_TENSOR && text) {
      /* Integer values as the characters (bytes) they code, on one line. */
      const pd_tensor *t = &vals[k++];
      for (int64_t e = 0; e < pd_tensor_numel(t); e++) {
        int64_t v = t->dtype == PD_INT64 ? PD_TENSOR_I64(t)[e]
                    : t->dtype == PD_INT32 ? PD_TENSOR_I32(t)[e]
                                           : (int64_t)elem(t, e);
        char ch = v >= 32 && v < 127 ? (char)v : v == '\n' || v == '\t' ? ' ' : '?';
        pd_buf_append(&b, &ch, 1);
      }
      pd_buf_puts(&b, "\n");
    } else if (a->args[i]->kind == PD_CVAL_TENSOR) {
      pd_tensor_print(&vals[k++], &b);
    } else {
      pd_cval_format(a->args[i], &b);
      pd_buf_puts(&b, "\n");
    }
  }
  if (b.oom) st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  else if (r->opts.out && b.len) {
    fwrite(b.data, 1, b.len, r->opts.out);
    fflush(r->opts.out);
  }
  pd_buf_free(&b);
release:
  for (int i = 0; i < n; i++) pd_tensor_release(&vals[i]);
out:
  pd_free(names);
  pd_free(vals);
  return st;
}

/* ---- assert_close ---- */

/* Flatten a compile-time number or (nested) list of numbers into vals. -1 if not numeric. */
static int64_t flatten(const pd_cval *v, double *vals, int64_t cap, int64_t at) {
  switch (v->kind) {
    case PD_CVAL_INT:
      if (at < cap) vals[at] = (double)v->i;
      return at + 1;
    case PD_CVAL_FLOAT:
      if (at < cap) vals[at] = v->f;
      return at + 1;
    case PD_CVAL_BOOL:
      if (at < cap) vals[at] = v->b;
      return at + 1;
    case PD_CVAL_LIST:
      for (int i = 0; i < v->n && at >= 0; i++) at = flatten(v->items[i], vals, cap, at);
      return at;
    default: return -1;
  }
}

static double elem(const pd_tensor *t, int64_t i) {
  switch (t->dtype) {
    case PD_FP32: return PD_TENSOR_F32(t)[i];
    case PD_FP64: return PD_TENSOR_F64(t)[i];
    case PD_INT32: return PD_TENSOR_I32(t)[i];
    case PD_INT64: return (double)PD_TENSOR_I64(t)[i];
    case PD_BOOL: return PD_TENSOR_BOOL(t)[i];
    default: return NAN;
  }
}

static pd_status do_assert_close(pd_runner *r, const pd_action *a, pd_error *err) {
  const pd_cval *want = a->args[1];
  const pd_cval *tolv = pd_action_opt(a, "tol");
  double tol = 1e-5;
  if (tolv && tolv->kind == PD_CVAL_FLOAT) tol = tolv->f;
  else if (tolv && tolv->kind == PD_CVAL_INT) tol = (double)tolv->i;
  const char *names[2] = {a->args[0]->str, want->kind == PD_CVAL_TENSOR ? want->str : NULL};
  int n = names[1] ? 2 : 1;
  pd_tensor vals[2];
  pd_tensor_init(&vals[0]);
  pd_tensor_init(&vals[1]);
  double *expect = NULL;
  pd_status st = pd_runner_compute(r, n, names, vals, "assert_close", a->loc, err);
  if (st) goto out;
  int64_t got_n = pd_tensor_numel(&vals[0]), want_n;
  if (n == 2) {
    want_n = pd_tensor_numel(&vals[1]);
  } else {
    want_n = flatten(want, NULL, 0, 0);
    if (want_n < 0) {
      st = pd_error_set(err, PD_ETYPE, a->loc,
                        "assert_close: the expected value must be a tensor, a number or a list "
                        "of numbers");
      goto out;
    }
  }
  if (got_n != want_n) {
    char sh[96];
    st = pd_error_set(err, PD_ESHAPE, a->loc,
                      "assert_close: the value has %lld elements (shape %s) but %lld are expected",
                      (long long)got_n, pd_ctx_shape_str(&vals[0], sh, sizeof sh),
                      (long long)want_n);
    goto out;
  }
  if (!(expect = pd_malloc(sizeof *expect * (size_t)(want_n + 1)))) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto out;
  }
  for (int64_t i = 0; i < want_n; i++)
    expect[i] = n == 2 ? elem(&vals[1], i) : 0;
  if (n == 1) flatten(want, expect, want_n, 0);
  for (int64_t i = 0; i < got_n; i++) {
    double g = elem(&vals[0], i), w = expect[i];
    if (!(fabs(g - w) <= tol * (1 + fabs(w)))) {
      st = pd_error_set(err, PD_ERUNTIME, a->loc,
                        "assert_close failed: element %lld is %.9g but %.9g was expected "
                        "(tolerance %g)",
                        (long long)i, g, w, tol);
      goto out;
    }
  }
out:
  pd_free(expect);
  pd_tensor_release(&vals[0]);
  pd_tensor_release(&vals[1]);
  return st;
}

/* ---- Dispatch ---- */

pd_status pd_runner_action(pd_runner *r, const pd_action *a, pd_error *err) {
  switch (a->kind) {
    case PD_ACTION_PRINT: return do_print(r, a, err);
    case PD_ACTION_ASSERT_CLOSE: return do_assert_close(r, a, err);
    case PD_ACTION_TRAIN: return pd_run_train(r, a, err);
    case PD_ACTION_EVAL: return pd_run_eval(r, a, err);
    case PD_ACTION_PREDICT: return pd_run_predict(r, a, err);
    case PD_ACTION_SAVE: return pd_run_save(r, a, err);
    case PD_ACTION_LOAD: return pd_run_load(r, a, err);
  }
  return pd_error_set(err, PD_EINVAL, a->loc, "unknown action");
}

pd_status pd_runner_run_all(pd_runner *r, pd_error *err) {
  for (int i = 0; i < r->unit->nactions; i++) {
    pd_status st = pd_runner_action(r, &r->unit->actions[i], err);
    if (st) return st;
  }
  return PD_OK;
}
