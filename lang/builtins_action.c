/* builtins_action.c -- the builtins that describe rather than compute: reader, optimizer and
 * initializer specs (records that keep their arguments by name, checked here so a mistake is
 * reported at the argument) and the actions (train, eval, print, save, load, assert_close), which
 * are recorded in the unit and run after compilation (train/run.c). */
#include "config.h"
#include "lang/builtins_int.h"
#include "train/optimizers.h"
#include "train/options.h"
#include "train/readers.h"
#include "train/plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Specs: readers, optimizers, initializers. A record keeps its arguments by name. ---- */

/* The specs: readers (train/readers.h) and optimizers (train/optimizers.h) are their
 * registries' rows; the initializers' rows are here (pd_spec, train/spec.h: the parameters in
 * positional order, all may also be given by keyword, the first `required` must be given, each
 * with its default as the docs write it and its meaning). :help NAME shows them
 * (pd_cmp_spec_describe), and tests/lang/test_spec_help.c checks every default against
 * doc/language.md. */
typedef pd_spec_param spec_param;

static const pd_spec specs[] = {
    {"kaiming",
     {"uniform", "fan_in"},
     0,
     "an initializer: Fluid's MSRA, with the gain of ReLU",
     {{"uniform", "true",
       "uniform in [-r, r], r = sqrt(6 / fan_in); false: Gaussian with std sqrt(2 / fan_in)",
       PD_SPEC_BOOL},
      {"fan_in", "none", "the fan-in (none: the parameter's, as xavier())", PD_SPEC_NUM}}},
    {"normal",
     {"mean", "std"},
     2,
     "an initializer: Gaussian",
     {{"mean", NULL, "the mean", PD_SPEC_NUM},
      {"std", NULL, "the standard deviation", PD_SPEC_NUM}}},
    {"uniform",
     {"low", "high"},
     2,
     "an initializer: uniform in [low, high)",
     {{"low", NULL, "the lower bound", PD_SPEC_NUM},
      {"high", NULL, "the upper bound (excluded)", PD_SPEC_NUM}}},
    {"xavier",
     {NULL},
     0,
     "an initializer: uniform in [-r, r], r = sqrt(6 / (fan_in + fan_out))",
     {}},
};

/* The spec of a reader, optimizer or initializer by name (NULL: none), and spec i of all of
 * them (readers, optimizers, initializers; NULL past the last). */
static const pd_spec *find_spec(const char *name) {
  const pd_reader_def *rd = pd_reader_find(name);
  const pd_optim_def *od = pd_optim_find(name);
  if (rd) return &rd->spec;
  if (od) return &od->spec;
  for (size_t i = 0; i < PD_ARRAY_LEN(specs); i++)
    if (strcmp(specs[i].name, name) == 0) return &specs[i];
  return NULL;
}

static const pd_spec *spec_at(int i) {
  int nr = 0, no = 0;
  while (pd_reader(nr)) nr++;
  while (pd_optim(no)) no++;
  if (i < 0) return NULL;
  if (i < nr) return &pd_reader(i)->spec;
  if (i < nr + no) return &pd_optim(i - nr)->spec;
  i -= nr + no;
  return i < (int)PD_ARRAY_LEN(specs) ? &specs[i] : NULL;
}

/* A validation split: split = "valid" (the held-out part) or "train" (the rest) with
 * valid = F, the fraction held out (default 0.1 for "valid"), and seed = S (default 0), which
 * picks the samples (train/train.c applies it, vm/reader/reader_split.c). The arguments at
 * positions si (split), vi (valid) and vi + 1 (seed). */
static bool check_split(C *c, const char *reader, call_args *a, int si, int vi) {
  pd_loc loc, sloc;
  value *split = pd_cmp_arg(a, si, "split", &sloc), *v;
  const char *s = split && split->k == V_STR ? split->s : NULL;
  if ((v = pd_cmp_arg(a, vi + 1, "seed", &loc)) && v->k != V_NONE && (v->k != V_INT || v->i < 0)) {
    pd_cmp_error(c, loc, "%s: 'seed' (which samples the validation split holds out) must be a "
                 "non-negative integer", reader);
    return false;
  }
  if (!(v = pd_cmp_arg(a, vi, "valid", &loc)) || v->k == V_NONE) return true;
  double f = v->k == V_INT ? (double)v->i : v->k == V_FLOAT ? v->f : NAN;
  if (!(f > 0 && f < 1)) {
    char num[32];
    snprintf(num, sizeof num, "%g", f);
    pd_cmp_error(c, loc, "%s: 'valid' is the fraction of the training samples held out for "
                 "validation, a number between 0 and 1 (0.1: a tenth), not %s", reader,
                 pd_cmp_is_number(v) ? num : pd_cmp_vkind_phrase(v));
    return false;
  }
  if (!s || (strcmp(s, "train") != 0 && strcmp(s, "valid") != 0)) {
    pd_cmp_error(c, split ? sloc : loc, "%s: 'valid' splits the training data: give split = "
                 "\"train\" (the rest) or split = \"valid\" (the held-out part)%s", reader,
                 s ? ", not \"test\"" : "");
    return false;
  }
  return true;
}

/* lines(paths, min_length = 1, max_length = none, split = none, test_every = 5): the arguments
 * are checked here, so that a mistake is reported at the argument before anything runs. */
static bool check_lines_spec(C *c, call_args *a) {
  pd_loc loc;
  value *v = pd_cmp_arg(a, 0, "paths", &loc);
  if (v->k == V_LIST && v->list.n == 0) {
    pd_cmp_error(c, loc, "lines: 'paths' must be a file name or a non-empty list of file names, "
                 "not an empty list");
    return false;
  }
  int64_t min = 1;
  if ((v = pd_cmp_arg(a, 1, "min_length", &loc))) {
    if (v->k != V_INT || v->i < 1) {
      pd_cmp_error(c, loc, "lines: 'min_length' must be an integer >= 1");
      return false;
    }
    min = v->i;
  }
  if ((v = pd_cmp_arg(a, 2, "max_length", &loc)) && v->k != V_NONE && (v->k != V_INT || v->i < min)) {
    pd_cmp_error(c, loc, "lines: 'max_length' must be none or an integer >= min_length (%lld)",
                 (long long)min);
    return false;
  }
  if ((v = pd_cmp_arg(a, 3, "split", &loc)) && v->k != V_NONE &&
      (v->k != V_STR || (strcmp(v->s, "train") != 0 && strcmp(v->s, "test") != 0 &&
                         strcmp(v->s, "valid") != 0))) {
    pd_cmp_error(c, loc, "lines: 'split' must be none, \"train\", \"valid\" or \"test\"");
    return false;
  }
  if ((v = pd_cmp_arg(a, 4, "test_every", &loc)) && (v->k != V_INT || v->i < 2)) {
    pd_cmp_error(c, loc,
                 "lines: 'test_every' must be an integer >= 2 (every test_every-th line of each "
                 "file is a test line)");
    return false;
  }
  if ((v = pd_cmp_arg(a, 7, "pad_to", &loc)) && v->k != V_NONE &&
      (v->k != V_INT || v->i < 1 || v->i > (1 << 20))) {
    pd_cmp_error(c, loc, "lines: 'pad_to' (the length every line is padded with 0 or cut to: "
                 "\"x\" int64 [batch, pad_to], \"mask\" float32 [batch, pad_to]) must be none or an "
                 "integer from 1 to %d", 1 << 20);
    return false;
  }
  return check_split(c, "lines", a, 3, 5);
}

/* images(path, shape, mean = 0, std = 1, crop_padding = 0, flip = false, split, valid, seed):
 * shape [C, H, W] with C 1, 3 or 4; mean and std a number or C numbers (std > 0). */
static bool check_images_spec(C *c, call_args *a) {
  pd_loc loc;
  value *v = pd_cmp_arg(a, 1, "shape", &loc);
  bool ok3 = v && v->k == V_LIST && v->list.n == 3;
  for (int i = 0; ok3 && i < 3; i++)
    ok3 = v->list.items[i]->k == V_INT && v->list.items[i]->i >= 1 && v->list.items[i]->i <= 4096;
  if (!ok3) {
    pd_cmp_error(c, loc, "images: 'shape' must be [channels, height, width], e.g. [3, 32, 32] "
                 "(sizes 1 to 4096)");
    return false;
  }
  int64_t ch = v->list.items[0]->i;
  if (ch != 1 && ch != 3 && ch != 4) {
    pd_cmp_error(c, loc, "images: an image has 1 (grey), 3 (RGB) or 4 (RGBA) channels, not %lld",
                 (long long)ch);
    return false;
  }
  static const char *const ms[2] = {"mean", "std"};
  for (int k = 0; k < 2; k++) {
    if (!(v = pd_cmp_arg(a, 2 + k, ms[k], &loc)) || v->k == V_NONE) continue;
    bool good = pd_cmp_is_number(v) || (v->k == V_LIST && v->list.n == ch);
    for (int i = 0; good && v->k == V_LIST && i < v->list.n; i++)
      good = pd_cmp_is_number(v->list.items[i]) &&
             (k == 0 || (v->list.items[i]->k == V_INT ? v->list.items[i]->i > 0
                                                      : v->list.items[i]->f > 0));
    if (good && k == 1 && v->k != V_LIST) good = v->k == V_INT ? v->i > 0 : v->f > 0;
    if (!good) {
      pd_cmp_error(c, loc, "images: '%s' must be a number or a list of %lld numbers (one per "
                   "channel)%s", ms[k], (long long)ch, k ? ", each above 0" : "");
      return false;
    }
  }
  if ((v = pd_cmp_arg(a, 4, "crop_padding", &loc)) && v->k != V_NONE &&
      (v->k != V_INT || v->i < 0 || v->i > 4096)) {
    pd_cmp_error(c, loc, "images: 'crop_padding' (the pixels a training image is padded by "
                 "before a random crop back to its size; 0: no crop) must be an integer >= 0");
    return false;
  }
  if ((v = pd_cmp_arg(a, 6, "split", &loc)) && v->k != V_NONE &&
      (v->k != V_STR || (strcmp(v->s, "train") != 0 && strcmp(v->s, "valid") != 0))) {
    pd_cmp_error(c, loc, "images: 'split' must be none, \"train\" or \"valid\" (a test set is "
                 "a folder of its own)");
    return false;
  }
  return check_split(c, "images", a, 6, 7);
}

static bool check_reader_spec(C *c, const pd_spec *sp, call_args *a) {
  const char *r = sp->name;
  pd_loc loc;
  value *v;
  if (strcmp(r, "text") == 0) {
    if ((v = pd_cmp_arg(a, 1, "length", &loc)) && v->k != V_NONE && (v->k != V_INT || v->i < 1)) {
      pd_cmp_error(c, loc, "text: 'length' (characters in a sample) must be an integer >= 1");
      return false;
    }
    if ((v = pd_cmp_arg(a, 2, "split", &loc)) && v->k != V_NONE &&
        (v->k != V_STR || (strcmp(v->s, "train") != 0 && strcmp(v->s, "valid") != 0))) {
      pd_cmp_error(c, loc, "text: 'split' must be none, \"train\" or \"valid\"");
      return false;
    }
    if (!check_split(c, r, a, 2, 3)) return false;
  } else if (strcmp(r, "mnist") == 0 || strcmp(r, "fashion_mnist") == 0) {
    if ((v = pd_cmp_arg(a, 0, "split", &loc)) &&
        (v->k != V_STR || (strcmp(v->s, "train") != 0 && strcmp(v->s, "test") != 0 &&
                           strcmp(v->s, "valid") != 0))) {
      pd_cmp_error(c, loc, "%s: 'split' must be \"train\", \"valid\" or \"test\"", r);
      return false;
    }
    if (!check_split(c, r, a, 0, 2)) return false;
  } else if (strcmp(r, "csv") == 0) {
    if ((v = pd_cmp_arg(a, 4, "split", &loc)) && v->k != V_NONE &&
        (v->k != V_STR || (strcmp(v->s, "train") != 0 && strcmp(v->s, "valid") != 0))) {
      pd_cmp_error(c, loc, "csv: 'split' must be none, \"train\" or \"valid\"");
      return false;
    }
    if (!check_split(c, r, a, 4, 5)) return false;
    if ((v = pd_cmp_arg(a, 7, "delimiter", &loc)) && v->k != V_NONE &&
        (v->k != V_STR || strlen(v->s) != 1 || strchr("\"\r\n ", v->s[0]))) {
      pd_cmp_error(c, loc, "csv: 'delimiter' must be one character, not a quote, a space or a "
                   "line end (\",\" by default; \";\" or \"\\t\" are common)");
      return false;
    }
    if ((v = pd_cmp_arg(a, 2, "features", &loc)) && v->k == V_LIST && v->list.n > 256) {
      pd_cmp_error(c, loc, "csv: 'features' must be a list of at most 256 column names");
      return false;
    }
    if ((v = pd_cmp_arg(a, 9, "categorical", &loc)) && v->k == V_LIST && v->list.n > 256) {
      pd_cmp_error(c, loc, "csv: 'categorical' must be a list of at most 256 column names "
                   "(the label or features whose cells are text)");
      return false;
    }
  } else if (strcmp(r, "host") == 0) {
    if ((v = pd_cmp_arg(a, 1, "split", &loc)) && v->k != V_NONE &&
        (v->k != V_STR || (strcmp(v->s, "train") != 0 && strcmp(v->s, "valid") != 0))) {
      pd_cmp_error(c, loc, "host: 'split' must be none, \"train\" or \"valid\"");
      return false;
    }
    if (!check_split(c, r, a, 1, 2)) return false;
  } else if (strcmp(r, "images") == 0) {
    if (!check_images_spec(c, a)) return false;
  }
  return true;
}

/* The kinds of value of the registries' parameter types (train/spec.h), as errors say them. */
static const char *const type_phrase[] = {
    [PD_SPEC_ANY] = "anything", [PD_SPEC_NUM] = "a number", [PD_SPEC_INT] = "an integer",
    [PD_SPEC_BOOL] = "true or false", [PD_SPEC_STR] = "a string",
    [PD_SPEC_STR_LIST] = "a list of strings", [PD_SPEC_STRS] = "a string or a list of strings",
    [PD_SPEC_NUMS] = "a number or a list of numbers", [PD_SPEC_INT_LIST] = "a list of integers",
};

static bool is_num(const value *v) { return v->k == V_INT || v->k == V_FLOAT; }
static bool is_str(const value *v) { return v->k == V_STR; }
static bool is_int(const value *v) { return v->k == V_INT; }

/* The argument v of parameter i of sp (at loc) has the parameter's type (train/spec.h): none
 * stands for an optional one's default; a list's items are checked one by one. Else an error
 * naming the parameter and the type. */
static bool check_type(C *c, const pd_spec *sp, int i, const value *v, pd_loc loc) {
  const pd_spec_param *h = NULL;
  for (int k = 0; k < PD_SPEC_MAX_PARAMS && sp->help[k].name && !h; k++)
    if (strcmp(sp->help[k].name, sp->params[i]) == 0) h = &sp->help[k];
  if (!h || h->type == PD_SPEC_ANY || (v->k == V_NONE && h->dflt)) return true;
  bool (*item)(const value *) = NULL;  /* the kind of a list's items, when a list will do */
  bool good = false;
  switch (h->type) {
  case PD_SPEC_ANY: good = true; break;
  case PD_SPEC_NUM: good = is_num(v); break;
  case PD_SPEC_INT: good = is_int(v); break;
  case PD_SPEC_BOOL: good = v->k == V_BOOL; break;
  case PD_SPEC_STR: good = is_str(v); break;
  case PD_SPEC_STRS: good = is_str(v); /* fall through */
  case PD_SPEC_STR_LIST: item = is_str; break;
  case PD_SPEC_NUMS: good = is_num(v); item = is_num; break;
  case PD_SPEC_INT_LIST: item = is_int; break;
  }
  if (!good && item && v->k == V_LIST) {
    for (int k = 0; k < v->list.n; k++)
      if (!item(v->list.items[k])) {
        pd_cmp_error(c, loc, "%s: '%s' must be %s, but item %d is %s", sp->name, h->name,
                     type_phrase[h->type], k, pd_cmp_vkind_phrase(v->list.items[k]));
        return false;
      }
    good = true;
  }
  if (!good)
    pd_cmp_error(c, loc, "%s: '%s' must be %s, not %s", sp->name, h->name, type_phrase[h->type],
                 v->k == V_FLOAT && h->type == PD_SPEC_INT ? pd_cmp_fmt(c, "%g", v->f)
                                                           : pd_cmp_vkind_phrase(v));
  return good;
}

value *pd_cmp_b_record(C *c, const builtin *self, call_args *a) {
  const pd_spec *sp = find_spec(self->name);
  if (!sp) {
    pd_cmp_error(c, a->loc, "internal: no spec for '%s'", self->name);
    return VERR;
  }
  int np = 0;
  while (np < (int)PD_ARRAY_LEN(sp->params) && sp->params[np]) np++;
  if (!pd_cmp_check_args(c, a, np, sp->params)) return VERR;
  value *r = pd_cmp_vnew(c, V_RECORD);
  if (r == VERR) return r;
  r->rec.name = self->name;
  r->rec.loc = a->loc;
  r->rec.keys = pd_cmp_calloc(c, sizeof *r->rec.keys * (size_t)(np ? np : 1));
  r->rec.vals = pd_cmp_calloc(c, sizeof *r->rec.vals * (size_t)(np ? np : 1));
  r->rec.locs = pd_cmp_calloc(c, sizeof *r->rec.locs * (size_t)(np ? np : 1));
  if (!r->rec.keys || !r->rec.vals || !r->rec.locs) return VERR;
  for (int i = 0; i < np; i++) {
    pd_loc loc;
    value *v = pd_cmp_arg(a, i, sp->params[i], &loc);
    if (!v) {
      if (i < sp->required) {
        pd_cmp_error(c, a->loc, "%s needs argument '%s'", self->name, sp->params[i]);
        return VERR;
      }
      continue;
    }
    if (v->k == V_TENSOR || v->k == V_ERROR) {
      if (v->k == V_TENSOR)
        pd_cmp_error(c, loc, "%s: '%s' must be a compile-time value, not a tensor", self->name,
                     sp->params[i]);
      return VERR;
    }
    if (!check_type(c, sp, i, v, loc)) return VERR;
    r->rec.keys[r->rec.n] = sp->params[i];
    r->rec.vals[r->rec.n] = v;
    r->rec.locs[r->rec.n] = loc;
    r->rec.n++;
  }
  if (strcmp(sp->name, "lines") == 0 ? !check_lines_spec(c, a) : !check_reader_spec(c, sp, a))
    return VERR;
  /* An optimizer's schedule: one of the registry's (train/optimizers.h); "step" with its
   * decay_steps. */
  bool has_decay_steps = false;
  for (int i = 0; i < r->rec.n; i++)
    has_decay_steps |= !strcmp(r->rec.keys[i], "decay_steps") && r->rec.vals[i]->k != V_NONE;
  for (int i = 0; i < r->rec.n; i++) {
    value *w = r->rec.vals[i];
    if (strcmp(r->rec.keys[i], "lr_schedule") != 0 || w->k == V_NONE) continue;
    pd_lr_schedule kind = PD_LR_CONSTANT;
    if (!pd_lr_schedule_find(w->s, &kind)) {
      pd_cmp_error(c, r->rec.locs[i], "%s: lr_schedule is \"constant\", \"step\" or "
                   "\"cosine\" (:help cosine says what each does), not \"%s\"", self->name,
                   w->s);
      return VERR;
    }
    if (!strcmp(w->s, "step") && !has_decay_steps) {
      pd_cmp_error(c, r->rec.locs[i], "%s: lr_schedule = \"step\" needs decay_steps (every how "
                   "many steps the rate is multiplied by decay_rate)", self->name);
      return VERR;
    }
  }
  /* An optimizer's warmup: a whole number of steps (an integer: its type). */
  for (int i = 0; i < r->rec.n; i++) {
    value *w = r->rec.vals[i];
    pd_loc wloc = r->rec.locs[i];
    if (strcmp(r->rec.keys[i], "warmup_steps") != 0 || w->k != V_INT || w->i >= 0) continue;
    pd_cmp_error(c, wloc, "%s: 'warmup_steps' (the steps over which the learning rate rises "
                 "linearly from 0 to its value) must be an integer >= 0, not %lld", self->name,
                 (long long)w->i);
    return VERR;
  }
  return r;
}

/* ---- Actions ---- */

static const pd_cval *to_cval(C *c, value *v) {
  pd_cval *cv = pd_cmp_calloc(c, sizeof *cv);
  if (!cv) return NULL;
  switch (v->k) {
  case V_NONE: cv->kind = PD_CVAL_NONE; break;
  case V_BOOL: cv->kind = PD_CVAL_BOOL; cv->b = v->b; break;
  case V_INT: cv->kind = PD_CVAL_INT; cv->i = v->i; break;
  case V_FLOAT: cv->kind = PD_CVAL_FLOAT; cv->f = v->f; break;
  case V_STR: cv->kind = PD_CVAL_STRING; cv->str = v->s; break;
  case V_DTYPE: cv->kind = PD_CVAL_DTYPE; cv->dtype = v->dtype; break;
  case V_TENSOR: cv->kind = PD_CVAL_TENSOR; cv->str = v->var->name; break;
  case V_FUNC: cv->kind = PD_CVAL_FUNC; cv->str = v->fn.def->def.name->name.id; break;
  case V_BUILTIN: cv->kind = PD_CVAL_FUNC; cv->str = v->bi->name; break;
  case V_MODEL:
    cv->kind = PD_CVAL_FUNC;
    cv->str = pd_cmp_fmt(c, "import_model(\"%s\")", pd_cmp_model_path(v));
    break;
  case V_LIST:
    cv->kind = PD_CVAL_LIST;
    cv->n = v->list.n;
    cv->items = pd_cmp_calloc(c, sizeof *cv->items * (size_t)(v->list.n ? v->list.n : 1));
    if (!cv->items) return NULL;
    for (int i = 0; i < v->list.n; i++)
      if (!(cv->items[i] = to_cval(c, v->list.items[i]))) return NULL;
    break;
  case V_RECORD:
    cv->kind = PD_CVAL_RECORD;
    cv->str = v->rec.name;
    cv->loc = v->rec.loc;
    cv->n = v->rec.n;
    cv->fields = pd_cmp_calloc(c, sizeof *cv->fields * (size_t)(v->rec.n ? v->rec.n : 1));
    if (!cv->fields) return NULL;
    for (int i = 0; i < v->rec.n; i++) {
      cv->fields[i].key = v->rec.keys[i];
      cv->fields[i].loc = v->rec.locs[i];
      if (!(cv->fields[i].value = to_cval(c, v->rec.vals[i]))) return NULL;
    }
    break;
  default: return NULL;
  }
  return cv;
}

/* The actions: positional arguments (for help text), keyword options with their defaults as the
 * docs write them (NULL: required, or a default that depends: the meaning says it) and meanings;
 * the same checks and help as the specs above. */
/* The most keyword options an action other than train takes (train's are its descriptors,
 * train/options.h), with room for the terminating NULL. */
#define ACTION_PARAMS 20

static const struct action_spec {
  const char *name;
  pd_action_kind kind;
  int min_pos, max_pos;     /* positional arguments */
  const char *kw[ACTION_PARAMS + 1]; /* keyword options, NULL-terminated (help[]'s names) */
  const char *pos;          /* the positional arguments, for help text */
  const char *what;
  struct {
    const char *name, *dflt, *meaning;  /* as a pd_spec_param's (train/spec.h) */
  } help[ACTION_PARAMS + 1];
} action_specs[] = {
    {"assert_close",
     PD_ACTION_ASSERT_CLOSE,
     2,
     2,
     {"tol", NULL},
     "a, b",
     "fails the run when |a - b| > tol * (1 + |b|) for an element",
     {{"tol", "1e-5", "the relative tolerance"}}},
    {"eval",
     PD_ACTION_EVAL,
     1,
     16,
     {"reader", "batch", NULL},
     "metrics...",
     "prints the mean of each metric (one value per batch) over a reader's samples",
     {{"reader", NULL, "the data, a reader"},
      {"batch", "256", "samples per batch"}}},
    {"load",
     PD_ACTION_LOAD,
     1,
     1,
     {NULL},
     "path",
     "reads parameters (a .pdiparams file or a saved model's) into the model",
     {{NULL, NULL, NULL}}},
    {"predict",
     PD_ACTION_PREDICT,
     1,
     1,
     {"reader", "out", "batch", NULL},
     "y",
     "writes y for every sample of a reader, in its order, one row per sample",
     {{"reader", NULL, "the data, a reader"},
      {"out", NULL, "FILE.npy (and FILE.lengths.npy for sequences) or FILE.csv"},
      {"batch", "256", "samples per batch"}}},
    {"print",
     PD_ACTION_PRINT,
     1,
     64,
     {"as_text", NULL},
     "values...",
     "computes and prints values that need no reader's data",
     {{"as_text", "false", "integer tensors as the characters whose codes they hold"}}},
    {"save",
     PD_ACTION_SAVE,
     1,
     64,
     {"names", NULL},
     "path, targets...",
     "writes the inference model for the targets (path.pdmodel, path.pdiparams), or save(path) "
     "the parameters",
     {{"names", "none", "the outputs' names in the saved model, one per target"}}},
    /* train's options are its descriptors (train/options.h): action_kw, action_help. */
    {"train",
     PD_ACTION_TRAIN,
     1,
     1,
     {NULL},
     "cost",
     "trains every parameter the cost depends on",
     {{NULL, NULL, NULL}}},
};

/* An action's keyword options, NULL-terminated: train's from its descriptors, the others' from
 * their rows above. */
static const char *const *action_kw(const struct action_spec *sp) {
  return sp->kind == PD_ACTION_TRAIN ? pd_topt_names() : sp->kw;
}

/* Its option k's name, default as the docs write it and meaning ({NULL} past the last). */
static spec_param action_help(const struct action_spec *sp, int k) {
  if (sp->kind != PD_ACTION_TRAIN)
    return k >= 0 && k <= ACTION_PARAMS
               ? (spec_param){sp->help[k].name, sp->help[k].dflt, sp->help[k].meaning, 0}
               : (spec_param){0};
  const pd_topt_desc *d = pd_topt(k);
  return d ? (spec_param){d->name, d->dflt, d->meaning, 0} : (spec_param){0};
}


static const value *rec_field(const value *r, const char *key) {
  for (int i = 0; i < r->rec.n; i++)
    if (strcmp(r->rec.keys[i], key) == 0) return r->rec.vals[i];
  return NULL;
}

/* The per-sample shape of field `field` of reader r when the reader's arguments say it (images'
 * shape, mnist's 784 pixels, text's length, lines' pad_to; a label [1]), or the header of its
 * file (npy's, csv's first row): its rank, dims and whether it is a sequence field (rows of that
 * shape, one sequence per sample); -1 when not known before the reader opens (host's data, a
 * file that is not there yet). */
/* The per-sample dims of an npy(...) reader's field ("x": path, "label": label_path) from the
 * file's header, or a csv(...) reader's ("features": the features listed, else the header row's
 * columns but the label, unless some are categorical; "label": [1]); -1 when the file cannot be read now (the run reports
 * why) or is not a regular file (a pipe is read once, by the run). */
static int file_field_shape(const value *r, const char *field, int64_t *dims) {
  bool npy = strcmp(r->rec.name, "npy") == 0, csv = strcmp(r->rec.name, "csv") == 0;
  const char *key = npy && strcmp(field, "x") == 0        ? "path"
                    : npy && strcmp(field, "label") == 0  ? "label_path"
                    : csv && strcmp(field, "features") == 0 ? "path"
                                                            : NULL;
  if (csv && strcmp(field, "label") == 0) {
    dims[0] = 1;
    return 1;
  }
  const value *v = key ? rec_field(r, key) : NULL, *f = csv ? rec_field(r, "features") : NULL;
  const value *cat = csv ? rec_field(r, "categorical") : NULL;
  if (cat && cat->k == V_LIST && cat->list.n > 0)
    return -1;  /* a categorical feature is one-hot: its width is in the data */
  if (f && f->k == V_LIST) {   /* csv's features = [...]: no file needed */
    dims[0] = f->list.n;
    return 1;
  }
  if (!v || v->k != V_STR) return -1;
  char *path = pd_path_beside(r->rec.loc.file, v->s);
  struct stat sb;
  int rank = -1;
  if (path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
    pd_error err = {0};
    if (npy) {
      pd_dtype dt;
      int64_t all[PD_TENSOR_MAX_DIMS];
      if (!pd_npy_header(path, &dt, &rank, all, &err) && rank >= 1) {
        if (rank == 1) dims[0] = 1;   /* N labels batch as [rows, 1] */
        else memcpy(dims, all + 1, sizeof *dims * (size_t)(rank - 1));
        rank = rank == 1 ? 1 : rank - 1;
      } else {
        rank = -1;
      }
    } else {
      const value *d = rec_field(r, "delimiter");
      int ncols;
      if (!pd_csv_columns(path, d && d->k == V_STR ? d->s[0] : ',', &ncols, &err) && ncols > 1) {
        dims[0] = ncols - 1;   /* every column but the label */
        rank = 1;
      }
    }
    pd_error_clear(&err);
  }
  pd_free(path);
  return rank;
}

static int reader_field_shape(const value *r, const char *field, int64_t *dims, bool *seq) {
  const char *n = r->rec.name;
  const value *v;
  *seq = false;
  if (strcmp(n, "npy") == 0 || strcmp(n, "csv") == 0) return file_field_shape(r, field, dims);
  bool labelled = strcmp(n, "images") == 0 || strcmp(n, "mnist") == 0 ||
                  strcmp(n, "fashion_mnist") == 0 || strcmp(n, "lines") == 0;
  if (labelled && strcmp(field, "label") == 0) {
    dims[0] = 1;
    return 1;
  }
  if (strcmp(n, "images") == 0 && strcmp(field, "images") == 0 && (v = rec_field(r, "shape")) &&
      v->k == V_LIST && v->list.n == 3) {
    for (int i = 0; i < 3; i++) dims[i] = v->list.items[i]->i;
    return 3;
  }
  if ((strcmp(n, "mnist") == 0 || strcmp(n, "fashion_mnist") == 0) &&
      strcmp(field, "images") == 0) {
    dims[0] = 784;
    return 1;
  }
  if (strcmp(n, "text") == 0 && (strcmp(field, "x") == 0 || strcmp(field, "y") == 0)) {
    v = rec_field(r, "length");
    dims[0] = v && v->k == V_INT ? v->i : 32;
    return 1;
  }
  if (strcmp(n, "lines") == 0) {
    v = rec_field(r, "pad_to");
    bool padded = v && v->k == V_INT;
    if (strcmp(field, "x") == 0 || (padded && strcmp(field, "mask") == 0)) {
      *seq = !padded;
      dims[0] = padded ? v->i : 1;
      return 1;
    }
  }
  return -1;
}

/* The data vars of the global block named after a field of reader r whose shape the reader's
 * arguments say must take that field as the batcher will feed it (train/train.c's feeder): the
 * same per-sample shape (-1 matching any size), or as many values (reshaped), or for a sequence
 * input a field of one value a step; a sequence field needs a sequence input. An error at loc
 * (the reader argument), naming both shapes. Fields read by position (no var of their name)
 * are left to the run. */
static bool check_reader_shapes(C *c, const char *what, const char *who, const value *r,
                                pd_loc loc) {
  if (!r || r->k != V_RECORD) return true;
  const pd_block *b0 = c->unit->main->blocks[0];
  static const char *const fields[] = {"images", "label", "x", "y", "mask", "features"};
  for (size_t f = 0; f < PD_ARRAY_LEN(fields); f++) {
    int64_t fd[PD_TENSOR_MAX_DIMS];
    bool seq;
    int fnd = reader_field_shape(r, fields[f], fd, &seq);
    const pd_var_desc *v = fnd < 0 ? NULL : pd_block_find_var_local(b0, fields[f]);
    if (!v || v->persistable || !v->stop_gradient || v->type != PD_VAR_LOD_TENSOR ||
        v->ndims < 1)
      continue;
    bool written = false;
    for (int i = 0; !written && i < b0->nops; i++)
      for (int s = 0; !written && s < b0->ops[i]->noutputs; s++)
        for (int k = 0; !written && k < b0->ops[i]->outputs[s].nargs; k++)
          written = strcmp(b0->ops[i]->outputs[s].args[k], fields[f]) == 0;
    if (written) continue;  /* not a data() input */
    int64_t fnum = 1, vnum = 1;
    bool known = true, same = v->ndims == fnd + 1;
    for (int k = 0; k < fnd; k++) fnum *= fd[k];
    for (int k = 1; k < v->ndims; k++) {
      known = known && v->dims[k] >= 0;
      vnum *= v->dims[k] < 0 ? 1 : v->dims[k];
    }
    for (int k = 0; same && k < fnd; k++) same = v->dims[k + 1] < 0 || v->dims[k + 1] == fd[k];
    bool fits = seq ? v->lod_level == 1 && (same || (known && vnum == fnum))
                    : same || (known && vnum == fnum) ||
                          (v->lod_level >= 1 && fnd == 1 && vnum == 1);
    if (fits) continue;
    char fs[96], vs[96], per[96];
    pd_dims_str(fnd, fd, fs, sizeof fs);
    pd_dims_str(v->ndims, v->dims, vs, sizeof vs);
    if (seq)
      pd_cmp_error(c, loc, "%s: %s's '%s' is a sequence per sample (of varying length, rows of "
                   "%s), but data(\"%s\", %s%s) is %s; declare it data(\"%s\", [-1, 1], int64, "
                   "lod_level = 1)", what, who, fields[f], fs, fields[f], vs,
                   v->lod_level ? ", lod_level = 1" : "",
                   v->lod_level == 1 ? "a sequence of other rows" : "not a sequence input",
                   fields[f]);
    else
      pd_cmp_error(c, loc, "%s: %s gives '%s' as %s per sample (%lld values), but "
                   "data(\"%s\", %s) takes %s%s per sample; declare it data(\"%s\", [-1, %s)",
                   what, who, fields[f], fs, (long long)fnum, fields[f], vs,
                   pd_dims_str(v->ndims - 1, v->dims + 1, per, sizeof per),
                   known ? "" : " (a size of -1 must match the reader's)", fields[f], fs + 1);
    return false;
  }
  return true;
}

/* Whether v is a reader's record, an optimizer's (their registries, train/readers.h and
 * train/optimizers.h). */
static bool is_reader(const value *v) { return v->k == V_RECORD && pd_reader_find(v->rec.name); }
static bool is_optimizer(const value *v) {
  return v->k == V_RECORD && pd_optim_find(v->rec.name);
}

/* A metric of train's validation: a tensor of one element (mean(...), accuracy(...)). */
static bool check_metric(C *c, value *v, pd_loc loc, int i, int n) {
  char which[48] = "";
  if (n > 1) snprintf(which, sizeof which, " (item %d of 'metrics')", i + 1);
  if (v->k != V_TENSOR) {
    pd_cmp_error(c, loc, "train: a metric%s must be a tensor of one element, such as "
                 "accuracy(y, label), not %s", which, pd_cmp_vkind_phrase(v));
    return false;
  }
  int64_t numel = 1;
  for (int k = 0; k < v->var->ndims; k++) numel *= v->var->dims[k];
  if (v->var->ndims < 0 || numel != 1 || v->var->dtype == PD_BOOL) {
    pd_cmp_error(c, loc, "train: a metric%s must be one number per batch (for example mean(...) "
                 "or accuracy(y, label)), got %s %s", which, pd_dtype_name(v->var->dtype),
                 pd_cmp_dims_str(c, v->var));
    return false;
  }
  return true;
}

/* train's options of a scalar type, each as its descriptor says (train/options.h): an integer
 * in its range, true or false, a name, one of its choices. The readers, the optimizer and the
 * metrics are checked by their own rules (check_action, check_validation). */
static bool check_train_options(C *c, call_args *a) {
  pd_loc al;
  value *amp = pd_cmp_arg(a, -1, "amp", &al);
  bool fp16 = amp && amp->k == V_STR && strcmp(amp->s, "fp16") == 0;
  for (int i = 0; pd_topt(i); i++) {
    const pd_topt_desc *d = pd_topt(i);
    pd_loc l;
    value *v = pd_cmp_arg(a, -1, d->name, &l);
    if (!v) continue;
    if ((d->flags & PD_TOPT_FP16) && !fp16) {
      pd_cmp_error(c, l, "train: '%s' is a setting of fp16 loss scaling: it needs amp = "
                   "\"fp16\"", d->name);
      return false;
    }
    switch (d->type) {
    case PD_TOPT_INT:
      if (v->k == V_INT && v->i >= d->lo && (d->hi <= d->lo || v->i <= d->hi)) continue;
      if (d->hi > d->lo)
        pd_cmp_error(c, l, "train: '%s' must be an integer from %lld to %lld", d->name,
                     (long long)d->lo, (long long)d->hi);
      else
        pd_cmp_error(c, l, "train: '%s' must be a%s integer%s", d->name,
                     d->lo == 1 ? " positive" : d->lo == 0 ? " non-negative" : "n",
                     d->lo > 1 || d->lo < 0 ? pd_cmp_fmt(c, " >= %lld", (long long)d->lo) : "");
      return false;
    case PD_TOPT_FLOAT: {
      double x = v->k == V_INT ? (double)v->i : v->k == V_FLOAT ? v->f : NAN;
      bool top = d->hi > d->lo;
      if (isfinite(x) && x > (double)d->lo && (!top || x < (double)d->hi)) continue;
      const char *want = d->expect ? d->expect
                         : top     ? pd_cmp_fmt(c, "a number between %lld and %lld",
                                                (long long)d->lo, (long long)d->hi)
                                   : pd_cmp_fmt(c, "a number greater than %lld", (long long)d->lo);
      if (isfinite(x) || v->k == V_FLOAT)
        pd_cmp_error(c, l, "train: '%s' must be %s, got %g", d->name, want, x);
      else
        pd_cmp_error(c, l, "train: '%s' must be %s, not %s", d->name, want,
                     pd_cmp_vkind_phrase(v));
      return false;
    }
    case PD_TOPT_BOOL:
      if (v->k == V_BOOL) continue;
      pd_cmp_error(c, l, "train: '%s' must be true or false, not %s", d->name,
                   pd_cmp_vkind_phrase(v));
      return false;
    case PD_TOPT_NAME:
      if (v->k == V_STR && *v->s) continue;
      pd_cmp_error(c, l, "train: '%s' must name %s, not %s", d->name, d->expect,
                   v->k == V_STR ? "an empty string" : pd_cmp_vkind_phrase(v));
      return false;
    case PD_TOPT_CHOICE:
      if (v->k == V_STR && pd_topt_is_choice(d, v->s)) continue;
      pd_cmp_error(c, l, "train: '%s' must be %s", d->name, d->expect);
      return false;
    default:
      continue;
    }
  }
  return true;
}

/* train's validation options: valid = READER, metrics = [...], valid_every = N (epochs) or
 * valid_every_steps = N (steps), early_stop = PATIENCE, monitor = NAME, mode = "min" | "max",
 * keep_best = BOOL. The names of monitor are checked when train runs (the metrics' names come
 * from their vars). */
static bool check_validation(C *c, call_args *a) {
  pd_loc vloc, l;
  value *valid = pd_cmp_arg(a, -1, "valid", &vloc), *v;
  if (valid && !is_reader(valid)) {
    pd_cmp_error(c, vloc, "train: 'valid' must be a reader such as mnist(\"test\"), not %s",
                 pd_cmp_vkind_phrase(valid));
    return false;
  }
  if (valid && !check_reader_shapes(c, "train", "the validation reader", valid, vloc))
    return false;
  if ((v = pd_cmp_arg(a, -1, "metrics", &l))) {
    int n = v->k == V_LIST ? v->list.n : 1;
    if (v->k == V_LIST && (n == 0 || n > 16)) {
      pd_cmp_error(c, l, "train: 'metrics' lists 1 to 16 metrics, not %d", n);
      return false;
    }
    for (int i = 0; i < n; i++)
      if (!check_metric(c, v->k == V_LIST ? v->list.items[i] : v, l, i, n)) return false;
  }
  for (int i = 0; !valid && pd_topt(i); i++)
    if ((pd_topt(i)->flags & PD_TOPT_VALID) && pd_cmp_arg(a, -1, pd_topt(i)->name, &l)) {
      pd_cmp_error(c, l, "train: '%s' needs a validation reader to watch; add valid = READER "
                   "(for example valid = mnist(\"test\"))", pd_topt(i)->name);
      return false;
    }
  pd_loc el;
  if (pd_cmp_arg(a, -1, "valid_every", &el) && pd_cmp_arg(a, -1, "valid_every_steps", &l)) {
    pd_cmp_error(c, l, "train: give either valid_every (in epochs) or valid_every_steps (in "
                 "steps), not both");
    return false;
  }
  return true;
}

/* save's names = ["logits", ...]: one distinct var name per target (the fetch targets' names in
 * the saved model; as Fluid's, "fc_0.tmp_1", so that a model saved again keeps its outputs'
 * names). */
static bool check_save_names(C *c, call_args *a) {
  pd_loc l;
  value *v = pd_cmp_arg(a, -1, "names", &l);
  if (!v) return true;
  int nt = a->npos - 1;
  if (nt == 0) {
    pd_cmp_error(c, l, "save: 'names' names the targets, and there are none (save(path) alone "
                 "writes the parameters)");
    return false;
  }
  if (v->k != V_LIST) {
    pd_cmp_error(c, l, "save: 'names' must be a list of %d string%s, one for each target, not %s",
                 nt, nt == 1 ? "" : "s", pd_cmp_vkind_phrase(v));
    return false;
  }
  if (v->list.n != nt) {
    pd_cmp_error(c, l, "save: 'names' has %d name%s for %d target%s", v->list.n,
                 v->list.n == 1 ? "" : "s", nt, nt == 1 ? "" : "s");
    return false;
  }
  for (int i = 0; i < nt; i++) {
    const value *s = v->list.items[i];
    if (s->k != V_STR) {
      pd_cmp_error(c, l, "save: names[%d] must be a string, not %s", i, pd_cmp_vkind_phrase(s));
      return false;
    }
    if (!pd_is_var_name(s->s)) {
      pd_cmp_error(c, l, "save: names[%d] \"%s\" is not a name (a letter or '_', then "
                   "letters, digits, '_', '.' and '/')", i, s->s);
      return false;
    }
    for (int j = 0; j < i; j++)
      if (strcmp(v->list.items[j]->s, s->s) == 0) {
        pd_cmp_error(c, l, "save: names[%d] and names[%d] are both '%s'; each output needs its "
                     "own name", j, i, s->s);
        return false;
      }
  }
  return true;
}

/* predict(y, reader = R, out = "FILE.npy" | "FILE.csv", batch = N): y has a row per sample (its
 * first dimension the batch, -1) in a dtype .npy holds; reader and out are required. */
static bool check_predict(C *c, call_args *a, const value *reader) {
  if (!pd_cmp_want_tensor_arg(c, a->pos[0], a->pos_loc[0], "predict", "y")) return false;
  const pd_var_desc *v = a->pos[0]->var;
  if (v->ndims < 1 || v->dims[0] != -1) {
    pd_cmp_error(c, a->pos_loc[0], "predict: y must have a row per sample (its first dimension "
                 "the batch, -1), got %s %s; eval(...) computes one number over a reader",
                 pd_dtype_name(v->dtype), pd_cmp_dims_str(c, v));
    return false;
  }
  if (v->dtype != PD_FP32 && v->dtype != PD_FP64 && v->dtype != PD_INT32 &&
      v->dtype != PD_INT64 && v->dtype != PD_BOOL) {
    pd_cmp_error(c, a->pos_loc[0], "predict: y must be float32, float64, int32, int64 or bool "
                 "(what .npy and CSV files hold here), not %s; cast(y, float32) converts it",
                 pd_dtype_name(v->dtype));
    return false;
  }
  if (!reader) {
    pd_cmp_error(c, a->loc, "predict needs a reader, such as reader = csv(\"new.csv\")");
    return false;
  }
  pd_loc l;
  value *o = pd_cmp_arg(a, -1, "out", &l);
  size_t n = o && o->k == V_STR ? strlen(o->s) : 0;
  if (!o || o->k != V_STR || n < 5 ||
      (strcmp(o->s + n - 4, ".npy") != 0 && strcmp(o->s + n - 4, ".csv") != 0)) {
    const char *what = "predict needs out = a file name ending in .npy (a NumPy array, one row "
                       "per sample) or .csv (a header, then a line per sample)";
    if (!o) pd_cmp_error(c, a->loc, "%s", what);
    else if (o->k == V_STR) pd_cmp_error(c, l, "%s, not \"%s\"", what, o->s);
    else pd_cmp_error(c, l, "%s, not %s", what, pd_cmp_vkind_phrase(o));
    return false;
  }
  value *b = pd_cmp_arg(a, -1, "batch", &l);
  if (b && (b->k != V_INT || b->i < 1)) {
    pd_cmp_error(c, l, "predict: 'batch' must be a positive integer");
    return false;
  }
  return true;
}

static bool check_action(C *c, pd_action_kind kind, call_args *a) {
  for (int i = 0; i < a->npos; i++)
    if (a->pos[i]->k == V_ERROR) return false;
  pd_loc rloc;
  value *reader = pd_cmp_arg(a, -1, "reader", &rloc);
  if (reader && !is_reader(reader)) {
    pd_cmp_error(c, rloc,
                 "%s: 'reader' must be a reader such as fashion_mnist(\"train\") or csv(path)",
                 a->fname);
    return false;
  }
  if (reader && !check_reader_shapes(c, a->fname, "the reader", reader, rloc)) return false;
  switch (kind) {
  case PD_ACTION_TRAIN: {
    if (!pd_cmp_want_tensor_arg(c, a->pos[0], a->pos_loc[0], "train", "cost")) return false;
    pd_var_desc *v = a->pos[0]->var;
    int64_t numel = 1;
    for (int i = 0; i < v->ndims; i++) numel *= v->dims[i];
    if (v->ndims < 0 || numel != 1 || (v->dtype != PD_FP32 && v->dtype != PD_FP64)) {
      pd_cmp_error(c, a->pos_loc[0],
                   "train needs a floating-point cost with one element (for example "
                   "mean(...)), got %s %s",
                   pd_dtype_name(v->dtype), pd_cmp_dims_str(c, v));
      return false;
    }
    if (!reader) {
      pd_cmp_error(c, a->loc, "train needs a reader, such as reader = fashion_mnist(\"train\")");
      return false;
    }
    pd_loc oloc;
    value *opt = pd_cmp_arg(a, -1, "optimizer", &oloc);
    if (opt && !is_optimizer(opt)) {
      pd_buf names;  /* the registry's: "adagrad(...), ... or sgd(...)" */
      pd_buf_init(&names);
      for (int i = 0; pd_optim(i); i++)
        pd_buf_printf(&names, "%s%s(...)", !i ? "" : pd_optim(i + 1) ? ", " : " or ",
                      pd_optim(i)->spec.name);
      pd_cmp_error(c, oloc, "train: 'optimizer' must be %s",
                   names.oom ? "an optimizer" : pd_cmp_fmt(c, "%s", names.data));
      pd_buf_free(&names);
      return false;
    }
    if (!check_train_options(c, a)) return false;
    pd_loc ll;
    value *lv = pd_cmp_arg(a, -1, "plot", &ll);
    if (lv && !pd_plot_available()) {
      pd_cmp_error(c, ll, "train: 'plot' draws with cairo, and this pdlang was built without it "
                   "(install libcairo2-dev and configure again)");
      return false;
    }
    return check_validation(c, a);
  }
  case PD_ACTION_EVAL:
    for (int i = 0; i < a->npos; i++)
      if (!pd_cmp_want_tensor_arg(c, a->pos[i], a->pos_loc[i], "eval", "metric")) return false;
    return true;
  case PD_ACTION_PREDICT:
    return check_predict(c, a, reader);
  case PD_ACTION_PRINT:
    return true;
  case PD_ACTION_SAVE:
  case PD_ACTION_LOAD:
    if (a->pos[0]->k != V_STR || !*a->pos[0]->s) {
      pd_cmp_error(c, a->pos_loc[0], "%s needs a file path (a string) first", a->fname);
      return false;
    }
    for (int i = 1; i < a->npos; i++)
      if (!pd_cmp_want_tensor_arg(c, a->pos[i], a->pos_loc[i], a->fname, "target")) return false;
    return kind != PD_ACTION_SAVE || check_save_names(c, a);
  case PD_ACTION_ASSERT_CLOSE:
    return pd_cmp_want_tensor_arg(c, a->pos[0], a->pos_loc[0], "assert_close", "actual");
  }
  return true;
}

value *pd_cmp_b_action(C *c, const builtin *self, call_args *a) {
  const struct action_spec *sp = NULL;
  for (size_t i = 0; i < PD_ARRAY_LEN(action_specs); i++)
    if (strcmp(action_specs[i].name, self->name) == 0) sp = &action_specs[i];
  if (!sp || !pd_cmp_check_args_kw(c, a, sp->max_pos, action_kw(sp), 0)) return VERR;
  if (a->npos < sp->min_pos) {
    pd_cmp_error(c, a->loc, "%s needs at least %d argument%s", self->name, sp->min_pos,
                 sp->min_pos == 1 ? "" : "s");
    return VERR;
  }
  if (!pd_cmp_in_global_block(c)) {
    pd_cmp_error(c, a->loc,
                 "'%s' runs the program, so it cannot be inside a block of the program (a "
                 "tensor if or a loop)",
                 self->name);
    return VERR;
  }
  if (!check_action(c, sp->kind, a)) return VERR;
  pd_unit *u = c->unit;
  if (PD_GROW(u->actions, c->capactions, (size_t)u->nactions + 1)) {
    c->oom = true;
    return VERR;
  }
  pd_action *act = &u->actions[u->nactions];
  memset(act, 0, sizeof *act);
  act->kind = sp->kind;
  act->loc = a->loc;
  act->nargs = a->npos;
  act->args = pd_cmp_calloc(c, sizeof *act->args * (size_t)(a->npos ? a->npos : 1));
  act->nopts = a->nkw;
  act->opts = pd_cmp_calloc(c, sizeof *act->opts * (size_t)(a->nkw ? a->nkw : 1));
  if (!act->args || !act->opts) return VERR;
  act->arg_text = pd_cmp_calloc(c, sizeof *act->arg_text * (size_t)(a->npos ? a->npos : 1));
  if (!act->arg_text) return VERR;
  act->arg_loc = pd_cmp_calloc(c, sizeof *act->arg_loc * (size_t)(a->npos ? a->npos : 1));
  if (!act->arg_loc) return VERR;
  for (int i = 0; i < a->npos; i++) {
    if (!(act->args[i] = to_cval(c, a->pos[i]))) return VERR;
    act->arg_loc[i] = a->pos_start ? a->pos_start[i] : a->pos_loc[i];
    act->arg_text[i] = pd_cmp_arg_source_text(c, act->arg_loc[i]);
  }
  for (int k = 0; k < a->nkw; k++) {
    act->opts[k].key = a->kw[k];
    act->opts[k].loc = a->kw_loc ? a->kw_loc[k] : a->loc;
    if (!(act->opts[k].value = to_cval(c, a->kwv[k]))) return VERR;
  }
  u->nactions++;
  return VNONE;
}

/* The parameter lines of :help: "    name = default   meaning", the names padded to one width
 * (h: up to n of them, fewer when one has no name). */
static void describe_params(const spec_param *h, int n, bool keywords, pd_buf *out) {
  int w = 0;
  char col[160];
  for (int i = 0; i < n && h[i].name; i++) {
    int len = snprintf(col, sizeof col, "%s%s%s", h[i].name,
                       h[i].dflt ? " = " : keywords ? " = ..." : "", h[i].dflt ? h[i].dflt : "");
    if (len > w) w = len;
  }
  for (int i = 0; i < n && h[i].name; i++) {
    snprintf(col, sizeof col, "%s%s%s", h[i].name, h[i].dflt ? " = " : keywords ? " = ..." : "",
             h[i].dflt ? h[i].dflt : "");
    pd_buf_printf(out, "    %-*s  %s%s\n", w, col, h[i].meaning,
                  !h[i].dflt && !keywords ? " (required)" : "");
  }
}

bool pd_cmp_spec_describe(const char *name, pd_buf *out) {
  const char *sname, *swhat;
  for (int i = 0; pd_lr_schedule_info(i, &sname, &swhat); i++)
    if (strcmp(sname, name) == 0) {
      pd_buf_printf(out, "lr_schedule = \"%s\"\n  a learning-rate schedule of every optimizer "
                    "(sgd, momentum, adam, adamw, rmsprop, adagrad): %s\n", name,
                    swhat);
      return true;
    }
  const pd_spec *spec = find_spec(name);
  if (spec) {
    const pd_spec *sp = spec;
    pd_buf_printf(out, "%s(", name);
    for (int k = 0; k < PD_SPEC_MAX_PARAMS && sp->help[k].name; k++)
      pd_buf_printf(out, "%s%s%s%s", k ? ", " : "", sp->help[k].name,
                    sp->help[k].dflt ? " = " : "", sp->help[k].dflt ? sp->help[k].dflt : "");
    pd_buf_printf(out, ")\n  %s\n", sp->what);
    describe_params(sp->help, (int)PD_ARRAY_LEN(sp->help), false, out);
    return true;
  }
  for (size_t i = 0; i < PD_ARRAY_LEN(action_specs); i++) {
    const struct action_spec *sp = &action_specs[i];
    if (strcmp(sp->name, name) != 0) continue;
    spec_param help[PD_TOPT_COUNT + 1];
    int nh = 0;
    for (; nh < PD_TOPT_COUNT && (help[nh] = action_help(sp, nh)).name; nh++) {}
    help[nh] = (spec_param){0};
    pd_buf_printf(out, "%s(%s", name, sp->pos);
    for (int k = 0; k < nh; k++)
      pd_buf_printf(out, ", %s = %s", help[k].name, help[k].dflt ? help[k].dflt : "...");
    pd_buf_printf(out, ")\n  an action (run after the script compiles, in order): %s\n", sp->what);
    describe_params(help, nh, true, out);
    return true;
  }
  return false;
}

const char *pd_cmp_schedule(int i) {
  const char *name, *what;
  return pd_lr_schedule_info(i, &name, &what) ? name : NULL;
}

bool pd_cmp_spec_param(int i, int k, const char **spec, const char **param, const char **dflt,
                       const char **meaning) {
  const spec_param *h;
  spec_param one;  /* an action's entry (its names, defaults and meanings are static) */
  int ns = 0, na = (int)PD_ARRAY_LEN(action_specs);
  while (spec_at(ns)) ns++;
  if (i < 0 || i >= ns + na) return false;
  if (i < ns) {
    const pd_spec *sp = spec_at(i);
    *spec = sp->name;
    h = k >= 0 && k < PD_SPEC_MAX_PARAMS ? &sp->help[k] : NULL;
    if (h && h->name && strcmp(sp->params[k] ? sp->params[k] : "", h->name) != 0)
      h = NULL;  /* the names of params[] and help[] must agree (the test checks this) */
  } else {
    const struct action_spec *sp = &action_specs[i - ns];
    const char *const *kw = action_kw(sp);
    int nk = 0;
    while (kw[nk]) nk++;
    *spec = sp->name;
    one = action_help(sp, k);
    h = k >= 0 && k <= nk ? &one : NULL;
    if (h && h->name && strcmp(k < nk ? kw[k] : "", h->name) != 0) h = NULL;
  }
  *param = h ? h->name : NULL;
  *dflt = h ? h->dflt : NULL;
  *meaning = h ? h->meaning : NULL;
  return true;
}

const char *const *pd_cmp_record_params(const char *name, int *required) {
  const pd_spec *sp = find_spec(name);
  if (sp) {
    if (required) *required = sp->required;
    return sp->params;
  }
  return NULL;
}

const char *const *pd_cmp_action_params(const char *name, const char **pos) {
  for (size_t i = 0; i < PD_ARRAY_LEN(action_specs); i++)
    if (strcmp(action_specs[i].name, name) == 0) {
      if (pos) *pos = action_specs[i].pos;
      return action_kw(&action_specs[i]);
    }
  return NULL;
}
