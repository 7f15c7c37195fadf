/* each_type.h -- instantiate a typed kernel template once per numeric dtype the CPU backend
 * computes in: float (f32), double (f64), int32_t (i32), int64_t (i64). Define PD_KCPU_TEMPLATE
 * as the template's path (a string) and include this file; the template sees T (the element
 * type), TN (its suffix for function names), T_FLOAT (1 for floating point) and, for the integer
 * types, TU (the unsigned type of the same width, for wrap-around arithmetic). The template
 * #undefs T, TN and T_FLOAT at its end; this file #undefs TU and PD_KCPU_TEMPLATE. */
#ifndef PD_KCPU_TEMPLATE
#error "define PD_KCPU_TEMPLATE before including kernels/cpu/each_type.h"
#endif

#define T float
#define TN f32
#define T_FLOAT 1
#include PD_KCPU_TEMPLATE
#define T double
#define TN f64
#define T_FLOAT 1
#include PD_KCPU_TEMPLATE
#define T int32_t
#define TN i32
#define TU uint32_t
#define T_FLOAT 0
#include PD_KCPU_TEMPLATE
#undef TU
#define T int64_t
#define TN i64
#define TU uint64_t
#define T_FLOAT 0
#include PD_KCPU_TEMPLATE
#undef TU
#undef PD_KCPU_TEMPLATE
