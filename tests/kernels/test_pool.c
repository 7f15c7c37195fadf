/* test_pool.c -- the kernels' thread pool (kernels/cpu/pool.c): every part of a job runs exactly
 * once, ranges cover [0, n) exactly, two parts do run at the same time on two threads (with
 * flush-to-zero on the worker), part 0 runs on the calling thread, nested jobs and jobs from two threads at once run serially
 * where they must, and a forked child, which has no workers, still runs every part. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "tests/kernels/kt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAXP = 1000 };

typedef struct count_job {
  _Atomic int runs[MAXP];
  _Atomic int bad_nt;
  int nt;
} count_job;

static void count_part(void *vj, int t, int nt) {
  count_job *j = vj;
  if (nt != j->nt || t < 0 || t >= nt) {
    atomic_fetch_add(&j->bad_nt, 1);
    return;
  }
  atomic_fetch_add(&j->runs[t], 1);
}

/* Runs a job of nt parts; true when each part ran once and saw nt. */
static bool team_once(int nt) {
  static count_job j;
  for (int i = 0; i < MAXP; i++) atomic_store(&j.runs[i], 0);
  atomic_store(&j.bad_nt, 0);
  j.nt = nt;
  pd_kcpu_team(nt, count_part, &j);
  bool good = atomic_load(&j.bad_nt) == 0;
  for (int i = 0; i < nt; i++) good = good && atomic_load(&j.runs[i]) == 1;
  return good;
}

static void test_parts(void) {
  const int sizes[] = {1, 2, 3, 4, 5, 64, 1000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    ok(team_once(sizes[i]), "a job of %d part(s) runs each part once", sizes[i]);
  bool good = true;
  for (int r = 0; r < 20000 && good; r++) good = team_once(2 + r % 3);
  ok(good, "20000 small jobs in a row: each part once");
}

typedef struct range_job {
  _Atomic int *hits;
  _Atomic int calls;
} range_job;

static void range_fn(void *vj, int64_t b, int64_t e) {
  range_job *j = vj;
  atomic_fetch_add(&j->calls, 1);
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&j->hits[i], 1);
}

static void test_ranges(void) {
  const int64_t ns[] = {1, 7, 100, 4095, 4096, 10007, 100000};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    int64_t n = ns[k];
    range_job j = {kt_alloc((size_t)n * sizeof(_Atomic int)), 0};
    pd_kcpu_parallel(n, 4096, range_fn, &j);
    bool good = true;
    for (int64_t i = 0; i < n; i++) good = good && atomic_load(&j.hits[i]) == 1;
    int most = n >= 4096 ? (int)(n / 2048 < pd_kcpu_threads() ? n / 2048 : pd_kcpu_threads()) : 1;
    ok(good && atomic_load(&j.calls) == most,
       "parallel over %lld (grain 4096): every index once, in %d range(s)", (long long)n,
       atomic_load(&j.calls));
    free(j.hits);
  }
}

/* Two parts that each wait (at most 5 s) for the other to start: they finish quickly only when
 * two threads run them at once. */
typedef struct meet_job {
  _Atomic int started;
  _Atomic int met;
  _Atomic int flushed;
  pthread_t thread[2];
} meet_job;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void meet_part(void *vj, int t, int nt) {
  meet_job *j = vj;
  PD_UNUSED(nt);
  j->thread[t] = pthread_self();
  volatile float tiny = 1e-39f, one = 1.0f;
  atomic_fetch_add(&j->flushed, tiny * one == 0.0f);
  atomic_fetch_add(&j->started, 1);
  for (double t0 = now_s(); atomic_load(&j->started) < 2 && now_s() - t0 < 5;) sched_yield();
  atomic_fetch_add(&j->met, atomic_load(&j->started) == 2);
}

/* Part 0 of a job records whether it ran on the thread that dispatched it. */
typedef struct home_job {
  pthread_t caller;
  _Atomic int away;
} home_job;

static void home_part(void *vj, int t, int nt) {
  home_job *j = vj;
  PD_UNUSED(nt);
  if (t == 0 && !pthread_equal(pthread_self(), j->caller)) atomic_fetch_add(&j->away, 1);
}

static void test_concurrency(void) {
  meet_job j = {0};
  pd_kcpu_team(2, meet_part, &j);
  ok(atomic_load(&j.met) == 2 && !pthread_equal(j.thread[0], j.thread[1]),
     "two parts run at the same time on two threads");
  ok(pthread_equal(j.thread[0], pthread_self()), "part 0 ran on the calling thread");
  is_int(atomic_load(&j.flushed), 2, "denormals read as 0 on the worker too");
  /* With the workers spinning (the jobs come back to back), part 0 is still the caller's, so
   * a kernel's share of its operands stays in one core's cache from job to job. */
  home_job h = {pthread_self(), 0};
  for (int r = 0; r < 20000; r++) pd_kcpu_team(2 + r % 3, home_part, &h);
  is_int(atomic_load(&h.away), 0, "20000 jobs: part 0 always runs on the calling thread");
}

/* A part that dispatches a job: the inner job runs on the part's thread, serially. */
typedef struct nest_job {
  _Atomic int inner_good;
} nest_job;

static void nest_part(void *vj, int t, int nt) {
  nest_job *j = vj;
  PD_UNUSED(t);
  PD_UNUSED(nt);
  count_job *inner = kt_alloc(sizeof *inner);
  inner->nt = 7;
  bool inside = pd_kcpu_in_pool() && pd_kcpu_blas_team() == 1;
  pd_kcpu_team(7, count_part, inner);
  bool good = inside && atomic_load(&inner->bad_nt) == 0;
  for (int i = 0; i < 7; i++) good = good && atomic_load(&inner->runs[i]) == 1;
  atomic_fetch_add(&j->inner_good, good);
  free(inner);
}

static void test_nested(void) {
  nest_job j = {0};
  pd_kcpu_team(4, nest_part, &j);
  is_int(atomic_load(&j.inner_good), 4, "jobs dispatched inside parts run whole, serially");
  ok(!pd_kcpu_in_pool() && pd_kcpu_blas_team() == pd_kcpu_threads(),
     "outside a job, BLAS kernels may use all %d threads", pd_kcpu_threads());
}

/* Two threads dispatching at once: one job runs on the pool, the other serially; both whole. */
static void *dispatcher(void *arg) {
  _Atomic int *good = arg;
  count_job *j = kt_alloc(sizeof *j);
  for (int r = 0; r < 3000; r++) {
    int nt = 2 + r % 4;
    for (int i = 0; i < nt; i++) atomic_store(&j->runs[i], 0);
    j->nt = nt;
    pd_kcpu_team(nt, count_part, j);
    bool g = atomic_load(&j->bad_nt) == 0;
    for (int i = 0; i < nt; i++) g = g && atomic_load(&j->runs[i]) == 1;
    if (!g) atomic_store(good, 0);
  }
  free(j);
  return NULL;
}

static void test_two_dispatchers(void) {
  _Atomic int good = 1;
  pthread_t th;
  bool started = pthread_create(&th, NULL, dispatcher, &good) == 0;
  dispatcher(&good);
  if (started) pthread_join(th, NULL);
  ok(started && atomic_load(&good), "two threads dispatching 3000 jobs each: every part once");
}

/* Fork right after a job (the workers spinning) and after a pause (the workers asleep on the
 * condition variable, whose copy in the child once made the child's first job wait forever). */
static void test_fork(bool asleep) {
  team_once(3);
  if (asleep) nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL); /* 50 ms > SPIN_NS */
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(20); /* a hang fails the test instead of the suite */
    _exit(pd_kcpu_threads() == 1 && team_once(5) && team_once(64) ? 0 : 1);
  }
  int status = -1;
  bool waited = pid > 0 && waitpid(pid, &status, 0) == pid;
  ok(waited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
     "a child forked while the workers %s has one thread and runs every part itself",
     asleep ? "sleep" : "spin");
}

int main(int argc, char **argv) {
  PD_UNUSED(argc);
  setenv("PDLANG_THREADS", "3", 1);  /* whatever the machine, so that parts meet */
  kt_begin(argv);
  is_int(pd_kcpu_threads(), atoi(getenv("PDLANG_THREADS")), "the pool has PDLANG_THREADS threads");
  test_parts();
  test_ranges();
  test_concurrency();
  test_nested();
  test_two_dispatchers();
  test_fork(false);
  test_fork(true);
  return tap_done();
}
