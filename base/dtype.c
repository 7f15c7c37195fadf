/* dtype.c -- names and sizes of element types. */
#include "config.h"
#include "base/dtype.h"

#include <string.h>

static const struct {
  pd_dtype t;
  size_t size;
  const char *name;
  const char *alias;
} dtypes[] = {
    {PD_BOOL, 1, "bool", "bool"},       {PD_INT16, 2, "int16", "int16"},
    {PD_INT32, 4, "int32", "int32"},    {PD_INT64, 8, "int64", "int64"},
    {PD_FP16, 2, "float16", "fp16"},    {PD_FP32, 4, "float32", "fp32"},
    {PD_FP64, 8, "float64", "fp64"},    {PD_UINT8, 1, "uint8", "uint8"},
    {PD_INT8, 1, "int8", "int8"},
};

int pd_dtype_valid(int t) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if ((int)dtypes[i].t == t) return 1;
  return 0;
}

size_t pd_dtype_size(pd_dtype t) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].t == t) return dtypes[i].size;
  return 0;
}

const char *pd_dtype_name(pd_dtype t) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].t == t) return dtypes[i].name;
  return "?";
}

int pd_dtype_from_name(const char *name) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (strcmp(name, dtypes[i].name) == 0 || strcmp(name, dtypes[i].alias) == 0)
      return (int)dtypes[i].t;
  return -1;
}
