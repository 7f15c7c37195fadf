/* cmd_run.c -- `pdlang run FILE.pd`: compile the whole script (every error reported before
 * anything runs), then run its actions in order. Run-time errors are shown like compile errors:
 * file:line:col of the op or action at fault, the source line and a caret. */
#include "config.h"
#include "driver/driver.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "train/run.h"
#include "vm/run/comm.h"
#include "vm/run/exec.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  if (interrupted) _exit(130); /* a second Ctrl-C does not wait for the minibatch */
  interrupted = 1;
}

void pd_driver_print_error(const pd_unit *unit, const pd_source *src, const pd_error *err) {
  pd_buf b;
  pd_buf_init(&b);
  pd_unit_render_error(&b, unit, src, err);
  if (b.data) fputs(b.data, stderr);
  else fprintf(stderr, "pdlang: %s\n", err->msg ? err->msg : pd_status_str(err->status));
  pd_buf_free(&b);
}

size_t pd_driver_profile_top(void) {
  const char *e = getenv("PDLANG_PROFILE_TOP");
  if (!e || !*e) return 12;
  char *end;
  errno = 0;
  long v = strtol(e, &end, 10);
  if (*end || v < 0 || errno) {
    fprintf(stderr, "pdlang: PDLANG_PROFILE_TOP takes a count (0: every op), not '%s'; "
                    "listing 12\n", e);
    return 12;
  }
  return (size_t)v;
}

int pd_driver_device(const char *cmd, const char *spec, int *place, int *gpu_index) {
  const char *from = "--device";
  if (!spec) {
    spec = getenv("PDLANG_DEVICE");
    from = "PDLANG_DEVICE";
  }
  *place = PD_K_HOST;
  *gpu_index = 0;
  if (!spec || !*spec) return 0;
  pd_error err = {0};
  pd_k_place p;
  if (pd_run_parse_device(spec, &p, gpu_index, &err)) {
    fprintf(stderr, "pdlang %s: %s: %s\n", cmd, from, err.msg ? err.msg : "bad device");
    pd_error_clear(&err);
    return 2;
  }
  *place = (int)p;
  return 0;
}

static int run_run(int argc, char **argv) {
  const char *path = NULL, *device = NULL;
  const char *penv = getenv("PDLANG_PROFILE");
  bool profile = penv && *penv && strcmp(penv, "0") != 0;
  pd_run_options o = {.out = stdout, .progress = stderr, .progress_mode = PD_PROGRESS_AUTO};
  pd_compile_set sets[PD_DRIVER_MAX_SETS];
  char set_text[PD_DRIVER_MAX_SETS][PD_DRIVER_SET_TEXT];
  int nsets = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int sr = pd_driver_set_arg("run", argc, argv, &i, sets, set_text, &nsets);
    if (sr < 0) return 2;
    if (sr) continue;
    if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
      char *end;
      o.seed = strtoull(argv[++i], &end, 10);
      if (*end || !*argv[i]) {
        fprintf(stderr, "pdlang run: --seed needs a non-negative integer, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (strcmp(a, "--log") == 0 && i + 1 < argc && *argv[i + 1]) {
      o.log_path = argv[++i];
    } else if (strncmp(a, "--log=", 6) == 0 && a[6]) {
      o.log_path = a + 6;
    } else if (strcmp(a, "--check-nan-inf") == 0) {
      o.check_nan_inf = true;
    } else if (strcmp(a, "--profile") == 0) {
      profile = true;
    } else if (strcmp(a, "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strncmp(a, "--device=", 9) == 0) {
      device = a + 9;
    } else if (strncmp(a, "--progress=", 11) == 0) {
      const char *m = a + 11;
      if (strcmp(m, "bar") == 0) o.progress_mode = PD_PROGRESS_BAR;
      else if (strcmp(m, "lines") == 0) o.progress_mode = PD_PROGRESS_LINES;
      else if (strcmp(m, "none") == 0) o.progress_mode = PD_PROGRESS_NONE;
      else if (strcmp(m, "auto") == 0) o.progress_mode = PD_PROGRESS_AUTO;
      else {
        fprintf(stderr, "pdlang run: --progress is auto, bar, lines or none, not '%s'\n", m);
        return 2;
      }
    } else if (a[0] == '-' || path) {
      pd_driver_usage(stderr, &pd_cmd_run);
      return 2;
    } else {
      path = a;
    }
  }
  if (!path) {
    pd_driver_usage(stderr, &pd_cmd_run);
    return 2;
  }
  int place;
  if (pd_driver_device("run", device, &place, &o.gpu_index)) return 2;
  o.place = (pd_k_place)place;
  /* Under mpirun: one rank of a data-parallel job (vm/run/comm.h). Rank 0 alone prints. */
  pd_error cerr = {0};
  if (pd_comm_init(&argc, &argv, &cerr)) {
    fprintf(stderr, "pdlang run: %s\n", cerr.msg ? cerr.msg : "cannot start MPI");
    pd_error_clear(&cerr);
    pd_comm_abort(1);
    return 1;
  }
  int rank = pd_comm_rank(), nranks = pd_comm_size();
  if (rank != 0) {
    o.out = NULL;
    o.progress_mode = PD_PROGRESS_NONE;
  }
  if (nranks > 1 && place == PD_K_CUDA) { /* GPU ranks: GPU local_rank each, through NCCL */
    if (pd_comm_gpu_check(&cerr)) {
      fprintf(stderr, "pdlang run: rank %d of %d: %s\n", rank, nranks, cerr.msg ? cerr.msg : "");
      pd_error_clear(&cerr);
      pd_comm_abort(2);
      pd_comm_finalize();
      return 2;
    }
    o.gpu_index = pd_comm_local_rank();
  }
  /* Ranks that share a host share its cores: unless the user chose, each computes on its share
   * (the kernels' pool reads PDLANG_THREADS when it starts, below: pd_command.sizes_pool). */
  const char *te = getenv("PDLANG_THREADS"), *oe = getenv("OMP_NUM_THREADS");
  if (pd_comm_local_size() > 1 && !(te && *te) && !(oe && *oe)) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), share = cpus / pd_comm_local_size();
    char v[24];
    snprintf(v, sizeof v, "%ld", share > 1 ? share : 1);
    setenv("PDLANG_THREADS", v, 1);
  }
  pd_k_init();
  pd_source *src;
  pd_unit *unit;
  if (pd_driver_compile_file_set(path, nsets, sets, &src, &unit)) {
    if (nranks > 1) fprintf(stderr, "pdlang: rank %d of %d failed; ending the job\n", rank, nranks);
    pd_comm_abort(1);
    pd_comm_finalize();
    return 1;
  }
  interrupted = 0;
  o.interrupt = &interrupted;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  pd_error err = {0};
  pd_runner *r = NULL;
  pd_exec_profile_enable(profile);
  pd_status st = pd_runner_new(unit, &o, &r, &err);
  if (!st) st = pd_runner_run_all(r, &err);
  sigaction(SIGINT, &old, NULL);
  if (st == PD_EINTR) /* the user's own Ctrl-C: say where it stopped, not an error report */
    fprintf(stderr, "pdlang: %s\n", err.msg ? err.msg : "interrupted");
  else if (st)
    pd_driver_print_error(unit, src, &err);
  if (profile) { /* what ran, also when it stopped early */
    pd_exec_profile_enable(false);
    pd_exec_profile_report(stderr, pd_driver_profile_top());
    pd_exec_profile_reset();
  }
  pd_error_clear(&err);
  pd_runner_free(r);
  pd_unit_free(unit);
  pd_source_free(src);
  if (st && nranks > 1) {
    /* The other ranks would wait for this one in their next sum: end the whole job now. */
    fprintf(stderr, "pdlang: rank %d of %d failed; ending the job\n", rank, nranks);
    fflush(stderr);
    pd_comm_abort(st == PD_EINTR ? 130 : 1);
  }
  pd_comm_finalize();
  if (st == PD_EINTR) return 130;
  return st ? 1 : 0;
}

const pd_command pd_cmd_run = {
    .name = "run",
    .run = run_run,
    .sizes_pool = true,
    .summary = "compile a .pd script and run its actions (train, eval, print, ...)",
    .usage = "pdlang run [--seed N] [--check-nan-inf] [--device cpu|gpu[:N]]\n"
             "           [--progress=auto|bar|lines|none] [--log FILE] [--profile]\n"
             "           [--set NAME=VALUE]... FILE.pd\n"
             "\n"
             "Compiles FILE.pd (reporting every error before anything runs), then runs its\n"
             "actions in order.\n"
             "  --set NAME=VALUE  compile with VALUE in place of the literal of the script's\n"
             "                    top-level binding NAME (batch = 64: --set batch=128), read\n"
             "                    as its type (integer, number, true/false, text); repeatable\n"
             "  --seed N          seed of parameter initialisers and random ops (default 0)\n"
             "  --check-nan-inf   stop at the first op that makes a NaN or Inf\n"
             "                    (also PDLANG_CHECK_NAN_INF=1)\n"
             "  --device DEV      compute on the CPU (default) or a GPU: gpu, gpu:N (a CUDA\n"
             "                    build; also PDLANG_DEVICE=gpu)\n"
             "  --progress=MODE   training progress: a bar on a terminal (auto), bar, lines, none\n"
             "  --log FILE        train's log (a row per logged step and epoch) for every train\n"
             "                    call without log = ...: CSV, or JSON lines for FILE.jsonl\n"
             "  --profile         at the end, time per op type on stderr (also PDLANG_PROFILE=1)\n"
             "\n"
             "Under mpirun (mpirun with N processes) each process is one rank of a\n"
             "data-parallel job: every reader gives each rank its shard, gradients are summed\n"
             "over the ranks, rank 0 alone prints and writes files (PDLANG_MPI_BUCKET_KB: the\n"
             "size of the gradient buckets, default 1024).",
};
