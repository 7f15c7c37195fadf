/* params.c -- tensor values on disk: Fluid's LoDTensor stream, the combined parameters file
 * (.pdiparams) and pdlang's checkpoint file. The formats are described in params.h; the stream
 * follows Paddle's paddle/fluid/framework/lod_tensor.cc (SerializeToStream) and tensor_util.cc
 * (TensorToStream). Readers parse into temporaries and install into the scope only once
 * everything has been checked. */
#include "config.h"
#include "vm/ir/params.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "vm/ir/framework.pb-c.h"
#include "vm/ir/pb_alloc.h"

typedef Paddle__Framework__Proto__VarType__TensorDesc pb_tensor_desc;

static const pd_loc nowhere = {0};

/* ================= Little-endian encoding ================= */

#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* Copy n elements of esize bytes between host order and little-endian (the same either way). */
static void copy_le(void *dst, const void *src, size_t n, size_t esize) {
  if (!HOST_BIG_ENDIAN || esize == 1) {
    if (n) memcpy(dst, src, n * esize);
    return;
  }
  const uint8_t *s = src;
  uint8_t *d = dst;
  for (size_t i = 0; i < n; i++, s += esize, d += esize)
    for (size_t k = 0; k < esize; k++) d[k] = s[esize - 1 - k];
}

static int buf_u32(pd_buf *b, uint32_t v) {
  uint8_t p[4];
  put_u32(p, v);
  return pd_buf_append(b, p, sizeof p);
}

static int buf_u64(pd_buf *b, uint64_t v) {
  uint8_t p[8];
  put_u64(p, v);
  return pd_buf_append(b, p, sizeof p);
}

/* Room for n more bytes at the end of b, counted in b->len; NULL (and b->oom) on failure. */
static uint8_t *buf_extend(pd_buf *b, size_t n) {
  if (b->oom) return NULL;
  if (n > SIZE_MAX - b->len - 1 || PD_GROW(b->data, b->cap, b->len + n + 1)) {
    b->oom = 1;
    return NULL;
  }
  uint8_t *p = (uint8_t *)b->data + b->len;
  b->len += n;
  b->data[b->len] = '\0';
  return p;
}

static uint32_t crc_of(const void *data, size_t len) {
  const Bytef *p = data;
  uLong crc = crc32(0L, Z_NULL, 0);
  while (len > 0) {
    uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
    crc = crc32(crc, p, chunk);
    p += chunk;
    len -= chunk;
  }
  return (uint32_t)crc;
}

/* ================= Small helpers ================= */


/* The message of err prefixed with "prefix: " (when prefix is not NULL) and the file named in
 * the location; the status is st. */
static pd_status relocate(pd_error *err, pd_status st, const char *path, const char *prefix) {
  if (!err) return st;
  char *msg = err->msg;
  err->msg = NULL;
  const char *m = msg ? msg : pd_status_str(st);
  pd_loc loc = {path, 0, 0};
  if (prefix)
    pd_error_set(err, st, loc, "%s: %s", prefix, m);
  else
    pd_error_set(err, st, loc, "%s", m);
  pd_free(msg);
  return st;
}

static pd_status file_fail(pd_error *err, pd_status st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pd_status file_fail(pd_error *err, pd_status st, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pd_error_setv(err, st, (pd_loc){path, 0, 0}, fmt, ap);
  va_end(ap);
  return st;
}

/* Move src's contents into dst (dst's old value released); src is left empty. Never fails. */
static void tensor_move(pd_tensor *dst, pd_tensor *src) {
  pd_tensor_release(dst);
  *dst = *src;
  pd_tensor_init(src);
}

/* ================= Reading a stream ================= */

typedef struct reader {
  const uint8_t *d;
  size_t len;   /* bytes of d that may be read */
  size_t pos;
  pd_error *err;
} reader;

static pd_status bad_at(reader *r, pd_status st, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pd_status bad_at(reader *r, pd_status st, size_t at, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return pd_error_set(r->err, st, nowhere, "byte %zu: %s", at, msg);
}

static size_t left(const reader *r) { return r->len - r->pos; }

/* PD_OK when n more bytes can be read, else a "truncated" error naming what was being read. */
static pd_status need(reader *r, size_t n, const char *what) {
  if (left(r) >= n) return PD_OK;
  return bad_at(r, PD_EFORMAT, r->pos, "truncated: %s needs %zu bytes but only %zu remain", what,
                n, left(r));
}

static pd_status nomem(reader *r) {
  return pd_error_set(r->err, PD_ENOMEM, nowhere, "out of memory reading a tensor");
}

typedef struct desc_info {
  int dtype;
  int ndims;
  int64_t dims[PD_TENSOR_MAX_DIMS];
} desc_info;

/* Decode and check the TensorDesc of size bytes at r->pos (which stays put). */
static pd_status read_desc(reader *r, size_t size, desc_info *out) {
  size_t at = r->pos;
  bool oom = false;
  ProtobufCAllocator alloc = pd_pb_allocator(&oom);
  ProtobufCMessage *m = protobuf_c_message_unpack(
      &pd_pb_var_type__tensor_desc__descriptor, &alloc, size, r->d + at);
  if (!m) {
    if (oom) return nomem(r);
    return bad_at(r, PD_EFORMAT, at, "the TensorDesc (%zu bytes) does not decode as a protobuf "
                  "VarType.TensorDesc", size);
  }
  const pb_tensor_desc *d = (const pb_tensor_desc *)m;
  pd_status st = PD_OK;
  int dt = (int)d->data_type;
  if (!pd_dtype_valid(dt)) {
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(
        &pd_pb_var_type__type__descriptor, dt);
    st = ev ? bad_at(r, PD_EUNSUPPORTED, at, "element type %s is not supported by pdlang", ev->name)
            : bad_at(r, PD_EFORMAT, at, "unknown element type %d", dt);
  } else if (d->n_dims > PD_TENSOR_MAX_DIMS) {
    st = bad_at(r, PD_EUNSUPPORTED, at, "rank %zu is above pdlang's maximum of %d", d->n_dims,
                PD_TENSOR_MAX_DIMS);
  } else {
    out->dtype = dt;
    out->ndims = (int)d->n_dims;
    for (int i = 0; i < out->ndims && !st; i++) {
      out->dims[i] = d->dims[i];
      if (d->dims[i] < 0)
        st = bad_at(r, PD_EFORMAT, at, "dim %d is negative (%" PRId64 ")", i, d->dims[i]);
    }
  }
  protobuf_c_message_free_unpacked(m, &alloc);
  return st;
}

/* The LoD of a stream, decoded: nlod levels of lens[l] offsets each. */
typedef struct lod_tmp {
  int nlod;
  int64_t **offs;
  int64_t *lens;
} lod_tmp;

static void lod_tmp_free(lod_tmp *l) {
  for (int i = 0; i < l->nlod && l->offs; i++) pd_free(l->offs[i]);
  pd_free(l->offs);
  pd_free(l->lens);
}

static pd_status read_lod(reader *r, lod_tmp *lod) {
  pd_status st = need(r, 8, "the number of LoD levels");
  if (st) return st;
  size_t at = r->pos;
  uint64_t nl = get_u64(r->d + r->pos);
  r->pos += 8;
  if (nl > left(r) / 8 || nl > INT_MAX)
    return bad_at(r, PD_EFORMAT, at,
                  "%" PRIu64 " LoD levels cannot fit in the %zu bytes left (truncated or damaged)",
                  nl, left(r));
  if (nl == 0) return PD_OK;
  lod->offs = pd_calloc((size_t)nl, sizeof *lod->offs);
  lod->lens = pd_calloc((size_t)nl, sizeof *lod->lens);
  if (!lod->offs || !lod->lens) return nomem(r);
  lod->nlod = (int)nl;
  for (int l = 0; l < lod->nlod; l++) {
    if ((st = need(r, 8, "the size of a LoD level"))) return st;
    at = r->pos;
    uint64_t size = get_u64(r->d + r->pos);
    r->pos += 8;
    if (size % 8)
      return bad_at(r, PD_EFORMAT, at,
                    "LoD level %d holds %" PRIu64 " bytes, not a whole number of 8-byte offsets",
                    l, size);
    if (size > left(r))
      return bad_at(r, PD_EFORMAT, at,
                    "truncated: LoD level %d needs %" PRIu64 " bytes but only %zu remain", l,
                    size, left(r));
    if (size == 0) return bad_at(r, PD_EFORMAT, at, "LoD level %d is empty (it needs offset 0)", l);
    size_t n = (size_t)(size / 8);
    if (!(lod->offs[l] = pd_malloc(n * sizeof(int64_t)))) return nomem(r);
    lod->lens[l] = (int64_t)n;
    for (size_t i = 0; i < n; i++, r->pos += 8) {
      uint64_t v = get_u64(r->d + r->pos);
      if (v > INT64_MAX)
        return bad_at(r, PD_EFORMAT, r->pos, "LoD level %d offset %zu is too large (%" PRIu64 ")",
                      l, i, v);
      if (i == 0 && v != 0)
        return bad_at(r, PD_EFORMAT, r->pos, "LoD level %d starts at %" PRIu64 ", not 0", l, v);
      if (i > 0 && (int64_t)v < lod->offs[l][i - 1])
        return bad_at(r, PD_EFORMAT, r->pos,
                      "LoD level %d decreases at offset %zu (%" PRIu64 " after %" PRId64 ")", l,
                      i, v, lod->offs[l][i - 1]);
      lod->offs[l][i] = (int64_t)v;
    }
  }
  return PD_OK;
}

/* Read one stream at r->pos into t (an empty tensor); r->pos moves past it. */
static pd_status read_tensor(reader *r, pd_tensor *t) {
  size_t start = r->pos;
  pd_status st = need(r, 4, "the LoD-tensor version");
  if (st) return st;
  uint32_t ver = get_u32(r->d + r->pos);
  if (ver != 0)
    return bad_at(r, PD_EFORMAT, r->pos,
                  "LoD-tensor version %" PRIu32 " is not supported (expected 0)", ver);
  r->pos += 4;
  lod_tmp lod = {0, NULL, NULL};
  if ((st = read_lod(r, &lod))) goto out;
  if ((st = need(r, 4, "the tensor version"))) goto out;
  if ((ver = get_u32(r->d + r->pos)) != 0) {
    st = bad_at(r, PD_EFORMAT, r->pos, "tensor version %" PRIu32 " is not supported (expected 0)",
                ver);
    goto out;
  }
  r->pos += 4;
  if ((st = need(r, 4, "the TensorDesc size"))) goto out;
  size_t at = r->pos;
  int32_t dsize = (int32_t)get_u32(r->d + r->pos);
  r->pos += 4;
  if (dsize < 0) {
    st = bad_at(r, PD_EFORMAT, at, "the TensorDesc size is negative (%" PRId32 ")", dsize);
    goto out;
  }
  if ((size_t)dsize > left(r)) {
    st = bad_at(r, PD_EFORMAT, at,
                "truncated: the TensorDesc needs %" PRId32 " bytes but only %zu remain", dsize,
                left(r));
    goto out;
  }
  desc_info di;
  if ((st = read_desc(r, (size_t)dsize, &di))) goto out;
  r->pos += (size_t)dsize;
  char shape[160];
  pd_dims_str(di.ndims, di.dims, shape, sizeof shape);
  size_t esize = pd_dtype_size((pd_dtype)di.dtype);
  int64_t numel = pd_k_numel(di.ndims, di.dims);
  if (numel < 0 || (uint64_t)numel > SIZE_MAX / esize) {
    st = bad_at(r, PD_EFORMAT, at + 4, "the shape %s has too many elements", shape);
    goto out;
  }
  size_t bytes = (size_t)numel * esize;
  if (bytes > left(r)) {
    st = bad_at(r, PD_EFORMAT, r->pos,
                "truncated: the data of a %s %s tensor needs %zu bytes but only %zu remain",
                pd_dtype_name((pd_dtype)di.dtype), shape, bytes, left(r));
    goto out;
  }
  t->place = PD_K_HOST;  /* a tensor being loaded is a fresh one of the reader's */
  if ((st = pd_tensor_resize(t, (pd_dtype)di.dtype, di.ndims, di.dims))) {
    st = st == PD_ENOMEM ? nomem(r) : bad_at(r, PD_EFORMAT, at + 4, "bad shape %s", shape);
    goto out;
  }
  copy_le(pd_tensor_data(t), r->d + r->pos, (size_t)numel, esize);
  r->pos += bytes;
  if (lod.nlod) {
    if ((st = pd_tensor_set_lod(t, lod.nlod, (const int64_t *const *)lod.offs, lod.lens))) {
      st = nomem(r);
      goto out;
    }
    pd_error lerr = {0};
    if ((st = pd_tensor_validate_lod(t, &lerr))) {
      st = bad_at(r, PD_EFORMAT, start + 4, "the LoD does not fit the %s tensor: %s", shape,
                  lerr.msg ? lerr.msg : pd_status_str(st));
    }
    pd_error_clear(&lerr);
  }
out:
  lod_tmp_free(&lod);
  return st;
}

pd_status pd_tensor_read_stream(const uint8_t *data, size_t len, size_t *pos, pd_tensor *t,
                                pd_error *err) {
  if (!pos || !t || (!data && len))
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_tensor_read_stream: bad arguments");
  if (*pos > len)
    return pd_error_set(err, PD_EINVAL, nowhere, "position %zu is past the end (%zu bytes)", *pos,
                        len);
  reader r = {data, len, *pos, err};
  pd_tensor tmp;
  pd_tensor_init(&tmp);
  pd_status st = read_tensor(&r, &tmp);
  if (st) {
    pd_tensor_release(&tmp);
    return st;
  }
  tensor_move(t, &tmp);
  *pos = r.pos;
  return PD_OK;
}

/* ================= Writing a stream ================= */

/* Room for a packed TensorDesc: the type (2 bytes) and up to PD_TENSOR_MAX_DIMS dims of at most
 * 1 + 10 bytes each. */
enum { DESC_ROOM = 2 + PD_TENSOR_MAX_DIMS * 11 + 16 };

pd_status pd_tensor_write_stream(const pd_tensor *t, pd_buf *out, pd_error *err) {
  if (!t || !out)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_tensor_write_stream: bad arguments");
  if (!pd_tensor_initialized(t))
    return pd_error_set(err, PD_EINVAL, nowhere, "cannot save a tensor that is not initialized");
  if (!pd_dtype_valid((int)t->dtype) || t->ndims < 0 || t->ndims > PD_TENSOR_MAX_DIMS)
    return pd_error_set(err, PD_EINVAL, nowhere, "cannot save a tensor of dtype %d, rank %d",
                        (int)t->dtype, t->ndims);
  pd_error lerr = {0};
  pd_status st = pd_tensor_validate_lod(t, &lerr);
  if (st) {
    pd_error_set(err, PD_EINVAL, nowhere, "cannot save a tensor with a bad LoD: %s",
                 lerr.msg ? lerr.msg : pd_status_str(lerr.status));
    pd_error_clear(&lerr);
    return PD_EINVAL;
  }
  if (out->oom) return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory writing a tensor");

  int64_t dims[PD_TENSOR_MAX_DIMS];
  if (t->ndims) memcpy(dims, t->dims, (size_t)t->ndims * sizeof *dims);
  pb_tensor_desc desc = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TENSOR_DESC__INIT;
  desc.data_type = (Paddle__Framework__Proto__VarType__Type)t->dtype;
  desc.n_dims = (size_t)t->ndims;
  desc.dims = dims;
  uint8_t dbuf[DESC_ROOM];
  size_t dsize = protobuf_c_message_get_packed_size(&desc.base);
  if (dsize > sizeof dbuf)
    return pd_error_set(err, PD_EINVAL, nowhere, "the TensorDesc is too large (%zu bytes)", dsize);
  protobuf_c_message_pack(&desc.base, dbuf);

  size_t old = out->len;
  buf_u32(out, 0);                       /* LoD-tensor version */
  buf_u64(out, (uint64_t)t->nlod);
  for (int l = 0; l < t->nlod; l++) {
    const pd_lod_level *lv = &t->lod[l];
    buf_u64(out, (uint64_t)lv->n * 8);
    uint8_t *p = buf_extend(out, (size_t)lv->n * 8);
    for (int64_t i = 0; p && i < lv->n; i++) put_u64(p + 8 * i, (uint64_t)lv->offsets[i]);
  }
  buf_u32(out, 0);                       /* tensor version */
  buf_u32(out, (uint32_t)dsize);
  pd_buf_append(out, dbuf, dsize);
  size_t esize = pd_dtype_size(t->dtype);
  size_t n = (size_t)pd_tensor_numel(t);
  uint8_t *p = buf_extend(out, n * esize);
  if (p && pd_tensor_on_gpu(t)) {  /* saved from the GPU: read back through a host copy */
    pd_tensor h;
    pd_tensor_init(&h);
    pd_status cst = pd_tensor_copy_to(&h, t, PD_K_HOST);
    if (!cst) copy_le(p, pd_tensor_data(&h), n, esize);
    pd_tensor_release(&h);
    if (cst) {
      out->len = old;
      if (out->data) out->data[old] = '\0';
      return pd_error_set(err, cst, nowhere, "cannot read a tensor back from the GPU: %s",
                          cst == PD_ENOMEM ? "out of memory" : pd_k_cuda_error());
    }
  } else if (p) {
    copy_le(p, pd_tensor_data(t), n, esize);
  }
  if (out->oom) {
    out->len = old;
    if (out->data) out->data[old] = '\0';
    return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory writing a tensor");
  }
  return PD_OK;
}

/* ================= Shared by the file formats ================= */

/* The initialized tensor of var `name` (scope or a parent), for saving. */
static pd_status saved_tensor(pd_scope *scope, const char *name, const char *path,
                              const pd_tensor **out, pd_error *err) {
  if (!name || !name[0]) return file_fail(err, PD_EINVAL, path, "a var name is empty");
  pd_variable *v = pd_scope_find_var(scope, name);
  if (!v) return file_fail(err, PD_ENOTFOUND, path, "cannot save '%s': no such var", name);
  if (v->type == PD_VAR_UNSET)
    return file_fail(err, PD_EINVAL, path, "cannot save '%s': it holds no value yet", name);
  if (v->type != PD_VAR_LOD_TENSOR)
    return file_fail(err, PD_ETYPE, path, "cannot save '%s': it holds a %s, not a tensor", name,
                     pd_var_type_name(v->type));
  const pd_tensor *t = pd_var_tensor(v);
  if (!pd_tensor_initialized(t))
    return file_fail(err, PD_EINVAL, path,
                     "cannot save '%s': its tensor is not initialized (did the startup program "
                     "run?)",
                     name);
  *out = t;
  return PD_OK;
}

/* Check a loaded tensor against the var desc of `name` in block 0 of expect. */
static pd_status check_expect(const pd_program *expect, const char *name, const pd_tensor *t,
                              const char *path, pd_error *err) {
  if (!expect) return PD_OK;
  const pd_block *b = pd_program_block(expect, 0);
  const pd_var_desc *d = b ? pd_block_find_var_local(b, name) : NULL;
  if (!d)
    return file_fail(err, PD_ENOTFOUND, path, "holds var '%s', which the program does not declare",
                     name);
  if (d->type != PD_VAR_LOD_TENSOR)
    return file_fail(err, PD_ETYPE, path,
                     "holds a tensor for '%s', which the program declares as a %s", name,
                     pd_var_type_name(d->type));
  char got[160], want[160];
  pd_dims_str(t->ndims, t->dims, got, sizeof got);
  if (d->ndims >= 0)
    pd_dims_str(d->ndims, d->dims, want, sizeof want);
  else
    snprintf(want, sizeof want, "(any shape)");
  if (d->dtype != t->dtype)
    return file_fail(err, PD_ETYPE, path, "'%s' is %s %s in the file but %s %s in the program",
                     name, pd_dtype_name(t->dtype), got, pd_dtype_name(d->dtype), want);
  bool same = d->ndims < 0 || d->ndims == t->ndims;
  for (int i = 0; same && d->ndims > 0 && i < d->ndims; i++)
    same = d->dims[i] < 0 || d->dims[i] == t->dims[i];
  if (!same)
    return file_fail(err, PD_ESHAPE, path,
                     "'%s' has shape %s in the file but %s in the program", name, got, want);
  return PD_OK;
}

/* Install tensors[i] as the value of var names[i] of scope itself, all or nothing: check the
 * existing vars, create the missing ones (erasing them again if that fails), then move. */
static pd_status install(pd_scope *scope, int n, const char *const *names, pd_tensor *tensors,
                         const char *path, pd_error *err) {
  for (int i = 0; i < n; i++) {
    pd_variable *v = pd_scope_find_local_var(scope, names[i]);
    if (v && v->type != PD_VAR_UNSET && v->type != PD_VAR_LOD_TENSOR)
      return file_fail(err, PD_ETYPE, path,
                       "cannot load '%s': the scope's var of that name holds a %s, not a tensor",
                       names[i], pd_var_type_name(v->type));
  }
  bool *created = pd_calloc(n ? (size_t)n : 1, sizeof *created);
  if (!created) return file_fail(err, PD_ENOMEM, path, "out of memory loading");
  for (int i = 0; i < n; i++) {
    if (pd_scope_find_local_var(scope, names[i])) continue;
    if (!pd_scope_var(scope, names[i])) {
      for (int j = 0; j < i; j++)
        if (created[j]) pd_scope_erase_var(scope, names[j]);
      pd_free(created);
      return file_fail(err, PD_ENOMEM, path, "out of memory loading");
    }
    created[i] = true;
  }
  pd_free(created);
  for (int i = 0; i < n; i++) {
    pd_tensor *dst = pd_var_tensor(pd_scope_find_local_var(scope, names[i]));
    tensor_move(dst, &tensors[i]);  /* dst is not NULL: the types were checked above */
  }
  return PD_OK;
}

static pd_tensor *tensors_new(int n) {
  pd_tensor *ts = pd_calloc(n ? (size_t)n : 1, sizeof *ts);
  for (int i = 0; ts && i < n; i++) pd_tensor_init(&ts[i]);
  return ts;
}

static void tensors_free(pd_tensor *ts, int n) {
  for (int i = 0; ts && i < n; i++) pd_tensor_release(&ts[i]);
  pd_free(ts);
}

static pd_status check_names(int n, const char *const *names, const char *path, pd_error *err) {
  if (n < 0 || (n > 0 && !names))
    return file_fail(err, PD_EINVAL, path, "bad list of %d var names", n);
  for (int i = 0; i < n; i++)
    if (!names[i] || !names[i][0])
      return file_fail(err, PD_EINVAL, path, "var name %d of %d is empty", i + 1, n);
  return PD_OK;
}

/* ================= Combined parameters ================= */

pd_status pd_params_encode(const char *path, pd_scope *scope, int n, const char *const *names,
                           pd_buf *out, pd_error *err) {
  if (!path || !scope || !out)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_params_save: bad arguments");
  pd_status st = check_names(n, names, path, err);
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *t;
    if ((st = saved_tensor(scope, names[i], path, &t, err))) break;
    if ((st = pd_tensor_write_stream(t, out, err))) {
      char what[300];
      snprintf(what, sizeof what, "parameter '%s'", names[i]);
      relocate(err, st, path, what);
    }
  }
  return st;
}

pd_status pd_params_save(const char *path, pd_scope *scope, int n, const char *const *names,
                         pd_error *err) {
  pd_buf b;
  pd_buf_init(&b);
  pd_status st = pd_params_encode(path, scope, n, names, &b, err);
  if (!st && (st = pd_write_file_atomic(path, b.data, b.len, err))) relocate(err, st, path, NULL);
  pd_buf_free(&b);
  return st;
}

/* The var of p's block 0 that records the identity of its parameter file, or NULL. */
static pd_var_desc *identity_var(const pd_program *p) {
  const pd_block *b = p && p->nblocks > 0 ? p->blocks[0] : NULL;
  size_t k = strlen(PD_PARAMS_IDENTITY_PREFIX);
  for (int i = 0; b && i < b->nvars; i++)
    if (b->vars[i]->name && strncmp(b->vars[i]->name, PD_PARAMS_IDENTITY_PREFIX, k) == 0)
      return b->vars[i];
  return NULL;
}

pd_status pd_params_set_identity(pd_program *p, const void *data, size_t len) {
  char name[96];
  snprintf(name, sizeof name, "%s%zu:%016" PRIx64, PD_PARAMS_IDENTITY_PREFIX, len,
           pd_hash_bytes(data, len));
  pd_var_desc *v = identity_var(p);
  if (v) {
    if (pd_block_rename_var(p->blocks[0], v, name)) return PD_ENOMEM;
  } else if (!(v = pd_block_var(p->blocks[0], name))) {
    return PD_ENOMEM;
  }
  v->type = PD_VAR_RAW;
  v->persistable = false;
  return PD_OK;
}

pd_status pd_params_check_identity(const pd_program *p, const char *params_path, pd_error *err) {
  const pd_var_desc *v = identity_var(p);
  if (!v) return PD_OK;
  unsigned long long want_len = 0, want_hash = 0;
  const char *rec = v->name + strlen(PD_PARAMS_IDENTITY_PREFIX);
  char tail;
  if (sscanf(rec, "%llu:%16llx%c", &want_len, &want_hash, &tail) != 2)
    return file_fail(err, PD_EFORMAT, params_path,
                     "the model's record of its parameter file is malformed ('%s')", v->name);
  char *bytes;
  size_t len;
  pd_status st = pd_read_file(params_path, &bytes, &len, err);
  if (st) return relocate(err, st, params_path, NULL);
  uint64_t hash = pd_hash_bytes(bytes, len);
  pd_free(bytes);
  if (len == want_len && hash == want_hash) return PD_OK;
  return file_fail(err, PD_EFORMAT, params_path,
                   "not the parameter file saved with this model (the model was saved with %llu "
                   "bytes of hash %016llx, the file has %zu bytes of hash %016" PRIx64
                   "): save the model again",
                   want_len, want_hash, len, hash);
}

/* How many whole tensors data[pos, len) holds: -1 if it is not exactly a sequence of streams,
 * -2 on out of memory. */
static long count_streams(const uint8_t *data, size_t len, size_t pos) {
  long k = 0;
  pd_tensor t;
  pd_tensor_init(&t);
  while (pos < len) {
    pd_error e = {0};
    pd_status st = pd_tensor_read_stream(data, len, &pos, &t, &e);
    pd_error_clear(&e);
    if (st) {
      k = st == PD_ENOMEM ? -2 : -1;
      break;
    }
    k++;
  }
  pd_tensor_release(&t);
  return k;
}

pd_status pd_params_load(const char *path, pd_scope *scope, int n, const char *const *names,
                         const pd_program *expect, pd_error *err) {
  if (!path || !scope)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_params_load: bad arguments");
  pd_status st = check_names(n, names, path, err);
  if (st) return st;
  char *bytes = NULL;
  size_t len = 0;
  if ((st = pd_read_file(path, &bytes, &len, err))) return relocate(err, st, path, NULL);
  const uint8_t *data = (const uint8_t *)bytes;
  pd_tensor *ts = tensors_new(n);
  if (!ts) {
    st = file_fail(err, PD_ENOMEM, path, "out of memory loading");
    goto out;
  }
  size_t pos = 0;
  for (int i = 0; i < n; i++) {
    if (pos == len) {
      st = file_fail(err, PD_EFORMAT, path, "holds %d tensor%s but the model has %d parameters", i,
                     i == 1 ? "" : "s", n);
      goto out;
    }
    if ((st = pd_tensor_read_stream(data, len, &pos, &ts[i], err))) {
      char what[300];
      snprintf(what, sizeof what, "parameter '%s' (tensor %d of %d)", names[i], i + 1, n);
      relocate(err, st, path, what);
      goto out;
    }
  }
  if (pos < len) {
    long more = count_streams(data, len, pos);
    if (more == -2)
      st = file_fail(err, PD_ENOMEM, path, "out of memory loading");
    else if (more > 0)
      st = file_fail(err, PD_EFORMAT, path, "holds %ld tensors but the model has %d parameters",
                     (long)n + more, n);
    else
      st = file_fail(err, PD_EFORMAT, path,
                     "%zu unexpected bytes at byte %zu, after the last of its %d tensors",
                     len - pos, pos, n);
    goto out;
  }
  for (int i = 0; i < n; i++)
    if ((st = check_expect(expect, names[i], &ts[i], path, err))) goto out;
  st = install(scope, n, names, ts, path, err);
out:
  tensors_free(ts, n);
  pd_free(bytes);
  return st;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

pd_status pd_params_names(const pd_program *p, const char ***names, int *n) {
  const pd_block *b = p->blocks[0];
  const char **out = pd_calloc((size_t)b->nvars + 1, sizeof *out);
  *names = NULL;
  *n = 0;
  if (!out) return PD_ENOMEM;
  int k = 0;
  for (int i = 0; i < b->nvars; i++)
    if (b->vars[i]->persistable && b->vars[i]->type == PD_VAR_LOD_TENSOR)
      out[k++] = b->vars[i]->name;
  qsort(out, (size_t)k, sizeof *out, cmp_name);
  *names = out;
  *n = k;
  return PD_OK;
}

char *pd_params_path_for(const char *model_path) {
  if (!model_path) return NULL;
  static const char model_ext[] = ".pdmodel", params_ext[] = ".pdiparams";
  size_t n = strlen(model_path), m = sizeof model_ext - 1;
  if (n > m && strcmp(model_path + n - m, model_ext) == 0) n -= m;
  else if (n > 5 && strcmp(model_path + n - 5, ".json") == 0) n -= 5; /* a PIR program */
  char *s = pd_malloc(n + sizeof params_ext);
  if (!s) return NULL;
  memcpy(s, model_path, n);
  memcpy(s + n, params_ext, sizeof params_ext);
  return s;
}

/* ================= Checkpoints ================= */

/* The metadata keys, their tags and (by index) their fields of pd_ckpt_meta. Integers are
 * stored as int64 (the uint64 fields by their bit pattern). */
static const struct meta_key {
  const char *key;
  char tag;
} meta_keys[] = {
    {"epoch", 'i'}, {"step", 'i'}, {"global_step", 'i'}, {"rng_offset", 'i'},
    {"seed", 'i'},  {"loss", 'd'}, {"note", 's'}, {"setup", 's'},
};
enum { META_NKEYS = (int)PD_ARRAY_LEN(meta_keys) };

/* The 8-byte value of key k ('i' or 'd'). */
static uint64_t meta_get(const pd_ckpt_meta *m, int k) {
  uint64_t bits = 0;
  switch (k) {
    case 0: return (uint64_t)m->epoch;
    case 1: return (uint64_t)m->step;
    case 2: return (uint64_t)m->global_step;
    case 3: return m->rng_offset;
    case 4: return m->seed;
    case 5: memcpy(&bits, &m->loss, sizeof bits); return bits;
    default: return 0;
  }
}

static void meta_set(pd_ckpt_meta *m, int k, uint64_t v) {
  switch (k) {
    case 0: m->epoch = (int64_t)v; break;
    case 1: m->step = (int64_t)v; break;
    case 2: m->global_step = (int64_t)v; break;
    case 3: m->rng_offset = v; break;
    case 4: m->seed = v; break;
    case 5: memcpy(&m->loss, &v, sizeof v); break;
    default: break;
  }
}

/* The text field of string key k, and its size. */
static char *meta_str(pd_ckpt_meta *m, int k, size_t *size) {
  if (strcmp(meta_keys[k].key, "setup") == 0) {
    *size = sizeof m->setup;
    return m->setup;
  }
  *size = sizeof m->note;
  return m->note;
}

static void write_meta(pd_buf *b, const pd_ckpt_meta *meta) {
  pd_ckpt_meta zero = {0};
  if (!meta) meta = &zero;
  buf_u32(b, META_NKEYS);
  for (int k = 0; k < META_NKEYS; k++) {
    const char *key = meta_keys[k].key;
    char tag = meta_keys[k].tag;
    buf_u32(b, (uint32_t)strlen(key));
    pd_buf_puts(b, key);
    pd_buf_append(b, &tag, 1);
    if (tag == 's') {
      size_t size;
      const char *text = meta_str((pd_ckpt_meta *)meta, k, &size);
      size_t nl = strnlen(text, size - 1);
      buf_u32(b, (uint32_t)nl);
      pd_buf_append(b, text, nl);
    } else {
      buf_u64(b, meta_get(meta, k));
    }
  }
}

pd_status pd_checkpoint_save(const char *path, pd_scope *scope, int n, const char *const *names,
                             const pd_ckpt_meta *meta, pd_error *err) {
  if (!path || !scope)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_checkpoint_save: bad arguments");
  pd_status st = check_names(n, names, path, err);
  if (st) return st;
  for (int i = 0; i < n; i++) {
    if (strlen(names[i]) > PD_CKPT_MAX_NAME)
      return file_fail(err, PD_EINVAL, path, "var name %d is longer than %d bytes", i + 1,
                       PD_CKPT_MAX_NAME);
    for (int j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return file_fail(err, PD_EINVAL, path, "var '%s' is listed twice", names[i]);
  }
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_append(&b, PD_CKPT_MAGIC, 8);
  buf_u32(&b, (uint32_t)n);
  for (int i = 0; i < n && !st; i++) {
    const pd_tensor *t;
    if ((st = saved_tensor(scope, names[i], path, &t, err))) break;
    buf_u32(&b, (uint32_t)strlen(names[i]));
    pd_buf_puts(&b, names[i]);
    if ((st = pd_tensor_write_stream(t, &b, err))) {
      char what[300];
      snprintf(what, sizeof what, "var '%s'", names[i]);
      relocate(err, st, path, what);
    }
  }
  if (!st) {
    write_meta(&b, meta);
    if (!b.oom) buf_u32(&b, crc_of(b.data, b.len));
    if (b.oom)
      st = file_fail(err, PD_ENOMEM, path, "out of memory writing a checkpoint");
    else if ((st = pd_write_file_atomic(path, b.data, b.len, err)))
      relocate(err, st, path, NULL);
  }
  pd_buf_free(&b);
  return st;
}

/* A length-prefixed name or key at r->pos (1 .. PD_CKPT_MAX_NAME bytes, no NUL): *s points into
 * the input, *n is its length. */
static pd_status read_name(reader *r, const char *what, const uint8_t **s, size_t *n) {
  pd_status st = need(r, 4, what);
  if (st) return st;
  size_t at = r->pos;
  uint32_t len = get_u32(r->d + r->pos);
  r->pos += 4;
  if (len == 0 || len > PD_CKPT_MAX_NAME)
    return bad_at(r, PD_EFORMAT, at, "%s is %" PRIu32 " bytes long (expected 1 to %d)", what,
                  len, PD_CKPT_MAX_NAME);
  if ((st = need(r, len, what))) return st;
  if (memchr(r->d + r->pos, 0, len))
    return bad_at(r, PD_EFORMAT, r->pos, "%s has a NUL byte", what);
  *s = r->d + r->pos;
  *n = len;
  r->pos += len;
  return PD_OK;
}

static pd_status read_meta(reader *r, pd_ckpt_meta *m) {
  memset(m, 0, sizeof *m);
  pd_status st = need(r, 4, "the number of metadata entries");
  if (st) return st;
  size_t at = r->pos;
  uint32_t count = get_u32(r->d + r->pos);
  r->pos += 4;
  /* An entry takes at least 4 + 1 + 1 + 4 bytes. */
  if (count > left(r) / 10)
    return bad_at(r, PD_EFORMAT, at, "%" PRIu32 " metadata entries cannot fit in %zu bytes",
                  count, left(r));
  bool seen[META_NKEYS] = {false};
  for (uint32_t e = 0; e < count; e++) {
    const uint8_t *key;
    size_t kn, kat = r->pos;
    if ((st = read_name(r, "a metadata key", &key, &kn))) return st;
    if ((st = need(r, 1, "a metadata tag"))) return st;
    size_t tat = r->pos;
    char tag = (char)r->d[r->pos++];
    uint64_t v = 0;
    const uint8_t *s = NULL;
    uint32_t sn = 0;
    if (tag == 'i' || tag == 'd') {
      if ((st = need(r, 8, "a metadata number"))) return st;
      v = get_u64(r->d + r->pos);
      r->pos += 8;
    } else if (tag == 's') {
      if ((st = need(r, 4, "the length of a metadata string"))) return st;
      sn = get_u32(r->d + r->pos);
      r->pos += 4;
      if ((st = need(r, sn, "a metadata string"))) return st;
      s = r->d + r->pos;
      r->pos += sn;
    } else {
      return bad_at(r, PD_EFORMAT, tat, "unknown metadata tag 0x%02x", (unsigned)(uint8_t)tag);
    }
    int k = 0;
    while (k < META_NKEYS && !(strlen(meta_keys[k].key) == kn &&
                               memcmp(meta_keys[k].key, key, kn) == 0))
      k++;
    if (k == META_NKEYS) continue;  /* a key of a newer writer */
    if (tag != meta_keys[k].tag)
      return bad_at(r, PD_EFORMAT, tat, "metadata '%s' has tag '%c', expected '%c'",
                    meta_keys[k].key, tag, meta_keys[k].tag);
    if (seen[k])
      return bad_at(r, PD_EFORMAT, kat, "metadata '%s' appears twice", meta_keys[k].key);
    seen[k] = true;
    if (tag != 's') {
      meta_set(m, k, v);
      continue;
    }
    size_t size;
    char *text = meta_str(m, k, &size);
    if (sn >= size)
      return bad_at(r, PD_EFORMAT, tat, "the %s is %" PRIu32 " bytes long (at most %zu)",
                    meta_keys[k].key, sn, size - 1);
    if (sn && memchr(s, 0, sn))
      return bad_at(r, PD_EFORMAT, tat, "the %s has a NUL byte", meta_keys[k].key);
    if (sn) memcpy(text, s, sn);
    text[sn] = '\0';
  }
  return PD_OK;
}

/* The value of KEY in a setup text ("KEY=VALUE" lines): its start and length; NULL if absent. */
static const char *setup_value(const char *setup, const char *key, size_t *n) {
  size_t kn = strlen(key);
  for (const char *line = setup; *line;) {
    const char *end = strchr(line, '\n');
    size_t ln = end ? (size_t)(end - line) : strlen(line);
    if (ln > kn && strncmp(line, key, kn) == 0 && line[kn] == '=') {
      *n = ln - kn - 1;
      return line + kn + 1;
    }
    line += ln + (end ? 1 : 0);
  }
  *n = 0;
  return NULL;
}

/* The error of a checkpoint of another setup: each key of either text whose values differ. */
static pd_status setup_differs(const char *was, const char *now, const char *path,
                               pd_error *err) {
  pd_buf b, key;
  pd_buf_init(&b);
  pd_buf_init(&key);
  pd_buf_puts(&b, "written by another training setup:");
  int ndiff = 0;
  for (int side = 0; side < 2; side++) {
    const char *text = side ? now : was;
    for (const char *line = text, *next; *line; line = next) {
      const char *end = strchr(line, '\n');
      size_t ln = end ? (size_t)(end - line) : strlen(line);
      const char *eq = memchr(line, '=', ln);
      next = line + ln + (end ? 1 : 0);
      if (!eq) continue;
      key.len = 0;
      pd_buf_append(&key, line, (size_t)(eq - line));
      if (key.oom) break;
      size_t wn, nn;
      const char *w = setup_value(was, key.data, &wn), *v = setup_value(now, key.data, &nn);
      if (side == 1 && w) continue;  /* compared on the first pass */
      if (w && v && wn == nn && memcmp(w, v, wn) == 0) continue;
      bool hashed = (w && wn && w[0] == '#') || (v && nn && v[0] == '#');
      if (hashed || !w || !v)
        pd_buf_printf(&b, "%s the %s differs", ndiff ? ";" : "", key.data);
      else
        pd_buf_printf(&b, "%s the %s is %.*s in the checkpoint but %.*s now", ndiff ? ";" : "",
                      key.data, (int)wn, w, (int)nn, v);
      ndiff++;
    }
  }
  if (!ndiff) pd_buf_puts(&b, " the setup differs");
  pd_status st;
  if (b.oom || key.oom)
    st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  else
    st = file_fail(err, PD_EINVAL, path, "%s (train it anew, or use another checkpoint file)",
                   b.data);
  pd_buf_free(&b);
  pd_buf_free(&key);
  return st;
}

pd_status pd_checkpoint_load(const char *path, pd_scope *scope, const pd_program *expect,
                             pd_ckpt_meta *meta, pd_error *err) {
  return pd_checkpoint_load_setup(path, scope, expect, NULL, meta, err);
}

pd_status pd_checkpoint_load_setup(const char *path, pd_scope *scope, const pd_program *expect,
                                   const char *setup, pd_ckpt_meta *meta, pd_error *err) {
  if (!path || !scope)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_checkpoint_load: bad arguments");
  char *bytes = NULL;
  size_t len = 0;
  pd_status st = pd_read_file(path, &bytes, &len, err);
  if (st) return relocate(err, st, path, NULL);
  const uint8_t *data = (const uint8_t *)bytes;
  pd_tensor *ts = NULL;
  char **names = NULL;
  int n = 0;
  enum { MIN_SIZE = 8 + 4 + 4 + 4 };
  if (len < 6 || memcmp(data, PD_CKPT_MAGIC, 6) != 0) {
    st = file_fail(err, PD_EFORMAT, path, "not a pdlang checkpoint (it does not start with %s)",
                   PD_CKPT_MAGIC);
    goto out;
  }
  if (len < 8 || memcmp(data, PD_CKPT_MAGIC, 8) != 0) {
    st = file_fail(err, len < 8 ? PD_EFORMAT : PD_EUNSUPPORTED, path,
                   "checkpoint format %.*s is not supported (expected %s)", len < 8 ? (int)len : 8,
                   bytes, PD_CKPT_MAGIC);
    goto out;
  }
  if (len < MIN_SIZE) {
    st = file_fail(err, PD_EFORMAT, path, "truncated: %zu bytes, a checkpoint has at least %d",
                   len, (int)MIN_SIZE);
    goto out;
  }
  uint32_t stored = get_u32(data + len - 4), computed = crc_of(data, len - 4);
  if (stored != computed) {
    st = file_fail(err, PD_EFORMAT, path,
                   "checksum mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32
                   "): the file is damaged or truncated",
                   stored, computed);
    goto out;
  }
  reader r = {data, len - 4, 8, err};
  uint32_t count = get_u32(data + r.pos);
  r.pos += 4;
  /* A var takes at least 4 (name length) + 1 (name) + 4 + 8 + 4 + 4 (stream header) bytes. */
  if (count > left(&r) / 25 || count > INT_MAX) {
    st = bad_at(&r, PD_EFORMAT, 8, "%" PRIu32 " vars cannot fit in the %zu bytes that follow",
                count, left(&r));
    goto located;
  }
  ts = tensors_new((int)count);
  names = pd_calloc(count ? count : 1, sizeof *names);
  if (!ts || !names) {
    st = file_fail(err, PD_ENOMEM, path, "out of memory loading");
    goto out;
  }
  for (n = 0; n < (int)count; n++) {
    const uint8_t *s;
    size_t sn;
    size_t at = r.pos;
    char what[64];
    snprintf(what, sizeof what, "var %d of %" PRIu32, n + 1, count);
    if ((st = read_name(&r, "a var name", &s, &sn))) {
      relocate(err, st, path, what);
      goto out;
    }
    if (!(names[n] = pd_strndup((const char *)s, sn))) {
      st = file_fail(err, PD_ENOMEM, path, "out of memory loading");
      goto out;
    }
    for (int j = 0; j < n; j++)
      if (strcmp(names[j], names[n]) == 0) {
        n++;  /* names[n] is freed with the others */
        st = bad_at(&r, PD_EFORMAT, at, "var '%s' appears twice", names[n - 1]);
        goto located;
      }
    if ((st = read_tensor(&r, &ts[n]))) {
      char wn[300];
      snprintf(wn, sizeof wn, "var '%s' (%d of %" PRIu32 ")", names[n], n + 1, count);
      n++;
      relocate(err, st, path, wn);
      goto out;
    }
  }
  pd_ckpt_meta m;
  if ((st = read_meta(&r, &m))) {
    relocate(err, st, path, "metadata");
    goto out;
  }
  if (r.pos != r.len) {
    st = bad_at(&r, PD_EFORMAT, r.pos, "%zu unexpected bytes before the checksum",
                r.len - r.pos);
    goto located;
  }
  for (int i = 0; i < n; i++)
    if ((st = check_expect(expect, names[i], &ts[i], path, err))) goto out;
  if (setup && m.setup[0] && strcmp(setup, m.setup) != 0) {
    st = setup_differs(m.setup, setup, path, err);
    goto out;
  }
  if ((st = install(scope, n, (const char *const *)names, ts, path, err))) goto out;
  if (meta) *meta = m;
  goto out;
located:
  relocate(err, st, path, NULL);
out:
  tensors_free(ts, (int)(ts ? n : 0));
  for (int i = 0; names && i < n; i++) pd_free(names[i]);
  pd_free(names);
  pd_free(bytes);
  return st;
}
