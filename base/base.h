/* base.h -- the lowest layer of pdlang: status codes, the error record, the one allocator hook,
 * growable buffers and arrays, shapes as text. Everything else (kernels, vm, lang, driver) builds on this.
 *
 * Ownership: pd_buf and pd_error own their heap memory; release with pd_buf_free / pd_error_clear.
 * All heap memory goes through pd_malloc/pd_realloc/pd_free so that tests can make the k-th
 * allocation fail (pd_alloc_fail_after) and prove that every failure path is clean. */
#ifndef PD_BASE_H
#define PD_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every public and VM entry point returns one of these. PD_OK is 0, so `if (st) return st;`. */
#define PD_STATUS_LIST(X)                                   \
  X(PD_OK,        "ok")                                     \
  X(PD_ENOMEM,    "out of memory")                          \
  X(PD_EIO,       "I/O error")                              \
  X(PD_ESYNTAX,   "syntax error")                           \
  X(PD_ECOMPILE,  "compile error")                          \
  X(PD_EFORMAT,   "malformed file")                         \
  X(PD_EINVAL,    "invalid argument")                       \
  X(PD_ESHAPE,    "shape mismatch")                         \
  X(PD_ETYPE,     "type mismatch")                          \
  X(PD_ENOTFOUND, "not found")                              \
  X(PD_ERUNTIME,  "run-time error")                         \
  X(PD_EINTR,     "interrupted")                            \
  X(PD_EUNSUPPORTED, "unsupported")

typedef enum pd_status {
#define PD_X_(name, text) name,
  PD_STATUS_LIST(PD_X_)
#undef PD_X_
  PD_STATUS_COUNT_
} pd_status;

/* A short English description of a status ("out of memory"); never NULL. */
const char *pd_status_str(pd_status st);

/* A source position: 1-based line and column (column counts bytes). `file` is borrowed: it points
 * at a name owned by a pd_source (see diag.h) or another long-lived owner. line 0 = unknown. */
typedef struct pd_loc {
  const char *file;
  int line;
  int col;
} pd_loc;

/* A call that a location is inside (an inlined `def`): where the call was written and the
 * function it called. */
typedef struct pd_call_site {
  pd_loc loc;
  const char *fn;
} pd_call_site;

/* The error record a failing call fills in (when the caller passes one). The message is owned
 * by the record; the location's file name is copied into `file_buf` so the record stands alone. */
typedef struct pd_error {
  pd_status status;
  char *msg;      /* heap, owned; NULL when status == PD_OK */
  pd_loc loc;     /* loc.file points into file_buf, or is NULL */
  char file_buf[256];
  pd_call_site *calls; /* heap, owned (their strings in the same block), or NULL: the `def`
                        * calls loc is inside, innermost first (pd_error_set_calls) */
  int ncalls;
} pd_error;

/* Record an error (printf-style message) and return `st`, so `return pd_error_set(...)` reads well.
 * `err` may be NULL (the message is dropped). An earlier message in `err` is replaced. */
pd_status pd_error_set(pd_error *err, pd_status st, pd_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
pd_status pd_error_setv(pd_error *err, pd_status st, pd_loc loc, const char *fmt, va_list ap);
void pd_error_clear(pd_error *err);
/* Put the formatted prefix and ": " before err's message (a reader or a call naming itself in
 * front of what went wrong inside it), keeping its status, location and calls. Nothing happens
 * when err is NULL or has no message; on out of memory the message stays as it was. */
void pd_error_prefix(pd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Attach the calls (innermost first) that err's location is inside, copied; a new
 * pd_error_set drops them. On out of memory err keeps its message without calls (PD_ENOMEM is
 * returned; the error itself is unchanged). */
pd_status pd_error_set_calls(pd_error *err, const pd_call_site *calls, int n);

/* ---- Memory: one hook for the whole program. ---- */
void *pd_malloc(size_t n);                  /* NULL on failure (n == 0 returns a unique pointer) */
void *pd_calloc(size_t count, size_t size); /* NULL on failure or overflow */
void *pd_realloc(void *p, size_t n);        /* NULL on failure; p is then still valid */
void pd_free(void *p);
char *pd_strdup(const char *s);             /* NULL on failure */
char *pd_strndup(const char *s, size_t n);
/* Test hook: the n-th allocation from now fails (1 = the next one); 0 turns failure off.
 * Returns how many allocations were counted since the last call. */
long pd_alloc_fail_after(long n);

/* "Did you mean": keep cand in *best (distance *bestd, start with 1000) when it is the closest
 * to word so far and close enough to be a plausible typo (edit distance ignoring case: a case
 * slip for names of 1-2 letters, 1 edit up to 4 letters, 2 beyond); word itself is skipped. */
void pd_suggest_consider(const char *word, const char *cand, const char **best, int *bestd);

/* ---- Growable byte buffer (always NUL-terminated when len > 0 or after any append). ---- */
typedef struct pd_buf {
  char *data;
  size_t len;
  size_t cap;
  int oom;  /* set once an append failed; later appends are ignored */
} pd_buf;

void pd_buf_init(pd_buf *b);
void pd_buf_free(pd_buf *b);
void pd_buf_clear(pd_buf *b);                 /* len = 0, keeps the storage */
int pd_buf_append(pd_buf *b, const void *data, size_t n);  /* 0 ok, -1 out of memory */
int pd_buf_puts(pd_buf *b, const char *s);
int pd_buf_printf(pd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pd_buf_vprintf(pd_buf *b, const char *fmt, va_list ap);
/* Hand the string over to the caller (who frees it with pd_free); the buffer is left empty.
 * Returns an empty heap string when nothing was appended, NULL on out of memory. */
char *pd_buf_take(pd_buf *b);

/* ---- Shapes as text: "[2, 3]", "[-1, 784]" (an unknown dim is shown as its value, -1), "[]"
 * for rank 0 (or a negative rank). ---- */
/* Append the shape to b; 0, or -1 out of memory (as pd_buf_puts). */
int pd_buf_put_dims(pd_buf *b, int nd, const int64_t *dims);
/* The shape into buf of n bytes; returns buf. Allocates nothing. When it does not fit, the list
 * is cut after the last whole element that leaves room for ", ...]" ("[1, 2, ...]"), so that it
 * still reads as a list; a buffer under 8 bytes gets what fits of "[...]". 2 + 22 * nd bytes
 * always suffice. */
const char *pd_dims_str(int nd, const int64_t *dims, char *buf, size_t n);

/* Append v with the fewest significant digits (%g) that read back as v, or as the same float
 * when single (from 6, at most 9 or 17); 0, or -1 out of memory. */
int pd_buf_put_shortest(pd_buf *b, double v, bool single);

/* Whether s is a plain name: a letter or '_', then letters, digits and '_' (ASCII). */
bool pd_is_plain_name(const char *s);
/* Whether s is a var name as Fluid's models write them: a letter or '_', then letters, digits,
 * '_', '.' and '/' (fc_0.tmp_1, save_infer_model/scale_0.tmp_0). */
bool pd_is_var_name(const char *s);

/* Grow a dynamic array `*ptr` of `*cap` elements of size `elem` so it holds at least `need`.
 * Returns 0, or -1 on overflow/out of memory (then *ptr and *cap are unchanged). */
int pd_grow(void **ptr, size_t *cap, size_t need, size_t elem);
#define PD_GROW(ptr, cap, need) pd_grow((void **)&(ptr), &(cap), (need), sizeof *(ptr))

/* A path a file names (a script's "data/x.csv"): a relative path is taken from the folder of
 * `file` when something exists there by that name, else as given (from the working directory).
 * Absolute paths, and a NULL or folderless `file`, give path itself. Heap string (pd_free);
 * NULL on out of memory. */
char *pd_path_beside(const char *file, const char *path);
/* Read a whole file into a heap buffer (NUL-terminated, not counted in *len). */
pd_status pd_read_file(const char *path, char **out, size_t *len, pd_error *err);
/* Write a file atomically: temp file in the same directory, fsync, rename. */
pd_status pd_write_file_atomic(const char *path, const void *data, size_t len, pd_error *err);
/* The two halves of pd_write_file_atomic, for files that must appear together (a .pdmodel and
 * its .pdiparams): write data to a temporary beside path (PATH.tmp.PID) and fsync it, *tmp its
 * name (the caller's: pd_free it, after pd_commit_file or pd_discard_file); then rename it over
 * path (on failure the temporary is removed). Errors name path. */
pd_status pd_write_file_temp(const char *path, const void *data, size_t len, char **tmp,
                             pd_error *err);
pd_status pd_commit_file(const char *tmp, const char *path, pd_error *err);
void pd_discard_file(const char *tmp);
/* A set of files that belong together (a model, its parameters, its .categories and
 * .preprocess), written as one: every file with data to its temporary first (a failure, a full
 * disk, removes them all and leaves the old files as they were), then the files without data
 * (data NULL: a side file an older save left, which must not pair with the new ones) removed,
 * then the temporaries renamed in the order given: list last the file readers open first (the
 * model). Errors name the file at fault. */
typedef struct pd_file_out {
  const char *path;
  const void *data;   /* NULL: remove path when it exists */
  size_t len;
} pd_file_out;
pd_status pd_write_files_atomic(int n, const pd_file_out *files, pd_error *err);

/* FNV-1a, 64-bit: the one hash of pdlang (file identities, the string map's keys). A hash
 * starts at PD_FNV_BASIS and takes one byte at a time through pd_fnv_step. Not cryptographic. */
#define PD_FNV_BASIS 0xcbf29ce484222325ull
static inline uint64_t pd_fnv_step(uint64_t h, unsigned char byte) {
  return (h ^ byte) * 0x100000001b3ull;
}
/* FNV-1a 64 of n bytes: an identity of a file's content. */
uint64_t pd_hash_bytes(const void *data, size_t n);

#define PD_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PD_UNUSED(x) ((void)(x))

#endif /* PD_BASE_H */
