/* api_data.h -- private to the C library (api/): the data sets a host program gives a state
 * (pd_state_set_dataset), which a script's host("name") readers read: a list of named
 * in-memory datasets (vm/reader/reader.h), and the runner's hook that hands a reader a copy.
 *
 * Ownership: the list owns its datasets and names (pd_api_datasets_free); the values given to
 * pd_api_datasets_set are copied; a dataset pd_api_datasets_copy makes is the caller's. */
#ifndef PD_API_DATA_H
#define PD_API_DATA_H

#include "base/base.h"
#include "include/pdlang.h"
#include "vm/reader/reader.h"

typedef struct pd_api_datasets {
  char **names;
  pd_dataset **sets;
  int n;
  size_t names_cap, sets_cap;
} pd_api_datasets;

/* Set (or replace) the data set `name` from nfields fields named names[i] with values
 * fields[i] (dims[0] = the samples, the same for every field). PD_EINVAL for a bad name,
 * field or dtype, PD_ESHAPE when the fields' sample counts differ or are 0, PD_ENOMEM; the
 * message says which field. On failure the list is as it was. */
pd_status pd_api_datasets_set(pd_api_datasets *l, const char *name, int nfields,
                              const char *const *names, const pd_tensor_info *fields,
                              pd_error *err);
/* Add the sequence field `field` to the data set `name` (made when absent): nseq sequences of
 * lengths[i] rows of values (dims[0] = the total rows). Errors as pd_api_datasets_set. */
pd_status pd_api_datasets_add_seq(pd_api_datasets *l, const char *name, const char *field,
                                  int64_t nseq, const int64_t *lengths,
                                  const pd_tensor_info *values, pd_error *err);
/* The runner's hook (pd_run_options.host_dataset; ctx is the list): a copy of the data set
 * `name`, or PD_ENOTFOUND with a message listing the names there are. */
pd_status pd_api_datasets_copy(void *ctx, const char *name, pd_dataset **out, pd_error *err);
void pd_api_datasets_free(pd_api_datasets *l);

#endif /* PD_API_DATA_H */
