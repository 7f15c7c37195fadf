/* cmd_repl.c -- `pdlang repl` (and `pdlang` with no arguments): on a terminal, an interactive
 * session with libedit line editing, persistent history, Tab completion and a continuation
 * prompt; without one, statements are read from stdin and run like a script. The session itself
 * (compiling, running, commands) is driver/repl.c. */
#include "config.h"
#include "driver/driver.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "driver/repl.h"

static volatile sig_atomic_t interrupted;
static bool script_mode;
/* Ctrl-C also writes a byte here, so that the prompt's reader wakes up even when the signal
 * came before it blocked in poll (the self-pipe trick). */
static int wake[2] = {-1, -1};

static void on_sigint(int sig) {
  (void)sig;
  int e = errno;
  if (interrupted && script_mode) _exit(130); /* a second Ctrl-C does not wait for the op */
  interrupted = 1;
  if (wake[1] >= 0) {
    ssize_t w = write(wake[1], "", 1);
    (void)w;
  }
  errno = e;
}

static void drain_wake(void) {
  char b[64];
  while (wake[0] >= 0 && read(wake[0], b, sizeof b) > 0) {}
}

/* ---- The terminal: libedit ---- */

static char prompt_main[] = "pd> ";
static char prompt_more[] = "... ";

static pd_repl *session_of(EditLine *el) {
  void *p = NULL;
  el_get(el, EL_CLIENTDATA, &p);
  return p;
}

static char *prompt(EditLine *el) {
  pd_repl *r = session_of(el);
  return r && pd_repl_pending(r) ? prompt_more : prompt_main;
}

/* libedit's character reader: one (multibyte) character from stdin, or -1 with errno EINTR as
 * soon as Ctrl-C was pressed (before or during the wait), which ends el_gets. */
static int read_char(EditLine *el, wchar_t *wc) {
  (void)el;
  char buf[MB_LEN_MAX];
  size_t n = 0;
  for (;;) {
    if (interrupted) {
      errno = EINTR;
      return -1;
    }
    struct pollfd p[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                          {.fd = wake[0], .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (p[1].revents) {
      drain_wake();
      continue;
    }
    if (!p[0].revents) continue;
    ssize_t k = read(STDIN_FILENO, buf + n, 1);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    if (k == 0) {
      *wc = 0;
      return 0;
    }
    n++;
    mbstate_t mbs;
    memset(&mbs, 0, sizeof mbs);
    size_t c = mbrtowc(wc, buf, n, &mbs);
    if (c == (size_t)-2 && n < sizeof buf) continue; /* more bytes of one character */
    if (c == (size_t)-1 || c == (size_t)-2) {
      n = 0; /* not a character: dropped */
      continue;
    }
    return 1;
  }
}

/* Tab: complete the word before the cursor in its context (pd_repl_complete_at: a name, a
 * command after a leading ':', a file name in a string, an attribute after `x.`, a keyword
 * argument of the call); list the candidates when they share no longer prefix. At the start of
 * a line (only blanks before the cursor), Tab indents. */
static unsigned char complete(EditLine *el, int ch) {
  (void)ch;
  pd_repl *r = session_of(el);
  const LineInfo *li = el_line(el);
  const char *q = li->buffer;
  while (q < li->cursor && (*q == ' ' || *q == '\t')) q++;
  if (q == li->cursor) return el_insertstr(el, "    ") ? CC_ERROR : CC_REFRESH;
  const char *const *cands;
  size_t word = 0;
  int n = pd_repl_complete_at(r, li->buffer, (size_t)(li->cursor - li->buffer), &word, &cands);
  size_t plen = (size_t)(li->cursor - li->buffer) - word;
  if (n == 0) return CC_ERROR;
  size_t common = strlen(cands[0]);
  for (int i = 1; i < n; i++) {
    size_t k = 0;
    while (k < common && cands[i][k] == cands[0][k]) k++;
    common = k;
  }
  if (common > plen) {
    char buf[256];
    size_t m = common - plen < sizeof buf - 1 ? common - plen : sizeof buf - 1;
    memcpy(buf, cands[0] + plen, m);
    buf[m] = 0;
    if (el_insertstr(el, buf)) return CC_ERROR;
    return CC_REFRESH;
  }
  if (n == 1) return CC_REFRESH;
  /* Several candidates: list them in columns under the line, then redraw it. */
  size_t width = 0;
  for (int i = 0; i < n; i++)
    if (strlen(cands[i]) > width) width = strlen(cands[i]);
  width += 2;
  struct winsize ws;
  size_t cols = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
  size_t per_row = cols / width ? cols / width : 1;
  fputc('\n', stdout);
  for (int i = 0; i < n; i++) {
    bool last = (size_t)(i + 1) % per_row == 0 || i + 1 == n;
    if (last) fprintf(stdout, "%s\n", cands[i]);
    else fprintf(stdout, "%-*s", (int)width, cands[i]);
  }
  fflush(stdout);
  return CC_REDISPLAY;
}

/* The history file: $PDLANG_HISTORY (empty: none), else ~/.pdlang_history. pd_free it. */
static char *history_path(void) {
  const char *env = getenv("PDLANG_HISTORY");
  if (env) return *env ? pd_strdup(env) : NULL;
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "%s/.pdlang_history", home);
  return b.oom ? (pd_buf_free(&b), NULL) : pd_buf_take(&b);
}

/* Write the history to path atomically (a temporary file renamed over it: two sessions saving
 * at once leave one of them whole). libedit makes the file readable by its owner only. */
static void history_save(History *hist, const char *path) {
  pd_buf tmp;
  pd_buf_init(&tmp);
  pd_buf_printf(&tmp, "%s.XXXXXX", path);
  int fd = tmp.oom ? -1 : mkstemp(tmp.data);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    if (fd >= 0) {
      close(fd);
      unlink(tmp.data);
    }
    pd_buf_free(&tmp);
    return;
  }
  HistEvent ev;
  bool ok = history(hist, &ev, H_SAVE_FP, f) >= 0;
  ok = fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp.data, path) != 0) unlink(tmp.data);
  pd_buf_free(&tmp);
}

/* Enter the statement's lines as one history entry (not when they are all blank) and save
 * the history; stmt is emptied. */
static void enter_history(History *hist, const char *hpath, pd_buf *stmt) {
  const char *p = stmt->data ? stmt->data : "";
  while (*p && isspace((unsigned char)*p)) p++;
  if (*p && !stmt->oom) {
    HistEvent ev;
    history(hist, &ev, H_ENTER, stmt->data);
    if (hpath) history_save(hist, hpath);
  }
  pd_buf_free(stmt);
  pd_buf_init(stmt);
}

static int edit_loop(pd_repl *repl) {
  setlocale(LC_CTYPE, "");
  EditLine *el = el_init("pdlang", stdin, stdout, stderr);
  History *hist = history_init();
  if (!el || !hist) {
    if (el) el_end(el);
    if (hist) history_end(hist);
    fprintf(stderr, "pdlang: cannot set up line editing\n");
    return 1;
  }
  HistEvent ev;
  history(hist, &ev, H_SETSIZE, 1000);
  history(hist, &ev, H_SETUNIQUE, 1);
  char *hpath = history_path();
  if (hpath) history(hist, &ev, H_LOAD, hpath);
  el_set(el, EL_EDITOR, "emacs");
  el_set(el, EL_GETCFN, read_char);
  el_set(el, EL_HIST, history, hist);
  el_set(el, EL_PROMPT, prompt);
  el_set(el, EL_CLIENTDATA, (void *)repl);
  /* The wide form: the narrow one copies both strings and never frees them. */
  el_wset(el, EL_ADDFN, L"pd-complete", L"complete a name", complete);
  el_set(el, EL_BIND, "^I", "pd-complete", NULL);
  el_source(el, NULL); /* the user's ~/.editrc, if any */
  printf("%s -- :help for help, :quit or Ctrl-D to leave\n", PACKAGE_STRING);
  fflush(stdout);
  pd_buf stmt;  /* the lines of the statement being typed: one history entry when it ends */
  pd_buf_init(&stmt);
  for (;;) {
    interrupted = 0;
    drain_wake();
    int count = 0;
    errno = 0;
    /* Raw mode before the prompt shows, so keys typed right after it are not seen (and echoed,
     * and ^D taken as end of file) by the terminal's line discipline first. */
    el_set(el, EL_PREP_TERM, 1);
    const char *line = el_gets(el, &count);
    int e = errno;
    if (interrupted || (!line && count == -1 && e == EINTR)) {
      /* Ctrl-C at the prompt: forget the line (and an unfinished statement). */
      interrupted = 0;
      fputc('\n', stdout);
      fflush(stdout);
      pd_repl_discard(repl);
      pd_buf_clear(&stmt);
      continue;
    }
    if (!line) {
      fputc('\n', stdout);
      fflush(stdout);
      if (count == 0 && pd_repl_pending(repl)) {
        pd_repl_end(repl); /* Ctrl-D inside a statement: report it, stay */
        enter_history(hist, hpath, &stmt);
        continue;
      }
      break; /* Ctrl-D, or the terminal went away */
    }
    /* The line joins the statement's entry (a recalled entry of several lines comes back
     * whole, newlines included); the entry goes into the history when the statement ends. */
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
    if (stmt.len || n) {
      if (stmt.len) pd_buf_puts(&stmt, "\n");
      pd_buf_append(&stmt, line, n);
    }
    pd_repl_result res = pd_repl_feed(repl, line);
    if (!pd_repl_pending(repl)) enter_history(hist, hpath, &stmt);
    if (res == PD_REPL_QUIT) break;
  }
  pd_buf_free(&stmt);
  pd_free(hpath);
  el_end(el);
  history_end(hist);
  return 0;
}

/* ---- No terminal: lines from stdin ---- */

/* Read one line (with its newline) into b. 1: a line; 0: end of input; -1: interrupted. */
static int read_line(FILE *in, pd_buf *b) {
  pd_buf_clear(b);
  char chunk[4096];
  for (;;) {
    if (!fgets(chunk, sizeof chunk, in)) {
      if (ferror(in) && errno == EINTR) {
        clearerr(in);
        if (interrupted) return -1;
        continue;
      }
      return b->len ? 1 : 0;
    }
    pd_buf_puts(b, chunk);
    size_t n = strlen(chunk);
    if (n && chunk[n - 1] == '\n') return 1;
  }
}

static int stream_loop(pd_repl *repl, bool interactive) {
  pd_buf line;
  pd_buf_init(&line);
  int rc = 0;
  for (;;) {
    if (interactive) interrupted = 0;
    int got = read_line(stdin, &line);
    if (got < 0) {
      if (!interactive) {
        rc = 130;
        break;
      }
      pd_repl_discard(repl);
      continue;
    }
    if (got == 0) {
      if (pd_repl_end(repl) != PD_REPL_OK && !interactive) rc = 1;
      break;
    }
    if (line.oom) {
      fprintf(stderr, "pdlang: out of memory\n");
      rc = 1;
      break;
    }
    pd_repl_result res = pd_repl_feed(repl, line.data);
    if (res == PD_REPL_QUIT) break;
    if (!interactive && res == PD_REPL_ERROR) {
      rc = 1;
      break;
    }
    if (!interactive && res == PD_REPL_INTERRUPTED) {
      rc = 130;
      break;
    }
  }
  pd_buf_free(&line);
  return rc;
}

static int run_repl(int argc, char **argv) {
  bool force_interactive = false;
  const char *file = NULL;
  pd_repl_options o = {.out = stdout, .err = stderr};
  const char *device = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-i") == 0 || strcmp(a, "--interactive") == 0) {
      force_interactive = true;
    } else if (strcmp(a, "--seed") == 0 && i + 1 < argc) {
      char *end;
      o.seed = strtoull(argv[++i], &end, 10);
      if (*end || !*argv[i]) {
        fprintf(stderr, "pdlang repl: --seed needs a non-negative integer, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (strcmp(a, "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strncmp(a, "--device=", 9) == 0) {
      device = a + 9;
    } else if (a[0] == '-' || file) {
      pd_driver_usage(stderr, &pd_cmd_repl);
      return 2;
    } else {
      file = a;
    }
  }
  if (pd_driver_device("repl", device, &o.place, &o.gpu_index)) return 2;
  bool tty = isatty(STDIN_FILENO);
  bool editing = tty && isatty(STDOUT_FILENO);
  bool interactive = tty || force_interactive;
  script_mode = !interactive;
  o.echo = interactive;
  o.source_name = tty ? "<repl>" : "<stdin>";
  interrupted = 0;
  o.interrupt = &interrupted;
  if (editing && pipe(wake) == 0)
    for (int i = 0; i < 2; i++) {
      fcntl(wake[i], F_SETFL, fcntl(wake[i], F_GETFL) | O_NONBLOCK);
      fcntl(wake[i], F_SETFD, FD_CLOEXEC);
    }
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint; /* no SA_RESTART: Ctrl-C must interrupt a read at the prompt */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  pd_error err = {0};
  pd_repl *repl = NULL;
  int rc = 0;
  if (pd_repl_new(&o, &repl, &err)) {
    fprintf(stderr, "pdlang: %s\n", err.msg ? err.msg : pd_status_str(err.status));
    pd_error_clear(&err);
    rc = 1;
  } else {
    pd_repl_result res = file ? pd_repl_load(repl, file) : PD_REPL_OK;
    if (res == PD_REPL_INTERRUPTED && !interactive) rc = 130;
    else if (res != PD_REPL_OK && !interactive) rc = 1;
    else rc = editing ? edit_loop(repl) : stream_loop(repl, interactive);
  }
  pd_repl_free(repl);
  sigaction(SIGINT, &old, NULL);
  for (int i = 0; i < 2; i++) {
    if (wake[i] >= 0) close(wake[i]);
    wake[i] = -1;
  }
  return rc;
}

const pd_command pd_cmd_repl = {
    .name = "repl",
    .run = run_repl,
    .summary = "an interactive session (also `pdlang` alone); reads stdin when not a terminal",
    .usage = "pdlang repl [-i] [--seed N] [--device cpu|gpu[:N]] [FILE.pd]\n"
             "       pdlang            (no arguments: the same)\n"
             "\n"
             "On a terminal: an interactive session. Statements run as they are typed, with the\n"
             "state of every statement before them; a bare expression prints its value; an\n"
             "error adds nothing to the session. Line editing, Tab completion of names, and\n"
             "history kept in $PDLANG_HISTORY (default ~/.pdlang_history; empty: none). A '{'\n"
             "or bracket left open continues on the next line. :help lists the commands\n"
             "(:vars, :program, :dot, :load, :save, :device, :reset, :quit). Ctrl-C interrupts a\n"
             "running action, or clears the line; Ctrl-D leaves.\n"
             "\n"
             "Not a terminal: statements are read from stdin and run like a script, without\n"
             "prompts, stopping at the first error (exit status 1; 130 if interrupted).\n"
             "  -i, --interactive  on stdin that is not a terminal, behave as on one: print the\n"
             "                     values of bare expressions and go on after errors\n"
             "  --seed N           seed of parameter initialisers and random ops (default 0)\n"
             "  FILE.pd            run this script first (as :load FILE.pd)",
};
