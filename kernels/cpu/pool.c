/* pool.c -- the kernels' thread pool: the threads that parallel kernels and split GEMMs run on.
 *
 * Why not OpenMP. A training step of an RNN is thousands of small parallel jobs (a [32, 256]
 * GEMM, a tanh over a hidden state), each tens of microseconds. An OpenMP runtime either lets its
 * idle workers sleep (OMP_WAIT_POLICY=passive), and every job then pays a futex wake-up that on
 * these virtual machines costs as much as the job (a training step on two threads ran slower
 * than on one), or lets them spin, which is fast on an idle machine and ruinous on a busy one (a
 * spinning worker that loses its core makes the thread waiting for it at the barrier lose a time
 * slice). And the choice is made from the environment when the runtime loads. This pool decides
 * while it runs:
 *
 *  - Caller-runs jobs. A job is a number of parts: part 0 is the caller's, the others are
 *    claimed one at a time from a shared counter by the calling thread and by whichever workers
 *    are awake. The caller never waits for a worker that has not started: when the workers are
 *    asleep or descheduled, it runs every part itself, at the speed of one thread. It waits only
 *    for parts a worker has already claimed.
 *  - Idle workers spin for a short while (SPIN_NS) before they sleep on a condition variable, so
 *    the next job of a burst finds them awake.
 *  - A worker checks its involuntary context switches (getrusage, RUSAGE_THREAD). When it was
 *    preempted again and again (PREEMPT_BURST times within PREEMPT_WINDOW_NS), the machine has
 *    more runnable threads than cores, and spinning steals time from the other threads:
 *    spinning stops for a while (BACKOFF_MIN_NS), then is tried again. A lone preemption is
 *    a daemon's: on an idle 2-core VM a worker was preempted ~30 times a second, and backing
 *    off at each one put it to sleep so often that a MobileNetV3's inference on 2 threads took
 *    8.8 ms (median) instead of 6.5. Each
 *    further preemption doubles the pause (up to BACKOFF_MAX_NS); a pause's length of spinning
 *    without one halves it. So a busy machine soon sees sleeping workers only, and an idle one
 *    shrugs off the odd preemption by a daemon (a fixed 50 ms pause per preemption made an RNN
 *    training step 20% slower on an otherwise idle machine).
 *
 * Parts are numbered, and which thread runs part i changes nothing a kernel computes: kernels
 * split their work by part, never by thread, so results do not depend on timing. One job runs at
 * a time; a second thread that dispatches meanwhile (or a part that dispatches a job) runs its
 * parts itself, in order. After fork, the child has no workers (pd_kcpu_threads() is 1), and the
 * caller runs everything. */
#include "config.h"
#include "kernels/cpu/cpu.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/resource.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

#define POOL_MAX_THREADS 256
/* An idle worker spins this long before it sleeps: a training step of a small model leaves
 * gaps of a millisecond between its parallel jobs (LeNet at batch 64 trained 14% faster than
 * with 0.2 ms, and as fast as libgomp spinning 20000 rounds). */
#define SPIN_NS 2000000
#define BACKOFF_MIN_NS 1000000   /* after a preemption, no spinning for 1 ms, */
#define BACKOFF_MAX_NS 50000000  /* doubled at each further one, up to 50 ms */
#define PREEMPT_BURST 3             /* preemptions within */
#define PREEMPT_WINDOW_NS 20000000  /* 20 ms: oversubscribed cores (CFS slices are a few ms) */
#define WAIT_SPINS 4096      /* the caller's busy-wait rounds before it yields its core */

/* The job word: generation (32 bits) | parts (16) | next part to claim (16). A new job gets a
 * new generation, so a worker late for the previous one cannot claim a part of the next. */
#define GEN_OF(s) ((uint32_t)((s) >> 32))
#define PARTS_OF(s) ((int)(((s) >> 16) & 0xffffu))
#define NEXT_OF(s) ((int)((s) & 0xffffu))
#define MAX_PARTS 0xffff

typedef struct pool {
  int nthreads;                 /* the caller and the workers */
  int nworkers;
  pthread_t workers[POOL_MAX_THREADS];
  pthread_mutex_t dispatch;     /* held by the thread whose job is running */
  pthread_mutex_t sleep_mu;     /* with sleep_cv: where idle workers sleep */
  pthread_cond_t sleep_cv;
  _Atomic uint64_t job;         /* see GEN_OF etc. */
  _Atomic int done;             /* parts of the current job finished */
  _Atomic int sleepers;         /* workers asleep or about to be */
  _Atomic int64_t spin_until_ns; /* no spinning before this time (a preemption was seen) */
  _Atomic int64_t backoff_ns;   /* the length of the last such pause (0: none lately) */
  /* The current job, written by its dispatcher before it publishes the job word; a worker reads
   * them only after claiming a part, and the dispatcher rewrites them only after every part is
   * done, so a claimed part always reads its own job. */
  pd_kcpu_team_fn *fn;
  void *ctx;
} pool;

static pool P = {.nthreads = 1,
                 .dispatch = PTHREAD_MUTEX_INITIALIZER,
                 .sleep_mu = PTHREAD_MUTEX_INITIALIZER,
                 .sleep_cv = PTHREAD_COND_INITIALIZER};
static _Thread_local bool in_pool;  /* this thread is running a part (or is a worker) */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Involuntary context switches of the calling thread so far (0 where unknown). */
static long preemptions(void) {
#if defined(__linux__) && defined(RUSAGE_THREAD)
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) == 0) return ru.ru_nivcsw;
#endif
  return 0;
}

/* Claim and run parts of job generation gen until none is left. */
static void run_parts(uint32_t gen) {
  uint64_t s = atomic_load_explicit(&P.job, memory_order_acquire);
  for (;;) {
    if (GEN_OF(s) != gen || NEXT_OF(s) >= PARTS_OF(s)) return;
    if (!atomic_compare_exchange_weak_explicit(&P.job, &s, s + 1, memory_order_acq_rel,
                                               memory_order_acquire))
      continue;  /* s now holds the current word */
    P.fn(P.ctx, NEXT_OF(s), PARTS_OF(s));
    atomic_fetch_add_explicit(&P.done, 1, memory_order_release);
    s = atomic_load_explicit(&P.job, memory_order_acquire);
  }
}

/* Wait until the job word's generation differs from seen; returns the new generation. */
static uint32_t wait_for_job(uint32_t seen) {
  if (now_ns() >= atomic_load_explicit(&P.spin_until_ns, memory_order_relaxed)) {
    int64_t t0 = now_ns();
    for (unsigned i = 1;; i++) {
      uint64_t s = atomic_load_explicit(&P.job, memory_order_acquire);
      if (GEN_OF(s) != seen) return GEN_OF(s);
      CPU_RELAX();
      if (i % 64 == 0 && now_ns() - t0 > SPIN_NS) break;
    }
  }
  pthread_mutex_lock(&P.sleep_mu);
  /* Sequentially consistent with the dispatcher's store of the job word then load of
   * sleepers: either it sees this sleeper and signals, or this load sees its new job. */
  atomic_fetch_add(&P.sleepers, 1);
  while (GEN_OF(atomic_load(&P.job)) == seen) pthread_cond_wait(&P.sleep_cv, &P.sleep_mu);
  atomic_fetch_sub(&P.sleepers, 1);
  pthread_mutex_unlock(&P.sleep_mu);
  return GEN_OF(atomic_load_explicit(&P.job, memory_order_acquire));
}

static void *worker_main(void *arg) {
  PD_UNUSED(arg);
  pd_k_set_ftz_daz();  /* every computing thread flushes denormals (kernels.h) */
  in_pool = true;      /* a part that dispatches a job runs it itself */
  uint32_t seen = GEN_OF(atomic_load(&P.job));
  long pre = preemptions();
  int64_t recent[PREEMPT_BURST - 1] = {0}; /* when the last preemptions were seen, oldest first */
  for (;;) {
    seen = wait_for_job(seen);
    run_parts(seen);
    long now = preemptions();
    int64_t b = atomic_load_explicit(&P.backoff_ns, memory_order_relaxed);
    int64_t until = atomic_load_explicit(&P.spin_until_ns, memory_order_relaxed);
    bool burst = false;
    if (now != pre) {
      int64_t t = now_ns();
      burst = now - pre >= PREEMPT_BURST || (recent[0] && t - recent[0] < PREEMPT_WINDOW_NS);
      memmove(recent, recent + 1, sizeof recent - sizeof recent[0]);
      recent[PREEMPT_BURST - 2] = t;
      pre = now;
    }
    if (burst) {  /* preempted again and again: the cores are oversubscribed */
      b = b < BACKOFF_MIN_NS ? BACKOFF_MIN_NS : b >= BACKOFF_MAX_NS / 2 ? BACKOFF_MAX_NS : 2 * b;
      atomic_store_explicit(&P.backoff_ns, b, memory_order_relaxed);
      atomic_store_explicit(&P.spin_until_ns, now_ns() + b, memory_order_relaxed);
    } else if (b > 0 && now_ns() >= until + b) {  /* a pause's length without preemption */
      atomic_store_explicit(&P.backoff_ns, b / 2 >= BACKOFF_MIN_NS ? b / 2 : 0,
                            memory_order_relaxed);
      atomic_store_explicit(&P.spin_until_ns, now_ns(), memory_order_relaxed);
    }
  }
  return NULL;
}

int pd_kcpu_cpus(void) {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return 1;
}

/* How many threads to use: PDLANG_THREADS, else OMP_NUM_THREADS (which users of other
 * frameworks set), else the CPUs this process may run on. */
static int wanted_threads(void) {
  const char *names[] = {"PDLANG_THREADS", "OMP_NUM_THREADS"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    char *end;
    if (!v || !*v) continue;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno == 0 && end != v && n >= 1) return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
  }
  int n = pd_kcpu_cpus();
  return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : n;
}

/* In a forked child the workers do not exist, and the locks and the condition variable are
 * copies that may record the parent's sleeping workers (a broadcast on such a copy waited
 * forever): the child's pool has no workers, so it never touches them again. */
static void after_fork_in_child(void) {
  P.nworkers = 0;
  P.nthreads = 1;
}

static void start_workers(void) {
  int want = wanted_threads();
  pthread_attr_t attr;
  if (want <= 1 || pthread_atfork(NULL, NULL, after_fork_in_child) != 0 ||
      pthread_attr_init(&attr) != 0)
    return;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int i = 0; i < want - 1; i++) {
    if (pthread_create(&P.workers[i], &attr, worker_main, NULL) != 0) break;
    P.nworkers++;
  }
  pthread_attr_destroy(&attr);
  P.nthreads = 1 + P.nworkers;
}

int pd_kcpu_pool_start(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, start_workers);
  return P.nthreads;
}

int pd_kcpu_threads(void) { return P.nthreads; }

bool pd_kcpu_in_pool(void) { return in_pool; }

void pd_kcpu_team(int nparts, pd_kcpu_team_fn *fn, void *ctx) {
  if (nparts <= 0) return;
  if (nparts == 1 || P.nworkers == 0 || in_pool || nparts > MAX_PARTS ||
      pthread_mutex_trylock(&P.dispatch) != 0) {
    bool was = in_pool;
    in_pool = true;  /* parts that dispatch run serially too */
    for (int i = 0; i < nparts; i++) fn(ctx, i, nparts);
    in_pool = was;
    return;
  }
  P.fn = fn;
  P.ctx = ctx;
  atomic_store_explicit(&P.done, 0, memory_order_relaxed);
  uint32_t gen = GEN_OF(atomic_load_explicit(&P.job, memory_order_relaxed)) + 1;
  /* Part 0 is the caller's (the word says it is claimed): the same part of consecutive jobs
   * then runs on the same core while the workers are awake, so a kernel that splits its
   * operands the same way each time (a GEMM's columns of the weights) finds its share still in
   * that core's cache. */
  atomic_store(&P.job, (uint64_t)gen << 32 | (uint64_t)nparts << 16 | 1u);
  if (atomic_load(&P.sleepers) > 0) {
    pthread_mutex_lock(&P.sleep_mu);
    pthread_cond_broadcast(&P.sleep_cv);
    pthread_mutex_unlock(&P.sleep_mu);
  }
  in_pool = true;
  fn(ctx, 0, nparts);
  atomic_fetch_add_explicit(&P.done, 1, memory_order_release);
  run_parts(gen);
  in_pool = false;
  /* Only parts that workers have claimed are left: wait for them, yielding the core after a
   * while in case the worker that holds one was preempted. */
  for (unsigned i = 0; atomic_load_explicit(&P.done, memory_order_acquire) < nparts; i++) {
    if (i < WAIT_SPINS)
      CPU_RELAX();
    else
      sched_yield();
  }
  pthread_mutex_unlock(&P.dispatch);
}

/* pd_kcpu_parallel: one contiguous range of [0, n) per part. */
typedef struct range_job {
  pd_kcpu_range_fn *fn;
  void *ctx;
  int64_t n;
} range_job;

static void range_part(void *vjob, int t, int nt) {
  const range_job *j = vjob;
  int64_t chunk = j->n / nt, rem = j->n % nt;
  int64_t b = t * chunk + (t < rem ? t : rem);
  int64_t e = b + chunk + (t < rem ? 1 : 0);
  if (b < e) j->fn(j->ctx, b, e);
}

void pd_kcpu_parallel(int64_t n, int64_t grain, pd_kcpu_range_fn *fn, void *ctx) {
  if (n <= 0) return;
  if (n >= grain && P.nthreads > 1 && !in_pool) {
    /* Every part gets at least half a grain of work. */
    int64_t most = n / (grain / 2 > 0 ? grain / 2 : 1);
    int nt = P.nthreads;
    if (nt > most) nt = (int)most;
    if (nt > 1) {
      range_job j = {fn, ctx, n};
      pd_kcpu_team(nt, range_part, &j);
      return;
    }
  }
  fn(ctx, 0, n);
}

int pd_kcpu_blas_team(void) { return in_pool ? 1 : P.nthreads; }

typedef struct parts_job {
  pd_k_part_fn *fn;
  void *ctx;
} parts_job;

static void parts_run(void *vjob, int t, int nt) {
  (void)nt;
  const parts_job *j = vjob;
  j->fn(j->ctx, t);
}

void pd_k_host_parts(int n, pd_k_part_fn *fn, void *ctx) {
  parts_job j = {fn, ctx};
  pd_kcpu_team(n, parts_run, &j);
}
