/* optimizers.c -- the registry of optimizers (train/optimizers.h): each optimizer's row, the
 * learning-rate schedules, and a record turned into a pd_optimizer through the fields its
 * parameters set. */
#include "config.h"
#include "train/optimizers.h"

#include <stddef.h>
#include <string.h>

/* The entries that every optimizer shares: its learning rate first, and its schedule's and
 * clipping's parameters after its own. */
#define OPT_LR \
  {"learning_rate", NULL, \
   "the step size (the rate before lr_schedule and warmup_steps)", PD_SPEC_NUM}
#define OPT_SCHEDULE \
  {"clip_norm", "0", \
   "when positive, scale every gradient by clip_norm / max(norm, clip_norm), norm the global " \
   "norm of all the gradients", PD_SPEC_NUM}, \
  {"lr_schedule", "\"constant\"", \
   "\"constant\", \"step\" (times decay_rate every decay_steps steps) or \"cosine\" (times (1 + " \
   "cos(pi * step / T)) / 2, T = decay_steps or the train call's steps)", PD_SPEC_STR}, \
  {"decay_steps", "none", \
   "the period of \"step\" (required by it), the length of \"cosine\"", PD_SPEC_INT}, \
  {"decay_rate", "0.1", "the factor of each \"step\"", PD_SPEC_NUM}, \
  {"warmup_steps", "0", \
   "when positive, the rate rises linearly from 0 over these first steps, then the schedule " \
   "starts", PD_SPEC_INT}
#define OPT_WEIGHT_DECAY \
  {"weight_decay", "0", "L2 regularisation: g += weight_decay * p", PD_SPEC_NUM}
/* The learning-rate schedules an optimizer's lr_schedule names (vm/passes/optimizer.h computes
 * them): the compiler takes these names only, and :help NAME says what each does. */
static const struct schedule {
  const char *name;
  pd_lr_schedule kind;
  const char *what;
} schedules[] = {
    {"constant", PD_LR_CONSTANT, "the learning rate as given (after warmup_steps, when positive)"},
    {"step", PD_LR_STEP, "the rate times decay_rate (0.1) every decay_steps steps, which it requires"},
    {"cosine", PD_LR_COSINE, "the rate times (1 + cos(pi * step / T)) / 2, T = decay_steps when given, else "
               "the number of steps of the train call"},
};

static const pd_optim_def optims[] = {
    {{"adagrad",
     {"learning_rate", "epsilon", "initial_accumulator_value", "weight_decay", "clip_norm",
      "lr_schedule", "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: m += g^2; p -= lr * g / (sqrt(m) + epsilon)",
     {OPT_LR,
      {"epsilon", "1e-6", "added to the root of the accumulator", PD_SPEC_NUM},
      {"initial_accumulator_value", "0.0", "the accumulator's starting value", PD_SPEC_NUM},
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
     PD_OPT_ADAGRAD},
    {{"adam",
     {"learning_rate", "beta1", "beta2", "epsilon", "weight_decay", "clip_norm", "lr_schedule",
      "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: Adam, with Fluid's state (P_moment1_0, ...)",
     {OPT_LR,
      {"beta1", "0.9", "the decay of the first moment (the mean of the gradients)", PD_SPEC_NUM},
      {"beta2", "0.999", "the decay of the second moment (their squares)", PD_SPEC_NUM},
      {"epsilon", "1e-8", "added to the second moment's root", PD_SPEC_NUM},
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
     PD_OPT_ADAM},
    {{"adamw",
     {"learning_rate", "weight_decay", "beta1", "beta2", "epsilon", "clip_norm", "lr_schedule",
      "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: Adam with decoupled weight decay (p -= lr * weight_decay * p, then Adam's "
     "step)",
     {OPT_LR,
      {"weight_decay", "0.01", "the decoupled decay (the op's coeff, not an L2 term)", PD_SPEC_NUM},
      {"beta1", "0.9", "the decay of the first moment", PD_SPEC_NUM},
      {"beta2", "0.999", "the decay of the second moment", PD_SPEC_NUM},
      {"epsilon", "1e-8", "added to the second moment's root", PD_SPEC_NUM},
      OPT_SCHEDULE}},
     PD_OPT_ADAMW},
    {{"momentum",
     {"learning_rate", "mu", "use_nesterov", "weight_decay", "clip_norm", "lr_schedule",
      "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: v = mu * v + g; p -= lr * v",
     {OPT_LR,
      {"mu", "0.9", "the velocity's decay", PD_SPEC_NUM},
      {"use_nesterov", "false", "Nesterov's update: p -= lr * (g + mu * v)", PD_SPEC_BOOL},
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
     PD_OPT_MOMENTUM},
    {{"rmsprop",
     {"learning_rate", "rho", "epsilon", "momentum", "centered", "weight_decay", "clip_norm",
      "lr_schedule", "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: ms = rho * ms + (1 - rho) * g^2; mom = momentum * mom + lr * g / sqrt(ms + "
     "epsilon); p -= mom",
     {OPT_LR,
      {"rho", "0.95", "the decay of the mean square", PD_SPEC_NUM},
      {"epsilon", "1e-6", "added to the mean square", PD_SPEC_NUM},
      {"momentum", "0.0", "the momentum of the update", PD_SPEC_NUM},
      {"centered", "false",
       "divide by the variance (ms - mg^2) rather than the mean square", PD_SPEC_BOOL},
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
     PD_OPT_RMSPROP},
    {{"sgd",
     {"learning_rate", "weight_decay", "clip_norm", "lr_schedule", "decay_steps", "decay_rate",
      "warmup_steps"},
     1,
     "an optimizer: p -= lr * g",
     {OPT_LR,
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
     PD_OPT_SGD},
};

const pd_optim_def *pd_optim(int i) {
  return i >= 0 && i < (int)PD_ARRAY_LEN(optims) ? &optims[i] : NULL;
}

const pd_optim_def *pd_optim_find(const char *name) {
  for (size_t i = 0; name && i < PD_ARRAY_LEN(optims); i++)
    if (strcmp(optims[i].spec.name, name) == 0) return &optims[i];
  return NULL;
}

bool pd_lr_schedule_info(int i, const char **name, const char **what) {
  if (i < 0 || i >= (int)PD_ARRAY_LEN(schedules)) return false;
  *name = schedules[i].name;
  *what = schedules[i].what;
  return true;
}

bool pd_lr_schedule_find(const char *name, pd_lr_schedule *out) {
  for (size_t i = 0; name && i < PD_ARRAY_LEN(schedules); i++)
    if (strcmp(schedules[i].name, name) == 0) {
      *out = schedules[i].kind;
      return true;
    }
  return false;
}

/* The fields of pd_optimizer that the parameters set, by the parameter's name (rmsprop's
 * momentum is the field mu, which momentum's mu is too). */
typedef enum { F_NUM, F_INT, F_BOOL, F_SCHEDULE } ftype;
static const struct field {
  const char *param;
  size_t offset;
  ftype type;
} fields[] = {
    {"learning_rate", offsetof(pd_optimizer, lr), F_NUM},
    {"mu", offsetof(pd_optimizer, mu), F_NUM},
    {"momentum", offsetof(pd_optimizer, mu), F_NUM},
    {"use_nesterov", offsetof(pd_optimizer, nesterov), F_BOOL},
    {"beta1", offsetof(pd_optimizer, beta1), F_NUM},
    {"beta2", offsetof(pd_optimizer, beta2), F_NUM},
    {"epsilon", offsetof(pd_optimizer, epsilon), F_NUM},
    {"rho", offsetof(pd_optimizer, rho), F_NUM},
    {"centered", offsetof(pd_optimizer, centered), F_BOOL},
    {"initial_accumulator_value", offsetof(pd_optimizer, init_acc), F_NUM},
    {"weight_decay", offsetof(pd_optimizer, weight_decay), F_NUM},
    {"clip_norm", offsetof(pd_optimizer, clip_norm), F_NUM},
    {"lr_schedule", offsetof(pd_optimizer, schedule), F_SCHEDULE},
    {"decay_steps", offsetof(pd_optimizer, decay_steps), F_INT},
    {"decay_rate", offsetof(pd_optimizer, decay_rate), F_NUM},
    {"warmup_steps", offsetof(pd_optimizer, warmup_steps), F_INT},
};

static const struct field *find_field(const char *param) {
  for (size_t i = 0; i < PD_ARRAY_LEN(fields); i++)
    if (strcmp(fields[i].param, param) == 0) return &fields[i];
  return NULL;
}

bool pd_optim_field(const pd_optimizer *o, const char *param, double *value) {
  const struct field *f = find_field(param);
  if (!f) return false;
  const char *p = (const char *)o + f->offset;
  switch (f->type) {
  case F_NUM: *value = *(const double *)p; break;
  case F_INT: *value = (double)*(const int64_t *)p; break;
  case F_BOOL: *value = *(const bool *)p; break;
  case F_SCHEDULE: *value = (double)*(const pd_lr_schedule *)p; break;
  }
  return true;
}

/* Set field f of o from value v (the compiler checked its kind; another kind leaves it). */
static pd_status set_field(pd_optimizer *o, const struct field *f, const pd_cval *v,
                           const char *name, pd_loc loc, pd_error *err) {
  char *p = (char *)o + f->offset;
  bool isnum = v->kind == PD_CVAL_INT || v->kind == PD_CVAL_FLOAT;
  double d = v->kind == PD_CVAL_INT ? (double)v->i : v->f;
  switch (f->type) {
  case F_NUM: if (isnum) *(double *)p = d; break;
  case F_INT: if (isnum) *(int64_t *)p = (int64_t)d; break;
  case F_BOOL: if (v->kind == PD_CVAL_BOOL) *(bool *)p = v->b; break;
  case F_SCHEDULE:
    if (v->kind == PD_CVAL_STRING && !pd_lr_schedule_find(v->str, (pd_lr_schedule *)p))
      return pd_error_set(err, PD_EINVAL, loc, "%s: lr_schedule is \"constant\", \"step\" "
                          "or \"cosine\", not \"%s\"", name, v->str);
    break;
  }
  return PD_OK;
}

pd_status pd_optimizer_from_record(const pd_cval *spec, pd_optimizer *o, pd_loc loc,
                                   pd_error *err) {
  pd_optimizer_defaults(o, PD_OPT_SGD, 0.01);
  if (!spec) return PD_OK;
  const char *name = spec->str;
  const pd_optim_def *d = pd_optim_find(name);
  if (!d) return pd_error_set(err, PD_EINVAL, loc, "unknown optimizer '%s'", name ? name : "?");
  pd_optimizer_defaults(o, d->kind, 0.01);
  for (int i = 0; i < PD_SPEC_MAX_PARAMS && d->spec.params[i]; i++) {
    const pd_cval *v = pd_cval_field(spec, d->spec.params[i]);
    const struct field *f = find_field(d->spec.params[i]);
    if (!v || !f) continue;
    pd_status st = set_field(o, f, v, name, loc, err);
    if (st) return st;
  }
  if (o->schedule == PD_LR_STEP && o->decay_steps <= 0)
    return pd_error_set(err, PD_EINVAL, loc, "%s: lr_schedule = \"step\" needs decay_steps",
                        name);
  if (!(o->lr > 0))
    return pd_error_set(err, PD_EINVAL, loc, "%s: the learning rate must be positive", name);
  return PD_OK;
}
