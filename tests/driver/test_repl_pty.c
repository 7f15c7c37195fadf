/* test_pty.c -- drives the interactive REPL through a real pseudo-terminal, typing the way a
 * person does and reading the screen: `pdlang` with no arguments on a terminal, a multi-line
 * `if` block at the continuation prompt (one history entry), an error followed by a correct
 * line, a bare expression, history recall with the up arrow (also in a second session, from the
 * history file), Tab completion (names, keyword arguments, attributes, file names), :vars,
 * Ctrl-C at the prompt and during a running action, Ctrl-D inside a block, :quit and Ctrl-D.
 * Each session must end with status 0 and no sanitizer report. TAP output. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"

enum { OUT_CAP = 1 << 20 };

typedef struct session {
  pid_t pid;
  int fd;              /* the pty's master side */
  char *raw;           /* everything the REPL wrote */
  size_t nraw;
  char *text;          /* the same without CR, escape sequences, BEL and backspaces */
  size_t ntext;
  size_t mark;         /* expect() searches text from here */
  int esc;             /* escape-sequence state of the filter: 0 none, 1 after ESC, 2 in CSI */
} session;

static const char *pdlang;
static char dir[256];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void filter(session *s, const char *p, size_t n) {
  for (size_t i = 0; i < n && s->ntext + 1 < OUT_CAP; i++) {
    unsigned char c = (unsigned char)p[i];
    if (s->esc == 1) {
      s->esc = c == '[' ? 2 : 0;
      continue;
    }
    if (s->esc == 2) {
      if (c >= 0x40 && c <= 0x7e) s->esc = 0;
      continue;
    }
    if (c == 0x1b) {
      s->esc = 1;
      continue;
    }
    if (c == '\r' || c == '\a' || c == '\b') continue;
    s->text[s->ntext++] = (char)c;
  }
  s->text[s->ntext] = 0;
}

/* Read what is there, waiting up to `wait` seconds for something. 0 at the end of output. */
static int pump(session *s, double wait) {
  struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
  int r = poll(&pfd, 1, (int)(wait * 1000));
  if (r <= 0) return r < 0 && errno != EINTR ? 0 : 1;
  char buf[4096];
  ssize_t n = read(s->fd, buf, sizeof buf);
  if (n <= 0) return 0; /* EIO: the child closed the terminal */
  if (s->nraw + (size_t)n < OUT_CAP) {
    memcpy(s->raw + s->nraw, buf, (size_t)n);
    s->nraw += (size_t)n;
  }
  filter(s, buf, (size_t)n);
  return 1;
}

/* Wait (up to 60 s: sanitizer builds are slow) until `want` appears after the mark; move the
 * mark past it. */
static bool expect(session *s, const char *want) {
  double end = now() + 60;
  for (;;) {
    char *hit = strstr(s->text + s->mark, want);
    if (hit) {
      s->mark = (size_t)(hit - s->text) + strlen(want);
      return true;
    }
    if (now() > end || !pump(s, 0.2)) {
      hit = strstr(s->text + s->mark, want);
      if (hit) {
        s->mark = (size_t)(hit - s->text) + strlen(want);
        return true;
      }
      printf("# expected \"%s\"; the last bytes written:\n# ", want);
      for (size_t i = s->nraw > 600 ? s->nraw - 600 : 0; i < s->nraw; i++) {
        unsigned char c = (unsigned char)s->raw[i];
        if (c == '\n') printf("\\n\n# ");
        else if (c < 32 || c > 126) printf("\\x%02x", c);
        else putchar(c);
      }
      printf("\n# the text after the last match:\n");
      const char *t = s->text + s->mark;
      for (const char *line = t; *line;) {
        size_t len = strcspn(line, "\n");
        printf("#   %.*s\n", (int)len, line);
        line += len + (line[len] != 0);
      }
      return false;
    }
  }
}

static void type(session *s, const char *keys) {
  size_t n = strlen(keys);
  while (n) {
    ssize_t w = write(s->fd, keys, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    keys += w;
    n -= (size_t)w;
  }
  /* Keep reading so that the child never blocks on a full terminal. */
  pump(s, 0.05);
}

static bool start(session *s) {
  memset(s, 0, sizeof *s);
  s->raw = calloc(OUT_CAP, 1);
  s->text = calloc(OUT_CAP, 1);
  if (!s->raw || !s->text) return false;
  struct winsize ws = {.ws_row = 24, .ws_col = 100};
  s->pid = forkpty(&s->fd, NULL, NULL, &ws);
  if (s->pid < 0) return false;
  if (s->pid == 0) {
    char hist[300];
    snprintf(hist, sizeof hist, "%s/history", dir);
    setenv("PDLANG_HISTORY", hist, 1);
    setenv("HOME", dir, 1); /* no ~/.editrc of the user's */
    setenv("TERM", "xterm", 1);
    execl(pdlang, pdlang, (char *)NULL);
    _exit(127);
  }
  return true;
}

/* Wait for the child to leave; its exit status, or -1 (128 + signal when killed). */
static int finish(session *s) {
  double end = now() + 60;
  int status = 0;
  for (;;) {
    pid_t w = waitpid(s->pid, &status, WNOHANG);
    if (w == s->pid) break;
    if (now() > end) {
      kill(s->pid, SIGKILL);
      waitpid(s->pid, &status, 0);
      break;
    }
    pump(s, 0.1);
  }
  while (pump(s, 0.05) > 0 && s->nraw < OUT_CAP - 4096) {}
  close(s->fd);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* No sanitizer report in the output (else it is shown, 80 lines of it). */
static bool clean(const session *s) {
  const char *rep = strstr(s->text, "==ERROR: ");
  if (!rep) rep = strstr(s->text, "runtime error:");
  if (!rep) rep = strstr(s->text, "Sanitizer");
  if (!rep) return true;
  while (rep > s->text && rep[-1] != '\n') rep--;
  for (int k = 0; k < 80 && *rep; k++) {
    size_t len = strcspn(rep, "\n");
    printf("# %.*s\n", (int)len, rep);
    rep += len + (rep[len] != 0);
  }
  return false;
}

static void done(session *s) {
  free(s->raw);
  free(s->text);
}

int main(void) {
  pdlang = getenv("PDLANG");
  if (!pdlang) {
    printf("1..0 # SKIP PDLANG is not set\n");
    return 0;
  }
  snprintf(dir, sizeof dir, "%s/pd_pty.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    printf("Bail out! cannot make a temporary folder\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);

  session s;
  ok(start(&s), "pdlang starts on a pseudo-terminal");
  ok(expect(&s, ":help for help") && expect(&s, "pd> "),
     "no arguments on a terminal: banner, prompt");

  /* A multi-line if over a minibatch, at the continuation prompt. */
  type(&s, "x = minibatch([10, 20, 30])\r");
  ok(expect(&s, "pd> "), "a statement");
  type(&s, "if (x > 15) {\r");
  bool more = expect(&s, "... ");
  type(&s, "    o = x * 2\r");
  more = more && expect(&s, "... ");
  type(&s, "} else {\r");
  more = more && expect(&s, "... ");
  type(&s, "    o = x\r");
  more = more && expect(&s, "... ");
  type(&s, "}\r");
  ok(more && expect(&s, "pd> "), "an if block over several lines, with the continuation prompt");
  type(&s, "print(o)\r");
  ok(expect(&s, "[[10],\n [40],\n [60]]\npd> "), "its outputs merged row by row");

  /* The block is one history entry: three up arrows (past "o = x" and "print(o)") recall it
   * whole, and Enter runs it again, so o is the merged value once more. */
  type(&s, "o = x\r");
  expect(&s, "pd> ");
  type(&s, "\x1b[A\x1b[A\x1b[A\r");
  size_t at = s.mark;
  ok(expect(&s, "o = x * 2") && expect(&s, "pd> ") && !strstr(s.text + at, "... "),
     "a block typed over several lines comes back from the history whole");
  type(&s, "print(o)\r");
  ok(expect(&s, "[[10],\n [40],\n [60]]\npd> "), "and runs whole");

  /* An error, then a correct line: the session goes on, its state intact. */
  type(&s, "y = o + undefined_name\r");
  ok(expect(&s, "<repl>:") && expect(&s, "error: 'undefined_name' is not defined") &&
         expect(&s, "| y = o + undefined_name") && expect(&s, "pd> "),
     "an undefined name: the diagnostic shows the line typed");
  type(&s, "print(o + 1)\r");
  ok(expect(&s, "[[11],\n [41],\n [61]]\npd> "), "a correct line after the error works");
  type(&s, "y\r");
  ok(expect(&s, "'y' is not defined") && expect(&s, "pd> "), "the failed statement added nothing");

  /* History: the up arrow recalls the previous line, Enter runs it again. */
  type(&s, "print(o + 1)\r");
  ok(expect(&s, "[[11],") && expect(&s, "pd> "), "print(o + 1) once more");
  type(&s, "\x1b[A\r");
  ok(expect(&s, "print(o + 1)") && expect(&s, "[[11],\n [41],\n [61]]\npd> "),
     "up arrow + Enter runs the previous line again");

  /* A bare expression prints its value, with shape and dtype; compile-time values as such. */
  type(&s, "o * 10\r");
  ok(expect(&s, "Tensor(shape=[3, 1], dtype=float32)\n[[100],\n [400],\n [600]]\npd> "),
     "a bare tensor expression prints its value");
  type(&s, "[1, 2] \r");
  ok(expect(&s, "\n[1, 2]\npd> "), "a bare compile-time value prints as itself");

  /* Tab completion: a name in scope, a built-in function, a command. */
  type(&s, "my_long_name = 21\r");
  expect(&s, "pd> ");
  type(&s, "my_lo\t * 2\r");
  ok(expect(&s, "my_long_name * 2") && expect(&s, "\n42\npd> "), "Tab completes a name in scope");
  type(&s, "pri\t(3 + 4)\r");
  ok(expect(&s, "print(3 + 4)") && expect(&s, "\n7\npd> "), "Tab completes a built-in function");
  type(&s, "reduce_m\t");
  ok(expect(&s, "reduce_max") && expect(&s, "reduce_mean") && expect(&s, "reduce_min"),
     "Tab lists the candidates when several match");
  type(&s, "\x15");   /* Ctrl-U: kill the line */
  type(&s, ":va\t\r");
  ok(expect(&s, ":vars") && expect(&s, "  x  ") && expect(&s, "[3, 1] float32  block 0") &&
         expect(&s, "my_long_name  int = 21") && expect(&s, "pd> "),
     ":vars (completed from :va) lists names, shapes, dtypes and blocks");

  /* Tab in context: a keyword argument of the function called, a tensor's attribute after
   * `x.`, a file name inside a string. */
  type(&s, "import \"layers\"\r");
  expect(&s, "pd> ");
  type(&s, "q = fc(x, 2, act\trelu)\r");
  size_t before = s.mark;  /* (the terminal may skip drawing the blank it already shows) */
  ok(expect(&s, "relu)") && expect(&s, "pd> ") && !strstr(s.text + before, "error"),
     "Tab completes a keyword argument of the function being called");
  type(&s, "q.sh\t\r");
  ok(expect(&s, "q.shape") && expect(&s, "[3, 2]\npd> "), "Tab completes an attribute after x.");
  char path[300], typed[400];
  snprintf(path, sizeof path, "%s/complete_me.csv", dir);
  FILE *cf = fopen(path, "w");
  if (cf) fclose(cf);
  snprintf(typed, sizeof typed, "\"%s/compl\t\"\r", dir);
  type(&s, typed);
  ok(expect(&s, "complete_me.csv\"") && expect(&s, "complete_me.csv\"\npd> "),
     "Tab completes a file name inside a string");
  unlink(path);

  /* Ctrl-C at the prompt clears the line. */
  type(&s, "print(12345)");
  expect(&s, "print(12345)");
  type(&s, "\x03");
  ok(expect(&s, "pd> "), "Ctrl-C at the prompt gives a fresh prompt");
  type(&s, "print(2 + 2)\r");
  ok(expect(&s, "\n4\npd> ") && !strstr(s.text, "\n12345\n"), "... and the line was dropped");

  /* A statement's values are computed as it is typed: Ctrl-C stops a runaway while there, and
   * the statement is dropped, so later statements do not run it again. (Nested: a single while
   * stops itself after a million iterations.) */
  type(&s, "j = var(0); k = var(0)\r");
  expect(&s, "pd> ");
  type(&s, "while (j < 1000) { j = j + 1; let i = var(0); "
           "while (i < 900000) { i = i + 1; k = k + 1 } }\r");
  expect(&s, "} }\n");
  usleep(1500 * 1000);
  type(&s, "\x03");
  ok(expect(&s, "error: interrupted") && expect(&s, "pd> "),
     "Ctrl-C interrupts a statement's loop running");
  type(&s, "print(k)\r");
  ok(expect(&s, "\n[0]\npd> "), "the statement was dropped: k is as it was, computed at once");
  type(&s, "print(5 + 5)\r");
  ok(expect(&s, "\n10\npd> "), "the session goes on after the interrupt");

  /* Ctrl-D inside a block reports the unfinished statement; :quit leaves. */
  type(&s, "if (x > 1) {\r");
  expect(&s, "... ");
  type(&s, "\x04");
  ok(expect(&s, "error: unexpected end of input") && expect(&s, "pd> "),
     "Ctrl-D inside a block: the error, then the prompt");
  type(&s, ":quit\r");
  int st = finish(&s);
  is_int(st, 0, ":quit: exit status 0");
  ok(clean(&s), "no sanitizer report");
  done(&s);

  /* The history persists: a new session recalls the last line of the previous one. */
  char hist[300], *text = NULL;
  snprintf(hist, sizeof hist, "%s/history", dir);
  FILE *f = fopen(hist, "r");
  if (f) {
    text = calloc(OUT_CAP, 1);
    if (text) text[fread(text, 1, OUT_CAP - 1, f)] = 0;
    fclose(f);
  }
  ok(text && strstr(text, "print(5") && strstr(text, "minibatch([10,"),
     "the history file holds the lines typed");
  free(text);
  ok(start(&s), "a second session");
  expect(&s, "pd> ");
  /* Newest first: ":quit", "if (x > 1) {", "print(5 + 5)". */
  type(&s, "\x1b[A\x1b[A\x1b[A\r");
  ok(expect(&s, "print(5 + 5)") && expect(&s, "\n10\npd> "),
     "the up arrow reaches the previous session's lines, and Enter runs one");
  type(&s, "\x04");
  st = finish(&s);
  is_int(st, 0, "Ctrl-D: exit status 0");
  ok(clean(&s), "no sanitizer report");
  done(&s);

  unlink(hist);
  rmdir(dir);
  return tap_done();
}
