/* api_data.c -- the data sets a host program gives a state (pd_state_set_dataset): copied into
 * in-memory datasets under their names, and copied again for each host("name") reader that an
 * action opens (the action frees its copy, and the host may replace a data set between runs). */
#include "config.h"
#include "api/api_data.h"

#include <string.h>

#include "base/dtype.h"

static const pd_loc nowhere = {0};

static int find(const pd_api_datasets *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->names[i], name) == 0) return i;
  return -1;
}

/* A new dataset holding a copy of every field of d (sequence fields with their lengths). */
static pd_status copy_dataset(const pd_dataset *d, pd_dataset **out, pd_error *err) {
  pd_dataset *c = NULL;
  int64_t n = pd_dataset_size(d), *len = NULL;
  pd_status st = pd_dataset_new(n, &c, err);
  for (int f = 0; !st && f < pd_dataset_nfields(d); f++) {
    int64_t dims[PD_TENSOR_MAX_DIMS];
    int nd = pd_dataset_field_shape(d, f, dims);
    const int64_t *off = pd_dataset_field_offsets(d, f);
    void *data;
    size_t bytes = pd_dtype_size(pd_dataset_field_dtype(d, f));
    for (int k = 0; k < nd; k++) bytes *= (size_t)dims[k];
    if (off) {   /* the lengths from the offsets */
      if (!len && !(len = pd_malloc((size_t)n * sizeof *len))) {
        st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
        break;
      }
      for (int64_t i = 0; i < n; i++) len[i] = off[i + 1] - off[i];
      st = pd_dataset_add_seq_field(c, pd_dataset_field_name(d, f), pd_dataset_field_dtype(d, f),
                                    nd, dims, len, &data, err);
      bytes *= (size_t)off[n];
    } else {
      st = pd_dataset_add_field(c, pd_dataset_field_name(d, f), pd_dataset_field_dtype(d, f), nd,
                                dims, &data, err);
      bytes *= (size_t)n;
    }
    if (!st && bytes) memcpy(data, pd_dataset_field_data(d, f), bytes);
  }
  pd_free(len);
  if (st) {
    pd_dataset_free(c);
    return st;
  }
  *out = c;
  return PD_OK;
}

pd_status pd_api_datasets_set(pd_api_datasets *l, const char *name, int nfields,
                              const char *const *names, const pd_tensor_info *fields,
                              pd_error *err) {
  if (!name || !*name)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_set_dataset: the data set needs a name");
  if (nfields < 1 || nfields > PD_DATASET_MAX_FIELDS || !names || !fields)
    return pd_error_set(err, PD_EINVAL, nowhere,
                        "pd_state_set_dataset: '%s' needs 1 to %d fields with their names and "
                        "values, not %d", name, PD_DATASET_MAX_FIELDS, nfields);
  int64_t n = -1;
  for (int i = 0; i < nfields; i++) {
    const pd_tensor_info *t = &fields[i];
    const char *fname = names[i] ? names[i] : "(null)";
    if (!names[i] || !*names[i])
      return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_set_dataset: field %d of '%s' has "
                          "no name", i, name);
    if (!pd_dtype_valid(t->dtype) || t->dtype == PD_DTYPE_FLOAT16)
      return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_set_dataset: field '%s' of '%s': "
                          "%d is not a dtype a data set holds (PD_DTYPE_FLOAT32, _INT64, ...)",
                          fname, name, t->dtype);
    if (t->ndims < 1 || t->ndims > PD_STATE_MAX_DIMS)
      return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_set_dataset: field '%s' of '%s' "
                          "has rank %d; its dims[0] counts the samples, so rank 1 to %d", fname,
                          name, t->ndims, PD_STATE_MAX_DIMS);
    uint64_t elems = 1;
    for (int k = 0; k < t->ndims; k++) {
      if (t->dims[k] < 1 || (uint64_t)t->dims[k] > ((uint64_t)1 << 40) / elems)
        return pd_error_set(err, PD_ESHAPE, nowhere, "pd_state_set_dataset: field '%s' of '%s': "
                            "dim %d is %lld, not a size >= 1", fname, name, k,
                            (long long)t->dims[k]);
      elems *= (uint64_t)t->dims[k];
    }
    if (n >= 0 && t->dims[0] != n)
      return pd_error_set(err, PD_ESHAPE, nowhere, "pd_state_set_dataset: field '%s' of '%s' has "
                          "%lld samples (dims[0]) but '%s' has %lld", fname, name,
                          (long long)t->dims[0], names[0], (long long)n);
    n = t->dims[0];
    if (!t->data)
      return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_set_dataset: field '%s' of '%s' has "
                          "no data", fname, name);
    if (t->nbytes && t->nbytes != elems * pd_dtype_size((pd_dtype)t->dtype))
      return pd_error_set(err, PD_ESHAPE, nowhere, "pd_state_set_dataset: field '%s' of '%s' has "
                          "nbytes %zu, but its dims and dtype make %llu", fname, name, t->nbytes,
                          (unsigned long long)(elems * pd_dtype_size((pd_dtype)t->dtype)));
  }
  pd_dataset *d = NULL;
  pd_status st = pd_dataset_new(n, &d, err);
  for (int i = 0; !st && i < nfields; i++) {
    const pd_tensor_info *t = &fields[i];
    void *data;
    st = pd_dataset_add_field(d, names[i], (pd_dtype)t->dtype, t->ndims - 1, t->dims + 1, &data,
                              err);
    if (!st) {
      size_t bytes = pd_dtype_size((pd_dtype)t->dtype);
      for (int k = 0; k < t->ndims; k++) bytes *= (size_t)t->dims[k];
      memcpy(data, t->data, bytes);
    }
  }
  if (st) {
    pd_dataset_free(d);
    pd_error_prefix(err, "pd_state_set_dataset: '%s'", name);  /* name the call */
    return st;
  }
  int at = find(l, name);
  if (at >= 0) {   /* replace */
    pd_dataset_free(l->sets[at]);
    l->sets[at] = d;
    return PD_OK;
  }
  char *copy = pd_strdup(name);
  if (!copy || PD_GROW(l->names, l->names_cap, (size_t)l->n + 1) ||
      PD_GROW(l->sets, l->sets_cap, (size_t)l->n + 1)) {
    pd_free(copy);
    pd_dataset_free(d);
    return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  }
  l->names[l->n] = copy;
  l->sets[l->n++] = d;
  return PD_OK;
}

pd_status pd_api_datasets_add_seq(pd_api_datasets *l, const char *name, const char *field,
                                  int64_t nseq, const int64_t *lengths,
                                  const pd_tensor_info *t, pd_error *err) {
  if (!name || !*name || !field || !*field || !t || !lengths)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_add_sequences: needs the data set's "
                        "name, the field's name, the lengths and the values");
  if (!pd_dtype_valid(t->dtype) || t->dtype == PD_DTYPE_FLOAT16)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_add_sequences: field '%s' of '%s': "
                        "%d is not a dtype a data set holds", field, name, t->dtype);
  if (t->ndims < 1 || t->ndims > PD_STATE_MAX_DIMS || nseq < 1)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_add_sequences: field '%s' of '%s' "
                        "needs nseq >= 1 (not %lld) and values of rank 1 to %d (not %d)", field,
                        name, (long long)nseq, PD_STATE_MAX_DIMS, t->ndims);
  int at = find(l, name);
  if (at >= 0 && pd_dataset_size(l->sets[at]) != nseq)
    return pd_error_set(err, PD_ESHAPE, nowhere, "pd_state_add_sequences: '%s' has %lld samples, "
                        "so field '%s' needs as many sequences, not %lld", name,
                        (long long)pd_dataset_size(l->sets[at]), field, (long long)nseq);
  int64_t total = 0;
  for (int64_t i = 0; i < nseq; i++) {
    if (lengths[i] < 0 || lengths[i] > ((int64_t)1 << 40) - total)
      return pd_error_set(err, PD_ESHAPE, nowhere, "pd_state_add_sequences: field '%s' of '%s': "
                          "sequence %lld has length %lld", field, name, (long long)i,
                          (long long)lengths[i]);
    total += lengths[i];
  }
  if (t->dims[0] != total)
    return pd_error_set(err, PD_ESHAPE, nowhere, "pd_state_add_sequences: field '%s' of '%s': "
                        "the lengths add up to %lld rows but the values have %lld (dims[0])",
                        field, name, (long long)total, (long long)t->dims[0]);
  size_t row = pd_dtype_size((pd_dtype)t->dtype);
  for (int k = 1; k < t->ndims; k++) {
    if (t->dims[k] < 1 || (uint64_t)t->dims[k] > ((uint64_t)1 << 40) / row)
      return pd_error_set(err, PD_ESHAPE, nowhere, "pd_state_add_sequences: field '%s' of '%s': "
                          "dim %d is %lld, not a size >= 1", field, name, k,
                          (long long)t->dims[k]);
    row *= (size_t)t->dims[k];
  }
  if (total && !t->data)
    return pd_error_set(err, PD_EINVAL, nowhere, "pd_state_add_sequences: field '%s' of '%s' "
                        "has no data", field, name);
  if (t->nbytes && t->nbytes != row * (size_t)total)
    return pd_error_set(err, PD_ESHAPE, nowhere, "pd_state_add_sequences: field '%s' of '%s' "
                        "has nbytes %zu, but its dims and dtype make %zu", field, name, t->nbytes,
                        row * (size_t)total);
  /* Work on a copy (or a new data set), so that a failure leaves the list as it was. */
  pd_dataset *d = NULL;
  pd_status st = at >= 0 ? copy_dataset(l->sets[at], &d, err) : pd_dataset_new(nseq, &d, err);
  void *data = NULL;
  if (!st)
    st = pd_dataset_add_seq_field(d, field, (pd_dtype)t->dtype, t->ndims - 1, t->dims + 1,
                                  lengths, &data, err);
  if (!st && total) memcpy(data, t->data, row * (size_t)total);
  char *copy = NULL;
  if (!st && at < 0 &&
      (!(copy = pd_strdup(name)) || PD_GROW(l->names, l->names_cap, (size_t)l->n + 1) ||
       PD_GROW(l->sets, l->sets_cap, (size_t)l->n + 1)))
    st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  if (st) {
    pd_free(copy);
    pd_dataset_free(d);
    return st;
  }
  if (at >= 0) {
    pd_dataset_free(l->sets[at]);
    l->sets[at] = d;
  } else {
    l->names[l->n] = copy;
    l->sets[l->n++] = d;
  }
  return PD_OK;
}

pd_status pd_api_datasets_copy(void *ctx, const char *name, pd_dataset **out, pd_error *err) {
  *out = NULL;
  const pd_api_datasets *l = ctx;
  int at = l ? find(l, name) : -1;
  if (at >= 0) return copy_dataset(l->sets[at], out, err);
  pd_buf b;
  pd_buf_init(&b);
  for (int i = 0; l && i < l->n; i++) pd_buf_printf(&b, "%s'%s'", i ? ", " : "", l->names[i]);
  pd_status st = pd_error_set(err, PD_ENOTFOUND, nowhere,
                              "host: no data set named '%s' (the host program gives them with "
                              "pd_state_set_dataset; %s%s)", name,
                              l && l->n ? "this state has " : "it gave none",
                              b.data ? b.data : "");
  pd_buf_free(&b);
  return st;
}

void pd_api_datasets_free(pd_api_datasets *l) {
  for (int i = 0; i < l->n; i++) {
    pd_free(l->names[i]);
    pd_dataset_free(l->sets[i]);
  }
  pd_free(l->names);
  pd_free(l->sets);
  memset(l, 0, sizeof *l);
}
