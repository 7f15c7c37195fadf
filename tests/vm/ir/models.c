/* models.c -- hand-built programs, a PaddlePaddle-style encoded program, and the malformed
 * variants of model_nested used by the loader tests and the fuzz corpus (see models.h). */
#include "config.h"
#include "tests/vm/ir/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ir/framework.pb-c.h"
#include "vm/ir/serialize.h"

/* ---- Building helpers: each returns 0 or -1, so a builder is one chain of `||`. ---- */

enum { PERSIST = 1, STOP = 2 };
#define SHAPE(...) \
  (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]) { __VA_ARGS__ }
#define SCALAR_SHAPE 0, NULL
#define NO_SHAPE -1, NULL

static int var(pd_block *b, const char *name, pd_var_type type, pd_dtype dtype, int ndims,
               const int64_t *dims, int lod_level, int flags) {
  pd_var_desc *v = pd_block_var(b, name);
  if (!v || pd_var_set_shape(v, ndims, dims)) return -1;
  v->type = type;
  v->dtype = dtype;
  v->lod_level = lod_level;
  v->persistable = flags & PERSIST;
  v->stop_gradient = flags & STOP;
  return 0;
}
#define TENSOR(b, name, dtype, ...) var(b, name, PD_VAR_LOD_TENSOR, dtype, __VA_ARGS__)

/* An op at the end of b, at FILE:line:col (line 0: no location). */
static pd_op_desc *op(pd_block *b, const char *type, const char *file, int line, int col) {
  pd_op_desc *o = pd_block_add_op(b, type, -1);
  if (o && line > 0 && pd_op_set_loc(o, (pd_loc){file, line, col})) return NULL;
  return o;
}

/* Bind a slot to the comma-separated var names in `args` ("" binds none). */
static int bind(pd_op_desc *o, bool input, const char *param, const char *args) {
  char buf[256];
  const char *names[16];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", args);
  for (char *s = buf; *s && n < 16;) {
    names[n++] = s;
    char *comma = strchr(s, ',');
    if (!comma) break;
    *comma = '\0';
    s = comma + 1;
  }
  return input ? pd_op_set_input(o, param, n, names) : pd_op_set_output(o, param, n, names);
}
#define IN(o, param, args) bind(o, true, param, args)
#define OUT(o, param, args) bind(o, false, param, args)

/* ---- model_nested: the design's if/else, a while in the 'if' branch, a gradient block ---- */

static int nested_globals(pd_block *b0) {
  pd_var_type LT = PD_VAR_LOD_TENSOR;
  return var(b0, "feed", PD_VAR_FEED_MINIBATCH, PD_FP32, NO_SHAPE, 0, PERSIST) ||
         var(b0, "fetch", PD_VAR_FETCH_LIST, PD_FP32, NO_SHAPE, 0, PERSIST) ||
         var(b0, "x", LT, PD_FP32, SHAPE(-1, 1), 0, STOP) ||
         var(b0, "y", LT, PD_FP32, SHAPE(1), 0, 0) ||
         var(b0, "z", LT, PD_FP32, SHAPE(-1, 1), 0, STOP) ||
         var(b0, "c15", LT, PD_FP32, SHAPE(1), 0, STOP) ||
         var(b0, "cond", LT, PD_BOOL, SHAPE(-1, 1), 0, STOP) ||
         var(b0, "not_cond", LT, PD_BOOL, SHAPE(-1, 1), 0, STOP) ||
         var(b0, "fc_0.w_0", LT, PD_FP32, SHAPE(1, 1), 0, PERSIST) ||
         var(b0, "o1", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         var(b0, "o2", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         var(b0, "scope_if", PD_VAR_STEP_SCOPES, PD_FP32, NO_SHAPE, 0, 0) ||
         var(b0, "scope_else", PD_VAR_STEP_SCOPES, PD_FP32, NO_SHAPE, 0, 0) ||
         var(b0, "words", LT, PD_INT64, SHAPE(-1, 1), 1, STOP) ||
         var(b0, "o1@GRAD", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         var(b0, "o2@GRAD", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         var(b0, "x@GRAD", LT, PD_FP32, SHAPE(-1, 1), 0, 0);
}

static int nested_block0(pd_block *b0) {
  const char *f = "nested.pd";
  pd_op_desc *o;
  const int64_t shape1[] = {1};
  return !(o = op(b0, "feed", f, 1, 5)) || IN(o, "X", "feed") || OUT(o, "Out", "x") ||
         pd_op_set_attr_int(o, "col", 0) ||
         !(o = op(b0, "feed", f, 3, 5)) || IN(o, "X", "feed") || OUT(o, "Out", "z") ||
         pd_op_set_attr_int(o, "col", 1) ||
         !(o = op(b0, "fill_constant", f, 4, 9)) || OUT(o, "Out", "c15") ||
         pd_op_set_attr_longs(o, "shape", 1, shape1) || pd_op_set_attr_float(o, "value", 15) ||
         pd_op_set_attr_int(o, "dtype", PD_FP32) ||
         !(o = op(b0, "greater_than", f, 4, 7)) || IN(o, "X", "x") || IN(o, "Y", "c15") ||
         OUT(o, "Out", "cond") || pd_op_set_attr_int(o, "axis", -1) ||
         !(o = op(b0, "conditional_block", f, 4, 1)) || IN(o, "Cond", "cond") ||
         IN(o, "Input", "x,y") || OUT(o, "Out", "o1,o2") || OUT(o, "Scope", "scope_if") ||
         pd_op_set_attr_block(o, "sub_block", 1) ||
         pd_op_set_attr_bool(o, "is_scalar_condition", false) ||
         !(o = op(b0, "logical_not", f, 8, 3)) || IN(o, "X", "cond") ||
         OUT(o, "Out", "not_cond") ||
         !(o = op(b0, "conditional_block", f, 8, 3)) || IN(o, "Cond", "not_cond") ||
         IN(o, "Input", "z") || OUT(o, "Out", "o1,o2") || OUT(o, "Scope", "scope_else") ||
         pd_op_set_attr_block(o, "sub_block", 2) ||
         pd_op_set_attr_bool(o, "is_scalar_condition", false) ||
         !(o = op(b0, "fetch", f, 12, 1)) || IN(o, "X", "o1") || OUT(o, "Out", "fetch") ||
         pd_op_set_attr_int(o, "col", 0) ||
         !(o = op(b0, "conditional_block_grad", f, 4, 1)) || IN(o, "Cond", "cond") ||
         IN(o, "Input", "x,y") || IN(o, "Out", "o1,o2") || IN(o, "Out@GRAD", "o1@GRAD,o2@GRAD") ||
         IN(o, "Scope", "scope_if") || OUT(o, "Input@GRAD", "x@GRAD,@EMPTY@") ||
         pd_op_set_attr_block(o, "sub_block", 4) ||
         pd_op_set_attr_bool(o, "is_scalar_condition", false);
}

static int nested_branches(pd_block *b1, pd_block *b2, pd_block *b3, pd_block *b4) {
  const char *f = "nested.pd";
  pd_op_desc *o;
  pd_var_type LT = PD_VAR_LOD_TENSOR;
  return var(b1, "d", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         var(b1, "i", LT, PD_INT64, SHAPE(1), 0, STOP) ||
         var(b1, "n", LT, PD_INT64, SHAPE(1), 0, STOP) ||
         var(b1, "loop_cond", LT, PD_BOOL, SHAPE(1), 0, STOP) ||
         var(b1, "steps", PD_VAR_STEP_SCOPES, PD_FP32, NO_SHAPE, 0, 0) ||
         !(o = op(b1, "elementwise_add", f, 5, 13)) || IN(o, "X", "x") || IN(o, "Y", "y") ||
         OUT(o, "Out", "d") || pd_op_set_attr_int(o, "axis", -1) ||
         !(o = op(b1, "assign", f, 6, 5)) || IN(o, "X", "d") || OUT(o, "Out", "o1") ||
         !(o = op(b1, "softmax", f, 7, 5)) || IN(o, "X", "d") || OUT(o, "Out", "o2") ||
         pd_op_set_attr_int(o, "axis", -1) ||
         !(o = op(b1, "while", f, 0, 0)) || IN(o, "X", "d,i,n") ||
         IN(o, "Condition", "loop_cond") || OUT(o, "Out", "d") ||
         OUT(o, "StepScopes", "steps") || pd_op_set_attr_block(o, "sub_block", 3) ||
         /* The else branch: its own d, and a y that shadows the global one. */
         var(b2, "d", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         var(b2, "y", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         !(o = op(b2, "mul", f, 9, 13)) || IN(o, "X", "z") || IN(o, "Y", "fc_0.w_0") ||
         OUT(o, "Out", "d") || pd_op_set_attr_int(o, "x_num_col_dims", 1) ||
         pd_op_set_attr_int(o, "y_num_col_dims", 1) ||
         !(o = op(b2, "assign", f, 10, 5)) || IN(o, "X", "d") || OUT(o, "Out", "o1") ||
         !(o = op(b2, "scale", f, 11, 10)) || IN(o, "X", "d") || OUT(o, "Out", "y") ||
         pd_op_set_attr_float(o, "scale", 1) || pd_op_set_attr_float(o, "bias", 1) ||
         pd_op_set_attr_bool(o, "bias_after_scale", true) ||
         !(o = op(b2, "assign", f, 11, 5)) || IN(o, "X", "y") || OUT(o, "Out", "o2") ||
         /* The while body, nested in the 'if' branch. */
         var(b3, "t", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         !(o = op(b3, "scale", f, 0, 0)) || IN(o, "X", "d") || OUT(o, "Out", "t") ||
         pd_op_set_attr_float(o, "scale", 0.5f) ||
         !(o = op(b3, "assign", f, 0, 0)) || IN(o, "X", "t") || OUT(o, "Out", "d") ||
         !(o = op(b3, "increment", f, 0, 0)) || IN(o, "X", "i") || OUT(o, "Out", "i") ||
         pd_op_set_attr_float(o, "step", 1) ||
         !(o = op(b3, "less_than", f, 0, 0)) || IN(o, "X", "i") || IN(o, "Y", "n") ||
         OUT(o, "Out", "loop_cond") ||
         /* The gradient of the 'if' branch: reads d, which lives in its forward block 1. */
         var(b4, "d@GRAD", LT, PD_FP32, SHAPE(-1, 1), 0, 0) ||
         !(o = op(b4, "softmax_grad", f, 7, 5)) || IN(o, "Out", "o2") ||
         IN(o, "Out@GRAD", "o2@GRAD") || OUT(o, "X@GRAD", "d@GRAD") ||
         !(o = op(b4, "elementwise_add_grad", f, 5, 13)) || IN(o, "X", "x") || IN(o, "Y", "y") ||
         IN(o, "Out", "d") || IN(o, "Out@GRAD", "d@GRAD") || OUT(o, "X@GRAD", "x@GRAD") ||
         OUT(o, "Y@GRAD", "@EMPTY@") || pd_op_set_attr_int(o, "axis", -1);
}

static int build_nested(pd_program *p) {
  pd_block *b1 = pd_program_add_block(p, 0), *b2 = b1 ? pd_program_add_block(p, 0) : NULL;
  pd_block *b3 = b2 ? pd_program_add_block(p, 1) : NULL;
  pd_block *b4 = b3 ? pd_program_add_block(p, 0) : NULL;
  if (!b4) return -1;
  b4->forward_block_idx = 1;
  return nested_globals(p->blocks[0]) || nested_block0(p->blocks[0]) ||
         nested_branches(b1, b2, b3, b4);
}

/* ---- model_attrs: every attribute type ---- */

static int build_attrs(pd_program *p) {
  pd_block *b1 = pd_program_add_block(p, 0), *b2 = b1 ? pd_program_add_block(p, 0) : NULL;
  pd_block *b0 = p->blocks[0];
  if (!b2) return -1;
  p->version = 2004000;
  const int32_t ints[] = {INT32_MIN, -1, 0, INT32_MAX};
  const int64_t longs[] = {INT64_MIN, -1, 0, INT64_MAX};
  const float floats[] = {0.1f, -0.0f, 1e-45f, 3.4028235e38f, 1.0f / 3.0f};
  const double doubles[] = {0.1, -2.5e-300, 1.0 / 3.0};
  const bool bools[] = {true, false, true};
  const char *const strings[] = {"a", "", "tab\there", "quote\"back\\slash", "caf\xc3\xa9"};
  const int32_t blocks[] = {1, 2};
  pd_op_desc *o;
  return TENSOR(b0, "in", PD_FP32, SHAPE(2, 3), 0, STOP) ||
         TENSOR(b0, "out", PD_FP32, SHAPE(2, 3), 0, 0) ||
         !(o = op(b0, "all_attrs", "dir:with:colons/attrs.pd", 12, 34)) || IN(o, "X", "in") ||
         IN(o, "Empty", "") || OUT(o, "Out", "out") ||
         pd_op_set_attr_string(o, "s_plain", "hello") ||
         pd_op_set_attr_string(o, "s_odd", "line\nbreak \"q\" \x01") ||
         pd_op_set_attr_int(o, "i_min", INT32_MIN) || pd_op_set_attr_long(o, "l_max", INT64_MAX) ||
         pd_op_set_attr_float(o, "f", 0.1f) || pd_op_set_attr_double(o, "d", 0.1) ||
         pd_op_set_attr_bool(o, "b", true) || pd_op_set_attr_block(o, "sub_block", 1) ||
         pd_op_set_attr_ints(o, "ints", 4, ints) || pd_op_set_attr_ints(o, "ints_empty", 0, NULL) ||
         pd_op_set_attr_longs(o, "longs", 4, longs) ||
         pd_op_set_attr_floats(o, "floats", 5, floats) ||
         pd_op_set_attr_doubles(o, "doubles", 3, doubles) ||
         pd_op_set_attr_bools(o, "bools", 3, bools) ||
         pd_op_set_attr_strings(o, "strings", 5, strings) ||
         pd_op_set_attr_blocks(o, "blocks", 2, blocks) ||
         /* A plain attribute that happens to be called op_callstack on an op without a
          * location: it must survive as an attribute. */
         !(o = op(b0, "noloc", NULL, 0, 0)) || IN(o, "X", "out") ||
         pd_op_set_attr_strings(o, "op_callstack", 1, (const char *const[]){"not a location"}) ||
         !(o = op(b1, "nop", NULL, 7, 0)) || /* a location without file or column */
         !(o = op(b2, "nop", "b2.pd", 1, 1));
}

/* ---- model_kinds: every var kind and dtype ---- */

static int build_kinds(pd_program *p) {
  pd_block *b0 = p->blocks[0];
  return var(b0, "lod_fp16", PD_VAR_LOD_TENSOR, PD_FP16, SHAPE(2, 3), 0, 0) ||
         var(b0, "rows", PD_VAR_SELECTED_ROWS, PD_INT64, SHAPE(-1, 8), 0, 0) ||
         var(b0, "feed", PD_VAR_FEED_MINIBATCH, PD_FP32, NO_SHAPE, 0, PERSIST) ||
         var(b0, "fetch", PD_VAR_FETCH_LIST, PD_FP32, NO_SHAPE, 0, PERSIST) ||
         var(b0, "scopes", PD_VAR_STEP_SCOPES, PD_FP32, NO_SHAPE, 0, 0) ||
         var(b0, "rank_table", PD_VAR_LOD_RANK_TABLE, PD_FP32, NO_SHAPE, 0, 0) ||
         var(b0, "array", PD_VAR_LOD_TENSOR_ARRAY, PD_FP64, SHAPE(-1, 4), 2, 0) ||
         var(b0, "raw", PD_VAR_RAW, PD_FP32, NO_SHAPE, 0, 0) ||
         var(b0, "unknown_shape", PD_VAR_LOD_TENSOR, PD_INT32, NO_SHAPE, 0, 0) ||
         var(b0, "scalar", PD_VAR_LOD_TENSOR, PD_FP32, SCALAR_SHAPE, 0, PERSIST) ||
         var(b0, "zero_size", PD_VAR_LOD_TENSOR, PD_FP32, SHAPE(0, 5), 0, 0) ||
         var(b0, "flags", PD_VAR_LOD_TENSOR, PD_BOOL, SHAPE(1), 0, PERSIST | STOP) ||
         var(b0, "i8", PD_VAR_LOD_TENSOR, PD_INT8, SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 1), 0, 0) ||
         var(b0, "u8", PD_VAR_LOD_TENSOR, PD_UINT8, SHAPE(4294967296, 4), 0, 0) ||
         var(b0, "i16", PD_VAR_LOD_TENSOR, PD_INT16, SHAPE(-1, -1), 3, 0) ||
         var(b0, "odd name \"x\"", PD_VAR_LOD_TENSOR, PD_FP32, SHAPE(1), 0, 0) ||
         var(b0, "caf\xc3\xa9", PD_VAR_LOD_TENSOR, PD_FP32, SHAPE(1), 0, 0);
}

static pd_program *build(int (*builder)(pd_program *)) {
  pd_program *p = pd_program_new();
  if (p && builder(p)) {
    pd_program_free(p);
    return NULL;
  }
  return p;
}

pd_program *model_nested(void) { return build(build_nested); }
pd_program *model_attrs(void) { return build(build_attrs); }
pd_program *model_kinds(void) { return build(build_kinds); }

const char *const model_names[] = {"nested", "attrs", "kinds"};
const size_t model_count = PD_ARRAY_LEN(model_names);

pd_program *model_by_name(const char *name) {
  if (strcmp(name, "nested") == 0) return model_nested();
  if (strcmp(name, "attrs") == 0) return model_attrs();
  if (strcmp(name, "kinds") == 0) return model_kinds();
  return NULL;
}

/* ---- Working on protobuf-c messages ---- */

typedef Paddle__Framework__Proto__ProgramDesc pb_program;
typedef Paddle__Framework__Proto__BlockDesc pb_block;
typedef Paddle__Framework__Proto__VarDesc pb_var;
typedef Paddle__Framework__Proto__OpDesc pb_op;
typedef Paddle__Framework__Proto__OpDesc__Attr pb_attr;

/* An allocator that frees nothing until the end, so that mutations may point messages at static
 * data without protobuf-c freeing it. */
typedef struct pool {
  void **ptrs;
  size_t n, cap;
} pool;

static void *pool_alloc(void *data, size_t size) {
  pool *pl = data;
  if (pl->n == pl->cap) {
    size_t cap = pl->cap ? 2 * pl->cap : 64;
    void **ptrs = realloc(pl->ptrs, cap * sizeof *ptrs);
    if (!ptrs) return NULL;
    pl->ptrs = ptrs;
    pl->cap = cap;
  }
  void *p = malloc(size ? size : 1);
  if (p) pl->ptrs[pl->n++] = p;
  return p;
}

static void pool_free_one(void *data, void *p) {
  (void)data;
  (void)p;
}

static void pool_release(pool *pl) {
  for (size_t i = 0; i < pl->n; i++) free(pl->ptrs[i]);
  free(pl->ptrs);
}

static void *pool_new(pool *pl, size_t size) {
  void *p = pool_alloc(pl, size);
  if (p) memset(p, 0, size);
  return p;
}

/* Pack into a malloc'ed buffer. */
static int pack(const pb_program *pd, uint8_t **out, size_t *len) {
  size_t n = pd_pb_program_desc__get_packed_size(pd);
  if (!(*out = malloc(n ? n : 1))) return -1;
  *len = pd_pb_program_desc__pack(pd, *out);
  return 0;
}

/* ---- A program as PaddlePaddle writes it ---- */

int foreign_bytes(uint8_t **out, size_t *len) {
  pool pl = {0};
  int rc = -1;
  pb_program *pd = pool_new(&pl, sizeof *pd);
  Paddle__Framework__Proto__Version *ver = pool_new(&pl, sizeof *ver);
  Paddle__Framework__Proto__OpVersionMap *ovm = pool_new(&pl, sizeof *ovm);
  Paddle__Framework__Proto__OpVersionMap__OpVersionPair *pair = pool_new(&pl, sizeof *pair);
  Paddle__Framework__Proto__OpVersion *opv = pool_new(&pl, sizeof *opv);
  pb_block *b = pool_new(&pl, sizeof *b);
  pb_var *vx = pool_new(&pl, sizeof *vx), *vfeed = pool_new(&pl, sizeof *vfeed);
  Paddle__Framework__Proto__VarType *tx = pool_new(&pl, sizeof *tx);
  Paddle__Framework__Proto__VarType *tfeed = pool_new(&pl, sizeof *tfeed);
  Paddle__Framework__Proto__VarType__LoDTensorDesc *lx = pool_new(&pl, sizeof *lx);
  Paddle__Framework__Proto__VarType__TensorDesc *dx = pool_new(&pl, sizeof *dx);
  Paddle__Framework__Proto__VarDesc__Attr *va = pool_new(&pl, sizeof *va);
  pb_op *o = pool_new(&pl, sizeof *o);
  Paddle__Framework__Proto__OpDesc__Var *sx = pool_new(&pl, sizeof *sx);
  Paddle__Framework__Proto__OpDesc__Var *so = pool_new(&pl, sizeof *so);
  pb_attr *a_stack = pool_new(&pl, sizeof *a_stack), *a_role = pool_new(&pl, sizeof *a_role);
  pb_attr *a_scale = pool_new(&pl, sizeof *a_scale);
  if (!pd || !ver || !ovm || !pair || !opv || !b || !vx || !vfeed || !tx || !tfeed || !lx ||
      !dx || !va || !o || !sx || !so || !a_stack || !a_role || !a_scale)
    goto done;
  pd_pb_program_desc__init(pd);
  pd_pb_version__init(ver);
  pd_pb_op_version_map__init(ovm);
  pd_pb_op_version_map__op_version_pair__init(pair);
  pd_pb_op_version__init(opv);
  pd_pb_block_desc__init(b);
  pd_pb_var_desc__init(vx);
  pd_pb_var_desc__init(vfeed);
  pd_pb_var_type__init(tx);
  pd_pb_var_type__init(tfeed);
  pd_pb_var_type__lo_dtensor_desc__init(lx);
  pd_pb_var_type__tensor_desc__init(dx);
  pd_pb_var_desc__attr__init(va);
  pd_pb_op_desc__init(o);
  pd_pb_op_desc__var__init(sx);
  pd_pb_op_desc__var__init(so);
  pd_pb_op_desc__attr__init(a_stack);
  pd_pb_op_desc__attr__init(a_role);
  pd_pb_op_desc__attr__init(a_scale);

  static int64_t dims[] = {-1, 784};
  dx->data_type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__FP32;
  dx->n_dims = 2;
  dx->dims = dims;
  lx->tensor = dx; /* lod_level left out: 0 */
  tx->type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__LOD_TENSOR;
  tx->lod_tensor = lx;
  va->name = (char *)"is_distributed";
  va->type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__INT;
  va->has_i = 1;
  vx->name = (char *)"img";
  vx->type = tx;
  vx->has_need_check_feed = 1;
  vx->need_check_feed = 1;
  vx->has_is_parameter = 1;
  vx->n_attrs = 1;
  vx->attrs = (Paddle__Framework__Proto__VarDesc__Attr *[]){va};
  tfeed->type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__FEED_MINIBATCH;
  vfeed->name = (char *)"feed";
  vfeed->type = tfeed;
  vfeed->has_persistable = 1;
  vfeed->persistable = 1;

  static char *feed_args[] = {"feed"}, *img_args[] = {"img"};
  sx->parameter = (char *)"X";
  sx->n_arguments = 1;
  sx->arguments = feed_args;
  so->parameter = (char *)"Out";
  so->n_arguments = 1;
  so->arguments = img_args;
  static char *stack[] = {
      "  File \"train.py\", line 12, in <module>\n    img = paddle.static.data(...)",
      "  File \"paddle/static/input.py\", line 40, in data\n    helper.append_op(...)"};
  a_stack->name = (char *)"op_callstack";
  a_stack->type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__STRINGS;
  a_stack->n_strings = 2;
  a_stack->strings = stack;
  a_role->name = (char *)"op_role";
  a_role->type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__INT;
  a_role->has_i = 1;
  a_role->i = 0;
  a_scale->name = (char *)"col";
  a_scale->type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__INT;
  a_scale->has_i = 1;
  a_scale->i = 0;
  o->type = (char *)"feed";
  o->n_inputs = 1;
  o->inputs = (Paddle__Framework__Proto__OpDesc__Var *[]){sx};
  o->n_outputs = 1;
  o->outputs = (Paddle__Framework__Proto__OpDesc__Var *[]){so};
  o->n_attrs = 3;
  o->attrs = (pb_attr *[]){a_role, a_stack, a_scale};
  o->has_is_target = 1;
  o->is_target = 1;

  b->idx = 0;
  b->parent_idx = -1; /* forward_block_idx left out: the default -1 */
  b->n_vars = 2;
  b->vars = (pb_var *[]){vfeed, vx};
  b->n_ops = 1;
  b->ops = (pb_op *[]){o};
  ver->has_version = 1;
  ver->version = 2006000;
  opv->version = 1;
  pair->op_name = (char *)"feed";
  pair->op_version = opv;
  ovm->n_pair = 1;
  ovm->pair = (Paddle__Framework__Proto__OpVersionMap__OpVersionPair *[]){pair};
  pd->n_blocks = 1;
  pd->blocks = (pb_block *[]){b};
  pd->version = ver;
  pd->op_version_map = ovm;
  rc = pack(pd, out, len);
done:
  pool_release(&pl);
  return rc;
}

/* ---- Malformed variants of model_nested ---- */

static pb_var *find_var(pb_program *pd, int b, const char *name) {
  for (size_t j = 0; j < pd->blocks[b]->n_vars; j++)
    if (strcmp(pd->blocks[b]->vars[j]->name, name) == 0) return pd->blocks[b]->vars[j];
  abort(); /* the test models are known: a miss is a bug in this file */
}

static Paddle__Framework__Proto__VarType__TensorDesc *tensor_of(pb_program *pd, int b,
                                                                 const char *name) {
  return find_var(pd, b, name)->type->lod_tensor->tensor;
}

static pb_op *op_at(pb_program *pd, int b, int j) { return pd->blocks[b]->ops[j]; }

static pb_attr *find_attr(pb_op *o, const char *name) {
  for (size_t k = 0; k < o->n_attrs; k++)
    if (strcmp(o->attrs[k]->name, name) == 0) return o->attrs[k];
  abort();
}

static void m_block_idx(pb_program *pd) { pd->blocks[2]->idx = 5; }
static void m_parent_range(pb_program *pd) { pd->blocks[3]->parent_idx = 7; }
static void m_parent_cycle(pb_program *pd) { pd->blocks[1]->parent_idx = 3; }
static void m_global_parent(pb_program *pd) { pd->blocks[0]->parent_idx = 0; }
static void m_forward_range(pb_program *pd) { pd->blocks[4]->forward_block_idx = 9; }
static void m_forward_self(pb_program *pd) { pd->blocks[4]->forward_block_idx = 4; }
static void m_no_blocks(pb_program *pd) { pd->n_blocks = 0; }
static void m_sub_block_missing(pb_program *pd) {
  find_attr(op_at(pd, 0, 4), "sub_block")->block_idx = 9;
}
static void m_sub_block_global(pb_program *pd) {
  find_attr(op_at(pd, 0, 4), "sub_block")->block_idx = 0;
}
static void m_sub_block_self(pb_program *pd) {
  find_attr(op_at(pd, 1, 3), "sub_block")->block_idx = 1;
}
static void m_sub_block_no_value(pb_program *pd) {
  find_attr(op_at(pd, 0, 4), "sub_block")->has_block_idx = 0;
}
static void m_negative_dim(pb_program *pd) { tensor_of(pd, 0, "x")->dims[0] = -5; }
static void m_huge_dims(pb_program *pd) {
  static int64_t huge[] = {INT64_MAX, 3};
  Paddle__Framework__Proto__VarType__TensorDesc *t = tensor_of(pd, 0, "fc_0.w_0");
  t->n_dims = 2;
  t->dims = huge;
}
static void m_rank(pb_program *pd) {
  static int64_t ten[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  Paddle__Framework__Proto__VarType__TensorDesc *t = tensor_of(pd, 0, "fc_0.w_0");
  t->n_dims = 10;
  t->dims = ten;
}
static void m_negative_lod(pb_program *pd) {
  find_var(pd, 0, "words")->type->lod_tensor->lod_level = -1;
  find_var(pd, 0, "words")->type->lod_tensor->has_lod_level = 1;
}
static void m_dup_var(pb_program *pd) { pd->blocks[2]->vars[1]->name = (char *)"d"; }
static void m_empty_var_name(pb_program *pd) { pd->blocks[0]->vars[3]->name = (char *)""; }
static void m_var_reader(pb_program *pd) {
  find_var(pd, 0, "y")->type->type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__READER;
}
static void m_var_type_unknown(pb_program *pd) { find_var(pd, 0, "y")->type->type = 99; }
static void m_dtype_complex(pb_program *pd) {
  tensor_of(pd, 0, "y")->data_type = PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__COMPLEX64;
}
static void m_dtype_unknown(pb_program *pd) { tensor_of(pd, 0, "y")->data_type = 99; }
static void m_no_tensor_desc(pb_program *pd) { find_var(pd, 0, "y")->type->lod_tensor = NULL; }
static void m_empty_op_type(pb_program *pd) { op_at(pd, 0, 0)->type = (char *)""; }
static void m_dup_slot(pb_program *pd) { op_at(pd, 0, 3)->inputs[1]->parameter = (char *)"X"; }
static void m_empty_arg(pb_program *pd) { op_at(pd, 2, 0)->inputs[0]->arguments[0] = (char *)""; }
static void m_undeclared(pb_program *pd) {
  op_at(pd, 2, 0)->inputs[0]->arguments[0] = (char *)"q";
}
static void m_sibling_var(pb_program *pd) {
  op_at(pd, 2, 0)->inputs[0]->arguments[0] = (char *)"loop_cond";
}
static void m_dup_attr(pb_program *pd) {
  op_at(pd, 2, 0)->attrs[1]->name = op_at(pd, 2, 0)->attrs[0]->name;
}
static void m_attr_type_unknown(pb_program *pd) {
  find_attr(op_at(pd, 2, 0), "x_num_col_dims")->type = 99;
}
static void m_attr_type_var(pb_program *pd) {
  find_attr(op_at(pd, 2, 0), "x_num_col_dims")->type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__VAR;
}
static void m_attr_no_value(pb_program *pd) {
  find_attr(op_at(pd, 2, 0), "x_num_col_dims")->has_i = 0;
}
static void m_string_no_value(pb_program *pd) {
  find_attr(op_at(pd, 2, 0), "x_num_col_dims")->type = PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__STRING;
}

#define MUTATION(name, fn, st, msg) {name, fn, NULL, 0, st, msg}
#define RAW(name, bytes, st, msg) {name, NULL, bytes, sizeof bytes - 1, st, msg}
#define BAD "malformed ProgramDesc: "
#define UNSUP "unsupported ProgramDesc: "
const bad_case bad_cases[] = {
    RAW("empty", "", PD_EFORMAT, BAD "the input is empty"),
    RAW("garbage", "hello, world", PD_EFORMAT,
        BAD "the bytes do not decode as a protobuf ProgramDesc (12 bytes)"),
    /* A block without its required parent_idx. */
    RAW("missing_required", "\x0a\x02\x08\x00", PD_EFORMAT,
        BAD "the bytes do not decode as a protobuf ProgramDesc (4 bytes)"),
    /* Field 1 (blocks) sent as a fixed32. */
    RAW("wire_type", "\x0d\x01\x02\x03\x04", PD_EFORMAT,
        BAD "the bytes do not decode as a protobuf ProgramDesc (5 bytes)"),
    /* A length far past the end. */
    RAW("huge_length", "\x0a\xff\xff\xff\xff\x0f", PD_EFORMAT,
        BAD "the bytes do not decode as a protobuf ProgramDesc (6 bytes)"),
    /* Only a version. */
    RAW("version_only", "\x22\x02\x08\x01", PD_EFORMAT, BAD "the program has no blocks"),
    MUTATION("no_blocks", m_no_blocks, PD_EFORMAT, BAD "the program has no blocks"),
    MUTATION("block_idx", m_block_idx, PD_EFORMAT,
             BAD "the block at position 2 has idx 5; blocks must be stored in order"),
    MUTATION("parent_range", m_parent_range, PD_EFORMAT,
             BAD "block 3 has parent 7, but the program has 5 blocks"),
    MUTATION("parent_cycle", m_parent_cycle, PD_EFORMAT,
             BAD "block 1 never reaches block 0 through its parents: they form a cycle "
                 "(1 -> 3 -> 1 -> 3 -> 1 -> 3 -> 1 -> 3 -> ...)"),
    MUTATION("global_parent", m_global_parent, PD_EFORMAT,
             BAD "block 0 (the global block) has parent 0; it must have none (-1)"),
    MUTATION("forward_range", m_forward_range, PD_EFORMAT,
             BAD "block 4 has forward block 9, but the program has 5 blocks"),
    MUTATION("forward_self", m_forward_self, PD_EFORMAT,
             BAD "block 4 names itself as its forward block"),
    MUTATION("sub_block_missing", m_sub_block_missing, PD_EFORMAT,
             BAD "block 0, op 4 (conditional_block): attribute 'sub_block' points at block 9, "
                 "but the program has 5 blocks"),
    MUTATION("sub_block_global", m_sub_block_global, PD_EFORMAT,
             BAD "block 0, op 4 (conditional_block): attribute 'sub_block' points at block 0, "
                 "the global block"),
    MUTATION("sub_block_self", m_sub_block_self, PD_EFORMAT,
             BAD "block 1, op 3 (while): attribute 'sub_block' points at block 1, which contains "
                 "the op itself"),
    MUTATION("sub_block_no_value", m_sub_block_no_value, PD_EFORMAT,
             BAD "block 0, op 4 (conditional_block): attribute 'sub_block' (BLOCK) has no value"),
    MUTATION("negative_dim", m_negative_dim, PD_EFORMAT,
             BAD "block 0, var 'x': dimension 0 is -5; only -1 (unknown) or a size >= 0 is "
                 "allowed"),
    MUTATION("huge_dims", m_huge_dims, PD_EFORMAT,
             BAD "block 0, var 'fc_0.w_0': the shape has more elements than an int64 can count"),
    MUTATION("rank", m_rank, PD_EFORMAT,
             BAD "block 0, var 'fc_0.w_0' has 10 dimensions; the most allowed is 9"),
    MUTATION("negative_lod", m_negative_lod, PD_EFORMAT,
             BAD "block 0, var 'words': lod_level -1 is negative"),
    MUTATION("dup_var", m_dup_var, PD_EFORMAT, BAD "block 2 declares var 'd' twice"),
    MUTATION("empty_var_name", m_empty_var_name, PD_EFORMAT, BAD "block 0: var 3 has no name"),
    MUTATION("var_reader", m_var_reader, PD_EUNSUPPORTED,
             UNSUP "block 0, var 'y': var type READER is not supported by pdlang"),
    MUTATION("var_type_unknown", m_var_type_unknown, PD_EFORMAT,
             BAD "block 0, var 'y': unknown var type 99"),
    MUTATION("dtype_complex", m_dtype_complex, PD_EUNSUPPORTED,
             UNSUP "block 0, var 'y': element type COMPLEX64 is not supported by pdlang"),
    MUTATION("dtype_unknown", m_dtype_unknown, PD_EFORMAT,
             BAD "block 0, var 'y': unknown element type 99"),
    MUTATION("no_tensor_desc", m_no_tensor_desc, PD_EFORMAT,
             BAD "block 0, var 'y': a LOD_TENSOR var needs a tensor description"),
    MUTATION("empty_op_type", m_empty_op_type, PD_EFORMAT, BAD "block 0: op 0 has no type"),
    MUTATION("dup_slot", m_dup_slot, PD_EFORMAT,
             BAD "block 0, op 3 (greater_than): input 'X' is bound twice"),
    MUTATION("empty_arg", m_empty_arg, PD_EFORMAT,
             BAD "block 2, op 0 (mul): input 'X' argument 0 has no name"),
    MUTATION("undeclared_var", m_undeclared, PD_EFORMAT,
             BAD "block 2, op 0 (mul): input 'X' names var 'q', which block 2 cannot see"),
    MUTATION("sibling_var", m_sibling_var, PD_EFORMAT,
             BAD "block 2, op 0 (mul): input 'X' names var 'loop_cond', which block 2 cannot "
                 "see"),
    MUTATION("dup_attr", m_dup_attr, PD_EFORMAT,
             BAD "block 2, op 0 (mul): attribute 'x_num_col_dims' is set twice"),
    MUTATION("attr_type_unknown", m_attr_type_unknown, PD_EFORMAT,
             BAD "block 2, op 0 (mul): attribute 'x_num_col_dims': unknown type 99"),
    MUTATION("attr_type_var", m_attr_type_var, PD_EUNSUPPORTED,
             UNSUP "block 2, op 0 (mul): attribute 'x_num_col_dims': type VAR is not supported "
                   "by pdlang"),
    MUTATION("attr_no_value", m_attr_no_value, PD_EFORMAT,
             BAD "block 2, op 0 (mul): attribute 'x_num_col_dims' (INT) has no value"),
    MUTATION("string_no_value", m_string_no_value, PD_EFORMAT,
             BAD "block 2, op 0 (mul): attribute 'x_num_col_dims' (STRING) has no value"),
};
const size_t bad_case_count = PD_ARRAY_LEN(bad_cases);

int bad_case_bytes(size_t i, uint8_t **out, size_t *len) {
  const bad_case *c = &bad_cases[i];
  *out = NULL;
  *len = 0;
  if (!c->mutate) {
    if (!(*out = malloc(c->raw_len ? c->raw_len : 1))) return -1;
    memcpy(*out, c->raw, c->raw_len);
    *len = c->raw_len;
    return 0;
  }
  pd_program *p = model_nested();
  uint8_t *bytes = NULL;
  size_t n = 0;
  int rc = -1;
  if (p && pd_program_to_bytes(p, &bytes, &n, NULL) == PD_OK) {
    pool pl = {0};
    ProtobufCAllocator alloc = {pool_alloc, pool_free_one, &pl};
    pb_program *pd = pd_pb_program_desc__unpack(&alloc, n, bytes);
    if (pd) {
      c->mutate(pd);
      rc = pack(pd, out, len);
    }
    pool_release(&pl);
  }
  pd_free(bytes);
  pd_program_free(p);
  return rc;
}
