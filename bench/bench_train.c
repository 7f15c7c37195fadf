/* bench_train.c -- training throughput (samples/s) through pdlang's own training path, next to
 * the same models in PyTorch measured in the same run (bench/torch_train.py) when it is
 * installed. Not a test.
 *
 * Models (those of examples/train.pd, examples/cnn.pd and examples/resnet.pd): the MLP
 * 784-256-10 (ReLU) at batch 64 and 256, LeNet (conv 6@5x5 pad 2, max pool 2, conv 16@5x5, max
 * pool 2, fc 120, fc 84, fc 10; ReLU) at batch 64, and the residual network with batch norm of
 * examples/resnet.pd (without its dropout) at batch 64; softmax cross entropy, Adam (lr 0.001),
 * shuffled every epoch.
 *
 * pdlang side: the first samples of Fashion-MNIST's training set (synthetic images when the
 * data set is not installed) are written to .npy files in a temporary folder; a .pd script per
 * model trains on them with `train(..., reader = npy(...), epochs = 1 + E)` through the runner
 * (train/run.h), exactly as `pdlang run` would, and the samples/s of each epoch's summary line
 * is read back. The first epoch is warm-up; the figures are the median and the best of the
 * other E (on a machine shared with other work the best is the steadier one).
 * PyTorch side: torch_train.py reads the same .npy files and trains the same models with the
 * same batch, the same number of epochs and torch.set_num_threads(the threads pdlang uses).
 *
 * Usage: bench/bench_train [measured epochs, default 5] [mlp64|mlp256|cnn64|res64|mlp1024|
 * mlp1024bf16|cnn64bf16: the models whose key starts with it]
 * Mixed precision (issue 42): mlp1024 is the MLP 784-1024-1024-10 at batch 256 in fp32,
 * mlp1024bf16 the same with train(..., amp = "bf16"), cnn64bf16 LeNet so (its fc layers in bf16;
 * convolutions stay fp32); a table of the amp / fp32 ratios follows, and PyTorch's
 * torch.autocast("cpu", torch.bfloat16) against its fp32 when installed.
 * Environment: PDLANG_BENCH_PYTHON  the Python that has torch (default: python3);
 *              PDLANG_BENCH_TORCH   path of torch_train.py (default: beside this source file);
 *              PDLANG_BENCH_NO_TORCH=1  skip PyTorch.
 * Installing PyTorch (CPU) from PyPI in a virtual environment, see bench/README. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/diag.h"
#include "kernels/kernels.h"
#include "lang/compile.h"
#include "train/run.h"
#include "vm/reader/reader.h"

#define MAX_EPOCHS 20

typedef struct model {
  const char *key;     /* mlp64 ... */
  const char *label;   /* for the table */
  const char *body;    /* the .pd lines between the import and train() */
  int batch;
  int64_t samples;     /* per epoch */
  const char *amp;     /* train's amp option ("bf16"), or NULL: fp32 */
} model;

static const char mlp_body[] =
    "x     = data(\"images\", [-1, 784])\n"
    "label = data(\"label\", [-1, 1], int64)\n"
    "h     = fc(x, 256, act = relu)\n"
    "y     = fc(h, 10)\n"
    "cost  = mean(softmax_with_cross_entropy(y, label))\n";

static const char mlp1024_body[] =
    "x     = data(\"images\", [-1, 784])\n"
    "label = data(\"label\", [-1, 1], int64)\n"
    "h1    = fc(x, 1024, act = relu)\n"
    "h2    = fc(h1, 1024, act = relu)\n"
    "y     = fc(h2, 10)\n"
    "cost  = mean(softmax_with_cross_entropy(y, label))\n";

static const char cnn_body[] =
    "x     = data(\"images\", [-1, 1, 28, 28])\n"
    "label = data(\"label\", [-1, 1], int64)\n"
    "c1    = max_pool(conv(x, 6, 5, padding = 2, act = relu), 2)\n"
    "c2    = max_pool(conv(c1, 16, 5, act = relu), 2)\n"
    "h1    = fc(c2, 120, act = relu)\n"
    "h2    = fc(h1, 84, act = relu)\n"
    "y     = fc(h2, 10)\n"
    "cost  = mean(softmax_with_cross_entropy(y, label))\n";

static const char res_body[] =
    "def conv_bn(x, filters, size, stride = 1, act = none) {\n"
    "    let padding = 0\n"
    "    if (size == 3) {\n"
    "        padding = 1\n"
    "    }\n"
    "    return batch_norm(conv(x, filters, size, stride = stride, padding = padding,\n"
    "                           bias = false), act = act)\n"
    "}\n"
    "def res_block(x, filters, stride = 1) {\n"
    "    h = conv_bn(x, filters, 3, stride = stride, act = relu)\n"
    "    h = conv_bn(h, filters, 3)\n"
    "    s = x\n"
    "    if (stride != 1 or x.shape[1] != filters) {\n"
    "        s = conv_bn(x, filters, 1, stride = stride)\n"
    "    }\n"
    "    return relu(h + s)\n"
    "}\n"
    "x     = data(\"images\", [-1, 1, 28, 28])\n"
    "label = data(\"label\", [-1, 1], int64)\n"
    "h     = res_block(res_block(res_block(conv_bn(x, 16, 3, act = relu), 16), 32, stride = 2),\n"
    "                  64, stride = 2)\n"
    "y     = fc(avg_pool(h, 7), 10)\n"
    "cost  = mean(softmax_with_cross_entropy(y, label))\n";

static const model models[] = {
    {"mlp64", "MLP 784-256-10, batch 64", mlp_body, 64, 12800, NULL},
    {"mlp256", "MLP 784-256-10, batch 256", mlp_body, 256, 12800, NULL},
    {"cnn64", "LeNet CNN, batch 64", cnn_body, 64, 3200, NULL},
    {"res64", "residual CNN + BN, batch 64", res_body, 64, 1280, NULL},
    /* mixed precision (issue 42), each after its fp32 model: the bf16/fp32 ratio is printed */
    {"mlp1024", "MLP 784-1024-1024-10, b 256", mlp1024_body, 256, 12800, NULL},
    {"mlp1024bf16", "  the same, amp bf16", mlp1024_body, 256, 12800, "bf16"},
    {"cnn64bf16", "LeNet CNN b 64, amp bf16", cnn_body, 64, 3200, "bf16"},
};
#define NMODELS (int)(sizeof models / sizeof models[0])

/* `only` selects the models whose key starts with it (mlp1024: fp32 and bf16). */
static bool wanted(const char *only, const char *key) {
  return !*only || strncmp(only, key, strlen(only)) == 0;
}

static void die(const char *what) {
  fprintf(stderr, "bench_train: %s\n", what);
  exit(1);
}

/* ---- Data: the first n samples as x<n>.npy (float32 [n, 784]) and y<n>.npy (int64 [n]). */

static void npy_header(FILE *f, const char *descr, const char *shape) {
  char dict[128];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shape);
  int total = 10 + len + 1, pad = (64 - total % 64) % 64;  /* header to a multiple of 64 */
  int hlen = len + pad + 1;
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(hlen & 0xff, f);
  fputc(hlen >> 8, f);
  fwrite(dict, 1, (size_t)len, f);
  for (int i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
}

static void write_data(const char *dir, int64_t n, const float *images, const int64_t *labels) {
  char path[512], shape[64];
  snprintf(path, sizeof path, "%s/x%lld.npy", dir, (long long)n);
  FILE *f = fopen(path, "wb");
  if (!f) die("cannot write the data files");
  snprintf(shape, sizeof shape, "(%lld, 784)", (long long)n);
  npy_header(f, "<f4", shape);
  fwrite(images, sizeof *images, (size_t)n * 784, f);
  if (fclose(f)) die("cannot write the data files");
  snprintf(path, sizeof path, "%s/y%lld.npy", dir, (long long)n);
  if (!(f = fopen(path, "wb"))) die("cannot write the data files");
  snprintf(shape, sizeof shape, "(%lld,)", (long long)n);
  npy_header(f, "<i8", shape);
  fwrite(labels, sizeof *labels, (size_t)n, f);
  if (fclose(f)) die("cannot write the data files");
}

/* Returns a description of the data ("Fashion-MNIST" or "synthetic"). */
static const char *make_data(const char *dir, int64_t most) {
  float *images = malloc((size_t)most * 784 * sizeof *images);
  int64_t *labels = malloc((size_t)most * sizeof *labels);
  if (!images || !labels) die("out of memory");
  const char *what = "Fashion-MNIST training images";
  pd_dataset *ds = NULL;
  if (pd_dataset_mnist("fashion_mnist", "train", NULL, &ds, NULL) == PD_OK &&
      pd_dataset_size(ds) >= most) {
    /* The reader holds the pixels as bytes and batches them as byte / 255.0f (reader.h). */
    const unsigned char *px = pd_dataset_field_data(ds, pd_dataset_field_index(ds, "images"));
    for (int64_t i = 0; i < most * 784; i++) images[i] = (float)px[i] / 255.0f;
    memcpy(labels, pd_dataset_field_data(ds, pd_dataset_field_index(ds, "label")),
           (size_t)most * sizeof *labels);
  } else {
    what = "synthetic images (Fashion-MNIST not installed)";
    uint64_t s = 12345;
    for (int64_t i = 0; i < most * 784; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      images[i] = (float)(s >> 40) / (float)(1 << 24);
    }
    for (int64_t i = 0; i < most; i++) labels[i] = i % 10;
  }
  pd_dataset_free(ds);
  for (int i = 0; i < NMODELS; i++) {
    bool done = false;
    for (int j = 0; j < i; j++) done = done || models[j].samples == models[i].samples;
    if (!done) write_data(dir, models[i].samples, images, labels);
  }
  free(images);
  free(labels);
  return what;
}

/* ---- pdlang ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A throughput: the median and the best of the measured epochs. */
typedef struct rate {
  double median, best;
} rate;

/* Train model m for 1 + epochs epochs; the samples/s of the epochs after the first. */
static rate run_pdlang(const model *m, const char *dir, int epochs) {
  char script[4096];
  snprintf(script, sizeof script,
           "import \"layers\"\n%s"
           "train(cost, reader = npy(\"%s/x%lld.npy\", \"%s/y%lld.npy\"), batch = %d, "
           "epochs = %d, optimizer = adam(0.001), log_every = 1000000000%s%s%s)\n",
           m->body, dir, (long long)m->samples, dir, (long long)m->samples, m->batch,
           epochs + 1, m->amp ? ", amp = \"" : "", m->amp ? m->amp : "", m->amp ? "\"" : "");
  pd_source *src;
  if (pd_source_from_string("bench_train.pd", script, strlen(script), &src)) die("out of memory");
  pd_diags diags;
  pd_diags_init(&diags, 20);
  pd_unit *unit;
  if (pd_compile(src, NULL, &diags, &unit)) {
    fprintf(stderr, "%s", diags.text.data ? diags.text.data : "");
    die("the benchmark script does not compile");
  }
  char *log = NULL;
  size_t loglen = 0;
  FILE *progress = open_memstream(&log, &loglen);
  if (!progress) die("out of memory");
  pd_run_options o = {.progress = progress, .progress_mode = PD_PROGRESS_LINES, .seed = 1};
  pd_runner *run = NULL;
  pd_error err = {0};
  pd_status st = pd_runner_new(unit, &o, &run, &err);
  if (!st) st = pd_runner_run_all(run, &err);
  fclose(progress);
  if (st) {
    pd_buf b;
    pd_buf_init(&b);
    pd_unit_render_error(&b, unit, src, &err);
    fprintf(stderr, "%s", b.data ? b.data : "");
    pd_buf_free(&b);
    die("training failed");
  }
  /* "epoch 2/4: loss 0.5321, 12800 samples in 0.4 s (31234 samples/s)" */
  double sps[MAX_EPOCHS + 1];
  int n = 0;
  for (char *line = log; line && *line;) {
    char *next = strchr(line, '\n');
    if (next) *next++ = 0;
    int e, total;
    double v;
    char *open = strrchr(line, '(');
    if (sscanf(line, "epoch %d/%d:", &e, &total) == 2 && e > 1 && open &&
        sscanf(open, "(%lf samples/s)", &v) == 1 && n <= MAX_EPOCHS)
      sps[n++] = v;
    line = next;
  }
  free(log);
  pd_error_clear(&err);
  pd_runner_free(run);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_diags_free(&diags);
  if (n == 0) die("no epoch summary in the training output");
  rate r = {median(sps, n), sps[n - 1]};  /* median sorts */
  return r;
}

/* ---- PyTorch: runs torch_train.py once for every model wanted, reading "KEY SAMPLES/S" lines.
 * Returns false (with a reason in why) when it could not run. ---- */
static bool run_torch(const char *dir, int epochs, int threads, const char *only, rate *sps,
                      char *why, size_t whylen) {
  const char *py = getenv("PDLANG_BENCH_PYTHON");
  if (!py || !*py) py = "python3";
  char script[1024];
  const char *env = getenv("PDLANG_BENCH_TORCH");
  if (env && *env) {
    snprintf(script, sizeof script, "%s", env);
  } else {
    snprintf(script, sizeof script, "%s", __FILE__);  /* the source folder of this file */
    char *slash = strrchr(script, '/');
    snprintf(slash ? slash + 1 : script, sizeof script - (size_t)(slash ? slash + 1 - script : 0),
             "torch_train.py");
  }
  if (access(script, R_OK) != 0) {
    snprintf(why, whylen, "%.400s not found (set PDLANG_BENCH_TORCH)", script);
    return false;
  }
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' '%s' --data '%s' --epochs %d --threads %d%s%s 2>&1",
           py, script, dir,
           epochs, threads, *only ? " --only " : "", only);
  FILE *p = popen(cmd, "r");
  if (!p) {
    snprintf(why, whylen, "cannot run %.400s", py);
    return false;
  }
  char line[1024];
  bool any = false;
  why[0] = 0;
  while (fgets(line, sizeof line, p)) {
    char key[64];
    double v, best;
    if (strncmp(line, "PyTorch not installed", 21) == 0) {
      snprintf(why, whylen, "PyTorch not installed for %.400s (see bench/README)", py);
      continue;
    }
    if (line[0] == '#') {  /* "# torch 2.x, 2 threads" */
      printf("PyTorch:%s", line + 1);
      continue;
    }
    if (sscanf(line, "%63s %lf %lf", key, &v, &best) != 3) {
      if (!why[0]) snprintf(why, whylen, "%.400s", line);
      continue;
    }
    for (int i = 0; i < NMODELS; i++)
      if (strcmp(key, models[i].key) == 0) {
        sps[i] = (rate){v, best};
        any = true;
      }
  }
  int rc = pclose(p);
  if (!any && !why[0]) snprintf(why, whylen, "%.400s exited with status %d", script, rc);
  if (why[0] && why[strlen(why) - 1] == '\n') why[strlen(why) - 1] = 0;
  return any;
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: bench_train [measured epochs, default 5] [model key or its start: mlp64, "
           "mlp256, cnn64, res64, mlp1024 (fp32 and bf16), mlp1024bf16, cnn64bf16]\n");
    return 0;
  }
  pd_k_init();
  int epochs = argc > 1 ? atoi(argv[1]) : 5;
  if (epochs < 1 || epochs > MAX_EPOCHS) epochs = 5;
  const char *only = argc > 2 ? argv[2] : "";
  pd_k_threading th = pd_k_threading_info();
  int threads = th.threads;  /* the kernels' pool: what PyTorch is given too */
  const char *core = getenv("OPENBLAS_CORETYPE");
  printf("threads: %d (OpenBLAS %d per call); FTZ/DAZ %s; OPENBLAS_CORETYPE=%s\n", threads,
         th.blas_threads, th.ftz_daz ? "on" : "off", core ? core : "(unset)");

  char dir[] = "/tmp/pdlang-bench-XXXXXX";
  if (!mkdtemp(dir)) die("cannot make a temporary folder");
  int64_t most = 0;
  for (int i = 0; i < NMODELS; i++)
    if (models[i].samples > most) most = models[i].samples;
  const char *what = make_data(dir, most);
  printf("data: %s; 1 warm-up epoch + %d measured\n", what, epochs);

  rate pd[NMODELS] = {{0, 0}}, pt[NMODELS] = {{0, 0}};
  for (int i = 0; i < NMODELS; i++) {
    if (!wanted(only, models[i].key)) continue;
    pd[i] = run_pdlang(&models[i], dir, epochs);
    printf("pdlang  %-28s %9.0f samples/s (median), %9.0f (best epoch)\n", models[i].label,
           pd[i].median, pd[i].best);
    fflush(stdout);
  }
  char why[512] = "";
  bool torch = !getenv("PDLANG_BENCH_NO_TORCH") &&
               run_torch(dir, epochs, threads, only, pt, why, sizeof why);
  if (!torch) printf("PyTorch: %s\n", getenv("PDLANG_BENCH_NO_TORCH") ? "skipped" : why);
  for (int i = 0; torch && i < NMODELS; i++)
    if (pt[i].median > 0)
      printf("PyTorch %-28s %9.0f samples/s (median), %9.0f (best epoch)\n", models[i].label,
             pt[i].median, pt[i].best);
  printf("\n%-28s %10s %10s %7s   %10s %10s %7s\n", "samples/s", "pdlang", "PyTorch", "ratio",
         "pdlang", "PyTorch", "ratio");
  printf("%-28s %29s   %29s\n", "", "(median epoch)", "(best epoch)");
  for (int i = 0; i < NMODELS; i++) {
    if (!pd[i].median) continue;
    if (torch && pt[i].median > 0)
      printf("%-28s %10.0f %10.0f %7.2f   %10.0f %10.0f %7.2f\n", models[i].label,
             pd[i].median, pt[i].median, pd[i].median / pt[i].median, pd[i].best, pt[i].best,
             pd[i].best / pt[i].best);
    else
      printf("%-28s %10.0f %10s %7s   %10.0f\n", models[i].label, pd[i].median, "-", "-",
             pd[i].best);
  }
  /* Mixed precision against fp32: each amp model against the fp32 model of the same body and
   * batch, measured in this run. */
  bool head = false;
  for (int i = 0; i < NMODELS; i++)
    for (int j = 0; j < NMODELS; j++)
      if (models[i].amp && !models[j].amp && models[j].body == models[i].body &&
          models[j].batch == models[i].batch && pd[i].median && pd[j].median) {
        if (!head) printf("\n%-28s %10s %10s %7s   (best epochs: ratio)\n", "pdlang samples/s",
                          "amp", "fp32", "ratio");
        head = true;
        printf("%-28s %10.0f %10.0f %7.2f   %7.2f  (amp %s)\n", models[j].label, pd[i].median,
               pd[j].median, pd[i].median / pd[j].median, pd[i].best / pd[j].best,
               models[i].amp);
      }
  for (int i = 0; torch && i < NMODELS; i++)
    for (int j = 0; j < NMODELS; j++)
      if (models[i].amp && !models[j].amp && models[j].body == models[i].body &&
          models[j].batch == models[i].batch && pt[i].median > 0 && pt[j].median > 0)
        printf("%-28s %10.0f %10.0f %7.2f   %7.2f  (PyTorch autocast %s)\n", models[j].label,
               pt[i].median, pt[j].median, pt[i].median / pt[j].median, pt[i].best / pt[j].best,
               models[i].amp);
  /* Leave nothing behind. */
  char path[600];
  for (int i = 0; i < NMODELS; i++) {
    snprintf(path, sizeof path, "%s/x%lld.npy", dir, (long long)models[i].samples);
    unlink(path);
    snprintf(path, sizeof path, "%s/y%lld.npy", dir, (long long)models[i].samples);
    unlink(path);
  }
  rmdir(dir);
  return 0;
}
