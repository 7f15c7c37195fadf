/* infershape.c -- the helpers shape functions are written with (see infershape.h): dims values,
 * access to an op's vars and attributes, axis normalisation, broadcasting, error messages. */
#include "config.h"
#include "vm/ops/infershape.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- Dims values ---- */

const char *pd_infer_ints_str(const int64_t *v, int n, char buf[PD_LIST_BUF]) {
  return pd_dims_str(n, v, buf, PD_LIST_BUF);
}

const char *pd_infer_dims_str(const pd_infer_dims *d, char buf[PD_DIMS_BUF]) {
  if (d->n < 0) {
    strcpy(buf, "[?]");
    return buf;
  }
  return pd_dims_str(d->n < PD_MAX_RANK ? d->n : PD_MAX_RANK, d->d, buf, PD_DIMS_BUF);
}

int64_t pd_infer_dim_add(int64_t a, int64_t b) {
  int64_t r;
  return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

int64_t pd_infer_dim_mul(int64_t a, int64_t b) {
  int64_t r;
  return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

int64_t pd_infer_dims_numel(const pd_infer_dims *d) {
  if (d->n < 0) return -1;
  int64_t n = 1;
  for (int i = 0; i < d->n; i++) n = pd_infer_dim_mul(n, d->d[i]);
  return n;
}

bool pd_infer_dim_compatible(int64_t a, int64_t b) { return a == b || a < 0 || b < 0; }

int64_t pd_infer_dim_merge(int64_t a, int64_t b) { return a >= 0 ? a : b; }

pd_infer_dims pd_infer_dims_unknown(int n) {
  pd_infer_dims d = {.n = n};
  for (int i = 0; i < n && i < PD_MAX_RANK; i++) d.d[i] = -1;
  return d;
}

/* ---- Errors ---- */

pd_status pd_infer_fail(pd_infer_ctx *c, pd_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return pd_error_set(c->err, st, c->op->loc, "%s: %s", c->def->type, msg);
}

/* ---- Slots ---- */

/* The number of vars a slot binds, as Fluid's HasInput counts them (see infershape.h). */
static int slot_nargs(const pd_slot *s) {
  if (!s) return 0;
  for (int i = 0; i < s->nargs; i++)
    if (strcmp(s->args[i], PD_EMPTY_VAR_NAME) != 0) return s->nargs;
  return 0;
}

int pd_infer_nin(const pd_infer_ctx *c, const char *slot) {
  return slot_nargs(pd_op_input(c->op, slot));
}

int pd_infer_nout(const pd_infer_ctx *c, const char *slot) {
  return slot_nargs(pd_op_output(c->op, slot));
}

pd_status pd_infer_in(pd_infer_ctx *c, const char *slot, int i, const pd_var_desc **var,
                      pd_infer_dims *dims) {
  char name[64];
  const pd_slot *s = pd_op_input(c->op, slot);
  if (!s || i >= slot_nargs(s)) return pd_infer_fail(c, PD_EINVAL, "input %s is missing", slot);
  const pd_var_desc *v = pd_block_find_var_visible(c->block, s->args[i], NULL);
  if (!v)
    return pd_infer_fail(c, PD_ENOTFOUND, "input %s names '%s', which is not declared", slot,
                         pd_program_excerpt(s->args[i], name, sizeof name));
  if (v->ndims > PD_MAX_RANK || (v->ndims > 0 && !v->dims))
    return pd_infer_fail(c, PD_EUNSUPPORTED, "input %s ('%s') has %d dims; at most %d are supported",
                         slot, pd_program_excerpt(v->name, name, sizeof name), v->ndims, PD_MAX_RANK);
  if (dims) {
    dims->n = v->ndims < 0 ? -1 : v->ndims;
    for (int k = 0; k < dims->n; k++) dims->d[k] = v->dims[k] < 0 ? -1 : v->dims[k];
  }
  if (var) *var = v;
  return PD_OK;
}

pd_status pd_infer_set_out(pd_infer_ctx *c, const char *slot, int i, const pd_infer_dims *dims,
                           pd_dtype dtype, int lod_level) {
  char name[64];
  const pd_slot *s = pd_op_output(c->op, slot);
  if (!s || i >= s->nargs || strcmp(s->args[i], PD_EMPTY_VAR_NAME) == 0) return PD_OK;
  pd_var_desc *v = pd_block_find_var_visible(c->block, s->args[i], NULL);
  if (!v)
    return pd_infer_fail(c, PD_ENOTFOUND, "output %s names '%s', which is not declared", slot,
                         pd_program_excerpt(s->args[i], name, sizeof name));
  if (pd_var_set_shape(v, dims->n, dims->d) != 0)
    return pd_error_set(c->err, PD_ENOMEM, c->op->loc, "out of memory");
  v->dtype = dtype;
  v->lod_level = lod_level;
  return PD_OK;
}

/* ---- Attributes ---- */

static const pd_attrdef *attr_default(const pd_infer_ctx *c, const char *name) {
  return pd_opdef_attr(c->def, name);
}

int64_t pd_infer_attr_int(const pd_infer_ctx *c, const char *name) {
  const pd_attr *a = pd_op_attr(c->op, name);
  if (a) {
    switch (a->type) {
      case PD_ATTR_INT:
      case PD_ATTR_BLOCK: return a->v.i;
      case PD_ATTR_LONG: return a->v.l;
      case PD_ATTR_BOOLEAN: return a->v.b;
      default: break;
    }
  }
  const pd_attrdef *ad = attr_default(c, name);
  return ad ? ad->def.i : 0;
}

bool pd_infer_attr_bool(const pd_infer_ctx *c, const char *name) {
  return pd_infer_attr_int(c, name) != 0;
}

double pd_infer_attr_float(const pd_infer_ctx *c, const char *name) {
  const pd_attr *a = pd_op_attr(c->op, name);
  if (a) {
    switch (a->type) {
      case PD_ATTR_FLOAT: return a->v.f;
      case PD_ATTR_FLOAT64: return a->v.d;
      case PD_ATTR_INT: return a->v.i;
      case PD_ATTR_LONG: return (double)a->v.l;
      default: break;
    }
  }
  const pd_attrdef *ad = attr_default(c, name);
  return ad ? ad->def.f : 0.0;
}

const char *pd_infer_attr_str(const pd_infer_ctx *c, const char *name) {
  const pd_attr *a = pd_op_attr(c->op, name);
  if (a && a->type == PD_ATTR_STRING && a->v.s) return a->v.s;
  const pd_attrdef *ad = attr_default(c, name);
  return ad && ad->def.s ? ad->def.s : "";
}

int pd_infer_attr_len(const pd_infer_ctx *c, const char *name) {
  const pd_attr *a = pd_op_attr(c->op, name);
  if (a && pd_attr_type_is_list(a->type)) return a->n;
  const pd_attrdef *ad = attr_default(c, name);
  return ad ? ad->def.n : 0;
}

int64_t pd_infer_attr_ints_at(const pd_infer_ctx *c, const char *name, int i) {
  const pd_attr *a = pd_op_attr(c->op, name);
  if (a && (a->type == PD_ATTR_INTS || a->type == PD_ATTR_BLOCKS || a->type == PD_ATTR_LONGS ||
            a->type == PD_ATTR_BOOLEANS)) {
    if (i < 0 || i >= a->n) return 0;
    if (a->type == PD_ATTR_LONGS) return a->longs[i];
    if (a->type == PD_ATTR_BOOLEANS) return a->bools[i];
    return a->ints[i];
  }
  const pd_attrdef *ad = attr_default(c, name);
  if (!ad || i < 0 || i >= ad->def.n) return 0;
  return ad->type == PD_ATTR_LONGS ? ad->def.l.longs[i] : ad->def.l.ints[i];
}

const char *pd_infer_attr_ints_str(const pd_infer_ctx *c, const char *name, char buf[PD_LIST_BUF]) {
  /* Values past PD_LIST_BUF / 2 never show: each takes 3 bytes or more of the text. */
  int64_t v[PD_LIST_BUF / 2];
  int n = pd_infer_attr_len(c, name);
  if (n > (int)PD_ARRAY_LEN(v)) n = (int)PD_ARRAY_LEN(v);
  for (int i = 0; i < n; i++) v[i] = pd_infer_attr_ints_at(c, name, i);
  return pd_dims_str(n, v, buf, PD_LIST_BUF);
}

int pd_infer_attr_ints(const pd_infer_ctx *c, const char *name, int64_t *out, int cap) {
  int n = pd_infer_attr_len(c, name);
  for (int i = 0; i < n && i < cap; i++) out[i] = pd_infer_attr_ints_at(c, name, i);
  return n;
}

pd_status pd_infer_attr_dtype(pd_infer_ctx *c, const char *name, pd_dtype *dtype) {
  int64_t t = pd_infer_attr_int(c, name);
  if (t != (int)t || !pd_dtype_valid((int)t))
    return pd_infer_fail(c, PD_EINVAL, "%s %" PRId64 " is not a data type", name, t);
  *dtype = (pd_dtype)t;
  return PD_OK;
}

/* ---- Shared rules ---- */

pd_status pd_infer_axis(pd_infer_ctx *c, const char *attr, int64_t value, const char *slot,
                        const pd_infer_dims *d, int *axis) {
  char s[PD_DIMS_BUF];
  if (d->n == 0)
    return pd_infer_fail(c, PD_EINVAL, "%s %" PRId64 " is out of range for %s [], which has no dims",
                         attr, value, slot);
  if (value < -d->n || value >= d->n)
    return pd_infer_fail(c, PD_EINVAL, "%s %" PRId64 " is out of range for %s %s (expected %d to %d)",
                         attr, value, slot, pd_infer_dims_str(d, s), -d->n, d->n - 1);
  *axis = (int)(value < 0 ? value + d->n : value);
  return PD_OK;
}

/* The smaller operand lines up inside the larger one from `start` on. */
static bool broadcast_at(const pd_infer_dims *x, const pd_infer_dims *y, int start,
                         pd_infer_dims *out) {
  const pd_infer_dims *big = x->n >= y->n ? x : y, *small = x->n >= y->n ? y : x;
  pd_infer_dims r = {.n = big->n};
  for (int i = 0; i < big->n; i++) {
    int64_t b = big->d[i];
    int64_t s = i >= start && i < start + small->n ? small->d[i - start] : 1;
    if (b == s || s == 1) r.d[i] = b;
    else if (b == 1) r.d[i] = s;
    else if (b < 0) r.d[i] = s;  /* the unknown one must be 1 or s at run time: s either way */
    else if (s < 0) r.d[i] = b;
    else return false;
  }
  *out = r;
  return true;
}

bool pd_infer_broadcast_dims(const pd_infer_dims *x, const pd_infer_dims *y, pd_infer_dims *out) {
  int diff = x->n >= y->n ? x->n - y->n : y->n - x->n;
  return broadcast_at(x, y, diff, out);
}

pd_status pd_infer_broadcast(pd_infer_ctx *c, const pd_infer_dims *x, const pd_infer_dims *y,
                             int axis, pd_infer_dims *out) {
  char sx[PD_DIMS_BUF], sy[PD_DIMS_BUF];
  if (x->n < 0 || y->n < 0) {
    *out = pd_infer_dims_unknown(-1);
    return PD_OK;
  }
  int diff = x->n >= y->n ? x->n - y->n : y->n - x->n;
  int start = axis == -1 ? diff : axis;
  if (start < 0 || start > diff)
    return pd_infer_fail(c, PD_EINVAL, "axis %d is out of range for %s and %s (expected -1 or 0 to %d)",
                         axis, pd_infer_dims_str(x, sx), pd_infer_dims_str(y, sy), diff);
  if (!broadcast_at(x, y, start, out))
    return pd_infer_fail(c, PD_ESHAPE, "cannot broadcast %s and %s (axis %d)",
                         pd_infer_dims_str(x, sx), pd_infer_dims_str(y, sy), axis);
  return PD_OK;
}

pd_status pd_infer_same_dtype(pd_infer_ctx *c, const char *a, pd_dtype ta, const char *b,
                              pd_dtype tb) {
  if (ta == tb) return PD_OK;
  return pd_infer_fail(c, PD_ETYPE, "%s has dtype %s but %s has dtype %s", a, pd_dtype_name(ta), b,
                       pd_dtype_name(tb));
}

pd_status pd_infer_same_as_x(pd_infer_ctx *c, int dtype) {
  const pd_var_desc *x;
  pd_infer_dims d;
  pd_status st = pd_infer_in(c, "X", 0, &x, &d);
  if (st) return st;
  return pd_infer_set_out(c, "Out", 0, &d, dtype >= 0 ? (pd_dtype)dtype : x->dtype, x->lod_level);
}

pd_status pd_infer_check_sub_block(pd_infer_ctx *c) {
  int64_t idx = pd_infer_attr_int(c, "sub_block");
  const pd_program *p = c->block->program;
  const pd_block *sub = idx > 0 && idx < p->nblocks ? pd_program_block(p, (int)idx) : NULL;
  if (!pd_op_attr(c->op, "sub_block") || !sub)
    return pd_infer_fail(c, PD_EINVAL, "sub_block must name a block of the program other than block "
                         "0 (it has %d), got %" PRId64, p->nblocks, idx);
  if (sub->parent_idx != c->block->idx)
    return pd_infer_fail(c, PD_EINVAL, "sub_block %" PRId64 " has parent block %d, not the op's block %d",
                         idx, sub->parent_idx, c->block->idx);
  return PD_OK;
}
