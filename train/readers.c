/* readers.c -- the registry of readers (train/readers.h): each reader's row (its parameters,
 * defaults, meanings and types; the compiler checks the arguments' types and ranges, lang/
 * builtins_action.c, so that the open functions read each as its type) and its open function,
 * which turns the record into a data set (vm/reader/reader.h). */
#include "config.h"
#include "train/readers.h"

#include <string.h>

#include "train/run_int.h"
#include "train/train_int.h"

static bool num(const pd_cval *v, double *out) {
  if (!v) return false;
  if (v->kind == PD_CVAL_INT) *out = (double)v->i;
  else if (v->kind == PD_CVAL_FLOAT) *out = v->f;
  else return false;
  return true;
}

/* A string field (NULL when not given). */
static const char *str_field(const pd_cval *spec, const char *key) {
  return pd_cval_str_field(spec, key, NULL);
}

/* lines(paths, min_length = 1, max_length = none, split = none, test_every = 5, valid, seed,
 * pad_to = none); the compiler
 * has checked the arguments' kinds and ranges. */
static pd_status open_lines(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                            pd_dataset **out, pd_loc *at, pd_error *err) {
  (void)r;
  (void)note;
  *at = pd_cval_field_loc(spec, "paths", a->loc);
  const pd_cval *p = pd_cval_field(spec, "paths");
  const char *split = str_field(spec, "split");
  pd_lines_options o = {
      .min_length = pd_cval_int_field(spec, "min_length", 1),
      .max_length = pd_cval_int_field(spec, "max_length", 0),
      .split = !split                     ? PD_LINES_ALL
               : strcmp(split, "test") == 0 ? PD_LINES_TEST
                                            : PD_LINES_TRAIN,  /* "train", "valid" */
      .test_every = pd_cval_int_field(spec, "test_every", 5),
      .pad_to = pd_cval_int_field(spec, "pad_to", 0)};
  int n = !p ? 0 : p->kind == PD_CVAL_LIST ? p->n : p->kind == PD_CVAL_STRING ? 1 : 0;
  char **paths = pd_calloc((size_t)n + 1, sizeof *paths);
  pd_status st = paths ? PD_OK : PD_ENOMEM;
  for (int i = 0; i < n && !st; i++) {
    const pd_cval *v = p->kind == PD_CVAL_LIST ? p->items[i] : p;
    if (!(paths[i] = pd_train_script_path(a, v->kind == PD_CVAL_STRING ? v->str : ""))) st = PD_ENOMEM;
  }
  if (st) st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  else st = pd_dataset_lines(n, (const char *const *)paths, &o, out, err);
  for (int i = 0; paths && i < n; i++) pd_free(paths[i]);
  pd_free(paths);
  return st;
}

/* mnist(split, path) and fashion_mnist(split, path): the IDX files of a folder. */
static pd_status open_idx(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                          pd_dataset **out, pd_loc *at, pd_error *err) {
  (void)r;
  (void)note;
  const char *name = spec->str, *split = str_field(spec, "split");
  if (!split) split = "train";
  if (strcmp(split, "valid") == 0) split = "train";  /* held out of it after */
  if (strcmp(split, "train") && strcmp(split, "test"))
    return pd_error_set(err, PD_EINVAL, pd_cval_field_loc(spec, "split", *at),
                        "%s: split must be \"train\", \"valid\" or \"test\", not \"%s\"",
                        name, split);
  const char *p = str_field(spec, "path");
  char *dir = p ? pd_train_script_path(a, p) : NULL;
  pd_status st = pd_dataset_mnist(name, split, dir, out, err);
  pd_free(dir);
  return st;
}
#define open_mnist open_idx
#define open_fashion_mnist open_idx

/* csv(path, label, features, header, split, valid, seed, delimiter, fill, categorical). */
static pd_status open_csv(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                          pd_dataset **out, pd_loc *at, pd_error *err) {
  (void)note;
  const pd_cval *feats = pd_cval_field(spec, "features");
  const char *fnames[256];
  int nf = 0;
  if (feats && feats->kind == PD_CVAL_LIST)
    for (int i = 0; i < feats->n && nf < 256; i++)
      if (feats->items[i]->kind == PD_CVAL_STRING) fnames[nf++] = feats->items[i]->str;
  if (!pd_cval_bool_field(spec, "header", true))
    return pd_error_set(err, PD_EUNSUPPORTED, pd_cval_field_loc(spec, "header", *at),
                        "csv: files without a header row are not supported yet (add a first "
                        "line naming the columns)");
  const char *p = str_field(spec, "path");
  char *path = pd_train_script_path(a, p ? p : "");
  if (!path) return pd_error_set(err, PD_ENOMEM, *at, "out of memory");
  const pd_cval *cats = pd_cval_field(spec, "categorical");
  const char *cnames[256];
  int nc = 0;
  if (cats && cats->kind == PD_CVAL_LIST)
    for (int i = 0; i < cats->n && nc < 256; i++)
      if (cats->items[i]->kind == PD_CVAL_STRING) cnames[nc++] = cats->items[i]->str;
  if (nc && !r->categories && !(r->categories = pd_categories_new())) {
    pd_free(path);
    return pd_error_set(err, PD_ENOMEM, *at, "out of memory");
  }
  pd_csv_options co = {.label = str_field(spec, "label"), .nfeatures = nf,
                       .features = nf ? fnames : NULL, .ncategorical = nc,
                       .categorical = nc ? cnames : NULL, .categories = r->categories};
  const char *delim = str_field(spec, "delimiter");
  const pd_cval *fill = pd_cval_field(spec, "fill");
  if (delim) co.delimiter = delim[0];
  if (num(fill, &co.fill)) co.has_fill = true;
  pd_status st = pd_dataset_csv_opts(path, &co, out, err);
  pd_free(path);
  return st;
}

/* npy(path, label_path). */
static pd_status open_npy(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                          pd_dataset **out, pd_loc *at, pd_error *err) {
  (void)r;
  (void)note;
  (void)at;
  const char *p = str_field(spec, "path"), *lp = str_field(spec, "label_path");
  char *path = pd_train_script_path(a, p ? p : "");
  char *lpath = lp ? pd_train_script_path(a, lp) : NULL;
  pd_status st = path ? pd_dataset_npy(path, lpath, out, err) : PD_ENOMEM;
  pd_free(path);
  pd_free(lpath);
  return st;
}

/* text(path, length = 32). */
static pd_status open_text(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                           pd_dataset **out, pd_loc *at, pd_error *err) {
  (void)r;
  (void)note;
  (void)at;
  const char *p = str_field(spec, "path");
  char *path = pd_train_script_path(a, p ? p : "");
  pd_status st = path ? pd_dataset_text(path, pd_cval_int_field(spec, "length", 32), out, err)
                      : PD_ENOMEM;
  pd_free(path);
  return st;
}

/* host(name): a data set of the program embedding pdlang (the C library's
 * pd_state_set_dataset). */
static pd_status open_host(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                           pd_dataset **out, pd_loc *at, pd_error *err) {
  (void)note;
  *at = pd_cval_field_loc(spec, "name", a->loc);
  const char *dname = str_field(spec, "name");
  if (!dname) dname = "";
  return r->opts.host_dataset
             ? r->opts.host_dataset(r->opts.host_ctx, dname, out, err)
             : pd_error_set(err, PD_ENOTFOUND, *at, "host: no data set named '%s': host(...) "
                            "reads the data sets of a program embedding pdlang "
                            "(pd_state_set_dataset), and this run has none", dname);
}

/* images(path, shape, mean, std, ...): a folder of class folders (train/train_image.c). */
static pd_status open_images(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                             pd_dataset **out, pd_loc *at, pd_error *err) {
  (void)at;
  const char *p = str_field(spec, "path");
  char *dir = pd_train_script_path(a, p ? p : "");
  pd_status st = dir ? pd_train_images_open(spec, dir, note, out, err) : PD_ENOMEM;
  pd_free(dir);
  if (!st) { /* what save writes beside a model this input feeds */
    pd_train_images_options(spec, &r->image_prep);
    r->has_image_prep = true;
  }
  return st;
}

#define SPLIT_PARAMS \
  {"split", "none", \
   "\"train\" or \"valid\": the part of a validation split (none: everything)", PD_SPEC_STR}, \
  {"valid", "none", \
   "the fraction a validation split holds out (0.1 for split = \"valid\")", PD_SPEC_NUM}, \
  {"seed", "0", "which samples the validation split holds out", PD_SPEC_INT}


static const pd_reader_def readers[] = {
    {{"csv",
     {"path", "label", "features", "header", "split", "valid", "seed", "delimiter", "fill",
      "categorical"},
     1,
     "a reader: a CSV file with a header row: \"features\" float32 [k] and \"label\" [1]",
     {{"path", NULL, "the file (relative to the script's folder when it is there)", PD_SPEC_STR},
      {"label", "none", "the label column (none: the last one)", PD_SPEC_STR},
      {"features", "none",
       "the feature columns, a list (none: every column but the label)", PD_SPEC_STR_LIST},
      {"header", "true",
       "whether the first row names the columns (false is not supported yet)", PD_SPEC_BOOL},
      SPLIT_PARAMS,
      {"delimiter", "\",\"", "the one-character separator (\";\", \"\\t\")", PD_SPEC_STR},
      {"fill", "none",
       "the number a missing cell (empty, NA, NaN, null) takes; none: an error", PD_SPEC_NUM},
      {"categorical", "none",
       "text columns, a list: each value becomes a number (saved as .categories)",
       PD_SPEC_STR_LIST}}},
     open_csv},
    {{"fashion_mnist",
     {"split", "path", "valid", "seed"},
     1,
     "a reader: Fashion-MNIST's IDX files: \"images\" float32 [784] in [0, 1], \"label\" int64 "
     "[1]",
     {{"split", NULL, "\"train\" (60000 samples), \"valid\" or \"test\" (10000)", PD_SPEC_STR},
      {"path", "none",
       "the folder of the files (none: $PDLANG_FASHION_MNIST, else "
       "/usr/share/datasets/fashion-mnist)", PD_SPEC_STR},
      {"valid", "none",
       "the fraction of the training images split = \"valid\" holds out", PD_SPEC_NUM},
      {"seed", "0", "which images the validation split holds out", PD_SPEC_INT}}},
     open_fashion_mnist},
    {{"host",
     {"name", "split", "valid", "seed"},
     1,
     "a reader: a data set the program embedding pdlang gave its state (pd_state_set_dataset)",
     {{"name", NULL, "the data set's name", PD_SPEC_STR},
      SPLIT_PARAMS}},
     open_host},
    {{"images",
     {"path", "shape", "mean", "std", "crop_padding", "flip", "split", "valid", "seed"},
     2,
     "a reader: a folder of class folders of PNG and JPEG images: \"images\" float32 shape, "
     "\"label\" int64 [1]",
     {{"path", NULL,
       "the folder; its class folders are sorted by name and numbered from 0", PD_SPEC_STR},
      {"shape", NULL,
       "[channels, height, width]: 1 (grey), 3 (RGB) or 4 (RGBA) channels; images are resized "
       "to it", PD_SPEC_INT_LIST},
      {"mean", "0",
       "subtracted per channel (a number or one per channel) from the values in [0, 1]",
       PD_SPEC_NUMS},
      {"std", "1", "then divided by per channel", PD_SPEC_NUMS},
      {"crop_padding", "0",
       "train's augmentation: pad by this many pixels, then crop back at a random offset",
       PD_SPEC_INT},
      {"flip", "false", "train's augmentation: mirror left to right at random", PD_SPEC_BOOL},
      SPLIT_PARAMS}},
     open_images},
    {{"lines",
     {"paths", "min_length", "max_length", "split", "test_every", "valid", "seed", "pad_to"},
     1,
     "a reader: one sample per line of text files: \"x\" the line's bytes (a sequence, int64 [1] "
     "a step), \"label\" int64 [1] the file's index",
     {{"paths", NULL, "a list of files, or one file", PD_SPEC_STRS},
      {"min_length", "1", "shorter lines are left out", PD_SPEC_INT},
      {"max_length", "none", "longer lines are cut to it", PD_SPEC_INT},
      {"split", "none", "\"train\", \"valid\" or \"test\" (every test_every-th line)", PD_SPEC_STR},
      {"test_every", "5", "which lines are the test split's", PD_SPEC_INT},
      {"valid", "none",
       "the fraction of the training lines split = \"valid\" holds out", PD_SPEC_NUM},
      {"seed", "0", "which lines the validation split holds out", PD_SPEC_INT},
      {"pad_to", "none",
       "\"x\" int64 [batch, pad_to], cut or padded with 0, and \"mask\" float32 [batch, "
       "pad_to], 1 for the line's characters", PD_SPEC_INT}}},
     open_lines},
    {{"mnist",
     {"split", "path", "valid", "seed"},
     1,
     "a reader: MNIST's IDX files: \"images\" float32 [784] in [0, 1], \"label\" int64 [1]",
     {{"split", NULL, "\"train\" (60000 samples), \"valid\" or \"test\" (10000)", PD_SPEC_STR},
      {"path", "none",
       "the folder of the files (none: $PDLANG_MNIST, else /usr/share/datasets/mnist)",
       PD_SPEC_STR},
      {"valid", "none",
       "the fraction of the training images split = \"valid\" holds out", PD_SPEC_NUM},
      {"seed", "0", "which images the validation split holds out", PD_SPEC_INT}}},
     open_mnist},
    {{"npy",
     {"path", "label_path"},
     1,
     "a reader: a NumPy .npy array [N, ...] as \"x\"",
     {{"path", NULL, "the .npy file", PD_SPEC_STR},
      {"label_path", "none", "a second .npy of N labels, as \"label\"", PD_SPEC_STR}}},
     open_npy},
    {{"text",
     {"path", "length", "split", "valid", "seed"},
     1,
     "a reader: a text file's bytes in windows: \"x\" the window, \"y\" the byte after each "
     "position, int64 [length]",
     {{"path", NULL, "the file", PD_SPEC_STR},
      {"length", "32", "the window's length", PD_SPEC_INT},
      SPLIT_PARAMS}},
     open_text},
};

const pd_reader_def *pd_reader(int i) {
  return i >= 0 && i < (int)PD_ARRAY_LEN(readers) ? &readers[i] : NULL;
}

const pd_reader_def *pd_reader_find(const char *name) {
  for (size_t i = 0; name && i < PD_ARRAY_LEN(readers); i++)
    if (strcmp(readers[i].spec.name, name) == 0) return &readers[i];
  return NULL;
}

/* A validation split (split = "valid", or "train" with valid = F; the compiler checked the
 * arguments): *ds becomes its part (vm/reader/reader.h, pd_dataset_split). */
static pd_status apply_split(const pd_cval *spec, pd_dataset **ds, pd_error *err) {
  const char *s = pd_cval_str_field(spec, "split", "");
  double frac = 0.1;
  bool given = num(pd_cval_field(spec, "valid"), &frac);
  bool held_out = strcmp(s, "valid") == 0;
  if (!held_out && !(given && strcmp(s, "train") == 0)) return PD_OK;
  pd_dataset *part = NULL;
  uint64_t sd = (uint64_t)pd_cval_int_field(spec, "seed", 0);
  pd_status st = pd_dataset_split(*ds, frac, sd, held_out, &part, err);
  if (st) {
    pd_error_prefix(err, "%s", spec->str);  /* name the reader */
    return st;
  }
  pd_dataset_free(*ds);
  *ds = part;
  return PD_OK;
}

pd_status pd_reader_open(pd_runner *r, const pd_action *a, const pd_cval *spec, FILE *note,
                         pd_dataset **out, pd_error *err) {
  *out = NULL;
  if (!spec || spec->kind != PD_CVAL_RECORD)
    return pd_error_set(err, PD_EINVAL, a->loc, "%s needs a reader, e.g. reader = "
                        "fashion_mnist(\"train\")", pd_action_name(a->kind));
  const pd_reader_def *rd = pd_reader_find(spec->str);
  if (!rd)
    return pd_error_set(err, PD_EINVAL, spec->loc.line > 0 ? spec->loc : a->loc,
                        "unknown reader '%s'", spec->str);
  /* Errors from reading point at the argument naming the file, else at the reader's call. */
  pd_loc at = pd_cval_field_loc(spec, "path", a->loc);
  pd_status st = rd->open(r, a, spec, note, out, &at, err);
  if (!st) st = apply_split(spec, out, err);
  return pd_run_at_loc(err, st, at, NULL);
}
