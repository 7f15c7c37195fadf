/* builtins_action.c -- the builtins that describe rather than compute: reader, optimizer and
 * initializer specs (records that keep their arguments by name, checked here so a mistake is
 * reported at the argument) and the actions (train, eval, print, save, load, assert_close), which
 * are recorded in the unit and run after compilation (lang/run.c). */
#include "config.h"
#include "lang/builtins_int.h"
#include "lang/plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Specs: readers, optimizers, initializers. A record keeps its arguments by name. ---- */

/* The specs (readers, optimizers, initializers): their parameters in positional order (all may
 * also be given by keyword; the first `required` must be given), each with its default as the
 * docs write it (NULL: required) and its meaning; `what` says what the spec is. :help NAME shows
 * them (pd_cmp_spec_describe), and tests/lang/test_spec_help.c checks every default against
 * doc/language.md. */
typedef struct spec_param {
  const char *name, *dflt, *meaning;
} spec_param;

/* The entries that several specs share: every optimizer's learning rate and its schedule's
 * and clipping's parameters (after its own), the validation split of the readers that have
 * one (csv, text, host; mnist's and lines' say it their own way). */
#define OPT_LR \
  {"learning_rate", NULL, "the step size (the rate before lr_schedule and warmup_steps)"}
#define OPT_SCHEDULE \
  {"clip_norm", "0", \
   "when positive, scale every gradient by clip_norm / max(norm, clip_norm), norm the global " \
   "norm of all the gradients"}, \
  {"lr_schedule", "\"constant\"", \
   "\"constant\", \"step\" (times decay_rate every decay_steps steps) or \"cosine\" (times (1 + " \
   "cos(pi * step / T)) / 2, T = decay_steps or the train call's steps)"}, \
  {"decay_steps", "none", "the period of \"step\" (required by it), the length of \"cosine\""}, \
  {"decay_rate", "0.1", "the factor of each \"step\""}, \
  {"warmup_steps", "0", \
   "when positive, the rate rises linearly from 0 over these first steps, then the schedule " \
   "starts"}
#define OPT_WEIGHT_DECAY {"weight_decay", "0", "L2 regularisation: g += weight_decay * p"}
#define SPLIT_PARAMS \
  {"split", "none", "\"train\" or \"valid\": the part of a validation split (none: everything)"}, \
  {"valid", "none", "the fraction a validation split holds out (0.1 for split = \"valid\")"}, \
  {"seed", "0", "which samples the validation split holds out"}

/* The learning-rate schedules an optimizer's lr_schedule names (lang/train.c computes them):
 * the compiler takes these names only, and :help NAME says what each does. */
static const struct schedule {
  const char *name, *what;
} schedules[] = {
    {"constant", "the learning rate as given (after warmup_steps, when positive)"},
    {"step", "the rate times decay_rate (0.1) every decay_steps steps, which it requires"},
    {"cosine", "the rate times (1 + cos(pi * step / T)) / 2, T = decay_steps when given, else "
               "the number of steps of the train call"},
};

static const struct spec {
  const char *name;
  const char *params[12];   /* the names of help[], NULL-terminated (for keyword lookup) */
  int required;
  const char *what;
  spec_param help[12];
} specs[] = {
    {"adagrad",
     {"learning_rate", "epsilon", "initial_accumulator_value", "weight_decay", "clip_norm",
      "lr_schedule", "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: m += g^2; p -= lr * g / (sqrt(m) + epsilon)",
     {OPT_LR,
      {"epsilon", "1e-6", "added to the root of the accumulator"},
      {"initial_accumulator_value", "0.0", "the accumulator's starting value"},
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
    {"adam",
     {"learning_rate", "beta1", "beta2", "epsilon", "weight_decay", "clip_norm", "lr_schedule",
      "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: Adam, with Fluid's state (P_moment1_0, ...)",
     {OPT_LR,
      {"beta1", "0.9", "the decay of the first moment (the mean of the gradients)"},
      {"beta2", "0.999", "the decay of the second moment (their squares)"},
      {"epsilon", "1e-8", "added to the second moment's root"},
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
    {"adamw",
     {"learning_rate", "weight_decay", "beta1", "beta2", "epsilon", "clip_norm", "lr_schedule",
      "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: Adam with decoupled weight decay (p -= lr * weight_decay * p, then Adam's "
     "step)",
     {OPT_LR,
      {"weight_decay", "0.01", "the decoupled decay (the op's coeff, not an L2 term)"},
      {"beta1", "0.9", "the decay of the first moment"},
      {"beta2", "0.999", "the decay of the second moment"},
      {"epsilon", "1e-8", "added to the second moment's root"},
      OPT_SCHEDULE}},
    {"csv",
     {"path", "label", "features", "header", "split", "valid", "seed", "delimiter", "fill",
      "categorical"},
     1,
     "a reader: a CSV file with a header row: \"features\" float32 [k] and \"label\" [1]",
     {{"path", NULL, "the file (relative to the script's folder when it is there)"},
      {"label", "none", "the label column (none: the last one)"},
      {"features", "none", "the feature columns, a list (none: every column but the label)"},
      {"header", "true", "whether the first row names the columns (false is not supported yet)"},
      SPLIT_PARAMS,
      {"delimiter", "\",\"", "the one-character separator (\";\", \"\\t\")"},
      {"fill", "none", "the number a missing cell (empty, NA, NaN, null) takes; none: an error"},
      {"categorical", "none",
       "text columns, a list: each value becomes a number (saved as .categories)"}}},
    {"fashion_mnist",
     {"split", "path", "valid", "seed"},
     1,
     "a reader: Fashion-MNIST's IDX files: \"images\" float32 [784] in [0, 1], \"label\" int64 "
     "[1]",
     {{"split", NULL, "\"train\" (60000 samples), \"valid\" or \"test\" (10000)"},
      {"path", "none",
       "the folder of the files (none: $PDLANG_FASHION_MNIST, else "
       "/usr/share/datasets/fashion-mnist)"},
      {"valid", "none", "the fraction of the training images split = \"valid\" holds out"},
      {"seed", "0", "which images the validation split holds out"}}},
    {"host",
     {"name", "split", "valid", "seed"},
     1,
     "a reader: a data set the program embedding pdlang gave its state (pd_state_set_dataset)",
     {{"name", NULL, "the data set's name"},
      SPLIT_PARAMS}},
    {"images",
     {"path", "shape", "mean", "std", "crop_padding", "flip", "split", "valid", "seed"},
     2,
     "a reader: a folder of class folders of PNG and JPEG images: \"images\" float32 shape, "
     "\"label\" int64 [1]",
     {{"path", NULL, "the folder; its class folders are sorted by name and numbered from 0"},
      {"shape", NULL,
       "[channels, height, width]: 1 (grey), 3 (RGB) or 4 (RGBA) channels; images are resized "
       "to it"},
      {"mean", "0",
       "subtracted per channel (a number or one per channel) from the values in [0, 1]"},
      {"std", "1", "then divided by per channel"},
      {"crop_padding", "0",
       "train's augmentation: pad by this many pixels, then crop back at a random offset"},
      {"flip", "false", "train's augmentation: mirror left to right at random"},
      SPLIT_PARAMS}},
    {"kaiming",
     {"uniform", "fan_in"},
     0,
     "an initializer: Fluid's MSRA, with the gain of ReLU",
     {{"uniform", "true",
       "uniform in [-r, r], r = sqrt(6 / fan_in); false: Gaussian with std sqrt(2 / fan_in)"},
      {"fan_in", "none", "the fan-in (none: the parameter's, as xavier())"}}},
    {"lines",
     {"paths", "min_length", "max_length", "split", "test_every", "valid", "seed", "pad_to"},
     1,
     "a reader: one sample per line of text files: \"x\" the line's bytes (a sequence, int64 [1] "
     "a step), \"label\" int64 [1] the file's index",
     {{"paths", NULL, "a list of files, or one file"},
      {"min_length", "1", "shorter lines are left out"},
      {"max_length", "none", "longer lines are cut to it"},
      {"split", "none", "\"train\", \"valid\" or \"test\" (every test_every-th line)"},
      {"test_every", "5", "which lines are the test split's"},
      {"valid", "none", "the fraction of the training lines split = \"valid\" holds out"},
      {"seed", "0", "which lines the validation split holds out"},
      {"pad_to", "none",
       "\"x\" int64 [batch, pad_to], cut or padded with 0, and \"mask\" float32 [batch, "
       "pad_to], 1 for the line's characters"}}},
    {"mnist",
     {"split", "path", "valid", "seed"},
     1,
     "a reader: MNIST's IDX files: \"images\" float32 [784] in [0, 1], \"label\" int64 [1]",
     {{"split", NULL, "\"train\" (60000 samples), \"valid\" or \"test\" (10000)"},
      {"path", "none",
       "the folder of the files (none: $PDLANG_MNIST, else /usr/share/datasets/mnist)"},
      {"valid", "none", "the fraction of the training images split = \"valid\" holds out"},
      {"seed", "0", "which images the validation split holds out"}}},
    {"momentum",
     {"learning_rate", "mu", "use_nesterov", "weight_decay", "clip_norm", "lr_schedule",
      "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: v = mu * v + g; p -= lr * v",
     {OPT_LR,
      {"mu", "0.9", "the velocity's decay"},
      {"use_nesterov", "false", "Nesterov's update: p -= lr * (g + mu * v)"},
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
    {"normal",
     {"mean", "std"},
     2,
     "an initializer: Gaussian",
     {{"mean", NULL, "the mean"},
      {"std", NULL, "the standard deviation"}}},
    {"npy",
     {"path", "label_path"},
     1,
     "a reader: a NumPy .npy array [N, ...] as \"x\"",
     {{"path", NULL, "the .npy file"},
      {"label_path", "none", "a second .npy of N labels, as \"label\""}}},
    {"rmsprop",
     {"learning_rate", "rho", "epsilon", "momentum", "centered", "weight_decay", "clip_norm",
      "lr_schedule", "decay_steps", "decay_rate", "warmup_steps"},
     1,
     "an optimizer: ms = rho * ms + (1 - rho) * g^2; mom = momentum * mom + lr * g / sqrt(ms + "
     "epsilon); p -= mom",
     {OPT_LR,
      {"rho", "0.95", "the decay of the mean square"},
      {"epsilon", "1e-6", "added to the mean square"},
      {"momentum", "0.0", "the momentum of the update"},
      {"centered", "false", "divide by the variance (ms - mg^2) rather than the mean square"},
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
    {"sgd",
     {"learning_rate", "weight_decay", "clip_norm", "lr_schedule", "decay_steps", "decay_rate",
      "warmup_steps"},
     1,
     "an optimizer: p -= lr * g",
     {OPT_LR,
      OPT_WEIGHT_DECAY,
      OPT_SCHEDULE}},
    {"text",
     {"path", "length", "split", "valid", "seed"},
     1,
     "a reader: a text file's bytes in windows: \"x\" the window, \"y\" the byte after each "
     "position, int64 [length]",
     {{"path", NULL, "the file"},
      {"length", "32", "the window's length"},
      SPLIT_PARAMS}},
    {"uniform",
     {"low", "high"},
     2,
     "an initializer: uniform in [low, high)",
     {{"low", NULL, "the lower bound"},
      {"high", NULL, "the upper bound (excluded)"}}},
    {"xavier",
     {NULL},
     0,
     "an initializer: uniform in [-r, r], r = sqrt(6 / (fan_in + fan_out))",
     {}},
};

/* A validation split: split = "valid" (the held-out part) or "train" (the rest) with
 * valid = F, the fraction held out (default 0.1 for "valid"), and seed = S (default 0), which
 * picks the samples (lang/train.c applies it, vm/reader/reader_split.c). The arguments at
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
  if (v->k != V_STR && (v->k != V_LIST || v->list.n == 0)) {
    pd_cmp_error(c, loc,
                 "lines: 'paths' must be a file name or a non-empty list of file names, not %s",
                 v->k == V_LIST ? "an empty list" : pd_cmp_vkind_phrase(v));
    return false;
  }
  for (int i = 0; v->k == V_LIST && i < v->list.n; i++)
    if (v->list.items[i]->k != V_STR) {
      pd_cmp_error(c, loc, "lines: 'paths' lists file names, but item %d is %s", i,
                   pd_cmp_vkind_phrase(v->list.items[i]));
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

/* The other readers' arguments, checked here too: an argument that is given must be of the
 * kind the reader reads (the run time falls back to a default for any other); `none` for an
 * optional one (position > 0) means its default. */
static bool want_reader_arg(C *c, const char *reader, call_args *a, int i, const char *name,
                            vkind want, const char *what) {
  pd_loc loc;
  value *v = pd_cmp_arg(a, i, name, &loc);
  if (!v || v->k == want || (i > 0 && v->k == V_NONE)) return true;
  pd_cmp_error(c, loc, "%s: '%s' must be %s, not %s", reader, name, what, pd_cmp_vkind_phrase(v));
  return false;
}

/* images(path, shape, mean = 0, std = 1, crop_padding = 0, flip = false, split, valid, seed):
 * shape [C, H, W] with C 1, 3 or 4; mean and std a number or C numbers (std > 0). */
static bool check_images_spec(C *c, call_args *a) {
  pd_loc loc;
  if (!want_reader_arg(c, "images", a, 0, "path", V_STR, "a folder name")) return false;
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
  if (!want_reader_arg(c, "images", a, 5, "flip", V_BOOL, "true or false")) return false;
  if ((v = pd_cmp_arg(a, 6, "split", &loc)) && v->k != V_NONE &&
      (v->k != V_STR || (strcmp(v->s, "train") != 0 && strcmp(v->s, "valid") != 0))) {
    pd_cmp_error(c, loc, "images: 'split' must be none, \"train\" or \"valid\" (a test set is "
                 "a folder of its own)");
    return false;
  }
  return check_split(c, "images", a, 6, 7);
}

static bool check_reader_spec(C *c, const struct spec *sp, call_args *a) {
  const char *r = sp->name;
  pd_loc loc;
  value *v;
  if (strcmp(r, "text") == 0) {
    if (!want_reader_arg(c, r, a, 0, "path", V_STR, "a file name")) return false;
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
    if (!want_reader_arg(c, r, a, 1, "path", V_STR, "a folder name")) return false;
    if (!check_split(c, r, a, 0, 2)) return false;
  } else if (strcmp(r, "csv") == 0) {
    if (!want_reader_arg(c, r, a, 0, "path", V_STR, "a file name") ||
        !want_reader_arg(c, r, a, 1, "label", V_STR, "a column name") ||
        !want_reader_arg(c, r, a, 3, "header", V_BOOL, "true or false"))
      return false;
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
    if ((v = pd_cmp_arg(a, 8, "fill", &loc)) && v->k != V_NONE && v->k != V_INT &&
        v->k != V_FLOAT) {
      pd_cmp_error(c, loc, "csv: 'fill' (the value of missing cells) must be a number, not %s",
                   pd_cmp_vkind_phrase(v));
      return false;
    }
    if ((v = pd_cmp_arg(a, 2, "features", &loc)) && v->k != V_NONE) {
      bool names = v->k == V_LIST && v->list.n <= 256;
      for (int i = 0; names && i < v->list.n; i++) names = v->list.items[i]->k == V_STR;
      if (!names) {
        pd_cmp_error(c, loc, "csv: 'features' must be a list of at most 256 column names");
        return false;
      }
    }
    if ((v = pd_cmp_arg(a, 9, "categorical", &loc)) && v->k != V_NONE) {
      bool names = v->k == V_LIST && v->list.n <= 256;
      for (int i = 0; names && i < v->list.n; i++) names = v->list.items[i]->k == V_STR;
      if (!names) {
        pd_cmp_error(c, loc, "csv: 'categorical' must be a list of at most 256 column names "
                     "(the label or features whose cells are text)");
        return false;
      }
    }
  } else if (strcmp(r, "host") == 0) {
    if (!want_reader_arg(c, r, a, 0, "name", V_STR, "the name of a data set the host program "
                         "gave (pd_state_set_dataset)"))
      return false;
    if ((v = pd_cmp_arg(a, 1, "split", &loc)) && v->k != V_NONE &&
        (v->k != V_STR || (strcmp(v->s, "train") != 0 && strcmp(v->s, "valid") != 0))) {
      pd_cmp_error(c, loc, "host: 'split' must be none, \"train\" or \"valid\"");
      return false;
    }
    if (!check_split(c, r, a, 1, 2)) return false;
  } else if (strcmp(r, "images") == 0) {
    if (!check_images_spec(c, a)) return false;
  } else if (strcmp(r, "npy") == 0) {
    if (!want_reader_arg(c, r, a, 0, "path", V_STR, "a file name") ||
        !want_reader_arg(c, r, a, 1, "label_path", V_STR, "a file name"))
      return false;
  }
  return true;
}

value *pd_cmp_b_record(C *c, const builtin *self, call_args *a) {
  const struct spec *sp = NULL;
  for (size_t i = 0; i < PD_ARRAY_LEN(specs); i++)
    if (strcmp(specs[i].name, self->name) == 0) sp = &specs[i];
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
    r->rec.keys[r->rec.n] = sp->params[i];
    r->rec.vals[r->rec.n] = v;
    r->rec.locs[r->rec.n] = loc;
    r->rec.n++;
  }
  if (strcmp(sp->name, "lines") == 0 ? !check_lines_spec(c, a) : !check_reader_spec(c, sp, a))
    return VERR;
  /* An optimizer's schedule: one of schedules[]; "step" with its decay_steps. */
  bool has_decay_steps = false;
  for (int i = 0; i < r->rec.n; i++)
    has_decay_steps |= !strcmp(r->rec.keys[i], "decay_steps") && r->rec.vals[i]->k != V_NONE;
  for (int i = 0; i < r->rec.n; i++) {
    value *w = r->rec.vals[i];
    if (strcmp(r->rec.keys[i], "lr_schedule") != 0 || w->k == V_NONE) continue;
    size_t k = 0;
    while (w->k == V_STR && k < PD_ARRAY_LEN(schedules) && strcmp(schedules[k].name, w->s)) k++;
    if (w->k != V_STR || k == PD_ARRAY_LEN(schedules)) {
      pd_cmp_error(c, r->rec.locs[i], "%s: lr_schedule is \"constant\", \"step\" or "
                   "\"cosine\" (:help cosine says what each does), not %s", self->name,
                   w->k == V_STR ? pd_cmp_fmt(c, "\"%s\"", w->s) : pd_cmp_vkind_phrase(w));
      return VERR;
    }
    if (!strcmp(w->s, "step") && !has_decay_steps) {
      pd_cmp_error(c, r->rec.locs[i], "%s: lr_schedule = \"step\" needs decay_steps (every how "
                   "many steps the rate is multiplied by decay_rate)", self->name);
      return VERR;
    }
  }
  /* An optimizer's warmup: a whole number of steps. */
  for (int i = 0; i < r->rec.n; i++) {
    value *w = r->rec.vals[i];
    pd_loc wloc = r->rec.locs[i];
    if (strcmp(r->rec.keys[i], "warmup_steps") != 0 || w->k == V_NONE ||
        (w->k == V_INT && w->i >= 0))
      continue;
    pd_cmp_error(c, wloc, "%s: 'warmup_steps' (the steps over which the learning rate rises "
                 "linearly from 0 to its value) must be an integer >= 0, not %s", self->name,
                 w->k == V_INT ? pd_cmp_fmt(c, "%lld", (long long)w->i)
                 : w->k == V_FLOAT ? pd_cmp_fmt(c, "%g", w->f) : pd_cmp_vkind_phrase(w));
    return VERR;
  }
  /* Initializer arguments are numbers. */
  if ((strcmp(sp->name, "normal") == 0 || strcmp(sp->name, "uniform") == 0) &&
      (!pd_cmp_is_number(r->rec.vals[0]) || !pd_cmp_is_number(r->rec.vals[1]))) {
    pd_cmp_error(c, a->loc, "%s needs two numbers", self->name);
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
/* The most keyword options an action takes (train's). */
#define ACTION_PARAMS 26

static const struct action_spec {
  const char *name;
  pd_action_kind kind;
  int min_pos, max_pos;     /* positional arguments */
  const char *kw[ACTION_PARAMS + 1]; /* keyword options, NULL-terminated (help[]'s names) */
  const char *pos;          /* the positional arguments, for help text */
  const char *what;
  spec_param help[ACTION_PARAMS + 1];
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
    {"train",
     PD_ACTION_TRAIN,
     1,
     1,
     {"reader", "batch", "epochs", "optimizer", "shuffle", "drop_last", "seed", "checkpoint",
      "log_every", "valid", "metrics", "valid_every", "early_stop", "monitor", "mode",
      "keep_best", "log", "plot", "valid_every_steps", "amp", "loss_scale",
      "dynamic_loss_scaling", "incr_every_n_steps", "decr_every_n_nan_or_inf", "incr_ratio",
      "decr_ratio", NULL},
     "cost",
     "trains every parameter the cost depends on",
     {{"reader", NULL, "the training data, a reader"},
      {"batch", "64", "samples per minibatch"},
      {"epochs", "1", "passes over the data"},
      {"optimizer", "sgd(0.01)", "an optimizer: sgd, momentum, adam, adamw, rmsprop, adagrad"},
      {"shuffle", "true", "a new order of the samples every epoch"},
      {"drop_last", "false", "leave out an epoch's last, smaller minibatch"},
      {"seed", NULL, "the seed of the shuffling and of random ops (default: pdlang run --seed)"},
      {"checkpoint", "none",
       "a file the training state is saved to after every epoch, and resumed from"},
      {"log_every", NULL,
       "with --progress=lines, a line every this many steps (default: a tenth of an epoch)"},
      {"valid", "none", "the validation data, a reader"},
      {"metrics", "none", "tensors of one value per batch evaluated on valid beside the cost"},
      {"valid_every", "1", "validate after every this many epochs"},
      {"early_stop", "none",
       "patience: stop after this many validations without a better monitored value"},
      {"monitor", "\"loss\"", "what early_stop and keep_best watch: \"loss\" or a metric's name"},
      {"mode", NULL,
       "\"min\" or \"max\": whether a smaller or a larger monitored value is better (default: "
       "\"max\" for a name with acc, else \"min\")"},
      {"keep_best", "false", "at the end, put back the parameters of the best validation"},
      {"log", "none", "a file of a row per logged step and epoch (CSV, or JSON lines for .jsonl)"},
      {"plot", "none", "a PNG of the log's curves, drawn when training ends"},
      {"valid_every_steps", "none", "validate after every this many steps instead"},
      {"amp", "none",
       "\"bf16\" or \"fp16\": mixed precision, the matrix products in bfloat16 or float16 with "
       "fp32 sums; fp16 scales the loss"},
      {"loss_scale", "32768", "amp = \"fp16\": the cost's initial multiplier (2^15)"},
      {"dynamic_loss_scaling", "true",
       "amp = \"fp16\": skip a step whose gradients overflow, and adapt the scale"},
      {"incr_every_n_steps", "1000", "multiply the scale by incr_ratio after this many good steps"},
      {"decr_every_n_nan_or_inf", "2",
       "multiply the scale by decr_ratio after this many steps that overflowed"},
      {"incr_ratio", "2", "the growth of the scale (> 1)"},
      {"decr_ratio", "0.8", "the back-off of the scale (between 0 and 1; never below 1)"}}},
};

/* train's loss-scaling options (amp = "fp16" only): loss_scale a finite number > 0,
 * dynamic_loss_scaling true or false, the step counts positive integers, incr_ratio > 1 and
 * decr_ratio in (0, 1), all finite (vm/passes/amp.h). */
static bool check_loss_scaling(C *c, call_args *a, bool fp16) {
  static const char *const names[] = {"loss_scale", "dynamic_loss_scaling", "incr_every_n_steps",
                                      "decr_every_n_nan_or_inf", "incr_ratio", "decr_ratio"};
  for (size_t i = 0; i < PD_ARRAY_LEN(names); i++) {
    pd_loc l;
    value *v = pd_cmp_arg(a, -1, names[i], &l);
    if (!v) continue;
    if (!fp16) {
      pd_cmp_error(c, l, "train: '%s' is a setting of fp16 loss scaling: it needs amp = "
                   "\"fp16\"", names[i]);
      return false;
    }
    double x = v->k == V_INT ? (double)v->i : v->k == V_FLOAT ? v->f : NAN;
    const char *want = NULL;
    if (i == 1) {
      if (v->k != V_BOOL) want = "true or false";
    } else if (i == 2 || i == 3) {
      if (v->k != V_INT || v->i < 1 || v->i > 2147483647) want = "a positive integer";
    } else if (!isfinite(x) || x <= 0) {
      want = "a number greater than 0";
    } else if (i == 4 && x <= 1) {
      want = "a number greater than 1 (the scale grows by it)";
    } else if (i == 5 && x >= 1) {
      want = "a number between 0 and 1 (the scale shrinks by it)";
    }
    if (want && isfinite(x)) {
      pd_cmp_error(c, l, "train: '%s' must be %s, got %g", names[i], want, x);
      return false;
    }
    if (want) {
      pd_cmp_error(c, l, "train: '%s' must be %s, not %s", names[i], want,
                   pd_cmp_vkind_phrase(v));
      return false;
    }
  }
  return true;
}

static const value *rec_field(const value *r, const char *key) {
  for (int i = 0; i < r->rec.n; i++)
    if (strcmp(r->rec.keys[i], key) == 0) return r->rec.vals[i];
  return NULL;
}

/* The per-sample shape of field `field` of reader r when the reader's arguments say it (images'
 * shape, mnist's 784 pixels, text's length, lines' pad_to; a label [1]): its rank, dims and
 * whether it is a sequence field (rows of that shape, one sequence per sample); -1 when not
 * known before the reader opens (csv, npy, host: their files say). */
static int reader_field_shape(const value *r, const char *field, int64_t *dims, bool *seq) {
  const char *n = r->rec.name;
  const value *v;
  *seq = false;
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
 * arguments say must take that field as the batcher will feed it (lang/train.c's feeder): the
 * same per-sample shape (-1 matching any size), or as many values (reshaped), or for a sequence
 * input a field of one value a step; a sequence field needs a sequence input. An error at loc
 * (the reader argument), naming both shapes. Fields read by position (no var of their name)
 * are left to the run. */
static bool check_reader_shapes(C *c, const char *what, const char *who, const value *r,
                                pd_loc loc) {
  if (!r || r->k != V_RECORD) return true;
  const pd_block *b0 = c->unit->main->blocks[0];
  static const char *const fields[] = {"images", "label", "x", "y", "mask"};
  for (size_t f = 0; f < PD_ARRAY_LEN(fields); f++) {
    int64_t fd[4];
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

static bool record_is(const value *v, const char *const *names) {
  if (v->k != V_RECORD) return false;
  for (int i = 0; names[i]; i++)
    if (strcmp(v->rec.name, names[i]) == 0) return true;
  return false;
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

/* train's validation options: valid = READER, metrics = [...], valid_every = N (epochs) or
 * valid_every_steps = N (steps), early_stop = PATIENCE, monitor = NAME, mode = "min" | "max",
 * keep_best = BOOL. The names of monitor are checked when train runs (the metrics' names come
 * from their vars). */
static bool check_validation(C *c, call_args *a, const char *const *readers) {
  pd_loc vloc, l;
  value *valid = pd_cmp_arg(a, -1, "valid", &vloc), *v;
  if (valid && !record_is(valid, readers)) {
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
  static const char *const need_valid[] = {"metrics", "valid_every", "valid_every_steps",
                                           "early_stop", "keep_best", "monitor", "mode"};
  for (size_t i = 0; !valid && i < PD_ARRAY_LEN(need_valid); i++)
    if (pd_cmp_arg(a, -1, need_valid[i], &l)) {
      pd_cmp_error(c, l, "train: '%s' needs a validation reader to watch; add valid = READER "
                   "(for example valid = mnist(\"test\"))", need_valid[i]);
      return false;
    }
  pd_loc el;
  if (pd_cmp_arg(a, -1, "valid_every", &el) && pd_cmp_arg(a, -1, "valid_every_steps", &l)) {
    pd_cmp_error(c, l, "train: give either valid_every (in epochs) or valid_every_steps (in "
                 "steps), not both");
    return false;
  }
  if ((v = pd_cmp_arg(a, -1, "keep_best", &l)) && v->k != V_BOOL) {
    pd_cmp_error(c, l, "train: 'keep_best' must be true or false, not %s", pd_cmp_vkind_phrase(v));
    return false;
  }
  if ((v = pd_cmp_arg(a, -1, "mode", &l)) &&
      (v->k != V_STR || (strcmp(v->s, "min") != 0 && strcmp(v->s, "max") != 0))) {
    pd_cmp_error(c, l, "train: 'mode' must be \"min\" or \"max\" (whether a smaller or a "
                 "larger monitored value is better)");
    return false;
  }
  if ((v = pd_cmp_arg(a, -1, "monitor", &l)) && (v->k != V_STR || !*v->s)) {
    pd_cmp_error(c, l, "train: 'monitor' must name a metric (\"loss\" or one of 'metrics'), not "
                 "%s", pd_cmp_vkind_phrase(v));
    return false;
  }
  return true;
}

/* save's names = ["logits", ...]: one distinct, non-empty string per target (the fetch targets'
 * names in the saved model). */
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
    if (!pd_is_plain_name(s->s)) {
      pd_cmp_error(c, l, "save: names[%d] \"%s\" is not a plain name (a letter or '_', then "
                   "letters, digits and '_')", i, s->s);
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
  static const char *const readers[] = {"fashion_mnist", "mnist", "csv", "npy", "text", "lines",
                                        "images", "host", NULL};
  static const char *const optimizers[] = {"sgd", "momentum", "adam", "adamw", "rmsprop",
                                           "adagrad", NULL};
  for (int i = 0; i < a->npos; i++)
    if (a->pos[i]->k == V_ERROR) return false;
  pd_loc rloc;
  value *reader = pd_cmp_arg(a, -1, "reader", &rloc);
  if (reader && !record_is(reader, readers)) {
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
    if (opt && !record_is(opt, optimizers)) {
      pd_cmp_error(c, oloc, "train: 'optimizer' must be sgd(...), momentum(...), adam(...), "
                   "adamw(...), rmsprop(...) or adagrad(...)");
      return false;
    }
    static const char *const ints[] = {"batch", "epochs", "seed", "log_every", "valid_every",
                                       "valid_every_steps", "early_stop"};
    for (size_t i = 0; i < PD_ARRAY_LEN(ints); i++) {
      pd_loc l;
      value *v2 = pd_cmp_arg(a, -1, ints[i], &l);
      bool seed = strcmp(ints[i], "seed") == 0;
      if (v2 && (v2->k != V_INT || v2->i < (seed ? 0 : 1))) {
        pd_cmp_error(c, l, "train: '%s' must be a %s integer", ints[i],
                     seed ? "non-negative" : "positive");
        return false;
      }
    }
    static const char *const bools[] = {"shuffle", "drop_last"};
    for (size_t i = 0; i < PD_ARRAY_LEN(bools); i++) {
      pd_loc l;
      value *v2 = pd_cmp_arg(a, -1, bools[i], &l);
      if (v2 && v2->k != V_BOOL) {
        pd_cmp_error(c, l, "train: '%s' must be true or false, not %s", bools[i],
                     pd_cmp_vkind_phrase(v2));
        return false;
      }
    }
    pd_loc ll;
    value *lv = pd_cmp_arg(a, -1, "log", &ll);
    if (lv && (lv->k != V_STR || !*lv->s)) {
      pd_cmp_error(c, ll, "train: 'log' must name a file (\"run.csv\", or \"run.jsonl\" for "
                   "JSON lines), not %s", pd_cmp_vkind_phrase(lv));
      return false;
    }
    if ((lv = pd_cmp_arg(a, -1, "amp", &ll)) &&
        (lv->k != V_STR || (strcmp(lv->s, "bf16") != 0 && strcmp(lv->s, "fp16") != 0))) {
      pd_cmp_error(c, ll, "train: 'amp' (mixed precision) must be \"bf16\" or \"fp16\": the "
                   "products in bfloat16 or float16, the rest in fp32");
      return false;
    }
    if (!check_loss_scaling(c, a, lv && lv->k == V_STR && strcmp(lv->s, "fp16") == 0))
      return false;
    if ((lv = pd_cmp_arg(a, -1, "plot", &ll)) && (lv->k != V_STR || !*lv->s)) {
      pd_cmp_error(c, ll, "train: 'plot' must name a PNG file (\"curves.png\"), not %s",
                   pd_cmp_vkind_phrase(lv));
      return false;
    }
    if (lv && !pd_plot_available()) {
      pd_cmp_error(c, ll, "train: 'plot' draws with cairo, and this pdlang was built without it "
                   "(install libcairo2-dev and configure again)");
      return false;
    }
    return check_validation(c, a, readers);
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
  if (!sp || !pd_cmp_check_args_kw(c, a, sp->max_pos, sp->kw, 0)) return VERR;
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

/* The parameter lines of :help: "    name = default   meaning", the names padded to one width. */
static void describe_params(const spec_param *h, int cap, bool keywords, pd_buf *out) {
  int w = 0;
  char col[160];
  for (int i = 0; i < cap && h[i].name; i++) {
    int n = snprintf(col, sizeof col, "%s%s%s", h[i].name,
                     h[i].dflt ? " = " : keywords ? " = ..." : "", h[i].dflt ? h[i].dflt : "");
    if (n > w) w = n;
  }
  for (int i = 0; i < cap && h[i].name; i++) {
    snprintf(col, sizeof col, "%s%s%s", h[i].name, h[i].dflt ? " = " : keywords ? " = ..." : "",
             h[i].dflt ? h[i].dflt : "");
    pd_buf_printf(out, "    %-*s  %s%s\n", w, col, h[i].meaning,
                  !h[i].dflt && !keywords ? " (required)" : "");
  }
}

bool pd_cmp_spec_describe(const char *name, pd_buf *out) {
  for (size_t i = 0; i < PD_ARRAY_LEN(schedules); i++)
    if (strcmp(schedules[i].name, name) == 0) {
      pd_buf_printf(out, "lr_schedule = \"%s\"\n  a learning-rate schedule of every optimizer "
                    "(sgd, momentum, adam, adamw, rmsprop, adagrad): %s\n", name,
                    schedules[i].what);
      return true;
    }
  for (size_t i = 0; i < PD_ARRAY_LEN(specs); i++) {
    const struct spec *sp = &specs[i];
    if (strcmp(sp->name, name) != 0) continue;
    pd_buf_printf(out, "%s(", name);
    for (int k = 0; k < 12 && sp->help[k].name; k++)
      pd_buf_printf(out, "%s%s%s%s", k ? ", " : "", sp->help[k].name,
                    sp->help[k].dflt ? " = " : "", sp->help[k].dflt ? sp->help[k].dflt : "");
    pd_buf_printf(out, ")\n  %s\n", sp->what);
    describe_params(sp->help, (int)PD_ARRAY_LEN(sp->help), false, out);
    return true;
  }
  for (size_t i = 0; i < PD_ARRAY_LEN(action_specs); i++) {
    const struct action_spec *sp = &action_specs[i];
    if (strcmp(sp->name, name) != 0) continue;
    pd_buf_printf(out, "%s(%s", name, sp->pos);
    for (int k = 0; k < ACTION_PARAMS && sp->help[k].name; k++)
      pd_buf_printf(out, ", %s = %s", sp->help[k].name,
                    sp->help[k].dflt ? sp->help[k].dflt : "...");
    pd_buf_printf(out, ")\n  an action (run after the script compiles, in order): %s\n", sp->what);
    describe_params(sp->help, ACTION_PARAMS, true, out);
    return true;
  }
  return false;
}

const char *pd_cmp_schedule(int i) {
  return i >= 0 && i < (int)PD_ARRAY_LEN(schedules) ? schedules[i].name : NULL;
}

bool pd_cmp_spec_param(int i, int k, const char **spec, const char **param, const char **dflt,
                       const char **meaning) {
  const spec_param *h;
  int ns = (int)PD_ARRAY_LEN(specs), na = (int)PD_ARRAY_LEN(action_specs);
  if (i < 0 || i >= ns + na) return false;
  if (i < ns) {
    *spec = specs[i].name;
    h = k >= 0 && k < 12 ? &specs[i].help[k] : NULL;
    if (h && h->name && strcmp(specs[i].params[k] ? specs[i].params[k] : "", h->name) != 0)
      h = NULL;  /* the names of params[] and help[] must agree (the test checks this) */
  } else {
    *spec = action_specs[i - ns].name;
    h = k >= 0 && k < ACTION_PARAMS ? &action_specs[i - ns].help[k] : NULL;
    if (h && h->name && strcmp(action_specs[i - ns].kw[k] ? action_specs[i - ns].kw[k] : "",
                               h->name) != 0)
      h = NULL;
  }
  *param = h ? h->name : NULL;
  *dflt = h ? h->dflt : NULL;
  *meaning = h ? h->meaning : NULL;
  return true;
}

const char *const *pd_cmp_record_params(const char *name, int *required) {
  for (size_t i = 0; i < PD_ARRAY_LEN(specs); i++)
    if (strcmp(specs[i].name, name) == 0) {
      if (required) *required = specs[i].required;
      return specs[i].params;
    }
  return NULL;
}

const char *const *pd_cmp_action_params(const char *name, const char **pos) {
  for (size_t i = 0; i < PD_ARRAY_LEN(action_specs); i++)
    if (strcmp(action_specs[i].name, name) == 0) {
      if (pos) *pos = action_specs[i].pos;
      return action_specs[i].kw;
    }
  return NULL;
}
