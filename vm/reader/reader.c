/* reader.c -- the in-memory dataset behind vm/reader/reader.h (named fields of N samples each, of a
 * fixed shape or ragged sequences) and the byte stream the loaders read files through (plain or
 * gzip, zlib on the pd_malloc hook). */
#include "config.h"
#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Datasets ---- */

typedef struct dataset_field {
  char name[PD_DATASET_NAME_MAX + 1];
  pd_dtype dtype;
  pd_dtype stored;    /* what data holds: dtype, or PD_UINT8 for a unit-bytes field */
  int ndims;
  int64_t dims[PD_TENSOR_MAX_DIMS];
  void *data;         /* n samples (a sequence field: all their rows), owned */
  int64_t *offsets;   /* a sequence field: n + 1 row offsets, owned; else NULL */
} dataset_field;

struct pd_dataset {
  int64_t n;
  int nfields;
  dataset_field f[PD_DATASET_MAX_FIELDS];
};

static const pd_loc nowhere = {0};

pd_status pd_dataset_new(int64_t n, pd_dataset **out, pd_error *err) {
  *out = NULL;
  if (n < 1)
    return pd_error_set(err, PD_EINVAL, nowhere, "a dataset needs at least one sample, not %lld",
                        (long long)n);
  pd_dataset *d = pd_calloc(1, sizeof *d);
  if (!d) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  d->n = n;
  *out = d;
  return PD_OK;
}

/* The checks common to both kinds of field; *bytes = the bytes of one sample (of one row for a
 * sequence field). */
static pd_status check_field(const pd_dataset *d, const char *name, pd_dtype dtype, int ndims,
                             const int64_t *dims, uint64_t *bytes, pd_error *err) {
  size_t len = name ? strlen(name) : 0;
  if (len < 1 || len > PD_DATASET_NAME_MAX)
    return pd_error_set(err, PD_EINVAL, nowhere, "a field name has 1 to %d bytes, not %zu",
                        PD_DATASET_NAME_MAX, len);
  if (d->nfields >= PD_DATASET_MAX_FIELDS)
    return pd_error_set(err, PD_EINVAL, nowhere, "a dataset has at most %d fields",
                        PD_DATASET_MAX_FIELDS);
  if (pd_dataset_field_index(d, name) >= 0)
    return pd_error_set(err, PD_EINVAL, nowhere, "the dataset already has a field '%s'", name);
  if (!pd_dtype_valid((int)dtype))
    return pd_error_set(err, PD_EINVAL, nowhere, "field '%s': %d is not a dtype", name, (int)dtype);
  if (ndims < 0 || ndims > PD_TENSOR_MAX_DIMS - 1)
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "field '%s': a sample has rank 0 to %d, not %d", name,
                        PD_TENSOR_MAX_DIMS - 1, ndims);
  uint64_t b = pd_dtype_size(dtype);
  for (int k = 0; k < ndims; k++) {
    if (dims[k] < 1)
      return pd_error_set(err, PD_EINVAL, nowhere, "field '%s': dim %d is %lld, not >= 1", name,
                          k, (long long)dims[k]);
    if ((uint64_t)dims[k] > (uint64_t)INT64_MAX / b)
      return pd_error_set(err, PD_EINVAL, nowhere, "field '%s': the sample size overflows", name);
    b *= (uint64_t)dims[k];
  }
  *bytes = b;
  return PD_OK;
}

static void put_field(pd_dataset *d, const char *name, pd_dtype dtype, int ndims,
                      const int64_t *dims, void *data, int64_t *offsets) {
  dataset_field *f = &d->f[d->nfields++];
  memcpy(f->name, name, strlen(name) + 1);
  f->dtype = f->stored = dtype;
  f->ndims = ndims;
  for (int k = 0; k < ndims; k++) f->dims[k] = dims[k];
  f->data = data;
  f->offsets = offsets;
}

/* A fixed-shape field of `dtype` whose samples are held as `stored`. */
static pd_status add_fixed(pd_dataset *d, const char *name, pd_dtype dtype, pd_dtype stored,
                           int ndims, const int64_t *dims, void **data, pd_error *err) {
  *data = NULL;
  uint64_t bytes;
  pd_status st = check_field(d, name, stored, ndims, dims, &bytes, err);
  if (st) return st;
  if (bytes > SIZE_MAX / (uint64_t)d->n || bytes * (uint64_t)d->n > (uint64_t)INT64_MAX)
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "field '%s': %lld samples of %llu bytes overflow the address space",
                        name, (long long)d->n, (unsigned long long)bytes);
  void *p = pd_calloc((size_t)d->n, (size_t)bytes);
  if (!p)
    return pd_error_set(err, PD_ENOMEM, nowhere,
                        "out of memory for field '%s' (%lld samples of %llu bytes)", name,
                        (long long)d->n, (unsigned long long)bytes);
  put_field(d, name, dtype, ndims, dims, p, NULL);
  d->f[d->nfields - 1].stored = stored;
  *data = p;
  return PD_OK;
}

pd_status pd_dataset_add_field(pd_dataset *d, const char *name, pd_dtype dtype, int ndims,
                               const int64_t *dims, void **data, pd_error *err) {
  return add_fixed(d, name, dtype, dtype, ndims, dims, data, err);
}

pd_status pd_dataset_add_unit_bytes_field(pd_dataset *d, const char *name, int ndims,
                                          const int64_t *dims, void **data, pd_error *err) {
  return add_fixed(d, name, PD_FP32, PD_UINT8, ndims, dims, data, err);
}

pd_status pd_dataset_add_seq_field(pd_dataset *d, const char *name, pd_dtype dtype, int ndims,
                                   const int64_t *dims, const int64_t *lengths, void **data,
                                   pd_error *err) {
  *data = NULL;
  uint64_t bytes;
  pd_status st = check_field(d, name, dtype, ndims, dims, &bytes, err);
  if (st) return st;
  if (!lengths)
    return pd_error_set(err, PD_EINVAL, nowhere, "field '%s': a sequence field needs lengths",
                        name);
  uint64_t rows = 0;
  for (int64_t i = 0; i < d->n; i++) {
    if (lengths[i] < 0)
      return pd_error_set(err, PD_EINVAL, nowhere,
                          "field '%s': sample %lld has length %lld, not >= 0", name, (long long)i,
                          (long long)lengths[i]);
    if ((uint64_t)lengths[i] > (uint64_t)INT64_MAX - rows)
      return pd_error_set(err, PD_EINVAL, nowhere, "field '%s': the total length overflows",
                          name);
    rows += (uint64_t)lengths[i];
  }
  if ((uint64_t)d->n + 1 > SIZE_MAX / sizeof(int64_t) ||
      (rows && (bytes > SIZE_MAX / rows || bytes * rows > (uint64_t)INT64_MAX)))
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "field '%s': %llu rows of %llu bytes overflow the address space", name,
                        (unsigned long long)rows, (unsigned long long)bytes);
  int64_t *off = pd_malloc(((size_t)d->n + 1) * sizeof *off);
  void *p = pd_calloc(rows ? (size_t)rows : 1, (size_t)bytes);
  if (!off || !p) {
    pd_free(off);
    pd_free(p);
    return pd_error_set(err, PD_ENOMEM, nowhere,
                        "out of memory for field '%s' (%lld samples, %llu rows of %llu bytes)",
                        name, (long long)d->n, (unsigned long long)rows,
                        (unsigned long long)bytes);
  }
  off[0] = 0;
  for (int64_t i = 0; i < d->n; i++) off[i + 1] = off[i] + lengths[i];
  put_field(d, name, dtype, ndims, dims, p, off);
  *data = p;
  return PD_OK;
}

int64_t pd_dataset_size(const pd_dataset *d) { return d->n; }
int pd_dataset_nfields(const pd_dataset *d) { return d->nfields; }

static const dataset_field *field_at(const pd_dataset *d, int i) {
  return i >= 0 && i < d->nfields ? &d->f[i] : NULL;
}

const char *pd_dataset_field_name(const pd_dataset *d, int i) {
  const dataset_field *f = field_at(d, i);
  return f ? f->name : NULL;
}

int pd_dataset_field_index(const pd_dataset *d, const char *name) {
  for (int i = 0; name && i < d->nfields; i++)
    if (strcmp(d->f[i].name, name) == 0) return i;
  return -1;
}

pd_dtype pd_dataset_field_dtype(const pd_dataset *d, int i) {
  const dataset_field *f = field_at(d, i);
  return f ? f->dtype : PD_FP32;
}

int pd_dataset_field_shape(const pd_dataset *d, int i, int64_t *dims) {
  const dataset_field *f = field_at(d, i);
  if (!f) return -1;
  for (int k = 0; k < f->ndims; k++) dims[k] = f->dims[k];
  return f->ndims;
}

pd_dtype pd_dataset_field_stored_dtype(const pd_dataset *d, int i) {
  const dataset_field *f = field_at(d, i);
  return f ? f->stored : PD_FP32;
}

int64_t pd_dataset_field_stored_bytes(const pd_dataset *d, int i) {
  const dataset_field *f = field_at(d, i);
  if (!f) return -1;
  int64_t b = (int64_t)pd_dtype_size(f->stored) * (f->offsets ? f->offsets[d->n] : d->n);
  for (int k = 0; k < f->ndims; k++) b *= f->dims[k];   /* fits: the storage was allocated */
  return b;
}

const void *pd_dataset_field_data(const pd_dataset *d, int i) {
  const dataset_field *f = field_at(d, i);
  return f ? f->data : NULL;
}

bool pd_dataset_field_is_seq(const pd_dataset *d, int i) {
  const dataset_field *f = field_at(d, i);
  return f && f->offsets;
}

const int64_t *pd_dataset_field_offsets(const pd_dataset *d, int i) {
  const dataset_field *f = field_at(d, i);
  return f ? f->offsets : NULL;
}

void pd_dataset_free(pd_dataset *d) {
  if (!d) return;
  for (int i = 0; i < d->nfields; i++) {
    pd_free(d->f[i].data);
    pd_free(d->f[i].offsets);
  }
  pd_free(d);
}

/* ---- Byte streams ---- */

#define IN_CAP ((size_t)1 << 20)
#define READ_MAX ((size_t)1 << 30)   /* one read()/inflate() call at most */

static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  (void)opaque;
  if (size && items > SIZE_MAX / size) return Z_NULL;
  return pd_malloc((size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p) {
  (void)opaque;
  pd_free(p);
}

/* Refill the input buffer from the file; 0 bytes at the end of the file. */
static pd_status fill(pd_rstream *s, pd_error *err) {
  s->in_pos = s->in_len = 0;
  if (s->file_eof) return PD_OK;
  ssize_t r;
  do r = read(s->fd, s->in, s->in_cap);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return pd_error_set(err, PD_EIO, nowhere, "cannot read '%s': %s", s->path, strerror(errno));
  if (r == 0) s->file_eof = true;
  s->in_len = (size_t)r;
  s->file_off += (uint64_t)r;
  return PD_OK;
}

pd_status pd_rstream_open(pd_rstream *s, const char *path, pd_error *err) {
  memset(s, 0, sizeof *s);
  s->path = path;
  s->file_size = -1;
  s->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (s->fd < 0) {
    int e = errno;
    return pd_error_set(err, e == ENOENT ? PD_ENOTFOUND : PD_EIO, nowhere, "cannot open '%s': %s",
                        path, strerror(e));
  }
  struct stat st;
  if (fstat(s->fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      pd_rstream_close(s);
      return pd_error_set(err, PD_EIO, nowhere, "cannot read '%s': it is a directory", path);
    }
    if (S_ISREG(st.st_mode)) s->file_size = (int64_t)st.st_size;
  }
  s->in_cap = IN_CAP;
  if (s->file_size >= 0 && (uint64_t)s->file_size < IN_CAP)
    s->in_cap = (size_t)s->file_size + 1;   /* small files: a small buffer (+1 sees the end) */
  s->in = pd_malloc(s->in_cap);
  pd_status st2 = PD_OK;
  if (!s->in) st2 = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", path);
  if (!st2) st2 = fill(s, err);
  if (!st2 && s->in_len >= 2 && s->in[0] == 0x1f && s->in[1] == 0x8b) {
    s->gz = true;
    s->zs.zalloc = z_alloc;
    s->zs.zfree = z_free;
    s->zs.opaque = Z_NULL;
    s->zs.next_in = s->in;
    s->zs.avail_in = (uInt)s->in_len;
    int zr = inflateInit2(&s->zs, 16 + MAX_WBITS);
    if (zr == Z_OK) s->zinit = true;
    else if (zr == Z_MEM_ERROR)
      st2 = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", path);
    else
      st2 = pd_error_set(err, PD_EIO, nowhere, "cannot read '%s': zlib error %d", path, zr);
  }
  if (st2) pd_rstream_close(s);
  return st2;
}

static pd_status read_raw(pd_rstream *s, unsigned char *buf, size_t n, size_t *got,
                          pd_error *err) {
  size_t done = 0;
  while (done < n) {
    if (s->in_pos < s->in_len) {
      size_t k = s->in_len - s->in_pos;
      if (k > n - done) k = n - done;
      memcpy(buf + done, s->in + s->in_pos, k);
      s->in_pos += k;
      done += k;
      continue;
    }
    if (s->file_eof) break;
    if (n - done >= s->in_cap) {   /* big reads go straight to the caller's buffer */
      size_t want = n - done > READ_MAX ? READ_MAX : n - done;
      ssize_t r;
      do r = read(s->fd, buf + done, want);
      while (r < 0 && errno == EINTR);
      if (r < 0)
        return pd_error_set(err, PD_EIO, nowhere, "cannot read '%s': %s", s->path,
                            strerror(errno));
      if (r == 0) s->file_eof = true;
      s->file_off += (uint64_t)r;
      done += (size_t)r;
    } else {
      pd_status st = fill(s, err);
      if (st) return st;
    }
  }
  *got = done;
  s->off += done;
  return PD_OK;
}

static uint64_t compressed_off(const pd_rstream *s) { return s->file_off - s->zs.avail_in; }

static pd_status read_gz(pd_rstream *s, unsigned char *buf, size_t n, size_t *got,
                         pd_error *err) {
  size_t done = 0;
  while (done < n && !s->zend) {
    if (s->zs.avail_in == 0) {
      pd_status st = fill(s, err);
      if (st) return st;
      s->zs.next_in = s->in;
      s->zs.avail_in = (uInt)s->in_len;
      if (s->in_len == 0) {
        if (s->member_end) {   /* the file ends cleanly after a member */
          s->zend = true;
          break;
        }
        return pd_error_set(err, PD_EFORMAT, nowhere,
                            "%s: truncated gzip stream: the file ends at byte %llu, inside the "
                            "compressed data (%llu bytes decompressed so far)",
                            s->path, (unsigned long long)s->file_off,
                            (unsigned long long)(s->off + done));
      }
    }
    size_t want = n - done > READ_MAX ? READ_MAX : n - done;
    s->zs.next_out = buf + done;
    s->zs.avail_out = (uInt)want;
    int zr = inflate(&s->zs, Z_NO_FLUSH);
    size_t made = want - s->zs.avail_out;
    done += made;
    if (made) s->member_end = false;
    if (zr == Z_STREAM_END) {
      /* Another gzip member may follow (as gzip -c a b > c writes); check for it. */
      if (inflateReset(&s->zs) != Z_OK)
        return pd_error_set(err, PD_EIO, nowhere, "cannot read '%s': zlib reset failed", s->path);
      s->member_end = true;
      continue;
    }
    if (zr == Z_OK || (zr == Z_BUF_ERROR && s->zs.avail_in == 0)) continue;
    if (zr == Z_MEM_ERROR)
      return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", s->path);
    if (s->member_end)
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: unexpected data after the end of the gzip stream at byte %llu",
                          s->path, (unsigned long long)compressed_off(s));
    return pd_error_set(err, PD_EFORMAT, nowhere, "%s: corrupt gzip stream near byte %llu: %s",
                        s->path, (unsigned long long)compressed_off(s),
                        s->zs.msg ? s->zs.msg : "invalid data");
  }
  *got = done;
  s->off += done;
  return PD_OK;
}

pd_status pd_rstream_read(pd_rstream *s, void *buf, size_t n, size_t *got, pd_error *err) {
  *got = 0;
  return s->gz ? read_gz(s, buf, n, got, err) : read_raw(s, buf, n, got, err);
}

pd_status pd_rstream_expect_end(pd_rstream *s, const char *what, pd_error *err) {
  unsigned char c;
  size_t got;
  pd_status st = pd_rstream_read(s, &c, 1, &got, err);
  if (st) return st;
  if (got)
    return pd_error_set(err, PD_EFORMAT, nowhere, "%s: unexpected data after byte %llu%s; %s",
                        s->path, (unsigned long long)(s->off - 1), pd_rstream_offkind(s), what);
  return PD_OK;
}

uint64_t pd_rstream_max_remaining(const pd_rstream *s) {
  if (s->file_size < 0) return UINT64_MAX;
  uint64_t left = (uint64_t)s->file_size > s->file_off ? (uint64_t)s->file_size - s->file_off : 0;
  if (!s->gz) return left + (s->in_len - s->in_pos);
  left += s->zs.avail_in;
  if (left > (UINT64_MAX - 65536) / 1032) return UINT64_MAX;
  return left * 1032 + 65536;
}

const char *pd_rstream_offkind(const pd_rstream *s) { return s->gz ? " (uncompressed)" : ""; }

void pd_rstream_close(pd_rstream *s) {
  if (s->zinit) inflateEnd(&s->zs);
  s->zinit = false;
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  pd_free(s->in);
  s->in = NULL;
}

pd_status pd_reader_read_all(const char *path, char **out, size_t *len, pd_error *err) {
  *out = NULL;
  *len = 0;
  pd_rstream s;
  pd_status st = pd_rstream_open(&s, path, err);
  if (st) return st;
  /* The file, its NUL, and a spare byte so that the read meeting the end needs no growth. */
  size_t cap = s.gz ? 4 * s.in_cap : s.file_size >= 0 ? (size_t)s.file_size + 2 : 65536;
  if (cap < 64) cap = 64;
  char *buf = pd_malloc(cap);
  size_t n = 0;
  if (!buf) st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", path);
  while (!st) {
    if (cap - n < 2) {
      if (cap > SIZE_MAX / 2) {
        st = pd_error_set(err, PD_ENOMEM, nowhere, "'%s' is too large", path);
        break;
      }
      char *nb = pd_realloc(buf, cap * 2);
      if (!nb) {
        st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", path);
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got;
    st = pd_rstream_read(&s, buf + n, cap - n - 1, &got, err);
    if (st || got == 0) break;
    n += got;
  }
  pd_rstream_close(&s);
  if (st) {
    pd_free(buf);
    return st;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return PD_OK;
}
