/* reader_idx.c -- IDX files (the MNIST format: big-endian header, unsigned bytes), gzipped or
 * not, into a dataset of "images" (fp32 scaled to [0, 1], held as the bytes: a unit-bytes field,
 * converted per batch) and "label" (int64); and the MNIST / Fashion-MNIST file layout with its
 * directory defaults. */
#include "config.h"
#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const pd_loc nowhere = {0};

#define IDX_MAX_RANK 16
#define CHUNK ((size_t)1 << 20)

typedef struct idx_header {
  int rank;
  uint64_t dims[IDX_MAX_RANK];
  uint64_t sample;       /* elements (bytes) per sample: the product of dims[1..] */
  uint64_t data_bytes;   /* dims[0] * sample */
  uint64_t header_bytes; /* 4 + 4 * rank */
} idx_header;

static const char *idx_type_name(int t) {
  switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
  }
}

/* "60000 x 28 x 28" */
static void dims_text(const idx_header *h, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; k < h->rank && n < cap; k++)
    n += (size_t)snprintf(out + n, cap - n, "%s%llu", k ? " x " : "",
                          (unsigned long long)h->dims[k]);
}

/* Read and check the header of an IDX file of unsigned bytes; rank in [min_rank, max_rank].
 * `what` names the contents in messages ("images", "labels"). */
static pd_status read_header(pd_rstream *s, int min_rank, int max_rank, const char *what,
                             idx_header *h, pd_error *err) {
  unsigned char m[4];
  size_t got;
  pd_status st = pd_rstream_read(s, m, 4, &got, err);
  if (st) return st;
  if (got == 0)
    return pd_error_set(err, PD_EFORMAT, nowhere, "%s: empty file, expected an IDX header (%s)",
                        s->path, what);
  if (got < 4)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: truncated: the file ends at byte %zu%s, inside the 4-byte IDX magic",
                        s->path, got, pd_rstream_offkind(s));
  if (m[0] != 0 || m[1] != 0)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: not an IDX file: it starts with bytes %02x %02x %02x %02x, expected "
                        "00 00 08 (unsigned bytes) and the rank",
                        s->path, m[0], m[1], m[2], m[3]);
  if (m[2] != 0x08)
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                        "%s: IDX data type 0x%02x (%s) is not supported; only unsigned bytes "
                        "(0x08), as in MNIST",
                        s->path, m[2], idx_type_name(m[2]));
  int rank = m[3];
  if (rank < min_rank || rank > max_rank) {
    if (min_rank == max_rank)
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: an IDX file of %s has rank %d, but this one has rank %d", s->path,
                          what, min_rank, rank);
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: an IDX file of %s has rank %d to %d, but this one has rank %d",
                        s->path, what, min_rank, max_rank, rank);
  }
  unsigned char b[4 * IDX_MAX_RANK];
  st = pd_rstream_read(s, b, 4 * (size_t)rank, &got, err);
  if (st) return st;
  if (got < 4 * (size_t)rank)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: truncated: the file ends at byte %zu%s, inside the header (%d dims "
                        "need %d bytes)",
                        s->path, 4 + got, pd_rstream_offkind(s), rank, 4 + 4 * rank);
  h->rank = rank;
  h->header_bytes = 4 + 4 * (uint64_t)rank;
  h->sample = 1;
  for (int k = 0; k < rank; k++) {
    h->dims[k] = (uint64_t)b[4 * k] << 24 | (uint64_t)b[4 * k + 1] << 16 |
                 (uint64_t)b[4 * k + 2] << 8 | b[4 * k + 3];
    if (h->dims[k] == 0)
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: the IDX header gives dim %d as 0; a dataset needs at least one "
                          "sample of at least one element",
                          s->path, k);
  }
  for (int k = 1; k < rank; k++) {
    if (h->sample > (uint64_t)INT64_MAX / h->dims[k])
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: the IDX header's dims overflow (the product of dims 1..%d is "
                          "more than 2^63)",
                          s->path, rank - 1);
    h->sample *= h->dims[k];
  }
  if (h->sample > (uint64_t)INT64_MAX / h->dims[0] / 4)   /* 4: the fp32 copy must fit too */
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: the IDX header's dims overflow (%llu samples of %llu bytes)", s->path,
                        (unsigned long long)h->dims[0], (unsigned long long)h->sample);
  h->data_bytes = h->dims[0] * h->sample;
  uint64_t room = pd_rstream_max_remaining(s);
  if (h->data_bytes > room) {
    char dt[256];
    dims_text(h, dt, sizeof dt);
    if (s->gz)
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: the header announces %s %s (%llu bytes of data), more than the "
                          "%lld-byte gzip file can hold",
                          s->path, dt, what, (unsigned long long)h->data_bytes,
                          (long long)s->file_size);
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: truncated: the header announces %s %s (%llu bytes of data after the "
                        "%llu-byte header) but the file ends at byte %llu",
                        s->path, dt, what, (unsigned long long)h->data_bytes,
                        (unsigned long long)h->header_bytes,
                        (unsigned long long)(h->header_bytes + room));
  }
  return PD_OK;
}

/* Read the data (n bytes) through a chunk buffer, calling convert on each chunk. */
typedef void (*convert_fn)(const unsigned char *src, size_t n, void *dst, size_t at);

static void to_bytes(const unsigned char *src, size_t n, void *dst, size_t at) {
  memcpy((unsigned char *)dst + at, src, n);
}

static void to_int64(const unsigned char *src, size_t n, void *dst, size_t at) {
  int64_t *out = (int64_t *)dst + at;
  for (size_t i = 0; i < n; i++) out[i] = src[i];
}

static pd_status read_data(pd_rstream *s, const idx_header *h, const char *what,
                           unsigned char *chunk, convert_fn conv, void *dst, pd_error *err) {
  uint64_t done = 0;
  while (done < h->data_bytes) {
    size_t want = h->data_bytes - done > CHUNK ? CHUNK : (size_t)(h->data_bytes - done);
    size_t got;
    pd_status st = pd_rstream_read(s, chunk, want, &got, err);
    if (st) return st;
    conv(chunk, got, dst, (size_t)done);
    done += got;
    if (got < want) {
      char dt[256];
      dims_text(h, dt, sizeof dt);
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: truncated: the data ends at byte %llu%s, but the header announces "
                          "%s %s (%llu bytes after the %llu-byte header)",
                          s->path, (unsigned long long)(h->header_bytes + done),
                          pd_rstream_offkind(s), dt, what, (unsigned long long)h->data_bytes,
                          (unsigned long long)h->header_bytes);
    }
  }
  return pd_rstream_expect_end(s, "the IDX header announces no more", err);
}

pd_status pd_dataset_idx(const char *images_path, const char *labels_path, pd_dataset **out,
                         pd_error *err) {
  *out = NULL;
  if (!images_path || !labels_path)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_dataset_idx needs two paths");
  pd_rstream si, sl;
  idx_header hi, hl;
  pd_dataset *d = NULL;
  unsigned char *chunk = NULL;
  pd_status st = pd_rstream_open(&si, images_path, err);
  if (st) return st;
  st = pd_rstream_open(&sl, labels_path, err);
  if (st) {
    pd_rstream_close(&si);
    return st;
  }
  st = read_header(&si, 1, IDX_MAX_RANK, "images", &hi, err);
  if (!st) st = read_header(&sl, 1, 1, "labels", &hl, err);
  if (!st && hi.dims[0] != hl.dims[0])
    st = pd_error_set(err, PD_EFORMAT, nowhere,
                      "%s holds %llu images but %s holds %llu labels; they must agree",
                      images_path, (unsigned long long)hi.dims[0], labels_path,
                      (unsigned long long)hl.dims[0]);
  if (!st && !(chunk = pd_malloc(CHUNK)))
    st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", images_path);
  if (!st) st = pd_dataset_new((int64_t)hi.dims[0], &d, err);
  void *images = NULL, *labels = NULL;
  int64_t sample = (int64_t)hi.sample, one = 1;
  if (!st) st = pd_dataset_add_unit_bytes_field(d, "images", 1, &sample, &images, err);
  if (!st) st = pd_dataset_add_field(d, "label", PD_INT64, 1, &one, &labels, err);
  if (!st) st = read_data(&si, &hi, "images", chunk, to_bytes, images, err);
  if (!st) st = read_data(&sl, &hl, "labels", chunk, to_int64, labels, err);
  pd_free(chunk);
  pd_rstream_close(&si);
  pd_rstream_close(&sl);
  if (st) {
    pd_dataset_free(d);
    return st;
  }
  *out = d;
  return PD_OK;
}

/* ---- MNIST and Fashion-MNIST ---- */

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* *out = dir/base.gz if it exists, else dir/base if it exists, else NULL (PD_OK either way). */
static pd_status find_file(const char *dir, const char *base, char **out, pd_error *err) {
  *out = NULL;
  pd_buf b;
  pd_buf_init(&b);
  const char *sep = dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
  pd_buf_printf(&b, "%s%s%s.gz", dir, sep, base);
  if (!b.oom && !file_exists(b.data)) {
    b.len -= 3;
    b.data[b.len] = '\0';
    if (!file_exists(b.data)) {
      pd_buf_free(&b);
      return PD_OK;
    }
  }
  if (!b.oom) *out = pd_buf_take(&b);
  pd_buf_free(&b);
  return *out ? PD_OK : pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
}

pd_status pd_dataset_mnist(const char *which, const char *split, const char *dir,
                           pd_dataset **out, pd_error *err) {
  *out = NULL;
  const char *env, *deflt, *title, *hint;
  if (which && strcmp(which, "mnist") == 0) {
    env = "PDLANG_MNIST";
    deflt = "/usr/share/datasets/mnist";
    title = "MNIST";
    hint = "";
  } else if (which &&
             (strcmp(which, "fashion_mnist") == 0 || strcmp(which, "fashion-mnist") == 0)) {
    env = "PDLANG_FASHION_MNIST";
    deflt = "/usr/share/datasets/fashion-mnist";
    title = "Fashion-MNIST";
    hint = " (Debian's package dataset-fashion-mnist installs them in " \
           "/usr/share/datasets/fashion-mnist)";
  } else {
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "unknown dataset '%s'; expected \"mnist\" or \"fashion_mnist\"",
                        which ? which : "(null)");
  }
  const char *prefix;
  if (split && strcmp(split, "train") == 0) prefix = "train";
  else if (split && (strcmp(split, "test") == 0 || strcmp(split, "t10k") == 0)) prefix = "t10k";
  else
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "unknown split '%s'; expected \"train\" or \"test\"",
                        split ? split : "(null)");
  const char *from = "given by the caller";
  if (!dir) {
    const char *e = getenv(env);
    if (e && *e) {
      dir = e;
      from = "from $";
    } else {
      dir = deflt;
      from = NULL;
    }
  }
  const char *what[2] = {"images", "labels"};
  char *paths[2] = {NULL, NULL};
  pd_status st = PD_OK;
  for (int k = 0; k < 2 && !st; k++) {
    char base[64];
    snprintf(base, sizeof base, "%s-%s-idx%d-ubyte", prefix, what[k], k ? 1 : 3);
    st = find_file(dir, base, &paths[k], err);
    if (st || paths[k]) continue;
    if (!from)
      st = pd_error_set(err, PD_ENOTFOUND, nowhere,
                        "cannot find the %s %s %s: neither %s.gz nor %s is in %s; set $%s to "
                        "the directory that holds them, or pass a directory%s",
                        title, split, what[k], base, base, dir, env, hint);
    else
      st = pd_error_set(err, PD_ENOTFOUND, nowhere,
                        "cannot find the %s %s %s: neither %s.gz nor %s is in %s (the directory "
                        "%s%s)",
                        title, split, what[k], base, base, dir, from, from[0] == 'f' ? env : "");
  }
  if (!st) st = pd_dataset_idx(paths[0], paths[1], out, err);
  pd_free(paths[0]);
  pd_free(paths[1]);
  return st;
}
