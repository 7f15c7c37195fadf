/* ops.c -- the op registry: the pd_opdefs table generated from vm/oplist.h, lookup by name, and
 * what the compiler runs on each op it appends: pd_opdef_check, pd_opdef_fill_defaults,
 * pd_opdef_infer_shape (the shape functions themselves are in the family files of vm/ops/). */
#include "config.h"
#include "vm/ops/ops.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/opkernels.h"

/* ---- The table ----
 * The vocabulary of vm/oplist.h (see its header), defined only while the list is expanded. */
#define DIFF PD_OPF_DIFF
#define FP_IN PD_OPF_FLOAT
#define SEQ_IN PD_OPF_SEQUENCE
#define GPU PD_OPF_GPU
#define GPU_GRAD PD_OPF_GPU_GRAD
#define ROW_X PD_OPF_ROW_X
#define ROW_XY PD_OPF_ROW_XY
#define ROW_IDS PD_OPF_ROW_IDS
#define AMP PD_OPF_AMP
#define IN(...) __VA_ARGS__,
#define OUT(...) __VA_ARGS__,
#define ATTRS(...) __VA_ARGS__,
#define NONE
#define HOST PD_SLOT_HOST
#define ANY PD_SLOT_ANY
#define SCOPES PD_SLOT_SCOPES
/* A slot: its name, then optionally where its values must be (HOST, ANY) and SCOPES. */
#define SLOT_(flags, nm, where, ...) {nm, (flags) | (where)}
#define ONE(...) SLOT_(0, __VA_ARGS__, 0, ~)
#define LIST(...) SLOT_(PD_SLOT_DUPLICABLE, __VA_ARGS__, 0, ~)
#define OPT(...) SLOT_(PD_SLOT_DISPENSABLE, __VA_ARGS__, 0, ~)
#define OPT_LIST(...) SLOT_(PD_SLOT_DUPLICABLE | PD_SLOT_DISPENSABLE, __VA_ARGS__, 0, ~)
#define TEMP(...) SLOT_(PD_SLOT_DISPENSABLE | PD_SLOT_INTERMEDIATE, __VA_ARGS__, 0, ~)
#define INT(nm, v) {.name = nm, .type = PD_ATTR_INT, .def = {.i = (v)}}
#define LONG(nm, v) {.name = nm, .type = PD_ATTR_LONG, .def = {.i = (v)}}
#define FLOAT(nm, v) {.name = nm, .type = PD_ATTR_FLOAT, .def = {.f = (v)}}
#define BOOL(nm, v) {.name = nm, .type = PD_ATTR_BOOLEAN, .def = {.i = (v)}}
#define STR(nm, v) {.name = nm, .type = PD_ATTR_STRING, .def = {.s = (v)}}
#define ENUM(nm, v, ...)                                               \
  {.name = nm, .type = PD_ATTR_STRING, .def = {.s = (v)},              \
   .choices = (const char *const[]){v, __VA_ARGS__, NULL}}
#define REQ_ENUM(nm, ...)                                              \
  {.name = nm, .type = PD_ATTR_STRING, .required = true,               \
   .choices = (const char *const[]){__VA_ARGS__, NULL}}
#define INTS(nm, ...)                                                  \
  {.name = nm, .type = PD_ATTR_INTS,                                   \
   .def = {.n = (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t)), \
           .l.ints = (const int32_t[]){__VA_ARGS__}}}
#define INTS_EMPTY(nm) {.name = nm, .type = PD_ATTR_INTS}
#define LONGS_EMPTY(nm) {.name = nm, .type = PD_ATTR_LONGS}
#define FLOATS_EMPTY(nm) {.name = nm, .type = PD_ATTR_FLOATS}
#define STRS_EMPTY(nm) {.name = nm, .type = PD_ATTR_STRINGS}
#define REQ(T, nm) {.name = nm, .type = PD_ATTR_##T, .required = true}
/* The kernel: pd_kernel_<forward> and the constant it reads (PD_KERNEL_FWD_, PD_KERNEL_ARG_:
 * vm/ops/opkernels.h). */
#define KERNELS(fwd, grad, arg) fwd, grad, arg
#define KERNEL(family, arg) family, family##_grad, arg

/* Per op: its input slots, output slots and attributes, each list ended by a zeroed entry (so
 * that an empty list is still a valid array). The same body for PD_OP: it cannot hand the lists
 * on to PD_OPK, whose arguments their commas would split. */
#define PD_OPK(n_, f_, infer_, ins_, outs_, ats_, k_)                \
  static const pd_slotdef inputs_##n_[] = {ins_ {0}};                  \
  static const pd_slotdef outputs_##n_[] = {outs_ {0}};                \
  static const pd_attrdef attrs_##n_[] = {ats_ {0}};
#define PD_OP(n_, f_, infer_, ins_, outs_, ats_)                       \
  static const pd_slotdef inputs_##n_[] = {ins_ {0}};                  \
  static const pd_slotdef outputs_##n_[] = {outs_ {0}};                \
  static const pd_attrdef attrs_##n_[] = {ats_ {0}};
#include "vm/oplist.h"
#undef PD_OPK
#undef PD_OP

/* (PD_OP: PD_OPK with the op's own kernel; the lists it does not pass on are ~.) */
#define PD_OP(n_, f_, infer_, ins_, outs_, ats_) PD_OPK(n_, f_, infer_, ~, ~, ~, KERNEL(n_, 0))
const pd_opdef pd_opdefs[] = {
#define PD_OPK(n_, f_, infer_, ins_, outs_, ats_, k_)                \
  {.kind = PD_OP_##n_,                                                 \
   .type = #n_,                                                        \
   .flags = (f_),                                                      \
   .ninputs = (int)PD_ARRAY_LEN(inputs_##n_) - 1,                      \
   .noutputs = (int)PD_ARRAY_LEN(outputs_##n_) - 1,                    \
   .nattrs = (int)PD_ARRAY_LEN(attrs_##n_) - 1,                        \
   .inputs = inputs_##n_,                                              \
   .outputs = outputs_##n_,                                            \
   .attrs = attrs_##n_,                                                \
   .infer_shape = pd_infer_##infer_,                                   \
   .kernel = PD_KERNEL_FWD_(k_),                                       \
   .karg = PD_KERNEL_ARG_(k_),                                         \
   .forward = NULL},
#include "vm/oplist.h"
#undef PD_OPK
};
_Static_assert(PD_ARRAY_LEN(pd_opdefs) == PD_OP_COUNT_, "pd_opdefs out of sync with pd_op_kind");

/* The flags' rules the compiler can check: DIFF is written first (PD_IF_DIFF finds it there);
 * GPU_GRAD only on a DIFF op; one row-wise flag at most. */
#define PD_OPK(n_, f_, infer_, ins_, outs_, ats_, k_)                                            \
  _Static_assert(!((f_) & PD_OPF_DIFF) == !PD_IS_DIFF_(f_),                                      \
                 #n_ ": write DIFF first in its flags (vm/oplist.h)");                           \
  _Static_assert(!((f_) & PD_OPF_GPU_GRAD) || ((f_) & PD_OPF_DIFF),                             \
                 #n_ ": GPU_GRAD on an op without a gradient (vm/oplist.h)");                    \
  _Static_assert((((f_) & PD_OPF_ROW_ANY) & (((f_) & PD_OPF_ROW_ANY) - 1u)) == 0,              \
                 #n_ ": more than one ROW_ flag (vm/oplist.h)");
#include "vm/oplist.h"
#undef PD_OPK
#undef PD_OP

/* Attributes Fluid's framework puts on every op (roles, name scopes, call stacks, device and
 * backend hints). Any op accepts them; no shape function reads them. */
static const pd_attrdef common_attrs[] = {
    INT("op_role", 0),          STRS_EMPTY("op_role_var"),     STR("op_namescope", ""),
    STRS_EMPTY("op_callstack"), STR("op_device", ""),          BOOL("with_quant_attr", false),
    BOOL("use_mkldnn", false),  BOOL("use_cudnn", false),      STR("mkldnn_data_type", ""),
    BOOL("is_test", false),
};

#undef DIFF
#undef FP_IN
#undef SEQ_IN
#undef GPU
#undef GPU_GRAD
#undef ROW_X
#undef ROW_XY
#undef ROW_IDS
#undef AMP
#undef IN
#undef OUT
#undef ATTRS
#undef NONE
#undef HOST
#undef ANY
#undef SCOPES
#undef SLOT_
#undef ONE
#undef LIST
#undef OPT
#undef OPT_LIST
#undef TEMP
#undef INT
#undef LONG
#undef FLOAT
#undef BOOL
#undef STR
#undef ENUM
#undef REQ_ENUM
#undef INTS
#undef INTS_EMPTY
#undef LONGS_EMPTY
#undef FLOATS_EMPTY
#undef STRS_EMPTY
#undef REQ
#undef KERNELS
#undef KERNEL

/* ---- Lookup ---- */

static int cmp_type(const void *key, const void *elem) {
  return strcmp(key, ((const pd_opdef *)elem)->type);
}

const pd_opdef *pd_opdef_lookup(const char *type) {
  if (!type) return NULL;
  const pd_opdef *d = bsearch(type, pd_opdefs, PD_OP_COUNT_, sizeof pd_opdefs[0], cmp_type);
  size_t len = strlen(type);
  if (d || len <= 5 || len >= 64 || strcmp(type + len - 5, "_grad") != 0) return d;
  char fwd[64];
  memcpy(fwd, type, len - 5);
  fwd[len - 5] = '\0';
  return pd_opdef_grad(bsearch(fwd, pd_opdefs, PD_OP_COUNT_, sizeof pd_opdefs[0], cmp_type));
}

const pd_opdef *pd_opdef_get(pd_op_kind kind) {
  return (unsigned)kind < PD_OP_COUNT_ ? &pd_opdefs[kind] : NULL;
}

const pd_opdef *pd_opdef_of(const pd_op_desc *op) { return op ? pd_opdef_lookup(op->type) : NULL; }

bool pd_opdef_is(const pd_op_desc *op, pd_op_kind kind) {
  const pd_opdef *d = pd_opdef_of(op);
  return d && d->kind == kind && !d->forward;
}

bool pd_opdef_is_grad(const pd_op_desc *op, pd_op_kind kind) {
  const pd_opdef *d = pd_opdef_of(op);
  return d && d->kind == kind && d->forward;
}

static const pd_slotdef *find_slot(const pd_slotdef *slots, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(slots[i].name, name) == 0) return &slots[i];
  return NULL;
}

const pd_slotdef *pd_opdef_input(const pd_opdef *def, const char *name) {
  return find_slot(def->inputs, def->ninputs, name);
}

const pd_slotdef *pd_opdef_output(const pd_opdef *def, const char *name) {
  return find_slot(def->outputs, def->noutputs, name);
}

const pd_attrdef *pd_opdef_attr(const pd_opdef *def, const char *name) {
  for (int i = 0; i < def->nattrs; i++)
    if (strcmp(def->attrs[i].name, name) == 0) return &def->attrs[i];
  return NULL;
}

int pd_opdef_names(const char *prefix, const char **names, int cap) {
  if (!prefix) prefix = "";
  size_t plen = strlen(prefix);
  int lo = 0, hi = PD_OP_COUNT_;
  while (lo < hi) { /* the first type >= prefix: where the ones starting with it begin */
    int mid = lo + (hi - lo) / 2;
    if (strcmp(pd_opdefs[mid].type, prefix) < 0) lo = mid + 1;
    else hi = mid;
  }
  int n = 0;
  for (int i = lo; i < PD_OP_COUNT_ && strncmp(pd_opdefs[i].type, prefix, plen) == 0; i++, n++)
    if (n < cap) names[n] = pd_opdefs[i].type;
  return n;
}

/* ---- "Did you mean" ---- */

const char *pd_opdef_suggest(const char *type) {
  const char *best = NULL;
  int bestd = 1000;
  for (int i = 0; type && i < PD_OP_COUNT_; i++) pd_suggest_consider(type, pd_opdefs[i].type, &best, &bestd);
  return best;
}

/* ---- Checking an op against its def ---- */

/* Names in messages come from the op, which may come from an untrusted file: quote them
 * through pd_program_excerpt into a buffer of this size. */
enum { NAME_ROOM = 72 };

static pd_status unknown_op(const pd_op_desc *op, pd_error *err) {
  char name[NAME_ROOM];
  const char *s = pd_opdef_suggest(op->type);
  pd_program_excerpt(op->type, name, sizeof name);
  if (s)
    return pd_error_set(err, PD_ENOTFOUND, op->loc, "unknown op type '%s' (did you mean '%s'?)",
                        name, s);
  return pd_error_set(err, PD_ENOTFOUND, op->loc, "unknown op type '%s'", name);
}

/* " (did you mean Xs?)" or " (mul's inputs are X, Y)" for an unknown name among names[n]. */
static void explain_unknown(char *buf, size_t cap, const char *word, const char *optype,
                            const char *what, const char *const *names, int n) {
  const char *best = NULL;
  int bestd = 1000;
  for (int i = 0; i < n; i++) pd_suggest_consider(word, names[i], &best, &bestd);
  if (best) {
    snprintf(buf, cap, " (did you mean %s?)", best);
    return;
  }
  if (n == 0) {
    snprintf(buf, cap, " (%s has no %s)", optype, what);
    return;
  }
  size_t len = (size_t)snprintf(buf, cap, " (%s's %s are ", optype, what);
  for (int i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", names[i]);
  if (len < cap) snprintf(buf + len, cap - len, ")");
}

static pd_status check_slots(const pd_opdef *def, const pd_op_desc *op, const pd_block *block,
                             bool inputs, pd_error *err) {
  const pd_slotdef *defs = inputs ? def->inputs : def->outputs;
  int ndefs = inputs ? def->ninputs : def->noutputs;
  const pd_slot *slots = inputs ? op->inputs : op->outputs;
  int nslots = inputs ? op->ninputs : op->noutputs;
  const char *what = inputs ? "input" : "output";
  char param[NAME_ROOM], var[NAME_ROOM];
  for (int i = 0; i < nslots; i++) {
    const pd_slot *s = &slots[i];
    const pd_slotdef *sd = s->param ? find_slot(defs, ndefs, s->param) : NULL;
    pd_program_excerpt(s->param, param, sizeof param);
    if (!sd) {
      const char *names[32];
      char why[512];
      int n = ndefs < 32 ? ndefs : 32;
      for (int k = 0; k < n; k++) names[k] = defs[k].name;
      explain_unknown(why, sizeof why, param, def->type, inputs ? "inputs" : "outputs", names, n);
      return pd_error_set(err, PD_EINVAL, op->loc, "%s: unknown %s slot %s%s", def->type, what,
                          param, why);
    }
    for (int k = 0; k < i; k++)
      if (strcmp(slots[k].param, s->param) == 0)
        return pd_error_set(err, PD_EINVAL, op->loc, "%s: %s %s is bound twice", def->type, what,
                            param);
    if (!(sd->flags & PD_SLOT_DUPLICABLE) && s->nargs > 1)
      return pd_error_set(err, PD_EINVAL, op->loc, "%s: %s %s takes one var, got %d", def->type,
                          what, param, s->nargs);
    for (int k = 0; k < s->nargs; k++) {
      if (!s->args[k] || !*s->args[k])
        return pd_error_set(err, PD_EINVAL, op->loc, "%s: %s %s has an empty var name", def->type,
                            what, param);
      if (strcmp(s->args[k], PD_EMPTY_VAR_NAME) != 0 &&
          !pd_block_find_var_visible(block, s->args[k], NULL))
        return pd_error_set(err, PD_ENOTFOUND, op->loc,
                            "%s: %s %s names '%s', which is not declared in block %d%s", def->type,
                            what, param, pd_program_excerpt(s->args[k], var, sizeof var),
                            block->idx, block->idx > 0 ? " or its parents" : "");
    }
  }
  for (int i = 0; i < ndefs; i++) {
    if (defs[i].flags & PD_SLOT_DISPENSABLE) continue;
    const pd_slot *s = inputs ? pd_op_input(op, defs[i].name) : pd_op_output(op, defs[i].name);
    if (!s || s->nargs == 0)
      return pd_error_set(err, PD_EINVAL, op->loc, "%s: %s %s is missing", def->type, what,
                          defs[i].name);
  }
  return PD_OK;
}

static const pd_attrdef *find_common_attr(const char *name) {
  for (size_t i = 0; i < PD_ARRAY_LEN(common_attrs); i++)
    if (strcmp(common_attrs[i].name, name) == 0) return &common_attrs[i];
  return NULL;
}

static bool fits_int32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* Whether attribute a can stand for one of type `want`: the same type, or integers (lists) of
 * the other width whose values fit, or a float of the other precision. */
static bool attr_type_ok(pd_attr_type want, const pd_attr *a) {
  if (a->type == want) return true;
  switch (want) {
    case PD_ATTR_INT: return a->type == PD_ATTR_LONG && fits_int32(a->v.l);
    case PD_ATTR_LONG: return a->type == PD_ATTR_INT;
    case PD_ATTR_INTS:
      if (a->type != PD_ATTR_LONGS) return false;
      for (int i = 0; i < a->n; i++)
        if (!fits_int32(a->longs[i])) return false;
      return true;
    case PD_ATTR_LONGS: return a->type == PD_ATTR_INTS;
    case PD_ATTR_FLOAT: return a->type == PD_ATTR_FLOAT64;
    case PD_ATTR_FLOAT64: return a->type == PD_ATTR_FLOAT;
    default: return false;
  }
}

/* Check attribute a, known as ad, of op. */
static pd_status check_attr(const pd_opdef *def, const pd_op_desc *op, const pd_block *block,
                            const pd_attrdef *ad, const pd_attr *a, pd_error *err) {
  char value[NAME_ROOM];
  if (!attr_type_ok(ad->type, a)) {
    bool range = (ad->type == PD_ATTR_INT && a->type == PD_ATTR_LONG) ||
                 (ad->type == PD_ATTR_INTS && a->type == PD_ATTR_LONGS);
    return pd_error_set(err, PD_ETYPE, op->loc, "%s: attribute %s must be %s, got %s%s", def->type,
                        ad->name, pd_attr_type_name(ad->type), pd_attr_type_name(a->type),
                        range ? " with a value out of its range" : "");
  }
  if (ad->choices) {
    const char *v = a->v.s ? a->v.s : "";
    for (int i = 0; ad->choices[i]; i++)
      if (strcmp(v, ad->choices[i]) == 0) return PD_OK;
    char list[256];
    size_t len = 0;
    for (int i = 0; ad->choices[i] && len < sizeof list; i++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s'", i ? ", " : "", ad->choices[i]);
    return pd_error_set(err, PD_EINVAL, op->loc, "%s: attribute %s is '%s'; expected one of %s",
                        def->type, ad->name, pd_program_excerpt(v, value, sizeof value), list);
  }
  if (ad->type == PD_ATTR_BLOCK) {
    int nblocks = block->program ? block->program->nblocks : 0;
    if (a->v.i == 0)
      return pd_error_set(err, PD_EINVAL, op->loc,
                          "%s: attribute %s cannot be block 0, the global block", def->type, ad->name);
    if (a->v.i < 0 || a->v.i >= nblocks)
      return pd_error_set(err, PD_EINVAL, op->loc,
                          "%s: attribute %s names block %d, but the program has %d block%s",
                          def->type, ad->name, (int)a->v.i, nblocks, nblocks == 1 ? "" : "s");
  }
  return PD_OK;
}

static pd_status check_attrs(const pd_opdef *def, const pd_op_desc *op, const pd_block *block,
                             pd_error *err) {
  pd_status st;
  for (int i = 0; i < op->nattrs; i++) {
    const pd_attr *a = &op->attrs[i];
    const pd_attrdef *ad = a->name ? pd_opdef_attr(def, a->name) : NULL;
    if (!ad && a->name) ad = find_common_attr(a->name);
    if (!ad) {
      const char *names[32];
      char why[512], name[NAME_ROOM];
      int n = def->nattrs < 32 ? def->nattrs : 32;
      for (int k = 0; k < n; k++) names[k] = def->attrs[k].name;
      pd_program_excerpt(a->name, name, sizeof name);
      explain_unknown(why, sizeof why, name, def->type, "attributes", names, n);
      return pd_error_set(err, PD_EINVAL, op->loc, "%s: unknown attribute %s%s", def->type, name,
                          why);
    }
    if ((st = check_attr(def, op, block, ad, a, err))) return st;
  }
  for (int i = 0; i < def->nattrs; i++)
    if (def->attrs[i].required && !pd_op_attr(op, def->attrs[i].name))
      return pd_error_set(err, PD_EINVAL, op->loc, "%s: attribute %s is required", def->type,
                          def->attrs[i].name);
  return PD_OK;
}

/* ---- Attributes an older version wrote in another type ---- */

/* Whether the float64 d survives as a float (NaN and the infinities do). */
static bool fits_float(double d) { return d != d || (double)(float)d == d; }

/* Replace the elements of list attribute a by n elements of type t (data: pd_attr_list's
 * layout for t); 0 or -1 (out of memory, a unchanged). */
static int retype_list(pd_attr *a, pd_attr_type t, const void *data, int n) {
  size_t es = pd_attr_list_elem_size(t);
  void *copy = pd_malloc(es * (size_t)(n ? n : 1));
  if (!copy) return -1;
  if (n) memcpy(copy, data, es * (size_t)n);
  pd_free(a->ints), pd_free(a->longs), pd_free(a->floats), pd_free(a->doubles);
  a->ints = NULL, a->longs = NULL, a->floats = NULL, a->doubles = NULL;
  if (t == PD_ATTR_INTS) a->ints = copy;
  else if (t == PD_ATTR_LONGS) a->longs = copy;
  else a->floats = copy;
  a->type = t;
  return 0;
}

const pd_attrdef *pd_opdef_attr_any(const pd_opdef *def, const char *name) {
  const pd_attrdef *ad = name ? pd_opdef_attr(def, name) : NULL;
  return ad || !name ? ad : find_common_attr(name);
}

pd_status pd_opdef_convert_attr(const pd_opdef *def, const pd_op_desc *op, pd_attr *a,
                                pd_error *err) {
  const pd_attrdef *ad = pd_opdef_attr_any(def, a->name);
  if (!ad || ad->type == a->type) return PD_OK;
  pd_attr_type want = ad->type, got = a->type;
  int64_t iv = got == PD_ATTR_INT ? a->v.i : got == PD_ATTR_LONG ? a->v.l : 0;
  bool is_int = got == PD_ATTR_INT || got == PD_ATTR_LONG;
  const char *loss = NULL;
  char value[72] = "";
  if (want == PD_ATTR_BOOLEAN && is_int) {
    if (iv == 0 || iv == 1) a->v.b = iv == 1, a->type = want;
    else loss = "only 0 and 1 stand for a BOOLEAN";
    snprintf(value, sizeof value, " %lld", (long long)iv);
  } else if ((want == PD_ATTR_INT || want == PD_ATTR_LONG) &&
             (is_int || got == PD_ATTR_BOOLEAN)) {
    if (got == PD_ATTR_BOOLEAN) iv = a->v.b;
    if (want == PD_ATTR_INT && !fits_int32(iv)) loss = "out of INT's range";
    else if (want == PD_ATTR_INT) a->v.i = (int32_t)iv, a->type = want;
    else a->v.l = iv, a->type = want;
    snprintf(value, sizeof value, " %lld", (long long)iv);
  } else if (want == PD_ATTR_FLOAT && got == PD_ATTR_FLOAT64) {
    if (fits_float(a->v.d)) a->v.f = (float)a->v.d, a->type = want;
    else loss = "a FLOAT cannot hold it exactly";
    snprintf(value, sizeof value, " %.17g", a->v.d);
  } else if (want == PD_ATTR_FLOAT64 && got == PD_ATTR_FLOAT) {
    a->v.d = a->v.f, a->type = want;
  } else if (want == PD_ATTR_INTS && got == PD_ATTR_LONGS) {
    int32_t *v = pd_malloc(sizeof *v * (size_t)(a->n ? a->n : 1));
    if (!v) return pd_error_set(err, PD_ENOMEM, op->loc, "out of memory");
    for (int i = 0; i < a->n && !loss; i++) {
      v[i] = (int32_t)a->longs[i];
      if (!fits_int32(a->longs[i])) {
        loss = "out of INT's range";
        snprintf(value, sizeof value, " with element %d %lld", i, (long long)a->longs[i]);
      }
    }
    if (!loss && retype_list(a, want, v, a->n)) loss = "";
    pd_free(v);
  } else if (want == PD_ATTR_LONGS && got == PD_ATTR_INTS) {
    int64_t *v = pd_malloc(sizeof *v * (size_t)(a->n ? a->n : 1));
    if (!v) return pd_error_set(err, PD_ENOMEM, op->loc, "out of memory");
    for (int i = 0; i < a->n; i++) v[i] = a->ints[i];
    if (retype_list(a, want, v, a->n)) loss = "";
    pd_free(v);
  } else if (want == PD_ATTR_FLOATS && got == PD_ATTR_FLOAT64S) {
    float *v = pd_malloc(sizeof *v * (size_t)(a->n ? a->n : 1));
    if (!v) return pd_error_set(err, PD_ENOMEM, op->loc, "out of memory");
    for (int i = 0; i < a->n && !loss; i++) {
      v[i] = (float)a->doubles[i];
      if (!fits_float(a->doubles[i])) {
        loss = "a FLOAT cannot hold it exactly";
        snprintf(value, sizeof value, " with element %d %.17g", i, a->doubles[i]);
      }
    }
    if (!loss && retype_list(a, want, v, a->n)) loss = "";
    pd_free(v);
  } else if (a->n == 0 && (want == PD_ATTR_INTS || want == PD_ATTR_LONGS || want == PD_ATTR_FLOATS) &&
             (got == PD_ATTR_INTS || got == PD_ATTR_LONGS || got == PD_ATTR_FLOATS ||
              got == PD_ATTR_FLOAT64S)) {
    /* an empty list: a PIR program's empty a_array says no element kind */
    if (retype_list(a, want, NULL, 0)) loss = "";
  }
  if (loss && !*loss) return pd_error_set(err, PD_ENOMEM, op->loc, "out of memory");
  if (loss)
    return pd_error_set(err, PD_ETYPE, op->loc,
                        "%s: attribute %s is %s%s, which does not convert to %s (%s)", def->type,
                        ad->name, pd_attr_type_name(got), value, pd_attr_type_name(want), loss);
  return PD_OK; /* converted, or a pair pd_opdef_check names */
}

pd_status pd_opdef_check(const pd_op_desc *op, const pd_block *block, pd_error *err) {
  const pd_opdef *def = pd_opdef_lookup(op->type);
  if (!def) return unknown_op(op, err);
  pd_status st;
  if ((st = check_slots(def, op, block, true, err)) || (st = check_slots(def, op, block, false, err)))
    return st;
  return check_attrs(def, op, block, err);
}

/* ---- Defaults ---- */

/* Set attribute ad's default on op; 0 or -1 (out of memory). Empty lists pass a non-NULL
 * pointer so that the setters never copy from NULL. */
static int set_default(pd_op_desc *op, const pd_attrdef *ad) {
  static const int32_t no_ints[1];
  static const int64_t no_longs[1];
  static const float no_floats[1];
  static const char *const no_strings[1] = {""};
  const pd_attrval *v = &ad->def;
  switch (ad->type) {
    case PD_ATTR_INT: return pd_op_set_attr_int(op, ad->name, (int32_t)v->i);
    case PD_ATTR_LONG: return pd_op_set_attr_long(op, ad->name, v->i);
    case PD_ATTR_FLOAT: return pd_op_set_attr_float(op, ad->name, (float)v->f);
    case PD_ATTR_FLOAT64: return pd_op_set_attr_double(op, ad->name, v->f);
    case PD_ATTR_BOOLEAN: return pd_op_set_attr_bool(op, ad->name, v->i != 0);
    case PD_ATTR_STRING: return pd_op_set_attr_string(op, ad->name, v->s ? v->s : "");
    case PD_ATTR_INTS: return pd_op_set_attr_ints(op, ad->name, v->n, v->n ? v->l.ints : no_ints);
    case PD_ATTR_LONGS:
      return pd_op_set_attr_longs(op, ad->name, v->n, v->n ? v->l.longs : no_longs);
    case PD_ATTR_FLOATS:
      return pd_op_set_attr_floats(op, ad->name, v->n, v->n ? v->l.floats : no_floats);
    case PD_ATTR_STRINGS:
      return pd_op_set_attr_strings(op, ad->name, v->n, v->n ? v->l.strings : no_strings);
    default: return 0; /* BLOCK and the other list types are never defaulted */
  }
}

pd_status pd_opdef_fill_defaults(pd_op_desc *op, pd_error *err) {
  const pd_opdef *def = pd_opdef_lookup(op->type);
  if (!def) return unknown_op(op, err);
  for (int i = 0; i < def->nattrs; i++) {
    const pd_attrdef *ad = &def->attrs[i];
    if (ad->required || pd_op_attr(op, ad->name)) continue;
    if (set_default(op, ad) != 0) return pd_error_set(err, PD_ENOMEM, op->loc, "out of memory");
  }
  return PD_OK;
}

/* ---- Shape inference ---- */

pd_status pd_opdef_infer_shape(pd_op_desc *op, pd_block *block, pd_error *err) {
  const pd_opdef *def = pd_opdef_lookup(op->type);
  if (!def) return unknown_op(op, err);
  pd_infer_ctx ctx = {.def = def, .op = op, .block = block, .err = err};
  if ((def->flags & (PD_OPF_FLOAT | PD_OPF_SEQUENCE)) && def->ninputs > 0 &&
      pd_infer_nin(&ctx, def->inputs[0].name) > 0) {
    const char *slot = def->inputs[0].name;
    const pd_var_desc *v;
    pd_status st = pd_infer_in(&ctx, slot, 0, &v, NULL);
    if (st) return st;
    if ((def->flags & PD_OPF_FLOAT) && !pd_dtype_is_float(v->dtype))
      return pd_infer_fail(&ctx, PD_ETYPE, "%s must be float16, float32 or float64, got %s", slot,
                           pd_dtype_name(v->dtype));
    if ((def->flags & PD_OPF_SEQUENCE) && v->lod_level < 1)
      return pd_infer_fail(&ctx, PD_ETYPE, "%s must be a sequence (lod_level >= 1), got lod_level %d",
                           slot, v->lod_level);
  }
  return def->infer_shape(&ctx);
}

pd_status pd_opdef_prepare(pd_op_desc *op, pd_block *block, pd_error *err) {
  pd_status st;
  if ((st = pd_opdef_check(op, block, err)) || (st = pd_opdef_fill_defaults(op, err)) ||
      (st = pd_opdef_infer_shape(op, block, err)))
    return pd_op_error_calls(err, op, st);
  return PD_OK;
}
