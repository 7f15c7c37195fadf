/* cmd_bench.c -- `pdlang bench MODEL --feed NAME=FILE.npy ... [--batch N] [--threads N]
 * [--warmup N] [--runs N | --seconds S] [--device DEV] [--profile] [--no-optimize]`: time a saved
 * model's inference as onnxruntime_perf_test, benchmark_app and trtexec do. The model is loaded
 * once (with its inputs, as `pdlang exec` makes them: driver/model_inputs.c), run --warmup times,
 * then timed run by run: the median, p90 and p99 latency, the throughput at that batch, the time
 * of the load and first run together, and the process's peak resident memory. */
#include "config.h"
#include "driver/driver.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "vm/run/model.h"
#include "vm/run/exec.h"

/* The process's peak resident memory in MiB: Linux's VmHWM, which starts afresh at exec (the
 * getrusage maximum keeps the parent's peak from before the exec: a benchmark driver holding
 * 350 MB of inputs made every process it started report at least that); getrusage elsewhere. */
static double peak_rss_mib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
  if (f) fclose(f);
  if (kb >= 0) return (double)kb / 1024.0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of the n sorted values: the nearest rank. */
static double quantile(const double *v, int n, double q) {
  int k = (int)(q * n + 0.999999) - 1;
  return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* t with its rows (dimension 0) repeated, cycling, to n rows. */
static pd_status repeat_rows(pd_tensor *t, int64_t n) {
  if (t->ndims < 1 || t->dims[0] < 1 || t->nlod) return PD_EINVAL;
  int64_t rows = t->dims[0];
  size_t row = (size_t)(pd_tensor_numel(t) / rows) * pd_dtype_size(t->dtype);
  int64_t dims[PD_TENSOR_MAX_DIMS];
  memcpy(dims, t->dims, sizeof dims);
  dims[0] = n;
  pd_tensor r;
  pd_tensor_init(&r);
  pd_status st = pd_tensor_resize(&r, t->dtype, t->ndims, dims);
  if (st) return st;
  const char *src = pd_tensor_data(t);
  char *dst = pd_tensor_data(&r);
  for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * row, src + (size_t)(i % rows) * row, row);
  pd_tensor_release(t);
  *t = r;
  return PD_OK;
}

/* A whole number >= lo from option opt's value v; false after printing. */
static bool number(const char *opt, const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (!*v || *end || errno || n < lo || n > hi) {
    fprintf(stderr, "pdlang bench: %s takes a whole number from %ld to %ld, got '%s'\n", opt, lo,
            hi, v);
    return false;
  }
  *out = n;
  return true;
}

static int run_bench(int argc, char **argv) {
  const char *model = NULL, *params = NULL, *device = NULL;
  pd_driver_feeds feeds = {0};
  long batch = 0, threads = 0, warmup = 10, runs = 100;
  double seconds = 0;
  bool profile = false, no_optimize = false;
  pd_dtype precision = PD_FP32;
  for (int i = 1; i < argc; i++) {
    int fa = pd_driver_feed_arg("bench", argc, argv, &i, &feeds);
    if (fa < 0) return 2;
    if (fa) continue;
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--params") == 0 && v) {
      params = argv[++i];
    } else if (strcmp(a, "--device") == 0 && v) {
      device = argv[++i];
    } else if (strcmp(a, "--batch") == 0 && v) {
      if (!number(a, argv[++i], 1, 1 << 20, &batch)) return 2;
    } else if (strcmp(a, "--threads") == 0 && v) {
      if (!number(a, argv[++i], 1, 4096, &threads)) return 2;
    } else if (strcmp(a, "--warmup") == 0 && v) {
      if (!number(a, argv[++i], 0, 1000000, &warmup)) return 2;
    } else if (strcmp(a, "--runs") == 0 && v) {
      if (!number(a, argv[++i], 1, 10000000, &runs)) return 2;
      seconds = 0;
    } else if (strcmp(a, "--seconds") == 0 && v) {
      char *end;
      seconds = strtod(argv[++i], &end);
      if (!*argv[i] || *end || !(seconds > 0) || seconds > 86400) {
        fprintf(stderr, "pdlang bench: --seconds takes a time in seconds (> 0), got '%s'\n",
                argv[i]);
        return 2;
      }
    } else if (strcmp(a, "--profile") == 0) {
      profile = true;
    } else if (strcmp(a, "--no-optimize") == 0) {
      no_optimize = true;
    } else if (strcmp(a, "--precision") == 0 && v) {
      if (pd_driver_precision("bench", argv[++i], &precision)) return 2;
    } else if (a[0] == '-' || model) {
      pd_driver_usage(stderr, &pd_cmd_bench);
      return 2;
    } else {
      model = a;
    }
  }
  if (!model) {
    pd_driver_usage(stderr, &pd_cmd_bench);
    return 2;
  }
  int place, gpu_index;
  if (pd_driver_device("bench", device, &place, &gpu_index)) return 2;
  if (threads) { /* the kernels' pool reads it when it starts, at the first op */
    char t[32];
    snprintf(t, sizeof t, "%ld", threads);
    setenv("PDLANG_THREADS", t, 1);
  }
  pd_k_init(); /* the pool, of that size (pd_command.sizes_pool) */
  double t0 = now_ms();
  pd_error err = {0};
  pd_model m = {0};
  pd_tensor inputs[PD_DRIVER_MAX_IO];
  int ninputs = 0, rc = 1, n = 0;
  char *found = NULL;
  double *lat = NULL;
  if (pd_driver_load_model("bench", model, params, &feeds, &m, inputs, &ninputs, &found)) goto out;
  m.no_optimize = no_optimize; /* pd_model_load started *m afresh */
  m.precision = precision;
  if (found) model = found;
  for (int i = 0; batch && i < m.nfeeds; i++) {
    const char *v = m.feeds[i].var;
    if (repeat_rows(&inputs[i], batch)) {
      fprintf(stderr, "pdlang bench: --batch %ld: input %s has no rows to repeat (a batch of "
                      "sequences with LoD: give it padded, or leave --batch out)\n", batch, v);
      goto out;
    }
  }
  pd_status st;
  pd_exec_options eo = {.place = (pd_k_place)place};
  if (place == PD_K_CUDA && (st = pd_k_cuda_open(gpu_index, &err))) goto fail;
  if ((st = pd_model_prepare(&m, &eo, &err))) goto fail;
  pd_tensor_array *got;
  long total = warmup + 1;
  for (long r = 0; r < total; r++) { /* the first run, then the warm-up */
    for (int i = 0; i < m.nfeeds; i++)
      if ((st = pd_model_feed(&m, i, &inputs[i], &err))) goto fail;
    if ((st = pd_model_run(&m, &got, &err))) goto fail;
    if (r == 0) t0 = now_ms() - t0;
  }
  long cap = seconds > 0 ? 1024 : runs;
  if (!(lat = pd_malloc(sizeof *lat * (size_t)cap))) {
    fprintf(stderr, "pdlang bench: out of memory\n");
    goto out;
  }
  if (profile) pd_exec_profile_enable(true);
  double start = now_ms();
  for (;;) {
    if (seconds > 0 ? (n > 0 && now_ms() - start >= seconds * 1e3) : n == runs) break;
    if (n == cap) {
      double *more = pd_realloc(lat, sizeof *lat * (size_t)(cap *= 2));
      if (!more) {
        fprintf(stderr, "pdlang bench: out of memory\n");
        goto out;
      }
      lat = more;
    }
    double s = now_ms();
    for (int i = 0; i < m.nfeeds; i++)
      if ((st = pd_model_feed(&m, i, &inputs[i], &err))) goto fail;
    if ((st = pd_model_run(&m, &got, &err))) goto fail;
    lat[n++] = now_ms() - s;
  }
  if (profile) pd_exec_profile_enable(false);
  qsort(lat, (size_t)n, sizeof *lat, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += lat[i];
  int64_t rows = m.nfeeds && inputs[0].ndims ? inputs[0].dims[0] : 1;
  double peak_mib = peak_rss_mib();
  printf("model: %s (batch %lld, threads %d, %s%s%s)\n", model, (long long)rows,
         pd_k_threading_info().threads, place == PD_K_CUDA ? "gpu" : "cpu",
         no_optimize ? ", not optimised" : "",
         precision == PD_BF16 ? ", products in bf16" : "");
  if (!no_optimize) {
    char what[240];
    pd_infer_opt_describe(&m.opt, what, sizeof what);
    printf("load-time passes: %s\n", what);
  }
  printf("load and first run: %.3f ms\n", t0);
  printf("latency over %d runs (after %ld warm-up): median %.3f ms, p90 %.3f ms, p99 %.3f ms, "
         "min %.3f ms, mean %.3f ms\n", n, warmup, quantile(lat, n, 0.5), quantile(lat, n, 0.9),
         quantile(lat, n, 0.99), lat[0], sum / n);
  printf("throughput: %.1f samples/s (batch / median latency)\n",
         (double)rows / quantile(lat, n, 0.5) * 1e3);
  printf("peak resident memory: %.1f MiB\n", peak_mib);
  if (profile) pd_exec_profile_report(stdout, pd_driver_profile_top());
  rc = 0;
  goto out;
fail:
  pd_driver_print_model_error(model, &err);
out:
  pd_free(lat);
  for (int i = 0; i < ninputs; i++) pd_tensor_release(&inputs[i]);
  pd_error_clear(&err);
  pd_model_free(&m);
  pd_free(found);
  return rc;
}

const pd_command pd_cmd_bench = {
    .name = "bench",
    .run = run_bench,
    .sizes_pool = true,
    .summary = "time a saved model's inference: latency percentiles, throughput, memory",
    .usage = "pdlang bench MODEL [--params FILE] [--device cpu|gpu[:N]]\n"
             "            [--feed NAME=FILE.npy [--lengths NAME=LENGTHS.npy]]...\n"
             "            [--batch N] [--threads N] [--warmup N] [--runs N | --seconds S]\n"
             "            [--profile] [--no-optimize] [--precision fp32|bf16]\n"
             "\n"
             "Loads MODEL once (found and fed as pdlang exec does), runs it --warmup times\n"
             "(default 10), then times --runs runs (default 100), or as many as --seconds\n"
             "allows, and prints the median, p90 and p99 latency, the throughput (the batch\n"
             "over the median), the time of the load and the first run together, and the\n"
             "process's peak resident memory. --batch N repeats each input's rows to N rows.\n"
             "--threads N sizes the kernels' thread pool (PDLANG_THREADS). --profile adds the\n"
             "timed runs' per-op table (as pdlang run --profile). --no-optimize runs the model\n"
             "as loaded, without the load-time passes (pdlang dump --optimized lists them).\n"
             "--precision bf16 multiplies the matrix products in bfloat16 (as pdlang exec).",
};
