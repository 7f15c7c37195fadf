/* dtype.h -- element types of tensors. The numbering is PaddlePaddle Fluid's VarType.Type, so a
 * ProgramDesc stores these values as they are. */
#ifndef PD_DTYPE_H
#define PD_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
  PD_BF16 = 22, /* bfloat16: the high half of an fp32 (Paddle's VarType BF16) */
} pd_dtype;

/* Bytes per element; 0 for a value that is not a dtype. */
size_t pd_dtype_size(pd_dtype t);
/* "float32", "int64", ...; "?" for a value that is not a dtype. */
const char *pd_dtype_name(pd_dtype t);
/* Parse a pdlang dtype name (float32/fp32, float64/fp64, int32, int64, bool, ...); -1 if unknown. */
int pd_dtype_from_name(const char *name);
/* 1 for a value that is one of the dtypes above. */
int pd_dtype_valid(int t);

/* The most bytes a tensor can take: 2^48 (256 TiB), what the 48-bit virtual addresses of
 * today's 64-bit processors reach (x86-64 with 4-level paging, AArch64). A tensor of a shape
 * known when a script compiles is refused there when it would take more (lang/compile.c). */
#define PD_MAX_TENSOR_BYTES (UINT64_C(1) << 48)
/* Whether a tensor of dtype t and the known shape dims[0..nd) (every dim >= 0) can exist: its
 * element count fits int64 and its bytes PD_MAX_TENSOR_BYTES. *bytes (may be NULL) receives
 * the bytes, or UINT64_MAX when the count overflows. A shape with an unknown (negative) dim,
 * or a t that is not a dtype, fits (nothing is known yet). */
bool pd_shape_fits(pd_dtype t, int nd, const int64_t *dims, uint64_t *bytes);

/* A floating-point dtype: FP16, BF16, FP32 or FP64 (what may carry a gradient, what a float
 * attribute or literal may become). */
static inline bool pd_dtype_is_float(pd_dtype t) {
  return t == PD_FP16 || t == PD_BF16 || t == PD_FP32 || t == PD_FP64;
}
/* A floating-point dtype the kernels compute in: FP32 or FP64 (FP16 and BF16 are stored, not
 * computed: the products of mixed precision take fp32 values rounded to them). */
static inline bool pd_dtype_is_kernel_float(pd_dtype t) { return t == PD_FP32 || t == PD_FP64; }

/* ---- The 16-bit floats, as their bits (uint16_t): conversions from fp32 round to nearest,
 * ties to even, as IEEE does (and as x86's vcvtne2ps2bf16 / vcvtps2ph); NaN stays NaN (quiet),
 * an fp32 past fp16's range becomes +-inf, one below it an fp16 denormal or 0. Exact the other
 * way. */
static inline uint16_t pd_bf16_from_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline float pd_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
/* f rounded to bf16 and back (what a bf16 product's operand is). */
static inline float pd_bf16_round(float f) { return pd_bf16_to_f32(pd_bf16_from_f32(f)); }

uint16_t pd_fp16_from_f32(float f);
float pd_fp16_to_f32(uint16_t h);
static inline float pd_fp16_round(float f) { return pd_fp16_to_f32(pd_fp16_from_f32(f)); }

#endif /* PD_DTYPE_H */
