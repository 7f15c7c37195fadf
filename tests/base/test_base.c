/* test_base.c -- unit tests for base/: buffers, shapes as text, growth, errors, allocation
 * failure (its counter shared by threads), diagnostics. */
#include "config.h"
#include "base/base.h"
#include "base/diag.h"
#include "tests/tap.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_buf(void) {
  pd_buf b;
  pd_buf_init(&b);
  for (int i = 0; i < 1000; i++) pd_buf_printf(&b, "%d,", i % 10);
  is_int(b.len, 2000, "buffer grows to 2000 bytes");
  ok(b.data[1999] == ',' && b.data[2000] == '\0', "buffer stays NUL-terminated");
  char *s = pd_buf_take(&b);
  ok(s && strncmp(s, "0,1,2,", 6) == 0, "take hands over the string");
  ok(b.data == NULL && b.len == 0, "take empties the buffer");
  pd_free(s);
}

static void test_alloc_failure(void) {
  pd_buf b;
  pd_buf_init(&b);
  pd_alloc_fail_after(1);
  ok(pd_buf_puts(&b, "x") == -1 && b.oom, "a failed allocation marks the buffer");
  pd_alloc_fail_after(0);
  ok(pd_buf_puts(&b, "y") == -1, "later appends are refused after a failure");
  pd_buf_free(&b);
  pd_alloc_fail_after(0);
  void *p = pd_malloc(16);
  ok(p != NULL, "allocation works again after the hook is cleared");
  pd_free(p);
  ok(pd_calloc((size_t)-1, 16) == NULL, "calloc overflow is refused");
}

/* The hook counts every allocation of every thread once (the batcher's and the pool's threads
 * allocate beside the one that set it): a plain counter lost increments between threads. */
enum { HOOK_THREADS = 4, HOOK_ALLOCS = 200000 };

static void *allocate_many(void *arg) {
  long *failed = arg;
  for (int i = 0; i < HOOK_ALLOCS; i++) {
    void *p = pd_malloc(8);
    if (p) pd_free(p);
    else ++*failed;
  }
  return NULL;
}

static long run_threads(long failed[HOOK_THREADS]) {
  pthread_t t[HOOK_THREADS];
  int started = 0;
  for (int i = 0; i < HOOK_THREADS; i++) {
    failed[i] = 0;
    started += pthread_create(&t[i], NULL, allocate_many, &failed[i]) == 0;
  }
  long all = 0;
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL), all += failed[i];
  return started == HOOK_THREADS ? all : -1;
}

static void test_alloc_threads(void) {
  long failed[HOOK_THREADS];
  const long total = (long)HOOK_THREADS * HOOK_ALLOCS, at = total / 2;
  pd_alloc_fail_after(0);
  long nfailed = run_threads(failed);
  long counted = pd_alloc_fail_after(at);
  is_int(counted, total, "%d threads: every allocation counted once", HOOK_THREADS);
  ok(nfailed == 0, "none failed with the hook off");
  nfailed = run_threads(failed);
  counted = pd_alloc_fail_after(0);
  is_int(nfailed, total - at + 1, "failing from the %ld-th on: the rest fail, across threads", at);
  is_int(counted, total, "and all were counted");
}

static void test_error(void) {
  pd_error e = {0};
  pd_loc loc = {"a.pd", 3, 7};
  pd_status st = pd_error_set(&e, PD_ESHAPE, loc, "cannot add [%d] and [%d]", 2, 3);
  is_int(st, PD_ESHAPE, "pd_error_set returns its status");
  is_str(e.msg, "cannot add [2] and [3]", "message formatted");
  is_str(e.loc.file, "a.pd", "file copied into the record");
  pd_error_prefix(&e, "reader '%s'", "x.csv");
  is_str(e.msg, "reader 'x.csv': cannot add [2] and [3]",
         "pd_error_prefix: prefix, then the message");
  ok(e.status == PD_ESHAPE && e.loc.line == 3 && e.loc.col == 7 && e.loc.file == e.file_buf,
     "pd_error_prefix keeps the status and the location");
  pd_error_prefix(NULL, "x");
  pd_error_clear(&e);
  ok(e.msg == NULL && e.status == PD_OK, "clear resets the record");
  pd_error_prefix(&e, "x");
  ok(e.msg == NULL, "pd_error_prefix of a record without a message: nothing");
  is_str(pd_status_str(PD_ENOMEM), "out of memory", "status names");
}

static void test_diag(void) {
  const char *text = "x = 1\n\ty = (2 +\n";
  pd_source *src;
  ok(pd_source_from_string("t.pd", text, strlen(text), &src) == PD_OK, "source from string");
  is_int(src->nlines, 2, "two lines indexed");
  pd_diags d;
  pd_diags_init(&d, 2);
  pd_diag_report(&d, src, PD_DIAG_ERROR, (pd_loc){"t.pd", 2, 8}, "expected %s", "expression");
  is_str(d.text.data,
         "t.pd:2:8: error: expected expression\n"
         "    2 | \ty = (2 +\n"
         "      | \t      ^\n",
         "diagnostic with source line and caret (tab kept for alignment)");
  pd_buf_clear(&d.text);
  pd_diag_report(&d, src, PD_DIAG_ERROR, (pd_loc){"t.pd", 1, 1}, "second");
  int stop = pd_diag_report(&d, src, PD_DIAG_ERROR, (pd_loc){"t.pd", 1, 1}, "third");
  ok(stop == 1, "limit reached after max_errors");
  ok(strstr(d.text.data, "too many errors") != NULL, "limit is announced");
  ok(strstr(d.text.data, "third") == NULL, "errors past the limit are not rendered");
  pd_diags_free(&d);
  pd_source_free(src);

  /* A very long line shows a window around the column, not megabytes of text. */
  size_t n = 100000;
  char *big = malloc(n + 1);
  memset(big, 'a', n);
  big[n] = '\0';
  ok(pd_source_from_string("big.pd", big, n, &src) == PD_OK, "long one-line source");
  pd_buf out;
  pd_buf_init(&out);
  pd_diag_render_snippet(&out, src, (pd_loc){"big.pd", 1, 50000});
  ok(out.len < 400, "snippet of a 100 kB line is short (%zu bytes)", out.len);
  pd_buf_free(&out);
  pd_source_free(src);
  free(big);
  /* From line 100,000 on the number is six digits: the caret line's gutter widens with it. */
  size_t nl = 100005;
  char *far = malloc(nl + 8);
  if (!far) return;
  memset(far, '\n', nl);
  memcpy(far + nl, "x = 1 +", 8);
  ok(pd_source_from_string("far.pd", far, nl + 7, &src) == PD_OK, "a source of 100,006 lines");
  pd_buf_init(&out);
  pd_diag_render_snippet(&out, src, (pd_loc){"far.pd", 100006, 8});
  is_str(out.data, "100006 | x = 1 +\n       |        ^\n",
         "line 100006: the caret under column 8 (the gutter as wide as the number)");
  pd_buf_free(&out);
  pd_buf_init(&out);
  pd_diag_render_snippet(&out, src, (pd_loc){"far.pd", 100006, 1});
  is_str(out.data, "100006 | x = 1 +\n       | ^\n", "line 100006: the caret under column 1");
  pd_buf_free(&out);
  pd_source_free(src);
  free(far);
}

static void test_atomic_write(void) {
  char path[] = "/tmp/pd_test_atomicXXXXXX";
  int fd = mkstemp(path);
  close(fd);
  pd_error e = {0};
  ok(pd_write_file_atomic(path, "hello", 5, &e) == PD_OK, "atomic write");
  char *data;
  size_t len;
  ok(pd_read_file(path, &data, &len, &e) == PD_OK && len == 5 && memcmp(data, "hello", 5) == 0,
     "read back what was written");
  pd_free(data);
  unlink(path);
  ok(pd_read_file("/nonexistent/x.pd", &data, &len, &e) == PD_EIO, "missing file is PD_EIO");
  ok(e.msg && strstr(e.msg, "cannot open") != NULL, "with a message");
  pd_error_clear(&e);
}

/* A temporary PATH.tmp.PID beside path, as a writer with that PID would have left it. */
static void leave_temp(const char *path, long pid, char *out, size_t size) {
  snprintf(out, size, "%s.tmp.%ld", path, pid);
  FILE *f = fopen(out, "w");
  if (f) fclose(f);
}

/* The temporaries of killed writers go at the next write: a dead (reaped) one's and a zombie's
 * (killed, its parent not yet waiting for it); a live writer's stays. */
static void test_dead_temps(void) {
  char path[] = "/tmp/pd_test_tempsXXXXXX";
  int fd = mkstemp(path);
  close(fd);
  char dead[64], zombie[64], live[64];
  pid_t d = fork();
  if (d == 0) _exit(0);
  waitpid(d, NULL, 0);
  leave_temp(path, (long)d, dead, sizeof dead);
  pid_t z = fork();
  if (z == 0) _exit(0);
  int pipefd[2];
  if (pipe(pipefd) != 0) return;
  pid_t l = fork();
  if (l == 0) {  /* alive until the pipe's write end closes */
    char c;
    close(pipefd[1]);
    ssize_t r = read(pipefd[0], &c, 1);
    _exit(r < 0);
  }
  close(pipefd[0]);
  leave_temp(path, (long)z, zombie, sizeof zombie);
  leave_temp(path, (long)l, live, sizeof live);
  /* the zombie: exited, not waited for (poll its state rather than sleep a fixed time) */
  siginfo_t si = {0};
  for (int i = 0; i < 500; i++) {
    if (waitid(P_PID, (id_t)z, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == z) break;
    usleep(10000);
  }
  pd_error e = {0};
  ok(pd_write_file_atomic(path, "x", 1, &e) == PD_OK, "a write beside three temporaries");
  ok(access(dead, F_OK) != 0, "a dead writer's temporary removed");
  ok(access(zombie, F_OK) != 0, "a zombie writer's temporary removed");
  ok(access(live, F_OK) == 0, "a live writer's temporary kept");
  close(pipefd[1]);
  waitpid(l, NULL, 0);
  waitpid(z, NULL, 0);
  unlink(live);
  unlink(path);
}

static void test_dims(void) {
  char buf[64];
  is_str(pd_dims_str(2, (int64_t[]){-1, 784}, buf, sizeof buf), "[-1, 784]", "dims as text");
  is_str(pd_dims_str(0, NULL, buf, sizeof buf), "[]", "rank 0");
  is_str(pd_dims_str(-1, NULL, buf, sizeof buf), "[]", "a negative rank shows no dims");
  is_str(pd_dims_str(3, (int64_t[]){10, 20, 30}, buf, 11), "[10, ...]", "cut to a list that reads as one");
  is_str(pd_dims_str(3, (int64_t[]){10, 20, 30}, buf, 13), "[10, 20, 30]", "exactly fits");
  is_str(pd_dims_str(3, (int64_t[]){10, 20, 30}, buf, 12), "[10, ...]", "one byte short");
  is_str(pd_dims_str(3, (int64_t[]){10, 20, 30}, buf, 6), "[...]", "no whole element fits");
  is_str(pd_dims_str(3, (int64_t[]){10, 20, 30}, buf, 3), "[.", "a tiny buffer: what fits");
  is_str(pd_dims_str(1, (int64_t[]){INT64_MIN}, buf, sizeof buf), "[-9223372036854775808]",
         "the widest dim");
  pd_buf b;
  pd_buf_init(&b);
  ok(pd_buf_put_dims(&b, 3, (int64_t[]){2, 0, -1}) == 0, "append dims");
  is_str(b.data, "[2, 0, -1]", "appended text");
  pd_buf_free(&b);
}

int main(void) {
  test_buf();
  test_dims();
  test_alloc_failure();
  test_alloc_threads();
  test_error();
  test_diag();
  test_atomic_write();
  test_dead_temps();
  return tap_done();
}
