/* npy_write.c -- writing a tensor as a NumPy .npy file (format 1.0, C order, little-endian),
 * atomically: what `pdlang exec --out` writes (the reading side is reader_npy.c). */
#include "config.h"
#include "vm/reader/reader.h"

#include <string.h>

static const char *npy_descr(pd_dtype dt) {
  switch (dt) {
    case PD_FP32: return "<f4";
    case PD_FP64: return "<f8";
    case PD_FP16: return "<f2";
    case PD_INT32: return "<i4";
    case PD_INT64: return "<i8";
    case PD_BOOL: return "|b1";
    default: return NULL;
  }
}

pd_status pd_npy_save(const char *path, const pd_tensor *t, pd_error *err) {
  const pd_loc nowhere = {0};
  const char *descr = npy_descr(t->dtype);
  if (!descr)
    return pd_error_set(err, PD_ETYPE, nowhere, "%s: cannot write a %s tensor as .npy", path,
                        pd_dtype_name(t->dtype));
  if (t->place != PD_K_HOST)
    return pd_error_set(err, PD_EINVAL, nowhere, "%s: the tensor is not in host memory", path);
  pd_buf h;
  pd_buf_init(&h);
  pd_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < t->ndims; i++)
    pd_buf_printf(&h, "%lld,%s", (long long)t->dims[i], i + 1 < t->ndims ? " " : "");
  pd_buf_puts(&h, "), }");
  /* The header (magic, version, its length, the dict) pads with spaces and ends with '\n' to
   * a multiple of 64 bytes, as NumPy writes it. */
  size_t pre = 10, len = h.len + 1;
  size_t total = (pre + len + 63) / 64 * 64;
  while (!h.oom && pre + h.len + 1 < total) pd_buf_puts(&h, " ");
  pd_buf_puts(&h, "\n");
  size_t data_len = (size_t)pd_tensor_numel(t) * pd_dtype_size(t->dtype);
  pd_buf out;
  pd_buf_init(&out);
  if (!h.oom) {
    uint8_t magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(h.len & 0xff),
                         (uint8_t)(h.len >> 8)};
    pd_buf_append(&out, magic, sizeof magic);
    pd_buf_append(&out, h.data, h.len);
    if (data_len) pd_buf_append(&out, pd_tensor_data(t), data_len);
  }
  pd_status st;
  if (h.oom || out.oom)
    st = pd_error_set(err, PD_ENOMEM, nowhere, "%s: out of memory", path);
  else
    st = pd_write_file_atomic(path, out.data, out.len, err);
  pd_buf_free(&h);
  pd_buf_free(&out);
  return st;
}
