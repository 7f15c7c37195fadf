/* base.c -- status strings, error records, the allocator hook, buffers and whole-file I/O. */
#include "config.h"
#include "base/base.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const status_names[] = {
#define PD_X_(name, text) text,
    PD_STATUS_LIST(PD_X_)
#undef PD_X_
};
_Static_assert(PD_ARRAY_LEN(status_names) == PD_STATUS_COUNT_, "status table out of sync");

const char *pd_status_str(pd_status st) {
  if ((unsigned)st >= PD_STATUS_COUNT_) return "unknown status";
  return status_names[st];
}

/* ---- Allocation ---- */

/* The failure hook's state: atomic, as the batcher's and the kernels' pool threads allocate
 * while the thread that set the hook runs. */
static atomic_long alloc_fail_at;   /* 0: never fail; otherwise fail when alloc_count reaches it */
static atomic_long alloc_count;

long pd_alloc_fail_after(long n) {
  long counted = atomic_exchange_explicit(&alloc_count, 0, memory_order_relaxed);
  atomic_store_explicit(&alloc_fail_at, n, memory_order_relaxed);
  return counted;
}

static int alloc_should_fail(void) {
  long count = atomic_fetch_add_explicit(&alloc_count, 1, memory_order_relaxed) + 1;
  long at = atomic_load_explicit(&alloc_fail_at, memory_order_relaxed);
  return at > 0 && count >= at;
}

void *pd_malloc(size_t n) {
  if (alloc_should_fail()) return NULL;
  return malloc(n ? n : 1);
}

void *pd_calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  if (alloc_should_fail()) return NULL;
  return calloc(count ? count : 1, size ? size : 1);
}

void *pd_realloc(void *p, size_t n) {
  if (alloc_should_fail()) return NULL;
  return realloc(p, n ? n : 1);
}

void pd_free(void *p) { free(p); }

char *pd_strndup(const char *s, size_t n) {
  char *d = pd_malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *pd_strdup(const char *s) { return pd_strndup(s, strlen(s)); }

/* ---- Shapes as text ---- */

int pd_buf_put_dims(pd_buf *b, int nd, const int64_t *dims) {
  int r = pd_buf_puts(b, "[");
  for (int i = 0; i < nd; i++) r |= pd_buf_printf(b, "%s%" PRId64, i ? ", " : "", dims[i]);
  return r | pd_buf_puts(b, "]");
}

int pd_buf_put_shortest(pd_buf *b, double v, bool single) {
  char s[40];
  for (int p = 6, hi = single ? 9 : 17; p <= hi; p++) {
    snprintf(s, sizeof s, "%.*g", p, v);
    double back = strtod(s, NULL);
    if (p == hi || (single ? (float)back == (float)v : back == v)) break;
  }
  return pd_buf_puts(b, s);
}

bool pd_is_plain_name(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

bool pd_is_var_name(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9') || *s == '.' || *s == '/') return false;
  for (; *s; s++)
    if (!(*s == '_' || *s == '.' || *s == '/' || (*s >= 'a' && *s <= 'z') ||
          (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

const char *pd_dims_str(int nd, const int64_t *dims, char *buf, size_t n) {
  if (!n) return buf;
  char item[32];
  size_t full = 2; /* "[" and "]" */
  for (int i = 0; i < nd; i++)
    full += (size_t)snprintf(item, sizeof item, "%s%" PRId64, i ? ", " : "", dims[i]);
  bool cut = full >= n; /* the whole list needs full + 1 bytes, its NUL included */
  if (cut && n < 8) {
    snprintf(buf, n, "[...]");
    return buf;
  }
  size_t k = 0;
  buf[k++] = '[';
  for (int i = 0; i < nd; i++) {
    int len = snprintf(item, sizeof item, "%s%" PRId64, i ? ", " : "", dims[i]);
    if (cut && k + (size_t)len + 7 > n) { /* keep room for ", ...]" and the NUL */
      snprintf(buf + k, n - k, "%s...]", i ? ", " : "");
      return buf;
    }
    memcpy(buf + k, item, (size_t)len);
    k += (size_t)len;
  }
  buf[k++] = ']';
  buf[k] = '\0';
  return buf;
}

int pd_grow(void **ptr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return -1;
    ncap *= 2;
  }
  if (elem && ncap > SIZE_MAX / elem) return -1;
  void *np = pd_realloc(*ptr, ncap * elem);
  if (!np) return -1;
  *ptr = np;
  *cap = ncap;
  return 0;
}

/* ---- Errors ---- */

pd_status pd_error_setv(pd_error *err, pd_status st, pd_loc loc, const char *fmt, va_list ap) {
  if (!err) return st;
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_vprintf(&b, fmt, ap);
  pd_free(err->msg);
  err->msg = b.oom ? NULL : pd_buf_take(&b);
  pd_buf_free(&b);
  err->status = st;
  err->loc = loc;
  pd_free(err->calls);
  err->calls = NULL;
  err->ncalls = 0;
  if (loc.file) {
    snprintf(err->file_buf, sizeof err->file_buf, "%s", loc.file);
    err->loc.file = err->file_buf;
  }
  return st;
}

pd_status pd_error_set(pd_error *err, pd_status st, pd_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pd_error_setv(err, st, loc, fmt, ap);
  va_end(ap);
  return st;
}

void pd_error_prefix(pd_error *err, const char *fmt, ...) {
  if (!err || !err->msg) return;
  pd_buf b;
  pd_buf_init(&b);
  va_list ap;
  va_start(ap, fmt);
  pd_buf_vprintf(&b, fmt, ap);
  va_end(ap);
  pd_buf_printf(&b, ": %s", err->msg);
  if (!b.oom) {
    pd_free(err->msg);
    err->msg = pd_buf_take(&b);
  }
  pd_buf_free(&b);
}

void pd_error_clear(pd_error *err) {
  if (!err) return;
  pd_free(err->msg);
  pd_free(err->calls);
  memset(err, 0, sizeof *err);
}

pd_status pd_error_set_calls(pd_error *err, const pd_call_site *calls, int n) {
  if (!err) return PD_OK;
  pd_free(err->calls);
  err->calls = NULL;
  err->ncalls = 0;
  if (n <= 0 || !calls) return PD_OK;
  /* One block: the array, then each file name and function name. */
  size_t size = sizeof *calls * (size_t)n;
  for (int i = 0; i < n; i++)
    size += (calls[i].loc.file ? strlen(calls[i].loc.file) + 1 : 0) +
            (calls[i].fn ? strlen(calls[i].fn) + 1 : 0);
  pd_call_site *out = pd_malloc(size);
  if (!out) return PD_ENOMEM;
  char *text = (char *)(out + n);
  for (int i = 0; i < n; i++) {
    out[i] = calls[i];
    if (calls[i].loc.file) {
      size_t len = strlen(calls[i].loc.file) + 1;
      out[i].loc.file = memcpy(text, calls[i].loc.file, len);
      text += len;
    }
    if (calls[i].fn) {
      size_t len = strlen(calls[i].fn) + 1;
      out[i].fn = memcpy(text, calls[i].fn, len);
      text += len;
    }
  }
  err->calls = out;
  err->ncalls = n;
  return PD_OK;
}

/* ---- Buffers ---- */

void pd_buf_init(pd_buf *b) { memset(b, 0, sizeof *b); }

void pd_buf_free(pd_buf *b) {
  pd_free(b->data);
  pd_buf_init(b);
}

void pd_buf_clear(pd_buf *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

int pd_buf_append(pd_buf *b, const void *data, size_t n) {
  if (b->oom) return -1;
  if (n > SIZE_MAX - b->len - 1 || PD_GROW(b->data, b->cap, b->len + n + 1)) {
    b->oom = 1;
    return -1;
  }
  if (n) memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int pd_buf_puts(pd_buf *b, const char *s) { return pd_buf_append(b, s, strlen(s)); }

int pd_buf_vprintf(pd_buf *b, const char *fmt, va_list ap) {
  if (b->oom) return -1;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return -1;
  if (PD_GROW(b->data, b->cap, b->len + (size_t)n + 1)) {
    b->oom = 1;
    return -1;
  }
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int pd_buf_printf(pd_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = pd_buf_vprintf(b, fmt, ap);
  va_end(ap);
  return r;
}

char *pd_buf_take(pd_buf *b) {
  char *s = b->data;
  if (!s) s = pd_strdup("");
  pd_buf_init(b);
  return s;
}

/* ---- Files ---- */

char *pd_path_beside(const char *file, const char *path) {
  const char *slash = file && path[0] != '/' ? strrchr(file, '/') : NULL;
  if (!slash) return pd_strdup(path);
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "%.*s/%s", (int)(slash - file), file, path);
  char *joined = pd_buf_take(&b);
  struct stat sb;
  if (!joined || stat(joined, &sb) == 0) return joined;
  pd_free(joined);
  return pd_strdup(path);
}

pd_status pd_read_file(const char *path, char **out, size_t *len, pd_error *err) {
  pd_loc nowhere = {0};
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return pd_error_set(err, PD_EIO, nowhere, "cannot open '%s': %s", path, strerror(errno));
  pd_buf b;
  pd_buf_init(&b);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (pd_buf_append(&b, chunk, n)) {
      fclose(f);
      pd_buf_free(&b);
      return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", path);
    }
  }
  int bad = ferror(f), e = errno;
  fclose(f);
  if (bad) {
    pd_buf_free(&b);
    return pd_error_set(err, PD_EIO, nowhere, "cannot read '%s': %s", path,
                        e == EISDIR ? "it is a directory" : e ? strerror(e) : "read error");
  }
  *len = b.len;
  *out = pd_buf_take(&b);
  if (!*out) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", path);
  return PD_OK;
}

/* Whether process pid is a zombie: dead, not yet reaped by its parent (Linux's /proc/PID/stat,
 * whose third field is the state, after the command name in parentheses; false where it cannot
 * be read). kill(pid, 0) succeeds on a zombie, which can write nothing any more. */
static bool is_zombie(long pid) {
  char name[64], line[512];
  snprintf(name, sizeof name, "/proc/%ld/stat", pid);
  FILE *f = fopen(name, "r");
  if (!f) return false;
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = '\0';
  const char *close = strrchr(line, ')');
  return close && close[1] == ' ' && close[2] == 'Z';
}

/* Remove the temporaries PATH.tmp.PID that processes which no longer exist left beside path
 * (killed during a write): each write of path cleans up after the dead, so they never pile
 * up. A PID that is alive (or that cannot be told: EPERM) keeps its file; so does ours; a
 * zombie's goes (a killed writer whose parent has not reaped it yet). */
static void remove_dead_temps(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t nbase = strlen(base);
  pd_buf d;
  pd_buf_init(&d);
  if (slash) pd_buf_printf(&d, "%.*s", (int)(slash - path + 1), path);
  else pd_buf_printf(&d, "./");
  if (d.oom) return;
  DIR *dir = opendir(d.data);
  struct dirent *e;
  while (dir && (e = readdir(dir)) != NULL) {
    const char *n = e->d_name;
    if (strncmp(n, base, nbase) != 0 || strncmp(n + nbase, ".tmp.", 5) != 0) continue;
    const char *digits = n + nbase + 5;
    char *end;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    if (!*digits || *end || errno || pid <= 0 || (pid_t)pid != pid || pid == (long)getpid())
      continue;
    if ((kill((pid_t)pid, 0) == 0 || errno != ESRCH) && !is_zombie(pid)) continue;
    size_t keep = d.len;
    pd_buf_printf(&d, "%s", n);
    if (!d.oom) unlink(d.data);
    d.len = keep;
    if (d.data) d.data[keep] = 0;
  }
  if (dir) closedir(dir);
  pd_buf_free(&d);
}

pd_status pd_write_file_temp(const char *path, const void *data, size_t len, char **tmp_out,
                             pd_error *err) {
  pd_loc nowhere = {0};
  *tmp_out = NULL;
  /* Refused before anything is written: a pair of files then fails before either appears. */
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
    return pd_error_set(err, PD_EIO, nowhere, "cannot write '%s': it is a directory", path);
  remove_dead_temps(path);
  pd_buf tmp;
  pd_buf_init(&tmp);
  pd_buf_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
  if (tmp.oom) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    pd_error_set(err, PD_EIO, nowhere, "cannot write '%s': %s", path, strerror(errno));
    pd_buf_free(&tmp);
    return PD_EIO;
  }
  const char *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      goto fail;
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0) goto fail;
  if (close(fd) != 0) {
    fd = -1;
    goto fail;
  }
  *tmp_out = tmp.data;  /* the buffer's NUL-terminated text, now the caller's */
  return PD_OK;
fail:
  pd_error_set(err, PD_EIO, nowhere, "cannot write '%s': %s", path, strerror(errno));
  if (fd >= 0) close(fd);
  unlink(tmp.data);
  pd_buf_free(&tmp);
  return PD_EIO;
}

pd_status pd_commit_file(const char *tmp, const char *path, pd_error *err) {
  if (rename(tmp, path) == 0) return PD_OK;
  pd_error_set(err, PD_EIO, (pd_loc){0}, "cannot write '%s': %s", path, strerror(errno));
  unlink(tmp);
  return PD_EIO;
}

void pd_discard_file(const char *tmp) {
  if (tmp) unlink(tmp);
}

pd_status pd_write_file_atomic(const char *path, const void *data, size_t len, pd_error *err) {
  char *tmp;
  pd_status st = pd_write_file_temp(path, data, len, &tmp, err);
  if (st) return st;
  st = pd_commit_file(tmp, path, err);
  pd_free(tmp);
  return st;
}

pd_status pd_write_files_atomic(int n, const pd_file_out *files, pd_error *err) {
  char **tmps = pd_calloc((size_t)(n > 0 ? n : 1), sizeof *tmps);
  if (!tmps) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  pd_status st = PD_OK;
  for (int i = 0; i < n && !st; i++)
    if (files[i].data) st = pd_write_file_temp(files[i].path, files[i].data, files[i].len, &tmps[i], err);
  for (int i = 0; i < n && !st; i++)
    if (!files[i].data && unlink(files[i].path) != 0 && errno != ENOENT)
      st = pd_error_set(err, PD_EIO, (pd_loc){0}, "cannot remove '%s': %s", files[i].path,
                        strerror(errno));
  for (int i = 0; i < n; i++) {
    if (!tmps[i]) continue;
    if (st) pd_discard_file(tmps[i]);
    else st = pd_commit_file(tmps[i], files[i].path, err);
    pd_free(tmps[i]);
  }
  pd_free(tmps);
  return st;
}

uint64_t pd_hash_bytes(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = PD_FNV_BASIS;
  for (size_t i = 0; i < n; i++) h = pd_fnv_step(h, p[i]);
  return h;
}

/* ---- "Did you mean" ---- */

/* Edit distance, ignoring case; large for words too long to be names. */
static int edit_distance(const char *a, const char *b) {
  enum { MAXLEN = 63 };
  size_t la = strlen(a), lb = strlen(b);
  if (la > MAXLEN || lb > MAXLEN) return 1000;
  int row[MAXLEN + 1];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int best = diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* Keep cand in *best when it is the closest so far and close enough to be a plausible typo:
 * a case slip for names of 1-2 letters, 1 edit up to 4 letters, 2 beyond. */
void pd_suggest_consider(const char *word, const char *cand, const char **best, int *bestd) {
  size_t len = strlen(word);
  int reach = len <= 2 ? 0 : len <= 4 ? 1 : 2;
  int d = edit_distance(word, cand);
  if (d <= reach && d < *bestd && strcmp(word, cand) != 0) {
    *best = cand;
    *bestd = d;
  }
}
