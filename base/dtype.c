/* dtype.c -- names and sizes of element types; the fp16 conversions. */
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
    {PD_INT8, 1, "int8", "int8"},       {PD_BF16, 2, "bfloat16", "bf16"},
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

bool pd_shape_fits(pd_dtype t, int nd, const int64_t *dims, uint64_t *bytes) {
  uint64_t n = pd_dtype_size(t);
  if (bytes) *bytes = 0;
  for (int i = 0; i < nd; i++)
    if (dims[i] < 0) return true;
  if (!n) return true;
  uint64_t count = 1;
  bool over = false;
  for (int i = 0; i < nd; i++) {
    uint64_t d = (uint64_t)dims[i];
    if (d == 0) return true;
    if (!over && count > (uint64_t)INT64_MAX / d) over = true;
    else if (!over) count *= d;
  }
  if (over) {
    if (bytes) *bytes = UINT64_MAX;
    return false;
  }
  if (bytes) *bytes = count > UINT64_MAX / n ? UINT64_MAX : count * n;
  return count <= PD_MAX_TENSOR_BYTES / n;
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

uint16_t pd_fp16_from_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
  if (a < 0x38800000u) { /* below 2^-14: a denormal (or 0), in units of 2^-24 */
    if (a < 0x33000000u) return (uint16_t)sign; /* at most 2^-25: rounds to 0 */
    /* |f| = mant 2^(E - 150), E the exponent field: in units of 2^-24, mant >> (126 - E) */
    uint32_t mant = (a & 0x7fffffu) | 0x800000u, shift = 126 - (a >> 23);
    uint32_t half = 1u << (shift - 1), rest = mant & ((1u << shift) - 1u), q = mant >> shift;
    if (rest > half || (rest == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  a += 0xfffu + ((a >> 13) & 1u) - ((uint32_t)(127 - 15) << 23);
  return (uint16_t)(sign | (a >> 13));
}

float pd_fp16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
  if (e == 0x1f) {
    u = sign | 0x7f800000u | (m << 13);
  } else if (e) {
    u = sign | ((e + 127 - 15) << 23) | (m << 13);
  } else { /* denormal or 0: m 2^-24 */
    float f = (float)m * 0x1p-24f;
    memcpy(&u, &f, sizeof u);
    u |= sign;
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
