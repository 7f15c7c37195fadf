/* each_float.h -- instantiate a typed kernel template once per floating dtype the CPU backend
 * computes in: float (f32) and double (f64); each_type.h's counterpart for the kernels that have
 * no integer instances. Define PD_KCPU_TEMPLATE as the template's path (a string) and include
 * this file; the template sees T, TN and T_FLOAT (1), and #undefs T and TN at its end. With
 * PD_KCPU_EACH_SUFFIX defined (avx512, say), TN is f32_avx512 and f64_avx512: a second set of
 * instances, compiled under a target attribute the file sets around the include. This file
 * #undefs PD_KCPU_TEMPLATE and PD_KCPU_EACH_SUFFIX. */
#ifndef PD_KCPU_TEMPLATE
#error "define PD_KCPU_TEMPLATE before including kernels/cpu/each_float.h"
#endif
#ifdef PD_KCPU_EACH_SUFFIX
#define PD_KCPU_EACH_TN_(t) PD_KCPU_CAT(t, PD_KCPU_EACH_SUFFIX)
#else
#define PD_KCPU_EACH_TN_(t) t
#endif

#define T float
#define TN PD_KCPU_EACH_TN_(f32)
#define T_FLOAT 1
#include PD_KCPU_TEMPLATE
#undef T_FLOAT
#define T double
#define TN PD_KCPU_EACH_TN_(f64)
#define T_FLOAT 1
#include PD_KCPU_TEMPLATE
#undef T_FLOAT
#undef PD_KCPU_EACH_TN_
#undef PD_KCPU_EACH_SUFFIX
#undef PD_KCPU_TEMPLATE
