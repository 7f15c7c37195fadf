/* test_registry.c -- the trainer's tables (train/): the train options' descriptors
 * (train/options.h), the readers' registry (train/readers.h) and the optimizers'
 * (train/optimizers.h) are consistent: names unique and agreeing with their help, each
 * parameter typed (train/spec.h), defaults
 * that parse and lie in their range, every optimizer parameter a field of pd_optimizer whose
 * default there (pd_optimizer_defaults) is what the docs write, every reader an open function;
 * and a train call's options read through the descriptors as the call wrote them. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "train/optimizers.h"
#include "train/options.h"
#include "train/readers.h"

/* Whether a default as the docs write it is a value of the type (none: always). */
static bool default_fits(const char *d, pd_spec_type t) {
  if (!d || strcmp(d, "none") == 0) return true;
  char *end;
  size_t n = strlen(d);
  switch (t) {
  case PD_SPEC_NUM: case PD_SPEC_NUMS: (void)strtod(d, &end); return n && !*end;
  case PD_SPEC_INT: (void)strtoll(d, &end, 10); return n && !*end;
  case PD_SPEC_BOOL: return !strcmp(d, "true") || !strcmp(d, "false");
  case PD_SPEC_STR: case PD_SPEC_STRS: return n >= 2 && d[0] == '"' && d[n - 1] == '"';
  default: return n >= 2 && d[0] == '[' && d[n - 1] == ']';
  }
}

/* A spec's param names and help agree, and are unique. */
static void check_spec(const pd_spec *sp, const char *kind) {
  int n = 0;
  bool agree = true, unique = true;
  for (; n < PD_SPEC_MAX_PARAMS && sp->params[n]; n++) {
    agree = agree && sp->help[n].name && strcmp(sp->params[n], sp->help[n].name) == 0 &&
            sp->help[n].meaning && *sp->help[n].meaning;
    for (int k = 0; k < n; k++) unique = unique && strcmp(sp->params[k], sp->params[n]) != 0;
  }
  ok(agree && (n == PD_SPEC_MAX_PARAMS || !sp->help[n].name),
     "%s %s: its parameter names and help agree, each with a meaning", kind, sp->name);
  ok(unique, "%s %s: its parameter names are unique", kind, sp->name);
  ok(sp->required >= 0 && sp->required <= n && sp->what && *sp->what,
     "%s %s: %d required of %d, and says what it is", kind, sp->name, sp->required, n);
  for (int k = 0; k < sp->required; k++)
    ok(!sp->help[k].dflt, "%s %s: required %s has no default", kind, sp->name, sp->params[k]);
  int untyped = 0;
  for (int k = 0; k < n; k++)
    if (sp->help[k].type <= PD_SPEC_ANY || sp->help[k].type > PD_SPEC_INT_LIST ||
        !default_fits(sp->help[k].dflt, sp->help[k].type)) {
      untyped++;
      ok(false, "%s %s: parameter %s has a type, which its default %s is of", kind, sp->name,
         sp->params[k], sp->help[k].dflt ? sp->help[k].dflt : "(required)");
    }
  ok(untyped == 0, "%s %s: each parameter has its type (train/spec.h), which the compiler "
     "checks and its default is of", kind, sp->name);
}

static void test_options(void) {
  const char *const *names = pd_topt_names();
  int n = 0;
  for (; names[n]; n++) {}
  is_int(n, PD_TOPT_COUNT, "a name for each of the %d train options", PD_TOPT_COUNT);
  for (int i = 0; pd_topt(i); i++) {
    const pd_topt_desc *d = pd_topt(i);
    ok(pd_topt_find(d->name) == d && strcmp(names[i], d->name) == 0,
       "option %s is found by its name, once", d->name);
    ok(d->meaning && *d->meaning, "option %s says what it is", d->name);
    if (d->flags & PD_TOPT_REQUIRED) ok(!d->dflt, "required option %s has no default", d->name);
    bool none = d->dflt && strcmp(d->dflt, "none") == 0;
    switch (d->type) {
    case PD_TOPT_INT:
      if (d->dflt && !none) {
        char *end;
        long long v = strtoll(d->dflt, &end, 10);
        ok(!*end && v >= d->lo && (d->hi <= d->lo || v <= d->hi),
           "option %s: its default %s is an integer in its range", d->name, d->dflt);
      }
      break;
    case PD_TOPT_BOOL:
      ok(d->dflt && (!strcmp(d->dflt, "true") || !strcmp(d->dflt, "false")),
         "option %s: its default is true or false", d->name);
      break;
    case PD_TOPT_NAME:
      ok(d->expect && (!d->dflt || none || d->dflt[0] == '"'),
         "option %s: says what it names, its default a string", d->name);
      break;
    case PD_TOPT_CHOICE:
      ok(d->choices && d->expect && (!d->dflt || none || pd_topt_is_choice(d, d->dflt)),
         "option %s: has its choices (%s) and says what they are", d->name,
         d->choices ? d->choices : "none");
      break;
    default:
      break;
    }
  }
  pd_topt_desc mode = *pd_topt_find("mode");
  ok(pd_topt_is_choice(&mode, "min") && pd_topt_is_choice(&mode, "max") &&
     !pd_topt_is_choice(&mode, "mi") && !pd_topt_is_choice(&mode, "") &&
     !pd_topt_is_choice(&mode, "min|max"), "mode's choices: min and max only");

  /* A call's options: given values, else the table's defaults. */
  pd_cval batch = {.kind = PD_CVAL_INT, .i = 32}, dl = {.kind = PD_CVAL_BOOL, .b = true};
  pd_cfield opts[2] = {{"batch", &batch, {"x.pd", 3, 7}}, {"drop_last", &dl, {"x.pd", 3, 20}}};
  pd_action a = {.kind = PD_ACTION_TRAIN, .loc = {"x.pd", 3, 1}, .nopts = 2, .opts = opts};
  pd_train_opts o;
  pd_train_opts_from_action(&a, &o);
  is_int(pd_train_opt_int(&o, PD_TOPT_batch, 0), 32, "batch as given");
  is_int(pd_train_opt_int(&o, PD_TOPT_epochs, 0), 1, "epochs: the table's default");
  is_int(pd_train_opt_int(&o, PD_TOPT_seed, 7), 7, "seed: the caller's default (it depends)");
  ok(pd_train_opt_bool(&o, PD_TOPT_shuffle) && pd_train_opt_bool(&o, PD_TOPT_drop_last) &&
     !pd_train_opt_bool(&o, PD_TOPT_keep_best), "shuffle, drop_last and keep_best");
  is_int(o.loc[PD_TOPT_batch].col, 7, "batch's location is where it was written");
  is_int(o.loc[PD_TOPT_epochs].col, 1, "epochs's location is the call's");
  char buf[32];
  is_str(pd_train_opt_str(&o, PD_TOPT_monitor, buf, sizeof buf), "loss", "monitor: \"loss\"");
  ok(!pd_train_opt_str(&o, PD_TOPT_log, buf, sizeof buf), "log: none");
  pd_buf b;
  pd_buf_init(&b);
  pd_train_opts_describe(&o, &b);
  is_str(b.data, ", batch 32, drop_last", "what a checkpoint records of the scalar options");
  pd_buf_free(&b);
}

static void test_optimizers(void) {
  int n = 0;
  for (const pd_optim_def *d; (d = pd_optim(n)); n++) {
    check_spec(&d->spec, "optimizer");
    ok(pd_optim_find(d->spec.name) == d, "optimizer %s is found by its name", d->spec.name);
    pd_optimizer o;
    pd_optimizer_defaults(&o, d->kind, 0.01);
    for (int k = 0; k < PD_SPEC_MAX_PARAMS && d->spec.params[k]; k++) {
      const pd_spec_param *h = &d->spec.help[k];
      double v;
      if (!ok(pd_optim_field(&o, h->name, &v), "%s's %s sets a field of pd_optimizer",
              d->spec.name, h->name))
        continue;
      if (!h->dflt || !strcmp(h->dflt, "none")) continue;
      double want;
      pd_lr_schedule s;
      if (!strcmp(h->dflt, "true") || !strcmp(h->dflt, "false")) want = h->dflt[0] == 't';
      else if (h->dflt[0] == '"') {
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strlen(h->dflt) - 2, h->dflt + 1);
        want = pd_lr_schedule_find(name, &s) ? (double)s : NAN;
      } else want = strtod(h->dflt, NULL);
      ok(v == want, "%s's %s: the docs' default %s is pd_optimizer_defaults' %g", d->spec.name,
         h->name, h->dflt, v);
    }
  }
  ok(n >= 6, "%d optimizers", n);
  const char *name, *what;
  int ns = 0;
  for (; pd_lr_schedule_info(ns, &name, &what); ns++) {
    pd_lr_schedule s;
    ok(pd_lr_schedule_find(name, &s) && (int)s == ns && *what, "schedule %s", name);
  }
  ok(ns == 3, "three schedules");

  /* A record through the registry: adam(0.001, beta1 = 0.8, lr_schedule = "cosine"). */
  pd_cval lr = {.kind = PD_CVAL_FLOAT, .f = 0.001}, b1 = {.kind = PD_CVAL_INT, .i = 1};
  pd_cval cos = {.kind = PD_CVAL_STRING, .str = "cosine"}, ws = {.kind = PD_CVAL_INT, .i = 5};
  pd_cfield f[4] = {{"learning_rate", &lr, {0}}, {"beta1", &b1, {0}}, {"lr_schedule", &cos, {0}},
                    {"warmup_steps", &ws, {0}}};
  pd_cval rec = {.kind = PD_CVAL_RECORD, .str = "adam", .n = 4, .fields = f};
  pd_optimizer o;
  pd_error err = {0};
  is_int(pd_optimizer_from_record(&rec, &o, (pd_loc){0}, &err), PD_OK, "adam's record");
  ok(o.kind == PD_OPT_ADAM && o.lr == 0.001 && o.beta1 == 1.0 && o.beta2 == 0.999 &&
     o.schedule == PD_LR_COSINE && o.warmup_steps == 5, "its kind and fields");
  rec.str = "rmsprop";
  f[1].key = "momentum";
  is_int(pd_optimizer_from_record(&rec, &o, (pd_loc){0}, &err), PD_OK, "rmsprop's record");
  ok(o.kind == PD_OPT_RMSPROP && o.mu == 1.0, "rmsprop's momentum is the field mu");
  rec.str = "nadam";
  is_int(pd_optimizer_from_record(&rec, &o, (pd_loc){0}, &err), PD_EINVAL, "no optimizer nadam");
  pd_error_clear(&err);
  lr.f = -1;
  rec.str = "sgd";
  is_int(pd_optimizer_from_record(&rec, &o, (pd_loc){0}, &err), PD_EINVAL,
         "a negative learning rate is refused");
  pd_error_clear(&err);
  is_int(pd_optimizer_from_record(NULL, &o, (pd_loc){0}, &err), PD_OK, "no record: sgd(0.01)");
  ok(o.kind == PD_OPT_SGD && o.lr == 0.01, "sgd(0.01)");
}

static void test_readers(void) {
  int n = 0;
  for (const pd_reader_def *d; (d = pd_reader(n)); n++) {
    check_spec(&d->spec, "reader");
    ok(d->open && pd_reader_find(d->spec.name) == d, "reader %s opens, found by its name",
       d->spec.name);
    ok(!pd_optim_find(d->spec.name), "reader %s is no optimizer's name", d->spec.name);
  }
  ok(n >= 8, "%d readers", n);
  ok(!pd_reader_find("parquet") && !pd_reader_find(NULL), "no reader parquet");
}

int main(void) {
  test_options();
  test_optimizers();
  test_readers();
  return tap_done();
}
