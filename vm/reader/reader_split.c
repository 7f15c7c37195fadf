/* reader_split.c -- a validation split of a dataset: a seeded choice of a fraction of its
 * samples (the held-out part) and the rest, each kept in the file's order (pd_dataset_split,
 * reader.h). The readers' `valid = F` and split = "valid" (train/train.c) use it. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "vm/reader/reader.h"
#include "vm/reader/reader_int.h"

int64_t pd_dataset_split_count(int64_t n, double fraction) {
  int64_t k = (int64_t)llround(fraction * (double)n);
  if (k < 1) k = 1;
  if (k > n - 1) k = n - 1;
  return k;
}

pd_status pd_dataset_split(const pd_dataset *d, double fraction, uint64_t seed, bool held_out,
                           pd_dataset **out, pd_error *err) {
  *out = NULL;
  int64_t n = pd_dataset_size(d);
  if (!(fraction > 0 && fraction < 1))
    return pd_error_set(err, PD_EINVAL, (pd_loc){0},
                        "a validation split takes a fraction of the samples in (0, 1), not %g",
                        fraction);
  if (n < 2)
    return pd_error_set(err, PD_EINVAL, (pd_loc){0},
                        "cannot split %lld sample%s into training and validation parts",
                        (long long)n, n == 1 ? "" : "s");
  int64_t k = pd_dataset_split_count(n, fraction), m = held_out ? k : n - k;
  int64_t *perm = pd_malloc(sizeof *perm * (size_t)n);
  bool *in = pd_calloc((size_t)n, sizeof *in);
  int64_t *pick = pd_malloc(sizeof *pick * (size_t)m);
  int64_t *lens = pd_malloc(sizeof *lens * (size_t)m);
  pd_dataset *o = NULL;
  pd_status st = PD_OK;
  if (!perm || !in || !pick || !lens) {
    st = pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
    goto out;
  }
  /* The held-out samples: the first k of the permutation of (seed, epoch 0) of another stream
   * than the batcher's shuffling of the same seed. */
  pd_reader_perm(perm, n, seed ^ 0x5a17c0ffee5eedull, 0);
  for (int64_t i = 0; i < k; i++) in[perm[i]] = true;
  int64_t c = 0;
  for (int64_t i = 0; i < n; i++)
    if (in[i] == held_out) pick[c++] = i;
  if ((st = pd_dataset_new(m, &o, err))) goto out;
  for (int f = 0; f < pd_dataset_nfields(d) && !st; f++) {
    int64_t dims[PD_TENSOR_MAX_DIMS];
    int nd = pd_dataset_field_shape(d, f, dims);
    pd_dtype dt = pd_dataset_field_dtype(d, f), held = pd_dataset_field_stored_dtype(d, f);
    size_t row = pd_dtype_size(held);
    for (int i = 0; i < nd; i++) row *= (size_t)dims[i];
    const char *src = pd_dataset_field_data(d, f);
    const int64_t *off = pd_dataset_field_offsets(d, f);
    char *dst;
    if (pd_dataset_field_is_seq(d, f)) {
      for (int64_t i = 0; i < m; i++) lens[i] = off[pick[i] + 1] - off[pick[i]];
      st = pd_dataset_add_seq_field(o, pd_dataset_field_name(d, f), dt, nd, dims, lens,
                                    (void **)&dst, err);
      for (int64_t i = 0; i < m && !st; i++) {
        size_t nb = (size_t)lens[i] * row;
        memcpy(dst, src + (size_t)off[pick[i]] * row, nb);
        dst += nb;
      }
    } else {
      st = held != dt ? pd_dataset_add_unit_bytes_field(o, pd_dataset_field_name(d, f), nd, dims,
                                                        (void **)&dst, err)
                      : pd_dataset_add_field(o, pd_dataset_field_name(d, f), dt, nd, dims,
                                             (void **)&dst, err);
      for (int64_t i = 0; i < m && !st; i++)
        memcpy(dst + (size_t)i * row, src + (size_t)pick[i] * row, row);
    }
  }
out:
  pd_free(perm);
  pd_free(in);
  pd_free(pick);
  pd_free(lens);
  if (st) pd_dataset_free(o);
  else *out = o;
  return st;
}
