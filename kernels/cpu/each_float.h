/* each_float.h -- instantiate a typed kernel template once per floating dtype the CPU backend
 * computes in: float (f32) and double (f64); each_type.h's counterpart for the kernels that have
 * no integer instances. Define PD_KCPU_TEMPLATE as the template's path (a string) and include
 * this file; the template sees T, TN and T_FLOAT (1), and #undefs them at its end; this file
 * #undefs PD_KCPU_TEMPLATE. */
#ifndef PD_KCPU_TEMPLATE
#error "define PD_KCPU_TEMPLATE before including kernels/cpu/each_float.h"
#endif

#define T float
#define TN f32
#define T_FLOAT 1
#include PD_KCPU_TEMPLATE
#define T double
#define TN f64
#define T_FLOAT 1
#include PD_KCPU_TEMPLATE
#undef PD_KCPU_TEMPLATE
