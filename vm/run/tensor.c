/* tensor.c -- dense tensors with shared aligned storage and LoD, their printing, and tensor
 * arrays. */
#include "config.h"
#include "vm/run/tensor.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Storage ---- */

static pd_storage *storage_new(size_t bytes, pd_k_place place) {
  pd_storage *s = pd_malloc(sizeof *s);
  if (!s) return NULL;
  /* A device block of 0 bytes still gets an address, as host ones do. */
  s->data = place == PD_K_CUDA ? pd_k_dev_alloc(bytes ? bytes : 1) : pd_k_host_alloc(bytes);
  if (!s->data) {
    pd_free(s);
    return NULL;
  }
  s->refs = 1;
  s->cap = bytes;
  s->place = place;
  s->prep = NULL;
  return s;
}

/* The values of s are about to change: its backend's prepared copy no longer holds them. */
static void storage_touch(pd_storage *s) {
  if (s && s->prep) {
    s->prep->release(s->prep);
    s->prep = NULL;
  }
}

static void storage_unref(pd_storage *s) {
  if (s && --s->refs == 0) {
    storage_touch(s);
    if (s->place == PD_K_CUDA) pd_k_dev_free(s->data);
    else pd_k_host_free(s->data);
    pd_free(s);
  }
}

pd_status pd_mem_copy(void *dst, pd_k_place dst_place, const void *src, pd_k_place src_place,
                      size_t nbytes) {
  if (!nbytes) return PD_OK;
  if (dst_place == PD_K_HOST && src_place == PD_K_HOST) {
    memmove(dst, src, nbytes);
    return PD_OK;
  }
  if (dst_place == PD_K_CUDA && src_place == PD_K_CUDA) return pd_k_dev_copy(dst, src, nbytes);
  if (dst_place == PD_K_CUDA) return pd_k_dev_upload(dst, src, nbytes);
  return pd_k_dev_download(dst, src, nbytes);
}

/* ---- LoD helpers ---- */

static void lod_free(pd_lod_level *lod, int n) {
  for (int i = 0; i < n; i++) pd_free(lod[i].offsets);
  pd_free(lod);
}

/* Fill one level with a copy of n offsets; false on out of memory or a bad count. */
static bool level_copy(pd_lod_level *lv, const int64_t *offsets, int64_t n) {
  if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(int64_t)) return false;
  lv->offsets = pd_malloc((size_t)n * sizeof(int64_t));
  if (!lv->offsets) return false;
  if (n) memcpy(lv->offsets, offsets, (size_t)n * sizeof(int64_t));
  lv->n = n;
  return true;
}

/* Fresh LoD arrays, built before the tensor is touched so that a failure changes nothing.
 * Level i comes from levels[i] when given, else from offsets[i] / lens[i]. Returns NULL for
 * n == 0 (*ok true) and on out of memory (*ok false). */
static pd_lod_level *lod_build(int n, const pd_lod_level *levels, const int64_t *const *offsets,
                               const int64_t *lens, bool *ok) {
  *ok = true;
  if (n == 0) return NULL;
  pd_lod_level *lod = pd_calloc((size_t)n, sizeof *lod);
  *ok = lod != NULL;
  for (int i = 0; *ok && i < n; i++) {
    *ok = levels ? level_copy(&lod[i], levels[i].offsets, levels[i].n)
                 : level_copy(&lod[i], offsets[i], lens[i]);
  }
  if (!*ok && lod) {
    lod_free(lod, n);  /* calloc'd: unfilled levels hold NULL */
    lod = NULL;
  }
  return lod;
}

static pd_lod_level *lod_dup_of(const pd_tensor *src, bool *ok) {
  return lod_build(src->nlod, src->lod, NULL, NULL, ok);
}

/* ---- Life cycle ---- */

void pd_tensor_init(pd_tensor *t) {
  memset(t, 0, sizeof *t);
  t->dtype = PD_FP32;
}

void pd_tensor_release(pd_tensor *t) {
  pd_k_place place = t->place;
  storage_unref(t->storage);
  lod_free(t->lod, t->nlod);
  pd_tensor_init(t);
  t->place = place;
}

pd_tensor *pd_tensor_new(void) {
  pd_tensor *t = pd_malloc(sizeof *t);
  if (t) pd_tensor_init(t);
  return t;
}

void pd_tensor_free(pd_tensor *t) {
  if (!t) return;
  pd_tensor_release(t);
  pd_free(t);
}

/* Bytes of a dtype/shape, or PD_EINVAL for a bad one. */
static pd_status shape_bytes(pd_dtype dtype, int ndims, const int64_t *dims, size_t *bytes) {
  size_t esize = pd_dtype_size(dtype);
  if (!esize || ndims < 0 || ndims > PD_TENSOR_MAX_DIMS || (ndims > 0 && !dims))
    return PD_EINVAL;
  int64_t n = pd_k_numel(ndims, dims);
  if (n < 0 || (uint64_t)n > SIZE_MAX / esize) return PD_EINVAL;
  *bytes = (size_t)n * esize;
  return PD_OK;
}

pd_status pd_tensor_resize(pd_tensor *t, pd_dtype dtype, int ndims, const int64_t *dims) {
  size_t bytes;
  pd_status st = shape_bytes(dtype, ndims, dims, &bytes);
  if (st) return st;
  pd_storage *s = t->storage;
  if (!s || s->refs > 1 || s->cap < bytes || s->place != t->place) {
    pd_storage *fresh = storage_new(bytes, t->place);
    if (!fresh) return PD_ENOMEM;
    storage_unref(s);
    t->storage = fresh;
  } else {
    storage_touch(s); /* kept: its values are the caller's to write */
  }
  t->dtype = dtype;
  t->ndims = ndims;
  if (ndims) memmove(t->dims, dims, (size_t)ndims * sizeof *dims);
  return PD_OK;
}

pd_status pd_tensor_set_data(pd_tensor *t, pd_dtype dtype, int ndims, const int64_t *dims,
                             const void *data) {
  pd_status st = pd_tensor_resize(t, dtype, ndims, dims);
  if (st) return st;
  return pd_mem_copy(pd_tensor_data(t), t->place, data, PD_K_HOST, pd_tensor_nbytes(t));
}

pd_status pd_tensor_reshape(pd_tensor *t, int ndims, const int64_t *dims) {
  size_t bytes;
  pd_status st = shape_bytes(t->dtype, ndims, dims, &bytes);
  if (st) return st;
  if (pd_k_numel(ndims, dims) != pd_tensor_numel(t)) return PD_ESHAPE;
  t->ndims = ndims;
  if (ndims) memmove(t->dims, dims, (size_t)ndims * sizeof *dims);
  return PD_OK;
}

int64_t pd_tensor_numel(const pd_tensor *t) { return pd_k_numel(t->ndims, t->dims); }

size_t pd_tensor_nbytes(const pd_tensor *t) {
  return (size_t)pd_tensor_numel(t) * pd_dtype_size(t->dtype);
}

void *pd_tensor_data(const pd_tensor *t) { return t->storage ? t->storage->data : NULL; }

double pd_tensor_get(const pd_tensor *t, int64_t i) {
  const void *d = pd_tensor_data(t);
  switch (t->dtype) {
    case PD_FP32: return ((const float *)d)[i];
    case PD_FP64: return ((const double *)d)[i];
    case PD_INT64: return (double)((const int64_t *)d)[i];
    case PD_INT32: return ((const int32_t *)d)[i];
    case PD_INT16: return ((const int16_t *)d)[i];
    case PD_UINT8: case PD_BOOL: return ((const uint8_t *)d)[i];
    case PD_INT8: return ((const int8_t *)d)[i];
    case PD_FP16: return pd_fp16_to_f32(((const uint16_t *)d)[i]);
    case PD_BF16: return pd_bf16_to_f32(((const uint16_t *)d)[i]);
    default: return 0;
  }
}

pd_k_prepared **pd_tensor_prepared(const pd_tensor *t) {
  return t->storage ? &t->storage->prep : NULL;
}

void pd_tensor_touch(pd_tensor *t) { storage_touch(t->storage); }

bool pd_tensor_initialized(const pd_tensor *t) { return t->storage != NULL; }

pd_status pd_tensor_copy_to(pd_tensor *dst, const pd_tensor *src, pd_k_place place) {
  if (dst == src) return pd_tensor_to_place(dst, place);
  bool ok;
  pd_lod_level *lod = lod_dup_of(src, &ok);
  if (!ok) return PD_ENOMEM;
  pd_storage *s = NULL;
  if (src->storage) {
    size_t bytes = pd_tensor_nbytes(src);
    s = storage_new(bytes, place);
    pd_status st = s ? pd_mem_copy(s->data, place, src->storage->data, src->storage->place, bytes)
                     : PD_ENOMEM;
    if (st) {
      storage_unref(s);
      lod_free(lod, src->nlod);
      return st;
    }
  }
  pd_tensor_release(dst);
  *dst = *src;
  dst->storage = s;
  dst->lod = lod;
  dst->place = place;
  return PD_OK;
}

pd_status pd_tensor_copy(pd_tensor *dst, const pd_tensor *src) {
  if (dst == src) return PD_OK;
  return pd_tensor_copy_to(dst, src, src->place);
}

pd_status pd_tensor_to_place(pd_tensor *t, pd_k_place place) {
  pd_storage *old = t->storage;
  if (!old || old->place == place) {
    t->place = place;
    return PD_OK;
  }
  size_t bytes = pd_tensor_nbytes(t);
  pd_storage *s = storage_new(bytes, place);
  if (!s) return PD_ENOMEM;
  pd_status st = pd_mem_copy(s->data, place, old->data, old->place, bytes);
  if (st) {
    storage_unref(s);
    return st;
  }
  storage_unref(old);
  t->storage = s;
  t->place = place;
  return PD_OK;
}

bool pd_tensor_on_gpu(const pd_tensor *t) { return t->place == PD_K_CUDA; }

pd_status pd_tensor_share(pd_tensor *dst, const pd_tensor *src) {
  if (dst == src) return PD_OK;
  bool ok;
  pd_lod_level *lod = lod_dup_of(src, &ok);
  if (!ok) return PD_ENOMEM;
  if (src->storage) src->storage->refs++;
  pd_tensor_release(dst);
  *dst = *src;
  dst->lod = lod;
  return PD_OK;
}

pd_status pd_tensor_fill(pd_tensor *t, double value) {
  if (!t->storage) return PD_EINVAL;
  const pd_k_backend *k = t->storage->place == PD_K_CUDA ? pd_k_cuda() : pd_k_cpu();
  if (!k || !k->fill) return PD_EUNSUPPORTED;
  storage_touch(t->storage);
  return k->fill(t->dtype, pd_tensor_numel(t), t->storage->data, value);
}

/* ---- LoD ---- */

pd_status pd_tensor_set_lod(pd_tensor *t, int nlevels, const int64_t *const *offsets,
                            const int64_t *lens) {
  if (nlevels < 0) return PD_EINVAL;
  if (nlevels > 0 && (!offsets || !lens)) return PD_EINVAL;
  for (int l = 0; l < nlevels; l++)
    if (lens[l] < 0 || (lens[l] > 0 && !offsets[l])) return PD_EINVAL;
  bool ok;
  pd_lod_level *lod = lod_build(nlevels, NULL, offsets, lens, &ok);
  if (!ok) return PD_ENOMEM;
  lod_free(t->lod, t->nlod);
  t->lod = lod;
  t->nlod = nlevels;
  return PD_OK;
}

pd_status pd_tensor_copy_lod(pd_tensor *dst, const pd_tensor *src) {
  if (dst == src) return PD_OK;
  bool ok;
  pd_lod_level *lod = lod_dup_of(src, &ok);
  if (!ok) return PD_ENOMEM;
  lod_free(dst->lod, dst->nlod);
  dst->lod = lod;
  dst->nlod = src->nlod;
  return PD_OK;
}

void pd_tensor_clear_lod(pd_tensor *t) {
  lod_free(t->lod, t->nlod);
  t->lod = NULL;
  t->nlod = 0;
}

pd_status pd_tensor_validate_lod(const pd_tensor *t, pd_error *err) {
  pd_loc nowhere = {0};
  if (t->nlod == 0) return PD_OK;
  if (t->ndims < 1)
    return pd_error_set(err, PD_ESHAPE, nowhere, "a tensor with lod needs at least one dim");
  for (int l = 0; l < t->nlod; l++) {
    const pd_lod_level *lv = &t->lod[l];
    if (lv->n < 1)
      return pd_error_set(err, PD_ESHAPE, nowhere, "lod level %d is empty (it needs offset 0)",
                          l);
    if (lv->offsets[0] != 0)
      return pd_error_set(err, PD_ESHAPE, nowhere, "lod level %d starts at %" PRId64 ", not 0",
                          l, lv->offsets[0]);
    for (int64_t i = 1; i < lv->n; i++) {
      if (lv->offsets[i] < lv->offsets[i - 1])
        return pd_error_set(err, PD_ESHAPE, nowhere,
                            "lod level %d decreases at offset %" PRId64 " (%" PRId64
                            " after %" PRId64 ")",
                            l, i, lv->offsets[i], lv->offsets[i - 1]);
    }
    int64_t last = lv->offsets[lv->n - 1];
    if (l + 1 < t->nlod) {
      int64_t seqs = t->lod[l + 1].n - 1;
      if (last != seqs)
        return pd_error_set(err, PD_ESHAPE, nowhere,
                            "lod level %d ends at %" PRId64 " but level %d has %" PRId64
                            " sequences",
                            l, last, l + 1, seqs);
    } else if (last != t->dims[0]) {
      return pd_error_set(err, PD_ESHAPE, nowhere,
                          "lod level %d ends at %" PRId64 " but the tensor has %" PRId64
                          " rows",
                          l, last, t->dims[0]);
    }
  }
  return PD_OK;
}

/* ---- Printing ---- */

/* One element as text into buf (32 bytes hold any %g double or int64). */
static void format_elem(const pd_tensor *t, int64_t i, char *buf, size_t cap) {
  const void *d = pd_tensor_data(t);
  switch (t->dtype) {
    case PD_FP32: snprintf(buf, cap, "%g", (double)((const float *)d)[i]); break;
    case PD_FP64: snprintf(buf, cap, "%g", ((const double *)d)[i]); break;
    case PD_INT32: snprintf(buf, cap, "%" PRId32, ((const int32_t *)d)[i]); break;
    case PD_INT64: snprintf(buf, cap, "%" PRId64, ((const int64_t *)d)[i]); break;
    case PD_BOOL: snprintf(buf, cap, "%s", ((const uint8_t *)d)[i] ? "true" : "false"); break;
    case PD_INT16: snprintf(buf, cap, "%d", ((const int16_t *)d)[i]); break;
    case PD_INT8: snprintf(buf, cap, "%d", ((const int8_t *)d)[i]); break;
    case PD_UINT8: snprintf(buf, cap, "%u", ((const uint8_t *)d)[i]); break;
    case PD_FP16: snprintf(buf, cap, "%g", (double)pd_fp16_to_f32(((const uint16_t *)d)[i])); break;
    case PD_BF16: snprintf(buf, cap, "%g", (double)pd_bf16_to_f32(((const uint16_t *)d)[i])); break;
    default: snprintf(buf, cap, "?"); break;
  }
}

typedef struct printer {
  const pd_tensor *t;
  bool summarize;
  int width;      /* pass 1 measures it; pass 2 pads to it */
  pd_buf *out;    /* NULL in pass 1 */
  int64_t strides[PD_TENSOR_MAX_DIMS];
} printer;

/* Whether index i of a dim of size n is skipped in summary mode (and where "..." goes). */
static bool skipped(const printer *p, int64_t n, int64_t i) {
  return p->summarize && n > 2 * PD_TENSOR_PRINT_EDGE && i >= PD_TENSOR_PRINT_EDGE &&
         i < n - PD_TENSOR_PRINT_EDGE;
}

/* Separator after an element of dim d: ", " innermost, else "," and one newline per remaining
 * rank, then d + 1 spaces of indent (the column after the enclosing brackets). */
static void put_sep(printer *p, int d) {
  int rest = p->t->ndims - d - 1;
  if (rest == 0) {
    pd_buf_puts(p->out, ", ");
    return;
  }
  pd_buf_puts(p->out, ",");
  for (int i = 0; i < rest; i++) pd_buf_puts(p->out, "\n");
  for (int i = 0; i <= d; i++) pd_buf_puts(p->out, " ");
}

static void print_dim(printer *p, int d, int64_t off) {
  const pd_tensor *t = p->t;
  if (d == t->ndims) {
    char buf[32];
    format_elem(t, off, buf, sizeof buf);
    int len = (int)strlen(buf);
    if (!p->out) {
      if (len > p->width) p->width = len;
    } else {
      pd_buf_printf(p->out, "%*s", p->width, buf);
    }
    return;
  }
  int64_t n = t->dims[d];
  if (p->out) pd_buf_puts(p->out, "[");
  for (int64_t i = 0; i < n; i++) {
    if (skipped(p, n, i)) {
      if (p->out) {
        pd_buf_puts(p->out, "...");
        put_sep(p, d);
      }
      i = n - PD_TENSOR_PRINT_EDGE - 1;
      continue;
    }
    print_dim(p, d + 1, off + i * p->strides[d]);
    if (p->out && i + 1 < n) put_sep(p, d);
  }
  if (p->out) pd_buf_puts(p->out, "]");
}

void pd_tensor_print(const pd_tensor *t, pd_buf *out) {
  if (!t->storage) {
    pd_buf_puts(out, "Tensor(not initialized)\n");
    return;
  }
  if (t->storage->place != PD_K_HOST) {  /* print a host copy */
    pd_tensor h;
    pd_tensor_init(&h);
    if (pd_tensor_copy_to(&h, t, PD_K_HOST)) {
      pd_buf_printf(out, "Tensor(on the GPU, not readable: %s)\n", pd_k_cuda_error());
    } else {
      pd_tensor_print(&h, out);
    }
    pd_tensor_release(&h);
    return;
  }
  pd_buf_puts(out, "Tensor(shape=");
  pd_buf_put_dims(out, t->ndims, t->dims);
  pd_buf_printf(out, ", dtype=%s", pd_dtype_name(t->dtype));
  if (t->nlod) {
    pd_buf_puts(out, ", lod=[");
    for (int l = 0; l < t->nlod; l++) {
      if (l) pd_buf_puts(out, ", ");
      pd_buf_put_dims(out, (int)t->lod[l].n, t->lod[l].offsets);
    }
    pd_buf_puts(out, "]");
  }
  pd_buf_puts(out, ")\n");
  printer p = {.t = t, .summarize = pd_tensor_numel(t) > PD_TENSOR_PRINT_MAX};
  int64_t s = 1;
  for (int d = t->ndims - 1; d >= 0; d--) {
    p.strides[d] = s;
    s *= t->dims[d];
  }
  print_dim(&p, 0, 0);  /* measure */
  p.out = out;
  print_dim(&p, 0, 0);
  pd_buf_puts(out, "\n");
}

/* ---- Tensor arrays ---- */

void pd_tensor_array_init(pd_tensor_array *a) { memset(a, 0, sizeof *a); }

void pd_tensor_array_release(pd_tensor_array *a) {
  pd_tensor_array_truncate(a, 0);
  pd_free(a->items);
  pd_tensor_array_init(a);
}

pd_status pd_tensor_array_reserve(pd_tensor_array *a, int64_t n) {
  if (n < 0) return PD_EINVAL;
  if ((uint64_t)n <= a->n) return PD_OK;
  if (PD_GROW(a->items, a->cap, (size_t)n)) return PD_ENOMEM;
  while (a->n < (size_t)n) {
    pd_tensor *t = pd_tensor_new();
    if (!t) return PD_ENOMEM;  /* the ones added so far stay: the array is still valid */
    a->items[a->n++] = t;
  }
  return PD_OK;
}

pd_tensor *pd_tensor_array_push(pd_tensor_array *a) {
  if (pd_tensor_array_reserve(a, (int64_t)a->n + 1)) return NULL;
  return a->items[a->n - 1];
}

void pd_tensor_array_truncate(pd_tensor_array *a, int64_t n) {
  if (n < 0) n = 0;
  while (a->n > (size_t)n) pd_tensor_free(a->items[--a->n]);
}

pd_tensor *pd_tensor_array_get(const pd_tensor_array *a, int64_t i) {
  return i >= 0 && (uint64_t)i < a->n ? a->items[i] : NULL;
}
