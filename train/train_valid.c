/* train_valid.c -- train's validation: after every valid_every-th epoch, or every
 * valid_every_steps-th step of the call, the cost and the metrics are evaluated on the
 * validation reader in test mode (dropout off, batch norm's running statistics, as eval does),
 * early stopping watches one of them, and keep_best keeps a copy of the parameters of the best
 * validation, restored at the end. The state (the best value, its epoch or step, the
 * validations since, whether the run stopped, the copies) lives in
 * persistable vars of the training program, so checkpoints carry it and a resumed run goes on
 * bit for bit. train/train.c calls it (train/train_int.h). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "train/train_int.h"

/* The early-stopping record, fp64 [4]: the best value, its epoch (1-based; 0: none yet; with
 * valid_every_steps its step of the call), the validations since it without a better value, and
 * 1 once early stopping ended the run. */
#define STATE_VAR "@VALID@STATE"
#define BEST_SUFFIX "@BEST"
enum { S_BEST, S_BEST_EPOCH, S_BAD, S_STOPPED, S_N };

#define MAX_METRICS 17   /* the cost and up to 16 metrics (checked when compiling) */

struct pd_valid {
  pd_runner *r;
  const pd_action *a;
  pd_averager *av;
  int n;                                /* the cost, then the metrics */
  const char *vars[MAX_METRICS];        /* borrowed from the action */
  char names[MAX_METRICS][64];          /* "loss", "accuracy", ... */
  int64_t every;                        /* valid_every (epochs) */
  int64_t steps;                        /* valid_every_steps; 0: validate by epochs */
  int64_t patience;                     /* early_stop; 0: none */
  int monitor;                          /* index into names */
  bool maximize;
  bool keep_best;
  int nparams;
  const char **params;                  /* the model's parameters (names borrowed from main) */
  double last[MAX_METRICS + 1];         /* the last validation's values (+ 1: room for the
                                         * sample count pd_averager_run sums over ranks), */
  bool validated;                       /* when the last epoch validated */
  bool improved;                        /* the last validation was the best so far */
};

int pd_valid_count(const pd_valid *v) { return v->n; }
const char *pd_valid_name(const pd_valid *v, int i) { return v->names[i]; }
const double *pd_valid_last(const pd_valid *v) {
  return v && v->validated ? v->last : NULL;
}
bool pd_valid_improved(const pd_valid *v) { return v && v->validated && v->improved; }

void pd_valid_free(pd_valid *v) {
  if (!v) return;
  pd_averager_free(v->av);
  pd_free(v->params);
  pd_free(v);
}

/* An error of the validation reader (its fields, its file) is placed at `valid`, and says so. */
static pd_status at_valid(const pd_action *a, pd_error *err, pd_status st) {
  if (!st || !err) return st;
  char *msg = err->msg;
  err->msg = NULL;
  const char *m = msg ? msg : pd_status_str(st);
  if (strncmp(m, "train: ", 7) == 0) m += 7;
  pd_error_set(err, st, pd_train_opt_loc(a, "valid"), "train: the validation reader (valid): %s",
               m);
  pd_free(msg);
  return st;
}

pd_status pd_valid_new(pd_runner *r, const pd_action *a, const char *cost, pd_valid **out,
                       pd_error *err) {
  *out = NULL;
  const pd_cval *spec = pd_action_opt(a, "valid");
  if (!spec) return PD_OK;
  pd_valid *v = pd_calloc(1, sizeof *v);
  if (!v) return pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  v->r = r;
  v->a = a;
  v->vars[v->n] = cost;
  snprintf(v->names[v->n++], sizeof v->names[0], "loss");
  const pd_cval *m = pd_action_opt(a, "metrics");
  int nm = !m ? 0 : m->kind == PD_CVAL_LIST ? m->n : 1;
  for (int i = 0; i < nm && v->n < MAX_METRICS; i++) {
    const pd_cval *t = m->kind == PD_CVAL_LIST ? m->items[i] : m;
    if (t->kind != PD_CVAL_TENSOR) continue;  /* the compiler allows tensors only */
    char base[64], name[64];
    pd_train_metric_name(t->str, base, sizeof base);
    snprintf(name, sizeof name, "%s", base);
    for (int k = 2;; k++) {  /* unique: mean, mean_2, ... */
      bool taken = false;
      for (int j = 0; j < v->n; j++) taken = taken || strcmp(v->names[j], name) == 0;
      if (!taken) break;
      snprintf(name, sizeof name, "%.50s_%d", base, k);
    }
    v->vars[v->n] = t->str;
    memcpy(v->names[v->n++], name, sizeof name);
  }
  const pd_cval *o;
  v->every = (o = pd_action_opt(a, "valid_every")) && o->kind == PD_CVAL_INT ? o->i : 1;
  v->steps = (o = pd_action_opt(a, "valid_every_steps")) && o->kind == PD_CVAL_INT ? o->i : 0;
  v->patience = (o = pd_action_opt(a, "early_stop")) && o->kind == PD_CVAL_INT ? o->i : 0;
  v->keep_best = (o = pd_action_opt(a, "keep_best")) && o->kind == PD_CVAL_BOOL && o->b;
  o = pd_action_opt(a, "monitor");
  const char *mon = o && o->kind == PD_CVAL_STRING ? o->str : "loss";
  v->monitor = -1;
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->names[i], mon) == 0) v->monitor = i;
  pd_status st = PD_OK;
  if (v->monitor < 0) {
    pd_buf b;
    pd_buf_init(&b);
    for (int i = 0; i < v->n; i++) pd_buf_printf(&b, "%s'%s'", i ? ", " : "", v->names[i]);
    st = pd_error_set(err, PD_EINVAL, pd_train_opt_loc(a, "monitor"),
                      "train: monitor = \"%s\" names no validation metric; they are %s", mon,
                      b.data ? b.data : "?");
    pd_buf_free(&b);
    goto out;
  }
  o = pd_action_opt(a, "mode");
  /* Without mode: larger is better for a name with "acc" in it (Keras's rule), else smaller. */
  v->maximize = o && o->kind == PD_CVAL_STRING ? strcmp(o->str, "max") == 0
                                               : strstr(v->names[v->monitor], "acc") != NULL;
  const pd_cval *b = pd_action_opt(a, "batch");
  st = at_valid(a, err,
                pd_averager_new(r, a, "train: the validation reader", spec,
                                b && b->kind == PD_CVAL_INT ? b->i : 64, true, v->n, v->vars,
                                &v->av, err));
out:
  if (st) pd_valid_free(v);
  else *out = v;
  return st;
}

pd_averager *pd_valid_averager(pd_valid *v) { return v->av; }

void pd_valid_describe(const pd_valid *v, pd_buf *b) {
  pd_buf_puts(b, "\nvalidation=");
  pd_cval_format(pd_action_opt(v->a, "valid"), b);
  for (int i = 1; i < v->n; i++) pd_buf_printf(b, "%s%s", i == 1 ? ", metrics " : " ", v->vars[i]);
  if (v->steps) pd_buf_printf(b, ", every %lld steps", (long long)v->steps);
  else pd_buf_printf(b, ", every %lld", (long long)v->every);
  if (v->patience)
    pd_buf_printf(b, ", early_stop %lld on %s (%s)", (long long)v->patience,
                  v->names[v->monitor], v->maximize ? "max" : "min");
  if (v->keep_best)
    pd_buf_printf(b, ", keep_best on %s (%s)", v->names[v->monitor], v->maximize ? "max" : "min");
}

static pd_tensor *global_tensor(pd_runner *r, const char *name) {
  pd_variable *gv = pd_scope_find_local_var(pd_runner_scope(r), name);
  return gv ? pd_var_tensor(gv) : NULL;
}

/* The record, read from (get) or written to (put) the global scope. */
static pd_status state_io(pd_valid *v, double *s, bool put) {
  pd_tensor *t = global_tensor(v->r, STATE_VAR);
  if (!t || !pd_tensor_initialized(t) || t->dtype != PD_FP64 || pd_tensor_numel(t) != S_N)
    return PD_ERUNTIME;
  void *d = pd_tensor_data(t);
  size_t nb = sizeof *s * S_N;
  return put ? pd_mem_copy(d, t->place, s, PD_K_HOST, nb)
             : pd_mem_copy(s, PD_K_HOST, d, t->place, nb);
}

static pd_status declare_var(pd_program *p, const char *name, pd_dtype dt, int nd,
                             const int64_t *dims) {
  pd_var_desc *d = pd_block_var(p->blocks[0], name);
  if (!d || pd_var_set_shape(d, nd, dims)) return PD_ENOMEM;
  d->type = PD_VAR_LOD_TENSOR;
  d->dtype = dt;
  d->persistable = true;
  d->stop_gradient = true;
  return PD_OK;
}

/* The copy of each parameter (src -> NAME@BEST with to_best, else back). */
static pd_status copy_params(pd_valid *v, bool to_best) {
  char name[512];
  for (int i = 0; i < v->nparams; i++) {
    snprintf(name, sizeof name, "%s%s", v->params[i], BEST_SUFFIX);
    pd_tensor *p = global_tensor(v->r, v->params[i]);
    pd_variable *bv = pd_scope_var(pd_runner_scope(v->r), name);
    pd_tensor *b = bv ? pd_var_tensor(bv) : NULL;
    if (!p || !b) return PD_ENOMEM;
    pd_status st = to_best ? pd_tensor_copy(b, p) : pd_tensor_copy(p, b);
    if (st) return st;
  }
  return PD_OK;
}

pd_status pd_valid_declare(pd_valid *v, pd_program *p, pd_error *err) {
  pd_loc loc = v->a->loc;
  int64_t n4 = S_N;
  if (declare_var(p, STATE_VAR, PD_FP64, 1, &n4))
    return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  pd_variable *sv = pd_scope_var(pd_runner_scope(v->r), STATE_VAR);
  pd_tensor *t = sv ? pd_var_tensor(sv) : NULL;
  if (!t || pd_tensor_resize(t, PD_FP64, 1, &n4))
    return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  double s[S_N] = {[S_BEST] = v->maximize ? -INFINITY : INFINITY};
  if (state_io(v, s, true)) return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  if (!v->keep_best) return PD_OK;
  const pd_program *main = pd_runner_unit(v->r)->main;
  pd_free(v->params);
  if ((v->nparams = pd_train_persistables(v->r, main, &v->params)) < 0) {
    v->params = NULL;
    v->nparams = 0;
    return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  }
  char name[512];
  for (int i = 0; i < v->nparams; i++) {
    const pd_var_desc *d = pd_block_find_var_local(main->blocks[0], v->params[i]);
    if (strlen(v->params[i]) + sizeof BEST_SUFFIX > sizeof name)
      return pd_error_set(err, PD_EUNSUPPORTED, loc, "keep_best: the parameter name '%.40s...' "
                          "is too long", v->params[i]);
    snprintf(name, sizeof name, "%s%s", v->params[i], BEST_SUFFIX);
    if (!d || declare_var(p, name, d->dtype, d->ndims, d->dims))
      return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  }
  if (copy_params(v, true)) return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  return PD_OK;
}

bool pd_valid_stopped(const pd_valid *v) {
  double s[S_N];
  return v && !state_io((pd_valid *)v, s, false) && s[S_STOPPED] != 0;
}

/* One validation, after epoch or step `at` (1-based; its unit: v->steps ? step : epoch). */
static pd_status validate(pd_valid *v, int64_t at, pd_buf *line, pd_buf *line2, bool *stop,
                          double *seconds, pd_error *err) {
  const char *unit = v->steps ? "step" : "epoch";
  double t0 = pd_train_now(), *means = v->last;
  int64_t samples;
  pd_status st = pd_averager_run(v->av, means, &samples, err);
  *seconds = pd_train_now() - t0;
  if (st) return st;
  v->validated = true;
  for (int i = 0; i < v->n; i++)
    pd_buf_printf(line, ", valid %s %.4f", v->names[i], means[i]);
  double s[S_N];
  if (state_io(v, s, false)) return pd_error_set(err, PD_ERUNTIME, v->a->loc,
                                                 "train: the validation's record is missing");
  double x = means[v->monitor];
  bool better = v->maximize ? x > s[S_BEST] : x < s[S_BEST];
  v->improved = better;
  if (better) {
    s[S_BEST] = x;
    s[S_BEST_EPOCH] = (double)at;
    s[S_BAD] = 0;
    if (v->keep_best && (st = copy_params(v, true)))
      return pd_error_set(err, st, v->a->loc, "keep_best: cannot copy the parameters");
  } else {
    s[S_BAD] += 1;
    if (v->patience && s[S_BAD] >= (double)v->patience) {
      s[S_STOPPED] = 1;
      *stop = true;
      pd_buf_printf(line2, "early stop: valid %s has not %s for %lld validation%s (best %.4f "
                    "at %s %lld)", v->names[v->monitor], v->maximize ? "risen" : "fallen",
                    (long long)v->patience, v->patience == 1 ? "" : "s", s[S_BEST], unit,
                    (long long)s[S_BEST_EPOCH]);
    }
  }
  if (state_io(v, s, true)) return pd_error_set(err, PD_ERUNTIME, v->a->loc,
                                                "train: the validation's record is missing");
  return PD_OK;
}

pd_status pd_valid_epoch(pd_valid *v, int epoch, pd_buf *line, pd_buf *line2, bool *stop,
                         double *seconds, pd_error *err) {
  *stop = false;
  *seconds = 0;
  v->validated = false;
  if (v->steps || (epoch + 1) % v->every != 0) return PD_OK;
  return validate(v, epoch + 1, line, line2, stop, seconds, err);
}

pd_status pd_valid_step(pd_valid *v, int64_t step, pd_buf *line, pd_buf *line2, bool *stop,
                        double *seconds, pd_error *err) {
  *stop = false;
  *seconds = 0;
  v->validated = false;
  if (!v->steps || step % v->steps != 0) return PD_OK;
  return validate(v, step, line, line2, stop, seconds, err);
}

pd_status pd_valid_finish(pd_valid *v, FILE *progress, pd_error *err) {
  if (!v || !v->keep_best) return PD_OK;
  double s[S_N];
  if (state_io(v, s, false) || s[S_BEST_EPOCH] < 1) return PD_OK;
  pd_status st = copy_params(v, false);
  if (st) return pd_error_set(err, st, v->a->loc, "keep_best: cannot restore the parameters");
  if (progress) {
    fprintf(progress, "keep_best: the parameters of %s %lld (valid %s %.4f) restored\n",
            v->steps ? "step" : "epoch", (long long)s[S_BEST_EPOCH], v->names[v->monitor],
            s[S_BEST]);
    fflush(progress);
  }
  return PD_OK;
}
