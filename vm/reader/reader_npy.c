/* reader_npy.c -- NumPy .npy files (format 1.0, 2.0, 3.0; C order; a few little-endian
 * dtypes) into a dataset field, with an optional second file of labels. */
#include "config.h"
#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pd_loc nowhere = {0};

#define NPY_MAX_HEADER ((uint32_t)1 << 24)

typedef struct npy_dtype {
  const char *code;   /* without the byte-order character */
  pd_dtype dtype;
  int size;
} npy_dtype;

static const npy_dtype npy_dtypes[] = {
    {"f4", PD_FP32, 4},  {"f8", PD_FP64, 8}, {"i4", PD_INT32, 4}, {"i8", PD_INT64, 8},
    {"u1", PD_UINT8, 1}, {"i1", PD_INT8, 1}, {"b1", PD_BOOL, 1}, {"f2", PD_FP16, 2},
};

#define SUPPORTED "<f4, <f8, <f2, <i4, <i8, |u1, |i1, |b1"

typedef struct npy_header {
  pd_dtype dtype;
  int size;           /* bytes per element */
  int rank;
  int64_t dims[PD_TENSOR_MAX_DIMS];
  uint64_t data_bytes;
  uint64_t data_off;  /* where the data starts in the file */
} npy_header;

/* ---- A parser for the header, a Python dict literal such as
 *      {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }  ---- */
typedef struct hparse {
  const char *p, *end;
} hparse;

static void skip_ws(hparse *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static bool eat(hparse *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted string ('...' or "...", no escapes) into out (cap bytes, cut to fit). */
static bool parse_str(hparse *h, char *out, size_t cap) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return false;
  char q = *h->p++;
  size_t n = 0;
  while (h->p < h->end && *h->p != q) {
    if (*h->p == '\\') return false;
    if (n + 1 < cap) out[n++] = *h->p;
    h->p++;
  }
  if (h->p >= h->end) return false;
  h->p++;
  out[n] = '\0';
  return true;
}

static bool parse_word(hparse *h, const char *w) {
  skip_ws(h);
  size_t n = strlen(w);
  if ((size_t)(h->end - h->p) >= n && memcmp(h->p, w, n) == 0) {
    h->p += n;
    return true;
  }
  return false;
}

/* A tuple of non-negative integers: (), (3,), (3, 4). -1: malformed, -2: too many dims. */
static int parse_shape(hparse *h, int64_t *dims, int maxdims) {
  if (!eat(h, '(')) return -1;
  int n = 0;
  if (eat(h, ')')) return 0;
  for (;;) {
    skip_ws(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return -1;
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
      if (v > (INT64_MAX - 9) / 10) return -1;
      v = v * 10 + (*h->p++ - '0');
    }
    if (h->p < h->end && *h->p == 'L') h->p++;   /* Python 2 longs */
    if (n >= maxdims) return -2;
    dims[n++] = v;
    bool comma = eat(h, ',');
    if (eat(h, ')')) return n;
    if (!comma) return -1;
  }
}

static pd_status malformed(const char *path, const char *why, pd_error *err) {
  return pd_error_set(err, PD_EFORMAT, nowhere, "%s: malformed .npy header: %s", path, why);
}

static pd_status parse_dict(const char *path, const char *text, size_t len, npy_header *nh,
                            pd_error *err) {
  hparse h = {text, text + len};
  char descr[32] = "";
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  if (!eat(&h, '{')) return malformed(path, "it does not start with '{'", err);
  while (!eat(&h, '}')) {
    char key[32];
    if (!parse_str(&h, key, sizeof key)) return malformed(path, "expected a quoted key", err);
    if (!eat(&h, ':')) return malformed(path, "expected ':' after a key", err);
    if (strcmp(key, "descr") == 0 && !have_descr) {
      skip_ws(&h);
      if (h.p < h.end && (*h.p == '[' || *h.p == '{'))
        return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                            "%s: structured (record) dtypes are not supported; expected one of "
                            SUPPORTED,
                            path);
      if (!parse_str(&h, descr, sizeof descr))
        return malformed(path, "'descr' is not a string", err);
      have_descr = true;
    } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
      if (parse_word(&h, "True")) fortran = true;
      else if (!parse_word(&h, "False"))
        return malformed(path, "'fortran_order' is neither True nor False", err);
      have_order = true;
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      int r = parse_shape(&h, nh->dims, PD_TENSOR_MAX_DIMS);
      if (r == -2)
        return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                            "%s: arrays of rank > %d are not supported", path, PD_TENSOR_MAX_DIMS);
      if (r < 0) return malformed(path, "'shape' is not a tuple of integers", err);
      nh->rank = r;
      have_shape = true;
    } else {
      char m[96];
      snprintf(m, sizeof m, "unexpected or repeated key '%s'", key);
      return malformed(path, m, err);
    }
    if (!eat(&h, ',')) {
      if (!eat(&h, '}')) return malformed(path, "expected ',' or '}'", err);
      break;
    }
  }
  skip_ws(&h);
  if (h.p != h.end) return malformed(path, "text after the closing '}'", err);
  if (!have_descr || !have_order || !have_shape)
    return malformed(path,
                     !have_descr ? "no 'descr' key"
                     : !have_order ? "no 'fortran_order' key"
                                   : "no 'shape' key",
                     err);
  if (fortran)
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                        "%s: fortran_order is True; only C-order arrays are supported (save "
                        "np.ascontiguousarray(a))",
                        path);
  /* descr: byte order + code. */
  char order = descr[0];
  const char *code = descr[0] ? descr + 1 : descr;
  const npy_dtype *t = NULL;
  for (size_t i = 0; i < PD_ARRAY_LEN(npy_dtypes); i++)
    if (strcmp(code, npy_dtypes[i].code) == 0) t = &npy_dtypes[i];
  bool order_ok = t && (order == '<' || order == '=' || (t->size == 1 && order == '|') ||
                        (t->size == 1 && order == '>'));
  if (!t || !order_ok)
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                        "%s: dtype '%s' is not supported%s; expected one of " SUPPORTED, path,
                        descr, t && order == '>' ? " (big-endian)" : "");
  nh->dtype = t->dtype;
  nh->size = t->size;
  return PD_OK;
}

/* Read the magic, version and header of an open .npy; check the shape and the file size. */
static pd_status read_header(pd_rstream *s, npy_header *nh, pd_error *err) {
  unsigned char m[12];
  size_t got;
  pd_status st = pd_rstream_read(s, m, 10, &got, err);
  if (st) return st;
  if (got == 0)
    return pd_error_set(err, PD_EFORMAT, nowhere, "%s: empty file, expected a .npy header",
                        s->path);
  if (got >= 2 && m[0] == 'P' && m[1] == 'K')
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                        "%s: a zip archive (.npz?) is not a .npy file; save the arrays with "
                        "np.save, one per file",
                        s->path);
  if (got < 6 && memcmp(m, "\x93NUMPY", got) == 0)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: truncated: the file ends at byte %zu, inside the .npy magic",
                        s->path, got);
  if (got < 6 || memcmp(m, "\x93NUMPY", 6) != 0)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: not a .npy file: it does not start with \"\\x93NUMPY\"", s->path);
  if (got < 10)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: truncated: the file ends at byte %zu, inside the .npy preamble",
                        s->path, got);
  uint32_t hlen;
  uint64_t pre;
  if (m[6] == 1) {
    hlen = (uint32_t)m[8] | (uint32_t)m[9] << 8;
    pre = 10;
  } else if (m[6] == 2 || m[6] == 3) {
    st = pd_rstream_read(s, m + 10, 2, &got, err);
    if (st) return st;
    if (got < 2)
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: truncated: the file ends at byte %zu, inside the .npy preamble",
                          s->path, 10 + got);
    hlen = (uint32_t)m[8] | (uint32_t)m[9] << 8 | (uint32_t)m[10] << 16 | (uint32_t)m[11] << 24;
    pre = 12;
  } else {
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                        "%s: .npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)",
                        s->path, m[6], m[7]);
  }
  if (hlen > NPY_MAX_HEADER)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: malformed .npy header: it claims %lu bytes", s->path,
                        (unsigned long)hlen);
  char *text = pd_malloc((size_t)hlen + 1);
  if (!text) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory reading '%s'", s->path);
  st = pd_rstream_read(s, text, hlen, &got, err);
  if (!st && got < hlen)
    st = pd_error_set(err, PD_EFORMAT, nowhere,
                      "%s: truncated: the file ends at byte %llu, inside the %lu-byte header",
                      s->path, (unsigned long long)(pre + got), (unsigned long)hlen);
  if (!st) st = parse_dict(s->path, text, hlen, nh, err);
  pd_free(text);
  if (st) return st;
  nh->data_off = pre + hlen;
  if (nh->rank == 0)
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                        "%s: a 0-d array (shape ()) has no samples; expected shape (N, ...)",
                        s->path);
  if (nh->dims[0] == 0)
    return pd_error_set(err, PD_EFORMAT, nowhere, "%s: the array has no samples (shape (0, ...))",
                        s->path);
  uint64_t bytes = (uint64_t)nh->size;
  for (int k = 0; k < nh->rank; k++) {
    if (k > 0 && nh->dims[k] == 0)
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: dim %d of the shape is 0; the samples would be empty", s->path, k);
    if ((uint64_t)nh->dims[k] > (uint64_t)INT64_MAX / bytes)
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: the shape overflows (more than 2^63 bytes of data)", s->path);
    bytes *= (uint64_t)nh->dims[k];
  }
  nh->data_bytes = bytes;
  uint64_t room = pd_rstream_max_remaining(s);
  if (bytes > room) {
    if (s->gz)
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: the header announces %llu bytes of data, more than the %lld-byte "
                          "gzip file can hold",
                          s->path, (unsigned long long)bytes, (long long)s->file_size);
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: truncated: the header announces %llu bytes of data after the "
                        "%llu-byte header but the file ends at byte %llu",
                        s->path, (unsigned long long)bytes, (unsigned long long)nh->data_off,
                        (unsigned long long)(nh->data_off + room));
  }
  return PD_OK;
}

static pd_status read_data(pd_rstream *s, const npy_header *nh, void *dst, pd_error *err) {
  size_t got;
  pd_status st = pd_rstream_read(s, dst, (size_t)nh->data_bytes, &got, err);
  if (st) return st;
  if (got < nh->data_bytes)
    return pd_error_set(err, PD_EFORMAT, nowhere,
                        "%s: truncated: the data ends at byte %llu%s, but the header announces "
                        "%llu bytes after the %llu-byte header",
                        s->path, (unsigned long long)(nh->data_off + got), pd_rstream_offkind(s),
                        (unsigned long long)nh->data_bytes, (unsigned long long)nh->data_off);
  if (nh->dtype == PD_BOOL) {
    const unsigned char *b = dst;
    for (size_t i = 0; i < got; i++)
      if (b[i] > 1)
        return pd_error_set(err, PD_EFORMAT, nowhere,
                            "%s: byte %llu%s holds %d, but a bool is 0 or 1", s->path,
                            (unsigned long long)(nh->data_off + i), pd_rstream_offkind(s), b[i]);
  }
  return pd_rstream_expect_end(s, "the .npy header announces no more", err);
}

/* Add the array in `path` to d (created here from the first file) as field `name`. */
static pd_status load_one(const char *path, const char *name, const char *first_path,
                          pd_dataset **d, pd_error *err) {
  pd_rstream s;
  npy_header nh;
  pd_status st = pd_rstream_open(&s, path, err);
  if (st) return st;
  st = read_header(&s, &nh, err);
  if (!st && *d && nh.dims[0] != pd_dataset_size(*d))
    st = pd_error_set(err, PD_EFORMAT, nowhere,
                      "%s holds %lld samples but %s holds %lld; they must agree", first_path,
                      (long long)pd_dataset_size(*d), path, (long long)nh.dims[0]);
  if (!st && !*d) st = pd_dataset_new(nh.dims[0], d, err);
  void *data = NULL;
  int64_t one = 1;
  if (!st)
    st = nh.rank == 1 ? pd_dataset_add_field(*d, name, nh.dtype, 1, &one, &data, err)
                      : pd_dataset_add_field(*d, name, nh.dtype, nh.rank - 1, nh.dims + 1, &data,
                                             err);
  if (!st) st = read_data(&s, &nh, data, err);
  pd_rstream_close(&s);
  return st;
}

pd_status pd_npy_header(const char *path, pd_dtype *dtype, int *rank, int64_t *dims,
                        pd_error *err) {
  pd_rstream s;
  npy_header nh;
  pd_status st = pd_rstream_open(&s, path, err);
  if (st) return st;
  st = read_header(&s, &nh, err);
  pd_rstream_close(&s);
  if (st) return st;
  *dtype = nh.dtype;
  *rank = nh.rank;
  memcpy(dims, nh.dims, sizeof *dims * (size_t)nh.rank);
  return PD_OK;
}

pd_status pd_dataset_npy(const char *path, const char *label_path, pd_dataset **out,
                         pd_error *err) {
  *out = NULL;
  if (!path) return pd_error_set(err, PD_EINVAL, nowhere, "pd_dataset_npy needs a path");
  const uint16_t probe = 1;
  if (*(const unsigned char *)&probe != 1)
    return pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                        "%s: reading .npy files needs a little-endian machine", path);
  pd_dataset *d = NULL;
  pd_status st = load_one(path, "x", path, &d, err);
  if (!st && label_path) st = load_one(label_path, "label", path, &d, err);
  if (st) {
    pd_dataset_free(d);
    return st;
  }
  *out = d;
  return PD_OK;
}
