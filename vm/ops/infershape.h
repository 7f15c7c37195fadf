/* infershape.h -- what compile-time shape functions are written with: a fixed-size dims value,
 * access to the op's input vars, output vars and attributes through its pd_infer_ctx, shared
 * rules (axis normalisation, Fluid's elementwise broadcasting), error reporting, and the
 * prototypes of the shape functions named in vm/oplist.h (pd_infer_<infer>).
 *
 * Used by vm/ops/ops.c, vm/ops/ops_grad.c and the shape functions in the family files of
 * vm/ops/; the compiler itself only needs vm/ops/ops.h. Nothing here allocates except pd_infer_set_out (through
 * pd_var_set_shape) and pd_infer_fail (the error message). */
#ifndef PD_INFERSHAPE_H
#define PD_INFERSHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"
#include "base/dtype.h"
#include "vm/ops/ops.h"
#include "vm/ir/program.h"

/* A shape as shape functions see it: n dims (-1: rank unknown), each -1 when unknown; at most
 * PD_MAX_RANK (vm/ir/program.h) of them. */
typedef struct pd_infer_dims {
  int n;
  int64_t d[PD_MAX_RANK];
} pd_infer_dims;

/* Room for pd_infer_dims_str of any shape: 9 x ("-9223372036854775808" + ", ") + "[]" + NUL. */
#define PD_DIMS_BUF 208

/* "[-1, 784]"; "[]" for rank 0; "[?]" for an unknown rank. Returns buf. */
const char *pd_infer_dims_str(const pd_infer_dims *d, char buf[PD_DIMS_BUF]);
/* "[1, 2, 3]" for any list of integers, cut short with "..." past PD_LIST_BUF. Returns buf. */
#define PD_LIST_BUF 256
const char *pd_infer_ints_str(const int64_t *v, int n, char buf[PD_LIST_BUF]);
/* The number of elements, or -1 when the rank or any dim is unknown. */
int64_t pd_infer_dims_numel(const pd_infer_dims *d);
/* a + b and a * b of two dims; -1 (unknown) when either is unknown or the result would not fit
 * in int64 (shapes that large fail at run time, not here). */
int64_t pd_infer_dim_add(int64_t a, int64_t b);
int64_t pd_infer_dim_mul(int64_t a, int64_t b);
/* Two dims may be equal at run time: equal, or either unknown. */
bool pd_infer_dim_compatible(int64_t a, int64_t b);
/* The better-known of two compatible dims. */
int64_t pd_infer_dim_merge(int64_t a, int64_t b);
/* A dims value of rank n with every dim -1 (n -1: unknown rank). */
pd_infer_dims pd_infer_dims_unknown(int n);

/* Record "<op type>: <message>" at the op's source location in c->err; returns st. */
pd_status pd_infer_fail(pd_infer_ctx *c, pd_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* How many vars the op binds to an input/output slot: 0 when the slot is absent or bound only to
 * PD_EMPTY_VAR_NAME (Fluid's placeholder for "no var"), as Fluid's HasInput sees it. */
int pd_infer_nin(const pd_infer_ctx *c, const char *slot);
int pd_infer_nout(const pd_infer_ctx *c, const char *slot);

/* The i-th var bound to input `slot` and its dims (either out-pointer may be NULL). Vars are
 * looked up as pd_block_find_var_visible does (the op's block, its parents, and for a gradient
 * block the forward blocks). Fails with PD_EINVAL when the op binds no var there, PD_ENOTFOUND
 * when the var is not declared, PD_EUNSUPPORTED when it has more than PD_MAX_RANK dims. */
pd_status pd_infer_in(pd_infer_ctx *c, const char *slot, int i, const pd_var_desc **var,
                      pd_infer_dims *dims);

/* Give the i-th var bound to output `slot` its dtype, dims and LoD level. A no-op when the op
 * does not bind that output (dispensable outputs) or binds it to PD_EMPTY_VAR_NAME; PD_ENOTFOUND
 * when the var is not declared; PD_ENOMEM. */
pd_status pd_infer_set_out(pd_infer_ctx *c, const char *slot, int i, const pd_infer_dims *dims,
                           pd_dtype dtype, int lod_level);

/* Attribute values; an attribute the op does not set reads as its default in the def. */
int64_t pd_infer_attr_int(const pd_infer_ctx *c, const char *name);   /* INT, LONG, BOOLEAN */
bool pd_infer_attr_bool(const pd_infer_ctx *c, const char *name);
double pd_infer_attr_float(const pd_infer_ctx *c, const char *name);  /* FLOAT, FLOAT64 */
const char *pd_infer_attr_str(const pd_infer_ctx *c, const char *name); /* never NULL */
/* Number of elements of a list attribute (any list type). */
int pd_infer_attr_len(const pd_infer_ctx *c, const char *name);
/* Copy up to cap elements of an integer list attribute (INTS, LONGS, BOOLEANS) to out; returns
 * the list's length, which may exceed cap. */
int pd_infer_attr_ints(const pd_infer_ctx *c, const char *name, int64_t *out, int cap);
/* Element i (0 <= i < pd_infer_attr_len) of an integer list attribute, for lists of any length. */
int64_t pd_infer_attr_ints_at(const pd_infer_ctx *c, const char *name, int i);
/* An integer list attribute formatted like pd_infer_ints_str ("[0, 2, 5]"). Returns buf. */
const char *pd_infer_attr_ints_str(const pd_infer_ctx *c, const char *name, char buf[PD_LIST_BUF]);

/* A dtype-valued attribute (fill_constant's dtype, cast's out_dtype, ...); an error when its value
 * is not a data type. */
pd_status pd_infer_attr_dtype(pd_infer_ctx *c, const char *name, pd_dtype *dtype);

/* Normalise an axis (attribute `attr` = value) of a tensor of rank d->n, named `slot` in the
 * message: -rank..rank-1 becomes 0..rank-1 in *axis; anything else is an error naming the
 * allowed range ("softmax: axis 2 is out of range for X [-1, 10] (expected -2 to 1)"). */
pd_status pd_infer_axis(pd_infer_ctx *c, const char *attr, int64_t value, const char *slot,
                        const pd_infer_dims *d, int *axis);

/* Fluid's elementwise broadcasting: the lower-rank operand lines up with the other's dims from
 * `axis` on (-1: aligned at the end, as numpy does); each pair of dims must be equal or have a 1.
 * Unknown dims broadcast against anything. Either operand may be the larger. */
pd_status pd_infer_broadcast(pd_infer_ctx *c, const pd_infer_dims *x, const pd_infer_dims *y,
                             int axis, pd_infer_dims *out);
/* The same rule, numpy's alignment (at the end), without a message: false when x and y (both of
 * known rank) do not broadcast. */
bool pd_infer_broadcast_dims(const pd_infer_dims *x, const pd_infer_dims *y, pd_infer_dims *out);

/* Two inputs must hold the same element type ("X has dtype float32 but Y has dtype int64"). */
pd_status pd_infer_same_dtype(pd_infer_ctx *c, const char *a, pd_dtype ta, const char *b,
                              pd_dtype tb);

/* Out takes X's shape and LoD; its dtype is X's, or `dtype` when that is >= 0. */
pd_status pd_infer_same_as_x(pd_infer_ctx *c, int dtype);

/* The sub_block attribute names a block of the program (not the global one) whose parent is the
 * op's block. */
pd_status pd_infer_check_sub_block(pd_infer_ctx *c);

/* The shape functions, one per `infer` name in the op list. */
#define PD_OPK(name, flags, infer, inputs, outputs, attrs, kernel) \
  pd_status pd_infer_##infer(pd_infer_ctx *c);
#include "vm/oplist.h"
#undef PD_OPK

#endif /* PD_INFERSHAPE_H */
