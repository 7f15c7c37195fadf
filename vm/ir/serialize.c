/* serialize.c -- pd_program <-> ProgramDesc bytes (framework.proto through protobuf-c), and the
 * .pdmodel file helpers. The mapping is described in serialize.h. Writing builds protobuf-c
 * messages that borrow the program's strings and arrays (an arena holds what had to be made);
 * reading decodes with protobuf-c, converts through the vm/ir/program.h API and validates. */
#include "config.h"
#include "vm/ir/serialize.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vm/ir/framework.pb-c.h"
#include "vm/ir/pb_alloc.h"
#include "vm/ir/pir.h"

typedef Paddle__Framework__Proto__ProgramDesc pb_program;
typedef Paddle__Framework__Proto__Version pb_version;
typedef Paddle__Framework__Proto__BlockDesc pb_block;
typedef Paddle__Framework__Proto__VarDesc pb_var;
typedef Paddle__Framework__Proto__VarDesc__Attr pb_var_attr;
typedef Paddle__Framework__Proto__VarType pb_var_type;
typedef Paddle__Framework__Proto__VarType__TensorDesc pb_tensor;
typedef Paddle__Framework__Proto__VarType__LoDTensorDesc pb_lod_tensor;
typedef Paddle__Framework__Proto__VarType__LoDTensorArrayDesc pb_tensor_array;
typedef Paddle__Framework__Proto__OpDesc pb_op;
typedef Paddle__Framework__Proto__OpDesc__Var pb_slot;
typedef Paddle__Framework__Proto__OpDesc__Attr pb_attr;

/* The var attribute that marks a shape as unknown (ndims -1); see serialize.h. */
#define SHAPE_UNKNOWN_ATTR "pdlang.shape_unknown"
/* The op attribute that carries an op's source location. */
#define CALLSTACK_ATTR "op_callstack"

/* The IR's enums use Fluid's numbers, so values cross over with a cast. Checked here. */
#define SAME_NUMBER(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours);
#define PB_VT(name) PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__##name
#define PB_AT(name) PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__##name
SAME_NUMBER(PD_VAR_LOD_TENSOR, PB_VT(LOD_TENSOR))
SAME_NUMBER(PD_VAR_SELECTED_ROWS, PB_VT(SELECTED_ROWS))
SAME_NUMBER(PD_VAR_FEED_MINIBATCH, PB_VT(FEED_MINIBATCH))
SAME_NUMBER(PD_VAR_FETCH_LIST, PB_VT(FETCH_LIST))
SAME_NUMBER(PD_VAR_STEP_SCOPES, PB_VT(STEP_SCOPES))
SAME_NUMBER(PD_VAR_LOD_RANK_TABLE, PB_VT(LOD_RANK_TABLE))
SAME_NUMBER(PD_VAR_LOD_TENSOR_ARRAY, PB_VT(LOD_TENSOR_ARRAY))
SAME_NUMBER(PD_VAR_RAW, PB_VT(RAW))
SAME_NUMBER(PD_BOOL, PB_VT(BOOL))
SAME_NUMBER(PD_INT16, PB_VT(INT16))
SAME_NUMBER(PD_INT32, PB_VT(INT32))
SAME_NUMBER(PD_INT64, PB_VT(INT64))
SAME_NUMBER(PD_FP16, PB_VT(FP16))
SAME_NUMBER(PD_FP32, PB_VT(FP32))
SAME_NUMBER(PD_FP64, PB_VT(FP64))
SAME_NUMBER(PD_UINT8, PB_VT(UINT8))
SAME_NUMBER(PD_INT8, PB_VT(INT8))
SAME_NUMBER(PD_BF16, PB_VT(BF16))
SAME_NUMBER(PD_ATTR_INT, PB_AT(INT))
SAME_NUMBER(PD_ATTR_FLOAT, PB_AT(FLOAT))
SAME_NUMBER(PD_ATTR_STRING, PB_AT(STRING))
SAME_NUMBER(PD_ATTR_INTS, PB_AT(INTS))
SAME_NUMBER(PD_ATTR_FLOATS, PB_AT(FLOATS))
SAME_NUMBER(PD_ATTR_STRINGS, PB_AT(STRINGS))
SAME_NUMBER(PD_ATTR_BOOLEAN, PB_AT(BOOLEAN))
SAME_NUMBER(PD_ATTR_BOOLEANS, PB_AT(BOOLEANS))
SAME_NUMBER(PD_ATTR_BLOCK, PB_AT(BLOCK))
SAME_NUMBER(PD_ATTR_LONG, PB_AT(LONG))
SAME_NUMBER(PD_ATTR_BLOCKS, PB_AT(BLOCKS))
SAME_NUMBER(PD_ATTR_LONGS, PB_AT(LONGS))
SAME_NUMBER(PD_ATTR_FLOAT64S, PB_AT(FLOAT64S))
SAME_NUMBER(PD_ATTR_FLOAT64, PB_AT(FLOAT64))

/* Where each attribute type keeps its value in OpDesc.Attr, and in pd_attr.v for scalars:
 * X(type, proto field, union member). STRING (a pointer, no has_ flag) is handled apart. */
#define SCALAR_FIELDS(X)              \
  X(PD_ATTR_INT, i, i)                \
  X(PD_ATTR_FLOAT, f, f)              \
  X(PD_ATTR_BOOLEAN, b, b)            \
  X(PD_ATTR_BLOCK, block_idx, i)      \
  X(PD_ATTR_LONG, l, l)               \
  X(PD_ATTR_FLOAT64, float64, d)
/* X(type, proto field): the proto keeps n_FIELD and FIELD. Elements have the IR's layout
 * (pd_op_set_attr_list), except BOOLEANS: protobuf_c_boolean on the proto side. */
#define LIST_FIELDS(X)                \
  X(PD_ATTR_INTS, ints)               \
  X(PD_ATTR_FLOATS, floats)           \
  X(PD_ATTR_STRINGS, strings)         \
  X(PD_ATTR_BOOLEANS, bools)          \
  X(PD_ATTR_BLOCKS, blocks_idx)       \
  X(PD_ATTR_LONGS, longs)             \
  X(PD_ATTR_FLOAT64S, float64s)

static const pd_loc nowhere = {0};

/* ================= Writing ================= */

/* Everything the writer allocates (messages, pointer arrays, converted values), freed at once.
 * Strings and numeric arrays are borrowed from the program, not copied. */
typedef struct arena {
  void **ptrs;
  size_t n, cap;
} arena;

static void *arena_alloc(arena *ar, size_t count, size_t size) {
  if (PD_GROW(ar->ptrs, ar->cap, ar->n + 1)) return NULL;
  void *p = pd_calloc(count ? count : 1, size);
  if (p) ar->ptrs[ar->n++] = p;
  return p;
}

static void arena_free(arena *ar) {
  for (size_t i = 0; i < ar->n; i++) pd_free(ar->ptrs[i]);
  pd_free(ar->ptrs);
}

/* A new message of `type`, set to its generated INIT value; NULL on out of memory. */
#define NEW_MSG(ar, type, INIT) ((type *)new_msg((ar), &(const type)INIT, sizeof(type)))
static void *new_msg(arena *ar, const void *init, size_t size) {
  void *m = arena_alloc(ar, 1, size);
  if (m) memcpy(m, init, size);
  return m;
}

static pb_tensor *write_tensor(arena *ar, const pd_var_desc *v) {
  pb_tensor *t = NEW_MSG(ar, pb_tensor, PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TENSOR_DESC__INIT);
  if (!t) return NULL;
  t->data_type = (Paddle__Framework__Proto__VarType__Type)v->dtype;
  if (v->ndims > 0) {
    t->n_dims = (size_t)v->ndims;
    t->dims = v->dims;
  }
  return t;
}

/* The tensor description of a var of a tensor kind, hung on vt. 0 or -1. */
static int write_tensor_desc(arena *ar, pb_var_type *vt, const pd_var_desc *v) {
  pb_tensor *t = write_tensor(ar, v);
  if (!t) return -1;
  if (v->type == PD_VAR_SELECTED_ROWS) {
    vt->selected_rows = t;
  } else if (v->type == PD_VAR_LOD_TENSOR_ARRAY) {
    pb_tensor_array *ta = NEW_MSG(ar, pb_tensor_array,
                                  PADDLE__FRAMEWORK__PROTO__VAR_TYPE__LO_DTENSOR_ARRAY_DESC__INIT);
    if (!ta) return -1;
    ta->tensor = t;
    ta->has_lod_level = v->lod_level != 0;
    ta->lod_level = v->lod_level;
    vt->tensor_array = ta;
  } else {
    pb_lod_tensor *lt =
        NEW_MSG(ar, pb_lod_tensor, PADDLE__FRAMEWORK__PROTO__VAR_TYPE__LO_DTENSOR_DESC__INIT);
    if (!lt) return -1;
    lt->tensor = t;
    lt->has_lod_level = v->lod_level != 0;
    lt->lod_level = v->lod_level;
    vt->lod_tensor = lt;
  }
  return 0;
}

static pb_var *write_var(arena *ar, const pd_var_desc *v) {
  pb_var *vd = NEW_MSG(ar, pb_var, PADDLE__FRAMEWORK__PROTO__VAR_DESC__INIT);
  pb_var_type *vt = NEW_MSG(ar, pb_var_type, PADDLE__FRAMEWORK__PROTO__VAR_TYPE__INIT);
  if (!vd || !vt) return NULL;
  vd->name = v->name;
  vd->type = vt;
  vt->type = (Paddle__Framework__Proto__VarType__Type)v->type;
  vd->has_persistable = v->persistable;
  vd->persistable = v->persistable;
  vd->has_stop_gradient = v->stop_gradient;
  vd->stop_gradient = v->stop_gradient;
  if (!pd_var_type_has_tensor(v->type)) return vd;
  if (write_tensor_desc(ar, vt, v)) return NULL;
  if (v->ndims < 0) {
    pb_var_attr *a = NEW_MSG(ar, pb_var_attr, PADDLE__FRAMEWORK__PROTO__VAR_DESC__ATTR__INIT);
    vd->attrs = arena_alloc(ar, 1, sizeof *vd->attrs);
    if (!a || !vd->attrs) return NULL;
    a->name = (char *)SHAPE_UNKNOWN_ATTR;
    a->type = PB_AT(INT);
    a->has_i = 1;
    a->i = 1;
    vd->attrs[0] = a;
    vd->n_attrs = 1;
  }
  return vd;
}

static int write_slots(arena *ar, const pd_slot *slots, int n, size_t *n_out, pb_slot ***out) {
  if (n <= 0) return 0;
  pb_slot **ps = arena_alloc(ar, (size_t)n, sizeof *ps);
  if (!ps) return -1;
  for (int k = 0; k < n; k++) {
    pb_slot *s = NEW_MSG(ar, pb_slot, PADDLE__FRAMEWORK__PROTO__OP_DESC__VAR__INIT);
    if (!s) return -1;
    s->parameter = slots[k].param;
    s->n_arguments = (size_t)slots[k].nargs;
    s->arguments = slots[k].args;
    ps[k] = s;
  }
  *n_out = (size_t)n;
  *out = ps;
  return 0;
}

static pb_attr *write_attr(arena *ar, const pd_attr *a) {
  pb_attr *pa = NEW_MSG(ar, pb_attr, PADDLE__FRAMEWORK__PROTO__OP_DESC__ATTR__INIT);
  if (!pa) return NULL;
  pa->name = a->name;
  pa->type = (Paddle__Framework__Proto__AttrType)a->type;
  const void *data = pd_attr_list(a);
  size_t n = a->n > 0 ? (size_t)a->n : 0;
  if (a->type == PD_ATTR_BOOLEANS && n) {
    protobuf_c_boolean *bools = arena_alloc(ar, n, sizeof *bools);
    if (!bools) return NULL;
    for (size_t e = 0; e < n; e++) bools[e] = a->bools[e];
    data = bools;
  }
  switch (a->type) {
#define X(type, field, member) \
  case type:                   \
    pa->has_##field = 1;       \
    pa->field = a->v.member;   \
    break;
    SCALAR_FIELDS(X)
#undef X
#define X(type, field)        \
  case type:                  \
    pa->n_##field = n;        \
    pa->field = (void *)data; \
    break;
    LIST_FIELDS(X)
#undef X
  case PD_ATTR_STRING: pa->s = a->v.s; break;
  }
  return pa;
}

/* The "op_callstack" attribute: the op's location "FILE:LINE:COL", then each call it is
 * inside, innermost first, as "FILE:LINE:COL: NAME()". */
static pb_attr *write_callstack(arena *ar, const pd_op_desc *op) {
  int n = 1 + (op->calls ? op->calls->n : 0);
  pb_attr *pa = NEW_MSG(ar, pb_attr, PADDLE__FRAMEWORK__PROTO__OP_DESC__ATTR__INIT);
  char **strings = arena_alloc(ar, (size_t)n, sizeof *strings);
  if (!pa || !strings) return NULL;
  for (int i = 0; i < n; i++) {
    pd_loc loc = i == 0 ? op->loc : op->calls->sites[i - 1].loc;
    const char *file = loc.file ? loc.file : "", *fn = i == 0 ? NULL : op->calls->sites[i - 1].fn;
    int len = fn ? snprintf(NULL, 0, "%s:%d:%d: %s()", file, loc.line, loc.col, fn)
                 : snprintf(NULL, 0, "%s:%d:%d", file, loc.line, loc.col);
    char *text = len < 0 ? NULL : arena_alloc(ar, (size_t)len + 1, 1);
    if (!text) return NULL;
    if (fn) snprintf(text, (size_t)len + 1, "%s:%d:%d: %s()", file, loc.line, loc.col, fn);
    else snprintf(text, (size_t)len + 1, "%s:%d:%d", file, loc.line, loc.col);
    strings[i] = text;
  }
  pa->name = (char *)CALLSTACK_ATTR;
  pa->type = PB_AT(STRINGS);
  pa->n_strings = (size_t)n;
  pa->strings = strings;
  return pa;
}

static pb_op *write_op(arena *ar, const pd_op_desc *op) {
  pb_op *od = NEW_MSG(ar, pb_op, PADDLE__FRAMEWORK__PROTO__OP_DESC__INIT);
  if (!od) return NULL;
  od->type = op->type;
  if (write_slots(ar, op->inputs, op->ninputs, &od->n_inputs, &od->inputs) ||
      write_slots(ar, op->outputs, op->noutputs, &od->n_outputs, &od->outputs))
    return NULL;
  bool has_loc = op->loc.line > 0;
  size_t cap = (size_t)op->nattrs + has_loc;
  if (cap == 0) return od;
  if (!(od->attrs = arena_alloc(ar, cap, sizeof *od->attrs))) return NULL;
  for (int k = 0; k < op->nattrs; k++) {
    if (has_loc && strcmp(op->attrs[k].name, CALLSTACK_ATTR) == 0) continue; /* loc wins */
    if (!(od->attrs[od->n_attrs++] = write_attr(ar, &op->attrs[k]))) return NULL;
  }
  if (has_loc && !(od->attrs[od->n_attrs++] = write_callstack(ar, op))) return NULL;
  return od;
}

static pb_block *write_block(arena *ar, const pd_block *b) {
  pb_block *bd = NEW_MSG(ar, pb_block, PADDLE__FRAMEWORK__PROTO__BLOCK_DESC__INIT);
  if (!bd) return NULL;
  bd->idx = b->idx;
  bd->parent_idx = b->parent_idx;
  bd->has_forward_block_idx = b->forward_block_idx != -1;
  bd->forward_block_idx = b->forward_block_idx;
  if (b->nvars > 0) {
    if (!(bd->vars = arena_alloc(ar, (size_t)b->nvars, sizeof *bd->vars))) return NULL;
    for (int j = 0; j < b->nvars; j++)
      if (!(bd->vars[bd->n_vars++] = write_var(ar, b->vars[j]))) return NULL;
  }
  if (b->nops > 0) {
    if (!(bd->ops = arena_alloc(ar, (size_t)b->nops, sizeof *bd->ops))) return NULL;
    for (int j = 0; j < b->nops; j++)
      if (!(bd->ops[bd->n_ops++] = write_op(ar, b->ops[j]))) return NULL;
  }
  return bd;
}

static pb_program *write_program(arena *ar, const pd_program *p) {
  pb_program *pd = NEW_MSG(ar, pb_program, PADDLE__FRAMEWORK__PROTO__PROGRAM_DESC__INIT);
  pb_version *ver = NEW_MSG(ar, pb_version, PADDLE__FRAMEWORK__PROTO__VERSION__INIT);
  if (!pd || !ver) return NULL;
  ver->has_version = 1;
  ver->version = p->version;
  pd->version = ver;
  if (!(pd->blocks = arena_alloc(ar, (size_t)p->nblocks, sizeof *pd->blocks))) return NULL;
  for (int i = 0; i < p->nblocks; i++)
    if (!(pd->blocks[pd->n_blocks++] = write_block(ar, p->blocks[i]))) return NULL;
  return pd;
}

pd_status pd_program_to_bytes(const pd_program *p, uint8_t **out, size_t *len, pd_error *err) {
  *out = NULL;
  *len = 0;
  pd_error verr = {0};
  if (pd_program_validate(p, &verr)) {
    pd_error_set(err, PD_EINVAL, nowhere, "cannot serialize an invalid program: %s",
                 verr.msg ? verr.msg : pd_status_str(verr.status));
    pd_error_clear(&verr);
    return PD_EINVAL;
  }
  arena ar = {0};
  pd_status st = PD_OK;
  pb_program *pd = write_program(&ar, p);
  if (!pd) {
    st = PD_ENOMEM;
  } else {
    size_t size = pd_pb_program_desc__get_packed_size(pd);
    uint8_t *buf = pd_malloc(size);
    if (!buf) {
      st = PD_ENOMEM;
    } else {
      *len = pd_pb_program_desc__pack(pd, buf);
      *out = buf;
    }
  }
  arena_free(&ar);
  if (st) pd_error_set(err, st, nowhere, "out of memory serializing a program");
  return st;
}

/* ================= Reading ================= */

/* Bytes for one name in a message, for "block B, op I (TYPE)", and for that plus an attribute. */
enum { ROOM = 72, CTX_ROOM = 160, ATTR_CTX_ROOM = CTX_ROOM + ROOM + 16 };

static pd_status fail(pd_error *err, pd_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pd_status fail(pd_error *err, pd_status st, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *what = st == PD_EFORMAT        ? "malformed ProgramDesc: "
                     : st == PD_EUNSUPPORTED ? "unsupported ProgramDesc: "
                                             : "";
  return pd_error_set(err, st, nowhere, "%s%s", what, msg);
}
#define MALFORMED(err, ...) fail((err), PD_EFORMAT, __VA_ARGS__)
#define NOMEM(err) fail((err), PD_ENOMEM, "out of memory loading a ProgramDesc")

/* A value that is not one of the IR's: unsupported if Fluid's enum names it, malformed if not. */
static pd_status bad_enum(pd_error *err, const ProtobufCEnumDescriptor *desc, const char *ctx,
                          const char *what, int value) {
  const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(desc, value);
  if (ev)
    return fail(err, PD_EUNSUPPORTED, "%s: %s %s is not supported by pdlang", ctx, what,
                ev->name);
  return MALFORMED(err, "%s: unknown %s %d", ctx, what, value);
}

static bool shape_unknown(const pb_var *vd) {
  for (size_t k = 0; k < vd->n_attrs; k++) {
    const pb_var_attr *a = vd->attrs[k];
    if (a && a->name && strcmp(a->name, SHAPE_UNKNOWN_ATTR) == 0 && a->has_i && a->i) return true;
  }
  return false;
}

static pd_status read_var(pd_block *b, const pb_var *vd, size_t j, pd_error *err) {
  char name[ROOM], ctx[CTX_ROOM];
  if (!vd->name || !vd->name[0]) return MALFORMED(err, "block %d: var %zu has no name", b->idx, j);
  snprintf(ctx, sizeof ctx, "block %d, var '%s'", b->idx,
           pd_program_excerpt(vd->name, name, sizeof name));
  if (pd_block_find_var_local(b, vd->name))
    return MALFORMED(err, "block %d declares var '%s' twice", b->idx, name);
  const pb_var_type *vt = vd->type;
  if (!vt) return MALFORMED(err, "%s has no type", ctx);
  if (!pd_var_type_valid((int)vt->type))
    return bad_enum(err, &pd_pb_var_type__type__descriptor, ctx, "var type",
                    (int)vt->type);
  pd_var_desc *v = pd_block_var(b, vd->name);
  if (!v) return NOMEM(err);
  v->type = (pd_var_type)vt->type;
  v->persistable = vd->persistable;
  v->stop_gradient = vd->stop_gradient;
  if (!pd_var_type_has_tensor(v->type)) return PD_OK;

  const pb_tensor *t;
  int lod_level = 0;
  if (v->type == PD_VAR_SELECTED_ROWS) {
    t = vt->selected_rows;
  } else if (v->type == PD_VAR_LOD_TENSOR_ARRAY) {
    t = vt->tensor_array ? vt->tensor_array->tensor : NULL;
    lod_level = vt->tensor_array ? vt->tensor_array->lod_level : 0;
  } else {
    t = vt->lod_tensor ? vt->lod_tensor->tensor : NULL;
    lod_level = vt->lod_tensor ? vt->lod_tensor->lod_level : 0;
  }
  if (!t)
    return MALFORMED(err, "%s: a %s var needs a tensor description", ctx,
                     pd_var_type_name(v->type));
  if (!pd_dtype_valid((int)t->data_type))
    return bad_enum(err, &pd_pb_var_type__type__descriptor, ctx,
                    "element type", (int)t->data_type);
  if (t->n_dims > PD_MAX_RANK)
    return MALFORMED(err, "%s has %zu dimensions; the most allowed is %d", ctx, t->n_dims,
                     PD_MAX_RANK);
  v->dtype = (pd_dtype)t->data_type;
  v->lod_level = lod_level;
  int ndims = t->n_dims == 0 && shape_unknown(vd) ? -1 : (int)t->n_dims;
  if (pd_var_set_shape(v, ndims, t->dims)) return NOMEM(err);
  return PD_OK;
}

typedef int (*slot_setter)(pd_op_desc *, const char *, int, const char *const *);
typedef const pd_slot *(*slot_getter)(const pd_op_desc *, const char *);

static pd_status read_slots(pd_op_desc *op, pb_slot *const *slots, size_t n, const char *dir,
                            slot_setter set, slot_getter get, const char *ctx, pd_error *err) {
  char param[ROOM];
  for (size_t k = 0; k < n; k++) {
    const pb_slot *s = slots[k];
    if (!s || !s->parameter || !s->parameter[0])
      return MALFORMED(err, "%s: %s %zu has no parameter name", ctx, dir, k);
    pd_program_excerpt(s->parameter, param, sizeof param);
    if (get(op, s->parameter)) return MALFORMED(err, "%s: %s '%s' is bound twice", ctx, dir, param);
    if (s->n_arguments > INT_MAX)
      return MALFORMED(err, "%s: %s '%s' has too many arguments", ctx, dir, param);
    for (size_t a = 0; a < s->n_arguments; a++)
      if (!s->arguments[a])
        return MALFORMED(err, "%s: %s '%s' argument %zu has no name", ctx, dir, param, a);
    if (set(op, s->parameter, (int)s->n_arguments, (const char *const *)s->arguments))
      return NOMEM(err);
  }
  return PD_OK;
}

/* Decimal digits [s, e) as an int >= 0; false if empty, not digits or too large. */
static bool parse_count(const char *s, const char *e, int *out) {
  long long v = 0;
  if (s == e) return false;
  for (; s < e; s++) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + (*s - '0');
    if (v > INT_MAX) return false;
  }
  *out = (int)v;
  return true;
}

/* "FILE:LINE:COL" in [text, end) (FILE may itself hold colons, or be empty) -> *loc, whose
 * file (NULL when empty) the caller frees. 1 if the text has that form, 0 if not, -1 on out of
 * memory. */
static int parse_loc(const char *text, const char *end, pd_loc *loc) {
  if (end - text < 4) return 0;  /* ":L:C" at least */
  const char *c2 = end - 1;
  while (c2 > text && *c2 != ':') c2--;
  if (c2 == text) return 0;
  const char *c1 = c2 - 1;
  while (c1 > text && *c1 != ':') c1--;
  *loc = (pd_loc){0};
  if (*c1 != ':' || !parse_count(c1 + 1, c2, &loc->line) || !parse_count(c2 + 1, end, &loc->col) ||
      loc->line < 1)
    return 0;
  if (c1 > text && !(loc->file = pd_strndup(text, (size_t)(c1 - text)))) return -1;
  return 1;
}

/* A call site "FILE:LINE:COL: NAME()" (NAME an identifier) -> *site, whose strings the caller
 * frees. 1, 0 (another form) or -1 (out of memory). */
static int parse_call(const char *text, pd_call_site *site) {
  size_t len = strlen(text);
  if (len < 3 || strcmp(text + len - 2, "()") != 0) return 0;
  const char *name_end = text + len - 2, *name = name_end;
  while (name > text && (isalnum((unsigned char)name[-1]) || name[-1] == '_')) name--;
  if (name == name_end || isdigit((unsigned char)*name) || name - text < 3 || name[-1] != ' ' ||
      name[-2] != ':')
    return 0;
  int r = parse_loc(text, name - 2, &site->loc);
  if (r <= 0) return r;
  if (!(site->fn = pd_strndup(name, (size_t)(name_end - name)))) {
    pd_free((char *)site->loc.file);
    site->loc.file = NULL;
    return -1;
  }
  return 1;
}

static bool same_str(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

/* Does ch hold exactly the n sites? */
static bool same_chain(const pd_callchain *ch, const pd_call_site *sites, int n) {
  if (!ch || ch->n != n) return false;
  for (int i = 0; i < n; i++)
    if (ch->sites[i].loc.line != sites[i].loc.line || ch->sites[i].loc.col != sites[i].loc.col ||
        !same_str(ch->sites[i].loc.file, sites[i].loc.file) ||
        !same_str(ch->sites[i].fn, sites[i].fn))
      return false;
  return true;
}

/* An op_callstack of n strings written by write_callstack -> op->loc and op->calls (shared with
 * the previous op of b when equal: a layer's ops share one chain in memory). 1 if taken, 0 if
 * it has another form (Paddle's Python stack: it stays an attribute), -1 on out of memory. */
static int read_callstack(pd_block *b, pd_op_desc *op, char *const *text, size_t n) {
  if (n < 1 || n > 1 + (size_t)PD_MAX_CALL_DEPTH) return 0;
  pd_loc loc;
  int r = parse_loc(text[0], text[0] + strlen(text[0]), &loc);
  if (r <= 0) return r;
  pd_call_site *sites = n > 1 ? pd_calloc(n - 1, sizeof *sites) : NULL;
  r = n > 1 && !sites ? -1 : 1;
  size_t got = 0;
  for (; r > 0 && got + 1 < n; got++)
    r = text[got + 1] ? parse_call(text[got + 1], &sites[got]) : 0;
  if (r > 0) r = pd_op_set_loc(op, loc) ? -1 : 1;
  if (r > 0 && n > 1) {
    const pd_op_desc *prev = b->nops >= 2 ? b->ops[b->nops - 2] : NULL;
    pd_callchain *ch = prev && same_chain(prev->calls, sites, (int)n - 1)
                           ? pd_callchain_ref(prev->calls)
                           : pd_callchain_new(sites, (int)n - 1);
    if (!ch) r = -1;
    pd_op_set_calls(op, ch);
    pd_callchain_unref(ch);
  }
  for (size_t i = 0; i < got; i++) {
    pd_free((char *)sites[i].loc.file);
    pd_free((char *)sites[i].fn);
  }
  pd_free(sites);
  pd_free((char *)loc.file);
  return r;
}

static pd_status read_attr(pd_block *b, pd_op_desc *op, const pb_attr *pa, size_t k,
                           const char *ctx, pd_error *err) {
  char name[ROOM];
  if (!pa || !pa->name || !pa->name[0])
    return MALFORMED(err, "%s: attribute %zu has no name", ctx, k);
  pd_program_excerpt(pa->name, name, sizeof name);
  bool is_callstack = strcmp(pa->name, CALLSTACK_ATTR) == 0;
  if (pd_op_attr(op, pa->name) || (is_callstack && op->loc.line > 0))
    return MALFORMED(err, "%s: attribute '%s' is set twice", ctx, name);
  char actx[ATTR_CTX_ROOM];
  snprintf(actx, sizeof actx, "%s: attribute '%s'", ctx, name);
  if (!pd_attr_type_valid((int)pa->type))
    return bad_enum(err, &pd_pb_attr_type__descriptor, actx, "type",
                    (int)pa->type);
  pd_attr_type type = (pd_attr_type)pa->type;
  if (is_callstack && type == PD_ATTR_STRINGS && pa->n_strings >= 1 && pa->strings[0]) {
    int r = read_callstack(b, op, pa->strings, pa->n_strings);
    if (r < 0) return NOMEM(err);
    if (r > 0) return PD_OK;
  }

  pd_attr view = {.name = pa->name, .type = type};
  size_t n = 0;
  const void *data = NULL;
  switch (type) {
#define X(atype, field, member) \
  case atype:                   \
    if (!pa->has_##field)       \
      return MALFORMED(err, "%s (%s) has no value", actx, pd_attr_type_name(atype)); \
    view.v.member = pa->field;  \
    break;
    SCALAR_FIELDS(X)
#undef X
#define X(atype, field)    \
  case atype:              \
    n = pa->n_##field;     \
    data = pa->field;      \
    break;
    LIST_FIELDS(X)
#undef X
  case PD_ATTR_STRING:
    if (!pa->s) return MALFORMED(err, "%s (STRING) has no value", actx);
    view.v.s = pa->s;
    break;
  }
  if (!pd_attr_type_is_list(type)) return pd_op_set_attr(op, &view) ? NOMEM(err) : PD_OK;

  if (n > INT_MAX) return MALFORMED(err, "%s has too many elements", actx);
  for (size_t e = 0; type == PD_ATTR_STRINGS && e < n; e++)
    if (!pa->strings[e]) return MALFORMED(err, "%s: element %zu is missing", actx, e);
  bool *bools = NULL;
  if (type == PD_ATTR_BOOLEANS && n) {
    if (!(bools = pd_malloc(n * sizeof *bools))) return NOMEM(err);
    for (size_t e = 0; e < n; e++) bools[e] = pa->bools[e] != 0;
    data = bools;
  }
  int r = pd_op_set_attr_list(op, pa->name, type, (int)n, data);
  pd_free(bools);
  return r ? NOMEM(err) : PD_OK;
}

static pd_status read_op(pd_block *b, const pb_op *od, size_t j, pd_error *err) {
  char type[ROOM], ctx[CTX_ROOM];
  if (!od->type || !od->type[0]) return MALFORMED(err, "block %d: op %zu has no type", b->idx, j);
  snprintf(ctx, sizeof ctx, "block %d, op %zu (%s)", b->idx, j,
           pd_program_excerpt(od->type, type, sizeof type));
  pd_op_desc *op = pd_block_add_op(b, od->type, -1);
  if (!op) return NOMEM(err);
  pd_status st;
  if ((st = read_slots(op, od->inputs, od->n_inputs, "input", pd_op_set_input, pd_op_input, ctx,
                       err)) ||
      (st = read_slots(op, od->outputs, od->n_outputs, "output", pd_op_set_output, pd_op_output,
                       ctx, err)))
    return st;
  for (size_t k = 0; k < od->n_attrs; k++)
    if ((st = read_attr(b, op, od->attrs[k], k, ctx, err))) return st;
  return PD_OK;
}

static pd_status read_block(pd_program *p, const pb_block *bd, size_t i, pd_error *err) {
  if (!bd) return MALFORMED(err, "block %zu is missing", i);
  if (bd->idx < 0 || (size_t)bd->idx != i)
    return MALFORMED(err, "the block at position %zu has idx %d; blocks must be stored in order",
                     i, (int)bd->idx);
  pd_block *b = i == 0 ? p->blocks[0] : pd_program_add_block(p, bd->parent_idx);
  if (!b) return NOMEM(err);
  b->parent_idx = bd->parent_idx;
  b->forward_block_idx = bd->forward_block_idx;
  if (bd->n_vars > INT_MAX || bd->n_ops > INT_MAX)
    return MALFORMED(err, "block %zu has too many vars or ops", i);
  pd_status st;
  for (size_t j = 0; j < bd->n_vars; j++) {
    if (!bd->vars[j]) return MALFORMED(err, "block %zu: var %zu is missing", i, j);
    if ((st = read_var(b, bd->vars[j], j, err))) return st;
  }
  for (size_t j = 0; j < bd->n_ops; j++) {
    if (!bd->ops[j]) return MALFORMED(err, "block %zu: op %zu is missing", i, j);
    if ((st = read_op(b, bd->ops[j], j, err))) return st;
  }
  return PD_OK;
}

static pd_status read_program(const pb_program *pd, pd_program **out, pd_error *err) {
  if (pd->n_blocks == 0) return MALFORMED(err, "the program has no blocks");
  if (pd->n_blocks > INT_MAX) return MALFORMED(err, "the program has too many blocks");
  pd_program *p = pd_program_new();
  if (!p) return NOMEM(err);
  p->version = pd->version ? pd->version->version : 0;
  pd_status st = PD_OK;
  for (size_t i = 0; i < pd->n_blocks && !st; i++) st = read_block(p, pd->blocks[i], i, err);
  if (!st) {
    pd_error verr = {0};
    if ((st = pd_program_validate(p, &verr)))
      MALFORMED(err, "%s", verr.msg ? verr.msg : pd_status_str(verr.status));
    pd_error_clear(&verr);
  }
  if (st) {
    pd_program_free(p);
    return st;
  }
  *out = p;
  return PD_OK;
}

pd_status pd_program_from_bytes(const uint8_t *data, size_t len, pd_program **out,
                                pd_error *err) {
  *out = NULL;
  if (!data && len) return pd_error_set(err, PD_EINVAL, nowhere, "no bytes to decode");
  if (len == 0) return MALFORMED(err, "the input is empty");
  bool oom = false;
  ProtobufCAllocator alloc = pd_pb_allocator(&oom);
  pb_program *pd = pd_pb_program_desc__unpack(&alloc, len, data);
  if (!pd) {
    if (oom) return NOMEM(err);
    return MALFORMED(err, "the bytes do not decode as a protobuf ProgramDesc (%zu bytes)", len);
  }
  pd_status st = read_program(pd, out, err);
  pd_pb_program_desc__free_unpacked(pd, &alloc);
  return st;
}

/* ================= Files ================= */

pd_status pd_program_save(const pd_program *p, const char *path, pd_error *err) {
  uint8_t *bytes;
  size_t len;
  pd_status st = pd_program_to_bytes(p, &bytes, &len, err);
  if (st) return st;
  st = pd_write_file_atomic(path, bytes, len, err);
  pd_free(bytes);
  return st;
}

pd_status pd_program_load(const char *path, pd_program **out, pd_error *err) {
  char *bytes;
  size_t len;
  *out = NULL;
  pd_status st = pd_read_file(path, &bytes, &len, err);
  if (st) return st;
  if (pd_pir_is_json(bytes, len)) { /* PaddlePaddle 3's PIR JSON (its errors name the file) */
    st = pd_pir_from_json(bytes, len, path, out, err);
    pd_free(bytes);
    return st;
  }
  st = pd_program_from_bytes((const uint8_t *)bytes, len, out, err);
  pd_free(bytes);
  if (st && err) {
    /* Name the file in the record's location; the message stays as it was. */
    char *msg = err->msg;
    err->msg = NULL;
    pd_error_set(err, st, (pd_loc){path, 0, 0}, "%s", msg ? msg : pd_status_str(st));
    pd_free(msg);
  }
  return st;
}
