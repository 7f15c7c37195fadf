/* kern.h -- the one set of helpers every op kernel of vm/ops/ uses on top of the executor's
 * pd_ctx_* calls (vm/run/exec.h): fetching inputs and outputs with one message per failure,
 * dtype and shape checks, resizing outputs, reading inputs that an output aliases, scratch
 * memory, scalars and axes. Internal to vm/ops: all static inline, so nothing here is a symbol
 * of the library.
 *
 * Conventions the kernels follow:
 *  - Semantics, names, slots and attributes are Fluid's. The numbers come from the backend
 *    (ctx->k, kernels/kernels.h); the kernels check dtypes and shapes at run time (feeds may
 *    disagree with the declarations), shape every output exactly as the op's shape function
 *    promised, and carry LoD where Fluid does.
 *  - Gradient kernels (<op>_grad, vm/ops/ops_grad.c) read the forward inputs, the forward outputs
 *    and Out@GRAD, and write each X@GRAD that is bound (an unbound one is a gradient nobody
 *    needs), overwriting it, with X's shape and LoD.
 *  - Aliasing: an output may be the very variable of an input (x = relu(x); sum(X=[a, b], Out=a);
 *    the gradient of an in-place op, whose X@GRAD is its Out@GRAD; optimizers' ParamOut). A
 *    kernel that resizes such an output first reads the input through a second reference to its
 *    storage (unalias): resizing the output then gives it fresh storage and the input stays
 *    readable; storage shared with other tensors (a feed) is never written through.
 *    Elementwise kernels compute in place when the storage belongs to that variable alone.
 *
 * Every helper that fails has already put its message on ctx (pd_ctx_fail) and returns the
 * status: a kernel returns it as it is. */
#ifndef PD_OPS_KERN_H
#define PD_OPS_KERN_H

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/opkernels.h"

#define MAXD PD_TENSOR_MAX_DIMS
#define DIMS_BUF 224 /* "[...]" of up to PD_K_MAX_DIMS int64 dims */
#define MAX_HOLD 8

/* Run BODY with T the C type of the float dtype dt (fp32 or fp64; the caller checked). */
#define FLOAT_SWITCH(dt, ...) \
  do {                        \
    if ((dt) == PD_FP32) {    \
      typedef float T;        \
      __VA_ARGS__             \
    } else {                  \
      typedef double T;       \
      __VA_ARGS__             \
    }                         \
  } while (0)

/* ---- Small facts ---- */

/* The dtypes the kernels compute in floating point, and in integers. */
#define is_float pd_dtype_is_kernel_float
static inline bool is_int(pd_dtype t) { return t == PD_INT32 || t == PD_INT64; }

/* "[2, 3]" of a dims array into buf of n bytes (base/base.h), and a tensor's shape into a char
 * array buf (its size taken with sizeof). */
#define dims_str pd_dims_str
#define shape_str(t, buf) pd_dims_str((t)->ndims, (t)->dims, (buf), sizeof(buf))

/* A row stride for a GEMM operand: BLAS wants at least 1 even for an empty matrix. */
static inline int64_t ld(int64_t cols) { return cols > 0 ? cols : 1; }

static inline bool same_dims(int an, const int64_t *a, int bn, const int64_t *b) {
  if (an != bn) return false;
  for (int i = 0; i < an; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* The product of d[from..to). */
static inline int64_t prod(const int64_t *d, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= d[i];
  return p;
}

static inline pd_status nomem(const pd_exec_ctx *ctx) {
  return pd_ctx_fail(ctx, PD_ENOMEM, "out of memory");
}

/* ---- Inputs and outputs ---- */

static inline const char *in_name(const pd_exec_ctx *ctx, const char *slot, int i) {
  const char *n = pd_ctx_in_name(ctx, slot, i);
  return n ? n : "?";
}

/* Input `slot` (its i-th var) as a tensor with a value. *t is NULL when the slot binds no var
 * there, which is an error when `required`. A bound var holding something other than a tensor,
 * or a tensor without a value, is always an error. */
static inline pd_status in_at(const pd_exec_ctx *ctx, const char *slot, int i, bool required,
                              const pd_tensor **t) {
  *t = NULL;
  pd_variable *v = pd_ctx_in_var(ctx, slot, i);
  if (!v) return required ? pd_ctx_fail(ctx, PD_EINVAL, "input %s is missing", slot) : PD_OK;
  const pd_tensor *x = pd_ctx_in_at(ctx, slot, i);
  if (!x)
    return pd_ctx_fail(ctx, PD_ETYPE, "input %s (var '%s') does not hold a tensor", slot,
                       pd_var_name(v));
  if (!pd_tensor_initialized(x))
    return pd_ctx_fail(ctx, PD_ERUNTIME, "input %s (var '%s') has no value", slot,
                       pd_var_name(v));
  *t = x;
  return PD_OK;
}
static inline pd_status in1(const pd_exec_ctx *ctx, const char *slot, const pd_tensor **t) {
  return in_at(ctx, slot, 0, true, t);
}
static inline pd_status in_opt(const pd_exec_ctx *ctx, const char *slot, const pd_tensor **t) {
  return in_at(ctx, slot, 0, false, t);
}

/* An input that may also be bound to a var without a value (Fluid's optional tensors such as
 * ValueTensor or AxisTensor): the tensor, or NULL. Never an error. */
static inline const pd_tensor *in_if_set(const pd_exec_ctx *ctx, const char *slot, int i) {
  const pd_tensor *t = pd_ctx_in_at(ctx, slot, i);
  return t && pd_tensor_initialized(t) ? t : NULL;
}

/* Output `slot` (i-th var): NULL when not bound (a gradient nobody needs), an error when
 * required, or when the var holds something other than a tensor. */
static inline pd_status out_at(const pd_exec_ctx *ctx, const char *slot, int i, bool required,
                               pd_tensor **t) {
  *t = NULL;
  pd_variable *v = pd_ctx_out_var(ctx, slot, i);
  if (!v) return required ? pd_ctx_fail(ctx, PD_EINVAL, "output %s is missing", slot) : PD_OK;
  pd_tensor *o = pd_ctx_out_at(ctx, slot, i);
  if (!o)
    return pd_ctx_fail(ctx, PD_ETYPE, "output %s (var '%s') holds something other than a tensor",
                       slot, pd_var_name(v));
  *t = o;
  return PD_OK;
}
static inline pd_status out1(const pd_exec_ctx *ctx, const char *slot, pd_tensor **t) {
  return out_at(ctx, slot, 0, true, t);
}
static inline pd_status out_opt(const pd_exec_ctx *ctx, const char *slot, pd_tensor **t) {
  return out_at(ctx, slot, 0, false, t);
}

/* ---- dtype and shape checks, with messages naming the slot and its var ---- */

static inline pd_status want_float(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *t) {
  if (is_float(t->dtype)) return PD_OK;
  return pd_ctx_fail(ctx, PD_ETYPE, "%s (var '%s') has dtype %s; expected float32 or float64",
                     slot, in_name(ctx, slot, 0), pd_dtype_name(t->dtype));
}

static inline pd_status want_number(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *t) {
  if (is_float(t->dtype) || is_int(t->dtype)) return PD_OK;
  return pd_ctx_fail(ctx, PD_ETYPE,
                     "%s (var '%s') has dtype %s; expected float32, float64, int32 or int64",
                     slot, in_name(ctx, slot, 0), pd_dtype_name(t->dtype));
}

static inline pd_status want_same_dtype(const pd_exec_ctx *ctx, const char *sa,
                                        const pd_tensor *a, const char *sb, const pd_tensor *b) {
  if (a->dtype == b->dtype) return PD_OK;
  return pd_ctx_fail(ctx, PD_ETYPE, "%s (var '%s') has dtype %s but %s (var '%s') has dtype %s",
                     sa, in_name(ctx, sa, 0), pd_dtype_name(a->dtype), sb, in_name(ctx, sb, 0),
                     pd_dtype_name(b->dtype));
}

/* A gradient input must have the shape (element count) of the value it is the gradient of. */
static inline pd_status want_numel(const pd_exec_ctx *ctx, const char *gslot, const pd_tensor *g,
                                   int nd, const int64_t *dims, const char *of) {
  if (pd_tensor_numel(g) == pd_k_numel(nd, dims)) return PD_OK;
  char s1[DIMS_BUF], s2[DIMS_BUF];
  return pd_ctx_fail(ctx, PD_ESHAPE, "%s (var '%s') is %s but %s is %s", gslot,
                     in_name(ctx, gslot, 0), shape_str(g, s1), of, dims_str(nd, dims, s2, sizeof s2));
}

/* dOut (slot gslot) must have the very shape and dtype the forward output had. */
static inline pd_status want_grad_shape(const pd_exec_ctx *ctx, const char *gslot,
                                        const pd_tensor *g, int nd, const int64_t *dims,
                                        pd_dtype dt) {
  char s1[DIMS_BUF], s2[DIMS_BUF];
  if (!same_dims(g->ndims, g->dims, nd, dims))
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s is %s but the forward output was %s", gslot,
                       shape_str(g, s1), dims_str(nd, dims, s2, sizeof s2));
  if (g->dtype != dt)
    return pd_ctx_fail(ctx, PD_ETYPE, "%s holds %s but the forward output held %s", gslot,
                       pd_dtype_name(g->dtype), pd_dtype_name(dt));
  return PD_OK;
}

/* A backend status as an error at the op (the backend leaves no message). */
static inline pd_status k_check(const pd_exec_ctx *ctx, pd_status st, pd_dtype dt) {
  if (!st) return PD_OK;
  if (st == PD_EUNSUPPORTED)
    return pd_ctx_fail(ctx, PD_ETYPE, "dtype %s is not supported here", pd_dtype_name(dt));
  return pd_ctx_check(ctx, st, "kernel");
}

/* ---- Outputs and aliasing ---- */

/* Give out its dtype and shape; its LoD becomes lod's (NULL: none). When out is lod itself (an
 * in-place op) the LoD stays as it is. */
static inline pd_status resize(const pd_exec_ctx *ctx, pd_tensor *out, pd_dtype dt, int nd,
                               const int64_t *dims, const pd_tensor *lod) {
  if (out == lod) {
    pd_status st = pd_tensor_resize(out, dt, nd, dims);
    if (st == PD_ENOMEM) return nomem(ctx);
    return st ? pd_ctx_fail(ctx, st, "cannot make an output of rank %d", nd) : PD_OK;
  }
  pd_status st = pd_ctx_resize(ctx, out, dt, nd, dims);
  if (st) return st;
  if (lod && lod->nlod && pd_tensor_copy_lod(out, lod)) return nomem(ctx);
  return PD_OK;
}

static inline pd_status resize_like(const pd_exec_ctx *ctx, pd_tensor *out, const pd_tensor *like,
                                    const pd_tensor *lod) {
  return resize(ctx, out, like->dtype, like->ndims, like->dims, lod);
}

/* Second references to inputs that an output aliases; released at the kernel's end. */
typedef struct hold {
  int n;
  pd_tensor t[MAX_HOLD];
} hold;

static inline void hold_init(hold *h) { h->n = 0; }

static inline void hold_free(hold *h) {
  for (int i = 0; i < h->n; i++) pd_tensor_release(&h->t[i]);
  h->n = 0;
}

/* When output `out` is the tensor *in, read the input through a second reference to its storage
 * from here on (*in is redirected to it): resizing out then gives out new storage. The kernel
 * must resize out before writing it. */
static inline pd_status unalias(const pd_exec_ctx *ctx, hold *h, const pd_tensor *out,
                                const pd_tensor **in) {
  if (!out || !*in || out != *in) return PD_OK;
  if (h->n == MAX_HOLD) return pd_ctx_fail(ctx, PD_EINVAL, "too many aliased operands");
  pd_tensor *t = &h->t[h->n];
  pd_tensor_init(t);
  if (pd_tensor_share(t, *in)) return nomem(ctx);
  h->n++;
  *in = t;
  return PD_OK;
}

/* Can an elementwise kernel write `out` over input `in` in place: the same tensor, storage of
 * its own, already of the result's dtype and shape. */
static inline bool in_place(const pd_tensor *out, const pd_tensor *in, pd_dtype dt, int nd,
                            const int64_t *dims) {
  return out == in && in->storage && in->storage->refs == 1 && in->dtype == dt &&
         same_dims(in->ndims, in->dims, nd, dims);
}

/* Host memory for small per-call tables: small requests come from the struct itself, large
 * ones from the heap (release with local_free). */
typedef struct local_buf {
  void *p;
  union {
    max_align_t align;
    unsigned char bytes[512];
  } local;
} local_buf;

static inline void *local_get(local_buf *s, size_t n) {
  s->p = n <= sizeof s->local.bytes ? (void *)s->local.bytes : pd_malloc(n ? n : 1);
  return s->p;
}
static inline void local_free(local_buf *s) {
  if (s->p && s->p != (void *)s->local.bytes) pd_free(s->p);
  s->p = NULL;
}

/* ---- Scalars and axes ---- */

/* A one-element scalar of dtype dt (for broadcasting against a tensor). */
typedef union scalar {
  float f;
  double d;
  int32_t i;
  int64_t l;
  uint8_t b;
} scalar;

/* v as a host scalar of dtype dt, converted by the CPU's cast whatever the op's place. */
static inline scalar make_scalar(pd_dtype dt, double v) {
  scalar s;
  memset(&s, 0, sizeof s);
  pd_k_cpu()->cast(PD_FP64, &v, dt, &s, 1);
  return s;
}

/* Element i of a numeric host tensor as a double / an int64. */
static inline double elem_f(const pd_tensor *t, int64_t i) {
  const void *d = pd_tensor_data(t);
  switch (t->dtype) {
    case PD_FP32: return ((const float *)d)[i];
    case PD_FP64: return ((const double *)d)[i];
    case PD_INT32: return ((const int32_t *)d)[i];
    case PD_INT64: return (double)((const int64_t *)d)[i];
    case PD_BOOL:
    case PD_UINT8: return ((const uint8_t *)d)[i];
    case PD_INT8: return ((const int8_t *)d)[i];
    case PD_INT16: return ((const int16_t *)d)[i];
    case PD_FP16: return pd_fp16_to_f32(((const uint16_t *)d)[i]);
    case PD_BF16: return pd_bf16_to_f32(((const uint16_t *)d)[i]);
    default: return NAN;
  }
}
static inline int64_t elem_i(const pd_tensor *t, int64_t i) {
  const void *d = pd_tensor_data(t);
  switch (t->dtype) {
    case PD_INT64: return ((const int64_t *)d)[i];
    case PD_INT32: return ((const int32_t *)d)[i];
    default: {
      double v = elem_f(t, i);
      return v == v && fabs(v) < 9.2e18 ? (int64_t)v : 0;
    }
  }
}

/* Mixed precision: the precision an op flagged AMP (vm/oplist.h) multiplies its fp32 tensors
 * in, from its mkldnn_data_type ("bfloat16": PD_BF16, as Paddle's oneDNN passes set it and
 * vm/passes/amp.h does; "float16": PD_FP16); PD_FP32 for anything else, or tensors of another
 * dtype. */
static inline pd_dtype amp_precision(const pd_exec_ctx *ctx, pd_dtype dt) {
  if (dt != PD_FP32) return PD_FP32;
  const char *s = pd_ctx_attr_str(ctx, "mkldnn_data_type");
  return strcmp(s, "bfloat16") == 0 ? PD_BF16 : strcmp(s, "float16") == 0 ? PD_FP16 : PD_FP32;
}

/* The one value of a one-element host input (LearningRate, Beta1Pow, ValueTensor, ...). */
static inline pd_status scalar_in(const pd_exec_ctx *ctx, const char *slot, const pd_tensor *t,
                                  double *v) {
  char s[DIMS_BUF];
  if (pd_tensor_numel(t) != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s must hold one element, got %s", slot,
                       shape_str(t, s));
  if (!pd_dtype_size(t->dtype))
    return pd_ctx_fail(ctx, PD_ETYPE, "%s holds %s values, which are not supported here", slot,
                       pd_dtype_name(t->dtype));
  *v = elem_f(t, 0);
  return PD_OK;
}

/* An integer one-element host input (AxisTensor, an entry of a ShapeTensorList). */
static inline pd_status int_scalar_in(const pd_exec_ctx *ctx, const char *slot,
                                      const pd_tensor *t, int64_t *v) {
  char s[DIMS_BUF];
  if (!is_int(t->dtype))
    return pd_ctx_fail(ctx, PD_ETYPE, "%s must hold int32 or int64 values, got %s", slot,
                       pd_dtype_name(t->dtype));
  if (pd_tensor_numel(t) != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "%s must hold one element, got %s", slot,
                       shape_str(t, s));
  *v = elem_i(t, 0);
  return PD_OK;
}

/* Normalise an axis attribute `attr` of value v against the rank of `slot`'s tensor t:
 * -rank..rank-1 to 0..rank-1. */
static inline pd_status norm_axis(const pd_exec_ctx *ctx, const char *attr, int64_t v,
                                  const char *slot, const pd_tensor *t, int *axis) {
  int nd = t->ndims;
  if (v < -nd || v >= nd) {
    char s[DIMS_BUF];
    if (nd == 0)
      return pd_ctx_fail(ctx, PD_EINVAL, "%s %" PRId64 " is out of range for %s %s (a scalar)",
                         attr, v, slot, shape_str(t, s));
    return pd_ctx_fail(ctx, PD_EINVAL,
                       "%s %" PRId64 " is out of range for %s %s (expected %d to %d)", attr, v,
                       slot, shape_str(t, s), -nd, nd - 1);
  }
  *axis = (int)(v < 0 ? v + nd : v);
  return PD_OK;
}

/* ---- Shared by several families ---- */

/* The start every X, Y -> Out gradient kernel shares: the bound gradient outputs dX, dY (both
 * NULL: nothing to do, *none set), the inputs X, Y, Out@GRAD, all floating point of one dtype. */
static inline pd_status grad2_begin(const pd_exec_ctx *ctx, const pd_tensor **x, const pd_tensor **y,
                             const pd_tensor **dout, pd_tensor **dx, pd_tensor **dy, bool *none) {
  pd_status st;
  *none = false;
  if ((st = out_opt(ctx, "X@GRAD", dx)) || (st = out_opt(ctx, "Y@GRAD", dy))) return st;
  if (!*dx && !*dy) {
    *none = true;
    return PD_OK;
  }
  if ((st = in1(ctx, "X", x)) || (st = in1(ctx, "Y", y)) || (st = in1(ctx, "Out@GRAD", dout)) ||
      (st = want_float(ctx, "X", *x)) || (st = want_same_dtype(ctx, "X", *x, "Y", *y)) ||
      (st = want_same_dtype(ctx, "Out@GRAD", *dout, "X", *x)))
    return st;
  return PD_OK;
}

/* Read X, Y and Out@GRAD through second references wherever dX or dY is one of them. */
static inline pd_status grad2_unalias(const pd_exec_ctx *ctx, hold *h, pd_tensor *dx, pd_tensor *dy,
                               const pd_tensor **x, const pd_tensor **y,
                               const pd_tensor **dout) {
  const pd_tensor **ins[3] = {x, y, dout};
  pd_status st = PD_OK;
  for (int i = 0; i < 3 && !st; i++) {
    st = unalias(ctx, h, dx, ins[i]);
    if (!st) st = unalias(ctx, h, dy, ins[i]);
  }
  return st;
}

/* d = sign * dout summed over the dims along which the operand (pad: its dims padded to out's
 * rank) was broadcast: the gradient of an add or subtract. A plain copy when nothing was. The
 * bias of an fc layer, [rows, n] -> [n] (broadcast along leading dims only), is a column sum:
 * on the GPU one GEMM of a row of ones by dout, which runs at memory speed where the generic
 * strided reduction does not; the CPU's reduction has a loop for this layout (reading dout in
 * order: 33 us on [1600, 256] on two threads, where OpenBLAS took 96 us for the one-row GEMM). */
static inline pd_status sum_to(const pd_exec_ctx *ctx, pd_dtype dt, int nd, const int64_t *od,
                        const int64_t *pad, const void *dout, void *d, double sign) {
  int axes[PD_K_MAX_DIMS], na = 0;
  bool prefix = true, kept = false;  /* prefix: the summed dims all come before the kept ones */
  int64_t rows = 1;
  for (int i = 0; i < nd; i++) {
    if (pad[i] == 1 && od[i] != 1) {
      prefix = prefix && !kept;
      rows *= od[i];
      axes[na++] = i;
    } else if (od[i] != 1) {
      kept = true;
    }
  }
  int64_t n = pd_k_numel(nd, pad);
  pd_status st;
  if (na == 0) {
    if (sign == 1.0) {
      if (n && d != dout) return pd_ctx_copy(ctx, d, dout, (size_t)n * pd_dtype_size(dt));
      return PD_OK;
    }
    return k_check(ctx, ctx->k->scale(dt, n, dout, sign, 0.0, d), dt);
  }
  if (prefix && n > 1 && pd_ctx_place(ctx) == PD_K_CUDA) {
    void *ones = pd_ctx_scratch(ctx, (size_t)rows * pd_dtype_size(dt), &st);
    if (!ones) return st;
    st = ctx->k->fill(dt, rows, ones, 1.0);
    if (!st)
      st = ctx->k->gemm(dt, false, false, 1, n, rows, sign, ones, ld(rows), dout, n, 0.0, d, n);
    pd_ctx_scratch_free(ctx, ones);
    return k_check(ctx, st, dt);
  }
  if ((st = k_check(ctx, ctx->k->reduce(PD_K_RSUM, dt, nd, od, dout, na, axes, d), dt)))
    return st;
  return sign == 1.0 ? PD_OK : k_check(ctx, ctx->k->scale(dt, n, d, sign, 0.0, d), dt);
}

/* The dtype given by attribute `name`. */
static inline pd_status dtype_attr(const pd_exec_ctx *ctx, const char *name, pd_dtype *dt) {
  int64_t v = pd_ctx_attr_int(ctx, name);
  if (!pd_dtype_valid((int)v) || v != (int)v)
    return pd_ctx_fail(ctx, PD_EINVAL, "%s %" PRId64 " is not a data type", name, v);
  *dt = (pd_dtype)v;
  return PD_OK;
}

/* X viewed as [pre, n, post] around `axis`. */
static inline void split_at(const pd_tensor *t, int axis, int64_t *pre, int64_t *n, int64_t *post) {
  *pre = prod(t->dims, 0, axis);
  *n = t->dims[axis];
  *post = prod(t->dims, axis + 1, t->ndims);
}

/* Room for a message listing names or dims. */
enum { LIST_BUF = 256 };

/* A shape given at run time: one int tensor per dim in list_slot, or one 1-D int tensor in
 * tensor_slot; otherwise the attribute attr. *given says whether an input gave it. */
static inline pd_status shape_from(const pd_exec_ctx *ctx, const char *list_slot,
                            const char *tensor_slot, const char *attr, int64_t *dims, int *nd,
                            bool *given) {
  char s[DIMS_BUF];
  int nl = pd_ctx_nin(ctx, list_slot);
  *given = true;
  if (nl > 0) {
    if (nl > MAXD)
      return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s gives %d dims; at most %d are supported",
                         list_slot, nl, MAXD);
    for (int i = 0; i < nl; i++) {
      const pd_tensor *t;
      pd_status st = in_at(ctx, list_slot, i, true, &t);
      if (!st) st = int_scalar_in(ctx, list_slot, t, &dims[i]);
      if (st) return st;
    }
    *nd = nl;
    return PD_OK;
  }
  const pd_tensor *t = in_if_set(ctx, tensor_slot, 0);
  if (t) {
    if (!is_int(t->dtype))
      return pd_ctx_fail(ctx, PD_ETYPE, "%s must hold int32 or int64 values, got %s",
                         tensor_slot, pd_dtype_name(t->dtype));
    if (t->ndims != 1)
      return pd_ctx_fail(ctx, PD_ESHAPE, "%s must have 1 dim, got %s", tensor_slot, shape_str(t, s));
    if (t->dims[0] > MAXD)
      return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s gives %" PRId64 " dims; at most %d are "
                         "supported", tensor_slot, t->dims[0], MAXD);
    *nd = (int)t->dims[0];
    for (int i = 0; i < *nd; i++) dims[i] = elem_i(t, i);
    return PD_OK;
  }
  *given = false;
  int n = pd_ctx_attr_ints(ctx, attr, dims, MAXD);
  if (n > MAXD)
    return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s has %d dims; at most %d are supported", attr,
                       n, MAXD);
  *nd = n < 0 ? 0 : n;
  return PD_OK;
}

/* Deep copy of the value of var xv (a tensor or a tensor array) into var ov, given its slot
 * names for messages. The same var is left alone. */
static inline pd_status copy_var(const pd_exec_ctx *ctx, pd_variable *xv, const char *xslot,
                          pd_variable *ov, const char *oslot) {
  if (!xv) return pd_ctx_fail(ctx, PD_EINVAL, "input %s is not given", xslot);
  if (!ov) return PD_OK;
  if (xv == ov) return PD_OK;
  if (xv->type == PD_VAR_LOD_TENSOR) {
    if (ov->type != PD_VAR_LOD_TENSOR && ov->type != PD_VAR_UNSET) pd_var_reset(ov);
    pd_tensor *o = pd_var_tensor(ov);
    if (!o) return pd_ctx_fail(ctx, PD_ETYPE, "output %s does not hold a tensor", oslot);
    if (pd_tensor_copy(o, &xv->u.tensor)) return nomem(ctx);
    return PD_OK;
  }
  if (xv->type == PD_VAR_LOD_TENSOR_ARRAY) {
    if (ov->type != PD_VAR_LOD_TENSOR_ARRAY && ov->type != PD_VAR_UNSET) pd_var_reset(ov);
    pd_tensor_array *o = pd_var_tensor_array(ov);
    const pd_tensor_array *a = &xv->u.array;
    if (!o) return pd_ctx_fail(ctx, PD_ETYPE, "output %s does not hold a tensor array", oslot);
    pd_tensor_array_truncate(o, (int64_t)a->n);
    if (pd_tensor_array_reserve(o, (int64_t)a->n)) return nomem(ctx);
    for (size_t i = 0; i < a->n; i++)
      if (pd_tensor_copy(o->items[i], a->items[i])) return nomem(ctx);
    return PD_OK;
  }
  return pd_ctx_fail(ctx, PD_EUNSUPPORTED, "%s (var '%s') holds a %s; assign copies tensors and "
                     "tensor arrays", xslot, pd_var_name(xv), pd_var_type_name(xv->type));
}

/* ---- Batches of sequences ---- */

/* The order in which the recurrent ops (vm/ops/recurrent.c, vm/ops/rnn_fused.c) run a batch of
 * sequences, sequence s being offsets off[s] .. off[s + 1]: by length, longest first, then by
 * index (so the sequences still running at any step are a prefix). order receives nseq indices;
 * false when out of memory. */
bool pd_seq_by_length(const int64_t *off, int64_t nseq, int64_t *order);

#endif /* PD_OPS_KERN_H */
