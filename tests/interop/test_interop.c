/* test_interop.c -- PaddlePaddle's own saved models (tests/interop/NAME/, written by
 * tools/paddle_models.py with PaddlePaddle 3.3 in legacy ProgramDesc mode) run through the C
 * library (pd_state_load_model) in each layout they were saved in: NAME.pdmodel + .pdiparams,
 * Fluid's folder of one file per parameter, __model__ + __params__, and a folder's __model__
 * named directly, and the PIR JSON programs of tests/interop/pir/NAME/ (model.json). The
 * inputs are the in_FEED.npy files (batches of sequences where lens_FEED.npy gives their
 * lengths); the outputs must be named as the fetch targets PaddlePaddle listed
 * (fetch_names.txt) and agree with PaddlePaddle's out_NAME.npy within 1e-5 relative (1e-6
 * absolute near zero: float32 sums in another order). Also: a refused model's error record
 * (tests/vm/ops/test_compat checks doc/language.md's table of what loading drops). The model
 * families of tests/interop/zoo/ (tools/paddle_zoo.py) run with parameters made from their
 * weights.txt, against Paddle's outputs within 1e-4.
 *
 * `test_interop --compare A.npy B.npy [REL]` compares two files the same way (exit 0 when they
 * agree; integers exactly), `test_interop --same A B` runs two files of one model (its .pdmodel
 * and its .json) on the same made inputs and compares their outputs, `test_interop --zoo-params NAME DIR` writes the family NAME's program
 * and made parameters into DIR: for tests/interop/exec.sh; `--zoo-params DIR` writes the
 * parameters of a family tools/paddle_zoo.py exported into DIR (bench/infer_compare.py). */
#include "config.h"
#include "include/pdlang.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "tests/tap.h"
#include "vm/ir/params.h"
#include "vm/ir/pir.h"
#include "vm/ir/serialize.h"
#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"
#include "vm/run/scope.h"

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

/* The part of an output's largest magnitude that an element near 0 may differ by, past abs_:
 * the rounding of a deep network's sums is relative to their scale, not to each element (a U-Net's
 * element of 5.3e-5 in outputs up to 1.02 came 1.01e-6 from PaddlePaddle's through 3x3 layers
 * taken as Winograd's F(4x4, 3x3), whose errors are a few times the direct sums'). */
#define PEAK_FLOOR 1e-5

/* got (float32, shape gnd/gdims) against the file want, each element within rel of its value
 * or within abs_ (at least PEAK_FLOOR of the largest magnitude); prints the first difference. */
static bool agrees(const char *what, const float *got, int gnd, const int64_t *gdims,
                   const char *want_path, double rel, double abs_) {
  pd_dataset *ds;
  int dt, nd;
  int64_t dims[PD_STATE_MAX_DIMS + 1];
  if (read_npy(want_path, &ds, &dt, &nd, dims)) return false;
  bool same = dt == PD_DTYPE_FLOAT32 && nd == gnd;
  int64_t n = 1;
  for (int k = 0; same && k < nd; k++) same = dims[k] == gdims[k], n *= dims[k];
  if (!same) printf("# %s: the shape or dtype differs from %s\n", what, want_path);
  const float *want = pd_dataset_field_data(ds, 0);
  double peak = 0;
  for (int64_t i = 0; same && i < n; i++)
    if (fabs(want[i]) > peak) peak = fabs(want[i]);
  if (isfinite(peak) && PEAK_FLOOR * peak > abs_) abs_ = PEAK_FLOOR * peak;
  for (int64_t i = 0; same && i < n; i++) {
    double g = got[i], w = want[i];
    if (!(fabs(g - w) <= rel * fabs(w) + abs_)) {
      printf("# %s: element %lld is %.9g, PaddlePaddle's %.9g\n", what, (long long)i, g, w);
      same = false;
    }
  }
  pd_dataset_free(ds);
  return same;
}

/* An integer output (NMS counts, indices, argmax) against the file want: equal. */
static bool agrees_int(const char *what, const pd_tensor_info *t, const char *want_path) {
  pd_dataset *ds;
  int dt, nd;
  int64_t dims[PD_STATE_MAX_DIMS + 1];
  if (read_npy(want_path, &ds, &dt, &nd, dims)) return false;
  if (nd == 2 && dims[1] == 1 && t->ndims == 1) nd = 1;  /* a 1-D file: [N] */
  bool same = dt == (int)t->dtype && nd == t->ndims;
  int64_t n = 1;
  for (int k = 0; same && k < nd; k++) same = dims[k] == t->dims[k], n *= dims[k];
  if (!same)
    printf("# %s: the shape or dtype differs from %s (dtype %d rank %d there, %d rank %d here)\n",
           what, want_path, dt, nd, (int)t->dtype, t->ndims);
  const void *want = pd_dataset_field_data(ds, 0);
  size_t size = dt == PD_DTYPE_INT64 ? 8 : 4;
  if (same && memcmp(t->data, want, (size_t)n * size) != 0) {
    printf("# %s: the values differ from %s\n", what, want_path);
    same = false;
  }
  pd_dataset_free(ds);
  return same;
}

static const char *srcdir(void) {
  const char *s = getenv("top_srcdir");
  return s && *s ? s : ".";
}

/* The model at path run on the inputs of indir (in_FEED.npy); its outputs named and valued as
 * PaddlePaddle's (dir's fetch_names.txt and out_NAME.npy) within rel and abs_. */
static bool run_model_on(const char *indir, const char *dir, const char *path, double rel,
                         double abs_) {
  char file[1400];
  pd_state *st;
  if (pd_state_new(&st)) return false;
  bool good = pd_state_load_model(st, path) == PD_RESULT_OK;
  if (!good) printf("# %s\n", pd_state_error(st)->text);
  int nin = 0, nout = 0;
  const char *const *ins = NULL, *const *outs = NULL;
  if (good) good = !pd_state_inputs(st, &nin, &ins) && !pd_state_outputs(st, &nout, &outs);
  pd_dataset *inputs[8] = {0};
  for (int i = 0; good && i < nin && i < 8; i++) {
    int dt, nd;
    int64_t dims[PD_STATE_MAX_DIMS + 1];
    snprintf(file, sizeof file, "%s/in_%s.npy", indir, ins[i]);
    pd_tensor_info want;
    good = read_npy(file, &inputs[i], &dt, &nd, dims) == 0 &&
           pd_state_describe(st, ins[i], &want) == PD_RESULT_OK;
    if (good && want.ndims == 1 && nd == 2 && dims[1] == 1) nd = 1;  /* a 1-D file: [N] */
    /* A batch of sequences has its lengths beside it (int64). */
    snprintf(file, sizeof file, "%s/lens_%s.npy", indir, ins[i]);
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
      if (!good) printf("# %s: cannot feed %s as sequences\n", dir, ins[i]);
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
    good = pd_state_fetch(st, line, &t) == PD_RESULT_OK;
    if (good && (t.dtype == PD_DTYPE_INT32 || t.dtype == PD_DTYPE_INT64))
      good = agrees_int(line, &t, file);
    else
      good = good && t.dtype == PD_DTYPE_FLOAT32 &&
             agrees(line, t.data, t.ndims, t.dims, file, rel, abs_);
    k++;
  }
  if (f) fclose(f);
  for (int i = 0; i < 8; i++) pd_dataset_free(inputs[i]);
  pd_state_free(st);
  return good && f && k == nout;
}

static bool run_model(const char *dir, const char *path, double rel, double abs_) {
  return run_model_on(dir, dir, path, rel, abs_);
}

/* The model `name` loaded from `layout` (a path under tests/interop/NAME/). */
static void check_model(const char *name, const char *layout) {
  char dir[1024], path[1200];
  snprintf(dir, sizeof dir, "%s/tests/interop/%s", srcdir(), name);
  snprintf(path, sizeof path, "%s/%s", dir, layout);
  ok(run_model(dir, path, REL, ABS), "%s (%s): PaddlePaddle's outputs, by its fetch names", name,
     layout);
}

/* ---- The model families (tests/interop/zoo/NAME, tools/paddle_zoo.py): the program as
 * Paddle exported it, its parameters made from weights.txt by the generator the tool's
 * docstring defines: element i of P is OFFSET + SCALE (2u - 1), u the top 24 bits of
 * splitmix64(fnv1a64(P) + i) over 2^24, in double rounded to float. */
static float zoo_weight(uint64_t seed, int64_t i, double scale, double offset) {
  uint64_t s = seed + (uint64_t)i;
  double u = (double)(pd_reader_splitmix64(&s) >> 40) / (double)(1 << 24);
  return (float)(offset + scale * (2.0 * u - 1.0));
}

/* Write the parameters of dir's program (inference.pdmodel, or inference.json), made from
 * dir/weights.txt, to params_path. */
static bool zoo_params(const char *dir, const char *params_path) {
  char path[1200], *text = NULL;
  size_t len;
  pd_program *p = NULL;
  pd_scope *scope = pd_scope_new(NULL);
  const char **names = NULL;
  int n = 0, made = 0;
  pd_error err = {0};
  snprintf(path, sizeof path, "%s/inference.pdmodel", dir);
  if (access(path, F_OK) != 0) snprintf(path, sizeof path, "%s/inference.json", dir);
  bool good = scope && !pd_program_load(path, &p, &err) && !pd_params_names(p, &names, &n);
  snprintf(path, sizeof path, "%s/weights.txt", dir);
  good = good && !pd_read_file(path, &text, &len, &err);
  for (char *line = text, *next; good && line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = 0;
    char name[256];
    double scale, offset;
    if (sscanf(line, "%255s %lf %lf", name, &scale, &offset) != 3) {
      printf("# %s: bad line '%s'\n", path, line);
      good = false;
      break;
    }
    pd_var_desc *v = pd_block_find_var_local(p->blocks[0], name);
    pd_tensor *t = v && v->persistable ? pd_var_tensor(pd_scope_var(scope, name)) : NULL;
    /* float32 made from the recipe; another dtype (an rnn's uint8 dropout state) zeros */
    pd_dtype dt = v && v->dtype != PD_FP32 ? v->dtype : PD_FP32;
    if (!t || v->ndims < 0 || pd_tensor_resize(t, dt, v->ndims, v->dims)) {
      printf("# %s: '%s' is not a parameter of the model with a known shape\n", path, name);
      good = false;
      break;
    }
    uint64_t seed = pd_hash_bytes(name, strlen(name));
    if (dt != PD_FP32) memset(pd_tensor_data(t), 0, (size_t)pd_tensor_numel(t) * pd_dtype_size(dt));
    for (int64_t i = 0; dt == PD_FP32 && i < pd_tensor_numel(t); i++)
      ((float *)pd_tensor_data(t))[i] = zoo_weight(seed, i, scale, offset);
    made++;
  }
  if (good && made != n) printf("# %s: %d lines for %d parameters\n", path, made, n), good = false;
  good = good && !pd_params_save(params_path, scope, n, names, &err);
  if (err.msg) printf("# %s\n", err.msg);
  pd_error_clear(&err);
  pd_free(names);
  pd_free(text);
  pd_program_free(p);
  pd_scope_free(scope);
  return good;
}

/* A family's model: its parameters made beside a copy of its program in the build folder, then
 * run through the C library against Paddle's outputs (1e-4 relative: float32 sums over tens of
 * layers in another order). */
static bool zoo_setup(const char *name, const char *work) {
  char dir[1024], path[1200], *bytes = NULL;
  size_t len;
  /* NAME, or pir/NAME: the family as PaddlePaddle's default mode exports it (zoo_pir/NAME) */
  bool pir = strncmp(name, "pir/", 4) == 0;
  snprintf(dir, sizeof dir, "%s/tests/interop/%s/%s", srcdir(), pir ? "zoo_pir" : "zoo",
           name + (pir ? 4 : 0));
  const char *prog = pir ? "inference.json" : "inference.pdmodel";
  mkdir(work, 0777);
  snprintf(path, sizeof path, "%s/%s", dir, prog);
  bool good = !pd_read_file(path, &bytes, &len, NULL);
  snprintf(path, sizeof path, "%s/%s", work, prog);
  good = good && !pd_write_file_atomic(path, bytes, len, NULL);
  pd_free(bytes);
  snprintf(path, sizeof path, "%s/inference.pdiparams", work);
  return good && zoo_params(dir, path);
}

/* pdlang's PIR writer on PaddlePaddle's own programs: the program at src (as the reader
 * lowers it) written again as work/model.json (pd_pir_to_json) beside a copy of src_params
 * (NULL: none); the path of the new file in out. */
static bool rewrite_json(const char *src, const char *src_params, const char *work, char *out,
                         size_t outsz) {
  pd_program *p = NULL;
  pd_error err = {0};
  const char **names = NULL;
  int n = 0;
  pd_buf b;
  pd_buf_init(&b);
  char *bytes = NULL, path[1200];
  size_t len = 0;
  mkdir(work, 0777);
  snprintf(out, outsz, "%s/model.json", work);
  bool good = !pd_program_load(src, &p, &err) && !pd_params_names(p, &names, &n) &&
              !pd_pir_to_json(p, n, names, src, &b, &err) && !b.oom &&
              !pd_write_file_atomic(out, b.data, b.len, &err);
  if (good && src_params) {
    snprintf(path, sizeof path, "%s/model.pdiparams", work);
    good = !pd_read_file(src_params, &bytes, &len, &err) &&
           !pd_write_file_atomic(path, bytes, len, &err);
  }
  if (err.msg) printf("# %s\n", err.msg);
  pd_error_clear(&err);
  pd_free(bytes);
  pd_buf_free(&b);
  pd_free(names);
  pd_program_free(p);
  return good;
}

/* A model written (again) as PIR JSON by pdlang's writer: a PaddlePaddle PIR model of
 * tests/interop/pir/NAME (model.json), or with legacy a legacy one of tests/interop/NAME
 * (model.pdmodel, as `save` of a script that imports it would write it): its outputs as
 * PaddlePaddle's. */
static void check_rewritten(const char *name, bool legacy) {
  char dir[1024], src[1200], params[1200], work[1024], path[1200];
  snprintf(dir, sizeof dir, "%s/tests/interop/%s%s", srcdir(), legacy ? "" : "pir/", name);
  snprintf(src, sizeof src, "%s/%s", dir, legacy ? "model.pdmodel" : "model.json");
  snprintf(params, sizeof params, "%s/model.pdiparams", dir);
  snprintf(work, sizeof work, "%s-%s", legacy ? "as-json" : "rewritten", name);
  ok(rewrite_json(src, access(params, F_OK) == 0 ? params : NULL, work, path, sizeof path) &&
         run_model(dir, path, REL, ABS),
     "%s%s written %s by pdlang's PIR writer: PaddlePaddle's outputs", legacy ? "" : "pir/", name,
     legacy ? "as PIR JSON" : "again");
}

/* The family NAME as PaddlePaddle's default mode exports it (tests/interop/zoo_pir/NAME,
 * tools/paddle_zoo_pir.py): on the legacy export's inputs, against its own outputs. */
static void check_zoo_pir(const char *name) {
  char dir[1024], indir[1024], work[1024], path[1200], pname[256];
  snprintf(dir, sizeof dir, "%s/tests/interop/zoo_pir/%s", srcdir(), name);
  snprintf(indir, sizeof indir, "%s/tests/interop/zoo/%s", srcdir(), name);
  snprintf(work, sizeof work, "zoo-pir-%s", name);
  snprintf(path, sizeof path, "%s/inference.json", work);
  snprintf(pname, sizeof pname, "pir/%s", name);
  ok(zoo_setup(pname, work) && run_model_on(indir, dir, path, 1e-4, 1e-6),
     "%s, PaddlePaddle 3's PIR export: PaddlePaddle's outputs (tools/paddle_zoo_pir.py)", name);
  char again[1024], params[1200], rpath[1200];
  snprintf(again, sizeof again, "zoo-pir-%s-rewritten", name);
  snprintf(params, sizeof params, "%s/inference.pdiparams", work);
  ok(rewrite_json(path, params, again, rpath, sizeof rpath) &&
         run_model_on(indir, dir, rpath, 1e-4, 1e-6),
     "%s, PaddlePaddle 3's PIR export written again by pdlang's PIR writer: the same outputs",
     name);
}

static void check_zoo(const char *name) {
  char dir[1024], work[1024], path[1200];
  snprintf(dir, sizeof dir, "%s/tests/interop/zoo/%s", srcdir(), name);
  snprintf(work, sizeof work, "zoo-%s", name);
  snprintf(path, sizeof path, "%s/inference.pdmodel", work);
  ok(zoo_setup(name, work) && run_model(dir, path, 1e-4, 1e-6),
     "%s: PaddlePaddle's outputs (tools/paddle_zoo.py)", name);
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

/* File a against file b: floats within rel (1e-6 absolute), integers equal. */
static int compare_files(const char *a, const char *b, double rel) {
  pd_dataset *ds;
  int dt, nd;
  int64_t dims[PD_STATE_MAX_DIMS + 1];
  if (read_npy(a, &ds, &dt, &nd, dims)) return 1;
  bool same;
  if (dt == PD_DTYPE_INT32 || dt == PD_DTYPE_INT64) {
    pd_tensor_info t = {.dtype = dt, .ndims = nd, .data = pd_dataset_field_data(ds, 0)};
    for (int k = 0; k < nd; k++) t.dims[k] = dims[k];
    same = agrees_int(a, &t, b);
  } else {
    same = dt == PD_DTYPE_FLOAT32 && agrees(a, pd_dataset_field_data(ds, 0), nd, dims, b, rel, ABS);
  }
  pd_dataset_free(ds);
  return same ? 0 : 1;
}

/* Models a and b (two files of one model: its .pdmodel and its .json) run on the same inputs
 * and give the same outputs (1e-5 relative). The inputs are made from a's declarations: -1
 * dims are 3, floats in [-1, 1), integers in [0, 20); a padded sequence input x beside
 * x_lengths gets 5 time steps, the lengths 5, 1, 3, ... with x's rows past them zero. */
static int same_models(const char *a, const char *b) {
  pd_state *st[2] = {NULL, NULL};
  const char *path[2] = {a, b};
  int bad = 0;
  for (int k = 0; k < 2 && !bad; k++)
    if (pd_state_new(&st[k]) || pd_state_load_model(st[k], path[k])) {
      printf("# %s: %s\n", path[k], st[k] ? pd_state_error(st[k])->text : "out of memory");
      bad = 1;
    }
  int nin = 0, nout = 0, nout_b = 0;
  const char *const *ins = NULL, *const *outs = NULL, *const *outs_b = NULL;
  if (!bad && (pd_state_inputs(st[0], &nin, &ins) || pd_state_outputs(st[0], &nout, &outs) ||
               pd_state_outputs(st[1], &nout_b, &outs_b) || nout != nout_b)) {
    printf("# the models have other outputs (%d and %d)\n", nout, nout_b);
    bad = 1;
  }
  uint64_t seed = 24;
  for (int i = 0; i < nin && !bad; i++) {
    pd_tensor_info t;
    if (pd_state_describe(st[0], ins[i], &t)) {
      printf("# no input %s\n", ins[i]);
      bad = 1;
      break;
    }
    char lname[256];
    snprintf(lname, sizeof lname, "%s_lengths", ins[i]);
    bool seq = false, lens = strlen(ins[i]) > 8 && !strcmp(ins[i] + strlen(ins[i]) - 8, "_lengths");
    for (int k = 0; k < nin; k++) seq |= strcmp(ins[k], lname) == 0;
    int64_t n = 1;
    for (int d = 0; d < t.ndims; d++) {
      if (t.dims[d] < 0) t.dims[d] = seq && d == 1 ? 5 : 3;
      n *= t.dims[d];
    }
    size_t es = t.dtype == PD_DTYPE_INT64 ? 8 : t.dtype == PD_DTYPE_BOOL ? 1 : 4;
    char *data = calloc((size_t)n + 1, es);
    if (!data) {
      bad = 1;
      break;
    }
    for (int64_t e = 0; e < n; e++) {
      double u = (double)(pd_reader_splitmix64(&seed) >> 40) / (double)(1 << 24);
      if (t.dtype == PD_DTYPE_FLOAT32) ((float *)data)[e] = (float)(2 * u - 1);
      else if (t.dtype == PD_DTYPE_INT64) ((int64_t *)data)[e] = lens ? 1 + (5 * e + 4) % 5 : (int64_t)(20 * u);
      else if (t.dtype == PD_DTYPE_INT32) ((int32_t *)data)[e] = (int32_t)(20 * u);
      else if (t.dtype == PD_DTYPE_BOOL) data[e] = u < 0.5;
    }
    if (seq) { /* zero the rows past each length (5, 1, 3, 5, ...: those made above) */
      int64_t row = n / (t.dims[0] * t.dims[1]);
      for (int64_t s = 0; s < t.dims[0]; s++)
        for (int64_t tt = 1 + (5 * s + 4) % 5; tt < t.dims[1]; tt++)
          memset(data + (size_t)((s * t.dims[1] + tt) * row) * es, 0, (size_t)row * es);
    }
    for (int k = 0; k < 2 && !bad; k++)
      if (pd_state_feed(st[k], ins[i], t.dtype, t.ndims, t.dims, data)) {
        printf("# %s: %s\n", path[k], pd_state_error(st[k])->text);
        bad = 1;
      }
    free(data);
  }
  for (int k = 0; k < 2 && !bad; k++)
    if (pd_state_run(st[k])) {
      printf("# %s: %s\n", path[k], pd_state_error(st[k])->text);
      bad = 1;
    }
  for (int i = 0; i < nout && !bad; i++) {
    pd_tensor_info x, y;
    if (pd_state_fetch(st[0], outs[i], &x) || pd_state_fetch(st[1], outs_b[i], &y)) {
      printf("# no output %s\n", outs[i]);
      bad = 1;
      break;
    }
    bool same = x.dtype == y.dtype && x.ndims == y.ndims && x.nbytes == y.nbytes;
    for (int d = 0; same && d < x.ndims; d++) same = x.dims[d] == y.dims[d];
    if (same && x.dtype == PD_DTYPE_FLOAT32) {
      const float *p = x.data, *q = y.data;
      for (size_t e = 0; same && e < x.nbytes / 4; e++)
        same = fabs((double)p[e] - q[e]) <= ABS + REL * fabs((double)q[e]);
    } else if (same) {
      same = memcmp(x.data, y.data, x.nbytes) == 0;
    }
    if (!same) printf("# output %d (%s, %s) differs\n", i, outs[i], outs_b[i]);
    bad |= !same;
  }
  for (int k = 0; k < 2; k++) pd_state_free(st[k]);
  return bad;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--same") == 0) return same_models(argv[2], argv[3]);
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "--compare") == 0)
    return compare_files(argv[2], argv[3], argc == 5 ? atof(argv[4]) : REL);
  if (argc == 4 && strcmp(argv[1], "--zoo-params") == 0) return zoo_setup(argv[2], argv[3]) ? 0 : 1;
  if (argc == 3 && strcmp(argv[1], "--zoo-params") == 0) {  /* a family exported elsewhere */
    char path[1200];
    snprintf(path, sizeof path, "%s/inference.pdiparams", argv[2]);
    return zoo_params(argv[2], path) ? 0 : 1;
  }
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
      /* Saved by Paddle 3.3 in its default mode, PIR JSON (tools/paddle_pir_models.py). */
      {"pir/mlp", "model.json"}, {"pir/lenet", "model.json"}, {"pir/cnn_bn", "model.json"},
      {"pir/cond", "model.json"}, {"pir/cond_false", "model.json"},
      {"pir/while_loop", "model.json"}, {"pir/transformer", "model.json"},
      {"pir/lstm", "model.json"}, {"pir/gru_bidi", "model.json"}, {"pir/jit_cnn", "model.json"},
      {"pir/lstm2_bidi_lengths", "model.json"}, {"pir/gru2_lengths", "model.json"},
      {"pir/misc", "model.json"},
      {"seqconv_textcnn", "model.pdmodel"},
      {"fluid_lstm", "model.pdmodel"},
      {"fluid_gru", "model.pdmodel"},
      {"fluid_lstmp", "model.pdmodel"},
      {"fluid_bert", "model.pdmodel"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    check_model(cases[i].name, cases[i].layout);
  /* Fluid's matmul (transposes, alpha) as PIR's matmul and scale */
  check_rewritten("fluid_bert", true);
  static const char *const zoo[] = {"yolov3", "ssd", "blazeface", "ppyoloe", "picodet",
                                    "mobilenet_v1", "mobilenet_v2", "mobilenet_v3", "pp_lcnet",
                                    "resnet50_vd", "pp_hgnet", "pp_liteseg", "unet",
                                    "ernie3_tiny", "db_det", "db_det_dbfpn", "crnn_rec",
                                    "ppocrv3_rec", "ppocrv4_rec", "svtr_rec", "text_cls"};
  for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++) check_zoo(zoo[i]);
  static const char *const zoo_pir[] = {"mobilenet_v1", "mobilenet_v2", "mobilenet_v3",
                                        "pp_lcnet",     "resnet50_vd",  "pp_hgnet",
                                        "pp_liteseg",   "unet",         "ernie3_tiny",
                                        "db_det",       "crnn_rec",     "ppocrv3_rec",
                                        "ppocrv4_rec",  "svtr_rec",     "text_cls"};
  for (size_t i = 0; i < sizeof zoo_pir / sizeof zoo_pir[0]; i++) check_zoo_pir(zoo_pir[i]);
  static const char *const pir_models[] = {"mlp", "lenet", "cnn_bn", "cond", "cond_false",
                                           "while_loop", "transformer", "lstm", "gru_bidi",
                                           "lstm2_bidi_lengths", "gru2_lengths", "jit_cnn",
                                           "misc"};
  for (size_t i = 0; i < sizeof pir_models / sizeof *pir_models; i++)
    check_rewritten(pir_models[i], false);
  check_refused();
  return tap_done();
}
