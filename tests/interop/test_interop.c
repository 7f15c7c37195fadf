/* test_interop.c -- PaddlePaddle's own saved models (tests/interop/NAME/, written by
 * tools/paddle_models.py with PaddlePaddle 3.3 in legacy ProgramDesc mode) run through the C
 * library (pd_state_load_model) in each layout they were saved in: NAME.pdmodel + .pdiparams,
 * Fluid's folder of one file per parameter, __model__ + __params__, and a folder's __model__
 * named directly. The inputs are the in_FEED.npy files (batches of sequences where lens_FEED.npy
 * gives their lengths); the outputs must be named as the fetch targets PaddlePaddle listed
 * (fetch_names.txt) and agree with PaddlePaddle's out_NAME.npy within 1e-5 relative (1e-6
 * absolute near zero: float32 sums in another order). Also: a refused model's error record, and
 * doc/language.md's table of what loading drops.
 *
 * `test_interop --compare A.npy B.npy` compares two files the same way (exit 0 when they
 * agree), for tests/interop/exec.sh. */
#include "config.h"
#include "include/pdlang.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "tests/tap.h"
#include "vm/ops/compat.h"
#include "vm/reader/reader.h"

#define REL 1e-5
#define ABS 1e-6

/* A whole .npy file: dtype, shape [N, per-sample...], and a pointer to its elements (owned by
 * *ds). */
static int read_npy(const char *path, pd_dataset **ds, int *dtype, int *nd, int64_t *dims) {
  pd_error err = {0};
  if (pd_dataset_npy(path, NULL, ds, &err)) {
    printf("# %s: %s\n", path, err.msg ? err.msg : "?");
    pd_error_clear(&err);
    return -1;
  }
  *nd = pd_dataset_field_shape(*ds, 0, dims + 1) + 1;
  dims[0] = pd_dataset_size(*ds);
  *dtype = (int)pd_dataset_field_dtype(*ds, 0);
  return 0;
}

/* got (float32, shape gnd/gdims) against the file want; prints the first difference. */
static bool agrees(const char *what, const float *got, int gnd, const int64_t *gdims,
                   const char *want_path) {
  pd_dataset *ds;
  int dt, nd;
  int64_t dims[PD_STATE_MAX_DIMS + 1];
  if (read_npy(want_path, &ds, &dt, &nd, dims)) return false;
  bool same = dt == PD_DTYPE_FLOAT32 && nd == gnd;
  int64_t n = 1;
  for (int k = 0; same && k < nd; k++) same = dims[k] == gdims[k], n *= dims[k];
  if (!same) printf("# %s: the shape or dtype differs from %s\n", what, want_path);
  const float *want = pd_dataset_field_data(ds, 0);
  for (int64_t i = 0; same && i < n; i++) {
    double g = got[i], w = want[i];
    if (!(fabs(g - w) <= REL * fabs(w) + ABS)) {
      printf("# %s: element %lld is %.9g, PaddlePaddle's %.9g\n", what, (long long)i, g, w);
      same = false;
    }
  }
  pd_dataset_free(ds);
  return same;
}

static const char *srcdir(void) {
  const char *s = getenv("top_srcdir");
  return s && *s ? s : ".";
}

/* The model `name` loaded from `layout` (a path under tests/interop/NAME/) and run on its
 * inputs; its outputs named and valued as PaddlePaddle's. */
static void check_model(const char *name, const char *layout) {
  char dir[1024], path[1200], file[1400];
  snprintf(dir, sizeof dir, "%s/tests/interop/%s", srcdir(), name);
  snprintf(path, sizeof path, "%s/%s", dir, layout);
  pd_state *st;
  if (pd_state_new(&st)) {
    ok(0, "%s (%s): pd_state_new", name, layout);
    return;
  }
  bool good = pd_state_load_model(st, path) == PD_RESULT_OK;
  if (!good) printf("# %s\n", pd_state_error(st)->text);
  int nin = 0, nout = 0;
  const char *const *ins = NULL, *const *outs = NULL;
  if (good) good = !pd_state_inputs(st, &nin, &ins) && !pd_state_outputs(st, &nout, &outs);
  pd_dataset *inputs[8] = {0};
  for (int i = 0; good && i < nin && i < 8; i++) {
    int dt, nd;
    int64_t dims[PD_STATE_MAX_DIMS + 1];
    snprintf(file, sizeof file, "%s/in_%s.npy", dir, ins[i]);
    pd_tensor_info want;
    good = read_npy(file, &inputs[i], &dt, &nd, dims) == 0 &&
           pd_state_describe(st, ins[i], &want) == PD_RESULT_OK;
    if (good && want.ndims == 1 && nd == 2 && dims[1] == 1) nd = 1;  /* a 1-D file: [N] */
    /* A batch of sequences has its lengths beside it (int64). */
    snprintf(file, sizeof file, "%s/lens_%s.npy", dir, ins[i]);
    FILE *lf = good ? fopen(file, "rb") : NULL;
    if (lf) {
      fclose(lf);
      pd_dataset *lens;
      int ldt, lnd;
      int64_t ldims[PD_STATE_MAX_DIMS + 1];
      good = read_npy(file, &lens, &ldt, &lnd, ldims) == 0;
      if (good) {
        good = ldt == PD_DTYPE_INT64 &&
               pd_state_feed_sequences(st, ins[i], dt, nd, dims,
                                       pd_dataset_field_data(inputs[i], 0), ldims[0],
                                       pd_dataset_field_data(lens, 0)) == 0;
        pd_dataset_free(lens);
      }
      if (!good) printf("# %s: cannot feed %s as sequences\n", name, ins[i]);
      continue;
    }
    good = good &&
           pd_state_feed(st, ins[i], dt, nd, dims, pd_dataset_field_data(inputs[i], 0)) == 0;
  }
  if (good && pd_state_run(st) != PD_RESULT_OK) {
    printf("# %s\n", pd_state_error(st)->text);
    good = false;
  }
  /* The fetch targets, in PaddlePaddle's order and with its names. */
  snprintf(file, sizeof file, "%s/fetch_names.txt", dir);
  FILE *f = fopen(file, "r");
  char line[256];
  int k = 0;
  while (good && f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (k >= nout || strcmp(outs[k], line) != 0) {
      printf("# output %d is '%s', PaddlePaddle's fetch target '%s'\n", k,
             k < nout ? outs[k] : "(none)", line);
      good = false;
      break;
    }
    pd_tensor_info t;
    snprintf(file, sizeof file, "%s/out_%s.npy", dir, line);
    for (char *c = file + strlen(dir) + 5; *c; c++)  /* a '/' in the name is '_' there */
      if (*c == '/') *c = '_';
    good = pd_state_fetch(st, line, &t) == PD_RESULT_OK && t.dtype == PD_DTYPE_FLOAT32 &&
           agrees(line, t.data, t.ndims, t.dims, file);
    k++;
  }
  if (f) fclose(f);
  ok(good && f && k == nout, "%s (%s): PaddlePaddle's outputs, by its fetch names", name, layout);
  for (int i = 0; i < 8; i++) pd_dataset_free(inputs[i]);
  pd_state_free(st);
}

/* doc/language.md's table lists every fact of vm/ops/compat.c ("| `OP` | `NAME`"). */
static void check_doc(void) {
  char path[1024], *doc = NULL, row[256];
  size_t len;
  snprintf(path, sizeof path, "%s/doc/language.md", srcdir());
  if (pd_read_file(path, &doc, &len, NULL)) {
    ok(0, "doc/language.md is readable");
    return;
  }
  int missing = 0;
  for (int i = 0; i < pd_compat_nfacts; i++) {
    const pd_compat_fact *f = &pd_compat_facts[i];
    if (f->op) snprintf(row, sizeof row, "| `%s` | `%s`", f->op, f->name);
    else snprintf(row, sizeof row, "| every op | `%s`", f->name);
    if (!strstr(doc, row)) printf("# missing from doc/language.md: %s\n", row), missing++;
  }
  ok(missing == 0, "doc/language.md lists the %d attributes and slots loading drops",
     pd_compat_nfacts);
  pd_free(doc);
}

/* A refused model through the C library: PD_RESULT_EINVAL, the message one line (the summary),
 * the text every problem. */
static void check_refused(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/interop/refused/model.pdmodel", srcdir());
  pd_state *st;
  if (pd_state_new(&st)) {
    ok(0, "refused: pd_state_new");
    return;
  }
  int rc = pd_state_load_model(st, path);
  const pd_error_info *e = pd_state_error(st);
  is_int(rc, PD_RESULT_EINVAL, "refused model: pd_state_load_model is PD_RESULT_EINVAL");
  ok(strstr(e->message, "pdlang cannot run this program (4 problems):") &&
         !strchr(e->message, '\n'),
     "refused model: the message is the one-line summary");
  ok(strstr(e->text, "block 0 op 1 (conv2d): attribute fuse_relu is 1") &&
     strstr(e->text, "block 0 op 4 (elementwise_add): unknown attribute fancy_mode"),
     "refused model: the text lists every problem");
  pd_state_free(st);
}

static int compare_files(const char *a, const char *b) {
  pd_dataset *ds;
  int dt, nd;
  int64_t dims[PD_STATE_MAX_DIMS + 1];
  if (read_npy(a, &ds, &dt, &nd, dims)) return 1;
  bool same = dt == PD_DTYPE_FLOAT32 && agrees(a, pd_dataset_field_data(ds, 0), nd, dims, b);
  pd_dataset_free(ds);
  return same ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--compare") == 0) return compare_files(argv[2], argv[3]);
  static const struct {
    const char *name, *layout;
  } cases[] = {
      {"mlp", "model.pdmodel"},
      {"mlp", "fluid_dir"},
      {"mlp", "fluid_dir/__model__"},
      {"mlp", "fluid_combined"},
      {"mlp", "fluid_combined/__model__"},
      {"mlp_old_attrs", "model.pdmodel"},
      {"lenet", "model.pdmodel"},
      {"cnn_bn", "model.pdmodel"},
      {"embedding_bag", "model.pdmodel"},
      {"embedding_bag", "fluid_dir"},
      {"embedding_bag", "fluid_combined"},
      {"cond", "model.pdmodel"},
      {"cond_false", "model.pdmodel"},
      {"while_loop", "model.pdmodel"},
      {"transformer", "model.pdmodel"},
      {"lstm1", "model.pdmodel"},
      {"lstm2_bidi", "model.pdmodel"},
      {"gru1", "model.pdmodel"},
      {"gru2_bidi", "model.pdmodel"},
      {"seqconv_textcnn", "model.pdmodel"},
      {"fluid_lstm", "model.pdmodel"},
      {"fluid_gru", "model.pdmodel"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_model(cases[i].name, cases[i].layout);
  check_doc();
  check_refused();
  return tap_done();
}
