/* dtype.h -- element types of tensors. The numbering is PaddlePaddle Fluid's VarType.Type, so a
 * ProgramDesc stores these values as they are. */
#ifndef PD_DTYPE_H
#define PD_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum pd_dtype {
  PD_BOOL = 0,
  PD_INT16 = 1,
  PD_INT32 = 2,
  PD_INT64 = 3,
  PD_FP16 = 4,
  PD_FP32 = 5,
  PD_FP64 = 6,
  PD_UINT8 = 20,
  PD_INT8 = 21,
} pd_dtype;

/* Bytes per element; 0 for a value that is not a dtype. */
size_t pd_dtype_size(pd_dtype t);
/* "float32", "int64", ...; "?" for a value that is not a dtype. */
const char *pd_dtype_name(pd_dtype t);
/* Parse a pdlang dtype name (float32/fp32, float64/fp64, int32, int64, bool, ...); -1 if unknown. */
int pd_dtype_from_name(const char *name);
/* 1 for a value that is one of the dtypes above. */
int pd_dtype_valid(int t);

/* A floating-point dtype: FP16, FP32 or FP64 (what may carry a gradient, what a float
 * attribute or literal may become). */
static inline bool pd_dtype_is_float(pd_dtype t) {
  return t == PD_FP16 || t == PD_FP32 || t == PD_FP64;
}
/* A floating-point dtype the kernels compute in: FP32 or FP64 (FP16 is stored, not computed). */
static inline bool pd_dtype_is_kernel_float(pd_dtype t) { return t == PD_FP32 || t == PD_FP64; }

#endif /* PD_DTYPE_H */
