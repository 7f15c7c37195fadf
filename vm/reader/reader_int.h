/* reader_int.h -- private to the data readers (vm/reader*.c): a byte stream over a file that
 * is read as is or, when it starts with the gzip magic, inflated on the fly (zlib with the
 * pd_malloc hook), counting offsets for error messages.
 *
 * Ownership: a pd_rstream owns its file descriptor, buffer and zlib state until
 * pd_rstream_close; `path` is borrowed and must outlive the stream. */
#ifndef PD_READER_INT_H
#define PD_READER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <zlib.h>

#include "base/base.h"

typedef struct pd_rstream {
  const char *path;      /* borrowed, for messages */
  int fd;
  bool gz;               /* inflating a gzip stream */
  bool zinit;            /* zs is initialised */
  bool zend;             /* the last gzip member ended and the file has no more */
  bool member_end;       /* a gzip member just ended: what follows must be another or EOF */
  bool file_eof;         /* read() returned 0 */
  z_stream zs;
  unsigned char *in;     /* input buffer (compressed bytes, or raw bytes not yet handed out) */
  size_t in_cap, in_pos, in_len;
  uint64_t file_off;     /* bytes read from the file so far */
  uint64_t off;          /* bytes handed out so far (uncompressed) */
  int64_t file_size;     /* from fstat for a regular file, else -1 */
} pd_rstream;

/* Open path. PD_ENOTFOUND when it does not exist (the message names it), PD_EIO when it cannot
 * be opened or read, PD_ENOMEM. On failure nothing is left open. */
pd_status pd_rstream_open(pd_rstream *s, const char *path, pd_error *err);
/* Read up to n bytes into buf; *got < n only at the end of the data. PD_EFORMAT for a corrupt
 * or truncated gzip stream (message with the compressed offset), PD_EIO, PD_ENOMEM. */
pd_status pd_rstream_read(pd_rstream *s, void *buf, size_t n, size_t *got, pd_error *err);
/* PD_OK when the data ends here (for gzip this also checks the CRC); PD_EFORMAT with a message
 * "PATH: unexpected data after byte N (WHAT)" otherwise. */
pd_status pd_rstream_expect_end(pd_rstream *s, const char *what, pd_error *err);
/* The most uncompressed bytes the rest of the file can hold (from the file size; deflate
 * expands at most 1032 times), or UINT64_MAX when unknown: loaders refuse headers that announce
 * more before allocating. */
uint64_t pd_rstream_max_remaining(const pd_rstream *s);
/* " (uncompressed)" for a gzip stream, "" otherwise: appended to offsets in messages. */
const char *pd_rstream_offkind(const pd_rstream *s);
void pd_rstream_close(pd_rstream *s);

/* Read a whole file (gzipped or not) into a NUL-terminated heap buffer (pd_free). */
pd_status pd_reader_read_all(const char *path, char **out, size_t *len, pd_error *err);

/* SplitMix64's next value from state *s, and a draw uniform in [0, k) (k >= 1, without modulo
 * bias: values below (2^64 - k) % k are drawn again), as the batcher shuffles with them
 * (reader_batch.c); the image augmentations draw from them too (reader_image.c). */
uint64_t pd_reader_splitmix64(uint64_t *s);
uint64_t pd_reader_uniform(uint64_t *s, uint64_t k);

/* The permutation of 0..n-1 of (seed, epoch) that the batcher shuffles by (pd_batcher_start_epoch
 * gives the recipe), into perm[0..n) (reader_batch.c). */
void pd_reader_perm(int64_t *perm, int64_t n, uint64_t seed, int epoch);

/* reader_categories.c: the ids of the n values (s[i], len[i] bytes, on line lines[i] of path)
 * of the categorical column `name`; the column's categories are defined from them when c does
 * not have it yet. *k: how many categories the column has. A value not among them is
 * PD_EFORMAT naming the line, the column and its first categories. */
struct pd_categories;
pd_status pd_categories_map(struct pd_categories *c, const char *name, const char *path, int64_t n,
                            const char *const *s, const size_t *len, const int *lines,
                            int64_t *ids, int64_t *k, pd_error *err);

#endif /* PD_READER_INT_H */
