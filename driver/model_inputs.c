/* model_inputs.c -- what `pdlang exec` and `pdlang bench` share: finding a saved model (a file,
 * a path prefix as PaddlePaddle takes it, a folder), loading it with its parameters, and making
 * its inputs from --feed NAME=FILE.npy and --lengths NAME=LENGTHS.npy with exec's rules (each
 * input by name, once; a lossless cast of another dtype, with a note; sequences as rows and
 * lengths, padded for a model saved for PaddlePaddle), and printing a run's errors at the
 * model's source lines. */
#include "config.h"
#include "driver/driver.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "vm/run/model.h"
#include "base/diag.h"
#include "vm/passes/paddle_export.h"
#include "vm/reader/reader.h"

static const char *cmd_name = "exec"; /* the command whose messages these are */

/* "pdlang CMD: " and the message, to stderr. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  fprintf(stderr, "pdlang %s: ", cmd_name);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

/* A whole .npy file as one tensor [N, per-sample dims...] (a 1-D file gives [N, 1]). */
static pd_status load_npy(const char *path, pd_tensor *t, pd_error *err) {
  pd_dataset *ds;
  pd_status st = pd_dataset_npy(path, NULL, &ds, err);
  if (st) return st;
  int64_t dims[PD_TENSOR_MAX_DIMS];
  int nd = pd_dataset_field_shape(ds, 0, dims + 1);
  dims[0] = pd_dataset_size(ds);
  st = pd_tensor_set_data(t, pd_dataset_field_dtype(ds, 0), nd + 1, dims,
                          pd_dataset_field_data(ds, 0));
  pd_dataset_free(ds);
  if (st) return pd_error_set(err, st, (pd_loc){0}, "%s: out of memory", path);
  return PD_OK;
}

/* What a .npy file's header says: its dtype (the name of NumPy's descr, e.g. "float16", or the
 * descr itself when pdlang has no name for it), rank and dims. The reader (load_npy) refuses
 * files it cannot read with its own message; this tells, beside it, a 1-D file from an [N, 1]
 * one and names a dtype the reader does not take. False when the header cannot be read. */
typedef struct npy_head {
  char dtype[24];
  int rank;
  int64_t dims[PD_TENSOR_MAX_DIMS];
} npy_head;

static bool read_npy_head(const char *path, npy_head *h) {
  unsigned char pre[12];
  char text[1024];
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t n = fread(pre, 1, sizeof pre, f), len = 0, off = 10;
  if (n == sizeof pre && memcmp(pre, "\x93NUMPY", 6) == 0) {
    len = pre[6] == 1 ? (size_t)pre[8] | (size_t)pre[9] << 8
                      : (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                            (size_t)pre[11] << 24;
    off = pre[6] == 1 ? 10 : 12;
  }
  bool ok = len > 0 && len < sizeof text && fseek(f, (long)off, SEEK_SET) == 0 &&
            fread(text, 1, len, f) == len;
  fclose(f);
  if (!ok) return false;
  text[len] = 0;
  const char *d = strstr(text, "'descr'"), *sh = strstr(text, "'shape'");
  if (!d || !sh || !(d = strchr(d + 7, '\'')) || !(sh = strchr(sh, '('))) return false;
  size_t k = strcspn(d + 1, "'");
  if (k >= sizeof h->dtype) return false;
  static const char *const names[][2] = {
      {"f2", "float16"}, {"f4", "float32"}, {"f8", "float64"}, {"i1", "int8"}, {"i2", "int16"},
      {"i4", "int32"}, {"i8", "int64"}, {"u1", "uint8"}, {"u2", "uint16"}, {"u4", "uint32"},
      {"u8", "uint64"}, {"b1", "bool"}, {"c8", "complex64"}, {"c16", "complex128"}};
  snprintf(h->dtype, sizeof h->dtype, "%.*s", (int)k, d + 1);
  for (size_t i = 0; i < PD_ARRAY_LEN(names); i++)
    if (strchr("<|=", h->dtype[0]) && strcmp(h->dtype + 1, names[i][0]) == 0)
      snprintf(h->dtype, sizeof h->dtype, "%s", names[i][1]);
  h->rank = 0;
  for (const char *c = sh + 1; *c && *c != ')';) {
    char *end;
    long long x = strtoll(c, &end, 10);
    if (end == c) {
      c++;
      continue;
    }
    if (h->rank == PD_TENSOR_MAX_DIMS) return false;
    h->dims[h->rank++] = x;
    c = end;
  }
  return true;
}

/* ---- What an input takes: one rule for every file given for one ----
 * A file of the input's dtype is taken as it is. One of another dtype is converted to the
 * input's, with a note, when the input is float32, float64, int32 or int64 and every value of
 * the file converts to it exactly (a float file's values round to float32), as the readers of
 * training convert a data set's values (train/train.c); anything else is refused, in one message
 * form that says what the input takes. */

/* The dtypes the .npy reader reads (vm/reader/reader.h), in the order messages list them. */
static const pd_dtype npy_dtypes[] = {PD_FP32, PD_FP64, PD_FP16, PD_INT64, PD_INT32, PD_UINT8,
                                      PD_INT8, PD_BOOL};

/* Whether the reader reads a file of this dtype (a read_npy_head name). */
static bool npy_reads(const char *dtype) {
  for (size_t i = 0; i < PD_ARRAY_LEN(npy_dtypes); i++)
    if (strcmp(dtype, pd_dtype_name(npy_dtypes[i])) == 0) return true;
  return false;
}

static bool converts_to(pd_dtype to) {
  return to == PD_FP32 || to == PD_FP64 || to == PD_INT64 || to == PD_INT32;
}

/* "it takes float32 [-1, 4], or float64 (rounded), int64, ... whose values convert to it
 * exactly" into b. */
static void put_takes(pd_buf *b, const pd_var_desc *v) {
  pd_buf_printf(b, "it takes %s ", pd_dtype_name(v->dtype));
  pd_buf_put_dims(b, v->ndims, v->dims);
  if (!converts_to(v->dtype)) {
    pd_buf_puts(b, " only");
    return;
  }
  pd_buf_puts(b, ", or");
  int k = 0;
  for (size_t i = 0; i < PD_ARRAY_LEN(npy_dtypes); i++) {
    if (npy_dtypes[i] == v->dtype) continue;
    pd_buf_printf(b, "%s %s%s", k++ ? "," : "", pd_dtype_name(npy_dtypes[i]),
                  v->dtype == PD_FP32 && npy_dtypes[i] == PD_FP64 ? " (rounded)" : "");
  }
  pd_buf_printf(b, " whose values convert to %s exactly", pd_dtype_name(v->dtype));
}

/* The one message of a file an input does not take: the input, what the file holds (its
 * dtype name, its dims), why (NULL: the dtype or shape), and what the input takes. */
static void refuse_input(const pd_var_desc *v, const char *file, const char *dtype, int nd,
                         const int64_t *dims, const char *why) {
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "pdlang %s: input %s is %s ", cmd_name, v->name, pd_dtype_name(v->dtype));
  pd_buf_put_dims(&b, v->ndims, v->dims);
  pd_buf_printf(&b, ", but %s holds %s ", file, dtype);
  pd_buf_put_dims(&b, nd, dims);
  if (why) pd_buf_printf(&b, ": %s", why);
  pd_buf_puts(&b, "; ");
  put_takes(&b, v);
  if (!b.oom) fprintf(stderr, "%s\n", b.data);
  pd_buf_free(&b);
}

/* The index of the first value of t that does not convert to dtype `to` exactly (floats into
 * float32: rounded, within its range), or -1. */
static int64_t first_inexact(const pd_tensor *t, pd_dtype to) {
  int64_t n = pd_tensor_numel(t);
  bool from_float = pd_dtype_is_float(t->dtype);
  for (int64_t i = 0; i < n; i++) {
    bool fits;
    if (t->dtype == PD_INT64 && (to == PD_FP32 || to == PD_FP64)) {
      int64_t x = ((const int64_t *)pd_tensor_data(t))[i];  /* beyond a double's 2^53 */
      bool inside = (double)x > -9.2e18 && (double)x < 9.2e18;  /* the round trip is defined */
      fits = inside && (to == PD_FP32 ? (int64_t)(float)x == x : (int64_t)(double)x == x);
    } else {
      double x = pd_tensor_get(t, i);
      switch (to) {
        case PD_FP32: fits = from_float ? !(fabs(x) > FLT_MAX) : (double)(float)x == x; break;
        case PD_FP64: fits = true; break;
        case PD_INT64: fits = x == floor(x) && fabs(x) < 9007199254740992.0; break;
        default: fits = x == floor(x) && x >= INT32_MIN && x <= INT32_MAX; break;
      }
    }
    if (!fits) return i;
  }
  return -1;
}

/* Make the file's tensor fit the model's input var where that changes no value: a 1-D file
 * (read as [N, 1]) for a rank-1 input becomes [N] (and an [N, 1] file too); a file of another
 * dtype is converted by the rule above, with a note. Then check that it fits (dtype, rank,
 * known dims); says why not. */
static bool input_fits(const pd_program *p, const char *name, pd_tensor *t, const char *file) {
  const pd_var_desc *v = pd_block_find_var_local(p->blocks[0], name);
  if (!v || v->ndims < 0) return true;
  if (v->ndims == 1 && t->ndims == 2 && t->dims[1] == 1) t->ndims = 1;
  bool shape = v->ndims == t->ndims;
  for (int k = 0; shape && k < v->ndims; k++) shape = v->dims[k] < 0 || v->dims[k] == t->dims[k];
  if (!shape || (v->dtype != t->dtype && !converts_to(v->dtype))) {
    refuse_input(v, file, pd_dtype_name(t->dtype), t->ndims, t->dims, NULL);
    return false;
  }
  if (v->dtype == t->dtype) return true;
  int64_t bad = first_inexact(t, v->dtype);
  if (bad >= 0) {
    char why[160];
    snprintf(why, sizeof why, "its value %.17g (element %lld) does not convert to %s exactly",
             pd_tensor_get(t, bad), (long long)bad, pd_dtype_name(v->dtype));
    refuse_input(v, file, pd_dtype_name(t->dtype), t->ndims, t->dims, why);
    return false;
  }
  pd_tensor c;
  pd_tensor_init(&c);
  if (pd_tensor_resize(&c, v->dtype, t->ndims, t->dims)) {
    say("out of memory converting %s\n", file);
    pd_tensor_release(&c);
    return false;
  }
  void *d = pd_tensor_data(&c);
  const int64_t *i64 = t->dtype == PD_INT64 ? pd_tensor_data(t) : NULL;
  for (int64_t i = 0, n = pd_tensor_numel(t); i < n; i++) {
    double x = pd_tensor_get(t, i);  /* exact: first_inexact said so (int64 read directly) */
    switch (v->dtype) {
      case PD_FP32: ((float *)d)[i] = i64 ? (float)i64[i] : (float)x; break;
      case PD_FP64: ((double *)d)[i] = i64 ? (double)i64[i] : x; break;
      case PD_INT64: ((int64_t *)d)[i] = (int64_t)x; break;
      default: ((int32_t *)d)[i] = i64 ? (int32_t)i64[i] : (int32_t)x; break;
    }
  }
  bool rounds = v->dtype == PD_FP32 && t->dtype == PD_FP64;
  fprintf(stderr, "pdlang: note: %s holds %s; cast to %s, the dtype of input %s (%s)\n",
          file, pd_dtype_name(t->dtype), pd_dtype_name(v->dtype), name,
          rounds ? "values round to float32" : "every value exact");
  pd_tensor_release(t);
  *t = c;
  return true;
}

static void describe_inputs(const pd_model *m) {
  fprintf(stderr, "the model's inputs:\n");
  for (int i = 0; i < m->nfeeds; i++) {
    const pd_var_desc *v = pd_block_find_var_local(m->program->blocks[0], m->feeds[i].var);
    fprintf(stderr, "  %s", m->feeds[i].var);
    if (v && v->ndims >= 0) {
      pd_buf b;
      pd_buf_init(&b);
      pd_buf_put_dims(&b, v->ndims, v->dims);
      if (!b.oom) fprintf(stderr, " %s %s", pd_dtype_name(v->dtype), b.data);
      pd_buf_free(&b);
    }
    fprintf(stderr, "\n");
  }
}

/* The sources an error of the model's run names (its line's, its calls'), opened once each:
 * as given, or beside the model (a model travels without its script). */
typedef struct run_sources {
  const char *model;
  pd_source *open[8];
  int n;
} run_sources;

static const pd_source *find_source(void *ctx, const char *file) {
  run_sources *rs = ctx;
  for (int i = 0; i < rs->n; i++)
    if (strcmp(rs->open[i]->name, file) == 0) return rs->open[i];
  if (!*file || rs->n == (int)PD_ARRAY_LEN(rs->open)) return NULL;
  pd_source *src = NULL;
  if (pd_source_open(file, &src, NULL) != PD_OK && file[0] != '/' && rs->model) {
    const char *slash = strrchr(rs->model, '/');
    if (slash) {
      pd_buf path;
      pd_buf_init(&path);
      pd_buf_printf(&path, "%.*s/%s", (int)(slash - rs->model), rs->model, file);
      if (!path.oom && pd_source_open(path.data, &src, NULL) != PD_OK) src = NULL;
      pd_buf_free(&path);
    }
  }
  if (!src) return NULL;
  /* Named as the locations name it, so that the next lookup finds it. */
  char *name = pd_strdup(file);
  if (!name) {
    pd_source_free(src);
    return NULL;
  }
  pd_free(src->name);
  src->name = name;
  rs->open[rs->n++] = src;
  return src;
}

/* Lines past the end of the file found: another file by that name, not shown. */
static const pd_source *find_line(run_sources *rs, const char *file, int line) {
  const pd_source *src = find_source(rs, file);
  return src && (size_t)line <= src->nlines ? src : NULL;
}

typedef struct located { run_sources *rs; const pd_error *err; } located;

static const pd_source *find_checked(void *ctx, const char *file) {
  const located *l = ctx;
  const pd_error *err = l->err;
  int line = 0;
  if (err->loc.file && strcmp(err->loc.file, file) == 0 && err->loc.line > line)
    line = err->loc.line;
  for (int i = 0; i < err->ncalls; i++)
    if (err->calls[i].loc.file && strcmp(err->calls[i].loc.file, file) == 0 &&
        err->calls[i].loc.line > line)
      line = err->calls[i].loc.line;
  return find_line(l->rs, file, line);
}

/* An error of the model's run: with the source lines and carets of its location and the calls
 * it is inside, where the .pd files they name are readable (as given, or beside the model) and
 * long enough; otherwise the locations alone. */
void pd_driver_print_model_error(const char *model, const pd_error *err) {
  run_sources rs = {.model = model};
  located l = {&rs, err};
  pd_buf b;
  pd_buf_init(&b);
  pd_diag_render_error_in(&b, find_checked, &l, err);
  if (b.data && !b.oom) fputs(b.data, stderr);
  else fprintf(stderr, "pdlang: %s\n", err->msg ? err->msg : pd_status_str(err->status));
  pd_buf_free(&b);
  for (int i = 0; i < rs.n; i++) pd_source_free(rs.open[i]);
}

/* --lengths NAME=FILE.npy: t (the values of a sequence input, one row per step) becomes a
 * batch of sequences of the lengths in the file (1-D, int32 or int64, adding up to t's rows). */
static bool set_lengths(pd_tensor *t, const char *name, const char *file) {
  pd_tensor lt;
  pd_tensor_init(&lt);
  pd_error err = {0};
  bool ok = false;
  if (load_npy(file, &lt, &err)) {
    say("--lengths %s: %s\n", name, err.msg ? err.msg : "cannot read it");
    pd_error_clear(&err);
    pd_tensor_release(&lt);
    return false;
  }
  int64_t n = pd_tensor_numel(&lt), rows = t->ndims > 0 ? t->dims[0] : 0;
  int64_t *off = NULL;
  npy_head h;
  if (!read_npy_head(file, &h)) h.rank = 1;  /* the reader read it: its rank is unknown here */
  if ((lt.dtype != PD_INT64 && lt.dtype != PD_INT32) || n < 1 || h.rank != 1) {
    pd_buf b;
    pd_buf_init(&b);
    if (h.rank != 1) pd_buf_put_dims(&b, h.rank, h.dims);
    else pd_buf_printf(&b, "[%lld]", (long long)n);
    say("--lengths %s: %s holds %s %s; it takes a 1-D int32 or int64 "
                    "array of one or more lengths\n", name, file, pd_dtype_name(lt.dtype),
            b.data ? b.data : "?");
    pd_buf_free(&b);
  } else if (!(off = pd_malloc(sizeof *off * (size_t)(n + 1)))) {
    say("out of memory\n");
  } else {
    off[0] = 0;
    ok = true;
    for (int64_t i = 0; ok && i < n; i++) {
      int64_t len = lt.dtype == PD_INT64 ? PD_TENSOR_I64(&lt)[i] : PD_TENSOR_I32(&lt)[i];
      ok = len >= 0 && len <= rows - off[i];
      if (!ok)
        say("--lengths %s: sequence %lld has length %lld, but the %lld "
                        "rows of the values hold only %lld more\n", name, (long long)i,
                (long long)len, (long long)rows, (long long)(rows - off[i]));
      else off[i + 1] = off[i] + len;
    }
    if (ok && off[n] != rows) {
      say("--lengths %s: the %lld lengths add up to %lld rows, but the "
                      "values have %lld\n", name, (long long)n, (long long)off[n], (long long)rows);
      ok = false;
    }
    const int64_t *lv = off;
    int64_t len = n + 1;
    if (ok && pd_tensor_set_lod(t, 1, &lv, &len)) {
      say("out of memory\n");
      ok = false;
    }
  }
  pd_free(off);
  pd_tensor_release(&lt);
  return ok;
}

/* A padded sequence input of a saved model (vm/passes/paddle_export.h) given as rows with
 * --lengths: t (rows with the LoD of set_lengths) becomes the padded batch [N, T, ...], and
 * lengths (the model's NAME_lengths input) each sequence's length. */
static bool pad_input(pd_tensor *t, pd_tensor *lengths) {
  int64_t nseq = t->nlod ? t->lod[0].n - 1 : 0;
  int64_t *len = pd_malloc(sizeof *len * (size_t)(nseq > 0 ? nseq : 1));
  if (!len) {
    say("out of memory\n");
    return false;
  }
  for (int64_t i = 0; i < nseq; i++) len[i] = t->lod[0].offsets[i + 1] - t->lod[0].offsets[i];
  pd_tensor p;
  pd_tensor_init(&p);
  int64_t nd[1] = {nseq};
  pd_status st = pd_export_pad_rows(t->dtype, t->ndims, t->dims, pd_tensor_data(t), nseq, len, &p);
  if (!st) st = pd_tensor_set_data(lengths, PD_INT64, 1, nd, len);
  pd_free(len);
  if (st) {
    say("cannot pad the sequences: %s\n", pd_status_str(st));
    pd_tensor_release(&p);
    return false;
  }
  pd_tensor_release(t);
  *t = p;
  return true;
}

/* Whether a --feed file is an image (by its name: .png, .jpg, .jpeg, any case; a list of them
 * separated by commas is one). */
static bool is_image_name(const char *file) {
  size_t n = strcspn(file, ",");
  static const char *const exts[] = {".png", ".jpg", ".jpeg"};
  for (size_t i = 0; i < PD_ARRAY_LEN(exts); i++) {
    size_t e = strlen(exts[i]);
    if (n > e && strncasecmp(file + n - e, exts[i], e) == 0) return true;
  }
  return false;
}

/* --feed NAME=A.png[,B.jpg...]: the images as the model's images(...) reader read them, from
 * MODEL.preprocess (which save wrote beside it), a batch [n, C, H, W] into t (pd_image_files:
 * reshaped for an input declared flat). */
static bool load_images(const pd_program *p, const char *model, const char *name,
                        const char *files, pd_tensor *t) {
  char *pp = pd_model_side_path(model, ".preprocess");
  char *list = pd_strdup(files);
  const char *paths[256];
  int n = 0;
  pd_image_prep ip;
  pd_error err = {0};
  bool good = false;
  if (!pp || !list) {
    say("out of memory\n");
    goto out;
  }
  pd_status st = pd_image_prep_load(pp, &ip, &err);
  if (st == PD_ENOTFOUND || (!st && strcmp(ip.input, name) != 0)) {
    say("--feed %s=%s: an image file, but the model has no image preprocessing for input %s "
        "(save writes %s beside a model whose input an images(...) reader fed%s%s)\n", name,
        files, name, pp, st ? "" : "; it is for input ", st ? "" : ip.input);
    goto out;
  }
  if (st) {
    pd_driver_print_model_error(pp, &err);
    goto out;
  }
  for (char *s = list, *save = NULL, *f; (f = strtok_r(s, ",", &save)); s = NULL) {
    if (n == (int)PD_ARRAY_LEN(paths)) {
      say("--feed %s: more than %d images\n", name, n);
      goto out;
    }
    paths[n++] = f;
  }
  const pd_var_desc *v = pd_block_find_var_local(p->blocks[0], name);
  if ((st = pd_image_files(&ip.o, n, paths, v ? v->ndims : 0, v ? v->dims : NULL, t, &err))) {
    say("--feed %s: %s\n", name, err.msg ? err.msg : pd_status_str(st));
    goto out;
  }
  good = true;
out:
  pd_error_clear(&err);
  pd_free(pp);
  pd_free(list);
  return good;
}

/* The index of --lengths NAME among len_names, else nlens. */
static int find_name(int n, const char *const *names, const char *name) {
  int i = 0;
  while (i < n && strcmp(names[i], name) != 0) i++;
  return i;
}


int pd_driver_feed_arg(const char *cmd, int argc, char **argv, int *i, pd_driver_feeds *f) {
  bool lengths = strcmp(argv[*i], "--lengths") == 0;
  if ((!lengths && strcmp(argv[*i], "--feed") != 0) || *i + 1 >= argc) return 0;
  char *eq = strchr(argv[++*i], '=');
  int *n = lengths ? &f->nlens : &f->nfeeds;
  if (!eq || eq == argv[*i] || !eq[1] || *n == PD_DRIVER_MAX_IO) {
    fprintf(stderr, "pdlang %s: %s takes NAME=FILE.npy, got '%s'\n", cmd, argv[*i - 1], argv[*i]);
    return -1;
  }
  *eq = 0;
  (lengths ? f->len_names : f->feed_names)[*n] = argv[*i];
  (lengths ? f->len_files : f->feed_files)[(*n)++] = eq + 1;
  return 1;
}

int pd_driver_load_model(const char *cmd, const char *model, const char *params,
                         const pd_driver_feeds *f, pd_model *m, pd_tensor *inputs, int *ninputs,
                         char **found) {
  cmd_name = cmd;
  pd_error err = {0};
  int rc = 1;
  pd_model *mp = m;
#define m (*mp)
  const int nfeed_args = f->nfeeds, nlens = f->nlens;
  const char *const *feed_names = f->feed_names, *const *feed_files = f->feed_files;
  const char *const *len_names = f->len_names, *const *len_files = f->len_files;
  *ninputs = 0;
  *found = NULL;
  pd_status st = pd_model_find(model, found, &err);
  if (st) {
    say("%s\n", err.msg ? err.msg : pd_status_str(st));
    pd_error_clear(&err);
    return 1;
  }
  if (*found) model = *found;
  st = pd_model_load(&m, model, &err);
  if (st) goto fail;
  if (m.nfetches == 0) {
    say("%s has no fetch ops, so nothing to show (save it with "
                    "save(path, target) in a script)\n", model);
    goto out;
  }
  /* Inputs strictly by name, each once; outputs named by --out must be the model's. */
  for (int j = 0; j < nfeed_args; j++) {
    int known = 0, twice = 0;
    for (int i = 0; i < m.nfeeds; i++) known += strcmp(feed_names[j], m.feeds[i].var) == 0;
    for (int k = 0; k < j; k++) twice += strcmp(feed_names[j], feed_names[k]) == 0;
    if (!known || twice) {
      say("--feed %s: %s\n", feed_names[j],
              twice ? "given twice" : "the model has no input of that name");
      describe_inputs(&m);
      goto out;
    }
  }
  for (int j = 0; j < nlens; j++) {
    const pd_var_desc *v = NULL;
    for (int i = 0; i < m.nfeeds; i++)
      if (strcmp(len_names[j], m.feeds[i].var) == 0)
        v = pd_block_find_var_local(m.program->blocks[0], len_names[j]);
    if (!v || (v->lod_level != 1 && !pd_export_padded_input(m.program, len_names[j]))) {
      say("--lengths %s: %s\n", len_names[j],
              v ? "that input is not a batch of sequences (lod_level 1)"
                : "the model has no input of that name");
      describe_inputs(&m);
      goto out;
    }
  }
  /* A padded sequence input given as rows with --lengths also gives its NAME_lengths input. */
  int padded = 0;
  for (int j = 0; j < nlens; j++) padded += pd_export_padded_input(m.program, len_names[j]);
  for (int j = 0; j < nfeed_args; j++) {
    char ln[256];
    snprintf(ln, sizeof ln, "%s%s", feed_names[j], PD_EXPORT_LENGTHS_SUFFIX);
    if (pd_export_padded_input(m.program, feed_names[j]) &&
        find_name(nlens, len_names, feed_names[j]) == nlens &&
        find_name(nfeed_args, feed_names, ln) == nfeed_args) {
      say("input %s is a batch of sequences: give each sequence's "
                      "length with --lengths %s=LENGTHS.npy (%s then holds the rows, one step "
                      "a row, then the next sequence's), or %s padded [N, T, ...] and --feed "
                      "%s=LENGTHS.npy\n", feed_names[j], feed_names[j], feed_files[j],
              feed_names[j], ln);
      goto out;
    }
  }
  if (nfeed_args + padded != m.nfeeds) {
    say("the model takes %d input%s, %d given with --feed\n",
            m.nfeeds - padded, m.nfeeds - padded == 1 ? "" : "s", nfeed_args);
    describe_inputs(&m);
    goto out;
  }
  if ((st = pd_model_load_params(&m, model, params, &err))) goto fail;
  for (int i = 0; i < m.nfeeds; i++) pd_tensor_init(&inputs[(*ninputs)++]);
  for (int i = 0; i < m.nfeeds; i++) {
    int k = find_name(nfeed_args, feed_names, m.feeds[i].var);
    if (k == nfeed_args) continue;  /* NAME_lengths, from --lengths NAME */
    const pd_var_desc *fv = pd_block_find_var_local(m.program->blocks[0], m.feeds[i].var);
    npy_head h;
    if (is_image_name(feed_files[k])) {
      if (!load_images(m.program, model, m.feeds[i].var, feed_files[k], &inputs[i])) goto out;
    } else if ((st = load_npy(feed_files[k], &inputs[i], &err))) {
      if (!fv || fv->ndims < 0 || st == PD_ENOMEM || !read_npy_head(feed_files[k], &h) ||
          npy_reads(h.dtype))
        goto fail;
      /* a dtype the reader does not read: what the input takes, in the one form */
      refuse_input(fv, feed_files[k], h.dtype, h.rank, h.dims, NULL);
      pd_error_clear(&err);
      goto out;
    }
    int l = find_name(nlens, len_names, m.feeds[i].var);
    if (l < nlens && pd_export_padded_input(m.program, m.feeds[i].var)) {
      char ln[256];
      snprintf(ln, sizeof ln, "%s%s", m.feeds[i].var, PD_EXPORT_LENGTHS_SUFFIX);
      int li = 0;
      while (li < m.nfeeds && strcmp(m.feeds[li].var, ln) != 0) li++;
      if (li == m.nfeeds || find_name(nfeed_args, feed_names, ln) < nfeed_args) {
        say("--lengths %s and --feed %s: give one of them\n",
                m.feeds[i].var, ln);
        goto out;
      }
      if (!set_lengths(&inputs[i], len_names[l], len_files[l]) ||
          !pad_input(&inputs[i], &inputs[li]))
        goto out;
      l = nlens;
    }
    if (!input_fits(m.program, m.feeds[i].var, &inputs[i], feed_files[k])) goto out;
    const pd_var_desc *v = pd_block_find_var_local(m.program->blocks[0], m.feeds[i].var);
    if (l == nlens && v && v->lod_level > 0) {
      say("input %s is a batch of sequences: give each sequence's "
                      "length with --lengths %s=LENGTHS.npy (the rows of %s, one step a row, "
                      "then the next sequence's)\n", m.feeds[i].var, m.feeds[i].var,
              feed_files[k]);
      goto out;
    }
    if (l < nlens && !set_lengths(&inputs[i], len_names[l], len_files[l])) goto out;
  }
  rc = 0;
  goto out;
fail:
  pd_driver_print_model_error(model, &err);
out:
  pd_error_clear(&err);
#undef m
  return rc;
}

int pd_driver_precision(const char *cmd, const char *spec, pd_dtype *out) {
  if (strcmp(spec, "fp32") == 0 || strcmp(spec, "float32") == 0) *out = PD_FP32;
  else if (strcmp(spec, "bf16") == 0 || strcmp(spec, "bfloat16") == 0) *out = PD_BF16;
  else {
    fprintf(stderr, "pdlang %s: --precision takes fp32 or bf16 (the products in bfloat16, "
                    "the rest in fp32), got '%s'\n", cmd, spec);
    return 2;
  }
  return 0;
}
